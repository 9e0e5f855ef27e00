//! XFS's log: delayed logging (fs/xfs/xfs_log_cil.c), the log buffers
//! (xfs_log.c), log space (xfs_log.c `xlog_grant_head_check`) and the
//! AIL's in-place writeback by xfsaild (xfs_trans_ail.c, xfs_buf.c
//! `xfs_buf_delwri_submit`). `xfs_meta` says which inodes and directory
//! blocks an operation changes; this file logs them.
//!
//! What is logged, in bytes (delayed logging keeps one copy of an item per
//! checkpoint, however often it is relogged): an inode item
//! (`XFS_LOG_INODE_BYTES`, the v3 log dinode with its format header and
//! op headers), 128-byte chunks of a directory block (`XFS_BLF_CHUNK`: an
//! entry's chunk and the block header's), and per AG per checkpoint the
//! AGI, AGF and btree chunks. The CIL is pushed when it holds an eighth of
//! the log (`XLOG_CIL_SPACE_LIMIT`) or by the log worker every 30 s; a push
//! writes the checkpoint sequentially in 32 KiB log buffers, each its own
//! request (REQ_PREFLUSH | REQ_FUA: never merged), from the CIL worker.
//!
//! After a checkpoint the inode clusters and directory blocks it logged are
//! in the AIL. When the log is three quarters used (the push target keeps a
//! quarter free) or the log worker runs, xfsaild writes every item in the
//! AIL in place, sorted by disk address, under one plug: adjacent buffers
//! merge. Its completion moves the log tail. Transactions wait for log space
//! when the log is full (`xlog_grant_head_wait`).
//!
//! Not modelled: log forces from xfsaild pushing pinned items (the rig's
//! log writes come in bursts of 0.5 MiB, not whole checkpoints), inode
//! btree and free-space btree block writes, the AG headers' in-place writes.

use crate::block::BioOwner;
use crate::fs::xfs_meta::XFS_CLUSTER_BLOCKS;
use crate::kernel::{Ev, InodeId, Kernel, Pid};
use crate::mm::filemap::RangeSet;
use crate::sim::{Ns, NSEC_PER_SEC};

/// Bytes an inode item adds to a checkpoint: wbsim's count of the v3 log
/// dinode (`struct xfs_log_dinode`) with its `xfs_inode_log_format` and
/// op headers.
pub const XFS_LOG_INODE_BYTES: u64 = 304;
/// `XFS_BLF_CHUNK`: buffers are logged in 128-byte chunks.
pub const XFS_BLF_CHUNK: u64 = 128;
/// Directory entries per 128-byte chunk: fs_mark's names make ~40-byte
/// entries (wbsim's estimate).
pub const DIR_ENTRIES_PER_CHUNK: u64 = 3;
/// AGI + AGF + inode/free-space btree chunks logged per AG per checkpoint
/// (wbsim's estimate: six `XFS_BLF_CHUNK`s).
pub const AG_HEADER_BYTES: u64 = 6 * XFS_BLF_CHUNK;
/// The log worker's period (`xfs_syncd_centisecs` = 3000).
pub const XFS_LOG_WORKER: Ns = 30 * NSEC_PER_SEC;
/// The log buffer size (`logbsize`'s default, `XLOG_BIG_RECORD_BSIZE`).
pub const XFS_LOGBSIZE: u64 = 32 << 10;
/// Checkpoint tags wrap after 255 (`Inode::cil_tag` is a byte; 0 is none).
const CIL_TAGS: u8 = 255;

/// mkfs.xfs's default internal log: 64 MiB up to 2 GiB, about 1/2048 of
/// the filesystem.
pub fn default_log_blocks(fs_blocks: u64) -> u64 {
    (fs_blocks / 2048).clamp(16384, 524288)
}

