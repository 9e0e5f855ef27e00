//! The pre-3.2 "IO-full" dirty throttle (mm/page-writeback.c as of
//! 2.6.32–3.1): a dirtier over its limit writes back
//! `write_chunk` pages itself, from its own context, then sleeps 1, 2, 4, …
//! jiffies (capped at HZ/10) until the dirty count falls or it has done its
//! duty. Thresholds are a plain test around `vm.dirty_ratio`, not a rate.
//!
//! Simplifications (documented, not silent): the bdi's share of the
//! threshold uses the time-aged proportions of later kernels instead of
//! 3.1's event-counted `vm_completions` (identical for one device); the
//! per-task share (`vm_dirties`) is event-counted as in 3.1; there is no
//! `global_dirty_limit` smoothing.

use crate::fs::fs_writeback::{PassStep, WbPass, WbReason, WbWork};
use crate::kernel::{Kernel, Pid, WbId};
use crate::klib::div_round_up;
use crate::klib::proportions::calc_period_shift;
use crate::mm::page_writeback::ThrottleCall;
use crate::sim::Ns;

/// What a dirtier does next inside the throttle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottleStep {
    /// Leave balance_dirty_pages.
    Done,
    /// Sleep until this time.
    Sleep(Ns),
    /// Run this much system time (foreground writeback), then step again.
    Cpu(Ns),
    /// Sleep until woken (a tag for foreground writeback), then step again.
    Block,
}

impl ThrottleStep {
    /// What the dirtier asks of the scheduler for this step; None when it
    /// leaves balance_dirty_pages and carries on.
    pub fn action(self) -> Option<crate::kernel::Action> {
        use crate::kernel::Action;
        match self {
            ThrottleStep::Done => None,
            ThrottleStep::Sleep(at) => Some(Action::SleepUntil(at)),
            ThrottleStep::Cpu(ns) => Some(Action::Cpu { user: 0, sys: ns }),
            ThrottleStep::Block => Some(Action::Block),
        }
    }
}

/// A dirtier's state inside one legacy `balance_dirty_pages` call.
#[derive(Debug)]
pub struct LegacyCall {
    write_chunk: u64,
    pages_written: u64,
    pause: u64,
    start: u64,
    pass: Option<WbPass>,
    after_sleep: bool,
    nr_reclaimable: u64,
    nr_dirty: u64,
    thresh: u64,
    bg_thresh: u64,
    bdi_thresh: u64,
    task_bdi_thresh: u64,
    bdi_dirty: u64,
    clear_dirty_exceeded: bool,
}

/// `TASK_LIMIT_FRACTION` (3.1): the share of the bdi threshold the
/// heaviest dirtier loses.
const TASK_LIMIT_FRACTION: u64 = 8;

/// The ratelimit while the bdi's `dirty_exceeded` is set (3.1's
/// `balance_dirty_pages_ratelimited_nr`: 8 pages).
const DIRTY_EXCEEDED_RATELIMIT: u64 = 8;

/// `task_dirty_limit` (3.1): heavy dirtiers get up to 1/8 less than the
/// bdi threshold, never less than half of it.
pub fn task_dirty_limit(bdi_thresh: u64, num: u64, den: u64) -> u64 {
    let inv = (bdi_thresh / TASK_LIMIT_FRACTION) as u128 * num as u128 / den.max(1) as u128;
    let dirty = bdi_thresh.saturating_sub(inv as u64);
    dirty.max(bdi_thresh / 2)
}

/// `task_min_dirty_limit`: below it, dirty_exceeded is cleared.
pub fn task_min_dirty_limit(bdi_thresh: u64) -> u64 {
    bdi_thresh - bdi_thresh / TASK_LIMIT_FRACTION
}

/// `sync_writeback_pages` (3.1): how much a throttled dirtier writes back.
pub fn sync_writeback_pages(dirtied: u64, ratelimit_pages: u64) -> u64 {
    let d = dirtied.max(ratelimit_pages);
    d + d / 2
}

/// `global_dirty_limits` before 3.2: ratios of dirtyable memory in percent,
/// with no reserve subtracted. Returns (thresh, bg_thresh).
pub fn legacy_dirty_limits(vm: &crate::scenario::Vm, page_size: u64, dirtyable: u64) -> (u64, u64) {
    let dirty = if vm.dirty_bytes != 0 {
        div_round_up(vm.dirty_bytes, page_size)
    } else {
        vm.dirty_ratio * dirtyable / 100
    };
    let mut bg = if vm.dirty_background_bytes != 0 {
        div_round_up(vm.dirty_background_bytes, page_size)
    } else {
        vm.dirty_background_ratio * dirtyable / 100
    };
    if bg >= dirty {
        bg = dirty / 2;
    }
    (dirty, bg)
}

