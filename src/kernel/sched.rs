//! CPUs and the run queue (kernel/sched). A deliberately small model: one
//! FIFO run queue, `machine.cpus` cores, round-robin slices of
//! `machine.cost.sched_slice`. A task that blocks counts a voluntary context
//! switch; a task whose slice ends while others wait is preempted and counts
//! an involuntary one, as in /proc/PID/status.

use super::{Action, Ev, Kernel, Pid, RunState};
use crate::sim::Ns;

#[derive(Default, Clone, Debug)]
pub struct Cpu {
    pub cur: Option<Pid>,
    pub gen: u32,
    /// Length of the running slice event.
    pub slice: Ns,
    /// When the current task got this CPU (its slice counts from here,
    /// across consecutive bursts).
    pub since: Ns,
    pub busy_ns: Ns,
}

impl Kernel {
    /// Ask for `user + sys` ns of CPU for `pid`; the task's `step` runs when
    /// the burst is done.
    fn cpu_request(&mut self, pid: Pid, user: Ns, sys: Ns) {
        let t = &mut self.tasks[pid];
        t.burst_left = user + sys;
        t.burst_user_left = user;
        t.state = RunState::Runnable;
        // prefer the CPU the task last ran on (cache affinity), else any idle
        let last = t.cpu;
        let cpu = if self.cpus[last].cur.is_none() {
            Some(last)
        } else {
            self.cpus.iter().position(|c| c.cur.is_none())
        };
        match cpu {
            Some(c) => {
                self.dispatch(c, pid);
            }
            None => {
                // check_preempt_wakeup: a task woken from sleep wants the
                // CPU it last ran on
                if self.tasks[pid].woken {
                    if let Some(cur) = self.cpus[last].cur {
                        self.tasks[cur].need_resched = true;
                    }
                }
                self.runqueue.push_back(pid);
            }
        }
    }

    /// `need_resched()` as `cond_resched()` callers see it: a woken task
    /// wants this CPU, or the task's slice is used up while others wait.
    /// Reading it clears the flag (the caller reschedules).
    pub fn need_resched(&mut self, pid: Pid) -> bool {
        let cpu = self.tasks[pid].cpu;
        let expired = !self.runqueue.is_empty()
            && self.q.now() - self.cpus[cpu].since >= self.sc.machine.cost.sched_slice;
        std::mem::take(&mut self.tasks[pid].need_resched) || expired
    }

