//! `wbsim live` against the real kernel. These tests need root, tracefs,
//! loop devices and the cgroup v1 blkio throttle or cgroup v2 io.max; where
//! any is missing they skip with a message. They change machine-wide
//! state, so they run one at a time.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static MACHINE: Mutex<()> = Mutex::new(());

const SCENARIO: &str = r#"
[vm]
dirty_bytes = "200M"
dirty_background_bytes = "100M"
[devices.loop0]
type = "throttled"
write_bps = "50MiB/s"
[filesystems.scratch]
device = "loop0"
[jobs.dd]
numjobs = 4
bs = "1M"
[run]
duration = "30s"
"#;

fn wbsim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_wbsim"))
}

/// Removes a test's scenario directory when it drops.
struct Cleanup(std::path::PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Write a scenario file for one test, in a directory of its own (tests run
/// in parallel) that goes when the `Cleanup` drops.
fn scenario_file(name: &str, text: &str) -> (String, Cleanup) {
    let d = std::env::temp_dir().join(format!("wbsim-live-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let f = d.join(name);
    std::fs::write(&f, text).unwrap();
    (f.to_string_lossy().into_owned(), Cleanup(d))
}

/// Why live mode cannot run here, if it cannot.
fn cannot_run() -> Option<String> {
    let sc = wbsim::scenario::Scenario::load_str(SCENARIO, "t.toml", "t", &[]).unwrap();
    wbsim::live::preflight(&sc).err().map(|e| e.to_string())
}

/// kernel.sched_autogroup_enabled, if this kernel has it.
fn autogroup() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .ok()
        .map(|v| v.trim().to_string())
}

/// Everything live mode may touch, as text.
fn machine_state() -> String {
    let mut s = String::new();
    let run = |c: &str, a: &[&str]| {
        Command::new(c)
            .args(a)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    s += &format!("losetup -a:\n{}", run("losetup", &["-a"]));
    // the sorted names in a directory that start with `prefix`
    let names = |dir: &std::path::Path, prefix: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with(prefix))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let loops = names(std::path::Path::new("/sys/block"), "loop");
    s += &format!("loop devices: {loops:?}\n");
    s += &format!(
        "throttle: {}\n",
        std::fs::read_to_string(wbsim::live::BLKIO_THROTTLE).unwrap_or_default()
    );
    let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for m in wbsim::live::cgroup::cgroup2_mounts(&mi) {
        let cgs = names(&m, "wbsim-live");
        s += &format!(
            "cgroup2 {}: subtree_control {:?}, wbsim cgroups {cgs:?}\n",
            m.display(),
            std::fs::read_to_string(m.join("cgroup.subtree_control")).unwrap_or_default()
        );
    }
    // live mode mounts tracefs if it is not mounted, and unmounts it after
    let tracefs = mi
        .lines()
        .any(|l| l.split_whitespace().nth(4) == Some(wbsim::live::TRACEFS));
    s += &format!("tracefs mounted at {}: {tracefs}\n", wbsim::live::TRACEFS);
    let inst = names(&Path::new(wbsim::live::TRACEFS).join("instances"), "");
    s += &format!("trace instances: {inst:?}\n");
    for k in [
        "dirty_bytes",
        "dirty_ratio",
        "dirty_background_bytes",
        "dirty_background_ratio",
        "dirty_expire_centisecs",
        "dirty_writeback_centisecs",
    ] {
        s += &format!(
            "vm.{k} = {}",
            std::fs::read_to_string(format!("/proc/sys/vm/{k}")).unwrap_or_default()
        );
    }
    s += &format!("kernel.sched_autogroup_enabled = {:?}\n", autogroup());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    s += &format!(
        "wbsim mounts: {:?}\n",
        mounts
            .lines()
            .filter(|l| l.contains("wbsim-live"))
            .collect::<Vec<_>>()
    );
    let shm: Vec<String> = std::fs::read_dir("/dev/shm")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("wbsim-live"))
                .collect()
        })
        .unwrap_or_default();
    s += &format!("images: {shm:?}\n");
    // a run removes its restore journal once it has restored the machine
    let journals: Vec<Vec<String>> = wbsim::live::journal::journal_dirs()
        .iter()
        .map(|d| names(d, "live-"))
        .collect();
    s += &format!("restore journals: {journals:?}\n");
    s
}

