//! A pure timing model of a rotating disk's write path, and the `hdd`
//! driver around it (its scenario keys, queue and `queue_rq`, at the end).
//!
//! The model involves no simulator state: [`HddState::submit`] takes the submission
//! time, start sector and size of one write and returns its completion time.
//! The disk serves requests one at a time in submission order (FIFO: the
//! caller, i.e. the I/O scheduler, decides the order; the drive does not
//! reorder).
//!
//! # Service time of one request
//!
//! ```text
//! per_cmd_overhead + seek(distance) + rotation + bytes / media_rate(sector)
//! ```
//!
//! - **Sequential** requests — starting exactly where the previous one ended
//!   (the head starts parked at sector 0, so a first request at sector 0 is
//!   sequential) — pay no seek and no rotational latency: the model assumes
//!   the drive streams them back to back, as its look-ahead/track buffer and
//!   a queued successor let it do.
//! - **Other** requests pay `seek(|sector - head|)` and a deterministic
//!   rotational latency of half a revolution (its mean over a uniformly
//!   random angular position), `30 s / rpm`.
//! - **Seek curve.** With `x = distance / capacity_sectors` (clamped to 1),
//!
//!   ```text
//!   seek(x) = track_to_track + (full_stroke - track_to_track) * (w * sqrt(x) + (1 - w) * x)
//!   ```
//!
//!   a mix of the square-root law of short, acceleration-limited seeks and
//!   the linear law of long, coast-limited ones. `w` is chosen so that
//!   `seek(1/3) == avg_seek` (datasheets quote the average seek as the seek
//!   over one third of the stroke, the mean distance between two random
//!   positions), clamped to `[0, 1]` so the curve is always monotone; with
//!   `w = 1` it is the plain `t2t + (full - t2t) * sqrt(x)` model. It passes
//!   through `track_to_track` for a one-track move and `full_stroke` at
//!   `x = 1`.
//! - **Media rate.** Zoned recording puts more sectors on outer tracks, and
//!   LBAs start at the outer edge, so the rate falls linearly with the
//!   starting LBA from `media_rate_outer` at sector 0 to `media_rate_inner`
//!   at the last sector. A request is transferred at the rate of its start
//!   sector.
//!
//! # Write cache
//!
//! Without a write cache a write completes when its media write ends. With
//! `write_cache`, the drive acknowledges a write once its command has been
//! processed (`per_cmd_overhead`, one command at a time) and its data is in
//! the cache; the media then writes the cached data in FIFO order with the
//! service time above minus the overhead, already paid. A write holds room in
//! the cache (`cache_bytes`) from admission until its media write ends; when
//! the cache is full the next write waits for room (a write larger than the
//! cache waits for it to empty and overfills it). The host link is taken to
//! be much faster than the media, so the data transfer into the cache is not
//! timed.
//!
//! # Reads
//!
//! A read ([`HddState::submit_read`]) always goes to the media, with the
//! same service time as a write (command overhead, seek, rotation, media
//! rate): the write cache does not absorb it, and data still in the cache
//! is not served from it. It takes its place in the media's FIFO order, so
//! a read behind cached writes waits until the media has written them
//! (drives reorder their queue; this model does not), and completes when
//! its media transfer ends.

use crate::block::blk_mq::ReqId;
use crate::drivers::{DeviceKind, DriverType, Parsed, QueueInfo};
use crate::kernel::{DevId, Kernel};
use crate::scenario::raw::{err, Entry};
use crate::scenario::{DevSection, Elevator, Reader, ScenarioError};
use crate::sim::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC, NSEC_PER_USEC};

/// Bytes per sector.
const SECTOR: u64 = 512;

/// The drive's command queue (SATA NCQ: 32 commands); requests beyond it
/// wait in the block layer's scheduler.
pub const NCQ_DEPTH: u32 = 32;

/// Parameters of the disk model. See the module documentation for how each
/// one enters the timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HddModel {
    /// Capacity in 512-byte sectors; seek distances are fractions of it.
    pub capacity_sectors: u64,
    /// Spindle speed, revolutions per minute. Non-zero.
    pub rpm: u32,
    /// Datasheet average seek (seek over a third of the stroke), ns.
    pub avg_seek: Ns,
    /// Seek to an adjacent track (the shortest non-zero seek), ns.
    pub track_to_track: Ns,
    /// Seek across the whole stroke, ns.
    pub full_stroke: Ns,
    /// Media rate at the outer edge (sector 0), bytes per second. Non-zero.
    pub media_rate_outer: u64,
    /// Media rate at the inner edge (last sector), bytes per second. Non-zero.
    pub media_rate_inner: u64,
    /// Command processing time per request, ns.
    pub per_cmd_overhead: Ns,
    /// A volatile write cache is enabled (`queue/write_cache` = "write back").
    pub write_cache: bool,
    /// Size of the write cache in bytes (used only with `write_cache`).
    pub cache_bytes: u64,
}

