//! The scenario, played by the core's cluster simulation ([`ClusterSim`]) and told one step
//! at a time.
//!
//! # The script
//!
//! Three nodes start together; one is elected. A consumer connects to the leader and
//! subscribes; a producer publishes `#1`, which goes to a majority's disks before its `OK`;
//! the consumer finishes it. `#2` is published and delivered, and the leader is killed while
//! the consumer still works on it. The two others elect a new leader, whose broker is rebuilt
//! from the log: `#2` was never finished, so it is owed again. The consumer connects to the new
//! leader and gets `#2` a second time (at-least-once). The killed node starts again from its
//! disk and catches up.
//!
//! # Steps
//!
//! The simulation records what it does ([`Seen`]). Each recorded happening is applied to the
//! picture ([`Shot`]); some are *headlines* that open a step with their words (a vote, an
//! entry proposed, a commit, an `OK`); the quiet ones (a message taken off the wire, a state
//! the next headline explains) join the step that is open. Happenings of one kind from one
//! node in a row (a vote request to each of two nodes) are one step. Whatever changes the
//! picture without a headline is told from the change itself ([`Play::describe`]), so the
//! words never leave something the picture shows untold.

use crate::*;
use nsqlab_core::protocol::{Command, Frame};
use nsqlab_core::replica::codec::Batch;
use nsqlab_core::replica::raft::eraftpb::{Entry, EntryType, MessageType};
use nsqlab_core::replica::raft::StateRole;
use nsqlab_core::replica::sim::{ClusterSim, Handle, NodeState, Seen};
use nsqlab_core::replica::NodeId;
use nsqlab_core::store::StoreOp;
use nsqlab_core::time::{ms, Time, SECOND};
use nsqlab_core::{MessageId, Options};
use std::collections::{BTreeMap, VecDeque};

const IDS: [NodeId; 3] = [1, 2, 3];
/// How long the consumer works on a message.
const WORK: Time = ms(300);
/// How long after a leader serves the clients connect to it (their lookupd query).
const FIND: Time = ms(300);
/// The scenario stops this long after the killed node starts again (it has caught up).
const TAIL: Time = 2 * SECOND;
/// A safety net: the run never goes past this.
const LIMIT: Time = 60 * SECOND;

/// Play the scenario: the whole run.
pub fn run(seed: u64) -> Run {
    let mut p = Play::new(seed);
    p.play();
    Run {
        seed,
        start: p.start,
        steps: p.steps,
    }
}

thread_local! {
    /// The runs played, by seed, for their pictures.
    static RUNS: std::cell::RefCell<BTreeMap<u64, Run>> = const { std::cell::RefCell::new(BTreeMap::new()) };
}

/// [`run`] for the page: JSON in (`{"seed": n}`), the [`LabRun`] out (as text); the run is kept for
/// [`picture_of`].
pub fn run_json(input: &str) -> String {
    #[derive(serde::Deserialize)]
    struct In {
        seed: u64,
    }
    match serde_json::from_str::<In>(input) {
        Ok(i) => {
            let r = run(i.seed);
            let out = r.for_lab().encode();
            RUNS.with(|runs| runs.borrow_mut().insert(i.seed, r));
            out
        }
        Err(e) => format!("error\t{e}"),
    }
}

/// The picture after `step` steps of the run of `seed` played by [`run_json`], as HTML.
pub fn picture_of(seed: u64, step: usize, zh: bool) -> String {
    RUNS.with(|runs| {
        runs.borrow()
            .get(&seed)
            .map(|r| crate::picture::html(r.shot(step), zh))
            .unwrap_or_default()
    })
}

fn name(id: NodeId) -> String {
    format!("nsqd-{id}")
}

/// Something the script does at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    /// The consumer connects to the serving leader (the first time, or again).
    Connect,
    Publish,
    Fin(MessageId),
    Kill(NodeId),
    Restart(NodeId),
}

/// Where the script is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for the first leader to serve.
    First,
    /// Publishing to it.
    Running,
    /// Its leader was killed: waiting for the next to serve.
    Failover,
    /// The consumer is back; the killed node will come back.
    After,
    /// The killed node is back: the run ends at this time.
    Ending(Time),
}

/// A raft message on the wire, as recorded when sent.
#[derive(Debug, Clone)]
struct Msg {
    from: NodeId,
    to: NodeId,
    kind: WireKind,
    /// Not drawn (heartbeats, commit-only appends and their answers).
    hidden: bool,
}

/// A write under way: the entries it carries (index, term), the commit index of the hard
/// state it writes, and whether it is lazy (reported before it is synced: on the disk only
/// once a later write is).
type Write = (Vec<(u64, u64)>, Option<u64>, bool);

/// What a group of happenings started from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    Arrived { seq: u64, hidden: bool },
    Durable(NodeId),
    Timer(NodeId),
    Script,
}

