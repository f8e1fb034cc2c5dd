//! Partitions (see `nsqlab_core::partition`), run by a small host that carries messages as the
//! server's broker tasks do — each connection's input to the partition it was last told it is
//! in, each partition's messages to the others, each connection's output, all in order —
//! around the core's own routing ([`Partition`]): clients move to the partition that owns
//! their topic, publishes of clients that stay are forwarded, and every client sees its
//! answers in the order it sent its commands — in set scenarios, and over random
//! interleavings of those queues (`PARTITION_SEEDS=N`, default 5 000).

use nsqlab_core::partition::{ClientInput, Partition, PeerMsg, Route};
use nsqlab_core::protocol::{decode_frame, Command, Frame, MAGIC_V2};
use nsqlab_core::stats::Stats;
use nsqlab_core::{partition_of, ClientId, Options, Output, StatsFilter, Ticket, Transmit};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{HashMap, VecDeque};

/// No connection handle: the host finds a connection by its client's ID.
type Part = Partition<Vec<u8>, ()>;
type Peer = PeerMsg<Vec<u8>, ()>;

/// What a connection reads from its output queue (the server's `Out`).
#[derive(Debug)]
enum Out {
    Data(Vec<u8>),
    /// Its client is now in this partition.
    Moved(usize),
    Close,
}

/// A connection: where it sends, and what it has been sent.
struct Conn {
    /// The partition it sends its input to.
    target: usize,
    out: VecDeque<Out>,
    wire: Vec<u8>,
    frames: Vec<Frame>,
    closed: bool,
    /// Told it moved, it has not yet told the partition it left ([`Net::hold_drained`]).
    undrained: Option<usize>,
}

/// Partitions and connections, with the queues between them.
struct Net {
    parts: Vec<Part>,
    /// Per partition: connections' input, in the order it was sent.
    inbox: Vec<VecDeque<(ClientId, ClientInput<Vec<u8>>)>>,
    /// Per partition: other partitions' messages, in the order they were sent.
    peers: Vec<VecDeque<Peer>>,
    conns: HashMap<ClientId, Conn>,
    now: u64,
    /// Acknowledge the store's writes as their `Commit` comes (else at [`Net::commit`]).
    auto_store: bool,
    /// Per partition: a `Commit` not yet acknowledged (its ticket).
    pending: Vec<Option<Ticket>>,
    /// The last flush saw a `Commit`.
    saw_commit: bool,
    /// Per partition: the last ticket its store acknowledged.
    acked: Vec<Ticket>,
    /// A connection told it moved waits for [`Net::settle`] before it says so to the
    /// partition it left.
    hold_drained: bool,
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

impl Net {
    fn new(n: u32, durable: bool, seed: u64) -> Net {
        let parts = (0..n)
            .map(|p| {
                let opts = Options {
                    partition: p,
                    partitions: n,
                    durable,
                    ..Options::default()
                };
                Partition::new(opts, seed ^ p as u64, 1)
            })
            .collect();
        Net {
            parts,
            inbox: (0..n).map(|_| VecDeque::new()).collect(),
            peers: (0..n).map(|_| VecDeque::new()).collect(),
            conns: HashMap::new(),
            now: 1,
            auto_store: true,
            pending: vec![None; n as usize],
            saw_commit: false,
            acked: vec![0; n as usize],
            hold_drained: false,
        }
    }

    fn connect(&mut self, p: usize) -> ClientId {
        let id = self.parts[p].connect(self.now, "10.0.0.1:5000", ());
        self.conns.insert(
            id,
            Conn {
                target: p,
                out: VecDeque::new(),
                wire: Vec::new(),
                frames: Vec::new(),
                closed: false,
                undrained: None,
            },
        );
        self.input(id, ClientInput::Bytes(MAGIC_V2.to_vec()));
        id
    }

    /// The connection sends `input` to the partition it believes its client is in.
    fn input(&mut self, c: ClientId, input: ClientInput<Vec<u8>>) {
        let target = self.conns[&c].target;
        self.inbox[target].push_back((c, input));
    }

    /// Partition `p` takes every message from the other partitions, then at most `n` inputs
    /// (each after any peer message that came meanwhile), as a broker task does.
    fn take(&mut self, p: usize, n: usize) -> bool {
        let now = self.now;
        let mut any = false;
        while let Some(m) = self.peers[p].pop_front() {
            self.parts[p].handle_peer(now, m);
            any = true;
        }
        for _ in 0..n {
            let Some((c, input)) = self.inbox[p].pop_front() else {
                break;
            };
            self.parts[p].handle_client(now, c, input);
            any = true;
        }
        any
    }

