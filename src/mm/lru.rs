//! The node's LRU lists and their scanning: the list half of mm/swap.c
//! (`folio_add_lru`, `folio_mark_accessed`, `folio_rotate_reclaimable`,
//! `lru_deactivate`) and the list half of mm/vmscan.c (`get_scan_count`,
//! `inactive_is_low`, `shrink_lruvec`, `shrink_inactive_list`,
//! `shrink_folio_list`'s file branch, `shrink_active_list`), with 5.16's
//! reclaim throttling (`reclaim_throttle`) and the pre-5.16
//! `congestion_wait` it replaced.
//!
//! There are no per-page objects. The four lists are node counts
//! (`VmStat::nr_{in,}active_{file,anon}`); an inode with pages off the
//! plain inactive state keeps an `InodeLru` (its active pages, those of
//! them known by position, its `PG_reclaim` pages and, for a file read
//! through mm/readahead.rs, its `PG_referenced` pages as ranges). The
//! inactive list's order is approximated: pages rotated to the tail at
//! writeback end (`pgrotated`) come first; then clean pages, inode by inode
//! from a cursor (inodes are numbered as they are created, so older files
//! come first); dirty pages and pages under writeback are taken as newer
//! than every clean page (writeback cleans pages in the order they were
//! dirtied, within the dirty limits), so reclaim meets them only once no
//! clean inactive page is left, inode by inode, those under writeback
//! first. A page redirtied long after it was added (an overwrite of a
//! cached file) would reach the kernel's tail dirty earlier.
//!
//! Not modelled: refault detection (`workingset_refault` adding a refaulting
//! page to the active list, and the refault snapshot that sets
//! `may_deactivate`): a page becomes active only by a second access while
//! inactive, or by reclaim finding it dirty or under writeback. Swap:
//! none, so `get_scan_count` always chooses SCAN_FILE and the anonymous
//! lists are counted but never scanned (nor aged: `can_age_anon_pages` is
//! false without swap). Isolation takes no time (a batch is isolated,
//! decided and put back in one step), so `too_many_isolated` never holds
//! and VMSCAN_THROTTLE_ISOLATED is never taken. Mapped pages (PTE
//! references, executable file mappings) are not modelled.

use std::collections::{BTreeMap, VecDeque};

use crate::kernel::{InodeId, Kernel, Pid};
use crate::mm::page_alloc::SWAP_CLUSTER_MAX;
use crate::mm::readahead::ExtentSet;
use crate::sim::Ns;

/// `enum lru_list` (the evictable ones).
pub const LRU_INACTIVE_ANON: usize = 0;
pub const LRU_ACTIVE_ANON: usize = 1;
pub const LRU_INACTIVE_FILE: usize = 2;
pub const LRU_ACTIVE_FILE: usize = 3;

/// `enum scan_balance`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanBalance {
    Equal,
    Fract,
    Anon,
    File,
}

/// What `get_scan_count` reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct ScanInput {
    /// The lists' sizes, by `LRU_*` index.
    pub size: [u64; 4],
    pub priority: u32,
    /// `vm.swappiness` (default 60).
    pub swappiness: u64,
    /// Swap space is available (`sc->may_swap` and `get_nr_swap_pages()`).
    pub swap: bool,
    /// `lruvec->anon_cost`, `file_cost` (`lru_note_cost`).
    pub anon_cost: u64,
    pub file_cost: u64,
    /// `sc->file_is_tiny`, `sc->cache_trim_mode`.
    pub file_is_tiny: bool,
    pub cache_trim_mode: bool,
}

/// `get_scan_count`: how many pages of each list to scan at this priority,
/// and the balance chosen. Global reclaim only (no memcg protection).
pub fn get_scan_count(s: &ScanInput) -> ([u64; 4], ScanBalance) {
    let balance = if !s.swap {
        ScanBalance::File
    } else if s.priority == 0 && s.swappiness != 0 {
        ScanBalance::Equal
    } else if s.file_is_tiny {
        ScanBalance::Anon
    } else if s.cache_trim_mode {
        ScanBalance::File
    } else {
        ScanBalance::Fract
    };
    // SCAN_FRACT's fractions: the cost of each type, weighted by swappiness
    let total = s.anon_cost + s.file_cost;
    let anon_cost = total + s.anon_cost;
    let file_cost = total + s.file_cost;
    let t = anon_cost + file_cost;
    let ap = s.swappiness * (t + 1) / (anon_cost + 1);
    let fp = (200 - s.swappiness.min(200)) * (t + 1) / (file_cost + 1);
    let mut nr = [0; 4];
    for (lru, n) in nr.iter_mut().enumerate() {
        let file = lru >= LRU_INACTIVE_FILE;
        let scan = s.size[lru] >> s.priority;
        *n = match balance {
            ScanBalance::Equal => scan,
            ScanBalance::Fract => {
                let f = if file { fp } else { ap };
                (scan as u128 * f as u128 / (ap + fp).max(1) as u128) as u64
            }
            ScanBalance::File => {
                if file {
                    scan
                } else {
                    0
                }
            }
            ScanBalance::Anon => {
                if file {
                    0
                } else {
                    scan
                }
            }
        };
    }
    (nr, balance)
}

/// `inactive_is_low`: the inactive list is too small against the active
/// one. The target ratio grows with the square root of the lists' size
/// (1 under 1 GiB, 3 at 1 GiB, 10 at 10 GiB, 31 at 100 GiB).
pub fn inactive_is_low(inactive: u64, active: u64, page_size: u64) -> bool {
    let gb = ((inactive + active) * page_size) >> 30;
    let ratio = if gb > 0 { isqrt(10 * gb) } else { 1 };
    inactive * ratio < active
}

fn isqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// An inode's pages off the plain inactive state.
#[derive(Clone, Debug, Default)]
pub struct InodeLru {
    /// Pages on the active list.
    pub active: u64,
    /// The active pages known by position (a read file's, activated by a
    /// second read); the rest are counted only.
    pub active_pos: ExtentSet,
    /// `PG_reclaim` pages still dirty, and under writeback. Reclaim sets
    /// the flag and activates them; a tagged page counts as active while
    /// the inode has as many active pages (the writeback ones first).
    pub tag_dirty: u64,
    pub tag_wb: u64,
    /// `PG_referenced` pages of a read file, by position.
    pub referenced: ExtentSet,
}

