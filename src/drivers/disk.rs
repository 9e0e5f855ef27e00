//! A simple disk: requests wait in the block layer for one of `queue_depth`
//! slots (block/mq_deadline.rs),
//! transfer one at a time through a pipe limited by `bandwidth` and `iops`
//! (each transfer takes max(bytes / bandwidth, 1 / iops)), and complete
//! `latency` after their transfer ends.
//!
//! The disk is one pipe with no write cache: a read is timed as a write of
//! its size is, and reads and writes share the bandwidth and the IOPS (a
//! device whose figures are its total capacity, the way a `dd` or fio
//! measurement of a plain disk sees it). With `read_bandwidth` reads have
//! a pipe of their own at that rate, and `bandwidth` is the writes': a
//! virtio disk whose host caps its writes only (qemu's
//! `throttling.bps-write`), where reads go at the host file's speed.

use crate::block::blk_mq::ReqId;
use crate::drivers::{DeviceKind, DriverType, Parsed, QueueInfo};
use crate::kernel::{DevId, Kernel};
use crate::scenario::raw::err;
use crate::scenario::{DevSection, Elevator, Reader, ScenarioError};
use crate::sim::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC};

/// A disk's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskConf {
    /// Transfer rate, bytes per second. Non-zero.
    pub bandwidth: u64,
    /// IOPS cap: a transfer takes at least 1 / iops. Non-zero.
    pub iops: u64,
    /// Completion latency after the transfer.
    pub latency: Ns,
    /// Driver slots.
    pub queue_depth: u32,
    /// Reads' own transfer rate (bytes per second), if they do not share
    /// `bandwidth`.
    pub read_bandwidth: Option<u64>,
}

/// `type = "disk"`.
pub(crate) const TYPE: DriverType = DriverType {
    name: "disk",
    keys: &[
        "bandwidth",
        "iops",
        "latency",
        "queue_depth",
        "read_bandwidth",
    ],
    parse,
};

/// Keys and defaults: `bandwidth` 150MiB/s (> 0), `iops` 200, `latency`
/// 4ms, `queue_depth` 32, `read_bandwidth` none (reads share `bandwidth`).
fn parse(r: &mut Reader, s: &DevSection) -> Result<Parsed, ScenarioError> {
    let bandwidth = match r.rate(&s.key("bandwidth"))? {
        Some((0, e)) => return err(&e.origin, "`bandwidth` must be > 0"),
        Some((v, _)) => v,
        None => 150 << 20,
    };
    let c = DiskConf {
        bandwidth,
        iops: r
            .uint(&s.key("iops"), 1, 100_000_000)?
            .map(|x| x.0)
            .unwrap_or(200),
        latency: r
            .duration(&s.key("latency"))?
            .map(|x| x.0)
            .unwrap_or(4 * NSEC_PER_MSEC),
        queue_depth: r
            .uint(&s.key("queue_depth"), 1, 65536)?
            .map(|x| x.0 as u32)
            .unwrap_or(32),
        read_bandwidth: match r.rate(&s.key("read_bandwidth"))? {
            Some((0, e)) => return err(&e.origin, "`read_bandwidth` must be > 0"),
            Some((v, _)) => Some(v),
            None => None,
        },
    };
    Ok((DeviceKind::Disk(c), None))
}

/// A SCSI disk (`sd_probe`): `queue_depth` slots, which `blk_queue_depth`
/// reports; one hardware queue, so mq-deadline; rotational, no write
/// cache.
pub fn queue_info(c: &DiskConf) -> QueueInfo {
    QueueInfo {
        major: crate::drivers::SCSI_DISK0_MAJOR,
        minor_step: crate::drivers::SD_MINORS,
        max_hw_sectors_kb: 32767,
        scheduler: Elevator::MqDeadline,
        nr_requests: c.queue_depth,
        nr_requests_sched: 2 * c.queue_depth.min(128),
        slots: c.queue_depth,
        queue_depth: Some(c.queue_depth),
        rotational: true,
        write_cache: false,
        bio_based: false,
    }
}

