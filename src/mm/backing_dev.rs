//! `struct backing_dev_info` and `struct bdi_writeback`
//! (include/linux/backing-dev-defs.h, mm/backing-dev.c `bdi_init`,
//! `wb_init`). A bdi is a device's writeback identity and its sysfs limits;
//! its wbs hold the dirty inodes, the counters, the bandwidth estimate, the
//! ratelimit and the flusher. Each bdi has its root wb (`bdi->wb`); cgroup
//! writeback adds one wb per memory cgroup that writes to the device.

use crate::kernel::{DevId, InodeId, Kernel, Pid, WbId};
use crate::klib::flex_proportions::FpropLocal;
use std::collections::VecDeque;

/// `INIT_BW`: 100 MiB/s in pages per second.
pub fn init_bw(page_size: u64) -> u64 {
    100 << (20 - crate::klib::ilog2(page_size))
}

/// Index of a bdi in `Kernel::bdis`.
pub type BdiId = usize;

/// `struct backing_dev_info`: one per block device that carries a
/// filesystem.
pub struct Bdi {
    /// `bdi_dev_name`: "MAJOR:MINOR".
    pub name: String,
    pub dev: DevId,
    /// sysfs `min_ratio` and `max_ratio` (percent of the dirty threshold),
    /// and `max_prop_frac` (`max_ratio` as a fraction of FPROP_FRAC_BASE:
    /// 1024).
    pub min_ratio: u64,
    pub max_ratio: u64,
    pub max_prop_frac: u64,
    /// BDI_CAP_STRICTLIMIT (sysfs `strict_limit`).
    pub strictlimit: bool,
    /// Its wbs, the root wb (`bdi->wb`) first.
    pub wbs: Vec<WbId>,
}

impl Bdi {
    pub fn new(name: String, dev: DevId) -> Bdi {
        Bdi {
            name,
            dev,
            min_ratio: 0,
            max_ratio: 100,
            max_prop_frac: 1024,
            strictlimit: false,
            wbs: Vec::new(),
        }
    }
}

/// `struct bdi_writeback`.
pub struct Wb {
    pub bdi: BdiId,
    /// The memory cgroup it writes for (`wb->memcg_css`; 0: the root wb).
    pub memcg: usize,
    /// Its completions in its memcg's `wb_domain` (`wb->memcg_completions`).
    pub memcg_completions: FpropLocal,
    // stat[] counters (pages)
    pub reclaimable: u64,
    pub writeback: u64,
    pub dirtied: u64,
    pub written: u64,
    pub completions: FpropLocal,
    /// wbsim's cache of the last `__wb_calc_thresh`: (knob generation,
    /// thresh, numerator and denominator of the wb's completion share,
    /// wb_thresh). The generation covers the bdis' min and max ratios.
    #[allow(clippy::type_complexity)]
    pub thresh_cache: Option<(u32, u64, u64, u64, u64)>,
    /// And of the last `wb_min_pause`: ((avg_write_bandwidth,
    /// dirty_ratelimit, max_pause, task_ratelimit), (min_pause, nr_dirtied_pause)).
    #[allow(clippy::type_complexity)]
    pub min_pause_cache: Option<((u64, u64, u64, u64), (i64, u64))>,
    /// And of the wb line's scale factor.
    pub line_scale: crate::mm::page_writeback::LineScale,
    // bandwidth estimation
    pub bw_time_stamp: u64,
    pub dirtied_stamp: u64,
    pub written_stamp: u64,
    pub write_bandwidth: u64,
    pub avg_write_bandwidth: u64,
    pub dirty_ratelimit: u64,
    pub balanced_dirty_ratelimit: u64,
    pub dirty_exceeded: bool,
    pub dirty_sleep: u64,
    /// Inodes with pages under writeback.
    pub writeback_inodes: u64,
    pub last_old_flush: u64,
    // flusher state bits
    pub writeback_running: bool,
    pub has_dirty_io: bool,
    /// Inode lists: the head is the front, the kernel consumes from the tail (back).
    pub b_dirty: VecDeque<InodeId>,
    pub b_io: VecDeque<InodeId>,
    pub b_more_io: VecDeque<InodeId>,
    /// The flusher kworker that runs this wb's work item.
    pub flusher: Pid,
    /// When the work item is queued to run (None: not queued), and its generation.
    pub dwork_at: Option<u64>,
    pub dwork_gen: u32,
    /// `wb->bw_dwork`: queued and not yet started, and the tick its timer
    /// fires on.
    pub bw_dwork_pending: bool,
    pub bw_dwork_due: crate::sim::Ns,
    /// `wb->work_list`: queued works, here only foreign flushes (pages,
    /// and the memcg record (cgroup, slot) to tell when it is done).
    pub work_list: VecDeque<(i64, (usize, usize))>,
    /// `WB_start_all` with `start_all_reason`: a "write everything"
    /// request (`wakeup_flusher_threads`) waiting for the flusher.
    pub start_all: Option<crate::fs::fs_writeback::WbReason>,
}

