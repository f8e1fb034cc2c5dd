//! The laboratory: the real broker core in virtual time, with scripted producers and
//! consumers, played one event at a time so a learner can follow each step.
//!
//! # Time
//!
//! A lab has one clock, [`Lab::now`]. It moves only forward, one *instant* at a time: the next
//! scripted [`Cue`] or broker timer. Everything the broker does at an instant is queued as
//! events and shown one [`Step`] at a time ([`Lab::step`]); the clock does not move while any
//! is left. Instants where nothing visible happens (a heartbeat) pass silently.
//!
//! A change by hand ([`Lab::publish_by_hand`], [`Lab::set_rdy_by_hand`], …) applies at the
//! current instant: what is left of the instant is shown first (no time passes), then the
//! change, whose first consequence is shown at once and the rest as the next steps.
//!
//! Simulated clients behave like real ones: they answer heartbeats (NOP), and a consumer
//! handles every message it gets, from its first frame, after its processing time.

use crate::i18n::Text;
use crate::view::{Role, Told, View};
use nsqlab_core::event::{Event, EventKind};
use nsqlab_core::protocol::{Command, Frame};
use nsqlab_core::sim::Sim;
use nsqlab_core::time::{ms, Time};
use nsqlab_core::{Body, ClientId, MessageId, Options, TimerStrategy};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, VecDeque};

pub use crate::view::{secs, short, time_of_day, Claim, Spot};

/// A simulated consumer's behaviour.
#[derive(Debug, Clone, PartialEq)]
pub struct Consumer {
    pub id: ClientId,
    pub name: Text,
    pub topic: String,
    pub channel: String,
    pub rdy: i64,
    /// How long it works on a message before answering.
    pub processing_ms: u64,
    /// Percent of messages it fails (answers REQ).
    pub fail_rate: u64,
    /// REQ delay: base × attempts (a simple backoff).
    pub req_delay_ms: u64,
    /// Crashed consumers never answer; their messages time out.
    pub crashed: bool,
    pub msg_timeout_ms: u64,
}

/// A simulated producer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Producer {
    pub id: ClientId,
    pub name: Text,
}

/// Something scripted to happen at a virtual instant.
#[derive(Debug, Clone, PartialEq)]
pub enum Cue {
    /// A producer sends a command (PUB, MPUB, DPUB).
    Send { producer: usize, cmd: Command },
    /// A consumer answers a message.
    Answer {
        consumer: ClientId,
        id: MessageId,
        attempts: u16,
    },
    /// A consumer connects (index into `Lab::waiting`).
    Join { consumer: usize },
    /// A consumer crashes: it stops answering (and its messages will time out).
    Crash { consumer: ClientId },
    /// Change a consumer's RDY.
    SetRdy { consumer: ClientId, rdy: i64 },
    /// The broker is killed (`kill -9`) and started again: it rebuilds itself from its store,
    /// and the clients connect again.
    CrashRestart,
}

/// What the broker held when it was killed, by where it was (for the comparison with nsqd).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CrashReport {
    pub at: Time,
    /// Ready in a memory queue.
    pub memory: Vec<MessageId>,
    /// Ready in a disk backlog.
    pub disk: Vec<MessageId>,
    pub in_flight: Vec<MessageId>,
    pub deferred: Vec<MessageId>,
    /// Messages finished before the crash.
    pub finished: u64,
}

/// How a message is answered by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Fin,
    Req,
    Touch,
}

/// What a step did, in plain words, what the words claim about the picture, and what kind of
/// step it was (for the page's logic).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub at: Time,
    pub text: Text,
    pub claims: Vec<Claim>,
    pub what: crate::view::What,
}

impl Step {
    /// The words in English.
    pub fn en(&self) -> String {
        self.text.en()
    }
}

