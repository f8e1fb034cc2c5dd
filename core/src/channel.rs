//! A channel: its own copy of every message of its topic, a memory queue with a backend behind
//! it, a deferred heap, an in-flight heap, and the consumers that share it round-robin.

use crate::deque::ChunkedDeque;
use crate::event::Name;
use crate::iqueue::IndexedQueue;
use crate::message::{Message, MessageId};
use crate::pqueue::{HeapItem, PQueue};
use crate::time::Time;
use crate::ClientId;
use rustc_hash::FxHashMap;

/// A message that was sent and is awaiting FIN, REQ, TOUCH or its timeout.
#[derive(Debug, Clone)]
pub struct InFlight {
    pub msg: Message,
    pub client: ClientId,
    /// When it was sent (TOUCH never extends past `delivered_at + max_msg_timeout`).
    pub delivered_at: Time,
}

impl HeapItem for InFlight {
    fn heap_id(&self) -> u64 {
        self.msg.id.0
    }
}

/// A FIFO of ready messages: `mem_queue_size` in memory, the rest in the backend, in order.
///
/// Once anything is in the backend, new messages go there too until it drains, so messages
/// leave in the order they came (nsqd picks between its memory channel and disk queue at
/// random).
#[derive(Debug, Default, Clone)]
pub struct MessageQueue {
    pub memory: ChunkedDeque<Message>,
    pub backend: ChunkedDeque<Message>,
}

impl MessageQueue {
    /// Put a message at the back; returns true when it went to the backend.
    pub fn put(&mut self, msg: Message, mem_queue_size: usize) -> bool {
        if self.backend.is_empty() && self.memory.len() < mem_queue_size {
            self.memory.push_back(msg);
            false
        } else {
            self.backend.push_back(msg);
            true
        }
    }

    /// Whether the next [`MessageQueue::put`] goes to the backend.
    pub fn spills(&self, mem_queue_size: usize) -> bool {
        !(self.backend.is_empty() && self.memory.len() < mem_queue_size)
    }

    pub fn pop(&mut self) -> Option<Message> {
        self.memory.pop_front().or_else(|| self.backend.pop_front())
    }

    pub fn len(&self) -> usize {
        self.memory.len() + self.backend.len()
    }

    pub fn is_empty(&self) -> bool {
        self.memory.is_empty() && self.backend.is_empty()
    }

    pub fn clear(&mut self) {
        self.memory.clear();
        self.backend.clear();
    }

    pub fn iter(&self) -> impl Iterator<Item = &Message> {
        self.memory.iter().chain(self.backend.iter())
    }
}

/// A channel of a topic.
#[derive(Debug)]
pub struct Channel {
    pub topic: Name,
    pub name: Name,
    pub ephemeral: bool,
    /// Its copies are kept by durable storage (durable broker, neither it nor its topic
    /// ephemeral).
    pub stored: bool,
    pub paused: bool,
    pub queue: MessageQueue,
    pub deferred: PQueue<Message>,
    pub in_flight: IndexedQueue<InFlight>,
    /// End-to-end latencies of finished messages (with e2e percentiles configured).
    pub e2e: Option<crate::e2e::E2eWindow>,
    /// Due messages whose bodies are being loaded from storage.
    pub loading: FxHashMap<MessageId, Message>,
    /// Subscribed consumers, in subscription order; delivery goes round-robin over them.
    pub clients: Vec<ClientId>,
    /// Index into `clients` where the next round-robin search starts.
    pub next_client: usize,
    pub message_count: u64,
    pub requeue_count: u64,
    pub timeout_count: u64,
    /// The channel's key in the broker's timer table (its [`Self::next_due`] when last armed).
    pub armed: Option<Time>,
}

impl Channel {
    pub fn new(topic: Name, name: Name, trace: bool) -> Self {
        let ephemeral = crate::protocol::is_ephemeral(&name);
        let mut deferred = PQueue::plain();
        let mut in_flight = IndexedQueue::new();
        deferred.set_trace(trace);
        in_flight.set_trace(trace);
        Self {
            topic,
            name,
            ephemeral,
            stored: false,
            paused: false,
            queue: MessageQueue::default(),
            deferred,
            in_flight,
            loading: FxHashMap::default(),
            e2e: None,
            clients: Vec::new(),
            next_client: 0,
            message_count: 0,
            requeue_count: 0,
            armed: None,
            timeout_count: 0,
        }
    }

    /// nsqd's `depth`: ready messages (memory and backend), not in flight, not deferred.
    pub fn depth(&self) -> usize {
        self.queue.len()
    }

    /// The IDs of every message the channel holds (ready, deferred and in flight).
    pub fn message_ids(&self) -> Vec<MessageId> {
        let mut ids: Vec<MessageId> = self.queue.iter().map(|m| m.id).collect();
        ids.extend(self.deferred.entries().iter().map(|e| e.item.id));
        ids.extend(self.in_flight.iter().map(|e| e.item.msg.id));
        ids.extend(self.loading.keys().copied());
        ids
    }

    pub fn in_flight_owner(&self, id: MessageId) -> Option<ClientId> {
        self.in_flight.get(id.0).map(|e| e.item.client)
    }

    /// The earliest instant one of the channel's heaps needs attention.
    pub fn next_due(&self) -> Option<Time> {
        match (self.deferred.peek_key(), self.in_flight.peek_key()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn remove_client(&mut self, client: ClientId) {
        if let Some(pos) = self.clients.iter().position(|&c| c == client) {
            self.clients.remove(pos);
            if pos < self.next_client {
                self.next_client -= 1;
            }
            if self.next_client >= self.clients.len() {
                self.next_client = 0;
            }
        }
    }
}
