//! An indexed binary min-heap for the in-flight queue and the timer table: entries can be
//! found, re-keyed and removed by ID in O(log n).
//!
//! The heap's entries live in a slab and the heap array holds only slab slots; each slot
//! remembers its heap position. A sift swap therefore updates two array cells, never the ID
//! index: the index (ID → slot) changes only when an entry comes or goes. Ordering is
//! `(key, seq)`, `seq` an insertion (or re-key) sequence kept in the heap cell, and the same
//! [`HeapOp`] trace as [`crate::pqueue::PQueue`]'s is recorded.
//!
//! **The sorted lane.** Most entries arrive in order: an in-flight deadline is
//! `now + msg_timeout` and a channel hands out its messages in ID order. While no trace is
//! recorded, an entry whose key is not below the last one in the lane and whose ID is above
//! the last one's skips the heap and joins a sorted FIFO, entry and all, outside the slab and
//! the index: O(1) in, and found by a binary search of the lane's IDs (a small array that
//! stays in cache), so a FIN touches one cold cache line (its entry) where the heap path
//! touches three (index bucket, slab slot, position). The first entry is the smaller of the
//! heap's root and the lane's front. An entry removed from the middle of the lane leaves a
//! dead cell (its ID stays, keeping the IDs sorted); dead cells are dropped at the ends and
//! compacted away once they are the majority. With a trace on (the visualiser) everything is
//! in the heap, so each step can be drawn.

use crate::message::MessageId;
use crate::pqueue::{Entry, HeapItem, HeapOp};
use crate::time::Time;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
struct Slot<T> {
    entry: Entry<T>,
}

/// A heap cell: the ordering key inline (comparisons never leave the heap array) and the
/// slab slot of the entry.
#[derive(Debug, Clone, Copy)]
struct Node {
    key: Time,
    seq: u64,
    slot: u32,
}

/// A lane cell: the entry itself (`None` once removed from the middle) and its sequence.
#[derive(Debug, Clone)]
struct Cell<T> {
    seq: u64,
    entry: Option<Entry<T>>,
}

/// The indexed min-heap.
#[derive(Debug, Clone)]
pub struct IndexedQueue<T> {
    /// Keys and slab slots in heap order.
    heap: Vec<Node>,
    /// The heap's entries (the lane keeps its own).
    slots: Vec<Option<Slot<T>>>,
    /// Each slot's heap position, apart from the entries (a sift touches only these small
    /// cells, not the entries).
    positions: Vec<u32>,
    free: Vec<u32>,
    /// ID → slot, for the heap's entries only.
    index: FxHashMap<u64, u32>,
    next_seq: u64,
    trace: Option<Vec<HeapOp>>,
    /// The sorted lane's IDs, strictly ascending, dead cells' included (a cell's ID is at the
    /// cell's index).
    lane_ids: VecDeque<u64>,
    /// The sorted lane: live cells in ascending `(key, seq)`; its front and back are live.
    lane: VecDeque<Cell<T>>,
    lane_dead: usize,
    /// How many cells have left the lane's front, ever: a cell's lasting name is this plus
    /// its index (compaction renames every cell and forgets the fingers).
    lane_base: u64,
    /// Where the last few lane lookups found their cells (lasting names): each consumer
    /// finishes its messages in order, so its next FIN is usually a few cells past its last.
    fingers: [std::cell::Cell<u64>; FINGERS],
    /// The finger a lookup that none of them served replaces next.
    next_finger: std::cell::Cell<usize>,
}

/// How many recent lane lookups [`IndexedQueue::lane_find`] starts from (a channel's
/// consumers, each finishing in order).
const FINGERS: usize = 4;
/// How far past a finger a lookup searches before it searches the whole lane.
const FINGER_REACH: usize = 32;
/// A finger pointing nowhere.
const NO_FINGER: u64 = u64::MAX;

/// Where an entry is.
#[derive(Debug, Clone, Copy)]
enum Loc {
    Heap(usize),
    Lane(usize),
}

