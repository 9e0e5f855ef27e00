//! Pressure stall information for memory and IO (kernel/sched/psi.c, as
//! of 6.1; 6.18 counts the same): the task counts and states per CPU, the
//! times each state holds, their aggregation over the CPUs and the 2 s
//! running averages that `/proc/pressure/memory` and `/proc/pressure/io`
//! print.
//!
//! A task's PSI flags (`Task::psi_flags`, `TSK_*`) count on the CPU it is
//! on or last ran on (`task_cpu`): TSK_RUNNING while it is runnable or
//! running, TSK_IOWAIT while it sleeps in `io_schedule()`, TSK_MEMSTALL
//! while it is inside a memstall section (`psi_memstall_enter` ..
//! `psi_memstall_leave`), sleeping or not, and TSK_MEMSTALL_RUNNING while
//! both. Each CPU derives its states from its counts (`test_state`), and a
//! CPU whose current task is in a memstall is in memory FULL too.
//!
//! Why a task sleeps is set where the sleep starts (`Kernel::stalled`,
//! a [`Stall`]): `Io` for `io_schedule()` (balance_dirty_pages' pause,
//! a wait for a read, a direct IO, a request tag, page writeback in
//! fsync, an io_uring completion), `Mem` for a sleep inside reclaim (a
//! shrinker's, `reclaim_throttle`'s). The memstall sections are held
//! (`Task::psi_hold`) by kswapd's `balance_pgdat` (its passes, its
//! throttle and shrinker sleeps), by a sleep started with `Stall::Mem`
//! until the task runs again, and by direct reclaim (`__perform_reclaim`)
//! from the call until its CPU time (`Psi::owed`, the first part
//! of the task's next burst) has run; a direct reclaimer that sleeps for
//! another reason before that leaves the section and enters it again
//! when it runs.
//!
//! What is simplified: wbsim has one run queue shared by the CPUs, so a
//! queued task counts on the CPU it last ran on, and moves its counts to
//! the CPU that picks it (a migration, as `psi_ttwu_dequeue` and the
//! enqueue on the new CPU do). The averaging work is done for the exact
//! end of each `PSI_FREQ` period, when the first PSI change or read after
//! it comes (no CPU's state changed in between, so the times are those of
//! the period's end); the kernel's delayed work runs up to a jiffy late,
//! and stops while the system is idle (its catch-up gives the same
//! zeros). No event is added: the simulation runs as without PSI. A
//! read (each `run.sample_interval`) folds the per-CPU times as
//! `psi_show` does. With cgroups, each non-root cgroup has a group of its
//! own (`cgroup->psi`, whose per-CPU counts are its tasks'; one level,
//! as the scenario's cgroups are), changed beside the system's on every
//! task change (`psi_group_change` for each group of the task's walk), and
//! read at the end into `cgroup/NAME/io.pressure` and `memory.pressure`
//! (the root's are the system's). CPU and IRQ pressure and triggers are
//! not modelled, nor the memstalls this model has no cause for:
//! refaults of workingset pages (`folio_wait_bit_common`, readahead of
//! them), swap-in, compaction and `memory.high` throttling. Memcg reclaim
//! at `memory.max` (`try_charge_memcg`) holds a memstall as direct reclaim
//! does (mm/memcontrol.rs).

use super::{Kernel, Pid, RunState};
use crate::sim::{Ns, NSEC_PER_SEC};

/// Why a task goes to sleep, as PSI counts it. Set where the sleep
/// starts, read when the task leaves its CPU, cleared when it wakes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Stall {
    /// Not a stall (a timer, an idle kernel thread, a lock).
    #[default]
    None,
    /// `io_schedule()`: the task is `in_iowait` while it sleeps.
    Io,
    /// A sleep inside a memstall section (reclaim).
    Mem,
}

/// `enum psi_task_count`.
pub const NR_IOWAIT: usize = 0;
pub const NR_MEMSTALL: usize = 1;
pub const NR_RUNNING: usize = 2;
pub const NR_MEMSTALL_RUNNING: usize = 3;
const NR_PSI_TASK_COUNTS: usize = 4;
/// The task flags (`TSK_*`), one bit per count.
pub const TSK_IOWAIT: u8 = 1 << NR_IOWAIT;
pub const TSK_MEMSTALL: u8 = 1 << NR_MEMSTALL;
pub const TSK_RUNNING: u8 = 1 << NR_RUNNING;
pub const TSK_MEMSTALL_RUNNING: u8 = 1 << NR_MEMSTALL_RUNNING;

/// `enum psi_states`, the memory and IO ones and NONIDLE.
pub const PSI_IO_SOME: usize = 0;
pub const PSI_IO_FULL: usize = 1;
pub const PSI_MEM_SOME: usize = 2;
pub const PSI_MEM_FULL: usize = 3;
pub const PSI_NONIDLE: usize = 4;
const NR_PSI_STATES: usize = 5;

/// What holds a task in its memstall section (`Task::psi_hold`); it is
/// `in_memstall` while any does.
pub const HOLD_SECTION: u8 = 1;
/// A sleep started with `Stall::Mem`, until the task runs again.
pub const HOLD_SLEEP: u8 = 2;
/// Direct reclaim, until its CPU time has run.
pub const HOLD_RECLAIM: u8 = 4;

/// `EXP_10s`, `EXP_60s`, `EXP_300s`: 1/exp(2 s / window) as fixed point.
const EXP: [u64; 3] = [1677, 1981, 2034];
/// `FSHIFT`, `FIXED_1`.
const FSHIFT: u32 = 11;
pub const FIXED_1: u64 = 1 << FSHIFT;

/// `calc_load` (include/linux/sched/loadavg.h): one step of an
/// exponentially decaying average in fixed point, rounded up while it
/// rises.
pub fn calc_load(load: u64, exp: u64, active: u64) -> u64 {
    let mut newload = load * exp + active * (FIXED_1 - exp);
    if active >= load {
        newload += FIXED_1 - 1;
    }
    newload / FIXED_1
}

