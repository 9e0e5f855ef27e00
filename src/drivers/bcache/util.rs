//! bcache's rate limiter and its human-readable numbers
//! (drivers/md/bcache/util.c: `bch_next_delay`, `bch_ratelimit_reset`,
//! `bch_hprint`).

use crate::sim::Ns;

const NSEC_PER_SEC: u64 = 1_000_000_000;

/// `struct bch_ratelimit`: the time the next unit of work is due, and the
/// rate in units a second (the writeback thread's units are sectors).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratelimit {
    /// When the next work is due (ns, the clock `local_clock()` reads).
    pub next: Ns,
    /// Units a second (`atomic_long_t rate`).
    pub rate: i64,
}

impl Ratelimit {
    /// A limiter at `rate` whose next work is due now.
    pub fn new(rate: i64, now: Ns) -> Ratelimit {
        Ratelimit { next: now, rate }
    }

    /// `bch_ratelimit_reset`: the next work is due now.
    pub fn reset(&mut self, now: Ns) {
        self.next = now;
    }

    /// `bch_next_delay`: account `done` units of work at `now` and return
    /// the sleep before the next, in jiffies of `1/hz` s (rounded down).
    /// The due time moves on by `done / rate` seconds but is kept within
    /// [now - 2 s, now + 2.5 s]: the worker never sleeps more than 2.5 s (so a
    /// new rate takes effect soon) and never banks more than 2 s of work
    /// (so it cannot burst after falling behind).
    pub fn next_delay(&mut self, done: u64, now: Ns, hz: u64) -> u64 {
        // div_u64 takes a 32-bit divisor; a rate is at most INT_MAX
        let rate = (self.rate as u64 & 0xffff_ffff).max(1);
        self.next = self.next.wrapping_add(done * NSEC_PER_SEC / rate);
        let ahead = now + NSEC_PER_SEC * 5 / 2;
        if self.next > ahead {
            self.next = ahead;
        }
        let behind = now.saturating_sub(2 * NSEC_PER_SEC);
        if self.next < behind {
            self.next = behind;
        }
        if self.next > now {
            (self.next - now) / (NSEC_PER_SEC / hz)
        } else {
            0
        }
    }
}

/// `bch_hprint`: `v` in 1024-based units with one digit after the point
/// (the digit truncated, not rounded), at least once divided: 512 prints as
/// "0.5k", 1 << 20 as "1.0M", -3 << 30 as "-3.0G".
pub fn hprint(v: i64) -> String {
    const UNITS: &[u8] = b"?kMGTPEZY";
    let mut q = v.unsigned_abs();
    let mut u = 0;
    let mut t;
    loop {
        u += 1;
        t = q & 1023;
        q >>= 10;
        if q < 1000 {
            break;
        }
    }
    let sign = if v < 0 { "-" } else { "" };
    format!("{sign}{q}.{}{}", t * 10 / 1024, UNITS[u] as char)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ: u64 = 250;

    #[test]
    fn the_due_time_moves_by_the_work_over_the_rate() {
        // 1024 sectors/s: 512 sectors are half a second of work
        let mut r = Ratelimit::new(1024, 10 * NSEC_PER_SEC);
        let d = r.next_delay(512, 10 * NSEC_PER_SEC, HZ);
        assert_eq!(r.next, 10 * NSEC_PER_SEC + NSEC_PER_SEC / 2);
        // 0.5 s at HZ=250 is 125 jiffies
        assert_eq!(d, 125);
        // 0.3 s later, 0.2 s are left: 50 jiffies; a part jiffy rounds down
        assert_eq!(r.next_delay(0, 10_300_000_000, HZ), 50);
        assert_eq!(r.next_delay(0, 10_300_000_001, HZ), 49);
    }

    #[test]
    fn the_sleep_is_at_most_two_and_a_half_seconds() {
        // the minimum rate, 8 sectors/s: 5000 sectors would be 625 s
        let now = 100 * NSEC_PER_SEC;
        let mut r = Ratelimit::new(8, now);
        assert_eq!(r.next_delay(5000, now, HZ), 625);
        assert_eq!(r.next, now + 2_500_000_000);
    }

    #[test]
    fn the_limiter_banks_at_most_two_seconds_of_work() {
        // idle for a minute: the next work is due 2 s back, not 60
        let mut r = Ratelimit::new(1000, 0);
        let now = 60 * NSEC_PER_SEC;
        assert_eq!(r.next_delay(0, now, HZ), 0);
        assert_eq!(r.next, now - 2 * NSEC_PER_SEC);
        // so 2000 sectors at 1000/s go without sleeping, the next one waits
        assert_eq!(r.next_delay(2000, now, HZ), 0);
        assert_eq!(r.next_delay(1000, now, HZ), 250);
    }

    #[test]
    fn reset_makes_the_work_due_now() {
        let mut r = Ratelimit::new(1000, 0);
        r.next_delay(1000, 0, HZ);
        r.reset(5);
        assert_eq!(r.next, 5);
    }

    #[test]
    fn hprint_prints_as_sysfs_does() {
        assert_eq!(hprint(0), "0.0k");
        assert_eq!(hprint(512), "0.5k");
        assert_eq!(hprint(1023), "0.9k");
        assert_eq!(hprint(1 << 20), "1.0M");
        // 999 k stays in k, 1000 k moves on to M
        assert_eq!(hprint(999 << 10), "999.0k");
        assert_eq!(hprint(1000 << 10), "0.9M");
        // 8 sectors/s, the minimum rate, prints as 4.0k
        assert_eq!(hprint(8 << 9), "4.0k");
        assert_eq!(hprint(-(3 << 30)), "-3.0G");
        // 1.5 GiB + a bit: the digit is truncated
        assert_eq!(hprint((3 << 29) + 1000), "1.5G");
        // the idle maximum rate, INT_MAX sectors/s: 1023 is not below 1000,
        // so it divides once more
        assert_eq!(hprint(i64::from(i32::MAX) << 9), "0.9T");
    }
}
