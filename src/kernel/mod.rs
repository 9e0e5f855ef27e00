//! The simulated machine: one struct holding the kernel's state, the event
//! loop that drives it, and process scheduling (kernel/sched). The mechanisms
//! live where the kernel keeps them: `mm::page_writeback`,
//! `fs::fs_writeback`, `block::*`, `drivers::*`, as `impl Kernel` blocks.

pub mod cgroup;
pub mod psi;
pub mod sched;
pub mod time;

use crate::block::{Bio, BlockDev};
use crate::fs::fs_writeback::FlusherState;
use crate::fs::SuperBlock;
use crate::metrics::Recorder;
use crate::mm::backing_dev::Wb;
use crate::mm::page_writeback::WbDomain;
use crate::mm::vmstat::VmStat;
use crate::scenario::Scenario;
use crate::sim::{EventQueue, Jiffies, Ns, Prng};
use crate::trace::Tracer;
use crate::workload::dd::DdWriter;
use sched::Cpu;

pub type Pid = usize;
pub type WbId = usize;
pub type InodeId = usize;
pub type DevId = usize;
pub type BioId = usize;

/// Everything that can happen at a point in simulated time. Kept to 12
/// bytes (u32 indices and generations) so the event queue stays compact.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A CPU's current slice ends (stale if `gen` moved on).
    CpuSlice { cpu: u32, gen: u32 },
    /// A sleeping task's timer fires (stale if the task's `gen` moved on).
    Wake { pid: u32, gen: u32 },
    /// The timer softirq of a tick runs the task timers that expire on it
    /// (`Kernel::timer_slots[slot]`).
    TimerTick { slot: u32 },
    /// The wb's writeback work item runs (`wb_workfn` queued on a workqueue).
    WbWorkfn { wb: u32, gen: u32 },
    /// The fprop aging timer (`writeout_period`).
    WriteoutPeriod,
    /// The same for a memcg's `wb_domain`.
    MemcgWriteoutPeriod { cg: u32 },
    /// blk-throttle's pending timer: release the bios whose budget is there.
    ThrotlTimer { dev: u32 },
    /// io.cost's wait timer for a cgroup's waiters (`iocg_waitq_timer_fn`).
    IocWait { dev: u32, cg: u32 },
    /// io.cost's period timer (`ioc_timer_fn`).
    IocPeriod { dev: u32 },
    /// BFQ's or CFQ's idle slice timer (stale if `gen` moved on).
    ElvIdle { dev: u32, gen: u32 },
    /// wbt's monitoring window ends (`wb_timer_fn`).
    WbtTimer { dev: u32 },
    /// jbd2's commit timer for transaction `tid` of a superblock.
    JournalCommit { sb: u32, tid: u32 },
    /// XFS's log worker (every 30 s).
    XfsLogWorker { sb: u32 },
    /// A request completes on a device (disk, ssd, hdd time it when the
    /// driver takes it).
    ReqDone { rq: u32 },
    /// A bcache device's delayed work or writeback thread timer
    /// (drivers/bcache/writeback.rs: `what`; stale if `gen` moved on).
    Bcache { dev: u32, what: u8, gen: u32 },
    /// The knob writes of `sc.events[idx]` (a sysctl or sysfs write).
    Knobs { idx: u32 },
    /// Periodic sampling of counters for the summary.
    Sample,
    /// The end of the run.
    End,
}

/// What a task does next after a CPU burst.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// Keep running for this much more CPU time (user ns, system ns).
    Cpu { user: Ns, sys: Ns },
    /// Sleep until an absolute time (a timer: schedule_timeout).
    SleepUntil(Ns),
    /// Sleep until somebody wakes the task explicitly.
    Block,
    /// The task exits.
    Exit,
    /// A preemption point (`cond_resched()`): the task gives up the CPU if
    /// a resched is pending for it, and carries on otherwise. Its logic is
    /// called again when it next runs.
    Resched,
}

