//! The hand-off to durable storage, sans-IO.
//!
//! With [`Options::durable`](crate::Options::durable) on, the broker describes every change a
//! store must keep as a [`StoreOp`], given in order as
//! [`Output::Store`](crate::Output::Store) by [`Broker::poll_output`](crate::Broker::poll_output).
//! The core does no I/O: the host appends the ops to its files (one write per batch: group
//! commit) and, at the [`Output::Commit`](crate::Output::Commit) that follows them, reports
//! with [`Broker::handle_stored`](crate::Broker::handle_stored). Until then a publisher's `OK` (and
//! everything after it on that connection) is held back, so an acknowledged message is always
//! on disk; if the write fails the publisher gets nsqd's `E_PUB_FAILED` instead.
//!
//! # What a store must be able to rebuild
//! Each non-ephemeral topic has one ordered log of ops. Replaying it gives every message that
//! is still owed to someone:
//! - [`StoreOp::Publish`] with `held: true` is held by the topic (no channel, or paused) until
//!   a later [`StoreOp::Dispatched`] hands every held message to the channels, or
//!   [`StoreOp::TopicEmptied`] drops them.
//! - A dispatched message belongs to every channel whose `start` is at or below its ID (message
//!   IDs increase within a topic), minus the channels that [`StoreOp::Finished`] it.
//! - [`StoreOp::Requeued`] gives a channel's copy a new due time.
//!
//! At start, the host gives the survivors back through a [`Restore`] from
//! [`Broker::restore`]: [`Restore::topic`], [`Restore::channel`] and [`Restore::message`], then
//! [`Restore::finish`].
//!
//! # Copies
//! `copies` (on publish and dispatch) and `dropped` (on empty and delete) let a store count the
//! live copies of each message per file, so it can delete a file once nothing in it is owed.
//! Ephemeral channels do not count: their copies are never stored.
//!
//! [`Restore`]: crate::broker::Restore
//! [`Broker::restore`]: crate::Broker::restore
//! [`Restore::topic`]: crate::broker::Restore::topic
//! [`Restore::channel`]: crate::broker::Restore::channel
//! [`Restore::message`]: crate::broker::Restore::message
//! [`Restore::finish`]: crate::broker::Restore::finish

use crate::event::Name;
use crate::message::{Message, MessageId};
use crate::time::Time;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;

/// Numbers the publishes whose acknowledgement waits for the store (increasing from 1).
pub type Ticket = u64;

/// One change for durable storage. Apply in the order polled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOp {
    TopicCreated {
        topic: Name,
    },
    TopicDeleted {
        topic: Name,
    },
    TopicPaused {
        topic: Name,
        paused: bool,
    },
    /// The messages the topic was holding are gone.
    TopicEmptied {
        topic: Name,
        dropped: Vec<MessageId>,
    },
    /// A channel that receives every message with an ID at or above `start`.
    ChannelCreated {
        topic: Name,
        channel: Name,
        start: MessageId,
    },
    ChannelDeleted {
        topic: Name,
        channel: Name,
        dropped: Vec<MessageId>,
    },
    ChannelPaused {
        topic: Name,
        channel: Name,
        paused: bool,
    },
    /// The channel dropped its messages; from now on it receives IDs at or above `start`.
    ChannelEmptied {
        topic: Name,
        channel: Name,
        start: MessageId,
        dropped: Vec<MessageId>,
    },
    /// A message of a PUB, MPUB or DPUB (or HTTP `/pub`, `/mpub`; one op per message, all
    /// with the publish's ticket): acknowledge once written.
    Publish {
        ticket: Ticket,
        topic: Name,
        /// Held by the topic (no channel yet, or paused) rather than handed to channels.
        held: bool,
        /// Stored copies made: the non-ephemeral channels it went to, or 1 when held.
        copies: u32,
        /// DPUB's due time (absolute).
        due: Option<Time>,
        msg: Message,
    },
    /// Every message the topic held went to its channels (`copies` non-ephemeral ones).
    Dispatched {
        topic: Name,
        ids: Vec<MessageId>,
        copies: u32,
    },
    /// The channel is done with these messages (FIN, or dropped): a consumer's run of FINs
    /// is one op, its names once.
    Finished {
        topic: Name,
        channel: Name,
        ids: Vec<MessageId>,
    },
    /// REQ with a delay: the channel's copy is due again at `due`.
    Requeued {
        topic: Name,
        channel: Name,
        id: MessageId,
        due: Time,
    },
}

