//! Arbitrary byte streams from several clients, interleaved with timer jumps and admin calls,
//! against one broker: it must never panic, and its counts must stay consistent.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nsqlab_core::sim::Sim;
use nsqlab_core::{Options, StatsFilter};

fuzz_target!(|data: &[u8]| {
    // Odd lengths run durable: store ops, held OKs, evicted bodies, failed writes, restarts.
    let durable = data.len() % 2 == 1;
    let opts = Options {
        mem_queue_size: 3,
        max_msg_size: 256,
        max_body_size: 1024,
        durable,
        evict_bodies: durable,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, data.len() as u64);
    let mut clients: Vec<_> = (0..3).map(|_| sim.connect()).collect();
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        let n = (tail.first().copied().unwrap_or(0) as usize % 64).min(tail.len().saturating_sub(1));
        let chunk = tail.get(1..1 + n).unwrap_or(&[]);
        rest = tail.get(1 + n..).unwrap_or(&[]);
        match op % 8 {
            0..=3 => sim.send_raw(clients[op as usize % 3], chunk),
            4 => sim.sleep((op as u64) * 10_000_000),
            5 => {
                let _ = sim.broker.publish(sim.now(), "t", vec![chunk.to_vec().into()], Some(op as u64 * 1_000_000));
                sim.flush();
            }
            6 => {
                let _ = sim.broker.empty_channel(sim.now(), "t", "c");
                let _ = sim.broker.pause_channel(sim.now(), "t", "c", op & 0x10 != 0);
                sim.flush();
            }
            _ if durable && op & 0x80 != 0 => {
                // A crash and a restart from what the store holds, or a store failure toggle.
                if op & 0x40 != 0 {
                    let seed = op as u64;
                    sim = sim.restart(seed);
                    clients = (0..3).map(|_| sim.connect()).collect();
                } else {
                    sim.store.fail = if sim.store.fail.is_some() { None } else { Some("disk full".into()) };
                    if sim.store.fail.is_none() {
                        sim.broker.set_health(None);
                    }
                }
            }
            _ => sim.disconnect(clients[op as usize % 3]),
        }
    }
    // Well-formed traffic on a fresh client still works afterwards.
    let c = sim.connect();
    sim.send_raw(c, b"SUB t c\nRDY 1\n");
    sim.sleep(3_600_000_000_000);
    let stats = sim.broker.stats(&StatsFilter { include_clients: true, ..Default::default() });
    for t in stats.topics.iter().flatten() {
        for ch in &t.channels {
            let held: u64 = ch.clients.iter().flatten().map(|c| c.in_flight_count).sum();
            assert!(held <= ch.in_flight_count, "clients hold more than the channel has in flight");
        }
    }
});
