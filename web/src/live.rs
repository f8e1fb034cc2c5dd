//! Live mode: mirror a real server. The page loads every channel's deferred and in-flight
//! messages from `GET /api/queues`, then follows `GET /ws/events`. The server does not send
//! heap operations, so each channel's deferred heap is replayed here with the core's own
//! [`PQueue`] (same algorithm, same insertion order, so the same array), and its trace drives
//! the same step-by-step view as the simulation.

use crate::lab::{InFlightChip, Step, View};
use nsqlab_core::event::{Event, EventKind};
use nsqlab_core::pqueue::PQueue;
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

/// The mirrored state.
#[derive(Default)]
pub struct LiveModel {
    pub view: View,
    heaps: BTreeMap<(String, String), PQueue<u64>>,
    pub log: Vec<Step>,
    /// Events the stream dropped because this page was too slow.
    pub dropped: u64,
    /// Events before the snapshot (applied once it is in, if newer).
    early: Vec<Event>,
    snapshot_at: Option<u64>,
}

impl LiveModel {
    /// A mirror that shows times as the time of day.
    pub fn new() -> Self {
        let mut m = LiveModel::default();
        m.view.wall_clock = true;
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

    /// Load `/api/queues` (all channels).
    pub fn load_snapshot(&mut self, channels: &[QueuesJson]) {
        for q in channels {
            self.view.now = self.view.now.max(q.now);
            let heap_ops: Vec<_> = {
                let h = self.heap(&q.topic, &q.channel);
                h.clear();
                for m in &q.deferred {
                    if let Some(id) = id_of(&m.id) {
                        h.push(m.due, id.0);
                    }
                }
                h.drain_trace()
            };
            let c = self.view.chan(&q.topic, &q.channel);
            c.heap.clear();
            c.in_flight = q
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
            for op in heap_ops {
                self.view.apply_heap(&q.topic, &q.channel, op);
            }
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
            Some("dropped") => self.dropped += v["count"].as_u64().unwrap_or(0),
            Some("stats") => {
                if let Some(at) = v["at"].as_u64() {
                    self.view.now = self.view.now.max(at);
                }
            }
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
        if let Some(text) = self.view.apply(e) {
            self.log.push(Step { at: e.at, text });
        }
        if let Some((t, c, ops)) = ops {
            for op in ops {
                let text = self.view.apply_heap(&t, &c, op);
                self.log.push(Step { at: e.at, text });
            }
        }
        if self.log.len() > 200 {
            self.log.drain(..100);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsqlab_core::protocol::Command;
    use nsqlab_core::sim::Sim;
    use nsqlab_core::Options;

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
        let mut live = LiveModel::default();
        // The page connects after the channel exists: snapshot first.
        sim.send(
            p,
            &Command::Dpub {
                topic: "t".into(),
                defer_ms: 900,
                body: b"early"[..].into(),
            },
        );
        let ch = sim.broker.channel("t", "c").unwrap();
        let snap = QueuesJson {
            topic: "t".into(),
            channel: "c".into(),
            now: sim.now(),
            depth: 0,
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
            in_flight: vec![],
        };
        live.load_snapshot(&[snap]);
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
        assert!(live.log.iter().any(|s| s.text.starts_with("Swap index")));
        live.handle_message(r#"{"type":"dropped","count":3}"#);
        assert_eq!(live.dropped, 3);
    }
}
