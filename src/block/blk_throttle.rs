//! blk-throttle's write bandwidth limit (block/blk-throttle.c), as the host
//! rig uses it: a rule in the root blkio cgroup caps the device's writes at
//! `write_bps`.
//!
//! The budget is a fluid one: the cap accrues `write_bps` per second, and up
//! to one `throtl_slice` (HZ/10) of budget can build up while the group is
//! idle. A bio that fits the budget while nothing is queued passes at once,
//! in its submitter's context and plug (`blk_throtl_bio` returning false).
//! Otherwise it queues (without limit: pages under writeback pile up here,
//! 80–160 MiB at 50 MiB/s on the rig) and is released when the budget for
//! its last byte has accrued, by the pending timer on the jiffy wheel; the
//! dispatch work submits everything released in one go under its own plug
//! (`blk_throtl_dispatch_work_fn`), where adjacent bios merge.

use crate::kernel::{BioId, Ev, Kernel, Pid};
use crate::sim::{Ns, NSEC_PER_SEC};
use std::collections::VecDeque;

pub struct Throtl {
    pub bps: u64,
    /// When the budget for everything released so far is used up, in
    /// ns × bps units (kept exact to avoid rounding drift).
    busy_until_x: u128,
    /// Queued bios and the time their budget is there.
    queue: VecDeque<(BioId, Ns)>,
    timer_at: Option<Ns>,
    /// The kworker that runs the dispatch work (holds its plug).
    pub dispatcher: Pid,
}

impl Throtl {
    pub fn new(bps: u64, dispatcher: Pid) -> Throtl {
        Throtl {
            bps,
            busy_until_x: 0,
            queue: VecDeque::new(),
            timer_at: None,
            dispatcher,
        }
    }
}

impl Kernel {
    /// `blk_throtl_bio`: pass the bio now if it fits the budget, else queue
    /// it. Returns true if the submitter must sleep for a tag.
    pub fn blk_throtl_bio(&mut self, dev: usize, id: BioId, submitter: Pid) -> bool {
        let bytes = self.bios[id].as_ref().expect("bio").nr_sectors * 512;
        let now = self.now();
        let slice = self.jif.start_of(self.jif.base + (self.hz() / 10).max(1));
        let crate::block::Backend::Throttled(t) = &mut self.devs[dev].backend else {
            unreachable!()
        };
        let now_x = now as u128 * t.bps as u128;
        let credit_x = slice as u128 * t.bps as u128;
        let start = t.busy_until_x.max(now_x.saturating_sub(credit_x));
        t.busy_until_x = start + bytes as u128 * NSEC_PER_SEC as u128;
        if t.queue.is_empty() && t.busy_until_x <= now_x {
            return self.blk_mq_submit_bio(Some(submitter), id);
        }
        let due = t.busy_until_x.div_ceil(t.bps as u128) as Ns;
        t.queue.push_back((id, due));
        self.throtl_arm(dev);
        false
    }

    /// Arm the pending timer for the head of the queue (jiffy granularity).
    fn throtl_arm(&mut self, dev: usize) {
        let crate::block::Backend::Throttled(t) = &self.devs[dev].backend else {
            return;
        };
        let Some(&(_, due)) = t.queue.front() else {
            return;
        };
        if t.timer_at.is_some() {
            return;
        }
        // the wait is computed in whole jiffies, then the timer wheel adds its
        // level-0 round-up
        let j = self.jif.at(due) + u64::from(self.jif.start_of(self.jif.at(due)) < due);
        let at = self.timer_fire_time(j).max(due);
        if let crate::block::Backend::Throttled(t) = &mut self.devs[dev].backend {
            t.timer_at = Some(at);
        }
        self.q.schedule(at, Ev::ThrotlTimer { dev: dev as u32 });
    }

    /// The pending timer: release every bio whose budget is there and
    /// submit them under the dispatch work's plug.
    pub fn blk_throtl_timer(&mut self, dev: usize) {
        let now = self.now();
        let (ready, disp) = {
            let crate::block::Backend::Throttled(t) = &mut self.devs[dev].backend else {
                return;
            };
            t.timer_at = None;
            let mut ready = Vec::new();
            while let Some(&(id, due)) = t.queue.front() {
                if due > now {
                    break;
                }
                t.queue.pop_front();
                ready.push(id);
            }
            (ready, t.dispatcher)
        };
        if !ready.is_empty() {
            let plug = self.blk_start_plug(disp);
            for id in ready {
                self.blk_mq_submit_bio(Some(disp), id);
            }
            self.blk_finish_plug(disp, plug);
        }
        self.throtl_arm(dev);
    }
}
