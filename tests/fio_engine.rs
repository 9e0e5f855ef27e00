//! The fio engine (workload/fio/engine.rs) and the page cache's read side
//! (mm/readahead.rs) on scenario devices: buffered writes as dd's, direct
//! IO at a device's cap, queue depth, readahead windows, random reads,
//! fsync, rate and thinktime, determinism.

use wbsim::kernel::Kernel;
use wbsim::scenario::{JobKind, Scenario};
use wbsim::workload::fio::job::{BsRange, FioSize, IoEngine, Rw};
use wbsim::workload::fio::{Dir, FioJob};

const MIB: u64 = 1 << 20;

/// A scenario from TOML whose first job is replaced by the fio jobs.
fn machine(toml: &str, jobs: Vec<FioJob>) -> Kernel {
    let mut sc = Scenario::load_str(toml, "<test>", "t", &[]).expect("scenario");
    let proto = sc.jobs[0].clone();
    sc.jobs.clear();
    for j in jobs {
        let mut job = proto.clone();
        job.name = j.name.clone();
        job.kind = JobKind::Fio(Box::new(j));
        sc.jobs.push(job);
    }
    Kernel::new(sc, wbsim::trace::Tracer::disabled())
}

fn run(toml: &str, jobs: Vec<FioJob>) -> Kernel {
    let mut k = machine(toml, jobs);
    assert!(k.fio.errors.is_empty(), "{:?}", k.fio.errors);
    k.run(|_, _| {});
    k
}

fn job(name: &str, rw: Rw, bs: u64) -> FioJob {
    let mut j = FioJob::new(name, "<test>");
    j.rw = rw;
    j.bs = [BsRange { min: bs, max: bs }; 3];
    j
}

/// A device and an ext4 on it, for `duration`.
fn scenario(device: &str, duration: &str) -> String {
    format!(
        "[machine]\nmemory = \"16G\"\ncpus = 2\n[devices.d]\n{device}\n\
         [filesystems.f]\ndevice = \"d\"\n[jobs.j]\ntype = \"dd\"\nbs = \"4k\"\n\
         [run]\nduration = \"{duration}\"\nwarmup = \"0s\"\n"
    )
}

fn bytes(k: &Kernel, dir: Dir) -> u64 {
    k.fio.clones.iter().map(|c| c.bytes_done[dir.idx()]).sum()
}

fn mean_lat(k: &Kernel, dir: Dir) -> f64 {
    let (s, n): (u128, u64) = k.fio.clones.iter().fold((0, 0), |(s, n), c| {
        (s + c.lat_sum[dir.idx()], n + c.stats.total_ios[dir.idx()])
    });
    s as f64 / n.max(1) as f64
}

#[test]
fn buffered_sequential_write_matches_dd_on_the_default_scenario() {
    let set = ["run.duration=20s".to_string()];
    // dd: the default scenario's 10 writers
    let sc = Scenario::builtin(&set).unwrap();
    let mut dd = Kernel::new(sc.clone(), wbsim::trace::Tracer::disabled());
    dd.run(|_, _| {});
    let dd_bytes: u64 = dd
        .tasks
        .iter()
        .filter(|t| t.comm == "dd")
        .map(|t| t.wchar)
        .sum();
    // fio: the same writers as one job of 10 clones
    let mut sc = sc;
    let mut j = job("w", Rw::Write, MIB);
    j.numjobs = 10;
    // more than a clone writes in 20 s (~125 MB), and the ten files fit
    // the 5 GiB device (a run that fills its device stops there)
    j.size = Some(FioSize::Bytes(400 << 20));
    sc.jobs[0].kind = JobKind::Fio(Box::new(j));
    let mut k = Kernel::new(sc, wbsim::trace::Tracer::disabled());
    k.run(|_, _| {});
    assert_eq!(k.stopped_by, None);
    let fio_bytes = bytes(&k, Dir::Write);
    let r = fio_bytes as f64 / dd_bytes as f64;
    assert!(
        (0.97..1.03).contains(&r),
        "fio {fio_bytes} vs dd {dd_bytes}"
    );
    // balance_dirty_pages paused every clone
    let paused = k
        .tasks
        .iter()
        .filter(|t| t.comm == "fio" && t.dirty_paused_when > 0)
        .count();
    assert_eq!(paused, 10);
    assert!(k.vm.nr_dirty > 0);
}

