//! The broker task of a replicated node (`--replicas`): the one owner of its
//! [`Node`], fed by connections, HTTP handlers, the peers' raft messages and the clock, as
//! `super::super::driver` feeds a partition.
//!
//! Each wake-up: the input goes to the node, then its outputs are carried out in order —
//! `Persist` handed to the log's writer thread (which appends, syncs once for every write
//! that queued meanwhile, and reports back how far it got: [`Node::persisted`]), messages to
//! the transport, the serving broker's output to its connections, nsqlookupd and the event
//! stream. This task never waits for the disk: the node holds back what must follow a write.
//! Nor does it build snapshots: a [`NodeOutput::BuildSnapshot`] is built on a thread of its
//! own and handed back ([`Node::snapshot_built`]).
//!
//! Clients reach the broker only while this node serves (it leads and has caught up). A
//! connection that arrives otherwise is closed at once; nsqlookupd lists only the leader (a
//! deposed leader unregisters everything it had registered), so clients that use it go
//! there. A broker's client IDs are made unique across terms here (`term << 32 | id`), so
//! input still arriving from a connection of a deposed broker reaches no one.

use super::log::{LogError, RaftLog, ROOM_KEPT};
use super::transport::{Received, Report, Transport};
use crate::nsqd::driver::{ask_auth, out_of, AfterStore, DriverHandle, Out, ToDriver};
use crate::nsqd::store::StoreError;
use nsqlab_core::partition::ClientInput;
use nsqlab_core::replica::raft::prelude::Snapshot;
use nsqlab_core::replica::{Disk, Persist, SnapshotJob};
use nsqlab_core::replica::{Node, NodeOutput};
use nsqlab_core::{Broker, ClientId, Event, Output, RegistryChange, Ticket, Time};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

/// Everything the task needs besides the node.
pub struct Parts {
    pub node: Node,
    pub log: RaftLog,
    /// The directory `raft.log` is in (its room is watched: [`disk_low`]).
    pub data_path: std::path::PathBuf,
    pub transport: Transport,
    pub inbox: mpsc::UnboundedReceiver<Received>,
    pub reports: mpsc::UnboundedReceiver<Report>,
    /// Answers calls while the node does not serve (empty: stats of nothing).
    pub standby: Broker,
    pub auth: crate::nsqd::auth::AuthConfig,
    pub registry: mpsc::UnboundedSender<RegistryChange>,
}

/// Start the task; it ends when `shutdown` flips, or when the node cannot go on (its raft
/// log could not be written): then `stopped` says why, and the process should exit.
pub fn spawn(
    p: Parts,
    shutdown: watch::Receiver<bool>,
) -> (
    DriverHandle,
    tokio::task::JoinHandle<Broker>,
    oneshot::Receiver<String>,
) {
    let (events, _) = broadcast::channel(65_536);
    let (tx, rx) = mpsc::channel(4096);
    let handle = DriverHandle::single(tx.clone(), events.clone(), p.standby.options());
    let log_used = p.log.used();
    let (writer, written) = start_writer(p.log);
    let (snapshots, built) = start_builder();
    let (stop_tx, stopped) = oneshot::channel();
    let task = Task {
        node: p.node,
        writer,
        transport: p.transport,
        standby: p.standby,
        conns: HashMap::new(),
        waiting: Vec::new(),
        registered: BTreeSet::new(),
        events,
        registry: p.registry,
        auth: Arc::new(p.auth),
        me: tx.downgrade(),
        auth_start: 0,
        failed: None,
        stopped: Some(stop_tx),
        data_path: p.data_path,
        log_used,
        snapshots,
    };
    let join = tokio::spawn(task.run(rx, p.inbox, p.reports, written, built, shutdown));
    (handle, join, stopped)
}

/// A write for the log's writer thread.
enum Write {
    Append(Persist),
    /// Replace the file by this disk (a snapshot and what follows it); then report `number`.
    Rewrite(Disk, u64),
    /// The node has caught up: remove the data path's mark ([`CATCHING_UP_NAME`]).
    CaughtUp(std::path::PathBuf),
}

