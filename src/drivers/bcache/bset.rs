//! The index's storage: the btree's leaf nodes as sorted arrays of keys
//! (drivers/md/bcache/bset.c, btree.c).
//!
//! The kernel keeps a leaf's keys sorted in a node of one bucket, found by
//! bisection (`__bch_bset_search` over the node's auxiliary search tree),
//! and splits a node in two when it fills (`btree_split`). The index here
//! does the same with small nodes: `Index` is a list of leaves, each a
//! sorted array of start sectors beside an array of keys, and a flat array
//! of the leaves' lower bounds searched by bisection. A lookup is two
//! bisections over contiguous memory; a walk over every key (GC's) reads
//! the arrays in order; an insert moves at most a leaf's keys.
//!
//! Only the set of keys is observable: how they are spread over leaves
//! never changes what a walk gives, so `retain` may leave leaves uneven.
//! The btree's buckets are counted from the number of keys
//! (`btree::KEYS_PER_NODE`), not from these leaves.

use super::btree::Key;

/// Keys a leaf holds before it splits in two.
const LEAF_MAX: usize = 128;

/// One leaf: its keys' starts, ascending, and the keys.
#[derive(Clone, Debug, Default)]
struct Leaf {
    starts: Vec<u64>,
    keys: Vec<Key>,
}

impl Leaf {
    fn with_capacity() -> Leaf {
        Leaf {
            starts: Vec::with_capacity(LEAF_MAX + 1),
            keys: Vec::with_capacity(LEAF_MAX + 1),
        }
    }
}

/// Extents by start sector: an ordered map of `u64` to [`Key`] with the
/// operations the cache set needs.
#[derive(Clone, Debug)]
pub struct Index {
    /// Leaf `i` holds the keys starting in `[lo[i], lo[i + 1])`; `lo[0]`
    /// is 0. A bound is at most its leaf's first start (it is not raised
    /// when that key goes).
    lo: Vec<u64>,
    leaves: Vec<Leaf>,
    len: usize,
}

impl Default for Index {
    fn default() -> Index {
        Index::new()
    }
}

impl Index {
    pub fn new() -> Index {
        Index {
            lo: vec![0],
            leaves: vec![Leaf::with_capacity()],
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The leaf whose range holds `x`.
    #[inline]
    fn leaf_of(&self, x: u64) -> usize {
        self.lo.partition_point(|&f| f <= x) - 1
    }

    /// The key starting at `s`.
    pub fn get(&self, s: u64) -> Option<&Key> {
        let l = &self.leaves[self.leaf_of(s)];
        l.starts.binary_search(&s).ok().map(|i| &l.keys[i])
    }

    pub fn get_mut(&mut self, s: u64) -> Option<&mut Key> {
        let li = self.leaf_of(s);
        let l = &mut self.leaves[li];
        l.starts.binary_search(&s).ok().map(|i| &mut l.keys[i])
    }

    /// Insert (or replace) the key starting at `s`.
    pub fn insert(&mut self, s: u64, k: Key) {
        let li = self.leaf_of(s);
        let l = &mut self.leaves[li];
        match l.starts.binary_search(&s) {
            Ok(i) => l.keys[i] = k,
            Err(i) => {
                l.starts.insert(i, s);
                l.keys.insert(i, k);
                self.len += 1;
                if l.starts.len() > LEAF_MAX {
                    self.split(li);
                }
            }
        }
    }

    /// `btree_split`: the upper half of a full leaf becomes a new leaf.
    fn split(&mut self, li: usize) {
        let l = &mut self.leaves[li];
        let mid = l.starts.len() / 2;
        let mut n = Leaf::with_capacity();
        n.starts.extend_from_slice(&l.starts[mid..]);
        n.keys.extend_from_slice(&l.keys[mid..]);
        l.starts.truncate(mid);
        l.keys.truncate(mid);
        self.lo.insert(li + 1, n.starts[0]);
        self.leaves.insert(li + 1, n);
    }

    /// Remove the key starting at `s`.
    pub fn remove(&mut self, s: u64) -> Option<Key> {
        let li = self.leaf_of(s);
        let l = &mut self.leaves[li];
        let i = l.starts.binary_search(&s).ok()?;
        l.starts.remove(i);
        let k = l.keys.remove(i);
        self.len -= 1;
        if l.starts.is_empty() {
            self.drop_leaf(li);
        }
        Some(k)
    }

    /// An empty leaf goes (its range joins the leaf before it), unless it
    /// is the last one.
    fn drop_leaf(&mut self, li: usize) {
        if self.leaves.len() == 1 {
            return;
        }
        self.leaves.remove(li);
        self.lo.remove(li);
        self.lo[0] = 0;
    }

    /// The keys starting before `e`, in descending order of start.
    pub fn rev_before(&self, e: u64) -> RevIter<'_> {
        let li = self.leaf_of(e);
        let slot = self.leaves[li].starts.partition_point(|&s| s < e);
        RevIter {
            idx: self,
            li,
            slot,
        }
    }

    /// The keys starting at or after `from`, in ascending order.
    pub fn iter_from(&self, from: u64) -> Iter<'_> {
        let li = self.leaf_of(from);
        let slot = self.leaves[li].starts.partition_point(|&s| s < from);
        Iter {
            idx: self,
            li,
            slot,
        }
    }

