//! Two partitions (see `nsqlab_core::partition`), wired by a small host as a server wires
//! them: clients move to the partition that owns their topic, publishes of clients that stay
//! are forwarded, and every client sees its answers in the order it sent its commands.

use nsqlab_core::protocol::{decode_frame, Command, Frame, MAGIC_V2};
use nsqlab_core::stats::Stats;
use nsqlab_core::{partition_of, Broker, ClientId, Options, StatsFilter, Transmit};
use std::collections::HashMap;

struct Host {
    b: Vec<Broker>,
    /// Where each client's connection sends its input.
    at: HashMap<ClientId, usize>,
    inbox: HashMap<ClientId, Vec<u8>>,
    frames: HashMap<ClientId, Vec<Frame>>,
    closed: Vec<ClientId>,
    now: u64,
    /// Acknowledge store writes at once (durable brokers).
    auto_store: bool,
    /// Report a moved client settled at once.
    auto_settle: bool,
    unsettled: Vec<(usize, ClientId)>,
}

fn names() -> (String, String) {
    // A topic each partition owns.
    let a = (0..)
        .map(|i| format!("a{i}"))
        .find(|t| partition_of(t, 2) == 0);
    let b = (0..)
        .map(|i| format!("b{i}"))
        .find(|t| partition_of(t, 2) == 1);
    (a.unwrap(), b.unwrap())
}

impl Host {
    fn new(durable: bool) -> Host {
        let b = (0..2)
            .map(|p| {
                let opts = Options {
                    partition: p,
                    partitions: 2,
                    durable,
                    ..Options::default()
                };
                Broker::new(opts, 7 + p as u64, 1)
            })
            .collect();
        Host {
            b,
            at: HashMap::new(),
            inbox: HashMap::new(),
            frames: HashMap::new(),
            closed: Vec::new(),
            now: 1,
            auto_store: true,
            auto_settle: true,
            unsettled: Vec::new(),
        }
    }

    fn connect(&mut self, p: usize) -> ClientId {
        let id = self.b[p].connect(self.now, "10.0.0.1:5000");
        self.at.insert(id, p);
        self.send(id, MAGIC_V2);
        id
    }

    fn send(&mut self, c: ClientId, bytes: &[u8]) {
        let p = self.at[&c];
        self.b[p].handle_bytes(self.now, c, bytes);
        self.drive();
    }

    fn send_cmds(&mut self, c: ClientId, cmds: &[Command]) {
        let mut bytes = Vec::new();
        for cmd in cmds {
            cmd.encode(&mut bytes);
        }
        self.send(c, &bytes);
    }

    fn store_ack(&mut self, p: usize) {
        while self.b[p].poll_store().is_some() {}
        let t = self.b[p].last_ticket();
        self.b[p].handle_stored(self.now, t, Ok(()));
        self.drive();
    }

    fn settle(&mut self) {
        for (p, c) in std::mem::take(&mut self.unsettled) {
            self.b[p].settled(self.now, c);
        }
        self.drive();
    }

    /// Run every partition's outputs until nothing moves.
    fn drive(&mut self) {
        loop {
            let mut any = false;
            for p in 0..2 {
                if self.auto_store {
                    let mut wrote = false;
                    while self.b[p].poll_store().is_some() {
                        wrote = true;
                    }
                    if wrote {
                        let t = self.b[p].last_ticket();
                        self.b[p].handle_stored(self.now, t, Ok(()));
                    }
                }
                while let Some(t) = self.b[p].poll_transmit() {
                    any = true;
                    match t {
                        Transmit::Data { client, data } => {
                            let inbox = self.inbox.entry(client).or_default();
                            inbox.extend_from_slice(&data);
                            let mut used = 0;
                            while let Ok(Some((f, n))) = decode_frame(&inbox[used..]) {
                                self.frames.entry(client).or_default().push(f);
                                used += n;
                            }
                            inbox.drain(..used);
                        }
                        Transmit::Close { client } => self.closed.push(client),
                        Transmit::Upgrade { .. } => {}
                    }
                }
                // After the transmits, as a server does.
                while let Some(m) = self.b[p].poll_migration() {
                    any = true;
                    let (c, to) = (m.client, m.to as usize);
                    assert_ne!(to, p);
                    self.at.insert(c, to);
                    self.b[to].adopt(self.now, m);
                    if self.auto_settle {
                        self.b[to].settled(self.now, c);
                    } else {
                        self.unsettled.push((to, c));
                    }
                }
                while let Some(f) = self.b[p].poll_forward() {
                    any = true;
                    let to = f.to as usize;
                    let r = self.b[to].publish(self.now, &f.topic, f.bodies, f.defer);
                    let r = r
                        .map(|_| ())
                        .map_err(|_| self.b[to].health().unwrap_or("refused").to_string());
                    self.b[p].handle_forwarded(self.now, f.client, r);
                }
            }
            if !any {
                break;
            }
        }
    }

    fn frames(&mut self, c: ClientId) -> Vec<Frame> {
        self.frames.remove(&c).unwrap_or_default()
    }

    fn stats(&self) -> Stats {
        let f = StatsFilter {
            include_clients: true,
            ..StatsFilter::default()
        };
        Stats::merge(
            self.b
                .iter()
                .map(|b| (b.stats(&f), b.producers(&f)))
                .collect(),
        )
    }
}

