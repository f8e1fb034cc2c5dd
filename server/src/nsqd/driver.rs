//! The broker tasks: one per partition (see `nsqlab_core::partition`), each the one owner of
//! its partition's state — the topics that hash to it and the clients that use them.
//!
//! Connections and HTTP handlers talk to them over channels; each feeds its core with real
//! time, sleeps until the core's `poll_timeout()`, and hands each client's output to that
//! client's connection task. No lock is held on the per-message path.
//!
//! # Moving a client
//! A partition's core hands over a client that subscribes to (or first publishes to) a topic
//! another partition owns. After this wake-up's output, the old partition sends the client's
//! state to the new one ([`Peer::Adopt`]), which tells the connection ([`Out::Moved`], on the
//! connection's output after everything the old partition sent it); the connection confirms
//! to the old partition ([`ToDriver::Drained`]) and sends to the new one from then on. Input
//! that reached the old partition meanwhile follows as [`Peer::Late`]; the new partition
//! holds what the connection sends it directly until [`Peer::Drained`] says nothing else is on
//! its way, so the client's input stays in order. A forwarded publish ([`Peer::Publish`]) is
//! answered ([`Peer::Published`]) after the owner's store has it.

use bytes::Bytes;
use nsqlab_core::stats::{Stats, StatsFilter};
use nsqlab_core::{
    partition_of, Broker, ClientId, Event, Forward, Migration, Time, Transmit, Upgrade,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};

/// Output for one connection, in order.
#[derive(Debug)]
pub enum Out {
    Data(Vec<u8>),
    Upgrade(Upgrade),
    Close,
    /// The client now lives in this partition: send [`ToDriver::Drained`] to the old one,
    /// then everything else to this one.
    Moved(Part),
    /// From now on a write that takes longer than this fails and closes the connection
    /// (nsqd's write deadline, the client's heartbeat interval); `None`: no limit.
    WriteTimeout(Option<Duration>),
}

/// Run a connection's write within its write deadline ([`Out::WriteTimeout`]); `None` when
/// the deadline passed first.
pub async fn within_deadline<T>(
    limit: Option<Duration>,
    write: impl std::future::Future<Output = T>,
) -> Option<T> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, write).await.ok(),
        None => Some(write.await),
    }
}

/// Work to run on the broker task with the current time.
pub type BrokerJob = Box<dyn FnOnce(&mut Broker, Time) + Send>;

/// Called once the store has written (or failed to write) what a job produced.
pub type AfterStore = Box<dyn FnOnce(Result<(), String>) + Send>;

/// Work whose answer waits for the store (an HTTP publish).
pub type StoredJob = Box<dyn FnOnce(&mut Broker, Time) -> AfterStore + Send>;

/// A request to the broker task.
pub enum ToDriver {
    Connect {
        remote: String,
        out: mpsc::UnboundedSender<Out>,
        reply: oneshot::Sender<ClientId>,
    },
    Bytes {
        client: ClientId,
        data: Bytes,
    },
    Closed {
        client: ClientId,
    },
    /// The client closed its sending side: the broker answers what it owes (or the error for
    /// a command cut short) and then closes the connection.
    Eof {
        client: ClientId,
    },
    /// The auth server's answer for a client.
    Auth {
        client: ClientId,
        answer: Result<nsqlab_core::AuthResponse, String>,
    },
    /// Run a closure on the broker (HTTP handlers, stats).
    Call(BrokerJob),
    /// Run a closure on the broker and answer after the store's next commit.
    CallStored(StoredJob),
    /// A timer is due (from the alarm thread).
    Tick,
    /// A client's TLS handshake finished: its session, and the subject common name of its
    /// certificate.
    TlsPeer {
        client: ClientId,
        peer: nsqlab_core::TlsPeer,
    },
    /// After [`Out::Moved`]: the connection sends nothing more to this partition.
    Drained {
        client: ClientId,
    },
}

/// From one partition to another.
pub enum Peer {
    /// A client moving here, with its connection's output.
    Adopt {
        migration: Migration,
        out: mpsc::UnboundedSender<Out>,
    },
    /// Input for a client that moved here, which reached the partition it left.
    Late(ToDriver),
    /// Nothing more for this client comes through the partition it left.
    Drained { client: ClientId },
    /// A publish for a client of partition `from`; answer with `Published`.
    Publish { from: u32, forward: Forward },
    Published {
        client: ClientId,
        result: Result<(), String>,
    },
}

/// One partition's broker task, for a connection.
#[derive(Clone, Debug)]
pub struct Part {
    tx: mpsc::Sender<ToDriver>,
}

