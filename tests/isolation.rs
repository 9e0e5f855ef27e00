//! Seed 003's isolation experiment (examples/seed-003/isolation): CFQ with
//! its async queues in the root group fails the blkcgroup test's tolerance,
//! CFQ with per-cgroup async queues and request lists passes it, and so
//! does today's cgroup writeback under BFQ and under io.cost. Runs the binary on experiment 1
//! (weights 900:100, writers 2:1), shortened.

use std::process::Command;

fn run(case: &str) -> (String, String) {
    run_exp(1, case, "15s")
}

/// Runs experiment `exp`'s `case` for `duration`: its isolation.txt and
/// the root's blkio.time.
fn run_exp(exp: u32, case: &str, duration: &str) -> (String, String) {
    let ex = format!(
        "{}/examples/seed-003/isolation/exp{exp}-{case}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = format!("{}/isolation-{exp}-{case}", env!("CARGO_TARGET_TMPDIR"));
    let dur = format!("run.duration={duration}");
    let o = Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .args(["run", &ex, "--set", &dur, "--out", &out])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = std::fs::read_to_string(format!("{out}/isolation.txt")).unwrap();
    let root_time = std::fs::read_to_string(format!("{out}/cgroup/blkio.time")).unwrap_or_default();
    (report, root_time)
}

/// The DTFs and the error of experiment 1's report.
fn parse(report: &str) -> (Vec<u64>, u64, bool) {
    parse_exp(1, report)
}

/// The DTFs and the error of experiment `exp`'s report.
fn parse_exp(exp: u32, report: &str) -> (Vec<u64>, u64, bool) {
    let mut lines = report.lines();
    let l1 = lines.next().unwrap();
    let l2 = lines.next().unwrap();
    let head = format!("experiment {exp} achieved DTFs: ");
    assert!(l1.starts_with(&head), "{l1}");
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

/// Experiment 4 (weights 650:100:100:150, writers 8:2:5:4) after the
/// patches: the heavy cgroup gets near its share (the seed: 616, 109, 109,
/// 163, error 34). With 8 requests left in the drive at each slice's end
/// (`quantum` rather than `cfq_may_dispatch`'s `quantum / 2` near the end)
/// the next group waited twice as long behind them; every light group's
/// turn gave the group before it that drain, the heavy group's many turns
/// in a row did not, and it fell to 594 (error 56).
#[test]
fn heavy_cgroup_gets_its_share_after() {
    let (after, _) = run_exp(4, "after", "15s");
    let (dtf, err, passed) = parse_exp(4, &after);
    assert!(passed && err <= 50, "{after}");
    assert!(dtf[0] >= 600, "{after}");
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
