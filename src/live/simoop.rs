//! `wbsim simoop`: simoop (Chris Mason's benchmark of the VM pressure of a
//! Hadoop-like load, mason/simoop.git) run on this machine's kernel, with
//! real threads on real directories, printing simoop's own lines. It runs
//! the loop of wbsim's model of simoop (src/workload/simoop.rs, whose
//! module doc describes it) and prints through the model's formatter
//! ([`SimoopStats`]), so that a kernel run and a simulated run of the same
//! flags are read the same way. It needs no root.
//!
//! [`lay_out`] first writes the file set, as the model lays its files out
//! on disk before the run: `-n` files of `-f MB` in each directory
//! (`DIR/simoop.N`), with large buffered writes, then `fdatasync` and
//! `POSIX_FADV_DONTNEED` on each, so that they are on disk and not cached.
//! [`run_on`] then starts the threads of the model's `simoop_init`: `-t`
//! workers ([`worker`], the model's `simoop_worker`), `-C` CPU burners,
//! `-D` du threads ([`du`], `simoop_du`), and reports from the calling
//! thread (the model's `simoop_report`): after `-w` s `Warmup complete`,
//! then a block every `-i` s, and after `-r` s more `Final stats:` and the
//! last block. Latencies go into fio's histograms (nanoseconds), as in the
//! model; a sample that began in the warm-up is not counted, as the model
//! drops it. The alloc stall rate is the growth per second of the sum of
//! /proc/vmstat's `allocstall_*` counters (the model's `vm.allocstall`).
//!
//! Where it differs from the model: each worker's write buffer is
//! allocated and touched once, before its loop (the model does not model
//! the write buffers' faults); the threads' creation, which the model does
//! not charge, is part of the measured read latency here, as in simoop;
//! with `-w 0` the model's reporter prints a `Run time: 0 seconds` block at
//! the start and counts a rate of 0 among its per-interval rates, and this
//! program does not.

use crate::live::anon::Anon;
use crate::sim::Prng;
use crate::workload::simoop::{Latency, SimoopArgs, SimoopStats, SimoopSummary};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const MB: u64 = 1 << 20;
/// The layout's write size: large buffered writes.
const LAYOUT_CHUNK: u64 = 8 * MB;
/// Iterations of a burner's arithmetic between two looks at the stop flag.
const BURN_SPIN: u32 = 1 << 16;

/// The file set: each directory's files, in the order of the directories
/// on the command line.
#[derive(Clone, Debug)]
pub struct FileSet {
    pub dirs: Vec<Vec<PathBuf>>,
}

/// What a run ends with: the final figures and the statistics they were
/// computed from (the sample counts, the per-interval rates).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub summary: SimoopSummary,
    pub stats: SimoopStats,
}

/// `v` MB in bytes, as a size this machine can map.
fn bytes(v: u64, flag: &str) -> Result<usize, String> {
    v.checked_mul(MB)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| format!("simoop's {flag} {v} MB is too large"))
}

/// Check the directories before anything is written: each must be an
/// existing directory, and none may be given twice (their files would be
/// the same).
pub fn check_dirs(a: &SimoopArgs) -> Result<(), String> {
    let mut seen = Vec::new();
    for d in &a.dirs {
        let c = std::fs::canonicalize(d).map_err(|e| format!("directory `{d}`: {e}"))?;
        if !c.is_dir() {
            return Err(format!("`{d}` is not a directory"));
        }
        if seen.contains(&c) {
            return Err(format!("directory `{d}` is given twice"));
        }
        seen.push(c);
    }
    bytes(a.ws_mb, "-m")?;
    bytes(a.alloc_mb, "-M")?;
    bytes(a.file_mb, "-f")?;
    Ok(())
}