/// The step being told: its fold key (what continues it), words and kind.
struct Open {
    key: (u64, &'static str),
    says: Vec<Say>,
    what: What,
}

/// The consumer's and producer's ids in fold keys (nodes are 1–3).
const PRODUCER: u64 = 100;
const CONSUMER: u64 = 101;

struct Play {
    sim: ClusterSim,
    shot: Shot,
    /// The picture as the last step showed it.
    shown: Shot,
    start: Shot,
    steps: Vec<Step>,
    open: Option<Open>,
    labels: BTreeMap<MessageId, String>,
    /// Labels of PUBs sent whose message ID is not known yet.
    unlabelled: VecDeque<String>,
    pubs: usize,
    msgs: BTreeMap<u64, Msg>,
    /// Each write under way, by its node and number.
    writes: BTreeMap<(NodeId, u64), Write>,
    /// The commit index each node's disk holds.
    disk_commit: BTreeMap<NodeId, u64>,
    delivered: BTreeMap<MessageId, u32>,
    agenda: BTreeMap<(Time, u64), Act>,
    seq: u64,
    producer: Option<Handle>,
    consumer: Option<Handle>,
    phase: Phase,
    /// The first leader (killed with `#2` in flight).
    first: NodeId,
    /// The leader each node followed at its last recorded state.
    leaders: BTreeMap<NodeId, NodeId>,
    /// The vote each node last wrote: its term and candidate.
    votes: BTreeMap<NodeId, (u64, NodeId)>,
    /// The highest index each node said it has (answers saying nothing newer are not drawn).
    acked: BTreeMap<NodeId, u64>,
    /// The message whose arrival started the group being told.
    arrived: Option<Msg>,
}

impl Play {
    fn new(seed: u64) -> Play {
        let opts = Options {
            msg_timeout: 60 * SECOND,
            ..Options::default()
        };
        let mut sim = ClusterSim::new(&IDS, opts, seed);
        // No compaction in so short a run: every log is drawn from its first entry.
        sim.compact_bytes = 1 << 30;
        sim.delay = (ms(2), ms(6));
        sim.disk_delay = (ms(1), ms(3));
        let nodes = IDS
            .iter()
            .map(|&id| NodeShot {
                id,
                name: name(id),
                term: 1,
                commit: 1,
                log: vec![EntryShot {
                    index: 1,
                    term: 1,
                    what: EntryWhat::Start,
                    durable: true,
                }],
                ..NodeShot::default()
            })
            .collect();
        let mut p = Play {
            sim,
            shot: Shot {
                nodes,
                ..Shot::default()
            },
            shown: Shot::default(),
            start: Shot::default(),
            steps: Vec::new(),
            open: None,
            labels: BTreeMap::new(),
            unlabelled: VecDeque::new(),
            pubs: 0,
            msgs: BTreeMap::new(),
            writes: BTreeMap::new(),
            disk_commit: IDS.iter().map(|&id| (id, 1)).collect(),
            delivered: BTreeMap::new(),
            agenda: BTreeMap::new(),
            seq: 0,
            producer: None,
            consumer: None,
            phase: Phase::First,
            first: 0,
            leaders: BTreeMap::new(),
            votes: BTreeMap::new(),
            acked: BTreeMap::new(),
            arrived: None,
        };
        p.sim.record();
        for e in p.sim.take_seen() {
            p.apply(&e, Cause::Script);
        }
        p.start = p.shot.clone();
        p.shown = p.shot.clone();
        p
    }

    fn now(&self) -> Time {
        self.sim.now()
    }

    fn at(&mut self, t: Time, a: Act) {
        self.seq += 1;
        self.agenda.insert((t, self.seq), a);
    }

    fn node(&mut self, id: NodeId) -> &mut NodeShot {
        let i = self
            .shot
            .nodes
            .iter()
            .position(|n| n.id == id)
            .expect("a node of the group");
        &mut self.shot.nodes[i]
    }

    fn node_ref(&self, id: NodeId) -> &NodeShot {
        self.shot
            .nodes
            .iter()
            .find(|n| n.id == id)
            .expect("a node of the group")
    }

    fn serving(&self) -> Option<NodeId> {
        self.sim.serving()
    }

    // --- the script ---

    fn play(&mut self) {
        loop {
            let next_act = self.agenda.keys().next().map(|k| k.0);
            let next_sim = self.sim.next_event();
            if let Phase::Ending(end) = self.phase {
                if next_act.is_none() && next_sim.is_none_or(|t| t > end) {
                    break;
                }
            }
            let t = match (next_act, next_sim) {
                (Some(a), Some(s)) => a.min(s),
                (a, s) => match a.or(s) {
                    Some(t) => t,
                    None => break,
                },
            };
            if t > LIMIT {
                break;
            }
            if next_act == Some(t) {
                // The clock first moves to the act's time (nothing else is due before it).
                self.sim.advance(t);
                let seen = self.sim.take_seen();
                self.groups(seen);
                let (_, a) = self.agenda.pop_first().expect("listed");
                self.act(a);
            } else {
                self.sim.step(t);
                let seen = self.sim.take_seen();
                self.groups(seen);
            }
            self.react();
            if let Phase::Ending(end) = self.phase {
                if self.now() >= end {
                    break;
                }
            }
        }
        self.close();
    }

