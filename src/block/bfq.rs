//! The BFQ I/O scheduler with cgroups (block/bfq-iosched.c, bfq-wf2q.c,
//! bfq-cgroup.c as of 6.1), `queue.scheduler = "bfq"`.
//!
//! What is modelled:
//!
//! - **Queues** (`struct bfq_queue`): one sync queue per task (reads,
//!   `REQ_SYNC` writes: its io context, `bfq_get_bfqq_handle_split`), and
//!   per group one async queue per ioprio class and level
//!   (`bfqg->async_bfqq[class][prio]`, `bfq_async_queue_prio`), shared by
//!   every task of the group, the flushers writing its inodes included:
//!   the group of a request is its bio's blkcg (`bfq_bio_bfqg`). Every task
//!   is best-effort at level 4 (ioprio is not modelled), so a group has one
//!   async queue in use. A queue's weight is `bfq_ioprio_to_weight` (40 at
//!   level 4); a group's is its `io.bfq.weight`.
//! - **B-WF2Q+** (`bfq-wf2q.c`): every entity (queue or group) has start
//!   and finish virtual times; service is in sectors, the virtual time of a
//!   service tree advances by `service << WFQ_SERVICE_SHIFT / wsum`
//!   (`bfq_bfqq_served`), the eligible entity (start ≤ vtime) with the
//!   smallest finish is served next (`__bfq_lookup_next_entity`,
//!   `bfq_first_active_entity`), an idle tree keeps a deactivated entity's
//!   weight in `wsum` until the vtime passes its finish (`bfq_forget_idle`).
//!   Two levels: the root group's queues and the child groups share the
//!   top tree, each child group's queues its own (`for_each_entity`).
//! - **Budgets and expiry** (`bfq_bfqq_expire`, `__bfq_bfqq_recalc_budget`):
//!   a queue is in service until its budget is exhausted, its budget
//!   timeout (`timeout_sync`, 125 ms) passes, or it runs empty. A sync
//!   queue that runs empty is idled on for `slice_idle` (8 ms) once its
//!   in-flight requests are done (`bfq_arm_slice_timer`); async queues are
//!   never idled on. Sync budgets follow the expiry reason (too idle:
//!   shrink, timeout: ×2, exhausted: ×4, empty: what was used); async
//!   queues always get `max_budget`. A queue that timed out with a third of
//!   its budget left is charged the time it held the device
//!   (`bfq_bfqq_charge_time`).
//! - **Charging** (`bfq_serv_to_charge`): sectors, times
//!   `bfq_async_charge_factor` (3) for an async queue unless the scenario
//!   is asymmetric (`bfq_asymmetric_scenario`: a non-root group has pending
//!   requests, or the busy queues' weights differ).
//! - Within the in-service queue, the next request is the nearest ahead of
//!   the queue's last position, a backward one within `back_seek_max`
//!   costing `back_seek_penalty` times its distance (`bfq_choose_req`); the
//!   oldest goes first once it has waited `fifo_expire_sync`/`_async`
//!   (`bfq_check_fifo`).
//!
//! Not modelled (stated, not forgotten): weight raising (`low_latency` is
//! off: 0 is the only accepted value), the peak-rate estimate behind the
//! automatic `max_budget` (auto keeps `bfq_default_max_budget`, 16384
//! sectors), queue merging, burst handling, injection, the idle class's
//! timeout, the tag-depth limits (`bfq_limit_depth`), nesting below one
//! level, and ioprio (every task is BE 4).

use crate::block::blk_mq::ReqId;
use crate::block::blk_wbt::REQ_SYNC;
use crate::kernel::{DevId, Ev, Kernel};
use crate::sim::{Ns, NSEC_PER_MSEC};
use std::collections::BTreeMap;

