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
//!   slice is used or, async, when it runs empty (but see group idling);
//!   a sync queue that runs empty is idled on for `slice_idle` (8 ms,
//!   `cfq_arm_slice_timer`).
//!   Async requests wait while sync ones are in flight, and while others
//!   are busy a queue keeps at most `quantum / 2` (4) in flight, up to
//!   `quantum` (8) only while `slice_idle` per request in flight stays
//!   within its slice (`cfq_may_dispatch`, `cfq_slice_used_soon`): a
//!   slice ends with about 4 requests left in the drive, not 8, and the
//!   next group's slice starts when they are done.
//! - **Group idling** (2.6.37's `group_idle`, 8 ms): a queue that is the
//!   only busy one of its group is not expired, when empty or when its
//!   slice is used, while the group has requests in the driver
//!   (`cfq_select_queue`'s `check_group_idle`); it expires at its next
//!   completion once the slice is used (`cfq_completed_request`). Emptied
//!   at the slice's end, its slice is extended by `slice_idle`
//!   (`cfq_should_wait_busy`), and it expires as soon as a request comes
//!   (`wait_busy`). So a group whose submitters refill its queue while
//!   its last requests are in flight keeps its place on the tree instead
//!   of rejoining at the tail.
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
//! low_latency's slice scaling, the think-time checks (a group's or
//! task's mean think time against `group_idle` and the slice left),
//! queue preemption and
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
    /// `group_idle` (HZ/125, 2.6.37+): how long the only queue of a group
    /// is kept in service while the group has requests in flight.
    pub group_idle: Ns,
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
            group_idle: 8 * NSEC_PER_MSEC,
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
    /// `slice_end`: the slice start plus `allocated`, later if
    /// `cfq_should_wait_busy` extended it.
    pub slice_end: Ns,
    /// `wait_busy`: the slice was extended for the group to get
    /// backlogged again.
    pub wait_busy: bool,
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

    /// `cfqg->dispatched`: the group's requests in the driver.
    pub fn group_dispatched(&self, g: usize) -> u32 {
        self.queues
            .iter()
            .filter(|x| x.key.cg as usize == g)
            .map(|x| x.dispatched)
            .sum()
    }

    /// `cfq_select_queue`'s `check_group_idle` (2.6.37's group_idle): the
    /// active queue, the only busy one of its group, is kept in service
    /// (dispatching nothing) while the group has requests in the driver,
    /// rather than expired, so that the group, about to run empty, is not
    /// taken off the tree and put back at its tail when its submitters'
    /// next requests come.
    pub fn group_idle_holds(&self, g: usize) -> bool {
        self.tun.group_idle > 0 && self.groups[g].rr.len() == 1 && self.group_dispatched(g) > 0
    }

    /// `cfq_slice_used_soon`: before the slice's first completion (its
    /// length unknown), or when `slice_idle` per request in flight would
    /// reach past its end.
    pub fn slice_used_soon(&self, q: usize, now: Ns) -> bool {
        self.slice_start.is_none()
            || now + self.tun.slice_idle * u64::from(self.queues[q].dispatched) > self.slice_end
    }

    /// `cfq_may_dispatch`'s depth rule (2.6.33+): while other queues are
    /// busy, the active queue keeps up to `quantum / 2` requests in the
    /// driver, and up to `quantum` only while its slice is not about to
    /// be used (`cfq_slice_used_soon`); alone, it has no limit. So a
    /// slice ends with about `quantum / 2` of its requests still to
    /// complete, which the next group waits behind.
    pub fn depth_allows(&self, q: usize, now: Ns) -> bool {
        let busy = self.queues.iter().filter(|x| x.busy).count();
        let disp = self.queues[q].dispatched;
        let mut max = (self.tun.quantum / 2).max(1);
        if disp >= max {
            if busy > 1 && self.slice_used_soon(q, now) {
                return false;
            }
            max = if busy == 1 {
                u32::MAX
            } else {
                self.tun.quantum
            };
        }
        disp < max
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

    /// `cfq_completed_request` for a request of queue `q`: the first
    /// completion of the active queue's slice starts it;
    /// `cfq_should_wait_busy`: the group's only queue, empty, with its
    /// slice used or at most a jiffy from its end, has the slice extended
    /// by `slice_idle` (`group_idle` if that is 0), so that the group may
    /// get backlogged again before it leaves the tree; an active queue
    /// whose slice is used expires here, at its completion.
    pub fn completed(&mut self, q: usize, now: Ns) {
        self.queues[q].dispatched = self.queues[q].dispatched.saturating_sub(1);
        let s = usize::from(self.queues[q].key.is_sync());
        self.in_flight[s] = self.in_flight[s].saturating_sub(1);
        if self.active != Some(q) {
            return;
        }
        if self.slice_start.is_none() {
            self.slice_start = Some(now);
            self.slice_end = now + self.allocated;
        }
        let g = self.queues[q].key.cg as usize;
        if self.queues[q].nr == 0
            && self.groups[g].rr.len() == 1
            && self.slice_end <= now + self.jiffy
        {
            self.slice_end = now
                + if self.tun.slice_idle > 0 {
                    self.tun.slice_idle
                } else {
                    self.tun.group_idle
                };
            self.wait_busy = true;
        }
        if now >= self.slice_end {
            self.slice_expired(now);
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
        self.wait_busy = false;
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
                c.wait_busy = false;
                c.dispatch_start = now;
                continue;
            };
            if c.idling {
                return None;
            }
            let g = c.queues[q].key.cg as usize;
            // we waited for the group to get backlogged, and it did
            if c.wait_busy && c.queues[q].nr > 0 {
                c.slice_expired(now);
                continue;
            }
            let used_up = c.slice_start.is_some() && now >= c.slice_end;
            if used_up {
                if c.group_idle_holds(g) {
                    return None;
                }
                c.slice_expired(now);
                continue;
            }
            let cq = &c.queues[q];
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
                if c.group_idle_holds(g) {
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
            if !c.depth_allows(q, now) {
                return None;
            }
            let cq = &c.queues[q];
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

    /// `cfq_completed_request` ([`Cfq::completed`]).
    pub fn cfq_completed(&mut self, dev: DevId, key: QKey) {
        let now = self.now();
        let c = self.devs[dev].sched.cfq.as_mut().expect("cfq");
        if let Some(&q) = c.qmap.get(&key) {
            c.completed(q, now);
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

    #[test]
    fn group_idle_keeps_a_groups_only_queue_while_it_has_requests_in_flight() {
        let ms = NSEC_PER_MSEC;
        let mut c = Cfq::new(CfqTunables::default(), &[500, 650, 100], ms);
        let (a, b) = (c.queue(akey(1)), c.queue(akey(2)));
        c.queues[a].nr = 1;
        c.add_rr(a);
        c.queues[b].nr = 1;
        c.add_rr(b);
        c.active = Some(a);
        c.allocated = c.slice_of(a);
        c.dispatch_start = 0;
        // a dispatched its only request: empty, one in flight
        c.queues[a].nr = 0;
        c.queues[a].dispatched = 1;
        assert_eq!(c.group_dispatched(1), 1);
        assert!(c.group_idle_holds(1));
        // not with group_idle off, nor with another busy queue in the group
        let mut off = c.clone();
        off.tun.group_idle = 0;
        assert!(!off.group_idle_holds(1));
        let mut two = c.clone();
        let a2 = two.queue(QKey {
            sync_pid: 7,
            ..akey(1)
        });
        two.queues[a2].nr = 1;
        two.add_rr(a2);
        assert!(!two.group_idle_holds(1));
        // its completion starts the slice (40 ms): a stays in service
        c.completed(a, 5 * ms);
        assert_eq!(c.active, Some(a));
        assert_eq!((c.slice_start, c.slice_end), (Some(5 * ms), 45 * ms));
        assert!(!c.group_idle_holds(1) && !c.wait_busy);
        // a request came, was dispatched and completes when the slice is
        // used with a empty: the slice is extended by slice_idle
        c.queues[a].dispatched = 1;
        c.completed(a, 45 * ms);
        assert_eq!(c.active, Some(a));
        assert!(c.wait_busy);
        assert_eq!(c.slice_end, 53 * ms);
        // with requests queued, a completion after the slice's end expires it
        let mut d = Cfq::new(CfqTunables::default(), &[500, 650], ms);
        let q = d.queue(akey(1));
        d.queues[q].nr = 3;
        d.add_rr(q);
        d.active = Some(q);
        d.allocated = d.slice_of(q);
        d.queues[q].dispatched = 2;
        d.completed(q, 0);
        d.completed(q, 40 * ms);
        assert_eq!(d.active, None);
        assert_eq!(d.groups[1].vdisktime, 40 * ms * 500 / 650);
    }

    #[test]
    fn a_queue_keeps_half_the_quantum_in_flight_near_its_slices_end() {
        let ms = NSEC_PER_MSEC;
        let mut c = Cfq::new(CfqTunables::default(), &[500, 650, 100], ms);
        let (a, b) = (c.queue(akey(1)), c.queue(akey(2)));
        c.queues[a].nr = 20;
        c.add_rr(a);
        c.active = Some(a);
        c.allocated = c.slice_of(a);
        // alone on the device: no limit
        c.queues[a].dispatched = 30;
        assert!(c.depth_allows(a, 0));
        c.queues[b].nr = 1;
        c.add_rr(b);
        // before its first completion: quantum / 2
        c.queues[a].dispatched = 3;
        assert!(c.depth_allows(a, 0));
        c.queues[a].dispatched = 4;
        assert!(!c.depth_allows(a, 0));
        // the slice started at 0 and ends at 40 ms: 4 in flight may grow
        // to 6 early on (8 ms each within the 40 left), not near the end
        c.slice_start = Some(0);
        c.slice_end = 40 * ms;
        assert!(c.depth_allows(a, 0));
        c.queues[a].dispatched = 5;
        assert!(c.depth_allows(a, 0));
        c.queues[a].dispatched = 6;
        assert!(!c.depth_allows(a, 0));
        c.queues[a].dispatched = 4;
        assert!(!c.depth_allows(a, 10 * ms));
        c.queues[a].dispatched = 3;
        assert!(c.depth_allows(a, 39 * ms));
    }
}
