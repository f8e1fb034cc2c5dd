//! Arbitrary byte streams from several clients against two partitions wired as a server
//! wires them (clients move, publishes are forwarded), with store acknowledgements, failures,
//! timer jumps and settles in an order the input picks: no panic, each client in at most one
//! partition, output only from the partition a client is in.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nsqlab_core::{Broker, ClientId, Forward, Migration, Options, Transmit};
use std::collections::HashMap;

struct Host {
    b: [Broker; 2],
    now: u64,
    /// Where each live client's connection sends its input; `None` while it is leaving.
    at: HashMap<ClientId, Option<usize>>,
    late: HashMap<ClientId, Vec<u8>>,
    leaving: Vec<(usize, Migration)>,
    forwards: Vec<(usize, Forward)>,
    unsettled: Vec<(usize, ClientId)>,
    fail: [bool; 2],
    /// Connections that closed while their client was leaving.
    closed: std::collections::HashSet<ClientId>,
}

impl Host {
    fn after(&mut self, p: usize) {
        while let Some(m) = self.b[p].poll_migration() {
            assert_eq!(self.at.get(&m.client), Some(&Some(p)), "moved from where it is not");
            self.at.insert(m.client, None);
            self.leaving.push((p, m));
        }
    }

    fn input(&mut self, c: ClientId, bytes: &[u8]) {
        match self.at.get(&c) {
            Some(Some(p)) => {
                let p = *p;
                self.b[p].handle_bytes(self.now, c, bytes);
                self.after(p);
            }
            Some(None) => self.late.entry(c).or_default().extend_from_slice(bytes),
            None => {}
        }
    }

    fn drain(&mut self, p: usize) {
        while let Some(t) = self.b[p].poll_transmit() {
            let client = match t {
                Transmit::Data { client, .. }
                | Transmit::Upgrade { client, .. }
                | Transmit::WriteTimeout { client, .. } => client,
                Transmit::Close { client } => {
                    self.at.remove(&client);
                    client
                }
            };
            assert!(self.b[1 - p].client(client).is_none(), "a client in two partitions");
        }
        self.after(p);
        while let Some(f) = self.b[p].poll_forward() {
            self.forwards.push((p, f));
        }
    }

    fn hand_over(&mut self, i: usize) {
        if self.leaving.is_empty() {
            return;
        }
        let (from, m) = self.leaving.remove(i % self.leaving.len());
        // Its partition's transmits go out first.
        self.drain(from);
        let (c, to) = (m.client, m.to as usize);
        self.b[to].adopt(self.now, m);
        self.at.insert(c, Some(to));
        if let Some(late) = self.late.remove(&c) {
            self.b[to].handle_bytes(self.now, c, &late);
        }
        if self.closed.remove(&c) {
            self.b[to].disconnect(self.now, c);
            self.at.remove(&c);
        }
        self.after(to);
        self.unsettled.push((to, c));
    }

    fn store(&mut self, p: usize) {
        let mut wrote = false;
        while self.b[p].poll_store().is_some() {
            wrote = true;
        }
        if wrote {
            let r = if self.fail[p] { Err("disk full".to_string()) } else { Ok(()) };
            let t = self.b[p].last_ticket();
            self.b[p].handle_stored(self.now, t, r);
            self.after(p);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let durable = data.len() % 2 == 1;
    let b = [0, 1].map(|p| {
        let opts = Options {
            mem_queue_size: 3,
            max_msg_size: 256,
            max_body_size: 1024,
            durable,
            partition: p,
            partitions: 2,
            ..Options::default()
        };
        Broker::new(opts, data.len() as u64, 1)
    });
    let mut h = Host {
        b,
        now: 1,
        at: HashMap::new(),
        late: HashMap::new(),
        leaving: Vec::new(),
        forwards: Vec::new(),
        unsettled: Vec::new(),
        fail: [false; 2],
        closed: Default::default(),
    };
    let mut clients = Vec::new();
    for i in 0..3 {
        let c = h.b[i % 2].connect(1, "10.0.0.1:1");
        h.at.insert(c, Some(i % 2));
        clients.push(c);
    }
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        let n = (tail.first().copied().unwrap_or(0) as usize % 64).min(tail.len().saturating_sub(1));
        let chunk = tail.get(1..1 + n).unwrap_or(&[]);
        rest = tail.get(1 + n..).unwrap_or(&[]);
        let p = (op as usize >> 4) & 1;
        match op % 12 {
            0..=3 => h.input(clients[op as usize % 3], chunk),
            4 => h.drain(p),
            5 => h.hand_over(op as usize >> 4),
            6 => {
                if !h.unsettled.is_empty() {
                    let (q, c) = h.unsettled.remove((op as usize >> 4) % h.unsettled.len());
                    h.b[q].settled(h.now, c);
                    h.after(q);
                }
            }
            7 => {
                if !h.forwards.is_empty() {
                    let (from, f) = h.forwards.remove((op as usize >> 4) % h.forwards.len());
                    let to = f.to as usize;
                    let r = h.b[to].publish(h.now, &f.topic, f.bodies, f.defer);
                    h.after(to);
                    let r = if op & 0x40 != 0 { Err("disk full".into()) } else { r.map(|_| ()).map_err(|e| e.to_string()) };
                    h.b[from].handle_forwarded(h.now, f.client, r);
                    h.after(from);
                }
            }
            8 if durable => h.store(p),
            9 if durable => {
                h.fail[p] = !h.fail[p];
                if !h.fail[p] {
                    h.b[p].set_health(None);
                }
            }
            10 => {
                h.now += op as u64 * 10_000_000;
                for q in 0..2 {
                    h.b[q].handle_timeout(h.now);
                    h.after(q);
                }
            }
            _ => {
                let c = clients[op as usize % 3];
                match h.at.get(&c).copied() {
                    Some(Some(q)) => {
                        h.b[q].disconnect(h.now, c);
                        h.at.remove(&c);
                    }
                    Some(None) => {
                        h.closed.insert(c);
                    }
                    None => {}
                }
            }
        }
    }
    for c in &clients {
        let homes = (0..2).filter(|&q| h.b[q].client(*c).is_some()).count();
        assert!(homes <= 1, "{c:?} in {homes} partitions");
    }
});
