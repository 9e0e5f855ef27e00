//! blk-throttle's write bandwidth limit (block/blk-throttle.c), as the host
//! rig uses it: a rule in the root blkio cgroup caps the device's writes at
//! `write_bps`. Bios queue without limit in front of the device and leave
//! at the cap's pace (a fluid FIFO: each bio is released when the budget
//! for its last byte has accrued). The queue is unbounded, so pages under
//! writeback pile up in it, as the rig observed (80–160 MiB at 50 MiB/s).

use crate::kernel::{BioId, Ev, Kernel};
use crate::sim::{Ns, NSEC_PER_SEC};

pub struct Throtl {
    pub bps: u64,
    /// When the budget for everything released so far is used up, in
    /// ns × bps units (kept exact to avoid rounding drift).
    busy_until_x: u128,
    pub queued: u64,
}

impl Throtl {
    pub fn new(bps: u64) -> Throtl {
        Throtl {
            bps,
            busy_until_x: 0,
            queued: 0,
        }
    }
}

impl Kernel {
    /// `blk_throtl_bio`: release the bio when the cap allows.
    pub fn blk_throtl_bio(&mut self, dev: usize, id: BioId) {
        let bytes = self.bios[id].as_ref().expect("bio").nr_sectors * 512;
        let now = self.now();
        let crate::block::Backend::Throttled(t) = &mut self.devs[dev].backend else {
            unreachable!()
        };
        let now_x = now as u128 * t.bps as u128;
        let start = t.busy_until_x.max(now_x);
        t.busy_until_x = start + bytes as u128 * NSEC_PER_SEC as u128;
        t.queued += 1;
        let at = t.busy_until_x.div_ceil(t.bps as u128) as Ns;
        self.q.schedule(at, Ev::ThrotlDispatch { bio: id as u32 });
    }

    /// The throttle releases a bio to the request queue.
    pub fn blk_throtl_dispatch(&mut self, id: BioId) {
        let dev = self.bios[id].as_ref().expect("bio").dev;
        if let crate::block::Backend::Throttled(t) = &mut self.devs[dev].backend {
            t.queued -= 1;
        }
        // the throttle's dispatch work submits on its own, unplugged here
        self.blk_mq_submit_bio(None, id);
    }
}