/// Something waiting to be shown.
#[derive(Debug, Clone, PartialEq)]
enum Pending {
    Event(Event),
    /// Words of the lab's own (a broker error a client received).
    Note(Time, Text),
    /// The broker is killed here (after what was queued before it is shown).
    Crash,
    /// The killed broker starts again from its store (the step after the kill).
    Restart,
}

/// At most this many instants are passed in one call (a safety net: the browser never hangs).
const MAX_INSTANTS: usize = 1_000_000;

/// The playback engine. A clone is an independent copy (a snapshot to come back to).
#[derive(Clone)]
pub struct Lab {
    pub sim: Sim,
    agenda: BTreeMap<(Time, u64), Cue>,
    seq: u64,
    pub consumers: Vec<Consumer>,
    /// Consumers not connected yet (joined by a scripted `Join`).
    pub waiting: Vec<Consumer>,
    pub producers: Vec<Producer>,
    pending: VecDeque<Pending>,
    pub view: View,
    pub log: Vec<Step>,
    rng: Xoshiro256PlusPlus,
    /// When set, the lab plays this cluster instead of its own broker (the cluster scenario).
    pub cluster: Option<Box<crate::cluster::Cluster>>,
    /// When set, the lab shows this replicated cluster's run (the replication scenario).
    pub replication: Option<Box<crate::replication::Replication>>,
}

