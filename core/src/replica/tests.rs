//! Replicated groups under the simulation: the paths one at a time, then seeded runs of
//! random faults checked against the promises (see `random_faults_keep_every_promise`).

use super::sim::{ClusterSim, Handle};
use super::*;
use crate::protocol::{Command, Frame};
use crate::store::StoreOp;
use crate::time::{ms, SECOND};
use crate::Options;
use std::collections::{BTreeMap, BTreeSet};

fn opts() -> Options {
    Options {
        msg_timeout: 2 * SECOND,
        ..Options::default()
    }
}

fn elected(sim: &mut ClusterSim) -> NodeId {
    assert!(
        sim.run_until(10 * SECOND, |s| s.serving().is_some()),
        "a leader serves within 10 s"
    );
    sim.serving().expect("serving")
}

fn publish(sim: &mut ClusterSim, h: Handle, body: &str) {
    sim.send(
        h,
        &Command::Pub {
            topic: "orders".into(),
            body: body.into(),
        },
    );
}

/// Elect a leader, publish `body` to it and wait until it is answered and every node has
/// applied it (the followers learn the commit with the next heartbeat, 200 ms later); the
/// leader.
fn published_everywhere(sim: &mut ClusterSim, body: &str) -> NodeId {
    let leader = elected(sim);
    let p = sim.connect(leader);
    sim.sleep(ms(50));
    publish(sim, p, body);
    sim.sleep(ms(500));
    assert_eq!(oks(&sim.frames(p)), 1);
    leader
}

/// A node of the group 1, 2, 3 other than `leader`.
fn follower_of(leader: NodeId) -> NodeId {
    if leader == 1 {
        2
    } else {
        1
    }
}

fn oks(frames: &[Frame]) -> usize {
    frames
        .iter()
        .filter(|f| matches!(f, Frame::Response(r) if r == b"OK"))
        .count()
}

fn consumer(sim: &mut ClusterSim, node: NodeId) -> Handle {
    let c = sim.connect(node);
    sim.send(
        c,
        &Command::Sub {
            topic: "orders".into(),
            channel: "ledger".into(),
        },
    );
    sim.send(c, &Command::Rdy(100));
    c
}

fn bodies(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Message(m) => Some(String::from_utf8_lossy(&m.body).into_owned()),
            _ => None,
        })
        .collect()
}

#[test]
fn three_nodes_elect_one_leader_and_a_publish_is_answered_once_a_quorum_has_it() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 7);
    sim.delay = (ms(5), ms(5));
    let leader = elected(&mut sim);
    let p = sim.connect(leader);
    sim.sleep(ms(20));
    sim.frames(p);
    publish(&mut sim, p, "first");
    // The entry is on the leader's disk, not yet on a follower's: no OK.
    assert_eq!(oks(&sim.frames(p)), 0, "no OK before the followers answer");
    // One round trip to the followers (5 ms each way) later, it is committed.
    sim.sleep(ms(11));
    assert_eq!(oks(&sim.frames(p)), 1);
    // Every node applies it.
    sim.sleep(ms(300));
    for id in [1, 2, 3] {
        let (replay, _) = sim.node(id).expect("up").applied();
        assert_eq!(replay.survivors().count(), 1, "node {id} has the message");
    }
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
}

#[test]
fn a_leader_cut_off_from_its_followers_never_acknowledges_and_is_replaced() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 11);
    let old = elected(&mut sim);
    let p = sim.connect(old);
    sim.sleep(ms(50));
    sim.frames(p);
    sim.isolate(old);
    publish(&mut sim, p, "lost in the minority");
    sim.sleep(5 * SECOND);
    assert_eq!(oks(&sim.frames(p)), 0, "the minority side never says OK");
    // The old leader gave up (check-quorum) and closed its clients; the majority elected another.
    assert!(!sim.is_connected(p), "the publisher was cut off");
    let new = sim.serving().expect("the majority serves");
    assert_ne!(new, old);
    sim.heal();
    sim.sleep(2 * SECOND);
    // The unacknowledged publish is nowhere.
    for id in [1, 2, 3] {
        let (replay, _) = sim.node(id).expect("up").applied();
        assert_eq!(replay.survivors().count(), 0, "node {id}");
    }
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
}

#[test]
fn the_leader_killed_with_a_message_in_flight_a_follower_redelivers_it() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 3);
    let old = elected(&mut sim);
    let p = sim.connect(old);
    let c = consumer(&mut sim, old);
    publish(&mut sim, p, "order 1");
    publish(&mut sim, p, "order 2");
    sim.sleep(ms(100));
    assert_eq!(oks(&sim.frames(p)), 2);
    let got = sim.frames(c);
    assert_eq!(bodies(&got), ["order 1", "order 2"]);
    // FIN the first; the second is in flight when the leader dies.
    let first = got
        .iter()
        .find_map(|f| match f {
            Frame::Message(m) => Some(m.id),
            _ => None,
        })
        .expect("a message");
    sim.send(c, &Command::Fin(first.to_hex()));
    sim.sleep(ms(100));
    sim.crash(old);
    let new = elected(&mut sim);
    assert_ne!(new, old);
    let c = consumer(&mut sim, new);
    sim.sleep(ms(100));
    let again = sim.frames(c);
    assert_eq!(
        bodies(&again),
        ["order 2"],
        "only what was in flight comes again"
    );
    let m = again
        .iter()
        .find_map(|f| match f {
            Frame::Message(m) => Some(m.clone()),
            _ => None,
        })
        .expect("a message");
    assert_ne!(m.id, first);
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
}

