//! What the page draws, rebuilt from the broker's events one at a time, and the words for each
//! event.
//!
//! [`View::apply`] takes one [`Event`] and returns what it did as a [`Told`]: a sentence for
//! the learner and the [`Claim`]s that sentence makes about where messages are ("order 3 is
//! now at index 0 of the heap"). The claims are checked against the drawing, so a step whose
//! text and picture disagree fails a test.
//!
//! Every message gets a short [`Label`] (from its body: "order 3") and a colour, every client a
//! name ("billing service"), used alike in the text and the drawing.

use crate::i18n::Text;
use nsqlab_core::event::{CloseReason, Event, EventKind, HeapKind, Place};
use nsqlab_core::pqueue::HeapOp;
use nsqlab_core::time::{Time, MILLISECOND};
use nsqlab_core::{ClientId, MessageId};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// A message's name on the page: a few characters from its body, and a hue for its colour.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub text: String,
    pub hue: u16,
}

/// What a client is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Producer,
    Consumer,
}

/// A client as the page names and counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub name: Text,
    pub role: Role,
    /// Messages it published.
    pub published: u64,
    /// Messages sent to it (each attempt counts).
    pub received: u64,
    pub finished: u64,
    pub requeued: u64,
    pub timed_out: u64,
    pub connected: bool,
}

/// One message waiting in a queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chip {
    pub id: MessageId,
    pub on_disk: bool,
}

/// A message in flight, for the countdown bars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlightChip {
    pub id: MessageId,
    pub client: ClientId,
    pub sent: Time,
    pub deadline: Time,
    pub attempts: u16,
}

/// One channel as drawn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelView {
    pub topic: String,
    pub name: String,
    /// Ready messages in the order they leave: the memory queue, then the disk backlog.
    pub queue: Vec<Chip>,
    /// The deferred heap in array order: (message, due time).
    pub heap: Vec<(MessageId, Time)>,
    /// Between a pop's take and its move, the slot that is empty.
    pub hole: Option<usize>,
    pub in_flight: Vec<InFlightChip>,
    pub finished: u64,
    pub requeued: u64,
    pub timed_out: u64,
    pub consumers: Vec<ClientId>,
    /// A message was ever deferred here (the heap panel is worth showing).
    pub ever_deferred: bool,
    /// Live mode: ready messages the page knows only as a number (they were queued before it
    /// opened, or their events were dropped).
    pub unseen: u64,
    /// Live mode: the server's counters, as `/stats` gives them.
    pub server: Option<ServerCounts>,
    /// After a `kill -9`: what the store on disk holds for this channel and the restart has not
    /// given back yet (with the due time of a deferred one).
    pub stored: Vec<(MessageId, Option<Time>)>,
}

/// A channel's counters as the server reports them (live mode).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounts {
    pub depth: u64,
    /// Of `depth`, in the disk backlog (`backend_depth`).
    pub on_disk: u64,
    pub deferred: u64,
    pub in_flight: u64,
    pub messages: u64,
    pub requeued: u64,
    pub timed_out: u64,
    pub clients: u64,
}

impl ChannelView {
    /// What an empty deferred heap says: why it is empty. After a `kill -9` (`down`: not
    /// started again yet) it is not that every deferred message came due: the store keeps
    /// them, and the restart pushes them back.
    pub fn empty_heap_note(&self, down: bool) -> Text {
        let n = self.stored.iter().filter(|s| s.1.is_some()).count();
        match (down, n) {
            (true, n) => Text::new("ui.heap.down").arg("n", n),
            (false, 0) => Text::new("ui.heap.empty"),
            (false, n) => Text::new("ui.heap.replay").arg("n", n),
        }
    }

    /// Ready messages (nsqd's depth: memory plus backlog).
    pub fn depth(&self) -> u64 {
        self.queue.len() as u64 + self.unseen
    }

    /// Messages in the memory queue.
    pub fn in_memory(&self) -> usize {
        self.queue.iter().filter(|c| !c.on_disk).count()
    }

    /// Messages in the disk backlog.
    pub fn on_disk(&self) -> usize {
        self.queue.len() - self.in_memory()
    }

    /// Entries in the deferred heap (a hole is not an entry).
    pub fn deferred(&self) -> usize {
        self.heap.len() - usize::from(self.hole.is_some())
    }

    /// Where a message is in this channel, if it is here.
    pub fn spot_of(&self, id: MessageId) -> Option<Spot> {
        if let Some(i) = self
            .heap
            .iter()
            .enumerate()
            .position(|(i, e)| e.0 == id && self.hole != Some(i))
        {
            return Some(Spot::Heap(i));
        }
        if let Some(c) = self.queue.iter().find(|c| c.id == id) {
            return Some(if c.on_disk { Spot::Disk } else { Spot::Memory });
        }
        self.in_flight
            .iter()
            .find(|m| m.id == id)
            .map(|m| Spot::InFlight(m.client))
    }
}