pub enum Body {
    /// A kernel worker whose work is done in event handlers (it only holds
    /// a plug and may be woken).
    Kworker,
    /// A block driver's thread for device N (the loop worker): its steps
    /// are the driver's (`driver_step`, drivers/mod.rs).
    Driver(DevId),
    /// A dd writer, inline: its state is read at every wakeup.
    Dd(DdWriter),
    FsMark(Box<crate::workload::fs_mark::FsMarkThread>),
    Flusher(Box<FlusherState>),
    /// The parent that starts a job's tasks one after another.
    Launcher(crate::workload::Launcher),
    /// An fio job's clone (workload/fio/engine.rs).
    Fio(Box<crate::workload::fio::engine::FioTask>),
    /// kswapd0 (mm/vmscan.rs).
    Kswapd(Box<crate::mm::vmscan::KswapdState>),
    /// A simoop thread (workload/simoop.rs).
    Simoop(Box<crate::workload::simoop::SimoopTask>),
    /// The `bdi_wq` worker running the wbs' `bw_dwork` (mm/backing_dev.rs):
    /// the wb whose work it is running, if any.
    BdiWq(Option<usize>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    Sleeping,
    Runnable,
    Running,
    Dead,
}

/// A task. Laid out in declaration order and aligned to a cache line:
/// the fields every scheduling event touches first, then the body (a dd
/// writer's state is kept inline) and the dirty-throttling state (a
/// thousand writers' tasks do not fit in the cache; the fields of one
/// wakeup should share few cache lines).
#[repr(C, align(64))]
pub struct Task {
    pub state: RunState,
    /// A kernel thread (no job): in the root task group, outside the
    /// workload's autogroup.
    pub kthread: bool,
    /// Woken: the task's logic runs when it gets a CPU, and the wakeup cost
    /// is added to the burst it asks for.
    pub woken: bool,
    /// TIF_NEED_RESCHED: a task woke up wanting this task's CPU (wakeup
    /// preemption is not carried out, only flagged for cond_resched()
    /// callers such as the flusher).
    pub need_resched: bool,
    pub gen: u32,
    /// The CPU the task runs on or last ran on (`task_cpu`).
    pub cpu: u32,
    /// PSI (kernel/psi.rs), beside the CPU its counts are on: the task's
    /// counts (`psi_flags`), what holds it in a memstall (`in_memstall`
    /// while any), why it sleeps (set where the sleep starts, kept while
    /// it sleeps: `Stall::Io` is `in_iowait`), and whether it owes direct
    /// reclaim CPU time (`Psi::owed`).
    pub psi_flags: u8,
    pub psi_hold: u8,
    pub stall: psi::Stall,
    pub psi_owes: bool,
    /// CPU time still owed to the current burst, and its user share.
    pub burst_left: Ns,
    pub burst_user_left: Ns,
    /// System time incurred outside a burst (request dispatch), added to
    /// the task's next burst.
    pub owed_sys: Ns,
    pub nvcsw: u64,
    pub utime: Ns,
    pub stime: Ns,
    pub body: Option<Body>,
    // task_struct's dirty-throttling fields
    pub nr_dirtied: u64,
    pub nr_dirtied_pause: u64,
    pub dirty_paused_when: u64,
    /// Bytes written by write(2) (/proc/PID/io wchar).
    pub wchar: u64,
    /// Inside a balance_dirty_pages() call that sleeps (or writes back).
    pub throttle: crate::mm::page_writeback::ThrottleCall,
    /// The task's block plug (`current->plug`).
    pub plug: Option<crate::block::blk_mq::Plug>,
    pub nivcsw: u64,
    /// The task's `sched_entity`: EEVDF's, and a kernel thread's in the
    /// root queue under autogroup.
    pub se: sched::SchedEntity,
    pub pid: u32,
    pub comm: String,
    /// Files created (fs_mark).
    pub files_created: u64,
    pub job: Option<usize>,
    /// `task->dirties`: this task's share of recent dirtyings (pre-3.2).
    pub dirties: crate::klib::proportions::PropLocal,
    /// Foreground writeback done by this task (legacy policy): calls and pages.
    pub legacy_writeback_calls: u64,
    pub legacy_pages_written: u64,
    /// A reclaim throttle to sleep at the next step (mm/lru.rs).
    pub reclaim_throttle: Option<Box<crate::mm::lru::TaskThrottle>>,
}

pub struct Kernel {
    pub sc: Scenario,
    pub q: EventQueue<Ev>,
    pub jif: Jiffies,
    pub rng: Prng,
    pub vm: VmStat,
    pub dom: WbDomain,
    pub pgwb: crate::mm::page_writeback::PageWriteback,
    pub vmscan: crate::mm::vmscan::Vmscan,
    /// Retried allocations, tasks' anonymous pages and OOM victims
    /// (mm/oom_kill.rs).
    pub oom: crate::mm::oom_kill::OomState,
    /// The node's zones: watermarks and free pages (mm/page_alloc.rs).
    pub zones: crate::mm::page_alloc::Zones,
    pub page_reporting: crate::mm::page_reporting::PageReporting,
    pub bdis: Vec<crate::mm::backing_dev::Bdi>,
    pub wbs: Vec<Wb>,
    pub inodes: crate::fs::inode::InodeTable,
    pub sbs: Vec<SuperBlock>,
    pub devs: Vec<BlockDev>,
    pub bios: Vec<Option<Bio>>,
    pub free_bios: Vec<BioId>,
    pub reqs: Vec<Option<crate::block::blk_mq::Request>>,
    pub free_reqs: Vec<crate::block::blk_mq::ReqId>,
    /// Emptied `Request::pieces` vectors, reused by new requests.
    pub piece_pool: Vec<Vec<crate::kernel::BioId>>,
    /// Plug flushes by depth: `unplug_depths[d]` flushes issued `d`
    /// requests (bounded by the plug's request limit, not by the IOs),
    /// and the last flush's depth.
    pub unplug_depths: Vec<u64>,
    pub last_unplug_depth: u32,
    pub tasks: Vec<Task>,
    pub cpus: Vec<Cpu>,
    /// The run queue and the scheduler's state (`struct rq`).
    pub rq: sched::Rq,
    pub tracer: Tracer,
    pub rec: Recorder,
    /// Per-job fs_mark state (empty entries for other jobs).
    pub fsmark: Vec<crate::workload::fs_mark::FsMarkJob>,
    /// The fio jobs' clones and their statistics.
    pub fio: crate::workload::fio::engine::FioRun,
    /// `wbsim fio`: end the run once every fio clone has exited (its jobs
    /// are bounded by size, not only by time).
    pub fio_end_when_done: bool,
    /// Where fio's log files go while the run goes on (`write_lat_log`
    /// and the like); None: kept in memory to the end.
    pub fio_log_dir: Option<std::path::PathBuf>,
    /// The first error writing a log file during the run.
    pub fio_log_error: Option<String>,
    /// Set (by a SIGINT handler) to stop the run where it is: it ends at
    /// the current time, as a shorter `run.duration` would, and
    /// `stopped_at` says when.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Stop the run the same way once the trace holds more bytes than this.
    pub trace_limit: Option<u64>,
    /// When the run was stopped, and why ("SIGINT", "trace limit").
    pub stopped_at: Option<Ns>,
    pub stopped_by: Option<&'static str>,
    /// Stop the run when a filesystem fills its device (`--force` runs on,
    /// as if the device were larger).
    pub full_device_stops: bool,
    /// The page cache's read side (mm/readahead.rs).
    pub ra: crate::mm::readahead::ReadSide,
    /// Tasks in fsync waiting for an inode's writeback to end (fs/sync.rs).
    pub fsync_waiters: Vec<(Pid, InodeId)>,
    pub end: Ns,
    pub ended: bool,
    /// Count events by kind (WBSIM_EVCOUNT=1 in the environment), for
    /// performance work.
    pub count_events: bool,
    /// Task timers by the tick they expire on (slot `jiffies %
    /// TIMER_SLOTS`): (pid, gen) in the order they were armed. A slot that
    /// holds any has its `TimerTick` event queued.
    pub timer_slots: Vec<Vec<(u32, u32)>>,
    pub evcount: std::collections::BTreeMap<String, u64>,
    /// Bumped by every sysctl or sysfs write during the run: the caches of
    /// values computed from knobs (`pgwb.limits_cache`, `Wb::thresh_cache`)
    /// are keyed on it.
    pub knob_gen: u32,
    /// The cgroups (the root first) and cgroup writeback's state.
    pub cg: cgroup::Cgroups,
    /// The simoop job's state (workload/simoop.rs).
    pub simoop: Option<Box<crate::workload::simoop::SimoopRun>>,
    /// The `bdi_wq` kworker that runs the wbs' delayed bandwidth updates.
    pub bdi_wq: Option<Pid>,
    /// Pressure stall information (kernel/psi.rs).
    pub psi: psi::Psi,
}

impl Kernel {
    pub fn now(&self) -> Ns {
        self.q.now()
    }
    pub fn jiffies(&self) -> u64 {
        self.jif.at(self.q.now())
    }
    pub fn hz(&self) -> u64 {
        self.jif.hz
    }
    pub fn page_size(&self) -> u64 {
        self.sc.machine.page_size
    }

