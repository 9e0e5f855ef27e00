//! Scenario files (TOML). Knobs carry the kernel's names: `vm.dirty_bytes` is
//! the sysctl, `devices.NAME.queue.max_sectors_kb` the sysfs attribute.
//! Every knob can also be set from the command line by its dotted path
//! (`--set vm.dirty_bytes=200M`). Every key is documented in `keys`
//! (docs/scenario.md, `wbsim help`).

pub mod keys;
pub mod raw;

use crate::sim::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC, NSEC_PER_USEC};
use crate::units;
use raw::{err, Entry};
pub use raw::{Origin, RawScenario, RawVal, ScenarioError};

/// The dirty-throttling policy (`run.dirty_throttle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThrottlePolicy {
    /// Linux 6.x IO-less balance_dirty_pages (the default).
    IoLess,
    /// The IO-less throttle as merged for Linux 3.2.
    IoLess32,
    /// Pre-3.2: the dirtier writes back pages itself.
    Legacy,
}

impl ThrottlePolicy {
    pub fn name(self) -> &'static str {
        match self {
            ThrottlePolicy::IoLess => "io-less",
            ThrottlePolicy::IoLess32 => "io-less-3.2",
            ThrottlePolicy::Legacy => "legacy",
        }
    }
}

#[derive(Clone, Debug)]
pub struct CpuCost {
    /// Entering and leaving one system call.
    pub syscall: Ns,
    /// Copying one KiB between user and kernel (read or write).
    pub copy_per_kib: Ns,
    /// Allocating a page-cache page, inserting it and accounting it dirty.
    pub page_cache_insert: Ns,
    /// Reclaim: per page scanned by kswapd or direct reclaim (isolation,
    /// the unmap and mapping checks, removal from the page cache, the free).
    pub reclaim_per_page: Ns,
    /// Under a hypervisor that discards reported free pages (virtio-balloon
    /// free page reporting): the host's fault when a newly allocated page
    /// is first touched, once `machine.host_backed_free` is used up
    /// (mm/page_reporting.rs). 0 on bare metal.
    pub host_fault: Ns,
    /// An anonymous page's first touch (`do_anonymous_page` from
    /// `handle_mm_fault`): the fault's entry and exit, the page's
    /// allocation bookkeeping, memcg charge, LRU add and PTE, beyond the
    /// page's zeroing (4 × `copy_per_kib`). Charged per page a workload
    /// faults in (simoop's working set, its `-M` area and its read
    /// buffers).
    pub page_fault: Ns,
    /// A cold cache line: one load that misses the CPU caches (DRAM, and
    /// under a hypervisor the nested page walk with it). A lookup at a
    /// random position walks a kernel index whose nodes are not cached:
    /// the page cache's xarray (`__filemap_get_folio`) and ext4's extent
    /// status tree (`ext4_es_lookup_extent`) pay it per node (mm/filemap.rs,
    /// fs/ext4_es.rs). 0: lookups cost nothing beyond `syscall`.
    pub cache_miss: Ns,
    /// Flusher: per page prepared for writeback (writepages, block mapping).
    pub writeback_per_page: Ns,
    /// Per bio built and submitted.
    pub bio_submit: Ns,
    /// Creating a file: inode allocation, directory entry (open O_CREAT).
    pub file_create: Ns,
    /// Flusher: per inode ->writepages call (mapping, block allocation).
    pub writepages_inode: Ns,
    /// Issuing one request to a driver (allocation, queue_rq, completion),
    /// charged to the task that issues it.
    pub rq_dispatch: Ns,
    /// Per balance_dirty_pages() call (the throttle computation).
    pub bdp_call: Ns,
    /// fio's own user-space work per IO (io_u setup, offset and size
    /// choice, completion accounting and its clock reads).
    pub fio_io: Ns,
    /// A wakeup plus a context switch in.
    pub wakeup: Ns,
    /// Timer wakeups land up to this long after their tick (softirq and
    /// scheduling latency), drawn from the seeded PRNG.
    pub wakeup_jitter: Ns,
    /// CFS/EEVDF slice before a busy task is preempted by a waiting one.
    pub sched_slice: Ns,
    /// CPU time a job's launcher spends starting each of its tasks (fork,
    /// exec and the wait for it, as a shell loop or `wbsim live` does). 0:
    /// every task of a job starts at the job's start time.
    pub fork: Ns,
    /// How much the work of one burst of a workload task varies, in
    /// percent: each burst costs its estimate times a factor drawn
    /// uniformly from [1 - spread/100, 1 + spread/100] (seeded PRNG, steps
    /// of 0.1%), so the mean is the estimate. 0 (the default): every burst
    /// costs exactly its estimate. Real CPUs are not that regular: on the
    /// host rig a 1 MiB dd write() takes 3.3 to 5.4 ms of CPU (p10-p90).
    pub spread: u64,
}

