//! Dirty throttling (mm/page-writeback.c), Linux 6.x IO-less design.
//!
//! The formulas are free functions over integers so that each can be
//! checked against values worked out by hand from the kernel's arithmetic;
//! the `impl Kernel` part wires them to the machine's state. Everything is
//! in pages, pages/s and jiffies, with the kernel's integer rounding.
//! docs/layout.md describes the three throttling policies.

use crate::kernel::{Ev, Kernel, Pid, WbId};
use crate::klib::flex_proportions::FpropGlobal;
use crate::klib::{div_pow_of_two, div_round_up, ilog2, mul_div, roundup_pow_of_two};
use crate::sim::Ns;

/// `RATELIMIT_CALC_SHIFT`: pos_ratio is a fixed-point number with 1.0 = 1024.
pub const RATELIMIT_CALC_SHIFT: u32 = 10;
/// `DIRTY_POLL_THRESH` for 4 KiB pages (128 KiB).
pub const DIRTY_POLL_THRESH: u64 = 32;

/// `struct wb_domain`: the global one (cgroup writeback adds one per
/// memory cgroup).
#[derive(Clone, Debug, Default)]
pub struct WbDomain {
    pub completions: FpropGlobal,
    /// Jiffies of the next aging tick; 0 = aging timer stopped.
    pub period_time: u64,
    /// The smoothed hard limit `dom->dirty_limit`.
    pub dirty_limit: u64,
    pub dirty_limit_tstamp: u64,
}

/// The file-scope state of mm/page-writeback.c.
#[derive(Clone, Debug)]
pub struct PageWriteback {
    /// `ratelimit_pages`.
    pub ratelimit_pages: u64,
    /// Per-CPU `bdp_ratelimits`.
    pub bdp_ratelimits: Vec<u64>,
    /// Per-CPU `dirty_throttle_leaks`.
    pub dirty_throttle_leaks: Vec<u64>,
    /// `vm_dirties` (pre-3.2 policy): page dirtyings, event-counted.
    pub vm_dirties: crate::klib::proportions::PropGlobal,
    /// wbsim's cache of the last (thresh, bg_thresh) of the domain, keyed
    /// on the dirtyable memory and the knob generation they were computed
    /// from (`Kernel::knob_gen`): dirtyable memory seldom changes and the
    /// sysctls seldom do, while the limits are read on every throttle check.
    pub limits_cache: Option<(u32, u64, (u64, u64))>,
}

impl Default for PageWriteback {
    fn default() -> Self {
        PageWriteback {
            ratelimit_pages: 0,
            bdp_ratelimits: Vec::new(),
            dirty_throttle_leaks: Vec::new(),
            // the legacy policy's shift is set by mm_init
            vm_dirties: crate::klib::proportions::PropGlobal::new(16),
            limits_cache: None,
        }
    }
}

/// `struct dirty_throttle_control` for the global domain.
#[derive(Default, Clone, Copy, Debug)]
pub struct Dtc {
    pub avail: u64,
    pub dirty: u64,
    pub thresh: u64,
    pub bg_thresh: u64,
    pub wb_dirty: u64,
    pub wb_thresh: u64,
    /// Only worked out under strictlimit, the one case that reads it.
    pub wb_bg_thresh: u64,
    pub pos_ratio: u64,
}

/// A task's state inside one `balance_dirty_pages()` call that sleeps.
#[derive(Clone, Copy, Debug)]
pub struct BdpCall {
    pub start_time: u64,
    pub pages_dirtied: u64,
    /// Applied when the sleep ends: `dirty_paused_when = now + pause`.
    pub paused_when: u64,
    pub nr_dirtied_pause: u64,
    /// The loop goes round again after the sleep (task_ratelimit was 0).
    pub again: bool,
    pub wb_dirty: u64,
}

/// A task's state inside a `balance_dirty_pages()` call that sleeps (or,
/// before 3.2, writes back), of the throttle the run models
/// (`run.dirty_throttle`). The 6.x call is kept inline, as a thousand
/// writers' wakeups read it; the older throttles' larger ones are boxed.
#[derive(Debug, Default)]
pub enum ThrottleCall {
    /// Not inside a call.
    #[default]
    None,
    /// 6.x (`io-less`).
    V6(BdpCall),
    /// 3.2 (`io-less-3.2`).
    V32(Box<crate::mm::page_writeback_v3_2::V32Call>),
    /// Before 3.2 (`legacy`).
    Legacy(Box<crate::mm::page_writeback_legacy::LegacyCall>),
}

impl ThrottleCall {
    /// Take the 6.x call the task is inside, if any. The other kinds are
    /// left in place: nothing is dropped, which keeps the boxed calls'
    /// drop code (and the call it costs) out of the 6.x throttle's path.
    #[inline]
    pub fn take_v6(&mut self) -> Option<BdpCall> {
        match *self {
            ThrottleCall::V6(call) => {
                *self = ThrottleCall::None;
                Some(call)
            }
            _ => None,
        }
    }

    /// Enter a 6.x call. Under the 6.x throttle a task holds no other kind
    /// of call: there is nothing to drop, and the store skips the check
    /// for a box to free (a debug build asserts it).
    #[inline]
    pub fn set_v6(&mut self, call: BdpCall) {
        debug_assert!(matches!(self, ThrottleCall::None | ThrottleCall::V6(_)));
        std::mem::forget(std::mem::replace(self, ThrottleCall::V6(call)));
    }
}

// ---- pure formulas ---------------------------------------------------------

/// `dirty_freerun_ceiling`.
pub fn dirty_freerun_ceiling(thresh: u64, bg_thresh: u64) -> u64 {
    (thresh + bg_thresh) / 2
}

/// `hard_dirty_limit`.
pub fn hard_dirty_limit(dom_dirty_limit: u64, thresh: u64) -> u64 {
    thresh.max(dom_dirty_limit)
}

/// `pos_ratio_polynom`: 1 + ((setpoint - dirty) / (limit - setpoint))^3,
/// in 10-bit fixed point, clamped to [0, 2].
pub fn pos_ratio_polynom(setpoint: u64, dirty: u64, limit: u64) -> i64 {
    cubic(setpoint, dirty, (limit - setpoint) | 1).clamp(0, 2 << RATELIMIT_CALC_SHIFT)
}

/// `1 + ((setpoint - dirty) / span)^3` in 10-bit fixed point, unclamped:
/// the cubic both versions share (they differ in the span's zero guard and
/// the clamp).
pub fn cubic(setpoint: u64, dirty: u64, span: u64) -> i64 {
    let x: i64 = (((setpoint as i64) - (dirty as i64)) << RATELIMIT_CALC_SHIFT) / (span as i64);
    let mut p = x;
    p = (p * x) >> RATELIMIT_CALC_SHIFT;
    p = (p * x) >> RATELIMIT_CALC_SHIFT;
    p + (1 << RATELIMIT_CALC_SHIFT)
}

/// `wb_position_ratio` for a normal (non-strictlimit) bdi: the global cubic
/// line scaled by the wb's linear line, with the 1/4 floor and the reserve
/// area. `dom_dirty_limit` is `global_wb_domain.dirty_limit`, `write_bw` the
/// wb's `avg_write_bandwidth`.
pub fn wb_position_ratio(
    dtc: &Dtc,
    dom_dirty_limit: u64,
    write_bw: u64,
    strictlimit: bool,
    scale: &mut LineScale,
) -> u64 {
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    let limit = hard_dirty_limit(dom_dirty_limit, dtc.thresh);
    if dtc.dirty >= limit {
        return 0;
    }
    let setpoint = (freerun + limit) / 2;
    let pos_ratio = pos_ratio_polynom(setpoint, dtc.dirty, limit) as u64;
    if strictlimit {
        // BDI_CAP_STRICTLIMIT (FUSE): the wb's own cubic line, between its
        // freerun ceiling and its threshold, caps the global one.
        if dtc.wb_dirty < 8 {
            return (pos_ratio * 2).min(2 << RATELIMIT_CALC_SHIFT);
        }
        if dtc.wb_dirty >= dtc.wb_thresh {
            return 0;
        }
        let wb_setpoint = dirty_freerun_ceiling(dtc.wb_thresh, dtc.wb_bg_thresh);
        if wb_setpoint == 0 || wb_setpoint == dtc.wb_thresh {
            return 0;
        }
        let wb_pos = pos_ratio_polynom(wb_setpoint, dtc.wb_dirty, dtc.wb_thresh) as u64;
        return pos_ratio.min(wb_pos);
    }

    wb_line(pos_ratio, dtc, limit, setpoint, write_bw, |d| d | 1, scale)
}

