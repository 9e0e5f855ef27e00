//! `wbsim fio` and fio jobs in scenarios, end to end: seed 003's job files
//! and seed 004's command line run and give fio's JSON; the same seed gives
//! the same bytes; bad and unsupported options are refused with exit code 2
//! and the file and line.

use std::path::PathBuf;
use std::process::{Command, Output};

fn wbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run wbsim")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wbsim-fio-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "wbsim failed ({:?}): {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

/// `jq PATH` on fio's JSON.
fn at<'a>(v: &'a serde_json::Value, pointer: &str) -> &'a serde_json::Value {
    v.pointer(pointer)
        .unwrap_or_else(|| panic!("no {pointer} in fio's JSON"))
}

#[test]
fn seed_003s_job_files_run_and_give_fios_json() {
    let out = ok(&wbsim(&[
        "fio",
        "examples/seed-003/readers.fio",
        "examples/seed-003/writers.fio",
        "--scenario",
        "examples/seed-003/seed003-read-latency.toml",
        "--output-format=json",
        // the jobs say runtime=60; two seconds of them here
        "--set",
        "run.duration=2s",
    ]));
    let v: serde_json::Value = serde_json::from_str(&out).expect("fio's JSON");
    assert_eq!(at(&v, "/fio version"), "fio-3.33");
    let jobs = at(&v, "/jobs").as_array().unwrap();
    // group_reporting: 13 readers in one entry, 3 writers in another
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!(at(&v, "/jobs/0/jobname"), "iostest-read");
    assert_eq!(at(&v, "/jobs/1/jobname"), "iostest-write");
    let reads = at(&v, "/jobs/0/read/total_ios").as_u64().unwrap();
    assert!(reads > 0, "the readers read nothing");
    // `jq '.jobs[1].write.clat_ns.percentile["99.000000"]'`
    let p99 = at(&v, "/jobs/1/write/clat_ns/percentile/99.000000");
    assert!(p99.as_u64().unwrap() > 0, "{p99}");
    // random 4 KiB reads from a rotating disk take milliseconds each
    let read_p50 = at(&v, "/jobs/0/read/clat_ns/percentile/50.000000")
        .as_u64()
        .unwrap();
    assert!(read_p50 > 1_000_000, "read clat p50 {read_p50} ns");
    assert_eq!(at(&v, "/disk_util/0/name"), "sda");
}

#[test]
fn seed_004s_command_line_runs_with_its_logs() {
    let dir = tmpdir("seed004");
    let d = dir.to_str().unwrap();
    let args = [
        "fio",
        "--scenario",
        "examples/seed-004/seed004-fio.toml",
        "--name=random-writers",
        "--filename=/dev/bcache0",
        "--ioengine=libaio",
        "--iodepth=1",
        "--rw=randrw",
        "--blocksize=64k,8k",
        "--direct=1",
        "--numjobs=1",
        "--write_lat_log=mix",
        "--log_avg_msec=10",
        "--runtime=60",
        "--output-format=json",
        "--out",
        d,
    ];
    let out = ok(&wbsim(&args));
    let v: serde_json::Value = serde_json::from_str(&out).expect("fio's JSON");
    let r = at(&v, "/jobs/0/read/io_bytes").as_u64().unwrap();
    let w = at(&v, "/jobs/0/write/io_bytes").as_u64().unwrap();
    let (rios, wios) = (
        at(&v, "/jobs/0/read/total_ios").as_u64().unwrap(),
        at(&v, "/jobs/0/write/total_ios").as_u64().unwrap(),
    );
    // bs=64k,8k: 64 KiB reads, 8 KiB writes, about half and half
    assert_eq!(r, rios * 65536);
    assert_eq!(w, wios * 8192);
    assert!(
        rios.abs_diff(wios) * 5 < rios + wios,
        "{rios} reads, {wios} writes"
    );
    // about 60 s of runtime (fio's ms)
    let rt = at(&v, "/jobs/0/read/runtime").as_u64().unwrap();
    assert!((59_000..=61_000).contains(&rt), "runtime {rt} ms");
    // the run's outputs, and fio's logs with their names and line format
    for f in ["fio.json", "fio.txt", "summary.json", "trace.txt"] {
        assert!(dir.join(f).exists(), "{f} missing");
    }
    // the trace was streamed there: its header counts the lines after
    // it, and the lines' file the run wrote as it went is gone
    let trace = std::fs::read_to_string(dir.join("trace.txt")).unwrap();
    let n = trace.lines().filter(|l| !l.starts_with('#')).count();
    assert!(
        trace.contains(&format!("entries-in-buffer/entries-written: {n}/{n} ")),
        "{}",
        &trace[..300]
    );
    assert!(!dir.join(".trace.txt.partial").exists());
    let log = std::fs::read_to_string(dir.join("mix_lat.1.log")).unwrap();
    let first = log.lines().next().expect("a log line");
    let cols: Vec<&str> = first.split(", ").collect();
    assert_eq!(cols.len(), 5, "{first}");
    assert!(cols.iter().all(|c| c.parse::<u64>().is_ok()), "{first}");
    // the same seed, the same bytes
    let again = ok(&wbsim(&args));
    assert_eq!(out, again);
}

