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
//! not once per commit: waking it for every commit cost about a sixth of the server's CPU
//! at 1 M msg/s. It also syncs a full segment and the directory of the new one, a new topic's
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

mod index;
pub mod loader;
pub mod record;

pub use loader::Loaded;
use nsqlab_core::{Broker, LoadRequest, MessageId, Name, Replay, StoreOp, Time};
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

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
}

#[derive(Debug)]
struct Segment {
    /// Opened on the first load from it (shared with the loader thread's jobs), with its
    /// path.
    reader: Option<(Arc<File>, Arc<Path>)>,
    num: u64,
    /// Every message in this segment has an ID above this.
    mark: u64,
    /// Its records' checks depend on this (see record.rs).
    salt: record::Salt,
    /// Live copies of its messages.
    refs: i64,
    len: u64,
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
    pending_msgs: u64,
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
}

impl TopicStore {
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

    /// Where records appended to `pending` will lie (its first byte at the tail's end).
    fn seal(&self) -> record::Seal {
        let tail = self.segments.back().expect("a segment");
        record::Seal {
            salt: tail.salt,
            base: tail.len,
        }
    }
}

/// Buffer capacity a topic keeps between commits.
const PENDING_KEEP: usize = 1 << 20;

/// A sync is asked for after `--sync-every` messages or `--sync-every` times this many bytes
/// of log, whichever comes first: 2500 messages or 250 000 bytes by default (a larger
/// `--sync-every` still means fewer syncs). Smaller, steadier syncs kept
/// publishers' round trips shorter: at 550 k msg/s of 200 bytes (a sync every 2500 messages
/// wrote about 1 MB each time) the p99 round trip fell from 0.57 to 0.44 ms over 8
/// alternating runs.
const SYNC_UNIT: u64 = 100;

/// A sync for size alone comes at most this often: above about 125 MB/s of log, a sync per
/// 250 KB came more often than helped (at 1.48 M msg/s, 1 400 syncs a second; with this gap
/// at most 500, and the median p99 round trip over 12 alternating runs fell from 0.95 to
/// 0.80 ms, the target met in 9 of 12 runs against 7). At 740 k msg/s 14 alternating runs
/// told no difference (the target met in 11 and 12 of them); below 125 MB/s it never binds.
const SYNC_GAP: Duration = Duration::from_millis(2);

/// What a failed write leaves behind.
pub type StoreError = String;

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
    /// (Looked up for every stored op: Fx, not SipHash, which took about 1 % of the server's
    /// time publishing 1.25 M msg/s; the keys are topics that exist.)
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
    /// Commits so far (a topic's `last_write` is one of these).
    writes: u64,
    /// At most this many topics keep their files open (see [`Store::close_idle_files`]).
    max_open: usize,
    /// When that was last checked, and topics whose files opened since.
    open_checked: std::time::Instant,
    opens: usize,
}

/// A topic store's name with the loader thread: what that thread read of a deleted segment
/// (or of a log cut back after a failed write) is forgotten, and all it keeps of the topic
/// when the topic store goes.
#[derive(Debug)]
struct Reads {
    topic: u64,
    loader: Option<mpsc::Sender<loader::Msg>>,
}

impl Reads {
    fn forget(&self, seg: u64) {
        if let Some(l) = &self.loader {
            let _ = l.send(loader::Msg::Forget {
                topic: self.topic,
                seg: Some(seg),
            });
        }
    }
}

