//! An indexed binary min-heap for the in-flight queue and the timer table: entries can be
//! found, re-keyed and removed by ID in O(log n).
//!
//! The entries live in a slab and the heap array holds only slab slots; each slot remembers
//! its heap position. A sift swap therefore updates two array cells, never the ID index: the
//! index (ID → slot) changes only when an entry comes or goes. Ordering is `(key, seq)`, `seq`
//! an insertion (or re-key) sequence kept in the heap cell, and the same [`HeapOp`] trace as
//! [`crate::pqueue::PQueue`]'s is recorded.
//!
//! **The sorted lane.** Most entries arrive in key order: an in-flight deadline is
//! `now + msg_timeout`, a heartbeat `now + interval`. While no trace is recorded, an entry
//! whose key is not below the last one in the lane skips the heap and joins a sorted FIFO
//! (O(1) in and, for FIN in delivery order, O(1) out). The first entry is the smaller of the
//! heap's root and the lane's front. An entry removed from the middle of the lane leaves a dead
//! cell; dead cells are dropped at the ends and compacted away once they are the majority.
//! With a trace on (the visualiser) everything is in the heap, so each step can be drawn.

use crate::message::MessageId;
use crate::pqueue::{Entry, HeapItem, HeapOp};
use crate::time::Time;
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// A slot position with this bit set is in the sorted lane (the rest is its logical index).
const LANE: u32 = 1 << 31;
/// The slot of a dead lane cell.
const DEAD: u32 = u32::MAX;

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

/// The indexed min-heap.
#[derive(Debug, Clone)]
pub struct IndexedQueue<T> {
    /// Keys and slab slots in heap order.
    heap: Vec<Node>,
    slots: Vec<Option<Slot<T>>>,
    /// Each slot's heap position, apart from the entries (a sift touches only these small
    /// cells, not the entries).
    positions: Vec<u32>,
    free: Vec<u32>,
    index: FxHashMap<u64, u32>,
    next_seq: u64,
    trace: Option<Vec<HeapOp>>,
    /// The sorted lane: nodes in ascending `(key, seq)`; its front is never dead.
    lane: VecDeque<Node>,
    /// Logical index of `lane[0]` (wrapping in 31 bits).
    lane_base: u32,
    lane_dead: usize,
}

