//! Buffered writeback throttling, wbt (block/blk-wbt.c, block/blk-rq-qos.c).
//!
//! wbt sits in front of tag allocation (`rq_qos_throttle` in
//! `blk_mq_get_new_requests`): a buffered write that needs a *new* request
//! (merged bios never do) takes an inflight token first, and sleeps, FIFO and
//! exclusive, when the in-flight count is at its limit. The token is held
//! from then until the request completes, so requests sitting in a plug
//! count. The limit depends on the write (`get_limit`):
//!
//! - `max_depth` for WB_SYNC_ALL writeback (REQ_SYNC), or when a task slept
//!   in balance_dirty_pages on this queue's bdi within the last second;
//! - `wb_background` for background and periodic writeback (REQ_BACKGROUND)
//!   and within 100 ms of a read's issue or completion (`close_io`; and in
//!   the 100 ms after the queue is set up);
//! - `wb_normal` otherwise (start-all writeback, a legacy dirtier's own).
//!
//! `max_depth` starts at min(16, queue depth) and is scaled every monitoring
//! window (`wb_timer_fn`): without reads, a window with writes scales it up
//! (the step goes negative) to at most 3/4 of the queue depth. Completions
//! wake waiters only below the limits of `wbt_rqw_done`; with a volatile
//! write cache and no recently throttled dirtier that limit is 0, so waiters
//! wait for the queue to drain.
//!
//! Reads are never throttled (`wbt_should_throttle` is false for them):
//! they take no token and go straight to tag allocation; their issue and
//! completion times feed `close_io` (`last_issue`, `last_comp`).
//!
//! Not modelled: the read-latency monitoring (read latency samples in the
//! window, `LAT_OK`/`LAT_EXCEEDED` and the scale-downs they cause: a window
//! with reads is judged as one with writes only), the kswapd and discard
//! classes, and BFQ switching wbt off.

use crate::block::blk_mq::ReqId;
use crate::kernel::{DevId, Ev, Kernel, Pid};
use crate::sim::{Ns, NSEC_PER_SEC};
use std::collections::VecDeque;

/// `RWB_DEF_DEPTH`.
pub const RWB_DEF_DEPTH: u32 = 16;
/// `RWB_WINDOW_NSEC`: the monitoring window at scale steps ≤ 0.
pub const RWB_WINDOW_NSEC: Ns = 100_000_000;
/// `RWB_UNKNOWN_BUMP`: windows without information before the step moves
/// one unit back towards 0.
pub const RWB_UNKNOWN_BUMP: u32 = 5;

/// Request flags wbt looks at (`blk_opf_t`, from `wbc_to_write_flags`).
pub const REQ_SYNC: u8 = 1;
pub const REQ_BACKGROUND: u8 = 2;
pub const REQ_META: u8 = 4;
/// A write the block layer never merges (REQ_PREFLUSH | REQ_FUA: XFS's
/// log buffers).
pub const REQ_NOMERGE: u8 = 8;
/// A read (`REQ_OP_READ`; the kernel keeps the op apart from the flags,
/// wbsim marks it with a bit so that every write bio stays as it was).
pub const REQ_READ: u8 = 16;
/// `REQ_IDLE`: with REQ_SYNC on a write, an O_DIRECT write
/// (iomap's `iomap_dio_bio_opflags`), which wbt does not throttle.
pub const REQ_IDLE: u8 = 32;

/// `wbt_should_throttle`: writes and discards, except O_DIRECT writes
/// (REQ_SYNC | REQ_IDLE); never reads.
pub fn wbt_should_throttle(opf: u8) -> bool {
    opf & REQ_READ == 0 && opf & (REQ_SYNC | REQ_IDLE) != (REQ_SYNC | REQ_IDLE)
}

/// `wb_timer_fn`'s window outcomes (`LAT_*`; the trace prints the number).
pub const LAT_UNKNOWN: u32 = 2;
pub const LAT_UNKNOWN_WRITES: u32 = 3;