impl Drop for Reads {
    fn drop(&mut self) {
        if let Some(l) = &self.loader {
            let _ = l.send(loader::Msg::Forget {
                topic: self.topic,
                seg: None,
            });
        }
    }
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

enum SyncMsg {
    /// A segment was written to.
    Dirty(Arc<Tail>),
    /// A directory that gained a file (a new segment, a new topic's directory).
    DirtyDir(PathBuf),
    /// A small file written whole (a new topic's metadata): synced, by path, before the
    /// directories.
    DirtyFile(PathBuf),
    /// A written segment the store closed (see `Store::close_idle_files`): synced by path,
    /// its descriptor let go now.
    Closed(Arc<Tail>, PathBuf),
    /// A segment that is full (nothing more is written to it): its path and length.
    Full(PathBuf, u64),
    /// A finished segment: its directory (open) and path (its file name is deleted in that
    /// directory; the path is for the log).
    RemoveSegment(Arc<File>, PathBuf),
    /// A deleted topic's directory (renamed to a name of its own).
    RemoveDir(PathBuf),
    Now,
    Stop,
}

fn seg_path(dir: &Path, num: u64) -> PathBuf {
    dir.join(format!("{num:020}.log"))
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> StoreError {
    format!("{what} {}: {e}", path.display())
}

/// Write a file whole and durably (temp file, fsync, rename, fsync the directory).
fn write_atomic(path: &Path, data: &[u8]) -> Result<(), StoreError> {
    write_atomic_io(path, data).map_err(|(what, p, e)| io_err(what, &p, e))
}

/// [`write_atomic`], its error with the operation and path (so a full disk can be told).
fn write_atomic_io(
    path: &Path,
    data: &[u8],
) -> Result<(), (&'static str, PathBuf, std::io::Error)> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(|e| ("create", tmp.clone(), e))?;
    let written = f
        .write_all(data)
        .map_err(|e| ("write", e))
        .and_then(|()| f.sync_data().map_err(|e| ("sync", e)));
    if let Err((what, e)) = written {
        let _ = fs::remove_file(&tmp);
        return Err((what, tmp, e));
    }
    fs::rename(&tmp, path).map_err(|e| ("rename", path.to_path_buf(), e))?;
    sync_dir(path.parent().unwrap_or(Path::new(".")));
    Ok(())
}

/// Write a file whole (temp file, rename) without waiting for the disk: a process crash
/// leaves the old file or the new one, never a part; the caller has it synced later.
fn write_unsynced(path: &Path, data: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(|e| io_err("create", &tmp, e))?;
    f.write_all(data).map_err(|e| io_err("write", &tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| io_err("rename", path, e))
}

/// fsync a file by path (one written whole; gone or replaced meanwhile is fine).
fn sync_file(path: &Path) {
    if let Ok(f) = File::open(path) {
        if let Err(e) = f.sync_data() {
            tracing::error!("storage: fsync {} failed: {e}", path.display());
        }
    }
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// What opening the store found, for the log.
#[derive(Debug, Default, Clone)]
pub struct Recovered {
    pub topics: usize,
    pub channels: usize,
    pub messages: usize,
    pub corrupt_ranges: usize,
    /// The data path is out of room (or over quota): the store opened, but cannot write
    /// until there is room again. The server starts unhealthy (publishes refused, `/ping`
    /// 500) and serves consumers, whose FINs free the room.
    pub no_room: Option<StoreError>,
}

/// An error that says the file system is out of room (full, over quota, over the file size
/// limit), rather than unusable.
fn is_no_room(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG)
    )
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
        // A probe write: refuse to start on a data path that cannot be written, but start on
        // one that is full (nsqd does not): consumers can then drain it.
        let probe = root.join(".probe");
        let no_room = match fs::write(&probe, b"ok") {
            Ok(()) => None,
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
            writes: 0,
            max_open: max_open_topics(cfg_partitions),
            open_checked: std::time::Instant::now(),
            opens: 0,
        };
        let mut rec = store.recover(broker, now)?;
        rec.no_room = no_room.or(rec.no_room);
        Ok((store, rec))
    }

    fn recover(&mut self, broker: &mut Broker, now: Time) -> Result<Recovered, StoreError> {
        let mut rec = Recovered::default();
        let mut replay = Replay::new();
        let mut dirs: Vec<PathBuf> = fs::read_dir(&self.root)
            .map_err(|e| io_err("read", &self.root, e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        dirs.sort();
        for dir in dirs {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
                continue;
            };
            if name.starts_with(".deleted-") {
                let _ = fs::remove_dir_all(&dir);
                continue;
            }
            if !dir.is_dir() || !nsqlab_core::protocol::is_valid_name(&name) {
                continue;
            }
            let (me, of) = self.cfg.partition;
            if nsqlab_core::partition_of(&name, of) != me {
                continue;
            }
            let topic: Name = Arc::from(name.as_str());
            let ts = self.recover_topic(&topic, &dir, &mut replay, &mut rec)?;
            self.topics.insert(topic, ts);
        }
        // Count the live copies per segment, then give everything back to the broker.
        for s in replay.survivors() {
            if let Some(ts) = self.topics.get_mut(s.topic) {
                add_ref(ts, s.msg.id, 1);
            }
            rec.messages += 1;
        }
        let mut seen = broker.restore(now);
        for (topic, ts) in &self.topics {
            seen.seen_id(topic, MessageId(ts.last_id));
        }
        drop(seen);
        rec.topics = replay.topics.len();
        rec.channels = replay.topics.values().map(|t| t.channels.len()).sum();
        replay.restore_into(broker, now);
        Ok(rec)
    }

    /// Read one topic's metadata and segments into `replay`.
    fn recover_topic(
        &mut self,
        topic: &Name,
        dir: &Path,
        replay: &mut Replay,
        rec: &mut Recovered,
    ) -> Result<TopicStore, StoreError> {
        let meta_path = dir.join("meta.json");
        let meta = match fs::read(&meta_path) {
            Ok(b) => match serde_json::from_slice::<TopicMeta>(&b) {
                Ok(m) => Some(m),
                Err(e) => {
                    let bad = dir.join(format!("meta.json.corrupt-{}", crate::clock::now()));
                    tracing::warn!(
                        "TOPIC({topic}): metadata {} is corrupt ({e}); moved to {}; its messages wait for the first channel",
                        meta_path.display(),
                        bad.display()
                    );
                    let _ = fs::rename(&meta_path, &bad);
                    None
                }
            },
            Err(_) => {
                tracing::warn!(
                    "TOPIC({topic}): no metadata {}; its messages wait for the first channel",
                    meta_path.display()
                );
                None
            }
        };
        let known = meta.is_some();
        let meta = meta.unwrap_or_default();
        replay.apply(&StoreOp::TopicCreated {
            topic: topic.clone(),
        });
        replay.apply(&StoreOp::TopicPaused {
            topic: topic.clone(),
            paused: meta.paused,
        });
        let mut keys: HashMap<u32, Name> = HashMap::new();
        for (cn, c) in &meta.channels {
            let channel: Name = Arc::from(cn.as_str());
            keys.insert(c.key, channel.clone());
            replay.apply(&StoreOp::ChannelCreated {
                topic: topic.clone(),
                channel: channel.clone(),
                start: MessageId(c.start),
            });
            replay.apply(&StoreOp::ChannelPaused {
                topic: topic.clone(),
                channel,
                paused: c.paused,
            });
        }
        let mut nums: Vec<u64> = fs::read_dir(dir)
            .map_err(|e| io_err("read", dir, e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let n = e.file_name();
                let n = n.to_str()?;
                n.strip_suffix(".log")?.parse::<u64>().ok()
            })
            .collect();
        nums.sort_unstable();
        let mut segments = VecDeque::new();
        let mut index = index::Index::default();
        let mut last_id = 0u64;
        let mut max_key: Option<u32> = None;
        for num in nums {
            let path = seg_path(dir, num);
            let mut bytes = fs::read(&path).map_err(|e| io_err("read", &path, e))?;
            let mut scan = record::scan_without_bodies(&bytes);
            if scan.needs_rewrite() {
                rec.corrupt_ranges += scan.bad.len();
                match rewrite(topic, &path, &bytes, &scan) {
                    Ok(b) => {
                        bytes = b;
                        scan = record::scan_without_bodies(&bytes);
                    }
                    // Out of room: a salted segment is read as it is (its intact records
                    // stay where they are; the next start sets the bad bytes aside).
                    Err(e) if matches!(scan.layout, record::Layout::Salted(_)) && e.no_room => {
                        tracing::warn!(
                            "TOPIC({topic}): {}; its intact records are kept in place",
                            e.text
                        );
                        rec.no_room.get_or_insert(e.text);
                    }
                    Err(e) => return Err(e.text),
                }
            }
            let record::Layout::Salted(salt) = scan.layout else {
                unreachable!("a segment just written is salted")
            };
            let len = bytes.len() as u64;
            let mut mark = None;
            for (at, r) in scan.records {
                match r {
                    record::Record::Mark { last_id: m } => {
                        mark.get_or_insert(m.0);
                        last_id = last_id.max(m.0);
                    }
                    // The body stays in the log (the scan leaves it there): the broker loads
                    // it when a consumer has room for it, so a restart does not hold a
                    // whole backlog's bodies in memory.
                    record::Record::Pub { held, due, msg } => {
                        last_id = last_id.max(msg.id.0);
                        let len = record::record_len(&bytes, at);
                        index.push(msg.id.0, num as u32, at as u32, len, due.is_some());
                        replay.apply(&StoreOp::Publish {
                            ticket: 0,
                            topic: topic.clone(),
                            held: held || !known,
                            copies: 0,
                            due,
                            msg,
                        });
                    }
                    record::Record::Fin { key, id } => {
                        max_key = max_key.max(Some(key));
                        if let Some(channel) = keys.get(&key) {
                            replay.apply(&StoreOp::Finished {
                                topic: topic.clone(),
                                channel: channel.clone(),
                                id,
                            });
                        }
                    }
                    record::Record::Req { key, id, due } => {
                        max_key = max_key.max(Some(key));
                        if let Some(channel) = keys.get(&key) {
                            replay.apply(&StoreOp::Requeued {
                                topic: topic.clone(),
                                channel: channel.clone(),
                                id,
                                due,
                            });
                        }
                    }
                    // Without metadata every message waits for the first channel.
                    record::Record::Dispatch if known => replay.apply(&StoreOp::Dispatched {
                        topic: topic.clone(),
                        ids: Vec::new(),
                        copies: 0,
                    }),
                    record::Record::DropHeld if known => replay.apply(&StoreOp::TopicEmptied {
                        topic: topic.clone(),
                        dropped: Vec::new(),
                    }),
                    record::Record::Dispatch | record::Record::DropHeld => {}
                }
            }
            // A segment whose mark was lost lies above the previous one.
            let mark = mark.unwrap_or_else(|| segments.back().map_or(0, |s: &Segment| s.mark));
            segments.push_back(Segment {
                reader: None,
                num,
                mark,
                salt,
                refs: 0,
                len,
            });
        }
        if segments.is_empty() {
            let path = seg_path(dir, 0);
            let salt = record::Salt::random();
            let b = record::new_segment(salt, MessageId(last_id));
            fs::write(&path, &b).map_err(|e| io_err("write", &path, e))?;
            segments.push_back(Segment {
                reader: None,
                num: 0,
                mark: last_id,
                salt,
                refs: 0,
                len: b.len() as u64,
            });
        }
        // Full segments give back blocks still reserved past their end (a crash came before
        // the sync thread did it).
        for s in segments.iter().take(segments.len() - 1) {
            give_back_reserved(&seg_path(dir, s.num), s.len);
        }
        let tail_path = seg_path(dir, segments.back().expect("a segment").num);
        let tail = OpenOptions::new()
            .append(true)
            .open(&tail_path)
            .map_err(|e| io_err("open", &tail_path, e))?;
        let mut meta = meta;
        if !known {
            // New keys must not meet the old channels' FIN records; and until a channel
            // takes them, the restored messages stay held across further restarts.
            meta.next_key = max_key.map_or(0, |k| k + 1);
            meta.held_floor = Some(last_id);
        } else if let Some(floor) = meta.held_floor {
            replay.hold_orphans(topic, MessageId(floor));
        }
        let ts = TopicStore {
            dir: dir.to_path_buf(),
            meta,
            segments,
            tail: Some(Tail::new(tail)),
            last_write: 0,
            pending: Vec::new(),
            pending_msgs: 0,
            pending_first: None,
            pending_copies: 0,
            last_id,
            index,
            reads: self.reads(),
            meta_dirty: false,
            next: Prepared::default(),
            next_asked: false,
        };
        if !known {
            // Write fresh metadata so the next start knows the topic (once there is room).
            let mut ts = ts;
            match write_atomic_io(&ts.dir.join("meta.json"), &meta_bytes(&ts)) {
                Ok(()) => {}
                Err((what, p, e)) if is_no_room(&e) => {
                    rec.no_room.get_or_insert(io_err(what, &p, e));
                    ts.meta_dirty = true;
                }
                Err((what, p, e)) => return Err(io_err(what, &p, e)),
            }
            return Ok(ts);
        }
        Ok(ts)
    }

    /// Apply one op (buffered until [`Store::commit`]; metadata is written at once).
    pub fn apply(&mut self, op: StoreOp) {
        if let Err(e) = self.apply_inner(op) {
            tracing::error!("storage: {e}");
            self.failed.get_or_insert(e);
        }
    }

    fn apply_inner(&mut self, op: StoreOp) -> Result<(), StoreError> {
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
                let max = self.cfg.max_bytes_per_file;
                // (Not `self.topic`: the sync sender is used while `ts` is borrowed.)
                let ts = topic_store(&mut self.topics, &topic)?;
                let tail = ts.segments.back().expect("a segment");
                if tail.len + ts.pending.len() as u64 >= max {
                    let (written, old, old_path, old_len) = roll(ts)?;
                    self.unsynced += written;
                    // The old segment and the new directory entry are synced by the sync
                    // thread with everything else written: an fsync here would stop the
                    // broker for as long as the disk needs to catch up.
                    if let Some(old) = old {
                        let _ = self.sync.send(SyncMsg::Dirty(old));
                    }
                    let _ = self.sync.send(SyncMsg::DirtyDir(ts.dir.clone()));
                    let _ = self.sync.send(SyncMsg::Full(old_path, old_len));
                }
                let tail = ts.segments.back().expect("a segment");
                let (seg, before) = (tail.num as u32, ts.pending.len());
                let off = (tail.len + before as u64) as u32;
                let seal = ts.seal();
                record::put_pub(&mut ts.pending, seal, held, due, &msg);
                let len = ts.pending.len() - before;
                ts.index.push(msg.id.0, seg, off, len, due.is_some());
                ts.pending_first.get_or_insert(msg.id.0);
                ts.last_id = ts.last_id.max(msg.id.0);
                let tail = ts.segments.back_mut().expect("a segment");
                tail.refs += copies as i64;
                ts.pending_copies += copies as i64;
                ts.pending_msgs += 1;
                // A long batch is written as it goes, in pieces of about PENDING_KEEP: the
                // buffer (which keeps twice that) is reused, not regrown into fresh memory
                // (faulting in tens of MB made a late batch later still).
                if ts.pending.len() >= PENDING_KEEP {
                    self.unsynced += write_pending(ts)?;
                    mark_dirty(&self.sync, ts.tail.as_ref());
                    ask_next(ts, max, self.prep.as_ref());
                }
                Ok(())
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
            StoreOp::Finished { topic, channel, id } => {
                let ts = self.topic(&topic)?;
                let seal = ts.seal();
                if let Some(c) = ts.meta.channels.get(&*channel) {
                    record::put_fin(&mut ts.pending, seal, c.key, id);
                }
                add_ref(ts, id, -1);
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
    fn with_meta(
        &mut self,
        topic: &Name,
        f: impl FnOnce(&mut TopicMeta),
        dropped: Vec<MessageId>,
    ) -> Result<(), StoreError> {
        if let Some(m) = self.missing.get_mut(topic) {
            f(m);
            return Err(format!("topic {topic} has no storage"));
        }
        let ts = self.topic(topic)?;
        f(&mut ts.meta);
        for id in dropped {
            add_ref(ts, id, -1);
        }
        write_meta(ts).inspect_err(|_| ts.meta_dirty = true)
    }

    fn topic(&mut self, topic: &Name) -> Result<&mut TopicStore, StoreError> {
        topic_store(&mut self.topics, topic)
    }

    fn create_topic(&mut self, topic: &Name) -> Result<(), StoreError> {
        if self.topics.contains_key(topic) {
            return Ok(());
        }
        let dir = self.root.join(&**topic);
        let pending_meta = self.missing.get(topic).cloned().unwrap_or_default();
        let reads = self.reads();
        let made = (|| {
            fs::create_dir_all(&dir).map_err(|e| io_err("create", &dir, e))?;
            let path = seg_path(&dir, 0);
            let salt = record::Salt::random();
            let b = record::new_segment(salt, MessageId(0));
            let mut f = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| io_err("create", &path, e))?;
            f.write_all(&b).map_err(|e| io_err("write", &path, e))?;
            let ts = TopicStore {
                dir: dir.clone(),
                meta: pending_meta.clone(),
                segments: VecDeque::from([Segment {
                    reader: None,
                    num: 0,
                    mark: 0,
                    salt,
                    refs: 0,
                    len: b.len() as u64,
                }]),
                tail: Some(Tail::new(f)),
                last_write: 0,
                pending: Vec::new(),
                pending_msgs: 0,
                pending_first: None,
                pending_copies: 0,
                last_id: 0,
                index: index::Index::default(),
                reads,
                meta_dirty: false,
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
        let mut result = self.failed.take().map_or(Ok(()), Err);
        let mut wrote = Wrote::default();
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
                // Drops and FINs of an idle topic can still free segments.
                compact(topic, ts, &self.sync);
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
            compact(topic, ts, &self.sync);
        }
        self.unsynced += wrote;
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
    fn close_idle_files(&mut self) {
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

    /// A name with the loader thread for a new topic store.
    fn reads(&mut self) -> Reads {
        self.next_reads += 1;
        Reads {
            topic: self.next_reads,
            loader: self.loader.clone(),
        }
    }

    /// Ask for the bodies of stored messages (evicted from memory: deferred, or in a backlog
    /// past `--mem-queue-size`): the loader thread reads them and [`Store::loaded`] hands
    /// them back, in this order. Those that cannot be asked for (the topic, message or
    /// segment is gone, or the file does not open) are answered here, at once.
    pub fn request_loads(&mut self, reqs: impl IntoIterator<Item = LoadRequest>) -> Vec<Loaded> {
        let mut jobs = Vec::new();
        let mut failed = Vec::new();
        for req in reqs {
            match self.job(req) {
                Ok(job) => jobs.push(job),
                Err(l) => failed.push(l),
            }
        }
        if !jobs.is_empty() {
            let sent = match &self.loader {
                Some(l) => l.send(loader::Msg::Load(jobs)).map_err(|e| e.0),
                None => Err(loader::Msg::Load(jobs)),
            };
            if let Err(loader::Msg::Load(jobs)) = sent {
                failed.extend(jobs.into_iter().map(|j| Loaded {
                    req: j.req,
                    body: Err("storage is closed".to_string()),
                }));
            }
        }
        failed
    }

    /// The next batch of bodies the loader thread read (see [`Store::request_loads`]).
    pub async fn loaded(&mut self) -> Vec<Loaded> {
        match self.loaded.recv().await {
            Some(batch) => batch,
            None => std::future::pending().await,
        }
    }

    /// Where to read message `req.id`: its segment is read forward from the index entry at
    /// or before it, or from the last load when that lies between.
    fn job(&mut self, req: LoadRequest) -> Result<loader::Job, Loaded> {
        match self.locate(&req) {
            Ok(at) => Ok(loader::Job { at, req }),
            Err(e) => Err(Loaded { req, body: Err(e) }),
        }
    }

    fn locate(&mut self, req: &LoadRequest) -> Result<loader::Where, StoreError> {
        let ts = self
            .topics
            .get_mut(&req.topic)
            .ok_or_else(|| format!("topic {} has no storage", req.topic))?;
        let at = ts
            .index
            .locate(req.id.0)
            .ok_or_else(|| format!("message {} of {} is not stored", req.id, req.topic))?;
        let seg = ts
            .segments
            .iter_mut()
            .find(|s| s.num == at.seg as u64)
            .ok_or_else(|| {
                format!(
                    "message {} of {}: segment {} is gone",
                    req.id, req.topic, at.seg
                )
            })?;
        let (file, path) = match &seg.reader {
            Some((f, p)) => (f.clone(), p.clone()),
            None => {
                let path = seg_path(&ts.dir, seg.num);
                let f = Arc::new(File::open(&path).map_err(|e| io_err("open", &path, e))?);
                let path: Arc<Path> = path.into();
                seg.reader = Some((f.clone(), path.clone()));
                (f, path)
            }
        };
        Ok(loader::Where {
            topic: ts.reads.topic,
            seg: seg.num,
            salt: seg.salt,
            file,
            path,
            from_id: at.id,
            from_off: at.off as u64,
            end: seg.len,
        })
    }

    /// The body of stored message `id` of `topic`, read now (waiting for the loader thread).
    #[cfg(test)]
    fn load(&mut self, topic: &str, id: MessageId) -> Result<nsqlab_core::Body, StoreError> {
        let req = LoadRequest {
            topic: topic.into(),
            channel: "c".into(),
            id,
        };
        if let Some(l) = self.request_loads([req]).pop() {
            return l.body;
        }
        let mut batch = self.loaded.blocking_recv().expect("the loader thread runs");
        assert_eq!(batch.len(), 1);
        batch.pop().expect("one body").body
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
            ts.tail()?
                .sync_data()
                .map_err(|e| io_err("sync", &ts.dir, e))?;
        }
        Ok(())
    }

    /// Write what is buffered and fsync everything (clean shutdown).
    pub fn close(mut self) {
        if let Err(e) = self.commit() {
            tracing::error!("storage: {e}");
        }
        for ts in self.topics.values() {
            let len = ts.segments.back().expect("a segment").len;
            if let Some(tail) = &ts.tail {
                let _ = tail.set_len(len);
                let _ = tail.sync_data();
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

/// The segment holding message `id` gains (or loses) `delta` live copies.
/// Only messages the log recorded count: one whose record was never written (a failed write)
/// or whose segment is gone changes nothing.
fn add_ref(ts: &mut TopicStore, id: MessageId, delta: i64) {
    let Some(seg) = ts.index.segment_of(id.0) else {
        return;
    };
    // Segments are in number order (a file lost by hand may leave a gap).
    if let Ok(i) = ts.segments.binary_search_by_key(&(seg as u64), |s| s.num) {
        ts.segments[i].refs += delta;
    }
}

fn write_meta(ts: &TopicStore) -> Result<(), StoreError> {
    write_atomic(&ts.dir.join("meta.json"), &meta_bytes(ts))
}

fn meta_bytes(ts: &TopicStore) -> Vec<u8> {
    serde_json::to_vec_pretty(&ts.meta).expect("metadata serialises")
}

/// What a write added to the log: messages (for `--sync-every`) and bytes.
#[derive(Debug, Default, Clone, Copy)]
struct Wrote {
    msgs: u64,
    bytes: u64,
}

impl std::ops::AddAssign for Wrote {
    fn add_assign(&mut self, w: Wrote) {
        self.msgs += w.msgs;
        self.bytes += w.bytes;
    }
}

/// Write a topic's buffered records to its tail segment; on failure cut the file back so no
/// half record stays behind.
fn write_pending(ts: &mut TopicStore) -> Result<Wrote, StoreError> {
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
            tail.len += bytes;
            ts.pending.clear();
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
            ts.pending_msgs = 0;
            Err(io_err("write", &path, e))
        }
    }
}

/// A segment made ahead, its blocks reserved: the tail's writes then skip ext4's delayed
/// allocation (about a quarter of what a group commit's `write` cost, 16 against 12 µs for
/// 47 KB) and a roll neither creates a file nor allocates on the broker thread.
///
/// Asked for when the tail is half full, made by the `nsqlab-prep` thread (`openat` in the
/// topic's open directory, `O_EXCL`, then `fallocate` with `KEEP_SIZE`: the size stays 0, so
/// recovery sees an empty segment) and taken by the roll; a roll that finds it not ready
/// makes its segment itself, without a reservation. Not on the broker thread, nor in the
/// tail: a `fallocate` holds the file's inode lock, which the tail's writes need, and on a
/// busy disk here it took 150-520 ms (it reads block bitmaps behind the queued writes). It
/// stopped every publisher of the partition for that long, several times a minute at
/// 900 k msg/s. The sync thread gives back what a full segment did not use
/// (`give_back_reserved`), a clean stop deletes an unused one.
#[derive(Debug, Default, Clone)]
struct Prepared(Arc<std::sync::Mutex<Option<(u64, File)>>>);

impl Prepared {
    /// Free the blocks reserved for a segment made ahead (a full disk needs them more).
    fn give_back(&self) {
        if let Some((_, f)) = &*self.0.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = f.set_len(0);
        }
    }

    /// The segment numbered `num`, if it was made (one made for an earlier roll is dropped).
    fn take(&self, num: u64) -> Option<File> {
        let made = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        made.and_then(|(n, f)| (n == num).then_some(f))
    }
}

/// Once the tail is half full (of `max` bytes), ask for the next segment.
fn ask_next(ts: &mut TopicStore, max: u64, prep: Option<&mpsc::Sender<Prep>>) {
    let tail = ts.segments.back().expect("a segment");
    if ts.next_asked || tail.len < max / 2 {
        return;
    }
    let num = tail.num + 1;
    let Ok(dir) = ts.dir() else { return };
    ts.next_asked = true;
    if let Some(prep) = prep {
        let _ = prep.send(Prep {
            dir,
            path: seg_path(&ts.dir, num),
            num,
            reserve: max.min(RESERVE_MAX),
            slot: ts.next.clone(),
        });
    }
}

/// A segment's reservation is at most this much (`--max-bytes-per-file` can be large).
const RESERVE_MAX: u64 = 256 << 20;

/// A request to make the next segment.
struct Prep {
    dir: Arc<File>,
    path: PathBuf,
    num: u64,
    reserve: u64,
    slot: Prepared,
}

fn spawn_prep_thread(rx: mpsc::Receiver<Prep>) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("nsqlab-prep".into())
        .spawn(move || {
            for p in rx {
                if let Some(f) = create_in(&p.dir, &p.path) {
                    reserve(&f, 0, p.reserve);
                    *p.slot.0.lock().unwrap_or_else(|e| e.into_inner()) = Some((p.num, f));
                }
            }
        })
        .expect("spawn the segment thread")
}

/// Create the file named as `path`'s last part in directory `dir`, for appending; `None` if
/// it exists (the roll came first) or cannot be made (the roll then reports why).
fn create_in(dir: &File, path: &Path) -> Option<File> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let name = file_name_c(path)?;
    let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
    // SAFETY: openat only reads its arguments; the descriptor is open (`dir` is borrowed) and
    // `name` is NUL-terminated and outlives the call. A descriptor it returns is new and ours.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, 0o644 as libc::c_uint) };
    // SAFETY: see above: `fd` is a fresh descriptor owned by nothing else.
    (fd >= 0).then(|| unsafe { File::from_raw_fd(fd) })
}

#[cfg(target_os = "linux")]
fn reserve(f: &File, at: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: fallocate only reads its arguments; the descriptor is open (`f` is borrowed).
    // A failure (no space, a file system without it) is otherwise ignored: the write then
    // allocates as it would have, and fails by itself if it must.
    let r = unsafe {
        libc::fallocate(
            f.as_raw_fd(),
            libc::FALLOC_FL_KEEP_SIZE,
            at as libc::off_t,
            len as libc::off_t,
        )
    };
    // A reservation that failed part way (no space) may hold what it got: give it back.
    if r != 0 {
        let _ = f.set_len(at);
    }
}

#[cfg(not(target_os = "linux"))]
fn reserve(_: &File, _: u64, _: u64) {}

/// A full segment frees the blocks reserved past its end (truncating it to its own length).
/// On the sync thread: with `-o discard` the freed blocks are discarded before the call
/// returns, which can take long on a busy disk. A segment deleted meanwhile is skipped, and
/// one without blocks past its end is not touched (a truncate would still rewrite its inode:
/// a restart checks every full segment).
#[cfg(unix)]
fn give_back_reserved(path: &Path, len: u64) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(f) = OpenOptions::new().write(true).open(path) {
        let reserved =
            |m: fs::Metadata| m.len() == len && m.blocks() * 512 > len.next_multiple_of(4096);
        if f.metadata().is_ok_and(reserved) {
            let _ = f.set_len(len);
        }
    }
}

#[cfg(not(unix))]
fn give_back_reserved(_: &Path, _: u64) {}

/// The open file `f` has no name left (deleted, or its directory was).
fn removed(f: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    f.metadata().is_ok_and(|m| m.nlink() == 0)
}

/// A topic whose files were removed while open (by hand: `rm -rf` of the data path) is made
/// again: its directory, its metadata, and a new segment after the last one. Messages it
/// still owes from before stay with the broker (and are delivered) but are no longer on
/// disk; a restart before they are finished loses them, as the removal did.
fn make_again(topic: &Name, ts: &mut TopicStore) -> Result<(), StoreError> {
    fs::create_dir_all(&ts.dir).map_err(|e| io_err("create", &ts.dir, e))?;
    write_meta(ts)?;
    ts.meta_dirty = false;
    let num = ts.segments.back().expect("a segment").num + 1;
    let path = seg_path(&ts.dir, num);
    let salt = record::Salt::random();
    let b = record::new_segment(salt, MessageId(ts.last_id));
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| io_err("create", &path, e))?;
    f.write_all(&b).map_err(|e| io_err("write", &path, e))?;
    f.sync_data().map_err(|e| io_err("sync", &path, e))?;
    sync_dir(&ts.dir);
    ts.tail = Some(Tail::new(f));
    // A next segment made ahead was made in the old directory.
    ts.next = Prepared::default();
    ts.next_asked = false;
    ts.segments.push_back(Segment {
        reader: None,
        num,
        mark: ts.last_id,
        salt,
        refs: 0,
        len: b.len() as u64,
    });
    tracing::error!(
        "TOPIC({topic}): its files were removed while the server ran; made again from segment {num}. Messages published before the removal are no longer on disk: they are delivered unless the server restarts first"
    );
    Ok(())
}

/// A topic's only segment holds nothing that is owed (every message in it was finished): cut
/// it back to its header and first mark, which frees its blocks at once. `compact` deletes
/// finished segments but never the one being written, so on a disk filled by a segment
/// larger than the free space (the default 100 MiB), consuming everything freed nothing and
/// the store never recovered. The next write appends a mark with the last ID.
fn empty_finished_tail(topic: &Name, ts: &mut TopicStore) -> Result<(), StoreError> {
    let keep = (record::FILE_HEADER + record::MARK_LEN) as u64;
    let only = ts.segments.len() == 1 && ts.pending.is_empty();
    let tail = ts.segments.back_mut().expect("a segment");
    if !only || tail.refs != 0 || tail.len <= keep {
        return Ok(());
    }
    let path = seg_path(&ts.dir, tail.num);
    ts.tail()?
        .set_len(keep)
        .map_err(|e| io_err("truncate", &path, e))?;
    let tail = ts.segments.back_mut().expect("a segment");
    tracing::info!(
        "TOPIC({topic}): {} held only finished messages; cut back from {} to {keep} bytes",
        path.display(),
        tail.len
    );
    tail.len = keep;
    tail.reader = None;
    ts.index.drop_segment(tail.num as u32);
    ts.reads.forget(tail.num);
    let seal = ts.seal();
    record::put_mark(&mut ts.pending, seal, MessageId(ts.last_id));
    Ok(())
}

/// Tell the sync thread that `tail` was written to, unless it already knows.
fn mark_dirty(sync: &mpsc::Sender<SyncMsg>, tail: Option<&Arc<Tail>>) {
    let Some(tail) = tail else { return };
    if !tail.queued.swap(true, Ordering::AcqRel) {
        let _ = sync.send(SyncMsg::Dirty(tail.clone()));
    }
}

/// A topic's files, or the error a topic without storage gets.
fn topic_store<'a>(
    topics: &'a mut FxHashMap<Name, TopicStore>,
    topic: &Name,
) -> Result<&'a mut TopicStore, StoreError> {
    topics
        .get_mut(topic)
        .ok_or_else(|| format!("topic {topic} has no storage"))
}

/// What a roll wrote, and the old segment's file (if open), path and length.
type Rolled = (Wrote, Option<Arc<Tail>>, PathBuf, u64);

/// Start a new segment (writing what is buffered to the old one first). Returns how many
/// messages that wrote and the old segment's file, path and length, for the sync thread.
fn roll(ts: &mut TopicStore) -> Result<Rolled, StoreError> {
    let written = write_pending(ts)?;
    let old = ts.segments.back().expect("a segment");
    let (old_num, old_len) = (old.num, old.len);
    let num = old_num + 1;
    let path = seg_path(&ts.dir, num);
    let f = match ts.next.take(num) {
        Some(f) => f,
        None => OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| io_err("create", &path, e))?,
    };
    ts.next_asked = false;
    let old = ts.tail.replace(Tail::new(f));
    let salt = record::Salt::random();
    ts.segments.push_back(Segment {
        reader: None,
        num,
        mark: ts.last_id,
        salt,
        refs: 0,
        len: 0,
    });
    debug_assert!(ts.pending.is_empty(), "written to the old segment");
    ts.pending = record::new_segment(salt, MessageId(ts.last_id));
    Ok((written, old, seg_path(&ts.dir, old_num), old_len))
}

