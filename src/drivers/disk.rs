//! A simple disk: requests wait in a queue for one of `queue_depth` slots,
//! transfer one at a time through a pipe limited by `bandwidth` and `iops`
//! (each transfer takes max(bytes / bandwidth, 1 / iops)), and complete
//! `latency` after their transfer ends.

use crate::block::blk_mq::ReqId;
use crate::kernel::{DevId, Ev, Kernel};
use crate::sim::{Ns, NSEC_PER_SEC};
use std::collections::VecDeque;

pub struct DiskState {
    pub bandwidth: u64,
    pub iops: u64,
    pub latency: Ns,
    pub queue_depth: u32,
    /// Requests waiting for a slot (the scheduler's queue; see
    /// block/mq_deadline.rs for the order and the merges they take).
    pub(crate) queue: VecDeque<ReqId>,
    inflight: u32,
    /// Where the last dispatched request ended (mq-deadline's sweep).
    next_pos: u64,
    pipe_free: Ns,
    /// (completion time, request, sectors, service time), in completion order.
    done: VecDeque<(Ns, ReqId, u64, Ns)>,
}

impl DiskState {
    pub fn new(bandwidth: u64, iops: u64, latency: Ns, queue_depth: u32) -> DiskState {
        DiskState {
            bandwidth,
            iops,
            latency,
            queue_depth,
            queue: VecDeque::new(),
            inflight: 0,
            next_pos: 0,
            pipe_free: 0,
            done: VecDeque::new(),
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

    /// Queue a request (`blk_mq_sched_insert_request`): it may merge into
    /// a waiting one, else it waits for a slot.
    pub fn disk_queue_rq(&mut self, dev: DevId, rq: ReqId) {
        if self.dd_insert_merge(dev, rq) {
            return;
        }
        self.disk(dev).queue.push_back(rq);
        self.disk_dispatch(dev);
    }

    fn disk_dispatch(&mut self, dev: DevId) {
        let now = self.now();
        let mut schedule = Vec::new();
        loop {
            let d = self.disk(dev);
            if d.inflight >= d.queue_depth {
                break;
            }
            let next_pos = d.next_pos;
            let Some(rq) = self.dd_dispatch(dev, next_pos) else {
                break;
            };
            let (sectors, queued, end_pos) = {
                let r = self.reqs[rq].as_ref().expect("rq");
                (r.nr_sectors, r.queued, r.sector + r.nr_sectors)
            };
            let d = self.disk(dev);
            d.next_pos = end_pos;
            let start = d.pipe_free.max(now);
            let end = start + d.xfer_time(sectors);
            d.pipe_free = end;
            d.inflight += 1;
            let at = end + d.latency;
            d.done.push_back((at, rq, sectors, at - queued));
            schedule.push(at);
        }
        for at in schedule {
            self.q.schedule(at, Ev::DiskXfer { dev: dev as u32 });
        }
    }

    pub fn disk_xfer_done(&mut self, dev: DevId) {
        let d = self.disk(dev);
        let Some((_, rq, _sectors, service)) = d.done.pop_front() else {
            return;
        };
        d.inflight -= 1;
        self.request_done(rq, service);
        self.disk_dispatch(dev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn xfer_is_bandwidth_or_iops_bound() {
        let d = DiskState::new(100 << 20, 200, 0, 32);
        // 1 MiB at 100 MiB/s = 10 ms > 5 ms (1/200 s)
        assert_eq!(d.xfer_time(2048), 10_000_000);
        // 4 KiB: IOPS bound, 5 ms
        assert_eq!(d.xfer_time(8), 5_000_000);
    }
}
