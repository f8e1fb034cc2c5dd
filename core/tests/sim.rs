//! Seeded simulations of producers and consumers against the broker in virtual time, checking
//! invariants over many seeds. `SIM_SEEDS=N` runs N seeds (default 10 000, split over two
//! tests so both cores work).
//!
//! Invariants, checked from the event log and the client-visible frames:
//! - no message is lost: every message reaches every channel of its topic and is finished;
//! - a message is in exactly one place per channel (queue, deferred heap, in flight, done), and
//!   only moves along nsqd's transitions;
//! - never delivered before its due time; deferred messages become ready exactly when due and
//!   in-flight messages time out exactly at their deadline;
//! - work-conserving: a message never waits in a queue while a consumer of that channel has
//!   room under its RDY (so a due message goes out at once, 0 ms late, when anyone is ready);
//! - attempts go up by one on every delivery;
//! - the same seed gives the identical event log.

use nsqlab_core::event::{Event, EventKind};
use nsqlab_core::protocol::{Command, Frame};
use nsqlab_core::sim::Sim;
use nsqlab_core::time::{ms, Time, SECOND};
use nsqlab_core::{ClientId, MessageId, Options, StatsFilter};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Loc {
    Queued,
    Deferred {
        due: Time,
    },
    InFlight {
        client: ClientId,
        deadline: Time,
    },
    /// Between a REQ/timeout/due event and the queue or heap it lands in.
    Moving {
        not_before: Time,
    },
    Done,
}

#[derive(Default)]
struct ClientModel {
    channel: Option<(String, String)>,
    rdy: i64,
    in_flight: i64,
    closing: bool,
    alive: bool,
}

#[derive(Default)]
struct Checker {
    /// (topic, channel, id) -> where the message is.
    loc: HashMap<(String, String, MessageId), Loc>,
    attempts: HashMap<(String, String, MessageId), u16>,
    published: Vec<(String, MessageId)>,
    clients: BTreeMap<ClientId, ClientModel>,
    seen: usize,
}

impl Checker {
    fn key(t: &str, c: &str, id: MessageId) -> (String, String, MessageId) {
        (t.to_string(), c.to_string(), id)
    }

    fn apply(&mut self, e: &Event) {
        let at = e.at;
        match &e.kind {
            EventKind::Published { topic, id, .. } => self.published.push((topic.to_string(), *id)),
            EventKind::Queued {
                topic, channel, id, ..
            } => {
                let k = Self::key(topic, channel, *id);
                let prev = self.loc.get(&k).copied();
                match prev {
                    None => {}
                    Some(Loc::Moving { .. }) => {}
                    other => panic!("queued from {other:?}: {k:?}"),
                }
                self.loc.insert(k, Loc::Queued);
            }
            EventKind::Deferred {
                topic,
                channel,
                id,
                due,
            } => {
                let k = Self::key(topic, channel, *id);
                match self.loc.get(&k).copied() {
                    None | Some(Loc::Moving { .. }) => {}
                    other => panic!("deferred from {other:?}: {k:?}"),
                }
                assert!(*due > at, "deferred into the past");
                self.loc.insert(k, Loc::Deferred { due: *due });
            }
            EventKind::BecameDue {
                topic,
                channel,
                id,
                due,
            } => {
                let k = Self::key(topic, channel, *id);
                assert_eq!(
                    self.loc.get(&k),
                    Some(&Loc::Deferred { due: *due }),
                    "{k:?}"
                );
                assert_eq!(
                    at, *due,
                    "a deferred message becomes ready exactly when due"
                );
                self.loc.insert(k, Loc::Moving { not_before: *due });
            }
            EventKind::Sent {
                topic,
                channel,
                id,
                client,
                attempts,
                deadline,
            } => {
                let k = Self::key(topic, channel, *id);
                assert_eq!(
                    self.loc.get(&k),
                    Some(&Loc::Queued),
                    "sent from {:?}",
                    self.loc.get(&k)
                );
                let a = self.attempts.entry(k.clone()).or_default();
                assert_eq!(*attempts, *a + 1, "attempts go up by one per delivery");
                *a = *attempts;
                self.loc.insert(
                    k,
                    Loc::InFlight {
                        client: *client,
                        deadline: *deadline,
                    },
                );
                let c = self.clients.get_mut(client).expect("known client");
                assert!(
                    c.alive && !c.closing && c.in_flight < c.rdy,
                    "sent beyond RDY"
                );
                c.in_flight += 1;
            }
            EventKind::Finished {
                topic,
                channel,
                id,
                client,
            } => {
                let k = Self::key(topic, channel, *id);
                assert!(
                    matches!(self.loc.get(&k), Some(Loc::InFlight { client: c, .. }) if c == client)
                );
                self.loc.insert(k, Loc::Done);
                self.clients.get_mut(client).unwrap().in_flight -= 1;
            }
            EventKind::Requeued {
                topic,
                channel,
                id,
                client,
                delay,
            } => {
                let k = Self::key(topic, channel, *id);
                assert!(
                    matches!(self.loc.get(&k), Some(Loc::InFlight { client: c, .. }) if c == client)
                );
                self.loc.insert(
                    k,
                    Loc::Moving {
                        not_before: at + delay,
                    },
                );
                self.clients.get_mut(client).unwrap().in_flight -= 1;
            }
            EventKind::TimedOut {
                topic,
                channel,
                id,
                client,
            } => {
                let k = Self::key(topic, channel, *id);
                match self.loc.get(&k) {
                    Some(Loc::InFlight {
                        client: c,
                        deadline,
                    }) if c == client => {
                        assert_eq!(
                            at, *deadline,
                            "in-flight timeout fires exactly at the deadline"
                        )
                    }
                    other => panic!("timed out from {other:?}"),
                }
                self.loc.insert(k, Loc::Moving { not_before: at });
                if let Some(c) = self.clients.get_mut(client) {
                    c.in_flight -= 1;
                }
            }
            EventKind::Touched {
                topic,
                channel,
                id,
                client,
                deadline,
            } => {
                let k = Self::key(topic, channel, *id);
                match self.loc.get_mut(&k) {
                    Some(Loc::InFlight {
                        client: c,
                        deadline: d,
                    }) if c == client => {
                        assert!(*deadline >= at, "touched into the past");
                        *d = *deadline;
                    }
                    other => panic!("touched from {other:?}"),
                }
            }
            EventKind::ClientConnected { client } => {
                self.clients.insert(
                    *client,
                    ClientModel {
                        alive: true,
                        ..Default::default()
                    },
                );
            }
            EventKind::ClientSubscribed {
                client,
                topic,
                channel,
            } => {
                self.clients.get_mut(client).unwrap().channel =
                    Some((topic.to_string(), channel.to_string()));
            }
            EventKind::ClientReady { client, count } => {
                self.clients.get_mut(client).unwrap().rdy = *count
            }
            EventKind::ClientClosing { client } => {
                let c = self.clients.get_mut(client).unwrap();
                c.closing = true;
                c.rdy = 0;
            }
            EventKind::ClientClosed { client, .. } => {
                self.clients.get_mut(client).unwrap().alive = false
            }
            _ => {}
        }
    }