/// Delete the oldest segments once nothing in them is owed.
///
/// The files are deleted on the sync thread, in order: unlinking a full segment frees its
/// blocks (with `-o discard` it also discards them), about 25 ms per 100 MiB segment here,
/// which on the broker thread stalled every client of the partition. A crash before the
/// sync thread gets to it leaves the oldest segments in place, as if this had not run yet:
/// their messages are finished by records in them or in the later segments.
fn compact(topic: &Name, ts: &mut TopicStore, sync: &mpsc::Sender<SyncMsg>) {
    while ts.segments.len() > 1 && ts.segments[0].refs <= 0 {
        if ts.segments[0].refs < 0 {
            // A miscount: keep the file (disk is cheaper than a lost message).
            tracing::warn!(
                "TOPIC({topic}): segment {} counted {} copies; kept",
                ts.segments[0].num,
                ts.segments[0].refs
            );
            return;
        }
        let Ok(dir) = ts.dir() else {
            return; // (deleted on a later commit)
        };
        let s = ts.segments.pop_front().expect("a segment");
        ts.reads.forget(s.num);
        ts.index.drop_segment(s.num as u32);
        let _ = sync.send(SyncMsg::RemoveSegment(dir, seg_path(&ts.dir, s.num)));
    }
}

/// Write a segment again: its intact records, in order, each sealed for where it now lies,
/// under a file header (the segment's salt, or a new one for a segment without: a legacy or
/// headless file). Bytes that failed their check go to a `.corrupt-<k>` file beside it.
/// Returns the new contents.
fn rewrite(
    topic: &Name,
    path: &Path,
    bytes: &[u8],
    scan: &record::Scan,
) -> Result<Vec<u8>, RewriteFailed> {
    let failed = |(what, p, e): (&str, PathBuf, std::io::Error)| RewriteFailed {
        no_room: is_no_room(&e),
        text: io_err(what, &p, e),
    };
    let salt = match scan.layout {
        record::Layout::Salted(salt) => salt,
        _ => record::Salt::random(),
    };
    let mut good = Vec::with_capacity(bytes.len() + record::FILE_HEADER);
    record::put_file_header(&mut good, salt);
    let seal = record::Seal { salt, base: 0 };
    for (at, _) in &scan.records {
        record::put_payload(&mut good, seal, scan.payload(bytes, *at));
    }
    let mut bad = Vec::new();
    for r in &scan.bad {
        bad.extend_from_slice(&bytes[r.clone()]);
    }
    if !bad.is_empty() {
        let mut k = 0;
        let qpath = loop {
            let p = PathBuf::from(format!("{}.corrupt-{k}", path.display()));
            if !p.exists() {
                break p;
            }
            k += 1;
        };
        write_atomic_io(&qpath, &bad).map_err(failed)?;
        tracing::warn!(
            "TOPIC({topic}): {} had {} corrupt byte range(s) ({} bytes); kept its {} intact records, moved the rest to {}",
            path.display(),
            scan.bad.len(),
            bad.len(),
            scan.records.len(),
            qpath.display()
        );
    }
    if scan.layout == record::Layout::Legacy {
        tracing::info!(
            "TOPIC({topic}): {} converted to the salted log format",
            path.display()
        );
    }
    write_atomic_io(path, &good).map_err(failed)?;
    Ok(good)
}

