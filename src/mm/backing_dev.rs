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
    pub bw_dwork_pending: bool,
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
