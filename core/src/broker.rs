//! The broker: every topic, channel and client, driven by `handle_*(now, …)` and drained with
//! `poll_*`. See the crate docs for the run loop.

use crate::auth::{AuthRequest, AuthResponse, AuthState};
use crate::channel::{Channel, InFlight};
use crate::client::{Client, LastPub, MpubPending};
use crate::event::{CloseReason, Event, EventKind, HeapKind, Name, Place};
use crate::iqueue::IndexedQueue;
use crate::message::{Body, Message, MessageId};
use crate::options::{Options, TimerStrategy};
use crate::partition::{partition_of, Forward, Migration};
use crate::protocol::decode::{decode, ClientState, DecodeContext, Decoded};
use crate::protocol::identify::{ClientSettings, IdentifyData, IdentifyResponse, Upgrades};
use crate::protocol::{
    encode_frame, encode_message_frame, is_valid_name, Command, ProtocolError, CLOSE_WAIT,
    FRAME_TYPE_ERROR, FRAME_TYPE_RESPONSE, HEARTBEAT, MAGIC_V2, OK,
};
use crate::store::{Hold, LoadRequest, RegistryChange, StoreOp, Ticket};
use crate::time::{Clock, Nanos, Time, MILLISECOND, SECOND};
use crate::topic::{Topic, Topics};
use crate::{ChannelId, ClientId};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::sync::Arc;

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

/// A client's TLS session, once its handshake is done.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsPeer {
    /// The subject common name of the client's certificate; empty without one.
    pub common_name: String,
    /// The protocol version's number (0x0303: TLS 1.2, 0x0304: TLS 1.3).
    pub version: u16,
    /// The cipher suite's IANA number (0xc02f: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256).
    pub cipher_suite: u16,
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

/// Bodies read ahead from the store per channel while a consumer is ready, fetched or on
/// their way (see `Broker::pump`).
const READ_AHEAD: usize = 256;

const TIMER_CHANNEL: u64 = 1 << 56;
const TIMER_HEARTBEAT: u64 = 2 << 56;
const TIMER_READ: u64 = 3 << 56;
const TIMER_SCAN: u64 = 4 << 56;
/// The next step of a large MPUB (see [`Broker::mpub`]).
const TIMER_MPUB: u64 = 5 << 56;
const TIMER_KIND_MASK: u64 = 0xff << 56;

/// nsqd's queue-scan cadence and channel-list refresh (only for [`TimerStrategy::ScanLoop`]).
const SCAN_INTERVAL: Nanos = 100 * MILLISECOND;
const SCAN_REFRESH: Nanos = 5 * SECOND;

#[derive(Debug, Default, Clone)]
struct ScanState {
    channels: Vec<ChannelId>,
    next_refresh: Time,
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
    timers: IndexedQueue<u64>,
    transmits: VecDeque<Transmit>,
    dirty: VecDeque<ClientId>,
    events: VecDeque<Event>,
    scan: ScanState,
    /// Reused list of a topic's channels while routing (no allocation per message).
    scratch: Vec<ChannelId>,
    /// The channels of the topic being published to.
    pub_scratch: Vec<ChannelId>,
    auth_requests: VecDeque<AuthRequest>,
    /// Changes for durable storage, in order (only with `opts.durable`).
    store_ops: VecDeque<StoreOp>,
    last_ticket: Ticket,
    /// Clients whose output waits for the store.
    held_clients: Vec<ClientId>,
    /// Ordered transmits (upgrades, closes) of held clients, with the ticket they wait for.
    parked: VecDeque<(Ticket, Transmit)>,
    /// Why storage is failing, if it is (nsqd's health).
    health: Option<String>,
    /// Restoring from storage: the restored state is not stored again.
    restoring: bool,
    /// Evicted bodies to fetch from storage.
    loads: VecDeque<LoadRequest>,
    /// Topics and channels that came or went (only with `opts.registry`).
    registry: VecDeque<RegistryChange>,
    /// Clients leaving for another partition.
    migrations: VecDeque<Migration>,
    /// Publishes for topics another partition owns.
    forwards: VecDeque<Forward>,
}

impl Broker {
    /// A broker with `opts`, randomness from `seed`, starting at `now`.
    pub fn new(opts: Options, seed: u64, now: Time) -> Self {
        let mut b = Broker {
            opts,
            clock: Clock::new(now),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            topics: Topics::default(),
            channels: Vec::new(),
            free_channels: Vec::new(),
            clients: FxHashMap::default(),
            next_client: 1,
            timers: IndexedQueue::new(),
            transmits: VecDeque::new(),
            dirty: VecDeque::new(),
            events: VecDeque::new(),
            scan: ScanState::default(),
            scratch: Vec::new(),
            pub_scratch: Vec::new(),
            auth_requests: VecDeque::new(),
            store_ops: VecDeque::new(),
            last_ticket: 0,
            held_clients: Vec::new(),
            parked: VecDeque::new(),
            health: None,
            restoring: false,
            loads: VecDeque::new(),
            registry: VecDeque::new(),
            migrations: VecDeque::new(),
            forwards: VecDeque::new(),
        };
        // Client IDs are unique across partitions: partition p of n numbers p+1, p+1+n, …
        b.next_client = b.opts.partition as u64 + 1;
        if b.opts.timer_strategy == TimerStrategy::ScanLoop {
            b.timers.push(now + SCAN_INTERVAL, TIMER_SCAN);
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
    }

    /// The latest `now` seen.
    pub fn now(&self) -> Time {
        self.clock.now()
    }

    // ---------------------------------------------------------------- outputs

    /// The next thing to do on a client's transport.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
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

    /// The next event (only with [`Options::events`]).
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The next question for the auth server (after AUTH, or to refresh an expired TTL).
    /// Answer it with [`Broker::handle_auth_response`]; the client's input waits until then.
    #[must_use]
    pub fn poll_auth_request(&mut self) -> Option<AuthRequest> {
        self.auth_requests.pop_front()
    }

    /// The next change for durable storage (only with [`Options::durable`]); see
    /// [`crate::store`]. Apply them in order, then report with [`Broker::handle_stored`].
    #[must_use]
    pub fn poll_store(&mut self) -> Option<StoreOp> {
        let op = self.store_ops.pop_front();
        if op.is_none() && self.store_ops.capacity() > 4096 {
            // A burst's queue is not kept: memory is for messages.
            self.store_ops.shrink_to(4096);
        }
        op
    }

    /// The next topic or channel that came or went (only with [`Options::registry`]).
    #[must_use]
    pub fn poll_registry(&mut self) -> Option<RegistryChange> {
        self.registry.pop_front()
    }

    /// The next evicted body to fetch (only with [`Options::evict_bodies`]); answer with
    /// [`Broker::handle_loaded`].
    #[must_use]
    pub fn poll_load(&mut self) -> Option<LoadRequest> {
        self.loads.pop_front()
    }

    /// The body `req` asked for, or why it could not be read (the message is then dropped:
    /// storage lost it).
    pub fn handle_loaded(&mut self, now: Time, req: &LoadRequest, body: Result<Body, String>) {
        let now = self.clock.advance(now);
        let Ok(ch) = self.channel_id(&req.topic, &req.channel) else {
            return; // the channel went away meanwhile
        };
        let Some(mut msg) = self.ch(ch).loading.remove(&req.id) else {
            return; // emptied meanwhile
        };
        match body {
            Ok(body) if !body.is_empty() => {
                // Next to go (after those fetched before it): it was on its way to a client,
                // or read ahead for one, when its body was fetched.
                msg.body = body;
                self.ch(ch).queue.put_fetched(msg);
                self.pump(now, ch);
            }
            _ => {
                // Storage lost it: release its copy so the rest of the log is not pinned.
                let (topic, channel, id) = (req.topic.clone(), req.channel.clone(), req.id);
                if self.ch(ch).stored {
                    self.store_ops.push_back(StoreOp::Finished {
                        topic: topic.clone(),
                        channel: channel.clone(),
                        id,
                    });
                }
                self.emit(now, EventKind::Dropped { topic, channel, id });
            }
        }
    }

    /// The last ticket handed out with a [`StoreOp::Publish`] (0 before the first).
    pub fn last_ticket(&self) -> Ticket {
        self.last_ticket
    }

    /// The store wrote every op up to and including the publish with ticket `through` — or
    /// failed to (`Err` says why). On success the held acknowledgements go out; on failure
    /// each waiting publisher gets nsqd's fatal `E_PUB_FAILED` (`E_MPUB_FAILED`,
    /// `E_DPUB_FAILED`) instead, and the broker turns unhealthy (publishes fail at once) until
    /// [`Broker::set_health`] clears it.
    pub fn handle_stored(&mut self, now: Time, through: Ticket, result: Result<(), String>) {
        let now = self.clock.advance(now);
        let held = std::mem::take(&mut self.held_clients);
        let mut failed = Vec::new();
        let mut resume = Vec::new();
        for id in held {
            let Some(c) = self.clients.get_mut(&id) else {
                continue;
            };
            let Some(h) = c.hold.as_ref() else { continue };
            if h.until > through {
                self.held_clients.push(id);
                continue;
            }
            let h = c.hold.take().expect("hold exists");
            match &result {
                Ok(()) => {
                    if !c.out.is_empty() && !c.out_queued {
                        c.out_queued = true;
                        self.dirty.push_back(id);
                    }
                    if c.migrate_wait && !c.settling {
                        resume.push(id);
                    }
                }
                Err(_) => {
                    // Nothing from the failed response on may go out.
                    c.out.truncate(h.at);
                    failed.push((id, h.cmd));
                }
            }
        }
        // Parked transmits in their order, now that what they waited for is decided.
        let parked = std::mem::take(&mut self.parked);
        for (ticket, t) in parked {
            if ticket > through {
                self.parked.push_back((ticket, t));
            } else if result.is_ok() || matches!(t, Transmit::Close { .. }) {
                self.transmits.push_back(t);
            }
        }
        if let Err(reason) = result {
            self.health = Some(reason.clone());
            for (id, cmd) in failed {
                let e =
                    ProtocolError::fatal(store_error_code(cmd), format!("{cmd} failed {reason}"));
                self.fail(now, id, e);
            }
        }
        // Clients that waited for their output to go out before moving to another partition.
        for id in resume {
            self.resume_migration(now, id);
        }
    }

    // ---------------------------------------------------------------- partitions

    /// The next client leaving for another partition (see [`crate::partition`]). Hand it over
    /// after draining [`Broker::poll_transmit`]: what that gives for this client goes out
    /// before anything the new partition sends. Input for it that arrives meanwhile goes to
    /// the new partition too (this one no longer knows it).
    #[must_use]
    pub fn poll_migration(&mut self) -> Option<Migration> {
        self.migrations.pop_front()
    }

    /// The next publish to run on another partition; answer with
    /// [`Broker::handle_forwarded`].
    #[must_use]
    pub fn poll_forward(&mut self) -> Option<Forward> {
        self.forwards.pop_front()
    }

    /// Take in a client from another partition and run the input it brought.
    pub fn adopt(&mut self, now: Time, m: Migration) {
        let now = self.clock.advance(now);
        let mut c = *m.state;
        let id = c.id;
        let input = std::mem::take(&mut c.inbuf);
        c.settling = true;
        self.clients.insert(id, c);
        self.arm_client_timers(id, now, true);
        self.handle_bytes(now, id, &input);
    }

    /// Everything the client sent to the partition it left has arrived here: it may move again.
    pub fn settled(&mut self, now: Time, client: ClientId) {
        let now = self.clock.advance(now);
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        c.settling = false;
        if c.migrate_wait && c.hold.is_none() {
            self.resume_migration(now, client);
        }
    }

    /// The other partition's answer to a forwarded publish: `Err` says why storing it failed
    /// (the client gets nsqd's fatal `E_PUB_FAILED`, as for a local store failure).
    pub fn handle_forwarded(&mut self, now: Time, client: ClientId, result: Result<(), String>) {
        let now = self.clock.advance(now);
        let Some(cmd) = self
            .clients
            .get_mut(&client)
            .and_then(|c| c.forward_wait.take())
        else {
            return;
        };
        match result {
            Ok(()) => self.respond_stored(client, None, cmd),
            Err(reason) => {
                let e =
                    ProtocolError::fatal(store_error_code(cmd), format!("{cmd} failed {reason}"));
                self.fail(now, client, e);
                return;
            }
        }
        self.handle_bytes(now, client, &[]);
    }

    fn resume_migration(&mut self, now: Time, id: ClientId) {
        if let Some(c) = self.clients.get_mut(&id) {
            c.migrate_wait = false;
            self.handle_bytes(now, id, &[]);
        }
    }

    /// The partition that owns the topic `cmd` names, when it is not this one.
    #[inline]
    fn elsewhere(&self, cmd: &Command) -> Option<u32> {
        if self.opts.partitions <= 1 {
            return None;
        }
        let topic: &str = match cmd {
            Command::Pub { topic, .. }
            | Command::Mpub { topic, .. }
            | Command::Dpub { topic, .. } => topic,
            Command::Sub { topic, .. } => topic,
            _ => return None,
        };
        self.owner_elsewhere(topic)
    }

    /// The partition that owns `topic`, when it is not this one.
    #[inline]
    fn owner_elsewhere(&self, topic: &str) -> Option<u32> {
        if self.opts.partitions <= 1 {
            return None;
        }
        let p = partition_of(topic, self.opts.partitions);
        (p != self.opts.partition).then_some(p)
    }

    /// Run `cmd` (for a topic partition `to` owns) by moving the client there, or by
    /// forwarding the publish; `rest` is the client's input from `cmd` on.
    fn route_elsewhere(&mut self, id: ClientId, cmd: Command, to: u32, rest: &[u8]) -> Routed {
        let c = self.clients.get_mut(&id).expect("client exists");
        let sub = matches!(cmd, Command::Sub { .. });
        if sub || (c.state == ClientState::Init && !c.moved_to_publish) {
            return self.move_client(id, to, rest, !sub);
        }
        let c = self.clients.get_mut(&id).expect("client exists");
        let (topic, bodies, defer, name) = match cmd {
            Command::Pub { topic, body } => (topic, vec![body], None, "PUB"),
            Command::Mpub { topic, bodies } => (topic, bodies, None, "MPUB"),
            Command::Dpub {
                topic,
                defer_ms,
                body,
            } => (topic, vec![body], Some(dpub_defer(defer_ms)), "DPUB"),
            _ => unreachable!("only publishes are forwarded"),
        };
        c.forward_wait = Some(name);
        let n = bodies.len() as u64;
        match c.pub_counts.iter_mut().find(|(t, _)| **t == *topic) {
            Some((_, count)) => *count += n,
            None => c.pub_counts.push((Name::from(topic.as_str()), n)),
        }
        self.forwards.push_back(Forward {
            client: id,
            to,
            topic: topic.to_string(),
            bodies,
            defer,
            cmd: name,
        });
        Routed::Forwarded
    }

    /// Move client `id` to partition `to`, which runs `rest`, its input from the command on
    /// (`to_publish`: a publisher's first move, after which it forwards instead).
    fn move_client(&mut self, id: ClientId, to: u32, rest: &[u8], to_publish: bool) -> Routed {
        let c = self.clients.get_mut(&id).expect("client exists");
        // Its held output must go out from here first, and its last move must be over.
        if c.hold.is_some() || c.settling {
            c.migrate_wait = true;
            return Routed::Wait;
        }
        c.moved_to_publish |= to_publish;
        self.flush_ordered(id);
        let mut state = self.clients.remove(&id).expect("client exists");
        self.timers.remove(TIMER_HEARTBEAT | id.0);
        self.timers.remove(TIMER_READ | id.0);
        self.timers.remove(TIMER_MPUB | id.0);
        state.inbuf = rest.to_vec();
        state.last_pub = None;
        state.read_armed = None;
        state.out_queued = false;
        self.migrations.push_back(Migration {
            client: id,
            to,
            state: Box::new(state),
        });
        Routed::Moved
    }

    /// nsqd's health: `None` is OK, `Some(reason)` is unhealthy (set by a failed store write).
    pub fn health(&self) -> Option<&str> {
        self.health.as_deref()
    }

    /// Set or clear the health error (the host clears it once storage works again).
    pub fn set_health(&mut self, error: Option<String>) {
        self.health = error;
    }

    /// Restore a topic from storage (not stored again).
    pub fn restore_topic(&mut self, now: Time, topic: &str, paused: bool) {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return;
        }
        self.restoring = true;
        let name = self.get_or_create_topic(now, topic);
        self.topics.get_mut(&name).expect("topic exists").paused = paused;
        self.restoring = false;
    }

