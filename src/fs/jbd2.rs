//! ext4's metadata IO: the jbd2 journal (fs/jbd2/transaction.c, commit.c)
//! and the in-place writeback of journalled blocks through the block
//! device's page cache (fs/buffer.c, block/fops.c `blkdev_writepages`).
//!
//! What a file costs in metadata, as block numbers (4 KiB blocks):
//! - creating it (`ext4_create`): its inode table block (16 inodes of 256
//!   bytes per block), a directory block, the group's inode bitmap and the
//!   group descriptor block;
//! - allocating its data at writeback (delalloc, `ext4_map_blocks`): its
//!   inode table block again (extents, i_disksize), the group's block bitmap
//!   and the group descriptor block;
//! - converting the unwritten extent after the IO (dioread_nolock, the 6.x
//!   default): the inode table block once more.
//!
//! A handle adds the blocks it dirties to the running transaction (each
//! block once per transaction). Each io_end (a round of ext4_writepages,
//! one or more bios) holds reserved credits (`rsv_blocks`: 18 with 6.18's
//! 2 MiB folios, 30 on a 16 GiB filesystem with 4 KiB folios) until its
//! conversion; at most half a transaction may be reserved, so with a 128
//! MiB journal ext4 keeps about 4096 / 18 = 227 small-file rounds in flight
//! and the flusher waits for more
//! (`j_wait_reserved`). The transaction commits `commit` seconds after its
//! first block (`j_commit_interval`, 5 s) or when its logged blocks plus
//! the reserved credits reach a quarter of the journal
//! (`j_max_transaction_buffers`); a handle that finds it full while
//! another commit is in flight waits for that commit. The commit task
//! (`jbd2/DEV-8`) writes descriptor blocks (`JBD2_TAGS_PER_DESC` tags each)
//! and the blocks sequentially at the journal head under its plug, waits,
//! then writes the commit block. Once the commit block is on disk, the
//! blocks are dirty in the block device's page cache (`mark_buffer_dirty`
//! from `__jbd2_journal_refile_buffer`), where the flusher writes them like
//! any inode's pages, with REQ_META, in 4 KiB buffers that merge in its plug.
//!
//! On the host rig (ext4, 4 fs_mark threads, 50 MiB/s) the kernel wrote the
//! journal in 512 KiB WSM requests from jbd2 and the inode table in 512 KiB
//! WM requests from the flusher (block_rq_issue; docs/validation.md).
//!
//! Not modelled: the credits creates reserve (only writeback's reserved
//! handles are), data=ordered waits in the commit, checkpointing when the
//! journal runs out of space (the flusher or a task then writes the blocks
//! in place itself), htree index blocks, fsync and sync commits, and jbd2's
//! own tracepoints.

use crate::kernel::{Ev, InodeId, Kernel, Pid};
use crate::mm::filemap::RangeSet;
use crate::sim::Ns;

/// ext4 inodes per 4 KiB inode table block (256-byte inodes).
pub const INODES_PER_BLOCK: u64 = 16;
/// mke2fs's default bytes-per-inode (`inode_ratio`).
pub const INODE_RATIO: u64 = 16384;
/// Directory entries per 4 KiB block: a fs_mark name (~40 characters) is
/// a 48-byte `ext4_dir_entry_2`; leaves run about 3/4 full after splits
/// (64 entries), which fits the rig's 5.4k directory blocks for 320k files.
pub const DIR_ENTRIES_PER_BLOCK: u64 = 64;
/// Block tags per descriptor block (16-byte csum-v3 tags in 4 KiB, less
/// the header and tail).
pub const JBD2_TAGS_PER_DESC: u64 = 254;

/// e2fsprogs' `ext2fs_default_journal_size`: journal blocks for a
/// filesystem of `blocks` 4 KiB blocks.
pub fn default_journal_blocks(blocks: u64) -> u64 {
    match blocks {
        b if b < 32768 => 1024,
        b if b < 256 * 1024 => 4096,
        b if b < 512 * 1024 => 8192,
        b if b < 4096 * 1024 => 16384,
        b if b < 8192 * 1024 => 32768,
        b if b < 16384 * 1024 => 65536,
        b if b < 32768 * 1024 => 131072,
        _ => 262144,
    }
}