    /// Check everything that must hold whenever the broker is idle.
    fn check_idle(&mut self, sim: &Sim) {
        for e in &sim.events[self.seen..] {
            self.apply(e);
        }
        self.seen = sim.events.len();
        let now = sim.now();
        // Nothing is left half-way, and a queued message has no ready consumer waiting.
        let mut queued: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut counts: BTreeMap<(String, String), [u64; 3]> = BTreeMap::new();
        for ((t, c, id), l) in &self.loc {
            let ch = (t.clone(), c.clone());
            match l {
                Loc::Moving { .. } => panic!("{id} left in transit"),
                Loc::Queued => {
                    *queued.entry(ch.clone()).or_default() += 1;
                    counts.entry(ch).or_default()[0] += 1;
                }
                Loc::Deferred { due } => {
                    assert!(*due > now, "{id} is overdue in the deferred heap");
                    counts.entry(ch).or_default()[1] += 1;
                }
                Loc::InFlight { deadline, .. } => {
                    assert!(
                        *deadline > now,
                        "{id} is overdue in flight: deadline {deadline} now {now} timer {:?}",
                        sim.next_timer()
                    );
                    counts.entry(ch).or_default()[2] += 1;
                }
                Loc::Done => {}
            }
        }
        for (ch, n) in &queued {
            if *n == 0 {
                continue;
            }
            for (id, c) in &self.clients {
                if c.alive && !c.closing && c.channel.as_ref() == Some(ch) {
                    assert!(
                        c.in_flight >= c.rdy,
                        "client {id} is ready while {n} messages wait in {ch:?}"
                    );
                }
            }
        }
        // The broker's own counts agree with the model.
        let stats = sim.broker.stats(&StatsFilter::default());
        for t in stats.topics.iter().flatten() {
            for c in &t.channels {
                let m = counts
                    .get(&(t.topic_name.clone(), c.channel_name.clone()))
                    .copied()
                    .unwrap_or_default();
                assert_eq!(
                    [c.depth, c.deferred_count, c.in_flight_count],
                    m,
                    "{}:{}",
                    t.topic_name,
                    c.channel_name
                );
            }
        }
    }
}

struct Consumer {
    id: ClientId,
    topic: String,
    channel: String,
}

