//! Live mode: mirror a real server.
//!
//! The page starts from the server's full state: `GET /api/queues` gives every channel's depth,
//! deferred heap and in-flight messages, and the stats snapshot the event stream sends every
//! second (`/ws/events`, `{"type":"stats"}`) gives its counters, exactly as `/stats` has them.
//! Events then move messages between places. The server does not send heap operations, so each
//! channel's deferred heap is replayed here with the core's own [`PQueue`] (same algorithm,
//! same insertion order, so the same array), and its trace drives the same step-by-step view
//! as the simulation. When the stream says events were dropped (this page was too slow), the
//! page loads the snapshot again ([`LiveModel::wants_snapshot`]).

use crate::lab::Step;
use crate::view::{InFlightChip, ServerCounts, View};
use nsqlab_core::event::{Event, EventKind};
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

/// The steps kept (older ones are dropped, a few at a time).
const LOG_KEEP: usize = 2000;

/// The mirrored state.
#[derive(Default)]
pub struct LiveModel {
    pub view: View,
    heaps: BTreeMap<(String, String), PQueue<u64>>,
    pub log: Vec<Step>,
    /// Steps dropped from the front of `log`.
    pub log_dropped: usize,
    /// Events the stream dropped because this page was too slow.
    pub dropped: u64,
    /// Events before the snapshot (applied once it is in, if newer).
    early: Vec<Event>,
    snapshot_at: Option<u64>,
    /// The snapshot should be loaded (again): at the start, and after dropped events.
    pub wants_snapshot: bool,
    /// When the last stats snapshot was taken (server time).
    pub stats_at: Option<Time>,
}