/// Why the store failed, as the host's own error (kept typed: [`StoreFailure::downcast_ref`]
/// gives it back). Its text is what nsqd's answers carry: `E_PUB_FAILED PUB failed <text>`
/// to a publisher, `NOK - <text>` on `/ping`.
#[derive(Clone)]
pub struct StoreFailure(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl StoreFailure {
    /// The host's error `e`.
    pub fn new(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreFailure(std::sync::Arc::new(e))
    }

    /// The host's error, if it is an `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.0.downcast_ref()
    }
}

/// A failure known only by its text (a simulated disk, a test).
#[derive(Debug)]
struct Reason(String);

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Reason {}

impl From<String> for StoreFailure {
    fn from(text: String) -> Self {
        StoreFailure::new(Reason(text))
    }
}

impl From<&str> for StoreFailure {
    fn from(text: &str) -> Self {
        text.to_string().into()
    }
}

impl std::fmt::Display for StoreFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Debug for StoreFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Equal when they say the same.
impl PartialEq for StoreFailure {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

/// A topic or channel came or went (for nsqlookupd: `REGISTER` / `UNREGISTER`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryChange {
    Register { topic: Name, channel: Option<Name> },
    Unregister { topic: Name, channel: Option<Name> },
}

/// Messages of one channel whose bodies were evicted (deferred ones coming due, a backlog
/// past `mem_queue_size`), in the order they are to be sent: the host reads the bodies from
/// storage and answers with [`Broker::handle_loaded`](crate::Broker::handle_loaded).
///
/// A consumer's loads come in runs of one channel's, so the names are here once per run, not
/// once per message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadRun {
    pub topic: Name,
    pub channel: Name,
    pub ids: Vec<MessageId>,
}

/// The answer to a [`LoadRun`] (or to part of one): each message's body, or why it could not
/// be read (`E`, the host's error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedRun<E> {
    pub topic: Name,
    pub channel: Name,
    pub bodies: Vec<(MessageId, Result<crate::Body, E>)>,
}

/// What the broker keeps per client while an acknowledgement waits for the store.
///
/// Each held acknowledgement waits for its own publish only: a client that publishes again
/// before the last one is stored (pipelining, as go-nsq's `PublishAsync` does) gets each
/// `OK` once its publish is stored, not once the store has caught up with all of them.
#[derive(Debug, Clone)]
pub(crate) struct Hold {
    /// Output is held until this ticket (the last held publish's) is stored.
    pub until: Ticket,
    /// The first held publish's ticket: what precedes `at` waits for nothing.
    pub first: Ticket,
    /// Where in the client's pending output the first held response starts.
    pub at: usize,
    /// The first held command (`PUB`, `MPUB`, `DPUB`), for its error if the write fails.
    pub cmd: &'static str,
    /// The held responses after the first, in order: each one's ticket, where it starts in
    /// the pending output, and its command.
    pub later: std::collections::VecDeque<(Ticket, usize, &'static str)>,
}

impl Hold {
    pub(crate) fn new(ticket: Ticket, at: usize, cmd: &'static str) -> Hold {
        Hold {
            until: ticket,
            first: ticket,
            at,
            cmd,
            later: std::collections::VecDeque::new(),
        }
    }

