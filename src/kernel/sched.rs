//! CPUs and the run queue (kernel/sched). A deliberately small model with
//! one run queue shared by `machine.cpus` cores, under one of two policies
//! (`machine.sched`; `fifo` is the default, see the README for why):
//!
//! - `eevdf` (Linux >= 6.6, kernel/sched/fair.c), every task at nice 0:
//!   - each task has a virtual runtime (its CPU time) and a virtual
//!     deadline, `vruntime + slice`, where the slice is `base_slice` ×
//!     (1 + ilog2(min(cpus, 8))) (`update_sysctl`, log scaling);
//!   - the queue's average vruntime V (`avg_vruntime`, over the queued and
//!     the running tasks) decides eligibility: a task may run when its
//!     vruntime is at most V. The pick is the eligible task with the
//!     earliest deadline (`pick_eevdf`);
//!   - a task that sleeps keeps its lag V - vruntime, clamped to the larger
//!     of two slices and a tick (`update_entity_lag`). A positive lag is
//!     given back when it wakes, scaled by (n + 1) / n (`place_entity`,
//!     PLACE_LAG). A negative lag stays with the task while it sleeps: its
//!     vruntime is kept until V passes it, after which it wakes at V
//!     (DELAY_DEQUEUE with DELAY_ZERO). Delayed sleepers are not counted
//!     in V here, a simplification;
//!   - the running task is protected until its vruntime reaches the
//!     deadline it had when picked (RUN_TO_PARITY). Once past it, the next
//!     tick (`update_curr` from the tick: at HZ=250 up to 4 ms later) gives
//!     it a new deadline (`update_deadline`), and it is preempted if the
//!     pick prefers a queued task;
//!   - a wakeup preempts the running task when that task is not protected
//!     (or no longer eligible) and the woken one is the pick
//!     (`check_preempt_wakeup_fair`);
//!   - under PREEMPT_NONE (the rig's 6.18 kernel) a resched only takes
//!     effect where the task checks for it: at the end of its CPU burst (a
//!     return to user space), at the flusher's `cond_resched()`, or at the
//!     `cond_resched()` in generic_perform_write after a write's copy (a
//!     dd's pages are dirty then, its balance_dirty_pages check still to
//!     come: `Action::Resched`). Neither the tick nor a wakeup cuts a burst
//!     short (a 1 MiB write's copy runs to its end);
//! - `fifo`: one FIFO queue and round-robin slices of
//!   `machine.cost.sched_slice`, the model before EEVDF was added.
//!
//! With `machine.autogroup` (kernel/sched/autogroup.c) the workload's tasks
//! form one task group and kernel threads sit in the root run queue beside
//! it. Each CPU's root queue holds the group's entity there, whose weight
//! is its share of the group's 1024 (`calc_group_shares`, spread evenly
//! over the CPUs the group's runnable tasks occupy), and the kernel threads
//! queued on that CPU, each at nice 0. Of two entities the eligible one is
//! the one with the smaller vruntime, and that decides the pick at a burst
//! end (`pick_next_entity` on the root, then in the group by the policy).
//! A woken kernel thread is placed level with the group's entity; a CPU
//! that would go idle pulls a thread queued on another.
//!
//! A task that blocks counts a voluntary context switch; a task taken off
//! the CPU while it still wants it counts an involuntary one, as in
//! /proc/PID/status.

use super::{Action, Ev, Kernel, Pid, RunState};
use crate::scenario::{Machine, SchedPolicy};
use crate::sim::Ns;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Default, Clone, Debug)]
pub struct Cpu {
    pub cur: Option<Pid>,
    pub gen: u32,
    /// When the current task got this CPU (its slice counts from here,
    /// across consecutive bursts).
    pub since: Ns,
    /// When the running segment (the pending slice event) started.
    pub seg_start: Ns,
    /// EEVDF: a resched is pending for the running task (TIF_NEED_RESCHED
    /// set by a wakeup or the tick).
    pub resched: bool,
    pub busy_ns: Ns,
    /// Autogroup: the vruntime of the workload group's entity in this
    /// CPU's root run queue.
    pub gvr: u64,
    /// The task that left this CPU and its `prev_state`, while the
    /// `sched_switch` line that names its successor is still to be written
    /// (kept only while that event is traced).
    pub left: Option<(Pid, &'static str)>,
}

/// A task's place on EEVDF's timeline (`struct sched_entity`, every task
/// at nice 0's weight). Under autogroup a kernel thread's entity sits in
/// the root queue, under either policy. Laid out in declaration order:
/// the vruntime, which every wakeup under EEVDF reads, first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SchedEntity {
    /// Virtual runtime (ns).
    pub vruntime: u64,
    /// The virtual deadline.
    pub deadline: u64,
    /// The protected point (run to parity, `set_protect_slice`).
    pub vprot: u64,
    /// The lag kept across a sleep.
    pub vlag: i64,
    /// The task went to sleep with negative lag and keeps its vruntime
    /// until the queue's average passes it (DELAY_DEQUEUE, `sched_delayed`).
    pub delayed: bool,
}

/// The run queue (`struct rq`): one for all the CPUs, holding the
/// workload's queued tasks under the policy of `machine.sched` and, under
/// autogroup, the root group's queued kernel threads beside them.
#[derive(Debug)]
pub struct Rq {
    /// `machine.sched`.
    pub policy: SchedPolicy,
    /// `fifo`: the queued tasks, first come first served.
    pub fifo: VecDeque<Pid>,
    /// `eevdf`: the queued tasks (`struct cfs_rq`).
    pub cfs: CfsRq,
    /// EEVDF's slice: the base slice scaled by 1 + ilog2(min(cpus, 8))
    /// (`update_sysctl`, `get_update_sysctl_factor`). The root queue's
    /// lag limit under autogroup reads it under either policy.
    pub vslice: Ns,
    /// `machine.autogroup`: the workload's tasks share one task group
    /// (their session's autogroup) and kernel threads sit in the root
    /// group beside it.
    pub autogroup: bool,
    /// Autogroup: the root group's queued kernel threads, in wakeup order.
    pub kq: VecDeque<Pid>,
    /// Autogroup: the workload's runnable tasks (queued and running; the
    /// group's `h_nr_running`).
    pub group_nr_running: u32,
}

/// EEVDF's queue of the workload's tasks (`struct cfs_rq`, every task at
/// nice 0).
#[derive(Debug, Default)]
pub struct CfsRq {
    /// The queued (runnable, not running) tasks whose deadline is their
    /// vruntime plus one slice, as `place_entity` sets it, by vruntime
    /// (and so by deadline too): a min-heap, since such a task only ever
    /// leaves the queue as its first.
    pub heap: BinaryHeap<Reverse<(u64, Pid)>>,
    /// The other queued tasks (preempted with a deadline set earlier),
    /// unordered; few.
    pub odd: Vec<Pid>,
    /// The sum of the queued tasks' vruntimes (for `avg_vruntime`).
    pub vsum: u128,
    /// The average vruntime an empty queue keeps, the one the last task
    /// to leave saw (see `avg_vruntime`).
    pub v_empty: u64,
}

impl CfsRq {
    /// How many tasks are queued.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len() + self.odd.len()
    }

    /// Is no task queued?
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Rq {
    /// The empty run queue of machine `m`, under its policy.
    pub fn new(m: &Machine) -> Rq {
        Rq {
            policy: m.sched,
            fifo: VecDeque::new(),
            cfs: CfsRq::default(),
            vslice: m.sched_base_slice * (1 + crate::klib::ilog2(m.cpus.min(8) as u64)),
            autogroup: m.autogroup == Some(true),
            kq: VecDeque::new(),
            group_nr_running: 0,
        }
    }

    /// Does the workload (the group, under autogroup) have a task waiting
    /// for a CPU?
    #[inline]
    pub fn group_waiting(&self) -> bool {
        match self.policy {
            SchedPolicy::Fifo => !self.fifo.is_empty(),
            SchedPolicy::Eevdf => !self.cfs.is_empty(),
        }
    }
}

/// Ticks of task timers kept on the wheel (`Kernel::timer_slots`); a
/// longer sleep queues its own wakeup. wbsim's figure; it is above
/// MAX_PAUSE at HZ=1000 (200 ticks, 208 after the wheel's rounding), so
/// every balance_dirty_pages pause joins the wheel.
const TIMER_SLOTS: usize = 256;

