//! Page-cache accounting with per-inode extents (mm/filemap.c,
//! mm/page-writeback.c `folio_account_dirtied`, `__folio_start_writeback`,
//! `__folio_end_writeback`). No per-page objects: an inode keeps its dirty
//! pages as a set of ranges and counts the rest.

use crate::kernel::{InodeId, Kernel, Pid};
use crate::mm::page_alloc::Gfp;

/// Slots of an xarray node: 2^6 (`XA_CHUNK_SHIFT`, lib/xarray.c).
const XA_CHUNK_SHIFT: u32 = 6;

/// Levels of nodes an xarray holding indices `[0, span)` has: none for a
/// single entry at 0 (kept in the head), then one more for every factor
/// of 64.
pub fn xa_height(span: u64) -> u64 {
    let mut h = 0;
    while span > 1u64 << (XA_CHUNK_SHIFT * h as u32) && h < 11 {
        h += 1;
    }
    h
}

/// A set of disjoint half-open page ranges `[start, end)`, kept as a
/// sorted vector: inodes have few dirty ranges (an appending writer has
/// one), and an empty set allocates nothing.
#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    v: crate::sim::vec1::Vec1<(u64, u64)>,
}

impl RangeSet {
    /// Pages in the set.
    pub fn count(&self) -> u64 {
        self.v.as_slice().iter().map(|&(a, b)| b - a).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.v.is_empty() // no range is empty
    }
    /// The ranges, in order.
    pub fn ranges(&self) -> &[(u64, u64)] {
        self.v.as_slice()
    }
    /// Index of the first range whose end is after `x`.
    fn first_ending_after(&self, x: u64) -> usize {
        self.v.as_slice().partition_point(|&(_, b)| b <= x)
    }
    /// Pages of `[s, e)` already in the set.
    pub fn overlap(&self, s: u64, e: u64) -> u64 {
        let mut n = 0;
        for &(a, b) in &self.v.as_slice()[self.first_ending_after(s)..] {
            if a >= e {
                break;
            }
            n += b.min(e) - a.max(s);
        }
        n
    }
    /// Insert `[s, e)`; returns how many pages were newly added.
    #[inline]
    pub fn insert(&mut self, s: u64, e: u64) -> u64 {
        if s >= e {
            return 0;
        }
        // an appending writer: [s, e) continues the last range
        if let Some(last) = self.v.last_mut() {
            if last.1 == s {
                last.1 = e;
                return e - s;
            }
        }
        self.insert_merging(s, e)
    }
    /// `insert` of a range that does not continue the last one.
    fn insert_merging(&mut self, s: u64, e: u64) -> u64 {
        let before = self.overlap(s, e);
        if before == e - s {
            return 0; // already in the set
        }
        // ranges that touch or overlap [s, e) are merged into one
        let v = self.v.as_slice();
        let lo = v.partition_point(|&(_, b)| b < s);
        let mut hi = lo;
        let (mut ns, mut ne) = (s, e);
        while hi < v.len() && v[hi].0 <= e {
            ns = ns.min(v[hi].0);
            ne = ne.max(v[hi].1);
            hi += 1;
        }
        self.v.replace_range(lo, hi, (ns, ne));
        (e - s) - before
    }
    /// Remove and return the first contiguous run at or after `idx`, at most
    /// `max` pages long.
    pub fn take_from(&mut self, idx: u64, max: u64) -> Option<(u64, u64)> {
        let i = self.first_ending_after(idx);
        let &(a, b) = self.v.as_slice().get(i)?;
        let s = a.max(idx);
        let e = b.min(s + max);
        match (a < s, e < b) {
            (false, false) => {
                self.v.remove(i);
            }
            (true, false) => self.v.as_mut_slice()[i].1 = s,
            (false, true) => self.v.as_mut_slice()[i].0 = e,
            (true, true) => {
                self.v.as_mut_slice()[i].1 = s;
                self.v.insert(i + 1, (e, b));
            }
        }
        Some((s, e - s))
    }
    /// Remove `[s, e)`; returns how many pages were in the set.
    pub fn remove(&mut self, s: u64, e: u64) -> u64 {
        let mut n = 0;
        while let Some(a) = self.next_at_or_after(s).filter(|&a| a < e) {
            match self.take_from(a, e - a) {
                Some((_, k)) => n += k,
                None => break,
            }
        }
        n
    }
    /// The end of the run of the set that holds `x`, if `x` is in it.
    pub fn run_end(&self, x: u64) -> Option<u64> {
        let &(a, b) = self.v.as_slice().get(self.first_ending_after(x))?;
        (a <= x).then_some(b)
    }
    /// The first page of `[s, e)` not in the set.
    pub fn first_missing(&self, s: u64, e: u64) -> Option<u64> {
        let x = self.run_end(s).unwrap_or(s);
        (x < e).then_some(x)
    }
    /// The first page at or after `idx` in the set.
    pub fn next_at_or_after(&self, idx: u64) -> Option<u64> {
        self.v
            .as_slice()
            .get(self.first_ending_after(idx))
            .map(|&(a, _)| a.max(idx))
    }
}

