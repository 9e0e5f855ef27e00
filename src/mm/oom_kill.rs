//! What an allocation does when reclaim has failed it: the retry rules of
//! `__alloc_pages_slowpath` (mm/page_alloc.c `should_reclaim_retry`,
//! `__alloc_pages_may_oom`) and the OOM killer (mm/oom_kill.c
//! `out_of_memory`, `select_bad_process`, `oom_badness`,
//! `oom_kill_process`), as 6.1 has them.
//!
//! A task's allocation that finds memory below MIN after a direct reclaim
//! pass that freed nothing takes its pages from the reserves at once
//! (`page_alloc`: the callers cannot wait in the middle of their step), and
//! the task then goes on with the kernel's loop at its next step, before
//! anything else (`alloc_retry_step`):
//!
//! 1. `should_reclaim_retry`: a pass that freed nothing adds one to
//!    `no_progress_loops`, one that freed something resets it. Past
//!    `MAX_RECLAIM_RETRIES` (16), or if no zone would pass MIN even with
//!    every reclaimable page freed, the task tries the OOM path;
//! 2. the retry: kswapd is woken, and the allocation is done once a zone
//!    is above MIN again; if not, another direct reclaim pass (another
//!    `allocstall`), whose CPU time is the task's next burst, and back to 1;
//! 3. `__alloc_pages_may_oom`: done if a zone is above HIGH; an allocation
//!    without `__GFP_FS` does not kill (`out_of_memory` returns true for
//!    it: the loop starts over with its count reset); else `out_of_memory`.
//!
//! `out_of_memory`: the allocating task, if already a victim, takes its
//! pages and goes (`task_will_free_mem`). A victim that has not exited yet
//! makes the others wait (`oom_evaluate_task` aborts the scan): the
//! allocator sleeps a jiffy and starts over. Else the process with the
//! most points (`oom_badness`: its tasks' anonymous pages, plus one for
//! its page tables, which the model does not size; ties go to the later
//! process, as the kernel's `<` comparison over `for_each_process` does)
//! is killed: `oom_kill` counts it, `mark_victim` is traced, and each of
//! its tasks exits at its next step, freeing its anonymous pages. Kernel
//! threads are never chosen. With no process left to kill the kernel
//! panics ("System is deadlocked on memory"), and so does the run.
//!
//! A process is a task, except simoop's threads, which share one mm (the
//! job). Not modelled: swap (anonymous pages are not reclaimable, as on
//! the seed's machines), `oom_score_adj`, the OOM reaper (a victim frees its
//! memory as it exits), the oom_lock (one task is in the OOM path at a
//! time, since the model runs one step at a time), and the killable sleeps
//! that SIGKILL would cut short (a victim exits when it next runs).

use crate::kernel::{Action, Kernel, Pid, RunState};
use crate::mm::page_alloc::{Gfp, SWAP_CLUSTER_MAX, WMARK_HIGH, WMARK_MIN};
use crate::mm::vmscan::MAX_RECLAIM_RETRIES;
use crate::sim::Ns;
use std::collections::BTreeMap;

/// `OOM_REAPER_DELAY`: the reaper waits this long for a victim to exit
/// (jiffies are HZ-dependent; 2 s).
pub const OOM_REAPER_DELAY: Ns = 2 * crate::sim::NSEC_PER_SEC;

/// An allocation in `__alloc_pages_slowpath`'s loop after reclaim failed
/// it (`Task::alloc_retry`).
#[derive(Clone, Copy, Debug)]
pub struct AllocRetry {
    pub gfp: Gfp,
    /// `no_progress_loops`.
    pub no_progress_loops: u32,
    /// The last direct reclaim pass freed pages (`did_some_progress`).
    pub progress: bool,
}

/// The OOM side of the tasks, kept apart from `Task` since few tasks have
/// any: O(tasks with anonymous pages).
#[derive(Clone, Debug, Default)]
pub struct OomState {
    /// Allocations in the slow path's loop, gone on with at each task's
    /// next step.
    pub retrying: BTreeMap<Pid, AllocRetry>,
    /// Anonymous pages the model allocated for each task (`MM_ANONPAGES`
    /// of its mm): what `oom_badness` counts.
    pub rss: BTreeMap<Pid, u64>,
    /// Tasks the OOM killer killed that have not exited yet
    /// (`tsk_is_oom_victim`), with the time the OOM reaper takes their
    /// memory if they have not exited by then, and whether it has
    /// (`MMF_OOM_SKIP`).
    pub victims: BTreeMap<Pid, (Ns, bool)>,
}

