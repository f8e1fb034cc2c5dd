//! Replication, sans-IO: a [`Node`] is one member of a raft group (TiKV's `raft` crate, whose
//! `RawNode` is sans-IO too) that keeps a broker's [`StoreOp`]s in a replicated log.
//!
//! # The idea
//! The broker already describes every change durable storage must keep as [`StoreOp`]s, and
//! [`Replay`] already rebuilds what is owed from them (that is how a restart after `kill -9`
//! works). Replication puts those ops in a raft log instead of (before) a file:
//! - The **leader** runs a [`Broker`]. Each wake-up's ops become one log entry ([`Batch`]);
//!   when the entry is committed (a quorum has it on disk) the broker gets
//!   [`Broker::handle_stored`], which releases the publishers' `OK`s and the messages to the
//!   consumers. The completion path is the one a single node's file store uses.
//! - **Every node** applies committed entries to its own [`Replay`].
//! - A node **elected leader** waits until it has applied its term's first entry (so it has
//!   everything committed before), then builds a broker from its `Replay`, exactly as a restart
//!   does: every message not finished is owed again (at-least-once: what was in flight on the
//!   old leader is delivered again), deferred messages keep their due times.
//! - A leader that **loses leadership** drops its broker: its clients are closed, publishes not
//!   yet committed are never acknowledged (their publishers retry, as after any lost
//!   connection).
//!
//! # Run loop
//! As the broker's: every input carries `now` ([`Node::handle_message`],
//! [`Node::handle_timeout`], [`Node::with_broker`] for clients, [`Node::persisted`] for the
//! disk); then drain [`Node::poll_output`] and call back at [`Node::poll_timeout`]. A
//! [`NodeOutput::Send`] may leave at once; [`NodeOutput::Persist`]s are written in order and
//! reported when durable, without holding up anything else (raft-rs's asynchronous ready:
//! the node keeps back the messages that must follow a write, a leader sends its entries to
//! the followers while it writes them itself, and a publish's `OK` waits for a quorum of
//! durable copies, the leader's among them).
//!
//! # Compaction
//! A snapshot of the applied state takes time in proportion to what the node owes (every
//! message's body is encoded), so the node does not build it: it hands the host a copy of
//! its applied state ([`NodeOutput::BuildSnapshot`], a [`SnapshotJob`]; the messages' bodies
//! are shared, not copied), the host builds it where it does not hold up the node (a thread;
//! the simulation, after a seeded while) and hands it back ([`Node::snapshot_built`]). The
//! node then replaces its log up to the snapshot's index and asks for the write. The last
//! snapshot is kept: it is what a node that lags too far, or joins, is sent.
//!
//! # Membership
//! Every log starts from the same bootstrap snapshot (index 1, the first voters). A node
//! added later, or one that lost its disk and comes back under a new id, starts empty and is
//! sent a snapshot of the leader's applied state ([`Replay::to_ops`]), then the log after it.
//! A node that lost its disk is best replaced: remove the old id ([`Node::propose_remove`])
//! and add a new one ([`Node::propose_add`]), one change at a time. One that comes back
//! under its old id anyway (restarted with the same flags on a new disk) is *catching up*
//! ([`NodeConfig::catching_up`]): it has forgotten the votes and the entries the group
//! counted on it, so until it has caught up with a leader it votes for no candidate with a
//! history, and a leader that finds a peer's log shorter than what it had acknowledged
//! starts that peer again from nothing.
//!
//! # Determinism
//! raft-rs draws each election timeout with `rand::thread_rng`; a node's range here is one
//! tick wide, derived from its id and the seed, so the draw has one possible answer and the
//! same inputs give the same outputs.

pub mod codec;
pub mod sim;

use crate::broker::{Broker, Output};
use crate::options::Options;
use crate::store::{Replay, StoreFailure, StoreOp, Ticket};
use crate::time::{Nanos, Time};
pub use codec::{Batch, DecodeError};
use protobuf::Message as PbMessage;
use raft::eraftpb::{
    ConfChange, ConfChangeType, ConfState, Entry, EntryType, HardState, MessageType, Snapshot,
};
use raft::prelude::Message as RaftMessage;
use raft::storage::MemStorage;
use raft::{GetEntriesContext, RaftState, RawNode, StateRole, Storage};
use std::collections::VecDeque;
use std::sync::Arc;

pub use protobuf;
pub use raft;

/// At most this many received frames are kept for their entries' bodies to share
/// ([`Node::handle_frame`]); past it (a follower that cannot apply), entries are copied.
const MAX_FRAMES: usize = 1024;

/// A node's id in its group (raft's; never 0). It is also the broker's `node_id` (message
/// IDs), so it is below 1 024.
pub type NodeId = u64;

/// How a node is set up.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub id: NodeId,
    /// The broker's options when this node leads (`durable` is forced on and `evict_bodies`
    /// off: the log keeps the bodies).
    pub opts: Options,
    pub seed: u64,
    /// One raft tick.
    pub tick: Nanos,
    /// Ticks without a leader before a follower stands (each node's timeout is one of
    /// `election_ticks..2 * election_ticks`, by id and seed).
    pub election_ticks: usize,
    /// Ticks between a leader's heartbeats.
    pub heartbeat_ticks: usize,
    /// Compact the log (a snapshot of the applied state replaces what it covers) once the
    /// entries since the last snapshot hold this many bytes, or as many as that snapshot,
    /// whichever is more (so writing snapshots costs a bounded share of writing the log),
    /// and the snapshot would at least halve what log and last snapshot hold.
    pub compact_bytes: u64,
    /// Refuse publishes (nsqd's `E_PUB_FAILED`, `/ping` `NOK`) while the messages the group
    /// owes hold this many bytes ([`Replay::kept_bytes`]); 0: no limit. Every node keeps
    /// them in memory, so this bounds a node's memory where a single node would spill to disk.
    pub max_backlog_bytes: u64,
    /// The node starts with nothing its disk had (a host sets it when its data path was empty,
    /// and keeps it set across restarts until [`NodeOutput::CaughtUp`]). Such a node may be
    /// one that lost its disk and came back under its old id, having forgotten its votes and
    /// the entries it acknowledged (a new group's first voters and a node joining start like
    /// that too: nothing tells them apart). Until it has caught up with a leader (its log
    /// holds, durably and committed, an entry of the leader's term and everything the leader
    /// had committed when it first heard from it) it votes for no candidate whose log has a
    /// history (beyond the bootstrap snapshot), so it cannot help elect a node lacking what it
    /// had helped commit; and it takes from a heartbeat no commit index beyond what it knows
    /// matches the leader (a leader's heartbeat carries what the peer had acknowledged, which
    /// a lost disk no longer holds).
    pub catching_up: bool,
}

