//! Page reclaim (mm/vmscan.c): kswapd (`kswapd`, `kswapd_try_to_sleep`,
//! `balance_pgdat`, `wakeup_kswapd`), direct reclaim (`try_to_free_pages`,
//! `do_try_to_free_pages`) and what both call, `shrink_node`.
//!
//! `shrink_node` is a seam: it drops clean page-cache pages, inode by inode
//! from where the last pass stopped (no LRU lists, no active/inactive
//! balance, no dirty or writeback pages met at the tail, no shrinkers), and
//! every page it looks at is one it frees (pgscan = pgsteal). The scan
//! target per pass is the kernel's (`lru_size >> priority`), and each
//! page scanned costs `machine.cost.reclaim_per_page` of CPU in the task
//! that reclaims.

use crate::kernel::{Action, InodeId, Kernel, Pid};
use crate::mm::page_alloc::{Gfp, SWAP_CLUSTER_MAX, ZONE_MOVABLE};
use crate::sim::Ns;

/// `DEF_PRIORITY`.
pub const DEF_PRIORITY: u32 = 12;
/// `MAX_RECLAIM_RETRIES`.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// Reclaim's state: one node's.
#[derive(Clone, Debug, Default)]
pub struct Vmscan {
    /// `totalreserve_pages` as the dirty limits read it: the zones' value,
    /// or `machine.reserve`.
    pub totalreserve_pages: u64,
    /// The inode where clean-page reclaim continues.
    pub cursor: InodeId,
    /// kswapd0's task, created the first time it is woken.
    pub kswapd: Option<Pid>,
    /// kswapd sleeps on `kswapd_wait` (napping or asleep): a wakeup can
    /// reach it (`waitqueue_active`).
    pub kswapd_waiting: bool,
    /// kswapd was woken during its 100 ms nap.
    pub kswapd_woken: bool,
    /// `pgdat->kswapd_highest_zoneidx` (None: MAX_NR_ZONES, no request).
    pub kswapd_highest_zoneidx: Option<usize>,
    /// `pgdat->kswapd_failures`: balance_pgdat runs that reclaimed nothing.
    pub kswapd_failures: u32,
    /// Tasks asleep in a shrinker (≤ 5.8 XFS inode reclaim), with what
    /// they do when woken (fs/xfs_icache.rs).
    pub shrink_waits: std::collections::BTreeMap<
        Pid,
        std::collections::VecDeque<crate::fs::xfs_icache::XfsReclaimWait>,
    >,
    /// The reclaiming task that can sleep in a shrinker (kswapd, or a
    /// workload task that resumes its allocation when woken); other
    /// reclaimers never sleep there.
    pub may_sleep: Option<Pid>,
}

/// Who runs a `shrink_node` pass (`struct scan_control`'s part the
/// shrinkers read).
#[derive(Clone, Copy, Debug)]
pub struct ScanControl {
    pub pid: Pid,
    pub priority: u32,
    pub gfp: Gfp,
}

/// Where kswapd is in its loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KswapdPhase {
    /// Asleep until woken (`schedule()` in `kswapd_try_to_sleep`).
    #[default]
    Asleep,
    /// The 100 ms nap of `kswapd_try_to_sleep`.
    Nap,
    /// In `balance_pgdat` at a priority.
    Balance,
}

/// kswapd's loop state (`struct Body::Kswapd`).
#[derive(Clone, Debug, Default)]
pub struct KswapdState {
    pub phase: KswapdPhase,
    pub priority: u32,
    /// The zone index balance_pgdat works for.
    pub idx: usize,
    /// Pages reclaimed in this balance_pgdat run.
    pub nr_reclaimed: u64,
}

