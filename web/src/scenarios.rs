//! The scenario library: each sets up producers, consumers and a script on fresh labs.

use crate::i18n::Text;
use crate::lab::{Cue, Lab};
use nsqlab_core::protocol::Command;
use nsqlab_core::time::ms;
use nsqlab_core::{Options, TimerStrategy};

/// One scenario.
pub struct Scenario {
    pub id: &'static str,
    /// Catalogue keys of its title and its text.
    pub title: &'static str,
    pub text: &'static str,
    /// The topic and channel it uses (the forms start with them).
    pub topic: &'static str,
    pub channel: &'static str,
    /// The labs to run side by side (most scenarios have one), with a catalogue key for each
    /// one's heading ("" when there is one lab).
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
    lab.add_consumer(Lab::consumer(
        Text::new("name.billing-worker"),
        "orders",
        "billing",
        10,
    ));
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
    let mut c = Lab::consumer(Text::new("name.archive-worker"), "events", "archive", 200);
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
    lab.add_consumer(Lab::consumer(
        Text::new("name.billing-service"),
        "orders",
        "billing",
        5,
    ));
    // Shipping is slower than billing: each channel goes at its consumer's pace.
    let mut shipping = Lab::consumer(Text::new("name.shipping-service"), "orders", "shipping", 5);
    shipping.processing_ms = 1200;
    lab.add_consumer(shipping);
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
        ("name.slow-worker", 1, 1500),
        ("name.medium-worker", 2, 700),
        ("name.fast-worker", 4, 300),
    ] {
        let mut c = Lab::consumer(Text::new(name), "jobs", "workers", rdy);
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
    let mut a = Lab::consumer(Text::new("name.worker-a"), "jobs", "workers", 1);
    a.msg_timeout_ms = 3000;
    let a = lab.add_consumer(a);
    let mut b = Lab::consumer(Text::new("name.worker-b"), "jobs", "workers", 0);
    b.msg_timeout_ms = 3000;
    let b = lab.add_consumer(b);
    let p = lab.add_producer();
    send(&mut lab, p, 100, pub_("jobs", "payment 7"));
    // worker A crashes holding it.
    lab.at(ms(150), Cue::Crash { consumer: a });
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
    let mut c = Lab::consumer(Text::new("name.flaky-mailer"), "emails", "sender", 3);
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
    let mut c = Lab::consumer(Text::new("name.archiver"), "events", "archive", 2);
    c.processing_ms = 300;
    lab.waiting.push(c);
    lab.at(ms(1500), Cue::Join { consumer: 0 });
    vec![("", lab)]
}