    /// Everything is stored through `through` but not the last held publish: how many bytes
    /// of the pending output may go (those before the first response still waiting), with
    /// the hold moved on to that response. `None`: the first held response still waits.
    pub(crate) fn release(&mut self, through: Ticket) -> Option<usize> {
        if self.first > through {
            return None;
        }
        while let Some((ticket, at, cmd)) = self.later.pop_front() {
            if ticket > through {
                self.first = ticket;
                self.cmd = cmd;
                self.at = 0;
                for l in &mut self.later {
                    l.1 -= at;
                }
                return Some(at);
            }
        }
        // Only when `until <= through`, which the caller handles whole.
        None
    }
}

/// A channel as [`Replay`] rebuilds it.
#[derive(Debug, Clone, Default)]
pub struct ReplayChannel {
    /// It receives dispatched messages with IDs at or above this.
    pub start: MessageId,
    pub paused: bool,
    finished: FxHashSet<MessageId>,
    requeued: FxHashMap<MessageId, Time>,
}

#[derive(Debug, Clone)]
struct ReplayMessage {
    msg: Message,
    due: Option<Time>,
    /// Held by the topic (not yet dispatched, not dropped).
    held: bool,
    /// Dropped while held (the topic was emptied).
    dropped: bool,
    /// Forgotten (nothing owes it: see [`Replay::forget_finished`]); removed in bulk.
    gone: bool,
}

/// A topic as [`Replay`] rebuilds it.
#[derive(Debug, Clone, Default)]
pub struct ReplayTopic {
    pub paused: bool,
    pub channels: BTreeMap<Name, ReplayChannel>,
    /// In ID order: a log gives a topic's messages in the order their IDs were handed out,
    /// so each goes at the end (a tree cost half as much again per message, and a restart
    /// holds every owed one at once).
    messages: Vec<ReplayMessage>,
    /// How many of `messages` are `gone`.
    gone: usize,
    /// The bodies of the messages not `gone`, and 64 bytes each besides.
    bytes: u64,
}

impl ReplayTopic {
    /// Messages kept (owed, or the topic's last; see [`Replay::forget_finished`]).
    pub fn kept(&self) -> usize {
        self.messages.len() - self.gone
    }

    fn position(&self, id: MessageId) -> Result<usize, usize> {
        // Most lookups are of the newest: the one before a message just published (which
        // may be forgotten now that it is not the last).
        let n = self.messages.len();
        if n >= 2 && self.messages[n - 2].msg.id == id {
            return Ok(n - 2);
        }
        self.messages.binary_search_by_key(&id, |m| m.msg.id)
    }

    /// Add a message, or replace the one with its ID.
    fn insert(&mut self, m: ReplayMessage) {
        self.bytes += weight(&m);
        match self.messages.last() {
            Some(last) if last.msg.id >= m.msg.id => match self.position(m.msg.id) {
                Ok(i) => {
                    if self.messages[i].gone {
                        self.gone -= 1;
                    } else {
                        self.bytes -= weight(&self.messages[i]);
                    }
                    self.messages[i] = m
                }
                Err(i) => self.messages.insert(i, m),
            },
            _ => self.messages.push(m),
        }
    }
}

/// What a kept message counts for in [`Replay::kept_bytes`].
fn weight(m: &ReplayMessage) -> u64 {
    m.msg.body.len() as u64 + 64
}

/// What a message owes, as [`Replay::survivors`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Survivor<'a> {
    pub topic: &'a Name,
    /// `None`: held by the topic.
    pub channel: Option<&'a Name>,
    pub msg: &'a Message,
    pub due: Option<Time>,
}

/// Rebuilds what is owed from a stream of [`StoreOp`]s: the recovery rules of this module in
/// one place, for any store (files on a server, memory in a test or the visualiser).
///
/// The result depends only on the ops' effect, not on how metadata ops interleave with message
/// ops, so a store may keep metadata as a snapshot and messages as a log.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    pub topics: BTreeMap<Name, ReplayTopic>,
    /// Forget a message once no one owes it (see [`Replay::forget_finished`]).
    forget_finished: bool,
}

impl Replay {
    pub fn new() -> Self {
        Self::default()
    }

    /// From now on, a message that nothing owes any more (finished by every channel that
    /// had it, or dropped) is forgotten, its body with it — except each topic's last, which
    /// keeps the topic's highest ID for the IDs handed out after a restore. For a replay that
    /// lives as long as its log (a replicated node's): without it, it holds every message
    /// ever published.
    pub fn forget_finished(&mut self) {
        self.forget_finished = true;
        let names: Vec<Name> = self.topics.keys().cloned().collect();
        for t in names {
            self.collect(&t);
        }
    }

    /// Whether nothing owes `m` in `t`.
    fn unowed(t: &ReplayTopic, m: &ReplayMessage) -> bool {
        m.dropped
            || (!m.held
                && t.channels
                    .values()
                    .all(|c| m.msg.id < c.start || c.finished.contains(&m.msg.id)))
    }

