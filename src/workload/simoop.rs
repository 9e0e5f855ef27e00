//! simoop (Chris Mason's benchmark of the VM pressure of a Hadoop-like
//! load, mason/simoop.git), with its own flags (`jobs.NAME.args`):
//!
//! `-t N` workers, each with `-m MB` of anonymous working set allocated
//! once and kept; a worker's loop is a timed allocation of `-M MB`
//! (allocated page by page through `Kernel::page_alloc`, zeroed, freed at
//! once: "Allocation latency"), `-T N` reads of `-R MB` from random files,
//! issued together and timed until the last is in ("Read latency"), and
//! `-T N` buffered writes of `-W MB` to random files ("Write latency"; each
//! logs the file's inode, as its mtime update does). `-C N` threads burn
//! CPU; `-D N` du threads stat every file of one directory each (du `i`
//! walks directory `i`), one pass every report interval, filling the
//! dentry and inode caches (a miss reads the inode's cluster). Every file
//! of every directory (`-n` per directory, `-f MB` each) is laid out on
//! disk before the run and not cached. `-w S` is the warm-up (statistics
//! reset after it), `-r S` the run after it, `-i S` the report interval.
//! Directories are filesystems: a directory's last path component names
//! one of `[filesystems]`.
//!
//! Output (`simoop.txt`), every interval and as `Final stats`: the three
//! latency lines (microseconds, fio's histogram: no samples are kept),
//! `work rate` (worker loops per second, wbsim's reading of simoop's
//! "made up number") and `alloc stall rate` (the `allocstall_*` counters'
//! growth per second), each with its average and the percentiles of the
//! per-interval rates.
//!
//! A read's copy into its buffer, which simoop allocated for it and has
//! not touched, faults the buffer in page by page (`-T` × `-R MB` of
//! anonymous pages, through the allocator and direct reclaim, so a read
//! can sleep in the ≤ 5.8 XFS inode shrinker); the seed thread's
//! direct-reclaim trace found 91% of the stalls to be such faults, in
//! read() or on the `-M` area. Each page faulted in costs
//! `machine.cost.page_fault` plus its zeroing.
//!
//! Not modelled: the IO threads as tasks of their own (a worker issues its
//! `-T` reads together and its writes one after another, and the threads'
//! creation, which the seed's latencies include, is not charged), the
//! think time over the working set, the write buffers' faults.

use crate::kernel::{Action, Body, Kernel, Pid};
use crate::mm::page_alloc::Gfp;
use crate::scenario::raw::{err, Origin, ScenarioError};
use crate::scenario::{Job, JobKind, Reader};
use crate::sim::{Ns, NSEC_PER_SEC};
use crate::workload::fio::stats::Hist;

/// simoop's command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimoopArgs {
    pub threads: u64,
    pub ws_mb: u64,
    pub alloc_mb: u64,
    pub cpu_threads: u64,
    pub io_threads: u64,
    pub du_threads: u64,
    pub file_mb: u64,
    pub read_mb: u64,
    pub write_mb: u64,
    pub runtime_s: u64,
    pub warmup_s: u64,
    pub interval_s: u64,
    pub files_per_dir: u64,
    pub dirs: Vec<String>,
}

impl SimoopArgs {
    /// The flags again, every one given (`parse` reads them back), without
    /// the directories.
    pub fn flags(&self) -> String {
        format!(
            "-t {} -m {} -M {} -C {} -T {} -D {} -f {} -R {} -W {} -r {} -w {} -i {} -n {}",
            self.threads,
            self.ws_mb,
            self.alloc_mb,
            self.cpu_threads,
            self.io_threads,
            self.du_threads,
            self.file_mb,
            self.read_mb,
            self.write_mb,
            self.runtime_s,
            self.warmup_s,
            self.interval_s,
            self.files_per_dir
        )
    }

