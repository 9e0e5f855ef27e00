//! Cgroup writeback (examples/cgroup): an inode's ownership moving to a
//! foreign dirtier after the rounds its 16-slot history needs, io.max on
//! two cgroups, and the per-cgroup outputs.

use wbsim::output::simulate;
use wbsim::scenario::Scenario;

fn run(example: &str, sets: &[&str], trace: bool) -> wbsim::output::RunResult {
    let path = format!("{}/examples/cgroup/{example}", env!("CARGO_MANIFEST_DIR"));
    let v: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    simulate(&Scenario::load_file(&path, &v).unwrap(), trace, |_, _| {})
}

/// The value of `key=` in a trace line.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let at = line.find(&format!(" {key}=")).expect(key) + key.len() + 2;
    line[at..].split_whitespace().next().unwrap()
}

/// A run's summary of cgroup `name`.
fn cgroup<'a>(r: &'a wbsim::output::RunResult, name: &str) -> &'a wbsim::metrics::CgroupSummary {
    r.summary.cgroups.iter().find(|c| c.name == name).unwrap()
}

fn secs(line: &str) -> f64 {
    let head = line.split(": ").next().unwrap();
    head.split_whitespace().last().unwrap().parse().unwrap()
}

#[test]
fn a_foreign_dirtier_takes_the_inode_when_its_history_says_so() {
    let r = run("foreign-switch.toml", &[], true);
    let hist: Vec<&str> = r
        .trace_text
        .lines()
        .filter(|l| l.contains("inode_foreign_history:"))
        .collect();
    let switches: Vec<&str> = r
        .trace_text
        .lines()
        .filter(|l| l.contains("inode_switch_wbs:"))
        .collect();
    assert_eq!(switches.len(), 1, "one switch: {switches:?}");
    let sw = switches[0];
    assert_eq!(
        (field(sw, "old_cgroup_ino"), field(sw, "new_cgroup_ino")),
        ("4001", "4002")
    );
    // the rounds under A's wb: each shifts 1-5 foreign slots in, and the
    // switch comes with the first history of more than 8 set slots
    let mut prev = 0u16;
    let mut rounds = 0;
    for l in &hist {
        if field(l, "cgroup_ino") != "4001" {
            break;
        }
        let h = u16::from_str_radix(field(l, "history").trim_start_matches("0x"), 16).unwrap();
        let slots = (1..=5)
            .find(|&s| h == ((prev as u32) << s) as u16 | ((1u16 << s) - 1))
            .unwrap_or_else(|| panic!("{prev:#x} -> {h:#x} is not 1-5 foreign slots"));
        assert!(slots >= 1);
        rounds += 1;
        if h.count_ones() > 8 {
            assert_eq!(
                secs(l),
                secs(sw),
                "the switch ends the round that crosses 8"
            );
            break;
        }
        assert!(secs(l) < secs(sw));
        prev = h;
    }
    assert!(rounds >= 2, "{rounds} rounds");
    // B dirtied the pages: it recorded A's wb and flushed it
    assert!(r
        .trace_text
        .contains("track_foreign_dirty: bdi 8:0[1]: ino="));
    assert!(r
        .trace_text
        .contains("flush_foreign: bdi 8:0: cgroup_ino=4002 frn_bdi_id=1 frn_memcg_id=2"));
    // after the switch, B's writeback is charged to B: A's wb writes
    // nothing later, and B's does most of the window's writing
    let t_switch = secs(sw);
    let a_after = r
        .trace_text
        .lines()
        .filter(|l| l.contains("writeback_written:") && l.contains("cgroup_ino=4001"))
        .filter(|l| secs(l) > t_switch)
        .count();
    assert_eq!(a_after, 0, "A's wb wrote after the switch at {t_switch}");
    let b = r.summary.cgroups.iter().find(|c| c.name == "B").unwrap();
    let a = r.summary.cgroups.iter().find(|c| c.name == "A").unwrap();
    assert!(b.write_mib_s > 5.0 * a.write_mib_s.max(0.1), "{a:?} {b:?}");
}

