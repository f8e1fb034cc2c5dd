//! Live mode: mirror a real server.
//!
//! Two models, for two jobs:
//!
//! - **The picture** ([`LiveModel::view`]) is drawn from frames only. Four times a second
//!   `/ws/events` sends a [`LiveFrame`]: every topic's and channel's `/stats` counters and the
//!   first entries of its queues, taken at one instant. So every number on the page is a number
//!   the server had a moment ago, the parts of one channel's picture agree with each other, and
//!   a page that falls behind catches up with the next frame. When no frame has come for a
//!   while the page says its numbers are not live ([`LiveModel::stale`]).
//! - **The story** (the step log) is told from the events each frame carries. The server does
//!   not send heap operations, so each channel's deferred heap is replayed here with the core's
//!   own [`PQueue`] (same algorithm, same insertion order, so the same array) to tell each
//!   sift. The story starts from `GET /api/queues` (every channel's heap and in-flight
//!   messages). When there are more events than anyone can read (the frame says how many it
//!   left out), the story says so, stops, and starts again from `/api/queues` once the server is
//!   quieter ([`LiveModel::wants_snapshot`]).
//!
//! Messages are labelled by ID and never by body: bodies reach only consumers.

use crate::i18n::Text;
use crate::lab::Step;
use crate::view::{Chip, InFlightChip, Role, ServerCounts, View};
use nsqlab_core::event::{Event, EventKind};
use nsqlab_core::live::{LiveChannel, LiveFrame, LiveInFlight, LiveTopic};
use nsqlab_core::pqueue::PQueue;
use nsqlab_core::time::Time;
use nsqlab_core::{ClientId, MessageId};
use serde::Deserialize;
use std::collections::BTreeMap;

/// One message in `/api/queues`.
#[derive(Debug, Clone, Deserialize)]
pub struct QueuedJson {
    pub id: String,
    pub due: u64,
    pub attempts: u16,
    #[serde(default)]
    pub client: Option<u64>,
}

/// One channel in `/api/queues`.
#[derive(Debug, Clone, Deserialize)]
pub struct QueuesJson {
    pub topic: String,
    pub channel: String,
    pub now: u64,
    pub depth: usize,
    pub deferred: Vec<QueuedJson>,
    pub in_flight: Vec<QueuedJson>,
}

