//! Block drivers as scenario devices (src/drivers/): blk-throttle is a
//! policy on any queue (`devices.NAME.throttle.write_bps`), `throttled` is
//! a loop device plus that policy, and bad device input is a scenario
//! error naming the driver's keys.

use wbsim::kernel::Kernel;
use wbsim::metrics::{DevSummary, Summary};
use wbsim::output::{simulate, RunResult};
use wbsim::scenario::Scenario;

fn load(src: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scenario::load_str(src, "<test>", "t", &sets).expect("scenario")
}

fn run(src: &str, sets: &[&str]) -> Summary {
    simulate(&load(src, sets), false, |_, _| {}).summary
}

fn dev<'a>(s: &'a Summary, name: &str) -> &'a DevSummary {
    s.devices.iter().find(|d| d.name == name).expect("device")
}

/// The scenario error `src` gives (it must give one).
fn error(src: &str) -> String {
    match Scenario::load_str(src, "<test>", "t", &[]) {
        Ok(_) => panic!("accepted:\n{src}"),
        Err(e) => e.to_string(),
    }
}

/// 4 dd writers (bs=1M) on device `sda` of type `ty`, 20 s, measured over
/// the last 12 s.
fn four_dd(ty: &str) -> String {
    format!(
        r#"
[machine]
memory = "4G"
cpus = 2
[vm]
dirty_bytes = "200M"
dirty_background_bytes = "100M"
[devices.sda]
type = "{ty}"
[filesystems.scratch]
device = "sda"
[jobs.dd]
numjobs = 4
bs = "1M"
[run]
duration = "20s"
warmup = "8s"
"#
    )
}

/// A 20 MiB/s write cap on a disk, an ssd and an hdd holds within a few
/// percent over the window, while the same device uncapped writes several
/// times faster; the rule's dispatch work runs in a kworker of its own, as
/// on a loop device.
#[test]
fn a_write_cap_holds_on_a_disk_an_ssd_and_an_hdd() {
    for ty in ["disk", "ssd", "hdd"] {
        let src = four_dd(ty);
        let free = dev(&run(&src, &[]), "sda").write_mib_s;
        let capped = dev(
            &run(&src, &["devices.sda.throttle.write_bps=20MiB/s"]),
            "sda",
        )
        .write_mib_s;
        eprintln!("{ty}: uncapped {free:.1} MiB/s, capped at 20: {capped:.2} MiB/s");
        assert!(
            (capped - 20.0).abs() <= 20.0 * 0.03,
            "{ty}: {capped:.2} MiB/s under a 20 MiB/s cap"
        );
        assert!(free > 3.0 * 20.0, "{ty}: uncapped only {free:.1} MiB/s");
        // the dispatcher: created with the device, before the flushers
        let sc = load(&src, &["devices.sda.throttle.write_bps=20MiB/s"]);
        let k = Kernel::new(sc, wbsim::trace::Tracer::disabled());
        assert_eq!(k.tasks[0].comm, "kworker/0:1H", "{ty}");
        let k = Kernel::new(load(&src, &[]), wbsim::trace::Tracer::disabled());
        assert!(
            k.tasks.iter().all(|t| !t.comm.ends_with(":1H")),
            "{ty}: no rule, no dispatcher"
        );
    }
}

/// Every output of a run.
fn outputs(r: &RunResult) -> (String, String, String, String) {
    (
        r.trace_text.clone(),
        serde_json::to_string_pretty(&r.summary).unwrap(),
        r.vmstat.clone(),
        r.fs_mark.clone(),
    )
}

