//! Every scenario key, documented once. `wbsim help [KEY]` prints entries
//! from this table, docs/scenario.md is its Markdown form (`wbsim help
//! --markdown`), and the parser's "unknown key" hint lists its keys. The
//! tests below check that every key the parser reads has an entry and that
//! every entry's example is accepted.
//!
//! A key is a dotted path. Upper-case segments are placeholders for a name
//! the scenario chooses: `devices.NAME.write_bps` is `devices.loop0.write_bps`
//! for a device called `loop0`, `fidelity.tolerance.METRIC` names a metric.
//! Measured figures do not belong here; they go to docs/validation.md.

/// One scenario key.
#[derive(Debug)]
pub struct KeyDoc {
    /// The dotted path, with placeholders: `devices.NAME.write_bps`.
    pub key: &'static str,
    /// The value when the key is not set ("—": none; "required": it must be).
    pub default: &'static str,
    /// The device or job types the key applies to (`throttled`, `disk, ssd`,
    /// `dd`); None: every one.
    pub applies_to: Option<&'static str>,
    /// A valid TOML value for the key.
    pub example: &'static str,
    /// What the key sets, in one short line.
    pub doc: &'static str,
}

const fn k(
    key: &'static str,
    default: &'static str,
    applies_to: Option<&'static str>,
    example: &'static str,
    doc: &'static str,
) -> KeyDoc {
    KeyDoc {
        key,
        default,
        applies_to,
        example,
        doc,
    }
}

const ALL: Option<&str> = None;
const THROTTLED: Option<&str> = Some("throttled");
const DISK: Option<&str> = Some("disk");
const SSD: Option<&str> = Some("ssd");
const HDD: Option<&str> = Some("hdd");
const RAID0: Option<&str> = Some("raid0");
const BCACHE: Option<&str> = Some("bcache");
const EXT4: Option<&str> = Some("ext4");
const DD: Option<&str> = Some("dd");
const FIO: Option<&str> = Some("fio");
const FS_MARK_SIMOOP: Option<&str> = Some("fs_mark, simoop");