/// `WFQ_SERVICE_SHIFT`: service is shifted by this before division by a
/// weight.
pub const WFQ_SERVICE_SHIFT: u32 = 22;
/// `bfq_default_max_budget` (sectors).
pub const DEFAULT_MAX_BUDGET: u64 = 16 * 1024;
/// `bfq_async_charge_factor`.
pub const ASYNC_CHARGE_FACTOR: u64 = 3;
/// `BFQ_WEIGHT_CONVERSION_COEFF` × (`IOPRIO_NR_LEVELS` − 4): a BE level 4
/// queue's weight (`bfq_ioprio_to_weight`).
pub const QUEUE_WEIGHT_BE4: u64 = 40;
/// `IOPRIO_CLASS_BE` and the default level.
pub const CLASS_BE: u8 = 2;
pub const DEFAULT_PRIO: u8 = 4;

/// BFQ's sysfs tunables (`queue/iosched/`), the kernel's defaults unless
/// the scenario sets `queue.iosched.*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BfqTunables {
    /// `slice_idle` (sysfs in ms; `slice_idle_us` in µs): 8 ms.
    pub slice_idle: Ns,
    /// `timeout_sync` (ms): `bfq_timeout`, HZ/8.
    pub timeout_sync: Ns,
    /// `max_budget` (sectors); 0: automatic (`bfq_default_max_budget`).
    pub max_budget: u64,
    /// `back_seek_max` (KiB): 16384.
    pub back_seek_max: u64,
    /// `back_seek_penalty`: 2.
    pub back_seek_penalty: u64,
    /// `fifo_expire_sync` and `fifo_expire_async` (ms): 125 and 250.
    pub fifo_expire_sync: Ns,
    pub fifo_expire_async: Ns,
}

impl Default for BfqTunables {
    fn default() -> BfqTunables {
        BfqTunables {
            slice_idle: 8 * NSEC_PER_MSEC,
            timeout_sync: 125 * NSEC_PER_MSEC,
            max_budget: 0,
            back_seek_max: 16 * 1024,
            back_seek_penalty: 2,
            fifo_expire_sync: 125 * NSEC_PER_MSEC,
            fifo_expire_async: 250 * NSEC_PER_MSEC,
        }
    }
}

/// A scheduler queue's identity: its group (cgroup index), and the task of
/// a sync queue or the ioprio class and level of an async one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct QKey {
    pub cg: u32,
    /// The task of a sync queue; `u32::MAX` for an async queue.
    pub sync_pid: u32,
    pub class: u8,
    pub prio: u8,
}

impl QKey {
    pub fn is_sync(&self) -> bool {
        self.sync_pid != u32::MAX
    }
}

/// Where an entity is (`entity->tree`, and the in-service entity, which
/// is on no tree but still counts in `wsum`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Tree {
    #[default]
    None,
    Active,
    Idle,
    InService,
}

/// `struct bfq_entity`: timestamps in virtual time, budget and service in
/// sectors.
#[derive(Clone, Copy, Debug, Default)]
pub struct Entity {
    pub weight: u64,
    pub start: u128,
    pub finish: u128,
    pub budget: u64,
    pub service: u64,
    pub tree: Tree,
}

/// `bfq_delta`: service → virtual time at weight `w`.
pub fn bfq_delta(service: u64, w: u64) -> u128 {
    (u128::from(service) << WFQ_SERVICE_SHIFT) / u128::from(w.max(1))
}

/// An entity of a service tree: a queue or a child group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ent {
    Q(usize),
    G(usize),
}

/// `struct bfq_sched_data` with its one (best-effort) service tree.
#[derive(Clone, Debug, Default)]
pub struct Sd {
    pub vtime: u128,
    pub wsum: u64,
    /// The entities on the tree (active or idle) or in service.
    pub members: Vec<Ent>,
    pub in_service: Option<Ent>,
}

/// `struct bfq_queue`.
#[derive(Clone, Debug)]
pub struct Bq {
    pub ent: Entity,
    pub key: QKey,
    /// Requests waiting in the scheduler, and dispatched ones in flight.
    pub nr: u32,
    pub dispatched: u32,
    /// `bfqq->max_budget`.
    pub max_budget: u64,
    /// Where its last dispatched request ended.
    pub next_pos: u64,
}

/// `struct bfq_group`: its entity in the root's tree and its own tree.
#[derive(Clone, Debug, Default)]
pub struct Bg {
    pub ent: Entity,
    pub sd: Sd,
}