/// The log (`struct xlog`) with its CIL (`struct xfs_cil`) and AIL
/// (`struct xfs_ail`).
#[derive(Debug)]
pub struct XfsLog {
    /// The CIL push worker and xfsaild.
    pub cil_task: Pid,
    pub ail_task: Pid,
    pub log_start: u64,
    pub log_blocks: u64,
    /// Next log block to write, and log bytes between tail and head.
    pub head: u64,
    pub used: u64,
    pub logbsize: u64,
    /// The running checkpoint: bytes, the inodes and directory chunks it
    /// holds (one copy each), the AGs whose headers it logged, and the
    /// blocks it will put in the AIL.
    /// Kept per AG: an AG's blocks grow as it allocates, so its range sets
    /// are appended to at their end. Inodes carry the checkpoint's tag.
    pub cil_bytes: u64,
    pub cil_tag: u8,
    /// The last cluster added to `cil_blocks` per AG, by creates and by
    /// allocations (two streams through the AG's inodes).
    pub cil_last_cluster: Vec<[u64; 2]>,
    /// The last directory chunk and block header logged in this checkpoint
    /// (a directory fills its blocks in order).
    pub cil_dir: Vec<(u64, u64)>,
    pub cil_ags: Vec<bool>,
    pub cil_blocks: Vec<RangeSet>,
    /// A push in flight: its blocks and log buffers still being written.
    pub pushing: Option<(Vec<RangeSet>, u32)>,
    pub push_again: bool,
    /// Blocks to write in place (per AG), and an AIL push in flight (bios
    /// left, bytes of log it frees).
    pub ail: Vec<RangeSet>,
    pub ail_push: Option<(u32, u64)>,
    /// Tasks waiting for log space.
    pub waiters: Vec<Pid>,
    /// Checkpoint numbers (the CIL's sequence, from 1): the running one,
    /// the one being written to the log, the last one in the AIL, the last
    /// one an AIL push covers, and the last one written in place (its
    /// inodes are clean: fs/xfs_icache.rs).
    pub cil_seq: u64,
    pub pushing_seq: u64,
    pub ail_seq: u64,
    pub ail_push_seq: u64,
    pub clean_seq: u64,
}

impl XfsLog {
    /// `XLOG_CIL_SPACE_LIMIT`: the CIL is pushed at an eighth of the log.
    fn cil_full(&self) -> bool {
        self.cil_bytes >= self.log_blocks * 4096 / 8
    }
}

impl Kernel {
    /// `xfs_log_mount`: the log of `log_blocks` blocks from block
    /// `log_start` on superblock `sb` of `agcount` groups, the CIL worker,
    /// xfsaild and the log worker's timer.
    pub fn xfs_log_mount(
        &mut self,
        sb: usize,
        log_start: u64,
        log_blocks: u64,
        agcount: usize,
    ) -> XfsLog {
        let dev = self.sc.devices[self.sbs[sb].dev].name.clone();
        let cil_task = self.new_task(
            format!("kworker/u{}:x", 2 * self.sc.machine.cpus),
            crate::kernel::Body::Kworker,
            None,
        );
        let ail_task = self.new_task(format!("xfsaild/{dev}"), crate::kernel::Body::Kworker, None);
        let at = self.now() + XFS_LOG_WORKER;
        self.q.schedule(at, Ev::XfsLogWorker { sb: sb as u32 });
        XfsLog {
            cil_task,
            ail_task,
            log_start,
            log_blocks,
            head: 0,
            used: 0,
            logbsize: XFS_LOGBSIZE,
            cil_bytes: 0,
            cil_tag: 1,
            cil_last_cluster: vec![[u64::MAX; 2]; agcount],
            cil_dir: vec![(u64::MAX, u64::MAX); agcount],
            cil_ags: vec![false; agcount],
            cil_blocks: vec![RangeSet::default(); agcount],
            pushing: None,
            push_again: false,
            ail: vec![RangeSet::default(); agcount],
            ail_push: None,
            waiters: Vec::new(),
            cil_seq: 1,
            pushing_seq: 0,
            ail_seq: 0,
            ail_push_seq: 0,
            clean_seq: 0,
        }
    }

    /// `xfs_trans_reserve` → `xlog_grant_head_check`: a transaction may
    /// start unless the log is nearly full (15/16 used: wbsim's stand-in
    /// for a reservation's size); then it waits for xfsaild. Without the
    /// metadata model there is no log to wait for.
    pub fn xfs_trans_reserve(&mut self, sb: usize, pid: Pid) -> bool {
        let Some(m) = self.sbs[sb].xfs_mut().meta.as_mut() else {
            return true;
        };
        let x = &mut m.log;
        if x.used + x.cil_bytes < x.log_blocks * 4096 * 15 / 16 {
            return true;
        }
        if !x.waiters.contains(&pid) {
            x.waiters.push(pid);
        }
        self.xfs_ail_push(sb);
        false
    }