#[test]
fn a_deferred_message_keeps_its_due_time_on_the_new_leader() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 5);
    let old = elected(&mut sim);
    let c = consumer(&mut sim, old);
    let p = sim.connect(old);
    let due = sim.now() + 8 * SECOND;
    sim.send(
        p,
        &Command::Dpub {
            topic: "orders".into(),
            defer_ms: 8_000,
            body: "later"[..].into(),
        },
    );
    sim.sleep(ms(100));
    assert_eq!(oks(&sim.frames(p)), 1);
    sim.crash(old);
    let new = elected(&mut sim);
    let c2 = consumer(&mut sim, new);
    let _ = c;
    // Not before its time.
    sim.advance(due - ms(1));
    assert!(bodies(&sim.frames(c2)).is_empty(), "not before it is due");
    sim.advance(due + ms(1));
    assert_eq!(bodies(&sim.frames(c2)), ["later"]);
}

#[test]
fn a_node_that_lost_its_disk_comes_back_under_a_new_id_and_catches_up_by_snapshot() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 9);
    let leader = elected(&mut sim);
    let p = sim.connect(leader);
    for i in 0..20 {
        publish(&mut sim, p, &format!("m{i}"));
    }
    sim.sleep(ms(200));
    assert_eq!(oks(&sim.frames(p)), 20);
    let gone = [1, 2, 3]
        .into_iter()
        .find(|&i| i != leader)
        .expect("a follower");
    sim.destroy(gone);
    sim.node_mut(leader)
        .expect("up")
        .propose_remove(gone)
        .expect("the leader takes the change");
    sim.sleep(ms(200));
    add_node(&mut sim, leader, 4);
    sim.sleep(SECOND);
    let mut want: Vec<u64> = sim.node(leader).expect("up").voters().to_vec();
    want.sort();
    let others: Vec<u64> = [1, 2, 3].into_iter().filter(|&i| i != gone).collect();
    assert_eq!(want, [others, vec![4]].concat());
    let (a, ai) = sim.node(leader).expect("up").applied();
    let (b, bi) = sim.node(4).expect("up").applied();
    assert_eq!(bi, ai, "the new node applied as far as the leader");
    assert_eq!(
        b.survivors().map(|s| s.msg.id).collect::<Vec<_>>(),
        a.survivors().map(|s| s.msg.id).collect::<Vec<_>>()
    );
    assert_eq!(b.survivors().count(), 20);
    // It is a full voter: with the leader gone, the two left elect one of themselves.
    sim.crash(leader);
    let next = elected(&mut sim);
    assert_ne!(next, leader);
    let c = consumer(&mut sim, next);
    sim.sleep(ms(200));
    assert_eq!(bodies(&sim.frames(c)).len(), 20);
}

/// A node whose disk is lost, started again under its old id, has forgotten what it
/// acknowledged: while the one other node with those entries is down, it must not help a node
/// that lacks them win an election (plain raft would: an empty log is never more up to date).
#[test]
fn a_node_back_empty_under_its_old_id_does_not_help_elect_one_lacking_what_it_acknowledged() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 21);
    let leader = elected(&mut sim);
    let others: Vec<NodeId> = [1, 2, 3].into_iter().filter(|&i| i != leader).collect();
    let (lag, lost) = (others[0], others[1]);
    let p = sim.connect(leader);
    for i in 0..5 {
        publish(&mut sim, p, &format!("before{i}"));
    }
    sim.sleep(ms(500));
    assert_eq!(oks(&sim.frames(p)), 5);
    assert!(
        [lag, lost]
            .iter()
            .all(|&id| !sim.nodes[&id].catching_up && !sim.node(id).expect("up").catching_up()),
        "the first voters caught up with their first leader"
    );
    // `lag` hears nothing more; the next entries are on the leader's and `lost`'s disks.
    sim.isolate(lag);
    for i in 0..5 {
        publish(&mut sim, p, &format!("while{i}"));
    }
    sim.sleep(ms(500));
    assert_eq!(oks(&sim.frames(p)), 5, "a majority took them");
    sim.wipe(lost, &[1, 2, 3]);
    sim.crash(leader);
    sim.heal();
    sim.start(lost);
    assert!(sim.node(lost).expect("up").catching_up());
    // Elections every second or two: none may succeed without the leader's disk.
    let won = sim.run_until(10 * SECOND, |s| s.serving().is_some());
    assert!(
        !won,
        "node {:?} leads without what node {leader} and node {lost} acknowledged",
        sim.serving()
    );
    assert!(
        sim.nodes[&lost].catching_up,
        "its mark stays until it catches up"
    );
    sim.start(leader);
    let next = elected(&mut sim);
    assert_eq!(next, leader, "only the leader's log has every entry");
    let c = consumer(&mut sim, next);
    sim.sleep(ms(500));
    let mut got = bodies(&sim.frames(c));
    got.sort();
    let mut want: Vec<String> = (0..5)
        .flat_map(|i| [format!("before{i}"), format!("while{i}")])
        .collect();
    want.sort();
    assert_eq!(got, want);
    assert!(
        sim.run_until(5 * SECOND, |s| !s.nodes[&lost].catching_up),
        "node {lost} catches up from the leader and says so"
    );
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
    // A full voter again: with the leader gone, the two left elect one of themselves.
    sim.crash(leader);
    let next = elected(&mut sim);
    assert_ne!(next, leader);
    let c = consumer(&mut sim, next);
    sim.sleep(ms(500));
    assert_eq!(
        bodies(&sim.frames(c)).len(),
        10,
        "redelivered: none was finished"
    );
}

