//! Reading evicted bodies back: where each record is, for the loader thread (see [`super::loader`]).

use super::error::{io_err, StoreError};
use super::index::Entry;
use super::sys::{no_read_ahead, open_direct};
use super::{loader, seg_path, Loaded};
use super::{Store, TopicStore};
use nsqlab_core::{LoadRun, MessageId, Name};
use std::fs::File;
use std::sync::{mpsc, Arc};

/// A topic store's name with the loader thread: what that thread read of a deleted segment
/// (or of a log cut back after a failed write) is forgotten, and all it keeps of the topic
/// when the topic store goes.
#[derive(Debug)]
pub(super) struct Reads {
    pub(super) topic: u64,
    pub(super) loader: Option<mpsc::Sender<loader::Msg>>,
}

impl Reads {
    pub(super) fn forget(&self, seg: u64) {
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

impl Store {
    /// A name with the loader thread for a new topic store.
    pub(super) fn reads(&mut self) -> Reads {
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
    ///
    /// A consumer's loads come in runs through one segment: a run is one job, located once.
    pub fn request_loads(&mut self, runs: impl IntoIterator<Item = LoadRun>) -> Vec<Loaded> {
        let mut jobs: Vec<loader::Job> = Vec::new();
        let mut failed = Vec::new();
        for LoadRun {
            topic,
            channel,
            ids,
        } in runs
        {
            let mut lost = Vec::new();
            match self.topics.get_mut(&topic) {
                None => {
                    let e = StoreError::NoStorage(topic.clone());
                    lost.extend(ids.into_iter().map(|id| (id, Err(e.clone()))));
                }
                Some(ts) => {
                    // This run's jobs start after those of earlier runs.
                    let first_job = jobs.len();
                    let n = ids.len();
                    for (i, id) in ids.into_iter().enumerate() {
                        let entry = match entry(ts, &topic, id) {
                            Ok(e) => e,
                            Err(e) => {
                                lost.push((id, Err(e)));
                                continue;
                            }
                        };
                        if let Some(job) = jobs[first_job..].last_mut() {
                            let (last, _) = job.reqs.last().expect("a job asks for one body");
                            if job.at.seg == u64::from(entry.seg) && *last < id {
                                job.reqs.push((id, entry));
                                continue;
                            }
                        }
                        match locate(ts, &topic, id, entry) {
                            Ok(at) => {
                                // Usually one job holds the whole run; later ones grow as
                                // they go (sizing each for the rest of the run would be
                                // quadratic in a run of many short jobs).
                                let cap = if jobs.len() == first_job { n - i } else { 1 };
                                let mut reqs = Vec::with_capacity(cap);
                                reqs.push((id, entry));
                                jobs.push(loader::Job {
                                    at,
                                    topic: topic.clone(),
                                    channel: channel.clone(),
                                    reqs,
                                });
                            }
                            Err(e) => lost.push((id, Err(e))),
                        }
                    }
                }
            }
            if !lost.is_empty() {
                failed.push(Loaded {
                    topic,
                    channel,
                    bodies: lost,
                });
            }
        }
        if !jobs.is_empty() {
            let sent = match &self.loader {
                Some(l) => l.send(loader::Msg::Load(jobs)).map_err(|e| e.0),
                None => Err(loader::Msg::Load(jobs)),
            };
            if let Err(loader::Msg::Load(jobs)) = sent {
                failed.extend(jobs.into_iter().map(|j| {
                    Loaded {
                        topic: j.topic,
                        channel: j.channel,
                        bodies: j
                            .reqs
                            .into_iter()
                            .map(|(id, _)| (id, Err(StoreError::Closed)))
                            .collect(),
                    }
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
}

/// The index entry at or before message `id` of topic store `ts`: its segment is read
/// forward from there, or from the last load when that lies between.
fn entry(ts: &mut TopicStore, topic: &Name, id: MessageId) -> Result<Entry, StoreError> {
    ts.index.locate(id.0).ok_or_else(|| StoreError::NotStored {
        topic: topic.clone(),
        id,
    })
}

/// The segment `at` is in: its file (opened now if not yet), salt and written length.
fn locate(
    ts: &mut TopicStore,
    topic: &Name,
    id: MessageId,
    at: Entry,
) -> Result<loader::Where, StoreError> {
    let i = ts
        .segment_pos(u64::from(at.seg))
        .ok_or_else(|| StoreError::SegmentGone {
            topic: topic.clone(),
            id,
            seg: at.seg,
        })?;
    let seg = &mut ts.segments[i];
    let files = match &seg.reader {
        Some(f) => f.clone(),
        None => {
            let path = seg_path(&ts.dir, seg.num);
            let file = Arc::new(File::open(&path).map_err(|e| io_err("open", &path, e))?);
            let direct = open_direct(&path).map(Arc::new);
            if direct.is_some() {
                no_read_ahead(&file);
            }
            let files = loader::Files {
                file,
                direct,
                path: path.into(),
            };
            seg.reader = Some(files.clone());
            files
        }
    };
    Ok(loader::Where {
        topic: ts.reads.topic,
        seg: seg.num,
        salt: seg.salt,
        files,
        end: seg.len,
    })
}

#[cfg(test)]
impl Store {
    /// The body of stored message `id` of `topic`, read now (waiting for the loader thread).
    pub(super) fn load(
        &mut self,
        topic: &str,
        id: nsqlab_core::MessageId,
    ) -> Result<nsqlab_core::Body, StoreError> {
        let run = LoadRun {
            topic: topic.into(),
            channel: "c".into(),
            ids: vec![id],
        };
        let one = |mut batch: Vec<Loaded>| {
            assert_eq!(batch.len(), 1);
            let mut run = batch.pop().expect("one run");
            assert_eq!(run.bodies.len(), 1);
            run.bodies.pop().expect("one body").1
        };
        let failed = self.request_loads([run]);
        if !failed.is_empty() {
            return one(failed);
        }
        one(self.loaded.blocking_recv().expect("the loader thread runs"))
    }
}
