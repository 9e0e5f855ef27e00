//! The XFS model's data path: ->writepages (fs/xfs/xfs_aops.c
//! `xfs_vm_writepages` over iomap), block mapping and delayed allocation
//! (xfs_iomap.c, xfs_bmap.c). Blocks are allocated when pages are written
//! back: a small file takes the next blocks of its directory's allocation
//! group, so files written one after another are adjacent (fs_mark's case);
//! a larger file takes a preallocation of its size rounded up to a power of
//! two, from which its next writebacks continue.
//!
//! On the write side, a buffered write past EOF reserves delayed-allocation
//! blocks with speculative preallocation beyond it
//! (`xfs_buffered_write_iomap_begin`, `xfs_iomap_prealloc_size`): each new
//! reservation doubles the one before, and ends on an allocsize (64 KiB)
//! boundary, so it ends 64 KiB short of a power of two of MiB for a file
//! written in 1 MiB blocks. A write that crosses that end is mapped in two
//! pieces, and iomap copies (and checks the dirty throttle before) each
//! folio of each piece, whose size its length and alignment allow
//! (`iomap_write_iter`, `__filemap_get_folio`): 1 MiB at 127 MiB is
//! copied as 128, 64, 32 and 16 pages, then 16. Not modelled: the
//! preallocation's throttling near ENOSPC and by quota, stripe alignment,
//! and large-folio allocations that fail (all folios get their order).
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
    /// Per inode, its delalloc reservation past EOF: (end, length) in
    /// pages of the last one made.
    pub delalloc: BTreeMap<InodeId, (u64, u64)>,
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
/// `m_allocsize_blocks`: the default allocsize, 64 KiB (16 4 KiB blocks):
/// the smallest speculative preallocation and the alignment of a
/// reservation's end.
pub const XFS_ALLOCSIZE_PAGES: u64 = 16;
/// `XFS_MAX_BMBT_EXTLEN`: the longest extent, 2^21 - 1 blocks.
pub const XFS_MAX_BMBT_EXTLEN: u64 = (1 << 21) - 1;

/// `xfs_iomap_prealloc_size` for a write at `offset` (pages) of a file of
/// `isize` pages whose previous delalloc reservation ended at `prev_end`
/// after `prev_len` pages: none for a file under allocsize, allocsize after
/// a hole, else twice the previous extent rounded down to a power of two
/// (from the offset once that passes the longest extent).
pub fn xfs_prealloc_pages(isize: u64, offset: u64, prev_end: u64, prev_len: u64) -> u64 {
    if isize < XFS_ALLOCSIZE_PAGES {
        return 0;
    }
    if prev_len == 0 || prev_end != offset {
        return XFS_ALLOCSIZE_PAGES;
    }
    let mut alloc = 2 * prev_len;
    if alloc > XFS_MAX_BMBT_EXTLEN {
        alloc = offset;
    }
    alloc = alloc.min((XFS_MAX_BMBT_EXTLEN + 1).next_power_of_two());
    if alloc > 0 {
        alloc = 1 << alloc.ilog2();
    }
    alloc.clamp(XFS_ALLOCSIZE_PAGES, XFS_MAX_BMBT_EXTLEN)
}

/// The end (pages) of the delalloc reservation a write of `count` pages at
/// `offset` makes with `prealloc` pages of speculative preallocation
/// (`xfs_buffered_write_iomap_begin`: the write's last allocsize unit,
/// plus the preallocation; no stripe alignment).
pub fn xfs_reservation_end(offset: u64, count: u64, prealloc: u64) -> u64 {
    let end = offset + count;
    if prealloc == 0 {
        return end;
    }
    let aligned = (end - 1) & !(XFS_ALLOCSIZE_PAGES - 1);
    (aligned + prealloc).max(end)
}

/// The pages of the folio a buffered write copies next at `pos` when its
/// piece of mapping ends at `piece_end` (`iomap_write_iter`: at most to the
/// next `max_folio` boundary; `__filemap_get_folio` with
/// `fgf_set_order(len)`: the largest power of two in the length, cut to the
/// index's alignment).
pub fn iomap_folio_pages(pos: u64, piece_end: u64, max_folio: u64) -> u64 {
    let len = (piece_end - pos).min(max_folio - pos % max_folio);
    let mut f = 1u64 << len.max(1).ilog2();
    if pos != 0 {
        f = f.min(1 << pos.trailing_zeros());
    }
    f
}

