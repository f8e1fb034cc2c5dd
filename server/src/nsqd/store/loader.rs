//! The loader thread: reads evicted bodies (deferred messages coming due, a backlog past
//! `--mem-queue-size`) back from the log, off the broker thread.
//!
//! The broker side knows where a message's record is (the sparse index, a segment's length
//! and open file) and sends a `Job` per run of bodies in one segment; this thread reads
//! them, keeping each topic's last stretch ([`ReadAhead`]) so a consumer draining a backlog
//! costs one `pread` per stretch, and hands the bodies back in order, a batch per batch of
//! jobs. Reading on the
//! broker made every publisher of the partition wait for the disk: with a backlog older than
//! the page cache keeps, a consumer's loads held the broker for 0.5–1 ms in a wake-up out of
//! ten, and up to 19 ms at times, which was every publisher's round trip too.
//!
//! Jobs and `Msg::Forget`s arrive in the order the broker sent them, so what the broker
//! forgets is forgotten before any later job reads. A job holds its segment's file open, so
//! the segment may be deleted meanwhile; only bytes the log had written when the job was
//! made (its `end`) are read.

use super::index::Entry;
use super::record::{ReadAhead, Spare};
use super::StoreError;
use nsqlab_core::{Body, LoadRequest};
use rustc_hash::FxHashMap;
use std::fs::File;
use std::path::Path;
use std::sync::{mpsc, Arc};

/// Bodies to read from one segment, in ID order: each request with the index entry at or
/// before its message (its record is looked for from there on, or from the last load).
pub(super) struct Job {
    pub at: Where,
    pub reqs: Vec<(LoadRequest, Entry)>,
}

/// A segment's files, opened for loads.
#[derive(Debug, Clone)]
pub(super) struct Files {
    pub file: Arc<File>,
    /// The same file opened for direct I/O (`O_DIRECT`), where the file system allows it:
    /// for reading what the page cache no longer holds (see [`ReadAhead`]).
    pub direct: Option<Arc<File>>,
    /// For error texts.
    pub path: Arc<Path>,
}

/// The segment the records of a job are in.
pub(super) struct Where {
    /// Which topic's files (a number per topic store, never reused: a topic made again under
    /// the same name starts from nothing).
    pub topic: u64,
    pub seg: u64,
    pub salt: super::record::Salt,
    pub files: Files,
    /// The segment's length when the job was made (its records are written up to there).
    pub end: u64,
}

pub(super) enum Msg {
    Load(Vec<Job>),
    /// What was read of segment `seg` of a topic goes (it is deleted, or its end cut back);
    /// with `None`, all of the topic's (it is gone).
    Forget {
        topic: u64,
        seg: Option<u64>,
    },
}

/// A body read back (or why it could not be), for `Broker::handle_loaded`.
#[derive(Debug)]
pub struct Loaded {
    pub req: LoadRequest,
    pub body: Result<Body, StoreError>,
}

/// Start the thread; `done` gets each batch's bodies, in the order of its jobs. It ends when
/// the sender is dropped.
pub(super) fn spawn(
    rx: mpsc::Receiver<Msg>,
    mut done: impl FnMut(Vec<Loaded>) + Send + 'static,
) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name("nsqlab-load".into())
        .spawn(move || {
            let mut ahead: FxHashMap<u64, ReadAhead> = FxHashMap::default();
            let spare = Spare::default();
            while let Ok(msg) = rx.recv() {
                match msg {
                    Msg::Load(jobs) => {
                        let mut bodies =
                            Vec::with_capacity(jobs.iter().map(|j| j.reqs.len()).sum());
                        for Job { at, reqs } in jobs {
                            let ahead = ahead
                                .entry(at.topic)
                                .or_insert_with(|| ReadAhead::sharing(&spare));
                            bodies
                                .extend(reqs.into_iter().map(|(req, e)| read(ahead, &at, req, e)));
                        }
                        done(bodies)
                    }
                    Msg::Forget { topic, seg: None } => {
                        ahead.remove(&topic);
                    }
                    Msg::Forget {
                        topic,
                        seg: Some(seg),
                    } => {
                        if let Some(a) = ahead.get_mut(&topic) {
                            a.forget(seg);
                        }
                    }
                }
            }
        })
        .expect("spawn the loader thread")
}

fn read(ahead: &mut ReadAhead, at: &Where, req: LoadRequest, entry: Entry) -> Loaded {
    let id = req.id;
    let from = ahead
        .resume(at.seg, entry.id, id.0)
        .unwrap_or(u64::from(entry.off));
    let exact = entry.id == id.0;
    let files = (&*at.files.file, at.files.direct.as_deref());
    let body = match ahead.find(files, at.seg, at.salt, from, at.end, id, exact) {
        Ok(Some(body)) => Ok(body),
        Ok(None) => Err(StoreError::NotStored {
            topic: req.topic.clone(),
            id,
        }),
        Err(e) => Err(StoreError::io("read", &at.files.path, e)),
    };
    Loaded { req, body }
}