/// Lay out the file set (the model's `simoop_init`, which lays its files
/// out on disk uncached): `-n` files of `-f MB` in each directory, written
/// with buffered writes of up to 8 MiB, then each `fdatasync`ed and dropped
/// from the page cache (`POSIX_FADV_DONTNEED`). All files are written
/// before the first is synced, so that writeback of the earlier ones goes
/// on while the later ones are written. Existing files of the same names
/// are overwritten.
pub fn lay_out(a: &SimoopArgs) -> Result<FileSet, String> {
    check_dirs(a)?;
    let size = a.file_mb * MB;
    let chunk = vec![0xa5u8; bytes(a.file_mb.min(LAYOUT_CHUNK / MB), "-f")?];
    let mut dirs = Vec::new();
    for d in &a.dirs {
        let mut v = Vec::new();
        for n in 0..a.files_per_dir {
            let p = Path::new(d).join(format!("simoop.{n}"));
            let mut f = File::create(&p).map_err(|e| format!("create {}: {e}", p.display()))?;
            let mut done = 0;
            while done < size {
                let len = (size - done).min(chunk.len() as u64) as usize;
                f.write_all(&chunk[..len])
                    .map_err(|e| format!("write {}: {e}", p.display()))?;
                done += len as u64;
            }
            v.push(p);
        }
        dirs.push(v);
    }
    for p in dirs.iter().flatten() {
        let f = File::open(p).map_err(|e| format!("open {}: {e}", p.display()))?;
        f.sync_data()
            .map_err(|e| format!("fdatasync {}: {e}", p.display()))?;
        // SAFETY: posix_fadvise(2) on a file descriptor we own.
        let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if r != 0 {
            return Err(format!(
                "posix_fadvise {}: {}",
                p.display(),
                std::io::Error::from_raw_os_error(r)
            ));
        }
    }
    Ok(FileSet { dirs })
}

/// The file set a earlier `lay_out` left: each directory's `-n` files,
/// each of `-f` MB (`wbsim simoop --laid-out`, as `wbsim live` runs it
/// after laying the files out before its run starts).
pub fn laid_out(a: &SimoopArgs) -> Result<FileSet, String> {
    check_dirs(a)?;
    let size = a.file_mb * MB;
    let mut dirs = Vec::new();
    for d in &a.dirs {
        let mut v = Vec::new();
        for n in 0..a.files_per_dir {
            let p = Path::new(d).join(format!("simoop.{n}"));
            let len = std::fs::metadata(&p)
                .map_err(|e| format!("{}: {e} (lay the files out first)", p.display()))?
                .len();
            if len != size {
                return Err(format!(
                    "{} holds {len} bytes, not the {size} of `-f {}`",
                    p.display(),
                    a.file_mb
                ));
            }
            v.push(p);
        }
        dirs.push(v);
    }
    Ok(FileSet { dirs })
}

/// Lay out the file set and run simoop on it, printing its lines to `out`
/// (flushed after each block); the random choices come from `seed`.
pub fn run(a: &SimoopArgs, seed: u64, out: &mut dyn Write) -> Result<Outcome, String> {
    let files = lay_out(a)?;
    run_on(a, &files, seed, out)
}

/// The end of the run: a flag the busy threads look at, and a condition
/// variable the sleeping ones wait on.
struct Stop {
    flag: AtomicBool,
    lock: Mutex<bool>,
    cv: Condvar,
}