/// A directory (fs_mark's per-thread one: one per allocation group).
#[derive(Clone, Debug, Default)]
pub struct Dir {
    pub blocks: Vec<u64>,
    pub entries: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitStage {
    /// Descriptor and metadata blocks in flight.
    Data,
    /// The commit block in flight.
    CommitBlock,
}

/// `journal_t` with its running and committing transaction.
#[derive(Debug)]
pub struct Journal {
    /// The commit task (`jbd2/DEV-8`).
    pub task: Pid,
    /// First block and length of the journal area.
    pub start: u64,
    pub len: u64,
    /// Next journal block to write (wraps).
    pub head: u64,
    /// Home blocks logged in the running transaction.
    pub running: RangeSet,
    /// The running transaction's id (`t_tid`); its commit timer carries it.
    pub tid: u32,
    pub running_since: Option<Ns>,
    pub commit_interval: Ns,
    /// The committing transaction's blocks, its stage and bios in flight.
    pub committing: Option<(RangeSet, CommitStage, u32)>,
    /// A commit was asked for while another was in flight.
    pub commit_again: bool,
    /// Tasks waiting in `start_this_handle` for a full transaction to
    /// commit.
    pub waiters: Vec<Pid>,
    /// `j_reserved_credits`: credits of reserved handles, held from an
    /// inode's writeback until its unwritten extents are converted after
    /// the IO (dioread_nolock); at most half a transaction.
    pub reserved: u64,
    /// Credits one writeback handle reserves (`rsv_blocks`); 0 without
    /// dioread_nolock (before 5.6's default, the older policies).
    pub rsv_per_handle: u64,
    /// Tasks waiting for reserved credits (`j_wait_reserved`).
    pub rsv_waiters: Vec<Pid>,
}

impl Journal {
    /// `j_max_transaction_buffers`: a quarter of the journal.
    pub fn max_txn(&self) -> u64 {
        self.len / 4
    }
    /// The running transaction's `t_outstanding_credits` reached the
    /// maximum: logged blocks plus the reserved credits it started with.
    pub fn full(&self) -> bool {
        self.running.count() + self.reserved >= self.max_txn()
    }
}

/// ext4's `rsv_blocks` for a writeback handle with dioread_nolock
/// (`ext4_do_writepages`), in 4 KiB blocks. Both rules charge the extent
/// tree at its worst depth (EXT4_MAX_EXTENT_DEPTH = 5,
/// `ext4_ext_index_trans_blocks`).
///
/// - With large folios (`max_folio` larger than a page; 6.16.3 and later,
///   `large_folio_blocks` is the largest folio in blocks; Zhang Yi's
///   "ext4: correct the reserved credits for extent conversion"): up to one
///   extent per block of the largest folio, index and leaf blocks only:
///   1 + 3 x 5 + ceil(blocks per folio / 340 extents per leaf block). 18
///   with 2 MiB folios, as the rig's 6.18 kernel reserves
///   (`ext4_journal_start_inode ... rsv_blocks 18`, 678 of 678 handles of
///   100 dd; docs/validation.md).
/// - With 4 KiB folios (before): 1 + `ext4_chunk_trans_blocks(inode, 1)` =
///   1 + index blocks (2 x 5) + bitmaps (min(10 + 1, groups)) + group
///   descriptor blocks (min(11, s_gdb_count)) + EXT4_XATTR_TRANS_BLOCKS (6;
///   no quota). 30 on the rig's 16 GiB filesystem.
pub fn ext4_rsv_blocks(fs_blocks: u64, large_folio_blocks: Option<u64>) -> u64 {
    const MAX_DEPTH: u64 = 5;
    if let Some(bpf) = large_folio_blocks {
        // (4096 - 12-byte header) / 12-byte extent entries
        let extents_per_leaf = (4096 - 12) / 12;
        return 1 + 3 * MAX_DEPTH + bpf.div_ceil(extents_per_leaf);
    }
    let groups = fs_blocks.div_ceil(32768);
    let gdb_count = (groups * 64).div_ceil(4096);
    1 + 2 * MAX_DEPTH + (2 * MAX_DEPTH + 1).min(groups) + (2 * MAX_DEPTH + 1).min(gdb_count) + 6
}

/// ext4's on-disk metadata layout and state, per superblock: per group,
/// 1 MiB of headers (bitmaps; the descriptors in group 0), the journal in
/// the middle group, the inode table, a directory area, then data.
#[derive(Debug)]
pub struct Ext4Meta {
    /// The block device's inode: journalled blocks are its dirty pages
    /// (page index = block number).
    pub bdev_inode: InodeId,
    pub gdt_block: u64,
    pub block_bitmap: Vec<u64>,
    pub inode_bitmap: Vec<u64>,
    /// First inode table block of each allocation group.
    pub itable: Vec<u64>,
    pub inodes_per_ag: u64,
    pub ag_inodes: Vec<u64>,
    pub dirs: Vec<Dir>,
    /// Next free block of each group's directory area (after its inode
    /// table): a directory's blocks are allocated next to each other, as the
    /// rig shows (5.4k directory blocks written in 75 requests).
    pub dir_cursor: Vec<u64>,
    pub journal: Journal,
}

impl Kernel {
    /// mkfs: place each group's bitmaps and inode table at its start (after
    /// 1 MiB of headers) and the journal in the middle group; data starts
    /// after them. Returns the first data sector of each group.
    pub fn ext4_mkfs_meta(&mut self, sb: usize, journal_bytes: u64, commit: Ns) -> Vec<u64> {
        let s = &self.sbs[sb];
        let (agcount, ag_sectors) = (s.ag_cursor.len() as u64, s.ag_sectors);
        let ag_blocks = ag_sectors / 8;
        let inodes_per_ag = (ag_blocks * 4096 / INODE_RATIO).max(INODES_PER_BLOCK);
        let jlen = journal_bytes / 4096;
        let mid = agcount / 2;
        let mut data_start = Vec::new();
        let mut itable = Vec::new();
        let mut dir_cursor = Vec::new();
        let mut journal_start = 0;
        for a in 0..agcount {
            let mut b = a * ag_blocks + 256;
            if a == mid {
                journal_start = b;
                b += jlen;
            }
            itable.push(b);
            b += inodes_per_ag / INODES_PER_BLOCK;
            dir_cursor.push(b);
            b += inodes_per_ag / DIR_ENTRIES_PER_BLOCK;
            data_start.push(b * 8);
        }
        let name = format!("jbd2/{}-8", self.sc.devices[s.dev].name);
        let task = self.new_task(name, crate::kernel::Body::Kworker, None);
        let bdev_inode = self.new_inode(sb, 0);
        self.inodes[bdev_inode].bdev = true;
        self.sbs[sb].ext4 = Some(Box::new(Ext4Meta {
            bdev_inode,
            gdt_block: 1,
            block_bitmap: (0..agcount).map(|a| a * ag_blocks + 2).collect(),
            inode_bitmap: (0..agcount).map(|a| a * ag_blocks + 3).collect(),
            itable,
            inodes_per_ag,
            ag_inodes: vec![0; agcount as usize],
            dirs: vec![Dir::default(); agcount as usize],
            dir_cursor,
            journal: Journal {
                task,
                start: journal_start,
                len: jlen,
                head: 0,
                running: RangeSet::default(),
                tid: 0,
                running_since: None,
                commit_interval: commit,
                committing: None,
                commit_again: false,
                waiters: Vec::new(),
                reserved: 0,
                // dioread_nolock is ext4's default since 5.6
                rsv_per_handle: if self.sc.features.dioread_nolock {
                    let folio_pages = self.sbs[sb].max_folio_pages;
                    let large = (folio_pages > 1).then(|| folio_pages * self.page_size() / 4096);
                    ext4_rsv_blocks(agcount * ag_blocks, large)
                } else {
                    0
                },
                rsv_waiters: Vec::new(),
            },
        }));
        data_start
    }

