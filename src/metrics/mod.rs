//! Metrics: one code path that turns observations (a parsed trace, counter
//! samples, per-task and per-device snapshots) into `summary.json`. The
//! simulator fills `Observations` from its own state; live mode fills the
//! same structure from tracefs and /proc, so both sides are measured alike.

use crate::kernel::{Kernel, RunState};
use crate::sim::{Ns, NSEC_PER_SEC};
use crate::trace::Record;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod pressure;
pub mod stream;

/// Walk a `summary.json` value's leaves under dotted names: an object's
/// keys joined with `.`, an array's elements by their `name` (else their
/// index). `skip(parent, key)` leaves an object key out with all below it.
/// `wbsim compare`'s rows and `wbsim sweep`'s columns are named by it.
pub fn summary_leaves(
    v: &serde_json::Value,
    prefix: &str,
    skip: &dyn Fn(&str, &str) -> bool,
    leaf: &mut dyn FnMut(&str, &serde_json::Value),
) {
    use serde_json::Value;
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if !skip(prefix, k) {
                    summary_leaves(x, &join(k), skip, leaf);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                let key = x
                    .get("name")
                    .and_then(|n| n.as_str())
                    .map_or_else(|| i.to_string(), String::from);
                summary_leaves(x, &format!("{prefix}.{key}"), skip, leaf);
            }
        }
        _ => leaf(prefix, v),
    }
}
pub use stream::TraceStats;

#[derive(Clone, Debug, Default, Serialize)]
pub struct VmSample {
    pub t: Ns,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_dirtied: u64,
    pub nr_written: u64,
}

#[derive(Clone, Debug, Default)]
pub struct TaskSnap {
    /// Files created (fs_mark).
    pub files: u64,
    /// Writeback passes a dirtier ran itself, and the pages they wrote
    /// (legacy throttling; the kernel does not expose these, so live runs
    /// leave them at 0).
    pub writeback_calls: u64,
    pub writeback_pages: u64,
    pub wchar: u64,
    pub nvcsw: u64,
    pub nivcsw: u64,
    pub utime: Ns,
    pub stime: Ns,
}

#[derive(Clone, Debug, Default)]
pub struct TaskObs {
    pub comm: String,
    pub pid: u32,
    pub job: Option<String>,
    pub start: TaskSnap,
    pub end: TaskSnap,
}

