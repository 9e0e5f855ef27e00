//! Cgroup writeback's inode ownership (fs/fs-writeback.c under
//! CONFIG_CGROUP_WRITEBACK): each flusher visit of an inode is a round in
//! which `wbc_account_cgroup_owner` counts the pages written by memcg
//! (a Boyer-Moore majority vote beside the owner's and the last winner's
//! counts); `wbc_detach_inode` picks the round's winner, turns the IO time
//! it took into slots of the inode's 16-slot history (each slot 1/16 of a
//! 2 s period, at most 5 a round, rounds shorter than 1/8 of the running
//! average ignored), marks them foreign if the winner is not the owner,
//! and switches the inode to the winner's wb when more than 8 of the 16
//! slots are foreign (`inode_switch_wbs` → `inode_do_switch_wbs`, which
//! moves the inode's stats and list position to the new wb). So an owner
//! that has stopped writing loses an inode to a foreign dirtier after two
//! rounds of at least 0.5 s of IO each (5 + 5 > 8 slots), more if the
//! rounds are shorter.
//!
//! The switch runs as soon as the round ends (the kernel's waits for an
//! RCU grace period, well under a round). Only the flusher's rounds vote:
//! an fsync's writeback attaches no `wbc` here.

use crate::kernel::{InodeId, Kernel, Pid, WbId};

/// `WB_FRN_TIME_SHIFT`: IO time in 1/8192 s.
pub const WB_FRN_TIME_SHIFT: u32 = 13;
/// `WB_FRN_TIME_AVG_SHIFT`: avg = avg × 7/8 + new × 1/8.
pub const WB_FRN_TIME_AVG_SHIFT: u32 = 3;
/// `WB_FRN_TIME_CUT_DIV`: rounds under avg / 8 do not count.
pub const WB_FRN_TIME_CUT_DIV: u64 = 8;
/// `WB_FRN_TIME_PERIOD`: 2 s.
pub const WB_FRN_TIME_PERIOD: u64 = 2 * (1 << WB_FRN_TIME_SHIFT);
/// `WB_FRN_HIST_SLOTS`, `WB_FRN_HIST_UNIT`, `WB_FRN_HIST_THR_SLOTS`,
/// `WB_FRN_HIST_MAX_SLOTS`.
pub const WB_FRN_HIST_SLOTS: u64 = 16;
pub const WB_FRN_HIST_UNIT: u64 = WB_FRN_TIME_PERIOD / WB_FRN_HIST_SLOTS;
pub const WB_FRN_HIST_THR_SLOTS: u32 = (WB_FRN_HIST_SLOTS / 2) as u32;
pub const WB_FRN_HIST_MAX_SLOTS: u64 = WB_FRN_HIST_THR_SLOTS as u64 / 2 + 1;

/// The cgroup-writeback fields of `struct writeback_control` for one
/// round, in pages (the kernel counts bytes; the vote is the same).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wbc {
    /// The owner's memcg id and its pages.
    pub wb_id: u32,
    pub wb_pages: u64,
    /// The last round's winner (`i_wb_frn_winner`) and its pages.
    pub lcand_id: u32,
    pub lcand_pages: u64,
    /// The running majority candidate.
    pub tcand_id: u32,
    pub tcand_pages: u64,
}

impl Wbc {
    /// `wbc_account_cgroup_owner` for `n` pages of memcg `id`, as `n`
    /// calls of one page each.
    pub fn account(&mut self, id: u32, n: u64) {
        if id == self.wb_id {
            self.wb_pages += n;
            return;
        }
        if id == self.lcand_id {
            self.lcand_pages += n;
        }
        if self.tcand_pages == 0 || id == self.tcand_id {
            self.tcand_id = id;
            self.tcand_pages += n;
        } else if n <= self.tcand_pages {
            self.tcand_pages -= n;
        } else {
            // the candidate falls to 0 and the rest elect this memcg
            self.tcand_id = id;
            self.tcand_pages = n - self.tcand_pages;
        }
    }

    /// The round's winner: (memcg id, pages).
    pub fn winner(&self) -> (u32, u64) {
        if self.wb_pages >= self.lcand_pages && self.wb_pages >= self.tcand_pages {
            (self.wb_id, self.wb_pages)
        } else if self.lcand_pages >= self.tcand_pages {
            (self.lcand_id, self.lcand_pages)
        } else {
            (self.tcand_id, self.tcand_pages)
        }
    }
}

