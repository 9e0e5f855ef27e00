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

/// Keys a leaf holds; a full leaf splits in two before the next insert.
const LEAF_MAX: usize = 64;

/// The start of an unused slot: above every key's, so a count of the
/// starts below `x` needs no length.
const UNUSED: u64 = u64::MAX;

const NO_KEY: Key = Key {
    len: 0,
    cofs: 0,
    gen: 0,
    dirty: false,
};

/// One leaf, inline in the leaves' array: its keys' starts, ascending,
/// and the keys.
#[derive(Clone, Debug)]
struct Leaf {
    starts: [u64; LEAF_MAX],
    keys: [Key; LEAF_MAX],
    len: u32,
}

impl Leaf {
    fn empty() -> Leaf {
        Leaf {
            starts: [UNUSED; LEAF_MAX],
            keys: [NO_KEY; LEAF_MAX],
            len: 0,
        }
    }

    #[inline]
    fn n(&self) -> usize {
        self.len as usize
    }

    /// How many of the leaf's keys start before `x`: a count over the
    /// whole (short) array, whose loads do not wait on each other as a
    /// bisection's do. The keys' lines are asked for meanwhile: the caller
    /// reads the key at the rank next.
    #[inline]
    fn rank(&self, x: u64) -> usize {
        crate::sim::prefetch(self.keys.as_ptr(), std::mem::size_of_val(&self.keys));
        self.starts.iter().map(|&s| (s < x) as u32).sum::<u32>() as usize
    }

    /// Bring the leaf's starts into the cache (its keys' lines are asked
    /// for by the search itself).
    #[inline]
    fn prefetch(&self) {
        crate::sim::prefetch(self.starts.as_ptr(), std::mem::size_of_val(&self.starts));
    }

    /// The slot of the key starting at `x`, or where it would go.
    #[inline]
    fn find(&self, x: u64) -> Result<usize, usize> {
        let i = self.rank(x);
        if i < self.n() && self.starts[i] == x {
            Ok(i)
        } else {
            Err(i)
        }
    }

    fn insert_at(&mut self, i: usize, s: u64, k: Key) {
        let n = self.n();
        self.starts.copy_within(i..n, i + 1);
        self.keys.copy_within(i..n, i + 1);
        self.starts[i] = s;
        self.keys[i] = k;
        self.len += 1;
    }

    fn remove_at(&mut self, i: usize) -> Key {
        let n = self.n();
        let k = self.keys[i];
        self.starts.copy_within(i + 1..n, i);
        self.keys.copy_within(i + 1..n, i);
        self.starts[n - 1] = UNUSED;
        self.len -= 1;
        k
    }
}

/// Extents by start sector: an ordered map of `u64` to [`Key`] with the
/// operations the cache set needs.
#[derive(Clone, Debug)]
pub struct Index {
    /// The leaves in order: leaf `order[i]` holds the keys starting in
    /// `[lo[i], lo[i + 1])`; `lo[0]` is 0. A bound is at most its leaf's
    /// first start (it is not raised when that key goes).
    lo: Vec<u64>,
    order: Vec<u32>,
    /// The leaves where they were made (a split does not move them), and
    /// the slots of leaves that went, for the next split.
    leaves: Vec<Leaf>,
    spare: Vec<u32>,
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
            order: vec![0],
            leaves: vec![Leaf::empty()],
            spare: Vec::new(),
            len: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The place in `order` of the leaf whose range holds `x`.
    #[inline]
    fn place_of(&self, x: u64) -> usize {
        self.lo.partition_point(|&f| f <= x) - 1
    }

    #[inline]
    fn leaf(&self, place: usize) -> &Leaf {
        &self.leaves[self.order[place] as usize]
    }

    /// Ask for the leaf that holds `x` to be brought into the cache, ahead
    /// of a search for `x` (a hint: no effect on what the index holds).
    pub fn prefetch(&self, x: u64) {
        self.leaf(self.place_of(x)).prefetch();
    }

    /// The key starting at `s`.
    pub fn get(&self, s: u64) -> Option<&Key> {
        let l = self.leaf(self.place_of(s));
        l.find(s).ok().map(|i| &l.keys[i])
    }

    pub fn get_mut(&mut self, s: u64) -> Option<&mut Key> {
        let li = self.order[self.place_of(s)] as usize;
        let l = &mut self.leaves[li];
        l.find(s).ok().map(|i| &mut l.keys[i])
    }

    /// Insert (or replace) the key starting at `s`.
    pub fn insert(&mut self, s: u64, k: Key) {
        let mut p = self.place_of(s);
        let mut l = &mut self.leaves[self.order[p] as usize];
        let i = match l.find(s) {
            Ok(i) => {
                l.keys[i] = k;
                return;
            }
            Err(i) if l.n() < LEAF_MAX => i,
            Err(_) => {
                self.split(p);
                if s >= self.lo[p + 1] {
                    p += 1;
                }
                l = &mut self.leaves[self.order[p] as usize];
                l.rank(s)
            }
        };
        l.insert_at(i, s, k);
        self.len += 1;
    }