/// A device's /sys/block/DEV/stat figures at one time (times in ns).
#[derive(Clone, Debug, Default)]
pub struct DevSnap {
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    pub read_ticks_ns: u64,
    /// Time with requests in flight (fio's `disk_util` is its share of the
    /// elapsed time).
    pub io_ticks_ns: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    /// Metadata write requests (REQ_META) and their sectors, and of those
    /// the journal's (REQ_SYNC | REQ_META): what a kernel trace's rwbs
    /// shows as WM and WSM. The simulator knows them; /sys/block/DEV/stat
    /// does not.
    pub meta: Option<MetaSnap>,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct MetaSnap {
    pub ios: u64,
    pub sectors: u64,
    pub journal_ios: u64,
    pub journal_sectors: u64,
}

#[derive(Clone, Debug, Default)]
pub struct DevObs {
    pub name: String,
    pub start: DevSnap,
    pub end: DevSnap,
}

/// Everything the summary is computed from.
#[derive(Clone, Debug, Default)]
pub struct Observations {
    pub scenario: String,
    pub seed: u64,
    pub dirty_throttle: String,
    pub duration: Ns,
    pub window: (Ns, Ns),
    pub page_size: u64,
    pub samples: Vec<VmSample>,
    pub tasks: Vec<TaskObs>,
    pub devices: Vec<DevObs>,
    pub trace: Vec<Record>,
    /// The trace's statistics, kept as the run went (the simulator's
    /// streamed trace); None: computed from `trace`.
    pub trace_stats: Option<TraceStats>,
    /// The run was stopped at this simulated time, and why ("SIGINT",
    /// "trace limit").
    pub stopped_at: Option<Ns>,
    pub stopped_by: Option<&'static str>,
    /// The bdis of the scenario's devices ("7:0"); trace lines of other
    /// bdis are left out of the statistics and counted as contamination.
    pub bdis: Vec<String>,
    /// Live mode under cgroup v2: the inode of the writers' cgroup. The
    /// writeback of those devices then runs in that cgroup's wb, whose trace
    /// lines carry `cgroup_ino=` this; the devices' lines of other wbs (the
    /// root cgroup's) are left out and counted apart.
    pub cgroup_ino: Option<u64>,
    pub events_simulated: Option<u64>,
    /// The scenario's cgroups (empty without them): `io.stat` over all
    /// devices at the window's start and at the end, and `memory.stat`.
    pub cgroups: Vec<CgroupObs>,
}

/// A cgroup's figures: its name and `cgroup_ino`, its `io.stat` summed
/// over the devices at the window's start and at the end, and its
/// page-cache pages at the end.
#[derive(Clone, Debug, Default)]
pub struct CgroupObs {
    pub name: String,
    pub ino: u64,
    pub start: crate::kernel::cgroup::IoStat,
    pub end: crate::kernel::cgroup::IoStat,
    pub file_dirty: u64,
    pub file_writeback: u64,
    /// Its pressure's stall times (io some/full, memory some/full, ns) at
    /// the window's start and at the end.
    pub psi_start: [Ns; 4],
    pub psi_end: [Ns; 4],
}

/// Records kept while the simulation runs.
#[derive(Default)]
pub struct Recorder {
    pub samples: Vec<VmSample>,
    pub task_start: BTreeMap<usize, TaskSnap>,
    pub dev_start: Vec<DevSnap>,
    /// Each cgroup's io.stat (all devices) at the window's start.
    pub cg_start: Vec<crate::kernel::cgroup::IoStat>,
    /// Each cgroup's pressure stall times at the window's start.
    pub cg_psi_start: Vec<[Ns; 4]>,
    pub window_started: bool,
    /// `/proc/diskstats` once a second (`diskstats`): each line is the
    /// time in seconds, then the device's line as the kernel prints it.
    pub diskstats: String,
    /// When the next `diskstats` snapshot is due.
    pub diskstats_next: Ns,
}

impl Kernel {
    fn task_snap(&self, i: usize) -> TaskSnap {
        let t = &self.tasks[i];
        TaskSnap {
            files: t.files_created,
            writeback_calls: t.legacy_writeback_calls,
            writeback_pages: t.legacy_pages_written,
            wchar: t.wchar,
            nvcsw: t.nvcsw,
            nivcsw: t.nivcsw,
            utime: t.utime,
            stime: t.stime,
        }
    }

    fn dev_snap(&self, i: usize) -> DevSnap {
        let s = &self.devs[i].stat;
        DevSnap {
            read_ios: s.read_ios,
            read_merges: s.read_merges,
            read_sectors: s.read_sectors,
            read_ticks_ns: s.read_ticks_ns,
            io_ticks_ns: s.io_ticks_at(self.now()),
            write_ios: s.write_ios,
            write_merges: s.write_merges,
            write_sectors: s.write_sectors,
            meta: Some(MetaSnap {
                ios: s.meta_write_ios,
                sectors: s.meta_write_sectors,
                journal_ios: s.journal_write_ios,
                journal_sectors: s.journal_write_sectors,
            }),
        }
    }