/// The verdict of `wbc_detach_inode` on one round: the new
/// (`i_wb_frn_winner`, `i_wb_frn_avg_time`, `i_wb_frn_history`), whether
/// the history was traced, and the memcg id to switch to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub winner: u32,
    pub avg_time: u16,
    pub history: u16,
    pub counted: bool,
    pub switch_to: Option<u32>,
}

/// `wbc_detach_inode`'s arithmetic: `avg_write_bw` is the owner wb's
/// `avg_write_bandwidth` in pages per second.
pub fn detach_verdict(w: &Wbc, avg_time: u16, history: u16, avg_write_bw: u64) -> Verdict {
    let (max_id, max_pages) = w.winner();
    let max_time = (max_pages << WB_FRN_TIME_SHIFT).div_ceil(avg_write_bw.max(1));
    let mut avg = avg_time as u64;
    if avg != 0 {
        // the kernel's unsigned arithmetic: avg + max/8 - avg/8
        avg = avg + (max_time >> WB_FRN_TIME_AVG_SHIFT) - (avg >> WB_FRN_TIME_AVG_SHIFT);
    } else {
        avg = max_time;
    }
    let mut history = history;
    let mut counted = false;
    let mut switch_to = None;
    if max_time >= avg / WB_FRN_TIME_CUT_DIV {
        let slots = max_time
            .div_ceil(WB_FRN_HIST_UNIT)
            .min(WB_FRN_HIST_MAX_SLOTS) as u32;
        history = ((history as u32) << slots) as u16;
        if w.wb_id != max_id {
            history |= ((1u32 << slots) - 1) as u16;
        }
        counted = history != 0;
        if history.count_ones() > WB_FRN_HIST_THR_SLOTS {
            switch_to = Some(max_id);
        }
    }
    Verdict {
        winner: max_id,
        avg_time: avg.min(u16::MAX as u64) as u16,
        history,
        counted,
        switch_to,
    }
}

impl Kernel {
    /// `wbc_attach_and_unlock_inode`: the flusher starts a round on `ino`.
    pub fn wbc_attach_inode(&mut self, ino: InodeId) {
        let wb = self.inodes[ino].wb;
        let wb_id = self.cg.list[self.wbs[wb].memcg].id;
        if let Some(i) = self.cg.inodes.get_mut(&ino) {
            i.wbc = Some(Wbc {
                wb_id,
                lcand_id: i.frn_winner,
                ..Default::default()
            });
        }
    }

    /// `wbc_detach_inode`: the round on `ino` is over; fold it into the
    /// inode's foreign history and switch its wb if foreign writers won.
    pub fn wbc_detach_inode(&mut self, pid: Pid, ino: InodeId) {
        let wb = self.inodes[ino].wb;
        let bw = self.wbs[wb].avg_write_bandwidth;
        let Some(i) = self.cg.inodes.get_mut(&ino) else {
            return;
        };
        let Some(w) = i.wbc.take() else {
            return;
        };
        let v = detach_verdict(&w, i.frn_avg_time, i.frn_history, bw);
        i.frn_winner = v.winner;
        i.frn_avg_time = v.avg_time;
        i.frn_history = v.history;
        if v.counted && self.tracer.on.inode_foreign_history {
            let line = format!(
                "bdi {}: ino={} cgroup_ino={} history=0x{:x}",
                self.wb_name(wb),
                self.inodes[ino].ino,
                self.wb_cgroup_ino(wb),
                v.history
            );
            self.trace_line(pid, "inode_foreign_history", format_args!("{line}"));
        }
        if let Some(id) = v.switch_to {
            self.inode_switch_wbs(pid, ino, id);
        }
    }

    /// `inode_switch_wbs` + `inode_do_switch_wbs`: move `ino` to the wb of
    /// memcg `id` on its bdi: its dirty and writeback pages' wb stats, its
    /// place on the dirty list (kept in `dirtied_when` order), then the
    /// inode's wb pointer.
    pub fn inode_switch_wbs(&mut self, pid: Pid, ino: InodeId, id: u32) {
        let old = self.inodes[ino].wb;
        let Some(cg) = self.cgroup_by_id(id) else {
            return;
        };
        if self.wbs[old].memcg == cg || self.inodes[ino].i_state & super::I_FREEING != 0 {
            return;
        }
        let new = self.wb_get_create(self.wbs[old].bdi, cg);
        if self.tracer.on.inode_switch_wbs {
            let line = format!(
                "bdi {}: ino={} old_cgroup_ino={} new_cgroup_ino={}",
                self.wb_name(old),
                self.inodes[ino].ino,
                self.wb_cgroup_ino(old),
                self.wb_cgroup_ino(new)
            );
            self.trace_line(pid, "inode_switch_wbs", format_args!("{line}"));
        }
        self.inode_do_switch_wbs(ino, old, new);
    }