impl NodeConfig {
    /// Defaults: a 100 ms tick, elections after 1–2 s without a leader, heartbeats every 200 ms.
    pub fn new(id: NodeId, opts: Options, seed: u64) -> Self {
        NodeConfig {
            id,
            opts,
            seed,
            tick: 100_000_000,
            election_ticks: 10,
            heartbeat_ticks: 2,
            compact_bytes: 64 << 20,
            max_backlog_bytes: 0,
            catching_up: false,
        }
    }
}

/// The index of a new group's bootstrap snapshot ([`Disk::bootstrap`]): a log that ends
/// there has no history.
const BOOTSTRAP_INDEX: u64 = 1;

/// The context of a vote request from a node catching up ([`NodeConfig::catching_up`]): a
/// node catching up votes for a candidate with a history only if it is catching up too (in
/// a new group that never caught up, all are; a node that lost its disk while the others
/// kept theirs finds none that is).
const CATCHING_UP: &[u8] = b"nsqlab:catching-up";

/// What a node keeps on disk: the snapshot the log starts after, the log, and raft's vote and
/// commit. A host writes each [`Persist`] before sending what follows it; a test's disk is
/// this struct ([`Disk::apply`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Disk {
    pub snapshot: Snapshot,
    pub entries: Vec<Entry>,
    pub hard_state: HardState,
}

impl Disk {
    /// A new group's first disk: the same on every first voter.
    pub fn bootstrap(voters: &[NodeId]) -> Disk {
        let mut snapshot = Snapshot::default();
        let meta = snapshot.mut_metadata();
        meta.index = BOOTSTRAP_INDEX;
        meta.term = 1;
        meta.mut_conf_state().voters = voters.to_vec();
        snapshot.data = Batch {
            proposer: 0,
            through: 0,
            ops: Vec::new(),
        }
        .encode()
        .into();
        let hard_state = HardState {
            term: 1,
            commit: 1,
            ..HardState::default()
        };
        Disk {
            snapshot,
            entries: Vec::new(),
            hard_state,
        }
    }

    /// Keep what a [`NodeOutput::Persist`] says.
    pub fn apply(&mut self, p: &Persist) {
        if let Some(s) = &p.snapshot {
            let index = s.get_metadata().index;
            self.snapshot = s.clone();
            self.entries.retain(|e| e.index > index);
        }
        if let Some(first) = p.entries.first() {
            self.entries.retain(|e| e.index < first.index);
            self.entries.extend(p.entries.iter().cloned());
        }
        if let Some(hs) = &p.hard_state {
            self.hard_state = hs.clone();
        }
    }

    /// Nothing on it (a node that lost its disk, or a new one).
    pub fn is_empty(&self) -> bool {
        self.snapshot.get_metadata().index == 0 && self.entries.is_empty()
    }
}

/// Changes to write to disk, in order: a snapshot (replacing the log up to its index), log
/// entries (replacing any from the first one's index on), raft's hard state.
///
/// A host writes each in the order given, and once one is durable says so with
/// [`Node::persisted`] (its `number`; saying so for one says so for every earlier one). The
/// node holds back whatever must not leave before the write (a follower's acknowledgement, a
/// vote) and applies nothing it has not persisted, so the host never waits for the disk: it
/// sends what it is given at once and syncs on a thread of its own, many writes at a time.
///
/// A `lazy` write (nothing but a new commit index) may be reported once written, before it is
/// synced: a crash that loses it costs nothing raft promised (the node learns how far the log
/// is committed again from its leader), and syncing it would cost every node a second disk
/// flush per entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Persist {
    /// What to report to [`Node::persisted`] once this is durable (0: nothing to report).
    pub number: u64,
    /// Whether it may be reported before it is durable (see above).
    pub lazy: bool,
    pub snapshot: Option<Snapshot>,
    pub entries: Vec<Entry>,
    pub hard_state: Option<HardState>,
}

/// What a node asks its host to do.
#[derive(Debug)]
pub enum NodeOutput {
    /// Write to disk (after the writes before it), then report it with [`Node::persisted`].
    Persist(Persist),
    /// A raft message for another node ([`encode_message`] for the wire).
    Send(RaftMessage),
    /// This node leads from now on: its broker serves clients (the `term` names this broker).
    Leading { term: u64 },
    /// This node no longer leads: the broker of `term` is gone; close its clients' connections.
    Deposed { term: u64 },
    /// The leader's broker's output (never `Store` or `Commit`: those go through the log).
    Broker(Output),
    /// Every publish of the serving broker up to ticket `through` is committed (its `OK`s
    /// are out): a host answers what it made wait for the store (an HTTP publish).
    Stored { through: Ticket },
    /// Build this snapshot away from the node's loop ([`SnapshotJob::build`]) and hand it
    /// back with [`Node::snapshot_built`]; one is out at a time. A host that drops it (the
    /// node stopped) loses nothing: the log stays uncompacted.
    BuildSnapshot(SnapshotJob),
    /// This node has caught up ([`NodeConfig::catching_up`]): a host that kept a mark of it
    /// removes it, so a restart votes as any member does.
    CaughtUp,
    /// A voter joined the group (with the address its adder gave, for the transport) or left.
    Member {
        id: NodeId,
        joined: bool,
        address: String,
    },
}

