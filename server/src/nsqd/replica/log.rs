//! A replicated node's disk: raft's snapshot, log and hard state
//! ([`nsqlab_core::replica::Disk`]) in two files of the data path. `raft.base` holds the
//! whole disk as of the last compaction, in one record; `raft.log` holds what was persisted
//! since, one record per [`Persist`], appended; [`RaftLog::sync`] makes what was appended
//! durable (the node's messages that follow a `Persist` leave only after it).
//!
//! `raft.log` is reused, not replaced: each compaction (and each start) begins a new
//! *generation*. [`RaftLog::rewrite`] writes the new `raft.base` (temp file, fsync, rename,
//! fsync of the directory), and the next generation's records are written over the last
//! one's from byte 0. Reading stops at the first record that is not of the base's
//! generation, so what an earlier one left further on is never read. Blocks written and
//! synced before are cheap to sync again (`fdatasync` then writes the data and flushes the
//! disk's cache; a growing file costs its allocation and size as well, two to three times
//! as long on this kind of machine), and every commit of a follower waits on that sync. The
//! file is also made ready ahead (written with zeros and synced, in the pause a compaction
//! already takes) for as much as the next generation is likely to hold.
//!
//! At start the base and then the log's records of its generation are applied in order to an
//! empty [`Disk`]; the first record cut short or failing its CRC ends the log (a write torn by
//! a crash). [`Opened::start`] then begins a new generation, so nothing a crash left past the
//! end can ever be read as part of the log.
//!
//! # Format
//! All integers little-endian.
//! ```text
//! record = len:u32 crc:u32 body          crc: CRC-32C of body; len: body's length
//! body   = gen:u64 flags:u8              gen: the generation (raft.base's, in raft.log)
//!          [snapshot]   (flags & 1)      len:u32 protobuf Snapshot
//!          [entries]    (flags & 2)      count:u32 (len:u32 protobuf Entry)*count
//!          [hard state] (flags & 4)      len:u32 protobuf HardState
//! ```
//! A data path with `raft.log` and no `raft.base` holds an earlier build's log (bodies
//! without `gen`, the first record a snapshot): it is read as such and started as a
//! generation of its own (`raft.base` written, then `raft.log` emptied).

use nsqlab_core::replica::protobuf::Message as _;
use nsqlab_core::replica::raft::eraftpb::{Entry, HardState, Snapshot};
use nsqlab_core::replica::{Disk, Persist};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Why the log could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: a record that does not parse: {reason}")]
    Corrupt { path: PathBuf, reason: String },
}

/// The log's file name in the data path.
pub const FILE_NAME: &str = "raft.log";
/// The base's file name in the data path.
pub const BASE_NAME: &str = "raft.base";

/// Room kept free on the disk beside what a compaction needs (see `disk_low` in the
/// driver); the file is never made ready into it.
pub const ROOM_KEPT: u64 = 32 << 20;

/// The open log, appending.
pub struct RaftLog {
    dir: PathBuf,
    path: PathBuf,
    file: File,
    /// This generation (the base's).
    gen: u64,
    /// Bytes of this generation's records in `raft.log`.
    len: u64,
    /// `raft.log`'s size (past `len`: an earlier generation's records, or zeros).
    size: u64,
    /// `raft.base`'s size.
    base_len: u64,
    /// How much a generation holds before the node compacts (`--raft-snapshot-bytes`).
    ahead: u64,
    /// `base_len + len`, for the task that watches the disk's room.
    used: Arc<AtomicU64>,
}

