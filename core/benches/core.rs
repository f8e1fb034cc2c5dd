//! Throughput of the core alone (no sockets): `cargo bench -p nsqlab-core --bench core`.
//!
//! - `publish_deliver_fin`: a producer's PUB bytes in (one PUB per message, or MPUB batches
//!   of 200 as NSQ's bench_writer sends), message frames out to one consumer (RDY 2500), FIN
//!   bytes back in — the whole per-message path of a server, minus I/O.
//! - `deferred_heap`: push one and pop one deferred message with 1 000 000 pending.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use nsqlab_core::message::{Message, MessageId};
use nsqlab_core::pqueue::PQueue;
use nsqlab_core::protocol::Command;
use nsqlab_core::{Body, Broker, Options, Output, Transmit};
use std::hint::black_box;

const BATCH: usize = 1000;

fn publish_deliver_fin(c: &mut Criterion) {
    for (name, events, mpub) in [
        ("events_off", false, false),
        ("events_on", true, false),
        ("mpub200/events_off", false, true),
    ] {
        let opts = Options {
            events,
            mem_queue_size: 1_000_000,
            ..Options::default()
        };
        let mut b = Broker::new(opts, 1, 1);
        let cons = b.connect(1, "c");
        b.handle_bytes(1, cons, b"  V2SUB t c\nRDY 2500\n");
        let prod = b.connect(1, "p");
        b.handle_bytes(1, prod, b"  V2");
        while b.poll_output().is_some() {}
        let body: Body = vec![b'x'; 200].into();
        let mut pubs = Vec::new();
        if mpub {
            for _ in 0..BATCH / 200 {
                Command::Mpub {
                    topic: "t".into(),
                    bodies: (0..200).map(|_| body.clone()).collect(),
                }
                .encode(&mut pubs);
            }
        } else {
            for _ in 0..BATCH {
                Command::Pub {
                    topic: "t".into(),
                    body: body.clone(),
                }
                .encode(&mut pubs);
            }
        }
        let mut now = 2u64;
        let mut fins = Vec::with_capacity(BATCH * 21);
        let mut g = c.benchmark_group("publish_deliver_fin");
        g.throughput(Throughput::Elements(BATCH as u64));
        g.bench_function(format!("200B/{name}"), |bench| {
            bench.iter(|| {
                now += 1000;
                b.handle_bytes(now, prod, &pubs);
                fins.clear();
                let mut delivered = 0;
                while let Some(o) = b.poll_output() {
                    if let Output::Transmit(Transmit::Data { client, data }) = o {
                        if client == cons {
                            // Walk the message frames and FIN each ID.
                            let mut at = 0;
                            while at + 8 <= data.len() {
                                let size = u32::from_be_bytes(data[at..at + 4].try_into().unwrap())
                                    as usize;
                                fins.extend_from_slice(b"FIN ");
                                fins.extend_from_slice(&data[at + 18..at + 34]);
                                fins.push(b'\n');
                                delivered += 1;
                                at += 4 + size;
                            }
                        }
                    }
                }
                assert_eq!(delivered, BATCH);
                b.handle_bytes(now, cons, &fins);
                while b.poll_output().is_some() {}
            })
        });
        g.finish();
    }
}

fn deferred_heap(c: &mut Criterion) {
    let body: Body = vec![b'x'; 100].into();
    let mut q: PQueue<Message> = PQueue::plain();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..1_000_000u64 {
        q.push(
            next() % 3_600_000_000_000,
            Message::new(MessageId(i), 0, body.clone()),
        );
    }
    let mut id = 1_000_000u64;
    let mut g = c.benchmark_group("deferred_heap");
    g.throughput(Throughput::Elements(1));
    g.bench_function("push_pop/1M_pending", |bench| {
        bench.iter_batched(
            || {
                id += 1;
                (
                    next() % 3_600_000_000_000,
                    Message::new(MessageId(id), 0, body.clone()),
                )
            },
            |(key, m)| {
                q.push(key, m);
                black_box(q.pop());
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
    let per = q.memory_bytes() as f64 / q.len() as f64;
    println!("deferred heap: {} pending, {per:.1} bytes of heap storage per message (entry size {} bytes)", q.len(), std::mem::size_of::<nsqlab_core::pqueue::Entry<Message>>());
}

criterion_group!(benches, publish_deliver_fin, deferred_heap);
criterion_main!(benches);