/// Why a segment could not be written again.
#[derive(Debug)]
struct RewriteFailed {
    text: StoreError,
    /// Out of room (see [`is_no_room`]).
    no_room: bool,
}

/// How many bytes of full segments stay in the page cache (the newest ones: bodies read back
/// soon, such as deferred messages coming due, come from memory).
const CACHE_KEEP: u64 = 512 << 20;

/// Bytes of full segments dropped from the page cache after each sync (see
/// [`PageCache::trim`]). Under load syncs come about every 250 KB written (`--sync-every`
/// times [`SYNC_UNIT`]), or every [`SYNC_GAP`] when that is more: 2 MiB dropped per sync,
/// while the cache is over budget, stays ahead of writes up to 1 GB/s.
///
/// Dropped ranges start at multiples of this: the page cache holds a file in folios of up to
/// 2 MiB, naturally aligned, and a folio that a range covers only in part stays cached.
const TRIM_STEP: u64 = 2 << 20;

/// How far the cache may grow past [`CACHE_KEEP`] before trims catch up faster.
const TRIM_LAG: u64 = 256 << 20;

/// Full segments, oldest first, and how much of the page cache they may hold.
///
/// Once synced, the pages of older full segments are dropped (`POSIX_FADV_DONTNEED`): the
/// next writes then reuse those pages instead of taking new memory. On a virtual machine
/// that hands memory back to its host, new memory costs a fault in the host per page:
/// writing into the page cache measured 0.4–0.65 GB/s with new pages against 4.2 GB/s with
/// just-freed ones, and with a multi-GB backlog that difference decided whether publishes
/// kept up.
///
/// Only paths are kept (an open file would keep a deleted segment's disk space, and its
/// descriptor, for as long as it is listed); a segment deleted meanwhile has nothing cached.
struct PageCache {
    full: VecDeque<(PathBuf, u64)>,
    /// Bytes of the listed segments not dropped yet.
    bytes: u64,
    keep: u64,
    lag: u64,
    /// Bytes at the start of the oldest listed segment already dropped.
    front_done: u64,
}