    /// Periodic sample; the first one at or after the warmup also takes the
    /// window-start snapshots.
    pub fn sample(&mut self) {
        let now = self.now();
        self.rec.samples.push(VmSample {
            t: now,
            nr_dirty: self.vm.nr_dirty,
            nr_writeback: self.vm.nr_writeback,
            nr_dirtied: self.vm.nr_dirtied,
            nr_written: self.vm.nr_written,
        });
        self.reclaim_sample();
        self.psi_sample();
        for d in 0..self.devs.len() {
            if matches!(self.devs[d].driver, crate::drivers::Driver::Bcache(_)) {
                self.bcache_sample(d);
            }
        }
        if now >= self.rec.diskstats_next {
            self.diskstats_snapshot(now);
        }
        if !self.rec.window_started && now >= self.sc.run.warmup {
            self.rec.window_started = true;
            self.rec.task_start = (0..self.tasks.len())
                .map(|i| (i, self.task_snap(i)))
                .collect();
            self.rec.dev_start = (0..self.devs.len()).map(|i| self.dev_snap(i)).collect();
            self.rec.cg_start = (0..self.cg.list.len()).map(|c| self.cg_io(c)).collect();
            self.rec.cg_psi_start = (0..self.cg.list.len())
                .map(|c| self.psi_cgroup_totals(c))
                .collect();
        }
    }

    /// Append every device's `/proc/diskstats` line at `now` to
    /// `rec.diskstats`, and set the next snapshot for the next whole second
    /// (the samples are `run.sample_interval` apart, so a snapshot falls on
    /// the first sample at or after each second).
    fn diskstats_snapshot(&mut self, now: Ns) {
        use std::fmt::Write as _;
        for d in &self.devs {
            let _ = writeln!(
                self.rec.diskstats,
                "{}.{:06} {}",
                now / NSEC_PER_SEC,
                now % NSEC_PER_SEC / 1000,
                d.stat.diskstats_line(d.major, d.minor, &d.name, now)
            );
        }
        self.rec.diskstats_next = (now / NSEC_PER_SEC + 1) * NSEC_PER_SEC;
    }

    /// A cgroup's io.stat over all devices.
    fn cg_io(&self, c: usize) -> crate::kernel::cgroup::IoStat {
        let mut t = crate::kernel::cgroup::IoStat::default();
        for s in &self.cg.list[c].io {
            t.rbytes += s.rbytes;
            t.wbytes += s.wbytes;
            t.rios += s.rios;
            t.wios += s.wios;
        }
        t
    }

    /// Gather observations at the end of the run. `trace` is the trace's
    /// statistics, kept from its lines as they were printed (read by the
    /// same parser live mode uses).
    pub fn observations(&self, mut trace: TraceStats) -> Observations {
        trace.settle();
        let tasks = (0..self.tasks.len())
            .filter(|&i| self.tasks[i].job.is_some() || self.tasks[i].state != RunState::Dead)
            .map(|i| {
                let t = &self.tasks[i];
                TaskObs {
                    comm: t.comm.clone(),
                    pid: t.pid,
                    job: t.job.map(|j| self.sc.jobs[j].name.clone()),
                    start: self.rec.task_start.get(&i).cloned().unwrap_or_default(),
                    end: self.task_snap(i),
                }
            })
            .collect();
        let devices = (0..self.devs.len())
            .map(|i| DevObs {
                name: self.devs[i].name.clone(),
                start: self.rec.dev_start.get(i).cloned().unwrap_or_default(),
                end: self.dev_snap(i),
            })
            .collect();
        Observations {
            scenario: self.sc.name.clone(),
            seed: self.sc.run.seed,
            dirty_throttle: self.sc.run.dirty_throttle.name().into(),
            duration: self.sc.run.duration,
            window: (self.sc.run.warmup, self.sc.run.duration),
            page_size: self.page_size(),
            samples: self.rec.samples.clone(),
            tasks,
            devices,
            trace: Vec::new(),
            trace_stats: Some(trace),
            stopped_at: self.stopped_at,
            stopped_by: self.stopped_by,
            bdis: self.bdis.iter().map(|b| b.name.clone()).collect(),
            cgroup_ino: None,
            events_simulated: Some(self.events_simulated()),
            cgroups: if self.cg.enabled {
                (0..self.cg.list.len())
                    .map(|c| {
                        let g = &self.cg.list[c];
                        CgroupObs {
                            name: g.name.clone(),
                            ino: g.ino,
                            start: self.rec.cg_start.get(c).copied().unwrap_or_default(),
                            end: self.cg_io(c),
                            file_dirty: g.file_dirty * self.page_size(),
                            file_writeback: g.file_writeback * self.page_size(),
                            psi_start: self.rec.cg_psi_start.get(c).copied().unwrap_or_default(),
                            psi_end: self.psi_cgroup_totals(c),
                        }
                    })
                    .collect()
            } else {
                Vec::new()
            },
        }
    }
}

// ---- the summary -------------------------------------------------------------

/// Percentile with linear interpolation between closest ranks (numpy's
/// default, and the host rig's analysis).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let k = (sorted.len() - 1) as f64 * p;
    let i = k.floor() as usize;
    let j = (i + 1).min(sorted.len() - 1);
    sorted[i] + (sorted[j] - sorted[i]) * (k - i as f64)
}

