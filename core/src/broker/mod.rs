//! The broker: every topic, channel and client, driven by `handle_*(now, …)` and drained with
//! `poll_*`. See the crate docs for the run loop.

use crate::auth::AuthRequest;
use crate::channel::Channel;
use crate::client::Client;
use crate::event::{Event, EventKind, Name};
use crate::options::{Options, TimerStrategy};
use crate::protocol::is_valid_name;
use crate::store::{LoadRun, RegistryChange, StoreFailure, StoreOp, Ticket};
use crate::time::{Clock, Nanos, Time};
use crate::topic::{Topic, Topics};
use crate::{ChannelId, ClientId};
use migrate::{Forward, Migration};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

mod admin;
mod command;
mod delivery;
pub(crate) mod migrate;
mod outbox;
mod restore;
mod scan;
mod session;
mod storage;
mod timer;

use outbox::Outbox;
pub use restore::Restore;
use scan::{ScanState, SCAN_INTERVAL};
use timer::{TimerKey, Timers};

/// Something to do on a client's transport, in order per client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transmit {
    /// Write these bytes.
    Data { client: ClientId, data: Vec<u8> },
    /// Upgrade the transport (after writing everything before), then continue with what
    /// follows (nsqd sends an `OK` frame over each upgraded stream).
    Upgrade { client: ClientId, upgrade: Upgrade },
    /// Close the connection after writing everything before.
    Close { client: ClientId },
    /// nsqd's write deadline: a write to this client that takes longer than `timeout` (its
    /// heartbeat interval) fails and closes the connection; `None`: writes may wait for ever
    /// (heartbeats disabled). It starts at [`Options::default_heartbeat_interval`] and this
    /// comes only when an IDENTIFY changes it; it applies to writes from now on.
    WriteTimeout {
        client: ClientId,
        timeout: Option<Nanos>,
    },
}

/// What a broker (or a [`crate::partition::Partition`]) asks its host to do, from its one
/// output path: [`Broker::poll_output`] gives them in this order, every client's in the
/// order it was produced. With durable storage the store's part comes first: the changes to
/// keep, then `Commit`, then bodies to read back.
///
/// `R` is what a partition adds ([`crate::partition::Route`]: moves and messages for other
/// partitions); a broker on its own never gives one, so a host of one broker matches no
/// `Route` arm.
#[derive(Debug)]
pub enum Output<R = std::convert::Infallible> {
    /// A change durable storage must keep (only with [`Options::durable`]; see
    /// [`crate::store`]). Apply them in order.
    Store(StoreOp),
    /// After the last `Store` so far: write what was applied, then answer with
    /// [`Broker::handle_stored`]`(through, result)`. Publishers' `OK`s (and everything after
    /// them on their connections) wait for it; until then the transmits that follow leave them
    /// out.
    Commit { through: Ticket },
    /// Evicted bodies to read back from storage (only with [`Options::evict_bodies`]), in runs
    /// of one channel's; answer with [`Broker::handle_loaded`].
    Load(LoadRun),
    /// Bytes, an upgrade, a close or a write deadline for a client's transport.
    Transmit(Transmit),
    /// A question for the auth server (after AUTH, or to refresh an expired TTL); answer
    /// with [`Broker::handle_auth_response`]. The client's input waits until then.
    Auth(AuthRequest),
    /// A topic or channel came or went (only with [`Options::registry`]), for nsqlookupd.
    Registry(RegistryChange),
    /// What happened (only with [`Options::events`]), for stats, logs and the visualiser.
    Event(Event),
    /// Partitions only.
    Route(R),
}

impl Output {
    /// The same output, in a host's type that also has routes.
    pub fn routed<R>(self) -> Output<R> {
        match self {
            Output::Store(op) => Output::Store(op),
            Output::Commit { through } => Output::Commit { through },
            Output::Load(run) => Output::Load(run),
            Output::Transmit(t) => Output::Transmit(t),
            Output::Auth(a) => Output::Auth(a),
            Output::Registry(r) => Output::Registry(r),
            Output::Event(e) => Output::Event(e),
        }
    }
}

/// A transport upgrade negotiated by IDENTIFY.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upgrade {
    Tls,
    Snappy,
    Deflate { level: u32 },
}

