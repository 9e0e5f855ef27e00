//! Reads in the block layer and the device models, submitted as bios by a
//! kernel thread (no page cache, no fio engine): blk-throttle's read
//! budget, an hdd's random reads, mq-deadline's read preference and write
//! starvation bound, merges that never cross directions, wbt letting reads
//! pass, md RAID0 remapping reads, and /sys/block/DEV/stat's read half and
//! io_ticks.

use wbsim::block::blk_wbt::{REQ_BACKGROUND, REQ_READ, REQ_SYNC};
use wbsim::block::{Bio, BioOwner};
use wbsim::kernel::{Body, Kernel, Pid};
use wbsim::scenario::Scenario;
use wbsim::sim::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC};

const MIB: u64 = 1 << 20;

/// A machine with `devices` (TOML), a filesystem on `fsdev` and a dd job
/// that starts only at the run's last second (after everything these tests
/// look at), plus a kernel thread to submit bios.
fn machine(devices: &str, fsdev: &str, sets: &[&str]) -> (Kernel, Pid) {
    let toml = format!(
        "{devices}\n[filesystems.f]\ndevice = \"{fsdev}\"\nmetadata = false\n\
         [jobs.dd]\nbs = \"1M\"\nstart = \"99s\"\n\
         [run]\nduration = \"100s\"\nwarmup = \"0s\"\n"
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = Scenario::load_str(&toml, "t.toml", "t", &sets).unwrap();
    let mut k = Kernel::new(sc, wbsim::trace::Tracer::disabled());
    let pid = k.new_task("kworker/0:2".into(), Body::Kworker, None);
    (k, pid)
}

fn bio(k: &Kernel, pid: Pid, dev: usize, sector: u64, sectors: u64, opf: u8, tag: u32) -> Bio {
    Bio {
        dev,
        sector,
        nr_sectors: sectors,
        ino: 0,
        page_start: 0,
        npages: 0,
        submitter: pid,
        submit_time: k.now(),
        seg_sectors: 8,
        parent: None,
        remaining: 0,
        opf,
        owner: BioOwner::Dio {
            pid: pid as u32,
            tag,
        },
        io_end: None,
    }
}

fn read(k: &Kernel, pid: Pid, dev: usize, sector: u64, sectors: u64) -> Bio {
    bio(k, pid, dev, sector, sectors, REQ_READ | REQ_SYNC, 0)
}

fn write(k: &Kernel, pid: Pid, dev: usize, sector: u64, sectors: u64) -> Bio {
    bio(k, pid, dev, sector, sectors, REQ_BACKGROUND, 0)
}

/// Step until `t` (or the end of the run).
fn run_until(k: &mut Kernel, t: Ns) {
    while k.now() < t && k.step() {}
}

/// Step until device `dev` has completed `n` bios in all.
fn run_until_done(k: &mut Kernel, dev: usize, n: u64) {
    while k.devs[dev].stat.bios_completed < n {
        assert!(k.step(), "the run ended with bios in flight");
    }
}

/// The block layer's books balance on every device: bios, and requests
/// issued = completed (both directions) + in flight + waiting.
fn books_balance(k: &Kernel) {
    for (i, d) in k.devs.iter().enumerate() {
        let live = k.bios.iter().flatten().filter(|b| b.dev == i).count() as u64;
        assert_eq!(d.stat.bios_submitted, d.stat.bios_completed + live);
        let waiting = (d.tag_waiters.len() + d.wbt.waiters.len()) as u64;
        assert_eq!(
            d.stat.requests_issued,
            d.stat.ios() + d.stat.in_flight + waiting,
            "{}",
            d.name
        );
    }
}

/// A small deterministic LCG for random offsets.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }
}

/// MiB/s read and written over 1..31 s on a loop device with blk-throttle
/// caps (`sets`), with 700 MiB of 1 MiB reads and 400 MiB of 1 MiB writes
/// queued at t=0; and the MiB written by 1 s.
fn throttled(sets: &[&str]) -> (f64, f64, f64) {
    let dev = "[devices.loop0]\ntype = \"loop\"\n";
    let (mut k, pid) = machine(dev, "loop0", sets);
    for i in 0..700 {
        k.submit_bio(read(&k, pid, 0, 1_000_000 + i * 2048, 2048));
        if i < 400 {
            k.submit_bio(write(&k, pid, 0, 5_000_000 + i * 2048, 2048));
        }
    }
    run_until(&mut k, NSEC_PER_SEC);
    let (r0, w0) = (k.devs[0].stat.read_sectors, k.devs[0].stat.write_sectors);
    run_until(&mut k, 31 * NSEC_PER_SEC);
    let (r1, w1) = (k.devs[0].stat.read_sectors, k.devs[0].stat.write_sectors);
    books_balance(&k);
    let mib = |s: u64| s as f64 * 512.0 / MIB as f64;
    (mib(r1 - r0) / 30.0, mib(w1 - w0) / 30.0, mib(w0))
}

