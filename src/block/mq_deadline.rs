//! The mq-deadline I/O scheduler (block/mq-deadline.c), for
//! devices whose requests wait in the scheduler for a driver slot (`disk`:
//! its `queue_depth`; `hdd`: NCQ's 32). With `none` the same queue is the
//! hardware queue's dispatch list, FIFO and without merges.
//!
//! - **Bio merge** (`dd_bio_merge`, `elv_merge`): a bio that found no
//!   plugged request to merge with joins a waiting request of its own
//!   direction (`elv_bio_merge_ok`: a read never joins a write) that ends
//!   where it starts (back merge) or starts where it ends (front merge),
//!   within `max_sectors_kb` and `max_segments`.
//! - **Insert merge** (`elv_attempt_insert_merge`): a request coming from a
//!   plug or a submitter is appended to a waiting request of its direction
//!   that ends where it starts; the merged-away request frees its tag at
//!   once.
//! - **Dispatch** (`__dd_dispatch_request`): reads and writes have their
//!   own FIFO (the waiting requests of that direction, oldest first) and
//!   sort order. The direction: reads while any wait, unless writes have
//!   been passed over `writes_starved` (2) times in a row with writes
//!   waiting (`dd->starved`); else writes. In the chosen direction: its
//!   oldest request once it has waited its expiry (`read_expire` 500 ms,
//!   `write_expire` 5 s), otherwise the next request in sector order from
//!   where the direction's last dispatch ended, wrapping to the lowest
//!   sector (one sweep direction, as the sort list is walked).
//! - The tunables are `queue.iosched.read_expire`, `.write_expire` (ms, as
//!   sysfs shows them) and `.writes_starved`.
//! - The `fifo_batch` run length (16) is not modelled: every dispatch
//!   starts a new batch, so the expiry and the direction are chosen before
//!   each request, and writes starve for at most 2 reads, not 2 batches of
//!   up to 16 (the ratio of the directions while both wait is the same
//!   2:1). Modelling it would change the write-only sweep (the kernel's
//!   batch ends at the end of the sort order and restarts at the FIFO's
//!   head, not at the lowest sector) and every existing result with it.
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
    /// Both directions' waiting requests, oldest first (each direction's
    /// FIFO is its requests in this order).
    pub waiting: VecDeque<ReqId>,
    /// How many of `waiting` are reads.
    pub reads_waiting: u32,
    pub inflight: u32,
    /// Driver slots; 0 = the driver takes every request at once.
    pub depth: u32,
    /// Where the last dispatched write ended (the write sweep position).
    pub next_pos: u64,
    /// Where the last dispatched read ended (the read sweep position).
    pub next_pos_read: u64,
    /// `dd->starved`: times reads were chosen while writes waited.
    pub starved: u32,
    /// The scheduler's tunables.
    pub tun: Tunables,
    /// BFQ's or CFQ's state when it is the queue's scheduler (the waiting
    /// requests stay in `waiting`, which is where merges find them).
    pub bfq: Option<Box<crate::block::bfq::Bfq>>,
    pub cfq: Option<Box<crate::block::cfq::Cfq>>,
    /// Tags held per cgroup, where the scheduler limits them by cgroup
    /// (CFQ's per-cgroup request lists, BFQ's `bfqq_request_over_limit`).
    pub rl: Vec<u32>,
}

/// `read_expire`: 500 ms.
pub const READ_EXPIRE: Ns = NSEC_PER_SEC / 2;
/// `write_expire`: 5 s.
pub const WRITE_EXPIRE: Ns = 5 * NSEC_PER_SEC;
/// `writes_starved`: 2.
pub const WRITES_STARVED: u32 = 2;

/// mq-deadline's sysfs tunables (`queue/iosched/`), the kernel's defaults
/// unless the scenario sets `queue.iosched.*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunables {
    /// `read_expire` and `write_expire` (sysfs in ms).
    pub read_expire: Ns,
    pub write_expire: Ns,
    pub writes_starved: u32,
}

impl Default for Tunables {
    fn default() -> Tunables {
        Tunables {
            read_expire: READ_EXPIRE,
            write_expire: WRITE_EXPIRE,
            writes_starved: WRITES_STARVED,
        }
    }
}

