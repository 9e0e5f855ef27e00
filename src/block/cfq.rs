//! CFQ with blkio groups, as of 2.6.38–3.x (block/cfq-iosched.c, removed in
//! 5.0), `queue.scheduler = "cfq"`: the historical "before" of seed 003.
//!
//! - **Queues**: a sync queue per task, and async queues per ioprio class
//!   and level (every task is BE 4 here). Where the async queues live is
//!   the policy `queue.cfq.async_in_root`: `true` (the 2011 kernel,
//!   `cfq_link_cfqq_cfqg` puts every async queue in the root group, one
//!   `cfqd->async_cfqq[class][prio]` per device, so buffered writeback is
//!   charged to the root whoever dirtied it), or `false` (TerAvest's
//!   patches, and upstream from 4.2: `cfqg->async_cfqq`, the group of the
//!   page's dirtier, here the inode owner's blkcg as cgroup writeback has
//!   it).
//! - **Groups** (`struct cfq_group`): weight `blkio.weight` (10–1000,
//!   default 500), on the device's service tree keyed by `vdisktime`; the
//!   group with the smallest goes next (`cfq_get_next_cfqg`). A group
//!   that becomes busy again is put at the tail: the last group's
//!   vdisktime plus `CFQ_IDLE_DELAY` (`cfq_group_service_tree_add`), so a
//!   group that runs empty loses what it was owed.
//! - **Slices**: the group's busy queues take turns, each for its slice
//!   (`cfq_prio_to_slice`: `slice_sync` 100 ms, `slice_async` 40 ms at
//!   level 4), which starts when its first request completes
//!   (`cfq_completed_request`'s `slice_new`). A queue expires when its
//!   slice is used or, async, when it runs empty; a sync queue that runs
//!   empty is idled on for `slice_idle` (8 ms, `cfq_arm_slice_timer`).
//!   Async requests wait while sync ones are in flight, and a queue keeps
//!   at most `quantum` (8) in flight while others are busy
//!   (`cfq_may_dispatch`).
//! - **Charging** (`cfq_group_served`): the slice time used
//!   (`cfq_cfqq_slice_usage`: from the slice start, at most the allotted
//!   slice; `max(now − dispatch start, 1 jiffy)` if it ended before its
//!   first completion); an async queue of a group with no sync queue is
//!   charged its whole allotted slice. `vdisktime += charge × 500 / weight`
//!   (`cfq_scale_slice`), and `blkio.time` gets the time used,
//!   `blkio.sectors` the sectors dispatched.
//!
//! Not modelled: the workload types inside a group (sync-idle, sync-noidle,
//! async trees and `cfq_choose_wl`: a group's queues simply take turns),
//! low_latency's slice scaling, group_idle, queue preemption and
//! cooperation, the async dispatch ramp after sync IO, iops mode, and the
//! legacy request lists (the blk-mq tags stand for them).

use crate::block::bfq::QKey;
use crate::block::blk_mq::ReqId;
use crate::kernel::{DevId, Ev, Kernel};
use crate::sim::{Ns, NSEC_PER_MSEC};
use std::collections::BTreeMap;

/// `BLKIO_WEIGHT_DEFAULT`.
pub const WEIGHT_DEFAULT: u64 = 500;

/// CFQ's sysfs tunables (`queue/iosched/`), and the async-queue policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CfqTunables {
    /// `slice_sync` (HZ/10) and `slice_async` (HZ/25), in ms in sysfs.
    pub slice_sync: Ns,
    pub slice_async: Ns,
    /// `slice_idle` (HZ/125).
    pub slice_idle: Ns,
    /// `quantum`: 8.
    pub quantum: u32,
    /// `back_seek_max` (KiB) and `back_seek_penalty`.
    pub back_seek_max: u64,
    pub back_seek_penalty: u64,
    /// `fifo_expire_sync` (HZ/8) and `fifo_expire_async` (HZ/4).
    pub fifo_expire_sync: Ns,
    pub fifo_expire_async: Ns,
    /// The policy: async queues in the root group (before 4.2 and
    /// before TerAvest's patches) or in the dirtier's group.
    pub async_in_root: bool,
}

impl Default for CfqTunables {
    fn default() -> CfqTunables {
        CfqTunables {
            slice_sync: 100 * NSEC_PER_MSEC,
            slice_async: 40 * NSEC_PER_MSEC,
            slice_idle: 8 * NSEC_PER_MSEC,
            quantum: 8,
            back_seek_max: 16 * 1024,
            back_seek_penalty: 2,
            fifo_expire_sync: 125 * NSEC_PER_MSEC,
            fifo_expire_async: 250 * NSEC_PER_MSEC,
            async_in_root: true,
        }
    }
}