impl Default for PageCache {
    fn default() -> Self {
        PageCache {
            full: VecDeque::new(),
            bytes: 0,
            keep: CACHE_KEEP,
            lag: TRIM_LAG,
            front_done: 0,
        }
    }
}

impl PageCache {
    fn full(&mut self, path: PathBuf, len: u64) {
        self.bytes += len;
        self.full.push_back((path, len));
    }

    /// After a sync: drop the pages of the oldest full segments beyond `keep` bytes,
    /// [`TRIM_STEP`] at a time (or an eighth of the excess over `keep + lag`, if writes
    /// outpace that, in whole multiples of the step).
    ///
    /// A little after every sync, not a whole segment as it fills: dropping 100 MiB at once
    /// stalled the broker's own writes into the page cache for milliseconds, right after
    /// each roll. Publishing at 1.25 M msg/s, most round trips over 1 ms came in the 20 ms
    /// after a roll, and p99 was 1–8 ms.
    fn trim(&mut self) {
        let mut budget = TRIM_STEP.max(self.bytes.saturating_sub(self.keep + self.lag) / 8);
        while self.bytes > self.keep && budget > 0 {
            let Some((path, len)) = self.full.front() else {
                break;
            };
            let left = len - self.front_done;
            let n = match File::open(path) {
                Ok(f) => {
                    let n = left.min(budget.next_multiple_of(TRIM_STEP));
                    // The last range runs to the end of the file (0): a folio reaching past
                    // the end is dropped too.
                    drop_cached(&f, self.front_done, if n == left { 0 } else { n });
                    n
                }
                // Deleted: its pages went with it.
                Err(_) => left,
            };
            self.front_done += n;
            self.bytes -= n;
            budget = budget.saturating_sub(n);
            if self.front_done == *len {
                self.full.pop_front();
                self.front_done = 0;
            }
        }
    }
}

