//! The flusher (fs/fs-writeback.c): one kworker per wb running `wb_workfn`.
//!
//! `wb_workfn` → `wb_do_writeback` → queued works, start-all, kupdate,
//! background → `wb_writeback` loop → `queue_io` / `writeback_sb_inodes` →
//! per-inode `__writeback_single_inode` (ext4 ->writepages) → `requeue_inode`.
//! It is a resumable state machine: it gives up the CPU model after each
//! bio it builds, so dirtiers and completions interleave with it as they do
//! on a real machine. The whole work item runs under one plug (6.x), which
//! for the devices modelled so far has no effect on request sizes.

use super::{WbList, I_DIRTY_PAGES, I_SYNC, I_SYNC_QUEUED};
use crate::kernel::{Action, Ev, InodeId, Kernel, Pid, WbId};
use crate::sim::Ns;

/// `enum wb_reason`, with the tracepoint's symbolic names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbReason {
    Background = 0,
    Vmscan = 1,
    Sync = 2,
    Periodic = 3,
}

impl WbReason {
    pub fn name(self) -> &'static str {
        match self {
            WbReason::Background => "background",
            WbReason::Vmscan => "vmscan",
            WbReason::Sync => "sync",
            WbReason::Periodic => "periodic",
        }
    }
}

/// `struct wb_writeback_work`.
#[derive(Clone, Debug)]
pub struct WbWork {
    pub nr_pages: i64,
    pub sync_all: bool,
    pub for_kupdate: bool,
    pub for_background: bool,
    pub range_cyclic: bool,
    pub reason: WbReason,
}

