//! A double-ended queue stored in fixed-size chunks, for queues that grow to millions.
//!
//! A `VecDeque` that doubles copies every element and touches twice the memory at once: with
//! ten million queued messages that is a stop of hundreds of milliseconds, on the publish path.
//! [`ChunkedDeque`] never moves an element: it adds or frees one chunk of [`CHUNK`] slots at a
//! time. A small queue lives in its first chunk, which grows like a `VecDeque` up to `CHUNK`
//! (so an idle channel costs no more than before).
//!
//! Invariant: every chunk but the first and the last is full, so `get(i)` is arithmetic; a
//! chunk is empty only when it is the only one (kept, like a `VecDeque`'s buffer, so a queue
//! that empties and refills does not allocate again).

use std::collections::VecDeque;

/// Slots per chunk.
pub const CHUNK: usize = 1024;

#[derive(Debug, Clone)]
pub struct ChunkedDeque<T> {
    chunks: VecDeque<VecDeque<T>>,
    len: usize,
}

impl<T> Default for ChunkedDeque<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> ChunkedDeque<T> {
    pub const fn new() -> Self {
        Self {
            chunks: VecDeque::new(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Keep only the elements `keep` says yes to, in order; returns those removed. (Rare:
    /// every element moves.)
    pub fn retain_out(&mut self, mut keep: impl FnMut(&T) -> bool) -> Vec<T> {
        let mut removed = Vec::new();
        for _ in 0..self.len {
            let v = self.pop_front().expect("len counts the elements");
            if keep(&v) {
                self.push_back(v);
            } else {
                removed.push(v);
            }
        }
        removed
    }

    pub fn push_back(&mut self, v: T) {
        match self.chunks.back_mut() {
            Some(last) if last.len() < CHUNK => last.push_back(v),
            _ => {
                // The first chunk grows as needed; later ones are made full size at once.
                let mut c = if self.chunks.is_empty() {
                    VecDeque::new()
                } else {
                    VecDeque::with_capacity(CHUNK)
                };
                c.push_back(v);
                self.chunks.push_back(c);
            }
        }
        self.len += 1;
    }

    pub fn push_front(&mut self, v: T) {
        match self.chunks.front_mut() {
            Some(first) if first.len() < CHUNK => first.push_front(v),
            _ => {
                let mut c = VecDeque::new();
                c.push_front(v);
                self.chunks.push_front(c);
            }
        }
        self.len += 1;
    }

    pub fn pop_front(&mut self) -> Option<T> {
        let first = self.chunks.front_mut()?;
        let v = first.pop_front();
        if first.is_empty() && self.chunks.len() > 1 {
            self.chunks.pop_front();
        }
        if v.is_some() {
            self.len -= 1;
        }
        v
    }

    pub fn pop_back(&mut self) -> Option<T> {
        let last = self.chunks.back_mut()?;
        let v = last.pop_back();
        if last.is_empty() && self.chunks.len() > 1 {
            self.chunks.pop_back();
        }
        if v.is_some() {
            self.len -= 1;
        }
        v
    }

    pub fn front(&self) -> Option<&T> {
        self.chunks.front().and_then(|c| c.front())
    }

    pub fn back(&self) -> Option<&T> {
        self.chunks.back().and_then(|c| c.back())
    }

    /// Chunk and offset of element `i`.
    fn locate(&self, i: usize) -> Option<(usize, usize)> {
        if i >= self.len {
            return None;
        }
        let first = self.chunks.front()?.len();
        if i < first {
            return Some((0, i));
        }
        let j = i - first;
        Some((1 + j / CHUNK, j % CHUNK))
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        let (c, o) = self.locate(i)?;
        self.chunks.get(c)?.get(o)
    }

    /// The index of the first element for which `pred` is false (the elements must be
    /// partitioned: all `true` first), as `slice::partition_point`.
    pub fn partition_point(&self, mut pred: impl FnMut(&T) -> bool) -> usize {
        // Find the chunk first (by its last element), then inside it.
        let c = self
            .chunks
            .partition_point(|c| c.back().is_some_and(&mut pred));
        let before: usize = match c {
            0 => 0,
            c => self.chunks[0].len() + (c - 1) * CHUNK,
        };
        match self.chunks.get(c) {
            Some(chunk) => before + chunk.partition_point(pred),
            None => self.len,
        }
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.chunks.iter().flat_map(|c| c.iter())
    }

    pub fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }
}

impl<T> Extend<T> for ChunkedDeque<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for v in iter {
            self.push_back(v);
        }
    }
}

impl<T> FromIterator<T> for ChunkedDeque<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut d = Self::new();
        d.extend(iter);
        d
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        PushBack(u32),
        PushFront(u32),
        PopFront,
        PopBack,
        /// Many pushes at once (to cross chunk boundaries).
        Fill(u16),
        Drain(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => any::<u32>().prop_map(Op::PushBack),
            1 => any::<u32>().prop_map(Op::PushFront),
            3 => Just(Op::PopFront),
            1 => Just(Op::PopBack),
            1 => (0..3000u16).prop_map(Op::Fill),
            1 => (0..3000u16).prop_map(Op::Drain),
        ]
    }

    proptest! {
        /// Behaves exactly as a `VecDeque`, and keeps its invariant.
        #[test]
        fn matches_vecdeque(ops in proptest::collection::vec(op(), 0..200)) {
            let mut d = ChunkedDeque::new();
            let mut m = VecDeque::new();
            let mut next = 0u32;
            for op in ops {
                match op {
                    Op::PushBack(v) => { d.push_back(v); m.push_back(v); }
                    Op::PushFront(v) => { d.push_front(v); m.push_front(v); }
                    Op::PopFront => prop_assert_eq!(d.pop_front(), m.pop_front()),
                    Op::PopBack => prop_assert_eq!(d.pop_back(), m.pop_back()),
                    Op::Fill(n) => for _ in 0..n { next += 1; d.push_back(next); m.push_back(next); },
                    Op::Drain(n) => for _ in 0..n { prop_assert_eq!(d.pop_front(), m.pop_front()); },
                }
                prop_assert_eq!(d.len(), m.len());
                prop_assert_eq!(d.front(), m.front());
                prop_assert_eq!(d.back(), m.back());
                let n = d.chunks.len();
                for (k, c) in d.chunks.iter().enumerate() {
                    prop_assert!((!c.is_empty() || n == 1) && c.len() <= CHUNK);
                    if k > 0 && k + 1 < n { prop_assert_eq!(c.len(), CHUNK); }
                }
                for i in [0, m.len() / 3, m.len() / 2, m.len().saturating_sub(1), m.len()] {
                    prop_assert_eq!(d.get(i), m.get(i));
                }
                prop_assert!(d.iter().eq(m.iter()));
            }
        }

        /// `partition_point` on sorted contents agrees with a slice's.
        #[test]
        fn partition_point_on_sorted(n in 0..5000usize, front in 0..2000usize, x in 0..6000usize) {
            let mut d: ChunkedDeque<usize> = (0..n).collect();
            for _ in 0..front.min(n) { d.pop_front(); }
            let v: Vec<usize> = d.iter().copied().collect();
            prop_assert_eq!(d.partition_point(|&y| y < x), v.partition_point(|&y| y < x));
        }
    }
}
