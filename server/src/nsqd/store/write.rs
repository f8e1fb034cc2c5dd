//! Writing: ops applied into per-topic buffers, committed with one write per topic, metadata
//! kept, files closed when too many are open, and the probe that finds storage working again.

use super::batch::{undo_batch, Batch};
use super::error::{io_err, StoreError};
use super::prep::{ask_next, Prep, Prepared};
use super::segment::{compact, create_segment, empty_finished_tail, make_again, roll};
use super::sync::{mark_dirty, SyncMsg};
use super::sys::{free_bytes, fsync, removed, sync_dir, write_atomic, write_unsynced};
use super::{index, record, seg_path};
use super::{ChannelMeta, Segment, Store, Tail, TopicMeta, TopicStore};
use nsqlab_core::{Message, MessageId, Name, StoreOp, Time};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::fs;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Buffer capacity a topic keeps between commits.
pub(super) const PENDING_KEEP: usize = 1 << 20;

/// A sync is asked for after `--sync-every` messages or `--sync-every` times this many bytes
/// of log, whichever comes first: 2500 messages or 250 000 bytes by default (a larger
/// `--sync-every` still means fewer syncs). Smaller, steadier syncs kept publishers' round
/// trips shorter than a sync every 2500 messages alone, which with 200-byte messages wrote
/// about 1 MB each time (docs/storage.md has the measurements).
pub(super) const SYNC_UNIT: u64 = 100;

/// A sync for size alone comes at most this often: above about 125 MB/s of log, a sync per
/// 250 KB came more often than helped the publishers' round trips; below that rate this
/// never binds (docs/storage.md).
pub(super) const SYNC_GAP: Duration = Duration::from_millis(2);

/// A topic whose unwritten records are all FINs writes them once they are this many bytes,
/// or [`FIN_WAIT`] after a commit first left them, whichever comes first, not at every
/// commit. Nobody waits for a FIN to be written (a consumer gets no answer to it), and one
/// lost to a crash only delivers its message again, which at-least-once allows. A consumer
/// draining a backlog otherwise made a write of a few FINs at every commit, a cost its drain
/// rate showed (docs/storage.md).
pub(super) const FIN_BATCH: usize = 64 << 10;

/// How long FINs wait to be written at most (see [`FIN_BATCH`]): what a crash can deliver
/// again beyond what the page cache held unsynced anyway.
pub(super) const FIN_WAIT: Duration = Duration::from_millis(20);

/// A failing store is healthy again only once its file system has this much room: a few
/// messages' worth is not enough to call it writable.
pub(super) const PROBE_ROOM: u64 = 1 << 20;

/// Whether the file system of `root` has [`PROBE_ROOM`]: room for a marker is not room for
/// messages, and publishers told all is well would fail again at once (with `/ping` swinging
/// between OK and not).
pub(super) fn short_of_room(root: &std::path::Path) -> Result<(), StoreError> {
    match free_bytes(root).filter(|&f| f < PROBE_ROOM) {
        None => Ok(()),
        Some(free) => Err(StoreError::io(
            "write",
            root,
            std::io::Error::from_raw_os_error(28),
        ))
        .inspect_err(|_| {
            tracing::debug!("storage: {free} bytes free, waiting for {PROBE_ROOM}");
        }),
    }
}

/// The segment holding message `id` gains (or loses) `delta` live copies.
/// Only messages the log recorded count: one whose record was never written (a failed write)
/// or whose segment is gone changes nothing.
pub(super) fn add_ref(ts: &mut TopicStore, id: MessageId, delta: i64) {
    let Some(seg) = ts.index.segment_of(id.0) else {
        return;
    };
    if let Some(i) = ts.segment_pos(u64::from(seg)) {
        ts.segments[i].refs += delta;
    }
}

/// Where channel `channel`'s FINs go: the seal of topic store `ts`'s next records, and the
/// channel's key (none for a channel the store does not know).
fn fin_target(ts: &TopicStore, channel: &str) -> (record::Seal, Option<u32>) {
    (ts.seal(), ts.meta.channels.get(channel).map(|c| c.key))
}