impl Wb {
    pub fn new(bdi: BdiId, now_j: u64, page_size: u64) -> Wb {
        let bw = init_bw(page_size);
        Wb {
            bdi,
            memcg: 0,
            memcg_completions: FpropLocal::default(),
            reclaimable: 0,
            writeback: 0,
            dirtied: 0,
            written: 0,
            completions: FpropLocal::default(),
            thresh_cache: None,
            min_pause_cache: None,
            line_scale: Default::default(),
            bw_time_stamp: now_j,
            dirtied_stamp: 0,
            written_stamp: 0,
            write_bandwidth: bw,
            avg_write_bandwidth: bw,
            dirty_ratelimit: bw,
            balanced_dirty_ratelimit: bw,
            dirty_exceeded: false,
            dirty_sleep: now_j,
            writeback_inodes: 0,
            last_old_flush: now_j,
            writeback_running: false,
            has_dirty_io: false,
            b_dirty: VecDeque::new(),
            b_io: VecDeque::new(),
            b_more_io: VecDeque::new(),
            flusher: 0,
            dwork_at: None,
            dwork_gen: 0,
            bw_dwork_pending: false,
            bw_dwork_due: 0,
            work_list: VecDeque::new(),
            start_all: None,
        }
    }

    /// `wb_has_dirty_io`.
    pub fn lists_nonempty(&self) -> bool {
        !(self.b_dirty.is_empty() && self.b_io.is_empty() && self.b_more_io.is_empty())
    }
}

impl Kernel {
    /// The bdi of `dev`, made with its root wb the first time it is asked
    /// for (`bdi_alloc` + `bdi_register` when the device is added), with
    /// the device's sysfs settings and starting state.
    pub fn bdi_of_dev(&mut self, dev: DevId) -> BdiId {
        if let Some(b) = self.bdis.iter().position(|b| b.dev == dev) {
            return b;
        }
        let ps = self.page_size();
        let d = &self.sc.devices[dev];
        let mut bdi = Bdi::new(format!("{}:{}", d.major, d.minor), dev);
        let conf = d.bdi.clone();
        bdi.strictlimit = conf.strict_limit;
        let id = self.bdis.len();
        let mut wb = Wb::new(id, self.jiffies(), ps);
        if let Some(bw) = conf.write_bandwidth {
            wb.write_bandwidth = (bw / ps).max(1);
            wb.avg_write_bandwidth = wb.write_bandwidth;
        }
        if let Some(r) = conf.dirty_ratelimit {
            wb.dirty_ratelimit = (r / ps).max(1);
            wb.balanced_dirty_ratelimit = wb.dirty_ratelimit;
        }
        bdi.wbs.push(self.wbs.len());
        self.wbs.push(wb);
        self.bdis.push(bdi);
        self.bdi_set_min_ratio(id, conf.min_ratio);
        self.bdi_set_max_ratio(id, conf.max_ratio);
        id
    }

    /// `bdi_set_min_ratio` (sysfs `min_ratio`). The scenario has checked
    /// what the kernel refuses (above max_ratio, a sum above 100).
    pub fn bdi_set_min_ratio(&mut self, bdi: BdiId, ratio: u64) {
        self.bdis[bdi].min_ratio = ratio;
    }

    /// `bdi_set_max_ratio` (sysfs `max_ratio`): also the cap on the bdi's
    /// completion share (`max_prop_frac`).
    pub fn bdi_set_max_ratio(&mut self, bdi: BdiId, ratio: u64) {
        let b = &mut self.bdis[bdi];
        b.max_ratio = ratio;
        b.max_prop_frac = 1024 * ratio / 100;
    }

