//! The flusher (fs/fs-writeback.c): one kworker per wb running the wb's
//! work item, `wb_workfn`.
//!
//! `wb_workfn` → `wb_do_writeback` → `wb_check_old_data_flush` (kupdate),
//! `wb_check_background_flush` → `wb_writeback` loop → `queue_io` and
//! `writeback_sb_inodes` → per inode `do_writepages` (the filesystem's
//! ->writepages, fs/writepages.rs) → `requeue_inode`.
//!
//! The flusher is a task that runs in CPU bursts and sleeps: it gives up
//! the CPU model after each burst of bios it builds, and sleeps when a tag
//! or a journal handle must wait, so dirtiers and completions interleave
//! with it as they do on a real machine. So these functions are resumable:
//! across a sleep the work item's position is a `FlusherAt`, which names
//! the `wb_check_*` function whose `wb_writeback` sleeps and holds that
//! call's locals (`WbWriteback`, with its `writeback_sb_inodes` pass,
//! `WbPass`). A function that sleeps returns `ControlFlow::Break` with what
//! the task does next; its callers return it in turn, and on the next step
//! each resumes where its callee slept.
//!
//! Each `wb_writeback` runs under one plug (6.x; `run.flusher_plug`), so
//! the bios of many small files meet in it and merge: seed 002's 4 KiB
//! files on XFS over RAID0 (examples/seed-002-plug.toml) write 40092
//! files/s and 225.9 MiB/s to md0 with it against 25899 and 137.0 without.

use super::{WbList, I_DIRTY_PAGES, I_SYNC, I_SYNC_QUEUED};
use crate::fs::writepages::Writepages;
use crate::kernel::{Action, Ev, InodeId, Kernel, Pid, WbId};
use crate::sim::Ns;
use std::ops::ControlFlow;

/// `enum wb_reason` (the reasons wbsim's writeback has), with the
/// tracepoint's symbolic names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbReason {
    Background = 0,
    /// `wakeup_flusher_threads(WB_REASON_VMSCAN)` from reclaim.
    Vmscan = 1,
    Periodic = 3,
    /// `mem_cgroup_flush_foreign` (`cgroup_writeback_by_id`).
    ForeignFlush = 7,
}

impl WbReason {
    pub fn name(self) -> &'static str {
        match self {
            WbReason::Background => "background",
            WbReason::Vmscan => "vmscan",
            WbReason::Periodic => "periodic",
            WbReason::ForeignFlush => "foreign_flush",
        }
    }
}

/// `struct wb_writeback_work`.
#[derive(Clone, Copy, Debug)]
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

/// One call of `writeback_sb_inodes` (via `__writeback_inodes_wb`):
/// write the inodes at the tail of b_io, a chunk each, until b_io is
/// empty, the work's page budget is spent or HZ/10 has passed. Resumable:
/// it yields after each burst of bios it builds, so it can run in the
/// flusher or, for the legacy policy, in a dirtier's own context.
#[derive(Debug)]
pub struct WbPass {
    /// The work, whose `nr_pages` the pass counts down.
    pub work: WbWork,
    /// Pages per inode visit: None for 6.x `writeback_chunk_size`,
    /// Some(1024) for the pre-3.2 `MAX_WRITEBACK_PAGES`.
    pub chunk_cap: Option<i64>,
    start: u64,
    /// Pages written plus inodes cleaned (the kernel's "progress").
    pub progress: i64,
    pub pages: i64,
    /// The inode being written (`__writeback_single_inode`).
    inode: Option<Writepages>,
    /// The last inode's emptied run buffer, for the next one.
    spare: Vec<(u64, u64)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassStep {
    /// Build and submit bios: this much system CPU time.
    Cpu(Ns),
    /// Sleep until a tag frees (the requests already wait in order), or a
    /// journal handle or log space can be had.
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
            spare: Vec::new(),
        }
    }
}