/// Messages `ids` are finished on the channel whose key is `key` (none: a channel the store
/// does not know, whose FINs are not recorded): their FIN records (one for up to
/// [`record::FINS_PER_RECORD`] of them), and their copies released.
fn fin(ts: &mut TopicStore, seal: record::Seal, key: Option<u32>, ids: &[MessageId]) {
    if let Some(key) = key {
        let before = ts.pending.len();
        for some in ids.chunks(record::FINS_PER_RECORD) {
            record::put_fin(&mut ts.pending, seal, key, some);
        }
        ts.pending_fins += ts.pending.len() - before;
    }
    for &id in ids {
        add_ref(ts, id, -1);
    }
}

pub(super) fn write_meta(ts: &TopicStore) -> Result<(), StoreError> {
    write_atomic(&ts.dir.join("meta.json"), &meta_bytes(ts))
}

pub(super) fn meta_bytes(ts: &TopicStore) -> Vec<u8> {
    serde_json::to_vec_pretty(&ts.meta).expect("metadata serialises")
}

/// What a write added to the log: messages (for `--sync-every`) and bytes.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Wrote {
    pub(super) msgs: u64,
    pub(super) bytes: u64,
}

impl std::ops::AddAssign for Wrote {
    fn add_assign(&mut self, w: Wrote) {
        self.msgs += w.msgs;
        self.bytes += w.bytes;
    }
}

/// Fill in the checks of the PUB records in `pending` still without one (they lie where the
/// tail's seal says until `pending` is written).
fn seal_pending(ts: &mut TopicStore) {
    if !ts.unsealed.is_empty() {
        let seal = ts.seal();
        record::seal_checks(&mut ts.pending, seal, &ts.unsealed);
        ts.unsealed.clear();
    }
}

/// Write a topic's buffered records to its tail segment; on failure cut the file back so no
/// half record stays behind.
pub(super) fn write_pending(ts: &mut TopicStore) -> Result<Wrote, StoreError> {
    seal_pending(ts);
    let file = ts.tail()?.clone();
    let tail = ts.segments.back_mut().expect("a segment");
    let path = seg_path(&ts.dir, tail.num);
    // After the write: a file removed from under us takes writes as if nothing happened, and
    // what it holds is gone at the next start. Those publishers must not hear OK.
    let written = (&file.file)
        .write_all(&ts.pending)
        .and_then(|()| match removed(&file.file) {
            true => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the file was removed while open",
            )),
            false => Ok(()),
        });
    match written {
        Ok(()) => {
            let bytes = ts.pending.len() as u64;
            let b = ts.batch.get_or_insert(Batch {
                num: tail.num,
                len: tail.len,
                copies: 0,
                first: None,
            });
            if b.num == tail.num {
                b.copies += ts.pending_copies;
            }
            b.first = b.first.or(ts.pending_first);
            tail.len += bytes;
            ts.pending.clear();
            ts.pending_fins = 0;
            ts.pending_first = None;
            ts.pending_copies = 0;
            // A burst's buffer is not kept: memory is for messages. (Twice the size at which
            // a batch is written early, so a batch's pieces fit without regrowing it.)
            ts.pending.shrink_to(2 * PENDING_KEEP);
            Ok(Wrote {
                msgs: std::mem::take(&mut ts.pending_msgs),
                bytes,
            })
        }
        Err(e) => {
            // (This also frees what was reserved past the end.)
            let _ = file.set_len(tail.len);
            // Its messages are not in the log: they neither pin the segment nor are found.
            tail.refs -= std::mem::take(&mut ts.pending_copies);
            if let Some(first) = ts.pending_first.take() {
                ts.index
                    .unwritten(first, ts.last_id, tail.num as u32, tail.len);
            }
            // What was read of the tail may be rewritten now.
            ts.reads.forget(tail.num);
            ts.pending.clear();
            if tail.len == 0 {
                // A new segment's header went with the failed write: it comes first again.
                ts.pending = record::new_segment(tail.salt, MessageId(tail.mark));
            }
            ts.pending_fins = 0;
            ts.pending_msgs = 0;
            Err(io_err("write", &path, e))
        }
    }
}

