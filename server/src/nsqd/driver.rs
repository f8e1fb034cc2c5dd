//! The broker tasks: one per partition (see `nsqlab_core::partition`), each the one owner of
//! its partition's state — the topics that hash to it and the clients that use them.
//!
//! Connections and HTTP handlers talk to them over channels; each feeds its core with real
//! time, sleeps until the core's `poll_timeout()`, and hands each client's output to that
//! client's connection task. No lock is held on the per-message path.
//!
//! # Moving a client
//! The routing between partitions (which partition owns a topic, moving a client there,
//! forwarding a publish, keeping a moving client's input in order) is the core's
//! [`nsqlab_core::partition::Partition`]; this file only carries its messages: a
//! connection's input to the partition it was last told it is in ([`Out::Moved`]), and
//! [`Peer`] messages between partitions, each in order.

use super::store::StoreError;
use bytes::Bytes;
use nsqlab_core::partition::{ClientInput, Partition, PeerMsg, Route};
use nsqlab_core::stats::{Stats, StatsFilter};
use nsqlab_core::{
    partition_of, Broker, ClientId, Event, Output, StoreFailure, Time, Transmit, Upgrade,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

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
pub type AfterStore = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// Work whose answer waits for the store (an HTTP publish).
pub type StoredJob = Box<dyn FnOnce(&mut Broker, Time) -> AfterStore + Send>;

/// A request to the broker task.
pub enum ToDriver {
    Connect {
        remote: String,
        out: mpsc::UnboundedSender<Out>,
        reply: oneshot::Sender<ClientId>,
    },
    /// Input from a client's connection (see [`super::link::Link`]).
    Client {
        client: ClientId,
        input: ClientInput<Bytes>,
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
    /// Run a closure on the replicated node (`None`: this server is not replicated).
    Node(NodeJob),
}

/// Work on a replicated node (see [`ToDriver::Node`]).
pub type NodeJob = Box<dyn FnOnce(Option<&mut nsqlab_core::replica::Node>) + Send>;

/// From one partition to another: the core's routing messages, a moving client's
/// connection with it.
pub type Peer = PeerMsg<Bytes, mpsc::UnboundedSender<Out>>;

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
            .call_all(move |b, _| (b.stats_part(&filter), b.health().map(|h| h.to_string())))
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
    ) -> Option<(R, Result<(), StoreError>)> {
        let (tx, rx) = oneshot::channel();
        let job: StoredJob = Box::new(move |b: &mut Broker, now: Time| {
            let r = f(b, now);
            Box::new(move |stored: Result<(), StoreError>| {
                let _ = tx.send((r, stored));
            }) as AfterStore
        });
        self.owner(topic)
            .send(ToDriver::CallStored(job))
            .await
            .ok()?;
        rx.await.ok()
    }

    /// Run `f` on the replicated node (`None` when the server is not replicated).
    pub async fn call_node<R: Send + 'static>(
        &self,
        f: impl FnOnce(Option<&mut nsqlab_core::replica::Node>) -> R + Send + 'static,
    ) -> Option<R> {
        let (tx, rx) = oneshot::channel();
        let job: NodeJob = Box::new(move |n| {
            let _ = tx.send(f(n));
        });
        self.parts.first()?.send(ToDriver::Node(job)).await.ok()?;
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

/// One partition's broker and its store, to start a task with.
pub struct Opened {
    pub broker: Broker,
    pub store: Option<super::store::Store>,
}

/// Start one broker task per partition (partition `i` is `parts[i]`); they end when
/// `shutdown` flips (what they owe the store is written first), or when every handle is
/// dropped.
pub fn spawn(
    parts: Vec<Opened>,
    auth: super::auth::AuthConfig,
    registry: mpsc::UnboundedSender<nsqlab_core::RegistryChange>,
    shutdown: watch::Receiver<bool>,
) -> (DriverHandle, Vec<tokio::task::JoinHandle<Broker>>) {
    let (events, _) = broadcast::channel(65_536);
    let (write_timeout, ws) = parts.first().map_or(
        (
            None,
            WsLimits {
                max_message: 5 << 20,
                idle: Duration::from_secs(120),
            },
        ),
        |p| limits(p.broker.options()),
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
                after_store: Vec::new(),
                events: events.clone(),
                registry: registry.clone(),
                auth: auth.clone(),
                auth_start: 0,
                ops: Vec::new(),
                loads: Vec::new(),
            };
            let part = Partition::with_broker(p.broker);
            tokio::spawn(run(part, rx, peer_rx, ctx, p.store, shutdown.clone()))
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

/// A new connection's write deadline and the WebSocket limits, from the broker's options.
fn limits(o: &nsqlab_core::Options) -> (Option<Duration>, WsLimits) {
    let write_timeout =
        Some(Duration::from_nanos(o.default_heartbeat_interval())).filter(|d| !d.is_zero());
    let body = o.max_body_size.max(o.max_msg_size) as usize;
    let ws = WsLimits {
        max_message: body + nsqlab_core::protocol::decode::MAX_LINE_LENGTH + 8,
        idle: Duration::from_nanos(2 * o.max_heartbeat_interval).max(Duration::from_secs(1)),
    };
    (write_timeout, ws)
}

impl DriverHandle {
    /// A handle on one broker task fed by `tx` (a replicated node's: see
    /// `super::replica::driver`).
    pub(crate) fn single(
        tx: mpsc::Sender<ToDriver>,
        events: broadcast::Sender<Event>,
        opts: &nsqlab_core::Options,
    ) -> DriverHandle {
        let (write_timeout, ws) = limits(opts);
        DriverHandle {
            parts: vec![tx].into(),
            next: Arc::new(AtomicUsize::new(0)),
            events,
            write_timeout,
            ws,
        }
    }
}

/// How a partition reaches another.
struct Link {
    /// Weak: a partition's tasks end when the handles outside are gone.
    main: mpsc::WeakSender<ToDriver>,
    peer: mpsc::UnboundedSender<Peer>,
}

/// A partition's broker and routing, with connections' output senders as their handles.
type Core = Partition<Bytes, mpsc::UnboundedSender<Out>>;

/// A partition task's host state (what the core does not own).
struct Ctx {
    index: u32,
    links: Arc<[Link]>,
    after_store: Vec<AfterStore>,
    events: broadcast::Sender<Event>,
    registry: mpsc::UnboundedSender<nsqlab_core::RegistryChange>,
    auth: Arc<super::auth::AuthConfig>,
    auth_start: usize,
    /// A wake-up's store ops and load runs, gathered for the store (kept: their capacity is
    /// reused, wake-up after wake-up).
    ops: Vec<nsqlab_core::StoreOp>,
    loads: Vec<nsqlab_core::LoadRun>,
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
    mut part: Core,
    mut rx: mpsc::Receiver<ToDriver>,
    mut peer_rx: mpsc::UnboundedReceiver<Peer>,
    mut ctx: Ctx,
    mut store: Option<super::store::Store>,
    mut shutdown: watch::Receiver<bool>,
) -> Broker {
    let me = ctx.me();
    let alarm = Alarm::start(me.clone());
    let mut last_probe = std::time::Instant::now();
    loop {
        part.broker_mut()
            .set_events(ctx.events.receiver_count() > 0);
        // The alarm thread wakes us (with a Tick) when the next timer is due.
        alarm.set(part.broker().poll_timeout());
        // While storage is failing, wake every second to see whether it works again.
        let unhealthy = store.is_some() && part.broker().health().is_some();
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
                    part.handle_peer(crate::clock::now(), p);
                }
                Some(ToDriver::Tick)
            }
            batch = loaded(&mut store) => {
                handle_loaded(part.broker_mut(), batch);
                Some(ToDriver::Tick)
            }
            m = rx.recv() => m,
            _ = probe => Some(ToDriver::Tick),
            _ = fins => Some(ToDriver::Tick),
            // The server stops: whoever still holds a handle (a connection that has not
            // noticed yet, an idle keep-alive HTTP connection) does not keep it running.
            _ = shutdown.changed() => None,
        };
        let Some(m) = m else { break };
        // What other partitions sent comes first: a client moving here is adopted before
        // its connection's first direct input is read.
        while let Ok(p) = peer_rx.try_recv() {
            part.handle_peer(crate::clock::now(), p);
        }
        handle(&mut part, &mut ctx, m);
        // Take what else is waiting before writing anything out: one wake-up, many inputs.
        for _ in 0..1024 {
            match rx.try_recv() {
                Ok(m) => {
                    while let Ok(p) = peer_rx.try_recv() {
                        part.handle_peer(crate::clock::now(), p);
                    }
                    handle(&mut part, &mut ctx, m)
                }
                Err(_) => break,
            }
        }
        let now = crate::clock::now();
        if part.broker().poll_timeout().is_some_and(|t| t <= now) {
            part.broker_mut().handle_timeout(now);
        }
        flush_outputs(&mut part, &mut ctx, store.as_mut());
        if let Some(s) = store.as_mut() {
            let broker = part.broker_mut();
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
        // More work is due at once (a large MPUB's next step): let the tasks this wake-up
        // woke run first. A task woken from here waits in this worker's LIFO slot, which no
        // other worker takes, and a loop that always finds input yields only when its
        // cooperative budget runs out, 128 wake-ups later, while other clients' OKs wait.
        if part
            .broker()
            .poll_timeout()
            .is_some_and(|t| t <= crate::clock::now())
        {
            tokio::task::yield_now().await;
        }
    }
    alarm.stop();
    let mut broker = part.into_broker();
    if let Some(mut s) = store {
        // What the last wake-up left (nobody is connected any more: only the store's part).
        let ops = std::iter::from_fn(|| broker.poll_output()).filter_map(|o| match o {
            Output::Store(op) => Some(op),
            _ => None,
        });
        s.apply_all(ops.collect::<Vec<_>>());
        let _ = commit(&mut s);
        s.close();
    }
    broker
}