    /// Parse simoop's flags (`-t 512`, `-R1`: the value may follow at once).
    pub fn parse(s: &str) -> Result<SimoopArgs, String> {
        let mut a = SimoopArgs {
            threads: 16,
            ws_mb: 0,
            alloc_mb: 64,
            cpu_threads: 0,
            io_threads: 1,
            du_threads: 0,
            file_mb: 64,
            read_mb: 1,
            write_mb: 1,
            runtime_s: 60,
            warmup_s: 0,
            interval_s: 10,
            files_per_dir: 16,
            dirs: Vec::new(),
        };
        let mut it = s.split_whitespace();
        while let Some(w) = it.next() {
            let Some(flag) = w.strip_prefix('-') else {
                a.dirs.push(w.to_string());
                continue;
            };
            let mut chars = flag.chars();
            let Some(c) = chars.next() else {
                return Err("a lone `-` in simoop's flags".into());
            };
            let rest: String = chars.collect();
            let val = if rest.is_empty() {
                it.next()
                    .ok_or_else(|| format!("simoop flag `-{c}` needs a number"))?
                    .to_string()
            } else {
                rest
            };
            let v: u64 = val
                .parse()
                .map_err(|_| format!("simoop flag `-{c}`: `{val}` is not a whole number"))?;
            match c {
                't' => a.threads = v,
                'm' => a.ws_mb = v,
                'M' => a.alloc_mb = v,
                'C' => a.cpu_threads = v,
                'T' => a.io_threads = v,
                'D' => a.du_threads = v,
                'f' => a.file_mb = v,
                'R' => a.read_mb = v,
                'W' => a.write_mb = v,
                'r' => a.runtime_s = v,
                'w' => a.warmup_s = v,
                'i' => a.interval_s = v,
                'n' => a.files_per_dir = v,
                _ => {
                    return Err(format!(
                        "simoop flag `-{c}` is not modelled; expected -t -m -M -C -T -D -f -R -W -r -w -i -n"
                    ))
                }
            }
        }
        if a.dirs.is_empty() {
            return Err("simoop needs at least one directory".into());
        }
        if a.threads == 0
            || a.interval_s == 0
            || a.files_per_dir == 0
            || a.file_mb == 0
            || a.read_mb == 0
            || a.write_mb == 0
        {
            return Err("simoop's -t, -i, -n, -f, -R and -W must be at least 1".into());
        }
        if a.read_mb > a.file_mb || a.write_mb > a.file_mb {
            return Err(format!(
                "simoop's -R {} and -W {} must fit in a file of -f {} MB",
                a.read_mb, a.write_mb, a.file_mb
            ));
        }
        Ok(a)
    }
}

/// The keys of a simoop job: `args`, whose directories name filesystems.
pub(crate) fn read_job(
    r: &mut Reader,
    jname: &str,
    jorigin: &Origin,
    filesystems: &[crate::scenario::Filesystem],
    job: &mut Job,
) -> Result<(), ScenarioError> {
    let path = format!("jobs.{jname}.args");
    let Some((s, e)) = r.string(&path, "simoop's flags as a string")? else {
        return err(
            jorigin,
            format!("simoop job `{jname}` needs `args`, e.g. \"-t 16 -m 64 -M 16 -C 2 -D 1 /xfs0 /xfs1\""),
        );
    };
    let a = SimoopArgs::parse(&s).map_err(|m| ScenarioError {
        origin: e.origin.clone(),
        msg: m,
    })?;
    let mut sbs = Vec::new();
    for d in &a.dirs {
        let name = d.trim_end_matches('/').rsplit('/').next().unwrap_or("");
        match filesystems.iter().position(|f| f.name == name) {
            Some(i) => sbs.push(i),
            None => {
                let known: Vec<_> = filesystems.iter().map(|f| f.name.as_str()).collect();
                return err(
                    &e.origin,
                    format!("simoop directory `{d}`: its last component must name a filesystem, one of {known:?}"),
                );
            }
        }
    }
    job.filesystem = sbs[0];
    job.kind = JobKind::Simoop(Box::new((a, sbs)));
    Ok(())
}

/// A simoop task's part.
#[derive(Clone, Debug)]
pub enum Role {
    Worker(WorkerStage),
    Burner,
    Du { dir: usize, next: u64, misses: u64 },
    Reporter,
}

#[derive(Clone, Debug)]
pub enum WorkerStage {
    /// Allocating the working set: pages left.
    WorkingSet(u64),
    /// The timed allocation: pages left, its start.
    Alloc {
        left: u64,
        start: Ns,
    },
    /// The reads, issued (`files`: (inode, first page, last page)).
    Read {
        files: Vec<(usize, u64, u64)>,
        start: Ns,
        issued: bool,
    },
    /// The reads are in: each read() copies its `-R MB` into a buffer
    /// simoop allocated for it, untouched until then, so the copy faults
    /// the buffer in page by page (`do_anonymous_page`, GFP_HIGHUSER_MOVABLE,
    /// direct reclaim included) inside the timed read; the buffers are
    /// freed with the read. Pages left to fault, the buffers' size, the
    /// reads' start.
    ReadFault {
        left: u64,
        total: u64,
        start: Ns,
    },
    /// The writes: which of the T, the page reached, its start.
    Write {
        k: u64,
        p: u64,
        ino: usize,
        start: Ns,
        throttled: bool,
    },
    Done,
}

