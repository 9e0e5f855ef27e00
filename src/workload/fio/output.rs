//! fio's outputs from the simulated jobs' statistics: its JSON
//! (`--output-format=json`), its human-readable summary, and its log files,
//! after fio 3.33's stat.c (`__show_run_stats`, `show_thread_status_json`,
//! `show_thread_status_normal`, `show_group_stats`, `show_disk_util`) and
//! iolog.c (`flush_samples`).
//!
//! The JSON is built as an ordered tree (`FioJson`) so that keys come in
//! fio's order: `json_text` prints it in fio's layout (`"key" : value`, two
//! spaces per level, floats with six decimals), and `json` gives it as a
//! `serde_json::Value` for programs (whose key order follows serde_json's
//! map: sorted, unless its `preserve_order` feature is on).
//!
//! What wbsim cannot know is fixed: pid (the clone's thread number),
//! majf/minf (0), zone resets (0); the time stamps come from `RunMeta`.

use super::job::{Dir, FioJob, Rw};
use super::stats::{JobStats, LogKind, PERCENTILES};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// One job's result: one per clone (`job.name` as fio names the clone,
/// i.e. the job's name for every clone), or a group's sum after
/// `group_reports`.
#[derive(Clone, Debug)]
pub struct JobReport {
    pub job: FioJob,
    pub groupid: u32,
    pub stats: JobStats,
    pub error: i32,
}

/// A disk's utilisation over the run (fio's `struct disk_util_stat`).
#[derive(Clone, Debug, Default)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks: u64,
    pub write_ticks: u64,
    pub in_queue: u64,
    /// Percent of the run the disk was busy.
    pub util: f64,
}

/// The run's header: fixed values from the caller, so outputs are
/// deterministic.
#[derive(Clone, Debug, Default)]
pub struct RunMeta {
    /// "fio-3.33".
    pub fio_version: String,
    pub timestamp: u64,
    pub timestamp_ms: u64,
    /// ctime(3) without the newline: "Wed Nov 25 17:01:11 2026".
    pub time: String,
    /// The `[global]` options, as `"global options"`.
    pub global_options: Vec<(String, String)>,
}

/// fio's `group_reporting`: as `__show_run_stats` walks the jobs in order,
/// a job with `group_reporting` whose group is the previous job's joins
/// that entry (which keeps the first member's name and options); any other
/// job starts its own.
pub fn group_reports(reports: Vec<JobReport>) -> Vec<JobReport> {
    let mut out: Vec<JobReport> = Vec::new();
    for r in reports {
        if let Some(last) = out.last_mut() {
            if r.job.group_reporting && last.groupid == r.groupid {
                last.stats.merge(&r.stats);
                if last.error == 0 {
                    last.error = r.error;
                }
                continue;
            }
        }
        out.push(r);
    }
    out
}

// ---------------------------------------------------------------------
// The JSON tree.

/// A JSON value that keeps its keys in order and its numbers' kinds
/// (fio's `json_value`: string, integer, float, object, array).
#[derive(Clone, Debug, PartialEq)]
pub enum FioJson {
    Int(i64),
    Float(f64),
    Str(String),
    Obj(Vec<(String, FioJson)>),
    Arr(Vec<FioJson>),
}

impl FioJson {
    /// fio's `json_print_object` layout.
    pub fn to_fio_string(&self) -> String {
        let mut s = String::new();
        self.print(&mut s, 0);
        s
    }

    fn print(&self, s: &mut String, level: usize) {
        let indent = |s: &mut String, l: usize| {
            for _ in 0..l {
                s.push_str("  ");
            }
        };
        match self {
            FioJson::Int(v) => {
                let _ = write!(s, "{v}");
            }
            FioJson::Float(v) => {
                let _ = write!(s, "{v:.6}");
            }
            FioJson::Str(v) => {
                s.push('"');
                s.push_str(&escape(v));
                s.push('"');
            }
            FioJson::Obj(pairs) => {
                s.push_str("{\n");
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        s.push_str(",\n");
                    }
                    indent(s, level + 1);
                    let _ = write!(s, "\"{}\" : ", escape(k));
                    v.print(s, level + 1);
                }
                s.push('\n');
                indent(s, level);
                s.push('}');
            }
            FioJson::Arr(vals) => {
                s.push_str("[\n");
                for (i, v) in vals.iter().enumerate() {
                    if i > 0 {
                        s.push_str(",\n");
                    }
                    indent(s, level + 1);
                    v.print(s, level + 1);
                }
                s.push('\n');
                indent(s, level);
                s.push(']');
            }
        }
    }

    /// As a `serde_json::Value`.
    pub fn to_value(&self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            FioJson::Int(v) => Value::from(*v),
            FioJson::Float(v) => Value::from(*v),
            FioJson::Str(v) => Value::from(v.as_str()),
            FioJson::Obj(pairs) => Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
            FioJson::Arr(vals) => Value::Array(vals.iter().map(FioJson::to_value).collect()),
        }
    }
}

