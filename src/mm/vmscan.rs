//! Page reclaim (mm/vmscan.c), as far as it is modelled: free memory is
//! kept above the reserve (`totalreserve_pages`, mm/page_alloc.c
//! `calculate_totalreserve_pages`) by dropping clean page-cache pages.
//! kswapd, direct reclaim and the shrinkers will live here.

use crate::kernel::{InodeId, Kernel};

/// Reclaim's state.
#[derive(Clone, Debug, Default)]
pub struct Vmscan {
    /// `totalreserve_pages`: free pages the allocator keeps back.
    pub totalreserve_pages: u64,
    /// The inode where clean-page reclaim continues.
    pub cursor: InodeId,
}

impl Kernel {
    /// Does `free` free pages call for `reclaim_clean`: at most twice the
    /// reserve? (A model threshold standing in for kswapd's watermarks,
    /// which are not modelled yet; reclaim then frees up to four times the
    /// reserve.)
    #[inline]
    pub(crate) fn reclaim_clean_due(&self, free: u64) -> bool {
        free <= self.vmscan.totalreserve_pages * 2
    }

    /// Keep free memory above the reserve by dropping clean page-cache pages
    /// (a stand-in for kswapd until reclaim is modelled). Clean pages go
    /// from the inodes in order, oldest inode first, from where the last
    /// call stopped and round again; an unused inode whose last page goes is
    /// evicted (`prune_icache_sb`).
    /// Called when `reclaim_clean_due`.
    #[inline(never)]
    pub(crate) fn reclaim_clean(&mut self) {
        let reserve = self.vmscan.totalreserve_pages;
        let mut want = reserve * 4 - self.vm.nr_free_pages.min(reserve * 4);
        // evicted inodes had no pages: starting past them changes nothing
        let (lo, hi) = (self.inodes.first_id(), self.inodes.end_id());
        let mut i = self.vmscan.cursor.max(lo);
        for _ in lo..hi {
            if want == 0 {
                break;
            }
            let inode = &self.inodes[i];
            let clean = inode.nr_cached - inode.dirty.count() - inode.nr_writeback;
            let mut take = clean.min(want);
            // a file that is read knows its pages by position: reclaim
            // takes clean ones that are not under read (mm/readahead.rs)
            if take > 0 && !self.ra.files.is_empty() {
                if let Some(f) = self.ra.files.get(&i) {
                    let unlocked = clean.saturating_sub(f.locked.count());
                    take = self.filemap_reclaim_tracked(i, take.min(unlocked));
                }
            }
            if take > 0 {
                self.inodes[i].nr_cached -= take;
                self.vm.nr_file_pages -= take;
                self.vm.nr_inactive_file -= take;
                self.vm.nr_free_pages += take;
                self.vm.pgsteal += take;
                self.page_freed_host(take);
                want -= take;
                self.inode_maybe_evict(i);
            }
            if want > 0 {
                i = if i + 1 == hi { lo } else { i + 1 };
            }
        }
        self.vmscan.cursor = i;
        self.inodes.release_evicted();
    }
}
