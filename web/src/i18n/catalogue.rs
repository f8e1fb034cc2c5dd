//! The page's words: key, English, Chinese. `{name}` is a place for an argument.
//!
//! Terms follow nsqd's vocabulary. In Chinese: 主题 (topic), 通道 (channel), 在途 (in flight),
//! 延迟 (deferred), 内存队列 (memory queue), 磁盘积压 (disk backlog), 深度 (depth); commands
//! (PUB, RDY, FIN, REQ, TOUCH) and flags stay as nsqd spells them.

use super::Entry;

macro_rules! catalogue {
    ($($key:literal => $en:literal, $zh:literal;)*) => {
        /// Every entry.
        /// (The page's build leaves the Chinese out: it loads them from `pkg/zh.json`, made from
        /// this table by `examples/zh-catalogue.rs`, when first asked for.)
        pub const CATALOGUE: &[Entry] = &[$(Entry {
            key: $key,
            en: $en,
            #[cfg(not(target_arch = "wasm32"))]
            zh: $zh,
        }),*];
    };
}

catalogue! {
    "sym.plain" => "{s}", "{s}";
    // ---------------------------------------------------------------- who
    "who.http" => "An HTTP client", "一个 HTTP 客户端";
    "who.producer" => "producer", "生产者";
    "who.producer.n" => "producer {n}", "生产者 {n}";
    "who.consumer.n" => "consumer {n}", "消费者 {n}";
    "who.client.n" => "client {n}", "客户端 {n}";
    "name.billing-worker" => "billing worker", "计费进程";
    "name.archive-worker" => "archive worker", "归档进程";
    "name.billing-service" => "billing service", "计费服务";
    "name.shipping-service" => "shipping service", "发货服务";
    "name.slow-worker" => "slow worker", "慢进程";
    "name.medium-worker" => "medium worker", "中速进程";
    "name.fast-worker" => "fast worker", "快进程";
    "name.worker-a" => "worker A", "消费者 A";
    "name.worker-b" => "worker B", "消费者 B";
    "name.flaky-mailer" => "flaky mailer", "不稳定的邮件服务";
    "name.archiver" => "archiver", "归档器";
    "name.timer-worker" => "timer worker", "定时进程";
    "name.ledger" => "ledger service", "账本服务";
    "name.ledger.n" => "ledger service {n}", "账本服务 {n}";

    // ---------------------------------------------------------------- topics and channels
    "topic.created" => "Topic {topic} is created: nsqd makes a topic the first time anyone publishes to it or subscribes to it.",
        "主题 {topic} 被创建：有人第一次向它发布消息或订阅它时，nsqd 就会创建这个主题。";
    "topic.restored" => "The restarted broker reads topic {topic} back from its store: it is there again, as before the kill.",
        "重启的消息服务器从存储中读回主题 {topic}：它又回来了，和被杀掉之前一样。";
    "channel.restored" => "It reads channel {channel} of topic {topic} back from its store too; next, the channel's messages come back one by one.",
        "它也从存储中读回主题 {topic} 的通道 {channel}；接下来，通道的消息逐条回来。";
    "channel.created" => "Channel {channel} is created on topic {topic}: from now on it gets its own copy of every message published to {topic}.",
        "主题 {topic} 上创建了通道 {channel}：从现在起，发布到 {topic} 的每条消息它都会得到一份自己的副本。";
    "topic.deleted" => "Topic {topic} is deleted, with its channels and every message in them.",
        "主题 {topic} 被删除，连同它的通道和其中的所有消息。";
    "channel.deleted" => "Channel {channel} is deleted from topic {topic}, with its messages; the topic's other channels keep theirs.",
        "通道 {channel} 从主题 {topic} 中删除，连同它的消息；主题的其他通道保留各自的消息。";
    "topic.paused" => "Topic {topic} is paused: it keeps new messages instead of copying them to its channels.",
        "主题 {topic} 已暂停：新消息先留在主题里，不再复制到它的通道。";
    "topic.unpaused" => "Topic {topic} is unpaused: it copies messages to its channels again.",
        "主题 {topic} 恢复：重新把消息复制到它的通道。";
    "channel.paused" => "Channel {channel} is paused: it sends nothing to its consumers.",
        "通道 {channel} 已暂停：不再向消费者发送消息。";
    "channel.unpaused" => "Channel {channel} is unpaused: it sends to its consumers again.",
        "通道 {channel} 恢复：重新向消费者发送消息。";
    "topic.emptied" => "Topic {topic} is emptied.", "主题 {topic} 被清空。";
    "channel.emptied" => "Channel {channel} is emptied: its queue, deferred heap and in-flight messages are gone.",
        "通道 {channel} 被清空：它的队列、延迟堆和在途消息都被删除。";

    // ---------------------------------------------------------------- clients
    "subscribed" => "{who} subscribes to channel {channel} of topic {topic} (SUB). It gets nothing until it says with RDY how many messages it can take.",
        "{who} 订阅主题 {topic} 的通道 {channel}（SUB）。在它用 RDY 说明自己能接收多少条消息之前，它什么也收不到。";
    "rdy.zero" => "{who} sends RDY 0: it takes no messages until it sends RDY again.",
        "{who} 发送 RDY 0：在再次发送 RDY 之前，它不接收任何消息。";
    "rdy.one" => "{who} sends RDY 1: it takes one message at a time: the next is sent only after it answers the one it has.",
        "{who} 发送 RDY 1：它一次只接收一条消息，回复手上这条之后才会收到下一条。";
    "rdy.many" => "{who} sends RDY {n}: it can have up to {n} messages in flight at once.",
        "{who} 发送 RDY {n}：它最多可以同时有 {n} 条消息在途。";
    "closed.consumer.deleted" => "{who} is disconnected: its channel was deleted.",
        "{who} 断开了连接：它的通道被删除了。";
    "closed.consumer.heartbeat" => "{who} is disconnected: it missed two heartbeats in a row, so nsqd closed the connection. Messages it had in flight stay in flight until their msg_timeout passes, then go back to the queue (as in nsqd).",
        "{who} 断开了连接：它连续错过两次心跳，nsqd 关闭了连接。它的在途消息会一直保持在途，直到 msg_timeout 到期，然后回到队列（与 nsqd 相同）。";
    "closed.consumer.error" => "{who} is disconnected: nsqd answered {error} and closed it. Messages it had in flight stay in flight until their msg_timeout passes, then go back to the queue (as in nsqd).",
        "{who} 断开了连接：nsqd 回复了 {error} 并关闭了连接。它的在途消息会一直保持在途，直到 msg_timeout 到期，然后回到队列（与 nsqd 相同）。";
    "closed.consumer.badinput" => "{who} is disconnected: it sent bytes nsqd could not read.",
        "{who} 断开了连接：它发送了 nsqd 无法解析的字节。";
    "closed.consumer.hungup" => "{who} is disconnected: it hung up. Messages it had in flight stay in flight until their msg_timeout passes, then go back to the queue (as in nsqd).",
        "{who} 断开了连接：它主动挂断。它的在途消息会一直保持在途，直到 msg_timeout 到期，然后回到队列（与 nsqd 相同）。";
    "closed.producer.deleted" => "{who} is disconnected: its channel was deleted.", "{who} 断开了连接：它的通道被删除了。";
    "closed.producer.heartbeat" => "{who} is disconnected: it missed two heartbeats in a row, so nsqd closed the connection.",
        "{who} 断开了连接：它连续错过两次心跳，nsqd 关闭了连接。";
    "closed.producer.error" => "{who} is disconnected: nsqd answered {error} and closed it.",
        "{who} 断开了连接：nsqd 回复了 {error} 并关闭了连接。";
    "closed.producer.badinput" => "{who} is disconnected: it sent bytes nsqd could not read.",
        "{who} 断开了连接：它发送了 nsqd 无法解析的字节。";
    "closed.producer.hungup" => "{who} is disconnected: it hung up.", "{who} 断开了连接：它主动挂断。";
    "note.error" => "nsqd answers {who} with an error: {error}.", "nsqd 向 {who} 回复错误：{error}。";
    "note.error.late" => "nsqd answers {who} with an error: {error}. Its answer came too late: the message had timed out and is no longer in flight to it.",
        "nsqd 向 {who} 回复错误：{error}。它的回复来得太晚了：消息已经超时，不再是它的在途消息。";

    // ---------------------------------------------------------------- messages
    "published" => "{by} publishes {label} to topic {topic} (PUB); nsqd stores it and answers OK.",
        "{by} 向主题 {topic} 发布 {label}（PUB）；nsqd 保存它并回复 OK。";
    "published.mpub" => "{by} publishes {label} to topic {topic}: message {nth} of {n} in one MPUB. nsqd stores all {n} and answers a single OK for them.",
        "{by} 向主题 {topic} 发布 {label}：一条 MPUB 中 {n} 条里的第 {nth} 条。nsqd 保存全部 {n} 条，只回复一个 OK。";
    "published.http" => "{by} publishes {label} to topic {topic} (POST /pub on nsqd's HTTP port); nsqd stores it and answers OK.",
        "{by} 向主题 {topic} 发布 {label}（在 nsqd 的 HTTP 端口上 POST /pub）；nsqd 保存它并回复 OK。";
    "published.http.mpub" => "{by} publishes {label} to topic {topic}: message {nth} of {n} in one POST /mpub on nsqd's HTTP port. nsqd stores all {n} and answers a single OK.",
        "{by} 向主题 {topic} 发布 {label}：在 nsqd 的 HTTP 端口上一次 POST /mpub 的 {n} 条里的第 {nth} 条。nsqd 保存全部 {n} 条，只回复一个 OK。";
    "published.deferred" => "{by} publishes {label} to topic {topic} with a delay of {delay} (DPUB): it must not be delivered before {due}.",
        "{by} 向主题 {topic} 发布 {label}，延迟 {delay}（DPUB）：在 {due} 之前不能投递。";
    "held" => "Topic {topic} has no channel yet (or is paused), so it keeps {label} until one appears.",
        "主题 {topic} 还没有通道（或已暂停），所以它先保留 {label}，直到出现通道。";
    "queued.memory" => "{label} joins the memory queue of channel {channel} (now {n} of {size}), ready to be sent.",
        "{label} 进入通道 {channel} 的内存队列（现在 {n}/{size}），等待发送。";
    "queued.disk.full" => "The memory queue of channel {channel} is full ({n} of {size}, the --mem-queue-size): {label} goes to the disk backlog.",
        "通道 {channel} 的内存队列已满（{n}/{size}，即 --mem-queue-size）：{label} 进入磁盘积压。";
    "queued.disk.order.one" => "The memory queue of channel {channel} holds {n} of {size}, but 1 older message already waits on disk: to keep the order, {label} joins the disk backlog behind it.",
        "通道 {channel} 的内存队列有 {n}/{size} 条，但已有 1 条更早的消息在磁盘上等待：为了保持顺序，{label} 排到磁盘积压的后面。";
    "queued.disk.order.many" => "The memory queue of channel {channel} holds {n} of {size}, but {k} older messages already wait on disk: to keep the order, {label} joins the disk backlog behind them.",
        "通道 {channel} 的内存队列有 {n}/{size} 条，但已有 {k} 条更早的消息在磁盘上等待：为了保持顺序，{label} 排到磁盘积压的后面。";
    "deferred" => "Channel {channel} keeps {label} aside until {due}: next it is pushed into the channel's deferred min-heap, which always has the message due first at its root.",
        "通道 {channel} 把 {label} 暂放到 {due}：接下来它被压入通道的延迟最小堆，堆顶永远是最先到期的消息。";
    "due.exact" => "It is {now}: {label} is due now, and the channel's timer fires exactly on time (0 ms late). Next it is popped from the root of the heap.",
        "现在是 {now}：{label} 到期了，通道的定时器准时触发（晚 0 ms）。接下来它从堆顶弹出。";
    "due.late" => "{label} was due at {due}; the channel's timer fired at {now}. Next it is popped from the root of the heap.",
        "{label} 应在 {due} 到期；通道的定时器在 {now} 触发。接下来它从堆顶弹出。";
    "due.scan" => "{label} was due at {due}; nsqd's scan loop found it at {now}, {late} late. The loop wakes every 100 ms and looks only at a random sample of channels; this scan picked {channel}. Next {label} is popped from the root of the heap.",
        "{label} 应在 {due} 到期；nsqd 的扫描循环在 {now} 才发现它，晚了 {late}。扫描循环每 100 ms 醒来一次，只查看随机抽取的部分通道；这次扫描抽到了 {channel}。接下来 {label} 从堆顶弹出。";
    "sent" => "{label} is sent to {who}. It is now in flight: {who} must answer FIN (done), REQ (retry) or TOUCH (more time) by {deadline}, its msg_timeout, or the message comes back.",
        "{label} 被发送给 {who}，现在处于在途状态：{who} 必须在 {deadline}（它的 msg_timeout）之前回复 FIN（完成）、REQ（重试）或 TOUCH（需要更多时间），否则消息会被收回。";
    "sent.after-crash" => "{label} is sent to {who} again, as attempt 1 although it was in flight at the crash: nsqlab's store gives the message back but does not keep how often it was sent. (nsqd keeps the attempts only of what its disk queue held; what was in its memory is lost with the count.) It is in flight until {deadline}.",
        "{label} 再次发送给 {who}，attempts 为 1，尽管崩溃时它正在途中：nsqlab 的存储会还回这条消息，但不记录它被发送过几次。（nsqd 只为它磁盘队列里的消息保留 attempts；内存里的消息连同计数一起丢失。）它在 {deadline} 之前处于在途状态。";
    "sent.again" => "{label} is sent to {who} — attempt {n}: it was tried before. It is now in flight: {who} must answer FIN (done), REQ (retry) or TOUCH (more time) by {deadline}, its msg_timeout, or the message comes back.",
        "{label} 被发送给 {who}——第 {n} 次尝试：之前已经投递过。现在处于在途状态：{who} 必须在 {deadline}（它的 msg_timeout）之前回复 FIN、REQ 或 TOUCH，否则消息会被收回。";
    "fin" => "{who} is done with {label} and sends FIN: the channel forgets the message for good.",
        "{who} 处理完 {label} 并发送 FIN：通道彻底删除这条消息。";
    "req.now" => "{who} could not handle {label} and sends REQ with no delay: it goes straight back to the channel's queue.",
        "{who} 处理 {label} 失败，发送不带延迟的 REQ：消息立刻回到通道的队列。";
    "req.later" => "{who} could not handle {label} and sends REQ with a delay of {delay}: the message will be retried after that, so it waits in the deferred heap.",
        "{who} 处理 {label} 失败，发送延迟 {delay} 的 REQ：消息要过这段时间才重试，在此之前它在延迟堆里等待。";
    "timeout" => "{who} never answered {label}: its msg_timeout passed at {now}, so the channel takes the message back. It goes to the queue and will be sent again, with attempts + 1.",
        "{who} 一直没有回复 {label}：它的 msg_timeout 在 {now} 到期，通道收回这条消息。消息回到队列，之后会再次发送，attempts 加 1。";
    "touch" => "{who} sends TOUCH for {label}: it needs more time, so its deadline moves to {deadline}.",
        "{who} 为 {label} 发送 TOUCH：它需要更多时间，截止时间推迟到 {deadline}。";
    "dropped" => "Ephemeral channel {channel} keeps only --mem-queue-size messages in memory and has no disk: {label} is dropped.",
        "临时通道 {channel} 只在内存中保留 --mem-queue-size 条消息，没有磁盘：{label} 被丢弃。";
    "topic.dropped" => "Ephemeral topic {topic} already holds --mem-queue-size messages for channels it does not have yet: {label} is dropped.",
        "临时主题 {topic} 已经为尚不存在的通道保留了 --mem-queue-size 条消息：{label} 被丢弃。";
    "unsampled" => "{label} is skipped: {who}'s sample_rate says it sees only a share of the messages.",
        "{label} 被跳过：{who} 的 sample_rate 表示它只接收一部分消息。";
    "scan.none" => "nsqd's scan loop wakes up (every 100 ms) and looks at {n} of the channels: none had a message due, so nothing moves; it sleeps until its next 100 ms tick.",
        "nsqd 的扫描循环醒来（每 100 ms 一次），查看了 {n} 个通道：都没有到期的消息，什么也不发生；它睡到下一个 100 ms。";
    "scan.some" => "nsqd's scan loop wakes up (every 100 ms) and looks at {n} of the channels: {dirty} had something due. That is not more than a quarter of them, so it sleeps until its next 100 ms tick.",
        "nsqd 的扫描循环醒来（每 100 ms 一次），查看了 {n} 个通道：其中 {dirty} 个有到期的消息。没有超过四分之一，所以它睡到下一个 100 ms。";
    "scan.some.more" => "nsqd's scan loop wakes up (every 100 ms) and looks at {n} of the channels: {dirty} had something due. That is more than a quarter of them, so it looks again at once, without waiting.",
        "nsqd 的扫描循环醒来（每 100 ms 一次），查看了 {n} 个通道：其中 {dirty} 个有到期的消息。超过了四分之一，所以它不等待，立即再扫一次。";
    "scan.again.none" => "At once, with no 100 ms wait, the scan loop looks at a fresh random sample of {n} channels: none had a message due, so it sleeps until its next 100 ms tick.",
        "不等 100 ms，扫描循环立即重新随机抽取 {n} 个通道查看：都没有到期的消息，所以它睡到下一个 100 ms。";
    "scan.again.some" => "At once, with no 100 ms wait, the scan loop looks at a fresh random sample of {n} channels: {dirty} had something due. That is not more than a quarter, so it sleeps until its next 100 ms tick.",
        "不等 100 ms，扫描循环立即重新随机抽取 {n} 个通道查看：其中 {dirty} 个有到期的消息。没有超过四分之一，所以它睡到下一个 100 ms。";
    "scan.again.more" => "At once, with no 100 ms wait, the scan loop looks at a fresh random sample of {n} channels: {dirty} had something due. That is more than a quarter again, so it goes on at once.",
        "不等 100 ms，扫描循环立即重新随机抽取 {n} 个通道查看：其中 {dirty} 个有到期的消息。又超过了四分之一，所以它继续立即扫描。";

    // ---------------------------------------------------------------- the heap
    "heap.push.root" => "Push: {label} (due {due}) goes into the first free slot, index {at}. It is the only entry, so it is the root.",
        "入堆：{label}（{due} 到期）放入第一个空位，下标 {at}。它是唯一的元素，所以就是堆顶。";
    "heap.push.up" => "Push: {label} (due {due}) goes into the first free slot, index {at}. Its parent is index {p}, {plabel} (due {pdue}): it is due sooner, so it will sift up.",
        "入堆：{label}（{due} 到期）放入第一个空位，下标 {at}。它的父节点是下标 {p} 的 {plabel}（{pdue} 到期）：它更早到期，所以要上浮。";
    "heap.push.stay" => "Push: {label} (due {due}) goes into the first free slot, index {at}. Its parent is index {p}, {plabel} (due {pdue}): it is due no sooner, so it stays where it is.",
        "入堆：{label}（{due} 到期）放入第一个空位，下标 {at}。它的父节点是下标 {p} 的 {plabel}（{pdue} 到期）：它不比父节点早，所以留在原地。";
    "heap.swap.up" => "Sift up: {c} (due {cdue}) is due sooner than {p} (due {pdue}), so they swap. {c} moves up to index {parent}, {p} down to index {child}.",
        "上浮：{c}（{cdue} 到期）比 {p}（{pdue} 到期）更早到期，两者交换。{c} 上移到下标 {parent}，{p} 下移到下标 {child}。";
    "heap.swap.up.tie" => "Sift up: {c} is due at the same time as {p} and came first, so they swap. {c} moves up to index {parent}, {p} down to index {child}.",
        "上浮：{c} 与 {p} 同时到期，但 {c} 先来，两者交换。{c} 上移到下标 {parent}，{p} 下移到下标 {child}。";
    "heap.swap.down" => "Sift down: {c} (due {cdue}) is due sooner than {p} (due {pdue}), the sooner of the two children, so they swap. {c} moves up to index {parent}, {p} down to index {child}.",
        "下沉：{c}（{cdue} 到期）比 {p}（{pdue} 到期）更早到期，而且是两个子节点中更早的那个，两者交换。{c} 上移到下标 {parent}，{p} 下移到下标 {child}。";
    "heap.swap.down.tie" => "Sift down: {c} is due at the same time as {p} and came first, so they swap. {c} moves up to index {parent}, {p} down to index {child}.",
        "下沉：{c} 与 {p} 同时到期，但 {c} 先来，两者交换。{c} 上移到下标 {parent}，{p} 下移到下标 {child}。";
    "heap.take.only" => "Pop: {label} leaves the heap. It was the only entry, so the heap is now empty.",
        "出堆：{label} 离开堆。它是唯一的元素，所以堆现在空了。";
    "heap.take.last" => "{label} leaves the heap from its last slot, index {at}: nothing else moves.",
        "{label} 从最后一个位置（下标 {at}）离开堆：其他元素都不动。";
    "heap.take.root" => "Pop: {label} leaves the root, the slot of the message due first. The root is now a hole.",
        "出堆：{label} 离开堆顶——最先到期的消息所在的位置。堆顶现在是一个空位。";
    "heap.take.at" => "{label} leaves the heap from index {at}, leaving a hole there; the last entry will fill it.",
        "{label} 从下标 {at} 离开堆，那里留下一个空位；最后一个元素将填进来。";
    "heap.move.leaf" => "The last entry, {label} (due {due}), moves from index {from} into the hole at index {to}. It has no children, so it stays.",
        "最后一个元素 {label}（{due} 到期）从下标 {from} 移到下标 {to} 的空位。它没有子节点，所以留在那里。";
    "heap.move.down" => "The last entry, {label} (due {due}), moves from index {from} into the hole at index {to}. Now it sifts down: while a child is due sooner, it swaps with the sooner child.",
        "最后一个元素 {label}（{due} 到期）从下标 {from} 移到下标 {to} 的空位。接着它下沉：只要有子节点比它更早到期，就与更早的那个子节点交换。";
    "heap.rekey" => "{label} gets a new due time, {due}; it sifts to its new place.",
        "{label} 得到新的到期时间 {due}，然后移动到新的位置。";
    "heap.clear" => "The heap is emptied.", "堆被清空。";

    // ---------------------------------------------------------------- scenarios
    "scenario.dpub-heap.title" => "DPUB through the deferred heap", "DPUB 经过延迟堆";
    "scenario.dpub-heap.text" => "Seven orders are published with different delays. Each goes into the channel's deferred min-heap: pushed at the end, then swapped with its parent while it is due sooner. The root is always the next message due; when its time comes it is popped (the last entry moves to the root and sifts down) and delivered — exactly on time.",
        "七个订单以不同的延迟发布。每条消息进入通道的延迟最小堆：先放到末尾，只要比父节点更早到期就与父节点交换。堆顶永远是下一条到期的消息；时间一到，它就被弹出（最后一个元素移到堆顶再下沉），并且准时投递。";
    "scenario.fan-out.title" => "Fan-out to two channels", "扇出到两个通道";
    "scenario.fan-out.text" => "A topic copies every message to each of its channels. Billing and shipping each get their own copy and consume at their own pace.",
        "一个主题把每条消息复制到它的每个通道。计费和发货各自得到自己的副本，按各自的节奏消费。";
    "scenario.load-balance.title" => "Load-balancing by RDY", "按 RDY 负载均衡";
    "scenario.load-balance.text" => "Three consumers share one channel. Each says with RDY how many messages it can hold at once (1, 2 and 4); the channel hands messages out round-robin to whoever has room, so the fast worker does most of the work.",
        "三个消费者共享一个通道。每个消费者用 RDY 说明自己同时能处理多少条消息（1、2 和 4）；通道把消息轮流交给有空位的消费者，所以快的进程 做了大部分工作。";
    "scenario.crash-timeout.title" => "A consumer crashes holding a message", "消费者拿着消息崩溃了";
    "scenario.crash-timeout.text" => "A consumer takes a message and crashes without answering. The message stays in flight until its msg_timeout passes (3 s here), then goes back to the queue and is delivered to another consumer, with attempts = 2.",
        "一个消费者拿到消息后崩溃，没有回复。消息保持在途，直到 msg_timeout（这里是 3 秒）到期，然后回到队列，被投递给另一个消费者，attempts = 2。";
    "scenario.req-backoff.title" => "REQ with backoff", "带退避的 REQ";
    "scenario.req-backoff.text" => "A flaky consumer fails most messages and answers REQ with a delay that grows with each attempt. A requeued message waits in the deferred heap until its retry time.",
        "一个不稳定的消费者处理大多数消息都会失败，它用 REQ 回复，延迟随每次尝试增长。重新入队的消息在延迟堆里等到重试时间。";
    "scenario.overflow-disk.title" => "Memory queue overflowing to disk", "内存队列溢出到磁盘";
    "scenario.overflow-disk.text" => "The channel keeps --mem-queue-size messages (4 here) in memory; the rest go to the disk backlog, in order. When a consumer arrives it drains memory first, then the backlog.",
        "通道在内存中保留 --mem-queue-size 条消息（这里是 4 条），其余按顺序进入磁盘积压。消费者到来后，先取内存里的，再取积压的。";
    "scenario.big-heap.title" => "10 000 deferred messages", "一万条延迟消息";
    "scenario.big-heap.text" => "Ten thousand DPUBs with random delays of 5 to 25 s. However many are waiting, the heap is only 14 levels deep: a push or a pop swaps at most 13 times, and the root is always the next message due. The drawing shows the top levels and counts the rest.",
        "一万个 DPUB，随机延迟 5 到 25 秒。不管有多少条在等待，堆只有 14 层：一次入堆或出堆最多交换 13 次，堆顶永远是下一条到期的消息。图里画出上面几层，其余的只计数。";
    "scenario.scan-vs-exact.title" => "nsqd's 100 ms scan loop versus exact timers", "nsqd 的 100 ms 扫描循环与精确定时器";
    "scenario.scan-vs-exact.text" => "The same 20 DPUBs under two timer strategies. nsqd looks for due messages by scanning a random sample of channels every 100 ms, so deliveries come late; nsqlab keeps one timer per channel and fires it exactly when due. The chart shows each message's lateness.",
        "同样的 20 个 DPUB，两种定时策略。nsqd 每 100 ms 随机抽取一部分通道扫描到期消息，所以投递会晚；nsqlab 每个通道有一个定时器，准时触发。图表显示每条消息晚了多少。";

    "scenario.cluster.title" => "A cluster: three nsqd, two nsqlookupd", "集群：三个 nsqd，两个 nsqlookupd";
    "scenario.cluster.text" => "Each nsqd registers its topics and channels with both nsqlookupd; a producer spreads orders over the nodes; consumers ask a lookupd where topic orders is and connect to every node it lists. At 4 s nsqd-3 goes down; at 9 s the topic is tombstoned on nsqd-2; at 10 s an auditor joins. The buttons under the picture let you switch any nsqd or nsqlookupd off and on, publish an order and add a consumer, at any step.",
        "每个 nsqd 都向两个 nsqlookupd 注册它的主题和通道；一个生产者把订单分发到各个节点；消费者询问 lookupd 主题 orders 在哪里，然后连接它列出的每个节点。4 秒时 nsqd-3 宕机；9 秒时 nsqd-2 上的主题被立墓碑；10 秒时一个审计服务加入。图下面的按钮让你在任何一步关闭或打开任意 nsqd 或 nsqlookupd、发布订单、添加消费者。";
    "scenario.crash-restart.title" => "A crash: kill -9 mid-stream", "崩溃：运行中途 kill -9";
    "scenario.crash-restart.text" => "Payments and delayed refunds flow to a ledger service; at 1.3 s the broker is killed and started again. nsqlab writes every message to disk before it answers OK, so its store gives back every acknowledged one: ready ones, those that were in flight (delivered again), and deferred ones with their due time.",
        "付款和延迟退款流向账本服务；在 1.3 秒时 消息服务器被杀掉并重新启动。nsqlab 在回复 OK 之前把每条消息写入磁盘，所以它的存储会还回每条已确认的消息：待发送的、当时在途的（再次投递），以及带着到期时间的延迟消息。";
    "pane.exact" => "exact timers (nsqlab)", "精确定时器（nsqlab）";
    "pane.scan" => "100 ms scan loop (nsqd)", "100 ms 扫描循环（nsqd）";

    // ---------------------------------------------------------------- refusals
    "refuse.nsqd" => "{error}", "nsqd 会回复：{error}";
    "refuse.name" => "{error} — a name is 1 to 64 characters of a–z A–Z 0–9 . _ - (it may end in #ephemeral)",
        "{error}——名称为 1 到 64 个字符，只能是 a–z A–Z 0–9 . _ -（可以以 #ephemeral 结尾）";
    "refuse.delay.empty" => "a delay in milliseconds is needed (0 publishes at once)", "需要填写以毫秒为单位的延迟（0 表示立即发布）";
    "refuse.count.low" => "{error} — at least one message", "{error}——至少要有一条消息";
    "refuse.count.high" => "{n} is more than this page publishes at once: at most {max} (nsqd takes an MPUB as big as --max-body-size, 5 MiB)",
        "{n} 超过了本页面一次能发布的数量：最多 {max} 条（nsqd 接受的 MPUB 最大为 --max-body-size，即 5 MiB）";
    "refuse.count.nan" => "how many messages: a whole number from 1 to {max}", "消息条数：1 到 {max} 之间的整数";
    "refuse.number" => "{what}: a whole number from {lo} to {hi}", "{what}：{lo} 到 {hi} 之间的整数";
    "refuse.seed" => "a seed is a whole number from 0 to {max}", "种子是 0 到 {max} 之间的整数";
    "refuse.admin" => "{code} {error} — nsqd's answer to {path}", "{code} {error}——nsqd 对 {path} 的回复";
    "knob.work" => "work ms", "处理毫秒数";
    "knob.fail" => "fail %", "失败率 %";


    // ---------------------------------------------------------------- the page
    "ui.sub" => " — watch a message queue work from the inside", " —— 看消息队列在内部如何工作";
    "ui.scenarios" => "scenarios", "场景";
    "ui.controls" => "controls", "控制";
    "ui.live" => "● live server", "● 实时服务器";
    "ui.play" => "▶ Play", "▶ 播放";
    "ui.pause" => "‖ Pause", "‖ 暂停";
    "ui.play.title" => "play or pause (space)", "播放或暂停（空格键）";
    "ui.step" => "Step", "单步";
    "ui.step.title" => "one step (→ or s)", "前进一步（→ 或 s）";
    "ui.next" => "Next timer", "下一个定时器";
    "ui.next.title" => "the first step of the next instant (n)", "跳到下一个时刻的第一步（n）";
    "ui.back" => "◀ Back", "◀ 后退";
    "ui.back.title" => "one step back (← or b)", "后退一步（← 或 b）";
    "ui.timeline" => "the run so far: drag to go back and forth in time", "到目前为止的运行：拖动可以在时间上前后移动";
    "ui.timeline.at" => "step {pos} of {horizon}", "第 {pos} 步 / 共 {horizon} 步";
    "ui.mark.pop" => "a pop from the heap", "一次出堆";
    "ui.mark.timeout" => "a timeout", "一次超时";
    "ui.mark.requeue" => "a REQ", "一次 REQ";
    "ui.mark.by-hand" => "a change by hand", "一次手动修改";
    "ui.marks" => "marks: pops ▲, timeouts ✕, REQs ↺, changes by hand ✎", "标记：出堆 ▲，超时 ✕，REQ ↺，手动修改 ✎";
    "ui.reset" => "Reset", "重置";
    "ui.reset.title" => "start over (r)", "重新开始（r）";
    "ui.speed" => "speed", "速度";
    "ui.seed" => "seed", "种子";
    "ui.seed.hint" => "the same seed replays the same run; Enter starts over with it", "同样的种子会重放同样的运行；按回车用它重新开始";
    "ui.seed.apply" => "start over", "重新开始";
    "ui.done" => "finished", "已结束";
    "ui.begin" => "Press Step (→) or Play (space) to begin.", "按“单步”（→）或“播放”（空格键）开始。";
    "ui.finished.title" => "Scenario finished — here is what happened", "场景结束——发生了这些事";
    "ui.finished.hint.cluster" => "Nothing more happens by itself. Reset to watch it again, or take the cluster in hand below: switch an nsqd or an nsqlookupd off or on, publish an order, add a consumer.",
        "不会再自动发生任何事。点“重置”再看一遍，或者在下面亲手操作集群：关闭或打开某个 nsqd 或 nsqlookupd、发布订单、添加消费者。";
    "ui.finished.hint.replication" => "Nothing more happens by itself. Reset to watch it again, or start over with another seed: the election timeouts, and so the leaders, change with it.",
        "不会再自动发生什么了。点“重置”再看一遍，或者换一个种子重新开始：选举超时会随之改变，领导者也会不同。";
    "ui.finished.hint" => "Nothing more happens by itself. Reset to watch it again, or change something by hand below: publish, add a consumer, change a consumer's RDY.",
        "不会再自动发生任何事。点“重置”再看一遍，或者在下面手动改点什么：发布消息、添加消费者、修改消费者的 RDY。";
    "sym.lang.other" => "中文", "English";
    "ui.lang.title" => "Read this page in Chinese", "用英文阅读本页";
    "ui.producers" => "producers", "生产者";
    "ui.topics" => "topics", "主题";
    "ui.channels" => "channels", "通道";
    "ui.consumers" => "consumers", "消费者";
    "ui.producers.none" => "none yet: publish below", "还没有：在下面发布";
    "ui.consumers.none" => "none yet: add one below", "还没有：在下面添加";
    "ui.published" => "published {n}", "已发布 {n}";
    "ui.disconnected" => "disconnected", "已断开";
    "ui.held" => "held", "保留";
    "ui.held.aria" => "messages the topic holds until it has a channel", "主题在有通道之前保留的消息";
    "ui.c.depth" => "depth", "深度";
    "ui.c.deferred" => "deferred", "延迟";
    "ui.c.inflight" => "in flight", "在途";
    "ui.c.finished" => "finished", "完成";
    "ui.c.requeued" => "requeued", "重新入队";
    "ui.c.timedout" => "timed out", "超时";
    "ui.c.messages" => "messages", "消息";
    "ui.c.clients" => "consumers", "消费者";
    "ui.memory" => "memory queue", "内存队列";
    "ui.flow.deferred" => "deferred heap", "延迟堆";
    "ui.flow" => "flow: every message as a token", "流动：每条消息是一个小标记";
    "ui.flow.on" => "flow view", "流动视图";
    "ui.flow.title" => "show messages moving as tokens between producers, channels and consumers", "把消息显示为在生产者、通道和消费者之间移动的标记";
    "ui.flow.more" => "+{n} more", "另外 {n} 条";
    "ui.flow.row" => "{name}: {n}", "{name}：{n}";
    "ui.flow.consumer" => "{who} · in flight {n}", "{who} · 在途 {n}";
    "ui.flow.consumer.crashed" => "✕ {who} · crashed", "✕ {who} · 已崩溃";
    "ui.flow.legend.hot" => "the message this step is about", "本步讲的消息";
    "ui.flow.legend.back" => "timed out, going back to the queue", "已超时，正回到队列";
    "ui.flow.legend.ring" => "time left to be answered", "剩余的回复时间";
    "ui.flow.legend.crashed" => "a consumer that crashed", "已崩溃的消费者";
    "ui.flow.ring" => "{label}: {left} of its time left to be answered", "{label}：还剩 {left} 的回复时间";
    "ui.disk" => "disk backlog", "磁盘积压";
    "ui.skip" => "skip links", "跳转链接";
    "ui.skip.controls" => "Skip to the step controls", "跳到单步控制";
    "ui.skip.forms" => "Skip to the publish and manage forms", "跳到发布和管理表单";
    "ui.store" => "store on disk, to replay", "磁盘上的存储，待重放";
    "ui.down" => "The broker is down (kill -9): its memory is gone and no client is connected. Only its store on disk is left.", "消息服务器已停止（kill -9）：内存已经消失，没有客户端连接。只剩下磁盘上的存储。";
    "ui.heap.down" => "The heap lived in the broker's memory and is gone with it. The store on disk keeps {n} deferred messages with their due times: the restart pushes them back in.", "堆在消息服务器的内存里，随之消失。磁盘上的存储保留着 {n} 条延迟消息及其到期时间：重启时会把它们重新推入堆中。";
    "ui.heap.replay" => "The restart rebuilds the heap from the store: {n} deferred messages still to push back in.", "重启正在从存储重建堆：还有 {n} 条延迟消息等待推回。";
    "ui.of" => "{n} of {size}", "{n}/{size}";
    "ui.crashed" => "crashed", "已崩溃";
    "ui.consumer.meta" => "{channel} · RDY {rdy} · {work} ms per message, {fail} % fail", "{channel} · RDY {rdy} · 每条 {work} ms，失败率 {fail}%";
    "ui.cc.inflight" => "in flight {n}", "在途 {n}";
    "ui.cc.received" => "received {n}", "收到 {n}";
    "ui.cc.finished" => "finished {n}", "完成 {n}";
    "ui.cc.req" => "REQ {n}", "REQ {n} 次";
    "ui.cc.timedout" => "timed out {n}", "超时 {n}";
    "ui.crash" => "crash", "崩溃";
    "ui.recover" => "recover", "恢复";
    "ui.crash.title" => "a crashed consumer never answers: its messages time out", "崩溃的消费者不再回复：它的消息会超时";
    "ui.disconnect" => "disconnect {who}", "断开 {who}";
    "ui.disconnect.title" => "disconnect", "断开连接";
    "ui.inflight.more" => "+{n} more, with later deadlines", "另有 {n} 条，截止时间更晚";
    "ui.inflight.title" => "in flight on {channel}", "{channel} 的在途消息";
    "ui.inflight.row" => "{who} · attempt {n}", "{who} · 第 {n} 次";
    "ui.answer" => "{cmd} {label}", "对 {label} 发送 {cmd}";
    "ui.timeleft" => "time left to answer", "剩余回复时间";
    "ui.log.title" => "every step so far ({n})", "到目前为止的每一步（{n}）";
    "ui.chart.title" => "how late each deferred message was delivered (delivery time − due time)", "每条延迟消息晚了多久投递（投递时间 − 到期时间）";
    "ui.chart.delivered" => "delivered", "投递";
    "ui.chart.none" => "no deferred message delivered yet", "还没有投递延迟消息";
    "ui.chart.summary" => "{n} delivered · at most {max} ms late · on average {mean} ms", "已投递 {n} 条 · 最多晚 {max} ms · 平均 {mean} ms";
    "ui.chart.binned" => " · each bar is the latest of {k} messages", " · 每根柱子是 {k} 条消息中最晚的一条";
    "ui.chart.x" => "deferred messages, in the order they came due", "延迟消息，按到期顺序排列";
    "ui.chart.aria" => "{title}: lateness per message in ms", "{title}：每条消息晚了多少毫秒";
    "ui.chart.bar" => "{label}: {ms} ms late", "{label}：晚 {ms} ms";
    "ui.heap.title" => "deferred min-heap of {channel} — {n} pending", "{channel} 的延迟最小堆——{n} 条等待中";
    "ui.heap.empty.title" => "deferred min-heap of {channel} — empty", "{channel} 的延迟最小堆——空";
    "ui.heap.empty" => "No message is waiting for its time here: every deferred one has come due.", "这里没有等待到期的消息：所有延迟消息都已到期。";
    "ui.heap.more" => "… and {hidden} more in levels {from}–{to} (the tree is {depth} levels deep; a push or pop swaps at most {swaps} times)",
        "……还有 {hidden} 条在第 {from}–{to} 层（树共有 {depth} 层；一次入堆或出堆最多交换 {swaps} 次）";
    "ui.heap.root" => "Deferred heap of {channel}: {n} entries; the root, due first, is {label} (due {due}).", "{channel} 的延迟堆：{n} 个元素；堆顶（最先到期）是 {label}（{due} 到期）。";
    "ui.heap.hole" => "Deferred heap of {channel}: the root is a hole.", "{channel} 的延迟堆：堆顶是一个空位。";
    "ui.heap.array" => "the same heap as an array: the children of index i are 2i+1 and 2i+2", "同一个堆的数组形式：下标 i 的子节点是 2i+1 和 2i+2";
    "ui.hole" => "hole", "空位";
    "ui.due.in" => "in {s} s", "{s} 秒后";
    "ui.due.now" => "due now", "已到期";
    "ui.heap.node" => "{label} — due {due}, index {i}", "{label}——{due} 到期，下标 {i}";
    "ui.publish" => "publish", "发布";
    "ui.f.topic" => "topic", "主题";
    "ui.f.body" => "body", "消息体";
    "ui.f.delay" => "delay ms", "延迟（毫秒）";
    "ui.f.count" => "count", "条数";
    "ui.f.channel" => "channel", "通道";
    "ui.f.rdy" => "RDY", "RDY 数";
    "ui.h.topic" => "the topic to publish to", "要发布到的主题";
    "ui.h.body" => "the message body", "消息内容";
    "ui.h.delay" => "0 publishes at once (PUB); more defers it (DPUB), up to nsqd's --max-req-timeout", "0 表示立即发布（PUB）；大于 0 表示延迟发布（DPUB），最多为 nsqd 的 --max-req-timeout";
    "ui.h.count" => "1 message, or several (MPUB; with a delay, that many DPUBs)", "1 条，或多条（MPUB；有延迟时发布相同条数的 DPUB）";
    "ui.manage" => "manage", "管理";
    "ui.h.mtopic" => "a topic name", "主题名";
    "ui.h.mchannel" => "a channel name", "通道名";
    "ui.h.rdy" => "the new consumer's RDY count", "新消费者的 RDY 数";
    "ui.add-consumer" => "add consumer", "添加消费者";
    "ui.create-topic" => "create topic", "创建主题";
    "ui.create-channel" => "create channel", "创建通道";
    "ui.delete-channel" => "delete channel", "删除通道";
    "ui.delete-topic" => "delete topic", "删除主题";
    "ui.glossary" => "Glossary: the words on this page", "术语表：本页出现的词";
    "ui.close" => "close", "关闭";
    "ui.in-glossary" => "in the glossary", "在术语表中查看";
    "ui.term" => "{term}: what is this?", "{term}：这是什么？";
    "ui.glossary.entry" => "glossary: {title}", "术语表：{title}";
    "live.busy" => "More happens now than anyone can read, hundreds of events a second: the story stops here. The numbers and the drawing are still the server's own, four times a second.", "现在发生的事多得没人读得过来，每秒数百个事件：讲述在此暂停。数字和图形仍然来自服务器自身，每秒四次。";
    "live.calm" => "The server is quieter: the story starts again from its state as it is now.", "服务器安静下来了：讲述从它此刻的状态重新开始。";
    "ui.live.sub" => " — live: this server's channels, as they change", " —— 实时：本服务器的通道，随时变化";
    "ui.live.back" => "← simulation", "← 模拟";
    "ui.live.status" => "{status} · events too many to tell one by one: {n}", "{status} · 多得无法逐条讲述的事件：{n}";
    "ui.live.stale" => "No frame from the server since {t}: these numbers are not live.", "自 {t} 起没有收到服务器的画面：这些数字不是实时的。";
    "ui.live.bare" => "no channel yet: its messages wait in the topic", "还没有通道：消息在主题里等待";
    "ui.live.connecting" => "connecting…", "连接中……";
    "ui.live.connected" => "connected", "已连接";
    "ui.live.closed" => "disconnected (reload to reconnect)", "已断开（刷新页面重新连接）";
    "ui.live.clock" => "server time {t} UTC", "服务器时间 {t} UTC";
    "ui.live.hint" => "Every number and drawing is the server's own (/stats), four times a second; the log tells its events one by one.", "每个数字和图形都来自服务器自身（/stats），每秒四次；日志逐条讲述它的事件。";
    "ui.live.waiting" => "Waiting for traffic… try: curl -d hi 'http://{host}/pub?topic=t&defer=5000'", "等待流量……试试：curl -d hi 'http://{host}/pub?topic=t&defer=5000'";


    // ---------------------------------------------------------------- the algorithm panel
    "ui.algo" => "the algorithm at this step", "这一步的算法";
    "ui.algo.nsqd" => "how nsqd does it", "nsqd 是怎么做的";
    "algo.none" => "—", "——";
    "algo.publish.title" => "publish: a topic copies each message to its channels", "发布：主题把每条消息复制到它的每个通道";
    "algo.publish.1" => "on PUB(topic, body), DPUB(topic, delay, body), or each body of MPUB(topic, bodies):", "收到 PUB(topic, body)、DPUB(topic, delay, body)，或 MPUB(topic, bodies) 的每条消息时：";
    "algo.publish.2" => "  msg = message(id, now, body); store it; answer OK", "  msg = 新消息(id, now, body)；保存；回复 OK";
    "algo.publish.3" => "  if topic has no channel: topic keeps msg", "  如果主题还没有通道：主题先保留 msg";
    "algo.publish.4" => "  for each channel: if deferred: heap.push(msg, now + delay)", "  对每个通道：如果是延迟消息：heap.push(msg, now + delay)";
    "algo.publish.5" => "    else if memory has room: memory.push(msg)", "    否则如果内存队列有空位：memory.push(msg)";
    "algo.publish.6" => "    else: disk.append(msg)   // past --mem-queue-size", "    否则：disk.append(msg)   // 超过 --mem-queue-size";
    "algo.publish.7" => "  pump(channel)", "  pump(channel)   // 尝试投递";
    "algo.publish.nsqd" => "nsqd: the topic's messagePump goroutine copies each message to every channel; a channel's PutMessage tries its memoryMsgChan (a Go channel of --mem-queue-size) and writes to its disk queue when that is full.",
        "nsqd：主题的 messagePump goroutine 把每条消息复制到每个通道；通道的 PutMessage 先尝试写入 memoryMsgChan（容量为 --mem-queue-size 的 Go channel），满了就写入磁盘队列。";
    "algo.push.title" => "push into the deferred min-heap, then sift up", "压入延迟最小堆，然后上浮";
    "algo.push.1" => "heap.push(msg, due):", "heap.push(msg, due)：   // 入堆";
    "algo.push.2" => "  i = heap.len; heap[i] = (msg, due)   // the first free slot", "  i = heap.len; heap[i] = (msg, due)   // 第一个空位";
    "algo.push.3" => "  while i > 0 and heap[i].due < heap[(i-1)/2].due:", "  当 i > 0 且 heap[i].due < heap[(i-1)/2].due 时：";
    "algo.push.4" => "    swap(i, (i-1)/2); i = (i-1)/2   // sift up", "    swap(i, (i-1)/2); i = (i-1)/2   // 上浮";
    "algo.push.5" => "  timer.arm(channel, heap[0].due)   // the root is due first", "  timer.arm(channel, heap[0].due)   // 按堆顶设定定时器";
    "algo.push.nsqd" => "nsqd keeps the same kind of heap per channel (a Go container/heap), behind a mutex; it arms no timer: its queueScanLoop has to find due messages.",
        "nsqd 每个通道也有一个同样的堆（Go 的 container/heap），用互斥锁保护；但它不设定时器：要靠 queueScanLoop 去发现到期的消息。";
    "algo.pop.title" => "the channel's timer: pop what is due, then sift down", "通道的定时器：弹出到期的消息，然后下沉";
    "algo.pop.1" => "on timer(channel) at now:", "定时器(channel) 在 now 触发时：";
    "algo.pop.2" => "  while heap[0].due <= now:", "  当 heap[0].due <= now 时：   // 堆顶到期";
    "algo.pop.3" => "    msg = heap[0]; heap[0] = hole", "    msg = heap[0]; heap[0] = 空位";
    "algo.pop.4" => "    heap[0] = heap.pop_last()", "    heap[0] = heap.pop_last()   // 最后一个元素填进空位";
    "algo.pop.5" => "    i = 0; c = the sooner child of i", "    i = 0; c = i 的子节点中更早到期的那个";
    "algo.pop.6" => "    while heap[c].due < heap[i].due: swap(i, c); i = c   // sift down", "    当 heap[c].due < heap[i].due 时：swap(i, c); i = c   // 下沉";
    "algo.pop.7" => "    memory.push(msg); pump(channel)", "    memory.push(msg); pump(channel)   // 进入队列，尝试投递";
    "algo.pop.8" => "  timer.arm(channel, heap[0].due)", "  timer.arm(channel, heap[0].due)   // 按新的堆顶重新设定";
    "algo.pop.nsqd" => "nsqd has no timer per channel: every 100 ms its queueScanLoop samples 20 channels and pops what is due in those, so a message waits up to a scan period, or longer when its channel is not picked. nsqlab arms one exact timer per channel, at its heap's root.",
        "nsqd 没有每个通道的定时器：它的 queueScanLoop 每 100 ms 随机抽取 20 个通道，弹出其中到期的消息，所以一条消息最多要等一个扫描周期，通道没被抽到时更久。nsqlab 为每个通道按堆顶设定一个精确的定时器。";
    "algo.deliver.title" => "pump: hand messages to ready consumers", "pump：把消息交给准备好的消费者";
    "algo.deliver.1" => "pump(channel):", "pump(channel)：   // 投递";
    "algo.deliver.2" => "  while channel has a ready message:", "  当通道有待发送的消息时：";
    "algo.deliver.3" => "    c = the next consumer with in_flight < RDY (round robin)", "    c = 下一个 in_flight < RDY 的消费者（轮流）";
    "algo.deliver.4" => "    msg = queue.pop(); msg.attempts += 1", "    msg = queue.pop(); msg.attempts += 1   // 取出并计数";
    "algo.deliver.5" => "    in_flight.push(msg, now + c.msg_timeout)", "    in_flight.push(msg, now + c.msg_timeout)   // 进入在途堆";
    "algo.deliver.6" => "    send(c, MESSAGE msg)", "    send(c, MESSAGE msg)   // 发给消费者";
    "algo.deliver.nsqd" => "nsqd: every client has a messagePump goroutine selecting on the channel's memoryMsgChan and disk queue; whichever is ready wins, so memory and disk messages interleave, and the goroutines race for each message. nsqlab hands messages out in order, round robin among ready consumers.",
        "nsqd：每个客户端都有一个 messagePump goroutine，用 select 同时等待通道的 memoryMsgChan 和磁盘队列；哪个先就绪就取哪个，所以内存和磁盘的消息会交错，goroutine 之间还会争抢消息。nsqlab 按顺序、在准备好的消费者之间轮流投递。";
    "algo.answer.title" => "a consumer answers: FIN, REQ or TOUCH", "消费者回复：FIN、REQ 或 TOUCH";
    "algo.answer.1" => "on FIN(id) from c:", "收到 c 的 FIN(id) 时：";
    "algo.answer.2" => "  in_flight.remove(id)   // done: forgotten", "  in_flight.remove(id)   // 完成：删除";
    "algo.answer.3" => "on REQ(id, delay) from c:", "收到 c 的 REQ(id, delay) 时：";
    "algo.answer.4" => "  msg = in_flight.remove(id)", "  msg = in_flight.remove(id)   // 移出在途堆";
    "algo.answer.5" => "  if delay == 0: memory.push(msg) else: heap.push(msg, now + delay)", "  如果 delay == 0：memory.push(msg)，否则：heap.push(msg, now + delay)";
    "algo.answer.6" => "on TOUCH(id) from c:", "收到 c 的 TOUCH(id) 时：";
    "algo.answer.7" => "  in_flight.rekey(id, now + c.msg_timeout)", "  in_flight.rekey(id, now + c.msg_timeout)   // 推迟截止时间";
    "algo.answer.nsqd" => "nsqd does the same under the channel's in-flight mutex; a REQ with a delay goes to its deferred queue, which only the scan loop looks at.",
        "nsqd 在通道的在途互斥锁下做同样的事；带延迟的 REQ 进入它的延迟队列，而那个队列只有扫描循环才会查看。";
    "algo.timeout.title" => "the channel's timer: take back what timed out", "通道的定时器：收回超时的消息";
    "algo.timeout.1" => "on timer(channel) at now:", "定时器(channel) 在 now 触发时：";
    "algo.timeout.2" => "  while in_flight[0].deadline <= now:", "  当 in_flight[0].deadline <= now 时：   // 超时";
    "algo.timeout.3" => "    msg = in_flight.pop()", "    msg = in_flight.pop()   // 从在途堆取出";
    "algo.timeout.4" => "    memory.push(msg); pump(channel)   // sent again, attempts + 1", "    memory.push(msg); pump(channel)   // 再次发送，attempts 加 1";
    "algo.timeout.nsqd" => "nsqd finds timed-out messages only when its queueScanLoop samples the channel (every 100 ms, 20 channels at a time); nsqlab's in-flight heap arms a timer at its earliest deadline.",
        "nsqd 只有在 queueScanLoop 抽到这个通道时（每 100 ms，每次 20 个通道）才会发现超时的消息；nsqlab 的在途堆按最早的截止时间设定定时器。";
    "algo.scan.title" => "nsqd's queueScanLoop", "nsqd 的 queueScanLoop";
    "algo.scan.1" => "every 100 ms:", "每 100 ms：   // 扫描循环醒来";
    "algo.scan.2" => "  pick 20 channels at random", "  随机抽取 20 个通道";
    "algo.scan.3" => "  for each: pop what is due (deferred) and what timed out (in flight)", "  对每个通道：弹出到期的延迟消息和超时的在途消息";
    "algo.scan.4" => "  if more than a quarter had work: go again at once", "  如果超过四分之一的通道有事可做：立即再扫一次";
    "algo.scan.nsqd" => "This is nsqd's own loop (queueScanLoop in nsqd.go). What it costs: a message is late by up to a scan period, or more when its channel is not among the 20; and every scan works on channels with nothing due.",
        "这就是 nsqd 自己的循环（nsqd.go 中的 queueScanLoop）。代价：消息最多晚一个扫描周期，通道没被抽到时更晚；而且每次扫描都要处理没有到期消息的通道。";

    // ---------------------------------------------------------------- guided tours
    "ui.tour.start" => "▶ Guided tour", "▶ 导览";
    "ui.tour.start.title" => "a few short chapters, one idea each; you predict, the simulation shows", "几个简短的章节，每章一个概念；你来预测，模拟来揭晓";
    "ui.tour.chapter" => "guided tour · chapter {n} of {of}", "导览 · 第 {n} 章 / 共 {of} 章";
    "ui.tour.next" => "Next chapter →", "下一章 →";
    "ui.tour.finish" => "Finish the tour", "结束导览";
    "ui.tour.end" => "Free play", "自由操作";
    "ui.tour.predict" => "Predict first — then the simulation shows what happens:", "先预测——然后模拟会显示实际发生了什么：";
    "ui.tour.right" => "Right.", "答对了。";
    "ui.tour.wrong" => "Not quite — the simulation shows: {answer}.", "不完全对——模拟显示：{answer}。";
    "ui.tour.unreached" => "The run did not reach this moment (changes by hand can take it another way). Reset the tour to see it.", "运行没有到达这一时刻（手动修改可能改变了它的走向）。重新开始导览即可看到。";

    "tour.dpub-heap.1.title" => "A message for later", "一条留到以后的消息";
    "tour.dpub-heap.1.text" => "The producer publishes order 0 with DPUB: deliver it in 5 s, not before. nsqd stores it and answers OK at once. The channel keeps it aside in its deferred min-heap, ordered by due time.",
        "生产者用 DPUB 发布 order 0：5 秒后再投递，不能提前。nsqd 立即保存并回复 OK。通道把它暂放在延迟最小堆里，按到期时间排序。";
    "tour.dpub-heap.2.title" => "Pushing into the heap", "压入堆中";
    "tour.dpub-heap.2.text" => "order 1 (due 3.15 s) goes into the first free slot, index 1, a child of the root, order 0 (due 5.1 s). In a min-heap every parent is due no later than its children.",
        "order 1（3.15 秒到期）放入第一个空位，下标 1，是堆顶 order 0（5.1 秒到期）的子节点。在最小堆里，每个父节点都不晚于它的子节点到期。";
    "tour.dpub-heap.2.q" => "Where will order 1 end up?", "order 1 最后会在哪里？";
    "tour.dpub-heap.2.a1" => "Where it was pushed, at index 1", "留在压入的位置，下标 1";
    "tour.dpub-heap.2.a2" => "At the root, index 0", "在堆顶，下标 0";
    "tour.dpub-heap.2.a3" => "At the end of the array", "在数组的末尾";
    "tour.dpub-heap.2.why" => "It is due sooner than its parent, so it sifts up: one swap, and it is the root.", "它比父节点更早到期，所以上浮：交换一次，它就成为堆顶。";
    "tour.dpub-heap.3.title" => "The root is always the next one due", "堆顶永远是下一个到期的";
    "tour.dpub-heap.3.text" => "All seven are in. Every parent is due no later than its children, so the message due first is always at the root, index 0.",
        "七条都进来了。每个父节点都不晚于它的子节点到期，所以最先到期的消息总在堆顶，下标 0。";
    "tour.dpub-heap.3.q" => "When is the first one delivered?", "第一条什么时候投递？";
    "tour.dpub-heap.3.a1" => "At 5.1 s, when order 0 is due", "5.1 秒，order 0 到期时";
    "tour.dpub-heap.3.a2" => "At 1.25 s, the root's due time", "1.25 秒，堆顶的到期时间";
    "tour.dpub-heap.3.a3" => "At the first 100 ms scan after 1.25 s", "1.25 秒之后的第一次 100 ms 扫描";
    "tour.dpub-heap.3.why" => "The root's timer fires at 1.25 s, exactly when order 3 is due, and it is sent at once.", "堆顶的定时器在 1.25 秒触发，正是 order 3 到期的时刻，它立即被发送。";
    "tour.dpub-heap.4.title" => "Popping the root", "弹出堆顶";
    "tour.dpub-heap.4.text" => "order 3 leaves the root. The root is a hole now, and the heap has to repair itself without looking at every entry.",
        "order 3 离开堆顶。堆顶现在是一个空位，堆需要在不检查所有元素的情况下修复自己。";
    "tour.dpub-heap.4.q" => "Which entry fills the hole?", "哪个元素填进空位？";
    "tour.dpub-heap.4.a1" => "The last entry of the array", "数组的最后一个元素";
    "tour.dpub-heap.4.a2" => "The root's sooner child", "堆顶较早到期的子节点";
    "tour.dpub-heap.4.a3" => "None: the heap shrinks from the top", "没有：堆从顶部收缩";
    "tour.dpub-heap.4.why" => "The last entry moves into the hole (the array stays packed), then sifts down to its place.", "最后一个元素移到空位（数组保持紧凑），然后下沉到它的位置。";
    "tour.dpub-heap.5.title" => "Sift down", "下沉";
    "tour.dpub-heap.5.text" => "The moved entry is due later than a child, so it swaps with the sooner child, level by level, until no child is due sooner. A pop takes at most one swap per level: log₂(n).",
        "移上来的元素比某个子节点晚到期，所以它与更早的子节点交换，一层一层往下，直到没有子节点比它早。一次出堆每层最多交换一次：log₂(n) 次。";
    "tour.dpub-heap.6.title" => "What if the consumer crashes?", "如果消费者崩溃了？";
    "tour.dpub-heap.6.text" => "The tour has just crashed billing worker: it stops answering, and still holds messages in flight.", "导览刚刚让计费进程 崩溃了：它不再回复，手上还有在途的消息。";
    "tour.dpub-heap.6.q" => "What happens to a message it holds?", "它手上的消息会怎样？";
    "tour.dpub-heap.6.a1" => "It is lost with the consumer", "它和这个消费者一起丢失，不再回来";
    "tour.dpub-heap.6.a2" => "After msg_timeout (5 s), sent again", "msg_timeout（5 秒）后再次发送";
    "tour.dpub-heap.6.a3" => "nsqd moves it over to another channel", "nsqd 把它移到另一个通道去";
    "tour.dpub-heap.6.why" => "An unanswered message stays in flight until its deadline, then the channel takes it back: delivery is at least once, never lost. Here it goes to the same worker again: still connected and with room (RDY), it looks healthy to the channel, so it will time out again until it disconnects.", "没有回复的消息一直在途直到截止时间，然后通道把它收回：投递至少一次，不会丢失。这里它又被发给同一个进程：它仍然连着、还有空位（RDY），在通道看来一切正常，所以会再次超时，直到它断开连接。";

    "tour.fan-out.1.title" => "One topic, two channels", "一个主题，两个通道";
    "tour.fan-out.1.text" => "Topic orders has two channels, billing and shipping: one for each kind of consumer. A channel is the topic's stream, copied for its consumers.",
        "主题 orders 有两个通道：billing 和 shipping，每类消费者一个。通道就是为它的消费者复制的一份主题消息流。";
    "tour.fan-out.2.title" => "A message arrives", "一条消息到来";
    "tour.fan-out.2.text" => "order 0 is published to orders.", "order 0 被发布到 orders。";
    "tour.fan-out.2.q" => "How many copies of order 0 will be delivered?", "order 0 会被投递几份？";
    "tour.fan-out.2.a1" => "Two: one for each channel", "两份：每个通道一份";
    "tour.fan-out.2.a2" => "One: the faster consumer takes it", "一份：更快的消费者拿走";
    "tour.fan-out.2.a3" => "None until both consumers are ready", "在两个消费者都就绪之前一份也没有";
    "tour.fan-out.2.why" => "The topic copies every message to each of its channels: billing and shipping each get their own.", "主题把每条消息复制到每个通道：billing 和 shipping 各得一份。";
    "tour.fan-out.3.title" => "Each at its own pace", "各按各的节奏";
    "tour.fan-out.3.text" => "Each channel delivers and forgets its copy on its own: a FIN in billing does nothing to shipping's copy.", "每个通道独立投递和删除自己的副本：billing 里的 FIN 不影响 shipping 的副本。";
    "tour.fan-out.4.title" => "Fan-out", "扇出";
    "tour.fan-out.4.text" => "Every order was finished twice, once per channel. Consumers of different channels never compete; consumers of the same channel share its messages (see load-balancing).",
        "每个订单都被完成了两次，每个通道一次。不同通道的消费者从不竞争；同一个通道的消费者分摊它的消息（见“按 RDY 负载均衡”）。";

    "tour.load-balance.1.title" => "Three consumers, one channel", "三个消费者，一个通道";
    "tour.load-balance.1.text" => "Three workers subscribe to the same channel and say with RDY how many messages each can hold at once: 1, 2 and 4.", "三个进程 订阅同一个通道，并用 RDY 说明各自同时能处理多少条消息：1、2 和 4。";
    "tour.load-balance.2.title" => "In turn, with room", "轮流，且要有空位";
    "tour.load-balance.2.text" => "The channel hands each message to the next consumer that has room (fewer in flight than its RDY), in turn.", "通道把每条消息依次交给下一个有空位（在途数少于 RDY）的消费者。";
    "tour.load-balance.3.title" => "Who does the most?", "谁做得最多？";
    "tour.load-balance.3.text" => "The slow worker takes 1.5 s per job with RDY 1; the fast one 0.3 s with RDY 4.", "慢进程 每个任务 1.5 秒，RDY 1；快进程 每个 0.3 秒，RDY 4。";
    "tour.load-balance.3.q" => "Which worker will have finished the most jobs?", "哪个进程 完成的任务最多？";
    "tour.load-balance.3.a1" => "slow worker", "慢进程";
    "tour.load-balance.3.a2" => "medium worker", "中速进程";
    "tour.load-balance.3.a3" => "fast worker", "快进程";
    "tour.load-balance.3.why" => "A fast consumer answers sooner, so it has room again sooner, and RDY 4 lets it hold more at once.", "快的消费者回复得更早，所以更早有空位，而 RDY 4 让它同时拿更多。";
    "tour.load-balance.4.title" => "Load-balancing by RDY", "按 RDY 负载均衡";
    "tour.load-balance.4.text" => "No one assigns work: each consumer's RDY and speed decide how much it gets. A consumer that slows down gets less.", "没有人分配工作：每个消费者的 RDY 和速度决定它拿到多少。变慢的消费者拿得更少。";

    "tour.crash-timeout.1.title" => "In flight", "在途";
    "tour.crash-timeout.1.text" => "payment 7 goes to worker A. It is now in flight: worker A must answer within its msg_timeout, 3 s here.", "payment 7 发给了消费者 A，现在处于在途状态：A 必须在它的 msg_timeout（这里是 3 秒）内回复。";
    "tour.crash-timeout.2.title" => "A crash", "崩溃";
    "tour.crash-timeout.2.text" => "worker A has crashed: it will never answer. worker B is ready (RDY 1), but the message is not in the queue: it is in flight to A.", "消费者 A 崩溃了：它永远不会回复。消费者 B 已经就绪（RDY 1），但消息不在队列里：它还在 A 那里在途。";
    "tour.crash-timeout.2.q" => "What happens to payment 7?", "payment 7 会怎样？";
    "tour.crash-timeout.2.a1" => "Back to the queue once msg_timeout passes", "msg_timeout 过后回到队列";
    "tour.crash-timeout.2.a2" => "It is lost together with worker A", "它和消费者 A 一起丢失";
    "tour.crash-timeout.2.a3" => "nsqd hands it at once to worker B, who is ready", "nsqd 立即把它交给已经就绪的消费者 B";
    "tour.crash-timeout.2.why" => "nsqd cannot know A crashed; it waits for the deadline, then takes the message back.", "nsqd 无法知道 A 崩溃了；它等到截止时间，然后收回消息。";
    "tour.crash-timeout.3.title" => "Attempt 2", "第 2 次尝试";
    "tour.crash-timeout.3.text" => "Back in the queue, payment 7 goes to worker B, with attempts 2: the consumer can tell it was tried before.", "回到队列后，payment 7 发给了 B，attempts 为 2：消费者能知道它之前被尝试过。";
    "tour.crash-timeout.4.title" => "At least once", "至少一次";
    "tour.crash-timeout.4.text" => "worker B finished it. A message can be delivered more than once, but is not lost: consumers should be able to handle a message twice.", "消费者 B 完成了它。消息可能被投递不止一次，但不会丢失：消费者应该能处理重复的消息。";

    "tour.req-backoff.1.title" => "A failure, retried later", "失败，稍后重试";
    "tour.req-backoff.1.text" => "The flaky mailer could not send an email. It answers REQ with a delay that grows with each attempt: 0.8 s × attempts.", "不稳定的邮件服务没能发出一封邮件。它回复 REQ，延迟随每次尝试增长：0.8 秒 × attempts。";
    "tour.req-backoff.1.q" => "Where does the requeued email wait?", "重新入队的邮件在哪里等待？";
    "tour.req-backoff.1.a1" => "First in line at the head of the memory queue", "排在内存队列的最前面，第一个发出";
    "tour.req-backoff.1.a2" => "In the deferred heap, until its retry", "在延迟堆里，等到重试时间";
    "tour.req-backoff.1.a3" => "Nowhere: nsqd drops it for now", "哪里也不等：nsqd 先把它丢掉";
    "tour.req-backoff.1.why" => "A REQ with a delay is a message for later, like a DPUB: it waits in the deferred heap.", "带延迟的 REQ 就像 DPUB 一样是留到以后的消息：它在延迟堆里等待。";
    "tour.req-backoff.2.title" => "Backoff", "退避";
    "tour.req-backoff.2.text" => "Each retry comes later than the last: a message that keeps failing does not hammer the consumer.", "每次重试都比上一次更晚：一直失败的消息不会反复冲击消费者。";
    "tour.req-backoff.3.title" => "Finished in the end", "最终完成";
    "tour.req-backoff.3.text" => "Every email was sent in the end. Attempts counts the tries; a real consumer would give up after too many.", "每封邮件最终都发出去了。attempts 记录尝试次数；真实的消费者尝试太多次后会放弃。";

    "tour.overflow-disk.1.title" => "The memory queue", "内存队列";
    "tour.overflow-disk.1.text" => "The channel has no consumer yet. Its memory queue holds --mem-queue-size messages: 4 here.", "通道还没有消费者。它的内存队列最多保存 --mem-queue-size 条消息：这里是 4 条。";
    "tour.overflow-disk.2.title" => "Full", "满了";
    "tour.overflow-disk.2.text" => "event 4 arrives and the memory queue holds 4 of 4.", "event 4 到来，内存队列已有 4/4 条。";
    "tour.overflow-disk.2.q" => "Where does event 4 go?", "event 4 去哪里？";
    "tour.overflow-disk.2.a1" => "nsqd drops it for lack of room", "nsqd 因为没有空位而丢弃它";
    "tour.overflow-disk.2.a2" => "nsqd refuses the publish with an error", "nsqd 拒绝这次发布并返回错误";
    "tour.overflow-disk.2.a3" => "It is written to the disk backlog", "它被写入磁盘积压";
    "tour.overflow-disk.2.why" => "Past --mem-queue-size, messages go to disk (nsqd's backend); only ephemeral channels drop them.", "超过 --mem-queue-size 的消息写到磁盘（nsqd 的 backend）；只有临时通道才会丢弃。";
    "tour.overflow-disk.3.title" => "A consumer arrives", "消费者到来";
    "tour.overflow-disk.3.text" => "The archiver subscribes, with 4 messages in memory and 6 on disk.", "归档器订阅了，这时内存里有 4 条，磁盘上有 6 条。";
    "tour.overflow-disk.3.q" => "In which order does nsqlab deliver them?", "nsqlab 按什么顺序投递它们？";
    "tour.overflow-disk.3.a1" => "Memory first, then disk: publish order", "先内存后磁盘：即发布的顺序";
    "tour.overflow-disk.3.a2" => "The newest first, then back to the oldest", "最新的先，然后再回到最旧的";
    "tour.overflow-disk.3.a3" => "A random mix of memory and disk", "内存和磁盘随机交错";
    "tour.overflow-disk.3.why" => "nsqlab keeps the order they were published in (memory, then disk). nsqd v1.3 would not: its pump picks from memory and disk at random.", "nsqlab 保持发布的顺序（先内存后磁盘）。nsqd v1.3 不会：它的 pump 在内存和磁盘之间随机选取。";

    "tour.big-heap.1.title" => "Ten thousand waiting", "一万条在等待";
    "tour.big-heap.1.text" => "Ten thousand DPUBs are in the heap, due 5 to 25 s from now.", "一万个 DPUB 在堆里，5 到 25 秒后到期。";
    "tour.big-heap.1.q" => "Why can one push or pop among 10 000 take only about 13 swaps?", "为什么在一万个元素中，一次入堆或出堆只需要大约 13 次交换？";
    "tour.big-heap.1.a1" => "The heap keeps only its first entries sorted", "堆只让前面的少数几个元素保持有序";
    "tour.big-heap.1.a2" => "nsqlab moves the entries in batches of 13", "nsqlab 每次成批移动 13 个元素";
    "tour.big-heap.1.a3" => "Each swap climbs one level; 10 000 make 14", "每次交换上移一层；一万个只有 14 层";
    "tour.big-heap.1.why" => "The heap is a complete binary tree: 10 000 entries make 14 levels (log₂ 10 000 ≈ 13.3), and a swap moves one level.", "堆是一棵完全二叉树：一万个元素有 14 层（log₂ 10000 ≈ 13.3），每次交换移动一层。";
    "tour.big-heap.2.title" => "The first one due", "第一个到期的";
    "tour.big-heap.2.text" => "The root's timer fires exactly when the first message is due, however many wait behind it.", "堆顶的定时器在第一条消息到期时准时触发，不管后面等着多少条。";
    "tour.big-heap.3.title" => "All on time", "全部准时";
    "tour.big-heap.3.text" => "All 10 000 were delivered, each at its due time: 0 ms late.", "一万条全部投递，每条都在到期时刻：晚 0 ms。";

    "tour.crash-restart.1.title" => "Written before OK", "先写盘再回复 OK";
    "tour.crash-restart.1.text" => "A ledger service takes payments two at a time (RDY 2). The memory queue holds 4 (--mem-queue-size); the rest wait on disk; three refunds are deferred. nsqlab writes each message to its store before it answers OK.",
        "账本服务每次处理两笔付款（RDY 2）。内存队列最多 4 条（--mem-queue-size），其余在磁盘上等待；三笔退款是延迟消息。nsqlab 在回复 OK 之前先把每条消息写入存储。";
    "tour.crash-restart.2.title" => "kill -9", "kill -9：强制杀掉";
    "tour.crash-restart.2.text" => "The broker is about to be killed. Three refunds are deferred until 2.7 s, 3.3 s and 3.9 s, and two payments are in flight to the ledger service.", "消息服务器即将被杀掉。三笔退款被延迟到 2.7 秒、3.3 秒和 3.9 秒，还有两笔付款正在账本服务那里在途。";
    "tour.crash-restart.2.q" => "Where are the refunds after the restart?", "重启之后退款在哪里？";
    "tour.crash-restart.2.a1" => "Delivered at once, all three", "立即投递，三笔都是";
    "tour.crash-restart.2.a2" => "Back in the heap, same due times", "回到堆里，到期时间不变";
    "tour.crash-restart.2.a3" => "Lost with the broker's memory", "随消息服务器的内存丢失";
    "tour.crash-restart.2.why" => "The store keeps each deferred message's due time, so none comes early (nsqd v1.3 would deliver them at once after a clean restart, and lose them in a crash).", "存储保留了每条延迟消息的到期时间，所以不会提前（nsqd v1.3 正常重启后会立即投递它们，崩溃则会丢失它们）。";
    "tour.crash-restart.3.title" => "Delivered again", "再次投递";
    "tour.crash-restart.3.text" => "The two payments in flight at the crash were never finished, so the store still had them: they come back to the queue and are delivered again (at least once). They were stored before their first delivery, so they count as attempt 1 again.", "崩溃时在途的两笔付款从未被完成，所以存储里还有它们：它们回到队列并被再次投递（至少一次）。它们是在第一次投递之前存下的，所以又算作第 1 次尝试。";
    "tour.crash-restart.4.title" => "Nothing acknowledged is lost", "确认过的消息一条不丢";
    "tour.crash-restart.4.text" => "Every payment and refund was finished, and no refund came early.", "每笔付款和退款都完成了，没有退款提前。";
    "tour.cluster.1.title" => "Consumers find nsqd through nsqlookupd", "消费者通过 nsqlookupd 找到 nsqd";
    "tour.cluster.1.text" => "Each nsqd told both nsqlookupd who it is, then registered topic orders as soon as it had it. The ledger service did not know any nsqd: it asked lookupd-1, which listed only nsqd-1 (the others had no orders yet), and connected there.",
        "每个 nsqd 都告诉两个 nsqlookupd 自己是谁，一有主题 orders 就立刻注册。账本服务不认识任何 nsqd：它询问 lookupd-1，后者只列出了 nsqd-1（其他节点还没有 orders），于是它连接到那里。";
    "tour.cluster.2.title" => "New nodes for the topic", "主题有了新节点";
    "tour.cluster.2.text" => "Now nsqd-2 and nsqd-3 have orders too (the producer spreads them over the nodes), and there messages wait for a channel.", "现在 nsqd-2 和 nsqd-3 也有了 orders（生产者把订单分到各个节点），消息在那里等待通道。";
    "tour.cluster.2.q" => "How does the ledger service start reading from nsqd-2 and nsqd-3?", "账本服务怎样开始从 nsqd-2 和 nsqd-3 读取？";
    "tour.cluster.2.a1" => "nsqd-2 and nsqd-3 connect to it themselves", "nsqd-2 和 nsqd-3 主动连接它";
    "tour.cluster.2.a2" => "It never does: it keeps its first node", "永远不会：它只连第一个节点";
    "tour.cluster.2.a3" => "Its next lookup lists them; it connects", "下一次查询列出了它们，它就去连接";
    "tour.cluster.2.why" => "Consumers poll nsqlookupd (every few seconds here, every minute by default) and connect to every node that has the topic; nsqd never connects to consumers.", "消费者定期轮询 nsqlookupd（这里每几秒一次，默认每分钟一次），连接每个拥有该主题的节点；nsqd 从不主动连接消费者。";
    "tour.cluster.3.title" => "A node goes down", "一个节点宕机";
    "tour.cluster.3.text" => "The ledger service reads from all three nodes. At 4 s nsqd-3 goes down.", "账本服务从三个节点读取。4 秒时 nsqd-3 宕机。";
    "tour.cluster.3.q" => "What happens to the ledger service?", "账本服务会怎样？";
    "tour.cluster.3.a1" => "It keeps reading from nsqd-1 and nsqd-2", "它继续从 nsqd-1 和 nsqd-2 读取";
    "tour.cluster.3.a2" => "It stops: its lookup is broken now", "它停下了：它的查询已经坏掉了";
    "tour.cluster.3.a3" => "It moves to a standby copy of nsqd-3", "它转去连接 nsqd-3 的备用副本";
    "tour.cluster.3.why" => "Each connection is separate: losing one leaves the others. nsqd has no replicas; what was in nsqd-3's memory is gone with it, and the lookupds forget it.", "每个连接都是独立的：丢了一个，其他的还在。nsqd 没有副本；nsqd-3 内存里的东西随之丢失，lookupd 也会忘记它。";
    "tour.cluster.4.title" => "A tombstone", "墓碑";
    "tour.cluster.4.text" => "At 9 s an operator tombstones topic orders on nsqd-2, to take it out of service; at 10 s an auditor starts.", "9 秒时运维人员在 nsqd-2 上给主题 orders 立墓碑，让它退出服务；10 秒时一个审计服务启动。";
    "tour.cluster.4.q" => "Where does the auditor connect?", "审计服务连接到哪里？";
    "tour.cluster.4.a1" => "To nsqd-1 and nsqd-2, like the ledger", "连接 nsqd-1 和 nsqd-2，和账本服务一样";
    "tour.cluster.4.a2" => "To nsqd-1 only, of the three nodes", "三个节点中只连接 nsqd-1";
    "tour.cluster.4.a3" => "Nowhere: the tombstone deleted the topic", "哪里也不连：墓碑删除了主题";
    "tour.cluster.4.why" => "A tombstoned node is left out of lookups, so new consumers do not find it there; consumers already connected (the ledger) keep reading from it until it drains.", "立了墓碑的节点不会出现在查询结果里，所以新消费者在那里找不到它；已经连接的消费者（账本服务）继续从它读取，直到它被读空。";
    "tour.cluster.5.title" => "A new channel starts empty", "新通道从空开始";
    "tour.cluster.5.text" => "The auditor's channel began when it subscribed: it got only the orders published from then on, while the ledger got them all.", "审计服务的通道在它订阅时才开始：它只收到从那时起发布的订单，而账本服务收到了全部。";
    "tour.scan-vs-exact.1.title" => "Two ways to find what is due", "找到到期消息的两种方法";
    "tour.scan-vs-exact.1.text" => "The same 20 DPUBs in two brokers: on the left nsqlab, with a timer per channel; on the right nsqd's way, a loop that scans a random sample of channels every 100 ms.", "两个消息服务器 里是同样的 20 个 DPUB：左边是 nsqlab，每个通道一个定时器；右边是 nsqd 的做法，每 100 ms 扫描随机抽取的一部分通道。";
    "tour.scan-vs-exact.2.title" => "Due at 0.237 s", "0.237 秒到期";
    "tour.scan-vs-exact.2.text" => "t0 is due at 0.237 s.", "t0 在 0.237 秒到期。";
    "tour.scan-vs-exact.2.q" => "When does each broker deliver t0?", "两个消息服务器 分别在什么时候投递 t0？";
    "tour.scan-vs-exact.2.a1" => "Both at 0.237 s, when it is due", "两者都在 0.237 秒，也就是到期之时";
    "tour.scan-vs-exact.2.a2" => "nsqlab at 0.237 s; nsqd at 0.3 s or later", "nsqlab 0.237 秒；nsqd 0.3 秒或更晚";
    "tour.scan-vs-exact.2.a3" => "nsqd first: its scan looks ahead", "nsqd 先投递：它的扫描会提前查看";
    "tour.scan-vs-exact.2.why" => "A scan loop only notices a due message when it next looks at its channel.", "扫描循环只有在下一次查看那个通道时才会发现到期的消息。";
    "tour.scan-vs-exact.3.title" => "The cost of scanning", "扫描的代价";
    "tour.scan-vs-exact.3.text" => "The chart below the two brokers shows each message's lateness: 0 ms on the left, up to a scan period (or more) on the right.", "两个消息服务器 下面的图表显示每条消息晚了多少：左边 0 ms，右边最多一个扫描周期（或更多）。";

    // ---------------------------------------------------------------- a crash
    "crash.killed" => "kill -9: the broker dies mid-stream, and its memory with it: {memory} ready, {flight} in flight and {deferred} deferred were there ({disk} more ready on disk). Its clients lose their connections. Everything it answered OK to was written to its store first, so the drawing now shows the store on disk: that is all that is left.",
        "kill -9：消息服务器在运行中途被杀掉，内存随之消失：那里有 {memory} 条待发送、{flight} 条在途、{deferred} 条延迟（磁盘上另有 {disk} 条待发送）。客户端都断开了连接。它回复过 OK 的每条消息都已先写入存储，所以图中现在显示的是磁盘上的存储：剩下的只有这些。";
    "crash.consumer" => "{who} crashes: its process hangs and will never answer, but its connection stays open.",
        "{who} 崩溃了：它的进程卡住，永远不会回复，但连接仍然开着。";
    "crash.replayed" => "It starts again and replays its store: each message comes back where it belongs — ready ones to the queue, deferred ones to the heap with their due time, those in flight to the queue (to be delivered again).",
        "它重新启动并重放存储：每条消息回到它该在的地方——待发送的回到队列，延迟的带着原来的到期时间回到堆里，在途的回到队列（将被再次投递）。";
    "crash.title" => "What survived the crash", "崩溃之后还剩下什么";
    "crash.kind" => "at the crash", "崩溃时";
    "crash.nsqlab" => "nsqlab (durable), after the restart", "nsqlab（持久化），重启后";
    "crash.nsqd.kill" => "nsqd v1.3 after kill -9", "nsqd v1.3，kill -9 之后";
    "crash.nsqd.clean" => "nsqd v1.3 after a clean restart", "nsqd v1.3，正常重启之后";
    "crash.row.memory" => "ready, in memory: {n}", "待发送，在内存中：{n}";
    "crash.row.disk" => "ready, on disk: {n}", "待发送，在磁盘上：{n}";
    "crash.row.flight" => "in flight: {n}", "在途：{n}";
    "crash.row.deferred" => "deferred: {n}", "延迟：{n}";
    "crash.back" => "back", "恢复";
    "crash.again" => "delivered again", "再次投递";
    "crash.on-time" => "back, due at their time", "恢复，按原到期时间";
    "crash.lost" => "lost", "丢失";
    "crash.synced" => "back if synced (nsqd syncs its disk queue every 2500 messages or 2 s)", "如果已同步则恢复（nsqd 每 2500 条消息或每 2 秒同步一次磁盘队列）";
    "crash.early" => "back, but delivered at once: early", "恢复，但立即投递：提前了";
    "crash.note" => "nsqd keeps its memory queue, in-flight and deferred messages in memory only: a crash loses them. On a clean shutdown it writes them to disk, but deferred ones without their due time.",
        "nsqd 只在内存中保存内存队列、在途消息和延迟消息：崩溃会丢失它们。正常关闭时它会把它们写入磁盘，但延迟消息不带到期时间。";

    // ---------------------------------------------------------------- a cluster
    "name.auditor" => "auditor", "审计服务";
    "cl.identify" => "{node} starts and connects to both nsqlookupd: it sends the magic \"  V1\" and IDENTIFY (its address and ports).",
        "{node} 启动并连接两个 nsqlookupd：它发送魔数 \"  V1\" 和 IDENTIFY（它的地址和端口）。";
    "cl.register" => "{node} now has {what}: it sends REGISTER to both nsqlookupd.", "{node} 现在有了 {what}：它向两个 nsqlookupd 发送 REGISTER。";
    "cl.unregister" => "{node} no longer has {what}: it sends UNREGISTER to both nsqlookupd.", "{node} 不再有 {what}：它向两个 nsqlookupd 发送 UNREGISTER。";
    "cl.down" => "{node} goes down: its connections close, and the nsqlookupd that are up forget it and everything it registered. Messages in its memory (waiting in the topic, queued or in flight): {n}, gone with it; nsqd keeps no copy elsewhere.",
        "{node} 宕机：它的连接都断了，正在运行的 nsqlookupd 都忘记了它和它注册过的一切。它内存里的消息（在主题里等待的、排队的或在途的）：{n} 条，随之丢失；nsqd 不在别处保留副本。";
    "cl.dropped" => "{who} loses its connection to {node}; it keeps reading from {left}.", "{who} 失去了与 {node} 的连接；它继续从 {left} 读取。";
    "cl.tombstone.down" => "An operator would tombstone topic orders on {node} now, but {node} is down: no nsqlookupd lists it, so there is nothing to tombstone.", "运维人员本打算此时在 {node} 上给主题 orders 立墓碑，但 {node} 已宕机：没有 nsqlookupd 列出它，所以没有什么可立墓碑的。";
    "cl.tombstone" => "An operator tombstones topic orders on {node} (POST /topic/tombstone on each nsqlookupd): consumers looking it up no longer find it there, while {node} keeps serving those already connected. The producer moves off it too.",
        "运维人员在 {node} 上给主题 orders 立墓碑（在每个 nsqlookupd 上 POST /topic/tombstone）：查询它的消费者不会再在那里找到它，而 {node} 继续为已经连接的消费者服务。生产者也不再向它发布。";
    "cl.lookup" => "{who} asks {finder} where topic orders is (GET /lookup?topic=orders): {nodes}.", "{who} 询问 {finder} 主题 orders 在哪里（GET /lookup?topic=orders）：{nodes}。";
    "cl.up" => "{node} is started again, empty: what it held went down with it. It connects to each nsqlookupd that is up and identifies itself; it registers topic orders once the producer publishes to it, and consumers then find it at their next lookup.", "{node} 重新启动，是空的：它原来拿着的消息随它一起没了。它连接每个正在运行的 nsqlookupd 并表明身份；生产者向它发布后它才注册主题 orders，消费者在下一次查询时就会找到它。";
    "cl.finder.off" => "{finder} is switched off: everything it knew (which nsqd has which topic, the tombstones) is gone. The nsqd keep their messages and their consumers keep reading; only a new lookup there gets no answer.", "{finder} 被关闭：它知道的一切（哪个 nsqd 有哪个主题、墓碑）都没了。各个 nsqd 仍保有消息，它们的消费者继续读取；只是在那里的新查询得不到回答。";
    "cl.finder.on" => "{finder} is switched on, empty. The nsqd that are up ({nodes}) connect to it again and register every topic and channel they have, as nsqd does whenever it reconnects to an nsqlookupd: it can answer lookups again.", "{finder} 被打开，是空的。正在运行的 nsqd（{nodes}）重新连接它，并注册自己拥有的每个主题和通道——nsqd 每次重新连接 nsqlookupd 都会这样做：它又能回答查询了。";
    "cl.lookup.off" => "{who} asks {finder} where topic orders is, but {finder} is off: no answer. It keeps the connections it has and asks the other nsqlookupd next time.", "{who} 询问 {finder} 主题 orders 在哪里，但 {finder} 已关闭：没有回答。它保留已有的连接，下次询问另一个 nsqlookupd。";
    "cl.publish.none" => "The producer has {label} to publish, but no nsqd takes it (none is up, or those up have the topic tombstoned): the publish fails, and nothing is stored anywhere.", "生产者要发布 {label}，但没有 nsqd 接收它（没有正在运行的，或者正在运行的主题已被立墓碑）：发布失败，消息没有存到任何地方。";
    "cl.ui.hands" => "take the cluster in hand", "亲手操作集群";
    "cl.ui.off" => "switch {who} off", "关闭 {who}";
    "cl.ui.on" => "switch {who} on", "打开 {who}";
    "cl.ui.publish" => "publish an order", "发布一个订单";
    "cl.ui.add" => "add a ledger consumer", "添加一个账本消费者";
    "cl.ui.finder-off" => "off: answers nothing", "已关闭：不回答任何查询";
    "cl.lookup.none" => "{who} asks {finder} where topic orders is (GET /lookup?topic=orders): nowhere yet.", "{who} 询问 {finder} 主题 orders 在哪里（GET /lookup?topic=orders）：还没有。";
    "cl.connect" => "{who} connects to {node} and subscribes channel {channel} (SUB, RDY).", "{who} 连接到 {node} 并订阅通道 {channel}（SUB、RDY）。";
    "cl.published" => "The producer publishes {label} to {node} (it spreads messages over the nodes in turn).", "生产者把 {label} 发布到 {node}（它轮流把消息分给各个节点）。";
    "cl.sent" => "{node} sends {label} to {who} (channel {channel}).", "{node} 把 {label} 发给 {who}（通道 {channel}）。";
    "cl.ui.label" => "The cluster: two nsqlookupd at the top, three nsqd in the middle, the producer and the consumers at the bottom", "集群：上面是两个 nsqlookupd，中间是三个 nsqd，下面是生产者和消费者";
    "cl.ui.nothing" => "knows of no topic yet", "还不知道任何主题";
    "cl.ui.topic" => "topic {topic} is on:", "主题 {topic} 在：";
    "cl.ui.tombstoned" => "✝ {node} (tombstoned: not listed)", "✝ {node}（已立墓碑：不再列出）";
    "cl.ui.starting" => "starting", "启动中";
    "cl.ui.down" => "down", "已宕机";
    "cl.ui.no-topic" => "no topic yet", "还没有主题";
    "cl.ui.waiting" => "topic {topic}: {n} waiting for a channel", "主题 {topic}：{n} 条等待通道";
    "cl.ui.channel" => "{channel}: depth {depth}, in flight {flight}", "{channel}：深度 {depth}，在途 {flight}";
    "cl.ui.tomb" => "tombstoned in the lookupds", "已在 lookupd 中立墓碑";
    "cl.ui.published" => "published {n}", "已发布 {n} 条";
    "cl.ui.not-yet" => "not started yet", "尚未启动";
    "cl.ui.reader" => "channel {channel}: finished {fin}", "通道 {channel}：完成 {fin} 条";
    "cl.ui.reads-from" => "reads from: {nodes}", "读取自：{nodes}";
    "cl.ui.legend.registry" => "nsqd → nsqlookupd: IDENTIFY, REGISTER, PING", "nsqd 到 nsqlookupd 的连接：IDENTIFY、REGISTER、PING";
    "cl.ui.legend.publish" => "publish: PUB", "发布：PUB";
    "cl.ui.legend.subscribe" => "SUB: messages come back on it", "SUB：消息经它返回";
    "cl.ui.legend.lookup" => "a lookup: GET /lookup", "查询：GET /lookup";
    "cl.summary" => "Messages published: {n}; lost with a node that went down: {lost}.", "发布的消息：{n} 条；随宕机节点丢失：{lost} 条。";
    "cl.summary.reader" => "{who} (channel {channel}): finished {fin}; connected at the end to {nodes}.", "{who}（通道 {channel}）：完成 {fin} 条；最后连接到 {nodes}。";
    "cl.fin" => "{who} finishes {label} on {node} (FIN).", "{who} 在 {node} 上完成了 {label}（FIN）。";

    // ---------------------------------------------------------------- sharing
    "share.bad" => "This shared run cannot be replayed here (it is from another version, or damaged).", "这个分享的运行无法在这里重放（它来自另一个版本，或已损坏）。";
    "ui.share" => "share", "分享";
    "ui.share.title" => "a link that replays this run, with your changes, to this point", "一个链接：重放这次运行（包括你的修改），一直到这一步";
    "ui.share.copied" => "Link to this run at step {pos} (copied):", "这次运行在第 {pos} 步的链接（已复制）：";
    "ui.export" => "export", "导出";
    "ui.export.title" => "save this run as a file", "把这次运行保存为文件";
    "ui.import" => "import", "导入";
    "ui.import.title" => "open a run saved as a file", "打开保存为文件的运行";

    // ---------------------------------------------------------------- summary
    "summary.published" => "Messages published: {n}.", "发布的消息：{n} 条。";
    "summary.published.deferred" => "Messages published: {n}, of them with a delay (DPUB): {d}.",
        "发布的消息：{n} 条，其中带延迟的（DPUB）：{d} 条。";
    "summary.channel" => "Channel {topic}/{channel}: finished {fin}, requeued (REQ) {req}, timed out {timeout}, waiting {waiting}.",
        "通道 {topic}/{channel}：完成 {fin}，重新入队（REQ）{req}，超时 {timeout}，等待中 {waiting}。";
    "summary.consumer" => "{who}: received {received}, finished {fin}, requeued {req}, timed out {timeout}.",
        "{who}：收到 {received}，完成 {fin}，重新入队 {req}，超时 {timeout}。";
    "summary.consumer.gone" => "{who} (disconnected): received {received}, finished {fin}, requeued {req}, timed out {timeout}.",
        "{who}（已断开）：收到 {received}，完成 {fin}，重新入队 {req}，超时 {timeout}。";
    "summary.lateness" => "Deferred messages that came due: {n}; at most {max} late ({mean} on average).",
        "到期的延迟消息：{n} 条；最多晚 {max}（平均 {mean}）。";
    "stuck.nobody" => "Messages waiting in channel {topic}/{channel}: {n}; it has no consumer.",
        "通道 {topic}/{channel} 中有 {n} 条消息在等待：它没有消费者。";
    "stuck.notready" => "Messages waiting in channel {topic}/{channel}: {n}; none of its consumers is ready for more (RDY 0, or crashed).",
        "通道 {topic}/{channel} 中有 {n} 条消息在等待：它的消费者都不能再接收（RDY 0 或已崩溃）。";

    // ---------------------------------------------------------------- replication
    // (The scenario's own words, its tour's and its picture's come with its module, not in the
    // first load: web/raft/src/words.rs.)
    "scenario.replication.title" => "Replication with raft",
        "用 raft 复制";
    "scenario.replication.text" => "Three nsqd keep every message with raft (TiKV's raft crate, the server's own code, running here in a second module loaded for this scenario). A PUB is answered OK once a majority has it on disk; the leader is killed while the consumer works on #2.",
        "三个 nsqd 用 raft（TiKV 的 raft 库，即服务器自己的代码，在为这个场景加载的第二个模块里运行）保存每条消息。多数节点把 PUB 写入磁盘后才回复 OK；领导者在消费者处理 #2 时被杀掉。";
    "rp.loading" => "Loading the replication module (raft runs in a second WebAssembly file, loaded only for this scenario)…",
        "正在加载复制模块（raft 在第二个 WebAssembly 文件里运行，只为这个场景加载）……";
    "rp.failed" => "The replication module could not be loaded: {error}",
        "无法加载复制模块：{error}";
}
