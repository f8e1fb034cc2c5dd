//! Broker semantics, checked through the simulated network as a client sees them.

use nsqlab_core::protocol::{Command, Frame};
use nsqlab_core::sim::Sim;
use nsqlab_core::time::{ms, SECOND};
use nsqlab_core::{ClientId, Options, StatsFilter, TimerStrategy};

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

fn publish(sim: &mut Sim, p: ClientId, topic: &str, body: &str) {
    sim.send(
        p,
        &Command::Pub {
            topic: topic.into(),
            body: body.as_bytes().into(),
        },
    );
    assert_eq!(sim.frames(p), vec![Frame::Response(b"OK".to_vec())]);
}

/// One MPUB of `bodies` to `topic`, from a new connection, answered with OK.
fn mpub(sim: &mut Sim, topic: &str, bodies: &[&str]) {
    let p = sim.connect();
    sim.send(
        p,
        &Command::Mpub {
            topic: topic.into(),
            bodies: bodies.iter().map(|b| b.as_bytes().into()).collect(),
        },
    );
    assert_eq!(sim.frames(p), vec![Frame::Response(b"OK".to_vec())]);
}

fn fin(sim: &mut Sim, c: ClientId, m: &nsqlab_core::Message) {
    sim.send(c, &Command::Fin(m.id.to_hex()));
}