impl CpuCost {
    /// The same costs on a CPU `k` times slower (`k` > 1) or faster: every
    /// cost of work done on a CPU scaled by `k`, rounded to the ns. The
    /// scheduler's slice and the timer wakeup latency are not work and
    /// stay as they are, and so does the relative spread. Used by `wbsim
    /// fidelity` to run the model at the speed the kernel runs measured
    /// (dd's system time).
    pub fn scaled(&self, k: f64) -> CpuCost {
        let s = |v: Ns| (v as f64 * k).round() as Ns;
        CpuCost {
            syscall: s(self.syscall),
            copy_per_kib: s(self.copy_per_kib),
            page_cache_insert: s(self.page_cache_insert),
            reclaim_per_page: s(self.reclaim_per_page),
            host_fault: s(self.host_fault),
            page_fault: s(self.page_fault),
            cache_miss: s(self.cache_miss),
            writeback_per_page: s(self.writeback_per_page),
            bio_submit: s(self.bio_submit),
            file_create: s(self.file_create),
            writepages_inode: s(self.writepages_inode),
            rq_dispatch: s(self.rq_dispatch),
            bdp_call: s(self.bdp_call),
            fio_io: s(self.fio_io),
            wakeup: s(self.wakeup),
            wakeup_jitter: self.wakeup_jitter,
            fork: s(self.fork),
            sched_slice: self.sched_slice,
            spread: self.spread,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Machine {
    pub memory: u64,
    pub cpus: u32,
    pub hz: u64,
    pub page_size: u64,
    /// Memory that is neither free nor page cache (kernel, anonymous).
    pub anon: u64,
    /// `totalreserve_pages` in bytes for the dirty limits (None: the
    /// zones' own, mm/page_alloc.rs).
    pub reserve: Option<u64>,
    /// The zones and the watermark sysctls (`machine.zones.*`,
    /// `machine.thp`, `vm.min_free_kbytes`, `vm.watermark_scale_factor`,
    /// `vm.lowmem_reserve_ratio`).
    pub mem: crate::mm::page_alloc::MemConf,
    /// Free memory the host still backs at the start (free page reporting
    /// has not discarded it); None: all of it, as on bare metal.
    pub host_backed_free: Option<u64>,
    /// How runnable tasks share the CPUs (kernel/sched).
    pub sched: SchedPolicy,
    /// EEVDF's `sysctl_sched_base_slice` before scaling by CPU count
    /// (debugfs sched/base_slice_ns; 700 us in recent kernels, 750 us in the first EEVDF ones).
    pub sched_base_slice: Ns,
    /// kernel.sched_autogroup_enabled: the workload runs in one session's
    /// autogroup, and kernel threads compete with that group as a whole
    /// (kernel/sched/autogroup.c). None: not set (the model runs without;
    /// live mode leaves the machine's setting alone).
    pub autogroup: Option<bool>,
    pub cost: CpuCost,
}

/// The CPU scheduler model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedPolicy {
    /// EEVDF (Linux >= 6.6): earliest eligible virtual deadline first, lag
    /// kept across sleep, run-to-parity (kernel/sched/fair.c).
    Eevdf,
    /// One FIFO queue with round-robin slices of `machine.cost.sched_slice`.
    Fifo,
}

#[derive(Clone, Debug)]
pub struct Vm {
    pub dirty_ratio: u64,
    pub dirty_bytes: u64,
    pub dirty_background_ratio: u64,
    pub dirty_background_bytes: u64,
    pub dirty_expire_centisecs: u64,
    pub dirty_writeback_centisecs: u64,
    /// `vm.vfs_cache_pressure`: the superblock shrinkers' counts in percent.
    pub vfs_cache_pressure: u64,
    /// `vm.shrinker_arith`: `do_shrink_slab`'s arithmetic (4.16+ or ≤ 4.15).
    pub shrinker_arith: crate::mm::shrinker::ShrinkerArith,
}

impl Default for Vm {
    fn default() -> Self {
        Vm {
            dirty_ratio: 20,
            dirty_bytes: 0,
            dirty_background_ratio: 10,
            dirty_background_bytes: 0,
            dirty_expire_centisecs: 3000,
            dirty_writeback_centisecs: 500,
            vfs_cache_pressure: 100,
            shrinker_arith: Default::default(),
        }
    }
}

pub use crate::drivers::DeviceKind;

#[derive(Clone, Debug)]
pub struct Queue {
    pub max_sectors_kb: u64,
    pub max_hw_sectors_kb: u64,
    /// queue/max_segments (BLK_MAX_SEGMENTS = 128 by default).
    pub max_segments: u32,
    /// queue/nr_requests: tags per hardware queue.
    pub nr_requests: u32,
    /// queue/scheduler.
    pub scheduler: Elevator,
    /// queue/read_ahead_kb: the bdi's readahead window (`ra_pages`).
    pub read_ahead_kb: u64,
    /// queue/wbt_lat_usec: wbt's latency target; 0 switches wbt off.
    /// Defaults: 2000 for non-rotational queues (loop, ssd), 75000 for
    /// rotational ones (disk, hdd) under the 6.x policy; 0 for bio-based
    /// devices (md) and for the older policies (wbt arrived in 4.10).
    pub wbt_lat_usec: u64,
    /// queue/iosched/ of mq-deadline: `read_expire`, `write_expire` (ms),
    /// `writes_starved`.
    pub iosched: crate::block::mq_deadline::Tunables,
    /// queue/iosched/ of BFQ (`slice_idle`, `timeout_sync`, `max_budget`,
    /// `back_seek_max`, `back_seek_penalty`, `fifo_expire_*`).
    pub bfq: crate::block::bfq::BfqTunables,
    /// queue/iosched/ of CFQ, and `queue.cfq.async_in_root`.
    pub cfq: crate::block::cfq::CfqTunables,
    /// io.cost on the device (`io.cost.qos` with `enable=1`).
    pub iocost: Option<crate::block::blk_iocost::IocConf>,
}

/// `queue/scheduler`: `none`, `mq-deadline` (block/mq-deadline.c), `bfq`
/// (block/bfq-iosched.c) or `cfq` (2.6.38–4.x block/cfq-iosched.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elevator {
    None,
    MqDeadline,
    Bfq,
    Cfq,
}

/// The bdi's sysfs knobs and its starting state. The kernel keeps a
/// device's bandwidth estimate and dirty_ratelimit for as long as the
/// device exists, so a run on a warm device starts from its last values;
/// these let a scenario start from a known state (default: a fresh device,
/// INIT_BW = 100 MiB/s for both).
#[derive(Clone, Debug, Default)]
pub struct BdiConf {
    pub min_ratio: u64,
    pub max_ratio: u64,
    /// sysfs `strict_limit` (BDI_CAP_STRICTLIMIT, as FUSE sets it).
    pub strict_limit: bool,
    /// Initial `write_bandwidth` and `avg_write_bandwidth` (bytes/s).
    pub write_bandwidth: Option<u64>,
    /// Initial `dirty_ratelimit` and `balanced_dirty_ratelimit` (bytes/s).
    pub dirty_ratelimit: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct Device {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub size: u64,
    pub kind: DeviceKind,
    /// blk-throttle's rule on the queue (`throttle.*`, or `throttled`'s).
    pub throttle: crate::block::blk_throttle::ThrotlConf,
    pub queue: Queue,
    pub bdi: BdiConf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsKind {
    Ext4,
    /// XFS: its own allocation (fs/xfs.rs), metadata and log.
    Xfs,
}

#[derive(Clone, Debug)]
pub struct Filesystem {
    pub name: String,
    pub kind: FsKind,
    pub device: usize,
    /// Largest page-cache folio a buffered write creates. 6.x ext4 uses large
    /// folios, so a 1 MiB write() is dirtied whole before the throttle check.
    pub max_folio: u64,
    /// Allocation groups (XFS agcount; ext4 flex groups play the same
    /// role): each directory allocates from its own region of the device.
    pub agcount: u32,
    /// Model the filesystem's metadata IO: ext4's jbd2 journal and the
    /// in-place writeback of inode table, directory and bitmap blocks
    /// through the block device's inode (fs/ext4_meta.rs, fs/jbd2.rs);
    /// XFS's delayed logging, log buffers and xfsaild (fs/xfs_meta.rs,
    /// fs/xfs_log.rs).
    pub metadata: bool,
    /// ext4's `commit=` mount option: the journal commit interval.
    pub commit_interval: Ns,
    /// The journal's size in bytes (mke2fs's default by filesystem size
    /// unless given).
    pub journal_size: u64,
    /// XFS: the inode cache shrinker's form (fs/xfs_icache.rs).
    pub inode_reclaim: crate::fs::xfs_icache::InodeReclaim,
}

#[derive(Clone, Debug)]
pub enum JobKind {
    Dd {
        bs: u64,
        /// Bytes per writer (None: until `runtime` or the end of the run).
        size: Option<u64>,
    },
    /// fs_mark with its own command-line flags.
    FsMark(FsMarkArgs),
    /// An fio job (one section of a job file, or one `--name`).
    Fio(Box<crate::workload::fio::FioJob>),
    /// simoop with its own flags, and the filesystems its directories name.
    Simoop(Box<(crate::workload::simoop::SimoopArgs, Vec<usize>)>),
}

pub use crate::workload::fs_mark::FsMarkArgs;

#[derive(Clone, Debug)]
pub struct Job {
    pub name: String,
    pub kind: JobKind,
    pub filesystem: usize,
    pub numjobs: u32,
    pub start: Ns,
    pub runtime: Option<Ns>,
    /// The cgroup its tasks run in (`jobs.NAME.cgroup`, fio's `cgroup=`):
    /// an index in `Scenario::cgroups` plus one; 0 is the root.
    pub cgroup: usize,
}

#[derive(Clone, Debug)]
pub struct Run {
    pub duration: Ns,
    pub seed: u64,
    /// Start of the measured (steady-state) window; it ends at `duration`.
    pub warmup: Ns,
    /// The dirty throttle (`balance_dirty_pages`) only; the other
    /// version-dependent behaviour is in `Scenario::features`.
    pub dirty_throttle: ThrottlePolicy,
    /// How often counters are sampled for percentiles.
    pub sample_interval: Ns,
}

/// Kernel features that changed between versions, resolved once from the
/// scenario (`kernel.features.*`). Each defaults to what the kernel of
/// `run.dirty_throttle` had (`io-less`: 6.18; `io-less-3.2`: 3.2;
/// `legacy`: 2.6.32-3.1), and each can be set on its own, so a scenario
/// can pair, say, the 3.2 throttle with 6.18's block layer. The throttle
/// policy itself chooses only `balance_dirty_pages`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Features {
    /// Large page-cache folios (ext4, 6.x): the default of
    /// `filesystems.NAME.max_folio` is 2M instead of one page.
    pub large_folios: bool,
    /// Writeback throttling (block/blk-wbt.c, 4.10): the default of
    /// `queue/wbt_lat_usec` is the kernel's instead of 0.
    pub wbt: bool,
    /// blk-throttle as 6.18 has it: REQ_META bios are charged but never
    /// queued, and `throtl_trim_slice` trims only past two whole slices.
    /// Before, metadata queued like data and every elapsed slice went.
    pub blk_throttle_v6_18: bool,
    /// `wb->bw_dwork` (5.14): the bandwidth estimate is updated a moment
    /// after an inode's last writeback page completes.
    pub bw_dwork: bool,
    /// The flusher updates the bandwidth estimate as 6.x does
    /// (`wb_bandwidth_estimate_start`, `wb_update_bandwidth` after each
    /// inode once `max_pause` has passed); false: as 3.2 does
    /// (`bdi_update_bandwidth` with thresh 0 after each inode).
    pub wb_bandwidth_v6: bool,
    /// The dirty limits as 6.x computes them (`global_dirtyable_memory`,
    /// `domain_dirty_limits`); false: as 3.x does
    /// (`determine_dirtyable_memory`, `global_dirty_limits`).
    pub dirty_limits_v6: bool,
    /// ext4's dioread_nolock (its default since 5.6): a writepages round
    /// is one io_end with a reserved journal handle for the extent
    /// conversion.
    pub dioread_nolock: bool,
    /// The flusher's chunk per inode visit is `writeback_chunk_size` (3.2);
    /// false: `MAX_WRITEBACK_PAGES` (4 MiB) as before 3.2.
    pub writeback_chunk_v3_2: bool,
    /// Plug the flusher's whole work item (`wb_writeback`, 4.3; key
    /// `run.flusher_plug`); false: only each inode's ->writepages.
    pub flusher_plug: bool,
    /// Plug merging as 4.x and older do it (key `run.plug_merge = "any"`):
    /// any plugged request of the queue takes a merge, flush at 16; false:
    /// 6.x, only the newest, flush at 32 or a 128 KiB request.
    pub plug_merge_any: bool,
    /// `requeue_inode` keeps an inode dirtied after the pass's expiry line
    /// off b_more_io even when its slice was used up (6.10, "avoid to
    /// writeback non-expired inode in kupdate writeback"): kupdate then
    /// writes one chunk of a young inode, not the whole of it.
    pub requeue_expiry_v6_10: bool,
    /// Reclaim throttling as 5.16+ does it (`reclaim_throttle`: kswapd
    /// waits for tagged pages' writeback, direct reclaimers a jiffy while
    /// congested or without progress); false: `congestion_wait` (kswapd's
    /// fixed 100 ms, and direct reclaimers' `wait_iff_congested`, which
    /// with blk-mq never sleeps).
    pub reclaim_throttle_v5_16: bool,
    /// cgroup writeback (4.2): an inode's wb is its first dirtier's
    /// memcg's, with per-memcg dirty limits, foreign detection and
    /// switching, and writeback bios charged to the wb's blkcg; false: every
    /// inode stays on the bdi's root wb and writeback is the root's IO (a
    /// 2011 kernel), and CFQ's per-cgroup async queues (its
    /// `async_in_root = false`) find the dirtier in the inode's record of
    /// its first dirtier, as TerAvest's page tracking did.
    pub cgroup_writeback: bool,
    /// `wb_over_bg_thresh`'s memcg half takes the wb's share of the
    /// memcg's background threshold from the memcg domain's completions
    /// (6.11, "mm: correct calculation of wb's bg_thresh in cgroup
    /// domain"); false: from the global domain's, as `wb_calc_thresh`
    /// gave it before, so a cgroup doing most of a disk's writeback
    /// starts its background rounds near its memcg's full background
    /// threshold and one doing a small part of it much earlier.
    pub memcg_bg_share_v6_11: bool,
}

impl Features {
    /// The features of the kernel each throttle policy comes from.
    pub fn of(policy: ThrottlePolicy) -> Features {
        let v6 = policy == ThrottlePolicy::IoLess;
        Features {
            large_folios: v6,
            wbt: v6,
            blk_throttle_v6_18: v6,
            bw_dwork: v6,
            wb_bandwidth_v6: v6,
            dirty_limits_v6: v6,
            dioread_nolock: v6,
            writeback_chunk_v3_2: policy != ThrottlePolicy::Legacy,
            flusher_plug: v6,
            plug_merge_any: false,
            requeue_expiry_v6_10: v6,
            reclaim_throttle_v5_16: v6,
            // on under every policy, so that a run's cgroups behave alike
            // whichever throttle it picks (a 2011 kernel sets it false)
            cgroup_writeback: true,
            memcg_bg_share_v6_11: v6,
        }
    }
}

/// A knob written while the machine runs (`[events.NAME]`): a sysctl or a
/// sysfs attribute, with the kernel's rules for the write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobWrite {
    /// `vm.dirty_ratio`, `vm.dirty_bytes`, `vm.dirty_background_ratio`,
    /// `vm.dirty_background_bytes`, `vm.dirty_expire_centisecs`.
    Vm(VmKnob, u64),
    /// `/sys/class/bdi/MAJ:MIN/min_ratio` of a device.
    BdiMinRatio(usize, u64),
    /// `/sys/class/bdi/MAJ:MIN/max_ratio`.
    BdiMaxRatio(usize, u64),
    /// `/sys/class/bdi/MAJ:MIN/strict_limit`.
    BdiStrictLimit(usize, bool),
}

/// The `vm.*` sysctls a run can write mid-run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmKnob {
    DirtyRatio,
    DirtyBytes,
    DirtyBackgroundRatio,
    DirtyBackgroundBytes,
    DirtyExpireCentisecs,
}

impl Vm {
    /// Write one sysctl as its proc handler does: a `*_bytes` that
    /// changes zeroes its `*_ratio` and vice versa (`dirty_bytes_handler`,
    /// `dirty_ratio_handler` and their background twins; a write of the
    /// value already there leaves the twin alone). Returns whether the
    /// value changed.
    pub fn write(&mut self, knob: VmKnob, v: u64) -> bool {
        let (field, twin) = match knob {
            VmKnob::DirtyRatio => (&mut self.dirty_ratio, Some(&mut self.dirty_bytes)),
            VmKnob::DirtyBytes => (&mut self.dirty_bytes, Some(&mut self.dirty_ratio)),
            VmKnob::DirtyBackgroundRatio => (
                &mut self.dirty_background_ratio,
                Some(&mut self.dirty_background_bytes),
            ),
            VmKnob::DirtyBackgroundBytes => (
                &mut self.dirty_background_bytes,
                Some(&mut self.dirty_background_ratio),
            ),
            VmKnob::DirtyExpireCentisecs => (&mut self.dirty_expire_centisecs, None),
        };
        let changed = *field != v;
        *field = v;
        if let (true, Some(t)) = (changed, twin) {
            *t = 0;
        }
        changed
    }
}

/// `[events.NAME]`: at `at`, write each knob given, in document order.
#[derive(Clone, Debug)]
pub struct KnobEvent {
    pub name: String,
    pub at: Ns,
    pub writes: Vec<KnobWrite>,
}

#[derive(Clone, Debug)]
pub struct Trace {
    pub events: Vec<String>,
}

pub const TRACE_EVENTS: &[&str] = &[
    "balance_dirty_pages",
    "bdi_dirty_ratelimit",
    "global_dirty_state",
    "writeback_written",
    "writeback_start",
    "writeback_queue_io",
    "writeback_wake_background",
    "writeback_pages_written",
    "wbt_step",
    "wbt_timer",
    "sched_switch",
    "sched_wakeup",
    "mm_vmscan_kswapd_wake",
    "mm_vmscan_kswapd_sleep",
    "mm_vmscan_wakeup_kswapd",
    "mm_vmscan_direct_reclaim_begin",
    "mm_vmscan_direct_reclaim_end",
    "mm_vmscan_lru_shrink_inactive",
    "mm_vmscan_throttled",
    "mm_shrink_slab_start",
    "mm_shrink_slab_end",
    "bcache_write",
    "bcache_bypass_sequential",
    "bcache_bypass_congested",
    "bcache_writeback",
    "bcache_gc_start",
    "bcache_gc_end",
    "track_foreign_dirty",
    "flush_foreign",
    "inode_foreign_history",
    "inode_switch_wbs",
    "jbd2_start_commit",
    "jbd2_end_commit",
    "mark_victim",
    "reclaim_retry_zone",
];