    /// Build the machine described by `sc`: memory, devices, filesystems,
    /// flushers and the jobs' tasks. Nothing runs until `run`.
    pub fn new(sc: Scenario, tracer: Tracer) -> Kernel {
        let jif = Jiffies::new(sc.machine.hz);
        let ncpu = sc.machine.cpus as usize;
        let mut k = Kernel {
            q: EventQueue::new(),
            jif,
            rng: Prng::new(sc.run.seed),
            vm: VmStat::default(),
            dom: WbDomain::default(),
            pgwb: Default::default(),
            vmscan: Default::default(),
            oom: Default::default(),
            zones: Default::default(),
            page_reporting: Default::default(),
            bdis: Vec::new(),
            wbs: Vec::new(),
            inodes: Default::default(),
            sbs: Vec::new(),
            devs: Vec::new(),
            bios: Vec::new(),
            free_bios: Vec::new(),
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            piece_pool: Vec::new(),
            unplug_depths: Vec::new(),
            last_unplug_depth: 0,
            tasks: Vec::new(),
            cpus: (0..ncpu).map(|_| Cpu::default()).collect(),
            rq: sched::Rq::new(&sc.machine),
            tracer,
            rec: Recorder::default(),
            fsmark: Vec::new(),
            fio: Default::default(),
            fio_end_when_done: false,
            fio_log_dir: None,
            fio_log_error: None,
            stop: None,
            trace_limit: None,
            stopped_at: None,
            stopped_by: None,
            full_device_stops: true,
            ra: Default::default(),
            fsync_waiters: Vec::new(),
            end: sc.run.duration,
            ended: false,
            timer_slots: Vec::new(),
            count_events: std::env::var_os("WBSIM_EVCOUNT").is_some(),
            evcount: Default::default(),
            knob_gen: 0,
            cg: Default::default(),
            simoop: None,
            bdi_wq: None,
            psi: psi::Psi::new(ncpu, sc.machine.hz),
            sc,
        };
        k.cgroup_init();
        k.mm_init();
        k.page_reporting_init();
        k.block_init();
        k.fs_init();
        k.workload_init();
        k.q.schedule(0, Ev::Sample);
        for (i, e) in k.sc.events.iter().enumerate() {
            k.q.schedule(e.at, Ev::Knobs { idx: i as u32 });
        }
        k.q.schedule(k.end, Ev::End);
        k
    }

