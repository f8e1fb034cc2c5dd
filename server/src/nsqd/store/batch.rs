//! A commit is all or nothing: what a failed one wrote is taken out of the logs again.

use super::record;
use super::seg_path;
use super::sys::fsync;
use super::TopicStore;
use nsqlab_core::{MessageId, Name};
use std::fs;

/// Where a commit's writes to a topic began: a commit is all or nothing, so that no
/// publisher hears `E_PUB_FAILED` for a message the log keeps (a batch is written in
/// pieces past [`super::write::PENDING_KEEP`] and across a roll, and one topic's write can fail after
/// another's succeeded).
#[derive(Debug, Clone, Copy)]
pub(super) struct Batch {
    /// The segment written first, and its length before.
    pub(super) num: u64,
    pub(super) len: u64,
    /// Live copies the batch's messages counted on that segment.
    pub(super) copies: i64,
    /// The batch's first message.
    pub(super) first: Option<u64>,
}

/// A commit failed: what it wrote to topic `ts` is taken out of its log again (segments it
/// started are deleted, the one it began in is cut back), and what is still buffered is
/// dropped (FINs among it are lost, which only delivers their messages again after a
/// restart).
pub(super) fn undo_batch(topic: &Name, ts: &mut TopicStore) {
    let Some(b) = ts.batch.take() else {
        return;
    };
    while ts.segments.len() > 1 && ts.segments.back().is_some_and(|s| s.num > b.num) {
        let s = ts.segments.pop_back().expect("a segment");
        ts.reads.forget(s.num);
        ts.tail = None;
        ts.next_asked = false;
        let path = seg_path(&ts.dir, s.num);
        if let Err(e) = fs::remove_file(&path) {
            tracing::error!("TOPIC({topic}): failed to remove {}: {e}", path.display());
        }
        // (Durable now: a power loss must not bring its records back.)
        super::sys::sync_dir(&ts.dir);
    }
    ts.pending.clear();
    ts.unsealed.clear();
    ts.pending_fins = 0;
    ts.pending_msgs = 0;
    ts.pending_first = None;
    ts.pending_copies = 0;
    let Some(i) = ts.segment_pos(b.num) else {
        return;
    };
    let path = seg_path(&ts.dir, b.num);
    // Synced at once: the sync thread may have synced the failed write meanwhile, and a
    // power loss must not bring back what its publishers were told failed.
    let cut = match &ts.tail {
        Some(t) if i + 1 == ts.segments.len() => t.set_len(b.len).and_then(|()| fsync(t)),
        _ => fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(b.len).and_then(|()| fsync(&f))),
    };
    if let Err(e) = cut {
        tracing::error!(
            "TOPIC({topic}): failed to take a failed commit back out of {}: {e}",
            path.display()
        );
    }
    let seg = &mut ts.segments[i];
    seg.len = b.len;
    seg.refs -= b.copies;
    seg.reader = None;
    ts.reads.forget(b.num);
    ts.index
        .unwritten(b.first.unwrap_or(u64::MAX), ts.last_id, b.num as u32, b.len);
    if b.len == 0 {
        // (A new segment: its header comes first again.)
        let seg = &ts.segments[i];
        ts.pending = record::new_segment(seg.salt, MessageId(seg.mark));
    }
}
