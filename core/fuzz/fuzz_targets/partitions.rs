//! Arbitrary byte streams from several clients against two partitions, their messages
//! carried as a server's broker tasks carry them (each connection's input to the partition
//! it was last told it is in, each partition's messages to the other, each connection's
//! output, all in order) around the core's own routing (`Partition`), with store
//! acknowledgements, store failures, timer jumps and closes, served in an order the input
//! picks: no panic, each client in at most one partition, output only from the partition a
//! client is in.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nsqlab_core::partition::{ClientInput, Partition, PeerMsg, Route};
use nsqlab_core::{ClientId, Options, Output, StoreFailure, Transmit};
use std::collections::{HashMap, VecDeque};

type Part = Partition<Vec<u8>, ()>;

enum Out {
    Data,
    Moved(usize),
    Close,
}

struct Conn {
    target: usize,
    out: VecDeque<Out>,
    closed: bool,
}

struct Host {
    parts: [Part; 2],
    now: u64,
    inbox: [VecDeque<(ClientId, ClientInput<Vec<u8>>)>; 2],
    peers: [VecDeque<PeerMsg<Vec<u8>, ()>>; 2],
    conns: HashMap<ClientId, Conn>,
    fail: [bool; 2],
    /// A `Commit` not yet acknowledged, per partition.
    pending: [Option<u64>; 2],
}

impl Host {
    fn input(&mut self, c: ClientId, input: ClientInput<Vec<u8>>) {
        let conn = &self.conns[&c];
        if !conn.closed {
            self.inbox[conn.target].push_back((c, input));
        }
    }

    fn take(&mut self, p: usize, n: usize) {
        while let Some(m) = self.peers[p].pop_front() {
            self.parts[p].handle_peer(self.now, m);
        }
        for _ in 0..n {
            let Some((c, input)) = self.inbox[p].pop_front() else { break };
            self.parts[p].handle_client(self.now, c, input);
        }
    }

    /// Acknowledge (or fail) the last `Commit`; with none waiting, everything given so far.
    fn commit(&mut self, p: usize) {
        let r: Result<(), StoreFailure> = if self.fail[p] { Err("disk full".into()) } else { Ok(()) };
        let through = match self.pending[p].take() {
            Some(t) => {
                self.parts[p].broker_mut().handle_stored(self.now, t, r.clone());
                t
            }
            None => self.parts[p].broker().last_ticket(),
        };
        self.parts[p].handle_committed(through, r);
    }

    fn flush(&mut self, p: usize) {
        while let Some(o) = self.parts[p].poll_output() {
            let (client, out) = match o {
                Output::Store(_) | Output::Load(_) => continue,
                Output::Commit { through } => {
                    self.pending[p] = Some(through);
                    continue;
                }
                Output::Route(Route::Moved { client }) => (client, Out::Moved(p)),
                Output::Transmit(Transmit::Close { client }) => (client, Out::Close),
                Output::Transmit(Transmit::Data { client, .. } | Transmit::Upgrade { client, .. }) => {
                    (client, Out::Data)
                }
                Output::Transmit(Transmit::WriteTimeout { .. }) => continue,
                Output::Route(Route::Peer { to, msg }) => {
                    self.peers[to as usize].push_back(msg);
                    continue;
                }
                Output::Registry(_) | Output::Event(_) | Output::Auth(_) => continue,
            };
            assert!(self.parts[p].conn(client).is_some(), "output without a connection");
            assert!(self.parts[1 - p].broker().client(client).is_none(), "a client in two partitions");
            self.conns.get_mut(&client).unwrap().out.push_back(out);
        }
    }

    fn read(&mut self, c: ClientId) {
        let conn = self.conns.get_mut(&c).unwrap();
        match conn.out.pop_front() {
            Some(Out::Moved(to)) => {
                let from = std::mem::replace(&mut conn.target, to);
                if !conn.closed {
                    self.inbox[from].push_back((c, ClientInput::Drained));
                }
            }
            Some(Out::Close) => conn.closed = true,
            Some(Out::Data) | None => {}
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let durable = data.len() % 2 == 1;
    let parts = [0, 1].map(|p| {
        let opts = Options {
            mem_queue_size: 3,
            max_msg_size: 256,
            max_body_size: 1024,
            durable,
            partition: p,
            partitions: 2,
            ..Options::default()
        };
        Partition::new(opts, data.len() as u64, 1)
    });
    let mut h = Host {
        parts,
        now: 1,
        inbox: Default::default(),
        peers: Default::default(),
        conns: HashMap::new(),
        fail: [false; 2],
        pending: [None; 2],
    };
    let mut clients = Vec::new();
    for i in 0..3 {
        let c = h.parts[i % 2].connect(1, "10.0.0.1:1", ());
        h.conns.insert(c, Conn { target: i % 2, out: VecDeque::new(), closed: false });
        clients.push(c);
    }
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        let n = (tail.first().copied().unwrap_or(0) as usize % 64).min(tail.len().saturating_sub(1));
        let chunk = tail.get(1..1 + n).unwrap_or(&[]);
        rest = tail.get(1 + n..).unwrap_or(&[]);
        let p = (op as usize >> 4) & 1;
        let c = clients[op as usize % 3];
        match op % 12 {
            0..=3 => h.input(c, ClientInput::Bytes(chunk.to_vec())),
            4 => h.take(p, 1 + (op as usize >> 5)),
            5 => h.flush(p),
            6 => h.read(c),
            7 => h.commit(p),
            8 if durable => {
                h.fail[p] = !h.fail[p];
                if !h.fail[p] {
                    h.parts[p].broker_mut().set_health(None);
                }
            }
            9 => h.input(c, ClientInput::Eof),
            10 => {
                h.now += op as u64 * 10_000_000;
                for q in 0..2 {
                    h.parts[q].broker_mut().handle_timeout(h.now);
                }
            }
            _ => {
                h.input(c, ClientInput::Closed);
                h.conns.get_mut(&c).unwrap().closed = true;
            }
        }
    }
    for c in &clients {
        let homes = (0..2).filter(|&q| h.parts[q].broker().client(*c).is_some()).count();
        assert!(homes <= 1, "{c:?} in {homes} partitions");
    }
});
