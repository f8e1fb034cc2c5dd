//! The lab's behaviour, item by item of what a learner must be able to trust.

use super::*;
use crate::i18n::Text;
use crate::scenarios::{find, SCENARIOS};
use crate::view::Spot;
use nsqlab_core::time::{MILLISECOND, SECOND};
use std::collections::BTreeSet;

fn lab(id: &str) -> Lab {
    (find(id).unwrap().build)(1).remove(0).1
}

fn dpub(lab: &mut Lab, p: usize, t: Time, defer: u64, body: &str) {
    lab.at(
        t,
        Cue::Send {
            producer: p,
            cmd: Command::Dpub {
                topic: "t".into(),
                defer_ms: defer,
                body: body.as_bytes().into(),
            },
        },
    );
}

/// Step until a step's text starts with `prefix`.
fn step_to(lab: &mut Lab, prefix: &str) -> Step {
    for _ in 0..10_000 {
        let s = lab.step().expect("the scenario has such a step");
        if s.en().starts_with(prefix) {
            return s;
        }
    }
    panic!("no step starts with {prefix:?}");
}

/// The drawn state of every channel equals the broker's own, whenever no event is left to
/// show (between instants).
fn assert_view_is_broker(lab: &Lab, when: &str) {
    let b = &lab.sim.broker;
    for ((t, c), v) in &lab.view.channels {
        let Some(ch) = b.channel(t, c) else {
            panic!("{when}: {t}/{c} is drawn but the broker has no such channel");
        };
        let heap: Vec<_> = ch
            .deferred
            .entries()
            .iter()
            .map(|e| (e.item.id, e.key))
            .collect();
        assert_eq!(v.heap, heap, "{when}: the heap of {t}/{c}");
        assert_eq!(v.hole, None, "{when}: no hole between instants");
        let queue: Vec<_> = ch.queue.ids().collect();
        let drawn: Vec<_> = v.queue.iter().map(|c| c.id).collect();
        assert_eq!(drawn, queue, "{when}: the queue of {t}/{c}");
        assert_eq!(
            v.on_disk(),
            ch.queue.backend_len(),
            "{when}: the disk backlog of {t}/{c}"
        );
        let flying: BTreeSet<_> = ch.in_flight.iter().map(|e| e.item.msg.id).collect();
        let drawn: BTreeSet<_> = v.in_flight.iter().map(|m| m.id).collect();
        assert_eq!(drawn, flying, "{when}: in flight on {t}/{c}");
    }
}

/// Issue item 1: A change by hand applies at the current instant: the clock does not move, the rest of
/// the scenario is not played, and what the change causes comes as the next steps.
#[test]
fn by_hand_changes_apply_at_the_current_instant() {
    let mut l = lab("dpub-heap");
    let pop = step_to(&mut l, "Pop:");
    assert_eq!(pop.at, 1250 * MILLISECOND, "the first pop is at 1.25 s");
    let pending_heap = 6;
    l.publish_by_hand("orders", "hello", 0, 1);
    assert_eq!(l.now(), pop.at, "publishing by hand moved the clock");
    let last = l.log.last().unwrap();
    assert_eq!(last.at, pop.at);
    // What was left of the pop is shown (no time passed), then the publish.
    assert!(
        l.log
            .iter()
            .any(|s| s.en().contains("producer publishes hello")),
        "the publish is shown at once: {:?}",
        last.text
    );
    let heap = &l.view.channels[&("orders".into(), "billing".into())].heap;
    assert_eq!(
        heap.len(),
        pending_heap,
        "the rest of the scenario was played"
    );
    let next = l.step().unwrap();
    assert_eq!(
        next.at, pop.at,
        "the publish's consequences come next, at once"
    );

    // RDY by hand in "REQ with backoff" at 0.25 s, "create topic" at 1.5 s.
    let mut l = lab("req-backoff");
    l.run_until(250 * MILLISECOND);
    let c = l.consumers[0].id;
    l.set_rdy_by_hand(c, 0);
    assert_eq!(l.now(), 250 * MILLISECOND);
    assert!(l.log.last().unwrap().en().contains("sends RDY 0"));
    let mut l = lab("overflow-disk");
    l.run_until(1500 * MILLISECOND);
    l.admin_by_hand(Admin::CreateTopic, "audit", "").unwrap();
    assert_eq!(l.now(), 1500 * MILLISECOND);
    assert!(l
        .log
        .last()
        .unwrap()
        .en()
        .starts_with("Topic audit is created"));
}

