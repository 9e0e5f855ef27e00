//! bcache (drivers/md/bcache): an SSD cache set in front of a slower
//! backing device, bio-based and stacked on two scenario devices
//! (`type = "bcache"`, `cache = "ssd0"`, `backing = "hdd0"`).
//!
//! | file | kernel |
//! |---|---|
//! | `mod.rs` | the device: its keys (sysfs knobs under their own names), its state, sysfs outputs (`dirty_data`, `state`, `cache_available_percent`, `stats_total`) |
//! | `request.rs` | request.c: `cached_dev_submit_bio`, `check_should_bypass` (sequential cutoff, congestion), `cached_dev_write`, `cached_dev_read`; writeback.h `should_writeback` |
//! | `btree.rs` | btree.c, extents.c, alloc.c: keys as extents, buckets, allocation, GC |
//! | `bset.rs` | bset.c: the index's leaves, sorted arrays of keys searched by bisection |
//! | `writeback.rs` | writeback.c: the rate controller, and the writeback thread (`refill_dirty`, `read_dirty`) |
//! | `util.rs` | util.c: `bch_next_delay`, `bch_hprint` |
//!
//! One backing device per cache set. Not modelled: the journal's and btree
//! nodes' IO (their buckets are counted), moving GC (off by default),
//! stripes (`partial_stripes_expensive`), readahead bypass (no REQ_RAHEAD
//! here), the CPU time of bcache's own work, and GC's duration (it is done
//! at once).

pub mod bset;
pub mod btree;
pub mod request;
pub mod util;
pub mod writeback;

use crate::drivers::{DeviceKind, DriverType, Parsed, QueueInfo};
use crate::kernel::{BioId, DevId, Kernel, Pid};
use crate::scenario::raw::err;
use crate::scenario::{DevSection, Device, Origin, Reader, ScenarioError};
use btree::CacheSet;
use writeback::{IdleState, RateConf, RateState};

/// The bcache major (`register_blkdev(0, "bcache")`: dynamic; what a
/// Debian kernel usually gets).
pub const BCACHE_MAJOR: u32 = 252;
/// `BCACHE_MINORS`.
pub const BCACHE_MINORS: u32 = 128;
/// `BDEV_DATA_START_DEFAULT`: the backing device's data starts 8 KiB in.
pub const BDEV_DATA_START: u64 = 16;

/// `cache_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheMode {
    Writethrough,
    Writeback,
    Writearound,
    None,
}

/// A bcache device's configuration: its members and its sysfs knobs, with
/// 6.1's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BcacheConf {
    pub cache: String,
    pub backing: String,
    /// Sectors a bucket (make-bcache `--bucket`: 512k).
    pub bucket_sectors: u64,
    pub cache_mode: CacheMode,
    pub rate: RateConf,
    /// `writeback_delay` (s).
    pub writeback_delay: u64,
    /// `writeback_running`.
    pub writeback_running: bool,
    /// `sequential_cutoff` (bytes).
    pub sequential_cutoff: u64,
    /// The cache set's `congested_read_threshold_us`, `_write_`.
    pub congested_read_us: u64,
    pub congested_write_us: u64,
    /// The module's `bch_cutoff_writeback`, `bch_cutoff_writeback_sync`.
    pub cutoff_writeback: i64,
    pub cutoff_writeback_sync: i64,
    /// The cache set's `idle_max_writeback_rate`.
    pub idle_max_writeback_rate: bool,
}

impl Default for BcacheConf {
    fn default() -> BcacheConf {
        BcacheConf {
            cache: String::new(),
            backing: String::new(),
            bucket_sectors: 1024,
            cache_mode: CacheMode::Writethrough,
            rate: RateConf::default(),
            writeback_delay: 30,
            writeback_running: true,
            sequential_cutoff: 4 << 20,
            congested_read_us: 2000,
            congested_write_us: 20000,
            cutoff_writeback: 40,
            cutoff_writeback_sync: 70,
            idle_max_writeback_rate: true,
        }
    }
}

/// `type = "bcache"`.
pub(crate) const TYPE: DriverType = DriverType {
    name: "bcache",
    keys: &[
        "cache",
        "backing",
        "bucket_size",
        "cache_mode",
        "writeback_percent",
        "writeback_delay",
        "writeback_running",
        "writeback_rate_update_seconds",
        "writeback_rate_p_term_inverse",
        "writeback_rate_i_term_inverse",
        "writeback_rate_minimum",
        "writeback_rate_fp_term_low",
        "writeback_rate_fp_term_mid",
        "writeback_rate_fp_term_high",
        "writeback_consider_fragment",
        "sequential_cutoff",
        "congested_read_threshold_us",
        "congested_write_threshold_us",
        "cutoff_writeback",
        "cutoff_writeback_sync",
        "idle_max_writeback_rate",
    ],
    parse,
};