/// Why the in-service queue expires (`enum bfqq_expiration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expire {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
}

/// `struct bfq_data` of one device.
#[derive(Clone, Debug, Default)]
pub struct Bfq {
    pub tun: BfqTunables,
    /// Group i is cgroup i; group 0 is the root, whose `sd` is the top.
    pub groups: Vec<Bg>,
    pub queues: Vec<Bq>,
    pub qmap: BTreeMap<QKey, usize>,
    pub in_service: Option<usize>,
    /// When the in-service queue's budget times out (`budget_timeout`).
    pub budget_timeout: Ns,
    /// When it was set in service (`last_budget_start`).
    pub budget_start: Ns,
    /// The idle slice timer is armed (its generation, for stale timers).
    pub idling: bool,
    pub idle_gen: u32,
    /// Expiries by reason (too idle, timeout, exhausted, empty).
    pub expiries: [u64; 4],
}

impl Bfq {
    /// A BFQ instance with the cgroups' weights (index 0: the root).
    pub fn new(tun: BfqTunables, group_weights: &[u64]) -> Bfq {
        let groups = group_weights
            .iter()
            .map(|&w| Bg {
                ent: Entity {
                    weight: w.max(1),
                    ..Default::default()
                },
                sd: Sd::default(),
            })
            .collect();
        Bfq {
            tun,
            groups,
            ..Default::default()
        }
    }

    /// `bfqd->bfq_max_budget`.
    pub fn max_budget(&self) -> u64 {
        if self.tun.max_budget == 0 {
            DEFAULT_MAX_BUDGET
        } else {
            self.tun.max_budget
        }
    }

    /// `bfq_min_budget`.
    pub fn min_budget(&self) -> u64 {
        (self.max_budget() / 32).max(1)
    }

    /// The queue of a key, made on first use (`bfq_get_queue`).
    pub fn queue(&mut self, key: QKey) -> usize {
        if let Some(&q) = self.qmap.get(&key) {
            return q;
        }
        let mb = self.max_budget();
        let id = self.queues.len();
        self.queues.push(Bq {
            ent: Entity {
                weight: QUEUE_WEIGHT_BE4,
                budget: mb,
                ..Default::default()
            },
            key,
            nr: 0,
            dispatched: 0,
            max_budget: mb,
            next_pos: 0,
        });
        self.qmap.insert(key, id);
        id
    }

    fn ent(&mut self, e: Ent) -> &mut Entity {
        match e {
            Ent::Q(q) => &mut self.queues[q].ent,
            Ent::G(g) => &mut self.groups[g].ent,
        }
    }

    fn ent_ref(&self, e: Ent) -> &Entity {
        match e {
            Ent::Q(q) => &self.queues[q].ent,
            Ent::G(g) => &self.groups[g].ent,
        }
    }

    /// The group whose tree holds `e`: a queue's group, or the root for a
    /// child group.
    fn parent(&self, e: Ent) -> usize {
        match e {
            Ent::Q(q) => self.queues[q].key.cg as usize,
            Ent::G(_) => 0,
        }
    }

    /// `__bfq_activate_entity` and `bfq_update_fin_time_enqueue`: `e`
    /// becomes backlogged with `budget`; its group follows if it was not.
    pub fn activate(&mut self, e: Ent, budget: u64) {
        let g = self.parent(e);
        let vtime = self.groups[g].sd.vtime;
        let ent = *self.ent_ref(e);
        match ent.tree {
            Tree::Active | Tree::InService => return,
            Tree::Idle => {
                let en = self.ent(e);
                en.start = vtime.max(en.finish);
            }
            Tree::None => {
                self.ent(e).start = vtime;
                let sd = &mut self.groups[g].sd;
                sd.wsum += ent.weight;
                sd.members.push(e);
            }
        }
        let en = self.ent(e);
        en.budget = budget;
        en.finish = en.start + bfq_delta(budget, en.weight);
        en.tree = Tree::Active;
        if g != 0 && self.groups[g].sd.in_service.is_none() {
            self.activate(Ent::G(g), budget);
        }
    }