/// The reasons of `reclaim_throttle` (`enum vmscan_throttle_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottleReason {
    Writeback = 0,
    Isolated = 1,
    Noprogress = 2,
    Congested = 3,
}

impl ThrottleReason {
    pub fn name(self) -> &'static str {
        match self {
            ThrottleReason::Writeback => "VMSCAN_THROTTLE_WRITEBACK",
            ThrottleReason::Isolated => "VMSCAN_THROTTLE_ISOLATED",
            ThrottleReason::Noprogress => "VMSCAN_THROTTLE_NOPROGRESS",
            ThrottleReason::Congested => "VMSCAN_THROTTLE_CONGESTED",
        }
    }
}

/// A reclaimer's throttle: asked for by reclaim, slept at the task's next
/// step (after the CPU time reclaim charged it), traced when it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskThrottle {
    /// None: the pre-5.16 `congestion_wait(BLK_RW_ASYNC, HZ/10)`.
    pub reason: Option<ThrottleReason>,
    /// Jiffies.
    pub timeout: u64,
    /// When the sleep started (None: not yet).
    pub start: Option<Ns>,
}

/// The node's LRU state beyond the counts, and its reclaim flags.
#[derive(Clone, Debug, Default)]
pub struct Lru {
    pub inodes: BTreeMap<InodeId, InodeLru>,
    /// Where `shrink_active_list` continues.
    pub active_cursor: InodeId,
    /// Pages rotated to the inactive list's tail when their writeback
    /// ended, oldest first.
    pub rotated: VecDeque<(InodeId, u64)>,
    /// `PGDAT_DIRTY`, `PGDAT_WRITEBACK`, the root lruvec's
    /// `LRUVEC_CONGESTED`.
    pub pgdat_dirty: bool,
    pub pgdat_writeback: bool,
    pub lruvec_congested: bool,
    /// `pgdat->reclaim_wait[]`: the tasks sleeping there.
    pub waiters: [Vec<Pid>; 4],
    /// `nr_writeback_throttled`, `nr_reclaim_start`, `NR_THROTTLED_WRITTEN`.
    pub nr_writeback_throttled: u64,
    pub nr_reclaim_start: u64,
    pub nr_throttled_written: u64,
}

/// `struct reclaim_stat` and `sc->nr` of one shrink_node call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReclaimStat {
    pub scanned: u64,
    pub reclaimed: u64,
    pub dirty: u64,
    pub unqueued_dirty: u64,
    pub congested: u64,
    pub writeback: u64,
    pub immediate: u64,
    pub activate: u64,
    pub ref_keep: u64,
    pub taken: u64,
    pub file_taken: u64,
    pub pageout: u64,
    /// Active-list pages scanned (`pgrefill`).
    pub refill: u64,
}

impl ReclaimStat {
    fn add(&mut self, o: &ReclaimStat) {
        self.scanned += o.scanned;
        self.reclaimed += o.reclaimed;
        self.dirty += o.dirty;
        self.unqueued_dirty += o.unqueued_dirty;
        self.congested += o.congested;
        self.writeback += o.writeback;
        self.immediate += o.immediate;
        self.activate += o.activate;
        self.ref_keep += o.ref_keep;
        self.taken += o.taken;
        self.file_taken += o.file_taken;
        self.pageout += o.pageout;
        self.refill += o.refill;
    }
}

/// An inode's inactive pages by what reclaim does with them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Inactive {
    pub(crate) clean: u64,
    /// Under writeback: with PG_reclaim (went round again), without.
    wb_tagged: u64,
    wb: u64,
    dirty_tagged: u64,
    dirty: u64,
}

impl Kernel {
    /// An inode still in the table and not evicted.
    pub(crate) fn lru_live(&self, ino: InodeId) -> bool {
        ino >= self.inodes.first_id()
            && ino < self.inodes.end_id()
            && self.inodes[ino].i_state & crate::fs::I_FREEING == 0
    }

    fn lru_inode(&mut self, ino: InodeId) -> &mut InodeLru {
        self.vmscan.lru.inodes.entry(ino).or_default()
    }

    /// Drop an inode's LRU record once it holds nothing.
    fn lru_inode_tidy(&mut self, ino: InodeId) {
        if let Some(l) = self.vmscan.lru.inodes.get(&ino) {
            if l.active == 0
                && l.tag_dirty == 0
                && l.tag_wb == 0
                && l.referenced.is_empty()
                && l.active_pos.is_empty()
            {
                self.vmscan.lru.inodes.remove(&ino);
            }
        }
    }

    /// `n` new anonymous pages of task `pid` (a workload's working set):
    /// allocated, then on the inactive anon list
    /// (`folio_add_lru_vma` → `lru_cache_add_inactive_or_unevictable`).
    /// Without swap they are never reclaimed.
    pub fn lru_add_anon(&mut self, pid: Option<Pid>, n: u64) {
        self.vm.nr_anon_pages += n;
        self.vm.nr_inactive_anon += n;
        self.page_alloc(pid, n, crate::mm::page_alloc::Gfp::Anon);
    }

    /// `n` anonymous pages of a working set freed (munmap, exit).
    pub fn lru_free_anon(&mut self, n: u64) {
        let n = n.min(self.vm.nr_inactive_anon);
        self.vm.nr_anon_pages -= n;
        self.vm.nr_inactive_anon -= n;
        self.page_free(n);
        self.page_freed_host(n);
    }

    /// `folio_mark_accessed` for pages `[s, e)` of a read file (filemap_read
    /// copying them): an inactive page not referenced becomes referenced;
    /// an inactive referenced one becomes active (`folio_activate`,
    /// `pgactivate`) with its flag cleared; an active one is referenced.
    pub fn folio_mark_accessed(&mut self, ino: InodeId, s: u64, e: u64) {
        if s >= e {
            return;
        }
        let l = self.lru_inode(ino);
        // active pages stay active (their referenced flag is not kept)
        let mut activated = 0;
        let mut p = s;
        while p < e {
            let (run_end, active) = match l.active_pos.run_end(p) {
                Some(x) => (x.min(e), true),
                None => (
                    l.active_pos.next_at_or_after(p).map_or(e, |x| x.min(e)),
                    false,
                ),
            };
            if !active {
                // inactive pages [p, run_end): the referenced ones activate
                let mut q = p;
                while q < run_end {
                    match l.referenced.run_end(q) {
                        Some(x) => {
                            let x = x.min(run_end);
                            l.referenced.remove(q, x);
                            l.active_pos.insert(q, x);
                            activated += x - q;
                            q = x;
                        }
                        None => {
                            let x = l
                                .referenced
                                .next_at_or_after(q)
                                .map_or(run_end, |x| x.min(run_end));
                            l.referenced.insert(q, x);
                            q = x;
                        }
                    }
                }
            }
            p = run_end;
        }
        if activated > 0 {
            l.active += activated;
            self.vm.nr_inactive_file -= activated;
            self.vm.nr_active_file += activated;
            self.vm.pgactivate += activated;
        }
    }

