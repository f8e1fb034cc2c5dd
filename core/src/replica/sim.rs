//! A virtual-time network of replicated [`Node`]s and the NSQ clients around them, sans-IO
//! like everything in the core: a clock that jumps to the next event, links that drop,
//! delay (and so reorder) and can be cut, nodes that crash, restart or lose their disk, and
//! clients that speak V2 bytes to whichever node serves.
//!
//! Each node's disk is simulated too: a write takes a while (from the seed) and is reported
//! durable only then; a crash keeps the writes already reported and a seeded prefix of those
//! still under way (whole records: the server's log cuts a torn tail back to one), and loses
//! the rest. A lazy write ([`Persist::lazy`]: a commit index) is reported as soon as the
//! writes before it are, and stays at risk until a later write is durable: a crash may lose
//! it although its node was told it was written.
//!
//! Faults are the test's to choose; the network's and the disks' delays and losses come from
//! the seed, so a seed replays exactly.

use super::{Disk, Node, NodeConfig, NodeId, NodeOutput, Persist, SnapshotJob};
use crate::broker::{Output, Transmit};
use crate::options::Options;
use crate::protocol::{decode_frame, Command, Frame, MAGIC_V2};
use crate::time::{Nanos, Time};
use crate::{ClientId, MessageId};
use raft::prelude::Message as RaftMessage;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// One machine: its node while it runs, and its disk, which outlives a crash.
pub struct SimNode {
    pub node: Option<Node>,
    /// What is durable.
    pub disk: Disk,
    /// Writes under way, in order, with the time each is durable (a lazy one: reported).
    writing: VecDeque<(Time, Persist)>,
    /// Lazy writes reported but not yet durable (no later write is).
    unsynced: Vec<Persist>,
    /// A snapshot being built off the node's loop, and when it is ready.
    building: Option<(Time, SnapshotJob)>,
    /// The server's mark that the node started with nothing on its disk and has not caught
    /// up since ([`NodeConfig::catching_up`]): it outlives a crash, as a file would.
    pub catching_up: bool,
}

impl SimNode {
    /// A machine whose disk had nothing (a host found its data path empty): catching up.
    fn new(disk: Disk) -> SimNode {
        SimNode {
            node: None,
            disk,
            writing: VecDeque::new(),
            unsynced: Vec::new(),
            building: None,
            catching_up: true,
        }
    }
}

/// A client's end of a connection to a node's broker.
#[derive(Debug, Default, Clone)]
pub struct SimClient {
    /// The node, the term of the broker it reached, and its id there (`None`: not connected).
    pub at: Option<(NodeId, u64, ClientId)>,
    inbox: Vec<u8>,
    /// Frames received and not yet taken.
    pub frames: Vec<Frame>,
}

/// What a simulation saw happen, in order, when asked to keep a record ([`ClusterSim::record`]):
/// enough to draw the run one happening at a time (the visualiser's replication scenario).
#[derive(Debug, Clone)]
pub enum Seen {
    /// A raft message left `from`; `arrives` is `None` for one the network lost at once.
    Sent {
        seq: u64,
        from: NodeId,
        to: NodeId,
        arrives: Option<Time>,
        msg: RaftMessage,
    },
    /// A message reached the end of its link: handed to its node, or not (the link was cut
    /// or the node was down).
    Arrived { seq: u64, delivered: bool },
    /// A node began a write to its disk.
    Writing { node: NodeId, persist: Persist },
    /// A node's writes up to `number` are durable.
    Durable { node: NodeId, number: u64 },
    /// A node was killed: of its writes under way, those up to `kept` (a write's number, 0:
    /// none) reached the disk and the rest were lost.
    Crashed { node: NodeId, kept: u64 },
    /// A node started from its disk.
    Started { node: NodeId },
    /// A node's timer fired (raft's tick: a leader's heartbeats, a follower's election
    /// timeout); what it did follows.
    Timer { node: NodeId },
    /// A node's state after it handled something, whenever it changed.
    State { node: NodeId, state: NodeState },
    /// A client received a frame from a node's broker (heartbeats, which the client answers
    /// itself, are left out).
    Frame {
        client: Handle,
        node: NodeId,
        frame: Frame,
    },
    /// A client's connection was closed (its node went down or stopped serving).
    Closed { client: Handle, node: NodeId },
}