    /// Partition `p`'s store acknowledges its last `Commit`; with none waiting, what waited
    /// for what it acknowledged before is answered. Whether a `Commit` waited.
    fn commit(&mut self, p: usize) -> bool {
        match self.pending[p].take() {
            Some(through) => {
                self.ack(p, through);
                true
            }
            None => {
                let through = self.acked[p];
                self.parts[p].handle_committed(through, Ok(()));
                false
            }
        }
    }

    fn ack(&mut self, p: usize, through: Ticket) {
        self.acked[p] = through;
        let now = self.now;
        self.parts[p]
            .broker_mut()
            .handle_stored(now, through, Ok(()));
        self.parts[p].handle_committed(through, Ok(()));
    }

    /// Partition `p`'s output, carried to the connections and the other partitions.
    fn flush(&mut self, p: usize) -> bool {
        let mut any = false;
        self.saw_commit = false;
        while let Some(o) = self.parts[p].poll_output() {
            any = true;
            match o {
                Output::Store(_) | Output::Load(_) => {}
                Output::Commit { through } => {
                    self.saw_commit = true;
                    if self.auto_store {
                        self.ack(p, through);
                    } else {
                        self.pending[p] = Some(through);
                    }
                }
                Output::Route(Route::Moved { client }) => {
                    assert!(self.parts[p].conn(client).is_some());
                    self.conns
                        .get_mut(&client)
                        .unwrap()
                        .out
                        .push_back(Out::Moved(p));
                }
                Output::Transmit(t) => {
                    let (client, out) = match t {
                        Transmit::Data { client, data } => (client, Out::Data(data)),
                        Transmit::Close { client } => (client, Out::Close),
                        Transmit::Upgrade { .. } => panic!("no upgrades here"),
                        Transmit::WriteTimeout { .. } => continue,
                    };
                    assert!(
                        self.parts[p].conn(client).is_some(),
                        "output for {client:?} from partition {p}, which has no connection for it"
                    );
                    for (q, other) in self.parts.iter().enumerate() {
                        assert!(
                            q == p || other.broker().client(client).is_none(),
                            "{client:?} in partitions {p} and {q}"
                        );
                    }
                    self.conns.get_mut(&client).unwrap().out.push_back(out);
                }
                Output::Route(Route::Peer { to, msg }) => self.peers[to as usize].push_back(msg),
                Output::Registry(_) | Output::Event(_) => {}
                Output::Auth(_) => panic!("no auth here"),
            }
        }
        any
    }

    /// One wake-up of partition `p`, as a server's: take what waits, flush (with
    /// `auto_store`, committing as a `Commit` comes); a wake-up that committed nothing answers
    /// what waited for the store, and flushes that.
    fn wake(&mut self, p: usize) -> bool {
        let mut any = self.take(p, usize::MAX);
        if self.auto_store {
            if let Some(through) = self.pending[p].take() {
                self.ack(p, through);
                any = true;
            }
        }
        any |= self.flush(p);
        if self.auto_store && !self.saw_commit {
            let through = self.parts[p].broker().last_ticket();
            self.parts[p].handle_committed(through, Ok(()));
            any |= self.flush(p);
        }
        any
    }

    /// Connection `c` reads one thing from its output; whether there was one.
    fn read(&mut self, c: ClientId) -> bool {
        let conn = self.conns.get_mut(&c).unwrap();
        let Some(o) = conn.out.pop_front() else {
            return false;
        };
        match o {
            Out::Data(d) => {
                assert!(!conn.closed, "{c:?}: data after its close");
                conn.wire.extend_from_slice(&d);
                let mut used = 0;
                while let Ok(Some((f, n))) = decode_frame(&conn.wire[used..]) {
                    conn.frames.push(f);
                    used += n;
                }
                conn.wire.drain(..used);
            }
            Out::Close => conn.closed = true,
            Out::Moved(to) => {
                let from = std::mem::replace(&mut conn.target, to);
                if self.hold_drained {
                    conn.undrained = Some(from);
                } else {
                    self.inbox[from].push_back((c, ClientInput::Drained));
                }
            }
        }
        true
    }

    /// Connections told they moved say so to the partitions they left.
    fn settle(&mut self) {
        let mut ids: Vec<ClientId> = self.conns.keys().copied().collect();
        ids.sort();
        for c in ids {
            if let Some(from) = self.conns.get_mut(&c).unwrap().undrained.take() {
                self.inbox[from].push_back((c, ClientInput::Drained));
            }
        }
        self.drive();
    }

    /// Everything, until nothing moves.
    fn drive(&mut self) {
        for _ in 0..10_000 {
            let mut any = false;
            for p in 0..self.parts.len() {
                any |= self.wake(p);
            }
            let mut ids: Vec<ClientId> = self.conns.keys().copied().collect();
            ids.sort();
            for c in ids {
                while self.read(c) {
                    any = true;
                }
            }
            if !any {
                return;
            }
        }
        panic!("did not settle");
    }