/// Why an HTTP-style publish (or topic/channel admin call) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    #[error("INVALID_TOPIC")]
    InvalidTopic,
    #[error("INVALID_CHANNEL")]
    InvalidChannel,
    #[error("TOPIC_NOT_FOUND")]
    TopicNotFound,
    #[error("CHANNEL_NOT_FOUND")]
    ChannelNotFound,
    #[error("INVALID_DEFER")]
    InvalidDefer,
    /// Storage is failing (nsqd answers a failed put with 503 `EXITING`).
    #[error("EXITING")]
    Exiting,
}

/// The sans-IO NSQ broker. Cloning one copies its whole state (the visualiser keeps
/// snapshots of a run to step back through it).
#[derive(Clone)]
pub struct Broker {
    opts: Options,
    clock: Clock,
    rng: Xoshiro256PlusPlus,
    topics: Topics,
    channels: Vec<Option<Channel>>,
    free_channels: Vec<u32>,
    /// Looked up several times per message: hashed (the public iterator sorts by ID).
    clients: FxHashMap<ClientId, Client>,
    next_client: u64,
    timers: Timers,
    transmits: VecDeque<Transmit>,
    dirty: VecDeque<ClientId>,
    /// Store ops, registry changes and events, recorded in one place.
    out: Outbox,
    scan: ScanState,
    /// Reused list of a topic's channels while routing (no allocation per message).
    scratch: Vec<ChannelId>,
    /// The channels of the topic being published to.
    pub_scratch: Vec<ChannelId>,
    auth_requests: VecDeque<AuthRequest>,
    last_ticket: Ticket,
    /// Clients whose output waits for the store.
    held_clients: Vec<ClientId>,
    /// Ordered transmits (upgrades, closes) of held clients, with the ticket they wait for.
    parked: VecDeque<(Ticket, Transmit)>,
    /// Why storage is failing, if it is (nsqd's health).
    health: Option<StoreFailure>,
    /// Publishes handed to the store and not yet written, in ticket order: their messages
    /// wait (see `Topic::unstored`).
    unstored: VecDeque<storage::Unstored>,
    /// Evicted bodies to fetch from storage, in runs of one channel's.
    loads: VecDeque<LoadRun>,
    /// Store ops were handed out since the last `Output::Commit`.
    uncommitted: bool,
    /// Clients leaving for another partition.
    migrations: VecDeque<Migration>,
    /// Publishes for topics another partition owns.
    forwards: VecDeque<Forward>,
}

impl Broker {
    /// A broker with `opts`, randomness from `seed`, starting at `now`.
    pub fn new(opts: Options, seed: u64, now: Time) -> Self {
        let out = Outbox::new(opts.registry, opts.events);
        let mut b = Broker {
            opts,
            clock: Clock::new(now),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            topics: Topics::default(),
            channels: Vec::new(),
            free_channels: Vec::new(),
            clients: FxHashMap::default(),
            next_client: 1,
            timers: Timers::default(),
            transmits: VecDeque::new(),
            dirty: VecDeque::new(),
            out,
            scan: ScanState::default(),
            scratch: Vec::new(),
            pub_scratch: Vec::new(),
            auth_requests: VecDeque::new(),
            last_ticket: 0,
            held_clients: Vec::new(),
            parked: VecDeque::new(),
            health: None,
            unstored: VecDeque::new(),
            loads: VecDeque::new(),
            uncommitted: false,
            migrations: VecDeque::new(),
            forwards: VecDeque::new(),
        };
        // Client IDs are unique across partitions: partition p of n numbers p+1, p+1+n, …
        b.next_client = b.opts.partition as u64 + 1;
        if b.opts.timer_strategy == TimerStrategy::ScanLoop {
            b.timers.start(TimerKey::Scan, now + SCAN_INTERVAL);
            b.scan.next_refresh = now;
        }
        b
    }

    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Turn the event stream on or off (a server produces events only while someone listens).
    pub fn set_events(&mut self, on: bool) {
        self.opts.events = on;
        self.out.set_events(on);
    }

    /// The latest `now` seen.
    pub fn now(&self) -> Time {
        self.clock.now()
    }

