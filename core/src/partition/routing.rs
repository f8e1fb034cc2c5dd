//! [`Partition`]: one partition's broker with the routing around it, so that every host (the
//! server's broker tasks, the tests, the fuzzer) moves clients and forwards publishes with
//! the same code.
//!
//! # Messages between partitions
//! A host runs one [`Partition`] per partition and carries two kinds of message, each in the
//! order it was sent: a connection's [`ClientInput`] to the partition it believes its client
//! is in, and [`PeerMsg`]s from one partition to another ([`Route::Peer`]).
//!
//! A client moves like this. Its partition's broker lets it go (it subscribed to, or first
//! published to, a topic another partition owns); after everything this partition had for
//! its connection has gone out, [`PeerMsg::Adopt`] takes its state and its connection handle
//! to the new partition, which says [`Route::Moved`] before anything else it sends the
//! connection. The connection answers [`ClientInput::Drained`] to the partition it left and
//! sends everything else to the new one. Input that reached the old partition meanwhile
//! follows as [`PeerMsg::Late`]; the new partition keeps what the connection sends it directly
//! until [`PeerMsg::Drained`] says nothing more comes the other way. So a client's input runs
//! in the order it was sent, wherever it was sent.
//!
//! A client that stays (subscribed, or moved once already) has its publishes to other
//! partitions' topics forwarded ([`PeerMsg::Publish`]); the owner answers
//! ([`PeerMsg::Published`]) once its store has them (at once without storage).
//!
//! # The run loop
//! ```
//! use nsqlab_core::partition::{ClientInput, Partition};
//! use nsqlab_core::{Options, Output, Transmit};
//!
//! // One partition of one; the connection handle is whatever the host writes to.
//! let mut p: Partition<Vec<u8>, &str> = Partition::new(Options::default(), 1, 0);
//! let c = p.connect(0, "127.0.0.1:5000", "socket 1");
//! p.handle_client(1_000, c, ClientInput::Bytes(b"  V2PUB t\n\x00\x00\x00\x02hi".to_vec()));
//! while let Some(out) = p.poll_output() {
//!     match out {
//!         Output::Transmit(Transmit::Data { client, data }) => {
//!             assert_eq!(p.conn(client), Some(&"socket 1"));
//!             assert_eq!(&data[8..], b"OK");
//!         }
//!         _ => {} // other transmits, auth, registry changes, events, routes
//!     }
//! }
//! // then sleep until `p.broker().poll_timeout()` or the next input
//! ```

use super::{Forward, Migration};
use crate::broker::{Broker, Output, Transmit};
use crate::client::TlsPeer;
use crate::options::Options;
use crate::store::{StoreFailure, Ticket};
use crate::time::Time;
use crate::ClientId;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Input from a client's connection (`B`: its bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientInput<B> {
    Bytes(B),
    /// The client closed its sending side: the broker answers what it owes (or the error for a
    /// command cut short) and then closes the connection.
    Eof,
    /// The connection is gone.
    Closed,
    /// The client's TLS handshake finished.
    Tls(TlsPeer),
    /// After [`Route::Moved`]: the connection sends nothing more to this (the old) partition.
    Drained,
}

/// From one partition to another (`C`: the host's connection handle, which moves with its
/// client).
#[derive(Debug)]
pub enum PeerMsg<B, C> {
    /// A client moving to the receiver, with its connection.
    Adopt { migration: Migration, conn: C },
    /// Input for a client that moved to the receiver, which reached the partition it left.
    Late {
        client: ClientId,
        input: ClientInput<B>,
    },
    /// Nothing more for this client comes through the partition it left.
    Drained { client: ClientId },
    /// A publish for a client of partition `from`; answered with `Published`.
    Publish { from: u32, forward: Forward },
    /// The answer to a forwarded publish: `Err` says why storing it failed.
    Published {
        client: ClientId,
        result: Result<(), StoreFailure>,
    },
}

/// What only a partition asks its host to do (in [`Output::Route`]).
#[derive(Debug)]
pub enum Route<B, C> {
    /// A client moved here: tell its connection ([`Partition::conn`]) to send
    /// [`ClientInput::Drained`] to the partition it left and everything else here. Comes
    /// before anything else this partition sends that connection.
    Moved { client: ClientId },
    /// A message for partition `to`.
    Peer { to: u32, msg: PeerMsg<B, C> },
}