    pub fn new_task(&mut self, comm: String, body: Body, job: Option<usize>) -> Pid {
        let idx = self.tasks.len();
        // wbsim's numbering, not the kernel's: kernel threads from 200, the
        // workload's tasks from 1000
        let pid = match body {
            Body::Flusher(_)
            | Body::Kworker
            | Body::Driver(_)
            | Body::Kswapd(_)
            | Body::BdiWq(_) => 200 + idx as u32,
            Body::Dd(_) | Body::FsMark(_) | Body::Launcher(_) | Body::Fio(_) | Body::Simoop(_) => {
                1000 + idx as u32
            }
        };
        let cpu = idx % self.cpus.len();
        self.tasks.push(Task {
            pid,
            comm,
            body: Some(body),
            state: RunState::Sleeping,
            kthread: job.is_none(),
            cpu: cpu as u32,
            gen: 0,
            burst_left: 0,
            burst_user_left: 0,
            woken: false,
            need_resched: false,
            psi_flags: 0,
            psi_hold: 0,
            stall: psi::Stall::None,
            psi_owes: false,
            se: Default::default(),
            nvcsw: 0,
            nivcsw: 0,
            utime: 0,
            stime: 0,
            nr_dirtied: 0,
            // kernel/fork.c: 128 KiB worth of pages
            nr_dirtied_pause: 128 >> (crate::klib::ilog2(self.sc.machine.page_size) - 10),
            dirty_paused_when: 0,
            throttle: Default::default(),
            plug: None,
            dirties: Default::default(),
            legacy_writeback_calls: 0,
            legacy_pages_written: 0,
            reclaim_throttle: None,
            wchar: 0,
            files_created: 0,
            owed_sys: 0,
            job,
        });
        idx
    }

