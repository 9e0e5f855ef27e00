//! bcache's writeback-rate controller (drivers/md/bcache/writeback.c:
//! `__calc_target_rate`, `__update_writeback_rate`, `update_writeback_rate`,
//! `idle_counter_exceeded`, `set_at_max_writeback_rate`; the sysfs
//! `writeback_rate_debug` of drivers/md/bcache/sysfs.c).
//!
//! Every `writeback_rate_update_seconds` a backing device's rate is set
//! from how far its dirty data is above its target share of the cache:
//! a proportional term that would retire the excess in
//! `writeback_rate_p_term_inverse` seconds, plus an integral term that
//! accumulates the error only while the writeback thread keeps up with the
//! rate it was given. Since 5.12 (the fragmentation term,
//! `writeback_consider_fragment`) the proportional term is raised once more
//! than 50% of the buckets are in use and the dirty data fills them thinly:
//! without it, dirty data spread over many buckets keeps the rate at its
//! minimum while the buckets run out, and writes reach the sync cutoff.
//! The policy is a value here: `consider_fragment = false` is the kernel
//! before 5.12, and the fp terms are knobs (5.12 merged 1/10/1000; the
//! posting had 1/5/50).
//!
//! All arithmetic is the kernel's: 64-bit signed sectors, divisions that
//! truncate toward zero, and the new rate clamped after a cast to 32 bits.

use super::util::{hprint, Ratelimit};
use super::Op;
use crate::block::blk_wbt::REQ_READ;
use crate::kernel::{DevId, Kernel};
use crate::sim::Ns;

/// `BCH_WRITEBACK_FRAGMENT_THRESHOLD_LOW`, `_MID`, `_HIGH` (in_use, %).
pub const FRAGMENT_THRESHOLD_LOW: i64 = 50;
pub const FRAGMENT_THRESHOLD_MID: i64 = 57;
pub const FRAGMENT_THRESHOLD_HIGH: i64 = 64;
/// `WRITEBACK_SHARE_SHIFT`: a device's share of the cache in 1/16384ths.
pub const WRITEBACK_SHARE_SHIFT: u32 = 14;
/// `BCH_WBRATE_UPDATE_MAX_SKIPS`: updates skipped for a busy
/// `writeback_lock` before the update waits for it.
pub const WBRATE_UPDATE_MAX_SKIPS: u32 = 15;
const NSEC_PER_MSEC: u64 = 1_000_000;
const NSEC_PER_SEC: i64 = 1_000_000_000;

/// The backing device's controller knobs, under their sysfs names
/// (/sys/block/bcacheN/bcache/...), with the kernel's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateConf {
    /// `writeback_percent`: the dirty target, percent of the cache.
    pub writeback_percent: u64,
    /// `writeback_rate_update_seconds`.
    pub update_seconds: u64,
    /// `writeback_rate_p_term_inverse`.
    pub p_term_inverse: i64,
    /// `writeback_rate_i_term_inverse`.
    pub i_term_inverse: i64,
    /// `writeback_rate_minimum` (sectors/s).
    pub minimum: i64,
    /// `writeback_consider_fragment`: the 5.12 fragmentation term.
    pub consider_fragment: bool,
    /// `writeback_rate_fp_term_low`, `_mid`, `_high`.
    pub fp_term_low: i64,
    pub fp_term_mid: i64,
    pub fp_term_high: i64,
}

impl Default for RateConf {
    /// 6.1's defaults.
    fn default() -> RateConf {
        RateConf {
            writeback_percent: 10,
            update_seconds: 5,
            p_term_inverse: 40,
            i_term_inverse: 10_000,
            minimum: 8,
            consider_fragment: true,
            fp_term_low: 1,
            fp_term_mid: 10,
            fp_term_high: 1000,
        }
    }
}

/// What the controller reads of the cache set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSetState {
    pub nbuckets: u64,
    /// Buckets free or holding only clean data (`avail_nbuckets`).
    pub avail_nbuckets: u64,
    /// Sectors a bucket.
    pub bucket_size: u64,
    /// `gc_stats.in_use`: percent of the buckets in use, truncated.
    pub in_use: i64,
    /// Dirty sectors of flash-only volumes (`flash_dev_dirty_sectors`).
    pub flash_dev_dirty_sectors: u64,
    /// Σ of the attached backing devices' sectors (`cached_dev_sectors`).
    pub cached_dev_sectors: u64,
}

/// A backing device's controller state and outputs (`struct cached_dev`'s
/// `writeback_rate*` fields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateState {
    pub limiter: Ratelimit,
    /// `writeback_rate_integral` (sector-seconds).
    pub integral: i64,
    /// `writeback_rate_proportional`.
    pub proportional: i64,
    /// `writeback_rate_integral_scaled`.
    pub integral_scaled: i64,
    /// `writeback_rate_change`.
    pub change: i64,
    /// `writeback_rate_target`.
    pub target: i64,
    /// `rate_update_retry`.
    pub update_retry: u32,
}

impl RateState {
    /// At `bch_cached_dev_writeback_init`: rate 1024 sectors/s.
    pub fn new(now: Ns) -> RateState {
        RateState {
            limiter: Ratelimit::new(1024, now),
            integral: 0,
            proportional: 0,
            integral_scaled: 0,
            change: 0,
            target: 0,
            update_retry: 0,
        }
    }
}

