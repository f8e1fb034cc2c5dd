use super::*;

fn first(r: &Run, f: impl Fn(&Step) -> bool) -> usize {
    r.steps
        .iter()
        .position(f)
        .unwrap_or_else(|| panic!("no such step in seed {}", r.seed))
}

fn keys(s: &Step) -> Vec<&str> {
    s.says.iter().map(|x| x.key.as_str()).collect()
}

fn durable_on(s: &Shot, what: &EntryWhat) -> usize {
    s.nodes
        .iter()
        .filter(|n| n.log.iter().any(|e| e.what == *what && e.durable))
        .count()
}

/// The whole story, in order, for one seed.
fn story(seed: u64) {
    let r = run(seed);
    let elected = first(&r, |s| s.what == What::Elected);
    let serving = first(&r, |s| s.what == What::Serving);
    assert!(elected < serving);
    let leader = r.steps[serving]
        .shot
        .nodes
        .iter()
        .find(|n| n.serving)
        .expect("a serving node")
        .id;
    // #1: published, committed on a majority's disks, and only then OK.
    let publish = first(&r, |s| s.what == What::Publish);
    let ok = first(&r, |s| s.what == What::Ok);
    assert!(publish < ok);
    let pub1 = EntryWhat::Pub("#1".into());
    assert!(
        durable_on(&r.steps[ok].shot, &pub1) >= 2,
        "seed {seed}: OK before a majority had #1 on disk"
    );
    for s in &r.steps[publish..ok] {
        assert!(s.shot.producer.acked.is_empty(), "seed {seed}: acked early");
    }
    let commit = first(&r, |s| {
        s.what == What::Commit && s.shot.nodes.iter().any(|n| n.role == Role::Leader)
    });
    assert!(commit < ok || r.steps[ok].shot.nodes.iter().any(|n| n.commit >= 3));
    // #2 delivered, then the leader killed while the consumer works on it.
    let killed = first(&r, |s| s.what == What::Killed);
    let before = &r.steps[killed - 1].shot;
    assert_eq!(
        before.consumer.working,
        vec!["#2".to_string()],
        "seed {seed}"
    );
    assert_eq!(
        r.steps[killed].shot.nodes[leader as usize - 1].role,
        Role::Down
    );
    // A new leader, of a later term, serves #2 again.
    let again = first(&r, |s| s.what == What::Deliver { again: true });
    assert!(again > killed);
    let at = &r.steps[again].shot;
    let new = at.nodes.iter().find(|n| n.serving).expect("a new leader");
    assert_ne!(new.id, leader, "seed {seed}");
    assert!(new.term > r.steps[serving].shot.nodes[leader as usize - 1].term);
    assert_eq!(at.consumer.working, vec!["#2".to_string()]);
    // The killed node comes back and catches up: its log is the leader's, all on its disk.
    let started = first(&r, |s| s.what == What::Started);
    assert!(started > again);
    let end = &r.steps.last().expect("steps").shot;
    let back = &end.nodes[leader as usize - 1];
    let lead = end
        .nodes
        .iter()
        .find(|n| n.role == Role::Leader)
        .expect("a leader");
    let entries = |n: &NodeShot| n.log.iter().map(|e| (e.index, e.term)).collect::<Vec<_>>();
    assert_eq!(entries(back), entries(lead), "seed {seed}: not caught up");
    assert!(back.log.iter().all(|e| e.durable));
    assert_eq!(back.commit, lead.commit);
    assert_eq!(end.consumer.done, vec!["#1".to_string(), "#2".to_string()]);
    assert!(end.wire.is_empty() || r.steps.len() > 10);
}

#[test]
fn the_story_is_told_for_many_seeds() {
    for seed in 0..24 {
        story(seed);
    }
}

#[test]
fn every_step_changes_the_picture_and_says_what() {
    for seed in 0..8 {
        let r = run(seed);
        let mut prev = &r.start;
        for (i, s) in r.steps.iter().enumerate() {
            assert!(!s.says.is_empty(), "seed {seed} step {i}");
            assert!(
                !keys(s).contains(&"rp.d.other"),
                "seed {seed} step {i}: a change told by no words: {:?}",
                s.says
            );
            assert!(s.at >= prev_at(&r, i), "time goes back at step {i}");
            fn known(x: &Say) {
                assert!(
                    crate::words::word(&x.key).is_some(),
                    "no words for {:?}",
                    x.key
                );
                for (_, a) in &x.args {
                    if let Arg::Say(y) = a {
                        known(y);
                    }
                }
            }
            s.says.iter().for_each(known);
            for zh in [false, true] {
                let w = crate::words::render_all(&s.says, zh);
                assert!(!w.contains('{'), "seed {seed} step {i}: {w}");
            }
            assert_ne!(
                prev, &s.shot,
                "seed {seed} step {i} ({:?}) shows nothing new",
                s.says
            );
            prev = &s.shot;
        }
    }
}

fn prev_at(r: &Run, i: usize) -> u64 {
    if i == 0 {
        0
    } else {
        r.steps[i - 1].at
    }
}

#[test]
fn a_seed_replays_exactly_and_travels_as_json() {
    let a = run(7);
    assert_eq!(a, run(7));
    let back = LabRun::decode(&run_json(r#"{"seed": 7}"#)).expect("a run");
    assert_eq!(a.for_lab(), back);
    assert_eq!(
        picture_of(7, 3, false),
        crate::picture::html(a.shot(3), false)
    );
    assert!(picture_of(8, 3, false).is_empty(), "seed 8 was not played");
    assert!(LabRun::decode(&run_json("nonsense")).is_err_and(|e| e.contains("expected")));
}

/// `cargo test -p nsqlab-web-raft --features play dump -- --ignored --nocapture`: the run's
/// steps, for reading.
#[test]
#[ignore]
fn dump() {
    let seed = std::env::var("SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let r = run(seed);
    for (i, s) in r.steps.iter().enumerate() {
        let says: Vec<String> = s.says.iter().map(|x| format!("{x:?}")).collect();
        let nodes: Vec<String> = s
            .shot
            .nodes
            .iter()
            .map(|n| {
                let log: Vec<String> = n
                    .log
                    .iter()
                    .map(|e| format!("{}{}", e.index, if e.durable { "" } else { "*" }))
                    .collect();
                format!(
                    "{}:{:?} t{} c{} v{} [{}] {}{:?}{:?}",
                    n.id,
                    n.role,
                    n.term,
                    n.commit,
                    n.voted,
                    log.join(" "),
                    if n.serving { "S" } else { "" },
                    n.waiting,
                    n.in_flight
                )
            })
            .collect();
        let wire: Vec<String> = s
            .shot
            .wire
            .iter()
            .map(|w| format!("{}>{} {:?}", w.from, w.to, w.kind))
            .collect();
        println!(
            "{i:3} {:>8.3}ms {:?} {}\n      {}\n      wire {} | P {:?} C {:?}",
            s.at as f64 / 1e6,
            s.what,
            says.join(" + "),
            nodes.join(" | "),
            wire.join(", "),
            s.shot.producer,
            s.shot.consumer
        );
    }
}
