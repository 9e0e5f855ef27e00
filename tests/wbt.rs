//! wbt (block/blk_wbt.rs) on scenario devices: the scaling sequence the
//! host kernel shows, the in-flight limits by writeback kind, and its
//! defaults and knob.

use wbsim::output::simulate;
use wbsim::scenario::Scenario;
use wbsim::trace::{parse, Record};

fn run(src: &str, sets: &[&str]) -> Vec<Record> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::load_str(src, "<test>", "t", &sets).expect("scenario");
    let r = simulate(&sc, true, |_, _| {});
    parse(&r.trace_text)
}

fn wbt(records: &[Record], event: &str) -> Vec<Record> {
    records
        .iter()
        .filter(|r| r.event == event)
        .cloned()
        .collect()
}

const LOOP: &str = r#"
[devices.loop0]
type = "throttled"
write_bps = "50MiB/s"
[filesystems.f]
device = "loop0"
[jobs.dd]
bs = "1M"
numjobs = 2
[run]
duration = "2s"
warmup = "1s"
[trace]
events = ["wbt_step", "wbt_timer"]
"#;

/// The host kernel (6.18) on a loop device (128 tags, wbt_lat_usec 2000)
/// under a buffered dd, from its trace:
///
/// ```text
/// <idle>-0 [000] ..s1. 9760.652209: wbt_timer: 7:0: status=3, step=0, inflight=10
/// <idle>-0 [000] .Ns1. 9760.652216: wbt_step: 7:0: scale up: step=-1, window=100000us, background=8, normal=16, max=31
/// <idle>-0 [000] .Ns1. 9760.756247: wbt_timer: 7:0: status=3, step=-1, inflight=7
/// <idle>-0 [000] .Ns1. 9760.756253: wbt_step: 7:0: scale up: step=-2, window=100000us, background=16, normal=31, max=61
///     dd-16415 [000] ..s.. 9760.864192: wbt_timer: 7:0: status=3, step=-2, inflight=0
///     dd-16415 [000] ..s.. 9760.864195: wbt_step: 7:0: scale up: step=-3, window=100000us, background=24, normal=48, max=96
/// ```
///
/// Writes only: every window scales up (LAT_UNKNOWN_WRITES = 3) until 3/4
/// of the queue depth; windows are 100 ms = 25 jiffies plus the timer
/// wheel's one-jiffy round-up, 104 ms apart.
#[test]
fn loop_device_scales_up_like_the_host_kernel() {
    let r = run(LOOP, &[]);
    let steps = wbt(&r, "wbt_step");
    let got: Vec<(i64, i64, i64, i64)> = steps
        .iter()
        .map(|s| {
            let f = |k| s.get(k).expect(k);
            (f("step"), f("background"), f("normal"), f("max"))
        })
        .collect();
    assert_eq!(
        got,
        vec![(-1, 8, 16, 31), (-2, 16, 31, 61), (-3, 24, 48, 96)],
        "one scale-up per window up to the ceiling, then nothing"
    );
    assert!(steps.iter().all(|s| s.body.contains(": scale up: ")
        && s.get("window") == Some(100_000)
        && s.bdi.as_deref() == Some("7:0")));
    let timers = wbt(&r, "wbt_timer");
    assert!(timers.len() >= 15, "{} windows in 2 s", timers.len());
    for w in timers.windows(2) {
        assert_eq!(w[1].ts - w[0].ts, 104_000_000, "window spacing");
    }
    assert!(timers.iter().all(|t| t.get("status") == Some(3)));
    // the same line format as the kernel's, from the idle task in softirq
    let line = r#"          <idle>-0       [000] ..s1.     0.268000: wbt_timer: 7:0: status=3, step=0, inflight=0"#;
    let k = wbsim::trace::parse_line(line).expect("parses");
    assert_eq!(
        (k.comm.as_str(), k.pid, k.get("inflight")),
        ("<idle>", 0, Some(0))
    );
}

const HDD: &str = r#"
[machine]
memory = "8G"
cpus = 4
[vm]
dirty_bytes = "200M"
dirty_background_bytes = "100M"
[devices.sda]
type = "hdd"
[filesystems.scratch]
type = "xfs"
device = "sda"
[jobs.dd]
bs = "1M"
numjobs = 4
[run]
duration = "6s"
warmup = "1s"
[trace]
events = ["wbt_step", "wbt_timer"]
"#;

/// An hdd (queue depth 32: wbt's max_depth scales from 16 to 24). With
/// dirtiers sleeping in balance_dirty_pages the flusher may have max_depth
/// (24) requests in flight; with none throttled (one dd writes 1 GiB under
/// a 4 GiB limit and exits), background writeback gets wb_background (6)
/// once the first second after setup (wb_init's dirty_sleep) has passed.
#[test]
fn hdd_in_flight_limits_follow_the_dirtiers() {
    let inflight = |r: &[Record], after: u64| -> Vec<i64> {
        wbt(r, "wbt_timer")
            .iter()
            .filter(|t| t.ts > after)
            .map(|t| t.get("inflight").unwrap())
            .collect()
    };
    let r = run(HDD, &[]);
    let steps = wbt(&r, "wbt_step");
    assert_eq!(steps.len(), 1);
    assert_eq!(steps[0].get("max"), Some(24));
    let f = inflight(&r, 0);
    assert_eq!(f.iter().max(), Some(&24), "throttled dirtiers: max_depth");

    let r = run(
        HDD,
        &["vm.dirty_bytes=4G", "jobs.dd.numjobs=1", "jobs.dd.size=1G"],
    );
    let f = inflight(&r, 1_200_000_000);
    assert!(f.len() > 20);
    assert_eq!(
        f.iter().max(),
        Some(&6),
        "background writeback: wb_background"
    );
}

/// wbt is off with `queue.wbt_lat_usec = 0` and, by default, for the older
/// throttling policies (wbt arrived in 4.10); md devices have none and
/// refuse the knob with the file and line.
#[test]
fn wbt_defaults_and_knob() {
    assert!(!run(LOOP, &[]).iter().all(|r| !r.event.starts_with("wbt_")));
    for sets in [
        &["devices.loop0.queue.wbt_lat_usec=0"][..],
        &["run.dirty_throttle=legacy"][..],
        &["run.dirty_throttle=io-less-3.2"][..],
    ] {
        let r = run(LOOP, sets);
        assert!(r.iter().all(|r| !r.event.starts_with("wbt_")), "{sets:?}");
    }
    let md = "[devices.a]\ntype = \"ssd\"\n[devices.b]\ntype = \"ssd\"\n[devices.md0]\ntype = \"raid0\"\nmembers = [\"a\", \"b\"]\nqueue.wbt_lat_usec = 2000\n[filesystems.f]\ndevice = \"md0\"\n[jobs.dd]\nbs = \"1M\"\n";
    let e = Scenario::load_str(md, "<test>", "t", &[])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("<test>:8: "), "{e}");
    assert!(e.contains("no wbt"), "{e}");
}
