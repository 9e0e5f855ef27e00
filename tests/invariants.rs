//! The model's invariants hold after every event, for several scenarios:
//! clean + dirty + writeback = cached (per inode and summed into vmstat),
//! memory adds up, time never goes backwards, counters never go negative
//! (debug builds trap on underflow), and IOs issued = completed + in flight.

use wbsim::kernel::Kernel;
use wbsim::scenario::Scenario;
use wbsim::trace::Tracer;

fn check(sets: &[&str]) -> Kernel {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    check_sc(Scenario::builtin(&sets).expect("scenario"))
}

fn check_sc(sc: Scenario) -> Kernel {
    let mut k = Kernel::new(sc.clone(), Tracer::new(&sc.trace.events));
    let mut last = 0;
    let mut n = 0u64;
    while k.step() {
        let now = k.now();
        assert!(now >= last, "time went backwards: {last} -> {now}");
        last = now;
        n += 1;
        if let Err(e) = k.check_invariants() {
            panic!("after event {n} at {now} ns: {e}");
        }
    }
    assert!(n > 500, "only {n} events");
    assert!(k.vm.nr_written > 0, "nothing was written");
    k
}

#[test]
fn default_scenario() {
    let _ = check(&["run.duration=20s", "run.warmup=10s"]);
}

#[test]
fn small_writes_many_tasks() {
    let _ = check(&[
        "run.duration=10s",
        "run.warmup=5s",
        "jobs.dd.bs=4k",
        "jobs.dd.numjobs=37",
    ]);
}

#[test]
fn disk_device_and_ratios() {
    let toml = r#"
        [machine]
        memory = "4G"
        cpus = 4
        hz = 1000
        [vm]
        dirty_ratio = 2
        dirty_background_ratio = 1
        [devices.sda]
        type = "disk"
        bandwidth = "120MiB/s"
        iops = 150
        latency = "5ms"
        queue_depth = 4
        [filesystems.data]
        device = "sda"
        [jobs.big]
        type = "dd"
        numjobs = 3
        bs = "64k"
        size = "300M"
        [jobs.small]
        type = "dd"
        numjobs = 2
        bs = "4k"
        start = "2s"
        runtime = "5s"
        [run]
        duration = "12s"
    "#;
    let k = check_sc(Scenario::load_str(toml, "disk.toml", "disk", &[]).expect("scenario"));
    assert!(k.devs[0].stat.write_ios > 100);
}

#[test]
fn memory_pressure_drops_clean_pages() {
    // 1 GiB of RAM, 3 GiB written: clean page cache must be reclaimed.
    let k = check(&[
        "run.duration=30s",
        "run.warmup=10s",
        "machine.memory=1G",
        "devices.loop0.write_bps=200MiB/s",
    ]);
    assert!(
        k.vm.pgsteal_kswapd + k.vm.pgsteal_direct > 0,
        "no clean page was reclaimed"
    );
}

#[test]
fn the_checker_catches_broken_accounting() {
    let mut k = check(&["run.duration=2s", "run.warmup=1s"]);
    assert!(k.check_invariants().is_ok());
    k.vm.nr_dirty += 1;
    assert!(k.check_invariants().unwrap_err().contains("vmstat"));
    k.vm.nr_dirty -= 1;
    k.devs[0].stat.write_ios += 1;
    assert!(k
        .check_invariants()
        .unwrap_err()
        .contains("requests issued"));
}

#[test]
fn a_thousand_writers() {
    let _ = check(&["run.duration=4s", "run.warmup=2s", "jobs.dd.numjobs=1000"]);
}

/// Small files on a small machine: reclaim takes the written files' pages
/// and their inodes are evicted (and their table chunks reused); the
/// accounting holds throughout (checked every few events: the check walks
/// every inode).
#[test]
fn small_files_are_reclaimed_and_their_inodes_evicted() {
    let toml = r#"
        [machine]
        memory = "256M"
        cpus = 2
        [devices.ssd0]
        type = "ssd"
        [filesystems.scratch]
        type = "xfs"
        device = "ssd0"
        agcount = 2
        [jobs.fs_mark]
        type = "fs_mark"
        args = "-d /a -d /b -S0 -n 10000 -s 4096 -L 8"
        [run]
        duration = "10s"
        warmup = "2s"
    "#;
    let sc = Scenario::load_str(toml, "fsmark.toml", "fsmark", &[]).expect("scenario");
    let mut k = Kernel::new(sc.clone(), Tracer::new(&sc.trace.events));
    let mut n = 0u64;
    while k.step() {
        n += 1;
        if n.is_multiple_of(101) {
            if let Err(e) = k.check_invariants() {
                panic!("after event {n}: {e}");
            }
        }
    }
    k.check_invariants().expect("invariants at the end");
    assert!(
        k.vm.pgsteal_kswapd + k.vm.pgsteal_direct > 0,
        "no clean page was reclaimed"
    );
    let (first, end) = (k.inodes.first_id(), k.inodes.end_id());
    assert_eq!(end, 160_000, "every file was created");
    assert!(first > 0, "no inode left the table");
    assert!(
        (end - first) as u64 <= k.vm.nr_file_pages + 2 * 4096,
        "{} inodes in the table for {} cached pages",
        end - first,
        k.vm.nr_file_pages
    );
}