    /// The active pages known by position of a read file: all of them
    /// back to the inactive list (POSIX_FADV_DONTNEED drops active and
    /// inactive pages alike).
    pub(crate) fn lru_deactivate_positions(&mut self, ino: InodeId) {
        if let Some(l) = self.vmscan.lru.inodes.get_mut(&ino) {
            let a = l.active_pos.count();
            l.active_pos = ExtentSet::default();
            l.active -= a.min(l.active);
            self.vm.nr_active_file -= a;
            self.vm.nr_inactive_file += a;
        }
    }

    /// `__folio_start_writeback` of `n` pages: the PG_reclaim ones among
    /// them (the inode's oldest dirty pages, which reclaim met first) keep
    /// the flag under writeback.
    pub(crate) fn lru_start_writeback(&mut self, ino: InodeId, n: u64) {
        if let Some(l) = self.vmscan.lru.inodes.get_mut(&ino) {
            let m = n.min(l.tag_dirty);
            l.tag_dirty -= m;
            l.tag_wb += m;
        }
    }

    /// `folio_end_writeback` of `n` pages: each with PG_reclaim goes to the
    /// inactive list's tail (`folio_rotate_reclaimable` → `lru_move_tail_fn`,
    /// `pgrotated`); the writeback-throttled reclaimers count the pages
    /// (`__acct_reclaim_writeback`) and wake once more than 32 each were
    /// written since the first of them slept.
    pub(crate) fn lru_end_writeback(&mut self, ino: InodeId, n: u64) {
        let lru = &mut self.vmscan.lru;
        if lru.nr_writeback_throttled > 0 {
            lru.nr_throttled_written += n;
            if lru.nr_throttled_written - lru.nr_reclaim_start
                > SWAP_CLUSTER_MAX * lru.nr_writeback_throttled
            {
                self.reclaim_throttle_wake(ThrottleReason::Writeback);
            }
        }
        let Some(l) = self.vmscan.lru.inodes.get_mut(&ino) else {
            return;
        };
        let r = n.min(l.tag_wb);
        if r == 0 {
            return;
        }
        // the tagged pages under writeback that were active
        let was_active = l.tag_wb.min(l.active);
        let from_active = r.min(was_active);
        l.tag_wb -= r;
        l.active -= from_active;
        self.vm.nr_active_file -= from_active;
        self.vm.nr_inactive_file += from_active;
        self.vm.pgrotated += r;
        match self.vmscan.lru.rotated.back_mut() {
            Some((i, k)) if *i == ino => *k += r,
            _ => self.vmscan.lru.rotated.push_back((ino, r)),
        }
        self.lru_inode_tidy(ino);
    }

    /// An inode's inactive pages by kind.
    pub(crate) fn inactive_of(&self, ino: InodeId) -> Inactive {
        let i = &self.inodes[ino];
        let dirty = i.dirty.count();
        let wb = i.nr_writeback;
        let (active, tag_wb, tag_dirty) = self
            .vmscan
            .lru
            .inodes
            .get(&ino)
            .map_or((0, 0, 0), |l| (l.active, l.tag_wb, l.tag_dirty));
        // tagged pages are active while the inode has active pages for them
        let ta_wb = tag_wb.min(active).min(wb);
        let ta_dirty = tag_dirty.min(active - ta_wb).min(dirty);
        let in_wb = wb - ta_wb;
        let in_dirty = dirty - ta_dirty;
        let wb_tagged = (tag_wb - tag_wb.min(active)).min(in_wb);
        let dirty_tagged = (tag_dirty - ta_dirty).min(in_dirty);
        Inactive {
            clean: i.nr_cached.saturating_sub(active + in_wb + in_dirty),
            wb_tagged,
            wb: in_wb - wb_tagged,
            dirty_tagged,
            dirty: in_dirty - dirty_tagged,
        }
    }

    /// Free `n` inactive clean pages of an inode.
    fn lru_free_inactive(&mut self, ino: InodeId, n: u64) {
        self.inodes[ino].nr_cached -= n;
        self.vm.nr_file_pages -= n;
        self.vm.nr_inactive_file -= n;
        self.page_free(n);
        self.page_freed_host(n);
        if self.inodes[ino].nr_cached == 0 {
            self.vmscan.lru.inodes.remove(&ino);
        }
        self.inode_maybe_evict(ino);
    }

    /// Take up to `want` inactive clean pages of an inode: a read file's by
    /// position (not under read, not active), others by count.
    pub(crate) fn reclaim_clean(&mut self, ino: InodeId, clean: u64, want: u64) -> u64 {
        let mut take = clean.min(want);
        if take > 0 && !self.ra.files.is_empty() {
            if let Some(f) = self.ra.files.get(&ino) {
                let unlocked = clean.saturating_sub(f.locked.count());
                take = self.filemap_reclaim_tracked(ino, take.min(unlocked));
            }
        }
        if take > 0 {
            self.lru_free_inactive(ino, take);
        }
        take
    }

    /// Activate `n` pages of an inode that reclaim set PG_reclaim on (or
    /// found set): they move to the active list (`activate_locked`).
    fn lru_activate_tagged(&mut self, ino: InodeId, n: u64, new_dirty: u64, new_wb: u64) {
        let l = self.lru_inode(ino);
        l.active += n;
        l.tag_dirty += new_dirty;
        l.tag_wb += new_wb;
        self.vm.nr_inactive_file -= n;
        self.vm.nr_active_file += n;
        self.vm.pgactivate += n;
    }