impl<T: HeapItem> Default for IndexedQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: HeapItem> IndexedQueue<T> {
    pub fn new() -> Self {
        Self {
            heap: Vec::new(),
            slots: Vec::new(),
            positions: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            next_seq: 0,
            trace: None,
            lane_ids: VecDeque::new(),
            lane: VecDeque::new(),
            lane_dead: 0,
            lane_base: 0,
            fingers: Default::default(),
            next_finger: Default::default(),
        }
    }

    /// Start or stop recording [`HeapOp`]s. Starting moves the sorted lane into the heap.
    pub fn set_trace(&mut self, on: bool) {
        if on {
            self.trace = None;
            let lane = std::mem::take(&mut self.lane);
            self.lane_ids.clear();
            self.lane_dead = 0;
            self.forget_fingers();
            for cell in lane {
                if let Some(entry) = cell.entry {
                    self.heap_insert(entry, cell.seq);
                }
            }
        }
        self.trace = if on { Some(Vec::new()) } else { None };
    }

    /// Take the recorded operations.
    pub fn drain_trace(&mut self) -> Vec<HeapOp> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.heap.len() + self.lane.len() - self.lane_dead
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty() && self.lane.is_empty()
    }

    /// The lane cell holding live entry `id`, if the lane has it: first a short search past
    /// each finger (cells hot from the last lookups), then a binary search of all the IDs.
    #[inline]
    fn lane_find(&self, id: u64) -> Option<usize> {
        let n = self.lane_ids.len();
        match (self.lane_ids.front(), self.lane_ids.back()) {
            (Some(&first), Some(&last)) if first <= id && id <= last => {}
            _ => return None,
        }
        let found = 'found: {
            for (k, f) in self.fingers.iter().enumerate() {
                let from = f.get().wrapping_sub(self.lane_base);
                if from >= n as u64 {
                    continue;
                }
                let from = from as usize;
                let to = (from + FINGER_REACH).min(n - 1);
                if self.lane_ids[from] <= id && id <= self.lane_ids[to] {
                    break 'found (k, self.search_ids(from, to, id));
                }
            }
            let k = self.next_finger.get();
            self.next_finger.set((k + 1) % FINGERS);
            (k, self.search_ids(0, n - 1, id))
        };
        let (k, at) = found;
        let at = at?;
        self.fingers[k].set(self.lane_base + at as u64);
        self.lane[at].entry.is_some().then_some(at)
    }

    /// The index of `id` among the lane's IDs `lo..=hi`, given `ids[lo] <= id <= ids[hi]`.
    #[inline]
    fn search_ids(&self, mut lo: usize, mut hi: usize, id: u64) -> Option<usize> {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.lane_ids[mid] < id {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (self.lane_ids[lo] == id).then_some(lo)
    }

    fn forget_fingers(&mut self) {
        for f in &self.fingers {
            f.set(NO_FINGER);
        }
    }

    /// Where entry `id` is, if anywhere.
    #[inline]
    fn find(&self, id: u64) -> Option<Loc> {
        if let Some(at) = self.lane_find(id) {
            return Some(Loc::Lane(at));
        }
        let &s = self.index.get(&id)?;
        Some(Loc::Heap(self.positions[s as usize] as usize))
    }

    #[inline]
    fn entry_at(&self, loc: Loc) -> &Entry<T> {
        match loc {
            Loc::Heap(pos) => &self.slot(self.heap[pos].slot).entry,
            Loc::Lane(at) => self.lane[at].entry.as_ref().expect("live lane cell"),
        }
    }

    /// The lane's back entry's key and ID (the back is always live).
    #[inline]
    fn lane_back(&self) -> Option<(Time, u64)> {
        let e = self.lane.back()?.entry.as_ref().expect("live lane back");
        Some((e.key, *self.lane_ids.back().expect("an ID per cell")))
    }

    /// The first entry: the heap's root or the lane's front, whichever is earlier.
    #[inline]
    fn first(&self) -> Option<(Time, Loc)> {
        let lane = self.lane.front().map(|c| {
            let e = c.entry.as_ref().expect("live lane front");
            (e.key, c.seq)
        });
        match (self.heap.first(), lane) {
            (Some(h), Some(l)) if l < (h.key, h.seq) => Some((l.0, Loc::Lane(0))),
            (Some(h), _) => Some((h.key, Loc::Heap(0))),
            (None, Some(l)) => Some((l.0, Loc::Lane(0))),
            (None, None) => None,
        }
    }

    #[inline]
    fn slot(&self, s: u32) -> &Slot<T> {
        self.slots[s as usize].as_ref().expect("live slot")
    }

    #[cfg(test)]
    fn at(&self, pos: usize) -> &Entry<T> {
        &self.slot(self.heap[pos].slot).entry
    }

    /// The entries: the heap in array order (index 0 is its root), then the sorted lane.
    pub fn iter(&self) -> impl Iterator<Item = &Entry<T>> {
        self.heap
            .iter()
            .map(|n| &self.slot(n.slot).entry)
            .chain(self.lane.iter().filter_map(|c| c.entry.as_ref()))
    }

    pub fn peek(&self) -> Option<&Entry<T>> {
        self.first().map(|(_, loc)| self.entry_at(loc))
    }

    pub fn peek_key(&self) -> Option<Time> {
        self.first().map(|(key, _)| key)
    }

    pub fn contains(&self, id: u64) -> bool {
        self.lane_find(id).is_some() || self.index.contains_key(&id)
    }

    pub fn get(&self, id: u64) -> Option<&Entry<T>> {
        self.find(id).map(|loc| self.entry_at(loc))
    }

    /// The entry's item, mutably (its key cannot change this way: use [`Self::rekey`]).
    pub fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        let entry = match self.find(id)? {
            Loc::Heap(pos) => {
                let s = self.heap[pos].slot;
                &mut self.slots[s as usize].as_mut().expect("live slot").entry
            }
            Loc::Lane(at) => self.lane[at].entry.as_mut().expect("live lane cell"),
        };
        Some(&mut entry.item)
    }

    fn record(&mut self, op: HeapOp) {
        if let Some(t) = &mut self.trace {
            t.push(op);
        }
    }

    /// Insert `item` due at `key`; returns its array index after sifting (for the lane: the
    /// heap's length plus its lane index).
    pub fn push(&mut self, key: Time, item: T) -> usize {
        debug_assert!(
            !self.contains(item.heap_id()),
            "duplicate heap id {}",
            item.heap_id()
        );
        let seq = self.next_seq;
        self.next_seq += 1;
        self.place(Entry { key, item }, seq)
    }

    /// Put an entry in the lane if it sorts last there by key and by ID (and no trace is
    /// kept), else in the heap; returns its heap index, or the heap's length plus its lane
    /// index.
    fn place(&mut self, entry: Entry<T>, seq: u64) -> usize {
        let id = entry.item.heap_id();
        if self.trace.is_none()
            && self
                .lane_back()
                .is_none_or(|(key, last)| entry.key >= key && id > last)
        {
            self.lane_ids.push_back(id);
            self.lane.push_back(Cell {
                seq,
                entry: Some(entry),
            });
            return self.heap.len() + self.lane.len() - 1;
        }
        self.heap_insert(entry, seq)
    }

    /// Insert an entry into the slab, the index and the heap; returns its heap index.
    fn heap_insert(&mut self, entry: Entry<T>, seq: u64) -> usize {
        let (key, id) = (entry.key, entry.item.heap_id());
        let slot = Slot { entry };
        let s = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(slot);
                s
            }
            None => {
                self.slots.push(Some(slot));
                self.positions.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(id, s);
        let pos = self.heap.len();
        self.heap.push(Node { key, seq, slot: s });
        self.record(HeapOp::Push {
            id: MessageId(id),
            key,
            at: pos,
        });
        self.set_pos(pos);
        self.sift(pos)
    }

    /// Take lane cell `at`'s entry; drops dead cells at the ends and compacts when most
    /// cells are dead.
    fn take_lane(&mut self, at: usize) -> Entry<T> {
        let entry = self.lane[at].entry.take().expect("live lane cell");
        self.lane_dead += 1;
        while self.lane.front().is_some_and(|c| c.entry.is_none()) {
            self.lane.pop_front();
            self.lane_ids.pop_front();
            self.lane_base += 1;
            self.lane_dead -= 1;
        }
        while self.lane.back().is_some_and(|c| c.entry.is_none()) {
            self.lane.pop_back();
            self.lane_ids.pop_back();
            self.lane_dead -= 1;
        }
        if self.lane_dead > 32 && self.lane_dead * 2 > self.lane.len() {
            let mut keep = self.lane.iter().map(|c| c.entry.is_some());
            self.lane_ids
                .retain(|_| keep.next().expect("an ID per cell"));
            self.lane.retain(|c| c.entry.is_some());
            self.lane_dead = 0;
            self.forget_fingers();
        }
        entry
    }

    pub fn pop(&mut self) -> Option<Entry<T>> {
        let (_, loc) = self.first()?;
        Some(self.take(loc))
    }

    /// Pop the first entry if it is due at or before `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<Entry<T>> {
        match self.peek_key() {
            Some(k) if k <= now => self.pop(),
            _ => None,
        }
    }

    /// Remove the entry at `loc`.
    fn take(&mut self, loc: Loc) -> Entry<T> {
        match loc {
            Loc::Lane(at) => self.take_lane(at),
            Loc::Heap(pos) => {
                let id = self.slot(self.heap[pos].slot).entry.item.heap_id();
                self.index.remove(&id);
                self.remove_at_unindexed(pos, id)
            }
        }
    }

    /// Remove entry `id` if `pred` holds for it, with one lookup. `Err(false)`: no such
    /// entry; `Err(true)`: `pred` refused it (it stays).
    pub fn remove_if(&mut self, id: u64, pred: impl FnOnce(&T) -> bool) -> Result<Entry<T>, bool> {
        if let Some(at) = self.lane_find(id) {
            let item = &self.lane[at].entry.as_ref().expect("live lane cell").item;
            if !pred(item) {
                return Err(true);
            }
            return Ok(self.take_lane(at));
        }
        let std::collections::hash_map::Entry::Occupied(o) = self.index.entry(id) else {
            return Err(false);
        };
        let s = *o.get();
        let item = &self.slots[s as usize]
            .as_ref()
            .expect("live slot")
            .entry
            .item;
        if !pred(item) {
            return Err(true);
        }
        o.remove();
        let pos = self.positions[s as usize] as usize;
        Ok(self.remove_at_unindexed(pos, id))
    }

    pub fn remove(&mut self, id: u64) -> Option<Entry<T>> {
        let loc = self.find(id)?;
        Some(self.take(loc))
    }

    /// Give the entry a new key and a fresh sequence number, as if re-inserted.
    pub fn rekey(&mut self, id: u64, key: Time) -> bool {
        let Some(loc) = self.find(id) else {
            return false;
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let pos = match loc {
            Loc::Heap(pos) => pos,
            Loc::Lane(at) => {
                let mut entry = self.take_lane(at);
                entry.key = key;
                self.place(entry, seq);
                return true;
            }
        };
        let s = self.heap[pos].slot;
        self.slots[s as usize]
            .as_mut()
            .expect("live slot")
            .entry
            .key = key;
        self.heap[pos].key = key;
        self.heap[pos].seq = seq;
        self.record(HeapOp::Rekey {
            id: MessageId(id),
            key,
            at: pos,
        });
        self.sift(pos);
        true
    }

    /// Insert, or re-key when the ID is already present (timer tables).
    pub fn upsert(&mut self, key: Time, item: T) {
        let id = item.heap_id();
        match self.get(id).map(|e| e.key) {
            Some(k) if k == key => {}
            Some(_) => {
                self.rekey(id, key);
            }
            None => {
                self.push(key, item);
            }
        }
    }

    /// Remove every entry, returning them in array order (the heap's, then the lane's).
    pub fn clear(&mut self) -> Vec<Entry<T>> {
        self.record(HeapOp::Clear);
        self.index.clear();
        self.free.clear();
        let heap = std::mem::take(&mut self.heap);
        let mut slots = std::mem::take(&mut self.slots);
        self.positions.clear();
        let lane = std::mem::take(&mut self.lane);
        self.lane_ids.clear();
        self.lane_dead = 0;
        heap.into_iter()
            .filter_map(|n| slots[n.slot as usize].take().map(|slot| slot.entry))
            .chain(lane.into_iter().filter_map(|c| c.entry))
            .collect()
    }

    /// Bytes of heap, slab, index and lane storage (capacity included).
    pub fn memory_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<Node>()
            + self.slots.capacity() * std::mem::size_of::<Option<Slot<T>>>()
            + self.free.capacity() * 4
            + self.positions.capacity() * 4
            + self.index.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
            + self.lane_ids.capacity() * 8
            + self.lane.capacity() * std::mem::size_of::<Cell<T>>()
    }

    /// Remove the entry at `pos`, whose ID `id` is already out of the index.
    fn remove_at_unindexed(&mut self, pos: usize, id: u64) -> Entry<T> {
        let last = self.heap.len() - 1;
        let s = self.heap[pos].slot;
        self.record(HeapOp::Take {
            id: MessageId(id),
            at: pos,
        });
        let slot = self.slots[s as usize].take().expect("live slot");
        self.free.push(s);
        if pos == 0 && pos != last && self.trace.is_none() {
            // Taking the first (FIN in delivery order, timeouts): Floyd's deletion — walk the
            // hole down the smaller children to a leaf (one comparison per level), put the
            // last node there and let it rise (it rarely does).
            let moved = self.heap.pop().expect("not empty");
            let mut hole = 0;
            while let Some(c) = self.smaller_child(hole) {
                self.heap[hole] = self.heap[c];
                self.set_pos(hole);
                hole = c;
            }
            self.heap[hole] = moved;
            self.set_pos(hole);
            self.sift(hole);
            return slot.entry;
        }
        self.heap.swap_remove(pos);
        if pos != last {
            self.record(HeapOp::Move {
                from: last,
                to: pos,
            });
            self.set_pos(pos);
            self.sift(pos);
        }
        slot.entry
    }

    /// The earlier of `pos`'s children, if it has any.
    #[inline]
    fn smaller_child(&self, pos: usize) -> Option<usize> {
        let (l, r) = (2 * pos + 1, 2 * pos + 2);
        if l >= self.heap.len() {
            return None;
        }
        Some(if r < self.heap.len() && self.less(r, l) {
            r
        } else {
            l
        })
    }

    #[inline]
    fn less(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.heap[a], &self.heap[b]);
        (x.key, x.seq) < (y.key, y.seq)
    }

    #[inline]
    fn set_pos(&mut self, pos: usize) {
        let s = self.heap[pos].slot;
        self.positions[s as usize] = pos as u32;
    }

    fn swap(&mut self, child: usize, parent: usize) {
        self.heap.swap(child, parent);
        self.set_pos(child);
        self.set_pos(parent);
        self.record(HeapOp::Swap { child, parent });
    }

    fn sift(&mut self, pos: usize) -> usize {
        if self.trace.is_some() {
            return self.sift_swaps(pos);
        }
        // Without a trace: move a hole instead of swapping (one write per level), to the
        // same final order as the swaps would give.
        let node = self.heap[pos];
        let before = |a: &Node, b: &Node| (a.key, a.seq) < (b.key, b.seq);
        let mut at = pos;
        while at > 0 {
            let parent = (at - 1) / 2;
            if !before(&node, &self.heap[parent]) {
                break;
            }
            self.heap[at] = self.heap[parent];
            self.set_pos(at);
            at = parent;
        }
        if at == pos {
            while let Some(c) = self.smaller_child(at) {
                if !before(&self.heap[c], &node) {
                    break;
                }
                self.heap[at] = self.heap[c];
                self.set_pos(at);
                at = c;
            }
        }
        self.heap[at] = node;
        self.set_pos(at);
        at
    }

    /// The sift as swaps, each recorded for the trace.
    fn sift_swaps(&mut self, mut pos: usize) -> usize {
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if !self.less(pos, parent) {
                break;
            }
            self.swap(pos, parent);
            pos = parent;
        }
        loop {
            let Some(c) = self.smaller_child(pos) else {
                return pos;
            };
            if !self.less(c, pos) {
                return pos;
            }
            self.swap(c, pos);
            pos = c;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: HeapItem>(q: &IndexedQueue<T>) {
        for i in 1..q.heap.len() {
            let (p, c) = (q.at((i - 1) / 2), q.at(i));
            assert!(p.key <= c.key, "heap order at {i}");
        }
        assert_eq!(q.index.len(), q.heap.len());
        for (pos, n) in q.heap.iter().enumerate() {
            let e = &q.slot(n.slot).entry;
            assert_eq!(q.positions[n.slot as usize] as usize, pos);
            assert_eq!(n.key, e.key, "inline key matches the entry");
            assert_eq!(q.index[&e.item.heap_id()], n.slot);
        }
        assert_eq!(q.lane_ids.len(), q.lane.len(), "an ID per lane cell");
        assert!(
            q.lane.front().is_none_or(|c| c.entry.is_some())
                && q.lane.back().is_none_or(|c| c.entry.is_some()),
            "lane ends are live"
        );
        assert_eq!(
            q.lane.iter().filter(|c| c.entry.is_none()).count(),
            q.lane_dead
        );
        for w in q.lane_ids.iter().collect::<Vec<_>>().windows(2) {
            assert!(w[0] < w[1], "lane IDs ascend");
        }
        let live: Vec<(u64, &Cell<T>)> = q
            .lane_ids
            .iter()
            .copied()
            .zip(q.lane.iter())
            .filter(|(_, c)| c.entry.is_some())
            .collect();
        for (id, c) in &live {
            let e = c.entry.as_ref().unwrap();
            assert_eq!(*id, e.item.heap_id(), "the cell's ID");
            assert!(!q.index.contains_key(id), "lane entries are not indexed");
        }
        for (i, w) in live.windows(2).enumerate() {
            let (a, b) = (w[0].1, w[1].1);
            let (ka, kb) = (a.entry.as_ref().unwrap().key, b.entry.as_ref().unwrap().key);
            assert!((ka, a.seq) < (kb, b.seq), "lane order at {i}");
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn remove_rekey_and_ties() {
        let mut q = IndexedQueue::new();
        for (id, key) in [(1u64, 50), (2, 10), (3, 50), (4, 10), (5, 30)] {
            q.push(key, id);
            check(&q);
        }
        assert!(q.remove(5).is_some() && q.remove(5).is_none());
        assert!(q.rekey(3, 1));
        check(&q);
        let order: Vec<u64> = std::iter::from_fn(|| q.pop().map(|e| e.item)).collect();
        assert_eq!(order, vec![3, 2, 4, 1]);
        assert!(q.is_empty());
    }

    /// FINs out of order leave dead lane cells; once they are the majority they are
    /// compacted away, and every entry left is still found by ID and pops in order.
    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn lane_compacts_and_still_finds() {
        let mut q = IndexedQueue::new();
        for id in 0..100u64 {
            q.push(1000 + id, id * 10);
        }
        assert!(q.heap.is_empty(), "in-order pushes take the lane");
        // Take three in four, except the last: the ends stay live, the middle goes dead.
        let kept = |i: u64| i.is_multiple_of(4) || i == 99;
        for id in (0..100u64).filter(|&i| !kept(i)) {
            assert_eq!(q.remove_if(id * 10, |_| true).map(|e| e.item), Ok(id * 10));
            check(&q);
        }
        assert!(q.lane.len() < 60, "compacted");
        assert_eq!(q.len(), 26);
        assert_eq!(q.remove_if(10, |_| true).err(), Some(false), "gone");
        assert_eq!(q.remove_if(40, |_| false).err(), Some(true), "refused");
        assert!(q.rekey(40, 5000));
        check(&q);
        let order: Vec<u64> = std::iter::from_fn(|| q.pop().map(|e| e.item)).collect();
        let mut want: Vec<u64> = (0..100u64)
            .filter(|&i| kept(i) && i != 4)
            .map(|i| i * 10)
            .collect();
        want.push(40);
        assert_eq!(order, want);
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod props {
        use super::*;
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        #[derive(Debug, Clone)]
        enum Op {
            Push(u8),
            /// Push a key just after the latest pushed (as deadlines arrive).
            PushLater(u8),
            /// Push a key after the latest with an ID below every earlier one (a redelivery).
            PushOld(u8),
            Pop,
            Remove(u8),
            Rekey(u8, u8),
            /// Start recording a trace (moves the sorted lane into the heap).
            Trace,
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                3 => any::<u8>().prop_map(Op::Push),
                3 => (0..4u8).prop_map(Op::PushLater),
                1 => (0..4u8).prop_map(Op::PushOld),
                2 => Just(Op::Pop),
                2 => any::<u8>().prop_map(Op::Remove),
                1 => (any::<u8>(), any::<u8>()).prop_map(|(a, b)| Op::Rekey(a, b)),
                1 => Just(Op::Trace),
            ]
        }

        proptest! {
            /// The indexed heap behaves exactly like a reference model: a sorted map keyed by
            /// (key, seq) with an id lookup.
            #[test]
            fn matches_reference_model(ops in proptest::collection::vec(op(), 0..300)) {
                let mut q: IndexedQueue<u64> = IndexedQueue::new();
                let mut model: BTreeMap<(u64, u64), u64> = BTreeMap::new();
                let mut by_id: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
                let (mut seq, mut next_id, mut latest) = (0u64, 0u64, 0u64);
                // Every ID pushed so far (removed ones too), to pick from.
                let mut ids: Vec<u64> = Vec::new();
                // An ID never pushed: `Remove` and `Rekey` with the top `u8` use it.
                const ABSENT: u64 = 5_000_000;
                let pick = |i: u8, ids: &[u64]| {
                    if i == u8::MAX || ids.is_empty() { ABSENT } else { ids[i as usize % ids.len()] }
                };
                for op in ops {
                    let mut push = |k: u64, id: u64, q: &mut IndexedQueue<u64>, model: &mut BTreeMap<_, _>, by_id: &mut BTreeMap<_, _>, seq: &mut u64| {
                        q.push(k, id);
                        model.insert((k, *seq), id);
                        by_id.insert(id, (k, *seq));
                        ids.push(id);
                        *seq += 1;
                    };
                    match op {
                        Op::Push(k) => {
                            latest = k as u64;
                            push(latest, next_id, &mut q, &mut model, &mut by_id, &mut seq);
                            next_id += 1;
                        }
                        Op::PushLater(d) => {
                            latest += d as u64;
                            push(latest, next_id, &mut q, &mut model, &mut by_id, &mut seq);
                            next_id += 1;
                        }
                        Op::PushOld(d) => {
                            latest += d as u64;
                            push(latest, 1_000_000 - next_id, &mut q, &mut model, &mut by_id, &mut seq);
                            next_id += 1;
                        }
                        Op::Trace => {
                            q.set_trace(true);
                        }
                        Op::Pop => {
                            let got = q.pop().map(|e| (e.key, e.item));
                            let want = model.pop_first().map(|((k, _), id)| (k, id));
                            if let Some((_, id)) = want { by_id.remove(&id); }
                            prop_assert_eq!(got, want);
                        }
                        Op::Remove(i) => {
                            let id = pick(i, &ids);
                            let got = q.remove(id).map(|e| e.item);
                            let want = by_id.remove(&id).map(|ks| model.remove(&ks).unwrap());
                            prop_assert_eq!(got, want);
                        }
                        Op::Rekey(i, k) => {
                            let id = pick(i, &ids);
                            let got = q.rekey(id, k as u64);
                            if let Some(ks) = by_id.remove(&id) {
                                model.remove(&ks);
                                model.insert((k as u64, seq), id);
                                by_id.insert(id, (k as u64, seq));
                            }
                            if got { seq += 1; }
                            prop_assert_eq!(got, by_id.contains_key(&id));
                        }
                    }
                    q.drain_trace();
                    check(&q);
                    prop_assert_eq!(q.len(), model.len());
                    prop_assert_eq!(q.iter().count(), model.len());
                    prop_assert_eq!(q.peek().map(|e| e.item), model.first_key_value().map(|(_, &id)| id));
                }
            }
        }
    }
}
