//! Per-job IO statistics, as fio keeps them (`struct thread_stat`): bytes,
//! IOs, latencies and bandwidth samples per direction. Latency percentiles
//! come from a histogram with fio's bucket layout, never from stored
//! samples, so a 20-hour run holds a fixed amount of memory.
//!
//! INTERFACE (shared by the engine and the output): the signatures below are
//! fixed; the internals are free.

use super::job::Dir;
use crate::sim::Ns;

/// Which log files a job writes, and their averaging window
/// (`write_lat_log`, `write_bw_log`, `write_iops_log`, `log_avg_msec`).
#[derive(Clone, Debug, Default)]
pub struct LogCfg {
    pub avg_msec: u32,
    pub lat: bool,
    pub bw: bool,
    pub iops: bool,
}

/// One job's statistics (one clone of a `numjobs` job, or a group's sum
/// under `group_reporting`).
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    pub io_bytes: [u64; 3],
    pub total_ios: [u64; 3],
    /// CPU time and context switches of the job's task(s), and its runtime.
    pub usr: Ns,
    pub sys: Ns,
    pub ctx: u64,
    pub runtime: Ns,
}

impl JobStats {
    /// Statistics that start counting at `ramp_end` (after `ramp_time`);
    /// IOs completing earlier are not counted, as fio drops them.
    pub fn new(ramp_end: Ns, logs: LogCfg) -> JobStats {
        let _ = (ramp_end, logs);
        JobStats::default()
    }

    /// One completed IO of `bytes` at byte `offset` in direction `dir`: fio issued it at
    /// `issue`, the submission returned at `submit` (async engines only:
    /// `None` for sync engines, which have no slat), and it completed at
    /// `done`. clat = done - submit (or - issue), lat = done - issue.
    pub fn add_io(
        &mut self,
        dir: Dir,
        bytes: u64,
        offset: u64,
        issue: Ns,
        submit: Option<Ns>,
        done: Ns,
    ) {
        let _ = (offset, issue, submit, done);
        self.io_bytes[dir.idx()] += bytes;
        self.total_ios[dir.idx()] += 1;
    }

    /// One fsync/fdatasync (fio's "sync" section: its latency).
    pub fn add_sync(&mut self, issue: Ns, done: Ns) {
        let _ = (issue, done);
    }

    /// The job ended at `end` after starting at `start` (its runtime), with
    /// this CPU time and these context switches.
    pub fn finish(&mut self, start: Ns, end: Ns, usr: Ns, sys: Ns, ctx: u64) {
        self.runtime = end.saturating_sub(start);
        self.usr = usr;
        self.sys = sys;
        self.ctx = ctx;
    }

    /// Add another job's statistics (`group_reporting`).
    pub fn merge(&mut self, other: &JobStats) {
        for d in Dir::ALL {
            self.io_bytes[d.idx()] += other.io_bytes[d.idx()];
            self.total_ios[d.idx()] += other.total_ios[d.idx()];
        }
        self.usr += other.usr;
        self.sys += other.sys;
        self.ctx += other.ctx;
        self.runtime = self.runtime.max(other.runtime);
    }
}