/// `struct rq_depth` plus `struct rq_wb` of one queue.
#[derive(Clone, Debug, Default)]
pub struct RqWb {
    /// `min_lat_nsec` (sysfs `queue/wbt_lat_usec` × 1000); 0: wbt is off.
    pub min_lat_ns: u64,
    /// The queue has a volatile write cache (`QUEUE_FLAG_WC`).
    pub wc: bool,
    /// `blk_queue_depth`: the driver's queue depth, else nr_requests.
    pub queue_depth: u32,
    pub scale_step: i32,
    pub scaled_max: bool,
    pub max_depth: u32,
    pub wb_normal: u32,
    pub wb_background: u32,
    /// Tracked requests holding a token (`rq_wait[WBT_RWQ_BG].inflight`).
    pub inflight: u32,
    pub unknown_cnt: u32,
    pub cur_win_ns: Ns,
    /// The stat window is active (its timer is pending).
    pub timer_armed: bool,
    /// Write completions in the current window (`stat[WRITE].nr_samples`).
    pub win_writes: u64,
    /// The later of `last_issue`/`last_comp` (reads only; set when the
    /// queue is set up).
    pub last_read_j: u64,
    /// When the queue was set up: the dirty-sleep time of a queue without
    /// a bdi of its own (an md member).
    pub init_j: u64,
    /// Requests whose submitter sleeps for a token, oldest first.
    pub waiters: VecDeque<ReqId>,
}

/// `rq_depth_calc_max_depth`: the depth at `step`, and whether it hit the
/// 3/4-of-queue-depth ceiling (scaling up stops there).
pub fn calc_max_depth(queue_depth: u32, step: i32) -> (u32, bool) {
    if queue_depth == 1 {
        return if step > 0 { (1, false) } else { (2, true) };
    }
    let d = RWB_DEF_DEPTH.min(queue_depth);
    if step > 0 {
        (1 + ((d - 1) >> step.min(31)), false)
    } else if step < 0 {
        let maxd = 3 * queue_depth / 4;
        let up = u64::from(d - 1) << (-step).min(40);
        let depth = 1 + up;
        if depth > u64::from(maxd) {
            (maxd, true)
        } else {
            (depth as u32, false)
        }
    } else {
        (d, false)
    }
}

/// `calc_wb_limits`: (wb_normal, wb_background).
pub fn calc_wb_limits(min_lat_ns: u64, max_depth: u32) -> (u32, u32) {
    if min_lat_ns == 0 {
        (0, 0)
    } else if max_depth <= 2 {
        (max_depth, 1)
    } else {
        (max_depth.div_ceil(2), max_depth.div_ceil(4))
    }
}

/// `rwb_arm_timer`'s window: 100 ms, shrunk to 100 ms/√(step+1) at
/// positive steps, with the kernel's integer square root.
pub fn window_ns(step: i32) -> Ns {
    if step > 0 {
        (RWB_WINDOW_NSEC << 4) / crate::klib::int_sqrt(((step as u64) + 1) << 8)
    } else {
        RWB_WINDOW_NSEC
    }
}

/// `wbt_rqw_done`'s wake test after the in-flight count dropped to
/// `inflight`: wake the waiters only when the queue drained, or when at
/// least half the background limit is free below `limit`.
pub fn completion_wakes(inflight: u32, limit: u32, wb_background: u32) -> bool {
    if inflight != 0 && inflight >= limit {
        return false;
    }
    let diff = i64::from(limit) - i64::from(inflight);
    inflight == 0 || diff >= i64::from(wb_background / 2)
}

impl RqWb {
    pub fn new(min_lat_ns: u64, wc: bool, queue_depth: u32, now_j: u64) -> RqWb {
        let mut w = RqWb {
            min_lat_ns,
            wc,
            queue_depth,
            last_read_j: now_j,
            init_j: now_j,
            ..Default::default()
        };
        w.update_limits();
        w
    }

    /// `rwb_enabled`.
    pub fn enabled(&self) -> bool {
        self.min_lat_ns != 0 && self.wb_normal != 0
    }

    /// `wbt_update_limits`.
    fn update_limits(&mut self) {
        self.scale_step = 0;
        self.scaled_max = false;
        self.max_depth = calc_max_depth(self.queue_depth, 0).0;
        self.set_limits();
    }

    fn set_limits(&mut self) {
        (self.wb_normal, self.wb_background) = calc_wb_limits(self.min_lat_ns, self.max_depth);
    }

    /// `rq_depth_scale_up` + `calc_wb_limits`; false once at the ceiling.
    pub fn scale_up(&mut self) -> bool {
        if self.scaled_max {
            return false;
        }
        self.scale_step -= 1;
        (self.max_depth, self.scaled_max) = calc_max_depth(self.queue_depth, self.scale_step);
        self.set_limits();
        self.unknown_cnt = 0;
        true
    }