/// Issue item 2: A consumer that joins while messages wait handles its first batch like any other.
#[test]
fn a_consumer_that_joins_while_messages_wait_answers_them() {
    let mut l = lab("overflow-disk");
    l.run_until(30 * SECOND);
    let c = &l.view.channels[&("events".into(), "archive".into())];
    assert_eq!(
        (c.finished, c.timed_out, c.requeued),
        (10, 0, 0),
        "{:?}",
        l.log.iter().rev().take(5).collect::<Vec<_>>()
    );
    assert!(l.log.iter().all(|s| !s.en().contains("never answered")));
    // Drained in the order published: memory first, then the backlog, which is that order.
    let sent: Vec<String> = l
        .log
        .iter()
        .map(|s| s.en())
        .filter_map(|t| t.split_once(" is sent to ").map(|(l, _)| l.to_string()))
        .collect();
    let want: Vec<String> = (0..10).map(|i| format!("event {i}")).collect();
    assert_eq!(sent, want);

    // By hand: three messages wait, then a consumer is added.
    let mut l = Lab::new(Options::default(), 2);
    l.create_channel("t", "c");
    l.publish_by_hand("t", "m", 0, 3);
    l.run_until(SECOND);
    let a = l.add_consumer_by_hand("t", "c", 3);
    l.run_until(20 * SECOND);
    let a = &l.view.actors[&a];
    assert_eq!((a.received, a.finished, a.timed_out), (3, 3, 0));
}

/// Issue item 10: the disk backlog is explained as it is: "full" only when memory holds
/// --mem-queue-size, otherwise the order rule.
#[test]
fn the_disk_backlog_is_explained_as_it_is() {
    let mut l = lab("overflow-disk");
    l.run_until(1600 * MILLISECOND);
    let full: Vec<_> = l
        .log
        .iter()
        .filter(|s| s.en().contains("goes to the disk backlog"))
        .collect();
    assert_eq!(full.len(), 6, "events 4 to 9 find memory full");
    assert!(full
        .iter()
        .all(|s| s.en().contains("is full (4 of 4, the --mem-queue-size)")));
    let c = &l.view.channels[&("events".into(), "archive".into())];
    assert_eq!(
        (c.in_memory(), c.on_disk()),
        (2, 6),
        "the archiver took two from memory"
    );
    l.publish_by_hand("events", "late", 0, 1);
    l.flush_instant();
    let said = &l
        .log
        .iter()
        .rev()
        .find(|s| s.en().contains("late"))
        .unwrap()
        .text;
    assert!(
        l.log.iter().any(|s| s.en().starts_with("The memory queue of channel archive holds 2 of 4, but 6 older messages already wait on disk: to keep the order, late joins the disk backlog behind them.")),
        "{said}"
    );
}

/// Issue item 4: Simulated clients answer heartbeats: after 30 virtual minutes, played in 5 s ticks as
/// 100× does, publishing and consuming still work and nobody was disconnected.
#[test]
fn thirty_virtual_minutes_later_it_still_works() {
    let mut l = lab("dpub-heap");
    let mut t = 0;
    while t < 30 * 60 * SECOND {
        t += 5 * SECOND;
        l.run_until(t);
    }
    assert_eq!(l.now(), 30 * 60 * SECOND);
    let closed: Vec<_> = l
        .log
        .iter()
        .filter(|s| s.en().contains("disconnected"))
        .collect();
    assert!(closed.is_empty(), "{closed:?}");
    l.publish_by_hand("orders", "late order", 0, 1);
    l.run_until(t + 5 * SECOND);
    let c = &l.view.channels[&("orders".into(), "billing".into())];
    assert_eq!(c.finished, 8, "the new message was consumed");
    assert!(l
        .log
        .iter()
        .any(|s| s.en().starts_with("producer publishes late order")));
    assert!(l
        .log
        .iter()
        .any(|s| s.en().starts_with("billing worker is done with late order")));
}

/// Issue item 5: At every step the picture is the state the text describes: each claim holds in the
/// view when its step is shown, and between instants the view is the broker's own state.
#[test]
fn every_step_of_every_scenario_shows_what_it_says() {
    for s in SCENARIOS {
        for (title, mut l) in (s.build)(1) {
            let mut n = 0;
            while let Some(step) = l.step() {
                n += 1;
                if let Err(e) = l.view.check(&step.claims) {
                    panic!("{} {title} step {n} ({}): {e}", s.id, step.text);
                }
                if l.next_time() != Some(l.now()) {
                    assert_view_is_broker(&l, &format!("{} {title} after step {n}", s.id));
                }
                if n > 400_000 {
                    panic!("{} does not end", s.id);
                }
            }
            assert!(n > 10, "{}: {n} steps", s.id);
        }
    }
}

