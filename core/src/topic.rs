//! A topic: where producers publish. It copies every message to each of its channels; with no
//! channel (or while paused) it keeps messages until it can hand them on.

use crate::channel::MessageQueue;
use crate::event::Name;
use crate::message::{GuidFactory, MessageId};
use crate::time::Time;
use crate::ChannelId;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

#[derive(Debug)]
pub struct Topic {
    pub name: Name,
    pub ephemeral: bool,
    pub paused: bool,
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
            .iter()
            .map(|m| m.id)
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