#[test]
fn direct_randwrite_at_depth_one_runs_at_the_cap() {
    let sc = scenario("type = \"throttled\"\nwrite_bps = \"50MiB/s\"", "10s");
    let mut j = job("rw", Rw::RandWrite, 64 << 10);
    j.direct = true;
    j.size = Some(FioSize::Bytes(1 << 30));
    j.time_based = true;
    let k = run(&sc, vec![j]);
    let bw = bytes(&k, Dir::Write) as f64 / 10.0;
    assert!((bw / (50.0 * MIB as f64) - 1.0).abs() < 0.03, "bw {bw}");
    // clat ≈ bs / cap = 1.25 ms
    let clat = mean_lat(&k, Dir::Write);
    assert!((clat / 1.25e6 - 1.0).abs() < 0.05, "clat {clat}");
    // the run ended with the clone running: its statistics end there
    let c = &k.fio.clones[0];
    assert_eq!(c.stats.runtime, 10_000_000_000);
    // no page cache involved
    assert_eq!(k.tasks[c.pid].nr_dirtied, 0);
}

#[test]
fn libaio_keeps_iodepth_in_flight_on_an_hdd() {
    // no write cache: until reads are served as reads, the device serves
    // them as writes of the same size, and a write cache would absorb them
    // wbt off: until the block layer tells reads apart, wbt would hold
    // these reads as writes (the kernel's wbt lets reads and O_DIRECT
    // writes pass)
    let sc = scenario(
        "type = \"hdd\"\nwrite_cache = false\nqueue.wbt_lat_usec = 0",
        "5s",
    );
    let mk = |depth| {
        let mut j = job("r", Rw::RandRead, 4096);
        j.direct = true;
        j.ioengine = IoEngine::Libaio;
        j.iodepth = depth;
        j.size = Some(FioSize::Bytes(10 << 30));
        j.time_based = true;
        j
    };
    let k16 = run(&sc, vec![mk(16)]);
    let k1 = run(&sc, vec![mk(1)]);
    assert_eq!(k16.fio.clones[0].max_inflight, 16);
    assert_eq!(k1.fio.clones[0].max_inflight, 1);
    // Little's law: with 16 in flight each IO waits behind the others.
    // (The drive serves its slots FIFO: until it reorders reads (NCQ) the
    // IOPS are the same at both depths; then iodepth 16 must win.)
    let (l16, l1) = (mean_lat(&k16, Dir::Read), mean_lat(&k1, Dir::Read));
    let n = |k: &Kernel| k.fio.clones[0].stats.total_ios[0];
    assert!(
        (14.0..17.0).contains(&(l16 / l1)),
        "latency {l16} vs {l1}; IOs {} vs {}",
        n(&k16),
        n(&k1)
    );
}

#[test]
fn sequential_read_ramps_readahead_and_a_second_pass_hits() {
    let sc = scenario("type = \"ssd\"", "30s");
    let mut j = job("r", Rw::Read, 4096);
    j.size = Some(FioSize::Bytes(64 * MIB));
    j.filename = Some("data".into());
    // a second pass over the same file, keeping its cache (fio drops a
    // file's cache when it opens it, and at each loop, unless invalidate=0)
    let mut again = j.clone();
    again.name = "again".into();
    again.stonewall = true;
    again.invalidate = false;
    let k = run(&sc, vec![j, again]);
    let (c, c2) = (&k.fio.clones[0], &k.fio.clones[1]);
    assert!(c2.end.is_some(), "the jobs finished");
    assert_eq!((c.bytes_done[0], c2.bytes_done[0]), (64 * MIB, 64 * MIB));
    // windows 4, 8, 16, 32 pages, then 2 × read_ahead_kb (fadvise
    // SEQUENTIAL doubles the bdi's 128 KiB): 64 pages
    let sizes: Vec<u64> = k.ra.bio_pages.keys().copied().collect();
    for w in [4, 8, 16, 32, 64] {
        assert!(sizes.contains(&w), "window {w} in {sizes:?}");
    }
    assert_eq!(sizes.iter().max(), Some(&64), "{:?}", k.ra.bio_pages);
    // the second pass reads nothing from the device
    assert_eq!(k.ra.pages_read, 64 * MIB / 4096);
    assert_eq!(k.vm.pgpgin, 64 * 1024);
    assert!(k.ra.async_ra > 100);
    // with invalidate=1 (fio's default) the second pass reads it again
    let mut j = job("r", Rw::Read, 4096);
    j.size = Some(FioSize::Bytes(64 * MIB));
    j.loops = 2;
    let k = run(&sc, vec![j]);
    assert_eq!(k.ra.pages_read, 2 * 64 * MIB / 4096);
}

