//! wbsim's fio outputs against fio 3.33's own (tests/data/fio/reference/,
//! made by tools/fio-reference.sh): the JSON's keys, their order and their
//! value types; the normal output's lines; the log files' line format.
//! The simulated jobs mirror the reference jobs' shape (directions, sync,
//! async, groups, samples); their numbers differ.

use std::path::{Path, PathBuf};
use wbsim::workload::fio::job::{BsRange, IoEngine, Rw};
use wbsim::workload::fio::output::{
    self, group_reports, json, json_text, normal, write_logs, DiskUtil, JobReport, RunMeta,
};
use wbsim::workload::fio::stats::{JobStats, LogCfg, LogKind, LOG_FLUSH_BYTES, PLAT_NR};
use wbsim::workload::fio::{Dir, FioJob};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;

fn reference(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fio/reference")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn meta(globals: &[(&str, &str)]) -> RunMeta {
    RunMeta {
        fio_version: "fio-3.33".into(),
        timestamp: 1_795_626_071,
        timestamp_ms: 1_795_626_071_643,
        time: "Wed Nov 25 17:01:11 2026".into(),
        global_options: globals
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn job(name: &str, opts: &[(&str, &str)]) -> FioJob {
    let mut j = FioJob::new(name, "<command line>");
    j.options = opts
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    j
}

fn report(job: FioJob, stats: JobStats) -> JobReport {
    JobReport {
        job,
        groupid: 0,
        stats,
        error: 0,
    }
}

/// A deterministic latency spread over `lo..lo+span` ns.
fn lat(i: u64, lo: u64, span: u64) -> u64 {
    lo + (i.wrapping_mul(2_654_435_761) >> 7) % span
}

/// `n` IOs of a sync engine, one every `gap` ns from `t0`.
fn sync_stream(
    s: &mut JobStats,
    dir: Dir,
    bs: u64,
    n: u64,
    t0: u64,
    gap: u64,
    (lo, span): (u64, u64),
) {
    for i in 0..n {
        let issue = t0 + i * gap;
        s.add_io(dir, bs, i * bs, issue, None, issue + lat(i, lo, span));
    }
}

/// The JSON text's shape, line by line: indentation, keys, and the kind of
/// each value (I integer, F float, S string) or the bracket.
fn json_shape(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            let indent = l.len() - l.trim_start().len();
            let t = l.trim();
            let (key, val) = match t.strip_prefix('"') {
                Some(rest) if rest.contains("\" : ") => {
                    let k = rest.split("\" : ").next().unwrap();
                    (k.to_string(), t[k.len() + 5..].to_string())
                }
                _ => (String::new(), t.to_string()),
            };
            let v = val.trim_end_matches(',');
            let kind = if v.starts_with('"') {
                "S"
            } else if v == "{" || v == "[" || v == "}" || v == "]" {
                v
            } else if v.contains('.') {
                "F"
            } else if v.parse::<i64>().is_ok() {
                "I"
            } else {
                panic!("unexpected JSON line: {l}")
            };
            format!("{indent}|{key}|{kind}")
        })
        .collect()
}

fn assert_json_like(mine: &str, reference_name: &str) {
    let a = json_shape(mine);
    let b = json_shape(&reference(reference_name));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            x,
            y,
            "{reference_name}: line {} differs:\nwbsim {x}\nfio   {y}",
            i + 1
        );
    }
    assert_eq!(a.len(), b.len(), "{reference_name}: line count");
}

/// A normal-output line's shape: numbers become N, unit prefixes and
/// time units go, runs of spaces become one. The latency-distribution
/// lines ("lat (nsec)   : 20=...") depend on the values and become "LAT".
fn text_shape(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for l in text.lines() {
        if l.contains(": Laying out IO file") {
            continue;
        }
        if l.starts_with("  lat (") {
            if out.last().map(String::as_str) != Some("LAT") {
                out.push("LAT".into());
            }
            continue;
        }
        let mut s = String::new();
        let mut chars = l.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() {
                while chars
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || *c == '.')
                {
                    chars.next();
                }
                s.push('N');
                while chars.peek().is_some_and(|c| "kKMGTPEi".contains(*c)) {
                    chars.next();
                }
            } else if c == ' ' {
                // Column padding ("[   10]", "min=   20") varies with values.
                if !s.ends_with(' ') && !s.ends_with('[') && !s.ends_with('=') {
                    s.push(' ');
                }
            } else {
                s.push(c);
            }
        }
        for u in ["(nsec)", "(usec)", "(msec)"] {
            s = s.replace(u, "(U)");
        }
        // The time stamp's day and month names.
        if let Some(p) = s.find(": pid=N: ") {
            s.truncate(p + 9);
        }
        s = s.replace("kB", "B").replace("KiB", "B").replace("MiB", "B");
        out.push(s);
    }
    out
}