/// `wbsim fidelity` tolerances: metric name -> allowed error in percent
/// (0: must be equal). Names are those of `fidelity::METRICS`.
#[derive(Clone, Debug, Default)]
pub struct Fidelity {
    pub tolerance: Vec<(String, f64)>,
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub machine: Machine,
    pub vm: Vm,
    pub devices: Vec<Device>,
    pub filesystems: Vec<Filesystem>,
    /// `[cgroups.NAME]`, in the file's order (the root is not listed).
    pub cgroups: Vec<crate::kernel::cgroup::CgroupConf>,
    pub jobs: Vec<Job>,
    pub run: Run,
    pub features: Features,
    /// Knob writes during the run, by time (then document order).
    pub events: Vec<KnobEvent>,
    pub trace: Trace,
    pub fidelity: Fidelity,
    /// `[isolation]`: write seed 003's isolation report (`isolation.txt`).
    pub isolation: Option<Isolation>,
}

/// `[isolation]`: the blkcgroup test's report of one experiment (seed
/// 003): each cgroup's disk-time fraction against its weight's share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Isolation {
    /// `experiment`: the number printed in the report's lines.
    pub experiment: u64,
    /// `allowed`: the largest error (per 1000) that passes; 150.
    pub allowed: u64,
}

/// The built-in default scenario: 10 dd writers with 1 MiB blocks on a
/// 50 MiB/s throttled device, dirty_bytes 200M, background 100M, 60 s.
pub const DEFAULT_SCENARIO: &str = include_str!("default.toml");

/// The longest `run.duration`: a year of simulated time.
pub const MAX_DURATION: Ns = 365 * 24 * 3600 * NSEC_PER_SEC;
/// The most tasks the jobs may start together (dd's `numjobs`, fs_mark's
/// threads, fio's clones): each is about 1 KiB of state.
pub const MAX_TASKS: u64 = 100_000;
/// The most devices, and so filesystems (each on a device of its own): an
/// inode keeps its superblock's index in 16 bits.
pub const MAX_DEVICES: usize = 4096;

impl Scenario {
    pub fn load_file(path: &str, sets: &[String]) -> Result<Scenario, ScenarioError> {
        let src = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            origin: Origin::File {
                file: path.into(),
                line: 0,
            },
            msg: format!("cannot read the scenario file: {e}"),
        })?;
        let name = std::path::Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scenario".into());
        Self::load_str(&src, path, &name, sets)
    }

    pub fn builtin(sets: &[String]) -> Result<Scenario, ScenarioError> {
        Self::load_str(DEFAULT_SCENARIO, "<built-in default>", "default", sets)
    }

    pub fn load_str(
        src: &str,
        file: &str,
        name: &str,
        sets: &[String],
    ) -> Result<Scenario, ScenarioError> {
        let mut raw = RawScenario::parse(src, file)?;
        for s in sets {
            raw.apply_set(s)?;
        }
        // a check of several values names the file and the --sets, not
        // the built-in scenario
        build(raw, name).map_err(|mut e| {
            if e.origin == Origin::Builtin {
                e.origin = Origin::Derived {
                    file: if file == "<built-in default>" {
                        "<built-in default scenario>".into()
                    } else {
                        file.into()
                    },
                    sets: sets.to_vec(),
                };
            }
            e
        })
    }
}

// ---- typed readers ---------------------------------------------------------

/// Typed reads of the raw scenario; each read consumes its entry. Device
/// drivers read their own keys through it (drivers/*.rs).
pub(crate) struct Reader {
    pub(crate) raw: RawScenario,
}

/// A `[devices.NAME]` table being read, for a driver's parser.
pub(crate) struct DevSection<'a> {
    pub name: &'a str,
    /// Where `type` was set: blamed for a missing required key.
    pub type_origin: &'a Origin,
}

impl DevSection<'_> {
    /// The path of the device's key `k`: `devices.NAME.k`.
    pub fn key(&self, k: &str) -> String {
        format!("devices.{}.{k}", self.name)
    }
}

/// The keys every device takes besides its driver's (drivers/*.rs `TYPE`).
pub(crate) const DEVICE_KEYS: &[&str] = &[
    "type",
    "size",
    "devno",
    "throttle.write_bps",
    "throttle.read_bps",
    "queue.max_sectors_kb",
    "queue.max_hw_sectors_kb",
    "queue.max_segments",
    "queue.nr_requests",
    "queue.scheduler",
    "queue.wbt_lat_usec",
    "queue.iosched.read_expire",
    "queue.iosched.write_expire",
    "queue.iosched.writes_starved",
    "queue.iosched.slice_idle",
    "queue.iosched.slice_idle_us",
    "queue.iosched.timeout_sync",
    "queue.iosched.max_budget",
    "queue.iosched.back_seek_max",
    "queue.iosched.back_seek_penalty",
    "queue.iosched.fifo_expire_sync",
    "queue.iosched.fifo_expire_async",
    "queue.iosched.low_latency",
    "queue.iosched.slice_sync",
    "queue.iosched.slice_async",
    "queue.iosched.quantum",
    "queue.iosched.group_idle",
    "queue.cfq.async_in_root",
    "io.cost.qos",
    "io.cost.model",
    "queue.read_ahead_kb",
    "bdi.min_ratio",
    "bdi.max_ratio",
    "bdi.strict_limit",
    "bdi.write_bandwidth",
    "bdi.dirty_ratelimit",
];

fn expect_str<'a>(e: &'a Entry, what: &str) -> Result<&'a str, ScenarioError> {
    match &e.val {
        RawVal::Str(s) => Ok(s),
        v => err(
            &e.origin,
            format!("found {}; expected {what}", v.describe()),
        ),
    }
}

impl Reader {
    pub(crate) fn take(&mut self, path: &str) -> Option<Entry> {
        self.raw.take(path)
    }

    pub(crate) fn size(&mut self, path: &str) -> Result<Option<(u64, Entry)>, ScenarioError> {
        let Some(e) = self.take(path) else {
            return Ok(None);
        };
        let v = match &e.val {
            RawVal::Int(i) if *i < 0 => {
                return err(
                    &e.origin,
                    format!("`{path}` is negative ({i}); expected a size ≥ 0"),
                )
            }
            RawVal::Int(i) => *i as u64,
            RawVal::Str(s) => units::parse_size(s).map_err(|m| ScenarioError {
                origin: e.origin.clone(),
                msg: format!("bad size for `{path}`: {m}"),
            })?,
            v => {
                return err(
                    &e.origin,
                    format!(
                        "`{path}`: found {}; expected a size such as \"200M\"",
                        v.describe()
                    ),
                )
            }
        };
        Ok(Some((v, e)))
    }

    pub(crate) fn rate(&mut self, path: &str) -> Result<Option<(u64, Entry)>, ScenarioError> {
        let Some(e) = self.take(path) else {
            return Ok(None);
        };
        let v = match &e.val {
            RawVal::Int(i) if *i < 0 => {
                return err(
                    &e.origin,
                    format!("`{path}` is negative ({i}); expected a rate ≥ 0"),
                )
            }
            RawVal::Int(i) => *i as u64,
            RawVal::Str(s) => units::parse_rate(s).map_err(|m| ScenarioError {
                origin: e.origin.clone(),
                msg: format!("bad rate for `{path}`: {m}"),
            })?,
            v => {
                return err(
                    &e.origin,
                    format!(
                        "`{path}`: found {}; expected a rate such as \"50MiB/s\"",
                        v.describe()
                    ),
                )
            }
        };
        Ok(Some((v, e)))
    }

    pub(crate) fn duration(&mut self, path: &str) -> Result<Option<(Ns, Entry)>, ScenarioError> {
        let Some(e) = self.take(path) else {
            return Ok(None);
        };
        let v = match &e.val {
            RawVal::Str(s) => units::parse_duration(s).map_err(|m| ScenarioError {
                origin: e.origin.clone(),
                msg: format!("bad duration for `{path}`: {m}"),
            })?,
            v => {
                return err(
                    &e.origin,
                    format!(
                        "`{path}`: found {}; expected a duration such as \"60s\"",
                        v.describe()
                    ),
                )
            }
        };
        Ok(Some((v, e)))
    }

    /// A boolean knob; `sysfs_01` also takes 0 and 1, as sysfs files do.
    pub(crate) fn boolean(
        &mut self,
        path: &str,
        sysfs_01: bool,
    ) -> Result<Option<bool>, ScenarioError> {
        let Some(e) = self.take(path) else {
            return Ok(None);
        };
        match e.val {
            RawVal::Bool(b) => Ok(Some(b)),
            RawVal::Int(i @ (0 | 1)) if sysfs_01 => Ok(Some(i == 1)),
            v => err(
                &e.origin,
                format!("`{path}`: found {}; expected true or false", v.describe()),
            ),
        }
    }

    pub(crate) fn uint(
        &mut self,
        path: &str,
        min: u64,
        max: u64,
    ) -> Result<Option<(u64, Entry)>, ScenarioError> {
        let Some(e) = self.take(path) else {
            return Ok(None);
        };
        let v = match &e.val {
            RawVal::Int(i) => *i,
            RawVal::Str(s) => match s.trim().parse::<i64>() {
                Ok(i) => i,
                Err(_) => {
                    return err(
                        &e.origin,
                        format!("`{path}`: found \"{s}\"; expected an integer in {min}..={max}"),
                    )
                }
            },
            v => {
                return err(
                    &e.origin,
                    format!(
                        "`{path}`: found {}; expected an integer in {min}..={max}",
                        v.describe()
                    ),
                )
            }
        };
        if v < min as i64 || v as i128 > max as i128 {
            return err(
                &e.origin,
                format!("`{path}` = {v} is out of range; expected an integer in {min}..={max}"),
            );
        }
        Ok(Some((v as u64, e)))
    }

    pub(crate) fn string(
        &mut self,
        path: &str,
        what: &str,
    ) -> Result<Option<(String, Entry)>, ScenarioError> {
        let Some(e) = self.take(path) else {
            return Ok(None);
        };
        let s = expect_str(&e, what)?.to_string();
        Ok(Some((s, e)))
    }