#[test]
fn larger_read_ahead_kb_gives_larger_windows() {
    let sc = scenario("type = \"ssd\"\nqueue.read_ahead_kb = 512", "10s");
    let mut j = job("r", Rw::Read, 4096);
    j.size = Some(FioSize::Bytes(64 * MIB));
    let k = run(&sc, vec![j]);
    assert_eq!(k.ra.bio_pages.keys().max(), Some(&256));
}

#[test]
fn random_reads_get_no_readahead() {
    let sc = scenario("type = \"ssd\"", "5s");
    let mut j = job("r", Rw::RandRead, 4096);
    j.size = Some(FioSize::Bytes(1 << 30));
    j.time_based = true;
    let k = run(&sc, vec![j]);
    let sizes: Vec<u64> = k.ra.bio_pages.keys().copied().collect();
    assert_eq!(sizes, vec![1], "{:?}", k.ra.bio_pages);
    assert!(k.fio.clones[0].stats.total_ios[0] > 1000);
    // each read was a miss: pages read = reads (the random map visits each
    // block once a pass)
    // (the last read may still be in flight at the end)
    let reads = k.fio.clones[0].stats.total_ios[0];
    assert!((reads..=reads + 1).contains(&k.ra.pages_read));
}

#[test]
fn fsync_every_write_keeps_dirty_near_zero() {
    // without a volatile cache each sync waits for the flash write
    let sc = scenario("type = \"ssd\"\nwrite_cache = false", "3s");
    let mut j = job("w", Rw::Write, 4096);
    j.fsync = 1;
    j.size = Some(FioSize::Bytes(1 << 30));
    j.time_based = true;
    // appends that allocate: no fallocate()d file
    j.options.push(("fallocate".into(), "none".into()));
    let mut k = machine(&sc, vec![j.clone()]);
    let mut max_dirty = 0;
    // the file's dirty pages (the journal's committed metadata blocks are
    // dirty pages of the block device's inode)
    let file_dirty =
        |k: &Kernel| -> u64 { k.ra.files.keys().map(|&i| k.inodes[i].dirty.count()).sum() };
    while k.step() {
        max_dirty = max_dirty.max(file_dirty(&k));
    }
    let c = &k.fio.clones[0];
    let writes = c.stats.total_ios[1];
    assert!(writes > 100, "{writes} writes");
    // one sync a write; never more than one write's page dirty
    assert!(
        c.syncs + 1 >= writes && c.syncs <= writes,
        "{} syncs",
        c.syncs
    );
    assert!(max_dirty <= 1, "nr_dirty reached {max_dirty}");
    // each sync waits for its page's write on the device (≥ 40 us per_io)
    let sync_mean = c.sync_lat_sum as f64 / c.syncs as f64;
    assert!(sync_mean > 40e3, "sync latency {sync_mean}");
    // each append allocated a block: ext4's journal commits it before the
    // fsync returns (two more writes); without the metadata model, none
    let nometa = sc.replace("device = \"d\"\n", "device = \"d\"\nmetadata = false\n");
    let kn = run(&nometa, vec![j.clone()]);
    let cn = &kn.fio.clones[0];
    let nometa_mean = cn.sync_lat_sum as f64 / cn.syncs as f64;
    assert!(
        sync_mean > 2.0 * nometa_mean,
        "sync latency {sync_mean} with the journal, {nometa_mean} without"
    );
    // O_SYNC: the write's own latency includes the writeback
    let mut o = j;
    o.fsync = 0;
    o.sync = true;
    let ko = run(&sc, vec![o]);
    let plain = {
        let mut p = job("w", Rw::Write, 4096);
        p.size = Some(FioSize::Bytes(1 << 30));
        p.runtime = Some(1_000_000_000);
        run(&sc, vec![p])
    };
    let (lo, lp) = (mean_lat(&ko, Dir::Write), mean_lat(&plain, Dir::Write));
    assert!(lo > lp + 40e3, "O_SYNC write {lo} ns vs buffered {lp} ns");
}