/// Issue item 5: A pop is shown as: the due message at the root; the root out (a hole); the last entry
/// into the hole; then each sift-down swap.
#[test]
fn a_pop_is_shown_one_move_at_a_time() {
    let mut l = lab("dpub-heap");
    let key = ("orders".to_string(), "billing".to_string());
    let due = step_to(&mut l, "It is 1.250 s: order 3 is due now");
    assert_eq!(due.claims[0].spot, Spot::Heap(0));
    let before = l.view.channels[&key].heap.clone();
    assert_eq!(l.view.label(before[0].0), "order 3", "still at the root");
    let pop = l.step().unwrap();
    assert!(
        pop.en().starts_with("Pop: order 3 leaves the root"),
        "{}",
        pop.text
    );
    let c = &l.view.channels[&key];
    assert_eq!(c.hole, Some(0));
    assert_eq!(
        c.heap.last(),
        before.last(),
        "the last entry has not moved yet"
    );
    let mv = l.step().unwrap();
    assert!(mv.en().starts_with("The last entry"), "{}", mv.text);
    let c = &l.view.channels[&key];
    assert_eq!((c.hole, c.heap.len()), (None, before.len() - 1));
    assert_eq!(c.heap[0], *before.last().unwrap(), "it moved into the hole");
    let mut swaps = 0;
    loop {
        let s = l.step().unwrap();
        if s.en().starts_with("Sift down:") {
            swaps += 1;
            continue;
        }
        assert!(
            s.en().starts_with("order 3 joins the memory queue"),
            "{}",
            s.text
        );
        break;
    }
    assert!(swaps >= 1);
}

/// Issue item 6: The end is a state of its own: no step repeats, and "Next timer" lands on the first
/// step of the next instant.
#[test]
fn the_end_is_explicit_and_next_timer_lands_on_an_instants_first_step() {
    let mut l = lab("fan-out");
    let mut all = Vec::new();
    while let Some(s) = l.step() {
        all.push(s);
    }
    assert!(l.is_finished());
    let n = l.log.len();
    assert!(l.step().is_none() && l.step().is_none());
    assert_eq!(l.log.len(), n, "nothing repeats after the end");
    assert!(l.summary().iter().any(|s| s.en().contains("finished 4")));

    // From the middle of each instant, Next timer shows the first step of the next one.
    let firsts: Vec<&Step> = all
        .iter()
        .enumerate()
        .filter(|(i, s)| *i == 0 || all[i - 1].at != s.at)
        .map(|(_, s)| s)
        .collect();
    for k in 1..all.len() {
        let mut l = lab("fan-out");
        for _ in 0..k {
            l.step();
        }
        let here = l.now();
        let got = l.next_timer();
        let want = firsts.iter().find(|s| s.at > here);
        assert_eq!(
            got.as_ref().map(|s| &s.text),
            want.map(|s| &s.text),
            "after {k} steps"
        );
    }
}

/// Issue item 7: Messages carry labels from their bodies and clients their names, the same in text and
/// drawing; per-consumer counts add up.
#[test]
fn labels_and_names() {
    let mut l = lab("dpub-heap");
    l.run_until(10 * SECOND);
    let texts: Vec<String> = l.log.iter().map(|s| s.en()).collect();
    assert!(texts.iter().any(|t| t.contains("order 3")));
    let bare: Vec<_> = texts.iter().filter(|t| t.contains('…')).collect();
    assert!(bare.is_empty(), "no bare IDs in text: {bare:?}");
    assert!(texts
        .iter()
        .all(|t| !t.contains("Consumer ") && !t.contains("client ")));
    assert!(texts
        .iter()
        .any(|t| t.starts_with("billing worker sends RDY 10")));

    let mut l = lab("load-balance");
    l.run_until(60 * SECOND);
    let c = &l.view.channels[&("jobs".into(), "workers".into())];
    let per: Vec<(String, u64)> = l
        .view
        .actors
        .values()
        .filter(|a| a.role == Role::Consumer)
        .map(|a| (a.name.en(), a.finished))
        .collect();
    assert_eq!(per.iter().map(|p| p.1).sum::<u64>(), c.finished);
    let of = |n: &str| per.iter().find(|p| p.0 == n).unwrap().1;
    assert!(of("fast worker") > of("slow worker"), "{per:?}");
}

/// A late answer (the message timed out meanwhile) is told with nsqd's error.
#[test]
fn a_late_answer_gets_nsqds_error() {
    let mut l = Lab::new(Options::default(), 5);
    let mut c = Lab::consumer(Text::plain("slowpoke"), "t", "c", 1);
    c.processing_ms = 3000;
    c.msg_timeout_ms = 1000;
    let slow = l.add_consumer(c);
    l.publish_by_hand("t", "x", 0, 1);
    l.run_until(500 * MILLISECOND);
    l.set_rdy_by_hand(slow, 0);
    let other = l.add_consumer_by_hand("t", "c", 1);
    l.set_behaviour(other, 5000, 0);
    l.run_until(3500 * MILLISECOND);
    assert!(
        l.log.iter().any(|s| s
            .en()
            .starts_with("nsqd answers slowpoke with an error: E_FIN_FAILED")
            && s.en().contains("too late")),
        "{:#?}",
        l.log
    );
}