/// Where a step says a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "at", content = "n", rename_all = "snake_case")]
pub enum Spot {
    /// At this index of the channel's deferred heap.
    Heap(usize),
    Memory,
    Disk,
    /// In flight to this client.
    InFlight(ClientId),
    /// Not in the channel at all (finished, dropped).
    Gone,
}

/// One thing a step's text says about the picture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Claim {
    pub topic: String,
    pub channel: String,
    /// The message, and where it is; `None` with a heap spot: that slot is the hole.
    pub id: Option<MessageId>,
    pub spot: Spot,
}

/// What kind of step it was, typed: the page decides by this (a tour's stops, the timeline's
/// marks, the flow view's timeout mark), never by the words, which are for the learner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum What {
    #[default]
    Other,
    ChannelCreated,
    Subscribed,
    /// A consumer's RDY changed to `count`.
    Ready {
        count: i64,
    },
    Published {
        deferred: bool,
    },
    Queued {
        disk: bool,
    },
    /// Sent to a consumer; `again` from its second attempt on.
    Sent {
        again: bool,
    },
    Fin,
    /// REQ: `later` with a delay.
    Requeued {
        later: bool,
    },
    TimedOut,
    /// A deferred message came due: `exact` when found at its due time (no scan loop).
    Due {
        exact: bool,
    },
    /// A push into the deferred heap; `up` when it is sooner than its parent (it sifts up).
    HeapPush {
        up: bool,
    },
    /// Two entries swapped while sifting up (`up`) or down.
    HeapSwap {
        up: bool,
    },
    /// An entry taken from slot `at`; `last` when it was the last slot (no hole is left).
    HeapTake {
        at: usize,
        last: bool,
    },
    /// The last entry moved into the hole.
    HeapMove,
    /// The cluster scenario: a consumer connected to a node, a publish, a dropped connection.
    ClusterConnect,
    ClusterPublished,
    ClusterDropped,
    /// The replication scenario's steps, by their own kind.
    Raft(nsqlab_web_raft::What),
}

/// What one event did: the words, what they claim, and what kind of step it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Told {
    pub text: Text,
    pub claims: Vec<Claim>,
    pub what: What,
}

impl From<Text> for Told {
    fn from(text: Text) -> Self {
        Told {
            text,
            claims: Vec::new(),
            what: What::Other,
        }
    }
}

/// Which way the heap is sifting (a swap reads differently going up and going down).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Sift {
    #[default]
    Up,
    Down,
}

/// When a deferred message was due and when it was delivered, for the lateness chart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lateness {
    pub id: MessageId,
    pub due: Time,
    /// When the broker found it due (its timer, or the scan that picked its channel).
    pub found: Time,
    pub sent: Option<Time>,
}

/// The display state, rebuilt event by event.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub now: Time,
    /// Topics with the messages they hold (no channel yet, or paused).
    pub topics: BTreeMap<String, Vec<Chip>>,
    /// Channels by (topic, channel).
    pub channels: BTreeMap<(String, String), ChannelView>,
    /// The message the last step was about.
    pub highlight: Option<MessageId>,
    /// Heap indices the last step touched.
    pub heap_marks: Vec<usize>,
    /// The channel whose heap the last step touched.
    pub heap_channel: Option<(String, String)>,
    /// Deferred messages found due, in that order.
    pub lateness: Vec<Lateness>,
    due_of: HashMap<MessageId, Time>,
    /// Times are Unix time (live mode): show them as a UTC time of day.
    pub wall_clock: bool,
    /// `--mem-queue-size` (for "holds 2 of 4").
    pub mem_queue_size: usize,
    /// The broker finds due messages with nsqd's 100 ms scan loop, not exact timers.
    pub scan_loop: bool,
    pub labels: HashMap<MessageId, Label>,
    label_uses: HashMap<String, u32>,
    pub actors: BTreeMap<ClientId, Actor>,
    sift: Sift,
    /// The last scan of the scan loop (its time), to say which scan found a message.
    last_scan: Option<Time>,
    /// Messages published.
    pub published: u64,
    /// Messages published with a delay.
    pub published_deferred: u64,
    /// What the broker held when it was killed, if it was.
    pub crash: Option<crate::lab::CrashReport>,
    /// The broker was killed and has not started again yet.
    pub down: bool,
    /// Messages in flight when the broker was killed (sent again after it, by the store).
    pub sent_before_crash: std::collections::BTreeSet<MessageId>,
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

