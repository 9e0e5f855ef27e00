//! The VFS caches a superblock shrinker reclaims, as counts: the dentry
//! LRU (fs/dcache.c, unused dentries, each holding its inode), the inode
//! LRU (fs/inode.c, unused inodes without a dentry) and the superblock
//! shrinker itself (fs/super.c `super_cache_count`, `super_cache_scan`).
//!
//! Objects are counted, never stored one by one: each list is a FIFO of
//! runs, a run being objects with the same log state (`seq`: the XFS
//! checkpoint that last logged their inode, 0 for clean). Taking from a
//! list takes its oldest objects (`list_lru_walk` from the head); a
//! lookup that hits a cached object is taken as hitting an object of the
//! level in proportion to the level's size. Not modelled: the
//! `DCACHE_REFERENCED`/`I_REFERENCED` second chance, inodes kept off the
//! LRU by their page cache, in-use inodes (a stat or an open is over at
//! once).

use std::collections::VecDeque;

use crate::kernel::{Kernel, Pid};
use crate::mm::page_alloc::Gfp;
use crate::mm::shrinker::ScanRet;

/// Bytes of a dentry (`struct dentry` with an inline name: the dentry
/// slab's object size on x86_64).
pub const DENTRY_BYTES: u64 = 192;
/// Bytes of an in-core inode (XFS: `struct xfs_inode` with its VFS inode,
/// the xfs_inode slab's ~1 KiB object; ext4's `ext4_inode_info` is about
/// the same).
pub const INODE_BYTES: u64 = 1024;

/// A run of objects with one log state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// The XFS checkpoint whose log item holds the inode (0: clean).
    pub seq: u64,
    pub n: u64,
}

/// A list of objects, oldest first, as runs.
#[derive(Clone, Debug, Default)]
pub struct RunList {
    pub runs: VecDeque<Run>,
    pub total: u64,
}

impl RunList {
    /// Add `n` objects of state `seq` at the tail.
    pub fn push_back(&mut self, seq: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.total += n;
        if let Some(r) = self.runs.back_mut() {
            if r.seq == seq {
                r.n += n;
                return;
            }
        }
        self.runs.push_back(Run { seq, n });
    }
    /// Take up to `n` objects from the head, oldest first.
    pub fn pop_front(&mut self, mut n: u64, out: &mut Vec<Run>) -> u64 {
        let mut got = 0;
        while n > 0 {
            let Some(r) = self.runs.front_mut() else {
                break;
            };
            let k = r.n.min(n);
            out.push(Run { seq: r.seq, n: k });
            r.n -= k;
            if r.n == 0 {
                self.runs.pop_front();
            }
            n -= k;
            got += k;
        }
        self.total -= got;
        got
    }
    /// Take the object at `pos` (from the head) out of the list; returns
    /// its log state.
    pub fn take_at(&mut self, pos: u64) -> Option<u64> {
        let mut at = 0;
        for i in 0..self.runs.len() {
            let r = self.runs[i];
            if pos < at + r.n {
                let k = pos - at;
                let (before, after) = (k, r.n - k - 1);
                self.runs.remove(i);
                let mut j = i;
                if before > 0 {
                    self.runs.insert(
                        j,
                        Run {
                            seq: r.seq,
                            n: before,
                        },
                    );
                    j += 1;
                }
                if after > 0 {
                    self.runs.insert(
                        j,
                        Run {
                            seq: r.seq,
                            n: after,
                        },
                    );
                }
                self.merge_around(i);
                self.total -= 1;
                return Some(r.seq);
            }
            at += r.n;
        }
        None
    }
    /// Put one object of state `seq` back at `pos` (from the head).
    pub fn put_at(&mut self, pos: u64, seq: u64) {
        let mut at = 0;
        let mut i = 0;
        while i < self.runs.len() {
            let r = self.runs[i];
            if pos <= at + r.n {
                let k = pos - at;
                if r.seq == seq {
                    self.runs[i].n += 1;
                } else {
                    self.runs.remove(i);
                    let mut j = i;
                    if k > 0 {
                        self.runs.insert(j, Run { seq: r.seq, n: k });
                        j += 1;
                    }
                    self.runs.insert(j, Run { seq, n: 1 });
                    if r.n - k > 0 {
                        self.runs.insert(
                            j + 1,
                            Run {
                                seq: r.seq,
                                n: r.n - k,
                            },
                        );
                    }
                }
                self.total += 1;
                return;
            }
            at += r.n;
            i += 1;
        }
        self.push_back(seq, 1);
    }
    /// Join equal neighbours around run `i`.
    fn merge_around(&mut self, i: usize) {
        let lo = i.saturating_sub(1);
        let mut j = lo;
        while j + 1 < self.runs.len() && j <= i + 1 {
            if self.runs[j].seq == self.runs[j + 1].seq {
                self.runs[j].n += self.runs[j + 1].n;
                self.runs.remove(j + 1);
            } else {
                j += 1;
            }
        }
    }
    /// Objects whose log item is not written in place yet (`seq` past
    /// `clean_seq`).
    pub fn dirty(&self, clean_seq: u64) -> u64 {
        self.runs
            .iter()
            .filter(|r| r.seq > clean_seq)
            .map(|r| r.n)
            .sum()
    }
}

