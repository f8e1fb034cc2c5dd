//! The durable-storage hand-off: acknowledgements wait for the store, failures become nsqd's
//! errors, and a restart rebuilt from the ops owes exactly what the crashed broker owed.

use nsqlab_core::protocol::{Command, Frame};
use nsqlab_core::sim::Sim;
use nsqlab_core::time::{ms, Time, SECOND};
use nsqlab_core::{ClientId, MessageId, Options, StatsFilter};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, BTreeSet};

fn durable() -> Options {
    Options {
        durable: true,
        evict_bodies: true,
        ..Options::default()
    }
}

fn sub(sim: &mut Sim, topic: &str, channel: &str, rdy: i64) -> ClientId {
    let c = sim.connect();
    sim.send(
        c,
        &Command::Sub {
            topic: topic.into(),
            channel: channel.into(),
        },
    );
    assert_eq!(sim.frames(c), vec![Frame::Response(b"OK".to_vec())]);
    if rdy > 0 {
        sim.send(c, &Command::Rdy(rdy));
    }
    c
}

fn pub_cmd(topic: &str, body: &str) -> Command {
    Command::Pub {
        topic: topic.into(),
        body: body.as_bytes().into(),
    }
}

fn bodies(sim: &mut Sim, c: ClientId) -> Vec<String> {
    sim.messages(c)
        .iter()
        .map(|m| String::from_utf8_lossy(&m.body).into_owned())
        .collect()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn ok_waits_for_the_store_and_keeps_its_place() {
    let mut sim = Sim::new(durable(), 1);
    let p = sim.connect();
    sim.store.hold = true;
    sim.send(p, &pub_cmd("t", "a"));
    sim.send(p, &Command::Nop);
    sim.send(p, &Command::Fin(MessageId(1).to_hex()));
    let early = sim.frames(p);
    assert!(
        early.is_empty(),
        "nothing before the store has it: {early:?}"
    );
    assert!(!sim.is_closed(p), "the close waits behind the OK");
    sim.store_ack();
    let frames = sim.frames(p);
    assert_eq!(frames[0], Frame::Response(b"OK".to_vec()));
    // FIN before SUB is nsqd's fatal E_INVALID: it and the close come after the OK.
    assert!(
        matches!(&frames[1], Frame::Error(e) if e.starts_with(b"E_INVALID")),
        "{frames:?}"
    );
    assert!(sim.is_closed(p));
    // Without durability nothing waits.
    let mut plain = Sim::new(Options::default(), 1);
    let p = plain.connect();
    plain.store.hold = true;
    plain.send(p, &pub_cmd("t", "a"));
    assert_eq!(plain.frames(p), vec![Frame::Response(b"OK".to_vec())]);
}

/// A publisher that sends again before its last publish is stored (pipelining, as go-nsq's
/// `PublishAsync`) gets each `OK` once its own publish is stored: a store that is always a
/// publish behind must not hold every `OK` back.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn each_ok_waits_for_its_own_publish_only() {
    let ok = || Frame::Response(b"OK".to_vec());
    let mut sim = Sim::new(durable(), 1);
    let p = sim.connect();
    sim.store.hold = true;
    let mut tickets = Vec::new();
    for body in ["a", "b", "c"] {
        sim.send(p, &pub_cmd("t", body));
        tickets.push(sim.broker.last_ticket());
    }
    assert!(sim.frames(p).is_empty());
    let now = sim.now();
    sim.broker.handle_stored(now, tickets[0], Ok(()));
    sim.flush();
    assert_eq!(sim.frames(p), vec![ok()], "a's OK, not b's or c's");
    // Another publish arrives while b and c wait: the store stays a publish behind.
    sim.send(p, &pub_cmd("t", "d"));
    tickets.push(sim.broker.last_ticket());
    sim.broker.handle_stored(now, tickets[2], Ok(()));
    sim.flush();
    assert_eq!(sim.frames(p), vec![ok(), ok()], "b's and c's");
    sim.store_ack();
    assert_eq!(sim.frames(p), vec![ok()], "d's");
    // A consumer sees the messages in order.
    let c = sub(&mut sim, "t", "c", 10);
    assert_eq!(bodies(&mut sim, c), ["a", "b", "c", "d"]);

    // A failed write fails the publisher whose first waiting publish it had; what was
    // stored before it still went out.
    let mut sim = Sim::new(durable(), 1);
    let p = sim.connect();
    sim.store.hold = true;
    sim.send(p, &pub_cmd("t", "a"));
    let a = sim.broker.last_ticket();
    sim.send(p, &pub_cmd("t", "b"));
    sim.send(p, &pub_cmd("t", "c"));
    let now = sim.now();
    sim.broker.handle_stored(now, a, Ok(()));
    sim.flush();
    assert_eq!(sim.frames(p), vec![ok()]);
    sim.store.fail = Some("disk full".into());
    let b = a + 1;
    sim.broker
        .handle_stored(now, b, Err(String::from("disk full").into()));
    sim.flush();
    assert_eq!(
        sim.frames(p),
        vec![Frame::Error(b"E_PUB_FAILED PUB failed disk full".to_vec())]
    );
    assert!(sim.is_closed(p));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_failed_write_is_nsqds_fatal_put_error_and_makes_the_broker_unhealthy() {
    for (cmd, code) in [
        (pub_cmd("t", "a"), "E_PUB_FAILED PUB failed disk full"),
        (
            Command::Mpub {
                topic: "t".into(),
                bodies: vec![b"a"[..].into(), b"b"[..].into()],
            },
            "E_MPUB_FAILED MPUB failed disk full",
        ),
        (
            Command::Dpub {
                topic: "t".into(),
                defer_ms: 10,
                body: b"a"[..].into(),
            },
            "E_DPUB_FAILED DPUB failed disk full",
        ),
    ] {
        let mut sim = Sim::new(durable(), 1);
        let p = sim.connect();
        sim.store.fail = Some("disk full".into());
        sim.send(p, &cmd);
        assert_eq!(sim.frames(p), vec![Frame::Error(code.as_bytes().to_vec())]);
        assert!(sim.is_closed(p));
        assert_eq!(
            sim.broker.health().map(|h| h.to_string()).as_deref(),
            Some("disk full")
        );
        // Unhealthy: the next publisher fails at once, and HTTP publishing too.
        let q = sim.connect();
        sim.send(q, &pub_cmd("t", "b"));
        assert_eq!(
            sim.frames(q),
            vec![Frame::Error(b"E_PUB_FAILED PUB failed disk full".to_vec())]
        );
        let now = sim.now();
        assert_eq!(
            sim.broker.publish(now, "t", vec![b"x"[..].into()], None),
            Err(nsqlab_core::AdminError::Exiting)
        );
        // Healthy again once the host says so.
        sim.store.fail = None;
        sim.broker.set_health(None);
        let r = sim.connect();
        sim.send(r, &pub_cmd("t", "c"));
        assert_eq!(sim.frames(r), vec![Frame::Response(b"OK".to_vec())]);
    }
}

/// A message goes to consumers only once the store has it; one the store failed to write is
/// taken back: never delivered (its publisher was told E_PUB_FAILED and publishes it again),
/// whether it was queued, deferred or held by a topic without channels, and whatever was
/// published before it still goes.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_message_goes_out_once_stored_and_a_refused_one_never() {
    for refused in [
        pub_cmd("t", "refused"),
        Command::Mpub {
            topic: "t".into(),
            bodies: vec![b"refused"[..].into(), b"refused too"[..].into()],
        },
        Command::Dpub {
            topic: "t".into(),
            defer_ms: 10,
            body: b"refused"[..].into(),
        },
    ] {
        for channel_first in [true, false] {
            let mut sim = Sim::new(durable(), 1);
            let c = channel_first.then(|| sub(&mut sim, "t", "c", 10));
            let p = sim.connect();
            sim.store.hold = true;
            sim.send(p, &pub_cmd("t", "stored"));
            if let Some(c) = c {
                assert!(bodies(&mut sim, c).is_empty(), "sent before it was stored");
            }
            sim.store_ack();
            assert_eq!(sim.frames(p), vec![Frame::Response(b"OK".to_vec())]);
            let c = c.unwrap_or_else(|| sub(&mut sim, "t", "c", 10));
            assert_eq!(bodies(&mut sim, c), ["stored"]);
            // The next write fails: nothing of it goes out, now or later.
            sim.send(p, &refused);
            sim.store.fail = Some("disk full".into());
            sim.store_ack();
            assert!(sim.is_closed(p));
            sim.sleep(SECOND);
            assert!(
                bodies(&mut sim, c).is_empty(),
                "{refused:?}: refused, then delivered"
            );
            let stats = sim.broker.stats(&StatsFilter::default());
            let t = &stats.topics.as_ref().expect("topics")[0];
            assert_eq!((t.message_count, t.depth), (1, 0), "{refused:?}");
            let ch = &t.channels[0];
            assert_eq!(
                (ch.depth, ch.deferred_count, ch.in_flight_count),
                (0, 0, 1),
                "{refused:?}"
            );
            // Storage back: publishing and delivery go on.
            sim.store.fail = None;
            sim.store.hold = false;
            sim.broker.set_health(None);
            let q = sim.connect();
            sim.send(q, &pub_cmd("t", "later"));
            assert_eq!(sim.frames(q), vec![Frame::Response(b"OK".to_vec())]);
            assert_eq!(bodies(&mut sim, c), ["later"]);
        }
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn restart_delivers_what_was_not_finished_and_deferred_on_time() {
    let mut sim = Sim::new(durable(), 1);
    let c = sub(&mut sim, "t", "c", 10);
    let p = sim.connect();
    for b in ["a", "b", "c"] {
        sim.send(p, &pub_cmd("t", b));
    }
    sim.send(
        p,
        &Command::Dpub {
            topic: "t".into(),
            defer_ms: 5000,
            body: b"later"[..].into(),
        },
    );
    let got = sim.messages(c);
    assert_eq!(got.len(), 3);
    sim.send(c, &Command::Fin(got[0].id.to_hex()));
    sim.sleep(ms(1000));

    let mut after = sim.restart(2);
    let c = sub(&mut after, "t", "c", 10);
    // b and c were in flight: delivered again; a was finished: never again.
    assert_eq!(bodies(&mut after, c), vec!["b", "c"]);
    after.advance(ms(4999));
    assert!(after.messages(c).is_empty(), "not before its due time");
    // Its body waited in the store, not in memory.
    let ch = after.broker.channel("t", "c").unwrap();
    assert!(ch.deferred.entries()[0].item.is_evicted());
    after.advance(ms(5000));
    assert_eq!(bodies(&mut after, c), vec!["later"]);
    // New IDs stay above the restored ones.
    let p = after.connect();
    after.send(p, &pub_cmd("t", "new"));
    let m = after.messages(c);
    assert!(m[0].id > got[2].id);
}

/// A consumer's batch of FINs (one read) is one op for the store, naming its channel once,
/// and a restart honours every FIN in it; FINs of two channels stay apart.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_batch_of_fins_is_one_op_and_a_restart_honours_each() {
    let mut sim = Sim::new(durable(), 1);
    let c = sub(&mut sim, "t", "c", 10);
    let d = sub(&mut sim, "t", "d", 10);
    let p = sim.connect();
    for b in ["a", "b", "c", "d", "e"] {
        sim.send(p, &pub_cmd("t", b));
    }
    let (got_c, got_d) = (sim.messages(c), sim.messages(d));
    assert_eq!((got_c.len(), got_d.len()), (5, 5));
    let fins = |ms: &[nsqlab_core::Message]| -> Vec<u8> {
        ms.iter()
            .flat_map(|m| Command::Fin(m.id.to_hex()).to_bytes())
            .collect()
    };
    let before = sim.store.ops;
    // Four of c's in one read: one op.
    sim.send_raw(c, &fins(&got_c[..4]));
    assert_eq!(sim.store.ops, before + 1);
    // d's five in one read, then c's last: two more.
    sim.send_raw(d, &fins(&got_d));
    sim.send_raw(c, &fins(&got_c[4..]));
    assert_eq!(sim.store.ops, before + 3);

    let mut after = sim.restart(2);
    let c = sub(&mut after, "t", "c", 10);
    let d = sub(&mut after, "t", "d", 10);
    after.sleep(ms(10));
    assert!(
        after.messages(c).is_empty(),
        "every FIN of c's batches held"
    );
    assert!(after.messages(d).is_empty(), "every FIN of d's batch held");
    assert_eq!(after.broker.channel("t", "c").unwrap().depth(), 0);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn restart_keeps_pauses_deletions_and_drops_ephemeral_channels() {
    let mut sim = Sim::new(durable(), 1);
    let now = sim.now();
    sim.broker.create_channel(now, "paused", "c").unwrap();
    sim.broker.pause_topic(now, "paused", true).unwrap();
    sim.broker.create_channel(now, "t", "pc").unwrap();
    sim.broker.pause_channel(now, "t", "pc", true).unwrap();
    sim.broker.create_channel(now, "gone", "c").unwrap();
    sim.broker.delete_topic(now, "gone").unwrap();
    let _e = sub(&mut sim, "t", "e#ephemeral", 0);
    sim.broker
        .publish(now, "paused", vec![b"held"[..].into()], None)
        .unwrap();
    sim.flush();

    let mut after = sim.restart(2);
    assert!(after.broker.topic("paused").unwrap().paused);
    assert_eq!(after.broker.topic("paused").unwrap().depth(), 1);
    assert!(after.broker.channel("t", "pc").unwrap().paused);
    assert!(after.broker.topic("gone").is_none());
    assert!(after.broker.channel("t", "e#ephemeral").is_none());
    let now = after.now();
    after.broker.pause_topic(now, "paused", false).unwrap();
    after.flush();
    assert_eq!(after.broker.channel("paused", "c").unwrap().depth(), 1);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn held_messages_go_to_the_first_channel_after_a_restart() {
    let mut sim = Sim::new(durable(), 1);
    let p = sim.connect();
    sim.send(p, &pub_cmd("t", "early"));
    let mut after = sim.restart(2);
    let c = sub(&mut after, "t", "c", 10);
    assert_eq!(bodies(&mut after, c), vec!["early"]);
    // And once dispatched, a second restart does not give them to a newer channel.
    after.sleep(SECOND);
    let mut again = after.restart(3);
    let d = sub(&mut again, "t", "d", 10);
    assert!(again.messages(d).is_empty());
    let c = sub(&mut again, "t", "c", 10);
    assert_eq!(bodies(&mut again, c), vec!["early"]);
}

/// What a broker owes, as (topic, channel or "" for held, id) → due time if deferred.
fn owed(sim: &Sim) -> BTreeMap<(String, String, MessageId), Option<Time>> {
    let mut out = BTreeMap::new();
    for t in sim.broker.topics() {
        if t.ephemeral {
            continue;
        }
        for id in t.queue.ids() {
            let due = t.held_due.get(&id).copied();
            out.insert((t.name.to_string(), String::new(), id), due);
        }
        for ch in t.channels.values() {
            let c = sim.broker.channel_by_id(*ch).unwrap();
            if c.ephemeral {
                continue;
            }
            for id in c.queue.ids().chain(c.loading.iter().map(|m| m.id)) {
                out.insert((t.name.to_string(), c.name.to_string(), id), None);
            }
            for e in c.deferred.entries() {
                out.insert(
                    (t.name.to_string(), c.name.to_string(), e.item.id),
                    Some(e.key),
                );
            }
            for e in c.in_flight.iter() {
                out.insert(
                    (t.name.to_string(), c.name.to_string(), e.item.msg.id),
                    None,
                );
            }
        }
    }
    out
}

/// Random traffic and admin calls, a crash at a random moment: the rebuilt broker owes the
/// same copies, and deferred ones no earlier.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_restart_owes_exactly_what_the_crashed_broker_owed() {
    let seeds: u64 = option_env!("STORE_SEEDS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    for seed in 0..seeds {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        // Half the runs with a tiny memory queue: most bodies wait in the store.
        let opts = Options {
            mem_queue_size: if seed % 2 == 0 { 10_000 } else { 2 },
            ..durable()
        };
        let mut sim = Sim::new(opts, seed);
        let topics = ["a", "b", "c#ephemeral"];
        let channels = ["x", "y", "z#ephemeral"];
        let p = sim.connect();
        let mut consumers: Vec<ClientId> = Vec::new();
        let steps = 20 + rng.next_u64() % 80;
        for _ in 0..steps {
            let t = topics[(rng.next_u64() % 3) as usize];
            let ch = channels[(rng.next_u64() % 3) as usize];
            let now = sim.now();
            match rng.next_u64() % 16 {
                0..=3 => sim.send(p, &pub_cmd(t, "m")),
                4 => sim.send(
                    p,
                    &Command::Mpub {
                        topic: t.into(),
                        bodies: vec![b"1"[..].into(), b"2"[..].into()],
                    },
                ),
                5 => sim.send(
                    p,
                    &Command::Dpub {
                        topic: t.into(),
                        defer_ms: rng.next_u64() % 3000,
                        body: b"d"[..].into(),
                    },
                ),
                6 => consumers.push(sub(&mut sim, t, ch, (rng.next_u64() % 3) as i64)),
                7 => {
                    let _ = sim.broker.delete_channel(now, t, ch);
                }
                8 => {
                    let _ = sim.broker.empty_channel(now, t, ch);
                }
                9 => {
                    let on = rng.next_u64() % 2 == 0;
                    let _ = sim.broker.pause_topic(now, t, on);
                }
                10 => {
                    let _ = sim.broker.empty_topic(now, t);
                }
                11 => {
                    if rng.next_u64() % 4 == 0 {
                        let _ = sim.broker.delete_topic(now, t);
                    }
                }
                12 | 13 => {
                    // A consumer answers one of its messages.
                    if let Some(&c) = consumers.get((rng.next_u64() % 8) as usize) {
                        if let Some(m) = sim.messages(c).first() {
                            let cmd = if rng.next_u64() % 2 == 0 {
                                Command::Fin(m.id.to_hex())
                            } else {
                                Command::Req {
                                    id: m.id.to_hex(),
                                    timeout_ms: rng.next_u64() % 2000,
                                }
                            };
                            sim.send(c, &cmd);
                        }
                    }
                }
                14 => {
                    let _ = sim.broker.create_channel(now, t, ch);
                }
                // Bodies read on another thread: held for a while, then answered (or lost
                // in the crash).
                15 if rng.next_u64() % 2 == 0 => {
                    sim.store.hold_loads = !sim.store.hold_loads;
                    if !sim.store.hold_loads {
                        sim.answer_loads();
                    }
                }
                _ => sim.sleep(ms(rng.next_u64() % 1500)),
            }
            sim.flush();
        }
        let before = owed(&sim);
        let after_sim = sim.restart(seed + 1);
        let after = owed(&after_sim);
        let keys_b: BTreeSet<_> = before.keys().collect();
        let keys_a: BTreeSet<_> = after.keys().collect();
        assert_eq!(keys_b, keys_a, "seed {seed}: owed copies differ");
        for (k, due) in &before {
            if let Some(d) = due {
                let a = after[k];
                assert!(
                    a.is_some_and(|a| a >= *d) || *d <= sim.now(),
                    "seed {seed}: {k:?} due {d} became {a:?}"
                );
            }
        }
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn deferred_bodies_wait_in_the_store_and_come_back_when_due() {
    let mut sim = Sim::new(durable(), 1);
    let c = sub(&mut sim, "t", "c", 10);
    let p = sim.connect();
    sim.send(
        p,
        &Command::Dpub {
            topic: "t".into(),
            defer_ms: 100,
            body: b"dpub body"[..].into(),
        },
    );
    let ch = sim.broker.channel("t", "c").unwrap();
    assert!(ch.deferred.entries()[0].item.is_evicted());
    sim.advance(ms(100));
    let got = sim.messages(c);
    assert_eq!(&got[0].body[..], b"dpub body");
    // REQ with a delay evicts it again; it comes back whole, attempts counted.
    sim.send(
        c,
        &Command::Req {
            id: got[0].id.to_hex(),
            timeout_ms: 50,
        },
    );
    assert!(sim.broker.channel("t", "c").unwrap().deferred.entries()[0]
        .item
        .is_evicted());
    sim.advance(ms(150));
    let again = sim.messages(c);
    assert_eq!(&again[0].body[..], b"dpub body");
    assert_eq!(again[0].attempts, 2);
    // Without the store's copy the message is dropped, never sent empty.
    sim.send(
        p,
        &Command::Dpub {
            topic: "t".into(),
            defer_ms: 10,
            body: b"x"[..].into(),
        },
    );
    sim.store.replay = nsqlab_core::Replay::new();
    sim.advance(ms(200));
    assert!(sim.messages(c).is_empty());
}

/// A durable broker with `--mem-queue-size=mem` and channel `t/c` holding `m0`..`m<n-1>`,
/// published by the client returned.
fn backlog(mem: usize, n: usize) -> (Sim, ClientId) {
    let mut sim = Sim::new(
        Options {
            mem_queue_size: mem,
            ..durable()
        },
        1,
    );
    let now = sim.now();
    sim.broker.create_channel(now, "t", "c").unwrap();
    let p = sim.connect();
    for i in 0..n {
        sim.send(p, &pub_cmd("t", &format!("m{i}")));
    }
    (sim, p)
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn past_mem_queue_size_bodies_wait_in_the_store() {
    for mem in [0, 3] {
        let (mut sim, _) = backlog(mem, 10);
        let ch = sim.broker.channel("t", "c").unwrap();
        assert_eq!(ch.queue.memory.len(), mem);
        assert_eq!(ch.queue.backend_len(), 10 - mem);
        assert_eq!(ch.queue.backend_in_store(), 10 - mem);
        assert!(ch.queue.memory.iter().all(|m| !m.is_evicted()));
        // A consumer with RDY 2 gets every body, in order, two at a time.
        let c = sub(&mut sim, "t", "c", 2);
        let mut got = Vec::new();
        for _ in 0..5 {
            let ms = sim.messages(c);
            assert_eq!(ms.len(), 2, "mem {mem}: RDY 2");
            for m in ms {
                got.push(String::from_utf8_lossy(&m.body).into_owned());
                sim.send(c, &Command::Fin(m.id.to_hex()));
            }
        }
        let want: Vec<String> = (0..10).map(|i| format!("m{i}")).collect();
        assert_eq!(got, want, "mem {mem}");
        assert!(sim.broker.channel("t", "c").unwrap().loading.is_empty());
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn bodies_are_read_ahead_for_a_ready_consumer_and_go_in_order() {
    let (mut sim, p) = backlog(0, 300);
    // The host reads bodies on another thread: their answers come later.
    sim.store.hold_loads = true;
    // A consumer at RDY 0 has nothing read ahead for it.
    let c = sub(&mut sim, "t", "c", 0);
    assert!(sim.store.held_loads.is_empty());
    // At RDY 1: its message and the read-ahead are on their way, nothing is sent yet, and
    // the messages being read still count in the depth.
    sim.send(c, &Command::Rdy(1));
    assert_eq!(sim.store.held_load_count(), 256);
    assert!(sim.messages(c).is_empty());
    assert_eq!(sim.broker.channel("t", "c").unwrap().depth(), 300);
    sim.answer_loads();
    // Then each FIN finds the next body in memory, without waiting for the store: 256 go
    // before any further answer, in publish order.
    let mut got = Vec::new();
    for _ in 0..256 {
        let ms = sim.messages(c);
        assert_eq!(ms.len(), 1, "after {got:?}");
        got.push(String::from_utf8_lossy(&ms[0].body).into_owned());
        sim.send(c, &Command::Fin(ms[0].id.to_hex()));
    }
    assert!(sim.messages(c).is_empty(), "the rest is still being read");
    assert_eq!(sim.broker.channel("t", "c").unwrap().depth(), 300 - 256);
    sim.answer_loads();
    while let Some(m) = sim.messages(c).pop() {
        got.push(String::from_utf8_lossy(&m.body).into_owned());
        sim.send(c, &Command::Fin(m.id.to_hex()));
        sim.answer_loads();
    }
    let want: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
    assert_eq!(got, want);
    let ch = sim.broker.channel("t", "c").unwrap();
    assert_eq!((ch.depth(), ch.loading.len()), (0, 0));

    // A consumer with room for many: as many loads as its room, and the rest read ahead;
    // they go in publish order.
    for i in 300..320 {
        sim.send(p, &pub_cmd("t", &format!("m{i}")));
    }
    sim.send(c, &Command::Rdy(0));
    let d = sub(&mut sim, "t", "c", 0);
    sim.send(d, &Command::Rdy(10));
    assert_eq!(
        sim.store.held_load_count(),
        20,
        "10 for its room, 10 read ahead"
    );
    sim.answer_loads();
    let first: Vec<String> = bodies(&mut sim, d);
    assert_eq!(
        first,
        (300..310).map(|i| format!("m{i}")).collect::<Vec<_>>()
    );
}

/// Drain channel `t/c` of `sim` with consumer `c` at RDY 1, answering loads as they are
/// asked for; returns the size of each batch of loads, and the most bodies ever read ahead
/// (fetched or on their way) once the first 256 messages went.
fn drain_counting_loads(sim: &mut Sim, c: ClientId, n: usize) -> (Vec<usize>, usize) {
    let mut batches = Vec::new();
    let mut most = 0;
    let mut got = 0;
    while got < n {
        if !sim.store.held_loads.is_empty() {
            batches.push(sim.store.held_load_count());
            sim.answer_loads();
        }
        let ch = sim.broker.channel("t", "c").unwrap();
        if got >= 256 {
            most = most.max(ch.loading.len() + ch.queue.fetched_len());
        }
        let ms = sim.messages(c);
        assert!(ms.len() <= 1, "RDY 1");
        for m in ms {
            sim.send(c, &Command::Fin(m.id.to_hex()));
            got += 1;
        }
    }
    (batches, most)
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn the_read_ahead_is_topped_up_by_halves_and_bounded_in_bytes() {
    // Small bodies: once their size is known, up to 4096 are read ahead (1 MiB of them,
    // at most 4096), and asked for only when fewer than 2048 are left: a batch of 2048 or
    // more at a time, not one per FIN.
    let (mut sim, _) = backlog(0, 12_000);
    sim.store.hold_loads = true;
    let c = sub(&mut sim, "t", "c", 1);
    assert_eq!(
        sim.store.held_load_count(),
        256,
        "before any body came back"
    );
    let (batches, most) = drain_counting_loads(&mut sim, c, 12_000);
    assert_eq!(batches.iter().sum::<usize>(), 12_000, "{batches:?}");
    let (first, rest) = batches.split_first().unwrap();
    let (last, middle) = rest.split_last().unwrap();
    assert_eq!(*first, 256);
    assert!(
        !middle.is_empty() && middle.iter().all(|&b| (2048..=4096).contains(&b)) && *last <= 4096,
        "{batches:?}"
    );
    assert!(batches.len() <= 7, "{batches:?}");
    assert!((2048..=4096).contains(&most), "{most}");

    // 64 KiB bodies: 1 MiB of them is 16, topped up below 8.
    let mut sim = Sim::new(
        Options {
            mem_queue_size: 0,
            ..durable()
        },
        1,
    );
    let now = sim.now();
    sim.broker.create_channel(now, "t", "c").unwrap();
    let p = sim.connect();
    let big = "x".repeat(64 << 10);
    for _ in 0..400 {
        sim.send(p, &pub_cmd("t", &big));
    }
    sim.store.hold_loads = true;
    let c = sub(&mut sim, "t", "c", 1);
    let (batches, most) = drain_counting_loads(&mut sim, c, 400);
    assert_eq!(batches[0], 256);
    assert!(
        batches[1..batches.len() - 1]
            .iter()
            .all(|&b| (8..=16).contains(&b)),
        "{batches:?}"
    );
    assert!((8..=16).contains(&most), "{most}");
}