#[rustfmt::skip]
pub const KEYS: &[KeyDoc] = &[
    k("name", "the file name", ALL, "\"my-run\"", "scenario name in outputs"),
    // machine
    k("machine.memory", "16G", ALL, "\"16G\"", "RAM"),
    k("machine.cpus", "4", ALL, "2", "CPUs (the run queue and per-CPU counters)"),
    k("machine.hz", "250", ALL, "1000", "CONFIG_HZ: 100, 250, 300 or 1000"),
    k("machine.page_size", "4k", ALL, "\"4k\"", "page size; only 4096"),
    k("machine.anon", "memory/32", ALL, "\"512M\"", "memory that is neither free nor page cache"),
    k("machine.reserve", "the zones' totalreserve_pages", ALL, "\"64M\"", "`totalreserve_pages` in bytes for the dirty limits only, instead of the zones'"),
    k("machine.zones.NAME.managed", "derived from memory (present, managed_boot)", ALL, "772915", "NAME: dma, dma32, normal, movable or device; its managed pages (zoneinfo). Any zone given: the zones are explicit, the others empty (docs/validation.md)"),
    k("machine.zones.NAME.present", "the zone's managed", ALL, "782336", "the zone's present pages (zoneinfo)"),
    k("machine.zones.NAME.spanned", "the zone's present", ALL, "1044480", "the zone's spanned pages (zoneinfo)"),
    k("machine.zones.NAME.managed_boot", "the zone's managed", ALL, "216874", "managed pages when 6.1 set the watermarks at boot: `managed` less what dmesg's later `Freeing initrd`/`Freeing unused` lines free"),
    k("machine.zones.movable_min_like_highmem", "false", ALL, "true", "ZONE_MOVABLE's MIN as highmem's (managed/1024 in 32..128), as the host rig's 6.18 shows; 6.1 gives it its share"),
    k("machine.thp", "always", ALL, "\"madvise\"", "transparent_hugepage/enabled: with `always` or `madvise` khugepaged raises min_free_kbytes"),
    k("machine.cost.reclaim_per_page", "500ns", ALL, "\"1us\"", "per page scanned by kswapd or direct reclaim"),
    k("machine.host_backed_free", "all of it", ALL, "\"180M\"", "free memory the hypervisor still backs at the start; each new page beyond it costs `machine.cost.host_fault` (`live --probe-host` measures both)"),
    k("machine.sched", "fifo", ALL, "\"eevdf\"", "CPU scheduler: `fifo` (one run queue, round-robin slices of `machine.cost.sched_slice`) or `eevdf` (Linux 6.6+ EEVDF at nice 0, PREEMPT_NONE)"),
    k("machine.autogroup", "unset (off)", ALL, "true", "`kernel.sched_autogroup_enabled` (true/false or 1/0): the workload shares one task group, which kernel threads compete with as a whole"),
    k("machine.sched_base_slice", "700us", ALL, "\"750us\"", "`eevdf`: `sysctl_sched_base_slice` (debugfs sched/base_slice_ns; 750us in the first EEVDF kernels), scaled by 1 + ilog2(min(cpus, 8))"),
    k("machine.cost.syscall", "500ns", ALL, "\"2us\"", "CPU time per system call"),
    k("machine.cost.copy_per_kib", "80ns", ALL, "\"100ns\"", "user↔kernel copy per KiB"),
    k("machine.cost.page_cache_insert", "300ns", ALL, "\"900ns\"", "per page added to the page cache"),
    k("machine.cost.host_fault", "0s", ALL, "\"15us\"", "per page allocated once `machine.host_backed_free` is used up (0 on bare metal)"),
    k("machine.cost.page_fault", "2us", ALL, "\"1500ns\"", "an anonymous page's first touch (`do_anonymous_page`) beyond its zeroing; charged per page simoop faults in (this host, a VM: 2.3-2.7 µs a 4 KiB fault in all)"),
    k("machine.cost.cache_miss", "0s", ALL, "\"120ns\"", "a cold cache line in a lookup at a random page: 2 an xarray level, 1 an ext4 extent-status node (rig: 120ns)"),
    k("machine.cost.writeback_per_page", "150ns", ALL, "\"200ns\"", "flusher work per page written back"),
    k("machine.cost.bio_submit", "2us", ALL, "\"3us\"", "per bio built and submitted"),
    k("machine.cost.file_create", "15us", ALL, "\"20us\"", "creating a file (inode and directory entry: open with O_CREAT)"),
    k("machine.cost.writepages_inode", "5us", ALL, "\"15us\"", "flusher: per inode's ->writepages call (mapping, block allocation)"),
    k("machine.cost.rq_dispatch", "5us", ALL, "\"20us\"", "issuing one request to a driver, charged to the task that issues it"),
    k("machine.cost.bdp_call", "1us", ALL, "\"2us\"", "per balance_dirty_pages call"),
    k("machine.cost.fio_io", "500ns", ALL, "\"1us\"", "fio's user-space work per IO (io_u setup, offsets, completion accounting; fio 3.33: 0.6 µs user a 4k psync write)"),
    k("machine.cost.wakeup", "3us", ALL, "\"5us\"", "a wakeup and switch-in"),
    k("machine.cost.wakeup_jitter", "30us", ALL, "\"50us\"", "a tick's timer softirq runs up to this late (seeded PRNG)"),
    k("machine.cost.fork", "0s", ALL, "\"4ms\"", "CPU time a job's launcher spends starting each dd writer, one after another (0: all start at once)"),
    k("machine.cost.spread", "0", ALL, "30", "percent (0–90): each CPU burst of a workload task costs its estimate times a factor drawn from 1 ± spread/100"),
    k("machine.cost.scale", "1", ALL, "48", "the default of every CPU cost of work times this (0.01–1000), for a CPU this much slower; costs given stand as given"),
    k("machine.cost.sched_slice", "3ms", ALL, "\"4ms\"", "`fifo`: slice before a busy task is preempted"),
    // vm sysctls
    k("vm.dirty_ratio", "20", ALL, "20", "sysctl, percent of dirtyable memory"),
    k("vm.dirty_bytes", "0 (unset: vm.dirty_ratio applies)", ALL, "\"200M\"", "sysctl: at least 2 pages, as the kernel requires; setting vm.dirty_ratio unsets it"),
    k("vm.dirty_background_ratio", "10", ALL, "10", "sysctl"),
    k("vm.dirty_background_bytes", "0 (unset: vm.dirty_background_ratio applies)", ALL, "\"100M\"", "sysctl: at least 1, as the kernel requires; setting vm.dirty_background_ratio unsets it"),
    k("vm.dirty_expire_centisecs", "3000", ALL, "3000", "sysctl"),
    k("vm.dirty_writeback_centisecs", "500", ALL, "500", "sysctl (0 disables periodic writeback)"),
    k("vm.min_free_kbytes", "the kernel's (sqrt(16 × lowmem KiB), THP's raise)", ALL, "67584", "sysctl written after boot: MIN watermarks' total in KiB"),
    k("vm.watermark_scale_factor", "10", ALL, "100", "sysctl (1..3000): the LOW−MIN and HIGH−LOW gaps in 1/10000 of a zone (at least MIN/4)"),
    k("vm.vfs_cache_pressure", "100", ALL, "200", "sysctl: the superblock shrinkers report their dentries, inodes and XFS reclaimable inodes scaled by this percent"),
    k("vm.shrinker_arith", "priority", ALL, "\"lru-ratio\"", "`do_shrink_slab`'s arithmetic: `priority` (4.16+: freeable >> priority) or `lru-ratio` (≤ 4.15: LRU pages scanned over the LRU's size)"),
    k("vm.lowmem_reserve_ratio", "\"256 256 32 0 0\"", ALL, "\"256 256 32 0 0\"", "sysctl: per lower zone, the ratio of higher zones' pages it keeps back (zoneinfo's protection)"),
    // devices
    k("devices.NAME.type", "required", ALL, "\"ssd\"", "`loop` (a loop device over a store that completes at once), `throttled` (a loop device with a write cap), `disk`, `ssd`, `hdd`, `raid0` or `bcache`"),
    k("devices.NAME.write_bps", "required", THROTTLED, "\"50MiB/s\"", "the loop device's write cap: its `throttle.write_bps`"),
    k("devices.NAME.read_bps", "none (no cap)", THROTTLED, "\"100MiB/s\"", "the loop device's read cap: its `throttle.read_bps`"),
    k("devices.NAME.backing", "none (loop, throttled); required (bcache)", Some("loop, throttled, bcache"), "\"tmpfs\"", "loop: `tmpfs` (a loop worker copies requests into tmpfs pages on a CPU) or `none`; bcache: the backing device's name"),
    k("devices.NAME.throttle.write_bps", "none (no cap)", ALL, "\"20MiB/s\"", "blk-throttle's write cap on the queue, any type (`blkio.throttle.write_bps_device`, `io.max` `wbps`)"),
    k("devices.NAME.throttle.read_bps", "none (no cap)", ALL, "\"20MiB/s\"", "blk-throttle's read cap on the queue, any type (`io.max` `rbps`), on a budget of its own"),
    k("devices.NAME.bandwidth", "150MiB/s (disk), 500MB/s (ssd)", Some("disk, ssd"), "\"200MiB/s\"", "data rate"),
    k("devices.NAME.iops", "200", DISK, "500", "IOPS cap"),
    k("devices.NAME.latency", "4ms", DISK, "\"2ms\"", "completion latency"),
    k("devices.NAME.queue_depth", "32", DISK, "64", "driver slots"),
    k("devices.NAME.channels", "4", SSD, "8", "parallel flash channels"),
    k("devices.NAME.per_io", "40us", SSD, "\"20us\"", "fixed cost of a write on a channel (the defaults: a SATA SSD, ~55k random 4 KiB write IOPS)"),
    k("devices.NAME.write_cache", "true", Some("ssd, hdd"), "false", "volatile write cache"),
    k("devices.NAME.cache", "64M (ssd, hdd); required (bcache)", Some("ssd, hdd, bcache"), "\"32M\"", "ssd, hdd: write cache size; bcache: the cache device's name"),
    k("devices.NAME.flush_bandwidth", "500MB/s", SSD, "\"400MB/s\"", "write cache drain rate"),
    k("devices.NAME.read_latency", "50us", SSD, "\"80us\"", "fixed cost of a read on a channel (flash tR and the command; the defaults: a SATA SSD, ~12.5k 4 KiB read IOPS at depth 1)"),
    k("devices.NAME.read_bandwidth", "550MB/s (ssd); none (disk)", Some("disk, ssd"), "\"3GB/s\"", "read rate: an ssd's, over its channels; a disk's own read pipe (`bandwidth` then the writes', as under qemu's bps-write)"),
    k("devices.NAME.rpm", "7200", HDD, "5400", "spindle speed; a non-sequential request waits half a revolution"),
    k("devices.NAME.avg_seek", "8.5ms", HDD, "\"9ms\"", "average seek (track_to_track ≤ avg_seek ≤ full_stroke)"),
    k("devices.NAME.track_to_track", "1ms", HDD, "\"0.8ms\"", "shortest seek"),
    k("devices.NAME.full_stroke", "16ms", HDD, "\"18ms\"", "seek across the whole disk"),
    k("devices.NAME.media_rate_outer", "200MB/s", HDD, "\"180MB/s\"", "media rate at the first sector (linear in between)"),
    k("devices.NAME.media_rate_inner", "100MB/s", HDD, "\"90MB/s\"", "media rate at the last sector (≤ outer)"),
    k("devices.NAME.per_cmd_overhead", "100us", HDD, "\"50us\"", "controller time per command"),
    k("devices.NAME.members", "required", RAID0, "[\"ssd0\", \"ssd1\"]", "member devices: at least two unused `ssd`, `hdd` or `disk` devices"),
    k("devices.NAME.chunk", "512k", RAID0, "\"256k\"", "stripe chunk (a power of two ≥ 4k)"),
    k("devices.NAME.bucket_size", "512k", BCACHE, "\"1M\"", "the cache's bucket (make-bcache --bucket): a power of two in 4k..=16M"),
    k("devices.NAME.cache_mode", "writethrough", BCACHE, "\"writeback\"", "sysfs `cache_mode`: `writethrough`, `writeback`, `writearound` or `none`"),
    k("devices.NAME.writeback_percent", "10", BCACHE, "2", "sysfs `writeback_percent`: the dirty target, percent of the cache (0..=cutoff_writeback; 0: writeback at full speed)"),
    k("devices.NAME.writeback_delay", "30", BCACHE, "0", "sysfs `writeback_delay`: seconds the writeback thread sleeps after a pass over the whole index"),
    k("devices.NAME.writeback_running", "true", BCACHE, "false", "sysfs `writeback_running`"),
    k("devices.NAME.writeback_rate_update_seconds", "5", BCACHE, "10", "sysfs `writeback_rate_update_seconds` (1..=60): the controller's period"),
    k("devices.NAME.writeback_rate_p_term_inverse", "40", BCACHE, "20", "sysfs `writeback_rate_p_term_inverse`: the excess over the target is retired in this many seconds"),
    k("devices.NAME.writeback_rate_i_term_inverse", "10000", BCACHE, "5000", "sysfs `writeback_rate_i_term_inverse`"),
    k("devices.NAME.writeback_rate_minimum", "8", BCACHE, "16", "sysfs `writeback_rate_minimum` (sectors/s)"),
    k("devices.NAME.writeback_consider_fragment", "true", BCACHE, "false", "sysfs `writeback_consider_fragment` (5.12): the fragmentation term; false is the kernel before 5.12"),
    k("devices.NAME.writeback_rate_fp_term_low", "1", BCACHE, "1", "sysfs `writeback_rate_fp_term_low` (in_use 50..57%; low < mid < high; the 5.12 posting had 1/5/50)"),
    k("devices.NAME.writeback_rate_fp_term_mid", "10", BCACHE, "5", "sysfs `writeback_rate_fp_term_mid` (in_use 57..64%)"),
    k("devices.NAME.writeback_rate_fp_term_high", "1000", BCACHE, "50", "sysfs `writeback_rate_fp_term_high` (in_use above 64%)"),
    k("devices.NAME.sequential_cutoff", "4194304", BCACHE, "0", "sysfs `sequential_cutoff` (bytes): a task's stream this long bypasses the cache; 0: never"),
    k("devices.NAME.congested_read_threshold_us", "2000", BCACHE, "0", "the cache set's `congested_read_threshold_us`: cache reads slower than this make it congested (0 and the write one 0: off)"),
    k("devices.NAME.congested_write_threshold_us", "20000", BCACHE, "0", "the cache set's `congested_write_threshold_us`"),
    k("devices.NAME.cutoff_writeback", "40", BCACHE, "50", "module parameter `bch_cutoff_writeback` (1..=70): above this in_use only sync and metadata writes are cached dirty"),
    k("devices.NAME.cutoff_writeback_sync", "70", BCACHE, "80", "module parameter `bch_cutoff_writeback_sync` (cutoff_writeback..=90): above this in_use no write is cached dirty"),
    k("devices.NAME.idle_max_writeback_rate", "true", BCACHE, "false", "the cache set's `idle_max_writeback_rate`: after 6 idle updates writeback runs at the maximum rate"),
    k("devices.NAME.devno", "7:N (loop, throttled), 8:16N (disk, ssd, hdd), 9:N (raid0), 252:128N (bcache)", ALL, "\"8:0\"", "major:minor, also the bdi name in traces"),
    k("devices.NAME.size", "1T (hdd: 4T)", ALL, "\"5G\"", "capacity"),
    k("devices.NAME.queue.max_sectors_kb", "min(max_hw_sectors_kb, 1280)", ALL, "512", "sysfs `queue/max_sectors_kb`: bios are split at it"),
    k("devices.NAME.queue.max_hw_sectors_kb", "1280 (loop, throttled), 32767 (others)", ALL, "2048", "sysfs `queue/max_hw_sectors_kb`"),
    k("devices.NAME.queue.max_segments", "128", ALL, "256", "sysfs `queue/max_segments`"),
    k("devices.NAME.queue.scheduler", "mq-deadline (disk, hdd), none (others)", ALL, "\"mq-deadline\"", "sysfs `queue/scheduler`: `none`, `mq-deadline`, `bfq` (6.1, no weight raising) or `cfq` (2.6.38–4.x); bfq and cfq need a disk or hdd"),
    k("devices.NAME.queue.nr_requests", "128 (loop, throttled); 2 × min(depth, 128) with mq-deadline, else the depth (disk: queue_depth, hdd: 32); 32 (ssd, raid0)", ALL, "64", "sysfs `queue/nr_requests`: tags; a submitter sleeps when none is free"),
    k("devices.NAME.queue.read_ahead_kb", "128", ALL, "512", "sysfs `queue/read_ahead_kb` (the bdi's `ra_pages`): the largest readahead window; fio's sequential jobs double it (POSIX_FADV_SEQUENTIAL)"),
    k("devices.NAME.queue.wbt_lat_usec", "io-less: 2000 (loop, throttled, ssd), 75000 (disk, hdd), 0 (raid0); older policies: 0", ALL, "0", "sysfs `queue/wbt_lat_usec`: wbt's latency target; 0 turns wbt off"),
    k("devices.NAME.queue.iosched.read_expire", "500", ALL, "250", "mq-deadline's `read_expire` (ms): a read waiting this long goes next; `iosched` keys need mq-deadline"),
    k("devices.NAME.queue.iosched.write_expire", "5000", ALL, "1000", "mq-deadline's `write_expire` (ms): the same for a write"),
    k("devices.NAME.queue.iosched.slice_idle", "8", ALL, "0", "BFQ's and CFQ's `slice_idle` (ms): how long an emptied sync queue is waited for"),
    k("devices.NAME.queue.iosched.slice_idle_us", "8000", ALL, "0", "BFQ's `slice_idle_us`: `slice_idle` in µs"),
    k("devices.NAME.queue.iosched.timeout_sync", "125", ALL, "250", "BFQ's `timeout_sync` (ms): the budget timeout of a queue in service"),
    k("devices.NAME.queue.iosched.max_budget", "0 (auto: 16384)", ALL, "8192", "BFQ's `max_budget` (sectors); 0 keeps the default (the peak-rate estimate is not modelled)"),
    k("devices.NAME.queue.iosched.back_seek_max", "16384", ALL, "0", "BFQ's and CFQ's `back_seek_max` (KiB): how far back a request may be taken as next"),
    k("devices.NAME.queue.iosched.back_seek_penalty", "2", ALL, "1", "BFQ's and CFQ's `back_seek_penalty`: a backward distance counts this many times"),
    k("devices.NAME.queue.iosched.fifo_expire_sync", "125", ALL, "250", "BFQ's and CFQ's `fifo_expire_sync` (ms): a sync request waiting this long goes next in its queue"),
    k("devices.NAME.queue.iosched.fifo_expire_async", "250", ALL, "500", "BFQ's and CFQ's `fifo_expire_async` (ms)"),
    k("devices.NAME.queue.iosched.low_latency", "0", ALL, "0", "BFQ's `low_latency`: weight raising is not modelled, only 0 is accepted"),
    k("devices.NAME.queue.iosched.slice_sync", "100", ALL, "50", "CFQ's `slice_sync` (ms): a sync queue's slice"),
    k("devices.NAME.queue.iosched.slice_async", "40", ALL, "20", "CFQ's `slice_async` (ms): an async queue's slice"),
    k("devices.NAME.queue.iosched.group_idle", "8", ALL, "0", "CFQ's `group_idle` (ms, 2.6.37+): a group's only queue stays in service while the group has requests in flight"),
    k("devices.NAME.queue.iosched.quantum", "8", ALL, "4", "CFQ's `quantum`: requests a queue may have in flight while others are busy"),
    k("devices.NAME.queue.cfq.async_in_root", "true", ALL, "false", "CFQ's async queues: `true` all in the root group (2011, before TerAvest's patches), `false` per cgroup with per-cgroup request lists (after)"),
    k("devices.NAME.io.cost.qos", "enable=0", ALL, "\"enable=1 min=100 max=100\"", "io.cost: the root's `io.cost.qos` line without MAJ:MIN; `enable=1` with a fixed vrate (`min` = `max`, %)"),
    k("devices.NAME.io.cost.model", "ctrl=auto", ALL, "\"ctrl=user rbps=1e8 rseqiops=2e4 rrandiops=200 wbps=1e8 wseqiops=2e4 wrandiops=200\"", "io.cost's linear model, the root's `io.cost.model` line without MAJ:MIN; `ctrl=auto`: the kernel's for the device's kind"),
    k("devices.NAME.queue.iosched.writes_starved", "2", ALL, "1", "mq-deadline's `writes_starved`: reads chosen over waiting writes before a write goes"),
    k("devices.NAME.bdi.min_ratio", "0", ALL, "10", "sysfs `/sys/class/bdi/*/min_ratio`"),
    k("devices.NAME.bdi.max_ratio", "100", ALL, "50", "sysfs `/sys/class/bdi/*/max_ratio`"),
    k("devices.NAME.bdi.strict_limit", "false", ALL, "true", "sysfs `strict_limit` (BDI_CAP_STRICTLIMIT; true/false or 1/0)"),
    k("devices.NAME.bdi.write_bandwidth", "100MiB/s (INIT_BW)", ALL, "\"50MiB/s\"", "the bdi's starting write bandwidth estimate (the kernel keeps it across runs on one device)"),
    k("devices.NAME.bdi.dirty_ratelimit", "100MiB/s (INIT_BW)", ALL, "\"10MiB/s\"", "the bdi's starting dirty_ratelimit (kept across runs, as the bandwidth)"),
    // filesystems
    k("filesystems.NAME.type", "ext4", ALL, "\"xfs\"", "`ext4` or `xfs`"),
    k("filesystems.NAME.device", "required", ALL, "\"loop0\"", "the device it is on"),
    k("filesystems.NAME.agcount", "4", ALL, "8", "allocation groups: each fs_mark directory allocates from its own"),
    k("filesystems.NAME.metadata", "true", ALL, "false", "model the metadata IO: ext4's jbd2 journal and in-place writes, XFS's log and xfsaild"),
    k("filesystems.NAME.inode_reclaim", "non-blocking", Some("xfs"), "\"sync-wait\"", "XFS's inode shrinker: `non-blocking` (5.9+, dirty inodes skipped) or `sync-wait` (≤ 5.8: per-AG lock, synchronous flush, the reclaimer asleep)"),
    k("filesystems.NAME.commit", "5s", EXT4, "\"10s\"", "ext4's `commit=` mount option (at least 1s)"),
    k("filesystems.NAME.journal_size", "mke2fs's default (128M for 16G, 1G from 128G)", EXT4, "\"64M\"", "journal size (4M up to a quarter of the device)"),
    k("filesystems.NAME.max_folio", "2M (io-less), 4k (older policies)", ALL, "\"4k\"", "largest page-cache folio a write creates: the throttle is checked once per min(bs, max_folio)"),
    // jobs
    k("jobs.NAME.type", "the name, if it starts with `dd` or is `fs_mark` or `fsmark`", ALL, "\"dd\"", "`dd`, `fs_mark`, `fio` or `simoop`"),
    k("jobs.NAME.filesystem", "the only one", ALL, "\"scratch\"", "where the files go"),
    k("jobs.NAME.start", "0s", ALL, "\"5s\"", "when the writers start"),
    k("jobs.NAME.numjobs", "1", DD, "10", "writers, one file each (at most 100000; docs/scenario.md, Caps)"),
    k("jobs.NAME.bs", "512", DD, "\"1M\"", "block size (a multiple of 512, up to 64M)"),
    k("jobs.NAME.size", "no limit", DD, "\"1G\"", "bytes per writer"),
    k("jobs.NAME.runtime", "to the end", DD, "\"20s\"", "how long the writers write"),
    k("jobs.NAME.args", "required", FS_MARK_SIMOOP, "\"-d /mnt/0 -S0 -n 1000 -s 4096 -L 2\"", "fs_mark's flags (`-d DIR` a thread each, `-D`, `-n`, `-s`, `-S0`, `-L`, `-t`; Caps above); simoop's flags, then directories that name filesystems"),
    k("jobs.NAME.file", "one of file, job, cmdline", FIO, "\"examples/seed-003/writers.fio\"", "an fio job file (relative to the scenario file); each of its jobs runs, its files on `filesystem`"),
    k("jobs.NAME.job", "one of file, job, cmdline", FIO, "\"[w]\\nrw=write\\nsize=64m\\n\"", "an fio job file's text, inline (a TOML multi-line string)"),
    k("jobs.NAME.cmdline", "one of file, job, cmdline", FIO, "\"--name=w --rw=randwrite --bs=4k --size=64m\"", "fio's command-line job options (`--name=` starts a job)"),
    k("jobs.NAME.section", "every section", FIO, "\"w\"", "the sections to run, comma-separated (`fio --section`)"),
    k("jobs.NAME.cgroup", "the root", ALL, "\"A\"", "the cgroup the job's tasks run in, a `[cgroups.NAME]` (fio's `cgroup=` joins one if it is defined)"),
    // cgroups (v2, one level under the root)
    k("cgroups.NAME.memory.max", "max", ALL, "\"512M\"", "the memcg's hard limit (size or \"max\"): its headroom caps its dirtyable memory (`mdtc`); over it the charging task reclaims its clean cache"),
    k("cgroups.NAME.memory.high", "max", ALL, "\"384M\"", "the memcg's high limit (a size or \"max\"), as `memory.max` for the dirty limits"),
    k("cgroups.NAME.io.weight", "100", ALL, "500", "io.cost's weight (1–10000) on devices with `io.cost.qos`; the isolation report's weight when the scheduler is neither bfq nor cfq"),
    k("cgroups.NAME.io.bfq.weight", "100", ALL, "200", "BFQ's group weight (1–1000) with `queue.scheduler = \"bfq\"`"),
    k("cgroups.NAME.blkio.weight", "500", ALL, "900", "cgroup v1's `blkio.weight` (10–1000): CFQ's group weight with `queue.scheduler = \"cfq\"`"),
    k("isolation.experiment", "no report", ALL, "3", "`[isolation]` writes isolation.txt (seed 003): each cgroup's disk-time share per 1000, the largest error from its weight's; the number printed"),
    k("isolation.allowed", "150 (in a report)", ALL, "50", "the largest error (per 1000) that PASSES"),
    k("cgroups.NAME.io.max.DEV.wbps", "max", ALL, "\"10MiB/s\"", "`io.max` `wbps` on device DEV: blk-throttle caps the cgroup's writes (writeback is charged to the inode's owner)"),
    k("cgroups.NAME.io.max.DEV.rbps", "max", ALL, "\"50MiB/s\"", "`io.max` `rbps` on device DEV: the cgroup's reads"),
    k("cgroups.NAME.io.max.DEV.wiops", "max", ALL, "1000", "`io.max` `wiops` on device DEV: write IOs per second"),
    k("cgroups.NAME.io.max.DEV.riops", "max", ALL, "1000", "`io.max` `riops` on device DEV: read IOs per second"),
    // run
    k("run.duration", "60s", ALL, "\"60s\"", "simulated time; at most 365 days"),
    k("run.warmup", "duration/2", ALL, "\"30s\"", "start of the measured window (it ends at `run.duration`)"),
    k("run.seed", "1", ALL, "7", "PRNG seed (also `--seed N`)"),
    k("run.dirty_throttle", "io-less", ALL, "\"legacy\"", "`io-less` (6.x), `io-less-3.2` (3.2) or `legacy` (2.6.32–3.1)"),
    k("run.flusher_plug", "true (io-less), false (older policies)", ALL, "false", "plug the flusher's whole work item (`wb_writeback`, Linux ≥ 4.3); false plugs only each inode's writepages"),
    k("run.plug_merge", "last", ALL, "\"any\"", "`last` (6.x: only the newest plugged request takes merges; flush at 32 requests or a ≥ 128 KiB one) or `any` (≤ 4.x: any plugged request; flush at 16)"),
    k("run.sample_interval", "100ms", ALL, "\"50ms\"", "counter sampling for percentiles (at least 1ms)"),
    // kernel features (defaults: the kernel of run.dirty_throttle)
    k("kernel.features.large_folios", "true (io-less), false (older)", ALL, "false", "large page-cache folios (6.x): the default `max_folio` is 2M, else one page"),
    k("kernel.features.wbt", "true (io-less), false (older)", ALL, "false", "writeback throttling (4.10): the default `queue.wbt_lat_usec` is the kernel's, else 0"),
    k("kernel.features.blk_throttle", "6.18 (io-less), pre-6.18 (older)", ALL, "\"pre-6.18\"", "`6.18`: REQ_META is charged, never queued, and slices trim two at a time; `pre-6.18`: as before"),
    k("kernel.features.reclaim_throttle", "5.16 (io-less), pre-5.16 (older)", ALL, "\"pre-5.16\"", "reclaim's throttle: `5.16` (`reclaim_throttle`) or `pre-5.16` (kswapd's `congestion_wait`, 100 ms)"),
    k("kernel.features.bw_dwork", "true (io-less), false (older)", ALL, "false", "`wb->bw_dwork` (5.14): update the bandwidth estimate after an inode's last writeback completes"),
    k("kernel.features.wb_bandwidth", "6.x (io-less), 3.2 (older)", ALL, "\"3.2\"", "the flusher's bandwidth updates: `6.x` (after max_pause, estimate restarts) or `3.2`"),
    k("kernel.features.memcg_bg_thresh", "6.11 (io-less), pre-6.11 (older)", ALL, "\"pre-6.11\"", "a memcg wb's share of its memcg's background threshold: by the memcg's completions (`6.11`) or the global domain's (`pre-6.11`)"),
    k("kernel.features.requeue_expiry", "6.10 (io-less), pre-6.10 (older)", ALL, "\"pre-6.10\"", "`requeue_inode`: `6.10` sends a young inode back to b_dirty, so kupdate writes one chunk of it; `pre-6.10`: all of it"),
    k("kernel.features.dirty_limits", "6.x (io-less), 3.x (older)", ALL, "\"3.x\"", "dirtyable memory and thresholds: `6.x` (`domain_dirty_limits`) or `3.x` (`global_dirty_limits`)"),
    k("kernel.features.cgroup_writeback", "true (every policy)", ALL, "false", "cgroup writeback (4.2): an inode's wb is its first dirtier's memcg's; false (before 4.2): every inode on the root wb, its writeback the root's IO"),
    k("kernel.features.dioread_nolock", "true (io-less), false (older)", ALL, "false", "ext4 dioread_nolock (5.6 default): a writepages round is one io_end with reserved credits"),
    k("kernel.features.writeback_chunk", "3.2 (io-less, io-less-3.2), 2.6 (legacy)", ALL, "\"2.6\"", "the flusher's chunk per inode: `3.2` (`writeback_chunk_size`) or `2.6` (MAX_WRITEBACK_PAGES)"),
    // knob writes during the run
    k("events.NAME.at", "required", ALL, "\"10s\"", "when the event's knobs are written (before `run.duration`)"),
    k("events.NAME.KNOB", "—", ALL, "\"300M\"", "a knob written then: `vm.dirty_{ratio,bytes,background_ratio,background_bytes,expire_centisecs}` or `devices.NAME.bdi.{min_ratio,max_ratio,strict_limit}`"),
    // trace, fidelity
    k("trace.events", "the first four events below", ALL, "[\"balance_dirty_pages\", \"sched_switch\"]", "events to trace, from the list below"),
    k("fidelity.tolerance.METRIC", "—", ALL, "5", "`wbsim fidelity`: the error of METRIC allowed, in percent (0: equal; inside the kernel's own spread passes); metrics below"),
];