    /// Run one event. Returns false when the run is over.
    pub fn step(&mut self) -> bool {
        let Some((_, ev)) = self.q.pop() else {
            return false;
        };
        self.prefetch_next();
        if self.count_events {
            let k = format!("{ev:?}");
            let k = k.split([' ', '{']).next().unwrap_or("").to_string();
            *self.evcount.entry(k).or_insert(0) += 1;
        }
        match ev {
            Ev::CpuSlice { cpu, gen } => self.cpu_slice_end(cpu as usize, gen),
            Ev::Wake { pid, gen } => {
                let pid = pid as usize;
                if self.tasks[pid].gen == gen && self.tasks[pid].state == RunState::Sleeping {
                    self.wake_up_process(pid);
                }
            }
            Ev::TimerTick { slot } => self.run_timer_slot(slot as usize),
            Ev::WbWorkfn { wb, gen } => self.wb_workfn_fire(wb as usize, gen),
            Ev::WriteoutPeriod => self.writeout_period(),
            Ev::MemcgWriteoutPeriod { cg } => self.memcg_writeout_period(cg as usize),
            Ev::ThrotlTimer { dev } => self.blk_throtl_timer(dev as usize),
            Ev::IocWait { dev, cg } => self.ioc_wait_timer(dev as usize, cg as usize),
            Ev::IocPeriod { dev } => self.ioc_period_timer(dev as usize),
            Ev::WbtTimer { dev } => self.wbt_timer(dev as usize),
            Ev::ElvIdle { dev, gen } => match self.devs[dev as usize].elevator {
                crate::scenario::Elevator::Bfq => self.bfq_idle_timer(dev as usize, gen),
                _ => self.cfq_idle_timer(dev as usize, gen),
            },
            Ev::JournalCommit { sb, tid } => self.jbd2_commit_timer(sb as usize, tid),
            Ev::XfsLogWorker { sb } => self.xfs_log_worker(sb as usize),
            Ev::ReqDone { rq } => {
                let (q, dev) = {
                    let r = self.reqs[rq as usize].as_ref().expect("rq");
                    (r.queued, r.dev)
                };
                let service = self.now() - q;
                self.request_done(rq as usize, service);
                self.blk_mq_slot_done(dev);
            }
            Ev::Bcache { dev, what, gen } => self.bcache_event(dev as usize, what, gen),
            Ev::Knobs { idx } => {
                for w in self.sc.events[idx as usize].writes.clone() {
                    self.knob_write(w);
                }
            }
            Ev::Sample => {
                self.sample();
                if self.fio_log_dir.is_some() {
                    self.fio_flush_logs();
                }
                let next = self.now() + self.sc.run.sample_interval;
                if next < self.end {
                    self.q.schedule(next, Ev::Sample);
                }
            }
            Ev::End => {
                self.sample();
                if !self.fio.clones.is_empty() {
                    self.fio_end_of_run();
                }
                self.ended = true;
                return false;
            }
        }
        true
    }

    /// Start loading what the next events touch first: the tasks they wake
    /// or run, and the next one's file if it is a dd writer (a thousand
    /// writers' tasks and inodes do not stay in the cache between their
    /// wakeups). A task is asked for a few events before its turn, its file
    /// one event before.
    #[inline]
    fn prefetch_next(&self) {
        if let Some(t) = self
            .q
            .peek_near(PREFETCH_AHEAD)
            .and_then(|e| self.task_of(e))
        {
            crate::sim::prefetch(t, TASK_HOT_BYTES);
        }
        if let Some(t) = self.q.peek_near(0).and_then(|e| self.task_of(e)) {
            self.prefetch_file_of(t);
        }
    }

    /// Prefetch the lines of task `pid` that its next run touches first.
    #[inline]
    pub(crate) fn prefetch_task(&self, pid: Pid) {
        if let Some(t) = self.tasks.get(pid) {
            crate::sim::prefetch(t, TASK_HOT_BYTES);
        }
    }