/// `wb_writeback`'s locals, kept while it sleeps.
#[derive(Debug)]
pub struct WbWriteback {
    /// The work (during a pass, `pass.work` counts it down).
    work: WbWork,
    /// The work's `nr_pages` at the start: the pages written are the
    /// difference.
    nr_pages: i64,
    dirtied_before: u64,
    /// Whether it started the plug around it (`run.flusher_plug`).
    plug: bool,
    /// The `writeback_sb_inodes` pass under way.
    pass: Option<WbPass>,
}

/// Where the wb's work item is, across the flusher's sleeps.
#[derive(Debug, Default)]
enum FlusherAt {
    /// Not queued: the kworker sleeps.
    #[default]
    Idle,
    /// Queued (its timer fired or a wakeup asked for it): `wb_workfn`
    /// starts when the kworker runs.
    Queued,
    /// In `wb_do_writeback`, in the `wb_writeback` of a queued work (a
    /// foreign flush), whose memcg record slot is told when it ends.
    Work(Box<WbWriteback>),
    /// In `wb_do_writeback`, in the `wb_writeback` of
    /// `wb_check_old_data_flush`'s periodic work.
    OldDataFlush(Box<WbWriteback>),
    /// In `wb_do_writeback`, in the `wb_writeback` of
    /// `wb_check_background_flush`'s background work.
    BackgroundFlush(Box<WbWriteback>),
}

/// The flusher kworker's state.
#[derive(Debug)]
pub struct FlusherState {
    /// The wb whose work item this kworker runs.
    wb: WbId,
    /// Where the work item is while the kworker sleeps. While it runs,
    /// each `wb_check_*` takes it (leaving `Idle`) and `wb_writeback` puts
    /// its own state back if it sleeps; `wb_workfn` sets it when it ends.
    at: FlusherAt,
    /// The work item was queued again while it ran: it runs once more
    /// (a workqueue runs a work queued while it executes again after it).
    rerun: bool,
    /// The pages `wb_do_writeback` has written so far.
    wrote: i64,
    /// The foreign flush under way: the memcg record to tell at its end.
    work_frn: Option<(usize, usize)>,
}

impl FlusherState {
    pub fn new(wb: WbId) -> FlusherState {
        FlusherState {
            wb,
            at: FlusherAt::Idle,
            rerun: false,
            wrote: 0,
            work_frn: None,
        }
    }
}