/// fio's `strdup_escape`: a backslash before `\` and `"`.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\\' || c == '"' {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

/// An object under construction.
struct Obj(Vec<(String, FioJson)>);

impl Obj {
    fn new() -> Obj {
        Obj(Vec::new())
    }
    fn int(&mut self, k: &str, v: u64) -> &mut Obj {
        self.0.push((k.to_string(), FioJson::Int(v as i64)));
        self
    }
    fn sint(&mut self, k: &str, v: i64) -> &mut Obj {
        self.0.push((k.to_string(), FioJson::Int(v)));
        self
    }
    fn float(&mut self, k: &str, v: f64) -> &mut Obj {
        self.0.push((k.to_string(), FioJson::Float(v)));
        self
    }
    fn str(&mut self, k: &str, v: &str) -> &mut Obj {
        self.0.push((k.to_string(), FioJson::Str(v.to_string())));
        self
    }
    fn obj(&mut self, k: &str, v: Obj) -> &mut Obj {
        self.0.push((k.to_string(), FioJson::Obj(v.0)));
        self
    }
    fn done(self) -> FioJson {
        FioJson::Obj(self.0)
    }
}

// ---------------------------------------------------------------------
// Group run statistics (fio's `struct group_run_stats`).

#[derive(Clone, Debug)]
struct GroupRun {
    max_run: [u64; 3],
    min_run: [u64; 3],
    max_bw: [u64; 3],
    min_bw: [u64; 3],
    iobytes: [u64; 3],
    agg: [u64; 3],
    kb_base: u32,
}

/// `__show_run_stats`' runstats: per group, the slowest and fastest
/// member and the aggregate bandwidth (bytes over the longest runtime).
fn group_runs(reports: &[JobReport]) -> Vec<GroupRun> {
    let n = reports.iter().map(|r| r.groupid).max().map_or(1, |g| g + 1) as usize;
    let mut rs = vec![
        GroupRun {
            max_run: [0; 3],
            min_run: [u64::MAX; 3],
            max_bw: [0; 3],
            min_bw: [u64::MAX; 3],
            iobytes: [0; 3],
            agg: [0; 3],
            kb_base: 1024,
        };
        n
    ];
    for r in reports {
        let g = &mut rs[r.groupid as usize];
        g.kb_base = r.job.kb_base;
        let ts = &r.stats;
        for d in 0..3 {
            let run = ts.runtime_ms[d];
            if run == 0 {
                continue;
            }
            if run < g.min_run[d] || g.min_run[d] == 0 {
                g.min_run[d] = run;
            }
            g.max_run[d] = g.max_run[d].max(run);
            let bw = ts.io_bytes[d] * 1000 / run;
            g.min_bw[d] = g.min_bw[d].min(bw);
            g.max_bw[d] = g.max_bw[d].max(bw);
            g.iobytes[d] += ts.io_bytes[d];
        }
    }
    for g in &mut rs {
        for d in 0..3 {
            g.agg[d] = (g.iobytes[d] * 1000).checked_div(g.max_run[d]).unwrap_or(0);
        }
    }
    rs
}

/// fio's `convert_agg_kbytes_percent` (its `mean` is an int there).
fn agg_percent(g: &GroupRun, d: usize, mean: f64) -> f64 {
    if g.agg[d] > 1024 {
        let p = (mean as i64) as f64 * 100.0 / (g.agg[d] as f64 / 1024.0);
        p.min(100.0)
    } else {
        100.0
    }
}

/// The job's own options for `"job options"`: `FioJob::options` lists the
/// `[global]` ones first, which fio prints apart as `"global options"`.
fn own_options<'a>(job: &'a FioJob, global: &[(String, String)]) -> &'a [(String, String)] {
    if !global.is_empty() && job.options.starts_with(global) {
        &job.options[global.len()..]
    } else {
        &job.options
    }
}