/// Start `wbsim live`, wait until its writers run, send `sig`, and check
/// that it exits 130 and leaves the machine as it found it. SIGKILL, which
/// no handler sees, leaves the machine changed: `wbsim restore` must then
/// put it back from the run's journal.
fn interrupt_restores(sig: i32) {
    let _m = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = cannot_run() {
        eprintln!("skipping the live interrupt test: {why}");
        return;
    }
    let before = machine_state();
    // the scenario flips kernel.sched_autogroup_enabled (machine.autogroup)
    let flipped = autogroup().map(|v| if v == "0" { "1" } else { "0" });
    let text = match flipped {
        Some(a) => format!("{SCENARIO}[machine]\nautogroup = {a}\n"),
        None => SCENARIO.to_string(),
    };
    let (f, _cleanup) = scenario_file(&format!("sig{sig}.toml"), &text);
    let out =
        std::env::temp_dir().join(format!("wbsim-live-test-out-{}-{sig}", std::process::id()));
    let mut child = wbsim()
        .args(["live", &f, "--out", out.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let t0 = Instant::now();
    let mut running = false;
    let mut seen = Vec::new();
    while t0.elapsed() < Duration::from_secs(60) {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
            running |= l.contains("running");
            seen.push(l);
            if running {
                break;
            }
        }
    }
    assert!(running, "wbsim live never started its writers: {seen:?}");
    // mid-run: the device, the throttle and the trace instance exist now
    std::thread::sleep(Duration::from_secs(3));
    let during = machine_state();
    assert_ne!(before, during, "live mode changed nothing on the machine?");
    assert_eq!(
        autogroup().as_deref(),
        flipped,
        "machine.autogroup not applied"
    );
    // SAFETY: kill(2) on our child's pid.
    unsafe {
        libc::kill(child.id() as i32, sig);
    }
    let status = child.wait().unwrap();
    if sig == libc::SIGKILL {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        let r = wbsim().arg("restore").output().unwrap();
        let text = String::from_utf8_lossy(&r.stdout);
        assert!(r.status.success(), "wbsim restore: {r:?}");
        assert!(
            text.contains(&format!("after live run {}", child.id())) && text.contains("mount"),
            "wbsim restore did not report the killed run: {text}"
        );
        // and a second time there is nothing left to do
        let r = wbsim().arg("restore").output().unwrap();
        assert!(String::from_utf8_lossy(&r.stdout).starts_with("nothing to restore"));
    } else {
        assert_eq!(status.code(), Some(130), "exit status after signal {sig}");
    }
    let after = machine_state();
    assert_eq!(
        before, after,
        "the machine was not restored after signal {sig}"
    );
}

#[test]
fn sigint_mid_run_restores_the_machine() {
    interrupt_restores(libc::SIGINT);
}

#[test]
fn sigterm_mid_run_restores_the_machine() {
    interrupt_restores(libc::SIGTERM);
}

#[test]
fn sigkill_mid_run_is_restored_from_the_journal() {
    interrupt_restores(libc::SIGKILL);
}

#[test]
fn refuses_without_root_with_one_line() {
    let _m = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let (f, _cleanup) = scenario_file("noroot.toml", SCENARIO);
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let o = if root {
        // drop to nobody for this one command
        if !Path::new("/usr/bin/setpriv").exists() && !Path::new("/bin/setpriv").exists() {
            eprintln!("skipping: running as root and setpriv is missing");
            return;
        }
        Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                env!("CARGO_BIN_EXE_wbsim"),
                "live",
                &f,
            ])
            .output()
            .unwrap()
    } else {
        wbsim().args(["live", &f]).output().unwrap()
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("needs root"), "{err}");
}

