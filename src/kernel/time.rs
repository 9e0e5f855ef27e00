//! Timers on the timer wheel (kernel/time/timer.c). A timer never fires
//! early: `calc_index` rounds the expiry up to the next bucket of its wheel
//! level, so a level-0 timer armed for jiffy J fires at the tick of J + 1,
//! and longer timeouts round up to 8, 64, … jiffies. `schedule_timeout(p)`
//! therefore sleeps p to p + 1 jiffies; on the host rig a 200 ms pause in
//! balance_dirty_pages is a 204 ms cycle (interval p50 204.4 ms, HZ=250).

use super::Kernel;
use crate::sim::Ns;

const LVL_CLK_SHIFT: u64 = 3;
const LVL_BITS: u64 = 6;
const LVL_SIZE: u64 = 1 << LVL_BITS;
const LVL_DEPTH: u64 = 9; // HZ > 100

fn lvl_start(n: u64) -> u64 {
    (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT)
}

/// `calc_wheel_index`'s bucket expiry: the jiffy at which a timer for
/// `expires`, armed when the wheel clock is `clk`, actually fires.
pub fn wheel_bucket_expiry(expires: u64, clk: u64) -> u64 {
    if expires <= clk {
        return clk;
    }
    let delta = expires - clk;
    if delta < LVL_SIZE - 1 {
        return expires + 1; // level 0, the common case
    }
    let cutoff = lvl_start(LVL_DEPTH);
    let (lvl, expires) = if delta >= cutoff {
        let max = cutoff - (1 << ((LVL_DEPTH - 1) * LVL_CLK_SHIFT));
        (LVL_DEPTH - 1, clk + max)
    } else {
        let mut lvl = 0;
        while lvl + 1 < LVL_DEPTH && delta >= lvl_start(lvl + 1) {
            lvl += 1;
        }
        (lvl, expires)
    };
    let shift = lvl * LVL_CLK_SHIFT;
    ((expires >> shift) + 1) << shift
}

impl Kernel {
    /// When a timer-wheel timer armed now for jiffy `expires` fires.
    #[inline]
    pub fn timer_fire_time(&self, expires: u64) -> Ns {
        let clk = self.jiffies();
        self.jif.start_of(wheel_bucket_expiry(expires, clk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_rounds_up() {
        // level 0 (delta < 63): one jiffy late
        assert_eq!(wheel_bucket_expiry(1050, 1000), 1051);
        assert_eq!(wheel_bucket_expiry(1001, 1000), 1002);
        // level 1 (63 <= delta < 504): next multiple of 8 above expires
        assert_eq!(wheel_bucket_expiry(1000 + 100, 1000), 1104);
        // 5 s at HZ=250 (1250 jiffies): level 2, 64-jiffy buckets:
        // ((2250 >> 6) + 1) << 6 = 36 * 64 = 2304
        assert_eq!(wheel_bucket_expiry(1000 + 1250, 1000), 2304);
        assert_eq!(wheel_bucket_expiry(5, 10), 10);
    }
}