/// fio's `add_ddir_lat_json`.
fn lat_json(stat: &super::stats::IoStat, hist: Option<&super::stats::Hist>) -> Obj {
    let (min, max, mean, dev) = stat.calc().unwrap_or((0, 0, 0.0, 0.0));
    let mut o = Obj::new();
    o.int("min", min)
        .int("max", max)
        .float("mean", mean)
        .float("stddev", dev)
        .int("N", stat.samples);
    if let Some(h) = hist {
        if stat.samples > 0 {
            let vals = h.percentiles(stat.samples, &PERCENTILES);
            let mut p = Obj::new();
            for (pc, v) in PERCENTILES.iter().zip(vals) {
                p.int(&format!("{pc:.6}"), v);
            }
            o.obj("percentile", p);
        }
    }
    o
}

/// fio's `add_ddir_status_json` for a data direction.
fn ddir_json(ts: &JobStats, g: &GroupRun, d: usize) -> Obj {
    let mut o = Obj::new();
    let (mut bw_bytes, mut bw, mut iops) = (0, 0, 0.0);
    if ts.runtime_ms[d] > 0 {
        let runt = ts.runtime_ms[d];
        bw_bytes = 1000 * ts.io_bytes[d] / runt;
        bw = bw_bytes / 1024;
        iops = 1000.0 * ts.total_ios[d] as f64 / runt as f64;
    }
    o.int("io_bytes", ts.io_bytes[d])
        .int("io_kbytes", ts.io_bytes[d] >> 10)
        .int("bw_bytes", bw_bytes)
        .int("bw", bw)
        .float("iops", iops)
        .int("runtime", ts.runtime_ms[d])
        .int("total_ios", ts.total_ios[d])
        .int("short_ios", 0)
        .int("drop_ios", 0);
    o.obj("slat_ns", lat_json(&ts.slat[d], None));
    o.obj("clat_ns", lat_json(&ts.clat[d], Some(&ts.clat_hist[d])));
    o.obj("lat_ns", lat_json(&ts.lat[d], None));
    let (min, max, agg, mean, dev) = match ts.bw[d].calc() {
        Some((min, max, mean, dev)) => (min, max, agg_percent(g, d, mean), mean, dev),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    o.int("bw_min", min)
        .int("bw_max", max)
        .float("bw_agg", agg)
        .float("bw_mean", mean)
        .float("bw_dev", dev)
        .int("bw_samples", ts.bw[d].samples);
    let (min, max, mean, dev) = ts.iops[d].calc().unwrap_or((0, 0, 0.0, 0.0));
    o.int("iops_min", min)
        .int("iops_max", max)
        .float("iops_mean", mean)
        .float("iops_stddev", dev)
        .int("iops_samples", ts.iops[d].samples);
    o
}

/// Seconds since the run began when the last job ended (fio's
/// `elapsed_sec`, rounded up), the run beginning at simulated time 0.
fn elapsed_sec(reports: &[JobReport]) -> u64 {
    let end_ms = reports.iter().map(|r| r.stats.end).max().unwrap_or(0) / 1_000_000;
    end_ms.div_ceil(1000)
}

fn cpu_percent(ts: &JobStats) -> (f64, f64) {
    if ts.total_run_time_ms == 0 {
        return (0.0, 0.0);
    }
    let runt = ts.total_run_time_ms as f64;
    let usr_ms = (ts.usr / 1_000_000) as f64;
    let sys_ms = (ts.sys / 1_000_000) as f64;
    (usr_ms * 100.0 / runt, sys_ms * 100.0 / runt)
}

/// fio's `show_thread_status_json`.
fn job_json(r: &JobReport, g: &GroupRun, meta: &RunMeta, elapsed: u64) -> FioJson {
    let ts = &r.stats;
    let mut o = Obj::new();
    o.str("jobname", &r.job.name)
        .int("groupid", r.groupid as u64)
        .sint("error", r.error as i64);
    o.int("eta", i32::MAX as u64).int("elapsed", elapsed);
    let opts = own_options(&r.job, &meta.global_options);
    if !opts.is_empty() {
        let mut jo = Obj::new();
        for (k, v) in opts {
            jo.str(k, v);
        }
        o.obj("job options", jo);
    }
    for d in Dir::ALL {
        o.obj(d.name(), ddir_json(ts, g, d.idx()));
    }
    let mut sync = Obj::new();
    sync.int("total_ios", ts.total_sync);
    sync.obj("lat_ns", lat_json(&ts.sync, Some(&ts.sync_hist)));
    o.obj("sync", sync);
    let (usr, sys) = cpu_percent(ts);
    o.int("job_runtime", ts.total_run_time_ms)
        .float("usr_cpu", usr)
        .float("sys_cpu", sys)
        .int("ctx", ts.ctx)
        .int("majf", 0)
        .int("minf", 0);
    let (depth, submit, complete, tsub, tcomp) = ts.depth_maps();
    let total: u64 = ts.total_ios.iter().sum();
    let dist = |map: &[u64; 7], total: u64, submit: bool| {
        let pc = JobStats::dist(map, total);
        let mut m = Obj::new();
        for (i, v) in pc.iter().enumerate() {
            let name = match (submit, i) {
                (_, 6) => ">=64".to_string(),
                (false, i) => (1u32 << i).to_string(),
                (true, 0) => "0".to_string(),
                (true, i) => (1u32 << (i + 1)).to_string(),
            };
            m.float(&name, *v);
        }
        m
    };
    o.obj("iodepth_level", dist(&depth, total, false));
    o.obj("iodepth_submit", dist(&submit, tsub, true));
    o.obj("iodepth_complete", dist(&complete, tcomp, true));
    const EDGES: [&str; 12] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    for (key, counts) in [
        ("latency_ns", &ts.lat_n[..]),
        ("latency_us", &ts.lat_u[..]),
        ("latency_ms", &ts.lat_m[..]),
    ] {
        let mut m = Obj::new();
        for (e, v) in EDGES.iter().zip(ts.lat_dist(counts)) {
            m.float(e, v);
        }
        o.obj(key, m);
    }
    o.int("latency_depth", r.job.iodepth as u64)
        .int("latency_target", 0)
        .float("latency_percentile", 100.0)
        .int("latency_window", 0);
    if let Some(desc) = &r.job.description {
        o.str("desc", desc);
    }
    o.done()
}

/// fio's JSON output as an ordered tree.
pub fn json_tree(meta: &RunMeta, reports: &[JobReport], disks: &[DiskUtil]) -> FioJson {
    let groups = group_runs(reports);
    let elapsed = elapsed_sec(reports);
    let mut root = Obj::new();
    root.str("fio version", &meta.fio_version)
        .int("timestamp", meta.timestamp)
        .int("timestamp_ms", meta.timestamp_ms)
        .str("time", &meta.time);
    if !meta.global_options.is_empty() {
        let mut g = Obj::new();
        for (k, v) in &meta.global_options {
            g.str(k, v);
        }
        root.obj("global options", g);
    }
    let jobs = reports
        .iter()
        .map(|r| job_json(r, &groups[r.groupid as usize], meta, elapsed))
        .collect();
    root.0.push(("jobs".into(), FioJson::Arr(jobs)));
    if !disks.is_empty() {
        let arr = disks
            .iter()
            .map(|du| {
                let mut o = Obj::new();
                o.str("name", &du.name)
                    .int("read_ios", du.read_ios)
                    .int("write_ios", du.write_ios)
                    .int("read_merges", du.read_merges)
                    .int("write_merges", du.write_merges)
                    .int("read_ticks", du.read_ticks)
                    .int("write_ticks", du.write_ticks)
                    .int("in_queue", du.in_queue)
                    .float("util", du.util.min(100.0));
                o.done()
            })
            .collect();
        root.0.push(("disk_util".into(), FioJson::Arr(arr)));
    }
    root.done()
}

/// fio's `--output-format=json` as a value (see the module's note on key
/// order); `json_text` prints it as fio does.
pub fn json(meta: &RunMeta, reports: &[JobReport], disks: &[DiskUtil]) -> serde_json::Value {
    json_tree(meta, reports, disks).to_value()
}

/// fio's `--output-format=json` text, key for key and line for line.
pub fn json_text(meta: &RunMeta, reports: &[JobReport], disks: &[DiskUtil]) -> String {
    json_tree(meta, reports, disks).to_fio_string() + "\n"
}

// ---------------------------------------------------------------------
// The normal (human-readable) output.

/// Units of `num2str`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Unit {
    None,
    Byte,
    BytePerSec,
}