impl Kernel {
    /// The running task's vruntime now.
    fn cur_vruntime(&self, cpu: usize, pid: Pid) -> u64 {
        self.tasks[pid].se.vruntime + (self.q.now() - self.cpus[cpu].seg_start)
    }

    /// `avg_vruntime`: the mean vruntime of the queued and running tasks,
    /// and how many there are. With none, the kernel returns the queue's
    /// `min_vruntime`, which stays where the last task left it; here that
    /// is the average the last task saw as it went to sleep (`save_lag`).
    /// A task waking to an empty queue is so placed on the delayed
    /// sleepers' timeline, not at 0.
    fn avg_vruntime(&self) -> (u64, u64) {
        let mut sum = self.rq.cfs.vsum;
        let mut n = self.rq.cfs.len() as u64;
        for (c, cpu) in self.cpus.iter().enumerate() {
            if let Some(p) = cpu.cur.filter(|&p| !self.root_task(p)) {
                sum += self.cur_vruntime(c, p) as u128;
                n += 1;
            }
        }
        if n == 0 {
            return (self.rq.cfs.v_empty, 0);
        }
        // a 64-bit division when the sum fits, as it does unless the tasks
        // have run for weeks (a 128-bit one is a slow library call)
        let v = match u64::try_from(sum) {
            Ok(s) => s / n,
            Err(_) => (sum / n as u128) as u64,
        };
        (v, n)
    }

    /// Does queued task `pid` belong in `cfs.heap` (deadline = vruntime +
    /// slice) rather than `cfs.odd`?
    #[inline]
    fn in_cfs_heap(&self, pid: Pid) -> bool {
        self.tasks[pid].se.deadline == self.tasks[pid].se.vruntime + self.rq.vslice
    }

    fn rq_enqueue(&mut self, pid: Pid) {
        if self.root_task(pid) {
            self.rq.kq.push_back(pid);
            return;
        }
        match self.rq.policy {
            SchedPolicy::Fifo => self.rq.fifo.push_back(pid),
            SchedPolicy::Eevdf => {
                let v = self.tasks[pid].se.vruntime;
                if self.in_cfs_heap(pid) {
                    self.rq.cfs.heap.push(Reverse((v, pid)));
                } else {
                    self.rq.cfs.odd.push(pid);
                }
                self.rq.cfs.vsum += v as u128;
            }
        }
    }

    /// `pick_eevdf` over the queued tasks: the eligible one (vruntime <= V)
    /// with the earliest deadline (ties to the lower pid), or the least
    /// vruntime if none is. In `cfs.heap` the first task has both the least
    /// vruntime and the earliest deadline; `cfs.odd` is scanned.
    fn pick_queued(&self, v: u64) -> Option<Pid> {
        let first = self.rq.cfs.heap.peek().map(|r| r.0);
        let mut best = first
            .filter(|&(vr, _)| vr <= v)
            .map(|(vr, p)| (vr + self.rq.vslice, p));
        for &p in &self.rq.cfs.odd {
            let se = &self.tasks[p].se;
            if se.vruntime <= v && best.is_none_or(|b| (se.deadline, p) < b) {
                best = Some((se.deadline, p));
            }
        }
        if let Some((_, p)) = best {
            return Some(p);
        }
        let mut least = first;
        for &p in &self.rq.cfs.odd {
            let k = (self.tasks[p].se.vruntime, p);
            if least.is_none_or(|b| k < b) {
                least = Some(k);
            }
        }
        least.map(|(_, p)| p)
    }

    fn rq_dequeue(&mut self, pid: Pid) {
        let v = self.tasks[pid].se.vruntime;
        if self.in_cfs_heap(pid) {
            let first = self.rq.cfs.heap.pop();
            debug_assert_eq!(first.map(|r| r.0), Some((v, pid)));
        } else if let Some(i) = self.rq.cfs.odd.iter().position(|&p| p == pid) {
            self.rq.cfs.odd.swap_remove(i);
        }
        self.rq.cfs.vsum -= v as u128;
    }

    /// Take the next task to run off the queue.
    fn rq_pop(&mut self) -> Option<Pid> {
        match self.rq.policy {
            SchedPolicy::Fifo => {
                let next = self.rq.fifo.pop_front();
                if let Some(&after) = self.rq.fifo.front() {
                    self.prefetch_task(after);
                }
                next
            }
            SchedPolicy::Eevdf => {
                let (v, _) = self.avg_vruntime();
                let p = self.pick_queued(v)?;
                self.rq_dequeue(p);
                Some(p)
            }
        }
    }

    /// `place_entity`: a waking task's vruntime and deadline.
    fn place_entity(&mut self, pid: Pid) {
        let (v, n) = self.avg_vruntime();
        let slice = self.rq.vslice;
        let se = &mut self.tasks[pid].se;
        if std::mem::take(&mut se.delayed) && se.vruntime > v {
            // still owes its negative lag: wakes where it went to sleep
            se.deadline = se.vruntime + slice;
            return;
        }
        let lag = if se.vlag > 0 && n > 0 {
            se.vlag as i128 * (n as i128 + 1) / n as i128
        } else {
            0
        };
        se.vruntime = (v as i128 - lag).max(0) as u64;
        se.deadline = se.vruntime + slice;
    }

    /// `update_entity_lag` as the task leaves the run queue to sleep.
    fn save_lag(&mut self, pid: Pid) {
        let (v, _) = self.avg_vruntime();
        self.rq.cfs.v_empty = v;
        let limit = self.lag_limit() as i64;
        let se = &mut self.tasks[pid].se;
        let lag = (v as i64 - se.vruntime as i64).clamp(-limit, limit);
        se.vlag = lag;
        se.delayed = lag < 0;
    }

    /// Autogroup: is `pid` in the root task group (a kernel thread)?
    fn root_task(&self, pid: Pid) -> bool {
        self.rq.autogroup && self.tasks[pid].kthread
    }

    /// NICE_0_LOAD over the weight of the group's entity on one CPU. The
    /// group's shares (1024) are split between the CPUs in proportion to
    /// its load there (`calc_group_shares`); its runnable tasks spread over
    /// min(tasks, CPUs) of them.
    fn group_scale(&self) -> u64 {
        (self.rq.group_nr_running as u64).clamp(1, self.cpus.len() as u64)
    }

    /// The lag a nice-0 entity may keep, in its own virtual time: max(2
    /// slices, TICK_NSEC) (`update_entity_lag`; an entity of lesser weight,
    /// as the group's in the root queue, scales it by NICE_0_LOAD /
    /// weight).
    fn lag_limit(&self) -> u64 {
        let tick = self.jif.start_of(self.jif.base + 1); // TICK_NSEC
        (2 * self.rq.vslice).max(tick)
    }

    /// `place_entity` for a kernel thread waking in the root queue of its
    /// CPU: level with the group's entity. It slept long enough for any
    /// negative lag to be spent (DELAY_ZERO), and a kernel thread that
    /// sleeps after each item has no positive lag to keep.
    fn place_kthread(&mut self, pid: Pid) {
        let cpu = self.tasks[pid].cpu as usize;
        self.tasks[pid].se.vruntime = self.cpus[cpu].gvr;
    }

    /// Kernel thread `pid`'s vruntime on `cpu`'s root timeline: the same
    /// distance to the group's entity as on its own CPU's (the lag is what
    /// migrates).
    fn root_vruntime_on(&self, cpu: usize, pid: Pid) -> i128 {
        let t = &self.tasks[pid];
        t.se.vruntime as i128 + self.cpus[cpu].gvr as i128 - self.cpus[t.cpu as usize].gvr as i128
    }

    /// A kernel thread moves to `cpu`'s root queue.
    fn migrate_kthread(&mut self, cpu: usize, pid: Pid) {
        if self.tasks[pid].cpu as usize != cpu {
            let v = self.root_vruntime_on(cpu, pid).max(0) as u64;
            self.psi_migrate(pid, cpu);
            let t = &mut self.tasks[pid];
            t.se.vruntime = v;
            t.cpu = cpu as u32;
        }
    }