    /// `btree_split`: the upper half of a full leaf becomes a new leaf.
    fn split(&mut self, p: usize) {
        let n = match self.spare.pop() {
            Some(n) => n as usize,
            None => {
                self.leaves.push(Leaf::empty());
                self.leaves.len() - 1
            }
        };
        let li = self.order[p] as usize;
        let (l, nl) = if li < n {
            let (a, b) = self.leaves.split_at_mut(n);
            (&mut a[li], &mut b[0])
        } else {
            let (a, b) = self.leaves.split_at_mut(li);
            (&mut b[0], &mut a[n])
        };
        let (mid, n0) = (l.n() / 2, l.n());
        nl.starts[..n0 - mid].copy_from_slice(&l.starts[mid..n0]);
        nl.keys[..n0 - mid].copy_from_slice(&l.keys[mid..n0]);
        nl.len = (n0 - mid) as u32;
        l.starts[mid..n0].fill(UNUSED);
        l.len = mid as u32;
        self.lo.insert(p + 1, nl.starts[0]);
        self.order.insert(p + 1, n as u32);
    }

    /// Remove the key starting at `s`.
    pub fn remove(&mut self, s: u64) -> Option<Key> {
        let p = self.place_of(s);
        let l = &mut self.leaves[self.order[p] as usize];
        let i = l.find(s).ok()?;
        let k = l.remove_at(i);
        self.len -= 1;
        if l.len == 0 && self.order.len() > 1 {
            // the leaf goes; its range joins the leaf before it
            self.spare.push(self.order.remove(p));
            self.lo.remove(p);
            self.lo[0] = 0;
        }
        Some(k)
    }

    /// The keys starting before `e`, in descending order of start.
    pub fn rev_before(&self, e: u64) -> RevIter<'_> {
        let p = self.place_of(e);
        let slot = self.leaf(p).rank(e);
        RevIter { idx: self, p, slot }
    }

    /// The keys starting at or after `from`, in ascending order.
    pub fn iter_from(&self, from: u64) -> Iter<'_> {
        let p = self.place_of(from);
        let slot = self.leaf(p).rank(from);
        Iter { idx: self, p, slot }
    }

    /// Every key, in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            idx: self,
            p: 0,
            slot: 0,
        }
    }

    /// Keep only the keys `f` keeps. Every key is visited once, leaf by
    /// leaf in the order the leaves were made (not in key order); empty
    /// leaves go.
    pub fn retain(&mut self, mut f: impl FnMut(u64, &Key) -> bool) {
        let mut len = 0;
        let mut emptied = false;
        for (i, l) in self.leaves.iter_mut().enumerate() {
            if l.len == 0 {
                // a spare leaf, or the only one
                continue;
            }
            let mut w = 0;
            for r in 0..l.n() {
                if f(l.starts[r], &l.keys[r]) {
                    if w != r {
                        l.starts[w] = l.starts[r];
                        l.keys[w] = l.keys[r];
                    }
                    w += 1;
                }
            }
            let n = l.n();
            l.starts[w..n].fill(UNUSED);
            l.len = w as u32;
            len += w;
            if w == 0 {
                emptied = true;
                self.spare.push(i as u32);
            }
        }
        self.len = len;
        if emptied {
            let leaves = &self.leaves;
            let mut keep = self.order.iter().map(|&li| leaves[li as usize].len > 0);
            self.lo.retain(|_| keep.next().expect("one bound a leaf"));
            self.order.retain(|&li| leaves[li as usize].len > 0);
            if self.order.is_empty() {
                // keep one (empty) leaf
                let li = self.spare.pop().expect("a spare leaf");
                self.order.push(li);
                self.lo.push(0);
            }
            self.lo[0] = 0;
        }
    }
}

/// A walk down the index (see [`Index::rev_before`]).
pub struct RevIter<'a> {
    idx: &'a Index,
    p: usize,
    slot: usize,
}

impl<'a> Iterator for RevIter<'a> {
    type Item = (u64, &'a Key);

    #[inline]
    fn next(&mut self) -> Option<(u64, &'a Key)> {
        while self.slot == 0 {
            if self.p == 0 {
                return None;
            }
            self.p -= 1;
            self.slot = self.idx.leaf(self.p).n();
        }
        self.slot -= 1;
        let l = self.idx.leaf(self.p);
        Some((l.starts[self.slot], &l.keys[self.slot]))
    }
}

/// A walk up the index (see [`Index::iter_from`]).
pub struct Iter<'a> {
    idx: &'a Index,
    p: usize,
    slot: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (u64, &'a Key);

    #[inline]
    fn next(&mut self) -> Option<(u64, &'a Key)> {
        loop {
            let li = *self.idx.order.get(self.p)?;
            let l = &self.idx.leaves[li as usize];
            if self.slot < l.n() {
                let i = self.slot;
                self.slot += 1;
                return Some((l.starts[i], &l.keys[i]));
            }
            self.p += 1;
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
            dirty: len.is_multiple_of(2),
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