/// Drop `len` bytes at `at` of `f` from the page cache.
#[cfg(target_os = "linux")]
fn drop_cached(f: &File, at: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: posix_fadvise only reads its arguments; the descriptor is open (`f` is held).
    unsafe {
        libc::posix_fadvise(
            f.as_raw_fd(),
            at as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_DONTNEED,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn drop_cached(_: &File, _: u64, _: u64) {}

/// Delete the file named as `path`'s last part in directory `dir`, wherever that directory
/// is now. (It can be gone already: its topic was deleted meanwhile, with its directory.)
fn remove_in(dir: &File, path: &Path) {
    use std::os::fd::AsRawFd;
    let Some(c) = file_name_c(path) else {
        return;
    };
    // SAFETY: unlinkat only reads its arguments; the descriptor is open (`dir` is borrowed)
    // and `c` is a NUL-terminated string that outlives the call.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), 0) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!("storage: failed to remove {}: {e}", path.display());
        }
    }
}

/// `path`'s last part, for the `*at` calls that take a name in an open directory.
fn file_name_c(path: &Path) -> Option<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.file_name()?.as_bytes()).ok()
}

/// What the sync thread owes the disk.
#[derive(Default)]
struct SyncThread {
    dirty: Vec<Arc<Tail>>,
    dirs: Vec<PathBuf>,
    files: Vec<PathBuf>,
    cache: PageCache,
}

/// What a message asks of the sync thread.
#[derive(PartialEq)]
enum Step {
    Wait,
    Sync,
    Stop,
}

impl SyncThread {
    fn handle(&mut self, msg: SyncMsg) -> Step {
        match msg {
            SyncMsg::Dirty(f) => {
                if !self.dirty.iter().any(|d| Arc::ptr_eq(d, &f)) {
                    self.dirty.push(f);
                }
            }
            SyncMsg::DirtyDir(d) => {
                if !self.dirs.contains(&d) {
                    self.dirs.push(d);
                }
            }
            SyncMsg::DirtyFile(f) => {
                if !self.files.contains(&f) {
                    self.files.push(f);
                }
            }
            SyncMsg::Closed(tail, path) => {
                self.dirty.retain(|d| !Arc::ptr_eq(d, &tail));
                if !self.files.contains(&path) {
                    self.files.push(path);
                }
            }
            SyncMsg::Full(path, len) => {
                give_back_reserved(&path, len);
                self.cache.full(path, len);
            }
            SyncMsg::RemoveSegment(dir, path) => remove_in(&dir, &path),
            SyncMsg::RemoveDir(path) => {
                if let Err(e) = fs::remove_dir_all(&path) {
                    tracing::warn!("storage: failed to remove {}: {e}", path.display());
                }
            }
            SyncMsg::Now => return Step::Sync,
            SyncMsg::Stop => return Step::Stop,
        }
        Step::Wait
    }

    /// Sync everything written so far: small files, then directories, then segments.
    fn sync(&mut self) {
        for f in self.files.drain(..) {
            sync_file(&f);
        }
        for d in self.dirs.drain(..) {
            sync_dir(&d);
        }
        for f in self.dirty.drain(..) {
            // Cleared first (with acquire: the writes it was set after are in this sync),
            // so a write from now on tells us again.
            f.queued.swap(false, Ordering::AcqRel);
            if let Err(e) = f.sync_data() {
                tracing::error!("storage: fsync failed: {e}");
            }
        }
    }
}

