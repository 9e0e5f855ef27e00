//! A simple disk: requests wait in the block layer for one of `queue_depth`
//! slots (block/mq_deadline.rs),
//! transfer one at a time through a pipe limited by `bandwidth` and `iops`
//! (each transfer takes max(bytes / bandwidth, 1 / iops)), and complete
//! `latency` after their transfer ends.

use crate::block::blk_mq::ReqId;
use crate::kernel::{DevId, Kernel};
use crate::sim::{Ns, NSEC_PER_SEC};

pub struct DiskState {
    pub bandwidth: u64,
    pub iops: u64,
    pub latency: Ns,
    pipe_free: Ns,
}

impl DiskState {
    pub fn new(bandwidth: u64, iops: u64, latency: Ns) -> DiskState {
        DiskState {
            bandwidth,
            iops,
            latency,
            pipe_free: 0,
        }
    }

    /// Transfer time of a request of `sectors`.
    pub fn xfer_time(&self, sectors: u64) -> Ns {
        let bw = (sectors * 512) as u128 * NSEC_PER_SEC as u128 / self.bandwidth as u128;
        let io = NSEC_PER_SEC / self.iops;
        (bw as Ns).max(io)
    }
}

impl Kernel {
    fn disk(&mut self, dev: DevId) -> &mut DiskState {
        match &mut self.devs[dev].backend {
            crate::block::Backend::Disk(d) => d,
            _ => unreachable!("not a disk"),
        }
    }

    /// The driver takes a request (a slot is free): it transfers after
    /// the requests before it and completes `latency` after its transfer.
    /// Returns the completion time.
    pub fn disk_queue_rq(&mut self, dev: DevId, rq: ReqId) -> Ns {
        let now = self.now();
        let sectors = self.reqs[rq].as_ref().expect("rq").nr_sectors;
        let d = self.disk(dev);
        let start = d.pipe_free.max(now);
        let end = start + d.xfer_time(sectors);
        d.pipe_free = end;
        end + d.latency
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn xfer_is_bandwidth_or_iops_bound() {
        let d = DiskState::new(100 << 20, 200, 0);
        // 1 MiB at 100 MiB/s = 10 ms > 5 ms (1/200 s)
        assert_eq!(d.xfer_time(2048), 10_000_000);
        // 4 KiB: IOPS bound, 5 ms
        assert_eq!(d.xfer_time(8), 5_000_000);
    }
}