fn assert_text_like(mine: &str, reference_name: &str) {
    let a = text_shape(mine);
    let b = text_shape(&reference(reference_name));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            x,
            y,
            "{reference_name}: line {} differs:\nwbsim {x}\nfio   {y}\n---\n{mine}",
            i + 1
        );
    }
    assert_eq!(a.len(), b.len(), "{reference_name}: line count\n{mine}");
}

fn randwrite() -> Vec<JobReport> {
    let mut j = job(
        "w",
        &[
            ("name", "w"),
            ("ioengine", "null"),
            ("rw", "randwrite"),
            ("bs", "4k"),
            ("size", "64m"),
        ],
    );
    j.ioengine = IoEngine::Null;
    j.rw = Rw::RandWrite;
    let mut s = JobStats::new(0, LogCfg::default());
    sync_stream(&mut s, Dir::Write, 4096, 16384, 0, 180, (10, 60));
    s.finish(0, 3 * MS, 0, 0, 0);
    vec![report(j, s)]
}

#[test]
fn randwrite_json_and_text() {
    let r = randwrite();
    let m = meta(&[]);
    assert_json_like(&json_text(&m, &r, &[]), "randwrite.json");
    assert_text_like(&normal(&m, &r, &[]), "randwrite.txt");
    // jq '.jobs[0].write.clat_ns.percentile["99.000000"]'
    let v = json(&m, &r, &[]);
    let p99 = v
        .pointer("/jobs/0/write/clat_ns/percentile/99.000000")
        .and_then(|v| v.as_u64())
        .expect("p99");
    assert!((10..=70).contains(&p99), "{p99}");
    assert_eq!(v["jobs"][0]["write"]["total_ios"], 16384);
    assert_eq!(v["jobs"][0]["write"]["io_kbytes"], 65536);
    assert_eq!(v["jobs"][0]["write"]["runtime"], 3);
}

#[test]
fn randrw_json_and_text() {
    let mut j = job(
        "rw",
        &[
            ("name", "rw"),
            ("ioengine", "null"),
            ("rw", "randrw"),
            ("bs", "64k,8k"),
            ("size", "1g"),
            ("runtime", "2"),
            ("rate_iops", "2000,2000"),
        ],
    );
    j.ioengine = IoEngine::Null;
    j.rw = Rw::RandRw;
    j.bs = [
        BsRange {
            min: 65536,
            max: 65536,
        },
        BsRange {
            min: 8192,
            max: 8192,
        },
        BsRange {
            min: 8192,
            max: 8192,
        },
    ];
    let mut s = JobStats::new(0, LogCfg::default());
    // 2000 IOPS each way for 2 s: an IO of each every 500 us.
    for i in 0..4000u64 {
        let t = i * 500 * US;
        s.add_io(Dir::Read, 65536, 0, t, None, t + lat(i, 20, 400));
        s.add_io(
            Dir::Write,
            8192,
            0,
            t + 250 * US,
            None,
            t + 250 * US + lat(i, 20, 400),
        );
    }
    s.engine_commits = true;
    s.finish(0, 2000 * MS, 114 * MS, 0, 3989);
    let r = vec![report(j, s)];
    let m = meta(&[]);
    assert_json_like(&json_text(&m, &r, &[]), "randrw.json");
    assert_text_like(&normal(&m, &r, &[]), "randrw.txt");
    let v = json(&m, &r, &[]);
    let w = &v["jobs"][0]["write"];
    // A constant rate: every 500 ms sample is the same.
    assert_eq!(w["bw_samples"], 3);
    assert_eq!(w["bw_min"], w["bw_max"]);
    assert_eq!(w["bw_min"], 16000);
    assert_eq!(w["iops_min"], 2000);
    assert_eq!(w["bw_agg"], 100.0);
    assert_eq!(v["jobs"][0]["elapsed"], 2);
    assert_eq!(v["jobs"][0]["usr_cpu"], 5.7);
    // The null engine commits: no batches of one where it marked none.
    assert_eq!(v["jobs"][0]["iodepth_submit"]["4"], 0.0);
}