    /// Forget what nothing owes in `topic` (all of it: after a channel went or was emptied).
    fn collect(&mut self, topic: &str) {
        let Some(t) = self.topics.get(topic) else {
            return;
        };
        let ids: Vec<MessageId> = t
            .messages
            .iter()
            .filter(|m| !m.gone)
            .map(|m| m.msg.id)
            .collect();
        self.collect_ids(topic, &ids);
    }

    /// Forget these of `topic` if nothing owes them (after a FIN); never the topic's last.
    fn collect_ids(&mut self, topic: &str, ids: &[MessageId]) {
        if !self.forget_finished {
            return;
        }
        let Some(t) = self.topics.get_mut(topic) else {
            return;
        };
        let last = t.messages.last().map(|m| m.msg.id);
        for id in ids {
            if Some(*id) == last {
                continue;
            }
            let Ok(i) = t.position(*id) else { continue };
            if t.messages[i].gone || !Self::unowed(t, &t.messages[i]) {
                continue;
            }
            t.messages[i].gone = true;
            t.gone += 1;
            t.bytes -= weight(&t.messages[i]);
            for c in t.channels.values_mut() {
                c.finished.remove(id);
                c.requeued.remove(id);
            }
        }
        // Removed in bulk, so forgetting the oldest of a long log one at a time stays cheap.
        if t.gone > 1024 && t.gone * 2 > t.messages.len() {
            t.messages.retain(|m| !m.gone);
            t.gone = 0;
        }
    }

    pub fn apply(&mut self, op: &StoreOp) {
        self.apply_op(op);
        match op {
            StoreOp::Finished { topic, ids, .. } => self.collect_ids(topic, ids),
            // The one that was last may be forgotten now that it is not.
            StoreOp::Publish { topic, .. } => {
                let before = self.topics.get(&**topic).and_then(|t| {
                    let n = t.messages.len();
                    (n >= 2).then(|| t.messages[n - 2].msg.id)
                });
                if let Some(id) = before {
                    self.collect_ids(topic, &[id]);
                }
            }
            StoreOp::TopicEmptied { topic, .. }
            | StoreOp::ChannelDeleted { topic, .. }
            | StoreOp::ChannelEmptied { topic, .. } => self.collect(topic),
            _ => {}
        }
    }

    fn apply_op(&mut self, op: &StoreOp) {
        match op {
            StoreOp::TopicCreated { topic } => {
                self.topics.entry(topic.clone()).or_default();
            }
            StoreOp::TopicDeleted { topic } => {
                self.topics.remove(topic);
            }
            StoreOp::TopicPaused { topic, paused } => {
                self.topics.entry(topic.clone()).or_default().paused = *paused;
            }
            StoreOp::TopicEmptied { topic, .. } => {
                if let Some(t) = self.topics.get_mut(topic) {
                    for m in t.messages.iter_mut().filter(|m| m.held) {
                        m.held = false;
                        m.dropped = true;
                    }
                }
            }
            StoreOp::ChannelCreated {
                topic,
                channel,
                start,
            } => {
                let t = self.topics.entry(topic.clone()).or_default();
                t.channels.insert(
                    channel.clone(),
                    ReplayChannel {
                        start: *start,
                        ..ReplayChannel::default()
                    },
                );
            }
            StoreOp::ChannelDeleted { topic, channel, .. } => {
                if let Some(t) = self.topics.get_mut(topic) {
                    t.channels.remove(channel);
                }
            }
            StoreOp::ChannelPaused {
                topic,
                channel,
                paused,
            } => {
                if let Some(c) = self.channel(topic, channel) {
                    c.paused = *paused;
                }
            }
            StoreOp::ChannelEmptied {
                topic,
                channel,
                start,
                ..
            } => {
                if let Some(c) = self.channel(topic, channel) {
                    c.start = *start;
                    c.finished.clear();
                    c.requeued.clear();
                }
            }
            StoreOp::Publish {
                topic,
                held,
                due,
                msg,
                ..
            } => {
                let t = self.topics.entry(topic.clone()).or_default();
                t.insert(ReplayMessage {
                    msg: msg.clone(),
                    due: *due,
                    held: *held,
                    dropped: false,
                    gone: false,
                });
            }
            StoreOp::Dispatched { topic, .. } => {
                if let Some(t) = self.topics.get_mut(topic) {
                    for m in t.messages.iter_mut() {
                        m.held = false;
                    }
                }
            }
            StoreOp::Finished {
                topic,
                channel,
                ids,
            } => {
                if let Some(c) = self.channel(topic, channel) {
                    for id in ids {
                        c.finished.insert(*id);
                        c.requeued.remove(id);
                    }
                }
            }
            StoreOp::Requeued {
                topic,
                channel,
                id,
                due,
            } => {
                if let Some(c) = self.channel(topic, channel) {
                    c.requeued.insert(*id, *due);
                }
            }
        }
    }