/// wbsim's cache of the wb line's scale `x = (wb_thresh << 16) / divisor`
/// (`divisor` is thresh with the version's zero guard): both seldom change
/// from one throttle call to the next, and a division is slow. A memo of a
/// pure function of its key, so no knob can stale it.
#[derive(Clone, Copy, Debug, Default)]
pub struct LineScale(Option<(u64, u64, u64)>);

impl LineScale {
    #[inline]
    pub fn x(&mut self, wb_thresh: u64, divisor: u64) -> u64 {
        match self.0 {
            Some((t, d, x)) if (t, d) == (wb_thresh, divisor) => {
                debug_assert_eq!(x, (wb_thresh << 16) / divisor);
                x
            }
            _ => {
                let x = (wb_thresh << 16) / divisor;
                self.0 = Some((wb_thresh, divisor, x));
                x
            }
        }
    }
}

/// The wb's linear control line that scales the global `pos_ratio`
/// (`wb_position_ratio`, 3.2's `bdi_position_ratio`): wb_thresh floored
/// at (limit - dirty)/8, the line through wb_setpoint with its x-intercept
/// `span` beyond, the 1/4 floor past 3/4 of the span, and the reserve
/// area below wb_thresh/2. `nonzero` is the version's divide-by-zero guard
/// (`| 1` in 6.x, `+ 1` in 3.2); `scale` keeps the last scale factor.
pub fn wb_line(
    mut pos_ratio: u64,
    dtc: &Dtc,
    limit: u64,
    setpoint: u64,
    write_bw: u64,
    nonzero: fn(u64) -> u64,
    scale: &mut LineScale,
) -> u64 {
    let mut wb_thresh = dtc.wb_thresh.min(dtc.thresh);
    wb_thresh = wb_thresh.max((limit - dtc.dirty) / 8);
    let x = scale.x(wb_thresh, nonzero(dtc.thresh));
    let wb_setpoint = (setpoint * x) >> 16;
    let span = (((dtc.thresh - wb_thresh + 8 * write_bw) as u128 * x as u128) >> 16) as u64;
    let x_intercept = wb_setpoint + span;
    if dtc.wb_dirty < x_intercept - span / 4 {
        pos_ratio = mul_div(
            pos_ratio,
            x_intercept - dtc.wb_dirty,
            nonzero(x_intercept - wb_setpoint),
        );
    } else {
        pos_ratio /= 4;
    }
    let reserve = wb_thresh / 2;
    if dtc.wb_dirty < reserve {
        if dtc.wb_dirty > reserve / 8 {
            pos_ratio = pos_ratio * reserve / dtc.wb_dirty;
        } else {
            pos_ratio *= 8;
        }
    }
    pos_ratio
}

/// The state `wb_update_write_bandwidth` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteBw {
    pub write_bandwidth: u64,
    pub avg_write_bandwidth: u64,
}

/// `wb_update_write_bandwidth` (6.x): the estimate below with
/// `avg_write_bandwidth` floored at 1.
pub fn update_write_bandwidth(
    hz: u64,
    cur: WriteBw,
    elapsed: u64,
    written: u64,
    written_stamp: u64,
) -> WriteBw {
    let w = write_bandwidth_estimate(hz, cur, elapsed, written, written_stamp);
    WriteBw {
        avg_write_bandwidth: w.avg_write_bandwidth.max(1),
        ..w
    }
}

/// The write-bandwidth estimate of `wb_update_write_bandwidth` (3.2's
/// `bdi_update_write_bandwidth`): a time-weighted moving average of the
/// completion rate over roundup_pow_of_two(3*HZ), and a spike-filtered
/// `avg_write_bandwidth`.
pub fn write_bandwidth_estimate(
    hz: u64,
    cur: WriteBw,
    elapsed: u64,
    written: u64,
    written_stamp: u64,
) -> WriteBw {
    let period = roundup_pow_of_two(3 * hz);
    let mut avg = cur.avg_write_bandwidth;
    let old = cur.write_bandwidth;
    let mut bw: u64 = (written - written.min(written_stamp)) * hz;
    if elapsed > period {
        bw /= elapsed;
        avg = bw;
    } else {
        bw += old * (period - elapsed);
        bw >>= ilog2(period);
        if avg > old && old >= bw {
            avg -= (avg - old) >> 3;
        }
        if avg < old && old <= bw {
            avg += (old - avg) >> 3;
        }
    }
    WriteBw {
        write_bandwidth: bw,
        avg_write_bandwidth: avg,
    }
}

/// The undamped step of `wb_update_dirty_ratelimit` (and 3.2's
/// `bdi_update_dirty_ratelimit`): move `r` only toward all of the
/// estimates at once, up when dirty is below the setpoint and every
/// estimate is above `r`, down when above it and every estimate is below,
/// by the distance to the nearest one.
pub fn ratelimit_step(below_setpoint: bool, r: u64, estimates: [u64; 3]) -> u64 {
    if below_setpoint {
        let x = estimates.into_iter().min().expect("3");
        x.saturating_sub(r)
    } else {
        let x = estimates.into_iter().max().expect("3");
        r.saturating_sub(x)
    }
}

/// Inputs and results of `wb_update_dirty_ratelimit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RatelimitUpdate {
    pub dirty_rate: u64,
    /// task_ratelimit with the +1 the kernel adds.
    pub task_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
    pub dirty_ratelimit: u64,
}

/// `wb_update_dirty_ratelimit` for a normal bdi: estimate the balanced rate
/// and move `dirty_ratelimit` toward it in damped steps, only when the
/// position error and the rate error agree.
#[allow(clippy::too_many_arguments)]
pub fn update_dirty_ratelimit(
    hz: u64,
    dtc: &Dtc,
    dom_dirty_limit: u64,
    write_bw: u64,
    dirty_ratelimit: u64,
    prev_balanced: u64,
    dirtied: u64,
    dirtied_stamp: u64,
    elapsed: u64,
    strictlimit: bool,
) -> RatelimitUpdate {
    let freerun = dirty_freerun_ceiling(dtc.thresh, dtc.bg_thresh);
    let limit = hard_dirty_limit(dom_dirty_limit, dtc.thresh);
    let setpoint = (freerun + limit) / 2;
    let dirty_rate = (dirtied - dirtied_stamp) * hz / elapsed;
    let task_ratelimit =
        ((dirty_ratelimit as u128 * dtc.pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64 + 1;
    let mut balanced = mul_div(task_ratelimit, write_bw, dirty_rate | 1);
    if balanced > write_bw {
        balanced = write_bw;
    }
    let (mut d, mut setpoint) = (dtc.dirty, setpoint);
    if strictlimit {
        d = dtc.wb_dirty;
        setpoint = if dtc.wb_dirty < 8 {
            dtc.wb_dirty + 1
        } else {
            (dtc.wb_thresh + dtc.wb_bg_thresh) / 2
        };
    }
    let mut step = ratelimit_step(
        d < setpoint,
        dirty_ratelimit,
        [prev_balanced, balanced, task_ratelimit],
    );
    let shift = dirty_ratelimit / (2 * step + 1);
    step = if shift < 64 {
        // BITS_PER_LONG: a longer shift would leave nothing
        div_round_up(step >> shift, 8)
    } else {
        0
    };
    let mut r = dirty_ratelimit;
    if r < balanced {
        r += step;
    } else {
        r -= step;
    }
    RatelimitUpdate {
        dirty_rate,
        task_ratelimit,
        balanced_dirty_ratelimit: balanced,
        dirty_ratelimit: r.max(1),
    }
}

/// `update_dirty_limit`: follow thresh up at once, and down by 1/32 of the gap.
pub fn update_dirty_limit(limit: u64, thresh: u64, dirty: u64) -> u64 {
    if limit < thresh {
        return thresh;
    }
    let t = thresh.max(dirty);
    if limit > t {
        limit - ((limit - t) >> 5)
    } else {
        limit
    }
}

/// `dirty_poll_interval`: about sqrt of the margin to thresh, a power of two.
pub fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << (ilog2(thresh - dirty) >> 1)
    } else {
        1
    }
}

/// `MAX_PAUSE`: max(HZ/5, 1). `BANDWIDTH_INTERVAL` has the same value.
pub fn max_pause_jiffies(hz: u64) -> u64 {
    (hz / 5).max(1)
}

/// The ratelimit while the wb's `dirty_exceeded` is set: 32 KiB worth of
/// pages (`balance_dirty_pages_ratelimited_flags`; 3.2's
/// `balance_dirty_pages_ratelimited_nr` has the same).
#[inline]
pub fn dirty_exceeded_ratelimit(page_size: u64) -> u64 {
    32 >> (ilog2(page_size) - 10)
}