/// `type = "throttled"` is `type = "loop"` plus `throttle.write_bps` (and
/// `read_bps`): the same devno, tasks, defaults and outputs, byte for byte,
/// with and without the loop worker, under the 6.x and the legacy policy.
#[test]
fn throttled_is_a_loop_device_with_a_write_cap() {
    let text = wbsim::scenario::DEFAULT_SCENARIO;
    let cap = "type = \"throttled\"\nwrite_bps = \"50MiB/s\"\n";
    assert!(text.contains(cap));
    for backing in ["none", "tmpfs"] {
        let throttled = text.replace(
            cap,
            &format!("{cap}read_bps = \"80MiB/s\"\nbacking = \"{backing}\"\n"),
        );
        let looped = text.replace(
            cap,
            &format!(
                "type = \"loop\"\nbacking = \"{backing}\"\nthrottle.write_bps = \"50MiB/s\"\nthrottle.read_bps = \"80MiB/s\"\n"
            ),
        );
        for policy in ["io-less", "legacy"] {
            let sets = [
                "run.duration=12s",
                "run.warmup=4s",
                &format!("run.dirty_throttle={policy}"),
            ];
            let (a, b) = (load(&throttled, &sets), load(&looped, &sets));
            assert_eq!(format!("{:?}", a.devices), format!("{:?}", b.devices));
            assert_eq!((a.devices[0].major, a.devices[0].minor), (7, 0));
            let ra = simulate(&a, true, |_, _| {});
            let rb = simulate(&b, true, |_, _| {});
            assert!(ra.summary.devices[0].write_mib_s > 40.0);
            assert!(
                outputs(&ra) == outputs(&rb),
                "{backing} {policy}: the outputs differ"
            );
        }
    }
}

const RAID: &str = r#"
[machine]
memory = "4G"
cpus = 2
[vm]
dirty_bytes = "200M"
dirty_background_bytes = "100M"
[devices.ssd0]
type = "ssd"
[devices.ssd1]
type = "ssd"
[devices.md0]
type = "raid0"
members = ["ssd0", "ssd1"]
[filesystems.scratch]
device = "md0"
[jobs.dd]
numjobs = 4
bs = "1M"
[run]
duration = "16s"
warmup = "6s"
"#;

/// md is bio-based, and blk-throttle sits in front of any driver's
/// submit_bio: a cap on the array holds, with the members sharing it; a
/// cap on one member holds that member, and the array with it.
#[test]
fn a_write_cap_on_an_md_array_or_a_member_holds() {
    let s = run(RAID, &["devices.md0.throttle.write_bps=30MiB/s"]);
    let md = dev(&s, "md0").write_mib_s;
    let (a, b) = (dev(&s, "ssd0").write_mib_s, dev(&s, "ssd1").write_mib_s);
    eprintln!("md0 capped at 30: {md:.2} MiB/s ({a:.2} + {b:.2})");
    assert!((md - 30.0).abs() <= 30.0 * 0.03, "md0 {md:.2} MiB/s");
    assert!((a + b - md).abs() <= 1.0 && (a - b).abs() <= 2.0, "{a} {b}");
    let s = run(RAID, &["devices.ssd1.throttle.write_bps=10MiB/s"]);
    let (md, b) = (dev(&s, "md0").write_mib_s, dev(&s, "ssd1").write_mib_s);
    eprintln!("ssd1 capped at 10: {b:.2} MiB/s, md0 {md:.2} MiB/s");
    assert!((b - 10.0).abs() <= 10.0 * 0.05, "ssd1 {b:.2} MiB/s");
    // striped in 512k chunks, the array waits on its slow member
    assert!(md <= 2.0 * 10.0 * 1.05, "md0 {md:.2} MiB/s");
}

/// A read limit alone is a rule with its dispatcher, which limits reads
/// only (tests/reads.rs has its rate).
#[test]
fn a_read_limit_alone_limits_reads_only() {
    let src = four_dd("disk");
    let sc = load(&src, &["devices.sda.throttle.read_bps=1MiB/s"]);
    assert_eq!(sc.devices[0].throttle.read_bps, Some(1 << 20));
    assert_eq!(sc.devices[0].throttle.write_bps, None);
    let k = Kernel::new(sc, wbsim::trace::Tracer::disabled());
    assert!(k.tasks.iter().any(|t| t.comm.ends_with(":1H")));
    let t = k.devs[0].throtl.as_ref().expect("a rule");
    assert!(t.rw[0].as_ref().is_some_and(|r| r.bps == 1 << 20));
    assert!(t.write().is_none(), "writes are not throttled");
}

