//! Arbitrary bytes from several connections to nsqlookupd, interleaved with HTTP-side calls
//! and time jumps: it must never panic, and every answer must be a whole V1 frame.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nsqlab_core::lookup::{Lookupd, LookupdOptions};

fuzz_target!(|data: &[u8]| {
    let mut l = Lookupd::new(LookupdOptions {
        broadcast_address: "h".into(),
        hostname: "h".into(),
        tcp_port: 4160,
        http_port: 4161,
        inactive_producer_timeout: 300_000_000_000,
        tombstone_lifetime: 45_000_000_000,
    });
    let mut peers: Vec<u64> = (0..3).map(|i| l.connect(format!("10.0.0.{i}:1"))).collect();
    let mut now = 0u64;
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        let n = (tail.first().copied().unwrap_or(0) as usize % 64).min(tail.len().saturating_sub(1));
        let chunk = tail.get(1..1 + n).unwrap_or(&[]);
        rest = tail.get(1 + n..).unwrap_or(&[]);
        let p = peers[op as usize % 3];
        let name = String::from_utf8_lossy(chunk).into_owned();
        match op % 8 {
            0..=3 => {
                l.handle_bytes(now, p, chunk);
                let (out, close) = l.take_output(p);
                let mut at = 0;
                while at < out.len() {
                    let size = u32::from_be_bytes(out[at..at + 4].try_into().unwrap()) as usize;
                    at += 4 + size;
                }
                assert_eq!(at, out.len(), "whole frames");
                if close {
                    l.disconnect(p);
                    peers[op as usize % 3] = l.connect(format!("10.0.1.{op}:2"));
                }
            }
            4 => now += op as u64 * 3_000_000_000,
            5 => {
                let _ = l.lookup(now, &name);
                let _ = l.nodes(now);
                let _ = l.debug();
                l.tombstone(now, &name, "h:4151");
            }
            6 => {
                l.create_channel(&name, "c");
                l.delete_channel(&name, "c");
                l.create_topic(&name);
                l.delete_topic(&name);
            }
            _ => l.disconnect(p),
        }
    }
});