fn err_text(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Error(e) => Some(String::from_utf8_lossy(e).into_owned()),
            _ => None,
        })
        .collect()
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn an_mpub_message_that_is_deferred_lets_go_of_its_batch_buffer() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sub(&mut sim, "t", "c", 1);
    mpub(&mut sim, "t", &["first", "second"]);
    let m = sim.messages(c).remove(0);
    assert_eq!(&m.body[..], b"first");
    sim.send(
        c,
        &Command::Req {
            id: m.id.to_hex(),
            timeout_ms: 1000,
        },
    );
    let ch = sim.broker.channel("t", "c").unwrap();
    let deferred = &ch.deferred.entries()[0].item;
    assert_eq!((deferred.id, &deferred.body[..]), (m.id, &b"first"[..]));
    assert!(!deferred.body.shares_buffer());
    // It comes back whole when due.
    let t0 = sim.now();
    let second = sim.messages(c).remove(0);
    assert_eq!(&second.body[..], b"second");
    fin(&mut sim, c, &second);
    sim.advance(t0 + 1000 * nsqlab_core::time::MILLISECOND);
    let again = sim.messages(c).remove(0);
    assert_eq!(
        (again.id, &again.body[..], again.attempts),
        (m.id, &b"first"[..], 2)
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_message_requeued_at_once_or_timed_out_lets_go_of_its_batch_buffer() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sub(&mut sim, "t", "c", 2);
    mpub(&mut sim, "t", &["first", "second"]);
    let got = sim.messages(c);
    assert_eq!(got.len(), 2);
    let ch = sim.broker.channel("t", "c").unwrap();
    assert!(ch.in_flight.iter().all(|e| e.item.msg.body.shares_buffer()));
    // Stop delivery, so that both wait in the queue: one REQ'd at once, one timed out.
    sim.send(c, &Command::Rdy(0));
    sim.send(
        c,
        &Command::Req {
            id: got[0].id.to_hex(),
            timeout_ms: 0,
        },
    );
    sim.advance(sim.now() + Options::default().msg_timeout + SECOND);
    let ch = sim.broker.channel("t", "c").unwrap();
    let queued: Vec<_> = ch.queue.memory.iter().collect();
    assert_eq!(queued.len(), 2);
    for m in queued {
        assert!(
            !m.body.shares_buffer(),
            "{:?} keeps its MPUB's buffer",
            m.id
        );
        assert_eq!(m.attempts, 1);
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn fan_out_gives_each_channel_a_copy() {
    let mut sim = Sim::new(Options::default(), 1);
    let a = sub(&mut sim, "t", "a", 10);
    let b = sub(&mut sim, "t", "b", 10);
    let p = sim.connect();
    publish(&mut sim, p, "t", "x");
    let (ma, mb) = (sim.messages(a), sim.messages(b));
    assert_eq!((ma.len(), mb.len()), (1, 1));
    assert_eq!(ma[0].id, mb[0].id);
    assert_eq!(ma[0].attempts, 1);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn topic_without_channels_keeps_messages_until_one_appears() {
    let mut sim = Sim::new(Options::default(), 1);
    let p = sim.connect();
    for i in 0..3 {
        publish(&mut sim, p, "t", &format!("m{i}"));
    }
    assert_eq!(sim.broker.topic("t").unwrap().depth(), 3);
    let c = sub(&mut sim, "t", "c", 10);
    let got: Vec<_> = sim.messages(c).iter().map(|m| m.body.to_vec()).collect();
    assert_eq!(got, vec![b"m0".to_vec(), b"m1".to_vec(), b"m2".to_vec()]);
    assert_eq!(sim.broker.topic("t").unwrap().depth(), 0);
}

/// Channels made together (nsqd pre-creating a new topic's channels from nsqlookupd) each get
/// what the topic held; made one by one, the first would take it all.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn channels_made_together_each_get_what_the_topic_held() {
    let mut sim = Sim::new(Options::default(), 1);
    let p = sim.connect();
    for i in 0..3 {
        publish(&mut sim, p, "t", &format!("m{i}"));
    }
    let names = ["a".to_string(), "b".to_string(), "bad name".to_string()];
    sim.broker.create_channels(sim.now(), "t", &names).unwrap();
    for ch in ["a", "b"] {
        let c = sub(&mut sim, "t", ch, 10);
        let got: Vec<_> = sim.messages(c).iter().map(|m| m.body.to_vec()).collect();
        assert_eq!(
            got,
            vec![b"m0".to_vec(), b"m1".to_vec(), b"m2".to_vec()],
            "{ch}"
        );
    }
    assert_eq!(sim.broker.topic("t").unwrap().channels.len(), 2);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn round_robin_between_consumers_honours_rdy() {
    let mut sim = Sim::new(Options::default(), 1);
    let a = sub(&mut sim, "t", "c", 2);
    let b = sub(&mut sim, "t", "c", 1);
    let p = sim.connect();
    for i in 0..5 {
        publish(&mut sim, p, "t", &format!("m{i}"));
    }
    let (ma, mb) = (sim.messages(a), sim.messages(b));
    assert_eq!((ma.len(), mb.len()), (2, 1), "in flight never exceeds RDY");
    assert_eq!(sim.broker.channel("t", "c").unwrap().depth(), 2);
    // Alternation: a gets m0, b m1, a m2.
    assert_eq!(&ma[0].body[..], b"m0");
    assert_eq!(&mb[0].body[..], b"m1");
    assert_eq!(&ma[1].body[..], b"m2");
    fin(&mut sim, b, &mb[0]);
    assert_eq!(&sim.messages(b)[0].body[..], b"m3");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn in_flight_timeout_redelivers_with_attempts_plus_one() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sim.connect();
    sim.send(c, &Command::Identify(br#"{"msg_timeout":2000}"#.to_vec()));
    sim.frames(c);
    sim.send(
        c,
        &Command::Sub {
            topic: "t".into(),
            channel: "c".into(),
        },
    );
    sim.send(c, &Command::Rdy(1));
    let p = sim.connect();
    publish(&mut sim, p, "t", "x");
    let first = sim.messages(c);
    assert_eq!(first[0].attempts, 1);
    sim.advance(ms(1999));
    assert!(sim.messages(c).is_empty());
    sim.advance(ms(2000));
    let again = sim.messages(c);
    assert_eq!(again.len(), 1, "redelivered exactly at the deadline");
    assert_eq!((again[0].id, again[0].attempts), (first[0].id, 2));
    let st = sim.broker.stats(&StatsFilter::default());
    assert_eq!(st.topics.as_ref().unwrap()[0].channels[0].timeout_count, 1);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn fin_errors_are_not_fatal() {
    let mut sim = Sim::new(Options::default(), 1);
    let a = sub(&mut sim, "t", "c", 1);
    let b = sub(&mut sim, "t", "c", 1);
    let p = sim.connect();
    publish(&mut sim, p, "t", "x");
    let m = sim.messages(a).remove(0);
    fin(&mut sim, b, &m);
    assert_eq!(
        err_text(&sim.frames(b)),
        vec![format!(
            "E_FIN_FAILED FIN {} failed client does not own message",
            m.id
        )]
    );
    sim.send(a, &Command::Fin(*b"0000000000000000"));
    assert_eq!(
        err_text(&sim.frames(a)),
        vec!["E_FIN_FAILED FIN 0000000000000000 failed ID not in flight".to_string()]
    );
    assert!(!sim.is_closed(a) && !sim.is_closed(b));
    fin(&mut sim, a, &m);
    assert!(sim.frames(a).is_empty());
    assert_eq!(sim.broker.channel("t", "c").unwrap().in_flight.len(), 0);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn req_requeues_now_or_deferred_and_clamps_delay() {
    let opts = Options {
        max_req_timeout: 10 * SECOND,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);
    let c = sub(&mut sim, "t", "c", 1);
    let p = sim.connect();
    publish(&mut sim, p, "t", "x");
    let m = sim.messages(c).remove(0);
    sim.send(
        c,
        &Command::Req {
            id: m.id.to_hex(),
            timeout_ms: 0,
        },
    );
    let m2 = sim.messages(c).remove(0);
    assert_eq!((m2.id, m2.attempts), (m.id, 2));
    // 1 hour is clamped to max-req-timeout (10 s).
    sim.send(
        c,
        &Command::Req {
            id: m.id.to_hex(),
            timeout_ms: 3_600_000,
        },
    );
    assert!(sim.messages(c).is_empty());
    assert_eq!(sim.broker.channel("t", "c").unwrap().deferred.len(), 1);
    let t0 = sim.now();
    sim.advance(t0 + 10 * SECOND - 1);
    assert!(sim.messages(c).is_empty());
    sim.advance(t0 + 10 * SECOND);
    assert_eq!(sim.messages(c)[0].attempts, 3);
    let st = sim.broker.stats(&StatsFilter {
        include_clients: true,
        ..Default::default()
    });
    assert_eq!(st.topics.as_ref().unwrap()[0].channels[0].requeue_count, 2);
    assert_eq!(
        st.topics.as_ref().unwrap()[0].channels[0]
            .clients
            .as_ref()
            .unwrap()[0]
            .requeue_count,
        2
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn touch_extends_the_deadline_up_to_max_msg_timeout() {
    let opts = Options {
        msg_timeout: 10 * SECOND,
        max_msg_timeout: 15 * SECOND,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);
    let c = sub(&mut sim, "t", "c", 1);
    let p = sim.connect();
    publish(&mut sim, p, "t", "x");
    let m = sim.messages(c).remove(0);
    sim.sleep(8 * SECOND);
    sim.send(c, &Command::Touch(m.id.to_hex()));
    // now + 10 s would be 18 s after delivery: capped at 15 s.
    sim.advance(15 * SECOND - 1);
    assert!(sim.messages(c).is_empty());
    sim.advance(15 * SECOND);
    assert_eq!(sim.messages(c)[0].attempts, 2);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn dpub_arrives_exactly_when_due() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sub(&mut sim, "t", "c", 100);
    let p = sim.connect();
    for d in [300u64, 100, 200, 100] {
        sim.send(
            p,
            &Command::Dpub {
                topic: "t".into(),
                defer_ms: d,
                body: d.to_string().as_bytes().into(),
            },
        );
    }
    let mut got = Vec::new();
    while sim.step(u64::MAX) {
        for m in sim.messages(c) {
            got.push((sim.now(), String::from_utf8(m.body.to_vec()).unwrap()));
            fin(&mut sim, c, &m);
        }
        if got.len() == 4 {
            break;
        }
    }
    assert_eq!(
        got,
        vec![
            (ms(100), "100".into()),
            (ms(100), "100".into()),
            (ms(200), "200".into()),
            (ms(300), "300".into())
        ]
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn cls_stops_delivery_but_fin_still_works() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sub(&mut sim, "t", "c", 5);
    let p = sim.connect();
    publish(&mut sim, p, "t", "a");
    let m = sim.messages(c).remove(0);
    sim.send(c, &Command::Cls);
    assert_eq!(sim.frames(c), vec![Frame::Response(b"CLOSE_WAIT".to_vec())]);
    publish(&mut sim, p, "t", "b");
    sim.send(c, &Command::Rdy(5)); // ignored after CLS
    assert!(sim.frames(c).is_empty());
    fin(&mut sim, c, &m);
    assert!(sim.frames(c).is_empty() && !sim.is_closed(c));
    sim.send(c, &Command::Cls);
    assert_eq!(
        err_text(&sim.frames(c)),
        vec!["E_INVALID cannot CLS in current state"]
    );
    assert!(sim.is_closed(c));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn heartbeats_and_read_timeout() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sim.connect();
    sim.advance(30 * SECOND);
    assert_eq!(
        sim.frames(c),
        vec![Frame::Response(b"_heartbeat_".to_vec())]
    );
    sim.advance(60 * SECOND - 1);
    assert!(!sim.is_closed(c));
    sim.advance(60 * SECOND);
    assert!(
        sim.is_closed(c),
        "closed after 2 heartbeat intervals without a command"
    );

    // A client that answers (NOP) stays.
    let d = sim.connect();
    for _ in 0..5 {
        sim.sleep(30 * SECOND);
        sim.send(d, &Command::Nop);
    }
    assert!(!sim.is_closed(d));

    // heartbeat_interval -1: no heartbeats, no read timeout, but SUB is refused.
    let e = sim.connect();
    sim.send(
        e,
        &Command::Identify(br#"{"heartbeat_interval":-1}"#.to_vec()),
    );
    sim.sleep(1000 * SECOND);
    assert_eq!(sim.frames(e), vec![Frame::Response(b"OK".to_vec())]);
    assert!(!sim.is_closed(e));
    sim.send(
        e,
        &Command::Sub {
            topic: "t".into(),
            channel: "c".into(),
        },
    );
    assert_eq!(
        err_text(&sim.frames(e)),
        vec!["E_INVALID cannot SUB with heartbeats disabled"]
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn ephemeral_channel_and_topic_go_with_their_last_consumer() {
    let mut sim = Sim::new(Options::default(), 1);
    let a = sub(&mut sim, "t#ephemeral", "c#ephemeral", 1);
    let b = sub(&mut sim, "t#ephemeral", "c#ephemeral", 1);
    sim.disconnect(a);
    assert!(sim.broker.channel("t#ephemeral", "c#ephemeral").is_some());
    sim.disconnect(b);
    assert!(sim.broker.channel("t#ephemeral", "c#ephemeral").is_none());
    assert!(sim.broker.topic("t#ephemeral").is_none());
    // A durable channel stays.
    let c = sub(&mut sim, "u", "c", 1);
    sim.disconnect(c);
    assert!(sim.broker.channel("u", "c").is_some());
}

/// nsqd has no backend for ephemeral queues: an ephemeral topic without channels holds
/// `--mem-queue-size` messages and drops the rest, and with `--mem-queue-size=0` (an
/// unbuffered memory queue) an ephemeral channel takes a message only for a client ready for
/// it then.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn ephemeral_queues_drop_what_does_not_fit_in_memory() {
    let opts = Options {
        mem_queue_size: 3,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);
    let p = sim.connect();
    for i in 0..5 {
        publish(&mut sim, p, "t#ephemeral", &i.to_string());
    }
    assert_eq!(sim.broker.topic("t#ephemeral").unwrap().depth(), 3);
    let c = sub(&mut sim, "t#ephemeral", "c", 10);
    let got: Vec<_> = sim.messages(c).iter().map(|m| m.body.to_vec()).collect();
    assert_eq!(got, [b"0".to_vec(), b"1".to_vec(), b"2".to_vec()]);

    let opts = Options {
        mem_queue_size: 0,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);
    let c = sub(&mut sim, "u", "c#ephemeral", 0);
    let p = sim.connect();
    publish(&mut sim, p, "u", "nobody ready");
    assert_eq!(sim.broker.channel("u", "c#ephemeral").unwrap().depth(), 0);
    sim.send(c, &Command::Rdy(1));
    assert!(sim.messages(c).is_empty());
    publish(&mut sim, p, "u", "taken");
    publish(&mut sim, p, "u", "no room");
    let got = sim.messages(c);
    assert_eq!(got.len(), 1);
    assert_eq!(&got[0].body[..], b"taken");
    fin(&mut sim, c, &got[0]);
    assert!(sim.messages(c).is_empty(), "the third was dropped");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn pause_empty_and_delete() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sub(&mut sim, "t", "c", 10);
    let p = sim.connect();
    sim.broker.pause_channel(0, "t", "c", true).unwrap();
    publish(&mut sim, p, "t", "a");
    assert!(sim.messages(c).is_empty());
    sim.broker.pause_channel(0, "t", "c", false).unwrap();
    sim.flush();
    let m = sim.messages(c);
    assert_eq!(m.len(), 1);

    sim.broker.pause_topic(0, "t", true).unwrap();
    publish(&mut sim, p, "t", "b");
    assert_eq!(sim.broker.topic("t").unwrap().depth(), 1);
    sim.broker.pause_topic(0, "t", false).unwrap();
    sim.flush();
    assert_eq!(sim.messages(c).len(), 1);

    // Empty drops in-flight too: a later FIN fails.
    sim.broker.empty_channel(0, "t", "c").unwrap();
    fin(&mut sim, c, &m[0]);
    assert_eq!(err_text(&sim.frames(c)).len(), 1);

    sim.broker.delete_topic(0, "t").unwrap();
    sim.flush();
    assert!(sim.is_closed(c), "deleting the topic closes its consumers");
    assert!(sim.broker.topic("t").is_none());
    assert_eq!(
        sim.broker.delete_topic(0, "t"),
        Err(nsqlab_core::AdminError::TopicNotFound)
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn max_channel_consumers() {
    let opts = Options {
        max_channel_consumers: 1,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);
    sub(&mut sim, "t", "c", 1);
    let c = sim.connect();
    sim.send(
        c,
        &Command::Sub {
            topic: "t".into(),
            channel: "c".into(),
        },
    );
    assert_eq!(
        err_text(&sim.frames(c)),
        vec!["E_SUB_FAILED SUB failed consumers for t:c exceeds limit of 1"]
    );
    assert!(sim.is_closed(c));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn bad_magic_and_bad_identify() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sim.connect_raw();
    sim.send_raw(c, b"  V1");
    assert_eq!(
        sim.frames(c),
        vec![Frame::Error(b"E_BAD_PROTOCOL".to_vec())]
    );
    assert!(sim.is_closed(c));

    let d = sim.connect();
    sim.send(
        d,
        &Command::Identify(br#"{"heartbeat_interval":100}"#.to_vec()),
    );
    assert_eq!(
        err_text(&sim.frames(d)),
        vec!["E_BAD_BODY IDENTIFY heartbeat interval (100) is invalid"]
    );
    assert!(sim.is_closed(d));
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn identify_negotiates_upgrades_in_order() {
    let opts = Options {
        tls_enabled: true,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);
    let c = sim.connect();
    sim.send(
        c,
        &Command::Identify(br#"{"feature_negotiation":true,"tls_v1":true,"snappy":true}"#.to_vec()),
    );
    let f = sim.frames(c);
    assert_eq!(f.len(), 3, "JSON, OK after TLS, OK after snappy: {f:?}");
    let Frame::Response(json) = &f[0] else {
        panic!()
    };
    let v: serde_json::Value = serde_json::from_slice(json).unwrap();
    assert_eq!(
        (v["tls_v1"].as_bool(), v["snappy"].as_bool()),
        (Some(true), Some(true))
    );
    use nsqlab_core::Upgrade;
    assert_eq!(
        sim.end(c).unwrap().upgrades,
        vec![Upgrade::Tls, Upgrade::Snappy]
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn memory_queue_overflows_to_backend_in_order() {
    let opts = Options {
        mem_queue_size: 2,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);
    sim.broker.create_channel(0, "t", "c").unwrap();
    let p = sim.connect();
    for i in 0..5 {
        publish(&mut sim, p, "t", &i.to_string());
    }
    let st = sim.broker.stats(&StatsFilter::default());
    let ch = &st.topics.as_ref().unwrap()[0].channels[0];
    assert_eq!((ch.depth, ch.backend_depth), (5, 3));
    let c = sub(&mut sim, "t", "c", 10);
    let got: Vec<_> = sim.messages(c).iter().map(|m| m.body.to_vec()).collect();
    assert_eq!(
        got,
        (0..5)
            .map(|i| i.to_string().into_bytes())
            .collect::<Vec<_>>()
    );
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn sample_rate_drops_deterministically() {
    let run = |seed| {
        let mut sim = Sim::new(Options::default(), seed);
        let c = sim.connect();
        sim.send(c, &Command::Identify(br#"{"sample_rate":30}"#.to_vec()));
        sim.send(
            c,
            &Command::Sub {
                topic: "t".into(),
                channel: "c".into(),
            },
        );
        sim.send(c, &Command::Rdy(2500));
        sim.frames(c);
        sim.broker
            .publish(
                0,
                "t",
                (0..1000)
                    .map(|i| i.to_string().into_bytes().into())
                    .collect(),
                None,
            )
            .unwrap();
        sim.flush();
        sim.messages(c).len()
    };
    let n = run(3);
    // (30+1)/100 of 1000 messages, within a generous band.
    assert!((220..400).contains(&n), "{n}");
    assert_eq!(n, run(3), "same seed, same sample");
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn scan_loop_strategy_is_late_exact_is_not() {
    let lateness = |strategy| {
        let mut sim = Sim::new(
            Options {
                timer_strategy: strategy,
                ..Options::default()
            },
            9,
        );
        let c = sub(&mut sim, "t", "c", 2500);
        let p = sim.connect();
        sim.sleep(6 * SECOND); // let the scan loop see the channel
        let start = sim.now();
        for i in 0..50u64 {
            sim.send(
                p,
                &Command::Dpub {
                    topic: "t".into(),
                    defer_ms: 10 + i * 7,
                    body: b"x"[..].into(),
                },
            );
        }
        let mut late = Vec::new();
        let mut due = (0..50u64).map(|i| start + ms(10 + i * 7));
        while late.len() < 50 && sim.step(start + 10 * SECOND) {
            for _ in sim.messages(c) {
                late.push(sim.now() - due.next().unwrap());
            }
        }
        assert_eq!(late.len(), 50);
        late
    };
    assert!(lateness(TimerStrategy::Exact).iter().all(|&l| l == 0));
    let scan = lateness(TimerStrategy::ScanLoop);
    assert!(scan.iter().any(|&l| l > 0), "{scan:?}");
    assert!(scan.iter().all(|&l| l <= ms(100)), "{scan:?}");
}

fn grant(topic: &str, channels: &[&str], perms: &[&str], ttl: i64) -> nsqlab_core::AuthResponse {
    nsqlab_core::AuthResponse {
        ttl,
        identity: "ann".into(),
        identity_url: "https://example/ann".into(),
        authorizations: vec![nsqlab_core::Authorization {
            topic: topic.into(),
            channels: channels.iter().map(|c| c.to_string()).collect(),
            permissions: perms.iter().map(|p| p.to_string()).collect(),
        }],
    }
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn auth_flow_as_nsqd() {
    let opts = Options {
        auth_enabled: true,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);

    let a = sim.connect();
    publish_err(&mut sim, a, "E_AUTH_FIRST AUTH required before PUB");

    // AUTH, with a PUB pipelined behind it: the PUB waits for the auth server.
    let b = sim.connect();
    let mut bytes = Command::Auth(b"s3cret".to_vec()).to_bytes();
    bytes.extend(
        Command::Pub {
            topic: "ok".into(),
            body: b"x"[..].into(),
        }
        .to_bytes(),
    );
    sim.send_raw(b, &bytes);
    assert!(sim.frames(b).is_empty());
    assert_eq!(sim.auth_requests.len(), 1);
    assert_eq!(
        (
            sim.auth_requests[0].secret.as_slice(),
            sim.auth_requests[0].remote_ip.as_str()
        ),
        (&b"s3cret"[..], "10.0.0.1")
    );
    sim.answer_auth(b, Ok(grant("^ok$", &[".*"], &["publish", "subscribe"], 60)));
    let f = sim.frames(b);
    assert_eq!(
        f,
        vec![
            Frame::Response(
                br#"{"identity":"ann","identity_url":"https://example/ann","permission_count":1}"#
                    .to_vec()
            ),
            Frame::Response(b"OK".to_vec())
        ]
    );
    sim.send(
        b,
        &Command::Pub {
            topic: "nope".into(),
            body: b"x"[..].into(),
        },
    );
    assert_eq!(
        err_text(&sim.frames(b)),
        vec!["E_UNAUTHORIZED AUTH failed for PUB on \"nope\" \"\""]
    );
    assert!(sim.is_closed(b));

    // Subscribe permission is checked with the channel.
    let c = sim.connect();
    sim.send(c, &Command::Auth(b"x".to_vec()));
    sim.answer_auth(c, Ok(grant("ok", &["^good$"], &["subscribe"], 60)));
    sim.frames(c);
    sim.send(
        c,
        &Command::Sub {
            topic: "ok".into(),
            channel: "bad".into(),
        },
    );
    assert_eq!(
        err_text(&sim.frames(c)),
        vec!["E_UNAUTHORIZED AUTH failed for SUB on \"ok\" \"bad\""]
    );

    // Auth server trouble, empty grants, a second AUTH.
    let d = sim.connect();
    sim.send(d, &Command::Auth(b"x".to_vec()));
    sim.answer_auth(d, Err("connection refused".into()));
    assert_eq!(err_text(&sim.frames(d)), vec!["E_AUTH_FAILED AUTH failed"]);
    let e = sim.connect();
    sim.send(e, &Command::Auth(b"x".to_vec()));
    let mut none = grant("t", &[], &[], 60);
    none.authorizations.clear();
    sim.answer_auth(e, Ok(none));
    assert_eq!(
        err_text(&sim.frames(e)),
        vec!["E_UNAUTHORIZED AUTH no authorizations found"]
    );
    let g = sim.connect();
    sim.send(g, &Command::Auth(b"x".to_vec()));
    sim.answer_auth(g, Ok(grant(".*", &[".*"], &["publish"], 1)));
    sim.frames(g);
    sim.send(g, &Command::Auth(b"x".to_vec()));
    assert_eq!(err_text(&sim.frames(g)), vec!["E_INVALID AUTH already set"]);

    // After the TTL the next PUB asks the auth server again first.
    let h = sim.connect();
    sim.send(h, &Command::Auth(b"k".to_vec()));
    sim.answer_auth(h, Ok(grant(".*", &[".*"], &["publish"], 1)));
    sim.frames(h);
    sim.sleep(2 * SECOND);
    sim.send(h, &Command::Nop); // not checked: no refresh
    assert!(sim.auth_requests.is_empty());
    sim.send(
        h,
        &Command::Pub {
            topic: "t".into(),
            body: b"x"[..].into(),
        },
    );
    assert_eq!(sim.auth_requests.len(), 1, "refresh before PUB");
    assert!(sim.frames(h).is_empty());
    sim.answer_auth(h, Ok(grant(".*", &[".*"], &["publish"], 60)));
    assert_eq!(sim.frames(h), vec![Frame::Response(b"OK".to_vec())]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn auth_disabled() {
    let mut sim = Sim::new(Options::default(), 1);
    let a = sim.connect();
    sim.send(a, &Command::Auth(b"x".to_vec()));
    assert_eq!(
        err_text(&sim.frames(a)),
        vec!["E_AUTH_DISABLED AUTH disabled"]
    );
}

fn publish_err(sim: &mut Sim, c: ClientId, want: &str) {
    sim.send(
        c,
        &Command::Pub {
            topic: "t".into(),
            body: b"x"[..].into(),
        },
    );
    assert_eq!(err_text(&sim.frames(c)), vec![want.to_string()]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn commands_pipelined_behind_an_upgrade_are_dropped() {
    // With --tls-required, a PUB sent in plaintext right behind IDENTIFY(tls_v1) must not run
    // as if it came over TLS.
    let opts = Options {
        tls_enabled: true,
        tls_required: true,
        ..Options::default()
    };
    let mut sim = Sim::new(opts, 1);
    let c = sim.connect();
    let mut bytes =
        Command::Identify(br#"{"feature_negotiation":true,"tls_v1":true}"#.to_vec()).to_bytes();
    bytes.extend(
        Command::Pub {
            topic: "t".into(),
            body: b"sneaky"[..].into(),
        }
        .to_bytes(),
    );
    sim.send_raw(c, &bytes);
    assert!(
        sim.broker.topic("t").is_none(),
        "the pipelined PUB was dropped"
    );
    assert_eq!(
        sim.end(c).unwrap().upgrades,
        vec![nsqlab_core::Upgrade::Tls]
    );
    // After the upgrade, commands work.
    sim.frames(c);
    sim.send(
        c,
        &Command::Pub {
            topic: "t".into(),
            body: b"ok"[..].into(),
        },
    );
    assert_eq!(sim.frames(c), vec![Frame::Response(b"OK".to_vec())]);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn dpub_defer_wraps_as_in_nsqd() {
    // 18446744073710 ms wraps to 448 384 ns in nsqd's int64 Duration: valid, and due at once.
    let mut sim = Sim::new(Options::default(), 1);
    let c = sub(&mut sim, "t", "c", 1);
    let p = sim.connect();
    sim.send_raw(p, b"DPUB t 18446744073710\n\x00\x00\x00\x01x");
    assert_eq!(sim.frames(p), vec![Frame::Response(b"OK".to_vec())]);
    sim.sleep(ms(1));
    assert_eq!(sim.messages(c).len(), 1);
}

#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_publisher_reaches_the_right_topic_after_deletes_and_reused_slots() {
    // Publishing again to the same topic skips the name check and the search; deleting
    // that topic, or another topic taking its slot, must not send messages astray.
    let mut sim = Sim::new(Options::default(), 1);
    let p = sim.connect();
    publish(&mut sim, p, "a", "1");
    publish(&mut sim, p, "a", "2");
    assert_eq!(sim.broker.topic("a").unwrap().message_count, 2);

    sim.broker.delete_topic(0, "a").unwrap();
    // "b" takes the slot "a" had.
    sim.broker.create_topic(0, "b").unwrap();
    publish(&mut sim, p, "a", "3");
    assert_eq!(sim.broker.topic("a").unwrap().message_count, 1);
    assert_eq!(sim.broker.topic("b").unwrap().message_count, 0);

    publish(&mut sim, p, "b", "4");
    publish(&mut sim, p, "a", "5");
    publish(&mut sim, p, "a", "6");
    assert_eq!(sim.broker.topic("a").unwrap().message_count, 3);
    assert_eq!(sim.broker.topic("b").unwrap().message_count, 1);

    // nsqd's pub_counts: per topic, over the client's life (the first in name order is
    // reported); the one for "a" counts across the delete.
    let c = sim.broker.clients().find(|c| c.id == p).unwrap();
    let mut counts: Vec<(String, u64)> = c
        .pub_counts
        .iter()
        .map(|(t, n)| (t.to_string(), *n))
        .collect();
    counts.sort();
    assert_eq!(counts, vec![("a".into(), 5), ("b".into(), 1)]);
    // A bad name after a good one is still refused (fatal), as nsqd does.
    sim.send(
        p,
        &Command::Pub {
            topic: "a!b".into(),
            body: b"x".as_slice().into(),
        },
    );
    assert_eq!(
        err_text(&sim.frames(p)),
        vec!["E_BAD_TOPIC PUB topic name \"a!b\" is not valid"]
    );
}

/// nsqd reads the magic without a deadline; its heartbeat ticker and read deadline start
/// after it.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn no_heartbeat_or_read_timeout_before_the_magic() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sim.connect_raw();
    sim.sleep(1000 * SECOND);
    assert!(sim.frames(c).is_empty(), "no heartbeat before the magic");
    assert!(!sim.is_closed(c), "no read timeout before the magic");
    sim.send_raw(c, b"  V2");
    sim.sleep(30 * SECOND);
    assert_eq!(
        sim.frames(c),
        vec![Frame::Response(b"_heartbeat_".to_vec())],
        "the first heartbeat one interval after the magic"
    );
    sim.sleep(30 * SECOND - 1);
    assert!(!sim.is_closed(c));
    sim.sleep(1);
    assert!(sim.is_closed(c), "two intervals after the magic, silent");
}

/// IDENTIFY's JSON as Go decodes it into nsqd's `identifyDataV2`: keys nsqd has no field for
/// (`short_id`, `long_id` since 1.0) are ignored whatever their type, and bytes that are not
/// UTF-8 become U+FFFD.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn identify_json_as_go_decodes_it() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sim.connect();
    sim.send(
        c,
        &Command::Identify(br#"{"short_id":1,"long_id":[true],"client_id":"x"}"#.to_vec()),
    );
    assert_eq!(sim.frames(c), vec![Frame::Response(b"OK".to_vec())]);
    assert!(!sim.is_closed(c));
    let d = sim.connect();
    sim.send(
        d,
        &Command::Identify(b"{\"client_id\":\"a\xffb\",\"hostname\":\"h\"}".to_vec()),
    );
    assert_eq!(sim.frames(d), vec![Frame::Response(b"OK".to_vec())]);
    publish(&mut sim, d, "t", "x");
    let st = sim.broker.stats(&StatsFilter {
        include_clients: true,
        ..StatsFilter::default()
    });
    let producers = st.producers.expect("producers");
    let ids: Vec<&str> = producers.iter().map(|p| p.client_id.as_str()).collect();
    assert_eq!(ids, ["a\u{fffd}b"]);
    assert_eq!(producers[0].state, 0, "nsqd's stateInit");
}

/// nsqd counts attempts in a uint16 with `Attempts++`: the 65 536th delivery says 0.
#[cfg(not(target_arch = "wasm32"))]
#[test]
fn attempts_wrap_as_a_uint16() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sub(&mut sim, "t", "c", 1);
    let p = sim.connect();
    publish(&mut sim, p, "t", "x");
    for n in 1..=65_535u32 {
        let m = sim.messages(c);
        assert_eq!(m.len(), 1, "delivery {n}");
        assert_eq!(u32::from(m[0].attempts), n);
        sim.send(
            c,
            &Command::Req {
                id: m[0].id.to_hex(),
                timeout_ms: 0,
            },
        );
    }
    let m = sim.messages(c);
    assert_eq!(m[0].attempts, 0);
}

/// The transport learns a client's write deadline (nsqd's: its heartbeat interval) when an
/// IDENTIFY changes it from the default, and only then.
#[test]
fn identify_gives_the_transport_a_new_write_deadline() {
    use nsqlab_core::{Broker, Output, Transmit};
    let mut b = Broker::new(Options::default(), 1, 0);
    let c = b.connect(0, "127.0.0.1:5000");
    let identify = |hb: i64| {
        Command::Identify(format!(r#"{{"heartbeat_interval":{hb}}}"#).into_bytes()).to_bytes()
    };
    let deadlines = |b: &mut Broker| {
        let mut got = Vec::new();
        while let Some(o) = b.poll_output() {
            if let Output::Transmit(Transmit::WriteTimeout { client, timeout }) = o {
                assert_eq!(client, c);
                got.push(timeout);
            }
        }
        got
    };
    b.handle_bytes(1, c, b"  V2");
    b.handle_bytes(2, c, &identify(30_000));
    assert_eq!(deadlines(&mut b), vec![], "the default is no change");
    b.handle_bytes(3, c, &identify(1_000));
    assert_eq!(deadlines(&mut b), vec![Some(SECOND)]);
    b.handle_bytes(4, c, &identify(-1));
    assert_eq!(deadlines(&mut b), vec![None]);
}

/// A large MPUB is published a step at a time, and other clients are served between the
/// steps: a PUB sent after it is answered before it is, its messages arrive in order, and
/// its OK comes once all are in. Input its sender sent behind it waits for it.
#[cfg_attr(not(target_arch = "wasm32"), test)]
#[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
fn a_large_mpub_lets_other_clients_through_between_its_steps() {
    let mut sim = Sim::new(Options::default(), 1);
    let c = sub(&mut sim, "big", "c", 2500);
    let p = sim.connect();
    let q = sim.connect();
    let n = 10_000usize;
    let bodies: Vec<_> = (0..n).map(|i| i.to_string().into_bytes().into()).collect();
    let mut bytes = Command::Mpub {
        topic: "big".into(),
        bodies,
    }
    .to_bytes();
    // Behind it, on the same connection: a PUB to another topic.
    bytes.extend_from_slice(
        &Command::Pub {
            topic: "after".into(),
            body: b"after"[..].into(),
        }
        .to_bytes(),
    );
    sim.send_raw(p, &bytes);
    assert!(
        sim.frames(p).is_empty(),
        "no OK before all of it is published"
    );
    let published = |sim: &Sim| sim.broker.topic("big").unwrap().message_count;
    assert!(
        published(&sim) < n as u64,
        "{} published in one go",
        published(&sim)
    );
    // Another client is served meanwhile.
    publish(&mut sim, q, "other", "x");
    let mut answers = Vec::new();
    while published(&sim) < n as u64 {
        assert!(sim.step(sim.now() + ms(1)), "the MPUB never finished");
        answers.extend(sim.frames(p));
    }
    answers.extend(sim.frames(p));
    let ok = Frame::Response(b"OK".to_vec());
    assert_eq!(
        answers,
        vec![ok.clone(), ok],
        "the MPUB's OK, then the PUB's"
    );
    let got: Vec<usize> = sim
        .messages(c)
        .iter()
        .map(|m| String::from_utf8_lossy(&m.body).parse().unwrap())
        .collect();
    assert!(
        got == (0..2500).collect::<Vec<_>>(),
        "in order: {:?}…",
        &got[..got.len().min(10)]
    );
    let ch = sim.broker.channel("big", "c").unwrap();
    assert_eq!(ch.message_count, n as u64);
    assert!(
        sim.broker.topic("after").is_some(),
        "what followed it was read"
    );
}