/// Carry out what the partition asks, in its order: the group commit (everything this
/// wake-up changed, in one write per topic; publishers' `OK`s go out only after it), bodies to
/// read back on the loader thread, moves and each client's output to its connection,
/// questions to the auth server, registry changes to the nsqlookupd task, events to the
/// `/ws/events` broadcast, messages to other partitions.
fn flush_outputs(part: &mut Core, ctx: &mut Ctx, mut store: Option<&mut super::store::Store>) {
    let committed = drain_outputs(part, ctx, store.as_deref_mut());
    if !committed {
        // Nothing new to store: FINs a commit left waiting are written once due (a failure
        // makes the broker unhealthy, as any failed write), and HTTP calls and forwarded
        // publishes that stored nothing are answered; then what that let go is carried out.
        let through = part.broker().last_ticket();
        let r = match store.as_deref_mut() {
            Some(s) if s.fins_due().is_some_and(|t| t <= std::time::Instant::now()) => {
                let r = commit(s);
                let stored = r.clone().map_err(StoreFailure::new);
                part.broker_mut()
                    .handle_stored(crate::clock::now(), through, stored);
                r
            }
            _ => Ok(()),
        };
        answer_stored(part, ctx, through, r);
        drain_outputs(part, ctx, store);
    }
}

/// Poll the partition until it has nothing more, carrying out each output; whether a commit
/// was among them.
fn drain_outputs(
    part: &mut Core,
    ctx: &mut Ctx,
    mut store: Option<&mut super::store::Store>,
) -> bool {
    let (mut ops, mut loads) = (std::mem::take(&mut ctx.ops), std::mem::take(&mut ctx.loads));
    let mut committed = false;
    loop {
        while let Some(o) = part.poll_output() {
            output(
                part,
                ctx,
                store.as_deref_mut(),
                o,
                &mut ops,
                &mut loads,
                &mut committed,
            );
        }
        // Evicted bodies (deferred messages coming due, a backlog past --mem-queue-size) are
        // read back on the loader thread; they arrive as a wake-up of their own. Those that
        // cannot be are answered now, and their outcome is output too.
        let Some(s) = store.as_deref_mut() else { break };
        let failed = s.request_loads(loads.drain(..));
        if failed.is_empty() {
            break;
        }
        handle_loaded(part.broker_mut(), failed);
    }
    (ctx.ops, ctx.loads) = (ops, loads);
    committed
}