/// A topic's files, or the error a topic without storage gets.
pub(super) fn topic_store<'a>(
    topics: &'a mut FxHashMap<Name, TopicStore>,
    topic: &Name,
) -> Result<&'a mut TopicStore, StoreError> {
    topics
        .get_mut(topic)
        .ok_or_else(|| StoreError::NoStorage(topic.clone()))
}

/// What a message's record needs of the store besides its topic's files.
struct PubCtx<'a> {
    max: u64,
    sync: &'a mpsc::Sender<SyncMsg>,
    prep: Option<&'a mpsc::Sender<Prep>>,
    unsynced: &'a mut Wrote,
    /// Where a failure is kept for the commit (see [`note_failure`]).
    failed: &'a mut Option<StoreError>,
}

/// Buffer a published message's record in its topic's log (rolling to a new segment when
/// the tail is full, and writing a long batch out as it goes).
fn put_publish(
    ts: &mut TopicStore,
    cx: &mut PubCtx<'_>,
    held: bool,
    copies: u32,
    due: Option<Time>,
    msg: &Message,
) -> Result<(), StoreError> {
    let max = cx.max;
    let tail = ts.segments.back().expect("a segment");
    if tail.len + ts.pending.len() as u64 >= max {
        let (written, old, old_path, old_len) = roll(ts)?;
        *cx.unsynced += written;
        // The old segment and the new directory entry are synced by the sync thread with
        // everything else written: an fsync here would stop the broker for as long as the
        // disk needs to catch up.
        if let Some(old) = old {
            let _ = cx.sync.send(SyncMsg::Dirty(old));
        }
        let _ = cx.sync.send(SyncMsg::DirtyDir(ts.dir.clone()));
        let _ = cx.sync.send(SyncMsg::Full(old_path, old_len));
    }
    let tail = ts.segments.back().expect("a segment");
    let (seg, before) = (tail.num as u32, ts.pending.len());
    let off = (tail.len + before as u64) as u32;
    let start = record::put_pub_unsealed(&mut ts.pending, held, due, msg);
    ts.unsealed.push(start);
    if ts.unsealed.len() == 3 {
        seal_pending(ts);
    }
    let len = ts.pending.len() - before;
    ts.index.push(msg.id.0, seg, off, len, due.is_some());
    ts.pending_first.get_or_insert(msg.id.0);
    ts.last_id = ts.last_id.max(msg.id.0);
    let tail = ts.segments.back_mut().expect("a segment");
    tail.refs += copies as i64;
    ts.pending_copies += copies as i64;
    ts.pending_msgs += 1;
    // A long batch is written as it goes, in pieces of about PENDING_KEEP: the buffer (which
    // keeps twice that) is reused, not regrown into fresh memory (faulting in tens of MB made
    // a late batch later still).
    if ts.pending.len() >= PENDING_KEEP {
        *cx.unsynced += write_pending(ts)?;
        mark_dirty(cx.sync, ts.tail.as_ref());
        ask_next(ts, max, cx.prep);
    }
    Ok(())
}

/// A write failed: logged, and kept (the first since the last commit) for the commit.
fn note_failure(failed: &mut Option<StoreError>, e: StoreError) {
    tracing::error!("storage: {e}");
    failed.get_or_insert(e);
}

impl Store {
    /// Apply one op (buffered until [`Store::commit`]; metadata is written at once).
    pub fn apply(&mut self, op: StoreOp) {
        if let Err(e) = self.apply_inner(op) {
            note_failure(&mut self.failed, e);
        }
    }