impl Lab {
    /// A lab around a fresh broker; heap tracing and events are always on here.
    pub fn new(mut opts: Options, seed: u64) -> Lab {
        opts.events = true;
        opts.heap_trace = true;
        let view = View::new(
            opts.mem_queue_size,
            opts.timer_strategy == TimerStrategy::ScanLoop,
        );
        Lab {
            sim: Sim::new(opts, seed),
            agenda: BTreeMap::new(),
            seq: 0,
            consumers: Vec::new(),
            waiting: Vec::new(),
            producers: Vec::new(),
            pending: VecDeque::new(),
            view,
            log: Vec::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x1ab),
            cluster: None,
            replication: None,
        }
    }

    /// A lab playing the cluster scenario ([`crate::cluster`]).
    pub fn cluster(seed: u64) -> Lab {
        let mut lab = Lab::new(Options::default(), seed);
        lab.cluster = Some(Box::new(crate::cluster::Cluster::scenario(seed)));
        lab
    }

    /// A lab showing the replication scenario ([`crate::replication`]).
    pub fn replication(seed: u64) -> Lab {
        let mut lab = Lab::new(Options::default(), seed);
        lab.replication = Some(Box::new(crate::replication::Replication::new(seed)));
        lab
    }

    /// The lab's clock.
    pub fn now(&self) -> Time {
        if let Some(r) = &self.replication {
            return r.now;
        }
        match &self.cluster {
            Some(c) => c.now,
            None => self.view.now,
        }
    }

    fn nothing_pending(&self) -> bool {
        if let Some(r) = &self.replication {
            return r.nothing_pending();
        }
        match &self.cluster {
            Some(c) => c.nothing_pending(),
            None => self.pending.is_empty(),
        }
    }

    /// Schedule an action.
    pub fn at(&mut self, t: Time, a: Cue) {
        self.seq += 1;
        self.agenda.insert((t, self.seq), a);
    }

    /// Add a producer connection; returns its index.
    pub fn add_producer(&mut self) -> usize {
        let name = match self.producers.len() {
            0 => Text::new("who.producer"),
            n => Text::new("who.producer.n").arg("n", n + 1),
        };
        let id = self.sim.connect();
        self.view.name_actor(id, name.clone(), Role::Producer);
        self.producers.push(Producer { id, name });
        self.collect();
        self.producers.len() - 1
    }

    /// Connect a consumer now (IDENTIFY with its msg_timeout, SUB, RDY).
    pub fn add_consumer(&mut self, mut c: Consumer) -> ClientId {
        let id = self.sim.connect();
        c.id = id;
        self.view.name_actor(id, c.name.clone(), Role::Consumer);
        let identify = serde_json::json!({
            "msg_timeout": c.msg_timeout_ms.max(1000),
            "client_id": c.name.en(),
        });
        self.sim
            .send(id, &Command::Identify(identify.to_string().into_bytes()));
        self.sim.send(
            id,
            &Command::Sub {
                topic: c.topic.clone(),
                channel: c.channel.clone(),
            },
        );
        self.sim.send(id, &Command::Rdy(c.rdy));
        self.consumers.push(c);
        // Messages it gets at once (it joined while some waited) are handled like any other.
        self.collect();
        id
    }

    /// A consumer template (not yet connected).
    pub fn consumer(name: Text, topic: &str, channel: &str, rdy: i64) -> Consumer {
        Consumer {
            id: ClientId(0),
            name,
            topic: topic.into(),
            channel: channel.into(),
            rdy,
            processing_ms: 500,
            fail_rate: 0,
            req_delay_ms: 1000,
            crashed: false,
            msg_timeout_ms: 5000,
        }
    }

    /// Make a channel before anyone subscribes (nsqd's `/channel/create`).
    pub fn create_channel(&mut self, topic: &str, channel: &str) {
        let now = self.sim.now();
        self.sim
            .broker
            .create_channel(now, topic, channel)
            .expect("valid names");
        self.sim.flush();
        self.collect();
    }

    /// Whether anything will happen without the learner: an event not shown yet, a scripted
    /// action, or a message whose timer will fire (deferred or in flight).
    fn has_future(&self) -> bool {
        !self.pending.is_empty() || !self.agenda.is_empty() || self.timers_with_messages()
    }

    fn timers_with_messages(&self) -> bool {
        let b = &self.sim.broker;
        b.topics().any(|t| {
            t.channels.values().any(|id| {
                b.channel_by_id(*id)
                    .is_some_and(|c| !c.deferred.is_empty() || !c.in_flight.is_empty())
            })
        })
    }

    /// When the next step happens, if anything is left to happen by itself.
    pub fn next_time(&self) -> Option<Time> {
        if let Some(r) = &self.replication {
            return r.next_time();
        }
        if let Some(c) = &self.cluster {
            return c.next_time();
        }
        if !self.pending.is_empty() {
            return Some(self.view.now);
        }
        if !self.has_future() {
            return None;
        }
        let a = self.agenda.keys().next().map(|k| k.0);
        let t = self.sim.next_timer();
        match (a, t) {
            (Some(a), Some(t)) => Some(a.min(t)),
            (a, t) => a.or(t),
        }
    }

    /// Nothing is left to happen by itself: the scenario (or the learner's changes) played out.
    pub fn is_finished(&self) -> bool {
        let loading = self
            .replication
            .as_ref()
            .is_some_and(|r| !matches!(r.run, crate::replication::Loaded::Ready(_)));
        self.next_time().is_none() && !loading
    }

    /// Show the next event of the current instant, if one is left.
    pub fn show_next(&mut self) -> Option<Step> {
        if let Some(r) = &mut self.replication {
            return r.show_next(&mut self.log);
        }
        if let Some(c) = &mut self.cluster {
            return c.show_next(&mut self.log);
        }
        while let Some(p) = self.pending.pop_front() {
            let (at, told) = match p {
                Pending::Event(e) => match self.view.apply(&e) {
                    Some(t) => (e.at, t),
                    None => continue,
                },
                Pending::Note(at, text) => (at, Told::from(text)),
                Pending::Crash => {
                    self.kill();
                    continue;
                }
                Pending::Restart => {
                    self.restart();
                    continue;
                }
            };
            let step = Step {
                at,
                text: told.text,
                claims: told.claims,
                what: told.what,
            };
            self.log.push(step.clone());
            // Bookkeeping right behind it (nothing to show) is applied now, so the state at a
            // step is the same however it was reached.
            while let Some(Pending::Event(e)) = self.pending.front() {
                if !View::is_silent(&e.kind) {
                    break;
                }
                if let Some(Pending::Event(e)) = self.pending.pop_front() {
                    let _ = self.view.apply(&e);
                }
            }
            return Some(step);
        }
        None
    }

    /// Show every event left at the current instant (no time passes).
    pub fn flush_instant(&mut self) {
        while self.show_next().is_some() {}
    }

    /// Show one step. `None` when nothing is left to happen by itself.
    pub fn step(&mut self) -> Option<Step> {
        for _ in 0..MAX_INSTANTS {
            let t = self.next_time()?;
            if let Some(s) = self.step_at(t) {
                return Some(s);
            }
        }
        None
    }

    /// Show the next step if it is at `t` (which must be [`Lab::next_time`]); `None` if the
    /// instant at `t` had nothing to show.
    pub fn step_at(&mut self, t: Time) -> Option<Step> {
        if self.nothing_pending() {
            self.advance_to(t);
        }
        self.show_next()
    }

    /// Jump past what is left of this instant to the next one, and show its first step.
    pub fn next_timer(&mut self) -> Option<Step> {
        self.flush_instant();
        self.step()
    }

    /// Play every step up to virtual time `t`; the clock ends at `t`.
    pub fn run_until(&mut self, t: Time) -> usize {
        let mut n = 0;
        for _ in 0..MAX_INSTANTS {
            match self.next_time() {
                Some(x) if x <= t => {
                    if self.nothing_pending() {
                        self.advance_to(x);
                    }
                    while self.show_next().is_some() {
                        n += 1;
                    }
                }
                _ => break,
            }
        }
        self.idle_to(t);
        n
    }

    /// Let the clock run to `t` with nothing to show on the way: the broker's own timers
    /// (heartbeats) fire and are answered, silently.
    pub fn idle_to(&mut self, t: Time) {
        if let Some(r) = &mut self.replication {
            r.idle_to(t);
            return;
        }
        if let Some(c) = &mut self.cluster {
            c.idle_to(t);
            return;
        }
        if t <= self.view.now || !self.pending.is_empty() {
            return;
        }
        if self.next_time().is_some_and(|x| x <= t) {
            // Something visible comes first: this is not idle time.
            return;
        }
        for _ in 0..MAX_INSTANTS {
            match self.sim.next_timer() {
                Some(x) if x <= t => {
                    self.sim.advance(x);
                    self.collect();
                    // Whatever a silent timer did is applied, not told.
                    while let Some(p) = self.pending.pop_front() {
                        if let Pending::Event(e) = p {
                            let _ = self.view.apply(&e);
                        }
                    }
                }
                _ => break,
            }
        }
        self.sim.advance(t);
        self.view.now = self.view.now.max(t);
    }

    /// Do everything due at the instant `t` (the broker's timers, then scripted actions) and
    /// queue its events. The clock moves to `t`.
    fn advance_to(&mut self, t: Time) {
        if let Some(r) = &mut self.replication {
            r.advance_to(t);
            return;
        }
        if let Some(c) = &mut self.cluster {
            c.advance_to(t);
            return;
        }
        self.sim.advance(t);
        self.view.now = self.view.now.max(t);
        self.collect();
        while let Some(entry) = self.agenda.first_entry() {
            if entry.key().0 > t {
                break;
            }
            let action = entry.remove();
            self.act(action);
            self.collect();
        }
    }

    fn act(&mut self, a: Cue) {
        match a {
            Cue::Send { producer, cmd } => self.send(producer, cmd),
            Cue::Answer {
                consumer,
                id,
                attempts,
            } => {
                let Some(c) = self.consumers.iter().find(|c| c.id == consumer).cloned() else {
                    return;
                };
                if c.crashed || self.sim.is_closed(consumer) {
                    return;
                }
                let fail = c.fail_rate > 0 && self.rng.next_u64() % 100 < c.fail_rate;
                let cmd = if fail {
                    Command::Req {
                        id: id.to_hex(),
                        timeout_ms: c.req_delay_ms * attempts as u64,
                    }
                } else {
                    Command::Fin(id.to_hex())
                };
                self.sim.send(consumer, &cmd);
            }
            Cue::Join { consumer } => {
                if let Some(c) = self.waiting.get(consumer).cloned() {
                    self.add_consumer(c);
                }
            }
            Cue::Crash { consumer } => {
                if let Some(c) = self.consumers.iter_mut().find(|c| c.id == consumer) {
                    c.crashed = true;
                    let text = Text::new("crash.consumer").nest("who", c.name.clone());
                    self.pending.push_back(Pending::Note(self.view.now, text));
                }
            }
            Cue::SetRdy { consumer, rdy } => {
                if let Some(c) = self.consumers.iter_mut().find(|c| c.id == consumer) {
                    c.rdy = rdy;
                }
                self.sim.send(consumer, &Command::Rdy(rdy));
            }
            Cue::CrashRestart => self.pending.push_back(Pending::Crash),
        }
    }

    /// `kill -9`: what was shown of this instant stays, the broker's memory is gone. Until the
    /// restart (the next step, at the same instant) the broker is drawn down, its clients
    /// disconnected, and what its store holds is drawn on disk, where it is.
    fn kill(&mut self) {
        // What the old broker would have done after this point never happens.
        self.pending.clear();
        self.sim.events.clear();
        let now = self.sim.now();
        let mut report = CrashReport {
            at: now,
            ..CrashReport::default()
        };
        for c in self.view.channels.values_mut() {
            let memory: Vec<MessageId> = c
                .queue
                .iter()
                .filter(|m| !m.on_disk)
                .map(|m| m.id)
                .collect();
            let disk: Vec<MessageId> = c.queue.iter().filter(|m| m.on_disk).map(|m| m.id).collect();
            let in_flight: Vec<MessageId> = c.in_flight.iter().map(|m| m.id).collect();
            let deferred: Vec<(MessageId, Time)> = c
                .heap
                .iter()
                .enumerate()
                .filter(|(i, _)| c.hole != Some(*i))
                .map(|(_, e)| *e)
                .collect();
            // The store holds every one of them (it wrote each before the OK), drawn in the
            // order they were published (IDs rise).
            c.stored = memory
                .iter()
                .chain(&in_flight)
                .chain(&disk)
                .map(|&id| (id, None))
                .chain(deferred.iter().map(|&(id, due)| (id, Some(due))))
                .collect();
            c.stored.sort_by_key(|&(id, _)| id);
            self.view
                .sent_before_crash
                .extend(in_flight.iter().copied());
            report.memory.extend(memory);
            report.disk.extend(disk);
            report.in_flight.extend(in_flight);
            report.deferred.extend(deferred.iter().map(|e| e.0));
            report.finished += c.finished;
            // The broker's memory is gone.
            c.queue.clear();
            c.heap.clear();
            c.hole = None;
            c.in_flight.clear();
            c.consumers.clear();
        }
        // The connections die with the broker.
        for a in self.view.actors.values_mut() {
            a.connected = false;
        }
        self.view.down = true;
        self.pending.push_back(Pending::Note(
            now,
            Text::new("crash.killed")
                .arg("memory", report.memory.len())
                .arg("disk", report.disk.len())
                .arg("flight", report.in_flight.len())
                .arg("deferred", report.deferred.len()),
        ));
        self.view.crash = Some(report);
        self.pending.push_back(Pending::Restart);
    }

    /// The killed broker starts again from its store (each message it gives back is a step,
    /// and leaves the store's lane of the drawing), and the clients connect again: the same
    /// programs, so what they counted before the crash carries on.
    fn restart(&mut self) {
        let now = self.sim.now();
        self.view.down = false;
        let producers = std::mem::take(&mut self.producers);
        let consumers = std::mem::take(&mut self.consumers);
        // The new broker numbers its clients afresh: the old connections' actors go first.
        let mut before = std::mem::take(&mut self.view.actors);
        self.sim = self.sim.restart(now ^ 0x5eed);
        self.pending
            .push_back(Pending::Note(now, Text::new("crash.replayed")));
        self.collect();
        for p in producers {
            let id = self.sim.connect();
            self.view.name_actor(id, p.name.clone(), Role::Producer);
            if let Some(a) = before.remove(&p.id) {
                self.view.carry_on(a, id);
            }
            self.producers.push(Producer { id, name: p.name });
        }
        for c in consumers {
            let old = c.id;
            let id = self.add_consumer(c);
            if let Some(a) = before.remove(&old) {
                self.view.carry_on(a, id);
            }
        }
        self.collect();
    }

    /// A producer sends a command; the messages it publishes are labelled from their bodies.
    fn send(&mut self, producer: usize, cmd: Command) {
        let Some(p) = self.producers.get(producer).map(|p| p.id) else {
            return;
        };
        let bodies: Vec<Body> = match &cmd {
            Command::Pub { body, .. } | Command::Dpub { body, .. } => vec![body.clone()],
            Command::Mpub { bodies, .. } => bodies.clone(),
            _ => Vec::new(),
        };
        let start = self.sim.events.len();
        self.sim.send(p, &cmd);
        let mut bodies = bodies.iter();
        let published: Vec<MessageId> = self.sim.events[start..]
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Published {
                    id,
                    client: Some(c),
                    ..
                } if *c == p => Some(*id),
                _ => None,
            })
            .collect();
        for id in published {
            if let Some(b) = bodies.next() {
                self.view.label_message(id, b);
            }
        }
        self.collect();
    }

    /// Before a change by hand: show what is left of this instant (no time passes).
    fn by_hand(&mut self) {
        self.flush_instant();
        let now = self.view.now;
        self.sim.advance(now);
    }

    /// FIN, REQ (1 s) or TOUCH a message by hand (the in-flight panel's buttons); the
    /// consumer's own answer to it is cancelled (but for TOUCH).
    pub fn answer_by_hand(&mut self, consumer: ClientId, id: MessageId, what: Answer) {
        self.by_hand();
        let cmd = match what {
            Answer::Req => Command::Req {
                id: id.to_hex(),
                timeout_ms: 1000,
            },
            Answer::Touch => Command::Touch(id.to_hex()),
            Answer::Fin => Command::Fin(id.to_hex()),
        };
        if what != Answer::Touch {
            self.agenda.retain(|_, a| {
                !matches!(a, Cue::Answer { consumer: c, id: m, .. } if *c == consumer && *m == id)
            });
        }
        self.sim.send(consumer, &cmd);
        self.collect();
        self.show_next();
    }

    /// Connect a new consumer by hand (the manage form); returns its client ID.
    pub fn add_consumer_by_hand(&mut self, topic: &str, channel: &str, rdy: i64) -> ClientId {
        self.by_hand();
        let consumers = self
            .view
            .actors
            .values()
            .filter(|a| a.role == Role::Consumer);
        let name = Text::new("who.consumer.n").arg("n", consumers.count() + 1);
        let id = self.add_consumer(Lab::consumer(name, topic, channel, rdy));
        self.show_next();
        id
    }

    /// Disconnect a consumer.
    pub fn remove_consumer_by_hand(&mut self, consumer: ClientId) {
        self.by_hand();
        self.sim.disconnect(consumer);
        self.collect();
        self.show_next();
    }

    /// Change a consumer's RDY now.
    pub fn set_rdy_by_hand(&mut self, consumer: ClientId, rdy: i64) {
        self.by_hand();
        self.act(Cue::SetRdy { consumer, rdy });
        self.collect();
        self.show_next();
    }

    /// Change how a consumer handles the messages it gets from now on.
    pub fn set_behaviour(&mut self, consumer: ClientId, processing_ms: u64, fail_rate: u64) {
        if let Some(c) = self.consumers.iter_mut().find(|c| c.id == consumer) {
            c.processing_ms = processing_ms;
            c.fail_rate = fail_rate.min(100);
        }
    }

    /// Crash a consumer (it stops answering; its messages time out), or bring it back (it
    /// answers what it gets from then on).
    pub fn toggle_crash(&mut self, consumer: ClientId) {
        if let Some(c) = self.consumers.iter_mut().find(|c| c.id == consumer) {
            c.crashed = !c.crashed;
        }
    }

    /// nsqd's `/topic/create|delete`, `/channel/create|delete` by hand.
    pub fn admin_by_hand(&mut self, op: Admin, topic: &str, channel: &str) -> Result<(), String> {
        self.by_hand();
        let now = self.view.now;
        let b = &mut self.sim.broker;
        let res = match op {
            Admin::CreateTopic => b.create_topic(now, topic),
            Admin::DeleteTopic => b.delete_topic(now, topic),
            Admin::CreateChannel => b.create_channel(now, topic, channel),
            Admin::DeleteChannel => b.delete_channel(now, topic, channel),
        };
        self.sim.flush();
        self.collect();
        self.show_next();
        res.map_err(|e| e.to_string())
    }

    /// Publish by hand (the publish form): PUB, DPUB, an MPUB of `count`, or `count` DPUBs
    /// (MPUB has no delay). Bodies of several are numbered ("hello 1", "hello 2", …).
    pub fn publish_by_hand(&mut self, topic: &str, body: &str, defer_ms: u64, count: usize) {
        self.by_hand();
        let p = match self
            .producers
            .iter()
            .position(|p| !self.sim.is_closed(p.id))
        {
            Some(p) => p,
            None => self.add_producer(),
        };
        let numbered = |i: usize| format!("{body} {}", i + 1).into_bytes();
        let cmds: Vec<Command> = match (count, defer_ms) {
            (1, 0) => vec![Command::Pub {
                topic: topic.into(),
                body: body.as_bytes().into(),
            }],
            (1, d) => vec![Command::Dpub {
                topic: topic.into(),
                defer_ms: d,
                body: body.as_bytes().into(),
            }],
            (n, 0) => vec![Command::Mpub {
                topic: topic.into(),
                bodies: (0..n).map(|i| numbered(i).into()).collect(),
            }],
            (n, d) => (0..n)
                .map(|i| Command::Dpub {
                    topic: topic.into(),
                    defer_ms: d,
                    body: numbered(i).into(),
                })
                .collect(),
        };
        for cmd in cmds {
            self.send(p, cmd);
        }
        self.show_next();
    }

    /// Move new broker events into the pending queue; answer heartbeats; schedule consumers'
    /// answers to the messages they received; note errors clients received.
    fn collect(&mut self) {
        let at = self.sim.now();
        self.pending
            .extend(self.sim.events.drain(..).map(Pending::Event));
        let producers: Vec<ClientId> = self.producers.iter().map(|p| p.id).collect();
        for p in producers {
            for f in self.sim.frames(p) {
                self.on_frame(p, f, at, None);
            }
        }
        // Consumers the broker closed (disconnected, channel deleted) are gone.
        let sim = &self.sim;
        self.consumers.retain(|c| !sim.is_closed(c.id));
        let consumers: Vec<Consumer> = self.consumers.clone();
        for c in consumers {
            for f in self.sim.frames(c.id) {
                self.on_frame(c.id, f, at, Some(&c));
            }
        }
    }

    fn on_frame(&mut self, client: ClientId, f: Frame, at: Time, consumer: Option<&Consumer>) {
        match f {
            Frame::Response(r) if r == b"_heartbeat_" => self.sim.send(client, &Command::Nop),
            Frame::Message(m) => {
                if let Some(c) = consumer.filter(|c| !c.crashed) {
                    self.at(
                        at + ms(c.processing_ms),
                        Cue::Answer {
                            consumer: c.id,
                            id: m.id,
                            attempts: m.attempts,
                        },
                    );
                }
            }
            Frame::Error(e) => {
                let e = String::from_utf8_lossy(&e).into_owned();
                let late = e.starts_with("E_FIN_FAILED") || e.starts_with("E_REQ_FAILED");
                let text = Text::new(if late {
                    "note.error.late"
                } else {
                    "note.error"
                })
                .nest("who", self.view.who(client))
                .arg("error", e);
                self.pending.push_back(Pending::Note(at, text));
            }
            _ => {}
        }
    }

    /// Why nothing more happens, when messages still wait: no consumer is ready for them.
    pub fn stuck(&self) -> Vec<Text> {
        if self.cluster.is_some() || self.replication.is_some() {
            return Vec::new();
        }
        self.view
            .channels
            .values()
            .filter(|c| c.depth() > 0)
            .map(|c| {
                let any = self
                    .consumers
                    .iter()
                    .any(|k| k.topic == c.topic && k.channel == c.name);
                Text::new(if any {
                    "stuck.notready"
                } else {
                    "stuck.nobody"
                })
                .arg("n", c.depth())
                .arg("topic", &c.topic)
                .arg("channel", &c.name)
            })
            .collect()
    }

    /// What happened, for the end of a scenario.
    pub fn summary(&self) -> Vec<Text> {
        if let Some(r) = &self.replication {
            return r.summary();
        }
        if let Some(c) = &self.cluster {
            return c.summary();
        }
        let v = &self.view;
        let mut out = vec![if v.published_deferred > 0 {
            Text::new("summary.published.deferred")
                .arg("n", v.published)
                .arg("d", v.published_deferred)
        } else {
            Text::new("summary.published").arg("n", v.published)
        }];
        for c in v.channels.values() {
            out.push(
                Text::new("summary.channel")
                    .arg("topic", &c.topic)
                    .arg("channel", &c.name)
                    .arg("fin", c.finished)
                    .arg("req", c.requeued)
                    .arg("timeout", c.timed_out)
                    .arg(
                        "waiting",
                        c.depth() + c.deferred() as u64 + c.in_flight.len() as u64,
                    ),
            );
        }
        for a in v.actors.values().filter(|a| a.role == Role::Consumer) {
            let key = if a.connected {
                "summary.consumer"
            } else {
                "summary.consumer.gone"
            };
            out.push(
                Text::new(key)
                    .nest("who", a.name.clone())
                    .arg("received", a.received)
                    .arg("fin", a.finished)
                    .arg("req", a.requeued)
                    .arg("timeout", a.timed_out),
            );
        }
        let late: Vec<Time> = v
            .lateness
            .iter()
            .map(|l| l.found.saturating_sub(l.due))
            .collect();
        if let Some(max) = late.iter().max() {
            out.push(
                Text::new("summary.lateness")
                    .arg("n", late.len())
                    .arg("max", crate::view::duration(*max))
                    .arg(
                        "mean",
                        crate::view::duration(late.iter().sum::<Time>() / late.len() as Time),
                    ),
            );
        }
        out.extend(self.stuck());
        out
    }
}

/// The manage form's admin calls (nsqd's HTTP `/topic/…` and `/channel/…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Admin {
    CreateTopic,
    DeleteTopic,
    CreateChannel,
    DeleteChannel,
}

impl Admin {
    /// nsqd's path for it.
    pub fn path(self) -> &'static str {
        match self {
            Admin::CreateTopic => "/topic/create",
            Admin::DeleteTopic => "/topic/delete",
            Admin::CreateChannel => "/channel/create",
            Admin::DeleteChannel => "/channel/delete",
        }
    }

    pub fn needs_channel(self) -> bool {
        matches!(self, Admin::CreateChannel | Admin::DeleteChannel)
    }
}

#[cfg(test)]
mod tests;