/// What a node is, as a picture of it shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeState {
    pub role: raft::StateRole,
    pub term: u64,
    /// The leader it knows of (0: none).
    pub leader: NodeId,
    /// The last index in its log, the last it knows committed, and the last it applied.
    pub last: u64,
    pub commit: u64,
    pub applied: u64,
    /// The term of its serving broker, if it serves.
    pub serving: Option<u64>,
    /// Its serving broker's channels: topic, channel, the messages waiting (in order) and
    /// those in flight.
    pub channels: Vec<(String, String, Vec<MessageId>, Vec<MessageId>)>,
}

impl NodeState {
    fn of(n: &Node) -> NodeState {
        let raft = &n.raw.raft;
        let mut channels = Vec::new();
        if let Some(b) = n.broker() {
            for t in b.topics() {
                for id in t.channels.values() {
                    if let Some(c) = b.channel_by_id(*id) {
                        let mut flying: Vec<MessageId> =
                            c.in_flight.iter().map(|e| e.item.msg.id).collect();
                        flying.sort();
                        let waiting = c
                            .message_ids()
                            .into_iter()
                            .filter(|id| flying.binary_search(id).is_err())
                            .collect();
                        channels.push((c.topic.to_string(), c.name.to_string(), waiting, flying));
                    }
                }
            }
        }
        NodeState {
            role: raft.state,
            term: raft.term,
            leader: raft.leader_id,
            last: raft.raft_log.last_index(),
            commit: raft.raft_log.committed,
            applied: n.applied().1,
            serving: n.serving_term(),
            channels,
        }
    }
}

/// A handle on a [`SimClient`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Handle(pub u32);

/// Replicated nodes, their network and their clients. See the [module docs](self).
pub struct ClusterSim {
    now: Time,
    rng: Xoshiro256PlusPlus,
    opts: Options,
    seed: u64,
    pub nodes: BTreeMap<NodeId, SimNode>,
    /// Messages on the wire, by arrival time (then sending order).
    wire: BTreeMap<(Time, u64), (NodeId, NodeId, RaftMessage)>,
    sent: u64,
    /// Directed links that lose everything (`(from, to)`).
    pub cut: BTreeSet<(NodeId, NodeId)>,
    /// Chance in a thousand that a message is lost.
    pub loss_per_mille: u32,
    /// A message takes between these two (so later ones can overtake earlier ones).
    pub delay: (Nanos, Nanos),
    /// A write to a disk takes between these two (one after another, on each disk).
    pub disk_delay: (Nanos, Nanos),
    /// Building a snapshot takes between these two (meanwhile the node goes on).
    pub build_delay: (Nanos, Nanos),
    clients: BTreeMap<Handle, SimClient>,
    by_id: BTreeMap<(NodeId, u64, ClientId), Handle>,
    /// Who led each term (raft's leader role, whenever seen).
    pub leaders: BTreeMap<u64, NodeId>,
    /// Broken promises seen so far (two leaders in a term).
    pub violations: Vec<String>,
    /// Each node's [`NodeConfig::compact_bytes`] (small by default, so runs compact often).
    pub compact_bytes: u64,
    /// Each node's [`NodeConfig::max_backlog_bytes`] (0 by default: no limit).
    pub max_backlog_bytes: u64,
    /// Snapshots sent: (sender, addressee, whether it arrived), reported to the sender as a
    /// transport does once it has written a snapshot out or failed to.
    reports: Vec<(NodeId, NodeId, bool)>,
    /// What was seen, when recording ([`ClusterSim::record`]), and each node's last state.
    seen: Option<Vec<Seen>>,
    states: BTreeMap<NodeId, NodeState>,
}

impl ClusterSim {
    /// A new group of `voters`, at time 0.
    pub fn new(voters: &[NodeId], opts: Options, seed: u64) -> Self {
        let mut sim = Self::unstarted(voters, opts, seed);
        sim.start_all();
        sim
    }

    /// A new group of `voters` whose nodes are not started yet: a test sets the nodes'
    /// configuration (`compact_bytes`, `max_backlog_bytes`), then [`ClusterSim::start_all`].
    pub fn unstarted(voters: &[NodeId], opts: Options, seed: u64) -> Self {
        let mut sim = ClusterSim {
            now: 0,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            opts,
            seed,
            nodes: BTreeMap::new(),
            wire: BTreeMap::new(),
            sent: 0,
            cut: BTreeSet::new(),
            loss_per_mille: 0,
            delay: (1_000_000, 5_000_000),
            disk_delay: (100_000, 500_000),
            build_delay: (0, 20_000_000),
            clients: BTreeMap::new(),
            by_id: BTreeMap::new(),
            leaders: BTreeMap::new(),
            violations: Vec::new(),
            reports: Vec::new(),
            compact_bytes: 4096,
            max_backlog_bytes: 0,
            seen: None,
            states: BTreeMap::new(),
        };
        let disk = Disk::bootstrap(voters);
        for &id in voters {
            sim.nodes.insert(id, SimNode::new(disk.clone()));
        }
        sim
    }

