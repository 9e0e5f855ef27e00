//! XFS's metadata (fs/xfs/libxfs/xfs_ialloc.c, xfs_dir2*.c): where mkfs.xfs
//! puts the log, and which inodes and directory blocks a create and an
//! allocation change. They go to the log (`xfs_log`), and xfsaild writes
//! them in place.
//!
//! Metadata objects, as the host rig's 6.18 kernel showed them
//! (docs/validation.md; mkfs.xfs defaults: 512-byte
//! inodes, 32 KiB inode chunks of 64 inodes written as 16 KiB clusters,
//! 4 KiB directory blocks, logbsize 32k):
//! - a create allocates its inode from the AG's current chunk (a new chunk
//!   is allocated next to the AG's data every 64 creates) and adds an entry
//!   to its directory's last data block (a new block when it is full);
//! - a delalloc allocation at writeback relogs the inode.

use crate::fs::xfs_log::{default_log_blocks, XfsLog};
use crate::kernel::{InodeId, Kernel};
use crate::scenario::raw::{err, ScenarioError};
use crate::scenario::Reader;
use crate::sim::Ns;

/// XFS has no keys of its own yet (its log's size is mkfs.xfs's default);
/// ext4's `commit` and `journal_size` are refused rather than ignored.
/// Returns what the shared `Filesystem` fields hold for it: ext4's
/// defaults, which nothing of XFS reads.
pub(crate) fn read_keys(
    r: &mut Reader,
    fname: &str,
    fs_bytes: u64,
) -> Result<(Ns, u64), ScenarioError> {
    for k in ["commit", "journal_size"] {
        if let Some(e) = r.take(&format!("filesystems.{fname}.{k}")) {
            return err(
                &e.origin,
                format!("`{k}` is an ext4 option; an xfs filesystem takes type, device, max_folio, agcount and metadata"),
            );
        }
    }
    crate::fs::ext4_meta::read_keys(r, fname, fs_bytes)
}

/// `XFS_INODES_PER_CHUNK`: inodes per inode chunk.
pub const INODES_PER_CHUNK: u64 = 64;
/// mkfs.xfs's default inode size (`isize=512`), in bytes.
pub const XFS_INODE_SIZE: u64 = 512;
/// Sectors per inode chunk (32 KiB; chunks are aligned to it,
/// `sb_inoalignmt`).
const CHUNK_SECTORS: u64 = INODES_PER_CHUNK * XFS_INODE_SIZE / 512;
/// log2 of the inodes per 4 KiB block (`sb_inopblog`): an inode number is
/// its block number shifted by it, plus its slot in the block.
const INOPBLOG: u32 = 3;
/// 4 KiB blocks per inode cluster buffer: 16 KiB, 32 inodes (measured on
/// the host rig: its inode writes come in 16 KiB clusters).
pub const XFS_CLUSTER_BLOCKS: u64 = 4;
/// Entries per 4 KiB directory data block: ~48-byte entries after the
/// block header (wbsim's estimate; XFS fills a block before the next, and
/// the rig wrote each directory block exactly once).
pub const XFS_DIR_ENTRIES_PER_BLOCK: u64 = 80;

/// XFS's metadata state, per superblock: each AG's current inode chunk and
/// directory block, and the log.
#[derive(Debug)]
pub struct XfsMeta {
    /// Per AG: the current inode chunk's first block and inodes used; the
    /// directory's current data block and its entries.
    pub chunk: Vec<(u64, u64)>,
    pub dir: Vec<(u64, u64)>,
    pub log: XfsLog,
}

/// The first block of the cluster buffer holding inode number `ino`
/// (clusters are aligned in their chunk).
pub fn xfs_inode_cluster(ino: u64) -> u64 {
    (ino >> INOPBLOG) & !(XFS_CLUSTER_BLOCKS - 1)
}

impl Kernel {
    /// mkfs + mount: the internal log in the middle AG (data there starts
    /// after it), and the log's tasks.
    pub fn xfs_mkfs_meta(&mut self, sb: usize) {
        let s = &self.sbs[sb];
        let agcount = s.ag_cursor.len() as u64;
        let ag_blocks = s.ag_sectors / 8;
        let log_blocks = default_log_blocks(agcount * ag_blocks);
        let mid = (agcount / 2) as usize;
        let log_start = s.ag_cursor[mid] / 8;
        self.sbs[sb].ag_cursor[mid] += log_blocks * 8;
        self.sbs[sb].ag_data_start[mid] += log_blocks * 8;
        let log = self.xfs_log_mount(sb, log_start, log_blocks, agcount as usize);
        self.sbs[sb].xfs_mut().meta = Some(Box::new(XfsMeta {
            chunk: vec![(0, INODES_PER_CHUNK); agcount as usize],
            dir: vec![(0, XFS_DIR_ENTRIES_PER_BLOCK); agcount as usize],
            log,
        }));
    }

    /// `xfs_create`: an inode from the AG's chunk (`xfs_dialloc`; a new
    /// 32 KiB chunk next to the AG's data when it is used up), the inode
    /// item, and the directory entry (`xfs_dir_createname`) in the
    /// directory's last data block (a new one when it is full).
    pub fn xfs_create_meta(&mut self, ino: InodeId) {
        let (sb, ag) = (self.inodes[ino].sb as usize, self.inodes[ino].ag as usize);
        let Some(m) = self.sbs[sb].xfs_mut().meta.as_mut() else {
            return;
        };
        let (mut chunk, mut used) = m.chunk[ag];
        if used == INODES_PER_CHUNK {
            let cursor = self.sbs[sb].ag_cursor[ag].div_ceil(CHUNK_SECTORS) * CHUNK_SECTORS;
            self.sbs[sb].ag_cursor[ag] = cursor + CHUNK_SECTORS;
            (chunk, used) = (cursor / 8, 0);
        }
        let per_block = 1 << INOPBLOG;
        let number = ((chunk + used / per_block) << INOPBLOG) | (used % per_block);
        self.inodes[ino].ino = number;
        self.sbs[sb].xfs_mut().meta().chunk[ag] = (chunk, used + 1);
        self.xfs_trans_log_inode(ino, xfs_inode_cluster(number), false);
        // the directory: its last data block, a new one when full
        let (mut dblock, mut entries) = self.sbs[sb].xfs_mut().meta().dir[ag];
        if entries == XFS_DIR_ENTRIES_PER_BLOCK {
            dblock = self.sbs[sb].ag_cursor[ag] / 8;
            self.sbs[sb].ag_cursor[ag] += 8;
            entries = 0;
        }
        self.sbs[sb].xfs_mut().meta().dir[ag] = (dblock, entries + 1);
        self.xfs_trans_log_dir_entry(sb, ag, dblock, entries);
    }

    /// A delalloc allocation at writeback relogs the inode.
    pub fn xfs_alloc_meta(&mut self, ino: InodeId) {
        let sb = self.inodes[ino].sb as usize;
        if self.sbs[sb].xfs_mut().meta.is_some() {
            let cluster = xfs_inode_cluster(self.inodes[ino].ino);
            self.xfs_trans_log_inode(ino, cluster, true);
        }
    }
}