impl OomState {
    /// No task retries an allocation or is a victim (the common case: the
    /// scheduler's step looks no further).
    pub fn is_empty(&self) -> bool {
        self.retrying.is_empty() && self.victims.is_empty()
    }
}

/// What `out_of_memory` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Oom {
    /// The caller is a victim: it takes its pages and exits.
    CallerIsVictim,
    /// A process was killed, or a victim is still exiting: the caller
    /// starts over (`did_some_progress`); `true` if it should first sleep
    /// a jiffy while the victim exits.
    Progress(bool),
    /// Nothing left to kill: the kernel panics.
    Panic,
}

/// The `stopped_by` of a run whose kernel panicked out of memory.
pub const OOM_PANIC: &str = "kernel panic";

impl Kernel {
    /// The reserves below MIN give `n` pages an allocation of `pid` could
    /// not get (the zones' free count is the one place that records it).
    /// A task whose allocation retries (not `__GFP_NORETRY`, not a victim,
    /// which may use the reserves, not kswapd) goes on with the slow path's
    /// loop at its next step.
    pub(crate) fn alloc_from_reserves(&mut self, pid: Option<Pid>, n: u64, gfp: Gfp) -> u64 {
        let got = self.zones.take_any(n, gfp.zone());
        if let Some(p) = pid {
            if gfp.retries() && !self.oom.victims.contains_key(&p) && self.vmscan.kswapd != Some(p)
            {
                self.oom.retrying.entry(p).or_insert(AllocRetry {
                    gfp,
                    no_progress_loops: 0,
                    progress: false,
                });
            }
        }
        got
    }

    /// `get_page_from_freelist` at `mark` for the retried allocation: a
    /// zone of its zonelist passes the watermark.
    fn alloc_retry_fits(&self, gfp: Gfp, mark: usize) -> bool {
        let highest = gfp.zone();
        self.zones
            .zonelist(highest)
            .any(|i| self.zones.z[i].watermark_ok(self.zones.z[i].wmark[mark], highest))
    }

    /// `zone_reclaimable_pages` without swap: the zone's file LRU pages.
    /// The model keeps the lists per node; a zone holds them in proportion
    /// to its used pages, as `give_back` assumes.
    fn zone_reclaimable_pages(&self, zone: usize) -> u64 {
        let used: u64 = self.zones.z.iter().map(|z| z.used()).sum();
        if used == 0 {
            return 0;
        }
        let file = self.vm.nr_inactive_file + self.vm.nr_active_file;
        (file as u128 * self.zones.z[zone].used() as u128 / used as u128) as u64
    }

    /// `should_reclaim_retry` for order 0, with `reclaim_retry_zone`
    /// traced for each zone it looks at.
    pub(crate) fn should_reclaim_retry(&mut self, pid: Pid, a: &mut AllocRetry) -> bool {
        if a.progress {
            a.no_progress_loops = 0;
        } else {
            a.no_progress_loops += 1;
        }
        if a.no_progress_loops > MAX_RECLAIM_RETRIES {
            return false;
        }
        let highest = a.gfp.zone();
        let zones: Vec<usize> = self.zones.zonelist(highest).collect();
        for i in zones {
            let reclaimable = self.zone_reclaimable_pages(i);
            let z = &self.zones.z[i];
            let available = reclaimable + z.free;
            let min = z.min();
            // __zone_watermark_ok(zone, 0, min, highest, flags, available)
            let ok = available > min + z.lowmem_reserve[highest];
            if self.tracer.on.reclaim_retry_zone {
                self.trace_line(
                    pid,
                    "reclaim_retry_zone",
                    format_args!(
                        "node=0 zone={:<8} order=0 reclaimable={reclaimable} available={available} \
                         min_wmark={min} no_progress_loops={} wmark_check={}",
                        crate::mm::page_alloc::ZONE_NAMES[i],
                        a.no_progress_loops,
                        ok as u8
                    ),
                );
            }
            if ok {
                return true;
            }
        }
        false
    }

    /// `n` anonymous pages allocated for task `pid`'s mm.
    pub fn oom_rss_add(&mut self, pid: Pid, n: u64) {
        *self.oom.rss.entry(pid).or_default() += n;
    }

