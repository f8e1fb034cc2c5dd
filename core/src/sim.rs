//! A virtual-time network around a [`Broker`]: clients that speak V2 bytes, a clock that jumps
//! to the next timer, and nothing else. Tests, fuzzing and the visualiser drive the broker
//! through it, so they see exactly what a real client would see.
//!
//! ```
//! use nsqlab_core::sim::Sim;
//! use nsqlab_core::protocol::{Command, Frame};
//! use nsqlab_core::{Options, time::ms};
//!
//! let mut sim = Sim::new(Options::default(), 7);
//! let p = sim.connect();
//! let c = sim.connect();
//! sim.send(c, &Command::Sub { topic: "t".into(), channel: "c".into() });
//! sim.send(c, &Command::Rdy(1));
//! sim.send(p, &Command::Dpub { topic: "t".into(), defer_ms: 50, body: b"hi"[..].into() });
//! sim.advance(ms(49));
//! assert!(sim.messages(c).is_empty());
//! sim.advance(ms(50));
//! assert_eq!(sim.messages(c)[0].body[..], b"hi"[..]);
//! ```

use crate::broker::{Broker, Output, Transmit};
use crate::event::Event;
use crate::message::Message;
use crate::options::Options;
use crate::protocol::{decode_frame, Command, Frame, MAGIC_V2};
use crate::store::Replay;
use crate::time::Time;
use crate::ClientId;
use std::collections::BTreeMap;

/// The client side of one simulated connection.
#[derive(Debug, Default, Clone)]
pub struct ClientEnd {
    /// Bytes received and not yet parsed into frames.
    inbox: Vec<u8>,
    /// Frames received and not yet taken.
    pub frames: Vec<Frame>,
    /// The broker closed the connection.
    pub closed: bool,
    /// Upgrades the broker asked for (the simulated transport just notes them).
    pub upgrades: Vec<crate::broker::Upgrade>,
}

/// A broker, its clients and a virtual clock. A clone is an independent copy of all of it.
#[derive(Clone)]
pub struct Sim {
    pub broker: Broker,
    now: Time,
    ends: BTreeMap<ClientId, ClientEnd>,
    /// Every event the broker produced, in order (when events are on).
    pub events: Vec<Event>,
    /// Keep events in `events` (on by default).
    pub record_events: bool,
    /// Questions for the auth server, waiting for [`Sim::answer_auth`].
    pub auth_requests: Vec<crate::auth::AuthRequest>,
    /// Topics and channels that came or went (with [`Options::registry`]), not yet taken.
    pub registry: Vec<crate::store::RegistryChange>,
    /// The simulated disk (with [`Options::durable`]).
    pub store: SimStore,
}

/// A store in memory: it applies every [`crate::StoreOp`] to a [`Replay`] and acknowledges
/// at once, unless told to wait or to fail.
#[derive(Debug, Clone, Default)]
pub struct SimStore {
    pub replay: Replay,
    /// Ops applied so far.
    pub ops: u64,
    /// Leave publishes unacknowledged (call [`Sim::store_ack`]).
    pub hold: bool,
    /// Fail every write with this reason (nothing is applied).
    pub fail: Option<String>,
    /// Leave body loads unanswered, in `held_loads` (call [`Sim::answer_loads`]), as a host
    /// reading them on another thread does for a while.
    pub hold_loads: bool,
    pub held_loads: Vec<crate::LoadRun>,
}

impl SimStore {
    /// How many bodies the held loads ask for.
    pub fn held_load_count(&self) -> usize {
        self.held_loads.iter().map(|run| run.ids.len()).sum()
    }
}

impl Sim {
    /// A simulation starting at time 0.
    pub fn new(opts: Options, seed: u64) -> Self {
        Sim {
            broker: Broker::new(opts, seed, 0),
            now: 0,
            ends: BTreeMap::new(),
            events: Vec::new(),
            record_events: true,
            auth_requests: Vec::new(),
            registry: Vec::new(),
            store: SimStore::default(),
        }
    }

    /// A restart after a crash at this instant: a new broker (same options, `seed`) rebuilt
    /// from what the store holds, at the same virtual time, with no clients.
    pub fn restart(&self, seed: u64) -> Sim {
        let mut broker = Broker::new(self.broker.options().clone(), seed, self.now);
        self.store.replay.restore_into(&mut broker, self.now);
        let mut sim = Sim {
            broker,
            now: self.now,
            ends: BTreeMap::new(),
            events: Vec::new(),
            record_events: self.record_events,
            auth_requests: Vec::new(),
            registry: Vec::new(),
            store: SimStore {
                replay: self.store.replay.clone(),
                ..SimStore::default()
            },
        };
        sim.flush();
        sim
    }

    /// Answer the held body loads, in the order they were asked for (see `hold_loads`).
    pub fn answer_loads(&mut self) {
        let held = std::mem::take(&mut self.store.held_loads);
        let loaded: Vec<_> = held.into_iter().map(|run| self.read(run)).collect();
        self.broker.handle_loaded(self.now, loaded);
        self.flush();
    }

    /// A run's bodies, from the store's copy.
    fn read(&self, run: crate::LoadRun) -> crate::LoadedRun<String> {
        let bodies = run
            .ids
            .iter()
            .map(|&id| {
                let body = self.store.replay.body(&run.topic, id);
                (
                    id,
                    body.ok_or_else(|| format!("message {id} not in the store")),
                )
            })
            .collect();
        crate::LoadedRun {
            topic: run.topic,
            channel: run.channel,
            bodies,
        }
    }