    /// `rq_depth_scale_down` + `calc_wb_limits`; false at depth 1.
    pub fn scale_down(&mut self, hard: bool) -> bool {
        if self.max_depth == 1 {
            return false;
        }
        if self.scale_step < 0 && hard {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.max_depth = calc_max_depth(self.queue_depth, self.scale_step).0;
        self.set_limits();
        self.unknown_cnt = 0;
        true
    }
}

impl Kernel {
    /// `wb_recent_wait`: a task slept in balance_dirty_pages on this
    /// queue's bdi within the last second. A queue without a filesystem of
    /// its own (an md member) has a wb that never sees a dirtier; its
    /// `dirty_sleep` stays at the time it was set up.
    fn wbt_recent_wait(&self, dev: DevId) -> bool {
        let now = self.jiffies();
        // the bdi's root wb (`bdi->wb`)
        let sleep = self
            .bdis
            .iter()
            .find(|b| b.dev == dev)
            .map_or(self.devs[dev].wbt.init_j, |b| {
                self.wbs[b.wbs[0]].dirty_sleep
            });
        now < sleep + self.hz()
    }

    /// `get_limit` for a buffered write with flags `opf`.
    fn wbt_limit(&self, dev: DevId, opf: u8) -> u32 {
        let w = &self.devs[dev].wbt;
        if !w.enabled() {
            return u32::MAX;
        }
        // REQ_HIPRIO = REQ_SYNC | REQ_META | REQ_PRIO
        if opf & (REQ_SYNC | REQ_META) != 0 || self.wbt_recent_wait(dev) {
            w.max_depth
        } else if opf & REQ_BACKGROUND != 0 || self.jiffies() < w.last_read_j + self.hz() / 10 {
            w.wb_background
        } else {
            w.wb_normal
        }
    }

    /// `wbt_wait` → `rq_qos_wait`: take a token for a new request, unless
    /// others already sleep for one or the limit is reached. Returns false
    /// if the submitter must sleep (the caller queues the request on
    /// `waiters`).
    pub fn wbt_wait(&mut self, dev: DevId, opf: u8) -> bool {
        if !self.devs[dev].wbt.enabled() {
            return true;
        }
        let limit = self.wbt_limit(dev, opf);
        let w = &mut self.devs[dev].wbt;
        if !w.waiters.is_empty() || w.inflight >= limit {
            return false;
        }
        w.inflight += 1;
        if !w.timer_armed {
            self.wbt_arm_timer(dev);
        }
        true
    }

    /// `rwb_arm_timer` → `blk_stat_activate_nsecs`: a timer wheel timer
    /// `nsecs_to_jiffies(window)` jiffies from now; the window's stats start
    /// empty.
    fn wbt_arm_timer(&mut self, dev: DevId) {
        let (now_j, tick) = (self.jiffies(), NSEC_PER_SEC / self.hz());
        let w = &mut self.devs[dev].wbt;
        w.cur_win_ns = window_ns(w.scale_step);
        w.win_writes = 0;
        w.timer_armed = true;
        let j = now_j + w.cur_win_ns / tick;
        let at = self.timer_fire_time(j);
        self.q.schedule(at, Ev::WbtTimer { dev: dev as u32 });
    }

    /// `wbt_issue` of a read, and `wbt_done` of one: `last_issue` /
    /// `last_comp` for `close_io`.
    #[inline]
    pub fn wbt_read_seen(&mut self, dev: DevId) {
        let now = self.jiffies();
        let w = &mut self.devs[dev].wbt;
        w.last_read_j = w.last_read_j.max(now);
    }

    /// A write request completed (`blk_stat_add` and, for a tracked one,
    /// `wbt_done` → `wbt_rqw_done`). Returns the requests that got a token
    /// and go on to tag allocation.
    pub fn wbt_done(&mut self, dev: DevId, tracked: bool) -> Vec<ReqId> {
        let recent = self.devs[dev].wbt.min_lat_ns != 0 && self.wbt_recent_wait(dev);
        let w = &mut self.devs[dev].wbt;
        if w.timer_armed {
            w.win_writes += 1;
        }
        if !tracked {
            return Vec::new();
        }
        w.inflight -= 1;
        if !w.enabled() {
            return self.wbt_wake_all(dev);
        }
        let limit = if w.wc && !recent { 0 } else { w.wb_normal };
        if !w.waiters.is_empty() && completion_wakes(w.inflight, limit, w.wb_background) {
            return self.wbt_wake_all(dev);
        }
        Vec::new()
    }

