//! A device's volatile write cache as occupancy over time: the writes it
//! holds, each with the time it reaches the medium (flash or platter),
//! drained in FIFO order. The ssd and hdd models share it; each decides how
//! fast data enters and leaves.

use crate::sim::Ns;
use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub struct WriteCache {
    /// Cached writes not yet on the medium: (bytes, drain end), FIFO.
    entries: VecDeque<(u64, Ns)>,
    /// Sum of the bytes in `entries`.
    cached: u64,
}

impl WriteCache {
    /// Forget writes whose drain has ended by `t`.
    fn retire(&mut self, t: Ns) {
        while let Some(&(b, d)) = self.entries.front() {
            if d > t {
                break;
            }
            self.entries.pop_front();
            self.cached -= b;
        }
    }

    /// The earliest time at or after `t` when `bytes` fit in `cap` (a write
    /// larger than the cache waits for it to empty and overfills it).
    pub fn room_at(&mut self, mut t: Ns, bytes: u64, cap: u64) -> Ns {
        loop {
            self.retire(t);
            match self.entries.front() {
                Some(&(_, d)) if self.cached + bytes > cap => t = d,
                _ => return t,
            }
        }
    }

    /// Admit a write that leaves the cache at `drain_end`.
    pub fn push(&mut self, bytes: u64, drain_end: Ns) {
        self.entries.push_back((bytes, drain_end));
        self.cached += bytes;
    }

    /// Bytes in the cache at time `t` (admitted and not yet drained).
    pub fn bytes_at(&self, t: Ns) -> u64 {
        self.entries
            .iter()
            .filter(|&&(_, d)| d > t)
            .map(|&(b, _)| b)
            .sum()
    }
}
