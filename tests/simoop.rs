//! The seed-001 pair (simoop, XFS inode reclaim sync-wait against
//! non-blocking), run briefly from the command line: simoop's own output,
//! the shrinker counters, and `wbsim compare` with simoop's rows.

use std::path::{Path, PathBuf};
use std::process::Command;

fn wbsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .args(args)
        .output()
        .expect("run wbsim")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wbsim-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The example, shrunk to a 2 GiB machine and 9 s: memory fills during
/// the warm-up and reclaim runs after it.
fn run_brief(which: &str, out: &Path) {
    let dirs: Vec<String> = (0..15).map(|i| format!("/hammer/xfs{i}")).collect();
    let args = format!(
        "jobs.simoop.args=-t 32 -m 38 -M 2 -C 4 -T 4 -D 2 -f 1 -n 2000 -R 1 -W 1 -i 2 -w 3 -r 5 {}",
        dirs.join(" ")
    );
    let scen = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("examples/seed-001/seed001-{which}.toml"));
    let o = wbsim(&[
        "run",
        scen.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-q",
        "--set",
        "machine.memory=2G",
        "--set",
        "run.duration=9s",
        "--set",
        "run.warmup=3s",
        "--set",
        &args,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn seed001_pair_runs_and_compares() {
    let d = tmpdir("seed001");
    let (a, b) = (d.join("before"), d.join("after"));
    run_brief("before", &a);
    run_brief("after", &b);
    for dir in [&a, &b] {
        let s = std::fs::read_to_string(dir.join("simoop.txt")).unwrap();
        assert!(s.starts_with("Warmup complete (3 seconds)\n"), "{s}");
        let fin = s.split("Final stats:\n").nth(1).expect("final stats");
        let lines: Vec<&str> = fin.lines().collect();
        assert_eq!(lines[0], "Run time: 5 seconds");
        assert!(lines[1].starts_with("Read latency (p50: "), "{fin}");
        assert!(lines[2].starts_with("Write latency (p50: "), "{fin}");
        assert!(lines[3].starts_with("Allocation latency (p50: "), "{fin}");
        assert!(lines[4].starts_with("work rate = "), "{fin}");
        assert!(lines[5].starts_with("alloc stall rate = "), "{fin}");
        // the du threads and the workers' lookups filled the slab caches
        let vm = std::fs::read_to_string(dir.join("vmstat")).unwrap();
        assert!(vm.contains("nr_slab_reclaimable "), "{vm}");
        let js = std::fs::read_to_string(dir.join("summary.json")).unwrap();
        assert!(js.contains("\"alloc_stall_rate\""), "{js}");
    }
    // memory pressure (PSI): reclaim stalls both (the shrinker's sleeps
    // make the difference in the full-size pair: seed001_memory_pressure)
    let mem = |dir: &Path, kind: &str| -> u64 {
        let js: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
        js["pressure"]["memory"][kind]["window_us"]
            .as_u64()
            .unwrap()
    };
    let (before, after) = (mem(&a, "some"), mem(&b, "some"));
    assert!(after > 0, "no memory pressure after");
    assert!(
        before >= after,
        "memory some: before {before} us, after {after} us"
    );
    assert!(mem(&a, "full") > 0 && mem(&b, "full") > 0);
    assert!(a.join("pressure.txt").exists());
    let o = wbsim(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert!(o.status.success());
    let t = String::from_utf8_lossy(&o.stdout);
    for row in [
        "simoop.alloc_p99_us",
        "simoop.read_p99_us",
        "simoop.work_rate",
        "simoop.alloc_stall_rate",
    ] {
        assert!(t.contains(row), "{row} missing from:\n{t}");
    }
    // reclaim.txt's samples, and `wbsim plot` draws them
    let r = std::fs::read_to_string(a.join("reclaim.txt")).unwrap();
    assert!(
        r.starts_with("# time_s nr_free_pages min low high allocstall"),
        "{r}"
    );
    assert!(r.lines().count() > 50, "{r}");
    let o = wbsim(&["plot", a.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for f in ["reclaim-free", "reclaim-stalls", "reclaim-shrinker"] {
        assert!(a.join(format!("{f}.png")).exists(), "{f}.png");
        assert!(a.join(format!("{f}.svg")).exists(), "{f}.svg");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// The pair scaled to a quarter (16 GiB, 4 CPUs, 32 workers, 60 s), large
/// enough for the caches to fill and the sync-wait shrinker to flush
/// inode clusters: kswapd and the direct reclaimers asleep on those
/// writes are memory pressure (PSI), which non-blocking reclaim removes.
#[test]
fn seed001_memory_pressure_is_higher_before() {
    let d = tmpdir("seed001-psi");
    let dirs: Vec<String> = (0..15).map(|i| format!("/hammer/xfs{i}")).collect();
    let args = format!(
        "jobs.simoop.args=-t 32 -m 300 -M 16 -C 2 -T 20 -D 2 -f 1 -n 2500 -R 1 -W 1 -i 10 -w 30 -r 31 {}",
        dirs.join(" ")
    );
    let mem = |which: &str| -> (u64, u64) {
        let out = d.join(which);
        let scen = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("examples/seed-001/seed001-{which}.toml"));
        let o = wbsim(&[
            "run",
            scen.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
            "--set",
            "machine.memory=16G",
            "--set",
            "machine.cpus=4",
            "--set",
            "run.duration=61s",
            "--set",
            "run.warmup=30s",
            "--set",
            &args,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let js: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        let m = &js["pressure"]["memory"];
        (
            m["some"]["window_us"].as_u64().unwrap(),
            m["full"]["window_us"].as_u64().unwrap(),
        )
    };
    let (before, after) = (mem("before"), mem("after"));
    // 2026-11-26: before some 6.0 s, full 3.0 s of the 31 s window; after
    // 0.71 s and 0.69 s
    assert!(after.0 > 0 && after.1 > 0, "after {after:?}");
    assert!(
        before.0 > 3 * after.0 && before.1 > 2 * after.1,
        "memory some/full us: before {before:?}, after {after:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `wbsim simoop` (the real program) refuses a flag simoop does not have,
/// and a directory that is not there, with exit code 2 and the reason,
/// before it writes anything.
#[test]
fn simoop_command_refuses_bad_arguments() {
    let d = tmpdir("simoop-cli");
    let ds = d.to_str().unwrap();
    let o = wbsim(&["simoop", "-t", "2", "-x", "3", ds]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("simoop flag `-x`"), "{err}");
    assert!(err.contains("usage: wbsim simoop"), "{err}");
    let o = wbsim(&["simoop", "-t", "2", "-R", "0", ds]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("-R and -W must be at least 1"), "{err}");
    let missing = d.join("missing");
    let o = wbsim(&["simoop", "-t", "2", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("missing") && err.contains("No such file"),
        "{err}"
    );
    let o = wbsim(&["simoop", "--frobnicate", ds]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown option `--frobnicate`"));
    // nothing was laid out
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&d);
}
