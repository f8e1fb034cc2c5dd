//! A replicated node's disk: raft's snapshot, log and hard state
//! ([`nsqlab_core::replica::Disk`]) in one append-only file, `raft.log` in the data path.
//!
//! Each [`Persist`] the node gives is one record, appended; [`RaftLog::sync`] makes what was
//! appended durable (the node's messages that follow a `Persist` leave only after it). At
//! start the records are applied in order to an empty [`Disk`]; the first record that is cut
//! short or fails its CRC ends the log (a write torn by a crash), and the file is cut back
//! to the records before it, so what comes after is written where it belongs.
//! [`RaftLog::rewrite`] replaces the file by one record of the whole disk (temp file, fsync,
//! rename).
//!
//! # Format
//! All integers little-endian.
//! ```text
//! record = len:u32 crc:u32 body          crc: CRC-32C of body; len: body's length
//! body   = flags:u8
//!          [snapshot]   (flags & 1)      len:u32 protobuf Snapshot
//!          [entries]    (flags & 2)      count:u32 (len:u32 protobuf Entry)*count
//!          [hard state] (flags & 4)      len:u32 protobuf HardState
//! ```

use nsqlab_core::replica::protobuf::Message as _;
use nsqlab_core::replica::raft::eraftpb::{Entry, HardState, Snapshot};
use nsqlab_core::replica::{Disk, Persist};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

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

/// The file's name in the data path.
pub const FILE_NAME: &str = "raft.log";

/// The open log, appending.
pub struct RaftLog {
    path: PathBuf,
    file: File,
    /// Bytes in the file.
    len: u64,
}

