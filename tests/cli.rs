//! The `wbsim` binary end to end: determinism, the default scenario's
//! acceptance figures, and bad input (exit code 2, file:line, what was found
//! and what is expected).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn wbsim(args: &[&str]) -> Output {
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

fn run_to(dir: &Path, extra: &[&str]) {
    let mut a = vec!["run", "--quiet", "--out", dir.to_str().unwrap()];
    a.extend_from_slice(extra);
    let o = wbsim(&a);
    assert!(
        o.status.success(),
        "wbsim failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn same_scenario_and_seed_are_byte_identical() {
    let (a, b, c) = (tmpdir("det-a"), tmpdir("det-b"), tmpdir("det-c"));
    run_to(&a, &["--seed", "7", "--set", "run.duration=20s"]);
    run_to(&b, &["--seed", "7", "--set", "run.duration=20s"]);
    run_to(&c, &["--seed", "8", "--set", "run.duration=20s"]);
    for f in [
        "trace.txt",
        "summary.json",
        "vmstat",
        "diskstats",
        "pressure.txt",
    ] {
        let x = std::fs::read(a.join(f)).unwrap();
        let y = std::fs::read(b.join(f)).unwrap();
        assert!(x.len() > 100, "{f} is nearly empty");
        assert!(x == y, "{f} differs between two runs with the same seed");
    }
    let t1 = std::fs::read(a.join("trace.txt")).unwrap();
    let t3 = std::fs::read(c.join("trace.txt")).unwrap();
    assert!(
        t1 != t3,
        "a different seed should change the trace (wakeup jitter)"
    );
}

#[test]
fn default_scenario_meets_its_acceptance_figures() {
    let d = tmpdir("default");
    run_to(&d, &[]);
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("summary.json")).unwrap()).unwrap();
    // device throughput within 1% of the 50 MiB/s cap
    let mibs = s["devices"][0]["write_mib_s"].as_f64().unwrap();
    assert!(
        (mibs - 50.0).abs() <= 0.5,
        "device wrote {mibs} MiB/s, cap 50"
    );
    // dirty pages stay under the hard limit in the steady window
    let trace = std::fs::read_to_string(d.join("trace.txt")).unwrap();
    let recs = wbsim::trace::parse(&trace);
    let win0 = s["window"]["start_s"].as_f64().unwrap();
    let mut seen = 0;
    for r in recs
        .iter()
        .filter(|r| r.event == "balance_dirty_pages" && r.ts as f64 / 1e9 >= win0)
    {
        let (dirty, limit) = (r.get("dirty").unwrap(), r.get("limit").unwrap());
        assert!(dirty < limit, "dirty {dirty} >= limit {limit} at {}", r.ts);
        seen += 1;
    }
    assert!(
        seen > 100,
        "only {seen} balance_dirty_pages lines in the window"
    );
    let p90 = s["dirty_pages"]["p90"].as_f64().unwrap();
    assert!(p90 < 51200.0, "sampled dirty p90 {p90}");
    // the kernel's own files are there
    let vmstat = std::fs::read_to_string(d.join("vmstat")).unwrap();
    for k in [
        "nr_dirty ",
        "nr_writeback ",
        "nr_dirtied ",
        "nr_written ",
        "nr_dirty_threshold 51200",
    ] {
        assert!(vmstat.contains(k), "vmstat lacks {k}");
    }
    assert!(trace.starts_with("# tracer: nop\n"));
}