/// Where a slot's node is.
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
            lane: VecDeque::new(),
            lane_base: 0,
            lane_dead: 0,
        }
    }

    /// Start or stop recording [`HeapOp`]s. Starting moves the sorted lane into the heap.
    pub fn set_trace(&mut self, on: bool) {
        if on {
            self.trace = None;
            let lane = std::mem::take(&mut self.lane);
            (self.lane_base, self.lane_dead) = (0, 0);
            for node in lane.into_iter().filter(|n| n.slot != DEAD) {
                let pos = self.heap.len();
                self.heap.push(node);
                self.set_pos(pos);
                self.sift(pos);
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

    #[inline]
    fn locate(&self, s: u32) -> Loc {
        let p = self.positions[s as usize];
        if p & LANE == 0 {
            Loc::Heap(p as usize)
        } else {
            Loc::Lane(((p & !LANE).wrapping_sub(self.lane_base) & !LANE) as usize)
        }
    }

    /// The first node: the heap's root or the lane's front, whichever is earlier.
    #[inline]
    fn first(&self) -> Option<(Node, Loc)> {
        match (self.heap.first(), self.lane.front()) {
            (Some(h), Some(l)) if (l.key, l.seq) < (h.key, h.seq) => Some((*l, Loc::Lane(0))),
            (Some(h), _) => Some((*h, Loc::Heap(0))),
            (None, Some(l)) => Some((*l, Loc::Lane(0))),
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
            .chain(self.lane.iter().filter(|n| n.slot != DEAD))
            .map(|n| &self.slot(n.slot).entry)
    }

    pub fn peek(&self) -> Option<&Entry<T>> {
        self.first().map(|(n, _)| &self.slot(n.slot).entry)
    }

    pub fn peek_key(&self) -> Option<Time> {
        self.first().map(|(n, _)| n.key)
    }

    pub fn contains(&self, id: u64) -> bool {
        self.index.contains_key(&id)
    }

    pub fn get(&self, id: u64) -> Option<&Entry<T>> {
        self.index.get(&id).map(|&s| &self.slot(s).entry)
    }

    /// The entry's item, mutably (its key cannot change this way: use [`Self::rekey`]).
    pub fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        let s = *self.index.get(&id)?;
        Some(
            &mut self.slots[s as usize]
                .as_mut()
                .expect("live slot")
                .entry
                .item,
        )
    }

    fn record(&mut self, op: HeapOp) {
        if let Some(t) = &mut self.trace {
            t.push(op);
        }
    }

    /// Insert `item` due at `key`; returns its array index after sifting.
    pub fn push(&mut self, key: Time, item: T) -> usize {
        let id = item.heap_id();
        debug_assert!(!self.contains(id), "duplicate heap id {id}");
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = Slot {
            entry: Entry { key, item },
        };
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
        self.place(Node { key, seq, slot: s })
    }

    /// Put a node in the lane if it sorts last there (and no trace is kept), else in the
    /// heap; returns its heap index, or the heap's length plus its lane index.
    fn place(&mut self, node: Node) -> usize {
        if self.trace.is_none() && self.lane.back().is_none_or(|b| node.key >= b.key) {
            let at = self.lane.len();
            self.positions[node.slot as usize] =
                LANE | (self.lane_base.wrapping_add(at as u32) & !LANE);
            self.lane.push_back(node);
            return self.heap.len() + at;
        }
        let pos = self.heap.len();
        self.heap.push(node);
        self.record(HeapOp::Push {
            id: MessageId(self.slot(node.slot).entry.item.heap_id()),
            key: node.key,
            at: pos,
        });
        self.set_pos(pos);
        self.sift(pos)
    }

    /// Take lane cell `at` out of the order (its slot stays); drops dead cells at the ends
    /// and compacts when most cells are dead.
    fn detach_lane(&mut self, at: usize) {
        self.lane[at].slot = DEAD;
        self.lane_dead += 1;
        while self.lane.front().is_some_and(|n| n.slot == DEAD) {
            self.lane.pop_front();
            self.lane_base = self.lane_base.wrapping_add(1) & !LANE;
            self.lane_dead -= 1;
        }
        while self.lane.back().is_some_and(|n| n.slot == DEAD) {
            self.lane.pop_back();
            self.lane_dead -= 1;
        }
        if self.lane_dead > 32 && self.lane_dead * 2 > self.lane.len() {
            self.lane.retain(|n| n.slot != DEAD);
            self.lane_base = 0;
            self.lane_dead = 0;
            for (i, n) in self.lane.iter().enumerate() {
                self.positions[n.slot as usize] = LANE | i as u32;
            }
        }
    }

    pub fn pop(&mut self) -> Option<Entry<T>> {
        let (node, loc) = self.first()?;
        let id = self.slot(node.slot).entry.item.heap_id();
        self.index.remove(&id);
        Some(self.remove_unindexed(node.slot, loc, id))
    }

    /// Pop the first entry if it is due at or before `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<Entry<T>> {
        match self.peek_key() {
            Some(k) if k <= now => self.pop(),
            _ => None,
        }
    }

    /// Remove entry `id` if `pred` holds for it, with one index lookup. `Err(false)`: no such
    /// entry; `Err(true)`: `pred` refused it (it stays).
    pub fn remove_if(&mut self, id: u64, pred: impl FnOnce(&T) -> bool) -> Result<Entry<T>, bool> {
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
        let loc = self.locate(s);
        Ok(self.remove_unindexed(s, loc, id))
    }

    pub fn remove(&mut self, id: u64) -> Option<Entry<T>> {
        let s = self.index.remove(&id)?;
        let loc = self.locate(s);
        Some(self.remove_unindexed(s, loc, id))
    }

    /// Remove slot `s` at `loc`, whose ID `id` is already out of the index.
    fn remove_unindexed(&mut self, s: u32, loc: Loc, id: u64) -> Entry<T> {
        match loc {
            Loc::Heap(pos) => self.remove_at_unindexed(pos, id),
            Loc::Lane(at) => {
                self.detach_lane(at);
                self.free.push(s);
                self.slots[s as usize].take().expect("live slot").entry
            }
        }
    }

    /// Give the entry a new key and a fresh sequence number, as if re-inserted.
    pub fn rekey(&mut self, id: u64, key: Time) -> bool {
        let Some(&s) = self.index.get(&id) else {
            return false;
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = self.slots[s as usize].as_mut().expect("live slot");
        slot.entry.key = key;
        let pos = match self.locate(s) {
            Loc::Heap(pos) => pos,
            Loc::Lane(at) => {
                self.detach_lane(at);
                self.place(Node { key, seq, slot: s });
                return true;
            }
        };
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

    /// Remove every entry, returning them in array order.
    pub fn clear(&mut self) -> Vec<Entry<T>> {
        self.record(HeapOp::Clear);
        self.index.clear();
        self.free.clear();
        let heap = std::mem::take(&mut self.heap);
        let mut slots = std::mem::take(&mut self.slots);
        self.positions.clear();
        let lane = std::mem::take(&mut self.lane);
        (self.lane_base, self.lane_dead) = (0, 0);
        heap.into_iter()
            .chain(lane.into_iter().filter(|n| n.slot != DEAD))
            .filter_map(|n| slots[n.slot as usize].take().map(|slot| slot.entry))
            .collect()
    }

    /// Bytes of heap, slab and index storage (capacity included).
    pub fn memory_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<Node>()
            + self.slots.capacity() * std::mem::size_of::<Option<Slot<T>>>()
            + self.free.capacity() * 4
            + self.positions.capacity() * 4
            + self.index.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
            + self.lane.capacity() * std::mem::size_of::<Node>()
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
        assert_eq!(q.index.len(), q.len());
        for (pos, n) in q.heap.iter().enumerate() {
            let e = &q.slot(n.slot).entry;
            assert_eq!(q.positions[n.slot as usize] as usize, pos);
            assert_eq!(n.key, e.key, "inline key matches the entry");
            assert_eq!(q.index[&e.item.heap_id()], n.slot);
        }
        assert!(
            q.lane.front().is_none_or(|n| n.slot != DEAD),
            "lane front is live"
        );
        assert_eq!(
            q.lane.iter().filter(|n| n.slot == DEAD).count(),
            q.lane_dead
        );
        for (i, w) in q.lane.iter().collect::<Vec<_>>().windows(2).enumerate() {
            assert!(
                (w[0].key, w[0].seq) < (w[1].key, w[1].seq),
                "lane order at {i}"
            );
        }
        for (at, n) in q.lane.iter().enumerate().filter(|(_, n)| n.slot != DEAD) {
            let e = &q.slot(n.slot).entry;
            assert!(
                matches!(q.locate(n.slot), Loc::Lane(a) if a == at),
                "lane position"
            );
            assert_eq!(n.key, e.key, "inline key matches the entry");
            assert_eq!(q.index[&e.item.heap_id()], n.slot);
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
                for op in ops {
                    let push = |k: u64, q: &mut IndexedQueue<u64>, model: &mut BTreeMap<_, _>, by_id: &mut BTreeMap<_, _>, seq: &mut u64, next_id: &mut u64| {
                        q.push(k, *next_id);
                        model.insert((k, *seq), *next_id);
                        by_id.insert(*next_id, (k, *seq));
                        *seq += 1;
                        *next_id += 1;
                    };
                    match op {
                        Op::Push(k) => {
                            latest = k as u64;
                            push(latest, &mut q, &mut model, &mut by_id, &mut seq, &mut next_id);
                        }
                        Op::PushLater(d) => {
                            latest += d as u64;
                            push(latest, &mut q, &mut model, &mut by_id, &mut seq, &mut next_id);
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
                            let id = i as u64 % (next_id + 1);
                            let got = q.remove(id).map(|e| e.item);
                            let want = by_id.remove(&id).map(|ks| model.remove(&ks).unwrap());
                            prop_assert_eq!(got, want);
                        }
                        Op::Rekey(i, k) => {
                            let id = i as u64 % (next_id + 1);
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