    /// The `bdi_wq` worker (`alloc_workqueue("writeback", WQ_UNBOUND, ...)`)
    /// for the wbs' `bw_dwork`: a kthread the work's timer wakes, so the
    /// delayed bandwidth update runs after a wakeup and on a CPU like any
    /// task, not in the timer's instant (the flushers' work items have
    /// kworkers of their own).
    pub fn bdi_wq_init(&mut self) {
        let comm = format!(
            "kworker/u{}:{}",
            2 * self.sc.machine.cpus,
            self.sc.filesystems.len() + 1
        );
        self.bdi_wq = Some(self.new_task(comm, crate::kernel::Body::BdiWq(None), None));
    }

    /// The `bdi_wq` worker's logic (`worker_thread` → `process_one_work` →
    /// `wb_update_bandwidth_workfn`). A work whose timer has fired is
    /// taken off pending as it starts (a writeback end queues it anew from
    /// then on), costs one bandwidth computation of CPU
    /// (`machine.cost.bdp_call`), then updates the estimate. With none due
    /// the worker sleeps until the next timer, or until one is queued.
    pub fn bdi_wq_step(&mut self, pid: Pid, running: &mut Option<WbId>) -> crate::kernel::Action {
        use crate::kernel::Action;
        if let Some(wb) = running.take() {
            self.wb_update_bandwidth(wb, pid);
        }
        let now = self.q.now();
        let next = (0..self.wbs.len())
            .filter(|&w| self.wbs[w].bw_dwork_pending)
            .min_by_key(|&w| (self.wbs[w].bw_dwork_due, w));
        match next {
            Some(wb) if self.wbs[wb].bw_dwork_due <= now => {
                self.wbs[wb].bw_dwork_pending = false;
                *running = Some(wb);
                Action::Cpu {
                    user: 0,
                    sys: self.sc.machine.cost.bdp_call,
                }
            }
            Some(wb) => Action::SleepUntil(self.wbs[wb].bw_dwork_due),
            None => Action::Block,
        }
    }

    /// `wb_get_lookup`: the wb of memcg `cg` on `bdi`, if it exists.
    pub fn wb_get_lookup(&self, bdi: BdiId, cg: usize) -> Option<WbId> {
        self.bdis[bdi]
            .wbs
            .iter()
            .copied()
            .find(|&w| self.wbs[w].memcg == cg)
    }

    /// `wb_get_create` (`cgwb_create`): the wb of memcg `cg` on `bdi`,
    /// made on first use with `wb_init`'s starting state (INIT_BW) and its
    /// own flusher kworker (the kernel runs every wb's work item on the
    /// unbound `bdi_wq`; wbsim gives each wb a kworker of its own).
    pub fn wb_get_create(&mut self, bdi: BdiId, cg: usize) -> WbId {
        if let Some(w) = self.wb_get_lookup(bdi, cg) {
            return w;
        }
        let id = self.wbs.len();
        let mut wb = Wb::new(bdi, self.jiffies(), self.page_size());
        wb.memcg = cg;
        self.wbs.push(wb);
        self.bdis[bdi].wbs.push(id);
        let comm = format!("kworker/u{}:{}", 2 * self.sc.machine.cpus, 100 + id);
        let body =
            crate::kernel::Body::Flusher(Box::new(crate::fs::fs_writeback::FlusherState::new(id)));
        let flusher = self.new_task(comm, body, None);
        self.wbs[id].flusher = flusher;
        id
    }

    /// The wb a task dirtying through `wb`'s bdi is throttled against
    /// (`wb_get_create_current`): its own memcg's; `wb` itself when the
    /// run has no cgroups or the task's memcg is the wb's.
    #[inline]
    pub fn wb_of_current(&mut self, pid: Pid, wb: WbId) -> WbId {
        if !self.cg.enabled || !self.sc.features.cgroup_writeback {
            return wb;
        }
        let cg = self.task_cgroup(pid);
        if self.wbs[wb].memcg == cg {
            return wb;
        }
        self.wb_get_create(self.wbs[wb].bdi, cg)
    }

    /// `wb_of_current` without making the wb (a read-only estimate: the
    /// wb the task's next check throttles against, once it exists).
    #[inline]
    pub fn wb_lookup_current(&self, pid: Pid, wb: WbId) -> WbId {
        if !self.cg.enabled || !self.sc.features.cgroup_writeback {
            return wb;
        }
        let cg = self.task_cgroup(pid);
        if self.wbs[wb].memcg == cg {
            return wb;
        }
        self.wb_get_lookup(self.wbs[wb].bdi, cg).unwrap_or(wb)
    }