/// One partition: its [`Broker`] and the routing of clients and publishes to and from the
/// others (see the [module docs](self)). `B` is the bytes a connection sends, `C` the host's
/// handle for a connection.
pub struct Partition<B, C> {
    broker: Broker,
    index: u32,
    conns: FxHashMap<ClientId, C>,
    /// A connection closed by the last transmit: forgotten at the next poll.
    closing: Option<ClientId>,
    /// Clients that moved from here, to which partition, until their connection confirms it
    /// sends nothing more here.
    moved: FxHashMap<ClientId, u32>,
    /// Clients that moved here, with what their connection sent directly while input may
    /// still come through the partition they left.
    arriving: FxHashMap<ClientId, Vec<ClientInput<B>>>,
    /// Clients the broker let go, handed over after this partition's transmits, with their
    /// input since.
    leaving: FxHashMap<ClientId, Vec<ClientInput<B>>>,
    handovers: VecDeque<Migration>,
    /// Clients adopted here whose connection has not been told.
    adopted: VecDeque<ClientId>,
    peers: VecDeque<(u32, PeerMsg<B, C>)>,
    /// Forwarded publishes run here, answered once the store has them: (the last ticket
    /// their store ops could have, from, client, result).
    unstored: Vec<(Ticket, u32, ClientId, Result<(), StoreFailure>)>,
}

impl<B: AsRef<[u8]>, C> Partition<B, C> {
    /// Partition [`Options::partition`] of [`Options::partitions`].
    pub fn new(opts: Options, seed: u64, now: Time) -> Self {
        Self::with_broker(Broker::new(opts, seed, now))
    }