fn parse(r: &mut Reader, s: &DevSection) -> Result<Parsed, ScenarioError> {
    let mut c = BcacheConf::default();
    for (k, slot) in [("cache", 0), ("backing", 1)] {
        match r.string(&s.key(k), "a device name")? {
            Some((v, _)) => {
                if slot == 0 {
                    c.cache = v
                } else {
                    c.backing = v
                }
            }
            None => {
                return err(
                    s.type_origin,
                    format!("bcache device `{}` needs `{k} = \"DEV\"`", s.name),
                )
            }
        }
    }
    if let Some((b, e)) = r.size(&s.key("bucket_size"))? {
        if b < 4096 || !b.is_power_of_two() || b > (16 << 20) {
            return err(
                &e.origin,
                format!("`bucket_size` = {b}; expected a power of two in 4k..=16M"),
            );
        }
        c.bucket_sectors = b / 512;
    }
    if let Some((m, _)) = r.choice(
        &s.key("cache_mode"),
        &["writethrough", "writeback", "writearound", "none"],
    )? {
        c.cache_mode = match m.as_str() {
            "writeback" => CacheMode::Writeback,
            "writearound" => CacheMode::Writearound,
            "none" => CacheMode::None,
            _ => CacheMode::Writethrough,
        };
    }
    let mut u = |k: &str, min: u64, max: u64, v: &mut u64| -> Result<(), ScenarioError> {
        if let Some((x, _)) = r.uint(&s.key(k), min, max)? {
            *v = x;
        }
        Ok(())
    };
    let mut cutoff = c.cutoff_writeback as u64;
    let mut cutoff_sync = c.cutoff_writeback_sync as u64;
    u("cutoff_writeback", 1, 70, &mut cutoff)?;
    u("cutoff_writeback_sync", 1, 90, &mut cutoff_sync)?;
    u(
        "writeback_percent",
        0,
        cutoff,
        &mut c.rate.writeback_percent,
    )?;
    u(
        "writeback_delay",
        0,
        u32::MAX as u64,
        &mut c.writeback_delay,
    )?;
    u(
        "writeback_rate_update_seconds",
        1,
        60,
        &mut c.rate.update_seconds,
    )?;
    let mut p = c.rate.p_term_inverse as u64;
    let mut i = c.rate.i_term_inverse as u64;
    let mut m = c.rate.minimum as u64;
    u("writeback_rate_p_term_inverse", 1, i32::MAX as u64, &mut p)?;
    u("writeback_rate_i_term_inverse", 1, i32::MAX as u64, &mut i)?;
    u("writeback_rate_minimum", 1, i32::MAX as u64, &mut m)?;
    let (mut lo, mut mid, mut hi) = (1u64, 10u64, 1000u64);
    u("writeback_rate_fp_term_low", 1, i32::MAX as u64, &mut lo)?;
    u("writeback_rate_fp_term_mid", 1, i32::MAX as u64, &mut mid)?;
    u("writeback_rate_fp_term_high", 1, i32::MAX as u64, &mut hi)?;
    u(
        "sequential_cutoff",
        0,
        u32::MAX as u64,
        &mut c.sequential_cutoff,
    )?;
    u(
        "congested_read_threshold_us",
        0,
        u32::MAX as u64,
        &mut c.congested_read_us,
    )?;
    u(
        "congested_write_threshold_us",
        0,
        u32::MAX as u64,
        &mut c.congested_write_us,
    )?;
    if !(lo < mid && mid < hi) {
        return err(
            s.type_origin,
            format!("bcache device `{}`: writeback_rate_fp_term_low/mid/high = {lo}/{mid}/{hi}; expected low < mid < high (sysfs refuses others)", s.name),
        );
    }
    if cutoff_sync < cutoff {
        return err(
            s.type_origin,
            format!("bcache device `{}`: cutoff_writeback_sync = {cutoff_sync} is below cutoff_writeback = {cutoff}", s.name),
        );
    }
    c.rate.p_term_inverse = p as i64;
    c.rate.i_term_inverse = i as i64;
    c.rate.minimum = m as i64;
    c.rate.fp_term_low = lo as i64;
    c.rate.fp_term_mid = mid as i64;
    c.rate.fp_term_high = hi as i64;
    c.cutoff_writeback = cutoff as i64;
    c.cutoff_writeback_sync = cutoff_sync as i64;
    if let Some(v) = r.boolean(&s.key("writeback_consider_fragment"), true)? {
        c.rate.consider_fragment = v;
    }
    if let Some(v) = r.boolean(&s.key("writeback_running"), true)? {
        c.writeback_running = v;
    }
    if let Some(v) = r.boolean(&s.key("idle_max_writeback_rate"), true)? {
        c.idle_max_writeback_rate = v;
    }
    Ok((DeviceKind::Bcache(Box::new(c)), None))
}

