//! Filesystems, inodes and the flusher. `fs_writeback` is the flusher
//! (fs/fs-writeback.c); `ext4` is the filesystem model (block allocation and
//! ->writepages); this file holds the VFS-level inode and superblock.

pub mod ext4;
pub mod fs_writeback;
pub mod inode;
pub mod jbd2;
pub mod xfs_log;

use crate::kernel::{InodeId, Kernel, WbId};
use crate::mm::filemap::RangeSet;

pub const I_DIRTY_PAGES: u32 = 1 << 2;
/// Evicted: the inode is gone (its id is never used again).
pub const I_FREEING: u32 = 1 << 5;
pub const I_SYNC: u32 = 1 << 7;
pub const I_SYNC_QUEUED: u32 = 1 << 17;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WbList {
    Dirty,
    Io,
    MoreIo,
}

/// An inode: 128 bytes, cache-line aligned (a small-file run keeps a
/// million of them).
#[derive(Default)]
#[repr(align(64))]
pub struct Inode {
    pub ino: u64,
    /// Index of the superblock.
    pub sb: u32,
    pub wb: WbId,
    /// Pages from 0 to the end of the file's data.
    pub nr_pages_span: u64,
    /// Pages in the page cache.
    pub nr_cached: u64,
    pub dirty: RangeSet,
    pub nr_writeback: u64,
    pub i_state: u32,
    /// Jiffies when the inode went clean → dirty.
    pub dirtied_when: u64,
    pub writeback_index: u64,
    pub list: Option<WbList>,
    /// Allocated extents: (first page, pages, first sector). Delalloc: blocks
    /// are allocated at writeback time.
    pub extents: crate::sim::vec1::Vec1<(u64, u64, u64)>,
    /// Allocation group of the inode's directory (agcount ≤ 4096).
    pub ag: u16,
    /// Open file references (`i_count`): 0 once the file is closed.
    pub i_count: u8,
    /// XFS: the checkpoint (sequence mod 255, plus 1) whose CIL holds this
    /// inode's item; 0: none (`xfs_inode_log_item` in the CIL).
    pub cil_tag: u8,
    /// The block device's own inode (ext4's metadata buffers): its page
    /// index is the block number and it needs no allocation.
    pub bdev: bool,
}

impl Inode {
    /// Pages of `[index, index + n)` past the end of the file's data: a
    /// write there allocates them in the page cache.
    pub fn pages_past_span(&self, index: u64, n: u64) -> u64 {
        (index + n).saturating_sub(self.nr_pages_span.max(index))
    }
}

const _: () = assert!(std::mem::size_of::<Inode>() <= 128);

pub struct SuperBlock {
    pub name: String,
    pub dev: usize,
    pub wb: WbId,
    /// `s_dev` (major, minor).
    pub s_dev: (u32, u32),
    /// Largest folio a buffered write creates, in pages.
    pub max_folio_pages: u64,
    /// Next free sector of each allocation group (bump allocators).
    pub ag_cursor: Vec<u64>,
    /// Sectors per allocation group.
    pub ag_sectors: u64,
    /// First data sector of each group (after its metadata).
    pub ag_data_start: Vec<u64>,
    /// Per-inode preallocations of files past mballoc's stream threshold.
    pub inode_pa: std::collections::BTreeMap<InodeId, InodePa>,
    /// ext4 or XFS (which allocation rules apply).
    pub kind: crate::scenario::FsKind,
    pub next_ino: u64,
    /// ext4's and XFS's metadata models (`filesystems.NAME.metadata`).
    pub ext4: Option<Box<crate::fs::jbd2::Ext4Meta>>,
    pub xfs: Option<Box<crate::fs::xfs_log::XfsMeta>>,
}

/// An inode's preallocation (`struct ext4_prealloc_space`): the logical
/// pages `[lstart, lend)` are reserved at the sectors from `sector` on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InodePa {
    pub lstart: u64,
    pub lend: u64,
    pub sector: u64,
}

impl SuperBlock {
    /// Sectors allocated so far.
    pub fn used_sectors(&self) -> u64 {
        self.ag_cursor
            .iter()
            .enumerate()
            .map(|(i, c)| c - self.ag_data_start[i])
            .sum()
    }
}

impl Kernel {
    /// Mount each filesystem: a superblock, and a wb with its flusher for
    /// its device's bdi.
    pub fn fs_init(&mut self) {
        let ps = self.page_size();
        for (i, f) in self.sc.filesystems.clone().iter().enumerate() {
            let (major, minor) = (
                self.sc.devices[f.device].major,
                self.sc.devices[f.device].minor,
            );
            let bdi = self.bdi_of_dev(f.device);
            let wb_id = self.bdis[bdi].wbs[0];
            let comm = format!("kworker/u{}:{}", 2 * self.sc.machine.cpus, i + 1);
            let flusher = self.new_task(comm, crate::kernel::Body::Flusher(Box::default()), None);
            self.wbs[wb_id].flusher = flusher;
            let ag_cursor: Vec<u64> = (0..f.agcount as u64)
                .map(|a| a * (self.sc.devices[f.device].size / 512 / f.agcount as u64) + 2048)
                .collect();
            self.sbs.push(SuperBlock {
                name: f.name.clone(),
                dev: f.device,
                wb: wb_id,
                s_dev: (major, minor),
                max_folio_pages: (f.max_folio / ps).max(1),
                ag_data_start: ag_cursor.clone(),
                inode_pa: Default::default(),
                kind: f.kind,
                ag_cursor,
                ag_sectors: self.sc.devices[f.device].size / 512 / f.agcount as u64,
                next_ino: 12,
                ext4: None,
                xfs: None,
            });
            if f.metadata && f.kind == crate::scenario::FsKind::Xfs {
                let sb = self.sbs.len() - 1;
                self.xfs_mkfs_meta(sb);
            } else if f.metadata {
                let sb = self.sbs.len() - 1;
                let start = self.ext4_mkfs_meta(sb, f.journal_size, f.commit_interval);
                self.sbs[sb].ag_cursor = start.clone();
                self.sbs[sb].ag_data_start = start;
            }
        }
    }