/// `fixed_power_int` (kernel/sched/loadavg.c): x^n in fixed point with
/// `frac_bits` bits, rounding each product.
pub fn fixed_power_int(mut x: u64, frac_bits: u32, mut n: u64) -> u64 {
    let mut result = 1u64 << frac_bits;
    if n > 0 {
        loop {
            if n & 1 == 1 {
                result *= x;
                result += 1 << (frac_bits - 1);
                result >>= frac_bits;
            }
            n >>= 1;
            if n == 0 {
                break;
            }
            x *= x;
            x += 1 << (frac_bits - 1);
            x >>= frac_bits;
        }
    }
    result
}

/// `calc_load_n`: n steps of `calc_load` toward `active`.
pub fn calc_load_n(load: u64, exp: u64, active: u64, n: u64) -> u64 {
    calc_load(load, fixed_power_int(exp, FSHIFT, n), active)
}

/// `calc_avgs`: decay the three averages over `missed` idle periods,
/// then sample `time` of `period` as a percentage.
pub fn calc_avgs(avg: &mut [u64; 3], missed: u64, time: Ns, period: Ns) {
    if missed > 0 {
        for (a, &e) in avg.iter_mut().zip(EXP.iter()) {
            *a = calc_load_n(*a, e, 0, missed);
        }
    }
    let pct = time * 100 / period.max(1) * FIXED_1;
    for (a, &e) in avg.iter_mut().zip(EXP.iter()) {
        *a = calc_load(*a, e, pct);
    }
}

/// `test_state` for the memory and IO states.
fn test_state(tasks: &[u32; NR_PSI_TASK_COUNTS], s: usize) -> bool {
    match s {
        PSI_IO_SOME => tasks[NR_IOWAIT] > 0,
        PSI_IO_FULL => tasks[NR_IOWAIT] > 0 && tasks[NR_RUNNING] == 0,
        PSI_MEM_SOME => tasks[NR_MEMSTALL] > 0,
        PSI_MEM_FULL => tasks[NR_MEMSTALL] > 0 && tasks[NR_RUNNING] == tasks[NR_MEMSTALL_RUNNING],
        _ => tasks[NR_IOWAIT] > 0 || tasks[NR_MEMSTALL] > 0 || tasks[NR_RUNNING] > 0,
    }
}

/// One CPU's part (`struct psi_group_cpu`).
#[derive(Clone, Debug, Default)]
pub struct PsiCpu {
    pub tasks: [u32; NR_PSI_TASK_COUNTS],
    pub state_mask: u8,
    /// The task on this CPU (TSK_ONCPU).
    pub curr: Option<Pid>,
    /// It is in a memstall (`cpu_curr(cpu)->in_memstall`).
    pub curr_memstall: bool,
    pub state_start: Ns,
    /// Time each state held, ns (the kernel's u32 buckets, unwrapped).
    pub times: [Ns; NR_PSI_STATES],
    pub times_prev: [Ns; NR_PSI_STATES],
    /// The running task's direct-reclaim CPU time runs out then, and its
    /// memstall ends (applied when anything next looks at this CPU).
    pub reclaim_end: Option<(Ns, Pid)>,
}

impl PsiCpu {
    /// `record_times`: the time since the last change goes to the states
    /// that held.
    fn record_times(&mut self, now: Ns) {
        let delta = now.saturating_sub(self.state_start);
        self.state_start = now;
        for s in 0..NR_PSI_STATES {
            if self.state_mask & (1 << s) != 0 {
                self.times[s] += delta;
            }
        }
    }

    /// The states the counts and the current task give (`test_state`
    /// for each, unrolled).
    #[inline]
    fn mask(&self) -> u8 {
        let t = &self.tasks;
        let (io, mem, run) = (t[NR_IOWAIT] > 0, t[NR_MEMSTALL] > 0, t[NR_RUNNING]);
        let mut m = 0;
        if io {
            m |= 1 << PSI_IO_SOME;
            if run == 0 {
                m |= 1 << PSI_IO_FULL;
            }
        }
        if mem {
            m |= 1 << PSI_MEM_SOME;
            if run == t[NR_MEMSTALL_RUNNING] {
                m |= 1 << PSI_MEM_FULL;
            }
        }
        if io || mem || run > 0 {
            m |= 1 << PSI_NONIDLE;
        }
        // a reclaiming CPU runs nothing productive: memory FULL
        if self.curr.is_some() && self.curr_memstall {
            m |= 1 << PSI_MEM_FULL;
        }
        debug_assert_eq!(
            m & !(1 << PSI_MEM_FULL),
            (0..NR_PSI_STATES)
                .filter(|&s| test_state(t, s))
                .fold(0, |a, s| a | 1 << s)
                & !(1 << PSI_MEM_FULL)
        );
        m
    }
}

/// The system's pressure (`psi_system`, `struct psi_group`): memory and
/// IO, the PSI_AVGS aggregator.
#[derive(Clone, Debug, Default)]
pub struct Psi {
    pub cpus: Vec<PsiCpu>,
    /// `total[PSI_AVGS]`: the stall times so far, ns.
    pub total: [Ns; 4],
    pub avg_total: [Ns; 4],
    /// The running averages (fixed point, FIXED_1 = 1%): avg10, avg60,
    /// avg300 per state.
    pub avg: [[u64; 3]; 4],
    pub avg_last_update: Ns,
    pub avg_next_update: Ns,
    /// `psi_period`: `PSI_FREQ` (2 * HZ + 1 jiffies) in ns.
    pub period: Ns,
    /// `NSEC_PER_SEC / HZ`, for `nsecs_to_jiffies`.
    pub tick_ns: Ns,
    /// Direct reclaim's CPU time each task still owes (in its
    /// `owed_sys`, then at the head of its burst): it is in a memstall
    /// until that has run. `Task::psi_owes` says a task has an entry.
    pub owed: std::collections::BTreeMap<Pid, Ns>,
    /// pressure.txt's lines so far.
    pub text: String,
    /// Each non-root cgroup's own pressure (`cgroup->psi`), by cgroup
    /// index (the root's is the system's, as in the kernel): the same
    /// per-CPU counts for the cgroup's tasks only. Empty without cgroups.
    pub groups: Vec<Psi>,
    /// The readings summary.json's `pressure` is made of.
    pub readings: crate::metrics::pressure::Readings,
}

