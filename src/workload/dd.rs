//! `dd if=/dev/zero of=FILE bs=BS [count=...]`: a buffered sequential writer.
//!
//! Each write() copies `bs` bytes into the page cache. With large folios
//! (6.x ext4) the kernel dirties up to a whole folio before it calls
//! `balance_dirty_pages_ratelimited`, so the throttle is checked once per
//! min(bs, max_folio); with 4 KiB folios it is checked after every page. The
//! writer runs in batches that end exactly where the next check would
//! enter `balance_dirty_pages`, so a batch is one event, not one per page.

use crate::kernel::{Action, InodeId, Kernel, Pid};
use crate::mm::page_alloc::Gfp;
use crate::scenario::raw::{err, ScenarioError};
use crate::scenario::{Job, JobKind, Reader};
use crate::sim::Ns;

/// Below LOW a writer's batch is at most this many pages (1 MiB of 4 KiB
/// pages; a model granularity, not a kernel constant), so that its
/// allocations interleave with kswapd's reclaim, as they do when the
/// kernel allocates page by page.
const DD_LOW_CHUNK: u64 = 256;

/// The keys of a dd job: `numjobs` writers, each writing `bs`-byte blocks
/// (`size` bytes, or until `runtime` or the end of the run).
pub(crate) fn read_job(r: &mut Reader, jname: &str, job: &mut Job) -> Result<(), ScenarioError> {
    let p = |k: &str| format!("jobs.{jname}.{k}");
    job.numjobs = r
        .uint(&p("numjobs"), 1, 100_000)?
        .map(|x| x.0 as u32)
        .unwrap_or(1);
    let bs = match r.size(&p("bs"))? {
        Some((b, e)) if b == 0 || b % 512 != 0 || b > (64 << 20) => {
            return err(
                &e.origin,
                format!("`bs` = {b}; expected a multiple of 512 bytes up to 64M"),
            )
        }
        Some((b, _)) => b,
        // dd's default ibs and obs
        None => 512,
    };
    let size = match r.size(&p("size"))? {
        Some((0, e)) => return err(&e.origin, "`size` must be > 0"),
        Some((s, _)) => Some(s),
        None => None,
    };
    job.runtime = match r.duration(&p("runtime"))? {
        Some((0, e)) => {
            return err(
                &e.origin,
                format!("`jobs.{jname}.runtime` = 0: the writers would write nothing; expected a duration > 0 (or no `runtime`: until the end of the run)"),
            )
        }
        x => x.map(|x| x.0),
    };
    job.kind = JobKind::Dd { bs, size };
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// About to compute and run the next batch of writes.
    Ready,
    /// A batch of `pages` has just used its CPU time; dirty them now.
    Dirtying {
        pages: u64,
    },
    /// A unit's pages are dirty; its `balance_dirty_pages_ratelimited`
    /// check comes next, then `rest` pages of the batch.
    Checking {
        rest: u64,
    },
    /// Sleeping in balance_dirty_pages; `rest` pages of the batch remain.
    Throttled {
        rest: u64,
    },
    Done,
}

impl Stage {
    /// Out of a throttle check with `rest` pages of the batch still to dirty.
    fn after_check(rest: u64) -> Stage {
        if rest > 0 {
            Stage::Dirtying { pages: rest }
        } else {
            Stage::Ready
        }
    }
}

/// A dd writer's state, kept inline in its task (read at every wakeup).
#[derive(Clone, Copy, Debug)]
pub struct DdWriter {
    pub ino: InodeId,
    /// The superblock's wb (fixed once the filesystems are set up).
    pub wb: u32,
    pub bs_pages: u64,
    /// Pages dirtied per call of balance_dirty_pages_ratelimited.
    pub unit_pages: u64,
    /// Position (pages) in the file and the limit (`u64::MAX`: unbounded).
    pub pos: u64,
    pub limit: u64,
    /// When the writer stops (`u64::MAX`: never).
    pub end_time: Ns,
    stage: Stage,
}