    /// `bfq_bfqq_served`: charge `served` sectors to queue `q` and its
    /// group, advancing each tree's virtual time.
    pub fn served(&mut self, q: usize, served: u64) {
        let g = self.queues[q].key.cg as usize;
        let mut chain = vec![(Ent::Q(q), g)];
        if g != 0 {
            chain.push((Ent::G(g), 0));
        }
        for (e, sdg) in chain {
            self.ent(e).service += served;
            let sd = &mut self.groups[sdg].sd;
            sd.vtime += bfq_delta(served, sd.wsum);
            self.forget_idle(sdg);
        }
    }

    /// `bfq_forget_idle`: idle entities whose finish the vtime passed
    /// leave the tree and `wsum`.
    fn forget_idle(&mut self, g: usize) {
        let vtime = self.groups[g].sd.vtime;
        let members = std::mem::take(&mut self.groups[g].sd.members);
        let mut keep = Vec::with_capacity(members.len());
        for e in members {
            let en = *self.ent_ref(e);
            if en.tree == Tree::Idle && en.finish <= vtime {
                self.ent(e).tree = Tree::None;
                self.groups[g].sd.wsum -= en.weight;
            } else {
                keep.push(e);
            }
        }
        self.groups[g].sd.members = keep;
    }

    /// `bfq_lookup_next_entity` on group `g`'s tree: the vtime jumps to
    /// the smallest start if nothing is eligible (`bfq_update_vtime`), then
    /// the eligible entity with the smallest finish.
    pub fn lookup_next(&mut self, g: usize) -> Option<Ent> {
        let sd = &self.groups[g].sd;
        let active: Vec<Ent> = sd
            .members
            .iter()
            .copied()
            .filter(|&e| self.ent_ref(e).tree == Tree::Active)
            .collect();
        let min_start = active.iter().map(|&e| self.ent_ref(e).start).min()?;
        let sd = &mut self.groups[g].sd;
        if sd.vtime < min_start {
            sd.vtime = min_start;
        }
        let vtime = sd.vtime;
        active
            .into_iter()
            .filter(|&e| self.ent_ref(e).start <= vtime)
            .min_by_key(|&e| self.ent_ref(e).finish)
    }

    /// `bfq_get_next_queue`: choose the next queue down the hierarchy and
    /// mark the chosen entities in service.
    pub fn get_next_queue(&mut self) -> Option<usize> {
        let mut g = 0;
        loop {
            let e = self.lookup_next(g)?;
            self.ent(e).tree = Tree::InService;
            self.ent(e).service = 0;
            self.groups[g].sd.in_service = Some(e);
            match e {
                Ent::Q(q) => return Some(q),
                Ent::G(c) => g = c,
            }
        }
    }

    /// `__bfq_requeue_entity` / `__bfq_deactivate_entity` of an in-service
    /// entity at the end of its service: its finish is recomputed from the
    /// service it received; if still backlogged it goes back with a new
    /// budget from there, else onto the idle tree (or is forgotten).
    fn end_service(&mut self, e: Ent, backlogged: bool, budget: u64) {
        let g = self.parent(e);
        let vtime = self.groups[g].sd.vtime;
        self.groups[g].sd.in_service = None;
        let en = self.ent(e);
        en.finish = en.start + bfq_delta(en.service, en.weight);
        en.service = 0;
        if backlogged {
            en.start = en.finish;
            en.budget = budget;
            en.finish = en.start + bfq_delta(budget, en.weight);
            en.tree = Tree::Active;
        } else if en.finish > vtime {
            en.tree = Tree::Idle;
        } else {
            en.tree = Tree::None;
            let w = en.weight;
            let sd = &mut self.groups[g].sd;
            sd.wsum -= w;
            sd.members.retain(|&m| m != e);
        }
    }

    /// Whether group `g` has a backlogged child.
    fn group_backlogged(&self, g: usize) -> bool {
        self.groups[g]
            .sd
            .members
            .iter()
            .any(|&e| self.ent_ref(e).tree == Tree::Active)
    }

