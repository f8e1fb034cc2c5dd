//! Opening a store: reading every topic's metadata and log back, repairing what a crash
//! left, and restoring the survivors into the broker.

use super::error::{io_err, is_no_room, StoreError};
use super::prep::Prepared;
use super::segment::rewrite;
use super::sys::{give_back_reserved, write_atomic_io};
use super::write::{add_ref, meta_bytes};
use super::{index, record, seg_path};
use super::{Segment, Store, TopicMeta, TopicStore};
use nsqlab_core::{Broker, MessageId, Name, Replay, StoreOp, Time};
use std::collections::{HashMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

impl Store {
    pub(super) fn recover(
        &mut self,
        broker: &mut Broker,
        now: Time,
    ) -> Result<Recovered, StoreError> {
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
    pub(super) fn recover_topic(
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
        // Files a crash left half made (metadata written through a `.tmp` file): nothing
        // reads them, and on a full disk their blocks are room.
        remove_tmp_files(dir);
        let mut segments = VecDeque::new();
        let mut index = index::Index::default();
        let mut last_id = 0u64;
        let mut max_key: Option<u32> = None;
        // The last segment, when it is empty: made ahead of a roll, or just made, when the
        // crash came (see `empty_tail`).
        let mut empty_tail = None;
        let last_num = nums.last().copied();
        for num in nums {
            let path = seg_path(dir, num);
            let mut bytes = fs::read(&path).map_err(|e| io_err("read", &path, e))?;
            if bytes.is_empty() {
                // Nothing in it, not even its header: the last one becomes the tail as a
                // new segment does (its header is written with the first records, so a
                // full disk does not stop the start); any other is deleted.
                if Some(num) == last_num {
                    empty_tail = Some(num);
                } else {
                    let _ = fs::remove_file(&path);
                }
                continue;
            }
            let mut scan = record::scan_without_bodies(&bytes);
            if let (record::Layout::Unknown, Some(secret)) = (scan.layout, meta.secret) {
                // Both header copies gone: the salt comes from the topic's secret (a segment
                // from before secrets, or another topic's file, yields no record with it).
                let again = record::scan_with_salt(&bytes, record::Salt::of_segment(secret, num));
                if !again.records.is_empty() {
                    tracing::warn!(
                        "TOPIC({topic}): {} lost both copies of its header; its records are read with the salt its topic's metadata keeps",
                        path.display()
                    );
                    scan = again;
                }
            }
            if scan.needs_rewrite() {
                rec.corrupt_ranges += scan.bad.len();
                match rewrite(topic, &path, &bytes, &scan) {
                    Ok(b) => {
                        bytes = b;
                        scan = record::scan_without_bodies(&bytes);
                    }
                    // Out of room: a salted segment is read as it is (its intact records
                    // stay where they are; the next start sets the bad bytes aside).
                    Err(e)
                        if matches!(scan.layout, record::Layout::Salted(_)) && e.is_no_room() =>
                    {
                        tracing::warn!("TOPIC({topic}): {e}; its intact records are kept in place");
                        rec.no_room.get_or_insert(e);
                    }
                    Err(e) => return Err(e),
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
                    record::Record::Fin { key, ids } => {
                        max_key = max_key.max(Some(key));
                        if let Some(channel) = keys.get(&key) {
                            replay.apply(&StoreOp::Finished {
                                topic: topic.clone(),
                                channel: channel.clone(),
                                ids,
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
            segments.push_back(Segment::new(num, mark, salt, len));
        }
        // The tail has its header to come: an empty segment found above, or a new one when
        // there is none (created empty: on a full disk an empty file can still be made).
        let mut pending = Vec::new();
        if empty_tail.is_some() || segments.is_empty() {
            let num = empty_tail.unwrap_or(0);
            let path = seg_path(dir, num);
            if empty_tail.is_none() {
                fs::File::create(&path).map_err(|e| io_err("create", &path, e))?;
            }
            let salt = match meta.secret {
                Some(s) => record::Salt::of_segment(s, num),
                None => record::Salt::random(),
            };
            pending = record::new_segment(salt, MessageId(last_id));
            segments.push_back(Segment::new(num, last_id, salt, 0));
        }
        // Full segments give back blocks still reserved past their end (a crash came before
        // the sync thread did it).
        for s in segments.iter().take(segments.len() - 1) {
            give_back_reserved(&seg_path(dir, s.num), s.len);
        }
        let mut meta = meta;
        // A topic from before secrets gets one (its later segments are salted from it).
        let new_secret = known && meta.secret.is_none();
        meta.secret.get_or_insert_with(record::Salt::secret);
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
            // Opened when first written: a descriptor per topic at start would be more
            // than a server with thousands of topics may hold (see `Store::close_idle_files`).
            tail: None,
            last_write: 0,
            pending,
            unsealed: Vec::new(),
            pending_msgs: 0,
            pending_fins: 0,
            pending_first: None,
            pending_copies: 0,
            last_id,
            index,
            reads: self.reads(),
            meta_dirty: false,
            batch: None,
            next: Prepared::default(),
            next_asked: false,
        };
        if !known || new_secret {
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
}

/// Delete the `.tmp` files in `dir` (see [`super::sys::write_atomic`]).
fn remove_tmp_files(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_str().is_some_and(|n| n.ends_with(".tmp")) {
            let _ = fs::remove_file(e.path());
        }
    }
}