const TAIL: &str = "[filesystems.f]\ndevice = \"sda\"\n[jobs.dd]\nbs = \"1M\"\n";

/// Bad device input: the file and line, what is wrong, what is expected.
#[test]
fn bad_device_input_is_a_scenario_error() {
    for (dev, line, want) in [
        // a zero rate
        (
            "type = \"disk\"\nthrottle.write_bps = 0\n",
            3,
            "`throttle.write_bps` must be > 0",
        ),
        (
            "type = \"ssd\"\n[devices.sda.throttle]\nread_bps = \"0MiB/s\"\n",
            4,
            "`throttle.read_bps` must be > 0",
        ),
        ("type = \"throttled\"\nwrite_bps = 0\n", 3, "must be > 0"),
        (
            "type = \"hdd\"\nthrottle.write_bps = \"fast\"\n",
            3,
            "bad rate for `devices.sda.throttle.write_bps`",
        ),
        // the shorthand and the rule together
        (
            "type = \"throttled\"\nwrite_bps = \"50MiB/s\"\nthrottle.write_bps = \"20MiB/s\"\n",
            4,
            "expected either `type = \"throttled\"` with `write_bps`, or `type = \"loop\"` with `throttle.write_bps`",
        ),
        // another driver's key, a misspelt key, a key of no driver
        (
            "type = \"disk\"\nchannels = 4\n",
            3,
            "unknown key `devices.sda.channels` for a `disk` device (`channels` is a key of `ssd` devices); expected one of its keys {bandwidth,iops,latency,queue_depth,read_bandwidth} or a key of every device {type,size,devno,throttle.write_bps,throttle.read_bps,",
        ),
        (
            "type = \"loop\"\nwrite_bps = \"50MiB/s\"\n",
            3,
            "unknown key `devices.sda.write_bps` for a `loop` device (`write_bps` is a key of `throttled` devices); expected one of its keys {backing} or",
        ),
        (
            "type = \"hdd\"\nthrottle.wirte_bps = \"5MiB/s\"\n",
            3,
            "unknown key `devices.sda.throttle.wirte_bps` for a `hdd` device; expected one of its keys {rpm,avg_seek,",
        ),
        // bcache names its members
        (
            "type = \"bcache\"\n",
            2,
            "bcache device `sda` needs `cache = \"DEV\"`",
        ),
        (
            "type = \"ssd\"\nqueue.depth = 4\n",
            3,
            "expected one of its keys {channels,per_io,bandwidth,write_cache,cache,flush_bandwidth,read_latency,read_bandwidth} or a key of every device {",
        ),
        // an unknown type lists every type
        (
            "type = \"zram\"\n",
            2,
            "expected one of \"throttled\", \"loop\", \"disk\", \"ssd\", \"hdd\", \"raid0\", \"bcache\"",
        ),
    ] {
        let src = format!("[devices.sda]\n{dev}{TAIL}");
        let m = error(&src);
        assert!(m.starts_with(&format!("<test>:{line}: ")), "{dev}: {m}");
        assert!(m.contains(want), "{dev}: {m}");
    }
    // a device without a type
    let m = error(&format!("[devices.sda]\nsize = \"1G\"\n{TAIL}"));
    assert!(
        m.contains("expected `type` = one of \"throttled\", \"loop\", \"disk\""),
        "{m}"
    );
    // md is bio-based: no wbt of its own
    let m = error(&RAID.replace(
        "members = [\"ssd0\", \"ssd1\"]\n",
        "members = [\"ssd0\", \"ssd1\"]\nqueue.wbt_lat_usec = 2000\n",
    ));
    assert!(
        m.starts_with("<test>:15: ")
            && m.contains("on a raid0 device: it is bio-based and has no wbt"),
        "{m}"
    );
}
