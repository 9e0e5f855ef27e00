//! ext4's metadata (fs/ext4/ialloc.c, namei.c, mballoc.c, ext4_jbd2.c):
//! where mkfs puts it, which blocks each operation changes, and what a
//! writeback handle reserves. The blocks go to the journal (`jbd2`), which
//! writes them in place through the block device's page cache.
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
//! Each round of ext4_writepages (one extent to map: a small file, or a
//! run of adjacent dirty pages of a file written at random) starts a
//! handle that reserves credits (`rsv_blocks`: 18 with 6.18's 2 MiB
//! folios, 30 on a 16 GiB filesystem with 4 KiB folios), and the round's
//! io_end (one or more bios) holds them until its conversion; at most half
//! a transaction may be reserved, so with a 128 MiB journal ext4 keeps
//! about 4096 / 18 = 227 rounds in flight and the flusher waits for more
//! (`j_wait_reserved`).
//!
//! On the host rig (ext4, 4 fs_mark threads, 50 MiB/s) the kernel wrote the
//! journal in 512 KiB WSM requests from jbd2 and the inode table in 512 KiB
//! WM requests from the flusher (block_rq_issue; docs/validation.md).
//!
//! Not modelled: the credits creates reserve (only writeback's reserved
//! handles are), htree index blocks.

use crate::fs::jbd2::Journal;
use crate::kernel::{InodeId, Kernel, Pid};
use crate::scenario::raw::{err, ScenarioError};
use crate::scenario::Reader;
use crate::sim::Ns;
use crate::sim::NSEC_PER_SEC;

/// ext4's own keys: `commit` (the `commit=` mount option) and
/// `journal_size` (mke2fs's `-J size=`). Returns the commit interval and
/// the journal's size in bytes.
pub(crate) fn read_keys(
    r: &mut Reader,
    fname: &str,
    fs_bytes: u64,
) -> Result<(Ns, u64), ScenarioError> {
    let p = |k: &str| format!("filesystems.{fname}.{k}");
    let commit = match r.duration(&p("commit"))? {
        Some((v, e)) if v < NSEC_PER_SEC => {
            return err(
                &e.origin,
                "`commit` must be at least 1s (ext4's commit= is in seconds)",
            )
        }
        Some((v, _)) => v,
        None => 5 * NSEC_PER_SEC, // JBD2_DEFAULT_MAX_COMMIT_AGE
    };
    let journal = match r.size(&p("journal_size"))? {
        Some((v, e)) if v < (4 << 20) || v > fs_bytes / 4 => {
            return err(
                &e.origin,
                format!("`journal_size` = {v}; expected 4M up to a quarter of the device"),
            )
        }
        Some((v, _)) => v,
        None => default_journal_blocks(fs_bytes / 4096) * 4096,
    };
    Ok((commit, journal))
}

/// ext4 inodes per 4 KiB inode table block (mke2fs's 256-byte inodes,
/// `inode_size`).
pub const INODES_PER_BLOCK: u64 = 16;
/// mke2fs's default bytes-per-inode (`inode_ratio`).
pub const INODE_RATIO: u64 = 16384;
/// Directory entries per 4 KiB block: a fs_mark name (~40 characters) is
/// a 48-byte `ext4_dir_entry_2`; leaves run about 3/4 full after splits
/// (64 entries), which fits the rig's 5.4k directory blocks for 320k files
/// (measured on the host rig).
pub const DIR_ENTRIES_PER_BLOCK: u64 = 64;
/// Blocks at the start of each group before its inode table (or the
/// journal): wbsim leaves 1 MiB for the headers (superblock and group
/// descriptors in group 0, the bitmaps); not a kernel constant.
const GROUP_HEADER_BLOCKS: u64 = 256;

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
    // EXT4_MAX_EXTENT_DEPTH
    const MAX_DEPTH: u64 = 5;
    if let Some(bpf) = large_folio_blocks {
        // (4096 - 12-byte `ext4_extent_header`) / 12-byte `ext4_extent`s
        let extents_per_leaf = (4096 - 12) / 12;
        return 1 + 3 * MAX_DEPTH + bpf.div_ceil(extents_per_leaf);
    }
    // EXT4_BLOCKS_PER_GROUP (32768 4 KiB blocks), 64-byte descriptors
    // (EXT4_DESC_SIZE with 64bit)
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
    /// Credits one writeback handle reserves (`rsv_blocks`); 0 without
    /// dioread_nolock (before 5.6's default, the older policies).
    pub rsv_blocks: u64,
    pub journal: Journal,
}