    /// `shrink_folio_list` for `k` pages of inode `ino` at the inactive
    /// tail, of kind `inact`: the clean ones are freed; under writeback they
    /// are tagged and activated (kswapd finding one already tagged while
    /// the node is PGDAT_WRITEBACK counts it `nr_immediate`); dirty ones
    /// are tagged and activated (`nr_vmscan_immediate_reclaim`), except
    /// that kswapd, meeting an already tagged one while the node is
    /// PGDAT_DIRTY, calls `pageout`: XFS has no ->writepage (the page is
    /// activated), ext4's writepage redirties a delalloc page from
    /// PF_MEMALLOC context and reports success (`nr_vmscan_write`, the page
    /// is kept; a page whose blocks are already allocated would be written,
    /// which is not modelled). Returns the pages taken.
    fn shrink_inode_inactive(
        &mut self,
        ino: InodeId,
        inact: Inactive,
        want: u64,
        kswapd: bool,
        st: &mut ReclaimStat,
    ) -> u64 {
        let mut left = want;
        let got = self.reclaim_clean(ino, inact.clean, left);
        left -= got;
        st.reclaimed += got;
        st.scanned += got;
        if left == 0 || !self.lru_live(ino) {
            return want - left;
        }
        let lru = &self.vmscan.lru;
        let (pgdat_wb, pgdat_dirty) = (lru.pgdat_writeback, lru.pgdat_dirty);
        // under writeback, tagged before: went round the LRU again
        let k = inact.wb_tagged.min(left);
        if k > 0 {
            left -= k;
            st.scanned += k;
            st.dirty += k;
            st.writeback += k;
            st.congested += k;
            if kswapd && pgdat_wb {
                st.immediate += k;
            }
            st.activate += k;
            self.lru_activate_tagged(ino, k, 0, 0);
        }
        let k = inact.wb.min(left);
        if k > 0 {
            left -= k;
            st.scanned += k;
            st.dirty += k;
            st.writeback += k;
            st.activate += k;
            self.lru_activate_tagged(ino, k, 0, k);
        }
        for (k, tagged) in [
            (inact.dirty_tagged.min(left), true),
            (
                inact.dirty.min(left.saturating_sub(inact.dirty_tagged)),
                false,
            ),
        ] {
            if k == 0 {
                continue;
            }
            left -= k;
            st.scanned += k;
            st.dirty += k;
            st.unqueued_dirty += k;
            if kswapd && tagged && pgdat_dirty {
                // pageout(): PF_MEMALLOC writepage
                let sb = self.inodes[ino].sb as usize;
                let has_writepage =
                    !self.inodes[ino].bdev && matches!(self.sbs[sb].fs, crate::fs::FsType::Ext4(_));
                if has_writepage {
                    self.vm.nr_vmscan_write += k;
                    st.pageout += k;
                    continue;
                }
                st.activate += k;
                self.lru_activate_tagged(ino, k, 0, 0);
                continue;
            }
            self.vm.nr_vmscan_immediate_reclaim += k;
            st.activate += k;
            self.lru_activate_tagged(ino, k, if tagged { 0 } else { k }, 0);
        }
        want - left
    }

    /// `shrink_inactive_list` of up to `nr_to_scan` file pages from the
    /// inactive list's tail: the pages rotated there at writeback end
    /// first, then inode by inode from the cursor. Counts pgscan/pgsteal,
    /// wakes the flushers when every page taken was dirty and not queued
    /// for writeback, and traces `mm_vmscan_lru_shrink_inactive`.
    pub(crate) fn shrink_inactive_list(
        &mut self,
        pid: Pid,
        nr_to_scan: u64,
        priority: u32,
        kswapd: bool,
    ) -> ReclaimStat {
        let mut st = ReclaimStat::default();
        let mut left = nr_to_scan;
        // the tail: pages whose writeback ended with PG_reclaim
        while left > 0 {
            let Some(&(ino, n)) = self.vmscan.lru.rotated.front() else {
                break;
            };
            let k = n.min(left);
            let got = if self.lru_live(ino) {
                let inact = self.inactive_of(ino);
                self.reclaim_clean(ino, inact.clean, k)
            } else {
                0
            };
            st.reclaimed += got;
            st.scanned += got;
            left -= got;
            // what is no longer there (redirtied, dropped) is forgotten
            if got == n || got < k {
                self.vmscan.lru.rotated.pop_front();
            } else {
                self.vmscan.lru.rotated[0].1 -= got;
            }
        }
        // the rest of the list: clean pages, inode by inode from the cursor,
        // once round; dirty and writeback pages are newer than any clean
        // one, and met only when no clean page is left
        let (lo, hi) = (self.inodes.first_id(), self.inodes.end_id());
        let v = &self.vm;
        let pending = v.nr_dirty + v.nr_writeback;
        let inactive_pending = pending - pending.min(v.nr_active_file);
        let mut i = self.vmscan.cursor.max(lo);
        if v.nr_inactive_file > inactive_pending {
            for _ in lo..hi {
                if left == 0 {
                    break;
                }
                if self.inodes[i].nr_cached > 0 {
                    let clean = self.inactive_of(i).clean;
                    let got = self.reclaim_clean(i, clean, left);
                    left -= got;
                    st.reclaimed += got;
                    st.scanned += got;
                }
                if left > 0 {
                    i = if i + 1 >= hi { lo } else { i + 1 };
                }
            }
        }
        if left > 0 && pending > 0 {
            for _ in lo..hi {
                if left == 0 {
                    break;
                }
                if self.inodes[i].nr_cached > 0 {
                    let inact = Inactive {
                        clean: 0,
                        ..self.inactive_of(i)
                    };
                    left -= self.shrink_inode_inactive(i, inact, left, kswapd, &mut st);
                }
                if left > 0 {
                    i = if i + 1 >= hi { lo } else { i + 1 };
                }
            }
        }
        self.vmscan.cursor = i;
        self.inodes.release_evicted();
        st.taken = st.scanned;
        st.file_taken = st.scanned;
        if kswapd {
            self.vm.pgscan_kswapd += st.scanned;
            self.vm.pgsteal_kswapd += st.reclaimed;
        } else {
            self.vm.pgscan_direct += st.scanned;
            self.vm.pgsteal_direct += st.reclaimed;
        }
        // every page taken dirty and not under writeback: the flushers are
        // behind (`wakeup_flusher_threads(WB_REASON_VMSCAN)`)
        if st.taken > 0 && st.unqueued_dirty == st.taken {
            self.wakeup_flusher_threads(crate::fs::fs_writeback::WbReason::Vmscan);
        }
        if self.tracer.on.mm_vmscan_lru_shrink_inactive {
            self.trace_line(
                pid,
                "mm_vmscan_lru_shrink_inactive",
                format_args!(
                    "nid=0 nr_scanned={} nr_reclaimed={} nr_dirty={} nr_writeback={} nr_congested={} nr_immediate={} nr_activate_anon=0 nr_activate_file={} nr_ref_keep={} nr_unmap_fail=0 priority={} flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC",
                    st.scanned,
                    st.reclaimed,
                    st.dirty,
                    st.writeback,
                    st.congested,
                    st.immediate,
                    st.activate,
                    st.ref_keep,
                    priority
                ),
            );
        }
        st
    }