impl Kernel {
    /// `shrink_node` as modelled: drop up to `want` clean page-cache pages,
    /// from the inodes in order, oldest first, from where the last pass
    /// stopped and round again; an unused inode whose last page goes is
    /// evicted (`prune_icache_sb`). Returns the pages freed.
    #[inline(never)]
    fn shrink_node(&mut self, want: u64, sc: ScanControl) -> u64 {
        let lru_pages = self.vm.nr_inactive_file + self.vm.nr_active_file;
        let mut want = want;
        let mut freed = 0;
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
                self.page_free(take);
                self.page_freed_host(take);
                want -= take;
                freed += take;
                self.inode_maybe_evict(i);
            }
            if want > 0 {
                i = if i + 1 == hi { lo } else { i + 1 };
            }
        }
        self.vmscan.cursor = i;
        self.inodes.release_evicted();
        // shrink_node_memcgs: the root memcg's shrinkers after its LRUs
        let ctl = crate::mm::shrinker::ShrinkCtl {
            priority: sc.priority,
            nr_scanned: freed,
            nr_eligible: lru_pages,
            gfp: sc.gfp,
        };
        self.shrink_slab(sc.pid, &ctl);
        if freed > 0 {
            // any reclaim progress resets the failures (`shrink_node`)
            self.vmscan.kswapd_failures = 0;
        }
        freed
    }

    /// The file LRU's scan target at `priority` (`get_scan_count` with no
    /// anon to scan: `lru_size >> priority`).
    fn scan_target(&self, priority: u32) -> u64 {
        (self.vm.nr_inactive_file + self.vm.nr_active_file) >> priority
    }

    /// `try_to_free_pages` → `do_try_to_free_pages` for an allocation of
    /// task `pid` below MIN: count the stall, then shrink the node at
    /// falling priorities until SWAP_CLUSTER_MAX pages are reclaimed (at
    /// DEF_PRIORITY a global direct reclaimer scans its whole target:
    /// `proportional_reclaim`). The CPU time goes to the task's next
    /// burst. Returns the pages reclaimed.
    pub(crate) fn direct_reclaim(&mut self, pid: Pid, gfp: Gfp) -> u64 {
        self.vm.allocstall[gfp.zone()] += 1;
        if self.tracer.on.mm_vmscan_direct_reclaim_begin {
            self.trace_line(
                pid,
                "mm_vmscan_direct_reclaim_begin",
                format_args!("order=0 gfp_flags={}", gfp.name()),
            );
        }
        let mut reclaimed = 0;
        for priority in (0..=DEF_PRIORITY).rev() {
            let target = self.scan_target(priority);
            let want = if priority == DEF_PRIORITY {
                target
            } else {
                // shrink_lruvec stops after the batch that reaches the goal
                target.min((SWAP_CLUSTER_MAX - reclaimed).next_multiple_of(SWAP_CLUSTER_MAX))
            };
            let sc = ScanControl { pid, priority, gfp };
            reclaimed += self.shrink_node(want, sc);
            if self.vmscan.shrink_waits.contains_key(&pid) {
                // asleep in a shrinker: the pass ends there
                break;
            }
            if reclaimed >= SWAP_CLUSTER_MAX {
                break;
            }
        }
        self.vm.pgscan_direct += reclaimed;
        self.vm.pgsteal_direct += reclaimed;
        self.tasks[pid].owed_sys += reclaimed * self.sc.machine.cost.reclaim_per_page;
        if self.tracer.on.mm_vmscan_direct_reclaim_end {
            self.trace_line(
                pid,
                "mm_vmscan_direct_reclaim_end",
                format_args!("nr_reclaimed={reclaimed}"),
            );
        }
        reclaimed
    }

    /// `wakeup_kswapd` from an allocation by `pid` (None: outside a task)
    /// that found zone `zone` below LOW: record the request; wake kswapd if
    /// it sleeps on its wait queue, is not hopeless and the node is not
    /// balanced.
    pub(crate) fn wakeup_kswapd(
        &mut self,
        pid: Option<Pid>,
        _zone: usize,
        highest: usize,
        gfp: Gfp,
    ) {
        let r = &mut self.vmscan;
        r.kswapd_highest_zoneidx =
            Some(r.kswapd_highest_zoneidx.map_or(highest, |c| c.max(highest)));
        let k = match r.kswapd {
            Some(k) => k,
            None => {
                let k = self.new_task(
                    "kswapd0".into(),
                    crate::kernel::Body::Kswapd(Box::default()),
                    None,
                );
                self.vmscan.kswapd = Some(k);
                self.vmscan.kswapd_waiting = true;
                k
            }
        };
        if !self.vmscan.kswapd_waiting {
            return;
        }
        if self.vmscan.kswapd_failures >= MAX_RECLAIM_RETRIES || self.zones.pgdat_balanced(highest)
        {
            return;
        }
        if let Some(p) = pid.filter(|_| self.tracer.on.mm_vmscan_wakeup_kswapd) {
            self.trace_line(
                p,
                "mm_vmscan_wakeup_kswapd",
                format_args!("nid=0 order=0 gfp_flags={}", gfp.name()),
            );
        }
        self.vmscan.kswapd_woken = true;
        self.vmscan.kswapd_waiting = false;
        self.wake_up_process(k);
    }

    /// `prepare_kswapd_sleep`: hopeless, or balanced.
    fn prepare_kswapd_sleep(&self, idx: usize) -> bool {
        self.vmscan.kswapd_failures >= MAX_RECLAIM_RETRIES || self.zones.pgdat_balanced(idx)
    }

    /// One step of kswapd (`kswapd`, `kswapd_try_to_sleep`,
    /// `balance_pgdat`): a priority pass of balance_pgdat is one CPU burst.
    pub fn kswapd_step(&mut self, pid: Pid, st: &mut KswapdState) -> Action {
        loop {
            match st.phase {
                KswapdPhase::Asleep => {
                    // woken from the full sleep
                    self.vmscan.kswapd_woken = false;
                    self.balance_pgdat_start(pid, st);
                }
                KswapdPhase::Nap => {
                    self.vmscan.kswapd_waiting = false;
                    let woken = std::mem::take(&mut self.vmscan.kswapd_woken);
                    if !woken && self.prepare_kswapd_sleep(st.idx) {
                        if self.tracer.on.mm_vmscan_kswapd_sleep {
                            self.trace_line(pid, "mm_vmscan_kswapd_sleep", format_args!("nid=0"));
                        }
                        st.phase = KswapdPhase::Asleep;
                        self.vmscan.kswapd_waiting = true;
                        return Action::Block;
                    }
                    if woken {
                        self.vm.kswapd_low_wmark_hit_quickly += 1;
                    } else {
                        self.vm.kswapd_high_wmark_hit_quickly += 1;
                    }
                    self.balance_pgdat_start(pid, st);
                }
                KswapdPhase::Balance => {
                    if self.vmscan.shrink_waits.contains_key(&pid) {
                        // woken in a shrinker (≤ 5.8 XFS inode reclaim)
                        if self.xfs_reclaim_resume(pid) {
                            return Action::Block;
                        }
                    }
                    if let Some(cost) = self.balance_pgdat_pass(pid, st) {
                        if self.vmscan.shrink_waits.contains_key(&pid) {
                            // the pass's CPU time was spent before it slept
                            self.tasks[pid].owed_sys += cost;
                            return Action::Block;
                        }
                        return Action::Cpu { user: 0, sys: cost };
                    }
                    // balance_pgdat returned: kswapd_try_to_sleep
                    if self.prepare_kswapd_sleep(st.idx) {
                        st.phase = KswapdPhase::Nap;
                        self.vmscan.kswapd_waiting = true;
                        self.vmscan.kswapd_woken = false;
                        let nap = crate::sim::NSEC_PER_SEC / 10;
                        return Action::SleepUntil(self.now() + nap);
                    }
                    self.vm.kswapd_high_wmark_hit_quickly += 1;
                    self.balance_pgdat_start(pid, st);
                }
            }
        }
    }

    /// kswapd takes the request (`kswapd_highest_zoneidx`, reset to none),
    /// traces `mm_vmscan_kswapd_wake` and enters balance_pgdat
    /// (`pageoutrun`).
    fn balance_pgdat_start(&mut self, pid: Pid, st: &mut KswapdState) {
        if let Some(i) = self.vmscan.kswapd_highest_zoneidx.take() {
            st.idx = i;
        } else if st.idx == 0 {
            st.idx = ZONE_MOVABLE;
        }
        if self.tracer.on.mm_vmscan_kswapd_wake {
            self.trace_line(pid, "mm_vmscan_kswapd_wake", format_args!("nid=0 order=0"));
        }
        self.vm.pageoutrun += 1;
        st.phase = KswapdPhase::Balance;
        st.priority = DEF_PRIORITY;
        st.nr_reclaimed = 0;
    }

    /// One iteration of balance_pgdat's priority loop: done (None) once the
    /// node is balanced or the priority has run out (a run that reclaimed
    /// nothing counts a failure); otherwise shrink the node toward
    /// `nr_to_reclaim` (Σ max(HIGH, SWAP_CLUSTER_MAX) of the eligible
    /// zones, `kswapd_shrink_node`), lower the priority if the pass scanned
    /// less than that or reclaimed nothing, and return the pass's CPU time.
    fn balance_pgdat_pass(&mut self, pid: Pid, st: &mut KswapdState) -> Option<Ns> {
        if self.zones.pgdat_balanced(st.idx) {
            return None;
        }
        if st.priority < 1 {
            if st.nr_reclaimed == 0 {
                self.vmscan.kswapd_failures += 1;
            }
            return None;
        }
        let nr_to_reclaim: u64 = self
            .zones
            .zonelist(st.idx)
            .map(|i| self.zones.z[i].high().max(SWAP_CLUSTER_MAX))
            .sum();
        let want = self.scan_target(st.priority).min(nr_to_reclaim);
        let sc = ScanControl {
            pid,
            priority: st.priority,
            gfp: Gfp::Kernel,
        };
        self.vmscan.may_sleep = Some(pid);
        let got = self.shrink_node(want, sc);
        self.vmscan.may_sleep = None;
        let scanned = got;
        self.vm.pgscan_kswapd += scanned;
        self.vm.pgsteal_kswapd += got;
        st.nr_reclaimed += got;
        if scanned < nr_to_reclaim || got == 0 {
            st.priority -= 1;
        }
        // a pass that found nothing still costs its walk
        let cost = scanned.max(1) * self.sc.machine.cost.reclaim_per_page;
        Some(cost)
    }
}