    fn channel(&mut self, topic: &str, channel: &str) -> Option<&mut ReplayChannel> {
        self.topics.get_mut(topic)?.channels.get_mut(channel)
    }

    /// After a metadata loss: messages up to `upto` that no channel owns are held again (they
    /// go to the first channel) instead of being dropped.
    pub fn hold_orphans(&mut self, topic: &str, upto: MessageId) {
        let Some(t) = self.topics.get_mut(topic) else {
            return;
        };
        let starts: Vec<MessageId> = t.channels.values().map(|c| c.start).collect();
        for m in t.messages.iter_mut() {
            if m.msg.id <= upto
                && !m.held
                && !m.dropped
                && !m.gone
                && !starts.iter().any(|s| *s <= m.msg.id)
            {
                m.held = true;
            }
        }
    }

    /// The body of a stored message (for [`LoadRun`]s).
    pub fn body(&self, topic: &str, id: MessageId) -> Option<crate::Body> {
        let t = self.topics.get(topic)?;
        let i = t.position(id).ok()?;
        (!t.messages[i].gone).then(|| t.messages[i].msg.body.clone())
    }

    /// Forget a message outright (a store compacted it away: nothing owed it any more).
    pub fn forget(&mut self, topic: &str, id: MessageId) {
        if let Some(t) = self.topics.get_mut(topic) {
            if let Ok(i) = t.position(id) {
                let m = t.messages.remove(i);
                if m.gone {
                    t.gone -= 1;
                } else {
                    t.bytes -= weight(&m);
                }
            }
        }
    }

