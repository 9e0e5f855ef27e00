//! XFS's inode cache reclaim (fs/xfs/xfs_icache.c): reclaimable inodes per
//! AG, `xfs_reclaim_inodes_nr` from the superblock shrinker, in the two
//! forms of `filesystems.NAME.inode_reclaim`:
//!
//! - `sync-wait` (≤ 5.8, read from 4.8): `xfs_reclaim_inodes_ag` with
//!   `SYNC_TRYLOCK | SYNC_WAIT`. A first pass try-locks each AG's
//!   `pag_ici_reclaim_lock` and walks from the AG's cursor; a clean inode
//!   is freed, a dirty one is flushed (`xfs_iflush` + `xfs_bwrite`: a
//!   synchronous 16 KiB cluster write that queues behind the device's data
//!   IO) with the reclaimer in D state, holding the AG's lock. If an AG was
//!   skipped and work is left, a second pass takes each AG's lock for real
//!   (sleeping behind its holder) and walks from the AG's start.
//! - `non-blocking` (5.9+): `xfs_icwalk` with a shared scan limit, no lock,
//!   from each AG's cursor; dirty inodes are skipped and left to xfsaild
//!   (the shrinker pushes the AIL); nothing blocks.
//!
//! Both queue the AIL push (`xfs_ail_push_all`). An inode is dirty while
//! the checkpoint that last logged it is not written in place
//! (`XfsLog::clean_seq`). Counts, not objects (fs/vfs_cache.rs's runs).
//! Not modelled: the 5 s background reclaim worker, inodegc, pinned
//! inodes' log forces (a pinned inode is flushed like a dirty one), the
//! ILOCK and flush-lock waits of an inode under another reclaimer's IO.

use std::collections::VecDeque;

use crate::block::BioOwner;
use crate::fs::vfs_cache::{Run, RunList, INODE_BYTES};
use crate::kernel::{Kernel, Pid};

/// `filesystems.NAME.inode_reclaim`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InodeReclaim {
    /// 5.9+: skip dirty inodes, let xfsaild clean them.
    #[default]
    NonBlocking,
    /// ≤ 5.8: per-AG mutex, synchronous flush of dirty inodes.
    SyncWait,
}

impl InodeReclaim {
    pub fn parse(s: &str) -> Option<InodeReclaim> {
        match s {
            "non-blocking" => Some(InodeReclaim::NonBlocking),
            "sync-wait" => Some(InodeReclaim::SyncWait),
            _ => None,
        }
    }
}

/// One AG's reclaimable inodes (`pag_ici_root` with the reclaim tag,
/// `pag_ici_reclaimable`, `pag_ici_reclaim_cursor`, and ≤ 5.8's
/// `pag_ici_reclaim_lock` with its sleepers).
#[derive(Clone, Debug, Default)]
pub struct AgIcache {
    pub reclaimable: RunList,
    /// Objects from the head where the next walk starts.
    pub cursor: u64,
    pub lock: Option<Pid>,
    pub lock_waiters: VecDeque<Pid>,
}

/// A superblock's XFS inode cache.
#[derive(Clone, Debug, Default)]
pub struct XfsIcache {
    pub policy: InodeReclaim,
    pub ags: Vec<AgIcache>,
    /// The AG the next reclaimable inode goes to (round robin: which AG
    /// an inode is in is not tracked).
    pub next_ag: usize,
    /// `xs_ig_reclaims`: inodes freed; `xs_iflush_count`: sync flushes.
    pub reclaims: u64,
    pub iflush_count: u64,
}

/// Why a walk stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkStop {
    /// The AG's end: the cursor goes back to its start.
    Done,
    /// The scan limit.
    Limit,
    /// A dirty inode under SYNC_WAIT, at the cursor: it must be flushed.
    Dirty,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Walk {
    pub scanned: u64,
    pub freed: u64,
    pub stop: WalkStop,
}