/// The store's verdict for everything through ticket `through`: HTTP calls and publishes
/// forwarded from other partitions are answered.
fn answer_stored(
    part: &mut Core,
    ctx: &mut Ctx,
    through: nsqlab_core::Ticket,
    r: Result<(), StoreError>,
) {
    for reply in ctx.after_store.drain(..) {
        reply(r.clone());
    }
    part.handle_committed(through, r.map_err(StoreFailure::new));
}

/// Carry out one of the partition's outputs (see [`flush_outputs`]).
#[allow(clippy::too_many_arguments)]
fn output(
    part: &mut Core,
    ctx: &mut Ctx,
    store: Option<&mut super::store::Store>,
    o: Output<Route<Bytes, mpsc::UnboundedSender<Out>>>,
    ops: &mut Vec<nsqlab_core::StoreOp>,
    loads: &mut Vec<nsqlab_core::LoadRun>,
    committed: &mut bool,
) {
    match o {
        Output::Store(op) => ops.push(op),
        Output::Commit { through } => {
            let Some(s) = store else {
                unreachable!("store ops come only with storage");
            };
            s.apply_all(ops.drain(..));
            let r = commit(s);
            let stored = r.clone().map_err(StoreFailure::new);
            part.broker_mut()
                .handle_stored(crate::clock::now(), through, stored);
            answer_stored(part, ctx, through, r);
            *committed = true;
        }
        Output::Load(run) => loads.push(run),
        Output::Route(Route::Moved { client }) => {
            let Some(out) = part.conn(client) else {
                return;
            };
            // On the connection's output: what the old partition sent, this, then ours.
            let _ = match ctx.me().upgrade() {
                Some(tx) => out.send(Out::Moved(Part { tx })),
                // Shutting down.
                None => out.send(Out::Close),
            };
        }
        Output::Transmit(t) => {
            let (client, out) = out_of(t);
            if let Some(tx) = part.conn(client) {
                let _ = tx.send(out);
            }
        }
        Output::Registry(c) => {
            let _ = ctx.registry.send(c);
        }
        Output::Event(e) => {
            let _ = ctx.events.send(e);
        }
        Output::Route(Route::Peer { to, msg }) => ctx.to_peer(to, msg),
        Output::Auth(req) => {
            ctx.auth_start = ctx.auth_start.wrapping_add(1);
            ask_auth(ctx.auth.clone(), req, ctx.auth_start, ctx.me());
        }
    }
}