impl Psi {
    /// `psi_init` and `group_init` at boot (time 0) for `ncpu` CPUs at
    /// `hz`.
    pub fn new(ncpu: usize, hz: u64) -> Psi {
        let hz = hz.max(1);
        let period = (2 * hz + 1) * (NSEC_PER_SEC / hz);
        Psi {
            cpus: vec![PsiCpu::default(); ncpu],
            period,
            tick_ns: (NSEC_PER_SEC / hz).max(1),
            avg_next_update: period,
            ..Default::default()
        }
    }

    /// `psi_group_change` on `cpu` at `now`: the counts `clear` and `set`
    /// name change, and the current task is (or is not) in a memstall;
    /// the time since the last change goes to the states that held.
    pub fn change(&mut self, cpu: usize, now: Ns, clear: u8, set: u8, curr_memstall: bool) {
        let c = &mut self.cpus[cpu];
        let mut bits = (clear | set) & ((1 << NR_PSI_TASK_COUNTS) - 1);
        while bits != 0 {
            let t = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if clear & (1 << t) != 0 {
                c.tasks[t] = c.tasks[t].saturating_sub(1);
            }
            if set & (1 << t) != 0 {
                c.tasks[t] += 1;
            }
        }
        c.curr_memstall = curr_memstall;
        let mask = c.mask();
        // record_times runs at every change in the kernel; while the
        // states hold, the time since `state_start` is the same sum
        // whether it is added now or at the next change of state (or read
        // by `collect`), so it is added only then
        if mask != c.state_mask || now < c.state_start {
            c.record_times(now);
            c.state_mask = mask;
        }
    }

    /// The current task of `cpu` changes (TSK_ONCPU moves).
    pub fn set_curr(&mut self, cpu: usize, now: Ns, curr: Option<Pid>, memstall: bool) {
        self.cpus[cpu].curr = curr;
        self.change(cpu, now, 0, 0, memstall && curr.is_some());
    }

    /// `collect_percpu_times` into `total`: each CPU's state times since
    /// the last collection (the states holding now counted up to `now`),
    /// weighted by its non-idle time in whole jiffies.
    pub fn collect(&mut self, now: Ns) {
        let mut deltas = [0u128; 4];
        let mut nonidle_total = 0u128;
        for c in &mut self.cpus {
            let mut times = [0; NR_PSI_STATES];
            for (s, t) in times.iter_mut().enumerate() {
                let mut v = c.times[s];
                if c.state_mask & (1 << s) != 0 {
                    v += now.saturating_sub(c.state_start);
                }
                *t = v - c.times_prev[s];
                c.times_prev[s] = v;
            }
            let nonidle = (times[PSI_NONIDLE] / self.tick_ns) as u128;
            nonidle_total += nonidle;
            for s in 0..4 {
                deltas[s] += times[s] as u128 * nonidle;
            }
        }
        for (t, d) in self.total.iter_mut().zip(deltas) {
            *t += (d / nonidle_total.max(1)) as Ns;
        }
    }

    /// `update_averages` at `now`: each state's stall time since the last
    /// update, capped at the period, sampled into its averages.
    pub fn update_averages(&mut self, now: Ns) {
        let expires = self.avg_next_update;
        let missed = if now.saturating_sub(expires) >= self.period {
            (now - expires) / self.period
        } else {
            0
        };
        self.avg_next_update = expires + (1 + missed) * self.period;
        let period = now - (self.avg_last_update + missed * self.period);
        self.avg_last_update = now;
        for s in 0..4 {
            let sample = (self.total[s] - self.avg_total[s]).min(period);
            self.avg_total[s] += sample;
            calc_avgs(&mut self.avg[s], missed, sample, period);
        }
    }

    /// `psi_avgs_work`: collect, and update the averages when due.
    pub fn avgs_work(&mut self, now: Ns) {
        self.collect(now);
        if now >= self.avg_next_update {
            self.update_averages(now);
        }
    }

    /// `psi_show` for memory (`mem`) or IO: collect, update the averages
    /// if due, and the file's two lines.
    pub fn show(&mut self, now: Ns, mem: bool) -> String {
        self.avgs_work(now);
        let mut out = String::new();
        self.write_lines(&mut out, "", mem);
        out
    }

    /// The two lines `psi_show` prints for memory (`mem`) or IO, each
    /// after `prefix`.
    fn write_lines(&self, out: &mut String, prefix: &str, mem: bool) {
        let base = if mem { PSI_MEM_SOME } else { PSI_IO_SOME };
        for (full, name) in ["some ", "full "].iter().enumerate() {
            let s = base + full;
            let a = &self.avg[s];
            out.push_str(prefix);
            out.push_str(name);
            for (w, key) in ["avg10=", " avg60=", " avg300="].iter().enumerate() {
                out.push_str(key);
                push_load(out, a[w]);
            }
            out.push_str(" total=");
            push_u64(out, self.total[s] / 1000);
            out.push('\n');
        }
    }

