//! The Ray front end of `wbsim sweep` (python/wbsim_ray): python/tests runs
//! a small plan through a local Ray instance (`ray.init(num_cpus=2)`) and
//! checks its rows against the local sweep's, byte for byte. It needs a
//! Python with ray and pytest: `WBSIM_PYTHON`, else the repo's `.venv`
//! (which `.ci/run` makes); without one the test skips and says so.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn ray_sweep_rows_equal_the_local_sweep() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var_os("WBSIM_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv/bin/python"));
    let has = Command::new(&python)
        .args(["-c", "import ray, pytest"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        eprintln!(
            "skipped: no Python with ray and pytest at {} (set WBSIM_PYTHON, or run .ci/run, which makes .venv)",
            python.display()
        );
        return;
    }
    let o = Command::new(&python)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "python/tests",
        ])
        .current_dir(&root)
        .env("WBSIM_BIN", env!("CARGO_BIN_EXE_wbsim"))
        .env("PYTHONPATH", root.join("python"))
        .output()
        .expect("run pytest");
    assert!(
        o.status.success(),
        "pytest failed:\n{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}
