//! Filesystems, inodes and the flusher: the VFS-level inode and superblock,
//! and the filesystem ops. A superblock holds its filesystem as a value
//! (`FsType`); every `match` on it is in this file, each arm calling into
//! that filesystem's own files:
//!
//! - ext4: `ext4` (->writepages, block mapping, mballoc, io_end),
//!   `ext4_meta` (its metadata: layout, what a create and an allocation
//!   log, reserved credits) and `jbd2` (the journal);
//! - XFS: `xfs` (->writepages, block mapping, allocation), `xfs_meta` (inode
//!   chunks and directories) and `xfs_log` (delayed logging, the log, the
//!   AIL).
//!
//! `fs_writeback` is the flusher (fs/fs-writeback.c); `writepages` is
//! `do_writepages` with the walk over an inode's dirty pages, and the block
//! device's own ->writepages; `inode` is the inode cache.
//!
//! Units: sectors are 512 bytes (`SECTOR_SIZE`) and filesystem blocks
//! 4 KiB (mke2fs's and mkfs.xfs's default block size), so `/ 8` and `* 8`
//! turn sectors into blocks and back.

pub mod cgroup_writeback;
pub mod direct_io;
pub mod ext4;
pub mod ext4_es;
pub mod ext4_meta;
pub mod fs_writeback;
pub mod inode;
pub mod jbd2;
pub mod sync;
pub mod vfs_cache;
pub mod writepages;
pub mod xfs;
pub mod xfs_icache;
pub mod xfs_log;
pub mod xfs_meta;

use crate::block::{Bio, BioOwner};
use crate::kernel::{InodeId, Kernel, Pid, WbId};
use crate::mm::filemap::RangeSet;
use crate::sim::Ns;

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
    /// Index of the superblock (at most 65536 filesystems).
    pub sb: u16,
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
    /// The jiffy of its last mtime update, low 32 bits: the coarse clock
    /// `current_time()` reads, which moves once a tick
    /// (`inode_needs_update_time`).
    pub mtime: u32,
}

impl Inode {
    /// Pages of `[index, index + n)` past the end of the file's data: a
    /// write there allocates them in the page cache.
    pub fn pages_past_span(&self, index: u64, n: u64) -> u64 {
        (index + n).saturating_sub(self.nr_pages_span.max(index))
    }

    /// The sector of page `p` if it has blocks, and how many pages from it
    /// (at most `max`) its extent maps contiguously (`spp` sectors a page).
    pub fn extent_lookup(&self, p: u64, max: u64, spp: u64) -> Option<(u64, u64)> {
        self.extents
            .as_slice()
            .iter()
            .rev()
            .find(|&&(ps, len, _)| p >= ps && p < ps + len)
            .map(|&(ps, len, sec)| (sec + (p - ps) * spp, (ps + len - p).min(max)))
    }

    /// `got` pages from page `p` got blocks from `sector` on: the last
    /// extent grows if they continue it, or they make a new one.
    pub fn extent_add(&mut self, p: u64, got: u64, sector: u64, spp: u64) {
        match self.extents.last_mut() {
            Some((ps, len, sec)) if *ps + *len == p && *sec + *len * spp == sector => *len += got,
            _ => self.extents.push((p, got, sector)),
        }
    }
}

const _: () = assert!(std::mem::size_of::<Inode>() <= 128);

/// The filesystem on a superblock: its kind is the variant, and its state
/// (allocation, and with `filesystems.NAME.metadata` its metadata and
/// journal or log) is the value.
pub enum FsType {
    Ext4(Box<ext4::Ext4Sb>),
    Xfs(Box<xfs::XfsSb>),
}

pub struct SuperBlock {
    pub dev: usize,
    pub wb: WbId,
    /// Largest folio a buffered write creates, in pages.
    pub max_folio_pages: u64,
    /// Next free sector of each allocation group (bump allocators).
    pub ag_cursor: Vec<u64>,
    /// Sectors per allocation group.
    pub ag_sectors: u64,
    /// First data sector of each group (after its metadata).
    pub ag_data_start: Vec<u64>,
    pub next_ino: u64,
    pub fs: FsType,
    /// The dentry and inode LRUs (fs/vfs_cache.rs).
    pub vfs: vfs_cache::VfsCache,
    /// `sb->s_shrink`.
    pub s_shrink: crate::mm::shrinker::SuperShrinker,
}