/// `wb_max_pause`: never sleep long enough to drain 1/8 of the wb's dirty pages.
pub fn wb_max_pause(hz: u64, avg_write_bw: u64, wb_dirty: u64) -> u64 {
    let bw = 1 + div_pow_of_two(avg_write_bw, roundup_pow_of_two(1 + hz / 8));
    let max = max_pause_jiffies(hz);
    // t = wb_dirty / bw + 1 is capped at MAX_PAUSE: tell that without the
    // division (wb_dirty / bw + 1 >= max exactly when wb_dirty >= (max - 1) * bw)
    if wb_dirty >= (max - 1) * bw {
        return max;
    }
    let t = wb_dirty / bw + 1;
    t.min(max)
}

/// `wb_min_pause`: returns (min_pause, nr_dirtied_pause).
pub fn wb_min_pause(
    hz: u64,
    avg_write_bw: u64,
    dirty_ratelimit_wb: u64,
    max_pause: u64,
    task_ratelimit: u64,
    dirty_ratelimit: u64,
) -> (i64, u64) {
    let hi = ilog2(avg_write_bw) as i64;
    let lo = ilog2(dirty_ratelimit_wb) as i64;
    let max_pause = max_pause as i64;
    let hz_i = hz as i64;
    // 10 ms for one dirtier, and about 10 ms more each time the dirtiers
    // double (the kernel's figures)
    let mut t: i64 = (hz_i / 100).max(1);
    if hi > lo {
        t += (hi - lo) * (10 * hz_i) / 1024;
    }
    t = t.min(1 + max_pause / 2);
    // `x / roundup_pow_of_two(HZ)`: rates and t are never negative (the
    // kernel's arithmetic is unsigned here), so a shift
    let rp = roundup_pow_of_two(hz);
    let per_rp = |x: i64| {
        debug_assert!(x >= 0);
        div_pow_of_two(x as u64, rp) as i64
    };
    let mut pages: i64 = per_rp(dirty_ratelimit as i64 * t);
    let thresh = DIRTY_POLL_THRESH as i64;
    if pages < thresh {
        t = max_pause;
        pages = per_rp(dirty_ratelimit as i64 * t);
        if pages > thresh {
            pages = thresh;
            t = hz_i * thresh / dirty_ratelimit as i64;
        }
    }
    // pause = HZ * pages / (task_ratelimit + 1) > max_pause, tested without
    // the division (pages >= 0)
    if hz_i * pages >= (max_pause + 1) * (task_ratelimit as i64 + 1) {
        t = max_pause;
        pages = per_rp(task_ratelimit as i64 * t);
    }
    let min_pause = if pages >= thresh { 1 + t / 2 } else { t };
    (min_pause, pages.max(0) as u64)
}

/// `domain_dirty_limits` for the global domain: (thresh, bg_thresh) in pages.
pub fn domain_dirty_limits(vm: &crate::scenario::Vm, page_size: u64, avail: u64) -> (u64, u64) {
    let ratio = vm.dirty_ratio * page_size / 100;
    let bg_ratio = vm.dirty_background_ratio * page_size / 100;
    let mut thresh = if vm.dirty_bytes != 0 {
        div_round_up(vm.dirty_bytes, page_size)
    } else {
        ratio * avail / page_size
    };
    let mut bg_thresh = if vm.dirty_background_bytes != 0 {
        div_round_up(vm.dirty_background_bytes, page_size)
    } else {
        bg_ratio * avail / page_size
    };
    thresh = thresh.min(u32::MAX as u64);
    if bg_thresh >= thresh {
        bg_thresh = thresh / 2;
    }
    (thresh, bg_thresh)
}

// ---- the machine -----------------------------------------------------------

impl Kernel {
    /// Memory layout at boot and `writeback_set_ratelimit()`.
    pub fn mm_init(&mut self) {
        let ps = self.page_size();
        let m = &self.sc.machine;
        let total = m.memory / ps;
        let anon = m.anon / ps;
        self.vm.nr_anon_pages = anon;
        self.vm.nr_free_pages = total - anon;
        // the zones: their watermarks, and the anonymous and kernel memory
        // beyond what the kernel does not manage taken from them
        self.zones = crate::mm::page_alloc::Zones::setup(&m.mem, ps);
        let unmanaged = total - m.mem.zones.iter().map(|z| z.managed).sum::<u64>();
        self.zones
            .take_any(anon - unmanaged, crate::mm::page_alloc::ZONE_MOVABLE);
        self.vmscan.totalreserve_pages = match m.reserve {
            Some(b) => b / ps,
            None => self.zones.totalreserve_pages,
        };
        let ncpu = m.cpus as usize;
        self.pgwb.bdp_ratelimits = vec![0; ncpu];
        self.pgwb.dirty_throttle_leaks = vec![0; ncpu];
        self.writeback_set_ratelimit();
        if self.sc.run.dirty_throttle == ThrottlePolicy::Legacy {
            self.pgwb.vm_dirties =
                crate::klib::proportions::PropGlobal::new(self.legacy_prop_shift());
        }
    }

    /// A `vm.dirty_*` sysctl write (`dirty_ratio_handler`,
    /// `dirty_bytes_handler`, `dirty_background_*_handler`, and the plain
    /// `dirty_expire_centisecs`). A new hard limit takes effect at once:
    /// its handler zeroes the twin and then calls `writeback_set_ratelimit`,
    /// which sets the domain's `dirty_limit` (as 6.18 does; older kernels'
    /// ratio handler called it first, with the old `dirty_bytes` still set).
    /// Reached through `Kernel::knob_write`, which bumps the knob generation.
    pub(crate) fn vm_sysctl_write(&mut self, knob: crate::scenario::VmKnob, v: u64) {
        use crate::scenario::VmKnob;
        let changed = self.sc.vm.write(knob, v);
        if matches!(knob, VmKnob::DirtyRatio | VmKnob::DirtyBytes) && changed {
            self.writeback_set_ratelimit();
        }
    }

    /// `writeback_set_ratelimit`: at boot and when dirty_ratio/bytes are written.
    pub fn writeback_set_ratelimit(&mut self) {
        let (thresh, _) = domain_dirty_limits(
            &self.sc.vm,
            self.page_size(),
            self.global_dirtyable_memory(),
        );
        self.dom.dirty_limit = thresh;
        // the kernel's figures: 1/32 of the threshold per CPU, at least 16 pages
        self.pgwb.ratelimit_pages = (thresh / (self.sc.machine.cpus as u64 * 32)).max(16);
    }

    /// `global_dirtyable_memory`: free − totalreserve + file LRU, + 1.
    pub fn global_dirtyable_memory(&self) -> u64 {
        let mut x = self.vm.nr_free_pages;
        x -= x.min(self.vmscan.totalreserve_pages);
        x += self.vm.nr_inactive_file + self.vm.nr_active_file;
        x + 1
    }

    /// `domain_dirty_limits` for the global domain, with its tracepoint.
    #[inline]
    pub fn global_dirty_limits_traced(&mut self, pid: Pid) -> (u64, u64, u64) {
        let legacy = !self.sc.features.dirty_limits_v6;
        let avail = if legacy {
            self.legacy_dirtyable_memory()
        } else {
            self.global_dirtyable_memory()
        };
        let gen = self.knob_gen;
        let (thresh, bg) = match self.pgwb.limits_cache {
            Some((g, a, limits)) if (g, a) == (gen, avail) => {
                debug_assert_eq!(limits, self.dirty_limits_uncached(avail, legacy));
                limits
            }
            _ => self.global_dirty_limits_of(avail, legacy),
        };
        if self.tracer.on.global_dirty_state {
            self.trace_global_dirty_state(pid, thresh, bg);
        }
        (avail, thresh, bg)
    }

    /// The policy's (thresh, bg_thresh) for `avail` dirtyable pages, kept
    /// in `dom.limits_cache`.
    #[inline(never)]
    fn global_dirty_limits_of(&mut self, avail: u64, legacy: bool) -> (u64, u64) {
        let limits = self.dirty_limits_uncached(avail, legacy);
        self.pgwb.limits_cache = Some((self.knob_gen, avail, limits));
        limits
    }

    /// The policy's (thresh, bg_thresh) for `avail` dirtyable pages under
    /// the sysctls in force now.
    fn dirty_limits_uncached(&self, avail: u64, legacy: bool) -> (u64, u64) {
        if legacy {
            crate::mm::page_writeback_legacy::legacy_dirty_limits(
                &self.sc.vm,
                self.page_size(),
                avail,
            )
        } else {
            domain_dirty_limits(&self.sc.vm, self.page_size(), avail)
        }
    }

