//! Partitions (see `nsqlab_core::partition`), wired by a small host as a server wires them:
//! clients move to the partition that owns their topic, publishes of clients that stay are
//! forwarded, and every client sees its answers in the order it sent its commands — in set
//! scenarios, and over random interleavings (`PARTITION_SEEDS=N`, default 5 000).

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
                        Transmit::Upgrade { .. } | Transmit::WriteTimeout { .. } => {}
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
        Stats::merge(self.b.iter().map(|b| b.stats_part(&f)).collect())
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

// ------------------------------------------------------------------ random interleavings

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

/// One client of the random model: what it will send, what it must get back.
struct Script {
    id: ClientId,
    at: usize,
    /// Bytes not yet sent.
    rest: VecDeque<u8>,
    /// Responses it must see, in order (messages interleave freely).
    want: Vec<Frame>,
    /// The topic it subscribes to, if it does.
    sub: Option<String>,
    got: Vec<Frame>,
    inbox: Vec<u8>,
    /// Leaving its partition (the core let it go; the host has not handed it over yet):
    /// input sent meanwhile, for the new partition.
    late: Option<Vec<u8>>,
}

/// A host that runs everything in a random order: pieces of each client's input, store
/// acknowledgements, answers to forwarded publishes and settles.
struct RandomHost {
    b: Vec<Broker>,
    rng: Xoshiro256PlusPlus,
    durable: bool,
    clients: Vec<Script>,
    /// Forwarded publishes waiting to run: (from, forward).
    forwards: Vec<(usize, nsqlab_core::Forward)>,
    /// Run, waiting for the owner's store: (owner, from, client, result).
    stored_answers: Vec<(usize, usize, ClientId, Result<(), String>)>,
    unsettled: Vec<(usize, ClientId)>,
    published: HashMap<String, u64>,
    /// Migrations taken from a partition, handed over at its next drain.
    leaving: Vec<(usize, nsqlab_core::Migration)>,
}

impl RandomHost {
    fn new(seed: u64) -> RandomHost {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let n = 2 + (rng.next_u32() % 2);
        let durable = rng.next_u32() % 2 == 0;
        let b = (0..n)
            .map(|p| {
                let opts = Options {
                    partition: p,
                    partitions: n,
                    durable,
                    ..Options::default()
                };
                Broker::new(opts, seed ^ p as u64, 1)
            })
            .collect();
        RandomHost {
            b,
            rng,
            durable,
            clients: Vec::new(),
            forwards: Vec::new(),
            stored_answers: Vec::new(),
            unsettled: Vec::new(),
            published: HashMap::new(),
            leaving: Vec::new(),
        }
    }

    /// After any input to partition `p`: the clients it let go start leaving (their input
    /// waits for the hand-over, as a server's does).
    fn after(&mut self, p: usize) {
        while let Some(m) = self.b[p].poll_migration() {
            let i = self.idx(m.client);
            self.clients[i].late = Some(Vec::new());
            self.leaving.push((p, m));
        }
    }

    fn input(&mut self, i: usize, piece: &[u8]) {
        let c = &mut self.clients[i];
        if let Some(late) = &mut c.late {
            late.extend_from_slice(piece);
            return;
        }
        let (at, id) = (c.at, c.id);
        self.b[at].handle_bytes(1, id, piece);
        self.after(at);
    }

    fn pick(&mut self, n: usize) -> usize {
        (self.rng.next_u32() as usize) % n
    }

    fn add_client(&mut self, topics: &[&str]) {
        let at = self.pick(self.b.len());
        let id = self.b[at].connect(1, "10.0.0.1:5000");
        let mut bytes = MAGIC_V2.to_vec();
        let mut want = Vec::new();
        let mut sub_topic = None;
        let n = 1 + self.pick(12);
        let sub_at = (self.pick(2) == 0).then(|| self.pick(n));
        for i in 0..n {
            if sub_at == Some(i) {
                let t = topics[self.pick(topics.len())].to_string();
                sub(&t).encode(&mut bytes);
                Command::Rdy(1000).encode(&mut bytes);
                want.push(ok());
                sub_topic = Some(t);
                continue;
            }
            let t = topics[self.pick(topics.len())];
            let body = |k: usize| format!("{t}/{}/{i}/{k}", id.0);
            let cmd = match self.pick(4) {
                0 => Command::Nop,
                1 => Command::Mpub {
                    topic: t.into(),
                    bodies: (0..3).map(|k| body(k).as_bytes().into()).collect(),
                },
                2 => Command::Dpub {
                    topic: t.into(),
                    defer_ms: 0,
                    body: body(0).as_bytes().into(),
                },
                _ => publish(t, &body(0)),
            };
            let count = match &cmd {
                Command::Nop => 0,
                Command::Mpub { .. } => 3,
                _ => 1,
            };
            if count > 0 {
                want.push(ok());
                *self.published.entry(t.to_string()).or_default() += count;
            }
            cmd.encode(&mut bytes);
        }
        self.clients.push(Script {
            id,
            at,
            rest: bytes.into(),
            want,
            sub: sub_topic,
            got: Vec::new(),
            inbox: Vec::new(),
            late: None,
        });
    }

