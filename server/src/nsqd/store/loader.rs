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
use super::record::{checksum_mismatch, intact_all, Found, ReadAhead, Spare};
use super::StoreError;
use nsqlab_core::{LoadedRun, MessageId, Name};
use rustc_hash::FxHashMap;
use std::fs::File;
use std::path::Path;
use std::sync::{mpsc, Arc};

/// Bodies of one channel's messages to read from one segment, in ID order: each message
/// with the index entry at or before it (its record is looked for from there on, or from the
/// last load).
pub(super) struct Job {
    pub at: Where,
    pub topic: Name,
    pub channel: Name,
    pub reqs: Vec<(MessageId, Entry)>,
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

/// Bodies read back (or why each could not be), for `Broker::handle_loaded`.
pub type Loaded = LoadedRun<StoreError>;

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
                    Msg::Load(jobs) => done(load(&mut ahead, &spare, jobs)),
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

/// Read a batch of jobs: each record found, then their checks (three at a time), in order;
/// a job's bodies come back as one run.
fn load(ahead: &mut FxHashMap<u64, ReadAhead>, spare: &Spare, jobs: Vec<Job>) -> Vec<Loaded> {
    let mut found = Vec::with_capacity(jobs.len());
    for Job {
        at,
        topic,
        channel,
        reqs,
    } in jobs
    {
        let ahead = ahead
            .entry(at.topic)
            .or_insert_with(|| ReadAhead::sharing(spare));
        let bodies: Vec<_> = reqs
            .into_iter()
            .map(|(id, e)| (id, find(ahead, &at, &topic, id, e)))
            .collect();
        found.push((at, topic, channel, bodies));
    }
    let mut intact = intact_all(
        found
            .iter()
            .flat_map(|(_, _, _, bodies)| bodies.iter().filter_map(|(_, f)| f.as_ref().ok())),
    )
    .into_iter();
    found
        .into_iter()
        .map(|(at, topic, channel, bodies)| {
            let bodies = bodies
                .into_iter()
                .map(|(id, f)| {
                    let body = f.and_then(|f| match intact.next() {
                        Some(true) => Ok(f.body),
                        _ => {
                            if let Some(a) = ahead.get_mut(&at.topic) {
                                a.lose_place();
                            }
                            Err(StoreError::io("read", &at.files.path, checksum_mismatch()))
                        }
                    });
                    (id, body)
                })
                .collect();
            Loaded {
                topic,
                channel,
                bodies,
            }
        })
        .collect()
}

fn find(
    ahead: &mut ReadAhead,
    at: &Where,
    topic: &Name,
    id: MessageId,
    entry: Entry,
) -> Result<Found, StoreError> {
    let from = ahead
        .resume(at.seg, entry.id, id.0)
        .unwrap_or(u64::from(entry.off));
    let exact = entry.id == id.0;
    let files = (&*at.files.file, at.files.direct.as_deref());
    match ahead.find_unchecked(files, at.seg, at.salt, from, at.end, id, exact) {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(StoreError::NotStored {
            topic: topic.clone(),
            id,
        }),
        Err(e) => Err(StoreError::io("read", &at.files.path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::{new_segment, put_pub, Salt, Seal};
    use super::*;
    use nsqlab_core::{Message, MessageId};

    fn body(id: u64) -> Vec<u8> {
        vec![id as u8; 150 + id as usize * 7]
    }

    /// Records are checked three at a time: a bad one in any place of three (or left over
    /// at the end, or in a batch's next job) is an error, and only it.
    #[test]
    fn a_record_whose_check_fails_is_an_error_and_the_rest_load() {
        let salt = Salt::random();
        let mut b = new_segment(salt, MessageId(0));
        let mut offs = Vec::new();
        for id in 1..=10u64 {
            offs.push(b.len());
            let msg = Message::new(MessageId(id), 0, body(id).into());
            put_pub(&mut b, Seal { salt, base: 0 }, false, None, &msg);
        }
        let bad = [2u64, 6, 7, 10];
        for id in bad {
            // A byte of the body (after the header and the message's fields).
            b[offs[id as usize - 1] + 40] ^= 0x20;
        }
        let path = crate::common::test_file("loadcheck");
        std::fs::write(&path, &b).unwrap();
        let files = Files {
            file: Arc::new(File::open(&path).unwrap()),
            direct: None,
            path: path.to_path_buf().into(),
        };
        let req = |id: u64| {
            let entry = Entry {
                id,
                seg: 0,
                off: offs[id as usize - 1] as u32,
            };
            (MessageId(id), entry)
        };
        let job = |ids: std::ops::RangeInclusive<u64>| Job {
            at: Where {
                topic: 1,
                seg: 0,
                salt,
                files: files.clone(),
                end: b.len() as u64,
            },
            topic: "t".into(),
            channel: "c".into(),
            reqs: ids.map(req).collect(),
        };
        for jobs in [vec![job(1..=10)], vec![job(1..=4), job(5..=10)]] {
            let runs = jobs.len();
            let got = load(&mut FxHashMap::default(), &Spare::default(), jobs);
            assert_eq!(got.len(), runs, "a run per job");
            let got: Vec<_> = got.iter().flat_map(|run| &run.bodies).collect();
            assert_eq!(got.len(), 10);
            for ((got_id, read), id) in got.into_iter().zip(1u64..) {
                assert_eq!(*got_id, MessageId(id));
                if bad.contains(&id) {
                    let e = read.as_ref().expect_err("a bad record");
                    assert!(e.to_string().contains("record checksum mismatch"), "{e}");
                } else {
                    let got = read.as_ref().expect("an intact record");
                    assert_eq!(&got[..], &body(id)[..], "message {id}");
                }
            }
        }
        let _ = std::fs::remove_file(&path);
    }
}
