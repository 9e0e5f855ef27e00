//! wbsim's bcache against the guest rig's real bcache (Linux 6.1), re-run
//! on every change from the rig's kept samples (`tests/data/bcache-rig/`,
//! one `writeback_rate_debug` sample a second from the rig's exp-bcache
//! run of each setting; docs/validation.md, "bcache against Linux 6.1"):
//! `tools/bcache-rig.sh SETTING SAMPLES` runs the setting's scenario
//! (`examples/bcache-rig/rig-SETTING.toml`) and checks `target` exact,
//! `proportional` within one sample's dirty data, the idle switch to the
//! maximum rate within one update interval and `dirty_data` within 10%.
//! Needs `sh` and `python3`; skips and says so without them.

use std::path::Path;
use std::process::Command;

fn have(cmd: &str) -> bool {
    Command::new(cmd)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn check(setting: &str) {
    if !have("python3") {
        eprintln!("skipped: no python3 (tools/bcache-rig.sh needs it)");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("sh")
        .current_dir(root)
        .arg("tools/bcache-rig.sh")
        .arg(setting)
        .arg(format!("tests/data/bcache-rig/{setting}.txt"))
        .env("WBSIM", env!("CARGO_BIN_EXE_wbsim"))
        .output()
        .expect("run tools/bcache-rig.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("PASS"),
        "bcache rig comparison {setting} failed:\n{stdout}\n{stderr}"
    );
}

#[test]
fn rig_default_fio_at_8m() {
    check("default");
}

#[test]
fn rig_wbpct2_fio_at_4m() {
    check("wbpct2");
}

#[test]
fn rig_slow_backing_300_iops() {
    check("slow");
}
