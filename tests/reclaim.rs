//! kswapd and direct reclaim on a small machine whose page cache fills:
//! kswapd wakes below LOW and reclaims to HIGH, naps and sleeps; when it
//! cannot keep up the writers stall in direct reclaim; the counters,
//! tracepoints and zoneinfo text are the kernel's.

use wbsim::kernel::Kernel;
use wbsim::mm::page_alloc::{ZONE_DMA32, ZONE_MOVABLE};
use wbsim::scenario::Scenario;
use wbsim::trace::Tracer;

/// A 1 GiB machine writing 3 GiB through a fast loop device, with the
/// vmscan events traced.
fn machine(sets: &[&str]) -> Kernel {
    let toml = r#"
        [machine]
        memory = "1G"
        cpus = 2
        [devices.loop0]
        type = "throttled"
        write_bps = "400MiB/s"
        [filesystems.f]
        device = "loop0"
        [jobs.dd]
        numjobs = 2
        bs = "1M"
        [run]
        duration = "20s"
        warmup = "0s"
        [trace]
        events = ["mm_vmscan_kswapd_wake", "mm_vmscan_kswapd_sleep", "mm_vmscan_wakeup_kswapd",
                  "mm_vmscan_direct_reclaim_begin", "mm_vmscan_direct_reclaim_end"]
    "#;
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::load_str(toml, "reclaim.toml", "reclaim", &sets).expect("scenario");
    Kernel::new(sc.clone(), Tracer::new(&sc.trace.events))
}

/// Run to the end, checking the invariants now and then; returns the
/// lowest free page count seen once kswapd first ran.
fn run(k: &mut Kernel) -> u64 {
    let mut n = 0u64;
    let mut lowest = u64::MAX;
    while k.step() {
        n += 1;
        if k.vm.pageoutrun > 0 {
            lowest = lowest.min(k.vm.nr_free_pages);
        }
        if n.is_multiple_of(997) {
            if let Err(e) = k.check_invariants() {
                panic!("after event {n}: {e}");
            }
        }
    }
    k.check_invariants().expect("invariants at the end");
    lowest
}

#[test]
fn kswapd_keeps_free_memory_between_the_watermarks() {
    let mut k = machine(&[]);
    let lowest = run(&mut k);
    let v = &k.vm;
    assert!(v.pageoutrun > 0, "kswapd never ran");
    assert!(v.pgsteal_kswapd > 0 && v.pgscan_kswapd >= v.pgsteal_kswapd);
    // kswapd does the bulk of it; a writer's batch ends where it would
    // cross LOW and wakes kswapd there, but under `fifo` kswapd then waits
    // for a writer's slice to end while both writers copy at memory speed,
    // and they can cross the LOW−MIN gap (2740 pages) first: then a
    // writer reclaims for itself
    assert!(
        v.pgsteal_direct * 50 < v.pgsteal_kswapd,
        "direct {} vs kswapd {}",
        v.pgsteal_direct,
        v.pgsteal_kswapd
    );
    // free memory stays near the watermarks: never far below MIN, and
    // below HIGH when kswapd is woken
    let min: u64 = k.zones.z.iter().map(|z| z.min()).sum();
    let high: u64 = k.zones.z.iter().map(|z| z.high()).sum();
    assert!(lowest > min / 2, "free {lowest} fell far below MIN {min}");
    assert!(lowest < high, "free {lowest} never went below HIGH {high}");
    // kswapd naps and is woken again within 100 ms by the streaming
    // writers (the kernel's low_wmark_hit_quickly under a steady stream)
    assert!(v.kswapd_low_wmark_hit_quickly > 0);
    // the trace: kswapd0's lines and the writers' wakeups, 6.18's format
    let t = &k.tracer.buf;
    assert!(
        t.contains("kswapd0-") && t.contains(": mm_vmscan_kswapd_wake: nid=0 order=0\n"),
        "{}",
        &t[..t.len().min(2000)]
    );
    assert!(t.contains(
        ": mm_vmscan_wakeup_kswapd: nid=0 order=0 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_WRITE\n"
    ));
    // balance_pgdat runs once per wake, hit-quickly or not
    let wakes = t.matches("mm_vmscan_kswapd_wake").count() as u64;
    assert_eq!(wakes, v.pageoutrun);
    let vmstat = v.render(0, 0);
    for c in [
        "pgscan_kswapd ",
        "allocstall_movable ",
        "pageoutrun ",
        "kswapd_low_wmark_hit_quickly ",
    ] {
        assert!(vmstat.contains(c), "{c} in {vmstat}");
    }
    // zoneinfo's text
    let zi = k.zones.render_zoneinfo();
    assert!(
        zi.contains("Node 0, zone    DMA32\n")
            && zi.contains("protection: (0, 943, 943, 943, 943)"),
        "{zi}"
    );
}