    /// Log an object into the running checkpoint.
    fn xfs_log(&mut self, sb: usize, bytes: u64) {
        let x = self.sbs[sb].xfs_mut().log();
        x.cil_bytes += bytes;
        if x.cil_full() {
            self.xfs_cil_push(sb);
        }
    }

    /// `xfs_trans_log_inode`: the inode item of `ino` (once per
    /// checkpoint), its AG's headers (once per checkpoint), and its cluster
    /// buffer (from `cluster`) for the AIL. `alloc`: logged by an
    /// allocation, not a create (each keeps its own last cluster).
    pub fn xfs_trans_log_inode(&mut self, ino: InodeId, cluster: u64, alloc: bool) {
        let sb = self.inodes[ino].sb as usize;
        let ag = self.inodes[ino].ag as usize;
        let x = self.sbs[sb].xfs_mut().log();
        let mut bytes = 0;
        if self.inodes[ino].cil_tag != x.cil_tag {
            self.inodes[ino].cil_tag = x.cil_tag;
            bytes += XFS_LOG_INODE_BYTES;
        }
        if !x.cil_ags[ag] {
            x.cil_ags[ag] = true;
            bytes += AG_HEADER_BYTES;
        }
        let last = &mut x.cil_last_cluster[ag][usize::from(alloc)];
        if *last != cluster {
            *last = cluster;
            x.cil_blocks[ag].insert(cluster, cluster + XFS_CLUSTER_BLOCKS);
        }
        self.xfs_log(sb, bytes);
    }

    /// `xfs_trans_log_buf` of a directory data block of AG `ag` whose
    /// entry `entry` was added: the entry's 128-byte chunk and the block
    /// header's (bestfree), and the block for the AIL.
    pub fn xfs_trans_log_dir_entry(&mut self, sb: usize, ag: usize, dblock: u64, entry: u64) {
        let x = self.sbs[sb].xfs_mut().log();
        let base = dblock * (4096 / XFS_BLF_CHUNK);
        let mut bytes = 0;
        let chunk = base + 1 + entry / DIR_ENTRIES_PER_CHUNK;
        let (last_chunk, last_hdr) = &mut x.cil_dir[ag];
        if *last_hdr != base {
            // the block joins this checkpoint (header chunk and AIL item)
            *last_hdr = base;
            bytes += XFS_BLF_CHUNK;
            x.cil_blocks[ag].insert(dblock, dblock + 1);
        }
        if *last_chunk != chunk {
            *last_chunk = chunk;
            bytes += XFS_BLF_CHUNK;
        }
        self.xfs_log(sb, bytes);
    }

    /// `xlog_cil_push_work`: write the checkpoint in log buffers at the log
    /// head, one request each; its items go to the AIL when it is on disk.
    fn xfs_cil_push(&mut self, sb: usize) {
        let x = self.sbs[sb].xfs_mut().log();
        if x.cil_bytes == 0 {
            return;
        }
        if x.pushing.is_some() {
            x.push_again = true;
            return;
        }
        let bytes = std::mem::take(&mut x.cil_bytes);
        x.pushing_seq = x.cil_seq;
        x.cil_seq += 1;
        // a new checkpoint tag (1..=255; a tag 255 checkpoints old is
        // taken as current, which loses one inode item's bytes)
        x.cil_tag = x.cil_tag % CIL_TAGS + 1;
        x.cil_last_cluster
            .iter_mut()
            .for_each(|c| *c = [u64::MAX; 2]);
        x.cil_dir.iter_mut().for_each(|d| *d = (u64::MAX, u64::MAX));
        x.cil_ags.iter_mut().for_each(|a| *a = false);
        let n_ag = x.cil_blocks.len();
        let blocks = std::mem::replace(&mut x.cil_blocks, vec![RangeSet::default(); n_ag]);
        let nbufs = bytes.div_ceil(x.logbsize);
        x.used += nbufs * x.logbsize;
        x.pushing = Some((blocks, nbufs as u32));
        let (task, start, len, bsz) = (x.cil_task, x.log_start, x.log_blocks, x.logbsize / 4096);
        let dev = self.sbs[sb].dev;
        let plugged = self.blk_start_plug(task);
        for _ in 0..nbufs {
            let x = self.sbs[sb].xfs_mut().log();
            let at = x.head;
            x.head = (x.head + bsz) % (len - len % bsz);
            use crate::block::blk_wbt::{REQ_META, REQ_NOMERGE, REQ_SYNC};
            let opf = REQ_SYNC | REQ_META | REQ_NOMERGE;
            let owner = BioOwner::XfsLog(sb as u32);
            self.submit_meta_bio(dev, task, (start + at) * 8, bsz * 8, opf, owner);
        }
        self.blk_finish_plug(task, plugged);
    }