/// A log read back, not yet written to: [`Opened::start`] begins its next generation.
pub struct Opened {
    dir: PathBuf,
    path: PathBuf,
    file: File,
    gen: u64,
    size: u64,
    ahead: u64,
    /// An earlier build's `raft.log` (no `raft.base`): emptied once the base is written.
    legacy: bool,
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> LogError {
    let path = path.to_path_buf();
    move |source| LogError::Io { op, path, source }
}

impl RaftLog {
    /// Open (or create) the log in `dir`, and read what it holds. `ahead`: the bytes a
    /// generation holds before the node compacts (the file is made ready for that much).
    pub fn open(dir: &Path, ahead: u64) -> Result<(Opened, Disk), LogError> {
        let path = dir.join(FILE_NAME);
        let base_path = dir.join(BASE_NAME);
        let mut disk = Disk::default();
        let base = match std::fs::read(&base_path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io("read", &base_path)(e)),
        };
        let corrupt = |path: &Path, reason: String| LogError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        // The base is written whole (temp file, fsync, rename) or not at all.
        let gen = match &base {
            Some(b) => {
                let Some((Ok((gen, p)), _)) = next_record(b, Layout::Any) else {
                    return Err(corrupt(&base_path, "the base does not parse".into()));
                };
                disk.apply(&p);
                Some(gen)
            }
            None => None,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io("open", &path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io("read", &path))?;
        let layout = match gen {
            Some(g) => Layout::Gen(g),
            None => Layout::Legacy,
        };
        let mut at = 0;
        while let Some((p, n)) = next_record(&bytes[at..], layout) {
            let (_, p) = p.map_err(|reason| corrupt(&path, reason))?;
            disk.apply(&p);
            at += n;
        }
        if at < bytes.len() && whole_record_after(&bytes[at..], layout) {
            // Not a write cut short: a record in the middle went bad, and raft must not
            // forget entries it may have acknowledged. A person decides (the node can be
            // replaced, its data removed).
            return Err(corrupt(
                &path,
                format!("the record at byte {at} fails its check, and whole records follow"),
            ));
        }
        if at < bytes.len() && claims(&bytes[at..], layout) {
            tracing::warn!(
                "{}: the record at byte {at} was cut short (a write a crash interrupted): \
                 the log ends before it",
                path.display()
            );
        }
        Ok((
            Opened {
                dir: dir.to_path_buf(),
                path,
                file,
                gen: gen.unwrap_or(0),
                size: bytes.len() as u64,
                ahead,
                legacy: gen.is_none() && !bytes.is_empty(),
            },
            disk,
        ))
    }

    /// Append `p` (not yet durable: see [`RaftLog::sync`]).
    pub fn append(&mut self, p: &Persist) -> Result<(), LogError> {
        let record = encode(self.gen, p);
        self.file
            .write_all_at(&record, self.len)
            .map_err(io("write", &self.path))?;
        self.len += record.len() as u64;
        self.size = self.size.max(self.len);
        self.used.store(self.base_len + self.len, Ordering::Relaxed);
        Ok(())
    }

    /// Make everything appended durable.
    pub fn sync(&mut self) -> Result<(), LogError> {
        self.file.sync_data().map_err(io("sync", &self.path))
    }

    /// Bytes of this generation: the base and the records since.
    #[cfg(test)]
    fn len(&self) -> u64 {
        self.base_len + self.len
    }

    /// The bytes of this generation (the base and the records since), kept up to date for
    /// another thread.
    pub fn used(&self) -> Arc<AtomicU64> {
        self.used.clone()
    }

    /// Begin the next generation with `disk` as its base (durably: temp file, fsync, rename,
    /// fsync of the directory); then make `raft.log` ready for it.
    pub fn rewrite(&mut self, disk: &Disk) -> Result<(), LogError> {
        self.write_base(disk)?;
        self.make_ready();
        Ok(())
    }