#[test]
fn a_slow_kswapd_leaves_the_writers_to_reclaim() {
    // 20 us of CPU per page scanned: kswapd reclaims 50k pages/s, the
    // writers dirty 100k pages/s
    let mut k = machine(&["machine.cost.reclaim_per_page=20us"]);
    run(&mut k);
    let v = &k.vm;
    assert!(v.allocstall[ZONE_MOVABLE] > 0, "no direct reclaim");
    assert_eq!(v.allocstall.iter().sum::<u64>(), v.allocstall[ZONE_MOVABLE]);
    assert!(v.pgsteal_direct >= 32 * v.allocstall[ZONE_MOVABLE] / 2);
    let t = &k.tracer.buf;
    let begins = t
        .matches(": mm_vmscan_direct_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE")
        .count() as u64;
    assert_eq!(begins, v.allocstall[ZONE_MOVABLE]);
    assert_eq!(
        t.matches(": mm_vmscan_direct_reclaim_end: nr_reclaimed=")
            .count() as u64,
        begins
    );
    // the direct reclaimers' CPU time shows as the writers' system time
    let writers_sys: u64 = k
        .tasks
        .iter()
        .filter(|t| t.comm == "dd")
        .map(|t| t.stime)
        .sum();
    assert!(writers_sys > v.pgsteal_direct * 20_000 / 2);
}

#[test]
fn no_reclaim_when_memory_suffices() {
    let mut k = machine(&["machine.memory=16G", "run.duration=3s"]);
    run(&mut k);
    assert_eq!(k.vm.pageoutrun, 0);
    assert!(
        k.vmscan.kswapd.is_none(),
        "kswapd0 is created when first woken"
    );
    assert!(!k.vm.render(0, 0).contains("pageoutrun"));
}

/// A writer that stops: kswapd balances the node, naps 100 ms, finds it
/// still balanced and sleeps until woken (`mm_vmscan_kswapd_sleep`).
#[test]
fn kswapd_sleeps_once_balanced() {
    let mut k = machine(&[
        "jobs.dd.numjobs=1",
        "jobs.dd.size=1200M",
        "run.duration=15s",
    ]);
    run(&mut k);
    assert!(k.vm.pageoutrun > 0);
    let t = &k.tracer.buf;
    let sleep = t
        .rfind(": mm_vmscan_kswapd_sleep: nid=0\n")
        .expect("kswapd slept");
    // its last lines: the wake, then (after the nap) the sleep
    assert!(t[..sleep].rfind("mm_vmscan_kswapd_wake").is_some());
    assert!(
        t[sleep..].find("mm_vmscan_kswapd_wake").is_none(),
        "nothing woke it again"
    );
    assert!(k.zones.pgdat_balanced(ZONE_MOVABLE));
}

/// A machine from a scenario's text, with its trace events on.
fn kernel_of(toml: &str, sets: &[&str]) -> Kernel {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::load_str(toml, "lru.toml", "lru", &sets).expect("scenario");
    Kernel::new(sc.clone(), Tracer::new(&sc.trace.events))
}

/// One buffered sequential reader of a 3 GiB file on a 1 GiB machine.
const READER: &str = r#"
    [machine]
    memory = "1G"
    cpus = 2
    [devices.sda]
    type = "ssd"
    size = "8G"
    [filesystems.f]
    device = "sda"
    [jobs.fio]
    type = "fio"
    filesystem = "f"
    cmdline = "--name=r --rw=read --bs=1m --size=3g --ioengine=psync"
    [run]
    duration = "20s"
    warmup = "0s"
    [trace]
    events = ["mm_vmscan_kswapd_wake", "mm_vmscan_direct_reclaim_begin", "mm_vmscan_lru_shrink_inactive"]
"#;