/// The cache and backing devices must be unused `ssd`, `hdd` or `disk`
/// devices, and two different ones.
pub(crate) fn claim_members(
    c: &BcacheConf,
    devices: &[Device],
    used: &mut [bool],
    origin: &Origin,
) -> Result<(), ScenarioError> {
    if c.cache == c.backing {
        return err(origin, "bcache: `cache` and `backing` must be two devices");
    }
    for (what, m) in [("cache", &c.cache), ("backing", &c.backing)] {
        crate::drivers::claim_member(devices, used, origin, &format!("bcache {what}"), m)?;
    }
    Ok(())
}

/// The device's size: its backing device's less the data offset
/// (`bdev_sectors`).
pub(crate) fn size_from_backing(c: &BcacheConf, devices: &[Device]) -> Option<u64> {
    devices
        .iter()
        .find(|d| d.name == c.backing)
        .map(|d| d.size.saturating_sub(BDEV_DATA_START * 512))
}

/// bcache devices are bio-based (`bcache_device_init`): no elevator, tags
/// or wbt of their own.
pub fn queue_info(_: &BcacheConf) -> QueueInfo {
    QueueInfo::bio_based(BCACHE_MAJOR, BCACHE_MINORS)
}

/// `stats_total` (drivers/md/bcache/stats.c): sectors bypassed and the
/// read requests' hits and misses.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub bypassed_sectors: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_bypass_hits: u64,
    pub cache_bypass_misses: u64,
    pub cache_miss_collisions: u64,
}

/// What a bio bcache issued is for, by its tag.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// A piece of upper bio `parent` (a backing IO or a cache read).
    Piece {
        parent: BioId,
    },
    /// Data going to the cache at `cofs` for `[s, s + len)`; its key goes
    /// in when it is written. `fill`: a read miss's copy (insert only
    /// where nothing is cached).
    CacheWrite {
        parent: Option<BioId>,
        s: u64,
        len: u64,
        cofs: u64,
        dirty: bool,
        fill: bool,
    },
    /// A read miss from the backing device whose data is copied into the
    /// cache once read (`cached_dev_cache_miss`), at write point `wp`.
    MissRead {
        parent: BioId,
        s: u64,
        len: u64,
        wp: u32,
    },
    /// The writeback thread's read of a dirty key from the cache, and its
    /// write to the backing device (index into the key buffer).
    WbRead {
        key: u32,
    },
    WbWrite {
        key: u32,
    },
}

/// A bcache device's figures in summary.json (`bcache`): `in_use` (the
/// percentage of buckets holding data, as `cache_available_percent` is 100
/// less it) at the median and the highest of the window's samples, the
/// share of the samples above `cutoff_writeback_sync` (where every write
/// goes to the backing device), and `dirty_data` at the end.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct BcacheSummary {
    pub name: String,
    pub in_use_p50: u64,
    pub in_use_max: u64,
    pub past_sync_cutoff_pct: f64,
    pub dirty_data_mib: f64,
}

/// A bcache device's driver state (`struct cached_dev` and its cache set).
pub struct BcacheState {
    pub conf: BcacheConf,
    pub cache: DevId,
    pub backing: DevId,
    pub set: CacheSet,
    pub rate: RateState,
    pub idle: IdleState,
    pub seq: request::SeqTable,
    /// `c->congested` and `c->congested_last_us`.
    pub congested: i32,
    pub congested_last_us: u64,
    pub ops: Vec<Option<Op>>,
    free_ops: Vec<u32>,
    /// `has_dirty`, and the backing superblock's state (dirty or clean).
    pub has_dirty: bool,
    pub sb_dirty: bool,
    pub wb: writeback::WbThread,
    pub stats: Stats,
    /// `writeback_keys_done`, `writeback_keys_failed`.
    pub keys_done: u64,
    pub keys_failed: u64,
    /// The kernel thread bcache's own bios are issued from.
    pub worker: Pid,
    /// The device's size in sectors (`bdev_sectors`).
    pub bdev_sectors: u64,
    /// Writeback-mode data waiting for a bucket: (parent, start, len).
    pub alloc_wait: std::collections::VecDeque<(BioId, u64, u64)>,
    /// `writeback_rate_debug` and the other sysfs files, sampled.
    pub samples: String,
    /// The samples in the measurement window by `in_use` (0..=100), for
    /// the summary.
    pub in_use_samples: Vec<u64>,
    pub sample_t0: Option<crate::sim::Ns>,
    pub dev_index: u32,
    /// A read's parts (start, sectors, the cache sector of a hit), kept to
    /// spare an allocation per read.
    pub read_parts: Vec<(u64, u64, Option<u64>)>,
    /// The keys a read looks up, kept likewise.
    pub read_keys: Vec<(u64, btree::Key)>,
}