    /// The pick in `cpu`'s root queue between the kernel thread `k` queued
    /// there and the workload group's entity: of two entities, the eligible
    /// one is the one with the smaller vruntime (the average lies between
    /// them). Either side's lead is first cut to the lag limit, as the
    /// kernel clamps an entity's lag when it leaves and rejoins the queue.
    fn root_prefers_kthread(&mut self, cpu: usize, k: Pid) -> bool {
        debug_assert_eq!(self.tasks[k].cpu as usize, cpu);
        let limit = self.lag_limit();
        let g_limit = limit * self.group_scale();
        let c = &mut self.cpus[cpu];
        let t = &mut self.tasks[k];
        c.gvr = c.gvr.max(t.se.vruntime.saturating_sub(g_limit));
        t.se.vruntime = t.se.vruntime.max(c.gvr.saturating_sub(limit));
        t.se.vruntime <= c.gvr
    }

    /// Should the kernel thread running on `cpu` give the CPU up at its
    /// next `cond_resched()`? When it has run ahead of the waiting group's
    /// entity, or a slice ahead of a queued kernel thread.
    fn root_should_yield(&mut self, cpu: usize, pid: Pid) -> bool {
        let vk = self.cur_vruntime(cpu, pid);
        if self.rq.group_waiting() && vk > self.cpus[cpu].gvr {
            return true;
        }
        // a thread queued on this CPU: the same timeline
        self.kq_best(cpu, false)
            .is_some_and(|i| vk > self.tasks[self.rq.kq[i]].se.vruntime + self.rq.vslice)
    }

    /// The next task for a free `cpu`: under autogroup the root queue picks
    /// between its kernel threads and the group, which picks among its own
    /// tasks by the policy.
    fn pick_next(&mut self, cpu: usize) -> Option<Pid> {
        if self.rq.autogroup {
            let pull = !self.rq.group_waiting();
            if let Some(i) = self.kq_best(cpu, pull) {
                let k = self.rq.kq[i];
                if pull || self.root_prefers_kthread(cpu, k) {
                    return self.rq.kq.remove(i);
                }
            }
        }
        self.rq_pop()
    }

    /// The kernel thread `cpu`'s root queue would pick: the one furthest
    /// behind (least vruntime, ties to the earliest queued) of those queued
    /// on `cpu`, or, with `pull` (the CPU would otherwise go idle and pulls
    /// work, `newidle_balance`), of all of them. The queue is a handful of
    /// threads at most.
    fn kq_best(&self, cpu: usize, pull: bool) -> Option<usize> {
        (0..self.rq.kq.len())
            .filter(|&i| pull || self.tasks[self.rq.kq[i]].cpu as usize == cpu)
            .min_by_key(|&i| (self.root_vruntime_on(cpu, self.rq.kq[i]), i))
    }

    /// Ask for `user + sys` ns of CPU for `pid`; the task's `step` runs when
    /// the burst is done.
    fn cpu_request(&mut self, pid: Pid, user: Ns, sys: Ns) {
        let t = &mut self.tasks[pid];
        t.burst_left = user + sys;
        t.burst_user_left = user;
        t.state = RunState::Runnable;
        let woken = t.woken;
        if woken && self.root_task(pid) {
            self.place_kthread(pid);
        } else if self.rq.policy == SchedPolicy::Eevdf && woken {
            self.place_entity(pid);
        }
        let last = self.tasks[pid].cpu as usize;
        let cpu = self.idle_cpu_for(pid);
        match cpu {
            Some(c) => {
                if !self.dispatch(c, pid) {
                    self.trace_cpu_idle(c);
                }
            }
            None => {
                self.rq_enqueue(pid);
                if woken {
                    self.check_preempt_wakeup(last, pid);
                }
                self.prefetch_file(pid);
            }
        }
    }

    /// The idle CPU a runnable task goes to: the one it last ran on
    /// (cache affinity), else any.
    #[inline]
    fn idle_cpu_for(&self, pid: Pid) -> Option<usize> {
        let last = self.tasks[pid].cpu as usize;
        if self.cpus[last].cur.is_none() {
            Some(last)
        } else {
            self.cpus.iter().position(|c| c.cur.is_none())
        }
    }

    /// A task woke up and waits: may it preempt the task running on its
    /// CPU?
    fn check_preempt_wakeup(&mut self, cpu: usize, pid: Pid) {
        let Some(cur) = self.cpus[cpu].cur else {
            return;
        };
        if self.rq.autogroup && (self.tasks[pid].kthread || self.tasks[cur].kthread) {
            // the root run queue: a woken kernel thread is placed level
            // with the group and wins the next pick; a woken group task
            // wins it from a kernel thread that is ahead of the group.
            // Either way the running task only sees the flag (PREEMPT_NONE).
            if self.tasks[pid].kthread || self.cur_vruntime(cpu, cur) > self.cpus[cpu].gvr {
                self.tasks[cur].need_resched = true;
            }
            return;
        }
        if self.rq.policy == SchedPolicy::Fifo {
            // FIFO: only flag it, for cond_resched() callers
            self.tasks[cur].need_resched = true;
            return;
        }
        let (v, _) = self.avg_vruntime();
        let cvr = self.cur_vruntime(cpu, cur);
        let eligible = cvr <= v;
        if eligible && cvr < self.tasks[cur].se.vprot {
            return; // run to parity
        }
        let curr_wins = eligible && self.tasks[cur].se.deadline <= self.tasks[pid].se.deadline;
        if curr_wins || self.pick_queued(v) != Some(pid) {
            return;
        }
        self.resched_cpu(cpu);
    }

    /// Set TIF_NEED_RESCHED on `cpu`'s task. Under PREEMPT_NONE it takes
    /// effect when the task's burst ends (a return to user space) or at its
    /// own `cond_resched()` (the flusher).
    fn resched_cpu(&mut self, cpu: usize) {
        if let Some(cur) = self.cpus[cpu].cur {
            self.tasks[cur].need_resched = true;
            self.cpus[cpu].resched = true;
        }
    }

    /// `need_resched()` as `cond_resched()` callers see it: a woken task
    /// wants this CPU, or the task's slice is used up while others wait.
    /// Reading it clears the flag (the caller reschedules).
    pub fn need_resched(&mut self, pid: Pid) -> bool {
        let cpu = self.tasks[pid].cpu as usize;
        if self.root_task(pid) {
            let flagged = std::mem::take(&mut self.tasks[pid].need_resched);
            return flagged || self.root_should_yield(cpu, pid);
        }
        let expired = self.rq.policy == SchedPolicy::Fifo && self.fifo_preempt_due(cpu);
        std::mem::take(&mut self.tasks[pid].need_resched) || expired
    }

    /// Give `cpu` to `pid`. Returns false if the task (just woken) went
    /// back to sleep at once, leaving the CPU free.
    fn dispatch(&mut self, cpu: usize, pid: Pid) -> bool {
        if self.tracer.on.sched_switch {
            let prev = self.cpus[cpu].left.take();
            self.trace_sched_switch(cpu, prev, Some(pid));
        }
        self.cpus[cpu].resched = false;
        if self.root_task(pid) {
            self.migrate_kthread(cpu, pid);
        }
        if self.rq.policy == SchedPolicy::Eevdf {
            // set_protect_slice: protected up to the deadline it has now
            self.tasks[pid].se.vprot = self.tasks[pid].se.deadline;
        }
        if self.tasks[pid].woken {
            // A woken task's logic continues as soon as it is on a CPU; the
            // wakeup cost is added to the burst it asks for.
            self.tasks[pid].woken = false;
            self.psi_oncpu(cpu, pid);
            self.cpus[cpu].cur = Some(pid);
            self.cpus[cpu].seg_start = self.q.now();
            self.tasks[pid].state = RunState::Running;
            self.tasks[pid].cpu = cpu as u32;
            let w = self.sc.machine.cost.wakeup;
            // a preemption point straight after the wakeup finds no
            // resched pending: the task carries on
            let mut step = self.task_step(pid);
            while let Action::Resched = step {
                step = self.task_step(pid);
            }
            match step {
                Action::Cpu { user, sys } => {
                    let (user, sys) = self.vary_work(pid, user, sys);
                    let t = &mut self.tasks[pid];
                    let owed = std::mem::take(&mut t.owed_sys);
                    t.burst_left = user + sys + w + owed;
                    t.burst_user_left = user;
                }
                other => {
                    // Straight back to sleep: charge the wakeup, free the CPU.
                    self.tasks[pid].stime += w;
                    self.cpus[cpu].busy_ns += w;
                    self.charge_vruntime(cpu, pid, w);
                    if self.rq.policy == SchedPolicy::Eevdf && !self.root_task(pid) {
                        self.save_lag(pid);
                    }
                    self.cpus[cpu].cur = None;
                    self.finish_burst(pid, other);
                    return false;
                }
            }
        }
        self.cpus[cpu].since = self.q.now();
        self.run_burst(cpu, pid);
        true
    }

