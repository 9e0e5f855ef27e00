//! fio's option names: every job option fio knows, with its alias, its
//! value type, its allowed values and its default, and each IO engine's own
//! options. These are facts taken from fio's option tables (`fio_options[]`
//! in options.c, and the `options[]` of each engine in engines/*.c, as of
//! fio 3.42); the parser (`parse.rs`) reads them to accept or refuse an
//! option as fio does (`find_option`, `__handle_option` in fio's parse.c).
//!
//! Where fio has two variants of an option (a platform's `#ifdef` and its
//! `FIO_OPT_UNSUPPORTED` stub), the Linux variant is listed.

/// fio's `enum fio_opt_type`: how a value is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// One of `vals` (or, without `vals`, any text a callback reads).
    Str,
    /// As `Str`, stored as a 64-bit value.
    StrUll,
    /// As `Str`, several values separated by commas.
    StrMulti,
    /// A number with a size (or, with `Time`, a time) suffix.
    StrVal,
    /// A time: plain numbers in the option's unit (`Time`).
    StrValTime,
    /// Any non-empty text.
    StrStore,
    /// `LOW-HIGH` (or `LOW:HIGH`) sizes, per direction.
    Range,
    /// A number with a suffix, per direction where `dirs` > 1.
    Int,
    Ull,
    /// An integer (0 or 1, or in `min..=max`); a value is required.
    Bool,
    /// Floating-point numbers separated by `:`.
    FloatList,
    /// A flag: alone sets it; an integer value sets that.
    StrSet,
    /// A size, or `Nz` zones.
    StrValZone,
    /// Refused: fio says "Option X is deprecated" and fails.
    Deprecated,
    /// Accepted with "Option X is deprecated", without effect.
    SoftDeprecated,
}

/// The unit of a plain number for a time option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeUnit {
    /// Not a time: sizes take size suffixes.
    NoTime,
    /// Plain numbers are microseconds (`thinktime=`).
    Usecs,
    /// Plain numbers are seconds (`runtime=`, `ramp_time=`).
    Secs,
}

/// One option of fio's table.
#[derive(Clone, Copy, Debug)]
pub struct OptSpec {
    pub name: &'static str,
    /// Its other name ("" if none): `readwrite` for `rw`.
    pub alias: &'static str,
    pub kind: Kind,
    pub time: TimeUnit,
    /// Values per direction it takes (read, write, trim): 1 to 3.
    pub dirs: u8,
    /// The stored value is the negation (`buffered` sets !direct).
    pub neg: bool,
    /// fio applies a section's options in decreasing `prio` order
    /// (`sort_options`): `kb_base` before sizes, `filename` after
    /// `directory`.
    pub prio: i8,
    /// fio's default as text ("" if none).
    pub def: &'static str,
    /// Bounds for numbers (0: none).
    pub min: i64,
    pub max: u64,
    /// The allowed values of a `Str` option (a prefix before `:` or `,`
    /// may carry a postfix, as `rw=randread:8`).
    pub vals: &'static [&'static str],
}

use Kind as K;
use TimeUnit as T;

#[allow(clippy::too_many_arguments)]
const fn o(
    name: &'static str,
    alias: &'static str,
    kind: Kind,
    time: TimeUnit,
    dirs: u8,
    neg: bool,
    prio: i8,
    def: &'static str,
    min: i64,
    max: u64,
    vals: &'static [&'static str],
) -> OptSpec {
    OptSpec {
        name,
        alias,
        kind,
        time,
        dirs,
        neg,
        prio,
        def,
        min,
        max,
        vals,
    }
}