impl Part {
    pub async fn send(&self, m: ToDriver) -> bool {
        self.tx.send(m).await.is_ok()
    }
}

/// A handle to the broker tasks (every partition).
#[derive(Clone)]
pub struct DriverHandle {
    parts: Arc<[mpsc::Sender<ToDriver>]>,
    next: Arc<AtomicUsize>,
    events: broadcast::Sender<Event>,
    write_timeout: Option<Duration>,
    ws: WsLimits,
}

/// What a `/ws/nsq` connection may hold of a message still arriving (see `ws.rs`).
#[derive(Debug, Clone, Copy)]
pub struct WsLimits {
    /// The largest WebSocket message (and frame): a whole command of the largest kind, an
    /// MPUB of `--max-body-size` (or a PUB of `--max-msg-size`) with its command line.
    pub max_message: usize,
    /// A connection that completes no message for this long is closed, so a message sent
    /// slowly (or never finished) is not held longer: twice `--max-heartbeat-interval`,
    /// within which a client with heartbeats answers one.
    pub idle: Duration,
}

impl DriverHandle {
    /// A new connection's write deadline until its IDENTIFY says otherwise (nsqd's default
    /// heartbeat interval, half `--client-timeout`).
    pub fn write_timeout(&self) -> Option<Duration> {
        self.write_timeout
    }

    pub fn ws_limits(&self) -> WsLimits {
        self.ws
    }

    /// The partition a new connection starts in (in turn; it moves to its topic's).
    pub fn pick(&self) -> Part {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.parts.len();
        Part {
            tx: self.parts[i].clone(),
        }
    }

    fn owner(&self, topic: &str) -> &mpsc::Sender<ToDriver> {
        &self.parts[partition_of(topic, self.parts.len() as u32) as usize]
    }

    /// Run `f` on the broker that owns `topic` and return its result.
    pub async fn call<R: Send + 'static>(
        &self,
        topic: &str,
        f: impl FnOnce(&mut Broker, Time) -> R + Send + 'static,
    ) -> Option<R> {
        call_on(self.owner(topic), f).await
    }

    /// Run `f` on every partition's broker (all at once); the results in partition order.
    pub async fn call_all<R: Send + 'static>(
        &self,
        f: impl Fn(&mut Broker, Time) -> R + Clone + Send + 'static,
    ) -> Option<Vec<R>> {
        let mut answers = Vec::with_capacity(self.parts.len());
        for tx in self.parts.iter() {
            let (job, answer) = call_job(f.clone());
            tx.send(job).await.ok()?;
            answers.push(answer);
        }
        let mut out = Vec::with_capacity(answers.len());
        for a in answers {
            out.push(a.await.ok()?);
        }
        Some(out)
    }

    /// One stats snapshot of every partition, and the health (`None`: OK).
    pub async fn stats(&self, filter: StatsFilter) -> Option<(Stats, Option<String>)> {
        let parts = self
            .call_all(move |b, _| (b.stats_part(&filter), b.health().map(str::to_owned)))
            .await?;
        let health = parts.iter().find_map(|(_, h)| h.clone());
        Some((
            Stats::merge(parts.into_iter().map(|p| p.0).collect()),
            health,
        ))
    }

    /// Run `f` on the broker that owns `topic`; the result comes back once what it changed is
    /// stored, with the store's verdict (always `Ok` without storage).
    pub async fn call_stored<R: Send + 'static>(
        &self,
        topic: &str,
        f: impl FnOnce(&mut Broker, Time) -> R + Send + 'static,
    ) -> Option<(R, Result<(), String>)> {
        let (tx, rx) = oneshot::channel();
        let job: StoredJob = Box::new(move |b: &mut Broker, now: Time| {
            let r = f(b, now);
            Box::new(move |stored: Result<(), String>| {
                let _ = tx.send((r, stored));
            }) as AfterStore
        });
        self.owner(topic)
            .send(ToDriver::CallStored(job))
            .await
            .ok()?;
        rx.await.ok()
    }

    /// Subscribe to the broker's events (the live stream). Events are produced only while
    /// someone listens.
    pub fn subscribe_events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}

/// A `Call` running `f`, and where its result arrives.
fn call_job<R: Send + 'static>(
    f: impl FnOnce(&mut Broker, Time) -> R + Send + 'static,
) -> (ToDriver, oneshot::Receiver<R>) {
    let (tx, rx) = oneshot::channel();
    let job = Box::new(move |b: &mut Broker, now: Time| {
        let _ = tx.send(f(b, now));
    });
    (ToDriver::Call(job), rx)
}

