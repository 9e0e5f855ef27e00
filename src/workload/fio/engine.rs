//! The fio engine: a job's `numjobs` clones as tasks on the simulated
//! machine (fio's backend.c `thread_main` → `do_io`, io_u.c's offset,
//! size and direction choices, the ioengines' queue and completion).
//!
//! - Files (filesetup.c): `filename=` (one file the clones share; a
//!   `/dev/NAME` name is the scenario's block device NAME), else
//!   `directory/jobname.CLONE.FILE` per clone; `nrfiles`, `filesize`,
//!   `size` (per clone, split across its files), `offset`. A job that reads
//!   needs its files' data: fio lays them out before the job (writes them,
//!   then with `invalidate=1` drops their cache). The layout is modelled by
//!   its result, not simulated: the file is allocated on disk
//!   (`fs_layout_file`) and not cached (cached and clean with
//!   `invalidate=0`). A write-only job's files get their blocks the same
//!   way: fio fallocate()s them (`fallocate=native`, the default);
//!   `fallocate=none` leaves them to delayed allocation, as dd's.
//! - Sync engines (sync, psync, pvsync): one IO per call. Buffered writes
//!   copy into the page cache and dirty it as dd does (throttle checks per
//!   folio, `balance_dirty_pages_ratelimited`); buffered reads go through
//!   the page cache's read side (mm/readahead.rs), sleeping on the first
//!   page under read; direct IO submits bios at the file's blocks and
//!   sleeps until the last one completes. `fsync=N`, `fdatasync=N`,
//!   `end_fsync`, `fsync_on_close` and `sync=1` run `vfs_fsync_step`
//!   (fs/sync.rs: WB_SYNC_ALL writeback of the inode and the wait for it);
//!   with `sync=1` each write's latency includes its sync, as O_SYNC's does.
//! - Async engines (libaio, io_uring): up to `iodepth` direct IOs in flight;
//!   the submission's CPU time is the slat, completion the clat. Buffered IO
//!   under them is synchronous in the kernel (io_submit blocks) and runs as
//!   the sync engines do.
//! - `null`: each IO completes at once, for fio's own CPU time.
//! - Rate and time: `rate`, `rate_iops` (the next IO is due when the bytes
//!   or IOs done so far say; `rate_process=poisson` draws exponential gaps),
//!   `thinktime`, `thinktime_spin`, `thinktime_blocks`, `runtime`,
//!   `time_based`, `startdelay`, `ramp_time`, `loops`. Each new loop (a
//!   `time_based` job's wrap, the random map's new pass) invalidates the
//!   files' cache with `invalidate=1` (io_u.c `loop_cache_invalidate`:
//!   POSIX_FADV_DONTNEED), which first writes back each file's dirty pages
//!   from the clone (`Fsync::Fdatawrite`, WB_SYNC_NONE, no wait), so a new
//!   pass does not rewrite pages the last one left dirty. Only a file whose
//!   reads are tracked then drops its clean pages.
//! - Offsets: sequential, or random with fio's random map (every block once
//!   per pass) as a keyed Feistel bijection over the blocks with cycle
//!   walking — O(1) memory where fio keeps a bitmap (axmap); `norandommap`,
//!   bs ranges and the non-uniform distributions draw freely.
//!   `random_distribution` zipf/pareto/normal as fio's lib/zipf.c and
//!   lib/gauss.c define them. `rw=...:N` keeps N IOs sequential before a new
//!   random offset. `rwmixread` draws each IO's direction.
//! - Groups: `stonewall` (wait for every earlier job), `wait_for=NAME`.
//!
//! Statistics go to each clone's `JobStats` (`Kernel::fio_reports`).

use super::job::{Dir, FioJob, FioSize, IoEngine, RandomDist, RateProcess, Rw};
use super::stats::JobStats;
use crate::fs::sync::{Fsync, FsyncStep};
use crate::kernel::psi::Stall;
use crate::kernel::{Action, Body, InodeId, Kernel, Pid};
use crate::mm::readahead::FileRaState;
use crate::sim::{Ns, Prng};
use std::collections::BTreeMap;

const NSEC_PER_SEC: u128 = 1_000_000_000;

/// One clone of a job: where the output finds its statistics.
#[derive(Clone, Debug)]
pub struct FioClone {
    /// The job's index in `sc.jobs`, and the clone's number (0..numjobs).
    pub job: usize,
    pub clone: u32,
    pub pid: Pid,
    pub stats: JobStats,
    /// When the clone started (after `startdelay` and its group's wait)
    /// and exited.
    pub start: Option<Ns>,
    pub end: Option<Ns>,
    /// Direct IOs in flight, by tag (the slot index).
    ios: Vec<Option<DioIo>>,
    pub inflight: u32,
    /// The most direct IOs in flight at once.
    pub max_inflight: u32,
    /// The task sleeps until a direct IO completes (io_getevents, or a
    /// sync engine's wait).
    waits_io: bool,
    /// Every completed IO, ramp included: count, bytes per direction, and
    /// the sum of completion latencies (issue to done) per direction.
    pub ios_done: u64,
    pub bytes_done: [u64; 3],
    pub lat_sum: [u128; 3],
    pub lat_max: [Ns; 3],
    /// Syncs done, and the sum of their latencies.
    pub syncs: u64,
    pub sync_lat_sum: u128,
    /// A digest of the offsets issued (for determinism checks).
    pub offsets_digest: u64,
}

/// A direct IO in flight.
#[derive(Clone, Copy, Debug)]
struct DioIo {
    dir: Dir,
    off: u64,
    bytes: u64,
    issue: Ns,
    /// When io_submit returned (async engines).
    submit: Option<Ns>,
    /// Bios still in flight.
    left: u32,
    /// The IO is waited on by its (sync) submitter, which records it.
    sync: bool,
    done: Option<Ns>,
}

/// A job's run: its clones and what it waits for.
#[derive(Clone, Debug, Default)]
pub struct FioJobRun {
    pub job: usize,
    /// Indices into `FioRun::clones`.
    pub clones: Vec<usize>,
    /// Jobs (indices in `sc.jobs`) that must finish first.
    pub deps: Vec<usize>,
    pub started: bool,
    pub exited: u32,
}

/// The fio engine's machine-wide state.
#[derive(Clone, Debug, Default)]
pub struct FioRun {
    pub clones: Vec<FioClone>,
    pub jobs: Vec<FioJobRun>,
    /// Clone by task.
    pub by_pid: BTreeMap<Pid, usize>,
    /// Files by name, shared by the jobs that name them.
    files: BTreeMap<String, FFile>,
    /// Jobs refused at setup: "job NAME: why".
    pub errors: Vec<String>,
}

/// A file a clone does IO to.
#[derive(Clone, Copy, Debug)]
struct FFile {
    /// Its inode (None: the raw block device, direct IO only).
    ino: Option<InodeId>,
    dev: usize,
    /// Its size in bytes.
    size: u64,
}

/// The next IO (an io_u): direction, file, offset, bytes.
#[derive(Clone, Copy, Debug)]
struct IoU {
    dir: Dir,
    file: usize,
    off: u64,
    bytes: u64,
    issue: Ns,
}

/// After a sync: what comes next.
#[derive(Clone, Copy, Debug)]
enum SyncFor {
    /// `fsync=N`/`fdatasync=N`: recorded as a sync.
    EveryN,
    /// O_SYNC: the write `io` completes with it.
    OSync(IoU),
    /// `end_fsync` / `fsync_on_close` of file N (then the next file).
    Close(usize),
    /// A new loop's `invalidate` of file N: its fdatawrite is done, its
    /// clean pages go (then the next file).
    Invalidate(usize),
}