    /// Prefetch the inode task `pid` writes, if it is a dd writer.
    #[inline]
    pub(crate) fn prefetch_file(&self, pid: Pid) {
        if let Some(t) = self.tasks.get(pid) {
            self.prefetch_file_of(t);
        }
    }

    #[inline]
    fn prefetch_file_of(&self, t: &Task) {
        if let Some(Body::Dd(d)) = &t.body {
            if let Some(inode) = self.inodes.get(d.ino) {
                crate::sim::prefetch(inode, std::mem::size_of::<crate::fs::Inode>());
            }
        }
    }

    /// The task an event wakes or runs (a guess for a CPU's slice: the
    /// task running there now).
    #[inline]
    fn task_of(&self, ev: &Ev) -> Option<&Task> {
        let pid = match *ev {
            Ev::Wake { pid, .. } => pid as usize,
            Ev::CpuSlice { cpu, .. } => self.cpus.get(cpu as usize)?.cur?,
            _ => return None,
        };
        self.tasks.get(pid)
    }

    /// Run to the end; `progress` is called now and then with the simulated time.
    pub fn run(&mut self, mut progress: impl FnMut(Ns, Ns)) {
        let mut n = 0u64;
        while self.step() {
            n += 1;
            if n.is_multiple_of(4096) {
                if self.stopped_at.is_none() {
                    let by = if self
                        .stop
                        .as_ref()
                        .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
                    {
                        Some("SIGINT")
                    } else if self.trace_limit.is_some_and(|l| self.tracer.bytes > l) {
                        Some("trace limit")
                    } else if self.full_device_stops && self.full_device().is_some() {
                        Some("device full")
                    } else {
                        None
                    };
                    if by.is_some() {
                        self.stopped_at = Some(self.now());
                        self.stopped_by = by;
                        self.end_run_now();
                    }
                }
                if n.is_multiple_of(65536) {
                    progress(self.now(), self.end);
                }
            }
        }
    }

    /// The first filesystem that has allocated more sectors than its
    /// device holds (the model has no ENOSPC: a run stops there), as its
    /// device's index.
    pub fn full_device(&self) -> Option<usize> {
        self.sbs.iter().find_map(|s| {
            let size = self.sc.devices[s.dev].size / 512;
            let last = s.ag_cursor.iter().copied().max().unwrap_or(0);
            (s.used_sectors() + s.ag_data_start.first().copied().unwrap_or(0) > size || last > size)
                .then_some(s.dev)
        })
    }

    pub fn events_simulated(&self) -> u64 {
        self.q.events_popped()
    }

    /// A sysctl or sysfs write, as its handler makes it; the one place the
    /// knob generation is bumped.
    pub fn knob_write(&mut self, w: crate::scenario::KnobWrite) {
        use crate::scenario::KnobWrite;
        match w {
            KnobWrite::Vm(knob, v) => self.vm_sysctl_write(knob, v),
            KnobWrite::BdiMinRatio(dev, v) => {
                let b = self.bdi_of_dev(dev);
                self.bdi_set_min_ratio(b, v);
            }
            KnobWrite::BdiMaxRatio(dev, v) => {
                let b = self.bdi_of_dev(dev);
                self.bdi_set_max_ratio(b, v);
            }
            KnobWrite::BdiStrictLimit(dev, v) => {
                let b = self.bdi_of_dev(dev);
                self.bdis[b].strictlimit = v;
            }
        }
        self.knob_gen = self.knob_gen.wrapping_add(1);
    }

    pub fn alloc_bio(&mut self, bio: Bio) -> BioId {
        crate::sim::slot_insert(&mut self.bios, &mut self.free_bios, bio)
    }