impl Stop {
    fn new() -> Stop {
        Stop {
            flag: AtomicBool::new(false),
            lock: Mutex::new(false),
            cv: Condvar::new(),
        }
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    fn set(&self) {
        let mut g = lock(&self.lock);
        *g = true;
        self.flag.store(true, Ordering::Relaxed);
        self.cv.notify_all();
    }

    /// Sleep until `t` or the stop, whichever comes first: whether the
    /// stop came.
    fn sleep_until(&self, t: Instant) -> bool {
        let mut g = lock(&self.lock);
        loop {
            if *g {
                return true;
            }
            let now = Instant::now();
            if now >= t {
                return false;
            }
            g = self
                .cv
                .wait_timeout(g, t - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// A lock that a panicked holder did not spoil (its data stays usable).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the threads share.
struct Shared<'a> {
    args: &'a SimoopArgs,
    files: &'a FileSet,
    page: usize,
    /// The warm-up's end: samples that began before it are not counted.
    warm: Instant,
    stats: Mutex<SimoopStats>,
    /// Worker loops begun (the work rate's unit).
    loops: AtomicU64,
    stop: Stop,
    /// The first thread's error, which ends the run.
    error: Mutex<Option<String>>,
}

impl Shared<'_> {
    /// Count a latency sample that began at `start` and ends now (the
    /// model's `simoop_record`).
    fn record(&self, which: Latency, start: Instant) {
        if start < self.warm {
            return;
        }
        let ns = start.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        lock(&self.stats).add(which, ns);
    }

    /// End the run with `e` (the first error is the one kept).
    fn fail(&self, e: String) {
        lock(&self.error).get_or_insert(e);
        self.stop.set();
    }

    /// A random file and a random offset in it, aligned to `len` (the
    /// model's `simoop_pick` and its draw of the first page).
    fn pick(&self, rng: &mut Prng, len: u64) -> (&Path, u64) {
        let d = rng.below(self.files.dirs.len() as u64) as usize;
        let f = rng.below(self.files.dirs[d].len() as u64) as usize;
        let off = rng.below(self.args.file_mb * MB / len) * len;
        (&self.files.dirs[d][f], off)
    }
}

/// The sum of /proc/vmstat's `allocstall_*` counters (`allocstall` before
/// 4.10), in the text `vmstat`.
pub fn allocstalls(vmstat: &str) -> u64 {
    vmstat
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let k = it.next()?;
            if k != "allocstall" && !k.starts_with("allocstall_") {
                return None;
            }
            it.next()?.parse::<u64>().ok()
        })
        .sum()
}

/// This machine's allocation stalls so far; 0 if /proc/vmstat cannot be
/// read.
fn allocstalls_now() -> u64 {
    std::fs::read_to_string("/proc/vmstat")
        .map(|t| allocstalls(&t))
        .unwrap_or(0)
}

/// One worker (simoop's worker thread, the model's `simoop_worker`): its
/// `-m MB` working set allocated and touched once and kept to the end,
/// then loops until the run ends, each loop one unit of work rate:
///
/// 1. a timed allocation of `-M MB`: mapped, every page touched, unmapped
///    ("Allocation latency");
/// 2. `-T` reads of `-R MB` from random files at random offsets aligned to
///    `-R MB`, issued together on `-T` threads, each opening its file and
///    reading into a fresh untouched mapping, so that the read's copy
///    faults the buffer in; one sample from the issue until the last is
///    done ("Read latency");
/// 3. `-T` buffered writes (`pwrite`) of `-W MB` to random files at
///    random offsets aligned to `-W MB`, one after another, each opening
///    its file; one sample from the first's start to the last's end, as
///    the model times them ("Write latency").
fn worker(sh: &Shared, seed: u64) -> Result<(), String> {
    let a = sh.args;
    let mut rng = Prng::new(seed);
    let mut ws = Anon::new(bytes(a.ws_mb, "-m")?)?;
    ws.touch(sh.page);
    let alloc = bytes(a.alloc_mb, "-M")?;
    let (rlen, wlen) = (a.read_mb * MB, a.write_mb * MB);
    let wbuf = vec![0x5au8; bytes(a.write_mb, "-W")?];
    while !sh.stop.is_set() {
        sh.loops.fetch_add(1, Ordering::Relaxed);

        let t = Instant::now();
        let mut m = Anon::new(alloc)?;
        m.touch(sh.page);
        drop(m);
        sh.record(Latency::Alloc, t);

        let t = Instant::now();
        let reads: Vec<(&Path, u64)> = (0..a.io_threads).map(|_| sh.pick(&mut rng, rlen)).collect();
        std::thread::scope(|sc| -> Result<(), String> {
            let mut hs = Vec::new();
            let mut res = Ok(());
            for &(p, off) in &reads {
                let h = std::thread::Builder::new()
                    .name("simoop-io".into())
                    .spawn_scoped(sc, move || read_one(p, off, rlen as usize));
                match h {
                    Ok(h) => hs.push(h),
                    Err(e) => {
                        res = Err(format!("cannot start a read thread: {e}"));
                        break;
                    }
                }
            }
            for h in hs {
                let r = h
                    .join()
                    .unwrap_or_else(|_| Err("a read thread panicked".into()));
                if res.is_ok() {
                    res = r;
                }
            }
            res
        })?;
        sh.record(Latency::Read, t);

        let t = Instant::now();
        for _ in 0..a.io_threads {
            let (p, off) = sh.pick(&mut rng, wlen);
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .map_err(|e| format!("open {}: {e}", p.display()))?;
            f.write_all_at(&wbuf, off)
                .map_err(|e| format!("write {}: {e}", p.display()))?;
        }
        sh.record(Latency::Write, t);
    }
    drop(ws);
    Ok(())
}

/// One of a worker's reads: open `p`, read `len` bytes at `off` into a
/// fresh anonymous mapping (faulted in by the read's copy), unmap it.
fn read_one(p: &Path, off: u64, len: usize) -> Result<(), String> {
    let f = File::open(p).map_err(|e| format!("open {}: {e}", p.display()))?;
    let mut buf = Anon::new(len)?;
    f.read_exact_at(buf.as_mut_slice(), off)
        .map_err(|e| format!("read {}: {e}", p.display()))
}

/// A CPU burner (simoop's `-C` threads, the model's `Role::Burner`):
/// arithmetic until the run ends.
fn burner(stop: &Stop) {
    let mut x: u64 = 1;
    while !stop.is_set() {
        for _ in 0..BURN_SPIN {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
        }
        std::hint::black_box(x);
    }
}

/// A du thread (simoop's `-D` threads, the model's `simoop_du`): stat
/// every file of directory `dir`, then sleep an interval, until the run
/// ends.
fn du(sh: &Shared, dir: usize) -> Result<(), String> {
    let every = Duration::from_secs(sh.args.interval_s);
    loop {
        for p in &sh.files.dirs[dir] {
            if sh.stop.is_set() {
                return Ok(());
            }
            std::fs::symlink_metadata(p).map_err(|e| format!("stat {}: {e}", p.display()))?;
        }
        if sh.stop.sleep_until(Instant::now() + every) {
            return Ok(());
        }
    }
}

/// Run simoop on the file set `files` (from [`lay_out`]), printing its
/// lines to `out` (flushed after each block); the workers' random choices
/// come from `seed`. The reporter is the model's `simoop_report`: after the
/// warm-up (`-w`), `Warmup complete (N seconds)` and the rates' baselines
/// restart; every `-i` s a block (the last interval cut short by the run's
/// end); after `-r` s `Final stats:` and the last block, and the threads
/// are stopped and joined (their mappings unmapped).
pub fn run_on(
    a: &SimoopArgs,
    files: &FileSet,
    seed: u64,
    out: &mut dyn Write,
) -> Result<Outcome, String> {
    if files.dirs.len() != a.dirs.len() || files.dirs.iter().any(|v| v.is_empty()) {
        return Err("the file set does not match simoop's directories".into());
    }
    // SAFETY: sysconf(3) has no preconditions.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        p if p > 0 => p as usize,
        _ => 4096,
    };
    let t0 = Instant::now();
    let warm = t0 + Duration::from_secs(a.warmup_s);
    let end = warm + Duration::from_secs(a.runtime_s);
    let sh = Shared {
        args: a,
        files,
        page,
        warm,
        stats: Mutex::new(SimoopStats::default()),
        loops: AtomicU64::new(0),
        stop: Stop::new(),
        error: Mutex::new(None),
    };
    let mut seeds = Prng::new(seed);
    let res = std::thread::scope(|sc| {
        let sh = &sh;
        let mut started = Ok(());
        for _ in 0..a.threads {
            let s = seeds.next_u64();
            started = started.and_then(|_| start(sc, sh, "simoop", move || worker(sh, s)));
        }
        for _ in 0..a.cpu_threads {
            started = started.and_then(|_| {
                start(sc, sh, "simoop-cpu", move || {
                    burner(&sh.stop);
                    Ok(())
                })
            });
        }
        for d in 0..a.du_threads {
            let dir = d as usize % files.dirs.len();
            started = started.and_then(|_| start(sc, sh, "simoop-du", move || du(sh, dir)));
        }
        let r = match started {
            Ok(()) => report(sh, out, t0, end),
            Err(e) => Err(e),
        };
        sh.stop.set();
        r
    });
    // a thread's error is the cause of the reporter's early end
    if let Some(e) = lock(&sh.error).take() {
        return Err(e);
    }
    res
}

