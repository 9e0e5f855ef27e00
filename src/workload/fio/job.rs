//! A fio job as the simulator reads it: the typed options that decide what
//! reaches the writeback stack, after `[global]` inheritance, `include`,
//! `${VAR}` and `(expr)` expansion and size suffixes. `numjobs` is not yet
//! expanded into clones (the engine does that, as fio's `add_job` does).
//!
//! The parser (`parse.rs`) fills this from a job file or a command line;
//! the engine (`engine.rs`) and the output (`output.rs`) read it. Field
//! names are fio's option names where there is one.

use crate::sim::Ns;

/// fio's data directions (`enum fio_ddir`): the index of per-direction
/// values such as `bs=64k,8k` (read, write, trim).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

impl Dir {
    pub const ALL: [Dir; 3] = [Dir::Read, Dir::Write, Dir::Trim];
    pub fn idx(self) -> usize {
        self as usize
    }
    /// fio's name in its JSON output ("read", "write", "trim").
    pub fn name(self) -> &'static str {
        match self {
            Dir::Read => "read",
            Dir::Write => "write",
            Dir::Trim => "trim",
        }
    }
}

/// `rw=` (`readwrite=`): the pattern, with the `:N` sequential-skip suffix
/// kept apart in `FioJob::rw_nr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rw {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// `rw`, `readwrite`: mixed sequential reads and writes.
    ReadWrite,
    /// `randrw`: mixed random reads and writes.
    RandRw,
    /// `trim`, `randtrim`, `trimwrite`, `randtrimwrite`: parsed, refused by
    /// the engine (no discard model).
    Trim,
    RandTrim,
    TrimWrite,
}

impl Rw {
    pub fn reads(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::ReadWrite | Rw::RandRw)
    }
    pub fn writes(self) -> bool {
        matches!(
            self,
            Rw::Write | Rw::RandWrite | Rw::ReadWrite | Rw::RandRw | Rw::TrimWrite
        )
    }
    pub fn random(self) -> bool {
        matches!(
            self,
            Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim
        )
    }
}

/// `ioengine=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoEngine {
    /// read(2)/write(2) with lseek(2).
    Sync,
    /// pread(2)/pwrite(2) (fio's default on Linux).
    Psync,
    /// preadv(2)/pwritev(2).
    Pvsync,
    /// Linux native AIO: `iodepth` in flight, O_DIRECT only in effect.
    Libaio,
    IoUring,
    /// No IO at all: completes at once (fio's `null` engine).
    Null,
}

impl IoEngine {
    /// fio's name for it.
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Sync => "sync",
            IoEngine::Psync => "psync",
            IoEngine::Pvsync => "pvsync",
            IoEngine::Libaio => "libaio",
            IoEngine::IoUring => "io_uring",
            IoEngine::Null => "null",
        }
    }
    /// An asynchronous engine: `iodepth` IOs in flight, and submission
    /// latency (`slat`) reported apart from completion latency.
    pub fn is_async(self) -> bool {
        matches!(self, IoEngine::Libaio | IoEngine::IoUring)
    }
}

/// `random_distribution=`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RandomDist {
    /// Uniform (fio's default, `random`).
    Random,
    /// `zipf:THETA`.
    Zipf(f64),
    /// `pareto:H`.
    Pareto(f64),
    /// `normal:DEV%` (fio's gauss).
    Normal(f64),
}

/// `rate_process=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateProcess {
    Linear,
    Poisson,
}

/// A block-size range in bytes (`bs=4k`, `bs=4k-64k`, `bsrange=`), per
/// direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsRange {
    pub min: u64,
    pub max: u64,
}

/// `size=`: bytes, or a percentage of the file or device (`size=50%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioSize {
    Bytes(u64),
    Percent(u32),
}

/// One fio job (one section, or one `--name` on the command line).
#[derive(Clone, Debug)]
pub struct FioJob {
    /// The section name (`[name]`) or `--name=`.
    pub name: String,
    /// Where the job was defined: "FILE:LINE" of its section header, or
    /// "<command line>".
    pub origin: String,
    /// Every option that applies to the job, in the order fio applies them
    /// (its `[global]`s first), as `(name, value)` with the value as
    /// written after expansion ("" for a flag). fio's JSON prints these as
    /// `"job options"`.
    pub options: Vec<(String, String)>,
    /// Options fio knows that the simulator does not model: `(name,
    /// "FILE:LINE")`. The engine refuses a job that has any, naming the
    /// first; `wbsim fio --parse-only` accepts them.
    pub unsupported: Vec<(String, String)>,
    pub description: Option<String>,

