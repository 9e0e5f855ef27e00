//! Per-job IO statistics, as fio keeps them (`struct thread_stat` in fio's
//! stat.h): bytes, IOs, latencies and bandwidth samples per direction.
//! Latency percentiles come from a histogram with fio's bucket layout, never
//! from stored samples, so a 20-hour run holds a fixed amount of memory.
//!
//! INTERFACE (shared by the engine and the output): the signatures of
//! `JobStats::new`, `add_io`, `add_sync`, `finish` and `merge` are fixed;
//! the rest is added for the output (`output.rs`) and the engine.
//!
//! What is modelled, after fio 3.33:
//! - `add_stat_sample`: min, max and a running mean and sum of squares
//!   (Welford's update, as fio does it) per latency kind and direction;
//!   `__sum_stat`/`sum_stat`: the parallel merge for `group_reporting`
//!   (latencies combine exactly; bandwidth and IOPS samples add up).
//! - `plat_val_to_idx`/`plat_idx_to_val` and `calc_clat_percentiles`: the
//!   1856-bucket log-linear histogram of clat and of the sync latency (fio
//!   keeps slat and lat histograms only when `slat_percentiles` or
//!   `lat_percentiles` is set, which the simulator does not model).
//! - `io_u_mark_latency`: the `latency_ns/us/ms` buckets of clat.
//! - `io_u_mark_depth`/`io_u_mark_submit`/`io_u_mark_complete`: the IO depth
//!   distributions.
//! - `__add_samples`/`add_bw_sample`/`add_iops_sample`: bandwidth and IOPS
//!   samples every `bw_avg_time`/`iops_avg_time` (500 ms) from the epoch,
//!   or per IO when a bw/iops log is written without `log_avg_msec`.
//! - `add_log_sample`/`__add_stat_to_log`/`finalize_logs`: the lat, clat,
//!   slat, bw and iops log lines, per IO or averaged over `log_avg_msec`.
//!
//! Log lines go into a byte buffer per log in the job's stats; the engine
//! drains it with `output::flush_logs` whenever `log_pending()` passes
//! `LOG_FLUSH_BYTES`, and `output::write_logs` writes the rest at the end.
//! Memory therefore stays bounded even with one line per IO: a `JobStats`
//! is `size_of::<JobStats>()` plus at most four 14.5 KiB histograms plus the
//! unflushed log bytes.

use super::job::{Dir, FioJob, IoEngine};
use crate::sim::Ns;
use std::io::Write as _;

/// fio's `FIO_IO_U_PLAT_BITS`: 2^6 buckets per power of two.
pub const PLAT_BITS: u32 = 6;
/// fio's `FIO_IO_U_PLAT_VAL`.
pub const PLAT_VAL: usize = 1 << PLAT_BITS;
/// fio's `FIO_IO_U_PLAT_GROUP_NR`.
pub const PLAT_GROUP_NR: usize = 29;
/// fio's `FIO_IO_U_PLAT_NR`: 1856 buckets, ns from 0 to 2^34 and beyond.
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL;

/// fio's default `percentile_list`.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// fio's default `bw_avg_time` and `iops_avg_time`, in ms.
pub const AVG_TIME_MS: u64 = 500;

/// Unflushed log bytes past which the engine should call
/// `output::flush_logs` (a hint; nothing is dropped if it does not).
pub const LOG_FLUSH_BYTES: usize = 1 << 20;

/// The histogram bucket of a latency in ns (fio's `plat_val_to_idx`):
/// values below 128 have a bucket each; above, the 6 bits after the most
/// significant one choose one of the 64 buckets of its power of two.
pub fn plat_val_to_idx(val: u64) -> usize {
    let msb = if val == 0 {
        0
    } else {
        63 - val.leading_zeros()
    };
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as usize) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (val >> error_bits) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// The value a bucket stands for (fio's `plat_idx_to_val`): the middle of
/// its range, the value itself below 128.
pub fn plat_idx_to_val(idx: usize) -> u64 {
    let idx = idx.min(PLAT_NR - 1);
    if idx < PLAT_VAL << 1 {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx % PLAT_VAL) as u64;
    // fio computes base + (k + 0.5) * 2^error_bits in double; error_bits is
    // at least 1 here, so it is an integer.
    base + (k << error_bits) + (1u64 << (error_bits - 1))
}

/// fio's `struct io_stat`: min, max, running mean and sum of squared
/// deviations (`S`), and the number of samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IoStat {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub s: f64,
    pub samples: u64,
}

impl Default for IoStat {
    fn default() -> IoStat {
        IoStat {
            min: u64::MAX,
            max: 0,
            mean: 0.0,
            s: 0.0,
            samples: 0,
        }
    }
}