#[test]
fn check_accepts_the_default_and_examples() {
    let o = wbsim(&["check"]);
    assert!(o.status.success());
    let o = wbsim(&["default-scenario"]);
    let d = tmpdir("defscen");
    let f = d.join("default.toml");
    std::fs::write(&f, &o.stdout).unwrap();
    let o = wbsim(&["check", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Write `text` to a scenario file, run `wbsim check` on it, and return
/// (exit code, stderr).
fn check_file(name: &str, text: &str, extra: &[&str]) -> (i32, String, String) {
    let d = tmpdir(name);
    let f = d.join(format!("{name}.toml"));
    std::fs::write(&f, text).unwrap();
    let mut a = vec!["check", f.to_str().unwrap()];
    a.extend_from_slice(extra);
    let o = wbsim(&a);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        f.to_str().unwrap().to_string(),
    )
}

const BASE: &str = "[devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n\n[filesystems.scratch]\ndevice = \"loop0\"\n\n[jobs.dd]\nnumjobs = 2\nbs = \"1M\"\n";

#[test]
fn unknown_key() {
    let (code, err, f) = check_file("unknown", &format!("{BASE}\n[vm]\ndirty_ratoi = 10\n"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("{f}:13:")), "{err}");
    assert!(
        err.contains("unknown key `vm.dirty_ratoi`") && err.contains("dirty_ratio"),
        "{err}"
    );
}

#[test]
fn autogroup_takes_a_boolean_or_the_sysctls_0_and_1() {
    for v in ["true", "1", "0"] {
        let (code, err, _) =
            check_file("ag", &format!("{BASE}\n[machine]\nautogroup = {v}\n"), &[]);
        assert_eq!(code, 0, "autogroup = {v}: {err}");
    }
    let (code, err, f) = check_file("ag2", &format!("{BASE}\n[machine]\nautogroup = 2\n"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("{f}:13:"))
            && err.contains("machine.autogroup")
            && err.contains("expected true or false"),
        "{err}"
    );
}

#[test]
fn bad_unit() {
    let (code, err, f) = check_file("badunit", &BASE.replace("50MiB/s", "50MiBps/s"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("{f}:3:")) && err.contains("write_bps") && err.contains("expected"),
        "{err}"
    );
    let (code, err, _) = check_file("badunit2", &BASE.replace("\"1M\"", "\"1Q\""), &[]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown size suffix `Q`"), "{err}");
}

#[test]
fn negative_size() {
    let (code, err, f) = check_file("neg", &format!("{BASE}size = \"-5M\"\n"), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("{f}:11:")) && err.contains("negative"),
        "{err}"
    );
    let (code, err, _) = check_file("neg2", &format!("{BASE}size = -5\n"), &[]);
    assert_eq!(code, 2);
    assert!(err.contains("negative"), "{err}");
}

#[test]
fn missing_file() {
    let o = wbsim(&["run", "/nonexistent/dir/scenario.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("/nonexistent/dir/scenario.toml") && err.contains("cannot read"),
        "{err}"
    );
}

#[test]
fn unknown_set_path() {
    let (code, err, _) = check_file("setpath", BASE, &["--set", "vm.dirty_bites=200M"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--set vm.dirty_bites=200M") && err.contains("unknown key"),
        "{err}"
    );
    let o = wbsim(&["run", "--set", "nodots"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn device_that_no_filesystem_names() {
    let text = format!("{BASE}\n[devices.sdb]\ntype = \"disk\"\n");
    let (code, err, f) = check_file("orphan", &text, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("{f}:12:")) && err.contains("`sdb` is not named by any filesystem"),
        "{err}"
    );
    // and a filesystem naming a device that does not exist
    let (code, err, f) = check_file(
        "nodev",
        &BASE.replace("device = \"loop0\"", "device = \"loop9\""),
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("{f}:6:")) && err.contains("`loop9`, which is not defined"),
        "{err}"
    );
}

#[test]
fn bad_toml_and_no_panic() {
    let (code, err, f) = check_file("syntax", "[machine\nmemory = 1\n", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("{f}:1:")) && err.contains("invalid TOML"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
}

#[test]
fn every_example_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut n = 0;
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                // sweep plans are checked by tests/sweep.rs
                if !p.ends_with("sweeps") {
                    stack.push(p);
                }
            } else if p.extension().is_some_and(|x| x == "toml") {
                let o = wbsim(&["check", p.to_str().unwrap()]);
                assert!(
                    o.status.success(),
                    "{}: {}",
                    p.display(),
                    String::from_utf8_lossy(&o.stderr)
                );
                n += 1;
            }
        }
    }
    assert!(n >= 16, "only {n} examples");
}

#[test]
fn plot_writes_png_and_svg() {
    let d = tmpdir("plot");
    run_to(
        &d,
        &["--set", "run.duration=10s", "--set", "jobs.dd.numjobs=3"],
    );
    let o = wbsim(&["plot", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in ["dirty", "ratelimit", "pause"] {
        let png = std::fs::read(d.join(format!("{name}.png"))).unwrap();
        assert!(
            png.len() > 10_000 && png.starts_with(b"\x89PNG"),
            "{name}.png"
        );
        let svg = std::fs::read_to_string(d.join(format!("{name}.svg"))).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("time (s)"),
            "{name}.svg"
        );
    }
    // a directory without a trace is an error, not a panic
    let e = tmpdir("plot-empty");
    let o = wbsim(&["plot", e.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

/// `fidelity --kernel-runs DIR` scores against kept runs without touching
/// the kernel. Two seeds' runs stand in for kernel runs: their writers'
/// CPU time is the model's own, so the CPU calibration factor is ~1.
#[test]
fn fidelity_rescores_kept_kernel_runs() {
    let d = tmpdir("fidelity-kept");
    let sc = d.join("sc.toml");
    let o = wbsim(&["default-scenario"]);
    std::fs::write(&sc, &o.stdout).unwrap();
    let name = String::from_utf8_lossy(&o.stdout)
        .lines()
        .find_map(|l| {
            l.strip_prefix("name = ")
                .map(|n| n.trim_matches('"').to_string())
        })
        .expect("the default scenario has a name");
    let set = ["--set", "run.duration=20s", "--set", "run.warmup=10s"];
    for (k, seed) in [(1, "2"), (2, "3")] {
        let mut a = vec![sc.to_str().unwrap(), "--seed", seed];
        a.extend_from_slice(&set);
        run_to(&d.join(&name).join(format!("kernel-{k}")), &a);
    }
    let mut a = vec!["fidelity", "--kernel-runs", d.to_str().unwrap()];
    a.extend_from_slice(&set);
    a.push(sc.to_str().unwrap());
    let o = wbsim(&a);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("kernel over 2 run(s) vs wbsim"), "{out}");
    let k: f64 = out
        .split("machine.cost scaled x")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no calibration note: {out}"));
    assert!((0.9..1.1).contains(&k), "factor {k}");
    // --no-cpu-calibration keeps the costs
    a.insert(1, "--no-cpu-calibration");
    let o = wbsim(&a);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("machine.cost scaled"));
    // a directory without the scenario's runs: exit 2, naming the path
    let e = tmpdir("fidelity-none");
    let o = wbsim(&[
        "fidelity",
        "--kernel-runs",
        e.to_str().unwrap(),
        sc.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(e.to_str().unwrap()), "{err}");
}

#[test]
fn docs_scenario_md_is_wbsim_help_markdown() {
    let o = wbsim(&["help", "--markdown"]);
    assert!(o.status.success());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scenario.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        doc == String::from_utf8_lossy(&o.stdout),
        "docs/scenario.md is not what `wbsim help --markdown` prints (src/scenario/keys.rs \
         changed?); regenerate it with: cargo run -q -- help --markdown > docs/scenario.md"
    );
}

#[test]
fn help_explains_a_key_a_prefix_or_all() {
    let o = wbsim(&["help", "devices.loop0.write_bps"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(
        out.starts_with("devices.NAME.write_bps\n") && out.contains("throttled"),
        "{out}"
    );
    let o = wbsim(&["help", "vm"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert_eq!(out.matches("\nvm.").count() + 1, 11, "{out}");
    let o = wbsim(&["help"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("machine.cost.fork"),
        "{out}"
    );
    // an unknown key: a message naming what is expected, and exit code 2
    let o = wbsim(&["help", "vm.dirty_ratoi"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains("no scenario key `vm.dirty_ratoi`") && err.contains("dirty_ratio"),
        "{err}"
    );
    // a command's name still gives that command's help
    let o = wbsim(&["help", "check"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("Usage: wbsim check"));
}

#[test]
fn what_the_kernel_refuses_or_no_machine_has_is_refused_with_its_source() {
    let check = |args: &[&str]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_wbsim"))
            .arg("check")
            .args(args)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, e) = check(&["--set", "vm.dirty_bytes=0"]);
    assert_eq!(code, Some(2));
    assert!(
        e.contains(
            "--set vm.dirty_bytes=0: `vm.dirty_bytes` = 0 is below the kernel's minimum of 2 pages"
        ),
        "{e}"
    );
    let (code, e) = check(&["--set", "vm.dirty_background_bytes=0"]);
    assert_eq!(code, Some(2), "{e}");
    let (code, e) = check(&["--set", "machine.cost.page_cache_insert=900_s"]);
    assert_eq!(code, Some(2));
    assert!(e.contains("is not a CPU cost of one operation"), "{e}");
    let (code, e) = check(&["--set", "jobs.dd.bs=1024.9"]);
    assert_eq!(code, Some(2));
    assert!(e.contains("not a whole number of bytes"), "{e}");
    // a check of values together names the --set, not the built-in file
    let (code, e) = check(&["--set", "machine.memory=1M"]);
    assert_eq!(code, Some(2));
    assert!(
        e.contains("<built-in default scenario> with --set machine.memory=1M: "),
        "{e}"
    );
    // an unreadable file: no ":0"
    let (code, e) = check(&["/nonexistent/s.toml"]);
    assert_eq!(code, Some(2));
    assert!(e.contains("error: /nonexistent/s.toml: cannot read"), "{e}");
}

#[test]
fn a_bad_out_is_refused_before_the_run() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .args([
            "run",
            "--out",
            "/proc/wbsim-cannot-write-here",
            "--set",
            "run.duration=600s",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("cannot write to /proc/wbsim-cannot-write-here"),
        "{e}"
    );
    // refused at once: no summary was printed
    assert!(o.stdout.is_empty());
}

#[test]
fn a_run_whose_trace_would_not_fit_is_refused_before_it_starts() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .args(["run", "--set", "run.duration=1000h", "--out"])
        .arg(std::env::temp_dir().join(format!("wbsim-huge-{}", std::process::id())))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("3600000 s simulated would write about") && e.contains("or --force"),
        "{e}"
    );
}

#[test]
fn names_are_printed_without_their_control_characters() {
    let dir = std::env::temp_dir().join(format!("wbsim-esc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("esc.toml");
    // an escape sequence in the scenario's name, a bell in a job's
    std::fs::write(
        &f,
        "name = \"a\\u001b[31mred\"\n[jobs.\"d\\u0007x\"]\nnumjobs = 1\n",
    )
    .unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .arg("check")
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!e.contains('\u{7}') && e.contains("d\\u{7}x"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigint_saves_the_run_so_far() {
    let d = tmpdir("sigint");
    let child = Command::new(env!("CARGO_BIN_EXE_wbsim"))
        .args(["run", "--quiet", "--force", "--set", "run.duration=1000h"])
        .arg("--out")
        .arg(&d)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // the trace's lines are written into .trace.txt.partial as the run
    // goes (after the first 4 MiB, held until the header's length is
    // guessed), renamed trace.txt at the end: once some are, the run is
    // well under way
    let body = d.join(".trace.txt.partial");
    let t0 = std::time::Instant::now();
    let mut child = child;
    while std::fs::metadata(&body).map(|m| m.len()).unwrap_or(0) < 5 << 20 {
        if t0.elapsed().as_secs() >= 120 {
            let _ = child.kill();
            panic!("the run wrote no trace");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let o = child.wait_with_output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{e}");
    assert!(e.contains("interrupted: the run stopped at"), "{e}");
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("summary.json")).unwrap()).unwrap();
    let t = s["stopped_at_s"].as_f64().expect("stopped_at_s");
    assert!(t > 0.0 && t < 3_600_000.0, "{t}");
    assert_eq!(s["duration_s"].as_f64(), Some(t));
    assert_eq!(s["window"]["end_s"].as_f64(), Some(t));
    // the trace is whole: its header counts its lines, the last is before
    // the stop
    let trace = std::fs::read_to_string(d.join("trace.txt")).unwrap();
    let n = trace.lines().filter(|l| !l.starts_with('#')).count();
    assert!(
        trace.contains(&format!("entries-in-buffer/entries-written: {n}/{n} ")),
        "{}",
        &trace[..300]
    );
    let last = wbsim::trace::parse_line(trace.lines().last().unwrap()).unwrap();
    assert!(last.ts as f64 <= t * 1e9 + 1e6);
    assert!(!body.exists(), "the trace's lines file is left behind");
    for f in ["vmstat", "zoneinfo", "diskstats", "wall.json"] {
        assert!(d.join(f).exists(), "{f} missing");
    }
}

#[test]
fn a_run_that_fills_its_device_stops_unless_forced() {
    let d = tmpdir("full");
    let o = wbsim(&[
        "run",
        "--quiet",
        "--set",
        "devices.loop0.size=100M",
        "--out",
        d.to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("device `loop0` is full") && e.contains("--force"),
        "{e}"
    );
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["stopped_by"], "device full");
    let f = tmpdir("full-forced");
    let o = wbsim(&[
        "run",
        "--quiet",
        "--force",
        "--set",
        "devices.loop0.size=100M",
        "--out",
        f.to_str().unwrap(),
    ]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{e}");
    assert!(e.contains("warning: device `loop0` is full"), "{e}");
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(f.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["duration_s"], 60.0);
    assert!(s.get("stopped_by").is_none());
}
