//! Where a topic's stored messages are, kept sparsely.
//!
//! A topic's log holds its messages in ID order. The index records the location of the first
//! message of every segment, of every deferred message (its body is loaded by itself when it
//! comes due), and otherwise of one message per [`EVERY`] messages or [`BYTES`] of log,
//! whichever comes first. Any other message is found by reading its segment forward from the
//! entry at or before it (see `Store::load`). A backlog of millions costs a fraction of a
//! byte per message here, not the 16 bytes of an entry for each.
//!
//! Whether a message was recorded at all (a FIN of a message whose write failed must not
//! release a copy in the segment its ID falls in) is answered by the highest ID recorded and
//! the ID ranges whose writes failed.

use nsqlab_core::deque::ChunkedDeque;

/// An entry at most every this many messages...
pub const EVERY: u32 = 64;
/// ...or this many bytes of log.
pub const BYTES: u64 = 16 << 10;

/// Where one message's record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    pub seg: u32,
    pub off: u32,
}

#[derive(Debug, Default)]
pub struct Index {
    /// In ID order (which is log order).
    entries: ChunkedDeque<Entry>,
    /// Messages and bytes of log since the last entry.
    since_msgs: u32,
    since_bytes: u64,
    /// The highest ID recorded.
    last: u64,
    /// Inclusive ID ranges whose records were never written (failed writes), in order.
    unwritten: Vec<(u64, u64)>,
    /// Where the last lookup found its entry, for loads (`[LOADS]`) and for finishes
    /// (`[FINS]`): consumers go through a backlog in ID order, and the loads run ahead of the
    /// FINs by the consumers' in-flight messages, so each keeps its own place.
    hints: [usize; 2],
    /// The entry each place last found, with the ID of the entry after it (`u64::MAX`: none
    /// yet): a lookup between the two is answered without touching `entries`. Forgotten
    /// whenever `entries` changes.
    found: [Option<(Entry, u64)>; 2],
}

const LOADS: usize = 0;
const FINS: usize = 1;

impl Index {
    /// A message's record, `len` bytes at `off` of segment `seg`, follows the ones before.
    /// `exact`: it gets an entry of its own (a deferred message).
    pub fn push(&mut self, id: u64, seg: u32, off: u32, len: usize, exact: bool) {
        let new_segment = self.entries.back().is_none_or(|e| e.seg != seg);
        if new_segment || exact || self.since_msgs >= EVERY || self.since_bytes >= BYTES {
            self.entries.push_back(Entry { id, seg, off });
            self.found = [None; 2];
            self.since_msgs = 0;
            self.since_bytes = 0;
        }
        self.since_msgs += 1;
        self.since_bytes += len as u64;
        self.last = self.last.max(id);
    }

    /// The records of IDs `from..=to` were not written after all (a failed write, cut back
    /// to segment `seg`'s length `len`).
    pub fn unwritten(&mut self, from: u64, to: u64, seg: u32, len: u64) {
        while self
            .entries
            .back()
            .is_some_and(|e| e.seg > seg || (e.seg == seg && e.off as u64 >= len))
        {
            self.entries.pop_back();
        }
        self.found = [None; 2];
        // What follows gets an entry of its own (counting from one that may be gone).
        self.since_msgs = EVERY;
        if from <= to {
            self.unwritten.push((from, to));
        }
    }

    /// Segment `seg`, the oldest, is gone.
    pub fn drop_segment(&mut self, seg: u32) {
        let mut n = 0;
        while self.entries.front().is_some_and(|e| e.seg == seg) {
            self.entries.pop_front();
            n += 1;
        }
        for h in &mut self.hints {
            *h = h.saturating_sub(n);
        }
        self.found = [None; 2];
        if let Some(first) = self.entries.front() {
            let first = first.id;
            self.unwritten.retain(|&(_, to)| to >= first);
        }
    }

    /// Where to look for message `id`: the entry at or before it (`id` itself when it has
    /// one). `None` when it was never recorded or its segment is gone.
    pub fn locate(&mut self, id: u64) -> Option<Entry> {
        self.locate_from(LOADS, id)
    }