    fn inode_do_switch_wbs(&mut self, ino: InodeId, old: WbId, new: WbId) {
        let dirty = self.inodes[ino].dirty.count();
        let wback = self.inodes[ino].nr_writeback;
        let list = self.inodes[ino].list;
        // off the old wb's lists first, while i_wb still names it
        if list.is_some() {
            self.inode_list_move(ino, None);
        }
        {
            let o = &mut self.wbs[old];
            o.reclaimable -= dirty.min(o.reclaimable);
            o.writeback -= wback.min(o.writeback);
            if wback > 0 {
                o.writeback_inodes -= 1;
            }
        }
        {
            let n = &mut self.wbs[new];
            n.reclaimable += dirty;
            n.writeback += wback;
            if wback > 0 {
                n.writeback_inodes += 1;
            }
        }
        self.inodes[ino].wb = new;
        if list.is_some() {
            // b_dirty sorted by dirtied_when, newest at the head
            let when = self.inodes[ino].dirtied_when;
            let pos = self.wbs[new]
                .b_dirty
                .iter()
                .position(|&i| self.inodes[i].dirtied_when <= when)
                .unwrap_or(self.wbs[new].b_dirty.len());
            self.wbs[new].b_dirty.insert(pos, ino);
            self.inodes[ino].list = Some(super::WbList::Dirty);
            if !self.wbs[new].has_dirty_io {
                self.wbs[new].has_dirty_io = true;
                // wbsim arms the new wb's periodic run, as a first
                // dirtying would, so the inode's pages are not left to
                // background writeback alone
                self.wb_wakeup_delayed(new);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vote_counts_page_by_page() {
        let mut w = Wbc {
            wb_id: 2,
            lcand_id: 0,
            ..Default::default()
        };
        w.account(3, 10);
        w.account(4, 4); // 3 leads by 6
        assert_eq!((w.tcand_id, w.tcand_pages), (3, 6));
        w.account(4, 9); // 6 cancel, 3 elect memcg 4
        assert_eq!((w.tcand_id, w.tcand_pages), (4, 3));
        w.account(2, 5);
        assert_eq!(w.winner(), (2, 5));
        w.account(4, 3);
        assert_eq!(w.winner(), (4, 6));
    }

    /// The owner (id 2) wrote nothing; memcg 3 wrote 1 s worth of pages
    /// at 25,600 pages/s each round: max_time = 25,600 << 13 / 25,600 =
    /// 8192, 8 units of 1024, capped at 5 slots. Round 1: history 0b11111
    /// (5 set, no switch); round 2: 0b1111111111 (10 > 8): switch.
    #[test]
    fn a_foreign_writer_takes_the_inode_in_two_long_rounds() {
        let w = Wbc {
            wb_id: 2,
            tcand_id: 3,
            tcand_pages: 25_600,
            ..Default::default()
        };
        let v1 = detach_verdict(&w, 0, 0, 25_600);
        assert_eq!((v1.history, v1.avg_time, v1.switch_to), (0x1f, 8192, None));
        let w2 = Wbc {
            lcand_id: v1.winner,
            lcand_pages: 25_600,
            tcand_id: 3,
            tcand_pages: 25_600,
            ..w
        };
        let v2 = detach_verdict(&w2, v1.avg_time, v1.history, 25_600);
        assert_eq!((v2.history, v2.switch_to), (0x3ff, Some(3)));
    }

    /// Rounds of 0.1 s (2,560 pages at 25,600/s: max_time 820, one slot
    /// each) need nine rounds; a round under avg/8 is not counted.
    #[test]
    fn short_rounds_need_nine_and_tiny_ones_do_not_count() {
        let w = Wbc {
            wb_id: 2,
            tcand_id: 3,
            tcand_pages: 2_560,
            ..Default::default()
        };
        let (mut avg, mut hist) = (0u16, 0u16);
        for round in 1..=9 {
            let v = detach_verdict(&w, avg, hist, 25_600);
            (avg, hist) = (v.avg_time, v.history);
            assert_eq!(v.switch_to.is_some(), round == 9, "round {round}");
        }
        let tiny = Wbc {
            tcand_pages: 10,
            ..w
        };
        let v = detach_verdict(&tiny, 8192, 0x1, 25_600);
        assert_eq!((v.history, v.counted), (0x1, false));
    }
}