impl BcacheState {
    /// A device's state before it is attached to its members and its
    /// worker (and, as it is, for tests outside a kernel): a cache of
    /// `cache_sectors` over a backing device of `bdev_sectors`.
    pub fn detached(conf: BcacheConf, cache_sectors: u64, bdev_sectors: u64) -> BcacheState {
        BcacheState {
            set: CacheSet::new(cache_sectors, conf.bucket_sectors),
            conf,
            cache: 0,
            backing: 0,
            rate: RateState::new(0),
            idle: IdleState::default(),
            seq: request::SeqTable::new(),
            congested: 0,
            congested_last_us: 0,
            ops: Vec::new(),
            free_ops: Vec::new(),
            has_dirty: false,
            sb_dirty: false,
            wb: writeback::WbThread::default(),
            stats: Stats::default(),
            keys_done: 0,
            keys_failed: 0,
            worker: 0,
            bdev_sectors,
            alloc_wait: Default::default(),
            samples: String::new(),
            in_use_samples: vec![0; 101],
            sample_t0: None,
            dev_index: 0,
            read_parts: Vec::new(),
            read_keys: Vec::new(),
        }
    }

    pub fn op_new(&mut self, op: Op) -> u32 {
        match self.free_ops.pop() {
            Some(t) => {
                self.ops[t as usize] = Some(op);
                t
            }
            None => {
                self.ops.push(Some(op));
                (self.ops.len() - 1) as u32
            }
        }
    }

    pub fn op_take(&mut self, tag: u32) -> Op {
        let op = self.ops[tag as usize].take().expect("bcache op");
        self.free_ops.push(tag);
        op
    }

    /// sysfs `cache_available_percent`.
    pub fn cache_available_percent(&self) -> i64 {
        100 - self.set.in_use
    }

    /// sysfs `state`.
    pub fn state(&self) -> &'static str {
        if self.sb_dirty {
            "dirty"
        } else {
            "clean"
        }
    }

    /// `stats_total/*` as `name=value` pairs, in the directory's order.
    pub fn stats_total(&self) -> String {
        let s = &self.stats;
        let ratio = (s.cache_hits * 100)
            .checked_div(s.cache_hits + s.cache_misses)
            .unwrap_or(0);
        format!(
            "bypassed={} cache_bypass_hits={} cache_bypass_misses={} cache_hit_ratio={} cache_hits={} cache_miss_collisions={} cache_misses={}",
            util::hprint((s.bypassed_sectors << 9) as i64),
            s.cache_bypass_hits,
            s.cache_bypass_misses,
            ratio,
            s.cache_hits,
            s.cache_miss_collisions,
            s.cache_misses
        )
    }
}

impl Kernel {
    /// `register_bcache` for both members, then `bch_cached_dev_attach`:
    /// the cache set, the device's controller and its writeback thread.
    pub fn bcache_register(&mut self, dev: DevId, d: &Device, c: &BcacheConf) -> BcacheState {
        let find = |n: &str| {
            self.sc
                .devices
                .iter()
                .position(|x| x.name == n)
                .expect("validated")
        };
        let (cache, backing) = (find(&c.cache), find(&c.backing));
        let cache_sectors = self.sc.devices[cache].size / 512;
        let comm = format!("bcache_writeback_{dev}");
        let worker = self.new_task(comm, crate::kernel::Body::Kworker, None);
        let now = self.now();
        // the rate update is delayed work every update_seconds
        // (bch_cached_dev_writeback_start)
        let first = self.bcache_delayed_work_time(c.rate.update_seconds * self.hz());
        self.q.schedule(
            first,
            crate::kernel::Ev::Bcache {
                dev: dev as u32,
                what: writeback::EV_RATE_UPDATE,
                gen: 0,
            },
        );
        let dev_index = self.sc.devices[..dev]
            .iter()
            .filter(|x| matches!(x.kind, DeviceKind::Bcache(_)))
            .count() as u32;
        BcacheState {
            cache,
            backing,
            rate: RateState::new(now),
            worker,
            dev_index,
            ..BcacheState::detached(c.clone(), cache_sectors, d.size / 512)
        }
    }