    /// A read of both files at `now` (one collection serves both: the
    /// second `psi_show` would find nothing new), into pressure.txt's
    /// lines (the time, the resource, the file's line) and the readings
    /// of summary.json's `pressure`, whose window starts at `w0` s.
    pub fn sample(&mut self, now: Ns, w0: f64) {
        self.avgs_work(now);
        let mut text = std::mem::take(&mut self.text);
        let mut prefix = String::with_capacity(24);
        push_u64(&mut prefix, now / NSEC_PER_SEC);
        prefix.push('.');
        push_padded(&mut prefix, now % NSEC_PER_SEC / 1000, 6);
        prefix.push(' ');
        let len = prefix.len();
        for (res, mem) in [("memory ", true), ("io ", false)] {
            prefix.truncate(len);
            prefix.push_str(res);
            self.write_lines(&mut text, &prefix, mem);
        }
        self.text = text;
        let t = now as f64 / NSEC_PER_SEC as f64;
        let shown =
            |x: u64| ((x >> FSHIFT) * 100 + (((x & (FIXED_1 - 1)) * 100) >> FSHIFT)) as f64 / 100.0;
        for i in 0..4 {
            let a = self.avg[i];
            let l = crate::metrics::pressure::PsiLine {
                avg10: shown(a[0]),
                avg60: shown(a[1]),
                avg300: shown(a[2]),
                total_us: self.total[i] / 1000,
            };
            // slots: memory some, full, io some, full
            let slot = [2, 3, 0, 1][i];
            self.readings.add(slot, t, l, w0);
        }
    }
}

/// Append `v` in decimal.
fn push_u64(out: &mut String, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend(buf[i..].iter().map(|&b| b as char));
}

/// Append `v` in decimal, zero-padded to `width` digits.
fn push_padded(out: &mut String, v: u64, width: usize) {
    let mut digits = String::with_capacity(20);
    push_u64(&mut digits, v);
    for _ in digits.len()..width {
        out.push('0');
    }
    out.push_str(&digits);
}

/// Append a fixed-point average as `LOAD_INT(x).LOAD_FRAC(x)`.
fn push_load(out: &mut String, x: u64) {
    push_u64(out, x >> FSHIFT);
    out.push('.');
    push_padded(out, ((x & (FIXED_1 - 1)) * 100) >> FSHIFT, 2);
}

/// `LOAD_INT(x).LOAD_FRAC(x)` with two decimals.
pub fn load_fmt(x: u64) -> String {
    let mut s = String::new();
    push_load(&mut s, x);
    s
}

impl Kernel {
    /// Mark why task `pid` goes to sleep with `action` (where the sleep
    /// starts), and return the action.
    #[inline]
    pub fn stalled(&mut self, pid: Pid, why: Stall, action: super::Action) -> super::Action {
        self.tasks[pid].stall = why;
        action
    }

    /// Apply what is due on `cpu` by now: the averaging work of the
    /// periods that ended, and the end of the running task's
    /// direct-reclaim CPU time, each at its own time.
    #[inline]
    fn psi_catch_up(&mut self, cpu: usize) {
        let now = self.now();
        if now >= self.psi.avg_next_update {
            self.psi_avgs_due(now);
        }
        if let Some((at, pid)) = self.psi.cpus[cpu].reclaim_end {
            if at <= now {
                self.psi.cpus[cpu].reclaim_end = None;
                self.psi_unhold(pid, HOLD_RECLAIM, at);
            }
        }
    }

    /// The averaging work (`psi_avgs_work`) of each period that ended by
    /// `now`, run at the period's end: no CPU's state has changed since
    /// (every change catches up first), so its times are those the work
    /// would have read then.
    #[cold]
    #[inline(never)]
    fn psi_avgs_due(&mut self, now: Ns) {
        while self.psi.avg_next_update <= now {
            let t = self.psi.avg_next_update;
            for c in 0..self.psi.cpus.len() {
                if let Some((at, pid)) = self.psi.cpus[c].reclaim_end {
                    if at <= t {
                        self.psi.cpus[c].reclaim_end = None;
                        self.psi_unhold(pid, HOLD_RECLAIM, at);
                    }
                }
            }
            self.psi.avgs_work(t);
            for g in &mut self.psi.groups {
                g.avgs_work(t);
            }
        }
    }

    /// Change task `pid`'s flags at `at` (the catch-up done): clear
    /// `clear`, set `set`, on the CPU its counts are on.
    fn psi_task_change(&mut self, pid: Pid, at: Ns, clear: u8, set: u8) {
        self.psi_task_switch(pid, at, clear, set, None);
    }

    /// `psi_task_change` with, if `curr` is Some, the CPU's current task
    /// changing in the same step (`psi_task_switch`: TSK_ONCPU moves with
    /// the task's other flags). The change goes to the system's group and,
    /// for a task in a cgroup, to its cgroup's (`psi_group_change` for
    /// each group of `task_psi_group`'s walk).
    #[inline]
    fn psi_task_switch(&mut self, pid: Pid, at: Ns, clear: u8, set: u8, curr: Option<Option<Pid>>) {
        let t = &mut self.tasks[pid];
        let clear = clear & t.psi_flags;
        let set = set & !t.psi_flags;
        t.psi_flags = (t.psi_flags & !clear) | set;
        let cpu = t.cpu as usize;
        if let Some(c) = curr {
            self.psi.cpus[cpu].curr = c;
        }
        let cm = self.psi.cpus[cpu]
            .curr
            .is_some_and(|c| self.tasks[c].psi_hold != 0);
        self.psi.change(cpu, at, clear, set, cm);
        if !self.psi.groups.is_empty() {
            self.psi_group_switch(pid, cpu, at, clear, set, curr);
        }
    }

    /// The cgroup's part of [`Kernel::psi_task_switch`]: the task's
    /// counts, and the CPU's current task as far as the cgroup sees it
    /// (its own task, or none).
    #[cold]
    #[inline(never)]
    fn psi_group_switch(
        &mut self,
        pid: Pid,
        cpu: usize,
        at: Ns,
        clear: u8,
        set: u8,
        curr: Option<Option<Pid>>,
    ) {
        let g = self.task_cgroup(pid);
        if g == 0 || g >= self.psi.groups.len() {
            return;
        }
        let grp = &mut self.psi.groups[g];
        match curr {
            Some(Some(c)) => grp.cpus[cpu].curr = Some(c),
            Some(None) if grp.cpus[cpu].curr == Some(pid) => grp.cpus[cpu].curr = None,
            _ => {}
        }
        let cm = grp.cpus[cpu]
            .curr
            .is_some_and(|c| self.tasks[c].psi_hold != 0);
        self.psi.groups[g].change(cpu, at, clear, set, cm);
    }