pub struct SimoopTask {
    pub role: Role,
}

/// The run's state and statistics.
#[derive(Default)]
pub struct SimoopRun {
    pub job: usize,
    pub args: Option<SimoopArgs>,
    pub sbs: Vec<usize>,
    /// The files of each directory.
    pub files: Vec<Vec<usize>>,
    pub start: Ns,
    pub warm: Ns,
    pub end: Ns,
    /// The latencies and rates since the warm-up.
    pub stats: SimoopStats,
    pub loops: u64,
    pub loops_at: u64,
    pub stalls_at: u64,
    pub at: Ns,
    pub lines: String,
    pub warmed: bool,
    pub final_stats: Option<SimoopSummary>,
}

/// simoop's final figures (summary.json's `simoop`).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SimoopSummary {
    pub read_p50_us: u64,
    pub read_p95_us: u64,
    pub read_p99_us: u64,
    pub write_p50_us: u64,
    pub write_p95_us: u64,
    pub write_p99_us: u64,
    pub alloc_p50_us: u64,
    pub alloc_p95_us: u64,
    pub alloc_p99_us: u64,
    pub work_rate: f64,
    pub alloc_stall_rate: f64,
}

/// Which of simoop's three latencies a sample is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Latency {
    Read = 0,
    Write = 1,
    Alloc = 2,
}

/// simoop's statistics since its warm-up: the three latency histograms
/// (fio's, in nanoseconds: no samples are kept), their sample counts and
/// the per-interval rates. Both the model ([`SimoopRun`]) and the real
/// program (`crate::live::simoop`) keep one and print it through
/// [`SimoopStats::block`] and [`SimoopStats::summary`], so that their
/// lines are formatted by the same code.
#[derive(Clone, Debug, Default)]
pub struct SimoopStats {
    pub read: Hist,
    pub write: Hist,
    pub alloc: Hist,
    /// Samples in `read`, `write` and `alloc`.
    pub nr: [u64; 3],
    /// Per-interval rates (one a report: a few hundred at most): worker
    /// loops per second, and `allocstall_*` growth per second.
    pub work_rates: Vec<f64>,
    pub stall_rates: Vec<f64>,
}

impl SimoopStats {
    /// Count a latency sample of `ns` nanoseconds.
    pub fn add(&mut self, which: Latency, ns: u64) {
        let h = match which {
            Latency::Read => &mut self.read,
            Latency::Write => &mut self.write,
            Latency::Alloc => &mut self.alloc,
        };
        h.add(ns);
        self.nr[which as usize] += 1;
    }

    /// One report block as simoop prints it: `Run time`, the three latency
    /// lines (p50, p95, p99 in microseconds, with thousands commas), the
    /// work rate and the alloc stall rate (the last interval's, the
    /// average and the percentiles of the per-interval rates).
    pub fn block(&self, run_time_s: u64) -> String {
        let mut o = String::new();
        o.push_str(&format!("Run time: {run_time_s} seconds\n"));
        for (name, h, nr) in [
            ("Read", &self.read, self.nr[0]),
            ("Write", &self.write, self.nr[1]),
            ("Allocation", &self.alloc, self.nr[2]),
        ] {
            let p = hist_pcts(h, nr);
            o.push_str(&format!(
                "{name} latency (p50: {}) (p95: {}) (p99: {})\n",
                comma(p[0]),
                comma(p[1]),
                comma(p[2])
            ));
        }
        let last = |v: &[f64]| v.last().copied().unwrap_or(0.0);
        let w = pcts(&self.work_rates);
        let avg_w = self.work_rates.iter().sum::<f64>() / self.work_rates.len().max(1) as f64;
        o.push_str(&format!(
            "work rate = {:.2}/sec (avg {:.2}/sec) (p50: {:.2}) (p95: {:.2}) (p99: {:.2})\n",
            last(&self.work_rates),
            avg_w,
            w[0],
            w[1],
            w[2]
        ));
        let st = pcts(&self.stall_rates);
        let avg_s = self.stall_rates.iter().sum::<f64>() / self.stall_rates.len().max(1) as f64;
        o.push_str(&format!(
            "alloc stall rate = {:.2}/sec (avg: {:.2}) (p50: {:.2}) (p95: {:.2}) (p99: {:.2})\n",
            last(&self.stall_rates),
            avg_s,
            st[0],
            st[1],
            st[2]
        ));
        o
    }