impl Kernel {
    /// Dirty `[index, index + n)` of an inode from a buffered write:
    /// page-cache insertion for new pages, then `folio_account_dirtied` for
    /// each page that goes clean→dirty and `__mark_inode_dirty(I_DIRTY_PAGES)`.
    /// Returns the number of pages newly dirtied.
    pub fn filemap_dirty_range(&mut self, pid: Pid, ino: InodeId, index: u64, n: u64) -> u64 {
        // cgroup writeback: the first dirtier's memcg's wb owns the inode
        if self.cg.enabled && !self.cg.inodes.contains_key(&ino) {
            self.inode_attach_wb(pid, ino);
        }
        let inode = &mut self.inodes[ino];
        let end = index + n;
        let grow = inode.pages_past_span(index, n);
        if grow > 0 {
            inode.nr_pages_span = end;
            inode.nr_cached += grow;
            self.vm.nr_file_pages += grow;
            self.vm.nr_inactive_file += grow;
        }
        let added = inode.dirty.insert(index, end);
        if added == 0 {
            self.page_alloc(Some(pid), grow, self.mapping_gfp_write(ino));
            return 0;
        }
        // a page dirtied below the end of the file may have been reclaimed
        // (the block device's metadata buffers are dirtied anywhere): it is
        // read back into the cache first. A tracked file's write has made
        // its pages present already (`filemap_write_begin_tracked`). For
        // the others the pages are counts, not positions: more dirty and
        // writeback pages than cached ones means pages came back, but a
        // page re-dirtied while still under writeback is in both counts
        // (PG_dirty and PG_writeback at once, as in the kernel), so no
        // more come back than the file's span leaves uncached.
        let missing = if self.ra.files.contains_key(&ino) {
            0
        } else {
            (inode.dirty.count() + inode.nr_writeback)
                .saturating_sub(inode.nr_cached)
                .min(inode.nr_pages_span.saturating_sub(inode.nr_cached))
        };
        if missing > 0 {
            inode.nr_cached += missing;
            self.vm.nr_file_pages += missing;
            self.vm.nr_inactive_file += missing;
        }
        let wb = inode.wb;
        if self.cg.enabled {
            self.memcg_account_dirtied(pid, ino, grow + missing, added);
        }
        self.vm.nr_dirty += added;
        self.vm.nr_dirtied += added;
        let w = &mut self.wbs[wb];
        w.reclaimable += added;
        w.dirtied += added;
        let t = &mut self.tasks[pid];
        t.nr_dirtied += added;
        if self.sc.run.dirty_throttle == crate::scenario::ThrottlePolicy::Legacy {
            t.dirties.add(&mut self.pgwb.vm_dirties, added); // task_dirty_inc
        }
        let cpu = t.cpu as usize;
        self.pgwb.bdp_ratelimits[cpu] += added;
        self.mark_inode_dirty_pages(ino);
        // the new pages, once dirty (reclaim does not take them)
        self.page_alloc(Some(pid), grow + missing, self.mapping_gfp_write(ino));
        added
    }