    /// `cgroup_ino` of a wb's memcg, as the writeback tracepoints print it.
    #[inline]
    pub fn wb_cgroup_ino(&self, wb: WbId) -> u64 {
        if !self.cg.enabled {
            return 1;
        }
        self.cgroup_ino(self.wbs[wb].memcg)
    }

    /// The bdi a wb belongs to.
    #[inline]
    pub fn wb_bdi(&self, wb: WbId) -> &Bdi {
        &self.bdis[self.wbs[wb].bdi]
    }

    /// `bdi_dev_name(wb->bdi)`: "MAJOR:MINOR", as tracepoints print it.
    #[inline]
    pub fn wb_name(&self, wb: WbId) -> &str {
        &self.wb_bdi(wb).name
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::Kernel;
    use crate::scenario::Scenario;

    /// Linux 6.x on an ssd whose only writer starts late: nothing but the
    /// test touches the wb's bandwidth estimate in the first seconds.
    fn kernel() -> Kernel {
        let toml =
            "[machine]\ncpus = 2\n[machine.cost]\nwakeup = \"5us\"\nwakeup_jitter = \"0s\"\n\
             [devices.sda]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"sda\"\n\
             [jobs.dd]\nnumjobs = 1\nbs = \"1M\"\nstart = \"10s\"\n\
             [run]\nduration = \"20s\"\nwarmup = \"0s\"\n";
        let sc = Scenario::load_str(toml, "t.toml", "t", &[]).unwrap();
        Kernel::new(sc, crate::trace::Tracer::disabled())
    }

    /// Step the kernel until `wb`'s bandwidth stamp moves; the time then.
    fn next_update(k: &mut Kernel, wb: usize) -> u64 {
        let stamp = k.wbs[wb].bw_time_stamp;
        while k.wbs[wb].bw_time_stamp == stamp {
            assert!(k.step(), "the run ended before the update");
        }
        k.q.now()
    }

    /// `bw_dwork` fires on the tick BANDWIDTH_INTERVAL after it is queued,
    /// and the update runs in the `bdi_wq` worker once that is woken and on
    /// a CPU (its wakeup, then one bandwidth computation), not in the
    /// tick's instant. Queueing while it is pending changes nothing.
    #[test]
    fn bw_dwork_runs_in_its_worker_after_the_timer() {
        let mut k = kernel();
        let wb = k.sbs[0].wb;
        let worker = k.bdi_wq.expect("6.x has the bdi_wq worker");
        // run to 1 s, mid-tick
        while k.q.now() < 1_001_000_000 {
            assert!(k.step());
        }
        k.queue_bw_dwork(wb);
        let due = k.wbs[wb].bw_dwork_due;
        let tick = 1_000_000_000 / k.sc.machine.hz;
        assert_eq!(due % tick, 0, "a timer fires on a tick");
        assert!(due >= k.q.now() + 50 * tick && due <= k.q.now() + 51 * tick);
        k.queue_bw_dwork(wb);
        assert_eq!(
            k.wbs[wb].bw_dwork_due, due,
            "pending: the second queue is a no-op"
        );
        let at = next_update(&mut k, wb);
        let run = k.sc.machine.cost.wakeup + k.sc.machine.cost.bdp_call;
        assert_eq!(at, due + run);
        assert!(!k.wbs[wb].bw_dwork_pending);
        assert_eq!(k.tasks[worker].state, crate::kernel::RunState::Sleeping);
        // queued again, it runs again one interval later
        k.queue_bw_dwork(wb);
        let due2 = k.wbs[wb].bw_dwork_due;
        assert!(due2 > at);
        assert_eq!(next_update(&mut k, wb), due2 + run);
    }

    /// Older kernels (before 5.14) have no `bw_dwork` and no worker.
    #[test]
    fn no_worker_without_bw_dwork() {
        let toml = "[devices.sda]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"sda\"\n\
             [jobs.dd]\nnumjobs = 1\n[run]\nduration = \"1s\"\nwarmup = \"0s\"\n\
             dirty_throttle = \"io-less-3.2\"\n";
        let sc = Scenario::load_str(toml, "t.toml", "t", &[]).unwrap();
        let k = Kernel::new(sc, crate::trace::Tracer::disabled());
        assert!(k.bdi_wq.is_none());
    }
}