    /// The next thing for the host to do (see [`Output`]): with storage, the changes to keep,
    /// `Commit`, and bodies to read back; then each client's transmits, questions for the auth
    /// server, registry changes and events. Drain it after every input (answering `Commit`
    /// with [`Broker::handle_stored`] as it comes, so that what the store held can go), then
    /// re-read [`Broker::poll_timeout`].
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        if let Some(op) = self.out.pop_store() {
            self.uncommitted = true;
            return Some(Output::Store(op));
        }
        if std::mem::take(&mut self.uncommitted) {
            return Some(Output::Commit {
                through: self.last_ticket,
            });
        }
        if let Some(run) = self.loads.pop_front() {
            return Some(Output::Load(run));
        }
        if let Some(t) = self.next_transmit() {
            return Some(Output::Transmit(t));
        }
        if let Some(a) = self.auth_requests.pop_front() {
            return Some(Output::Auth(a));
        }
        if let Some(r) = self.out.pop_registry() {
            return Some(Output::Registry(r));
        }
        self.out.pop_event().map(Output::Event)
    }

    /// The next thing to do on a client's transport.
    fn next_transmit(&mut self) -> Option<Transmit> {
        if let Some(t) = self.transmits.pop_front() {
            return Some(t);
        }
        while let Some(id) = self.dirty.pop_front() {
            if let Some(c) = self.clients.get_mut(&id) {
                c.out_queued = false;
                if !c.out.is_empty() && c.hold.is_none() {
                    return Some(Transmit::Data {
                        client: id,
                        data: c.take_out(),
                    });
                }
            }
        }
        None
    }

    /// Report topics and channels as they come and go, or not: a host restoring a broker
    /// from storage turns it off meanwhile (what was restored is registered when nsqlookupd
    /// connects; only later changes are news).
    pub fn set_registry(&mut self, on: bool) {
        self.opts.registry = on;
        self.out.set_registry(on);
    }

    /// nsqd's health: `None` is OK, `Some(reason)` is unhealthy (set by a failed store write).
    pub fn health(&self) -> Option<&StoreFailure> {
        self.health.as_ref()
    }

    /// Set or clear the health error (the host clears it once storage works again).
    pub fn set_health(&mut self, error: Option<StoreFailure>) {
        self.health = error;
    }

    pub fn topics(&self) -> impl Iterator<Item = &Topic> {
        self.topics.values()
    }

    pub fn topic(&self, name: &str) -> Option<&Topic> {
        self.topics.get(name)
    }

    pub fn channel_by_id(&self, id: ChannelId) -> Option<&Channel> {
        self.channels.get(id.0 as usize)?.as_ref()
    }

    pub fn channel(&self, topic: &str, channel: &str) -> Option<&Channel> {
        let id = *self.topics.get(topic)?.channels.get(channel)?;
        self.channel_by_id(id)
    }

    /// The connected clients, in the order they connected.
    pub fn clients(&self) -> impl Iterator<Item = &Client> {
        let mut all: Vec<&Client> = self.clients.values().collect();
        all.sort_unstable_by_key(|c| c.id);
        all.into_iter()
    }

    pub fn client(&self, id: ClientId) -> Option<&Client> {
        self.clients.get(&id)
    }

    pub(super) fn emit(&mut self, at: Time, kind: EventKind) {
        self.out.event(at, kind);
    }

    /// Emit an event about channel `ch`, building it only when events are on (the per-message
    /// path must not pay for events nobody reads).
    #[inline]
    pub(super) fn emit_ch(
        &mut self,
        at: Time,
        ch: ChannelId,
        f: impl FnOnce(Name, Name) -> EventKind,
    ) {
        let c = self.channels[ch.0 as usize].as_ref().expect("live channel");
        self.out.channel_event(at, c, f);
    }

    pub(super) fn topic_name(&self, topic: &str) -> Result<Name, AdminError> {
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        self.topics
            .get(topic)
            .map(|t| t.name.clone())
            .ok_or(AdminError::TopicNotFound)
    }

    pub(super) fn channel_id(&self, topic: &str, channel: &str) -> Result<ChannelId, AdminError> {
        let t = self.topic_name(topic)?;
        if !is_valid_name(channel) {
            return Err(AdminError::InvalidChannel);
        }
        self.topics[&t]
            .channels
            .get(channel)
            .copied()
            .ok_or(AdminError::ChannelNotFound)
    }

    pub(super) fn ch(&mut self, id: ChannelId) -> &mut Channel {
        self.channels[id.0 as usize].as_mut().expect("live channel")
    }
}