    /// Add `bit` to what holds task `pid` in its memstall at `at`: the
    /// first enters it (`psi_memstall_enter`).
    fn psi_hold(&mut self, pid: Pid, bit: u8, at: Ns) {
        let held = self.tasks[pid].psi_hold;
        self.tasks[pid].psi_hold |= bit;
        if held == 0 {
            let running = self.tasks[pid].psi_flags & TSK_RUNNING != 0;
            let set = TSK_MEMSTALL | if running { TSK_MEMSTALL_RUNNING } else { 0 };
            self.psi_task_change(pid, at, 0, set);
        }
    }

    /// Take `bit` from what holds task `pid` in its memstall at `at`: the
    /// last leaves it (`psi_memstall_leave`).
    fn psi_unhold(&mut self, pid: Pid, bit: u8, at: Ns) {
        let held = self.tasks[pid].psi_hold;
        self.tasks[pid].psi_hold &= !bit;
        if held != 0 && self.tasks[pid].psi_hold == 0 {
            self.psi_task_change(pid, at, TSK_MEMSTALL | TSK_MEMSTALL_RUNNING, 0);
        }
    }

    /// `psi_memstall_enter` by task `pid` for a section (kswapd's
    /// `balance_pgdat`).
    pub fn psi_memstall_enter(&mut self, pid: Pid) {
        let cpu = self.tasks[pid].cpu as usize;
        self.psi_catch_up(cpu);
        self.psi_hold(pid, HOLD_SECTION, self.now());
    }

    /// `psi_memstall_leave` of that section.
    pub fn psi_memstall_leave(&mut self, pid: Pid) {
        let cpu = self.tasks[pid].cpu as usize;
        self.psi_catch_up(cpu);
        self.psi_unhold(pid, HOLD_SECTION, self.now());
    }

    /// Direct reclaim by task `pid` (`__perform_reclaim`) that costs
    /// `cpu_ns` of CPU, run first in its next burst: in a memstall until
    /// that has run.
    pub fn psi_direct_reclaim(&mut self, pid: Pid, cpu_ns: Ns) {
        if cpu_ns == 0 {
            return;
        }
        *self.psi.owed.entry(pid).or_default() += cpu_ns;
        self.tasks[pid].psi_owes = true;
        let cpu = self.tasks[pid].cpu as usize;
        self.psi_catch_up(cpu);
        self.psi_hold(pid, HOLD_RECLAIM, self.now());
    }

    /// `psi_enqueue` of a waking task (`ttwu`): no longer in iowait
    /// (`io_schedule_finish`), now runnable.
    pub(super) fn psi_wakeup(&mut self, pid: Pid) {
        let cpu = self.tasks[pid].cpu as usize;
        self.psi_catch_up(cpu);
        let t = &mut self.tasks[pid];
        t.stall = Stall::None;
        let mut set = TSK_RUNNING;
        if t.psi_hold != 0 {
            set |= TSK_MEMSTALL_RUNNING;
        }
        self.psi_task_change(pid, self.now(), TSK_IOWAIT, set);
    }

    /// Task `pid`'s counts move to `cpu` (a migration: dequeue from its
    /// old CPU, enqueue on the new); sets `Task::cpu`.
    pub(super) fn psi_migrate(&mut self, pid: Pid, cpu: usize) {
        let old = self.tasks[pid].cpu as usize;
        if old == cpu {
            return;
        }
        self.psi_catch_up(old);
        self.psi_catch_up(cpu);
        let flags = self.tasks[pid].psi_flags;
        let now = self.now();
        self.psi_task_change(pid, now, flags, 0);
        self.tasks[pid].cpu = cpu as u32;
        self.psi_task_change(pid, now, 0, flags);
    }

    /// Task `pid` runs a segment of its burst on `cpu` from now
    /// (`psi_task_switch` when it is new there). Owing direct-reclaim CPU,
    /// it is in its memstall until that has run.
    #[inline]
    pub(super) fn psi_segment(&mut self, cpu: usize, pid: Pid) {
        if self.psi.cpus[cpu].curr != Some(pid) {
            self.psi_oncpu(cpu, pid);
        }
        if self.tasks[pid].psi_owes {
            self.psi_reclaim_segment(cpu, pid);
        }
    }

    #[cold]
    #[inline(never)]
    fn psi_reclaim_segment(&mut self, cpu: usize, pid: Pid) {
        let owed = self.psi.owed.get(&pid).copied().unwrap_or(0);
        let now = self.now();
        self.psi_hold(pid, HOLD_RECLAIM, now);
        self.psi.cpus[cpu].reclaim_end = Some((now + owed, pid));
    }

    /// `psi_task_switch` for the task coming on `cpu`: its counts move
    /// there, a sleep's memstall ends, and it is the CPU's current task.
    pub(super) fn psi_oncpu(&mut self, cpu: usize, pid: Pid) {
        let now = self.now();
        let old = self.tasks[pid].cpu as usize;
        let mut set = 0;
        if old != cpu {
            // a migration: its counts leave the old CPU
            self.psi_catch_up(old);
            set = self.tasks[pid].psi_flags;
            self.psi_task_change(pid, now, set, 0);
            self.tasks[pid].cpu = cpu as u32;
        }
        self.psi_catch_up(cpu);
        if self.tasks[pid].psi_hold & HOLD_SLEEP != 0 {
            // the sleep's memstall ends (its counts on the new CPU)
            self.psi_task_switch(pid, now, 0, set, None);
            set = 0;
            self.psi_unhold(pid, HOLD_SLEEP, now);
        }
        self.psi_task_switch(pid, now, 0, set, Some(Some(pid)));
    }