/// `__calc_target_rate`: the device's dirty target in sectors,
/// `writeback_percent` of the cache (less flash-only volumes' dirty data),
/// times the device's share of all backing sectors (at least 1/16384).
pub fn calc_target_rate(conf: &RateConf, c: &CacheSetState, bdev_sectors: u64) -> i64 {
    let cache_sectors = c.nbuckets * c.bucket_size - c.flash_dev_dirty_sectors;
    // the share is a u32 in the kernel
    let share = (((bdev_sectors << WRITEBACK_SHARE_SHIFT) / c.cached_dev_sectors.max(1))
        & 0xffff_ffff)
        .max(1);
    let dirty_target = cache_sectors * conf.writeback_percent / 100;
    ((dirty_target * share) >> WRITEBACK_SHARE_SHIFT) as i64
}

/// The fragmentation term's floor for the proportional term
/// (`__update_writeback_rate`, since 5.12), when it applies: in_use above
/// the low threshold, dirty data, and the in-use buckets more than three
/// times what the dirty data would fill.
fn fragment_p(conf: &RateConf, c: &CacheSetState, dirty: i64) -> Option<i64> {
    if !conf.consider_fragment || c.in_use <= FRAGMENT_THRESHOLD_LOW || dirty <= 0 {
        return None;
    }
    let dirty_buckets = c.nbuckets as i64 - c.avail_nbuckets as i64;
    let fragment = dirty_buckets * c.bucket_size as i64 / dirty;
    let fp_term = if c.in_use <= FRAGMENT_THRESHOLD_MID {
        conf.fp_term_low * (c.in_use - FRAGMENT_THRESHOLD_LOW)
    } else if c.in_use <= FRAGMENT_THRESHOLD_HIGH {
        conf.fp_term_mid * (c.in_use - FRAGMENT_THRESHOLD_MID)
    } else {
        conf.fp_term_high * (c.in_use - FRAGMENT_THRESHOLD_HIGH)
    };
    if dirty_buckets == 0 {
        return None;
    }
    let fps = dirty / dirty_buckets * fp_term;
    (fragment > 3).then_some(fps)
}

/// `__update_writeback_rate`: one controller step at `now` for a device
/// with `dirty` dirty sectors.
pub fn update_rate(
    st: &mut RateState,
    conf: &RateConf,
    c: &CacheSetState,
    bdev_sectors: u64,
    dirty: i64,
    now: Ns,
) {
    let target = calc_target_rate(conf, c, bdev_sectors);
    let error = dirty - target;
    let mut p = error / conf.p_term_inverse;
    if let Some(fps) = fragment_p(conf, c, dirty) {
        if fps > p {
            p = fps;
        }
    }
    // integrate down only while positive, and up only while the writeback
    // thread is held back by the limiter (its next slot not over 1 ms past)
    let keeping_up = now < st.limiter.next + NSEC_PER_MSEC;
    if (error < 0 && st.integral > 0) || (error > 0 && keeping_up) {
        st.integral += error * conf.update_seconds as i64;
    }
    let i = st.integral / conf.i_term_inverse;
    // clamp_t(int32_t, ...): the sum is cut to 32 bits before the clamp
    let sum = (p + i) as i32 as i64;
    let rate = sum.clamp(conf.minimum, NSEC_PER_SEC);
    st.proportional = p;
    st.integral_scaled = i;
    st.change = rate - st.limiter.rate;
    st.limiter.rate = rate;
    st.target = target;
}

/// The cache set's idle detection (`idle_counter`, `at_max_writeback_rate`):
/// after about six update periods a device without a bio, writeback may
/// run at full speed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IdleState {
    /// `idle_counter`: update ticks since the last bio to any device.
    pub counter: i32,
    /// `at_max_writeback_rate`.
    pub at_max: bool,
}

impl IdleState {
    /// `idle_counter_exceeded`: count this tick; enough ticks for
    /// `attached` devices is 6·attached² (each device's tick counts).
    fn exceeded(&mut self, attached: i32) -> bool {
        self.counter = self.counter.wrapping_add(1);
        if self.counter <= 0 {
            self.counter = 0;
            return false;
        }
        attached != 0 && self.counter >= attached * attached * 6
    }

    /// A bio to any device of the set (`cached_dev_submit_bio`): the
    /// counter restarts, and a set at its maximum rate drops every device
    /// to rate 1 (`quit_max_writeback_rate`) until its next update.
    /// Returns whether the rates were dropped.
    pub fn on_bio(&mut self) -> bool {
        self.counter = 0;
        std::mem::take(&mut self.at_max)
    }
}

/// What one `update_writeback_rate` tick did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    /// Nothing dirty, or `writeback_percent` 0: the rate is left alone.
    Skipped,
    /// The set is idle: this device's rate is INT_MAX.
    MaxRate,
    /// `writeback_lock` was busy: skipped (at most 15 times in a row).
    LockBusy,
    /// The controller ran.
    Updated,
}

/// The cache set around one tick: its state and whether GC is running.
pub struct TickInput<'a> {
    pub set: &'a CacheSetState,
    pub bdev_sectors: u64,
    pub dirty: i64,
    pub has_dirty: bool,
    /// `idle_max_writeback_rate_enabled`.
    pub idle_max_enabled: bool,
    /// `gc_mark_valid`: no GC running.
    pub gc_mark_valid: bool,
    /// `attached_dev_nr`.
    pub attached: i32,
    /// Whether `writeback_lock` is held for write (by the writeback
    /// thread refilling its key buffer).
    pub lock_busy: bool,
}