    /// Acknowledge (or fail, with `fail`) every publish the store has seen.
    pub fn store_ack(&mut self) {
        let result = self.store.fail.clone().map_or(Ok(()), |e| Err(e.into()));
        let through = self.broker.last_ticket();
        self.broker.handle_stored(self.now, through, result);
        self.flush();
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Connect a client and send the V2 magic.
    pub fn connect(&mut self) -> ClientId {
        let id = self
            .broker
            .connect(self.now, format!("10.0.0.1:{}", 40000 + self.ends.len()));
        self.ends.insert(id, ClientEnd::default());
        self.send_raw(id, MAGIC_V2);
        id
    }

    /// Connect without sending the magic.
    pub fn connect_raw(&mut self) -> ClientId {
        let id = self.broker.connect(self.now, "10.0.0.2:1");
        self.ends.insert(id, ClientEnd::default());
        self.flush();
        id
    }

    /// Send a command's bytes.
    pub fn send(&mut self, c: ClientId, cmd: &Command) {
        self.send_raw(c, &cmd.to_bytes());
    }

    /// Send raw bytes.
    pub fn send_raw(&mut self, c: ClientId, bytes: &[u8]) {
        self.broker.handle_bytes(self.now, c, bytes);
        self.flush();
    }

    /// The client hangs up.
    pub fn disconnect(&mut self, c: ClientId) {
        self.broker.disconnect(self.now, c);
        if let Some(e) = self.ends.get_mut(&c) {
            e.closed = true;
        }
        self.flush();
    }

    pub fn end(&self, c: ClientId) -> Option<&ClientEnd> {
        self.ends.get(&c)
    }

    pub fn is_closed(&self, c: ClientId) -> bool {
        self.ends.get(&c).is_none_or(|e| e.closed)
    }

    /// Take every frame client `c` received so far.
    pub fn frames(&mut self, c: ClientId) -> Vec<Frame> {
        self.ends
            .get_mut(&c)
            .map(|e| std::mem::take(&mut e.frames))
            .unwrap_or_default()
    }

    /// Take the message frames client `c` received (other frames are dropped).
    pub fn messages(&mut self, c: ClientId) -> Vec<Message> {
        self.frames(c)
            .into_iter()
            .filter_map(|f| match f {
                Frame::Message(m) => Some(m),
                _ => None,
            })
            .collect()
    }

    /// Drain the broker's outputs into the store, the client ends and the event log. Bodies
    /// asked for come back in batches, as from the server's loader thread, until none is
    /// asked for (the store is in memory: no batch has to wait for the next flush).
    pub fn flush(&mut self) {
        loop {
            let mut loaded = Vec::new();
            while let Some(o) = self.broker.poll_output() {
                match o {
                    Output::Store(op) => {
                        if self.store.fail.is_none() {
                            self.store.replay.apply(&op);
                            self.store.ops += 1;
                        }
                    }
                    Output::Commit { through } => {
                        if !self.store.hold {
                            let result = self.store.fail.clone().map_or(Ok(()), |e| Err(e.into()));
                            self.broker.handle_stored(self.now, through, result);
                        }
                    }
                    Output::Load(run) => {
                        if self.store.hold_loads {
                            self.store.held_loads.push(run);
                        } else {
                            loaded.push(self.read(run));
                        }
                    }
                    Output::Transmit(Transmit::Data { client, data }) => {
                        if let Some(e) = self.ends.get_mut(&client) {
                            e.inbox.extend_from_slice(&data);
                            let mut used = 0;
                            while let Ok(Some((f, n))) = decode_frame(&e.inbox[used..]) {
                                e.frames.push(f);
                                used += n;
                            }
                            e.inbox.drain(..used);
                        }
                    }
                    Output::Transmit(Transmit::Upgrade { client, upgrade }) => {
                        if let Some(e) = self.ends.get_mut(&client) {
                            e.upgrades.push(upgrade);
                        }
                    }
                    Output::Transmit(Transmit::Close { client }) => {
                        if let Some(e) = self.ends.get_mut(&client) {
                            e.closed = true;
                        }
                    }
                    // The simulated transport never blocks.
                    Output::Transmit(Transmit::WriteTimeout { .. }) => {}
                    Output::Auth(r) => self.auth_requests.push(r),
                    Output::Registry(c) => self.registry.push(c),
                    Output::Event(ev) => {
                        if self.record_events {
                            self.events.push(ev);
                        }
                    }
                }
            }
            if loaded.is_empty() {
                break;
            }
            self.broker.handle_loaded(self.now, loaded);
        }
    }

    /// Answer the auth server's part for `client`.
    pub fn answer_auth(
        &mut self,
        client: ClientId,
        answer: Result<crate::auth::AuthResponse, String>,
    ) {
        self.auth_requests.retain(|r| r.client != client);
        self.broker.handle_auth_response(self.now, client, answer);
        self.flush();
    }

    /// The next instant a timer is due, if any.
    pub fn next_timer(&self) -> Option<Time> {
        self.broker.poll_timeout()
    }

    /// Jump to the next timer (if it is at or before `limit`) and fire it.
    pub fn step(&mut self, limit: Time) -> bool {
        match self.broker.poll_timeout() {
            Some(t) if t <= limit => {
                self.now = self.now.max(t);
                self.broker.handle_timeout(self.now);
                self.flush();
                true
            }
            _ => false,
        }
    }

    /// Fire every timer up to `to`, in order, and leave the clock at `to`.
    pub fn advance(&mut self, to: Time) {
        while self.step(to) {}
        self.now = self.now.max(to);
    }

    /// Move the clock forward by `d` (firing timers on the way).
    pub fn sleep(&mut self, d: Time) {
        self.advance(self.now + d);
    }
}
