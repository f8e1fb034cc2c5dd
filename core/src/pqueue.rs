//! A binary min-heap of inline entries: the deferred queue (the in-flight queue and timer table
//! use [`crate::iqueue::IndexedQueue`], which can also find entries by ID).
//!
//! Entries are ordered by `(key, seq)`: `key` is a due time, `seq` the insertion sequence, so
//! entries due at the same instant leave in the order they came. The sequence is kept in the
//! item ([`HeapItem::set_heap_seq`]; a message has room for it in its padding), so an entry is
//! just the key and the item. Entries sit in the heap array
//! itself (no slab, no index), the smallest layout for millions of pending messages.
//!
//! Every structural change can be recorded as a [`HeapOp`] (push, each sift swap, take, move)
//! so the visualiser can replay a push or pop one swap at a time.

use crate::message::MessageId;
use crate::time::Time;
use serde::{Deserialize, Serialize};

/// What a heap entry must tell the heap: its ID, and a place for its insertion sequence.
pub trait HeapItem {
    fn heap_id(&self) -> u64;

    /// The insertion sequence the heap gave it (items without room for one order ties by ID).
    fn heap_seq(&self) -> u32 {
        0
    }

    fn set_heap_seq(&mut self, _seq: u32) {}
}

/// One heap slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<T> {
    /// When the entry is due.
    pub key: Time,
    pub item: T,
}

/// One recorded heap operation. Positions are array indices (children of `i` are `2i+1` and
/// `2i+2`); `id` is the entry's [`HeapItem::heap_id`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum HeapOp {
    /// A new entry was appended at index `at`.
    Push { id: MessageId, key: Time, at: usize },
    /// Sift step: the entries at `child` and `parent` swapped because the child is due sooner
    /// (or as soon, but came first).
    Swap { child: usize, parent: usize },
    /// The entry at `at` left the heap (`at` is 0 for a pop).
    Take { id: MessageId, at: usize },
    /// The last entry moved from `from` into the hole at `to`, before sifting.
    Move { from: usize, to: usize },
    /// The entry at `at` got a new key (it then sifts).
    Rekey { id: MessageId, key: Time, at: usize },
    /// Every entry was removed.
    Clear,
}

/// The min-heap.
#[derive(Debug, Clone)]
pub struct PQueue<T> {
    heap: Vec<Entry<T>>,
    /// The next insertion sequence (wraps after 2^32 pushes; only ties could misorder then).
    next_seq: u32,
    trace: Option<Vec<HeapOp>>,
}

impl<T: HeapItem> PQueue<T> {
    /// An empty heap.
    pub fn plain() -> Self {
        Self {
            heap: Vec::new(),
            next_seq: 0,
            trace: None,
        }
    }

    /// Start or stop recording [`HeapOp`]s.
    pub fn set_trace(&mut self, on: bool) {
        self.trace = if on { Some(Vec::new()) } else { None };
    }