/// Walk an AG's reclaimable inodes from its cursor for at most `nr`:
/// clean ones (log state at or before `clean_seq`) are freed; a dirty one
/// is skipped (`skip_dirty`, the 5.9+ form and the ≤ 5.8 form without
/// SYNC_WAIT) or stops the walk with the cursor on it.
pub fn walk_ag(ag: &mut AgIcache, nr: u64, clean_seq: u64, skip_dirty: bool) -> Walk {
    let mut kept = RunList::default();
    let mut pos = 0; // objects kept so far
    let mut left = nr;
    let (mut scanned, mut freed) = (0, 0);
    let mut stop = None;
    let cursor = ag.cursor;
    let mut new_cursor = cursor;
    for r in std::mem::take(&mut ag.reclaimable.runs) {
        let seq = if r.seq <= clean_seq { 0 } else { r.seq };
        let mut n = r.n;
        // the part before the cursor stays
        if pos < cursor {
            let k = n.min(cursor - pos);
            kept.push_back(seq, k);
            pos += k;
            n -= k;
        }
        if n == 0 {
            continue;
        }
        if stop.is_some() || left == 0 {
            if stop.is_none() {
                stop = Some(WalkStop::Limit);
            }
            kept.push_back(seq, n);
            continue;
        }
        if seq == 0 {
            let k = n.min(left);
            freed += k;
            scanned += k;
            left -= k;
            kept.push_back(seq, n - k);
        } else if skip_dirty {
            let k = n.min(left);
            scanned += k;
            left -= k;
            new_cursor += k;
            kept.push_back(seq, n);
        } else {
            stop = Some(WalkStop::Dirty);
            kept.push_back(seq, n);
        }
    }
    let stop = stop.unwrap_or(if left == 0 {
        WalkStop::Limit
    } else {
        WalkStop::Done
    });
    ag.reclaimable = kept;
    ag.cursor = if stop == WalkStop::Done {
        0
    } else {
        new_cursor.min(ag.reclaimable.total)
    };
    Walk {
        scanned,
        freed,
        stop,
    }
}

/// A reclaimer asleep in `xfs_reclaim_inodes_ag` (≤ 5.8), and what it does
/// when woken.
#[derive(Clone, Debug)]
pub struct XfsReclaimWait {
    pub sb: usize,
    pub ag: usize,
    /// Inodes still to scan in this call.
    pub nr_left: u64,
    /// In the second, blocking pass.
    pub blocking: bool,
    /// AGs the trylock pass skipped.
    pub skipped: bool,
    /// Sleeping on the cluster write (true) or on the AG's lock (false).
    pub on_io: bool,
}

impl Kernel {
    /// `xfs_fs_nr_cached_objects` → `xfs_reclaim_inodes_count`: the
    /// reclaimable inodes of every AG (0 for another filesystem).
    pub fn xfs_nr_cached_objects(&self, sb: usize) -> u64 {
        match &self.sbs[sb].fs {
            crate::fs::FsType::Xfs(x) => x.icache.ags.iter().map(|a| a.reclaimable.total).sum(),
            _ => 0,
        }
    }

    fn xfs_icache(&mut self, sb: usize) -> &mut XfsIcache {
        &mut self.sbs[sb].xfs_mut().icache
    }

    /// The checkpoint through which logged inodes are written in place
    /// (everything, without the metadata model).
    pub fn xfs_clean_seq(&mut self, sb: usize) -> u64 {
        match self.sbs[sb].xfs_mut().meta.as_ref() {
            Some(m) => m.log.clean_seq,
            None => u64::MAX,
        }
    }

    /// The running checkpoint's number: what an inode logged now carries
    /// (0: no log, clean at once).
    pub fn xfs_log_seq(&mut self, sb: usize) -> u64 {
        match self.sbs[sb].xfs_mut().meta.as_ref() {
            Some(m) => m.log.cil_seq,
            None => 0,
        }
    }

    /// `xfs_inode_mark_reclaimable`: evicted VFS inodes become reclaimable
    /// XFS inodes (tagged in their AG).
    pub(crate) fn xfs_inode_mark_reclaimable(&mut self, sb: usize, r: Run) {
        let ic = self.xfs_icache(sb);
        let n_ag = ic.ags.len().max(1);
        if ic.ags.is_empty() {
            ic.ags.push(AgIcache::default());
        }
        // spread a run over the AGs round robin
        let mut left = r.n;
        let per = (r.n / n_ag as u64).max(1);
        while left > 0 {
            let k = per.min(left);
            let ag = ic.next_ag % n_ag;
            ic.ags[ag].reclaimable.push_back(r.seq, k);
            ic.next_ag = (ag + 1) % n_ag;
            left -= k;
        }
    }