    /// `__filemap_get_folio` → `filemap_get_entry` → `xas_load` for page
    /// `index` of a tracked file, as a buffered write looks its page up:
    /// the walk from the xarray's head down its levels (64 slots a node,
    /// `XA_CHUNK_SHIFT`) touches each node's header line and its slot's
    /// line. After a lookup in the same or the previous leaf node (a
    /// sequential writer) they are cached; at a random index none is, and
    /// each costs `machine.cost.cache_miss`. The walks that follow for the
    /// same page (`__filemap_add_folio`, the dirty tag) find them cached.
    /// On the host rig `xas_load` costs 0.6-0.77 µs a random 4 KiB write
    /// into a 512 MiB file (3 levels, 6 lines) and 0.08 µs a sequential
    /// one (docs/validation.md).
    pub fn filemap_get_folio_cost(&mut self, ino: InodeId, index: u64) -> crate::sim::Ns {
        let span = self.inodes[ino].nr_pages_span.max(index + 1);
        let Some(f) = self.ra.files.get_mut(&ino) else {
            return 0;
        };
        let last = f.last_lookup.replace(index);
        let node = index >> XA_CHUNK_SHIFT;
        if last.is_some_and(|l| node == l >> XA_CHUNK_SHIFT || node == (l >> XA_CHUNK_SHIFT) + 1) {
            return 0;
        }
        2 * xa_height(span) * self.sc.machine.cost.cache_miss
    }

    /// Whether dirtying `n` pages in one `filemap_dirty_range` call does
    /// the same as dirtying them in two calls for adjacent ranges (a writer's
    /// batch): the counters add up either way, the inode is marked dirty by
    /// the first call that dirties a page, and the clean-page reclaim after
    /// each call takes its pages on the allocator's fast path, above LOW
    /// (even if every page were also read back), so neither wakes kswapd
    /// nor reclaims. Not under the legacy throttle, whose per-task
    /// proportion can age between the calls.
    pub fn filemap_dirty_in_one_call(&self, n: u64) -> bool {
        self.sc.run.dirty_throttle != crate::scenario::ThrottlePolicy::Legacy
            && self.page_alloc_fast_ok(2 * n, Gfp::PageCacheWrite)
    }

    /// The gfp mask of a buffered write's page-cache pages for inode `ino`
    /// (its mapping's: without `__GFP_FS` on XFS).
    pub fn mapping_gfp_write(&self, ino: InodeId) -> Gfp {
        let sb = self.inodes[ino].sb as usize;
        if self.sbs.get(sb).is_some_and(|s| s.is_xfs()) {
            Gfp::PageCacheWriteNofs
        } else {
            Gfp::PageCacheWrite
        }
    }

    /// `folio_clear_dirty_for_io` + `__folio_start_writeback` for a run of
    /// pages: dirty → writeback.
    pub fn start_writeback_range(&mut self, ino: InodeId, npages: u64) {
        let wb = self.inodes[ino].wb;
        let inode = &mut self.inodes[ino];
        if inode.nr_writeback == 0 {
            self.wbs[wb].writeback_inodes += 1;
        }
        inode.nr_writeback += npages;
        self.vm.nr_dirty -= npages;
        self.vm.nr_writeback += npages;
        let w = &mut self.wbs[wb];
        w.reclaimable -= npages;
        w.writeback += npages;
        if self.cg.enabled {
            self.memcg_start_writeback(ino, npages);
        }
        if !self.vmscan.lru.inodes.is_empty() {
            self.lru_start_writeback(ino, npages);
        }
    }