impl Default for HddModel {
    /// A 2 TB, 7200 rpm SATA desktop disk:
    ///
    /// - `capacity_sectors = 3 907 029 168`: the standard LBA count of a
    ///   2 TB drive;
    /// - `rpm = 7200`: 8.33 ms per revolution, 4.17 ms mean rotational
    ///   latency;
    /// - `avg_seek = 8.5 ms`, `track_to_track = 1 ms`, `full_stroke = 16 ms`:
    ///   typical datasheet figures (8.5 ms average read seek, ~1 ms
    ///   track-to-track write seek, full stroke about twice the average);
    ///   with these `w ≈ 0.68`, and a uniformly random seek averages ≈ 8.05 ms;
    /// - `media_rate_outer = 200 MB/s`, `media_rate_inner = 100 MB/s`
    ///   (decimal): the outer/inner rates of current 7200 rpm drives, inner
    ///   about half of outer;
    /// - `per_cmd_overhead = 100 µs`: controller time per command, small
    ///   enough that 1 MiB sequential writes reach ~98% of the media rate;
    /// - random 4 KiB writes then take ≈ 0.1 + 8.05 + 4.17 + 0.03 ms ≈ 12.3 ms,
    ///   about 80 IOPS, the usual figure for such a disk;
    /// - `write_cache = true`, `cache_bytes = 64 MiB`: SATA disks ship with
    ///   the write cache on and 64–256 MB of DRAM, part of it for writes.
    fn default() -> HddModel {
        HddModel {
            capacity_sectors: 3_907_029_168,
            rpm: 7200,
            avg_seek: 8_500 * NSEC_PER_USEC,
            track_to_track: NSEC_PER_MSEC,
            full_stroke: 16 * NSEC_PER_MSEC,
            media_rate_outer: 200_000_000,
            media_rate_inner: 100_000_000,
            per_cmd_overhead: 100 * NSEC_PER_USEC,
            write_cache: true,
            cache_bytes: 64 << 20,
        }
    }
}

impl HddModel {
    /// One revolution, ns (`60 s / rpm`, rounded down).
    pub fn rev_time(&self) -> Ns {
        60 * NSEC_PER_SEC / self.rpm as u64
    }

    /// Rotational latency charged to a non-sequential request: half a
    /// revolution (`30 s / rpm`, rounded down).
    pub fn half_rev(&self) -> Ns {
        30 * NSEC_PER_SEC / self.rpm as u64
    }

    /// The weight `w` of the square-root term of the seek curve, in [0, 1].
    pub fn seek_sqrt_weight(&self) -> f64 {
        let span = self.full_stroke.saturating_sub(self.track_to_track) as f64;
        if span == 0.0 {
            return 1.0;
        }
        let a = (self.avg_seek as f64 - self.track_to_track as f64) / span;
        let third = 1.0 / 3.0;
        ((a - third) / (third.sqrt() - third)).clamp(0.0, 1.0)
    }

    /// Seek time over `distance` sectors: 0 for 0, otherwise the curve of
    /// the module documentation (monotone non-decreasing in `distance`).
    pub fn seek_time(&self, distance: u64) -> Ns {
        if distance == 0 {
            return 0;
        }
        let t2t = self.track_to_track as f64;
        let span = self.full_stroke.saturating_sub(self.track_to_track) as f64;
        let x = (distance as f64 / self.capacity_sectors.max(1) as f64).min(1.0);
        let w = self.seek_sqrt_weight();
        (t2t + span * (w * x.sqrt() + (1.0 - w) * x)).round() as Ns
    }

    /// Media rate at `sector`, bytes per second: linear in LBA from
    /// `media_rate_outer` at 0 to `media_rate_inner` at the last sector
    /// (clamped beyond the capacity).
    pub fn media_rate(&self, sector: u64) -> u64 {
        let cap = self.capacity_sectors.max(1) as i128;
        let s = (sector as i128).min(cap);
        let (o, i) = (self.media_rate_outer as i128, self.media_rate_inner as i128);
        // Round towards the outer rate (floor of the drop when it falls).
        let drop = (o - i) * s / cap;
        (o - drop) as u64
    }