/// fio's own options (`fio_options[]`).
#[rustfmt::skip]
pub static CORE: &[OptSpec] = &[
    o("description", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("name", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("wait_for", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("filename", "", K::StrStore, T::NoTime, 1, false, -1, "", 0, 0, &[]),
    o("filetype", "", K::Str, T::NoTime, 1, false, 0, "none", 0, 0, &["none", "file", "block", "char"]),
    o("directory", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("filename_format", "", K::StrStore, T::NoTime, 1, false, -1, "$jobname.$jobnum.$filenum", 0, 0, &[]),
    o("unique_filename", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("lockfile", "", K::Str, T::NoTime, 1, false, 1, "none", 0, 0, &["none", "exclusive", "readwrite"]),
    o("opendir", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("rw", "readwrite", K::Str, T::NoTime, 1, false, 0, "read", 0, 0, &["read", "write", "trim", "randread", "randwrite", "randtrim", "rw", "readwrite", "randrw", "trimwrite", "randtrimwrite"]),
    o("rw_sequencer", "", K::Str, T::NoTime, 1, false, 0, "sequential", 0, 0, &["sequential", "identical"]),
    o("ioengine", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &["sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "solarisaio", "windowsaio", "rbd", "mmap", "splice", "netsplice", "sg", "null", "net", "cpuio", "rdma", "e4defrag", "falloc", "gfapi", "gfapi_async", "libhdfs", "ime_psync", "ime_psyncv", "ime_aio", "dev-dax", "filecreate", "external", "libpmem", "http", "nbd", "dfs", "nfs", "xnvme"]),
    o("iodepth", "", K::Int, T::NoTime, 1, false, 0, "1", 1, 0, &[]),
    o("iodepth_batch", "iodepth_batch_submit", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("iodepth_batch_complete_min", "iodepth_batch_complete", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("iodepth_batch_complete_max", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("iodepth_low", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("serialize_overlap", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("io_submit_mode", "", K::Str, T::NoTime, 1, false, 0, "inline", 0, 0, &["inline", "offload"]),
    o("size", "", K::StrValZone, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("io_size", "io_limit", K::StrValZone, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("fill_device", "fill_fs", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("filesize", "", K::StrVal, T::NoTime, 2, false, 0, "", 1, 0, &[]),
    o("file_append", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("offset", "fileoffset", K::StrValZone, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("offset_align", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("offset_increment", "", K::StrValZone, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("number_ios", "", K::StrVal, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("num_range", "", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("bs", "blocksize", K::Ull, T::NoTime, 3, false, 0, "4096", 1, 0, &[]),
    o("ba", "blockalign", K::Ull, T::NoTime, 3, false, 0, "", 1, 0, &[]),
    o("bsrange", "blocksize_range", K::Range, T::NoTime, 3, false, 0, "", 1, 0, &[]),
    o("bssplit", "", K::StrUll, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("bs_unaligned", "blocksize_unaligned", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("bs_is_seq_rand", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("randrepeat", "allrandrepeat", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("randseed", "", K::StrVal, T::NoTime, 1, false, 0, "0x89", 0, 0, &[]),
    o("norandommap", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("softrandommap", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("sprandom", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("spr_num_regions", "", K::Int, T::NoTime, 1, false, 0, "100", 0, 0, &[]),
    o("spr_op", "", K::FloatList, T::NoTime, 1, false, 0, "0.15", 0, 0, &[]),
    o("spr_cs", "", K::Ull, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("random_generator", "", K::Str, T::NoTime, 1, false, 0, "tausworthe", 0, 0, &["tausworthe", "lfsr", "tausworthe64"]),
    o("random_distribution", "", K::Str, T::NoTime, 1, false, 0, "random", 0, 0, &["random", "zipf", "pareto", "normal", "zoned", "zoned_abs", "sequence"]),
    o("random_sequence_stride", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("percentage_random", "", K::Int, T::NoTime, 3, false, 0, "100,100,100", 0, 100, &[]),
    o("percentage_sequential", "", K::Deprecated, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("nrfiles", "nr_files", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("openfiles", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("file_service_type", "", K::Str, T::NoTime, 1, false, 0, "roundrobin", 0, 0, &["random", "zipf", "pareto", "normal", "gauss", "roundrobin", "sequential"]),
    o("fallocate", "", K::Str, T::NoTime, 1, false, 0, "native", 0, 0, &["none", "native", "posix", "keep", "truncate", "0", "1"]),
    o("fadvise_hint", "", K::Str, T::NoTime, 1, false, 0, "1", 0, 0, &["0", "1", "random", "sequential", "noreuse"]),
    o("fsync", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("fdatasync", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("write_barrier", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("sync_file_range", "", K::StrMulti, T::NoTime, 1, false, 0, "", 0, 0, &["wait_before", "write", "wait_after"]),
    o("direct", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("atomic", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("buffered", "", K::Bool, T::NoTime, 1, true, 0, "1", 0, 0, &[]),
    o("overwrite", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("loops", "", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("numjobs", "", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("startdelay", "", K::StrValTime, T::Secs, 2, false, 0, "0", 0, 0, &[]),
    o("runtime", "timeout", K::StrValTime, T::Secs, 1, false, 0, "0", 0, 0, &[]),
    o("time_based", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verify_only", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("ramp_time", "", K::StrValTime, T::Secs, 1, false, 0, "", 0, 0, &[]),
    o("ramp_size", "", K::StrVal, T::NoTime, 1, false, 0, "", 1, 0, &[]),
    o("clocksource", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &["gettimeofday", "clock_gettime", "cpu"]),
    o("mem", "iomem", K::Str, T::NoTime, 1, false, 0, "malloc", 0, 0, &["malloc", "shm", "shmhuge", "mmap", "mmapshared", "mmaphuge", "cudamalloc"]),
    o("iomem_align", "mem_align", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("verify", "", K::Str, T::NoTime, 1, false, 0, "0", 0, 0, &["0", "md5", "crc64", "crc32", "crc32c-intel", "crc32c", "crc16", "crc7", "sha1", "sha256", "sha512", "sha3-224", "sha3-256", "sha3-384", "sha3-512", "xxhash", "meta", "pattern", "pattern_hdr", "null"]),
    o("do_verify", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("verify_policy", "", K::StrMulti, T::NoTime, 1, false, 0, "completed", 0, 0, &["completed", "fsynced"]),
    o("verifysort", "", K::SoftDeprecated, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verifysort_nr", "", K::SoftDeprecated, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verify_interval", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verify_offset", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verify_pattern", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verify_pattern_interval", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("verify_fatal", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("verify_dump", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("verify_async", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("verify_backlog", "", K::StrVal, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verify_backlog_batch", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verify_async_cpus", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("experimental_verify", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verify_state_load", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("verify_state_save", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("verify_write_sequence", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("verify_header_seed", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("trim_percentage", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 100, &[]),
    o("trim_verify_zero", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("trim_backlog", "", K::StrVal, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("trim_backlog_batch", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("write_iolog", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("read_iolog", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("read_iolog_chunked", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("replay_no_stall", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("replay_redirect", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("replay_scale", "", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("replay_align", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("replay_time_scale", "", K::Int, T::NoTime, 1, false, 0, "100", 1, 0, &[]),
    o("replay_skip", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("merge_blktrace_file", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("merge_blktrace_scalars", "", K::FloatList, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("merge_blktrace_iters", "", K::FloatList, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("exec_prerun", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("exec_postrun", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("ioscheduler", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("zonemode", "", K::Str, T::NoTime, 1, false, 0, "none", 0, 0, &["none", "strided", "zbd"]),
    o("zonesize", "", K::StrVal, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("zonecapacity", "", K::StrVal, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("zonerange", "", K::StrVal, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("zoneskip", "", K::StrValZone, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("read_beyond_wp", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("max_open_zones", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("job_max_open_zones", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("ignore_zone_limits", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("zone_reset_threshold", "", K::FloatList, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("zone_reset_frequency", "", K::FloatList, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("recover_zbd_write_error", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("write_zone_remainder", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("fdp", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("dataplacement", "data_placement", K::Str, T::NoTime, 1, false, 0, "none", 0, 0, &["none", "fdp", "streams"]),
    o("plid_select", "fdp_pli_select", K::Str, T::NoTime, 1, false, 0, "roundrobin", 0, 0, &["random", "roundrobin", "scheme"]),
    o("plids", "fdp_pli", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("dp_scheme", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("lockmem", "", K::StrVal, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("rwmixread", "", K::Int, T::NoTime, 1, false, 0, "50", 0, 100, &[]),
    o("rwmixwrite", "", K::Int, T::NoTime, 1, false, 0, "50", 0, 100, &[]),
    o("rwmixcycle", "", K::Deprecated, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("comm", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("nice", "", K::Int, T::NoTime, 1, false, 0, "0", -20, 19, &[]),
    o("prio", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("prioclass", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("priohint", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("thinktime", "", K::Int, T::Usecs, 1, false, 0, "0", 0, 0, &[]),
    o("thinktime_spin", "", K::Int, T::Usecs, 1, false, 0, "0", 0, 0, &[]),
    o("thinkcycles", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("thinktime_blocks", "", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("thinktime_blocks_type", "", K::Str, T::NoTime, 1, false, 0, "complete", 0, 0, &["complete", "issue"]),
    o("thinktime_iotime", "", K::Int, T::Secs, 1, false, 0, "0", 0, 0, &[]),
    o("rate", "", K::Ull, T::NoTime, 3, false, 0, "", 0, 0, &[]),
    o("rate_min", "ratemin", K::Ull, T::NoTime, 3, false, 0, "", 0, 0, &[]),
    o("rate_iops", "", K::Int, T::NoTime, 3, false, 0, "", 0, 0, &[]),
    o("rate_iops_min", "", K::Int, T::NoTime, 3, false, 0, "", 0, 0, &[]),
    o("rate_process", "", K::Str, T::NoTime, 1, false, 0, "linear", 0, 0, &["linear", "poisson"]),
    o("rate_cycle", "ratecycle", K::Int, T::NoTime, 1, false, 0, "1000", 0, 0, &[]),
    o("rate_ignore_thinktime", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("max_latency", "", K::Ull, T::Usecs, 3, false, 0, "", 0, 0, &[]),
    o("latency_target", "", K::StrValTime, T::Usecs, 1, false, 0, "", 0, 0, &[]),
    o("latency_window", "", K::StrValTime, T::Usecs, 1, false, 0, "", 0, 0, &[]),
    o("latency_percentile", "", K::FloatList, T::NoTime, 1, false, 0, "100", 0, 0, &[]),
    o("latency_run", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("invalidate", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("sync", "", K::Str, T::NoTime, 1, false, 0, "none", 0, 0, &["none", "0", "sync", "1", "dsync"]),
    o("write_hint", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &["none", "short", "medium", "long", "extreme"]),
    o("create_serialize", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("create_fsync", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("create_on_open", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("create_only", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("allow_file_create", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("allow_mounted_write", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("pre_read", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("cpumask", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cpus_allowed", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cpus_allowed_policy", "", K::Str, T::NoTime, 1, false, 1, "", 0, 0, &["shared", "split"]),
    o("numa_cpu_nodes", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("numa_mem_policy", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("gpu_dev_id", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("end_fsync", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("fsync_on_close", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("end_syncfs", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("unlink", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("unlink_each_loop", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("exitall", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("exit_what", "", K::Str, T::NoTime, 1, false, 0, "group", 0, 0, &["group", "stonewall", "all"]),
    o("exitall_on_error", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("stonewall", "wait_for_previous", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("new_group", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("thread", "", K::StrSet, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("per_job_logs", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("write_bw_log", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("write_lat_log", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("write_iops_log", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("log_entries", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("log_avg_msec", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("log_hist_msec", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("log_hist_coarseness", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 6, &[]),
    o("write_hist_log", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("log_window_value", "log_max_value", K::Str, T::NoTime, 1, false, 0, "avg", 0, 0, &["avg", "max", "both", "0", "1"]),
    o("log_offset", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("log_prio", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("log_issue_time", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("log_compression", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("log_compression_cpus", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("log_store_compressed", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("log_alternate_epoch", "log_unix_epoch", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("log_alternate_epoch_clock_id", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("block_error_percentiles", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("bwavgtime", "", K::Int, T::NoTime, 1, false, 0, "500", 0, 0, &[]),
    o("iopsavgtime", "", K::Int, T::NoTime, 1, false, 0, "500", 0, 0, &[]),
    o("group_reporting", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("stats", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("zero_buffers", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("refill_buffers", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("scramble_buffers", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("buffer_pattern", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("buffer_compress_percentage", "", K::Int, T::NoTime, 1, false, 0, "", 0, 100, &[]),
    o("buffer_compress_chunk", "", K::Int, T::NoTime, 1, false, 0, "512", 0, 0, &[]),
    o("dedupe_percentage", "", K::Int, T::NoTime, 1, false, 0, "", 0, 100, &[]),
    o("dedupe_global", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("dedupe_mode", "", K::Str, T::NoTime, 1, false, 0, "repeat", 0, 0, &["repeat", "working_set"]),
    o("dedupe_working_set_percentage", "", K::Int, T::NoTime, 1, false, 0, "5", 0, 100, &[]),
    o("clat_percentiles", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("lat_percentiles", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("slat_percentiles", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("percentile_list", "", K::FloatList, T::NoTime, 2, false, 0, "1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.95:99.99", 0, 0, &[]),
    o("significant_figures", "", K::Int, T::NoTime, 1, false, 0, "4", 1, 10, &[]),
    o("disk_util", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("gtod_reduce", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("disable_lat", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("disable_clat", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("disable_slat", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("disable_bw_measurement", "disable_bw", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("gtod_cpu", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("job_start_clock_id", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("unified_rw_reporting", "", K::Str, T::NoTime, 1, false, 0, "none", 0, 0, &["none", "mixed", "both", "0", "1", "2"]),
    o("continue_on_error", "", K::Str, T::NoTime, 1, false, 0, "none", 0, 0, &["none", "read", "write", "io", "verify", "all", "0", "1"]),
    o("ignore_error", "", K::Str, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("error_dump", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("profile", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cgroup", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cgroup_nodelete", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("cgroup_weight", "", K::Int, T::NoTime, 1, false, 0, "", 100, 1000, &[]),
    o("uid", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("gid", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("kb_base", "", K::Str, T::NoTime, 1, false, 1, "1024", 0, 0, &["1024", "1000"]),
    o("unit_base", "", K::Str, T::NoTime, 1, false, 1, "", 0, 0, &["0", "8", "1"]),
    o("hugepage-size", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("flow_id", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("flow", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("flow_watermark", "", K::SoftDeprecated, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("flow_sleep", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("steadystate", "ss", K::Str, T::NoTime, 1, false, 0, "iops_slope:0.01%", 0, 0, &["iops", "iops_slope", "bw", "bw_slope", "lat", "lat_slope"]),
    o("steadystate_duration", "ss_dur", K::StrValTime, T::Secs, 1, false, 0, "0", 0, 0, &[]),
    o("steadystate_ramp_time", "ss_ramp", K::StrValTime, T::Secs, 1, false, 0, "0", 0, 0, &[]),
    o("steadystate_check_interval", "ss_interval", K::StrValTime, T::Secs, 1, false, 0, "1", 0, 0, &[]),
];
/// `ioengine=cpuio` (fio's engines/cpu.c).
#[rustfmt::skip]
static ENG_CPUIO: &[OptSpec] = &[
    o("cpuload", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cpumode", "", K::Str, T::NoTime, 1, false, 0, "noop", 0, 0, &["noop", "qsort"]),
    o("cpuchunks", "", K::Int, T::NoTime, 1, false, 0, "50000", 0, 0, &[]),
    o("exit_on_io_done", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
];
/// `ioengine=dev-dax` (fio's engines/dev-dax.c).
#[rustfmt::skip]
static ENG_DEV_DAX: &[OptSpec] = &[
];
/// `ioengine=dfs` (fio's engines/dfs.c).
#[rustfmt::skip]
static ENG_DFS: &[OptSpec] = &[
    o("pool", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cont", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("chunk_size", "", K::Ull, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("object_class", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("svcl", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=e4defrag` (fio's engines/e4defrag.c).
#[rustfmt::skip]
static ENG_E4DEFRAG: &[OptSpec] = &[
    o("donorname", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("inplace", "", K::Int, T::NoTime, 1, false, 0, "", 0, 1, &[]),
];
/// `ioengine=exec` (fio's engines/exec.c).
#[rustfmt::skip]
static ENG_EXEC: &[OptSpec] = &[
    o("program", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("arguments", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("grace_time", "", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("std_redirect", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
];
/// `ioengine=falloc` (fio's engines/falloc.c).
#[rustfmt::skip]
static ENG_FALLOC: &[OptSpec] = &[
];
/// `ioengine=filecreate` (fio's engines/fileoperations.c).
#[rustfmt::skip]
static ENG_FILECREATE: &[OptSpec] = &[
];
/// `ioengine=filestat` (fio's engines/fileoperations.c).
#[rustfmt::skip]
static ENG_FILESTAT: &[OptSpec] = &[
    o("stat_type", "", K::Str, T::NoTime, 1, false, 0, "stat", 0, 0, &["stat", "lstat", "statx"]),
];
/// `ioengine=filedelete` (fio's engines/fileoperations.c).
#[rustfmt::skip]
static ENG_FILEDELETE: &[OptSpec] = &[
];
/// `ioengine=dircreate` (fio's engines/fileoperations.c).
#[rustfmt::skip]
static ENG_DIRCREATE: &[OptSpec] = &[
];
/// `ioengine=dirstat` (fio's engines/fileoperations.c).
#[rustfmt::skip]
static ENG_DIRSTAT: &[OptSpec] = &[
    o("stat_type", "", K::Str, T::NoTime, 1, false, 0, "stat", 0, 0, &["stat", "lstat", "statx"]),
];
/// `ioengine=dirdelete` (fio's engines/fileoperations.c).
#[rustfmt::skip]
static ENG_DIRDELETE: &[OptSpec] = &[
];
/// `ioengine=ftruncate` (fio's engines/ftruncate.c).
#[rustfmt::skip]
static ENG_FTRUNCATE: &[OptSpec] = &[
];
/// `ioengine=gfapi_async` (fio's engines/glusterfs_async.c).
#[rustfmt::skip]
static ENG_GFAPI_ASYNC: &[OptSpec] = &[
    o("volume", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("brick", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("single-instance", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=gfapi` (fio's engines/glusterfs_sync.c).
#[rustfmt::skip]
static ENG_GFAPI: &[OptSpec] = &[
    o("volume", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("brick", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("single-instance", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=http` (fio's engines/http.c).
#[rustfmt::skip]
static ENG_HTTP: &[OptSpec] = &[
    o("https", "", K::Str, T::NoTime, 1, false, 0, "off", 0, 0, &["off", "on", "insecure"]),
    o("http_host", "", K::StrStore, T::NoTime, 1, false, 0, "localhost", 0, 0, &[]),
    o("http_user", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("http_pass", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("http_s3_key", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("http_s3_keyid", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("http_s3_security_token", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("http_swift_auth_token", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("http_s3_region", "", K::StrStore, T::NoTime, 1, false, 0, "us-east-1", 0, 0, &[]),
    o("http_s3_sse_customer_key", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("http_s3_sse_customer_algorithm", "", K::StrStore, T::NoTime, 1, false, 0, "AES256", 0, 0, &[]),
    o("http_s3_storage_class", "", K::StrStore, T::NoTime, 1, false, 0, "STANDARD", 0, 0, &[]),
    o("http_mode", "", K::Str, T::NoTime, 1, false, 0, "webdav", 0, 0, &["webdav", "s3", "swift"]),
    o("http_verbose", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("http_object_mode", "", K::Str, T::NoTime, 1, false, 0, "block", 0, 0, &["block", "range"]),
];
/// `ioengine=ime_psync` (fio's engines/ime.c).
#[rustfmt::skip]
static ENG_IME_PSYNC: &[OptSpec] = &[
];
/// `ioengine=ime_psyncv` (fio's engines/ime.c).
#[rustfmt::skip]
static ENG_IME_PSYNCV: &[OptSpec] = &[
];
/// `ioengine=ime_aio` (fio's engines/ime.c).
#[rustfmt::skip]
static ENG_IME_AIO: &[OptSpec] = &[
];
/// `ioengine=io_uring` (fio's engines/io_uring.c).
#[rustfmt::skip]
static ENG_IO_URING: &[OptSpec] = &[
    o("hipri", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("readfua", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("writefua", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("write_mode", "", K::Str, T::NoTime, 1, false, 0, "write", 0, 0, &[]),
    o("verify_mode", "", K::Str, T::NoTime, 1, false, 0, "read", 0, 0, &["read", "compare"]),
    o("fixedbufs", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("registerfiles", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("sqthread_poll", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("sqthread_poll_cpu", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("nonvectored", "", K::Int, T::NoTime, 1, false, 0, "-1", 0, 0, &[]),
    o("uncached", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("nowait", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("force_async", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cmd_type", "", K::Str, T::NoTime, 1, false, 0, "nvme", 0, 0, &["nvme", "bsg"]),
    o("cdb_len", "", K::Str, T::NoTime, 1, false, 0, "0", 0, 0, &["0", "10", "16", "32"]),
    o("verify_bytchk", "", K::Str, T::NoTime, 1, false, 0, "0", 0, 0, &["0", "1", "3"]),
    o("read_mode", "", K::Str, T::NoTime, 1, false, 0, "read", 0, 0, &["read", "prefetch"]),
    o("cmdprio_percentage", "", K::Int, T::NoTime, 2, false, 0, "", 0, 100, &[]),
    o("cmdprio_class", "", K::Int, T::NoTime, 2, false, 0, "", 0, 0, &[]),
    o("cmdprio_hint", "", K::Int, T::NoTime, 2, false, 0, "", 0, 0, &[]),
    o("cmdprio", "", K::Int, T::NoTime, 2, false, 0, "", 0, 0, &[]),
    o("cmdprio_bssplit", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("md_per_io_size", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("pi_act", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("pi_chk", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("apptag", "", K::Int, T::NoTime, 1, false, 0, "0x1234", 0, 0, &[]),
    o("apptag_mask", "", K::Int, T::NoTime, 1, false, 0, "0xffff", 0, 0, &[]),
    o("deac", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
];
/// `ioengine=io_uring_cmd` (fio's engines/io_uring.c).
#[rustfmt::skip]
static ENG_IO_URING_CMD: &[OptSpec] = &[
    o("hipri", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("readfua", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("writefua", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("write_mode", "", K::Str, T::NoTime, 1, false, 0, "write", 0, 0, &[]),
    o("verify_mode", "", K::Str, T::NoTime, 1, false, 0, "read", 0, 0, &["read", "compare"]),
    o("fixedbufs", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("registerfiles", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("sqthread_poll", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("sqthread_poll_cpu", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("nonvectored", "", K::Int, T::NoTime, 1, false, 0, "-1", 0, 0, &[]),
    o("uncached", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("nowait", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("force_async", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cmd_type", "", K::Str, T::NoTime, 1, false, 0, "nvme", 0, 0, &["nvme", "bsg"]),
    o("cdb_len", "", K::Str, T::NoTime, 1, false, 0, "0", 0, 0, &["0", "10", "16", "32"]),
    o("verify_bytchk", "", K::Str, T::NoTime, 1, false, 0, "0", 0, 0, &["0", "1", "3"]),
    o("read_mode", "", K::Str, T::NoTime, 1, false, 0, "read", 0, 0, &["read", "prefetch"]),
    o("cmdprio_percentage", "", K::Int, T::NoTime, 2, false, 0, "", 0, 100, &[]),
    o("cmdprio_class", "", K::Int, T::NoTime, 2, false, 0, "", 0, 0, &[]),
    o("cmdprio_hint", "", K::Int, T::NoTime, 2, false, 0, "", 0, 0, &[]),
    o("cmdprio", "", K::Int, T::NoTime, 2, false, 0, "", 0, 0, &[]),
    o("cmdprio_bssplit", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("md_per_io_size", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("pi_act", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("pi_chk", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("apptag", "", K::Int, T::NoTime, 1, false, 0, "0x1234", 0, 0, &[]),
    o("apptag_mask", "", K::Int, T::NoTime, 1, false, 0, "0xffff", 0, 0, &[]),
    o("deac", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
];
/// `ioengine=libaio` (fio's engines/libaio.c).
#[rustfmt::skip]
static ENG_LIBAIO: &[OptSpec] = &[
    o("userspace_reap", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("nowait", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("libaio_vectored", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cmdprio_percentage", "", K::Int, T::NoTime, 2, false, 0, "", 0, 100, &[]),
    o("cmdprio_class", "", K::Int, T::NoTime, 2, false, 0, "", 0, 0, &[]),
    o("cmdprio_hint", "", K::Int, T::NoTime, 2, false, 0, "", 0, 0, &[]),
    o("cmdprio", "", K::Int, T::NoTime, 2, false, 0, "", 0, 0, &[]),
    o("cmdprio_bssplit", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=libblkio` (fio's engines/libblkio.c).
#[rustfmt::skip]
static ENG_LIBBLKIO: &[OptSpec] = &[
    o("libblkio_driver", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("libblkio_path", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("libblkio_pre_connect_props", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("libblkio_num_entries", "", K::Int, T::NoTime, 1, false, 0, "", 1, 0, &[]),
    o("libblkio_queue_size", "", K::Int, T::NoTime, 1, false, 0, "", 1, 0, &[]),
    o("libblkio_pre_start_props", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("hipri", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("libblkio_vectored", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("libblkio_write_zeroes_on_trim", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("libblkio_wait_mode", "", K::Str, T::NoTime, 1, false, 0, "block", 0, 0, &["block", "eventfd", "loop"]),
    o("libblkio_force_enable_completion_eventfd", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=libcufile` (fio's engines/libcufile.c).
#[rustfmt::skip]
static ENG_LIBCUFILE: &[OptSpec] = &[
    o("gpu_dev_ids", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("cuda_io", "", K::Str, T::NoTime, 1, false, 0, "cufile", 0, 0, &["cufile", "posix"]),
];
/// `ioengine=libhdfs` (fio's engines/libhdfs.c).
#[rustfmt::skip]
static ENG_LIBHDFS: &[OptSpec] = &[
    o("namenode", "", K::StrStore, T::NoTime, 1, false, 0, "localhost", 0, 0, &[]),
    o("hostname", "", K::StrStore, T::NoTime, 1, false, 0, "localhost", 0, 0, &[]),
    o("port", "", K::Int, T::NoTime, 1, false, 0, "9000", 1, 65535, &[]),
    o("hdfsdirectory", "", K::StrStore, T::NoTime, 1, false, 0, "/", 0, 0, &[]),
    o("chunk_size", "chunck_size", K::Int, T::NoTime, 1, false, 0, "1048576", 0, 0, &[]),
    o("single_instance", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("hdfs_use_direct", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
];
/// `ioengine=libhipfile` (fio's engines/libhipfile.c).
#[rustfmt::skip]
static ENG_LIBHIPFILE: &[OptSpec] = &[
    o("gpu_dev_ids", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("rocm_io", "", K::Str, T::NoTime, 1, false, 0, "hipfile", 0, 0, &["hipfile", "posix"]),
];
/// `ioengine=libiscsi` (fio's engines/libiscsi.c).
#[rustfmt::skip]
static ENG_LIBISCSI: &[OptSpec] = &[
    o("initiator", "", K::StrStore, T::NoTime, 1, false, 0, "iqn.2019-04.org.fio:fio", 0, 0, &[]),
];
/// `ioengine=libpmem` (fio's engines/libpmem.c).
#[rustfmt::skip]
static ENG_LIBPMEM: &[OptSpec] = &[
];
/// `ioengine=libzbc` (fio's engines/libzbc.c).
#[rustfmt::skip]
static ENG_LIBZBC: &[OptSpec] = &[
];
/// `ioengine=mmap` (fio's engines/mmap.c).
#[rustfmt::skip]
static ENG_MMAP: &[OptSpec] = &[
    o("thp", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=mtd` (fio's engines/mtd.c).
#[rustfmt::skip]
static ENG_MTD: &[OptSpec] = &[
    o("skip_bad", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
];
/// `ioengine=nbd` (fio's engines/nbd.c).
#[rustfmt::skip]
static ENG_NBD: &[OptSpec] = &[
    o("uri", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=netsplice` (fio's engines/net.c).
#[rustfmt::skip]
static ENG_NETSPLICE: &[OptSpec] = &[
    o("hostname", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("port", "", K::Int, T::NoTime, 1, false, 0, "", 1, 65535, &[]),
    o("protocol", "proto", K::Str, T::NoTime, 1, false, 0, "tcp", 0, 0, &["tcp", "tcpv6", "udp", "udpv6", "unix", "vsock"]),
    o("nodelay", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("listen", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("pingpong", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("interface", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("ttl", "", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("window_size", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("mss", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=net` (fio's engines/net.c).
#[rustfmt::skip]
static ENG_NET: &[OptSpec] = &[
    o("hostname", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("port", "", K::Int, T::NoTime, 1, false, 0, "", 1, 65535, &[]),
    o("protocol", "proto", K::Str, T::NoTime, 1, false, 0, "tcp", 0, 0, &["tcp", "tcpv6", "udp", "udpv6", "unix", "vsock"]),
    o("nodelay", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("listen", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("pingpong", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("interface", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("ttl", "", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("window_size", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("mss", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=nfs` (fio's engines/nfs.c).
#[rustfmt::skip]
static ENG_NFS: &[OptSpec] = &[
    o("nfs_url", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=null` (fio's engines/null.c).
#[rustfmt::skip]
static ENG_NULL: &[OptSpec] = &[
];
/// `ioengine=page_fault` (fio's engines/page_fault.c).
#[rustfmt::skip]
static ENG_PAGE_FAULT: &[OptSpec] = &[
];
/// `ioengine=posixaio` (fio's engines/posixaio.c).
#[rustfmt::skip]
static ENG_POSIXAIO: &[OptSpec] = &[
];
/// `ioengine=rados` (fio's engines/rados.c).
#[rustfmt::skip]
static ENG_RADOS: &[OptSpec] = &[
    o("clustername", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("pool", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("clientname", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("conf", "", K::StrStore, T::NoTime, 1, false, 0, "/etc/ceph/ceph.conf", 0, 0, &[]),
    o("busy_poll", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("touch_objects", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
];
/// `ioengine=rbd` (fio's engines/rbd.c).
#[rustfmt::skip]
static ENG_RBD: &[OptSpec] = &[
    o("clustername", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("rbdname", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("pool", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("clientname", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("busy_poll", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("rbd_encryption_format", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("rbd_encryption_passphrase", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=rdma` (fio's engines/rdma.c).
#[rustfmt::skip]
static ENG_RDMA: &[OptSpec] = &[
    o("hostname", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("bindname", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("port", "", K::Int, T::NoTime, 1, false, 0, "", 1, 65535, &[]),
    o("verb", "proto", K::Str, T::NoTime, 1, false, 0, "write", 0, 0, &["write", "read", "send", "recv"]),
];
/// `ioengine=sg` (fio's engines/sg.c).
#[rustfmt::skip]
static ENG_SG: &[OptSpec] = &[
    o("hipri", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("readfua", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("writefua", "", K::Bool, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("sg_write_mode", "", K::Str, T::NoTime, 1, false, 0, "write", 0, 0, &["write", "write_and_verify", "verify", "write_same", "same", "write_same_ndob", "verify_bytchk_00", "verify_bytchk_01", "verify_bytchk_11", "write_stream"]),
    o("stream_id", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
];
/// `ioengine=solarisaio` (fio's engines/solarisaio.c).
#[rustfmt::skip]
static ENG_SOLARISAIO: &[OptSpec] = &[
];
/// `ioengine=splice` (fio's engines/splice.c).
#[rustfmt::skip]
static ENG_SPLICE: &[OptSpec] = &[
];
/// `ioengine=sync` (fio's engines/sync.c).
#[rustfmt::skip]
static ENG_SYNC: &[OptSpec] = &[
];
/// `ioengine=psync` (fio's engines/sync.c).
#[rustfmt::skip]
static ENG_PSYNC: &[OptSpec] = &[
];
/// `ioengine=vsync` (fio's engines/sync.c).
#[rustfmt::skip]
static ENG_VSYNC: &[OptSpec] = &[
];
/// `ioengine=pvsync` (fio's engines/sync.c).
#[rustfmt::skip]
static ENG_PVSYNC: &[OptSpec] = &[
];
/// `ioengine=pvsync2` (fio's engines/sync.c).
#[rustfmt::skip]
static ENG_PVSYNC2: &[OptSpec] = &[
    o("hipri", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("hipri_percentage", "", K::Int, T::NoTime, 1, false, 0, "100", 0, 100, &[]),
    o("uncached", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("nowait", "", K::Bool, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=windowsaio` (fio's engines/windowsaio.c).
#[rustfmt::skip]
static ENG_WINDOWSAIO: &[OptSpec] = &[
    o("no_completion_thread", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `ioengine=xnvme` (fio's engines/xnvme.c).
#[rustfmt::skip]
static ENG_XNVME: &[OptSpec] = &[
    o("hipri", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("sqthread_poll", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("xnvme_be", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("xnvme_mem", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("xnvme_async", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("xnvme_sync", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("xnvme_admin", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("xnvme_dev_nsid", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("xnvme_dev_subnqn", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("xnvme_iovec", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("md_per_io_size", "", K::Int, T::NoTime, 1, false, 0, "0", 0, 0, &[]),
    o("pi_act", "", K::Bool, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("pi_chk", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("apptag", "", K::Int, T::NoTime, 1, false, 0, "0x1234", 0, 0, &[]),
    o("apptag_mask", "", K::Int, T::NoTime, 1, false, 0, "0xffff", 0, 0, &[]),
];
/// `profile=act` (fio's profiles/act.c): registered with fio's own options.
#[rustfmt::skip]
static PROF_ACT: &[OptSpec] = &[
    o("device-names", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("load", "", K::Int, T::NoTime, 1, false, 0, "1", 0, 0, &[]),
    o("test-duration", "", K::StrValTime, T::Usecs, 1, false, 0, "24h", 0, 0, &[]),
    o("threads-per-queue", "", K::Int, T::NoTime, 1, false, 0, "8", 0, 0, &[]),
    o("read-req-num-512-blocks", "", K::Int, T::NoTime, 1, false, 0, "3", 0, 0, &[]),
    o("large-block-op-kbytes", "", K::Int, T::NoTime, 1, false, 0, "131072", 0, 0, &[]),
    o("prep", "", K::StrSet, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// `profile=tiobench` (fio's profiles/tiobench.c): registered with fio's own options.
#[rustfmt::skip]
static PROF_TIOBENCH: &[OptSpec] = &[
    o("size", "", K::StrVal, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("block", "", K::Int, T::NoTime, 1, false, 0, "4096", 0, 0, &[]),
    o("numruns", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("dir", "", K::StrStore, T::NoTime, 1, false, 0, "", 0, 0, &[]),
    o("threads", "", K::Int, T::NoTime, 1, false, 0, "", 0, 0, &[]),
];
/// The profiles' options, known to every job (after fio's own).
#[rustfmt::skip]
pub static PROFILES: &[(&str, &[OptSpec])] = &[
    ("act", PROF_ACT),
    ("tiobench", PROF_TIOBENCH),
];
/// Each IO engine fio has, with its own options (parsed only when the
/// job's `ioengine=` is that engine).
#[rustfmt::skip]
pub static ENGINES: &[(&str, &[OptSpec])] = &[
    ("cpuio", ENG_CPUIO),
    ("dev-dax", ENG_DEV_DAX),
    ("dfs", ENG_DFS),
    ("e4defrag", ENG_E4DEFRAG),
    ("exec", ENG_EXEC),
    ("falloc", ENG_FALLOC),
    ("filecreate", ENG_FILECREATE),
    ("filestat", ENG_FILESTAT),
    ("filedelete", ENG_FILEDELETE),
    ("dircreate", ENG_DIRCREATE),
    ("dirstat", ENG_DIRSTAT),
    ("dirdelete", ENG_DIRDELETE),
    ("ftruncate", ENG_FTRUNCATE),
    ("gfapi_async", ENG_GFAPI_ASYNC),
    ("gfapi", ENG_GFAPI),
    ("http", ENG_HTTP),
    ("ime_psync", ENG_IME_PSYNC),
    ("ime_psyncv", ENG_IME_PSYNCV),
    ("ime_aio", ENG_IME_AIO),
    ("io_uring", ENG_IO_URING),
    ("io_uring_cmd", ENG_IO_URING_CMD),
    ("libaio", ENG_LIBAIO),
    ("libblkio", ENG_LIBBLKIO),
    ("libcufile", ENG_LIBCUFILE),
    ("libhdfs", ENG_LIBHDFS),
    ("libhipfile", ENG_LIBHIPFILE),
    ("libiscsi", ENG_LIBISCSI),
    ("libpmem", ENG_LIBPMEM),
    ("libzbc", ENG_LIBZBC),
    ("mmap", ENG_MMAP),
    ("mtd", ENG_MTD),
    ("nbd", ENG_NBD),
    ("netsplice", ENG_NETSPLICE),
    ("net", ENG_NET),
    ("nfs", ENG_NFS),
    ("null", ENG_NULL),
    ("page_fault", ENG_PAGE_FAULT),
    ("posixaio", ENG_POSIXAIO),
    ("rados", ENG_RADOS),
    ("rbd", ENG_RBD),
    ("rdma", ENG_RDMA),
    ("sg", ENG_SG),
    ("solarisaio", ENG_SOLARISAIO),
    ("splice", ENG_SPLICE),
    ("sync", ENG_SYNC),
    ("psync", ENG_PSYNC),
    ("vsync", ENG_VSYNC),
    ("pvsync", ENG_PVSYNC),
    ("pvsync2", ENG_PVSYNC2),
    ("windowsaio", ENG_WINDOWSAIO),
    ("xnvme", ENG_XNVME),
];

/// Engines fio 3.33 has that later fio removed.
pub static OLD_ENGINES: &[&str] = &["pmemblk"];

/// The option called `name` (or with that alias) in `table`.
pub fn find(table: &'static [OptSpec], name: &str) -> Option<&'static OptSpec> {
    table.iter().find(|o| o.name == name || o.alias == name)
}

/// One of fio's own options or a profile's (fio registers the profiles'
/// options beside its own).
pub fn find_core(name: &str) -> Option<&'static OptSpec> {
    find(CORE, name).or_else(|| PROFILES.iter().find_map(|(_, t)| find(t, name)))
}

/// Whether `name` is only a profile's option (read by `profile=` alone).
pub fn is_profile_only(name: &str) -> bool {
    find(CORE, name).is_none() && PROFILES.iter().any(|(_, t)| find(t, name).is_some())
}

/// The options of `ioengine=engine` (None: fio has no such engine).
pub fn engine_options(engine: &str) -> Option<&'static [OptSpec]> {
    if OLD_ENGINES.contains(&engine) {
        return Some(&[]);
    }
    ENGINES.iter().find(|(n, _)| *n == engine).map(|(_, t)| *t)
}