impl IoStat {
    /// fio's `add_stat_sample`.
    pub fn add(&mut self, data: u64) {
        let val = data as f64;
        self.max = self.max.max(data);
        self.min = self.min.min(data);
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    /// fio's `calc_lat`: (min, max, mean, stddev), None without samples.
    pub fn calc(&self) -> Option<(u64, u64, f64, f64)> {
        if self.samples == 0 {
            return None;
        }
        let n = self.samples as f64;
        let dev = if n > 1.0 {
            (self.s / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some((self.min, self.max, self.mean, dev))
    }

    /// fio's `sum_stat`: latencies (`pure_sum` false) merge by the parallel
    /// algorithm, so mean and variance are those of all samples together;
    /// bandwidth and IOPS (`pure_sum` true) add up, the group's rate being
    /// the sum of its jobs'.
    pub fn sum(&mut self, src: &IoStat, pure_sum: bool) {
        if src.samples == 0 {
            return;
        }
        let first = self.samples == 0;
        if first {
            *self = *src;
            return;
        }
        if pure_sum {
            self.min += src.min;
            self.max += src.max;
            self.samples += src.samples;
            self.mean += src.mean;
            self.s += src.s;
            return;
        }
        self.min = self.min.min(src.min);
        self.max = self.max.max(src.max);
        let (n1, n2) = (self.samples as f64, src.samples as f64);
        let delta = src.mean - self.mean;
        let mean = (src.mean * n2 + self.mean * n1) / (n1 + n2);
        let s = src.s + self.s + delta.powi(2) * (n1 * n2) / (n1 + n2);
        self.samples += src.samples;
        self.mean = mean;
        self.s = s;
    }
}

/// A latency histogram in fio's layout; its buckets are allocated at the
/// first sample (`PLAT_NR` u64s, 14.5 KiB), so unused directions cost
/// nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hist(Vec<u64>);

impl Hist {
    pub fn add(&mut self, nsec: u64) {
        if self.0.is_empty() {
            self.0 = vec![0; PLAT_NR];
        }
        self.0[plat_val_to_idx(nsec)] += 1;
    }

    pub fn merge(&mut self, other: &Hist) {
        if other.0.is_empty() {
            return;
        }
        if self.0.is_empty() {
            self.0 = vec![0; PLAT_NR];
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a += b;
        }
    }

    /// The count in bucket `idx`.
    pub fn bucket(&self, idx: usize) -> u64 {
        self.0.get(idx).copied().unwrap_or(0)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity() * std::mem::size_of::<u64>()
    }

    /// fio's `calc_clat_percentiles`: for each percentile of `list`
    /// (ascending), the value of the first bucket at which the running count
    /// reaches that share of `nr` samples.
    pub fn percentiles(&self, nr: u64, list: &[f64]) -> Vec<u64> {
        let mut out = Vec::with_capacity(list.len());
        if list.is_empty() || self.0.is_empty() {
            return out;
        }
        let mut sum = 0u64;
        let mut j = 0;
        'buckets: for (i, &c) in self.0.iter().enumerate() {
            sum += c;
            while sum as f64 >= list[j] / 100.0 * nr as f64 {
                out.push(plat_idx_to_val(i));
                j += 1;
                if j == list.len() {
                    break 'buckets;
                }
            }
        }
        // fio logs "error calculating latency percentiles" and leaves the
        // rest unset; the last bucket's value is the honest stand-in.
        while out.len() < list.len() {
            out.push(plat_idx_to_val(PLAT_NR - 1));
        }
        out
    }
}

/// The bucket of the `latency_ns`/`latency_us` edges (2, 4, 10, 20, 50,
/// 100, 250, 500, 750, 1000) of a value below 1000; and, for
/// `latency_ms`, 1000..1999 and 2000+ as buckets 10 and 11.
fn lat_bucket(v: u64) -> usize {
    const EDGES: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];
    EDGES.iter().position(|&e| v < e).unwrap_or(11)
}

/// fio's `__io_u_mark_map` (submit and complete batches): 0, 1-4, 5-8,
/// 9-16, 17-32, 33-64, more.
fn batch_bucket(nr: u32) -> usize {
    match nr {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// fio's `io_u_mark_depth`: 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64+.
fn depth_bucket(depth: u32) -> usize {
    match depth {
        0 | 1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// Which log files a job writes, and their averaging window
/// (`write_lat_log`, `write_bw_log`, `write_iops_log`, `log_avg_msec`,
/// `log_offset`).
#[derive(Clone, Debug, Default)]
pub struct LogCfg {
    pub avg_msec: u32,
    pub lat: bool,
    pub bw: bool,
    pub iops: bool,
    /// `log_offset=1`: each line carries the IO's offset.
    pub offset: bool,
}

impl LogCfg {
    /// The logs `job` asks for.
    pub fn for_job(job: &FioJob) -> LogCfg {
        LogCfg {
            avg_msec: job.log_avg_msec,
            lat: job.write_lat_log.is_some(),
            bw: job.write_bw_log.is_some(),
            iops: job.write_iops_log.is_some(),
            offset: false,
        }
    }
}

/// The five logs fio writes, in the order `output::write_logs` writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    Lat,
    Slat,
    Clat,
    Bw,
    Iops,
}

impl LogKind {
    pub const ALL: [LogKind; 5] = [
        LogKind::Lat,
        LogKind::Slat,
        LogKind::Clat,
        LogKind::Bw,
        LogKind::Iops,
    ];
    /// fio's name in the file name (`NAME_lat.N.log`).
    pub fn name(self) -> &'static str {
        match self {
            LogKind::Lat => "lat",
            LogKind::Slat => "slat",
            LogKind::Clat => "clat",
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
        }
    }
    fn inline(self) -> bool {
        matches!(self, LogKind::Lat | LogKind::Slat | LogKind::Clat)
    }
}

/// One log (fio's `struct io_log`): its unflushed lines and, when
/// averaging, the open window per direction.
#[derive(Clone, Debug)]
pub struct IoLog {
    pub kind: LogKind,
    avg_msec: u64,
    offset: bool,
    avg_last: [u64; 3],
    window: [IoStat; 3],
    /// Lines not yet written to the file.
    pub buf: Vec<u8>,
    /// The file has been created by an earlier flush (later ones append).
    pub flushed: bool,
}

impl IoLog {
    fn new(kind: LogKind, avg_msec: u32, offset: bool) -> IoLog {
        IoLog {
            kind,
            avg_msec: avg_msec as u64,
            offset,
            avg_last: [0; 3],
            window: [IoStat::default(); 3],
            buf: Vec::new(),
            flushed: false,
        }
    }

    /// fio's `__add_log_sample` and `flush_samples`' line format:
    /// "msec, value, ddir, bs, prio" ("msec, value, ddir, bs, offset, prio"
    /// with `log_offset`); the priority column is 0 (no ioprio model).
    fn line(&mut self, t_ms: u64, val: u64, ddir: usize, bs: u64, offset: u64) {
        if self.offset {
            let _ = writeln!(self.buf, "{t_ms}, {val}, {ddir}, {bs}, {offset}, 0");
        } else {
            let _ = writeln!(self.buf, "{t_ms}, {val}, {ddir}, {bs}, 0");
        }
    }

    /// fio's `__add_stat_to_log`: the window's mean, rounded, at `t_ms`.
    fn close_window(&mut self, ddir: usize, t_ms: u64) {
        if self.window[ddir].samples > 0 {
            let v = (self.window[ddir].mean + 0.5) as u64;
            self.line(t_ms, v, ddir, 0, 0);
        }
        self.window[ddir] = IoStat::default();
    }

    /// fio's `add_log_sample`.
    fn add(&mut self, t_ms: u64, val: u64, ddir: usize, bs: u64, offset: u64) {
        if self.avg_msec == 0 {
            self.line(t_ms, val, ddir, bs, offset);
            return;
        }
        self.window[ddir].add(val);
        if t_ms < self.avg_last[ddir] {
            return;
        }
        let this_window = t_ms - self.avg_last[ddir];
        if this_window < self.avg_msec {
            let diff = self.avg_msec - this_window;
            // LOG_MSEC_SLACK (1 ms) for the bw and iops logs.
            if self.kind.inline() || diff > 1 {
                return;
            }
        }
        self.close_window(ddir, t_ms);
        self.avg_last[ddir] = t_ms - t_ms % self.avg_msec;
    }

    /// fio's `finalize_logs`: the open windows, at the job's end.
    fn finalize(&mut self, t_ms: u64) {
        if self.avg_msec == 0 {
            return;
        }
        for d in 0..3 {
            self.close_window(d, t_ms);
        }
    }
}

/// Bandwidth or IOPS sampling (fio's `__add_samples`): every `avg_ms`
/// from the epoch, the rate of each direction over the window, if it did
/// any IO.
#[derive(Clone, Debug, Default)]
struct Sampler {
    /// The window in ms; 0: one sample per IO (a bw/iops log without
    /// `log_avg_msec`).
    avg_ms: u64,
    /// End of the open window.
    next: Ns,
    /// Bytes (bw) or IOs (iops) done, and at the last sample.
    this: [u64; 3],
    last: [u64; 3],
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

    /// The stats' epoch: the job's start plus `ramp_time`.
    pub epoch: Ns,
    /// When the job ended (the latest member's, for a group).
    pub end: Ns,
    /// Jobs summed into this one (fio's `members`: "jobs=N").
    pub members: u32,
    /// Per direction, ms (fio's `ts->runtime[]`: rounded up, and only for
    /// a direction that moved bytes).
    pub runtime_ms: [u64; 3],
    /// fio's `total_run_time` (ms from the epoch to the end, truncated;
    /// summed over a group's members).
    pub total_run_time_ms: u64,
    pub slat: [IoStat; 3],
    pub clat: [IoStat; 3],
    pub lat: [IoStat; 3],
    pub bw: [IoStat; 3],
    pub iops: [IoStat; 3],
    pub clat_hist: [Hist; 3],
    pub sync: IoStat,
    pub sync_hist: Hist,
    pub total_sync: u64,
    /// `latency_ns`, `latency_us`, `latency_ms` counts (of clat).
    pub lat_n: [u64; 10],
    pub lat_u: [u64; 10],
    pub lat_m: [u64; 12],
    /// IO depth (`io_u_map`), submit and complete batch counts, as the
    /// engine recorded them with `add_depth`, `add_submit`, `add_complete`.
    depth_map: [u64; 7],
    submit_map: [u64; 7],
    complete_map: [u64; 7],
    total_submit: u64,
    total_complete: u64,
    /// IOs and syncs counted; those stand for depth-1 issues and batches
    /// of one where the engine recorded none (a sync engine).
    default_marks: u64,
    /// The engine has a commit hook (fio's `null`, `libaio`, `io_uring`):
    /// fio marks submit and complete batches only from `td_io_commit` and
    /// `io_u_queued_complete`, so without `add_submit`/`add_complete`
    /// calls the distributions stay empty instead of batches of one.
    pub engine_commits: bool,
    bw_sampler: Sampler,
    iops_sampler: Sampler,
    /// The logs the job writes (empty if none).
    pub logs: Vec<IoLog>,
}

/// The IO depth distributions, as counts: (`io_u_map`, `io_u_submit`,
/// `io_u_complete`, `total_submit`, `total_complete`).
pub type DepthMaps = ([u64; 7], [u64; 7], [u64; 7], u64, u64);

impl JobStats {
    /// Statistics that start counting at `ramp_end` (after `ramp_time`);
    /// IOs completing earlier are not counted, as fio drops them.
    /// `ramp_end` is the stats' epoch (fio's `td->epoch`, reset at the end
    /// of the ramp): the engine passes the job's start plus `ramp_time`.
    /// Bandwidth and IOPS windows and log times count from it.
    pub fn new(ramp_end: Ns, logs: LogCfg) -> JobStats {
        // fio's add_job(): a bw (iops) log with log_avg_msec sets
        // bw_avg_time (iops_avg_time) to it; without, samples are per IO.
        let window = |on: bool| {
            if on {
                logs.avg_msec as u64
            } else {
                AVG_TIME_MS
            }
        };
        let mut s = JobStats {
            epoch: ramp_end,
            members: 1,
            ..JobStats::default()
        };
        for (sampler, on) in [
            (&mut s.bw_sampler, logs.bw),
            (&mut s.iops_sampler, logs.iops),
        ] {
            sampler.avg_ms = window(on);
            sampler.next = ramp_end + sampler.avg_ms * 1_000_000;
        }
        let mut kinds = Vec::new();
        if logs.lat {
            kinds.extend([LogKind::Lat, LogKind::Slat, LogKind::Clat]);
        }
        if logs.bw {
            kinds.push(LogKind::Bw);
        }
        if logs.iops {
            kinds.push(LogKind::Iops);
        }
        s.logs = kinds
            .into_iter()
            .map(|k| IoLog::new(k, logs.avg_msec, logs.offset))
            .collect();
        s
    }

    /// `new` for `job`, whose stats start at `epoch` (its start plus
    /// `ramp_time`), with its logs and its engine's batch accounting.
    pub fn for_job(job: &FioJob, epoch: Ns) -> JobStats {
        let mut s = JobStats::new(epoch, LogCfg::for_job(job));
        s.engine_commits = matches!(
            job.ioengine,
            IoEngine::Null | IoEngine::Libaio | IoEngine::IoUring
        );
        s
    }

    fn ms(&self, t: Ns) -> u64 {
        t.saturating_sub(self.epoch) / 1_000_000
    }

    fn log(&mut self, kind: LogKind) -> Option<&mut IoLog> {
        self.logs.iter_mut().find(|l| l.kind == kind)
    }

    /// Take the bandwidth and IOPS samples of every window that ended by
    /// `t` (at `t` itself if `inclusive`).
    fn close_windows(&mut self, t: Ns, inclusive: bool) {
        let epoch = self.epoch;
        for is_bw in [true, false] {
            loop {
                let s = if is_bw {
                    &mut self.bw_sampler
                } else {
                    &mut self.iops_sampler
                };
                if s.avg_ms == 0 || !(s.next < t || (inclusive && s.next == t)) {
                    break;
                }
                let at = s.next;
                s.next += s.avg_ms * 1_000_000;
                let spent = s.avg_ms;
                let mut rates = [None; 3];
                for (d, rate) in rates.iter_mut().enumerate() {
                    let delta = s.this[d] - s.last[d];
                    if delta == 0 {
                        continue;
                    }
                    *rate = Some(if is_bw {
                        delta * 1000 / spent / 1024
                    } else {
                        delta * 1000 / spent
                    });
                    s.last[d] = s.this[d];
                }
                let t_ms = at.saturating_sub(epoch) / 1_000_000;
                for (d, r) in rates.iter().enumerate() {
                    let Some(r) = *r else { continue };
                    if is_bw {
                        self.bw[d].add(r);
                    } else {
                        self.iops[d].add(r);
                    }
                    let kind = if is_bw { LogKind::Bw } else { LogKind::Iops };
                    if let Some(l) = self.log(kind) {
                        l.add(t_ms, r, d, 0, 0);
                    }
                }
            }
        }
    }

    /// One completed IO of `bytes` at byte `offset` in direction `dir`: fio issued it at
    /// `issue`, the submission returned at `submit` (async engines only:
    /// `None` for sync engines, which have no slat), and it completed at
    /// `done`. clat = done - submit (or - issue), lat = done - issue.
    /// (fio's `account_io_completion` and `io_u_queued`.) Bandwidth
    /// windows close as `done` passes their end; an async IO reported
    /// after a later one counts in the window open at that point.
    pub fn add_io(
        &mut self,
        dir: Dir,
        bytes: u64,
        offset: u64,
        issue: Ns,
        submit: Option<Ns>,
        done: Ns,
    ) {
        if done < self.epoch {
            return;
        }
        self.close_windows(done, true);
        let d = dir.idx();
        let done_ms = self.ms(done);
        if let Some(sub) = submit {
            let slat = sub.saturating_sub(issue);
            self.slat[d].add(slat);
            let t = self.ms(sub);
            if let Some(l) = self.log(LogKind::Slat) {
                l.add(t, slat, d, bytes, offset);
            }
        }
        let lat = done.saturating_sub(issue);
        self.lat[d].add(lat);
        if let Some(l) = self.log(LogKind::Lat) {
            l.add(done_ms, lat, d, bytes, offset);
        }
        let clat = done.saturating_sub(submit.unwrap_or(issue));
        self.clat[d].add(clat);
        self.clat_hist[d].add(clat);
        if let Some(l) = self.log(LogKind::Clat) {
            l.add(done_ms, clat, d, bytes, offset);
        }
        // io_u_mark_latency
        if clat < 1_000 {
            self.lat_n[lat_bucket(clat)] += 1;
        } else if clat < 1_000_000 {
            self.lat_u[lat_bucket(clat / 1_000)] += 1;
        } else {
            self.lat_m[lat_bucket(clat / 1_000_000)] += 1;
        }
        // Per-IO bandwidth and IOPS samples (add_bw_sample: bytes per
        // clat, in fio's units).
        if self.bw_sampler.avg_ms == 0 {
            let rate = (bytes * 1_000_000).checked_div(clat).unwrap_or(0);
            self.bw[d].add(rate);
            if let Some(l) = self.log(LogKind::Bw) {
                l.add(done_ms, rate, d, bytes, offset);
            }
        }
        if self.iops_sampler.avg_ms == 0 {
            self.iops[d].add(1);
            if let Some(l) = self.log(LogKind::Iops) {
                l.add(done_ms, 1, d, bytes, offset);
            }
        }
        self.io_bytes[d] += bytes;
        self.total_ios[d] += 1;
        self.bw_sampler.this[d] += bytes;
        self.iops_sampler.this[d] += 1;
        self.default_marks += 1;
    }

    /// One fsync/fdatasync (fio's "sync" section: its latency;
    /// `add_sync_clat_sample`).
    pub fn add_sync(&mut self, issue: Ns, done: Ns) {
        if done < self.epoch {
            return;
        }
        let lat = done.saturating_sub(issue);
        self.sync.add(lat);
        self.sync_hist.add(lat);
        self.total_sync += 1;
        self.default_marks += 1;
    }

    /// The `end_fsync` at the job's end: fio records its latency but, the
    /// job being in TD_FSYNCING, counts it neither as an issued sync nor
    /// in the depth maps.
    pub fn add_end_sync(&mut self, issue: Ns, done: Ns) {
        if done < self.epoch {
            return;
        }
        let lat = done.saturating_sub(issue);
        self.sync.add(lat);
        self.sync_hist.add(lat);
    }

    /// The engine issued one IO with `depth` IOs in flight, itself
    /// included (fio's `io_u_mark_depth`). Without any call, every IO and
    /// sync counts at depth 1.
    pub fn add_depth(&mut self, depth: u32) {
        self.depth_map[depth_bucket(depth)] += 1;
    }

    /// The engine submitted `nr` IOs at once (`io_u_mark_submit`). Without
    /// any call, every IO and sync is a batch of one (a sync engine).
    pub fn add_submit(&mut self, nr: u32) {
        self.submit_map[batch_bucket(nr)] += 1;
        self.total_submit += 1;
    }

    /// The engine reaped `nr` completions at once (`io_u_mark_complete`).
    pub fn add_complete(&mut self, nr: u32) {
        self.complete_map[batch_bucket(nr)] += 1;
        self.total_complete += 1;
    }

    /// The depth distributions with the defaults filled in.
    pub fn depth_maps(&self) -> DepthMaps {
        let mut depth = self.depth_map;
        if depth.iter().all(|&c| c == 0) {
            depth[0] = self.default_marks;
        }
        let (mut submit, mut complete) = (self.submit_map, self.complete_map);
        let (mut ts, mut tc) = (self.total_submit, self.total_complete);
        if ts == 0 && !self.engine_commits {
            submit[1] = self.default_marks;
            ts = self.default_marks;
        }
        if tc == 0 && !self.engine_commits {
            complete[1] = self.default_marks;
            tc = self.default_marks;
        }
        (depth, submit, complete, ts, tc)
    }

    /// The job ended at `end` after starting at `start` (its runtime), with
    /// this CPU time and these context switches.
    pub fn finish(&mut self, start: Ns, end: Ns, usr: Ns, sys: Ns, ctx: u64) {
        let epoch = self.epoch.max(start);
        // A window ending exactly at the end is not sampled: fio's helper
        // thread finds the job no longer running.
        self.close_windows(end, false);
        self.runtime = end.saturating_sub(epoch);
        let elapsed_us = self.runtime / 1_000;
        for d in 0..3 {
            self.runtime_ms[d] = if self.io_bytes[d] > 0 {
                elapsed_us.div_ceil(1_000)
            } else {
                0
            };
        }
        self.total_run_time_ms = self.runtime / 1_000_000;
        self.usr = usr;
        self.sys = sys;
        self.ctx = ctx;
        self.end = end;
        let t_ms = self.ms(end);
        for l in &mut self.logs {
            l.finalize(t_ms);
        }
    }

    /// Add another job's statistics (`group_reporting`; fio's
    /// `sum_thread_stats`). Logs stay with each job.
    pub fn merge(&mut self, other: &JobStats) {
        let (dm, sm, cm, ts, tc) = self.depth_maps();
        let (odm, osm, ocm, ots, otc) = other.depth_maps();
        for k in 0..7 {
            self.depth_map[k] = dm[k] + odm[k];
            self.submit_map[k] = sm[k] + osm[k];
            self.complete_map[k] = cm[k] + ocm[k];
        }
        self.total_submit = ts + ots;
        self.total_complete = tc + otc;
        self.default_marks += other.default_marks;
        for d in Dir::ALL {
            let i = d.idx();
            self.io_bytes[i] += other.io_bytes[i];
            self.total_ios[i] += other.total_ios[i];
            self.slat[i].sum(&other.slat[i], false);
            self.clat[i].sum(&other.clat[i], false);
            self.lat[i].sum(&other.lat[i], false);
            self.bw[i].sum(&other.bw[i], true);
            self.iops[i].sum(&other.iops[i], true);
            self.clat_hist[i].merge(&other.clat_hist[i]);
            self.runtime_ms[i] = self.runtime_ms[i].max(other.runtime_ms[i]);
        }
        self.sync.sum(&other.sync, false);
        self.sync_hist.merge(&other.sync_hist);
        self.total_sync += other.total_sync;
        for k in 0..10 {
            self.lat_n[k] += other.lat_n[k];
            self.lat_u[k] += other.lat_u[k];
        }
        for k in 0..12 {
            self.lat_m[k] += other.lat_m[k];
        }
        self.usr += other.usr;
        self.sys += other.sys;
        self.ctx += other.ctx;
        self.total_run_time_ms += other.total_run_time_ms;
        self.members += other.members;
        self.end = self.end.max(other.end);
        self.runtime = self.runtime.max(other.runtime);
    }

    /// Unflushed log bytes (see `LOG_FLUSH_BYTES`).
    pub fn log_pending(&self) -> usize {
        self.logs.iter().map(|l| l.buf.len()).sum()
    }

    /// Heap bytes held: histograms and log buffers.
    pub fn heap_bytes(&self) -> usize {
        self.clat_hist.iter().map(Hist::heap_bytes).sum::<usize>()
            + self.sync_hist.heap_bytes()
            + self.logs.capacity() * std::mem::size_of::<IoLog>()
            + self.logs.iter().map(|l| l.buf.capacity()).sum::<usize>()
    }

    /// Percentage distributions as fio prints them (`stat_calc_dist`):
    /// a non-zero share below 0.1% shows as 0.1%.
    pub fn dist(map: &[u64; 7], total: u64) -> [f64; 7] {
        let mut out = [0.0; 7];
        for (o, &m) in out.iter_mut().zip(map) {
            if total > 0 {
                *o = m as f64 / total as f64 * 100.0;
                if *o < 0.1 && m > 0 {
                    *o = 0.1;
                }
            }
        }
        out
    }

    /// `latency_ns/us/ms` as percentages of the read, write and trim IOs
    /// (`stat_calc_lat`: a non-zero share below 0.01% shows as 0.01%).
    pub fn lat_dist(&self, counts: &[u64]) -> Vec<f64> {
        let total: u64 = self.total_ios.iter().sum();
        counts
            .iter()
            .map(|&c| {
                if total == 0 {
                    return 0.0;
                }
                let v = c as f64 / total as f64 * 100.0;
                if v < 0.01 && c > 0 {
                    0.01
                } else {
                    v
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Ns = 1_000_000;

    #[test]
    fn bucket_index_by_hand() {
        // Below 128 every value has its bucket.
        for v in [0u64, 1, 63, 64, 127] {
            assert_eq!(plat_val_to_idx(v), v as usize);
            assert_eq!(plat_idx_to_val(v as usize), v);
        }
        // 128: msb 7, 1 error bit, base (1+1)<<6 = 128, offset (128>>1)&63 = 0.
        assert_eq!(plat_val_to_idx(128), 128);
        assert_eq!(plat_val_to_idx(129), 128);
        assert_eq!(plat_val_to_idx(130), 129);
        // bucket 128 covers 128..=129: its value 128 + 0.5 * 2 = 129.
        assert_eq!(plat_idx_to_val(128), 129);
        // 1000: msb 9, 3 error bits, base 4<<6 = 256, offset (1000>>3)&63 = 61.
        assert_eq!(plat_val_to_idx(1000), 317);
        // bucket 317: group 4, error bits 3, base 512, k 61: 512 + 61.5 * 8.
        assert_eq!(plat_idx_to_val(317), 1004);
        // 1 ms = 1_000_000: msb 19, 13 error bits, base 14<<6 = 896,
        // offset (1e6 >> 13) & 63 = 122 & 63 = 58.
        assert_eq!(plat_val_to_idx(1_000_000), 954);
        // 2^19 + 58.5 * 2^13 = 524288 + 479232.
        assert_eq!(plat_idx_to_val(954), 1_003_520);
        // Beyond the last group, the last bucket.
        assert_eq!(plat_val_to_idx(u64::MAX), PLAT_NR - 1);
        assert_eq!(PLAT_NR, 1856);
        // Every value maps to a bucket whose value is within 1/128 of it.
        let mut v = 1u64;
        while v < 1 << 33 {
            let r = plat_idx_to_val(plat_val_to_idx(v));
            assert!(
                (r as f64 - v as f64).abs() <= v as f64 / 128.0 + 1.0,
                "{v} {r}"
            );
            v = v * 3 / 2 + 1;
        }
        // The bucket of a bucket's value is that bucket.
        for i in 0..PLAT_NR - 1 {
            assert_eq!(plat_val_to_idx(plat_idx_to_val(i)), i);
        }
    }

    #[test]
    fn percentiles_of_uniform() {
        let mut h = Hist::default();
        for us in 1..=10_000u64 {
            h.add(us * 1_000);
        }
        let p = h.percentiles(10_000, &PERCENTILES);
        assert_eq!(p.len(), 17);
        // p50 is 5000 us; the bucket there is 2^22 / 64 = 65.5 us wide.
        let width = 1u64 << (22 - 6);
        assert!(p[6].abs_diff(5_000_000) <= width, "{}", p[6]);
        // p99 near 9900 us (bucket width 2^23/64).
        assert!(p[12].abs_diff(9_900_000) <= 1 << (23 - 6), "{}", p[12]);
        assert!(p.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn stat_matches_two_pass() {
        let mut s = IoStat::default();
        let xs: Vec<u64> = (0..1000u64).map(|i| (i * 7919) % 1013 + 5).collect();
        for &x in &xs {
            s.add(x);
        }
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<u64>() as f64 / n;
        let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let (min, max, m, dev) = s.calc().unwrap();
        assert_eq!((min, max), (5, 1017));
        assert!((m - mean).abs() < 1e-9);
        assert!((dev - var.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn merge_is_exact() {
        let mut a = JobStats::new(0, LogCfg::default());
        let mut b = JobStats::new(0, LogCfg::default());
        let mut all = JobStats::new(0, LogCfg::default());
        for i in 0..5000u64 {
            let lat = 1_000 + (i * 7919) % 100_000;
            let t = i * 10_000;
            let (s, dir) = if i % 3 == 0 {
                (&mut a, Dir::Read)
            } else {
                (&mut b, Dir::Write)
            };
            s.add_io(dir, 4096, 0, t, None, t + lat);
            all.add_io(dir, 4096, 0, t, None, t + lat);
            if i % 2 == 0 {
                a.add_io(Dir::Write, 4096, 0, t, None, t + lat / 2);
                all.add_io(Dir::Write, 4096, 0, t, None, t + lat / 2);
            }
        }
        let mut m = a.clone();
        m.merge(&b);
        for d in 0..3 {
            assert_eq!(m.clat[d].min, all.clat[d].min);
            assert_eq!(m.clat[d].max, all.clat[d].max);
            assert_eq!(m.clat[d].samples, all.clat[d].samples);
            assert!((m.clat[d].mean - all.clat[d].mean).abs() < 1e-6);
            let (_, _, _, d1) = m.clat[d].calc().unwrap_or_default();
            let (_, _, _, d2) = all.clat[d].calc().unwrap_or_default();
            assert!((d1 - d2).abs() < 1e-6 * d2.max(1.0));
            assert_eq!(m.clat_hist[d], all.clat_hist[d]);
        }
        assert_eq!(m.io_bytes, all.io_bytes);
        assert_eq!(m.lat_u, all.lat_u);
        assert_eq!(m.members, 2);
        assert_eq!(m.depth_maps(), all.depth_maps());
    }

    #[test]
    fn constant_rate_samples() {
        let mut s = JobStats::new(0, LogCfg::default());
        // 4 KiB every ms for 10 s: 4000 KiB/s, 1000 IOPS.
        for i in 0..10_000u64 {
            s.add_io(Dir::Write, 4096, 0, i * MS, None, i * MS + 1_000);
        }
        s.finish(0, 10_000 * MS, 0, 0, 0);
        let (min, max, mean, dev) = s.bw[1].calc().unwrap();
        assert_eq!((min, max), (4000, 4000));
        assert_eq!(mean, 4000.0);
        assert_eq!(dev, 0.0);
        // Windows end at 0.5, 1, ..., 9.5 s; the one ending at 10 s is not
        // sampled.
        assert_eq!(s.bw[1].samples, 19);
        let (imin, imax, imean, _) = s.iops[1].calc().unwrap();
        assert_eq!((imin, imax, imean), (1000, 1000, 1000.0));
        assert_eq!(s.runtime_ms[1], 10_000);
        assert_eq!(s.runtime_ms[0], 0);
    }

    #[test]
    fn for_job_and_end_sync() {
        let mut job = FioJob::new("j", "t");
        job.ioengine = IoEngine::Libaio;
        job.write_bw_log = Some(String::new());
        job.log_avg_msec = 250;
        let mut s = JobStats::for_job(&job, 0);
        assert!(s.engine_commits);
        assert_eq!(s.logs.len(), 1);
        assert_eq!(s.bw_sampler.avg_ms, 250);
        assert_eq!(s.iops_sampler.avg_ms, AVG_TIME_MS);
        s.add_io(Dir::Write, 4096, 0, 0, Some(100), 1_000);
        s.add_sync(1_000, 2_000);
        s.add_end_sync(2_000, 5_000);
        assert_eq!(s.sync.samples, 2);
        assert_eq!(s.total_sync, 1);
        let (depth, submit, _, tsub, _) = s.depth_maps();
        assert_eq!(depth[0], 2);
        assert_eq!((submit, tsub), ([0; 7], 0));
    }

    #[test]
    fn ramp_drops_early_ios() {
        let mut s = JobStats::new(5 * MS, LogCfg::default());
        for i in 0..10u64 {
            s.add_io(Dir::Read, 512, 0, i * MS, None, i * MS + 10);
        }
        assert_eq!(s.total_ios[0], 5);
    }

    #[test]
    fn lat_buckets() {
        let mut s = JobStats::new(0, LogCfg::default());
        for clat in [
            1,
            2,
            19,
            20,
            999,
            1_000,
            1_999,
            2_000,
            999_999,
            1_000_000,
            2_500_000_000,
        ] {
            s.add_io(Dir::Read, 512, 0, 0, None, clat);
        }
        assert_eq!(s.lat_n, [1, 1, 0, 1, 1, 0, 0, 0, 0, 1]);
        assert_eq!(s.lat_u, [2, 1, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(s.lat_m, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    }

    #[test]
    fn averaged_log_windows() {
        let cfg = LogCfg {
            avg_msec: 100,
            lat: true,
            ..LogCfg::default()
        };
        let mut s = JobStats::new(0, cfg);
        // One IO every 5 ms, lat 1000 ns, for 1 s.
        for i in 1..=200u64 {
            s.add_io(Dir::Write, 4096, 0, i * 5 * MS - 1_000, None, i * 5 * MS);
        }
        s.finish(0, 1_000 * MS + 1, 0, 0, 0);
        let lat = &s.logs[0];
        assert_eq!(lat.kind, LogKind::Lat);
        let text = String::from_utf8(lat.buf.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "100, 1000, 1, 0, 0");
        assert_eq!(lines.len(), 10);
        // The slat log exists and stays empty for a sync engine.
        assert!(s.logs[1].buf.is_empty());
    }

    #[test]
    fn memory_is_fixed() {
        let mut s = JobStats::new(0, LogCfg::default());
        let mut i = 0u64;
        let mut step = |s: &mut JobStats, n: u64| {
            for _ in 0..n {
                let lat = 500 + (i * 2_654_435_761) % 50_000_000;
                s.add_io(
                    Dir::ALL[(i % 2) as usize],
                    4096,
                    0,
                    i * 20_000,
                    None,
                    i * 20_000 + lat,
                );
                i += 1;
            }
        };
        step(&mut s, 100_000);
        let heap = s.heap_bytes();
        step(&mut s, 900_000);
        assert_eq!(s.heap_bytes(), heap);
        // Two clat histograms in use: 2 * 1856 * 8 bytes.
        assert_eq!(heap, 2 * PLAT_NR * 8);
        assert!(std::mem::size_of::<JobStats>() < 4096);
    }
}
