//! Seed 003's isolation experiment (examples/seed-003/isolation): CFQ with
//! its async queues in the root group fails the blkcgroup test's tolerance,
//! CFQ with per-cgroup async queues and request lists passes it, and so
//! does today's cgroup writeback under BFQ and under io.cost. Runs the binary on experiment 1
//! (weights 900:100, writers 2:1), shortened.

use std::process::Command;

fn run(case: &str) -> (String, String) {
    let ex = format!(
        "{}/examples/seed-003/isolation/exp1-{case}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = format!("{}/isolation-{case}", env!("CARGO_TARGET_TMPDIR"));
    let o = Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .args(["run", &ex, "--set", "run.duration=15s", "--out", &out])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(format!("{out}/isolation.txt")).unwrap();
    let root_time = std::fs::read_to_string(format!("{out}/cgroup/blkio.time")).unwrap_or_default();
    (report, root_time)
}

/// The DTFs and the error of a report.
fn parse(report: &str) -> (Vec<u64>, u64, bool) {
    let mut lines = report.lines();
    let l1 = lines.next().unwrap();
    let l2 = lines.next().unwrap();
    assert!(l1.starts_with("experiment 1 achieved DTFs: "), "{l1}");
    let dtf: Vec<u64> = l1
        .rsplit(": ")
        .next()
        .unwrap()
        .split(", ")
        .map(|x| x.parse().unwrap())
        .collect();
    let err: u64 = l2
        .split("max observed error is ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(l2.ends_with("allowed is 150"), "{l2}");
    (dtf, err, l2.contains(" PASSED: "))
}

#[test]
fn cfq_root_async_fails_and_per_cgroup_async_passes_and_bfq_passes() {
    let (before, root) = run("before");
    let (dtf, err, passed) = parse(&before);
    // the writers share the disk 2:1 as the dirtiers do, whatever 900:100 asks
    assert!(!passed && err > 150, "{before}");
    assert!(dtf[0] > 550 && dtf[0] < 750, "{before}");
    // every async queue is the root's: the root has the disk time
    let ms: u64 = root.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(ms > 10_000, "root blkio.time {root}");

    let (after, _) = run("after");
    let (dtf, err, passed) = parse(&after);
    assert!(passed && err <= 50, "{after}");
    assert!(dtf[0] > 840, "{after}");

    let (bfq, _) = run("bfq");
    let (_, err, passed) = parse(&bfq);
    assert!(passed && err <= 50, "{bfq}");

    // io.cost at a fixed vrate, by io.weight
    let (iocost, _) = run("iocost");
    let (_, err, passed) = parse(&iocost);
    assert!(passed && err <= 50, "{iocost}");
}

/// The readers' (IOPS, clat p99 ns) in a read-latency case.
fn readers(case: &str) -> (f64, f64) {
    let ex = format!(
        "{}/examples/seed-003/read-latency/{case}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = format!("{}/read-latency-{case}", env!("CARGO_TARGET_TMPDIR"));
    let o = Command::new(env!("CARGO_BIN_EXE_wbsim"))
        // 16 s with writeback from 5 s (the seed's 60 s with the 30 s
        // expiry, shortened: the same ordering). The writers rewrite
        // their files in the page cache, 4 KiB at a time, millions of
        // writes a second: the run's cost is theirs.
        .args([
            "run",
            &ex,
            "--out",
            &out,
            "-q",
            "--set",
            "run.duration=16s",
            "--set",
            "vm.dirty_expire_centisecs=500",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(format!("{out}/fio.json")).unwrap()).unwrap();
    let r = &v["jobs"][0]["read"];
    (
        r["iops"].as_f64().unwrap(),
        r["clat_ns"]["percentile"]["99.000000"].as_f64().unwrap(),
    )
}

/// Seed 003's read-latency experiment: with per-cgroup async queues the
/// readers (weight 900) read more beside the writers (weight 100), and
/// their tail latency is worse ("Read latencies are a bit worse"); io.cost
/// gives them more still, with a shorter tail than CFQ's (BFQ too:
/// docs/validation.md; left out here for time).
#[test]
fn readers_read_more_after_with_a_longer_tail() {
    let (b_iops, b_p99) = readers("before");
    let (a_iops, a_p99) = readers("after");
    assert!(a_iops > b_iops * 1.1, "IOPS before {b_iops} after {a_iops}");
    assert!(a_p99 > b_p99, "p99 before {b_p99} after {a_p99}");
    for case in ["bfq", "iocost"] {
        let (iops, p99) = readers(case);
        assert!(
            iops > a_iops * 1.4 && p99 < a_p99,
            "{case}: {iops} IOPS, p99 {p99}"
        );
    }
}