/// Short form of an ID: its last 8 hex digits.
pub fn short(id: MessageId) -> String {
    let s = id.to_string();
    format!("…{}", &s[s.len() - 8..])
}

/// Milliseconds, as text ("250 ms", "3 s", "1.5 s").
pub fn duration(d: Time) -> String {
    let ms = d / MILLISECOND;
    if ms >= 1000 && ms.is_multiple_of(100) {
        let s = ms as f64 / 1000.0;
        if ms.is_multiple_of(1000) {
            format!("{} s", ms / 1000)
        } else {
            format!("{s:.1} s")
        }
    } else {
        format!("{ms} ms")
    }
}

/// How long a label may be, in characters.
const LABEL_CHARS: usize = 10;

impl View {
    /// A view for a broker with this `--mem-queue-size`.
    pub fn new(mem_queue_size: usize, scan_loop: bool) -> View {
        View {
            mem_queue_size,
            scan_loop,
            ..View::default()
        }
    }

    /// A time for text: virtual seconds, or the time of day in live mode.
    pub fn fmt(&self, t: Time) -> String {
        if self.wall_clock {
            time_of_day(t)
        } else {
            secs(t)
        }
    }

    /// Name a client.
    /// A client connected again after the broker's restart (`before` was its connection's
    /// actor, taken out before the restart: the new broker numbers clients afresh): the same
    /// program, so its counts carry on, on its new connection.
    pub fn carry_on(&mut self, before: Actor, new: ClientId) {
        if let Some(a) = self.actors.get_mut(&new) {
            a.published += before.published;
            a.received += before.received;
            a.finished += before.finished;
            a.requeued += before.requeued;
            a.timed_out += before.timed_out;
        }
    }

    pub fn name_actor(&mut self, client: ClientId, name: Text, role: Role) {
        self.actors.insert(
            client,
            Actor {
                name,
                role,
                published: 0,
                received: 0,
                finished: 0,
                requeued: 0,
                timed_out: 0,
                connected: true,
            },
        );
    }

    /// Give a client a name, keeping what the page counted for it.
    pub fn call_actor(&mut self, client: ClientId, name: Text) {
        self.actor(client).name = name;
    }

    /// A client's name ("billing service"), or "client 7" for one the page did not name.
    pub fn who(&self, client: ClientId) -> Text {
        self.actors
            .get(&client)
            .map(|a| a.name.clone())
            .unwrap_or_else(|| Text::new("who.client.n").arg("n", client))
    }

    fn actor(&mut self, client: ClientId) -> &mut Actor {
        self.actors.entry(client).or_insert_with(|| Actor {
            name: Text::new("who.client.n").arg("n", client),
            role: Role::Consumer,
            published: 0,
            received: 0,
            finished: 0,
            requeued: 0,
            timed_out: 0,
            connected: true,
        })
    }

    /// Give a message its label from its body: the first characters, made unique with a
    /// suffix when another message already has them.
    pub fn label_message(&mut self, id: MessageId, body: &[u8]) {
        if self.labels.contains_key(&id) {
            return;
        }
        let text: String = String::from_utf8_lossy(body)
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let text = text.trim();
        let mut base: String = text.chars().take(LABEL_CHARS).collect();
        if text.chars().count() > LABEL_CHARS {
            base.push('…');
        }
        if base.is_empty() {
            base = short(id);
        }
        self.add_label(id, base);
    }

    /// Number a message the page knows only by its ID (live mode): "#1", "#2", …
    pub fn number_message(&mut self, id: MessageId) {
        if !self.labels.contains_key(&id) {
            let n = self.labels.len() + 1;
            self.add_label(id, format!("#{n}"));
        }
    }

    fn add_label(&mut self, id: MessageId, base: String) {
        let uses = self.label_uses.entry(base.clone()).or_insert(0);
        *uses += 1;
        let text = if *uses == 1 {
            base
        } else {
            format!("{base}·{uses}")
        };
        // The golden angle spreads consecutive messages' hues far apart.
        let hue = ((self.labels.len() as f64 * 137.508) % 360.0) as u16;
        self.labels.insert(id, Label { text, hue });
    }

    /// A message's label for text and drawing.
    pub fn label(&self, id: MessageId) -> String {
        self.labels
            .get(&id)
            .map(|l| l.text.clone())
            .unwrap_or_else(|| short(id))
    }