/// Why a node could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    #[error("raft: {0}")]
    Raft(#[from] raft::Error),
    #[error("not the leader")]
    NotLeader,
    #[error("a membership change is still in progress")]
    ChangePending,
    #[error("bad entry: {0}")]
    Decode(#[from] DecodeError),
}

/// A raft message as bytes (protobuf, raft's own encoding).
pub fn encode_message(m: &RaftMessage) -> Vec<u8> {
    m.write_to_bytes().unwrap_or_default()
}

/// The bytes of [`encode_message`] back as a message.
pub fn decode_message(b: &[u8]) -> Result<RaftMessage, ReplicaError> {
    RaftMessage::parse_from_bytes(b).map_err(|e| ReplicaError::Raft(raft::Error::CodecError(e)))
}

/// A received frame (the bytes of [`encode_message`]) back as a message whose entries' data
/// are ranges of the frame, not copies; hand both to [`Node::handle_frame`].
pub fn decode_frame(frame: &Arc<[u8]>) -> Result<RaftMessage, ReplicaError> {
    let b = bytes::Bytes::from_owner(frame.clone());
    RaftMessage::parse_from_carllerche_bytes(&b)
        .map_err(|e| ReplicaError::Raft(raft::Error::CodecError(e)))
}

/// The state machine, as far as it has applied the log.
#[derive(Debug, Clone)]
struct Applied {
    replay: Replay,
    index: u64,
    term: u64,
    conf: ConfState,
}

/// raft's storage: the log in memory (what the host keeps on disk, as [`Disk`]), the applied
/// state, and the snapshot the log starts after (what a node that lags or starts empty is
/// sent).
struct LogStore {
    mem: MemStorage,
    applied: Applied,
    last: Snapshot,
    /// A peer needs a snapshot the last one cannot be (it predates the peer joining): the
    /// node asks for a new one whatever the log's size.
    wanted: std::cell::Cell<bool>,
}

impl Storage for LogStore {
    fn initial_state(&self) -> raft::Result<RaftState> {
        self.mem.initial_state()
    }

    fn entries(
        &self,
        low: u64,
        high: u64,
        max_size: impl Into<Option<u64>>,
        context: GetEntriesContext,
    ) -> raft::Result<Vec<Entry>> {
        self.mem.entries(low, high, max_size, context)
    }

    fn term(&self, idx: u64) -> raft::Result<u64> {
        self.mem.term(idx)
    }

    fn first_index(&self) -> raft::Result<u64> {
        self.mem.first_index()
    }

    fn last_index(&self) -> raft::Result<u64> {
        self.mem.last_index()
    }

    fn snapshot(&self, request_index: u64, to: u64) -> raft::Result<Snapshot> {
        // The log's own start: a peer is sent a snapshot only when it needs entries the log
        // no longer has, and everything after this one the log still has. A peer restores
        // only a snapshot whose members include it: for one added since, a new snapshot is
        // built (raft asks again at its next heartbeat).
        let meta = self.last.get_metadata();
        let cs = meta.get_conf_state();
        let member = cs
            .voters
            .iter()
            .chain(&cs.learners)
            .chain(&cs.voters_outgoing)
            .chain(&cs.learners_next)
            .any(|id| *id == to);
        if meta.index == 0 || meta.index < request_index || !member {
            self.wanted.set(true);
            return Err(raft::Error::Store(
                raft::StorageError::SnapshotTemporarilyUnavailable,
            ));
        }
        Ok(self.last.clone())
    }
}

/// A copy of a node's applied state, to be made a snapshot by its host (see the
/// [module docs](self#compaction)).
#[derive(Debug)]
pub struct SnapshotJob {
    applied: Applied,
}

impl SnapshotJob {
    /// The snapshot: the applied state's ops ([`Replay::to_ops`]), encoded as an entry's.
    /// Takes time in proportion to what the state owes; hand the result to
    /// [`Node::snapshot_built`].
    #[must_use]
    pub fn build(self) -> Snapshot {
        snapshot_of(&self.applied)
    }
}

fn snapshot_of(a: &Applied) -> Snapshot {
    let mut s = Snapshot::default();
    let meta = s.mut_metadata();
    meta.index = a.index;
    meta.term = a.term;
    *meta.mut_conf_state() = a.conf.clone();
    s.data = Batch {
        proposer: 0,
        through: 0,
        ops: a.replay.to_ops(),
    }
    .encode()
    .into();
    s
}

/// The leader's broker, and what it waits for.
struct Leader {
    broker: Broker,
    term: u64,
    /// Ops of the current wake-up, not yet proposed.
    ops: Vec<StoreOp>,
    /// The last ticket proposed, and the last acknowledged.
    proposed: Ticket,
    acked: Ticket,
    /// What this leader proposed and has not applied yet, by log index: applied from here,
    /// not decoded back from the entry.
    mine: VecDeque<(u64, Batch)>,
    /// Why its broker refuses publishes now (its health), if it does.
    refusing: Option<String>,
}

/// One member of a replicated group. See the [module docs](self).
pub struct Node {
    cfg: NodeConfig,
    raw: RawNode<LogStore>,
    leader: Option<Leader>,
    next_tick: Time,
    now: Time,
    out: VecDeque<NodeOutput>,
    /// Committed entries that could not be read (counted, skipped).
    pub bad_entries: u64,
    /// Bytes of entry data in the log since the last snapshot, and that snapshot's size.
    log_bytes: u64,
    snapshot_bytes: u64,
    /// The numbers of the writes the host has not yet reported durable, in order.
    writing: VecDeque<u64>,
    /// Messages to send once every write up to the number beside them is durable.
    held: VecDeque<(u64, Vec<RaftMessage>)>,
    /// Frames received with entries not yet applied, by the index of their last entry
    /// ([`Node::handle_frame`]): an entry applied from one shares its bodies with it.
    frames: VecDeque<(u64, Arc<[u8]>)>,
    /// The number of the last ready taken from raft.
    last_ready: u64,
    /// Entries committed (and durable here) not yet applied: applied once the host has taken
    /// the outputs before them, so a write and the messages to the other nodes go out first.
    to_apply: Vec<Entry>,
    /// A [`NodeOutput::BuildSnapshot`] is out, not yet handed back.
    building: bool,
    /// Why the host's disk has too little room for more publishes, if it has.
    disk_low: Option<String>,
    /// While catching up ([`NodeConfig::catching_up`]): the commit index a leader advertised
    /// in the first append it sent, once one has.
    catching_up: Option<Option<u64>>,
}

fn logger() -> slog::Logger {
    slog::Logger::root(slog::Discard, slog::o!())
}

impl Node {
    /// A node starting (or restarting) from what its disk holds: a bootstrap disk for a new
    /// group's first voters ([`Disk::bootstrap`]), an empty one for a node joining later.
    pub fn new(cfg: NodeConfig, disk: &Disk, now: Time) -> Result<Node, ReplicaError> {
        let mem = MemStorage::new();
        let mut applied = Applied {
            replay: replay_of(&[])?,
            index: 0,
            term: 0,
            conf: ConfState::default(),
        };
        {
            let mut w = mem.wl();
            if !disk.is_empty() {
                let meta = disk.snapshot.get_metadata();
                applied.index = meta.index;
                applied.term = meta.term;
                applied.conf = meta.get_conf_state().clone();
                applied.replay = replay_of(&disk.snapshot.data)?;
                w.apply_snapshot(disk.snapshot.clone())?;
                w.append(&disk.entries)?;
                w.set_hardstate(disk.hard_state.clone());
            }
        }
        let spread = (cfg.seed.wrapping_add(cfg.id) % cfg.election_ticks as u64) as usize;
        let rc = raft::Config {
            id: cfg.id,
            election_tick: cfg.election_ticks,
            heartbeat_tick: cfg.heartbeat_ticks,
            min_election_tick: cfg.election_ticks + spread,
            max_election_tick: cfg.election_ticks + spread + 1,
            applied: applied.index,
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
            check_quorum: true,
            pre_vote: true,
            // A follower learns that its entries are committed with the next append or
            // heartbeat, not from a message of its own for every commit: under load that
            // message, its answer and the follower's write of the new commit index would
            // double what each entry costs every node.
            skip_bcast_commit: true,
            ..raft::Config::default()
        };
        let last = if disk.is_empty() {
            Snapshot::default()
        } else {
            disk.snapshot.clone()
        };
        let store = LogStore {
            mem,
            applied,
            last,
            wanted: std::cell::Cell::new(false),
        };
        let raw = RawNode::new(&rc, store, &logger())?;
        let mut opts = cfg.opts.clone();
        opts.durable = true;
        opts.evict_bodies = false;
        opts.node_id = cfg.id as u16;
        let tick = cfg.tick;
        let catching_up = cfg.catching_up.then_some(None);
        Ok(Node {
            cfg: NodeConfig { opts, ..cfg },
            raw,
            leader: None,
            next_tick: now + tick,
            now,
            out: VecDeque::new(),
            bad_entries: 0,
            log_bytes: disk.entries.iter().map(|e| e.data.len() as u64).sum(),
            snapshot_bytes: disk.snapshot.data.len() as u64,
            writing: VecDeque::new(),
            held: VecDeque::new(),
            frames: VecDeque::new(),
            last_ready: 0,
            to_apply: Vec::new(),
            building: false,
            disk_low: None,
            catching_up,
        })
    }

    /// Whether this node is still catching up ([`NodeConfig::catching_up`]).
    pub fn catching_up(&self) -> bool {
        self.catching_up.is_some()
    }

    pub fn id(&self) -> NodeId {
        self.cfg.id
    }

    /// The current term, and the leader this node knows of (0: none).
    pub fn term(&self) -> u64 {
        self.raw.raft.term
    }

    pub fn leader_id(&self) -> NodeId {
        self.raw.raft.leader_id
    }

    /// Whether this node's broker serves clients (it leads and has applied everything
    /// committed before its term).
    pub fn is_serving(&self) -> bool {
        self.leader.is_some()
    }

    /// The term of the broker serving here, if one is.
    pub fn serving_term(&self) -> Option<u64> {
        self.leader.as_ref().map(|l| l.term)
    }

    pub fn role(&self) -> StateRole {
        self.raw.raft.state
    }

    /// What this node has applied: the replayed state, and the log index it is at.
    pub fn applied(&self) -> (&Replay, u64) {
        let a = &self.raw.store().applied;
        (&a.replay, a.index)
    }

    /// The index the log starts after (its last snapshot's: 1 until the log is compacted).
    pub fn snapshot_index(&self) -> u64 {
        self.raw
            .store()
            .mem
            .first_index()
            .unwrap_or(1)
            .saturating_sub(1)
    }

    /// The voters in the applied configuration.
    pub fn voters(&self) -> &[NodeId] {
        &self.raw.store().applied.conf.voters
    }

    /// The index this node has committed, and (on a leader) how far each other voter's log
    /// matches its own: replication lag is `commit - matched`.
    pub fn progress(&self) -> (u64, Vec<(NodeId, u64)>) {
        let commit = self.raw.raft.raft_log.committed;
        let mut peers = Vec::new();
        if self.raw.raft.state == StateRole::Leader {
            for (id, pr) in self.raw.raft.prs().iter() {
                if *id != self.cfg.id {
                    peers.push((*id, pr.matched));
                }
            }
            peers.sort();
        }
        (commit, peers)
    }

    /// Raft's view of each voter's progress, for a failing seed's report.
    #[cfg(test)]
    pub(crate) fn debug_progress(&self) -> String {
        self.raw
            .raft
            .prs()
            .iter()
            .map(|(id, p)| format!("{id}: {:?}", p))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// A message from another node, received as `frame` ([`decode_frame`]): the bodies of
    /// its entries, once applied, are ranges of the frame (which the log's entries already
    /// keep in memory), not copies of them.
    pub fn handle_frame(&mut self, now: Time, msg: RaftMessage, frame: Arc<[u8]>) {
        self.now = self.now.max(now);
        let mut msg = msg;
        if !self.screen(&mut msg) {
            return;
        }
        let last = msg.entries.last().map(|e| e.index);
        let _ = self.raw.step(msg);
        // Kept only when raft took entries from it into its log (which then keeps the frame
        // alive anyway): a refused append's frame is let go at once.
        let taken = self
            .raw
            .raft
            .raft_log
            .unstable
            .entries
            .last()
            .is_some_and(|e| codec::offset_within(&frame, &e.data).is_some());
        if let Some(last) = last.filter(|_| taken) {
            if frame.len() <= codec::SHARED_MAX && self.frames.len() < MAX_FRAMES {
                self.frames.push_back((last, frame));
            }
        }
        self.settle();
    }

    /// A message from another node.
    pub fn handle_message(&mut self, now: Time, mut msg: RaftMessage) {
        self.now = self.now.max(now);
        if !self.screen(&mut msg) {
            return;
        }
        // A message from a node not (or no longer) in the group is ignored by raft.
        let _ = self.raw.step(msg);
        self.settle();
    }

    /// What raft must not take as it comes from a node that lost its disk, or while this one
    /// is catching up ([`NodeConfig::catching_up`]); `false`: drop the message.
    fn screen(&mut self, m: &mut RaftMessage) -> bool {
        let raft = &mut self.raw.raft;
        if m.get_msg_type() == MessageType::MsgAppendResponse
            && m.reject
            && raft.state == StateRole::Leader
            && m.term == raft.term
        {
            if let Some(pr) = raft.mut_prs().get_mut(m.from) {
                if m.reject_hint < pr.matched {
                    // A log shorter than what the peer acknowledged: its disk is gone. Raft
                    // would take the rejection for a stale one (and its heartbeats would
                    // carry a commit index beyond the peer's log): probe it from nothing,
                    // at the index it rejected, as raft probes any peer.
                    pr.matched = 0;
                    pr.become_probe();
                    pr.next_idx = m.index + 1;
                }
            }
        }
        let Some(target) = self.catching_up.as_mut() else {
            return true;
        };
        match m.get_msg_type() {
            // A candidate with a history may lack what this node acknowledged before it
            // lost its disk; one without (a new group's) lacks nothing, nor does one that
            // catches up too (unless two disks were lost at once: beyond any promise).
            MessageType::MsgRequestVote | MessageType::MsgRequestPreVote => {
                m.index <= BOOTSTRAP_INDEX || m.context == CATCHING_UP
            }
            MessageType::MsgHeartbeat => {
                // The leader's commit, up to where this log is known to match its log: up
                // to an entry of the leader's term (only the leader writes those, after
                // checking what precedes them), else no further than already committed.
                let log = &raft.raft_log;
                let last = log.last_index();
                let upto = if log.term(last).is_ok_and(|t| t == m.term) {
                    last
                } else {
                    log.committed
                };
                m.commit = m.commit.min(upto);
                if target.is_none() && m.term >= raft.term {
                    // No append yet: a leader that remembers what this node's old disk had
                    // sends none (it believes it has everything). A rejection naming where
                    // this log ends tells it otherwise.
                    let reject = RaftMessage {
                        msg_type: MessageType::MsgAppendResponse,
                        to: m.from,
                        from: self.cfg.id,
                        term: m.term,
                        index: last + 1,
                        reject: true,
                        reject_hint: last,
                        log_term: log.term(last).unwrap_or(0),
                        ..RaftMessage::default()
                    };
                    self.out.push_back(NodeOutput::Send(reject));
                }
                true
            }
            MessageType::MsgAppend if m.term >= raft.term => {
                target.get_or_insert(m.commit);
                true
            }
            MessageType::MsgSnapshot if m.term >= raft.term => {
                target.get_or_insert(m.get_snapshot().get_metadata().index);
                true
            }
            _ => true,
        }
    }

    /// Whether a node catching up has caught up: its log holds, committed and durable, an
    /// entry of its leader's term (so everything committed in earlier terms) and the commit
    /// index the leader first advertised to it (what was committed when it came back); a
    /// leader, once it has committed an entry of its term.
    fn check_caught_up(&mut self) {
        let Some(target) = self.catching_up else {
            return;
        };
        let raft = &self.raw.raft;
        let log = &raft.raft_log;
        let done = log.committed.min(log.persisted);
        let of_term = log.term(done).is_ok_and(|t| t == raft.term);
        let leading = raft.state == StateRole::Leader;
        if of_term && (leading || target.is_some_and(|t| done >= t)) {
            self.catching_up = None;
            self.out.push_back(NodeOutput::CaughtUp);
        }
    }

    /// A message to `to` could not be delivered (the connection failed): raft probes it
    /// again instead of waiting. For a snapshot, say so with [`Node::report_snapshot`].
    pub fn report_unreachable(&mut self, to: NodeId) {
        self.raw.report_unreachable(to);
        self.settle();
    }

    /// Whether a snapshot sent to `to` arrived: until told, raft sends it nothing else.
    pub fn report_snapshot(&mut self, to: NodeId, delivered: bool) {
        let status = if delivered {
            raft::SnapshotStatus::Finish
        } else {
            raft::SnapshotStatus::Failure
        };
        self.raw.report_snapshot(to, status);
        self.settle();
    }

    /// The host's write of the [`Persist`] numbered `number`, and of every one before it, is
    /// durable: what waited for it (acknowledgements, votes, applying entries) goes on.
    pub fn persisted(&mut self, now: Time, number: u64) {
        self.now = self.now.max(now);
        while self.writing.front().is_some_and(|n| *n <= number) {
            self.writing.pop_front();
        }
        self.release();
        self.settle();
    }

    /// Tell raft how far the disk has got, and send what waited for it.
    fn release(&mut self) {
        // Every ready before the first write still under way is durable (those with nothing
        // to write too).
        let through = self
            .writing
            .front()
            .map_or(self.last_ready, |n| n.saturating_sub(1));
        if through == 0 {
            return;
        }
        self.raw.on_persist_ready(through);
        self.advance_apply();
        while self.held.front().is_some_and(|(n, _)| *n <= through) {
            let (_, msgs) = self.held.pop_front().expect("checked");
            self.out.extend(msgs.into_iter().map(NodeOutput::Send));
        }
    }

    /// Tell raft what is applied: entries as they are, a snapshot once it is also durable.
    fn advance_apply(&mut self) {
        let applied = self.raw.store().applied.index;
        let log = &self.raw.raft.raft_log;
        if applied > log.applied && applied <= log.committed.min(log.persisted) {
            self.raw.advance_apply_to(applied);
        }
    }

    /// The earliest time [`Node::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Time> {
        let broker = self.leader.as_ref().and_then(|l| l.broker.poll_timeout());
        Some(broker.map_or(self.next_tick, |b| b.min(self.next_tick)))
    }

    /// Raft's ticks up to `now`, and the broker's timers.
    pub fn handle_timeout(&mut self, now: Time) {
        self.now = self.now.max(now);
        while self.next_tick <= self.now {
            self.raw.tick();
            self.next_tick += self.cfg.tick;
        }
        if let Some(l) = self.leader.as_mut() {
            l.broker.handle_timeout(self.now);
        }
        self.settle();
    }

    /// Do something with the serving broker (connect a client, hand it bytes, an admin call),
    /// at `now`; `None` when this node does not serve.
    pub fn with_broker<R>(
        &mut self,
        now: Time,
        f: impl FnOnce(&mut Broker, Time) -> R,
    ) -> Option<R> {
        self.now = self.now.max(now);
        let now = self.now;
        let r = f(&mut self.leader.as_mut()?.broker, now);
        self.settle();
        Some(r)
    }

    /// The serving broker, to read (stats).
    pub fn broker(&self) -> Option<&Broker> {
        self.leader.as_ref().map(|l| &l.broker)
    }

    /// The last ticket of the serving broker that is committed (0 before the first).
    pub fn stored_through(&self) -> Option<Ticket> {
        self.leader.as_ref().map(|l| l.acked)
    }

    /// Add a voter (on the leader; one change at a time). `address` travels with the change
    /// to every node ([`NodeOutput::Member`]): where the transport reaches the new one.
    pub fn propose_add(&mut self, id: NodeId, address: &str) -> Result<(), ReplicaError> {
        self.change(ConfChangeType::AddNode, id, address)
    }

    /// Remove a voter (on the leader; one change at a time).
    pub fn propose_remove(&mut self, id: NodeId) -> Result<(), ReplicaError> {
        self.change(ConfChangeType::RemoveNode, id, "")
    }

    fn change(
        &mut self,
        kind: ConfChangeType,
        id: NodeId,
        address: &str,
    ) -> Result<(), ReplicaError> {
        if id == 0 {
            return Err(ReplicaError::Raft(raft::Error::ConfChangeError(
                "node 0 does not exist".into(),
            )));
        }
        if self.raw.raft.state != StateRole::Leader {
            return Err(ReplicaError::NotLeader);
        }
        if self.raw.raft.has_pending_conf() {
            return Err(ReplicaError::ChangePending);
        }
        let mut cc = ConfChange::default();
        cc.set_change_type(kind);
        cc.node_id = id;
        cc.context = address.as_bytes().to_vec().into();
        self.raw.propose_conf_change(Vec::new(), cc)?;
        self.settle();
        Ok(())
    }

    /// The next thing for the host to do. Committed entries are applied here, once the
    /// outputs before them are taken: the writes and the messages to the other nodes leave
    /// before this node's own state machine catches up.
    pub fn poll_output(&mut self) -> Option<NodeOutput> {
        if self.out.is_empty() && !self.to_apply.is_empty() {
            let entries = std::mem::take(&mut self.to_apply);
            self.apply(entries);
            self.advance_apply();
            self.settle();
        }
        let mut o = self.out.pop_front();
        if let Some(NodeOutput::Send(m)) = o.as_mut() {
            let vote = matches!(
                m.get_msg_type(),
                MessageType::MsgRequestVote | MessageType::MsgRequestPreVote
            );
            if vote && self.catching_up.is_some() && m.context.is_empty() {
                m.context = CATCHING_UP.to_vec().into();
            }
        }
        o
    }

    /// Work until nothing moves: the broker's ops proposed, raft's readies handled (entries
    /// applied, acknowledgements released), leadership taken or given up.
    fn settle(&mut self) {
        loop {
            self.drain_broker();
            if !self.raw.has_ready() {
                self.check_role();
                if self.raw.has_ready() {
                    continue;
                }
                let more = self.leader.as_ref().is_some_and(|l| !l.ops.is_empty());
                if !more {
                    self.maybe_compact();
                    self.check_caught_up();
                    break;
                }
                continue;
            }
            self.on_ready();
        }
    }

    /// A leader that is one no more drops its broker.
    fn check_role(&mut self) {
        let term = self.raw.raft.term;
        let leading = self.raw.raft.state == StateRole::Leader;
        if let Some(l) = &self.leader {
            if !leading || l.term != term {
                let term = l.term;
                self.leader = None;
                self.out.push_back(NodeOutput::Deposed { term });
            }
        }
    }

    /// Move the broker's output on: store ops into a proposal, the rest to the host.
    fn drain_broker(&mut self) {
        let Some(l) = self.leader.as_mut() else {
            return;
        };
        let mut commit = None;
        while let Some(o) = l.broker.poll_output() {
            match o {
                Output::Store(op) => l.ops.push(op),
                Output::Commit { through } => commit = Some(through),
                // Bodies are never evicted here (see `Node::new`).
                Output::Load(_) => {}
                other => self.out.push_back(NodeOutput::Broker(other)),
            }
        }
        if l.ops.is_empty() {
            return;
        }
        let through = commit.unwrap_or(l.proposed).max(l.proposed);
        let batch = Batch {
            proposer: self.cfg.id,
            through,
            ops: std::mem::take(&mut l.ops),
        };
        l.proposed = through;
        let data = batch.encode();
        if self.raw.propose(Vec::new(), data).is_ok() {
            l.mine
                .push_back((self.raw.raft.raft_log.last_index(), batch));
        } else {
            // Not the leader any more: the broker goes (`check_role`).
            let term = l.term;
            self.leader = None;
            self.out.push_back(NodeOutput::Deposed { term });
        }
    }

    fn on_ready(&mut self) {
        let mut rd = self.raw.ready();
        let number = rd.number();
        self.last_ready = number;
        // A leader's messages (its entries to the followers among them) may leave before its
        // own write: raft thesis 10.2.1.
        for m in rd.take_messages() {
            self.out.push_back(NodeOutput::Send(m));
        }
        let mut persist = Persist {
            number,
            lazy: !rd.must_sync(),
            ..Persist::default()
        };
        if !rd.snapshot().is_empty() {
            // Every entry committed before is in the snapshot.
            self.to_apply.clear();
            let snap = rd.snapshot().clone();
            match replay_of(&snap.data) {
                Ok(replay) => {
                    let store = self.raw.mut_store();
                    let meta = snap.get_metadata();
                    store.applied = Applied {
                        replay,
                        index: meta.index,
                        term: meta.term,
                        conf: meta.get_conf_state().clone(),
                    };
                    let _ = store.mem.wl().apply_snapshot(snap.clone());
                    store.last = snap.clone();
                    self.snapshot_bytes = snap.data.len() as u64;
                    self.log_bytes = 0;
                    persist.snapshot = Some(snap);
                    self.forget_frames();
                }
                Err(_) => self.bad_entries += 1,
            }
        }
        // Committed and durable here (raft hands out nothing it has not been told is).
        self.to_apply.extend(rd.take_committed_entries());
        if !rd.entries().is_empty() {
            self.log_bytes += rd
                .entries()
                .iter()
                .map(|e| e.data.len() as u64)
                .sum::<u64>();
            // raft reads its log from the storage before the write is durable (to send it).
            let _ = self.raw.mut_store().mem.wl().append(rd.entries());
            persist.entries = rd.take_entries();
        }
        if let Some(hs) = rd.hs() {
            self.raw.mut_store().mem.wl().set_hardstate(hs.clone());
            persist.hard_state = Some(hs.clone());
        }
        // A heartbeat's answer claims nothing about this node's log or vote: it leaves at
        // once, so a long write (a snapshot rewriting the file) does not make a follower look
        // gone to its leader's check-quorum.
        let (at_once, after): (Vec<_>, Vec<_>) = rd
            .take_persisted_messages()
            .into_iter()
            .partition(|m| m.get_msg_type() == MessageType::MsgHeartbeatResponse);
        self.out.extend(at_once.into_iter().map(NodeOutput::Send));
        self.raw.advance_append_async(rd);
        self.advance_apply();
        if persist.snapshot.is_some() || !persist.entries.is_empty() || persist.hard_state.is_some()
        {
            self.writing.push_back(number);
            self.out.push_back(NodeOutput::Persist(persist));
        }
        if !after.is_empty() {
            self.held.push_back((number, after));
        }
        self.release();
    }

    /// Ask for a snapshot of the applied state once the log is big enough
    /// ([`NodeConfig::compact_bytes`]); [`Node::snapshot_built`] compacts the log with it.
    fn maybe_compact(&mut self) {
        if self.building {
            return;
        }
        let store = self.raw.store();
        if !store.wanted.get() {
            let due = self.cfg.compact_bytes.max(self.snapshot_bytes);
            if self.log_bytes < due {
                return;
            }
            // A snapshot that would not halve what the log and the last snapshot hold (little
            // was finished since: a topic nobody consumes) is not worth writing: the log stays
            // within twice what is owed.
            let kept = store.applied.replay.kept_bytes();
            if kept * 2 > self.snapshot_bytes + self.log_bytes {
                return;
            }
        }
        if store
            .mem
            .first_index()
            .map_or(true, |first| store.applied.index < first)
        {
            return;
        }
        store.wanted.set(false);
        self.building = true;
        self.out.push_back(NodeOutput::BuildSnapshot(SnapshotJob {
            applied: store.applied.clone(),
        }));
    }

    /// The snapshot of a [`NodeOutput::BuildSnapshot`], built: the log up to its index is
    /// replaced by it, and a [`NodeOutput::Persist`] asks the host to rewrite its file (the
    /// snapshot, the log after it, the hard state), in order with the other writes. A
    /// snapshot the log has moved past meanwhile (the leader sent a later one) is dropped.
    pub fn snapshot_built(&mut self, now: Time, snap: Snapshot) {
        self.now = self.now.max(now);
        self.building = false;
        let index = snap.get_metadata().index;
        let store = self.raw.mut_store();
        // Asked for while this one was built: this one already names every member raft could
        // be sending to (its progress exists once the change is applied, before the copy).
        store.wanted.set(false);
        let (Ok(first), Ok(last)) = (store.mem.first_index(), store.mem.last_index()) else {
            return;
        };
        if index < first || index > last {
            return;
        }
        let rest = if last > index {
            match store
                .mem
                .entries(index + 1, last + 1, None, GetEntriesContext::empty(false))
            {
                Ok(e) => e,
                Err(_) => return,
            }
        } else {
            Vec::new()
        };
        {
            let mut w = store.mem.wl();
            let hs = w.hard_state().clone();
            if w.apply_snapshot(snap.clone()).is_err() {
                return;
            }
            let _ = w.append(&rest);
            w.set_hardstate(hs);
        }
        store.last = snap.clone();
        self.snapshot_bytes = snap.data.len() as u64;
        self.log_bytes = rest.iter().map(|e| e.data.len() as u64).sum();
        // Written in order with the rest; nothing waits for it (number 0).
        self.out.push_back(NodeOutput::Persist(Persist {
            snapshot: Some(snap),
            ..Persist::default()
        }));
        // The log may be due again already (it grew while the snapshot was built).
        self.settle();
    }

    /// What is on disk once every output so far is written: the last snapshot is `snapshot`
    /// (a host rewriting its file when a [`NodeOutput::Persist`] brings one), then the log
    /// after it and raft's hard state.
    pub fn disk_after(&self, snapshot: &Snapshot) -> Disk {
        let index = snapshot.get_metadata().index;
        let mem = &self.raw.store().mem;
        let last = mem.last_index().unwrap_or(index);
        let hs = mem.rl().hard_state().clone();
        let entries = if last > index {
            mem.entries(index + 1, last + 1, None, GetEntriesContext::empty(false))
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        Disk {
            snapshot: snapshot.clone(),
            entries,
            hard_state: hs,
        }
    }

    fn apply(&mut self, entries: Vec<Entry>) {
        for e in entries {
            match e.get_entry_type() {
                EntryType::EntryNormal => {
                    if let Some(batch) = self.mine(&e) {
                        self.apply_batch(&e, batch);
                    } else if !e.data.is_empty() {
                        let frame = self
                            .frames
                            .iter()
                            .map(|(_, f)| f)
                            .find(|f| codec::offset_within(f, &e.data).is_some());
                        match Batch::decode_in(&e.data, frame) {
                            Ok(batch) => self.apply_batch(&e, batch),
                            Err(_) => self.bad_entries += 1,
                        }
                    }
                }
                EntryType::EntryConfChange => match ConfChange::parse_from_bytes(&e.data) {
                    Ok(cc) => {
                        if let Ok(cs) = self.raw.apply_conf_change(&cc) {
                            self.raw.mut_store().mem.wl().set_conf_state(cs.clone());
                            self.raw.mut_store().applied.conf = cs;
                            self.out.push_back(NodeOutput::Member {
                                id: cc.node_id,
                                joined: cc.get_change_type() != ConfChangeType::RemoveNode,
                                address: String::from_utf8_lossy(&cc.context).into_owned(),
                            });
                        }
                    }
                    Err(_) => self.bad_entries += 1,
                },
                // Joint consensus is never proposed here.
                EntryType::EntryConfChangeV2 => {}
            }
            let a = &mut self.raw.mut_store().applied;
            a.index = e.index;
            a.term = e.term;
            self.maybe_serve(e.term);
        }
        self.forget_frames();
        self.check_health();
    }

    /// The host's disk has little room left (`Some`: why), or room again (`None`): while it
    /// has not, the serving broker refuses publishes, as while the backlog is full.
    pub fn set_disk_low(&mut self, why: Option<String>) {
        self.disk_low = why;
        self.check_health();
    }

    /// The serving broker refuses publishes while the host's disk is low
    /// ([`Node::set_disk_low`]) or what the group owes is at
    /// [`NodeConfig::max_backlog_bytes`], and takes them again once neither is so.
    fn check_health(&mut self) {
        let max = self.cfg.max_backlog_bytes;
        let Some(l) = self.leader.as_mut() else {
            return;
        };
        let replay = &self.raw.store().applied.replay;
        let why = self.disk_low.clone().or_else(|| {
            // (Summed over the topics only when there is a limit to check.)
            let owed = if max > 0 { replay.kept_bytes() } else { 0 };
            (max > 0 && owed >= max)
                .then(|| format!("replicated backlog full: {owed} bytes owed, the limit is {max}"))
        });
        if why == l.refusing {
            return;
        }
        l.broker.set_health(why.clone().map(StoreFailure::from));
        l.refusing = why;
    }

    /// Let go of the frames whose entries are all applied (or replaced by a snapshot): what
    /// is still owed of them keeps them alive through its bodies.
    fn forget_frames(&mut self) {
        let applied = self.raw.store().applied.index;
        self.frames.retain(|(last, _)| *last > applied);
    }

    /// The batch of `e` if this node's serving broker proposed it (same index, same term).
    fn mine(&mut self, e: &Entry) -> Option<Batch> {
        let l = self.leader.as_mut()?;
        // Proposals an earlier entry replaced are never applied.
        while l.mine.front().is_some_and(|(i, _)| *i < e.index) {
            l.mine.pop_front();
        }
        if l.term != e.term || l.mine.front()?.0 != e.index {
            return None;
        }
        l.mine.pop_front().map(|(_, b)| b)
    }

    fn apply_batch(&mut self, e: &Entry, batch: Batch) {
        let a = &mut self.raw.mut_store().applied;
        for op in &batch.ops {
            a.replay.apply(op);
        }
        #[cfg(test)]
        assert_eq!(a.replay.kept_bytes(), a.replay.kept_bytes_recounted());
        if batch.proposer != self.cfg.id {
            return;
        }
        if let Some(l) = self.leader.as_mut() {
            if l.term == e.term && batch.through > l.acked {
                l.acked = batch.through;
                l.broker.handle_stored(self.now, batch.through, Ok(()));
                self.out.push_back(NodeOutput::Stored {
                    through: batch.through,
                });
            }
        }
    }

    /// A leader that has applied an entry of its own term has everything committed before:
    /// its broker starts from the applied state.
    fn maybe_serve(&mut self, entry_term: u64) {
        let term = self.raw.raft.term;
        if self.leader.is_some() || self.raw.raft.state != StateRole::Leader || entry_term != term {
            return;
        }
        let seed = self.cfg.seed ^ term.rotate_left(17) ^ self.cfg.id;
        let mut broker = Broker::new(self.cfg.opts.clone(), seed, self.now);
        self.raw
            .store()
            .applied
            .replay
            .restore_into(&mut broker, self.now);
        self.leader = Some(Leader {
            broker,
            term,
            ops: Vec::new(),
            proposed: 0,
            acked: 0,
            mine: VecDeque::new(),
            refusing: None,
        });
        self.out.push_back(NodeOutput::Leading { term });
    }
}

fn replay_of(data: &[u8]) -> Result<Replay, ReplicaError> {
    let mut replay = Replay::new();
    // The log is the replay's only record: what nothing owes is not kept.
    replay.forget_finished();
    if !data.is_empty() {
        for op in &Batch::decode(data)?.ops {
            replay.apply(op);
        }
    }
    Ok(replay)
}

#[cfg(test)]
mod tests;