/// Heap steps on their own: each swap is a step, and the drawn heap is the broker's.
#[test]
fn heap_view_replays_each_swap() {
    let mut l = Lab::new(Options::default(), 1);
    l.add_consumer(Lab::consumer(Text::plain("c1"), "t", "c", 10));
    let p = l.add_producer();
    for (i, d) in [500, 400, 300, 200, 100].into_iter().enumerate() {
        dpub(&mut l, p, 0, d, &format!("m{i}"));
    }
    let mut swaps = 0;
    while let Some(step) = l.step() {
        if step.en().starts_with("Sift up:") {
            swaps += 1;
            assert!(step.en().contains("is due sooner than"), "{}", step.text);
        }
        if l.next_time().is_none_or(|t| t > 0) {
            break;
        }
    }
    assert!(
        swaps >= 4,
        "each push of an earlier due time sifts up: {swaps}"
    );
    assert_view_is_broker(&l, "after the pushes");
}

#[test]
fn crash_times_out_and_redelivers() {
    let mut l = lab("crash-timeout");
    l.run_until(10 * SECOND);
    let c = &l.view.channels[&("jobs".into(), "workers".into())];
    assert_eq!((c.timed_out, c.finished), (1, 1));
    assert!(l
        .log
        .iter()
        .any(|s| s.en().contains("worker A never answered")));
    assert!(l
        .log
        .iter()
        .any(|s| s.en().contains("is sent to worker B — attempt 2")));
}

/// The manage controls: a consumer added by hand gets messages; RDY 0 stops delivery; a
/// crashed consumer's message times out and goes to the other consumer; deleting the
/// channel removes it and its consumers from the view.
#[test]
fn changes_by_hand() {
    let mut l = Lab::new(Options::default(), 7);
    let a = l.add_consumer_by_hand("t", "c", 1);
    l.set_behaviour(a, 100, 0);
    l.publish_by_hand("t", "one", 0, 1);
    l.run_until(SECOND);
    assert_eq!(l.view.channels[&("t".into(), "c".into())].finished, 1);

    l.set_rdy_by_hand(a, 0);
    l.publish_by_hand("t", "two", 0, 1);
    l.run_until(3 * SECOND);
    let c = &l.view.channels[&("t".into(), "c".into())];
    assert_eq!(
        (c.queue.len(), c.in_flight.len()),
        (1, 0),
        "RDY 0: it waits"
    );
    assert!(l.is_finished(), "nothing happens by itself");
    assert!(l.stuck()[0].en().contains("none of its consumers is ready"));

    l.set_rdy_by_hand(a, 1);
    l.toggle_crash(a);
    l.run_until(3500 * MILLISECOND);
    assert_eq!(
        l.view.channels[&("t".into(), "c".into())].in_flight.len(),
        1
    );
    let b = l.add_consumer_by_hand("t", "c", 1);
    l.remove_consumer_by_hand(a);
    l.run_until(9 * SECOND);
    let c = &l.view.channels[&("t".into(), "c".into())];
    assert_eq!((c.timed_out, c.finished), (1, 2), "{:?}", l.log.last());
    assert_eq!(c.consumers, vec![b]);
    assert_eq!(l.consumers.len(), 1, "the removed consumer is gone");

    l.admin_by_hand(Admin::CreateChannel, "t", "d").unwrap();
    assert!(l.view.channels.contains_key(&("t".into(), "d".into())));
    l.admin_by_hand(Admin::DeleteChannel, "t", "c").unwrap();
    l.run_until(l.now());
    assert!(!l.view.channels.contains_key(&("t".into(), "c".into())));
    l.run_until(9100 * MILLISECOND);
    assert!(l.consumers.is_empty(), "its consumer was closed");
    assert!(l.admin_by_hand(Admin::DeleteChannel, "t", "c").is_err());
    l.admin_by_hand(Admin::DeleteTopic, "t", "").unwrap();
    l.run_until(l.now());
    assert!(l.view.topics.is_empty() && l.view.channels.is_empty());
}

/// FIN by hand shows its effect at once, and the consumer's own answer is not sent too.
#[test]
fn answers_by_hand_show_at_once() {
    let mut l = Lab::new(Options::default(), 3);
    let a = l.add_consumer_by_hand("t", "c", 1);
    l.publish_by_hand("t", "job", 0, 1);
    l.flush_instant();
    let id = l.view.channels[&("t".into(), "c".into())].in_flight[0].id;
    l.answer_by_hand(a, id, Answer::Fin);
    assert!(
        l.log
            .last()
            .unwrap()
            .en()
            .starts_with("consumer 1 is done with job"),
        "{:?}",
        l.log.last()
    );
    l.run_until(5 * SECOND);
    assert!(l.log.iter().all(|s| !s.en().contains("E_FIN_FAILED")));
}