    /// `rwb_wake_all` → `rq_qos_wake_function`: hand tokens to the sleepers
    /// in order while each one's own limit allows; the first that cannot
    /// have one stops the wakeups.
    fn wbt_wake_all(&mut self, dev: DevId) -> Vec<ReqId> {
        let mut got = Vec::new();
        while let Some(&rq) = self.devs[dev].wbt.waiters.front() {
            let opf = self.reqs[rq].as_ref().expect("rq").opf;
            let limit = self.wbt_limit(dev, opf);
            let w = &mut self.devs[dev].wbt;
            if w.inflight >= limit {
                break;
            }
            w.inflight += 1;
            w.waiters.pop_front();
            self.reqs[rq].as_mut().expect("rq").wbt_tracked = true;
            got.push(rq);
        }
        got
    }

    /// `wb_timer_fn`: the end of a monitoring window. Without reads the
    /// outcome is LAT_UNKNOWN_WRITES when writes are going on (scale up) or
    /// LAT_UNKNOWN (after RWB_UNKNOWN_BUMP of them, step back towards 0).
    pub fn wbt_timer(&mut self, dev: DevId) {
        let recent = self.wbt_recent_wait(dev);
        let w = &mut self.devs[dev].wbt;
        w.timer_armed = false;
        let inflight = w.inflight;
        let status = if w.win_writes > 0 || recent || inflight > 0 {
            LAT_UNKNOWN_WRITES
        } else {
            LAT_UNKNOWN
        };
        let step = w.scale_step;
        if self.tracer.on.wbt_timer {
            let name = self.devs[dev].bdi_name();
            self.trace_line_softirq(
                "wbt_timer",
                format_args!("{name}: status={status}, step={step}, inflight={inflight}"),
            );
        }
        let w = &mut self.devs[dev].wbt;
        let mut woken = Vec::new();
        let msg = match status {
            LAT_UNKNOWN_WRITES => w.scale_up().then_some("scale up"),
            _ => {
                w.unknown_cnt += 1;
                if w.unknown_cnt < RWB_UNKNOWN_BUMP {
                    None
                } else if w.scale_step > 0 {
                    w.scale_up().then_some("scale up")
                } else if w.scale_step < 0 {
                    w.scale_down(false).then_some("scale down")
                } else {
                    None
                }
            }
        };
        if let Some(msg) = msg {
            if msg == "scale up" {
                woken = self.wbt_wake_all(dev);
            }
            if self.tracer.on.wbt_step {
                let w = &self.devs[dev].wbt;
                let (s, win, bg, nr, mx) = (
                    w.scale_step,
                    w.cur_win_ns / 1000,
                    w.wb_background,
                    w.wb_normal,
                    w.max_depth,
                );
                let name = self.devs[dev].bdi_name();
                self.trace_line_softirq(
                    "wbt_step",
                    format_args!(
                        "{name}: {msg}: step={s}, window={win}us, background={bg}, normal={nr}, max={mx}"
                    ),
                );
            }
        }
        if self.devs[dev].wbt.scale_step != 0 || inflight > 0 {
            self.wbt_arm_timer(dev);
        }
        self.wbt_tokens_granted(dev, woken);
    }