    /// The running task `pid` used `ran` ns of CPU on `cpu`: its owed
    /// direct-reclaim time is that much less, and its memstall ends if the
    /// time ran out.
    #[inline]
    pub(super) fn psi_account(&mut self, cpu: usize, pid: Pid, ran: Ns) {
        if self.tasks[pid].psi_owes {
            self.psi_reclaim_ran(cpu, pid, ran);
        }
    }

    #[cold]
    #[inline(never)]
    fn psi_reclaim_ran(&mut self, cpu: usize, pid: Pid, ran: Ns) {
        if let Some((at, p)) = self.psi.cpus[cpu].reclaim_end.take() {
            if at <= self.now() {
                self.psi_unhold(p, HOLD_RECLAIM, at);
            }
        }
        let left = self
            .psi
            .owed
            .get(&pid)
            .map_or(0, |&o| o.saturating_sub(ran));
        if left == 0 {
            self.psi.owed.remove(&pid);
            self.tasks[pid].psi_owes = false;
        } else {
            self.psi.owed.insert(pid, left);
        }
    }

    /// Task `pid` leaves its CPU: preempted (`sleep` None), to sleep for
    /// its `Stall` (`psi_task_switch` with `sleep`), or it exited.
    pub(super) fn psi_offcpu(&mut self, pid: Pid, sleep: Option<RunState>) {
        let cpu = self.tasks[pid].cpu as usize;
        self.psi_catch_up(cpu);
        let now = self.now();
        if let Some((_, p)) = self.psi.cpus[cpu].reclaim_end {
            if p == pid {
                self.psi.cpus[cpu].reclaim_end = None;
            }
        }
        let oncpu = self.psi.cpus[cpu].curr == Some(pid);
        match sleep {
            None => {}
            Some(RunState::Dead) => {
                let t = &mut self.tasks[pid];
                t.psi_hold = 0;
                t.stall = Stall::None;
                t.psi_owes = false;
                self.psi.owed.remove(&pid);
                self.psi_task_change(pid, now, u8::MAX, 0);
            }
            Some(_) => {
                // the sleep's reason stays until the wakeup (in_iowait)
                let why = self.tasks[pid].stall;
                if why == Stall::Mem {
                    self.psi_hold(pid, HOLD_SLEEP, now);
                } else if self.tasks[pid].psi_hold & HOLD_RECLAIM != 0 {
                    self.psi_unhold(pid, HOLD_RECLAIM, now);
                }
                let set = if why == Stall::Io { TSK_IOWAIT } else { 0 };
                let curr = oncpu.then_some(None);
                let clear = TSK_RUNNING | TSK_MEMSTALL_RUNNING;
                self.psi_task_switch(pid, now, clear, set, curr);
                return;
            }
        }
        if oncpu {
            self.psi.set_curr(cpu, now, None, false);
            let g = self.task_cgroup(pid);
            if let Some(grp) = self.psi.groups.get_mut(g).filter(|_| g > 0) {
                if grp.cpus[cpu].curr == Some(pid) {
                    grp.set_curr(cpu, now, None, false);
                }
            }
        }
    }

    /// `cgroup/NAME/io.pressure` and `memory.pressure` of cgroup `g` now
    /// (the root's are the system's), as the files print.
    pub fn psi_cgroup_show(&mut self, g: usize) -> (String, String) {
        self.psi_catch_up_all();
        let now = self.now();
        let p = if self.psi_own_group(g) {
            &mut self.psi.groups[g]
        } else {
            &mut self.psi
        };
        (p.show(now, false), p.show(now, true))
    }

    /// A cgroup's stall times so far (io some/full, memory some/full, ns),
    /// as its pressure files would total them now, read from a copy so
    /// that the reading changes none of the collection points the
    /// files' averages come from.
    pub fn psi_cgroup_totals(&self, g: usize) -> [Ns; 4] {
        let p = if self.psi_own_group(g) {
            &self.psi.groups[g]
        } else {
            &self.psi
        };
        let mut copy = Psi {
            cpus: p.cpus.clone(),
            total: p.total,
            tick_ns: p.tick_ns,
            ..Default::default()
        };
        copy.collect(self.now());
        copy.total
    }

    /// Whether cgroup `g` has a pressure group of its own (the root's is
    /// the system's).
    fn psi_own_group(&self, g: usize) -> bool {
        g > 0 && g < self.psi.groups.len()
    }

    /// Everything due on every CPU by now.
    fn psi_catch_up_all(&mut self) {
        for c in 0..self.psi.cpus.len() {
            self.psi_catch_up(c);
        }
    }