#[test]
fn io_max_caps_each_cgroup_and_charges_its_writeback() {
    let r = run(
        "iomax-10-25.toml",
        &["run.duration=20s", "run.warmup=10s"],
        true,
    );
    let cg = |n: &str| r.summary.cgroups.iter().find(|c| c.name == n).unwrap();
    let (a, b) = (cg("A"), cg("B"));
    assert!((8.5..=10.3).contains(&a.write_mib_s), "A {a:?}");
    assert!((12.0..=25.5).contains(&b.write_mib_s), "B {b:?}");
    assert!(cg("/").write_mib_s < 0.1);
    // each dirtier is throttled in its own memcg's wb: A's job starts
    // first, so its dd has the lower pid
    let mut owner = std::collections::BTreeMap::new();
    for l in r
        .trace_text
        .lines()
        .filter(|l| l.contains("balance_dirty_pages:"))
    {
        let pid = l.split_whitespace().next().unwrap().to_string();
        let ino = field(l, "cgroup_ino").to_string();
        assert_eq!(owner.entry(pid).or_insert(ino.clone()), &ino, "{l}");
    }
    let inos: Vec<&String> = owner.values().collect();
    assert_eq!(inos, ["4001", "4002"], "{owner:?}");
    // io.stat and memory.stat files, one per cgroup
    let names: Vec<&str> = r.extra_files.iter().map(|(n, _)| n.as_str()).collect();
    for f in [
        "cgroup/io.stat",
        "cgroup/A/io.stat",
        "cgroup/A/memory.stat",
        "cgroup/B/io.stat",
    ] {
        assert!(names.contains(&f), "{names:?}");
    }
    let io = |n: &str| {
        let (_, b) = r.extra_files.iter().find(|(f, _)| f == n).unwrap();
        String::from_utf8(b.clone()).unwrap()
    };
    assert!(io("cgroup/A/io.stat").starts_with(&format!("8:0 rbytes=0 wbytes={} ", a.wbytes)));
    assert!(io("cgroup/B/memory.stat").contains("file_dirty "));
}

/// Before 6.11 `wb_over_bg_thresh` gave a memcg's wb its share of the
/// memcg's background threshold by the whole disk's completions
/// (`wb_calc_thresh`), not the memcg's own. B (io.max 25 MiB/s beside A's
/// 10) does 71% of the disk's writeback, so its flusher starts a round at
/// 71% of its memcg's background threshold, with room left under the
/// memcg's limit for the next round while this one is in flight: B keeps
/// its cap, as Linux 6.1 does on the guest (25.01 and 24.88 MiB/s, A 10.03
/// and 9.97). With the memcg's own share (6.11) a round starts only at the
/// full background threshold, leaves too little room, and B's pipeline
/// empties between rounds.
#[test]
fn before_6_11_a_memcg_wb_starts_background_rounds_at_its_disk_share() {
    let b_at = |v: &str| {
        let set = format!("kernel.features.memcg_bg_thresh={v}");
        let r = run(
            "iomax-10-25.toml",
            &["run.duration=20s", "run.warmup=10s", &set],
            false,
        );
        let (a, b) = (cgroup(&r, "A"), cgroup(&r, "B"));
        assert!((9.0..=10.3).contains(&a.write_mib_s), "{v}: A {a:?}");
        b.write_mib_s
    };
    let (old, new) = (b_at("pre-6.11"), b_at("6.11"));
    assert!((24.0..=25.6).contains(&old), "pre-6.11: B {old:.2} MiB/s");
    assert!(new < 0.8 * old, "6.11: B {new:.2} against {old:.2} MiB/s");
}

/// summary.json's per-cgroup pressure is each cgroup's `io.pressure`
/// stall over the window: over a whole run, the file's total over the
/// run's length; over a later window, only what stalled in it (B writes
/// 1 MiB and exits in the first second).
#[test]
fn summary_gives_each_cgroups_stall_over_the_window() {
    let whole = run(
        "iomax-10-25.toml",
        &["jobs.b.size=1M", "run.duration=12s", "run.warmup=0s"],
        false,
    );
    let total_s = |name: &str| -> f64 {
        let f = format!("cgroup/{name}/io.pressure");
        let (_, b) = whole.extra_files.iter().find(|(n, _)| *n == f).unwrap();
        let text = String::from_utf8(b.clone()).unwrap();
        let some = text.lines().next().unwrap();
        some.rsplit("total=")
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
            / 1e6
    };
    for name in ["A", "B"] {
        let pct = cgroup(&whole, name).io_some_pct;
        let want = total_s(name) / 12.0 * 100.0;
        assert!((pct - want).abs() < 0.01, "{name}: {pct} against {want}");
    }
    assert!(cgroup(&whole, "A").io_some_pct > 70.0);
    assert!(cgroup(&whole, "A").memory_some_pct < 1.0);
    let late = run(
        "iomax-10-25.toml",
        &["jobs.b.size=1M", "run.duration=12s", "run.warmup=6s"],
        false,
    );
    assert!(cgroup(&late, "A").io_some_pct > 70.0);
    assert_eq!(cgroup(&late, "B").io_some_pct, 0.0);
}

