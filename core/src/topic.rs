//! A topic: where producers publish. It copies every message to each of its channels; with no
//! channel (or while paused) it keeps messages until it can hand them on.

use crate::channel::MessageQueue;
use crate::event::Name;
use crate::message::{GuidFactory, MessageId};
use crate::time::Time;
use crate::ChannelId;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub struct Topic {
    pub name: Name,
    pub ephemeral: bool,
    pub paused: bool,
    /// The first message published to it that the store has not written yet: no channel
    /// sends it, or any later one, until the store has (and a publish the store failed to
    /// write is taken back, never delivered). `None` when every message is written, and
    /// always without durable storage.
    pub unstored: Option<MessageId>,
    /// Messages held while the topic has no channel or is paused.
    pub queue: MessageQueue,
    /// Due times of deferred messages among `queue` (absolute, so holding them does not make
    /// them later).
    pub held_due: FxHashMap<MessageId, Time>,
    /// Channels by name.
    pub channels: BTreeMap<Name, ChannelId>,
    pub message_count: u64,
    pub message_bytes: u64,
    pub(crate) guid: GuidFactory,
    /// The last message ID given out (IDs increase within a topic).
    pub last_id: MessageId,
}

impl Topic {
    pub fn new(name: Name, node_id: u16) -> Self {
        Self {
            ephemeral: crate::protocol::is_ephemeral(&name),
            name,
            paused: false,
            unstored: None,
            queue: MessageQueue::default(),
            held_due: FxHashMap::default(),
            channels: BTreeMap::new(),
            message_count: 0,
            message_bytes: 0,
            guid: GuidFactory::new(node_id),
            last_id: MessageId(0),
        }
    }

    /// nsqd's topic `depth` (memory and backend).
    pub fn depth(&self) -> usize {
        self.queue.len()
    }

    /// A new message ID, above every ID this topic gave out or restored.
    pub(crate) fn next_id(&mut self, now: Time) -> MessageId {
        let id = self.guid.next(now);
        self.last_id = id;
        id
    }

    /// The first ID a channel created now receives: the oldest held message (the new channel
    /// gets those), else the next ID.
    pub(crate) fn channel_start(&self) -> MessageId {
        self.queue
            .ids()
            .min()
            .unwrap_or(MessageId(self.last_id.0.saturating_add(1)))
    }

    /// Restored message `id` exists: later IDs must be above it.
    pub(crate) fn seen_id(&mut self, id: MessageId) {
        if id > self.last_id {
            self.last_id = id;
            self.guid.ensure_after(id);
        }
    }
}

/// The broker's topics: kept in slots, so a publisher that names the same topic again reaches
/// it without a search (see `Client::last_pub`), and indexed by name in name order, which is
/// the order [`Topics::values`] and stats list them in.
#[derive(Debug, Default, Clone)]
pub(crate) struct Topics {
    slots: Vec<Option<Topic>>,
    free: Vec<u32>,
    by_name: BTreeMap<Name, u32>,
}

impl Topics {
    pub fn slot<Q>(&self, name: &Q) -> Option<u32>
    where
        Name: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.by_name.get(name).copied()
    }

    pub fn get<Q>(&self, name: &Q) -> Option<&Topic>
    where
        Name: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.slot(name).map(|s| self.at(s))
    }

    pub fn get_mut<Q>(&mut self, name: &Q) -> Option<&mut Topic>
    where
        Name: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        self.slot(name).map(|s| self.at_mut(s))
    }

    /// The topic in `slot`, if there is one.
    pub fn at_slot(&self, slot: u32) -> Option<&Topic> {
        self.slots.get(slot as usize)?.as_ref()
    }

    /// The topic in a slot known to be live.
    pub fn at(&self, slot: u32) -> &Topic {
        self.at_slot(slot).expect("live topic slot")
    }

    pub fn at_mut(&mut self, slot: u32) -> &mut Topic {
        self.slots[slot as usize].as_mut().expect("live topic slot")
    }

    /// Add a topic (its name must be new); returns its slot.
    pub fn insert(&mut self, topic: Topic) -> u32 {
        let name = topic.name.clone();
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(topic);
                s
            }
            None => {
                self.slots.push(Some(topic));
                self.slots.len() as u32 - 1
            }
        };
        let old = self.by_name.insert(name, slot);
        debug_assert!(old.is_none(), "topic inserted twice");
        slot
    }

    pub fn remove<Q>(&mut self, name: &Q) -> Option<Topic>
    where
        Name: std::borrow::Borrow<Q>,
        Q: Ord + ?Sized,
    {
        let slot = self.by_name.remove(name)?;
        self.free.push(slot);
        self.slots[slot as usize].take()
    }

    /// Names in order.
    pub fn keys(&self) -> impl Iterator<Item = &Name> {
        self.by_name.keys()
    }

    /// Topics in name order.
    pub fn values(&self) -> impl Iterator<Item = &Topic> {
        self.by_name.values().map(|&s| self.at(s))
    }
}

impl<Q> std::ops::Index<&Q> for Topics
where
    Name: std::borrow::Borrow<Q>,
    Q: Ord + ?Sized,
{
    type Output = Topic;

    fn index(&self, name: &Q) -> &Topic {
        self.get(name).expect("topic exists")
    }
}
