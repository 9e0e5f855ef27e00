//! ext4's metadata IO (fs/ext4_meta.rs, fs/jbd2.rs): journal commits from jbd2 in large
//! sequential WSM requests, in-place writeback of the journalled blocks by
//! the flusher (WM), and the knobs that turn it off or refuse it.

use wbsim::metrics::Summary;
use wbsim::output::simulate;
use wbsim::scenario::Scenario;

fn run(src: &str, sets: &[&str]) -> (Summary, String) {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::load_str(src, "<test>", "t", &sets).expect("scenario");
    let r = simulate(&sc, false, |_, _| {});
    (r.summary, r.vmstat)
}

/// The host rig's small-file case, scaled: 4 fs_mark threads, 4 KiB files,
/// a 50 MiB/s loop device, 200M/100M dirty limits.
const SMALL: &str = r#"
[machine]
memory = "8G"
cpus = 2
[vm]
dirty_bytes = "200M"
dirty_background_bytes = "100M"
[devices.loop0]
type = "throttled"
write_bps = "50MiB/s"
size = "16G"
[filesystems.scratch]
type = "ext4"
device = "loop0"
max_folio = "4k"
[jobs.fs_mark]
args = "-d /mnt/0 -d /mnt/1 -d /mnt/2 -d /mnt/3 -S0 -n 20000 -s 4096 -L 2"
[run]
duration = "20s"
warmup = "0s"
"#;

/// The host rig's case B (examples/rig/smallfile-throttled.toml: 4
/// fs_mark threads x 80,000 4 KiB files on ext4 over a 50 MiB/s loop
/// device). The kernel (6.18) wrote, by rwbs and region (block_rq_issue
/// while fs_mark ran; docs/validation.md): journal WSM 400 IOs, 189.7 MiB,
/// p50 512 KiB (jbd2); in place WM 126 MiB (inode table 104.6, directories
/// 21.1, bitmaps 0.2; the flusher).
#[test]
fn journal_and_in_place_metadata_writes() {
    let sc = Scenario::load_file("examples/rig/smallfile-throttled.toml", &[]).expect("example");
    let s = simulate(&sc, false, |_, _| {}).summary;
    let d = &s.devices[0];
    let t = s.duration_s;
    let (jios, jmib) = (
        d.journal_write_iops.unwrap() * t,
        d.journal_write_mib_s.unwrap() * t,
    );
    let in_place = (d.meta_write_mib_s.unwrap() - d.journal_write_mib_s.unwrap()) * t;
    eprintln!(
        "journal {jios:.0} IOs {jmib:.1} MiB; in place {in_place:.1} MiB; all {:.0} IOs {:.1} MiB",
        d.write_iops * t,
        d.write_mib_s * t
    );
    // jbd2 writes 4 KiB buffers under its plug: they merge up to
    // max_segments (128 x 4 KiB), as on the rig
    let javg = jmib * 1024.0 / jios;
    assert!(
        javg > 384.0 && javg <= 512.0,
        "journal requests {javg:.1} KiB"
    );
    assert!(
        (0.7..1.3).contains(&(jmib / 189.7)),
        "journal {jmib:.1} MiB"
    );
    assert!(
        (0.5..1.5).contains(&(in_place / 126.0)),
        "in place {in_place:.1} MiB"
    );
    // metadata is a minority of the bytes, as on the rig (20%)
    assert!(d.meta_write_mib_s.unwrap() < 0.4 * d.write_mib_s);
}

