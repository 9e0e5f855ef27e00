//! Page reclaim (mm/vmscan.c): kswapd (`kswapd`, `kswapd_try_to_sleep`,
//! `balance_pgdat`, `wakeup_kswapd`), direct reclaim (`try_to_free_pages`,
//! `do_try_to_free_pages`) and what both call, `shrink_node`.
//!
//! `shrink_node` scans the LRU lists (mm/lru.rs: `get_scan_count`,
//! `shrink_inactive_list`, `shrink_active_list`, the node's flags and
//! reclaim throttling); the shrinkers are a seam after the lists. Each
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
    /// The LRU lists' state and the node's reclaim flags (mm/lru.rs).
    pub lru: crate::mm::lru::Lru,
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
    /// Objects the shrinkers freed: what `super_cache_scan` returned,
    /// and the XFS inodes reclaimed (`xs_ig_reclaims`), which both forms
    /// of `xfs_reclaim_inodes_nr` leave out of their return.
    pub shrink_freed: u64,
    /// `reclaim.txt`'s lines, one per `run.sample_interval`
    /// (`reclaim_sample`).
    pub samples: String,
}

/// `reclaim.txt`'s header: the columns of `Kernel::reclaim_sample`.
pub const RECLAIM_SAMPLES_HEADER: &str =
    "# time_s nr_free_pages min low high allocstall pgscan_kswapd pgscan_direct slabs_scanned shrink_freed\n";

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
    /// One line of `reclaim.txt`: the time, the free pages and the
    /// MIN/LOW/HIGH watermarks summed over a movable allocation's zones
    /// (what /proc/zoneinfo's `pages free` and `min`/`low`/`high` add up
    /// to), and the cumulative reclaim counters (`allocstall_*` summed,
    /// `pgscan_kswapd`, `pgscan_direct`, `slabs_scanned`, the shrinkers'
    /// freed objects), from which `wbsim plot` draws free memory against
    /// the watermarks, the stall rate and the shrinkers' rates.
    pub fn reclaim_sample(&mut self) {
        use std::fmt::Write as _;
        let (mut free, mut wm) = (0, [0u64; 3]);
        for i in self.zones.zonelist(ZONE_MOVABLE) {
            let z = &self.zones.z[i];
            free += z.free;
            wm[0] += z.min();
            wm[1] += z.low();
            wm[2] += z.high();
        }
        let v = &self.vm;
        let ns = self.now();
        let _ = writeln!(
            self.vmscan.samples,
            "{}.{:03} {free} {} {} {} {} {} {} {} {}",
            ns / crate::sim::NSEC_PER_SEC,
            ns % crate::sim::NSEC_PER_SEC / 1_000_000,
            wm[0],
            wm[1],
            wm[2],
            v.allocstall.iter().sum::<u64>(),
            v.pgscan_kswapd,
            v.pgscan_direct,
            v.slabs_scanned,
            self.vmscan.shrink_freed
        );
    }

    /// `reclaim.txt`, once reclaim ran (kswapd was woken): None before.
    pub fn reclaim_file(&self) -> Option<String> {
        self.vmscan.kswapd?;
        Some(format!("{RECLAIM_SAMPLES_HEADER}{}", self.vmscan.samples))
    }

    /// `shrink_node` for task `pid` at `priority`: the LRU lists
    /// (`shrink_lruvec`, mm/lru.rs) toward `nr_to_reclaim`, then (a seam)
    /// the shrinkers, then the node's flags and the reclaimer's throttle.
    /// Any progress resets kswapd's failures.
    #[inline(never)]
    fn shrink_node(
        &mut self,
        sc: ScanControl,
        nr_to_reclaim: u64,
        kswapd: bool,
    ) -> crate::mm::lru::ReclaimStat {
        let lru_pages = self.vm.nr_inactive_file + self.vm.nr_active_file;
        let st = self.shrink_lruvec(sc.pid, sc.priority, nr_to_reclaim, kswapd);
        // shrink_node_memcgs: the root memcg's shrinkers after its LRUs
        let ctl = crate::mm::shrinker::ShrinkCtl {
            priority: sc.priority,
            nr_scanned: st.scanned,
            nr_eligible: lru_pages,
            gfp: sc.gfp,
        };
        self.shrink_slab(sc.pid, &ctl);
        self.shrink_node_flags(sc.pid, kswapd, &st);
        if st.reclaimed > 0 {
            self.vmscan.kswapd_failures = 0;
        }
        st
    }

    /// `try_to_free_pages` → `do_try_to_free_pages` for an allocation of
    /// task `pid` below MIN: count the stall, then shrink the node at
    /// falling priorities until SWAP_CLUSTER_MAX pages are reclaimed (at
    /// DEF_PRIORITY a global direct reclaimer scans its whole target:
    /// `proportional_reclaim`), with `consider_reclaim_throttle` after each
    /// pass. The CPU time (every page scanned on either list) goes to the
    /// task's next burst. Returns the pages reclaimed.
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
        let mut work = 0;
        for priority in (0..=DEF_PRIORITY).rev() {
            let sc = ScanControl { pid, priority, gfp };
            let st = self.shrink_node(sc, SWAP_CLUSTER_MAX, false);
            reclaimed += st.reclaimed;
            work += st.scanned + st.refill;
            if self.vmscan.shrink_waits.contains_key(&pid) {
                // asleep in a shrinker: the pass ends there
                break;
            }
            self.consider_reclaim_throttle(pid, priority, reclaimed, st.scanned);
            if reclaimed >= SWAP_CLUSTER_MAX {
                break;
            }
        }
        let cpu = work * self.sc.machine.cost.reclaim_per_page;
        self.tasks[pid].owed_sys += cpu;
        // __perform_reclaim's memstall, until that CPU time has run
        self.psi_direct_reclaim(pid, cpu);
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

    /// `prepare_kswapd_sleep`: hopeless, or balanced (then the node's
    /// reclaim flags are cleared: `clear_pgdat_congested`).
    fn prepare_kswapd_sleep(&mut self, idx: usize) -> bool {
        if self.vmscan.kswapd_failures >= MAX_RECLAIM_RETRIES {
            return true;
        }
        let balanced = self.zones.pgdat_balanced(idx);
        if balanced {
            self.clear_pgdat_congested();
        }
        balanced
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
                    // balance_pgdat returned (its memstall ends):
                    // kswapd_try_to_sleep
                    self.psi_memstall_leave(pid);
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
        // balance_pgdat runs in a memstall (psi_memstall_enter)
        self.psi_memstall_enter(pid);
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
        let sc = ScanControl {
            pid,
            priority: st.priority,
            gfp: Gfp::Kernel,
        };
        self.vmscan.may_sleep = Some(pid);
        let r = self.shrink_node(sc, nr_to_reclaim, true);
        self.vmscan.may_sleep = None;
        st.nr_reclaimed += r.reclaimed;
        if r.scanned < nr_to_reclaim || r.reclaimed == 0 {
            st.priority -= 1;
        }
        // a pass that found nothing still costs its walk
        let cost = (r.scanned + r.refill).max(1) * self.sc.machine.cost.reclaim_per_page;
        Some(cost)
    }
}