/// A transmit as its connection's output: the client, and what to do.
pub(crate) fn out_of(t: Transmit) -> (ClientId, Out) {
    match t {
        Transmit::Data { client, data } => (client, Out::Data(data)),
        Transmit::Upgrade { client, upgrade } => (client, Out::Upgrade(upgrade)),
        Transmit::Close { client } => (client, Out::Close),
        Transmit::WriteTimeout { client, timeout } => {
            (client, Out::WriteTimeout(timeout.map(Duration::from_nanos)))
        }
    }
}

/// Ask the auth server (`start`: the query's number, for its log lines) on a task of its own;
/// the answer comes back to `me` as input.
pub(crate) fn ask_auth(
    cfg: Arc<super::auth::AuthConfig>,
    req: nsqlab_core::AuthRequest,
    start: usize,
    me: mpsc::WeakSender<ToDriver>,
) {
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

const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// Write what the store was given (one write per topic), logging a failure.
fn commit(store: &mut super::store::Store) -> Result<(), StoreError> {
    store.commit().map_err(|e| {
        let what = if e.is_no_room() {
            "; out of room: publishing is refused until there is room"
        } else if e.is_device_error() {
            "; the device failed: check the disk"
        } else {
            ""
        };
        tracing::error!("storage: {e}{what}");
        e
    })
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

/// One input from a connection, an HTTP handler or the alarm.
fn handle(part: &mut Core, ctx: &mut Ctx, m: ToDriver) {
    let now = crate::clock::now();
    let (client, input) = match m {
        ToDriver::Connect { remote, out, reply } => {
            let id = part.connect(now, remote, out);
            let _ = reply.send(id);
            return;
        }
        ToDriver::Call(f) => return f(part.broker_mut(), now),
        ToDriver::CallStored(f) => return ctx.after_store.push(f(part.broker_mut(), now)),
        ToDriver::Tick => return,
        ToDriver::Node(f) => return f(None),
        ToDriver::Auth { client, answer } => {
            return part.broker_mut().handle_auth_response(now, client, answer)
        }
        ToDriver::Client { client, input } => (client, input),
    };
    part.handle_client(now, client, input);
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
                .map(|p| Opened {
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
            let (_stop, shutdown) = watch::channel(false);
            // (The broker tasks run as long as the test holds the sender's twin: leaked.)
            std::mem::forget(_stop);
            let (h, _tasks) = spawn(parts, auth, registry, shutdown);
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
            ToDriver::Client {
                client: self.client,
                input: ClientInput::Bytes(Bytes::from(d)),
            }
        }

        fn drained(&self) -> ToDriver {
            ToDriver::Client {
                client: self.client,
                input: ClientInput::Drained,
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
        assert!(c.part.send(c.drained()).await);
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
        assert!(c.part.send(c.drained()).await);
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
        assert!(c.part.send(c.drained()).await);
        // Settled, the SUB moves it back.
        let back = c.moved().await;
        assert!(new.send(c.drained()).await);
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
