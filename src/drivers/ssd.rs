//! A pure timing model of a SATA-class SSD's write path, and the `ssd`
//! driver around it (its scenario keys, queue and `queue_rq`, at the end).
//!
//! The model involves no simulator state: [`SsdState::submit`] takes the submission
//! time and the size of one write and returns its completion time, updating
//! the device's internal state. The caller submits requests in the order the
//! device receives them (non-decreasing `now` in normal use; an earlier `now`
//! simply queues behind what is already there).
//!
//! # Without a volatile write cache (`write_cache == false`)
//!
//! The flash back end is `channels` independent servers (channels, or more
//! generally the units of internal parallelism: channels × dies). Each write
//! takes the channel that becomes free first (lowest index on a tie), starts
//! at `max(now, channel free)` and occupies it for
//!
//! ```text
//! per_io + bytes / (bandwidth / channels)
//! ```
//!
//! so one request alone sees `per_io` plus its transfer at one channel's share
//! of the bandwidth, and a deep queue of large writes reaches `bandwidth` in
//! total. The write completes when its channel is done (the data is on flash).
//!
//! # With a volatile write cache (`write_cache == true`)
//!
//! A write completes as soon as its data is in the cache:
//!
//! 1. it waits until the cache has room for it (`cache_bytes`; a write larger
//!    than the whole cache waits for the cache to be empty and then overfills
//!    it), and for the host link, which moves one request at a time at
//!    `bandwidth` (admission is FIFO);
//! 2. its data crosses the link in `bytes / bandwidth`;
//! 3. it is acknowledged `per_io / 4` later (the controller's command
//!    overhead without the flash program).
//!
//! Behind the host, the cache drains to flash in FIFO order, one cached write
//! after the other, each taking `per_io / channels + bytes / flush_bandwidth`
//! (the per-IO program overhead, amortised over the channels that program in
//! parallel, plus the data at the flash's sustained rate). A write holds its
//! room in the cache from admission until its drain ends. With
//! `flush_bandwidth == bandwidth` (the default) the drain has exactly the
//! throughput of the uncached back end, so the cache changes latency and
//! absorbs bursts but not the sustained rate; a smaller `flush_bandwidth`
//! models a drive whose sustained (post-cache) write speed is lower than its
//! burst speed.
//!
//! # Reads
//!
//! A read takes the channel that becomes free first, like an uncached
//! write, and occupies it for
//!
//! ```text
//! read_latency + bytes / (read_bandwidth / channels)
//! ```
//!
//! (the flash array read, tR, with the controller's command time, then the
//! data at the channel's share of the read rate); it completes when that
//! ends. Without a write cache reads and writes share the channels; with
//! one, the cache's drain runs on its own timeline and reads do not wait
//! for it (a simplification: the drain's programs would hold dies). A read
//! of data still in the write cache is read from flash all the same (the
//! cache keeps sizes, not positions).
//!
//! The LBA (`sector`) has no effect: an SSD's FTL makes writes
//! position-independent to first order. Garbage collection and write
//! amplification are not modelled.

use crate::block::blk_mq::ReqId;
use crate::drivers::{DeviceKind, DriverType, Parsed, QueueInfo};
use crate::kernel::{DevId, Kernel};
use crate::scenario::raw::err;
use crate::scenario::{DevSection, Elevator, Reader, ScenarioError};
use crate::sim::{Ns, NSEC_PER_SEC, NSEC_PER_USEC};

/// Parameters of the SSD model. See the module documentation for how each
/// one enters the timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SsdModel {
    /// Independent flash servers (internal parallelism). At least 1.
    pub channels: u32,
    /// Fixed cost of one write on a channel (command processing plus the
    /// flash program overhead), ns.
    pub per_io: Ns,
    /// Total data rate in bytes per second: shared equally by the channels
    /// and also the host link's rate for writes into the cache. Non-zero.
    pub bandwidth: u64,
    /// A volatile write cache is enabled (`queue/write_cache` = "write back").
    pub write_cache: bool,
    /// Size of the write cache in bytes (used only with `write_cache`).
    pub cache_bytes: u64,
    /// Rate at which the cache drains to flash, bytes per second (used only
    /// with `write_cache`). Non-zero.
    pub flush_bandwidth: u64,
    /// Fixed cost of one read on a channel (flash read time tR plus the
    /// command), ns.
    pub read_latency: Ns,
    /// Total read data rate, bytes per second, shared by the channels.
    /// Non-zero.
    pub read_bandwidth: u64,
}