/// A memcg at `memory.max` reclaims its own clean pages in the charging
/// task (`try_charge_memcg`): they leave the page cache, the task pays
/// `reclaim_per_page` for each inside a memstall, and the memcg counts
/// them in its `memory.stat` pgscan/pgsteal.
#[test]
fn memory_max_reclaims_in_the_charging_task() {
    let sets = ["run.duration=20s", "run.warmup=12s"];
    let cheap = run("iomax-10-25.toml", &sets, false);
    let dear_sets = [sets[0], sets[1], "machine.cost.reclaim_per_page=8us"];
    let dear = run("iomax-10-25.toml", &dear_sets, false);
    let stat = |r: &wbsim::output::RunResult, name: &str, key: &str| -> u64 {
        let f = format!("cgroup/{name}/memory.stat");
        let (_, b) = r.extra_files.iter().find(|(n, _)| *n == f).unwrap();
        let text = String::from_utf8(b.clone()).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap();
        line[key.len() + 1..].parse().unwrap()
    };
    let vm = |r: &wbsim::output::RunResult, key: &str| -> u64 {
        let line = r
            .vmstat
            .lines()
            .rev()
            .find(|l| l.starts_with(&format!("{key} ")))
            .unwrap();
        line[key.len() + 1..].trim().parse().unwrap()
    };
    // B (25 MiB/s for 20 s, about 500 MiB) passed its 256 MiB: what it
    // wrote beyond that was reclaimed, and so left the page cache
    let b = cgroup(&cheap, "B");
    let file_b = stat(&cheap, "B", "file") / 4096;
    assert_eq!(file_b, 65536, "B's file stays at memory.max");
    let steal = stat(&cheap, "B", "pgsteal");
    let written = b.wbytes / 4096;
    assert_eq!(stat(&cheap, "B", "pgscan"), steal);
    assert!(
        steal + file_b >= written && steal + file_b <= written + 4096,
        "B reclaimed {steal} pages, holds {file_b}, wrote {written}"
    );
    let file_a = stat(&cheap, "A", "file") / 4096;
    assert_eq!(stat(&cheap, "A", "pgsteal"), 0, "A stays under its limit");
    let cached = vm(&cheap, "nr_file_pages");
    assert!(
        cached < file_a + file_b + 4096,
        "the page cache holds {cached} pages, the memcgs {file_a} + {file_b}"
    );
    // the reclaim's CPU time is the writer's, in a memory stall
    let cpu = |r: &wbsim::output::RunResult| {
        let j = r.summary.jobs.iter().find(|j| j.name == "b").unwrap();
        j.cpu_user + j.cpu_system
    };
    let steal_dear = stat(&dear, "B", "pgsteal") as f64;
    let extra = steal_dear * 7.5e-6 / 20.0; // CPU-s/s the costlier reclaim adds
    assert!(
        cpu(&dear) - cpu(&cheap) > 0.5 * extra,
        "b's CPU {} -> {} for {steal_dear} pages",
        cpu(&cheap),
        cpu(&dear)
    );
    let mem = |r: &wbsim::output::RunResult| cgroup(r, "B").memory_some_pct;
    assert!(
        mem(&cheap) > 0.0 && mem(&dear) > 4.0 * mem(&cheap),
        "{} -> {}",
        mem(&cheap),
        mem(&dear)
    );
    assert_eq!(cgroup(&dear, "A").memory_some_pct, 0.0);
    // the flusher's kworkers' CPU time is reported beside the writers'
    let k = cheap.summary.kthreads_cpu.expect("kernel threads ran");
    assert!(k > 0.0 && k < 2.0, "{k}");
}

#[test]
fn a_run_without_cgroups_has_no_cgroup_outputs() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/seed-003/seed003-read-latency.toml"
    );
    let sc =
        Scenario::load_file(path, &["run.duration=2s".into(), "run.warmup=1s".into()]).unwrap();
    // its fio jobs name cgroups the scenario does not define: the root
    assert!(sc.jobs.iter().all(|j| j.cgroup == 0));
    let r = simulate(&sc, false, |_, _| {});
    assert!(r.summary.cgroups.is_empty());
    assert!(!r.extra_files.iter().any(|(n, _)| n.starts_with("cgroup")));
    let js = serde_json::to_string(&r.summary).unwrap();
    assert!(!js.contains("\"cgroups\""));
}