    /// Start every node not running.
    pub fn start_all(&mut self) {
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in ids {
            if self.nodes[&id].node.is_none() {
                self.start(id);
            }
        }
    }

    pub fn now(&self) -> Time {
        self.now
    }

    /// Keep a record of what happens from now on ([`ClusterSim::take_seen`]), starting with
    /// each running node's state.
    pub fn record(&mut self) {
        self.seen = Some(Vec::new());
        self.states.clear();
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in ids {
            self.note_state(id);
        }
    }

    /// What was seen since the last call (nothing, when not recording).
    pub fn take_seen(&mut self) -> Vec<Seen> {
        self.seen.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn see(&mut self, s: Seen) {
        if let Some(v) = &mut self.seen {
            v.push(s);
        }
    }

    /// Record `id`'s state if it changed.
    fn note_state(&mut self, id: NodeId) {
        if self.seen.is_none() {
            return;
        }
        let Some(state) = self.node(id).map(NodeState::of) else {
            self.states.remove(&id);
            return;
        };
        if self.states.get(&id) != Some(&state) {
            self.states.insert(id, state.clone());
            self.see(Seen::State { node: id, state });
        }
    }

    /// A random number from the simulation's seed (for a test's own choices).
    pub fn random(&mut self, below: u64) -> u64 {
        self.rng.next_u64() % below.max(1)
    }

    fn config(&self, id: NodeId) -> NodeConfig {
        NodeConfig {
            compact_bytes: self.compact_bytes,
            max_backlog_bytes: self.max_backlog_bytes,
            catching_up: self.nodes.get(&id).is_some_and(|s| s.catching_up),
            ..NodeConfig::new(id, self.opts.clone(), self.seed)
        }
    }

    /// Start (or restart) `id` from its disk.
    pub fn start(&mut self, id: NodeId) {
        let cfg = self.config(id);
        let now = self.now;
        if let Some(sn) = self.nodes.get_mut(&id) {
            if sn.node.is_none() {
                sn.node = Node::new(cfg, &sn.disk, now).ok();
                if sn.node.is_some() {
                    self.see(Seen::Started { node: id });
                }
            }
        }
        self.flush(id);
    }

    /// A new machine `id`, with an empty disk (it joins once the leader adds it).
    pub fn add_machine(&mut self, id: NodeId) {
        self.nodes.insert(id, SimNode::new(Disk::default()));
        self.start(id);
    }

    /// `kill -9` (or the power): the node stops; its disk keeps what it reported durable and
    /// a seeded prefix of the writes under way; its clients are cut off.
    pub fn crash(&mut self, id: NodeId) {
        let under_way = self
            .nodes
            .get(&id)
            .map_or(0, |s| s.unsynced.len() + s.writing.len());
        let kept = self.random(under_way as u64 + 1) as usize;
        let mut through = 0;
        if let Some(sn) = self.nodes.get_mut(&id) {
            sn.node = None;
            sn.building = None;
            let unsynced = std::mem::take(&mut sn.unsynced);
            let writing = sn.writing.drain(..).map(|(_, p)| p);
            for p in unsynced.into_iter().chain(writing).take(kept) {
                sn.disk.apply(&p);
                through = p.number;
            }
        }
        self.see(Seen::Crashed {
            node: id,
            kept: through,
        });
        self.states.remove(&id);
        self.drop_clients(|(n, _, _)| n == id);
    }

    /// The node stops and its disk is replaced by a new one, which it starts from when
    /// [`ClusterSim::start`]ed again under the same id, as a server restarted with the same
    /// flags would: a first voter (one of `first_voters`) from the group's bootstrap snapshot,
    /// a node added later from nothing; catching up, either way.
    pub fn wipe(&mut self, id: NodeId, first_voters: &[NodeId]) {
        self.crash(id);
        if let Some(sn) = self.nodes.get_mut(&id) {
            let disk = if first_voters.contains(&id) {
                Disk::bootstrap(first_voters)
            } else {
                Disk::default()
            };
            *sn = SimNode::new(disk);
        }
    }

    /// The node stops and its disk is gone (the machine is never coming back as `id`).
    pub fn destroy(&mut self, id: NodeId) {
        self.crash(id);
        self.nodes.remove(&id);
    }

    /// Whether node `id` has a snapshot being built.
    pub fn building(&self, id: NodeId) -> bool {
        self.nodes.get(&id).is_some_and(|s| s.building.is_some())
    }

    /// Cut every link to and from `id`.
    pub fn isolate(&mut self, id: NodeId) {
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for other in ids {
            if other != id {
                self.cut.insert((id, other));
                self.cut.insert((other, id));
            }
        }
    }

    /// Mend every link.
    pub fn heal(&mut self) {
        self.cut.clear();
    }

    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.nodes.get(&id).and_then(|s| s.node.as_ref())
    }

