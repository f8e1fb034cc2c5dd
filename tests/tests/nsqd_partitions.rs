//! The broker in partitions (`--partitions`), black-box: clients move to the partition that
//! owns their topic, publishes to another partition's topic are forwarded, and nothing a
//! client sees changes — every answer in order, every message delivered once, one `/stats`.

use nsqlab_core::partition_of;
use nsqlab_core::protocol::{Command, Frame};
use nsqlab_tests::tempdir::TempDir;
use nsqlab_tests::{Client, Nsqd};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// A topic owned by partition 0 and one owned by partition 1 (of 2).
fn topics(prefix: &str) -> (String, String) {
    let find = |p| {
        (0..)
            .map(|i| format!("{prefix}{i}"))
            .find(|t| partition_of(t, 2) == p)
            .unwrap()
    };
    (find(0), find(1))
}

fn sub(d: &Nsqd, topic: &str, rdy: i64) -> Client {
    let mut c = d.client();
    c.cmd(&Command::Sub {
        topic: topic.into(),
        channel: "ch".into(),
    });
    assert_eq!(c.next_text(), "R:OK");
    c.cmd(&Command::Rdy(rdy));
    c
}

/// Read messages (FIN each) until `want` bodies arrived; returns body → deliveries.
fn consume(c: &mut Client, want: usize, seen: &mut HashMap<String, u32>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < want && Instant::now() < deadline {
        match c.frame_within(Duration::from_millis(500)) {
            Some(Frame::Message(m)) => {
                *seen
                    .entry(String::from_utf8_lossy(&m.body).into_owned())
                    .or_default() += 1;
                c.cmd(&Command::Fin(m.id.to_hex()));
            }
            Some(Frame::Response(r)) if r == b"_heartbeat_" => c.cmd(&Command::Nop),
            Some(f) => panic!("unexpected {f:?}"),
            None => {}
        }
    }
}