    /// `shrink_active_list` of up to `nr_to_scan` file pages: unmapped page
    /// cache is always deactivated (`pgrefill`, `pgdeactivate`), inode by
    /// inode from its own cursor, the pages known by position first.
    pub(crate) fn shrink_active_list(&mut self, nr_to_scan: u64) -> u64 {
        let mut left = nr_to_scan;
        let mut moved = 0;
        let mut wrapped = false;
        while left > 0 {
            let cur = self.vmscan.lru.active_cursor;
            let next = self
                .vmscan
                .lru
                .inodes
                .range(cur..)
                .find(|(_, l)| l.active > 0)
                .map(|(&i, _)| i);
            let Some(ino) = next else {
                if wrapped || cur == 0 {
                    break;
                }
                wrapped = true;
                self.vmscan.lru.active_cursor = 0;
                continue;
            };
            let l = self.vmscan.lru.inodes.get_mut(&ino).expect("found");
            let k = l.active.min(left);
            let mut pos = k;
            while pos > 0 {
                let Some(a) = l.active_pos.next_at_or_after(0) else {
                    break;
                };
                let e = l.active_pos.run_end(a).expect("in the set").min(a + pos);
                l.active_pos.remove(a, e);
                pos -= e - a;
            }
            l.active -= k;
            left -= k;
            moved += k;
            self.vm.nr_active_file -= k;
            self.vm.nr_inactive_file += k;
            self.vmscan.lru.active_cursor = if left > 0 { ino + 1 } else { ino };
        }
        self.vm.pgrefill += moved;
        self.vm.pgdeactivate += moved;
        moved
    }

    /// `shrink_lruvec` of the root lruvec at `priority` (file lists only:
    /// no swap): `get_scan_count`'s targets in batches of
    /// SWAP_CLUSTER_MAX, the active list shrunk only when the inactive one
    /// is low (`may_deactivate`). Once `nr_to_reclaim` pages are reclaimed
    /// the loop stops (no anon target to balance against), except in a
    /// global direct reclaimer's first pass at DEF_PRIORITY, which scans
    /// its whole target (`proportional_reclaim`).
    pub(crate) fn shrink_lruvec(
        &mut self,
        pid: Pid,
        priority: u32,
        nr_to_reclaim: u64,
        kswapd: bool,
    ) -> ReclaimStat {
        let v = &self.vm;
        let input = ScanInput {
            size: [
                v.nr_inactive_anon,
                v.nr_anon_pages - v.nr_inactive_anon,
                v.nr_inactive_file,
                v.nr_active_file,
            ],
            priority,
            swappiness: 60,
            swap: false,
            ..Default::default()
        };
        let (mut nr, _) = get_scan_count(&input);
        let may_deactivate =
            inactive_is_low(v.nr_inactive_file, v.nr_active_file, self.page_size());
        let proportional = !kswapd && priority == crate::mm::vmscan::DEF_PRIORITY;
        let mut st = ReclaimStat::default();
        while nr[LRU_INACTIVE_FILE] > 0 || nr[LRU_ACTIVE_FILE] > 0 {
            if nr[LRU_INACTIVE_FILE] > 0 {
                let k = nr[LRU_INACTIVE_FILE].min(SWAP_CLUSTER_MAX);
                nr[LRU_INACTIVE_FILE] -= k;
                let s = self.shrink_inactive_list(pid, k, priority, kswapd);
                st.add(&s);
            }
            if nr[LRU_ACTIVE_FILE] > 0 {
                let k = nr[LRU_ACTIVE_FILE].min(SWAP_CLUSTER_MAX);
                nr[LRU_ACTIVE_FILE] -= k;
                if may_deactivate {
                    st.refill += self.shrink_active_list(k);
                }
            }
            if st.reclaimed < nr_to_reclaim || proportional {
                continue;
            }
            break;
        }
        st
    }

    /// What `shrink_node` does after the lists (and the shrinkers): set
    /// the node's flags from kswapd's findings and throttle the reclaimer.
    /// 5.16+: kswapd meeting tagged pages still under writeback sleeps on
    /// VMSCAN_THROTTLE_WRITEBACK; a direct reclaimer sleeps a jiffy on
    /// VMSCAN_THROTTLE_CONGESTED while the lruvec is congested (every
    /// dirty page kswapd met was tagged already). Before 5.16 kswapd
    /// called `congestion_wait(BLK_RW_ASYNC, HZ/10)` instead, and direct
    /// reclaimers `wait_iff_congested`, which with blk-mq (no congested
    /// bdi) never sleeps.
    pub(crate) fn shrink_node_flags(&mut self, pid: Pid, kswapd: bool, st: &ReclaimStat) {
        let v5_16 = self.sc.features.reclaim_throttle_v5_16;
        let lru = &mut self.vmscan.lru;
        if kswapd {
            if st.writeback > 0 && st.writeback == st.taken {
                lru.pgdat_writeback = true;
            }
            if st.unqueued_dirty == st.file_taken {
                lru.pgdat_dirty = true;
            }
            if st.immediate > 0 {
                if v5_16 {
                    self.reclaim_throttle(pid, ThrottleReason::Writeback);
                } else {
                    self.congestion_wait(pid);
                }
            }
            let lru = &mut self.vmscan.lru;
            if st.dirty > 0 && st.dirty == st.congested {
                lru.lruvec_congested = true;
            }
        } else if v5_16 && self.vmscan.lru.lruvec_congested {
            self.reclaim_throttle(pid, ThrottleReason::Congested);
        }
    }