#[test]
fn rate_caps_bandwidth_and_thinktime_spaces_ios() {
    let sc = scenario("type = \"ssd\"", "10s");
    let mut j = job("w", Rw::Write, 4096);
    j.direct = true;
    j.rate = [10 * MIB; 3];
    j.size = Some(FioSize::Bytes(1 << 30));
    j.time_based = true;
    let k = run(&sc, vec![j]);
    let bw = bytes(&k, Dir::Write) as f64 / 10.0;
    assert!((bw / (10.0 * MIB as f64) - 1.0).abs() < 0.01, "bw {bw}");
    // thinktime 10 ms after each IO: about 100 IOs a second
    let mut t = job("t", Rw::RandRead, 4096);
    t.direct = true;
    t.thinktime = 10_000_000;
    t.size = Some(FioSize::Bytes(1 << 30));
    t.time_based = true;
    let k = run(&sc, vec![t]);
    let n = k.fio.clones[0].stats.total_ios[0];
    assert!((950..=1000).contains(&n), "{n} IOs in 10 s");
    // thinktime_spin: half of each think on the CPU, in user time
    let mut t = t_spin_job();
    t.thinktime_spin = 5_000_000;
    let k = run(&sc, vec![t]);
    let c = &k.fio.clones[0];
    let n = c.stats.total_ios[0];
    assert!((950..=1000).contains(&n), "{n} IOs in 10 s");
    let utime = k.tasks[c.pid].utime as f64;
    assert!((utime / 5e9 - 1.0).abs() < 0.05, "user time {utime}");
}

fn t_spin_job() -> FioJob {
    let mut t = job("t", Rw::RandRead, 4096);
    t.direct = true;
    t.thinktime = 10_000_000;
    t.size = Some(FioSize::Bytes(1 << 30));
    t.time_based = true;
    t
}

#[test]
fn poisson_rate_ramp_time_and_rate_iops() {
    let sc = scenario("type = \"ssd\"", "20s");
    let mut j = job("p", Rw::RandWrite, 4096);
    j.direct = true;
    j.rate_iops = [500; 3];
    j.rate_process = wbsim::workload::fio::job::RateProcess::Poisson;
    j.size = Some(FioSize::Bytes(1 << 30));
    j.time_based = true;
    j.ramp_time = 2_000_000_000;
    j.runtime = Some(15_000_000_000);
    let k = run(&sc, vec![j]);
    let c = &k.fio.clones[0];
    // 17 s at 500 IOPS on average (exponential gaps)
    let rate = c.ios_done as f64 / 17.0;
    assert!((rate / 500.0 - 1.0).abs() < 0.03, "{rate} IOPS");
    // the statistics' runtime leaves the ramp out, and the job ended at
    // ramp + runtime
    let end = c.end.expect("ended");
    assert!((17_000_000_000..17_010_000_000).contains(&end), "{end}");
    assert_eq!(c.stats.runtime, end - 2_000_000_000);
}

#[test]
fn same_seed_same_run_other_randseed_other_offsets() {
    let sc = scenario("type = \"disk\"", "2s");
    let mk = |seed: Option<u64>| {
        let mut j = job("r", Rw::RandWrite, 4096);
        j.direct = true;
        j.size = Some(FioSize::Bytes(1 << 30));
        j.randseed = seed;
        j.time_based = true;
        j
    };
    let a = run(&sc, vec![mk(None)]);
    let b = run(&sc, vec![mk(None)]);
    let c = run(&sc, vec![mk(Some(7))]);
    let key = |k: &Kernel| {
        let c = &k.fio.clones[0];
        (c.offsets_digest, c.ios_done, c.lat_sum, c.bytes_done)
    };
    assert_eq!(key(&a), key(&b));
    assert_ne!(
        a.fio.clones[0].offsets_digest,
        c.fio.clones[0].offsets_digest
    );
}

