//! The mq-deadline I/O scheduler's write side (block/mq-deadline.c), for
//! devices whose requests wait in the scheduler for a driver slot (`disk`:
//! its `queue_depth`; `hdd`: NCQ's 32). With `none` the same queue is the
//! hardware queue's dispatch list, FIFO and without merges.
//!
//! - **Bio merge** (`dd_bio_merge`, `elv_merge`): a bio that found no
//!   plugged request to merge with joins a waiting request that ends where
//!   it starts (back merge) or starts where it ends (front merge), within
//!   `max_sectors_kb` and `max_segments`.
//! - **Insert merge** (`elv_attempt_insert_merge`): a request coming from a
//!   plug or a submitter is appended to a waiting request that ends where
//!   it starts; the merged-away request frees its tag at once.
//! - **Dispatch** (`dd_dispatch_request`): the oldest write once it has
//!   waited `write_expire` (5 s), otherwise the next request in sector
//!   order from where the last dispatch ended, wrapping to the lowest
//!   sector (one sweep direction, as the sort list is walked). The
//!   `fifo_batch` run length is not modelled: the expiry is checked before
//!   every dispatch.
//!
//! Only requests that are still waiting can take merges: once the driver
//! has a request it is out of the scheduler's reach, as in the kernel.

use crate::block::blk_mq::{ReqId, Request};
use crate::kernel::{DevId, Kernel};
use crate::scenario::Elevator;
use crate::sim::{Ns, NSEC_PER_SEC};
use std::collections::VecDeque;

/// Requests that hold a tag but wait for the driver, and the driver's
/// slots (`blk_mq_run_hw_queue` moves them when a slot is free).
#[derive(Debug, Default)]
pub struct SchedQueue {
    pub waiting: VecDeque<ReqId>,
    pub inflight: u32,
    /// Driver slots; 0 = the driver takes every request at once.
    pub depth: u32,
    /// Where the last dispatched request ended (the sweep position).
    pub next_pos: u64,
}

/// `write_expire`: 5 s.
pub const WRITE_EXPIRE: Ns = 5 * NSEC_PER_SEC;

/// Where a bio piece or a request can join a waiting request: the index of
/// the request in `waiting` and whether it goes in front.
fn find_merge(
    reqs: &[Option<Request>],
    waiting: &VecDeque<ReqId>,
    (sector, sectors, segs): (u64, u64, u32),
    (max, max_segs): (u64, u32),
    front_ok: bool,
) -> Option<(usize, bool)> {
    waiting.iter().enumerate().find_map(|(i, &w)| {
        let r = reqs[w].as_ref().expect("rq");
        if r.nomerge || r.nr_sectors + sectors > max || r.segs + segs > max_segs {
            return None;
        }
        if r.sector + r.nr_sectors == sector {
            Some((i, false))
        } else if front_ok && sector + sectors == r.sector {
            Some((i, true))
        } else {
            None
        }
    })
}

impl Kernel {
    fn dd_active(&self, dev: DevId) -> bool {
        self.devs[dev].elevator == Elevator::MqDeadline && self.devs[dev].sched.depth > 0
    }

    /// `blk_mq_sched_insert_request`: a request with a tag goes to the
    /// scheduler (where it may merge into a waiting one), then the hardware
    /// queue runs.
    pub fn blk_mq_sched_insert(&mut self, dev: DevId, rq: ReqId) {
        if self.dd_insert_merge(dev, rq) {
            return;
        }
        self.devs[dev].sched.waiting.push_back(rq);
        self.blk_mq_run_hw_queue(dev);
    }

    /// `blk_mq_run_hw_queue`: hand waiting requests to the driver while it
    /// has free slots.
    pub fn blk_mq_run_hw_queue(&mut self, dev: DevId) {
        loop {
            let q = &self.devs[dev].sched;
            if q.inflight >= q.depth {
                break;
            }
            let Some(rq) = self.dd_dispatch(dev) else {
                break;
            };
            let q = &mut self.devs[dev].sched;
            q.inflight += 1;
            let r = self.reqs[rq].as_ref().expect("rq");
            q.next_pos = r.sector + r.nr_sectors;
            self.driver_queue_rq(dev, rq);
        }
    }