/// Start the thread that owns `raft.log`: it writes what it is sent in order, syncs once for
/// all that queued while it was busy (unless all were lazy), and reports the number of the
/// last one written (or the error that stopped it).
fn start_writer(
    mut log: RaftLog,
) -> (
    std::sync::mpsc::Sender<Write>,
    mpsc::UnboundedReceiver<Result<u64, LogError>>,
) {
    let (tx, rx) = std::sync::mpsc::channel::<Write>();
    let (done, written) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("nsqlab-raft-log".into())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut number = 0;
                let mut unsynced = false;
                let mut result = Ok(());
                for w in std::iter::once(first).chain(rx.try_iter()) {
                    result = match w {
                        Write::Append(p) => {
                            number = number.max(p.number);
                            // A lazy write (a commit index) is reported unsynced.
                            unsynced |= !p.lazy;
                            log.append(&p)
                        }
                        // A rewrite is durable when it returns.
                        Write::Rewrite(disk, n) => {
                            number = number.max(n);
                            unsynced = false;
                            log.rewrite(&disk)
                        }
                        // Left in place (a restart catches up again) if it cannot go.
                        Write::CaughtUp(mark) => {
                            if let Err(e) = std::fs::remove_file(&mark) {
                                tracing::warn!("replication: {}: {e}", mark.display());
                            }
                            Ok(())
                        }
                    };
                    if result.is_err() {
                        break;
                    }
                }
                if result.is_ok() && unsynced {
                    result = log.sync();
                }
                let failed = result.is_err();
                if done.send(result.map(|()| number)).is_err() || failed {
                    return;
                }
            }
        })
        .expect("spawn the raft log's writer");
    (tx, written)
}

/// Start the thread that builds the node's snapshots (the applied state's ops, encoded:
/// time in proportion to what the node owes), one at a time, and sends each back.
fn start_builder() -> (
    std::sync::mpsc::Sender<SnapshotJob>,
    mpsc::UnboundedReceiver<Snapshot>,
) {
    let (tx, rx) = std::sync::mpsc::channel::<SnapshotJob>();
    let (done, built) = mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name("nsqlab-raft-snapshot".into())
        .spawn(move || {
            while let Ok(job) = rx.recv() {
                if done.send(job.build()).is_err() {
                    return;
                }
            }
        })
        .expect("spawn the raft snapshot builder");
    (tx, built)
}

struct Task {
    node: Node,
    /// The log's writer thread.
    writer: std::sync::mpsc::Sender<Write>,
    transport: Transport,
    standby: Broker,
    /// The serving broker's connections, by the IDs given to them (`term << 32 | id`).
    conns: HashMap<ClientId, mpsc::UnboundedSender<Out>>,
    /// HTTP calls waiting for their publishes to commit: the ticket, and the answer.
    waiting: Vec<(Ticket, AfterStore)>,
    /// What this node registered with nsqlookupd (unregistered when it stops serving).
    registered: BTreeSet<(nsqlab_core::Name, Option<nsqlab_core::Name>)>,
    events: broadcast::Sender<Event>,
    registry: mpsc::UnboundedSender<RegistryChange>,
    auth: Arc<crate::nsqd::auth::AuthConfig>,
    me: mpsc::WeakSender<ToDriver>,
    auth_start: usize,
    /// Why the node stops taking part (its raft log could not be written).
    failed: Option<String>,
    /// Where that is said when the task ends.
    stopped: Option<oneshot::Sender<String>>,
    /// The directory `raft.log` is in.
    data_path: std::path::PathBuf,
    /// The raft log's bytes (its base and records since: `RaftLog::used`).
    log_used: Arc<std::sync::atomic::AtomicU64>,
    /// The thread that builds snapshots (they come back on `run`'s `built`).
    snapshots: std::sync::mpsc::Sender<SnapshotJob>,
}