    /// Every key, in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            idx: self,
            li: 0,
            slot: 0,
        }
    }

    /// Keep only the keys `f` keeps, visiting every key once in ascending
    /// order; empty leaves go.
    pub fn retain(&mut self, mut f: impl FnMut(u64, &Key) -> bool) {
        let mut len = 0;
        for l in self.leaves.iter_mut() {
            let mut w = 0;
            for r in 0..l.starts.len() {
                let (s, k) = (l.starts[r], l.keys[r]);
                if f(s, &k) {
                    l.starts[w] = s;
                    l.keys[w] = k;
                    w += 1;
                }
            }
            l.starts.truncate(w);
            l.keys.truncate(w);
            len += w;
        }
        self.len = len;
        if self.leaves.iter().any(|l| l.starts.is_empty()) && self.leaves.len() > 1 {
            let mut lo = std::mem::take(&mut self.lo);
            let mut i = 0;
            lo.retain(|_| {
                i += 1;
                !self.leaves[i - 1].starts.is_empty()
            });
            self.leaves.retain(|l| !l.starts.is_empty());
            if self.leaves.is_empty() {
                self.leaves.push(Leaf::with_capacity());
                lo.push(0);
            }
            lo[0] = 0;
            self.lo = lo;
        }
    }
}

/// A walk down the index (see [`Index::rev_before`]).
pub struct RevIter<'a> {
    idx: &'a Index,
    li: usize,
    slot: usize,
}

impl<'a> Iterator for RevIter<'a> {
    type Item = (u64, &'a Key);

    #[inline]
    fn next(&mut self) -> Option<(u64, &'a Key)> {
        while self.slot == 0 {
            if self.li == 0 {
                return None;
            }
            self.li -= 1;
            self.slot = self.idx.leaves[self.li].starts.len();
        }
        self.slot -= 1;
        let l = &self.idx.leaves[self.li];
        Some((l.starts[self.slot], &l.keys[self.slot]))
    }
}

/// A walk up the index (see [`Index::iter_from`]).
pub struct Iter<'a> {
    idx: &'a Index,
    li: usize,
    slot: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (u64, &'a Key);

    #[inline]
    fn next(&mut self) -> Option<(u64, &'a Key)> {
        loop {
            let l = self.idx.leaves.get(self.li)?;
            if self.slot < l.starts.len() {
                let i = self.slot;
                self.slot += 1;
                return Some((l.starts[i], &l.keys[i]));
            }
            self.li += 1;
            self.slot = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Prng;
    use std::collections::BTreeMap;

    fn key(len: u32) -> Key {
        Key {
            len,
            cofs: len as u64 * 3,
            gen: (len % 7) as u8,
            dirty: len % 2 == 0,
        }
    }

    /// Random inserts, removals, replacements and retains against a
    /// BTreeMap: the same keys in the same order, and the same walks.
    #[test]
    fn the_index_is_an_ordered_map() {
        let mut rng = Prng::new(7);
        let mut idx = Index::new();
        let mut map = BTreeMap::new();
        for round in 0..40_000u32 {
            let s = rng.next_u64() % 5000;
            match rng.next_u64() % 8 {
                0..=3 => {
                    let k = key(round % 1000 + 1);
                    idx.insert(s, k);
                    map.insert(s, k);
                }
                4..=5 => assert_eq!(idx.remove(s), map.remove(&s)),
                6 => {
                    if let (Some(a), Some(b)) = (idx.get_mut(s), map.get_mut(&s)) {
                        a.len += 1;
                        b.len += 1;
                    }
                }
                _ => {
                    if round % 500 == 0 {
                        let m = rng.next_u64() % 5 + 2;
                        idx.retain(|s, _| s % m != 0);
                        map.retain(|s, _| s % m != 0);
                    }
                }
            }
            assert_eq!(idx.len(), map.len());
            if round % 97 == 0 {
                let e = rng.next_u64() % 5100;
                let a: Vec<_> = idx.rev_before(e).map(|(s, k)| (s, *k)).collect();
                let b: Vec<_> = map.range(..e).rev().map(|(&s, k)| (s, *k)).collect();
                assert_eq!(a, b);
                let a: Vec<_> = idx.iter_from(e).map(|(s, k)| (s, *k)).collect();
                let b: Vec<_> = map.range(e..).map(|(&s, k)| (s, *k)).collect();
                assert_eq!(a, b);
                assert_eq!(idx.get(e), map.get(&e));
            }
        }
        let a: Vec<_> = idx.iter().map(|(s, k)| (s, *k)).collect();
        let b: Vec<_> = map.iter().map(|(&s, k)| (s, *k)).collect();
        assert_eq!(a, b);
        idx.retain(|_, _| false);
        assert!(idx.is_empty());
        assert_eq!(idx.iter().count(), 0);
        idx.insert(3, key(1));
        assert_eq!(idx.rev_before(4).count(), 1);
    }
}