    /// A lookup found a reclaimable inode (`xfs_iget_recycle`): it leaves
    /// the reclaim list of the largest AG (which inode is hit is not
    /// tracked); returns its log state.
    pub(crate) fn xfs_iget_recycle(&mut self, sb: usize) -> u64 {
        let ic = self.xfs_icache(sb);
        let Some(ag) =
            (0..ic.ags.len()).max_by_key(|&a| (ic.ags[a].reclaimable.total, usize::MAX - a))
        else {
            return 0;
        };
        let a = &mut ic.ags[ag];
        let mut out = Vec::new();
        a.reclaimable.pop_front(1, &mut out);
        a.cursor = a.cursor.saturating_sub(1);
        out.first().map_or(0, |r| r.seq)
    }

    /// `xfs_reclaim_inodes_nr` for `nr` inodes by `pid`. Returns what the
    /// shrinker counts as freed (0: both forms report no count).
    pub(crate) fn xfs_free_cached_objects(&mut self, pid: Pid, sb: usize, nr: u64) -> u64 {
        self.xfs_ail_push_all(sb);
        match self.xfs_icache(sb).policy {
            InodeReclaim::NonBlocking => {
                self.xfs_icwalk_reclaim(sb, nr);
            }
            InodeReclaim::SyncWait => {
                if self.vmscan.shrink_waits.contains_key(&pid) {
                    // already asleep in an earlier batch's walk: the rest of
                    // this call is that walk's
                    if let Some(w) = self
                        .vmscan
                        .shrink_waits
                        .get_mut(&pid)
                        .and_then(|q| q.iter_mut().find(|w| w.sb == sb))
                    {
                        w.nr_left += nr;
                    }
                    return 0;
                }
                self.xfs_reclaim_inodes_ag(pid, sb, 0, nr, false, false);
            }
        }
        0
    }

    /// 5.9+ `xfs_icwalk(mp, XFS_ICWALK_RECLAIM)` with a scan limit shared
    /// by the AGs, each from its cursor; dirty inodes skipped.
    fn xfs_icwalk_reclaim(&mut self, sb: usize, nr: u64) {
        let clean = self.xfs_clean_seq(sb);
        let mut left = nr;
        let n_ag = self.xfs_icache(sb).ags.len();
        let mut freed = 0;
        for ag in 0..n_ag {
            if left == 0 {
                break;
            }
            let a = &mut self.xfs_icache(sb).ags[ag];
            if a.reclaimable.total == 0 {
                continue;
            }
            let w = walk_ag(a, left, clean, true);
            left -= w.scanned.min(left);
            freed += w.freed;
        }
        self.xfs_reclaimed(sb, freed);
    }

    /// Inodes freed: their slab goes (`__xfs_inode_free`).
    fn xfs_reclaimed(&mut self, sb: usize, n: u64) {
        if n > 0 {
            self.xfs_icache(sb).reclaims += n;
            self.vmscan.shrink_freed += n;
            self.slab_shrink(sb, n * INODE_BYTES);
        }
    }

    /// ≤ 5.8 `xfs_reclaim_inodes_ag(SYNC_TRYLOCK | SYNC_WAIT)` from AG
    /// `from` with `nr` left: returns true if `pid` now sleeps (its wait is
    /// in `vmscan.shrink_waits`). A task that cannot sleep here (one
    /// outside kswapd and the workloads that know how to wait) runs the
    /// trylock pass without SYNC_WAIT: dirty inodes are skipped.
    fn xfs_reclaim_inodes_ag(
        &mut self,
        pid: Pid,
        sb: usize,
        from: usize,
        mut nr: u64,
        blocking: bool,
        mut skipped: bool,
    ) -> bool {
        let may_sleep = self.vmscan.may_sleep == Some(pid);
        let clean = self.xfs_clean_seq(sb);
        let n_ag = self.xfs_icache(sb).ags.len();
        for ag in from..n_ag {
            if nr == 0 {
                break;
            }
            let a = &mut self.xfs_icache(sb).ags[ag];
            if a.reclaimable.total == 0 {
                continue;
            }
            match a.lock {
                Some(holder) if holder != pid => {
                    if blocking && may_sleep {
                        a.lock_waiters.push_back(pid);
                        self.shrink_wait_push(
                            pid,
                            XfsReclaimWait {
                                sb,
                                ag,
                                nr_left: nr,
                                blocking,
                                skipped,
                                on_io: false,
                            },
                        );
                        return true;
                    }
                    skipped = true;
                    continue;
                }
                _ => a.lock = Some(pid),
            }
            if blocking {
                // the blocking pass starts at the AG's start
                a.cursor = 0;
            }
            if self.xfs_reclaim_walk(pid, sb, ag, &mut nr, clean, may_sleep, blocking, skipped) {
                return true;
            }
        }
        if !blocking && skipped && nr > 0 && may_sleep {
            return self.xfs_reclaim_inodes_ag(pid, sb, 0, nr, true, false);
        }
        false
    }