    /// Apply ops in order, as [`Store::apply`] each; returns whether there were any. A run
    /// of one topic's messages (a publisher's batch) looks the topic up once, and a run of
    /// one channel's FINs (a consumer's batch) its topic and channel.
    pub fn apply_all(&mut self, ops: impl IntoIterator<Item = StoreOp>) -> bool {
        let mut ops = ops.into_iter().peekable();
        let mut any = false;
        while let Some(op) = ops.next() {
            any = true;
            if let StoreOp::Publish {
                topic,
                held,
                copies,
                due,
                msg,
                ..
            } = op
            {
                match self.publish_target(&topic) {
                    Err(e) => note_failure(&mut self.failed, e),
                    Ok((ts, mut cx)) => {
                        let mut r = put_publish(ts, &mut cx, held, copies, due, &msg);
                        loop {
                            if let Err(e) = r {
                                note_failure(cx.failed, e);
                            }
                            match ops.next_if(|op| {
                                matches!(op, StoreOp::Publish { topic: t, .. }
                                    if Arc::ptr_eq(t, &topic))
                            }) {
                                Some(StoreOp::Publish {
                                    held,
                                    copies,
                                    due,
                                    msg,
                                    ..
                                }) => r = put_publish(ts, &mut cx, held, copies, due, &msg),
                                _ => break,
                            }
                        }
                    }
                }
                continue;
            }
            let StoreOp::Finished {
                topic,
                channel,
                ids,
            } = op
            else {
                self.apply(op);
                continue;
            };
            let Ok(ts) = topic_store(&mut self.topics, &topic) else {
                self.apply(StoreOp::Finished {
                    topic,
                    channel,
                    ids,
                });
                continue;
            };
            let (seal, key) = fin_target(ts, &channel);
            let mut ids = ids;
            loop {
                fin(ts, seal, key, &ids);
                match ops.next_if(|op| {
                    matches!(op, StoreOp::Finished { topic: t, channel: c, .. }
                        if Arc::ptr_eq(t, &topic) && Arc::ptr_eq(c, &channel))
                }) {
                    Some(StoreOp::Finished { ids: next, .. }) => ids = next,
                    _ => break,
                }
            }
        }
        any
    }

    pub(super) fn apply_inner(&mut self, op: StoreOp) -> Result<(), StoreError> {
        match op {
            StoreOp::TopicCreated { topic } => self.create_topic(&topic),
            StoreOp::TopicDeleted { topic } => {
                self.missing.remove(&topic);
                if let Some(ts) = self.topics.remove(&topic) {
                    let gone = self
                        .root
                        .join(format!(".deleted-{topic}-{}", crate::clock::now()));
                    fs::rename(&ts.dir, &gone).map_err(|e| io_err("rename", &ts.dir, e))?;
                    sync_dir(&self.root);
                    // Its files go on the sync thread: freeing gigabytes can take seconds.
                    let _ = self.sync.send(SyncMsg::RemoveDir(gone));
                }
                Ok(())
            }
            StoreOp::TopicPaused { topic, paused } => {
                self.with_meta(&topic, |m| m.paused = paused, Vec::new())
            }
            StoreOp::TopicEmptied { topic, dropped } => {
                let ts = self.topic(&topic)?;
                let seal = ts.seal();
                record::put_drop_held(&mut ts.pending, seal);
                for id in dropped {
                    add_ref(ts, id, -1);
                }
                Ok(())
            }
            StoreOp::ChannelCreated {
                topic,
                channel,
                start,
            } => self.with_meta(
                &topic,
                |m| {
                    let key = m.next_key;
                    m.next_key += 1;
                    m.channels.insert(
                        channel.to_string(),
                        ChannelMeta {
                            key,
                            start: start.0,
                            paused: false,
                        },
                    );
                    // Orphans held since a metadata loss are this channel's now.
                    if m.held_floor.is_some_and(|f| start.0 <= f) {
                        m.held_floor = None;
                    }
                },
                Vec::new(),
            ),
            StoreOp::ChannelDeleted {
                topic,
                channel,
                dropped,
            } => self.with_meta(
                &topic,
                |m| {
                    m.channels.remove(&*channel);
                },
                dropped,
            ),
            StoreOp::ChannelPaused {
                topic,
                channel,
                paused,
            } => self.with_meta(
                &topic,
                |m| {
                    if let Some(c) = m.channels.get_mut(&*channel) {
                        c.paused = paused;
                    }
                },
                Vec::new(),
            ),
            StoreOp::ChannelEmptied {
                topic,
                channel,
                start,
                dropped,
            } => self.with_meta(
                &topic,
                |m| {
                    if let Some(c) = m.channels.get_mut(&*channel) {
                        c.start = start.0;
                    }
                },
                dropped,
            ),
            StoreOp::Publish {
                topic,
                held,
                copies,
                due,
                msg,
                ..
            } => {
                let (ts, mut cx) = self.publish_target(&topic)?;
                put_publish(ts, &mut cx, held, copies, due, &msg)
            }
            StoreOp::Dispatched { topic, ids, copies } => {
                let ts = self.topic(&topic)?;
                let seal = ts.seal();
                record::put_dispatch(&mut ts.pending, seal);
                for id in ids {
                    add_ref(ts, id, copies as i64 - 1);
                }
                Ok(())
            }
            StoreOp::Finished {
                topic,
                channel,
                ids,
            } => {
                let ts = self.topic(&topic)?;
                let (seal, key) = fin_target(ts, &channel);
                fin(ts, seal, key, &ids);
                Ok(())
            }
            StoreOp::Requeued {
                topic,
                channel,
                id,
                due,
            } => {
                let ts = self.topic(&topic)?;
                let seal = ts.seal();
                if let Some(c) = ts.meta.channels.get(&*channel) {
                    record::put_req(&mut ts.pending, seal, c.key, id, due);
                }
                Ok(())
            }
        }
    }