/// [`percentile`] of the sorted list that `counts` (value: how many times,
/// in order of value) run-length codes, read without building it (two
/// passes).
pub fn percentile_of_runs(counts: impl Iterator<Item = (i64, u64)> + Clone, p: f64) -> f64 {
    let n: u64 = counts.clone().map(|c| c.1).sum();
    if n == 0 {
        return f64::NAN;
    }
    let k = (n - 1) as f64 * p;
    let i = k.floor() as u64;
    let j = (i + 1).min(n - 1);
    // the values at ranks i and j
    let (mut vi, mut vj) = (None, None);
    let mut seen = 0u64;
    for (v, c) in counts {
        seen += c;
        if vi.is_none() && i < seen {
            vi = Some(v as f64);
        }
        if j < seen {
            vj = Some(v as f64);
            break;
        }
    }
    let (si, sj) = (vi.unwrap_or(f64::NAN), vj.unwrap_or(f64::NAN));
    si + (sj - si) * (k - i as f64)
}

pub(crate) fn r3(x: f64) -> f64 {
    if x.is_finite() {
        (x * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

#[derive(Clone, Debug, Serialize, Default, PartialEq, Deserialize)]
pub struct Pct {
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
}

impl Pct {
    pub fn of(mut v: Vec<f64>) -> Pct {
        v.sort_by(|a, b| a.total_cmp(b));
        Pct {
            p10: r3(percentile(&v, 0.1)),
            p50: r3(percentile(&v, 0.5)),
            p90: r3(percentile(&v, 0.9)),
        }
    }
}

#[derive(Clone, Debug, Serialize, Default, PartialEq, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub p50: f64,
    pub mean: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(mut v: Vec<f64>) -> Spread {
        if v.is_empty() {
            return Spread::default();
        }
        v.sort_by(|a, b| a.total_cmp(b));
        Spread {
            min: r3(v[0]),
            p50: r3(percentile(&v, 0.5)),
            mean: r3(v.iter().sum::<f64>() / v.len() as f64),
            max: r3(v[v.len() - 1]),
        }
    }
}

#[derive(Serialize, Debug, Deserialize)]
pub struct Window {
    pub start_s: f64,
    pub end_s: f64,
}

#[derive(Serialize, Debug, Deserialize)]
pub struct JobSummary {
    pub name: String,
    pub tasks: usize,
    pub aggregate_mib_s: f64,
    pub per_task_mib_s: Spread,
    pub voluntary_cs_per_task_s: Spread,
    pub involuntary_cs_per_task_s: Spread,
    /// CPU seconds per second, summed over the job's tasks.
    pub cpu_user: f64,
    pub cpu_system: f64,
    /// Writeback passes run by the job's own tasks per second (legacy
    /// throttling), and the MiB/s they wrote.
    pub dirtier_writeback_calls_s: f64,
    pub dirtier_writeback_mib_s: f64,
    /// Files created per second in the window (fs_mark).
    pub files_per_s: f64,
}

#[derive(Serialize, Debug, Deserialize)]
pub struct DevSummary {
    pub name: String,
    pub write_mib_s: f64,
    pub write_iops: f64,
    pub avg_request_kib: f64,
    pub write_merges_s: f64,
    /// Reads (only when the device read in the window): MiB/s, IOPS,
    /// average request and merges per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_mib_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_iops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_read_request_kib: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_merges_s: Option<f64>,
    /// Of the writes: metadata (WM + WSM) and journal (WSM) IOPS and MiB/s
    /// (simulation only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta_write_iops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta_write_mib_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_write_iops: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journal_write_mib_s: Option<f64>,
}

#[derive(Serialize, Debug, Deserialize)]
pub struct EventSummary {
    pub count: usize,
    pub per_s: f64,
    pub fields: BTreeMap<String, Pct>,
}

#[derive(Serialize, Debug, Deserialize)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    pub dirty_throttle: String,
    pub duration_s: f64,
    pub window: Window,
    pub dirtying_mib_s: f64,
    pub jobs: Vec<JobSummary>,
    pub devices: Vec<DevSummary>,
    /// Global dirty pages (nr_dirty + nr_writeback), sampled.
    pub dirty_pages: Pct,
    pub nr_dirty: Pct,
    pub nr_writeback: Pct,
    /// Voluntary context switches per task per second, all job tasks.
    pub voluntary_cs_per_task_s: Spread,
    pub involuntary_cs_per_task_s: Spread,
    /// The CPU time of the tasks outside the jobs (kernel threads: the
    /// flusher's kworkers, kswapd, jbd2, the loop worker) in the window, in
    /// CPU-seconds per second: what /proc/stat's busy time less the
    /// writers' shows on a machine with nothing else running. None where
    /// they are not observed (live mode).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kthreads_cpu: Option<f64>,
    pub trace: BTreeMap<String, EventSummary>,
    /// Trace lines in the window for bdis that are not the scenario's
    /// (other devices' writeback on a live machine).
    pub other_bdi_lines: u64,
    /// Live mode under cgroup v2: trace lines in the window for the
    /// scenario's bdis but another cgroup's wb (`cgroup_ino` not the
    /// writers' cgroup), left out of the statistics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_cgroup_lines: Option<u64>,
    /// A run stopped before its end: the simulated time it stopped at, and
    /// why: "SIGINT" (Ctrl-C) or "trace limit" (its trace passed 2 GiB
    /// without --force). Its figures cover the run up to there
    /// (`duration_s` and the window end there too).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stopped_at_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stopped_by: Option<String>,
    pub events_simulated: Option<u64>,
    /// Per cgroup (a run with cgroups only): io.stat bytes over the run,
    /// MiB/s in the window, and memory.stat at the end.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub cgroups: Vec<CgroupSummary>,
    /// simoop's final figures (a run with a simoop job only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub simoop: Option<crate::workload::simoop::SimoopSummary>,
    /// Memory and IO pressure (PSI), read back from `pressure.txt`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pressure: Option<pressure::PressureSummary>,
    /// Per bcache device (a run with one only).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub bcache: Vec<crate::drivers::bcache::BcacheSummary>,
    /// Per fio job (a run with fio jobs only): completion latency
    /// percentiles over the whole job, as fio's own report has them.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub fio: Vec<crate::workload::fio::report::FioSummary>,
}

#[derive(Serialize, Debug, Deserialize)]
pub struct CgroupSummary {
    pub name: String,
    pub cgroup_ino: u64,
    /// io.stat over the whole run, all devices.
    pub rbytes: u64,
    pub wbytes: u64,
    pub rios: u64,
    pub wios: u64,
    /// io.stat's growth in the window, in MiB/s.
    pub read_mib_s: f64,
    pub write_mib_s: f64,
    /// memory.stat at the end of the run, bytes.
    pub file_dirty: u64,
    pub file_writeback: u64,
    /// `io.pressure` and `memory.pressure`: the stall time in the window
    /// as a percentage of the window (`some` and `full` of each).
    #[serde(default)]
    pub io_some_pct: f64,
    #[serde(default)]
    pub io_full_pct: f64,
    #[serde(default)]
    pub memory_some_pct: f64,
    #[serde(default)]
    pub memory_full_pct: f64,
}

const MIB: f64 = 1048576.0;

impl Summary {
    pub fn compute(o: &Observations) -> Summary {
        let (w0, w1) = o.window;
        let win_s = (w1 - w0) as f64 / NSEC_PER_SEC as f64;
        let per_s = |d: u64| if win_s > 0.0 { d as f64 / win_s } else { 0.0 };
        // a cgroup's stall time in the window, as a percentage of it
        let stall_pct = |c: &CgroupObs, s: usize| {
            let d = c.psi_end[s].saturating_sub(c.psi_start[s]) as f64;
            if win_s > 0.0 {
                r3(d / NSEC_PER_SEC as f64 / win_s * 100.0)
            } else {
                0.0
            }
        };
        let mut jobs: Vec<JobSummary> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for t in &o.tasks {
            if let Some(j) = &t.job {
                if !names.contains(j) {
                    names.push(j.clone());
                }
            }
        }
        let mut all_v = Vec::new();
        let mut all_iv = Vec::new();
        let mut total = 0.0;
        for name in names {
            let ts: Vec<&TaskObs> = o
                .tasks
                .iter()
                .filter(|t| t.job.as_ref() == Some(&name))
                .collect();
            let rate: Vec<f64> = ts
                .iter()
                .map(|t| per_s(t.end.wchar - t.start.wchar) / MIB)
                .collect();
            let v: Vec<f64> = ts
                .iter()
                .map(|t| per_s(t.end.nvcsw - t.start.nvcsw))
                .collect();
            let iv: Vec<f64> = ts
                .iter()
                .map(|t| per_s(t.end.nivcsw - t.start.nivcsw))
                .collect();
            let user: u64 = ts.iter().map(|t| t.end.utime - t.start.utime).sum();
            let sys: u64 = ts.iter().map(|t| t.end.stime - t.start.stime).sum();
            let files: u64 = ts.iter().map(|t| t.end.files - t.start.files).sum();
            let wb_calls: u64 = ts
                .iter()
                .map(|t| t.end.writeback_calls - t.start.writeback_calls)
                .sum();
            let wb_pages: u64 = ts
                .iter()
                .map(|t| t.end.writeback_pages - t.start.writeback_pages)
                .sum();
            let agg: f64 = rate.iter().sum();
            total += agg;
            all_v.extend(v.iter().copied());
            all_iv.extend(iv.iter().copied());
            jobs.push(JobSummary {
                name,
                tasks: ts.len(),
                aggregate_mib_s: r3(agg),
                per_task_mib_s: Spread::of(rate),
                voluntary_cs_per_task_s: Spread::of(v),
                involuntary_cs_per_task_s: Spread::of(iv),
                cpu_user: r3(per_s(user) / NSEC_PER_SEC as f64),
                cpu_system: r3(per_s(sys) / NSEC_PER_SEC as f64),
                dirtier_writeback_calls_s: r3(per_s(wb_calls)),
                dirtier_writeback_mib_s: r3(per_s(wb_pages * o.page_size) / MIB),
                files_per_s: r3(per_s(files)),
            });
        }
        let kthreads: Vec<&TaskObs> = o.tasks.iter().filter(|t| t.job.is_none()).collect();
        let kthreads_cpu = (!kthreads.is_empty()).then(|| {
            let ns: u64 = kthreads
                .iter()
                .map(|t| (t.end.utime + t.end.stime) - (t.start.utime + t.start.stime))
                .sum();
            r3(per_s(ns) / NSEC_PER_SEC as f64)
        });
        let devices = o
            .devices
            .iter()
            .map(|d| {
                let ios = d.end.write_ios - d.start.write_ios;
                let sec = d.end.write_sectors - d.start.write_sectors;
                let rios = d.end.read_ios - d.start.read_ios;
                let rsec = d.end.read_sectors - d.start.read_sectors;
                let rmerges = d.end.read_merges - d.start.read_merges;
                let read = |v: f64| (rios > 0).then(|| r3(v));
                let meta = |f: &dyn Fn(&MetaSnap) -> f64| -> Option<f64> {
                    let (a, b) = (d.start.meta?, d.end.meta?);
                    let delta = MetaSnap {
                        ios: b.ios - a.ios,
                        sectors: b.sectors - a.sectors,
                        journal_ios: b.journal_ios - a.journal_ios,
                        journal_sectors: b.journal_sectors - a.journal_sectors,
                    };
                    (delta.ios > 0).then(|| r3(f(&delta)))
                };
                DevSummary {
                    name: d.name.clone(),
                    write_mib_s: r3(per_s(sec * 512) / MIB),
                    write_iops: r3(per_s(ios)),
                    avg_request_kib: r3(if ios > 0 {
                        sec as f64 / 2.0 / ios as f64
                    } else {
                        0.0
                    }),
                    write_merges_s: r3(per_s(d.end.write_merges - d.start.write_merges)),
                    read_mib_s: read(per_s(rsec * 512) / MIB),
                    read_iops: read(per_s(rios)),
                    avg_read_request_kib: read(rsec as f64 / 2.0 / rios.max(1) as f64),
                    read_merges_s: read(per_s(rmerges)),
                    meta_write_iops: meta(&|m: &MetaSnap| per_s(m.ios)),
                    meta_write_mib_s: meta(&|m: &MetaSnap| per_s(m.sectors * 512) / MIB),
                    journal_write_iops: meta(&|m: &MetaSnap| per_s(m.journal_ios)),
                    journal_write_mib_s: meta(&|m: &MetaSnap| per_s(m.journal_sectors * 512) / MIB),
                }
            })
            .collect();
        let inwin: Vec<&VmSample> = o
            .samples
            .iter()
            .filter(|s| s.t >= w0 && s.t <= w1)
            .collect();
        let figures = match &o.trace_stats {
            Some(st) => st.finish(&o.bdis, per_s),
            None => {
                let mut st = TraceStats::new((w0, w1), o.cgroup_ino);
                for r in &o.trace {
                    st.add(r);
                }
                st.finish(&o.bdis, per_s)
            }
        };
        Summary {
            scenario: o.scenario.clone(),
            seed: o.seed,
            dirty_throttle: o.dirty_throttle.clone(),
            duration_s: r3(o.duration as f64 / NSEC_PER_SEC as f64),
            window: Window {
                start_s: r3(w0 as f64 / NSEC_PER_SEC as f64),
                end_s: r3(w1 as f64 / NSEC_PER_SEC as f64),
            },
            dirtying_mib_s: r3(total),
            jobs,
            devices,
            dirty_pages: Pct::of(
                inwin
                    .iter()
                    .map(|s| (s.nr_dirty + s.nr_writeback) as f64)
                    .collect(),
            ),
            nr_dirty: Pct::of(inwin.iter().map(|s| s.nr_dirty as f64).collect()),
            nr_writeback: Pct::of(inwin.iter().map(|s| s.nr_writeback as f64).collect()),
            voluntary_cs_per_task_s: Spread::of(all_v),
            involuntary_cs_per_task_s: Spread::of(all_iv),
            kthreads_cpu,
            trace: figures.trace,
            other_bdi_lines: figures.other_bdi_lines,
            other_cgroup_lines: figures.other_cgroup_lines,
            stopped_at_s: o.stopped_at.map(|t| r3(t as f64 / NSEC_PER_SEC as f64)),
            stopped_by: o.stopped_by.map(str::to_string),
            events_simulated: o.events_simulated,
            simoop: None,
            pressure: None,
            bcache: Vec::new(),
            fio: Vec::new(),
            cgroups: o
                .cgroups
                .iter()
                .map(|c| CgroupSummary {
                    name: c.name.clone(),
                    cgroup_ino: c.ino,
                    rbytes: c.end.rbytes,
                    wbytes: c.end.wbytes,
                    rios: c.end.rios,
                    wios: c.end.wios,
                    read_mib_s: r3(per_s(c.end.rbytes - c.start.rbytes) / MIB),
                    write_mib_s: r3(per_s(c.end.wbytes - c.start.wbytes) / MIB),
                    file_dirty: c.file_dirty,
                    file_writeback: c.file_writeback,
                    io_some_pct: stall_pct(c, 0),
                    io_full_pct: stall_pct(c, 1),
                    memory_some_pct: stall_pct(c, 2),
                    memory_full_pct: stall_pct(c, 3),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn percentiles_interpolate() {
        let v = vec![1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&v, 0.5), 3.0);
        assert_eq!(percentile(&v, 0.1), 1.4);
        assert!(percentile(&[], 0.5).is_nan());
        assert_eq!(Pct::of(vec![3.0, 1.0, 2.0]).p50, 2.0);
    }
}

#[cfg(test)]
mod filter_tests {
    use super::*;

    fn obs(cgroup_ino: Option<u64>) -> Observations {
        let text = "\
              dd-10      [000] .....     1.000000: balance_dirty_pages: bdi 7:64: limit=100 setpoint=80 dirty=70 wb_setpoint=80 wb_dirty=70 dirty_ratelimit=5120 task_ratelimit=5000 dirtied=32 dirtied_pause=32 paused=0 pause=10 period=10 think=0 cgroup_ino=4242
    kworker/u4:1-20      [001] .....     1.100000: writeback_written: bdi 7:64: sb_dev 0:0 nr_pages=100 sync_mode=0 kupdate=0 range_cyclic=1 background=1 reason=background cgroup_ino=4242
    kworker/u4:1-20      [001] .....     1.200000: writeback_written: bdi 7:64: sb_dev 0:0 nr_pages=3 sync_mode=0 kupdate=1 range_cyclic=1 background=0 reason=periodic cgroup_ino=1
    kworker/u4:2-21      [001] .....     1.300000: writeback_written: bdi 8:0: sb_dev 0:0 nr_pages=7 sync_mode=0 kupdate=1 range_cyclic=1 background=0 reason=periodic cgroup_ino=1
    kworker/u4:1-20      [001] .....     1.400000: global_dirty_state: dirty=1 writeback=2 bg_thresh=3 thresh=4 limit=5 dirtied=6 written=7
";
        Observations {
            duration: 2 * NSEC_PER_SEC,
            window: (0, 2 * NSEC_PER_SEC),
            page_size: 4096,
            trace: crate::trace::parse(text),
            bdis: vec!["7:64".into()],
            cgroup_ino,
            ..Default::default()
        }
    }

    #[test]
    fn v2_live_keeps_the_writers_wb_only() {
        let s = Summary::compute(&obs(Some(4242)));
        assert_eq!(s.other_bdi_lines, 1);
        assert_eq!(s.other_cgroup_lines, Some(1));
        assert_eq!(s.trace["writeback_written"].count, 1);
        assert_eq!(s.trace["balance_dirty_pages"].count, 1);
        assert_eq!(s.trace["global_dirty_state"].count, 1);
    }

    #[test]
    fn without_a_cgroup_every_wb_of_the_device_counts() {
        let s = Summary::compute(&obs(None));
        assert_eq!(s.other_bdi_lines, 1);
        assert_eq!(s.other_cgroup_lines, None);
        assert_eq!(s.trace["writeback_written"].count, 2);
        let j = serde_json::to_string(&s).unwrap();
        assert!(!j.contains("other_cgroup_lines"), "{j}");
    }
}
