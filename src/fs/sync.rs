//! fs/sync.c `vfs_fsync_range` as ext4 and XFS run it for data
//! (`ext4_sync_file`, `xfs_file_fsync` → `file_write_and_wait_range`):
//! writeback of one inode's dirty pages in WB_SYNC_ALL mode from the
//! caller's own context (`__filemap_fdatawrite_range` → `do_writepages`,
//! REQ_SYNC), then the wait for every page of the inode under writeback,
//! the flusher's included (`filemap_fdatawait_range`).
//!
//! Not modelled: the journal commit ext4 forces when the inode's metadata
//! changed (`jbd2_complete_transaction`) and XFS's log force, and the
//! cache flush (REQ_PREFLUSH) that follows on a device with a volatile
//! write cache. The writepages walk is range-cyclic from the inode's
//! `writeback_index` rather than from page 0; it takes every dirty page
//! either way.

use crate::fs::fs_writeback::PassStep;
use crate::fs::writepages::Writepages;
use crate::kernel::{InodeId, Kernel, Pid};
use crate::sim::Ns;

/// Where an fsync is.
#[derive(Debug)]
pub enum Fsync {
    /// ->writepages has not started (it may wait for a journal handle).
    Start(InodeId),
    /// `do_writepages` in WB_SYNC_ALL mode, resumable across bursts.
    Writing(Writepages),
    /// Waiting for the inode's pages under writeback.
    Waiting(InodeId),
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
                    if self.inodes[ino].dirty.is_empty() {
                        *f = Fsync::Waiting(ino);
                        continue;
                    }
                    if !self.fs_writepages_trans_start(pid, ino) {
                        return FsyncStep::Block;
                    }
                    let wp = self.writepages_start(pid, ino, i64::MAX, Vec::new());
                    self.tasks[pid].owed_sys += self.sc.machine.cost.writepages_inode;
                    *f = Fsync::Writing(wp);
                }
                Fsync::Writing(wp) => {
                    let mut burst = 0;
                    let opf = crate::block::blk_wbt::REQ_SYNC;
                    match self.do_writepages(pid, wp, &mut burst, opf) {
                        PassStep::Cpu(ns) => return FsyncStep::Cpu(ns),
                        PassStep::WaitTag => return FsyncStep::Block,
                        PassStep::Done => {
                            self.tasks[pid].owed_sys += burst;
                            *f = Fsync::Waiting(wp.ino);
                        }
                    }
                }
                Fsync::Waiting(ino) => {
                    let ino = *ino;
                    self.fsync_waiters.retain(|&(p, _)| p != pid);
                    if self.inodes[ino].nr_writeback == 0 {
                        return FsyncStep::Done;
                    }
                    self.fsync_waiters.push((pid, ino));
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