    /// Walk AG `ag` (its lock held by `pid`): free clean inodes; at a dirty
    /// one, flush it synchronously and sleep (true). Releases the lock
    /// when the walk is over.
    #[allow(clippy::too_many_arguments)]
    fn xfs_reclaim_walk(
        &mut self,
        pid: Pid,
        sb: usize,
        ag: usize,
        nr: &mut u64,
        clean: u64,
        may_sleep: bool,
        blocking: bool,
        skipped: bool,
    ) -> bool {
        let a = &mut self.xfs_icache(sb).ags[ag];
        let w = walk_ag(a, *nr, clean, !may_sleep);
        *nr -= w.scanned.min(*nr);
        self.xfs_reclaimed(sb, w.freed);
        if w.stop == WalkStop::Dirty {
            // xfs_iflush + xfs_bwrite: the inode's cluster, synchronously
            self.xfs_icache(sb).iflush_count += 1;
            self.xfs_iflush_submit(pid, sb, ag);
            self.shrink_wait_push(
                pid,
                XfsReclaimWait {
                    sb,
                    ag,
                    nr_left: *nr,
                    blocking,
                    skipped,
                    on_io: true,
                },
            );
            return true;
        }
        self.xfs_ag_unlock(sb, ag);
        false
    }

    /// Release an AG's reclaim lock: the first sleeper gets it.
    fn xfs_ag_unlock(&mut self, sb: usize, ag: usize) {
        let a = &mut self.xfs_icache(sb).ags[ag];
        a.lock = None;
        if let Some(next) = a.lock_waiters.pop_front() {
            a.lock = Some(next);
            self.wake_up_process(next);
        }
    }

    fn shrink_wait_push(&mut self, pid: Pid, w: XfsReclaimWait) {
        // the reclaimer sleeps in the shrinker, inside reclaim's memstall
        self.tasks[pid].stall = crate::kernel::psi::Stall::Mem;
        self.vmscan
            .shrink_waits
            .entry(pid)
            .or_default()
            .push_back(w);
    }

    /// The 16 KiB cluster write of a dirty inode of AG `ag`
    /// (REQ_META | REQ_SYNC), submitted by the reclaimer: it queues with
    /// the device's other IO.
    fn xfs_iflush_submit(&mut self, pid: Pid, sb: usize, ag: usize) {
        let s = &self.sbs[sb];
        let dev = s.dev;
        // an inode chunk near the AG's start (the AG's inode clusters are
        // not tracked one by one)
        let sector = s.ag_data_start[ag.min(s.ag_data_start.len() - 1)] - 2048 + 64;
        use crate::block::blk_wbt::{REQ_META, REQ_SYNC};
        let sectors = crate::fs::xfs_meta::XFS_CLUSTER_BLOCKS * 8;
        self.submit_meta_bio(
            dev,
            pid,
            sector,
            sectors,
            REQ_META | REQ_SYNC,
            BioOwner::XfsReclaim(sb as u32),
        );
    }

    /// The cluster write is done (`xfs_buf_ioend` of `xfs_bwrite`): wake
    /// the reclaimer.
    pub fn xfs_iflush_done(&mut self, pid: Pid) {
        self.wake_up_process(pid);
    }