#[test]
fn blk_throttle_caps_reads_at_read_bps_on_their_own_budget() {
    let (r, w, _) = throttled(&[
        "devices.loop0.throttle.read_bps=20MiB/s",
        "devices.loop0.throttle.write_bps=10MiB/s",
    ]);
    eprintln!("read_bps 20MiB/s, write_bps 10MiB/s: reads {r:.3}, writes {w:.3} MiB/s");
    assert!((r - 20.0).abs() <= 0.2, "reads {r:.3} MiB/s, cap 20");
    assert!((w - 10.0).abs() <= 0.1, "writes {w:.3} MiB/s, cap 10");
    // a read cap alone leaves writes alone: all 400 MiB go at once
    let (r, _, w_1s) = throttled(&["devices.loop0.throttle.read_bps=20MiB/s"]);
    assert!((r - 20.0).abs() <= 0.2, "reads {r:.3} MiB/s, cap 20");
    assert_eq!(w_1s, 400.0, "uncapped writes");
    // the throttled type's read_bps is the same rule
    let dev =
        "[devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"10MiB/s\"\nread_bps = \"30MiB/s\"\n";
    let (mut k, pid) = machine(dev, "loop0", &[]);
    for i in 0..1000 {
        k.submit_bio(read(&k, pid, 0, i * 2048, 2048));
    }
    run_until(&mut k, NSEC_PER_SEC);
    let r0 = k.devs[0].stat.read_sectors;
    run_until(&mut k, 31 * NSEC_PER_SEC);
    let r = (k.devs[0].stat.read_sectors - r0) as f64 * 512.0 / MIB as f64 / 30.0;
    assert!((r - 30.0).abs() <= 0.3, "reads {r:.3} MiB/s, cap 30");
}

#[test]
fn hdd_random_4k_reads_at_queue_depth_1() {
    let dev = "[devices.sda]\ntype = \"hdd\"\n";
    let (mut k, pid) = machine(dev, "sda", &[]);
    let cap = 4u64 << 40 >> 9; // the hdd's default size, in sectors
    let mut rng = Lcg(11);
    let n = 1000;
    let t0 = k.now();
    for i in 0..n {
        let sector = (rng.next() % (cap - 8)) & !7;
        assert!(!k.submit_bio(read(&k, pid, 0, sector, 8)));
        run_until_done(&mut k, 0, i + 1);
    }
    let secs = (k.now() - t0) as f64 / NSEC_PER_SEC as f64;
    let iops = n as f64 / secs;
    // 1 / (avg_seek 8.5 ms + half a revolution at 7200 rpm, 4.17 ms)
    let want = 1.0 / (8.5e-3 + 30.0 / 7200.0);
    eprintln!("hdd random 4k reads at QD1: {iops:.1} IOPS (1/(avg_seek + half a rev): {want:.1})");
    assert!(
        (iops / want - 1.0).abs() < 0.06,
        "{iops:.1} IOPS, expected about {want:.1}"
    );
    let st = &k.devs[0].stat;
    assert_eq!((st.read_ios, st.read_sectors, st.write_ios), (n, 8 * n, 0));
    // the device was busy the whole time, one request at a time
    let busy = st.io_ticks_ns as f64 / (k.now() - t0) as f64;
    assert!(busy > 0.99, "util {busy:.3}");
    assert_eq!(st.read_ticks_ns, st.io_ticks_ns);
    books_balance(&k);
}

/// A disk with one driver slot (5 ms per 4 KiB: its IOPS cap) and room
/// for a deep queue, under `scheduler`.
fn slow_disk(scheduler: &str) -> (Kernel, Pid) {
    let dev = "[devices.sda]\ntype = \"disk\"\nqueue_depth = 1\nlatency = \"0s\"\n";
    let sched = format!("devices.sda.queue.scheduler={scheduler}");
    machine(
        dev,
        "sda",
        &[
            &sched,
            "devices.sda.queue.nr_requests=1000",
            "devices.sda.queue.wbt_lat_usec=0",
        ],
    )
}