    /// Create a regular file on `sb` (in allocation group 0).
    pub fn create_inode(&mut self, sb: usize) -> InodeId {
        self.create_inode_in(sb, 0)
    }

    /// Create a regular file in a directory of allocation group `ag`
    /// (`vfs_create` → the filesystem's create, with its metadata).
    pub fn create_inode_in(&mut self, sb: usize, ag: u32) -> InodeId {
        let ino = self.new_inode(sb, ag);
        self.ext4_create_meta(ino);
        self.xfs_create_meta(ino);
        ino
    }

    /// A filesystem transaction starts (a create, or ->writepages with its
    /// allocation): ext4's journal handle (`reserve`: writeback's reserved
    /// credits), or XFS's log reservation. False if `pid` must wait.
    pub fn fs_trans_start(&mut self, sb: usize, pid: crate::kernel::Pid, reserve: bool) -> bool {
        if self.sbs[sb].xfs.is_some() {
            return self.xfs_trans_reserve(sb, pid);
        }
        self.jbd2_handle_start(sb, pid, reserve).is_some()
    }

    /// `new_inode`: the VFS inode alone.
    pub fn new_inode(&mut self, sb: usize, ag: u32) -> InodeId {
        let s = &mut self.sbs[sb];
        let ino = s.next_ino;
        s.next_ino += 1;
        self.inodes.push(Inode {
            ino,
            sb: sb as u32,
            wb: s.wb,
            nr_pages_span: 0,
            nr_cached: 0,
            dirty: RangeSet::default(),
            nr_writeback: 0,
            i_state: 0,
            dirtied_when: 0,
            writeback_index: 0,
            list: None,
            extents: Default::default(),
            ag: ag as u16,
            i_count: 1,
            cil_tag: 0,
            bdev: false,
        })
    }

    /// `iput` of the creator's reference: the file is closed.
    pub fn iput(&mut self, ino: InodeId) {
        self.inodes[ino].i_count -= 1;
        self.inode_maybe_evict(ino);
        self.inodes.release_evicted();
    }

    /// Evict an inode nothing will touch again (`evict()`, reached through
    /// `prune_icache_sb` or the last `iput`): closed, clean, not being
    /// written, on no writeback list and without page-cache pages.
    pub fn inode_maybe_evict(&mut self, ino: InodeId) {
        let i = &self.inodes[ino];
        if i.i_count == 0
            && i.nr_cached == 0
            && i.i_state == 0
            && i.list.is_none()
            && i.nr_writeback == 0
            && i.dirty.is_empty()
        {
            self.inodes.evict(ino);
        }
    }

    /// `__mark_inode_dirty(inode, I_DIRTY_PAGES)`: the first dirtying puts
    /// the inode at the head of b_dirty and, if the wb had no dirty IO,
    /// arms the periodic flusher run. Every later dirtying of the inode
    /// returns at once (the per-write fast path).
    #[inline]
    pub fn mark_inode_dirty_pages(&mut self, ino: InodeId) {
        if self.inodes[ino].i_state & I_DIRTY_PAGES == 0 {
            self.mark_inode_first_dirty_pages(ino);
        }
    }

    #[inline(never)]
    fn mark_inode_first_dirty_pages(&mut self, ino: InodeId) {
        let inode = &mut self.inodes[ino];
        let was_dirty = inode.i_state & I_DIRTY_PAGES != 0;
        inode.i_state |= I_DIRTY_PAGES;
        if was_dirty || inode.i_state & (I_SYNC_QUEUED | I_SYNC) != 0 {
            // being written: requeue_inode will place it
            return;
        }
        inode.dirtied_when = self.jif.at(self.q.now());
        let wb = inode.wb;
        self.inode_list_move(ino, Some(WbList::Dirty));
        if !self.wbs[wb].has_dirty_io {
            self.wbs[wb].has_dirty_io = true;
            self.wb_wakeup_delayed(wb);
        }
    }

    /// Move an inode to the head of a list (or off all lists).
    pub fn inode_list_move(&mut self, ino: InodeId, to: Option<WbList>) {
        let wb = self.inodes[ino].wb;
        if let Some(from) = self.inodes[ino].list {
            let l = self.wb_list(wb, from);
            if let Some(pos) = l.iter().rposition(|&i| i == ino) {
                l.remove(pos);
            }
        }
        self.inodes[ino].list = to;
        if let Some(to) = to {
            self.wb_list(wb, to).push_front(ino);
        }
        let w = &mut self.wbs[wb];
        if !w.lists_nonempty() {
            w.has_dirty_io = false;
        }
    }

    pub fn wb_list(&mut self, wb: WbId, l: WbList) -> &mut std::collections::VecDeque<InodeId> {
        let w = &mut self.wbs[wb];
        match l {
            WbList::Dirty => &mut w.b_dirty,
            WbList::Io => &mut w.b_io,
            WbList::MoreIo => &mut w.b_more_io,
        }
    }
}
