//! Knobs written during a run (`[events.NAME]`): the new value takes
//! effect at the next use, as a sysctl or sysfs write does on a running
//! kernel, and the model's caches of values computed from knobs follow
//! (the test binary is built with debug assertions, under which every cache
//! hit is recomputed and compared).

use wbsim::output::simulate;
use wbsim::scenario::Scenario;
use wbsim::trace::{parse, Record};

const AT: &str = r#"
[events.more]
at = "20s"
"vm.dirty_bytes" = "400M"
"#;

fn scen(extra: &str, sets: &[&str]) -> Scenario {
    let src = format!("{}\n{extra}", wbsim::scenario::DEFAULT_SCENARIO);
    let mut v: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    v.push("run.duration=30s".into());
    v.push("trace.events=[balance_dirty_pages,global_dirty_state]".into());
    Scenario::load_str(&src, "events.toml", "events", &v).unwrap()
}

fn bdp(recs: &[Record]) -> Vec<&Record> {
    recs.iter()
        .filter(|r| r.event == "balance_dirty_pages")
        .collect()
}

#[test]
fn dirty_bytes_written_at_20s_moves_the_limit_at_the_next_check() {
    let r = simulate(&scen(AT, &[]), true, |_, _| {});
    let recs = parse(&r.trace_text);
    let t20 = 20_000_000_000;
    let lines = bdp(&recs);
    let before: Vec<i64> = lines
        .iter()
        .filter(|r| r.ts < t20)
        .filter_map(|r| r.get("limit"))
        .collect();
    let after: Vec<&&Record> = lines.iter().filter(|r| r.ts >= t20).collect();
    assert!(
        before.len() > 100 && after.len() > 10,
        "{} {}",
        before.len(),
        after.len()
    );
    // 200M and 400M in 4 KiB pages
    assert!(before.iter().all(|&l| l == 51_200), "{before:?}");
    assert_eq!(
        after[0].get("limit"),
        Some(102_400),
        "the first check after the write"
    );
    assert!(after.iter().all(|r| r.get("limit") == Some(102_400)));
    // the global threshold moves with it, and dirty pages rise to it
    let thresh_after = recs
        .iter()
        .filter(|r| r.event == "global_dirty_state" && r.ts >= t20)
        .filter_map(|r| r.get("thresh"))
        .collect::<Vec<_>>();
    assert!(thresh_after.iter().all(|&t| t == 102_400));
    let dirty_end = after.last().unwrap().get("dirty").unwrap();
    assert!(
        dirty_end > 60_000,
        "dirty {dirty_end} stays below the old limit"
    );
}

#[test]
fn without_the_event_nothing_moves() {
    let r = simulate(&scen("", &[]), true, |_, _| {});
    let recs = parse(&r.trace_text);
    assert!(bdp(&recs).iter().all(|r| r.get("limit") == Some(51_200)));
}

#[test]
fn a_bdi_max_ratio_written_mid_run_caps_the_wb_share() {
    let ev = r#"
[events.cap]
at = "15s"
"devices.loop0.bdi.max_ratio" = 50
"#;
    let r = simulate(&scen(ev, &[]), true, |_, _| {});
    let recs = parse(&r.trace_text);
    let share =
        |r: &&Record| r.get("wb_setpoint").unwrap() as f64 / r.get("setpoint").unwrap() as f64;
    let lines = bdp(&recs);
    let before: Vec<f64> = lines
        .iter()
        .filter(|r| r.ts > 10_000_000_000 && r.ts < 15_000_000_000)
        .map(share)
        .collect();
    let after: Vec<f64> = lines
        .iter()
        .filter(|r| r.ts >= 15_000_000_000)
        .map(share)
        .collect();
    assert!(before.iter().all(|&s| s > 0.9), "{before:?}");
    assert!(
        !after.is_empty() && after.iter().all(|&s| s <= 0.5),
        "{after:?}"
    );
}

fn load_err(extra: &str) -> String {
    let src = format!("{}\n{extra}", wbsim::scenario::DEFAULT_SCENARIO);
    Scenario::load_str(&src, "events.toml", "events", &[])
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_events_are_refused_with_the_line() {
    let e = load_err("[events.late]\nat = \"90s\"\n\"vm.dirty_bytes\" = \"1G\"\n");
    assert!(
        e.contains("events.toml:") && e.contains("below `run.duration`"),
        "{e}"
    );
    let e = load_err("[events.x]\n\"vm.dirty_bytes\" = \"1G\"\n");
    assert!(e.contains("has no `at`"), "{e}");
    let e = load_err("[events.x]\nat = \"1s\"\n");
    assert!(e.contains("writes nothing"), "{e}");
    let e = load_err("[events.x]\nat = \"1s\"\n\"machine.cpus\" = 4\n");
    assert!(e.contains("cannot be written during a run"), "{e}");
    let e = load_err("[events.x]\nat = \"1s\"\n\"vm.dirty_bytes\" = \"4k\"\n");
    assert!(e.contains("minimum of 2 pages"), "{e}");
    let e = load_err("[events.x]\nat = \"1s\"\n\"devices.loop0.bdi.min_ratio\" = 60\n\"devices.loop0.bdi.max_ratio\" = 50\n");
    assert!(e.contains("above its bdi.max_ratio"), "{e}");
    let e = load_err("[events.x]\nat = \"1s\"\n\"devices.nope.bdi.min_ratio\" = 1\n");
    assert!(e.contains("device `nope`"), "{e}");
}

#[test]
fn a_ratio_write_zeroes_the_bytes_as_the_handler_does() {
    let ev = r#"
[events.ratio]
at = "10s"
"vm.dirty_ratio" = 2
"#;
    let sc = scen(ev, &[]);
    let r = simulate(&sc, true, |_, _| {});
    let recs = parse(&r.trace_text);
    let limits: Vec<i64> = bdp(&recs)
        .iter()
        .filter(|r| r.ts >= 10_000_000_000)
        .filter_map(|r| r.get("limit"))
        .collect();
    // 2% of the dirtyable memory (16 GiB less anon and reserve: under 4.06M
    // pages), the same at every check: dirty_bytes (51200 pages) no longer
    // counts
    assert!(!limits.is_empty());
    let l = limits[0];
    assert!(l > 75_000 && l < 81_300, "limit {l}");
    assert!(
        limits.iter().all(|&x| x == l),
        "the limit moves after the write"
    );
}