#[test]
fn stonewall_runs_jobs_one_after_another() {
    let sc = scenario("type = \"ssd\"", "10s");
    let mut w = job("w", Rw::Write, 1 << 20);
    w.direct = true;
    w.size = Some(FioSize::Bytes(64 * MIB));
    let mut r = job("r", Rw::Read, 1 << 20);
    r.direct = true;
    r.size = Some(FioSize::Bytes(64 * MIB));
    r.stonewall = true;
    let k = run(&sc, vec![w, r]);
    let (a, b) = (&k.fio.clones[0], &k.fio.clones[1]);
    assert!(b.start.unwrap() >= a.end.unwrap());
    assert_eq!(b.bytes_done[0], 64 * MIB);
}

/// `cargo test --release --test fio_engine -- --ignored --nocapture`: the
/// wall time of one simulated hour of 4k direct random writes at depth 1
/// on a 150-IOPS disk.
#[test]
#[ignore]
fn bench_one_hour_of_4k_randwrite_on_a_disk() {
    let sc = scenario("type = \"disk\"\niops = 150", "3600s");
    let mut j = job("bench", Rw::RandWrite, 4096);
    j.direct = true;
    j.size = Some(FioSize::Bytes(10 << 30));
    j.time_based = true;
    let t0 = std::time::Instant::now();
    let k = run(&sc, vec![j]);
    let ios = k.fio.clones[0].stats.total_ios[1];
    println!(
        "1 h of 4k randwrite: {ios} IOs, {} events, {:.3} s wall",
        k.events_simulated(),
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn mixed_buffered_io_under_reclaim_keeps_the_accounting() {
    // 1 GiB of memory, a 2 GiB file read and written at random, and a
    // sequential reader of another: reclaim takes clean pages of both
    let sc = scenario("type = \"ssd\"", "5s").replace("16G", "1G");
    let mut m = job("m", Rw::RandRw, 16 << 10);
    m.size = Some(FioSize::Bytes(2 << 30));
    m.time_based = true;
    m.fsync = 64;
    let mut s = job("s", Rw::Read, 1 << 20);
    s.size = Some(FioSize::Bytes(2 << 30));
    let mut k = machine(&sc, vec![m, s]);
    assert!(k.fio.errors.is_empty());
    let mut n = 0u64;
    while k.step() {
        n += 1;
        if n.is_multiple_of(64) {
            k.check_invariants().unwrap();
        }
        for (ino, f) in &k.ra.files {
            assert_eq!(f.present.count(), k.inodes[*ino].nr_cached, "inode {ino}");
        }
    }
    k.check_invariants().unwrap();
    assert!(k.vm.pgsteal_kswapd + k.vm.pgsteal_direct > 0, "reclaim ran");
    let c = &k.fio.clones;
    assert!(c[0].bytes_done[0] > 0 && c[0].bytes_done[1] > 0);
    assert!(c[1].bytes_done[0] > 256 * MIB);
}

#[test]
fn refused_jobs_name_the_reason() {
    let sc = scenario("type = \"ssd\"", "1s");
    let mut j = job("nosize", Rw::Read, 4096);
    j.size = None;
    let k = machine(&sc, vec![j]);
    assert_eq!(k.fio.errors.len(), 1);
    assert!(k.fio.errors[0].contains("size="), "{}", k.fio.errors[0]);
    let mut j = job("raw", Rw::Read, 4096);
    j.filename = Some("/dev/nope".into());
    let k = machine(&sc, vec![j]);
    assert!(
        k.fio.errors[0].contains("no device `nope`"),
        "{}",
        k.fio.errors[0]
    );
}

#[test]
fn raw_device_direct_and_buffered() {
    let sc = scenario("type = \"ssd\"", "2s");
    let mut d = job("d", Rw::RandRead, 4096);
    d.filename = Some("/dev/d".into());
    d.direct = true;
    d.time_based = true;
    let k = run(&sc, vec![d]);
    assert!(k.fio.clones[0].stats.total_ios[0] > 1000);
    let mut b = job("b", Rw::Read, 1 << 20);
    b.filename = Some("/dev/d".into());
    b.size = Some(FioSize::Bytes(256 * MIB));
    let k = run(&sc, vec![b]);
    assert_eq!(k.fio.clones[0].bytes_done[0], 256 * MIB);
    // the last window's readahead runs past the job's region (the device
    // goes on): one window of 1 MiB
    let pages = 256 * MIB / 4096;
    assert!(
        (pages..=pages + 256).contains(&k.ra.pages_read),
        "{}",
        k.ra.pages_read
    );
}

/// `cargo test --release --test fio_engine -- --ignored --nocapture`: the
/// wall time of a minute of buffered 4k random reads over 4 GiB (the read
/// side's range sets fragment).
#[test]
#[ignore]
fn bench_buffered_random_reads() {
    let sc = scenario("type = \"ssd\"", "60s");
    let mut j = job("rr", Rw::RandRead, 4096);
    j.size = Some(FioSize::Bytes(4 << 30));
    j.time_based = true;
    j.numjobs = 4;
    let t0 = std::time::Instant::now();
    let k = run(&sc, vec![j]);
    let ios: u64 = k.fio.clones.iter().map(|c| c.stats.total_ios[0]).sum();
    let frags: usize = k.ra.files.values().map(|f| f.present.len()).sum();
    println!(
        "60 s of 4k random buffered reads: {ios} IOs, {frags} cached extents, {:.3} s wall",
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn offset_reads_the_region_after_it() {
    let sc = scenario("type = \"ssd\"", "10s");
    let mut j = job("o", Rw::Read, 1 << 20);
    j.offset = 64 * MIB;
    j.size = Some(FioSize::Bytes(64 * MIB));
    let k = run(&sc, vec![j]);
    let c = &k.fio.clones[0];
    assert_eq!(c.bytes_done[0], 64 * MIB);
    // the file covers offset + size; only the region after the offset is
    // read (its last window's readahead stops at the end of the file)
    let (&ino, f) = k.ra.files.iter().next().expect("the file");
    assert_eq!(k.inodes[ino].nr_pages_span, 128 * MIB / 4096);
    assert_eq!(f.present.first_missing(0, 128 * MIB / 4096), Some(0));
    assert_eq!(f.present.next_at_or_after(0), Some(64 * MIB / 4096));
    assert_eq!(k.ra.pages_read, 64 * MIB / 4096);
}

/// The median over a run's write clones of their clat p50 and p90, ns.
fn clat_p50_p90(k: &Kernel) -> (u64, u64) {
    let mut v: Vec<Vec<u64>> = k
        .fio
        .clones
        .iter()
        .map(|c| {
            let h = &c.stats.clat_hist[Dir::Write.idx()];
            h.percentiles(c.stats.clat[Dir::Write.idx()].samples, &[50.0, 90.0])
        })
        .collect();
    v.sort_unstable();
    (v[v.len() / 2][0], v[v.len() / 2][1])
}

/// `machine.cost.cache_miss`: random 4k writers into fallocated 512 MiB
/// files pay the page cache's cold xarray walk (3 levels, 6 lines) at
/// every write, and the extent status tree's walk once writeback has
/// fragmented the tree (here the later writes: the run is 6 s);
/// sequential writers pay neither.
#[test]
fn random_buffered_writes_pay_cold_lookups_sequential_ones_do_not() {
    let lat = |rw: Rw, miss: &str| {
        let sc = scenario("type = \"throttled\"\nwrite_bps = \"50MiB/s\"", "6s")
            + &format!(
                "[machine.cost]\ncache_miss = \"{miss}\"\n[vm]\ndirty_bytes = \"200M\"\n\
                 dirty_background_bytes = \"100M\"\n"
            );
        let mut j = job("w", rw, 4096);
        j.numjobs = 4;
        j.size = Some(FioSize::Bytes(512 * MIB));
        clat_p50_p90(&run(&sc, vec![j]))
    };
    let (seq0, seq1) = (lat(Rw::Write, "0ns"), lat(Rw::Write, "100ns"));
    let (rnd0, rnd1) = (lat(Rw::RandWrite, "0ns"), lat(Rw::RandWrite, "100ns"));
    assert_eq!(seq0, seq1, "sequential writers find their lookups cached");
    assert_eq!(seq0, rnd0, "without the cost, random writes cost the same");
    // every random write: 6 xarray lines (fio's histogram buckets them)
    let xa = rnd1.0 - rnd0.0;
    assert!((560..=640).contains(&xa), "random p50 {rnd0:?} -> {rnd1:?}");
    // the later ones also walk a tree of thousands of entries (12-16
    // nodes)
    let tree = rnd1.1 - rnd0.1 - xa;
    assert!(
        (1_100..=1_700).contains(&tree),
        "random p90 {rnd0:?} -> {rnd1:?}"
    );
}

#[test]
fn a_new_loop_writes_the_files_dirty_pages_back_first() {
    // dirty limits far above the file: the flusher's background writeback
    // never starts and nothing expires in the run
    let sc = scenario("type = \"ssd\"", "3s").replace(
        "[run]",
        "[vm]\ndirty_bytes = \"2G\"\ndirty_background_bytes = \"1G\"\n[run]",
    );
    let mut j = job("w", Rw::RandWrite, 4096);
    j.size = Some(FioSize::Bytes(4 * MIB));
    j.time_based = true;
    j.runtime = Some(2_000_000_000);
    let k = run(&sc, vec![j.clone()]);
    let written = k.devs[0].stat.write_sectors * 512;
    let done = bytes(&k, Dir::Write);
    assert!(
        done > 40 * 4 * MIB,
        "{done} bytes: many passes over the file"
    );
    // loop_cache_invalidate: each pass's POSIX_FADV_DONTNEED writes back
    // the file's dirty pages, so a new pass rewrites pages under writeback
    // and every write reaches the device, less the last pass's pages
    assert!(
        written + 4 * MIB >= done,
        "{written} bytes written for {done} bytes of writes"
    );
    // without invalidate=1 the passes rewrite dirty pages in the cache
    j.invalidate = false;
    let k = run(&sc, vec![j]);
    assert!(
        k.devs[0].stat.write_sectors * 512 < 8 * MIB,
        "{} bytes written without invalidate",
        k.devs[0].stat.write_sectors * 512
    );
}

/// summary.json's `fio`: a job's clones summed, and a lone clone's p50
/// and p99 those of its clat histogram by fio's percentile rule (what
/// fio.json's `clat_ns` percentiles print).
#[test]
fn the_summary_has_each_jobs_clat_percentiles_as_fio_json_does() {
    let sc = scenario("type = \"throttled\"\nwrite_bps = \"50MiB/s\"", "4s");
    let mut j = job("rw", Rw::RandWrite, 64 << 10);
    j.direct = true;
    j.size = Some(FioSize::Bytes(1 << 30));
    j.time_based = true;
    let one = run(&sc, vec![j.clone()]);
    let s = wbsim::workload::fio::report::fio_summary(&one.sc, &one.fio.clones);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].name, "rw");
    assert!(s[0].read.is_none());
    let w = s[0].write.as_ref().expect("writes");
    let st = &one.fio.clones[0].stats;
    assert_eq!(w.ios, st.clat[1].samples);
    let p = st.clat_hist[1].percentiles(st.clat[1].samples, &[50.0, 99.0]);
    assert_eq!(w.clat_p99_us, (p[1] as f64 / 100.0).round() / 10.0);
    assert_eq!(w.clat_p50_us, (p[0] as f64 / 100.0).round() / 10.0);
    // blk-throttle passes a slice's budget at once: most writes complete
    // at once, the one over the budget waits for the next slice
    assert!(w.clat_p50_us < 100.0 && w.clat_p99_us > 50_000.0, "{w:?}");
    assert!(w.clat_p99_us <= w.clat_max_us);
    // two clones: one job, the IOs of both
    j.numjobs = 2;
    let two = run(&sc, vec![j]);
    let s = wbsim::workload::fio::report::fio_summary(&two.sc, &two.fio.clones);
    assert_eq!(s.len(), 1);
    let ios: u64 = two.fio.clones.iter().map(|c| c.stats.clat[1].samples).sum();
    assert_eq!(s[0].write.as_ref().unwrap().ios, ios);
    assert!(two.fio.clones.iter().all(|c| c.stats.clat[1].samples > 0));
}