/// The ID a connection of the broker serving in `term` knows its client by.
fn outer(term: u64, id: ClientId) -> ClientId {
    ClientId(term << 32 | (id.0 & 0xffff_ffff))
}

impl Task {
    /// The broker's ID for a connection's, if the connection is of the serving broker.
    fn inner(&self, id: ClientId) -> Option<ClientId> {
        let term = self.node.serving_term()?;
        (id.0 >> 32 == term & 0xffff_ffff).then_some(ClientId(id.0 & 0xffff_ffff))
    }

    async fn run(
        mut self,
        mut rx: mpsc::Receiver<ToDriver>,
        mut inbox: mpsc::UnboundedReceiver<Received>,
        mut reports: mpsc::UnboundedReceiver<Report>,
        mut written: mpsc::UnboundedReceiver<Result<u64, LogError>>,
        mut built: mpsc::UnboundedReceiver<Snapshot>,
        mut shutdown: watch::Receiver<bool>,
    ) -> Broker {
        let mut room = tokio::time::interval(ROOM_EVERY);
        room.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut room_seen = std::time::Instant::now();
        loop {
            if let Some(b) = self.node.broker() {
                let listening = self.events.receiver_count() > 0;
                if b.options().events != listening {
                    self.node
                        .with_broker(crate::clock::now(), |b, _| b.set_events(listening));
                }
            }
            let next = self.node.poll_timeout();
            let sleep = async {
                match next {
                    Some(t) => {
                        let now = crate::clock::now();
                        tokio::time::sleep(Duration::from_nanos(t.saturating_sub(now))).await
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                m = inbox.recv() => {
                    if let Some((m, frame)) = m {
                        self.node.handle_frame(crate::clock::now(), m, frame);
                    }
                    while let Ok((m, frame)) = inbox.try_recv() {
                        self.node.handle_frame(crate::clock::now(), m, frame);
                    }
                }
                r = reports.recv() => {
                    if let Some(r) = r {
                        self.report(r);
                    }
                }
                w = written.recv() => {
                    if w.is_none() {
                        self.fail("the raft log's writer is gone");
                    }
                    let mut last = None;
                    for w in w.into_iter().chain(std::iter::from_fn(|| written.try_recv().ok())) {
                        match w {
                            Ok(n) => last = last.max(Some(n)),
                            Err(e) => self.fail(e.to_string()),
                        }
                    }
                    if let Some(n) = last {
                        self.node.persisted(crate::clock::now(), n);
                    }
                }
                Some(snap) = built.recv() => {
                    self.node.snapshot_built(crate::clock::now(), snap);
                }
                m = rx.recv() => {
                    let Some(m) = m else { break };
                    self.handle(m);
                    for _ in 0..1024 {
                        match rx.try_recv() {
                            Ok(m) => self.handle(m),
                            Err(_) => break,
                        }
                    }
                }
                // (Wakes an idle task: a busy one looks below, whichever branch ran.)
                _ = room.tick() => {}
                _ = sleep => {}
                _ = shutdown.changed() => break,
            }
            if room_seen.elapsed() >= ROOM_EVERY {
                room_seen = std::time::Instant::now();
                self.look_at_room();
            }
            let now = crate::clock::now();
            if self.node.poll_timeout().is_some_and(|t| t <= now) {
                self.node.handle_timeout(now);
            }
            self.flush();
            if self.failed.is_some() {
                break;
            }
        }
        if let Some(mut why) = self.failed.take() {
            // The writer sends its error before it stops; the send that found it stopped may
            // have come first.
            while let Ok(w) = written.try_recv() {
                if let Err(e) = w {
                    why = e.to_string();
                }
            }
            tracing::error!("replication: {why}: this node stops");
            if let Some(tx) = self.stopped.take() {
                let _ = tx.send(why);
            }
        }
        for (_, reply) in self.waiting.drain(..) {
            reply(Err(StoreError::Closed));
        }
        self.standby
    }

    /// Whether `raft.log` is still there, and the disk has room for more publishes.
    fn look_at_room(&mut self) {
        let log = self.data_path.join(super::log::FILE_NAME);
        if std::fs::symlink_metadata(&log).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            // Writes would go on into a file no restart can find.
            self.fail(format!(
                "{} is gone (its disk or directory removed)",
                log.display()
            ));
        } else {
            let log = self.log_used.load(std::sync::atomic::Ordering::Relaxed);
            self.node.set_disk_low(disk_low(&self.data_path, log));
        }
    }

    /// The node cannot go on (the first reason is kept).
    fn fail(&mut self, why: impl Into<String>) {
        if self.failed.is_none() {
            self.failed = Some(why.into());
        }
    }

    fn report(&mut self, r: Report) {
        match r {
            Report::Unreachable(id) => self.node.report_unreachable(id),
            Report::Snapshot { to, delivered } => self.node.report_snapshot(to, delivered),
        }
    }

    fn handle(&mut self, m: ToDriver) {
        let now = crate::clock::now();
        match m {
            ToDriver::Connect { remote, out, reply } => {
                let term = self.node.serving_term();
                match self.node.with_broker(now, |b, now| b.connect(now, remote)) {
                    Some(id) => {
                        let id = outer(term.expect("serving"), id);
                        self.conns.insert(id, out);
                        let _ = reply.send(id);
                    }
                    None => {
                        // Not the leader: nothing is served here.
                        let _ = out.send(Out::Close);
                        let _ = reply.send(ClientId(u64::MAX));
                    }
                }
            }
            ToDriver::Client { client, input } => {
                let Some(id) = self.inner(client) else {
                    if matches!(input, ClientInput::Closed) {
                        self.conns.remove(&client);
                    }
                    return;
                };
                if matches!(input, ClientInput::Closed) {
                    self.conns.remove(&client);
                }
                self.node.with_broker(now, |b, now| match input {
                    ClientInput::Bytes(bytes) => b.handle_bytes(now, id, &bytes),
                    ClientInput::Eof => b.handle_eof(now, id),
                    ClientInput::Closed => b.disconnect(now, id),
                    ClientInput::Tls(peer) => b.handle_tls_peer(id, peer),
                    ClientInput::Drained => {}
                });
            }
            ToDriver::Auth { client, answer } => {
                if let Some(id) = self.inner(client) {
                    self.node
                        .with_broker(now, |b, now| b.handle_auth_response(now, id, answer));
                }
            }
            // A follower answers calls from an empty broker (its stats: nothing served here).
            ToDriver::Call(job) => {
                if self.node.is_serving() {
                    self.node.with_broker(now, |b, now| job(b, now));
                } else {
                    job(&mut self.standby, now);
                }
            }
            ToDriver::CallStored(job) => {
                if !self.node.is_serving() {
                    // Refused: run on a copy of the empty broker, so what it changed is
                    // thrown away, and answered as a failed write.
                    let mut scratch = self.standby.clone();
                    job(&mut scratch, now)(Err(StoreError::NotLeader));
                    return;
                }
                let done = self.node.with_broker(now, |b, now| {
                    let reply = job(b, now);
                    (reply, b.last_ticket())
                });
                if let Some((reply, ticket)) = done {
                    if self.node.stored_through().is_some_and(|s| s >= ticket) {
                        reply(Ok(()));
                    } else {
                        self.waiting.push((ticket, reply));
                    }
                }
            }
            ToDriver::Tick => {}
            ToDriver::Node(job) => job(Some(&mut self.node)),
        }
    }

    /// Carry out the node's outputs, in order.
    fn flush(&mut self) {
        let mut reports = Vec::new();
        loop {
            while let Some(o) = self.node.poll_output() {
                match o {
                    NodeOutput::Persist(p) => {
                        // A snapshot (the node compacted its log, or the leader sent one)
                        // replaces the file: the snapshot, the log after it, the hard state.
                        let w = match &p.snapshot {
                            Some(snap) => Write::Rewrite(self.node.disk_after(snap), p.number),
                            None => Write::Append(p),
                        };
                        if self.writer.send(w).is_err() {
                            // The writer stopped on an error (reported on its channel).
                            self.fail("the raft log's writer stopped");
                            return;
                        }
                    }
                    NodeOutput::Send(m) => {
                        if let Err(r) = self.transport.send(m) {
                            reports.push(r);
                        }
                    }
                    NodeOutput::BuildSnapshot(job) => {
                        if self.snapshots.send(job).is_err() {
                            self.fail("the snapshot builder is gone");
                            return;
                        }
                    }
                    NodeOutput::CaughtUp => {
                        tracing::info!(
                            "replication: node {} has caught up: it votes as any member",
                            self.node.id()
                        );
                        let mark = self.data_path.join(CATCHING_UP_NAME);
                        if self.writer.send(Write::CaughtUp(mark)).is_err() {
                            self.fail("the raft log's writer stopped");
                            return;
                        }
                    }
                    NodeOutput::Leading { term } => {
                        tracing::info!("replication: node {} leads (term {term})", self.node.id());
                    }
                    NodeOutput::Deposed { term } => {
                        tracing::info!(
                            "replication: node {} no longer leads (term {term})",
                            self.node.id()
                        );
                        for (_, out) in self.conns.drain() {
                            let _ = out.send(Out::Close);
                        }
                        for (_, reply) in self.waiting.drain(..) {
                            reply(Err(StoreError::NotLeader));
                        }
                        for (topic, channel) in std::mem::take(&mut self.registered) {
                            let _ = self
                                .registry
                                .send(RegistryChange::Unregister { topic, channel });
                        }
                    }
                    NodeOutput::Stored { through } => {
                        let (done, wait): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
                            .into_iter()
                            .partition(|(t, _)| *t <= through);
                        self.waiting = wait;
                        for (_, reply) in done {
                            reply(Ok(()));
                        }
                    }
                    NodeOutput::Member {
                        id,
                        joined,
                        address,
                    } => {
                        tracing::info!(
                            "replication: node {id} {} the group{}",
                            if joined { "joined" } else { "left" },
                            if address.is_empty() {
                                String::new()
                            } else {
                                format!(" (at {address})")
                            }
                        );
                        if joined {
                            self.transport.add_peer(id, &address);
                        } else {
                            self.transport.remove_peer(id);
                        }
                    }
                    NodeOutput::Broker(o) => self.broker_output(o),
                }
            }
            if reports.is_empty() {
                break;
            }
            for r in reports.drain(..) {
                self.report(r);
            }
        }
    }

    fn broker_output(&mut self, o: Output) {
        let Some(term) = self.node.serving_term() else {
            return;
        };
        match o {
            Output::Transmit(t) => {
                let (client, out) = out_of(t);
                if let Some(tx) = self.conns.get(&outer(term, client)) {
                    let _ = tx.send(out);
                }
            }
            Output::Registry(c) => {
                match &c {
                    RegistryChange::Register { topic, channel } => {
                        self.registered.insert((topic.clone(), channel.clone()));
                    }
                    RegistryChange::Unregister { topic, channel } => {
                        self.registered.remove(&(topic.clone(), channel.clone()));
                    }
                }
                let _ = self.registry.send(c);
            }
            Output::Event(e) => {
                let _ = self.events.send(e);
            }
            Output::Auth(mut req) => {
                // The answer names the client as its connection knows it.
                req.client = outer(term, req.client);
                self.auth_start = self.auth_start.wrapping_add(1);
                ask_auth(self.auth.clone(), req, self.auth_start, self.me.clone());
            }
            // The node keeps these (the log) and never evicts bodies.
            Output::Store(_) | Output::Commit { .. } | Output::Load(_) => {}
            Output::Route(never) => match never {},
        }
    }
}

/// The data path's raft log, the node on it, and the transport, for `--replicas`.
pub async fn open(
    args: &crate::nsqd::NsqdArgs,
    opts: nsqlab_core::Options,
    data_path: &std::path::Path,
    now: Time,
) -> anyhow::Result<(
    Node,
    RaftLog,
    Transport,
    mpsc::UnboundedReceiver<Received>,
    mpsc::UnboundedReceiver<Report>,
)> {
    use nsqlab_core::replica::NodeConfig;
    let peers = args.raft_peers().map_err(anyhow::Error::msg)?;
    let me = opts.node_id as u64;
    std::fs::create_dir_all(data_path)?;
    let compact_bytes = args.raft_snapshot_bytes.max(4096);
    let (opened, disk) = RaftLog::open(data_path, compact_bytes)?;
    let catching_up = catching_up(data_path, disk.is_empty())?;
    let voters: Vec<u64> = peers.iter().map(|(id, _)| *id).collect();
    let disk = starting_disk(disk, &voters, args.raft_join);
    // Written (durably) before anything else, as the base of a new generation.
    let log = opened.start(&disk)?;
    let cfg = NodeConfig {
        compact_bytes,
        max_backlog_bytes: args
            .raft_max_backlog_bytes
            .unwrap_or_else(|| machine_memory() / 4),
        catching_up,
        ..NodeConfig::new(me, opts, now)
    };
    if catching_up {
        tracing::info!(
            "replication: node {me} starts with nothing on its disk: until it has caught up \
             with a leader it votes only for candidates as new as itself (a node that lost its \
             disk must not help elect one lacking what it had acknowledged)"
        );
    }
    match cfg.max_backlog_bytes {
        0 => tracing::info!("replication: no limit on the backlog kept in memory"),
        max => tracing::info!(
            "replication: publishes are refused while what is owed holds {max} bytes or more"
        ),
    }
    let node = Node::new(cfg, &disk, now)?;
    let listener = tokio::net::TcpListener::bind(&args.raft_address).await?;
    tracing::info!(
        "replication: node {me} of {:?}, raft listening on {}",
        peers.iter().map(|p| p.0).collect::<Vec<_>>(),
        listener.local_addr()?
    );
    let (itx, irx) = mpsc::unbounded_channel();
    let (rtx, rrx) = mpsc::unbounded_channel();
    let transport = Transport::start(me, listener, &peers, itx, rtx);
    Ok((node, log, transport, irx, rrx))
}

/// How often [`disk_low`] is asked.
const ROOM_EVERY: Duration = Duration::from_millis(100);

/// Whether the disk holding the raft log in `dir` is too full for more publishes (why, if
/// so); `log`: the bytes of its generation (base and records since). A compaction writes a
/// snapshot of at most half of those beside them before it replaces them, so half stays
/// free, and [`ROOM_KEPT`] more (for what is written between two looks and for what
/// consumers still do, FINs, so that draining is never stopped by the disk): a group whose
/// disks fill refuses publishes, as a single node does, rather than stop every node at its
/// next write.
fn disk_low(dir: &std::path::Path, log: u64) -> Option<String> {
    let free = crate::nsqd::store::sys::free_bytes(dir)?;
    let kept = log / 2 + ROOM_KEPT;
    (free < kept).then(|| {
        format!("too little room on disk: {free} bytes free, {kept} kept for the raft log")
    })
}

/// The data path's mark that its node started with nothing on its disk and has not caught
/// up since ([`nsqlab_core::replica::NodeConfig::catching_up`]).
pub const CATCHING_UP_NAME: &str = "raft.catching-up";

/// Whether the node in `dir` is catching up: it is when its log is `empty` (the mark is then
/// made, durably, before anything else is written), or the mark is still there.
fn catching_up(dir: &std::path::Path, empty: bool) -> std::io::Result<bool> {
    let mark = dir.join(CATCHING_UP_NAME);
    if !empty {
        return mark.try_exists();
    }
    let mut f = std::fs::File::create(&mark)?;
    std::io::Write::write_all(
        &mut f,
        b"This node started with nothing on its disk (new, or its disk was lost) and has not \
          caught up with a leader since: until it has, it votes only for candidates as new as \
          itself. nsqlab removes this file once it has caught up.\n",
    )?;
    f.sync_all()?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(true)
}

/// What a node starts from, given what its raft log holds.
fn starting_disk(disk: Disk, voters: &[u64], join: bool) -> Disk {
    // A node joining an existing group starts empty: the leader sends it everything once it
    // is added (`POST /raft/add`).
    if disk.is_empty() && !join {
        // A new group: every first voter starts from the same snapshot, written first, so
        // that a restart starts from it too.
        return Disk::bootstrap(voters);
    }
    if disk.snapshot.get_metadata().index == 0 && disk.entries.first().is_some_and(|e| e.index == 2)
    {
        // A first voter's log written before that snapshot was: its entries follow the
        // snapshot (index 1) every first voter started from. (Its voters are taken from
        // --raft-peer, which names the first voters as long as the group never changed.)
        tracing::warn!("replication: raft.log lacks the group's first snapshot: written now");
        let snapshot = Disk::bootstrap(voters).snapshot;
        return Disk { snapshot, ..disk };
    }
    disk
}

/// This machine's memory in bytes: `MemTotal`, or the cgroup's `memory.max` when that is
/// less; 4 GiB where neither can be read.
fn machine_memory() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| mem_total(&s))
        .unwrap_or(4 << 30);
    let limit = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    limit.map_or(total, |l| l.min(total))
}