    /// Run `pid`'s current burst on `cpu` until it ends or its slice is used up.
    fn run_burst(&mut self, cpu: usize, pid: Pid) {
        let now = self.q.now();
        // (an `if` rather than a `match`: the fifo path is then laid out
        // straight through)
        let slice = if self.rq.policy == SchedPolicy::Eevdf {
            // PREEMPT_NONE: kernel work runs to its end (the tick only
            // flags a resched, `update_deadline`)
            self.tasks[pid].burst_left.max(1)
        } else {
            let used = now - self.cpus[cpu].since;
            let left_in_slice = self.sc.machine.cost.sched_slice.saturating_sub(used).max(1);
            self.tasks[pid].burst_left.min(left_in_slice).max(1)
        };
        self.psi_segment(cpu, pid);
        let c = &mut self.cpus[cpu];
        c.cur = Some(pid);
        c.gen += 1;
        c.seg_start = now;
        let gen = c.gen;
        let t = &mut self.tasks[pid];
        t.state = RunState::Running;
        t.cpu = cpu as u32;
        self.q.schedule(
            now + slice,
            Ev::CpuSlice {
                cpu: cpu as u32,
                gen,
            },
        );
    }

    /// Charge the CPU time since the running segment started.
    fn account(&mut self, cpu: usize, pid: Pid) {
        let now = self.q.now();
        let ran = now - self.cpus[cpu].seg_start;
        self.cpus[cpu].seg_start = now;
        self.cpus[cpu].busy_ns += ran;
        let t = &mut self.tasks[pid];
        let user = ran.min(t.burst_user_left);
        t.burst_user_left -= user;
        t.utime += user;
        t.stime += ran - user;
        t.burst_left -= ran;
        self.charge_vruntime(cpu, pid, ran);
        self.psi_account(cpu, pid, ran);
    }

    /// Advance the vruntimes `ran` ns of CPU moves: the task's own (EEVDF,
    /// or a kernel thread in the root queue) and, for a task of the
    /// autogroup, the group entity's on this CPU.
    #[inline]
    fn charge_vruntime(&mut self, cpu: usize, pid: Pid, ran: Ns) {
        if self.rq.autogroup {
            if self.tasks[pid].kthread {
                self.tasks[pid].se.vruntime += ran;
                return;
            }
            let scale = self.group_scale();
            self.cpus[cpu].gvr += ran * scale;
        }
        if self.rq.policy == SchedPolicy::Eevdf {
            self.tasks[pid].se.vruntime += ran;
        }
    }

    /// Should the task on `cpu`, which still wants the CPU, make way for a
    /// queued one now?
    #[inline]
    fn should_preempt(&mut self, cpu: usize, pid: Pid) -> bool {
        match self.rq.policy {
            SchedPolicy::Fifo => self.fifo_preempt_due(cpu),
            SchedPolicy::Eevdf => self.eevdf_should_preempt(cpu, pid),
        }
    }

    /// `should_preempt` under EEVDF.
    fn eevdf_should_preempt(&mut self, cpu: usize, pid: Pid) -> bool {
        let vr = self.tasks[pid].se.vruntime;
        let mut resched = std::mem::take(&mut self.cpus[cpu].resched);
        let deadline = self.tasks[pid].se.deadline;
        // update_deadline runs from update_curr, which the tick calls: the
        // task passed its deadline `vr - deadline` of CPU time ago, and it
        // counts once a tick has come since (HZ=250: up to 4 ms later)
        if vr >= deadline && self.jif.at_far(self.q.now() - (vr - deadline)) < self.jiffies() {
            // a new slice, and a resched while others wait
            self.tasks[pid].se.deadline = vr + self.rq.vslice;
            self.tasks[pid].se.vprot = self.tasks[pid].se.deadline;
            resched = true;
        }
        if !resched || self.rq.cfs.is_empty() {
            return false;
        }
        // pick_eevdf with the current task in the running
        let (v, _) = self.avg_vruntime();
        let Some(best) = self.pick_queued(v) else {
            return false;
        };
        let cur_ok = vr <= v && self.tasks[pid].se.deadline <= self.tasks[best].se.deadline;
        if cur_ok {
            self.tasks[pid].se.vprot = self.tasks[pid].se.deadline;
        }
        !cur_ok
    }

    fn preempt(&mut self, cpu: usize, pid: Pid) {
        self.psi_offcpu(pid, None);
        self.tasks[pid].need_resched = false; // schedule() clears it
        self.tasks[pid].state = RunState::Runnable;
        self.cpus[cpu].cur = None;
        if self.root_task(pid) {
            self.rq.kq.push_front(pid);
        } else {
            self.rq_enqueue(pid);
        }
        if self.tracer.on.sched_switch {
            self.cpus[cpu].left = Some((pid, "R+"));
        }
        let next = self.pick_next(cpu);
        if next == Some(pid) {
            // picked again: no context switch and no `sched_switch` line
            // (`__schedule` does either only when prev != next)
            self.dispatch(cpu, pid);
            return;
        }
        self.tasks[pid].nivcsw += 1;
        self.schedule_from(cpu, next);
    }

    fn schedule_next(&mut self, cpu: usize) {
        self.cpus[cpu].cur = None;
        let next = self.pick_next(cpu);
        self.schedule_from(cpu, next);
    }

    /// Give `cpu` to `next`, the pick, or to the next pick while the picked
    /// task goes straight back to sleep; idle when none is left.
    fn schedule_from(&mut self, cpu: usize, mut next: Option<Pid>) {
        while let Some(p) = next {
            if self.dispatch(cpu, p) {
                return;
            }
            next = self.pick_next(cpu);
        }
        self.trace_cpu_idle(cpu);
    }

    pub(super) fn cpu_slice_end(&mut self, cpu: usize, gen: u32) {
        if self.cpus[cpu].gen != gen {
            return;
        }
        let Some(pid) = self.cpus[cpu].cur else {
            return;
        };
        self.account(cpu, pid);
        if self.tasks[pid].burst_left > 0 {
            self.continue_or_preempt(cpu, pid, false);
            return;
        }
        // The burst is done: the task's logic continues on this CPU.
        let action = self.task_step(pid);
        self.apply_action(pid, cpu, action);
    }

    /// The running task wants more CPU, `at_boundary` when it has come to
    /// the end of a burst (a return to user space, a kernel thread's next
    /// work item): the only points where the root queue can take the CPU
    /// from it under PREEMPT_NONE.
    fn continue_or_preempt(&mut self, cpu: usize, pid: Pid, at_boundary: bool) {
        if self.wants_preempt(cpu, pid, at_boundary) {
            self.preempt(cpu, pid);
        } else {
            if self.rq.policy == SchedPolicy::Fifo && self.fifo_slice_used(cpu) {
                self.cpus[cpu].since = self.q.now(); // a new slice, nobody waiting
            }
            self.run_burst(cpu, pid);
        }
    }

    /// `fifo`: has the task on `cpu` used up its slice?
    #[inline]
    fn fifo_slice_used(&self, cpu: usize) -> bool {
        self.q.now() - self.cpus[cpu].since >= self.sc.machine.cost.sched_slice
    }

    /// `fifo`: is the task on `cpu` due to make way, its slice used up
    /// while others wait?
    #[inline]
    fn fifo_preempt_due(&self, cpu: usize) -> bool {
        !self.rq.fifo.is_empty() && self.fifo_slice_used(cpu)
    }

    /// Might a preemption point reached now by the running task `pid`
    /// preempt it? False when it cannot: nobody waits for a CPU, or the
    /// task is within its slice with no resched flagged. The task may then
    /// skip the point.
    #[inline]
    pub fn resched_possible(&self, pid: Pid) -> bool {
        if self.rq.autogroup {
            return !self.rq.kq.is_empty() || self.rq.group_waiting();
        }
        let cpu = self.tasks[pid].cpu as usize;
        match self.rq.policy {
            SchedPolicy::Fifo => self.fifo_preempt_due(cpu),
            SchedPolicy::Eevdf => {
                !self.rq.cfs.is_empty()
                    && (self.cpus[cpu].resched
                        || self.tasks[pid].se.vruntime >= self.tasks[pid].se.deadline)
            }
        }
    }

