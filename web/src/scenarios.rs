//! The scenario library: each sets up producers, consumers and a script on fresh labs.

use crate::lab::{Cue, Lab};
use nsqlab_core::protocol::Command;
use nsqlab_core::time::ms;
use nsqlab_core::{Options, TimerStrategy};

/// One scenario.
pub struct Scenario {
    pub id: &'static str,
    pub title: &'static str,
    pub text: &'static str,
    /// The topic and channel it uses (the forms start with them).
    pub topic: &'static str,
    pub channel: &'static str,
    /// The labs to run side by side (most scenarios have one).
    pub build: fn(u64) -> Vec<(&'static str, Lab)>,
}

fn send(lab: &mut Lab, p: usize, t_ms: u64, cmd: Command) {
    lab.at(ms(t_ms), Cue::Send { producer: p, cmd });
}

fn pub_(topic: &str, body: &str) -> Command {
    Command::Pub {
        topic: topic.into(),
        body: body.as_bytes().into(),
    }
}

fn dpub(topic: &str, body: &str, defer_ms: u64) -> Command {
    Command::Dpub {
        topic: topic.into(),
        defer_ms,
        body: body.as_bytes().into(),
    }
}

fn dpub_heap(seed: u64) -> Vec<(&'static str, Lab)> {
    let mut lab = Lab::new(Options::default(), seed);
    lab.add_consumer(Lab::consumer("billing worker", "orders", "billing", 10));
    let p = lab.add_producer();
    for (i, d) in [5000u64, 3000, 4000, 1000, 2000, 6000, 1500]
        .into_iter()
        .enumerate()
    {
        send(
            &mut lab,
            p,
            100 + i as u64 * 50,
            dpub("orders", &format!("order {i}"), d),
        );
    }
    vec![("", lab)]
}

/// Messages in the big-heap scenario.
pub const BIG_HEAP: u64 = 10_000;

fn big_heap(seed: u64) -> Vec<(&'static str, Lab)> {
    let mut lab = Lab::new(Options::default(), seed);
    let mut c = Lab::consumer("archive worker", "events", "archive", 200);
    c.processing_ms = 5;
    lab.add_consumer(c);
    let p = lab.add_producer();
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in 0..BIG_HEAP {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Published over the first second, due 5 to 25 s later: all pending at once.
        send(
            &mut lab,
            p,
            100 + i / 10,
            dpub("events", &format!("event {i}"), 5000 + x % 20_000),
        );
    }
    vec![("", lab)]
}

fn fan_out(seed: u64) -> Vec<(&'static str, Lab)> {
    let mut lab = Lab::new(Options::default(), seed);
    lab.add_consumer(Lab::consumer("billing service", "orders", "billing", 5));
    lab.add_consumer(Lab::consumer("shipping service", "orders", "shipping", 5));
    let p = lab.add_producer();
    for i in 0..4 {
        send(
            &mut lab,
            p,
            200 + i * 400,
            pub_("orders", &format!("order {i}")),
        );
    }
    vec![("", lab)]
}

fn load_balance(seed: u64) -> Vec<(&'static str, Lab)> {
    let mut lab = Lab::new(Options::default(), seed);
    for (name, rdy, work) in [
        ("slow worker", 1, 1500),
        ("medium worker", 2, 700),
        ("fast worker", 4, 300),
    ] {
        let mut c = Lab::consumer(name, "jobs", "workers", rdy);
        c.processing_ms = work;
        lab.add_consumer(c);
    }
    let p = lab.add_producer();
    for i in 0..20 {
        send(
            &mut lab,
            p,
            100 + i * 100,
            pub_("jobs", &format!("job {i}")),
        );
    }
    vec![("", lab)]
}

fn crash_timeout(seed: u64) -> Vec<(&'static str, Lab)> {
    let mut lab = Lab::new(Options::default(), seed);
    let mut a = Lab::consumer("worker A", "jobs", "workers", 1);
    a.msg_timeout_ms = 3000;
    let a = lab.add_consumer(a);
    let mut b = Lab::consumer("worker B", "jobs", "workers", 0);
    b.msg_timeout_ms = 3000;
    let b = lab.add_consumer(b);
    lab.at(ms(50), Cue::Crash { consumer: a });
    let p = lab.add_producer();
    send(&mut lab, p, 100, pub_("jobs", "payment 7"));
    // The steady consumer becomes ready after the crash.
    lab.at(
        ms(500),
        Cue::SetRdy {
            consumer: b,
            rdy: 1,
        },
    );
    vec![("", lab)]
}

fn req_backoff(seed: u64) -> Vec<(&'static str, Lab)> {
    let mut lab = Lab::new(Options::default(), seed);
    let mut c = Lab::consumer("flaky mailer", "emails", "sender", 3);
    c.fail_rate = 60;
    c.req_delay_ms = 800;
    c.processing_ms = 200;
    lab.add_consumer(c);
    let p = lab.add_producer();
    for i in 0..4 {
        send(
            &mut lab,
            p,
            100 + i * 150,
            pub_("emails", &format!("email {i}")),
        );
    }
    vec![("", lab)]
}

fn overflow_disk(seed: u64) -> Vec<(&'static str, Lab)> {
    let opts = Options {
        mem_queue_size: 4,
        ..Options::default()
    };
    let mut lab = Lab::new(opts, seed);
    lab.create_channel("events", "archive");
    let p = lab.add_producer();
    for i in 0..10 {
        send(
            &mut lab,
            p,
            100 + i * 100,
            pub_("events", &format!("event {i}")),
        );
    }
    let mut c = Lab::consumer("archiver", "events", "archive", 2);
    c.processing_ms = 300;
    lab.waiting.push(c);
    lab.at(ms(1500), Cue::Join { consumer: 0 });
    vec![("", lab)]
}

fn scan_vs_exact(seed: u64) -> Vec<(&'static str, Lab)> {
    let mut labs = Vec::new();
    for (label, strategy) in [
        ("exact timers (nsqlab)", TimerStrategy::Exact),
        ("100 ms scan loop (nsqd)", TimerStrategy::ScanLoop),
    ] {
        let opts = Options {
            timer_strategy: strategy,
            ..Options::default()
        };
        let mut lab = Lab::new(opts, seed);
        let mut c = Lab::consumer("timer worker", "timers", "c", 100);
        c.processing_ms = 10;
        lab.add_consumer(c);
        let p = lab.add_producer();
        for i in 0..20u64 {
            send(
                &mut lab,
                p,
                100,
                dpub("timers", &format!("t{i}"), 137 + i * 91),
            );
        }
        labs.push((label, lab));
    }
    labs
}

/// Every scenario, in the order the page lists them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        id: "dpub-heap",
        topic: "orders",
        channel: "billing",
        title: "DPUB through the deferred heap",
        text: "Seven orders are published with different delays. Each goes into the channel's deferred min-heap: pushed at the end, then swapped with its parent while it is due sooner. The root is always the next message due; when its time comes it is popped (the last entry moves to the root and sifts down) and delivered — exactly on time.",
        build: dpub_heap,
    },
    Scenario {
        id: "fan-out",
        topic: "orders",
        channel: "billing",
        title: "Fan-out to two channels",
        text: "A topic copies every message to each of its channels. Billing and shipping each get their own copy and consume at their own pace.",
        build: fan_out,
    },
    Scenario {
        id: "load-balance",
        topic: "jobs",
        channel: "workers",
        title: "Load-balancing by RDY",
        text: "Three consumers share one channel. Each says with RDY how many messages it can hold at once (1, 2 and 4); the channel hands messages out round-robin to whoever has room, so the fast worker does most of the work.",
        build: load_balance,
    },
    Scenario {
        id: "crash-timeout",
        topic: "jobs",
        channel: "workers",
        title: "Consumer crash → in-flight timeout → redelivery",
        text: "A consumer takes a message and crashes without answering. The message stays in flight until its msg_timeout passes (3 s here), then goes back to the queue and is delivered to another consumer, with attempts = 2.",
        build: crash_timeout,
    },
    Scenario {
        id: "req-backoff",
        topic: "emails",
        channel: "sender",
        title: "REQ with backoff",
        text: "A flaky consumer fails most messages and answers REQ with a delay that grows with each attempt. A requeued message waits in the deferred heap until its retry time.",
        build: req_backoff,
    },
    Scenario {
        id: "overflow-disk",
        topic: "events",
        channel: "archive",
        title: "Memory queue overflowing to disk",
        text: "The channel keeps --mem-queue-size messages (4 here) in memory; the rest go to the disk backlog, in order. When a consumer arrives it drains memory first, then the backlog.",
        build: overflow_disk,
    },
    Scenario {
        id: "big-heap",
        topic: "events",
        channel: "archive",
        title: "10 000 deferred messages",
        text: "Ten thousand DPUBs with random delays of 5 to 25 s. However many are waiting, the heap is only 14 levels deep: a push or a pop swaps at most 13 times, and the root is always the next message due. The drawing shows the top levels and counts the rest.",
        build: big_heap,
    },
    Scenario {
        id: "scan-vs-exact",
        topic: "timers",
        channel: "c",
        title: "nsqd's 100 ms scan loop versus exact timers",
        text: "The same 20 DPUBs under two timer strategies. nsqd looks for due messages by scanning a random sample of channels every 100 ms, so deliveries come late; nsqlab keeps one timer per channel and fires it exactly when due. The chart shows each message's lateness.",
        build: scan_vs_exact,
    },
];

