//! fs_mark: each thread creates files in its own directory, `-n` per loop,
//! `-L` loops; a file is open(O_CREAT) + write(`-s` bytes) + close, and
//! with `-S0` nothing is synced. At the end of each loop fs_mark prints
//! `FSUse% Count Size Files/sec App Overhead`; wbsim writes the same lines.
//!
//! Files of one directory allocate from that directory's allocation group,
//! one after another, so consecutive files get adjacent blocks (XFS delayed
//! allocation at writeback time, as in seed 002). A thread's files between
//! two throttle checks are one event.

use crate::kernel::{Action, Kernel, Pid};
use crate::scenario::raw::{err, Origin, ScenarioError};
use crate::scenario::{Job, JobKind, Reader};
use crate::sim::Ns;

/// The most fs_mark threads a job runs (the directories times `-t`), as
/// dd's `numjobs`; the scenario's cap on all jobs' tasks together is the
/// same.
pub const MAX_THREADS: u64 = crate::scenario::MAX_TASKS;
/// `-n` and `-L` at most: fs_mark keeps them in an `int`, and the files of
/// a run (threads × n × L) then fit in a u64.
pub const MAX_FILES_PER_LOOP: u64 = i32::MAX as u64;
pub const MAX_LOOPS: u64 = i32::MAX as u64;
pub const MAX_SUBDIRS: u64 = i32::MAX as u64;
/// The files of a run at most (threads × `-n` × `-L`).
pub const MAX_RUN_FILES: u64 = 1_000_000_000_000_000;
/// `-s` at most (a file is dirtied as one range).
pub const MAX_FILE_SIZE: u64 = 1 << 30;

/// The fs_mark flags wbsim understands: `-d DIR` (repeatable; one set of
/// threads per directory), `-D N` subdirectories per directory, `-n N`
/// files per thread per loop, `-s BYTES` file size, `-S0` (no sync), `-L N`
/// loops, `-t N` threads per directory.
#[derive(Clone, Debug, PartialEq)]
pub struct FsMarkArgs {
    pub dirs: Vec<String>,
    pub subdirs: u64,
    pub files: u64,
    pub size: u64,
    pub loops: u64,
    pub threads_per_dir: u64,
}

impl FsMarkArgs {
    /// Parse fs_mark's flags (as written on its command line).
    pub fn parse(args: &str) -> Result<FsMarkArgs, String> {
        // fs_mark's own defaults: 1000 files of 51200 bytes, one loop
        let mut a = FsMarkArgs {
            dirs: Vec::new(),
            subdirs: 0,
            files: 1000,
            size: 51200,
            loops: 1,
            threads_per_dir: 1,
        };
        let toks: Vec<&str> = args.split_whitespace().collect();
        let mut i = 0;
        let num = |v: Option<&&str>, flag: &str| -> Result<u64, String> {
            let v = v.ok_or_else(|| format!("fs_mark flag `{flag}` needs a number"))?;
            v.parse::<u64>()
                .map_err(|_| format!("fs_mark flag `{flag}`: `{v}` is not a number"))
        };
        while i < toks.len() {
            let t = toks[i];
            // flags may be glued to their value: -S0, -n5000
            // (split after the flag's second character, which need not
            // be one byte: `-é5` is an unknown flag, not a panic)
            let cut = t.char_indices().nth(2).map(|(b, _)| b);
            let (flag, glued) = match cut {
                Some(b) if t.starts_with('-') => (&t[..b], Some(&t[b..])),
                _ => (t, None),
            };
            let mut val = || -> Option<&str> {
                if let Some(g) = glued {
                    Some(g)
                } else {
                    i += 1;
                    toks.get(i).copied()
                }
            };
            match flag {
                "-d" => a.dirs.push(
                    val()
                        .ok_or("fs_mark flag `-d` needs a directory")?
                        .to_string(),
                ),
                "-D" => a.subdirs = num(val().as_ref(), "-D")?,
                "-n" => a.files = num(val().as_ref(), "-n")?,
                "-s" => a.size = num(val().as_ref(), "-s")?,
                "-L" => a.loops = num(val().as_ref(), "-L")?,
                "-t" => a.threads_per_dir = num(val().as_ref(), "-t")?,
                "-S" => {
                    let v = num(val().as_ref(), "-S")?;
                    if v != 0 {
                        return Err(format!("fs_mark `-S{v}`: only -S0 (no sync) is modelled"));
                    }
                }
                f => {
                    return Err(format!(
                        "fs_mark flag `{f}` is not supported; expected -d, -D, -n, -s, -S0, -L, -t"
                    ))
                }
            }
            i += 1;
        }
        if a.dirs.is_empty() {
            return Err("fs_mark needs at least one `-d DIR`".into());
        }
        if a.files == 0 || a.loops == 0 || a.threads_per_dir == 0 {
            return Err("fs_mark -n, -L and -t must be > 0".into());
        }
        let cap = |flag: &str, v: u64, max: u64, what: &str| -> Result<(), String> {
            if v > max {
                return Err(format!(
                    "fs_mark `{flag} {v}`: expected at most {max} {what}"
                ));
            }
            Ok(())
        };
        cap(
            "-t",
            a.threads(),
            MAX_THREADS,
            "threads (directories times -t)",
        )?;
        cap(
            "-n",
            a.files,
            MAX_FILES_PER_LOOP,
            "files per thread per loop",
        )?;
        cap("-L", a.loops, MAX_LOOPS, "loops")?;
        cap("-D", a.subdirs, MAX_SUBDIRS, "subdirectories")?;
        cap("-s", a.size, MAX_FILE_SIZE, "bytes a file (1 GiB)")?;
        let files = a.threads() as u128 * a.files as u128 * a.loops as u128;
        if files > MAX_RUN_FILES as u128 {
            return Err(format!(
                "fs_mark would create {files} files (threads {} × -n {} × -L {}); expected at \
                 most {MAX_RUN_FILES} (a year at a million files a second is 3.2e13)",
                a.threads(),
                a.files,
                a.loops
            ));
        }
        Ok(a)
    }