fn null_job(name: &str, rw: Rw, extra: &[(&str, &str)]) -> FioJob {
    let mut opts = vec![("name", name), ("ioengine", "null")];
    opts.extend_from_slice(extra);
    let mut j = job(name, &opts);
    j.ioengine = IoEngine::Null;
    j.rw = rw;
    j
}

#[test]
fn group_reporting_merges_clones() {
    let opts = [
        ("rw", "write"),
        ("bs", "4k"),
        ("size", "32m"),
        ("numjobs", "2"),
    ];
    let mut clones = Vec::new();
    for k in 0..2u64 {
        let mut j = null_job("g", Rw::Write, &opts);
        j.numjobs = 2;
        j.group_reporting = true;
        let mut s = JobStats::new(0, LogCfg::default());
        sync_stream(&mut s, Dir::Write, 4096, 8192, k, 200, (10 + k, 40));
        s.finish(0, 2 * MS, MS, 0, 0);
        clones.push(report(j, s));
    }
    let all_lat: Vec<f64> = clones.iter().map(|r| r.stats.clat[1].mean).collect();
    let grouped = group_reports(clones);
    assert_eq!(grouped.len(), 1);
    assert_eq!(grouped[0].job.name, "g");
    assert_eq!(grouped[0].stats.members, 2);
    assert_eq!(grouped[0].stats.total_ios[1], 16384);
    let mean = grouped[0].stats.clat[1].mean;
    assert!((mean - (all_lat[0] + all_lat[1]) / 2.0).abs() < 1e-9);
    let m = meta(&[]);
    assert_json_like(&json_text(&m, &grouped, &[]), "group.json");
    assert_text_like(&normal(&m, &grouped, &[]), "group.txt");
}

#[test]
fn clones_without_group_reporting() {
    let opts = [
        ("rw", "read"),
        ("bs", "4k"),
        ("size", "16m"),
        ("numjobs", "2"),
    ];
    let mut clones = Vec::new();
    for k in 0..2u64 {
        let mut j = null_job("c", Rw::Read, &opts);
        j.numjobs = 2;
        let mut s = JobStats::new(0, LogCfg::default());
        sync_stream(&mut s, Dir::Read, 4096, 4096, k, 200, (20, 60));
        s.finish(0, MS, 0, 0, 0);
        clones.push(report(j, s));
    }
    let r = group_reports(clones);
    assert_eq!(r.len(), 2);
    let m = meta(&[]);
    assert_json_like(&json_text(&m, &r, &[]), "clones.json");
    assert_text_like(&normal(&m, &r, &[]), "clones.txt");
}

#[test]
fn async_engine_slat_and_depths() {
    let mut j = null_job(
        "a",
        Rw::RandRead,
        &[
            ("iodepth", "16"),
            ("iodepth_batch", "4"),
            ("iodepth_batch_complete_min", "1"),
            ("rw", "randread"),
            ("bs", "4k"),
            ("size", "64m"),
        ],
    );
    j.iodepth = 16;
    let mut s = JobStats::new(0, LogCfg::default());
    // Batches of 4 submitted together, completing in order.
    for i in 0..16384u64 {
        let issue = i * 240;
        s.add_depth(4);
        if i % 4 == 0 {
            s.add_submit(4);
            s.add_complete(4);
        }
        let submit = issue + lat(i, 30, 300);
        s.add_io(
            Dir::Read,
            4096,
            0,
            issue,
            Some(submit),
            submit + lat(i, 190, 60),
        );
    }
    s.finish(0, 4 * MS, 0, 0, 0);
    let r = vec![report(j, s)];
    let m = meta(&[]);
    assert_json_like(&json_text(&m, &r, &[]), "async.json");
    assert_text_like(&normal(&m, &r, &[]), "async.txt");
    let v = json(&m, &r, &[]);
    assert_eq!(v["jobs"][0]["read"]["slat_ns"]["N"], 16384);
    assert_eq!(v["jobs"][0]["iodepth_level"]["4"], 100.0);
    assert_eq!(v["jobs"][0]["iodepth_submit"]["4"], 100.0);
    assert_eq!(v["jobs"][0]["latency_depth"], 16);
}

