//! The memory controller's part in writeback (mm/memcontrol.c): a memcg's
//! page-cache counters (`memory.stat` `file`, `file_dirty`,
//! `file_writeback`), `mem_cgroup_wb_stats` for its dirty limits, the
//! foreign-dirtier records (`mem_cgroup_track_foreign_dirty_slowpath`,
//! `mem_cgroup_flush_foreign`), and `inode_attach_wb`
//! (fs/fs-writeback.c), which gives an inode the wb of its first dirtier.
//!
//! There are no per-page objects: an inode keeps how many of its dirty
//! and writeback pages each memcg dirtied (`InodeCg`), oldest first, and
//! writeback takes them in that order. A page belongs to the memcg that
//! dirtied it from clean (the kernel keeps the memcg that allocated it; the
//! two differ only when another cgroup re-dirties a clean cached page, as
//! after a refault). A memcg's `file` counts the page-cache pages its
//! tasks' writes allocated. A charge that takes it over
//! min(`memory.max`, `memory.high`) reclaims in the charging task
//! (`try_charge_memcg` → `try_to_free_mem_cgroup_pages`, inside
//! `psi_memstall_enter`/`leave`): the inactive clean pages of the inodes
//! the memcg first dirtied leave the page cache, oldest inode first, at
//! `machine.cost.reclaim_per_page` each, and the task is in a memstall
//! until that CPU time has run. Pages it cannot find that way (clean pages
//! of another memcg's inodes, active ones) only leave the count. Dirty and
//! writeback pages stay. `memory.high`'s throttling sleep
//! (`mem_cgroup_handle_over_high`) is not modelled. Reads do not charge.
//! Everything here runs only in a run with cgroups (`Cgroups::enabled`).

use crate::kernel::cgroup::{add_back, take_front, InodeCg, MEMCG_CGWB_FRN_CNT};
use crate::kernel::{InodeId, Kernel, Pid, WbId};

/// `PAGE_COUNTER_MAX` (pages), the headroom of a memcg without a limit.
pub const PAGE_COUNTER_MAX: u64 = i64::MAX as u64 / 4096;

/// `mdtc_calc_avail`: a memcg domain's dirtyable memory is its file pages
/// plus what it could still grow into: the smaller of its headroom under
/// its limits and the clean memory outside it (`g_avail`, `g_dirty`: the
/// global domain's; `m_dirty`: the memcg's dirty, with writeback).
pub fn mdtc_calc_avail(
    filepages: u64,
    headroom: u64,
    m_dirty: u64,
    g_avail: u64,
    g_dirty: u64,
) -> u64 {
    let clean = filepages - filepages.min(m_dirty);
    let global_clean = g_avail - g_avail.min(g_dirty);
    let other_clean = global_clean - global_clean.min(clean);
    filepages + headroom.min(other_clean)
}

/// `domain_dirty_limits` for a memcg domain: `dirty_bytes` and
/// `dirty_background_bytes` cannot apply to a memcg as they are, so they
/// become ratios (per PAGE_SIZE) of the global dirtyable memory
/// `g_avail`. Returns (thresh, bg_thresh).
pub fn memcg_dirty_limits(
    vm: &crate::scenario::Vm,
    page_size: u64,
    avail: u64,
    g_avail: u64,
) -> (u64, u64) {
    let mut ratio = vm.dirty_ratio * page_size / 100;
    let mut bg_ratio = vm.dirty_background_ratio * page_size / 100;
    if vm.dirty_bytes != 0 {
        ratio = vm.dirty_bytes.div_ceil(g_avail.max(1)).min(page_size);
    }
    if vm.dirty_background_bytes != 0 {
        bg_ratio = vm
            .dirty_background_bytes
            .div_ceil(g_avail.max(1))
            .min(page_size);
    }
    let thresh = (ratio * avail / page_size).min(u32::MAX as u64);
    let mut bg_thresh = bg_ratio * avail / page_size;
    if bg_thresh >= thresh {
        bg_thresh = thresh / 2;
    }
    (thresh, bg_thresh)
}

/// What `mem_cgroup_wb_stats` reports for a wb's memcg.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WbStats {
    pub filepages: u64,
    pub headroom: u64,
    pub dirty: u64,
    pub writeback: u64,
}