    /// Should the running task, which wants more CPU, be preempted now;
    /// `at_boundary` as for `continue_or_preempt`.
    #[inline]
    fn wants_preempt(&mut self, cpu: usize, pid: Pid, at_boundary: bool) -> bool {
        if !self.rq.autogroup {
            self.should_preempt(cpu, pid)
        } else if self.tasks[pid].kthread {
            at_boundary && {
                self.tasks[pid].need_resched = false;
                self.root_should_yield(cpu, pid)
            }
        } else {
            let waiting = self.kq_best(cpu, false).map(|i| self.rq.kq[i]);
            let kthread_first =
                at_boundary && waiting.is_some_and(|k| self.root_prefers_kthread(cpu, k));
            kthread_first || self.should_preempt(cpu, pid)
        }
    }

    /// The CPU time a workload task's burst really takes: its estimated
    /// `user` and `sys` work times one factor drawn uniformly from
    /// [1 - spread, 1 + spread] (`machine.cost.spread`, in 0.1% steps).
    /// Kernel threads' work, wakeups and the cost carried over from
    /// interrupts are not varied. No draw is made when the spread is 0.
    #[inline]
    fn vary_work(&mut self, pid: Pid, user: Ns, sys: Ns) -> (Ns, Ns) {
        let spread = self.sc.machine.cost.spread;
        if spread == 0 || self.tasks[pid].kthread {
            return (user, sys);
        }
        let permille = spread * 10;
        let f = 1000 - permille + self.rng.below(2 * permille + 1); // 1000 = 1.0
        let scale = |x: Ns| (x as u128 * f as u128 / 1000) as Ns;
        (scale(user), scale(sys))
    }

    fn apply_action(&mut self, pid: Pid, cpu: usize, mut action: Action) {
        while let Action::Resched = action {
            if self.wants_preempt(cpu, pid, true) {
                // it resumes where it stopped: a 1 ns burst, then its logic
                let t = &mut self.tasks[pid];
                t.burst_left = 1;
                t.burst_user_left = 0;
                self.preempt(cpu, pid);
                return;
            }
            action = self.task_step(pid);
        }
        match action {
            Action::Cpu { user, sys } => {
                let (user, sys) = self.vary_work(pid, user, sys);
                let t = &mut self.tasks[pid];
                let owed = std::mem::take(&mut t.owed_sys);
                t.burst_left = (user + sys + owed).max(1);
                t.burst_user_left = user;
                // Continue on the same CPU unless the slice is used up and
                // others wait.
                self.continue_or_preempt(cpu, pid, true);
            }
            other => {
                if self.rq.policy == SchedPolicy::Eevdf && !self.root_task(pid) {
                    self.save_lag(pid);
                }
                self.finish_burst(pid, other);
                self.schedule_next(cpu);
            }
        }
    }

    /// The task leaves the CPU: it sleeps, blocks or exits. A task that
    /// blocks flushes its plug (`sched_submit_work`), after its state is
    /// set: a wakeup caused by that flush (a loop device completes at once)
    /// finds it sleeping and makes it runnable again, as a wakeup between
    /// `prepare_to_wait` and `schedule` does.
    fn finish_burst(&mut self, pid: Pid, action: Action) {
        if self.tracer.on.sched_switch {
            self.note_switch_out(pid, action);
        }
        self.set_sleep_state(pid, action);
        if self.tasks[pid]
            .plug
            .as_ref()
            .is_some_and(|p| !p.reqs.is_empty())
        {
            self.blk_flush_plug(pid);
        }
    }

    fn set_sleep_state(&mut self, pid: Pid, action: Action) {
        let to = match action {
            Action::Exit => RunState::Dead,
            _ => RunState::Sleeping,
        };
        self.psi_offcpu(pid, Some(to));
        if self.rq.autogroup && !self.tasks[pid].kthread {
            self.rq.group_nr_running -= 1;
        }
        let t = &mut self.tasks[pid];
        t.need_resched = false; // schedule() clears TIF_NEED_RESCHED
        match action {
            Action::SleepUntil(at) => {
                t.state = RunState::Sleeping;
                t.nvcsw += 1;
                t.gen = t.gen.wrapping_add(1);
                self.wake_at(pid, at);
            }
            Action::Block => {
                t.state = RunState::Sleeping;
                t.nvcsw += 1;
                t.gen = t.gen.wrapping_add(1);
            }
            Action::Exit => t.state = RunState::Dead,
            Action::Cpu { .. } | Action::Resched => unreachable!("a burst is not an exit"),
        }
    }