/// A follower whose disk is lost, started again under its old id while its leader lives: the
/// leader remembers what the old disk acknowledged (raft's `matched`), and must neither take
/// the new disk for it nor send it a commit index beyond its log.
#[test]
fn a_follower_back_empty_under_its_old_id_catches_up_from_a_leader_that_remembers_it() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 23);
    let leader = elected(&mut sim);
    let lost = follower_of(leader);
    let p = sim.connect(leader);
    for i in 0..5 {
        publish(&mut sim, p, &format!("m{i}"));
    }
    sim.sleep(ms(500));
    assert_eq!(oks(&sim.frames(p)), 5);
    sim.wipe(lost, &[1, 2, 3]);
    sim.sleep(ms(300));
    sim.start(lost);
    assert!(
        sim.run_until(5 * SECOND, |s| !s.nodes[&lost].catching_up),
        "node {lost} catches up; the leader's view: {}",
        sim.node(leader).expect("up").debug_progress()
    );
    // (Its acknowledgement reaches the leader after it caught up.)
    sim.sleep(ms(300));
    let (commit, peers) = sim.node(leader).expect("up").progress();
    assert!(peers.contains(&(lost, commit)), "{peers:?} at {commit}");
    let (a, _) = sim.node(leader).expect("up").applied();
    let (b, _) = sim.node(lost).expect("up").applied();
    assert_eq!(b.survivors().count(), a.survivors().count());
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
    // And it is a copy: the leader gone, the other two elect one of themselves, with all five.
    sim.crash(leader);
    let next = elected(&mut sim);
    let c = consumer(&mut sim, next);
    sim.sleep(ms(500));
    assert_eq!(bodies(&sim.frames(c)).len(), 5);
}

#[test]
fn a_restarted_node_rebuilds_its_state_from_its_disk() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 13);
    let leader = elected(&mut sim);
    let p = sim.connect(leader);
    for i in 0..5 {
        publish(&mut sim, p, &format!("m{i}"));
    }
    sim.sleep(ms(200));
    assert_eq!(power_cut_then_consume(&mut sim).len(), 5);
}

/// The power goes on all three nodes at once and comes back: what a consumer of the new
/// leader is sent within 200 ms.
fn power_cut_then_consume(sim: &mut ClusterSim) -> Vec<String> {
    for id in [1, 2, 3] {
        sim.crash(id);
    }
    for id in [1, 2, 3] {
        sim.start(id);
    }
    let leader = elected(sim);
    let c = consumer(sim, leader);
    sim.sleep(ms(200));
    bodies(&sim.frames(c))
}

#[test]
fn only_a_new_commit_index_is_written_lazily_and_losing_it_loses_nothing() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 17);
    let mut last: BTreeMap<NodeId, (u64, u64)> = sim
        .nodes
        .iter()
        .map(|(id, n)| (*id, (n.disk.hard_state.term, n.disk.hard_state.vote)))
        .collect();
    sim.record();
    let leader = published_everywhere(&mut sim, "kept");
    let mut lazy = 0;
    for s in sim.take_seen() {
        let super::sim::Seen::Writing { node, persist } = s else {
            continue;
        };
        let vote = persist.hard_state.as_ref().map(|h| (h.term, h.vote));
        let same_vote = vote.is_none() || vote == last.get(&node).copied();
        if let Some(v) = vote {
            last.insert(node, v);
        }
        let only_commit = persist.snapshot.is_none() && persist.entries.is_empty() && same_vote;
        assert_eq!(persist.lazy, only_commit, "node {node}: {persist:?}");
        lazy += usize::from(persist.lazy);
    }
    assert!(lazy > 0, "commits were written");
    // A follower was told its new commit index is written; its disk has an older one.
    let f = follower_of(leader);
    let committed = sim.node(f).expect("up").raw.raft.raft_log.committed;
    assert!(sim.nodes[&f].disk.hard_state.commit < committed);
    // The power goes everywhere at once: whatever lazy writes are lost, the message is not.
    assert_eq!(power_cut_then_consume(&mut sim), vec!["kept".to_string()]);
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
}

#[test]
fn a_followers_bodies_are_ranges_of_the_frame_their_entry_came_in() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 23);
    let leader = published_everywhere(&mut sim, "shared");
    for f in [1, 2, 3].into_iter().filter(|&id| id != leader) {
        let node = sim.node(f).expect("up");
        let replay = &node.raw.store().applied.replay;
        let bodies: Vec<_> = replay.survivors().map(|s| s.msg.body.clone()).collect();
        assert_eq!(bodies.len(), 1, "node {f}");
        let (buf, range) = bodies[0].backing();
        assert_eq!(&buf[range], b"shared");
        // Its buffer is the whole frame the append came in, not a copy of the entry.
        let frame = decode_message(buf).expect("the buffer is a raft message");
        assert_eq!(frame.get_msg_type(), MessageType::MsgAppend, "node {f}");
        // Nothing applied is left waiting: the node let go of the frame.
        assert!(node.frames.is_empty(), "node {f}");
    }
}