/// kswapd keeps a streaming reader bigger than RAM going on its own: once
/// it first ran, free memory stays above MIN (no allocation stalls) and
/// never climbs much past HIGH; every page it scans is a clean inactive
/// page it frees, read once (referenced, never activated).
#[test]
fn a_streaming_reader_keeps_free_memory_between_low_and_high() {
    let mut k = kernel_of(READER, &[]);
    // the 1 GiB machine's pages are DMA32's (DMA keeps its protection)
    let z = &k.zones.z[ZONE_DMA32];
    let (min, low, high) = (z.min(), z.low(), z.high());
    let (mut lo, mut hi, mut n) = (u64::MAX, 0, 0u64);
    let mut below_low = false;
    while k.step() {
        n += 1;
        if k.vm.pageoutrun > 0 {
            let free = k.zones.z[ZONE_DMA32].free;
            lo = lo.min(free);
            hi = hi.max(free);
            below_low |= free < low;
        }
        if n.is_multiple_of(997) {
            k.check_invariants().expect("invariants");
        }
    }
    let v = &k.vm;
    assert_eq!(v.pgpgin, 3 << 20, "the whole file was read");
    assert!(v.pageoutrun > 10, "kswapd ran {} times", v.pageoutrun);
    assert_eq!(v.allocstall.iter().sum::<u64>(), 0, "no direct reclaim");
    assert!(lo > min, "free {lo} fell to MIN {min}");
    assert!(below_low, "kswapd is woken below LOW {low}");
    // a readahead window or a kswapd pass past HIGH, no more
    assert!(hi < high + 2048, "free {hi} climbed far past HIGH {high}");
    assert!(v.pgsteal_kswapd > 500_000);
    assert_eq!(v.pgscan_kswapd, v.pgsteal_kswapd);
    assert_eq!((v.pgactivate, v.nr_active_file), (0, 0));
    let t = &k.tracer.buf;
    assert!(t.contains(": mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed=32 nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=0 nr_unmap_fail=0 priority="));
    assert!(t.contains(" flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC\n"));
}

/// A file read twice: the second read of each page activates it
/// (`folio_mark_accessed`), and with no memory pressure it stays active.
#[test]
fn a_page_read_twice_becomes_active() {
    let mut k = kernel_of(
        READER,
        &[
            "jobs.fio.cmdline=--name=r --rw=read --bs=1m --size=256m --loops=2 --invalidate=0 --ioengine=psync",
            "machine.memory=2G",
        ],
    );
    while k.step() {}
    k.check_invariants().expect("invariants");
    let v = &k.vm;
    assert_eq!(v.pageoutrun, 0);
    assert_eq!(v.pgactivate, 65_536);
    assert_eq!(v.nr_active_file, 65_536);
    assert!(k.vm.render(0, 0).contains("\npgactivate 65536\n"));
}

/// A writer whose dirty pages fill memory (dirty limits above RAM) on a
/// slow device: reclaim finds only dirty pages and pages under writeback
/// at the tail. It tags them PG_reclaim and activates them
/// (`nr_vmscan_immediate_reclaim`); each rotates to the tail when its
/// writeback ends (`pgrotated`) and is reclaimed next; kswapd, meeting
/// tagged pages still under writeback, sleeps on
/// VMSCAN_THROTTLE_WRITEBACK (at most 100 ms, ended early by 32 written
/// pages a sleeper); the flushers are woken with reason `vmscan`.
const DIRTY: &str = r#"
    [machine]
    memory = "1G"
    cpus = 2
    [vm]
    dirty_bytes = "900M"
    dirty_background_bytes = "800M"
    [devices.loop0]
    type = "throttled"
    write_bps = "20MiB/s"
    [filesystems.f]
    device = "loop0"
    type = "xfs"
    [jobs.dd]
    numjobs = 1
    bs = "1M"
    [run]
    duration = "20s"
    warmup = "0s"
    [trace]
    events = ["mm_vmscan_throttled", "writeback_start"]
"#;

#[test]
fn dirty_pages_at_the_tail_are_tagged_rotated_and_throttle_kswapd() {
    let mut k = kernel_of(DIRTY, &[]);
    run(&mut k);
    let v = &k.vm;
    assert!(v.nr_vmscan_immediate_reclaim > 0);
    assert!(v.pgrotated > 10_000, "pgrotated {}", v.pgrotated);
    assert!(v.pgactivate >= v.pgrotated);
    // XFS has no ->writepage: reclaim never writes its pages
    assert_eq!(v.nr_vmscan_write, 0);
    assert!(v.pgsteal_kswapd >= v.pgrotated / 2);
    let t = &k.tracer.buf;
    let throttled: Vec<&str> = t
        .lines()
        .filter(|l| l.contains(": mm_vmscan_throttled: "))
        .collect();
    assert!(throttled.len() > 10, "{}", throttled.len());
    for l in &throttled {
        assert!(l.trim_start().starts_with("kswapd0-"), "{l}");
        assert!(
            l.contains("nid=0 usec_timeout=100000 usect_delayed=")
                && l.ends_with(" reason=VMSCAN_THROTTLE_WRITEBACK"),
            "{l}"
        );
        let d: u64 = l
            .split("usect_delayed=")
            .nth(1)
            .and_then(|x| x.split(' ').next())
            .and_then(|x| x.parse().ok())
            .expect("a delay");
        // the timeout, on the timer wheel's tick
        assert!(d <= 104_000, "{l}");
    }
    assert!(
        t.contains(" reason=vmscan "),
        "the flushers woken by reclaim"
    );
    let vmstat = v.render(0, 0);
    for c in [
        "nr_vmscan_write 0\n",
        "nr_vmscan_immediate_reclaim ",
        "pgrotated ",
        "pgrefill ",
        "pgdeactivate ",
    ] {
        assert!(vmstat.contains(c), "{c} in {vmstat}");
    }
}