    /// A log buffer is on disk; the last one puts the checkpoint's items in
    /// the AIL, and a full log starts xfsaild.
    pub fn xfs_log_bio_done(&mut self, sb: usize) {
        let x = self.sbs[sb].xfs_mut().log();
        let p = x.pushing.as_mut().expect("a push in flight");
        p.1 -= 1;
        if p.1 > 0 {
            return;
        }
        let (blocks, _) = x.pushing.take().expect("push");
        x.ail_seq = x.pushing_seq;
        for (ail, b) in x.ail.iter_mut().zip(blocks) {
            for &(s, e) in b.ranges() {
                ail.insert(s, e);
            }
        }
        let again = std::mem::take(&mut x.push_again) || x.cil_full();
        // xlog_grant_push_threshold: the AIL is pushed to keep a quarter
        // of the log free
        if x.used >= x.log_blocks * 4096 * 3 / 4 {
            self.xfs_ail_push(sb);
        }
        if again {
            self.xfs_cil_push(sb);
        }
    }

    /// `xfsaild_push` → `xfs_buf_delwri_submit`: write every AIL item in
    /// place, in disk order, under one plug; the log tail moves when they
    /// are written.
    pub(crate) fn xfs_ail_push(&mut self, sb: usize) {
        let x = self.sbs[sb].xfs_mut().log();
        if x.ail_push.is_some() {
            return;
        }
        if x.ail.iter().all(|a| a.is_empty()) {
            // nothing to write: what reached the AIL is in place
            x.clean_seq = x.ail_seq;
            return;
        }
        x.ail_push_seq = x.ail_seq;
        let n_ag = x.ail.len();
        let items = std::mem::replace(&mut x.ail, vec![RangeSet::default(); n_ag]);
        let frees = x.used;
        let (task, dev) = (x.ail_task, self.sbs[sb].dev);
        // runs of adjacent blocks in disk order (AGs are disjoint regions)
        let runs: Vec<(u64, u64)> = items.iter().flat_map(|a| a.ranges().to_vec()).collect();
        self.sbs[sb].xfs_mut().log().ail_push = Some((runs.len() as u32, frees));
        let plugged = self.blk_start_plug(task);
        for (s, e) in runs {
            let (opf, owner) = (crate::block::blk_wbt::REQ_META, BioOwner::XfsAil(sb as u32));
            self.submit_meta_bio(dev, task, s * 8, (e - s) * 8, opf, owner);
        }
        self.blk_finish_plug(task, plugged);
    }

    /// An AIL write is done; the last one moves the tail and wakes the
    /// transactions waiting for log space.
    pub fn xfs_ail_bio_done(&mut self, sb: usize) {
        let x = self.sbs[sb].xfs_mut().log();
        let p = x.ail_push.as_mut().expect("an AIL push in flight");
        p.0 -= 1;
        if p.0 > 0 {
            return;
        }
        let (_, frees) = x.ail_push.take().expect("push");
        x.clean_seq = x.ail_push_seq;
        x.used -= frees.min(x.used);
        for p in std::mem::take(&mut x.waiters) {
            self.wake_up_process(p);
        }
    }

    /// `xfs_log_worker`: force the log and push the whole AIL, every 30 s.
    pub fn xfs_log_worker(&mut self, sb: usize) {
        self.xfs_cil_push(sb);
        self.xfs_ail_push(sb);
        let at = self.now() + XFS_LOG_WORKER;
        self.q.schedule(at, Ev::XfsLogWorker { sb: sb as u32 });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkfs_log_sizes() {
        // the rig's 16 GiB filesystem: 64 MiB
        assert_eq!(default_log_blocks(4 << 20) * 4096, 64 << 20);
        // 1 TiB: 512 MiB; capped at 2 GiB
        assert_eq!(default_log_blocks(256 << 20) * 4096, 512 << 20);
        assert_eq!(default_log_blocks(u64::MAX / 4096) * 4096, 2 << 30);
    }
}