impl Kernel {
    /// mkfs: place each group's bitmaps and inode table at its start (after
    /// 1 MiB of headers) and the journal in the middle group; data starts
    /// after them. Then mount: the journal and its commit task.
    pub fn ext4_mkfs_meta(&mut self, sb: usize, journal_bytes: u64, commit: Ns) {
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
            let mut b = a * ag_blocks + GROUP_HEADER_BLOCKS;
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
        let journal = self.jbd2_journal_init(sb, journal_start, jlen, commit);
        let bdev_inode = self.new_inode(sb, 0);
        self.inodes[bdev_inode].bdev = true;
        // dioread_nolock is ext4's default since 5.6
        let rsv_blocks = if self.sc.features.dioread_nolock {
            let folio_pages = self.sbs[sb].max_folio_pages;
            let large = (folio_pages > 1).then(|| folio_pages * self.page_size() / 4096);
            ext4_rsv_blocks(agcount * ag_blocks, large)
        } else {
            0
        };
        let s = &mut self.sbs[sb];
        s.ag_cursor = data_start.clone();
        s.ag_data_start = data_start;
        // the superblock is block 0, the group descriptors block 1, and
        // each group's block and inode bitmaps its blocks 2 and 3
        s.ext4_mut().meta = Some(Box::new(Ext4Meta {
            bdev_inode,
            gdt_block: 1,
            block_bitmap: (0..agcount).map(|a| a * ag_blocks + 2).collect(),
            inode_bitmap: (0..agcount).map(|a| a * ag_blocks + 3).collect(),
            itable,
            inodes_per_ag,
            ag_inodes: vec![0; agcount as usize],
            dirs: vec![Dir::default(); agcount as usize],
            dir_cursor,
            rsv_blocks,
            journal,
        }));
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
        let Some(m) = self.sbs[sb].ext4_mut().meta.as_mut() else {
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
        m.dirs[ag].entries += 1;
        // ext4 numbers inodes by group: the number says where it lives
        self.inodes[ino].ino = ag as u64 * inodes_per_ag + n + 1;
        for b in [iblock, ibitmap, gdt, dblock] {
            self.jbd2_journal_dirty_metadata(sb, b);
        }
    }

    /// The inode table block holding `ino` (its number encodes its group
    /// and index, `ext4_get_inode_loc`).
    pub fn ext4_inode_block(&self, ino: InodeId) -> u64 {
        let sb = &self.sbs[self.inodes[ino].sb as usize];
        let m = sb.ext4().meta.as_ref().expect("ext4's metadata model");
        let i = self.inodes[ino].ino - 1;
        let ag = (i / m.inodes_per_ag) as usize;
        m.itable[ag.min(m.itable.len() - 1)] + (i % m.inodes_per_ag) / INODES_PER_BLOCK
    }

    /// `ext4_map_blocks` allocated blocks for `ino`: its inode table block,
    /// the group's block bitmap and the descriptor block.
    pub fn ext4_alloc_meta(&mut self, ino: InodeId) {
        let (sb, ag) = (self.inodes[ino].sb as usize, self.inodes[ino].ag as usize);
        let Some(m) = self.sbs[sb].ext4().meta.as_ref() else {
            return;
        };
        let blocks = [self.ext4_inode_block(ino), m.block_bitmap[ag], m.gdt_block];
        for b in blocks {
            self.jbd2_journal_dirty_metadata(sb, b);
        }
    }

    /// `ext4_journal_start`: a handle on the journal, for a create or (with
    /// `reserve`) for ->writepages with its reserved credits. Without the
    /// metadata model there is no journal to wait for. False if `pid` must
    /// wait.
    pub fn ext4_journal_start(&mut self, sb: usize, pid: Pid, reserve: bool) -> bool {
        let Some(m) = self.sbs[sb].ext4().meta.as_ref() else {
            return true;
        };
        let rsv = if reserve { m.rsv_blocks } else { 0 };
        self.jbd2_handle_start(sb, pid, rsv)
    }

    /// The handle of a writepages round of `ino` that maps blocks
    /// (`ext4_do_writepages`: `ext4_journal_start_with_reserve`, then
    /// `ext4_map_blocks`). The mapping changes the inode's table block
    /// (`ext4_mark_inode_dirty`), so the round waits while a commit shadows
    /// that block, holding `i_data_sem`, which a writer's
    /// `ext4_da_get_block_prep` then waits for in turn (that second wait is
    /// not modelled: the writer's mtime update already waits for the same
    /// commit). The shadow is checked first, so the waiting round holds no
    /// reserved credits. False if `pid` must wait.
    pub fn ext4_writepages_journal_start(&mut self, pid: Pid, ino: InodeId) -> bool {
        let sb = self.inodes[ino].sb as usize;
        if self.sbs[sb].ext4().meta.is_some() {
            let iblock = self.ext4_inode_block(ino);
            if !self.jbd2_get_write_access(sb, pid, iblock) {
                // its handle has started the next transaction
                self.jbd2_get_transaction(sb);
                return false;
            }
        }
        self.ext4_journal_start(sb, pid, true)
    }

    /// `ext4_dirty_inode` for a write's mtime update (`file_update_time`):
    /// a handle logs the inode's table block (`ext4_mark_inode_dirty`).
    /// False if `pid` must wait: for room in the journal, or for the block
    /// while the commit writes it to the log (`jbd2_get_write_access`);
    /// the caller tries again when woken.
    pub fn ext4_dirty_inode(&mut self, pid: Pid, ino: InodeId) -> bool {
        let sb = self.inodes[ino].sb as usize;
        if self.sbs[sb].ext4().meta.is_none() {
            return true;
        }
        let iblock = self.ext4_inode_block(ino);
        if !self.jbd2_handle_start(sb, pid, 0) || !self.jbd2_get_write_access(sb, pid, iblock) {
            return false;
        }
        self.jbd2_journal_dirty_metadata(sb, iblock);
        true
    }

    /// The credits the handle of a round of writepages of `ino` reserved
    /// (`ext4_journal_start` with `rsv_blocks`, before the round): the
    /// round's io_end takes its reserved handle (`ext4_set_io_unwritten_flag`
    /// hands `h_rsv_handle` to the io_end) and holds them until its last
    /// bio completes and the conversion gives them back. 0 when writeback
    /// reserves nothing.
    pub fn ext4_io_end_rsv(&self, ino: InodeId) -> u32 {
        let sb = self.inodes[ino].sb as usize;
        self.sbs[sb]
            .ext4()
            .meta
            .as_ref()
            .map_or(0, |m| m.rsv_blocks as u32)
    }

    /// Writeback of `ino` starts a handle for each round of ->writepages
    /// (`ext4_do_writepages`: `ext4_journal_start_with_reserve` per extent
    /// to map), each with its reserved credits: with the metadata model and
    /// dioread_nolock.
    pub fn ext4_handle_per_round(&self, ino: InodeId) -> bool {
        let sb = self.inodes[ino].sb as usize;
        self.sbs[sb]
            .ext4()
            .meta
            .as_ref()
            .is_some_and(|m| m.rsv_blocks > 0)
    }

    /// `ext4_journal_stop` on a writeback handle whose round wrote nothing:
    /// its reserved handle is freed (`jbd2_journal_free_reserved`).
    pub fn ext4_writepages_handle_stop(&mut self, ino: InodeId) {
        let sb = self.inodes[ino].sb as usize;
        let rsv = self.ext4_io_end_rsv(ino);
        if rsv > 0 {
            self.jbd2_free_reserved(sb, u64::from(rsv));
        }
    }

    /// `ext4_end_io_rsv_work` → `ext4_convert_unwritten_io_end_vec`: after
    /// an io_end's IO, its reserved handle converts the unwritten extent,
    /// logging the inode block again, and returns its credits.
    pub fn ext4_end_io_rsv_work(&mut self, ino: InodeId, rsv: u64) {
        let sb = self.inodes[ino].sb as usize;
        let iblock = self.ext4_inode_block(ino);
        self.jbd2_reserved_handle_log(sb, rsv, iblock);
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