    /// What the script does about what just happened.
    fn react(&mut self) {
        let now = self.now();
        match self.phase {
            Phase::First => {
                if let Some(l) = self.serving() {
                    self.first = l;
                    self.phase = Phase::Running;
                    self.at(now + FIND, Act::Connect);
                }
            }
            Phase::Failover if self.serving().is_some() => {
                self.phase = Phase::After;
                self.at(now + FIND, Act::Connect);
            }
            _ => {}
        }
        // The consumer answers what it gets; the producer publishes once the channel exists.
        if let Some(c) = self.consumer {
            for f in self.sim.frames(c) {
                if let Frame::Message(m) = f {
                    let n = self.delivered.entry(m.id).or_default();
                    *n += 1;
                    let label = self.labels.get(&m.id).cloned().unwrap_or_default();
                    if label == "#2" && *n == 1 && self.phase == Phase::Running {
                        // The leader dies while the consumer works on #2.
                        self.at(now + WORK / 2, Act::Kill(self.first));
                    } else {
                        self.at(now + WORK, Act::Fin(m.id));
                    }
                }
            }
        }
        if let Some(p) = self.producer {
            for f in self.sim.frames(p) {
                if matches!(&f, Frame::Response(r) if r == b"OK") && self.pubs == 1 {
                    // #2 after #1 is done (its FIN is scheduled by then).
                    self.at(now + WORK * 2, Act::Publish);
                }
            }
        }
    }

    fn act(&mut self, a: Act) {
        let now = self.now();
        match a {
            Act::Connect => {
                let Some(l) = self.serving() else {
                    return;
                };
                let again = self.consumer.is_some();
                let c = match self.consumer {
                    Some(c) => {
                        self.sim.attach(c, l);
                        c
                    }
                    None => {
                        let c = self.sim.connect(l);
                        self.consumer = Some(c);
                        c
                    }
                };
                self.shot.consumer.at = Some(l);
                let say = Say::new(if again {
                    "rp.connect.again"
                } else {
                    "rp.connect"
                })
                .arg("node", name(l))
                .arg("topic", TOPIC)
                .arg("channel", CHANNEL);
                self.open_script(say, What::Connect);
                self.sim.send(
                    c,
                    &Command::Sub {
                        topic: TOPIC.into(),
                        channel: CHANNEL.into(),
                    },
                );
                self.sim.send(c, &Command::Rdy(1));
                let seen = self.sim.take_seen();
                self.within(seen);
                if !again {
                    self.at(now + FIND, Act::Publish);
                }
            }
            Act::Publish => {
                let Some(l) = self.serving() else {
                    return;
                };
                let p = match self.producer {
                    Some(p) if self.sim.is_connected(p) => p,
                    Some(p) => {
                        self.sim.attach(p, l);
                        p
                    }
                    None => {
                        let p = self.sim.connect(l);
                        self.producer = Some(p);
                        p
                    }
                };
                self.pubs += 1;
                let label = format!("#{}", self.pubs);
                self.unlabelled.push_back(label.clone());
                self.shot.producer.at = Some(l);
                self.shot.producer.waiting.push(label.clone());
                let say = Say::new("rp.publish")
                    .arg("node", name(l))
                    .arg("label", &label)
                    .arg("topic", TOPIC);
                self.open_script(say, What::Publish);
                self.sim.send(
                    p,
                    &Command::Pub {
                        topic: TOPIC.into(),
                        body: format!("order {}", self.pubs).as_str().into(),
                    },
                );
                let seen = self.sim.take_seen();
                self.within(seen);
            }
            Act::Fin(id) => {
                let Some(c) = self.consumer.filter(|c| self.sim.is_connected(*c)) else {
                    return;
                };
                let label = self.label(id);
                let Some(i) = self.shot.consumer.working.iter().position(|l| *l == label) else {
                    return;
                };
                self.shot.consumer.working.remove(i);
                self.shot.consumer.done.push(label.clone());
                let node = self.shot.consumer.at.map(name).unwrap_or_default();
                self.open_script(
                    Say::new("rp.fin").arg("label", &label).arg("node", node),
                    What::Fin,
                );
                self.sim.send(c, &Command::Fin(id.to_hex()));
                let seen = self.sim.take_seen();
                self.within(seen);
            }
            Act::Kill(id) => {
                let working = self.shot.consumer.working.join(", ");
                self.open_script(
                    Say::new("rp.kill")
                        .arg("node", name(id))
                        .arg("label", working),
                    What::Killed,
                );
                self.sim.crash(id);
                let seen = self.sim.take_seen();
                self.within(seen);
                self.phase = Phase::Failover;
            }
            Act::Restart(id) => {
                self.open_script(Say::new("rp.restart").arg("node", name(id)), What::Started);
                self.sim.start(id);
                let seen = self.sim.take_seen();
                self.within(seen);
                self.phase = Phase::Ending(now + TAIL);
            }
        }
        // Once the consumer finished #2 on the new leader, the killed node comes back.
        if let Act::Fin(id) = a {
            if self.label(id) == "#2" && self.phase == Phase::After {
                self.at(now + SECOND, Act::Restart(self.first));
            }
        }
    }

