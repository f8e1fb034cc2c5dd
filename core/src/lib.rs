//! # nsqlab-core: the sans-IO NSQ broker
//!
//! Everything nsqlab does with messages happens here: topics, channels, the deferred and
//! in-flight priority queues, client state (RDY, in-flight, FIN/REQ/TOUCH, timeouts,
//! heartbeats) and the NSQ protocol V2 codec. The same code runs in the server, in tests under
//! virtual time, and in the browser as WebAssembly.
//!
//! ## The sans-IO contract
//!
//! The core does no I/O and reads no clock. It has no sockets, files, threads or timers.
//!
//! * **Every input carries `now`** ([`Time`], nanoseconds since an epoch the caller picks; the
//!   server uses Unix time). Times never go backwards: a `now` earlier than one already seen is
//!   treated as that one.
//! * **Outputs are drained** with `#[must_use]` `poll_*` calls after each input.
//! * **[`Broker::poll_timeout`]** says when the broker next needs [`Broker::handle_timeout`]:
//!   the earliest of every channel's deferred and in-flight heads and every client's heartbeat
//!   and read deadline. Nothing is scanned or sampled: each timer fires exactly when due.
//!
//! ## The run loop
//!
//! ```
//! use nsqlab_core::{Broker, Options, Output, Transmit};
//!
//! let mut broker = Broker::new(Options::default(), /* seed */ 1, /* now */ 0);
//! let c = broker.connect(0, "127.0.0.1:5000");
//! broker.handle_bytes(1_000, c, b"  V2PUB t\n\x00\x00\x00\x02hi");
//! // 1. do what the broker asks, in order
//! while let Some(o) = broker.poll_output() {
//!     match o {
//!         // only with durable storage: keep, commit (then handle_stored), read back
//!         Output::Store(_) | Output::Commit { .. } | Output::Load(_) => {}
//!         Output::Transmit(Transmit::Data { client, data }) => assert_eq!(&data[8..], b"OK"),
//!         Output::Transmit(_) => {} // upgrades, closes, write deadlines
//!         Output::Auth(_) => {}     // ask the auth server; answer with handle_auth_response
//!         Output::Registry(_) => {} // tell nsqlookupd
//!         Output::Event(_) => {}    // stats, logs, the visualiser
//!     }
//! }
//! // 2. sleep until the next timer or input; on the timer call handle_timeout(now)
//! if let Some(at) = broker.poll_timeout() {
//!     broker.handle_timeout(at);
//! }
//! ```
//!
//! Inputs: [`Broker::connect`], [`Broker::handle_bytes`], [`Broker::disconnect`],
//! [`Broker::handle_timeout`], [`Broker::handle_auth_response`], and the HTTP-style calls
//! ([`Broker::publish`], [`Broker::create_topic`], [`Broker::pause_channel`], …). After any of
//! them drain the one output, [`Broker::poll_output`] ([`Output`]: each client's transmits in
//! order, questions for the auth server, registry changes for nsqlookupd, events), then
//! re-read [`Broker::poll_timeout`].
//!
//! With durable storage ([`Options::durable`], see [`store`]) the store's part of the output
//! comes first: the changes to keep ([`Output::Store`]), then [`Output::Commit`], answered with
//! [`Broker::handle_stored`] once they are written (publishers' `OK`s wait for it), then
//! bodies evicted to the store to read back ([`Output::Load`], answered with
//! [`Broker::handle_loaded`]). At start, [`store::Replay`] gives back what the store kept.
//!
//! A host that runs several partitions (one broker each, see [`partition`]) wraps each broker
//! in a [`partition::Partition`], which routes clients and publishes between them, and drains
//! [`partition::Partition::poll_output`] instead: the same [`Output`], with
//! [`Output::Route`]s for moves and for the other partitions.
//!
//! Determinism: message IDs come from the configured node id, `now` and a sequence; any
//! randomness (`sample_rate`, the optional scan-loop strategy) from the seed. The same inputs
//! give the same outputs and events, byte for byte.

pub mod auth;
pub mod broker;
pub mod channel;
pub mod client;
pub mod deque;
pub mod e2e;
pub mod event;
pub mod iqueue;
pub mod live;
pub mod lookup;
pub mod message;
pub mod options;
pub mod partition;
pub mod pqueue;
pub mod protocol;
#[cfg(feature = "replication")]
pub mod replica;
pub mod sim;
pub mod stats;
pub mod store;
pub mod time;
pub mod topic;

pub use auth::{AuthRequest, AuthResponse, Authorization};
pub use broker::{AdminError, Broker, Output, Restore, Transmit, Upgrade};
pub use client::TlsPeer;
pub use event::{CloseReason, Event, EventKind, Name, Place};
pub use message::{Body, Message, MessageId};
pub use options::{Options, TimerStrategy};
pub use partition::{partition_of, Forward, Migration};
pub use stats::{Stats, StatsFilter};
pub use store::{LoadRun, LoadedRun, RegistryChange, Replay, StoreFailure, StoreOp, Ticket};
pub use time::{Nanos, Time};

use serde::{Deserialize, Serialize};

/// The version nsqlab reports where nsqd reports its own.
pub const VERSION: &str = "1.3.0";

/// A connection, numbered from 1 in connection order (nsqd's client ID).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(transparent)]
pub struct ClientId(pub u64);

/// A channel's slot in the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChannelId(pub u32);

impl std::fmt::Display for ClientId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}