impl WbWork {
    /// `wbc_to_write_flags`: WB_SYNC_ALL writes are REQ_SYNC, background
    /// and periodic writeback REQ_BACKGROUND.
    pub fn write_flags(&self) -> u8 {
        use crate::block::blk_wbt::{REQ_BACKGROUND, REQ_SYNC};
        if self.sync_all {
            REQ_SYNC
        } else if self.for_kupdate || self.for_background {
            REQ_BACKGROUND
        } else {
            0
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Pc {
    #[default]
    Idle,
    Start,
    NextWork,
    Iterate,
    Pass,
}

/// The inode being written by `__writeback_single_inode`.
#[derive(Clone, Debug, Default)]
pub struct InodeWb {
    ino: InodeId,
    /// ext4_writepages' own plug (a no-op under the flusher's).
    plug: bool,
    chunk: i64,
    nr_to_write: i64,
    /// ext4_writepages range_cyclic: where this call started, and whether it
    /// has wrapped to page 0.
    start_index: u64,
    cursor: u64,
    cycled: bool,
}

/// One call of `writeback_sb_inodes` (via `__writeback_inodes_wb`):
/// write the inodes at the tail of b_io, a chunk each, until b_io is
/// empty, the work's page budget is spent or HZ/10 has passed. Resumable:
/// it yields after building each bio, so it can run in the flusher or, for
/// the legacy policy, in a dirtier's own context.
#[derive(Debug)]
pub struct WbPass {
    pub work: WbWork,
    /// Pages per inode visit: None for 6.x `writeback_chunk_size`,
    /// Some(1024) for the pre-3.2 `MAX_WRITEBACK_PAGES`.
    pub chunk_cap: Option<i64>,
    start: u64,
    /// Pages written plus inodes cleaned (the kernel's "progress").
    pub progress: i64,
    pub pages: i64,
    inode: Option<InodeWb>,
    /// Bios built during the current CPU burst, submitted when it ends.
    pending: Vec<(InodeId, u64, u64)>,
}

pub enum PassStep {
    /// Build and submit a bio: this much system CPU time.
    Cpu(Ns),
    /// Sleep until a tag frees (the requests already wait in order).
    WaitTag,
    Done,
}

impl WbPass {
    pub fn new(work: WbWork, chunk_cap: Option<i64>, now_j: u64) -> WbPass {
        WbPass {
            work,
            chunk_cap,
            start: now_j,
            progress: 0,
            pages: 0,
            inode: None,
            pending: Vec::new(),
        }
    }
}

#[derive(Default)]
pub struct FlusherState {
    pc: Pc,
    /// The work item was queued again while it ran: run once more.
    rerun: bool,
    /// wb_do_writeback's position: 0 queued works, 1 start-all, 2 kupdate,
    /// 3 background, 4 done.
    stage: u8,
    work: Option<WbWork>,
    nr0: i64,
    dirtied_before: u64,
    written_total: i64,
    pass: Option<WbPass>,
    /// The plug around the whole work item (`run.flusher_plug`).
    plug: bool,
    wb: WbId,
}

impl Kernel {
    fn writeback_interval_j(&self) -> u64 {
        self.sc.vm.dirty_writeback_centisecs * self.hz() / 100
    }

    /// Queue the wb's work item to run at `at` unless it already runs
    /// earlier (`queue_delayed_work` / `mod_delayed_work`).
    fn wb_queue_dwork(&mut self, wb: WbId, at: Ns, modify: bool) {
        let w = &mut self.wbs[wb];
        if let Some(cur) = w.dwork_at {
            if !modify || cur <= at {
                return;
            }
        }
        w.dwork_at = Some(at);
        w.dwork_gen += 1;
        let gen = w.dwork_gen;
        self.q.schedule(at, Ev::WbWorkfn { wb: wb as u32, gen });
    }

    /// `wb_wakeup`: run the work item now.
    pub fn wb_wakeup(&mut self, wb: WbId) {
        let now = self.now();
        self.wb_queue_dwork(wb, now, true);
    }

    /// `wb_wakeup_delayed`: run it `dirty_writeback_interval` from now.
    pub fn wb_wakeup_delayed(&mut self, wb: WbId) {
        // queue_delayed_work(bdi_wq, &wb->dwork, msecs_to_jiffies(interval))
        let j = self.jiffies() + self.writeback_interval_j();
        let at = self.timer_fire_time(j);
        self.wb_queue_dwork(wb, at, false);
    }

    /// `wb_start_background_writeback`.
    pub fn wb_start_background_writeback(&mut self, wb: WbId, pid: Pid) {
        if self.tracer.on.writeback_wake_background {
            let name = self.wbs[wb].name.clone();
            self.trace_line(
                pid,
                "writeback_wake_background",
                format_args!("bdi {name}: cgroup_ino=1"),
            );
        }
        self.wb_wakeup(wb);
    }

    pub fn wb_workfn_fire(&mut self, wb: WbId, gen: u32) {
        if self.wbs[wb].dwork_gen != gen || self.wbs[wb].dwork_at.is_none() {
            return;
        }
        // The timer expired: the work is queued to the worker and stays
        // pending (further wakeups are no-ops) until the worker starts it.
        self.wbs[wb].dwork_at = Some(self.now());
        let pid = self.wbs[wb].flusher;
        let Some(crate::kernel::Body::Flusher(f)) = self.tasks[pid].body.as_mut() else {
            return;
        };
        if f.pc == Pc::Idle {
            f.pc = Pc::Start;
            f.wb = wb;
            self.wake_up_process(pid);
        } else {
            f.rerun = true;
        }
    }

    fn trace_work(&mut self, pid: Pid, wb: WbId, ev: &'static str, w: &WbWork) {
        let name = &self.wbs[wb].name;
        let line = format!(
            "bdi {}: sb_dev 0:0 nr_pages={} sync_mode={} kupdate={} range_cyclic={} background={} reason={} cgroup_ino=1",
            name,
            w.nr_pages,
            w.sync_all as u8,
            w.for_kupdate as u8,
            w.range_cyclic as u8,
            w.for_background as u8,
            w.reason.name()
        );
        self.trace_line(pid, ev, format_args!("{line}"));
    }

    /// `get_nr_dirty_pages`: NR_FILE_DIRTY plus the dirty inodes.
    fn get_nr_dirty_pages(&self) -> i64 {
        let inodes = self
            .inodes
            .iter()
            .filter(|(_, i)| i.i_state & I_DIRTY_PAGES != 0)
            .count();
        (self.vm.nr_dirty as usize + inodes) as i64
    }

    /// `writeback_chunk_size` (6.x), or the pre-3.2 fixed `cap`.
    fn writeback_chunk_size(&self, wb: WbId, work: &WbWork, cap: Option<i64>) -> i64 {
        if work.sync_all {
            return i64::MAX;
        }
        if let Some(c) = cap {
            return c.min(work.nr_pages.max(0)).max(1);
        }
        let min_wb = 4096 >> (crate::klib::ilog2(self.page_size()) - 10);
        let mut pages = (self.wbs[wb].avg_write_bandwidth / 2).min(self.dom.dirty_limit / 8) as i64;
        pages = pages.min(work.nr_pages);
        (pages + min_wb) / min_wb * min_wb
    }

    /// `queue_io` and `move_expired_inodes`.
    pub fn queue_io(&mut self, pid: Pid, wb: WbId, work: &WbWork, dirtied_before: u64) {
        let w = &mut self.wbs[wb];
        // b_io is empty here: b_more_io becomes b_io in order
        while let Some(i) = w.b_more_io.pop_back() {
            w.b_io.push_front(i);
            let inode = &mut self.inodes[i];
            inode.list = Some(WbList::Io);
            inode.i_state |= I_SYNC_QUEUED;
        }
        let mut moved = 0;
        while let Some(&i) = w.b_dirty.back() {
            let inode = &mut self.inodes[i];
            if inode.dirtied_when > dirtied_before {
                break;
            }
            inode.list = Some(WbList::Io);
            inode.i_state |= I_SYNC_QUEUED;
            w.b_dirty.pop_back();
            w.b_io.push_front(i);
            moved += 1;
        }
        if self.tracer.on.writeback_queue_io {
            let now = self.jiffies() as i64;
            let age = self.jif.to_msecs(now - dirtied_before as i64);
            let name = self.wbs[wb].name.clone();
            self.trace_line(
                pid,
                "writeback_queue_io",
                format_args!("bdi {name}: older={dirtied_before} age={age} enqueue={moved} reason={} cgroup_ino=1", work.reason.name()),
            );
        }
    }

    /// `requeue_inode` after an inode's turn.
    fn requeue_inode(&mut self, ino: InodeId, nr_to_write: i64) {
        let still_dirty = !self.inodes[ino].dirty.is_empty();
        if still_dirty {
            self.inodes[ino].i_state |= I_DIRTY_PAGES;
            if nr_to_write <= 0 {
                // requeue_io: head of b_more_io, dirtied_when unchanged
                self.inode_list_move(ino, Some(WbList::MoreIo));
            } else {
                self.redirty_tail(ino);
            }
        } else {
            self.inodes[ino].i_state &= !I_DIRTY_PAGES;
            self.inode_list_move(ino, None);
        }
        self.inodes[ino].i_state &= !I_SYNC_QUEUED;
    }

    /// `redirty_tail_locked`: back to the head of b_dirty, keeping it sorted.
    fn redirty_tail(&mut self, ino: InodeId) {
        let wb = self.inodes[ino].wb;
        if let Some(&newest) = self.wbs[wb].b_dirty.front() {
            if self.inodes[ino].dirtied_when < self.inodes[newest].dirtied_when {
                self.inodes[ino].dirtied_when = self.jiffies();
            }
        }
        self.inode_list_move(ino, Some(WbList::Dirty));
        self.inodes[ino].i_state &= !I_SYNC_QUEUED;
    }

    /// The flusher kworker's logic after each CPU burst.
    pub fn flusher_step(&mut self, pid: Pid, f: &mut FlusherState) -> Action {
        let wb = f.wb;
        let hz = self.hz();
        loop {
            match f.pc {
                Pc::Idle => return Action::Block,
                Pc::Start => {
                    // the work item starts running: it is no longer pending
                    self.wbs[wb].dwork_at = None;
                    self.wbs[wb].writeback_running = true;
                    f.stage = 0;
                    f.written_total = 0;
                    f.pc = Pc::NextWork;
                }
                Pc::NextWork => {
                    let now = self.jiffies();
                    let work = match f.stage {
                        0 => match self.wbs[wb].work_list.pop_front() {
                            Some(w) => Some(w),
                            None => {
                                f.stage = 1;
                                None
                            }
                        },
                        1 => {
                            f.stage = 2;
                            if self.wbs[wb].start_all {
                                self.wbs[wb].start_all = false;
                                Some(WbWork {
                                    nr_pages: self.get_nr_dirty_pages(),
                                    sync_all: false,
                                    for_kupdate: false,
                                    for_background: false,
                                    range_cyclic: true,
                                    reason: WbReason::Sync,
                                })
                            } else {
                                None
                            }
                        }
                        2 => {
                            f.stage = 3;
                            let iv = self.writeback_interval_j();
                            if iv != 0 && now >= self.wbs[wb].last_old_flush + iv {
                                self.wbs[wb].last_old_flush = now;
                                let nr = self.get_nr_dirty_pages();
                                (nr > 0).then_some(WbWork {
                                    nr_pages: nr,
                                    sync_all: false,
                                    for_kupdate: true,
                                    for_background: false,
                                    range_cyclic: true,
                                    reason: WbReason::Periodic,
                                })
                            } else {
                                None
                            }
                        }
                        3 => {
                            f.stage = 4;
                            if self.wb_over_bg_thresh(wb, pid) {
                                Some(WbWork {
                                    nr_pages: i64::MAX,
                                    sync_all: false,
                                    for_kupdate: false,
                                    for_background: true,
                                    range_cyclic: true,
                                    reason: WbReason::Background,
                                })
                            } else {
                                None
                            }
                        }
                        _ => {
                            // end of wb_do_writeback
                            if self.tracer.on.writeback_pages_written {
                                let n = f.written_total;
                                self.trace_line(
                                    pid,
                                    "writeback_pages_written",
                                    format_args!("{n}"),
                                );
                            }
                            self.wbs[wb].writeback_running = false;
                            if !self.wbs[wb].work_list.is_empty() {
                                f.pc = Pc::Start;
                                continue;
                            }
                            if self.wbs[wb].lists_nonempty() && self.writeback_interval_j() != 0 {
                                self.wb_wakeup_delayed(wb);
                            }
                            if f.rerun {
                                f.rerun = false;
                                f.pc = Pc::Start;
                                continue;
                            }
                            f.pc = Pc::Idle;
                            return Action::Block;
                        }
                    };
                    if let Some(w) = work {
                        if self.sc.features.flusher_plug {
                            f.plug = self.blk_start_plug(pid);
                        }
                        f.nr0 = w.nr_pages;
                        f.dirtied_before = now;
                        f.work = Some(w);
                        f.pc = Pc::Iterate;
                    }
                }
                Pc::Iterate => {
                    // top of the wb_writeback loop
                    let w = f.work.as_ref().expect("work");
                    let yield_to_queued =
                        (w.for_background || w.for_kupdate) && !self.wbs[wb].work_list.is_empty();
                    let done = w.nr_pages <= 0
                        || yield_to_queued
                        || (w.for_background && !self.wb_over_bg_thresh(wb, pid));
                    if done {
                        let w = f.work.take().expect("work");
                        f.written_total += f.nr0 - w.nr_pages;
                        self.blk_finish_plug(pid, std::mem::take(&mut f.plug));
                        f.pc = Pc::NextWork;
                        continue;
                    }
                    let now = self.jiffies();
                    let w = f.work.as_ref().expect("work");
                    if w.for_kupdate {
                        f.dirtied_before =
                            now.saturating_sub(self.sc.vm.dirty_expire_centisecs * hz / 100);
                    } else if w.for_background {
                        f.dirtied_before = now;
                    }
                    let w = w.clone();
                    if self.tracer.on.writeback_start {
                        self.trace_work(pid, wb, "writeback_start", &w);
                    }
                    if self.wbs[wb].b_io.is_empty() {
                        self.queue_io(pid, wb, &w, f.dirtied_before);
                    }
                    let w = f.work.take().expect("work");
                    f.pass = Some(WbPass::new(w, self.legacy_chunk_cap(), now));
                    f.pc = Pc::Pass;
                }
                Pc::Pass => {
                    let pass = f.pass.as_mut().expect("pass");
                    match self.wb_pass_step(pid, wb, pass) {
                        PassStep::Cpu(ns) => return Action::Cpu { user: 0, sys: ns },
                        PassStep::WaitTag => return Action::Block,
                        PassStep::Done => {}
                    }
                    // end of this wb_writeback iteration
                    let pass = f.pass.take().expect("pass");
                    if self.tracer.on.writeback_written {
                        self.trace_work(pid, wb, "writeback_written", &pass.work);
                    }
                    if pass.progress > 0 || !self.wbs[wb].b_more_io.is_empty() {
                        f.work = Some(pass.work);
                        f.pc = Pc::Iterate;
                    } else {
                        f.written_total += f.nr0 - pass.work.nr_pages;
                        self.blk_finish_plug(pid, std::mem::take(&mut f.plug));
                        f.pc = Pc::NextWork;
                    }
                }
            }
        }
    }

    /// Pages per inode visit before 3.2's `writeback_chunk_size`.
    pub fn legacy_chunk_cap(&self) -> Option<i64> {
        // MAX_WRITEBACK_PAGES: 1024 4 KiB pages
        (!self.sc.features.writeback_chunk_v3_2)
            .then(|| 1024 >> (crate::klib::ilog2(self.page_size()) - 12))
    }

    /// Advance a `writeback_sb_inodes` pass: submit the bio built during the
    /// last CPU burst, then build the next one, or finish.
    pub fn wb_pass_step(&mut self, pid: Pid, wb: WbId, p: &mut WbPass) -> PassStep {
        let mut wait = false;
        let mut pending = std::mem::take(&mut p.pending);
        let opf = p.work.write_flags();
        for (ino, start, n) in pending.drain(..) {
            wait |= self.fs_writepages(pid, ino, start, n, opf);
        }
        p.pending = pending; // keep the buffer
        if wait {
            return PassStep::WaitTag;
        }
        let hz = self.hz();
        // Small bios are built several to a CPU burst (up to BURST of work):
        // nothing sleeps in between, so the plug sees the same sequence.
        const BURST: Ns = 50_000;
        let mut burst: Ns = 0;
        loop {
            if let Some(iw) = p.inode.as_mut() {
                if iw.nr_to_write > 0 {
                    if let Some((start, n)) = self.writeback_next_run(
                        iw.ino,
                        iw.cursor,
                        iw.nr_to_write as u64,
                        iw.cycled,
                        iw.start_index,
                    ) {
                        iw.cursor = start + n;
                        iw.nr_to_write -= n as i64;
                        self.start_writeback_range(iw.ino, n);
                        p.pending.push((iw.ino, start, n));
                        let c = &self.sc.machine.cost;
                        burst += n * c.writeback_per_page + c.bio_submit;
                        if burst >= BURST {
                            return PassStep::Cpu(burst);
                        }
                        continue;
                    }
                    if !iw.cycled {
                        // ext4_writepages range_cyclic: wrap to 0 once
                        iw.cycled = true;
                        iw.cursor = 0;
                        continue;
                    }
                }
                // the end of ->writepages submits what it built: after a
                // burst's worth of CPU, or at once for a short one (a small
                // file), whose CPU time then goes with the batch's burst
                if !p.pending.is_empty() {
                    if burst >= BURST {
                        return PassStep::Cpu(burst);
                    }
                    let opf = p.work.write_flags();
                    let mut pending = std::mem::take(&mut p.pending);
                    let mut wait = false;
                    for (ino, start, n) in pending.drain(..) {
                        wait |= self.fs_writepages(pid, ino, start, n, opf);
                    }
                    p.pending = pending;
                    if wait {
                        self.tasks[pid].owed_sys += burst;
                        return PassStep::WaitTag;
                    }
                }
                let iw = p.inode.take().expect("inode");
                self.blk_finish_plug(pid, iw.plug);
                // writeback_sb_inodes: if another task wants this CPU, flush
                // the plug before cond_resched() (Linux >= 4.3, 590dca3a7187):
                // a woken task (fs_mark back from its balance_dirty_pages
                // pause) or an expired slice
                if self.need_resched(pid) {
                    self.blk_flush_plug(pid);
                }
                self.inodes[iw.ino].writeback_index = iw.cursor;
                if self.sc.features.wb_bandwidth_v6 {
                    if self.jiffies()
                        > self.wbs[wb].bw_time_stamp
                            + crate::mm::page_writeback::max_pause_jiffies(hz)
                    {
                        self.wb_update_bandwidth(wb, pid);
                    }
                } else {
                    // 3.1/3.2: bdi_update_bandwidth with thresh = 0, and the
                    // "idle > 1 s: snapshot only" rule against the pass start
                    self.bdi_update_bandwidth_v32(wb, pid, None, p.start);
                }
                let wrote = iw.chunk - iw.nr_to_write;
                p.work.nr_pages -= wrote;
                p.progress += wrote;
                p.pages += wrote;
                if self.inodes[iw.ino].dirty.is_empty() {
                    p.progress += 1;
                }
                self.inodes[iw.ino].i_state &= !I_SYNC;
                self.requeue_inode(iw.ino, iw.nr_to_write);
                continue;
            }
            let now = self.jiffies();
            if p.progress > 0 && (now > p.start + hz / 10 || p.work.nr_pages <= 0) {
                debug_assert!(p.pending.is_empty());
                self.tasks[pid].owed_sys += burst;
                return PassStep::Done;
            }
            let Some(&ino) = self.wbs[wb].b_io.back() else {
                self.tasks[pid].owed_sys += burst;
                return PassStep::Done;
            };
            // ext4_writepages starts a journal handle (the block device's
            // own inode does not): it may wait for a full transaction
            if !self.fs_writepages_trans_start(pid, ino) {
                // the CPU time of the inodes already done passes first; the
                // handle is tried again after it (a wakeup meanwhile finds
                // the flusher running and is lost harmlessly)
                if burst > 0 {
                    return PassStep::Cpu(burst);
                }
                return PassStep::WaitTag;
            }
            self.wbs[wb].b_io.pop_back();
            self.inodes[ino].list = None;
            self.inodes[ino].i_state |= I_SYNC;
            let chunk = self.writeback_chunk_size(wb, &p.work, p.chunk_cap);
            if self.sc.features.wb_bandwidth_v6 {
                self.wb_bandwidth_estimate_start(wb);
            }
            let idx = self.inodes[ino].writeback_index;
            let plug = self.blk_start_plug(pid);
            burst += self.sc.machine.cost.writepages_inode;
            p.inode = Some(InodeWb {
                ino,
                plug,
                chunk,
                nr_to_write: chunk,
                start_index: idx,
                cursor: idx,
                cycled: idx == 0,
            });
        }
    }
}