    /// `n` of task `pid`'s anonymous pages freed.
    pub fn oom_rss_sub(&mut self, pid: Pid, n: u64) {
        if let Some(r) = self.oom.rss.get_mut(&pid) {
            *r -= n.min(*r);
            if *r == 0 {
                self.oom.rss.remove(&pid);
            }
        }
    }

    /// The task's step before its own logic, when some task retries an
    /// allocation or is a victim: a victim exits; a retried allocation goes
    /// on. None: the task carries on.
    pub fn oom_step(&mut self, pid: Pid) -> Option<Action> {
        if self.oom.victims.contains_key(&pid) {
            return Some(self.oom_victim_exit(pid));
        }
        self.alloc_retry_step(pid)
    }

    /// A task's retried allocation at its next step: the slow path's loop
    /// from `should_reclaim_retry` to the next direct reclaim pass (see the
    /// module's doc). None: the allocation is done and the task goes on.
    pub fn alloc_retry_step(&mut self, pid: Pid) -> Option<Action> {
        let mut a = self.oom.retrying.remove(&pid)?;
        if !self.should_reclaim_retry(pid, &mut a) {
            // __alloc_pages_may_oom
            if self.alloc_retry_fits(a.gfp, WMARK_HIGH) {
                return None;
            }
            if a.gfp.fs() {
                match self.out_of_memory(pid) {
                    Oom::CallerIsVictim | Oom::Panic => return None,
                    Oom::Progress(wait) => {
                        // "retry as long as the OOM killer is making progress"
                        a.no_progress_loops = 0;
                        if wait {
                            self.oom.retrying.insert(pid, a);
                            let at = self.timer_fire_time(self.jiffies() + 1);
                            return Some(Action::SleepUntil(at));
                        }
                    }
                }
            } else {
                // out_of_memory returns true ("does not compensate for
                // IO-less reclaim"): the count starts over
                a.no_progress_loops = 0;
            }
        }
        // retry:
        let highest = a.gfp.zone();
        self.wake_all_kswapds(Some(pid), highest, a.gfp);
        if self.alloc_retry_fits(a.gfp, WMARK_MIN) {
            return None;
        }
        let owed = self.tasks[pid].owed_sys;
        a.progress = self.direct_reclaim(pid, a.gfp) > 0;
        if self.alloc_retry_fits(a.gfp, WMARK_MIN) {
            return None;
        }
        self.oom.retrying.insert(pid, a);
        // the pass's CPU time (owed_sys) is the burst; a pass that found
        // nothing to scan still looked at the lists, a batch's worth, so
        // that a loop that cannot end (no __GFP_FS, nothing reclaimable,
        // as the kernel's livelocks) moves the clock on
        let idle = self.tasks[pid].owed_sys == owed;
        let sys = if idle {
            (SWAP_CLUSTER_MAX * self.sc.machine.cost.reclaim_per_page).max(1)
        } else {
            1
        };
        Some(Action::Cpu { user: 0, sys })
    }

    /// The process task `pid` belongs to: simoop's threads share their
    /// job's mm; any other task is a process of its own.
    fn oom_process(&self, pid: Pid) -> (usize, usize) {
        match self.tasks[pid].job {
            Some(j) if matches!(self.sc.jobs[j].kind, crate::scenario::JobKind::Simoop(_)) => {
                (1, j)
            }
            _ => (0, pid),
        }
    }

