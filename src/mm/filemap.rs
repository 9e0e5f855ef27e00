//! Page-cache accounting with per-inode extents (mm/filemap.c,
//! mm/page-writeback.c `folio_account_dirtied`, `__folio_start_writeback`,
//! `__folio_end_writeback`). No per-page objects: an inode keeps its dirty
//! pages as a set of ranges and counts the rest.

use crate::kernel::{InodeId, Kernel, Pid};

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
            self.vm.nr_free_pages = self.vm.nr_free_pages.saturating_sub(grow);
        }
        let added = inode.dirty.insert(index, end);
        if added == 0 {
            return 0;
        }
        // a page dirtied below the end of the file may have been reclaimed
        // (the block device's metadata buffers are dirtied anywhere): it is
        // read back into the cache first
        let missing = (inode.dirty.count() + inode.nr_writeback).saturating_sub(inode.nr_cached);
        if missing > 0 {
            inode.nr_cached += missing;
            self.vm.nr_file_pages += missing;
            self.vm.nr_inactive_file += missing;
            self.vm.nr_free_pages = self.vm.nr_free_pages.saturating_sub(missing);
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
        let cpu = t.cpu;
        self.pgwb.bdp_ratelimits[cpu] += added;
        self.mark_inode_dirty_pages(ino);
        if self.reclaim_clean_due(self.vm.nr_free_pages) {
            self.reclaim_clean();
        }
        added
    }

    /// Whether dirtying `n` pages in one `filemap_dirty_range` call does
    /// the same as dirtying them in two calls for adjacent ranges (a writer's
    /// batch): the counters add up either way, the inode is marked dirty by
    /// the first call that dirties a page, and the clean-page reclaim after
    /// each call does not run (free memory stays well above its trigger,
    /// even if every page were also read back). Not under the legacy
    /// throttle, whose per-task proportion can age between the calls.
    pub fn filemap_dirty_in_one_call(&self, n: u64) -> bool {
        self.sc.run.dirty_throttle != crate::scenario::ThrottlePolicy::Legacy
            && !self.reclaim_clean_due(self.vm.nr_free_pages.saturating_sub(2 * n))
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