/// fio's `num2str` (lib/num2str.c): at most `maxlen` digits, scaled by
/// 1000 or 1024 with an SI or IEC prefix, and the decimals that fit.
fn num2str(mut num: u64, maxlen: usize, pow2: bool, unit: Unit) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefix = if pow2 { IEC } else { SI };
    let unit = match unit {
        Unit::None => "",
        Unit::Byte => "B",
        Unit::BytePerSec => "B/s",
    };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post = 0;
    let mut modulo = None;
    let mut carry = false;
    while post < 7 {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= 7 {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefix[post]);
    };
    let len = num.to_string().len();
    if maxlen as i64 - len as i64 <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefix[post]);
    }
    let frac = format!("{:.*}", maxlen - len - 1, m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefix[post])
}

fn ddir_str(rw: Rw) -> &'static str {
    match rw {
        Rw::Read => "read",
        Rw::Write => "write",
        Rw::RandRead => "randread",
        Rw::RandWrite => "randwrite",
        Rw::ReadWrite => "rw",
        Rw::RandRw => "randrw",
        Rw::Trim => "trim",
        Rw::RandTrim => "randtrim",
        Rw::TrimWrite => "trimwrite",
    }
}

/// fio's `display_lat`: scaled to usec or msec when the values are large.
fn display_lat(out: &mut String, name: &str, stat: &super::stats::IoStat) {
    let Some((mut min, mut max, mut mean, mut dev)) = stat.calc() else {
        return;
    };
    let mut base = "(nsec)";
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1_000_000.0;
        dev /= 1_000_000.0;
        base = "(msec)";
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        base = "(usec)";
    }
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, false, Unit::None),
        num2str(max, 6, false, Unit::None)
    );
}