    pub(crate) fn choice(
        &mut self,
        path: &str,
        choices: &[&str],
    ) -> Result<Option<(String, Entry)>, ScenarioError> {
        let what = format!(
            "one of {}",
            choices
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let Some((s, e)) = self.string(path, &what)? else {
            return Ok(None);
        };
        if !choices.contains(&s.as_str()) {
            return err(
                &e.origin,
                format!("`{path}` = \"{s}\" is not known; expected {what}"),
            );
        }
        Ok(Some((s, e)))
    }

    /// A positive factor: an integer or a decimal number, in `min..=max`.
    pub(crate) fn factor(
        &mut self,
        path: &str,
        min: f64,
        max: f64,
    ) -> Result<Option<f64>, ScenarioError> {
        let Some(e) = self.take(path) else {
            return Ok(None);
        };
        let v = match &e.val {
            RawVal::Int(i) => *i as f64,
            RawVal::Float(f) => *f,
            RawVal::Str(t) if t.trim().parse::<f64>().is_ok_and(f64::is_finite) => {
                t.trim().parse::<f64>().unwrap_or(0.0)
            }
            v => {
                return err(
                    &e.origin,
                    format!(
                        "`{path}`: found {}; expected a number in {min}..={max}",
                        v.describe()
                    ),
                )
            }
        };
        if !(min..=max).contains(&v) {
            return err(
                &e.origin,
                format!("`{path}` = {v} is out of range; expected a number in {min}..={max}"),
            );
        }
        Ok(Some(v))
    }

    /// A CPU cost: a duration of at most a second (a cost of 900 s a page
    /// is a typo for 900ns, not a machine).
    pub(crate) fn cost(&mut self, path: &str, default: Ns) -> Result<Ns, ScenarioError> {
        Ok(self.cost_given(path)?.unwrap_or(default))
    }

    /// A CPU cost as given, or `default` times `scale` (rounded to the ns).
    fn cost_scaled(&mut self, path: &str, default: Ns, scale: f64) -> Result<Ns, ScenarioError> {
        Ok(self
            .cost_given(path)?
            .unwrap_or_else(|| (default as f64 * scale).round() as Ns))
    }

    fn cost_given(&mut self, path: &str) -> Result<Option<Ns>, ScenarioError> {
        match self.duration(path)? {
            Some((v, e)) if v > 1_000_000_000 => err(
                &e.origin,
                format!(
                    "`{path}` = {} s is not a CPU cost of one operation; expected at most 1s, e.g. \"900ns\" or \"2us\"",
                    v / 1_000_000_000
                ),
            ),
            Some((v, _)) => Ok(Some(v)),
            None => Ok(None),
        }
    }
}

/// `machine.*`: memory, CPUs, HZ, the scheduler and the CPU costs.
fn read_machine(r: &mut Reader) -> Result<Machine, ScenarioError> {
    let memory = r.size("machine.memory")?.map(|x| x.0).unwrap_or(16 << 30);
    let cpus = r
        .uint("machine.cpus", 1, 4096)?
        .map(|x| x.0 as u32)
        .unwrap_or(4);
    let hz = match r.uint("machine.hz", 100, 1000)? {
        Some((h, e)) if ![100, 250, 300, 1000].contains(&h) => {
            return err(
                &e.origin,
                format!("`machine.hz` = {h}; expected one of 100, 250, 300, 1000 (CONFIG_HZ)"),
            )
        }
        Some((h, _)) => h,
        None => 250,
    };
    let page_size = match r.size("machine.page_size")? {
        Some((p, e)) if p != 4096 => {
            return err(
                &e.origin,
                format!("`machine.page_size` = {p}; only 4096 is supported"),
            )
        }
        Some((p, _)) => p,
        None => 4096,
    };
    let anon = r.size("machine.anon")?.map(|x| x.0).unwrap_or(memory / 32);
    let reserve = r.size("machine.reserve")?.map(|x| x.0);
    let host_backed_free = r.size("machine.host_backed_free")?.map(|x| x.0);
    let sched = match r.choice("machine.sched", &["eevdf", "fifo"])? {
        Some((v, _)) if v == "eevdf" => SchedPolicy::Eevdf,
        _ => SchedPolicy::Fifo,
    };
    let sched_base_slice = r.cost("machine.sched_base_slice", 700 * NSEC_PER_USEC)?;
    // the sysctl takes 0 and 1
    let autogroup = r.boolean("machine.autogroup", true)?;
    if anon + reserve.unwrap_or(0) + (64 << 20) > memory {
        return err(
            &Origin::Builtin,
            "machine.anon + machine.reserve leave less than 64 MiB for the page cache",
        );
    }
    // a CPU `k` times slower (or faster) than the one the default costs
    // describe: the defaults of the costs of work are scaled, the costs
    // given stand as given (`CpuCost::scaled`'s split: the slice and the
    // timer latency are not work)
    let k = r.factor("machine.cost.scale", 0.01, 1000.0)?.unwrap_or(1.0);
    let cost = CpuCost {
        syscall: r.cost_scaled("machine.cost.syscall", NSEC_PER_USEC / 2, k)?,
        copy_per_kib: r.cost_scaled("machine.cost.copy_per_kib", 80, k)?,
        page_cache_insert: r.cost_scaled("machine.cost.page_cache_insert", 300, k)?,
        reclaim_per_page: r.cost_scaled("machine.cost.reclaim_per_page", 500, k)?,
        host_fault: r.cost_scaled("machine.cost.host_fault", 0, k)?,
        page_fault: r.cost_scaled("machine.cost.page_fault", 2 * NSEC_PER_USEC, k)?,
        cache_miss: r.cost_scaled("machine.cost.cache_miss", 0, k)?,
        writeback_per_page: r.cost_scaled("machine.cost.writeback_per_page", 150, k)?,
        bio_submit: r.cost_scaled("machine.cost.bio_submit", 2 * NSEC_PER_USEC, k)?,
        file_create: r.cost_scaled("machine.cost.file_create", 15 * NSEC_PER_USEC, k)?,
        writepages_inode: r.cost_scaled("machine.cost.writepages_inode", 5 * NSEC_PER_USEC, k)?,
        rq_dispatch: r.cost_scaled("machine.cost.rq_dispatch", 5 * NSEC_PER_USEC, k)?,
        bdp_call: r.cost_scaled("machine.cost.bdp_call", NSEC_PER_USEC, k)?,
        fio_io: r.cost_scaled("machine.cost.fio_io", 500, k)?,
        wakeup: r.cost_scaled("machine.cost.wakeup", 3 * NSEC_PER_USEC, k)?,
        wakeup_jitter: r.cost("machine.cost.wakeup_jitter", 30 * NSEC_PER_USEC)?,
        sched_slice: r.cost("machine.cost.sched_slice", 3 * NSEC_PER_MSEC)?,
        fork: r.cost_scaled("machine.cost.fork", 0, k)?,
        spread: r
            .uint("machine.cost.spread", 0, 90)?
            .map(|x| x.0)
            .unwrap_or(0),
    };
    let mem = read_zones(r, memory, page_size)?;
    let managed: u64 = mem.zones.iter().map(|z| z.managed).sum();
    // the memory the kernel does not manage counts as kernel memory
    let anon = anon.max(memory - managed * page_size);
    Ok(Machine {
        memory,
        cpus,
        hz,
        page_size,
        anon,
        reserve,
        mem,
        host_backed_free,
        sched,
        sched_base_slice,
        autogroup,
        cost,
    })
}

/// `vm.*`: the dirty sysctls, applied in document order with the kernel's
/// rule that writing a *_bytes zeroes its *_ratio and vice versa.
fn read_vm(r: &mut Reader, page_size: u64) -> Result<Vm, ScenarioError> {
    let mut vm = Vm::default();
    let mut writes: Vec<(usize, VmKnob, u64)> = Vec::new();
    if let Some((v, e)) = r.uint("vm.dirty_ratio", 0, 100)? {
        writes.push((e.order, VmKnob::DirtyRatio, v));
    }
    if let Some((v, e)) = r.uint("vm.dirty_background_ratio", 0, 100)? {
        writes.push((e.order, VmKnob::DirtyBackgroundRatio, v));
    }
    if let Some((v, e)) = r.size("vm.dirty_bytes")? {
        check_bytes_knob("vm.dirty_bytes", v, page_size, &e)?;
        writes.push((e.order, VmKnob::DirtyBytes, v));
    }
    if let Some((v, e)) = r.size("vm.dirty_background_bytes")? {
        check_bytes_knob("vm.dirty_background_bytes", v, page_size, &e)?;
        writes.push((e.order, VmKnob::DirtyBackgroundBytes, v));
    }
    writes.sort_by_key(|w| w.0);
    for (_, k, v) in writes {
        vm.write(k, v);
    }
    if let Some((v, _)) = r.uint("vm.dirty_expire_centisecs", 0, i32::MAX as u64)? {
        vm.dirty_expire_centisecs = v;
    }
    if let Some((v, _)) = r.uint("vm.dirty_writeback_centisecs", 0, i32::MAX as u64)? {
        vm.dirty_writeback_centisecs = v;
    }
    if let Some((v, _)) = r.uint("vm.vfs_cache_pressure", 0, i32::MAX as u64)? {
        vm.vfs_cache_pressure = v;
    }
    if let Some((v, _)) = r.choice("vm.shrinker_arith", &["priority", "lru-ratio"])? {
        vm.shrinker_arith = crate::mm::shrinker::ShrinkerArith::parse(&v).unwrap_or_default();
    }
    Ok(vm)
}

fn build(raw: RawScenario, name: &str) -> Result<Scenario, ScenarioError> {
    let mut r = Reader { raw };

    let machine = read_machine(&mut r)?;
    let page_size = machine.page_size;
    let vm = read_vm(&mut r, page_size)?;

    let mut devices = read_devices(&mut r)?;
    let (mut filesystems, used) = read_filesystems(&mut r, &devices, page_size)?;
    let run = read_run(&mut r)?;
    let features = read_features(&mut r, run.dirty_throttle)?;
    feature_defaults(&features, &mut devices, &mut filesystems, page_size);
    let cgroups = crate::kernel::cgroup::read_cgroups(&mut r, &devices)?;
    let jobs = read_jobs(
        &mut r,
        &machine,
        &devices,
        &filesystems,
        &cgroups,
        run.duration,
    )?;
    check_devices_used(&r, &devices, used, &jobs)?;
    let trace = read_trace(&mut r)?;
    let events = read_events(&mut r, &devices, run.duration, page_size)?;
    let fidelity = read_fidelity(&mut r)?;
    let isolation = if r.raw.tables.contains_key("isolation")
        || r.raw.entries.keys().any(|k| k.starts_with("isolation."))
    {
        Some(Isolation {
            experiment: r
                .uint("isolation.experiment", 0, 1 << 20)?
                .map_or(0, |x| x.0),
            allowed: r.uint("isolation.allowed", 0, 1000)?.map_or(150, |x| x.0),
        })
    } else {
        None
    };

    let scen_name = r
        .string("name", "a name")?
        .map(|x| x.0)
        .unwrap_or_else(|| name.to_string());

    if let Some((path, e)) = r.raw.first_leftover() {
        let hint = keys::expected_for(path);
        return err(&e.origin, format!("unknown key `{path}`; expected {hint}"));
    }
    if jobs.is_empty() {
        return err(
            &Origin::Builtin,
            "the scenario has no [jobs]; add one, e.g. [jobs.dd] with numjobs and bs",
        );
    }
    Ok(Scenario {
        name: scen_name,
        machine,
        vm,
        devices,
        filesystems,
        cgroups,
        jobs,
        run,
        features,
        events,
        trace,
        fidelity,
        isolation,
    })
}

/// `[devices.NAME]`: `type` picks the driver, which reads its own keys
/// (drivers/*.rs); the keys every device takes are read here.
fn read_devices(r: &mut Reader) -> Result<Vec<Device>, ScenarioError> {
    let mut devices: Vec<Device> = Vec::new();
    let types: Vec<&str> = crate::drivers::DRIVER_TYPES
        .iter()
        .map(|t| t.name)
        .collect();
    for (dname, dorigin) in r.raw.names_under("devices") {
        if devices.len() == MAX_DEVICES {
            return err(
                &dorigin,
                format!(
                    "device `{dname}` is one too many; expected at most {MAX_DEVICES} [devices]"
                ),
            );
        }
        let p = |k: &str| format!("devices.{dname}.{k}");
        let (ty, tye) = match r.choice(&p("type"), &types)? {
            Some(x) => (x.0, x.1.origin),
            None => {
                let list = types
                    .iter()
                    .map(|t| format!("\"{t}\""))
                    .collect::<Vec<_>>()
                    .join(", ");
                return err(
                    &dorigin,
                    format!("device `{dname}` has no `type`; expected `type` = one of {list}"),
                );
            }
        };
        let driver = crate::drivers::DRIVER_TYPES
            .iter()
            .find(|t| t.name == ty)
            .expect("a listed type");
        let sec = DevSection {
            name: &dname,
            type_origin: &tye,
        };
        let (mut kind, implied) = (driver.parse)(r, &sec)?;
        let throttle = crate::block::blk_throttle::parse_conf(r, &sec, implied)?;
        let info = kind.queue_info();
        // the N-th device of a major (counted by driver, whatever devno
        // says) is MAJOR:N*step
        let nth = devices
            .iter()
            .filter(|d| d.kind.queue_info().major == info.major)
            .count() as u32;
        let (dmaj, dmin) = (info.major, nth * info.minor_step);
        let (major, minor) = match r.string(&p("devno"), "\"MAJOR:MINOR\" such as \"7:0\"")? {
            None => (dmaj, dmin),
            Some((s, e)) => {
                let parsed = s.split_once(':').and_then(|(a, b)| {
                    Some((a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?))
                });
                match parsed {
                    // the kernel's dev_t: a 12-bit major, a 20-bit minor
                    // (MINORBITS)
                    Some((ma, mi)) if ma > 4095 || mi > (1 << 20) - 1 => {
                        return err(
                            &e.origin,
                            format!(
                                "`devno` = \"{s}\": out of range; expected a major in 0..=4095 \
                                 and a minor in 0..=1048575 (the kernel's dev_t)"
                            ),
                        )
                    }
                    Some(x) => x,
                    None => {
                        return err(
                            &e.origin,
                            format!("`devno` = \"{s}\"; expected \"MAJOR:MINOR\" such as \"7:0\""),
                        )
                    }
                }
            }
        };
        let size = kind.set_size(r.size(&p("size"))?)?;
        let max_hw = r
            .uint(&p("queue.max_hw_sectors_kb"), 4, 1 << 20)?
            .map(|x| x.0)
            .unwrap_or(info.max_hw_sectors_kb);
        let max_sectors_kb = match r.uint(&p("queue.max_sectors_kb"), 4, 1 << 20)? {
            Some((v, e)) if v > max_hw => {
                return err(
                    &e.origin,
                    format!("`queue.max_sectors_kb` = {v} exceeds max_hw_sectors_kb = {max_hw}"),
                )
            }
            Some((v, _)) => v,
            None => max_hw.min(1280),
        };
        let max_segments = r
            .uint(&p("queue.max_segments"), 1, 65535)?
            .map(|x| x.0 as u32)
            .unwrap_or(128);
        // the kernel picks mq-deadline for a single-queue device (a SATA
        // disk) and none for loop, NVMe-like SSDs and md
        let scheduler = match r.choice(
            &p("queue.scheduler"),
            &["none", "mq-deadline", "bfq", "cfq"],
        )? {
            Some((v, e)) if v != "none" => {
                if matches!(v.as_str(), "bfq" | "cfq") && info.slots == 0 {
                    return err(
                        &e.origin,
                        format!("`queue.scheduler` = \"{v}\" on a `{}` device, which has no driver slots for requests to wait for; expected a disk or hdd", kind.type_name()),
                    );
                }
                match v.as_str() {
                    "mq-deadline" => Elevator::MqDeadline,
                    "bfq" => Elevator::Bfq,
                    _ => Elevator::Cfq,
                }
            }
            Some(_) => Elevator::None,
            None => info.scheduler,
        };
        // blk_mq_init_sched's 2 × min(depth, BLKDEV_MAX_RQ) for an
        // elevator; CFQ's legacy queue had BLKDEV_MAX_RQ (128) requests
        let default_nr = match scheduler {
            Elevator::MqDeadline | Elevator::Bfq => info.nr_requests_sched,
            Elevator::Cfq => 128,
            Elevator::None => info.nr_requests,
        };
        let nr_requests = r
            .uint(&p("queue.nr_requests"), 4, 65536)?
            .map(|x| x.0 as u32)
            .unwrap_or(default_nr);
        // u64::MAX: the policy's default, resolved below
        let wbt_lat_usec = match r.uint(&p("queue.wbt_lat_usec"), 0, 1 << 40)? {
            Some((v, e)) if v != 0 && info.bio_based => {
                return err(
                    &e.origin,
                    format!("`queue.wbt_lat_usec` = {v} on a {} device: it is bio-based and has no wbt; set it on the devices below it", kind.type_name()),
                )
            }
            Some((v, _)) => v,
            None => u64::MAX,
        };
        let iosched = parse_iosched(r, &p, scheduler)?;
        let (bfq, cfq) = parse_prop_iosched(r, &p, scheduler)?;
        let iocost = crate::block::blk_iocost::parse_conf(r, &p, &info)?;
        // VM_READAHEAD_PAGES: 128 KiB
        let read_ahead_kb = r
            .uint(&p("queue.read_ahead_kb"), 0, 1 << 20)?
            .map(|x| x.0)
            .unwrap_or(128);
        let min_ratio = r
            .uint(&p("bdi.min_ratio"), 0, 100)?
            .map(|x| x.0)
            .unwrap_or(0);
        let max_ratio = match r.uint(&p("bdi.max_ratio"), 0, 100)? {
            Some((v, e)) if v < min_ratio => {
                return err(
                    &e.origin,
                    format!("`bdi.max_ratio` = {v} is below `bdi.min_ratio` = {min_ratio}"),
                )
            }
            Some((v, _)) => v,
            None => 100,
        };
        let strict_limit = r.boolean(&p("bdi.strict_limit"), true)?.unwrap_or(false);
        let bdi = BdiConf {
            min_ratio,
            max_ratio,
            strict_limit,
            write_bandwidth: r.rate(&p("bdi.write_bandwidth"))?.map(|x| x.0.max(1)),
            dirty_ratelimit: r.rate(&p("bdi.dirty_ratelimit"))?.map(|x| x.0.max(1)),
        };
        // a key left under the device's table is none of its driver's and
        // none of every device's
        let pre = format!("devices.{dname}.");
        if let Some((k, e)) = r
            .raw
            .entries
            .iter()
            .filter(|(k, _)| k.starts_with(&pre))
            .min_by_key(|(_, e)| e.order)
        {
            // a key of other device types says which
            let key = &k[pre.len()..];
            let others: Vec<String> = crate::drivers::DRIVER_TYPES
                .iter()
                .filter(|t| t.keys.contains(&key))
                .map(|t| format!("`{}`", t.name))
                .collect();
            let takes = if others.is_empty() {
                String::new()
            } else {
                format!(" (`{key}` is a key of {} devices)", others.join(", "))
            };
            return err(
                &e.origin,
                format!(
                    "unknown key `{k}` for a `{ty}` device{takes}; expected one of its keys {{{}}} or a key of every device {{{}}}",
                    driver.keys.join(","),
                    DEVICE_KEYS.join(",")
                ),
            );
        }
        devices.push(Device {
            name: dname.clone(),
            bdi,
            major,
            minor,
            size,
            kind,
            throttle,
            queue: Queue {
                max_sectors_kb,
                max_hw_sectors_kb: max_hw,
                max_segments,
                nr_requests,
                scheduler,
                wbt_lat_usec,
                iosched,
                bfq,
                cfq,
                read_ahead_kb,
                iocost,
            },
        });
    }
    // a bcache device is its backing device's size less the data offset
    for i in 0..devices.len() {
        if let DeviceKind::Bcache(c) = &devices[i].kind {
            if let Some(sz) = crate::drivers::bcache::size_from_backing(c, &devices) {
                devices[i].size = sz;
            }
        }
    }
    Ok(devices)
}

/// `queue.iosched.*`: mq-deadline's tunables (block/mq-deadline.c's sysfs
/// `read_expire`, `write_expire` in ms, `writes_starved`), only on a queue
/// whose scheduler is mq-deadline (`queue/iosched/` is the elevator's).
fn parse_iosched(
    r: &mut Reader,
    p: &dyn Fn(&str) -> String,
    scheduler: Elevator,
) -> Result<crate::block::mq_deadline::Tunables, ScenarioError> {
    let mut t = crate::block::mq_deadline::Tunables::default();
    let ms = crate::sim::NSEC_PER_MSEC;
    for k in ["read_expire", "write_expire", "writes_starved"] {
        let key = format!("queue.iosched.{k}");
        let Some((v, e)) = r.uint(&p(&key), 0, 1 << 30)? else {
            continue;
        };
        if scheduler != Elevator::MqDeadline {
            return err(
                &e.origin,
                format!("`{key}` on a queue whose scheduler is `none`; expected `queue.scheduler = \"mq-deadline\"` with it"),
            );
        }
        match k {
            "read_expire" => t.read_expire = v * ms,
            "write_expire" => t.write_expire = v * ms,
            _ => t.writes_starved = v as u32,
        }
    }
    Ok(t)
}

/// `queue.iosched.*` of BFQ and CFQ (their sysfs names and units: ms
/// unless the name says `_us`; `back_seek_max` in KiB, `max_budget` in
/// sectors) and `queue.cfq.async_in_root`, each only under its scheduler.
fn parse_prop_iosched(
    r: &mut Reader,
    p: &dyn Fn(&str) -> String,
    scheduler: Elevator,
) -> Result<
    (
        crate::block::bfq::BfqTunables,
        crate::block::cfq::CfqTunables,
    ),
    ScenarioError,
> {
    let mut b = crate::block::bfq::BfqTunables::default();
    let mut c = crate::block::cfq::CfqTunables::default();
    let ms = crate::sim::NSEC_PER_MSEC;
    const BFQ: &[&str] = &[
        "slice_idle",
        "slice_idle_us",
        "timeout_sync",
        "max_budget",
        "back_seek_max",
        "back_seek_penalty",
        "fifo_expire_sync",
        "fifo_expire_async",
        "low_latency",
    ];
    const CFQ: &[&str] = &[
        "slice_idle",
        "group_idle",
        "slice_sync",
        "slice_async",
        "quantum",
        "back_seek_max",
        "back_seek_penalty",
        "fifo_expire_sync",
        "fifo_expire_async",
    ];
    let all: Vec<&str> = BFQ.iter().chain(CFQ.iter()).copied().collect();
    let mut seen = std::collections::BTreeSet::new();
    for k in all {
        if !seen.insert(k) {
            continue;
        }
        let key = format!("queue.iosched.{k}");
        let Some((v, e)) = r.uint(&p(&key), 0, 1 << 30)? else {
            continue;
        };
        // a key of the other proportional scheduler is an error; under
        // mq-deadline the keys are kept and unused (sysfs would have no
        // such file, but a scenario switching schedulers with `--set`
        // keeps its tunables)
        let ok = match scheduler {
            Elevator::Bfq => BFQ.contains(&k),
            Elevator::Cfq => CFQ.contains(&k),
            Elevator::MqDeadline => true,
            Elevator::None => false,
        };
        if !ok {
            return err(
                &e.origin,
                format!("`{key}` is not a tunable of this queue's scheduler; expected it with `queue.scheduler` = {}", if BFQ.contains(&k) && CFQ.contains(&k) { "\"bfq\" or \"cfq\"" } else if BFQ.contains(&k) { "\"bfq\"" } else { "\"cfq\"" }),
            );
        }
        let pos = |what: &str| -> Result<(), ScenarioError> {
            if v == 0 {
                return err(&e.origin, format!("`{key}` = 0; expected {what} > 0"));
            }
            Ok(())
        };
        match k {
            "low_latency" if v != 0 => {
                return err(
                    &e.origin,
                    format!("`{key}` = {v}: BFQ's weight raising is not modelled; expected 0"),
                )
            }
            "low_latency" => {}
            "slice_idle" => {
                b.slice_idle = v * ms;
                c.slice_idle = v * ms;
            }
            "slice_idle_us" => b.slice_idle = v * 1000,
            "group_idle" => c.group_idle = v * ms,
            "timeout_sync" => {
                pos("a timeout in ms")?;
                b.timeout_sync = v * ms
            }
            "max_budget" => b.max_budget = v,
            "back_seek_max" => {
                b.back_seek_max = v;
                c.back_seek_max = v;
            }
            "back_seek_penalty" => {
                pos("a penalty")?;
                b.back_seek_penalty = v;
                c.back_seek_penalty = v;
            }
            "fifo_expire_sync" => {
                b.fifo_expire_sync = v * ms;
                c.fifo_expire_sync = v * ms;
            }
            "fifo_expire_async" => {
                b.fifo_expire_async = v * ms;
                c.fifo_expire_async = v * ms;
            }
            "slice_sync" => {
                pos("a slice in ms")?;
                c.slice_sync = v * ms
            }
            "slice_async" => {
                pos("a slice in ms")?;
                c.slice_async = v * ms
            }
            _ => {
                pos("a request count")?;
                c.quantum = v as u32
            }
        }
    }
    let path = p("queue.cfq.async_in_root");
    let origin = r.raw.entries.get(&path).map(|e| e.origin.clone());
    if let Some(v) = r.boolean(&path, true)? {
        if !matches!(scheduler, Elevator::Cfq | Elevator::MqDeadline) {
            return err(
                &origin.unwrap_or(Origin::Builtin),
                "`queue.cfq.async_in_root` on a queue whose scheduler is not CFQ; expected `queue.scheduler = \"cfq\"` with it".to_string(),
            );
        }
        c.async_in_root = v;
    }
    Ok((b, c))
}

/// `[filesystems.NAME]`: each on a device of its own (a stacked device's
/// members are taken), every device with one.
fn read_filesystems(
    r: &mut Reader,
    devices: &[Device],
    page_size: u64,
) -> Result<(Vec<Filesystem>, Vec<bool>), ScenarioError> {
    let mut filesystems = Vec::new();
    let mut used = vec![false; devices.len()];
    // stacked devices claim the devices below them
    for d in devices {
        let origin = r
            .raw
            .tables
            .get(&format!("devices.{}", d.name))
            .cloned()
            .unwrap_or(Origin::Builtin);
        d.kind.claim_lower(devices, &mut used, &origin)?;
    }
    for (fname, forigin) in r.raw.names_under("filesystems") {
        let p = |k: &str| format!("filesystems.{fname}.{k}");
        let kind = match r.choice(&p("type"), &["ext4", "xfs"])? {
            Some((t, _)) if t == "xfs" => FsKind::Xfs,
            _ => FsKind::Ext4,
        };
        let device = match r.string(&p("device"), "a device name")? {
            None => return err(&forigin, format!("filesystem `{fname}` has no `device`; expected `device = \"NAME\"` naming one of [devices]")),
            Some((d, e)) => match devices.iter().position(|x| x.name == d) {
                Some(i) => i,
                None => {
                    let known: Vec<_> = devices.iter().map(|x| x.name.as_str()).collect();
                    return err(&e.origin, format!("filesystem `{fname}` names device `{d}`, which is not defined; expected one of {known:?}"));
                }
            },
        };
        if used[device] {
            return err(
                &forigin,
                format!("device `{}` already has a filesystem", devices[device].name),
            );
        }
        used[device] = true;
        let max_folio = match r.size(&p("max_folio"))? {
            Some((v, e)) if v < page_size || !v.is_power_of_two() || v > (2 << 20) => {
                return err(
                    &e.origin,
                    format!("`max_folio` = {v}; expected a power of two from 4k to 2M"),
                )
            }
            Some((v, _)) => v,
            None => 0, // resolved below from the policy
        };
        let agcount = r
            .uint(&p("agcount"), 1, 4096)?
            .map(|x| x.0 as u32)
            .unwrap_or(4);
        let metadata = r.boolean(&p("metadata"), false)?.unwrap_or(true);
        let inode_reclaim = match r.choice(&p("inode_reclaim"), &["sync-wait", "non-blocking"])? {
            Some((_, e)) if kind != FsKind::Xfs => {
                return err(&e.origin, "`inode_reclaim` is an xfs option (XFS's inode cache shrinker); an ext4 filesystem does not take it".to_string());
            }
            Some((v, _)) => crate::fs::xfs_icache::InodeReclaim::parse(&v).unwrap_or_default(),
            None => Default::default(),
        };
        // the filesystem's own mount and mkfs options
        let fs_bytes = devices[device].size;
        let (commit_interval, journal_size) = match kind {
            FsKind::Ext4 => crate::fs::ext4_meta::read_keys(r, &fname, fs_bytes)?,
            FsKind::Xfs => crate::fs::xfs_meta::read_keys(r, &fname, fs_bytes)?,
        };
        filesystems.push(Filesystem {
            name: fname,
            kind,
            device,
            max_folio,
            agcount,
            metadata,
            commit_interval,
            journal_size,
            inode_reclaim,
        });
    }
    Ok((filesystems, used))
}

/// Every device is used: by a filesystem, a stacked device, or an fio job
/// that names it (`filename=/dev/NAME`).
fn check_devices_used(
    r: &Reader,
    devices: &[Device],
    mut used: Vec<bool>,
    jobs: &[Job],
) -> Result<(), ScenarioError> {
    for j in jobs {
        if let JobKind::Fio(f) = &j.kind {
            for name in f.filename.iter().flat_map(|n| n.split(':')) {
                if let Some(i) = name
                    .strip_prefix("/dev/")
                    .and_then(|d| devices.iter().position(|x| x.name == d))
                {
                    used[i] = true;
                }
            }
        }
    }
    if let Some(i) = used.iter().position(|u| !u) {
        let d = &devices[i];
        let origin = r
            .raw
            .tables
            .get(&format!("devices.{}", d.name))
            .cloned()
            .unwrap_or(Origin::Builtin);
        return err(&origin, format!("device `{}` is not named by any filesystem or fio job; add a [filesystems.NAME] with `device = \"{}\"` or remove it", d.name, d.name));
    }
    Ok(())
}

/// `[run]`: duration, seed, the measured window, the throttle policy and
/// the sampling interval.
fn read_run(r: &mut Reader) -> Result<Run, ScenarioError> {
    let duration = match r.duration("run.duration")? {
        Some((0, e)) => return err(&e.origin, "`run.duration` must be > 0"),
        Some((d, e)) if d > MAX_DURATION => {
            return err(
                &e.origin,
                format!(
                    "`run.duration` = {} s is over the cap of 365 days ({} s) of simulated time",
                    d / NSEC_PER_SEC,
                    MAX_DURATION / NSEC_PER_SEC
                ),
            )
        }
        Some((d, _)) => d,
        None => 60 * NSEC_PER_SEC,
    };
    let seed = r
        .uint("run.seed", 0, i64::MAX as u64)?
        .map(|x| x.0)
        .unwrap_or(1);
    let warmup = match r.duration("run.warmup")? {
        Some((w, e)) if w >= duration => {
            return err(
                &e.origin,
                "`run.warmup` must be shorter than `run.duration`",
            )
        }
        Some((w, _)) => w,
        None => duration / 2,
    };
    let dirty_throttle =
        match r.choice("run.dirty_throttle", &["io-less", "io-less-3.2", "legacy"])? {
            Some((s, _)) if s == "io-less-3.2" => ThrottlePolicy::IoLess32,
            Some((s, _)) if s == "legacy" => ThrottlePolicy::Legacy,
            _ => ThrottlePolicy::IoLess,
        };
    let sample_interval = match r.duration("run.sample_interval")? {
        Some((s, e)) if s < NSEC_PER_MSEC => {
            return err(&e.origin, "`run.sample_interval` must be ≥ 1ms")
        }
        Some((s, _)) => s,
        None => 100 * NSEC_PER_MSEC,
    };
    Ok(Run {
        duration,
        seed,
        warmup,
        dirty_throttle,
        sample_interval,
    })
}

/// The defaults that depend on the kernel's features: the largest folio of
/// each filesystem and each queue's wbt latency, where not set.
fn feature_defaults(
    features: &Features,
    devices: &mut [Device],
    filesystems: &mut [Filesystem],
    page_size: u64,
) {
    // Large folios are a 6.x feature: older kernels dirty page by page.
    for f in filesystems.iter_mut().filter(|f| f.max_folio == 0) {
        f.max_folio = if features.large_folios {
            2 << 20
        } else {
            page_size
        };
    }
    for d in devices
        .iter_mut()
        .filter(|d| d.queue.wbt_lat_usec == u64::MAX)
    {
        let q = d.kind.queue_info();
        // wbt_default_latency_nsec: 75 ms for rotational queues, 2 ms for
        // others; bio-based queues have no wbt
        // bfq_init_queue's wbt_disable_default: BFQ (and CFQ before it)
        // switch wbt off
        let prop = matches!(d.queue.scheduler, Elevator::Bfq | Elevator::Cfq);
        d.queue.wbt_lat_usec = if !features.wbt || q.bio_based || prop {
            0
        } else if q.rotational {
            75_000
        } else {
            2_000
        };
    }
}

/// `[jobs.NAME]`: `type` picks the job type, which reads its own keys
/// (workload/*.rs); the keys every job takes are read here.
fn read_jobs(
    r: &mut Reader,
    machine: &Machine,
    devices: &[Device],
    filesystems: &[Filesystem],
    cgroups: &[crate::kernel::cgroup::CgroupConf],
    duration: Ns,
) -> Result<Vec<Job>, ScenarioError> {
    let mut jobs: Vec<Job> = Vec::new();
    for (jname, jorigin) in r.raw.names_under("jobs") {
        let p = |k: &str| format!("jobs.{jname}.{k}");
        let ty = match r.choice(&p("type"), &["dd", "fs_mark", "fio", "simoop"])? {
            Some((t, _)) => t,
            None if jname == "dd" || jname.starts_with("dd") => "dd".into(),
            None if jname == "fs_mark" || jname == "fsmark" => "fs_mark".into(),
            None => {
                return err(
                    &jorigin,
                    format!(
                    "job `{jname}` has no `type`; expected `type = \"dd\"`, `type = \"fs_mark\"`, `type = \"fio\"` or `type = \"simoop\"`"
                ),
                )
            }
        };

        let filesystem = match r.string(&p("filesystem"), "a filesystem name")? {
            Some((f, e)) => match filesystems.iter().position(|x| x.name == f) {
                Some(i) => i,
                None => {
                    return err(
                        &e.origin,
                        format!("job `{jname}` names filesystem `{f}`, which is not defined"),
                    )
                }
            },
            None if filesystems.len() == 1 => 0,
            // simoop's directories name its filesystems
            None if ty == "simoop" => 0,
            None => {
                return err(
                    &jorigin,
                    format!(
                        "job `{jname}` needs `filesystem = \"NAME\"` (there are {} filesystems)",
                        filesystems.len()
                    ),
                )
            }
        };
        let start = match r.duration(&p("start"))? {
            Some((t, e)) if t >= duration => {
                return err(
                    &e.origin,
                    format!(
                        "`jobs.{jname}.start` = {} s is not before the end of the run \
                         (`run.duration` = {} s): the job would never run",
                        t as f64 / 1e9,
                        duration as f64 / 1e9
                    ),
                )
            }
            Some((t, _)) => t,
            None => 0,
        };
        let cgroup = match r.string(&p("cgroup"), "a cgroup name")? {
            Some((c, e)) => Some((
                crate::kernel::cgroup::resolve(
                    cgroups,
                    &c,
                    &e.origin,
                    &format!("`jobs.{jname}.cgroup`"),
                )?,
                e.origin,
            )),
            None => None,
        };
        let mut job = Job {
            name: jname.clone(),
            kind: JobKind::Dd { bs: 0, size: None },
            filesystem,
            numjobs: 1,
            start,
            runtime: None,
            cgroup: cgroup.as_ref().map_or(0, |c| c.0),
        };
        match ty.as_str() {
            "fio" => {
                let fio = crate::workload::fio::scenario::read_job(
                    r,
                    &jname,
                    &jorigin,
                    machine,
                    devices,
                    filesystems,
                )?;
                jobs.extend(crate::workload::fio::scenario::scenario_jobs(
                    fio,
                    filesystem,
                    start,
                    cgroup.as_ref(),
                    cgroups,
                )?);
                check_tasks(&jobs, &jname, &jorigin)?;
                continue;
            }
            "fs_mark" => crate::workload::fs_mark::read_job(r, &jname, &jorigin, &mut job)?,
            "simoop" => {
                crate::workload::simoop::read_job(r, &jname, &jorigin, filesystems, &mut job)?
            }
            _ => crate::workload::dd::read_job(r, &jname, &mut job)?,
        }
        jobs.push(job);
        check_tasks(&jobs, &jname, &jorigin)?;
    }
    Ok(jobs)
}

/// The jobs so far, the last `jname`, start at most [`MAX_TASKS`] tasks.
fn check_tasks(jobs: &[Job], jname: &str, origin: &Origin) -> Result<(), ScenarioError> {
    let n: u64 = jobs.iter().map(job_tasks).sum();
    if n > MAX_TASKS {
        return err(
            origin,
            format!(
                "with job `{jname}` the jobs start {n} tasks (dd's `numjobs`, fs_mark's \
                 directories times `-t`, fio's `numjobs`, all jobs together); expected at most \
                 {MAX_TASKS}"
            ),
        );
    }
    Ok(())
}

/// The tasks a job starts.
fn job_tasks(j: &Job) -> u64 {
    match &j.kind {
        JobKind::FsMark(a) => a.threads(),
        _ => j.numjobs as u64,
    }
}

/// `trace.events`.
fn read_trace(r: &mut Reader) -> Result<Trace, ScenarioError> {
    Ok(Trace {
        events: match r.take("trace.events") {
            None => TRACE_EVENTS[..4].iter().map(|s| s.to_string()).collect(),
            Some(e) => match &e.val {
                RawVal::Array(a) => {
                    let mut out = Vec::new();
                    for v in a {
                        match v {
                            RawVal::Str(s) if TRACE_EVENTS.contains(&s.as_str()) => {
                                out.push(s.clone())
                            }
                            v => {
                                return err(
                                    &e.origin,
                                    format!(
                                        "`trace.events` contains {}; expected names from {:?}",
                                        v.describe(),
                                        TRACE_EVENTS
                                    ),
                                )
                            }
                        }
                    }
                    out
                }
                v => {
                    return err(
                        &e.origin,
                        format!(
                            "`trace.events`: found {}; expected an array of event names",
                            v.describe()
                        ),
                    )
                }
            },
        },
    })
}

/// `[fidelity.tolerance]`: METRIC = percent.
fn read_fidelity(r: &mut Reader) -> Result<Fidelity, ScenarioError> {
    let mut fidelity = Fidelity::default();
    let tol_keys: Vec<String> = r
        .raw
        .entries
        .keys()
        .filter(|k| k.starts_with("fidelity.tolerance."))
        .cloned()
        .collect();
    for k in tol_keys {
        let e = r.take(&k).expect("key listed");
        let metric = k["fidelity.tolerance.".len()..].to_string();
        if !crate::fidelity::METRICS.iter().any(|m| m.0 == metric) {
            let names: Vec<&str> = crate::fidelity::METRICS.iter().map(|m| m.0).collect();
            return err(
                &e.origin,
                format!("unknown fidelity metric `{metric}`; expected one of {names:?}"),
            );
        }
        let v = match e.val {
            RawVal::Int(i) if i >= 0 => i as f64,
            RawVal::Float(f) if f >= 0.0 => f,
            ref v => {
                return err(
                    &e.origin,
                    format!(
                        "`{k}`: found {}; expected a tolerance in percent ≥ 0 (0: equal)",
                        v.describe()
                    ),
                )
            }
        };
        fidelity.tolerance.push((metric, v));
    }
    Ok(fidelity)
}

/// `[events.NAME]` tables: `at = "20s"` and the knobs to write then, by
/// their scenario paths (`"vm.dirty_bytes" = "400M"`). Each value is read
/// and checked as the same key is at the start, and the kernel's refusals
/// (EINVAL) are errors here: a bdi's `min_ratio` above its `max_ratio`, or
/// the bdis' `min_ratio`s summing past 100.
fn read_events(
    r: &mut Reader,
    devices: &[Device],
    duration: Ns,
    page_size: u64,
) -> Result<Vec<KnobEvent>, ScenarioError> {
    let mut events = Vec::new();
    for (ename, eorigin) in r.raw.names_under("events") {
        let pre = format!("events.{ename}.");
        let at = match r.duration(&format!("{pre}at"))? {
            Some((t, e)) if t >= duration => {
                return err(
                    &e.origin,
                    format!("event `{ename}` is at or after the end of the run; expected `at` below `run.duration`"),
                )
            }
            Some((t, _)) => t,
            None => {
                return err(
                    &eorigin,
                    format!("event `{ename}` has no `at`; expected e.g. `at = \"20s\"`"),
                )
            }
        };
        let mut knobs: Vec<(String, Entry)> = r
            .raw
            .entries
            .iter()
            .filter(|(k, _)| k.starts_with(&pre))
            .map(|(k, e)| (k[pre.len()..].to_string(), e.clone()))
            .collect();
        knobs.sort_by_key(|(_, e)| e.order);
        if knobs.is_empty() {
            return err(
                &eorigin,
                format!("event `{ename}` writes nothing; expected a knob such as `\"vm.dirty_bytes\" = \"400M\"`"),
            );
        }
        let mut writes = Vec::new();
        for (knob, e) in knobs {
            r.raw.take(&format!("{pre}{knob}"));
            let mut one = Reader {
                raw: RawScenario::default(),
            };
            one.raw
                .insert(knob.clone(), e.val.clone(), e.origin.clone());
            writes.push(read_knob_write(&mut one, &knob, &e, devices, page_size)?);
        }
        events.push(KnobEvent {
            name: ename,
            at,
            writes,
        });
    }
    // stable: events at one time apply in document order
    events.sort_by_key(|e| e.at);
    // replay the bdi ratio writes as the kernel would take them
    let mut ratios: Vec<(u64, u64)> = devices
        .iter()
        .map(|d| (d.bdi.min_ratio, d.bdi.max_ratio))
        .collect();
    for ev in &events {
        for w in &ev.writes {
            match *w {
                KnobWrite::BdiMinRatio(d, v) => ratios[d].0 = v,
                KnobWrite::BdiMaxRatio(d, v) => ratios[d].1 = v,
                _ => continue,
            }
            let sum: u64 = ratios.iter().map(|r| r.0).sum();
            let origin = r
                .raw
                .tables
                .get(&format!("events.{}", ev.name))
                .cloned()
                .unwrap_or(Origin::Builtin);
            if let Some(d) = ratios.iter().position(|r| r.0 > r.1) {
                return err(
                    &origin,
                    format!(
                        "event `{}` leaves device `{}`'s bdi.min_ratio ({}) above its bdi.max_ratio ({}); the kernel refuses such a write",
                        ev.name, devices[d].name, ratios[d].0, ratios[d].1
                    ),
                );
            }
            if sum > 100 {
                return err(
                    &origin,
                    format!(
                        "event `{}` makes the bdis' min_ratio sum {sum}%; the kernel refuses a sum above 100",
                        ev.name
                    ),
                );
            }
        }
    }
    Ok(events)
}

/// The kernel's minimums for the `*_bytes` dirty knobs (the sysctl
/// table's `extra1`): two pages for `vm.dirty_bytes`
/// (`dirty_bytes_min`), one byte for `vm.dirty_background_bytes`. Writing
/// less is refused with EINVAL; 0 does not mean "use the ratio" (writing
/// the ratio does that).
fn check_bytes_knob(knob: &str, v: u64, page_size: u64, e: &Entry) -> Result<(), ScenarioError> {
    let (min, what, ratio) = if knob == "vm.dirty_bytes" {
        (
            2 * page_size,
            format!("2 pages ({})", 2 * page_size),
            "vm.dirty_ratio",
        )
    } else {
        (1, "1 byte".to_string(), "vm.dirty_background_ratio")
    };
    if v < min {
        return err(
            &e.origin,
            format!(
                "`{knob}` = {v} is below the kernel's minimum of {what}, which refuses it; \
                 to use a ratio instead, set `{ratio}` (writing it zeroes `{knob}`, as in the kernel)"
            ),
        );
    }
    Ok(())
}

/// One knob of an event, read from a reader that holds it alone.
fn read_knob_write(
    one: &mut Reader,
    knob: &str,
    e: &Entry,
    devices: &[Device],
    page_size: u64,
) -> Result<KnobWrite, ScenarioError> {
    let vm = |k| match k {
        "vm.dirty_ratio" => Some(VmKnob::DirtyRatio),
        "vm.dirty_bytes" => Some(VmKnob::DirtyBytes),
        "vm.dirty_background_ratio" => Some(VmKnob::DirtyBackgroundRatio),
        "vm.dirty_background_bytes" => Some(VmKnob::DirtyBackgroundBytes),
        "vm.dirty_expire_centisecs" => Some(VmKnob::DirtyExpireCentisecs),
        _ => None,
    };
    if let Some(k) = vm(knob) {
        let v = match k {
            VmKnob::DirtyRatio | VmKnob::DirtyBackgroundRatio => one.uint(knob, 0, 100)?,
            VmKnob::DirtyExpireCentisecs => one.uint(knob, 0, i32::MAX as u64)?,
            VmKnob::DirtyBytes | VmKnob::DirtyBackgroundBytes => {
                let x = one.size(knob)?;
                if let Some((v, e)) = &x {
                    check_bytes_knob(knob, *v, page_size, e)?;
                }
                x
            }
        };
        return Ok(KnobWrite::Vm(k, v.expect("inserted").0));
    }
    let bdi_knob = knob
        .strip_prefix("devices.")
        .and_then(|rest| rest.split_once(".bdi."));
    if let Some((dname, attr)) = bdi_knob {
        let Some(d) = devices.iter().position(|d| d.name == dname) else {
            return err(
                &e.origin,
                format!("`{knob}` names device `{dname}`, which is not defined"),
            );
        };
        match attr {
            "min_ratio" => {
                return Ok(KnobWrite::BdiMinRatio(
                    d,
                    one.uint(knob, 0, 100)?.expect("inserted").0,
                ))
            }
            "max_ratio" => {
                return Ok(KnobWrite::BdiMaxRatio(
                    d,
                    one.uint(knob, 0, 100)?.expect("inserted").0,
                ))
            }
            "strict_limit" => {
                return Ok(KnobWrite::BdiStrictLimit(
                    d,
                    one.boolean(knob, true)?.expect("inserted"),
                ))
            }
            _ => {}
        }
    }
    err(
        &e.origin,
        format!("`{knob}` cannot be written during a run; expected one of vm.dirty_ratio, vm.dirty_bytes, vm.dirty_background_ratio, vm.dirty_background_bytes, vm.dirty_expire_centisecs, devices.NAME.bdi.min_ratio, devices.NAME.bdi.max_ratio, devices.NAME.bdi.strict_limit"),
    )
}

/// `kernel.features.*`, `run.flusher_plug` and `run.plug_merge`, each
/// defaulting to the throttle policy's kernel (`Features::of`).
fn read_features(r: &mut Reader, policy: ThrottlePolicy) -> Result<Features, ScenarioError> {
    let mut f = Features::of(policy);
    let k = |n: &str| format!("kernel.features.{n}");
    let flag = |r: &mut Reader, n: &str, v: &mut bool| -> Result<(), ScenarioError> {
        if let Some(b) = r.boolean(&k(n), false)? {
            *v = b;
        }
        Ok(())
    };
    let version = |r: &mut Reader,
                   n: &str,
                   new: &str,
                   old: &str,
                   v: &mut bool|
     -> Result<(), ScenarioError> {
        if let Some((s, _)) = r.choice(&k(n), &[new, old])? {
            *v = s == new;
        }
        Ok(())
    };
    flag(r, "large_folios", &mut f.large_folios)?;
    flag(r, "wbt", &mut f.wbt)?;
    flag(r, "bw_dwork", &mut f.bw_dwork)?;
    flag(r, "dioread_nolock", &mut f.dioread_nolock)?;
    flag(r, "cgroup_writeback", &mut f.cgroup_writeback)?;
    version(
        r,
        "blk_throttle",
        "6.18",
        "pre-6.18",
        &mut f.blk_throttle_v6_18,
    )?;
    version(r, "wb_bandwidth", "6.x", "3.2", &mut f.wb_bandwidth_v6)?;
    version(
        r,
        "requeue_expiry",
        "6.10",
        "pre-6.10",
        &mut f.requeue_expiry_v6_10,
    )?;
    version(
        r,
        "reclaim_throttle",
        "5.16",
        "pre-5.16",
        &mut f.reclaim_throttle_v5_16,
    )?;
    version(r, "dirty_limits", "6.x", "3.x", &mut f.dirty_limits_v6)?;
    version(
        r,
        "memcg_bg_thresh",
        "6.11",
        "pre-6.11",
        &mut f.memcg_bg_share_v6_11,
    )?;
    version(
        r,
        "writeback_chunk",
        "3.2",
        "2.6",
        &mut f.writeback_chunk_v3_2,
    )?;
    if let Some(b) = r.boolean("run.flusher_plug", false)? {
        f.flusher_plug = b;
    }
    if let Some((m, _)) = r.choice("run.plug_merge", &["last", "any"])? {
        f.plug_merge_any = m == "any";
    }
    Ok(f)
}

/// The zones (`machine.zones.NAME.*`, or derived from `machine.memory`),
/// THP and the watermark sysctls.
fn read_zones(
    r: &mut Reader,
    memory: u64,
    page_size: u64,
) -> Result<crate::mm::page_alloc::MemConf, ScenarioError> {
    use crate::mm::page_alloc::{MemConf, ZoneConf, DEFAULT_LOWMEM_RESERVE_RATIO, ZONE_KEYS};
    let mut zones = [ZoneConf::default(); crate::mm::page_alloc::MAX_NR_ZONES];
    let mut explicit = None;
    let total = memory / page_size;
    for (i, name) in ZONE_KEYS.iter().enumerate() {
        let mut get = |f: &str| -> Result<Option<(u64, Entry)>, ScenarioError> {
            r.uint(&format!("machine.zones.{name}.{f}"), 0, total)
        };
        let managed = get("managed")?;
        let present = get("present")?;
        let spanned = get("spanned")?;
        let boot = get("managed_boot")?;
        // managed pages: given, or the present pages, or the boot's
        let Some((managed, e)) = managed
            .or_else(|| present.clone())
            .or_else(|| boot.clone())
            .or_else(|| spanned.clone())
        else {
            continue;
        };
        explicit.get_or_insert(e.origin.clone());
        let present = present.map_or(managed, |x| x.0);
        let managed_boot = boot.map_or(managed, |x| x.0);
        if managed > present || managed_boot > managed {
            return err(
                &e.origin,
                format!("`machine.zones.{name}`: expected managed_boot ≤ managed ≤ present"),
            );
        }
        zones[i] = ZoneConf {
            spanned: spanned.map_or(present, |x| x.0),
            present,
            managed,
            managed_boot,
        };
    }
    if let Some(o) = explicit {
        let managed: u64 = zones.iter().map(|z| z.managed).sum();
        if managed > total {
            return err(
                &o,
                format!(
                    "the zones' managed pages ({managed}) exceed `machine.memory` ({total} pages)"
                ),
            );
        }
    } else {
        zones = MemConf::derive_zones(memory, page_size);
    }
    let thp = match r.choice("machine.thp", &["always", "madvise", "never"])? {
        Some((v, _)) => v != "never",
        None => true,
    };
    let movable_min_like_highmem = r
        .boolean("machine.zones.movable_min_like_highmem", false)?
        .unwrap_or(false);
    let min_free_kbytes = r
        .uint("vm.min_free_kbytes", 0, i32::MAX as u64)?
        .map(|x| x.0);
    let watermark_scale_factor = r
        .uint("vm.watermark_scale_factor", 1, 3000)?
        .map_or(10, |x| x.0);
    let mut lowmem_reserve_ratio = DEFAULT_LOWMEM_RESERVE_RATIO;
    if let Some((s, e)) = r.string(
        "vm.lowmem_reserve_ratio",
        "ratios such as \"256 256 32 0 0\"",
    )? {
        let v: Result<Vec<u64>, _> = s.split_whitespace().map(|x| x.parse::<u64>()).collect();
        match v {
            Ok(v) if !v.is_empty() && v.len() <= lowmem_reserve_ratio.len() => {
                lowmem_reserve_ratio[..v.len()].copy_from_slice(&v);
            }
            _ => {
                return err(
                    &e.origin,
                    format!(
                        "`vm.lowmem_reserve_ratio` = \"{s}\"; expected up to 5 integers separated by spaces, as /proc/sys/vm/lowmem_reserve_ratio prints them"
                    ),
                )
            }
        }
    }
    Ok(MemConf {
        zones,
        min_free_kbytes,
        watermark_scale_factor,
        lowmem_reserve_ratio,
        thp,
        movable_min_like_highmem,
    })
}

#[cfg(test)]
mod feature_tests {
    use super::*;