    /// `ext4_create` → `__ext4_new_inode` + `ext4_add_entry`: the new
    /// inode's table block, the group's inode bitmap, the descriptor block
    /// and the directory's last block (a new one when it is full). The rig's
    /// journal volume says inserts stay local: 190 MiB in 27 commits is
    /// ~1,800 blocks per commit, about what the inode table alone needs, so
    /// a commit does not log most of a 1,250-block directory as hashed
    /// inserts into any leaf would.
    pub fn ext4_create_meta(&mut self, ino: InodeId) {
        let (sb, ag) = (self.inodes[ino].sb as usize, self.inodes[ino].ag as usize);
        let Some(m) = self.sbs[sb].ext4.as_mut() else {
            return;
        };
        let n = m.ag_inodes[ag] % m.inodes_per_ag;
        let inodes_per_ag = m.inodes_per_ag;
        m.ag_inodes[ag] += 1;
        let iblock = m.itable[ag] + n / INODES_PER_BLOCK;
        let (ibitmap, gdt) = (m.inode_bitmap[ag], m.gdt_block);
        let d = &m.dirs[ag];
        let dblock = if d.entries >= d.blocks.len() as u64 * DIR_ENTRIES_PER_BLOCK {
            // a new directory block, after the directory's last one
            let b = m.dir_cursor[ag];
            m.dir_cursor[ag] += 1;
            m.dirs[ag].blocks.push(b);
            b
        } else {
            *d.blocks.last().expect("a directory block")
        };
        let m = self.sbs[sb].ext4.as_mut().expect("ext4");
        m.dirs[ag].entries += 1;
        // ext4 numbers inodes by group: the number says where it lives
        self.inodes[ino].ino = ag as u64 * inodes_per_ag + n + 1;
        for b in [iblock, ibitmap, gdt, dblock] {
            self.jbd2_log_block(sb, b);
        }
    }

