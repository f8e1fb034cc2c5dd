//! What a live picture of the broker needs, in one snapshot: [`Broker::live_frame`].
//!
//! The visualiser's live mode draws a real server. Its numbers must be the server's numbers
//! (those `/stats` gives) however busy the server is, and the parts of one channel's picture
//! (its counters, the top of its deferred heap, its in-flight window) must come from one
//! instant, or the picture shows two counts of one thing that disagree. So the server sends a
//! frame a few times a second, each taken at one instant per partition, with the counters and
//! the first few entries of each queue (enough to draw; a count says how many more there are).
//!
//! A frame carries message IDs and client names, never a message body: bodies reach only the
//! consumers the TCP protocol admits.

use crate::broker::Broker;
use crate::time::Time;
use crate::{ClientId, MessageId};
use serde::{Deserialize, Serialize};

/// How much of each queue a frame carries.
#[derive(Debug, Clone, Copy)]
pub struct FrameLimits {
    /// Deferred heap entries, in array order (the first `2^k - 1` are the top `k` levels).
    pub heap: usize,
    /// In-flight messages, earliest deadline first.
    pub in_flight: usize,
    /// Ready messages, in the order they leave.
    pub ready: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits {
            heap: 63,
            in_flight: 32,
            ready: 8,
        }
    }
}

/// A snapshot for a live picture (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveFrame {
    /// When it was taken (the latest of its partitions' clocks).
    pub at: Time,
    /// `--mem-queue-size`: a memory queue holds at most this many.
    pub mem_queue_size: u64,
    pub topics: Vec<LiveTopic>,
    /// Names of the clients the frame mentions: the `client_id` they identified with, or their
    /// address.
    pub names: Vec<(ClientId, String)>,
}

/// A topic in a [`LiveFrame`]; its messages wait here while it has no channel or is paused.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveTopic {
    pub topic: String,
    /// Messages held by the topic (memory and disk), as `/stats` `depth`.
    pub depth: u64,
    /// Of those, on disk (`backend_depth`).
    pub backend_depth: u64,
    pub messages: u64,
    pub paused: bool,
    pub channels: Vec<LiveChannel>,
}

/// A channel in a [`LiveFrame`]: its `/stats` counters and the first entries of its queues.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveChannel {
    pub channel: String,
    /// Ready messages (memory queue and disk backlog), as `/stats` `depth`.
    pub depth: u64,
    /// Of those, in the disk backlog (`backend_depth`).
    pub backend_depth: u64,
    pub deferred: u64,
    pub in_flight: u64,
    pub messages: u64,
    pub requeued: u64,
    pub timed_out: u64,
    pub clients: u64,
    pub paused: bool,
    /// The first entries of the deferred heap in array order: (message, due time).
    pub heap: Vec<(MessageId, Time)>,
    /// The in-flight messages with the earliest deadlines, earliest first.
    pub flight: Vec<LiveInFlight>,
    /// The next ready messages, in the order they leave.
    pub ready: Vec<MessageId>,
}

/// An in-flight message in a [`LiveFrame`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LiveInFlight {
    pub id: MessageId,
    pub client: ClientId,
    pub sent: Time,
    pub deadline: Time,
    pub attempts: u16,
}

impl LiveFrame {
    /// The `/ws/events` message that carries this frame: `{"type":"frame","skipped":N,
    /// "events":[…],"frame":{…}}`, with the events since the last frame (each already JSON)
    /// and how many more were left out.
    pub fn message(&self, events: &[String], skipped: u64) -> String {
        format!(
            r#"{{"type":"frame","skipped":{skipped},"events":[{}],"frame":{}}}"#,
            events.join(","),
            serde_json::to_string(self).unwrap_or_default()
        )
    }

    /// One frame from the parts of several partitions (each owns its topics whole).
    pub fn merge(parts: impl IntoIterator<Item = LiveFrame>) -> LiveFrame {
        let mut out = LiveFrame::default();
        for p in parts {
            out.at = out.at.max(p.at);
            out.mem_queue_size = out.mem_queue_size.max(p.mem_queue_size);
            out.topics.extend(p.topics);
            out.names.extend(p.names);
        }
        out.topics.sort_by(|a, b| a.topic.cmp(&b.topic));
        out.names.sort();
        out.names.dedup_by_key(|n| n.0);
        out
    }
}

impl Broker {
    /// This broker's topics and channels for a live picture, at this instant (`now`: the
    /// host's clock; the frame says the later of it and the broker's).
    pub fn live_frame(&self, now: Time, limits: FrameLimits) -> LiveFrame {
        let mut names = std::collections::BTreeMap::new();
        let mut name = |id: ClientId| {
            names.entry(id).or_insert_with(|| {
                self.client(id)
                    .map(|c| {
                        let host = c.identify.hostname.as_str();
                        if c.identify.client_id.is_empty() || c.identify.client_id == host {
                            c.remote_address.clone()
                        } else {
                            c.identify.client_id.clone()
                        }
                    })
                    .unwrap_or_default()
            });
        };
        let mut topics = Vec::new();
        for t in self.topics() {
            let mut channels = Vec::new();
            for (cname, &cid) in &t.channels {
                let Some(c) = self.channel_by_id(cid) else {
                    continue;
                };
                let mut flight: Vec<LiveInFlight> = c
                    .in_flight
                    .iter()
                    .map(|e| LiveInFlight {
                        id: e.item.msg.id,
                        client: e.item.client,
                        sent: e.item.delivered_at,
                        deadline: e.key,
                        attempts: e.item.msg.attempts,
                    })
                    .collect();
                // The earliest deadlines only (a channel may have thousands in flight).
                let key = |f: &LiveInFlight| (f.deadline, f.id);
                if flight.len() > limits.in_flight {
                    flight.select_nth_unstable_by_key(limits.in_flight, key);
                    flight.truncate(limits.in_flight);
                }
                flight.sort_unstable_by_key(key);
                for f in &flight {
                    name(f.client);
                }
                for id in &c.clients {
                    name(*id);
                }
                channels.push(LiveChannel {
                    channel: cname.to_string(),
                    depth: c.depth() as u64,
                    backend_depth: c.queue.backend_len() as u64,
                    deferred: c.deferred.len() as u64,
                    in_flight: c.in_flight.len() as u64,
                    messages: c.message_count,
                    requeued: c.requeue_count,
                    timed_out: c.timeout_count,
                    clients: c.clients.len() as u64,
                    paused: c.paused,
                    heap: c
                        .deferred
                        .entries()
                        .iter()
                        .take(limits.heap)
                        .map(|e| (e.item.id, e.key))
                        .collect(),
                    flight,
                    // Those whose bodies are being read back go first.
                    ready: c
                        .loading
                        .iter()
                        .map(|m| m.id)
                        .chain(c.queue.ids())
                        .take(limits.ready)
                        .collect(),
                });
            }
            topics.push(LiveTopic {
                topic: t.name.to_string(),
                depth: t.depth() as u64,
                backend_depth: t.queue.backend_len() as u64,
                messages: t.message_count,
                paused: t.paused,
                channels,
            });
        }
        LiveFrame {
            at: now.max(self.now()),
            mem_queue_size: self.options().mem_queue_size as u64,
            topics,
            names: names.into_iter().collect(),
        }
    }
}
