//! The IO-less throttle as merged for Linux 3.2 (mm/page-writeback.c of
//! 3.2). The same design as 6.x, with 3.2's rules:
//!
//! - thresholds from the pre-3.3 dirtyable memory (no reserve), in percent;
//! - the cubic is not clamped and divides by `limit - setpoint + 1`;
//! - `dirty_exceeded` when the bdi *or* the global count is over;
//! - no cap of the balanced rate at write_bw, and the step shift is taken
//!   as x86 does (`step >>= shift` with the count masked to 6 bits);
//! - `bdi_max_pause` (20 ms per doubling of dirtiers, ≤ bdi_dirty/(8·bw),
//!   in [4, MAX_PAUSE]) and no min-pause or think-time clock: a call whose
//!   pause comes out ≤ 0 does not sleep;
//! - `nr_dirtied_pause` adapted after each call by the clamp rules;
//! - after > 1 s idle the bandwidth estimate only takes a new snapshot.
//!
//! The trace uses 6.18's format; 3.2 had no `period` or `think`, so
//! `period` carries the pause and `think` is 0.

use crate::kernel::{Kernel, Pid, WbId};
use crate::klib::ilog2;
use crate::mm::page_writeback::{
    cubic, dirty_freerun_ceiling, dirty_poll_interval, max_pause_jiffies, ratelimit_step,
    update_dirty_limit, wb_line, write_bandwidth_estimate, Dtc, LineScale, ThrottleCall, WriteBw,
    RATELIMIT_CALC_SHIFT,
};
use crate::mm::page_writeback_legacy::ThrottleStep;

/// The cubic of 3.2: `x = ((setpoint - dirty) << 10) / (limit - setpoint + 1)`,
/// `1 + x^3`, not clamped.
pub fn pos_ratio_polynom_v32(setpoint: u64, dirty: u64, limit: u64) -> i64 {
    cubic(setpoint, dirty, limit - setpoint + 1)
}

/// `bdi_position_ratio` (3.2).
pub fn bdi_position_ratio_v32(
    dtc: &Dtc,
    global_dirty_limit: u64,
    write_bw: u64,
    scale: &mut LineScale,
) -> u64 {
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    let limit = dtc.thresh.max(global_dirty_limit);
    if dtc.dirty >= limit {
        return 0;
    }
    let setpoint = (freerun + limit) / 2;
    let pos_ratio = pos_ratio_polynom_v32(setpoint, dtc.dirty, limit).max(0) as u64;
    wb_line(pos_ratio, dtc, limit, setpoint, write_bw, |d| d + 1, scale)
}

/// `bdi_max_pause` (3.2).
pub fn bdi_max_pause_v32(hz: u64, avg_write_bw: u64, dirty_ratelimit: u64, bdi_dirty: u64) -> u64 {
    let hi = ilog2(avg_write_bw);
    let lo = ilog2(dirty_ratelimit);
    let mut t = hz / 50; // 20 ms for one dirtier
    if hi > lo {
        t += (hi - lo) * (20 * hz) / 1024;
    }
    t = t.min(bdi_dirty * hz / (8 * avg_write_bw + 1));
    t.clamp(4, max_pause_jiffies(hz))
}

