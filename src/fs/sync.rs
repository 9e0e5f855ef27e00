//! fs/sync.c `vfs_fsync_range` as ext4 and XFS run it for data
//! (`ext4_sync_file`, `xfs_file_fsync` → `file_write_and_wait_range`):
//! writeback of one inode's dirty pages in WB_SYNC_ALL mode from the
//! caller's own context (`__filemap_fdatawrite_range` → `do_writepages`,
//! REQ_SYNC), then the wait for every page of the inode under writeback,
//! the flusher's included (`filemap_fdatawait_range`).
//!
//! On ext4 with its metadata model, an fsync whose writeback allocated
//! blocks (the metadata a data sync needs: fdatasync's `i_datasync_tid`)
//! then commits the running transaction and waits for its commit block
//! (`jbd2_complete_transaction`); an overwrite of allocated blocks needs no
//! commit. Not modelled: the commit of other inode changes (times, a
//! create) that fsync but not fdatasync waits for, XFS's log force, and
//! the cache flush (REQ_PREFLUSH) that follows on a device with a volatile
//! write cache. The writepages walk is range-cyclic from the inode's
//! `writeback_index` rather than from page 0; it takes every dirty page
//! either way.

use crate::fs::fs_writeback::PassStep;
use crate::fs::writepages::Writepages;
use crate::kernel::psi::Stall;
use crate::kernel::{InodeId, Kernel, Pid};
use crate::sim::Ns;

/// Where an fsync is.
#[derive(Debug)]
pub enum Fsync {
    /// ->writepages has not started (it may wait for a journal handle).
    Start(InodeId),
    /// `do_writepages` in WB_SYNC_ALL mode, resumable across bursts, and
    /// the pages the inode had blocks for before it; None for an
    /// fdatawrite (`Fdatawrite`), which does not wait.
    Writing(Writepages, Option<u64>),
    /// `__filemap_fdatawrite_range` in WB_SYNC_NONE mode, as
    /// `POSIX_FADV_DONTNEED` starts it (mm/fadvise.c `generic_fadvise`):
    /// the caller writes the inode's dirty pages (waiting only for tags and
    /// journal credits, as any writeback does) and goes on without waiting
    /// for them.
    Fdatawrite(InodeId),
    /// Waiting for the inode's pages under writeback.
    Waiting(InodeId, u64),
    /// Waiting for the journal's commit of transaction `tid`.
    Commit { sb: usize, tid: u32 },
}

/// Pages of `ino` with blocks.
fn mapped_pages(k: &Kernel, ino: InodeId) -> u64 {
    k.inodes[ino].extents.as_slice().iter().map(|e| e.1).sum()
}

/// What an fsync step asks of its task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncStep {
    Cpu(Ns),
    /// Sleep until woken (a tag, a journal handle, or the writeback's end).
    Block,
    Done,
}

impl Kernel {
    /// Advance an fsync of task `pid`.
    pub fn vfs_fsync_step(&mut self, pid: Pid, f: &mut Fsync) -> FsyncStep {
        loop {
            match f {
                Fsync::Start(ino) => {
                    let ino = *ino;
                    let mapped = mapped_pages(self, ino);
                    if self.inodes[ino].dirty.is_empty() {
                        *f = Fsync::Waiting(ino, mapped);
                        continue;
                    }
                    if !self.fs_writepages_trans_start(pid, ino) {
                        return FsyncStep::Block;
                    }
                    let wp = self.writepages_start(pid, ino, i64::MAX, Vec::new());
                    self.tasks[pid].owed_sys += self.sc.machine.cost.writepages_inode;
                    *f = Fsync::Writing(wp, Some(mapped));
                }
                Fsync::Fdatawrite(ino) => {
                    let ino = *ino;
                    if self.inodes[ino].dirty.is_empty() {
                        return FsyncStep::Done;
                    }
                    if !self.fs_writepages_trans_start(pid, ino) {
                        return FsyncStep::Block;
                    }
                    let wp = self.writepages_start(pid, ino, i64::MAX, Vec::new());
                    self.tasks[pid].owed_sys += self.sc.machine.cost.writepages_inode;
                    *f = Fsync::Writing(wp, None);
                }
                Fsync::Writing(wp, mapped) => {
                    let mut burst = 0;
                    // WB_SYNC_ALL writes with REQ_SYNC (wbc_to_write_flags)
                    let opf = match mapped {
                        Some(_) => crate::block::blk_wbt::REQ_SYNC,
                        None => 0,
                    };
                    match self.do_writepages(pid, wp, &mut burst, opf) {
                        PassStep::Cpu(ns) => return FsyncStep::Cpu(ns),
                        PassStep::WaitTag => {
                            // blk_mq_get_tag's io_schedule()
                            self.tasks[pid].stall = Stall::Io;
                            return FsyncStep::Block;
                        }
                        PassStep::Done => {
                            self.tasks[pid].owed_sys += burst;
                            match *mapped {
                                Some(m) => *f = Fsync::Waiting(wp.ino, m),
                                None => return FsyncStep::Done,
                            }
                        }
                    }
                }
                Fsync::Waiting(ino, mapped) => {
                    let ino = *ino;
                    self.fsync_waiters.retain(|&(p, _)| p != pid);
                    if self.inodes[ino].nr_writeback > 0 {
                        self.fsync_waiters.push((pid, ino));
                        // folio_wait_writeback's io_schedule()
                        self.tasks[pid].stall = Stall::Io;
                        return FsyncStep::Block;
                    }
                    // blocks allocated: ext4's journal commits them
                    let sb = self.inodes[ino].sb as usize;
                    let journal = match &self.sbs[sb].fs {
                        crate::fs::FsType::Ext4(e) => e.meta.is_some(),
                        crate::fs::FsType::Xfs(_) => false,
                    };
                    let allocated = mapped_pages(self, ino) > *mapped;
                    match journal && allocated && !self.inodes[ino].bdev {
                        true => match self.jbd2_complete_transaction(sb, pid) {
                            Some(tid) => *f = Fsync::Commit { sb, tid },
                            None => return FsyncStep::Done,
                        },
                        false => return FsyncStep::Done,
                    }
                }
                Fsync::Commit { sb, tid } => {
                    if self.jbd2_committed(*sb, *tid) {
                        return FsyncStep::Done;
                    }
                    return FsyncStep::Block;
                }
            }
        }
    }

    /// The last page of `ino` under writeback completed: its fsync waiters
    /// wake.
    pub fn fsync_writeback_done(&mut self, ino: InodeId) {
        let mut wake = Vec::new();
        self.fsync_waiters.retain(|&(p, i)| {
            if i == ino {
                wake.push(p);
            }
            i != ino
        });
        for p in wake {
            self.wake_up_process(p);
        }
    }
}