#[test]
fn psync_file_sync_globals_disk() {
    let globals = [("ioengine", "psync"), ("bs", "4k"), ("size", "4m")];
    let mut j = job("f", &[]);
    j.options = globals
        .iter()
        .chain(&[("rw", "write"), ("fsync", "8")])
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    j.rw = Rw::Write;
    j.fsync = 8;
    let mut s = JobStats::new(0, LogCfg::default());
    let mut t = 0;
    for i in 0..1024u64 {
        let l = lat(i, 2_500, 4_000);
        s.add_io(Dir::Write, 4096, i * 4096, t, None, t + l);
        t += l + 100;
        if i % 8 == 7 && i < 1016 {
            let l = lat(i, 136_000, 40_000);
            s.add_sync(t, t + l);
            t += l;
        }
    }
    s.finish(0, 26 * MS, 2 * MS, 8 * MS, 384);
    let r = vec![report(j, s)];
    let disks = [DiskUtil {
        name: "vda".into(),
        ..DiskUtil::default()
    }];
    let m = meta(&globals);
    assert_json_like(&json_text(&m, &r, &disks), "psync-file.json");
    assert_text_like(&normal(&m, &r, &disks), "psync-file.txt");
    let v = json(&m, &r, &disks);
    assert_eq!(v["jobs"][0]["sync"]["total_ios"], 127);
    assert!(v
        .pointer("/jobs/0/sync/lat_ns/percentile/50.000000")
        .is_some());
    // Syncs count in the depth map but not in the IO total, as in fio.
    let d1 = v["jobs"][0]["iodepth_level"]["1"].as_f64().unwrap();
    assert!((d1 - 112.402344).abs() < 1e-3, "{d1}");
    assert_eq!(v["jobs"][0]["job options"]["fsync"], "8");
    assert_eq!(v["global options"]["bs"], "4k");
}

/// A log line's shape: its column count and which columns are fixed.
fn log_shape(line: &str) -> (usize, bool, bool) {
    let cols: Vec<&str> = line.split(", ").collect();
    assert!(
        cols.iter().all(|c| c.parse::<u64>().is_ok()),
        "not a log line: {line}"
    );
    let ddir_ok = matches!(cols[2], "0" | "1" | "2");
    let bs_zero = cols[3] == "0";
    (cols.len(), ddir_ok, bs_zero)
}