/// `update_writeback_rate`, the delayed work that runs every
/// `update_seconds`: the idle switch to the maximum rate, else one
/// controller step (skipped while the writeback thread holds its lock, up
/// to [`WBRATE_UPDATE_MAX_SKIPS`] times; then it waits for it).
pub fn update_writeback_rate(
    st: &mut RateState,
    idle: &mut IdleState,
    conf: &RateConf,
    t: &TickInput,
    now: Ns,
) -> Tick {
    if !t.has_dirty || conf.writeback_percent == 0 {
        return Tick::Skipped;
    }
    // set_at_max_writeback_rate
    if t.idle_max_enabled && t.gc_mark_valid && idle.exceeded(t.attached) {
        idle.at_max = true;
        st.limiter.rate = i64::from(i32::MAX);
        st.proportional = 0;
        st.integral_scaled = 0;
        st.change = 0;
        // a bio between the two checks would have cleared it
        if idle.exceeded(t.attached) && idle.at_max {
            return Tick::MaxRate;
        }
    }
    if t.lock_busy {
        st.update_retry += 1;
        if st.update_retry <= WBRATE_UPDATE_MAX_SKIPS {
            return Tick::LockBusy;
        }
        st.update_retry = 0;
    }
    update_rate(st, conf, t.set, t.bdev_sectors, t.dirty, now);
    Tick::Updated
}

/// sysfs `writeback_rate_debug` as the kernel prints it. `running` is
/// `writeback_running`: when off, all but dirty and target print as 0.
pub fn rate_debug(st: &RateState, dirty: i64, running: bool, now: Ns) -> String {
    let on = |v: i64| if running { v } else { 0 };
    let next_io = if running {
        (st.limiter.next as i64 - now as i64) / NSEC_PER_MSEC as i64
    } else {
        0
    };
    format!(
        "rate:\t\t{}/sec\ndirty:\t\t{}\ntarget:\t\t{}\nproportional:\t{}\nintegral:\t{}\nchange:\t\t{}/sec\nnext io:\t{}ms\n",
        hprint(on(st.limiter.rate) << 9),
        hprint(dirty << 9),
        hprint(st.target << 9),
        hprint(on(st.proportional) << 9),
        hprint(on(st.integral_scaled) << 9),
        hprint(on(st.change) << 9),
        next_io
    )
}

// ---------------------------------------------------------------------------
// The writeback thread (`bch_writeback_thread`, `refill_dirty`,
// `read_dirty`, `write_dirty`, `write_dirty_finish`) and the delayed work
// that runs the controller, as events of the device.

/// `Ev::Bcache` kinds: the rate update's delayed work, and the writeback
/// thread's timer.
pub const EV_RATE_UPDATE: u8 = 0;
pub const EV_WB_WAKE: u8 = 1;
/// `KEYBUF_NR`: keys a refill takes.
pub const KEYBUF_NR: usize = 500;
/// `MAX_WRITEBACKS_IN_PASS`, `MAX_WRITESIZE_IN_PASS`.
pub const MAX_WRITEBACKS_IN_PASS: usize = 5;
pub const MAX_WRITESIZE_IN_PASS: u64 = 5000;
/// `dc->in_flight`'s semaphore: keys in flight.
pub const WB_IN_FLIGHT: u32 = 64;

/// Where the writeback thread is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WbPhase {
    /// Asleep until `bch_writeback_add` wakes it (nothing dirty).
    #[default]
    Idle,
    /// In `read_dirty`, issuing keys (or blocked on the in-flight
    /// semaphore when 64 are out).
    Issue,
    /// Sleeping on the rate limiter between batches.
    RateSleep,
    /// `closure_sync`: waiting for the last keys of the buffer.
    Drain,
    /// The `writeback_delay` sleep after a pass over the whole index.
    FullDelay,
}

/// A key in the writeback buffer (`struct keybuf_key`) and its IO.
#[derive(Clone, Copy, Debug)]
pub struct WbKey {
    pub start: u64,
    pub len: u64,
    pub cofs: u64,
    pub gen: u8,
    /// Its place in this `read_dirty` call's write order.
    pub seq: u64,
    pub issued: bool,
    pub done: bool,
    pub read_done: bool,
}

/// The writeback thread's state (`dc->writeback_keys` and the thread).
#[derive(Clone, Debug, Default)]
pub struct WbThread {
    pub phase: WbPhase,
    /// Timer generation: a wake whose gen moved on is stale.
    pub gen: u32,
    /// The key buffer in ascending order.
    pub keys: Vec<WbKey>,
    /// The next key `bch_keybuf_next` gives.
    pub next: usize,
    /// The batch being issued and how far.
    pub batch: Vec<u32>,
    pub batch_pos: usize,
    pub batch_size: u64,
    pub in_flight: u32,
    /// `writeback_sequence_next`, and the seq counter.
    pub seq_next: u64,
    pub seq: u64,
    /// `last_scanned`.
    pub last_scanned: u64,
    /// This pass searched the whole index.
    pub searched_full: bool,
    /// Keys whose backing write may go once their turn comes, by seq.
    pub ready: std::collections::BTreeMap<u64, u32>,
}