/// Queue 200 random 4 KiB writes (1 s of work), then at 10 ms one read:
/// its latency, and the writes done by then.
fn read_behind_writes(scheduler: &str) -> (Ns, u64) {
    let (mut k, pid) = slow_disk(scheduler);
    let mut rng = Lcg(3);
    for _ in 0..200 {
        let s = (rng.next() % 1_000_000_000) & !7;
        assert!(!k.submit_bio(write(&k, pid, 0, s, 8)));
    }
    run_until(&mut k, 10 * NSEC_PER_MSEC);
    let t = k.now();
    k.submit_bio(read(&k, pid, 0, 123_456, 8));
    while k.devs[0].stat.read_ios == 0 {
        assert!(k.step());
    }
    (k.now() - t, k.devs[0].stat.write_ios)
}

#[test]
fn mq_deadline_reads_overtake_queued_writes() {
    let (dd, writes) = read_behind_writes("mq-deadline");
    let (none, nw) = read_behind_writes("none");
    eprintln!(
        "a read behind 200 queued writes: {:.1} ms (mq-deadline), {:.1} ms (none, {nw} writes first)",
        dd as f64 / 1e6,
        none as f64 / 1e6
    );
    // behind at most the write on the disk: two 5 ms transfers
    assert!(dd <= 10 * NSEC_PER_MSEC, "read latency {dd} ns");
    assert!(writes < 10, "{writes} writes done before the read");
    // without a scheduler the read waits behind the whole backlog
    let (none, writes) = read_behind_writes("none");
    assert!(none > 900 * NSEC_PER_MSEC, "read latency {none} ns");
    assert_eq!(writes, 200);
}

#[test]
fn mq_deadline_starves_writes_for_at_most_writes_starved_reads() {
    let (mut k, pid) = slow_disk("mq-deadline");
    let mut rng = Lcg(5);
    for _ in 0..60 {
        let s = (rng.next() % 1_000_000_000) & !7;
        k.submit_bio(write(&k, pid, 0, s, 8));
        let s = (rng.next() % 1_000_000_000) & !7;
        k.submit_bio(read(&k, pid, 0, s, 8));
    }
    // the order of completions: R or W
    let mut order = String::new();
    let (mut r, mut w) = (0, 0);
    while k.devs[0].stat.ios() < 120 {
        assert!(k.step());
        let st = &k.devs[0].stat;
        for _ in r..st.read_ios {
            order.push('R');
        }
        for _ in w..st.write_ios {
            order.push('W');
        }
        (r, w) = (st.read_ios, st.write_ios);
    }
    // the first write went to the disk before anything else was queued;
    // then two reads per write while both wait, then the writes left over
    assert!(order.starts_with("WRRWRRWRRW"), "{order}");
    let both = &order[1..90];
    assert!(
        !both.contains("RRR") && !both.contains("WW"),
        "{order}: writes_starved = 2"
    );
    assert!(order.ends_with(&"W".repeat(30)), "{order}");
    books_balance(&k);
}

#[test]
fn reads_expire_after_read_expire() {
    // reads in sector order, then an old read at a low sector: once it has
    // waited 500 ms it goes before the sweep's next
    let (mut k, pid) = slow_disk("mq-deadline");
    k.submit_bio(read(&k, pid, 0, 1_000_000, 8)); // on the disk
    k.submit_bio(read(&k, pid, 0, 10, 8)); // behind the sweep: waits
    for i in 0..150 {
        k.submit_bio(read(&k, pid, 0, 2_000_000 + i * 1000, 8));
    }
    // 150 reads in sweep order take 750 ms; the one at sector 10 would be
    // last without its expiry. Watch the scheduler's queue for it.
    let low = |k: &Kernel| {
        k.devs[0]
            .sched
            .waiting
            .iter()
            .any(|&r| k.reqs[r].as_ref().unwrap().sector == 10)
    };
    while low(&k) {
        assert!(k.step());
    }
    let done = k.devs[0].stat.read_ios;
    // dispatched after ~100 reads (500 ms at 5 ms each), not 151
    assert!((99..=103).contains(&done), "{done} reads done before it");
}