    /// `out_of_memory` for an allocation of `pid` (`select_bad_process`,
    /// `oom_badness`, `oom_kill_process`).
    pub fn out_of_memory(&mut self, pid: Pid) -> Oom {
        if self.oom.victims.contains_key(&pid) {
            return Oom::CallerIsVictim;
        }
        // (process, points, lead task) in for_each_process order
        let mut procs: Vec<((usize, usize), u64, Pid)> = Vec::new();
        for p in 0..self.tasks.len() {
            let t = &self.tasks[p];
            if t.kthread || t.state == RunState::Dead {
                continue;
            }
            if let Some(&(reap_at, reaped)) = self.oom.victims.get(&p) {
                if reaped {
                    continue;
                }
                if self.now() < reap_at {
                    // a victim still exiting: wait for it
                    return Oom::Progress(true);
                }
                self.oom_reap(p);
                continue;
            }
            let key = self.oom_process(p);
            let rss = self.oom.rss.get(&p).copied().unwrap_or(0);
            match procs.iter_mut().find(|e| e.0 == key) {
                Some(e) => e.1 += rss,
                None => procs.push((key, rss, p)),
            }
        }
        let mut chosen: Option<((usize, usize), u64, Pid)> = None;
        for e in procs {
            // oom_badness: + mm_pgtables_bytes / PAGE_SIZE (at least one)
            let points = e.1 + 1;
            if chosen.is_none_or(|c| points >= c.1) {
                chosen = Some((e.0, points, e.2));
            }
        }
        let Some((key, _, lead)) = chosen else {
            self.oom_panic();
            return Oom::Panic;
        };
        self.vm.oom_kill += 1;
        let victims: Vec<Pid> = (0..self.tasks.len())
            .filter(|&p| {
                let t = &self.tasks[p];
                !t.kthread && t.state != RunState::Dead && self.oom_process(p) == key
            })
            .collect();
        let rss: u64 = victims
            .iter()
            .map(|p| self.oom.rss.get(p).copied().unwrap_or(0))
            .sum();
        let reap_at = self.now() + OOM_REAPER_DELAY;
        for &p in &victims {
            self.oom.victims.insert(p, (reap_at, false));
        }
        if self.tracer.on.mark_victim {
            let kb = rss * self.page_size() / 1024;
            let comm = self.tasks[lead].comm.clone();
            let vpid = self.tasks[lead].pid;
            self.trace_line(
                pid,
                "mark_victim",
                format_args!(
                    "pid={vpid} comm={comm} total-vm={kb}kB anon-rss={kb}kB file-rss:0kB \
                     shmem-rss:0kB uid=0 pgtables=4kB oom_score_adj=0"
                ),
            );
        }
        if victims.contains(&pid) {
            return Oom::CallerIsVictim;
        }
        Oom::Progress(false)
    }

    /// "Out of memory and no killable processes...": the kernel panics
    /// and the run stops there.
    fn oom_panic(&mut self) {
        if self.stopped_at.is_none() {
            self.stopped_at = Some(self.now());
            self.stopped_by = Some(OOM_PANIC);
            self.end_run_now();
        }
    }

    /// `oom_reap_task_mm`: a victim still there `OOM_REAPER_DELAY` after
    /// the kill loses its anonymous pages, and the OOM killer passes over
    /// it from then on (`MMF_OOM_SKIP`). The model reaps when the next
    /// `out_of_memory` looks, not on the reaper's own timer.
    fn oom_reap(&mut self, pid: Pid) {
        if let Some(v) = self.oom.victims.get_mut(&pid) {
            v.1 = true;
        }
        self.oom_free_rss(pid);
    }

    fn oom_free_rss(&mut self, pid: Pid) {
        let rss = self.oom.rss.remove(&pid).unwrap_or(0);
        if rss > 0 {
            self.vm.nr_anon_pages = self.vm.nr_anon_pages.saturating_sub(rss);
            self.page_free(rss);
            self.page_freed_host(rss);
        }
    }