    // --- telling ---

    /// Start a step of the script's own (what a client or the operator did).
    fn open_script(&mut self, say: Say, what: What) {
        self.close();
        self.open = Some(Open {
            key: (0, "script"),
            says: vec![say],
            what,
        });
    }

    /// Happenings caused by the script's act (they continue its step).
    fn within(&mut self, seen: Vec<Seen>) {
        for e in &seen {
            self.happen(e, Cause::Script);
        }
        self.close();
        self.tell_rest(Cause::Script);
    }

    /// Split what the simulation recorded into groups by what started each, and tell them.
    fn groups(&mut self, seen: Vec<Seen>) {
        let mut cause = Cause::Script;
        for e in &seen {
            let starts = match e {
                Seen::Arrived { seq, .. } => Some(Cause::Arrived {
                    seq: *seq,
                    hidden: self.msgs.get(seq).is_none_or(|m| m.hidden),
                }),
                Seen::Durable { node, .. } => Some(Cause::Durable(*node)),
                Seen::Timer { node } => Some(Cause::Timer(*node)),
                _ => None,
            };
            if let Some(c) = starts {
                self.close();
                self.tell_rest(cause);
                cause = c;
            }
            self.happen(e, cause);
        }
        self.close();
        self.tell_rest(cause);
    }

    /// Tell the open step, if any.
    fn close(&mut self) {
        if let Some(o) = self.open.take() {
            self.push(o.says, o.what);
        }
    }

    fn push(&mut self, says: Vec<Say>, what: What) {
        self.steps.push(Step {
            at: self.now(),
            says,
            what,
            shot: self.shot.clone(),
        });
        self.shown = self.shot.clone();
    }