#[test]
fn reads_and_writes_never_merge() {
    let (mut k, pid) = slow_disk("mq-deadline");
    // in a plug: a write, then an adjacent read, then a read adjacent to it
    assert!(k.blk_start_plug(pid));
    k.submit_bio(write(&k, pid, 0, 0, 8));
    k.submit_bio(read(&k, pid, 0, 8, 8));
    k.submit_bio(read(&k, pid, 0, 16, 8));
    k.submit_bio(write(&k, pid, 0, 24, 8));
    let plugged: Vec<(u64, u64, bool)> = k.tasks[pid]
        .plug
        .as_ref()
        .unwrap()
        .reqs
        .iter()
        .map(|&r| {
            let r = k.reqs[r].as_ref().unwrap();
            (r.sector, r.nr_sectors, r.is_read())
        })
        .collect();
    assert_eq!(
        plugged,
        vec![(0, 8, false), (8, 16, true), (24, 8, false)],
        "plug merges keep to one direction"
    );
    k.blk_finish_plug(pid, true);
    assert_eq!(k.devs[0].stat.read_merges, 1);
    assert_eq!(k.devs[0].stat.write_merges, 0);
    // in the scheduler: the write at 0 is on the disk; the read at 8..24
    // and the write at 24 wait (the write did not join the read at
    // insertion); bios merge only into requests of their own direction
    let waiting = |k: &Kernel| k.devs[0].sched.waiting.len();
    assert_eq!(waiting(&k), 2);
    k.submit_bio(write(&k, pid, 0, 32, 8)); // back merge into the write
    k.submit_bio(read(&k, pid, 0, 40, 8)); // after the write: no merge
    k.submit_bio(write(&k, pid, 0, 100, 8));
    k.submit_bio(read(&k, pid, 0, 92, 8)); // before a write: no front merge
    k.submit_bio(read(&k, pid, 0, 0, 8)); // front merge into the read at 8
    assert_eq!(waiting(&k), 5);
    assert_eq!(k.devs[0].stat.read_merges, 2);
    assert_eq!(k.devs[0].stat.write_merges, 1);
    // an insert merge keeps to its direction too: a plugged write at 48
    // continues the waiting read at 40..48, and joins nothing
    k.blk_start_plug(pid);
    k.submit_bio(write(&k, pid, 0, 48, 8));
    k.blk_finish_plug(pid, true);
    assert_eq!(waiting(&k), 6, "a write does not join a read");
    assert_eq!(k.devs[0].stat.write_merges, 1);
    run_until(&mut k, NSEC_PER_SEC);
    books_balance(&k);
    assert_eq!(k.devs[0].stat.ios(), 7);
}

#[test]
fn wbt_lets_reads_pass_without_a_token() {
    // qd 16, 64 tags: wbt's limits 16/8/4
    let dev = "[devices.sda]\ntype = \"disk\"\nqueue_depth = 16\n";
    let (mut k, pid) = machine(
        dev,
        "sda",
        &[
            "devices.sda.queue.wbt_lat_usec=75000",
            "devices.sda.queue.nr_requests=64",
        ],
    );
    k.wbs[0].dirty_sleep = 0; // no dirtier slept recently
    for i in 0..4 {
        assert!(!k.submit_bio(write(&k, pid, 0, i * 100, 8)));
    }
    assert!(k.submit_bio(write(&k, pid, 0, 1000, 8)), "the fifth waits");
    assert_eq!(k.devs[0].wbt.waiters.len(), 1);
    // a read behind the waiting write takes a tag at once, and no token
    assert!(!k.submit_bio(read(&k, pid, 0, 5000, 8)));
    assert_eq!(k.devs[0].wbt.inflight, 4);
    assert_eq!(k.devs[0].tags_used, 5);
    run_until(&mut k, NSEC_PER_SEC);
    assert_eq!((k.devs[0].stat.read_ios, k.devs[0].stat.write_ios), (1, 5));
    assert_eq!(k.devs[0].wbt.inflight, 0);
    books_balance(&k);
}

#[test]
fn raid0_remaps_reads() {
    let devs = "[devices.ssd0]\ntype = \"ssd\"\n[devices.ssd1]\ntype = \"ssd\"\n\
                [devices.md0]\ntype = \"raid0\"\nmembers = [\"ssd0\", \"ssd1\"]\n";
    let (mut k, pid) = machine(devs, "md0", &[]);
    let dev = |k: &Kernel, n: &str| k.devs.iter().position(|d| d.name == n).unwrap();
    let md0 = dev(&k, "md0");
    // 1 MiB at 0 over 512 KiB chunks: one read on each member
    k.submit_bio(read(&k, pid, md0, 0, 2048));
    run_until_done(&mut k, md0, 1);
    for m in ["ssd0", "ssd1"] {
        let st = &k.devs[dev(&k, m)].stat;
        assert_eq!((st.read_ios, st.read_sectors, st.write_ios), (1, 1024, 0));
    }
    let md = &k.devs[md0].stat;
    assert_eq!((md.read_ios, md.read_sectors, md.in_flight), (1, 2048, 0));
    // 512 KiB on a member: 50 us + 524288 x 4 / 550 MB/s = 3.863 ms
    assert!(
        (3_850_000..3_900_000).contains(&md.read_ticks_ns),
        "{} ns",
        md.read_ticks_ns
    );
    books_balance(&k);
}

