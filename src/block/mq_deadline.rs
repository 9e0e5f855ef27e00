//! The mq-deadline I/O scheduler's write side (block/mq-deadline.c), for
//! devices whose requests wait in the scheduler for a driver slot (the
//! `disk` model's `queue_depth`).
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
use crate::block::Backend;
use crate::kernel::{DevId, Kernel};
use crate::scenario::Elevator;
use crate::sim::{Ns, NSEC_PER_SEC};

/// `write_expire`: 5 s.
pub const WRITE_EXPIRE: Ns = 5 * NSEC_PER_SEC;

/// Where a bio piece or a request can join a waiting request: the index of
/// the request in `waiting` and whether it goes in front.
fn find_merge(
    reqs: &[Option<Request>],
    waiting: &std::collections::VecDeque<ReqId>,
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
    fn dd_waiting(&mut self, dev: DevId) -> Option<&mut std::collections::VecDeque<ReqId>> {
        if self.devs[dev].elevator != Elevator::MqDeadline {
            return None;
        }
        match &mut self.devs[dev].backend {
            Backend::Disk(d) => Some(&mut d.queue),
            _ => None,
        }
    }

    /// `dd_bio_merge`: merge a bio piece into a waiting request.
    pub fn dd_bio_merge(&mut self, dev: DevId, id: usize, sector: u64, n: u64, segs: u32) -> bool {
        let (max, max_segs) = (
            self.devs[dev].max_sectors.max(8),
            self.devs[dev].max_segments,
        );
        if self.dd_waiting(dev).is_none() {
            return false;
        }
        let Backend::Disk(d) = &self.devs[dev].backend else {
            unreachable!()
        };
        let Some((i, front)) = find_merge(
            &self.reqs,
            &d.queue,
            (sector, n, segs),
            (max, max_segs),
            true,
        ) else {
            return false;
        };
        let w = d.queue[i];
        let r = self.reqs[w].as_mut().expect("rq");
        if front {
            r.sector = sector;
        }
        r.nr_sectors += n;
        r.segs += segs;
        r.pieces.push(id);
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
        if self.dd_waiting(dev).is_none() {
            return false;
        }
        let (sector, n, segs) = {
            let r = self.reqs[rq].as_ref().expect("rq");
            (r.sector, r.nr_sectors, r.segs)
        };
        let Backend::Disk(d) = &self.devs[dev].backend else {
            unreachable!()
        };
        let Some((i, _)) = find_merge(
            &self.reqs,
            &d.queue,
            (sector, n, segs),
            (max, max_segs),
            false,
        ) else {
            return false;
        };
        let w = d.queue[i];
        let gone = self.reqs[rq].take().expect("rq");
        self.free_reqs.push(rq);
        let r = self.reqs[w].as_mut().expect("rq");
        r.nr_sectors += gone.nr_sectors;
        r.segs += gone.segs;
        r.pieces.extend(gone.pieces);
        let st = &mut self.devs[dev].stat;
        st.write_merges += 1;
        st.in_flight -= 1;
        st.requests_issued -= 1; // it never reaches the driver
        self.blk_mq_put_tag(dev);
        true
    }

    /// `dd_dispatch_request`: take the next waiting request for the driver.
    pub fn dd_dispatch(&mut self, dev: DevId, next_pos: u64) -> Option<ReqId> {
        let now = self.now();
        let sorted = self.devs[dev].elevator == Elevator::MqDeadline;
        let Backend::Disk(d) = &mut self.devs[dev].backend else {
            unreachable!()
        };
        let &head = d.queue.front()?;
        let reqs = &self.reqs;
        let r = |id: ReqId| reqs[id].as_ref().expect("rq");
        if !sorted || r(head).queued + WRITE_EXPIRE <= now {
            return d.queue.pop_front();
        }
        // the lowest sector at or after next_pos, else the lowest (wrap)
        let key = |id: ReqId| {
            let s = r(id).sector;
            (s < next_pos, s)
        };
        let (i, _) = d
            .queue
            .iter()
            .enumerate()
            .min_by_key(|&(i, &id)| (key(id), i))
            .expect("non-empty");
        d.queue.remove(i)
    }
}