    fn write_base(&mut self, disk: &Disk) -> Result<(), LogError> {
        let gen = self.gen + 1;
        let record = encode_parts(
            gen,
            Some(&disk.snapshot),
            &disk.entries,
            Some(&disk.hard_state),
        );
        let base = self.dir.join(BASE_NAME);
        let tmp = self.dir.join("raft.base.tmp");
        {
            let f = File::create(&tmp).map_err(io("create", &tmp))?;
            f.write_all_at(&record, 0).map_err(io("write", &tmp))?;
            f.sync_data().map_err(io("sync", &tmp))?;
        }
        std::fs::rename(&tmp, &base).map_err(io("rename", &base))?;
        File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(io("sync", &self.dir))?;
        // From here on raft.log's records (of the generation before) are not read.
        self.gen = gen;
        self.len = 0;
        self.base_len = record.len() as u64;
        self.used.store(self.base_len, Ordering::Relaxed);
        Ok(())
    }

    /// Make `raft.log` ready for what the generation is likely to hold (the larger of
    /// `ahead` and the base, and an eighth more): written with zeros and synced, so that its
    /// records' syncs write no more than their data. A file much larger than that (an
    /// earlier generation held a backlog since drained) is cut back. Never into the room
    /// the disk keeps; a failure only leaves the file as it was (it grows as it is written).
    fn make_ready(&mut self) {
        let want = self.ahead.max(self.base_len);
        let want = want.saturating_add(want / 8);
        if self.size > want.saturating_mul(2) && self.file.set_len(want).is_ok() {
            self.size = want;
        }
        if self.size >= want {
            return;
        }
        let Some(free) = crate::nsqd::store::sys::free_bytes(&self.dir) else {
            return;
        };
        let spare = free.saturating_sub(self.base_len / 2 + 2 * ROOM_KEPT);
        let end = want.min(self.size.saturating_add(spare));
        let zeros = vec![0u8; 1 << 20];
        let mut at = self.size;
        let mut wrote = Ok(());
        while at < end && wrote.is_ok() {
            let n = (end - at).min(zeros.len() as u64);
            wrote = self.file.write_all_at(&zeros[..n as usize], at);
            at += n;
        }
        match wrote.and_then(|()| self.file.sync_data()) {
            Ok(()) => self.size = self.size.max(end),
            Err(e) => {
                tracing::debug!("{}: not made ready ahead: {e}", self.path.display());
                let _ = self.file.set_len(self.size);
            }
        }
    }
}

impl Opened {
    /// Begin the next generation with `disk` (what the node starts from) as its base.
    pub fn start(self, disk: &Disk) -> Result<RaftLog, LogError> {
        let mut log = RaftLog {
            dir: self.dir,
            path: self.path,
            file: self.file,
            gen: self.gen,
            len: 0,
            size: self.size,
            base_len: 0,
            ahead: self.ahead,
            used: Arc::default(),
        };
        log.write_base(disk)?;
        if self.legacy {
            log.file.set_len(0).map_err(io("truncate", &log.path))?;
            log.file.sync_data().map_err(io("sync", &log.path))?;
            log.size = 0;
        }
        log.make_ready();
        Ok(log)
    }
}

/// `m` with its length before it, straight into `w` (one copy of a snapshot's bytes, not
/// three).
fn put_pb(w: &mut Vec<u8>, m: &impl nsqlab_core::replica::protobuf::Message) {
    let at = w.len();
    w.extend_from_slice(&[0; 4]);
    if m.write_to_vec(w).is_err() {
        // Only a message missing a required field fails; raft's have none. Written empty,
        // it reads back as the default.
        w.truncate(at + 4);
    }
    let n = (w.len() - at - 4) as u32;
    w[at..at + 4].copy_from_slice(&n.to_le_bytes());
}

/// One record of `p`: its length and CRC, then its body.
fn encode(gen: u64, p: &Persist) -> Vec<u8> {
    encode_parts(gen, p.snapshot.as_ref(), &p.entries, p.hard_state.as_ref())
}

fn encode_parts(
    gen: u64,
    snapshot: Option<&Snapshot>,
    entries: &[Entry],
    hs: Option<&HardState>,
) -> Vec<u8> {
    let size = snapshot.map_or(0, |s| s.data.len() + 64)
        + entries.iter().map(|e| e.data.len() + 32).sum::<usize>()
        + 64;
    // The header's 8 bytes first, filled in once the body is there.
    let mut record = Vec::with_capacity(8 + size);
    record.extend_from_slice(&[0; 8]);
    record.extend_from_slice(&gen.to_le_bytes());
    let flags = record.len();
    record.push(0u8);
    if let Some(s) = snapshot {
        record[flags] |= 1;
        put_pb(&mut record, s);
    }
    if !entries.is_empty() {
        record[flags] |= 2;
        record.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for e in entries {
            put_pb(&mut record, e);
        }
    }
    if let Some(hs) = hs {
        record[flags] |= 4;
        put_pb(&mut record, hs);
    }
    let len = (record.len() - 8) as u32;
    let crc = crc32c::crc32c(&record[8..]);
    record[..4].copy_from_slice(&len.to_le_bytes());
    record[4..8].copy_from_slice(&crc.to_le_bytes());
    record
}

/// Which records a read takes.
#[derive(Debug, Clone, Copy)]
enum Layout {
    /// Of this generation only.
    Gen(u64),
    /// Of any generation (a base).
    Any,
    /// An earlier build's: no generation in the body.
    Legacy,
}

/// The record at the front of `b` (its generation and what it holds) and its length; `None`
/// at the end of the log (nothing more; a record cut short, failing its CRC, or of another
/// generation). A record whose CRC holds but which does not parse is `Some(Err)`: not a
/// torn write, a bug.
#[allow(clippy::type_complexity)]
fn next_record(b: &[u8], layout: Layout) -> Option<(Result<(u64, Persist), String>, usize)> {
    let len = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    // A body has at least its flags: zeros are space a crash left unwritten, or made ready.
    if len == 0 {
        return None;
    }
    let crc = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?);
    let body = b.get(8..8usize.checked_add(len)?)?;
    if crc32c::crc32c(body) != crc {
        return None;
    }
    let (gen, body) = match layout {
        Layout::Legacy => (0, body),
        Layout::Gen(_) | Layout::Any => {
            let (g, rest) = body.split_at_checked(8)?;
            (u64::from_le_bytes(g.try_into().expect("8 bytes")), rest)
        }
    };
    if matches!(layout, Layout::Gen(g) if g != gen) {
        return None;
    }
    Some((decode(body).map(|p| (gen, p)), 8 + len))
}