/// Before 5.16 kswapd's throttle was `congestion_wait(BLK_RW_ASYNC,
/// HZ/10)`: a plain 100 ms sleep, without the tracepoint.
#[test]
fn before_5_16_kswapd_waits_on_congestion() {
    let mut k = kernel_of(DIRTY, &["kernel.features.reclaim_throttle=pre-5.16"]);
    run(&mut k);
    assert!(k.vm.nr_vmscan_immediate_reclaim > 0);
    assert!(!k.tracer.buf.contains("mm_vmscan_throttled"));
    // the older throttle policies default to it
    let k = kernel_of(DIRTY, &["run.dirty_throttle=legacy"]);
    assert!(!k.sc.features.reclaim_throttle_v5_16);
}

/// The guest rig's dirty writer (examples/reclaim/guest-dirty-writer.toml:
/// a 1 GiB guest with a 200 MiB hog, dd on ext4 over a 10 MiB/s disk, dirty
/// limits above what memory holds) is at the edge of OOM, as the guest's
/// run with a quiet sampler was (the writer killed 33 s into the write,
/// docs/validation.md): its dirty
/// pages fill memory, the flusher's pages stay under writeback until the
/// journal commits, and the writer's allocation reclaims pass after pass
/// without progress. After the 17th (`should_reclaim_retry`'s 16 retries)
/// the OOM killer takes the writer, the one process; its pages are ext4's,
/// so the allocation has `__GFP_FS` and may kill. With a 100 MiB hog (the
/// guest's run that did not go out of memory) nobody is killed.
#[test]
fn a_writer_that_fills_memory_with_dirty_pages_is_oom_killed() {
    let load = |sets: &[&str]| {
        let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        sets.push("run.duration=25s".into());
        sets.push(
            "trace.events=[\"mm_vmscan_direct_reclaim_begin\",\"mark_victim\",\"reclaim_retry_zone\"]"
                .into(),
        );
        let sc = Scenario::load_file("examples/reclaim/guest-dirty-writer.toml", &sets)
            .expect("example");
        Kernel::new(sc.clone(), Tracer::new(&sc.trace.events))
    };
    let mut k = load(&[]);
    run(&mut k);
    assert_eq!(k.vm.oom_kill, 1);
    let dd = k.tasks.iter().position(|t| t.comm == "dd").expect("dd");
    assert_eq!(k.tasks[dd].state, wbsim::kernel::RunState::Dead);
    let lines: Vec<&str> = k.tracer.buf.lines().collect();
    let kill = lines
        .iter()
        .position(|l| l.contains(": mark_victim: "))
        .expect("a kill");
    assert!(
        lines[kill].contains(&format!("pid={} comm=dd ", k.tasks[dd].pid)),
        "{}",
        lines[kill]
    );
    // the passes before the kill: the first and 16 retries; the check
    // after the 17th gives up before looking at a zone, so the last one
    // traced is the 16th
    let passes: Vec<usize> = (0..kill)
        .filter(|&i| lines[i].contains("mm_vmscan_direct_reclaim_begin"))
        .collect();
    assert!(passes.len() >= 17, "{} passes", passes.len());
    let last_check = lines[..kill]
        .iter()
        .rev()
        .find(|l| l.contains("reclaim_retry_zone"))
        .expect("retry checks");
    assert!(
        last_check.contains("no_progress_loops=16 wmark_check=1"),
        "{last_check}"
    );
    // the 16 passes before the 17th made no progress
    assert!(lines[passes[passes.len() - 17]..kill]
        .iter()
        .filter(|l| l.contains("reclaim_retry_zone"))
        .all(|l| !l.contains("no_progress_loops=0 ")));

    let mut k = load(&["machine.anon=435M"]);
    run(&mut k);
    assert_eq!(k.vm.oom_kill, 0);
    assert!(k.vm.allocstall.iter().sum::<u64>() > 0, "reclaim ran");
}
