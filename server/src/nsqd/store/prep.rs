//! The preparation thread: the next segment of a topic is made, and its blocks reserved,
//! ahead of the roll that needs it.

use super::seg_path;
use super::sys::{create_in, reserve};
use super::TopicStore;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};

/// A segment made ahead, its blocks reserved: the tail's writes then skip ext4's delayed
/// allocation (a good part of what a group commit's `write` cost) and a roll neither creates
/// a file nor allocates on the broker thread.
///
/// Asked for when the tail is half full, made by the `nsqlab-prep` thread (`openat` in the
/// topic's open directory, `O_EXCL`, then `fallocate` with `KEEP_SIZE`: the size stays 0, so
/// recovery sees an empty segment) and taken by the roll; a roll that finds it not ready
/// makes its segment itself, without a reservation. Not on the broker thread, nor in the
/// tail: a `fallocate` holds the file's inode lock, which the tail's writes need, and on a
/// busy disk it can take hundreds of milliseconds (it reads block bitmaps behind the queued
/// writes), stopping every publisher of the partition for that long. The sync thread gives back what a full segment did not use
/// (`give_back_reserved`), a clean stop deletes an unused one.
#[derive(Debug, Default, Clone)]
pub(super) struct Prepared(pub(super) Arc<std::sync::Mutex<Option<(u64, File)>>>);

impl Prepared {
    /// Free the blocks reserved for a segment made ahead (a full disk needs them more).
    pub(super) fn give_back(&self) {
        if let Some((_, f)) = &*self.0.lock().unwrap_or_else(|e| e.into_inner()) {
            let _ = f.set_len(0);
        }
    }

    /// The segment numbered `num`, if it was made (one made for an earlier roll is dropped).
    pub(super) fn take(&self, num: u64) -> Option<File> {
        let made = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        made.and_then(|(n, f)| (n == num).then_some(f))
    }
}

/// Once the tail is half full (of `max` bytes), ask for the next segment.
pub(super) fn ask_next(ts: &mut TopicStore, max: u64, prep: Option<&mpsc::Sender<Prep>>) {
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
pub(super) const RESERVE_MAX: u64 = 256 << 20;

/// A request to make the next segment.
pub(super) struct Prep {
    pub(super) dir: Arc<File>,
    pub(super) path: PathBuf,
    pub(super) num: u64,
    pub(super) reserve: u64,
    pub(super) slot: Prepared,
}

pub(super) fn spawn_prep_thread(rx: mpsc::Receiver<Prep>) -> std::thread::JoinHandle<()> {
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