    #[inline(never)]
    fn trace_global_dirty_state(&mut self, pid: Pid, thresh: u64, bg: u64) {
        let (d, w, l, dd, wr) = (
            self.vm.nr_dirty,
            self.vm.nr_writeback,
            self.dom.dirty_limit,
            self.vm.nr_dirtied,
            self.vm.nr_written,
        );
        let (keys, vals) = crate::trace_fields!(
            dirty = d,
            writeback = w,
            bg_thresh = bg,
            thresh = thresh,
            limit = l,
            dirtied = dd,
            written = wr,
        );
        let h = crate::trace::Head::task(self.q.now(), &self.tasks[pid], "global_dirty_state");
        self.tracer.emit_fields(h, None, keys, &vals);
    }

    /// `__wb_calc_thresh`: the wb's share of `thresh` by recent completions.
    #[inline]
    pub fn wb_calc_thresh(&mut self, wb: WbId, thresh: u64) -> u64 {
        let (num, den) = self.wbs[wb].completions.fraction(&self.dom.completions);
        // the bdis' min/max ratios change only with a sysfs write
        let gen = self.knob_gen;
        match self.wbs[wb].thresh_cache {
            Some((g, t, n, d, r)) if (g, t, n, d) == (gen, thresh, num, den) => {
                debug_assert_eq!(r, self.wb_share_uncached(wb, thresh, num, den));
                r
            }
            _ => self.wb_share_of_thresh(wb, thresh, num, den),
        }
    }

    /// `__wb_calc_thresh` for a wb whose completion share is `num / den`.
    #[inline(never)]
    fn wb_share_of_thresh(&mut self, wb: WbId, thresh: u64, num: u64, den: u64) -> u64 {
        let r = self.wb_share_uncached(wb, thresh, num, den);
        self.wbs[wb].thresh_cache = Some((self.knob_gen, thresh, num, den, r));
        r
    }

    fn wb_share_uncached(&self, wb: WbId, thresh: u64, num: u64, den: u64) -> u64 {
        // `bdi_min_ratio`: the sum of all bdis' min_ratio
        let bdi_min_ratio: u64 = self.bdis.iter().map(|b| b.min_ratio).sum();
        let b = self.wb_bdi(wb);
        let mut t = thresh * (100 - bdi_min_ratio) / 100;
        t = mul_div(t, num, den);
        t += thresh * b.min_ratio / 100;
        t.min(thresh * b.max_ratio / 100)
    }

    /// `wb_dirty_limits`. `wb_bg_thresh` is only read under strictlimit
    /// (the wb's own freerun ceiling and setpoint), so it is only worked
    /// out there (a division per call); it stays 0 otherwise.
    #[inline(always)]
    fn wb_dirty_limits(&mut self, wb: WbId, dtc: &mut Dtc, strict: bool) {
        dtc.wb_thresh = self.wb_calc_thresh(wb, dtc.thresh);
        if strict {
            dtc.wb_bg_thresh = (dtc.wb_thresh * dtc.bg_thresh)
                .checked_div(dtc.thresh)
                .unwrap_or(0);
        }
        let w = &self.wbs[wb];
        dtc.wb_dirty = w.reclaimable + w.writeback;
    }

    /// `wb_stat_error()`: the per-CPU counter slack, `WB_STAT_BATCH`
    /// (8 × (1 + ilog2(CPUs))) for each CPU.
    pub fn wb_stat_error(&self) -> u64 {
        let n = self.sc.machine.cpus as u64;
        n * 8 * (1 + ilog2(n))
    }

    /// `wb_over_bg_thresh`: should background writeback continue?
    pub fn wb_over_bg_thresh(&mut self, wb: WbId, pid: Pid) -> bool {
        let (_, _, bg) = self.global_dirty_limits_traced(pid);
        if self.vm.nr_dirty > bg {
            return true;
        }
        let t = self.wb_calc_thresh(wb, bg);
        if self.wbs[wb].reclaimable > t {
            return true;
        }
        if self.cg.enabled && self.wbs[wb].memcg != 0 {
            return self.memcg_over_bg_thresh(wb);
        }
        false
    }

    /// The memcg half of `wb_over_bg_thresh` (dirty pages only, without
    /// writeback, in both domains).
    #[inline(never)]
    fn memcg_over_bg_thresh(&mut self, wb: WbId) -> bool {
        let g = Dtc {
            avail: self.global_dirtyable_memory(),
            dirty: self.vm.nr_dirty,
            ..Default::default()
        };
        let st = self.mem_cgroup_wb_stats(wb);
        let avail = crate::mm::memcontrol::mdtc_calc_avail(
            st.filepages,
            st.headroom,
            st.dirty,
            g.avail,
            g.dirty,
        );
        let (_, bg) = crate::mm::memcontrol::memcg_dirty_limits(
            &self.sc.vm,
            self.page_size(),
            avail,
            g.avail,
        );
        if st.dirty > bg {
            return true;
        }
        if !self.sc.features.memcg_bg_share_v6_11 {
            // before 6.11 `wb_calc_thresh(mdtc->wb, mdtc->bg_thresh)`
            // took the wb's share from the global domain (GDTC_INIT)
            return self.wbs[wb].reclaimable > self.wb_calc_thresh(wb, bg);
        }
        let cg = self.wbs[wb].memcg;
        let (num, den) = self.wbs[wb]
            .memcg_completions
            .fraction(&self.cg.list[cg].dom.completions);
        self.wbs[wb].reclaimable > self.wb_share_uncached(wb, bg, num, den)
    }

    /// The `bdi_dirty_ratelimit` trace line after a ratelimit update (the
    /// wb's dirty_ratelimit and balanced_dirty_ratelimit already updated),
    /// in KB/s as the kernel prints it. 6.x and 3.2 share it.
    pub(crate) fn trace_bdi_dirty_ratelimit(
        &mut self,
        pid: Pid,
        wb: WbId,
        dirty_rate: u64,
        task_ratelimit: u64,
    ) {
        if !self.tracer.on.bdi_dirty_ratelimit {
            return;
        }
        let w = &self.wbs[wb];
        let kb = |x: u64| x << (ilog2(self.sc.machine.page_size) - 10);
        let (keys, vals) = crate::trace_fields!(
            write_bw = kb(w.write_bandwidth),
            awrite_bw = kb(w.avg_write_bandwidth),
            dirty_rate = kb(dirty_rate),
            dirty_ratelimit = kb(w.dirty_ratelimit),
            task_ratelimit = kb(task_ratelimit),
            balanced_dirty_ratelimit = kb(w.balanced_dirty_ratelimit),
            cgroup_ino = self.wb_cgroup_ino(wb),
        );
        self.emit_wb_fields(pid, wb, "bdi_dirty_ratelimit", keys, &vals);
    }

    /// `wb_update_dirty_ratelimit` for one domain (global, then the
    /// memcg's): the wb's ratelimit from `dtc` and the domain's
    /// `dirty_limit`, and its tracepoint.
    fn wb_update_dirty_ratelimit(
        &mut self,
        pid: Pid,
        wb: WbId,
        dtc: &Dtc,
        dom_dirty_limit: u64,
        dirtied: u64,
        elapsed: u64,
    ) {
        let w = &self.wbs[wb];
        let u = update_dirty_ratelimit(
            self.hz(),
            dtc,
            dom_dirty_limit,
            w.avg_write_bandwidth,
            w.dirty_ratelimit,
            w.balanced_dirty_ratelimit,
            dirtied,
            w.dirtied_stamp,
            elapsed,
            self.wb_bdi(wb).strictlimit,
        );
        let w = &mut self.wbs[wb];
        w.dirty_ratelimit = u.dirty_ratelimit;
        w.balanced_dirty_ratelimit = u.balanced_dirty_ratelimit;
        self.trace_bdi_dirty_ratelimit(pid, wb, u.dirty_rate, u.task_ratelimit);
    }

    /// `__wb_update_bandwidth`.
    fn wb_update_bandwidth_inner(
        &mut self,
        wb: WbId,
        pid: Pid,
        dtc: Option<&Dtc>,
        mdtc: Option<&Dtc>,
    ) {
        let now = self.jiffies();
        let hz = self.hz();
        let w = &self.wbs[wb];
        let elapsed = now.saturating_sub(w.bw_time_stamp).max(1);
        let dirtied = w.dirtied;
        let written = w.written;
        if let Some(dtc) = dtc {
            // domain_update_dirty_limit
            if now >= self.dom.dirty_limit_tstamp + max_pause_jiffies(hz) {
                self.dom.dirty_limit =
                    update_dirty_limit(self.dom.dirty_limit, dtc.thresh, dtc.dirty);
                self.dom.dirty_limit_tstamp = now;
            }
            let limit = self.dom.dirty_limit;
            self.wb_update_dirty_ratelimit(pid, wb, dtc, limit, dirtied, elapsed);
            if let Some(md) = mdtc {
                // the memcg domain's turn, after the global one's
                let cg = self.wbs[wb].memcg;
                let dom = &mut self.cg.list[cg].dom;
                if now >= dom.dirty_limit_tstamp + max_pause_jiffies(hz) {
                    dom.dirty_limit = update_dirty_limit(dom.dirty_limit, md.thresh, md.dirty);
                    dom.dirty_limit_tstamp = now;
                }
                let limit = self.cg.list[cg].dom.dirty_limit;
                self.wb_update_dirty_ratelimit(pid, wb, md, limit, dirtied, elapsed);
            }
        }
        let w = &mut self.wbs[wb];
        let nb = update_write_bandwidth(
            hz,
            WriteBw {
                write_bandwidth: w.write_bandwidth,
                avg_write_bandwidth: w.avg_write_bandwidth,
            },
            elapsed,
            written,
            w.written_stamp,
        );
        w.write_bandwidth = nb.write_bandwidth;
        w.avg_write_bandwidth = nb.avg_write_bandwidth;
        w.dirtied_stamp = dirtied;
        w.written_stamp = written;
        w.bw_time_stamp = now;
    }