    /// Time to transfer `bytes` starting at `sector`, ns, rounded up.
    pub fn xfer_time(&self, sector: u64, bytes: u64) -> Ns {
        let rate = self.media_rate(sector).max(1) as u128;
        (bytes as u128 * NSEC_PER_SEC as u128).div_ceil(rate) as Ns
    }

    /// Positioning time (seek + rotational latency) to start at `sector`
    /// with the head at `head` (the sector after the previous request).
    pub fn position_time(&self, head: u64, sector: u64) -> Ns {
        if sector == head {
            0
        } else {
            self.seek_time(sector.abs_diff(head)) + self.half_rev()
        }
    }
}

/// The state of one disk: head position, media and cache occupancy.
#[derive(Clone, Debug)]
pub struct HddState {
    pub model: HddModel,
    /// The sector right after the last request given to the media (where a
    /// sequential request starts). Starts at 0.
    pub head_sector: u64,
    /// When the media finishes its last request.
    media_free: Ns,
    /// When the controller can take the next command (cached path).
    cmd_free: Ns,
    /// Cached writes not yet on the media.
    cache: crate::drivers::write_cache::WriteCache,
}

impl HddState {
    /// An idle disk with the head at sector 0. Panics if `rpm` or a media
    /// rate is zero.
    pub fn new(model: HddModel) -> HddState {
        assert!(model.rpm > 0, "hdd: rpm must be > 0");
        assert!(
            model.media_rate_outer > 0 && model.media_rate_inner > 0,
            "hdd: media rates must be > 0"
        );
        HddState {
            model,
            head_sector: 0,
            media_free: 0,
            cmd_free: 0,
            cache: Default::default(),
        }
    }

    /// Submit a write of `bytes` at `sector` at time `now`; returns its
    /// completion time (media end without a write cache, acknowledgement
    /// with one).
    pub fn submit(&mut self, now: Ns, sector: u64, bytes: u64) -> Ns {
        let m = &self.model;
        let media = m.position_time(self.head_sector, sector) + m.xfer_time(sector, bytes);
        let overhead = m.per_cmd_overhead;
        self.head_sector = sector + bytes.div_ceil(SECTOR);
        if !m.write_cache {
            let end = now.max(self.media_free) + overhead + media;
            self.media_free = end;
            return end;
        }
        let cap = m.cache_bytes;
        let t = self.cache.room_at(now.max(self.cmd_free), bytes, cap);
        let ack = t + overhead;
        self.cmd_free = ack;
        self.media_free = ack.max(self.media_free) + media;
        self.cache.push(bytes, self.media_free);
        ack
    }

    /// Submit a read of `bytes` at `sector` at time `now`; returns its
    /// completion time: after everything already on the media's queue
    /// (cached writes included), its command, positioning and transfer.
    pub fn submit_read(&mut self, now: Ns, sector: u64, bytes: u64) -> Ns {
        let m = &self.model;
        let media = m.position_time(self.head_sector, sector) + m.xfer_time(sector, bytes);
        self.head_sector = sector + bytes.div_ceil(SECTOR);
        let end = now.max(self.media_free) + m.per_cmd_overhead + media;
        self.media_free = end;
        end
    }

    /// Completion time of a cache flush (`REQ_PREFLUSH`) issued at `now`:
    /// when every write submitted so far is on the media (and, the media
    /// being FIFO, the reads queued among them are done). Without a write
    /// cache completed writes are already durable, so it is `now`.
    pub fn flush(&self, now: Ns) -> Ns {
        if self.model.write_cache {
            now.max(self.media_free)
        } else {
            now
        }
    }

    /// When the media finishes everything submitted so far.
    pub fn media_idle_at(&self) -> Ns {
        self.media_free
    }
}

/// `type = "hdd"`.
pub(crate) const TYPE: DriverType = DriverType {
    name: "hdd",
    keys: &[
        "rpm",
        "avg_seek",
        "track_to_track",
        "full_stroke",
        "media_rate_outer",
        "media_rate_inner",
        "per_cmd_overhead",
        "write_cache",
        "cache",
    ],
    parse,
};

