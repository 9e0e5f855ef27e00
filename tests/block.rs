//! Seed 002 (`examples/seed-002-plug.toml`): plugging the flusher's whole
//! work item merges adjacent small files' blocks. The direction and rough
//! size of the seed's result must hold: write IOPS down by at least 80%,
//! bandwidth up, files/s up.

use wbsim::output::simulate;
use wbsim::scenario::Scenario;

fn run(sets: &[&str]) -> wbsim::metrics::Summary {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/seed-002-plug.toml");
    let mut v: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    // shorter than the example, same phases (throttled from ~2 s on)
    v.push("run.duration=16s".into());
    v.push("run.warmup=6s".into());
    simulate(&Scenario::load_file(path, &v).unwrap(), false, |_, _| {}).summary
}

#[test]
fn seed_002_plugging_the_flusher_merges_small_files() {
    let before = run(&["run.flusher_plug=false"]);
    let after = run(&[]);
    let dev = |s: &wbsim::metrics::Summary, n: &str| {
        s.devices
            .iter()
            .find(|d| d.name == n)
            .unwrap()
            .clone_figures()
    };
    let (b0, a0) = (dev(&before, "ssd0"), dev(&after, "ssd0"));
    let iops_change = (a0.0 - b0.0) / b0.0;
    assert!(
        iops_change <= -0.8,
        "write IOPS change {iops_change:.3} (seed: -0.946)"
    );
    assert!(a0.2 > 8.0 * b0.2, "request size {} -> {} KiB", b0.2, a0.2);
    let (bw_b, bw_a) = (dev(&before, "md0").1, dev(&after, "md0").1);
    assert!(
        bw_a > bw_b * 1.1,
        "bandwidth {bw_b} -> {bw_a} MiB/s (seed: +86%)"
    );
    let (f_b, f_a) = (before.jobs[0].files_per_s, after.jobs[0].files_per_s);
    assert!(f_a > f_b * 1.1, "files/s {f_b} -> {f_a} (seed: +63%)");
}

trait Figures {
    /// (write IOPS, write MiB/s, average request KiB)
    fn clone_figures(&self) -> (f64, f64, f64);
}

impl Figures for wbsim::metrics::DevSummary {
    fn clone_figures(&self) -> (f64, f64, f64) {
        (self.write_iops, self.write_mib_s, self.avg_request_kib)
    }
}