    /// The inode table block holding `ino` (its number encodes its group
    /// and index, `ext4_get_inode_loc`).
    pub fn ext4_inode_block(&self, ino: InodeId) -> u64 {
        let m = self.sbs[self.inodes[ino].sb as usize]
            .ext4
            .as_ref()
            .expect("ext4");
        let i = self.inodes[ino].ino - 1;
        let ag = (i / m.inodes_per_ag) as usize;
        m.itable[ag.min(m.itable.len() - 1)] + (i % m.inodes_per_ag) / INODES_PER_BLOCK
    }

    /// `ext4_map_blocks` allocated blocks for `ino`: its inode table block,
    /// the group's block bitmap and the descriptor block.
    pub fn ext4_alloc_meta(&mut self, ino: InodeId) {
        let (sb, ag) = (self.inodes[ino].sb as usize, self.inodes[ino].ag as usize);
        let Some(m) = self.sbs[sb].ext4.as_ref() else {
            return;
        };
        let blocks = [self.ext4_inode_block(ino), m.block_bitmap[ag], m.gdt_block];
        for b in blocks {
            self.jbd2_log_block(sb, b);
        }
    }

    /// `jbd2_journal_get_write_access` + `jbd2_journal_dirty_metadata`: the
    /// block joins the running transaction, which commits by size at once
    /// or by age when its timer fires.
    fn jbd2_log_block(&mut self, sb: usize, block: u64) {
        let now = self.now();
        let j = &mut self.sbs[sb].ext4.as_mut().expect("ext4").journal;
        j.running.insert(block, block + 1);
        if j.running_since.is_none() {
            j.running_since = Some(now);
            let (at, tid) = (now + j.commit_interval, j.tid);
            self.q
                .schedule(at, Ev::JournalCommit { sb: sb as u32, tid });
        }
        if j.full() {
            self.jbd2_start_commit(sb);
        }
    }

