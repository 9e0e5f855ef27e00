//! `wbsim sweep` end to end: each point is exactly `wbsim run --set ...`,
//! results.csv is the same whatever the threads, shards or resumes, and a
//! bad plan gets file:line and exit code 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wbsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .args(args)
        .output()
        .expect("run wbsim")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wbsim-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "wbsim failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A small plan (2 x 2 x 2 = 8 points of a 6 s built-in run) in `dir`.
fn plan(dir: &Path) -> String {
    let p = dir.join("plan.toml");
    std::fs::write(
        &p,
        "seeds = [1, 2]\n[set]\n\"run.duration\" = \"6s\"\n\"run.warmup\" = \"2s\"\n\
         [axes]\n\"jobs.dd.numjobs\" = [1, 4]\n\"vm.dirty_bytes\" = [\"50M\", \"200M\"]\n",
    )
    .unwrap();
    p.to_string_lossy().into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_point_is_wbsim_run_with_its_sets() {
    let d = tmpdir("point");
    let pl = plan(&d);
    let out = d.join("out");
    ok(&wbsim(&[
        "sweep",
        &pl,
        "--out",
        s(&out),
        "-q",
        "--index",
        "5",
    ]));
    // point 5: numjobs 4, dirty_bytes 50M, seed 2
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(&row[..1], ["5"]);
    assert_eq!(&row[3..6], ["4", "50M", "2"], "{csv}");
    let pdir = out.join("points").join(row[1]);
    let run = d.join("run");
    ok(&wbsim(&[
        "run",
        "-q",
        "--out",
        s(&run),
        "--set",
        "run.duration=6s",
        "--set",
        "run.warmup=2s",
        "--set",
        "jobs.dd.numjobs=4",
        "--set",
        "vm.dirty_bytes=50M",
        "--seed",
        "2",
    ]));
    for f in ["summary.json", "trace.txt", "vmstat"] {
        assert_eq!(
            std::fs::read(pdir.join(f)).unwrap(),
            std::fs::read(run.join(f)).unwrap(),
            "{f}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn threads_shards_and_resumes_give_one_results_csv() {
    let d = tmpdir("shards");
    let pl = plan(&d);
    let (one, two) = (d.join("one"), d.join("two"));
    ok(&wbsim(&[
        "sweep",
        &pl,
        "--out",
        s(&one),
        "-q",
        "--jobs",
        "1",
    ]));
    ok(&wbsim(&[
        "sweep",
        &pl,
        "--out",
        s(&two),
        "-q",
        "--jobs",
        "2",
    ]));
    let a = std::fs::read(one.join("results.csv")).unwrap();
    assert_eq!(a, std::fs::read(two.join("results.csv")).unwrap());
    assert_eq!(String::from_utf8_lossy(&a).lines().count(), 9);
    // shards, merged
    let mut shards = Vec::new();
    for i in 0..3 {
        let o = d.join(format!("shard{i}"));
        ok(&wbsim(&[
            "sweep",
            &pl,
            "--out",
            s(&o),
            "-q",
            "--shard",
            &format!("{i}/3"),
        ]));
        shards.push(o);
    }
    let merged = d.join("merged");
    let mut args = vec!["sweep", "merge"];
    args.extend(shards.iter().map(|p| s(p)));
    args.extend(["--out", s(&merged), "-q"]);
    ok(&wbsim(&args));
    assert_eq!(a, std::fs::read(merged.join("results.csv")).unwrap());
    // resume: a point removed is run again, the others are skipped
    let victim = std::fs::read_dir(one.join("points"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .min()
        .unwrap();
    std::fs::remove_file(victim.join("point.json")).unwrap();
    let err = ok(&wbsim(&["sweep", &pl, "--out", s(&one)]));
    assert!(err.contains("1 points to run (7 already done)"), "{err}");
    assert_eq!(a, std::fs::read(one.join("results.csv")).unwrap());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn bad_plans_and_points_exit_2_naming_where() {
    let d = tmpdir("bad");
    let p = d.join("bad.toml");
    std::fs::write(&p, "seeds = [1]\n[axes]\n\"vm.dirty_bytes\" = []\n").unwrap();
    let o = wbsim(&["sweep", s(&p)]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("bad.toml:3: axis `vm.dirty_bytes`"), "{e}");
    // a value the scenario refuses: named with its point, before any run
    std::fs::write(
        &p,
        "[axes]\n\"vm.dirty_bytes\" = [\"200M\", \"12 parsecs\"]\n",
    )
    .unwrap();
    let out = d.join("out");
    let o = wbsim(&["sweep", s(&p), "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("point 1 (vm.dirty_bytes=12 parsecs, seed 1)"),
        "{e}"
    );
    assert!(!out.join("points").exists());
    let o = wbsim(&["sweep", s(&p), "--index", "9"]);
    assert_eq!(o.status.code(), Some(2));
    let o = wbsim(&["sweep", "merge", s(&d)]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_example_plans_load_with_every_point() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sweeps");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let plan = wbsim::sweep::Plan::load(&p).unwrap();
        for pt in plan.points() {
            if let Err(e) = pt.load(&plan) {
                panic!("{}: point {}: {e}", p.display(), pt.index);
            }
        }
        n += 1;
    }
    assert!(n >= 1);
    let pl = dir.join("dirty-bytes.toml");
    let o = wbsim(&["sweep", s(&pl), "--count"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "60");
}