fn scan_vs_exact(seed: u64) -> Vec<(&'static str, Lab)> {
    let mut labs = Vec::new();
    for (label, strategy) in [
        ("pane.exact", TimerStrategy::Exact),
        ("pane.scan", TimerStrategy::ScanLoop),
    ] {
        let opts = Options {
            timer_strategy: strategy,
            ..Options::default()
        };
        let mut lab = Lab::new(opts, seed);
        let mut c = Lab::consumer(Text::new("name.timer-worker"), "timers", "alarms", 100);
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

fn crash_restart(seed: u64) -> Vec<(&'static str, Lab)> {
    let opts = Options {
        durable: true,
        mem_queue_size: 4,
        ..Options::default()
    };
    let mut lab = Lab::new(opts, seed);
    let mut c = Lab::consumer(Text::new("name.ledger"), "payments", "ledger", 2);
    c.processing_ms = 900;
    c.msg_timeout_ms = 10_000;
    lab.add_consumer(c);
    let p = lab.add_producer();
    for i in 0..8 {
        send(
            &mut lab,
            p,
            100 + i * 80,
            pub_("payments", &format!("payment {i}")),
        );
    }
    for i in 0..3 {
        send(
            &mut lab,
            p,
            200 + i * 100,
            dpub("payments", &format!("refund {i}"), 2500 + i * 500),
        );
    }
    lab.at(ms(1300), Cue::CrashRestart);
    vec![("", lab)]
}

/// Every scenario, in the order the page lists them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        id: "dpub-heap",
        topic: "orders",
        channel: "billing",
        title: "scenario.dpub-heap.title",
        text: "scenario.dpub-heap.text",
        build: dpub_heap,
    },
    Scenario {
        id: "fan-out",
        topic: "orders",
        channel: "billing",
        title: "scenario.fan-out.title",
        text: "scenario.fan-out.text",
        build: fan_out,
    },
    Scenario {
        id: "load-balance",
        topic: "jobs",
        channel: "workers",
        title: "scenario.load-balance.title",
        text: "scenario.load-balance.text",
        build: load_balance,
    },
    Scenario {
        id: "crash-timeout",
        topic: "jobs",
        channel: "workers",
        title: "scenario.crash-timeout.title",
        text: "scenario.crash-timeout.text",
        build: crash_timeout,
    },
    Scenario {
        id: "req-backoff",
        topic: "emails",
        channel: "sender",
        title: "scenario.req-backoff.title",
        text: "scenario.req-backoff.text",
        build: req_backoff,
    },
    Scenario {
        id: "overflow-disk",
        topic: "events",
        channel: "archive",
        title: "scenario.overflow-disk.title",
        text: "scenario.overflow-disk.text",
        build: overflow_disk,
    },
    Scenario {
        id: "big-heap",
        topic: "events",
        channel: "archive",
        title: "scenario.big-heap.title",
        text: "scenario.big-heap.text",
        build: big_heap,
    },
    Scenario {
        id: "crash-restart",
        topic: "payments",
        channel: "ledger",
        title: "scenario.crash-restart.title",
        text: "scenario.crash-restart.text",
        build: crash_restart,
    },
    Scenario {
        id: "cluster",
        topic: "orders",
        channel: "ledger",
        title: "scenario.cluster.title",
        text: "scenario.cluster.text",
        build: cluster,
    },
    Scenario {
        id: "replication",
        topic: "orders",
        channel: "archive",
        title: "scenario.replication.title",
        text: "scenario.replication.text",
        build: replication,
    },
    Scenario {
        id: "scan-vs-exact",
        topic: "timers",
        channel: "alarms",
        title: "scenario.scan-vs-exact.title",
        text: "scenario.scan-vs-exact.text",
        build: scan_vs_exact,
    },
];

fn replication(seed: u64) -> Vec<(&'static str, Lab)> {
    vec![("", Lab::replication(seed))]
}

fn cluster(seed: u64) -> Vec<(&'static str, Lab)> {
    vec![("", Lab::cluster(seed))]
}

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
            .any(|s| s.en().contains("disk backlog")));

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

        // After the crash, the consumer (connected again) counts what it finished before and
        // after: it adds up to the channel's count.
        let labs = run("crash-restart");
        let v = &labs[0].1.view;
        let by_consumers: u64 = v
            .actors
            .values()
            .filter(|a| a.role == crate::view::Role::Consumer)
            .map(|a| a.finished)
            .sum();
        let fin: u64 = v.channels.values().map(|c| c.finished).sum();
        assert!(
            v.crash.is_some() && by_consumers == fin,
            "{by_consumers} vs {fin}"
        );

        let labs = run("cluster");
        let c = labs[0].1.cluster.as_ref().expect("a cluster");
        // (All but the one lost with nsqd-3.)
        assert_eq!(c.readers[0].finished + c.lost, c.published);
        assert_eq!(c.lost, 1);
        assert!(labs[0].1.is_finished());

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
            .map(|s| s.en().clone())
            .collect();
        let b: Vec<String> = run("req-backoff")[0]
            .1
            .log
            .iter()
            .map(|s| s.en().clone())
            .collect();
        assert_eq!(a, b);
    }
}