    /// `wb_update_bandwidth`: from the end of do_writepages and bw_dwork.
    pub fn wb_update_bandwidth(&mut self, wb: WbId, pid: Pid) {
        self.wb_update_bandwidth_inner(wb, pid, None, None);
    }

    /// `wb_bandwidth_estimate_start`: after > 1 s idle, restart the estimate.
    pub fn wb_bandwidth_estimate_start(&mut self, wb: WbId) {
        let now = self.jiffies();
        let hz = self.hz();
        let w = &mut self.wbs[wb];
        if now - w.bw_time_stamp.min(now) > hz && w.writeback_inodes == 0 {
            w.dirtied_stamp = w.dirtied;
            w.written_stamp = w.written;
            w.bw_time_stamp = now;
        }
    }

    /// `wb_inode_writeback_end`'s `queue_delayed_work(bdi_wq, &wb->bw_dwork,
    /// BANDWIDTH_INTERVAL)`: a no-op while the work is pending (queued and
    /// not yet started); otherwise its timer is armed for the tick
    /// BANDWIDTH_INTERVAL from now, and the `bdi_wq` worker
    /// (mm/backing_dev.rs) runs `wb_update_bandwidth` once woken by it.
    pub fn queue_bw_dwork(&mut self, wb: WbId) {
        if self.wbs[wb].bw_dwork_pending {
            return;
        }
        let at = self.timer_fire_time(self.jiffies() + max_pause_jiffies(self.hz()));
        self.wbs[wb].bw_dwork_pending = true;
        self.wbs[wb].bw_dwork_due = at;
        let Some(worker) = self.bdi_wq else {
            return;
        };
        if self.tasks[worker].state == crate::kernel::RunState::Sleeping {
            self.wake_at(worker, at);
        }
    }

    /// `wb_domain_writeout_add` / `__wb_writeout_add`: count a completion in
    /// the wb's proportion and start the aging timer if it is stopped.
    pub fn wb_domain_writeout_add(&mut self, wb: WbId, n: u64) {
        let max = self.wb_bdi(wb).max_prop_frac;
        self.wbs[wb]
            .completions
            .add_max(&mut self.dom.completions, n, max);
        if self.dom.period_time == 0 {
            // VM_COMPLETIONS_PERIOD_LEN: 3 s
            let mut pt = self.jiffies() + 3 * self.hz();
            if pt == 0 {
                pt = 1;
            }
            self.dom.period_time = pt;
            self.q
                .schedule(self.timer_fire_time(pt), Ev::WriteoutPeriod);
        }
        if self.cg.enabled && self.wbs[wb].memcg != 0 {
            self.memcg_writeout_add(wb, n, max);
        }
    }

    /// The memcg half of `__wb_writeout_add`: the completion in the wb's
    /// memcg's domain (`wb->memcg_completions`), with that domain's aging.
    #[inline(never)]
    fn memcg_writeout_add(&mut self, wb: WbId, n: u64, max: u64) {
        let cg = self.wbs[wb].memcg;
        let dom = &mut self.cg.list[cg].dom;
        self.wbs[wb]
            .memcg_completions
            .add_max(&mut dom.completions, n, max);
        if dom.period_time == 0 {
            let mut pt = self.jif.at(self.q.now()) + 3 * self.jif.hz;
            if pt == 0 {
                pt = 1;
            }
            self.cg.list[cg].dom.period_time = pt;
            let at = self.timer_fire_time(pt);
            self.q
                .schedule(at, Ev::MemcgWriteoutPeriod { cg: cg as u32 });
        }
    }

    /// `writeout_period` of a memcg's domain.
    pub fn memcg_writeout_period(&mut self, cg: usize) {
        let now = self.jiffies();
        let period = 3 * self.hz();
        let dom = &mut self.cg.list[cg].dom;
        let miss = (now - dom.period_time.min(now)) / period;
        if dom.completions.new_period(miss + 1) {
            dom.period_time += (miss + 1) * period;
            let pt = dom.period_time;
            let at = self.timer_fire_time(pt);
            self.q
                .schedule(at, Ev::MemcgWriteoutPeriod { cg: cg as u32 });
        } else {
            dom.period_time = 0;
        }
    }

    /// The memcg domain of a memcg wb (`mdtc`): `mem_cgroup_wb_stats`,
    /// `mdtc_calc_avail` against the global `g`, `domain_dirty_limits`,
    /// and under strictlimit the wb's limits in it.
    pub fn mdtc_limits(&mut self, wb: WbId, g: &Dtc, strict: bool) -> Dtc {
        let st = self.mem_cgroup_wb_stats(wb);
        let mut md = Dtc {
            dirty: st.dirty + st.writeback,
            ..Default::default()
        };
        md.avail = crate::mm::memcontrol::mdtc_calc_avail(
            st.filepages,
            st.headroom,
            md.dirty,
            g.avail,
            g.dirty,
        );
        (md.thresh, md.bg_thresh) = crate::mm::memcontrol::memcg_dirty_limits(
            &self.sc.vm,
            self.page_size(),
            md.avail,
            g.avail,
        );
        if strict {
            self.wb_memcg_dirty_limits(wb, &mut md, strict);
        }
        md
    }

    /// `wb_dirty_limits` in the wb's memcg domain: its share of the
    /// memcg's thresh by its completions there.
    pub fn wb_memcg_dirty_limits(&mut self, wb: WbId, md: &mut Dtc, strict: bool) {
        let cg = self.wbs[wb].memcg;
        let (num, den) = self.wbs[wb]
            .memcg_completions
            .fraction(&self.cg.list[cg].dom.completions);
        md.wb_thresh = self.wb_share_uncached(wb, md.thresh, num, den);
        if strict {
            md.wb_bg_thresh = (md.wb_thresh * md.bg_thresh)
                .checked_div(md.thresh)
                .unwrap_or(0);
        }
        let w = &self.wbs[wb];
        md.wb_dirty = w.reclaimable + w.writeback;
    }

    /// `writeout_period`: the fprop aging timer, every 3 s while there are
    /// completions.
    pub fn writeout_period(&mut self) {
        let now = self.jiffies();
        let period = 3 * self.hz(); // VM_COMPLETIONS_PERIOD_LEN
        let miss = (now - self.dom.period_time.min(now)) / period;
        if self.dom.completions.new_period(miss + 1) {
            self.dom.period_time += (miss + 1) * period;
            let at = self.timer_fire_time(self.dom.period_time);
            self.q.schedule(at, Ev::WriteoutPeriod);
        } else {
            self.dom.period_time = 0;
        }
    }

    /// `balance_dirty_pages_ratelimited_flags`, called after a task dirtied
    /// pages. Returns `Some(wake_time)` if the task must sleep.
    pub fn balance_dirty_pages_ratelimited(&mut self, pid: Pid, wb: WbId) -> Option<Ns> {
        let t = &self.tasks[pid];
        let cpu = t.cpu as usize;
        let mut ratelimit = t.nr_dirtied_pause;
        if self.wbs[wb].dirty_exceeded {
            ratelimit = ratelimit.min(dirty_exceeded_ratelimit(self.page_size()));
        }
        if t.nr_dirtied >= ratelimit {
            self.pgwb.bdp_ratelimits[cpu] = 0;
        } else if self.pgwb.bdp_ratelimits[cpu] >= self.pgwb.ratelimit_pages {
            self.pgwb.bdp_ratelimits[cpu] = 0;
            ratelimit = 0;
        }
        let leaks = self.pgwb.dirty_throttle_leaks[cpu];
        let t = &mut self.tasks[pid];
        if leaks > 0 && t.nr_dirtied < ratelimit {
            let d = leaks.min(ratelimit - t.nr_dirtied);
            self.pgwb.dirty_throttle_leaks[cpu] -= d;
            t.nr_dirtied += d;
        }
        if t.nr_dirtied >= ratelimit {
            let pages = t.nr_dirtied;
            let start = self.jiffies();
            return self.balance_dirty_pages(pid, wb, pages, start);
        }
        None
    }