    pub fn threads(&self) -> u64 {
        self.dirs.len() as u64 * self.threads_per_dir
    }
}

/// The keys of an fs_mark job (`jobs.NAME.args`): one thread per `-d`
/// directory (times `-t`).
pub(crate) fn read_job(
    r: &mut Reader,
    jname: &str,
    jorigin: &Origin,
    job: &mut Job,
) -> Result<(), ScenarioError> {
    let path = format!("jobs.{jname}.args");
    let args = match r.string(&path, "fs_mark's flags as a string")? {
        Some((a, e)) => FsMarkArgs::parse(&a).map_err(|m| ScenarioError {
            origin: e.origin.clone(),
            msg: m,
        })?,
        None => {
            return err(
                jorigin,
                format!(
                "fs_mark job `{jname}` needs `args`, e.g. \"-d /mnt/0 -S0 -n 1000 -s 4096 -L 2\""
            ),
            )
        }
    };
    job.kind = JobKind::FsMark(args);
    Ok(())
}

/// Shared per-job state: loop completion times and the output lines.
#[derive(Clone, Debug, Default)]
pub struct FsMarkJob {
    pub threads: u64,
    pub args: Option<FsMarkArgs>,
    pub start: Ns,
    /// Threads that finished each loop, and when the last one did.
    pub loop_done: Vec<u64>,
    pub loop_end: Vec<Ns>,
    pub lines: Vec<String>,
    pub files: u64,
    pub finished_at: Option<Ns>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Ready,
    Creating { files: u64 },
    Throttled,
    Done,
}

pub struct FsMarkThread {
    pub job: usize,
    pub sb: usize,
    /// The allocation group of this thread's directory.
    pub ag: u32,
    pub files_per_loop: u64,
    pub loops: u64,
    pub size: u64,
    pub loop_no: u64,
    pub in_loop: u64,
    stage: Stage,
    pub files: u64,
}

impl FsMarkThread {
    pub fn new(job: usize, sb: usize, ag: u32, a: &FsMarkArgs) -> FsMarkThread {
        FsMarkThread {
            job,
            sb,
            ag,
            files_per_loop: a.files,
            loops: a.loops,
            size: a.size,
            loop_no: 0,
            in_loop: 0,
            stage: Stage::Ready,
            files: 0,
        }
    }
}

impl Kernel {
    pub fn fs_mark_step(&mut self, pid: Pid, f: &mut FsMarkThread) -> Action {
        let wb = self.sbs[f.sb].wb;
        let ps = self.page_size();
        let pages = f.size.div_ceil(ps).max(1);
        loop {
            match f.stage {
                Stage::Done => return Action::Exit,
                Stage::Throttled => match self.throttle_resume(pid, wb).action() {
                    Some(action) => return action,
                    None => f.stage = Stage::Ready,
                },
                Stage::Creating { files } => {
                    for k in 0..files {
                        if !self.fs_trans_start(f.sb, pid) {
                            // ext4_create's handle waits for the journal
                            f.stage = Stage::Creating { files: files - k };
                            return Action::Block;
                        }
                        let ino = self.create_inode_in(f.sb, f.ag);
                        self.filemap_dirty_range(pid, ino, 0, pages);
                        self.iput(ino); // close(); -S0: no fsync
                        self.tasks[pid].wchar += f.size;
                        f.files += 1;
                        self.tasks[pid].files_created += 1;
                        f.in_loop += 1;
                        if f.in_loop == f.files_per_loop {
                            self.fs_mark_loop_done(f.job, f.loop_no);
                            f.loop_no += 1;
                            f.in_loop = 0;
                        }
                        // balance_dirty_pages_ratelimited after each write()
                        if let Some(action) = self.throttle_check(pid, wb).action() {
                            f.stage = Stage::Throttled;
                            return action;
                        }
                    }
                    f.stage = Stage::Ready;
                }
                Stage::Ready => {
                    if f.loop_no >= f.loops {
                        f.stage = Stage::Done;
                        continue;
                    }
                    // files until the next check could throttle, within this loop
                    let until = self.throttle_pages_until_check(pid, wb);
                    let left_in_run = (f.loops - f.loop_no) * f.files_per_loop - f.in_loop;
                    // at most 64 files a burst: a model bound that keeps a
                    // burst short next to the scheduler's slice
                    let files = until.div_ceil(pages).clamp(1, left_in_run.min(64));
                    let host = self.page_alloc_host_cost(files * pages);
                    let c = &self.sc.machine.cost;
                    let kib = files * f.size.div_ceil(1024);
                    let sys = files * (3 * c.syscall + c.file_create + pages * c.page_cache_insert)
                        + kib * c.copy_per_kib
                        + host;
                    f.stage = Stage::Creating { files };
                    return Action::Cpu {
                        user: files * c.syscall,
                        sys,
                    };
                }
            }
        }
    }