    /// `__bfq_bfqq_recalc_budget`: the queue's next budget.
    fn recalc_budget(&mut self, q: usize, reason: Expire) {
        let (max, min) = (self.max_budget(), self.min_budget());
        let bq = &mut self.queues[q];
        if !bq.key.is_sync() {
            bq.max_budget = max;
            return;
        }
        let b = bq.max_budget;
        bq.max_budget = match reason {
            Expire::TooIdle if bq.dispatched > 0 => (b * 2).min(max),
            Expire::TooIdle if b > 5 * min => b - 4 * min,
            Expire::TooIdle => min,
            Expire::BudgetTimeout => (b * 2).min(max),
            Expire::BudgetExhausted => (b * 4).min(max),
            Expire::NoMoreRequests => bq.ent.service.max(min),
        };
    }

    /// `bfq_bfqq_expire`: end the in-service queue's service for `reason`.
    pub fn expire(&mut self, reason: Expire, now: Ns) {
        let Some(q) = self.in_service.take() else {
            return;
        };
        self.idling = false;
        self.idle_gen = self.idle_gen.wrapping_add(1);
        self.expiries[reason as usize] += 1;
        // bfq_bfqq_charge_time: a timeout with a third of the budget left
        let ent = self.queues[q].ent;
        if reason == Expire::BudgetTimeout
            && ent.budget.saturating_sub(ent.service) >= ent.budget / 3
        {
            let held = (now - self.budget_start).min(self.tun.timeout_sync);
            let tot = (self.max_budget() as u128 * held as u128
                / self.tun.timeout_sync.max(1) as u128) as u64;
            if tot > ent.service {
                if tot > ent.budget {
                    self.queues[q].ent.budget = tot;
                }
                self.served(q, tot - ent.service);
            }
        }
        self.recalc_budget(q, reason);
        let backlogged = self.queues[q].nr > 0;
        let budget = self.queues[q].max_budget;
        self.end_service(Ent::Q(q), backlogged, budget);
        let g = self.queues[q].key.cg as usize;
        if g != 0 {
            let back = self.group_backlogged(g);
            let gb = self.max_budget();
            self.end_service(Ent::G(g), back, gb);
        }
    }

    /// `bfq_asymmetric_scenario` (weight raising off, one class): a
    /// non-root group has requests queued or in flight, or the busy
    /// queues' weights differ.
    pub fn asymmetric(&self) -> bool {
        let mut w = None;
        for bq in &self.queues {
            if bq.nr + bq.dispatched == 0 {
                continue;
            }
            if bq.key.cg != 0 {
                return true;
            }
            match w {
                None => w = Some(bq.ent.weight),
                Some(x) if x != bq.ent.weight => return true,
                _ => {}
            }
        }
        false
    }

    /// `bfq_serv_to_charge`.
    pub fn serv_to_charge(&self, q: usize, sectors: u64) -> u64 {
        if self.queues[q].key.is_sync() || self.asymmetric() {
            sectors
        } else {
            sectors * ASYNC_CHARGE_FACTOR
        }
    }
}

/// The scheduler queue a request belongs to, from its first bio: its blkcg
/// and, for a sync request (a read, `REQ_SYNC`), its submitter. `root_async`
/// puts every async request in the root group (CFQ before 4.2).
impl Kernel {
    pub fn rq_qkey(&self, rq: ReqId, root_async: bool) -> QKey {
        let r = self.reqs[rq].as_ref().expect("rq");
        let b = r.pieces[0];
        let bio = self.bios[b].as_ref().expect("bio");
        let sync = r.is_read() || r.opf & REQ_SYNC != 0;
        // CFQ's per-cgroup async queues follow the dirtier (the inode's
        // owner with cgroup writeback, TerAvest's tracking without)
        let cfq = self.devs[r.dev].elevator == crate::scenario::Elevator::Cfq;
        let cg = if !sync && !root_async && cfq {
            self.bio_dirtier(b)
        } else {
            self.bio_blkcg(b)
        } as u32;
        QKey {
            cg: if !sync && root_async { 0 } else { cg },
            sync_pid: if sync { bio.submitter as u32 } else { u32::MAX },
            class: CLASS_BE,
            prio: DEFAULT_PRIO,
        }
    }