impl DdWriter {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ino: InodeId,
        wb: usize,
        bs: u64,
        size: Option<u64>,
        end_time: Option<Ns>,
        page_size: u64,
        max_folio_pages: u64,
    ) -> DdWriter {
        let bs_pages = bs.div_ceil(page_size).max(1);
        DdWriter {
            ino,
            wb: wb as u32,
            bs_pages,
            unit_pages: bs_pages.min(max_folio_pages).max(1),
            pos: 0,
            limit: size.map_or(u64::MAX, |s| s.div_ceil(page_size)),
            end_time: end_time.unwrap_or(Ns::MAX),
            stage: Stage::Ready,
        }
    }
}

/// `x / unit` for a block or folio size in pages: a shift when it is a
/// power of two, as it mostly is (a division per write cycle is slow).
fn per_unit(x: u64, unit: u64) -> u64 {
    if unit.is_power_of_two() {
        crate::klib::div_pow_of_two(x, unit)
    } else {
        x / unit
    }
}

/// `x.div_ceil(unit)`, the same way.
fn per_unit_ceil(x: u64, unit: u64) -> u64 {
    if unit.is_power_of_two() {
        crate::klib::div_pow_of_two(x, unit) + u64::from(x & (unit - 1) != 0)
    } else {
        x.div_ceil(unit)
    }
}

impl Kernel {
    /// Task `pid`'s dd state, in place in its task.
    #[inline]
    fn dd(&mut self, pid: Pid) -> &mut DdWriter {
        match &mut self.tasks[pid].body {
            Some(crate::kernel::Body::Dd(d)) => d,
            _ => unreachable!("task {pid} is not a dd writer"),
        }
    }

