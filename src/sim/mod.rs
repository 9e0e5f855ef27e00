//! The discrete-event engine: integer time, a jiffy clock, an ordered event
//! queue and a seeded PRNG. Everything else in wbsim is kernel model; this is
//! the only "simulator" machinery, kept small on purpose (in the spirit of
//! SimPy's core: a clock, a heap of (time, seq, event), and a run loop).

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Simulated time in nanoseconds since boot.
pub type Ns = u64;

pub const NSEC_PER_USEC: Ns = 1_000;
pub const NSEC_PER_MSEC: Ns = 1_000_000;
pub const NSEC_PER_SEC: Ns = 1_000_000_000;

/// The kernel's tick clock. `jiffies` is derived from nanosecond time, so the
/// two can never disagree: jiffy `base + j` starts at `ceil(j * 1e9 / HZ)` ns.
/// As in the kernel, `jiffies` does not start at 0 but at `INITIAL_JIFFIES`
/// (`base`), so no code can mistake an early timestamp for "never".
#[derive(Clone, Copy, Debug)]
pub struct Jiffies {
    pub hz: u64,
    pub base: u64,
}

/// `INITIAL_JIFFIES` on 64-bit: `(unsigned long)(unsigned int)(-300 * HZ)`.
pub fn initial_jiffies(hz: u64) -> u64 {
    (1u64 << 32) - 300 * hz
}

impl Jiffies {
    pub fn new(hz: u64) -> Jiffies {
        Jiffies {
            hz,
            base: initial_jiffies(hz),
        }
    }
    /// The value of the `jiffies` variable at time `t`.
    pub fn at(&self, t: Ns) -> u64 {
        if NSEC_PER_SEC.is_multiple_of(self.hz) {
            self.base + t / (NSEC_PER_SEC / self.hz)
        } else {
            self.base + ((t as u128 * self.hz as u128) / NSEC_PER_SEC as u128) as u64
        }
    }
    /// The time of the tick that starts jiffy `j` (0 for jiffies before boot).
    pub fn start_of(&self, j: u64) -> Ns {
        let num = j.saturating_sub(self.base) as u128 * NSEC_PER_SEC as u128;
        num.div_ceil(self.hz as u128) as Ns
    }
    /// Jiffies to milliseconds the way the writeback tracepoints convert
    /// them: `x * 1000 / HZ` in C `long` arithmetic (truncation toward zero).
    pub fn to_msecs(&self, j: i64) -> i64 {
        j * 1000 / self.hz as i64
    }
}

