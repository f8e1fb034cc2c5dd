//! The broker task: the one owner of the core's state.
//!
//! Connections and HTTP handlers talk to it over channels; it feeds the core with real time,
//! sleeps until the core's `poll_timeout()`, and hands each client's output to that client's
//! connection task. No lock is held on the per-message path.

use bytes::Bytes;
use nsqlab_core::{Broker, ClientId, Event, Time, Transmit, Upgrade};
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot};

/// Output for one connection, in order.
#[derive(Debug)]
pub enum Out {
    Data(Vec<u8>),
    Upgrade(Upgrade),
    Close,
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
    /// A client's TLS handshake finished with a certificate with this subject common name.
    TlsPeer {
        client: ClientId,
        common_name: String,
    },
}

/// A handle to the broker task.
#[derive(Clone)]
pub struct DriverHandle {
    tx: mpsc::Sender<ToDriver>,
    events: broadcast::Sender<Event>,
}

impl DriverHandle {
    pub async fn send(&self, m: ToDriver) -> bool {
        self.tx.send(m).await.is_ok()
    }

    /// Run `f` on the broker and return its result.
    pub async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Broker, Time) -> R + Send + 'static,
    ) -> Option<R> {
        let (tx, rx) = oneshot::channel();
        let job = Box::new(move |b: &mut Broker, now: Time| {
            let _ = tx.send(f(b, now));
        });
        self.tx.send(ToDriver::Call(job)).await.ok()?;
        rx.await.ok()
    }

    /// Run `f` on the broker; the result comes back once what it changed is stored, with the
    /// store's verdict (always `Ok` without storage).
    pub async fn call_stored<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Broker, Time) -> R + Send + 'static,
    ) -> Option<(R, Result<(), String>)> {
        let (tx, rx) = oneshot::channel();
        let job: StoredJob = Box::new(move |b: &mut Broker, now: Time| {
            let r = f(b, now);
            Box::new(move |stored: Result<(), String>| {
                let _ = tx.send((r, stored));
            }) as AfterStore
        });
        self.tx.send(ToDriver::CallStored(job)).await.ok()?;
        rx.await.ok()
    }

    /// Subscribe to the broker's events (the live stream). Events are produced only while
    /// someone listens.
    pub fn subscribe_events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}

/// Start the broker task; it ends when every handle is dropped.
pub fn spawn(
    broker: Broker,
    auth: super::auth::AuthConfig,
    store: Option<super::store::Store>,
    registry: mpsc::UnboundedSender<nsqlab_core::RegistryChange>,
) -> (DriverHandle, tokio::task::JoinHandle<Broker>) {
    let (tx, rx) = mpsc::channel(4096);
    let (events, _) = broadcast::channel(65_536);
    let handle = DriverHandle {
        tx: tx.clone(),
        events: events.clone(),
    };
    let task = tokio::spawn(run(
        broker,
        rx,
        tx.downgrade(),
        events,
        Arc::new(auth),
        store,
        registry,
    ));
    (handle, task)
}

async fn run(
    mut broker: Broker,
    mut rx: mpsc::Receiver<ToDriver>,
    me: mpsc::WeakSender<ToDriver>,
    events: broadcast::Sender<Event>,
    auth: Arc<super::auth::AuthConfig>,
    mut store: Option<super::store::Store>,
    registry: mpsc::UnboundedSender<nsqlab_core::RegistryChange>,
) -> Broker {
    let mut auth_start = 0usize;
    let alarm = Alarm::start(me.clone());
    let mut conns: HashMap<ClientId, mpsc::UnboundedSender<Out>> = HashMap::new();
    let mut after_store: Vec<AfterStore> = Vec::new();
    let mut last_probe = std::time::Instant::now();
    loop {
        broker.set_events(events.receiver_count() > 0);
        // The alarm thread wakes us (with a Tick) when the next timer is due.
        alarm.set(broker.poll_timeout());
        // While storage is failing, wake every second to see whether it works again.
        let unhealthy = store.is_some() && broker.health().is_some();
        let m = if unhealthy {
            tokio::select! {
                m = rx.recv() => m,
                _ = tokio::time::sleep(PROBE_INTERVAL) => Some(ToDriver::Tick),
            }
        } else {
            rx.recv().await
        };
        let Some(m) = m else { break };
        handle(&mut broker, &mut conns, &mut after_store, m);
        // Take what else is waiting before writing anything out: one wake-up, many inputs.
        for _ in 0..1024 {
            match rx.try_recv() {
                Ok(m) => handle(&mut broker, &mut conns, &mut after_store, m),
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
        for reply in after_store.drain(..) {
            reply(stored.clone());
        }
        // Bodies of deferred messages that became due come back from the files.
        if let Some(s) = store.as_mut() {
            while let Some(req) = broker.poll_load() {
                let body = s.load(&req.topic, req.id);
                if let Err(e) = &body {
                    tracing::error!("storage: {e}");
                }
                broker.handle_loaded(crate::clock::now(), &req, body);
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
        while let Some(t) = broker.poll_transmit() {
            let (client, out) = match t {
                Transmit::Data { client, data } => (client, Out::Data(data)),
                Transmit::Upgrade { client, upgrade } => (client, Out::Upgrade(upgrade)),
                Transmit::Close { client } => (client, Out::Close),
            };
            let close = matches!(out, Out::Close);
            if let Some(tx) = conns.get(&client) {
                let _ = tx.send(out);
            }
            if close {
                conns.remove(&client);
            }
        }
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
        while let Some(c) = broker.poll_registry() {
            let _ = registry.send(c);
        }
        while let Some(e) = broker.poll_event() {
            let _ = events.send(e);
        }
    }
    alarm.stop();
    if let Some(mut s) = store {
        let _ = commit(&mut broker, &mut s);
        s.close();
    }
    broker
}

const PROBE_INTERVAL: Duration = Duration::from_secs(1);

/// Hand the broker's store ops to the store, write them, and tell the broker.
fn commit(broker: &mut Broker, store: &mut super::store::Store) -> Result<(), String> {
    let mut result = Ok(());
    // A failure answer can close clients, which may change more; a few rounds settle it.
    for _ in 0..4 {
        let mut any = false;
        while let Some(op) = broker.poll_store() {
            store.apply(op);
            any = true;
        }
        if !any {
            break;
        }
        let r = store.commit();
        if let Err(e) = &r {
            tracing::error!("storage: {e}");
        }
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

fn handle(
    broker: &mut Broker,
    conns: &mut HashMap<ClientId, mpsc::UnboundedSender<Out>>,
    after_store: &mut Vec<AfterStore>,
    m: ToDriver,
) {
    let now = crate::clock::now();
    match m {
        ToDriver::Connect { remote, out, reply } => {
            let id = broker.connect(now, remote);
            conns.insert(id, out);
            let _ = reply.send(id);
        }
        ToDriver::Bytes { client, data } => broker.handle_bytes(now, client, &data),
        ToDriver::Closed { client } => {
            conns.remove(&client);
            broker.disconnect(now, client);
        }
        ToDriver::Call(f) => f(broker, now),
        ToDriver::CallStored(f) => after_store.push(f(broker, now)),
        ToDriver::Tick => {}
        ToDriver::Auth { client, answer } => broker.handle_auth_response(now, client, answer),
        ToDriver::TlsPeer {
            client,
            common_name,
        } => broker.handle_tls_peer(client, common_name),
    }
}