impl Kernel {
    /// `ratelimit_pages` before 3.2: vm_total_pages / (ncpus * 32), in [16, 4 MiB].
    pub fn legacy_ratelimit_pages(&self) -> u64 {
        let ps = self.page_size();
        let total = self.sc.machine.memory / ps;
        (total / (self.sc.machine.cpus as u64 * 32)).clamp(16, (4 << 20) / ps)
    }

    /// `determine_dirtyable_memory` before 3.2: free + reclaimable + 1.
    pub fn legacy_dirtyable_memory(&self) -> u64 {
        self.vm.nr_free_pages + self.vm.nr_inactive_file + self.vm.nr_active_file + 1
    }

    /// The period shift of `vm_dirties` for the current limits.
    pub fn legacy_prop_shift(&self) -> u32 {
        let (thresh, _) = legacy_dirty_limits(
            &self.sc.vm,
            self.page_size(),
            self.legacy_dirtyable_memory(),
        );
        calc_period_shift(thresh)
    }

    /// Pages until the per-CPU counter reaches the ratelimit.
    pub fn legacy_pages_until_check(&self, pid: Pid, wb: WbId) -> u64 {
        let rl = if self.wbs[wb].dirty_exceeded {
            DIRTY_EXCEEDED_RATELIMIT
        } else {
            self.legacy_ratelimit_pages()
        };
        let cpu = self.tasks[pid].cpu as usize;
        rl.saturating_sub(self.pgwb.bdp_ratelimits[cpu]).max(1)
    }

    /// `balance_dirty_pages_ratelimited_nr` (3.1), after the task dirtied
    /// pages (already added to this CPU's counter).
    pub fn balance_dirty_pages_ratelimited_legacy(
        &mut self,
        pid: Pid,
        wb: WbId,
    ) -> Option<ThrottleStep> {
        let rlp = self.legacy_ratelimit_pages();
        let ratelimit = if self.wbs[wb].dirty_exceeded {
            DIRTY_EXCEEDED_RATELIMIT
        } else {
            rlp
        };
        let cpu = self.tasks[pid].cpu as usize;
        let p = self.pgwb.bdp_ratelimits[cpu];
        if p < ratelimit {
            return None;
        }
        self.pgwb.bdp_ratelimits[cpu] = 0;
        self.tasks[pid].throttle = ThrottleCall::Legacy(Box::new(LegacyCall {
            write_chunk: sync_writeback_pages(p, rlp),
            pages_written: 0,
            pause: 1,
            start: self.jiffies(),
            pass: None,
            after_sleep: false,
            nr_reclaimable: 0,
            nr_dirty: 0,
            thresh: 0,
            bg_thresh: 0,
            bdi_thresh: 0,
            task_bdi_thresh: 0,
            bdi_dirty: 0,
            clear_dirty_exceeded: false,
        }));
        Some(self.balance_dirty_pages_legacy(pid, wb))
    }

