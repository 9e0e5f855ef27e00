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
//!   and the group descriptor block.
//!
//! A handle adds the blocks it dirties to the running transaction (each
//! block once per transaction). The transaction commits `commit` seconds
//! after its first block (`j_commit_interval`, 5 s) or when it holds a
//! quarter of the journal (`j_max_transaction_buffers`). The commit task
//! (`jbd2/DEV-8`) writes descriptor blocks (`JBD2_TAGS_PER_DESC` tags each)
//! and the blocks sequentially at the journal head under its plug, waits,
//! then writes the commit block. Once the commit block is on disk, the
//! blocks are dirty in the block device's page cache (`mark_buffer_dirty`
//! from `__jbd2_journal_refile_buffer`), where the flusher writes them like
//! any inode's pages, with REQ_META, in 4 KiB buffers that merge in its plug.
//!
//! On the host rig (ext4, 4 fs_mark threads, 50 MiB/s) the kernel wrote the
//! journal in 512 KiB WSM requests from jbd2 and the inode table in 512 KiB
//! WM requests from the flusher; /work/rigdata/smallfile/REPORT.md.
//!
//! Not modelled: handle credits (a transaction is full by reserved credits
//! in the kernel, before it holds that many blocks), checkpointing when the
//! journal runs out of space (the flusher or a task then writes the blocks
//! in place itself), htree index blocks, fsync and sync commits, and jbd2's
//! own tracepoints.

use crate::block::Bio;
use crate::kernel::{Ev, InodeId, Kernel, Pid};
use crate::mm::filemap::RangeSet;
use crate::sim::Ns;

/// ext4 inodes per 4 KiB inode table block (256-byte inodes).
pub const INODES_PER_BLOCK: u64 = 16;
/// mke2fs's default bytes-per-inode (`inode_ratio`).
pub const INODE_RATIO: u64 = 16384;
/// Directory entries per 4 KiB block: a fs_mark name (~40 characters) is
/// a 48-byte `ext4_dir_entry_2`; htree leaves split when full, so they run
/// about 3/4 full (64 entries).
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
    pub commits: u64,
    pub blocks_journalled: u64,
    /// Tasks waiting in `start_this_handle` for a full transaction to
    /// commit.
    pub waiters: Vec<Pid>,
}

/// ext4's on-disk metadata layout and state, per superblock.
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
        let mut journal_start = 0;
        for a in 0..agcount {
            let mut b = a * ag_blocks + 256;
            if a == mid {
                journal_start = b;
                b += jlen;
            }
            itable.push(b);
            b += inodes_per_ag / INODES_PER_BLOCK;
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
                commits: 0,
                blocks_journalled: 0,
                waiters: Vec::new(),
            },
        }));
        data_start
    }

    /// `ext4_create` → `__ext4_new_inode` + `ext4_add_entry`: the new
    /// inode's table block, the group's inode bitmap, the descriptor block
    /// and a directory block (a new one when the directory is full; htree
    /// inserts land in a hashed leaf, any of the directory's blocks).
    pub fn ext4_create_meta(&mut self, ino: InodeId) {
        let (sb, ag) = (self.inodes[ino].sb, self.inodes[ino].ag as usize);
        let Some(m) = self.sbs[sb].ext4.as_mut() else {
            return;
        };
        let n = m.ag_inodes[ag] % m.inodes_per_ag;
        m.ag_inodes[ag] += 1;
        let iblock = m.itable[ag] + n / INODES_PER_BLOCK;
        let (ibitmap, gdt) = (m.inode_bitmap[ag], m.gdt_block);
        let d = &m.dirs[ag];
        let dblock = if d.entries >= d.blocks.len() as u64 * DIR_ENTRIES_PER_BLOCK {
            // a new directory block, next to the group's data
            let cursor = self.sbs[sb].ag_cursor[ag];
            self.sbs[sb].ag_cursor[ag] += 8;
            let b = cursor / 8;
            self.sbs[sb].ext4.as_mut().expect("ext4").dirs[ag]
                .blocks
                .push(b);
            b
        } else if d.blocks.len() == 1 {
            d.blocks[0]
        } else {
            let i = self.rng.below(d.blocks.len() as u64) as usize;
            d.blocks[i]
        };
        let m = self.sbs[sb].ext4.as_mut().expect("ext4");
        m.dirs[ag].entries += 1;
        self.inodes[ino].iblock = iblock;
        for b in [iblock, ibitmap, gdt, dblock] {
            self.jbd2_log_block(sb, b);
        }
    }

    /// `ext4_map_blocks` allocated blocks for `ino`: its inode table block,
    /// the group's block bitmap and the descriptor block.
    pub fn ext4_alloc_meta(&mut self, ino: InodeId) {
        let (sb, ag) = (self.inodes[ino].sb, self.inodes[ino].ag as usize);
        let Some(m) = self.sbs[sb].ext4.as_ref() else {
            return;
        };
        let blocks = [self.inodes[ino].iblock, m.block_bitmap[ag], m.gdt_block];
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
        if j.running.count() >= j.len / 4 {
            self.jbd2_start_commit(sb);
        }
    }

    /// `start_this_handle` → `add_transaction_credits`: a handle may start
    /// unless the running transaction is full; then its commit starts, and
    /// if another commit is still in flight the task waits for that one
    /// (`wait_transaction_locked`). Returns false if `pid` must sleep; the
    /// end of the commit wakes it.
    pub fn jbd2_handle_start(&mut self, sb: usize, pid: Pid) -> bool {
        let Some(m) = self.sbs[sb].ext4.as_ref() else {
            return true;
        };
        if m.journal.running.count() < m.journal.len / 4 {
            return true;
        }
        self.jbd2_start_commit(sb);
        let j = &mut self.sbs[sb].ext4.as_mut().expect("ext4").journal;
        if j.running.count() < j.len / 4 {
            return true;
        }
        if !j.waiters.contains(&pid) {
            j.waiters.push(pid);
        }
        false
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
        j.blocks_journalled += n;
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
            let bio = Bio {
                dev,
                sector: (start + at) * 8,
                nr_sectors: k * 8,
                ino: 0,
                page_start: 0,
                npages: 0,
                submitter: task,
                submit_time: self.now(),
                seg_sectors: 8,
                parent: None,
                remaining: 0,
                opf,
                journal: Some(sb as u32),
            };
            // the commit task's tag and wbt waits are not modelled: its
            // requests wait in the queues and are issued as they are granted
            let _ = self.submit_bio(bio);
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
        j.commits += 1;
        let again = std::mem::take(&mut j.commit_again) || j.running.count() >= j.len / 4;
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
    fn mke2fs_journal_sizes() {
        // 16 GiB (the rig's image): 128 MiB
        assert_eq!(default_journal_blocks(4 << 20) * 4096, 128 << 20);
        // 1 TiB: 1 GiB
        assert_eq!(default_journal_blocks(256 << 20) * 4096, 1 << 30);
        assert_eq!(default_journal_blocks(100_000), 4096);
    }
}