    /// `clear_pgdat_congested`: kswapd found the node balanced.
    pub(crate) fn clear_pgdat_congested(&mut self) {
        let lru = &mut self.vmscan.lru;
        lru.lruvec_congested = false;
        lru.pgdat_dirty = false;
        lru.pgdat_writeback = false;
    }

    /// `consider_reclaim_throttle` after a direct reclaimer's pass: good
    /// progress wakes the NOPROGRESS sleepers; none at priority 1 sleeps.
    pub(crate) fn consider_reclaim_throttle(
        &mut self,
        pid: Pid,
        priority: u32,
        nr_reclaimed: u64,
        nr_scanned: u64,
    ) {
        if nr_reclaimed > nr_scanned / 8 {
            self.reclaim_throttle_wake(ThrottleReason::Noprogress);
            return;
        }
        if self.sc.features.reclaim_throttle_v5_16 && priority == 1 && nr_reclaimed == 0 {
            self.reclaim_throttle(pid, ThrottleReason::Noprogress);
        }
    }

    /// `skip_throttle_noprogress`: hopeless kswapd, or dirty and writeback
    /// pages at most half of the reclaimable ones.
    fn skip_throttle_noprogress(&self) -> bool {
        if self.vmscan.kswapd_failures >= crate::mm::vmscan::MAX_RECLAIM_RETRIES {
            return true;
        }
        let pending = self.vm.nr_dirty + self.vm.nr_writeback;
        let reclaimable = self.vm.nr_inactive_file + self.vm.nr_active_file;
        2 * pending <= reclaimable
    }

    /// `reclaim_throttle`: task `pid` will sleep on the reason's wait queue
    /// at its next step, up to the reason's timeout (WRITEBACK 100 ms,
    /// ISOLATED 20 ms, CONGESTED and NOPROGRESS one jiffy, these two not
    /// while dirty and writeback pages are at most half the reclaimable).
    /// A kernel thread other than kswapd never sleeps here.
    pub(crate) fn reclaim_throttle(&mut self, pid: Pid, reason: ThrottleReason) {
        let is_kswapd = self.vmscan.kswapd == Some(pid);
        if self.tasks[pid].kthread && !is_kswapd {
            return;
        }
        let hz = self.hz();
        let timeout = match reason {
            ThrottleReason::Writeback => hz / 10,
            ThrottleReason::Isolated => hz / 50,
            ThrottleReason::Congested | ThrottleReason::Noprogress => {
                if self.skip_throttle_noprogress() {
                    return;
                }
                1
            }
        };
        let t = &mut self.tasks[pid];
        if t.reclaim_throttle.is_none() {
            t.reclaim_throttle = Some(Box::new(TaskThrottle {
                reason: Some(reason),
                timeout,
                start: None,
            }));
        }
    }

    /// The pre-5.16 `congestion_wait(BLK_RW_ASYNC, HZ/10)`: with blk-mq no
    /// bdi is congested, so nobody ends it early: a 100 ms sleep.
    pub(crate) fn congestion_wait(&mut self, pid: Pid) {
        let timeout = self.hz() / 10;
        let t = &mut self.tasks[pid];
        if t.reclaim_throttle.is_none() {
            t.reclaim_throttle = Some(Box::new(TaskThrottle {
                reason: None,
                timeout,
                start: None,
            }));
        }
    }

    /// Wake the tasks throttled for `reason`.
    fn reclaim_throttle_wake(&mut self, reason: ThrottleReason) {
        let w = std::mem::take(&mut self.vmscan.lru.waiters[reason as usize]);
        for pid in w {
            self.wake_up_process(pid);
        }
    }