    /// `balance_dirty_pages_ratelimited_nr` of 3.2 (the same test as 6.x,
    /// without throttle leaks), entering 3.2's loop.
    pub fn balance_dirty_pages_ratelimited_v32(&mut self, pid: Pid, wb: WbId) -> ThrottleStep {
        let t = &self.tasks[pid];
        let cpu = t.cpu as usize;
        let mut ratelimit = t.nr_dirtied_pause;
        if self.wbs[wb].dirty_exceeded {
            ratelimit = ratelimit.min(dirty_exceeded_ratelimit(self.page_size()));
        }
        if t.nr_dirtied >= ratelimit {
            self.pgwb.bdp_ratelimits[cpu] = 0;
        } else if self.pgwb.bdp_ratelimits[cpu] >= self.pgwb.ratelimit_pages {
            self.pgwb.bdp_ratelimits[cpu] = 0;
            ratelimit = 0;
        }
        let t = &self.tasks[pid];
        if t.nr_dirtied >= ratelimit {
            let pages = t.nr_dirtied;
            let start = self.jiffies();
            self.tasks[pid].throttle = ThrottleCall::None;
            return self.balance_dirty_pages_v32(pid, wb, pages, start);
        }
        ThrottleStep::Done
    }

    /// Pages the task may still dirty before `balance_dirty_pages_ratelimited`
    /// would call into `balance_dirty_pages` (used to batch buffered writes).
    #[inline]
    pub fn pages_until_bdp_check(&self, pid: Pid, wb: WbId) -> u64 {
        let t = &self.tasks[pid];
        let mut ratelimit = t.nr_dirtied_pause;
        if self.wbs[wb].dirty_exceeded {
            ratelimit = ratelimit.min(dirty_exceeded_ratelimit(self.page_size()));
        }
        let own = ratelimit.saturating_sub(t.nr_dirtied);
        let cpu_left = self
            .pgwb
            .ratelimit_pages
            .saturating_sub(self.pgwb.bdp_ratelimits[t.cpu as usize]);
        own.min(cpu_left.max(1)).max(1)
    }

    /// One pass of the `balance_dirty_pages` loop. Returns the wake time if
    /// the task sleeps (its `BdpCall` is stored on the task), None if done.
    fn balance_dirty_pages(
        &mut self,
        pid: Pid,
        wb: WbId,
        pages_dirtied: u64,
        start_time: u64,
    ) -> Option<Ns> {
        let hz = self.hz() as i64;
        let mut now = self.jiffies();
        let nr_reclaimable = self.vm.nr_dirty;
        let (avail, thresh, bg_thresh) = self.global_dirty_limits_traced(pid);
        let mut g = Dtc {
            avail,
            dirty: self.vm.nr_dirty + self.vm.nr_writeback,
            thresh,
            bg_thresh,
            ..Default::default()
        };
        let strict = self.wb_bdi(wb).strictlimit;
        // strictlimit: freerun and polling follow the wb's own numbers
        let (d, t, b) = if strict {
            self.wb_dirty_limits(wb, &mut g, strict);
            (g.wb_dirty, g.wb_thresh, g.wb_bg_thresh)
        } else {
            (g.dirty, g.thresh, g.bg_thresh)
        };
        // a memcg's wb: the same for the memcg's domain (mdtc)
        let mut m = if self.cg.enabled && self.wbs[wb].memcg != 0 {
            Some(self.mdtc_limits(wb, &g, strict))
        } else {
            None
        };
        let m_dtm = m.map(|md| {
            if strict {
                (md.wb_dirty, md.wb_thresh, md.wb_bg_thresh)
            } else {
                (md.dirty, md.thresh, md.bg_thresh)
            }
        });
        if nr_reclaimable > g.bg_thresh && !self.wbs[wb].writeback_running {
            self.wb_start_background_writeback(wb, pid);
        }
        if d <= dirty_freerun_ceiling(t, b)
            && m_dtm.is_none_or(|(md, mt, mb)| md <= dirty_freerun_ceiling(mt, mb))
        {
            let m_intv = m_dtm.map_or(u64::MAX, |(md, mt, _)| dirty_poll_interval(md, mt));
            let task = &mut self.tasks[pid];
            task.dirty_paused_when = now;
            task.nr_dirtied = 0;
            task.nr_dirtied_pause = dirty_poll_interval(d, t).min(m_intv);
            return None;
        }
        if !self.wbs[wb].writeback_running {
            self.wb_start_background_writeback(wb, pid);
        }
        if self.cg.enabled {
            self.mem_cgroup_flush_foreign(pid, wb);
        }
        if !strict {
            self.wb_dirty_limits(wb, &mut g, strict);
        }
        let mut dirty_exceeded = g.wb_dirty > g.wb_thresh && (g.dirty > g.thresh || strict);
        let w = &mut self.wbs[wb];
        g.pos_ratio = wb_position_ratio(
            &g,
            self.dom.dirty_limit,
            w.avg_write_bandwidth,
            strict,
            &mut w.line_scale,
        );
        // the domain whose pos_ratio is lower throttles (sdtc)
        let mut sdtc = g;
        if let Some(md) = m.as_mut() {
            if !strict {
                self.wb_memcg_dirty_limits(wb, md, strict);
            }
            dirty_exceeded |= md.wb_dirty > md.wb_thresh && (md.dirty > md.thresh || strict);
            let cg = self.wbs[wb].memcg;
            md.pos_ratio = wb_position_ratio(
                md,
                self.cg.list[cg].dom.dirty_limit,
                self.wbs[wb].avg_write_bandwidth,
                strict,
                &mut LineScale::default(),
            );
            if md.pos_ratio < g.pos_ratio {
                sdtc = *md;
            }
        }
        self.wbs[wb].dirty_exceeded = dirty_exceeded;
        if now > self.wbs[wb].bw_time_stamp + max_pause_jiffies(self.hz()) {
            self.wb_update_bandwidth_inner(wb, pid, Some(&g), m.as_ref());
        }
        let g = sdtc;
        let w = &self.wbs[wb];
        let dirty_ratelimit = w.dirty_ratelimit;
        let task_ratelimit =
            ((dirty_ratelimit as u128 * g.pos_ratio as u128) >> RATELIMIT_CALC_SHIFT) as u64;
        let max_pause = wb_max_pause(self.hz(), w.avg_write_bandwidth, g.wb_dirty);
        // the inputs repeat from call to call (task_ratelimit moves in
        // steps of the 10-bit pos_ratio): keep the last result
        let key = (
            w.avg_write_bandwidth,
            dirty_ratelimit,
            max_pause,
            task_ratelimit,
        );
        // a memo of a pure function of its key: no knob can stale it
        let (min_pause, nr_dirtied_pause) = match w.min_pause_cache {
            Some((k, r)) if k == key => {
                debug_assert_eq!(
                    r,
                    wb_min_pause(self.hz(), key.0, key.1, key.2, key.3, key.1)
                );
                r
            }
            _ => {
                let r = wb_min_pause(
                    self.hz(),
                    w.avg_write_bandwidth,
                    w.dirty_ratelimit,
                    max_pause,
                    task_ratelimit,
                    dirty_ratelimit,
                );
                self.wbs[wb].min_pause_cache = Some((key, r));
                r
            }
        };

        let (period, mut pause): (i64, i64);
        // a pause too short to take: the task goes on writing
        let mut short = false;
        if task_ratelimit == 0 {
            period = max_pause as i64;
            pause = max_pause as i64;
        } else {
            period = hz * pages_dirtied as i64 / task_ratelimit as i64;
            pause = period;
            let t = &self.tasks[pid];
            if t.dirty_paused_when != 0 {
                pause -= now as i64 - t.dirty_paused_when as i64;
            }
            if pause < min_pause {
                short = true;
            } else if pause > max_pause as i64 {
                now += (pause - max_pause as i64).min(max_pause as i64) as u64;
                pause = max_pause as i64;
            }
        }
        if self.tracer.on.balance_dirty_pages {
            self.trace_bdp(
                pid,
                wb,
                &g,
                dirty_ratelimit,
                task_ratelimit,
                pages_dirtied,
                period,
                if short { pause.min(0) } else { pause },
                start_time,
                true,
            );
        }
        if short {
            let t = &mut self.tasks[pid];
            if pause < -hz {
                t.dirty_paused_when = now;
                t.nr_dirtied = 0;
            } else if period != 0 {
                t.dirty_paused_when += period as u64;
                t.nr_dirtied = 0;
            } else if t.nr_dirtied_pause <= pages_dirtied {
                t.nr_dirtied_pause += pages_dirtied;
            }
            return None;
        }
        self.wbs[wb].dirty_sleep = now;
        let call = BdpCall {
            start_time,
            pages_dirtied,
            paused_when: now + pause as u64,
            nr_dirtied_pause,
            again: task_ratelimit == 0,
            wb_dirty: g.wb_dirty,
        };
        self.tasks[pid].throttle.set_v6(call);
        // io_schedule_timeout(pause): a timer-wheel timer for jiffies + pause
        Some(self.timer_fire_time(self.jiffies() + pause as u64))
    }