    /// Restore a channel from storage (not stored again; held messages stay held until
    /// [`Broker::finish_restore`]).
    pub fn restore_channel(&mut self, now: Time, topic: &str, channel: &str, paused: bool) {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) || !is_valid_name(channel) {
            return;
        }
        self.restoring = true;
        let t = self.get_or_create_topic(now, topic);
        let ch = self.create_channel_inner(now, &t, channel);
        self.ch(ch).paused = paused;
        self.restoring = false;
    }

    /// Restore a message from storage: into `channel` (ready, or deferred until `due`), or,
    /// with no channel, held by the topic. Later IDs of the topic are above its ID.
    pub fn restore_message(
        &mut self,
        now: Time,
        topic: &str,
        channel: Option<&str>,
        msg: Message,
        due: Option<Time>,
    ) {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return;
        }
        self.restoring = true;
        let name = self.get_or_create_topic(now, topic);
        let t = self.topics.get_mut(&name).expect("topic exists");
        t.seen_id(msg.id);
        match channel {
            None => {
                let mem = self.opts.mem_queue_size;
                if let Some(d) = due {
                    t.held_due.insert(msg.id, d);
                }
                t.queue.put(msg, mem, false);
            }
            Some(channel) if is_valid_name(channel) => {
                let ch = self.create_channel_inner(now, &name, channel);
                self.enter_channel(now, ch, msg, due);
            }
            Some(_) => {}
        }
        self.restoring = false;
    }

    /// Storage saw message IDs up to `id` for `topic` (finished ones too): later IDs must be
    /// above them.
    pub fn restore_seen_id(&mut self, now: Time, topic: &str, id: MessageId) {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return;
        }
        self.restoring = true;
        let name = self.get_or_create_topic(now, topic);
        self.topics
            .get_mut(&name)
            .expect("topic exists")
            .seen_id(id);
        self.restoring = false;
    }

    /// Restoring is done: topics hand held messages to their channels and delivery starts.
    pub fn finish_restore(&mut self, now: Time) {
        let now = self.clock.advance(now);
        let names: Vec<Name> = self.topics.keys().cloned().collect();
        for name in names {
            self.flush_topic(now, &name);
        }
    }

    /// The auth server's answer (or why there was none) for `client`.
    pub fn handle_auth_response(
        &mut self,
        now: Time,
        client: ClientId,
        answer: Result<AuthResponse, String>,
    ) {
        let now = self.clock.advance(now);
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        if !c.auth_wait {
            return;
        }
        c.auth_wait = false;
        let first = c.auth.is_none();
        let state = answer.and_then(|r| AuthState::from_response(&r, now));
        match state {
            Err(_) => {
                // nsqd logs the reason and tells the client only this.
                self.fail(
                    now,
                    client,
                    ProtocolError::fatal("E_AUTH_FAILED", "AUTH failed"),
                );
                return;
            }
            Ok(state) if first && state.permission_count() == 0 => {
                self.fail(
                    now,
                    client,
                    ProtocolError::fatal("E_UNAUTHORIZED", "AUTH no authorizations found"),
                );
                return;
            }
            Ok(state) => {
                if first {
                    let reply = serde_json::json!({
                        "identity": state.identity,
                        "identity_url": state.identity_url,
                        "permission_count": state.permission_count(),
                    });
                    let body = crate::protocol::to_go_json(&reply).expect("auth reply serialises");
                    self.send_frame(client, FRAME_TYPE_RESPONSE, &body);
                }
                if let Some(c) = self.clients.get_mut(&client) {
                    c.auth = Some(state);
                }
            }
        }
        // Carry on with whatever the client sent meanwhile.
        self.handle_bytes(now, client, &[]);
    }

    /// When [`Broker::handle_timeout`] must next be called, if anything is pending.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        self.timers.peek_key()
    }

    // ---------------------------------------------------------------- inputs

    /// The client's TLS handshake finished (the I/O layer reads the session: the subject
    /// common name of the client's certificate, which AUTH sends to the auth server as nsqd
    /// does, and the version and cipher suite that `/stats` shows).
    pub fn handle_tls_peer(&mut self, client: ClientId, peer: TlsPeer) {
        if let Some(c) = self.clients.get_mut(&client) {
            c.tls_peer = peer;
        }
    }

    /// A new connection. Its first bytes must be the V2 magic.
    pub fn connect(&mut self, now: Time, remote_address: impl Into<String>) -> ClientId {
        let now = self.clock.advance(now);
        let id = ClientId(self.next_client);
        self.next_client += self.opts.partitions.max(1) as u64;
        let c = Client::new(
            id,
            remote_address.into(),
            now,
            ClientSettings::defaults(&self.opts),
        );
        self.clients.insert(id, c);
        self.emit(now, EventKind::ClientConnected { client: id });
        // No heartbeat and no read deadline until the magic: nsqd waits for it without a
        // deadline, and its message pump (with the heartbeat ticker) starts after it.
        id
    }

    /// The transport closed. Messages the client had in flight stay in flight until they time
    /// out, as in nsqd.
    pub fn disconnect(&mut self, now: Time, client: ClientId) {
        let now = self.clock.advance(now);
        if self.clients.contains_key(&client) {
            self.remove_client(now, client, CloseReason::Disconnected, false);
        }
    }

    /// The client closed its sending side (or the whole connection). As nsqd reads on to
    /// that end: a command cut short gets the error nsqd sends when its read fails
    /// (`E_BAD_MESSAGE PUB failed to read message body`, …); then the connection closes, after
    /// the answers still owed (a publish waiting for the store is answered first).
    pub fn handle_eof(&mut self, now: Time, client: ClientId) {
        let now = self.clock.advance(now);
        // An MPUB still being published is finished first (then what followed it is read).
        if self
            .clients
            .get(&client)
            .is_some_and(|c| c.mpub_rest.is_some())
        {
            self.continue_mpub(now, client, true);
        }
        let Some(c) = self.clients.get(&client) else {
            return;
        };
        // Input waiting on something else (an auth answer, a move) is not read any more.
        let reading = c.magic_ok && !c.auth_wait && c.forward_wait.is_none() && !c.migrate_wait;
        let cut_short = reading
            .then(|| crate::protocol::decode::at_eof(&c.inbuf, self.opts.limits()))
            .flatten();
        match cut_short {
            Some(e) => {
                self.fail(now, client, e);
            }
            None => self.remove_client(now, client, CloseReason::Disconnected, true),
        }
    }

    /// Bytes from a client. Complete commands are executed; a partial one waits for more.
    pub fn handle_bytes(&mut self, now: Time, client: ClientId, data: &[u8]) {
        let now = self.clock.advance(now);
        let Some(c) = self.clients.get_mut(&client) else {
            return;
        };
        let mut buf = std::mem::take(&mut c.inbuf);
        let owned = !buf.is_empty();
        if owned {
            buf.extend_from_slice(data);
        }
        let input: &[u8] = if owned { &buf } else { data };
        let used = self.process_input(now, client, input);
        if let Some(c) = self.clients.get_mut(&client) {
            if owned {
                buf.drain(..used);
                c.inbuf = buf;
            } else {
                c.inbuf = data[used..].to_vec();
            }
        }
    }

    /// Process as many whole commands as `input` holds; returns the bytes used.
    fn process_input(&mut self, now: Time, id: ClientId, input: &[u8]) -> usize {
        let mut pos = 0;
        let Some(c) = self.clients.get_mut(&id) else {
            return 0;
        };
        if !c.magic_ok {
            if input.len() < 4 {
                return 0;
            }
            if &input[..4] != MAGIC_V2 {
                self.send_frame(id, FRAME_TYPE_ERROR, b"E_BAD_PROTOCOL");
                self.remove_client(now, id, CloseReason::BadInput, true);
                return 0;
            }
            c.magic_ok = true;
            c.read_base = now;
            pos = 4;
            self.arm_client_timers(id, now, true);
        }
        loop {
            let Some(c) = self.clients.get(&id) else {
                return pos;
            };
            if c.auth_wait || c.forward_wait.is_some() || c.migrate_wait || c.mpub_rest.is_some() {
                return pos;
            }
            let opts = &self.opts;
            if opts.auth_enabled
                && c.auth.as_ref().is_some_and(|a| a.is_expired(now))
                && needs_auth(&input[pos..])
            {
                // nsqd re-queries the auth server when the TTL has passed.
                let req = AuthRequest {
                    client: id,
                    secret: c.auth_secret.clone(),
                    remote_ip: c.remote_ip().to_string(),
                    tls: c.tls,
                    common_name: c.tls_peer.common_name.clone(),
                };
                self.auth_requests.push_back(req);
                self.clients.get_mut(&id).expect("client exists").auth_wait = true;
                return pos;
            }
            let (enabled, auth) = (opts.auth_enabled, c.auth.as_ref());
            let check = move |cmd: &str, topic: &str, channel: &str| {
                check_auth(enabled, auth, cmd, topic, channel)
            };
            let ctx = DecodeContext {
                state: c.state,
                heartbeats_enabled: c.settings.heartbeat_interval.is_some(),
                tls_ok: !opts.tls_required || c.tls,
                limits: opts.limits(),
                max_rdy_count: opts.max_rdy_count,
                max_req_timeout_ms: opts.max_req_timeout / MILLISECOND,
                check_auth: &check,
                known_topic: c.last_pub.as_ref().map(|l| &*l.name),
                mpub_walk: Some(&c.mpub_walk),
            };
            let res = match decode(&input[pos..], &ctx) {
                // For another partition's topic, whole (it goes there as a small one does).
                Ok(Decoded::LargeMpub {
                    topic,
                    mut batch,
                    len,
                }) if self.owner_elsewhere(&topic).is_some() => {
                    let bodies = batch.take(batch.len());
                    Ok(Decoded::Command(Command::Mpub { topic, bodies }, len))
                }
                res => res,
            };
            match res {
                Ok(Decoded::Incomplete) => return pos,
                Ok(Decoded::Close) => {
                    self.remove_client(now, id, CloseReason::BadInput, true);
                    return pos;
                }
                Ok(Decoded::Ignored(n)) => {
                    pos += n;
                    self.command_done(now, id);
                }
                Ok(Decoded::LargeMpub { topic, batch, len }) => {
                    pos += len;
                    if let Err(e) = self.mpub(now, id, topic, MpubPending::Batch(batch)) {
                        if !self.fail(now, id, e) {
                            return pos;
                        }
                    }
                    self.command_done(now, id);
                }
                Ok(Decoded::Command(cmd, n)) => {
                    if let Some(to) = self.elsewhere(&cmd) {
                        match self.route_elsewhere(id, cmd, to, &input[pos..]) {
                            Routed::Moved => return input.len(),
                            Routed::Wait => return pos,
                            Routed::Forwarded => {
                                pos += n;
                                self.command_done(now, id);
                                continue;
                            }
                        }
                    }
                    pos += n;
                    let (upgrades_before, parked_before) =
                        (self.transmits.len(), self.parked.len());
                    if let Err(e) = self.exec(now, id, cmd) {
                        if !self.fail(now, id, e) {
                            return pos;
                        }
                    }
                    self.command_done(now, id);
                    // After IDENTIFY negotiated a TLS or compression upgrade, anything the client
                    // sent behind it in plaintext is dropped (nsqd loses it too): it must not
                    // count as sent over TLS, nor be read as compressed.
                    // (Behind a publish still waiting for the store, the upgrade is parked.)
                    let is_upgrade = |t: &Transmit| matches!(t, Transmit::Upgrade { client, .. } if *client == id);
                    let upgraded = self.transmits.iter().skip(upgrades_before).any(is_upgrade)
                        || self
                            .parked
                            .iter()
                            .skip(parked_before)
                            .any(|(_, t)| is_upgrade(t));
                    if upgraded {
                        return input.len();
                    }
                }
                Ok(Decoded::Refused { topic, error }) => {
                    // nsqd makes the topic before it reads the messages. One another partition
                    // owns is made there: a client that is not subscribed moves there (it is
                    // closed anyway) and meets the same refusal; a subscribed one stays with
                    // its channel and forwards a publish of nothing, which makes the topic
                    // (its answer finds no client waiting).
                    match self.owner_elsewhere(&topic) {
                        None => {
                            self.topic_slot(now, &topic);
                        }
                        Some(owner) if self.clients[&id].state == ClientState::Init => {
                            return match self.move_client(id, owner, &input[pos..], true) {
                                Routed::Wait => pos,
                                _ => input.len(),
                            };
                        }
                        Some(owner) => self.forwards.push_back(Forward {
                            client: id,
                            to: owner,
                            topic: topic.to_string(),
                            bodies: Vec::new(),
                            defer: None,
                            cmd: "MPUB",
                        }),
                    }
                    self.fail(now, id, error);
                    return pos;
                }
                Err(e) => {
                    self.fail(now, id, e);
                    return pos;
                }
            }
        }
    }

    /// Send an error frame; close when fatal. Returns whether the client is still there.
    fn fail(&mut self, now: Time, id: ClientId, e: ProtocolError) -> bool {
        self.send_frame(id, FRAME_TYPE_ERROR, e.to_string().as_bytes());
        if e.fatal {
            self.remove_client(now, id, CloseReason::ProtocolError(e.to_string()), true);
            false
        } else {
            true
        }
    }

    /// A command was read: the read deadline starts again from now (one client lookup).
    fn command_done(&mut self, now: Time, id: ClientId) {
        if let Some(c) = self.clients.get_mut(&id) {
            // The front of its input moved on: an MPUB there is a new one.
            c.mpub_walk.set(Default::default());
            c.read_base = now;
            let deadline = c.read_deadline();
            arm_read(&mut self.timers, c, deadline);
        }
    }

    /// Everything due at or before `now`: deferred messages become ready, in-flight messages
    /// time out, heartbeats are sent, silent clients are closed.
    pub fn handle_timeout(&mut self, now: Time) {
        let now = self.clock.advance(now);
        while let Some(e) = self.timers.pop_due(now) {
            let key = e.item;
            let id = key & !TIMER_KIND_MASK;
            match key & TIMER_KIND_MASK {
                TIMER_CHANNEL => {
                    let ch = ChannelId(id as u32);
                    if let Some(c) = self
                        .channels
                        .get_mut(ch.0 as usize)
                        .and_then(|c| c.as_mut())
                    {
                        // Its timer entry was just taken.
                        c.armed = None;
                    }
                    self.process_channel_timers(now, ch);
                    self.rearm_channel(ch);
                }
                TIMER_HEARTBEAT => self.heartbeat(now, ClientId(id), e.key),
                TIMER_MPUB => self.continue_mpub(now, ClientId(id), false),
                TIMER_READ => {
                    let cid = ClientId(id);
                    let Some(c) = self.clients.get_mut(&cid) else {
                        continue;
                    };
                    c.read_armed = None;
                    match c.read_deadline() {
                        Some(d) if d <= now => {
                            self.remove_client(now, cid, CloseReason::ReadTimeout, true)
                        }
                        d => self.arm_read_timer(cid, d),
                    }
                }
                TIMER_SCAN => self.scan_loop(now),
                _ => unreachable!("unknown timer kind {key:#x}"),
            }
        }
    }

    // ---------------------------------------------------------------- HTTP-style API

    /// Publish bodies to a topic (nsqd's `/pub` and `/mpub`), creating it if needed.
    /// `defer` (DPUB / `/pub?defer=`) is range-checked against `max_req_timeout`.
    pub fn publish(
        &mut self,
        now: Time,
        topic: &str,
        bodies: Vec<Body>,
        defer: Option<Nanos>,
    ) -> Result<Vec<MessageId>, AdminError> {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        if let Some(d) = defer {
            if d > self.opts.max_req_timeout {
                return Err(AdminError::InvalidDefer);
            }
        }
        if self.health.is_some() {
            return Err(AdminError::Exiting);
        }
        if bodies.is_empty() {
            // (`/mpub` of no lines, or a forwarded refused MPUB): the topic is made, as nsqd's.
            self.get_or_create_topic(now, topic);
            return Ok(Vec::new());
        }
        let mut ids = Vec::with_capacity(bodies.len());
        self.publish_inner(now, topic, bodies.into_iter(), defer, None, Some(&mut ids));
        Ok(ids)
    }

    pub fn create_topic(&mut self, now: Time, topic: &str) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        self.get_or_create_topic(now, topic);
        Ok(())
    }

    pub fn delete_topic(&mut self, now: Time, topic: &str) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let name = self.topic_name(topic)?;
        self.delete_topic_inner(now, &name);
        Ok(())
    }

    pub fn empty_topic(&mut self, now: Time, topic: &str) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let name = self.topic_name(topic)?;
        let store = self.stores(&name);
        let t = self.topics.get_mut(&name).expect("topic exists");
        if store {
            let dropped = t.queue.ids().collect();
            self.store_ops.push_back(StoreOp::TopicEmptied {
                topic: name.clone(),
                dropped,
            });
        }
        let t = self.topics.get_mut(&name).expect("topic exists");
        t.queue.clear();
        t.held_due.clear();
        self.emit(now, EventKind::TopicEmptied { topic: name });
        Ok(())
    }

    pub fn pause_topic(&mut self, now: Time, topic: &str, paused: bool) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let name = self.topic_name(topic)?;
        self.topics.get_mut(&name).expect("topic exists").paused = paused;
        if self.stores(&name) {
            self.store_ops.push_back(StoreOp::TopicPaused {
                topic: name.clone(),
                paused,
            });
        }
        if paused {
            self.emit(now, EventKind::TopicPaused { topic: name });
        } else {
            self.emit(
                now,
                EventKind::TopicUnpaused {
                    topic: name.clone(),
                },
            );
            self.flush_topic(now, &name);
        }
        Ok(())
    }

    pub fn create_channel(
        &mut self,
        now: Time,
        topic: &str,
        channel: &str,
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        if !is_valid_name(channel) {
            return Err(AdminError::InvalidChannel);
        }
        let t = self.get_or_create_topic(now, topic);
        self.get_or_create_channel(now, &t, channel);
        Ok(())
    }

    /// Make several channels of `topic` at once, and only then hand them what the topic
    /// holds, so each gets a copy: nsqd creates a new topic's channels known to nsqlookupd
    /// before its first message goes anywhere. Invalid and existing names are skipped.
    pub fn create_channels(
        &mut self,
        now: Time,
        topic: &str,
        channels: &[String],
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        let t = self.get_or_create_topic(now, topic);
        for c in channels.iter().filter(|c| is_valid_name(c)) {
            self.add_channel(now, &t, c);
        }
        self.flush_topic(now, &t);
        Ok(())
    }

    pub fn delete_channel(
        &mut self,
        now: Time,
        topic: &str,
        channel: &str,
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let ch = self.channel_id(topic, channel)?;
        self.delete_channel_inner(now, ch);
        Ok(())
    }

    pub fn empty_channel(
        &mut self,
        now: Time,
        topic: &str,
        channel: &str,
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let ch = self.channel_id(topic, channel)?;
        let c = self.channels[ch.0 as usize]
            .as_mut()
            .expect("channel exists");
        if c.stored {
            let dropped = c.message_ids();
            let (topic, channel) = (c.topic.clone(), c.name.clone());
            let start = self.topics[&topic].channel_start();
            self.store_ops.push_back(StoreOp::ChannelEmptied {
                topic,
                channel,
                start,
                dropped,
            });
        }
        let c = self.channels[ch.0 as usize]
            .as_mut()
            .expect("channel exists");
        c.queue.clear();
        c.deferred.clear();
        c.in_flight.clear();
        c.loading.clear();
        let (t, n) = (c.topic.clone(), c.name.clone());
        for cid in c.clients.clone() {
            if let Some(cl) = self.clients.get_mut(&cid) {
                cl.in_flight_count = 0;
            }
        }
        self.drain_heap_trace(now, ch);
        self.emit(
            now,
            EventKind::ChannelEmptied {
                topic: t,
                channel: n,
            },
        );
        self.rearm_channel(ch);
        self.pump(now, ch);
        Ok(())
    }

    pub fn pause_channel(
        &mut self,
        now: Time,
        topic: &str,
        channel: &str,
        paused: bool,
    ) -> Result<(), AdminError> {
        let now = self.clock.advance(now);
        let ch = self.channel_id(topic, channel)?;
        let c = self.channels[ch.0 as usize]
            .as_mut()
            .expect("channel exists");
        c.paused = paused;
        let (topic, channel) = (c.topic.clone(), c.name.clone());
        if c.stored {
            self.store_ops.push_back(StoreOp::ChannelPaused {
                topic: topic.clone(),
                channel: channel.clone(),
                paused,
            });
        }
        if paused {
            self.emit(now, EventKind::ChannelPaused { topic, channel });
        } else {
            self.emit(now, EventKind::ChannelUnpaused { topic, channel });
            self.pump(now, ch);
        }
        Ok(())
    }

    // ---------------------------------------------------------------- read access

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

    // ---------------------------------------------------------------- internals

    fn emit(&mut self, at: Time, kind: EventKind) {
        if self.opts.events {
            self.events.push_back(Event { at, kind });
        }
    }

    /// Emit an event about channel `ch`, building it only when events are on (the per-message
    /// path must not pay for events nobody reads).
    #[inline]
    fn emit_ch(&mut self, at: Time, ch: ChannelId, f: impl FnOnce(Name, Name) -> EventKind) {
        if self.opts.events {
            let c = self.channels[ch.0 as usize].as_ref().expect("live channel");
            let kind = f(c.topic.clone(), c.name.clone());
            self.events.push_back(Event { at, kind });
        }
    }

    fn topic_name(&self, topic: &str) -> Result<Name, AdminError> {
        if !is_valid_name(topic) {
            return Err(AdminError::InvalidTopic);
        }
        self.topics
            .get(topic)
            .map(|t| t.name.clone())
            .ok_or(AdminError::TopicNotFound)
    }

    fn channel_id(&self, topic: &str, channel: &str) -> Result<ChannelId, AdminError> {
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

    fn ch(&mut self, id: ChannelId) -> &mut Channel {
        self.channels[id.0 as usize].as_mut().expect("live channel")
    }

    fn get_or_create_topic(&mut self, now: Time, name: &str) -> Name {
        let slot = self.topic_slot(now, name);
        self.topics.at(slot).name.clone()
    }

    /// The slot of topic `name`, made now if it does not exist.
    fn topic_slot(&mut self, now: Time, name: &str) -> u32 {
        if let Some(slot) = self.topics.slot(name) {
            return slot;
        }
        let name: Name = Arc::from(name);
        let slot = self
            .topics
            .insert(Topic::new(name.clone(), self.opts.node_id));
        if self.stores(&name) {
            self.store_ops.push_back(StoreOp::TopicCreated {
                topic: name.clone(),
            });
        }
        if self.opts.registry {
            self.registry.push_back(RegistryChange::Register {
                topic: name.clone(),
                channel: None,
            });
        }
        self.emit(now, EventKind::TopicCreated { topic: name });
        slot
    }

    fn get_or_create_channel(&mut self, now: Time, topic: &Name, name: &str) -> ChannelId {
        if let Some(&id) = self.topics[topic].channels.get(name) {
            return id;
        }
        let id = self.add_channel(now, topic, name);
        self.flush_topic(now, topic);
        id
    }

    /// Make a channel (stored, if it is) that does not exist yet, without handing it what
    /// the topic holds.
    fn add_channel(&mut self, now: Time, topic: &Name, name: &str) -> ChannelId {
        if let Some(&id) = self.topics[topic].channels.get(name) {
            return id;
        }
        let id = self.create_channel_inner(now, topic, name);
        if self.ch(id).stored && !self.restoring {
            let start = self.topics[topic].channel_start();
            let channel = self.ch(id).name.clone();
            self.store_ops.push_back(StoreOp::ChannelCreated {
                topic: topic.clone(),
                channel,
                start,
            });
        }
        id
    }

    /// Find or make a channel, without handing it held messages.
    fn create_channel_inner(&mut self, now: Time, topic: &Name, name: &str) -> ChannelId {
        if let Some(&id) = self.topics[topic].channels.get(name) {
            return id;
        }
        let name: Name = Arc::from(name);
        if self.opts.registry {
            self.registry.push_back(RegistryChange::Register {
                topic: topic.clone(),
                channel: Some(name.clone()),
            });
        }
        let mut ch = Channel::new(topic.clone(), name.clone(), self.opts.heap_trace);
        if !self.opts.e2e_percentiles.is_empty() {
            ch.e2e = Some(crate::e2e::E2eWindow::new(now, self.rng.next_u64()));
        }
        ch.stored = self.opts.durable && !ch.ephemeral && !self.topics[topic].ephemeral;
        let id = match self.free_channels.pop() {
            Some(i) => {
                self.channels[i as usize] = Some(ch);
                ChannelId(i)
            }
            None => {
                self.channels.push(Some(ch));
                ChannelId(self.channels.len() as u32 - 1)
            }
        };
        self.topics
            .get_mut(topic)
            .expect("topic exists")
            .channels
            .insert(name.clone(), id);
        self.emit(
            now,
            EventKind::ChannelCreated {
                topic: topic.clone(),
                channel: name,
            },
        );
        id
    }

    fn publish_inner(
        &mut self,
        now: Time,
        topic: &str,
        bodies: impl ExactSizeIterator<Item = Body>,
        defer: Option<Nanos>,
        from: Option<ClientId>,
        mut ids: Option<&mut Vec<MessageId>>,
    ) -> Option<Ticket> {
        let slot = self.publish_slot(now, topic, from);
        let due = defer.filter(|&d| d > 0).map(|d| now.saturating_add(d));
        let n = bodies.len() as u64;
        let t = self.topics.at(slot);
        let name = t.name.clone();
        let topic_held = t.paused || t.channels.is_empty();
        let store = self.opts.durable && !self.restoring && !t.ephemeral;
        let (mut held, mut copies, mut ticket) = (false, 0, None);
        if store {
            self.last_ticket += 1;
            ticket = Some(self.last_ticket);
            held = topic_held;
            copies = if held { 1 } else { self.stored_copies(&name) };
        }
        // The topic's channels, looked up once for the whole publish (routing a message does
        // not change them); a held topic goes through `route`, which keeps it.
        let mut chans = std::mem::take(&mut self.pub_scratch);
        chans.clear();
        chans.extend(self.topics.at(slot).channels.values().copied());
        for body in bodies {
            let t = self.topics.at_mut(slot);
            let id = t.next_id(now);
            t.message_count += 1;
            t.message_bytes += body.len() as u64;
            let size = body.len();
            let msg = Message::new(id, now, body);
            if let Some(ids) = ids.as_deref_mut() {
                ids.push(id);
            }
            if self.opts.events {
                let topic = name.clone();
                self.emit(
                    now,
                    EventKind::Published {
                        topic,
                        id,
                        size,
                        due,
                        client: from,
                    },
                );
            }
            if let Some(ticket) = ticket {
                // One op per message: no allocation beyond the queue's (a per-publish Vec
                // would leave holes between the bodies that stay in memory).
                self.store_ops.push_back(StoreOp::Publish {
                    ticket,
                    topic: name.clone(),
                    held,
                    copies,
                    due,
                    msg: msg.clone(),
                });
            }
            if topic_held {
                self.route(now, slot, msg, due, false);
            } else {
                self.fan_out(now, &chans, msg, due, false);
            }
        }
        if let Some(c) = from.and_then(|cid| self.clients.get_mut(&cid)) {
            let count = match &c.last_pub {
                Some(last) if last.slot == slot && Arc::ptr_eq(&last.name, &name) => last.count,
                _ => {
                    let count = match c.pub_counts.iter().position(|(t, _)| *t == name) {
                        Some(i) => i,
                        None => {
                            c.pub_counts.push((name.clone(), 0));
                            c.pub_counts.len() - 1
                        }
                    };
                    c.last_pub = Some(LastPub { name, slot, count });
                    count
                }
            };
            c.pub_counts[count].1 += n;
        }
        for &ch in &chans {
            self.pump(now, ch);
        }
        self.pub_scratch = chans;
        ticket
    }

    /// The slot of the topic a publish names (made now if new). A client publishing to the
    /// topic it published to last skips the search: the slot still holds that topic when
    /// it holds the very same name (the client's clone keeps the name's pointer unique).
    fn publish_slot(&mut self, now: Time, topic: &str, from: Option<ClientId>) -> u32 {
        let last = from
            .and_then(|cid| self.clients.get(&cid))
            .and_then(|c| c.last_pub.as_ref());
        if let Some(last) = last {
            if &*last.name == topic
                && self
                    .topics
                    .at_slot(last.slot)
                    .is_some_and(|t| Arc::ptr_eq(&t.name, &last.name))
            {
                return last.slot;
            }
        }
        self.topic_slot(now, topic)
    }

    /// How many of a topic's channels keep stored copies.
    fn stored_copies(&self, topic: &Name) -> u32 {
        self.topics[topic]
            .channels
            .values()
            .filter(|ch| {
                self.channels[ch.0 as usize]
                    .as_ref()
                    .is_some_and(|c| c.stored)
            })
            .count() as u32
    }

    /// Whether changes to this topic go to the store now.
    fn stores(&self, topic: &Name) -> bool {
        self.opts.durable && !self.restoring && self.topics.get(topic).is_some_and(|t| !t.ephemeral)
    }

    /// Deliver what a topic's channels can send now.
    fn pump_topic(&mut self, now: Time, topic: &Name) {
        let mut chans = std::mem::take(&mut self.scratch);
        chans.clear();
        chans.extend(self.topics[topic].channels.values().copied());
        for &ch in &chans {
            self.pump(now, ch);
        }
        self.scratch = chans;
    }

    /// Hand a message to the channels of the topic in `slot`, or hold it in the topic.
    fn route(&mut self, now: Time, slot: u32, msg: Message, due: Option<Time>, pump: bool) {
        let mem = self.opts.mem_queue_size;
        let evict = self.opts.evict_bodies && self.opts.durable;
        let t = self.topics.at_mut(slot);
        if t.paused || t.channels.is_empty() {
            let id = msg.id;
            // An ephemeral topic has no backend either: past --mem-queue-size what it holds
            // for its channels is dropped, as nsqd drops it.
            if t.ephemeral && t.queue.len() >= mem {
                let topic = t.name.clone();
                self.emit(now, EventKind::TopicDropped { topic, id });
                return;
            }
            if let Some(d) = due {
                t.held_due.insert(id, d);
            }
            let place = if t.queue.put(msg, mem, evict && !t.ephemeral) {
                Place::Backend
            } else {
                Place::Memory
            };
            if self.opts.events {
                let topic = self.topics.at(slot).name.clone();
                self.emit(now, EventKind::HeldInTopic { topic, id, place });
            }
            return;
        }
        let mut chans = std::mem::take(&mut self.scratch);
        chans.clear();
        chans.extend(t.channels.values().copied());
        self.fan_out(now, &chans, msg, due, pump);
        self.scratch = chans;
    }

    /// Give each of `chans` (a topic's channels) its copy of `msg`.
    fn fan_out(
        &mut self,
        now: Time,
        chans: &[ChannelId],
        msg: Message,
        due: Option<Time>,
        pump: bool,
    ) {
        // Every channel but the last gets a clone; the last gets the message itself.
        let mut msg = Some(msg);
        let n = chans.len();
        for (i, &ch) in chans.iter().enumerate() {
            self.ch(ch).message_count += 1;
            let m = if i + 1 == n {
                msg.take().expect("message for the last channel")
            } else {
                msg.clone().expect("message")
            };
            self.enter_channel(now, ch, m, due);
            if pump {
                self.pump(now, ch);
            }
        }
    }

    /// A message enters a channel: deferred if it is not due yet, else queued.
    fn enter_channel(&mut self, now: Time, ch: ChannelId, msg: Message, due: Option<Time>) {
        match due {
            Some(due) if due > now => {
                let evict = self.opts.evict_bodies;
                let c = self.ch(ch);
                let id = msg.id;
                let mut msg = msg;
                if evict && c.stored {
                    // The store has the body; it comes back when the message is due.
                    msg.body = crate::message::evicted_body();
                } else {
                    // It may wait long: not with the rest of its MPUB's buffer.
                    msg.body = msg.body.unshared();
                }
                c.deferred.push(due, msg);
                self.emit_ch(now, ch, |topic, channel| EventKind::Deferred {
                    topic,
                    channel,
                    id,
                    due,
                });
                self.drain_heap_trace(now, ch);
                self.rearm_channel(ch);
            }
            _ => self.queue(now, ch, msg),
        }
    }

    fn queue(&mut self, now: Time, ch: ChannelId, msg: Message) {
        let mem = self.opts.mem_queue_size;
        let evict = self.opts.evict_bodies;
        let room = if mem == 0 && self.ch(ch).ephemeral {
            self.ready_room(ch)
        } else {
            0
        };
        let c = self.ch(ch);
        let id = msg.id;
        // An ephemeral channel has no backend: nsqd drops what does not fit in memory. With
        // --mem-queue-size=0 its memory queue is unbuffered: a message is taken only by a
        // client ready for it at that moment.
        let full = if mem == 0 {
            c.paused || c.queue.len() as i64 >= room
        } else {
            c.queue.len() >= mem
        };
        if c.ephemeral && full {
            let (topic, channel) = (c.topic.clone(), c.name.clone());
            self.emit(now, EventKind::Dropped { topic, channel, id });
            return;
        }
        // Past mem_queue_size a stored copy's body waits in the store (nsqd's disk backend).
        let place = if c.queue.put(msg, mem, evict && c.stored) {
            Place::Backend
        } else {
            Place::Memory
        };
        self.emit_ch(now, ch, |topic, channel| EventKind::Queued {
            topic,
            channel,
            id,
            place,
        });
    }

    /// Hand held topic messages to its channels, if it has some and is not paused.
    fn flush_topic(&mut self, now: Time, topic: &Name) {
        let t = &self.topics[topic];
        if t.paused || t.channels.is_empty() {
            return;
        }
        let store = self.stores(topic);
        let slot = self.topics.slot(topic).expect("topic exists");
        let mut moved = Vec::new();
        loop {
            let t = self.topics.at_mut(slot);
            let Some(msg) = t.queue.pop() else { break };
            let due = t.held_due.remove(&msg.id);
            if store {
                moved.push(msg.id);
            }
            self.route(now, slot, msg, due, false);
        }
        if !moved.is_empty() {
            let copies = self.stored_copies(topic);
            self.store_ops.push_back(StoreOp::Dispatched {
                topic: topic.clone(),
                ids: moved,
                copies,
            });
        }
        self.pump_topic(now, topic);
    }

    /// How many more messages the channel's clients are ready for right now.
    fn ready_room(&self, ch: ChannelId) -> i64 {
        let Some(c) = self.channels[ch.0 as usize].as_ref() else {
            return 0;
        };
        c.clients
            .iter()
            .filter_map(|id| self.clients.get(id))
            .filter(|cl| cl.is_ready())
            .map(|cl| cl.ready_count - cl.in_flight_count as i64)
            .sum()
    }

    /// Send queued messages to ready clients, round-robin, as long as both last.
    fn pump(&mut self, now: Time, ch: ChannelId) {
        let Broker {
            channels,
            clients,
            rng,
            opts,
            events,
            dirty,
            loads,
            store_ops,
            ..
        } = self;
        let Some(c) = channels[ch.0 as usize].as_mut() else {
            return;
        };
        let mut sent = false;
        // The clients' room for messages now. Bodies fetched from the store are for it: no
        // more on their way at once than that (besides the read-ahead below). (Only evicted
        // bodies are fetched; without eviction the clients' RDY is the bound.)
        let fetching = opts.evict_bodies && opts.durable;
        let mut room: i64 = if fetching {
            c.clients
                .iter()
                .filter_map(|id| clients.get(id))
                .filter(|cl| cl.is_ready())
                .map(|cl| cl.ready_count - cl.in_flight_count as i64)
                .sum::<i64>()
        } else {
            i64::MAX
        };
        while !c.paused && !c.queue.is_empty() && !c.clients.is_empty() && room > 0 {
            let n = c.clients.len();
            let mut found = None;
            for k in 0..n {
                let idx = (c.next_client + k) % n;
                if clients.get(&c.clients[idx]).is_some_and(|cl| cl.is_ready()) {
                    found = Some(idx);
                    break;
                }
            }
            let Some(idx) = found else { break };
            if c.queue.next_is_evicted() {
                // Its body is in the store: fetch it; it is sent when it comes back (to
                // whichever client is ready then).
                if c.loading.len() as i64 >= room {
                    break; // those on their way fill the room
                }
                let msg = c.queue.pop().expect("queue not empty");
                let (id, topic, channel) = (msg.id, c.topic.clone(), c.name.clone());
                c.loading.insert(id, msg);
                loads.push_back(LoadRequest { topic, channel, id });
                continue;
            }
            c.next_client = (idx + 1) % n;
            let cid = c.clients[idx];
            let cl = clients.get_mut(&cid).expect("ready client exists");
            let mut msg = c.queue.pop().expect("queue not empty");
            room -= 1;
            let rate = cl.settings.sample_rate;
            if rate > 0 && (rng.next_u64() % 100) as i32 > rate {
                // Not sampled: gone for this channel, as in nsqd; the store lets it go too.
                if c.stored {
                    store_ops.push_back(StoreOp::Finished {
                        topic: c.topic.clone(),
                        channel: c.name.clone(),
                        id: msg.id,
                    });
                }
                if opts.events {
                    events.push_back(Event {
                        at: now,
                        kind: EventKind::Unsampled {
                            topic: c.topic.clone(),
                            channel: c.name.clone(),
                            id: msg.id,
                            client: cid,
                        },
                    });
                }
                continue;
            }
            // nsqd's `msg.Attempts++` on a uint16: the 65 536th delivery says 0.
            msg.attempts = msg.attempts.wrapping_add(1);
            let deadline = now.saturating_add(cl.settings.msg_timeout);
            encode_message_frame(cl.out_buf(), &msg);
            if !cl.out_queued {
                cl.out_queued = true;
                dirty.push_back(cid);
            }
            cl.in_flight_count += 1;
            cl.message_count += 1;
            if opts.events {
                events.push_back(Event {
                    at: now,
                    kind: EventKind::Sent {
                        topic: c.topic.clone(),
                        channel: c.name.clone(),
                        id: msg.id,
                        client: cid,
                        attempts: msg.attempts,
                        deadline,
                    },
                });
            }
            c.in_flight.push(
                deadline,
                InFlight {
                    msg,
                    client: cid,
                    delivered_at: now,
                },
            );
            sent = true;
        }
        // Read ahead: while a consumer is ready, the bodies of the next messages are fetched
        // before it asks, so one that finishes a message finds the next in memory rather
        // than waiting for the store (a round trip to its thread). Up to READ_AHEAD of them
        // at a time, fetched or on their way.
        if fetching
            && !c.paused
            && c.queue.next_is_evicted()
            && c.loading.len() + c.queue.fetched_len() < READ_AHEAD
            && c.clients
                .iter()
                .any(|id| clients.get(id).is_some_and(|cl| cl.is_ready()))
        {
            while c.loading.len() + c.queue.fetched_len() < READ_AHEAD && c.queue.next_is_evicted()
            {
                let msg = c.queue.pop().expect("a next message");
                let (id, topic, channel) = (msg.id, c.topic.clone(), c.name.clone());
                c.loading.insert(id, msg);
                loads.push_back(LoadRequest { topic, channel, id });
            }
        }
        if sent {
            self.drain_heap_trace(now, ch);
            self.rearm_channel(ch);
        }
    }

    /// Move recorded heap operations into the event stream.
    fn drain_heap_trace(&mut self, now: Time, ch: ChannelId) {
        if !self.opts.heap_trace {
            return;
        }
        let c = self.ch(ch);
        let (topic, channel) = (c.topic.clone(), c.name.clone());
        let d = c.deferred.drain_trace();
        let f = c.in_flight.drain_trace();
        for (heap, ops) in [(HeapKind::Deferred, d), (HeapKind::InFlight, f)] {
            for op in ops {
                self.emit(
                    now,
                    EventKind::Heap {
                        topic: topic.clone(),
                        channel: channel.clone(),
                        heap,
                        op,
                    },
                );
            }
        }
    }

    fn rearm_channel(&mut self, ch: ChannelId) {
        if self.opts.timer_strategy != TimerStrategy::Exact {
            return;
        }
        let key = TIMER_CHANNEL | ch.0 as u64;
        let Some(c) = self.channels[ch.0 as usize].as_mut() else {
            self.timers.remove(key);
            return;
        };
        let due = c.next_due();
        if due == c.armed {
            return;
        }
        c.armed = due;
        match due {
            Some(due) => self.timers.upsert(due, key),
            None => {
                self.timers.remove(key);
            }
        }
    }

    /// Process a channel's due deferred messages and in-flight timeouts; returns whether
    /// anything was due (nsqd's "dirty").
    fn process_channel_timers(&mut self, now: Time, ch: ChannelId) -> bool {
        if self.channels.get(ch.0 as usize).is_none_or(|c| c.is_none()) {
            return false;
        }
        let mut dirty = false;
        loop {
            let c = self.ch(ch);
            let Some(e) = c.deferred.pop_due(now) else {
                break;
            };
            dirty = true;
            let (id, due) = (e.item.id, e.key);
            self.emit_ch(now, ch, |topic, channel| EventKind::BecameDue {
                topic,
                channel,
                id,
                due,
            });
            // Its pop (take, move, each sift swap) before it is queued, so the event stream
            // tells the story in the order it happened.
            self.drain_heap_trace(now, ch);
            // An evicted body stays in the store while the message queues; the pump fetches
            // it when a consumer has room (so many falling due at once are not all loaded).
            self.queue(now, ch, e.item);
        }
        loop {
            let c = self.ch(ch);
            let Some(e) = c.in_flight.pop_due(now) else {
                break;
            };
            dirty = true;
            c.timeout_count += 1;
            let InFlight { msg, client, .. } = e.item;
            if let Some(cl) = self.clients.get_mut(&client) {
                cl.in_flight_count = cl.in_flight_count.saturating_sub(1);
            }
            let id = msg.id;
            self.emit_ch(now, ch, |topic, channel| EventKind::TimedOut {
                topic,
                channel,
                id,
                client,
            });
            self.drain_heap_trace(now, ch);
            self.queue(now, ch, msg);
        }
        if dirty {
            self.drain_heap_trace(now, ch);
            self.pump(now, ch);
        }
        dirty
    }

    /// nsqd's queueScanLoop: sample up to `queue_scan_selection_count` channels at random,
    /// process them, and go again at once while more than a quarter were dirty.
    fn scan_loop(&mut self, now: Time) {
        if now >= self.scan.next_refresh {
            self.scan.channels = (0..self.channels.len() as u32)
                .filter(|&i| self.channels[i as usize].is_some())
                .map(ChannelId)
                .collect();
            self.scan.next_refresh = now + SCAN_REFRESH;
        }
        loop {
            let n = self.scan.channels.len();
            let num = self.opts.queue_scan_selection_count.min(n);
            if num == 0 {
                break;
            }
            // A partial Fisher-Yates shuffle picks `num` distinct channels.
            let mut pool = self.scan.channels.clone();
            let mut dirty = 0;
            for i in 0..num {
                let j = i + (self.rng.next_u64() % (n - i) as u64) as usize;
                pool.swap(i, j);
                if self.process_channel_timers(now, pool[i]) {
                    dirty += 1;
                }
            }
            self.emit(
                now,
                EventKind::Scan {
                    channels: num,
                    dirty,
                },
            );
            if dirty * 4 <= num {
                break;
            }
        }
        self.timers.upsert(now + SCAN_INTERVAL, TIMER_SCAN);
    }

    fn heartbeat(&mut self, now: Time, id: ClientId, was_due: Time) {
        let Some(c) = self.clients.get(&id) else {
            return;
        };
        let Some(hb) = c.settings.heartbeat_interval else {
            return;
        };
        self.send_frame(id, FRAME_TYPE_RESPONSE, HEARTBEAT);
        let mut next = was_due.saturating_add(hb);
        if next <= now {
            next = now.saturating_add(hb);
        }
        self.timers.upsert(next, TIMER_HEARTBEAT | id.0);
    }

    fn arm_client_timers(&mut self, id: ClientId, now: Time, reset_heartbeat: bool) {
        let Some(c) = self.clients.get(&id) else {
            return;
        };
        let (hb, read) = (c.settings.heartbeat_interval, c.read_deadline());
        self.arm_read_timer(id, read);
        if reset_heartbeat {
            match hb {
                Some(hb) => self
                    .timers
                    .upsert(now.saturating_add(hb), TIMER_HEARTBEAT | id.0),
                None => {
                    self.timers.remove(TIMER_HEARTBEAT | id.0);
                }
            }
        }
    }

    /// Arm a client's read timer for `deadline`. A deadline that only moved later (every
    /// command moves it) leaves an armed timer as it is: when that fires, it is re-armed.
    fn arm_read_timer(&mut self, id: ClientId, deadline: Option<Time>) {
        if let Some(c) = self.clients.get_mut(&id) {
            arm_read(&mut self.timers, c, deadline);
        }
    }

    fn send_frame(&mut self, id: ClientId, frame_type: i32, data: &[u8]) {
        if let Some(c) = self.clients.get_mut(&id) {
            push_frame(&mut self.dirty, c, frame_type, data);
        }
    }

    /// Move a client's pending bytes into the ordered queue (before an upgrade or close).
    fn flush_ordered(&mut self, id: ClientId) {
        if let Some(c) = self.clients.get_mut(&id) {
            if !c.out.is_empty() {
                let data = c.take_out();
                self.push_ordered(Transmit::Data { client: id, data });
                // What was held is parked now; later output is held behind it.
                if let Some(h) = self.clients.get_mut(&id).and_then(|c| c.hold.as_mut()) {
                    h.at = 0;
                }
            }
        }
    }

    /// Queue an ordered transmit, parked behind the store when the client's output is held.
    fn push_ordered(&mut self, t: Transmit) {
        let client = match &t {
            Transmit::Data { client, .. }
            | Transmit::Upgrade { client, .. }
            | Transmit::Close { client }
            | Transmit::WriteTimeout { client, .. } => *client,
        };
        let waiting = self
            .clients
            .get(&client)
            .and_then(|c| c.hold.as_ref().map(|h| h.until))
            .or_else(|| {
                self.parked
                    .iter()
                    .rev()
                    .find(|(_, p)| {
                        matches!(p, Transmit::Data { client: c, .. }
                            | Transmit::Upgrade { client: c, .. }
                            | Transmit::Close { client: c } if *c == client)
                    })
                    .map(|(k, _)| *k)
            });
        match waiting {
            Some(k) => self.parked.push_back((k, t)),
            None => self.transmits.push_back(t),
        }
    }

    /// Forget a client: unsubscribe (deleting an ephemeral channel it leaves empty), cancel its
    /// timers, and (when `close`) ask the transport to close after what was already queued.
    fn remove_client(&mut self, now: Time, id: ClientId, reason: CloseReason, close: bool) {
        self.flush_ordered(id);
        let Some(c) = self.clients.remove(&id) else {
            return;
        };
        if close {
            self.push_ordered(Transmit::Close { client: id });
        }
        self.timers.remove(TIMER_HEARTBEAT | id.0);
        self.timers.remove(TIMER_READ | id.0);
        self.timers.remove(TIMER_MPUB | id.0);
        self.emit(now, EventKind::ClientClosed { client: id, reason });
        if let Some(ch) = c.channel {
            if let Some(chan) = self.channels[ch.0 as usize].as_mut() {
                chan.remove_client(id);
                if chan.ephemeral && chan.clients.is_empty() {
                    self.delete_channel_inner(now, ch);
                }
            }
        }
    }

    fn delete_channel_inner(&mut self, now: Time, ch: ChannelId) {
        let Some(c) = self.channels[ch.0 as usize].take() else {
            return;
        };
        self.free_channels.push(ch.0);
        self.timers.remove(TIMER_CHANNEL | ch.0 as u64);
        self.scan.channels.retain(|&x| x != ch);
        let topic = c.topic.clone();
        if let Some(t) = self.topics.get_mut(&topic) {
            t.channels.remove(&c.name);
        }
        if self.opts.registry {
            self.registry.push_back(RegistryChange::Unregister {
                topic: topic.clone(),
                channel: Some(c.name.clone()),
            });
        }
        if c.stored {
            self.store_ops.push_back(StoreOp::ChannelDeleted {
                topic: topic.clone(),
                channel: c.name.clone(),
                dropped: c.message_ids(),
            });
        }
        self.emit(
            now,
            EventKind::ChannelDeleted {
                topic: topic.clone(),
                channel: c.name.clone(),
            },
        );
        for cid in c.clients {
            if let Some(cl) = self.clients.get_mut(&cid) {
                cl.channel = None;
            }
            self.remove_client(now, cid, CloseReason::ChannelDeleted, true);
        }
        if let Some(t) = self.topics.get(&topic) {
            if t.ephemeral && t.channels.is_empty() {
                self.delete_topic_inner(now, &topic);
            }
        }
    }

    fn delete_topic_inner(&mut self, now: Time, topic: &Name) {
        let stored = self.stores(topic);
        let Some(t) = self.topics.get(topic) else {
            return;
        };
        let chans: Vec<ChannelId> = t.channels.values().copied().collect();
        // Mark non-ephemeral so deleting its last channel does not recurse.
        for ch in chans {
            if let Some(t) = self.topics.get_mut(topic) {
                t.ephemeral = false;
            }
            self.delete_channel_inner(now, ch);
        }
        if self.topics.remove(topic).is_some() {
            if self.opts.registry {
                self.registry.push_back(RegistryChange::Unregister {
                    topic: topic.clone(),
                    channel: None,
                });
            }
            if stored {
                self.store_ops.push_back(StoreOp::TopicDeleted {
                    topic: topic.clone(),
                });
            }
            self.emit(
                now,
                EventKind::TopicDeleted {
                    topic: topic.clone(),
                },
            );
        }
    }

    // ---------------------------------------------------------------- commands

    fn exec(&mut self, now: Time, id: ClientId, cmd: Command) -> Result<(), ProtocolError> {
        match cmd {
            Command::Nop => Ok(()),
            Command::Identify(body) => self.identify(now, id, &body),
            Command::Auth(secret) => {
                let enabled = self.opts.auth_enabled;
                let c = self.clients.get_mut(&id).expect("client exists");
                if c.auth.is_some() {
                    return Err(ProtocolError::fatal("E_INVALID", "AUTH already set"));
                }
                if !enabled {
                    return Err(ProtocolError::fatal("E_AUTH_DISABLED", "AUTH disabled"));
                }
                c.auth_wait = true;
                c.auth_secret = secret.clone();
                let req = AuthRequest {
                    client: id,
                    secret,
                    remote_ip: c.remote_ip().to_string(),
                    tls: c.tls,
                    common_name: c.tls_peer.common_name.clone(),
                };
                self.auth_requests.push_back(req);
                Ok(())
            }
            Command::Sub { topic, channel } => self.sub(now, id, &topic, &channel),
            Command::Pub { topic, body } => {
                self.check_health("PUB")?;
                let t =
                    self.publish_inner(now, &topic, std::iter::once(body), None, Some(id), None);
                self.respond_stored(id, t, "PUB");
                Ok(())
            }
            Command::Mpub { topic, bodies } => {
                self.mpub(now, id, topic, MpubPending::List(bodies.into_iter()))
            }
            Command::Dpub {
                topic,
                defer_ms,
                body,
            } => {
                let defer = dpub_defer(defer_ms);
                self.check_health("DPUB")?;
                let t = self.publish_inner(
                    now,
                    &topic,
                    std::iter::once(body),
                    Some(defer),
                    Some(id),
                    None,
                );
                self.respond_stored(id, t, "DPUB");
                Ok(())
            }
            Command::Rdy(n) => {
                let c = self.clients.get_mut(&id).expect("client exists");
                c.ready_count = n;
                let ch = c.channel;
                self.emit(
                    now,
                    EventKind::ClientReady {
                        client: id,
                        count: n,
                    },
                );
                if let Some(ch) = ch {
                    self.pump(now, ch);
                }
                Ok(())
            }
            Command::Fin(raw) => self.fin(now, id, &raw),
            Command::Req {
                id: raw,
                timeout_ms,
            } => self.req(now, id, &raw, timeout_ms),
            Command::Touch(raw) => self.touch(now, id, &raw),
            Command::Cls => {
                let c = self.clients.get_mut(&id).expect("client exists");
                c.ready_count = 0;
                c.state = ClientState::Closing;
                self.send_frame(id, FRAME_TYPE_RESPONSE, CLOSE_WAIT);
                self.emit(now, EventKind::ClientClosing { client: id });
                Ok(())
            }
        }
    }

    /// An MPUB: published [`MPUB_STEP`](crate::protocol::decode::MPUB_STEP) messages at a time. Between steps the broker serves
    /// its other clients: a 5 MiB MPUB of a million one-byte messages held every client of
    /// its partition for 458 ms (nsqd: 14 ms); a step takes a millisecond or two. Its
    /// messages keep their order, its `OK` comes once the last step is stored, and the
    /// client's further input waits for it; another publisher's messages may come between
    /// its steps (nsqd publishes it under the topic's lock).
    fn mpub(
        &mut self,
        now: Time,
        id: ClientId,
        topic: crate::protocol::command::TopicName,
        mut bodies: MpubPending,
    ) -> Result<(), ProtocolError> {
        self.check_health("MPUB")?;
        let step = bodies.step();
        let t = self.publish_inner(now, &topic, step, None, Some(id), None);
        if bodies.is_empty() {
            self.respond_stored(id, t, "MPUB");
        } else if let Some(c) = self.clients.get_mut(&id) {
            c.mpub_rest = Some(Box::new(crate::client::MpubRest {
                topic,
                bodies,
                ticket: t,
            }));
            // Due at once, but not in this call: what waits meanwhile goes first.
            self.timers.push(now + 1, TIMER_MPUB | id.0);
        }
        Ok(())
    }

    /// The next step of a large MPUB; with `to_end`, all of it. Once it is all published,
    /// its `OK` waits for the store and the client's input is read again.
    fn continue_mpub(&mut self, now: Time, id: ClientId, to_end: bool) {
        let Some(mut rest) = self.clients.get_mut(&id).and_then(|c| c.mpub_rest.take()) else {
            return;
        };
        loop {
            if let Err(e) = self.check_health("MPUB") {
                self.fail(now, id, e);
                return;
            }
            let step = rest.bodies.step();
            let t = self.publish_inner(now, &rest.topic, step, None, Some(id), None);
            rest.ticket = t.or(rest.ticket);
            if rest.bodies.is_empty() {
                self.respond_stored(id, rest.ticket, "MPUB");
                // Carry on with whatever the client sent meanwhile.
                self.handle_bytes(now, id, &[]);
                return;
            }
            if !to_end {
                break;
            }
        }
        if let Some(c) = self.clients.get_mut(&id) {
            c.mpub_rest = Some(rest);
            self.timers.push(now + 1, TIMER_MPUB | id.0);
        }
    }

    /// While storage is failing, publishes fail at once (nsqd: every failed put).
    fn check_health(&self, cmd: &'static str) -> Result<(), ProtocolError> {
        match &self.health {
            None => Ok(()),
            Some(reason) => Err(ProtocolError::fatal(
                store_error_code(cmd),
                format!("{cmd} failed {reason}"),
            )),
        }
    }

    /// Answer a publish with `OK`, held until the store has it when it went to the store.
    fn respond_stored(&mut self, id: ClientId, ticket: Option<Ticket>, cmd: &'static str) {
        let Some(c) = self.clients.get_mut(&id) else {
            return;
        };
        let at = c.out.len();
        push_frame(&mut self.dirty, c, FRAME_TYPE_RESPONSE, OK);
        let Some(ticket) = ticket else {
            return;
        };
        match &mut c.hold {
            Some(h) => h.until = ticket,
            None => {
                c.hold = Some(Hold {
                    until: ticket,
                    at,
                    cmd,
                });
                self.held_clients.push(id);
            }
        }
    }

    fn identify(&mut self, now: Time, id: ClientId, body: &[u8]) -> Result<(), ProtocolError> {
        let data = IdentifyData::parse(body)?;
        let opts = &self.opts;
        let c = self.clients.get_mut(&id).expect("client exists");
        c.identify = IdentifyData {
            client_id: data.client_id.clone(),
            hostname: data.hostname.clone(),
            user_agent: data.user_agent.clone(),
            ..c.identify.clone()
        };
        let heartbeat_was = c.settings.heartbeat_interval;
        c.settings
            .apply(&data, opts)
            .map_err(|e| ProtocolError::fatal("E_BAD_BODY", format!("IDENTIFY {e}")))?;
        let s = c.settings.clone();
        if s.heartbeat_interval != heartbeat_was {
            self.transmits.push_back(Transmit::WriteTimeout {
                client: id,
                timeout: s.heartbeat_interval,
            });
        }
        self.emit(
            now,
            EventKind::ClientIdentified {
                client: id,
                client_id: data.client_id.clone(),
                hostname: data.hostname.clone(),
                user_agent: data.user_agent.clone(),
                msg_timeout: s.msg_timeout,
                heartbeat_interval: s.heartbeat_interval,
            },
        );
        self.arm_client_timers(id, now, true);
        if !data.feature_negotiation {
            self.send_frame(id, FRAME_TYPE_RESPONSE, OK);
            return Ok(());
        }
        let (resp, up) = IdentifyResponse::negotiate(&data, &s, &self.opts)?;
        let json = crate::protocol::to_go_json(&resp).expect("identify reply serialises");
        self.send_frame(id, FRAME_TYPE_RESPONSE, &json);
        let c = self.clients.get_mut(&id).expect("client exists");
        let Upgrades {
            tls,
            snappy,
            deflate,
        } = up;
        c.tls = tls;
        c.snappy = snappy;
        c.deflate = deflate.is_some();
        for u in [
            tls.then_some(Upgrade::Tls),
            snappy.then_some(Upgrade::Snappy),
            deflate.map(|level| Upgrade::Deflate { level }),
        ]
        .into_iter()
        .flatten()
        {
            self.flush_ordered(id);
            self.push_ordered(Transmit::Upgrade {
                client: id,
                upgrade: u,
            });
            self.send_frame(id, FRAME_TYPE_RESPONSE, OK);
            self.flush_ordered(id);
        }
        Ok(())
    }

    fn sub(
        &mut self,
        now: Time,
        id: ClientId,
        topic: &str,
        channel: &str,
    ) -> Result<(), ProtocolError> {
        let t = self.get_or_create_topic(now, topic);
        let ch = self.get_or_create_channel(now, &t, channel);
        let max = self.opts.max_channel_consumers;
        let c = self.ch(ch);
        if max != 0 && c.clients.len() >= max {
            return Err(ProtocolError::fatal(
                "E_SUB_FAILED",
                format!("SUB failed consumers for {topic}:{channel} exceeds limit of {max}"),
            ));
        }
        c.clients.push(id);
        let (tn, cn) = (c.topic.clone(), c.name.clone());
        let cl = self.clients.get_mut(&id).expect("client exists");
        cl.state = ClientState::Subscribed;
        cl.channel = Some(ch);
        self.send_frame(id, FRAME_TYPE_RESPONSE, OK);
        self.emit(
            now,
            EventKind::ClientSubscribed {
                client: id,
                topic: tn,
                channel: cn,
            },
        );
        Ok(())
    }

    /// Find an in-flight message owned by `client`, or nsqd's error text.
    fn owned_in_flight(
        &mut self,
        id: ClientId,
        raw: &[u8; 16],
    ) -> Result<(ChannelId, MessageId), String> {
        let ch = self
            .clients
            .get(&id)
            .and_then(|c| c.channel)
            .ok_or_else(|| "ID not in flight".to_string())?;
        let mid = MessageId::from_hex(raw).ok_or_else(|| "ID not in flight".to_string())?;
        match self.ch(ch).in_flight_owner(mid) {
            None => Err("ID not in flight".into()),
            Some(owner) if owner != id => Err("client does not own message".into()),
            Some(_) => Ok((ch, mid)),
        }
    }

    fn fin(&mut self, now: Time, id: ClientId, raw: &[u8; 16]) -> Result<(), ProtocolError> {
        let failed = |e: &str| {
            ProtocolError::soft(
                "E_FIN_FAILED",
                format!("FIN {} failed {e}", String::from_utf8_lossy(raw)),
            )
        };
        // The hot path: one client lookup, and one index lookup finds, checks the owner and
        // removes.
        let cl = self
            .clients
            .get_mut(&id)
            .ok_or_else(|| failed("ID not in flight"))?;
        let ch = cl.channel.ok_or_else(|| failed("ID not in flight"))?;
        let mid = MessageId::from_hex(raw).ok_or_else(|| failed("ID not in flight"))?;
        let window = self.opts.e2e_window;
        let c = self.channels[ch.0 as usize]
            .as_mut()
            .expect("a subscribed client's channel exists");
        let done = match c.in_flight.remove_if(mid.0, |f| f.client == id) {
            Ok(e) => e,
            Err(false) => return Err(failed("ID not in flight")),
            Err(true) => return Err(failed("client does not own message")),
        };
        if let Some(w) = c.e2e.as_mut() {
            w.insert(now, now.saturating_sub(done.item.msg.timestamp), window);
        }
        if c.stored {
            let (topic, channel) = (c.topic.clone(), c.name.clone());
            self.store_ops.push_back(StoreOp::Finished {
                topic,
                channel,
                id: mid,
            });
        }
        cl.in_flight_count = cl.in_flight_count.saturating_sub(1);
        cl.finish_count += 1;
        self.emit_ch(now, ch, |topic, channel| EventKind::Finished {
            topic,
            channel,
            id: mid,
            client: id,
        });
        self.drain_heap_trace(now, ch);
        self.rearm_channel(ch);
        self.pump(now, ch);
        Ok(())
    }

    fn req(
        &mut self,
        now: Time,
        id: ClientId,
        raw: &[u8; 16],
        timeout_ms: u64,
    ) -> Result<(), ProtocolError> {
        // nsqd: time.Duration(ms) * time.Millisecond, clamped to 0..=max-req-timeout.
        let ns = (timeout_ms as i64).wrapping_mul(MILLISECOND as i64);
        let delay = if ns < 0 {
            0
        } else {
            (ns as u64).min(self.opts.max_req_timeout)
        };
        let (ch, mid) = self.owned_in_flight(id, raw).map_err(|e| {
            ProtocolError::soft(
                "E_REQ_FAILED",
                format!("REQ {} failed {e}", String::from_utf8_lossy(raw)),
            )
        })?;
        let c = self.ch(ch);
        let e = c.in_flight.remove(mid.0).expect("owned in-flight exists");
        c.requeue_count += 1;
        let cl = self.clients.get_mut(&id).expect("client exists");
        cl.in_flight_count = cl.in_flight_count.saturating_sub(1);
        cl.requeue_count += 1;
        self.emit_ch(now, ch, |topic, channel| EventKind::Requeued {
            topic,
            channel,
            id: mid,
            client: id,
            delay,
        });
        let due = (delay > 0).then(|| now.saturating_add(delay));
        if let Some(due) = due {
            let c = self.ch(ch);
            if c.stored {
                let (topic, channel) = (c.topic.clone(), c.name.clone());
                self.store_ops.push_back(StoreOp::Requeued {
                    topic,
                    channel,
                    id: mid,
                    due,
                });
            }
        }
        self.enter_channel(now, ch, e.item.msg, due);
        self.drain_heap_trace(now, ch);
        self.rearm_channel(ch);
        self.pump(now, ch);
        Ok(())
    }

    fn touch(&mut self, now: Time, id: ClientId, raw: &[u8; 16]) -> Result<(), ProtocolError> {
        let (ch, mid) = self.owned_in_flight(id, raw).map_err(|e| {
            ProtocolError::soft(
                "E_TOUCH_FAILED",
                format!("TOUCH {} failed {e}", String::from_utf8_lossy(raw)),
            )
        })?;
        let msg_timeout = self.clients[&id].settings.msg_timeout;
        let max = self.opts.max_msg_timeout;
        let c = self.ch(ch);
        let delivered = c
            .in_flight
            .get(mid.0)
            .expect("owned in-flight exists")
            .item
            .delivered_at;
        let mut deadline = now.saturating_add(msg_timeout);
        if deadline.saturating_sub(delivered) >= max {
            deadline = delivered.saturating_add(max);
        }
        c.in_flight.rekey(mid.0, deadline);
        self.emit_ch(now, ch, |topic, channel| EventKind::Touched {
            topic,
            channel,
            id: mid,
            client: id,
            deadline,
        });
        self.drain_heap_trace(now, ch);
        self.rearm_channel(ch);
        Ok(())
    }
}

