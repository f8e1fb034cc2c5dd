//! The laboratory: the real broker core in virtual time, with scripted producers and
//! consumers, played one event at a time so a learner can follow each step.
//!
//! `Lab::step` shows exactly one broker event (a publish, a heap swap, a delivery, a timeout…)
//! and says in plain words what it did; `Lab::run_until` plays everything up to a virtual
//! instant. The display state ([`View`]) is rebuilt from the events themselves, so a heap is
//! drawn as it was after each single swap, not only as it ends up.

use nsqlab_core::event::{CloseReason, Event, EventKind, HeapKind, Place};
use nsqlab_core::pqueue::HeapOp;
use nsqlab_core::protocol::{Command, Frame};
use nsqlab_core::sim::Sim;
use nsqlab_core::time::{ms, Time, MILLISECOND};
use nsqlab_core::{ClientId, MessageId, Options};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, VecDeque};

/// A simulated consumer's behaviour.
#[derive(Debug, Clone, PartialEq)]
pub struct Consumer {
    pub id: ClientId,
    pub name: String,
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

/// Something scripted to happen at a virtual instant.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A producer sends a command (PUB, MPUB, DPUB).
    Send { producer: usize, cmd: Command },
    /// A consumer answers a message.
    Answer {
        consumer: ClientId,
        id: MessageId,
        attempts: u16,
    },
    /// A consumer connects (index into `Lab::consumers` to activate).
    Join { consumer: usize },
    /// A consumer crashes: it stops answering (and its messages will time out).
    Crash { consumer: ClientId },
    /// Change a consumer's RDY.
    SetRdy { consumer: ClientId, rdy: i64 },
}

/// One message as the view places it.
#[derive(Debug, Clone, PartialEq)]
pub struct Chip {
    pub id: MessageId,
    pub on_disk: bool,
}

/// A message in flight, for the countdown bars.
#[derive(Debug, Clone, PartialEq)]
pub struct InFlightChip {
    pub id: MessageId,
    pub client: ClientId,
    pub sent: Time,
    pub deadline: Time,
    pub attempts: u16,
}

/// One channel as drawn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChannelView {
    pub topic: String,
    pub name: String,
    pub queue: Vec<Chip>,
    /// The deferred heap in array order: (message, due time).
    pub heap: Vec<(MessageId, Time)>,
    pub in_flight: Vec<InFlightChip>,
    pub finished: u64,
    pub requeued: u64,
    pub timed_out: u64,
    pub consumers: Vec<ClientId>,
}

/// The display state, rebuilt event by event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct View {
    pub now: Time,
    /// Topics with the messages they hold (no channel yet, or paused).
    pub topics: BTreeMap<String, Vec<Chip>>,
    /// Channels by (topic, channel).
    pub channels: BTreeMap<(String, String), ChannelView>,
    /// The message the last step was about.
    pub highlight: Option<MessageId>,
    /// Heap indices the last step touched (for the tree view).
    pub heap_marks: Vec<usize>,
    /// The channel whose heap the last step touched.
    pub heap_channel: Option<(String, String)>,
    /// When each deferred message was due, and when it was delivered (lateness chart).
    pub lateness: Vec<(MessageId, Time, Time)>,
    due_of: BTreeMap<MessageId, Time>,
    /// Times are Unix time (live mode): show them as a UTC time of day.
    pub wall_clock: bool,
}

/// What a step did, in plain words.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub at: Time,
    pub text: String,
}

/// The playback engine.
pub struct Lab {
    pub sim: Sim,
    agenda: BTreeMap<(Time, u64), Action>,
    seq: u64,
    pub consumers: Vec<Consumer>,
    /// Consumers not connected yet (joined by a scripted `Join`).
    pub waiting: Vec<Consumer>,
    pub producers: Vec<ClientId>,
    pending: VecDeque<Event>,
    seen: usize,
    pub view: View,
    pub log: Vec<Step>,
    rng: Xoshiro256PlusPlus,
}

