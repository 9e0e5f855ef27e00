//! Pressure stall information (src/kernel/psi.rs) in whole runs:
//! balance_dirty_pages' pauses are IO pressure, reclaim is memory
//! pressure, and `pressure.txt` prints what /proc/pressure prints.

use wbsim::kernel::Kernel;
use wbsim::metrics::pressure::{summarize, PressureSummary};
use wbsim::scenario::Scenario;
use wbsim::trace::Tracer;

/// Run `sc` to its end, checking the model's invariants (the PSI counts
/// among them) every `every` events and at the end; `what` names the run
/// in a failure.
fn kernel_checked(sc: Scenario, every: u64, what: &str) -> Kernel {
    let mut k = Kernel::new(sc, Tracer::disabled());
    let mut n = 0u64;
    while k.step() {
        n += 1;
        if n.is_multiple_of(every) {
            if let Err(e) = k.check_invariants() {
                panic!("{what}: after event {n} at {} ns: {e}", k.now());
            }
        }
    }
    k.check_invariants()
        .unwrap_or_else(|e| panic!("{what} at the end: {e}"));
    k
}

/// Run `sc` to its end, checking the invariants every 101 events; returns
/// pressure.txt's text.
fn run_checked(sc: Scenario) -> String {
    let mut k = kernel_checked(sc, 101, "run");
    let text = std::mem::take(&mut k.psi.text);
    // summary.json's figures, kept as the run goes, are those read back
    // from the text (as live mode reads them)
    assert_eq!(
        k.psi.readings.summary(),
        summarize(&text, k.sc.run.warmup),
        "the readings and the text disagree"
    );
    text
}

fn summary(text: &str, warmup_s: u64) -> PressureSummary {
    summarize(text, warmup_s * 1_000_000_000).expect("pressure readings")
}

#[test]
fn dd_over_its_dirty_limit_stalls_on_io_not_on_memory() {
    // the built-in scenario: 10 dd writers against a 50 MiB/s device,
    // paused by balance_dirty_pages (io_schedule_timeout) nearly all along
    let sc = Scenario::builtin(&["run.duration=12s".into(), "run.warmup=4s".into()]).unwrap();
    let text = run_checked(sc);
    // every 100 ms and at the end: four lines each, the kernel's form
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4 * 121, "{}", &text[..400.min(text.len())]);
    assert_eq!(
        lines[0],
        "0.000000 memory some avg10=0.00 avg60=0.00 avg300=0.00 total=0"
    );
    for (i, l) in lines.iter().enumerate() {
        let f: Vec<&str> = l.split(' ').collect();
        assert_eq!(f.len(), 7, "{l}");
        assert_eq!(f[1], ["memory", "io"][i / 2 % 2], "{l}");
        assert_eq!(f[2], ["some", "full"][i % 2], "{l}");
        for (j, key) in ["avg10=", "avg60=", "avg300=", "total="].iter().enumerate() {
            assert!(f[3 + j].starts_with(key), "{l}");
        }
        // two decimals, as LOAD_INT.LOAD_FRAC print
        assert_eq!(f[3].split('.').nth(1).map(str::len), Some(2), "{l}");
    }
    let s = summary(&text, 4);
    assert_eq!(s.memory.some.run_us, 0, "no reclaim on a 16 GiB machine");
    let io = s.io;
    assert!(io.some.window_pct > 50.0, "{io:?}");
    assert!(io.full.window_us > 0, "{io:?}");
    assert!(io.full.window_us <= io.some.window_us, "{io:?}");
    assert!(io.some.window_pct <= 100.0, "{io:?}");
    // 12 s: the averages were updated five times (every 2.004 s)
    assert!(
        io.some.avg10 > 10.0 && io.some.avg60 < io.some.avg10,
        "{io:?}"
    );
}

#[test]
fn without_a_dirty_limit_in_reach_dd_does_not_stall() {
    // a fast device and a high limit: the writers never pause
    let sc = Scenario::builtin(&[
        "run.duration=3s".into(),
        "run.warmup=1s".into(),
        "jobs.dd.numjobs=1".into(),
        "devices.loop0.write_bps=4GiB/s".into(),
        "vm.dirty_bytes=2G".into(),
        "vm.dirty_background_bytes=1G".into(),
    ])
    .unwrap();
    let s = summary(&run_checked(sc), 1);
    assert_eq!(s.io.some.run_us, 0, "{s:?}");
    assert_eq!(s.memory.some.run_us, 0, "{s:?}");
}