pub struct DiskState {
    pub bandwidth: u64,
    pub iops: u64,
    pub latency: Ns,
    /// Reads' own rate, if they have a pipe of their own.
    pub read_bandwidth: Option<u64>,
    pipe_free: Ns,
    read_pipe_free: Ns,
}

impl DiskState {
    pub fn new(c: &DiskConf) -> DiskState {
        DiskState {
            bandwidth: c.bandwidth,
            iops: c.iops,
            latency: c.latency,
            read_bandwidth: c.read_bandwidth,
            pipe_free: 0,
            read_pipe_free: 0,
        }
    }

    /// Transfer time of a request of `sectors` at `bandwidth` bytes/s.
    fn xfer_at(&self, sectors: u64, bandwidth: u64) -> Ns {
        let bw = (sectors * 512) as u128 * NSEC_PER_SEC as u128 / bandwidth as u128;
        let io = NSEC_PER_SEC / self.iops;
        (bw as Ns).max(io)
    }

    /// Transfer time of a request of `sectors` in the shared pipe.
    pub fn xfer_time(&self, sectors: u64) -> Ns {
        self.xfer_at(sectors, self.bandwidth)
    }

    /// When a request of `sectors` issued at `now` ends its transfer, after
    /// the requests before it in its pipe (the reads' own, if they have
    /// one).
    fn transfer(&mut self, now: Ns, sectors: u64, read: bool) -> Ns {
        match self.read_bandwidth {
            Some(rb) if read => {
                let end = self.read_pipe_free.max(now) + self.xfer_at(sectors, rb);
                self.read_pipe_free = end;
                end
            }
            _ => {
                let end = self.pipe_free.max(now) + self.xfer_time(sectors);
                self.pipe_free = end;
                end
            }
        }
    }
}

impl Kernel {
    fn disk(&mut self, dev: DevId) -> &mut DiskState {
        match &mut self.devs[dev].driver {
            crate::drivers::Driver::Disk(d) => d,
            _ => unreachable!("not a disk"),
        }
    }

    /// The driver takes a request (a slot is free): it transfers after
    /// the requests before it and completes `latency` after its transfer.
    pub fn disk_queue_rq(&mut self, dev: DevId, rq: ReqId) {
        let now = self.now();
        let r = self.reqs[rq].as_ref().expect("rq");
        let (sectors, read) = (r.nr_sectors, r.opf & crate::block::blk_wbt::REQ_READ != 0);
        let d = self.disk(dev);
        let end = d.transfer(now, sectors, read);
        let done = end + d.latency;
        self.q
            .schedule(done, crate::kernel::Ev::ReqDone { rq: rq as u32 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    fn conf(bandwidth: u64, iops: u64, read_bandwidth: Option<u64>) -> DiskConf {
        DiskConf {
            bandwidth,
            iops,
            latency: 0,
            queue_depth: 32,
            read_bandwidth,
        }
    }

    #[test]
    fn xfer_is_bandwidth_or_iops_bound() {
        let d = DiskState::new(&conf(100 << 20, 200, None));
        // 1 MiB at 100 MiB/s = 10 ms > 5 ms (1/200 s)
        assert_eq!(d.xfer_time(2048), 10_000_000);
        // 4 KiB: IOPS bound, 5 ms
        assert_eq!(d.xfer_time(8), 5_000_000);
    }

    /// Reads share the pipe unless they have their own: then a read
    /// queued behind writes goes at its own rate at once.
    #[test]
    fn reads_have_a_pipe_of_their_own_with_read_bandwidth() {
        let mib = 2048; // sectors
        let mut shared = DiskState::new(&conf(10 << 20, 100_000, None));
        assert_eq!(shared.transfer(0, mib, false), 100_000_000);
        assert_eq!(shared.transfer(0, mib, true), 200_000_000);
        let mut own = DiskState::new(&conf(10 << 20, 100_000, Some(100 << 20)));
        assert_eq!(own.transfer(0, mib, false), 100_000_000);
        assert_eq!(own.transfer(0, mib, true), 10_000_000);
        assert_eq!(own.transfer(0, mib, true), 20_000_000);
        assert_eq!(own.transfer(0, mib, false), 200_000_000);
    }
}