    /// Change a topic's metadata and write it; copies in `dropped` are released. For a topic
    /// whose files could not be created the change is kept until they can be.
    pub(super) fn with_meta(
        &mut self,
        topic: &Name,
        f: impl FnOnce(&mut TopicMeta),
        dropped: Vec<MessageId>,
    ) -> Result<(), StoreError> {
        if let Some(m) = self.missing.get_mut(topic) {
            f(m);
            return Err(StoreError::NoStorage(topic.clone()));
        }
        let ts = self.topic(topic)?;
        f(&mut ts.meta);
        for id in dropped {
            add_ref(ts, id, -1);
        }
        write_meta(ts).inspect_err(|_| ts.meta_dirty = true)
    }

    pub(super) fn topic(&mut self, topic: &Name) -> Result<&mut TopicStore, StoreError> {
        topic_store(&mut self.topics, topic)
    }

    /// Topic `topic`'s files, and what else a published message's record needs.
    fn publish_target(
        &mut self,
        topic: &Name,
    ) -> Result<(&mut TopicStore, PubCtx<'_>), StoreError> {
        let Store {
            topics,
            cfg,
            sync,
            prep,
            unsynced,
            failed,
            ..
        } = self;
        let ts = topic_store(topics, topic)?;
        let cx = PubCtx {
            max: cfg.max_bytes_per_file,
            sync,
            prep: prep.as_ref(),
            unsynced,
            failed,
        };
        Ok((ts, cx))
    }