    fn load(sets: &[&str]) -> Result<Scenario, ScenarioError> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Scenario::builtin(&sets)
    }

    #[test]
    fn features_default_to_the_throttle_policys_kernel() {
        for p in ["io-less", "io-less-3.2", "legacy"] {
            let sc = load(&[&format!("run.dirty_throttle={p}")]).unwrap();
            assert_eq!(sc.features, Features::of(sc.run.dirty_throttle), "{p}");
        }
        let v6 = load(&[]).unwrap();
        assert!(v6.features.blk_throttle_v6_18 && v6.features.large_folios);
        assert_eq!(v6.filesystems[0].max_folio, 2 << 20);
        assert_eq!(v6.devices[0].queue.wbt_lat_usec, 2000);
        let old = load(&["run.dirty_throttle=legacy"]).unwrap();
        assert!(!old.features.writeback_chunk_v3_2 && !old.features.wbt);
        assert_eq!(old.filesystems[0].max_folio, 4096);
        assert_eq!(old.devices[0].queue.wbt_lat_usec, 0);
    }

    #[test]
    fn each_feature_is_set_on_its_own() {
        let sc = load(&[
            "run.dirty_throttle=io-less-3.2",
            "kernel.features.blk_throttle=6.18",
            "kernel.features.large_folios=true",
            "kernel.features.wbt=true",
            "kernel.features.dirty_limits=6.x",
        ])
        .unwrap();
        let f = &sc.features;
        assert!(f.blk_throttle_v6_18 && f.large_folios && f.wbt && f.dirty_limits_v6);
        assert!(!f.bw_dwork && !f.wb_bandwidth_v6 && !f.dioread_nolock);
        assert_eq!(sc.run.dirty_throttle, ThrottlePolicy::IoLess32);
        assert_eq!(sc.filesystems[0].max_folio, 2 << 20);
        let sc = load(&["kernel.features.blk_throttle=pre-6.18"]).unwrap();
        assert!(!sc.features.blk_throttle_v6_18);
        assert_eq!(sc.run.dirty_throttle, ThrottlePolicy::IoLess);
        let e = load(&["kernel.features.blk_throttle=6.17"]).unwrap_err();
        assert!(e.msg.contains("\"6.18\", \"pre-6.18\""), "{}", e.msg);
        let e = load(&["kernel.features.folios=true"]).unwrap_err();
        assert!(e.msg.contains("features.large_folios"), "{}", e.msg);
    }