/// A superblock's VFS caches.
#[derive(Clone, Debug, Default)]
pub struct VfsCache {
    /// Unused dentries (`sb->s_dentry_lru`), each holding its inode.
    pub dentries: RunList,
    /// Unused inodes without a dentry (`sb->s_inode_lru`).
    pub inodes: RunList,
    /// Files on the filesystem that a lookup may name.
    pub files: u64,
    /// Bytes of slab the caches hold (dentries, VFS and XFS inodes).
    pub slab_bytes: u64,
}

/// Where a lookup found its inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A cached dentry.
    Dentry,
    /// An inode on the inode LRU (a new dentry for it).
    Inode,
    /// An XFS reclaimable inode, recycled (`xfs_iget_recycle`).
    XfsReclaimable,
    /// Not cached: the inode is read from disk.
    Miss,
}

impl Kernel {
    /// `super_cache_count`: dentries + inodes + the filesystem's own
    /// objects (XFS: reclaimable inodes), scaled by `vfs_cache_pressure`
    /// (0 when empty: `SHRINK_EMPTY`).
    pub fn super_cache_count(&self, sb: usize) -> u64 {
        let s = &self.sbs[sb];
        let total = s.vfs.dentries.total + s.vfs.inodes.total + self.xfs_nr_cached_objects(sb);
        total * self.sc.vm.vfs_cache_pressure / 100
    }

    /// `super_cache_scan` for `nr` objects: without `__GFP_FS` SHRINK_STOP;
    /// otherwise split `nr` between dentries, inodes and the filesystem's
    /// objects in proportion to their counts, prune each (`+1`, as the
    /// kernel does) and free the filesystem's (`free_cached_objects`).
    pub(crate) fn super_cache_scan(&mut self, pid: Pid, sb: usize, nr: u64, gfp: Gfp) -> ScanRet {
        if !gfp.fs() {
            return ScanRet::Stop;
        }
        let (d, i, f) = super_split(
            nr,
            self.sbs[sb].vfs.dentries.total,
            self.sbs[sb].vfs.inodes.total,
            self.xfs_nr_cached_objects(sb),
        );
        let mut freed = self.prune_dcache_sb(sb, d + 1);
        freed += self.prune_icache_sb(sb, i + 1);
        if f > 0 {
            freed += self.xfs_free_cached_objects(pid, sb, f + 1);
        }
        ScanRet::Freed { freed, scanned: nr }
    }

    /// `prune_dcache_sb`: free up to `n` unused dentries, oldest first;
    /// each one's inode goes to the inode LRU (its last reference,
    /// `dentry_unlink_inode` → `iput`).
    fn prune_dcache_sb(&mut self, sb: usize, n: u64) -> u64 {
        let mut out = Vec::new();
        let got = self.sbs[sb].vfs.dentries.pop_front(n, &mut out);
        for r in out {
            self.sbs[sb].vfs.inodes.push_back(r.seq, r.n);
        }
        self.slab_shrink(sb, got * DENTRY_BYTES);
        got
    }

    /// `prune_icache_sb`: evict up to `n` unused inodes, oldest first.
    /// XFS keeps each as a reclaimable XFS inode (`xfs_fs_destroy_inode` →
    /// `xfs_inode_mark_reclaimable`); another filesystem frees it.
    fn prune_icache_sb(&mut self, sb: usize, n: u64) -> u64 {
        let mut out = Vec::new();
        let got = self.sbs[sb].vfs.inodes.pop_front(n, &mut out);
        if self.sbs[sb].is_xfs() {
            for r in out {
                self.xfs_inode_mark_reclaimable(sb, r);
            }
        } else {
            self.slab_shrink(sb, got * INODE_BYTES);
        }
        got
    }

    /// A lookup of one file on `sb` (a stat, an open) by `pid`: where it
    /// is found (`draw` uniform in 0..files picks the object: the dentry
    /// LRU's first, then the inode LRU's, then XFS's reclaimable inodes,
    /// else a miss). A cached dentry stays in place, its inode logged if
    /// `seq` is not 0 (a write); otherwise the inode ends at the dentry
    /// LRU's tail with its log state (a miss allocates a dentry and an
    /// inode).
    pub fn vfs_lookup(&mut self, pid: Pid, sb: usize, draw: u64, seq: u64) -> Lookup {
        let v = &self.sbs[sb].vfs;
        let nd = v.dentries.total;
        let ni = v.inodes.total;
        let nr = self.xfs_nr_cached_objects(sb);
        let how = if draw < nd {
            // a dentry hit: it stays where it is on the LRU (the kernel
            // sets DCACHE_REFERENCED); a write logs its inode
            if seq > 0 {
                let d = &mut self.sbs[sb].vfs.dentries;
                if let Some(old) = d.take_at(draw) {
                    d.put_at(draw, seq.max(old));
                }
            }
            return Lookup::Dentry;
        } else if draw < nd + ni {
            // an inode on the LRU gets a new dentry: it leaves the inode LRU
            let old = self.sbs[sb].vfs.inodes.take_at(draw - nd).unwrap_or(0);
            self.slab_grow(pid, sb, DENTRY_BYTES);
            (Lookup::Inode, old)
        } else if draw < nd + ni + nr {
            let old = self.xfs_iget_recycle(sb);
            self.slab_grow(pid, sb, DENTRY_BYTES);
            (Lookup::XfsReclaimable, old)
        } else {
            self.slab_grow(pid, sb, DENTRY_BYTES + INODE_BYTES);
            (Lookup::Miss, 0)
        };
        let (how, old) = how;
        self.sbs[sb].vfs.dentries.push_back(seq.max(old), 1);
        how
    }