    /// A read of /proc/pressure/memory and /proc/pressure/io now, into
    /// pressure.txt.
    pub fn psi_sample(&mut self) {
        self.psi_catch_up_all();
        let now = self.now();
        let w0 = self.sc.run.warmup as f64 / NSEC_PER_SEC as f64;
        self.psi.sample(now, w0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Ns = NSEC_PER_SEC;

    /// Two CPUs at HZ=250.
    fn psi() -> Psi {
        Psi::new(2, 250)
    }

    #[test]
    fn psi_freq_is_two_seconds_and_a_jiffy() {
        assert_eq!(Psi::new(1, 250).period, 2_004_000_000);
        assert_eq!(Psi::new(1, 1000).period, 2_001_000_000);
        assert_eq!(Psi::new(1, 100).period, 2_010_000_000);
    }

    #[test]
    fn one_task_in_reclaim_one_second_of_ten() {
        // a task runs on CPU 0 for 10 s, in a memstall from 2 s to 3 s;
        // CPU 1 idles. Its reclaim is CPU work: memory SOME, and FULL too
        // (the CPU's current task reclaims: nothing productive runs).
        let mut p = psi();
        p.change(0, 0, 0, TSK_RUNNING, false);
        p.set_curr(0, 0, Some(7), false);
        p.change(0, 2 * S, 0, TSK_MEMSTALL | TSK_MEMSTALL_RUNNING, true);
        p.change(0, 3 * S, TSK_MEMSTALL | TSK_MEMSTALL_RUNNING, 0, false);
        p.collect(10 * S);
        assert_eq!(p.total[PSI_MEM_SOME] / 1000, 1_000_000);
        assert_eq!(p.total[PSI_MEM_FULL] / 1000, 1_000_000);
        assert_eq!(p.total[PSI_IO_SOME], 0);
        assert!(p.show(10 * S, true).contains("some avg10="));
        assert!(p.show(10 * S, true).ends_with("total=1000000\n"));
    }

    #[test]
    fn a_reclaimer_asleep_is_full_only_when_nothing_else_runs() {
        // one CPU: task A sleeps in reclaim_throttle (memstall, off CPU)
        // from 1 s to 2 s while B runs, and from 5 s to 6 s while the CPU
        // idles; 10 s in all
        let mut p = Psi::new(1, 250);
        p.change(0, 0, 0, TSK_RUNNING, false); // A
        p.change(0, 0, 0, TSK_RUNNING, false); // B
        p.set_curr(0, 0, Some(1), false);
        // A sleeps in its memstall; B runs
        p.change(0, S, 0, TSK_MEMSTALL | TSK_MEMSTALL_RUNNING, false);
        p.change(0, S, TSK_RUNNING | TSK_MEMSTALL_RUNNING, 0, false);
        p.set_curr(0, S, Some(2), false);
        // A wakes and leaves it
        p.change(0, 2 * S, 0, TSK_RUNNING | TSK_MEMSTALL_RUNNING, false);
        p.change(0, 2 * S, TSK_MEMSTALL | TSK_MEMSTALL_RUNNING, 0, false);
        // B sleeps (not a stall) at 4 s
        p.change(0, 4 * S, TSK_RUNNING, 0, false);
        p.set_curr(0, 4 * S, Some(1), false);
        // A sleeps in its memstall, the CPU idles
        p.change(0, 5 * S, 0, TSK_MEMSTALL | TSK_MEMSTALL_RUNNING, false);
        p.change(0, 5 * S, TSK_RUNNING | TSK_MEMSTALL_RUNNING, 0, false);
        p.set_curr(0, 5 * S, None, false);
        p.change(0, 6 * S, 0, TSK_RUNNING | TSK_MEMSTALL_RUNNING, false);
        p.change(0, 6 * S, TSK_MEMSTALL | TSK_MEMSTALL_RUNNING, 0, false);
        p.set_curr(0, 6 * S, Some(1), false);
        p.collect(10 * S);
        assert_eq!(p.total[PSI_MEM_SOME], 2 * S);
        assert_eq!(p.total[PSI_MEM_FULL], S);
    }

    #[test]
    fn io_full_when_no_task_of_the_cpu_is_runnable() {
        // one task on one CPU: 3 s in iowait of 4 s, each its whole CPU's
        // time: SOME = FULL = 3 s
        let mut p = Psi::new(1, 1000);
        p.change(0, 0, 0, TSK_RUNNING, false);
        p.set_curr(0, 0, Some(1), false);
        p.change(0, S, TSK_RUNNING, TSK_IOWAIT, false);
        p.set_curr(0, S, None, false);
        p.change(0, 4 * S, TSK_IOWAIT, TSK_RUNNING, false);
        p.collect(4 * S);
        assert_eq!(p.total[PSI_IO_SOME], 3 * S);
        assert_eq!(p.total[PSI_IO_FULL], 3 * S);
        assert_eq!(p.total[PSI_MEM_SOME], 0);
    }

    #[test]
    fn cpus_are_weighted_by_their_non_idle_time() {
        // CPU 0: non-idle 4 s, IO SOME 2 s; CPU 1: non-idle 2 s, IO SOME
        // 0.5 s. total = (2 * 1000 + 0.5 * 500) / (1000 + 500) jiffies of
        // HZ=250: (2e9 * 1000 + 0.5e9 * 500) / 1500 = 1.5e9 ns
        let mut p = psi();
        p.change(0, 0, 0, TSK_RUNNING, false);
        p.change(0, 0, 0, TSK_IOWAIT, false);
        p.change(0, 2 * S, TSK_IOWAIT, 0, false);
        p.change(0, 4 * S, TSK_RUNNING, 0, false);
        p.change(1, 0, 0, TSK_RUNNING, false);
        p.change(1, 0, 0, TSK_IOWAIT, false);
        p.change(1, S / 2, TSK_IOWAIT, 0, false);
        p.change(1, 2 * S, TSK_RUNNING, 0, false);
        p.collect(5 * S);
        assert_eq!(p.total[PSI_IO_SOME], 1_500_000_000);
        // a task running all along on CPU 0: no pressure
        assert_eq!(p.total[PSI_IO_FULL], 0);
    }

    #[test]
    fn averages_follow_the_kernels_fixed_point_decay() {
        // calc_load by hand: from 0 toward 100% (204800):
        // (204800 * (2048 - 1677) + 2047) / 2048 = 37100 -> 18.11
        assert_eq!(calc_load(0, 1677, 100 * FIXED_1), 37100);
        assert_eq!(load_fmt(37100), "18.11");
        // toward 0 from there: 37100 * 1677 / 2048 = 30379 -> 14.83
        assert_eq!(calc_load(37100, 1677, 0), 30379);
        assert_eq!(load_fmt(30379), "14.83");
        // fixed_power_int(1677, 11, 2) = (1677^2 + 1024) >> 11 = 1373
        assert_eq!(fixed_power_int(1677, 11, 2), 1373);
        assert_eq!(calc_load_n(37100, 1677, 0, 2), 37100 * 1373 / 2048);

        // one CPU, one task in iowait all along: three periods of 100%,
        // then two idle ones, each update on time
        let mut p = Psi::new(1, 250);
        let per = p.period;
        p.change(0, 0, 0, TSK_IOWAIT, false);
        let mut want = [0u64; 3];
        for n in 1..=3 {
            p.avgs_work(n * per);
            for (w, e) in want.iter_mut().zip(EXP) {
                // calc_load rounds up while the average rises
                *w = (*w * e + 100 * FIXED_1 * (FIXED_1 - e)).div_ceil(FIXED_1);
            }
            assert_eq!(p.avg[PSI_IO_SOME], want, "period {n}");
        }
        // avg10 by hand: 37100, then (37100 * 1677 + 204800 * 371 + 2047)
        // / 2048 = 67480, then (67480 * 1677 + 204800 * 371 + 2047) / 2048
        // = 92356: 45.09%
        assert_eq!(p.avg[PSI_IO_SOME][0], 92356);
        assert_eq!(load_fmt(92356), "45.09");
        p.change(0, 3 * per, TSK_IOWAIT, 0, false);
        for n in 4..=5 {
            p.avgs_work(n * per);
            for (w, e) in want.iter_mut().zip(EXP) {
                *w = *w * e / FIXED_1;
            }
        }
        assert_eq!(p.avg[PSI_IO_SOME], want);
        assert_eq!(p.total[PSI_IO_SOME], 3 * per);
        // printed as psi_show prints them
        let shown = p.show(5 * per, false);
        let first = shown.lines().next().unwrap();
        assert_eq!(
            first,
            format!(
                "some avg10={} avg60={} avg300={} total={}",
                load_fmt(want[0]),
                load_fmt(want[1]),
                load_fmt(want[2]),
                3 * per / 1000
            )
        );
    }

    #[test]
    fn late_updates_fold_the_missed_periods_as_zeros() {
        // update_averages two and a half periods late: two missed periods
        // decay the averages toward 0 (calc_load_n), then the sample of
        // the time since is taken over that time
        let mut p = Psi::new(1, 250);
        let per = p.period;
        p.avg[PSI_MEM_SOME] = [100_000, 100_000, 100_000];
        p.change(0, 0, 0, TSK_RUNNING, false);
        let now = per + 2 * per + per / 2;
        p.avgs_work(now);
        assert_eq!(p.avg_next_update, 4 * per);
        let mut want = [0u64; 3];
        for (w, e) in want.iter_mut().zip(EXP) {
            let decayed = calc_load(100_000, fixed_power_int(e, 11, 2), 0);
            *w = calc_load(decayed, e, 0);
        }
        assert_eq!(p.avg[PSI_MEM_SOME], want);
    }

    /// A one-CPU machine whose clock can be moved on.
    fn machine() -> crate::kernel::Kernel {
        let toml = "[machine]\ncpus = 1\nhz = 250\n\
             [devices.sda]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"sda\"\n\
             [jobs.dd]\nnumjobs = 1\nbs = \"1M\"\n[run]\nduration = \"20s\"\nwarmup = \"0s\"\n";
        let sc = crate::scenario::Scenario::load_str(toml, "t.toml", "t", &[]).unwrap();
        crate::kernel::Kernel::new(sc, crate::trace::Tracer::disabled())
    }

    /// Move `k`'s clock to `t`.
    fn at(k: &mut crate::kernel::Kernel, t: Ns) {
        use crate::kernel::Ev;
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
    }

    #[test]
    fn direct_reclaim_is_a_memstall_until_its_cpu_time_has_run() {
        // a task reclaims for 1 s of CPU at the head of a 3 s burst, then
        // sleeps in io_schedule for 2 s; 10 s in all. Memory: 1 s, SOME
        // and FULL (the CPU's own task reclaims); IO: 2 s
        let mut k = machine();
        let p = k.new_task("t".into(), crate::kernel::Body::Kworker, Some(0));
        at(&mut k, S);
        k.psi_wakeup(p);
        k.psi_oncpu(0, p);
        k.psi_direct_reclaim(p, S);
        assert_eq!(k.tasks[p].psi_flags & TSK_MEMSTALL, TSK_MEMSTALL);
        k.psi_segment(0, p);
        assert_eq!(k.psi.cpus[0].reclaim_end, Some((2 * S, p)));
        // a reading halfway through the reclaim, and one past its end
        at(&mut k, 3 * S / 2);
        k.psi_sample();
        at(&mut k, 3 * S);
        k.psi_sample();
        assert_eq!(k.tasks[p].psi_hold, 0, "the memstall ended at 2 s");
        assert_eq!(k.psi.total[PSI_MEM_SOME], S);
        at(&mut k, 4 * S);
        k.psi_account(0, p, 3 * S);
        assert!(!k.tasks[p].psi_owes && k.psi.owed.is_empty());
        k.tasks[p].stall = Stall::Io;
        k.psi_offcpu(p, Some(RunState::Sleeping));
        at(&mut k, 6 * S);
        k.psi_wakeup(p);
        k.psi_oncpu(0, p);
        at(&mut k, 11 * S);
        k.psi.collect(k.now());
        assert_eq!(k.psi.total[PSI_MEM_SOME], S);
        assert_eq!(k.psi.total[PSI_MEM_FULL], S);
        assert_eq!(k.psi.total[PSI_IO_SOME], 2 * S);
        assert_eq!(k.psi.total[PSI_IO_FULL], 2 * S);
        // pressure.txt's line at 3 s: the averages were updated at 2.004 s
        // from 1 s of SOME in a 2.004 s period: pct = 49 (truncated), so
        // avg10 = (49 * 2048 * 371 + 2047) / 2048 = 18179 -> 8.87, avg60
        // = (100352 * 67 + 2047) / 2048 = 3283 -> 1.60, avg300 = (100352
        // * 14 + 2047) / 2048 = 686 -> 0.33
        assert!(
            k.psi
                .text
                .contains("3.000000 memory some avg10=8.87 avg60=1.60 avg300=0.33 total=1000000\n"),
            "{}",
            k.psi.text
        );
    }
}