#[test]
fn a_scenarios_fio_job_writes_fio_json_beside_the_summary() {
    let dir = tmpdir("run");
    let o = wbsim(&[
        "run",
        "examples/seed-004/seed004-fio.toml",
        "--set",
        "run.duration=3s",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let text = ok(&o);
    assert!(text.contains("fio.json"), "{text}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("fio.json")).unwrap()).unwrap();
    assert!(at(&v, "/jobs/0/read/total_ios").as_u64().unwrap() > 0);
    let normal = std::fs::read_to_string(dir.join("fio.txt")).unwrap();
    assert!(
        normal.contains("Run status group 0 (all jobs):"),
        "{normal}"
    );
    // the job's write_lat_log lands in the output directory
    assert!(dir.join("mix_lat.1.log").exists());
}

#[test]
fn bad_and_unsupported_options_are_refused_with_the_line() {
    let dir = tmpdir("bad");
    let bad = dir.join("bad.fio");
    std::fs::write(&bad, "[global]\nbs=4k\n\n[w]\nrw=write\nfrobnicate=1\n").unwrap();
    let o = wbsim(&["fio", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.fio:6"), "{err}");
    assert!(err.contains("frobnicate"), "{err}");
    let un = dir.join("un.fio");
    std::fs::write(&un, "[w]\nrw=write\nioengine=rbd\n").unwrap();
    let o = wbsim(&["fio", un.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("ioengine=rbd"), "{err}");
    assert!(err.contains("supported: sync, psync"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // a device the scenario does not have
    let o = wbsim(&["fio", "--name=x", "--filename=/dev/nvme9n1", "--rw=read"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/dev/nvme9n1"));
}

#[test]
fn clones_mixing_sequential_reads_and_writes_on_one_file_run() {
    // fio's examples/fio-seq-RW.fio, shortened: four clones read and write
    // one shared file sequentially; a read at page 0 with no cached history
    // once underflowed the context readahead's walk
    let out = ok(&wbsim(&[
        "fio",
        "--name=file1",
        "--filename=f",
        "--rw=rw",
        "--rwmixread=60",
        "--bs=256k",
        "--numjobs=4",
        "--time_based",
        "--runtime=2",
        "--size=1g",
        "--ioengine=libaio",
        "--iodepth=16",
    ]));
    assert!(out.contains("READ: bw="), "{out}");
    assert!(out.contains("WRITE: bw="), "{out}");
}

/// Every job file in `$WBSIM_FIO_CORPUS` (for example fio's own
/// `examples/` directory) either runs, for a simulated second, or is
/// refused with exit code 2 and one line naming why. Skipped when the
/// variable is unset.
#[test]
fn every_corpus_job_file_runs_or_is_refused_in_one_line() {
    let Some(dir) = std::env::var_os("WBSIM_FIO_CORPUS") else {
        eprintln!("skipping: set WBSIM_FIO_CORPUS to a directory of fio job files");
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("WBSIM_FIO_CORPUS is a directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .fio files in {dir:?}");
    let (mut ran, mut refused) = (0, 0);
    let cwd = tmpdir("corpus");
    for f in &files {
        let o = Command::new(env!("CARGO_BIN_EXE_wbsim"))
            .args(["fio", f.to_str().unwrap(), "--set", "run.duration=1s"])
            .current_dir(&cwd)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        match o.status.code() {
            Some(0) => ran += 1,
            Some(2) => {
                assert_eq!(err.trim().lines().count(), 1, "{f:?}: {err}");
                refused += 1;
            }
            c => panic!("{f:?}: exit {c:?}: {err}"),
        }
    }
    eprintln!("{} files: {ran} ran, {refused} refused", files.len());
}