    /// Slab bytes of `sb`'s caches grow by `bytes`: the pages it takes
    /// (GFP_KERNEL, with reclaim if need be).
    pub(crate) fn slab_grow(&mut self, pid: Pid, sb: usize, bytes: u64) {
        let ps = self.page_size();
        let before = self.vm.slab_bytes.div_ceil(ps);
        self.vm.slab_bytes += bytes;
        self.sbs[sb].vfs.slab_bytes += bytes;
        let pages = self.vm.slab_bytes.div_ceil(ps) - before;
        if pages > 0 {
            self.page_alloc(Some(pid), pages, Gfp::Kernel);
            self.vm.nr_slab_reclaimable += pages;
        }
    }

    /// Slab bytes freed (objects are freed at once: the RCU grace period is
    /// not modelled); whole pages go back to the zones.
    pub(crate) fn slab_shrink(&mut self, sb: usize, bytes: u64) {
        let ps = self.page_size();
        let bytes = bytes.min(self.sbs[sb].vfs.slab_bytes);
        let before = self.vm.slab_bytes.div_ceil(ps);
        self.vm.slab_bytes -= bytes;
        self.sbs[sb].vfs.slab_bytes -= bytes;
        let pages = before - self.vm.slab_bytes.div_ceil(ps);
        if pages > 0 {
            self.vm.nr_slab_reclaimable -= pages;
            self.page_free(pages);
        }
    }
}

/// `super_cache_scan`'s proportions: of `nr` objects to scan, the
/// dentries', the inodes' and the filesystem's shares (`mult_frac(nr,
/// count, total)` with `total = dentries + inodes + fs_objects + 1`).
pub fn super_split(nr: u64, dentries: u64, inodes: u64, fs_objects: u64) -> (u64, u64, u64) {
    let total = (dentries + inodes + fs_objects + 1) as u128;
    let share = |c: u64| (nr as u128 * c as u128 / total) as u64;
    (share(dentries), share(inodes), share(fs_objects))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_proportional() {
        // 1024 over 5000 dentries, 3000 inodes, 2000 XFS inodes
        let (d, i, f) = super_split(1024, 5000, 3000, 2000);
        assert_eq!((d, i, f), (511, 307, 204));
        // nothing of a kind: no share
        assert_eq!(super_split(1024, 0, 0, 99), (0, 0, 1013));
        assert_eq!(super_split(0, 10, 10, 10), (0, 0, 0));
    }

    #[test]
    fn take_and_put_in_place() {
        let mut l = RunList::default();
        l.push_back(0, 5);
        assert_eq!(l.take_at(2), Some(0));
        l.put_at(2, 9);
        assert_eq!(
            l.runs.iter().copied().collect::<Vec<_>>(),
            vec![
                Run { seq: 0, n: 2 },
                Run { seq: 9, n: 1 },
                Run { seq: 0, n: 2 }
            ]
        );
        assert_eq!((l.total, l.dirty(8)), (5, 1));
        assert_eq!(l.take_at(2), Some(9));
        assert_eq!(
            l.runs.iter().copied().collect::<Vec<_>>(),
            vec![Run { seq: 0, n: 4 }]
        );
        l.put_at(4, 3);
        assert_eq!(l.runs.back(), Some(&Run { seq: 3, n: 1 }));
        assert_eq!(l.take_at(99), None);
    }

    #[test]
    fn run_list_is_fifo() {
        let mut l = RunList::default();
        l.push_back(0, 5);
        l.push_back(0, 3);
        l.push_back(7, 2);
        l.push_back(0, 4);
        assert_eq!(l.runs.len(), 3);
        assert_eq!(l.dirty(6), 2);
        assert_eq!(l.dirty(7), 0);
        let mut out = vec![];
        assert_eq!(l.pop_front(9, &mut out), 9);
        assert_eq!(out, vec![Run { seq: 0, n: 8 }, Run { seq: 7, n: 1 }]);
        assert_eq!(l.total, 5);
        out.clear();
        assert_eq!(l.pop_front(100, &mut out), 5);
        assert_eq!(l.total, 0);
    }
}