fn io(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> LogError {
    let path = path.to_path_buf();
    move |source| LogError::Io { op, path, source }
}

impl RaftLog {
    /// Open (or create) `dir/raft.log`, and what it holds.
    pub fn open(dir: &Path) -> Result<(RaftLog, Disk), LogError> {
        let path = dir.join(FILE_NAME);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(io("open", &path))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(io("read", &path))?;
        let mut disk = Disk::default();
        let mut at = 0;
        while let Some((p, n)) = next_record(&bytes[at..]) {
            let p = p.map_err(|reason| LogError::Corrupt {
                path: path.clone(),
                reason,
            })?;
            disk.apply(&p);
            at += n;
        }
        if at < bytes.len() && whole_record_after(&bytes[at..]) {
            // Not a write cut short: a record in the middle went bad, and raft must not
            // forget entries it may have acknowledged. A person decides (the node can be
            // replaced, its data removed).
            return Err(LogError::Corrupt {
                path,
                reason: format!(
                    "the record at byte {at} fails its check, and whole records follow"
                ),
            });
        }
        if at < bytes.len() {
            tracing::warn!(
                "{}: {} bytes after the last whole record (a write cut short): dropped",
                path.display(),
                bytes.len() - at
            );
            file.set_len(at as u64).map_err(io("truncate", &path))?;
            file.sync_data().map_err(io("sync", &path))?;
        }
        Ok((
            RaftLog {
                path,
                file,
                len: at as u64,
            },
            disk,
        ))
    }

    /// Append `p` (not yet durable: see [`RaftLog::sync`]).
    pub fn append(&mut self, p: &Persist) -> Result<(), LogError> {
        let record = encode(p);
        self.file
            .write_all(&record)
            .map_err(io("write", &self.path))?;
        self.len += record.len() as u64;
        Ok(())
    }

    /// Make everything appended durable.
    pub fn sync(&mut self) -> Result<(), LogError> {
        self.file.sync_data().map_err(io("sync", &self.path))
    }

    /// Bytes in the file.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Replace the file by one record holding `disk` (durably: temp file, fsync, rename,
    /// fsync of the directory).
    pub fn rewrite(&mut self, disk: &Disk) -> Result<(), LogError> {
        let record = encode_parts(Some(&disk.snapshot), &disk.entries, Some(&disk.hard_state));
        let tmp = self.path.with_extension("tmp");
        {
            let mut f = File::create(&tmp).map_err(io("create", &tmp))?;
            f.write_all(&record).map_err(io("write", &tmp))?;
            f.sync_data().map_err(io("sync", &tmp))?;
        }
        std::fs::rename(&tmp, &self.path).map_err(io("rename", &self.path))?;
        if let Some(dir) = self.path.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io("sync", dir))?;
        }
        self.file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(io("open", &self.path))?;
        self.len = record.len() as u64;
        Ok(())
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
fn encode(p: &Persist) -> Vec<u8> {
    encode_parts(p.snapshot.as_ref(), &p.entries, p.hard_state.as_ref())
}

fn encode_parts(snapshot: Option<&Snapshot>, entries: &[Entry], hs: Option<&HardState>) -> Vec<u8> {
    let size = snapshot.map_or(0, |s| s.data.len() + 64)
        + entries.iter().map(|e| e.data.len() + 32).sum::<usize>()
        + 64;
    // The header's 8 bytes first, filled in once the body is there.
    let mut record = Vec::with_capacity(8 + size);
    record.extend_from_slice(&[0; 8]);
    record.push(0u8);
    if let Some(s) = snapshot {
        record[8] |= 1;
        put_pb(&mut record, s);
    }
    if !entries.is_empty() {
        record[8] |= 2;
        record.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for e in entries {
            put_pb(&mut record, e);
        }
    }
    if let Some(hs) = hs {
        record[8] |= 4;
        put_pb(&mut record, hs);
    }
    let len = (record.len() - 8) as u32;
    let crc = crc32c::crc32c(&record[8..]);
    record[..4].copy_from_slice(&len.to_le_bytes());
    record[4..8].copy_from_slice(&crc.to_le_bytes());
    record
}

/// The record at the front of `b` and its length; `None` at the end of the log (nothing
/// more, or a record cut short or failing its CRC). A record whose CRC holds but which does
/// not parse is `Some(Err)`: not a torn write, a bug.
fn next_record(b: &[u8]) -> Option<(Result<Persist, String>, usize)> {
    let len = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
    // A body has at least its flags: zeros are space a crash left unwritten.
    if len == 0 {
        return None;
    }
    let crc = u32::from_le_bytes(b.get(4..8)?.try_into().ok()?);
    let body = b.get(8..8usize.checked_add(len)?)?;
    if crc32c::crc32c(body) != crc {
        return None;
    }
    Some((decode(body), 8 + len))
}

/// Whether a whole record follows the bad one at the front of `b` (read by its length).
fn whole_record_after(b: &[u8]) -> bool {
    let Some(len) = b
        .get(..4)
        .map(|l| u32::from_le_bytes(l.try_into().expect("4 bytes")))
    else {
        return false;
    };
    let next = 8usize.saturating_add(len as usize);
    next < b.len() && matches!(next_record(&b[next..]), Some((Ok(_), _)))
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

    #[test]
    fn what_was_appended_and_synced_is_read_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ps = persists();
        {
            let (mut log, disk) = RaftLog::open(dir.path()).expect("opens");
            assert!(disk.is_empty());
            for p in &ps {
                log.append(p).expect("appends");
            }
            log.sync().expect("syncs");
        }
        let (_, disk) = RaftLog::open(dir.path()).expect("opens again");
        assert_eq!(disk, applied(&ps));
        assert_eq!(disk.entries.last().map(|e| e.term), Some(3));
        assert_eq!(disk.entries.len(), 5);
    }

    #[test]
    fn a_log_cut_anywhere_gives_back_its_whole_records_and_takes_more() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ps = persists();
        let mut ends = Vec::new();
        {
            let (mut log, _) = RaftLog::open(dir.path()).expect("opens");
            for p in &ps {
                log.append(p).expect("appends");
                ends.push(log.len());
            }
        }
        let path = dir.path().join(FILE_NAME);
        let whole = std::fs::read(&path).expect("reads");
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
            let (mut log, disk) = RaftLog::open(dir.path()).expect("opens a torn log");
            let kept = ends.iter().filter(|&&e| e as usize <= cut).count();
            assert_eq!(disk, applied(&ps[..kept]), "cut at {cut}");
            assert_eq!(log.len(), if kept == 0 { 0 } else { ends[kept - 1] });
            // What is appended next is read back after what was kept.
            log.append(&ps[ps.len() - 1]).expect("appends");
            drop(log);
            let (_, again) = RaftLog::open(dir.path()).expect("opens");
            let mut want = ps[..kept].to_vec();
            want.push(ps[ps.len() - 1].clone());
            assert_eq!(again, applied(&want), "cut at {cut}, then appended");
        }
    }

    #[test]
    fn a_bad_last_record_is_a_torn_write_a_bad_one_in_the_middle_stops_the_node() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ps = persists();
        let mut ends = Vec::new();
        {
            let (mut log, _) = RaftLog::open(dir.path()).expect("opens");
            for p in &ps {
                log.append(p).expect("appends");
                ends.push(log.len() as usize);
            }
        }
        let path = dir.path().join(FILE_NAME);
        let whole = std::fs::read(&path).expect("reads");
        // A bit flipped in the last record: a write cut short; the others are kept.
        let mut bad = whole.clone();
        bad[ends[3] + 10] ^= 0x10;
        std::fs::write(&path, &bad).expect("writes");
        let (_, disk) = RaftLog::open(dir.path()).expect("opens");
        assert_eq!(disk, applied(&ps[..4]));
        // In the third, with whole records after it: the disk went bad, and the node does not
        // start on a log that forgot entries it may have acknowledged.
        let mut bad = whole.clone();
        bad[ends[1] + 10] ^= 0x10;
        std::fs::write(&path, &bad).expect("writes");
        match RaftLog::open(dir.path()) {
            Err(LogError::Corrupt { reason, .. }) => {
                assert!(reason.contains("whole records follow"), "{reason}")
            }
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("a log with a bad record in the middle opened"),
        }
        assert_eq!(std::fs::read(&path).expect("reads"), bad, "left as it was");
    }

    #[test]
    fn a_rewrite_keeps_the_disk_in_one_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ps = persists();
        let (mut log, _) = RaftLog::open(dir.path()).expect("opens");
        for p in &ps {
            log.append(p).expect("appends");
        }
        let before = log.len();
        let disk = applied(&ps);
        log.rewrite(&disk).expect("rewrites");
        assert!(log.len() < before, "{} < {before}", log.len());
        log.append(&Persist {
            entries: vec![entry(7, 3, "e")],
            ..Persist::default()
        })
        .expect("appends after");
        log.sync().expect("syncs");
        drop(log);
        let (_, back) = RaftLog::open(dir.path()).expect("opens");
        let mut want = disk;
        want.entries.push(entry(7, 3, "e"));
        assert_eq!(back, want);
        assert!(!dir.path().join("raft.tmp").exists());
    }
}