    /// A reclaimer woken in `xfs_reclaim_inodes_ag` goes on: after its
    /// cluster write the flushed inode is clean and freed and the walk
    /// continues; after the AG's lock came to it the walk starts. Returns
    /// true if it sleeps again; false when the shrinker calls it slept in
    /// are over.
    pub fn xfs_reclaim_resume(&mut self, pid: Pid) -> bool {
        while let Some(w) = self
            .vmscan
            .shrink_waits
            .get_mut(&pid)
            .and_then(|q| q.pop_front())
        {
            let clean = self.xfs_clean_seq(w.sb);
            let mut nr = w.nr_left;
            if w.on_io {
                // the flushed inode: clean now, freed
                let a = &mut self.xfs_icache(w.sb).ags[w.ag];
                let at = a.cursor;
                let mut rest = RunList::default();
                let mut before = Vec::new();
                a.reclaimable.pop_front(at, &mut before);
                let mut one = Vec::new();
                a.reclaimable.pop_front(1, &mut one);
                for r in before {
                    rest.push_back(r.seq, r.n);
                }
                for r in std::mem::take(&mut a.reclaimable.runs) {
                    rest.push_back(r.seq, r.n);
                }
                a.reclaimable = rest;
                let got = one.iter().map(|r| r.n).sum();
                self.xfs_reclaimed(w.sb, got);
                nr = nr.saturating_sub(1);
            } else if w.blocking {
                self.xfs_icache(w.sb).ags[w.ag].cursor = 0;
            }
            self.vmscan
                .shrink_waits
                .get_mut(&pid)
                .map(|q| q.is_empty())
                .filter(|&e| e)
                .map(|_| self.vmscan.shrink_waits.remove(&pid));
            if self.xfs_reclaim_walk(pid, w.sb, w.ag, &mut nr, clean, true, w.blocking, w.skipped) {
                return true;
            }
            if self.xfs_reclaim_inodes_ag(pid, w.sb, w.ag + 1, nr, w.blocking, w.skipped) {
                return true;
            }
        }
        self.vmscan.shrink_waits.remove(&pid);
        false
    }

    /// Per XFS filesystem, its inode reclaim counters as /proc/fs/xfs/stat
    /// names them (`xs_ig_reclaims`, `xs_iflush_count`) and the
    /// reclaimable inodes left; None when no inode was ever reclaimable.
    pub fn xfs_icache_stats(&self) -> Option<String> {
        let mut out = String::new();
        for (i, s) in self.sbs.iter().enumerate() {
            let crate::fs::FsType::Xfs(x) = &s.fs else {
                continue;
            };
            let ic = &x.icache;
            let left: u64 = ic.ags.iter().map(|a| a.reclaimable.total).sum();
            if ic.reclaims + ic.iflush_count + left == 0 {
                continue;
            }
            out.push_str(&format!(
                "{} xs_ig_reclaims {} xs_iflush_count {} reclaimable {}\n",
                self.sc.filesystems[i].name, ic.reclaims, ic.iflush_count, left
            ));
        }
        (!out.is_empty()).then_some(out)
    }