    /// Take the recorded operations.
    pub fn drain_trace(&mut self) -> Vec<HeapOp> {
        match &mut self.trace {
            Some(t) => std::mem::take(t),
            None => Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The entries in array order (index 0 is the root).
    pub fn entries(&self) -> &[Entry<T>] {
        &self.heap
    }

    /// The entry due first.
    pub fn peek(&self) -> Option<&Entry<T>> {
        self.heap.first()
    }

    /// The key of the entry due first.
    pub fn peek_key(&self) -> Option<Time> {
        self.heap.first().map(|e| e.key)
    }

    fn record(&mut self, op: HeapOp) {
        if let Some(t) = &mut self.trace {
            t.push(op);
        }
    }

    /// Insert `item` due at `key`; returns its array index after sifting.
    pub fn push(&mut self, key: Time, mut item: T) -> usize {
        item.set_heap_seq(self.next_seq);
        self.next_seq = self.next_seq.wrapping_add(1);
        let at = self.heap.len();
        let id = item.heap_id();
        if self.heap.len() == self.heap.capacity() {
            // Grow by a quarter, not double: a big deferred heap should not carry up to 50%
            // empty slots (amortised O(1) either way).
            self.heap.reserve_exact((self.heap.len() / 4).max(16));
        }
        self.heap.push(Entry { key, item });
        self.record(HeapOp::Push {
            id: MessageId(id),
            key,
            at,
        });
        self.sift(at)
    }

    /// Remove and return the entry due first.
    pub fn pop(&mut self) -> Option<Entry<T>> {
        if self.heap.is_empty() {
            None
        } else {
            Some(self.remove_at(0))
        }
    }

    /// Pop the first entry if it is due at or before `now`.
    pub fn pop_due(&mut self, now: Time) -> Option<Entry<T>> {
        match self.heap.first() {
            Some(e) if e.key <= now => self.pop(),
            _ => None,
        }
    }

    /// Remove every entry, returning them in array order.
    pub fn clear(&mut self) -> Vec<Entry<T>> {
        self.record(HeapOp::Clear);
        std::mem::take(&mut self.heap)
    }

    /// Take out every entry whose item `remove` says yes to, each as a removal from the
    /// middle (recorded, and sifted, as any other). Rare: each is searched for.
    pub fn remove_where(&mut self, mut remove: impl FnMut(&T) -> bool) -> Vec<Entry<T>> {
        let mut out = Vec::new();
        while let Some(at) = self.heap.iter().position(|e| remove(&e.item)) {
            out.push(self.remove_at(at));
        }
        out
    }

    /// Bytes of heap storage (capacity included).
    pub fn memory_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<Entry<T>>()
    }

    fn remove_at(&mut self, at: usize) -> Entry<T> {
        let last = self.heap.len() - 1;
        let id = self.heap[at].item.heap_id();
        self.record(HeapOp::Take {
            id: MessageId(id),
            at,
        });
        let entry = self.heap.swap_remove(at);
        if at != last {
            self.record(HeapOp::Move { from: last, to: at });
            self.sift(at);
        }
        entry
    }

    #[inline]
    fn less(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.heap[a], &self.heap[b]);
        (x.key, x.item.heap_seq(), x.item.heap_id()) < (y.key, y.item.heap_seq(), y.item.heap_id())
    }

    /// Move the entry at `at` up or down to its place; returns where it ends.
    fn sift(&mut self, at: usize) -> usize {
        if at > 0 && self.less(at, (at - 1) / 2) {
            self.sift_up(at)
        } else {
            self.sift_down(at)
        }
    }

    fn sift_up(&mut self, mut at: usize) -> usize {
        while at > 0 {
            let parent = (at - 1) / 2;
            if !self.less(at, parent) {
                break;
            }
            self.heap.swap(at, parent);
            self.record(HeapOp::Swap { child: at, parent });
            at = parent;
        }
        at
    }

    fn sift_down(&mut self, mut at: usize) -> usize {
        let len = self.heap.len();
        loop {
            let l = 2 * at + 1;
            if l >= len {
                return at;
            }
            let r = l + 1;
            let c = if r < len && self.less(r, l) { r } else { l };
            if !self.less(c, at) {
                return at;
            }
            self.heap.swap(c, at);
            self.record(HeapOp::Swap {
                child: c,
                parent: at,
            });
            at = c;
        }
    }
}

impl HeapItem for u64 {
    fn heap_id(&self) -> u64 {
        *self
    }
}

impl HeapItem for crate::message::Message {
    fn heap_id(&self) -> u64 {
        self.id.0
    }

    fn heap_seq(&self) -> u32 {
        self.heap_seq
    }