    /// A thread finished loop `l`; when all have, print fs_mark's line.
    fn fs_mark_loop_done(&mut self, job: usize, l: u64) {
        let now = self.now();
        let fsuse = {
            let fs = &self.sc.filesystems[self.sc.jobs[job].filesystem];
            let dev = &self.sc.devices[fs.device];
            let used: u64 = self
                .sbs
                .iter()
                .filter(|s| s.dev == fs.device)
                .map(|s| s.used_sectors())
                .sum();
            (used * 512 * 100 / dev.size.max(1)).min(100)
        };
        let j = &mut self.fsmark[job];
        let l = l as usize;
        if j.loop_done.len() <= l {
            j.loop_done.resize(l + 1, 0);
            j.loop_end.resize(l + 1, 0);
        }
        j.loop_done[l] += 1;
        if j.loop_done[l] == j.threads {
            j.loop_end[l] = now;
            let a = j.args.as_ref().expect("args");
            let n = j.threads * a.files;
            j.files += n;
            let t0 = if l == 0 { j.start } else { j.loop_end[l - 1] };
            let secs = (now - t0).max(1) as f64 / 1e9;
            j.lines.push(format!(
                "{:>6} {:>12} {:>10} {:>16.1} {:>12}",
                fsuse,
                j.files,
                a.size,
                n as f64 / secs,
                0
            ));
            if l as u64 + 1 == a.loops {
                j.finished_at = Some(now);
            }
        }
    }

    /// fs_mark's output for every fs_mark job, as it prints it.
    pub fn fs_mark_output(&self) -> String {
        let mut s = String::new();
        for (i, j) in self.fsmark.iter().enumerate() {
            let Some(a) = &j.args else { continue };
            s += &format!(
                "#  fs_mark (wbsim job {}): {} thread(s), {} files of {} bytes per loop each, {} loop(s)\n",
                self.sc.jobs[i].name,
                j.threads,
                a.files,
                a.size,
                a.loops
            );
            s += "FSUse%        Count         Size    Files/sec     App Overhead\n";
            for l in &j.lines {
                s += l;
                s.push('\n');
            }
            if let Some(t) = j.finished_at {
                s += &format!("# finished after {:.3} s\n", (t - j.start) as f64 / 1e9);
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::FsMarkArgs;

    #[test]
    fn counts_that_scale_the_work_have_caps() {
        let e = FsMarkArgs::parse("-d /a -t 10000000").unwrap_err();
        assert_eq!(
            e,
            "fs_mark `-t 10000000`: expected at most 100000 threads (directories times -t)"
        );
        // the threads of all directories together
        let e = FsMarkArgs::parse("-d /a -d /b -t 60000").unwrap_err();
        assert!(e.starts_with("fs_mark `-t 120000`"), "{e}");
        assert!(FsMarkArgs::parse("-d /a -d /b -t 50000").is_ok());
        let e = FsMarkArgs::parse("-d /a -n 99999999999").unwrap_err();
        assert!(e.contains("expected at most 2147483647 files"), "{e}");
        let e = FsMarkArgs::parse("-d /a -L 99999999999").unwrap_err();
        assert!(e.contains("loops"), "{e}");
        let e = FsMarkArgs::parse("-d /a -s 99999999999").unwrap_err();
        assert!(e.contains("1 GiB"), "{e}");
        let e = FsMarkArgs::parse("-d /a -t 100000 -n 2147483647 -L 2147483647").unwrap_err();
        assert!(
            e.starts_with("fs_mark would create 461168601413242060900000 files (threads 100000"),
            "{e}"
        );
        assert!(FsMarkArgs::parse("-d /a -t 100000 -n 100000 -L 100000").is_ok());
    }

    #[test]
    fn a_flag_of_any_characters_is_an_error_not_a_panic() {
        // found by fuzz/fuzz_targets/fs_mark_args.rs: a byte slice through
        // a two-byte character
        let e = FsMarkArgs::parse("-d /mnt/s -\u{fe}\u{ff}x -n 5").unwrap_err();
        assert!(e.contains("is not supported"), "{e}");
        assert!(FsMarkArgs::parse("-é").is_err());
        assert_eq!(FsMarkArgs::parse("-d /a -n5 -S0").unwrap().files, 5);
    }
}
