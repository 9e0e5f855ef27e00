//! The discrete-event engine: integer time, a jiffy clock, an ordered event
//! queue and a seeded PRNG. Everything else in wbsim is kernel model; this is
//! the only "simulator" machinery, kept small on purpose (in the spirit of
//! SimPy's core: a clock, a heap of (time, seq, event), and a run loop).

pub mod vec1;

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
#[derive(Clone, Debug)]
pub struct Jiffies {
    pub hz: u64,
    pub base: u64,
    /// Nanoseconds per tick when HZ divides a second (0 otherwise).
    tick_ns: u64,
    /// The last jiffy looked up, `(start, end, jiffies)`: the clock is read
    /// many times per tick, and a division per read is slow.
    last: std::cell::Cell<(Ns, Ns, u64)>,
}

/// `INITIAL_JIFFIES` on 64-bit: `(unsigned long)(unsigned int)(-300 * HZ)`.
pub fn initial_jiffies(hz: u64) -> u64 {
    (1u64 << 32) - 300 * hz
}

impl Jiffies {
    pub fn new(hz: u64) -> Jiffies {
        Jiffies::with_base(hz, initial_jiffies(hz))
    }
    pub fn with_base(hz: u64, base: u64) -> Jiffies {
        Jiffies {
            hz,
            base,
            tick_ns: if NSEC_PER_SEC.is_multiple_of(hz) {
                NSEC_PER_SEC / hz
            } else {
                0
            },
            last: Default::default(),
        }
    }
    /// The value of the `jiffies` variable at time `t`.
    #[inline]
    pub fn at(&self, t: Ns) -> u64 {
        self.cached(t).unwrap_or_else(|| self.look_up(t))
    }
    /// `at(t)` without remembering `t`'s jiffy: for a time far from the
    /// clock (a timer's expiry), which would push the current jiffy out.
    #[inline]
    pub fn at_far(&self, t: Ns) -> u64 {
        self.cached(t).unwrap_or_else(|| self.compute(t))
    }
    /// The jiffy of `t` if it is the one last looked up.
    #[inline]
    fn cached(&self, t: Ns) -> Option<u64> {
        let (start, end, j) = self.last.get();
        (start <= t && t < end).then_some(j)
    }
    #[cold]
    fn look_up(&self, t: Ns) -> u64 {
        let j = self.compute(t);
        self.last.set((self.start_of(j), self.start_of(j + 1), j));
        j
    }
    fn compute(&self, t: Ns) -> u64 {
        match t.checked_div(self.tick_ns) {
            Some(ticks) => self.base + ticks,
            None => self.base + ((t as u128 * self.hz as u128) / NSEC_PER_SEC as u128) as u64,
        }
    }
    /// The time of the tick that starts jiffy `j` (0 for jiffies before boot).
    #[inline]
    pub fn start_of(&self, j: u64) -> Ns {
        let k = j.saturating_sub(self.base);
        if self.tick_ns != 0 {
            k * self.tick_ns
        } else {
            (k as u128 * NSEC_PER_SEC as u128).div_ceil(self.hz as u128) as Ns
        }
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
/// A calendar queue: time is cut into buckets of `2^BUCKET_SHIFT` ns, and a
/// ring of `RING` buckets covers the next ~0.5 s. An event goes unsorted
/// into its bucket (or, beyond the ring, into the far queue); when
/// the clock reaches a bucket, the bucket is sorted once by (time, seq)
/// and popped in order. An occupancy bitmap skips empty buckets. Each event is
/// moved at most twice, whatever the number of pending events.
pub struct EventQueue<E> {
    ring: Vec<Vec<(u128, E)>>,
    occupied: Vec<u64>,
    /// The current bucket, sorted so that the next event is at the end.
    near: Vec<(u128, E)>,
    /// Events scheduled into the current bucket while `near` holds
    /// [`NEAR_MAX`] or more: a sorted insert into `near` moves every later
    /// event, so 100k writers started at one time would cost the square of
    /// their number. `pop` takes the earlier of the two.
    near_over: std::collections::BinaryHeap<Far<E>>,
    /// Start time of the current bucket.
    cur: Ns,
    far: FarQueue<E>,
    /// Emptied bucket vectors, kept for buckets that fill again (so a
    /// bucket's first event does not allocate).
    spare: Vec<Vec<(u128, E)>>,
    /// A second buffer for sorting a bucket.
    scratch: Vec<(u128, E)>,
    len: usize,
    seq: u64,
    now: Ns,
    popped: u64,
}

const BUCKET_SHIFT: u32 = 16; // 65.5 us
const RING: usize = 8192; // ~537 ms
const WIDTH: Ns = 1 << BUCKET_SHIFT;
const HORIZON: Ns = WIDTH * RING as Ns;
/// Emptied bucket vectors kept for reuse.
const SPARE: usize = 64;
/// The current bucket's sorted events beyond which new ones go to a heap.
const NEAR_MAX: usize = 512;
/// Buckets up to this size are sorted by comparisons alone.
const SMALL_BUCKET: usize = 24;
/// Larger ones are first spread over `STEPS` steps of `2^STEP_SHIFT` ns.
const STEP_SHIFT: u32 = BUCKET_SHIFT - 8;
const STEPS: usize = 1 << (BUCKET_SHIFT - STEP_SHIFT);

/// Events beyond the ring's horizon, earliest (time, seq) first. Far
/// events mostly come in time order (a delayed timer re-armed as time goes
/// on, a periodic one): they queue in a few FIFO runs of increasing keys,
/// each event joining the run whose last key is the largest below its own;
/// the rest go to a heap.
pub struct FarQueue<E> {
    runs: Vec<std::collections::VecDeque<(u128, E)>>,
    heap: std::collections::BinaryHeap<Far<E>>,
    /// The earliest key (looked at every time the ring moves on a bucket,
    /// far more often than the far queue changes).
    first: Option<u128>,
}

/// FIFO runs of the far queue.
const FAR_RUNS: usize = 8;

impl<E> Default for FarQueue<E> {
    fn default() -> Self {
        FarQueue {
            runs: Vec::new(),
            heap: Default::default(),
            first: None,
        }
    }
}

impl<E> FarQueue<E> {
    fn last_key(run: &std::collections::VecDeque<(u128, E)>) -> u128 {
        run.back().expect("runs are never empty").0
    }
    fn push(&mut self, key: u128, ev: E) {
        self.first = Some(self.first.map_or(key, |f| f.min(key)));
        let run = (0..self.runs.len())
            .filter(|&i| Self::last_key(&self.runs[i]) < key)
            .max_by_key(|&i| Self::last_key(&self.runs[i]));
        match run {
            Some(i) => self.runs[i].push_back((key, ev)),
            None if self.runs.len() < FAR_RUNS => self.runs.push([(key, ev)].into()),
            None => self.heap.push(Far(key, ev)),
        }
    }
    /// The earliest key, and the run it heads (None: the heap).
    fn first_at(&self) -> Option<(u128, Option<usize>)> {
        let heap = self.heap.peek().map(|f| (f.0, None));
        (0..self.runs.len())
            .map(|i| (self.runs[i].front().expect("never empty").0, Some(i)))
            .chain(heap)
            .min_by_key(|&(k, _)| k)
    }
    #[inline]
    fn first(&self) -> Option<u128> {
        self.first
    }
    fn pop(&mut self) -> Option<(u128, E)> {
        let e = self.take_first();
        self.first = self.first_at().map(|(k, _)| k);
        e
    }
    fn take_first(&mut self) -> Option<(u128, E)> {
        match self.first_at()? {
            (_, Some(i)) => {
                let e = self.runs[i].pop_front();
                if self.runs[i].is_empty() {
                    self.runs.swap_remove(i);
                }
                e
            }
            (_, None) => self.heap.pop().map(|Far(k, e)| (k, e)),
        }
    }
}

/// A heap entry, ordered earliest (time, seq) first.
pub struct Far<E>(u128, E);

impl<E> PartialEq for Far<E> {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl<E> Eq for Far<E> {}
impl<E> PartialOrd for Far<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Far<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.0.cmp(&self.0)
    }
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

fn time_of(key: u128) -> Ns {
    (key >> 64) as Ns
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            ring: (0..RING).map(|_| Vec::new()).collect(),
            occupied: vec![0; RING / 64],
            near: Vec::new(),
            near_over: Default::default(),
            cur: 0,
            far: FarQueue::default(),
            spare: Vec::new(),
            scratch: Vec::new(),
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
        self.len += 1;
        self.place(key, ev);
    }
    fn place(&mut self, key: u128, ev: E) {
        let at = time_of(key);
        if at < self.cur + WIDTH {
            // the current bucket: keep it sorted, next event last
            if self.near.len() < NEAR_MAX {
                let pos = self.near.partition_point(|(k, _)| *k > key);
                self.near.insert(pos, (key, ev));
            } else {
                self.near_over.push(Far(key, ev));
            }
        } else if at < self.cur + HORIZON {
            let b = ((at >> BUCKET_SHIFT) as usize) % RING;
            self.push_ring(b, key, ev);
        } else {
            self.far.push(key, ev);
        }
    }
    fn push_ring(&mut self, b: usize, key: u128, ev: E) {
        let bucket = &mut self.ring[b];
        if bucket.capacity() == 0 {
            if let Some(v) = self.spare.pop() {
                *bucket = v;
            }
        }
        bucket.push((key, ev));
        self.occupied[b / 64] |= 1 << (b % 64);
    }
    /// The first occupied ring bucket after the current one, as a distance.
    fn next_occupied(&self) -> Option<usize> {
        let start = ((self.cur >> BUCKET_SHIFT) as usize + 1) % RING;
        for step in 0..=RING / 64 {
            let word_idx = (start / 64 + step) % (RING / 64);
            let mut w = self.occupied[word_idx];
            if step == 0 {
                w &= !0u64 << (start % 64);
            }
            if w != 0 {
                let b = word_idx * 64 + w.trailing_zeros() as usize;
                return Some((b + RING - start) % RING + 1);
            }
        }
        None
    }
    fn advance(&mut self) {
        // move to the next bucket that holds anything (ring or far)
        let dist = self.next_occupied();
        let ring_next = dist.map(|d| (self.cur & !(WIDTH - 1)) + d as Ns * WIDTH);
        let far_next = self.far.first().map(|k| time_of(k) & !(WIDTH - 1));
        self.cur = match (ring_next, far_next) {
            (Some(r), Some(f)) => r.min(f),
            (Some(r), None) => r,
            (None, Some(f)) => f,
            (None, None) => return,
        };
        let b = ((self.cur >> BUCKET_SHIFT) as usize) % RING;
        let mut v = std::mem::take(&mut self.ring[b]);
        self.occupied[b / 64] &= !(1 << (b % 64));
        // far events that now fall inside the ring's horizon
        while let Some(k) = self.far.first() {
            if time_of(k) >= self.cur + HORIZON {
                break;
            }
            let (k, e) = self.far.pop().expect("peeked");
            if time_of(k) < self.cur + WIDTH {
                v.push((k, e));
            } else {
                let bb = ((time_of(k) >> BUCKET_SHIFT) as usize) % RING;
                self.push_ring(bb, k, e);
            }
        }
        self.sort_bucket(&mut v);
        let old = std::mem::replace(&mut self.near, v);
        if old.capacity() > 0 && self.spare.len() < SPARE {
            self.spare.push(old);
        }
    }
    /// Sort the current bucket's events by (time, sequence), the next
    /// event last. Keys are unique, so any sort gives the same order. A
    /// burst of 1000 writers' tick-aligned wakeups fills a bucket with a
    /// hundred events at random times, which a comparison sort orders with
    /// many mispredicted branches: those are first spread by the time
    /// within the bucket in steps of `2^STEP_SHIFT` ns (one counting pass),
    /// and an insertion sort then only orders events of the same step.
    fn sort_bucket(&mut self, v: &mut Vec<(u128, E)>) {
        if v.len() <= SMALL_BUCKET {
            v.sort_unstable_by_key(|e| std::cmp::Reverse(e.0));
            return;
        }
        let start = self.cur;
        let step = |e: &(u128, E)| {
            let t = time_of(e.0);
            debug_assert!(t >= start && t - start < WIDTH);
            ((t - start) >> STEP_SHIFT) as usize & (STEPS - 1)
        };
        // steps in descending order: slot counts from the end
        let mut first = [0u32; STEPS];
        for e in v.iter() {
            first[step(e)] += 1;
        }
        if first.iter().any(|&n| n as usize > SMALL_BUCKET) {
            // times too close for the steps to spread them
            v.sort_unstable_by_key(|e| std::cmp::Reverse(e.0));
            return;
        }
        let mut next = 0;
        for c in first.iter_mut().rev() {
            (*c, next) = (next, next + *c);
        }
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        out.extend_from_slice(v);
        // within a step, in reverse order of scheduling: events at the same
        // time are then in place already
        for e in v.iter().rev() {
            let s = step(e);
            out[first[s] as usize] = *e;
            first[s] += 1;
        }
        for i in 1..out.len() {
            let mut j = i;
            while j > 0 && out[j - 1].0 < out[j].0 {
                out.swap(j - 1, j);
                j -= 1;
            }
        }
        self.scratch = std::mem::replace(v, out);
    }
    pub fn pop(&mut self) -> Option<(Ns, E)> {
        if self.len == 0 {
            return None;
        }
        while self.near.is_empty() && self.near_over.is_empty() {
            self.advance();
        }
        let over_first = match (self.near.last(), self.near_over.peek()) {
            (_, None) => false,
            (None, Some(_)) => true,
            (Some(n), Some(o)) => o.0 < n.0,
        };
        let (key, ev) = if over_first {
            let Far(k, e) = self.near_over.pop().expect("peeked");
            (k, e)
        } else {
            self.near.pop().expect("non-empty bucket")
        };
        let at = time_of(key);
        assert!(at >= self.now, "time went backwards");
        self.now = at;
        self.len -= 1;
        self.popped += 1;
        Some((at, ev))
    }
    /// The `k`-th next event (0: the next), if it is already in the
    /// current bucket (a hint for prefetching: events still to be scheduled,
    /// or in `near_over`, may come first).
    #[inline]
    pub fn peek_near(&self, k: usize) -> Option<&E> {
        let n = self.near.len();
        if k < n {
            Some(&self.near[n - 1 - k].1)
        } else {
            None
        }
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

/// Put `x` in a free slot of `slots` (the last one freed) or a new one at
/// the end, and return its index: the bio, request and io_end tables.
pub fn slot_insert<T>(slots: &mut Vec<Option<T>>, free: &mut Vec<usize>, x: T) -> usize {
    if let Some(id) = free.pop() {
        slots[id] = Some(x);
        id
    } else {
        slots.push(Some(x));
        slots.len() - 1
    }
}

/// Ask the CPU to bring the cache lines of `len` bytes at `p` into the
/// cache: a hint with no effect on what the program computes.
#[inline(always)]
pub fn prefetch<T>(p: *const T, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..len).step_by(64) {
        // SAFETY: a prefetch does not access memory architecturally; it
        // never faults, whatever the address.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>((p as *const i8).wrapping_add(off));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, len);
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
        for round in 0..60u64 {
            for _ in 0..200 {
                let at = q.now() + p.below(1 << (round % 44));
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
    fn a_crowded_bucket_pops_in_order_in_linear_time() {
        // 200k events at one time, then more in the same bucket while it
        // is popped: in order, and quickly (a sorted insert each was
        // quadratic: minutes in a debug build)
        let mut q = EventQueue::new();
        let n = 200_000u32;
        for i in 0..n {
            q.schedule(100, i);
        }
        let mut next = n;
        let mut expect: Vec<(Ns, u32)> = (0..n).map(|i| (100, i)).collect();
        let mut got = Vec::new();
        for k in 0..n {
            let e = q.pop().unwrap();
            got.push(e);
            if k % 3 == 0 {
                // later in the same bucket, and at the current time
                let at = q.now() + (k as Ns % 2) * 1000;
                q.schedule(at, next);
                expect.push((at, next));
                next += 1;
            }
        }
        while let Some(e) = q.pop() {
            got.push(e);
        }
        expect.sort_by_key(|&(a, b)| (a, b));
        assert_eq!(got, expect);
    }

    #[test]
    fn jiffies_round_trip() {
        for hz in [100, 250, 300, 1000] {
            let j = Jiffies::with_base(hz, 0);
            for k in 0..2000u64 {
                let t = j.start_of(k);
                assert_eq!(j.at(t), k, "hz={hz} k={k}");
                assert_eq!(j.at_far(t + 7), k);
                if t > 0 {
                    assert_eq!(j.at(t - 1), k - 1);
                    assert_eq!(j.at_far(t - 1), k - 1);
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