#[test]
fn io_cost_shares_the_disk_by_io_weight_at_its_vrate() {
    let sets = ["run.duration=25s", "run.warmup=10s"];
    let mibs = |r: &wbsim::output::RunResult, n: &str| cgroup(r, n).write_mib_s;
    let r = run("iocost-weights.toml", &sets, false);
    let (a, b) = (mibs(&r, "a"), mibs(&r, "b"));
    // weights 100:300
    assert!((2.7..=3.4).contains(&(b / a)), "a {a} b {b}");
    // the budget is the model's: at 100% about the HDD model's 170 MiB/s
    // of sequential writes
    assert!((140.0..=175.0).contains(&(a + b)), "a {a} b {b}");
    // half the vrate, half the budget
    let half: Vec<&str> = sets
        .iter()
        .copied()
        .chain(["devices.sda.io.cost.qos=enable=1 min=50 max=50"])
        .collect();
    let h = run("iocost-weights.toml", &half, false);
    let (ha, hb) = (mibs(&h, "a"), mibs(&h, "b"));
    assert!(
        ((ha + hb) / (a + b) - 0.5).abs() < 0.08,
        "{ha} + {hb} against {a} + {b}"
    );
    // off: the disk is shared as the writers share it
    let off: Vec<&str> = sets
        .iter()
        .copied()
        .chain(["devices.sda.io.cost.qos=enable=0"])
        .collect();
    let o = run("iocost-weights.toml", &off, false);
    let (oa, ob) = (mibs(&o, "a"), mibs(&o, "b"));
    assert!((0.8..=1.25).contains(&(ob / oa)), "off: a {oa} b {ob}");
}

#[test]
fn io_cost_refuses_what_it_does_not_model() {
    let path = format!(
        "{}/examples/cgroup/iocost-weights.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let e = |set: &str| {
        Scenario::load_file(&path, &[set.to_string()])
            .unwrap_err()
            .to_string()
    };
    let m = e("devices.sda.io.cost.qos=enable=1");
    assert!(
        m.contains("fixed vrate") && m.contains("min=100 max=100"),
        "{m}"
    );
    let m = e("devices.sda.io.cost.qos=enable=1 min=100 max=100 bogus=1");
    assert!(m.contains("unknown key `bogus`"), "{m}");
    let m = e("devices.sda.io.cost.model=ctrl=user rbps=0");
    assert!(m.contains("`rbps=0`") && m.contains("at least 1"), "{m}");
}

#[test]
fn bfq_shares_the_disk_between_sequential_readers_by_weight() {
    let sets = ["run.duration=12s", "run.warmup=2s"];
    let mibs = |r: &wbsim::output::RunResult, n: &str| cgroup(r, n).read_mib_s;
    let r = run("bfq-readers.toml", &sets, false);
    let (a, b) = (mibs(&r, "a"), mibs(&r, "b"));
    // weights 100:200
    assert!((1.8..=2.2).contains(&(b / a)), "a {a} b {b}");
    // idling keeps both streams sequential: far above mq-deadline's
    // interleaved reads, which share the disk 1:1
    let dl: Vec<&str> = sets
        .iter()
        .copied()
        .chain(["devices.sda.queue.scheduler=mq-deadline"])
        .collect();
    let d = run("bfq-readers.toml", &dl, false);
    let (da, db) = (mibs(&d, "a"), mibs(&d, "b"));
    assert!(
        (0.8..=1.25).contains(&(db / da)),
        "mq-deadline: a {da} b {db}"
    );
    assert!(
        a + b > 2.0 * (da + db),
        "bfq {a} + {b}, mq-deadline {da} + {db}"
    );
}

/// The 6.1 guest's readers alone (2026-11-28) get their weights, A / B
/// 0.508, though the disk takes 256 requests: BFQ idles on an empty sync
/// queue past its budget timeout and expires it only once its next request
/// has arrived, so it is requeued with its timestamps (docs/validation.md,
/// "BFQ weights on the guest"; the 0.970 this test once held wbsim to was a
/// run whose writers kept writing). Expired empty, the queue would go to
/// the idle tree and the readers would alternate 1:1.
#[test]
fn bfq_gives_sync_readers_their_weights_on_the_guest_disk() {
    let r = run(
        "bfq-guest-readers.toml",
        &["run.duration=12s", "run.warmup=2s"],
        false,
    );
    let (a, b) = (cgroup(&r, "A").read_mib_s, cgroup(&r, "B").read_mib_s);
    let kernel = 0.508;
    assert!(
        ((a / b) / kernel - 1.0).abs() <= 0.15,
        "A {a} B {b}: A/B {} against the kernel's {kernel}",
        a / b
    );
    // and between them they fill the disk
    assert!((45.0..=52.0).contains(&(a + b)), "A {a} B {b}");
}