    /// `__folio_end_writeback` for a run of pages: writeback → clean, count
    /// WB_WRITTEN and the fprop completion, and queue the delayed bandwidth
    /// update when the inode's last writeback page completes.
    pub fn end_writeback_range(&mut self, ino: InodeId, npages: u64) {
        if npages == 0 {
            return; // a bio that carries no page-cache pages
        }
        let wb = self.inodes[ino].wb;
        self.inodes[ino].nr_writeback -= npages;
        self.vm.nr_writeback -= npages;
        self.vm.nr_written += npages;
        {
            let w = &mut self.wbs[wb];
            w.writeback -= npages;
            w.written += npages;
        }
        self.wb_domain_writeout_add(wb, npages);
        if self.cg.enabled {
            self.memcg_end_writeback(ino, npages);
        }
        if !self.vmscan.lru.inodes.is_empty() || self.vmscan.lru.nr_writeback_throttled > 0 {
            self.lru_end_writeback(ino, npages);
        }
        if self.inodes[ino].nr_writeback == 0 {
            if !self.fsync_waiters.is_empty() {
                self.fsync_writeback_done(ino);
            }
            self.wbs[wb].writeback_inodes -= 1;
            if self.sc.features.bw_dwork {
                self.queue_bw_dwork(wb);
            }
        }
    }
}

impl Kernel {
    /// `filemap_read_end_io` (mpage_read_end_io → folio_end_read): the
    /// pages of a completed read bio are uptodate; readers waiting on them
    /// wake (mm/readahead.rs keeps the read side's state).
    pub fn filemap_read_end_io(&mut self, b: &crate::block::Bio) {
        self.filemap_read_done(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xarray_levels_and_cold_lookups() {
        assert_eq!(xa_height(1), 0);
        assert_eq!(xa_height(64), 1);
        assert_eq!(xa_height(65), 2);
        assert_eq!(xa_height(131_072), 3); // a 512 MiB file
        let sc = crate::scenario::Scenario::load_str(
            "[machine.cost]\ncache_miss = \"100ns\"\n[devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n[filesystems.f]\ndevice = \"loop0\"\n[jobs.dd]\nbs = \"1M\"\n",
            "t.toml",
            "t",
            &[],
        )
        .unwrap();
        let mut k = Kernel::new(sc, crate::trace::Tracer::disabled());
        let ino = k.create_inode(0);
        k.inodes[ino].nr_pages_span = 131_072;
        // an untracked file (dd's) is written sequentially: nothing
        assert_eq!(k.filemap_get_folio_cost(ino, 5), 0);
        k.filemap_track(ino);
        // the first lookup is cold, the next pages are in the same leaf or
        // the next one
        assert_eq!(k.filemap_get_folio_cost(ino, 0), 600);
        let seq: u64 = (1..200).map(|p| k.filemap_get_folio_cost(ino, p)).sum();
        assert_eq!(seq, 0);
        // a jump walks three cold levels, two lines each
        assert_eq!(k.filemap_get_folio_cost(ino, 90_000), 600);
        assert_eq!(k.filemap_get_folio_cost(ino, 7), 600);
    }

    #[test]
    fn rangeset_ops() {
        let mut r = RangeSet::default();
        assert_eq!(r.insert(0, 10), 10);
        assert_eq!(r.insert(5, 15), 5);
        assert_eq!(r.insert(20, 30), 10);
        assert_eq!(r.count(), 25);
        assert_eq!(r.overlap(8, 22), 9);
        assert_eq!(r.insert(15, 20), 5); // bridges into one run
        assert_eq!(r.take_from(3, 4), Some((3, 4)));
        assert_eq!(r.count(), 26);
        assert_eq!(r.next_at_or_after(3), Some(7));
        assert_eq!(r.take_from(0, 100), Some((0, 3)));
        assert_eq!(r.take_from(0, 100), Some((7, 23)));
        assert_eq!(r.take_from(0, 100), None);
        assert!(r.is_empty());
        // appending extends the last run
        assert_eq!(r.insert(40, 50), 10);
        assert_eq!(r.insert(50, 52), 2);
        assert_eq!(r.insert(60, 61), 1);
        assert_eq!(r.insert(61, 64), 3);
        assert_eq!(r.count(), 16);
        assert_eq!(r.take_from(0, 100), Some((40, 12)));
        assert_eq!(r.take_from(0, 100), Some((60, 4)));
    }
}
