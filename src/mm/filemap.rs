//! Page-cache accounting with per-inode extents (mm/filemap.c,
//! mm/page-writeback.c `folio_account_dirtied`, `__folio_start_writeback`,
//! `__folio_end_writeback`). No per-page objects: an inode keeps its dirty
//! pages as a set of ranges and counts the rest.

use crate::kernel::{InodeId, Kernel, Pid};
use std::collections::BTreeMap;

/// A set of disjoint half-open page ranges `[start, end)`.
#[derive(Clone, Debug, Default)]
pub struct RangeSet {
    map: BTreeMap<u64, u64>,
    count: u64,
}

impl RangeSet {
    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Pages of `[s, e)` already in the set.
    pub fn overlap(&self, s: u64, e: u64) -> u64 {
        let mut n = 0;
        for (&a, &b) in self.map.range(..e).rev() {
            if b <= s {
                break;
            }
            n += b.min(e) - a.max(s);
        }
        n
    }
    /// Insert `[s, e)`; returns how many pages were newly added.
    pub fn insert(&mut self, s: u64, e: u64) -> u64 {
        if s >= e {
            return 0;
        }
        let before = self.overlap(s, e);
        let (mut ns, mut ne) = (s, e);
        let touching: Vec<(u64, u64)> = self
            .map
            .range(..=e)
            .rev()
            .take_while(|(_, &b)| b >= s)
            .map(|(&a, &b)| (a, b))
            .collect();
        for (a, b) in touching {
            self.map.remove(&a);
            ns = ns.min(a);
            ne = ne.max(b);
        }
        self.map.insert(ns, ne);
        let added = (e - s) - before;
        self.count += added;
        added
    }
    /// Remove and return the first contiguous run at or after `idx`, at most
    /// `max` pages long.
    pub fn take_from(&mut self, idx: u64, max: u64) -> Option<(u64, u64)> {
        // a range that contains idx, or the first one after it
        let (a, b) = match self.map.range(..=idx).next_back() {
            Some((&a, &b)) if b > idx => (a, b),
            _ => {
                let (&a, &b) = self.map.range(idx..).next()?;
                (a, b)
            }
        };
        let s = a.max(idx);
        let e = b.min(s + max);
        self.map.remove(&a);
        if a < s {
            self.map.insert(a, s);
        }
        if e < b {
            self.map.insert(e, b);
        }
        self.count -= e - s;
        Some((s, e - s))
    }
    /// The first page at or after `idx` in the set.
    pub fn next_at_or_after(&self, idx: u64) -> Option<u64> {
        match self.map.range(..=idx).next_back() {
            Some((_, &b)) if b > idx => Some(idx),
            _ => self.map.range(idx..).next().map(|(&a, _)| a),
        }
    }
}

impl Kernel {
    /// Dirty `[index, index + n)` of an inode from a buffered write:
    /// page-cache insertion for new pages, then `folio_account_dirtied` for
    /// each page that goes clean→dirty and `__mark_inode_dirty(I_DIRTY_PAGES)`.
    /// Returns the number of pages newly dirtied.
    pub fn filemap_dirty_range(&mut self, pid: Pid, ino: InodeId, index: u64, n: u64) -> u64 {
        let inode = &mut self.inodes[ino];
        let end = index + n;
        if end > inode.nr_pages_span {
            let grow = end - inode.nr_pages_span.max(index);
            let grow = grow.min(n);
            inode.nr_pages_span = end;
            inode.nr_cached += grow;
            self.vm.nr_file_pages += grow;
            self.vm.nr_inactive_file += grow;
            self.vm.nr_free_pages = self.vm.nr_free_pages.saturating_sub(grow);
        }
        let added = self.inodes[ino].dirty.insert(index, end);
        if added == 0 {
            return 0;
        }
        let wb = self.inodes[ino].wb;
        self.vm.nr_dirty += added;
        self.vm.nr_dirtied += added;
        let w = &mut self.wbs[wb];
        w.reclaimable += added;
        w.dirtied += added;
        let t = &mut self.tasks[pid];
        t.nr_dirtied += added;
        if self.sc.run.dirty_throttle == crate::scenario::ThrottlePolicy::Legacy {
            t.dirties.add(&mut self.dom.vm_dirties, added); // task_dirty_inc
        }
        let cpu = t.cpu;
        self.dom.bdp_ratelimits[cpu] += added;
        self.mark_inode_dirty_pages(ino);
        self.maybe_reclaim_clean();
        added
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
    }

    /// `__folio_end_writeback` for a run of pages: writeback → clean, count
    /// WB_WRITTEN and the fprop completion, and queue the delayed bandwidth
    /// update when the inode's last writeback page completes.
    pub fn end_writeback_range(&mut self, ino: InodeId, npages: u64) {
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
        if self.inodes[ino].nr_writeback == 0 {
            self.wbs[wb].writeback_inodes -= 1;
            if self.sc.run.dirty_throttle == crate::scenario::ThrottlePolicy::IoLess {
                self.queue_bw_dwork(wb); // bw_dwork exists since 5.14
            }
        }
    }

    /// Keep free memory above the reserve by dropping clean page-cache pages
    /// (a stand-in for kswapd until reclaim is modelled). Clean pages go
    /// from the inodes in order, oldest inode first.
    fn maybe_reclaim_clean(&mut self) {
        let reserve = self.dom.totalreserve_pages;
        if self.vm.nr_free_pages > reserve * 2 {
            return;
        }
        let mut want = reserve * 4 - self.vm.nr_free_pages.min(reserve * 4);
        let mut i = self.dom.reclaim_cursor;
        let n = self.inodes.len();
        for _ in 0..n {
            if want == 0 {
                break;
            }
            let inode = &mut self.inodes[i % n];
            let clean = inode.nr_cached - inode.dirty.count() - inode.nr_writeback;
            let take = clean.min(want);
            if take > 0 {
                inode.nr_cached -= take;
                self.vm.nr_file_pages -= take;
                self.vm.nr_inactive_file -= take;
                self.vm.nr_free_pages += take;
                self.vm.pgsteal += take;
                want -= take;
            }
            if want > 0 {
                i += 1;
            }
        }
        self.dom.reclaim_cursor = i % n.max(1);
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
    }
}