#[test]
fn a_refused_appends_frame_is_let_go_at_once() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 29);
    let leader = elected(&mut sim);
    let f = follower_of(leader);
    let now = sim.now();
    let node = sim.node_mut(f).expect("up");
    let term = node.raw.raft.term;
    // An append after a log position the follower does not have: raft refuses it.
    let mut m = RaftMessage::default();
    m.set_msg_type(MessageType::MsgAppend);
    (m.from, m.to, m.term) = (leader, f, term);
    (m.index, m.log_term) = (1000, term);
    m.entries = vec![Entry {
        index: 1001,
        term,
        data: Batch {
            proposer: leader,
            through: 1,
            ops: Vec::new(),
        }
        .encode()
        .into(),
        ..Default::default()
    }]
    .into();
    let frame: Arc<[u8]> = encode_message(&m).into();
    let back = decode_frame(&frame).expect("decodes");
    node.handle_frame(now, back, frame.clone());
    assert!(node.frames.is_empty());
    assert_eq!(Arc::strong_count(&frame), 1, "nothing else holds the frame");
}

/// FIN every message `c` received since the last call; how many.
fn finish_received(sim: &mut ClusterSim, c: Handle) -> usize {
    let mut received = 0;
    for f in sim.frames(c) {
        if let Frame::Message(m) = f {
            received += 1;
            sim.send(c, &Command::Fin(m.id.to_hex()));
        }
    }
    received
}

/// FIN everything `c` is sent for a second (RDY 100: a hundred at a time); how many it got.
fn finish_for_a_second(sim: &mut ClusterSim, c: Handle) -> usize {
    let mut received = 0;
    for _ in 0..10 {
        received += finish_received(sim, c);
        sim.sleep(ms(100));
    }
    received
}

/// A new machine `id`, added to the group by its leader.
fn add_node(sim: &mut ClusterSim, leader: NodeId, id: NodeId) {
    sim.add_machine(id);
    sim.node_mut(leader)
        .expect("up")
        .propose_add(id, "")
        .expect("the leader takes the change");
}

/// Every node's disk holds a snapshot past the bootstrap one, and a log no bigger than the
/// compaction rule allows after it (4 KiB or the snapshot's size, and what one wake-up adds).
fn assert_compacted(sim: &ClusterSim) {
    for id in [1, 2, 3] {
        let disk = &sim.nodes[&id].disk;
        assert!(
            disk.snapshot.get_metadata().index > 1,
            "node {id} never compacted"
        );
        let log: usize = disk.entries.iter().map(|e| e.data.len()).sum();
        let snap = disk.snapshot.data.len();
        assert!(
            log <= snap.max(4096) + 8192,
            "node {id} keeps {log} bytes of log after a {snap}-byte snapshot"
        );
    }
}

#[test]
fn the_log_is_compacted_and_what_is_finished_is_forgotten() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 21);
    let leader = elected(&mut sim);
    let p = sim.connect(leader);
    let c = consumer(&mut sim, leader);
    for i in 0..300 {
        publish(&mut sim, p, &format!("m{i} {}", "x".repeat(100)));
        sim.sleep(ms(2));
    }
    sim.sleep(ms(300));
    assert_eq!(oks(&sim.frames(p)), 300);
    assert_eq!(finish_for_a_second(&mut sim, c), 300);
    sim.sleep(ms(500));
    // 30 KB of bodies went through a log compacted once it holds 4 KiB or as much as the
    // last snapshot.
    assert_compacted(&sim);
    for id in [1, 2, 3] {
        let (replay, _) = sim.node(id).expect("up").applied();
        assert_eq!(replay.survivors().count(), 0, "node {id}");
        assert!(
            replay.topics["orders"].kept() <= 1,
            "node {id} keeps what is finished"
        );
    }
    // Restarted from the compacted disks, the group goes on.
    for id in [1, 2, 3] {
        sim.crash(id);
        sim.start(id);
    }
    let leader = elected(&mut sim);
    let p = sim.connect(leader);
    let c = consumer(&mut sim, leader);
    publish(&mut sim, p, "after");
    sim.sleep(ms(300));
    assert_eq!(bodies(&sim.frames(c)), ["after"]);
}