    /// Every copy still owed: per channel (dispatched, at or above its start, not finished)
    /// and held by topics. Due times are a REQ's if there was one, else DPUB's.
    pub fn survivors(&self) -> impl Iterator<Item = Survivor<'_>> {
        self.topics.iter().flat_map(|(tn, t)| {
            t.messages.iter().flat_map(move |m| {
                let held = (m.held && !m.dropped && !m.gone).then_some(Survivor {
                    topic: tn,
                    channel: None,
                    msg: &m.msg,
                    due: m.due,
                });
                let dispatched = !m.held && !m.dropped && !m.gone;
                held.into_iter().chain(
                    t.channels
                        .iter()
                        .filter(move |(_, c)| {
                            dispatched && m.msg.id >= c.start && !c.finished.contains(&m.msg.id)
                        })
                        .map(move |(cn, c)| Survivor {
                            topic: tn,
                            channel: Some(cn),
                            msg: &m.msg,
                            due: c.requeued.get(&m.msg.id).copied().or(m.due),
                        }),
                )
            })
        })
    }

    /// About how many bytes a snapshot of this replay takes ([`Replay::to_ops`], encoded):
    /// each message kept, its body and some 64 bytes besides.
    pub fn kept_bytes(&self) -> u64 {
        self.topics.values().map(|t| t.bytes).sum()
    }

    /// [`Replay::kept_bytes`] counted afresh (a test's check of the running count).
    #[cfg(test)]
    pub fn kept_bytes_recounted(&self) -> u64 {
        self.topics
            .values()
            .flat_map(|t| t.messages.iter().filter(|m| !m.gone))
            .map(weight)
            .sum()
    }

    /// Ops that rebuild this replay from nothing (a snapshot of it): applied to a new
    /// [`Replay`] they give the same topics, channels and survivors, and the same last ID
    /// per topic.
    pub fn to_ops(&self) -> Vec<StoreOp> {
        let mut ops = Vec::new();
        for (tn, t) in &self.topics {
            ops.push(StoreOp::TopicCreated { topic: tn.clone() });
            if t.paused {
                ops.push(StoreOp::TopicPaused {
                    topic: tn.clone(),
                    paused: true,
                });
            }
            for (cn, c) in &t.channels {
                ops.push(StoreOp::ChannelCreated {
                    topic: tn.clone(),
                    channel: cn.clone(),
                    start: c.start,
                });
                if c.paused {
                    ops.push(StoreOp::ChannelPaused {
                        topic: tn.clone(),
                        channel: cn.clone(),
                        paused: true,
                    });
                }
            }
            let publish = |m: &ReplayMessage, held: bool| StoreOp::Publish {
                ticket: 0,
                topic: tn.clone(),
                held,
                copies: 0,
                due: m.due,
                msg: m.msg.clone(),
            };
            // Dropped while held: held, then emptied; then the rest as they stand.
            let dropped: Vec<&ReplayMessage> =
                t.messages.iter().filter(|m| m.dropped && !m.gone).collect();
            if !dropped.is_empty() {
                ops.extend(dropped.iter().map(|m| publish(m, true)));
                ops.push(StoreOp::TopicEmptied {
                    topic: tn.clone(),
                    dropped: Vec::new(),
                });
            }
            ops.extend(
                t.messages
                    .iter()
                    .filter(|m| !m.dropped && !m.gone)
                    .map(|m| publish(m, m.held)),
            );
            for (cn, c) in &t.channels {
                if !c.finished.is_empty() {
                    let mut ids: Vec<MessageId> = c.finished.iter().copied().collect();
                    ids.sort();
                    ops.push(StoreOp::Finished {
                        topic: tn.clone(),
                        channel: cn.clone(),
                        ids,
                    });
                }
                let mut requeued: Vec<(&MessageId, &Time)> = c.requeued.iter().collect();
                requeued.sort();
                for (id, due) in requeued {
                    ops.push(StoreOp::Requeued {
                        topic: tn.clone(),
                        channel: cn.clone(),
                        id: *id,
                        due: *due,
                    });
                }
            }
        }
        ops
    }

    /// Give everything back to a broker (topics, channels, then messages in ID order), and
    /// finish the restore.
    pub fn restore_into(&self, broker: &mut crate::Broker, now: Time) {
        let mut r = broker.restore(now);
        for (tn, t) in &self.topics {
            r.topic(tn, t.paused);
            for (cn, c) in &t.channels {
                r.channel(tn, cn, c.paused);
            }
            // IDs handed out later are above every ID the topic had, owed or not.
            if let Some(last) = t.messages.last() {
                r.seen_id(tn, last.msg.id);
            }
        }
        for s in self.survivors() {
            r.message(s.topic, s.channel.map(|c| &**c), s.msg.clone(), s.due);
        }
        r.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn publish(replay: &mut Replay, id: u64, body: &str) {
        replay.apply(&StoreOp::Publish {
            ticket: 0,
            topic: "t".into(),
            held: true,
            copies: 1,
            due: None,
            msg: Message::new(MessageId(id), id, body.into()),
        });
    }

    fn held(replay: &Replay) -> Vec<(u64, Vec<u8>)> {
        replay
            .survivors()
            .map(|s| (s.msg.id.0, s.msg.body.to_vec()))
            .collect()
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn messages_stay_in_id_order_whatever_order_they_come_in() {
        let mut r = Replay::new();
        for id in [2, 4, 6] {
            publish(&mut r, id, "a");
        }
        // Out of order, and the same ID again (its later record wins).
        publish(&mut r, 3, "b");
        publish(&mut r, 1, "c");
        publish(&mut r, 4, "d");
        let want: Vec<(u64, Vec<u8>)> = [(1, "c"), (2, "a"), (3, "b"), (4, "d"), (6, "a")]
            .iter()
            .map(|&(id, b)| (id, b.as_bytes().to_vec()))
            .collect();
        assert_eq!(held(&r), want);
        assert_eq!(r.body("t", MessageId(3)).as_deref(), Some(&b"b"[..]));
        assert!(r.body("t", MessageId(5)).is_none());
        r.forget("t", MessageId(2));
        r.forget("t", MessageId(5));
        assert_eq!(
            held(&r).iter().map(|m| m.0).collect::<Vec<_>>(),
            [1, 3, 4, 6]
        );
    }
}