async fn call_on<R: Send + 'static>(
    tx: &mpsc::Sender<ToDriver>,
    f: impl FnOnce(&mut Broker, Time) -> R + Send + 'static,
) -> Option<R> {
    let (job, answer) = call_job(f);
    tx.send(job).await.ok()?;
    answer.await.ok()
}

/// One partition's broker and its store.
pub struct Partition {
    pub broker: Broker,
    pub store: Option<super::store::Store>,
}

/// Start one broker task per partition (partition `i` is `parts[i]`); they end when every
/// handle is dropped.
pub fn spawn(
    parts: Vec<Partition>,
    auth: super::auth::AuthConfig,
    registry: mpsc::UnboundedSender<nsqlab_core::RegistryChange>,
) -> (DriverHandle, Vec<tokio::task::JoinHandle<Broker>>) {
    let (events, _) = broadcast::channel(65_536);
    let write_timeout = parts
        .first()
        .map(|p| Duration::from_nanos(p.broker.options().default_heartbeat_interval()))
        .filter(|d| !d.is_zero());
    let ws = parts.first().map_or(
        WsLimits {
            max_message: 5 << 20,
            idle: Duration::from_secs(120),
        },
        |p| {
            let o = p.broker.options();
            let body = o.max_body_size.max(o.max_msg_size) as usize;
            WsLimits {
                max_message: body + nsqlab_core::protocol::decode::MAX_LINE_LENGTH + 8,
                idle: Duration::from_nanos(2 * o.max_heartbeat_interval)
                    .max(Duration::from_secs(1)),
            }
        },
    );
    let auth = Arc::new(auth);
    let mut mains = Vec::new();
    let mut links = Vec::new();
    let mut inputs = Vec::new();
    for _ in &parts {
        let (tx, rx) = mpsc::channel(4096);
        let (peer_tx, peer_rx) = mpsc::unbounded_channel();
        links.push(Link {
            main: tx.downgrade(),
            peer: peer_tx,
        });
        mains.push(tx);
        inputs.push((rx, peer_rx));
    }
    let links: Arc<[Link]> = links.into();
    let tasks = parts
        .into_iter()
        .zip(inputs)
        .enumerate()
        .map(|(i, (p, (rx, peer_rx)))| {
            let ctx = Ctx {
                index: i as u32,
                links: links.clone(),
                conns: HashMap::new(),
                after_store: Vec::new(),
                moved: HashMap::new(),
                arriving: HashMap::new(),
                leaving: HashMap::new(),
                migrations: Vec::new(),
                events: events.clone(),
                registry: registry.clone(),
            };
            tokio::spawn(run(p.broker, rx, peer_rx, ctx, auth.clone(), p.store))
        })
        .collect();
    let handle = DriverHandle {
        parts: mains.into(),
        next: Arc::new(AtomicUsize::new(0)),
        events,
        write_timeout,
        ws,
    };
    (handle, tasks)
}

/// How a partition reaches another.
struct Link {
    /// Weak: a partition's tasks end when the handles outside are gone.
    main: mpsc::WeakSender<ToDriver>,
    peer: mpsc::UnboundedSender<Peer>,
}

/// A partition task's host state (what the core does not own).
struct Ctx {
    index: u32,
    links: Arc<[Link]>,
    conns: HashMap<ClientId, mpsc::UnboundedSender<Out>>,
    after_store: Vec<AfterStore>,
    /// Clients that moved from here, to which partition, until their connection confirms it
    /// sends nothing more here.
    moved: HashMap<ClientId, u32>,
    /// Clients that moved here, with what their connection sent directly while input may
    /// still come through the partition they left.
    arriving: HashMap<ClientId, Vec<ToDriver>>,
    /// Clients leaving (handed over after this wake-up's transmits), with their input since.
    leaving: HashMap<ClientId, Vec<ToDriver>>,
    migrations: Vec<Migration>,
    events: broadcast::Sender<Event>,
    registry: mpsc::UnboundedSender<nsqlab_core::RegistryChange>,
}

impl Ctx {
    fn me(&self) -> mpsc::WeakSender<ToDriver> {
        self.links[self.index as usize].main.clone()
    }

    fn to_peer(&self, p: u32, m: Peer) {
        let _ = self.links[p as usize].peer.send(m);
    }
}

/// The next batch of bodies the store's loader thread read (never, without a store).
async fn loaded(store: &mut Option<super::store::Store>) -> Vec<super::store::Loaded> {
    match store {
        Some(s) => s.loaded().await,
        None => std::future::pending().await,
    }
}