/// Keys and defaults (a 7200 rpm SATA desktop disk, [`HddModel::default`]):
///
/// ```text
/// rpm                  7200     spindle speed, 1..=100000
/// avg_seek             "8.5ms"  datasheet average (1/3-stroke) seek
/// track_to_track       "1ms"    shortest seek (write settle included)
/// full_stroke          "16ms"   seek across the whole stroke
/// media_rate_outer     200MB/s  media rate at sector 0 (> 0)
/// media_rate_inner     100MB/s  media rate at the last sector (> 0,
///                               ≤ media_rate_outer)
/// per_cmd_overhead     "100us"  controller time per command
/// write_cache          true     volatile write cache ("write back")
/// cache                "64M"    write cache size
/// ```
///
/// with track_to_track ≤ avg_seek ≤ full_stroke. The capacity the seek
/// distances and zones are fractions of is `size` ([`set_size`]); the
/// drive holds [`NCQ_DEPTH`] commands. Requests are served FIFO in the
/// order the block layer dispatches them.
fn parse(r: &mut Reader, s: &DevSection) -> Result<Parsed, ScenarioError> {
    let (dname, tye) = (s.name, s.type_origin);
    let p = |k: &str| s.key(k);
    let d = HddModel::default();
    let rpm = r
        .uint(&p("rpm"), 1, 100_000)?
        .map(|x| x.0 as u32)
        .unwrap_or(d.rpm);
    let avg_seek = r.duration(&p("avg_seek"))?;
    let t2t = r.duration(&p("track_to_track"))?;
    let full = r.duration(&p("full_stroke"))?;
    let (avg_v, t2t_v, full_v) = (
        avg_seek.as_ref().map(|x| x.0).unwrap_or(d.avg_seek),
        t2t.as_ref().map(|x| x.0).unwrap_or(d.track_to_track),
        full.as_ref().map(|x| x.0).unwrap_or(d.full_stroke),
    );
    // blame the knob that was set (the last of the pair, if both)
    let blame = |a: &Option<(Ns, Entry)>, b: &Option<(Ns, Entry)>| {
        b.as_ref()
            .or(a.as_ref())
            .map(|x| x.1.origin.clone())
            .unwrap_or_else(|| tye.clone())
    };
    if t2t_v > avg_v {
        return err(
            &blame(&t2t, &avg_seek),
            format!(
                "hdd `{dname}`: `track_to_track` ({} ms) exceeds `avg_seek` ({} ms); expected track_to_track ≤ avg_seek ≤ full_stroke",
                t2t_v as f64 / 1e6,
                avg_v as f64 / 1e6
            ),
        );
    }
    if avg_v > full_v {
        return err(
            &blame(&avg_seek, &full),
            format!(
                "hdd `{dname}`: `avg_seek` ({} ms) exceeds `full_stroke` ({} ms); expected track_to_track ≤ avg_seek ≤ full_stroke",
                avg_v as f64 / 1e6,
                full_v as f64 / 1e6
            ),
        );
    }
    let outer = r.rate(&p("media_rate_outer"))?;
    let inner = r.rate(&p("media_rate_inner"))?;
    for (k, x) in [("media_rate_outer", &outer), ("media_rate_inner", &inner)] {
        if let Some((0, e)) = x {
            return err(
                &e.origin,
                format!("`{k}` must be > 0; expected a rate such as \"150MB/s\""),
            );
        }
    }
    let (outer_v, inner_v) = (
        outer.as_ref().map(|x| x.0).unwrap_or(d.media_rate_outer),
        inner.as_ref().map(|x| x.0).unwrap_or(d.media_rate_inner),
    );
    if inner_v > outer_v {
        return err(
            &blame(&outer, &inner),
            format!(
                "hdd `{dname}`: `media_rate_inner` ({inner_v} B/s) exceeds `media_rate_outer` ({outer_v} B/s); expected inner ≤ outer (outer tracks hold more sectors)"
            ),
        );
    }
    let m = HddModel {
        // set from `size` (set_size)
        capacity_sectors: d.capacity_sectors,
        rpm,
        avg_seek: avg_v,
        track_to_track: t2t_v,
        full_stroke: full_v,
        media_rate_outer: outer_v,
        media_rate_inner: inner_v,
        per_cmd_overhead: r
            .duration(&p("per_cmd_overhead"))?
            .map(|x| x.0)
            .unwrap_or(d.per_cmd_overhead),
        write_cache: r
            .boolean(&p("write_cache"), false)?
            .unwrap_or(d.write_cache),
        cache_bytes: r.size(&p("cache"))?.map(|x| x.0).unwrap_or(d.cache_bytes),
    };
    Ok((DeviceKind::Hdd(m), None))
}