/// nsqd's `CheckAuth`.
fn check_auth(
    enabled: bool,
    auth: Option<&AuthState>,
    cmd: &str,
    topic: &str,
    channel: &str,
) -> Result<(), ProtocolError> {
    if !enabled {
        return Ok(());
    }
    let Some(a) = auth else {
        return Err(ProtocolError::fatal(
            "E_AUTH_FIRST",
            format!("AUTH required before {cmd}"),
        ));
    };
    if a.is_allowed(topic, channel) {
        Ok(())
    } else {
        Err(ProtocolError::fatal(
            "E_UNAUTHORIZED",
            format!(
                "AUTH failed for {cmd} on {} {}",
                crate::protocol::error::go_quote(topic),
                crate::protocol::error::go_quote(channel)
            ),
        ))
    }
}

/// Whether the command at the front of `input` is one nsqd checks authorizations for.
fn needs_auth(input: &[u8]) -> bool {
    let name = input
        .split(|&c| c == b' ' || c == b'\n')
        .next()
        .unwrap_or_default();
    input.contains(&b'\n') && matches!(name, b"SUB" | b"PUB" | b"MPUB" | b"DPUB")
}

/// DPUB's delay as nsqd computes it (and the decoder's range check):
/// `time.Duration(ms) * time.Millisecond`, which wraps in int64.
fn dpub_defer(defer_ms: u64) -> Nanos {
    (defer_ms as i64).wrapping_mul(MILLISECOND as i64) as u64
}