    fn idx(&self, id: ClientId) -> usize {
        self.clients.iter().position(|c| c.id == id).unwrap()
    }

    /// One random step; false when there was nothing left to do.
    fn step(&mut self) -> bool {
        let mut options = Vec::new();
        if self.clients.iter().any(|c| !c.rest.is_empty()) {
            options.push(0);
        }
        if self.durable {
            options.push(1);
        }
        if !self.forwards.is_empty() {
            options.push(2);
        }
        if !self.unsettled.is_empty() {
            options.push(3);
        }
        options.push(4);
        let k = options[self.pick(options.len())];
        match k {
            0 => {
                let ready: Vec<usize> = (0..self.clients.len())
                    .filter(|&i| !self.clients[i].rest.is_empty())
                    .collect();
                let i = ready[self.pick(ready.len())];
                let n = 1 + self.pick(60);
                let c = &mut self.clients[i];
                let piece: Vec<u8> = c.rest.drain(..n.min(c.rest.len())).collect();
                self.input(i, &piece);
            }
            1 => {
                let p = self.pick(self.b.len());
                self.store_ack(p);
            }
            2 => {
                let i = self.pick(self.forwards.len());
                let (from, f) = self.forwards.swap_remove(i);
                self.run_forward(from, f);
            }
            3 => {
                let i = self.pick(self.unsettled.len());
                let (p, c) = self.unsettled.swap_remove(i);
                self.b[p].settled(1, c);
                self.after(p);
            }
            _ => {
                let p = self.pick(self.b.len());
                self.drain(p);
            }
        }
        k != 4 || self.busy()
    }

    /// Run a forwarded publish on its topic's partition; answered at once, or (durable) once
    /// that partition's store has it.
    fn run_forward(&mut self, from: usize, f: nsqlab_core::Forward) {
        let to = f.to as usize;
        let r = self.b[to].publish(1, &f.topic, f.bodies, f.defer);
        let r = r.map(|_| ()).map_err(|e| e.to_string());
        if self.durable {
            self.stored_answers.push((to, from, f.client, r));
        } else {
            self.b[from].handle_forwarded(1, f.client, r);
            self.after(from);
        }
    }

    fn busy(&self) -> bool {
        self.clients.iter().any(|c| !c.rest.is_empty())
            || !self.forwards.is_empty()
            || !self.stored_answers.is_empty()
            || !self.unsettled.is_empty()
            || !self.leaving.is_empty()
    }

    /// Acknowledge partition `p`'s store writes; whether there were any (or answers waiting).
    fn store_ack(&mut self, p: usize) -> bool {
        let mut any = self.stored_answers.iter().any(|a| a.0 == p);
        while self.b[p].poll_store().is_some() {
            any = true;
        }
        let t = self.b[p].last_ticket();
        self.b[p].handle_stored(1, t, Ok(()));
        self.after(p);
        // Forwarded publishes run here are stored now: answer them.
        let (done, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.stored_answers)
            .into_iter()
            .partition(|a| a.0 == p);
        self.stored_answers = keep;
        for (_, from, client, r) in done {
            self.b[from].handle_forwarded(1, client, r);
            self.after(from);
        }
        any
    }