impl WbThread {
    /// `bch_keybuf_check_overlapping`: a key being written back overlaps
    /// `[s, e)`.
    pub fn overlaps(&self, s: u64, e: u64) -> bool {
        // the keys are sorted and disjoint: walk back from the last one
        // starting before `e` while they end after `s`
        let i = self.keys.partition_point(|k| k.start < e);
        self.keys[..i]
            .iter()
            .rev()
            .take_while(|k| k.start + k.len > s)
            .any(|k| !k.done)
    }

    /// The cache sectors of the buffer's keys (GC keeps their buckets dirty).
    pub fn key_cofs(&self) -> Vec<u64> {
        self.keys
            .iter()
            .filter(|k| !k.done)
            .map(|k| k.cofs)
            .collect()
    }
}

impl Kernel {
    /// `bch_writeback_add`: dirty data arrived; the first makes the
    /// backing superblock dirty and wakes the thread.
    pub fn bcache_writeback_add(&mut self, dev: DevId) {
        let b = self.bcache(dev);
        if !b.has_dirty {
            b.has_dirty = true;
            b.sb_dirty = true;
            if b.wb.phase == WbPhase::Idle {
                self.bcache_wb_run(dev);
            }
        }
    }

    /// An `Ev::Bcache` event.
    pub fn bcache_event(&mut self, dev: DevId, what: u8, gen: u32) {
        match what {
            EV_RATE_UPDATE => self.bcache_rate_update(dev),
            _ => {
                let b = self.bcache(dev);
                if b.wb.gen != gen {
                    return;
                }
                match b.wb.phase {
                    WbPhase::RateSleep => {
                        // delay = writeback_delay(dc, 0)
                        let d = self.bcache_writeback_delay(dev, 0);
                        if d > 0 {
                            self.bcache_wb_sleep(dev, d, WbPhase::RateSleep);
                        } else {
                            self.bcache(dev).wb.phase = WbPhase::Issue;
                            self.bcache_wb_run(dev);
                        }
                    }
                    WbPhase::FullDelay => {
                        let now = self.now();
                        let b = self.bcache(dev);
                        b.rate.limiter.reset(now);
                        b.wb.phase = WbPhase::Idle;
                        self.bcache_wb_run(dev);
                    }
                    _ => {}
                }
            }
        }
    }

    /// `update_writeback_rate`, every `writeback_rate_update_seconds`.
    fn bcache_rate_update(&mut self, dev: DevId) {
        let now = self.now();
        let b = self.bcache(dev);
        let set = CacheSetState {
            nbuckets: b.set.nbuckets,
            avail_nbuckets: b.set.avail_nbuckets,
            bucket_size: b.set.bucket_size,
            in_use: b.set.in_use,
            flash_dev_dirty_sectors: 0,
            cached_dev_sectors: b.bdev_sectors,
        };
        if b.conf.writeback_running {
            let t = TickInput {
                set: &set,
                bdev_sectors: b.bdev_sectors,
                dirty: b.set.dirty_sectors as i64,
                has_dirty: b.has_dirty,
                idle_max_enabled: b.conf.idle_max_writeback_rate,
                gc_mark_valid: true,
                attached: 1,
                lock_busy: false,
            };
            update_writeback_rate(&mut b.rate, &mut b.idle, &b.conf.rate, &t, now);
        }
        let delay = b.conf.rate.update_seconds * self.hz();
        let next = self.bcache_delayed_work_time(delay);
        self.q.schedule(
            next,
            crate::kernel::Ev::Bcache {
                dev: dev as u32,
                what: EV_RATE_UPDATE,
                gen: 0,
            },
        );
    }

    /// `writeback_delay`: jiffies to sleep after `sectors` were issued (0
    /// with `writeback_percent` 0: no limit).
    fn bcache_writeback_delay(&mut self, dev: DevId, sectors: u64) -> u64 {
        let now = self.now();
        let hz = self.hz();
        let b = self.bcache(dev);
        if b.conf.rate.writeback_percent == 0 {
            return 0;
        }
        b.rate.limiter.next_delay(sectors, now, hz)
    }

    /// When a timer armed now for `delay` jiffies on bcache's behalf
    /// (`schedule_timeout`, `schedule_delayed_work`) fires: the timer wheel
    /// rounds the expiry up (a level-0 timer fires at the tick after its
    /// jiffy; 5 s at HZ=250 is 1250 jiffies, a level-2 timer of 64-jiffy
    /// buckets, so the rate update comes every 5.12 s). The rate update's
    /// work runs at its tick; the writeback thread, woken by its timer at
    /// the same tick, runs after it (its wakeup lateness, below).
    pub(crate) fn bcache_delayed_work_time(&mut self, delay: u64) -> Ns {
        let expires = self.jiffies() + delay;
        self.timer_fire_time(expires).max(self.now())
    }

    /// `schedule_timeout_interruptible(jiffies)` of the thread: it sleeps
    /// until the timer wheel's tick for `jiffies` from now, which is up to
    /// a jiffy past its due time. So a thread paced by `bch_next_delay`
    /// wakes after its limiter's `next` about half the time, and the rate
    /// update finds it behind (`__update_writeback_rate` integrates only
    /// while `local_clock()` is before `next` + 1 ms).
    fn bcache_wb_sleep(&mut self, dev: DevId, jiffies: u64, phase: WbPhase) {
        let t = self.bcache_delayed_work_time(jiffies) + self.wakeup_lateness();
        let b = self.bcache(dev);
        b.wb.phase = phase;
        b.wb.gen = b.wb.gen.wrapping_add(1);
        let gen = b.wb.gen;
        self.q.schedule(
            t,
            crate::kernel::Ev::Bcache {
                dev: dev as u32,
                what: EV_WB_WAKE,
                gen,
            },
        );
    }

