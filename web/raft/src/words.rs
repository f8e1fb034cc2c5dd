//! The replication scenario's words, in English and Chinese: its steps, its picture, its tour
//! and its summary. They come with the scenario's module, not in the page's first load (the
//! page takes the tour's and the summary's in: [`LabRun::words`](crate::LabRun::words)); `{name}` is a place for an
//! argument, as in the page's catalogue.

use crate::{Arg, Say};

/// Key, English, Chinese.
pub const WORDS: &[(&str, &str, &str)] = &[
    (
        "rp.summary.published",
        "PUBs answered OK: {n}.",
        "回复了 OK 的 PUB：{n}。",
    ),
    (
        "rp.summary.done",
        "Messages the consumer finished: {n}.",
        "消费者完成的消息：{n}。",
    ),
    (
        "rp.summary.leader",
        "Leader at the end: {node}.",
        "最后的领导者：{node}。",
    ),
    (
        "tour.replication.1.title",
        "An election",
        "一次选举",
    ),
    (
        "tour.replication.1.text",
        "No node leads at first. A follower whose election timer runs out asks for votes; a node that has a majority (2 of 3) leads the term. Each vote is written to disk before it is given.",
        "一开始没有节点领导。选举计时器先到期的跟随者请求投票；得到多数（3 票中的 2 票）的节点领导这个任期。每一票在投出之前都先写入磁盘。",
    ),
    (
        "tour.replication.2.title",
        "A PUB travels to the followers",
        "一个 PUB 传到跟随者",
    ),
    (
        "tour.replication.2.text",
        "The leader's broker turned PUB #1 into a log entry, sent it to both followers and is writing it to its own disk. The producer is waiting.",
        "领导者的消息服务器把 PUB #1 变成了一个日志条目，发给了两个跟随者，并正在写入自己的磁盘。生产者在等待。",
    ),
    (
        "tour.replication.2.q",
        "When does the producer get OK?",
        "生产者什么时候收到 OK？",
    ),
    (
        "tour.replication.2.a1",
        "As soon as the leader's own disk has it",
        "只要领导者自己的磁盘有了它",
    ),
    (
        "tour.replication.2.a2",
        "Once a majority of the three has it on disk",
        "一旦三个节点中的多数把它写入磁盘",
    ),
    (
        "tour.replication.2.a3",
        "Only once all three have it on disk",
        "只有当三个节点都把它写入磁盘",
    ),
    (
        "tour.replication.2.why",
        "The entry is committed when a majority has it on disk: the leader and one follower. The third follower's answer is still on its way when the OK goes out. One node can be lost, whichever, without losing an acknowledged message.",
        "当多数节点（领导者和一个跟随者）把条目写入磁盘时，它就提交了。OK 发出时，第三个节点的回答还在路上。任意一个节点丢失，都不会丢失已确认的消息。",
    ),
    (
        "tour.replication.3.title",
        "The leader dies",
        "领导者死了",
    ),
    (
        "tour.replication.3.text",
        "The consumer got #2 and is working on it; the leader has just been killed. #2 was committed (the producer got OK), but its FIN never came.",
        "消费者拿到了 #2，正在处理；领导者刚刚被杀掉。#2 已经提交（生产者收到了 OK），但它的 FIN 一直没来。",
    ),
    (
        "tour.replication.3.q",
        "What becomes of #2?",
        "#2 会怎样？",
    ),
    (
        "tour.replication.3.a1",
        "It is lost with the leader",
        "它随领导者一起丢失",
    ),
    (
        "tour.replication.3.a2",
        "A new leader sends it to the consumer again",
        "新的领导者再次把它发给消费者",
    ),
    (
        "tour.replication.3.a3",
        "Nothing: the consumer already has it",
        "什么也不会发生：消费者已经有它了",
    ),
    (
        "tour.replication.3.why",
        "The followers have #2's entry and no FIN for it. The new leader rebuilds its broker from the log, so #2 is owed again and delivered again: at-least-once, as in NSQ. A consumer must cope with a message twice.",
        "跟随者有 #2 的条目，但没有它的 FIN。新的领导者根据日志重建消息服务器，所以 #2 重新欠着并再次投递：和 NSQ 一样是至少一次。消费者必须能应对同一条消息来两次。",
    ),
    (
        "tour.replication.4.title",
        "The old leader comes back",
        "旧领导者回来了",
    ),
    (
        "tour.replication.4.text",
        "A new leader serves now, in a later term. The killed node is about to start again from its disk, which lacks the entries written since.",
        "现在由新的领导者在更晚的任期服务。被杀的节点马上要从自己的磁盘重新启动，磁盘上缺少此后写入的条目。",
    ),
    (
        "tour.replication.4.q",
        "What does it do?",
        "它会做什么？",
    ),
    (
        "tour.replication.4.a1",
        "It leads again: it was the leader",
        "它再次领导：它原来就是领导者",
    ),
    (
        "tour.replication.4.a2",
        "It follows the new leader and copies what it lacks",
        "它跟随新的领导者，复制它缺少的条目",
    ),
    (
        "tour.replication.4.a3",
        "It starts an election for its old term",
        "它为自己的旧任期发起选举",
    ),
    (
        "tour.replication.4.why",
        "A higher term wins: it hears from the leader of a later term and follows it. The leader sends it the entries it lacks, and its log becomes the same as the others'.",
        "更高的任期胜出：它收到更晚任期的领导者的消息并跟随它。领导者把它缺少的条目发给它，它的日志就和其他节点的一样了。",
    ),
    (
        "tour.replication.5.title",
        "What replication promises",
        "复制承诺了什么",
    ),
    (
        "tour.replication.5.text",
        "Every message answered OK was on a majority of disks, so losing any one node, its disk included, loses none of them. Delivery stays at-least-once; messages in flight on a dead leader come again.",
        "每条回复了 OK 的消息都在多数节点的磁盘上，所以丢失任意一个节点（包括它的磁盘），都不会丢失其中任何一条。投递仍然是至少一次；死去的领导者上在途的消息会再来一次。",
    ),
    ("rp.who.producer", "producer", "生产者"),
    ("rp.short.start", "start", "起始"),
    ("rp.short.empty", "empty", "空"),
    ("rp.short.channel", "channel", "通道"),
    ("rp.short.other", "state", "状态"),
    ("rp.short.conf", "members", "成员"),
    ("rp.who.consumer", "consumer", "消费者"),
    (
        "rp.role.follower",
        "follower",
        "跟随者",
    ),
    (
        "rp.role.precandidate",
        "pre-candidate",
        "预候选人",
    ),
    (
        "rp.role.candidate",
        "candidate",
        "候选人",
    ),
    (
        "rp.role.leader",
        "leader",
        "领导者",
    ),
    (
        "rp.role.down",
        "down",
        "宕机",
    ),
    (
        "rp.entry",
        "entry {index}",
        "条目 {index}",
    ),
    (
        "rp.entries",
        "entries {first}–{last}",
        "条目 {first}–{last}",
    ),
    (
        "rp.what.start",
        "the group's first configuration",
        "组的初始配置",
    ),
    (
        "rp.what.empty",
        "an empty entry of the new term",
        "新任期的空条目",
    ),
    (
        "rp.what.channel",
        "the new topic orders and channel archive",
        "新的主题 orders 和通道 archive",
    ),
    (
        "rp.what.pub",
        "PUB {label}",
        "PUB {label}",
    ),
    (
        "rp.what.fin",
        "FIN {label}",
        "FIN {label}",
    ),
    (
        "rp.what.other",
        "a change to the broker's state",
        "消息服务器状态的一个变化",
    ),
    (
        "rp.what.conf",
        "a change of members",
        "成员变更",
    ),
    (
        "rp.what.two",
        "{a} and {b}",
        "{a} 和 {b}",
    ),
    (
        "rp.wire.prevote",
        "would you vote for me in term {term}?",
        "你会在任期 {term} 投票给我吗？",
    ),
    (
        "rp.wire.vote",
        "vote for me in term {term}",
        "请在任期 {term} 投票给我",
    ),
    (
        "rp.wire.yes",
        "yes",
        "是",
    ),
    (
        "rp.wire.no",
        "no",
        "否",
    ),
    (
        "rp.wire.append",
        "{range}",
        "{range}",
    ),
    (
        "rp.wire.ack",
        "I have up to {index}",
        "我已有到 {index} 为止的条目",
    ),
    (
        "rp.wire.nack",
        "no match at {index}",
        "在 {index} 处不匹配",
    ),
    (
        "rp.wire.other",
        "snapshot",
        "快照",
    ),
    (
        "rp.prevote",
        "{node} has heard from no leader for its whole election timeout. Before standing it asks the other two: would you vote for me in term {term}? (A pre-vote: it changes nothing yet, so a node cut off from a working leader cannot disturb it.)",
        "{node} 在整个选举超时时间内都没有收到领导者的消息。参选之前，它先问另外两个节点：你会在任期 {term} 投票给我吗？（预投票：它还不改变任何东西，所以一个与正常领导者断开的节点不会打扰它。）",
    ),
    (
        "rp.prevote.yes",
        "{node} would vote for {cand} in term {term}: it has not heard from a leader for a while either, and {cand}'s log is at least as up to date as its own. It answers yes.",
        "{node} 会在任期 {term} 投票给 {cand}：它也有一阵子没收到领导者的消息了，而且 {cand} 的日志至少和它自己的一样新。它回答是。",
    ),
    (
        "rp.prevote.no",
        "{node} would not vote for {cand} in term {term}: it still hears from a leader, or its own log is newer. It answers no.",
        "{node} 不会在任期 {term} 投票给 {cand}：它仍然收到领导者的消息，或者它自己的日志更新。它回答否。",
    ),
    (
        "rp.campaign",
        "{node} has a majority of pre-votes (its own and one more): it becomes a candidate in term {term} and votes for itself. It writes the new term and its vote to disk before asking anyone.",
        "{node} 得到了多数预投票（它自己的和另外一票）：它成为任期 {term} 的候选人并投票给自己。在询问别人之前，它先把新任期和它的投票写入磁盘。",
    ),
    (
        "rp.ask",
        "{node}'s term and vote are on its disk: it asks the other two to vote for it in term {term}.",
        "{node} 的任期和投票已经在磁盘上：它请另外两个节点在任期 {term} 投票给它。",
    ),
    (
        "rp.vote.write",
        "{node} gets {cand}'s request. It has not voted in term {term} and {cand}'s log is at least as up to date as its own, so it moves to term {term} and votes for {cand}: it writes the vote to disk first, and answers once it is there (a node may vote only once per term, even after a crash).",
        "{node} 收到 {cand} 的请求。它在任期 {term} 还没有投过票，而且 {cand} 的日志至少和它的一样新，所以它进入任期 {term} 并投票给 {cand}：先把投票写入磁盘，写好后才回答（每个节点每个任期只能投一票，崩溃之后也一样）。",
    ),
    (
        "rp.vote.yes",
        "{node}'s vote for {cand} in term {term} is on its disk: it answers yes.",
        "{node} 在任期 {term} 投给 {cand} 的票已经在磁盘上：它回答是。",
    ),
    (
        "rp.vote.no",
        "{node} will not vote for {cand} in term {term}: it has voted already, or its log is newer. It answers no.",
        "{node} 不会在任期 {term} 投票给 {cand}：它已经投过票了，或者它的日志更新。它回答否。",
    ),
    (
        "rp.elected",
        "{node} has a majority of votes (2 of 3, its own included): it leads term {term}. It appends an empty entry of its term (entry {index}) and sends it to the followers while writing it to its own disk. It does not serve clients yet.",
        "{node} 得到了多数选票（3 票中的 2 票，包括自己的）：它成为任期 {term} 的领导者。它追加一个本任期的空条目（条目 {index}），在写入自己磁盘的同时发给跟随者。它还不为客户端服务。",
    ),
    (
        "rp.term",
        "{node} sees term {term}, higher than its own, and moves to it (a node always follows the highest term it has seen).",
        "{node} 看到了比自己更高的任期 {term}，于是进入该任期（节点总是跟随它见过的最高任期）。",
    ),
    (
        "rp.follow",
        "{node} hears from {leader}, the leader of term {term}, and follows it.",
        "{node} 收到任期 {term} 的领导者 {leader} 的消息，并跟随它。",
    ),
    (
        "rp.propose",
        "{node}'s broker turned {what} into a change to keep: it becomes {range} of the leader's log. {node} sends it to both followers and writes it to its own disk at the same time.",
        "{node} 的消息服务器把 {what} 变成一项要保存的变更：它成为领导者日志的{range}。{node} 把它发给两个跟随者，同时写入自己的磁盘。",
    ),
    (
        "rp.send",
        "{node} sends {range} ({what}) to {to}, which lacks them.",
        "{node} 把{range}（{what}）发给缺少它们的 {to}。",
    ),
    (
        "rp.send.other",
        "{node} sends a snapshot of its state to {to}.",
        "{node} 把它的状态快照发给 {to}。",
    ),
    (
        "rp.append",
        "{node} receives {range} ({what}) from {leader} and writes it to its disk.",
        "{node} 从 {leader} 收到{range}（{what}），并写入自己的磁盘。",
    ),
    (
        "rp.ack",
        "{node} has everything up to entry {index} on its disk: it tells {leader}.",
        "{node} 的磁盘上已有到条目 {index} 为止的全部内容：它告诉 {leader}。",
    ),
    (
        "rp.ack.no",
        "{node}'s log does not match {leader}'s at entry {index}: it says no, and {leader} will try from further back.",
        "{node} 的日志在条目 {index} 处与 {leader} 的不匹配：它回答否，{leader} 会从更早的位置重试。",
    ),
    (
        "rp.commit",
        "{node} now knows a majority (2 of 3 nodes, itself included) has everything up to entry {index} on disk: entries up to {index} are committed. Any majority that could elect a leader includes a node that has them, so they can no longer be lost.",
        "{node} 现在知道多数节点（3 个中的 2 个，包括它自己）的磁盘上已有到条目 {index} 为止的内容：到 {index} 为止的条目已提交。任何能选出领导者的多数中，都有一个节点拥有它们，所以它们再也不会丢失。",
    ),
    (
        "rp.learn",
        "{node} hears from {leader} that entries up to {index} are committed, and applies them to its own copy of the broker's state.",
        "{node} 从 {leader} 得知到 {index} 为止的条目已提交，并把它们应用到自己那份消息服务器状态上。",
    ),
    (
        "rp.serving",
        "{node} has committed an entry of its own term, so it holds every entry committed before it: its broker starts and serves clients. Only the leader serves (and only it is listed by nsqlookupd).",
        "{node} 已提交了一个本任期的条目，所以它拥有此前提交的所有条目：它的消息服务器启动，开始为客户端服务。只有领导者提供服务（nsqlookupd 也只列出它）。",
    ),
    (
        "rp.serving.owed",
        "{node} has committed an entry of its own term, so it holds every entry committed before it. Its broker starts, rebuilt from the log: every message published and not finished is owed again ({label}), in its channel, ready to be sent.",
        "{node} 已提交了一个本任期的条目，所以它拥有此前提交的所有条目。它的消息服务器启动，并根据日志重建：每条已发布但未完成的消息都重新欠着（{label}），在通道里等待发送。",
    ),
    (
        "rp.connect",
        "The consumer asks nsqlookupd where topic {topic} is; only the leader, {node}, is listed. It connects to {node}: SUB {topic} {channel}, RDY 1.",
        "消费者询问 nsqlookupd 主题 {topic} 在哪里；只列出了领导者 {node}。它连接 {node}：SUB {topic} {channel}，RDY 1。",
    ),
    (
        "rp.connect.again",
        "The consumer asks nsqlookupd again; the new leader, {node}, is listed now. It connects: SUB {topic} {channel}, RDY 1.",
        "消费者再次询问 nsqlookupd；现在列出的是新的领导者 {node}。它连接上去：SUB {topic} {channel}，RDY 1。",
    ),
    (
        "rp.publish",
        "The producer sends PUB {label} to {node} (topic {topic}) and waits for the answer.",
        "生产者向 {node} 发送 PUB {label}（主题 {topic}），等待回复。",
    ),
    (
        "rp.ok",
        "Entry of PUB {label} committed: {node}'s broker answers the producer OK.",
        "PUB {label} 的条目已提交：{node} 的消息服务器回复生产者 OK。",
    ),
    (
        "rp.error",
        "The {who} gets an error: {error}",
        "{who}收到错误：{error}",
    ),
    (
        "rp.deliver",
        "{node}'s channel sends {label} to the consumer: it is in flight until the consumer answers.",
        "{node} 的通道把 {label} 发给消费者：在消费者回复之前，它处于在途状态。",
    ),
    (
        "rp.deliver.again",
        "{node}'s channel sends {label} to the consumer again: at-least-once delivery.",
        "{node} 的通道再次把 {label} 发给消费者：至少一次投递。",
    ),
    (
        "rp.fin",
        "The consumer has handled {label}: it sends FIN {label} to {node}.",
        "消费者处理完了 {label}：它向 {node} 发送 FIN {label}。",
    ),
    (
        "rp.kill",
        "{node}, the leader, is killed (kill -9) while the consumer is still working on {label}. What it had written to its disk stays there.",
        "领导者 {node} 被杀掉（kill -9），此时消费者还在处理 {label}。它已经写入磁盘的内容留在磁盘上。",
    ),
    (
        "rp.restart",
        "{node} starts again from its disk.",
        "{node} 从自己的磁盘重新启动。",
    ),
    (
        "rp.closed",
        "The {who}'s connection to {node} is closed.",
        "{who}与 {node} 的连接关闭了。",
    ),
    (
        "rp.closed.working",
        "The consumer's connection to {node} is closed: it can no longer FIN {label} (a FIN is only valid on the connection the message came on).",
        "消费者与 {node} 的连接关闭了：它再也无法 FIN {label}（FIN 只在收到消息的那个连接上有效）。",
    ),
    (
        "rp.lost",
        "The message from {from} to {to} is lost: {to} is down.",
        "从 {from} 发往 {to} 的消息丢失了：{to} 已宕机。",
    ),
    (
        "rp.d.role",
        "{node} is {role} in term {term}.",
        "{node} 现在是任期 {term} 的{role}。",
    ),
    (
        "rp.d.durable",
        "{node}'s write is done: everything up to entry {index} is on its disk.",
        "{node} 的写入完成：到条目 {index} 为止的内容都在它的磁盘上。",
    ),
    (
        "rp.d.voted",
        "{node} voted for {cand} in term {term}.",
        "{node} 在任期 {term} 投票给了 {cand}。",
    ),
    (
        "rp.d.channel",
        "{node}'s channel: waiting {waiting}, in flight {flight}.",
        "{node} 的通道：等待 {waiting}，在途 {flight}。",
    ),
    (
        "rp.d.ack",
        "{from}'s answer ({kind}) reaches {to}, which notes it: the entries were committed already.",
        "{from} 的回答（{kind}）到达 {to}，{to} 记下它：这些条目已经提交了。",
    ),
    (
        "rp.d.late",
        "{from}'s answer ({kind}) reaches {to}, which no longer needs it.",
        "{from} 的回答（{kind}）到达 {to}，它已经不需要了。",
    ),
    (
        "rp.d.arrived",
        "{kind} from {from} reaches {to}.",
        "来自 {from} 的“{kind}”到达 {to}。",
    ),
    (
        "rp.d.other",
        "The cluster's state changed.",
        "集群的状态变了。",
    ),
    (
        "rp.ui.term",
        "term {term}",
        "任期 {term}",
    ),
    (
        "rp.ui.voted",
        "voted for {node}",
        "投票给 {node}",
    ),
    (
        "rp.ui.log",
        "log",
        "日志",
    ),
    (
        "rp.ui.commit",
        "committed up to {index}",
        "已提交到 {index}",
    ),
    (
        "rp.ui.writing",
        "dashed: being written, not on disk yet",
        "虚线：正在写入，还不在磁盘上",
    ),
    (
        "rp.ui.serving",
        "serves clients",
        "为客户端服务",
    ),
    (
        "rp.ui.waiting",
        "waiting: {labels}",
        "等待：{labels}",
    ),
    (
        "rp.ui.inflight",
        "in flight: {labels}",
        "在途：{labels}",
    ),
    (
        "rp.ui.none",
        "none",
        "无",
    ),
    (
        "rp.ui.wire",
        "On the wire between the nodes",
        "节点之间正在传输的消息",
    ),
    (
        "rp.ui.wire.empty",
        "nothing (heartbeats are not drawn)",
        "没有（不画心跳）",
    ),
    (
        "rp.ui.connected",
        "connected to {node}",
        "连接到 {node}",
    ),
    (
        "rp.ui.disconnected",
        "not connected",
        "未连接",
    ),
    (
        "rp.ui.awaiting",
        "waiting for OK: {labels}",
        "等待 OK：{labels}",
    ),
    (
        "rp.ui.acked",
        "answered OK: {labels}",
        "已回复 OK：{labels}",
    ),
    (
        "rp.ui.working",
        "working on: {labels}",
        "正在处理：{labels}",
    ),
    (
        "rp.ui.done",
        "finished: {labels}",
        "已完成：{labels}",
    ),
    (
        "rp.ui.consumer",
        "consumer",
        "消费者",
    ),
    (
        "rp.ui.legend",
        "Each box is a log entry: its index, its term, what it holds. Filled: committed. Dashed border: still being written to that node's disk.",
        "每个方块是一个日志条目：索引、任期和内容。填充的：已提交。虚线边框：还在写入那个节点的磁盘。",
    ),
];