/// A [`LiveFrame`] from its JSON, read by hand: a derived reader costs the first load several
/// KB more.
fn frame_of(v: &serde_json::Value) -> LiveFrame {
    use serde_json::Value;
    let n = |x: &Value, k: &str| x[k].as_u64().unwrap_or(0);
    let s = |x: &Value, k: &str| x[k].as_str().unwrap_or_default().to_string();
    let name = |p: &Value| p[1].as_str().unwrap_or_default().to_string();
    let list = |x: &Value, k: &str| x[k].as_array().cloned().unwrap_or_default();
    let id = |x: &Value| id_of(x.as_str().unwrap_or_default());
    LiveFrame {
        at: n(v, "at"),
        mem_queue_size: n(v, "mem_queue_size"),
        names: list(v, "names")
            .iter()
            .map(|p| (ClientId(p[0].as_u64().unwrap_or(0)), name(p)))
            .collect(),
        topics: list(v, "topics")
            .iter()
            .map(|t| LiveTopic {
                topic: s(t, "topic"),
                depth: n(t, "depth"),
                backend_depth: n(t, "backend_depth"),
                messages: n(t, "messages"),
                paused: t["paused"].as_bool().unwrap_or(false),
                channels: list(t, "channels")
                    .iter()
                    .map(|c| LiveChannel {
                        channel: s(c, "channel"),
                        depth: n(c, "depth"),
                        backend_depth: n(c, "backend_depth"),
                        deferred: n(c, "deferred"),
                        in_flight: n(c, "in_flight"),
                        messages: n(c, "messages"),
                        requeued: n(c, "requeued"),
                        timed_out: n(c, "timed_out"),
                        clients: n(c, "clients"),
                        paused: c["paused"].as_bool().unwrap_or(false),
                        heap: list(c, "heap")
                            .iter()
                            .filter_map(|e| Some((id(&e[0])?, e[1].as_u64()?)))
                            .collect(),
                        flight: list(c, "flight")
                            .iter()
                            .filter_map(|f| {
                                Some(LiveInFlight {
                                    id: id(&f["id"])?,
                                    client: ClientId(n(f, "client")),
                                    sent: n(f, "sent"),
                                    deadline: n(f, "deadline"),
                                    attempts: n(f, "attempts") as u16,
                                })
                            })
                            .collect(),
                        ready: list(c, "ready").iter().filter_map(id).collect(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// An [`Event`] from its JSON, read by hand: serde's reader for an internally tagged enum of
/// this size costs the first load some 20 KB. `None` for what the page does not tell (heap
/// operations and scan-loop passes, which a server does not send) and for anything malformed.
fn event_of(v: &serde_json::Value) -> Option<Event> {
    use nsqlab_core::event::{CloseReason, Name, Place};
    let name = |k: &str| -> Option<Name> { Some(Name::from(v[k].as_str()?)) };
    let n = |k: &str| v[k].as_u64();
    let id = |k: &str| id_of(v[k].as_str()?);
    let client = |k: &str| Some(ClientId(n(k)?));
    let text = |k: &str| Some(v[k].as_str()?.to_string());
    let place = || match v["place"].as_str()? {
        "memory" => Some(Place::Memory),
        "backend" => Some(Place::Backend),
        _ => None,
    };
    let (t, c) = (|| name("topic"), || name("channel"));
    let kind = match v["type"].as_str()? {
        "topic_created" => EventKind::TopicCreated { topic: t()? },
        "topic_deleted" => EventKind::TopicDeleted { topic: t()? },
        "topic_paused" => EventKind::TopicPaused { topic: t()? },
        "topic_unpaused" => EventKind::TopicUnpaused { topic: t()? },
        "topic_emptied" => EventKind::TopicEmptied { topic: t()? },
        "channel_created" => EventKind::ChannelCreated {
            topic: t()?,
            channel: c()?,
        },
        "channel_deleted" => EventKind::ChannelDeleted {
            topic: t()?,
            channel: c()?,
        },
        "channel_paused" => EventKind::ChannelPaused {
            topic: t()?,
            channel: c()?,
        },
        "channel_unpaused" => EventKind::ChannelUnpaused {
            topic: t()?,
            channel: c()?,
        },
        "channel_emptied" => EventKind::ChannelEmptied {
            topic: t()?,
            channel: c()?,
        },
        "published" => EventKind::Published {
            topic: t()?,
            id: id("id")?,
            size: n("size")? as usize,
            due: n("due"),
            client: client("client"),
            nth: n("nth").unwrap_or(1) as u32,
            batch: n("batch").unwrap_or(1) as u32,
        },
        "held_in_topic" => EventKind::HeldInTopic {
            topic: t()?,
            id: id("id")?,
            place: place()?,
        },
        "queued" => EventKind::Queued {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
            place: place()?,
        },
        "deferred" => EventKind::Deferred {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
            due: n("due")?,
        },
        "became_due" => EventKind::BecameDue {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
            due: n("due")?,
        },
        "sent" => EventKind::Sent {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
            client: client("client")?,
            attempts: n("attempts")? as u16,
            deadline: n("deadline")?,
        },
        "finished" => EventKind::Finished {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
            client: client("client")?,
        },
        "requeued" => EventKind::Requeued {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
            client: client("client")?,
            delay: n("delay")?,
        },
        "timed_out" => EventKind::TimedOut {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
            client: client("client")?,
        },
        "touched" => EventKind::Touched {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
            client: client("client")?,
            deadline: n("deadline")?,
        },
        "unsampled" => EventKind::Unsampled {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
            client: client("client")?,
        },
        "dropped" => EventKind::Dropped {
            topic: t()?,
            channel: c()?,
            id: id("id")?,
        },
        "topic_dropped" => EventKind::TopicDropped {
            topic: t()?,
            id: id("id")?,
        },
        "client_connected" => EventKind::ClientConnected {
            client: client("client")?,
        },
        "client_identified" => EventKind::ClientIdentified {
            client: client("client")?,
            client_id: text("client_id")?,
            hostname: text("hostname")?,
            user_agent: text("user_agent")?,
            msg_timeout: n("msg_timeout")?,
            heartbeat_interval: n("heartbeat_interval"),
        },
        "client_subscribed" => EventKind::ClientSubscribed {
            client: client("client")?,
            topic: t()?,
            channel: c()?,
        },
        "client_ready" => EventKind::ClientReady {
            client: client("client")?,
            count: v["count"].as_i64()?,
        },
        "client_closing" => EventKind::ClientClosing {
            client: client("client")?,
        },
        "client_closed" => EventKind::ClientClosed {
            client: client("client")?,
            reason: match v["reason"]["reason"].as_str()? {
                "disconnected" => CloseReason::Disconnected,
                "protocol_error" => {
                    CloseReason::ProtocolError(v["reason"]["detail"].as_str()?.to_string())
                }
                "read_timeout" => CloseReason::ReadTimeout,
                "channel_deleted" => CloseReason::ChannelDeleted,
                "bad_input" => CloseReason::BadInput,
                _ => return None,
            },
        },
        _ => return None,
    };
    Some(Event { at: n("at")?, kind })
}

/// Quiet frames in a row (nothing left out) before the story starts again.
const QUIET_FRAMES: u32 = 4;

/// Events kept while the story waits for its snapshot, at most.
const EARLY_MAX: usize = 10_000;

/// The steps kept (older ones are dropped, a few at a time).
const LOG_KEEP: usize = 2000;

/// A page that has had no frame for this long (by its own clock, in ms) says its numbers are
/// not live (frames come every 250 ms).
pub const STALE_AFTER_MS: f64 = 1500.0;

/// A topic without channels: its messages wait in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TopicCounts {
    pub depth: u64,
    pub on_disk: u64,
    pub messages: u64,
}

/// The mirrored state.
#[derive(Default)]
pub struct LiveModel {
    /// The picture: the last frame.
    pub view: View,
    /// Topics with no channel, from the last frame.
    pub bare_topics: BTreeMap<String, TopicCounts>,
    /// `--mem-queue-size`, from the last frame.
    pub mem_queue_size: u64,
    /// The story: the events told one by one.
    story: View,
    heaps: BTreeMap<(String, String), PQueue<u64>>,
    pub log: Vec<Step>,
    /// Steps dropped from the front of `log`.
    pub log_dropped: usize,
    /// Events left out of the story since the page opened (too many to tell).
    pub skipped: u64,
    /// The last frame left events out: the story waits for a quieter server.
    pub busy: bool,
    /// Events before the story's snapshot (applied once it is in, if newer).
    early: Vec<Event>,
    /// When the story's snapshot was taken: each channel's time, and the earliest.
    snapshot_at: Option<u64>,
    snapshot_of: BTreeMap<(String, String), Time>,
    /// The time of the last frame that left events out: a snapshot older than it misses them.
    lost_at: Time,
    /// Frames in a row that left nothing out.
    quiet: u32,
    /// The story should be loaded (again) from `/api/queues`: at the start, and after events
    /// were left out.
    pub wants_snapshot: bool,
    /// Server time of the last frame.
    pub frame_at: Option<Time>,
    /// The page's clock (ms) when the last frame came.
    pub frame_received: f64,
}

impl LiveModel {
    /// A mirror that shows times as the time of day.
    pub fn new() -> Self {
        let mut m = LiveModel::default();
        m.view.wall_clock = true;
        m.story.wall_clock = true;
        m.view.mem_queue_size = 10_000;
        m.wants_snapshot = true;
        m
    }

    /// The numbers on the page are not live: no frame yet, or none for [`STALE_AFTER_MS`]
    /// (`now_ms` is the page's clock).
    pub fn stale(&self, now_ms: f64) -> bool {
        self.frame_at.is_none() || now_ms - self.frame_received > STALE_AFTER_MS
    }
}

fn id_of(s: &str) -> Option<MessageId> {
    MessageId::from_hex(s.as_bytes())
}

impl LiveModel {
    fn heap(&mut self, t: &str, c: &str) -> &mut PQueue<u64> {
        self.heaps
            .entry((t.to_string(), c.to_string()))
            .or_insert_with(|| {
                let mut q = PQueue::plain();
                q.set_trace(true);
                q
            })
    }

    /// Load `/api/queues` (all channels): the story starts again from it. A snapshot taken
    /// before the last events left out is refused (the story would go on without them); the
    /// page asks again.
    pub fn load_snapshot(&mut self, channels: &[QueuesJson]) {
        let at = channels.iter().map(|q| q.now).min().unwrap_or(self.lost_at);
        if at < self.lost_at {
            return;
        }
        self.wants_snapshot = false;
        let keep: std::collections::BTreeSet<(String, String)> = channels
            .iter()
            .map(|q| (q.topic.clone(), q.channel.clone()))
            .collect();
        self.story.channels.retain(|k, _| keep.contains(k));
        self.heaps.retain(|k, _| keep.contains(k));
        for q in channels {
            self.story.now = self.story.now.max(q.now);
            let ids: Vec<(MessageId, u64)> = q
                .deferred
                .iter()
                .filter_map(|m| Some((id_of(&m.id)?, m.due)))
                .collect();
            let entries: Vec<(MessageId, u64)> = {
                let h = self.heap(&q.topic, &q.channel);
                h.clear();
                for (id, due) in &ids {
                    h.push(*due, id.0);
                }
                h.drain_trace();
                h.entries()
                    .iter()
                    .map(|e| (MessageId(e.item), e.key))
                    .collect()
            };
            let in_flight: Vec<InFlightChip> = q
                .in_flight
                .iter()
                .filter_map(|m| {
                    Some(InFlightChip {
                        id: id_of(&m.id)?,
                        client: ClientId(m.client.unwrap_or(0)),
                        sent: q.now,
                        deadline: m.due,
                        attempts: m.attempts,
                    })
                })
                .collect();
            let c = self.story.chan(&q.topic, &q.channel);
            c.heap = entries;
            c.hole = None;
            c.ever_deferred |= !c.heap.is_empty();
            c.in_flight = in_flight;
            // Ready messages are known by number only.
            c.queue.clear();
            c.unseen = q.depth as u64;
        }
        self.snapshot_at = Some(at);
        self.snapshot_of = channels
            .iter()
            .map(|q| ((q.topic.clone(), q.channel.clone()), q.now))
            .collect();
        for e in std::mem::take(&mut self.early) {
            if !self.in_snapshot(&e) {
                self.apply(&e);
            }
        }
        self.story.heap_marks.clear();
    }

    /// The story's snapshot already has what this event did (it happened before the snapshot
    /// of its channel was taken).
    fn in_snapshot(&self, e: &Event) -> bool {
        use EventKind as K;
        let channel = match &e.kind {
            K::Queued { topic, channel, .. }
            | K::Deferred { topic, channel, .. }
            | K::BecameDue { topic, channel, .. }
            | K::Sent { topic, channel, .. }
            | K::Finished { topic, channel, .. }
            | K::Requeued { topic, channel, .. }
            | K::TimedOut { topic, channel, .. }
            | K::Touched { topic, channel, .. } => Some((topic.to_string(), channel.to_string())),
            _ => None,
        };
        let at = channel
            .and_then(|k| self.snapshot_of.get(&k).copied())
            .or(self.snapshot_at);
        at.is_some_and(|at| e.at <= at)
    }

    /// One text message from `/ws/events`; `now_ms` is the page's clock. Anything but a
    /// frame is ignored.
    pub fn handle_message(&mut self, text: &str, now_ms: f64) {
        let Ok(mut v) = serde_json::from_str::<serde_json::Value>(text) else {
            return;
        };
        if v.get("type").and_then(|t| t.as_str()) != Some("frame") {
            return;
        }
        let skipped = v["skipped"].as_u64().unwrap_or(0);
        let frame = frame_of(&v["frame"]);
        let events: Vec<Event> = match v.get_mut("events").map(serde_json::Value::take) {
            Some(serde_json::Value::Array(es)) => {
                es.into_iter().filter_map(|e| event_of(&e)).collect()
            }
            _ => Vec::new(),
        };
        if skipped > 0 {
            // Some events are missing: the story cannot go on from them.
            self.skipped += skipped;
            self.quiet = 0;
            self.lost_at = self.lost_at.max(frame.at);
            if !self.busy {
                self.busy = true;
                self.push_step(frame.at, Text::new("live.busy"));
            }
            self.wants_snapshot = true;
            self.snapshot_at = None;
            self.early.clear();
        } else {
            // Calm again after a few quiet frames (not at each lull of a busy server).
            self.quiet += 1;
            if self.busy && self.quiet >= QUIET_FRAMES {
                self.busy = false;
                self.push_step(frame.at, Text::new("live.calm"));
            }
            for e in events {
                if self.snapshot_at.is_none() {
                    if self.early.len() < EARLY_MAX {
                        self.early.push(e);
                    }
                } else if !self.in_snapshot(&e) {
                    self.apply(&e);
                }
            }
        }
        self.load_frame(&frame, now_ms);
    }

    fn push_step(&mut self, at: Time, text: Text) {
        self.log.push(Step {
            at,
            text,
            claims: Vec::new(),
            what: crate::view::What::Other,
        });
    }

    /// The picture becomes the frame.
    pub fn load_frame(&mut self, f: &LiveFrame, now_ms: f64) {
        self.frame_at = Some(f.at);
        self.frame_received = now_ms;
        self.mem_queue_size = f.mem_queue_size;
        let v = &mut self.view;
        v.now = v.now.max(f.at);
        v.mem_queue_size = f.mem_queue_size as usize;
        for (client, name) in &f.names {
            v.call_actor(*client, Text::plain(name));
            self.story.call_actor(*client, Text::plain(name));
        }
        let mut keep = std::collections::BTreeSet::new();
        self.bare_topics.clear();
        v.topics.clear();
        for t in &f.topics {
            v.topics.entry(t.topic.clone()).or_default();
            if t.channels.is_empty() {
                self.bare_topics.insert(
                    t.topic.clone(),
                    TopicCounts {
                        depth: t.depth,
                        on_disk: t.backend_depth,
                        messages: t.messages,
                    },
                );
            }
            for c in &t.channels {
                keep.insert((t.topic.clone(), c.channel.clone()));
                let memory = c.depth.saturating_sub(c.backend_depth) as usize;
                let ch = v.chan(&t.topic, &c.channel);
                ch.heap = c.heap.clone();
                ch.hole = None;
                ch.ever_deferred |= c.deferred > 0;
                ch.in_flight = c
                    .flight
                    .iter()
                    .map(|m| InFlightChip {
                        id: m.id,
                        client: m.client,
                        sent: m.sent,
                        deadline: m.deadline,
                        attempts: m.attempts,
                    })
                    .collect();
                ch.queue = c
                    .ready
                    .iter()
                    .enumerate()
                    .map(|(i, id)| Chip {
                        id: *id,
                        on_disk: i >= memory,
                    })
                    .collect();
                ch.unseen = c.depth.saturating_sub(ch.queue.len() as u64);
                ch.server = Some(ServerCounts {
                    depth: c.depth,
                    on_disk: c.backend_depth,
                    deferred: c.deferred,
                    in_flight: c.in_flight,
                    messages: c.messages,
                    requeued: c.requeued,
                    timed_out: c.timed_out,
                    clients: c.clients,
                });
            }
        }
        v.channels.retain(|k, _| keep.contains(k));
        // What the story's last step was about, when the story is live.
        if self.busy || self.snapshot_at.is_none() {
            v.highlight = None;
            v.heap_marks.clear();
            v.heap_channel = None;
        } else {
            v.highlight = self.story.highlight;
            v.heap_channel = self.story.heap_channel.clone();
            // The story's marks are positions in its heap: shown when its top is the frame's.
            let same = v.heap_channel.as_ref().is_some_and(|k| {
                match (v.channels.get(k), self.story.channels.get(k)) {
                    (Some(a), Some(b)) => b.heap.iter().take(a.heap.len()).eq(a.heap.iter()),
                    _ => false,
                }
            });
            v.heap_marks = if same {
                self.story.heap_marks.clone()
            } else {
                Vec::new()
            };
        }
    }

    fn apply(&mut self, e: &Event) {
        // Replay the deferred heap locally; each operation is a step of its own.
        let ops = match &e.kind {
            EventKind::Deferred {
                topic,
                channel,
                id,
                due,
            } => {
                let h = self.heap(topic, channel);
                h.push(*due, id.0);
                Some((topic.to_string(), channel.to_string(), h.drain_trace()))
            }
            EventKind::BecameDue {
                topic, channel, id, ..
            } => {
                let h = self.heap(topic, channel);
                // The server pops its root; ours is the same message.
                if h.peek().is_some_and(|r| r.item == id.0) {
                    h.pop();
                } else if let Some(pos) = h.entries().iter().position(|x| x.item == id.0) {
                    // Out of step: rebuild without it.
                    let rest: Vec<_> = h
                        .entries()
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != pos)
                        .map(|(_, e)| (e.key, e.item))
                        .collect();
                    h.clear();
                    for (k, i) in rest {
                        h.push(k, i);
                    }
                }
                Some((topic.to_string(), channel.to_string(), h.drain_trace()))
            }
            _ => None,
        };
        // A due message is told, then popped: its heap operations come between.
        let (before, after) = match &e.kind {
            EventKind::BecameDue { .. } => (true, false),
            _ => (false, true),
        };
        if before {
            self.tell(e);
        }
        if let Some((t, c, ops)) = ops {
            for op in ops {
                let told = self.story.apply_heap(&t, &c, op);
                self.log.push(Step {
                    at: e.at,
                    text: told.text,
                    claims: told.claims,
                    what: told.what,
                });
            }
        }
        if after {
            self.tell(e);
        }
        if self.log.len() > LOG_KEEP + 500 {
            self.log.drain(..500);
            self.log_dropped += 500;
        }
    }

    fn tell(&mut self, e: &Event) {
        if let EventKind::ClientIdentified {
            client, client_id, ..
        } = &e.kind
        {
            if !client_id.is_empty() {
                let role = if self
                    .story
                    .channels
                    .values()
                    .any(|c| c.consumers.contains(client))
                {
                    Role::Consumer
                } else {
                    Role::Producer
                };
                self.story.name_actor(*client, Text::plain(client_id), role);
            }
        }
        if let Some(t) = self.story.apply(e) {
            self.log.push(Step {
                at: e.at,
                text: t.text,
                claims: t.claims,
                what: t.what,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsqlab_core::live::FrameLimits;
    use nsqlab_core::protocol::Command;
    use nsqlab_core::sim::Sim;
    use nsqlab_core::Options;

    fn snapshot(sim: &Sim, t: &str, c: &str) -> QueuesJson {
        let ch = sim.broker.channel(t, c).unwrap();
        QueuesJson {
            topic: t.into(),
            channel: c.into(),
            now: sim.now(),
            depth: ch.depth(),
            deferred: ch
                .deferred
                .entries()
                .iter()
                .map(|e| QueuedJson {
                    id: e.item.id.to_string(),
                    due: e.key,
                    attempts: 0,
                    client: None,
                })
                .collect(),
            in_flight: ch
                .in_flight
                .iter()
                .map(|e| QueuedJson {
                    id: e.item.msg.id.to_string(),
                    due: e.key,
                    attempts: e.item.msg.attempts,
                    client: Some(e.item.client.0),
                })
                .collect(),
        }
    }

    /// What the server sends: the events since `seen` (at most `cap`, the rest counted) and a
    /// frame of the broker now.
    fn frame(sim: &Sim, seen: &mut usize, cap: usize) -> String {
        let new = &sim.events[*seen..];
        *seen = sim.events.len();
        let told: Vec<String> = new
            .iter()
            .take(cap)
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        let skipped = new.len().saturating_sub(cap) as u64;
        sim.broker
            .live_frame(sim.now(), FrameLimits::default())
            .message(&told, skipped)
    }

    fn key(t: &str, c: &str) -> (String, String) {
        (t.to_string(), c.to_string())
    }

    /// Drive a real broker, send its events as the server does, and check the story's heap
    /// equals the broker's heap after every frame, and the picture its top.
    #[test]
    fn mirror_matches_the_broker() {
        let mut sim = Sim::new(Options::default(), 3);
        let c = sim.connect();
        sim.send(
            c,
            &Command::Sub {
                topic: "t".into(),
                channel: "c".into(),
            },
        );
        sim.send(c, &Command::Rdy(100));
        let p = sim.connect();
        let mut live = LiveModel::new();
        // The page connects after the channel exists: snapshot first.
        sim.send(
            p,
            &Command::Dpub {
                topic: "t".into(),
                defer_ms: 900,
                body: b"early"[..].into(),
            },
        );
        live.load_snapshot(&[snapshot(&sim, "t", "c")]);
        let mut seen = sim.events.len();
        let mut forward = |sim: &Sim, live: &mut LiveModel| {
            live.handle_message(&frame(sim, &mut seen, 200), 0.0);
            let ch = sim.broker.channel("t", "c").unwrap();
            let real: Vec<_> = ch
                .deferred
                .entries()
                .iter()
                .map(|e| (e.item.id, e.key))
                .collect();
            assert_eq!(live.story.channels[&key("t", "c")].heap, real);
            assert_eq!(live.view.channels[&key("t", "c")].heap, real);
            real.len()
        };
        for (i, d) in [500u64, 300, 700, 100, 800, 200].into_iter().enumerate() {
            sim.sleep(1_000_000 * (i as u64 + 1));
            sim.send(
                p,
                &Command::Dpub {
                    topic: "t".into(),
                    defer_ms: d,
                    body: b"x"[..].into(),
                },
            );
            forward(&sim, &mut live);
        }
        while sim.step(u64::MAX) {
            if forward(&sim, &mut live) == 0 {
                break;
            }
        }
        assert!(live.log.iter().any(|s| s.en().starts_with("Sift up:")));
        assert!(!live.wants_snapshot && !live.busy);
    }

    /// The page opens on a server that already holds messages: ready ones (depth), deferred
    /// ones and in-flight ones all show, and the counters are the server's.
    #[test]
    fn the_mirror_starts_from_the_servers_full_state() {
        let mut sim = Sim::new(Options::default(), 4);
        let p = sim.connect();
        sim.broker.create_channel(0, "t", "c").unwrap();
        sim.flush();
        for i in 0..4 {
            sim.send(
                p,
                &Command::Pub {
                    topic: "t".into(),
                    body: format!("m{i}").into_bytes().into(),
                },
            );
        }
        sim.send(
            p,
            &Command::Dpub {
                topic: "t".into(),
                defer_ms: 60_000,
                body: b"later"[..].into(),
            },
        );
        let c = sim.connect();
        sim.send(
            c,
            &Command::Sub {
                topic: "t".into(),
                channel: "c".into(),
            },
        );
        sim.send(c, &Command::Rdy(1));
        let mut live = LiveModel::new();
        let mut seen = sim.events.len();
        live.handle_message(&frame(&sim, &mut seen, 200), 0.0);
        live.load_snapshot(&[snapshot(&sim, "t", "c")]);
        let v = &live.view.channels[&key("t", "c")];
        assert_eq!((v.depth(), v.deferred(), v.in_flight.len()), (3, 1, 1));
        let s = v.server.unwrap();
        assert_eq!(
            (s.depth, s.deferred, s.in_flight, s.messages, s.clients),
            (3, 1, 1, 5, 1)
        );
        // A message that was ready before the page opened is sent now: depth goes down.
        let m = sim.messages(c);
        sim.sleep(nsqlab_core::time::MILLISECOND);
        sim.send(c, &Command::Fin(m[0].id.to_hex()));
        live.handle_message(&frame(&sim, &mut seen, 200), 250.0);
        let v = &live.view.channels[&key("t", "c")];
        assert_eq!((v.depth(), v.in_flight.len()), (2, 1));
        assert!(
            live.log.iter().any(|s| s.en().contains("FIN")),
            "the FIN is told"
        );
    }

    /// Issue 50 item 1: under a load of DPUBs far beyond what a page can tell one by one, with
    /// two channels and a small memory queue, every frame's picture is the broker's numbers
    /// (`/stats`) exactly; nothing impossible is drawn (a memory queue over its size, a heap
    /// whose count differs from the card's); memory and disk are told apart; a topic without
    /// channels is shown; messages are labelled by ID, never by body; the story says it stopped
    /// and starts again from the server's state once the load is over.
    #[test]
    fn under_load_every_frame_is_the_servers_numbers() {
        let opts = Options {
            mem_queue_size: 100,
            ..Options::default()
        };
        let mut sim = Sim::new(opts, 5);
        for ch in ["a", "b"] {
            sim.broker.create_channel(0, "load", ch).unwrap();
        }
        sim.broker.create_topic(0, "lonely").unwrap();
        sim.flush();
        let p = sim.connect();
        let mut live = LiveModel::new();
        let mut seen = sim.events.len();
        let mut frames = 0;
        let mut check = |sim: &Sim, live: &mut LiveModel, seen: &mut usize| {
            live.handle_message(&frame(sim, seen, 200), frames as f64 * 250.0);
            frames += 1;
            let stats = sim.broker.stats(&Default::default());
            for t in stats.topics.iter().flatten() {
                if t.channels.is_empty() {
                    let b = live.bare_topics[&t.topic_name];
                    assert_eq!((b.depth, b.on_disk), (t.depth, t.backend_depth));
                }
                for c in &t.channels {
                    let v = &live.view.channels[&key(&t.topic_name, &c.channel_name)];
                    let s = v.server.unwrap();
                    assert_eq!(
                        (s.depth, s.on_disk, s.deferred, s.in_flight, s.messages),
                        (
                            c.depth,
                            c.backend_depth,
                            c.deferred_count,
                            c.in_flight_count,
                            c.message_count
                        )
                    );
                    assert!(s.depth - s.on_disk <= live.mem_queue_size, "{s:?}");
                    assert_eq!(v.depth(), s.depth, "the drawn depth is the card's");
                    assert_eq!(v.heap.len() as u64, s.deferred.min(63));
                    for w in v.heap.iter().skip(1).enumerate() {
                        let parent = v.heap[w.0 / 2].1;
                        assert!(parent <= w.1 .1, "a heap drawn out of order");
                    }
                }
            }
        };
        for i in 0..2_000u64 {
            sim.send(
                p,
                &Command::Dpub {
                    topic: if i % 10 == 0 { "lonely" } else { "load" }.into(),
                    defer_ms: 1_000 + (i * 7919) % 19_000,
                    body: format!("secret body {i}").into_bytes().into(),
                },
            );
            if i % 400 == 399 {
                check(&sim, &mut live, &mut seen);
            }
        }
        assert!(
            live.busy && live.skipped > 0,
            "far more than a page can tell"
        );
        assert!(live
            .log
            .iter()
            .any(|s| s.en().contains("than anyone can read")));
        assert!(
            live.wants_snapshot,
            "the story waits for the server's state"
        );
        let lonely = live.bare_topics["lonely"];
        assert_eq!(
            lonely.depth, 200,
            "a topic without channels holds its messages"
        );
        // Time passes: the deferred messages come due, into memory and then the backlog.
        for _ in 0..100 {
            sim.sleep(250 * nsqlab_core::time::MILLISECOND);
            check(&sim, &mut live, &mut seen);
        }
        let a = live.view.channels[&key("load", "a")].server.unwrap();
        assert_eq!((a.depth, a.deferred), (1_800, 0));
        assert_eq!((a.depth - a.on_disk, a.on_disk), (100, 1_700));
        // No label or step is a body.
        let v = &live.view;
        let c = &v.channels[&key("load", "a")];
        assert!(c.queue.iter().all(|m| !v.label(m.id).contains("secret")));
        assert!(live.log.iter().all(|s| !s.en().contains("secret")));
        // Quiet again: the story says so, and starts again from the server's state.
        assert!(!live.busy);
        assert!(live.log.iter().any(|s| s.en().contains("quieter")));
        live.load_snapshot(&[snapshot(&sim, "load", "a"), snapshot(&sim, "load", "b")]);
        assert!(!live.wants_snapshot);
        let id = sim.connect();
        sim.sleep(nsqlab_core::time::MILLISECOND);
        sim.send(
            id,
            &Command::Dpub {
                topic: "load".into(),
                defer_ms: 500,
                body: b"one more"[..].into(),
            },
        );
        check(&sim, &mut live, &mut seen);
        assert!(
            live.log.last().unwrap().en().contains("heap"),
            "{:?}",
            live.log.last().unwrap().en()
        );
    }

    /// The page's hand-written reader reads what the server writes.
    #[test]
    fn the_frame_reader_reads_what_the_server_writes() {
        let mut sim = Sim::new(Options::default(), 7);
        let c = sim.connect();
        sim.send(
            c,
            &Command::Sub {
                topic: "t".into(),
                channel: "c".into(),
            },
        );
        sim.send(c, &Command::Rdy(2));
        let p = sim.connect();
        for (i, d) in [0u64, 0, 0, 5_000, 9_000].into_iter().enumerate() {
            sim.send(
                p,
                &Command::Dpub {
                    topic: if i == 0 { "bare" } else { "t" }.into(),
                    defer_ms: d,
                    body: b"x"[..].into(),
                },
            );
        }
        let f = sim.broker.live_frame(sim.now(), FrameLimits::default());
        assert!(f.topics.iter().any(|t| t
            .channels
            .iter()
            .any(|c| !c.flight.is_empty() && !c.heap.is_empty())));
        assert!(!f.names.is_empty());
        assert_eq!(frame_of(&serde_json::to_value(&f).unwrap()), f);
    }

    /// The page's hand-written event reader reads every kind of event as the server writes
    /// it. The match below has no catch-all: a new kind of event does not compile here until
    /// it is in the list (and so read and checked).
    #[test]
    fn the_event_reader_reads_every_kind_the_server_writes() {
        use nsqlab_core::event::{CloseReason, EventKind as K, HeapKind, Place};
        let (topic, channel): (nsqlab_core::Name, nsqlab_core::Name) = ("t".into(), "c".into());
        let (id, client) = (MessageId(0x1234_5678_9abc), ClientId(7));
        let mut kinds = vec![
            K::TopicCreated {
                topic: topic.clone(),
            },
            K::TopicDeleted {
                topic: topic.clone(),
            },
            K::TopicPaused {
                topic: topic.clone(),
            },
            K::TopicUnpaused {
                topic: topic.clone(),
            },
            K::TopicEmptied {
                topic: topic.clone(),
            },
            K::HeldInTopic {
                topic: topic.clone(),
                id,
                place: Place::Backend,
            },
            K::TopicDropped {
                topic: topic.clone(),
                id,
            },
            K::ClientConnected { client },
            K::ClientIdentified {
                client,
                client_id: "worker".into(),
                hostname: "h".into(),
                user_agent: "pynsq/0.9".into(),
                msg_timeout: 60_000,
                heartbeat_interval: None,
            },
            K::ClientSubscribed {
                client,
                topic: topic.clone(),
                channel: channel.clone(),
            },
            K::ClientReady { client, count: -1 },
            K::ClientClosing { client },
        ];
        for due in [None, Some(5)] {
            kinds.push(K::Published {
                topic: topic.clone(),
                id,
                size: 3,
                due,
                client: Some(client),
                nth: 2,
                batch: 5,
            });
        }
        kinds.push(K::Published {
            topic: topic.clone(),
            id,
            size: 0,
            due: None,
            client: None,
            nth: 1,
            batch: 1,
        });
        for reason in [
            CloseReason::Disconnected,
            CloseReason::ProtocolError("E_INVALID".into()),
            CloseReason::ReadTimeout,
            CloseReason::ChannelDeleted,
            CloseReason::BadInput,
        ] {
            kinds.push(K::ClientClosed { client, reason });
        }
        let (t, c) = (topic.clone(), channel.clone());
        kinds.extend([
            K::ChannelCreated {
                topic: t.clone(),
                channel: c.clone(),
            },
            K::ChannelDeleted {
                topic: t.clone(),
                channel: c.clone(),
            },
            K::ChannelPaused {
                topic: t.clone(),
                channel: c.clone(),
            },
            K::ChannelUnpaused {
                topic: t.clone(),
                channel: c.clone(),
            },
            K::ChannelEmptied {
                topic: t.clone(),
                channel: c.clone(),
            },
            K::Queued {
                topic: t.clone(),
                channel: c.clone(),
                id,
                place: Place::Memory,
            },
            K::Deferred {
                topic: t.clone(),
                channel: c.clone(),
                id,
                due: 9,
            },
            K::BecameDue {
                topic: t.clone(),
                channel: c.clone(),
                id,
                due: 9,
            },
            K::Sent {
                topic: t.clone(),
                channel: c.clone(),
                id,
                client,
                attempts: 3,
                deadline: 11,
            },
            K::Finished {
                topic: t.clone(),
                channel: c.clone(),
                id,
                client,
            },
            K::Requeued {
                topic: t.clone(),
                channel: c.clone(),
                id,
                client,
                delay: 100,
            },
            K::TimedOut {
                topic: t.clone(),
                channel: c.clone(),
                id,
                client,
            },
            K::Touched {
                topic: t.clone(),
                channel: c.clone(),
                id,
                client,
                deadline: 12,
            },
            K::Unsampled {
                topic: t.clone(),
                channel: c.clone(),
                id,
                client,
            },
            K::Dropped {
                topic: t.clone(),
                channel: c.clone(),
                id,
            },
        ]);
        let mut seen = std::collections::BTreeSet::new();
        for kind in kinds {
            let e = Event { at: 42, kind };
            let v = serde_json::to_value(&e).unwrap();
            seen.insert(v["type"].as_str().unwrap().to_string());
            assert_eq!(event_of(&v).as_ref(), Some(&e), "{v}");
        }
        // Every kind but the two a server never sends.
        let told = |k: &K| match k {
            K::Heap { .. } | K::Scan { .. } => false,
            K::TopicCreated { .. }
            | K::TopicDeleted { .. }
            | K::TopicPaused { .. }
            | K::TopicUnpaused { .. }
            | K::TopicEmptied { .. }
            | K::ChannelCreated { .. }
            | K::ChannelDeleted { .. }
            | K::ChannelPaused { .. }
            | K::ChannelUnpaused { .. }
            | K::ChannelEmptied { .. }
            | K::Published { .. }
            | K::HeldInTopic { .. }
            | K::Queued { .. }
            | K::Deferred { .. }
            | K::BecameDue { .. }
            | K::Sent { .. }
            | K::Finished { .. }
            | K::Requeued { .. }
            | K::TimedOut { .. }
            | K::Touched { .. }
            | K::Unsampled { .. }
            | K::Dropped { .. }
            | K::TopicDropped { .. }
            | K::ClientConnected { .. }
            | K::ClientIdentified { .. }
            | K::ClientSubscribed { .. }
            | K::ClientReady { .. }
            | K::ClientClosing { .. }
            | K::ClientClosed { .. } => true,
        };
        assert_eq!(seen.len(), 29, "one of each told kind: {seen:?}");
        let op = nsqlab_core::pqueue::HeapOp::Swap {
            child: 1,
            parent: 0,
        };
        let heap = K::Heap {
            topic,
            channel,
            heap: HeapKind::Deferred,
            op,
        };
        assert!(!told(&heap));
        assert_eq!(
            event_of(&serde_json::to_value(Event { at: 1, kind: heap }).unwrap()),
            None
        );
        assert_eq!(
            event_of(&serde_json::json!({"at": 1, "type": "sent", "topic": "t"})),
            None,
            "malformed"
        );
    }

    /// The story lines up with its snapshot: a frame that repeats events the snapshot already
    /// has does not apply them twice; a snapshot older than events left out is refused; and
    /// what is not a frame is ignored, never a panic.
    #[test]
    fn the_story_lines_up_with_its_snapshot() {
        let mut live = LiveModel::new();
        for bad in [
            "[]",
            "1",
            "null",
            r#"{"type":"x"}"#,
            r#"{"type":"frame","events":5}"#,
        ] {
            live.handle_message(bad, 0.0);
        }
        let mut sim = Sim::new(Options::default(), 8);
        sim.broker.create_channel(0, "t", "c").unwrap();
        sim.flush();
        let p = sim.connect();
        let mut seen = sim.events.len();
        live.handle_message(&frame(&sim, &mut seen, 200), 0.0);
        for d in [700u64, 300, 500] {
            sim.sleep(nsqlab_core::time::MILLISECOND);
            sim.send(
                p,
                &Command::Dpub {
                    topic: "t".into(),
                    defer_ms: d,
                    body: b"x"[..].into(),
                },
            );
        }
        // The snapshot is taken while those events are on their way in the next frame.
        live.load_snapshot(&[snapshot(&sim, "t", "c")]);
        live.handle_message(&frame(&sim, &mut seen, 200), 250.0);
        let real: Vec<_> = sim
            .broker
            .channel("t", "c")
            .unwrap()
            .deferred
            .entries()
            .iter()
            .map(|e| (e.item.id, e.key))
            .collect();
        assert_eq!(
            live.story.channels[&key("t", "c")].heap,
            real,
            "each DPUB once"
        );
        // Events left out at a later time: a snapshot from before then is refused.
        let old = snapshot(&sim, "t", "c");
        sim.sleep(nsqlab_core::time::MILLISECOND);
        let lossy = sim
            .broker
            .live_frame(sim.now(), FrameLimits::default())
            .message(&[], 7);
        live.handle_message(&lossy, 500.0);
        assert!(live.wants_snapshot);
        live.load_snapshot(&[old]);
        assert!(
            live.wants_snapshot,
            "a snapshot older than the loss is refused"
        );
        live.load_snapshot(&[snapshot(&sim, "t", "c")]);
        assert!(!live.wants_snapshot);
    }

    /// No frame for a while: the numbers are not called live.
    #[test]
    fn a_page_without_frames_says_its_numbers_are_old() {
        let sim = Sim::new(Options::default(), 6);
        let mut live = LiveModel::new();
        assert!(live.stale(0.0), "no frame yet");
        let mut seen = 0;
        live.handle_message(&frame(&sim, &mut seen, 200), 1_000.0);
        assert!(!live.stale(1_200.0));
        assert!(live.stale(1_000.0 + STALE_AFTER_MS + 1.0));
    }
}
