//! The cache set's index and its buckets (drivers/md/bcache/btree.c,
//! extents.c, alloc.c): keys as extents of the backing device, each
//! pointing into one bucket of the cache device; bucket allocation
//! (`bch_bucket_alloc`, `bch_alloc_sectors`, the allocator's
//! `invalidate_buckets_lru`), and garbage collection (`bch_btree_gc`,
//! `btree_gc_start`, the key marking, `bch_btree_gc_finish`).
//!
//! The mechanism of seed 004 lives here, so the accounting is the
//! kernel's: `avail_nbuckets` drops with every bucket allocated and is
//! recounted only at GC, where a bucket counts as available only if no
//! live dirty key points into it; cleaning dirty keys (writeback) marks
//! nothing, so a bucket that was written with dirty data stays in use until
//! a GC finds it clean. `in_use` is `(nbuckets − avail) · 100 / nbuckets`.
//!
//! Memory is one entry per key (an extent written by one IO, or what is
//! left of it after overwrites) and a few bytes per bucket; nothing per
//! sector or per IO.
//!
//! The index is the btree's leaves as sorted arrays (`bset.rs`); the btree
//! nodes' own buckets are counted (one bucket per `KEYS_PER_NODE` keys,
//! allocated as metadata), their IO is not. Moving GC (`copy_gc_enabled`, off by
//! default) and the prio/LRU rescaling of clean buckets are not modelled:
//! the allocator takes reclaimable buckets emptiest first.

use super::bset::Index;

/// `GC_MARK_*`: what GC found in a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mark {
    /// Nothing live (0).
    Free,
    /// Clean data only (`GC_MARK_RECLAIMABLE`).
    Reclaimable,
    /// Some dirty data (`GC_MARK_DIRTY`).
    Dirty,
    /// Journal, prios, uuids, btree nodes (`GC_MARK_METADATA`).
    Metadata,
}

/// `struct bucket`.
#[derive(Clone, Copy, Debug)]
pub struct Bucket {
    pub gen: u8,
    pub mark: Mark,
    /// `GC_SECTORS_USED`: live sectors at the last GC (a whole bucket from
    /// its allocation to the next GC).
    pub sectors_used: u32,
    /// `pin`: an open bucket being filled, or one on the free lists.
    pub pin: bool,
}

/// A key: the extent `[start, start + len)` of the backing device, cached at
/// cache sector `cofs`, valid while its bucket's gen is `gen`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub len: u32,
    pub cofs: u64,
    pub gen: u8,
    pub dirty: bool,
}

/// `KEY_SIZE_BITS`: a key is at most 65535 sectors.
const MAX_KEY_SECTORS: u64 = (1 << 16) - 1;
/// Keys a btree node (one bucket, at most 256 KiB of keys: 24-byte keys)
/// holds on average, at three quarters full.
pub const KEYS_PER_NODE: u64 = 256 * 1024 / 24 * 3 / 4;
/// `MAX_OPEN_BUCKETS`.
const MAX_OPEN_BUCKETS: usize = 128;

/// An open bucket (`struct open_bucket`): the write point it last served,
/// its bucket and what is left of it.
#[derive(Clone, Copy, Debug)]
struct OpenBucket {
    write_point: u32,
    bucket: u32,
    sectors_free: u64,
}