/// A key's words: English and Chinese.
pub fn word(key: &str) -> Option<(&'static str, &'static str)> {
    WORDS.iter().find(|w| w.0 == key).map(|w| (w.1, w.2))
}

/// Words in English (`zh` false) or Chinese, arguments filled in.
pub fn render(s: &Say, zh: bool) -> String {
    let Some((en, cn)) = word(&s.key) else {
        return s.key.clone();
    };
    let template = if zh { cn } else { en };
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push('{');
            rest = after;
            continue;
        };
        let name = &after[..close];
        match s.args.iter().find(|(n, _)| n == name) {
            Some((_, Arg::Plain(v))) => out.push_str(v),
            Some((_, Arg::Say(x))) => out.push_str(&render(x, zh)),
            None => {
                out.push('{');
                out.push_str(name);
                out.push('}');
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    if zh {
        tidy_cjk(&out)
    } else {
        out
    }
}

/// Several sentences as one text.
pub fn render_all(says: &[Say], zh: bool) -> String {
    let parts: Vec<String> = says.iter().map(|s| render(s, zh)).collect();
    parts.join(if zh { "" } else { " " })
}

/// The `{name}` places of a template, sorted.
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) => {
                out.push(&after[..close]);
                rest = &after[close + 1..];
            }
            None => break,
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Chinese puts no space between words: a space a template left beside a name that turned out
/// Chinese ("{who} 处理完" with who = "账本服务") goes; one beside a Latin word or a number stays.
pub fn tidy_cjk(s: &str) -> String {
    let wide = |c: char| {
        ('\u{4e00}'..='\u{9fff}').contains(&c)
            || ('\u{3000}'..='\u{303f}').contains(&c)
            || ('\u{ff00}'..='\u{ffef}').contains(&c)
    };
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        let between =
            c == ' ' && i > 0 && chars.get(i + 1).is_some_and(|&n| wide(n)) && wide(chars[i - 1]);
        if !between {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_has_both_languages_with_the_same_places() {
        let mut seen = std::collections::BTreeSet::new();
        for (k, en, zh) in WORDS {
            assert!(seen.insert(*k), "{k} twice");
            assert!(!en.is_empty() && !zh.is_empty(), "{k}");
            assert_eq!(placeholders(en), placeholders(zh), "{k}");
            assert!(
                zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
                    || en == zh
                    || k.starts_with("rp.what.pub")
                    || k.starts_with("rp.what.fin")
                    || k.starts_with("rp.wire.append"),
                "{k}: no Chinese"
            );
        }
    }

    #[test]
    fn every_entry_kind_has_its_words() {
        for w in crate::EntryWhat::all() {
            for s in [crate::what_say(&w), crate::short_say(&w)] {
                assert!(word(&s.key).is_some(), "{:?}", s.key);
                assert!(!render(&s, false).contains('{') && !render(&s, true).contains('{'));
            }
        }
    }

    #[test]
    fn words_are_filled_in() {
        let s = Say::new("rp.ack")
            .arg("node", "nsqd-2")
            .arg("leader", "nsqd-1")
            .arg("index", 4);
        assert_eq!(
            render(&s, false),
            "nsqd-2 has everything up to entry 4 on its disk: it tells nsqd-1."
        );
        assert!(render(&s, true).contains("nsqd-2"));
        let nested = Say::new("rp.what.two")
            .nest("a", Say::new("rp.what.empty"))
            .nest("b", Say::new("rp.what.pub").arg("label", "#1"));
        assert_eq!(
            render(&nested, false),
            "an empty entry of the new term and PUB #1"
        );
        // A space between Chinese and a Latin word, none between two Chinese words.
        assert_eq!(render(&nested, true), "新任期的空条目和 PUB #1");
        let both = Say::new("rp.what.two")
            .nest("a", Say::new("rp.what.conf"))
            .nest("b", Say::new("rp.what.empty"));
        assert_eq!(render(&both, true), "成员变更和新任期的空条目");
    }
}