    /// An OOM victim at its next step: it exits (`do_exit` → `exit_mm`),
    /// freeing its anonymous pages.
    pub fn oom_victim_exit(&mut self, pid: Pid) -> Action {
        self.oom.victims.remove(&pid);
        self.oom.retrying.remove(&pid);
        self.tasks[pid].reclaim_throttle = None;
        self.oom_free_rss(pid);
        Action::Exit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::page_alloc::ZONE_DMA32;

    /// A 1 GiB machine with two dd writers on ext4, `a` and `b`.
    fn machine() -> (Kernel, Pid, Pid) {
        let sc = crate::scenario::Scenario::load_str(
            "[machine]\nmemory = \"1G\"\n[devices.loop0]\ntype = \"throttled\"\n\
             write_bps = \"50MiB/s\"\n[filesystems.f]\ndevice = \"loop0\"\n\
             [jobs.a]\ntype = \"dd\"\nbs = \"1M\"\n[jobs.b]\ntype = \"dd\"\nbs = \"1M\"\n",
            "t.toml",
            "t",
            &[],
        )
        .unwrap();
        let k = Kernel::new(sc, crate::trace::Tracer::disabled());
        let find = |name: &str| {
            k.tasks
                .iter()
                .position(|t| t.job == Some(k.sc.jobs.iter().position(|j| j.name == name).unwrap()))
                .unwrap()
        };
        let (a, b) = (find("a"), find("b"));
        (k, a, b)
    }

    /// Free memory below MIN in every zone, and `file` pages on the file
    /// LRU (what reclaim could still free).
    fn exhausted(k: &mut Kernel, file: u64) {
        let all: u64 = k.zones.z.iter().map(|z| z.free).sum();
        for z in k.zones.z.iter_mut() {
            z.free = z.min() / 2;
        }
        let left: u64 = k.zones.z.iter().map(|z| z.free).sum();
        k.vm.nr_free_pages -= all - left;
        k.vm.nr_inactive_file = file;
    }

    /// `should_reclaim_retry`: passes without progress count up to 16 and
    /// the 17th gives up; progress starts the count over; a node whose
    /// reclaimable pages with its free ones would not pass MIN gives up at
    /// once. Each zone looked at is traced in 6.18's format.
    #[test]
    fn reclaim_retries_sixteen_passes_without_progress() {
        let (mut k, a, _) = machine();
        k.tracer = crate::trace::Tracer::new(&["reclaim_retry_zone".to_string()]);
        exhausted(&mut k, 100_000);
        let mut r = AllocRetry {
            gfp: Gfp::PageCacheWrite,
            no_progress_loops: 0,
            progress: false,
        };
        for n in 1..=16 {
            assert!(k.should_reclaim_retry(a, &mut r), "pass {n}");
            assert_eq!(r.no_progress_loops, n);
        }
        assert!(!k.should_reclaim_retry(a, &mut r));
        r.progress = true;
        assert!(k.should_reclaim_retry(a, &mut r));
        assert_eq!(r.no_progress_loops, 0);
        // DMA32 (the movable allocation's first populated zone) is the one
        // looked at: its share of the file LRU is its share of used pages
        let z = &k.zones.z[ZONE_DMA32];
        let used: u64 = k.zones.z.iter().map(|z| z.used()).sum();
        let rec = 100_000 * z.used() / used;
        let line = format!(
            ": reclaim_retry_zone: node=0 zone=DMA32    order=0 reclaimable={rec} available={} \
             min_wmark={} no_progress_loops=1 wmark_check=1\n",
            rec + z.free,
            z.min()
        );
        assert!(k.tracer.buf.contains(&line), "{line} in\n{}", k.tracer.buf);
        // nothing left to reclaim: straight to the OOM path
        exhausted(&mut k, 0);
        r.progress = false;
        r.no_progress_loops = 0;
        assert!(!k.should_reclaim_retry(a, &mut r));
    }

    /// The OOM killer takes the process with the most anonymous pages;
    /// while the victim has not exited the others wait; it exits at its
    /// next step and its pages are free again. With equal points the later
    /// process goes. The kill is counted and traced.
    #[test]
    fn the_oom_killer_takes_the_largest_process() {
        let (mut k, a, b) = machine();
        k.tracer = crate::trace::Tracer::new(&["mark_victim".to_string()]);
        k.oom_rss_add(a, 1000);
        k.page_alloc(Some(a), 1000, Gfp::Anon);
        k.vm.nr_anon_pages += 1000;
        k.oom_rss_add(b, 10);
        let free = k.vm.nr_free_pages;
        assert_eq!(k.out_of_memory(b), Oom::Progress(false));
        assert_eq!(k.vm.oom_kill, 1);
        assert!(k.oom.victims.contains_key(&a));
        let line = format!(
            ": mark_victim: pid={} comm={} total-vm=4000kB anon-rss=4000kB file-rss:0kB \
             shmem-rss:0kB uid=0 pgtables=4kB oom_score_adj=0\n",
            k.tasks[a].pid, k.tasks[a].comm
        );
        assert!(k.tracer.buf.contains(&line), "{}", k.tracer.buf);
        // the victim has not exited: wait a jiffy
        assert_eq!(k.out_of_memory(b), Oom::Progress(true));
        assert!(matches!(k.oom_step(a), Some(Action::Exit)));
        assert_eq!(k.vm.nr_free_pages, free + 1000);
        assert!(k.oom.is_empty());
        // a's task is gone (the scheduler marks it dead on Exit)
        k.tasks[a].state = RunState::Dead;
        // b is all that is left: the caller is the victim
        assert_eq!(k.out_of_memory(b), Oom::CallerIsVictim);
        assert_eq!(k.vm.oom_kill, 2);
        // ties: the later process
        let (mut k, a, b) = machine();
        assert!(b > a);
        assert_eq!(k.out_of_memory(a), Oom::Progress(false));
        assert!(k.oom.victims.contains_key(&b));
    }

    /// A victim that has not exited after `OOM_REAPER_DELAY` is reaped:
    /// its pages are freed and the next kill passes over it.
    #[test]
    fn the_reaper_frees_a_victim_that_does_not_exit() {
        let (mut k, a, b) = machine();
        k.oom_rss_add(a, 500);
        k.vm.nr_anon_pages += 500;
        k.page_alloc(Some(a), 500, Gfp::Anon);
        assert_eq!(k.out_of_memory(b), Oom::Progress(false));
        assert_eq!(k.oom.victims[&a], (OOM_REAPER_DELAY, false));
        let free = k.vm.nr_free_pages;
        // the reaper's time has come (the clock stands at 0 here)
        k.oom.victims.insert(a, (0, false));
        // a is reaped and passed over: b, the caller, is the victim now
        assert_eq!(k.out_of_memory(b), Oom::CallerIsVictim);
        assert_eq!(k.vm.nr_free_pages, free + 500);
        assert_eq!(k.oom.victims[&a], (0, true));
        assert!(!k.oom.rss.contains_key(&a));
    }

    /// The retried allocation: a pass per step while nothing is freed;
    /// after the 17th pass without progress an allocation with `__GFP_FS`
    /// kills, one without it (XFS's page cache) starts over; once a zone
    /// is above MIN the allocation is done.
    #[test]
    fn a_retried_allocation_reclaims_each_step_then_kills() {
        let (mut k, a, b) = machine();
        k.oom_rss_add(b, 100);
        exhausted(&mut k, 0);
        k.vm.nr_inactive_file = 50_000;
        let stalls = |k: &Kernel| k.vm.allocstall.iter().sum::<u64>();
        for gfp in [Gfp::PageCacheWriteNofs, Gfp::PageCacheWrite] {
            k.oom.retrying.insert(
                a,
                AllocRetry {
                    gfp,
                    no_progress_loops: 0,
                    progress: false,
                },
            );
            let s0 = stalls(&k);
            for _ in 0..16 {
                assert!(matches!(k.oom_step(a), Some(Action::Cpu { .. })));
            }
            assert_eq!(stalls(&k) - s0, 16);
            assert_eq!(k.vm.oom_kill, 0);
            let after = k.oom_step(a);
            if gfp == Gfp::PageCacheWriteNofs {
                // no kill: the count starts over, and it reclaims again
                assert!(matches!(after, Some(Action::Cpu { .. })));
                assert_eq!(k.vm.oom_kill, 0);
                assert_eq!(k.oom.retrying[&a].no_progress_loops, 0);
                k.oom.retrying.remove(&a);
            } else {
                assert_eq!(k.vm.oom_kill, 1);
                assert!(k.oom.victims.contains_key(&b));
            }
        }
        // memory back above MIN: done
        k.oom.retrying.insert(
            a,
            AllocRetry {
                gfp: Gfp::Anon,
                no_progress_loops: 0,
                progress: false,
            },
        );
        k.page_free(k.zones.z[ZONE_DMA32].min());
        assert!(k.alloc_retry_step(a).is_none());
        assert!(!k.oom.retrying.contains_key(&a));
    }

    /// An allocation without `__GFP_FS` on a node with nothing to reclaim
    /// never ends (as in the kernel), but each pass moves the clock on by
    /// a batch's scan, not a nanosecond.
    #[test]
    fn a_loop_that_cannot_end_still_takes_time() {
        let (mut k, a, _) = machine();
        exhausted(&mut k, 0);
        k.oom.retrying.insert(
            a,
            AllocRetry {
                gfp: Gfp::PageCacheWriteNofs,
                no_progress_loops: 0,
                progress: false,
            },
        );
        let batch = SWAP_CLUSTER_MAX * k.sc.machine.cost.reclaim_per_page;
        for _ in 0..40 {
            match k.oom_step(a) {
                Some(Action::Cpu { sys, .. }) => assert!(sys >= batch, "{sys} < {batch}"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(k.vm.oom_kill, 0);
    }

    /// Nothing left to kill: the kernel panics and the run stops there.
    #[test]
    fn no_killable_process_panics() {
        let (mut k, a, b) = machine();
        k.tasks[a].state = RunState::Dead;
        k.tasks[b].state = RunState::Dead;
        let kthread = (0..k.tasks.len()).find(|&p| k.tasks[p].kthread).unwrap();
        assert_eq!(k.out_of_memory(kthread), Oom::Panic);
        assert_eq!(k.stopped_by, Some(OOM_PANIC));
    }
}