#[test]
fn reclaim_is_memory_pressure_and_kswapd_on_its_cpu_is_full() {
    // a 1 GiB machine whose page cache fills: kswapd reclaims (in a
    // memstall from balance_pgdat's start to its end), the writers stall
    // in direct reclaim when it cannot keep up
    let toml = r#"
        [machine]
        memory = "1G"
        cpus = 2
        [devices.loop0]
        type = "throttled"
        write_bps = "400MiB/s"
        [filesystems.f]
        device = "loop0"
        [jobs.dd]
        numjobs = 2
        bs = "1M"
        [run]
        duration = "10s"
        warmup = "0s"
    "#;
    let sc = Scenario::load_str(toml, "reclaim.toml", "reclaim", &[]).unwrap();
    let text = run_checked(sc);
    let s = summary(&text, 0);
    let m = s.memory;
    assert!(m.some.run_us > 0, "{m:?}");
    // kswapd reclaiming on a CPU is memory FULL there (psi_group_change's
    // rule for a current task in_memstall)
    assert!(m.full.run_us > 0, "{m:?}");
    assert!(m.full.run_us <= m.some.run_us, "{m:?}");
    // totals never fall from one reading to the next
    let mut last = std::collections::BTreeMap::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        let total: u64 = f[6].trim_start_matches("total=").parse().unwrap();
        let prev = last.insert((f[1], f[2]), total).unwrap_or(0);
        assert!(total >= prev, "{l}");
    }
}

/// Each cgroup's `io.pressure` counts its own tasks only: A's writer,
/// held by io.max at 10 MiB/s, stalls on IO through the run; B's, which
/// writes 1 MiB and exits, hardly at all; the root's file is
/// /proc/pressure/io's. The invariants check every cgroup's per-CPU
/// counts against its tasks as the run goes.
#[test]
fn a_cgroups_io_pressure_is_its_own_tasks_stalls() {
    let src = std::fs::read_to_string("examples/cgroup/iomax-10-25.toml").expect("example");
    let sets = ["jobs.b.size=1M".to_string(), "run.duration=12s".to_string()];
    let sc = Scenario::load_str(&src, "iomax-10-25.toml", "t", &sets).expect("scenario");
    let mut k = kernel_checked(sc, 53, "iomax-10-25");
    let files = k.cgroup_files();
    let file = |name: &str| {
        let (_, b) = files
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no {name}"));
        String::from_utf8(b.clone()).unwrap()
    };
    let total = |text: &str, line: &str| -> u64 {
        let l = text.lines().find(|l| l.starts_with(line)).expect(line);
        l.rsplit("total=").next().unwrap().parse().unwrap()
    };
    let (a, b, root) = (
        file("cgroup/A/io.pressure"),
        file("cgroup/B/io.pressure"),
        file("cgroup/io.pressure"),
    );
    // A stalls for most of 12 s, B for well under a second
    assert!(total(&a, "some") > 8_000_000, "{a}");
    assert!(total(&b, "some") < 1_000_000, "{b}");
    // the system's some covers A's; the root's file is the system's
    assert!(
        total(&root, "some") >= total(&a, "some") - 10_000,
        "{root} {a}"
    );
    let last = k
        .psi
        .text
        .lines()
        .rev()
        .find(|l| l.contains(" io some "))
        .unwrap();
    assert!(
        last.ends_with(root.lines().next().unwrap()),
        "{last} / {root}"
    );
    assert!(file("cgroup/A/memory.pressure").starts_with("some avg10=0.00"));
}

/// The cgroups' PSI counts follow their tasks through readers under BFQ,
/// io.cost and the seed's isolation experiment
/// (wakeups, migrations between the CPUs, exits).
#[test]
fn every_cgroups_psi_counts_follow_its_tasks() {
    for ex in [
        "examples/cgroup/bfq-readers.toml",
        "examples/cgroup/iocost-weights.toml",
        "examples/seed-003/isolation/exp3-after.toml",
        // B re-dirties pages of A's file still under writeback
        "examples/cgroup/foreign-switch.toml",
    ] {
        let src = std::fs::read_to_string(ex).unwrap_or_else(|e| panic!("{ex}: {e}"));
        let sets = ["run.duration=6s".to_string(), "run.warmup=1s".to_string()];
        let sc = Scenario::load_str(&src, ex, "t", &sets).expect("scenario");
        assert!(!sc.cgroups.is_empty(), "{ex} has cgroups");
        kernel_checked(sc, 37, ex);
    }
}