#[test]
fn pipelined_clients_across_partitions_see_every_answer_in_order() {
    let d = Nsqd::start(&["--partitions=2"]);
    let (ta, tb) = topics("p");
    // Round-robin start: over four connections both partitions start some.
    let mut ca = sub(&d, &ta, 1000);
    let mut cb = sub(&d, &tb, 1000);

    // Four publishers, each with one stream of commands for both topics, written in odd-sized
    // pieces: the first publish moves it, later ones to the other topic are forwarded.
    let per = 150;
    let mut pubs = Vec::new();
    for p in 0..4 {
        let mut c = d.client();
        let mut bytes = Vec::new();
        for i in 0..per {
            let (topic, body) = if (i + p) % 3 == 0 {
                (&tb, format!("b-{p}-{i}"))
            } else {
                (&ta, format!("a-{p}-{i}"))
            };
            let cmd = if i % 10 == 5 {
                Command::Mpub {
                    topic: topic.as_str().into(),
                    bodies: vec![
                        body.as_bytes().into(),
                        format!("{body}-2").as_bytes().into(),
                    ],
                }
            } else {
                Command::Pub {
                    topic: topic.as_str().into(),
                    body: body.as_bytes().into(),
                }
            };
            cmd.encode(&mut bytes);
        }
        for piece in bytes.chunks(97 + p * 13) {
            c.send(piece);
        }
        pubs.push(c);
    }
    // A subscriber that publishes to the other partition's topic stays where its channel is.
    cb.cmd(&Command::Pub {
        topic: ta.as_str().into(),
        body: b"from-subscriber".as_slice().into(),
    });

    for (p, c) in pubs.iter_mut().enumerate() {
        for i in 0..per {
            assert_eq!(c.next_text(), "R:OK", "publisher {p}, answer {i}");
        }
    }

    // Expected bodies per topic.
    let mut want_a = vec!["from-subscriber".to_string()];
    let mut want_b = Vec::new();
    for p in 0..4 {
        for i in 0..per {
            let (w, body) = if (i + p) % 3 == 0 {
                (&mut want_b, format!("b-{p}-{i}"))
            } else {
                (&mut want_a, format!("a-{p}-{i}"))
            };
            if i % 10 == 5 {
                w.push(format!("{body}-2"));
            }
            w.push(body);
        }
    }
    let mut seen_a = HashMap::new();
    let mut seen_b = HashMap::new();
    consume(&mut ca, want_a.len(), &mut seen_a);
    // cb gets its PUB's OK among its messages.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut ok = false;
    while (seen_b.len() < want_b.len() || !ok) && Instant::now() < deadline {
        match cb.frame_within(Duration::from_millis(500)) {
            Some(Frame::Message(m)) => {
                *seen_b
                    .entry(String::from_utf8_lossy(&m.body).into_owned())
                    .or_default() += 1;
                cb.cmd(&Command::Fin(m.id.to_hex()));
            }
            Some(Frame::Response(r)) if r == b"OK" => ok = true,
            Some(Frame::Response(r)) if r == b"_heartbeat_" => cb.cmd(&Command::Nop),
            Some(f) => panic!("unexpected {f:?}"),
            None => {}
        }
    }
    assert!(ok, "the subscriber's publish was answered");
    want_a.sort();
    want_b.sort();
    let mut got_a: Vec<String> = seen_a.keys().cloned().collect();
    let mut got_b: Vec<String> = seen_b.keys().cloned().collect();
    got_a.sort();
    got_b.sort();
    assert_eq!(got_a, want_a);
    assert_eq!(got_b, want_b);
    assert!(seen_a.values().chain(seen_b.values()).all(|&n| n == 1));

    // One /stats for both partitions.
    let s = d.http("GET", "/stats?format=json", b"").json();
    let topics = s["topics"].as_array().unwrap();
    let count = |t: &str| {
        topics
            .iter()
            .find(|x| x["topic_name"] == t)
            .map(|x| x["message_count"].as_u64().unwrap())
    };
    assert_eq!(count(&ta), Some(want_a.len() as u64));
    assert_eq!(count(&tb), Some(want_b.len() as u64));
    let names: Vec<&str> = topics
        .iter()
        .map(|t| t["topic_name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "topics in name order");
    // The four publishers and the publishing subscriber, once each.
    assert_eq!(s["producers"].as_array().unwrap().len(), 5, "{s}");
    // A topic filter finds the topic wherever it lives.
    let s = d
        .http("GET", &format!("/stats?format=json&topic={tb}"), b"")
        .json();
    assert_eq!(s["topics"].as_array().unwrap().len(), 1);
    assert_eq!(
        s["topics"][0]["channels"][0]["clients"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn topics_are_stored_by_partition_and_restored_with_any_count() {
    let data = TempDir::new();
    let (ta, tb) = topics("s");
    {
        let d = Nsqd::start_in(Some(data.path()), &["--partitions=2"]);
        for t in [&ta, &tb] {
            for i in 0..10 {
                let r = d.http(
                    "POST",
                    &format!("/pub?topic={t}"),
                    format!("{t}-{i}").as_bytes(),
                );
                assert_eq!(r.text(), "OK");
            }
        }
        assert!(d.terminate().success());
    }
    // One partition now: it owns both topics and restores both.
    let d = Nsqd::start_in(Some(data.path()), &["--partitions=1"]);
    let s = d.http("GET", "/stats?format=json", b"").json();
    for t in [&ta, &tb] {
        let topic = s["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["topic_name"] == t.as_str())
            .unwrap_or_else(|| panic!("{t} restored: {s}"));
        assert_eq!(topic["depth"], 10);
    }
    let mut seen = HashMap::new();
    let mut c = sub(&d, &tb, 100);
    consume(&mut c, 10, &mut seen);
    assert_eq!(seen.len(), 10);
    assert!(d.terminate().success());
    // Three partitions: still both topics, the one consumed empty.
    let d = Nsqd::start_in(Some(data.path()), &["--partitions=3"]);
    let s = d.http("GET", "/stats?format=json", b"").json();
    let depth = |t: &str| {
        s["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["topic_name"] == t)
            .map(|x| x["depth"].as_u64().unwrap())
    };
    assert_eq!(depth(&ta), Some(10));
    assert_eq!(depth(&tb), Some(0));
}

/// The names of the topics `/stats` lists.
fn stats_topics(d: &Nsqd) -> Vec<String> {
    let stats = d.http("GET", "/stats?format=json", b"").json();
    let mut names: Vec<String> = stats["topics"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["topic_name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn an_mpub_refused_for_its_messages_makes_its_topic_in_its_partition() {
    let d = Nsqd::start(&["-partitions=2"]);
    // A message of size 0 in an MPUB whose body size is fine: nsqd makes the topic, then
    // refuses (fatally). Connections start in either partition; each topic is made once,
    // wherever the connection started, and also by one that published elsewhere first.
    let refused = |c: &mut Client, topic: &str| {
        let mut b = format!("MPUB {topic}\n").into_bytes();
        b.extend_from_slice(&8u32.to_be_bytes());
        b.extend_from_slice(&1u32.to_be_bytes());
        b.extend_from_slice(&0u32.to_be_bytes());
        c.send(&b);
        assert_eq!(
            c.next_text(),
            "E:E_BAD_MESSAGE MPUB invalid message(0) body size 0",
            "{topic}"
        );
        assert!(
            c.closed_within(Duration::from_secs(5)),
            "closed after {topic}"
        );
    };
    let (t0, t1) = topics("refused_");
    let mut want = Vec::new();
    for topic in [&t0, &t1, &t0, &t1] {
        refused(&mut d.client(), topic);
        want.push(topic.clone());
    }
    let (p0, p1) = topics("published_");
    for (first, then) in [(&p0, format!("{t1}_x")), (&p1, format!("{t0}_y"))] {
        let mut c = d.client();
        c.cmd(&Command::Pub {
            topic: first.as_str().into(),
            body: b"x".as_slice().into(),
        });
        assert_eq!(c.next_text(), "R:OK");
        refused(&mut c, &then);
        want.push(first.clone());
        want.push(then);
    }
    // A subscribed client stays with its channel; the topic is made in its own partition.
    let (s0, s1) = topics("subscribed_");
    for (sub_to, then) in [(&s0, format!("{t1}_s")), (&s1, format!("{t0}_s"))] {
        refused(&mut sub(&d, sub_to, 0), &then);
        want.push(sub_to.clone());
        want.push(then);
    }
    want.sort();
    want.dedup();
    let deadline = Instant::now() + Duration::from_secs(5);
    while stats_topics(&d) != want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(stats_topics(&d), want);
    // A body size out of range is refused before: no topic.
    let mut c = d.client();
    let mut b = b"MPUB never_made\n".to_vec();
    b.extend_from_slice(&0u32.to_be_bytes());
    c.send(&b);
    assert_eq!(c.next_text(), "E:E_BAD_BODY MPUB invalid body size 0");
    assert!(c.closed_within(Duration::from_secs(5)));
    assert_eq!(stats_topics(&d), want);
}

/// A publish forwarded to another partition that stores nothing there (to an ephemeral topic,
/// on a durable server) is answered at once, not whenever that partition next wakes: here the
/// partition it goes to has no clients and no timers of its own.
#[test]
fn a_forwarded_publish_that_stores_nothing_is_answered_at_once() {
    let d = Nsqd::start(&["--partitions=2"]);
    let (_, tb) = topics("e");
    let eph = (0..)
        .map(|i| format!("e{i}#ephemeral"))
        .find(|t| partition_of(t, 2) == 0)
        .unwrap();
    // The first connection starts in partition 0; its first publish, to partition 1's topic,
    // moves it there; the next, to partition 0's ephemeral topic, is forwarded back.
    let mut c = d.client();
    for (topic, body) in [(&tb, "moves"), (&eph, "forwarded")] {
        c.cmd(&Command::Pub {
            topic: topic.as_str().into(),
            body: body.as_bytes().into(),
        });
        // (Answered in milliseconds; before, only if something else woke the partition.)
        match c.frame_within(Duration::from_secs(20)) {
            Some(Frame::Response(r)) => assert_eq!(r, b"OK", "{topic}"),
            f => panic!("{topic}: {f:?} within 20 s"),
        }
    }
    // The ephemeral topic was made (in partition 0, by the forwarded publish).
    let stats = d.http("GET", "/stats?format=json", b"");
    let body = String::from_utf8_lossy(&stats.body);
    assert!(body.contains(&eph), "{body}");
}