    pub fn free_bio(&mut self, id: BioId) -> Bio {
        let b = self.bios[id].take().expect("bio freed twice");
        self.free_bios.push(id);
        b
    }
}

impl Kernel {
    /// Check the model's accounting invariants; returns what is broken.
    /// Used by the tests after every event.
    pub fn check_invariants(&self) -> Result<(), String> {
        let ps = self.page_size();
        let total = self.sc.machine.memory / ps;
        let vm = &self.vm;
        if vm.nr_free_pages + vm.nr_file_pages + vm.nr_anon_pages + vm.nr_slab_reclaimable != total
        {
            return Err(format!(
                "free {} + file {} + anon {} + slab {} != total {}",
                vm.nr_free_pages, vm.nr_file_pages, vm.nr_anon_pages, vm.nr_slab_reclaimable, total
            ));
        }
        if self.zones.nr_free_pages() != vm.nr_free_pages {
            return Err(format!(
                "zones' free pages {} != nr_free_pages {}",
                self.zones.nr_free_pages(),
                vm.nr_free_pages
            ));
        }
        if vm.nr_inactive_file + vm.nr_active_file != vm.nr_file_pages {
            return Err("file LRU != nr_file_pages".into());
        }
        let (mut cached, mut dirty, mut wback) = (0u64, 0u64, 0u64);
        for (i, ino) in self.inodes.iter() {
            let d = ino.dirty.count();
            // a page can be dirty and under writeback at once (re-dirtied
            // while its writeback runs), so each count alone is bounded
            if d.max(ino.nr_writeback) > ino.nr_cached {
                return Err(format!(
                    "inode {i}: dirty {d} or writeback {} > cached {}",
                    ino.nr_writeback, ino.nr_cached
                ));
            }
            cached += ino.nr_cached;
            dirty += d;
            wback += ino.nr_writeback;
        }
        if cached != vm.nr_file_pages || dirty != vm.nr_dirty || wback != vm.nr_writeback {
            return Err(format!(
                "inode sums cached/dirty/writeback {cached}/{dirty}/{wback} != vmstat {}/{}/{}",
                vm.nr_file_pages, vm.nr_dirty, vm.nr_writeback
            ));
        }
        let wr: u64 = self.wbs.iter().map(|w| w.reclaimable).sum();
        let ww: u64 = self.wbs.iter().map(|w| w.writeback).sum();
        if wr != vm.nr_dirty || ww != vm.nr_writeback {
            return Err(format!(
                "wb stats {wr}/{ww} != vmstat {}/{}",
                vm.nr_dirty, vm.nr_writeback
            ));
        }
        if vm.nr_dirtied < vm.nr_written + vm.nr_dirty + vm.nr_writeback {
            return Err("nr_dirtied < nr_written + dirty + writeback".into());
        }
        for (i, d) in self.devs.iter().enumerate() {
            let live = self.bios.iter().flatten().filter(|b| b.dev == i).count() as u64;
            if d.stat.bios_submitted != d.stat.bios_completed + live {
                return Err(format!(
                    "dev {}: bios submitted {} != completed {} + in flight {live}",
                    d.name, d.stat.bios_submitted, d.stat.bios_completed
                ));
            }
            let waiting = (d.tag_waiters.len() + d.wbt.waiters.len()) as u64 + d.wbt_held;
            if d.stat.requests_issued != d.stat.ios() + d.stat.in_flight + waiting {
                return Err(format!(
                    "dev {}: requests issued {} != completed {} + in flight {} + waiting for a wbt token or tag {waiting}",
                    d.name, d.stat.requests_issued, d.stat.ios(), d.stat.in_flight
                ));
            }
            let tracked = self
                .reqs
                .iter()
                .flatten()
                .filter(|r| r.dev == i && r.wbt_tracked)
                .count() as u32;
            if tracked != d.wbt.inflight {
                return Err(format!(
                    "dev {}: wbt inflight {} != requests holding a token {tracked}",
                    d.name, d.wbt.inflight
                ));
            }
        }
        // a read file knows its cached pages by position (mm/readahead.rs)
        for (&i, f) in &self.ra.files {
            if f.present.count() != self.inodes[i].nr_cached {
                return Err(format!(
                    "inode {i}: {} pages cached by position != nr_cached {}",
                    f.present.count(),
                    self.inodes[i].nr_cached
                ));
            }
            if f.present.count() < f.locked.count() {
                return Err(format!("inode {i}: more pages under read than cached"));
            }
        }
        for (i, c) in self.cpus.iter().enumerate() {
            if let Some(p) = c.cur {
                if self.tasks[p].state != RunState::Running || self.tasks[p].cpu as usize != i {
                    return Err(format!("cpu {i} runs task {p} which is not running there"));
                }
            }
        }
        self.check_psi()
    }