impl Kernel {
    /// `inode_attach_wb` at an inode's first dirtying in a run with
    /// cgroups: its wb is the dirtier's memcg's on the inode's bdi
    /// (`__inode_attach_wb` with the first dirtied page's memcg).
    #[inline(never)]
    pub fn inode_attach_wb(&mut self, pid: Pid, ino: InodeId) {
        let cg = self.task_cgroup(pid);
        if self.sc.features.cgroup_writeback {
            let bdi = self.wbs[self.inodes[ino].wb].bdi;
            let wb = self.wb_get_create(bdi, cg);
            self.inodes[ino].wb = wb;
        }
        self.cg.inodes.insert(
            ino,
            InodeCg {
                dirtier: cg,
                ..Default::default()
            },
        );
        self.cg.list[cg].own_inodes.push(ino);
    }

    /// The memcg half of `folio_account_dirtied` for `added` pages `pid`
    /// dirtied in `ino` (`charged` of them newly allocated, charged to its
    /// memcg), and `mem_cgroup_track_foreign_dirty` when the dirtier is not
    /// the inode's wb's memcg.
    #[inline(never)]
    pub fn memcg_account_dirtied(&mut self, pid: Pid, ino: InodeId, charged: u64, added: u64) {
        let cg = self.task_cgroup(pid);
        let c = &mut self.cg.list[cg];
        c.file += charged;
        c.file_dirty += added;
        if let Some(i) = self.cg.inodes.get_mut(&ino) {
            add_back(&mut i.dirty_by, cg, added);
        }
        self.memcg_reclaim(pid, cg);
        let wb = self.inodes[ino].wb;
        if added > 0 && self.wbs[wb].memcg != cg && self.sc.features.cgroup_writeback {
            self.track_foreign_dirty(pid, ino, wb, cg);
        }
    }

    /// `try_charge_memcg` over min(`memory.max`, `memory.high`): task
    /// `pid` reclaims the memcg's clean pages until it is back under that
    /// limit (`try_to_free_mem_cgroup_pages`; dirty and writeback pages
    /// stay). The pages found on the inactive lists of the memcg's inodes
    /// are freed and cost the task `reclaim_per_page` each, run first in
    /// its next burst inside a memstall (6.1 counts memcg reclaim in the
    /// memcg's own `memory.stat` pgscan/pgsteal, not in /proc/vmstat, and
    /// counts no allocstall).
    fn memcg_reclaim(&mut self, pid: Pid, cg: usize) {
        let c = &self.cg.list[cg];
        let ceiling = c
            .memory_max
            .unwrap_or(u64::MAX)
            .min(c.memory_high.unwrap_or(u64::MAX));
        if c.file <= ceiling {
            return;
        }
        let target = ceiling.max(c.file_dirty + c.file_writeback);
        let want = c.file - c.file.min(target);
        // the memcg's inodes in the order it first dirtied them, from where
        // the last reclaim found pages, round once: the older ones are
        // mostly reclaimed already, so a charge costs O(1) amortized
        let n = c.own_inodes.len();
        let start = c.reclaim_cursor.min(n);
        let mut got = 0;
        for k in 0..n {
            if got >= want {
                break;
            }
            let i = (start + k) % n;
            let ino = self.cg.list[cg].own_inodes[i];
            if !self.lru_live(ino) {
                continue;
            }
            let clean = self.inactive_of(ino).clean;
            let took = self.reclaim_clean(ino, clean, want - got);
            if took > 0 {
                got += took;
                self.cg.list[cg].reclaim_cursor = i;
            }
        }
        let c = &mut self.cg.list[cg];
        c.file = c.file.min(target);
        c.pgsteal += got;
        let cpu = got * self.sc.machine.cost.reclaim_per_page;
        if cpu > 0 {
            self.tasks[pid].owed_sys += cpu;
            self.psi_direct_reclaim(pid, cpu);
        }
    }

