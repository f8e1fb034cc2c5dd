//! Durable storage: the core's [`StoreOp`]s kept in files, so nothing acknowledged is lost on
//! `kill -9` and deferred messages keep their due time across restarts.
//!
//! # Layout (under `--data-path`)
//! ```text
//! nsqlab/<topic>/meta.json            paused, channels (key, start ID, paused)
//! nsqlab/<topic>/<n:020>.log          the topic's log, in segments (see record.rs)
//! nsqlab/<topic>/<n:020>.log.corrupt-<k>  bytes a checksum rejected, set aside
//! ```
//! One log per topic holds its messages (with due times), FINs, REQ delays and the dispatch
//! of held messages; metadata is a small JSON snapshot written atomically when it changes.
//! The core's [`Replay`] turns both back into what is owed.
//!
//! # Writing
//! The broker task applies a batch of ops ([`Store::apply`]) into per-topic buffers and then
//! [`Store::commit`]s: one `write` per topic per batch (group commit; a batch longer than
//! 1 MiB is written in pieces of that size as it is applied, so the buffer is reused). Only
//! then does the core send the publishers' `OK`. A sync thread `fdatasync`s every
//! `--sync-every` messages, `--sync-every` × `SYNC_UNIT` bytes (but not within `SYNC_GAP`
//! of the last) or `--sync-timeout`, whichever comes first (power loss; a process crash
//! needs only the write); requests that
//! queue up during a sync are answered by one. It hears of a written segment once per sync,
//! not once per commit: waking it for every commit cost a good part of the server's CPU
//! under a heavy publish. It also syncs a full segment and the directory of the new one, a new topic's
//! directory and metadata, and drops older full segments from the page cache, a little
//! after each sync (see `PageCache`). Publishing never waits for the disk on the broker
//! thread (later metadata changes, rare, are written and synced there).
//!
//! # Reading
//! Bodies evicted from memory (deferred messages, a backlog past `--mem-queue-size`) are read
//! back on a loader thread ([`loader`]): [`Store::request_loads`] says where each record is,
//! [`Store::loaded`] hands the bodies back in order. The broker thread never waits for a read.
//!
//! # Deleting
//! Each segment counts the live copies of the messages it holds (`copies` on publish, minus
//! FINs and drops). The oldest segments are deleted once their count is zero, in order, by the
//! sync thread (so is a deleted topic's directory): freeing a file's blocks is slow.

mod batch;
mod cache;
mod crc;
mod error;
mod index;
pub mod loader;
#[cfg(test)]
mod power_loss;
mod prep;
mod read;
pub mod record;
mod recover;
mod segment;
mod sync;
pub(crate) mod sys;
#[cfg(test)]
mod tests;
mod write;

pub use error::StoreError;
use error::{io_err, is_no_room};
pub use loader::Loaded;
use nsqlab_core::{Broker, Name, Time};
use prep::{spawn_prep_thread, Prep, Prepared};
use read::Reads;
pub use recover::Recovered;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::time::Duration;
use sync::{spawn_sync_thread, SyncMsg};
use sys::remove_in;
use write::Wrote;