/// The ratelimit step of 3.2's `bdi_update_dirty_ratelimit`:
/// returns (new dirty_ratelimit, balanced, task_ratelimit+1, dirty_rate).
#[allow(clippy::too_many_arguments)]
pub fn update_dirty_ratelimit_v32(
    hz: u64,
    dtc: &Dtc,
    pos_ratio: u64,
    global_dirty_limit: u64,
    write_bw: u64,
    r: u64,
    prev_balanced: u64,
    dirtied_delta: u64,
    elapsed: u64,
) -> (u64, u64, u64, u64) {
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    let limit = dtc.thresh.max(global_dirty_limit);
    let setpoint = (freerun + limit) / 2;
    let dirty_rate = dirtied_delta * hz / elapsed.max(1);
    let task_ratelimit = ((r as u128 * pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64 + 1;
    let balanced = (task_ratelimit as u128 * write_bw as u128 / (dirty_rate | 1) as u128) as u64;
    let mut step = ratelimit_step(
        dtc.dirty < setpoint,
        r,
        [prev_balanced, balanced, task_ratelimit],
    );
    // C's `step >>= n` on x86-64 masks the count to 6 bits
    let shift = (r / (2 * step + 1)) & 63;
    step >>= shift;
    step = step.div_ceil(8);
    let r = if r < balanced { r + step } else { r - step };
    (r.max(1), balanced, task_ratelimit, dirty_rate)
}

/// A task's state inside a 3.2 balance_dirty_pages call that sleeps.
#[derive(Clone, Copy, Debug)]
pub struct V32Call {
    start_time: u64,
    pages_dirtied: u64,
    pause: i64,
    max_pause: u64,
    task_ratelimit: u64,
    dirty_ratelimit: u64,
    dirty_exceeded: bool,
    nr_reclaimable: u64,
    nr_dirty: u64,
    thresh: u64,
    bg_thresh: u64,
    bdi_dirty: u64,
}

impl Kernel {
    /// 3.2's `__bdi_update_bandwidth`. `g` is None for the flusher's calls
    /// (thresh = 0: write bandwidth only).
    pub fn bdi_update_bandwidth_v32(
        &mut self,
        wb: WbId,
        pid: Pid,
        g: Option<&Dtc>,
        start_time: u64,
    ) {
        let now = self.jiffies();
        let hz = self.hz();
        let interval = max_pause_jiffies(hz);
        let w = &self.wbs[wb];
        if now <= w.bw_time_stamp + interval {
            return;
        }
        let elapsed = now - w.bw_time_stamp;
        let (dirtied, written) = (w.dirtied, w.written);
        if !(elapsed > hz && w.bw_time_stamp < start_time) {
            if let Some(g) = g {
                // global_update_bandwidth
                if now >= self.dom.dirty_limit_tstamp + interval {
                    self.dom.dirty_limit =
                        update_dirty_limit(self.dom.dirty_limit, g.thresh, g.dirty);
                    self.dom.dirty_limit_tstamp = now;
                }
                let w = &mut self.wbs[wb];
                let pos = bdi_position_ratio_v32(
                    g,
                    self.dom.dirty_limit,
                    w.avg_write_bandwidth,
                    &mut w.line_scale,
                );
                let (r, bal, trl, rate) = update_dirty_ratelimit_v32(
                    hz,
                    g,
                    pos,
                    self.dom.dirty_limit,
                    w.avg_write_bandwidth,
                    w.dirty_ratelimit,
                    w.balanced_dirty_ratelimit,
                    dirtied - w.dirtied_stamp,
                    elapsed,
                );
                let w = &mut self.wbs[wb];
                w.dirty_ratelimit = r;
                w.balanced_dirty_ratelimit = bal;
                self.trace_bdi_dirty_ratelimit(pid, wb, rate, trl);
            }
            // bdi_update_write_bandwidth: as 6.x but avg is not floored at 1
            let w = &mut self.wbs[wb];
            let cur = WriteBw {
                write_bandwidth: w.write_bandwidth,
                avg_write_bandwidth: w.avg_write_bandwidth,
            };
            let new = write_bandwidth_estimate(hz, cur, elapsed, written, w.written_stamp);
            w.write_bandwidth = new.write_bandwidth;
            w.avg_write_bandwidth = new.avg_write_bandwidth;
        }
        let w = &mut self.wbs[wb];
        w.dirtied_stamp = dirtied;
        w.written_stamp = written;
        w.bw_time_stamp = now;
    }

    /// One pass of 3.2's balance_dirty_pages loop (a sleep ends a pass).
    pub fn balance_dirty_pages_v32(
        &mut self,
        pid: Pid,
        wb: WbId,
        pages_dirtied: u64,
        start_time: u64,
    ) -> ThrottleStep {
        let hz = self.hz();
        let nr_reclaimable = self.vm.nr_dirty;
        let nr_dirty = nr_reclaimable + self.vm.nr_writeback;
        let (_, thresh, bg) = self.global_dirty_limits_traced(pid);
        let mut c = V32Call {
            start_time,
            pages_dirtied,
            pause: 0,
            max_pause: 0,
            task_ratelimit: 0,
            dirty_ratelimit: self.wbs[wb].dirty_ratelimit,
            dirty_exceeded: false,
            nr_reclaimable,
            nr_dirty,
            thresh,
            bg_thresh: bg,
            bdi_dirty: 0,
        };
        if let ThrottleCall::V32(prev) = &self.tasks[pid].throttle {
            c.pause = prev.pause;
            c.max_pause = prev.max_pause;
            c.dirty_exceeded = prev.dirty_exceeded;
        }
        if nr_dirty <= dirty_freerun_ceiling(thresh, bg) {
            return self.v32_after_loop(pid, wb, c);
        }
        if !self.wbs[wb].writeback_running {
            self.wb_start_background_writeback(wb, pid);
        }
        let mut g = Dtc {
            dirty: nr_dirty,
            thresh,
            bg_thresh: bg,
            ..Default::default()
        };
        g.wb_thresh = self.wb_calc_thresh(wb, thresh);
        g.wb_dirty = self.wbs[wb].reclaimable + self.wbs[wb].writeback;
        c.bdi_dirty = g.wb_dirty;
        c.dirty_exceeded = g.wb_dirty > g.wb_thresh || nr_dirty > thresh;
        if c.dirty_exceeded {
            self.wbs[wb].dirty_exceeded = true;
        }
        self.bdi_update_bandwidth_v32(wb, pid, Some(&g), start_time);
        let w = &mut self.wbs[wb];
        c.max_pause = bdi_max_pause_v32(hz, w.avg_write_bandwidth, w.dirty_ratelimit, g.wb_dirty);
        c.dirty_ratelimit = w.dirty_ratelimit;
        let pos = bdi_position_ratio_v32(
            &g,
            self.dom.dirty_limit,
            w.avg_write_bandwidth,
            &mut w.line_scale,
        );
        c.task_ratelimit =
            ((c.dirty_ratelimit as u128 * pos as u128) >> RATELIMIT_CALC_SHIFT) as u64;
        match (hz * pages_dirtied).checked_div(c.task_ratelimit) {
            // task_ratelimit == 0: over the limit, sleep the longest
            None => c.pause = c.max_pause as i64,
            Some(p) => {
                c.pause = p as i64;
                if c.pause <= 0 {
                    self.trace_bdp_v32(pid, wb, &g, &c, 0);
                    c.pause = 1; // "avoid resetting nr_dirtied_pause below"
                    return self.v32_after_loop(pid, wb, c);
                }
                c.pause = c.pause.min(c.max_pause as i64);
            }
        }
        self.trace_bdp_v32(pid, wb, &g, &c, c.pause);
        self.wbs[wb].dirty_sleep = self.jiffies();
        self.tasks[pid].throttle = ThrottleCall::V32(Box::new(c));
        ThrottleStep::Sleep(self.timer_fire_time(self.jiffies() + c.pause as u64))
    }

    /// After a 3.2 throttle sleep: loop again or finish.
    pub fn balance_dirty_pages_v32_resume(&mut self, pid: Pid, wb: WbId) -> ThrottleStep {
        let ThrottleCall::V32(c) = &self.tasks[pid].throttle else {
            return ThrottleStep::Done;
        };
        let c = **c;
        if c.task_ratelimit != 0 || c.bdi_dirty <= self.wb_stat_error() {
            return self.v32_after_loop(pid, wb, c);
        }
        self.balance_dirty_pages_v32(pid, wb, c.pages_dirtied, c.start_time)
    }

    fn v32_after_loop(&mut self, pid: Pid, wb: WbId, c: V32Call) -> ThrottleStep {
        self.tasks[pid].throttle = ThrottleCall::None;
        if !c.dirty_exceeded && self.wbs[wb].dirty_exceeded {
            self.wbs[wb].dirty_exceeded = false;
        }
        let hz = self.hz();
        let t = &mut self.tasks[pid];
        t.nr_dirtied = 0;
        let pd = c.pages_dirtied;
        if c.pause == 0 {
            t.nr_dirtied_pause = dirty_poll_interval(c.nr_dirty, c.thresh);
        } else if c.pause <= (c.max_pause / 4) as i64 && pd >= t.nr_dirtied_pause {
            let v = c.dirty_ratelimit * (c.max_pause / 2) / hz;
            t.nr_dirtied_pause = v.clamp(pd + pd / 8, pd * 4);
        } else if c.pause >= c.max_pause as i64 {
            let v = c.dirty_ratelimit * (c.max_pause / 2) / hz;
            t.nr_dirtied_pause = 1 | v.clamp(pd / 4, pd - pd / 8);
        }
        if self.wbs[wb].writeback_running {
            return ThrottleStep::Done;
        }
        if c.nr_reclaimable > c.bg_thresh {
            self.wb_start_background_writeback(wb, pid);
        }
        ThrottleStep::Done
    }

    fn trace_bdp_v32(&mut self, pid: Pid, wb: WbId, g: &Dtc, c: &V32Call, pause: i64) {
        if !self.tracer.on.balance_dirty_pages {
            return;
        }
        // 3.2's line: period printed as the pause, no think time
        let (r, t, d, start) = (
            c.dirty_ratelimit,
            c.task_ratelimit,
            c.pages_dirtied,
            c.start_time,
        );
        self.trace_bdp(pid, wb, g, r, t, d, pause, pause, start, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn v32_formulas() {
        // unclamped cubic: far below freerun it exceeds 2.0
        let (sp, lim) = (44_800u64, 51_200u64);
        assert_eq!(pos_ratio_polynom_v32(sp, sp, lim), 1024);
        // dirty 0: x = (44800<<10)/6401 = 7166; 7166^2>>10 = 50148;
        // 50148*7166>>10 = 350_938 (floor); +1024 = 351_962
        assert_eq!(pos_ratio_polynom_v32(sp, 0, lim), 351_962);
        // max pause: 1 dd at 100 MB/s, HZ=250: t = 5; min(5, big) -> 5
        assert_eq!(bdi_max_pause_v32(250, 25_600, 25_600, 40_000), 5);
        // 100 dd: hi-lo = 14-8 = 6 -> 5 + 6*5000/1024 = 5 + 29 = 34
        assert_eq!(bdi_max_pause_v32(250, 25_600, 256, 40_000), 34);
        // small pool: bdi_dirty 100 -> 100*250/(8*25600+1) = 0 -> clamped to 4
        assert_eq!(bdi_max_pause_v32(250, 25_600, 256, 100), 4);
        // step with a shift >= 64 is masked, as on x86: R = 25600, step 1:
        // shift = 25600/3 = 8533 & 63 = 21 -> 1 >> 21 = 0 -> ceil(0/8) = 0
        let g = Dtc {
            dirty: 46_000,
            thresh: 51_200,
            bg_thresh: 25_600,
            ..Default::default()
        };
        let (r, bal, trl, rate) =
            update_dirty_ratelimit_v32(250, &g, 1023, 51_200, 12_800, 25_600, 25_700, 51_200, 50);
        assert_eq!((rate, trl), (256_000, 25_575 + 1));
        assert_eq!(bal, 25_576 * 12_800 / 256_000);
        // x = max(25700, 1278, 25576) = 25700 > R: no step
        assert_eq!(r, 25_600);
    }
}