    /// `refill_dirty`: fill the key buffer with dirty keys from
    /// `last_scanned` on, wrapping once to where it started. Returns
    /// whether the whole index was searched.
    fn bcache_refill_dirty(&mut self, dev: DevId) -> bool {
        let b = self.bcache(dev);
        let end = b.bdev_sectors;
        let mut found = Vec::new();
        if b.wb.last_scanned > end {
            b.wb.last_scanned = 0;
        }
        let start = b.wb.last_scanned;
        let last = b
            .set
            .scan_dirty(start, end, KEYBUF_NR, |_| false, &mut found);
        let full = if last < end {
            b.wb.last_scanned = last;
            false
        } else {
            let last = b
                .set
                .scan_dirty(0, start, KEYBUF_NR - found.len(), |_| false, &mut found);
            b.wb.last_scanned = last;
            last >= start
        };
        found.sort_by_key(|x| x.0);
        b.wb.keys = found
            .into_iter()
            .map(|(s, k)| WbKey {
                start: s,
                len: k.len as u64,
                cofs: k.cofs,
                gen: k.gen,
                seq: 0,
                issued: false,
                done: false,
                read_done: false,
            })
            .collect();
        b.wb.next = 0;
        b.wb.seq = 0;
        b.wb.seq_next = 0;
        b.wb.ready.clear();
        full
    }

    /// The thread's loop, from wherever it stands until it sleeps.
    pub(crate) fn bcache_wb_run(&mut self, dev: DevId) {
        loop {
            let b = self.bcache(dev);
            match b.wb.phase {
                WbPhase::Idle => {
                    if !b.has_dirty || !b.conf.writeback_running {
                        return;
                    }
                    let full = self.bcache_refill_dirty(dev);
                    let b = self.bcache(dev);
                    if full && b.wb.keys.is_empty() {
                        b.has_dirty = false;
                        b.sb_dirty = false;
                    }
                    b.wb.searched_full = full;
                    b.wb.phase = WbPhase::Issue;
                    b.wb.batch.clear();
                    b.wb.batch_pos = 0;
                }
                WbPhase::Issue => {
                    if b.wb.batch_pos < b.wb.batch.len() {
                        // down(&dc->in_flight)
                        if b.wb.in_flight >= WB_IN_FLIGHT {
                            return;
                        }
                        let k = b.wb.batch[b.wb.batch_pos];
                        b.wb.batch_pos += 1;
                        self.bcache_wb_issue_read(dev, k);
                        continue;
                    }
                    if !b.wb.batch.is_empty() {
                        // the batch is out: the limiter's sleep
                        let size = b.wb.batch_size;
                        b.wb.batch.clear();
                        b.wb.batch_pos = 0;
                        let d = self.bcache_writeback_delay(dev, size);
                        if d > 0 {
                            self.bcache_wb_sleep(dev, d, WbPhase::RateSleep);
                            return;
                        }
                        continue;
                    }
                    // the next batch: up to 5 contiguous keys, 5000 sectors
                    let w = &mut b.wb;
                    let mut size = 0;
                    while w.next < w.keys.len() {
                        let n = w.batch.len();
                        if n >= MAX_WRITEBACKS_IN_PASS || size >= MAX_WRITESIZE_IN_PASS {
                            break;
                        }
                        let k = w.keys[w.next];
                        if n > 0 {
                            let p = w.keys[w.batch[n - 1] as usize];
                            if p.start + p.len != k.start {
                                break;
                            }
                        }
                        size += k.len;
                        w.batch.push(w.next as u32);
                        w.next += 1;
                    }
                    w.batch_size = size;
                    if w.batch.is_empty() {
                        w.phase = WbPhase::Drain;
                    }
                }
                WbPhase::Drain => {
                    if b.wb.in_flight > 0 {
                        return;
                    }
                    if b.wb.searched_full {
                        let d = b.conf.writeback_delay * self.hz();
                        if d > 0 {
                            self.bcache_wb_sleep(dev, d, WbPhase::FullDelay);
                            return;
                        }
                        let now = self.now();
                        self.bcache(dev).rate.limiter.reset(now);
                    }
                    self.bcache(dev).wb.phase = WbPhase::Idle;
                }
                WbPhase::RateSleep | WbPhase::FullDelay => return,
            }
        }
    }

    /// `read_dirty`'s per-key IO: read the key from the cache.
    fn bcache_wb_issue_read(&mut self, dev: DevId, k: u32) {
        let b = self.bcache(dev);
        let (cache, worker) = (b.cache, b.worker);
        let seq = b.wb.seq;
        b.wb.seq += 1;
        b.wb.in_flight += 1;
        let key = &mut b.wb.keys[k as usize];
        key.seq = seq;
        key.issued = true;
        let (s, len, cofs) = (key.start, key.len, key.cofs);
        if self.tracer.on.bcache_writeback {
            self.trace_line(
                worker,
                "bcache_writeback",
                format_args!("0:{} len {len} dirty 1", s + len),
            );
        }
        let _ = self.bcache_issue(
            dev,
            cache,
            worker,
            cofs,
            len,
            REQ_READ,
            Op::WbRead { key: k },
        );
    }