    #[test]
    fn a_mixed_kernel_runs() {
        // the 6.x throttle over a 3.2 flusher and block layer, and the 3.2
        // throttle over 6.18's: both run to the end
        for sets in [
            &[
                "kernel.features.wb_bandwidth=3.2",
                "kernel.features.writeback_chunk=2.6",
                "kernel.features.dioread_nolock=false",
                "kernel.features.bw_dwork=false",
                "run.duration=5s",
            ][..],
            &[
                "run.dirty_throttle=io-less-3.2",
                "kernel.features.dioread_nolock=true",
                "kernel.features.bw_dwork=true",
                "kernel.features.wb_bandwidth=6.x",
                "run.duration=5s",
            ][..],
        ] {
            let sc = load(sets).unwrap();
            let r = crate::output::simulate(&sc, false, |_, _| {});
            assert!(r.summary.devices[0].write_mib_s > 1.0, "{sets:?}");
        }
    }

    #[test]
    fn ext4_options_on_xfs_are_refused_not_ignored() {
        for k in ["commit=10s", "journal_size=64M"] {
            let e = load(&[
                "filesystems.scratch.type=xfs",
                &format!("filesystems.scratch.{k}"),
            ])
            .unwrap_err();
            assert!(e.msg.contains("is an ext4 option"), "{}", e.msg);
        }
        let sc = load(&[
            "filesystems.scratch.commit=10s",
            "filesystems.scratch.journal_size=64M",
        ])
        .unwrap();
        assert_eq!(sc.filesystems[0].commit_interval, 10 * NSEC_PER_SEC);
        assert_eq!(sc.filesystems[0].journal_size, 64 << 20);
    }
}

