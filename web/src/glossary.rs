//! The words a learner meets, explained once in each language, and the terms found in any
//! text so the page can link each to its entry.

use crate::i18n::Lang;

/// One glossary entry.
pub struct Term {
    /// Its id on the page (`#g-<key>`).
    pub key: &'static str,
    /// How it is written in headings.
    pub title: &'static str,
    /// The forms of it found in running English (matched as whole words, first form first).
    pub forms: &'static [&'static str],
    pub text: &'static str,
    /// The same in Chinese (forms found anywhere: Chinese has no word breaks). Not in the
    /// page's build: there they arrive with the Chinese catalogue (`pkg/zh.json`, keys
    /// `glossary.<key>.title`, `.text`, `.form.<n>`).
    #[cfg(not(target_arch = "wasm32"))]
    pub zh_title: &'static str,
    #[cfg(not(target_arch = "wasm32"))]
    pub zh_forms: &'static [&'static str],
    #[cfg(not(target_arch = "wasm32"))]
    pub zh_text: &'static str,
}

impl Term {
    pub fn title(&self, lang: Lang) -> &'static str {
        match lang {
            Lang::En => self.title,
            Lang::Zh => self.zh("title").unwrap_or(self.title),
        }
    }

    pub fn text(&self, lang: Lang) -> &'static str {
        match lang {
            Lang::En => self.text,
            Lang::Zh => self.zh("text").unwrap_or(self.text),
        }
    }

    /// Its Chinese forms.
    pub fn zh_forms(&self) -> Vec<&'static str> {
        #[cfg(not(target_arch = "wasm32"))]
        return self.zh_forms.to_vec();
        #[cfg(target_arch = "wasm32")]
        return (0..).map_while(|n| self.zh(&format!("form.{n}"))).collect();
    }

    /// A part of its Chinese (`title`, `text`, `form.<n>`), if this build has it yet.
    fn zh(&self, part: &str) -> Option<&'static str> {
        #[cfg(not(target_arch = "wasm32"))]
        return match part {
            "title" => Some(self.zh_title),
            "text" => Some(self.zh_text),
            _ => part
                .strip_prefix("form.")
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| self.zh_forms.get(n).copied()),
        };
        #[cfg(target_arch = "wasm32")]
        return crate::i18n::zh_word(&format!("glossary.{}.{part}", self.key));
    }
}

