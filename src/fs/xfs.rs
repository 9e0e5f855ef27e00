//! The XFS model's data path: ->writepages (fs/xfs/xfs_aops.c
//! `xfs_vm_writepages` over iomap), block mapping and delayed allocation
//! (xfs_iomap.c, xfs_bmap.c). Blocks are allocated when pages are written
//! back: a small file takes the next blocks of its directory's allocation
//! group, so files written one after another are adjacent (fs_mark's case);
//! a larger file takes a preallocation of its size rounded up to a power of
//! two, from which its next writebacks continue.
//!
//! XFS's metadata (inode chunks, directories) is in `xfs_meta`, its log in
//! `xfs_log`.

use crate::fs::InodePa;
use crate::kernel::{InodeId, Kernel, Pid};
use std::collections::BTreeMap;

/// XFS's state on a superblock (`struct xfs_mount`, as far as it is
/// modelled).
#[derive(Default)]
pub struct XfsSb {
    /// Per-inode preallocations past the blocks written.
    pub inode_pa: BTreeMap<InodeId, InodePa>,
    /// The metadata model and its log (`filesystems.NAME.metadata`); None
    /// without.
    pub meta: Option<Box<crate::fs::xfs_meta::XfsMeta>>,
    /// Reclaimable inodes per AG and the inode reclaim policy.
    pub icache: crate::fs::xfs_icache::XfsIcache,
}

impl XfsSb {
    /// The metadata model (XFS's metadata code runs only with it).
    pub fn meta(&mut self) -> &mut crate::fs::xfs_meta::XfsMeta {
        self.meta.as_mut().expect("XFS's metadata model")
    }
    /// The log (`mp->m_log`).
    pub fn log(&mut self) -> &mut crate::fs::xfs_log::XfsLog {
        &mut self.meta().log
    }
}

/// Pages one round of XFS's ->writepages takes at most. Not XFS's: wbsim
/// cuts XFS's rounds where ext4's are (`MAX_WRITEPAGES_EXTENT_LEN`, 2048
/// 4 KiB blocks); iomap's own ioend limits are not modelled.
pub const XFS_WRITEPAGES_MAX_PAGES: u64 = 2048;
/// Files smaller than this take the allocation group's next blocks, with
/// no preallocation. Not XFS's: wbsim uses ext4's mballoc stream threshold
/// (`s_mb_stream_request`, 16 blocks) for XFS too.
pub const XFS_PREALLOC_MIN_PAGES: u64 = 16;
/// The largest preallocation. Not XFS's: wbsim caps it at ext4's largest
/// normalized request (`ext4_mb_normalize_request`, 8 MiB).
pub const XFS_PREALLOC_MAX_PAGES: u64 = 2048;

impl Kernel {
    /// One round of `xfs_vm_writepages` (`iomap_writepages`): map
    /// `[start, start + n)` to disk blocks, allocating as needed, and
    /// submit a bio for each physically contiguous piece
    /// (`iomap_add_to_ioend` adds to the bio while the next block follows
    /// the last). Pages end writeback when their bio completes. Returns
    /// true if the submitter must sleep for a tag.
    pub fn xfs_writepages(&mut self, pid: Pid, ino: InodeId, start: u64, n: u64, opf: u8) -> bool {
        let seg_sectors = self.folio_seg_sectors(ino);
        self.writepages_contiguous(ino, start, n, Kernel::xfs_map_blocks, |k, b| {
            k.submit_page_bio(pid, ino, b, seg_sectors, opf, None)
        })
    }

    /// `xfs_map_blocks`: the sector of page `p` and how many following
    /// pages are physically contiguous, converting delalloc blocks on the
    /// way (`xfs_bmapi_convert_delalloc`).
    fn xfs_map_blocks(&mut self, ino: InodeId, p: u64, max: u64) -> (u64, u64) {
        let spp = self.page_size() / 512;
        let inode = &self.inodes[ino];
        if let Some(mapped) = inode.extent_lookup(p, max, spp) {
            return mapped;
        }
        let (sb, ag) = (inode.sb as usize, inode.ag as usize);
        let span = inode.nr_pages_span.max(p + max);
        let (sector, got) = self.xfs_alloc_blocks(sb, ag, ino, span, p, max);
        self.inodes[ino].extent_add(p, got, sector, spp);
        self.xfs_alloc_meta(ino);
        (sector, got)
    }

    /// Blocks for the `n` pages from page `p` of a file spanning `span`
    /// pages (`xfs_bmap_btalloc`): the first sector, and `n`. A small file
    /// takes the group's next blocks; a larger one continues in its
    /// preallocation while the request fits, or gets a new one of its size
    /// rounded up to a power of two (`XFS_PREALLOC_MIN_PAGES` to
    /// `XFS_PREALLOC_MAX_PAGES`, at least the request) at the request.
    fn xfs_alloc_blocks(
        &mut self,
        sb: usize,
        ag: usize,
        ino: InodeId,
        span: u64,
        p: u64,
        n: u64,
    ) -> (u64, u64) {
        let spp = self.page_size() / 512;
        let s = &mut self.sbs[sb];
        if span < XFS_PREALLOC_MIN_PAGES {
            let at = s.ag_cursor[ag];
            s.ag_cursor[ag] += n * spp;
            return (at, n);
        }
        if let Some(pa) = s.xfs_mut().inode_pa.get_mut(&ino) {
            if pa.lstart + n <= pa.lend {
                let at = pa.sector;
                pa.lstart += n;
                pa.sector += n * spp;
                return (at, n);
            }
        }
        let size = span
            .next_power_of_two()
            .clamp(XFS_PREALLOC_MIN_PAGES, XFS_PREALLOC_MAX_PAGES)
            .max(n);
        let at = s.ag_cursor[ag];
        s.ag_cursor[ag] += size * spp;
        let pa = InodePa {
            lstart: p + n,
            lend: p + size,
            sector: at + n * spp,
        };
        s.xfs_mut().inode_pa.insert(ino, pa);
        (at, n)
    }
}