    /// `bfq_insert_request` / `bfq_add_request`: count a new waiting
    /// request in its queue and activate the queue if it was idle.
    pub fn bfq_insert(&mut self, dev: DevId, rq: ReqId) {
        let key = self.rq_qkey(rq, false);
        let now = self.now();
        let b = self.devs[dev].sched.bfq.as_mut().expect("bfq");
        let q = b.queue(key);
        b.queues[q].nr += 1;
        if b.in_service == Some(q) {
            if b.idling {
                // bfq_rq_enqueued: the awaited request arrived
                b.idling = false;
                b.idle_gen = b.idle_gen.wrapping_add(1);
            }
            return;
        }
        if b.queues[q].ent.tree != Tree::Active {
            // bfq_bfqq_update_budg_for_activation
            let budget = b.queues[q].max_budget;
            b.activate(Ent::Q(q), budget);
        }
        let _ = now;
    }

    /// `bfq_dispatch_request` with `bfq_select_queue`: the next request of
    /// the in-service queue, after expiring it and choosing another as its
    /// budget, timeout or backlog require; None while idling or with
    /// nothing to do.
    pub fn bfq_dispatch(&mut self, dev: DevId) -> Option<ReqId> {
        let now = self.now();
        loop {
            let b = self.devs[dev].sched.bfq.as_mut().expect("bfq");
            let Some(q) = b.in_service else {
                let q = b.get_next_queue()?;
                b.in_service = Some(q);
                b.budget_start = now;
                b.budget_timeout = now + b.tun.timeout_sync;
                continue;
            };
            if b.idling {
                return None;
            }
            let bq = &b.queues[q];
            if bq.nr == 0 {
                if bq.key.is_sync() && b.tun.slice_idle > 0 {
                    // bfq_bfqq_must_idle: wait for the in-flight requests,
                    // then idle for slice_idle (bfq_arm_slice_timer), even
                    // past the budget timeout: an empty queue is expired
                    // for its timeout only once a request arrives
                    // (bfq_rq_enqueued), so that it is requeued with its
                    // timestamps, not sent to the idle tree
                    // (bfq_select_queue, bfq_completed_request)
                    if bq.dispatched == 0 {
                        b.idling = true;
                        b.idle_gen = b.idle_gen.wrapping_add(1);
                        let gen = b.idle_gen;
                        let at = now + b.tun.slice_idle;
                        self.q.schedule(
                            at,
                            Ev::ElvIdle {
                                dev: dev as u32,
                                gen,
                            },
                        );
                        return None;
                    }
                    return None;
                }
                let reason = if now >= b.budget_timeout {
                    Expire::BudgetTimeout
                } else {
                    Expire::NoMoreRequests
                };
                b.expire(reason, now);
                continue;
            }
            if now >= b.budget_timeout {
                b.expire(Expire::BudgetTimeout, now);
                continue;
            }
            let tun = b.tun;
            let key = bq.key;
            let pos = bq.next_pos;
            let i = self.elv_choose_rq(
                dev,
                key,
                pos,
                false,
                tun.back_seek_max * 2,
                tun.back_seek_penalty,
                [tun.fifo_expire_async, tun.fifo_expire_sync],
            );
            let sectors = self.reqs[self.devs[dev].sched.waiting[i]]
                .as_ref()
                .expect("rq")
                .nr_sectors;
            let b = self.devs[dev].sched.bfq.as_mut().expect("bfq");
            let charge = b.serv_to_charge(q, sectors);
            let ent = b.queues[q].ent;
            if charge > ent.budget.saturating_sub(ent.service) && ent.service > 0 {
                b.expire(Expire::BudgetExhausted, now);
                continue;
            }
            b.served(q, charge);
            let bq = &mut b.queues[q];
            bq.nr -= 1;
            bq.dispatched += 1;
            let rq = self.devs[dev].sched.waiting.remove(i).expect("rq");
            let r = self.reqs[rq].as_ref().expect("rq");
            let end = r.sector + r.nr_sectors;
            self.devs[dev].sched.bfq.as_mut().expect("bfq").queues[q].next_pos = end;
            return Some(rq);
        }
    }