/// What became of a command for a topic another partition owns.
enum Routed {
    /// The client (and the rest of its input) left for that partition.
    Moved,
    /// The client waits here until it can move; the command runs then.
    Wait,
    /// The publish went to that partition; the client's input waits for the answer.
    Forwarded,
}

/// nsqd's error code for a failed put, by command.
fn store_error_code(cmd: &str) -> &'static str {
    match cmd {
        "MPUB" => "E_MPUB_FAILED",
        "DPUB" => "E_DPUB_FAILED",
        _ => "E_PUB_FAILED",
    }
}

/// Arm client `c`'s read timer for `deadline` (see [`Broker::arm_read_timer`]).
fn arm_read(timers: &mut IndexedQueue<u64>, c: &mut Client, deadline: Option<Time>) {
    match (deadline, c.read_armed) {
        (Some(d), Some(armed)) if armed <= d => {}
        (Some(d), _) => {
            c.read_armed = Some(d);
            timers.upsert(d, TIMER_READ | c.id.0);
        }
        (None, None) => {}
        (None, Some(_)) => {
            c.read_armed = None;
            timers.remove(TIMER_READ | c.id.0);
        }
    }
}

/// Append a frame to client `c`'s output, and queue the client for sending if it was not.
fn push_frame(dirty: &mut VecDeque<ClientId>, c: &mut Client, frame_type: i32, data: &[u8]) {
    encode_frame(c.out_buf(), frame_type, data);
    if !c.out_queued {
        c.out_queued = true;
        dirty.push_back(c.id);
    }
}