    /// `sched_switch` (`__schedule`) on `cpu` from `prev` (None: the idle
    /// task, runnable) to `next` (None: idle), in the context of the task
    /// switching out.
    #[cold]
    #[inline(never)]
    fn trace_sched_switch(&mut self, cpu: usize, prev: Option<(Pid, &str)>, next: Option<Pid>) {
        if prev.map(|(p, _)| p) == next && next.is_some() {
            return;
        }
        // a task's comm, or the idle task's (`swapper/CPU`), unallocated
        enum Comm<'a> {
            Task(&'a str),
            Idle(usize),
        }
        impl std::fmt::Display for Comm<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match self {
                    Comm::Task(c) => f.write_str(c),
                    Comm::Idle(cpu) => write!(f, "swapper/{cpu}"),
                }
            }
        }
        let (pc, pp, ps) = match prev {
            Some((p, st)) => (Comm::Task(&self.tasks[p].comm), self.tasks[p].pid, st),
            None => (Comm::Idle(cpu), 0, "R"),
        };
        let (nc, np) = match next {
            Some(n) => (Comm::Task(&self.tasks[n].comm), self.tasks[n].pid),
            None => (Comm::Idle(cpu), 0),
        };
        let ctx = match (pp, &pc) {
            (0, _) | (_, Comm::Idle(_)) => "<idle>",
            (_, Comm::Task(c)) => c,
        };
        // prio 120: every task is at nice 0 (DEFAULT_PRIO)
        let h = crate::trace::Head {
            t: self.q.now(),
            comm: ctx,
            pid: pp,
            cpu,
            flags: ".....",
            event: "sched_switch",
        };
        self.tracer.emit(
            h,
            format_args!(
                "prev_comm={pc} prev_pid={pp} prev_prio=120 prev_state={ps} ==> next_comm={nc} next_pid={np} next_prio=120"
            ),
        );
    }

    /// Task `pid` leaves its CPU for `action`: its `prev_state` for the
    /// `sched_switch` line that names its successor. TASK_KILLABLE and
    /// TASK_UNINTERRUPTIBLE sleeps print as D, an idle kernel thread's
    /// (TASK_IDLE) as I.
    #[cold]
    #[inline(never)]
    fn note_switch_out(&mut self, pid: Pid, action: Action) {
        let state = match action {
            Action::Exit => "X",
            _ if self.tasks[pid].kthread => "I",
            _ => "D",
        };
        self.cpus[self.tasks[pid].cpu as usize].left = Some((pid, state));
    }

    /// The CPU goes idle: the `sched_switch` from the task that left it.
    #[inline]
    fn trace_cpu_idle(&mut self, cpu: usize) {
        if self.cpus[cpu].left.is_some() {
            let prev = self.cpus[cpu].left.take();
            self.trace_sched_switch(cpu, prev, None);
        }
    }

    /// `sched_wakeup` (`ttwu_do_wakeup`): `pid` is runnable, bound for the
    /// CPU it will run on, or the one it last ran on if none is idle.
    /// Printed in the context of what runs on the target CPU (the waker's
    /// own context is not tracked).
    #[cold]
    #[inline(never)]
    fn trace_sched_wakeup(&mut self, pid: Pid) {
        let target = self
            .idle_cpu_for(pid)
            .unwrap_or(self.tasks[pid].cpu as usize);
        let (ctx, ctx_pid) = match self.cpus[target].cur {
            Some(c) => (self.tasks[c].comm.as_str(), self.tasks[c].pid),
            None => ("<idle>", 0),
        };
        let t = &self.tasks[pid];
        let (comm, tp) = (t.comm.as_str(), t.pid);
        // prio 120: DEFAULT_PRIO, as in `sched_switch`
        let h = crate::trace::Head {
            t: self.q.now(),
            comm: ctx,
            pid: ctx_pid,
            cpu: target,
            flags: ".....",
            event: "sched_wakeup",
        };
        self.tracer.emit(
            h,
            format_args!("comm={comm} pid={tp} prio=120 target_cpu={target:03}"),
        );
    }

    /// Arm task `pid`'s timer for a tick in the future, `at` being the
    /// tick's start: the timer joins the others that expire on that tick
    /// (`enqueue_timer`), and the tick's timer softirq (`run_timer_slot`)
    /// wakes them all, up to `wakeup_jitter` late. One timer base stands for
    /// the CPUs' own. False if `at` is not a tick to come within
    /// `TIMER_SLOTS` ticks (the caller queues a wakeup of its own).
    fn arm_tick_timer(&mut self, pid: Pid, gen: u32, at: Ns) -> bool {
        let now = self.q.now();
        if at <= now {
            return false;
        }
        let j = self.jif.at_far(at);
        if self.jif.start_of(j) != at || j - self.jif.at(now) >= TIMER_SLOTS as u64 {
            return false;
        }
        if self.timer_slots.is_empty() {
            self.timer_slots = vec![Vec::new(); TIMER_SLOTS];
        }
        let slot = (j % TIMER_SLOTS as u64) as usize;
        if self.timer_slots[slot].is_empty() {
            let late = self.wakeup_lateness();
            self.q
                .schedule(at + late, Ev::TimerTick { slot: slot as u32 });
        }
        self.timer_slots[slot].push((pid as u32, gen));
        true
    }

    /// A timer that wakes sleeping task `pid` at tick start `at` unless the
    /// task has woken or slept again since: `SleepUntil`'s, and a
    /// `timer_list` whose callback wakes a kthread, as a delayed work's does
    /// its worker. It joins the tick's other timers; a time that is not a
    /// tick within reach gets a wakeup of its own.
    pub(crate) fn wake_at(&mut self, pid: Pid, at: Ns) {
        let gen = self.tasks[pid].gen;
        if !self.arm_tick_timer(pid, gen, at) {
            let late = self.wakeup_lateness();
            self.q.schedule(
                at.max(self.q.now()) + late,
                Ev::Wake {
                    pid: pid as u32,
                    gen,
                },
            );
        }
    }

    /// How late a timer's wakeup comes: uniform in [0, `wakeup_jitter`)
    /// (seeded; no draw when it is 0).
    pub(crate) fn wakeup_lateness(&mut self) -> Ns {
        let j = self.sc.machine.cost.wakeup_jitter;
        if j > 0 {
            self.rng.below(j)
        } else {
            0
        }
    }

    /// The timer softirq of a tick (`expire_timers`): the tick's task
    /// timers fire one after another, each waking its task unless the task
    /// was woken or its timer rearmed since. The order is a seeded shuffle.
    /// A kernel CPU walks its own bucket newest first (`enqueue_timer` adds
    /// at the head), but which CPU's base holds a timer, and which CPU
    /// expires it under NOHZ, is not modelled; one fixed order for all made
    /// every seed of 10 dd bs=1M the same run.
    pub(super) fn run_timer_slot(&mut self, slot: usize) {
        let mut timers = std::mem::take(&mut self.timer_slots[slot]);
        for i in (1..timers.len()).rev() {
            let k = self.rng.below(i as u64 + 1) as usize;
            timers.swap(i, k);
        }
        for &(pid, _) in timers.iter() {
            self.prefetch_task(pid as usize);
        }
        for &(pid, gen) in timers.iter() {
            let pid = pid as usize;
            if self.tasks[pid].gen == gen && self.tasks[pid].state == RunState::Sleeping {
                self.wake_up_process(pid);
            }
        }
        timers.clear();
        if self.timer_slots[slot].is_empty() {
            self.timer_slots[slot] = timers;
        }
    }

    /// `wake_up_process`: a sleeping task becomes runnable and pays the
    /// wakeup/switch cost (added to its next burst) when it gets a CPU.
    pub fn wake_up_process(&mut self, pid: Pid) {
        if self.tasks[pid].state != RunState::Sleeping {
            return;
        }
        self.tasks[pid].gen = self.tasks[pid].gen.wrapping_add(1);
        self.tasks[pid].woken = true;
        self.psi_wakeup(pid);
        if self.tracer.on.sched_wakeup {
            self.trace_sched_wakeup(pid);
        }
        if self.rq.autogroup && !self.tasks[pid].kthread {
            self.rq.group_nr_running += 1;
        }
        self.cpu_request(pid, 0, 0);
    }

    /// Start a task that has never run.
    pub fn start_task(&mut self, pid: Pid) {
        self.wake_up_process(pid);
    }

    /// Dispatch a finished burst to the task's own logic.
    fn task_step(&mut self, pid: Pid) -> Action {
        if self.ended {
            return Action::Block;
        }
        // a reclaim throttle (mm/lru.rs) is slept before the task goes on
        if self.tasks[pid].reclaim_throttle.is_some() {
            if let Some(a) = self.reclaim_throttle_step(pid) {
                return a;
            }
        }
        // an OOM victim exits; an allocation reclaim failed goes on
        // (mm/oom_kill.rs)
        if !self.oom.is_empty() {
            if let Some(a) = self.oom_step(pid) {
                return a;
            }
        }
        // a dd writer's state is stepped in place (it is read at every
        // wakeup); the other bodies are taken and put back
        if let Some(super::Body::Dd(_)) = &self.tasks[pid].body {
            return self.dd_step(pid);
        }
        self.task_step_taken(pid)
    }

    /// `task_step` for the bodies other than a dd writer's: they run a few
    /// thousand times a run where dd writers run hundreds of thousands, so
    /// they are kept out of line, and the writers' path stays small.
    #[inline(never)]
    fn task_step_taken(&mut self, pid: Pid) -> Action {
        let body = self.tasks[pid].body.take().expect("task body in use");
        let (body, action) = match body {
            super::Body::Dd(_) => unreachable!("dd bodies are stepped in place"),
            super::Body::Kworker => (super::Body::Kworker, Action::Block),
            super::Body::Driver(dev) => (super::Body::Driver(dev), self.driver_step(pid, dev)),
            super::Body::FsMark(mut f) => {
                let a = self.fs_mark_step(pid, &mut f);
                (super::Body::FsMark(f), a)
            }
            super::Body::Flusher(mut f) => {
                let a = self.flusher_step(pid, &mut f);
                (super::Body::Flusher(f), a)
            }
            super::Body::Launcher(mut l) => {
                let a = self.launcher_step(&mut l);
                (super::Body::Launcher(l), a)
            }
            super::Body::Fio(mut f) => {
                let a = self.fio_step(pid, &mut f);
                (super::Body::Fio(f), a)
            }
            super::Body::Kswapd(mut st) => {
                let a = self.kswapd_step(pid, &mut st);
                (super::Body::Kswapd(st), a)
            }
            super::Body::Simoop(mut t) => {
                let a = self.simoop_step(pid, &mut t);
                (super::Body::Simoop(t), a)
            }
            super::Body::BdiWq(mut running) => {
                let a = self.bdi_wq_step(pid, &mut running);
                (super::Body::BdiWq(running), a)
            }
        };
        self.tasks[pid].body = Some(body);
        action
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::{Body, Kernel, Pid};
    use crate::scenario::Scenario;

    fn machine(cpus: u32, sched: &str) -> Kernel {
        let toml = format!(
            "[machine]\ncpus = {cpus}\nsched = \"{sched}\"\n\
             [devices.sda]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"sda\"\n\
             [jobs.dd]\nnumjobs = 1\nbs = \"1M\"\n[run]\nduration = \"1s\"\nwarmup = \"0s\"\n"
        );
        let sc = Scenario::load_str(&toml, "t.toml", "t", &[]).unwrap();
        Kernel::new(sc, crate::trace::Tracer::disabled())
    }

    /// A 2-CPU machine with kernel.sched_autogroup_enabled=1.
    fn autogroup(sched: &str) -> Kernel {
        let mut k = machine(2, sched);
        k.rq.autogroup = true;
        k
    }

    /// A task of the workload (in the autogroup), runnable and queued.
    fn group_task(k: &mut Kernel) -> Pid {
        let p = k.new_task("dd".into(), Body::Kworker, Some(0));
        k.rq.group_nr_running += 1;
        k.rq_enqueue(p);
        p
    }

    /// A queued task with the given vruntime and deadline (ns).
    fn queued(k: &mut Kernel, vruntime: u64, deadline: u64) -> Pid {
        let p = k.new_task("kworker/0:1".into(), Body::Kworker, None);
        k.tasks[p].se.vruntime = vruntime;
        k.tasks[p].se.deadline = deadline;
        k.rq_enqueue(p);
        p
    }

    #[test]
    fn task_timers_of_one_tick_fire_together_in_one_softirq() {
        use crate::kernel::{Action, Ev, RunState};
        let mut k = machine(1, "fifo");
        // the CPU is taken: woken tasks queue in the order they are woken
        let busy = k.new_task("busy".into(), Body::Kworker, None);
        k.cpus[0].cur = Some(busy);
        k.tasks[busy].state = RunState::Running;
        let tick = k.jif.start_of(k.jiffies() + 50);
        let ps: Vec<Pid> = (0..3)
            .map(|i| k.new_task(format!("t{i}"), Body::Kworker, None))
            .collect();
        let before = k.q.len();
        for &p in &ps {
            k.set_sleep_state(p, Action::SleepUntil(tick));
        }
        // one softirq event for the three timers
        assert_eq!(k.q.len(), before + 1);
        // a time that is not a tick's start, or past the kept ticks: a
        // wakeup of its own
        let odd = k.new_task("odd".into(), Body::Kworker, None);
        k.set_sleep_state(odd, Action::SleepUntil(tick + 1));
        let far = k.new_task("far".into(), Body::Kworker, None);
        let far_tick = k.jif.start_of(k.jiffies() + super::TIMER_SLOTS as u64);
        k.set_sleep_state(far, Action::SleepUntil(far_tick));
        assert_eq!(k.q.len(), before + 3);
        // woken early (a signal, say): its timer no longer wakes it
        k.wake_up_process(ps[1]);
        let jitter = k.sc.machine.cost.wakeup_jitter;
        let (at, slot) = loop {
            if let (at, Ev::TimerTick { slot }) = k.q.pop().expect("the tick's event") {
                break (at, slot);
            }
        };
        assert!(at >= tick && at < tick + jitter.max(1));
        k.run_timer_slot(slot as usize);
        // the other two in the softirq's seeded order (seed 1: newest first)
        assert_eq!(
            k.rq.fifo.iter().copied().collect::<Vec<_>>(),
            [ps[1], ps[2], ps[0]]
        );
        assert!(k.timer_slots[slot as usize].is_empty());
        assert_eq!(k.tasks[odd].state, RunState::Sleeping);
    }

    #[test]
    fn the_slice_is_the_base_slice_scaled_by_log2_of_the_cpus_up_to_8() {
        // update_sysctl with SCHED_TUNABLESCALING_LOG: 1 + ilog2(min(cpus, 8))
        assert_eq!(machine(1, "eevdf").rq.vslice, 700_000);
        assert_eq!(machine(2, "eevdf").rq.vslice, 1_400_000);
        assert_eq!(machine(6, "eevdf").rq.vslice, 2_100_000);
        assert_eq!(machine(64, "eevdf").rq.vslice, 2_800_000);
    }

    #[test]
    fn the_pick_is_the_eligible_task_with_the_earliest_deadline() {
        let mut k = machine(2, "eevdf");
        let a = queued(&mut k, 0, 5_000);
        let b = queued(&mut k, 1_000, 2_400);
        // the earliest deadline, but vruntime 9000 > V = 10000 / 3
        let c = queued(&mut k, 9_000, 1_000);
        assert_eq!(k.avg_vruntime(), (3_333, 3));
        assert_eq!(k.pick_queued(3_333), Some(b));
        assert_eq!(k.rq_pop(), Some(b));
        // V = 4500: a (deadline 5000) is the only eligible one left
        assert_eq!(k.rq_pop(), Some(a));
        // nothing eligible among the queued: the least vruntime
        assert_eq!(k.pick_queued(0), Some(c));
        // FIFO takes them in the order they came
        let mut f = machine(2, "fifo");
        let a = queued(&mut f, 0, 5_000);
        queued(&mut f, 1_000, 2_400);
        assert_eq!(f.rq_pop(), Some(a));
    }

    #[test]
    fn a_waking_task_gets_its_lag_back() {
        let mut k = machine(2, "eevdf");
        for v in [10_000_000, 12_000_000, 14_000_000] {
            queued(&mut k, v, v + 1_400_000);
        }
        assert_eq!(k.avg_vruntime(), (12_000_000, 3));
        // a positive lag comes back scaled by (n + 1) / n (PLACE_LAG)
        let p = k.new_task("kworker/0:2".into(), Body::Kworker, None);
        k.tasks[p].se.vlag = 300_000;
        k.place_entity(p);
        assert_eq!(k.tasks[p].se.vruntime, 12_000_000 - 400_000);
        assert_eq!(k.tasks[p].se.deadline, 11_600_000 + 1_400_000);
        // a negative lag is kept while V is below the task's vruntime...
        k.tasks[p].se.vlag = -2_000_000;
        k.tasks[p].se.delayed = true;
        k.tasks[p].se.vruntime = 13_000_000;
        k.place_entity(p);
        assert_eq!(k.tasks[p].se.vruntime, 13_000_000);
        assert!(!k.tasks[p].se.delayed);
        // ...and gone once V has passed it (DELAY_ZERO): placed at V
        k.tasks[p].se.delayed = true;
        k.tasks[p].se.vruntime = 11_000_000;
        k.place_entity(p);
        assert_eq!(k.tasks[p].se.vruntime, 12_000_000);
    }

    #[test]
    fn the_lag_kept_over_a_sleep_is_clamped_to_two_slices_or_a_tick() {
        let mut k = machine(2, "eevdf");
        queued(&mut k, 50_000_000, 51_400_000);
        let p = k.new_task("dd".into(), Body::Kworker, None);
        // V = 50 ms; the limit is max(2 * 1.4 ms, 4 ms at HZ=250) = 4 ms
        k.tasks[p].se.vruntime = 10_000_000;
        k.save_lag(p);
        assert_eq!(k.tasks[p].se.vlag, 4_000_000);
        assert!(!k.tasks[p].se.delayed);
        k.tasks[p].se.vruntime = 51_000_000;
        k.save_lag(p);
        assert_eq!(k.tasks[p].se.vlag, -1_000_000);
        assert!(k.tasks[p].se.delayed);
    }

    #[test]
    fn an_empty_queue_keeps_the_average_the_last_sleeper_saw() {
        let mut k = machine(2, "eevdf");
        // two tasks sleep: `ahead`, 1 ms past V (delayed), then `last`,
        // the only one queued, at V = 50 ms
        let last = queued(&mut k, 50_000_000, 51_400_000);
        let ahead = k.new_task("dd".into(), Body::Kworker, None);
        k.tasks[ahead].se.vruntime = 51_000_000;
        k.save_lag(ahead);
        k.save_lag(last);
        k.rq_dequeue(last);
        assert_eq!(k.avg_vruntime(), (50_000_000, 0));
        // a task with no lag wakes to the empty queue: placed at that
        // average, behind the delayed sleeper, not at 0 far behind it
        let p = k.new_task("dd".into(), Body::Kworker, None);
        k.place_entity(p);
        assert_eq!(k.tasks[p].se.vruntime, 50_000_000);
        // the delayed one wakes where it slept, 1 ms ahead
        k.rq_enqueue(p);
        k.place_entity(ahead);
        assert_eq!(k.tasks[ahead].se.vruntime, 51_000_000);
    }

    #[test]
    fn a_woken_kernel_thread_is_placed_level_with_the_group_and_wins_the_pick() {
        for sched in ["fifo", "eevdf"] {
            let mut k = autogroup(sched);
            k.cpus[0].gvr = 5_000_000;
            k.cpus[1].gvr = 9_000_000;
            let g = group_task(&mut k);
            let w = k.new_task("kworker/u4:0".into(), Body::Kworker, None);
            assert!(k.tasks[w].kthread && !k.tasks[g].kthread);
            k.tasks[w].cpu = 0;
            k.tasks[w].se.vruntime = 1;
            k.place_kthread(w);
            assert_eq!(k.tasks[w].se.vruntime, 5_000_000, "{sched}");
            k.rq_enqueue(w);
            assert_eq!(k.rq.kq.len(), 1);
            // CPU 1's queue does not hold it, and CPU 1 has group work
            assert_eq!(k.kq_best(1, false), None);
            assert_eq!(k.pick_next(0), Some(w), "{sched}");
            assert_eq!(k.pick_next(0), Some(g), "{sched}");
        }
    }

    #[test]
    fn a_kernel_thread_ahead_of_the_group_waits_unless_the_cpu_would_idle() {
        let mut k = autogroup("fifo");
        k.cpus[0].gvr = 5_000_000;
        let w = k.new_task("kworker/u4:0".into(), Body::Kworker, None);
        k.tasks[w].cpu = 0;
        k.tasks[w].se.vruntime = 5_000_001;
        k.rq_enqueue(w);
        let g = group_task(&mut k);
        assert_eq!(k.pick_next(0), Some(g));
        // nothing of the group's left to run: CPU 1 pulls the thread, which
        // keeps its distance to the group's entity (+1 ns)
        k.cpus[1].gvr = 7_000_000;
        assert_eq!(k.pick_next(1), Some(w));
        k.migrate_kthread(1, w);
        assert_eq!(
            (k.tasks[w].cpu as usize, k.tasks[w].se.vruntime),
            (1, 7_000_001)
        );
    }

    #[test]
    fn the_root_queue_clamps_either_sides_lead_to_the_lag_limit() {
        // limit: max(2 slices of 1.4 ms, a 4 ms tick at HZ=250) = 4 ms, in
        // the entity's own virtual time (the group's at half weight: 8 ms)
        let mut k = autogroup("fifo");
        k.rq.group_nr_running = 5;
        assert_eq!(k.group_scale(), 2);
        assert_eq!(k.lag_limit(), 4_000_000);
        let w = k.new_task("kworker/u4:0".into(), Body::Kworker, None);
        k.tasks[w].cpu = 0;
        // the group slept on this CPU while the thread ran 100 ms
        k.tasks[w].se.vruntime = 100_000_000;
        assert!(!k.root_prefers_kthread(0, w));
        assert_eq!(k.cpus[0].gvr, 92_000_000);
        // the thread fell 50 ms behind: it keeps 4 ms of it
        k.cpus[0].gvr = 150_000_000;
        assert!(k.root_prefers_kthread(0, w));
        assert_eq!(k.tasks[w].se.vruntime, 146_000_000);
    }

    #[test]
    fn the_group_entity_runs_at_its_share_of_the_groups_weight() {
        // calc_group_shares: 1024 split over the CPUs the group's runnable
        // tasks spread over; one CPU's entity then has 512 and its vruntime
        // advances at twice the wall clock
        let mut k = autogroup("fifo");
        assert_eq!(k.group_scale(), 1);
        let g = group_task(&mut k);
        k.charge_vruntime(0, g, 1_000_000);
        assert_eq!(k.cpus[0].gvr, 1_000_000);
        group_task(&mut k);
        group_task(&mut k);
        k.charge_vruntime(0, g, 1_000_000);
        assert_eq!(k.cpus[0].gvr, 3_000_000);
        // a kernel thread's own vruntime, at nice 0, moves with the clock;
        // under FIFO a group task has none
        let w = k.new_task("kworker/u4:0".into(), Body::Kworker, None);
        k.charge_vruntime(1, w, 1_000_000);
        assert_eq!((k.tasks[w].se.vruntime, k.cpus[1].gvr), (1_000_000, 0));
        assert_eq!(k.tasks[g].se.vruntime, 0);
    }

    #[test]
    fn a_workload_burst_varies_by_the_spread_around_its_estimate() {
        let with = |spread: u32| {
            let toml = format!(
                "[machine]\ncpus = 2\n[machine.cost]\nspread = {spread}\n\
                 [devices.sda]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"sda\"\n\
                 [jobs.dd]\nnumjobs = 1\nbs = \"1M\"\n[run]\nduration = \"1s\"\nwarmup = \"0s\"\n"
            );
            let sc = Scenario::load_str(&toml, "t.toml", "t", &[]).unwrap();
            Kernel::new(sc, crate::trace::Tracer::disabled())
        };
        // spread 0: the estimate exactly, and the PRNG is not drawn from
        let mut k = with(0);
        let mut same = with(0);
        let dd = k.new_task("dd".into(), Body::Kworker, Some(0));
        same.new_task("dd".into(), Body::Kworker, Some(0));
        assert_eq!(k.vary_work(dd, 200, 4_000_000), (200, 4_000_000));
        assert_eq!(k.rng.next_u64(), same.rng.next_u64());

        // spread 30: one factor in [0.7, 1.3] in 0.1% steps for user and
        // system time; the mean is the estimate
        let mut k = with(30);
        let dd = k.new_task("dd".into(), Body::Kworker, Some(0));
        let kworker = k.new_task("kworker/0:1".into(), Body::Kworker, None);
        let (n, est) = (20_000u64, 1_000_000u64);
        let (mut lo, mut hi, mut sum) = (u64::MAX, 0, 0);
        for _ in 0..n {
            let (user, sys) = k.vary_work(dd, est, est);
            assert_eq!(user, sys);
            assert!((700_000..=1_300_000).contains(&sys), "{sys}");
            assert_eq!(sys % 1_000, 0, "0.1% steps of 1 ms");
            (lo, hi, sum) = (lo.min(sys), hi.max(sys), sum + sys);
        }
        assert!(lo < 705_000 && hi > 1_295_000, "{lo}..{hi}");
        let mean = sum / n;
        assert!(mean.abs_diff(est) < est / 100, "mean {mean}");
        // a kernel thread's work is not varied
        assert_eq!(k.vary_work(kworker, 0, est), (0, est));
    }

    #[test]
    fn the_split_queue_picks_as_one_ordered_by_deadline_would() {
        // tasks placed by place_entity (deadline = vruntime + slice) sit in
        // a heap, the others in a list; the pick must be pick_eevdf's over
        // all of them, ties to the lower pid
        let mut k = machine(2, "eevdf");
        let slice = k.rq.vslice;
        for round in 0..200 {
            let n = 1 + k.rng.below(12);
            let mut ps = Vec::new();
            for _ in 0..n {
                let vr = k.rng.below(4 * slice);
                let dl = if k.rng.below(3) == 0 {
                    vr + k.rng.below(2 * slice) // preempted: any deadline
                } else {
                    vr + slice
                };
                ps.push(queued(&mut k, vr, dl));
            }
            while !k.rq.cfs.is_empty() {
                let (v, _) = k.avg_vruntime();
                let queued_now: Vec<Pid> = ps
                    .iter()
                    .copied()
                    .filter(|&p| k.tasks[p].state != crate::kernel::RunState::Running)
                    .collect();
                let want = queued_now
                    .iter()
                    .filter(|&&p| k.tasks[p].se.vruntime <= v)
                    .min_by_key(|&&p| (k.tasks[p].se.deadline, p))
                    .or_else(|| {
                        queued_now
                            .iter()
                            .min_by_key(|&&p| (k.tasks[p].se.vruntime, p))
                    })
                    .copied();
                let got = k.rq_pop();
                assert_eq!(got, want, "round {round}");
                k.tasks[got.unwrap()].state = crate::kernel::RunState::Running;
            }
        }
    }

    #[test]
    fn a_deadline_passed_counts_at_the_next_tick() {
        use crate::kernel::{Ev, RunState};
        // update_deadline runs from the tick: a task past its deadline is
        // not rescheduled for it until a tick has come since
        let mut k = machine(1, "eevdf");
        let tick = k.jif.start_of(k.jiffies() + 1);
        let run = k.new_task("dd".into(), Body::Kworker, None);
        let far = 10 * k.rq.vslice;
        let wait = queued(&mut k, 0, far);
        let at = |k: &mut Kernel, t: crate::sim::Ns| {
            k.q.schedule(
                t,
                Ev::Wake {
                    pid: 0,
                    gen: u32::MAX,
                },
            );
            while k.now() < t {
                k.q.pop();
            }
        };
        // 0.5 ms before the tick, 0.25 ms past its deadline
        at(&mut k, tick - 500_000);
        k.cpus[0].cur = Some(run);
        k.cpus[0].seg_start = k.now();
        k.tasks[run].state = RunState::Running;
        k.tasks[run].se.vruntime = 250_000;
        k.tasks[run].se.deadline = 0;
        assert!(!k.should_preempt(0, run));
        assert_eq!(k.tasks[run].se.deadline, 0);
        // the tick has come: a new deadline, and the waiting task's turn
        at(&mut k, tick + 1);
        k.tasks[run].se.vruntime += 500_001; // accounted
        k.cpus[0].seg_start = k.now();
        assert!(k.should_preempt(0, run));
        assert_eq!(k.tasks[run].se.deadline, 750_001 + k.rq.vslice);
        assert_eq!(k.pick_queued(k.avg_vruntime().0), Some(wait));
    }
}