/// `devices.NAME.size` of an hdd: 4T unless set, at least 1M; the seek and
/// zone model spans it.
pub(crate) fn set_size(m: &mut HddModel, set: Option<(u64, Entry)>) -> Result<u64, ScenarioError> {
    let v = match set {
        Some((v, e)) if v < 1 << 20 => {
            return err(
                &e.origin,
                format!("`size` = {v} is too small for an hdd; expected at least 1M"),
            )
        }
        Some((v, _)) => v,
        None => 4 << 40,
    };
    m.capacity_sectors = v / SECTOR;
    Ok(v)
}

/// A SATA disk (an sd device): [`NCQ_DEPTH`] driver slots, which
/// `blk_queue_depth` reports; one hardware queue, so mq-deadline;
/// rotational; the model's write cache.
pub fn queue_info(m: &HddModel) -> QueueInfo {
    QueueInfo {
        major: crate::drivers::SCSI_DISK0_MAJOR,
        minor_step: crate::drivers::SD_MINORS,
        max_hw_sectors_kb: 32767,
        scheduler: Elevator::MqDeadline,
        nr_requests: NCQ_DEPTH,
        nr_requests_sched: 2 * NCQ_DEPTH.min(128),
        slots: NCQ_DEPTH,
        queue_depth: Some(NCQ_DEPTH),
        rotational: true,
        write_cache: m.write_cache,
        bio_based: false,
    }
}