impl Kernel {
    /// A sequential writer of `bs` pages at `pos` in XFS file `ino` (its
    /// writes start at multiples of `bs`; `limit`: the file's last page):
    /// the delalloc reservation it reaches is made, and if the write at
    /// `pos` crosses a reservation's end, the pages of its next folio.
    /// None: the write maps in one piece (whole folios of the writer's
    /// unit). `max_folio` is the mapping's largest folio.
    pub fn xfs_write_folio(
        &mut self,
        ino: InodeId,
        pos: u64,
        bs: u64,
        limit: u64,
        max_folio: u64,
    ) -> Option<u64> {
        let sb = self.inodes[ino].sb as usize;
        let isize = self.inodes[ino].nr_pages_span;
        let write_start = pos - pos % bs;
        let write_end = (write_start + bs).min(limit);
        let x = self.sbs[sb].xfs_mut();
        let (mut end, mut len) = x.delalloc.get(&ino).copied().unwrap_or((0, 0));
        if pos >= end {
            let prealloc = xfs_prealloc_pages(isize, pos, end, len);
            let new_end = xfs_reservation_end(pos, write_end - pos, prealloc);
            (end, len) = (new_end, new_end - pos);
            x.delalloc.insert(ino, (end, len));
        }
        if write_start < end && end < write_end {
            let piece_end = if pos < end { end } else { write_end };
            return Some(iomap_folio_pages(pos, piece_end, max_folio));
        }
        if pos != write_start {
            // past the split in the write's second piece
            return Some(iomap_folio_pages(pos, write_end, max_folio));
        }
        None
    }

    /// The end (pages) of XFS file `ino`'s delalloc reservation.
    pub fn xfs_delalloc_end(&mut self, ino: InodeId) -> u64 {
        let sb = self.inodes[ino].sb as usize;
        self.sbs[sb]
            .xfs_mut()
            .delalloc
            .get(&ino)
            .map_or(0, |&(e, _)| e)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A file written in 1 MiB blocks from empty, as the host rig's xfs
    /// trace shows it (`xfs_iomap_alloc` startoff/fsbcount and
    /// `xfs_iomap_prealloc_size`): the first write reserves itself, the
    /// second 512 blocks beyond, and each next reservation doubles, ending
    /// 64 KiB short of 4, 8, 16, 32, ... MiB.
    #[test]
    fn speculative_preallocation_doubles_to_64k_short_of_a_power_of_two() {
        let (mut end, mut len) = (0u64, 0u64);
        let mut got = Vec::new();
        // each reservation is made by the write (or its second piece) that
        // reaches the previous end; the file's size is that end
        let mut pos = 0;
        for _ in 0..8 {
            let write_end = (pos / 256 + 1) * 256;
            let prealloc = xfs_prealloc_pages(pos, pos, end, len);
            let e = xfs_reservation_end(pos, write_end - pos, prealloc);
            got.push((pos, e - pos, prealloc));
            (end, len) = (e, e - pos);
            pos = end;
        }
        assert_eq!(
            got,
            vec![
                (0, 0x100, 0),
                (0x100, 0x2f0, 512),
                (0x3f0, 0x400, 1024),
                (0x7f0, 0x800, 2048),
                (0xff0, 0x1000, 4096),
                (0x1ff0, 0x2000, 8192),
                (0x3ff0, 0x4000, 16384),
                (0x7ff0, 0x8000, 32768),
            ]
        );
        // after a hole, or under allocsize, the minimum
        assert_eq!(xfs_prealloc_pages(4096, 5000, 4080, 2048), 16);
        assert_eq!(xfs_prealloc_pages(8, 8, 8, 8), 0);
        // at the longest extent the offset takes over, capped
        let big = xfs_prealloc_pages(1 << 22, 1 << 22, 1 << 22, 1 << 21);
        assert_eq!(big, XFS_MAX_BMBT_EXTLEN);
    }

    /// The write at 3 MiB - 1 MiB.. crossing the end at 4 MiB - 64 KiB:
    /// folios of 128, 64, 32 and 16 pages to the end, then 16 in the new
    /// reservation, as the kernel's balance_dirty_pages lines count them.
    #[test]
    fn a_write_across_a_reservation_end_goes_folio_by_folio() {
        let mut pos = 768;
        let mut folios = Vec::new();
        while pos < 1008 {
            let f = iomap_folio_pages(pos, 1008, 512);
            folios.push(f);
            pos += f;
        }
        folios.push(iomap_folio_pages(pos, 1024, 512));
        assert_eq!(folios, vec![128, 64, 32, 16, 16]);
        // an aligned 1 MiB write inside a reservation is one folio
        assert_eq!(iomap_folio_pages(1024, 1280, 512), 256);
        // and a 2 MiB one in a 2 MiB mapping
        assert_eq!(iomap_folio_pages(1024, 1536, 512), 512);
    }
}