    /// A message's hue (its colour on the page).
    pub fn hue(&self, id: MessageId) -> u16 {
        self.labels
            .get(&id)
            .map(|l| l.hue)
            .unwrap_or((id.0 % 360) as u16)
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

    fn claim(t: &str, c: &str, id: MessageId, spot: Spot) -> Claim {
        Claim {
            topic: t.to_string(),
            channel: c.to_string(),
            id: Some(id),
            spot,
        }
    }

    /// Events that are never a step of their own (bookkeeping).
    pub fn is_silent(kind: &EventKind) -> bool {
        matches!(
            kind,
            EventKind::Heap {
                heap: HeapKind::InFlight,
                ..
            } | EventKind::ClientConnected { .. }
                | EventKind::ClientIdentified { .. }
                | EventKind::ClientClosing { .. }
        )
    }

    /// Apply one event to the view; what it did, or `None` for bookkeeping events not worth a
    /// step of their own.
    pub fn apply(&mut self, e: &Event) -> Option<Told> {
        self.now = self.now.max(e.at);
        self.heap_marks.clear();
        let now = e.at;
        let what = self.what_of(e);
        let told: Told = match &e.kind {
            EventKind::TopicCreated { topic } => {
                // After a kill -9, the restart reads back what its store kept.
                let key = match self.crash.is_some() && self.topics.contains_key(&**topic) {
                    true => "topic.restored",
                    false => "topic.created",
                };
                self.topics.entry(topic.to_string()).or_default();
                Text::new(key).arg("topic", topic).into()
            }
            EventKind::ChannelCreated { topic, channel } => {
                let key = match self.crash.is_some()
                    && self
                        .channels
                        .contains_key(&(topic.to_string(), channel.to_string()))
                {
                    true => "channel.restored",
                    false => "channel.created",
                };
                self.chan(topic, channel);
                Text::new(key)
                    .arg("topic", topic)
                    .arg("channel", channel)
                    .into()
            }
            EventKind::ClientSubscribed {
                client,
                topic,
                channel,
            } => {
                self.chan(topic, channel).consumers.push(*client);
                Text::new("subscribed")
                    .nest("who", self.who(*client))
                    .arg("channel", channel)
                    .arg("topic", topic)
                    .into()
            }
            EventKind::ClientReady { client, count } => {
                let key = match count {
                    0 => "rdy.zero",
                    1 => "rdy.one",
                    _ => "rdy.many",
                };
                Text::new(key)
                    .nest("who", self.who(*client))
                    .arg("n", count)
                    .into()
            }
            EventKind::Published {
                topic,
                id,
                due,
                client,
                nth,
                batch,
                ..
            } => {
                self.highlight = Some(*id);
                self.published += 1;
                if let Some(c) = client {
                    self.actor(*c).published += 1;
                }
                let who = client.map(|c| self.who(c));
                let by = |t: Text| match who {
                    Some(w) => t.nest("by", w),
                    None => t.word("by", "who.http"),
                };
                let label = self.label(*id);
                if let Some(d) = due {
                    self.published_deferred += 1;
                    self.due_of.insert(*id, *d);
                    by(Text::new("published.deferred"))
                        .arg("label", label)
                        .arg("topic", topic)
                        .arg("delay", duration(d - now))
                        .arg("due", self.fmt(*d))
                        .into()
                } else {
                    // The command as the client sent it: one PUB, an MPUB of several (one OK
                    // for all), or nsqd's HTTP /pub and /mpub.
                    let key = match (client.is_some(), *batch > 1) {
                        (true, false) => "published",
                        (true, true) => "published.mpub",
                        (false, false) => "published.http",
                        (false, true) => "published.http.mpub",
                    };
                    by(Text::new(key))
                        .arg("label", label)
                        .arg("topic", topic)
                        .arg("nth", nth)
                        .arg("n", batch)
                        .into()
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
                Text::new("held")
                    .arg("topic", topic)
                    .arg("label", self.label(*id))
                    .into()
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
                self.chan(topic, channel).stored.retain(|s| s.0 != *id);
                let disk = *place == Place::Backend;
                let mem_size = self.mem_queue_size;
                let label = self.label(*id);
                let c = self.chan(topic, channel);
                let (in_mem, on_disk) = (c.in_memory(), c.on_disk());
                c.queue.push(Chip {
                    id: *id,
                    on_disk: disk,
                });
                self.highlight = Some(*id);
                let text = if !disk {
                    Text::new("queued.memory").arg("n", in_mem + 1)
                } else if in_mem >= mem_size {
                    Text::new("queued.disk.full").arg("n", in_mem)
                } else if on_disk == 1 {
                    Text::new("queued.disk.order.one").arg("n", in_mem)
                } else {
                    Text::new("queued.disk.order.many")
                        .arg("n", in_mem)
                        .arg("k", on_disk)
                };
                Told {
                    what: What::Other,
                    text: text
                        .arg("label", label)
                        .arg("channel", channel)
                        .arg("size", mem_size),
                    claims: vec![Self::claim(
                        topic,
                        channel,
                        *id,
                        if disk { Spot::Disk } else { Spot::Memory },
                    )],
                }
            }
            EventKind::Deferred {
                topic,
                channel,
                id,
                due,
            } => {
                self.chan(topic, channel).stored.retain(|s| s.0 != *id);
                if let Some(held) = self.topics.get_mut(&**topic) {
                    held.retain(|c| c.id != *id);
                }
                self.chan(topic, channel).ever_deferred = true;
                self.highlight = Some(*id);
                self.due_of.entry(*id).or_insert(*due);
                Text::new("deferred")
                    .arg("channel", channel)
                    .arg("label", self.label(*id))
                    .arg("due", self.fmt(*due))
                    .into()
            }
            EventKind::Heap {
                topic,
                channel,
                heap: HeapKind::Deferred,
                op,
            } => return Some(self.apply_heap(topic, channel, *op)),
            EventKind::Heap { .. } => return None,
            EventKind::BecameDue {
                topic,
                channel,
                id,
                due,
            } => {
                self.highlight = Some(*id);
                self.heap_channel = Some((topic.to_string(), channel.to_string()));
                self.heap_marks = vec![0];
                self.lateness.push(Lateness {
                    id: *id,
                    due: *due,
                    found: now,
                    sent: None,
                });
                let label = self.label(*id);
                let text = if self.scan_loop {
                    Text::new("due.scan")
                        .arg("late", duration(now.saturating_sub(*due)))
                        .arg("channel", channel)
                } else if now == *due {
                    Text::new("due.exact")
                } else {
                    Text::new("due.late")
                };
                Told {
                    text: text
                        .arg("label", label)
                        .arg("due", self.fmt(*due))
                        .arg("now", self.fmt(now)),
                    claims: vec![Self::claim(topic, channel, *id, Spot::Heap(0))],
                    what: What::Other,
                }
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
                let known = c.queue.iter().any(|m| m.id == *id);
                c.queue.retain(|m| m.id != *id);
                if !known && c.unseen > 0 {
                    c.unseen -= 1;
                }
                c.in_flight.push(InFlightChip {
                    id: *id,
                    client: *client,
                    sent: now,
                    deadline: *deadline,
                    attempts: *attempts,
                });
                self.actor(*client).received += 1;
                self.highlight = Some(*id);
                if let Some(l) = self.lateness.iter_mut().rev().find(|l| l.id == *id) {
                    l.sent.get_or_insert(now);
                }
                let text = if *attempts > 1 {
                    Text::new("sent.again").arg("n", attempts)
                } else if self.sent_before_crash.remove(id) {
                    // Sent before the kill, and given back by the store, which keeps a
                    // message but not how often it was sent.
                    Text::new("sent.after-crash")
                } else {
                    Text::new("sent")
                };
                Told {
                    text: text
                        .arg("label", self.label(*id))
                        .nest("who", self.who(*client))
                        .arg("deadline", self.fmt(*deadline)),
                    claims: vec![Self::claim(topic, channel, *id, Spot::InFlight(*client))],
                    what: What::Other,
                }
            }
            EventKind::Finished {
                topic,
                channel,
                id,
                client,
            } => {
                self.leave_flight(topic, channel, *id).finished += 1;
                self.actor(*client).finished += 1;
                Told {
                    text: Text::new("fin")
                        .nest("who", self.who(*client))
                        .arg("label", self.label(*id)),
                    claims: vec![Self::claim(topic, channel, *id, Spot::Gone)],
                    what: What::Other,
                }
            }
            EventKind::Requeued {
                topic,
                channel,
                id,
                client,
                delay,
            } => {
                self.leave_flight(topic, channel, *id).requeued += 1;
                self.actor(*client).requeued += 1;
                let text = if *delay == 0 {
                    Text::new("req.now")
                } else {
                    Text::new("req.later").arg("delay", duration(*delay))
                };
                text.nest("who", self.who(*client))
                    .arg("label", self.label(*id))
                    .into()
            }
            EventKind::TimedOut {
                topic,
                channel,
                id,
                client,
            } => {
                self.leave_flight(topic, channel, *id).timed_out += 1;
                self.actor(*client).timed_out += 1;
                self.highlight = Some(*id);
                Text::new("timeout")
                    .nest("who", self.who(*client))
                    .arg("label", self.label(*id))
                    .arg("now", self.fmt(now))
                    .into()
            }
            EventKind::Touched {
                topic,
                channel,
                id,
                client,
                deadline,
            } => {
                if let Some(m) = self
                    .chan(topic, channel)
                    .in_flight
                    .iter_mut()
                    .find(|m| m.id == *id)
                {
                    m.deadline = *deadline;
                }
                Told {
                    text: Text::new("touch")
                        .nest("who", self.who(*client))
                        .arg("label", self.label(*id))
                        .arg("deadline", self.fmt(*deadline)),
                    claims: vec![Self::claim(topic, channel, *id, Spot::InFlight(*client))],
                    what: What::Other,
                }
            }
            EventKind::Dropped { topic, channel, id } => Told {
                text: Text::new("dropped")
                    .arg("channel", channel)
                    .arg("label", self.label(*id)),
                claims: vec![Self::claim(topic, channel, *id, Spot::Gone)],
                what: What::Other,
            },
            EventKind::TopicDropped { topic, id } => Text::new("topic.dropped")
                .arg("topic", topic)
                .arg("label", self.label(*id))
                .into(),
            EventKind::Unsampled { id, client, .. } => Text::new("unsampled")
                .arg("label", self.label(*id))
                .nest("who", self.who(*client))
                .into(),
            EventKind::Scan { channels, dirty } => {
                // A second scan at one instant is the loop going again at once (more than a
                // quarter of the last sample had work), not its 100 ms wake-up.
                let again = self.last_scan == Some(now);
                self.last_scan = Some(now);
                let more = *dirty * 4 > *channels;
                let key = match (again, *dirty == 0, more) {
                    (false, true, _) => "scan.none",
                    (false, false, false) => "scan.some",
                    (false, false, true) => "scan.some.more",
                    (true, true, _) => "scan.again.none",
                    (true, false, false) => "scan.again.some",
                    (true, false, true) => "scan.again.more",
                };
                Text::new(key).arg("n", channels).arg("dirty", dirty).into()
            }
            EventKind::ClientClosed { client, reason } => {
                for c in self.channels.values_mut() {
                    c.consumers.retain(|x| x != client);
                }
                let who = self.who(*client);
                let consumer = self.actor(*client).role == Role::Consumer;
                self.actor(*client).connected = false;
                let (key, error) = match (consumer, reason) {
                    (true, CloseReason::ChannelDeleted) => ("closed.consumer.deleted", None),
                    (true, CloseReason::ReadTimeout) => ("closed.consumer.heartbeat", None),
                    (true, CloseReason::ProtocolError(e)) => ("closed.consumer.error", Some(e)),
                    (true, CloseReason::BadInput) => ("closed.consumer.badinput", None),
                    (true, CloseReason::Disconnected) => ("closed.consumer.hungup", None),
                    (false, CloseReason::ChannelDeleted) => ("closed.producer.deleted", None),
                    (false, CloseReason::ReadTimeout) => ("closed.producer.heartbeat", None),
                    (false, CloseReason::ProtocolError(e)) => ("closed.producer.error", Some(e)),
                    (false, CloseReason::BadInput) => ("closed.producer.badinput", None),
                    (false, CloseReason::Disconnected) => ("closed.producer.hungup", None),
                };
                let mut text = Text::new(key).nest("who", who);
                if let Some(e) = error {
                    text = text.arg("error", e);
                }
                text.into()
            }
            EventKind::TopicDeleted { topic } => {
                self.topics.remove(topic.as_ref());
                self.channels.retain(|(t, _), _| t != topic.as_ref());
                Text::new("topic.deleted").arg("topic", topic).into()
            }
            EventKind::ChannelDeleted { topic, channel } => {
                self.channels
                    .remove(&(topic.to_string(), channel.to_string()));
                Text::new("channel.deleted")
                    .arg("topic", topic)
                    .arg("channel", channel)
                    .into()
            }
            EventKind::TopicPaused { topic } => {
                Text::new("topic.paused").arg("topic", topic).into()
            }
            EventKind::TopicUnpaused { topic } => {
                Text::new("topic.unpaused").arg("topic", topic).into()
            }
            EventKind::ChannelPaused { channel, .. } => {
                Text::new("channel.paused").arg("channel", channel).into()
            }
            EventKind::ChannelUnpaused { channel, .. } => {
                Text::new("channel.unpaused").arg("channel", channel).into()
            }
            EventKind::TopicEmptied { topic } => {
                if let Some(held) = self.topics.get_mut(&**topic) {
                    held.clear();
                }
                Text::new("topic.emptied").arg("topic", topic).into()
            }
            EventKind::ChannelEmptied { topic, channel } => {
                let c = self.chan(topic, channel);
                c.queue.clear();
                c.heap.clear();
                c.hole = None;
                c.in_flight.clear();
                c.unseen = 0;
                Text::new("channel.emptied").arg("channel", channel).into()
            }
            EventKind::ClientConnected { .. }
            | EventKind::ClientIdentified { .. }
            | EventKind::ClientClosing { .. } => return None,
        };
        Some(Told { what, ..told })
    }

    /// What kind of step event `e` makes (heap operations: [`View::apply_heap`]).
    fn what_of(&self, e: &Event) -> What {
        match &e.kind {
            EventKind::ChannelCreated { .. } => What::ChannelCreated,
            EventKind::ClientSubscribed { .. } => What::Subscribed,
            EventKind::ClientReady { count, .. } => What::Ready { count: *count },
            EventKind::Published { due, .. } => What::Published {
                deferred: due.is_some(),
            },
            EventKind::Queued { place, .. } => What::Queued {
                disk: *place == Place::Backend,
            },
            EventKind::Sent { attempts, .. } => What::Sent {
                again: *attempts > 1,
            },
            EventKind::Finished { .. } => What::Fin,
            EventKind::Requeued { delay, .. } => What::Requeued { later: *delay > 0 },
            EventKind::TimedOut { .. } => What::TimedOut,
            EventKind::BecameDue { due, .. } => What::Due {
                exact: !self.scan_loop && e.at == *due,
            },
            _ => What::Other,
        }
    }

    /// Replay one heap operation on the drawn heap, and explain it.
    pub fn apply_heap(&mut self, topic: &str, channel: &str, op: HeapOp) -> Told {
        self.heap_channel = Some((topic.to_string(), channel.to_string()));
        let key = (topic.to_string(), channel.to_string());
        let at = |i: usize| {
            self.channels
                .get(&key)
                .and_then(|c| c.heap.get(i))
                .map(|e| e.0)
        };
        let ids: Vec<MessageId> = match op {
            HeapOp::Swap { child, parent } => {
                [at(child), at(parent)].into_iter().flatten().collect()
            }
            HeapOp::Move { from, .. } => at(from).into_iter().collect(),
            HeapOp::Push { id, at: i, .. } => {
                let parent = (i > 0).then(|| at((i - 1) / 2)).flatten();
                [Some(id), parent].into_iter().flatten().collect()
            }
            HeapOp::Take { id, .. } | HeapOp::Rekey { id, .. } => vec![id],
            HeapOp::Clear => Vec::new(),
        };
        let labels: HashMap<MessageId, String> =
            ids.into_iter().map(|id| (id, self.label(id))).collect();
        let name = |id: &MessageId| labels.get(id).cloned().unwrap_or_else(|| short(*id));
        let wall = self.wall_clock;
        let fmt = |t: Time| if wall { time_of_day(t) } else { secs(t) };
        let claim = |id: MessageId, at: usize| Self::claim(topic, channel, id, Spot::Heap(at));
        let hole = |at: usize| Claim {
            topic: topic.to_string(),
            channel: channel.to_string(),
            id: None,
            spot: Spot::Heap(at),
        };
        let sifting = self.sift;
        let c = self.chan(topic, channel);
        c.ever_deferred = true;
        let mut sift = None;
        let what = match op {
            HeapOp::Push { key, at, .. } => What::HeapPush {
                up: at > 0 && c.heap.get((at - 1) / 2).is_some_and(|p| key < p.1),
            },
            HeapOp::Swap { .. } => What::HeapSwap {
                up: sifting == Sift::Up,
            },
            HeapOp::Take { at, .. } => What::HeapTake {
                at,
                last: at + 1 >= c.heap.len(),
            },
            HeapOp::Move { .. } => What::HeapMove,
            HeapOp::Rekey { .. } | HeapOp::Clear => What::Other,
        };
        let (marks, told) = match op {
            HeapOp::Push { id, key, at } => {
                c.hole = None;
                debug_assert_eq!(at, c.heap.len(), "a push appends");
                c.heap.push((id, key));
                sift = Some(Sift::Up);
                let text = if at == 0 {
                    Text::new("heap.push.root")
                } else {
                    let p = (at - 1) / 2;
                    let (pid, pkey) = c.heap[p];
                    Text::new(if key < pkey {
                        "heap.push.up"
                    } else {
                        "heap.push.stay"
                    })
                    .arg("p", p)
                    .arg("plabel", name(&pid))
                    .arg("pdue", fmt(pkey))
                };
                (
                    vec![at],
                    Told {
                        text: text
                            .arg("label", name(&id))
                            .arg("due", fmt(key))
                            .arg("at", at),
                        claims: vec![claim(id, at)],
                        what: What::Other,
                    },
                )
            }
            HeapOp::Swap { child, parent } => {
                let (cid, ckey) = c.heap[child];
                let (pid, pkey) = c.heap[parent];
                c.heap.swap(child, parent);
                let key = match (sifting, ckey < pkey) {
                    (Sift::Up, true) => "heap.swap.up",
                    (Sift::Up, false) => "heap.swap.up.tie",
                    (Sift::Down, true) => "heap.swap.down",
                    (Sift::Down, false) => "heap.swap.down.tie",
                };
                let text = Text::new(key)
                    .arg("c", name(&cid))
                    .arg("cdue", fmt(ckey))
                    .arg("p", name(&pid))
                    .arg("pdue", fmt(pkey))
                    .arg("parent", parent)
                    .arg("child", child);
                (
                    vec![child, parent],
                    Told {
                        what: What::Other,
                        text,
                        claims: vec![claim(cid, parent), claim(pid, child)],
                    },
                )
            }
            HeapOp::Take { id, at } => {
                let last = c.heap.len().saturating_sub(1);
                let text = if at == last {
                    c.heap.truncate(at);
                    c.hole = None;
                    if at == 0 {
                        Text::new("heap.take.only")
                    } else {
                        Text::new("heap.take.last").arg("at", at)
                    }
                } else {
                    c.hole = Some(at);
                    if at == 0 {
                        Text::new("heap.take.root")
                    } else {
                        Text::new("heap.take.at").arg("at", at)
                    }
                };
                let claims = if c.hole.is_some() {
                    vec![hole(at)]
                } else {
                    vec![]
                };
                (
                    vec![at],
                    Told {
                        what: What::Other,
                        text: text.arg("label", name(&id)),
                        claims,
                    },
                )
            }
            HeapOp::Move { from, to } => {
                let (mid, mkey) = c.heap[from];
                c.heap[to] = (mid, mkey);
                c.heap.truncate(from);
                c.hole = None;
                sift = Some(Sift::Down);
                let leaf = 2 * to + 1 >= c.heap.len();
                let text = Text::new(if leaf {
                    "heap.move.leaf"
                } else {
                    "heap.move.down"
                })
                .arg("label", name(&mid))
                .arg("due", fmt(mkey))
                .arg("from", from)
                .arg("to", to);
                (
                    vec![to],
                    Told {
                        text,
                        claims: vec![claim(mid, to)],
                        what: What::Other,
                    },
                )
            }
            HeapOp::Rekey { id, key, at } => {
                let up = c.heap.get(at).is_some_and(|e| key < e.1);
                if let Some(e) = c.heap.get_mut(at) {
                    e.1 = key;
                }
                sift = Some(if up { Sift::Up } else { Sift::Down });
                (
                    vec![at],
                    Told {
                        text: Text::new("heap.rekey")
                            .arg("label", name(&id))
                            .arg("due", fmt(key)),
                        claims: vec![claim(id, at)],
                        what: What::Other,
                    },
                )
            }
            HeapOp::Clear => {
                c.heap.clear();
                c.hole = None;
                (vec![], Text::new("heap.clear").into())
            }
        };
        if let Some(s) = sift {
            self.sift = s;
        }
        self.heap_marks = marks;
        if let Some(id) = told.claims.first().and_then(|c| c.id) {
            self.highlight = Some(id);
        }
        Told { what, ..told }
    }

    /// Whether every claim holds in this view; the first that does not, if any.
    pub fn check(&self, claims: &[Claim]) -> Result<(), String> {
        for c in claims {
            let ch = self.channels.get(&(c.topic.clone(), c.channel.clone()));
            let ok = match (c.id, c.spot) {
                (None, Spot::Heap(i)) => ch.is_some_and(|ch| ch.hole == Some(i)),
                (Some(id), Spot::Gone) => ch.is_none_or(|ch| ch.spot_of(id).is_none()),
                (Some(id), spot) => ch.and_then(|ch| ch.spot_of(id)) == Some(spot),
                (None, _) => false,
            };
            if !ok {
                return Err(format!(
                    "claim {c:?} does not hold: {:?}",
                    c.id.and_then(|id| ch.and_then(|ch| ch.spot_of(id)))
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_from_bodies_and_stay_unique() {
        let mut v = View::new(4, false);
        v.label_message(MessageId(1), b"order 3");
        v.label_message(MessageId(2), b"order 3");
        v.label_message(MessageId(3), b"a very long body indeed");
        v.label_message(MessageId(4), b"");
        assert_eq!(v.label(MessageId(1)), "order 3");
        assert_eq!(v.label(MessageId(2)), "order 3·2");
        assert_eq!(v.label(MessageId(3)), "a very lon…");
        assert_eq!(v.label(MessageId(4)), short(MessageId(4)));
        assert_ne!(v.hue(MessageId(1)), v.hue(MessageId(2)));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(250 * MILLISECOND), "250 ms");
        assert_eq!(duration(3000 * MILLISECOND), "3 s");
        assert_eq!(duration(1500 * MILLISECOND), "1.5 s");
        assert_eq!(duration(1234 * MILLISECOND), "1234 ms");
    }
}
