//! The words a learner meets, explained once, and the terms found in any text so the page can
//! link each to its entry.

/// One glossary entry.
pub struct Term {
    /// Its id on the page (`#g-<key>`).
    pub key: &'static str,
    /// How it is written in headings.
    pub title: &'static str,
    /// The forms of it found in running text (matched as whole words, first form first).
    pub forms: &'static [&'static str],
    pub text: &'static str,
}

/// Every entry, in the order the glossary lists them.
pub const TERMS: &[Term] = &[
    Term {
        key: "topic",
        title: "topic",
        forms: &["topic", "topics"],
        text: "A named stream that producers publish to. It copies every message to each of its channels; a topic without channels keeps its messages until one appears.",
    },
    Term {
        key: "channel",
        title: "channel",
        forms: &["channel", "channels"],
        text: "A topic's copy of the stream for one kind of consumer (billing, shipping…). Each channel gets every message; the consumers of one channel share its messages between them.",
    },
    Term {
        key: "pub",
        title: "PUB, MPUB, DPUB",
        forms: &["PUB", "MPUB", "DPUB"],
        text: "How producers publish: PUB sends one message, MPUB several at once, DPUB one with a delay (it is not delivered before the delay has passed).",
    },
    Term {
        key: "rdy",
        title: "RDY",
        forms: &["RDY"],
        text: "A consumer's count of how many messages it can have in flight at once. nsqd sends a consumer messages only while it has fewer in flight than its RDY; RDY 0 pauses it.",
    },
    Term {
        key: "in-flight",
        title: "in flight",
        forms: &["in flight", "in-flight"],
        text: "A message sent to a consumer and not yet answered. It stays in the channel's in-flight heap, ordered by deadline, until the consumer sends FIN or REQ, or its msg_timeout passes.",
    },
    Term {
        key: "fin",
        title: "FIN",
        forms: &["FIN"],
        text: "A consumer's answer “done”: the channel forgets the message.",
    },
    Term {
        key: "req",
        title: "REQ",
        forms: &["REQ"],
        text: "A consumer's answer “retry”: the message goes back to the channel, at once or after a delay (in the deferred heap until then), with attempts + 1 when it is sent again.",
    },
    Term {
        key: "touch",
        title: "TOUCH",
        forms: &["TOUCH"],
        text: "A consumer's “I need more time”: the message's in-flight deadline starts again from now.",
    },
    Term {
        key: "msg-timeout",
        title: "msg_timeout",
        forms: &["msg_timeout"],
        text: "How long a consumer has to answer a message (60 s by default, set per consumer with IDENTIFY). When it passes, the message times out and goes back to the queue.",
    },
    Term {
        key: "deferred",
        title: "deferred",
        forms: &["deferred"],
        text: "Waiting for its time: a DPUB, or a REQ with a delay. Deferred messages wait in the channel's deferred min-heap and join the queue when they are due.",
    },
    Term {
        key: "heap",
        title: "min-heap",
        forms: &["min-heap", "heap"],
        text: "A tree kept in an array where every parent is due no later than its children, so the root (index 0) is always the message due first. A push adds at the end and sifts up; a pop takes the root, moves the last entry into the hole and sifts it down. Both take at most log₂(n) swaps. The children of index i are 2i+1 and 2i+2.",
    },
    Term {
        key: "root",
        title: "root",
        forms: &["root"],
        text: "Index 0 of a heap: the message due first.",
    },
    Term {
        key: "sift",
        title: "sift up, sift down",
        forms: &["sift up", "sift down", "sifts down", "sifts"],
        text: "How a heap restores its order: an entry swaps with its parent while it is due sooner (up), or with its sooner child while that child is due sooner (down).",
    },
    Term {
        key: "memory-queue",
        title: "memory queue",
        forms: &["memory queue"],
        text: "A channel's ready messages kept in memory, up to --mem-queue-size of them; they are sent first, in order.",
    },
    Term {
        key: "disk-backlog",
        title: "disk backlog",
        forms: &["disk backlog"],
        text: "Ready messages past --mem-queue-size, kept on disk (nsqd's backend). Once anything is on disk, new messages join it too, so order is kept.",
    },
    Term {
        key: "mem-queue-size",
        title: "--mem-queue-size",
        forms: &["--mem-queue-size"],
        text: "nsqd's flag for how many messages each topic and channel keeps in memory before spilling to disk (10000 by default).",
    },
    Term {
        key: "depth",
        title: "depth",
        forms: &["depth"],
        text: "How many messages are ready to send: the memory queue plus the disk backlog. Deferred and in-flight messages are counted apart.",
    },
    Term {
        key: "attempts",
        title: "attempts",
        forms: &["attempts", "attempt"],
        text: "How many times a message has been sent. It grows with each redelivery (after a REQ or a timeout), so a consumer can give up on a message that keeps failing.",
    },
    Term {
        key: "heartbeat",
        title: "heartbeat",
        forms: &["heartbeats", "heartbeat"],
        text: "nsqd asks each client “are you there?” every 30 s; a client answers NOP. One that misses two in a row is disconnected.",
    },
    Term {
        key: "scan-loop",
        title: "scan loop",
        forms: &["scan loop"],
        text: "nsqd's way to find due messages: every 100 ms it looks at a random sample of channels. A message can wait up to a scan period (or more, if its channel is not picked). nsqlab keeps an exact timer per channel instead.",
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
pub fn pieces(text: &str) -> Vec<Piece> {
    let mut found: Vec<(usize, usize, &'static str)> = Vec::new();
    for t in TERMS {
        let mut best: Option<(usize, usize)> = None;
        for form in t.forms {
            if let Some(at) = find_word(text, form) {
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

/// An entry by key.
pub fn term(key: &str) -> Option<&'static Term> {
    TERMS.iter().find(|t| t.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_are_found_once_as_whole_words() {
        let p = pieces("billing worker sends RDY 10: it can have up to 10 messages in flight at once. RDY again.");
        let terms: Vec<_> = p
            .iter()
            .filter_map(|x| match x {
                Piece::Term(t, k) => Some((t.as_str(), *k)),
                _ => None,
            })
            .collect();
        assert_eq!(terms, vec![("RDY", "rdy"), ("in flight", "in-flight")]);
        // Whole words only: "FINished" and "deferredness" are not terms.
        assert!(pieces("FINished")
            .iter()
            .all(|x| matches!(x, Piece::Text(_))));
        // Joined back, the pieces are the text.
        let text = "Channel billing keeps order 3 aside: the deferred min-heap has its root first.";
        let joined: String = pieces(text)
            .into_iter()
            .map(|p| match p {
                Piece::Text(t) | Piece::Term(t, _) => t,
            })
            .collect();
        assert_eq!(joined, text);
        assert!(pieces(text)
            .iter()
            .any(|p| matches!(p, Piece::Term(_, "heap"))));
        assert!(pieces("the --mem-queue-size flag")
            .iter()
            .any(|p| matches!(p, Piece::Term(_, "mem-queue-size"))));
    }

    #[test]
    fn every_entry_is_reachable() {
        for t in TERMS {
            assert!(term(t.key).is_some());
            let f = t.forms[0];
            assert!(
                pieces(&format!("about {f} here"))
                    .iter()
                    .any(|p| matches!(p, Piece::Term(_, k) if *k == t.key)),
                "{f}"
            );
        }
    }
}