fn assert_log_like(mine: &Path, reference_name: &str) {
    let ours = std::fs::read_to_string(mine).unwrap();
    let theirs = reference(reference_name);
    assert_eq!(
        ours.is_empty(),
        theirs.is_empty(),
        "{}: emptiness differs from {reference_name}",
        mine.display()
    );
    let shapes: Vec<_> = theirs.lines().map(log_shape).collect();
    for l in ours.lines() {
        let s = log_shape(l);
        assert!(
            shapes.contains(&s),
            "{}: line {l:?} has no counterpart in {reference_name}",
            mine.display()
        );
    }
    // Time stamps do not go back (per direction).
    for d in ["0", "1"] {
        let ts: Vec<u64> = ours
            .lines()
            .filter(|l| l.split(", ").nth(2) == Some(d))
            .map(|l| l.split(", ").next().unwrap().parse().unwrap())
            .collect();
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{}", mine.display());
    }
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wbsim-fio-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn log_files_as_fio_writes_them() {
    let dir = scratch("logs");
    // Per IO: 200 IOPS for 1 s, sync engine.
    let mut j = null_job("l", Rw::Write, &[]);
    j.write_lat_log = Some("perio".into());
    j.write_bw_log = Some("perio".into());
    j.write_iops_log = Some("perio".into());
    let cfg = LogCfg {
        avg_msec: 0,
        lat: true,
        bw: true,
        iops: true,
        offset: false,
    };
    let mut s = JobStats::new(0, cfg);
    sync_stream(&mut s, Dir::Write, 4096, 200, 0, 5 * MS, (400, 8000));
    s.finish(0, 1000 * MS, 0, 0, 0);
    // Per-IO bandwidth samples replace the 500 ms ones, as in fio.
    assert_eq!(s.bw[1].samples, 200);
    let perio = report(j, s);

    // Averaged over 100 ms, both directions.
    let mut j = null_job("l", Rw::RandRw, &[]);
    j.write_lat_log = Some("avg".into());
    j.write_bw_log = Some("avg".into());
    j.write_iops_log = Some("avg".into());
    j.log_avg_msec = 100;
    let cfg = LogCfg {
        avg_msec: 100,
        lat: true,
        bw: true,
        iops: true,
        offset: false,
    };
    let mut s = JobStats::new(0, cfg);
    for i in 0..200u64 {
        let t = i * 5 * MS;
        s.add_io(Dir::Read, 4096, 0, t, None, t + lat(i, 400, 800));
        s.add_io(
            Dir::Write,
            4096,
            0,
            t + 2 * MS,
            None,
            t + 2 * MS + lat(i, 400, 800),
        );
    }
    s.finish(0, 1000 * MS, 0, 0, 0);
    assert_eq!(s.bw[0].samples, 9);
    let avg = report(j, s);

    // Async: slat too.
    let mut j = null_job("l", Rw::Write, &[]);
    j.write_lat_log = Some("async".into());
    j.iodepth = 4;
    let cfg = LogCfg {
        lat: true,
        ..LogCfg::default()
    };
    let mut s = JobStats::new(0, cfg);
    for i in 0..200u64 {
        let t = i * 5 * MS;
        s.add_io(Dir::Write, 4096, 0, t, Some(t + 1500), t + 4000);
    }
    s.finish(0, 1000 * MS, 0, 0, 0);
    let asy = report(j, s);

    let paths = write_logs(&dir, &[perio, avg, asy]).unwrap();
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "perio_lat.1.log",
            "perio_slat.1.log",
            "perio_clat.1.log",
            "perio_bw.1.log",
            "perio_iops.1.log",
            "avg_lat.2.log",
            "avg_slat.2.log",
            "avg_clat.2.log",
            "avg_bw.2.log",
            "avg_iops.2.log",
            "async_lat.3.log",
            "async_slat.3.log",
            "async_clat.3.log",
        ]
    );
    for (p, n) in paths.iter().zip(&names) {
        let reference_name = n.replace(".2.", ".1.").replace(".3.", ".1.");
        assert_log_like(p, &reference_name);
    }
    let lat = std::fs::read_to_string(dir.join("perio_lat.1.log")).unwrap();
    assert_eq!(lat.lines().count(), 200);
    assert!(lat.starts_with("0, "), "{lat}");
    let avg = std::fs::read_to_string(dir.join("avg_clat.2.log")).unwrap();
    assert_eq!(avg.lines().count(), 20);
    assert!(avg.lines().last().unwrap().starts_with("1000, "));
    let bw = std::fs::read_to_string(dir.join("avg_bw.2.log")).unwrap();
    assert!(
        bw.starts_with("100, 800, 0, 0, 0\n100, 800, 1, 0, 0\n"),
        "{bw}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn per_io_logs_stay_bounded_when_flushed() {
    let dir = scratch("flush");
    let mut j = null_job("x", Rw::Write, &[]);
    j.write_lat_log = Some(String::new());
    let cfg = LogCfg {
        lat: true,
        ..LogCfg::default()
    };
    let mut s = JobStats::new(0, cfg);
    let mut peak = 0;
    let n = 200_000u64;
    for i in 0..n {
        let t = i * 10 * US;
        s.add_io(Dir::Write, 4096, 0, t, None, t + lat(i, 1_000, 50_000));
        if s.log_pending() > LOG_FLUSH_BYTES {
            output::flush_logs(&dir, 1, &j, &mut s).unwrap();
        }
        peak = peak.max(s.heap_bytes());
    }
    s.finish(0, n * 10 * US, 0, 0, 0);
    let paths = write_logs(&dir, &[report(j, s)]).unwrap();
    // An empty write_lat_log value names the files after the job.
    assert!(paths[0].ends_with("x_lat.1.log"));
    let lat = std::fs::read_to_string(&paths[0]).unwrap();
    assert_eq!(lat.lines().count() as u64, n);
    // Histograms plus at most two flush thresholds of lines per log.
    assert!(peak < PLAT_NR * 8 + 3 * 2 * LOG_FLUSH_BYTES, "{peak}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A long run's memory: 10^8 IOs would take minutes in a debug build, so
/// this runs 2 * 10^6 and checks that nothing grew after the first 10^5;
/// the held memory is size_of::<JobStats>() plus one 14.5 KiB histogram
/// per direction in use.
#[test]
fn memory_fixed_over_a_long_stream() {
    let mut s = JobStats::new(0, LogCfg::default());
    let mut t = 0u64;
    let mut feed = |s: &mut JobStats, n: u64| {
        for i in 0..n {
            let l = lat(t, 1_000, 5 * MS);
            s.add_io(Dir::Write, 4096, 0, t, None, t + l);
            if i % 64 == 0 {
                s.add_sync(t, t + l);
            }
            t += 7 * US;
        }
    };
    feed(&mut s, 100_000);
    let heap = s.heap_bytes();
    feed(&mut s, 1_900_000);
    assert_eq!(s.heap_bytes(), heap);
    let total = std::mem::size_of::<JobStats>() + heap;
    eprintln!(
        "JobStats: {} bytes inline + {heap} heap = {total}",
        std::mem::size_of::<JobStats>()
    );
    assert!(total < 40 * 1024, "{total}");
    assert_eq!(s.bw[1].samples, (2_000_000 * 7 * US) / (500 * MS));
    let _ = LogKind::ALL;
}

/// fio's own per-IO log values, replayed, give fio's own statistics: the
/// running mean and deviation, the histogram's percentiles, and the per-IO
/// bandwidth samples (perio.json is the run that wrote perio_*.1.log).
#[test]
fn replaying_fios_log_gives_fios_numbers() {
    let col = |name: &str| -> Vec<u64> {
        reference(name)
            .lines()
            .map(|l| l.split(", ").nth(1).unwrap().parse().unwrap())
            .collect()
    };
    let (lats, clats) = (col("perio_lat.1.log"), col("perio_clat.1.log"));
    let cfg = LogCfg {
        bw: true,
        iops: true,
        ..LogCfg::default()
    };
    let mut s = JobStats::new(0, cfg);
    for (i, (&lat, &clat)) in lats.iter().zip(&clats).enumerate() {
        let done = i as u64 * 5 * MS + MS;
        s.add_io(Dir::Write, 4096, 0, done - lat, Some(done - clat), done);
    }
    let fio: serde_json::Value = serde_json::from_str(&reference("perio.json")).unwrap();
    let w = &fio["jobs"][0]["write"];
    let close = |a: f64, b: &serde_json::Value| {
        let b = b.as_f64().unwrap();
        assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{a} vs fio {b}");
    };
    for (stat, key) in [(&s.clat[1], "clat_ns"), (&s.lat[1], "lat_ns")] {
        let (min, max, mean, dev) = stat.calc().unwrap();
        assert_eq!(min, w[key]["min"].as_u64().unwrap(), "{key}");
        assert_eq!(max, w[key]["max"].as_u64().unwrap(), "{key}");
        assert_eq!(stat.samples, w[key]["N"].as_u64().unwrap());
        close(mean, &w[key]["mean"]);
        close(dev, &w[key]["stddev"]);
    }
    let ours =
        s.clat_hist[1].percentiles(s.clat[1].samples, &wbsim::workload::fio::stats::PERCENTILES);
    let theirs: Vec<u64> = wbsim::workload::fio::stats::PERCENTILES
        .iter()
        .map(|p| {
            w["clat_ns"]["percentile"][format!("{p:.6}")]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(ours, theirs);
    let (min, max, mean, dev) = s.bw[1].calc().unwrap();
    assert_eq!(min, w["bw_min"].as_u64().unwrap());
    assert_eq!(max, w["bw_max"].as_u64().unwrap());
    assert_eq!(s.bw[1].samples, w["bw_samples"].as_u64().unwrap());
    close(mean, &w["bw_mean"]);
    close(dev, &w["bw_dev"]);
    assert_eq!(s.iops[1].samples, w["iops_samples"].as_u64().unwrap());
}
