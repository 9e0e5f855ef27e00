//! ext4's extent status tree (fs/ext4/extents_status.c) as far as a
//! buffered write pays for it: `ext4_es_lookup_extent`, an rb-tree walk
//! per inode (`i_es_tree`) with a one-entry cache (`cache_es`) in front.
//!
//! A write into a page new in the cache maps its buffer through
//! `ext4_da_write_begin` → `ext4_block_write_begin` → `ext4_da_get_block_prep`
//! → `ext4_da_map_blocks`, which looks the block up in the tree first. A
//! file fallocated (fio's layout) is one unwritten extent; each writeback
//! conversion (`ext4_convert_unwritten_extents` → `ext4_es_insert_extent`)
//! splits out a written entry, and written neighbours merge
//! (`ext4_es_try_to_merge_left/right`). Sequential writes keep the tree at a
//! few entries and hit `cache_es`; random writes leave one written entry
//! between every two unwritten runs, so a tree of ~2 entries per unwritten
//! run, and a lookup at a random block misses `cache_es` and walks the tree
//! from its root, one `struct extent_status` (40 bytes, one cache line) a
//! level, none of them cached. The tree's entries are the unwritten runs the
//! ext4 model keeps (`Ext4Sb::unwritten`) and the written gaps between them.
//!
//! On the host rig (Linux 6.18, 2-CPU KVM guest, AMD EPYC; perf over
//! `examples/fio/live-randwrite-{1,8}.toml`, docs/validation.md)
//! `ext4_es_lookup_extent` costs 2.0-2.2 µs a write with eight random
//! writers and 0.05 µs with eight sequential ones; the trees then hold
//! ~50k entries each (`/proc/fs/ext4/DEV/es_shrinker_info`), a 16-node
//! walk: 116-135 ns a node (`machine.cost.cache_miss`, 120 ns). One random
//! writer pays up to 1.9 µs while its first pass fragments the tree, and
//! nothing once the file is converted.

use crate::kernel::{InodeId, Kernel};
use crate::mm::filemap::RangeSet;
use crate::sim::Ns;

/// The entry of an extent status tree over pages `[0, span)` whose
/// unwritten runs are `u` that holds page `p` (`[start, end)`), and how many
/// entries the tree has: each unwritten run, and each written gap before,
/// between and after them.
pub fn ext4_es_entry(u: &RangeSet, span: u64, p: u64) -> ((u64, u64), u64) {
    let runs = u.ranges();
    let Some((&(first, _), &(_, last))) = runs.first().zip(runs.last()) else {
        return ((0, span.max(p + 1)), 1);
    };
    let n = 2 * runs.len() as u64 - 1 + u64::from(first > 0) + u64::from(last < span);
    let i = runs.partition_point(|&(_, b)| b <= p);
    let entry = match runs.get(i) {
        Some(&(a, b)) if a <= p => (a, b),
        next => {
            let start = if i > 0 { runs[i - 1].1 } else { 0 };
            let end = next.map_or(span.max(p + 1), |&(a, _)| a);
            (start, end)
        }
    };
    (entry, n)
}

/// Nodes a successful search visits in a red-black tree of `n` entries:
/// about its height when balanced, log2(n) + 1.
pub fn rb_search_depth(n: u64) -> u64 {
    u64::from(u64::BITS - n.leading_zeros())
}

impl Kernel {
    /// `ext4_da_map_blocks` of pages `[p0, p1)` of `ino`: one
    /// `ext4_es_lookup_extent` per page, each served by `cache_es` while
    /// the page lies in the entry the previous lookup found, otherwise a
    /// walk from the root at `machine.cost.cache_miss` a node. Only a tree
    /// of a file with unwritten extents is modelled (a delalloc file's
    /// tree of delayed and written entries is taken as small and cached).
    pub fn ext4_da_map_blocks_cost(&mut self, ino: InodeId, p0: u64, p1: u64) -> Ns {
        let miss = self.sc.machine.cost.cache_miss;
        let span = self.inodes[ino].nr_pages_span;
        let e = self.sbs[self.inodes[ino].sb as usize].ext4_mut();
        let Some(u) = e.unwritten.get(&ino) else {
            e.es_cache.remove(&ino);
            return 0;
        };
        let mut cost = 0;
        let mut p = p0;
        while p < p1 {
            let (entry, n) = ext4_es_entry(u, span, p);
            if e.es_cache.get(&ino) != Some(&entry) {
                cost += rb_search_depth(n) * miss;
                e.es_cache.insert(ino, entry);
            }
            p = entry.1.max(p + 1);
        }
        cost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(v: &[(u64, u64)]) -> RangeSet {
        let mut u = RangeSet::default();
        for &(a, b) in v {
            u.insert(a, b);
        }
        u
    }

    #[test]
    fn entries_are_unwritten_runs_and_the_written_gaps_between() {
        // fallocated: one unwritten extent over the file
        let u = runs(&[(0, 100)]);
        assert_eq!(ext4_es_entry(&u, 100, 7), ((0, 100), 1));
        // page 50 converted: unwritten, written, unwritten
        let u = runs(&[(0, 50), (51, 100)]);
        assert_eq!(ext4_es_entry(&u, 100, 50), ((50, 51), 3));
        assert_eq!(ext4_es_entry(&u, 100, 60), ((51, 100), 3));
        // written at both ends too
        let u = runs(&[(10, 20), (30, 40)]);
        assert_eq!(ext4_es_entry(&u, 100, 5), ((0, 10), 5));
        assert_eq!(ext4_es_entry(&u, 100, 25), ((20, 30), 5));
        assert_eq!(ext4_es_entry(&u, 100, 90), ((40, 100), 5));
        assert_eq!(rb_search_depth(1), 1);
        assert_eq!(rb_search_depth(3), 2);
        assert_eq!(rb_search_depth(60_000), 16);
    }

    /// A sequential writer stays in the unwritten run it writes into and
    /// walks the tree once; a random one walks it at every write, deeper as
    /// conversions fragment it.
    #[test]
    fn random_writes_into_a_fragmented_file_walk_the_tree() {
        let sc = crate::scenario::Scenario::load_str(
            "[machine.cost]\ncache_miss = \"100ns\"\n[devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n[filesystems.f]\ndevice = \"loop0\"\n[jobs.dd]\nbs = \"1M\"\n",
            "t.toml",
            "t",
            &[],
        )
        .unwrap();
        let mut k = Kernel::new(sc, crate::trace::Tracer::disabled());
        let ino = k.create_inode(0);
        k.inodes[ino].nr_pages_span = 4096;
        k.ext4_mark_unwritten(ino, 0, 4096);
        let seq: Ns = (0..64)
            .map(|p| k.ext4_da_map_blocks_cost(ino, p, p + 1))
            .sum();
        assert_eq!(seq, 100, "one walk of a one-entry tree");
        // every other page of the first half converted: ~2k entries
        {
            let e = k.sbs[0].ext4_mut();
            let u = e.unwritten.get_mut(&ino).unwrap();
            for p in 0..1024 {
                u.remove(2 * p, 2 * p + 1);
            }
        }
        let a = k.ext4_da_map_blocks_cost(ino, 101, 102);
        let b = k.ext4_da_map_blocks_cost(ino, 1001, 1002);
        assert_eq!((a, b), (1200, 1200), "2048 entries: 12 nodes a walk");
        // the same entry again: cache_es
        assert_eq!(k.ext4_da_map_blocks_cost(ino, 1001, 1002), 0);
        // a multi-page write walks once per entry it crosses
        assert_eq!(k.ext4_da_map_blocks_cost(ino, 3000, 3010), 1200);
    }
}