/// `struct cfq_queue`.
#[derive(Clone, Debug)]
pub struct Cq {
    pub key: QKey,
    pub nr: u32,
    pub dispatched: u32,
    pub next_pos: u64,
    /// On its group's round-robin list.
    pub busy: bool,
}

/// `struct cfq_group`.
#[derive(Clone, Debug, Default)]
pub struct Cg {
    pub weight: u64,
    /// Virtual disk time, in ns scaled by 500/weight.
    pub vdisktime: u64,
    pub on_st: bool,
    /// Busy queues, in turn order.
    pub rr: Vec<usize>,
    /// `blkio.time` (ns) and `blkio.sectors`.
    pub time: Ns,
    pub sectors: u64,
    /// Times the group joined the tree afresh.
    pub rejoins: u64,
}

/// `struct cfq_data` of one device.
#[derive(Clone, Debug, Default)]
pub struct Cfq {
    pub tun: CfqTunables,
    pub groups: Vec<Cg>,
    pub queues: Vec<Cq>,
    pub qmap: BTreeMap<QKey, usize>,
    /// `st->min_vdisktime`.
    pub min_vdisktime: u64,
    pub active: Option<usize>,
    /// The active queue's slice: allotted length, start (at its first
    /// completion; None before), its first dispatch.
    pub allocated: Ns,
    pub slice_start: Option<Ns>,
    pub dispatch_start: Ns,
    pub idling: bool,
    pub idle_gen: u32,
    /// `rq_in_flight[sync]`.
    pub in_flight: [u32; 2],
    /// Jiffy length (CFQ_IDLE_DELAY and the 1-jiffy minimum charge).
    pub jiffy: Ns,
}

/// `cfq_scale_slice`: `charge × BLKIO_WEIGHT_DEFAULT / weight`.
pub fn cfq_scale_slice(charge: Ns, weight: u64) -> u64 {
    charge * WEIGHT_DEFAULT / weight.max(1)
}

impl Cfq {
    pub fn new(tun: CfqTunables, group_weights: &[u64], jiffy: Ns) -> Cfq {
        Cfq {
            tun,
            groups: group_weights
                .iter()
                .map(|&w| Cg {
                    weight: w.max(1),
                    ..Default::default()
                })
                .collect(),
            jiffy,
            ..Default::default()
        }
    }

    pub fn queue(&mut self, key: QKey) -> usize {
        if let Some(&q) = self.qmap.get(&key) {
            return q;
        }
        let id = self.queues.len();
        self.queues.push(Cq {
            key,
            nr: 0,
            dispatched: 0,
            next_pos: 0,
            busy: false,
        });
        self.qmap.insert(key, id);
        id
    }

    /// `CFQ_IDLE_DELAY` (HZ/5 in vdisktime units, which are jiffies <<
    /// `CFQ_SERVICE_SHIFT`): 200 units, 200/4096 of a jiffy in ns.
    fn idle_delay(&self) -> u64 {
        self.jiffy * 200 / 4096
    }

    /// `cfq_add_cfqq_rr` and `cfq_group_service_tree_add`: a queue
    /// becomes busy; its group joins the tree at the tail if it was off.
    pub fn add_rr(&mut self, q: usize) {
        if self.queues[q].busy {
            return;
        }
        self.queues[q].busy = true;
        let g = self.queues[q].key.cg as usize;
        self.groups[g].rr.push(q);
        if !self.groups[g].on_st {
            let last = self
                .groups
                .iter()
                .filter(|c| c.on_st)
                .map(|c| c.vdisktime)
                .max();
            self.groups[g].vdisktime = match last {
                Some(v) => v + self.idle_delay(),
                None => self.min_vdisktime,
            };
            self.groups[g].on_st = true;
            self.groups[g].rejoins += 1;
        }
    }

    /// `cfq_get_next_cfqg`: the group with the smallest vdisktime (the
    /// lowest index among equals); `update_min_vdisktime`.
    pub fn next_group(&mut self) -> Option<usize> {
        let g = (0..self.groups.len())
            .filter(|&g| self.groups[g].on_st)
            .min_by_key(|&g| (self.groups[g].vdisktime, g))?;
        self.min_vdisktime = self.min_vdisktime.max(self.groups[g].vdisktime);
        Some(g)
    }