    pub fn node_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        self.nodes.get_mut(&id).and_then(|s| s.node.as_mut())
    }

    /// The node whose broker serves clients (the latest term's, if an old leader has not
    /// noticed yet that it was replaced).
    pub fn serving(&self) -> Option<NodeId> {
        self.nodes
            .iter()
            .filter_map(|(id, s)| Some((s.node.as_ref()?.serving_term()?, *id)))
            .max()
            .map(|(_, id)| id)
    }

    /// Connect a client to `node`'s broker (if it serves) and send the V2 magic.
    pub fn connect(&mut self, node: NodeId) -> Handle {
        let h = Handle(self.clients.len() as u32 + 1);
        self.clients.insert(h, SimClient::default());
        self.attach(h, node);
        h
    }

    /// Connect an existing client again, to `node` (its old connection is gone).
    pub fn attach(&mut self, h: Handle, node: NodeId) {
        let now = self.now;
        let Some(n) = self.node_mut(node) else {
            return;
        };
        let Some(term) = n.serving_term() else {
            return;
        };
        let Some(id) = n.with_broker(now, |b, now| {
            let id = b.connect(now, format!("10.0.0.9:{}", 40000 + h.0));
            b.handle_bytes(now, id, MAGIC_V2);
            id
        }) else {
            return;
        };
        if let Some(c) = self.clients.get_mut(&h) {
            if let Some(old) = c.at.take() {
                self.by_id.remove(&old);
            }
            *c = SimClient {
                at: Some((node, term, id)),
                ..SimClient::default()
            };
        }
        self.by_id.insert((node, term, id), h);
        self.flush(node);
    }

    pub fn client(&self, h: Handle) -> &SimClient {
        &self.clients[&h]
    }

    pub fn is_connected(&self, h: Handle) -> bool {
        self.clients.get(&h).is_some_and(|c| c.at.is_some())
    }

    /// Take the frames `h` received.
    pub fn frames(&mut self, h: Handle) -> Vec<Frame> {
        self.clients
            .get_mut(&h)
            .map(|c| std::mem::take(&mut c.frames))
            .unwrap_or_default()
    }

    /// Send a command on `h`'s connection (nothing, if it has none).
    pub fn send(&mut self, h: Handle, cmd: &Command) {
        let Some((node, term, id)) = self.clients.get(&h).and_then(|c| c.at) else {
            return;
        };
        let now = self.now;
        let bytes = cmd.to_bytes();
        if let Some(n) = self.node_mut(node) {
            if n.serving_term() == Some(term) {
                n.with_broker(now, |b, now| b.handle_bytes(now, id, &bytes));
            }
        }
        self.flush(node);
    }

    fn drop_clients(&mut self, mut which: impl FnMut((NodeId, u64, ClientId)) -> bool) {
        let gone: Vec<(NodeId, u64, ClientId)> =
            self.by_id.keys().copied().filter(|k| which(*k)).collect();
        for k in gone {
            if let Some(h) = self.by_id.remove(&k) {
                if let Some(c) = self.clients.get_mut(&h) {
                    c.at = None;
                }
                self.see(Seen::Closed {
                    client: h,
                    node: k.0,
                });
            }
        }
    }

    /// Take a node's outputs: to its disk, onto the wire, to its clients.
    fn flush(&mut self, id: NodeId) {
        loop {
            let Some(o) = self
                .nodes
                .get_mut(&id)
                .and_then(|s| s.node.as_mut())
                .and_then(|n| n.poll_output())
            else {
                break;
            };
            match o {
                NodeOutput::Persist(p) => {
                    let (lo, hi) = self.disk_delay;
                    let took = lo + self.random(hi.saturating_sub(lo) + 1);
                    let now = self.now;
                    if self.seen.is_some() {
                        self.see(Seen::Writing {
                            node: id,
                            persist: p.clone(),
                        });
                    }
                    if let Some(sn) = self.nodes.get_mut(&id) {
                        let after = sn.writing.back().map_or(now, |w| w.0);
                        let at = if p.lazy { after } else { after.max(now + took) };
                        sn.writing.push_back((at, p));
                    }
                }
                NodeOutput::Send(m) => self.post(id, m),
                NodeOutput::BuildSnapshot(job) => {
                    let (lo, hi) = self.build_delay;
                    let at = self.now + lo + self.random(hi.saturating_sub(lo) + 1);
                    if let Some(sn) = self.nodes.get_mut(&id) {
                        sn.building = Some((at, job));
                    }
                }
                NodeOutput::CaughtUp => {
                    if let Some(sn) = self.nodes.get_mut(&id) {
                        sn.catching_up = false;
                    }
                }
                NodeOutput::Leading { .. }
                | NodeOutput::Stored { .. }
                | NodeOutput::Member { .. } => {}
                NodeOutput::Deposed { term } => self.drop_clients(|(n, t, _)| n == id && t == term),
                NodeOutput::Broker(o) => self.deliver_to_client(id, o),
            }
            self.note_state(id);
        }
        self.note_state(id);
        if let Some(n) = self.node(id) {
            if n.role() == raft::StateRole::Leader {
                let term = n.term();
                let first = *self.leaders.entry(term).or_insert(id);
                if first != id {
                    self.violations
                        .push(format!("term {term} has two leaders: {first} and {id}"));
                }
            }
        }
    }

    fn post(&mut self, from: NodeId, m: RaftMessage) {
        if self.loss_per_mille > 0 && self.random(1000) < self.loss_per_mille as u64 {
            if self.seen.is_some() {
                self.sent += 1;
                self.see(Seen::Sent {
                    seq: self.sent,
                    from,
                    to: m.to,
                    arrives: None,
                    msg: m.clone(),
                });
            }
            self.lost(from, &m);
            return;
        }
        let (lo, hi) = self.delay;
        let at = self.now + lo + self.random(hi.saturating_sub(lo) + 1);
        self.sent += 1;
        if self.seen.is_some() {
            self.see(Seen::Sent {
                seq: self.sent,
                from,
                to: m.to,
                arrives: Some(at),
                msg: m.clone(),
            });
        }
        self.wire.insert((at, self.sent), (from, m.to, m));
    }

    /// A transport knows when it could not deliver: a snapshot that did not arrive is
    /// reported, so the leader probes and sends it again.
    fn lost(&mut self, from: NodeId, m: &RaftMessage) {
        if m.get_msg_type() == raft::eraftpb::MessageType::MsgSnapshot {
            self.reports.push((from, m.to, false));
        }
    }

    fn deliver_to_client(&mut self, node: NodeId, o: Output) {
        let Some(term) = self.node(node).and_then(|n| n.serving_term()) else {
            return;
        };
        let (id, data) = match o {
            Output::Transmit(Transmit::Data { client, data }) => (client, data),
            Output::Transmit(Transmit::Close { client }) => {
                self.drop_clients(|k| k == (node, term, client));
                return;
            }
            _ => return,
        };
        let Some(h) = self.by_id.get(&(node, term, id)).copied() else {
            return;
        };
        let mut heartbeat = false;
        if let Some(c) = self.clients.get_mut(&h) {
            c.inbox.extend_from_slice(&data);
            let mut used = 0;
            while let Ok(Some((f, n))) = decode_frame(&c.inbox[used..]) {
                used += n;
                if matches!(&f, Frame::Response(r) if r == b"_heartbeat_") {
                    heartbeat = true;
                } else {
                    if let Some(v) = &mut self.seen {
                        v.push(Seen::Frame {
                            client: h,
                            node,
                            frame: f.clone(),
                        });
                    }
                    c.frames.push(f);
                }
            }
            c.inbox.drain(..used);
        }
        // Clients answer heartbeats, as every NSQ client library does.
        if heartbeat {
            let now = self.now;
            if let Some(n) = self.node_mut(node) {
                let bytes = Command::Nop.to_bytes();
                n.with_broker(now, |b, now| b.handle_bytes(now, id, &bytes));
            }
        }
    }

    /// The next instant something happens (a message arrives, a node's timer is due).
    pub fn next_event(&self) -> Option<Time> {
        let wire = self.wire.keys().next().map(|k| k.0);
        let timers = self
            .nodes
            .values()
            .filter_map(|s| s.node.as_ref()?.poll_timeout())
            .chain(
                self.nodes
                    .values()
                    .filter_map(|s| s.writing.front().map(|w| w.0)),
            )
            .chain(
                self.nodes
                    .values()
                    .filter_map(|s| s.building.as_ref().map(|b| b.0)),
            )
            .min();
        match (wire, timers) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Do what happens next, if it is at or before `limit`.
    pub fn step(&mut self, limit: Time) -> bool {
        let Some(t) = self.next_event().filter(|t| *t <= limit) else {
            return false;
        };
        self.now = self.now.max(t);
        let now = self.now;
        self.complete_writes();
        self.complete_snapshots();
        let due: Vec<(Time, u64)> = self
            .wire
            .range(..=(now, u64::MAX))
            .map(|(k, _)| *k)
            .collect();
        for k in due {
            let (from, to, m) = self.wire.remove(&k).expect("listed");
            let delivered = !self.cut.contains(&(from, to)) && self.node(to).is_some();
            self.see(Seen::Arrived {
                seq: k.1,
                delivered,
            });
            if !delivered {
                self.lost(from, &m);
                continue;
            }
            if m.get_msg_type() == raft::eraftpb::MessageType::MsgSnapshot {
                self.reports.push((from, to, true));
            }
            if let Some(n) = self.node_mut(to) {
                if m.entries.is_empty() {
                    n.handle_message(now, m);
                } else {
                    // As a host receives entries: in a frame of the wire's bytes, which the
                    // bodies applied from them share.
                    let frame: std::sync::Arc<[u8]> = super::encode_message(&m).into();
                    match super::decode_frame(&frame) {
                        Ok(back) => n.handle_frame(now, back, frame),
                        Err(_) => n.handle_message(now, m),
                    }
                }
                self.flush(to);
            }
        }
        for (from, to, delivered) in std::mem::take(&mut self.reports) {
            if let Some(n) = self.node_mut(from) {
                n.report_snapshot(to, delivered);
                self.flush(from);
            }
        }
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in ids {
            if let Some(n) = self.node_mut(id) {
                if n.poll_timeout().is_some_and(|t| t <= now) {
                    n.handle_timeout(now);
                    self.see(Seen::Timer { node: id });
                    self.flush(id);
                }
            }
        }
        true
    }

    /// Writes that are durable by now: on the disk, and reported to their node.
    fn complete_writes(&mut self) {
        let now = self.now;
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in ids {
            let Some(sn) = self.nodes.get_mut(&id) else {
                continue;
            };
            let mut through = None;
            while sn.writing.front().is_some_and(|w| w.0 <= now) {
                let (_, p) = sn.writing.pop_front().expect("checked");
                through = Some(p.number).max(through);
                if p.lazy {
                    sn.unsynced.push(p);
                } else {
                    for u in sn.unsynced.drain(..) {
                        sn.disk.apply(&u);
                    }
                    sn.disk.apply(&p);
                }
            }
            if let Some(number) = through {
                self.see(Seen::Durable { node: id, number });
            }
            let sn = self.nodes.get_mut(&id).expect("listed");
            if let (Some(n), Some(node)) = (through, sn.node.as_mut()) {
                node.persisted(now, n);
                self.flush(id);
            }
        }
    }

    /// Snapshots built by now: handed back to their node.
    fn complete_snapshots(&mut self) {
        let now = self.now;
        let ids: Vec<NodeId> = self.nodes.keys().copied().collect();
        for id in ids {
            let Some(sn) = self.nodes.get_mut(&id) else {
                continue;
            };
            match &sn.building {
                Some((at, _)) if *at <= now => {}
                _ => continue,
            }
            let (_, job) = sn.building.take().expect("checked");
            if let Some(node) = sn.node.as_mut() {
                node.snapshot_built(now, job.build());
                self.flush(id);
            }
        }
    }

    /// Everything up to `to`, and the clock at `to`.
    pub fn advance(&mut self, to: Time) {
        while self.step(to) {}
        self.now = self.now.max(to);
    }

    /// Move on by `d`.
    pub fn sleep(&mut self, d: Nanos) {
        self.advance(self.now + d);
    }

    /// Run until `done` holds (checked after every event) or `within` has passed; whether it
    /// held.
    pub fn run_until(&mut self, within: Nanos, mut done: impl FnMut(&mut Self) -> bool) -> bool {
        let end = self.now + within;
        loop {
            if done(self) {
                return true;
            }
            if !self.step(end) {
                self.now = self.now.max(end);
                return done(self);
            }
        }
    }
}