/// Start a thread of the run in scope `sc`: its error ends the run.
fn start<'scope>(
    sc: &'scope std::thread::Scope<'scope, '_>,
    sh: &'scope Shared<'scope>,
    name: &str,
    f: impl FnOnce() -> Result<(), String> + Send + 'scope,
) -> Result<(), String> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn_scoped(sc, move || {
            if let Err(e) = f() {
                sh.fail(e);
            }
        })
        .map(|_| ())
        .map_err(|e| format!("cannot start a {name} thread: {e}"))
}

/// The reporter (the model's `simoop_report`), on the calling thread.
fn report(sh: &Shared, out: &mut dyn Write, t0: Instant, end: Instant) -> Result<Outcome, String> {
    let a = sh.args;
    let io = |e: std::io::Error| format!("writing simoop's output: {e}");
    let stopped = || Err("the run was stopped by an error".to_string());
    let every = Duration::from_secs(a.interval_s);
    let (mut at, mut loops_at, mut stalls_at) = (t0, 0, allocstalls_now());
    if sh.warm > t0 {
        if sh.stop.sleep_until(sh.warm) {
            return stopped();
        }
        writeln!(out, "Warmup complete ({} seconds)", a.warmup_s).map_err(io)?;
        out.flush().map_err(io)?;
        // no sample that began in the warm-up was counted: only the rates
        // restart
        at = Instant::now();
        loops_at = sh.loops.load(Ordering::Relaxed);
        stalls_at = allocstalls_now();
    }
    let mut next = sh.warm;
    loop {
        next = (next + every).min(end);
        if sh.stop.sleep_until(next) {
            return stopped();
        }
        let now = Instant::now();
        let loops = sh.loops.load(Ordering::Relaxed);
        let stalls = allocstalls_now();
        let dt = (now - at).as_secs_f64();
        let mut st = lock(&sh.stats);
        if dt > 0.0 {
            st.work_rates.push((loops - loops_at) as f64 / dt);
            st.stall_rates
                .push(stalls.saturating_sub(stalls_at) as f64 / dt);
        }
        (at, loops_at, stalls_at) = (now, loops, stalls);
        let block = st.block((now - sh.warm).as_secs());
        let fin = next >= end;
        let outcome = fin.then(|| Outcome {
            summary: st.summary(),
            stats: st.clone(),
        });
        drop(st);
        if fin {
            out.write_all(b"Final stats:\n").map_err(io)?;
        }
        out.write_all(block.as_bytes()).map_err(io)?;
        out.flush().map_err(io)?;
        if let Some(o) = outcome {
            return Ok(o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocstalls_sums_every_zone() {
        let v = "nr_free_pages 100\nallocstall_dma 1\nallocstall_dma32 20\nallocstall_normal 300\nallocstall_movable 4000\nallocstall_device 0\npgscan_direct 7\n";
        assert_eq!(allocstalls(v), 4321);
        // before 4.10: one counter
        assert_eq!(allocstalls("allocstall 12\npgfault 9\n"), 12);
        assert_eq!(allocstalls(""), 0);
    }

    #[test]
    fn check_dirs_refuses_missing_and_repeated_directories() {
        let d = std::env::temp_dir().join(format!("wbsim-simoop-dirs-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let ds = d.to_str().unwrap();
        let a = SimoopArgs::parse(&format!("-f 1 {ds}")).unwrap();
        assert_eq!(check_dirs(&a), Ok(()));
        let a = SimoopArgs::parse(&format!("-f 1 {ds} {ds}/.")).unwrap();
        assert!(check_dirs(&a).unwrap_err().contains("given twice"));
        let a = SimoopArgs::parse(&format!("-f 1 {ds}/nope")).unwrap();
        assert!(check_dirs(&a).unwrap_err().contains("nope"));
        let _ = std::fs::remove_dir_all(&d);
    }

    /// The real program for 3 s in a temporary directory (no root): the
    /// file set laid out, the warm-up, a block a second, the final block,
    /// and samples of all three latencies.
    #[test]
    fn runs_simoop_on_a_real_directory() {
        let d = std::env::temp_dir().join(format!("wbsim-simoop-live-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let a = SimoopArgs::parse(&format!(
            "-t 2 -m 1 -M 1 -T 2 -R 1 -W 1 -f 2 -n 4 -w 1 -r 2 -i 1 -C 1 -D 1 {}",
            d.display()
        ))
        .unwrap();
        let mut out = Vec::new();
        let t = Instant::now();
        let o = run(&a, 1, &mut out).expect("simoop runs");
        let took = t.elapsed();
        let text = String::from_utf8(out).unwrap();
        for n in 0..4 {
            let m = std::fs::metadata(d.join(format!("simoop.{n}"))).unwrap();
            assert_eq!(m.len(), 2 << 20);
        }
        let _ = std::fs::remove_dir_all(&d);
        assert!(took >= Duration::from_secs(3), "{took:?}");
        assert!(
            text.starts_with("Warmup complete (1 seconds)\nRun time: 1 seconds\n"),
            "{text}"
        );
        let fin = text.split("Final stats:\n").nth(1).expect("final stats");
        let lines: Vec<&str> = fin.lines().collect();
        assert_eq!(lines.len(), 6, "{fin}");
        assert_eq!(lines[0], "Run time: 2 seconds");
        assert!(lines[1].starts_with("Read latency (p50: "), "{fin}");
        assert!(lines[2].starts_with("Write latency (p50: "), "{fin}");
        assert!(lines[3].starts_with("Allocation latency (p50: "), "{fin}");
        assert!(lines[4].starts_with("work rate = "), "{fin}");
        assert!(lines[5].starts_with("alloc stall rate = "), "{fin}");
        // two intervals after the warm-up: the 1 s block and the final one
        assert_eq!(text.matches("Run time: ").count(), 2, "{text}");
        let [r, w, al] = o.stats.nr;
        assert!(r > 0 && w > 0 && al > 0, "samples {:?}", o.stats.nr);
        assert_eq!(o.stats.work_rates.len(), 2);
        assert!(o.summary.work_rate > 0.0, "{:?}", o.summary);
        assert!(o.summary.read_p50_us > 0 && o.summary.alloc_p50_us > 0);
        // the final block is the summary's, as in the model
        assert_eq!(text.matches(&o.stats.block(2)).count(), 1, "{text}");
    }
}