/// fio's `show_clat_percentiles`.
fn show_percentiles(out: &mut String, hist: &super::stats::Hist, nr: u64, pre: &str) {
    if nr == 0 {
        return;
    }
    let mut vals = hist.percentiles(nr, &PERCENTILES);
    let minv = vals.iter().copied().min().unwrap_or(0);
    let maxv = vals.iter().copied().max().unwrap_or(0);
    let (scale, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    let q = maxv / divisor;
    let digits = if q == 0 {
        0
    } else {
        ((q as f64).log10() + 1.0) as usize
    };
    let tw = digits.max(5);
    let precision = 2;
    let per_line = (80 - 7) / (precision + 10 + tw);
    let len = vals.len();
    for (j, v) in vals.iter_mut().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let last = j == len - 1;
        for _ in 0..scale {
            *v = v.div_ceil(1000);
        }
        let _ = write!(
            out,
            " {:5.2}th=[{:>tw$}]{}",
            PERCENTILES[j],
            v,
            if last { '\n' } else { ',' }
        );
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// fio's `show_ddir_status` for a data direction.
fn show_ddir(out: &mut String, r: &JobReport, g: &GroupRun, d: usize) {
    let ts = &r.stats;
    let runt = ts.runtime_ms[d];
    if runt == 0 {
        return;
    }
    let i2p = r.job.kb_base.is_power_of_two();
    let bw = 1000 * ts.io_bytes[d] / runt;
    let iops = 1000 * ts.total_ios[d] / runt;
    let post = if d == Dir::Write.idx() {
        "; 0 zone resets"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "  {}: IOPS={}, BW={} ({})({}/{}msec){post}",
        Dir::ALL[d].name(),
        num2str(iops, 4, false, Unit::None),
        num2str(bw, 4, i2p, Unit::BytePerSec),
        num2str(bw, 4, !i2p, Unit::BytePerSec),
        num2str(ts.io_bytes[d], 4, i2p, Unit::Byte),
        runt
    );
    display_lat(out, "slat", &ts.slat[d]);
    display_lat(out, "clat", &ts.clat[d]);
    display_lat(out, " lat", &ts.lat[d]);
    show_percentiles(out, &ts.clat_hist[d], ts.clat[d].samples, "clat");
    if let Some((mut min, mut max, mut mean, mut dev)) = ts.bw[d].calc() {
        let kb = r.job.kb_base as f64;
        let mut unit = if i2p { "KiB" } else { "kB" };
        let p = agg_percent(g, d, mean);
        if mean > kb * kb {
            min = (min as f64 / kb) as u64;
            max = (max as f64 / kb) as u64;
            mean /= kb;
            dev /= kb;
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={p:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            ts.bw[d].samples
        );
    }
    if let Some((min, max, mean, dev)) = ts.iops[d].calc() {
        let _ = writeln!(
            out,
            "   iops        : min={min:5}, max={max:5}, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            ts.iops[d].samples
        );
    }
}

/// fio's `show_lat`: the non-empty buckets, five to a line.
fn show_lat(out: &mut String, pc: &[f64], ranges: &[&str], msg: &str) {
    let mut new_line = true;
    let mut shown = false;
    let mut line = 0;
    for (v, range) in pc.iter().zip(ranges) {
        if *v <= 0.0 {
            continue;
        }
        shown = true;
        if new_line {
            if line > 0 {
                out.push('\n');
            }
            let _ = write!(out, "  lat ({msg})   : ");
            new_line = false;
            line = 0;
        }
        if line > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{range}{v:3.2}%");
        line += 1;
        if line == 5 {
            new_line = true;
        }
    }
    if shown {
        out.push('\n');
    }
}

/// The C library's message for an errno ("No space left on device").
fn strerror(errno: i32) -> String {
    let s = std::io::Error::from_raw_os_error(errno).to_string();
    match s.find(" (os error") {
        Some(p) => s[..p].to_string(),
        None => s,
    }
}

/// fio's `show_thread_status_normal`.
fn job_normal(out: &mut String, r: &JobReport, g: &GroupRun, pid: usize, meta: &RunMeta) {
    let ts = &r.stats;
    if ts.io_bytes.iter().sum::<u64>() == 0 && ts.total_ios.iter().sum::<u64>() == 0 {
        return;
    }
    if r.error == 0 {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2}: pid={pid}: {}",
            r.job.name, r.groupid, ts.members, r.error, meta.time
        );
    } else {
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2} ({}): pid={pid}: {}",
            r.job.name,
            r.groupid,
            ts.members,
            r.error,
            strerror(r.error),
            meta.time
        );
    }
    if let Some(desc) = &r.job.description {
        let _ = writeln!(out, "  Description  : [{desc}]");
    }
    for d in 0..3 {
        if ts.io_bytes[d] > 0 {
            show_ddir(out, r, g, d);
        }
    }
    const RANGES: [&str; 12] = [
        "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=",
        ">=2000=",
    ];
    show_lat(out, &ts.lat_dist(&ts.lat_n), &RANGES[..10], "nsec");
    show_lat(out, &ts.lat_dist(&ts.lat_u), &RANGES[..10], "usec");
    show_lat(out, &ts.lat_dist(&ts.lat_m), &RANGES, "msec");
    if ts.sync.samples > 0 {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        display_lat(out, "sync", &ts.sync);
        show_percentiles(out, &ts.sync_hist, ts.sync.samples, "sync");
    }
    let (usr, sys) = cpu_percent(ts);
    let _ = writeln!(
        out,
        "  cpu          : usr={usr:3.2}%, sys={sys:3.2}%, ctx={}, majf=0, minf=0",
        ts.ctx
    );
    let (depth, submit, complete, tsub, tcomp) = ts.depth_maps();
    let total: u64 = ts.total_ios.iter().sum();
    let p = JobStats::dist(&depth, total);
    let _ = writeln!(
        out,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%",
        p[0], p[1], p[2], p[3], p[4], p[5], p[6]
    );
    for (label, map, t) in [
        ("     submit    ", &submit, tsub),
        ("     complete  ", &complete, tcomp),
    ] {
        let p = JobStats::dist(map, t);
        let _ = writeln!(
            out,
            "{label}: 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
            p[0], p[1], p[2], p[3], p[4], p[5], p[6]
        );
    }
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short=0,0,0,0 dropped=0,0,0,0",
        ts.total_ios[0], ts.total_ios[1], ts.total_ios[2], ts.total_sync
    );
    let _ = writeln!(
        out,
        "     latency   : target=0, window=0, percentile=100.00%, depth={}",
        r.job.iodepth
    );
}