    /// `start_this_handle` → `add_transaction_credits`: a handle may start
    /// unless the running transaction is full; then its commit starts, and
    /// if another commit is still in flight the task waits for that one
    /// (`wait_transaction_locked`). Returns false if `pid` must sleep; the
    /// end of the commit wakes it.
    ///
    /// A writeback handle (`reserve`) also takes reserved credits for the
    /// conversion after its IO; with half a transaction reserved it waits
    /// for conversions to return some (`j_wait_reserved`). This is what
    /// paces ext4 small-file writeback on the rig: ~227 inodes in flight.
    /// Returns the credits a handle reserves (taken per io_end by
    /// `ext4_reserve_io`).
    pub fn jbd2_handle_start(&mut self, sb: usize, pid: Pid, reserve: bool) -> Option<u64> {
        let Some(m) = self.sbs[sb].ext4.as_mut() else {
            return Some(0);
        };
        let j = &mut m.journal;
        let rsv = if reserve { j.rsv_per_handle } else { 0 };
        if rsv > 0 && j.reserved + rsv > j.max_txn() / 2 {
            if !j.rsv_waiters.contains(&pid) {
                j.rsv_waiters.push(pid);
            }
            return None;
        }
        if j.full() {
            self.jbd2_start_commit(sb);
            let j = &mut self.sbs[sb].ext4.as_mut().expect("ext4").journal;
            if j.full() {
                if !j.waiters.contains(&pid) {
                    j.waiters.push(pid);
                }
                return None;
            }
        }
        Some(rsv)
    }

    /// Reserve credits for one io_end of `ino` (a round of writepages):
    /// returns what the io_end holds until its last bio completes and the
    /// conversion gives them back.
    pub fn ext4_reserve_io(&mut self, ino: InodeId) -> u32 {
        if self.inodes[ino].bdev {
            return 0;
        }
        let Some(m) = self.sbs[self.inodes[ino].sb as usize].ext4.as_mut() else {
            return 0;
        };
        m.journal.reserved += m.journal.rsv_per_handle;
        m.journal.rsv_per_handle as u32
    }

    /// `ext4_end_io_rsv_work` → `ext4_convert_unwritten_io_end_vec`: after
    /// an io_end's IO, its reserved handle converts the unwritten extent
    /// (logging the inode block again) and returns its credits; waiters
    /// for reserved credits wake.
    pub fn ext4_end_io_conversion(&mut self, ino: InodeId, rsv: u64) {
        let sb = self.inodes[ino].sb as usize;
        let iblock = self.ext4_inode_block(ino);
        let Some(m) = self.sbs[sb].ext4.as_mut() else {
            return;
        };
        m.journal.reserved -= rsv;
        let waiters = std::mem::take(&mut m.journal.rsv_waiters);
        self.jbd2_log_block(sb, iblock);
        for p in waiters {
            self.wake_up_process(p);
        }
    }

    /// The commit timer of transaction `tid`.
    pub fn jbd2_commit_timer(&mut self, sb: usize, tid: u32) {
        let j = &self.sbs[sb].ext4.as_ref().expect("ext4").journal;
        if j.tid == tid && !j.running.is_empty() {
            self.jbd2_start_commit(sb);
        }
    }

    /// `jbd2_journal_commit_transaction`, first half: the running
    /// transaction becomes the committing one and its descriptor and
    /// metadata blocks go to the journal, sequentially, under the commit
    /// task's plug. One commit at a time.
    fn jbd2_start_commit(&mut self, sb: usize) {
        let j = &mut self.sbs[sb].ext4.as_mut().expect("ext4").journal;
        if j.committing.is_some() {
            j.commit_again = true;
            return;
        }
        let blocks = std::mem::take(&mut j.running);
        j.tid = j.tid.wrapping_add(1);
        j.running_since = None;
        let n = blocks.count();
        let total = n + n.div_ceil(JBD2_TAGS_PER_DESC);
        j.committing = Some((blocks, CommitStage::Data, 0));
        self.jbd2_write(sb, total);
    }