#[test]
fn refuses_a_scenario_this_host_cannot_build() {
    let _m = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let (f, _cleanup) = scenario_file(
        "disk.toml",
        "[devices.sda]\ntype = \"disk\"\n[filesystems.fs]\ndevice = \"sda\"\n[jobs.dd]\nbs = \"1M\"\n",
    );
    let before = machine_state();
    let o = wbsim().args(["live", &f]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 && cannot_run().is_none() {
        assert!(err.contains("modelled device"), "{err}");
    }
    // xfs where mkfs.xfs is not on the PATH (a PATH of the other tools
    // alone), or metadata it cannot turn off
    let tools = std::env::temp_dir().join(format!("wbsim-live-test-{}-path", std::process::id()));
    std::fs::create_dir_all(&tools).unwrap();
    let _tools = Cleanup(tools.clone());
    for t in ["losetup", "mkfs.ext4", "mount", "umount", "dd"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join(t))
            .find(|p| p.is_file());
        if let Some(p) = found {
            std::os::unix::fs::symlink(p, tools.join(t)).unwrap();
        }
    }
    for (name, tweak, want, path) in [
        (
            "xfs.toml",
            "[filesystems.scratch]
type = \"xfs\"
",
            "needs `mkfs.xfs`",
            Some(tools.as_os_str()),
        ),
        (
            "nometa.toml",
            "[filesystems.scratch]
metadata = false
",
            "metadata = false",
            None,
        ),
        (
            "cgroups.toml",
            "[cgroups.A]
\"io.bfq.weight\" = 100
[filesystems.scratch]
",
            "has cgroups (A)",
            None,
        ),
    ] {
        let text = SCENARIO.replace(
            "[filesystems.scratch]
",
            tweak,
        );
        let (f, _cleanup) = scenario_file(name, &text);
        let mut cmd = wbsim();
        if let Some(p) = path {
            cmd.env("PATH", p);
        }
        let o = cmd.args(["live", &f]).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: one line: {err}");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 && cannot_run().is_none() {
            assert!(err.contains(want), "{name}: {err}");
        }
    }
    assert_eq!(
        before,
        machine_state(),
        "a refusal must not touch the machine"
    );
}