    fn set_heap_seq(&mut self, seq: u32) {
        self.heap_seq = seq;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_invariant<T: HeapItem>(q: &PQueue<T>) {
        let h = q.entries();
        for i in 1..h.len() {
            let p = (i - 1) / 2;
            assert!(
                (h[p].key, h[p].item.heap_seq(), h[p].item.heap_id())
                    <= (h[i].key, h[i].item.heap_seq(), h[i].item.heap_id()),
                "heap order at {i}"
            );
        }
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn pops_in_key_then_insertion_order() {
        let mut q = PQueue::plain();
        for (id, key) in [(1u64, 50), (2, 10), (3, 50), (4, 10), (5, 30)] {
            q.push(key, id);
            check_invariant(&q);
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.pop().map(|e| e.item)).collect();
        assert_eq!(order, vec![2, 4, 5, 1, 3]);
        assert_eq!(q.pop_due(0), None);
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn trace_records_push_and_swaps() {
        let mut q = PQueue::plain();
        q.set_trace(true);
        q.push(30, 1u64);
        q.push(20, 2u64);
        q.push(10, 3u64);
        let t = q.drain_trace();
        assert_eq!(
            t,
            vec![
                HeapOp::Push {
                    id: MessageId(1),
                    key: 30,
                    at: 0
                },
                HeapOp::Push {
                    id: MessageId(2),
                    key: 20,
                    at: 1
                },
                HeapOp::Swap {
                    child: 1,
                    parent: 0
                },
                HeapOp::Push {
                    id: MessageId(3),
                    key: 10,
                    at: 2
                },
                HeapOp::Swap {
                    child: 2,
                    parent: 0
                },
            ]
        );
        q.pop();
        let t = q.drain_trace();
        assert_eq!(
            t[0],
            HeapOp::Take {
                id: MessageId(3),
                at: 0
            }
        );
        assert_eq!(t[1], HeapOp::Move { from: 2, to: 0 });
    }

    #[cfg_attr(not(target_arch = "wasm32"), test)]
    #[cfg_attr(target_arch = "wasm32", wasm_bindgen_test::wasm_bindgen_test)]
    fn equal_due_times_leave_first_in_first_out_in_56_bytes() {
        use crate::message::Message;
        let mut q: PQueue<Message> = PQueue::plain();
        // A REQ'd (older) message pushed after newer ones still waits its turn.
        for id in [7u64, 3, 9, 1] {
            q.push(100, Message::new(MessageId(id), 0, b"x".into()));
        }
        let order: Vec<u64> = std::iter::from_fn(|| q.pop().map(|e| e.item.id.0)).collect();
        assert_eq!(order, vec![7, 3, 9, 1]);
        #[cfg(target_pointer_width = "64")]
        assert_eq!(std::mem::size_of::<Entry<Message>>(), 56);
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod props {
        use super::*;
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        proptest! {
            /// Pushes and pops behave exactly like a sorted map keyed by (key, id), and the
            /// trace replayed on a plain array rebuilds the same heap.
            #[test]
            fn heap_matches_reference_model(ops in proptest::collection::vec(proptest::option::of(any::<u8>()), 0..300)) {
                let mut q: PQueue<u64> = PQueue::plain();
                q.set_trace(true);
                let mut model: BTreeMap<(u64, u64), u64> = BTreeMap::new();
                let mut replay: Vec<(u64, u64)> = Vec::new();
                let mut next_id = 0u64;
                for op in ops {
                    match op {
                        Some(k) => {
                            q.push(k as u64, next_id);
                            model.insert((k as u64, next_id), next_id);
                            next_id += 1;
                        }
                        None => {
                            let got = q.pop().map(|e| (e.key, e.item, e.item));
                            let want = model.pop_first().map(|((k, s), id)| (k, s, id));
                            prop_assert_eq!(got, want);
                        }
                    }
                    for op in q.drain_trace() {
                        match op {
                            HeapOp::Push { id, key, .. } => replay.push((id.0, key)),
                            HeapOp::Swap { child, parent } => replay.swap(child, parent),
                            HeapOp::Take { at, .. } => { replay.swap_remove(at); }
                            HeapOp::Move { .. } | HeapOp::Rekey { .. } | HeapOp::Clear => {}
                        }
                    }
                    check_invariant(&q);
                    let now: Vec<(u64, u64)> = q.entries().iter().map(|e| (e.item, e.key)).collect();
                    prop_assert_eq!(&replay, &now);
                    prop_assert_eq!(q.len(), model.len());
                }
            }
        }
    }
}
