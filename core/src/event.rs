//! What happened inside the broker, as a serialisable stream.
//!
//! Stats, the live stream and the visualiser are built from these. Events are produced only
//! when [`crate::Options::events`] is on, and drained as [`crate::Output::Event`].

use crate::message::MessageId;
use crate::pqueue::HeapOp;
use crate::time::Time;
use crate::ClientId;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A topic or channel name, cheap to clone into events.
pub type Name = Arc<str>;

/// One event with the time it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub at: Time,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Where a message was put.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// The in-memory queue.
    Memory,
    /// The backend (disk on a server; an in-memory list in the core) past `mem_queue_size`.
    Backend,
}

/// Which of a channel's heaps a [`EventKind::Heap`] operation touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeapKind {
    Deferred,
    InFlight,
}

/// Why a client went away.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason", content = "detail")]
pub enum CloseReason {
    /// The transport closed (EOF, reset, server shutdown).
    Disconnected,
    /// A fatal protocol error (its text).
    ProtocolError(String),
    /// Nothing was read for twice the heartbeat interval.
    ReadTimeout,
    /// The topic or channel it was subscribed to was deleted.
    ChannelDeleted,
    /// Bad magic, or a line too long.
    BadInput,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    TopicCreated {
        topic: Name,
    },
    TopicDeleted {
        topic: Name,
    },
    TopicPaused {
        topic: Name,
    },
    TopicUnpaused {
        topic: Name,
    },
    TopicEmptied {
        topic: Name,
    },
    ChannelCreated {
        topic: Name,
        channel: Name,
    },
    ChannelDeleted {
        topic: Name,
        channel: Name,
    },
    ChannelPaused {
        topic: Name,
        channel: Name,
    },
    ChannelUnpaused {
        topic: Name,
        channel: Name,
    },
    ChannelEmptied {
        topic: Name,
        channel: Name,
    },

    /// A message was accepted by a topic (`due` is set for DPUB). `nth` of `batch`: its place
    /// among the messages published together (an MPUB's; 1 of 1 for PUB and DPUB).
    Published {
        topic: Name,
        id: MessageId,
        size: usize,
        due: Option<Time>,
        client: Option<ClientId>,
        #[serde(default = "one")]
        nth: u32,
        #[serde(default = "one")]
        batch: u32,
    },
    /// A topic without channels (or paused) keeps the message for now.
    HeldInTopic {
        topic: Name,
        id: MessageId,
        place: Place,
    },
    /// The message entered a channel's queue, ready to send.
    Queued {
        topic: Name,
        channel: Name,
        id: MessageId,
        place: Place,
    },
    /// The message entered a channel's deferred heap.
    Deferred {
        topic: Name,
        channel: Name,
        id: MessageId,
        due: Time,
    },
    /// A deferred message's time came; it moves to the queue.
    BecameDue {
        topic: Name,
        channel: Name,
        id: MessageId,
        due: Time,
    },
    /// Sent to a client; now in flight until `deadline`.
    Sent {
        topic: Name,
        channel: Name,
        id: MessageId,
        client: ClientId,
        attempts: u16,
        deadline: Time,
    },
    Finished {
        topic: Name,
        channel: Name,
        id: MessageId,
        client: ClientId,
    },
    /// REQ: back to the queue (`delay` 0) or to the deferred heap.
    Requeued {
        topic: Name,
        channel: Name,
        id: MessageId,
        client: ClientId,
        delay: u64,
    },
    /// The in-flight deadline passed; the message goes back to the queue.
    TimedOut {
        topic: Name,
        channel: Name,
        id: MessageId,
        client: ClientId,
    },
    Touched {
        topic: Name,
        channel: Name,
        id: MessageId,
        client: ClientId,
        deadline: Time,
    },
    /// Taken from the channel but not sent, because of the client's `sample_rate`.
    Unsampled {
        topic: Name,
        channel: Name,
        id: MessageId,
        client: ClientId,
    },
    /// An ephemeral channel's memory queue was full: the message is gone (as in nsqd).
    Dropped {
        topic: Name,
        channel: Name,
        id: MessageId,
    },
    /// An ephemeral topic without channels (or paused) already held `--mem-queue-size`
    /// messages: this one is gone (as in nsqd).
    TopicDropped {
        topic: Name,
        id: MessageId,
    },
    /// One heap operation, for step-by-step animation (only with `heap_trace`).
    Heap {
        topic: Name,
        channel: Name,
        heap: HeapKind,
        op: HeapOp,
    },
    /// nsqd's scan loop looked at some channels (only with the scan-loop strategy).
    Scan {
        channels: usize,
        dirty: usize,
    },

    ClientConnected {
        client: ClientId,
    },
    ClientIdentified {
        client: ClientId,
        client_id: String,
        hostname: String,
        user_agent: String,
        msg_timeout: u64,
        heartbeat_interval: Option<u64>,
    },
    ClientSubscribed {
        client: ClientId,
        topic: Name,
        channel: Name,
    },
    ClientReady {
        client: ClientId,
        count: i64,
    },
    /// CLS: the client is closing and gets no more messages.
    ClientClosing {
        client: ClientId,
    },
    ClientClosed {
        client: ClientId,
        reason: CloseReason,
    },
}

/// A publish's size when an event does not say (one message).
fn one() -> u32 {
    1
}