/// Run scenario `text` live (the test `what`), asserting it succeeds; its
/// output directory and the machine's state before it. None (with a
/// message) where this host's preflight refuses the scenario.
fn live_run(what: &str, text: &str) -> Option<(std::path::PathBuf, String)> {
    let sc = wbsim::scenario::Scenario::load_str(text, "t.toml", "t", &[]).unwrap();
    if let Err(e) = wbsim::live::preflight(&sc) {
        eprintln!("skipping the live {what} test: {e}");
        return None;
    }
    let before = machine_state();
    let (f, _cleanup) = scenario_file(&format!("{what}-run.toml"), text);
    let out = std::env::temp_dir().join(format!("wbsim-live-test-{what}-{}", std::process::id()));
    let o = wbsim()
        .args(["live", &f, "--out", out.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "wbsim live failed: {err}");
    Some((out, before))
}

/// A short complete run traces the scenario's events from both the
/// writeback and the wbt subsystems (`events/wbt/...` in the instance),
/// in the format wbsim's parser reads, and restores the machine.
/// An xfs filesystem: made with the scenario's allocation groups, written
/// and throttled like ext4, and the machine put back.
#[test]
fn a_run_on_xfs_is_throttled_and_restored() {
    let _m = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = cannot_run() {
        eprintln!("skipping the live xfs test: {why}");
        return;
    }
    let text = SCENARIO
        .replace("duration = \"30s\"", "duration = \"5s\"\nwarmup = \"1s\"")
        .replace(
            "[filesystems.scratch]\n",
            "[filesystems.scratch]\ntype = \"xfs\"\nagcount = 2\n",
        );
    let Some((out, before)) = live_run("xfs", &text) else {
        return;
    };
    let trace = std::fs::read_to_string(out.join("trace.txt")).unwrap();
    let recs = wbsim::trace::parse(&trace);
    let bdp = recs
        .iter()
        .filter(|r| r.event == "balance_dirty_pages")
        .count();
    assert!(bdp > 10, "bdp lines: {bdp}");
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(before, machine_state(), "the machine was not restored");
}

#[test]
fn a_complete_run_traces_writeback_and_wbt_events() {
    let _m = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = cannot_run() {
        eprintln!("skipping the live trace test: {why}");
        return;
    }
    let before = machine_state();
    let text = SCENARIO.replace("duration = \"30s\"", "duration = \"5s\"\nwarmup = \"1s\"")
        + "[trace]\nevents = [\"balance_dirty_pages\", \"wbt_timer\", \"wbt_step\"]\n";
    let (f, _cleanup) = scenario_file("trace.toml", &text);
    let out = std::env::temp_dir().join(format!("wbsim-live-test-trace-{}", std::process::id()));
    let st = wbsim()
        .args(["live", &f, "--out", out.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "wbsim live failed: {st:?}");
    let trace = std::fs::read_to_string(out.join("trace.txt")).unwrap();
    let recs = wbsim::trace::parse(&trace);
    let n = |ev: &str| recs.iter().filter(|r| r.event == ev).count();
    assert!(
        n("balance_dirty_pages") > 10,
        "bdp lines: {}",
        n("balance_dirty_pages")
    );
    // a 5 s buffered write scales wbt up: its window timer fires every 104 ms
    assert!(n("wbt_timer") > 10, "wbt_timer lines: {}", n("wbt_timer"));
    assert!(recs
        .iter()
        .filter(|r| r.event == "wbt_timer")
        .all(|r| r.bdi.is_some() && r.get("status").is_some()));
    // /proc/diskstats once a second, the loop device's lines with the time
    let ds = std::fs::read_to_string(out.join("diskstats")).unwrap();
    let lines: Vec<Vec<&str>> = ds.lines().map(|l| l.split_whitespace().collect()).collect();
    assert!(lines.len() >= 5, "diskstats: {ds}");
    assert!(
        lines
            .iter()
            .all(|f| f.len() == 21 && f[3].starts_with("loop")),
        "{ds}"
    );
    let wios = |f: &Vec<&str>| f[8].parse::<u64>().unwrap();
    assert!(
        wios(lines.last().unwrap()) > wios(&lines[0]),
        "no writes: {ds}"
    );
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(before, machine_state(), "the machine was not restored");
}

/// A simoop job: its files laid out before the run, `wbsim simoop` run on
/// them, simoop's lines and final figures kept, and the machine restored.
#[test]
fn a_simoop_run_keeps_simoops_lines() {
    let _m = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = cannot_run() {
        eprintln!("skipping the live simoop test: {why}");
        return;
    }
    let text = "[devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n\
                [filesystems.scratch]\ndevice = \"loop0\"\n\
                [jobs.simoop]\ntype = \"simoop\"\n\
                args = \"-t 2 -m 4 -M 2 -T 2 -R 1 -W 1 -C 1 -D 1 -f 1 -n 20 -w 1 -r 3 -i 1 scratch\"\n\
                [run]\nduration = \"4s\"\nwarmup = \"1s\"\n";
    let Some((out, before)) = live_run("simoop", text) else {
        return;
    };
    let lines = std::fs::read_to_string(out.join("simoop.txt")).unwrap();
    assert!(lines.contains("Warmup complete (1 seconds)\n"), "{lines}");
    let fin = lines.split("Final stats:\n").nth(1).expect("a final block");
    assert!(
        fin.starts_with("Run time: 3 seconds\nRead latency (p50: "),
        "{fin}"
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert!(
        s["simoop"]["work_rate"].as_f64().unwrap() > 0.0,
        "{}",
        s["simoop"]
    );
    assert!(
        s["simoop"]["read_p50_us"].as_u64().unwrap() > 0,
        "{}",
        s["simoop"]
    );
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(before, machine_state(), "the machine was not restored");
}