impl Default for SsdModel {
    /// A SATA SSD (6 Gb/s link, ~550 MB/s usable):
    ///
    /// - `channels = 4`: the effective parallelism a SATA drive shows for
    ///   writes (4–8 channels, limited by its 32-deep NCQ and the link);
    /// - `bandwidth = 500 MB/s` (decimal): SATA SSDs' sequential writes sit
    ///   at 450–530 MB/s;
    /// - `per_io = 40 µs`: a single 4 KiB write then takes 40 + 32.8 µs on
    ///   its channel (32.768 µs = 4096 B at 125 MB/s), so 4 channels top out
    ///   at 4 / 72.768 µs ≈ 55 000 IOPS for random 4 KiB writes — the tens
    ///   of thousands of IOPS that SATA SSDs sustain at queue depth 32;
    /// - `write_cache = true`, `cache_bytes = 64 MiB`: SATA drives report a
    ///   volatile write cache; 64 MiB is the order of the DRAM buffer of a
    ///   mid-size drive (set several GiB to model an SLC cache instead);
    /// - `flush_bandwidth = 500 MB/s`: equal to `bandwidth`, so the drain has
    ///   the same sustained throughput as the uncached back end (4 KiB:
    ///   40/4 + 8.192 = 18.192 µs per write, the same 55 000 IOPS);
    /// - `read_bandwidth = 550 MB/s`: SATA SSDs' datasheets quote 540–560
    ///   MB/s sequential reads (the 6 Gb/s link's ceiling); 1 MiB reads on
    ///   4 channels reach 546 MB/s;
    /// - `read_latency = 50 µs`: a TLC page read (tR ≈ 45–60 µs) with the
    ///   command; a lone 4 KiB read then takes 50 + 29.8 µs ≈ 80 µs, the
    ///   ~12 500 IOPS that SATA datasheets give for 4 KiB random reads at
    ///   queue depth 1. At depth 4 and more the 4 channels give ~50 000
    ///   IOPS, below the 90 000–98 000 of datasheets at depth 32 (their
    ///   reads spread over more dies than the write model's channels; raise
    ///   `channels` or lower `read_latency` to match a drive).
    fn default() -> SsdModel {
        SsdModel {
            channels: 4,
            per_io: 40 * NSEC_PER_USEC,
            bandwidth: 500_000_000,
            write_cache: true,
            cache_bytes: 64 << 20,
            flush_bandwidth: 500_000_000,
            read_latency: 50 * NSEC_PER_USEC,
            read_bandwidth: 550_000_000,
        }
    }
}

/// `bytes` at `rate` bytes per second, in ns, rounded up.
fn xfer(bytes: u64, rate: u64) -> Ns {
    (bytes as u128 * NSEC_PER_SEC as u128).div_ceil(rate as u128) as Ns
}

impl SsdModel {
    /// Time one write of `bytes` occupies a channel (uncached path):
    /// `per_io + bytes / (bandwidth / channels)`.
    pub fn channel_time(&self, bytes: u64) -> Ns {
        let bytes_x_ch = bytes as u128 * self.channels as u128;
        let t = (bytes_x_ch * NSEC_PER_SEC as u128).div_ceil(self.bandwidth as u128);
        self.per_io + t as Ns
    }

    /// Time one read of `bytes` occupies a channel:
    /// `read_latency + bytes / (read_bandwidth / channels)`.
    pub fn read_channel_time(&self, bytes: u64) -> Ns {
        let bytes_x_ch = bytes as u128 * self.channels as u128;
        let t = (bytes_x_ch * NSEC_PER_SEC as u128).div_ceil(self.read_bandwidth as u128);
        self.read_latency + t as Ns
    }

    /// Time one cached write of `bytes` takes to drain to flash:
    /// `per_io / channels + bytes / flush_bandwidth`.
    pub fn drain_time(&self, bytes: u64) -> Ns {
        self.per_io / self.channels as u64 + xfer(bytes, self.flush_bandwidth)
    }
}