    /// `read_dirty_endio` → `write_dirty`: the backing writes go in key
    /// order (`writeback_sequence_next`).
    pub(crate) fn bcache_wb_read_done(&mut self, dev: DevId, k: u32) {
        let b = self.bcache(dev);
        let key = &mut b.wb.keys[k as usize];
        key.read_done = true;
        let seq = key.seq;
        b.wb.ready.insert(seq, k);
        loop {
            let b = self.bcache(dev);
            let next = b.wb.seq_next;
            let Some(k) = b.wb.ready.remove(&next) else {
                return;
            };
            b.wb.seq_next += 1;
            let (backing, worker) = (b.backing, b.worker);
            let key = b.wb.keys[k as usize];
            let _ = self.bcache_issue(
                dev,
                backing,
                worker,
                key.start + super::BDEV_DATA_START,
                key.len,
                0,
                Op::WbWrite { key: k },
            );
        }
    }

    /// `write_dirty_finish`: the key is clean where the index still holds
    /// its data (else a writeback collision); up(in_flight).
    pub(crate) fn bcache_wb_write_done(&mut self, dev: DevId, k: u32) {
        let b = self.bcache(dev);
        let key = b.wb.keys[k as usize];
        let cleaned = b.set.writeback_done(key.start, key.len, key.cofs, key.gen);
        if cleaned == 0 {
            b.keys_failed += 1;
        } else {
            b.keys_done += 1;
        }
        b.wb.keys[k as usize].done = true;
        b.wb.in_flight -= 1;
        // dirty writes waiting for a bucket: the allocator keeps asking GC
        // (invalidate_needs_gc) until writeback has cleaned a bucket
        if !b.alloc_wait.is_empty() && b.set.needs_gc && b.keys_done.is_multiple_of(64) {
            self.bcache_gc(dev);
        }
        let b = self.bcache(dev);
        match b.wb.phase {
            WbPhase::Issue | WbPhase::Drain => self.bcache_wb_run(dev),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// A 1 GiB cache of 512 KiB buckets (2048 buckets of 1024 sectors)
    /// over one 8 GiB backing device.
    fn set(in_use: i64, avail: u64) -> CacheSetState {
        CacheSetState {
            nbuckets: 2048,
            avail_nbuckets: avail,
            bucket_size: 1024,
            in_use,
            flash_dev_dirty_sectors: 0,
            cached_dev_sectors: 16 << 20,
        }
    }

    #[test]
    fn the_target_is_the_percent_of_the_cache_times_the_share() {
        let conf = RateConf::default();
        // one device: share 16384/16384; 10% of 2097152 sectors
        assert_eq!(calc_target_rate(&conf, &set(0, 2048), 16 << 20), 209_715);
        // a device of a third of the backing sectors: share 5461
        let c = CacheSetState {
            cached_dev_sectors: 3 << 20,
            ..set(0, 2048)
        };
        // 209715 * 5461 = 1145253615, >> 14 = 69900 (truncated)
        assert_eq!(calc_target_rate(&conf, &c, 1 << 20), 69_900);
        // a tiny device still gets 1/16384
        assert_eq!(calc_target_rate(&conf, &c, 1), 209_715 >> 14);
    }

    #[test]
    fn proportional_retires_the_excess_in_p_term_inverse_seconds() {
        let conf = RateConf::default();
        let mut st = RateState::new(0);
        // dirty 409715 = target + 200000: P = 200000/40 = 5000; the limiter
        // is keeping up (next is in the future), so the integral takes
        // 200000 * 5 = 1e6 and I = 100
        st.limiter.next = 10 * S;
        update_rate(&mut st, &conf, &set(20, 1600), 16 << 20, 409_715, 9 * S);
        assert_eq!(st.target, 209_715);
        assert_eq!(st.proportional, 5000);
        assert_eq!(st.integral, 1_000_000);
        assert_eq!(st.integral_scaled, 100);
        assert_eq!(st.limiter.rate, 5100);
        assert_eq!(st.change, 5100 - 1024);
    }

    #[test]
    fn the_integral_winds_up_only_while_the_limiter_holds_writeback_back() {
        let conf = RateConf::default();
        let mut st = RateState::new(0);
        st.limiter.next = 10 * S;
        // next slot 1 ms or more in the past: the thread is behind
        update_rate(
            &mut st,
            &conf,
            &set(20, 1600),
            16 << 20,
            409_715,
            10 * S + 1_000_000,
        );
        assert_eq!(st.integral, 0);
        // just under 1 ms past still counts as keeping up
        update_rate(
            &mut st,
            &conf,
            &set(20, 1600),
            16 << 20,
            409_715,
            10 * S + 999_999,
        );
        assert_eq!(st.integral, 1_000_000);
        // below target: a positive integral shrinks by error * 5, and may
        // overshoot below zero in that step...
        update_rate(
            &mut st,
            &conf,
            &set(20, 1600),
            16 << 20,
            209_715 - 300_000,
            100 * S,
        );
        assert_eq!(st.integral, 1_000_000 - 300_000 * 5);
        // ...but once it is not positive it stays
        update_rate(
            &mut st,
            &conf,
            &set(20, 1600),
            16 << 20,
            209_715 - 300_000,
            100 * S,
        );
        assert_eq!(st.integral, -500_000);
        // P = -300000/40 = -7500, I = -50: the rate is the minimum, 8
        assert_eq!(st.proportional, -7500);
        assert_eq!(st.integral_scaled, -50);
        assert_eq!(st.limiter.rate, 8);
    }

    /// The writeback thread sleeps on the timer wheel: at HZ=250 a sleep
    /// of d jiffies armed in jiffy J ends at the tick of J + d + 1, up to a
    /// jiffy after its limiter's `next`, and an update at that tick finds
    /// it behind. Worked by hand with 4 ms jiffies (jiffy j starts at j·4
    /// ms), a rate of 2048 sectors/s and 8-sector keys (3.90625 ms each).
    #[test]
    fn a_thread_woken_by_the_wheel_is_behind_at_some_updates() {
        use crate::kernel::time::wheel_bucket_expiry;
        const J: u64 = 4_000_000;
        let mut r = Ratelimit::new(2048, 100_500_000);
        // at 100.5 ms (jiffy 25) a key: 3.9 ms ahead, under a jiffy, no
        // sleep; a second: 7.8 ms ahead, a sleep of 1 jiffy
        assert_eq!(r.next_delay(8, 100_500_000, 250), 0);
        assert_eq!(r.next_delay(8, 100_500_000, 250), 1);
        assert_eq!(r.next, 108_312_500);
        // armed in jiffy 25 for 26, it fires at the tick of 27 (108 ms),
        // 0.3 ms early: no sleep, a key, 4.2 ms ahead: 1 jiffy again
        assert_eq!(wheel_bucket_expiry(26, 25) * J, 108_000_000);
        assert_eq!(r.next_delay(0, 108_000_000, 250), 0);
        assert_eq!(r.next_delay(8, 108_000_000, 250), 1);
        assert_eq!(r.next, 112_218_750);
        // armed in jiffy 27 for 28: the tick of 29, 116 ms, 3.8 ms late
        assert_eq!(wheel_bucket_expiry(28, 27) * J, 116_000_000);
        // dirty 409715 against the target 209715 (error 200000): an update
        // at the tick of 28 (112 ms, before next + 1 ms = 113.22 ms) adds
        // error · 5 to the integral; one at 116 ms, before the thread has
        // run, adds nothing
        let conf = RateConf::default();
        let mut st = RateState::new(0);
        st.limiter = r;
        update_rate(
            &mut st,
            &conf,
            &set(20, 1600),
            16 << 20,
            409_715,
            112_000_000,
        );
        assert_eq!(st.integral, 1_000_000);
        update_rate(
            &mut st,
            &conf,
            &set(20, 1600),
            16 << 20,
            409_715,
            116_000_000,
        );
        assert_eq!(st.integral, 1_000_000);
        assert_eq!(st.limiter.rate, 5000 + 100);
    }

    #[test]
    fn divisions_truncate_toward_zero() {
        let conf = RateConf::default();
        let mut st = RateState::new(0);
        st.integral = 10_000 * 3 + 1;
        // error -39: P = 0 (not -1); the integral goes down by 195
        update_rate(&mut st, &conf, &set(0, 2048), 16 << 20, 209_715 - 39, 0);
        assert_eq!(st.proportional, 0);
        assert_eq!(st.integral, 30_001 - 195);
        assert_eq!(st.integral_scaled, 2);
        assert_eq!(st.limiter.rate, 8);
    }

    /// The fragmentation term, worked by hand at each threshold. 1000
    /// buckets in use (avail 1048) of 1024 sectors hold 100000 dirty
    /// sectors: fragment = 1024000/100000 = 10 (> 3), and 100 dirty
    /// sectors a dirty bucket. dirty is below target: P = -2742.
    #[test]
    fn the_fragmentation_term_at_each_threshold() {
        let dirty = 100_000;
        let p_of = |conf: &RateConf, in_use: i64| {
            let mut st = RateState::new(0);
            update_rate(&mut st, conf, &set(in_use, 1048), 16 << 20, dirty, 0);
            st.proportional
        };
        let merged = RateConf::default();
        // at or below 50%: no term
        assert_eq!(p_of(&merged, 50), (dirty - 209_715) / 40);
        // low band (50, 57]: 1 * (in_use - 50) * 100
        assert_eq!(p_of(&merged, 51), 100);
        assert_eq!(p_of(&merged, 57), 700);
        // mid band (57, 64]: 10 * (in_use - 57) * 100
        assert_eq!(p_of(&merged, 58), 1000);
        assert_eq!(p_of(&merged, 64), 7000);
        // high band: 1000 * (in_use - 64) * 100
        assert_eq!(p_of(&merged, 65), 100_000);
        assert_eq!(p_of(&merged, 70), 600_000);
        // the posting's 1/5/50
        let posting = RateConf {
            fp_term_mid: 5,
            fp_term_high: 50,
            ..RateConf::default()
        };
        assert_eq!(p_of(&posting, 64), 3500);
        assert_eq!(p_of(&posting, 70), 30_000);
        // before 5.12: none
        let old = RateConf {
            consider_fragment: false,
            ..RateConf::default()
        };
        assert_eq!(p_of(&old, 70), (dirty - 209_715) / 40);
    }

    #[test]
    fn the_fragmentation_term_needs_thin_buckets_and_a_larger_value() {
        let conf = RateConf::default();
        // 1000 buckets hold 400000 dirty sectors: fragment = 2, no term
        let mut st = RateState::new(0);
        update_rate(&mut st, &conf, &set(70, 1048), 16 << 20, 400_000, 0);
        assert_eq!(st.proportional, (400_000 - 209_715) / 40);
        // fragment 4 (256000 sectors): the term 1000*6*256 beats P
        update_rate(&mut st, &conf, &set(70, 1048), 16 << 20, 256_000, 0);
        assert_eq!(st.proportional, 1_536_000);
        // the limiter was keeping up (next = 0 = now) both times, so the
        // integral took (190285 + 46285) * 5: I = 118
        assert_eq!(st.integral, (190_285 + 46_285) * 5);
        assert_eq!(st.limiter.rate, 1_536_000 + 118);
    }

    #[test]
    fn the_sum_is_cut_to_32_bits_before_the_clamp() {
        let conf = RateConf::default();
        let mut st = RateState::new(0);
        // I alone = 2^32 + 5000: as an int32 that is 5000
        st.integral = ((1i64 << 32) + 5000) * 10_000;
        update_rate(&mut st, &conf, &set(0, 2048), 16 << 20, 209_715, 0);
        assert_eq!(st.integral_scaled, (1i64 << 32) + 5000);
        assert_eq!(st.limiter.rate, 5000);
        // and 3e9 wraps negative: the minimum
        st.integral = 3_000_000_000 * 10_000;
        update_rate(&mut st, &conf, &set(0, 2048), 16 << 20, 209_715, 0);
        assert_eq!(st.limiter.rate, 8);
    }

    fn tick<'a>(c: &'a CacheSetState) -> TickInput<'a> {
        TickInput {
            set: c,
            bdev_sectors: 16 << 20,
            dirty: 300_000,
            has_dirty: true,
            idle_max_enabled: true,
            gc_mark_valid: true,
            attached: 1,
            lock_busy: false,
        }
    }