#[test]
fn a_snapshot_is_built_while_the_node_goes_on_and_then_compacts_the_log() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 25);
    // Each snapshot takes 300 ms to build: far longer than a publish's round trip.
    sim.build_delay = (ms(300), ms(300));
    let leader = elected(&mut sim);
    let p = sim.connect(leader);
    let c = consumer(&mut sim, leader);
    let mut sent = 0;
    let mut received = 0;
    let mut step = |sim: &mut ClusterSim, sent: &mut usize| {
        publish(sim, p, &format!("m{sent} {}", "x".repeat(100)));
        *sent += 1;
        received += finish_received(sim, c);
        sim.sleep(ms(2));
    };
    while !sim.building(leader) {
        step(&mut sim, &mut sent);
        assert!(sent < 1000, "the leader never asked for a snapshot");
    }
    sim.frames(p);
    let first = sim.nodes[&leader].disk.snapshot.get_metadata().index;
    // While it is built, publishes are still answered and the disk keeps its old snapshot.
    for _ in 0..50 {
        step(&mut sim, &mut sent);
    }
    assert!(sim.building(leader), "still building");
    let answered = oks(&sim.frames(p));
    assert!(
        answered >= 40,
        "publishes are answered meanwhile: {answered} of 50 (sent {sent})"
    );
    assert_eq!(sim.nodes[&leader].disk.snapshot.get_metadata().index, first);
    // Once built, it compacts the log: every node's disk starts at a later snapshot.
    sim.sleep(ms(400));
    received += finish_received(&mut sim, c);
    sim.sleep(ms(100));
    assert_eq!(received, sent);
    let now = sim.nodes[&leader].disk.snapshot.get_metadata().index;
    assert!(now > first, "the snapshot was written ({first} then {now})");
    // The log after it holds what came meanwhile, not what the snapshot stands for.
    let disk = &sim.nodes[&leader].disk;
    assert!(disk.entries.iter().all(|e| e.index > now));
}

#[test]
fn a_node_added_before_any_compaction_is_sent_a_snapshot_that_names_it() {
    let mut sim = ClusterSim::unstarted(&[1, 2, 3], opts(), 27);
    // The log is never compacted for its size: the only snapshot is the bootstrap one, whose
    // members do not include the new node (raft would not restore it there).
    sim.compact_bytes = 1 << 30;
    sim.start_all();
    let leader = elected(&mut sim);
    let p = sim.connect(leader);
    for i in 0..20 {
        publish(&mut sim, p, &format!("m{i}"));
    }
    sim.sleep(ms(200));
    assert_eq!(oks(&sim.frames(p)), 20);
    add_node(&mut sim, leader, 4);
    sim.sleep(SECOND);
    let (a, ai) = sim.node(leader).expect("up").applied();
    let (b, bi) = sim.node(4).expect("up").applied();
    assert_eq!(bi, ai, "the new node applied as far as the leader");
    assert_eq!(b.survivors().count(), 20);
    assert_eq!(
        b.survivors().map(|s| s.msg.id).collect::<Vec<_>>(),
        a.survivors().map(|s| s.msg.id).collect::<Vec<_>>()
    );
    assert!(sim.nodes[&4].disk.snapshot.get_metadata().index > 1);
}

/// The error frames in `frames`, as text.
fn errors(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Error(e) => Some(String::from_utf8_lossy(e).into_owned()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_full_backlog_refuses_publishes_on_every_leader_until_consumers_bring_it_below() {
    let mut sim = ClusterSim::unstarted(&[1, 2, 3], opts(), 31);
    // A message counts its body and 64 bytes: ten of 100 bytes fill the limit.
    sim.max_backlog_bytes = 10 * (100 + 64);
    sim.start_all();
    let old = elected(&mut sim);
    let p = sim.connect(old);
    for i in 0..10 {
        publish(&mut sim, p, &format!("{i:0>100}"));
        sim.sleep(ms(20));
    }
    assert_eq!(oks(&sim.frames(p)), 10);
    publish(&mut sim, p, "one too many");
    sim.sleep(ms(20));
    let full =
        "E_PUB_FAILED PUB failed replicated backlog full: 1640 bytes owed, the limit is 1640";
    assert_eq!(errors(&sim.frames(p)), [full]);
    // A new leader restores the same backlog, and refuses as well.
    sim.sleep(ms(300));
    sim.crash(old);
    let new = elected(&mut sim);
    assert_ne!(new, old);
    let p = sim.connect(new);
    publish(&mut sim, p, "still too many");
    sim.sleep(ms(20));
    assert_eq!(errors(&sim.frames(p)), [full]);
    // Consumed, the backlog is below the limit: publishes are taken again.
    let c = consumer(&mut sim, new);
    assert_eq!(finish_for_a_second(&mut sim, c), 10);
    let p = sim.connect(new);
    publish(&mut sim, p, "after");
    sim.sleep(ms(100));
    let frames = sim.frames(p);
    assert_eq!((oks(&frames), errors(&frames).len()), (1, 0));
    assert_eq!(bodies(&sim.frames(c)), ["after"]);
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
}

#[test]
fn a_leader_whose_disk_is_low_refuses_publishes_until_it_has_room() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 33);
    let leader = elected(&mut sim);
    let low = "too little room on disk: 5 bytes free";
    sim.node_mut(leader)
        .expect("up")
        .set_disk_low(Some(low.into()));
    let p = sim.connect(leader);
    publish(&mut sim, p, "refused");
    sim.sleep(ms(50));
    assert_eq!(
        errors(&sim.frames(p)),
        [format!("E_PUB_FAILED PUB failed {low}")]
    );
    sim.node_mut(leader).expect("up").set_disk_low(None);
    let p = sim.connect(leader);
    publish(&mut sim, p, "taken");
    sim.sleep(ms(50));
    let frames = sim.frames(p);
    assert_eq!((oks(&frames), errors(&frames).len()), (1, 0));
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
}