/// What a resumable step returns: `Continue` with its result when it is
/// done, `Break` with what the task does next when it sleeps inside.
type Step<T> = ControlFlow<Action, T>;

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
            let name = self.wb_name(wb).to_string();
            let cg = self.wb_cgroup_ino(wb);
            self.trace_line(
                pid,
                "writeback_wake_background",
                format_args!("bdi {name}: cgroup_ino={cg}"),
            );
        }
        self.wb_wakeup(wb);
    }

    /// The work item's timer fires (`delayed_work_timer_fn`): the work is
    /// queued and the kworker woken, or, if it is running, it will run
    /// again.
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
        if let FlusherAt::Idle = f.at {
            f.at = FlusherAt::Queued;
            self.wake_up_process(pid);
        } else {
            f.rerun = true;
        }
    }

    fn trace_work(&mut self, pid: Pid, wb: WbId, ev: &'static str, w: &WbWork) {
        let name = self.wb_name(wb);
        let line = format!(
            "bdi {}: sb_dev 0:0 nr_pages={} sync_mode={} kupdate={} range_cyclic={} background={} reason={} cgroup_ino={}",
            name,
            w.nr_pages,
            w.sync_all as u8,
            w.for_kupdate as u8,
            w.range_cyclic as u8,
            w.for_background as u8,
            w.reason.name(),
            self.wb_cgroup_ino(wb)
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
        // MIN_WRITEBACK_PAGES: 4 MiB
        let min_wb = 4096 >> (crate::klib::ilog2(self.page_size()) - 10);
        // half the write bandwidth, at most the global limit / DIRTY_SCOPE (8)
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
            let name = self.wb_name(wb).to_string();
            let cg = self.wb_cgroup_ino(wb);
            self.trace_line(
                pid,
                "writeback_queue_io",
                format_args!("bdi {name}: older={dirtied_before} age={age} enqueue={moved} reason={} cgroup_ino={cg}", work.reason.name()),
            );
        }
    }

    /// `requeue_inode` after an inode's turn. `dirtied_before` is the
    /// pass's expiry line (`writeback_sb_inodes`: its start, or 30 s before
    /// it for kupdate): since 6.10 an inode dirtied after it goes back to
    /// b_dirty even when its slice was used up, so kupdate writes one chunk
    /// of a young inode left on b_more_io, not all of it; before 6.10 it
    /// went to b_more_io and kupdate wrote it out whole.
    fn requeue_inode(&mut self, ino: InodeId, nr_to_write: i64, dirtied_before: u64) {
        let still_dirty = !self.inodes[ino].dirty.is_empty();
        if still_dirty {
            self.inodes[ino].i_state |= I_DIRTY_PAGES;
            let young = self.sc.features.requeue_expiry_v6_10
                && self.inodes[ino].dirtied_when > dirtied_before;
            if nr_to_write <= 0 && !young {
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

    /// The flusher kworker's logic after each CPU burst or wakeup: its
    /// work item, if queued or under way.
    pub fn flusher_step(&mut self, pid: Pid, f: &mut FlusherState) -> Action {
        self.wb_workfn(pid, f)
    }

    /// `wb_workfn`: the work item runs `wb_do_writeback` (once more if it
    /// was queued again meanwhile), then queues itself for the periodic run
    /// if the wb still has dirty inodes. Returns what the kworker does next.
    fn wb_workfn(&mut self, pid: Pid, f: &mut FlusherState) -> Action {
        let wb = f.wb;
        loop {
            match f.at {
                FlusherAt::Idle => return Action::Block,
                // the work item starts running: it is no longer pending
                FlusherAt::Queued => self.wbs[wb].dwork_at = None,
                // resuming inside wb_do_writeback
                FlusherAt::Work(_) | FlusherAt::OldDataFlush(_) | FlusherAt::BackgroundFlush(_) => {
                }
            }
            let wrote = match self.wb_do_writeback(pid, f) {
                ControlFlow::Continue(wrote) => wrote,
                ControlFlow::Break(sleep) => return sleep,
            };
            if self.tracer.on.writeback_pages_written {
                self.trace_line(pid, "writeback_pages_written", format_args!("{wrote}"));
            }
            if self.wbs[wb].lists_nonempty() && self.writeback_interval_j() != 0 {
                self.wb_wakeup_delayed(wb);
            }
            f.at = if std::mem::take(&mut f.rerun) {
                FlusherAt::Queued
            } else {
                FlusherAt::Idle
            };
        }
    }

    /// `wb_do_writeback`: the periodic writeback if it is due, then
    /// background writeback if the wb is over its background threshold
    /// (no work is ever queued on the wb's work_list: wbsim has no sync(2)
    /// or explicit writeback requests). Returns the pages written.
    fn wb_do_writeback(&mut self, pid: Pid, f: &mut FlusherState) -> Step<i64> {
        if let FlusherAt::Queued = f.at {
            self.wbs[f.wb].writeback_running = true;
            f.wrote = 0;
        }
        // A periodic or background writeback that slept resumes first: the
        // works and a start-all queued meanwhile wait for its end (its
        // loop stops only between passes, for works on the list), and the
        // work item runs again for them (`rerun`). Taking a work here would
        // drop the writeback under way, with its inode left I_SYNC.
        let resuming = matches!(
            f.at,
            FlusherAt::OldDataFlush(_) | FlusherAt::BackgroundFlush(_)
        );
        if !resuming
            && (!self.wbs[f.wb].work_list.is_empty()
                || self.wbs[f.wb].start_all.is_some()
                || matches!(f.at, FlusherAt::Work(_)))
        {
            f.wrote += self.wb_do_works(pid, f)?;
        }
        if !matches!(f.at, FlusherAt::BackgroundFlush(_)) {
            f.wrote += self.wb_check_old_data_flush(pid, f)?;
        }
        f.wrote += self.wb_check_background_flush(pid, f)?;
        self.wbs[f.wb].writeback_running = false;
        ControlFlow::Continue(f.wrote)
    }

    /// The works queued on the wb (`get_next_work_item` → `wb_writeback`
    /// → `finish_writeback_work`): only foreign flushes here. Resumes the
    /// one under way if it slept.
    fn wb_do_works(&mut self, pid: Pid, f: &mut FlusherState) -> Step<i64> {
        let mut wrote = 0;
        loop {
            let w = match std::mem::take(&mut f.at) {
                FlusherAt::Work(w) => w,
                _ => {
                    let Some((nr_pages, frn)) = self.wbs[f.wb].work_list.pop_front() else {
                        // `wb_check_start_all`: write everything dirty
                        let Some(reason) = self.wbs[f.wb].start_all.take() else {
                            return ControlFlow::Continue(wrote);
                        };
                        let nr_pages = self.get_nr_dirty_pages();
                        let w = self.wb_writeback_start(
                            pid,
                            WbWork {
                                nr_pages,
                                sync_all: false,
                                for_kupdate: false,
                                for_background: false,
                                range_cyclic: true,
                                reason,
                            },
                        );
                        wrote += self.wb_writeback(pid, f, w, FlusherAt::Work)?;
                        continue;
                    };
                    f.work_frn = Some(frn);
                    self.wb_writeback_start(
                        pid,
                        WbWork {
                            nr_pages,
                            sync_all: false,
                            for_kupdate: false,
                            for_background: false,
                            range_cyclic: true,
                            reason: WbReason::ForeignFlush,
                        },
                    )
                }
            };
            wrote += self.wb_writeback(pid, f, w, FlusherAt::Work)?;
            if let Some(frn) = f.work_frn.take() {
                self.foreign_flush_done(frn);
            }
        }
    }

    /// `wakeup_flusher_threads(reason)` → `wb_start_writeback` on every wb
    /// with dirty IO: a "write everything" request (`WB_start_all`), at
    /// most one pending a wb.
    pub fn wakeup_flusher_threads(&mut self, reason: WbReason) {
        for wb in 0..self.wbs.len() {
            let w = &mut self.wbs[wb];
            if !w.lists_nonempty() || w.start_all.is_some() {
                continue;
            }
            w.start_all = Some(reason);
            self.wb_wakeup(wb);
        }
    }

    /// `wb_queue_work` of `cgroup_writeback_by_id`: a foreign flush of
    /// `nr_pages` on `wb`, for memcg record `frn` (cgroup, slot).
    pub fn wb_queue_foreign_flush(&mut self, wb: WbId, nr_pages: i64, frn: (usize, usize)) {
        if nr_pages <= 0 {
            self.foreign_flush_done(frn);
            return;
        }
        self.wbs[wb].work_list.push_back((nr_pages, frn));
        self.wb_wakeup(wb);
    }

    /// `wb_check_old_data_flush`: once per `dirty_writeback_interval`,
    /// write back the inodes dirtied longer than `dirty_expire` ago
    /// (kupdate). Resumes its `wb_writeback` if that sleeps.
    fn wb_check_old_data_flush(&mut self, pid: Pid, f: &mut FlusherState) -> Step<i64> {
        let w = match std::mem::take(&mut f.at) {
            FlusherAt::OldDataFlush(w) => w,
            _ => {
                let wb = f.wb;
                let interval = self.writeback_interval_j();
                let now = self.jiffies();
                if interval == 0 || now < self.wbs[wb].last_old_flush + interval {
                    return ControlFlow::Continue(0);
                }
                self.wbs[wb].last_old_flush = now;
                let nr_pages = self.get_nr_dirty_pages();
                if nr_pages == 0 {
                    return ControlFlow::Continue(0);
                }
                self.wb_writeback_start(
                    pid,
                    WbWork {
                        nr_pages,
                        sync_all: false,
                        for_kupdate: true,
                        for_background: false,
                        range_cyclic: true,
                        reason: WbReason::Periodic,
                    },
                )
            }
        };
        self.wb_writeback(pid, f, w, FlusherAt::OldDataFlush)
    }

    /// `wb_check_background_flush`: while the wb is over its background
    /// threshold, write back everything. Resumes its `wb_writeback` if that
    /// sleeps.
    fn wb_check_background_flush(&mut self, pid: Pid, f: &mut FlusherState) -> Step<i64> {
        let w = match std::mem::take(&mut f.at) {
            FlusherAt::BackgroundFlush(w) => w,
            _ => {
                if !self.wb_over_bg_thresh(f.wb, pid) {
                    return ControlFlow::Continue(0);
                }
                self.wb_writeback_start(
                    pid,
                    WbWork {
                        nr_pages: i64::MAX,
                        sync_all: false,
                        for_kupdate: false,
                        for_background: true,
                        range_cyclic: true,
                        reason: WbReason::Background,
                    },
                )
            }
        };
        self.wb_writeback(pid, f, w, FlusherAt::BackgroundFlush)
    }

    /// The start of `wb_writeback`: its plug (6.x), the work's pages at the
    /// start, and inodes dirtied up to now are old enough.
    fn wb_writeback_start(&mut self, pid: Pid, work: WbWork) -> Box<WbWriteback> {
        let plug = self.sc.features.flusher_plug && self.blk_start_plug(pid);
        Box::new(WbWriteback {
            work,
            nr_pages: work.nr_pages,
            dirtied_before: self.jiffies(),
            plug,
            pass: None,
        })
    }

    /// `wb_writeback`: `writeback_sb_inodes` passes over b_io (refilled by
    /// `queue_io` when empty) until the work's pages are written, a
    /// background work finds the wb under its threshold, or a pass makes
    /// no progress with nothing on b_more_io. Returns the pages written.
    /// When a pass sleeps, `w` waits in `f.at` as `at(w)`.
    fn wb_writeback(
        &mut self,
        pid: Pid,
        f: &mut FlusherState,
        mut w: Box<WbWriteback>,
        at: fn(Box<WbWriteback>) -> FlusherAt,
    ) -> Step<i64> {
        let wb = f.wb;
        loop {
            if let Some(pass) = w.pass.as_mut() {
                let sleep = match self.writeback_sb_inodes(pid, wb, pass) {
                    PassStep::Cpu(ns) => Action::Cpu { user: 0, sys: ns },
                    // blk_mq_get_tag's io_schedule()
                    PassStep::WaitTag => {
                        self.stalled(pid, crate::kernel::psi::Stall::Io, Action::Block)
                    }
                    PassStep::Done => {
                        let pass = w.pass.take().expect("pass");
                        w.work = pass.work;
                        if self.tracer.on.writeback_written {
                            self.trace_work(pid, wb, "writeback_written", &w.work);
                        }
                        if pass.progress > 0 || !self.wbs[wb].b_more_io.is_empty() {
                            continue;
                        }
                        break;
                    }
                };
                f.at = at(w);
                return ControlFlow::Break(sleep);
            }
            let work = w.work;
            if work.nr_pages <= 0 || (work.for_background && !self.wb_over_bg_thresh(wb, pid)) {
                break;
            }
            let now = self.jiffies();
            if work.for_kupdate {
                let expire = self.sc.vm.dirty_expire_centisecs * self.hz() / 100;
                w.dirtied_before = now.saturating_sub(expire);
            } else if work.for_background {
                w.dirtied_before = now;
            }
            if self.tracer.on.writeback_start {
                self.trace_work(pid, wb, "writeback_start", &work);
            }
            if self.wbs[wb].b_io.is_empty() {
                self.queue_io(pid, wb, &work, w.dirtied_before);
            }
            w.pass = Some(WbPass::new(work, self.legacy_chunk_cap(), now));
        }
        self.blk_finish_plug(pid, w.plug);
        ControlFlow::Continue(w.nr_pages - w.work.nr_pages)
    }

    /// Pages per inode visit before 3.2's `writeback_chunk_size`.
    pub fn legacy_chunk_cap(&self) -> Option<i64> {
        // MAX_WRITEBACK_PAGES: 1024 4 KiB pages
        (!self.sc.features.writeback_chunk_v3_2)
            .then(|| 1024 >> (crate::klib::ilog2(self.page_size()) - 12))
    }

    /// Advance a `writeback_sb_inodes` pass: write the inode under way
    /// (`do_writepages`, which resumes where its last burst stopped), or
    /// take the next from the tail of b_io, or finish.
    pub fn writeback_sb_inodes(&mut self, pid: Pid, wb: WbId, p: &mut WbPass) -> PassStep {
        let hz = self.hz();
        let opf = p.work.write_flags();
        // CPU time of this burst (small files are written several to a burst)
        let mut burst: Ns = 0;
        loop {
            if let Some(wp) = p.inode.as_mut() {
                match self.do_writepages(pid, wp, &mut burst, opf) {
                    PassStep::Done => {}
                    step => return step,
                }
                let wp = p.inode.take().expect("inode");
                self.writeback_single_inode_done(pid, wb, p, wp);
                continue;
            }
            // writeback_sb_inodes stops after HZ / 10 once it has made progress
            let now = self.jiffies();
            if p.progress > 0 && (now > p.start + hz / 10 || p.work.nr_pages <= 0) {
                self.tasks[pid].owed_sys += burst;
                return PassStep::Done;
            }
            let Some(&ino) = self.wbs[wb].b_io.back() else {
                self.tasks[pid].owed_sys += burst;
                return PassStep::Done;
            };
            // ->writepages starts a transaction (ext4's journal handle): it
            // may wait, and the inode stays on b_io meanwhile
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
            let runs = std::mem::take(&mut p.spare);
            if self.cg.enabled && self.sc.features.cgroup_writeback {
                self.wbc_attach_inode(ino);
            }
            p.inode = Some(self.writepages_start(pid, ino, chunk, runs));
            burst += self.sc.machine.cost.writepages_inode;
        }
    }

    /// The inode's turn is over (`__writeback_single_inode` returns to
    /// `writeback_sb_inodes`): flush the plug if another task wants the
    /// CPU, update the bandwidth estimate, count the pages written and
    /// requeue the inode.
    fn writeback_single_inode_done(&mut self, pid: Pid, wb: WbId, p: &mut WbPass, wp: Writepages) {
        let hz = self.hz();
        // writeback_sb_inodes: if another task wants this CPU, flush the
        // plug before cond_resched() (Linux >= 4.3, 590dca3a7187): a woken
        // task (fs_mark back from its balance_dirty_pages pause) or an
        // expired slice
        if self.need_resched(pid) {
            self.blk_flush_plug(pid);
        }
        if self.sc.features.wb_bandwidth_v6 {
            if self.jiffies()
                > self.wbs[wb].bw_time_stamp + crate::mm::page_writeback::max_pause_jiffies(hz)
            {
                self.wb_update_bandwidth(wb, pid);
            }
        } else {
            // 3.1/3.2: bdi_update_bandwidth with thresh = 0, and the
            // "idle > 1 s: snapshot only" rule against the pass start
            self.bdi_update_bandwidth_v32(wb, pid, None, p.start);
        }
        let wrote = wp.chunk - wp.nr_to_write;
        p.work.nr_pages -= wrote;
        p.progress += wrote;
        p.pages += wrote;
        if self.inodes[wp.ino].dirty.is_empty() {
            p.progress += 1;
        }
        self.inodes[wp.ino].i_state &= !I_SYNC;
        let dirtied_before = if p.work.for_kupdate {
            let expire = self.sc.vm.dirty_expire_centisecs * hz / 100;
            p.start.saturating_sub(expire)
        } else {
            p.start
        };
        self.requeue_inode(wp.ino, wp.nr_to_write, dirtied_before);
        if self.cg.enabled && self.sc.features.cgroup_writeback {
            self.wbc_detach_inode(pid, wp.ino);
        }
        p.spare = wp.into_runs();
    }
}