/// Whether the bad record at the front of `b` says it is of the generation read (a write of
/// this generation cut short, rather than what an earlier one left).
fn claims(b: &[u8], layout: Layout) -> bool {
    match layout {
        Layout::Gen(g) => b.get(8..16) == Some(&g.to_le_bytes()[..]),
        Layout::Any | Layout::Legacy => b.iter().any(|&x| x != 0),
    }
}

/// Whether a whole record (of the generation read) follows the bad one at the front of `b`
/// (found by its length).
fn whole_record_after(b: &[u8], layout: Layout) -> bool {
    let Some(len) = b
        .get(..4)
        .map(|l| u32::from_le_bytes(l.try_into().expect("4 bytes")))
    else {
        return false;
    };
    let next = 8usize.saturating_add(len as usize);
    next < b.len() && matches!(next_record(&b[next..], layout), Some((Ok(_), _)))
}

fn decode(body: &[u8]) -> Result<Persist, String> {
    let mut r = body;
    let mut take = |n: usize| -> Result<&[u8], String> {
        if r.len() < n {
            return Err("cut short".into());
        }
        let (a, b) = r.split_at(n);
        r = b;
        Ok(a)
    };
    let flags = take(1)?[0];
    let mut p = Persist::default();
    let u32_of = |b: &[u8]| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize;
    if flags & 1 != 0 {
        let n = u32_of(take(4)?);
        p.snapshot = Some(Snapshot::parse_from_bytes(take(n)?).map_err(|e| e.to_string())?);
    }
    if flags & 2 != 0 {
        let count = u32_of(take(4)?);
        for _ in 0..count {
            let n = u32_of(take(4)?);
            p.entries
                .push(Entry::parse_from_bytes(take(n)?).map_err(|e| e.to_string())?);
        }
    }
    if flags & 4 != 0 {
        let n = u32_of(take(4)?);
        p.hard_state = Some(HardState::parse_from_bytes(take(n)?).map_err(|e| e.to_string())?);
    }
    if !r.is_empty() || flags & !7 != 0 {
        return Err("bytes left over".into());
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a test makes ready ahead (small: the zeros past the records are in every file).
    const AHEAD: u64 = 4096;

    fn entry(index: u64, term: u64, data: &str) -> Entry {
        Entry {
            index,
            term,
            data: data.as_bytes().to_vec().into(),
            ..Entry::default()
        }
    }

    /// A run of what a node persists: the bootstrap snapshot, entries (some replaced by a
    /// new leader's), votes and commits.
    fn persists() -> Vec<Persist> {
        let boot = Disk::bootstrap(&[1, 2, 3]);
        let hs = |term, vote, commit| HardState {
            term,
            vote,
            commit,
            ..HardState::default()
        };
        vec![
            Persist {
                snapshot: Some(boot.snapshot.clone()),
                hard_state: Some(boot.hard_state.clone()),
                ..Persist::default()
            },
            Persist {
                entries: vec![entry(2, 2, ""), entry(3, 2, "a")],
                hard_state: Some(hs(2, 1, 1)),
                ..Persist::default()
            },
            Persist {
                entries: vec![entry(4, 2, "b"), entry(5, 2, "c")],
                ..Persist::default()
            },
            Persist {
                hard_state: Some(hs(2, 1, 4)),
                ..Persist::default()
            },
            // A new leader replaces entry 5 on.
            Persist {
                entries: vec![entry(5, 3, "C"), entry(6, 3, "d")],
                hard_state: Some(hs(3, 2, 6)),
                ..Persist::default()
            },
        ]
    }

    fn applied(ps: &[Persist]) -> Disk {
        let mut d = Disk::default();
        for p in ps {
            d.apply(p);
        }
        d
    }

    /// Open the log in `dir` and start it on what it holds.
    fn started(dir: &Path) -> (RaftLog, Disk) {
        let (opened, disk) = RaftLog::open(dir, AHEAD).expect("opens");
        (opened.start(&disk).expect("starts"), disk)
    }

    fn read_back(dir: &Path) -> Disk {
        RaftLog::open(dir, AHEAD).expect("opens").1
    }

    /// A new log started empty with `ps` appended; where each record ends in `raft.log`.
    fn written(dir: &Path, ps: &[Persist]) -> Vec<usize> {
        let (mut log, disk) = started(dir);
        assert!(disk.is_empty());
        let base = log.len();
        let mut ends = Vec::new();
        for p in ps {
            log.append(p).expect("appends");
            ends.push((log.len() - base) as usize);
        }
        log.sync().expect("syncs");
        ends
    }

    #[test]
    fn what_was_appended_and_synced_is_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ps = persists();
        written(dir.path(), &ps);
        let disk = read_back(dir.path());
        assert_eq!(disk, applied(&ps));
        assert_eq!(disk.entries.last().map(|e| e.term), Some(3));
        assert_eq!(disk.entries.len(), 5);
    }

    #[test]
    fn a_log_cut_anywhere_gives_back_its_whole_records_and_takes_more() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ps = persists();
        let ends = written(dir.path(), &ps);
        let path = dir.path().join(FILE_NAME);
        let base = dir.path().join(BASE_NAME);
        let whole = std::fs::read(&path).expect("reads");
        let whole_base = std::fs::read(&base).expect("reads");
        assert!(whole.len() as u64 >= AHEAD, "made ready: {}", whole.len());
        for cut in 0..=whole.len() {
            // Cut, and (past the cut) garbage where a write did not finish.
            let mut torn = whole[..cut].to_vec();
            if cut < whole.len() {
                torn.extend(std::iter::repeat_n(0xA5, (whole.len() - cut).min(7)));
            }
            // A file system may leave zeros where a crash cut its blocks short.
            if cut % 3 == 0 {
                torn.extend([0u8; 16]);
            }
            std::fs::write(&path, &torn).expect("writes");
            std::fs::write(&base, &whole_base).expect("writes");
            let (mut log, disk) = started(dir.path());
            let kept = ends.iter().filter(|&&e| e <= cut).count();
            assert_eq!(disk, applied(&ps[..kept]), "cut at {cut}");
            // What is appended next is read back after what was kept (and nothing the cut
            // left further on).
            log.append(&ps[ps.len() - 1]).expect("appends");
            drop(log);
            let mut want = ps[..kept].to_vec();
            want.push(ps[ps.len() - 1].clone());
            assert_eq!(
                read_back(dir.path()),
                applied(&want),
                "cut at {cut}, then appended"
            );
        }
    }

    #[test]
    fn a_bad_last_record_is_a_torn_write_a_bad_one_in_the_middle_stops_the_node() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ps = persists();
        let ends = written(dir.path(), &ps);
        let path = dir.path().join(FILE_NAME);
        let whole = std::fs::read(&path).expect("reads");
        // A bit flipped in the last record: a write cut short; the others are kept.
        let mut bad = whole.clone();
        bad[ends[3] + 20] ^= 0x10;
        std::fs::write(&path, &bad).expect("writes");
        assert_eq!(read_back(dir.path()), applied(&ps[..4]));
        // In the third, with whole records after it: the disk went bad, and the node does not
        // start on a log that forgot entries it may have acknowledged.
        let mut bad = whole.clone();
        bad[ends[1] + 20] ^= 0x10;
        std::fs::write(&path, &bad).expect("writes");
        match RaftLog::open(dir.path(), AHEAD) {
            Err(LogError::Corrupt { reason, .. }) => {
                assert!(reason.contains("whole records follow"), "{reason}")
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a log with a bad record in the middle opened"),
        }
        assert_eq!(std::fs::read(&path).expect("reads"), bad, "left as it was");
    }

    #[test]
    fn a_rewrite_keeps_the_disk_in_its_base() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ps = persists();
        let (mut log, _) = started(dir.path());
        for p in &ps {
            log.append(p).expect("appends");
        }
        let disk = applied(&ps);
        log.rewrite(&disk).expect("rewrites");
        assert_eq!(
            log.len(),
            std::fs::metadata(dir.path().join(BASE_NAME))
                .expect("a base")
                .len()
        );
        log.append(&Persist {
            entries: vec![entry(7, 3, "e")],
            ..Persist::default()
        })
        .expect("appends after");
        log.sync().expect("syncs");
        drop(log);
        let mut want = disk;
        want.entries.push(entry(7, 3, "e"));
        assert_eq!(read_back(dir.path()), want);
        assert!(!dir.path().join("raft.base.tmp").exists());
    }

    /// A compaction's generation is written over the last one's records in `raft.log` (the
    /// file is not replaced): whatever the last one left past the new records — more of
    /// them, or a record a crash tore — is never read back.
    #[test]
    fn a_new_generation_is_written_over_the_last_and_never_reads_what_it_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE_NAME);
        let ps = persists();
        let (mut log, _) = started(dir.path());
        // A long generation: the same records many times over, past what was made ready.
        for _ in 0..25 {
            for p in &ps {
                log.append(p).expect("appends");
            }
        }
        log.sync().expect("syncs");
        let size = std::fs::metadata(&path).expect("a log").len();
        assert!(size > AHEAD + AHEAD / 8, "{size}");
        // The next generation, based on the first three; nothing appended yet (a crash
        // now): the base alone is read back.
        let base = applied(&ps[..3]);
        log.rewrite(&base).expect("rewrites");
        assert_eq!(read_back(dir.path()), base);
        assert_eq!(
            std::fs::metadata(&path).expect("a log").len(),
            size,
            "written over, not replaced (nor cut back: under twice what is made ready)"
        );
        // Two records over the old ones: the rest of the old generation is not read.
        log.append(&ps[3]).expect("appends");
        log.append(&ps[4]).expect("appends");
        log.sync().expect("syncs");
        assert_eq!(read_back(dir.path()), applied(&ps));
        // The second torn by a crash, old whole records after it: a torn write, not a
        // corrupt log.
        let mut bytes = std::fs::read(&path).expect("reads");
        let first = encode(log.gen, &ps[3]).len();
        bytes[first + 20] ^= 0x10;
        std::fs::write(&path, &bytes).expect("writes");
        drop(log);
        let (mut log, disk) = started(dir.path());
        assert_eq!(disk, applied(&ps[..4]));
        // Started again (a generation of its own): a record shorter than the torn one, and
        // nothing of it, or of the generations before, is read.
        let short = Persist {
            hard_state: Some(HardState {
                term: 3,
                vote: 2,
                commit: 5,
                ..HardState::default()
            }),
            ..Persist::default()
        };
        log.append(&short).expect("appends");
        log.sync().expect("syncs");
        drop(log);
        let mut want = ps[..4].to_vec();
        want.push(short);
        assert_eq!(read_back(dir.path()), applied(&want));
    }

    #[test]
    fn the_log_is_made_ready_ahead_and_cut_back_once_a_backlog_is_drained() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE_NAME);
        let size = || std::fs::metadata(&path).expect("a log").len();
        let (mut log, _) = started(dir.path());
        let ready = AHEAD + AHEAD / 8;
        assert_eq!(size(), ready, "made ready for a generation");
        let bytes = std::fs::read(&path).expect("reads");
        assert!(bytes.iter().all(|&b| b == 0), "with zeros");
        // A large generation (a backlog), then a small base (drained): cut back.
        let big = Persist {
            entries: vec![entry(2, 2, &"x".repeat(8 * AHEAD as usize))],
            ..Persist::default()
        };
        log.append(&big).expect("appends");
        assert!(size() > 8 * AHEAD);
        log.rewrite(&Disk::bootstrap(&[1, 2, 3])).expect("rewrites");
        assert_eq!(size(), ready);
        // A base larger than `ahead`: ready for as much as it.
        let mut disk = Disk::bootstrap(&[1, 2, 3]);
        disk.apply(&big);
        log.rewrite(&disk).expect("rewrites");
        assert!(
            size() >= log.len() + log.len() / 8,
            "{} {}",
            size(),
            log.len()
        );
    }

    /// An earlier build kept everything in `raft.log` (records without a generation, the
    /// first holding a snapshot) and wrote no `raft.base`.
    #[test]
    fn an_earlier_builds_log_is_read_and_started_as_a_generation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(FILE_NAME);
        let ps = persists();
        let mut old = Vec::new();
        for p in &ps {
            // The same record without its generation, its CRC made again.
            let r = encode(0, p);
            let body: Vec<u8> = r[16..].to_vec();
            old.extend_from_slice(&(body.len() as u32).to_le_bytes());
            old.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
            old.extend_from_slice(&body);
        }
        // Cut short in its last record, as a crash leaves it.
        old.truncate(old.len() - 3);
        std::fs::write(&path, &old).expect("writes");
        let (log, disk) = started(dir.path());
        assert_eq!(disk, applied(&ps[..4]));
        assert!(dir.path().join(BASE_NAME).exists());
        let bytes = std::fs::read(&path).expect("reads");
        assert!(bytes.iter().all(|&b| b == 0), "emptied, then made ready");
        drop(log);
        assert_eq!(read_back(dir.path()), applied(&ps[..4]));
    }
}