/// Events ordered by (time, sequence number). Two events at the same time
/// fire in the order they were scheduled, so runs are reproducible.
///
/// The queue is a radix heap: an event's key is `time << 64 | seq`, keys
/// only ever grow (nothing is scheduled in the past), and an event sits in
/// the bucket of the highest bit in which its key differs from the last key
/// popped. Popping empties the lowest non-empty bucket into lower ones, so
/// each event moves a few times at most: O(1) amortized, cache friendly.
pub struct EventQueue<E> {
    buckets: Vec<Vec<(u128, E)>>,
    /// Bit i-1 set: bucket i (1..=128) is non-empty.
    mask: u128,
    last: u128,
    len: usize,
    seq: u64,
    now: Ns,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

fn bucket_of(key: u128, last: u128) -> usize {
    (128 - (key ^ last).leading_zeros()) as usize
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            buckets: (0..=128).map(|_| Vec::new()).collect(),
            mask: 0,
            last: 0,
            len: 0,
            seq: 0,
            now: 0,
            popped: 0,
        }
    }
    pub fn now(&self) -> Ns {
        self.now
    }
    /// Schedule `ev` at absolute time `at`. Scheduling in the past is a bug
    /// in the model; it is clamped to now so time never goes backwards.
    pub fn schedule(&mut self, at: Ns, ev: E) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let at = at.max(self.now);
        self.seq += 1;
        let key = ((at as u128) << 64) | self.seq as u128;
        self.put(key, ev);
        self.len += 1;
    }
    fn put(&mut self, key: u128, ev: E) {
        let b = bucket_of(key, self.last);
        if b > 0 {
            self.mask |= 1 << (b - 1);
        }
        self.buckets[b].push((key, ev));
    }
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        if self.len == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            let i = self.mask.trailing_zeros() as usize + 1;
            self.mask &= !(1 << (i - 1));
            let mut b = std::mem::take(&mut self.buckets[i]);
            self.last = b.iter().map(|(k, _)| *k).min().expect("non-empty bucket");
            for (k, e) in b.drain(..) {
                self.put(k, e);
            }
            // keep the emptied bucket's allocation for reuse
            if self.buckets[i].is_empty() {
                self.buckets[i] = b;
            }
        }
        let (key, ev) = self.buckets[0].pop().expect("bucket 0 holds the minimum");
        let at = (key >> 64) as Ns;
        assert!(at >= self.now, "time went backwards");
        self.now = at;
        self.len -= 1;
        self.popped += 1;
        Some((at, ev))
    }
    /// Number of events processed so far.
    pub fn events_popped(&self) -> u64 {
        self.popped
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The seeded PRNG. ChaCha8 is portable and stable across platforms and
/// crate versions of the 0.3 line, so a seed means the same stream everywhere.
pub struct Prng(ChaCha8Rng);

impl Prng {
    pub fn new(seed: u64) -> Self {
        Prng(ChaCha8Rng::seed_from_u64(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_at_equal_times_and_monotonic() {
        let mut q = EventQueue::new();
        q.schedule(10, 'a');
        q.schedule(5, 'b');
        q.schedule(10, 'c');
        q.schedule(5, 'd');
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(5, 'b'), (5, 'd'), (10, 'a'), (10, 'c')]);
    }

    #[test]
    fn random_schedule_pops_in_order() {
        let mut q = EventQueue::new();
        let mut p = Prng::new(3);
        let mut expect = Vec::new();
        let mut n = 0u32;
        for round in 0..50u64 {
            for _ in 0..200 {
                let at = q.now() + p.below(1 << (round % 40));
                q.schedule(at, n);
                expect.push((at, n));
                n += 1;
            }
            for _ in 0..150 {
                let (t, e) = q.pop().unwrap();
                expect.sort_by_key(|&(a, b)| (a, b));
                let first = expect.remove(0);
                assert_eq!((t, e), first);
            }
        }
        while let Some((t, e)) = q.pop() {
            expect.sort_by_key(|&(a, b)| (a, b));
            assert_eq!((t, e), expect.remove(0));
        }
        assert!(expect.is_empty());
    }

    #[test]
    fn jiffies_round_trip() {
        for hz in [100, 250, 300, 1000] {
            let j = Jiffies { hz, base: 0 };
            for k in 0..2000u64 {
                let t = j.start_of(k);
                assert_eq!(j.at(t), k, "hz={hz} k={k}");
                if t > 0 {
                    assert_eq!(j.at(t - 1), k - 1);
                }
            }
        }
        assert_eq!(Jiffies::new(250).to_msecs(50), 200);
        assert_eq!(Jiffies::new(250).to_msecs(-3), -12);
        let j = Jiffies::new(250);
        assert_eq!(j.at(0), 4_294_892_296);
        assert_eq!(j.start_of(j.at(0) + 50), 200_000_000);
    }

    #[test]
    fn prng_is_seeded() {
        let a: Vec<u64> = {
            let mut p = Prng::new(7);
            (0..4).map(|_| p.next_u64()).collect()
        };
        let b: Vec<u64> = {
            let mut p = Prng::new(7);
            (0..4).map(|_| p.next_u64()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, {
            let mut p = Prng::new(8);
            (0..4).map(|_| p.next_u64()).collect::<Vec<_>>()
        });
    }
}