    /// Run dd writer `pid` until it needs the CPU, sleeps or exits. Its
    /// state stays in its task: the constants are read once, the stage
    /// and position written back as they change.
    pub fn dd_step(&mut self, pid: Pid) -> Action {
        let wb = self.dd(pid).wb as usize;
        loop {
            match self.dd(pid).stage {
                Stage::Done => return Action::Exit,
                Stage::Throttled { rest } => match self.throttle_resume(pid, wb).action() {
                    Some(action) => return action,
                    None => self.dd(pid).stage = Stage::after_check(rest),
                },
                Stage::Dirtying { pages } => {
                    // The batch: whole units, the last of which ends with the
                    // check that may enter balance_dirty_pages.
                    let mut left = pages;
                    let DdWriter {
                        ino,
                        unit_pages,
                        mut pos,
                        ..
                    } = *self.dd(pid);
                    let ps = self.page_size();
                    // Units whose check cannot reach balance_dirty_pages are
                    // dirtied in one step (the check does nothing for them).
                    let until = self.throttle_pages_until_check(pid, wb);
                    let mut quiet = (per_unit(until - 1, unit_pages) * unit_pages)
                        .min(left.saturating_sub(unit_pages));
                    // They go with the first checked unit when one call
                    // does the same as two.
                    if quiet > 0 && !self.filemap_dirty_in_one_call(quiet + unit_pages) {
                        self.filemap_dirty_range(pid, ino, pos, quiet);
                        pos += quiet;
                        left -= quiet;
                        self.tasks[pid].wchar += quiet * ps;
                        quiet = 0;
                    }
                    if left > 0 {
                        let n = (quiet + unit_pages).min(left);
                        self.filemap_dirty_range(pid, ino, pos, n);
                        self.tasks[pid].wchar += n * ps;
                        // generic_perform_write: cond_resched() after the
                        // folio's write_end, before the throttle check. A
                        // resched the tick set during the copy takes effect
                        // here, with the pages dirty and the check to come.
                        let d = self.dd(pid);
                        d.pos = pos + n;
                        d.stage = Stage::Checking { rest: left - n };
                        if self.resched_possible(pid) {
                            return Action::Resched;
                        }
                        continue;
                    }
                    let d = self.dd(pid);
                    d.pos = pos;
                    d.stage = Stage::Ready;
                }
                // Normally only the batch's last unit is throttled; if the
                // limits moved mid-batch, the rest follows after.
                Stage::Checking { rest } => match self.throttle_check(pid, wb).action() {
                    Some(action) => {
                        self.dd(pid).stage = Stage::Throttled { rest };
                        return action;
                    }
                    None => self.dd(pid).stage = Stage::after_check(rest),
                },
                Stage::Ready => {
                    let now = self.now();
                    let DdWriter {
                        ino,
                        bs_pages,
                        unit_pages,
                        pos,
                        limit,
                        end_time,
                        ..
                    } = *self.dd(pid);
                    if now >= end_time || pos >= limit {
                        self.dd(pid).stage = Stage::Done;
                        continue;
                    }
                    // write(): file_update_time first. The batch's later
                    // write() calls find the block in the running
                    // transaction already, so they do not wait.
                    if !self.file_update_time(pid, ino) {
                        return Action::Block;
                    }
                    // XFS: a write that crosses its file's delalloc
                    // reservation goes folio by folio (fs/xfs.rs)
                    let sb = &self.sbs[self.inodes[ino].sb as usize];
                    let (xfs, max_folio) = (unit_pages > 1 && sb.is_xfs(), sb.max_folio_pages);
                    let split = if xfs {
                        self.xfs_write_folio(ino, pos, bs_pages, limit, max_folio)
                    } else {
                        None
                    };
                    // units until the next check enters balance_dirty_pages
                    let mut units = 1;
                    let mut pages = match split {
                        Some(folio) => folio,
                        None => {
                            let until = self.throttle_pages_until_check(pid, wb);
                            units = per_unit_ceil(until, unit_pages).max(1);
                            if limit != u64::MAX {
                                units = units.min(per_unit_ceil(limit - pos, unit_pages));
                            }
                            if xfs {
                                // stop where the reservation ends, or at the
                                // start of the write that crosses it
                                let end = self.xfs_delalloc_end(ino);
                                let stop = end - end % bs_pages;
                                let stop = if stop > pos { stop } else { end };
                                units = units.min(per_unit(stop - pos, unit_pages).max(1));
                            }
                            units * unit_pages
                        }
                    };
                    // pages past the end of the file's cache are allocated
                    let mut new_pages = self.inodes[ino].pages_past_span(pos, pages);
                    // The kernel allocates each page as the copy reaches
                    // it, and the first one below LOW wakes kswapd, which
                    // reclaims while the copy goes on. A batch's pages are
                    // allocated when it ends: a batch that would take free
                    // memory below LOW ends at LOW (whole units), and one
                    // that starts there wakes kswapd as it starts, and is
                    // at most DD_LOW_CHUNK pages.
                    if new_pages > 0 && !self.page_alloc_fast_ok(new_pages, Gfp::PageCacheWrite) {
                        let room = self.page_alloc_fast_room(Gfp::PageCacheWrite);
                        let fit = per_unit(room, unit_pages);
                        let cap = if fit > 0 {
                            fit
                        } else {
                            let g = Gfp::PageCacheWrite;
                            self.wake_all_kswapds(Some(pid), g.zone(), g);
                            per_unit_ceil(DD_LOW_CHUNK, unit_pages).max(1)
                        };
                        if cap < units {
                            pages = cap * unit_pages;
                            new_pages = self.inodes[ino].pages_past_span(pos, pages);
                        }
                    }
                    // write() calls that start inside this batch
                    let first = per_unit_ceil(pos, bs_pages);
                    let last = per_unit_ceil(pos + pages, bs_pages);
                    let syscalls = last - first;
                    let host = self.page_alloc_host_cost(new_pages);
                    let c = &self.sc.machine.cost;
                    let kib = pages * self.page_size() / 1024;
                    // dd: read() from /dev/zero fills the buffer (clear_user),
                    // write() copies it into the page cache.
                    let sys = syscalls * 2 * c.syscall
                        + kib * 2 * c.copy_per_kib
                        + pages * c.page_cache_insert
                        + host
                        + c.bdp_call;
                    self.dd(pid).stage = Stage::Dirtying { pages };
                    return Action::Cpu {
                        // dd's own loop between its calls: 200 ns a block,
                        // a model value (not measured; dd's user time is
                        // small next to its system time)
                        user: syscalls * 200,
                        sys,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_division() {
        for unit in [1, 2, 3, 16, 256, 300] {
            for x in [0, 1, 2, 15, 16, 17, 255, 256, 257, 1000, 1 << 40] {
                assert_eq!(per_unit(x, unit), x / unit);
                assert_eq!(per_unit_ceil(x, unit), x.div_ceil(unit));
            }
        }
    }
}