/// Short form of an ID for text: the last 8 hex digits (nsqd's layout puts the time in the
/// high bits and the node and sequence in the low ones, so these tell messages apart).
pub fn short(id: MessageId) -> String {
    let s = id.to_string();
    format!("…{}", &s[s.len() - 8..])
}

/// Seconds with millisecond precision, for text.
pub fn secs(t: Time) -> String {
    format!("{:.3} s", t as f64 / 1e9)
}

/// A Unix time as a UTC time of day, `HH:MM:SS.mmm`.
pub fn time_of_day(t: Time) -> String {
    let ms_total = t / 1_000_000;
    let s = (ms_total / 1000) % 86_400;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        s / 3600,
        (s / 60) % 60,
        s % 60,
        ms_total % 1000
    )
}

impl Lab {
    /// A lab around a fresh broker; heap tracing and events are always on here.
    pub fn new(mut opts: Options, seed: u64) -> Lab {
        opts.events = true;
        opts.heap_trace = true;
        Lab {
            sim: Sim::new(opts, seed),
            agenda: BTreeMap::new(),
            seq: 0,
            consumers: Vec::new(),
            waiting: Vec::new(),
            producers: Vec::new(),
            pending: VecDeque::new(),
            seen: 0,
            view: View::default(),
            log: Vec::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x1ab),
        }
    }

    pub fn now(&self) -> Time {
        self.view.now
    }

    /// Schedule an action.
    pub fn at(&mut self, t: Time, a: Action) {
        self.seq += 1;
        self.agenda.insert((t, self.seq), a);
    }

    /// Add a producer connection; returns its index.
    pub fn add_producer(&mut self) -> usize {
        let id = self.sim.connect();
        self.producers.push(id);
        self.producers.len() - 1
    }

    /// Connect a consumer now (IDENTIFY with its msg_timeout, SUB, RDY).
    pub fn add_consumer(&mut self, mut c: Consumer) -> ClientId {
        let id = self.sim.connect();
        c.id = id;
        let identify = format!(
            r#"{{"msg_timeout":{},"client_id":"{}"}}"#,
            c.msg_timeout_ms.max(1000),
            c.name
        );
        self.sim.send(id, &Command::Identify(identify.into_bytes()));
        self.sim.send(
            id,
            &Command::Sub {
                topic: c.topic.clone(),
                channel: c.channel.clone(),
            },
        );
        self.sim.send(id, &Command::Rdy(c.rdy));
        self.sim.frames(id);
        self.consumers.push(c);
        id
    }

    /// A consumer template (not yet connected).
    pub fn consumer(name: &str, topic: &str, channel: &str, rdy: i64) -> Consumer {
        Consumer {
            id: ClientId(0),
            name: name.into(),
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

    /// When the next step happens, if anything is left to do.
    pub fn next_time(&self) -> Option<Time> {
        if !self.pending.is_empty() {
            return Some(self.view.now);
        }
        let a = self.agenda.keys().next().map(|k| k.0);
        let t = self.sim.next_timer();
        match (a, t) {
            (Some(a), Some(t)) => Some(a.min(t)),
            (a, t) => a.or(t),
        }
    }

    /// Whether only heartbeats and idle timers are left (nothing a learner would see).
    fn only_idle_timers_left(&self) -> bool {
        self.pending.is_empty()
            && self.agenda.is_empty()
            && self
                .view
                .channels
                .values()
                .all(|c| c.heap.is_empty() && c.in_flight.is_empty())
    }

    /// Show one event. Returns what it did, or `None` when nothing is left.
    pub fn step(&mut self) -> Option<Step> {
        self.step_until(Time::MAX)
    }

    /// Show one event, but do not move the clock past `limit`.
    fn step_until(&mut self, limit: Time) -> Option<Step> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                let text = self.view.apply(&e);
                let Some(text) = text else { continue };
                let s = Step { at: e.at, text };
                self.log.push(s.clone());
                return Some(s);
            }
            if self.only_idle_timers_left() || self.next_time().is_none_or(|t| t > limit) {
                return None;
            }
            self.advance()?;
        }
    }

    /// Jump past everything at the current instant to the next timer (or action) and show its
    /// first step.
    pub fn next_timer(&mut self) -> Option<Step> {
        let now = self.view.now;
        while self.pending.front().is_some_and(|e| e.at <= now) {
            self.step();
        }
        self.step()
    }

    /// Play every step up to virtual time `t`.
    pub fn run_until(&mut self, t: Time) -> usize {
        let mut n = 0;
        while self.next_time().is_some_and(|x| x <= t) {
            if self.step_until(t).is_none() {
                break;
            }
            n += 1;
        }
        if self.view.now < t && self.pending.is_empty() {
            self.view.now = t;
        }
        n
    }

    /// Do the next scripted action or broker timer; queue its events.
    fn advance(&mut self) -> Option<()> {
        let a = self.agenda.keys().next().map(|k| k.0);
        let t = self.sim.next_timer();
        let next = match (a, t) {
            (Some(a), Some(t)) => a.min(t),
            (x, y) => x.or(y)?,
        };
        if t == Some(next) && a.is_none_or(|a| a > next) {
            self.sim.step(next);
        } else {
            self.sim.advance(next);
            let (_, action) = self.agenda.pop_first().expect("an action is due");
            self.act(action);
        }
        self.view.now = self.view.now.max(next);
        self.collect();
        Some(())
    }

    fn act(&mut self, a: Action) {
        match a {
            Action::Send { producer, cmd } => {
                if let Some(&p) = self.producers.get(producer) {
                    self.sim.send(p, &cmd);
                    self.sim.frames(p);
                }
            }
            Action::Answer {
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
            Action::Join { consumer } => {
                if consumer < self.waiting.len() {
                    let c = self.waiting[consumer].clone();
                    self.add_consumer(c);
                }
            }
            Action::Crash { consumer } => {
                if let Some(c) = self.consumers.iter_mut().find(|c| c.id == consumer) {
                    c.crashed = true;
                }
            }
            Action::SetRdy { consumer, rdy } => {
                if let Some(c) = self.consumers.iter_mut().find(|c| c.id == consumer) {
                    c.rdy = rdy;
                }
                self.sim.send(consumer, &Command::Rdy(rdy));
            }
        }
    }

    /// FIN, REQ or TOUCH a message by hand (the in-flight panel's buttons).
    pub fn answer_by_hand(&mut self, consumer: ClientId, id: MessageId, what: &str) {
        let cmd = match what {
            "REQ" => Command::Req {
                id: id.to_hex(),
                timeout_ms: 1000,
            },
            "TOUCH" => Command::Touch(id.to_hex()),
            _ => Command::Fin(id.to_hex()),
        };
        self.by_hand();
        self.sim.send(consumer, &cmd);
        self.collect();
    }

    /// Before a change by hand: show what has happened so far and bring the broker to the
    /// shown clock, so the change comes after it.
    fn by_hand(&mut self) {
        while !self.pending.is_empty() {
            self.step();
        }
        self.sim.advance(self.view.now);
    }

    /// Connect a new consumer by hand (the manage form); returns its client ID.
    pub fn add_consumer_by_hand(&mut self, topic: &str, channel: &str, rdy: i64) -> ClientId {
        self.by_hand();
        let name = format!("consumer {}", self.consumers.len() + 1);
        let id = self.add_consumer(Lab::consumer(&name, topic, channel, rdy));
        self.collect();
        id
    }

    /// Disconnect a consumer: nsqd puts its in-flight messages back in the queue.
    pub fn remove_consumer_by_hand(&mut self, consumer: ClientId) {
        self.by_hand();
        self.sim.disconnect(consumer);
        self.collect();
    }

    /// Change a consumer's RDY now.
    pub fn set_rdy_by_hand(&mut self, consumer: ClientId, rdy: i64) {
        self.by_hand();
        self.act(Action::SetRdy { consumer, rdy });
        self.collect();
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
    pub fn admin_by_hand(&mut self, what: &str, topic: &str, channel: &str) -> Result<(), String> {
        self.by_hand();
        let now = self.view.now;
        let b = &mut self.sim.broker;
        let res = match what {
            "topic/create" => b.create_topic(now, topic),
            "topic/delete" => b.delete_topic(now, topic),
            "channel/create" => b.create_channel(now, topic, channel),
            "channel/delete" => b.delete_channel(now, topic, channel),
            other => return Err(format!("unknown action {other}")),
        };
        self.sim.flush();
        self.collect();
        res.map_err(|e| e.to_string())
    }

    /// Publish by hand (the publish form).
    pub fn publish_by_hand(&mut self, topic: &str, body: &str, defer_ms: u64, count: usize) {
        self.by_hand();
        if self.producers.is_empty() {
            self.add_producer();
        }
        let p = self.producers[0];
        let cmd = match (count, defer_ms) {
            (n, _) if n > 1 => Command::Mpub {
                topic: topic.into(),
                bodies: (0..n)
                    .map(|i| format!("{body} {i}").into_bytes().into())
                    .collect(),
            },
            (_, 0) => Command::Pub {
                topic: topic.into(),
                body: body.as_bytes().into(),
            },
            (_, d) => Command::Dpub {
                topic: topic.into(),
                defer_ms: d,
                body: body.as_bytes().into(),
            },
        };
        self.sim.send(p, &cmd);
        self.sim.frames(p);
        self.collect();
    }

    /// Move new broker events into the pending queue; schedule consumers' answers to the
    /// messages they received.
    fn collect(&mut self) {
        self.pending
            .extend(self.sim.events[self.seen..].iter().cloned());
        self.seen = self.sim.events.len();
        // Consumers the broker closed (disconnected, channel deleted) are gone.
        let sim = &self.sim;
        self.consumers.retain(|c| !sim.is_closed(c.id));
        let now = self.sim.now();
        let consumers: Vec<Consumer> = self.consumers.clone();
        for c in consumers {
            for f in self.sim.frames(c.id) {
                if let Frame::Message(m) = f {
                    if !c.crashed {
                        let t = now + ms(c.processing_ms);
                        self.at(
                            t,
                            Action::Answer {
                                consumer: c.id,
                                id: m.id,
                                attempts: m.attempts,
                            },
                        );
                    }
                }
            }
        }
    }
}

impl View {
    /// A time for text: virtual seconds, or the time of day in live mode.
    pub fn fmt(&self, t: Time) -> String {
        if self.wall_clock {
            time_of_day(t)
        } else {
            secs(t)
        }
    }

    /// A message leaves the in-flight window of a channel (FIN, REQ, timeout).
    fn leave_flight(&mut self, t: &str, c: &str, id: MessageId) -> &mut ChannelView {
        let ch = self.chan(t, c);
        ch.in_flight.retain(|m| m.id != id);
        ch
    }

    pub fn chan(&mut self, t: &str, c: &str) -> &mut ChannelView {
        self.channels
            .entry((t.to_string(), c.to_string()))
            .or_insert_with(|| ChannelView {
                topic: t.into(),
                name: c.into(),
                ..Default::default()
            })
    }

    /// Apply one event to the view; the explanation, or `None` for bookkeeping events not
    /// worth a step of their own.
    pub fn apply(&mut self, e: &Event) -> Option<String> {
        self.now = self.now.max(e.at);
        self.heap_marks.clear();
        let now = e.at;
        Some(match &e.kind {
            EventKind::TopicCreated { topic } => {
                self.topics.entry(topic.to_string()).or_default();
                format!("Topic {topic} created (topics are made on first use).")
            }
            EventKind::ChannelCreated { topic, channel } => {
                self.chan(topic, channel);
                format!("Channel {channel} created on topic {topic}: from now on it gets its own copy of every message.")
            }
            EventKind::ClientSubscribed {
                client,
                topic,
                channel,
            } => {
                let c = self.chan(topic, channel);
                c.consumers.push(*client);
                format!("Consumer {client} subscribed to {topic}/{channel}.")
            }
            EventKind::ClientReady { client, count } => {
                let what = match count {
                    0 => "it accepts no messages until it sends RDY again".to_string(),
                    1 => "it accepts one message in flight at a time".to_string(),
                    n => format!("it accepts up to {n} messages in flight at once"),
                };
                format!("Consumer {client} sent RDY {count}: {what}.")
            }
            EventKind::Published { topic, id, due, .. } => {
                self.highlight = Some(*id);
                if let Some(d) = due {
                    self.due_of.insert(*id, *d);
                    format!(
                        "DPUB to {topic}: message {} is due in {} ms.",
                        short(*id),
                        (d - now) / MILLISECOND
                    )
                } else {
                    format!("PUB to {topic}: message {} accepted.", short(*id))
                }
            }
            EventKind::HeldInTopic { topic, id, place } => {
                self.topics
                    .entry(topic.to_string())
                    .or_default()
                    .push(Chip {
                        id: *id,
                        on_disk: *place == Place::Backend,
                    });
                format!("Topic {topic} has no channel (or is paused), so it keeps message {} until one appears.", short(*id))
            }
            EventKind::Queued {
                topic,
                channel,
                id,
                place,
            } => {
                if let Some(held) = self.topics.get_mut(&**topic) {
                    held.retain(|c| c.id != *id);
                }
                let disk = *place == Place::Backend;
                self.chan(topic, channel).queue.push(Chip {
                    id: *id,
                    on_disk: disk,
                });
                self.highlight = Some(*id);
                if disk {
                    format!("The memory queue of channel {channel} is full: message {} goes to the disk backlog.", short(*id))
                } else {
                    format!(
                        "Message {} joins the memory queue of channel {channel}, ready to send.",
                        short(*id)
                    )
                }
            }
            EventKind::Deferred {
                topic,
                channel,
                id,
                due,
            } => {
                if let Some(held) = self.topics.get_mut(&**topic) {
                    held.retain(|c| c.id != *id);
                }
                self.highlight = Some(*id);
                format!(
                    "Message {} is deferred on channel {channel} until {}: next it is pushed into the channel's deferred min-heap.",
                    short(*id),
                    self.fmt(*due)
                )
            }
            EventKind::Heap {
                topic,
                channel,
                heap: HeapKind::Deferred,
                op,
            } => return Some(self.apply_heap(topic, channel, *op)),
            EventKind::Heap { .. } => return None,
            EventKind::BecameDue {
                channel, id, due, ..
            } => {
                self.highlight = Some(*id);
                format!(
                    "Message {} was due at {} — it is {}: the timer fired exactly then. It leaves {channel}'s deferred heap.",
                    short(*id),
                    self.fmt(*due),
                    self.fmt(now)
                )
            }
            EventKind::Sent {
                topic,
                channel,
                id,
                client,
                attempts,
                deadline,
            } => {
                let c = self.chan(topic, channel);
                c.queue.retain(|m| m.id != *id);
                c.in_flight.push(InFlightChip {
                    id: *id,
                    client: *client,
                    sent: now,
                    deadline: *deadline,
                    attempts: *attempts,
                });
                self.highlight = Some(*id);
                if let Some(due) = self.due_of.remove(id) {
                    self.lateness.push((*id, due, now));
                }
                format!(
                    "Message {} sent to consumer {client} (attempt {attempts}); it must answer by {} or the message comes back.",
                    short(*id),
                    self.fmt(*deadline)
                )
            }
            EventKind::Finished {
                topic,
                channel,
                id,
                client,
            } => {
                self.leave_flight(topic, channel, *id).finished += 1;
                format!(
                    "Consumer {client} finished message {} (FIN): it is gone for good.",
                    short(*id)
                )
            }
            EventKind::Requeued {
                topic,
                channel,
                id,
                client,
                delay,
            } => {
                self.leave_flight(topic, channel, *id).requeued += 1;
                if *delay == 0 {
                    format!(
                        "Consumer {client} could not handle {} (REQ): back to the queue now.",
                        short(*id)
                    )
                } else {
                    format!(
                        "Consumer {client} could not handle {} (REQ {} ms): it will be retried later, via the deferred heap.",
                        short(*id),
                        delay / MILLISECOND
                    )
                }
            }
            EventKind::TimedOut {
                topic,
                channel,
                id,
                client,
            } => {
                self.leave_flight(topic, channel, *id).timed_out += 1;
                self.highlight = Some(*id);
                format!(
                    "Consumer {client} never answered {}: its in-flight deadline passed, so the message goes back to the queue and will be delivered again with attempts + 1.",
                    short(*id)
                )
            }
            EventKind::Touched {
                topic,
                channel,
                id,
                deadline,
                ..
            } => {
                if let Some(m) = self
                    .chan(topic, channel)
                    .in_flight
                    .iter_mut()
                    .find(|m| m.id == *id)
                {
                    m.deadline = *deadline;
                }
                format!(
                    "TOUCH: message {} gets more time, until {}.",
                    short(*id),
                    self.fmt(*deadline)
                )
            }
            EventKind::Dropped { channel, id, .. } => format!(
                "Ephemeral channel {channel} is full: message {} is dropped.",
                short(*id)
            ),
            EventKind::TopicDropped { topic, id } => format!(
                "Ephemeral topic {topic} already holds --mem-queue-size messages for channels it does not have yet: message {} is dropped.",
                short(*id)
            ),
            EventKind::Unsampled { id, client, .. } => format!(
                "Message {} skipped by consumer {client}'s sample rate.",
                short(*id)
            ),
            EventKind::Scan { channels, dirty } => {
                format!("Scan loop: looked at {channels} channel(s), {dirty} had something due.")
            }
            EventKind::ClientClosed { client, reason } => {
                for c in self.channels.values_mut() {
                    c.consumers.retain(|x| x != client);
                }
                match reason {
                    CloseReason::ChannelDeleted => format!(
                        "Consumer {client} disconnected: its channel was deleted."
                    ),
                    _ => format!("Consumer {client} disconnected; messages it had in flight go back to the queue when their timeouts pass (nsqd does not requeue them at once)."),
                }
            }
            EventKind::TopicDeleted { topic } => {
                self.topics.remove(topic.as_ref());
                self.channels.retain(|(t, _), _| t != topic.as_ref());
                format!("Topic {topic} deleted, with its channels and every message in them.")
            }
            EventKind::ChannelDeleted { topic, channel } => {
                self.channels
                    .remove(&(topic.to_string(), channel.to_string()));
                format!("Channel {channel} deleted from topic {topic}, with its messages; the topic's other channels keep theirs.")
            }
            EventKind::ClientConnected { .. }
            | EventKind::ClientIdentified { .. }
            | EventKind::ClientClosing { .. } => return None,
            other => format!("{other:?}"),
        })
    }

    /// Replay one heap operation on the drawn heap, and explain it.
    pub fn apply_heap(&mut self, topic: &str, channel: &str, op: HeapOp) -> String {
        self.heap_channel = Some((topic.to_string(), channel.to_string()));
        let heap = &mut self.chan(topic, channel).heap;
        let marks: Vec<usize>;
        let text = match op {
            HeapOp::Push { id, key, at } => {
                heap.push((id, key));
                marks = vec![at];
                let parent = if at > 0 {
                    format!(" Its parent is index {}.", (at - 1) / 2)
                } else {
                    String::new()
                };
                format!(
                    "Push: message {} (due {}) goes to the end of the heap, index {at}.{parent}",
                    short(id),
                    self.fmt(key)
                )
            }
            HeapOp::Swap { child, parent } => {
                let (c, p) = (heap[child], heap[parent]);
                heap.swap(child, parent);
                marks = vec![child, parent];
                if c.1 < p.1 {
                    format!(
                        "Swap index {child} with its parent {parent}: {} is due at {}, sooner than {} at {}.",
                        short(c.0),
                        self.fmt(c.1),
                        short(p.0),
                        self.fmt(p.1)
                    )
                } else {
                    format!(
                        "Swap index {child} with its parent {parent}: {} is due sooner (or as soon, and came first).",
                        short(c.0)
                    )
                }
            }
            HeapOp::Take { id, at } => {
                if at < heap.len() {
                    heap.swap_remove(at);
                }
                marks = vec![at];
                format!("Pop: {} leaves the heap from index {at} (the root is always the next one due).", short(id))
            }
            HeapOp::Move { from, to } => {
                marks = vec![to];
                format!("The last entry (index {from}) moves into the hole at index {to}, then sifts down to its place.")
            }
            HeapOp::Rekey { id, key, at } => {
                if let Some(e) = heap.get_mut(at) {
                    e.1 = key;
                }
                marks = vec![at];
                format!("{} gets a new due time, {}.", short(id), self.fmt(key))
            }
            HeapOp::Clear => {
                heap.clear();
                marks = vec![];
                "The heap is emptied.".to_string()
            }
        };
        self.heap_marks = marks;
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dpub(lab: &mut Lab, p: usize, t: Time, defer: u64) {
        lab.at(
            t,
            Action::Send {
                producer: p,
                cmd: Command::Dpub {
                    topic: "t".into(),
                    defer_ms: defer,
                    body: b"x"[..].into(),
                },
            },
        );
    }

    #[test]
    fn heap_view_replays_each_swap() {
        let mut lab = Lab::new(Options::default(), 1);
        lab.add_consumer(Lab::consumer("c1", "t", "c", 10));
        let p = lab.add_producer();
        for d in [500, 400, 300, 200, 100] {
            dpub(&mut lab, p, 0, d);
        }
        // Step by step: every single swap is its own step.
        let mut swaps = 0;
        while let Some(step) = lab.step() {
            if step.text.starts_with("Swap index") {
                swaps += 1;
                assert!(step.text.contains("sooner than"), "{}", step.text);
            }
            if lab.next_time().is_none_or(|t| t > 0) {
                break;
            }
        }
        assert!(
            swaps >= 4,
            "each push of an earlier due time sifts up: {swaps}"
        );
        // The drawn heap is exactly the broker's own heap.
        let real: Vec<_> = lab
            .sim
            .broker
            .channel("t", "c")
            .unwrap()
            .deferred
            .entries()
            .iter()
            .map(|e| (e.item.id, e.key))
            .collect();
        assert_eq!(
            lab.view.channels[&("t".to_string(), "c".to_string())].heap,
            real
        );
        assert_eq!(real.len(), 5);
    }

    #[test]
    fn deferred_messages_are_delivered_on_time_and_explained() {
        let mut lab = Lab::new(Options::default(), 1);
        lab.add_consumer(Lab::consumer("c1", "t", "c", 10));
        let p = lab.add_producer();
        dpub(&mut lab, p, 0, 250);
        lab.run_until(ms(1000));
        assert_eq!(lab.view.lateness.len(), 1);
        let (_, due, sent) = lab.view.lateness[0];
        assert_eq!(due, sent, "0 ms late");
        assert!(lab
            .log
            .iter()
            .any(|s| s.text.contains("timer fired exactly then")));
        let c = &lab.view.channels[&("t".to_string(), "c".to_string())];
        assert!(c.heap.is_empty());
    }

    #[test]
    fn crash_times_out_and_redelivers() {
        let mut lab = Lab::new(Options::default(), 1);
        let mut a = Lab::consumer("a", "t", "c", 1);
        a.msg_timeout_ms = 2000;
        let a = lab.add_consumer(a);
        lab.at(0, Action::Crash { consumer: a });
        let p = lab.add_producer();
        lab.at(
            ms(10),
            Action::Send {
                producer: p,
                cmd: Command::Pub {
                    topic: "t".into(),
                    body: b"x"[..].into(),
                },
            },
        );
        lab.run_until(ms(3000));
        let c = &lab.view.channels[&("t".to_string(), "c".to_string())];
        assert_eq!(c.timed_out, 1);
        assert_eq!(c.in_flight.len(), 1);
        assert_eq!(c.in_flight[0].attempts, 2);
        assert!(lab.log.iter().any(|s| s.text.contains("never answered")));
    }

    #[test]
    fn rdy_and_queue_steps_read_as_plain_english() {
        let mut lab = Lab::new(Options::default(), 3);
        let a = lab.add_consumer_by_hand("t", "workers", 1);
        lab.set_behaviour(a, 100, 0);
        lab.publish_by_hand("t", "one", 0, 1);
        lab.run_until(ms(500));
        lab.set_rdy_by_hand(a, 0);
        lab.run_until(ms(600));
        lab.set_rdy_by_hand(a, 5);
        lab.run_until(ms(700));
        let said = |part: &str| lab.log.iter().any(|s| s.text.contains(part));
        for part in [
            "RDY 1: it accepts one message in flight at a time.",
            "RDY 0: it accepts no messages until it sends RDY again.",
            "RDY 5: it accepts up to 5 messages in flight at once.",
            "joins the memory queue of channel workers, ready to send.",
        ] {
            assert!(said(part), "no step says {part:?}");
        }
        assert!(!said("1 messages") && !said("workers's"));
    }

    /// The manage controls: a consumer added by hand gets messages; RDY 0 stops delivery; a
    /// crashed consumer's message times out and goes to the other consumer; deleting the
    /// channel removes it and its consumers from the view.
    #[test]
    fn changes_by_hand() {
        let mut lab = Lab::new(Options::default(), 7);
        let a = lab.add_consumer_by_hand("t", "c", 1);
        lab.set_behaviour(a, 100, 0);
        lab.publish_by_hand("t", "one", 0, 1);
        lab.run_until(ms(1000));
        assert_eq!(lab.view.channels[&("t".into(), "c".into())].finished, 1);

        lab.set_rdy_by_hand(a, 0);
        lab.publish_by_hand("t", "two", 0, 1);
        lab.run_until(ms(3000));
        let c = &lab.view.channels[&("t".into(), "c".into())];
        assert_eq!(
            (c.queue.len(), c.in_flight.len()),
            (1, 0),
            "RDY 0: it waits"
        );

        // A crashed consumer takes it and never answers; a second consumer gets it after the
        // timeout (5 s), with attempts 2.
        lab.set_rdy_by_hand(a, 1);
        lab.toggle_crash(a);
        lab.run_until(ms(3500));
        assert_eq!(
            lab.view.channels[&("t".into(), "c".into())].in_flight.len(),
            1
        );
        let b = lab.add_consumer_by_hand("t", "c", 1);
        lab.remove_consumer_by_hand(a);
        lab.run_until(ms(9000));
        let c = &lab.view.channels[&("t".into(), "c".into())];
        assert_eq!((c.timed_out, c.finished), (1, 2), "{:?}", lab.log.last());
        assert_eq!(c.consumers, vec![b]);
        assert_eq!(lab.consumers.len(), 1, "the removed consumer is gone");

        lab.admin_by_hand("channel/create", "t", "d").unwrap();
        lab.run_until(lab.now());
        assert!(lab.view.channels.contains_key(&("t".into(), "d".into())));
        lab.admin_by_hand("channel/delete", "t", "c").unwrap();
        lab.run_until(lab.now());
        assert!(!lab.view.channels.contains_key(&("t".into(), "c".into())));
        lab.run_until(ms(9100));
        assert!(lab.consumers.is_empty(), "its consumer was closed");
        assert!(lab.admin_by_hand("channel/delete", "t", "c").is_err());
        lab.admin_by_hand("topic/delete", "t", "").unwrap();
        lab.run_until(lab.now());
        assert!(lab.view.topics.is_empty() && lab.view.channels.is_empty());
    }
}