    /// `cfq_prio_to_slice` at level 4.
    pub fn slice_of(&self, q: usize) -> Ns {
        if self.queues[q].key.is_sync() {
            self.tun.slice_sync
        } else {
            self.tun.slice_async
        }
    }

    /// `cfq_cfqq_slice_usage`.
    pub fn slice_used(&self, now: Ns) -> Ns {
        match self.slice_start {
            Some(s) if s != now => (now - s).min(self.allocated),
            _ => (now - self.dispatch_start).max(self.jiffy),
        }
    }

    /// `cfq_slice_expired` → `__cfq_slice_expired` and `cfq_group_served`:
    /// charge the active queue's group, take the queue off its turn (to the
    /// back if still busy) and the group off the tree if it has no busy
    /// queue left.
    pub fn slice_expired(&mut self, now: Ns) {
        let Some(q) = self.active.take() else {
            return;
        };
        self.idling = false;
        self.idle_gen = self.idle_gen.wrapping_add(1);
        let g = self.queues[q].key.cg as usize;
        let used = self.slice_used(now);
        let nr_sync = self.groups[g]
            .rr
            .iter()
            .filter(|&&x| self.queues[x].key.is_sync())
            .count();
        let charge = if !self.queues[q].key.is_sync() && nr_sync == 0 {
            self.allocated
        } else {
            used
        };
        let cg = &mut self.groups[g];
        cg.vdisktime += cfq_scale_slice(charge, cg.weight);
        cg.time += used;
        cg.rr.retain(|&x| x != q);
        if self.queues[q].nr > 0 {
            cg.rr.push(q);
        } else {
            self.queues[q].busy = false;
        }
        if cg.rr.is_empty() {
            cg.on_st = false;
        }
        self.slice_start = None;
    }
}

impl Kernel {
    /// `cfq_insert_request` / `cfq_add_rq_rb`.
    pub fn cfq_insert(&mut self, dev: DevId, rq: ReqId) {
        let root = self.devs[dev]
            .sched
            .cfq
            .as_ref()
            .expect("cfq")
            .tun
            .async_in_root;
        let key = self.rq_qkey(rq, root);
        let c = self.devs[dev].sched.cfq.as_mut().expect("cfq");
        let q = c.queue(key);
        c.queues[q].nr += 1;
        if c.active == Some(q) && c.idling {
            c.idling = false;
            c.idle_gen = c.idle_gen.wrapping_add(1);
        }
        c.add_rr(q);
    }

    /// `cfq_dispatch_requests` with `cfq_select_queue` and
    /// `cfq_may_dispatch`.
    pub fn cfq_dispatch(&mut self, dev: DevId) -> Option<ReqId> {
        let now = self.now();
        loop {
            let c = self.devs[dev].sched.cfq.as_mut().expect("cfq");
            let Some(q) = c.active else {
                // cfq_set_active_queue: the next group's first queue
                let g = c.next_group()?;
                let q = c.groups[g].rr[0];
                c.active = Some(q);
                c.allocated = c.slice_of(q);
                c.slice_start = None;
                c.dispatch_start = now;
                continue;
            };
            if c.idling {
                return None;
            }
            let used_up = c.slice_start.is_some_and(|s| now >= s + c.allocated);
            let cq = &c.queues[q];
            if used_up {
                c.slice_expired(now);
                continue;
            }
            if cq.nr == 0 {
                if cq.key.is_sync() && c.tun.slice_idle > 0 {
                    if cq.dispatched > 0 {
                        return None; // wait for its completions
                    }
                    c.idling = true;
                    c.idle_gen = c.idle_gen.wrapping_add(1);
                    let (gen, at) = (c.idle_gen, now + c.tun.slice_idle);
                    self.q.schedule(
                        at,
                        Ev::ElvIdle {
                            dev: dev as u32,
                            gen,
                        },
                    );
                    return None;
                }
                c.slice_expired(now);
                continue;
            }
            // cfq_may_dispatch
            let sync = cq.key.is_sync();
            if !sync && c.in_flight[1] > 0 {
                return None;
            }
            let busy = c.queues.iter().filter(|x| x.busy).count();
            if busy > 1 && cq.dispatched >= c.tun.quantum {
                return None;
            }
            let t = c.tun;
            let (key, pos) = (cq.key, cq.next_pos);
            let i = self.elv_choose_rq(
                dev,
                key,
                pos,
                t.async_in_root,
                t.back_seek_max * 2,
                t.back_seek_penalty,
                [t.fifo_expire_async, t.fifo_expire_sync],
            );
            let rq = self.devs[dev].sched.waiting.remove(i).expect("rq");
            let r = self.reqs[rq].as_ref().expect("rq");
            let (end, n) = (r.sector + r.nr_sectors, r.nr_sectors);
            let c = self.devs[dev].sched.cfq.as_mut().expect("cfq");
            let cq = &mut c.queues[q];
            cq.nr -= 1;
            cq.dispatched += 1;
            cq.next_pos = end;
            c.in_flight[usize::from(sync)] += 1;
            c.groups[key.cg as usize].sectors += n;
            return Some(rq);
        }
    }