/// Every entry, in the order the glossary lists them.
pub const TERMS: &[Term] = &[
    Term {
        key: "topic",
        title: "topic",
        forms: &["topic", "topics"],
        text: "A named stream that producers publish to. It copies every message to each of its channels; a topic without channels keeps its messages until one appears.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "主题（topic）",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["主题"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "生产者发布消息的命名流。它把每条消息复制到它的每个通道；没有通道的主题先保留消息，直到出现通道。",
    },
    Term {
        key: "channel",
        title: "channel",
        forms: &["channel", "channels"],
        text: "A topic's copy of the stream for one kind of consumer (billing, shipping…). Each channel gets every message; the consumers of one channel share its messages between them.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "通道（channel）",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["通道"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "主题为一类消费者（计费、发货……）准备的一份消息流副本。每个通道都得到每条消息；同一个通道的消费者分摊其中的消息。",
    },
    Term {
        key: "pub",
        title: "PUB, MPUB, DPUB",
        forms: &["PUB", "MPUB", "DPUB"],
        text: "How producers publish: PUB sends one message, MPUB several at once, DPUB one with a delay (it is not delivered before the delay has passed).",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "PUB、MPUB、DPUB",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &[],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "生产者发布消息的方式：PUB 发布一条，MPUB 一次发布多条，DPUB 发布一条带延迟的消息（延迟过去之前不会投递）。",
    },
    Term {
        key: "rdy",
        title: "RDY",
        forms: &["RDY"],
        text: "A consumer's count of how many messages it can have in flight at once. nsqd sends a consumer messages only while it has fewer in flight than its RDY; RDY 0 pauses it.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "RDY",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &[],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "消费者能同时处理多少条在途消息。只有当消费者的在途消息少于它的 RDY 时，nsqd 才会继续给它发消息；RDY 0 表示暂停。",
    },
    Term {
        key: "in-flight",
        title: "in flight",
        forms: &["in flight", "in-flight"],
        text: "A message sent to a consumer and not yet answered. It stays in the channel's in-flight heap, ordered by deadline, until the consumer sends FIN or REQ, or its msg_timeout passes.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "在途（in flight）",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["在途"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "已发给消费者但还没有得到回复的消息。它按截止时间排在通道的在途堆里，直到消费者发送 FIN 或 REQ，或者 msg_timeout 到期。",
    },
    Term {
        key: "fin",
        title: "FIN",
        forms: &["FIN"],
        text: "A consumer's answer “done”: the channel forgets the message.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "FIN",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &[],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "消费者的回复“完成”：通道删除这条消息。",
    },
    Term {
        key: "req",
        title: "REQ",
        forms: &["REQ"],
        text: "A consumer's answer “retry”: the message goes back to the channel, at once or after a delay (in the deferred heap until then), with attempts + 1 when it is sent again.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "REQ",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &[],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "消费者的回复“重试”：消息回到通道，立即或在延迟之后（在此之前放在延迟堆里）；再次发送时 attempts 加 1。",
    },
    Term {
        key: "touch",
        title: "TOUCH",
        forms: &["TOUCH"],
        text: "A consumer's “I need more time”: the message's in-flight deadline starts again from now.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "TOUCH",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &[],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "消费者说“我需要更多时间”：消息的在途截止时间从现在重新开始计算。",
    },
    Term {
        key: "msg-timeout",
        title: "msg_timeout",
        forms: &["msg_timeout"],
        text: "How long a consumer has to answer a message (60 s by default, set per consumer with IDENTIFY). When it passes, the message times out and goes back to the queue.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "msg_timeout",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &[],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "消费者回复一条消息的时限（默认 60 秒，每个消费者可以在 IDENTIFY 时设置）。到期后消息超时，回到队列。",
    },
    Term {
        key: "deferred",
        title: "deferred",
        forms: &["deferred"],
        text: "Waiting for its time: a DPUB, or a REQ with a delay. Deferred messages wait in the channel's deferred min-heap and join the queue when they are due.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "延迟（deferred）",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["延迟"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "等待时间到来的消息：DPUB，或者带延迟的 REQ。延迟消息在通道的延迟最小堆里等待，到期后进入队列。",
    },
    Term {
        key: "heap",
        title: "min-heap",
        forms: &["min-heap", "heap"],
        text: "A tree kept in an array where every parent is due no later than its children, so the root (index 0) is always the message due first. A push adds at the end and sifts up; a pop takes the root, moves the last entry into the hole and sifts it down. Both take at most log₂(n) swaps. The children of index i are 2i+1 and 2i+2.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "最小堆",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["最小堆", "堆"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "存放在数组里的一棵树，每个父节点都不晚于它的子节点到期，所以堆顶（下标 0）永远是最先到期的消息。入堆时放到末尾再上浮；出堆时取走堆顶，把最后一个元素移到空位再下沉。两者最多交换 log₂(n) 次。下标 i 的子节点是 2i+1 和 2i+2。",
    },
    Term {
        key: "root",
        title: "root",
        forms: &["root"],
        text: "Index 0 of a heap: the message due first.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "堆顶",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["堆顶"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "堆的下标 0：最先到期的消息。",
    },
    Term {
        key: "sift",
        title: "sift up, sift down",
        forms: &["sift up", "sift down", "sifts down", "sifts"],
        text: "How a heap restores its order: an entry swaps with its parent while it is due sooner (up), or with its sooner child while that child is due sooner (down).",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "上浮、下沉",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["上浮", "下沉"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "堆恢复顺序的方法：一个元素比父节点更早到期时就与父节点交换（上浮），或者与更早到期的那个子节点交换（下沉）。",
    },
    Term {
        key: "memory-queue",
        title: "memory queue",
        forms: &["memory queue"],
        text: "A channel's ready messages kept in memory, up to --mem-queue-size of them; they are sent first, in order.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "内存队列",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["内存队列"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "通道在内存中保存的待发送消息，最多 --mem-queue-size 条；它们按顺序最先发送。",
    },
    Term {
        key: "disk-backlog",
        title: "disk backlog",
        forms: &["disk backlog"],
        text: "Ready messages past --mem-queue-size, kept on disk (nsqd's backend). Once anything is on disk, new messages join it too, so order is kept.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "磁盘积压",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["磁盘积压"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "超出 --mem-queue-size 的待发送消息，保存在磁盘上（nsqd 的 backend）。一旦磁盘上有消息，新消息也排到它们后面，以保持顺序。",
    },
    Term {
        key: "store",
        title: "store on disk",
        forms: &["store on disk"],
        text: "nsqlab's durable log (--durable): every message is written there before nsqd's OK, deferred ones with their due time, and dropped once finished. After a kill -9 the restarted broker replays it, so nothing acknowledged is lost. nsqd v1.3 keeps only what had spilled to its disk queue.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "磁盘上的存储",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["磁盘上的存储"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "nsqlab 的持久化日志（--durable）：每条消息在回复 OK 之前写入其中，延迟消息连同到期时间一起写入，完成后删除。kill -9 之后，重启的消息服务器重放它，所以确认过的消息一条也不会丢。nsqd v1.3 只保留已经溢出到磁盘队列的消息。",
    },
    Term {
        key: "mem-queue-size",
        title: "--mem-queue-size",
        forms: &["--mem-queue-size"],
        text: "nsqd's flag for how many messages each topic and channel keeps in memory before spilling to disk (10000 by default).",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "--mem-queue-size",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &[],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "nsqd 的参数：每个主题和通道在内存中保留多少条消息，超出的写到磁盘（默认 10000）。",
    },
    Term {
        key: "depth",
        title: "depth",
        forms: &["depth"],
        text: "How many messages are ready to send: the memory queue plus the disk backlog. Deferred and in-flight messages are counted apart.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "深度（depth）",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["深度"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "准备好发送的消息数：内存队列加磁盘积压。延迟消息和在途消息另外计数。",
    },
    Term {
        key: "attempts",
        title: "attempts",
        forms: &["attempts", "attempt"],
        text: "How many times a message has been sent. It grows with each redelivery (after a REQ or a timeout), so a consumer can give up on a message that keeps failing.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "尝试次数（attempts）",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["尝试"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "一条消息被发送了多少次。每次重新投递（REQ 或超时之后）都会加 1，消费者可以据此放弃一直失败的消息。",
    },
    Term {
        key: "heartbeat",
        title: "heartbeat",
        forms: &["heartbeats", "heartbeat"],
        text: "nsqd asks each client “are you there?” every 30 s; a client answers NOP. One that misses two in a row is disconnected.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "心跳",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["心跳"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "nsqd 每 30 秒问每个客户端“你还在吗？”，客户端回复 NOP。连续错过两次的客户端会被断开。",
    },
    Term {
        key: "scan-loop",
        title: "scan loop",
        forms: &["scan loop"],
        text: "nsqd's way to find due messages: every 100 ms it looks at a random sample of channels. A message can wait up to a scan period (or more, if its channel is not picked). nsqlab keeps an exact timer per channel instead.",
        #[cfg(not(target_arch = "wasm32"))]
        zh_title: "扫描循环",
        #[cfg(not(target_arch = "wasm32"))]
        zh_forms: &["扫描循环"],
        #[cfg(not(target_arch = "wasm32"))]
        zh_text: "nsqd 寻找到期消息的方式：每 100 ms 查看随机抽取的一部分通道。一条消息可能要等一个扫描周期（如果它的通道没被抽到，还会更久）。nsqlab 改为每个通道一个精确的定时器。",
    },
];

/// A piece of text: plain, or a glossary term (with its entry's key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Term(String, &'static str),
}