/// A placeholder segment (`NAME`, `METRIC`) matches any name.
fn is_placeholder(seg: &str) -> bool {
    !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_uppercase())
}

fn seg_matches(pattern: &str, seg: &str) -> bool {
    pattern == seg || (is_placeholder(pattern) && !seg.is_empty())
}

/// Does the concrete `path` name the key `pattern`? A last segment `KNOB`
/// stands for a whole knob path (`events.NAME.KNOB` is
/// `events.e.vm.dirty_bytes`).
pub fn matches(pattern: &str, path: &str) -> bool {
    let (p, q): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), path.split('.').collect());
    if p.last() == Some(&"KNOB") && q.len() >= p.len() {
        let n = p.len() - 1;
        return p[..n].iter().zip(&q[..n]).all(|(p, q)| seg_matches(p, q));
    }
    p.len() == q.len() && p.iter().zip(&q).all(|(p, q)| seg_matches(p, q))
}

/// The entry for a concrete path such as `devices.loop0.write_bps`.
pub fn find(path: &str) -> Option<&'static KeyDoc> {
    KEYS.iter().find(|k| matches(k.key, path))
}

/// The entries a `wbsim help` query names: the key itself
/// (`devices.loop0.write_bps` or `devices.NAME.write_bps`), or every key
/// under a prefix (`vm`, `devices.NAME`, `devices.sda.queue`).
pub fn lookup(query: &str) -> Vec<&'static KeyDoc> {
    let query = query.trim().trim_end_matches(".*").trim_end_matches('.');
    if query.is_empty() {
        return Vec::new();
    }
    let q: Vec<&str> = query.split('.').collect();
    KEYS.iter()
        .filter(|k| {
            let p: Vec<&str> = k.key.split('.').collect();
            q.len() <= p.len() && p.iter().zip(&q).all(|(p, q)| seg_matches(p, q))
        })
        .collect()
}