/// Where a bio piece or a request (a read if `read`) can join a waiting
/// request: the index of the request in `waiting` and whether it goes in
/// front.
fn find_merge(
    reqs: &[Option<Request>],
    waiting: &VecDeque<ReqId>,
    (sector, sectors, segs, read): (u64, u64, u32, bool),
    (max, max_segs): (u64, u32),
    front_ok: bool,
) -> Option<(usize, bool)> {
    waiting.iter().enumerate().find_map(|(i, &w)| {
        let r = reqs[w].as_ref().expect("rq");
        if r.nomerge
            || r.nr_sectors + sectors > max
            || r.segs + segs > max_segs
            || r.is_read() != read
        {
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
        self.devs[dev].elevator != Elevator::None && self.devs[dev].sched.depth > 0
    }

    /// `blk_mq_sched_insert_request`: a request with a tag goes to the
    /// scheduler (where it may merge into a waiting one), then the hardware
    /// queue runs.
    pub fn blk_mq_sched_insert(&mut self, dev: DevId, rq: ReqId) {
        if self.dd_insert_merge(dev, rq) {
            return;
        }
        let read = self.reqs[rq].as_ref().expect("rq").is_read();
        let q = &mut self.devs[dev].sched;
        q.waiting.push_back(rq);
        q.reads_waiting += u32::from(read);
        match self.devs[dev].elevator {
            Elevator::Bfq => self.bfq_insert(dev, rq),
            Elevator::Cfq => self.cfq_insert(dev, rq),
            _ => {}
        }
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
            let now = self.now();
            let q = &mut self.devs[dev].sched;
            q.inflight += 1;
            let r = self.reqs[rq].as_mut().expect("rq");
            r.issued = now;
            if r.is_read() {
                q.reads_waiting -= 1;
                q.next_pos_read = r.sector + r.nr_sectors;
            } else {
                q.next_pos = r.sector + r.nr_sectors;
            }
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

    /// `dd_bio_merge`: merge a bio piece (a read's if `read`) into a
    /// waiting request.
    pub fn dd_bio_merge(
        &mut self,
        dev: DevId,
        id: usize,
        sector: u64,
        n: u64,
        segs: u32,
        read: bool,
    ) -> bool {
        let (max, max_segs) = (
            self.devs[dev].max_sectors.max(8),
            self.devs[dev].max_segments,
        );
        if !self.dd_active(dev) {
            return false;
        }
        let q = &self.devs[dev].sched.waiting;
        let piece = (sector, n, segs, read);
        let Some((i, front)) = find_merge(&self.reqs, q, piece, (max, max_segs), true) else {
            return false;
        };
        let w = q[i];
        self.reqs[w]
            .as_mut()
            .expect("rq")
            .add_bio(id, sector, n, segs, front);
        self.devs[dev].stat.merged(read);
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
        let piece = {
            let r = self.reqs[rq].as_ref().expect("rq");
            (r.sector, r.nr_sectors, r.segs, r.is_read())
        };
        let read = piece.3;
        let q = &self.devs[dev].sched.waiting;
        let Some((i, _)) = find_merge(&self.reqs, q, piece, (max, max_segs), false) else {
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
        let now = self.now();
        let st = &mut self.devs[dev].stat;
        st.merged(read);
        st.io_gone(now);
        st.requests_issued -= 1; // it never reaches the driver
        self.blk_mq_put_tag(dev, gone.rl_group);
        true
    }

    /// `dd_dispatch_request`: take the next waiting request for the driver.
    /// With `none`, the oldest.
    pub fn dd_dispatch(&mut self, dev: DevId) -> Option<ReqId> {
        match self.devs[dev].elevator {
            Elevator::Bfq => return self.bfq_dispatch(dev),
            Elevator::Cfq => return self.cfq_dispatch(dev),
            _ => {}
        }
        let now = self.now();
        let sorted = self.devs[dev].elevator == Elevator::MqDeadline;
        let q = &mut self.devs[dev].sched;
        let &head = q.waiting.front()?;
        if q.reads_waiting > 0 && sorted {
            return self.dd_dispatch_rw(dev, now);
        }
        let next_pos = q.next_pos;
        let reqs = &self.reqs;
        let r = |id: ReqId| reqs[id].as_ref().expect("rq");
        q.starved = 0;
        if !sorted || r(head).queued + q.tun.write_expire <= now {
            return q.waiting.pop_front();
        }
        let i = sweep_next(&q.waiting, reqs, next_pos, |_| true);
        q.waiting.remove(i)
    }

    /// `__dd_dispatch_request` with reads waiting: choose the direction
    /// (reads, unless writes were starved `writes_starved` times), then in
    /// it the expired oldest request or the next one in its sweep.
    fn dd_dispatch_rw(&mut self, dev: DevId, now: Ns) -> Option<ReqId> {
        let q = &mut self.devs[dev].sched;
        let writes = q.waiting.len() as u32 > q.reads_waiting;
        let read = if writes {
            let starved = q.starved;
            q.starved += 1;
            if starved >= q.tun.writes_starved {
                q.starved = 0;
                false
            } else {
                true
            }
        } else {
            true
        };
        let (expire, next_pos) = if read {
            (q.tun.read_expire, q.next_pos_read)
        } else {
            (q.tun.write_expire, q.next_pos)
        };
        let reqs = &self.reqs;
        let r = |id: ReqId| reqs[id].as_ref().expect("rq");
        let mine = |id: ReqId| r(id).is_read() == read;
        // deadline_check_fifo: the direction's oldest
        let (oldest, &o) = q
            .waiting
            .iter()
            .enumerate()
            .find(|&(_, &id)| mine(id))
            .expect("a request of the chosen direction");
        if r(o).queued + expire <= now {
            return q.waiting.remove(oldest);
        }
        let i = sweep_next(&q.waiting, reqs, next_pos, mine);
        q.waiting.remove(i)
    }
}

/// The sweep's next request among the waiting ones that `want`: the lowest
/// sector at or after `next_pos`, else the lowest (the sweep wraps), the
/// oldest first among equals. Its index in `waiting`; there must be one.
fn sweep_next(
    waiting: &VecDeque<ReqId>,
    reqs: &[Option<Request>],
    next_pos: u64,
    want: impl Fn(ReqId) -> bool,
) -> usize {
    let key = |id: ReqId| {
        let s = reqs[id].as_ref().expect("rq").sector;
        (s < next_pos, s)
    };
    waiting
        .iter()
        .enumerate()
        .filter(|&(_, &id)| want(id))
        .min_by_key(|&(i, &id)| (key(id), i))
        .expect("a waiting request the sweep wants")
        .0
}