#[cfg(test)]
mod cap_tests {
    use super::*;

    fn load(src: &str, sets: &[&str]) -> Result<Scenario, String> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Scenario::load_str(src, "t.toml", "t", &sets).map_err(|e| e.to_string())
    }

    #[test]
    fn a_run_longer_than_a_year_is_refused() {
        let e = load(DEFAULT_SCENARIO, &["run.duration=100000h"]).unwrap_err();
        assert!(
            e.contains("--set run.duration=100000h")
                && e.contains("`run.duration` = 360000000 s is over the cap of 365 days"),
            "{e}"
        );
        assert!(load(DEFAULT_SCENARIO, &["run.duration=8760h"]).is_ok());
    }

    #[test]
    fn values_that_cannot_happen_are_refused() {
        let e = load(DEFAULT_SCENARIO, &["jobs.dd.start=60s"]).unwrap_err();
        assert!(
            e.contains("`jobs.dd.start` = 60 s is not before the end of the run"),
            "{e}"
        );
        assert!(load(DEFAULT_SCENARIO, &["jobs.dd.start=59s"]).is_ok());
        let e = load(DEFAULT_SCENARIO, &["jobs.dd.runtime=0s"]).unwrap_err();
        assert!(e.contains("`jobs.dd.runtime` = 0"), "{e}");
        let e = load(DEFAULT_SCENARIO, &["devices.loop0.devno=99999999:99999999"]).unwrap_err();
        assert!(
            e.contains("out of range; expected a major in 0..=4095"),
            "{e}"
        );
        let e = load(DEFAULT_SCENARIO, &["devices.loop0.devno=7:1048576"]).unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        assert!(load(DEFAULT_SCENARIO, &["devices.loop0.devno=4095:1048575"]).is_ok());
        let e = load(DEFAULT_SCENARIO, &["devices.loop0.channels=8"]).unwrap_err();
        assert!(
            e.contains("for a `throttled` device (`channels` is a key of `ssd` devices)"),
            "{e}"
        );
    }

    /// `machine.cost.scale` scales the defaults of the costs of work; a
    /// cost given stands, and the slice and timer latency are not work.
    #[test]
    fn a_cost_scale_multiplies_the_defaults_only() {
        let src = "[devices.d]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"d\"\n\
                   [jobs.a]\ntype = \"dd\"\n";
        let base = load(src, &[]).unwrap().machine.cost;
        let c = load(
            src,
            &[
                "machine.cost.scale=12.5",
                "machine.cost.copy_per_kib=1420ns",
            ],
        )
        .unwrap()
        .machine
        .cost;
        assert_eq!(c.copy_per_kib, 1420);
        assert_eq!(c.page_cache_insert, base.page_cache_insert * 25 / 2);
        assert_eq!(c.writeback_per_page, base.writeback_per_page * 25 / 2);
        assert_eq!(c.wakeup, base.wakeup * 25 / 2);
        assert_eq!(c.sched_slice, base.sched_slice);
        assert_eq!(c.wakeup_jitter, base.wakeup_jitter);
        for bad in ["0", "1001", "\"fast\""] {
            let e = load(src, &[&format!("machine.cost.scale={bad}")]).unwrap_err();
            assert!(e.contains("`machine.cost.scale`"), "{e}");
            assert!(e.contains("expected a number in 0.01..=1000"), "{e}");
        }
    }

    #[test]
    fn the_jobs_tasks_together_have_a_cap() {
        let src = "[devices.d]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"d\"\n\
                   [jobs.a]\ntype = \"dd\"\nnumjobs = 60000\n\
                   [jobs.b]\ntype = \"fs_mark\"\nargs = \"-d /x -t 50000\"\n";
        let e = load(src, &[]).unwrap_err();
        assert!(
            e.starts_with("t.toml:8:")
                && e.contains("with job `b` the jobs start 110000 tasks")
                && e.contains("expected at most 100000"),
            "{e}"
        );
        assert!(load(src, &["jobs.b.args=-d /x -t 40000"]).is_ok());
        // one job's own cap names its key
        let e = load(DEFAULT_SCENARIO, &["jobs.dd.numjobs=100001"]).unwrap_err();
        assert!(
            e.contains("`jobs.dd.numjobs`") && e.contains("1..=100000"),
            "{e}"
        );
        let e = load(src, &["jobs.b.args=-d /x -t 10000000"]).unwrap_err();
        assert!(
            e.contains("fs_mark `-t 10000000`: expected at most 100000"),
            "{e}"
        );
        // devices (and so filesystems): an inode keeps its superblock's
        // index in 16 bits
        let many = |n: usize| {
            let mut s = String::new();
            for i in 0..n {
                s += &format!(
                    "[devices.d{i}]\ntype = \"ssd\"\n[filesystems.f{i}]\ndevice = \"d{i}\"\n"
                );
            }
            s + "[jobs.dd]\nfilesystem = \"f0\"\n"
        };
        let e = load(&many(MAX_DEVICES + 1), &[]).unwrap_err();
        assert!(
            e.contains("is one too many; expected at most 4096 [devices]"),
            "{e}"
        );
    }
}