/// `MemTotal` of a `/proc/meminfo`, in bytes.
fn mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nsqlab_core::replica::raft::prelude::Entry;

    #[test]
    fn an_empty_data_path_is_marked_catching_up_until_the_mark_is_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mark = dir.path().join(CATCHING_UP_NAME);
        // A log read back: not catching up, and no mark made.
        assert!(!catching_up(dir.path(), false).expect("read"));
        assert!(!mark.exists());
        // Nothing on the disk: marked first.
        assert!(catching_up(dir.path(), true).expect("mark"));
        assert!(mark.exists());
        // Restarted before it caught up: still catching up, its log not empty any more.
        assert!(catching_up(dir.path(), false).expect("read"));
        std::fs::remove_file(&mark).expect("caught up");
        assert!(!catching_up(dir.path(), false).expect("read"));
    }

    #[test]
    fn a_new_group_starts_from_its_bootstrap_snapshot_written_first() {
        let disk = starting_disk(Disk::default(), &[1, 2, 3], false);
        assert_eq!(disk, Disk::bootstrap(&[1, 2, 3]));
        // A node joining starts empty, and is sent what it needs.
        let disk = starting_disk(Disk::default(), &[1, 2, 3], true);
        assert!(disk.is_empty());
    }

    #[test]
    fn a_log_without_the_bootstrap_snapshot_gets_it_back() {
        let boot = Disk::bootstrap(&[1, 2, 3]);
        let entry = |index| Entry {
            index,
            term: 2,
            ..Entry::default()
        };
        // Entries from index 2, no snapshot: a first voter's log from before it was written.
        let old = Disk {
            snapshot: Default::default(),
            entries: vec![entry(2), entry(3)],
            hard_state: boot.hard_state.clone(),
        };
        let disk = starting_disk(old.clone(), &[1, 2, 3], false);
        assert_eq!(disk.snapshot, boot.snapshot);
        assert_eq!(disk.entries, old.entries);
        // A log that has its snapshot is taken as it is.
        let same = starting_disk(disk.clone(), &[1, 2, 3], false);
        assert_eq!(same, disk);
    }

    #[test]
    fn mem_total_is_read_in_bytes() {
        let m = "MemFree:  100 kB\nMemTotal:       8039600 kB\nBuffers: 1 kB\n";
        assert_eq!(mem_total(m), Some(8_039_600 * 1024));
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }
}