    /// Partition `p`'s outputs: transmits, then the clients that leave, then forwards;
    /// whether there were any.
    fn drain(&mut self, p: usize) -> bool {
        let mut any = false;
        while let Some(t) = self.b[p].poll_transmit() {
            any = true;
            match t {
                Transmit::Data { client, data } => {
                    let i = self.idx(client);
                    let c = &mut self.clients[i];
                    assert_eq!(c.at, p, "output for {client:?} from a partition it left");
                    c.inbox.extend_from_slice(&data);
                    let mut used = 0;
                    while let Ok(Some((f, n))) = decode_frame(&c.inbox[used..]) {
                        c.got.push(f);
                        used += n;
                    }
                    c.inbox.drain(..used);
                }
                Transmit::Close { client } => panic!("{client:?} closed"),
                Transmit::Upgrade { .. } => panic!("no upgrades here"),
                Transmit::WriteTimeout { .. } => {}
            }
        }
        self.after(p);
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.leaving)
            .into_iter()
            .partition(|(from, _)| *from == p);
        self.leaving = others;
        for (_, m) in mine {
            any = true;
            let (id, to) = (m.client, m.to as usize);
            let i = self.idx(id);
            assert_eq!(self.clients[i].at, p);
            self.clients[i].at = to;
            self.b[to].adopt(1, m);
            // What it sent while leaving reaches the new partition before the settle.
            let late = self.clients[i].late.take().unwrap();
            self.b[to].handle_bytes(1, id, &late);
            self.after(to);
            self.unsettled.push((to, id));
        }
        while let Some(f) = self.b[p].poll_forward() {
            any = true;
            self.forwards.push((p, f));
        }
        any
    }

    /// Everything left, until a whole round changes nothing.
    fn finish(&mut self) {
        for _ in 0..10_000 {
            let mut any = false;
            for p in 0..self.b.len() {
                any |= self.drain(p);
                if self.durable {
                    any |= self.store_ack(p);
                }
            }
            for (p, c) in std::mem::take(&mut self.unsettled) {
                any = true;
                self.b[p].settled(1, c);
                self.after(p);
            }
            for (from, f) in std::mem::take(&mut self.forwards) {
                any = true;
                self.run_forward(from, f);
            }
            if let Some(i) = self.clients.iter().position(|c| !c.rest.is_empty()) {
                any = true;
                let rest: Vec<u8> = self.clients[i].rest.drain(..).collect();
                self.input(i, &rest);
            }
            if !any && !self.busy() {
                return;
            }
        }
        panic!("did not settle");
    }
}

fn seeds() -> u64 {
    std::env::var("PARTITION_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000)
}

/// Random clients, random input pieces, and store acknowledgements, forwarded answers and
/// settles in random order: every client sees its answers in order and only messages of its
/// topic, each once; every published message is counted once, by its topic's partition; each
/// client is in exactly one partition.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn random_interleavings_keep_answers_in_order_and_lose_nothing() {
    let topics = ["ta", "tb", "tc", "td", "te"];
    for seed in 0..seeds() {
        let mut h = RandomHost::new(seed);
        let n = 1 + h.pick(6);
        for _ in 0..n {
            h.add_client(&topics);
        }
        while h.step() {}
        h.finish();
        for c in &h.clients {
            let responses: Vec<&Frame> = c
                .got
                .iter()
                .filter(|f| !matches!(f, Frame::Message(_)))
                .collect();
            let want: Vec<&Frame> = c.want.iter().collect();
            assert_eq!(responses, want, "seed {seed}, client {:?}", c.id);
            let bodies = bodies(&c.got);
            let mut unique = bodies.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), bodies.len(), "seed {seed}: a message twice");
            if let Some(t) = &c.sub {
                assert!(
                    bodies.iter().all(|b| b.starts_with(&format!("{t}/"))),
                    "seed {seed}: {bodies:?} for {t}"
                );
            } else {
                assert!(bodies.is_empty());
            }
            let homes: Vec<usize> = (0..h.b.len())
                .filter(|&p| h.b[p].client(c.id).is_some())
                .collect();
            assert_eq!(homes, [c.at], "seed {seed}: where is {:?}", c.id);
        }
        for (t, &n) in &h.published {
            let owner = partition_of(t, h.b.len() as u32) as usize;
            for (p, b) in h.b.iter().enumerate() {
                let count = b.topic(t).map_or(0, |x| x.message_count);
                if p == owner {
                    assert_eq!(count, n, "seed {seed}: {t} published");
                } else {
                    assert!(b.topic(t).is_none(), "seed {seed}: {t} in partition {p}");
                }
            }
        }
    }
}