/// A file's preallocated blocks: the logical pages `[lstart, lend)` are
/// reserved at the sectors from `sector` on (ext4's `struct
/// ext4_prealloc_space`; XFS's preallocation past the end of the file).
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

    /// ext4's state, for ext4's own code (reached through the ops below).
    pub fn ext4(&self) -> &ext4::Ext4Sb {
        match &self.fs {
            FsType::Ext4(e) => e,
            FsType::Xfs(_) => panic!("ext4 code on an XFS superblock"),
        }
    }
    pub fn ext4_mut(&mut self) -> &mut ext4::Ext4Sb {
        match &mut self.fs {
            FsType::Ext4(e) => e,
            FsType::Xfs(_) => panic!("ext4 code on an XFS superblock"),
        }
    }
    pub fn is_xfs(&self) -> bool {
        matches!(self.fs, FsType::Xfs(_))
    }
    /// XFS's state, for XFS's own code.
    pub fn xfs_mut(&mut self) -> &mut xfs::XfsSb {
        match &mut self.fs {
            FsType::Xfs(x) => x,
            FsType::Ext4(_) => panic!("XFS code on an ext4 superblock"),
        }
    }
}

impl Kernel {
    /// Mount each filesystem: a superblock, and a wb with its flusher for
    /// its device's bdi.
    pub fn fs_init(&mut self) {
        let ps = self.page_size();
        for (i, f) in self.sc.filesystems.clone().iter().enumerate() {
            let bdi = self.bdi_of_dev(f.device);
            let wb_id = self.bdis[bdi].wbs[0];
            let comm = format!("kworker/u{}:{}", 2 * self.sc.machine.cpus, i + 1);
            let body =
                crate::kernel::Body::Flusher(Box::new(fs_writeback::FlusherState::new(wb_id)));
            let flusher = self.new_task(comm, body, None);
            self.wbs[wb_id].flusher = flusher;
            let ag_sectors = self.sc.devices[f.device].size / 512 / f.agcount as u64;
            // each group's first 1 MiB (2048 sectors) is left to its headers
            let ag_cursor: Vec<u64> = (0..f.agcount as u64)
                .map(|a| a * ag_sectors + 2048)
                .collect();
            let fs = match f.kind {
                crate::scenario::FsKind::Ext4 => FsType::Ext4(Box::default()),
                crate::scenario::FsKind::Xfs => {
                    let mut x: Box<xfs::XfsSb> = Box::default();
                    x.icache.policy = f.inode_reclaim;
                    x.icache.ags = vec![Default::default(); f.agcount as usize];
                    FsType::Xfs(x)
                }
            };
            self.sbs.push(SuperBlock {
                dev: f.device,
                wb: wb_id,
                max_folio_pages: (f.max_folio / ps).max(1),
                ag_data_start: ag_cursor.clone(),
                ag_cursor,
                ag_sectors,
                // ext4's EXT4_GOOD_OLD_FIRST_INO (11) is lost+found
                next_ino: 12,
                fs,
                vfs: Default::default(),
                s_shrink: Default::default(),
            });
            if f.metadata {
                self.fs_mkfs_meta(self.sbs.len() - 1, f);
            }
        }
        if self.sc.features.bw_dwork {
            self.bdi_wq_init();
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
        self.fs_create_meta(ino);
        ino
    }

    // The filesystem ops. Each filesystem's file holds the same ops under
    // its own names, which these dispatch to:
    //
    //   op                          ext4                    XFS
    //   mkfs + mount (metadata)     ext4_mkfs_meta          xfs_mkfs_meta
    //   create's metadata           ext4_create_meta        xfs_create_meta
    //   transaction start           ext4_journal_start      xfs_trans_reserve
    //   writepages' transaction     ext4_writepages_        xfs_trans_reserve
    //                               journal_start
    //   write()'s mtime             ext4_dirty_inode        (not modelled)
    //   ->writepages (a run)        ext4_writepages         xfs_writepages
    //   block mapping               ext4_map_blocks         xfs_map_blocks
    //   block allocation            ext4_mb_new_blocks      xfs_alloc_blocks
    //   allocation's metadata       ext4_alloc_meta         xfs_alloc_meta
    //   bio completion              ext4_end_bio,           xfs_log_bio_done,
    //                               jbd2_bio_done           xfs_ail_bio_done
    //
    // Mapping, allocation and the allocation's metadata are called by the
    // filesystem's own ->writepages. The block device's inode (ext4's
    // metadata buffers) has the block device's ->writepages instead
    // (`blkdev_writepages`, in `writepages`).

    /// mkfs and mount with the metadata model: lay out the metadata, start
    /// the journal or log and its tasks.
    fn fs_mkfs_meta(&mut self, sb: usize, f: &crate::scenario::Filesystem) {
        match self.sbs[sb].fs {
            FsType::Ext4(_) => self.ext4_mkfs_meta(sb, f.journal_size, f.commit_interval),
            FsType::Xfs(_) => self.xfs_mkfs_meta(sb),
        }
    }

    /// The metadata a create changes (the inode, its directory entry).
    fn fs_create_meta(&mut self, ino: InodeId) {
        match self.sbs[self.inodes[ino].sb as usize].fs {
            FsType::Ext4(_) => self.ext4_create_meta(ino),
            FsType::Xfs(_) => self.xfs_create_meta(ino),
        }
    }

    /// A create's filesystem transaction starts: ext4's journal handle, or
    /// XFS's log reservation (->writepages starts its own,
    /// `fs_writepages_trans_start`). False if `pid` must wait.
    pub fn fs_trans_start(&mut self, sb: usize, pid: Pid) -> bool {
        match self.sbs[sb].fs {
            FsType::Ext4(_) => self.ext4_journal_start(sb, pid, false),
            FsType::Xfs(_) => self.xfs_trans_reserve(sb, pid),
        }
    }

    /// `file_update_time` at the start of a write() to `ino` by `pid`: once
    /// the coarse clock has ticked since the last update, the filesystem
    /// logs the new mtime (ext4's `ext4_dirty_inode`). False if `pid` must
    /// wait; it calls again when woken. XFS's update (`xfs_vn_update_time`,
    /// a log reservation and the inode item in the CIL) is not modelled.
    pub fn file_update_time(&mut self, pid: Pid, ino: InodeId) -> bool {
        let now = self.jiffies() as u32;
        let inode = &self.inodes[ino];
        if inode.mtime == now {
            return true;
        }
        let ok = match self.sbs[inode.sb as usize].fs {
            FsType::Ext4(_) => self.ext4_dirty_inode(pid, ino),
            FsType::Xfs(_) => true,
        };
        if ok {
            self.inodes[ino].mtime = now;
        }
        ok
    }

    /// ->writepages of `ino` starts its transaction for a round that maps
    /// blocks (the block device's inode has none): ext4's reserved handle
    /// (`ext4_writepages_journal_start`), or XFS's log reservation. False
    /// if `pid` must wait.
    pub fn fs_writepages_trans_start(&mut self, pid: Pid, ino: InodeId) -> bool {
        let inode = &self.inodes[ino];
        if inode.bdev {
            return true;
        }
        let sb = inode.sb as usize;
        match self.sbs[sb].fs {
            FsType::Ext4(_) => self.ext4_writepages_journal_start(pid, ino),
            FsType::Xfs(_) => self.xfs_trans_reserve(sb, pid),
        }
    }

    /// CPU time ->write_begin's block mapping of pages `[p0, p1)` of `ino`
    /// spends in the filesystem's lookups (`ext4_da_get_block_prep` →
    /// `ext4_da_map_blocks` for pages new in the cache, whose buffers are
    /// not mapped). XFS's iext lookups are not modelled.
    pub fn fs_write_begin_map_cost(&mut self, ino: InodeId, p0: u64, p1: u64) -> Ns {
        let inode = &self.inodes[ino];
        match self.sbs[inode.sb as usize].fs {
            FsType::Ext4(_) if !inode.bdev => self.ext4_da_map_blocks_cost(ino, p0, p1),
            _ => 0,
        }
    }

    /// Whether ->writepages of `ino` starts a transaction for every round
    /// after the first (ext4's handle per extent with its reserved credits;
    /// XFS reserves per inode, the block device's inode has none).
    pub fn fs_writepages_handle_per_round(&self, ino: InodeId) -> bool {
        let inode = &self.inodes[ino];
        match self.sbs[inode.sb as usize].fs {
            FsType::Ext4(_) if !inode.bdev => self.ext4_handle_per_round(ino),
            _ => false,
        }
    }

    /// A round of ->writepages over `[start, start + n)` of `ino` maps
    /// blocks in a transaction: ext4's rounds with delalloc or unwritten
    /// blocks (written blocks are written without a handle).
    pub fn fs_writepages_round_maps(&self, ino: InodeId, start: u64, n: u64) -> bool {
        self.fs_writepages_handle_per_round(ino) && self.ext4_round_needs_map(ino, start, n)
    }

    /// fallocate(2) of `pages` pages of `ino` (mode 0, a new file): blocks
    /// as `fs_layout_file` lays them out; ext4's are unwritten extents,
    /// which writeback converts after the IO.
    pub fn fs_fallocate(&mut self, ino: InodeId, pages: u64) {
        let have = self.inodes[ino]
            .extents
            .as_slice()
            .iter()
            .map(|&(p, n, _)| p + n)
            .max()
            .unwrap_or(0);
        self.fs_layout_file(ino, pages);
        if pages > have && matches!(self.sbs[self.inodes[ino].sb as usize].fs, FsType::Ext4(_)) {
            self.ext4_mark_unwritten(ino, have, pages);
        }
    }

    /// ->writepages of `ino` started a round's transaction and the round
    /// found nothing to write: the transaction ends unused.
    pub fn fs_writepages_handle_stop(&mut self, ino: InodeId) {
        if self.fs_writepages_handle_per_round(ino) {
            self.ext4_writepages_handle_stop(ino);
        }
    }

    /// The most pages one round of ->writepages of `ino` takes (the block
    /// device's inode: as its filesystem's).
    pub fn fs_writepages_max_pages(&self, ino: InodeId) -> u64 {
        match self.sbs[self.inodes[ino].sb as usize].fs {
            FsType::Ext4(_) => ext4::EXT4_MAX_BIO_PAGES,
            FsType::Xfs(_) => xfs::XFS_WRITEPAGES_MAX_PAGES,
        }
    }

    /// One round of ->writepages: map `[start, start + n)` of `ino`, whose
    /// pages are under writeback, and submit its bios with `opf`. True if
    /// `pid` must sleep for a tag.
    pub fn fs_writepages(&mut self, pid: Pid, ino: InodeId, start: u64, n: u64, opf: u8) -> bool {
        let inode = &self.inodes[ino];
        if inode.bdev {
            return self.blkdev_writepages(pid, ino, start, n, opf);
        }
        match self.sbs[inode.sb as usize].fs {
            FsType::Ext4(_) => self.ext4_writepages(pid, ino, start, n, opf),
            FsType::Xfs(_) => self.xfs_writepages(pid, ino, start, n, opf),
        }
    }

    /// A bio completed (`bio->bi_end_io`): page-cache pages end writeback
    /// (ext4's under dioread_nolock with their io_end's), or the journal or
    /// log that wrote it hears of it.
    pub fn fs_bio_endio(&mut self, b: &Bio) {
        match b.owner {
            BioOwner::Page => match b.io_end {
                Some(io) => self.ext4_end_bio(b.ino, io, b.npages),
                None => self.end_writeback_range(b.ino, b.npages),
            },
            BioOwner::Jbd2(sb) => self.jbd2_bio_done(sb as usize),
            BioOwner::XfsLog(sb) => self.xfs_log_bio_done(sb as usize),
            BioOwner::XfsAil(sb) => self.xfs_ail_bio_done(sb as usize),
            BioOwner::XfsReclaim(_) => self.xfs_iflush_done(b.submitter),
            BioOwner::MetaRead(_) => self.wake_up_process(b.submitter),
            BioOwner::PageRead => self.filemap_read_end_io(b),
            BioOwner::Dio { pid, tag } => self.dio_bio_end_io(pid as usize, tag, b),
            BioOwner::Driver { dev, tag } => self.driver_bio_done(dev as usize, tag, b),
        }
    }

    /// A laid-out file (fio's layout before a job that reads or
    /// overwrites, or fallocate): pages `[0, pages)` get blocks
    /// contiguously from the file's allocation group, and the file's size
    /// is `pages`, without simulating the IO that wrote them. Pages that
    /// already have blocks keep them.
    pub fn fs_layout_file(&mut self, ino: InodeId, pages: u64) {
        let spp = self.page_size() / 512;
        let inode = &self.inodes[ino];
        let (sb, ag) = (inode.sb as usize, inode.ag as usize);
        let have = inode
            .extents
            .as_slice()
            .iter()
            .map(|&(p, n, _)| p + n)
            .max()
            .unwrap_or(0);
        if pages > have {
            let s = &mut self.sbs[sb];
            let sector = s.ag_cursor[ag];
            s.ag_cursor[ag] += (pages - have) * spp;
            self.inodes[ino].extent_add(have, pages - have, sector, spp);
        }
        let inode = &mut self.inodes[ino];
        inode.nr_pages_span = inode.nr_pages_span.max(pages);
    }

    /// `new_inode`: the VFS inode alone.
    pub fn new_inode(&mut self, sb: usize, ag: u32) -> InodeId {
        let mtime = self.jiffies() as u32;
        let s = &mut self.sbs[sb];
        let ino = s.next_ino;
        s.next_ino += 1;
        self.inodes.push(Inode {
            ino,
            sb: sb as u16,
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
            mtime,
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
        inode.i_state |= I_DIRTY_PAGES;
        if inode.i_state & (I_SYNC_QUEUED | I_SYNC) != 0 {
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