    /// Whether the step being told has this key.
    fn open_is(&self, key: (u64, &'static str)) -> bool {
        self.open.as_ref().is_some_and(|o| o.key == key)
    }

    /// Open a step with these words, unless the open one has the same key (it continues).
    fn head(&mut self, key: (u64, &'static str), what: What, say: impl FnOnce(&Play) -> Say) {
        if self.open_is(key) {
            return;
        }
        let say = say(self);
        self.close();
        self.open = Some(Open {
            key,
            says: vec![say],
            what,
        });
    }

    /// What changed since the last step and no headline told.
    fn tell_rest(&mut self, cause: Cause) {
        if self.shot == self.shown {
            return;
        }
        let says = self.describe(cause);
        self.push(says, What::Other);
    }

    /// The words for what changed in the picture since the last step.
    fn describe(&self, cause: Cause) -> Vec<Say> {
        let (a, b) = (&self.shown, &self.shot);
        let mut out = Vec::new();
        for (x, y) in a.nodes.iter().zip(&b.nodes) {
            if (x.role, x.term) != (y.role, y.term) {
                out.push(
                    Say::new("rp.d.role")
                        .arg("node", &y.name)
                        .nest("role", Say::new(y.role.key()))
                        .arg("term", y.term),
                );
            }
            if x.commit != y.commit {
                out.push(if y.role == Role::Leader {
                    Say::new("rp.commit")
                        .arg("node", &y.name)
                        .arg("index", y.commit)
                } else {
                    Say::new("rp.learn")
                        .arg("node", &y.name)
                        .arg("leader", name(self.leader_of(y)))
                        .arg("index", y.commit)
                });
            }
            let durable = |n: &NodeShot| n.log.iter().filter(|e| e.durable).count();
            if durable(x) != durable(y) {
                let last = y.log.iter().rfind(|e| e.durable).map_or(0, |e| e.index);
                out.push(
                    Say::new("rp.d.durable")
                        .arg("node", &y.name)
                        .arg("index", last),
                );
            }
            if x.voted != y.voted && y.voted != 0 {
                out.push(
                    Say::new("rp.d.voted")
                        .arg("node", &y.name)
                        .arg("cand", name(y.voted))
                        .arg("term", y.term),
                );
            }
            if (&x.waiting, &x.in_flight) != (&y.waiting, &y.in_flight) && y.serving {
                out.push(
                    Say::new("rp.d.channel")
                        .arg("node", &y.name)
                        .arg("waiting", y.waiting.len())
                        .arg("flight", y.in_flight.len()),
                );
            }
        }
        if let Cause::Arrived { .. } = cause {
            if let Some(m) = self.arrived.as_ref().filter(|m| !m.hidden) {
                if out.is_empty() {
                    let key = match m.kind {
                        WireKind::AppendAnswer { .. } => "rp.d.ack",
                        WireKind::PreVoteAnswer { .. } | WireKind::VoteAnswer { .. } => "rp.d.late",
                        _ => "rp.d.arrived",
                    };
                    out.push(
                        Say::new(key)
                            .nest("kind", kind_say(&m.kind))
                            .arg("from", name(m.from))
                            .arg("to", name(m.to)),
                    );
                }
            }
        }
        if out.is_empty() {
            out.push(Say::new("rp.d.other"));
        }
        out
    }

    fn leader_of(&self, n: &NodeShot) -> NodeId {
        self.sim.node(n.id).map_or(0, |x| x.leader_id())
    }

    fn label(&mut self, id: MessageId) -> String {
        if let Some(l) = self.labels.get(&id) {
            return l.clone();
        }
        let l = self
            .unlabelled
            .pop_front()
            .unwrap_or_else(|| format!("#{}", self.labels.len() + 1));
        self.labels.insert(id, l.clone());
        l
    }

    fn entry_what(&mut self, e: &Entry) -> EntryWhat {
        match e.get_entry_type() {
            EntryType::EntryConfChange | EntryType::EntryConfChangeV2 => return EntryWhat::Conf,
            EntryType::EntryNormal => {}
        }
        if e.data.is_empty() {
            return EntryWhat::Empty;
        }
        let Ok(b) = Batch::decode(&e.data) else {
            return EntryWhat::Other;
        };
        for op in &b.ops {
            match op {
                StoreOp::Publish { msg, .. } => return EntryWhat::Pub(self.label(msg.id)),
                StoreOp::Finished { ids, .. } => {
                    return EntryWhat::Fin(ids.iter().map(|i| self.label(*i)).collect())
                }
                StoreOp::ChannelCreated { .. } => return EntryWhat::Channel,
                _ => {}
            }
        }
        if b.ops
            .iter()
            .any(|o| matches!(o, StoreOp::TopicCreated { .. }))
        {
            return EntryWhat::Channel;
        }
        EntryWhat::Other
    }

    /// One happening: told (if it is a headline) and applied to the picture.
    fn happen(&mut self, e: &Seen, cause: Cause) {
        match e {
            Seen::Sent { from, msg, .. } => {
                let Some(m) = self.wire_of(*from, msg, cause) else {
                    return self.apply(e, cause);
                };
                if !m.hidden {
                    self.head_sent(&m, msg);
                }
            }
            Seen::Arrived { seq, delivered } => {
                if let Some(m) = self.msgs.get(seq).filter(|m| !m.hidden && !*delivered) {
                    let (from, to) = (m.from, m.to);
                    self.head((to, "lost"), What::Other, |_| {
                        Say::new("rp.lost")
                            .arg("from", name(from))
                            .arg("to", name(to))
                    });
                }
            }
            Seen::Writing { node, persist } => {
                if let (Some(first), Some(last)) = (persist.entries.first(), persist.entries.last())
                {
                    let (first, last) = (first.index, last.index);
                    let whats: Vec<EntryWhat> =
                        persist.entries.iter().map(|x| self.entry_what(x)).collect();
                    let node = *node;
                    if self.node_ref(node).role == Role::Leader {
                        self.head((node, "lead"), What::Propose, |p| {
                            Say::new("rp.propose")
                                .arg("node", name(node))
                                .nest("range", range(first, last))
                                .nest("what", p.whats(&whats))
                        });
                    } else {
                        let leader = self.sim.node(node).map_or(0, |n| n.leader_id());
                        self.head((node, "append"), What::Append, |p| {
                            Say::new("rp.append")
                                .arg("node", name(node))
                                .arg("leader", name(leader))
                                .nest("range", range(first, last))
                                .nest("what", p.whats(&whats))
                        });
                    }
                }
            }
            Seen::State { node, state } => self.head_state(*node, state),
            Seen::Frame {
                client,
                node,
                frame,
            } => {
                let node = *node;
                if Some(*client) == self.producer {
                    match frame {
                        Frame::Response(r) if r == b"OK" => {
                            if let Some(label) = self.shot.producer.waiting.first().cloned() {
                                self.head((PRODUCER, "ok"), What::Ok, |_| {
                                    Say::new("rp.ok")
                                        .arg("node", name(node))
                                        .arg("label", label)
                                });
                            }
                        }
                        Frame::Error(err) => {
                            let err = String::from_utf8_lossy(err).to_string();
                            self.head((PRODUCER, "error"), What::Other, |_| {
                                Say::new("rp.error")
                                    .nest("who", Say::new("rp.who.producer"))
                                    .arg("error", err)
                            });
                        }
                        _ => {}
                    }
                } else if Some(*client) == self.consumer {
                    if let Frame::Message(m) = frame {
                        let label = self.label(m.id);
                        let again = m.attempts > 1 || self.delivered.contains_key(&m.id);
                        self.head((CONSUMER, "deliver"), What::Deliver { again }, |_| {
                            Say::new(if again {
                                "rp.deliver.again"
                            } else {
                                "rp.deliver"
                            })
                            .arg("node", name(node))
                            .arg("label", label)
                        });
                    }
                }
            }
            Seen::Closed { client, node } => {
                let who = if Some(*client) == self.producer {
                    (PRODUCER, "rp.who.producer")
                } else {
                    (CONSUMER, "rp.who.consumer")
                };
                let node = *node;
                let working = if who.0 == CONSUMER {
                    self.shot.consumer.working.join(", ")
                } else {
                    String::new()
                };
                self.head((who.0, "closed"), What::Closed, |_| {
                    if working.is_empty() {
                        Say::new("rp.closed")
                            .nest("who", Say::new(who.1))
                            .arg("node", name(node))
                    } else {
                        Say::new("rp.closed.working")
                            .arg("node", name(node))
                            .arg("label", working)
                    }
                });
            }
            _ => {}
        }
        self.apply(e, cause);
    }

    /// Words for a list of entries' contents.
    fn whats(&self, whats: &[EntryWhat]) -> Say {
        let mut says: Vec<Say> = Vec::new();
        for w in whats {
            let s = what_say(w);
            if !says.contains(&s) {
                says.push(s);
            }
        }
        match says.len() {
            0 => Say::new("rp.what.other"),
            1 => says.pop().expect("one"),
            _ => {
                let last = says.pop().expect("two");
                let first = says.pop().expect("two");
                Say::new("rp.what.two").nest("a", first).nest("b", last)
            }
        }
    }

    /// A message's picture, and whether it is drawn; `None` for a heartbeat (never drawn).
    fn wire_of(&self, from: NodeId, m: &RaftMsg, cause: Cause) -> Option<Msg> {
        let kind = match m.get_msg_type() {
            MessageType::MsgHeartbeat | MessageType::MsgHeartbeatResponse => return None,
            MessageType::MsgRequestPreVote => WireKind::PreVote { term: m.term },
            MessageType::MsgRequestPreVoteResponse => WireKind::PreVoteAnswer { yes: !m.reject },
            MessageType::MsgRequestVote => WireKind::Vote { term: m.term },
            MessageType::MsgRequestVoteResponse => WireKind::VoteAnswer { yes: !m.reject },
            MessageType::MsgAppend => {
                let first = m.entries.first().map_or(m.index + 1, |e| e.index);
                let last = m.entries.last().map_or(m.index, |e| e.index);
                WireKind::Append {
                    first,
                    last,
                    commit: m.commit,
                }
            }
            MessageType::MsgAppendResponse => WireKind::AppendAnswer {
                index: m.index,
                rejected: m.reject,
            },
            _ => WireKind::Other,
        };
        let hidden = match &kind {
            // Only the commit index (or a probe): told when it changes something.
            WireKind::Append { first, last, .. } => first > last,
            // The answer to such a message, or one that says nothing new, unless it says no.
            WireKind::AppendAnswer { rejected, index } => {
                !rejected
                    && (matches!(cause, Cause::Arrived { hidden: true, .. })
                        || self.acked.get(&from).is_some_and(|a| a >= index))
            }
            _ => false,
        };
        Some(Msg {
            from,
            to: m.to,
            kind,
            hidden,
        })
    }

    fn head_sent(&mut self, m: &Msg, raw: &RaftMsg) {
        let (from, to) = (m.from, m.to);
        match m.kind.clone() {
            WireKind::PreVote { term } => self.head((from, "campaign"), What::Campaign, |_| {
                Say::new("rp.prevote")
                    .arg("node", name(from))
                    .arg("term", term)
            }),
            WireKind::PreVoteAnswer { yes } => {
                let term = raw.term;
                self.head((from, "answer"), What::Vote, |_| {
                    Say::new(if yes {
                        "rp.prevote.yes"
                    } else {
                        "rp.prevote.no"
                    })
                    .arg("node", name(from))
                    .arg("cand", name(to))
                    .arg("term", term)
                })
            }
            WireKind::Vote { term } => self.head((from, "campaign"), What::Campaign, |_| {
                Say::new("rp.ask").arg("node", name(from)).arg("term", term)
            }),
            WireKind::VoteAnswer { yes } => {
                let term = raw.term;
                self.head((from, "answer"), What::Vote, |_| {
                    Say::new(if yes { "rp.vote.yes" } else { "rp.vote.no" })
                        .arg("node", name(from))
                        .arg("cand", name(to))
                        .arg("term", term)
                })
            }
            WireKind::Append { first, last, .. } => {
                let whats: Vec<EntryWhat> =
                    raw.entries.iter().map(|e| self.entry_what(e)).collect();
                let shown = self.node_ref(from);
                let term = raw.term;
                if shown.role != Role::Leader || shown.term != term {
                    // Just elected: its first message as leader.
                    return self.head((from, "lead"), What::Elected, |_| {
                        Say::new("rp.elected")
                            .arg("node", name(from))
                            .arg("term", term)
                            .arg("index", last)
                    });
                }
                if shown.log.last().is_none_or(|e| e.index < first) {
                    // New entries: written here as they leave.
                    return self.head((from, "lead"), What::Propose, |p| {
                        Say::new("rp.propose")
                            .arg("node", name(from))
                            .nest("range", range(first, last))
                            .nest("what", p.whats(&whats))
                    });
                }
                self.head((from, "send"), What::Append, |p| {
                    Say::new("rp.send")
                        .arg("node", name(from))
                        .arg("to", name(to))
                        .nest("range", range(first, last))
                        .nest("what", p.whats(&whats))
                })
            }
            WireKind::AppendAnswer { index, rejected } => {
                self.head((from, "ack"), What::Ack, |_| {
                    Say::new(if rejected { "rp.ack.no" } else { "rp.ack" })
                        .arg("node", name(from))
                        .arg("leader", name(to))
                        .arg("index", index)
                })
            }
            WireKind::Other => self.head((from, "other"), What::Other, |_| {
                Say::new("rp.send.other")
                    .arg("node", name(from))
                    .arg("to", name(to))
            }),
        }
    }

    fn head_state(&mut self, node: NodeId, s: &NodeState) {
        let before = self.node_ref(node).clone();
        let role = role_of(s.role);
        let n = name(node);
        if role != before.role || s.term != before.term {
            let term = s.term;
            match role {
                Role::PreCandidate => self.head((node, "campaign"), What::Campaign, |_| {
                    Say::new("rp.prevote").arg("node", &n).arg("term", term + 1)
                }),
                Role::Candidate => self.head((node, "campaign"), What::Campaign, |_| {
                    Say::new("rp.campaign").arg("node", &n).arg("term", term)
                }),
                Role::Leader => self.head((node, "lead"), What::Elected, |_| {
                    Say::new("rp.elected")
                        .arg("node", &n)
                        .arg("term", term)
                        .arg("index", s.last)
                }),
                _ if self.open_is((node, "append")) => {}
                _ => {
                    let leader = s.leader;
                    let vote = self
                        .votes
                        .get(&node)
                        .filter(|v| v.0 == term && v.1 != node)
                        .map(|v| v.1);
                    let what = if vote.is_some() {
                        What::Vote
                    } else {
                        What::Other
                    };
                    self.head((node, "follow"), what, |_| {
                        if let Some(cand) = vote {
                            Say::new("rp.vote.write")
                                .arg("node", &n)
                                .arg("cand", name(cand))
                                .arg("term", term)
                        } else if leader == 0 {
                            Say::new("rp.term").arg("node", &n).arg("term", term)
                        } else {
                            Say::new("rp.follow")
                                .arg("node", &n)
                                .arg("leader", name(leader))
                                .arg("term", term)
                        }
                    })
                }
            }
        } else if s.leader != 0
            && s.leader != self.leader_seen(node)
            && role == Role::Follower
            && !self.open_is((node, "append"))
        {
            let (leader, term) = (s.leader, s.term);
            self.head((node, "follow"), What::Other, |_| {
                Say::new("rp.follow")
                    .arg("node", &n)
                    .arg("leader", name(leader))
                    .arg("term", term)
            });
        }
        if s.commit > before.commit {
            let index = s.commit;
            if role == Role::Leader {
                self.head((node, "commit"), What::Commit, |_| {
                    Say::new("rp.commit").arg("node", &n).arg("index", index)
                });
            } else {
                let leader = s.leader;
                self.head((node, "learn"), What::Learn, |_| {
                    Say::new("rp.learn")
                        .arg("node", &n)
                        .arg("leader", name(leader))
                        .arg("index", index)
                });
            }
        }
        if s.serving.is_some() && !before.serving {
            let owed: Vec<String> = s
                .channels
                .iter()
                .flat_map(|c| c.2.iter().chain(&c.3))
                .copied()
                .collect::<Vec<_>>()
                .into_iter()
                .map(|id| self.label(id))
                .collect();
            self.head((node, "serving"), What::Serving, |_| {
                if owed.is_empty() {
                    Say::new("rp.serving").arg("node", &n)
                } else {
                    Say::new("rp.serving.owed")
                        .arg("node", &n)
                        .arg("label", owed.join(", "))
                }
            });
        }
        self.leaders.insert(node, s.leader);
    }

    fn leader_seen(&self, node: NodeId) -> NodeId {
        self.leaders.get(&node).copied().unwrap_or(0)
    }

    /// Apply one happening to the picture.
    fn apply(&mut self, e: &Seen, cause: Cause) {
        match e {
            Seen::Sent {
                seq,
                from,
                arrives,
                msg,
                ..
            } => {
                if let Some(m) = self.wire_of(*from, msg, cause) {
                    if let WireKind::AppendAnswer { index, .. } = m.kind {
                        let a = self.acked.entry(*from).or_default();
                        *a = (*a).max(index);
                    }
                    if arrives.is_some() {
                        if !m.hidden {
                            self.shot.wire.push(WireShot {
                                from: m.from,
                                to: m.to,
                                kind: m.kind.clone(),
                            });
                        }
                        self.msgs.insert(*seq, m);
                    }
                }
            }
            Seen::Arrived { seq, .. } => {
                self.arrived = self.msgs.get(seq).cloned();
                if let Some(m) = self.msgs.remove(seq) {
                    if !m.hidden {
                        let shown = WireShot {
                            from: m.from,
                            to: m.to,
                            kind: m.kind,
                        };
                        if let Some(i) = self.shot.wire.iter().position(|w| *w == shown) {
                            self.shot.wire.remove(i);
                        }
                    }
                }
            }
            Seen::Writing { node, persist } => {
                let node = *node;
                let mut written = Vec::new();
                let whats: Vec<EntryWhat> =
                    persist.entries.iter().map(|x| self.entry_what(x)).collect();
                let n = self.node(node);
                if let Some(first) = persist.entries.first() {
                    n.log.retain(|x| x.index < first.index);
                }
                for (x, what) in persist.entries.iter().zip(whats) {
                    n.log.push(EntryShot {
                        index: x.index,
                        term: x.term,
                        what,
                        durable: false,
                    });
                    written.push((x.index, x.term));
                }
                if let Some(hs) = &persist.hard_state {
                    if hs.vote != 0 && hs.term == n.term {
                        n.voted = hs.vote;
                    }
                    if hs.vote != 0 {
                        self.votes.insert(node, (hs.term, hs.vote));
                    }
                }
                let commit = persist.hard_state.as_ref().map(|h| h.commit);
                self.writes
                    .insert((node, persist.number), (written, commit, persist.lazy));
            }
            Seen::Durable { node, number } => self.durable(*node, Some(*number), false),
            Seen::Crashed { node, kept } => {
                let node = *node;
                // What was written stays; what was still being written is lost.
                self.durable(node, Some(*kept), true);
                self.writes.retain(|k, _| k.0 != node);
                let commit = self.disk_commit.get(&node).copied().unwrap_or(1);
                let n = self.node(node);
                n.log.retain(|x| x.durable);
                n.role = Role::Down;
                n.serving = false;
                n.waiting.clear();
                n.in_flight.clear();
                n.commit = commit;
                self.leaders.remove(&node);
            }
            Seen::Started { node } => {
                let n = self.node(*node);
                n.role = Role::Follower;
            }
            Seen::State { node, state } => {
                let labels: Vec<(Vec<String>, Vec<String>)> = state
                    .channels
                    .iter()
                    .filter(|c| c.0 == TOPIC && c.1 == CHANNEL)
                    .map(|c| {
                        (
                            c.2.iter().map(|i| self.label(*i)).collect(),
                            c.3.iter().map(|i| self.label(*i)).collect(),
                        )
                    })
                    .collect();
                let vote = self
                    .votes
                    .get(node)
                    .filter(|v| v.0 == state.term)
                    .map_or(0, |v| v.1);
                let n = self.node(*node);
                n.voted = vote;
                n.role = role_of(state.role);
                n.term = state.term;
                n.commit = state.commit;
                n.serving = state.serving.is_some();
                let (waiting, flying) = labels.into_iter().next().unwrap_or_default();
                n.waiting = waiting;
                n.in_flight = flying;
            }
            Seen::Frame { client, frame, .. } => {
                if Some(*client) == self.producer {
                    if matches!(frame, Frame::Response(r) if r == b"OK")
                        && !self.shot.producer.waiting.is_empty()
                    {
                        let l = self.shot.producer.waiting.remove(0);
                        self.shot.producer.acked.push(l);
                    }
                } else if Some(*client) == self.consumer {
                    if let Frame::Message(m) = frame {
                        let l = self.label(m.id);
                        if !self.shot.consumer.working.contains(&l) {
                            self.shot.consumer.working.push(l);
                        }
                    }
                }
            }
            Seen::Closed { client, .. } => {
                if Some(*client) == self.producer {
                    self.shot.producer.at = None;
                } else if Some(*client) == self.consumer {
                    self.shot.consumer.at = None;
                    // A message held on a closed connection can no longer be finished.
                    self.shot.consumer.working.clear();
                }
            }
            Seen::Timer { .. } => {}
        }
    }

    /// A node's writes up to `number` are reported (`kept`: they are what a crash kept, and
    /// on its disk). Lazy writes after the last synced one stay at risk.
    fn durable(&mut self, node: NodeId, number: Option<u64>, kept: bool) {
        let Some(number) = number else { return };
        let mut done: Vec<(u64, u64)> = self
            .writes
            .range((node, 0)..=(node, number))
            .map(|(k, _)| *k)
            .collect();
        if !kept {
            let synced = done
                .iter()
                .rposition(|k| self.writes.get(k).is_some_and(|w| !w.2));
            done.truncate(synced.map_or(0, |i| i + 1));
        }
        let mut entries = Vec::new();
        for k in done {
            if let Some((w, commit, _)) = self.writes.remove(&k) {
                entries.extend(w);
                if let Some(c) = commit {
                    self.disk_commit.insert(node, c);
                }
            }
        }
        let n = self.node(node);
        for x in n.log.iter_mut() {
            if entries.contains(&(x.index, x.term)) {
                x.durable = true;
            }
        }
    }
}

type RaftMsg = nsqlab_core::replica::raft::eraftpb::Message;

fn role_of(r: StateRole) -> Role {
    match r {
        StateRole::Follower => Role::Follower,
        StateRole::PreCandidate => Role::PreCandidate,
        StateRole::Candidate => Role::Candidate,
        StateRole::Leader => Role::Leader,
    }
}

#[cfg(test)]
mod tests;
