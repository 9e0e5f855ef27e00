//! XFS's buffered write path (fs/xfs.rs): speculative preallocation ends
//! split the writes that cross them, and each folio of such a write gets a
//! throttle check of its own.

use wbsim::output::simulate;
use wbsim::scenario::Scenario;

/// Ten 1 MiB dd writers on xfs (the fidelity set's case). Late in the
/// run, where a writer's ratelimit lets it dirty 32 pages between checks,
/// the write that crosses its reservation's end at 128 MiB - 64 KiB
/// dirties 128, 64 and 32 pages between its balance_dirty_pages calls and
/// then 16 + 16, as the host rig's kernel trace shows (dirtied 128, 64,
/// 32, 32); early, with larger ratelimits, the pieces add up first (224
/// then 288, as the kernel's at 4 MiB). A write in one piece dirties 256.
#[test]
fn a_write_across_the_preallocation_end_is_throttled_folio_by_folio() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/fidelity/xfs-bw50-n10-bs1M.toml"
    );
    // the writers' CPU cost held to its estimate: the example's spread
    // moves when the ratelimit reaches 32 pages a check
    let sets: Vec<String> = ["run.duration=30s", "run.warmup=1s", "machine.cost.spread=0"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let sc = Scenario::load_file(path, &sets).unwrap();
    let r = simulate(&sc, true, |_, _| {});
    let comm = r
        .trace_text
        .lines()
        .find(|l| l.contains("balance_dirty_pages:"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .unwrap();
    let dirtied: Vec<u64> = r
        .trace_text
        .lines()
        .filter(|l| l.contains("balance_dirty_pages:") && l.trim_start().starts_with(&comm))
        .map(|l| {
            let at = l.find(" dirtied=").unwrap() + 9;
            l[at..].split_whitespace().next().unwrap().parse().unwrap()
        })
        .collect();
    let seq = [128, 64, 32, 32];
    let hits = dirtied.windows(4).filter(|w| *w == seq).count();
    assert!(hits >= 1, "{comm}: no 128, 64, 32, 32 in {dirtied:?}");
    assert!(dirtied.windows(2).any(|w| w == [224, 288]), "{dirtied:?}");
    let full = dirtied.iter().filter(|&&d| d == 256).count();
    assert!(full * 10 > dirtied.len() * 8, "{comm}: {dirtied:?}");
}
