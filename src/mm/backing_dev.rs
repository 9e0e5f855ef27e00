//! `struct bdi_writeback` and its initialisation (include/linux/backing-dev-defs.h,
//! mm/backing-dev.c `wb_init`). One root wb per device: cgroup writeback is
//! not modelled yet, so every bdi has exactly one wb.

use crate::kernel::{DevId, InodeId, Pid};
use crate::klib::flex_proportions::FpropLocal;
use std::collections::VecDeque;

/// `INIT_BW`: 100 MiB/s in pages per second.
pub fn init_bw(page_size: u64) -> u64 {
    100 << (20 - crate::klib::ilog2(page_size))
}

pub struct Wb {
    /// `bdi_dev_name`: "MAJOR:MINOR".
    pub name: String,
    pub dev: DevId,
    /// The filesystem's superblock `s_dev` as (major, minor).
    pub sb_dev: (u32, u32),
    // stat[] counters (pages)
    pub reclaimable: u64,
    pub writeback: u64,
    pub dirtied: u64,
    pub written: u64,
    pub completions: FpropLocal,
    /// wbsim's cache of the last `__wb_calc_thresh`: (thresh, numerator,
    /// denominator of the wb's completion share, wb_thresh).
    pub thresh_cache: Option<(u64, u64, u64, u64)>,
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
    // bdi limits
    pub min_ratio: u64,
    pub max_ratio: u64,
    pub max_prop_frac: u64,
    /// BDI_CAP_STRICTLIMIT (sysfs `strict_limit`).
    pub strictlimit: bool,
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
}

impl Wb {
    pub fn new(name: String, dev: DevId, sb_dev: (u32, u32), now_j: u64, page_size: u64) -> Wb {
        let bw = init_bw(page_size);
        Wb {
            name,
            dev,
            sb_dev,
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
            min_ratio: 0,
            max_ratio: 100,
            max_prop_frac: 1024,
            strictlimit: false,
            writeback_running: false,
            has_dirty_io: false,
            b_dirty: VecDeque::new(),
            b_io: VecDeque::new(),
            b_more_io: VecDeque::new(),
            flusher: 0,
            dwork_at: None,
            dwork_gen: 0,
            bw_dwork_pending: false,
        }
    }

    /// `wb_has_dirty_io`.
    pub fn lists_nonempty(&self) -> bool {
        !(self.b_dirty.is_empty() && self.b_io.is_empty() && self.b_more_io.is_empty())
    }
}