impl Kernel {
    /// The driver's `queue_rq`: the drive serves requests one at a time in
    /// the order they are dispatched here (FIFO, no reordering in the
    /// drive) and completes each when the model says.
    #[inline]
    pub fn hdd_queue_rq(&mut self, dev: DevId, rq: ReqId) {
        let now = self.now();
        let (sector, sectors, read) = {
            let r = self.reqs[rq].as_ref().expect("rq");
            (r.sector, r.nr_sectors, r.is_read())
        };
        let crate::drivers::Driver::Hdd(st) = &mut self.devs[dev].driver else {
            unreachable!("not an hdd")
        };
        let done = if read {
            st.submit_read(now, sector, sectors * 512)
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

    fn uncached() -> HddModel {
        HddModel {
            write_cache: false,
            ..HddModel::default()
        }
    }

    /// A small deterministic PRNG (64-bit LCG, high bits) for random offsets.
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

    #[test]
    fn defaults_and_derived_constants() {
        let m = HddModel::default();
        // 60 s / 7200 = 8 333 333.3 ns; half = 4 166 666.6 ns.
        assert_eq!(m.rev_time(), 8_333_333);
        assert_eq!(m.half_rev(), 4_166_666);
        // w = ((8.5 - 1) / 15 - 1/3) / (1/sqrt(3) - 1/3) = 0.1667 / 0.2440.
        let w = m.seek_sqrt_weight();
        assert!((w - 0.68301).abs() < 1e-4, "{w}");
        // Capacity is divisible by 3: LBA C/3 = 1 302 343 056.
        assert_eq!(m.capacity_sectors % 3, 0);
    }

    #[test]
    fn seek_curve_hits_its_three_points() {
        let m = HddModel::default();
        let c = m.capacity_sectors;
        assert_eq!(m.seek_time(0), 0);
        // One sector: 15 ms * 0.68301 * sqrt(1 / C) = 163.9 ns above t2t.
        assert_eq!(m.seek_time(1), 1_000_164);
        assert!(m.seek_time(c / 3).abs_diff(8_500_000) <= 1);
        assert!(m.seek_time(c).abs_diff(16_000_000) <= 1);
        // Beyond the capacity the distance is clamped.
        assert_eq!(m.seek_time(2 * c), m.seek_time(c));
        // x = 1/4: 1 + 15 * (0.68301 * 0.5 + 0.31699 * 0.25) = 7.3113 ms.
        assert!(m.seek_time(c / 4).abs_diff(7_311_300) < 100);
    }

    #[test]
    fn seek_curve_is_monotone() {
        for m in [
            HddModel::default(),
            // avg below the sqrt curve: w clamps to 1 (pure sqrt).
            HddModel {
                avg_seek: 12 * NSEC_PER_MSEC,
                ..HddModel::default()
            },
            // avg below the linear curve: w clamps to 0 (pure linear).
            HddModel {
                avg_seek: 3 * NSEC_PER_MSEC,
                ..HddModel::default()
            },
        ] {
            let w = m.seek_sqrt_weight();
            assert!((0.0..=1.0).contains(&w));
            let c = m.capacity_sectors;
            let mut prev = 0;
            let mut d = 0u64;
            while d <= c + 1000 {
                let s = m.seek_time(d);
                assert!(s >= prev, "seek({d}) = {s} < {prev}");
                prev = s;
                d = if d < 1000 { d + 1 } else { d + d / 97 };
            }
        }
        let sqrt_only = HddModel {
            avg_seek: 12 * NSEC_PER_MSEC,
            ..HddModel::default()
        };
        assert_eq!(sqrt_only.seek_sqrt_weight(), 1.0);
        // Pure sqrt at x = 1/4: 1 + 15 * 0.5 = 8.5 ms.
        let c = sqrt_only.capacity_sectors;
        assert!(sqrt_only.seek_time(c / 4).abs_diff(8_500_000) <= 2);
    }

    #[test]
    fn media_rate_interpolates_by_lba() {
        let m = HddModel::default();
        let c = m.capacity_sectors;
        assert_eq!(m.media_rate(0), 200_000_000);
        assert_eq!(m.media_rate(c / 2), 150_000_000);
        // 200e6 - floor(100e6 / 3) = 166 666 667.
        assert_eq!(m.media_rate(c / 3), 166_666_667);
        assert_eq!(m.media_rate(c), 100_000_000);
        assert_eq!(m.media_rate(c * 2), 100_000_000);
        // 1 MiB at 200 MB/s = 5 242 880 ns; 4 KiB = 20 480 ns.
        assert_eq!(m.xfer_time(0, 1 << 20), 5_242_880);
        assert_eq!(m.xfer_time(0, 4096), 20_480);
        // 4 KiB at 100 MB/s = 40 960 ns.
        assert_eq!(m.xfer_time(c, 4096), 40_960);
    }

    #[test]
    fn one_random_write_hand_worked() {
        let m = uncached();
        let c3 = m.capacity_sectors / 3;
        let mut s = HddState::new(m);
        // Head at 0, write 4 KiB at C/3: 0.1 ms overhead + 8.5 ms seek
        // + 4.166666 ms rotation + 4096 B at 166 666 667 B/s (24 576 ns).
        let seek = s.model.seek_time(c3);
        assert!(seek.abs_diff(8_500_000) <= 1);
        assert_eq!(s.model.xfer_time(c3, 4096), 24_576);
        let done = s.submit(1_000, c3, 4096);
        assert_eq!(done, 1_000 + 100_000 + seek + 4_166_666 + 24_576);
        assert_eq!(s.head_sector, c3 + 8);
        // Back-to-back sequential follow-up: overhead + transfer only.
        let x = s.model.xfer_time(c3 + 8, 4096);
        assert_eq!(s.submit(0, c3 + 8, 4096), done + 100_000 + x);
        // A small backward jump (16 sectors) pays about t2t (1 ms + 656 ns)
        // and half a revolution.
        let seek16 = s.model.seek_time(16);
        assert_eq!(seek16, 1_000_656);
        let t = s.submit(0, c3, 4096);
        assert_eq!(
            t,
            done + 100_000 + x + 100_000 + seek16 + 4_166_666 + 24_576
        );
    }

    #[test]
    fn requests_are_served_fifo() {
        let mut s = HddState::new(uncached());
        // Submitted together at t=0: each starts when the previous ends.
        let a = s.submit(0, 0, 4096);
        assert_eq!(a, 100_000 + 20_480);
        let b = s.submit(0, 8, 4096);
        assert_eq!(b, a + 100_000 + 20_480);
        // A request arriving while idle starts at its own submission time.
        let c = s.submit(10 * NSEC_PER_MSEC, 16, 4096);
        assert_eq!(c, 10 * NSEC_PER_MSEC + 100_000 + 20_480);
    }

    #[test]
    fn sequential_1m_writes_approach_media_rate() {
        let mut s = HddState::new(uncached());
        // The first 1 MiB at sector 0: 100 µs + 5 242 880 ns.
        assert_eq!(s.submit(0, 0, 1 << 20), 5_342_880);
        let n = 1000u64;
        let mut last = 0;
        for i in 1..n {
            last = s.submit(0, i * 2048, 1 << 20);
        }
        let bps = (n << 20) as f64 * NSEC_PER_SEC as f64 / last as f64;
        // 1 MiB per 5.34 ms = 196.3 MB/s, 98% of the 200 MB/s outer rate.
        assert!(bps > 0.975 * 200e6 && bps < 200e6, "{bps}");
    }

    #[test]
    fn random_4k_writes_give_70_to_150_iops() {
        let mut s = HddState::new(uncached());
        let mut rng = Lcg(42);
        let n = 2_000u64;
        let max_start = s.model.capacity_sectors - 8;
        let mut last = 0;
        for _ in 0..n {
            let sector = (rng.next() % max_start) & !7;
            last = s.submit(0, sector, 4096);
        }
        let iops = n as f64 * NSEC_PER_SEC as f64 / last as f64;
        // Expect ~ 1 / (0.1 + 8.05 + 4.17 + 0.03 ms) ≈ 81.
        assert!((75.0..90.0).contains(&iops), "{iops}");
        assert!((70.0..150.0).contains(&iops));
    }

    #[test]
    fn write_cache_acks_early_then_waits_for_room() {
        // Cache of two 4 KiB writes, random far-apart writes.
        let m = HddModel {
            cache_bytes: 8192,
            ..HddModel::default()
        };
        let c2 = m.capacity_sectors / 2;
        let per = |m: &HddModel, head: u64, sector: u64| {
            m.position_time(head, sector) + m.xfer_time(sector, 4096)
        };
        let mut s = HddState::new(m.clone());
        // w1 at C/2: acked after the 100 µs command; media 100 µs..e1.
        assert_eq!(s.submit(0, c2, 4096), 100_000);
        let e1 = 100_000 + per(&m, 0, c2);
        assert_eq!(s.media_idle_at(), e1);
        // w2 at 0: next command slot, acked at 200 µs; media e1..e2.
        assert_eq!(s.submit(0, 0, 4096), 200_000);
        let e2 = e1 + per(&m, c2 + 8, 0);
        assert_eq!(s.media_idle_at(), e2);
        // w3: cache full (8 KiB) until w1 is on the media at e1.
        assert_eq!(s.submit(0, c2, 4096), e1 + 100_000);
        let e3 = e2 + per(&m, 8, c2);
        assert_eq!(s.flush(0), e3);
        assert_eq!(s.flush(e3 + 5), e3 + 5);
    }

    #[test]
    fn a_read_is_not_absorbed_and_waits_behind_cached_writes() {
        let m = HddModel::default();
        let c2 = m.capacity_sectors / 2;
        let mut s = HddState::new(m.clone());
        // a cached write at C/2 is acked after its command ...
        assert_eq!(s.submit(0, c2, 4096), 100_000);
        let e1 = s.media_idle_at();
        // ... and a read at 0 submitted then waits for its media write,
        // then pays its own command, seek back, rotation and transfer
        let want = e1 + 100_000 + m.position_time(c2 + 8, 0) + m.xfer_time(0, 4096);
        assert_eq!(s.submit_read(200_000, 0, 4096), want);
        // on an idle disk a read costs what an uncached write does
        let mut a = HddState::new(m.clone());
        let mut b = HddState::new(uncached());
        assert_eq!(a.submit_read(0, c2, 4096), b.submit(0, c2, 4096));
    }

    #[test]
    fn write_cache_steady_state_is_media_bound() {
        let mut s = HddState::new(HddModel::default());
        let mut rng = Lcg(7);
        let max_start = s.model.capacity_sectors - 8;
        let n = 20_000u64; // 80 MiB: more than the 64 MiB cache
        let acks: Vec<Ns> = (0..n)
            .map(|_| s.submit(0, (rng.next() % max_start) & !7, 4096))
            .collect();
        // The first 16 384 writes fill the cache at one per command (100 µs).
        assert_eq!(acks[16_383], 16_384 * 100_000);
        // Then admission follows the media: ~80 IOPS.
        let tail = (acks[n as usize - 1] - acks[17_000]) as f64 / NSEC_PER_SEC as f64;
        let iops = (n - 1 - 17_000) as f64 / tail;
        assert!((70.0..150.0).contains(&iops), "{iops}");
        assert!(acks.windows(2).all(|w| w[0] <= w[1]));
    }
}