    /// A task's throttle at its next step: start the sleep (on the wait
    /// queue, with a timer), or, woken or timed out, end it and trace
    /// `mm_vmscan_throttled` (6.18's format, its `usect_delayed` typo
    /// included). None: the task carries on.
    pub fn reclaim_throttle_step(&mut self, pid: Pid) -> Option<crate::kernel::Action> {
        let mut th = *self.tasks[pid].reclaim_throttle.clone()?;
        let now = self.now();
        match th.start {
            None => {
                th.start = Some(now);
                self.tasks[pid].reclaim_throttle = Some(Box::new(th));
                if let Some(r) = th.reason {
                    let lru = &mut self.vmscan.lru;
                    if r == ThrottleReason::Writeback {
                        if lru.nr_writeback_throttled == 0 {
                            lru.nr_reclaim_start = lru.nr_throttled_written;
                        }
                        lru.nr_writeback_throttled += 1;
                    }
                    lru.waiters[r as usize].push(pid);
                }
                let at = self.timer_fire_time(self.jiffies() + th.timeout);
                // inside reclaim's memstall (kswapd's balance_pgdat, a
                // direct reclaimer's __perform_reclaim)
                use crate::kernel::{psi::Stall, Action};
                Some(self.stalled(pid, Stall::Mem, Action::SleepUntil(at)))
            }
            Some(start) => {
                self.tasks[pid].reclaim_throttle = None;
                if let Some(r) = th.reason {
                    let lru = &mut self.vmscan.lru;
                    lru.waiters[r as usize].retain(|&p| p != pid);
                    if r == ThrottleReason::Writeback {
                        lru.nr_writeback_throttled -= 1;
                    }
                    if self.tracer.on.mm_vmscan_throttled {
                        let timeout_us = th.timeout * 1_000_000 / self.hz();
                        let delayed_us = (now - start) / 1000;
                        self.trace_line(
                            pid,
                            "mm_vmscan_throttled",
                            format_args!(
                                "nid=0 usec_timeout={timeout_us} usect_delayed={delayed_us} reason={}",
                                r.name()
                            ),
                        );
                    }
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_count_without_swap_is_file_only() {
        let s = ScanInput {
            size: [1 << 20, 1 << 20, 4096 * 3, 4096 * 5],
            priority: 12,
            swappiness: 60,
            ..Default::default()
        };
        let (nr, b) = get_scan_count(&s);
        assert_eq!(b, ScanBalance::File);
        assert_eq!(nr, [0, 0, 3, 5]);
        let (nr, _) = get_scan_count(&ScanInput { priority: 0, ..s });
        assert_eq!(nr, [0, 0, 4096 * 3, 4096 * 5]);
    }

    #[test]
    fn scan_count_fractions_with_swap() {
        // equal costs: anon gets swappiness/(200) of the pressure, file the rest
        let s = ScanInput {
            size: [1 << 22; 4],
            priority: 10,
            swappiness: 60,
            swap: true,
            anon_cost: 100,
            file_cost: 100,
            ..Default::default()
        };
        let (nr, b) = get_scan_count(&s);
        assert_eq!(b, ScanBalance::Fract);
        let per = (1u64 << 22) >> 10;
        // ap = 60 * 401 / 201 = 119, fp = 140 * 401 / 201 = 279
        assert_eq!(nr[LRU_INACTIVE_ANON], per * 119 / 398);
        assert_eq!(nr[LRU_INACTIVE_FILE], per * 279 / 398);
        // costly anon (refaults, swap-ins) shifts pressure to file
        let (nr2, _) = get_scan_count(&ScanInput {
            anon_cost: 1000,
            file_cost: 10,
            ..s
        });
        // ap = 60 * 3031 / 2011 = 90, fp = 140 * 3031 / 1021 = 415
        assert_eq!(nr2[LRU_INACTIVE_ANON], per * 90 / 505);
        assert_eq!(nr2[LRU_INACTIVE_FILE], per * 415 / 505);
        // priority 0 scans everything equally; a tiny file LRU scans anon
        assert_eq!(
            get_scan_count(&ScanInput { priority: 0, ..s }).1,
            ScanBalance::Equal
        );
        let (nr3, b3) = get_scan_count(&ScanInput {
            file_is_tiny: true,
            ..s
        });
        assert_eq!(b3, ScanBalance::Anon);
        assert_eq!(nr3[LRU_INACTIVE_FILE], 0);
        assert_eq!(nr3[LRU_INACTIVE_ANON], per);
        let (_, b4) = get_scan_count(&ScanInput {
            cache_trim_mode: true,
            ..s
        });
        assert_eq!(b4, ScanBalance::File);
    }

    #[test]
    fn inactive_ratio() {
        let ps = 4096;
        let gib = (1u64 << 30) / ps;
        // under 1 GiB the ratio is 1: low once active > inactive
        assert!(!inactive_is_low(1000, 1000, ps));
        assert!(inactive_is_low(1000, 1001, ps));
        // 1 GiB: sqrt(10) = 3
        assert!(!inactive_is_low(gib / 4, 3 * gib / 4, ps));
        assert!(inactive_is_low(gib / 4 - 1, 3 * gib / 4 + 1, ps));
        // 10 GiB: ratio 10
        // 10 GiB: ratio 10, low below 10/11 GiB inactive
        assert!(!inactive_is_low(238_313, 10 * gib - 238_313, ps));
        assert!(inactive_is_low(238_312, 10 * gib - 238_312, ps));
        // 100 GiB: ratio 31
        assert!(inactive_is_low(100 * gib / 33, 100 * gib * 32 / 33, ps));
        assert_eq!(isqrt(1000), 31);
    }

    fn machine() -> (Kernel, Pid) {
        let sc = crate::scenario::Scenario::load_str(
            "[machine]\nmemory = \"1G\"\n[devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n[filesystems.f]\ndevice = \"loop0\"\ntype = \"xfs\"\n[jobs.dd]\nbs = \"1M\"\n",
            "t.toml",
            "t",
            &[],
        )
        .unwrap();
        let k = Kernel::new(sc, crate::trace::Tracer::disabled());
        let pid = k.tasks.iter().position(|t| t.comm == "dd").expect("dd");
        (k, pid)
    }

    /// `n` clean pages of a read file, cached.
    fn read_file(k: &mut Kernel, n: u64) -> InodeId {
        let ino = k.create_inode(0);
        k.filemap_track(ino);
        k.inodes[ino].nr_pages_span = n;
        k.inodes[ino].nr_cached = n;
        k.vm.nr_file_pages += n;
        k.vm.nr_inactive_file += n;
        k.page_alloc(None, n, crate::mm::page_alloc::Gfp::PageCacheRead);
        k.ra.files.get_mut(&ino).unwrap().present.insert(0, n);
        ino
    }

    /// The second access to an inactive page activates it; reclaim
    /// leaves active pages be; the active list's shrink deactivates them.
    #[test]
    fn second_access_activates() {
        let (mut k, pid) = machine();
        let ino = read_file(&mut k, 100);
        k.folio_mark_accessed(ino, 0, 10);
        assert_eq!((k.vm.pgactivate, k.vm.nr_active_file), (0, 0));
        k.folio_mark_accessed(ino, 5, 20);
        assert_eq!((k.vm.pgactivate, k.vm.nr_active_file), (5, 5));
        let ap = &k.vmscan.lru.inodes[&ino].active_pos;
        assert_eq!(
            (ap.count(), ap.next_at_or_after(0), ap.run_end(5)),
            (5, Some(5), Some(10))
        );
        // pages 0-4 and 10-19 are referenced; active ones stay active
        k.folio_mark_accessed(ino, 0, 20);
        assert_eq!(k.vm.nr_active_file, 20);
        k.folio_mark_accessed(ino, 0, 20);
        assert_eq!((k.vm.pgactivate, k.vm.nr_active_file), (20, 20));
        k.check_invariants().unwrap();
        // reclaim takes the 80 inactive pages and none of the active ones
        let st = k.shrink_inactive_list(pid, 100, 12, true);
        assert_eq!((st.scanned, st.reclaimed), (80, 80));
        assert_eq!(k.inodes[ino].nr_cached, 20);
        assert_eq!(k.vm.nr_inactive_file, 0);
        // deactivation moves 8 back; reclaim then takes them
        assert_eq!(k.shrink_active_list(8), 8);
        assert_eq!((k.vm.pgdeactivate, k.vm.pgrefill), (8, 8));
        assert_eq!(k.vm.nr_active_file, 12);
        let st = k.shrink_inactive_list(pid, 32, 12, true);
        assert_eq!(st.reclaimed, 8);
        assert_eq!(k.vm.pgsteal_kswapd, 88);
        k.check_invariants().unwrap();
    }

    impl Kernel {
        /// Drop every cached page of a clean read file.
        fn lru_forget_clean(&mut self, ino: InodeId) {
            let n = self.inodes[ino].nr_cached;
            self.ra.files.get_mut(&ino).unwrap().present.remove(0, n);
            self.lru_free_inactive(ino, n);
        }
    }

    /// Dirty and writeback pages at the tail: tagged and activated; the
    /// tagged ones rotate to the tail when their writeback ends
    /// (`pgrotated`) and are reclaimed first; a batch all dirty and
    /// unqueued wakes the flushers.
    #[test]
    fn pg_reclaim_tagging_and_rotation() {
        let (mut k, pid) = machine();
        let ino = k.create_inode(0);
        k.filemap_dirty_range(pid, ino, 0, 100);
        k.inodes[ino].dirty.remove(0, 40);
        k.start_writeback_range(ino, 40);
        // direct reclaim: 32 of the 40 under writeback
        let st = k.shrink_inactive_list(pid, 32, 12, false);
        assert_eq!((st.scanned, st.reclaimed), (32, 0));
        assert_eq!((st.writeback, st.dirty, st.immediate), (32, 32, 0));
        assert_eq!(k.vm.nr_active_file, 32);
        assert_eq!(k.vmscan.lru.inodes[&ino].tag_wb, 32);
        // the other 8, then 24 dirty: nr_vmscan_immediate_reclaim
        let st = k.shrink_inactive_list(pid, 32, 12, false);
        assert_eq!((st.writeback, st.unqueued_dirty), (8, 24));
        assert_eq!(k.vm.nr_vmscan_immediate_reclaim, 24);
        assert!(k.wbs.iter().all(|w| w.start_all.is_none()));
        // 32 dirty, none queued: the flushers are woken
        let st = k.shrink_inactive_list(pid, 32, 12, false);
        assert_eq!((st.taken, st.unqueued_dirty), (32, 32));
        assert_eq!(k.vm.nr_vmscan_immediate_reclaim, 56);
        assert!(k
            .wbs
            .iter()
            .any(|w| w.start_all == Some(crate::fs::fs_writeback::WbReason::Vmscan)));
        assert_eq!(k.vm.pgactivate, 96);
        // writeback ends: the 40 tagged pages go to the inactive tail
        k.end_writeback_range(ino, 40);
        assert_eq!(k.vm.pgrotated, 40);
        assert_eq!(k.vm.nr_active_file, 56);
        assert_eq!(k.vmscan.lru.rotated, VecDeque::from([(ino, 40)]));
        let st = k.shrink_inactive_list(pid, 32, 12, false);
        assert_eq!((st.scanned, st.reclaimed), (32, 32));
        assert_eq!(k.vm.pgsteal_direct, 32);
        // tagged dirty pages keep the flag under writeback
        k.inodes[ino].dirty.remove(40, 70);
        k.start_writeback_range(ino, 30);
        let l = &k.vmscan.lru.inodes[&ino];
        assert_eq!((l.tag_dirty, l.tag_wb), (26, 30));
        k.check_invariants().unwrap();
        // kswapd meeting tagged pages under writeback while the node is
        // PGDAT_WRITEBACK: nr_immediate, and (5.16) a WRITEBACK throttle
        k.shrink_active_list(100);
        k.vmscan.lru.pgdat_writeback = true;
        let st = k.shrink_inactive_list(pid, 32, 12, true);
        assert_eq!((st.reclaimed, st.immediate, st.congested), (8, 24, 24));
        k.shrink_node_flags(pid, true, &st);
        let th = k.tasks[pid].reclaim_throttle.as_ref().expect("throttled");
        assert_eq!(th.reason, Some(ThrottleReason::Writeback));
        assert_eq!(th.timeout, k.hz() / 10);
    }

    /// 5.16's throttles: CONGESTED and NOPROGRESS only while dirty and
    /// writeback pages are more than half the file LRU, a jiffy each, traced
    /// when they end; WRITEBACK sleepers woken once more than 32 pages a
    /// sleeper were written back.
    #[test]
    fn reclaim_throttle_rules() {
        let (mut k, pid) = machine();
        k.tracer = crate::trace::Tracer::new(&["mm_vmscan_throttled".to_string()]);
        let clean = read_file(&mut k, 1000);
        let ino = k.create_inode(0);
        k.filemap_dirty_range(pid, ino, 0, 100);
        // mostly clean memory: no NOPROGRESS sleep
        k.reclaim_throttle(pid, ThrottleReason::Noprogress);
        assert!(k.tasks[pid].reclaim_throttle.is_none());
        // mostly dirty: a direct reclaimer on a congested lruvec sleeps a jiffy
        k.lru_forget_clean(clean);
        k.vmscan.lru.lruvec_congested = true;
        k.shrink_node_flags(pid, false, &ReclaimStat::default());
        let at = k.timer_fire_time(k.jiffies() + 1);
        assert!(matches!(
            k.reclaim_throttle_step(pid),
            Some(crate::kernel::Action::SleepUntil(t)) if t == at
        ));
        assert_eq!(
            k.vmscan.lru.waiters[ThrottleReason::Congested as usize],
            [pid]
        );
        assert!(k.reclaim_throttle_step(pid).is_none());
        assert!(k.tasks[pid].reclaim_throttle.is_none());
        assert!(k.vmscan.lru.waiters.iter().all(|w| w.is_empty()));
        assert!(k.tracer.buf.contains(
            ": mm_vmscan_throttled: nid=0 usec_timeout=4000 usect_delayed=0 reason=VMSCAN_THROTTLE_CONGESTED\n"
        ));
        // WRITEBACK: woken by the 33rd page written back
        k.reclaim_throttle(pid, ThrottleReason::Writeback);
        assert!(k.reclaim_throttle_step(pid).is_some());
        assert_eq!(k.vmscan.lru.nr_writeback_throttled, 1);
        k.inodes[ino].dirty.remove(0, 40);
        k.start_writeback_range(ino, 40);
        k.end_writeback_range(ino, 32);
        assert_eq!(k.vmscan.lru.waiters[0], [pid]);
        k.end_writeback_range(ino, 1);
        assert!(k.vmscan.lru.waiters[0].is_empty());
        assert!(k.reclaim_throttle_step(pid).is_none());
        assert_eq!(k.vmscan.lru.nr_writeback_throttled, 0);
        // the pre-5.16 kswapd: congestion_wait, untraced
        k.sc.features.reclaim_throttle_v5_16 = false;
        let st = ReclaimStat {
            immediate: 1,
            ..Default::default()
        };
        k.shrink_node_flags(pid, true, &st);
        let th = k.tasks[pid].reclaim_throttle.as_ref().expect("waits");
        assert_eq!((th.reason, th.timeout), (None, k.hz() / 10));
    }
}