    fn send(&mut self, c: ClientId, bytes: &[u8]) {
        self.input(c, ClientInput::Bytes(bytes.to_vec()));
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
        self.commit(p);
        self.drive();
    }

    /// The partition whose broker has client `c`.
    fn at(&self, c: ClientId) -> usize {
        let homes: Vec<usize> = (0..self.parts.len())
            .filter(|&p| self.parts[p].broker().client(c).is_some())
            .collect();
        assert_eq!(homes.len(), 1, "{c:?} in partitions {homes:?}");
        homes[0]
    }

    fn frames(&mut self, c: ClientId) -> Vec<Frame> {
        std::mem::take(&mut self.conns.get_mut(&c).unwrap().frames)
    }

    fn stats(&self) -> Stats {
        let f = StatsFilter {
            include_clients: true,
            ..StatsFilter::default()
        };
        Stats::merge(
            self.parts
                .iter()
                .map(|p| p.broker().stats_part(&f))
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
    let mut h = Net::new(2, false, 7);
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
    let mut h = Net::new(2, false, 7);
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
    assert_eq!(h.at(c), 1);
    let frames = h.frames(c);
    assert_eq!(frames[..3], [ok(), ok(), ok()], "{frames:?}");
    assert_eq!(bodies(&frames), ["to-b"]);
    assert_eq!(h.parts[0].broker().topic(&ta).unwrap().message_count, 1);
    assert!(h.parts[0].broker().topic(&tb).is_none());
    assert!(h.parts[1].broker().topic(&ta).is_none());

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
    let mut h = Net::new(2, false, 7);
    let c = h.connect(1);
    h.send_cmds(c, &[sub(&ta), Command::Rdy(10)]);
    assert_eq!(h.at(c), 0);
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
    assert_eq!(h.at(c), 0, "a subscriber stays with its channel");
    let frames = h.frames(c);
    assert_eq!(
        frames.iter().filter(|f| **f == ok()).count(),
        4,
        "{frames:?}"
    );
    assert_eq!(bodies(&frames), ["own"]);
    assert_eq!(h.parts[1].broker().topic(&tb).unwrap().message_count, 3);

    // A failing store there fails the publish here, as a local one would.
    h.parts[1].broker_mut().set_health(Some("disk full".into()));
    h.send_cmds(c, &[publish(&tb, "4"), Command::Nop]);
    let frames = h.frames(c);
    assert_eq!(
        frames,
        [Frame::Error(b"E_PUB_FAILED PUB failed disk full".to_vec())]
    );
    assert!(h.conns[&c].closed);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_client_with_held_output_moves_only_once_it_went_out() {
    let (ta, tb) = names();
    let mut h = Net::new(2, true, 7);
    h.auto_store = false;
    let c = h.connect(0);
    h.send_cmds(c, &[publish(&ta, "x"), sub(&tb)]);
    // The OK waits for the store, so the client waits here.
    assert_eq!(h.at(c), 0);
    assert!(h.frames(c).is_empty());
    h.store_ack(0);
    assert_eq!(h.at(c), 1);
    assert_eq!(h.frames(c), [ok(), ok()]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_moved_client_moves_again_only_once_settled() {
    let (ta, tb) = names();
    let mut h = Net::new(2, false, 7);
    h.hold_drained = true;
    let c = h.connect(0);
    h.send_cmds(c, &[publish(&tb, "x"), sub(&ta), Command::Rdy(1)]);
    // Moved to 1 for the publish; the SUB for partition 0's topic waits for the settle.
    assert_eq!(h.at(c), 1);
    assert_eq!(h.frames(c), [ok()]);
    h.settle();
    assert_eq!(h.at(c), 0);
    assert_eq!(h.frames(c), [ok()]);
    // It consumes there.
    let p = h.connect(1);
    h.send_cmds(p, &[publish(&ta, "m")]);
    assert_eq!(h.frames(p), [ok()]);
    assert_eq!(bodies(&h.frames(c)), ["m"]);
    // Closing the connection (once it said it left partition 1) forgets it where it is now.
    h.settle();
    h.input(c, ClientInput::Closed);
    h.drive();
    assert!(h.parts.iter().all(|p| p.broker().client(c).is_none()));
}

// ------------------------------------------------------------------ random interleavings

/// One client of the random model: what it will send, what it must get back.
struct Script {
    id: ClientId,
    /// Bytes not yet sent.
    rest: VecDeque<u8>,
    /// Responses it must see, in order (messages interleave freely).
    want: Vec<Frame>,
    /// The topic it subscribes to, if it does.
    sub: Option<String>,
}

/// The host's queues served in a random order: a connection sends a piece of its input or
/// reads one thing from its output; a partition takes its peers' messages and a few inputs,
/// commits, or flushes its output. Each queue stays in order, as the server's channels do.
struct RandomHost {
    net: Net,
    rng: Xoshiro256PlusPlus,
    scripts: Vec<Script>,
    published: HashMap<String, u64>,
}

impl RandomHost {
    fn new(seed: u64) -> RandomHost {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let n = 2 + (rng.next_u32() % 2);
        let durable = rng.next_u32() % 2 == 0;
        let mut net = Net::new(n, durable, seed);
        net.auto_store = false;
        RandomHost {
            net,
            rng,
            scripts: Vec::new(),
            published: HashMap::new(),
        }
    }

    fn pick(&mut self, n: usize) -> usize {
        (self.rng.next_u32() as usize) % n
    }

    fn add_client(&mut self, topics: &[&str]) {
        let at = self.pick(self.net.parts.len());
        let id = self.net.connect(at);
        let mut bytes = Vec::new();
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
        self.scripts.push(Script {
            id,
            rest: bytes.into(),
            want,
            sub: sub_topic,
        });
    }

    /// One random step; false when nothing was left to do.
    fn step(&mut self) -> bool {
        let parts = self.net.parts.len();
        match self.pick(6) {
            0 => {
                let ready: Vec<usize> = (0..self.scripts.len())
                    .filter(|&i| !self.scripts[i].rest.is_empty())
                    .collect();
                if ready.is_empty() {
                    return self.busy();
                }
                let i = ready[self.pick(ready.len())];
                let n = 1 + self.pick(60);
                let s = &mut self.scripts[i];
                let piece: Vec<u8> = s.rest.drain(..n.min(s.rest.len())).collect();
                let id = s.id;
                self.net.input(id, ClientInput::Bytes(piece));
            }
            1 => {
                let i = self.pick(self.scripts.len());
                let id = self.scripts[i].id;
                self.net.read(id);
            }
            2 => {
                let p = self.pick(parts);
                let n = 1 + self.pick(3);
                self.net.take(p, n);
            }
            3 => {
                let p = self.pick(parts);
                self.net.commit(p);
            }
            _ => {
                let p = self.pick(parts);
                self.net.flush(p);
            }
        }
        self.busy()
    }

    fn busy(&self) -> bool {
        self.scripts.iter().any(|s| !s.rest.is_empty())
            || self.net.inbox.iter().any(|q| !q.is_empty())
            || self.net.peers.iter().any(|q| !q.is_empty())
            || self.net.conns.values().any(|c| !c.out.is_empty())
    }

    /// Everything left: the rest of each client's input, then every queue until quiet.
    fn finish(&mut self) {
        for i in 0..self.scripts.len() {
            let rest: Vec<u8> = self.scripts[i].rest.drain(..).collect();
            if !rest.is_empty() {
                let id = self.scripts[i].id;
                self.net.input(id, ClientInput::Bytes(rest));
            }
        }
        self.net.auto_store = true;
        self.net.drive();
    }
}

fn seeds() -> u64 {
    std::env::var("PARTITION_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000)
}

/// Random clients, random input pieces, and every queue between connections and partitions
/// served in a random order: every client sees its answers in order and only messages of its
/// topic, each once; every published message is counted once, by its topic's partition; each
/// client is in exactly one partition, the one its connection sends to.
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
        for s in &h.scripts {
            let c = &h.net.conns[&s.id];
            assert!(!c.closed, "seed {seed}: {:?} closed", s.id);
            let responses: Vec<&Frame> = c
                .frames
                .iter()
                .filter(|f| !matches!(f, Frame::Message(_)))
                .collect();
            let want: Vec<&Frame> = s.want.iter().collect();
            assert_eq!(responses, want, "seed {seed}, client {:?}", s.id);
            let bodies = bodies(&c.frames);
            let mut unique = bodies.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), bodies.len(), "seed {seed}: a message twice");
            if let Some(t) = &s.sub {
                assert!(
                    bodies.iter().all(|b| b.starts_with(&format!("{t}/"))),
                    "seed {seed}: {bodies:?} for {t}"
                );
            } else {
                assert!(bodies.is_empty());
            }
            assert_eq!(h.net.at(s.id), c.target, "seed {seed}: where is {:?}", s.id);
        }
        let n = h.net.parts.len();
        for (t, &count) in &h.published {
            let owner = partition_of(t, n as u32) as usize;
            for (p, part) in h.net.parts.iter().enumerate() {
                let got = part.broker().topic(t).map_or(0, |x| x.message_count);
                if p == owner {
                    assert_eq!(got, count, "seed {seed}: {t} published");
                } else {
                    assert!(
                        part.broker().topic(t).is_none(),
                        "seed {seed}: {t} in partition {p}"
                    );
                }
            }
        }
    }
}
