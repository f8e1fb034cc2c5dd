//! Built for wasm32 by the test script to check that the core links without host imports:
//! a sans-IO core needs nothing from its environment.

use nsqlab_core::protocol::Command;
use nsqlab_core::sim::Sim;
use nsqlab_core::Options;

/// Run a tiny simulation; returns how many events it produced.
#[no_mangle]
pub extern "C" fn probe(seed: u64) -> u64 {
    let mut sim = Sim::new(Options::default(), seed);
    let c = sim.connect();
    sim.send(
        c,
        &Command::Sub {
            topic: "t".into(),
            channel: "c".into(),
        },
    );
    sim.send(c, &Command::Rdy(1));
    let p = sim.connect();
    sim.send(
        p,
        &Command::Dpub {
            topic: "t".into(),
            defer_ms: 5,
            body: b"x"[..].into(),
        },
    );
    sim.sleep(10_000_000);
    sim.events.len() as u64
}

fn main() {
    println!("{}", probe(1));
}