    pub(super) fn create_topic(&mut self, topic: &Name) -> Result<(), StoreError> {
        if self.topics.contains_key(topic) {
            return Ok(());
        }
        let dir = self.root.join(&**topic);
        let mut pending_meta = self.missing.get(topic).cloned().unwrap_or_default();
        let secret = *pending_meta.secret.get_or_insert_with(record::Salt::secret);
        let reads = self.reads();
        let made = (|| {
            fs::create_dir_all(&dir).map_err(|e| io_err("create", &dir, e))?;
            let path = seg_path(&dir, 0);
            let salt = record::Salt::of_segment(secret, 0);
            let (f, salt, len) = create_segment(&path, salt, MessageId(0))?;
            let ts = TopicStore {
                dir: dir.clone(),
                meta: pending_meta.clone(),
                segments: VecDeque::from([Segment::new(0, 0, salt, len)]),
                tail: Some(Tail::new(f)),
                last_write: 0,
                pending: Vec::new(),
                unsealed: Vec::new(),
                pending_msgs: 0,
                pending_fins: 0,
                pending_first: None,
                pending_copies: 0,
                last_id: 0,
                index: index::Index::default(),
                reads,
                meta_dirty: false,
                batch: None,
                next: Prepared::default(),
                next_asked: false,
            };
            // Written whole but not synced here: a topic is created by its first publish,
            // and three fsyncs (the metadata, the new directory, its parent) stopped every
            // client of the partition for 5-15 ms. The sync thread syncs them with the rest.
            let meta = dir.join("meta.json");
            write_unsynced(&meta, &meta_bytes(&ts))?;
            let _ = self.sync.send(SyncMsg::DirtyFile(meta));
            let _ = self.sync.send(SyncMsg::DirtyDir(dir.clone()));
            let _ = self.sync.send(SyncMsg::DirtyDir(self.root.clone()));
            Ok::<_, StoreError>(ts)
        })();
        match made {
            Ok(ts) => {
                self.missing.remove(topic);
                self.topics.insert(topic.clone(), ts);
                self.opens += 1;
                Ok(())
            }
            Err(e) => {
                self.missing.entry(topic.clone()).or_default();
                Err(e)
            }
        }
    }

    /// Write every buffered record (one write per topic), then delete segments nothing needs.
    /// An error means some op of this batch may not be on disk: the publishers of the batch
    /// must not be told OK.
    pub fn commit(&mut self) -> Result<(), StoreError> {
        let all = self.fins_waiting.is_some_and(|t| t.elapsed() >= FIN_WAIT);
        self.commit_inner(all)
    }

    /// Commit, FINs included however few (see [`FIN_BATCH`]).
    pub fn commit_all(&mut self) -> Result<(), StoreError> {
        self.commit_inner(true)
    }

    /// When a commit is due for the FINs it left unwritten (see [`FIN_BATCH`]).
    pub fn fins_due(&self) -> Option<std::time::Instant> {
        self.fins_waiting.map(|t| t + FIN_WAIT)
    }

    fn commit_inner(&mut self, all: bool) -> Result<(), StoreError> {
        let mut result = self.failed.take().map_or(Ok(()), Err);
        let mut wrote = Wrote::default();
        let mut waiting = false;
        self.writes += 1;
        let now = self.writes;
        for (topic, ts) in self.topics.iter_mut() {
            if ts.meta_dirty {
                match write_meta(ts) {
                    Ok(()) => ts.meta_dirty = false,
                    Err(e) => {
                        if result.is_ok() {
                            result = Err(e);
                        }
                    }
                }
            }
            if ts.pending.is_empty() {
                continue;
            }
            if !all && ts.pending_fins == ts.pending.len() && ts.pending.len() < FIN_BATCH {
                // Only FINs, and few: they wait for more (or for FIN_WAIT).
                waiting = true;
                continue;
            }
            ts.last_write = now;
            self.opens += usize::from(ts.tail.is_none());
            match write_pending(ts) {
                Ok(n) => {
                    wrote += n;
                    mark_dirty(&self.sync, ts.tail.as_ref());
                    ask_next(ts, self.cfg.max_bytes_per_file, self.prep.as_ref());
                }
                Err(e) => {
                    tracing::error!("TOPIC({topic}): {e}");
                    if result.is_ok() {
                        result = Err(e);
                    }
                }
            }
        }
        // All or nothing (see `Batch`); then segments nothing needs go.
        for (topic, ts) in self.topics.iter_mut() {
            match result {
                Ok(()) => ts.batch = None,
                Err(_) => undo_batch(topic, ts),
            }
            compact(topic, ts, &self.sync);
        }
        self.unsynced += wrote;
        self.fins_waiting = match waiting {
            true => self
                .fins_waiting
                .or_else(|| Some(std::time::Instant::now())),
            false => None,
        };
        self.close_idle_files();
        let every = self.cfg.sync_every.max(1);
        let by_size = self.unsynced.bytes >= every.saturating_mul(SYNC_UNIT)
            && self.last_sync_ask.elapsed() >= SYNC_GAP;
        if self.unsynced.msgs >= every || by_size {
            self.unsynced = Wrote::default();
            self.last_sync_ask = std::time::Instant::now();
            let _ = self.sync.send(SyncMsg::Now);
        }
        result
    }