/// The types a key applies to, one by one (`disk, ssd` → disk, ssd).
fn types(k: &KeyDoc) -> impl Iterator<Item = &'static str> {
    k.applies_to
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
}

/// The sections (first path segments) in table order.
fn sections() -> Vec<&'static str> {
    let mut s: Vec<&str> = Vec::new();
    for k in KEYS {
        let first = k.key.split('.').next().unwrap_or("");
        if k.key.contains('.') && !s.contains(&first) {
            s.push(first);
        }
    }
    s
}

/// What the parser expects instead of the unknown key `path`: the keys of
/// its section, by the type they apply to.
pub fn expected_for(path: &str) -> String {
    let section = path.split('.').next().unwrap_or("");
    let keys: Vec<&KeyDoc> = KEYS
        .iter()
        .filter(|k| k.key.contains('.') && k.key.split('.').next() == Some(section))
        .collect();
    if keys.is_empty() {
        let top: Vec<&str> = KEYS
            .iter()
            .filter(|k| !k.key.contains('.'))
            .map(|k| k.key)
            .collect();
        return format!(
            "{} or a key in one of the sections {} (see `wbsim help`)",
            top.iter()
                .map(|t| format!("`{t}`"))
                .collect::<Vec<_>>()
                .join(", "),
            sections().join(", ")
        );
    }
    if keys.len() == 1 {
        return format!("{} (see `wbsim help {section}`)", keys[0].key);
    }
    // the shared head: `devices.NAME.` or `machine.`
    let head = |key: &str| -> usize {
        let mut segs = key.split('.');
        let first = segs.next().unwrap_or("").len() + 1;
        match segs.next() {
            Some(s) if is_placeholder(s) => first + s.len() + 1,
            _ => first,
        }
    };
    let prefix = &keys[0].key[..head(keys[0].key)];
    let list = |ks: &[&&KeyDoc]| -> String {
        let names: Vec<&str> = ks.iter().map(|k| &k.key[head(k.key)..]).collect();
        format!("{{{}}}", names.join(","))
    };
    let common: Vec<&&KeyDoc> = keys.iter().filter(|k| k.applies_to.is_none()).collect();
    let mut out = format!("{prefix}{}", list(&common));
    let mut tys: Vec<&str> = Vec::new();
    for k in &keys {
        for t in types(k) {
            if !tys.contains(&t) {
                tys.push(t);
            }
        }
    }
    if !tys.is_empty() {
        let by_type: Vec<String> = tys
            .iter()
            .map(|t| {
                let ks: Vec<&&KeyDoc> = keys.iter().filter(|k| types(k).any(|x| x == *t)).collect();
                format!("{} ({t})", list(&ks))
            })
            .collect();
        out += &format!(" and by type: {}", by_type.join(", "));
    }
    out + &format!(" (see `wbsim help {section}`)")
}