    pub(crate) fn bcache(&mut self, dev: DevId) -> &mut BcacheState {
        match &mut self.devs[dev].driver {
            crate::drivers::Driver::Bcache(b) => b,
            _ => unreachable!("not a bcache device"),
        }
    }

    /// One sample of the device's sysfs files, as the guest rig's
    /// exp-bcache script prints them: `S t=… dirty_data=… writeback_rate=…
    /// cache_avail_pct=… state=… | ` and `writeback_rate_debug` on one line.
    pub fn bcache_sample(&mut self, dev: DevId) {
        let now = self.now();
        let b = self.bcache(dev);
        let t0 = *b.sample_t0.get_or_insert(now);
        let dirty = b.set.dirty_sectors as i64;
        let running = b.conf.writeback_running;
        let dbg = writeback::rate_debug(&b.rate, dirty, running, now);
        let dbg = dbg.replace(['\n', '\t'], " ");
        let dbg = dbg
            .split(' ')
            .filter(|x| !x.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        let rate = if running { b.rate.limiter.rate } else { 0 };
        let line = format!(
            "S t={:.1} dirty_data={} writeback_rate={} cache_avail_pct={} state={} in_use={} | {} \n",
            (now - t0) as f64 / 1e9,
            util::hprint(dirty << 9),
            util::hprint(rate << 9),
            b.cache_available_percent(),
            b.state(),
            b.set.in_use,
            dbg
        );
        b.samples.push_str(&line);
        if now >= self.sc.run.warmup {
            let b = self.bcache(dev);
            b.in_use_samples[b.set.in_use.clamp(0, 100) as usize] += 1;
        }
    }

    /// summary.json's `bcache`: per bcache device, its buckets in use over
    /// the window's samples against the sync cutoff, and its dirty data at
    /// the end.
    pub fn bcache_summary(&self) -> Vec<BcacheSummary> {
        let mut out = Vec::new();
        for d in &self.devs {
            let crate::drivers::Driver::Bcache(b) = &d.driver else {
                continue;
            };
            let h = &b.in_use_samples;
            let n: u64 = h.iter().sum();
            // the lowest in_use at which the samples so far reach half
            let mut acc = 0;
            let p50 = h.iter().position(|&c| {
                acc += c;
                n > 0 && 2 * acc >= n
            });
            let past: u64 = h
                .iter()
                .enumerate()
                .filter(|&(i, _)| i as i64 > b.conf.cutoff_writeback_sync)
                .map(|(_, &c)| c)
                .sum();
            out.push(BcacheSummary {
                name: d.name.clone(),
                in_use_p50: p50.unwrap_or(0) as u64,
                in_use_max: h.iter().rposition(|&c| c > 0).unwrap_or(0) as u64,
                past_sync_cutoff_pct: if n == 0 {
                    0.0
                } else {
                    (past as f64 * 1000.0 / n as f64).round() / 10.0
                },
                dirty_data_mib: ((b.set.dirty_sectors as f64 * 512.0 / 1048576.0) * 10.0).round()
                    / 10.0,
            });
        }
        out
    }

    /// The run's bcache output files: `bcache-NAME.txt` per device, its
    /// samples and the final sysfs state.
    pub fn bcache_files(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for (i, d) in self.devs.iter().enumerate() {
            if let crate::drivers::Driver::Bcache(b) = &d.driver {
                let _ = i;
                let mut s = b.samples.clone();
                s.push_str("== final\n");
                s.push_str(&format!(
                    "  dirty_data = {}\n  writeback_rate = {}\n  state = {}\n  cache_available_percent = {}\n  stats_total: {}\n  writeback_keys_done = {}\n  writeback_keys_failed = {}\n  gc_runs = {}\n",
                    util::hprint((b.set.dirty_sectors << 9) as i64),
                    util::hprint(b.rate.limiter.rate << 9),
                    b.state(),
                    b.cache_available_percent(),
                    b.stats_total(),
                    b.keys_done,
                    b.keys_failed,
                    b.set.gc_count,
                ));
                out.push((format!("bcache-{}.txt", d.name), s.into_bytes()));
            }
        }
        out
    }
}