    /// Give `cpu` to `pid`. Returns false if the task (just woken) went
    /// back to sleep at once, leaving the CPU free.
    fn dispatch(&mut self, cpu: usize, pid: Pid) -> bool {
        if self.tasks[pid].woken {
            // A woken task's logic continues as soon as it is on a CPU; the
            // wakeup cost is added to the burst it asks for.
            self.tasks[pid].woken = false;
            self.cpus[cpu].cur = Some(pid);
            self.tasks[pid].state = RunState::Running;
            self.tasks[pid].cpu = cpu;
            let w = self.sc.machine.cost.wakeup;
            match self.task_step(pid) {
                Action::Cpu { user, sys } => {
                    let t = &mut self.tasks[pid];
                    let owed = std::mem::take(&mut t.owed_sys);
                    t.burst_left = user + sys + w + owed;
                    t.burst_user_left = user;
                }
                other => {
                    // Straight back to sleep: charge the wakeup, free the CPU.
                    self.tasks[pid].stime += w;
                    self.cpus[cpu].busy_ns += w;
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
        let used = now - self.cpus[cpu].since;
        let left_in_slice = self.sc.machine.cost.sched_slice.saturating_sub(used).max(1);
        let slice = self.tasks[pid].burst_left.min(left_in_slice).max(1);
        let c = &mut self.cpus[cpu];
        c.cur = Some(pid);
        c.gen += 1;
        c.slice = slice;
        let gen = c.gen;
        let t = &mut self.tasks[pid];
        t.state = RunState::Running;
        t.cpu = cpu;
        self.q.schedule(
            now + slice,
            Ev::CpuSlice {
                cpu: cpu as u32,
                gen,
            },
        );
    }

    /// The slice of the task on `cpu` is used up and others wait: preempt it.
    fn should_preempt(&self, cpu: usize) -> bool {
        !self.runqueue.is_empty()
            && self.q.now() - self.cpus[cpu].since >= self.sc.machine.cost.sched_slice
    }

    fn preempt(&mut self, cpu: usize, pid: Pid) {
        self.tasks[pid].nivcsw += 1;
        self.tasks[pid].need_resched = false; // schedule() clears it
        self.tasks[pid].state = RunState::Runnable;
        self.runqueue.push_back(pid);
        self.schedule_next(cpu);
    }

    fn schedule_next(&mut self, cpu: usize) {
        self.cpus[cpu].cur = None;
        while let Some(next) = self.runqueue.pop_front() {
            if self.dispatch(cpu, next) {
                break;
            }
        }
    }

    pub(super) fn cpu_slice_end(&mut self, cpu: usize, gen: u32) {
        if self.cpus[cpu].gen != gen {
            return;
        }
        let Some(pid) = self.cpus[cpu].cur else {
            return;
        };
        let slice = self.cpus[cpu].slice;
        self.cpus[cpu].busy_ns += slice;
        {
            let t = &mut self.tasks[pid];
            let user = slice.min(t.burst_user_left);
            t.burst_user_left -= user;
            t.utime += user;
            t.stime += slice - user;
            t.burst_left -= slice;
        }
        if self.tasks[pid].burst_left > 0 {
            if self.should_preempt(cpu) {
                self.preempt(cpu, pid);
            } else {
                if self.q.now() - self.cpus[cpu].since >= self.sc.machine.cost.sched_slice {
                    self.cpus[cpu].since = self.q.now(); // a new slice, nobody waiting
                }
                self.run_burst(cpu, pid);
            }
            return;
        }
        // The burst is done: the task's logic continues on this CPU.
        let action = self.task_step(pid);
        self.apply_action(pid, cpu, action);
    }

    fn apply_action(&mut self, pid: Pid, cpu: usize, action: Action) {
        match action {
            Action::Cpu { user, sys } => {
                let t = &mut self.tasks[pid];
                let owed = std::mem::take(&mut t.owed_sys);
                t.burst_left = (user + sys + owed).max(1);
                t.burst_user_left = user;
                // Continue on the same CPU unless the slice is used up and
                // others wait.
                if self.should_preempt(cpu) {
                    self.preempt(cpu, pid);
                } else {
                    if self.q.now() - self.cpus[cpu].since >= self.sc.machine.cost.sched_slice {
                        self.cpus[cpu].since = self.q.now();
                    }
                    self.run_burst(cpu, pid);
                }
            }
            other => {
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
        let t = &mut self.tasks[pid];
        t.need_resched = false; // schedule() clears TIF_NEED_RESCHED
        match action {
            Action::SleepUntil(at) => {
                t.state = RunState::Sleeping;
                t.nvcsw += 1;
                t.gen = t.gen.wrapping_add(1);
                let gen = t.gen;
                let j = self.sc.machine.cost.wakeup_jitter;
                let jitter = if j > 0 { self.rng.below(j) } else { 0 };
                self.q.schedule(
                    at.max(self.q.now()) + jitter,
                    Ev::Wake {
                        pid: pid as u32,
                        gen,
                    },
                );
            }
            Action::Block => {
                t.state = RunState::Sleeping;
                t.nvcsw += 1;
                t.gen = t.gen.wrapping_add(1);
            }
            Action::Exit => t.state = RunState::Dead,
            Action::Cpu { .. } => unreachable!("a burst is not an exit"),
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
        let body = self.tasks[pid].body.take().expect("task body in use");
        let (body, action) = match body {
            super::Body::Dd(mut d) => {
                let a = self.dd_step(pid, &mut d);
                (super::Body::Dd(d), a)
            }
            super::Body::Kworker => (super::Body::Kworker, Action::Block),
            super::Body::Loop(dev) => (super::Body::Loop(dev), self.loop_step(pid, dev)),
            super::Body::FsMark(mut f) => {
                let a = self.fs_mark_step(pid, &mut f);
                (super::Body::FsMark(f), a)
            }
            super::Body::Flusher(mut f) => {
                let a = self.flusher_step(pid, &mut f);
                (super::Body::Flusher(f), a)
            }
        };
        self.tasks[pid].body = Some(body);
        action
    }

    /// Is `pid` currently waiting for an explicit wakeup (not a timer)?
    pub fn is_blocked(&self, pid: Pid) -> bool {
        self.tasks[pid].state == RunState::Sleeping
    }
}