/// Storage settings (nsqd's flags).
#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub data_path: PathBuf,
    pub max_bytes_per_file: u64,
    pub sync_every: u64,
    pub sync_timeout: Duration,
    /// This store's partition of how many: it keeps the topics that hash to it (see
    /// `nsqlab_core::partition_of`), and leaves the others' directories alone.
    pub partition: (u32, u32),
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ChannelMeta {
    key: u32,
    start: u64,
    #[serde(default)]
    paused: bool,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TopicMeta {
    #[serde(default)]
    paused: bool,
    #[serde(default)]
    next_key: u32,
    #[serde(default)]
    channels: BTreeMap<String, ChannelMeta>,
    /// After a metadata loss: messages up to this ID that no channel owns are held (they wait
    /// for the first channel) rather than dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    held_floor: Option<u64>,
    /// The topic's secret, from which each segment's salt comes (`record::Salt::of_segment`):
    /// a second home for every salt, apart from the segment's own header. (A topic from
    /// before it has none until it is opened again.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secret: Option<u64>,
}

#[derive(Debug)]
struct Segment {
    /// Opened on the first load from it (shared with the loader thread's jobs), with its
    /// path.
    reader: Option<loader::Files>,
    num: u64,
    /// Every message in this segment has an ID above this.
    mark: u64,
    /// Its records' checks depend on this (see record.rs).
    salt: record::Salt,
    /// Live copies of its messages.
    refs: i64,
    len: u64,
}

impl Segment {
    /// A segment with no live copies yet, not open for loads.
    fn new(num: u64, mark: u64, salt: record::Salt, len: u64) -> Segment {
        Segment {
            reader: None,
            num,
            mark,
            salt,
            refs: 0,
            len,
        }
    }
}

#[derive(Debug)]
struct TopicStore {
    dir: PathBuf,
    meta: TopicMeta,
    segments: VecDeque<Segment>,
    /// The last segment, open for appending; `None` while the topic's files are closed (it
    /// was not written for longer than the others: see [`Store::close_idle_files`]).
    tail: Option<Arc<Tail>>,
    /// When it was last written ([`Store::writes`] then), for choosing whose files to close.
    last_write: u64,
    /// The next segment, made and given its blocks off the broker thread (see [`Prepared`]).
    next: Prepared,
    /// `next` was asked for since the last roll.
    next_asked: bool,
    /// Records not yet written to `tail`.
    pending: Vec<u8>,
    /// Where PUB records in `pending` whose checks are not filled in yet start (at most two:
    /// they are sealed three at a time, and the rest before `pending` is written).
    unsealed: Vec<usize>,
    pending_msgs: u64,
    /// Bytes of FIN records in `pending`: when they are all of it, the write may wait (see
    /// [`write::FIN_BATCH`]).
    pending_fins: usize,
    /// The first message in `pending` and the live copies of those in it (lost with it if
    /// the write fails).
    pending_first: Option<u64>,
    pending_copies: i64,
    last_id: u64,
    /// Where the stored messages are, sparsely (see `index`).
    index: index::Index,
    /// This topic's name with the loader thread, which keeps what it last read of the log.
    reads: Reads,
    /// `meta.json` is behind `meta` (a write failed): rewritten on the next commit or probe.
    meta_dirty: bool,
    /// Where this commit's writes began, if it wrote (see [`batch::Batch`]).
    batch: Option<batch::Batch>,
}

impl TopicStore {
    /// Where segment `num` is in `segments`, if it is still there. Segments are in number
    /// order and nearly always consecutive (a file lost by hand may leave a gap): where it
    /// would be is tried before a search.
    fn segment_pos(&self, num: u64) -> Option<usize> {
        let first = self.segments.front()?.num;
        let guess = usize::try_from(num.checked_sub(first)?).ok()?;
        match self.segments.get(guess) {
            Some(s) if s.num == num => Some(guess),
            _ => self.segments.binary_search_by_key(&num, |s| s.num).ok(),
        }
    }

    /// The tail segment's file, opened again if the topic's files were closed.
    fn tail(&mut self) -> Result<&Arc<Tail>, StoreError> {
        if self.tail.is_none() {
            let path = seg_path(&self.dir, self.segments.back().expect("a segment").num);
            let f = OpenOptions::new()
                .append(true)
                .open(&path)
                .map_err(|e| io_err("open", &path, e))?;
            self.tail = Some(Tail::new(f));
        }
        Ok(self.tail.as_ref().expect("just opened"))
    }

    /// The topic's directory, opened now (not kept: a descriptor per topic is one too many
    /// with thousands of topics). The sync thread deletes finished segments in it by name
    /// (`unlinkat`) and the next segment is made in it (`openat`), so a topic deleted and made
    /// again under the same name meanwhile never loses the new directory's files.
    fn dir(&self) -> Result<Arc<File>, StoreError> {
        let f = File::open(&self.dir).map_err(|e| io_err("open", &self.dir, e))?;
        Ok(Arc::new(f))
    }

    /// Close the topic's files (they open again when next needed): the tail, the directory,
    /// segments open for loads, and a next segment made ahead (its reserved blocks given
    /// back).
    fn close_files(&mut self) {
        self.tail = None;
        for s in &mut self.segments {
            s.reader = None;
        }
        self.next.give_back();
        self.next = Prepared::default();
        self.next_asked = false;
    }

    /// The salt of a new segment numbered `num` (see [`TopicMeta::secret`]).
    fn salt_for(&self, num: u64) -> record::Salt {
        match self.meta.secret {
            Some(s) => record::Salt::of_segment(s, num),
            None => record::Salt::random(),
        }
    }

    /// Where records appended to `pending` will lie (its first byte at the tail's end).
    fn seal(&self) -> record::Seal {
        let tail = self.segments.back().expect("a segment");
        record::Seal {
            salt: tail.salt,
            base: tail.len,
        }
    }
}

/// How many topics of a store (one of `partitions`) keep their files open: a quarter of the
/// open-file limit, shared by the partitions, at least 16 each.
fn max_open_topics(partitions: u32) -> usize {
    let limit = crate::net::open_file_limit().unwrap_or(1024) as usize;
    (limit / 4 / partitions.max(1) as usize).max(16)
}

/// The files of every non-ephemeral topic.
pub struct Store {
    cfg: StoreConfig,
    root: PathBuf,
    /// (Looked up for every stored op: Fx, not SipHash, whose cost showed in a profile of a
    /// publish; the keys are topics that exist.)
    topics: FxHashMap<Name, TopicStore>,
    /// Topics whose files could not be created (writes to them fail until a probe succeeds),
    /// with the metadata they have meanwhile (written once they exist).
    missing: HashMap<Name, TopicMeta>,
    /// A write that failed since the last commit.
    failed: Option<StoreError>,
    /// Written since the sync thread was last asked to sync.
    unsynced: Wrote,
    /// When a sync was last asked for.
    last_sync_ask: std::time::Instant,
    sync: mpsc::Sender<SyncMsg>,
    sync_thread: Option<std::thread::JoinHandle<()>>,
    /// Asks the thread that makes next segments (see [`Prepared`]); `None` once closed.
    prep: Option<mpsc::Sender<Prep>>,
    prep_thread: Option<std::thread::JoinHandle<()>>,
    /// Asks the thread that reads evicted bodies back (see [`loader`]); `None` once closed.
    loader: Option<mpsc::Sender<loader::Msg>>,
    loader_thread: Option<std::thread::JoinHandle<()>>,
    /// What it read, in batches.
    loaded: tokio::sync::mpsc::UnboundedReceiver<Vec<Loaded>>,
    /// The loader's name for the next topic store.
    next_reads: u64,
    /// Since when a commit has left FINs unwritten (see [`write::FIN_BATCH`]).
    fins_waiting: Option<std::time::Instant>,
    /// Commits so far (a topic's `last_write` is one of these).
    writes: u64,
    /// At most this many topics keep their files open (see [`Store::close_idle_files`]).
    max_open: usize,
    /// When that was last checked, and topics whose files opened since.
    open_checked: std::time::Instant,
    opens: usize,
}

/// A segment open for appending, shared with the sync thread.
#[derive(Debug)]
struct Tail {
    file: File,
    /// The sync thread has it listed for its next sync. A commit tells the sync thread about
    /// its write only when this is false: each send wakes that thread, and under load a
    /// commit comes every few hundred microseconds.
    queued: AtomicBool,
}

impl Tail {
    fn new(file: File) -> Arc<Tail> {
        Arc::new(Tail {
            file,
            queued: AtomicBool::new(false),
        })
    }
}

impl std::ops::Deref for Tail {
    type Target = File;
    fn deref(&self) -> &File {
        &self.file
    }
}

fn seg_path(dir: &Path, num: u64) -> PathBuf {
    dir.join(format!("{num:020}.log"))
}

impl Store {
    /// Open (creating) the store under `cfg.data_path` and restore its contents into `broker`.
    pub fn open(
        cfg: StoreConfig,
        broker: &mut Broker,
        now: Time,
    ) -> Result<(Store, Recovered), StoreError> {
        let root = cfg.data_path.join("nsqlab");
        fs::create_dir_all(&root).map_err(|e| io_err("create", &root, e))?;
        // (A power loss must not take the directory made just now, with what goes in it.)
        sys::sync_dir(&cfg.data_path);
        sys::sync_dir(&root);
        // A probe write: refuse to start on a data path that cannot be written, but start on
        // one that is full (nsqd does not): consumers can then drain it.
        let probe = root.join(".probe");
        let no_room = match fs::write(&probe, b"ok") {
            Ok(()) => write::short_of_room(&root).err(),
            Err(e) if is_no_room(&e) => Some(io_err("write", &probe, e)),
            Err(e) => return Err(io_err("write", &probe, e)),
        };
        let _ = fs::remove_file(&probe);
        let cfg_partitions = cfg.partition.1;
        let (tx, rx) = mpsc::channel();
        let sync_thread = spawn_sync_thread(rx, cfg.sync_timeout);
        let (prep, prep_rx) = mpsc::channel();
        let prep_thread = spawn_prep_thread(prep_rx);
        let (loader, loader_rx) = mpsc::channel();
        let (loaded_tx, loaded) = tokio::sync::mpsc::unbounded_channel();
        let loader_thread = loader::spawn(loader_rx, move |batch| {
            let _ = loaded_tx.send(batch);
        });
        let mut store = Store {
            cfg,
            root,
            topics: FxHashMap::default(),
            missing: HashMap::new(),
            failed: None,
            unsynced: Wrote::default(),
            last_sync_ask: std::time::Instant::now(),
            sync: tx,
            sync_thread: Some(sync_thread),
            prep: Some(prep),
            prep_thread: Some(prep_thread),
            loader: Some(loader),
            loader_thread: Some(loader_thread),
            loaded,
            next_reads: 0,
            fins_waiting: None,
            writes: 0,
            max_open: max_open_topics(cfg_partitions),
            open_checked: std::time::Instant::now(),
            opens: 0,
        };
        let mut rec = store.recover(broker, now)?;
        rec.no_room = no_room.or(rec.no_room);
        Ok((store, rec))
    }

    /// Write what is buffered and fsync everything (clean shutdown).
    pub fn close(mut self) {
        if let Err(e) = self.commit_all() {
            tracing::error!("storage: {e}");
        }
        for ts in self.topics.values() {
            let len = ts.segments.back().expect("a segment").len;
            if let Some(tail) = &ts.tail {
                let _ = tail.set_len(len);
                let _ = sys::fsync(tail);
            }
        }
        // Unused next segments are deleted (once their thread is done with them).
        self.prep = None;
        if let Some(t) = self.prep_thread.take() {
            let _ = t.join();
        }
        for ts in self.topics.values() {
            if let Some((num, f)) = ts.next.0.lock().unwrap_or_else(|e| e.into_inner()).take() {
                drop(f);
                if let Ok(dir) = ts.dir() {
                    remove_in(&dir, &seg_path(&ts.dir, num));
                }
            }
        }
        let _ = self.sync.send(SyncMsg::Stop);
        if let Some(t) = self.sync_thread.take() {
            let _ = t.join();
        }
        // Bodies still being read are not needed: their messages stay in the log.
        self.topics.clear();
        self.loader = None;
        if let Some(t) = self.loader_thread.take() {
            let _ = t.join();
        }
    }
}