#[derive(Debug)]
enum Stage {
    /// First run: the clone starts.
    Init,
    /// Pick and issue the next IO, or finish.
    Next,
    /// An IO is chosen but its rate time has not come: sleeping until it.
    RateWait(IoU),
    /// Buffered write: the copy's CPU time has passed; dirty `[p, end)` in
    /// steps that end at a throttle check.
    BufWrite {
        io: IoU,
        p: u64,
        end: u64,
    },
    BufCheck {
        io: IoU,
        p: u64,
        end: u64,
    },
    BufThrottled {
        io: IoU,
        p: u64,
        end: u64,
    },
    /// Buffered read: the syscall's CPU time has passed; look the pages up
    /// (`started`) and wait for them.
    BufRead {
        io: IoU,
        started: bool,
    },
    /// The read's copy has used its CPU time.
    ReadCopy(IoU),
    /// A direct IO: submit its bios after the submission's CPU time.
    DioSubmit(IoU),
    /// A sync engine's direct IO in slot `slot` is in flight.
    DioWait(usize),
    /// An async engine's IO is submitted after its CPU time.
    AsyncSubmit(IoU),
    /// io_getevents' CPU time after a wait for completions.
    Reaped,
    /// A completed IO (sync engines); its after-effects come next.
    Completed(IoU),
    /// Waiting for the async IOs in flight before finishing.
    Drain,
    /// An fsync (fs/sync.rs) and what it is for.
    Sync {
        f: Fsync,
        why: SyncFor,
        issue: Ns,
    },
    /// thinktime: spin on the CPU, then sleep until `until`.
    ThinkSpin {
        spin: Ns,
        until: Ns,
    },
    ThinkSleep(Ns),
    /// Closing: the end_fsync / fsync_on_close of each file from N.
    Closing(usize),
    Done,
}

/// The sequential or random position in one file.
#[derive(Clone, Copy, Debug, Default)]
struct FilePos {
    /// Next sequential offset, relative to the region's start.
    seq: u64,
    /// Random map: the pass number and the blocks drawn in it.
    pass: u64,
    drawn: u64,
    /// IOs left in the current `rw=...:N` run, and its last offset.
    run_left: u32,
    last: u64,
}

/// A clone's task state (boxed in `Body::Fio`).
pub struct FioTask {
    ci: usize,
    job: Box<FioJob>,
    files: Vec<FFile>,
    /// The IO region of each file: [start, start + len) in bytes.
    region: Vec<(u64, u64)>,
    pos: Vec<FilePos>,
    ra: Vec<FileRaState>,
    /// The file the next IO goes to (round robin, fio's default).
    next_file: usize,
    rng: Prng,
    /// Keys of the random map's bijection.
    key: u64,
    dist: Option<Dist>,
    stage: Stage,
    start: Ns,
    end_time: Ns,
    /// Bytes to do per loop, bytes issued in this loop, loops left.
    loop_bytes: u64,
    loop_done: u64,
    loops_left: u32,
    /// Per direction: IOs and bytes issued (the rate's clock), and the
    /// poisson process's next due time.
    issued_ios: [u64; 3],
    issued_bytes: [u64; 3],
    poisson_due: [Ns; 3],
    ios_total: u64,
    writes_since_sync: u32,
    /// At least one write since the files were opened (end_fsync).
    wrote: bool,
    /// A new loop's cache invalidation, from this file on, before the next
    /// IO.
    invalidate_from: Option<usize>,
}

/// A non-uniform distribution's state.
#[derive(Clone, Copy, Debug)]
enum Dist {
    Zipf {
        theta: f64,
        n: u64,
        zetan: f64,
        zeta2: f64,
        off: u64,
    },
    Pareto {
        pow: f64,
        n: u64,
        off: u64,
    },
    Normal {
        n: u64,
        stddev: u64,
    },
}

/// The most values lib/zipf.c sums for zeta(n) (ZIPF_MAX_GEN).
const ZIPF_MAX_GEN: u64 = 10_000_000;