/// XFS on the same rig setup (case B; docs/validation.md): the
/// kernel writes its log in 32 KiB log buffers that never merge (8,952 of
/// them, WSM, from the CIL worker) and inode clusters and directory blocks
/// in place from xfsaild (WM).
#[test]
fn xfs_log_buffers_and_ail_writes() {
    let xfs = SMALL.replace("type = \"ext4\"", "type = \"xfs\"");
    let (s, _) = run(&xfs, &["run.duration=30s"]);
    let d = &s.devices[0];
    let t = s.duration_s;
    let (lios, lmib) = (
        d.journal_write_iops.unwrap() * t,
        d.journal_write_mib_s.unwrap() * t,
    );
    let in_place = (d.meta_write_mib_s.unwrap() - d.journal_write_mib_s.unwrap()) * t;
    eprintln!("xfs: log {lios:.0} IOs {lmib:.1} MiB, in place {in_place:.1} MiB");
    // every log write is one 32 KiB buffer
    assert!(
        (lmib * 1024.0 / lios - 32.0).abs() < 0.01,
        "{lmib} MiB in {lios}"
    );
    assert!(in_place > 0.0, "xfsaild wrote nothing");
    // 160,000 files: the log holds at least an inode item per file
    assert!(lmib * 1048576.0 > 160_000.0 * 304.0, "{lmib} MiB of log");
}

#[test]
fn metadata_off_and_knobs() {
    let (s, _) = run(SMALL, &["filesystems.scratch.metadata=false"]);
    assert_eq!(s.devices[0].meta_write_iops, None);
    let (on, _) = run(SMALL, &[]);
    assert!(on.devices[0].meta_write_iops.is_some());
    for (knob, want) in [
        ("commit = \"100ms\"", "at least 1s"),
        ("journal_size = \"1M\"", "expected 4M up to"),
    ] {
        let bad = SMALL.replace("max_folio = \"4k\"", &format!("max_folio = \"4k\"\n{knob}"));
        let e = Scenario::load_str(&bad, "<test>", "t", &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("<test>:1"), "{e}");
        assert!(e.contains(want), "{knob}: {e}");
    }
}

/// A longer commit interval means fewer, larger commits: the same blocks
/// dirtied again within one transaction are logged once.
#[test]
fn commit_interval_batches_the_journal() {
    let (a, _) = run(SMALL, &[]);
    let (b, _) = run(SMALL, &["filesystems.scratch.commit=15s"]);
    let (ja, jb) = (
        a.devices[0].journal_write_mib_s.unwrap(),
        b.devices[0].journal_write_mib_s.unwrap(),
    );
    eprintln!("journal MiB/s: commit=5s {ja:.2}, commit=15s {jb:.2}");
    assert!(jb < ja, "{jb} !< {ja}");
}

/// The metadata models keep runs deterministic: the same scenario and seed
/// give byte-identical traces and summaries (ext4 and XFS).
#[test]
fn metadata_runs_are_deterministic() {
    for fs in ["ext4", "xfs"] {
        let src = SMALL.replace("type = \"ext4\"", &format!("type = \"{fs}\""));
        let sc = Scenario::load_str(&src, "<test>", "t", &["run.duration=8s".into()]).unwrap();
        let a = simulate(&sc, true, |_, _| {});
        let b = simulate(&sc, true, |_, _| {});
        assert!(a.trace_text == b.trace_text, "{fs}: traces differ");
        let (ja, jb) = (
            serde_json::to_string(&a.summary).unwrap(),
            serde_json::to_string(&b.summary).unwrap(),
        );
        assert_eq!(ja, jb, "{fs}: summaries differ");
        assert!(
            a.summary.devices[0].meta_write_iops.is_some(),
            "{fs}: no metadata IO"
        );
    }
}

