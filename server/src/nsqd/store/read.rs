//! Reading evicted bodies back: where each record is, for the loader thread (see [`super::loader`]).

use super::error::{io_err, StoreError};
use super::index::Entry;
use super::sys::{no_read_ahead, open_direct};
use super::{loader, seg_path, Loaded};
use super::{Store, TopicStore};
use nsqlab_core::{LoadRequest, Name};
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
    pub fn request_loads(&mut self, reqs: impl IntoIterator<Item = LoadRequest>) -> Vec<Loaded> {
        let mut jobs: Vec<loader::Job> = Vec::new();
        let mut failed = Vec::new();
        // The topic store of the last request: a consumer's loads come in runs of one topic.
        let mut cur: Option<(Name, &mut TopicStore)> = None;
        for req in reqs {
            if !cur
                .as_ref()
                .is_some_and(|(t, _)| Arc::ptr_eq(t, &req.topic))
            {
                cur = self
                    .topics
                    .get_mut(&req.topic)
                    .map(|ts| (req.topic.clone(), ts));
            }
            let Some((_, ts)) = cur.as_mut() else {
                let body = Err(StoreError::NoStorage(req.topic.clone()));
                failed.push(Loaded { req, body });
                continue;
            };
            let entry = match entry(ts, &req) {
                Ok(e) => e,
                Err(body) => {
                    failed.push(Loaded {
                        req,
                        body: Err(body),
                    });
                    continue;
                }
            };
            if let Some(job) = jobs.last_mut() {
                let (last, _) = job.reqs.last().expect("a job asks for one body at least");
                if Arc::ptr_eq(&last.topic, &req.topic)
                    && job.at.seg == u64::from(entry.seg)
                    && last.id < req.id
                {
                    job.reqs.push((req, entry));
                    continue;
                }
            }
            match locate(ts, &req, entry) {
                Ok(at) => jobs.push(loader::Job {
                    at,
                    reqs: vec![(req, entry)],
                }),
                Err(e) => failed.push(Loaded { req, body: Err(e) }),
            }
        }
        if !jobs.is_empty() {
            let sent = match &self.loader {
                Some(l) => l.send(loader::Msg::Load(jobs)).map_err(|e| e.0),
                None => Err(loader::Msg::Load(jobs)),
            };
            if let Err(loader::Msg::Load(jobs)) = sent {
                failed.extend(
                    jobs.into_iter()
                        .flat_map(|j| j.reqs)
                        .map(|(req, _)| Loaded {
                            req,
                            body: Err(StoreError::Closed),
                        }),
                );
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

/// The index entry at or before message `req.id` of topic store `ts`: its segment is read
/// forward from there, or from the last load when that lies between.
fn entry(ts: &mut TopicStore, req: &LoadRequest) -> Result<Entry, StoreError> {
    ts.index
        .locate(req.id.0)
        .ok_or_else(|| StoreError::NotStored {
            topic: req.topic.clone(),
            id: req.id,
        })
}

/// The segment `at` is in: its file (opened now if not yet), salt and written length.
fn locate(ts: &mut TopicStore, req: &LoadRequest, at: Entry) -> Result<loader::Where, StoreError> {
    let i = ts
        .segment_pos(u64::from(at.seg))
        .ok_or_else(|| StoreError::SegmentGone {
            topic: req.topic.clone(),
            id: req.id,
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
}
