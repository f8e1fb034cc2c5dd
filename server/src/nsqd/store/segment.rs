//! A topic's segments: rolling to the next, compacting a log whose front is finished,
//! rewriting records set aside, and making a topic's files again after they were lost.

use super::error::{io_err, StoreError};
use super::prep::Prepared;
use super::sync::SyncMsg;
use super::sys::{fsync, sync_dir, write_atomic_io};
use super::write::{write_meta, write_pending, Wrote};
use super::{record, seg_path};
use super::{Segment, Tail, TopicStore};
use nsqlab_core::{MessageId, Name};
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};

/// A topic whose files were removed while open (by hand: `rm -rf` of the data path) is made
/// again: its directory, its metadata, the segments that still hold owed messages, and a
/// new segment after the last one.
///
/// A removed file lives on while a descriptor is open on it: each segment still owing
/// messages is copied back, byte for byte under its own name (so the index and the copy
/// counts stay true), through the tail's descriptor or one a load opened. One with no open
/// descriptor (a topic idle long enough to have its files closed) is gone: its messages stay
/// with the broker and are delivered, but a restart before they are finished loses them.
pub(super) fn make_again(topic: &Name, ts: &mut TopicStore) -> Result<(), StoreError> {
    fs::create_dir_all(&ts.dir).map_err(|e| io_err("create", &ts.dir, e))?;
    write_meta(ts)?;
    ts.meta_dirty = false;
    let (mut saved, mut lost) = (0, 0);
    for i in 0..ts.segments.len() {
        let last = i + 1 == ts.segments.len();
        if ts.segments[i].refs <= 0 && !last {
            continue;
        }
        match salvage(ts, i)? {
            true => saved += 1,
            false if ts.segments[i].refs > 0 => lost += 1,
            false => {}
        }
    }
    let num = ts.segments.back().expect("a segment").num + 1;
    let path = seg_path(&ts.dir, num);
    let (f, salt, len) = create_segment(&path, ts.salt_for(num), MessageId(ts.last_id))?;
    fsync(&f).map_err(|e| io_err("sync", &path, e))?;
    sync_dir(&ts.dir);
    ts.tail = Some(Tail::new(f));
    // Records still buffered were sealed for where they would have lain in the old tail
    // (FINs waiting for company: lost, which only delivers their messages again).
    ts.pending.clear();
    ts.unsealed.clear();
    ts.pending_fins = 0;
    // A next segment made ahead was made in the old directory.
    ts.next = Prepared::default();
    ts.next_asked = false;
    ts.segments
        .push_back(Segment::new(num, ts.last_id, salt, len));
    match lost {
        0 => tracing::error!(
            "TOPIC({topic}): its files were removed while the server ran; made again ({saved} segment(s) still owing messages copied back), new segment {num}"
        ),
        _ => tracing::error!(
            "TOPIC({topic}): its files were removed while the server ran; made again from segment {num}, {saved} segment(s) copied back, {lost} lost (no descriptor open on them): their messages are delivered unless the server restarts first"
        ),
    }
    Ok(())
}

/// Copy segment `i` of `ts`, removed from under the store, back under its own name, from a
/// descriptor still open on it (see [`make_again`]); false when none is.
fn salvage(ts: &mut TopicStore, i: usize) -> Result<bool, StoreError> {
    use std::os::fd::AsRawFd;
    let last = i + 1 == ts.segments.len();
    let s = &ts.segments[i];
    let open = s.reader.as_ref().map(|r| r.file.as_raw_fd()).or_else(|| {
        ts.tail
            .as_ref()
            .filter(|_| last)
            .map(|t| t.file.as_raw_fd())
    });
    // (Opened again through /proc: the tail's descriptor is for appending only.)
    let Some(mut from) = open.and_then(|fd| fs::File::open(format!("/proc/self/fd/{fd}")).ok())
    else {
        return Ok(false);
    };
    let path = seg_path(&ts.dir, s.num);
    let mut to = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&path)
        .map_err(|e| io_err("create", &path, e))?;
    let copied = std::io::copy(&mut std::io::Read::take(&mut from, s.len), &mut to).and_then(|n| {
        match n == s.len {
            true => fsync(&to),
            false => Err(std::io::Error::other(format!(
                "copied {n} of {} bytes",
                s.len
            ))),
        }
    });
    if let Err(e) = copied {
        let _ = fs::remove_file(&path);
        return Err(io_err("write", &path, e));
    }
    // Loads read the copy from now on; appends go to the new tail.
    ts.segments[i].reader = None;
    ts.reads.forget(ts.segments[i].num);
    if last {
        ts.tail = None;
    }
    Ok(true)
}

/// A topic's only segment holds nothing that is owed (every message in it was finished): cut
/// it back to its header and first mark, which frees its blocks at once. `compact` deletes
/// finished segments but never the one being written, so on a disk filled by a segment
/// larger than the free space (the default 100 MiB), consuming everything freed nothing and
/// the store never recovered. The next write appends a mark with the last ID.
pub(super) fn empty_finished_tail(topic: &Name, ts: &mut TopicStore) -> Result<(), StoreError> {
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

/// What a roll wrote, and the old segment's file (if open), path and length.
pub(super) type Rolled = (Wrote, Option<Arc<Tail>>, PathBuf, u64);

/// Start a new segment (writing what is buffered to the old one first). Returns how many
/// messages that wrote and the old segment's file, path and length, for the sync thread.
pub(super) fn roll(ts: &mut TopicStore) -> Result<Rolled, StoreError> {
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
    let salt = ts.salt_for(num);
    ts.segments
        .push_back(Segment::new(num, ts.last_id, salt, 0));
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
pub(super) fn compact(topic: &Name, ts: &mut TopicStore, sync: &mpsc::Sender<SyncMsg>) {
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
pub(super) fn rewrite(
    topic: &Name,
    path: &Path,
    bytes: &[u8],
    scan: &record::Scan,
) -> Result<Vec<u8>, StoreError> {
    let failed = |(what, p, e): (&'static str, PathBuf, std::io::Error)| io_err(what, &p, e);
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

/// Make a new segment at `path`, salted with `salt`, whose messages will have IDs above
/// `mark`: its file header written (not synced), the file open for appending. Returns the
/// file, its salt and length.
pub(super) fn create_segment(
    path: &Path,
    salt: record::Salt,
    mark: MessageId,
) -> Result<(std::fs::File, record::Salt, u64), StoreError> {
    let b = record::new_segment(salt, mark);
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| io_err("create", path, e))?;
    f.write_all(&b).map_err(|e| io_err("write", path, e))?;
    Ok((f, salt, b.len() as u64))
}