/// The commit times and the writer's balance_dirty_pages times of a traced
/// run of the guest rig's dirty writer (examples/reclaim), for 40 s, with
/// the guest's 100 MiB hog (its run 5): with the example's 200 MiB the OOM
/// killer takes the writer at 15 s (tests/reclaim.rs).
fn commits_and_writes(sets: &[&str]) -> (Vec<(f64, f64)>, Vec<f64>, String) {
    let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    sets.push("run.duration=40s".into());
    sets.push("machine.anon=435M".into());
    sets.push(
        r#"trace.events=["jbd2_start_commit","jbd2_end_commit","global_dirty_state"]"#.into(),
    );
    let sc =
        Scenario::load_file("examples/reclaim/guest-dirty-writer.toml", &sets).expect("example");
    let t = simulate(&sc, true, |_, _| {}).trace_text;
    let time = |l: &str| -> f64 {
        let f: Vec<&str> = l.split_whitespace().collect();
        f[3].trim_end_matches(':').parse().unwrap()
    };
    let mut commits = Vec::new();
    let mut start = None;
    for l in t.lines() {
        if l.contains("jbd2_start_commit:") {
            start = Some(time(l));
        } else if l.contains("jbd2_end_commit:") {
            commits.push((start.take().expect("a start before an end"), time(l)));
        }
    }
    let writes = t
        .lines()
        .filter(|l| l.trim_start().starts_with("dd-") && l.contains("global_dirty_state"))
        .map(time)
        .collect();
    (commits, writes, t)
}

/// On the guest rig (Linux 6.1, 10 MiB/s virtio disk) a commit's log
/// write waits behind the ~100 MB of data queued before it, 7-11 s, and
/// the writer sleeps in `do_get_write_access` all that while: its mtime
/// update needs the inode's table block, which the commit shadows
/// (docs/validation.md). Without the metadata model it never waits.
#[test]
fn a_commit_behind_queued_data_stops_the_writer() {
    let (commits, writes, t) = commits_and_writes(&[]);
    let line = t
        .lines()
        .find(|l| l.contains("jbd2_start_commit:"))
        .expect("a commit");
    assert!(
        line.contains("jbd2/vdb-8-")
            && line.ends_with("jbd2_start_commit: dev 254,16 transaction 0 sync 0"),
        "{line}"
    );
    assert!(t
        .lines()
        .any(|l| l.ends_with("jbd2_end_commit: dev 254,16 transaction 0 sync 0 head 0")));
    // Commits back to back, each ~10 s. The writer is stopped while the
    // log blocks are in flight (at least the first half of each commit);
    // it writes again once they are on disk, while the commit block goes.
    let long: Vec<_> = commits.iter().filter(|(s, e)| e - s > 5.0).collect();
    assert!(long.len() >= 3, "{commits:?}");
    for w in long.windows(2) {
        assert_eq!(
            w[0].1, w[1].0,
            "the next commit starts as one ends: {commits:?}"
        );
    }
    let first_half = |writes: &[f64], s: f64, e: f64| {
        writes
            .iter()
            .filter(|&&w| w > s + 0.1 && w < (s + e) / 2.0)
            .count()
    };
    for &&(s, e) in &long {
        let n = first_half(&writes, s, e);
        assert!(
            n <= 1,
            "commit {s}-{e}: {n} writes while it shadows the inode"
        );
    }
    assert!(writes.len() > 500, "the writer writes between the shadows");
    // the control: without the journal the writer goes on through those times
    let (none, writes, _) = commits_and_writes(&["filesystems.slow.metadata=false"]);
    assert!(none.is_empty());
    let &(s, e) = long[1];
    let n = first_half(&writes, s, e);
    assert!(
        n > 10,
        "without the journal: {n} writes in the first half of {s}-{e}"
    );
}

/// A vmscan wakeup (a start-all) that came while the flusher slept in the
/// middle of background writeback took the work item and dropped the
/// writeback under way, its inode left I_SYNC for good: with 100 MiB more
/// free at the start, the guest's writer case wrote 0.07 MiB/s and ran out
/// of memory. The start-all now waits for the writeback's end.
#[test]
fn a_start_all_waits_for_the_background_writeback_under_way() {
    let sets: Vec<String> = ["machine.anon=435M", "run.duration=40s"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let sc =
        Scenario::load_file("examples/reclaim/guest-dirty-writer.toml", &sets).expect("example");
    let s = simulate(&sc, false, |_, _| {}).summary;
    let d = &s.devices[0];
    assert!(
        d.write_mib_s > 8.0,
        "the disk wrote {} MiB/s",
        d.write_mib_s
    );
}