/// Bodies read back from the store (or why not: the message is then dropped), in order.
fn handle_loaded(broker: &mut Broker, batch: Vec<super::store::Loaded>) {
    for (_, body) in batch.iter().flat_map(|run| &run.bodies) {
        if let Err(e) = body {
            tracing::error!("storage: {e}");
        }
    }
    broker.handle_loaded(crate::clock::now(), batch);
}

async fn run(
    mut broker: Broker,
    mut rx: mpsc::Receiver<ToDriver>,
    mut peer_rx: mpsc::UnboundedReceiver<Peer>,
    mut ctx: Ctx,
    auth: Arc<super::auth::AuthConfig>,
    mut store: Option<super::store::Store>,
) -> Broker {
    let mut auth_start = 0usize;
    let me = ctx.me();
    let alarm = Alarm::start(me.clone());
    let mut last_probe = std::time::Instant::now();
    loop {
        broker.set_events(ctx.events.receiver_count() > 0);
        // The alarm thread wakes us (with a Tick) when the next timer is due.
        alarm.set(broker.poll_timeout());
        // While storage is failing, wake every second to see whether it works again.
        let unhealthy = store.is_some() && broker.health().is_some();
        // FINs a commit left unwritten are written when they are due (see `Store::commit`).
        let fins_due = store.as_ref().and_then(|s| s.fins_due());
        let fins = async {
            match fins_due {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        let probe = async {
            if unhealthy {
                tokio::time::sleep(PROBE_INTERVAL).await
            } else {
                std::future::pending().await
            }
        };
        let m = tokio::select! {
            biased;
            p = peer_rx.recv() => {
                if let Some(p) = p {
                    handle_peer(&mut broker, &mut ctx, p);
                }
                Some(ToDriver::Tick)
            }
            batch = loaded(&mut store) => {
                handle_loaded(&mut broker, batch);
                Some(ToDriver::Tick)
            }
            m = rx.recv() => m,
            _ = probe => Some(ToDriver::Tick),
            _ = fins => Some(ToDriver::Tick),
        };
        let Some(m) = m else { break };
        // What other partitions sent comes first: a client moving here is adopted before
        // its connection's first direct input is read.
        while let Ok(p) = peer_rx.try_recv() {
            handle_peer(&mut broker, &mut ctx, p);
        }
        handle(&mut broker, &mut ctx, m);
        // Take what else is waiting before writing anything out: one wake-up, many inputs.
        for _ in 0..1024 {
            match rx.try_recv() {
                Ok(m) => {
                    while let Ok(p) = peer_rx.try_recv() {
                        handle_peer(&mut broker, &mut ctx, p);
                    }
                    handle(&mut broker, &mut ctx, m)
                }
                Err(_) => break,
            }
        }
        let now = crate::clock::now();
        if broker.poll_timeout().is_some_and(|t| t <= now) {
            broker.handle_timeout(now);
        }
        // Group commit: everything this wake-up changed, in one write per topic; the
        // publishers' OKs go out only after it.
        let stored = match store.as_mut() {
            Some(s) => commit(&mut broker, s),
            None => Ok(()),
        };
        for reply in ctx.after_store.drain(..) {
            reply(stored.clone());
        }
        // Evicted bodies (deferred messages coming due, a backlog past --mem-queue-size) are
        // read back on the loader thread; they arrive as a wake-up of their own.
        if let Some(s) = store.as_mut() {
            loop {
                let failed = s.request_loads(std::iter::from_fn(|| broker.poll_load_run()));
                if failed.is_empty() {
                    break;
                }
                handle_loaded(&mut broker, failed);
            }
        }
        if let Some(s) = store.as_mut() {
            if broker.health().is_some() && last_probe.elapsed() >= PROBE_INTERVAL {
                last_probe = std::time::Instant::now();
                match s.probe() {
                    Ok(()) => {
                        tracing::info!("storage: writable again; healthy");
                        broker.set_health(None);
                    }
                    Err(e) => tracing::debug!("storage: still failing: {e}"),
                }
            }
        }
        flush_outputs(&mut broker, &mut ctx);
        while let Some(req) = broker.poll_auth_request() {
            // The HTTP query runs on its own task; the answer comes back as input.
            let (cfg, me) = (auth.clone(), me.clone());
            auth_start = auth_start.wrapping_add(1);
            let start = auth_start;
            tokio::spawn(async move {
                let answer = super::auth::query(&cfg, &req, start).await;
                if let Some(tx) = me.upgrade() {
                    let _ = tx
                        .send(ToDriver::Auth {
                            client: req.client,
                            answer,
                        })
                        .await;
                }
            });
        }
        // More work is due at once (a large MPUB's next step): let the tasks this wake-up
        // woke run first. A task woken from here waits in this worker's LIFO slot, which no
        // other worker takes, and a loop that always finds input yields only when its
        // cooperative budget runs out, 128 wake-ups later: another client's OK waited 70 ms.
        if broker
            .poll_timeout()
            .is_some_and(|t| t <= crate::clock::now())
        {
            tokio::task::yield_now().await;
        }
    }
    alarm.stop();
    if let Some(mut s) = store {
        let _ = commit(&mut broker, &mut s);
        s.close();
    }
    broker
}

/// Hand the core's output to the connections; then move the clients that leave (after what
/// this partition sent them) and forward publishes to their topics' partitions.
fn flush_outputs(broker: &mut Broker, ctx: &mut Ctx) {
    while let Some(t) = broker.poll_transmit() {
        let (client, out) = match t {
            Transmit::Data { client, data } => (client, Out::Data(data)),
            Transmit::Upgrade { client, upgrade } => (client, Out::Upgrade(upgrade)),
            Transmit::Close { client } => (client, Out::Close),
            Transmit::WriteTimeout { client, timeout } => {
                (client, Out::WriteTimeout(timeout.map(Duration::from_nanos)))
            }
        };
        let close = matches!(out, Out::Close);
        if let Some(tx) = ctx.conns.get(&client) {
            let _ = tx.send(out);
        }
        if close {
            ctx.conns.remove(&client);
        }
    }
    // Events too, before a client that leaves has any elsewhere.
    while let Some(c) = broker.poll_registry() {
        let _ = ctx.registry.send(c);
    }
    while let Some(e) = broker.poll_event() {
        let _ = ctx.events.send(e);
    }
    // After the transmits: what this partition sent a moving client goes out first.
    take_leavers(broker, ctx);
    for m in std::mem::take(&mut ctx.migrations) {
        let (client, to) = (m.client, m.to);
        let since = ctx.leaving.remove(&client).unwrap_or_default();
        let Some(out) = ctx.conns.remove(&client) else {
            continue;
        };
        // The new partition tells the connection (before anything it sends the client).
        ctx.to_peer(to, Peer::Adopt { migration: m, out });
        ctx.moved.insert(client, to);
        // Its input since follows it.
        for m in since {
            handle(broker, ctx, m);
        }
    }
    while let Some(forward) = broker.poll_forward() {
        let to = forward.to;
        let from = ctx.index;
        ctx.to_peer(to, Peer::Publish { from, forward });
    }
}

const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// Hand the broker's store ops to the store, write them, and tell the broker.
fn commit(broker: &mut Broker, store: &mut super::store::Store) -> Result<(), String> {
    let mut result = Ok(());
    // A failure answer can close clients, which may change more; a few rounds settle it.
    for _ in 0..4 {
        let any = store.apply_all(std::iter::from_fn(|| broker.poll_store()));
        // (With nothing new, a commit only for FINs left waiting long enough.)
        if !any
            && store
                .fins_due()
                .is_none_or(|t| t > std::time::Instant::now())
        {
            break;
        }
        let r = store.commit().map_err(|e| {
            let what = if e.is_no_room() {
                "; out of room: publishing is refused until there is room"
            } else if e.is_device_error() {
                "; the device failed: check the disk"
            } else {
                ""
            };
            tracing::error!("storage: {e}{what}");
            e.to_string()
        });
        broker.handle_stored(crate::clock::now(), broker.last_ticket(), r.clone());
        if result.is_ok() {
            result = r;
        }
    }
    result
}

/// A thread that sleeps until the broker's next timer — precisely (a condvar wait, not
/// tokio's millisecond timer wheel) — and then wakes the broker task with a `Tick`.
struct Alarm {
    shared: Arc<(Mutex<AlarmState>, Condvar)>,
}

#[derive(Default)]
struct AlarmState {
    at: Option<Time>,
    stop: bool,
}

impl Alarm {
    fn start(tx: mpsc::WeakSender<ToDriver>) -> Alarm {
        let shared = Arc::new((Mutex::new(AlarmState::default()), Condvar::new()));
        let s = shared.clone();
        std::thread::Builder::new()
            .name("nsqlab-alarm".into())
            .spawn(move || {
                let (lock, cv) = &*s;
                let mut st = lock.lock().expect("alarm lock");
                loop {
                    if st.stop {
                        return;
                    }
                    match st.at {
                        None => st = cv.wait(st).expect("alarm lock"),
                        Some(at) => {
                            let now = crate::clock::now();
                            if now >= at {
                                st.at = None;
                                drop(st);
                                match tx.upgrade() {
                                    Some(tx) => {
                                        let _ = tx.try_send(ToDriver::Tick);
                                    }
                                    None => return,
                                }
                                st = lock.lock().expect("alarm lock");
                            } else {
                                let wait = Duration::from_nanos(at - now);
                                st = cv.wait_timeout(st, wait).expect("alarm lock").0;
                            }
                        }
                    }
                }
            })
            .expect("spawn the alarm thread");
        Alarm { shared }
    }

    /// Wake the broker at `at` (or never).
    fn set(&self, at: Option<Time>) {
        let (lock, cv) = &*self.shared;
        let mut st = lock.lock().expect("alarm lock");
        if st.at != at {
            st.at = at;
            cv.notify_one();
        }
    }

    fn stop(&self) {
        let (lock, cv) = &*self.shared;
        lock.lock().expect("alarm lock").stop = true;
        cv.notify_one();
    }
}

/// The client a connection's message is about (none for calls and ticks).
fn client_of(m: &ToDriver) -> Option<ClientId> {
    match m {
        ToDriver::Bytes { client, .. }
        | ToDriver::Closed { client }
        | ToDriver::Eof { client }
        | ToDriver::TlsPeer { client, .. }
        | ToDriver::Drained { client } => Some(*client),
        _ => None,
    }
}

fn handle(broker: &mut Broker, ctx: &mut Ctx, m: ToDriver) {
    take_leavers(broker, ctx);
    let moving = !(ctx.leaving.is_empty() && ctx.moved.is_empty() && ctx.arriving.is_empty());
    if let Some(client) = client_of(&m).filter(|_| moving) {
        // It is leaving: its input waits to follow it.
        if let Some(waiting) = ctx.leaving.get_mut(&client) {
            waiting.push(m);
            return;
        }
        // It moved from here: its input follows it.
        if let Some(&to) = ctx.moved.get(&client) {
            match m {
                ToDriver::Drained { client } => {
                    ctx.moved.remove(&client);
                    ctx.to_peer(to, Peer::Drained { client });
                }
                m => {
                    if matches!(m, ToDriver::Closed { .. }) {
                        ctx.moved.remove(&client);
                    }
                    ctx.to_peer(to, Peer::Late(m));
                }
            }
            return;
        }
        // It moved here and input may still come through where it was: after that.
        if let Some(waiting) = ctx.arriving.get_mut(&client) {
            waiting.push(m);
            return;
        }
    }
    run_input(broker, ctx, m);
    take_leavers(broker, ctx);
}

fn handle_peer(broker: &mut Broker, ctx: &mut Ctx, p: Peer) {
    handle_peer_inner(broker, ctx, p);
    take_leavers(broker, ctx);
}

/// Clients the core let go: their next input (maybe in this same batch) waits with them until
/// [`flush_outputs`] hands them over.
fn take_leavers(broker: &mut Broker, ctx: &mut Ctx) {
    while let Some(m) = broker.poll_migration() {
        ctx.leaving.insert(m.client, Vec::new());
        ctx.migrations.push(m);
    }
}

fn handle_peer_inner(broker: &mut Broker, ctx: &mut Ctx, p: Peer) {
    let now = crate::clock::now();
    match p {
        Peer::Adopt { migration, out } => {
            let client = migration.client;
            let Some(tx) = ctx.me().upgrade() else {
                // Shutting down.
                let _ = out.send(Out::Close);
                return;
            };
            // On the connection's output: what the old partition sent, this, then ours.
            let _ = out.send(Out::Moved(Part { tx }));
            ctx.conns.insert(client, out);
            ctx.arriving.insert(client, Vec::new());
            broker.adopt(now, migration);
        }
        Peer::Late(m) => {
            if let ToDriver::Closed { client } = &m {
                ctx.arriving.remove(client);
            }
            run_input(broker, ctx, m);
        }
        Peer::Drained { client } => {
            broker.settled(now, client);
            // Settled, it may move on at once (a command was waiting for that): then what
            // it sent here directly follows it.
            take_leavers(broker, ctx);
            for m in ctx.arriving.remove(&client).unwrap_or_default() {
                // May move it on again (it has settled): then this routes the rest on.
                handle(broker, ctx, m);
            }
        }
        Peer::Publish { from, forward } => {
            let client = forward.client;
            let r = broker
                .publish(now, &forward.topic, forward.bodies, forward.defer)
                .map(|_| ())
                .map_err(|e| broker.health().map_or_else(|| e.to_string(), str::to_owned));
            let peer = ctx.links[from as usize].peer.clone();
            ctx.after_store.push(Box::new(move |stored| {
                let result = r.and(stored);
                let _ = peer.send(Peer::Published { client, result });
            }));
        }
        Peer::Published { client, result } => broker.handle_forwarded(now, client, result),
    }
}

fn run_input(broker: &mut Broker, ctx: &mut Ctx, m: ToDriver) {
    let now = crate::clock::now();
    match m {
        ToDriver::Connect { remote, out, reply } => {
            let id = broker.connect(now, remote);
            ctx.conns.insert(id, out);
            let _ = reply.send(id);
        }
        ToDriver::Bytes { client, data } => broker.handle_bytes(now, client, &data),
        ToDriver::Eof { client } => broker.handle_eof(now, client),
        ToDriver::Closed { client } => {
            ctx.conns.remove(&client);
            broker.disconnect(now, client);
        }
        // Not moved from here (any more): nothing to do.
        ToDriver::Drained { .. } => {}
        ToDriver::Call(f) => f(broker, now),
        ToDriver::CallStored(f) => ctx.after_store.push(f(broker, now)),
        ToDriver::Tick => {}
        ToDriver::Auth { client, answer } => broker.handle_auth_response(now, client, answer),
        ToDriver::TlsPeer { client, peer } => broker.handle_tls_peer(client, peer),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsqlab_core::protocol::{decode_frame, Command, Frame, MAGIC_V2};
    use nsqlab_core::Options;

    fn publish(topic: &str, body: &str) -> Vec<u8> {
        Command::Pub {
            topic: topic.into(),
            body: body.as_bytes().into(),
        }
        .to_bytes()
    }

    /// A partition stalled until the gate is opened (other tasks carry on meanwhile).
    fn gate() -> (std::sync::mpsc::Sender<()>, ToDriver) {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let job = Box::new(move |_: &mut Broker, _: Time| {
            let _ = tokio::task::block_in_place(|| rx.recv());
        });
        (tx, ToDriver::Call(job))
    }

    struct Conn {
        h: DriverHandle,
        part: Part,
        client: ClientId,
        out: mpsc::UnboundedReceiver<Out>,
        wire: Vec<u8>,
    }

    impl Conn {
        async fn open(tb: &str) -> Conn {
            let now = crate::clock::now();
            let parts = (0..2)
                .map(|p| Partition {
                    broker: Broker::new(
                        Options {
                            partition: p,
                            partitions: 2,
                            ..Options::default()
                        },
                        1,
                        now,
                    ),
                    store: None,
                })
                .collect();
            let auth = super::super::auth::AuthConfig {
                addresses: Vec::new(),
                method_post: false,
                connect_timeout: Duration::from_secs(1),
                request_timeout: Duration::from_secs(1),
                tls: Arc::new(
                    rustls::ClientConfig::builder_with_provider(Arc::new(
                        rustls::crypto::ring::default_provider(),
                    ))
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth(),
                ),
            };
            let (registry, _) = mpsc::unbounded_channel();
            let (h, _tasks) = spawn(parts, auth, registry);
            let part = h.pick();
            let (out_tx, out) = mpsc::unbounded_channel();
            let (reply_tx, reply_rx) = oneshot::channel();
            let remote = "127.0.0.1:1".to_string();
            let connect = ToDriver::Connect {
                remote,
                out: out_tx,
                reply: reply_tx,
            };
            assert!(part.send(connect).await);
            let client = reply_rx.await.unwrap();
            assert_eq!(partition_of(tb, 2), 1, "the client starts in partition 0");
            Conn {
                h,
                part,
                client,
                out,
                wire: Vec::new(),
            }
        }

        fn bytes(&self, d: Vec<u8>) -> ToDriver {
            ToDriver::Bytes {
                client: self.client,
                data: Bytes::from(d),
            }
        }

        async fn moved(&mut self) -> Part {
            loop {
                match self.out.recv().await.expect("output") {
                    Out::Moved(p) => return p,
                    Out::Data(d) => self.wire.extend(d),
                    o => panic!("unexpected {o:?}"),
                }
            }
        }

        async fn oks(&mut self, n: usize) {
            let mut oks = 0;
            while oks < n {
                let used = match decode_frame(&self.wire).unwrap() {
                    Some((f, used)) => {
                        assert_eq!(f, Frame::Response(b"OK".to_vec()));
                        oks += 1;
                        used
                    }
                    None => {
                        let o = tokio::time::timeout(Duration::from_secs(5), self.out.recv());
                        match o.await {
                            Ok(Some(Out::Data(d))) => self.wire.extend(d),
                            o => panic!("unexpected {o:?} after {oks} OKs"),
                        }
                        0
                    }
                };
                self.wire.drain(..used);
            }
        }

        async fn bodies(&self, topic: &str) -> Vec<String> {
            let t = topic.to_string();
            self.h
                .call(topic, move |b, _| {
                    b.topic(&t)
                        .unwrap()
                        .queue
                        .bodies()
                        .map(|b| String::from_utf8_lossy(b.expect("in memory")).into_owned())
                        .collect::<Vec<_>>()
                })
                .await
                .unwrap()
        }
    }

    fn topic_of_partition_1() -> String {
        topic_of(1)
    }

    fn topic_of(p: u32) -> String {
        (0..)
            .map(|i| format!("t{i}"))
            .find(|t| partition_of(t, 2) == p)
            .unwrap()
    }

    /// Bytes the connection sent to the old partition before it learnt of the move reach the
    /// new one before bytes it sent there directly, however the tasks interleave.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn input_that_reaches_the_old_partition_late_still_comes_first() {
        let tb = topic_of_partition_1();
        let mut c = Conn::open(&tb).await;
        let mut first = MAGIC_V2.to_vec();
        first.extend(publish(&tb, "1"));
        // "1" moves the client to partition 1.
        assert!(c.part.send(c.bytes(first)).await);
        let new = c.moved().await;
        // The old partition stalls with "2" (sent before the connection read the move) and
        // the connection's confirmation behind the gate; "3" goes to the new one directly.
        let (open, gate) = gate();
        assert!(c.part.send(gate).await);
        assert!(c.part.send(c.bytes(publish(&tb, "2"))).await);
        assert!(c.part.send(ToDriver::Drained { client: c.client }).await);
        assert!(new.send(c.bytes(publish(&tb, "3"))).await);
        tokio::time::sleep(Duration::from_millis(100)).await;
        open.send(()).unwrap();
        c.oks(3).await;
        assert_eq!(c.bodies(&tb).await, ["1", "2", "3"]);
    }

    /// Input behind the command that moves a client, read in the same wake-up, follows it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn input_in_the_same_wake_up_as_the_move_follows_the_client() {
        let tb = topic_of_partition_1();
        let mut c = Conn::open(&tb).await;
        let mut first = MAGIC_V2.to_vec();
        first.extend(publish(&tb, "1"));
        // Both pieces wait behind the gate, so the old partition reads them in one wake-up.
        let (open, gate) = gate();
        assert!(c.part.send(gate).await);
        assert!(c.part.send(c.bytes(first)).await);
        assert!(c.part.send(c.bytes(publish(&tb, "2"))).await);
        open.send(()).unwrap();
        let new = c.moved().await;
        assert!(c.part.send(ToDriver::Drained { client: c.client }).await);
        assert!(new.send(c.bytes(publish(&tb, "3"))).await);
        c.oks(3).await;
        assert_eq!(c.bodies(&tb).await, ["1", "2", "3"]);
    }

    /// A client moved for a publish, with a SUB for the first partition's topic waiting for
    /// the settle; input it sends the new partition meanwhile must follow it when the settle
    /// moves it back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn input_waiting_for_a_settle_follows_a_client_that_moves_on() {
        let (ta, tb) = (topic_of(0), topic_of(1));
        let mut c = Conn::open(&tb).await;
        let mut first = MAGIC_V2.to_vec();
        first.extend(publish(&tb, "1"));
        first.extend(
            Command::Sub {
                topic: ta.as_str().into(),
                channel: "c".into(),
            }
            .to_bytes(),
        );
        assert!(c.part.send(c.bytes(first)).await);
        let new = c.moved().await;
        // Sent to the new partition before it knows the old one has nothing more.
        assert!(new.send(c.bytes(Command::Rdy(10).to_bytes())).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(c.part.send(ToDriver::Drained { client: c.client }).await);
        // Settled, the SUB moves it back.
        let back = c.moved().await;
        assert!(new.send(ToDriver::Drained { client: c.client }).await);
        c.part = back;
        c.oks(2).await;
        // The RDY reached it: a message for its channel is delivered.
        let t = ta.clone();
        let published = c.h.call(&ta, move |b, now| {
            b.publish(now, &t, vec![b"m".to_vec().into()], None).is_ok()
        });
        assert_eq!(published.await, Some(true));
        loop {
            if let Some((f, n)) = decode_frame(&c.wire).unwrap() {
                c.wire.drain(..n);
                match f {
                    Frame::Message(m) => {
                        assert_eq!(&m.body[..], b"m");
                        break;
                    }
                    f => panic!("unexpected {f:?}"),
                }
            }
            let o = tokio::time::timeout(Duration::from_secs(5), c.out.recv()).await;
            match o {
                Ok(Some(Out::Data(d))) => c.wire.extend(d),
                o => panic!("no message: {o:?}"),
            }
        }
    }
}