/// Split `text` into plain pieces and terms. Each entry is linked once per text, at its first
/// whole-word match; commands (upper case) match exactly, other words in any case.
pub fn pieces(lang: Lang, text: &str) -> Vec<Piece> {
    let mut found: Vec<(usize, usize, &'static str)> = Vec::new();
    for t in TERMS {
        let mut best: Option<(usize, usize)> = None;
        let zh = match lang {
            Lang::En => Vec::new(),
            Lang::Zh => t.zh_forms(),
        };
        for form in t.forms.iter().chain(zh.iter()) {
            let at = if crate::i18n::has_cjk(form) {
                text.find(form)
            } else {
                find_word(text, form)
            };
            if let Some(at) = at {
                if best.is_none_or(|(b, _)| at < b) {
                    best = Some((at, form.len()));
                }
            }
        }
        if let Some((at, len)) = best {
            if !found.iter().any(|&(s, l, _)| at < s + l && s < at + len) {
                found.push((at, len, t.key));
            }
        }
    }
    found.sort();
    let mut out = Vec::new();
    let mut pos = 0;
    for (at, len, key) in found {
        if at > pos {
            out.push(Piece::Text(text[pos..at].to_string()));
        }
        out.push(Piece::Term(text[at..at + len].to_string(), key));
        pos = at + len;
    }
    if pos < text.len() {
        out.push(Piece::Text(text[pos..].to_string()));
    }
    out
}

/// The byte offset of `word` in `text` as a whole word.
fn find_word(text: &str, word: &str) -> Option<usize> {
    let exact = word.chars().any(|c| c.is_ascii_uppercase());
    let (hay, needle) = if exact {
        (text.to_string(), word.to_string())
    } else {
        (text.to_ascii_lowercase(), word.to_ascii_lowercase())
    };
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = hay[from..].find(&needle) {
        let at = from + i;
        let before = hay[..at].chars().next_back();
        let after = hay[at + needle.len()..].chars().next();
        let starts_with_dash = needle.starts_with('-');
        if (starts_with_dash || before.is_none_or(|c| !is_word(c) && c != '-'))
            && after.is_none_or(|c| !is_word(c) && c != '-')
        {
            return Some(at);
        }
        from = at + needle.len().max(1);
    }
    None
}

/// How many bytes at the start of `after` (the text right after a term) are closing
/// punctuation, which must not begin a line ("，", "。", "：", a Latin comma...): a term is a
/// button, and a line may break on either side of one, so these are drawn with it, unbroken.
pub fn glued_punctuation(after: &str) -> usize {
    after
        .char_indices()
        .take_while(|(_, c)| "，。：；、）！？」』,.:;)!?".contains(*c))
        .last()
        .map_or(0, |(i, c)| i + c.len_utf8())
}

/// An entry by key.
pub fn term(key: &str) -> Option<&'static Term> {
    TERMS.iter().find(|t| t.key == key)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn closing_punctuation_after_a_term_is_kept_with_it() {
        assert_eq!(glued_punctuation("，堆顶永远是"), "，".len());
        assert_eq!(glued_punctuation("）：在"), "）：".len());
        assert_eq!(glued_punctuation(", then"), 1);
        assert_eq!(glued_punctuation(" and"), 0);
        assert_eq!(glued_punctuation("的"), 0);
        assert_eq!(glued_punctuation(""), 0);
    }

    #[test]
    fn terms_are_found_once_as_whole_words() {
        let p = pieces(Lang::En, "billing worker sends RDY 10: it can have up to 10 messages in flight at once. RDY again.");
        let terms: Vec<_> = p
            .iter()
            .filter_map(|x| match x {
                Piece::Term(t, k) => Some((t.as_str(), *k)),
                _ => None,
            })
            .collect();
        assert_eq!(terms, vec![("RDY", "rdy"), ("in flight", "in-flight")]);
        // Whole words only: "FINished" and "deferredness" are not terms.
        assert!(pieces(Lang::En, "FINished")
            .iter()
            .all(|x| matches!(x, Piece::Text(_))));
        // Joined back, the pieces are the text.
        let text = "Channel billing keeps order 3 aside: the deferred min-heap has its root first.";
        let joined: String = pieces(Lang::En, text)
            .into_iter()
            .map(|p| match p {
                Piece::Text(t) | Piece::Term(t, _) => t,
            })
            .collect();
        assert_eq!(joined, text);
        assert!(pieces(Lang::En, text)
            .iter()
            .any(|p| matches!(p, Piece::Term(_, "heap"))));
        assert!(pieces(Lang::En, "the --mem-queue-size flag")
            .iter()
            .any(|p| matches!(p, Piece::Term(_, "mem-queue-size"))));
    }

    #[test]
    fn chinese_terms_are_found_too() {
        let p = pieces(Lang::Zh, "消息进入通道的延迟最小堆，RDY 为 1。");
        let keys: Vec<&str> = p
            .iter()
            .filter_map(|x| match x {
                Piece::Term(_, k) => Some(*k),
                _ => None,
            })
            .collect();
        assert!(
            keys.contains(&"channel") && keys.contains(&"heap") && keys.contains(&"rdy"),
            "{keys:?}"
        );
        for t in TERMS {
            assert!(crate::i18n::has_cjk(t.zh_text), "{}", t.key);
        }
    }

    #[test]
    fn every_entry_is_reachable() {
        for t in TERMS {
            assert!(term(t.key).is_some());
            let f = t.forms[0];
            assert!(
                pieces(Lang::En, &format!("about {f} here"))
                    .iter()
                    .any(|p| matches!(p, Piece::Term(_, k) if *k == t.key)),
                "{f}"
            );
        }
    }
}