    /// PSI's counts: each task's flags follow its state, and each CPU
    /// counts the flags of the tasks on it.
    fn check_psi(&self) -> Result<(), String> {
        use psi::{TSK_IOWAIT, TSK_MEMSTALL, TSK_RUNNING};
        let mut counts = vec![[0u32; 4]; self.cpus.len()];
        for (i, t) in self.tasks.iter().enumerate() {
            let f = t.psi_flags;
            let runnable = matches!(t.state, RunState::Runnable | RunState::Running);
            let iowait = t.state == RunState::Sleeping && t.stall == psi::Stall::Io;
            if (f & TSK_RUNNING != 0) != runnable
                || (f & TSK_MEMSTALL != 0) != (t.psi_hold != 0)
                || (f & TSK_IOWAIT != 0) != iowait
            {
                return Err(format!(
                    "task {i} ({}): psi flags {f:#x} (hold {:#x}) in state {:?}, stall {:?}",
                    t.comm, t.psi_hold, t.state, t.stall
                ));
            }
            for (b, n) in counts[t.cpu as usize].iter_mut().enumerate() {
                *n += u32::from(f & (1 << b) != 0);
            }
        }
        for (c, want) in counts.iter().enumerate() {
            let p = &self.psi.cpus[c];
            if p.tasks != *want {
                return Err(format!(
                    "cpu {c}: psi counts {:?} != its tasks' {want:?}",
                    p.tasks
                ));
            }
            if p.curr != self.cpus[c].cur {
                return Err(format!(
                    "cpu {c}: psi's current task {:?} != the running {:?}",
                    p.curr, self.cpus[c].cur
                ));
            }
        }
        // each cgroup's group counts its own tasks, and sees the CPU's
        // current task only if it is one of them
        for (g, grp) in self.psi.groups.iter().enumerate().skip(1) {
            let mut counts = vec![[0u32; 4]; self.cpus.len()];
            for t in (0..self.tasks.len()).filter(|&t| self.task_cgroup(t) == g) {
                let f = self.tasks[t].psi_flags;
                for (b, n) in counts[self.tasks[t].cpu as usize].iter_mut().enumerate() {
                    *n += u32::from(f & (1 << b) != 0);
                }
            }
            for (c, want) in counts.iter().enumerate() {
                let cur = self.cpus[c].cur.filter(|&p| self.task_cgroup(p) == g);
                if grp.cpus[c].tasks != *want || grp.cpus[c].curr != cur {
                    return Err(format!(
                        "cgroup {g} cpu {c}: psi counts {:?} (current {:?}) != its tasks' {want:?} (current {cur:?})",
                        grp.cpus[c].tasks, grp.cpus[c].curr
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The bytes at the start of a task that a dd writer's wakeups touch (up
/// to `plug`, and the vruntime under EEVDF): four cache lines.
const TASK_HOT_BYTES: usize = 256;
/// How many events ahead a task is prefetched: wbsim's tuning for a
/// thousand dd writers (a hint only; no output depends on it).
const PREFETCH_AHEAD: usize = 3;
/// What a dd writer's wakeup reads lies in those lines: the scheduling
/// fields, the body, the dirty-throttling counters, the throttle call
/// (a 6.x one inline), the plug and, under EEVDF, the entity's vruntime.
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(
        offset_of!(Task, se) + offset_of!(sched::SchedEntity, vruntime) + size_of::<u64>()
            <= TASK_HOT_BYTES
    );
    assert!(
        offset_of!(Task, throttle) + size_of::<crate::mm::page_writeback::ThrottleCall>()
            <= TASK_HOT_BYTES
    );
    assert!(
        offset_of!(Task, plug) + size_of::<Option<crate::block::blk_mq::Plug>>() <= TASK_HOT_BYTES
    );
    assert!(offset_of!(Task, nivcsw) + size_of::<u64>() <= TASK_HOT_BYTES);
};
/// A task's size, which a thousand writers' wakeups walk through: the state
/// of the older throttles' calls (3.2, legacy: 96 and 224 bytes) is boxed,
/// held only by a task inside such a call.
const _: () = assert!(std::mem::size_of::<Task>() <= 384);