    /// Write `n` journal blocks at the head (two bios when they wrap),
    /// counting them in the committing transaction before each is
    /// submitted (a bio may complete within submit_bio).
    fn jbd2_write(&mut self, sb: usize, n: u64) {
        let dev = self.sbs[sb].dev;
        let (task, start, len, head) = {
            let j = &self.sbs[sb].ext4.as_ref().expect("ext4").journal;
            (j.task, j.start, j.len, j.head)
        };
        let first = n.min(len - head);
        let runs = [(head, first), (0, n - first)];
        let plugged = self.blk_start_plug(task);
        for (at, k) in runs.into_iter().filter(|r| r.1 > 0) {
            let j = &mut self.sbs[sb].ext4.as_mut().expect("ext4").journal;
            j.committing.as_mut().expect("a commit").2 += 1;
            // WRITE_SYNC | REQ_META (and PREFLUSH|FUA for the commit block)
            let opf = crate::block::blk_wbt::REQ_SYNC | crate::block::blk_wbt::REQ_META;
            let owner = crate::block::BioOwner::Jbd2(sb as u32);
            self.submit_meta_bio(dev, task, (start + at) * 8, k * 8, opf, owner);
        }
        let j = &mut self.sbs[sb].ext4.as_mut().expect("ext4").journal;
        j.head = (head + n) % len;
        self.blk_finish_plug(task, plugged);
    }

    /// A journal bio completed: after the blocks, the commit block; after
    /// the commit block, the transaction's blocks are dirty buffers of the
    /// block device, and a commit asked for meanwhile starts.
    pub fn jbd2_bio_done(&mut self, sb: usize) {
        let m = self.sbs[sb].ext4.as_mut().expect("ext4");
        let bdev = m.bdev_inode;
        let j = &mut m.journal;
        let c = j.committing.as_mut().expect("a commit in flight");
        c.2 -= 1;
        if c.2 > 0 {
            return;
        }
        if c.1 == CommitStage::Data {
            c.1 = CommitStage::CommitBlock;
            self.jbd2_write(sb, 1);
            return;
        }
        let (blocks, _, _) = j.committing.take().expect("commit");
        let again = std::mem::take(&mut j.commit_again) || j.full();
        let pending = !j.running.is_empty();
        let task = j.task;
        let waiters = std::mem::take(&mut j.waiters);
        for &(s, e) in blocks.ranges() {
            self.filemap_dirty_range(task, bdev, s, e - s);
        }
        for p in waiters {
            self.wake_up_process(p);
        }
        if again && pending {
            self.jbd2_start_commit(sb);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_credits_per_writeback_handle() {
        // the rig's 16 GiB filesystem: 128 groups, 2 descriptor blocks:
        // 1 + 10 + 11 + 2 + 6
        assert_eq!(ext4_rsv_blocks(4 << 20, None), 30);
        // a 1 TiB one: 8192 groups, 128 descriptor blocks
        assert_eq!(ext4_rsv_blocks(256 << 20, None), 39);
        // large folios: the folio's blocks, not the filesystem, count.
        // 2 MiB = 512 blocks need 2 leaf blocks: 1 + 15 + 2 (the rig's 6.18)
        assert_eq!(ext4_rsv_blocks(4 << 20, Some(512)), 18);
        assert_eq!(ext4_rsv_blocks(256 << 20, Some(512)), 18);
        // 1 MiB = 256 blocks fit one leaf block
        assert_eq!(ext4_rsv_blocks(4 << 20, Some(256)), 17);
    }

    #[test]
    fn mke2fs_journal_sizes() {
        // 16 GiB (the rig's image): 128 MiB
        assert_eq!(default_journal_blocks(4 << 20) * 4096, 128 << 20);
        // 1 TiB: 1 GiB
        assert_eq!(default_journal_blocks(256 << 20) * 4096, 1 << 30);
        assert_eq!(default_journal_blocks(100_000), 4096);
    }
}