/// The state of one SSD: channel and cache occupancy.
#[derive(Clone, Debug)]
pub struct SsdState {
    pub model: SsdModel,
    /// When each channel becomes free (uncached path).
    chan_free: Vec<Ns>,
    /// When the host link becomes free (cached path).
    link_free: Ns,
    /// Cached writes not yet drained.
    cache: crate::drivers::write_cache::WriteCache,
    /// When the last cached write finishes draining.
    drain_end: Ns,
}

impl SsdState {
    /// An idle device. Panics if `channels`, `bandwidth` or (with a write
    /// cache) `flush_bandwidth` is zero.
    pub fn new(model: SsdModel) -> SsdState {
        assert!(model.channels > 0, "ssd: channels must be > 0");
        assert!(model.bandwidth > 0, "ssd: bandwidth must be > 0");
        assert!(
            !model.write_cache || model.flush_bandwidth > 0,
            "ssd: flush_bandwidth must be > 0 with a write cache"
        );
        SsdState {
            chan_free: vec![0; model.channels as usize],
            model,
            link_free: 0,
            cache: Default::default(),
            drain_end: 0,
        }
    }

    /// Submit a write of `bytes` at `now`; returns its completion time.
    /// `sector` is accepted for interface symmetry and does not affect the
    /// timing.
    pub fn submit(&mut self, now: Ns, _sector: u64, bytes: u64) -> Ns {
        if self.model.write_cache {
            self.submit_cached(now, bytes)
        } else {
            self.submit_direct(now, bytes)
        }
    }

    /// Submit a read of `bytes` at `now`; returns its completion time.
    pub fn submit_read(&mut self, now: Ns, bytes: u64) -> Ns {
        let t = self.model.read_channel_time(bytes);
        self.on_channel(now, t)
    }

    fn submit_direct(&mut self, now: Ns, bytes: u64) -> Ns {
        let t = self.model.channel_time(bytes);
        self.on_channel(now, t)
    }

    /// Occupy the channel that becomes free first (lowest index on a tie)
    /// for `t` from `now` or when it frees; returns the end.
    fn on_channel(&mut self, now: Ns, t: Ns) -> Ns {
        let (i, free) = self
            .chan_free
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, t)| (t, i))
            .expect("channels > 0");
        let end = now.max(free) + t;
        self.chan_free[i] = end;
        end
    }

    fn submit_cached(&mut self, now: Ns, bytes: u64) -> Ns {
        let m = &self.model;
        let (bw, ack, drain) = (m.bandwidth, m.per_io / 4, m.drain_time(bytes));
        let cap = m.cache_bytes;
        let t = self.cache.room_at(now.max(self.link_free), bytes, cap);
        let in_cache = t + xfer(bytes, bw);
        self.link_free = in_cache;
        self.drain_end = in_cache.max(self.drain_end) + drain;
        self.cache.push(bytes, self.drain_end);
        in_cache + ack
    }

    /// Completion time of a cache flush (`REQ_PREFLUSH`) issued at `now`:
    /// when every write submitted so far is on flash. Without a write cache
    /// completed writes are already durable, so it is `now`.
    pub fn flush(&self, now: Ns) -> Ns {
        if self.model.write_cache {
            now.max(self.drain_end)
        } else {
            now
        }
    }

    /// Bytes in the write cache at time `t` (writes admitted and not yet
    /// drained by `t`). For tests and statistics.
    pub fn cached_bytes_at(&self, t: Ns) -> u64 {
        self.cache.bytes_at(t)
    }
}

/// The AHCI NCQ depth: 32 commands.
pub const NCQ_DEPTH: u32 = 32;

/// `type = "ssd"`.
pub(crate) const TYPE: DriverType = DriverType {
    name: "ssd",
    keys: &[
        "channels",
        "per_io",
        "bandwidth",
        "write_cache",
        "cache",
        "flush_bandwidth",
        "read_latency",
        "read_bandwidth",
    ],
    parse,
};