    /// `bfq_completed_request`: the queue has one less in flight.
    pub fn bfq_completed(&mut self, dev: DevId, key: QKey) {
        let b = self.devs[dev].sched.bfq.as_mut().expect("bfq");
        if let Some(&q) = b.qmap.get(&key) {
            b.queues[q].dispatched = b.queues[q].dispatched.saturating_sub(1);
        }
    }

    /// `bfq_idle_slice_timer`: the in-service queue stayed empty for
    /// `slice_idle`; it expires and the queue runs.
    pub fn bfq_idle_timer(&mut self, dev: DevId, gen: u32) {
        let now = self.now();
        let b = self.devs[dev].sched.bfq.as_mut().expect("bfq");
        if !b.idling || b.idle_gen != gen {
            return;
        }
        b.expire(Expire::TooIdle, now);
        self.blk_mq_run_hw_queue(dev);
    }

    /// The index in `waiting` of queue `key`'s next request: its oldest
    /// once that waited its FIFO expiry (`bfq_check_fifo`,
    /// `cfq_check_fifo`), else the nearest ahead of `pos`, a backward one
    /// within `back_max` sectors costing `penalty` times its distance
    /// (`bfq_choose_req`, `cfq_choose_req`). `root_async` as in `rq_qkey`.
    #[allow(clippy::too_many_arguments)]
    pub fn elv_choose_rq(
        &self,
        dev: DevId,
        key: QKey,
        pos: u64,
        root_async: bool,
        back_max: u64,
        penalty: u64,
        fifo_expire: [Ns; 2],
    ) -> usize {
        let now = self.now();
        let waiting = &self.devs[dev].sched.waiting;
        let mut best: Option<(u64, usize)> = None;
        let expire = fifo_expire[usize::from(key.is_sync())];
        for (i, &id) in waiting.iter().enumerate() {
            if self.rq_qkey(id, root_async) != key {
                continue;
            }
            let r = self.reqs[id].as_ref().expect("rq");
            if best.is_none() && r.queued + expire <= now {
                return i;
            }
            let s = r.sector;
            let d = if s >= pos {
                s - pos
            } else if pos - s <= back_max {
                (pos - s) * penalty
            } else {
                u64::MAX / 2 + s
            };
            if best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, i));
            }
        }
        best.expect("a waiting request of the queue").1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(cg: u32) -> QKey {
        QKey {
            cg,
            sync_pid: u32::MAX,
            class: CLASS_BE,
            prio: DEFAULT_PRIO,
        }
    }

    #[test]
    fn wf2q_finish_is_start_plus_budget_over_weight_and_smallest_eligible_finish_goes() {
        // two root queues of weights 40 and 80 with equal budgets: the
        // heavier one finishes first in virtual time
        let mut b = Bfq::new(BfqTunables::default(), &[100]);
        let q1 = b.queue(key(0));
        let q2 = b.queue(QKey {
            sync_pid: 7,
            ..key(0)
        });
        b.queues[q2].ent.weight = 80;
        b.activate(Ent::Q(q1), 1000);
        b.activate(Ent::Q(q2), 1000);
        assert_eq!(b.queues[q1].ent.finish, bfq_delta(1000, 40));
        assert_eq!(b.queues[q2].ent.finish, bfq_delta(1000, 80));
        assert_eq!(b.groups[0].sd.wsum, 120);
        assert_eq!(b.get_next_queue(), Some(q2));
        // serving 1000 sectors advances the vtime by 1000 << 22 / 120
        b.served(q2, 1000);
        assert_eq!(b.groups[0].sd.vtime, bfq_delta(1000, 120));
    }

    /// Serve two always-backlogged groups by whole budgets and count the
    /// sectors each gets.
    fn shares(w: [u64; 2], budget: u64, rounds: usize) -> [u64; 2] {
        let mut b = Bfq::new(
            BfqTunables {
                max_budget: budget,
                ..Default::default()
            },
            &[100, w[0], w[1]],
        );
        let qs = [b.queue(key(1)), b.queue(key(2))];
        for &q in &qs {
            b.queues[q].nr = 1;
            b.activate(Ent::Q(q), budget);
        }
        let mut got = [0u64; 2];
        for _ in 0..rounds {
            let q = b.get_next_queue().unwrap();
            b.in_service = Some(q);
            b.served(q, budget);
            got[qs.iter().position(|&x| x == q).unwrap()] += budget;
            b.expire(Expire::BudgetExhausted, 0);
        }
        got
    }

    #[test]
    fn backlogged_groups_get_service_in_proportion_to_their_weights() {
        assert_eq!(shares([100, 100], 1000, 100), [50_000, 50_000]);
        let s = shares([100, 200], 1000, 300);
        assert_eq!(s, [100_000, 200_000]);
        let s = shares([900, 100], 1000, 1000);
        assert_eq!(s, [900_000, 100_000]);
    }

    #[test]
    fn an_idle_entity_keeps_its_weight_until_the_vtime_passes_its_finish() {
        let mut b = Bfq::new(BfqTunables::default(), &[100]);
        let q1 = b.queue(key(0));
        let q2 = b.queue(QKey {
            sync_pid: 1,
            ..key(0)
        });
        b.queues[q1].nr = 1;
        b.activate(Ent::Q(q1), 100);
        b.queues[q2].nr = 1;
        b.activate(Ent::Q(q2), 1000);
        let q = b.get_next_queue().unwrap();
        assert_eq!(q, q1);
        b.in_service = Some(q);
        b.served(q, 100);
        b.queues[q].nr = 0;
        b.expire(Expire::NoMoreRequests, 0);
        // finish (100/40) is ahead of the vtime (100/80): idle, in wsum
        assert_eq!(b.queues[q1].ent.tree, Tree::Idle);
        assert_eq!(b.groups[0].sd.wsum, 80);
        let q = b.get_next_queue().unwrap();
        b.in_service = Some(q);
        b.served(q, 1000);
        assert_eq!(b.queues[q1].ent.tree, Tree::None);
        assert_eq!(b.groups[0].sd.wsum, 40);
    }

    #[test]
    fn bad_bfq_and_cfq_settings_name_the_key_and_what_is_expected() {
        use crate::scenario::Scenario;
        let load = |dev: &str, extra: &str| {
            let toml = format!(
                "[devices.sda]\n{dev}\n{extra}\n[filesystems.f]\ndevice = \"sda\"\n[jobs.dd]\nbs = \"1M\"\n"
            );
            Scenario::load_str(&toml, "t.toml", "t", &[])
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        let hdd = "type = \"hdd\"";
        assert!(load(hdd, "queue.scheduler = \"bfq\"").is_ok());
        let e = load(
            hdd,
            "queue.scheduler = \"bfq\"\nqueue.iosched.low_latency = 1",
        )
        .unwrap_err();
        assert!(e.contains("t.toml:") && e.contains("weight raising"), "{e}");
        let e = load(
            hdd,
            "queue.scheduler = \"bfq\"\nqueue.iosched.slice_sync = 10",
        )
        .unwrap_err();
        assert!(e.contains("slice_sync") && e.contains("\"cfq\""), "{e}");
        let e = load(
            hdd,
            "queue.scheduler = \"bfq\"\nqueue.cfq.async_in_root = false",
        )
        .unwrap_err();
        assert!(e.contains("async_in_root"), "{e}");
        let e = load("type = \"ssd\"", "queue.scheduler = \"cfq\"").unwrap_err();
        assert!(e.contains("driver slots"), "{e}");
        let e = load(hdd, "queue.scheduler = \"cfq\"\nqueue.iosched.quantum = 0").unwrap_err();
        assert!(e.contains("quantum") && e.contains("> 0"), "{e}");
    }

    #[test]
    fn async_charge_factor_applies_only_to_a_symmetric_root_scenario() {
        let mut b = Bfq::new(BfqTunables::default(), &[100, 100]);
        let a = b.queue(key(0));
        b.queues[a].nr = 1;
        assert_eq!(b.serv_to_charge(a, 8), 24);
        let c = b.queue(key(1));
        b.queues[c].nr = 1;
        assert_eq!(b.serv_to_charge(a, 8), 8);
    }
}