/// One entry as `wbsim help KEY` prints it.
pub fn entry_text(k: &KeyDoc) -> String {
    let mut s = format!("{}\n  {}\n", k.key, k.doc);
    if let Some(a) = k.applies_to {
        s += &format!("  only for:   {a}\n");
    }
    s += &format!("  default:    {}\n", k.default);
    s += &format!("  example:    {} = {}\n", k.key, k.example);
    s
}

/// The list `wbsim help` prints without a key.
pub fn list_text() -> String {
    let w = KEYS.iter().map(|k| k.key.len()).max().unwrap_or(0);
    let mut s = String::from(
        "Scenario keys (NAME: a device, filesystem, job or cgroup name; DEV: a device). `wbsim help KEY` explains one\n\
         key or every key under a prefix (`wbsim help vm`); `wbsim help --markdown` prints\n\
         docs/scenario.md. Commands: `wbsim --help`.\n\n",
    );
    for k in KEYS {
        s += &format!("  {:<w$}  {}\n", k.key, k.doc);
    }
    s
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// docs/scenario.md, as `wbsim help --markdown` prints it.
pub fn markdown() -> String {
    let mut s = String::from(
        "# Scenario reference\n\
         \n\
         <!-- Generated from src/scenario/keys.rs: edit that table, then run\n\
         \x20    cargo run -q -- help --markdown > docs/scenario.md -->\n\
         \n\
         Scenarios are TOML. `NAME` stands for the name a scenario gives a device,\n\
         filesystem, job or cgroup (`[devices.loop0]`), `DEV` for a device's name.\n\
         An inline table (`machine = { memory = \"1G\" }`, `jobs.dd = { numjobs = 4 }`)\n\
         is the table it stands for. Every key can also be set from the\n\
         command line by its dotted path: `--set devices.loop0.write_bps=20MiB/s`.\n\
         `wbsim help KEY` prints one entry (`wbsim help devices.loop0.write_bps`) or\n\
         every key under a prefix (`wbsim help vm`); `wbsim default-scenario` prints\n\
         the built-in scenario. What the models behind the keys do is in\n\
         docs/layout.md; measured figures are in docs/validation.md.\n\
         \n\
         **Units.** Sizes: `4096`, `4k`, `1M`, `200MiB`, `1.5G` (K/M/G/T and\n\
         KiB/MiB/GiB/TiB are powers of 1024, as in dd and fio; KB/MB/GB/TB powers of\n\
         1000). Rates: a size with `/s` (`50MiB/s`, `100MB/s`). Durations: `ns`, `us`,\n\
         `ms`, `s`, `min`, `h` (`60s`, `100ms`).\n\
         \n\
         **Caps.** Counts that scale a run's work or memory have caps, and a value\n\
         over one is refused with the key and the cap: `run.duration` at most 365\n\
         days; dd's `numjobs` at most 100000, fs_mark's threads (its `-d`\n\
         directories times `-t`) at most 100000, and the tasks of all jobs together\n\
         (dd writers, fs_mark threads, fio clones) at most 100000 (about 1 KiB each);\n\
         devices (and so filesystems) at most 4096;\n\
         fs_mark's `-n`, `-L` and `-D` at most 2147483647 (an `int` in fs_mark), `-s`\n\
         at most 1 GiB, and threads × `-n` × `-L` at most 10^15 files. A run's trace\n\
         is bounded apart (docs/outputs.md: over 2 GiB needs `--force`).\n\
         \n\
         **Order of application.** Values apply in document order, then `--set`s in\n\
         command-line order; as in the kernel, writing a `*_bytes` sysctl zeroes its\n\
         `*_ratio` and vice versa.\n\
         \n\
         **Kernel versions.** `run.dirty_throttle` chooses `balance_dirty_pages`: the\n\
         6.x IO-less throttle, the one merged for 3.2, or the IO-full one before it.\n\
         It also sets the default of every `kernel.features.*` key to what that\n\
         kernel had; each can then be set on its own, so a scenario can pair the 3.2\n\
         throttle with 6.18's blk-throttle, say.\n\
         \n\
         **Knobs written during a run.** An `[events.NAME]` table writes knobs at a\n\
         time, as `sysctl -w` or a write to sysfs would on a running machine:\n\
         \n\
         ```toml\n\
         [events.raise]\n\
         at = \"20s\"\n\
         \"vm.dirty_bytes\" = \"400M\"\n\
         \"devices.loop0.bdi.max_ratio\" = 50\n\
         ```\n\
         \n\
         Values are checked as at the start, the handlers' rules apply (a changed\n\
         `*_bytes` zeroes its `*_ratio`; the dirty limit moves at once), and what the\n\
         kernel would refuse (a bdi's `min_ratio` above its `max_ratio`, `min_ratio`s\n\
         summing past 100) is an error.\n\
         \n\
         **Cgroups** (v2, one level under the root): `[cgroups.NAME]` with its\n\
         `memory.*` and `io.*` files as keys (quoted, as they contain dots:\n\
         `\"memory.max\" = \"512M\"`, `\"io.max.sda.wbps\" = \"10MiB/s\"`); a job\n\
         joins one with `cgroup = \"NAME\"`. `io.weight` shares a device with\n\
         io.cost (`devices.NAME.\"io.cost.qos\"`), `io.bfq.weight` under BFQ and\n\
         `blkio.weight` under CFQ. A scenario without cgroups runs everything in\n\
         the root.\n\
         \n\
         **Bad input** (an unknown key, a bad unit, a negative size, a missing file, an\n\
         unknown `--set` path, a device no filesystem is mounted on, a filesystem on a\n\
         device that does not exist) gives `FILE:LINE: what was found; expected …`\n\
         and exit code 2.\n\
         \n\
         | key | only for | default | meaning | example |\n\
         |---|---|---|---|---|\n",
    );
    for k in KEYS {
        s += &format!(
            "| `{}` | {} | {} | {} | `{}` |\n",
            k.key,
            k.applies_to.map(md_cell).unwrap_or_default(),
            md_cell(k.default),
            md_cell(k.doc),
            md_cell(k.example)
        );
    }
    s += "\n**Trace events** (`trace.events`; the default traces the first four; docs/outputs.md\n\
          describes the trace):\n\n";
    for e in super::TRACE_EVENTS {
        s += &format!("- `{e}`\n");
    }
    s += "\n**Fidelity metrics** (`fidelity.tolerance.METRIC`; docs/live.md):\n\n";
    for (name, what, _) in crate::fidelity::METRICS {
        s += &format!("- `{name}`: {what}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{build, RawScenario, DEFAULT_SCENARIO};

    /// A scenario with a device of every type, both filesystems and both
    /// job types. Device keys for every type are tried on `sda` (an ssd,
    /// which needs no other key), filesystem keys on `scratch`.
    const EVERY_KIND: &str = r#"
[devices.loop0]
type = "throttled"
write_bps = "50MiB/s"
size = "5G"
[devices.disk0]
type = "disk"
[devices.sda]
type = "ssd"
# the queue.iosched keys are mq-deadline's
queue.scheduler = "mq-deadline"
[devices.hdd0]
type = "hdd"
[devices.ssd0]
type = "ssd"
[devices.ssd1]
type = "ssd"
[devices.md0]
type = "raid0"
members = ["ssd0", "ssd1"]
[devices.ssd2]
type = "ssd"
[devices.hdd1]
type = "hdd"
[devices.bc0]
type = "bcache"
cache = "ssd2"
backing = "hdd1"
[filesystems.scratch]
device = "loop0"
[filesystems.fdisk]
device = "disk0"
[filesystems.fsda]
type = "xfs"
device = "sda"
[filesystems.fhdd]
device = "hdd0"
[filesystems.fmd]
type = "xfs"
device = "md0"
[filesystems.fbc]
device = "bc0"
[jobs.dd]
filesystem = "scratch"
numjobs = 2
bs = "1M"
[jobs.fsmark]
type = "fs_mark"
filesystem = "fsda"
args = "-d /mnt/0 -S0 -n 100 -s 4096 -L 1"
[jobs.fiofile]
type = "fio"
filesystem = "scratch"
file = "examples/seed-003/writers.fio"
[jobs.fiojob]
type = "fio"
filesystem = "scratch"
job = "[w]\nrw=write\nsize=64m\n"
section = "w"
[jobs.fiocmd]
type = "fio"
filesystem = "scratch"
cmdline = "--name=w --rw=randwrite --bs=4k --size=64m"
[cgroups.A]
[fidelity.tolerance]
dirty = 5
[events.e]
at = "10s"
"vm.dirty_bytes" = "300M"
"#;

    /// The concrete path a key's example is tried at in EVERY_KIND.
    fn concrete(k: &KeyDoc) -> String {
        let first_type = types(k).next();
        let segs: Vec<&str> = k.key.split('.').collect();
        let name = match (segs[0], first_type) {
            ("devices", Some("throttled" | "loop")) => "loop0",
            ("devices", Some("disk")) => "disk0",
            ("devices", Some("hdd")) => "hdd0",
            ("devices", Some("raid0")) => "md0",
            ("devices", Some("bcache")) => "bc0",
            ("devices", _) => "sda",
            ("filesystems", Some("xfs")) => "fsda",
            ("filesystems", _) => "scratch",
            ("jobs", Some("fs_mark")) => "fsmark",
            // one fio job for each way of giving its jobs
            ("jobs", Some("fio")) => match segs.last() {
                Some(&"file") => "fiofile",
                Some(&"cmdline") => "fiocmd",
                _ => "fiojob",
            },
            ("jobs", _) => "dd",
            ("fidelity", _) => "dirty",
            ("events", _) => "e",
            ("machine", _) if segs.get(1) == Some(&"zones") => "dma32",
            ("cgroups", _) => "A",
            _ => "",
        };
        segs.iter()
            .map(|s| match *s {
                "KNOB" => "vm.dirty_bytes",
                "DEV" => "sda",
                s if is_placeholder(s) => name,
                s => s,
            })
            .collect::<Vec<_>>()
            .join(".")
    }

    /// `base` with `path = value` set after everything in it.
    fn with(base: &str, path: &str, value: &str) -> RawScenario {
        let mut raw = RawScenario::parse(base, "base").expect("base parses");
        let one = RawScenario::parse(&format!("{path} = {value}\n"), "example")
            .unwrap_or_else(|e| panic!("`{path} = {value}` is not TOML: {e}"));
        let mut set: Vec<_> = one.entries.into_iter().collect();
        set.sort_by_key(|(_, e)| e.order);
        for (p, e) in set {
            raw.insert(p, e.val, e.origin);
        }
        raw
    }

    #[test]
    fn keys_are_unique() {
        for (i, a) in KEYS.iter().enumerate() {
            for b in &KEYS[i + 1..] {
                assert_ne!(a.key, b.key, "`{}` is documented twice", a.key);
            }
        }
    }

    #[test]
    fn entries_are_one_short_line() {
        for k in KEYS {
            assert!(
                !k.doc.is_empty() && !k.doc.contains('\n') && k.doc.len() <= 160,
                "`{}`: the doc should be one short line",
                k.key
            );
            assert!(!k.default.is_empty() && !k.example.is_empty(), "{}", k.key);
        }
    }

    #[test]
    fn every_example_is_accepted() {
        for k in KEYS {
            let path = concrete(k);
            let base = if k.key.contains(|c: char| c.is_ascii_uppercase()) {
                EVERY_KIND
            } else {
                DEFAULT_SCENARIO
            };
            if let Err(e) = build(with(base, &path, k.example), "t") {
                panic!("`{path} = {}` (the example of `{}`): {e}", k.example, k.key);
            }
        }
    }

    /// Paths the parser asks for when it reads `raw`.
    fn asked(mut raw: RawScenario, what: &str) -> Vec<String> {
        let rec = raw.record_asked();
        if let Err(e) = build(raw, "t") {
            panic!("{what}: {e}");
        }
        let v = rec.lock().expect("record").clone();
        v
    }

    fn examples(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("examples/") {
            let p = e.expect("entry").path();
            // examples/sweeps holds sweep plans, not scenarios
            if p.is_dir() && !p.ends_with("sweeps") {
                examples(&p, out);
            } else if p.extension().is_some_and(|x| x == "toml") {
                out.push(p);
            }
        }
    }

    #[test]
    fn every_key_the_parser_reads_is_documented() {
        let mut paths: Vec<(String, String)> = Vec::new();
        let mut add = |raw: RawScenario, what: String| {
            for p in asked(raw, &what) {
                paths.push((p, what.clone()));
            }
        };
        add(
            RawScenario::parse(DEFAULT_SCENARIO, "default").unwrap(),
            "the default scenario".into(),
        );
        add(
            RawScenario::parse(EVERY_KIND, "every kind").unwrap(),
            "every device, filesystem and job type".into(),
        );
        let mut files = Vec::new();
        examples(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples"),
            &mut files,
        );
        assert!(files.len() >= 16, "only {} examples", files.len());
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let name = f
                .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                .unwrap_or(&f)
                .display()
                .to_string();
            add(RawScenario::parse(&text, &name).unwrap(), name);
        }
        // and every key set at once where the example would be tried (the
        // types stay: another type takes other keys)
        let mut raw = RawScenario::parse(EVERY_KIND, "every kind").unwrap();
        for k in KEYS
            .iter()
            .filter(|k| !["devices.NAME.type", "filesystems.NAME.type"].contains(&k.key))
        {
            let one = with("", &concrete(k), k.example);
            for (p, e) in one.entries {
                raw.insert(p, e.val, e.origin);
            }
        }
        add(raw, "every example".into());
        let mut undocumented: Vec<String> = Vec::new();
        for (p, w) in paths.iter().filter(|(p, _)| find(p).is_none()) {
            let line = format!("`{p}` (read for {w})");
            if !undocumented
                .iter()
                .any(|u| u.starts_with(&format!("`{p}`")))
            {
                undocumented.push(line);
            }
        }
        assert!(
            undocumented.is_empty(),
            "the parser reads keys src/scenario/keys.rs does not document; add them to KEYS \
             and regenerate docs/scenario.md (cargo run -q -- help --markdown > docs/scenario.md): {}",
            undocumented.join(", ")
        );
        for k in KEYS {
            assert!(
                paths.iter().any(|(p, _)| matches(k.key, p)),
                "`{}` is documented but the parser never read it",
                k.key
            );
        }
    }

    #[test]
    fn help_matches_concrete_keys_and_prefixes() {
        assert_eq!(
            lookup("devices.loop0.write_bps")
                .iter()
                .map(|k| k.key)
                .collect::<Vec<_>>(),
            ["devices.NAME.write_bps"]
        );
        assert_eq!(lookup("devices.NAME.write_bps").len(), 1);
        assert_eq!(lookup("vm").len(), 11);
        assert_eq!(lookup("vm.*").len(), 11);
        assert!(lookup("devices.sda.queue")
            .iter()
            .all(|k| k.key.starts_with("devices.NAME.queue.")));
        assert_eq!(
            lookup("devices.NAME").len(),
            KEYS.iter()
                .filter(|k| k.key.starts_with("devices."))
                .count()
        );
        assert!(lookup("vm.dirty_ratoi").is_empty());
        assert!(lookup("devices").len() > 30);
        assert!(lookup("").is_empty());
        assert_eq!(
            find("fidelity.tolerance.dirty").map(|k| k.key),
            Some("fidelity.tolerance.METRIC")
        );
    }

    #[test]
    fn unknown_key_hints_list_the_section() {
        let h = expected_for("vm.dirty_ratoi");
        assert!(h.starts_with("vm.{dirty_ratio,dirty_bytes,"), "{h}");
        let h = expected_for("jobs.dd.bss");
        assert!(
            h.contains("jobs.NAME.{type,filesystem,start,cgroup}")
                && h.contains("{numjobs,bs,size,runtime} (dd)")
                && h.contains("{args} (fs_mark)"),
            "{h}"
        );
        let h = expected_for("devices.sda.chanels");
        assert!(
            h.contains("channels") && h.contains("(ssd)") && h.contains("bdi.min_ratio"),
            "{h}"
        );
        let h = expected_for("nmae");
        assert!(
            h.contains("`name`") && h.contains("machine, vm, devices"),
            "{h}"
        );
        assert!(expected_for("fidelity.x").starts_with("fidelity.tolerance.METRIC"));
    }

    /// A documented default that is a plain value (`16G`, `4`, `fifo`,
    /// `true`), as TOML; None for a description (`memory/32`, `true
    /// (io-less), false (older)`).
    fn literal_default(d: &str) -> Option<String> {
        if d.contains(|c: char| c.is_whitespace() || "()/,—".contains(c)) {
            return None;
        }
        if d.parse::<i64>().is_ok() || d == "true" || d == "false" {
            return Some(d.to_string());
        }
        Some(format!("\"{d}\""))
    }

    /// Where the docs give a plain default, setting the key to it changes
    /// nothing: the documented default is the parser's.
    #[test]
    fn documented_defaults_are_the_parsers() {
        let mut checked = 0;
        for k in KEYS {
            let Some(v) = literal_default(k.default) else {
                continue;
            };
            let path = concrete(k);
            // a base that does not set the key itself
            let base = EVERY_KIND;
            let plain = RawScenario::parse(base, "base").expect("base parses");
            if plain.entries.contains_key(&path) {
                continue;
            }
            let a = build(plain, "t").expect("base builds");
            let b = match build(with(base, &path, &v), "t") {
                Ok(b) => b,
                Err(e) => panic!(
                    "`{path} = {v}` (the documented default of `{}`): {e}",
                    k.key
                ),
            };
            assert_eq!(
                format!("{a:?}"),
                format!("{b:?}"),
                "`{}`: its documented default {} is not the parser's",
                k.key,
                k.default
            );
            checked += 1;
        }
        assert!(checked >= 40, "only {checked} defaults checked");
    }

    /// Each driver's own keys (drivers/*.rs) and the keys every device
    /// takes are the registry's `devices.NAME.*` entries for that type.
    #[test]
    fn every_drivers_keys_are_documented() {
        for t in crate::drivers::DRIVER_TYPES {
            let mut doc: Vec<&str> = KEYS
                .iter()
                .filter(|k| {
                    k.key.starts_with("devices.NAME.")
                        && k.applies_to
                            .is_some_and(|a| a.split(", ").any(|x| x == t.name))
                })
                .map(|k| &k.key["devices.NAME.".len()..])
                .collect();
            let mut code: Vec<&str> = t.keys.to_vec();
            doc.sort_unstable();
            code.sort_unstable();
            assert_eq!(
                doc, code,
                "driver `{}`: documented keys against its own",
                t.name
            );
        }
        let mut every: Vec<&str> = KEYS
            .iter()
            .filter(|k| k.key.starts_with("devices.NAME.") && k.applies_to.is_none())
            .map(|k| &k.key["devices.NAME.".len()..])
            .collect();
        let mut code = crate::scenario::DEVICE_KEYS.to_vec();
        every.sort_unstable();
        code.sort_unstable();
        assert_eq!(every, code, "the keys every device takes");
    }
}