    /// Dirty → writeback for `n` pages of `ino` in their memcgs, counted in
    /// the round's `wbc` if the flusher has one attached
    /// (`wbc_account_cgroup_owner`).
    #[inline(never)]
    pub fn memcg_start_writeback(&mut self, ino: InodeId, n: u64) {
        let Some(i) = self.cg.inodes.get_mut(&ino) else {
            return;
        };
        let taken = take_front(&mut i.dirty_by, n);
        for &(cg, k) in &taken {
            add_back(&mut i.wb_by, cg, k);
        }
        for &(cg, k) in &taken {
            let id = self.cg.list[cg].id;
            if let Some(w) = self.cg.inodes.get_mut(&ino).and_then(|i| i.wbc.as_mut()) {
                w.account(id, k);
            }
            let c = &mut self.cg.list[cg];
            c.file_dirty -= k.min(c.file_dirty);
            c.file_writeback += k;
        }
    }

    /// Writeback → clean for `n` pages of `ino` in their memcgs.
    #[inline(never)]
    pub fn memcg_end_writeback(&mut self, ino: InodeId, n: u64) {
        let Some(i) = self.cg.inodes.get_mut(&ino) else {
            return;
        };
        for (cg, k) in take_front(&mut i.wb_by, n) {
            let c = &mut self.cg.list[cg];
            c.file_writeback -= k.min(c.file_writeback);
        }
    }

    /// `mem_cgroup_wb_stats`: the wb's memcg's file pages, dirty and
    /// writeback pages, and its headroom under `memory.max` and
    /// `memory.high` (the root's parent is not walked: one level).
    pub fn mem_cgroup_wb_stats(&self, wb: WbId) -> WbStats {
        let c = &self.cg.list[self.wbs[wb].memcg];
        let ceiling = c
            .memory_max
            .unwrap_or(PAGE_COUNTER_MAX)
            .min(c.memory_high.unwrap_or(PAGE_COUNTER_MAX));
        // the memcg's pages are page-cache pages: never more than the
        // machine holds
        let used = c.file.min(self.vm.nr_file_pages);
        WbStats {
            filepages: used,
            headroom: ceiling - ceiling.min(used),
            dirty: c.file_dirty,
            writeback: c.file_writeback,
        }
    }

    /// `mem_cgroup_track_foreign_dirty_slowpath`: memcg `cg` dirtied pages
    /// of an inode another memcg's wb owns; remember that wb (bdi id,
    /// memcg id) in one of its four slots: the slot it already has, else
    /// the oldest free one. The record is refreshed at most every
    /// min(1 s, dirty_expire / 8).
    fn track_foreign_dirty(&mut self, pid: Pid, ino: InodeId, wb: WbId, cg: usize) {
        let bdi_id = self.wbs[wb].bdi as u64 + 1;
        let memcg_id = self.cg.list[self.wbs[wb].memcg].id;
        if self.tracer.on.track_foreign_dirty {
            let line = format!(
                "bdi {}[{}]: ino={} memcg_id={} cgroup_ino={} page_cgroup_ino={}",
                self.wb_name(wb),
                bdi_id,
                self.inodes[ino].ino,
                memcg_id,
                self.wb_cgroup_ino(wb),
                self.cgroup_ino(cg)
            );
            self.trace_line(pid, "track_foreign_dirty", format_args!("{line}"));
        }
        let now = self.jiffies();
        let hz = self.hz();
        let expire_j = self.sc.vm.dirty_expire_centisecs * hz / 100;
        let frn = &mut self.cg.list[cg].frn;
        let mut oldest = None;
        let mut oldest_at = now;
        for (i, f) in frn.iter_mut().enumerate() {
            if f.bdi_id == bdi_id && f.memcg_id == memcg_id {
                let update_intv = hz.min(expire_j / 8);
                if f.at < now.saturating_sub(update_intv) {
                    f.at = now;
                }
                return;
            }
            if f.at < oldest_at && !f.in_flight {
                oldest = Some(i);
                oldest_at = f.at;
            }
        }
        if let Some(i) = oldest {
            frn[i].bdi_id = bdi_id;
            frn[i].memcg_id = memcg_id;
            frn[i].at = now;
        }
    }