    /// Keep at most `max_open` topics' files open: past that, close those of the topics
    /// written least recently, down to three quarters of it (they open again when next
    /// written or read). A topic holds a descriptor (its tail segment), more while a backlog
    /// is read, and the sync thread keeps a closed one until its next sync; with thousands of topics a server ran out of them
    /// (nsqd opens files only for a backlog past its memory queue). Checked every 100 ms or
    /// after a quarter of that many topics opened their files, and not at all while there
    /// are fewer topics than that.
    pub(super) fn close_idle_files(&mut self) {
        if self.topics.len() <= self.max_open
            || (self.opens < self.max_open / 4
                && self.open_checked.elapsed() < Duration::from_millis(100))
        {
            return;
        }
        self.open_checked = std::time::Instant::now();
        self.opens = 0;
        let open = |t: &TopicStore| t.tail.is_some();
        let mut idle: Vec<(u64, Name)> = self
            .topics
            .iter()
            .filter(|(_, t)| open(t))
            .map(|(n, t)| (t.last_write, n.clone()))
            .collect();
        if idle.len() <= self.max_open {
            return;
        }
        let excess = idle.len() - self.max_open * 3 / 4;
        idle.select_nth_unstable(excess - 1);
        for (_, name) in idle.into_iter().take(excess) {
            if let Some(ts) = self.topics.get_mut(&name) {
                if !ts.pending.is_empty() {
                    continue;
                }
                // Not yet synced: the sync thread syncs it by name instead of holding it open.
                if let Some(tail) = ts
                    .tail
                    .as_ref()
                    .filter(|t| t.queued.load(Ordering::Acquire))
                {
                    let path = seg_path(&ts.dir, ts.segments.back().expect("a segment").num);
                    let _ = self.sync.send(SyncMsg::Closed(tail.clone(), path));
                }
                ts.close_files();
            }
        }
    }

    /// After a failure: can the store write again? Creates what could not be created and
    /// appends a marker to every topic's log.
    pub fn probe(&mut self) -> Result<(), StoreError> {
        // First make room (the failure may be a full disk): nothing else below can succeed
        // without it.
        for (topic, ts) in self.topics.iter_mut() {
            ts.next.give_back();
            empty_finished_tail(topic, ts)?;
        }
        short_of_room(&self.root)?;
        let missing: Vec<Name> = self.missing.keys().cloned().collect();
        for topic in missing {
            self.create_topic(&topic)?;
        }
        for (topic, ts) in self.topics.iter_mut() {
            let gone = match &ts.tail {
                Some(t) => removed(&t.file),
                // (Its files closed: its tail is looked for by name.)
                None => !seg_path(&ts.dir, ts.segments.back().expect("a segment").num).exists(),
            };
            if gone {
                make_again(topic, ts)?;
            }
            if ts.meta_dirty {
                write_meta(ts)?;
                ts.meta_dirty = false;
            }
        }
        for ts in self.topics.values_mut() {
            let seal = ts.seal();
            record::put_mark(&mut ts.pending, seal, MessageId(ts.last_id));
            write_pending(ts)?;
            fsync(ts.tail()?).map_err(|e| io_err("sync", &ts.dir, e))?;
            ts.batch = None;
        }
        Ok(())
    }
}
