//! A small sorted map on a `Vec`: the model's few keyed fields (a form's fields, the refusals
//! beside them). The same answers as a `BTreeMap`, for a few entries, in much less code: each
//! `BTreeMap` type weighs some 8 KB in the page's WebAssembly.

/// Entries sorted by key, each key once.
#[derive(Debug, Clone, PartialEq)]
pub struct Table<K, V>(Vec<(K, V)>);

impl<K: Ord, V> Table<K, V> {
    pub const fn new() -> Self {
        Table(Vec::new())
    }

    fn find(&self, k: &K) -> Result<usize, usize> {
        self.0.binary_search_by(|e| e.0.cmp(k))
    }

    pub fn get(&self, k: &K) -> Option<&V> {
        self.find(k).ok().map(|i| &self.0[i].1)
    }

    /// Set `k` to `v`; the value it had, if any.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        match self.find(&k) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, v)),
            Err(i) => {
                self.0.insert(i, (k, v));
                None
            }
        }
    }

    pub fn remove(&mut self, k: &K) -> Option<V> {
        self.find(k).ok().map(|i| self.0.remove(i).1)
    }

    pub fn contains_key(&self, k: &K) -> bool {
        self.find(k).is_ok()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

/// `table[&k]`: the value of `k`, which must be there.
impl<K: Ord, V> std::ops::Index<&K> for Table<K, V> {
    type Output = V;

    fn index(&self, k: &K) -> &V {
        self.get(k).expect("a key of the table")
    }
}

impl<K: Ord, V> Default for Table<K, V> {
    fn default() -> Self {
        Table::new()
    }
}

impl<K: Ord, V, const N: usize> From<[(K, V); N]> for Table<K, V> {
    fn from(entries: [(K, V); N]) -> Self {
        entries.into_iter().collect()
    }
}

impl<K: Ord, V> FromIterator<(K, V)> for Table<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(it: I) -> Self {
        let mut t = Table::new();
        for (k, v) in it {
            t.insert(k, v);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The same answers as a `BTreeMap` through a seeded run of inserts and removals.
    #[test]
    fn answers_as_a_btree_map_does() {
        let mut t = Table::new();
        let mut b = BTreeMap::new();
        let mut x: u64 = 7;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (x >> 33) % 20;
            let v = x >> 50;
            match (x >> 20) % 3 {
                0 => assert_eq!(t.remove(&k), b.remove(&k)),
                _ => assert_eq!(t.insert(k, v), b.insert(k, v)),
            }
            assert_eq!(t.get(&k), b.get(&k));
            assert!(t.iter().eq(b.iter()));
        }
        t.clear();
        assert_eq!(t.iter().count(), 0);
        let from: Table<u8, u8> = [(3, 1), (1, 2), (3, 4)].into_iter().collect();
        assert_eq!(from.iter().collect::<Vec<_>>(), [(&1, &2), (&3, &4)]);
    }
}