/// fio's human-readable output: the jobs' header lines (as fio prints them
/// when it adds the jobs), the per-job blocks, "Run status group N (all
/// jobs):" and "Disk stats (read/write):". Pass the reports after
/// `group_reports` (pids are the entries' positions from 1).
pub fn normal(meta: &RunMeta, reports: &[JobReport], disks: &[DiskUtil]) -> String {
    let mut out = String::new();
    // add_job(): a line per job, "..." for its second clone.
    let mut prev: Option<(&str, u32)> = None;
    let mut procs = 0;
    for r in reports {
        let j = &r.job;
        procs += r.stats.members;
        let key = (j.name.as_str(), r.groupid);
        if prev == Some(key) {
            if !out.ends_with("...\n") {
                out.push_str("...\n");
            }
            continue;
        }
        prev = Some(key);
        let i2p = j.kb_base.is_power_of_two();
        let b = |v| num2str(v, 4, i2p, Unit::Byte);
        let _ = writeln!(
            out,
            "{}: (g={}): rw={}, bs=(R) {}-{}, (W) {}-{}, (T) {}-{}, ioengine={}, iodepth={}",
            j.name,
            r.groupid,
            ddir_str(j.rw),
            b(j.bs[0].min),
            b(j.bs[0].max),
            b(j.bs[1].min),
            b(j.bs[1].max),
            b(j.bs[2].min),
            b(j.bs[2].max),
            j.ioengine.name(),
            j.iodepth
        );
        if r.stats.members > 1 {
            out.push_str("...\n");
        }
    }
    let _ = writeln!(out, "{}", meta.fio_version);
    let _ = writeln!(
        out,
        "Starting {procs} process{}",
        if procs > 1 { "es" } else { "" }
    );
    out.push('\n');
    let groups = group_runs(reports);
    for (i, r) in reports.iter().enumerate() {
        job_normal(&mut out, r, &groups[r.groupid as usize], i + 1, meta);
    }
    for (gid, g) in groups.iter().enumerate() {
        let _ = write!(out, "\nRun status group {gid} (all jobs):\n");
        let i2p = g.kb_base.is_power_of_two();
        for (d, label) in ["   READ", "  WRITE", "   TRIM"].iter().enumerate() {
            if g.max_run[d] == 0 {
                continue;
            }
            let n = |v, p2, u| num2str(v, 4, p2, u);
            let _ = writeln!(
                out,
                "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
                n(g.agg[d], i2p, Unit::BytePerSec),
                n(g.agg[d], !i2p, Unit::BytePerSec),
                n(g.min_bw[d], i2p, Unit::BytePerSec),
                n(g.max_bw[d], i2p, Unit::BytePerSec),
                n(g.min_bw[d], !i2p, Unit::BytePerSec),
                n(g.max_bw[d], !i2p, Unit::BytePerSec),
                n(g.iobytes[d], i2p, Unit::Byte),
                n(g.iobytes[d], !i2p, Unit::Byte),
                g.min_run[d],
                g.max_run[d]
            );
        }
    }
    if !disks.is_empty() {
        out.push_str("\nDisk stats (read/write):\n");
        for du in disks {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
                du.name,
                du.read_ios,
                du.write_ios,
                du.read_merges,
                du.write_merges,
                du.read_ticks,
                du.write_ticks,
                du.in_queue,
                du.util.min(100.0)
            );
        }
    }
    out
}