    #[test]
    fn an_idle_set_goes_to_the_maximum_rate_on_the_sixth_tick() {
        let conf = RateConf::default();
        let c = set(20, 1600);
        let mut st = RateState::new(0);
        let mut idle = IdleState::default();
        let t = tick(&c);
        // one device: 6 ticks without a bio; the second check inside the
        // sixth tick counts too, so the fifth is the last controller step
        for k in 0..5 {
            let r = update_writeback_rate(&mut st, &mut idle, &conf, &t, k * 5 * S);
            assert_eq!(r, Tick::Updated, "tick {k}");
        }
        assert_eq!(
            update_writeback_rate(&mut st, &mut idle, &conf, &t, 25 * S),
            Tick::MaxRate
        );
        assert_eq!(st.limiter.rate, i64::from(i32::MAX));
        assert_eq!((st.proportional, st.integral_scaled, st.change), (0, 0, 0));
        // a bio drops it; the next tick runs the controller again
        assert!(idle.on_bio());
        assert_eq!(
            update_writeback_rate(&mut st, &mut idle, &conf, &t, 30 * S),
            Tick::Updated
        );
        // two devices: 24 ticks of the set
        let mut idle = IdleState::default();
        let t2 = TickInput {
            attached: 2,
            ..tick(&c)
        };
        let n = (0..30)
            .take_while(|_| {
                update_writeback_rate(&mut st, &mut idle, &conf, &t2, 0) == Tick::Updated
            })
            .count();
        assert_eq!(n, 23);
    }