/// Keys and defaults ([`SsdModel::default`]): `channels` 4 (1..=1024),
/// `per_io` 40us, `bandwidth` 500MB/s (> 0), `write_cache` true, `cache`
/// 64M, `flush_bandwidth` 500MB/s (> 0), `read_latency` 50us,
/// `read_bandwidth` 550MB/s (> 0).
fn parse(r: &mut Reader, s: &DevSection) -> Result<Parsed, ScenarioError> {
    let d = SsdModel::default();
    let m = SsdModel {
        channels: r
            .uint(&s.key("channels"), 1, 1024)?
            .map(|x| x.0 as u32)
            .unwrap_or(d.channels),
        per_io: r
            .duration(&s.key("per_io"))?
            .map(|x| x.0)
            .unwrap_or(d.per_io),
        bandwidth: match r.rate(&s.key("bandwidth"))? {
            Some((0, e)) => return err(&e.origin, "`bandwidth` must be > 0"),
            Some((v, _)) => v,
            None => d.bandwidth,
        },
        write_cache: r
            .boolean(&s.key("write_cache"), false)?
            .unwrap_or(d.write_cache),
        cache_bytes: r
            .size(&s.key("cache"))?
            .map(|x| x.0)
            .unwrap_or(d.cache_bytes),
        flush_bandwidth: match r.rate(&s.key("flush_bandwidth"))? {
            Some((0, e)) => return err(&e.origin, "`flush_bandwidth` must be > 0"),
            Some((v, _)) => v,
            None => d.flush_bandwidth,
        },
        read_latency: r
            .duration(&s.key("read_latency"))?
            .map(|x| x.0)
            .unwrap_or(d.read_latency),
        read_bandwidth: match r.rate(&s.key("read_bandwidth"))? {
            Some((0, e)) => return err(&e.origin, "`read_bandwidth` must be > 0"),
            Some((v, _)) => v,
            None => d.read_bandwidth,
        },
    };
    Ok((DeviceKind::Ssd(m), None))
}

/// A SATA SSD on AHCI (an sd device): 32 tags, which `blk_queue_depth`
/// reports, and the driver takes them all; no elevator, not rotational,
/// the model's write cache.
pub fn queue_info(m: &SsdModel) -> QueueInfo {
    QueueInfo {
        major: crate::drivers::SCSI_DISK0_MAJOR,
        minor_step: crate::drivers::SD_MINORS,
        max_hw_sectors_kb: 32767,
        scheduler: Elevator::None,
        nr_requests: NCQ_DEPTH,
        nr_requests_sched: NCQ_DEPTH,
        slots: 0,
        queue_depth: Some(NCQ_DEPTH),
        rotational: false,
        write_cache: m.write_cache,
        bio_based: false,
    }
}