impl LiveModel {
    /// A mirror that shows times as the time of day.
    pub fn new() -> Self {
        let mut m = LiveModel::default();
        m.view.wall_clock = true;
        m.view.mem_queue_size = 10_000;
        m.wants_snapshot = true;
        m
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

    /// Load `/api/queues` (all channels): the drawing starts again from it.
    pub fn load_snapshot(&mut self, channels: &[QueuesJson]) {
        self.wants_snapshot = false;
        let keep: std::collections::BTreeSet<(String, String)> = channels
            .iter()
            .map(|q| (q.topic.clone(), q.channel.clone()))
            .collect();
        self.view.channels.retain(|k, _| keep.contains(k));
        self.heaps.retain(|k, _| keep.contains(k));
        for q in channels {
            self.view.now = self.view.now.max(q.now);
            let ids: Vec<(MessageId, u64)> = q
                .deferred
                .iter()
                .filter_map(|m| Some((id_of(&m.id)?, m.due)))
                .collect();
            for (id, _) in &ids {
                self.view.number_message(*id);
            }
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
            for m in &in_flight {
                self.view.number_message(m.id);
            }
            let c = self.view.chan(&q.topic, &q.channel);
            c.heap = entries;
            c.hole = None;
            c.ever_deferred |= !c.heap.is_empty();
            c.in_flight = in_flight;
            // Ready messages are known by number only.
            c.queue.clear();
            c.unseen = q.depth as u64;
            let counts = c.server.get_or_insert_with(ServerCounts::default);
            counts.depth = q.depth as u64;
            counts.deferred = q.deferred.len() as u64;
            counts.in_flight = q.in_flight.len() as u64;
            self.view.topics.entry(q.topic.clone()).or_default();
        }
        let at = channels.iter().map(|q| q.now).max().unwrap_or(0);
        self.snapshot_at = Some(at);
        for e in std::mem::take(&mut self.early) {
            if e.at > at {
                self.apply(&e);
            }
        }
        self.view.heap_marks.clear();
    }

    /// One text message from `/ws/events`.
    pub fn handle_message(&mut self, text: &str) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
            return;
        };
        match v["type"].as_str() {
            Some("dropped") => {
                self.dropped += v["count"].as_u64().unwrap_or(0);
                self.wants_snapshot = true;
            }
            Some("stats") => self.load_stats(&v),
            _ => {
                if let Ok(e) = serde_json::from_value::<Event>(v) {
                    if self.snapshot_at.is_none() {
                        self.early.push(e);
                    } else {
                        self.apply(&e);
                    }
                }
            }
        }
    }

    /// The stats snapshot: every channel's counters as `/stats` has them.
    pub fn load_stats(&mut self, v: &serde_json::Value) {
        if let Some(at) = v["at"].as_u64() {
            self.view.now = self.view.now.max(at);
            self.stats_at = Some(at);
        }
        let Some(topics) = v["topics"].as_array() else {
            return;
        };
        let n = |c: &serde_json::Value, k: &str| c[k].as_u64().unwrap_or(0);
        for t in topics {
            let topic = t["topic_name"].as_str().unwrap_or_default();
            self.view.topics.entry(topic.to_string()).or_default();
            for c in t["channels"].as_array().into_iter().flatten() {
                let name = c["channel_name"].as_str().unwrap_or_default();
                let counts = ServerCounts {
                    depth: n(c, "depth"),
                    deferred: n(c, "deferred_count"),
                    in_flight: n(c, "in_flight_count"),
                    messages: n(c, "message_count"),
                    requeued: n(c, "requeue_count"),
                    timed_out: n(c, "timeout_count"),
                    clients: n(c, "client_count"),
                };
                let ch = self.view.chan(topic, name);
                ch.server = Some(counts);
                // The ready messages the page has no chip for.
                ch.unseen = counts.depth.saturating_sub(ch.queue.len() as u64);
            }
        }
    }

    fn apply(&mut self, e: &Event) {
        // Messages are numbered in the order the page first sees them.
        if let EventKind::Published { id, .. } = &e.kind {
            self.view.number_message(*id);
        }
        // Replay the deferred heap locally; each operation is a step of its own.
        let ops = match &e.kind {
            EventKind::Deferred {
                topic,
                channel,
                id,
                due,
            } => {
                self.view.number_message(*id);
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
                    // Out of step (events were dropped): rebuild without it.
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
                let told = self.view.apply_heap(&t, &c, op);
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
                    .view
                    .channels
                    .values()
                    .any(|c| c.consumers.contains(client))
                {
                    crate::view::Role::Consumer
                } else {
                    crate::view::Role::Producer
                };
                self.view
                    .name_actor(*client, crate::i18n::Text::plain(client_id), role);
            }
        }
        if let Some(t) = self.view.apply(e) {
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

    fn stats_json(sim: &Sim) -> String {
        let st = sim.broker.stats(&nsqlab_core::StatsFilter::default());
        serde_json::json!({"type": "stats", "at": sim.now(), "topics": st.topics}).to_string()
    }

    /// Drive a real broker, serialise its events as the server does, and check the mirror's
    /// heap equals the broker's heap after every event.
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
        // Forward new events as the server would, then compare the mirror with the broker.
        let mut forward = |sim: &Sim, live: &mut LiveModel| {
            for e in &sim.events[seen..] {
                live.handle_message(&serde_json::to_string(e).unwrap());
            }
            seen = sim.events.len();
            let ch = sim.broker.channel("t", "c").unwrap();
            let real: Vec<_> = ch
                .deferred
                .entries()
                .iter()
                .map(|e| (e.item.id, e.key))
                .collect();
            assert_eq!(
                live.view.channels[&("t".to_string(), "c".to_string())].heap,
                real
            );
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
        live.handle_message(r#"{"type":"dropped","count":3}"#);
        assert_eq!(live.dropped, 3);
        assert!(
            live.wants_snapshot,
            "dropped events: load the snapshot again"
        );
    }

    /// Issue item 11: The page opens on a server that already holds messages: ready ones (depth), deferred
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
        live.load_snapshot(&[snapshot(&sim, "t", "c")]);
        live.handle_message(&stats_json(&sim));
        let v = &live.view.channels[&("t".to_string(), "c".to_string())];
        assert_eq!((v.depth(), v.deferred(), v.in_flight.len()), (3, 1, 1));
        let s = v.server.unwrap();
        assert_eq!(
            (s.depth, s.deferred, s.in_flight, s.messages, s.clients),
            (3, 1, 1, 5, 1)
        );
        // A message that was ready before the page opened is sent now: depth goes down.
        sim.events.clear();
        let m = sim.messages(c);
        sim.send(c, &Command::Fin(m[0].id.to_hex()));
        for e in &sim.events {
            live.handle_message(&serde_json::to_string(e).unwrap());
        }
        let v = &live.view.channels[&("t".to_string(), "c".to_string())];
        assert_eq!((v.depth(), v.in_flight.len(), v.finished), (2, 1, 1));
    }
}