    pub rw: Rw,
    /// `rw=randwrite:8`: the `:N` suffix (issue N IOs, then skip); 1 when absent.
    pub rw_nr: u32,
    /// `rwmixread=` (percent of reads for mixed patterns; default 50).
    pub rwmixread: u32,
    /// Block sizes per direction (read, write, trim); fio's default 4k.
    pub bs: [BsRange; 3],
    /// `size=` (None: the file's or device's size).
    pub size: Option<FioSize>,
    /// `io_size=` / `io_limit=`: bytes of IO to do (None: `size`).
    pub io_size: Option<u64>,
    /// `filesize=`: each file's size range (None: size / nrfiles).
    pub filesize: Option<(u64, u64)>,
    pub nrfiles: u32,
    /// `offset=` in bytes.
    pub offset: u64,
    pub numjobs: u32,
    /// `filename=` (`:`-separated names; a name under /dev is a block
    /// device), `directory=`.
    pub filename: Option<String>,
    pub directory: Option<String>,

    pub ioengine: IoEngine,
    pub iodepth: u32,
    /// O_DIRECT (`direct=1`, or `buffered=0`).
    pub direct: bool,
    /// `fsync=N` / `fdatasync=N`: a sync after every N writes (0: never).
    pub fsync: u32,
    pub fdatasync: u32,
    pub end_fsync: bool,
    pub fsync_on_close: bool,
    /// `sync=1`: O_SYNC writes.
    pub sync: bool,

    /// `rate=` in bytes/s and `rate_iops=`, per direction (0: none).
    pub rate: [u64; 3],
    pub rate_iops: [u64; 3],
    pub rate_process: RateProcess,
    /// `thinktime=` after every `thinktime_blocks` IOs; `thinktime_spin=`
    /// of it spent on the CPU.
    pub thinktime: Ns,
    pub thinktime_spin: Ns,
    pub thinktime_blocks: u32,

    /// `runtime=` (None: until the IO is done).
    pub runtime: Option<Ns>,
    pub time_based: bool,
    pub startdelay: Ns,
    pub ramp_time: Ns,
    pub loops: u32,

    pub random_distribution: RandomDist,
    /// `randrepeat=` (default true) and `randseed=` (default fio's
    /// 0x89): the seed of the offsets, so runs repeat.
    pub randrepeat: bool,
    pub randseed: Option<u64>,
    pub norandommap: bool,

    /// `cgroup=` and `cgroup_weight=`: recorded; the cgroup model gives
    /// them meaning.
    pub cgroup: Option<String>,
    pub cgroup_weight: Option<u32>,

    pub new_group: bool,
    pub group_reporting: bool,
    pub stonewall: bool,
    pub wait_for: Option<String>,

    /// `write_lat_log=NAME` (and bw, iops) and `log_avg_msec=`.
    pub write_lat_log: Option<String>,
    pub write_bw_log: Option<String>,
    pub write_iops_log: Option<String>,
    pub log_avg_msec: u32,
    /// `invalidate=` (default true): drop the file's cache before the job.
    pub invalidate: bool,
    /// `kb_base=` (1024 or 1000).
    pub kb_base: u32,
}

impl FioJob {
    /// A job with fio's defaults, as `[name]` alone gives.
    pub fn new(name: &str, origin: &str) -> FioJob {
        let bs = BsRange {
            min: 4096,
            max: 4096,
        };
        FioJob {
            name: name.to_string(),
            origin: origin.to_string(),
            options: Vec::new(),
            unsupported: Vec::new(),
            description: None,
            rw: Rw::Read,
            rw_nr: 1,
            rwmixread: 50,
            bs: [bs; 3],
            size: None,
            io_size: None,
            filesize: None,
            nrfiles: 1,
            offset: 0,
            numjobs: 1,
            filename: None,
            directory: None,
            ioengine: IoEngine::Psync,
            iodepth: 1,
            direct: false,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            fsync_on_close: false,
            sync: false,
            rate: [0; 3],
            rate_iops: [0; 3],
            rate_process: RateProcess::Linear,
            thinktime: 0,
            thinktime_spin: 0,
            thinktime_blocks: 1,
            runtime: None,
            time_based: false,
            startdelay: 0,
            ramp_time: 0,
            loops: 1,
            random_distribution: RandomDist::Random,
            randrepeat: true,
            randseed: None,
            norandommap: false,
            cgroup: None,
            cgroup_weight: None,
            new_group: false,
            group_reporting: false,
            stonewall: false,
            wait_for: None,
            write_lat_log: None,
            write_bw_log: None,
            write_iops_log: None,
            log_avg_msec: 0,
            invalidate: true,
            kb_base: 1024,
        }
    }
}

impl FioJob {
    /// The value an option was last given (fio applies options in order,
    /// so the last wins), as written; None if the job never set it.
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A parse error in fio's manner: where, and what fio would say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioError {
    /// "FILE:LINE", or "<command line>".
    pub origin: String,
    pub msg: String,
}

impl std::fmt::Display for FioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.origin, self.msg)
    }
}

impl std::error::Error for FioError {}