// ---------------------------------------------------------------------
// Log files.

/// fio's log file name (init.c `gen_log_name` with `per_job_logs=1`):
/// `PREFIX_KIND.N.log`, PREFIX the `write_*_log` value or else the job's
/// name, N the job's thread number (from 1, over all clones).
pub fn log_path(dir: &Path, job: &FioJob, kind: LogKind, thread_number: usize) -> PathBuf {
    let opt = match kind {
        LogKind::Lat | LogKind::Slat | LogKind::Clat => &job.write_lat_log,
        LogKind::Bw => &job.write_bw_log,
        LogKind::Iops => &job.write_iops_log,
    };
    let prefix = match opt {
        Some(p) if !p.is_empty() => p.as_str(),
        _ => job.name.as_str(),
    };
    dir.join(format!("{prefix}_{}.{thread_number}.log", kind.name()))
}

fn write_log_buf(path: &Path, buf: &[u8], append: bool) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)?;
    f.write_all(buf)
}

/// Drain a job's log lines to its files: the first call creates them, the
/// later ones append. The engine calls it when `stats.log_pending()`
/// passes `stats::LOG_FLUSH_BYTES`, so that one line per IO over a long
/// run never piles up in memory.
pub fn flush_logs(
    dir: &Path,
    thread_number: usize,
    job: &FioJob,
    stats: &mut JobStats,
) -> std::io::Result<()> {
    for l in &mut stats.logs {
        let path = log_path(dir, job, l.kind, thread_number);
        write_log_buf(&path, &l.buf, l.flushed)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        l.buf.clear();
        l.flushed = true;
    }
    Ok(())
}