impl Kernel {
    /// The driver's `queue_rq`: the device completes the request when the
    /// model says.
    #[inline]
    pub fn ssd_queue_rq(&mut self, dev: DevId, rq: ReqId) {
        let now = self.now();
        let (sector, sectors, read) = {
            let r = self.reqs[rq].as_ref().expect("rq");
            (r.sector, r.nr_sectors, r.is_read())
        };
        let crate::drivers::Driver::Ssd(st) = &mut self.devs[dev].driver else {
            unreachable!("not an ssd")
        };
        let done = if read {
            st.submit_read(now, sectors * 512)
        } else {
            st.submit(now, sector, sectors * 512)
        };
        self.q
            .schedule(done, crate::kernel::Ev::ReqDone { rq: rq as u32 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uncached() -> SsdModel {
        SsdModel {
            write_cache: false,
            ..SsdModel::default()
        }
    }

    #[test]
    fn defaults_are_sata_like() {
        let m = SsdModel::default();
        assert_eq!(m.channels, 4);
        assert_eq!(m.per_io, 40_000);
        assert_eq!(m.bandwidth, 500_000_000);
        assert!(m.write_cache);
        assert_eq!(m.cache_bytes, 64 << 20);
        // 4 KiB on one channel: 4096 B at 125 MB/s = 32 768 ns, + 40 µs.
        assert_eq!(m.channel_time(4096), 72_768);
        // 1 MiB: 1 048 576 B at 125 MB/s = 8 388 608 ns, + 40 µs.
        assert_eq!(m.channel_time(1 << 20), 8_428_608);
        // Drain of 4 KiB: 40/4 µs + 4096 B at 500 MB/s = 10 000 + 8 192.
        assert_eq!(m.drain_time(4096), 18_192);
    }

    #[test]
    fn reads_take_channels_at_the_read_rate() {
        let m = SsdModel::default();
        // 4 KiB: 4096 B x 4 channels at 550 MB/s = 29 790 ns, + 50 us
        assert_eq!(m.read_channel_time(4096), 79_790);
        let mut s = SsdState::new(m.clone());
        // a lone read: ~12 500 IOPS at queue depth 1
        assert_eq!(s.submit_read(0, 4096), 79_790);
        // four in parallel, the fifth queues behind the first
        for _ in 0..3 {
            assert_eq!(s.submit_read(0, 4096), 79_790);
        }
        assert_eq!(s.submit_read(0, 4096), 2 * 79_790);
        // without a write cache, reads and writes share the channels
        let mut u = SsdState::new(uncached());
        for _ in 0..4 {
            u.submit(0, 0, 4096);
        }
        assert_eq!(u.submit_read(0, 4096), 72_768 + 79_790);
        // sequential 1 MiB reads approach 550 MB/s
        let mut s = SsdState::new(m);
        let last = (0..400).map(|_| s.submit_read(0, 1 << 20)).max().unwrap();
        let bps = (400u64 << 20) as f64 * NSEC_PER_SEC as f64 / last as f64;
        assert!(bps > 0.99 * 550e6 && bps <= 550e6, "{bps}");
    }

    #[test]
    fn single_uncached_write() {
        let mut s = SsdState::new(uncached());
        assert_eq!(s.submit(1_000, 0, 4096), 1_000 + 72_768);
    }

    #[test]
    fn channels_serve_in_parallel_then_queue() {
        let mut s = SsdState::new(uncached());
        // Four writes at t=0 take the four channels and finish together.
        for _ in 0..4 {
            assert_eq!(s.submit(0, 0, 4096), 72_768);
        }
        // The fifth waits for the first free channel (channel 0).
        assert_eq!(s.submit(0, 0, 4096), 2 * 72_768);
        // A write arriving after everything is idle starts at once.
        assert_eq!(s.submit(1_000_000, 0, 4096), 1_072_768);
    }

    #[test]
    fn earliest_free_channel_is_chosen() {
        let mut s = SsdState::new(uncached());
        // Channel 0 gets a 1 MiB write, channels 1..3 a 4 KiB write each.
        assert_eq!(s.submit(0, 0, 1 << 20), 8_428_608);
        for _ in 0..3 {
            assert_eq!(s.submit(0, 0, 4096), 72_768);
        }
        // The next write goes to channel 1 (free at 72 768), not channel 0.
        assert_eq!(s.submit(0, 0, 4096), 2 * 72_768);
    }

    #[test]
    fn uncached_random_4k_iops_saturate_near_55k() {
        let mut s = SsdState::new(uncached());
        let n = 4_000u64;
        let last = (0..n).map(|i| s.submit(0, i * 8, 4096)).max().unwrap();
        // 1 000 rounds of 4 parallel writes, 72 768 ns each.
        assert_eq!(last, 1_000 * 72_768);
        let iops = n as f64 * NSEC_PER_SEC as f64 / last as f64;
        assert!((54_000.0..56_000.0).contains(&iops), "{iops}");
    }

    #[test]
    fn uncached_sequential_1m_approaches_bandwidth() {
        let mut s = SsdState::new(uncached());
        let n = 400u64;
        let last = (0..n)
            .map(|i| s.submit(0, i * 2048, 1 << 20))
            .max()
            .unwrap();
        assert_eq!(last, 100 * 8_428_608);
        let bps = (n << 20) as f64 * NSEC_PER_SEC as f64 / last as f64;
        // 4 MiB per 8.428608 ms = 497.6 MB/s.
        assert!(bps > 0.99 * 500e6 && bps <= 500e6, "{bps}");
    }

    #[test]
    fn cached_write_acks_after_link_and_quarter_per_io() {
        let mut s = SsdState::new(SsdModel::default());
        // 4096 B over the link at 500 MB/s = 8 192 ns, then 40 µs / 4.
        assert_eq!(s.submit(0, 0, 4096), 8_192 + 10_000);
        // Drained at 8 192 + 18 192.
        assert_eq!(s.flush(0), 26_384);
        assert_eq!(s.cached_bytes_at(26_383), 4096);
        assert_eq!(s.cached_bytes_at(26_384), 0);
        // The link is serial: a second write at t=0 crosses it after the first.
        assert_eq!(s.submit(0, 0, 4096), 2 * 8_192 + 10_000);
        // It drains after the first: 26 384 + 18 192.
        assert_eq!(s.flush(0), 44_576);
        assert_eq!(s.flush(50_000), 50_000);
    }

    #[test]
    fn full_cache_makes_writes_wait_for_room() {
        // Easy numbers: link 1 B/ns, flash 0.1 B/ns, one channel.
        let m = SsdModel {
            channels: 1,
            per_io: 4_000,
            bandwidth: 1_000_000_000,
            write_cache: true,
            cache_bytes: 8192,
            flush_bandwidth: 100_000_000,
            ..SsdModel::default()
        };
        assert_eq!(m.drain_time(4096), 4_000 + 40_960);
        let mut s = SsdState::new(m);
        // w1: link 0..4096, ack +1000; drains 4096..49 056.
        assert_eq!(s.submit(0, 0, 4096), 5_096);
        // w2: link 4096..8192, ack 9 192; drains 49 056..94 016.
        assert_eq!(s.submit(0, 0, 4096), 9_192);
        assert_eq!(s.cached_bytes_at(9_192), 8192);
        // w3: the cache is full until w1 drains at 49 056; link until
        // 53 152, ack 54 152; drains 94 016..138 976.
        assert_eq!(s.submit(0, 0, 4096), 54_152);
        assert_eq!(s.flush(0), 138_976);
        // A write larger than the cache waits for it to empty, then overfills.
        assert_eq!(s.submit(0, 0, 16384), 138_976 + 16_384 + 1_000);
        assert_eq!(s.cached_bytes_at(138_976 + 16_384), 16384);
    }

    #[test]
    fn cached_random_4k_burst_then_sustained_rate() {
        let mut s = SsdState::new(SsdModel::default());
        let n = 50_000u64;
        let acks: Vec<Ns> = (0..n).map(|i| s.submit(0, i * 8, 4096)).collect();
        // While the cache has room the link paces admission: 8 192 ns apart.
        assert_eq!(acks[0], 18_192);
        assert_eq!(acks[100] - acks[99], 8_192);
        // 64 MiB holds 16 384 writes; afterwards each admission waits for
        // one drain, 18 192 ns apart (~55 000 IOPS).
        assert_eq!(acks[40_001] - acks[40_000], 18_192);
        let tail = (acks[49_999] - acks[30_000]) as f64 / NSEC_PER_SEC as f64;
        let iops = 19_999.0 / tail;
        assert!((54_000.0..56_000.0).contains(&iops), "{iops}");
        // Acks are monotone (FIFO admission).
        assert!(acks.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn lower_flush_bandwidth_lowers_sustained_rate() {
        // A 4 MiB cache holds four 1 MiB writes; the flash drains at 250 MB/s.
        let m = SsdModel {
            flush_bandwidth: 250_000_000,
            cache_bytes: 4 << 20,
            ..SsdModel::default()
        };
        let d = 10_000 + 4_194_304; // per_io / 4 channels + 1 MiB at 250 MB/s
        assert_eq!(m.drain_time(1 << 20), d);
        let link = 2_097_152; // 1 MiB at 500 MB/s
        let mut s = SsdState::new(m);
        let acks: Vec<Ns> = (0..64).map(|i| s.submit(0, i * 2048, 1 << 20)).collect();
        // w0..w3 fill the cache at link speed.
        for (k, &a) in acks[..4].iter().enumerate() {
            assert_eq!(a, (k as u64 + 1) * link + 10_000);
        }
        // Drains run back to back from the first one's end: drain k ends at
        // link + (k + 1) * d. From w5 on, write k is admitted when write
        // k - 4 has drained (w4 is admitted at 4 * link, after w0's drain).
        assert_eq!(acks[4], 5 * link + 10_000);
        assert_eq!(acks[63], link + 60 * d + link + 10_000);
        assert_eq!(acks[63], 256_462_544);
        assert_eq!(s.flush(0), link + 64 * d);
        // Sustained: one 1 MiB write per d, i.e. ~249 MB/s.
        let bps = (1u64 << 20) as f64 * NSEC_PER_SEC as f64 / (acks[63] - acks[62]) as f64;
        assert!((248e6..250e6).contains(&bps), "{bps}");
    }

    #[test]
    #[should_panic]
    fn zero_channels_rejected() {
        SsdState::new(SsdModel {
            channels: 0,
            ..SsdModel::default()
        });
    }
}