#[test]
fn ssd_reads_take_the_flash_read_time() {
    let (mut k, pid) = machine("[devices.sda]\ntype = \"ssd\"\n", "sda", &[]);
    let t = k.now();
    k.submit_bio(read(&k, pid, 0, 8, 8));
    run_until_done(&mut k, 0, 1);
    // 50 us + 4096 x 4 / 550 MB/s
    assert_eq!(k.now() - t, 79_790);
    assert_eq!(k.devs[0].stat.read_ticks_ns, 79_790);
}

#[test]
fn io_ticks_count_the_time_with_requests_in_flight() {
    let (mut k, pid) = slow_disk("none");
    // two overlapping reads (5 ms each, one after the other on the disk),
    // then idle, then one more
    k.submit_bio(read(&k, pid, 0, 0, 8));
    k.submit_bio(read(&k, pid, 0, 800, 8));
    run_until(&mut k, 100 * NSEC_PER_MSEC);
    k.submit_bio(read(&k, pid, 0, 1600, 8));
    run_until_done(&mut k, 0, 3);
    let st = &k.devs[0].stat;
    assert_eq!(st.io_ticks_ns, 15 * NSEC_PER_MSEC);
    // time in queue: 5 + 10 + 5 ms
    assert_eq!(st.time_in_queue_ns(), 20 * NSEC_PER_MSEC);
}

#[test]
fn summary_shows_reads_only_for_a_device_that_read() {
    let devs = "[devices.sda]\ntype = \"ssd\"\n[devices.sdb]\ntype = \"ssd\"\n\
                [filesystems.g]\ndevice = \"sdb\"\nmetadata = false\n";
    let (mut k, pid) = machine(devs, "sda", &["jobs.dd.filesystem=f"]);
    for i in 0..100 {
        k.submit_bio(read(&k, pid, 0, i * 8, 8));
    }
    k.submit_bio(write(&k, pid, 1, 0, 8));
    run_until(&mut k, 200 * NSEC_PER_SEC);
    let s = wbsim::metrics::Summary::compute(&k.observations(Default::default()));
    let json = serde_json::to_value(&s).unwrap();
    let dev = |n: &str| {
        json["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == n)
            .unwrap()
            .clone()
    };
    // 100 reads of 4 KiB over the 100 s run
    let a = dev("sda");
    assert_eq!(a["read_iops"], 1.0);
    assert_eq!(a["avg_read_request_kib"], 4.0);
    assert!(a.get("read_mib_s").is_some() && a.get("read_merges_s").is_some());
    let b = dev("sdb");
    assert!(b.get("read_iops").is_none() && b.get("read_mib_s").is_none());
    assert_eq!(b["write_iops"], 0.01);
}

#[test]
fn mq_deadline_tunables_are_its_sysfs_keys() {
    // writes_starved = 0: a waiting write goes before any read
    let (mut k, pid) = machine(
        "[devices.sda]\ntype = \"disk\"\nqueue_depth = 1\n",
        "sda",
        &[
            "devices.sda.queue.nr_requests=1000",
            "devices.sda.queue.iosched.writes_starved=0",
            "devices.sda.queue.iosched.read_expire=100",
        ],
    );
    let tun = k.devs[0].sched.tun;
    assert_eq!(tun.read_expire, 100 * NSEC_PER_MSEC);
    assert_eq!(tun.write_expire, 5000 * NSEC_PER_MSEC);
    for i in 0..10 {
        k.submit_bio(write(&k, pid, 0, 10_000 + i * 100, 8));
        k.submit_bio(read(&k, pid, 0, 50_000 + i * 100, 8));
    }
    while k.devs[0].stat.write_ios < 10 {
        assert!(k.step());
    }
    assert_eq!(k.devs[0].stat.read_ios, 0, "the writes went first");
    // the keys belong to mq-deadline
    let toml = "[devices.sda]\ntype = \"ssd\"\nqueue.iosched.read_expire = 100\n\
                [filesystems.f]\ndevice = \"sda\"\n[jobs.dd]\nbs = \"1M\"\n";
    let e = Scenario::load_str(toml, "t.toml", "t", &[]).unwrap_err();
    let m = e.to_string();
    assert!(
        m.starts_with("t.toml:3: ")
            && m.contains("`queue.iosched.read_expire` on a queue whose scheduler is `none`"),
        "{m}"
    );
}