    /// `mem_cgroup_flush_foreign`, from a throttled dirtier's
    /// `balance_dirty_pages`: for each record of its memcg younger than
    /// dirty_expire with no flush in flight, start writeback of the owner
    /// wb (`cgroup_writeback_by_id`: 10/8 of the owner memcg's dirty
    /// pages, reason `foreign_flush`).
    pub fn mem_cgroup_flush_foreign(&mut self, pid: Pid, wb: WbId) {
        let cg = self.wbs[wb].memcg;
        let intv = self.sc.vm.dirty_expire_centisecs * self.hz() / 100;
        let now = self.jiffies();
        for i in 0..MEMCG_CGWB_FRN_CNT {
            let f = self.cg.list[cg].frn[i];
            if f.at <= now.saturating_sub(intv) || f.in_flight {
                continue;
            }
            self.cg.list[cg].frn[i].at = 0;
            if self.tracer.on.flush_foreign {
                let line = format!(
                    "bdi {}: cgroup_ino={} frn_bdi_id={} frn_memcg_id={}",
                    self.wb_name(wb),
                    self.wb_cgroup_ino(wb),
                    f.bdi_id,
                    f.memcg_id
                );
                self.trace_line(pid, "flush_foreign", format_args!("{line}"));
            }
            let (Some(owner_cg), bdi) = (self.cgroup_by_id(f.memcg_id), (f.bdi_id - 1) as usize)
            else {
                continue;
            };
            let Some(owner) = self.wb_get_lookup(bdi, owner_cg) else {
                continue;
            };
            let dirty = self.cg.list[owner_cg].file_dirty * 10 / 8;
            self.cg.list[cg].frn[i].in_flight = true;
            self.wb_queue_foreign_flush(owner, dirty as i64, (cg, i));
        }
    }

    /// A foreign flush queued by memcg `frn.0`'s slot `frn.1` is done
    /// (`frn->done`).
    pub fn foreign_flush_done(&mut self, frn: (usize, usize)) {
        if let Some(c) = self.cg.list.get_mut(frn.0) {
            c.frn[frn.1].in_flight = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// mdtc worked by hand. A 16 GiB machine's global domain: 3,900,000
    /// dirtyable pages, 50,000 of them dirty or under writeback. A memcg
    /// with memory.max = 1 GiB (262,144 pages) holding 200,000 file pages,
    /// 30,000 dirty or under writeback: headroom 62,144; clean 170,000;
    /// global clean 3,850,000; other clean 3,680,000; avail = 200,000 +
    /// min(62,144, 3,680,000) = 262,144: the memcg's whole limit.
    #[test]
    fn mdtc_avail_is_filepages_plus_the_smaller_headroom() {
        assert_eq!(
            mdtc_calc_avail(200_000, 62_144, 30_000, 3_900_000, 50_000),
            262_144
        );
        // no limit: the headroom is PAGE_COUNTER_MAX, so the other clean
        // memory binds: 200,000 + 3,680,000
        assert_eq!(
            mdtc_calc_avail(200_000, PAGE_COUNTER_MAX, 30_000, 3_900_000, 50_000),
            3_880_000
        );
        // a memcg whose clean pages exceed the global clean memory
        assert_eq!(mdtc_calc_avail(100, 1_000, 0, 50, 10), 100);
    }

    /// The memcg's thresholds. With dirty_ratio 20 and background 10 the
    /// ratios are 819 and 409 per 4096: on 262,144 pages thresh =
    /// 819 × 262,144 / 4096 = 52,416 and bg = 409 × 262,144 / 4096 =
    /// 26,176. With dirty_bytes = 200 MiB (51,200 pages' worth) and
    /// background 100 MiB on a global avail of 3,900,000 pages the ratios
    /// are ceil(209,715,200 / 3,900,000) = 54 and ceil(104,857,600 /
    /// 3,900,000) = 27 per 4096: thresh = 54 × 262,144 / 4096 = 3,456 and
    /// bg = 27 × 262,144 / 4096 = 1,728.
    #[test]
    fn memcg_limits_turn_bytes_into_ratios_of_the_global_avail() {
        let mut vm = crate::scenario::Vm::default();
        vm.write(crate::scenario::VmKnob::DirtyRatio, 20);
        vm.write(crate::scenario::VmKnob::DirtyBackgroundRatio, 10);
        assert_eq!(
            memcg_dirty_limits(&vm, 4096, 262_144, 3_900_000),
            (52_416, 26_176)
        );
        vm.write(crate::scenario::VmKnob::DirtyBytes, 200 << 20);
        vm.write(crate::scenario::VmKnob::DirtyBackgroundBytes, 100 << 20);
        assert_eq!(
            memcg_dirty_limits(&vm, 4096, 262_144, 3_900_000),
            (3_456, 1_728)
        );
    }
}