#[test]
fn a_log_of_messages_still_owed_is_not_snapshotted_until_a_snapshot_halves_it() {
    let mut sim = ClusterSim::new(&[1, 2, 3], opts(), 23);
    let leader = elected(&mut sim);
    let p = sim.connect(leader);
    // 30 KB of messages nobody consumes: a snapshot would hold all of them again.
    for i in 0..300 {
        publish(&mut sim, p, &format!("m{i} {}", "x".repeat(100)));
        sim.sleep(ms(2));
    }
    sim.sleep(ms(300));
    assert_eq!(oks(&sim.frames(p)), 300);
    for id in [1, 2, 3] {
        let disk = &sim.nodes[&id].disk;
        let log: usize = disk.entries.iter().map(|e| e.data.len()).sum();
        assert!(log > 4096 * 4, "node {id}: {log} bytes of log");
        assert_eq!(
            disk.snapshot.get_metadata().index,
            1,
            "node {id} wrote a snapshot of what its log already holds"
        );
    }
    // Consumed, the messages are owed no more: the next entries bring a snapshot.
    let c = consumer(&mut sim, leader);
    assert_eq!(finish_for_a_second(&mut sim, c), 300);
    publish(&mut sim, p, "one more");
    sim.sleep(ms(300));
    assert_compacted(&sim);
}