/// The cache set: its buckets, the index of one backing device and the
/// allocator.
pub struct CacheSet {
    pub bucket_size: u64,
    /// log2 of `bucket_size` (a power of two): a cache sector's bucket is
    /// a shift away.
    bucket_bits: u32,
    pub nbuckets: u64,
    pub buckets: Vec<Bucket>,
    pub avail_nbuckets: u64,
    /// `gc_stats.in_use`.
    pub in_use: i64,
    /// `sectors_to_gc`: GC runs when it goes negative.
    pub sectors_to_gc: i64,
    /// `invalidate_needs_gc`: the allocator found nothing to invalidate.
    pub needs_gc: bool,
    /// The index: extents by start sector.
    pub keys: Index,
    /// Σ live dirty key sectors (`bcache_dev_sectors_dirty`).
    pub dirty_sectors: u64,
    /// Invalidated buckets ready to allocate (`free[RESERVE_NONE]` and
    /// `free_inc`), pinned.
    free: std::collections::VecDeque<u32>,
    /// How many the allocator invalidates at once (`free_inc` + `free`).
    free_batch: usize,
    open: Vec<OpenBucket>,
    /// Buckets holding btree nodes.
    btree_buckets: Vec<u32>,
    pub gc_count: u64,
    /// Scratch space for the keys an insert or a writeback meets (kept to
    /// spare an allocation each time).
    hit: Vec<(u64, Key)>,
    /// The allocator's candidates, kept likewise.
    cand: Vec<(u32, u32)>,
}

impl CacheSet {
    /// A new cache set over a cache of `cache_sectors` in buckets of
    /// `bucket_size` sectors (make-bcache; `run_cache_set` for a new set:
    /// journal buckets `clamp(nbuckets >> 7, 2, 256)`, two prio buckets
    /// per `prio_buckets`, the uuid bucket and the btree root; then
    /// `bch_initial_gc_finish`).
    pub fn new(cache_sectors: u64, bucket_size: u64) -> CacheSet {
        assert!(bucket_size.is_power_of_two(), "bucket_size {bucket_size}");
        let nbuckets = (cache_sectors / bucket_size).max(8);
        let mut buckets = vec![
            Bucket {
                gen: 0,
                mark: Mark::Free,
                sectors_used: 0,
                pin: false,
            };
            nbuckets as usize
        ];
        let journal = (nbuckets >> 7).clamp(2, 256);
        // prios: 8 bytes of header, 3 bytes per bucket
        let prios = nbuckets.div_ceil((bucket_size * 512 - 8) / 3);
        let meta = journal + 2 * prios + 1;
        for b in buckets.iter_mut().take(meta as usize) {
            b.mark = Mark::Metadata;
        }
        let free = (nbuckets.next_power_of_two() >> 10).max(1) as usize;
        let mut c = CacheSet {
            bucket_size,
            bucket_bits: bucket_size.trailing_zeros(),
            nbuckets,
            buckets,
            avail_nbuckets: 0,
            in_use: 0,
            sectors_to_gc: 0,
            needs_gc: false,
            keys: Index::new(),
            dirty_sectors: 0,
            free: Default::default(),
            free_batch: free * 5,
            open: Vec::new(),
            btree_buckets: Vec::new(),
            gc_count: 0,
            hit: Vec::new(),
            cand: Vec::new(),
        };
        // the btree root
        if let Some(b) = c.pick_invalidate() {
            c.buckets[b as usize].mark = Mark::Metadata;
            c.btree_buckets.push(b);
        }
        c.gc_finish(&[]);
        // the initial in_use is 0 until the first allocation
        c.in_use = 0;
        c
    }

    /// `bch_update_bucket_in_use`.
    fn update_in_use(&mut self) {
        self.in_use = ((self.nbuckets - self.avail_nbuckets) * 100 / self.nbuckets) as i64;
    }

    /// The key is live: its bucket still has the gen it was written with.
    #[inline]
    pub fn live(&self, k: &Key) -> bool {
        self.buckets[(k.cofs >> self.bucket_bits) as usize].gen == k.gen
    }