/// zeta(n, θ) = Σ_{i=1..n} i^-θ: summed up to 2^16 terms, the rest by
/// the Euler–Maclaurin formula (its first correction terms; relative error
/// far below what the draws resolve), so a clone's setup does not sum ten
/// million powers.
fn zeta(n: u64, theta: f64) -> f64 {
    const EXACT: u64 = 1 << 16;
    let m = n.min(EXACT);
    let head: f64 = (1..=m).map(|i| (i as f64).powf(-theta)).sum();
    if n <= EXACT {
        return head;
    }
    let (a, b) = (m as f64, n as f64);
    let f = |x: f64| x.powf(-theta);
    let df = |x: f64| -theta * x.powf(-theta - 1.0);
    let integral = if (theta - 1.0).abs() < 1e-12 {
        (b / a).ln()
    } else {
        (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
    };
    // Σ_{i=m+1..n} f(i) = ∫_m^n f + (f(n) - f(m))/2 + (f'(n) - f'(m))/12
    head + integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0
}

/// fio's `__hash_u64`-style scrambling of a rank into the range, so the
/// hot blocks are spread over the file: a multiplicative (golden ratio)
/// hash.
fn hash_u64(x: u64) -> u64 {
    x.wrapping_mul(0x61C8_8646_80B5_83EB).rotate_left(31) ^ (x >> 7)
}

/// Uniform in [0, 1) from the PRNG.
fn unit(rng: &mut Prng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

impl Dist {
    fn new(d: RandomDist, n: u64, rng: &mut Prng) -> Option<Dist> {
        let n = n.max(1);
        match d {
            RandomDist::Random => None,
            // lib/zipf.c zipf_init: zeta(n, theta) summed over at most
            // ZIPF_MAX_GEN values, zeta(2, theta)
            RandomDist::Zipf(theta) => {
                let zetan = zeta(n.min(ZIPF_MAX_GEN), theta);
                let zeta2 = 1.0 + 0.5f64.powf(theta);
                Some(Dist::Zipf {
                    theta,
                    n,
                    zetan,
                    zeta2,
                    off: rng.next_u64(),
                })
            }
            // lib/zipf.c pareto_init: the power log(h) / log(1 - h)
            RandomDist::Pareto(h) => Some(Dist::Pareto {
                pow: h.ln() / (1.0 - h).ln(),
                n,
                off: rng.next_u64(),
            }),
            // lib/gauss.c gauss_init: the deviation is DEV% of the range,
            // at most half of it
            RandomDist::Normal(dev) => {
                let stddev = if dev == 0.0 {
                    0
                } else {
                    ((n as f64 * dev / 100.0).ceil() as u64).min(n / 2)
                };
                Some(Dist::Normal { n, stddev })
            }
        }
    }

    /// The next block in [0, n).
    fn next(&self, rng: &mut Prng) -> u64 {
        match *self {
            // Gray et al.'s zipf generator (lib/zipf.c zipf_next): rank
            // 1, 2 or 1 + n (eta u - eta + 1)^alpha, scrambled
            Dist::Zipf {
                theta,
                n,
                zetan,
                zeta2,
                off,
            } => {
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
                let u = unit(rng);
                let uz = u * zetan;
                let rank = if uz < 1.0 {
                    1
                } else if uz < 1.0 + 0.5f64.powf(theta) {
                    2
                } else {
                    1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                (hash_u64(rank - 1).wrapping_add(off)) % n
            }
            // lib/zipf.c pareto_next: (n - 1) u^pow, scrambled
            Dist::Pareto { pow, n, off } => {
                let v = ((n - 1) as f64 * unit(rng).powf(pow)) as u64;
                (hash_u64(v).wrapping_add(off)) % n
            }
            // lib/gauss.c gauss_next: the mean of 12 uniform draws over the
            // range (Irwin-Hall, centred on its middle), moved by a uniform
            // deviation of `stddev` around 0, scrambled
            Dist::Normal { n, stddev } => {
                const ITERS: u64 = 12;
                let mut sum: u64 = (0..ITERS).map(|_| rng.below(n + 1)).sum();
                sum = sum.div_ceil(ITERS);
                if stddev > 0 {
                    let mut dev = rng.below(stddev) as i64 - (stddev / 2) as i64;
                    while dev + sum as i64 >= n as i64 {
                        dev /= 2;
                    }
                    sum = (sum as i64 + dev).max(0) as u64;
                }
                hash_u64(sum) % n
            }
        }
    }
}

/// A keyed bijection of [0, n) (a 4-round Feistel network over the
/// smallest even-width power of two ≥ n, with cycle walking): the random
/// map's order of blocks in one pass, in O(1) memory.
pub fn permute(i: u64, n: u64, key: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    let bits = 64 - (n - 1).leading_zeros();
    let half = bits.div_ceil(2);
    let mask = (1u64 << half) - 1;
    let mut x = i;
    loop {
        let (mut l, mut r) = (x >> half, x & mask);
        for round in 0..4u64 {
            let f = hash_u64(r ^ key.rotate_left(round as u32 * 16) ^ (round << 60)) & mask;
            (l, r) = (r, l ^ f);
        }
        x = (l << half) | r;
        if x < n {
            return x;
        }
    }
}

/// splitmix64: a seed from several numbers.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What `fio_check` refuses.
/// How an async clone's wait for completions stalls: io_uring's
/// `io_cqring_wait_schedule` sets `in_iowait` while IO is pending (6.1);
/// libaio's `read_events` sleeps interruptibly, not in iowait.
fn reap_stall(t: &FioTask) -> Stall {
    match t.job.ioengine {
        IoEngine::IoUring => Stall::Io,
        _ => Stall::None,
    }
}

fn job_error(job: &FioJob, msg: impl std::fmt::Display) -> String {
    format!("{}: job `{}`: {msg}", job.origin, job.name)
}

impl Kernel {
    /// The fio jobs' clones: files, tasks, and the jobs' start (those that
    /// wait for others start when those are done). Called from
    /// `workload_init`.
    pub fn fio_init(&mut self) {
        let jobs = self.sc.jobs.clone();
        let names: Vec<Option<String>> = jobs
            .iter()
            .map(|j| match &j.kind {
                crate::scenario::JobKind::Fio(f) => Some(f.name.clone()),
                _ => None,
            })
            .collect();
        for (ji, job) in jobs.iter().enumerate() {
            let crate::scenario::JobKind::Fio(f) = &job.kind else {
                continue;
            };
            if let Err(e) = self.fio_check(f) {
                self.fio.errors.push(e);
                continue;
            }
            let mut deps = Vec::new();
            if f.stonewall {
                deps.extend((0..ji).filter(|&j| names[j].is_some()));
            }
            if let Some(w) = &f.wait_for {
                match names.iter().position(|n| n.as_deref() == Some(w.as_str())) {
                    Some(j) if j != ji => deps.push(j),
                    _ => {
                        let e = job_error(f, format!("wait_for=`{w}` names no other job"));
                        self.fio.errors.push(e);
                        continue;
                    }
                }
            }
            deps.sort_unstable();
            deps.dedup();
            let mut run = FioJobRun {
                job: ji,
                deps,
                ..Default::default()
            };
            for c in 0..f.numjobs.max(1) {
                match self.fio_clone_new(ji, job.filesystem, f, c) {
                    Ok(ci) => run.clones.push(ci),
                    Err(e) => {
                        self.fio.errors.push(e);
                        break;
                    }
                }
            }
            self.fio.jobs.push(run);
        }
        self.fio_start_ready_jobs(true);
    }

    /// What the engine cannot run (`check_job`).
    pub fn fio_check(&self, f: &FioJob) -> Result<(), String> {
        check_job(&self.sc.devices, &self.sc.filesystems, f)
    }
}

/// What the engine cannot run: unmodelled options, trims, bad block
/// sizes, a device the scenario lacks, buffered IO to a raw device without
/// a filesystem on it, a regular file without a size or a filesystem.
/// The scenario's loader can call it to refuse a job before the run.
pub fn check_job(
    devices: &[crate::scenario::Device],
    filesystems: &[crate::scenario::Filesystem],
    f: &FioJob,
) -> Result<(), String> {
    {
        // fio's options the engine does not model, and trims: the parser's
        // one-line reason
        if let Some(why) = super::parse::unsupported_reason(f) {
            return Err(job_error(f, why));
        }
        for b in f.bs {
            if b.min == 0 || b.min > b.max || b.min % 512 != 0 {
                return Err(job_error(
                    f,
                    format!(
                        "bs range {}-{}: expected multiples of 512 bytes, min ≤ max",
                        b.min, b.max
                    ),
                ));
            }
        }
        if f.iodepth == 0 {
            return Err(job_error(f, "iodepth must be ≥ 1"));
        }
        if let Some(name) = f.filename.as_deref() {
            for n in name.split(':') {
                if let Some(dev) = n.strip_prefix("/dev/") {
                    let Some(d) = devices.iter().position(|x| x.name == dev) else {
                        let known: Vec<String> =
                            devices.iter().map(|x| format!("/dev/{}", x.name)).collect();
                        return Err(job_error(
                            f,
                            format!(
                                "filename={n}: the scenario has no device `{dev}`; expected one of {}",
                                known.join(", ")
                            ),
                        ));
                    };
                    if !f.direct && !filesystems.iter().any(|s| s.device == d) {
                        return Err(job_error(
                            f,
                            format!("buffered IO to `{n}` needs a filesystem on it (its block device inode's bdi); use direct=1"),
                        ));
                    }
                }
            }
        }
        let raw = f
            .filename
            .as_deref()
            .is_some_and(|n| n.split(':').all(|x| x.starts_with("/dev/")));
        if !raw && f.size.is_none() && f.filesize.is_none() {
            return Err(job_error(f, "a regular file needs size= or filesize="));
        }
        if filesystems.is_empty() && !raw {
            return Err(job_error(
                f,
                "regular files need a filesystem in the scenario",
            ));
        }
        Ok(())
    }
}

impl Kernel {
    /// Create clone `c` of job `ji`: its files and its task (not started).
    fn fio_clone_new(&mut self, ji: usize, sb: usize, f: &FioJob, c: u32) -> Result<usize, String> {
        let ci = self.fio.clones.len();
        let seed = {
            // randseed, else the scenario's seed; mixed with the job and
            // clone (fio seeds each thread apart); randrepeat=0 without a
            // randseed gives other offsets than randrepeat=1
            let base = f.randseed.unwrap_or(self.sc.run.seed ^ 0x89);
            let base = if f.randrepeat || f.randseed.is_some() {
                base
            } else {
                base ^ 0xA5A5_5A5A
            };
            mix(base ^ mix((ji as u64) << 32 | u64::from(c)))
        };
        let mut rng = Prng::new(seed);
        let nrfiles = f.nrfiles.max(1) as usize;
        // the clone's size, split across its files
        let names: Vec<String> = match f.filename.as_deref() {
            Some(n) => n.split(':').map(str::to_string).collect(),
            None => (0..nrfiles)
                .map(|i| {
                    let dir = f.directory.as_deref().unwrap_or(".");
                    format!("{dir}/{}.{c}.{i}", f.name)
                })
                .collect(),
        };
        let mut files = Vec::new();
        // fio's extend_file lays out a new file before the job: it writes
        // it for a job that reads, and otherwise fallocate()s it
        // (`fallocate=native`, the default): on ext4 one unwritten extent
        // over the whole size, checked with filefrag on 6.18 after
        // `fio --create_only=1 --rw=randwrite --size=64m`. Only
        // `fallocate=none` leaves a write-only job's file to delayed
        // allocation.
        let fallocate_none = matches!(f.option("fallocate"), Some("none" | "0"));
        let needs_blocks = f.rw.reads() || f.direct || !fallocate_none;
        for name in &names {
            let file = match self.fio.files.get(name) {
                Some(ff) => *ff,
                None => {
                    let ff = self.fio_file_new(name, sb, f, names.len() as u64, &mut rng)?;
                    self.fio.files.insert(name.clone(), ff);
                    ff
                }
            };
            if let Some(ino) = file.ino {
                let ps = self.page_size();
                let pages = file.size.div_ceil(ps);
                let bdev = self.inodes[ino].bdev;
                if needs_blocks && !bdev && self.inodes[ino].extents.is_empty() {
                    if f.rw.reads() {
                        self.fs_layout_file(ino, pages);
                    } else {
                        self.fs_fallocate(ino, pages);
                    }
                    if !f.invalidate && f.rw.reads() {
                        self.fio_cache_laid_out(ino, pages);
                    }
                }
            }
            files.push(file);
        }
        // each file's IO region
        let per_file = |fsize: u64| -> u64 {
            let total = match f.size {
                Some(FioSize::Bytes(b)) => b / names.len() as u64,
                Some(FioSize::Percent(p)) => fsize * u64::from(p) / 100,
                None => fsize,
            };
            total.min(fsize.saturating_sub(f.offset))
        };
        let region: Vec<(u64, u64)> = files
            .iter()
            .map(|ff| (f.offset, per_file(ff.size)))
            .collect();
        let region_total: u64 = region.iter().map(|r| r.1).sum();
        let loop_bytes = f.io_size.unwrap_or(region_total);
        let ra = files
            .iter()
            .map(|ff| self.file_ra_state_init(ff.dev, f.rw.random()))
            .collect();
        let nblocks = region
            .first()
            .map_or(1, |r| r.1 / f.bs[0].min.min(f.bs[1].min).max(512));
        let dist = Dist::new(f.random_distribution, nblocks, &mut rng);
        let key = rng.next_u64();
        let task = FioTask {
            ci,
            job: Box::new(f.clone()),
            pos: vec![FilePos::default(); files.len()],
            files,
            region,
            ra,
            next_file: 0,
            rng,
            key,
            dist,
            stage: Stage::Init,
            start: 0,
            end_time: Ns::MAX,
            loop_bytes,
            loop_done: 0,
            loops_left: f.loops.max(1),
            issued_ios: [0; 3],
            issued_bytes: [0; 3],
            poisson_due: [0; 3],
            ios_total: 0,
            writes_since_sync: 0,
            wrote: false,
            invalidate_from: None,
        };
        let pid = self.new_task("fio".into(), Body::Fio(Box::new(task)), Some(ji));
        self.fio.by_pid.insert(pid, ci);
        self.fio.clones.push(FioClone {
            job: ji,
            clone: c,
            pid,
            stats: JobStats::default(),
            start: None,
            end: None,
            ios: Vec::new(),
            inflight: 0,
            max_inflight: 0,
            waits_io: false,
            ios_done: 0,
            bytes_done: [0; 3],
            lat_sum: [0; 3],
            lat_max: [0; 3],
            syncs: 0,
            sync_lat_sum: 0,
            offsets_digest: 0,
        });
        Ok(ci)
    }

    /// A file by name: the raw device `/dev/NAME` (its block device inode
    /// for buffered IO), or a regular file created on superblock `sb`.
    fn fio_file_new(
        &mut self,
        name: &str,
        sb: usize,
        f: &FioJob,
        nfiles: u64,
        rng: &mut Prng,
    ) -> Result<FFile, String> {
        let ps = self.page_size();
        if let Some(dname) = name.strip_prefix("/dev/") {
            let dev = self
                .sc
                .devices
                .iter()
                .position(|d| d.name == dname)
                .ok_or_else(|| job_error(f, format!("no device `{dname}`")))?;
            let size = self.sc.devices[dev].size;
            if f.direct {
                return Ok(FFile {
                    ino: None,
                    dev,
                    size,
                });
            }
            let sb = self.sbs.iter().position(|s| s.dev == dev).ok_or_else(|| {
                job_error(f, format!("buffered IO to {name} needs a filesystem on it"))
            })?;
            let ino = self.new_inode(sb, 0);
            let inode = &mut self.inodes[ino];
            inode.bdev = true;
            inode.nr_pages_span = size / ps;
            self.filemap_track(ino);
            return Ok(FFile {
                ino: Some(ino),
                dev,
                size,
            });
        }
        let size = match (f.filesize, f.size) {
            (Some((lo, hi)), _) if hi > lo => lo + rng.below((hi - lo) / 512 + 1) * 512,
            (Some((lo, _)), _) => lo,
            // fio makes the file cover `offset` too
            (None, Some(FioSize::Bytes(b))) => f.offset + b / nfiles,
            _ => return Err(job_error(f, "a regular file needs size= or filesize=")),
        };
        let ino = self.create_inode(sb);
        self.filemap_track(ino);
        Ok(FFile {
            ino: Some(ino),
            dev: self.sbs[sb].dev,
            size,
        })
    }

    /// invalidate=0: the layout's pages stay cached (and clean), as far
    /// as free memory above the reserve takes them.
    fn fio_cache_laid_out(&mut self, ino: InodeId, pages: u64) {
        let room = self
            .vm
            .nr_free_pages
            .saturating_sub(self.vmscan.totalreserve_pages * 4);
        let n = pages.min(room);
        let f = self.ra.files.get_mut(&ino).expect("tracked");
        let added = f.present.insert(0, n);
        self.inodes[ino].nr_cached += added;
        self.vm.nr_file_pages += added;
        self.vm.nr_inactive_file += added;
        self.page_alloc(None, added, crate::mm::page_alloc::Gfp::PageCacheRead);
    }

    /// Start the jobs whose dependencies have all exited (at their start
    /// time at the beginning, now + startdelay later).
    fn fio_start_ready_jobs(&mut self, at_init: bool) {
        for r in 0..self.fio.jobs.len() {
            let run = &self.fio.jobs[r];
            if run.started {
                continue;
            }
            let ready = run.deps.iter().all(|&d| {
                self.fio
                    .jobs
                    .iter()
                    .find(|x| x.job == d)
                    .is_none_or(|x| x.started && x.exited as usize == x.clones.len())
            });
            if !ready {
                continue;
            }
            let ji = run.job;
            let job = &self.sc.jobs[ji];
            let crate::scenario::JobKind::Fio(f) = &job.kind else {
                continue;
            };
            let base = if at_init { job.start } else { self.now() };
            let at = base + f.startdelay;
            let at_init = at_init || at > self.now();
            self.fio.jobs[r].started = true;
            for &ci in &self.fio.jobs[r].clones.clone() {
                let pid = self.fio.clones[ci].pid;
                if !at_init {
                    self.start_task(pid);
                } else {
                    crate::workload::start_at(self, pid, at);
                }
            }
        }
    }

    /// The run ends: the clones still running finish their statistics
    /// now (their IOs in flight are not counted), as fio's do when its
    /// runtime ends.
    pub fn fio_end_of_run(&mut self) {
        let now = self.now();
        for c in &mut self.fio.clones {
            if let (Some(start), None) = (c.start, c.end) {
                let t = &self.tasks[c.pid];
                let ramp = match &self.sc.jobs[c.job].kind {
                    crate::scenario::JobKind::Fio(f) => f.ramp_time,
                    _ => 0,
                };
                let from = (start + ramp).min(now);
                c.stats
                    .finish(from, now, t.utime, t.stime, t.nvcsw + t.nivcsw);
            }
        }
    }

    /// Every clone's statistics: (job index in `sc.jobs`, clone number,
    /// stats), in job and clone order.
    pub fn fio_reports(&self) -> Vec<(usize, u32, JobStats)> {
        self.fio
            .clones
            .iter()
            .map(|c| (c.job, c.clone, c.stats.clone()))
            .collect()
    }

    /// The clone of task `pid`.
    pub fn fio_clone(&self, pid: Pid) -> Option<&FioClone> {
        self.fio.by_pid.get(&pid).map(|&ci| &self.fio.clones[ci])
    }

    /// Tell the clone that direct IO `tag` of `pid` has `n` bios.
    pub(crate) fn dio_expect(&mut self, pid: Pid, tag: u32, n: u32) {
        if let Some(&ci) = self.fio.by_pid.get(&pid) {
            if let Some(Some(io)) = self.fio.clones[ci].ios.get_mut(tag as usize) {
                io.left = n;
            }
        }
    }

    /// One bio of `pid`'s direct IO `tag` completed: the IO completes with
    /// its last; an async engine's IO is recorded now, a sync engine's by
    /// its waiting submitter. The task wakes either way.
    pub fn fio_dio_bio_done(&mut self, pid: Pid, tag: u32) {
        let Some(&ci) = self.fio.by_pid.get(&pid) else {
            return;
        };
        let now = self.now();
        let c = &mut self.fio.clones[ci];
        let Some(Some(io)) = c.ios.get_mut(tag as usize) else {
            return;
        };
        io.left = io.left.saturating_sub(1);
        if io.left > 0 {
            return;
        }
        io.done = Some(now);
        if !io.sync {
            let io = c.ios[tag as usize].take().expect("io");
            c.inflight -= 1;
            let u = IoU {
                dir: io.dir,
                file: 0,
                off: io.off,
                bytes: io.bytes,
                issue: io.issue,
            };
            Self::fio_record(c, u, io.submit, now);
            // io_u_mark_complete: io_getevents reaps each completion as
            // it comes (iodepth_batch_complete_min=1)
            c.stats.add_complete(1);
        }
        if std::mem::take(&mut c.waits_io) {
            self.wake_up_process(pid);
        }
    }

    /// Record a completed IO in a clone's statistics.
    fn fio_record(c: &mut FioClone, io: IoU, submit: Option<Ns>, done: Ns) {
        c.stats
            .add_io(io.dir, io.bytes, io.off, io.issue, submit, done);
        let d = io.dir.idx();
        c.ios_done += 1;
        c.bytes_done[d] += io.bytes;
        let lat = done - io.issue;
        c.lat_sum[d] += lat as u128;
        c.lat_max[d] = c.lat_max[d].max(lat);
    }

    /// A free direct-IO slot of clone `ci` for `io`.
    fn fio_slot(&mut self, ci: usize, io: IoU, submit: Option<Ns>, sync: bool) -> usize {
        let c = &mut self.fio.clones[ci];
        let slot = match c.ios.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                c.ios.push(None);
                c.ios.len() - 1
            }
        };
        c.ios[slot] = Some(DioIo {
            dir: io.dir,
            off: io.off,
            bytes: io.bytes,
            issue: io.issue,
            submit,
            left: u32::MAX,
            sync,
            done: None,
        });
        c.inflight += 1;
        c.max_inflight = c.max_inflight.max(c.inflight);
        slot
    }

    /// Run fio clone `pid` until it needs the CPU, sleeps or exits.
    pub fn fio_step(&mut self, pid: Pid, t: &mut FioTask) -> Action {
        loop {
            let now = self.now();
            match std::mem::replace(&mut t.stage, Stage::Next) {
                Stage::Init => {
                    t.start = now;
                    let j = &t.job;
                    let ramp_end = now + j.ramp_time;
                    t.end_time = match j.runtime {
                        Some(r) => ramp_end + r,
                        None => Ns::MAX,
                    };
                    t.poisson_due = [now; 3];
                    // its logs and its engine's batch accounting
                    let stats = JobStats::for_job(j, ramp_end);
                    let c = &mut self.fio.clones[t.ci];
                    c.stats = stats;
                    c.start = Some(now);
                    // the files are opened (a cache an earlier job left
                    // is dropped)
                    self.fio_invalidate(t);
                }
                Stage::Next => {
                    if let Some(i) = t.invalidate_from.take() {
                        // loop_cache_invalidate: POSIX_FADV_DONTNEED on
                        // each file, whose fdatawrite runs first
                        let next = (i..t.files.len()).find(|&k| t.files[k].ino.is_some());
                        if let Some(k) = next {
                            let ino = t.files[k].ino.expect("inode");
                            t.stage = Stage::Sync {
                                f: Fsync::Fdatawrite(ino),
                                why: SyncFor::Invalidate(k),
                                issue: now,
                            };
                            return Action::Cpu {
                                user: 0,
                                sys: self.sc.machine.cost.syscall,
                            };
                        }
                        continue;
                    }
                    if self.fio_finished(t, now) {
                        if self.fio.clones[t.ci].inflight > 0 {
                            t.stage = Stage::Drain;
                        } else {
                            t.stage = Stage::Closing(0);
                        }
                        continue;
                    }
                    if t.invalidate_from.is_some() {
                        continue; // a new loop: its invalidation first
                    }
                    let is_async = t.job.ioengine.is_async() && t.job.direct;
                    if is_async && self.fio.clones[t.ci].inflight >= t.job.iodepth {
                        // io_getevents: wait for a completion
                        t.stage = Stage::Reaped;
                        self.fio.clones[t.ci].waits_io = true;
                        return self.stalled(pid, reap_stall(t), Action::Block);
                    }
                    let io = self.fio_next_io(t, now);
                    t.stage = Stage::RateWait(io);
                }
                Stage::RateWait(mut io) => {
                    if now >= t.end_time {
                        // the runtime ended while it waited: not issued
                        continue;
                    }
                    let due = self.fio_rate_due(t, io.dir);
                    if due > now {
                        t.stage = Stage::RateWait(io);
                        return Action::SleepUntil(due.min(t.end_time));
                    }
                    io.issue = now;
                    self.fio_account_issue(t, &io);
                    if let Some(a) = self.fio_issue(pid, t, io) {
                        return a;
                    }
                }
                Stage::BufWrite { io, p, end } => {
                    if p >= end {
                        t.stage = Stage::Completed(io);
                        continue;
                    }
                    let ino = t.files[io.file].ino.expect("buffered IO has an inode");
                    let wb = self.inodes[ino].wb;
                    let unit = self.sbs[self.inodes[ino].sb as usize].max_folio_pages;
                    let until = self.throttle_pages_until_check(pid, wb);
                    let n = (until.div_ceil(unit).max(1) * unit).min(end - p);
                    self.filemap_write_begin_tracked(ino, p, n);
                    self.filemap_dirty_range(pid, ino, p, n);
                    t.stage = Stage::BufCheck { io, p: p + n, end };
                    if self.resched_possible(pid) {
                        return Action::Resched;
                    }
                }
                Stage::BufCheck { io, p, end } => {
                    let ino = t.files[io.file].ino.expect("inode");
                    let wb = self.inodes[ino].wb;
                    match self.throttle_check(pid, wb).action() {
                        Some(a) => {
                            t.stage = Stage::BufThrottled { io, p, end };
                            return a;
                        }
                        None => t.stage = Stage::BufWrite { io, p, end },
                    }
                }
                Stage::BufThrottled { io, p, end } => {
                    let ino = t.files[io.file].ino.expect("inode");
                    let wb = self.inodes[ino].wb;
                    match self.throttle_resume(pid, wb).action() {
                        Some(a) => {
                            t.stage = Stage::BufThrottled { io, p, end };
                            return a;
                        }
                        None => t.stage = Stage::BufWrite { io, p, end },
                    }
                }
                Stage::BufRead { io, started } => {
                    let ino = t.files[io.file].ino.expect("inode");
                    let ps = self.page_size();
                    let (p0, p1) = (io.off / ps, (io.off + io.bytes).div_ceil(ps));
                    let mut tag_wait = false;
                    if !started || !self.filemap_all_present(ino, p0, p1) {
                        let (alloc, w) =
                            self.filemap_get_pages(pid, ino, &mut t.ra[io.file], p0, p1);
                        tag_wait = w;
                        let host = self.page_alloc_host_cost(alloc);
                        let c = &self.sc.machine.cost;
                        let sys = alloc * c.page_cache_insert
                            + host
                            + u64::from(alloc > 0) * c.bio_submit;
                        self.tasks[pid].owed_sys += sys;
                    }
                    if !tag_wait && self.filemap_read_ready(pid, ino, p0, p1) {
                        // filemap_read marks the pages accessed, the first
                        // only if the last read did not end in it
                        let same = t.ra[io.file]
                            .prev_pos
                            .is_some_and(|pp| pp > 0 && (pp - 1) / ps == p0);
                        self.folio_mark_accessed(ino, p0 + u64::from(same), p1);
                        t.ra[io.file].prev_pos = Some(io.off + io.bytes);
                        let kib = io.bytes.div_ceil(1024);
                        t.stage = Stage::ReadCopy(io);
                        return Action::Cpu {
                            user: 0,
                            sys: kib * self.sc.machine.cost.copy_per_kib + 1,
                        };
                    }
                    t.stage = Stage::BufRead { io, started: true };
                    // folio_wait_locked (or a request tag): io_schedule()
                    return self.stalled(pid, Stall::Io, Action::Block);
                }
                Stage::ReadCopy(io) => t.stage = Stage::Completed(io),
                Stage::DioSubmit(io) => {
                    let ff = t.files[io.file];
                    let slot = self.fio_slot(t.ci, io, None, true);
                    let (_, wait) = self.submit_dio(
                        pid,
                        ff.dev,
                        ff.ino,
                        io.off,
                        io.bytes,
                        io.dir == Dir::Read,
                        slot as u32,
                    );
                    t.stage = Stage::DioWait(slot);
                    if wait {
                        // a request tag: io_schedule()
                        return self.stalled(pid, Stall::Io, Action::Block);
                    }
                }
                Stage::DioWait(slot) => {
                    let c = &mut self.fio.clones[t.ci];
                    let io = c.ios[slot].expect("io in flight");
                    let Some(done) = io.done else {
                        t.stage = Stage::DioWait(slot);
                        c.waits_io = true;
                        // the direct IO's wait (blk_io_schedule)
                        return self.stalled(pid, Stall::Io, Action::Block);
                    };
                    c.ios[slot] = None;
                    c.inflight -= 1;
                    let u = IoU {
                        dir: io.dir,
                        file: 0,
                        off: io.off,
                        bytes: io.bytes,
                        issue: io.issue,
                    };
                    Self::fio_record(c, u, None, done);
                    t.stage = self.fio_after_io(t, u);
                }
                Stage::AsyncSubmit(io) => {
                    let ff = t.files[io.file];
                    let slot = self.fio_slot(t.ci, io, Some(now), false);
                    // fio's io_u_mark_depth and io_u_mark_submit: the depth
                    // this IO makes, and one IO per io_submit
                    // (iodepth_batch=1)
                    let c = &mut self.fio.clones[t.ci];
                    c.stats.add_depth(c.inflight);
                    c.stats.add_submit(1);
                    let (_, wait) = self.submit_dio(
                        pid,
                        ff.dev,
                        ff.ino,
                        io.off,
                        io.bytes,
                        io.dir == Dir::Read,
                        slot as u32,
                    );
                    t.stage = self.fio_after_io(t, io);
                    if wait {
                        // a request tag in io_submit: io_schedule()
                        return self.stalled(pid, Stall::Io, Action::Block);
                    }
                }
                Stage::Reaped => {
                    // io_getevents returned (or a spurious wakeup)
                    if self.fio.clones[t.ci].inflight >= t.job.iodepth {
                        t.stage = Stage::Reaped;
                        self.fio.clones[t.ci].waits_io = true;
                        return self.stalled(pid, reap_stall(t), Action::Block);
                    }
                    t.stage = Stage::Next;
                    return Action::Cpu {
                        user: 0,
                        sys: self.sc.machine.cost.syscall,
                    };
                }
                Stage::Completed(io) => {
                    // a buffered or null IO done in the caller's context
                    if io.dir == Dir::Write && t.job.sync && !t.job.direct {
                        if let Some(ino) = t.files[io.file].ino {
                            t.stage = Stage::Sync {
                                f: Fsync::Start(ino),
                                why: SyncFor::OSync(io),
                                issue: now,
                            };
                            continue;
                        }
                    }
                    Self::fio_record(&mut self.fio.clones[t.ci], io, None, now);
                    t.stage = self.fio_after_io(t, io);
                }
                Stage::Drain => {
                    if self.fio.clones[t.ci].inflight > 0 {
                        t.stage = Stage::Drain;
                        self.fio.clones[t.ci].waits_io = true;
                        return self.stalled(pid, reap_stall(t), Action::Block);
                    }
                    t.stage = Stage::Closing(0);
                }
                Stage::Sync { mut f, why, issue } => match self.vfs_fsync_step(pid, &mut f) {
                    FsyncStep::Cpu(ns) => {
                        t.stage = Stage::Sync { f, why, issue };
                        return Action::Cpu { user: 0, sys: ns };
                    }
                    FsyncStep::Block => {
                        t.stage = Stage::Sync { f, why, issue };
                        return Action::Block;
                    }
                    FsyncStep::Done => {
                        let c = &mut self.fio.clones[t.ci];
                        match why {
                            SyncFor::OSync(io) => {
                                Self::fio_record(c, io, None, now);
                                t.stage = self.fio_after_io(t, io);
                            }
                            SyncFor::EveryN => {
                                c.stats.add_sync(issue, now);
                                c.syncs += 1;
                                c.sync_lat_sum += u128::from(now - issue);
                                t.stage = self.fio_think_or_next(t);
                            }
                            SyncFor::Close(i) => {
                                c.stats.add_sync(issue, now);
                                c.syncs += 1;
                                c.sync_lat_sum += u128::from(now - issue);
                                t.stage = Stage::Closing(i + 1);
                            }
                            SyncFor::Invalidate(k) => {
                                if let Some(ino) = t.files[k].ino {
                                    self.filemap_fadvise_dontneed(ino);
                                }
                                t.invalidate_from = Some(k + 1);
                                t.stage = Stage::Next;
                            }
                        }
                    }
                },
                Stage::ThinkSpin { spin, until } => {
                    t.stage = Stage::ThinkSleep(until);
                    return Action::Cpu { user: spin, sys: 0 };
                }
                Stage::ThinkSleep(until) => {
                    if until > now {
                        t.stage = Stage::ThinkSleep(until);
                        return Action::SleepUntil(until);
                    }
                }
                Stage::Closing(i) => {
                    let sync_close = t.job.end_fsync && t.wrote || t.job.fsync_on_close;
                    let next = (i..t.files.len()).find(|&k| t.files[k].ino.is_some());
                    match (sync_close, next) {
                        (true, Some(k)) => {
                            let ino = t.files[k].ino.expect("inode");
                            t.stage = Stage::Sync {
                                f: Fsync::Start(ino),
                                why: SyncFor::Close(k),
                                issue: now,
                            };
                            return Action::Cpu {
                                user: 0,
                                sys: self.sc.machine.cost.syscall,
                            };
                        }
                        _ => t.stage = Stage::Done,
                    }
                }
                Stage::Done => {
                    t.stage = Stage::Done;
                    self.fio_exit(pid, t);
                    return Action::Exit;
                }
            }
        }
    }

    /// The clone exits: its statistics are finished and the jobs waiting
    /// for its job may start.
    fn fio_exit(&mut self, pid: Pid, t: &FioTask) {
        let now = self.now();
        let task = &self.tasks[pid];
        let (usr, sys, ctx) = (task.utime, task.stime, task.nvcsw + task.nivcsw);
        let c = &mut self.fio.clones[t.ci];
        c.end = Some(now);
        let from = (t.start + t.job.ramp_time).min(now);
        c.stats.finish(from, now, usr, sys, ctx);
        let ji = c.job;
        if let Some(r) = self.fio.jobs.iter_mut().find(|r| r.job == ji) {
            r.exited += 1;
        }
        self.fio_start_ready_jobs(false);
        // `wbsim fio`: the run is over with the last clone
        if self.fio_end_when_done && self.fio.clones.iter().all(|c| c.end.is_some()) {
            self.end_run_now();
        }
    }

    /// Whether the clone is done: its runtime is over, or (without
    /// `time_based`) its bytes of every loop are issued.
    fn fio_finished(&mut self, t: &mut FioTask, now: Ns) -> bool {
        if now >= t.end_time {
            return true;
        }
        if t.loop_bytes == 0 {
            return true;
        }
        if t.loop_done >= t.loop_bytes {
            if t.job.time_based {
                self.fio_new_loop(t);
                return false;
            }
            if t.loops_left > 1 {
                t.loops_left -= 1;
                self.fio_new_loop(t);
                return false;
            }
            return true;
        }
        false
    }

    /// A new loop over the files: sequential positions back to the start,
    /// a new random-map pass.
    fn fio_new_loop(&mut self, t: &mut FioTask) {
        if t.job.invalidate && !t.job.direct {
            t.invalidate_from = Some(0);
        }
        t.loop_done = 0;
        for p in &mut t.pos {
            p.seq = 0;
            p.pass += 1;
            p.drawn = 0;
            p.run_left = 0;
        }
    }

    /// `invalidate=1` (buffered): fio drops each file's cache when it
    /// opens it and at each new loop (`file_invalidate_cache`:
    /// POSIX_FADV_DONTNEED), so every pass reads from the device.
    fn fio_invalidate(&mut self, t: &FioTask) {
        if !t.job.invalidate || t.job.direct {
            return;
        }
        for f in &t.files {
            if let Some(ino) = f.ino {
                self.filemap_fadvise_dontneed(ino);
            }
        }
    }

    /// Choose the next IO: file (round robin), direction, size, offset.
    fn fio_next_io(&self, t: &mut FioTask, now: Ns) -> IoU {
        let file = t.next_file;
        t.next_file = (t.next_file + 1) % t.files.len();
        let j = &t.job;
        let dir = match j.rw {
            Rw::Read | Rw::RandRead => Dir::Read,
            Rw::Write | Rw::RandWrite => Dir::Write,
            _ => {
                if t.rng.below(100) < u64::from(j.rwmixread) {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        let b = j.bs[dir.idx()];
        let bytes = if b.max > b.min {
            b.min + t.rng.below((b.max - b.min) / b.min + 1) * b.min
        } else {
            b.min
        }
        .min(b.max);
        let (rstart, rlen) = t.region[file];
        let rlen = rlen.max(bytes);
        let p = &mut t.pos[file];
        let rel = if j.rw.random() {
            let minbs = b.min;
            let nblocks = (rlen / minbs).max(1);
            if p.run_left > 0 && p.last + bytes * 2 <= rlen {
                p.run_left -= 1;
                p.last + bytes
            } else {
                p.run_left = j.rw_nr.max(1) - 1;
                let fixed = b.min == b.max;
                let block = if let Some(d) = &t.dist {
                    d.next(&mut t.rng) % nblocks
                } else if j.norandommap || !fixed {
                    t.rng.below((rlen - bytes) / minbs + 1)
                } else {
                    if p.drawn >= nblocks {
                        p.pass += 1;
                        p.drawn = 0;
                    }
                    let i = p.drawn;
                    p.drawn += 1;
                    permute(i, nblocks, mix(t.key ^ p.pass ^ (file as u64) << 40))
                };
                (block * minbs).min(rlen - bytes)
            }
        } else {
            if p.seq + bytes > rlen {
                p.seq = 0;
            }
            let o = p.seq;
            p.seq += bytes;
            o
        };
        p.last = rel;
        IoU {
            dir,
            file,
            off: rstart + rel,
            bytes,
            issue: now,
        }
    }

    /// When the next IO in direction `dir` is due under `rate`/`rate_iops`
    /// (0: now). Linear: when the bytes (IOs) issued so far are due at the
    /// rate since the start; poisson: the process's next arrival.
    fn fio_rate_due(&self, t: &FioTask, dir: Dir) -> Ns {
        let d = dir.idx();
        let (bps, iops) = (t.job.rate[d], t.job.rate_iops[d]);
        if bps == 0 && iops == 0 {
            return 0;
        }
        match t.job.rate_process {
            RateProcess::Linear => {
                let mut due = 0;
                if bps > 0 {
                    let ns = u128::from(t.issued_bytes[d]) * NSEC_PER_SEC / u128::from(bps);
                    due = due.max(t.start + ns as Ns);
                }
                if iops > 0 {
                    let ns = u128::from(t.issued_ios[d]) * NSEC_PER_SEC / u128::from(iops);
                    due = due.max(t.start + ns as Ns);
                }
                due
            }
            RateProcess::Poisson => t.poisson_due[d],
        }
    }

    /// Count an IO as issued (the rate's clock, the loop's bytes, the
    /// poisson process's next arrival).
    fn fio_account_issue(&self, t: &mut FioTask, io: &IoU) {
        let d = io.dir.idx();
        t.issued_ios[d] += 1;
        t.issued_bytes[d] += io.bytes;
        t.loop_done += io.bytes;
        t.ios_total += 1;
        if t.job.rate_process == RateProcess::Poisson {
            let (bps, iops) = (t.job.rate[d], t.job.rate_iops[d]);
            let mean = if iops > 0 {
                1e9 / iops as f64
            } else if bps > 0 {
                io.bytes as f64 * 1e9 / bps as f64
            } else {
                0.0
            };
            // an exponential gap: -ln(u) × mean
            let u = 1.0 - unit(&mut t.rng);
            t.poisson_due[d] = t.poisson_due[d].max(t.start) + (-u.ln() * mean) as Ns;
        }
    }

    /// Issue `io`: the engine's CPU time first, its effect in the stage
    /// after. Returns the action, or None to go on at once.
    fn fio_issue(&mut self, pid: Pid, t: &mut FioTask, io: IoU) -> Option<Action> {
        {
            let c = &mut self.fio.clones[t.ci];
            c.offsets_digest = mix(c.offsets_digest ^ io.off ^ (io.bytes << 48));
        }
        let cost = self.sc.machine.cost.clone();
        let user = cost.fio_io;
        // fio stamps an IO's issue time after its own work on it (io_u
        // setup, offsets) and just before the ioengine's queue call, so
        // that work is in no latency: the burst below runs it first
        let mut io = io;
        io.issue += user;
        let ps = self.page_size();
        let j = &t.job;
        if j.ioengine == IoEngine::Null {
            t.stage = Stage::Completed(io);
            return Some(Action::Cpu { user, sys: 0 });
        }
        let nbios = io.bytes.div_ceil(1 << 20).max(1);
        if j.direct {
            let sys = cost.syscall + nbios * cost.bio_submit;
            t.stage = if j.ioengine.is_async() {
                Stage::AsyncSubmit(io)
            } else {
                Stage::DioSubmit(io)
            };
            return Some(Action::Cpu { user, sys });
        }
        let ino = t.files[io.file].ino.expect("buffered IO has an inode");
        let (p0, p1) = (io.off / ps, (io.off + io.bytes).div_ceil(ps));
        match io.dir {
            Dir::Write => {
                t.wrote = true;
                // pages not yet cached are allocated (the tracked file
                // knows which)
                let new = self
                    .ra
                    .files
                    .get(&ino)
                    .map_or(self.inodes[ino].pages_past_span(p0, p1 - p0), |f| {
                        (p1 - p0) - f.present.overlap(p0, p1)
                    });
                let host = self.page_alloc_host_cost(new);
                // write_begin's lookups: the page in the page cache, and
                // for a new page its block in the filesystem
                let lookup = self.filemap_get_folio_cost(ino, p0)
                    + if new > 0 {
                        self.fs_write_begin_map_cost(ino, p0, p1)
                    } else {
                        0
                    };
                let kib = io.bytes.div_ceil(1024);
                // balance_dirty_pages itself runs only when this write's
                // pages reach the task's check (nr_dirtied_pause), as for
                // dd's batches; balance_dirty_pages_ratelimited's check on
                // the other writes costs next to nothing
                let wb = self.inodes[ino].wb;
                let bdp = if self.throttle_pages_until_check(pid, wb) <= p1 - p0 {
                    cost.bdp_call
                } else {
                    0
                };
                let sys = cost.syscall
                    + kib * cost.copy_per_kib
                    + new * cost.page_cache_insert
                    + host
                    + lookup
                    + bdp;
                self.tasks[pid].wchar += io.bytes;
                t.stage = Stage::BufWrite { io, p: p0, end: p1 };
                Some(Action::Cpu { user, sys })
            }
            _ => {
                t.stage = Stage::BufRead { io, started: false };
                Some(Action::Cpu {
                    user,
                    sys: cost.syscall,
                })
            }
        }
    }

    /// After an IO: an fsync every N writes, then thinktime, then the
    /// next.
    fn fio_after_io(&mut self, t: &mut FioTask, io: IoU) -> Stage {
        let j = &t.job;
        if io.dir == Dir::Write {
            t.writes_since_sync += 1;
            let every = if j.fsync > 0 { j.fsync } else { j.fdatasync };
            if every > 0 && t.writes_since_sync >= every {
                t.writes_since_sync = 0;
                if let Some(ino) = t.files[io.file].ino {
                    if !self.inodes[ino].bdev || !j.direct {
                        return Stage::Sync {
                            f: Fsync::Start(ino),
                            why: SyncFor::EveryN,
                            issue: self.now(),
                        };
                    }
                }
            }
        }
        self.fio_think_or_next(t)
    }

    /// thinktime after every `thinktime_blocks` IOs: `thinktime_spin` on
    /// the CPU, the rest asleep.
    fn fio_think_or_next(&mut self, t: &mut FioTask) -> Stage {
        let j = &t.job;
        if j.thinktime > 0
            && t.ios_total
                .is_multiple_of(u64::from(j.thinktime_blocks.max(1)))
        {
            // the spin is user time; the sleep ends `thinktime` after
            // the IO
            let spin = j.thinktime_spin.min(j.thinktime);
            let until = self.now() + j.thinktime;
            if spin > 0 {
                return Stage::ThinkSpin { spin, until };
            }
            return Stage::ThinkSleep(until);
        }
        Stage::Next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permute_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 64, 100, 1000, 4097] {
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let x = permute(i, n, 42);
                assert!(x < n);
                assert!(!seen[x as usize], "n={n}: {x} twice");
                seen[x as usize] = true;
            }
        }
        // other keys, other orders
        let a: Vec<u64> = (0..100).map(|i| permute(i, 100, 1)).collect();
        let b: Vec<u64> = (0..100).map(|i| permute(i, 100, 2)).collect();
        assert_ne!(a, b);
    }

    #[test]
    fn zeta_tail_matches_the_sum() {
        for theta in [0.8, 1.2, 2.0] {
            let n = 300_000u64;
            let exact: f64 = (1..=n).map(|i| (i as f64).powf(-theta)).sum();
            let z = zeta(n, theta);
            assert!((z / exact - 1.0).abs() < 1e-9, "θ {theta}: {z} vs {exact}");
        }
    }

    #[test]
    fn zipf_concentrates_on_few_blocks() {
        let mut rng = Prng::new(1);
        let d = Dist::new(RandomDist::Zipf(1.2), 10_000, &mut rng).unwrap();
        let mut counts = BTreeMap::new();
        for _ in 0..100_000 {
            *counts.entry(d.next(&mut rng)).or_insert(0u64) += 1;
        }
        let mut v: Vec<u64> = counts.values().copied().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u64 = v.iter().take(10).sum();
        // zipf(1.2) over 10k ranks: the top 10 take about half
        assert!(top10 > 40_000 && top10 < 70_000, "top 10: {top10}");
    }

    #[test]
    fn normal_centres_before_the_scramble() {
        let mut rng = Prng::new(3);
        let d = Dist::new(RandomDist::Normal(5.0), 1000, &mut rng).unwrap();
        let mut counts = BTreeMap::new();
        for _ in 0..20_000 {
            *counts.entry(d.next(&mut rng)).or_insert(0u64) += 1;
        }
        // a narrow normal: far fewer distinct blocks than uniform draws hit
        assert!(counts.len() < 600, "{} distinct", counts.len());
    }
}