    /// The rest of a `balance_dirty_pages` call after its sleep. Returns the
    /// next wake time if the loop sleeps again.
    pub fn balance_dirty_pages_resume(&mut self, pid: Pid, wb: WbId) -> Option<Ns> {
        let call = self.tasks[pid].throttle.take_v6()?;
        let t = &mut self.tasks[pid];
        t.dirty_paused_when = call.paused_when;
        t.nr_dirtied = 0;
        t.nr_dirtied_pause = call.nr_dirtied_pause;
        if !call.again || call.wb_dirty <= self.wb_stat_error() {
            return None;
        }
        self.balance_dirty_pages(pid, wb, call.pages_dirtied, call.start_time)
    }

    /// The `balance_dirty_pages` trace line. `think` is false for 3.2,
    /// whose line has no think time (printed as 0). Callers check
    /// `tracer.on.balance_dirty_pages` first, so that the throttle's hot
    /// path makes no call when the line is off.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub(crate) fn trace_bdp(
        &mut self,
        pid: Pid,
        wb: WbId,
        g: &Dtc,
        dirty_ratelimit: u64,
        task_ratelimit: u64,
        dirtied: u64,
        period: i64,
        pause: i64,
        start_time: u64,
        think: bool,
    ) {
        let jiffies = self.jiffies() as i64;
        let ms = |j: i64| self.jif.to_msecs(j);
        let kb = |x: u64| x << (ilog2(self.sc.machine.page_size) - 10);
        let limit = self.dom.dirty_limit;
        let setpoint = (limit + dirty_freerun_ceiling(g.thresh, g.bg_thresh)) / 2;
        let wb_setpoint = setpoint * g.wb_thresh / (g.thresh + 1);
        let t = &self.tasks[pid];
        let think = if !think || t.dirty_paused_when == 0 {
            0
        } else {
            ms(jiffies - t.dirty_paused_when as i64)
        };
        let (keys, vals) = crate::trace_fields!(
            limit = limit,
            setpoint = setpoint,
            dirty = g.dirty,
            wb_setpoint = wb_setpoint,
            wb_dirty = g.wb_dirty,
            dirty_ratelimit = kb(dirty_ratelimit),
            task_ratelimit = kb(task_ratelimit),
            dirtied = dirtied,
            dirtied_pause = t.nr_dirtied_pause,
            paused = ms(jiffies - start_time as i64),
            pause = ms(pause),
            period = ms(period),
            think = think,
            cgroup_ino = self.wb_cgroup_ino(wb),
        );
        self.emit_wb_fields(pid, wb, "balance_dirty_pages", keys, &vals);
    }

    /// Print a writeback event with integer `fields` in task `pid`'s
    /// context, for `wb`'s bdi (`Tracer::emit_fields`).
    fn emit_wb_fields(
        &mut self,
        pid: Pid,
        wb: usize,
        event: &str,
        keys: &'static [&'static str],
        vals: &[i128],
    ) {
        let h = crate::trace::Head::task(self.q.now(), &self.tasks[pid], event);
        // `wb_name`, borrowed apart from the tracer
        let bdi = &self.bdis[self.wbs[wb].bdi].name;
        self.tracer.emit_fields(h, Some(bdi), keys, vals);
    }
}

// ---- policy dispatch ----------------------------------------------------------

use crate::mm::page_writeback_legacy::ThrottleStep;
use crate::scenario::ThrottlePolicy;

impl Kernel {
    /// After a task dirtied pages: the policy's `balance_dirty_pages_ratelimited`.
    pub fn throttle_check(&mut self, pid: Pid, wb: WbId) -> ThrottleStep {
        let wb = self.wb_of_current(pid, wb);
        let step = match self.sc.run.dirty_throttle {
            ThrottlePolicy::Legacy => self
                .balance_dirty_pages_ratelimited_legacy(pid, wb)
                .unwrap_or(ThrottleStep::Done),
            ThrottlePolicy::IoLess32 => self.balance_dirty_pages_ratelimited_v32(pid, wb),
            ThrottlePolicy::IoLess => match self.balance_dirty_pages_ratelimited(pid, wb) {
                Some(at) => ThrottleStep::Sleep(at),
                None => ThrottleStep::Done,
            },
        };
        self.throttle_stall(pid, step)
    }

    /// balance_dirty_pages sleeps in `io_schedule_timeout()` (every
    /// policy's pause, and the legacy throttle's wait for a request):
    /// iowait, IO pressure.
    #[inline]
    fn throttle_stall(&mut self, pid: Pid, step: ThrottleStep) -> ThrottleStep {
        if matches!(step, ThrottleStep::Sleep(_) | ThrottleStep::Block) {
            self.tasks[pid].stall = crate::kernel::psi::Stall::Io;
        }
        step
    }

    /// Continue a throttle call after a sleep or a CPU burst.
    pub fn throttle_resume(&mut self, pid: Pid, wb: WbId) -> ThrottleStep {
        let wb = self.wb_of_current(pid, wb);
        let step = match self.sc.run.dirty_throttle {
            ThrottlePolicy::Legacy => self.balance_dirty_pages_legacy(pid, wb),
            ThrottlePolicy::IoLess32 => self.balance_dirty_pages_v32_resume(pid, wb),
            ThrottlePolicy::IoLess => match self.balance_dirty_pages_resume(pid, wb) {
                Some(at) => ThrottleStep::Sleep(at),
                None => ThrottleStep::Done,
            },
        };
        self.throttle_stall(pid, step)
    }