/// Write the rest of every job's logs (fio's `write_lat_log`,
/// `write_bw_log`, `write_iops_log` files; an empty slat log for a sync
/// engine, as fio leaves it). `reports` are the clones before
/// `group_reports`, in fio's order: the N in a file's name is the
/// report's position from 1. Returns the files, in order.
pub fn write_logs(dir: &Path, reports: &[JobReport]) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        for l in &r.stats.logs {
            let path = log_path(dir, &r.job, l.kind, i + 1);
            write_log_buf(&path, &l.buf, l.flushed)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
            paths.push(path);
        }
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(name: &str, gr: bool, groupid: u32, ios: u64) -> JobReport {
        let mut job = FioJob::new(name, "t");
        job.group_reporting = gr;
        let mut stats = JobStats::new(0, Default::default());
        for i in 0..ios {
            stats.add_io(Dir::Write, 4096, 0, i * 1000, None, i * 1000 + 500);
        }
        stats.finish(0, ios * 1000 + 1_000_000, 0, 0, 0);
        JobReport {
            job,
            groupid,
            stats,
            error: 0,
        }
    }

    #[test]
    fn group_reporting_walk() {
        // As __show_run_stats: a group_reporting job joins the entry
        // before it when that entry is of its group, whatever that one's
        // own setting; a new group starts a new entry.
        let r = group_reports(vec![
            rep("a", false, 0, 10),
            rep("b", true, 0, 20),
            rep("c", true, 1, 30),
            rep("c", true, 1, 40),
            rep("d", false, 1, 50),
        ]);
        let names: Vec<_> = r
            .iter()
            .map(|r| (r.job.name.as_str(), r.stats.total_ios[1]))
            .collect();
        assert_eq!(names, [("a", 30), ("c", 70), ("d", 50)]);
        assert_eq!(r[1].stats.members, 2);
    }

    #[test]
    fn error_line_and_groups() {
        let mut a = rep("a", false, 0, 10);
        a.error = 28;
        let b = rep("b", false, 2, 10);
        let m = RunMeta {
            fio_version: "fio-3.33".into(),
            time: "Thu Jan  1 00:00:00 1970".into(),
            ..RunMeta::default()
        };
        let text = normal(&m, &[a, b], &[]);
        assert!(text.contains("a: (groupid=0, jobs=1): err=28 (No space left on device): pid=1: Thu Jan  1 00:00:00 1970\n"), "{text}");
        // Every group up to the highest is listed, as fio does.
        assert!(
            text.contains("Run status group 1 (all jobs):\n\nRun status group 2"),
            "{text}"
        );
        let v = json(&m, &[rep("x", false, 0, 1)], &[]);
        assert_eq!(v["jobs"][0]["error"], 0);
        assert!(v.get("disk_util").is_none());
        assert!(v.get("global options").is_none());
    }

    #[test]
    fn errno_text() {
        assert_eq!(strerror(28), "No space left on device");
    }

    #[test]
    fn num2str_as_fio() {
        assert_eq!(num2str(67_108_864, 4, true, Unit::Byte), "64.0MiB");
        assert_eq!(num2str(67_108_864, 4, false, Unit::Byte), "67.1MB");
        assert_eq!(num2str(4_194_304, 4, true, Unit::Byte), "4096KiB");
        assert_eq!(num2str(4_194_304, 4, false, Unit::Byte), "4194kB");
        assert_eq!(num2str(5_461_333, 4, false, Unit::None), "5461k");
        assert_eq!(num2str(1999, 4, false, Unit::None), "1999");
        assert_eq!(num2str(4096, 4, true, Unit::Byte), "4096B");
        assert_eq!(num2str(65536, 4, true, Unit::Byte), "64.0KiB");
        assert_eq!(num2str(8192, 4, true, Unit::Byte), "8192B");
        // 22369621333 B/s: 20.8GiB/s (22.4GB/s).
        assert_eq!(
            num2str(22_369_621_333, 4, true, Unit::BytePerSec),
            "20.8GiB/s"
        );
        assert_eq!(
            num2str(22_369_621_333, 4, false, Unit::BytePerSec),
            "22.4GB/s"
        );
        assert_eq!(num2str(9394, 6, false, Unit::None), "9394");
    }

    #[test]
    fn fio_json_layout() {
        let mut o = Obj::new();
        o.str("a", "x\"y").int("b", 1).float("c", 0.5);
        let mut inner = Obj::new();
        inner.int("d", 2);
        o.obj("e", inner);
        o.0.push(("f".into(), FioJson::Arr(vec![FioJson::Int(3)])));
        assert_eq!(
            o.done().to_fio_string(),
            "{\n  \"a\" : \"x\\\"y\",\n  \"b\" : 1,\n  \"c\" : 0.500000,\n  \"e\" : {\n    \"d\" : 2\n  },\n  \"f\" : [\n    3\n  ]\n}"
        );
    }
}