    /// Requests that got a wbt token go on to allocate a tag; their
    /// submitters wake once none of their requests waits any more.
    pub fn wbt_tokens_granted(&mut self, dev: DevId, rqs: Vec<ReqId>) {
        let mut woken: Vec<Pid> = Vec::new();
        for rq in rqs {
            let (waiter, mut next) = {
                let r = self.reqs[rq].as_ref().expect("rq");
                (r.waiter, r.wbt_next)
            };
            // (a request may complete within its issue: not read after it)
            self.blk_mq_get_tag(dev, rq, waiter, crate::block::blk_mq::TagFrom::WbtToken);
            // the woken submitter goes on with the requests it held: each
            // takes a token at once if none sleeps and the limit allows,
            // else it queues at the back and the submitter sleeps again
            let mut last = rq;
            while next != u32::MAX {
                let n = next as usize;
                self.devs[dev].wbt_held -= 1;
                let opf = self.reqs[n].as_ref().expect("rq").opf;
                if !self.wbt_wait(dev, opf) {
                    self.devs[dev].wbt.waiters.push_back(n);
                    last = usize::MAX;
                    break;
                }
                let r = self.reqs[n].as_mut().expect("rq");
                r.wbt_tracked = true;
                let after = r.wbt_next;
                self.blk_mq_get_tag(dev, n, waiter, crate::block::blk_mq::TagFrom::WbtToken);
                next = after;
                last = n;
            }
            // every request it held has its token: it no longer waits
            self.devs[dev]
                .wbt_tails
                .retain(|&(p, t)| !(Some(p) == waiter && t == last as u32));
            if let Some(p) = waiter {
                if !woken.contains(&p) {
                    woken.push(p);
                }
            }
        }
        for p in woken {
            self.wake_if_done_waiting(p);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn wbt_throttles_buffered_writes_not_reads_or_direct_writes() {
        use super::{wbt_should_throttle, REQ_BACKGROUND, REQ_IDLE, REQ_META, REQ_READ, REQ_SYNC};
        assert!(wbt_should_throttle(0));
        assert!(wbt_should_throttle(REQ_BACKGROUND));
        // a sync writeback (or fsync) write is throttled at a higher limit
        assert!(wbt_should_throttle(REQ_SYNC));
        assert!(wbt_should_throttle(REQ_SYNC | REQ_META));
        assert!(!wbt_should_throttle(REQ_READ));
        assert!(!wbt_should_throttle(REQ_READ | REQ_SYNC));
        // O_DIRECT: REQ_SYNC | REQ_IDLE
        assert!(!wbt_should_throttle(REQ_SYNC | REQ_IDLE));
        assert!(wbt_should_throttle(REQ_IDLE));
    }

    use super::*;

    #[test]
    fn depth_at_each_step() {
        // default: min(16, qd)
        assert_eq!(calc_max_depth(32, 0), (16, false));
        assert_eq!(calc_max_depth(4, 0), (4, false));
        // scaling down halves (d-1): 1 + (15 >> 1) = 8, 1 + (15 >> 3) = 2
        assert_eq!(calc_max_depth(32, 1), (8, false));
        assert_eq!(calc_max_depth(32, 3), (2, false));
        assert_eq!(calc_max_depth(32, 9), (1, false));
        // scaling up doubles (d-1) until 3/4 of the queue depth:
        // qd 32: 31, then 61 > 24 → 24 and the ceiling
        assert_eq!(calc_max_depth(32, -1), (24, true));
        // qd 128 (a loop device): 31, 61, 96 (ceiling)
        assert_eq!(calc_max_depth(128, -1), (31, false));
        assert_eq!(calc_max_depth(128, -2), (61, false));
        assert_eq!(calc_max_depth(128, -3), (96, true));
        // QD=1 devices get 2, or 1 while scaled down
        assert_eq!(calc_max_depth(1, 0), (2, true));
        assert_eq!(calc_max_depth(1, 2), (1, false));
    }

    #[test]
    fn limits_from_depth() {
        assert_eq!(calc_wb_limits(2_000_000, 16), (8, 4));
        assert_eq!(calc_wb_limits(2_000_000, 24), (12, 6));
        assert_eq!(calc_wb_limits(2_000_000, 96), (48, 24));
        assert_eq!(calc_wb_limits(2_000_000, 2), (2, 1));
        assert_eq!(calc_wb_limits(0, 16), (0, 0)); // wbt_lat_usec = 0: off
    }

    #[test]
    fn window_shrinks_with_positive_steps() {
        assert_eq!(window_ns(0), 100_000_000);
        assert_eq!(window_ns(-3), 100_000_000);
        // (1.6e9) / int_sqrt(512) = 1.6e9 / 22
        assert_eq!(window_ns(1), 1_600_000_000 / 22);
        // step 3: int_sqrt(1024) = 32 → 50 ms
        assert_eq!(window_ns(3), 50_000_000);
    }

    #[test]
    fn scaling_up_stops_at_the_ceiling_and_down_at_one() {
        let mut w = RqWb::new(75_000_000, false, 32, 0);
        assert_eq!((w.max_depth, w.wb_normal, w.wb_background), (16, 8, 4));
        assert!(w.scale_up());
        assert_eq!((w.scale_step, w.max_depth, w.wb_background), (-1, 24, 6));
        assert!(!w.scale_up(), "the ceiling was hit");
        // a latency miss resets a negative step to 0 at once
        assert!(w.scale_down(true));
        assert_eq!((w.scale_step, w.max_depth), (0, 16));
        for _ in 0..4 {
            assert!(w.scale_down(false));
        }
        assert_eq!(w.max_depth, 1);
        assert!(!w.scale_down(false));
    }

    #[test]
    fn completion_wake_rule() {
        // above the limit: nobody wakes
        assert!(!completion_wakes(9, 8, 4));
        // 8 - 7 = 1 < 4/2: not enough room yet
        assert!(!completion_wakes(7, 8, 4));
        assert!(completion_wakes(6, 8, 4));
        // write cache on and no throttled dirtier: limit 0, only an empty
        // queue wakes
        assert!(!completion_wakes(1, 0, 4));
        assert!(completion_wakes(0, 0, 4));
    }
}