#[test]
fn a_snapshot_of_the_replay_rebuilds_the_same_replay() {
    // A replay built from a run of every kind of op, and one built from its snapshot ops.
    let mut sim = crate::sim::Sim::new(
        Options {
            durable: true,
            ..Options::default()
        },
        1,
    );
    let p = sim.connect();
    let c = sim.connect();
    sim.send(
        p,
        &Command::Pub {
            topic: "held".into(),
            body: "h"[..].into(),
        },
    );
    sim.send(
        c,
        &Command::Sub {
            topic: "t".into(),
            channel: "a".into(),
        },
    );
    sim.send(c, &Command::Rdy(10));
    for i in 0..6 {
        sim.send(
            p,
            &Command::Dpub {
                topic: "t".into(),
                defer_ms: i * 100,
                body: format!("{i}")[..].into(),
            },
        );
    }
    sim.sleep(ms(250));
    let got = sim.messages(c);
    sim.send(c, &Command::Fin(got[0].id.to_hex()));
    sim.send(
        c,
        &Command::Req {
            id: got[1].id.to_hex(),
            timeout_ms: 5000,
        },
    );
    sim.broker
        .pause_channel(sim.now(), "t", "a", true)
        .expect("pause");
    sim.broker.empty_topic(sim.now(), "held").expect("empty");
    sim.send(
        p,
        &Command::Pub {
            topic: "held".into(),
            body: "h2"[..].into(),
        },
    );
    sim.flush();
    let a = sim.store.replay.clone();
    let mut b = Replay::new();
    let ops = a.to_ops();
    assert!(ops.iter().any(|o| matches!(o, StoreOp::Requeued { .. })));
    for op in &ops {
        b.apply(op);
    }
    let view = |r: &Replay| {
        r.survivors()
            .map(|s| {
                (
                    s.topic.to_string(),
                    s.channel.map(|c| c.to_string()),
                    s.msg.id,
                    s.due,
                    s.msg.body.to_vec(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(view(&b), view(&a));
    assert!(!view(&a).is_empty());
    let meta = |r: &Replay| {
        r.topics
            .iter()
            .map(|(n, t)| {
                (
                    n.to_string(),
                    t.paused,
                    t.channels
                        .iter()
                        .map(|(c, ch)| (c.to_string(), ch.start, ch.paused))
                        .collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(meta(&b), meta(&a));
    // And through the codec, as a snapshot travels.
    let data = Batch {
        proposer: 0,
        through: 0,
        ops,
    }
    .encode();
    let c = replay_of(&data).expect("decodes");
    assert_eq!(view(&c), view(&a));
}

/// What one seeded run saw.
#[derive(Default)]
struct Ledger {
    /// Bodies answered `OK`.
    acked: BTreeSet<String>,
    /// Bodies delivered (at least once).
    delivered: BTreeSet<String>,
    /// Bodies sent on the producer's current connection, oldest first, awaiting an answer.
    waiting: std::collections::VecDeque<String>,
    /// Publishes refused because the backlog was full.
    refused: usize,
}

/// One seed: a group of 3 or 5 under random faults for 30 virtual seconds, a producer that
/// publishes (PUB and DPUB) to whichever node serves, a consumer that finishes most of what it
/// gets and lets some time out; then every fault repaired. The promises: at most one leader
/// per term; nothing delivered before its due time; every acknowledged message delivered.
/// One seed in seven caps the backlog ([`NodeConfig::max_backlog_bytes`]), so publishes are
/// refused at times too. What it returns: how many were acknowledged, and refused.
fn run_seed(seed: u64) -> Result<(usize, usize), String> {
    let five = seed % 4 == 3;
    let voters: Vec<NodeId> = if five {
        vec![1, 2, 3, 4, 5]
    } else {
        vec![1, 2, 3]
    };
    let mut sim = ClusterSim::unstarted(&voters, opts(), seed);
    if seed % 7 == 5 {
        // Some 20 to 70 messages: reached when the consumer falls behind (a failover).
        sim.max_backlog_bytes = 1500 + seed % 4000;
    }
    let limited = sim.max_backlog_bytes > 0;
    sim.start_all();
    sim.loss_per_mille = sim.random(60) as u32;
    let spread = ms(1 + sim.random(40));
    sim.delay = (ms(1), spread);
    // Disks from fast to slower than the network.
    let slow = 100_000 + sim.random(8_000_000);
    sim.disk_delay = (50_000, slow);
    let mut l = Ledger::default();
    let mut producer: Option<Handle> = None;
    let mut cons: Option<Handle> = None;
    let mut n = 0u64;
    let mut next_id: NodeId = voters.len() as NodeId + 1;
    // Members whose disks are gone, waiting to be removed, and machines waiting to be added.
    let mut to_remove: Vec<NodeId> = Vec::new();
    let mut to_add: Vec<NodeId> = Vec::new();
    let mut repairs: Vec<(Time, NodeId)> = Vec::new();
    let mut heal_at: Option<Time> = None;
    let end = 30 * SECOND;
    let mut next_fault = SECOND * 2;
    let check = |sim: &mut ClusterSim,
                 l: &mut Ledger,
                 cons: &mut Option<Handle>,
                 producer: &mut Option<Handle>|
     -> Result<(), String> {
        let now = sim.now();
        if let Some(p) = *producer {
            for f in sim.frames(p) {
                match f {
                    Frame::Response(r) if r == b"OK" => {
                        if let Some(b) = l.waiting.pop_front() {
                            l.acked.insert(b);
                        }
                    }
                    Frame::Error(e) => {
                        let e = String::from_utf8_lossy(&e);
                        if !(limited && e.contains("failed replicated backlog full")) {
                            return Err(format!("publisher got {e}"));
                        }
                        // Fatal: the connection closes, what it awaited stays unanswered.
                        l.refused += 1;
                    }
                    _ => {}
                }
            }
            if !sim.is_connected(p) {
                l.waiting.clear();
            }
        }
        if let Some(c) = *cons {
            for f in sim.frames(c) {
                if let Frame::Message(m) = f {
                    let body = String::from_utf8_lossy(&m.body).into_owned();
                    let due: Time = body
                        .split('@')
                        .nth(1)
                        .and_then(|d| d.parse().ok())
                        .unwrap_or(0);
                    if now < due {
                        return Err(format!("{body} delivered at {now}, before it was due"));
                    }
                    l.delivered.insert(body);
                    // Most are finished; one in five is left to time out and come again.
                    if m.id.0 % 5 != 0 || m.attempts > 1 {
                        sim.send(c, &Command::Fin(m.id.to_hex()));
                    }
                }
            }
        }
        Ok(())
    };
    while sim.now() < end + 40 * SECOND {
        let now = sim.now();
        let faults = now < end;
        // Faults: a crash (back within 4 s), a node cut off (healed within 4 s), or, in a
        // group with no change pending and every node up, a disk lost: the machine replaced
        // by one with a new id, or started again under its old id on a new disk (catching
        // up: `NodeConfig::catching_up`).
        if faults && now >= next_fault {
            next_fault = now + ms(500 + sim.random(2500));
            let ids: Vec<NodeId> = sim.nodes.keys().copied().collect();
            let victim = ids[sim.random(ids.len() as u64) as usize];
            match sim.random(10) {
                0..=3 => {
                    sim.crash(victim);
                    repairs.push((now + ms(200 + sim.random(4000)), victim));
                }
                4..=7 => {
                    sim.isolate(victim);
                    heal_at = Some(now + ms(200 + sim.random(4000)));
                }
                _ => {
                    // A disk is lost only from a group at full strength: every voter up, with
                    // the leader's configuration applied and its log caught up (a voter just
                    // added, still empty, is no copy yet: losing another then would lose the
                    // quorum's copies, beyond what any promise covers).
                    // (A node catching up is no copy yet either; a leader's view of it may
                    // be what it had before its disk went.)
                    let all_up = sim
                        .nodes
                        .values()
                        .all(|s| s.node.is_some() && !s.catching_up);
                    let settled = sim.serving().and_then(|l| sim.node(l)).is_some_and(|l| {
                        let (commit, peers) = l.progress();
                        let voters = l.voters().to_vec();
                        peers.iter().all(|(_, matched)| *matched >= commit)
                            && sim
                                .nodes
                                .values()
                                .all(|s| s.node.as_ref().is_some_and(|n| n.voters() == voters))
                    });
                    if all_up && settled && to_remove.is_empty() && to_add.is_empty() {
                        if sim.random(2) == 0 {
                            sim.destroy(victim);
                            to_remove.push(victim);
                            to_add.push(next_id);
                            next_id += 1;
                        } else {
                            sim.wipe(victim, &voters);
                            repairs.push((now + ms(200 + sim.random(4000)), victim));
                        }
                    }
                }
            }
        }
        if !faults {
            sim.heal();
            sim.loss_per_mille = 0;
            for (_, id) in repairs.drain(..) {
                sim.start(id);
            }
        }
        repairs.retain(|&(at, id)| {
            if at <= now {
                sim.start(id);
                false
            } else {
                true
            }
        });
        if heal_at.is_some_and(|t| t <= now) {
            sim.heal();
            heal_at = None;
        }
        // The operator: one membership change at a time, on whichever node leads.
        if let Some(leader) = sim.serving() {
            if let Some(&old) = to_remove.first() {
                let node = sim.node_mut(leader).expect("serving");
                if !node.voters().contains(&old) {
                    to_remove.clear();
                } else {
                    let _ = node.propose_remove(old);
                }
            } else if let Some(&new) = to_add.first() {
                if !sim.nodes.contains_key(&new) {
                    sim.add_machine(new);
                }
                let node = sim.node_mut(leader).expect("serving");
                if node.voters().contains(&new) {
                    to_add.clear();
                } else {
                    let _ = node.propose_add(new, "");
                }
            }
        }
        // Clients follow the serving node, as they follow nsqlookupd.
        if let Some(leader) = sim.serving() {
            let p = *producer.get_or_insert_with(|| sim.connect(leader));
            if !sim.is_connected(p) {
                // What the lost connection never answered stays unanswered.
                l.waiting.clear();
                sim.attach(p, leader);
            }
            let c = match cons {
                Some(c) => c,
                None => {
                    let c = consumer(&mut sim, leader);
                    cons = Some(c);
                    c
                }
            };
            if !sim.is_connected(c) {
                sim.attach(c, leader);
                sim.send(
                    c,
                    &Command::Sub {
                        topic: "orders".into(),
                        channel: "ledger".into(),
                    },
                );
                sim.send(c, &Command::Rdy(100));
            }
            if faults && sim.is_connected(p) {
                n += 1;
                let defer = if n.is_multiple_of(3) {
                    sim.random(3000)
                } else {
                    0
                };
                let body = format!("m{n}@{}", sim.now() + ms(defer));
                l.waiting.push_back(body.clone());
                if defer > 0 {
                    sim.send(
                        p,
                        &Command::Dpub {
                            topic: "orders".into(),
                            defer_ms: defer,
                            body: body[..].into(),
                        },
                    );
                } else {
                    sim.send(
                        p,
                        &Command::Pub {
                            topic: "orders".into(),
                            body: body[..].into(),
                        },
                    );
                }
            }
        }
        check(&mut sim, &mut l, &mut cons, &mut producer)?;
        sim.sleep(ms(50));
        check(&mut sim, &mut l, &mut cons, &mut producer)?;
        let caught_up = sim.nodes.values().all(|s| !s.catching_up);
        if !faults
            && l.acked.is_subset(&l.delivered)
            && to_remove.is_empty()
            && to_add.is_empty()
            && caught_up
        {
            break;
        }
    }
    if !sim.violations.is_empty() {
        return Err(sim.violations.join("; "));
    }
    let behind: Vec<NodeId> = sim
        .nodes
        .iter()
        .filter(|(_, s)| s.catching_up)
        .map(|(id, _)| *id)
        .collect();
    if !behind.is_empty() {
        return Err(format!(
            "never caught up, every node up and healed: {behind:?}"
        ));
    }
    let lost: Vec<&String> = l.acked.difference(&l.delivered).collect();
    if !lost.is_empty() {
        if std::env::var("NSQLAB_REPLICA_DEBUG").is_ok() {
            let leader = sim.serving();
            eprintln!(
                "serving {leader:?} now {} remove {to_remove:?} add {to_add:?}",
                sim.now()
            );
            for (id, sn) in &sim.nodes {
                match &sn.node {
                    Some(n) => eprintln!(
                        "node {id}: {:?} term {} leader {} voters {:?} progress {:?} {}",
                        n.role(),
                        n.term(),
                        n.leader_id(),
                        n.voters(),
                        n.progress(),
                        n.debug_progress()
                    ),
                    None => eprintln!("node {id}: down"),
                }
            }
            for (id, sn) in &sim.nodes {
                let Some(node) = &sn.node else { continue };
                let (r, idx) = node.applied();
                for b in &lost {
                    let s: Vec<String> = r
                        .survivors()
                        .filter(|s| &*String::from_utf8_lossy(&s.msg.body) == b.as_str())
                        .map(|s| format!("{:?} {:?} {:?}", s.channel, s.due, s.msg.id))
                        .collect();
                    eprintln!("node {id} applied {idx}: {b}: {s:?}");
                }
            }
            if let Some(b) = leader.and_then(|id| sim.node(id)).and_then(|n| n.broker()) {
                eprintln!(
                    "{}",
                    serde_json::to_string(&b.stats(&Default::default())).unwrap_or_default()
                );
            }
        }
        return Err(format!(
            "{} acknowledged, never delivered: {:?}",
            lost.len(),
            &lost[..lost.len().min(5)]
        ));
    }
    if l.acked.is_empty() {
        return Err("nothing was acknowledged".into());
    }
    Ok((l.acked.len(), l.refused))
}

/// The seeded runs: `NSQLAB_REPLICA_SEEDS` of them (default 200; `scripts/replica-sim.sh` runs
/// thousands), each a fresh group with its own faults.
#[test]
fn random_faults_keep_every_promise() {
    let seeds: u64 = std::env::var("NSQLAB_REPLICA_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let first: u64 = std::env::var("NSQLAB_REPLICA_FIRST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut failed = BTreeMap::new();
    let (mut acked, mut refused) = (0, 0);
    for seed in first..first + seeds {
        match run_seed(seed) {
            Ok((a, r)) => {
                acked += a;
                refused += r;
            }
            Err(e) => {
                failed.insert(seed, e);
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {seeds} seeds failed: {failed:#?}",
        failed.len()
    );
    assert!(
        acked as u64 > seeds * 50,
        "too little was published: {acked}"
    );
    assert!(
        seeds < 100 || refused > 0,
        "no seed's backlog was ever full: the limit went untested"
    );
}