    /// Pages a task can dirty before the next check could throttle it.
    #[inline]
    pub fn throttle_pages_until_check(&self, pid: Pid, wb: WbId) -> u64 {
        let wb = self.wb_lookup_current(pid, wb);
        match self.sc.run.dirty_throttle {
            ThrottlePolicy::Legacy => self.legacy_pages_until_check(pid, wb),
            _ => self.pages_until_bdp_check(pid, wb),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `wb_position_ratio` at the tests' limit (51200) and write bandwidth
    /// (12800), from a cold line-scale cache.
    fn pos_ratio(g: &Dtc, strictlimit: bool) -> u64 {
        wb_position_ratio(g, 51_200, 12_800, strictlimit, &mut LineScale::default())
    }

    // Worked by hand from the kernel's formulas: HZ=250, A = 1,000,000
    // dirtyable pages.

    #[test]
    fn thresholds_from_ratios() {
        let vm = crate::scenario::Vm::default();
        let (t, bg) = domain_dirty_limits(&vm, 4096, 1_000_000);
        assert_eq!((t, bg), (199_951, 99_853));
        assert_eq!(dirty_freerun_ceiling(t, bg), 149_902);
        let mut vm2 = vm.clone();
        vm2.dirty_bytes = 200 << 20;
        vm2.dirty_ratio = 0;
        vm2.dirty_background_bytes = 100 << 20;
        vm2.dirty_background_ratio = 0;
        assert_eq!(domain_dirty_limits(&vm2, 4096, 1_000_000), (51_200, 25_600));
        // bg >= thresh: bg becomes thresh/2
        vm2.dirty_background_bytes = 300 << 20;
        assert_eq!(domain_dirty_limits(&vm2, 4096, 1_000_000), (51_200, 25_600));
    }

    #[test]
    fn polynom_points() {
        // f(setpoint) = 1, f(limit) = 0, f(freerun) = 2 (clamped)
        let (freerun, limit) = (38_400u64, 51_200u64);
        let sp = (freerun + limit) / 2; // 44800
        assert_eq!(pos_ratio_polynom(sp, sp, limit), 1024);
        // At the limit the cubic is not quite 0 because of the `| 1`:
        // x = (-6400<<10)/6401 = -1023; (-1023)^2>>10 = 1022;
        // 1022*-1023>>10 = floor(-1021.002) = -1022; 1024 - 1022 = 2.
        // (wb_position_ratio returns 0 before this for dirty >= limit.)
        assert_eq!(pos_ratio_polynom(sp, limit, limit), 2);
        // At freerun: x = (6400<<10)/6401 = 1023; 1023^2>>10 = 1022;
        // 1022*1023>>10 = 1021; 1024 + 1021 = 2045 (just under the 2.0 clamp).
        assert_eq!(pos_ratio_polynom(sp, freerun, limit), 2045);
        // far below freerun the clamp applies
        assert_eq!(pos_ratio_polynom(sp, 0, limit), 2048);
        // far above the limit, clamped at 0
        assert_eq!(pos_ratio_polynom(sp, 80_000, limit), 0);
        // dirty = 46400: x = (-1600<<10)/(6400|1) = -1638400/6401 = -255 (trunc)
        // p = -255; p*x>>10 = 65025>>10 = 63; 63*-255 = -16065 >> 10 = -16 (floor)
        // 1024 - 16 = 1008
        assert_eq!(pos_ratio_polynom(sp, 46_400, limit), 1008);
    }

    #[test]
    fn position_ratio_single_wb() {
        // One wb owning the whole threshold, dirty at setpoint, wb line span
        // 8*write_bw: the wb factor is (x_int - wb_dirty)/(x_int - wb_sp).
        let g = Dtc {
            dirty: 44_800,
            thresh: 51_200,
            bg_thresh: 25_600,
            wb_dirty: 44_800,
            wb_thresh: 51_200,
            ..Default::default()
        };
        // x = (51200<<16)/(51200|1) = 3355443200/51201 = 65534
        // wb_setpoint = 44800*65534>>16 = 44798; span = (0 + 8*12800)*65534>>16 = 102396
        // x_intercept = 147194; pos = 1024*(147194-44800)/((147194-44798)|1)
        //   = 104851456/102397 = 1023
        assert_eq!(pos_ratio(&g, false), 1023);
        // over the limit: 0
        let over = Dtc { dirty: 51_200, ..g };
        assert_eq!(pos_ratio(&over, false), 0);
        // reserve area: wb nearly empty gets boosted 8x
        let empty = Dtc { wb_dirty: 100, ..g };
        let p = pos_ratio(&empty, false);
        assert!(p > 2048, "{p}");
    }

    #[test]
    fn position_ratio_strictlimit() {
        // FUSE-like bdi with a 1% share: thresh 51200, wb_thresh 512,
        // wb_bg_thresh 256; global dirty well below freerun (pos = 2048).
        let g = Dtc {
            dirty: 10_000,
            thresh: 51_200,
            bg_thresh: 25_600,
            wb_dirty: 400,
            wb_thresh: 512,
            wb_bg_thresh: 256,
            ..Default::default()
        };
        // wb line: setpoint (512+256)/2 = 384, x = ((384-400)<<10)/(128|1)
        //   = -16384/129 = -127; p = -127*-127>>10 = 15; 15*-127>>10 = -2
        //   (floor of -1.86); 1024 - 2 = 1022. min(2048, 1022) = 1022.
        assert_eq!(pos_ratio(&g, true), 1022);
        assert_eq!(pos_ratio(&Dtc { wb_dirty: 512, ..g }, true), 0);
        assert_eq!(pos_ratio(&Dtc { wb_dirty: 4, ..g }, true), 2048);
    }

    #[test]
    fn write_bandwidth_update() {
        // HZ=250: period 1024. 50 jiffies in which 2560 pages completed
        // (12800 pages/s). bw = (2560*250 + 25600*(1024-50)) >> 10
        //   = (640000 + 24934400) >> 10 = 24975
        let cur = WriteBw {
            write_bandwidth: 25_600,
            avg_write_bandwidth: 25_600,
        };
        let n = update_write_bandwidth(250, cur, 50, 12_560, 10_000);
        assert_eq!(n.write_bandwidth, 24_975);
        // avg == old: no move
        assert_eq!(n.avg_write_bandwidth, 25_600);
        // next step: avg(25600) > old(24975) >= bw -> avg -= (625>>3) = 78
        let n2 = update_write_bandwidth(250, n, 50, 12_560 + 2560, 12_560);
        assert!(n2.write_bandwidth < 24_975);
        assert_eq!(n2.avg_write_bandwidth, 25_600 - 78);
        // long gap: reset both to the measured rate
        let n3 = update_write_bandwidth(250, cur, 2000, 100_000, 0);
        assert_eq!(
            n3,
            WriteBw {
                write_bandwidth: 12_500,
                avg_write_bandwidth: 12_500
            }
        );
    }

    #[test]
    fn ratelimit_step() {
        // 10 tasks at R=25600 dirtying 10x what the disk writes: balanced
        // falls to write_bw/10; dirty above setpoint so R steps down.
        let g = Dtc {
            dirty: 46_000,
            thresh: 51_200,
            bg_thresh: 25_600,
            pos_ratio: 1024,
            ..Default::default()
        };
        // elapsed 50 j, dirtied 51200 pages -> dirty_rate = 51200*250/50 = 256000
        let u = update_dirty_ratelimit(
            250, &g, 51_200, 12_800, 25_600, 25_600, 51_200, 0, 50, false,
        );
        assert_eq!(u.dirty_rate, 256_000);
        assert_eq!(u.task_ratelimit, 25_601);
        // balanced = 25601*12800/256000 = 1280
        assert_eq!(u.balanced_dirty_ratelimit, 1_280);
        // x = max(25600, 1280, 25601) = 25601 > R: step = 0 -> no move
        assert_eq!(u.dirty_ratelimit, 25_600);
        // with a previous balanced estimate that agrees, R moves:
        // x = max(2000, 1280, 25601)... still 25601; use pos_ratio 512
        let g2 = Dtc {
            pos_ratio: 512,
            ..g
        };
        let u2 = update_dirty_ratelimit(
            250, &g2, 51_200, 12_800, 25_600, 2_000, 51_200, 0, 50, false,
        );
        // task_rl = 12801; balanced = 12801*12800/256000 = 640; x = max(2000,640,12801) = 12801
        // step = 25600-12801 = 12799; shift = 25600/25599 = 1; step = ceil((12799>>1)/8) = 800
        assert_eq!(u2.dirty_ratelimit, 25_600 - 800);
        // dead zone: a tiny step is damped to 0
        let g3 = Dtc {
            pos_ratio: 1023,
            ..g
        };
        let u3 = update_dirty_ratelimit(
            250, &g3, 51_200, 12_800, 25_600, 1_000, 51_200, 0, 50, false,
        );
        // task_rl = 25575+1 = 25576; step = 24; shift = 25600/49 = 522 >= 64 -> 0
        assert_eq!(u3.dirty_ratelimit, 25_600);
    }

    #[test]
    fn pauses() {
        // By hand: 1 dd, HZ=250, bw = R = 25600: t = 2, pages = 25600*2/256 = 200,
        // min_pause = 1 + 2/2 = 2; max_pause = 50 for wb_dirty ~175k
        let maxp = wb_max_pause(250, 25_600, 175_000);
        assert_eq!(maxp, 50);
        assert_eq!(
            wb_min_pause(250, 25_600, 25_600, maxp, 25_600, 25_600),
            (2, 200)
        );
        // HZ=1000: t = 10, pages = 25600*10/1024 = 250, min_pause = 6
        assert_eq!(
            wb_min_pause(1000, 25_600, 25_600, 200, 25_600, 25_600),
            (6, 250)
        );
        // 10 dd: R = 1280 pages/s: hi = ilog2(12800) = 13, lo = 10 ->
        // t = 2 + 3*2500/1024 = 2 + 7 = 9; pages = 1280*9/256 = 45;
        // min_pause = 1 + 9/2 = 5
        assert_eq!(wb_min_pause(250, 12_800, 1_280, 50, 1_280, 1_280), (5, 45));
        // tiny rate: pages < 32 -> t = max_pause, pages capped at 32
        // R = 100: pages = 100*50/256 = 19 < 32 -> stays 19, t = 50
        assert_eq!(wb_min_pause(250, 12_800, 100, 50, 100, 100), (50, 19));
        // wb_max_pause: 12800 pages/s, wb_dirty 4000: 4000/(1+12800/32)+1 = 4000/401+1 = 10
        assert_eq!(wb_max_pause(250, 12_800, 4_000), 10);
    }

    #[test]
    fn poll_interval_and_dirty_limit() {
        assert_eq!(dirty_poll_interval(0, 199_951), 256);
        assert_eq!(dirty_poll_interval(51_200, 51_200), 1);
        assert_eq!(dirty_poll_interval(40_000, 51_200), 64); // ilog2(11200)=13 -> 2^6
        assert_eq!(update_dirty_limit(40_000, 51_200, 0), 51_200);
        assert_eq!(update_dirty_limit(60_000, 51_200, 0), 60_000 - (8_800 >> 5));
        assert_eq!(update_dirty_limit(60_000, 51_200, 70_000), 60_000);
    }
}