#[derive(Debug)]
enum Action {
    Publish,
    React {
        consumer: ClientId,
        id: MessageId,
        what: u32,
    },
    Rdy {
        consumer: ClientId,
    },
    Crash {
        consumer: ClientId,
    },
}

struct World {
    sim: Sim,
    rng: Xoshiro256PlusPlus,
    consumers: Vec<Consumer>,
    producer: ClientId,
    agenda: BTreeMap<(Time, u64), Action>,
    seq: u64,
    checker: Checker,
    topics: Vec<(String, Vec<String>)>,
    draining: bool,
}

impl World {
    fn r(&mut self, n: u64) -> u64 {
        self.rng.next_u64() % n
    }

    fn at(&mut self, t: Time, a: Action) {
        self.seq += 1;
        self.agenda.insert((t, self.seq), a);
    }

    fn new(seed: u64) -> World {
        let sim = Sim::new(
            Options {
                mem_queue_size: 4,
                ..Options::default()
            },
            seed,
        );
        let mut w = World {
            sim,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x5eed),
            consumers: Vec::new(),
            producer: ClientId(0),
            agenda: BTreeMap::new(),
            seq: 0,
            checker: Checker::default(),
            topics: Vec::new(),
            draining: false,
        };
        for t in 0..1 + w.r(2) {
            let chans: Vec<String> = (0..1 + w.r(2)).map(|c| format!("c{c}")).collect();
            for c in &chans {
                w.sim.broker.create_channel(0, &format!("t{t}"), c).unwrap();
            }
            w.topics.push((format!("t{t}"), chans));
        }
        w.sim.flush();
        w.producer = w.sim.connect();
        for (t, chans) in w.topics.clone() {
            for c in chans {
                for _ in 0..1 + w.r(2) {
                    w.add_consumer(&t, &c);
                }
            }
        }
        for i in 0..20 + w.r(40) {
            let t = i * ms(50) + w.r(ms(50));
            w.at(t, Action::Publish);
        }
        w
    }

    fn add_consumer(&mut self, topic: &str, channel: &str) {
        let c = self.sim.connect();
        let timeout = 1000 + self.r(2000);
        self.sim.send(
            c,
            &Command::Identify(format!(r#"{{"msg_timeout":{timeout}}}"#).into_bytes()),
        );
        self.sim.send(
            c,
            &Command::Sub {
                topic: topic.into(),
                channel: channel.into(),
            },
        );
        let rdy = 1 + self.r(4) as i64;
        self.sim.send(c, &Command::Rdy(rdy));
        self.consumers.push(Consumer {
            id: c,
            topic: topic.into(),
            channel: channel.into(),
        });
        if !self.draining && self.r(4) == 0 {
            let t = self.sim.now() + self.r(3 * SECOND);
            self.at(t, Action::Rdy { consumer: c });
        }
        if !self.draining && self.r(8) == 0 {
            let t = self.sim.now() + self.r(3 * SECOND);
            self.at(t, Action::Crash { consumer: c });
        }
    }

    fn body(&mut self) -> nsqlab_core::Body {
        let n = 1 + self.r(16) as usize;
        (0..n)
            .map(|_| b'a' + self.r(26) as u8)
            .collect::<Vec<u8>>()
            .into()
    }

    fn do_action(&mut self, a: Action) {
        match a {
            Action::Publish => {
                let t = format!("t{}", self.r(self.topics.len() as u64));
                let cmd = match self.r(3) {
                    0 => Command::Pub {
                        topic: t.into(),
                        body: self.body(),
                    },
                    1 => Command::Mpub {
                        topic: t.into(),
                        bodies: (0..1 + self.r(3)).map(|_| self.body()).collect(),
                    },
                    _ => Command::Dpub {
                        topic: t.into(),
                        defer_ms: self.r(2000),
                        body: self.body(),
                    },
                };
                let p = self.producer;
                self.sim.send(p, &cmd);
                assert_eq!(self.sim.frames(p), vec![Frame::Response(b"OK".to_vec())]);
            }
            Action::React { consumer, id, what } => {
                if self.sim.is_closed(consumer) {
                    return;
                }
                let cmd = match what {
                    0..=69 => Command::Fin(id.to_hex()),
                    70..=84 => Command::Req {
                        id: id.to_hex(),
                        timeout_ms: self.r(1500),
                    },
                    85..=89 => Command::Touch(id.to_hex()),
                    _ => return, // ignore it: it will time out
                };
                let touch = matches!(cmd, Command::Touch(_));
                self.sim.send(consumer, &cmd);
                if touch {
                    let t = self.sim.now() + self.r(ms(800));
                    self.at(
                        t,
                        Action::React {
                            consumer,
                            id,
                            what: 0,
                        },
                    );
                }
                // A late FIN/REQ/TOUCH (after a timeout) gets a non-fatal error only.
                for f in self.sim.frames(consumer) {
                    match f {
                        Frame::Error(e) => {
                            assert!(
                                e.ends_with(b"ID not in flight"),
                                "{}",
                                String::from_utf8_lossy(&e)
                            )
                        }
                        Frame::Message(m) => self.schedule(consumer, m.id),
                        Frame::Response(r) => assert_eq!(r, b"_heartbeat_"),
                        Frame::Unknown(..) => panic!("unknown frame"),
                    }
                }
            }
            Action::Rdy { consumer } => {
                if !self.sim.is_closed(consumer) {
                    let n = self.r(5) as i64;
                    self.sim.send(
                        consumer,
                        &Command::Rdy(n.max(if self.draining { 1 } else { 0 })),
                    );
                }
            }
            Action::Crash { consumer } => {
                if !self.sim.is_closed(consumer) {
                    self.sim.disconnect(consumer);
                    let i = self
                        .consumers
                        .iter()
                        .position(|c| c.id == consumer)
                        .unwrap();
                    let c = self.consumers.remove(i);
                    self.add_consumer(&c.topic, &c.channel);
                }
            }
        }
    }

    fn schedule(&mut self, consumer: ClientId, id: MessageId) {
        let what = if self.draining { 0 } else { self.r(100) as u32 };
        let t = self.sim.now() + self.r(ms(600));
        self.at(t, Action::React { consumer, id, what });
    }

    /// Hand out messages consumers received since the last look.
    fn collect(&mut self) {
        let ids: Vec<ClientId> = self.consumers.iter().map(|c| c.id).collect();
        for c in ids {
            for m in self.sim.messages(c) {
                self.schedule(c, m.id);
            }
        }
    }

    fn run(&mut self, limit: Time) {
        loop {
            self.collect();
            self.checker.check_idle(&self.sim);
            let next_action = self.agenda.keys().next().map(|k| k.0);
            let next_timer = self.sim.next_timer();
            let next = match (next_action, next_timer) {
                (Some(a), Some(t)) => a.min(t),
                (a, t) => match a.or(t) {
                    Some(x) => x,
                    None => return,
                },
            };
            if next > limit {
                return;
            }
            if next_timer == Some(next) && next_action.is_none_or(|a| a > next) {
                self.sim.step(next);
                continue;
            }
            // Timers due before the action fire first, one at a time.
            if next_timer.is_some_and(|t| t <= next) {
                self.sim.step(next);
                continue;
            }
            self.sim.advance(next);
            let (_, a) = self.agenda.pop_first().unwrap();
            self.do_action(a);
        }
    }

    fn drain(&mut self) {
        self.draining = true;
        self.agenda.retain(|_, a| matches!(a, Action::React { .. }));
        for a in self.agenda.values_mut() {
            if let Action::React { what, .. } = a {
                *what = 0;
            }
        }
        // Every channel gets a well-behaved consumer.
        for (t, chans) in self.topics.clone() {
            for c in chans {
                self.add_consumer(&t, &c);
            }
        }
        let now = self.sim.now();
        self.run(now + 600 * SECOND);
    }
}

fn run_seed(seed: u64) -> Vec<Event> {
    let mut w = World::new(seed);
    w.run(5 * SECOND);
    w.drain();
    w.checker.check_idle(&w.sim);
    // Nothing lost: every message reached every channel of its topic and was finished.
    for (t, id) in &w.checker.published {
        let chans = &w.topics.iter().find(|(n, _)| n == t).unwrap().1;
        for c in chans {
            let k = (t.clone(), c.clone(), *id);
            assert_eq!(
                w.checker.loc.get(&k),
                Some(&Loc::Done),
                "seed {seed}: {k:?} not finished"
            );
        }
    }
    assert!(!w.checker.published.is_empty());
    std::mem::take(&mut w.sim.events)
}

fn seeds() -> u64 {
    std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000)
}

fn run_range(range: impl Iterator<Item = u64>) {
    for seed in range {
        let r = std::panic::catch_unwind(|| run_seed(seed));
        if let Err(e) = r {
            eprintln!("simulation seed {seed} failed");
            std::panic::resume_unwind(e);
        }
    }
}

#[test]
fn simulation_invariants_even_seeds() {
    run_range((0..seeds()).filter(|s| s % 2 == 0));
}

#[test]
fn simulation_invariants_odd_seeds() {
    run_range((0..seeds()).filter(|s| s % 2 == 1));
}

#[test]
fn same_seed_same_event_log() {
    for seed in [1u64, 42, 977] {
        let a = serde_json::to_string(&run_seed(seed)).unwrap();
        let b = serde_json::to_string(&run_seed(seed)).unwrap();
        assert_eq!(a, b, "seed {seed}");
        assert_ne!(a, serde_json::to_string(&run_seed(seed + 1)).unwrap());
    }
}