    /// Around a broker made elsewhere (restored from storage, say).
    pub fn with_broker(broker: Broker) -> Self {
        Partition {
            index: broker.options().partition,
            broker,
            conns: FxHashMap::default(),
            closing: None,
            moved: FxHashMap::default(),
            arriving: FxHashMap::default(),
            leaving: FxHashMap::default(),
            handovers: VecDeque::new(),
            adopted: VecDeque::new(),
            peers: VecDeque::new(),
            unstored: Vec::new(),
        }
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn broker(&self) -> &Broker {
        &self.broker
    }

    /// The broker, for inputs that are not a client's (HTTP calls, timers, the store, auth
    /// answers).
    pub fn broker_mut(&mut self) -> &mut Broker {
        &mut self.broker
    }

    pub fn into_broker(self) -> Broker {
        self.broker
    }

    /// A client's connection handle, while the client is here.
    pub fn conn(&self, client: ClientId) -> Option<&C> {
        self.conns.get(&client)
    }

    /// A new connection, starting here.
    pub fn connect(&mut self, now: Time, remote: impl Into<String>, conn: C) -> ClientId {
        let id = self.broker.connect(now, remote);
        self.conns.insert(id, conn);
        id
    }

    /// Input from a client's connection: run here, or kept for a client on its way, or
    /// passed on to where the client went.
    pub fn handle_client(&mut self, now: Time, client: ClientId, input: ClientInput<B>) {
        self.take_leavers();
        let moving =
            !(self.leaving.is_empty() && self.moved.is_empty() && self.arriving.is_empty());
        if moving {
            // Leaving: its input waits to follow it.
            if let Some(waiting) = self.leaving.get_mut(&client) {
                waiting.push(input);
                return;
            }
            // Moved from here: its input follows it.
            if let Some(&to) = self.moved.get(&client) {
                let msg = match input {
                    ClientInput::Drained => {
                        self.moved.remove(&client);
                        PeerMsg::Drained { client }
                    }
                    input => {
                        if matches!(input, ClientInput::Closed) {
                            self.moved.remove(&client);
                        }
                        PeerMsg::Late { client, input }
                    }
                };
                self.peers.push_back((to, msg));
                return;
            }
            // Moved here, and input may still come through where it was: after that.
            if let Some(waiting) = self.arriving.get_mut(&client) {
                waiting.push(input);
                return;
            }
        }
        self.run(now, client, input);
        self.take_leavers();
    }

    /// A message from another partition.
    pub fn handle_peer(&mut self, now: Time, msg: PeerMsg<B, C>) {
        self.take_leavers();
        match msg {
            PeerMsg::Adopt { migration, conn } => {
                let client = migration.client;
                self.conns.insert(client, conn);
                self.arriving.insert(client, Vec::new());
                self.adopted.push_back(client);
                self.broker.adopt(now, migration);
            }
            PeerMsg::Late { client, input } => {
                if matches!(input, ClientInput::Closed) {
                    self.arriving.remove(&client);
                }
                self.run(now, client, input);
            }
            PeerMsg::Drained { client } => {
                self.broker.settled(now, client);
                // Settled, it may move on at once (a command was waiting for that): then
                // what it sent here directly follows it.
                self.take_leavers();
                for input in self.arriving.remove(&client).unwrap_or_default() {
                    self.handle_client(now, client, input);
                }
            }
            PeerMsg::Publish { from, forward } => {
                let client = forward.client;
                let result = self
                    .broker
                    .publish(now, &forward.topic, forward.bodies, forward.defer)
                    .map(|_| ())
                    .map_err(|e| {
                        // Refused for failing storage: why it fails, as a local publish says.
                        self.broker
                            .health()
                            .cloned()
                            .unwrap_or_else(|| StoreFailure::new(e))
                    });
                if self.broker.options().durable {
                    let ticket = self.broker.last_ticket();
                    self.unstored.push((ticket, from, client, result));
                } else {
                    self.peers
                        .push_back((from, PeerMsg::Published { client, result }));
                }
            }
            PeerMsg::Published { client, result } => {
                self.broker.handle_forwarded(now, client, result)
            }
        }
        self.take_leavers();
    }

    /// The store wrote (or failed to write) everything up to and including ticket `through`
    /// (an [`Output::Commit`]'s, or [`Broker::last_ticket`] when everything the broker gave
    /// the store is written): answer the publishes forwarded here that it covers.
    pub fn handle_committed(&mut self, through: Ticket, result: Result<(), StoreFailure>) {
        let (done, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.unstored)
            .into_iter()
            .partition(|u| u.0 <= through);
        self.unstored = wait;
        for (_, from, client, r) in done {
            let result = r.and(result.clone());
            self.peers
                .push_back((from, PeerMsg::Published { client, result }));
        }
        self.take_leavers();
    }

    /// The next thing for the host to do, in this order: tell adopted clients' connections
    /// they moved; then the broker's output ([`Broker::poll_output`]: each client's
    /// transmits, auth questions, registry changes, events); then hand over the clients that
    /// leave (after what this partition sent them), pass on the input that followed them,
    /// forward publishes and send answers. (With storage, the store's part comes first, as
    /// [`Broker::poll_output`] gives it: answer its `Commit` with [`Broker::handle_stored`]
    /// and [`Partition::handle_committed`] as it comes, so that the output it held can go.)
    /// A transmit goes to [`Partition::conn`]; after a close the handle is forgotten at the
    /// next poll.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output<Route<B, C>>> {
        if let Some(c) = self.closing.take() {
            self.conns.remove(&c);
        }
        if let Some(client) = self.adopted.pop_front() {
            return Some(Output::Route(Route::Moved { client }));
        }
        if let Some(o) = self.broker.poll_output() {
            if let Output::Transmit(Transmit::Close { client }) = o {
                self.closing = Some(client);
            }
            return Some(o.routed());
        }
        self.take_leavers();
        while let Some(m) = self.handovers.pop_front() {
            let (client, to) = (m.client, m.to);
            let since = self.leaving.remove(&client).unwrap_or_default();
            // A connection already gone has nobody to move.
            let Some(conn) = self.conns.remove(&client) else {
                continue;
            };
            self.peers
                .push_back((to, PeerMsg::Adopt { migration: m, conn }));
            self.moved.insert(client, to);
            let now = self.broker.now();
            for input in since {
                self.handle_client(now, client, input);
            }
        }
        while let Some(forward) = self.broker.take_forward() {
            let from = self.index;
            self.peers
                .push_back((forward.to, PeerMsg::Publish { from, forward }));
        }
        let (to, msg) = self.peers.pop_front()?;
        Some(Output::Route(Route::Peer { to, msg }))
    }

    /// Clients the broker let go: their next input (maybe in this same batch) waits with
    /// them until they are handed over.
    fn take_leavers(&mut self) {
        while let Some(m) = self.broker.take_migration() {
            self.leaving.insert(m.client, Vec::new());
            self.handovers.push_back(m);
        }
    }

    fn run(&mut self, now: Time, client: ClientId, input: ClientInput<B>) {
        match input {
            ClientInput::Bytes(b) => self.broker.handle_bytes(now, client, b.as_ref()),
            ClientInput::Eof => self.broker.handle_eof(now, client),
            ClientInput::Closed => {
                self.conns.remove(&client);
                self.broker.disconnect(now, client);
            }
            ClientInput::Tls(peer) => self.broker.handle_tls_peer(client, peer),
            // Not moved from here (any more): nothing to do.
            ClientInput::Drained => {}
        }
    }
}