    /// The final figures: the latency percentiles (µs) and the mean rates
    /// (to 0.01).
    pub fn summary(&self) -> SimoopSummary {
        let r = hist_pcts(&self.read, self.nr[0]);
        let w = hist_pcts(&self.write, self.nr[1]);
        let a = hist_pcts(&self.alloc, self.nr[2]);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        SimoopSummary {
            read_p50_us: r[0],
            read_p95_us: r[1],
            read_p99_us: r[2],
            write_p50_us: w[0],
            write_p95_us: w[1],
            write_p99_us: w[2],
            alloc_p50_us: a[0],
            alloc_p95_us: a[1],
            alloc_p99_us: a[2],
            work_rate: (mean(&self.work_rates) * 100.0).round() / 100.0,
            alloc_stall_rate: (mean(&self.stall_rates) * 100.0).round() / 100.0,
        }
    }
}

const MB: u64 = 1 << 20;
/// Pages a worker allocates between two looks at the clock.
const ALLOC_CHUNK: u64 = 256;

fn comma(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn pcts(v: &[f64]) -> [f64; 3] {
    if v.is_empty() {
        return [0.0; 3];
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| s[(((s.len() as f64) * p).ceil() as usize).clamp(1, s.len()) - 1];
    [at(0.5), at(0.95), at(0.99)]
}

/// p50, p95 and p99 of `nr` samples in `h`, in microseconds.
fn hist_pcts(h: &Hist, nr: u64) -> [u64; 3] {
    if nr == 0 {
        return [0; 3];
    }
    let v = h.percentiles(nr, &[50.0, 95.0, 99.0]);
    [v[0] / 1000, v[1] / 1000, v[2] / 1000]
}

impl Kernel {
    /// The simoop job's files and tasks.
    pub(crate) fn simoop_init(&mut self, ji: usize, a: &SimoopArgs, sbs: &[usize], start: Ns) {
        let ps = self.page_size();
        let mut files = Vec::new();
        for (di, &sb) in sbs.iter().enumerate() {
            let agcount = self.sc.filesystems[sb].agcount;
            let mut v = Vec::new();
            for f in 0..a.files_per_dir {
                let ino = self.create_inode_in(sb, ((di as u64 + f) % agcount as u64) as u32);
                self.fs_layout_file(ino, a.file_mb * MB / ps);
                self.filemap_track(ino);
                // held open: the file set stays
                self.inodes[ino].i_count = 1;
                v.push(ino);
            }
            self.sbs[sb].vfs.files += a.files_per_dir;
            files.push(v);
        }
        let warm = start + a.warmup_s * NSEC_PER_SEC;
        self.simoop = Some(Box::new(SimoopRun {
            job: ji,
            args: Some(a.clone()),
            sbs: sbs.to_vec(),
            files,
            start,
            warm,
            end: warm + a.runtime_s * NSEC_PER_SEC,
            at: start,
            ..Default::default()
        }));
        let spawn = |k: &mut Kernel, comm: &str, role: Role| {
            let pid = k.new_task(
                comm.into(),
                Body::Simoop(Box::new(SimoopTask { role })),
                Some(ji),
            );
            crate::workload::start_at(k, pid, start);
        };
        for _ in 0..a.threads {
            spawn(
                self,
                "simoop",
                Role::Worker(WorkerStage::WorkingSet(a.ws_mb * MB / ps)),
            );
        }
        for _ in 0..a.cpu_threads {
            spawn(self, "simoop-cpu", Role::Burner);
        }
        for d in 0..a.du_threads {
            spawn(
                self,
                "simoop-du",
                Role::Du {
                    dir: d as usize % sbs.len(),
                    next: 0,
                    misses: 0,
                },
            );
        }
        spawn(self, "simoop-report", Role::Reporter);
    }

    fn simoop_args(&self) -> &SimoopArgs {
        self.simoop
            .as_ref()
            .and_then(|s| s.args.as_ref())
            .expect("simoop")
    }

    fn simoop_done(&self) -> bool {
        self.simoop.as_ref().is_some_and(|s| self.now() >= s.end)
    }

    /// A random file: (directory, inode).
    fn simoop_pick(&mut self) -> (usize, usize) {
        let s = self.simoop.as_ref().expect("simoop");
        let nd = s.files.len() as u64;
        let nf = s.files[0].len() as u64;
        let d = self.rng.below(nd) as usize;
        let f = self.rng.below(nf) as usize;
        (d, self.simoop.as_ref().expect("simoop").files[d][f])
    }

    /// A lookup of `ino` (in directory `d`) for a read or, logging its
    /// inode, a write.
    fn simoop_lookup(&mut self, pid: Pid, ino: usize, write: bool) {
        let sb = self.inodes[ino].sb as usize;
        let files = self.sbs[sb].vfs.files.max(1);
        let draw = self.rng.below(files);
        let seq = if write && self.sbs[sb].is_xfs() {
            let has_log = self.sbs[sb].xfs_mut().meta.is_some();
            if has_log {
                let cluster = crate::fs::xfs_meta::xfs_inode_cluster(self.inodes[ino].ino);
                self.xfs_trans_log_inode(ino, cluster, false);
            }
            self.xfs_log_seq(sb)
        } else {
            0
        };
        self.vfs_lookup(pid, sb, draw, seq);
    }

    fn simoop_record(&mut self, which: Latency, start: Ns) {
        let now = self.now();
        let s = self.simoop.as_mut().expect("simoop");
        if start < s.warm && s.warm > s.start {
            return;
        }
        s.stats.add(which, now - start);
    }

    pub fn simoop_step(&mut self, pid: Pid, t: &mut SimoopTask) -> Action {
        if self.vmscan.shrink_waits.contains_key(&pid) && self.xfs_reclaim_resume(pid) {
            return Action::Block;
        }
        match &mut t.role {
            Role::Burner => {
                if self.simoop_done() {
                    return Action::Exit;
                }
                Action::Cpu {
                    user: 10_000_000,
                    sys: 0,
                }
            }
            Role::Reporter => self.simoop_report(),
            Role::Du { .. } => self.simoop_du(pid, t),
            Role::Worker(_) => self.simoop_worker(pid, t),
        }
    }

    /// A du thread: stat the next 32 files of its directory; a miss among
    /// them reads their inode cluster (16 KiB, synchronous).
    fn simoop_du(&mut self, pid: Pid, t: &mut SimoopTask) -> Action {
        let Role::Du { dir, next, misses } = &mut t.role else {
            unreachable!()
        };
        if self.simoop_done() {
            return Action::Exit;
        }
        let s = self.simoop.as_ref().expect("simoop");
        let n = s.files[*dir].len() as u64;
        if *next >= n {
            *next = 0;
            let every = self.simoop_args().interval_s * NSEC_PER_SEC;
            return Action::SleepUntil(self.now() + every);
        }
        let sb = s.sbs[*dir];
        let end = (*next + 32).min(n);
        let mut m = 0;
        for _ in *next..end {
            let files = self.sbs[sb].vfs.files.max(1);
            let draw = self.rng.below(files);
            if self.vfs_lookup(pid, sb, draw, 0) == crate::fs::vfs_cache::Lookup::Miss {
                m += 1;
            }
        }
        let cost = (end - *next) * self.sc.machine.cost.syscall;
        *next = end;
        *misses += m;
        if m > 0 {
            let dev = self.sbs[sb].dev;
            let sector = self.sbs[sb].ag_data_start[0].saturating_sub(2048) + 64;
            let sectors = crate::fs::xfs_meta::XFS_CLUSTER_BLOCKS * 8;
            use crate::block::blk_wbt::{REQ_META, REQ_SYNC};
            self.submit_meta_bio(
                dev,
                pid,
                sector,
                sectors,
                REQ_META | REQ_SYNC,
                crate::block::BioOwner::MetaRead(sb as u32),
            );
            self.tasks[pid].owed_sys += cost;
            return Action::Block;
        }
        Action::Cpu {
            user: 0,
            sys: cost.max(1),
        }
    }

    /// The CPU time of one anonymous page's first touch: the fault
    /// (`do_anonymous_page`, `machine.cost.page_fault`) and the page's
    /// zeroing (`clear_page`, 4 KiB at `machine.cost.copy_per_kib`).
    fn simoop_fault_cost(&self) -> Ns {
        let c = &self.sc.machine.cost;
        c.page_fault + 4 * c.copy_per_kib
    }

    /// `n` pages of anon memory for `pid`, through direct reclaim that may
    /// sleep in a shrinker: the pages got, and whether the task now sleeps
    /// there (≤ 5.8 XFS inode reclaim). A reclaimer that went to sleep on
    /// a cluster write sleeps even when the pass's LRU part freed all it
    /// needed: `shrink_slab` runs inside `shrink_node`, after the lists and
    /// before `__perform_reclaim` returns to the allocator, so the task is
    /// in D state until the write completes whatever the LRU gave.
    fn simoop_alloc(&mut self, pid: Pid, n: u64) -> (u64, bool) {
        let got = self.page_alloc_may_sleep(pid, n, Gfp::Anon);
        self.vm.nr_anon_pages += got;
        self.oom_rss_add(pid, got);
        let asleep = self.vmscan.shrink_waits.contains_key(&pid);
        debug_assert!(got == n || asleep);
        (got, asleep)
    }

    /// Fault in up to `chunk` of the `left` anonymous pages a worker
    /// touches (through `simoop_alloc`), and charge their faults: a task
    /// asleep in reclaim blocks with the faults owed, else it burns them.
    fn simoop_fault_in(&mut self, pid: Pid, left: &mut u64, chunk: u64) -> Action {
        let (got, asleep) = self.simoop_alloc(pid, (*left).min(chunk));
        *left -= got;
        // the page faults, with their zeroing
        let cost = got * self.simoop_fault_cost();
        if asleep {
            self.tasks[pid].owed_sys += cost;
            return Action::Block;
        }
        Action::Cpu {
            user: 0,
            sys: cost.max(1),
        }
    }

    fn simoop_worker(&mut self, pid: Pid, t: &mut SimoopTask) -> Action {
        let ps = self.page_size();
        loop {
            let now = self.now();
            let Role::Worker(stage) = &mut t.role else {
                unreachable!()
            };
            match stage {
                WorkerStage::WorkingSet(left) => {
                    if *left == 0 {
                        *stage = WorkerStage::Done;
                        continue;
                    }
                    return self.simoop_fault_in(pid, left, ALLOC_CHUNK * 16);
                }
                WorkerStage::Done => {
                    if self.simoop_done() {
                        return Action::Exit;
                    }
                    self.simoop.as_mut().expect("simoop").loops += 1;
                    let left = self.simoop_args().alloc_mb * MB / ps;
                    *stage = WorkerStage::Alloc { left, start: now };
                }
                WorkerStage::Alloc { left, start } => {
                    if *left == 0 {
                        let total = self.simoop_args().alloc_mb * MB / ps;
                        // freed almost at once
                        self.vm.nr_anon_pages -= total;
                        self.oom_rss_sub(pid, total);
                        self.page_free(total);
                        let st = *start;
                        self.simoop_record(Latency::Alloc, st);
                        *stage = WorkerStage::Read {
                            files: Vec::new(),
                            start: now,
                            issued: false,
                        };
                        continue;
                    }
                    return self.simoop_fault_in(pid, left, ALLOC_CHUNK);
                }
                WorkerStage::Read {
                    files,
                    start,
                    issued,
                } => {
                    if !*issued {
                        *issued = true;
                        let a = self.simoop_args().clone();
                        let pages = a.read_mb * MB / ps;
                        let span = a.file_mb * MB / ps;
                        let mut v = Vec::new();
                        let mut sys = 0;
                        for _ in 0..a.io_threads {
                            let (_, ino) = self.simoop_pick();
                            self.simoop_lookup(pid, ino, false);
                            let p0 = self.rng.below(span / pages) * pages;
                            let dev = self.sbs[self.inodes[ino].sb as usize].dev;
                            let mut ra = self.file_ra_state_init(dev, false);
                            let (alloc, _) =
                                self.filemap_get_pages(pid, ino, &mut ra, p0, p0 + pages);
                            sys += alloc * self.sc.machine.cost.page_cache_insert
                                + self.sc.machine.cost.syscall;
                            v.push((ino, p0, p0 + pages));
                        }
                        *files = v;
                        self.tasks[pid].owed_sys += sys;
                    }
                    // wait for each in turn
                    let mut all = true;
                    for &(ino, p0, p1) in files.iter() {
                        if !self.filemap_read_ready(pid, ino, p0, p1) {
                            all = false;
                            break;
                        }
                    }
                    if !all {
                        // folio_wait_locked's io_schedule()
                        return self.stalled(pid, crate::kernel::psi::Stall::Io, Action::Block);
                    }
                    let kib: u64 = files.iter().map(|&(_, a, b)| (b - a) * ps / 1024).sum();
                    let total: u64 = files.iter().map(|&(_, a, b)| b - a).sum();
                    let st = *start;
                    self.tasks[pid].owed_sys += kib * self.sc.machine.cost.copy_per_kib;
                    *stage = WorkerStage::ReadFault {
                        left: total,
                        total,
                        start: st,
                    };
                    continue;
                }
                WorkerStage::ReadFault { left, total, start } => {
                    if *left == 0 {
                        // the buffers go with the reads
                        let total = *total;
                        self.vm.nr_anon_pages -= total;
                        self.oom_rss_sub(pid, total);
                        self.page_free(total);
                        let st = *start;
                        self.simoop_record(Latency::Read, st);
                        *stage = WorkerStage::Write {
                            k: 0,
                            p: u64::MAX,
                            ino: 0,
                            start: now,
                            throttled: false,
                        };
                        continue;
                    }
                    return self.simoop_fault_in(pid, left, ALLOC_CHUNK);
                }
                WorkerStage::Write {
                    k,
                    p,
                    ino,
                    start,
                    throttled,
                } => {
                    let a = self.simoop_args().clone();
                    let pages = a.write_mb * MB / ps;
                    if *throttled {
                        let wb = self.inodes[*ino].wb;
                        if let Some(act) = self.throttle_resume(pid, wb).action() {
                            return act;
                        }
                        *throttled = false;
                    }
                    if *p == u64::MAX {
                        if *k == a.io_threads {
                            let st = *start;
                            self.simoop_record(Latency::Write, st);
                            *stage = WorkerStage::Done;
                            continue;
                        }
                        let (_, i) = self.simoop_pick();
                        self.simoop_lookup(pid, i, true);
                        let span = a.file_mb * MB / ps;
                        *ino = i;
                        *p = self.rng.below(span / pages) * pages;
                        *k += 1;
                    }
                    let end_p = (*p / pages + 1) * pages;
                    let wb = self.inodes[*ino].wb;
                    let unit = self.sbs[self.inodes[*ino].sb as usize].max_folio_pages;
                    let until = self.throttle_pages_until_check(pid, wb);
                    let n = (until.div_ceil(unit).max(1) * unit).min(end_p - *p);
                    self.filemap_write_begin_tracked(*ino, *p, n);
                    self.filemap_dirty_range(pid, *ino, *p, n);
                    *p += n;
                    if *p >= end_p {
                        *p = u64::MAX;
                    }
                    let cost = n * 4 * self.sc.machine.cost.copy_per_kib + 1;
                    if let Some(act) = self.throttle_check(pid, wb).action() {
                        *throttled = true;
                        self.tasks[pid].owed_sys += cost;
                        return act;
                    }
                    return Action::Cpu { user: 0, sys: cost };
                }
            }
        }
    }

    /// The reporter: every interval, simoop's lines; at the warm-up's end
    /// the statistics restart; at the end `Final stats`.
    fn simoop_report(&mut self) -> Action {
        let now = self.now();
        let stalls: u64 = self.vm.allocstall.iter().sum();
        let s = self.simoop.as_mut().expect("simoop");
        let every = s.args.as_ref().expect("args").interval_s * NSEC_PER_SEC;
        if now == s.start {
            s.at = now;
            s.stalls_at = stalls;
            return Action::SleepUntil(now + every.min(s.warm.max(now + 1) - now).max(1));
        }
        let dt = (now - s.at) as f64 / 1e9;
        if !s.warmed && now >= s.warm {
            s.warmed = true;
            if s.warm > s.start {
                s.lines.push_str(&format!(
                    "Warmup complete ({} seconds)\n",
                    (s.warm - s.start) / NSEC_PER_SEC
                ));
                s.stats = SimoopStats::default();
                s.loops_at = s.loops;
                s.stalls_at = stalls;
                s.at = now;
                return Action::SleepUntil((now + every).min(s.end));
            }
        }
        if dt > 0.0 && s.warmed {
            s.stats.work_rates.push((s.loops - s.loops_at) as f64 / dt);
            s.stats.stall_rates.push((stalls - s.stalls_at) as f64 / dt);
        }
        s.loops_at = s.loops;
        s.stalls_at = stalls;
        s.at = now;
        let fin = now >= s.end;
        if s.warmed {
            let block = s.stats.block((now - s.warm.max(s.start)) / NSEC_PER_SEC);
            if fin {
                s.lines.push_str("Final stats:\n");
            }
            s.lines.push_str(&block);
        }
        if fin {
            s.final_stats = Some(s.stats.summary());
            return Action::Exit;
        }
        let next = if s.warmed {
            now + every
        } else {
            (now + every).min(s.warm)
        };
        Action::SleepUntil(next.min(s.end))
    }

    /// simoop's output (`simoop.txt`); empty without a simoop job.
    pub fn simoop_output(&self) -> String {
        self.simoop
            .as_ref()
            .map(|s| s.lines.clone())
            .unwrap_or_default()
    }

    /// The final figures, or the figures so far if the run ended first.
    pub fn simoop_summary(&self) -> Option<SimoopSummary> {
        let s = self.simoop.as_ref()?;
        Some(s.final_stats.clone().unwrap_or_else(|| s.stats.summary()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_seed_command_line() {
        let a = SimoopArgs::parse("-t 512 -m 190 -M 128 -C 28 -r 60000 -f 70 -T 20 -R1 -W 1 -i 60 -w 300 -D 2 /hammer/a /hammer/b").unwrap();
        assert_eq!(
            (a.threads, a.ws_mb, a.alloc_mb, a.cpu_threads),
            (512, 190, 128, 28)
        );
        assert_eq!(
            (a.runtime_s, a.file_mb, a.io_threads, a.read_mb, a.write_mb),
            (60000, 70, 20, 1, 1)
        );
        assert_eq!((a.interval_s, a.warmup_s, a.du_threads), (60, 300, 2));
        assert_eq!(a.dirs, vec!["/hammer/a", "/hammer/b"]);
        assert!(SimoopArgs::parse("-t 4").unwrap_err().contains("directory"));
        assert!(SimoopArgs::parse("-x 4 /a")
            .unwrap_err()
            .contains("not modelled"));
        assert!(SimoopArgs::parse("-t /a")
            .unwrap_err()
            .contains("whole number"));
        assert!(SimoopArgs::parse("-t")
            .unwrap_err()
            .contains("needs a number"));
        assert!(SimoopArgs::parse("-f 1 -R 2 /a").is_err());
        // a read or write of nothing has no offsets to draw from
        assert!(SimoopArgs::parse("-R 0 /a")
            .unwrap_err()
            .contains("at least 1"));
        assert!(SimoopArgs::parse("-W0 /a")
            .unwrap_err()
            .contains("at least 1"));
    }

    /// One worker on an idle machine, its reads' p50 (µs) and the
    /// anonymous pages left at the end.
    fn read_p50(page_fault: &str) -> (u64, u64) {
        let text = format!(
            "[machine]\nmemory = \"2G\"\ncpus = 2\n[machine.cost]\npage_fault = \"{page_fault}\"\n\
             [devices.d]\ntype = \"ssd\"\n[filesystems.x]\ntype = \"xfs\"\ndevice = \"d\"\n\
             [jobs.s]\ntype = \"simoop\"\nargs = \"-t 1 -m 0 -M 1 -T 2 -R 1 -W 1 -f 1 -n 8 -i 1 -w 0 -r 2 /x\"\n\
             [run]\nduration = \"2s\"\n"
        );
        let sc = crate::scenario::Scenario::load_str(&text, "t.toml", "t", &[]).unwrap();
        let mut k = Kernel::new(sc, crate::trace::Tracer::disabled());
        k.run(|_, _| {});
        let anon = k.vm.nr_anon_pages;
        let s = k.simoop_summary().expect("simoop");
        (s.read_p50_us, anon)
    }

    /// A read's copy faults its buffer in (`-T` × `-R MB`, 512 pages
    /// here) inside the timed read, and the buffers are freed with it.
    #[test]
    fn a_read_faults_its_buffer_in() {
        let (fast, anon0) = read_p50("0s");
        let (slow, anon1) = read_p50("10us");
        assert!(slow >= fast + 512 * 10, "{fast} µs -> {slow} µs");
        // the machine's own anonymous memory only: the buffers went back
        assert_eq!(anon0, anon1);
    }

    /// The block both the model and `wbsim simoop` print, and the summary
    /// from the same figures.
    #[test]
    fn a_block_as_simoop_prints_it() {
        let mut st = SimoopStats {
            work_rates: vec![10.0, 20.0],
            stall_rates: vec![0.0, 1.5],
            ..Default::default()
        };
        st.add(Latency::Write, 1_500_000_000);
        let w = hist_pcts(&st.write, 1)[0];
        // fio's bucket for 1.5 s, within its 1/64 resolution
        assert!((1_476_000..=1_524_000).contains(&w), "{w}");
        assert_eq!(
            st.block(7),
            format!(
                "Run time: 7 seconds\n\
                 Read latency (p50: 0) (p95: 0) (p99: 0)\n\
                 Write latency (p50: {0}) (p95: {0}) (p99: {0})\n\
                 Allocation latency (p50: 0) (p95: 0) (p99: 0)\n\
                 work rate = 20.00/sec (avg 15.00/sec) (p50: 10.00) (p95: 20.00) (p99: 20.00)\n\
                 alloc stall rate = 1.50/sec (avg: 0.75) (p50: 0.00) (p95: 1.50) (p99: 1.50)\n",
                comma(w)
            )
        );
        let s = st.summary();
        assert_eq!((s.write_p99_us, s.read_p50_us, st.nr), (w, 0, [0, 1, 0]));
        assert_eq!((s.work_rate, s.alloc_stall_rate), (15.0, 0.75));
    }

    #[test]
    fn commas_and_percentiles() {
        assert_eq!(comma(21594112), "21,594,112");
        assert_eq!(comma(863), "863");
        assert_eq!(comma(1000), "1,000");
        assert_eq!(pcts(&[1.0, 2.0, 3.0, 4.0]), [2.0, 4.0, 4.0]);
    }
}