    /// One step of the legacy `balance_dirty_pages` loop.
    pub fn balance_dirty_pages_legacy(&mut self, pid: Pid, wb: WbId) -> ThrottleStep {
        let ThrottleCall::Legacy(mut c) = std::mem::take(&mut self.tasks[pid].throttle) else {
            panic!("not in a legacy throttle call");
        };
        let hz = self.hz();
        loop {
            if let Some(pass) = c.pass.as_mut() {
                match self.writeback_sb_inodes(pid, wb, pass) {
                    PassStep::Cpu(ns) => {
                        self.tasks[pid].throttle = ThrottleCall::Legacy(c);
                        return ThrottleStep::Cpu(ns);
                    }
                    PassStep::WaitTag => {
                        self.tasks[pid].throttle = ThrottleCall::Legacy(c);
                        return ThrottleStep::Block;
                    }
                    PassStep::Done => {
                        c.pages_written += pass.pages.max(0) as u64;
                        self.tasks[pid].legacy_pages_written += pass.pages.max(0) as u64;
                        c.pass = None;
                        if c.pages_written >= c.write_chunk {
                            return self.legacy_finish(pid, wb, c); // done our duty
                        }
                        return self.legacy_sleep(pid, c);
                    }
                }
            }
            if c.after_sleep {
                c.after_sleep = false;
                let now = self.jiffies();
                let max_pause = crate::mm::page_writeback::max_pause_jiffies(hz);
                if c.nr_dirty < c.thresh
                    && c.bdi_dirty < (c.task_bdi_thresh + c.bdi_thresh) / 2
                    && now > c.start + max_pause
                {
                    return self.legacy_finish(pid, wb, c);
                }
                // doubled up to HZ/10, the 100 ms nap of earlier kernels
                c.pause = (c.pause * 2).min((hz / 10).max(1));
            }
            // top of the loop
            c.nr_reclaimable = self.vm.nr_dirty;
            c.nr_dirty = c.nr_reclaimable + self.vm.nr_writeback;
            let (_, thresh, bg) = self.global_dirty_limits_traced(pid);
            c.thresh = thresh;
            c.bg_thresh = bg;
            if c.nr_dirty <= (bg + thresh) / 2 {
                return self.legacy_finish(pid, wb, c);
            }
            c.bdi_thresh = self.wb_calc_thresh(wb, thresh);
            let shift = self.legacy_prop_shift();
            self.pgwb.vm_dirties.shift = shift;
            let (num, den) = self.tasks[pid].dirties.fraction(&self.pgwb.vm_dirties);
            c.task_bdi_thresh = task_dirty_limit(c.bdi_thresh, num, den);
            let bdi_reclaimable = self.wbs[wb].reclaimable;
            c.bdi_dirty = bdi_reclaimable + self.wbs[wb].writeback;
            let dirty_exceeded = c.bdi_dirty > c.task_bdi_thresh || c.nr_dirty > thresh;
            c.clear_dirty_exceeded =
                c.bdi_dirty <= task_min_dirty_limit(c.bdi_thresh) && c.nr_dirty <= thresh;
            if !dirty_exceeded {
                return self.legacy_finish(pid, wb, c);
            }
            self.wbs[wb].dirty_exceeded = true;
            // 3.1 estimates the write bandwidth here; it steers nothing yet
            if self.jiffies()
                > self.wbs[wb].bw_time_stamp + crate::mm::page_writeback::max_pause_jiffies(hz)
            {
                self.wb_update_bandwidth(wb, pid);
            }
            if bdi_reclaimable > c.task_bdi_thresh {
                // writeback_inodes_wb(&bdi->wb, write_chunk) from this task
                let work = WbWork {
                    nr_pages: c.write_chunk as i64,
                    sync_all: false,
                    for_kupdate: false,
                    for_background: false,
                    range_cyclic: true,
                    reason: WbReason::Background,
                };
                if self.wbs[wb].b_io.is_empty() {
                    let now = self.jiffies();
                    self.queue_io(pid, wb, &work, now);
                }
                self.tasks[pid].legacy_writeback_calls += 1;
                c.pass = Some(WbPass::new(work, self.legacy_chunk_cap(), self.jiffies()));
                continue;
            }
            return self.legacy_sleep(pid, c);
        }
    }

    fn legacy_sleep(&mut self, pid: Pid, mut c: Box<LegacyCall>) -> ThrottleStep {
        c.after_sleep = true;
        let at = self.timer_fire_time(self.jiffies() + c.pause);
        self.tasks[pid].throttle = ThrottleCall::Legacy(c);
        ThrottleStep::Sleep(at)
    }

    fn legacy_finish(&mut self, pid: Pid, wb: WbId, c: Box<LegacyCall>) -> ThrottleStep {
        if c.clear_dirty_exceeded && self.wbs[wb].dirty_exceeded {
            self.wbs[wb].dirty_exceeded = false;
        }
        if self.wbs[wb].writeback_running {
            return ThrottleStep::Done;
        }
        if c.nr_reclaimable > c.bg_thresh {
            self.wb_start_background_writeback(wb, pid);
        }
        ThrottleStep::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn legacy_formulas() {
        // a task owning all recent dirtyings gets 7/8 of the bdi threshold
        assert_eq!(task_dirty_limit(51_200, 100, 100), 51_200 - 6_400);
        assert_eq!(task_dirty_limit(51_200, 0, 100), 51_200);
        assert_eq!(task_min_dirty_limit(51_200), 44_800);
        // 16 GiB, 2 CPUs: 4M pages / 64 = 65536 -> capped at 1024; chunk 1536
        assert_eq!(sync_writeback_pages(1024, 1024), 1536);
        assert_eq!(sync_writeback_pages(8, 1024), 1536);
        let vm = crate::scenario::Vm::default();
        assert_eq!(
            legacy_dirty_limits(&vm, 4096, 1_000_000),
            (200_000, 100_000)
        );
    }
}