    /// The driver finished a request: its slot is free.
    pub fn blk_mq_slot_done(&mut self, dev: DevId) {
        if self.devs[dev].sched.depth > 0 {
            self.devs[dev].sched.inflight -= 1;
            self.blk_mq_run_hw_queue(dev);
        }
    }

    /// `dd_bio_merge`: merge a bio piece into a waiting request.
    pub fn dd_bio_merge(&mut self, dev: DevId, id: usize, sector: u64, n: u64, segs: u32) -> bool {
        let (max, max_segs) = (
            self.devs[dev].max_sectors.max(8),
            self.devs[dev].max_segments,
        );
        if !self.dd_active(dev) {
            return false;
        }
        let q = &self.devs[dev].sched.waiting;
        let Some((i, front)) = find_merge(&self.reqs, q, (sector, n, segs), (max, max_segs), true)
        else {
            return false;
        };
        let w = q[i];
        self.reqs[w]
            .as_mut()
            .expect("rq")
            .add_bio(id, sector, n, segs, front);
        self.devs[dev].stat.write_merges += 1;
        true
    }

    /// `elv_attempt_insert_merge`: append request `rq` to a waiting request
    /// that ends where it starts. On success `rq` is freed (with its tag)
    /// and true is returned.
    pub fn dd_insert_merge(&mut self, dev: DevId, rq: ReqId) -> bool {
        let (max, max_segs) = (
            self.devs[dev].max_sectors.max(8),
            self.devs[dev].max_segments,
        );
        if !self.dd_active(dev) {
            return false;
        }
        let (sector, n, segs) = {
            let r = self.reqs[rq].as_ref().expect("rq");
            (r.sector, r.nr_sectors, r.segs)
        };
        let q = &self.devs[dev].sched.waiting;
        let Some((i, _)) = find_merge(&self.reqs, q, (sector, n, segs), (max, max_segs), false)
        else {
            return false;
        };
        let w = q[i];
        let gone = self.reqs[rq].take().expect("rq");
        self.free_reqs.push(rq);
        let r = self.reqs[w].as_mut().expect("rq");
        r.nr_sectors += gone.nr_sectors;
        r.segs += gone.segs;
        r.pieces.extend_from_slice(&gone.pieces);
        let mut v = gone.pieces;
        v.clear();
        self.piece_pool.push(v);
        let st = &mut self.devs[dev].stat;
        st.write_merges += 1;
        st.in_flight -= 1;
        st.requests_issued -= 1; // it never reaches the driver
        self.blk_mq_put_tag(dev);
        true
    }

    /// `dd_dispatch_request`: take the next waiting request for the driver.
    /// With `none`, the oldest.
    pub fn dd_dispatch(&mut self, dev: DevId) -> Option<ReqId> {
        let now = self.now();
        let sorted = self.devs[dev].elevator == Elevator::MqDeadline;
        let q = &mut self.devs[dev].sched;
        let next_pos = q.next_pos;
        let &head = q.waiting.front()?;
        let reqs = &self.reqs;
        let r = |id: ReqId| reqs[id].as_ref().expect("rq");
        if !sorted || r(head).queued + WRITE_EXPIRE <= now {
            return q.waiting.pop_front();
        }
        // the lowest sector at or after next_pos, else the lowest (wrap)
        let key = |id: ReqId| {
            let s = r(id).sector;
            (s < next_pos, s)
        };
        let (i, _) = q
            .waiting
            .iter()
            .enumerate()
            .min_by_key(|&(i, &id)| (key(id), i))
            .expect("non-empty");
        q.waiting.remove(i)
    }
}