fn spawn_sync_thread(rx: mpsc::Receiver<SyncMsg>, every: Duration) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("nsqlab-sync".into())
        .spawn(move || {
            let mut st = SyncThread::default();
            let every = every.max(Duration::from_millis(1));
            let mut deadline = std::time::Instant::now() + every;
            loop {
                let wait = deadline.saturating_duration_since(std::time::Instant::now());
                let mut step = match rx.recv_timeout(wait) {
                    Ok(msg) => st.handle(msg),
                    Err(mpsc::RecvTimeoutError::Timeout) => Step::Sync,
                    Err(mpsc::RecvTimeoutError::Disconnected) => Step::Stop,
                };
                // Whatever queued up meanwhile (during the last sync, requests to sync
                // again) is taken in first: one sync answers them all.
                while step != Step::Stop {
                    match rx.try_recv() {
                        Ok(msg) => {
                            let s = st.handle(msg);
                            if s != Step::Wait {
                                step = s;
                            }
                        }
                        Err(mpsc::TryRecvError::Empty) => break,
                        Err(mpsc::TryRecvError::Disconnected) => step = Step::Stop,
                    }
                }
                match step {
                    Step::Wait => {}
                    Step::Sync => {
                        st.sync();
                        st.cache.trim();
                        deadline = std::time::Instant::now() + every;
                    }
                    Step::Stop => {
                        st.sync();
                        return;
                    }
                }
            }
        })
        .expect("spawn the sync thread")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Resident pages of `f` (mincore on a mapping of it).
    #[cfg(target_os = "linux")]
    fn resident_pages(f: &File, len: usize) -> usize {
        use std::os::fd::AsRawFd;
        let page = 4096;
        let pages = len.div_ceil(page);
        let mut vec = vec![0u8; pages];
        // SAFETY: a read-only shared mapping of an open file, unmapped before returning;
        // mincore writes one byte per page into `vec`, which has that many.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            assert_eq!(libc::mincore(p, len, vec.as_mut_ptr()), 0);
            libc::munmap(p, len);
        }
        vec.iter().filter(|&&b| b & 1 == 1).count()
    }

    /// A finished segment is deleted in the directory it was in, even when that directory
    /// was renamed (its topic deleted) and a new one made under the old name meanwhile.
    #[test]
    fn a_finished_segment_is_deleted_where_it_was_not_by_path() {
        let root = std::env::temp_dir().join(format!("nsqlab-unlink-{}", std::process::id()));
        let (dir, gone) = (root.join("t"), root.join(".deleted-t"));
        fs::create_dir_all(&dir).unwrap();
        fs::write(seg_path(&dir, 0), b"old").unwrap();
        fs::write(seg_path(&dir, 1), b"old").unwrap();
        let dir_fd = Arc::new(File::open(&dir).unwrap());
        fs::rename(&dir, &gone).unwrap();
        fs::create_dir_all(&dir).unwrap();
        fs::write(seg_path(&dir, 0), b"new").unwrap();
        let (tx, rx) = mpsc::channel();
        let thread = spawn_sync_thread(rx, Duration::from_secs(60));
        for num in [0, 1] {
            tx.send(SyncMsg::RemoveSegment(dir_fd.clone(), seg_path(&dir, num)))
                .unwrap();
        }
        tx.send(SyncMsg::Stop).unwrap();
        thread.join().unwrap();
        assert_eq!(fs::read(seg_path(&dir, 0)).unwrap(), b"new");
        assert_eq!(fs::read_dir(&gone).unwrap().count(), 0);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn a_tail_is_sent_to_the_sync_thread_once_per_sync() {
        let dir = std::env::temp_dir().join(format!("nsqlab-tail-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let tail = Tail::new(File::create(dir.join("0.log")).unwrap());
        // Many commits before a sync: one message.
        let (tx, rx) = mpsc::channel();
        for _ in 0..3 {
            mark_dirty(&tx, Some(&tail));
        }
        assert_eq!(rx.try_iter().count(), 1);
        // The sync thread clears the flag as it syncs, so the next write is sent again.
        let (tx, rx) = mpsc::channel();
        let thread = spawn_sync_thread(rx, Duration::from_secs(3600));
        tx.send(SyncMsg::Dirty(tail.clone())).unwrap();
        tx.send(SyncMsg::Now).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while tail.queued.load(Ordering::Acquire) {
            assert!(
                std::time::Instant::now() < deadline,
                "the sync never cleared it"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let (probe, seen) = mpsc::channel();
        mark_dirty(&probe, Some(&tail));
        assert_eq!(seen.try_iter().count(), 1);
        tx.send(SyncMsg::Stop).unwrap();
        thread.join().unwrap();
        let _ = fs::remove_dir_all(&dir);
    }

    /// A store under a fresh directory whose sync thread is replaced by `rx`'s end.
    fn store_with_sync_channel(name: &str) -> (Store, mpsc::Receiver<SyncMsg>, PathBuf) {
        store_with_segments_of(name, 100 << 20)
    }

    fn store_with_segments_of(
        name: &str,
        max_bytes_per_file: u64,
    ) -> (Store, mpsc::Receiver<SyncMsg>, PathBuf) {
        let dir = std::env::temp_dir().join(format!("nsqlab-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let (mut store, _) = open_in(&dir, max_bytes_per_file);
        let (tx, rx) = mpsc::channel();
        // (The store's own sync thread sees its sender go and stops.)
        store.sync = tx;
        if let Some(t) = store.sync_thread.take() {
            t.join().unwrap();
        }
        (store, rx, dir)
    }

    /// The store under `dir` (opened, and what it recovered), for one partition of one.
    fn open_in(dir: &Path, max_bytes_per_file: u64) -> (Store, Recovered) {
        let cfg = StoreConfig {
            data_path: dir.to_path_buf(),
            max_bytes_per_file,
            sync_every: 2500,
            sync_timeout: Duration::from_secs(3600),
            partition: (0, 1),
        };
        let mut broker = Broker::new(nsqlab_core::Options::default(), 1, 0);
        Store::open(cfg, &mut broker, 0).unwrap()
    }

    fn publish(store: &mut Store, topic: &Name, id: u64, size: usize) {
        publish_body(store, topic, id, vec![b'a'; size]);
    }

    fn publish_body(store: &mut Store, topic: &Name, id: u64, body: Vec<u8>) {
        store.apply(StoreOp::Publish {
            ticket: 0,
            topic: topic.clone(),
            held: true,
            copies: 1,
            due: None,
            msg: nsqlab_core::Message::new(MessageId(id), 0, body.into()),
        });
    }

    /// The end of a test's store: stop it, then remove its directory.
    fn close_and_remove(store: Store, dir: &Path) {
        drop(store);
        let _ = fs::remove_dir_all(dir);
    }

    /// Create topic `t` (one commit).
    fn new_topic(store: &mut Store) -> Name {
        let topic: Name = Arc::from("t");
        store.apply(StoreOp::TopicCreated {
            topic: topic.clone(),
        });
        store.commit().unwrap();
        topic
    }

    /// Message `id`'s body: its ID, then filler (some long, most short).
    fn body_of(id: u64) -> Vec<u8> {
        let len = if id.is_multiple_of(97) {
            20_000
        } else {
            20 + (id * 37 % 300) as usize
        };
        let mut b = id.to_le_bytes().to_vec();
        b.resize(len, b'a' + (id % 26) as u8);
        b
    }

    /// A data path written before salts opens: its segments are converted, every message and
    /// FIN in them kept.
    #[test]
    fn a_legacy_segment_is_converted_when_the_store_opens() {
        use record::Record;
        let dir = std::env::temp_dir().join(format!("nsqlab-legacy-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let tdir = dir.join("nsqlab/t");
        fs::create_dir_all(&tdir).unwrap();
        let meta = r#"{"next_key":1,"channels":{"c":{"key":0,"start":0}}}"#;
        fs::write(tdir.join("meta.json"), meta).unwrap();
        let msg = |id: u64| Record::Pub {
            held: false,
            due: None,
            msg: nsqlab_core::Message::new(MessageId(id), 0, body_of(id).into()),
        };
        let mut b = Vec::new();
        for r in [
            Record::Mark {
                last_id: MessageId(0),
            },
            msg(1),
            msg(2),
            Record::Fin {
                key: 0,
                id: MessageId(2),
            },
            msg(3),
        ] {
            record::put_legacy(&mut b, &r);
        }
        let seg = seg_path(&tdir, 0);
        fs::write(&seg, &b).unwrap();
        let (mut store, rec) = open_in(&dir, 1 << 20);
        assert_eq!((rec.messages, rec.corrupt_ranges), (2, 0));
        let now = fs::read(&seg).unwrap();
        assert!(matches!(
            record::scan_without_bodies(&now).layout,
            record::Layout::Salted(_)
        ));
        for id in [1, 3] {
            let body = store.load("t", MessageId(id)).map(|b| b.to_vec());
            assert_eq!(body, Ok(body_of(id)), "message {id}");
        }
        // It is appended to in the new format, and read back so after a restart.
        let topic: Name = Arc::from("t");
        publish(&mut store, &topic, 4, 10);
        store.commit().unwrap();
        drop(store);
        let (store, rec) = open_in(&dir, 1 << 20);
        assert_eq!((rec.messages, rec.corrupt_ranges), (3, 0));
        close_and_remove(store, &dir);
    }

    /// Past `max_open` topics, the least recently written close their files; writing or
    /// reading one opens them again.
    #[test]
    fn only_so_many_topics_keep_their_files_open() {
        let (mut store, _rx, dir) = store_with_segments_of("fds", 1 << 20);
        store.max_open = 4;
        let names: Vec<Name> = (0..20)
            .map(|i| Arc::from(format!("t{i}").as_str()))
            .collect();
        let open = |store: &Store| store.topics.values().filter(|t| t.tail.is_some()).count();
        for (i, topic) in names.iter().enumerate() {
            store.apply(StoreOp::TopicCreated {
                topic: topic.clone(),
            });
            publish(&mut store, topic, i as u64 + 1, 10);
            store.open_checked -= Duration::from_secs(1);
            store.commit().unwrap();
            assert!(open(&store) <= 4, "{} open after topic {i}", open(&store));
        }
        // The newest stay open; the first is closed, and written and read again.
        assert!(store.topics[&names[19]].tail.is_some());
        assert!(store.topics[&names[0]].tail.is_none());
        publish(&mut store, &names[0], 100, 10);
        store.commit().unwrap();
        assert!(store.topics[&names[0]].tail.is_some());
        for (topic, id) in [(&names[0], 1), (&names[0], 100), (&names[7], 8)] {
            let body = store.load(topic, MessageId(id)).map(|b| b.to_vec());
            assert_eq!(body, Ok(vec![b'a'; 10]), "{topic} {id}");
        }
        close_and_remove(store, &dir);
    }

    #[test]
    fn loads_find_every_message_through_the_sparse_index() {
        let (mut store, _rx, dir) = store_with_segments_of("sparse", 256 << 10);
        let topic = new_topic(&mut store);
        let n = 3000u64;
        for id in 1..=n {
            store.apply(StoreOp::Publish {
                ticket: 0,
                topic: topic.clone(),
                held: true,
                copies: 1,
                // Every seventh deferred (those get an index entry each).
                due: (id % 7 == 0).then_some(1_000 + id),
                msg: nsqlab_core::Message::new(MessageId(id * 3), id, body_of(id).into()),
            });
            if id % 50 == 0 {
                store.commit().unwrap();
            }
        }
        store.commit().unwrap();
        let ts = &store.topics[&topic];
        assert!(ts.segments.len() > 4, "{} segments", ts.segments.len());
        let deferred = n / 7;
        assert!(
            ts.index.entries() < (deferred + n / 10) as usize,
            "{} index entries for {n} messages",
            ts.index.entries()
        );
        let load =
            |store: &mut Store, id: u64| store.load(&topic, MessageId(id * 3)).map(|b| b.to_vec());
        // In order (a consumer's backlog), backwards, and scattered (two consumers, deferred
        // messages coming due).
        for id in (1..=n)
            .chain((1..=n).rev())
            .chain((0..n).map(|k| k * 1237 % n + 1))
        {
            assert_eq!(load(&mut store, id), Ok(body_of(id)), "message {id}");
        }
        // IDs between and beyond the stored ones are not there.
        for id in [1, 3001, 4501, 9001, 9004] {
            assert!(store.load(&topic, MessageId(id)).is_err(), "ID {id}");
        }
        close_and_remove(store, &dir);
    }

    fn load_request(topic: &Name, id: u64) -> LoadRequest {
        LoadRequest {
            topic: topic.clone(),
            channel: "c".into(),
            id: MessageId(id),
        }
    }

    /// The next `n` bodies from the loader thread, in the order they came.
    fn loaded_bodies(store: &mut Store, n: usize) -> Vec<(u64, Result<Vec<u8>, StoreError>)> {
        let mut got = Vec::new();
        while got.len() < n {
            let batch = store
                .loaded
                .blocking_recv()
                .expect("the loader thread runs");
            got.extend(
                batch
                    .into_iter()
                    .map(|l| (l.req.id.0, l.body.map(|b| b.to_vec()))),
            );
        }
        got
    }

    #[test]
    fn loads_come_back_from_the_loader_thread_in_order_even_with_their_segment_gone() {
        let (mut store, _rx, dir) = store_with_sync_channel("loader");
        let topic = new_topic(&mut store);
        for id in 1..=60u64 {
            publish_body(&mut store, &topic, id, body_of(id));
        }
        store.commit().unwrap();
        // Asked for in two batches (with one the store never had, answered at once), read
        // in order; the second batch is asked for once the segment's file is unlinked (as
        // the sync thread does once its messages are finished): the loads hold it open.
        let failed = store.request_loads((1..=30).map(|id| load_request(&topic, id)));
        assert!(failed.is_empty(), "{failed:?}");
        let failed = store.request_loads([load_request(&topic, 999)]);
        assert_eq!(failed.len(), 1);
        assert_eq!(
            failed[0].body,
            Err("message 00000000000003e7 of t is not stored".into())
        );
        fs::remove_file(seg_path(&store.topics[&topic].dir, 0)).unwrap();
        let failed = store.request_loads((31..=60).map(|id| load_request(&topic, id)));
        assert!(failed.is_empty(), "{failed:?}");
        let want: Vec<_> = (1..=60u64).map(|id| (id, Ok(body_of(id)))).collect();
        assert_eq!(loaded_bodies(&mut store, 60), want);

        // A topic deleted and made again under its name reads its own new log, not what the
        // loader kept of the old one at the same offsets (the start of its first segment,
        // read last).
        assert!(store.request_loads([load_request(&topic, 1)]).is_empty());
        assert_eq!(loaded_bodies(&mut store, 1), vec![(1, Ok(body_of(1)))]);
        store.apply(StoreOp::TopicDeleted {
            topic: topic.clone(),
        });
        store.commit().unwrap();
        let topic = new_topic(&mut store);
        for id in 61..=70u64 {
            publish(&mut store, &topic, id, 100 + id as usize);
        }
        store.commit().unwrap();
        assert!(store
            .request_loads((61..=70).map(|id| load_request(&topic, id)))
            .is_empty());
        let want: Vec<_> = (61..=70u64)
            .map(|id| (id, Ok(vec![b'a'; 100 + id as usize])))
            .collect();
        assert_eq!(loaded_bodies(&mut store, 10), want);
        close_and_remove(store, &dir);
    }

    #[test]
    fn a_failed_write_releases_no_copies_and_loads_nothing_of_what_it_lost() {
        let (mut store, _rx, dir) = store_with_sync_channel("failedwrite");
        let topic = new_topic(&mut store);
        let finish = |store: &mut Store, ids: std::ops::RangeInclusive<u64>| {
            for id in ids {
                store.apply(StoreOp::Finished {
                    topic: topic.clone(),
                    channel: Arc::from("c"),
                    id: MessageId(id),
                });
            }
        };
        for id in 1..=100 {
            publish(&mut store, &topic, id, 100);
        }
        store.commit().unwrap();
        // The next batch's write fails (the tail is open read-only meanwhile).
        let path = seg_path(&dir.join("nsqlab").join("t"), 0);
        let writable = store
            .topics
            .get_mut(&topic)
            .unwrap()
            .tail
            .replace(Tail::new(File::open(&path).unwrap()));
        for id in 101..=110 {
            publish(&mut store, &topic, id, 100);
        }
        assert!(store.commit().is_err());
        store.topics.get_mut(&topic).unwrap().tail = writable;
        let refs = |store: &Store| store.topics[&topic].segments[0].refs;
        assert_eq!(refs(&store), 100);
        // Their FINs release nothing; the written ones' do.
        finish(&mut store, 101..=110);
        store.commit().unwrap();
        assert_eq!(refs(&store), 100);
        assert!(store.load(&topic, MessageId(105)).is_err());
        assert_eq!(store.load(&topic, MessageId(50)).unwrap().len(), 100);
        // Written after the failure: recorded and found again.
        publish(&mut store, &topic, 111, 100);
        store.commit().unwrap();
        assert_eq!(store.load(&topic, MessageId(111)).unwrap().len(), 100);
        finish(&mut store, 1..=100);
        assert_eq!(refs(&store), 1);
        close_and_remove(store, &dir);
    }

    fn sync_requests(rx: &mpsc::Receiver<SyncMsg>) -> usize {
        rx.try_iter().filter(|m| matches!(m, SyncMsg::Now)).count()
    }

    #[test]
    fn a_new_topic_is_synced_by_the_sync_thread_not_on_the_broker() {
        let (mut store, rx, dir) = store_with_sync_channel("newtopic");
        new_topic(&mut store);
        let root = dir.join("nsqlab");
        let meta = root.join("t").join("meta.json");
        // Its metadata is there whole at once (a process crash keeps it)...
        let m: TopicMeta = serde_json::from_slice(&fs::read(&meta).unwrap()).unwrap();
        assert!(!m.paused && m.channels.is_empty());
        assert!(!root.join("t").join("meta.tmp").exists());
        // ...and the sync thread is told to sync it and both directories.
        let (mut files, mut dirs) = (Vec::new(), Vec::new());
        for msg in rx.try_iter() {
            match msg {
                SyncMsg::DirtyFile(f) => files.push(f),
                SyncMsg::DirtyDir(d) => dirs.push(d),
                _ => {}
            }
        }
        assert_eq!(files, [meta]);
        dirs.sort();
        assert_eq!(dirs, [root.clone(), root.join("t")]);
        close_and_remove(store, &dir);
    }

    #[test]
    fn a_sync_is_asked_for_every_sync_every_messages_or_that_many_sync_units_at_most_every_gap() {
        let (mut store, rx, dir) = store_with_sync_channel("syncbytes");
        let topic = new_topic(&mut store);
        let _ = rx.try_iter().count();
        // Small messages: a sync per --sync-every (2500) of them, in commits of 100.
        let mut id = 1;
        for _ in 0..50 {
            for _ in 0..100 {
                publish(&mut store, &topic, id, 10);
                id += 1;
            }
            store.commit().unwrap();
        }
        assert_eq!(sync_requests(&rx), 2);
        // Large ones: a sync per 2500 x SYNC_UNIT bytes written, long before 2500 of them...
        let size = 16 << 10;
        let per_sync = (2500 * SYNC_UNIT).div_ceil(size as u64 + 64);
        let mut write = |store: &mut Store, n: u64| {
            for _ in 0..n {
                publish(store, &topic, id, size);
                id += 1;
                store.commit().unwrap();
            }
        };
        for _ in 0..4 {
            // (The last one asked for long enough ago.)
            let before = std::time::Instant::now().checked_sub(2 * SYNC_GAP);
            store.last_sync_ask = before.expect("an instant before now");
            write(&mut store, per_sync);
        }
        let n = sync_requests(&rx);
        assert!(
            (3..=4).contains(&n),
            "{n} sync requests for 4 x 2500 x SYNC_UNIT bytes"
        );
        // ...but not within SYNC_GAP of the last (as if that had been asked for just now).
        store.last_sync_ask = std::time::Instant::now() + Duration::from_secs(3600);
        write(&mut store, 4 * per_sync);
        assert_eq!(sync_requests(&rx), 0);
        close_and_remove(store, &dir);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn full_segments_beyond_the_budget_leave_the_page_cache_oldest_first_a_step_at_a_time() {
        let dir = std::env::temp_dir().join(format!("nsqlab-pagecache-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let len = 2 * TRIM_STEP as usize;
        let pages = len / 4096;
        let mut cache = PageCache {
            keep: 2 * len as u64,
            lag: 1 << 40,
            ..PageCache::default()
        };
        let mut files = Vec::new();
        for i in 0..4u8 {
            let path = dir.join(format!("{i}.log"));
            let mut f = File::create(&path).unwrap();
            f.write_all(&vec![i; len]).unwrap();
            f.sync_data().unwrap();
            let f = OpenOptions::new().read(true).open(&path).unwrap();
            // Read it so that its pages are cached for certain.
            let mut b = Vec::new();
            (&f).read_to_end(&mut b).unwrap();
            assert_eq!(resident_pages(&f, len), pages);
            cache.full(path.clone(), len as u64);
            files.push((path, f));
        }
        let resident = |files: &Vec<(PathBuf, File)>| -> Vec<usize> {
            files.iter().map(|(_, f)| resident_pages(f, len)).collect()
        };
        assert_eq!(cache.bytes, 4 * len as u64);
        // One step: the first half of the oldest segment.
        cache.trim();
        assert_eq!(cache.bytes, 3 * len as u64 + len as u64 / 2);
        assert_eq!(resident(&files), [pages / 2, pages, pages, pages]);
        // Three more finish the two oldest; a fourth drops nothing (the two newest stay).
        for _ in 0..4 {
            cache.trim();
        }
        assert_eq!(cache.bytes, 2 * len as u64);
        assert_eq!(resident(&files), [0, 0, pages, pages]);
        // Dropped pages are read back from the disk unchanged.
        for (i, (path, _)) in files.iter().enumerate() {
            assert_eq!(fs::read(path).unwrap(), vec![i as u8; len]);
        }

        // A segment deleted meanwhile is passed over.
        let far_behind = || PageCache {
            keep: 0,
            lag: 0,
            ..PageCache::default()
        };
        let mut cache = far_behind();
        cache.full(dir.join("deleted.log"), len as u64);
        cache.trim();
        assert_eq!((cache.bytes, cache.full.len()), (0, 0));
        // Far behind (past `keep + lag`): an eighth of the excess per trim (here 4 MiB, the
        // whole segment), not a step (2 MiB).
        let mut cache = far_behind();
        for _ in 0..8 {
            cache.full(files[3].0.clone(), len as u64);
        }
        cache.trim();
        assert_eq!((cache.bytes, cache.full.len()), (7 * len as u64, 7));
        assert_eq!(resident_pages(&files[3].1, len), 0);
        let _ = fs::remove_dir_all(&dir);
    }
}