    /// `cfq_completed_request`: the first completion of a slice starts it.
    pub fn cfq_completed(&mut self, dev: DevId, key: QKey) {
        let now = self.now();
        let c = self.devs[dev].sched.cfq.as_mut().expect("cfq");
        let Some(&q) = c.qmap.get(&key) else {
            return;
        };
        c.queues[q].dispatched = c.queues[q].dispatched.saturating_sub(1);
        let s = usize::from(key.is_sync());
        c.in_flight[s] = c.in_flight[s].saturating_sub(1);
        if c.active == Some(q) && c.slice_start.is_none() {
            c.slice_start = Some(now);
        }
    }

    /// `cfq_idle_slice_timer`.
    pub fn cfq_idle_timer(&mut self, dev: DevId, gen: u32) {
        let now = self.now();
        let c = self.devs[dev].sched.cfq.as_mut().expect("cfq");
        if !c.idling || c.idle_gen != gen {
            return;
        }
        c.slice_expired(now);
        self.blk_mq_run_hw_queue(dev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::bfq::{CLASS_BE, DEFAULT_PRIO};

    fn akey(cg: u32) -> QKey {
        QKey {
            cg,
            sync_pid: u32::MAX,
            class: CLASS_BE,
            prio: DEFAULT_PRIO,
        }
    }

    #[test]
    fn vdisktime_is_charged_the_slice_scaled_by_500_over_weight() {
        let ms = NSEC_PER_MSEC;
        assert_eq!(cfq_scale_slice(40 * ms, 500), 40 * ms);
        assert_eq!(cfq_scale_slice(40 * ms, 250), 80 * ms);
        assert_eq!(cfq_scale_slice(40 * ms, 1000), 20 * ms);
        let mut c = Cfq::new(CfqTunables::default(), &[500, 900, 100], ms);
        let (a, b) = (c.queue(akey(1)), c.queue(akey(2)));
        c.queues[a].nr = 1;
        c.queues[b].nr = 1;
        c.add_rr(a);
        c.add_rr(b);
        // b joined behind a: a's vdisktime plus CFQ_IDLE_DELAY
        assert_eq!(c.groups[2].vdisktime, ms * 200 / 4096);
        // an async queue of a group without sync queues is charged its
        // whole slice even if it used 5 ms of it
        assert_eq!(c.next_group(), Some(1));
        c.active = Some(a);
        c.allocated = c.slice_of(a);
        c.dispatch_start = 0;
        c.slice_start = Some(0);
        c.slice_expired(5 * ms);
        assert_eq!(c.groups[1].vdisktime, 40 * ms * 500 / 900);
        assert_eq!(c.groups[1].time, 5 * ms);
        // over many slices both backlogged, turns follow 900:100
        let mut turns = [0u32; 2];
        let mut now = 5 * ms;
        for _ in 0..1000 {
            let g = c.next_group().unwrap();
            let q = c.groups[g].rr[0];
            c.active = Some(q);
            c.allocated = c.slice_of(q);
            c.slice_start = Some(now);
            now += 40 * ms;
            c.slice_expired(now);
            turns[g - 1] += 1;
        }
        assert_eq!(turns, [900, 100]);
    }

    #[test]
    fn a_group_that_runs_empty_rejoins_at_the_tail() {
        let ms = NSEC_PER_MSEC;
        let mut c = Cfq::new(CfqTunables::default(), &[500, 1000, 100], ms);
        let (a, b) = (c.queue(akey(1)), c.queue(akey(2)));
        c.queues[b].nr = 1;
        c.add_rr(b);
        c.groups[2].vdisktime = 1000 * ms;
        c.queues[a].nr = 1;
        c.add_rr(a);
        // a, though weight 1000, comes after b, the only group on the tree
        assert_eq!(c.groups[1].vdisktime, 1000 * ms + ms * 200 / 4096);
        assert_eq!(c.next_group(), Some(2));
    }
}