/// Find a scenario by its URL id.
pub fn find(id: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsqlab_core::time::SECOND;

    fn run(id: &str) -> Vec<(&'static str, Lab)> {
        let mut labs = (find(id).unwrap().build)(1);
        for (_, lab) in &mut labs {
            lab.run_until(30 * SECOND);
        }
        labs
    }

    #[test]
    fn every_scenario_runs_and_drains() {
        assert!(SCENARIOS.len() >= 7);
        for s in SCENARIOS {
            for (_, lab) in run(s.id) {
                assert!(!lab.log.is_empty(), "{} did nothing", s.id);
                for c in lab.view.channels.values() {
                    assert!(
                        c.queue.is_empty() && c.heap.is_empty() && c.in_flight.is_empty(),
                        "{}: {c:?}",
                        s.id
                    );
                    assert!(c.finished > 0, "{}", s.id);
                }
            }
        }
    }

    #[test]
    fn scenario_facts() {
        let labs = run("fan-out");
        let l = &labs[0].1;
        assert_eq!(
            l.view
                .channels
                .values()
                .map(|c| c.finished)
                .collect::<Vec<_>>(),
            vec![4, 4]
        );

        let labs = run("crash-timeout");
        let c = labs[0].1.view.channels.values().next().unwrap();
        assert_eq!((c.timed_out, c.finished), (1, 1));

        let labs = run("overflow-disk");
        assert!(labs[0]
            .1
            .log
            .iter()
            .any(|s| s.text.contains("disk backlog")));

        let labs = run("scan-vs-exact");
        let late = |l: &Lab| {
            l.view
                .lateness
                .iter()
                .map(|l| l.found - l.due)
                .collect::<Vec<_>>()
        };
        assert!(late(&labs[0].1).iter().all(|&x| x == 0));
        assert!(late(&labs[1].1).iter().any(|&x| x > 0));
        assert_eq!(late(&labs[1].1).len(), 20);

        let labs = run("req-backoff");
        assert!(labs[0].1.view.channels.values().next().unwrap().requeued > 0);

        // The big heap holds all 10 000 at once, 14 levels deep, and delivers each on time.
        let mut labs = (find("big-heap").unwrap().build)(1);
        let lab = &mut labs[0].1;
        lab.run_until(2 * SECOND);
        let c = lab.view.channels.values().next().unwrap();
        assert_eq!(c.heap.len() as u64, BIG_HEAP);
        for i in 1..c.heap.len() {
            assert!(c.heap[(i - 1) / 2].1 <= c.heap[i].1, "heap order at {i}");
        }
        lab.run_until(30 * SECOND);
        assert_eq!(lab.view.lateness.len() as u64, BIG_HEAP);
        assert!(lab
            .view
            .lateness
            .iter()
            .all(|l| l.found == l.due && l.sent == Some(l.due)));
    }

    #[test]
    fn same_seed_same_story() {
        let a: Vec<String> = run("req-backoff")[0]
            .1
            .log
            .iter()
            .map(|s| s.text.clone())
            .collect();
        let b: Vec<String> = run("req-backoff")[0]
            .1
            .log
            .iter()
            .map(|s| s.text.clone())
            .collect();
        assert_eq!(a, b);
    }
}