    fn locate_from(&mut self, hint: usize, id: u64) -> Option<Entry> {
        if id > self.last || self.unwritten.iter().any(|&(a, b)| (a..=b).contains(&id)) {
            return None;
        }
        if let Some((e, next)) = self.found[hint] {
            if e.id <= id && id < next {
                return Some(e);
            }
        }
        let at = |i: usize| self.entries.get(i).copied();
        let covers = |i: usize| {
            at(i).is_some_and(|e| e.id <= id) && at(i + 1).is_none_or(|next| next.id > id)
        };
        let h = self.hints[hint];
        let i = match (h..h + 2).find(|&i| covers(i)) {
            Some(i) => i,
            None => self
                .entries
                .partition_point(|e| e.id <= id)
                .checked_sub(1)?,
        };
        self.hints[hint] = i;
        let e = at(i)?;
        self.found[hint] = Some((e, at(i + 1).map_or(u64::MAX, |next| next.id)));
        Some(e)
    }

    /// The segment message `id` is in, if it was recorded and its segment is still there
    /// (for a FIN: its own place, apart from the loads').
    pub fn segment_of(&mut self, id: u64) -> Option<u32> {
        self.locate_from(FINS, id).map(|e| e.seg)
    }

    /// Entries held.
    #[cfg(test)]
    pub fn entries(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages 10, 20, 30, … of `len` bytes each, `per_seg` to a segment.
    fn index_of(n: u64, len: usize, per_seg: u64) -> Index {
        let mut ix = Index::default();
        for k in 0..n {
            let seg = (k / per_seg) as u32;
            let off = ((k % per_seg) * len as u64) as u32;
            ix.push((k + 1) * 10, seg, off, len, false);
        }
        ix
    }

    #[test]
    fn an_entry_per_segment_start_and_per_every_messages_or_bytes() {
        // Small messages: one entry per EVERY.
        let ix = index_of(10 * EVERY as u64, 100, u64::MAX);
        assert_eq!(ix.entries(), 10);
        // Large ones: one per BYTES of log.
        let ix = index_of(100, BYTES as usize / 4, u64::MAX);
        assert_eq!(ix.entries(), 25);
        // Every segment's first message has one.
        let ix = index_of(100, 10, 10);
        assert_eq!(ix.entries(), 10);
        let mut ix = ix;
        for seg in 0..10u32 {
            let first = (seg as u64 * 10 + 1) * 10;
            assert_eq!(
                ix.locate(first).map(|e| (e.id, e.seg, e.off)),
                Some((first, seg, 0))
            );
        }
    }

    #[test]
    fn a_message_is_found_from_the_entry_at_or_before_it() {
        let mut ix = index_of(1000, 100, 300);
        // The entry of message 70 (k = 6) is message 10 at offset 0 of segment 0.
        assert_eq!(
            ix.locate(70),
            Some(Entry {
                id: 10,
                seg: 0,
                off: 0
            })
        );
        // After EVERY messages, the next entry.
        let e = ix.locate((EVERY as u64 + 1) * 10).unwrap();
        assert_eq!((e.id, e.seg), ((EVERY as u64 + 1) * 10, 0));
        // In segment 1 (k = 300..599): never an entry of segment 0.
        for id in (3010..6000).step_by(10) {
            assert_eq!(ix.segment_of(id), Some(1), "message {id}");
        }
        // Backwards and far off too (the hint is only a shortcut).
        assert_eq!(ix.segment_of(20), Some(0));
        assert_eq!(ix.segment_of(9990), Some(3));
        // Beyond the last, and before the first: not recorded.
        assert_eq!(ix.locate(10_010), None);
        assert_eq!(ix.locate(5), None);
    }

    #[test]
    fn loads_and_fins_keep_their_own_places() {
        let mut ix = index_of(1000, 100, 300);
        // Loads run ahead of FINs by a window; each walks in ID order from its own place.
        for k in 0..1000u64 {
            let load = (k + 1) * 10;
            let e = ix.locate(load).unwrap();
            assert!(
                e.id <= load && load - e.id < EVERY as u64 * 10,
                "load {load}"
            );
            assert_eq!(e.seg, (k / 300) as u32, "load {load}");
            if k >= 250 {
                let fin = (k - 250 + 1) * 10;
                assert_eq!(
                    ix.segment_of(fin),
                    Some(((k - 250) / 300) as u32),
                    "fin {fin}"
                );
                assert!(ix.hints[FINS] <= ix.hints[LOADS]);
            }
        }
        // The FINs' place did not move the loads' back.
        let at = ix.hints[LOADS];
        assert_eq!(ix.segment_of(10), Some(0));
        assert_eq!(ix.hints[LOADS], at);
    }

    /// What a place last found is not reused once entries come or go.
    #[test]
    fn a_lookup_after_the_index_changed_sees_the_change() {
        let mut ix = index_of(10, 100, u64::MAX);
        // The last entry (message 10) covers everything up to the last ID...
        assert_eq!(ix.locate(100).map(|e| e.id), Some(10));
        assert_eq!(ix.segment_of(100), Some(0));
        // ...until a new segment starts: its messages are found there.
        ix.push(110, 1, 48, 100, false);
        ix.push(120, 1, 148, 100, false);
        assert_eq!(ix.locate(120).map(|e| (e.id, e.seg)), Some((110, 1)));
        assert_eq!(ix.segment_of(120), Some(1));
        assert_eq!(ix.locate(100).map(|e| e.id), Some(10));
        // Segment 0 gone: its messages are not found, from either place.
        ix.drop_segment(0);
        assert_eq!(ix.locate(100), None);
        assert_eq!(ix.segment_of(50), None);
        assert_eq!(ix.locate(110).map(|e| e.seg), Some(1));
        // Segment 1's records from offset 148 on were not written: 120 is not recorded.
        ix.unwritten(120, 120, 1, 148);
        assert_eq!(ix.locate(120), None);
        ix.push(130, 1, 148, 100, false);
        assert_eq!(ix.locate(130).map(|e| (e.id, e.off)), Some((130, 148)));
    }

    #[test]
    fn a_deferred_message_has_an_entry_of_its_own() {
        let mut ix = index_of(10, 100, u64::MAX);
        ix.push(105, 0, 1000, 100, true);
        ix.push(106, 0, 1100, 100, false);
        assert_eq!(
            ix.locate(105),
            Some(Entry {
                id: 105,
                seg: 0,
                off: 1000
            })
        );
        assert_eq!(
            ix.locate(106),
            Some(Entry {
                id: 105,
                seg: 0,
                off: 1000
            })
        );
    }

    #[test]
    fn a_failed_write_unrecords_its_messages_and_their_entries() {
        let mut ix = index_of(200, 100, u64::MAX);
        // Messages 1510..=2000 (from offset 15000) were not written.
        ix.unwritten(1510, 2000, 0, 15_000);
        assert!(ix.entries.iter().all(|e| e.off < 15_000));
        assert_eq!(ix.locate(1500).map(|e| e.seg), Some(0));
        for id in [1510, 1700, 2000] {
            assert_eq!(ix.locate(id), None, "message {id}");
        }
        // Later messages are recorded again, with an entry of their own at once.
        ix.push(2010, 0, 15_000, 100, false);
        assert_eq!(
            ix.locate(2010),
            Some(Entry {
                id: 2010,
                seg: 0,
                off: 15_000
            })
        );
    }

    #[test]
    fn a_dropped_segment_takes_its_entries_and_older_failures() {
        let mut ix = index_of(600, 100, 300);
        ix.unwritten(6010, 6020, 1, 30_000);
        ix.push(6030, 2, 0, 100, false);
        assert_eq!(ix.locate(2000).map(|e| e.seg), Some(0));
        ix.drop_segment(0);
        assert_eq!(ix.locate(2000), None);
        assert_eq!(ix.locate(3010).map(|e| e.seg), Some(1));
        assert_eq!(ix.unwritten.len(), 1);
        ix.drop_segment(1);
        assert!(ix.unwritten.is_empty());
        assert_eq!(ix.locate(6030).map(|e| e.seg), Some(2));
    }
}