    /// `xfs_ail_push_all`: xfsaild writes the AIL (asynchronous).
    fn xfs_ail_push_all(&mut self, sb: usize) {
        if self.sbs[sb].xfs_mut().meta.is_some() {
            self.xfs_ail_push(sb);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ag(runs: &[(u64, u64)]) -> AgIcache {
        let mut a = AgIcache::default();
        for &(seq, n) in runs {
            a.reclaimable.push_back(seq, n);
        }
        a
    }

    #[test]
    fn non_blocking_skips_dirty_inodes() {
        // 10 clean, 5 dirty (checkpoint 9, not written), 10 clean
        let mut a = ag(&[(0, 10), (9, 5), (0, 10)]);
        let w = walk_ag(&mut a, 100, 8, true);
        assert_eq!(
            w,
            Walk {
                scanned: 25,
                freed: 20,
                stop: WalkStop::Done
            }
        );
        assert_eq!((a.reclaimable.total, a.cursor), (5, 0));
        // once xfsaild wrote checkpoint 9 they go too
        let w = walk_ag(&mut a, 100, 9, true);
        assert_eq!((w.freed, a.reclaimable.total), (5, 0));
    }

    #[test]
    fn non_blocking_limit_keeps_the_cursor() {
        let mut a = ag(&[(0, 4), (9, 6), (0, 10)]);
        let w = walk_ag(&mut a, 8, 0, true);
        // 4 freed, 4 dirty skipped: the cursor is past them
        assert_eq!(
            w,
            Walk {
                scanned: 8,
                freed: 4,
                stop: WalkStop::Limit
            }
        );
        assert_eq!((a.reclaimable.total, a.cursor), (16, 4));
        let w = walk_ag(&mut a, 8, 0, true);
        // 2 dirty skipped, 6 clean freed
        assert_eq!(
            w,
            Walk {
                scanned: 8,
                freed: 6,
                stop: WalkStop::Limit
            }
        );
        assert_eq!((a.reclaimable.total, a.cursor), (10, 6));
    }

    /// A machine with one XFS filesystem of 2 AGs whose reclaimable inodes
    /// are 10 clean then 5 dirty (logged in checkpoint 1, not written in
    /// place) per AG, and a task to reclaim.
    fn machine(policy: &str) -> (crate::kernel::Kernel, Pid) {
        let text = format!(
            "[machine]\ncpus = 2\n[devices.d]\ntype = \"hdd\"\nsize = \"16G\"\n\
             [filesystems.f]\ntype = \"xfs\"\ndevice = \"d\"\nagcount = 2\ninode_reclaim = \"{policy}\"\n\
             [jobs.dd]\nsize = \"4k\"\n[run]\nduration = \"1s\"\n"
        );
        let sc = crate::scenario::Scenario::load_str(&text, "t.toml", "t", &[]).unwrap();
        let mut k = crate::kernel::Kernel::new(sc, crate::trace::Tracer::disabled());
        for ag in 0..2 {
            let a = &mut k.sbs[0].xfs_mut().icache.ags[ag];
            a.reclaimable.push_back(0, 10);
            a.reclaimable.push_back(1, 5);
        }
        k.slab_grow(0, 0, 30 * INODE_BYTES);
        (k, 0)
    }

    #[test]
    fn sync_wait_sleeps_on_the_cluster_write() {
        let (mut k, pid) = machine("sync-wait");
        assert_eq!(k.xfs_clean_seq(0), 0);
        k.vmscan.may_sleep = Some(pid);
        k.xfs_free_cached_objects(pid, 0, 100);
        // AG 0's clean inodes freed, then asleep on a dirty one's flush,
        // holding AG 0's lock
        let w = k
            .vmscan
            .shrink_waits
            .get(&pid)
            .and_then(|q| q.front())
            .cloned()
            .expect("asleep");
        assert!(w.on_io && w.ag == 0 && !w.blocking);
        let ic = &k.sbs[0].xfs_mut().icache;
        assert_eq!((ic.reclaims, ic.iflush_count), (10, 1));
        assert_eq!(ic.ags[0].lock, Some(pid));
        // another reclaimer skips AG 0 in its trylock pass (its lock is
        // held), frees AG 1's clean inodes and sleeps on a flush of its own
        // there
        let other = 1;
        k.vmscan.may_sleep = Some(other);
        k.xfs_free_cached_objects(other, 0, 100);
        let ic = &k.sbs[0].xfs_mut().icache;
        assert_eq!((ic.reclaims, ic.iflush_count), (20, 2));
        assert_eq!(ic.ags[1].lock, Some(other));
        // the first one's write completes: the flushed inode is freed and
        // its walk goes on to the next dirty one
        assert!(k.xfs_reclaim_resume(pid));
        assert_eq!(k.sbs[0].xfs_mut().icache.reclaims, 21);
        // a reclaimer that cannot sleep (not kswapd or a workload that
        // waits) skips the dirty inodes
        let third = 2;
        k.vmscan.may_sleep = None;
        k.sbs[0].xfs_mut().icache.ags[0].lock = None;
        k.xfs_free_cached_objects(third, 0, 100);
        assert!(!k.vmscan.shrink_waits.contains_key(&third));
    }

    #[test]
    fn non_blocking_never_sleeps() {
        let (mut k, pid) = machine("non-blocking");
        k.vmscan.may_sleep = Some(pid);
        k.xfs_free_cached_objects(pid, 0, 100);
        assert!(k.vmscan.shrink_waits.is_empty());
        let ic = &k.sbs[0].xfs_mut().icache;
        // the clean ones of both AGs; the dirty ones stay for xfsaild
        assert_eq!((ic.reclaims, ic.iflush_count), (20, 0));
        assert_eq!(k.xfs_nr_cached_objects(0), 10);
    }

    #[test]
    fn sync_wait_stops_at_a_dirty_inode() {
        let mut a = ag(&[(0, 3), (9, 2), (0, 10)]);
        let w = walk_ag(&mut a, 100, 8, false);
        assert_eq!(
            w,
            Walk {
                scanned: 3,
                freed: 3,
                stop: WalkStop::Dirty
            }
        );
        // the cursor is on the dirty inode
        assert_eq!((a.reclaimable.total, a.cursor), (12, 0));
        assert_eq!(a.reclaimable.runs.front(), Some(&Run { seq: 9, n: 2 }));
    }
}