    #[test]
    fn no_maximum_rate_while_gc_runs_and_busy_locks_skip_fifteen_times() {
        let conf = RateConf::default();
        let c = set(20, 1600);
        let mut st = RateState::new(0);
        let mut idle = IdleState::default();
        let t = TickInput {
            gc_mark_valid: false,
            ..tick(&c)
        };
        for _ in 0..10 {
            assert_eq!(
                update_writeback_rate(&mut st, &mut idle, &conf, &t, 0),
                Tick::Updated
            );
        }
        let busy = TickInput {
            lock_busy: true,
            idle_max_enabled: false,
            ..tick(&c)
        };
        for _ in 0..15 {
            assert_eq!(
                update_writeback_rate(&mut st, &mut idle, &conf, &busy, 0),
                Tick::LockBusy
            );
        }
        assert_eq!(
            update_writeback_rate(&mut st, &mut idle, &conf, &busy, 0),
            Tick::Updated
        );
        assert_eq!(st.update_retry, 0);
        // nothing dirty: left alone
        let clean = TickInput {
            has_dirty: false,
            ..tick(&c)
        };
        assert_eq!(
            update_writeback_rate(&mut st, &mut idle, &conf, &clean, 0),
            Tick::Skipped
        );
    }

    #[test]
    fn writeback_rate_debug_prints_as_sysfs() {
        let conf = RateConf::default();
        let mut st = RateState::new(0);
        st.limiter.next = 10 * S;
        update_rate(&mut st, &conf, &set(20, 1600), 16 << 20, 409_715, 9 * S);
        let text = rate_debug(&st, 409_715, true, 9 * S + 500_000_000);
        assert_eq!(
            text,
            "rate:\t\t2.4M/sec\ndirty:\t\t200.0M\ntarget:\t\t102.3M\nproportional:\t2.4M\n\
             integral:\t50.0k\nchange:\t\t1.9M/sec\nnext io:\t500ms\n"
        );
        let off = rate_debug(&st, 409_715, false, 0);
        assert!(
            off.starts_with("rate:\t\t0.0k/sec\ndirty:\t\t200.0M\n"),
            "{off}"
        );
        assert!(off.ends_with("next io:\t0ms\n"), "{off}");
    }
}
