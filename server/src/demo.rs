//! `nsqlab demo`: three DPUBs through the core in virtual time, printed as events.

use nsqlab_core::protocol::Command;
use nsqlab_core::sim::Sim;
use nsqlab_core::time::{ms, MILLISECOND};
use nsqlab_core::Options;

/// Print a DPUB's life through the core, in virtual time.
pub fn run() {
    let opts = Options {
        heap_trace: true,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);
    let consumer = sim.connect();
    sim.send(
        consumer,
        &Command::Identify(br#"{"msg_timeout":1000}"#.to_vec()),
    );
    sim.send(
        consumer,
        &Command::Sub {
            topic: "demo".into(),
            channel: "c".into(),
        },
    );
    sim.send(consumer, &Command::Rdy(1));
    let producer = sim.connect();
    for (i, defer) in [300u64, 100, 200].into_iter().enumerate() {
        sim.send(
            producer,
            &Command::Dpub {
                topic: "demo".into(),
                defer_ms: defer,
                body: format!("message {i}").into_bytes().into(),
            },
        );
    }
    // The consumer never answers: each message times out after 1 s and comes back.
    sim.advance(ms(2500));
    for e in &sim.events {
        let line = serde_json::to_string(&e.kind).unwrap_or_default();
        println!("{:>8.1} ms  {line}", e.at as f64 / MILLISECOND as f64);
    }
}
