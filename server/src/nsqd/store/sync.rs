//! The sync thread: `fdatasync`s written segments, syncs directories and small files, deletes
//! finished segments and directories, and keeps the page cache in bounds (see [`super::cache`]).

use super::cache::PageCache;
use super::sys::{fsync, give_back_reserved, remove_in, sync_dir, sync_dir_fd, sync_file};
use super::Tail;
use std::fs::{self, File};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

pub(super) enum SyncMsg {
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

/// Tell the sync thread that `tail` was written to, unless it already knows.
pub(super) fn mark_dirty(sync: &mpsc::Sender<SyncMsg>, tail: Option<&Arc<Tail>>) {
    let Some(tail) = tail else { return };
    if !tail.queued.swap(true, Ordering::AcqRel) {
        let _ = sync.send(SyncMsg::Dirty(tail.clone()));
    }
}

/// What the sync thread owes the disk.
#[derive(Default)]
pub(super) struct SyncThread {
    pub(super) dirty: Vec<Arc<Tail>>,
    pub(super) dirs: Vec<PathBuf>,
    pub(super) files: Vec<PathBuf>,
    pub(super) cache: PageCache,
}

/// What a message asks of the sync thread.
#[derive(PartialEq)]
pub(super) enum Step {
    Wait,
    Sync,
    Stop,
}

impl SyncThread {
    pub(super) fn handle(&mut self, msg: SyncMsg) -> Step {
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
            SyncMsg::RemoveSegment(dir, path) => {
                remove_in(&dir, &path);
                // Made durable before the next (later) segment goes: a power loss that kept
                // a later deletion but lost this one would bring back messages whose FINs
                // went with the later segment. (Once per finished segment.)
                sync_dir_fd(&dir, &path);
            }
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
    pub(super) fn sync(&mut self) {
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
            if let Err(e) = fsync(&f.file) {
                tracing::error!("storage: fsync failed: {e}");
            }
        }
    }
}

pub(super) fn spawn_sync_thread(
    rx: mpsc::Receiver<SyncMsg>,
    every: Duration,
) -> std::thread::JoinHandle<()> {
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