fn ok() -> Frame {
    Frame::Response(b"OK".to_vec())
}

fn publish(topic: &str, body: &str) -> Command {
    Command::Pub {
        topic: topic.into(),
        body: body.as_bytes().into(),
    }
}

fn sub(topic: &str) -> Command {
    Command::Sub {
        topic: topic.into(),
        channel: "ch".into(),
    }
}

fn bodies(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Message(m) => Some(String::from_utf8_lossy(&m.body).into_owned()),
            _ => None,
        })
        .collect()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn client_ids_are_unique_across_partitions() {
    let mut h = Host::new(false);
    let ids: Vec<ClientId> = (0..6).map(|i| h.connect(i % 2)).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 6, "{ids:?}");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_client_moves_to_its_topic_and_its_pipelined_answers_stay_in_order() {
    let (ta, tb) = names();
    let mut h = Host::new(false);
    let c = h.connect(0);
    // All in one piece: the first publish moves it to partition 1; the publish to partition
    // 0's topic is then forwarded (it moved once already); the SUB is local there.
    h.send_cmds(
        c,
        &[
            publish(&tb, "to-b"),
            publish(&ta, "to-a"),
            sub(&tb),
            Command::Rdy(5),
        ],
    );
    assert_eq!(h.at[&c], 1);
    let frames = h.frames(c);
    assert_eq!(frames[..3], [ok(), ok(), ok()], "{frames:?}");
    assert_eq!(bodies(&frames), ["to-b"]);
    assert_eq!(h.b[0].topic(&ta).unwrap().message_count, 1);
    assert!(h.b[0].topic(&tb).is_none());
    assert!(h.b[1].topic(&ta).is_none());

    // Merged stats: each topic once, the producer once with its count.
    let s = h.stats();
    let topics: Vec<_> = s
        .topics
        .unwrap()
        .into_iter()
        .map(|t| t.topic_name)
        .collect();
    let mut want = vec![ta.clone(), tb.clone()];
    want.sort();
    assert_eq!(topics, want);
    let producers = s.producers.unwrap();
    assert_eq!(producers.len(), 1);
    assert_eq!(producers[0].id, c);
    assert_eq!(producers[0].state, 3);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_subscriber_publishing_elsewhere_is_forwarded_and_waits_for_the_answer() {
    let (ta, tb) = names();
    let mut h = Host::new(false);
    let c = h.connect(1);
    h.send_cmds(c, &[sub(&ta), Command::Rdy(10)]);
    assert_eq!(h.at[&c], 0);
    assert_eq!(h.frames(c), [ok()]);
    // Three pipelined publishes to partition 1's topic, one to its own.
    h.send_cmds(
        c,
        &[
            publish(&tb, "1"),
            publish(&tb, "2"),
            publish(&ta, "own"),
            publish(&tb, "3"),
        ],
    );
    assert_eq!(h.at[&c], 0, "a subscriber stays with its channel");
    let frames = h.frames(c);
    assert_eq!(
        frames.iter().filter(|f| **f == ok()).count(),
        4,
        "{frames:?}"
    );
    assert_eq!(bodies(&frames), ["own"]);
    assert_eq!(h.b[1].topic(&tb).unwrap().message_count, 3);

    // A failing store there fails the publish here, as a local one would.
    h.b[1].set_health(Some("disk full".into()));
    h.send_cmds(c, &[publish(&tb, "4"), Command::Nop]);
    let frames = h.frames(c);
    assert_eq!(
        frames,
        [Frame::Error(b"E_PUB_FAILED PUB failed disk full".to_vec())]
    );
    assert!(h.closed.contains(&c));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_client_with_held_output_moves_only_once_it_went_out() {
    let (ta, tb) = names();
    let mut h = Host::new(true);
    h.auto_store = false;
    let c = h.connect(0);
    h.send_cmds(c, &[publish(&ta, "x"), sub(&tb)]);
    // The OK waits for the store, so the client waits here.
    assert_eq!(h.at[&c], 0);
    assert!(h.frames(c).is_empty());
    h.store_ack(0);
    assert_eq!(h.at[&c], 1);
    assert_eq!(h.frames(c), [ok(), ok()]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_moved_client_moves_again_only_once_settled() {
    let (ta, tb) = names();
    let mut h = Host::new(false);
    h.auto_settle = false;
    let c = h.connect(0);
    h.send_cmds(c, &[publish(&tb, "x"), sub(&ta), Command::Rdy(1)]);
    // Moved to 1 for the publish; the SUB for partition 0's topic waits for the settle.
    assert_eq!(h.at[&c], 1);
    assert_eq!(h.frames(c), [ok()]);
    h.settle();
    assert_eq!(h.at[&c], 0);
    assert_eq!(h.frames(c), [ok()]);
    // It consumes there.
    let p = h.connect(1);
    h.send_cmds(p, &[publish(&ta, "m")]);
    assert_eq!(h.frames(p), [ok()]);
    assert_eq!(bodies(&h.frames(c)), ["m"]);
    // Disconnecting where it is now forgets it there.
    h.b[0].disconnect(h.now, c);
    assert!(h.b.iter().all(|b| b.client(c).is_none()));
}