    /// An unpinned bucket the allocator may invalidate
    /// (`bch_can_invalidate_bucket`), emptiest first, lowest index among
    /// equals. None: the allocator would wait for GC.
    fn pick_invalidate(&self) -> Option<u32> {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, b)| !b.pin && matches!(b.mark, Mark::Free | Mark::Reclaimable))
            .min_by_key(|(i, b)| (b.sectors_used, *i))
            .map(|(i, _)| i as u32)
    }

    /// The allocator thread (`bch_allocator_thread`,
    /// `invalidate_buckets_lru`): invalidate up to a batch of buckets
    /// (their gens move on, so the clean keys in them go stale) onto the
    /// free list. Sets `needs_gc` when nothing could be invalidated.
    fn refill_free(&mut self) {
        if self.needs_gc {
            return;
        }
        let mut cand = std::mem::take(&mut self.cand);
        cand.clear();
        cand.extend(
            self.buckets
                .iter()
                .enumerate()
                .filter(|(_, b)| !b.pin && matches!(b.mark, Mark::Free | Mark::Reclaimable))
                .map(|(i, b)| (b.sectors_used, i as u32)),
        );
        if cand.is_empty() {
            self.needs_gc = true;
            self.cand = cand;
            return;
        }
        // the emptiest `free_batch`, in order (the pairs are distinct: a
        // full sort's first `free_batch`)
        if cand.len() > self.free_batch {
            cand.select_nth_unstable(self.free_batch);
            cand.truncate(self.free_batch);
        }
        cand.sort_unstable();
        for &(_, b) in cand.iter() {
            let bk = &mut self.buckets[b as usize];
            bk.gen = bk.gen.wrapping_add(1);
            bk.pin = true;
            self.free.push_back(b);
        }
        self.cand = cand;
    }

    /// `bch_bucket_alloc`: a bucket off the free list, marked for data or
    /// metadata; `avail_nbuckets` drops. None: no bucket now.
    pub fn bucket_alloc(&mut self, meta: bool) -> Option<u32> {
        if self.free.is_empty() {
            self.refill_free();
        }
        let b = self.free.pop_front()?;
        let bk = &mut self.buckets[b as usize];
        bk.sectors_used = self.bucket_size as u32;
        bk.mark = if meta {
            Mark::Metadata
        } else {
            Mark::Reclaimable
        };
        bk.pin = !meta;
        if self.avail_nbuckets > 0 {
            self.avail_nbuckets -= 1;
            self.update_in_use();
        }
        Some(b)
    }

    /// `__bch_bucket_free`.
    fn bucket_free(&mut self, b: u32) {
        let bk = &mut self.buckets[b as usize];
        bk.mark = Mark::Free;
        bk.sectors_used = 0;
        if self.avail_nbuckets < self.nbuckets {
            self.avail_nbuckets += 1;
            self.update_in_use();
        }
    }

    /// `bch_alloc_sectors`: up to `sectors` of cache space for write point
    /// `wp` from its open bucket (a new one when it is full). Returns the
    /// cache sector and how many sectors it got, or None when no bucket
    /// can be had now. `dirty` marks the bucket `GC_MARK_DIRTY` at once
    /// (`bch_data_insert_start`).
    pub fn alloc_sectors(&mut self, wp: u32, sectors: u64, dirty: bool) -> Option<(u64, u64)> {
        // pick_data_bucket: the write point's own, else the least recently
        // used open bucket
        let i = match self.open.iter().position(|o| o.write_point == wp) {
            Some(i) => i,
            None if self.open.len() < MAX_OPEN_BUCKETS => {
                self.open.push(OpenBucket {
                    write_point: wp,
                    bucket: 0,
                    sectors_free: 0,
                });
                self.open.len() - 1
            }
            None => 0,
        };
        if self.open[i].sectors_free == 0 {
            let b = self.bucket_alloc(false)?;
            self.open[i].bucket = b;
            self.open[i].sectors_free = self.bucket_size;
        }
        let mut o = self.open.remove(i);
        o.write_point = wp;
        let n = sectors.min(o.sectors_free);
        let cofs = o.bucket as u64 * self.bucket_size + (self.bucket_size - o.sectors_free);
        o.sectors_free -= n;
        if dirty {
            self.buckets[o.bucket as usize].mark = Mark::Dirty;
        }
        if o.sectors_free == 0 {
            // done with it: the key's reference is the last
            self.buckets[o.bucket as usize].pin = false;
        }
        // to the tail of the LRU
        self.open.push(o);
        Some((cofs, n))
    }

    /// The gen of the bucket holding cache sector `cofs`.
    pub fn gen_at(&self, cofs: u64) -> u8 {
        self.buckets[(cofs >> self.bucket_bits) as usize].gen
    }

    /// Cut the index's keys out of `[s, e)` (`bch_extent_insert_fixup`'s
    /// overlap handling); the dirty live sectors removed are taken off the
    /// dirty count. Returns the key that then starts last before `s` (the
    /// head left of a key across `s`, or the first key the walk down met
    /// that ends at or before `s`), which spares the insert a search.
    fn cut(&mut self, s: u64, e: u64) -> Option<(u64, Key)> {
        let mut hit = std::mem::take(&mut self.hit);
        hit.clear();
        let mut before = None;
        for (ks, k) in self.keys.rev_before(e) {
            if ks + k.len as u64 <= s {
                before = Some((ks, *k));
                break;
            }
            hit.push((ks, *k));
        }
        for &(ks, k) in hit.iter() {
            self.keys.remove(ks);
            let ke = ks + k.len as u64;
            let live = self.live(&k);
            if k.dirty && live {
                self.dirty_sectors -= ke.min(e) - ks.max(s);
            }
            if ks < s {
                let head = Key {
                    len: (s - ks) as u32,
                    ..k
                };
                self.keys.insert(ks, head);
                before = Some((ks, head));
            }
            if ke > e {
                self.keys.insert(
                    e,
                    Key {
                        len: (ke - e) as u32,
                        cofs: k.cofs + (e - ks),
                        ..k
                    },
                );
            }
        }
        self.hit = hit;
        before
    }

    /// Insert the key `[s, s + len)` at cache sector `cofs`, replacing what
    /// it overlaps; a key continuing the one before it in both spaces is
    /// merged into it (`bch_extent_merge`). Returns whether a new btree
    /// node's bucket could not be had.
    pub fn insert(&mut self, s: u64, len: u64, cofs: u64, dirty: bool) {
        let before = self.cut(s, s + len);
        let gen = self.gen_at(cofs);
        if dirty {
            self.dirty_sectors += len;
        }
        if let Some((ps, p)) = before {
            if ps + p.len as u64 == s
                && p.cofs + p.len as u64 == cofs
                && p.gen == gen
                && p.dirty == dirty
                && !cofs.is_multiple_of(self.bucket_size)
                && p.len as u64 + len <= MAX_KEY_SECTORS
            {
                self.keys.get_mut(ps).expect("the key before").len += len as u32;
                return;
            }
        }
        self.keys.insert(
            s,
            Key {
                len: len as u32,
                cofs,
                gen,
                dirty,
            },
        );
        // a btree node split: another bucket of metadata
        let want = (self.keys.len() as u64).div_ceil(KEYS_PER_NODE).max(1);
        if want > self.btree_buckets.len() as u64 {
            if let Some(b) = self.bucket_alloc(true) {
                self.btree_buckets.push(b);
            }
        }
    }

    /// The live keys overlapping `[s, e)`, in ascending order, into `out`
    /// (cleared first): one walk down from `e`.
    pub fn lookup(&self, s: u64, e: u64, out: &mut Vec<(u64, Key)>) {
        out.clear();
        for (ks, k) in self.keys.rev_before(e) {
            if ks + k.len as u64 <= s {
                break;
            }
            if self.live(k) {
                out.push((ks, *k));
            }
        }
        out.reverse();
    }

    /// A read-miss fill (`replace`): insert only where nothing is cached.
    pub fn insert_fill(&mut self, s: u64, len: u64, cofs: u64) {
        let e = s + len;
        // the gaps between the live keys over [s, e), found walking down
        // from e (the keys are disjoint), inserted in ascending order
        let mut gaps: crate::sim::vec1::Vec1<(u64, u64)> = Default::default();
        let mut hi = e;
        for (ks, k) in self.keys.rev_before(e) {
            let ke = ks + k.len as u64;
            if ke <= s {
                break;
            }
            if !self.live(k) {
                continue;
            }
            if ke < hi {
                gaps.push((ke, hi));
            }
            hi = hi.min(ks);
        }
        if hi > s {
            gaps.push((s, hi));
        }
        for &(a, b) in gaps.as_slice().iter().rev() {
            self.insert(a, b - a, cofs + (a - s), false);
        }
    }

    /// `bch_data_invalidate`: a bypassed write drops what is cached of its
    /// range.
    pub fn invalidate(&mut self, s: u64, len: u64) {
        self.cut(s, s + len);
    }

    /// `write_dirty_finish`: the writeback of key `w` (`[s, s + len)` at
    /// `cofs`) is done; the parts of the index that still are that key's
    /// data become clean (`bch_btree_insert` with the key as the replace
    /// key). Returns the sectors cleaned: 0 is a writeback collision.
    pub fn writeback_done(&mut self, s: u64, len: u64, cofs: u64, gen: u8) -> u64 {
        let e = s + len;
        let mut hit = std::mem::take(&mut self.hit);
        hit.clear();
        for (ks, k) in self.keys.rev_before(e) {
            if ks + k.len as u64 <= s {
                break;
            }
            // the same data: the same place in the same bucket generation
            if k.dirty && k.gen == gen && k.cofs as i64 - ks as i64 == cofs as i64 - s as i64 {
                hit.push((ks, *k));
            }
        }
        let mut cleaned = 0;
        for &(ks, k) in hit.iter() {
            let ke = ks + k.len as u64;
            let (a, b) = (ks.max(s), ke.min(e));
            if self.live(&k) {
                self.dirty_sectors -= b - a;
                cleaned += b - a;
            }
            if (a, b) == (ks, ke) {
                // all of it: the key turns clean where it is
                self.keys.get_mut(ks).expect("the key").dirty = false;
                continue;
            }
            self.keys.remove(ks);
            if ks < a {
                self.keys.insert(
                    ks,
                    Key {
                        len: (a - ks) as u32,
                        ..k
                    },
                );
            }
            self.keys.insert(
                a,
                Key {
                    len: (b - a) as u32,
                    cofs: k.cofs + (a - ks),
                    dirty: false,
                    ..k
                },
            );
            if ke > b {
                self.keys.insert(
                    b,
                    Key {
                        len: (ke - b) as u32,
                        cofs: k.cofs + (b - ks),
                        ..k
                    },
                );
            }
        }
        self.hit = hit;
        cleaned
    }

    /// Inserted data counts toward the next GC (`bch_data_insert_start`).
    /// Returns whether GC should run.
    pub fn count_insert(&mut self, sectors: u64) -> bool {
        self.sectors_to_gc -= sectors as i64;
        self.sectors_to_gc < 0
    }

    /// Whether GC should run (`gc_should_run`).
    pub fn gc_should_run(&self) -> bool {
        self.needs_gc || self.sectors_to_gc < 0
    }

    /// `bch_btree_gc`: recount every bucket from the live keys (stale keys
    /// are dropped), keep the buckets of `writeback` keys (the writeback
    /// thread's key buffer: cache sectors) dirty, fit the btree's buckets
    /// to the keys, and recount `avail_nbuckets` and `in_use`.
    pub fn gc(&mut self, writeback: &[u64]) {
        // btree_gc_start
        for b in self.buckets.iter_mut() {
            if !b.pin && b.mark != Mark::Metadata {
                b.mark = Mark::Free;
                b.sectors_used = 0;
            }
        }
        // the mark pass (`btree_gc_mark_node`, `__bch_btree_mark_key`):
        // one walk over the leaves, which also drops the stale keys
        let bits = self.bucket_bits;
        let buckets = &mut self.buckets;
        self.keys.retain(|_, k| {
            let b = &mut buckets[(k.cofs >> bits) as usize];
            if b.gen != k.gen {
                return false;
            }
            if b.mark != Mark::Metadata {
                b.sectors_used += k.len;
                let m = if k.dirty {
                    Mark::Dirty
                } else {
                    Mark::Reclaimable
                };
                b.mark = b.mark.max(m);
            }
            true
        });
        // the btree shrinks or grows with its keys
        let want = (self.keys.len() as u64).div_ceil(KEYS_PER_NODE).max(1) as usize;
        while self.btree_buckets.len() > want {
            let b = self.btree_buckets.pop().expect("btree bucket");
            self.bucket_free(b);
        }
        self.gc_finish(writeback);
    }

    /// `bch_btree_gc_finish`.
    fn gc_finish(&mut self, writeback: &[u64]) {
        self.sectors_to_gc = (self.bucket_size * self.nbuckets / 16) as i64;
        for &c in writeback {
            let b = &mut self.buckets[(c >> self.bucket_bits) as usize];
            if b.mark != Mark::Metadata {
                b.mark = Mark::Dirty;
            }
        }
        self.needs_gc = false;
        self.avail_nbuckets = self
            .buckets
            .iter()
            .filter(|b| !b.pin && matches!(b.mark, Mark::Free | Mark::Reclaimable))
            .count() as u64;
        self.update_in_use();
        self.gc_count += 1;
    }

    /// The first live dirty keys at or after `from` (up to `end`), at most
    /// `n`, skipping those `skip` says are taken: `(start, key)`. Also
    /// returns where the scan stopped (`last_scanned`: the end of the last
    /// key looked at, or `end` when it got there).
    pub fn scan_dirty(
        &self,
        from: u64,
        end: u64,
        n: usize,
        skip: impl Fn(u64) -> bool,
        out: &mut Vec<(u64, Key)>,
    ) -> u64 {
        let mut last = from;
        for (ks, k) in self.keys.iter_from(from) {
            if ks >= end {
                break;
            }
            if out.len() >= n {
                return last;
            }
            last = ks + k.len as u64;
            if k.dirty && self.live(k) && !skip(ks) {
                out.push((ks, *k));
            }
        }
        if out.len() >= n {
            return last;
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 64 buckets of 16 sectors.
    fn small() -> CacheSet {
        CacheSet::new(64 * 16, 16)
    }

    #[test]
    fn a_new_set_has_its_metadata_in_use_and_the_rest_available() {
        let c = small();
        // journal 2 + prios 2 + uuid 1, and the btree root
        assert_eq!(c.avail_nbuckets, 64 - 6);
        assert_eq!(c.in_use, 0);
        assert_eq!(c.sectors_to_gc, 64);
    }

    #[test]
    fn every_allocated_bucket_is_in_use_until_gc_finds_it_clean() {
        let mut c = small();
        // four 8-sector dirty writes fill two buckets
        for i in 0..4 {
            let (cofs, n) = c.alloc_sectors(1, 8, true).unwrap();
            assert_eq!(n, 8);
            c.insert(i * 100, 8, cofs, true);
        }
        assert_eq!(c.dirty_sectors, 32);
        assert_eq!(c.avail_nbuckets, 64 - 8);
        // writeback cleans three of the four keys: nothing changes until GC
        for i in 0..3u64 {
            let k = *c.keys.get(i * 100).unwrap();
            assert_eq!(c.writeback_done(i * 100, 8, k.cofs, k.gen), 8);
        }
        assert_eq!(c.dirty_sectors, 8);
        assert_eq!(c.avail_nbuckets, 64 - 8);
        // GC: the bucket with only clean keys is available again, the one
        // with one dirty key of two is not; nor are the three buckets the
        // allocator holds invalidated on its free list (pinned)
        c.gc(&[]);
        assert_eq!(c.avail_nbuckets, 64 - 6 - 1 - 3);
        assert_eq!(c.in_use, 10 * 100 / 64);
    }

    #[test]
    fn overwrites_split_keys_and_keep_the_dirty_count() {
        let mut c = small();
        let (a, _) = c.alloc_sectors(1, 16, true).unwrap();
        c.insert(0, 16, a, true);
        let (b, _) = c.alloc_sectors(1, 4, true).unwrap();
        c.insert(6, 4, b, true);
        assert_eq!(c.dirty_sectors, 16);
        let ks: Vec<_> = c.keys.iter().map(|(s, k)| (s, k.len, k.cofs)).collect();
        assert_eq!(ks, vec![(0, 6, a), (6, 4, b), (10, 6, a + 10)]);
        // the writeback of the old key cleans only what is still its data
        assert_eq!(c.writeback_done(0, 16, a, c.gen_at(a)), 12);
        assert_eq!(c.dirty_sectors, 4);
        c.invalidate(5, 3);
        assert_eq!(c.dirty_sectors, 2);
    }

    /// An insert continuing the key before it in both spaces merges into
    /// it, found by the cut (the key the walk down stopped at, or the head
    /// it left of a key across the start); the lookup gives the live keys
    /// over a range in ascending order.
    #[test]
    fn inserts_merge_with_the_key_the_cut_leaves_before_them() {
        let mut c = small();
        let (a, _) = c.alloc_sectors(1, 8, true).unwrap();
        c.insert(0, 8, a, true);
        let (b, _) = c.alloc_sectors(1, 4, true).unwrap();
        assert_eq!(b, a + 8);
        // [8, 12) at a + 8 continues [0, 8) at a: one key
        c.insert(8, 4, b, true);
        let ks: Vec<_> = c.keys.iter().map(|(s, k)| (s, k.len, k.cofs)).collect();
        assert_eq!(ks, vec![(0, 12, a)]);
        // [6, 10) at a + 12: the head [0, 6) stays, and the new key does
        // not continue it (the head's data ends at a + 6)
        let (d, _) = c.alloc_sectors(1, 4, true).unwrap();
        c.insert(6, 4, d, true);
        let ks: Vec<_> = c.keys.iter().map(|(s, k)| (s, k.len, k.cofs)).collect();
        assert_eq!(ks, vec![(0, 6, a), (6, 4, d), (10, 2, a + 10)]);
        assert_eq!(c.dirty_sectors, 12);
        let mut out = Vec::new();
        c.lookup(5, 11, &mut out);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 6, 10]);
        c.lookup(12, 100, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn allocation_starves_until_gc_when_everything_is_dirty() {
        let mut c = small();
        let mut n = 0;
        while let Some((cofs, got)) = c.alloc_sectors(1, 16, true) {
            c.insert(n * 16, got, cofs, true);
            n += 1;
        }
        assert!(c.needs_gc);
        // every available bucket
        assert_eq!(n, 58);
        // everything written back: GC frees all of it
        let all: Vec<(u64, Key)> = c.keys.iter().map(|(s, k)| (s, *k)).collect();
        for (s, k) in all {
            c.writeback_done(s, k.len as u64, k.cofs, k.gen);
        }
        c.gc(&[]);
        assert!(!c.needs_gc);
        assert!(c.alloc_sectors(1, 16, true).is_some());
    }

    #[test]
    fn clean_buckets_are_reused_and_their_keys_go_stale() {
        let mut c = small();
        let mut n = 0;
        while let Some((cofs, got)) = c.alloc_sectors(1, 16, false) {
            c.insert(n * 16, got, cofs, false);
            n += 1;
            if n == 200 {
                break;
            }
        }
        // clean data never starves the allocator
        assert_eq!(n, 200);
        let live = c.keys.iter().filter(|(_, k)| c.live(k)).count();
        assert!(live < 64, "{live}");
    }

    #[test]
    fn the_dirty_scan_walks_in_ascending_order_and_stops_at_n() {
        let mut c = small();
        for s in [500u64, 100, 300, 200, 400] {
            let (cofs, _) = c.alloc_sectors(1, 4, true).unwrap();
            c.insert(s, 4, cofs, true);
        }
        let mut out = Vec::new();
        let last = c.scan_dirty(150, u64::MAX, 2, |_| false, &mut out);
        assert_eq!(out.iter().map(|x| x.0).collect::<Vec<_>>(), vec![200, 300]);
        assert_eq!(last, 304);
        out.clear();
        assert_eq!(c.scan_dirty(305, 1000, 10, |_| false, &mut out), 1000);
        assert_eq!(out.len(), 2);
    }
}
