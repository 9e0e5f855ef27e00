//! The ext4 model: delayed allocation and ->writepages (fs/ext4/inode.c
//! `ext4_writepages`, fs/ext4/page-io.c). Blocks are allocated when pages
//! are written back, next to the inode's previous extent when possible (a
//! simplified mballoc goal). ext4_writepages maps at most
//! `MAX_WRITEPAGES_EXTENT_LEN` blocks per round and submits what it mapped,
//! so a bio covers a physically contiguous run of up to 8 MiB; the block
//! layer then splits it at `max_sectors_kb`. On the host rig this predicts the
//! measured average request size (10 dd: 1138 vs 1133 KiB measured; 1 dd:
//! 1147 vs 1151 KiB).

use crate::block::Bio;
use crate::kernel::{InodeId, Kernel, Pid};

/// `MAX_WRITEPAGES_EXTENT_LEN` (fs/ext4/inode.c): blocks mapped per round
/// of ext4_writepages, 2048 4 KiB blocks = 8 MiB.
pub const EXT4_MAX_BIO_PAGES: u64 = 2048;

impl Kernel {
    /// The next run of dirty pages ext4_writepages would put in one bio,
    /// starting at `cursor`. After the wrap (`cycled`) the walk stops before
    /// `start_index`, where this call began.
    pub fn ext4_next_run(
        &mut self,
        ino: InodeId,
        cursor: u64,
        max: u64,
        cycled: bool,
        start_index: u64,
    ) -> Option<(u64, u64)> {
        let inode = &mut self.inodes[ino];
        let first = inode.dirty.next_at_or_after(cursor)?;
        if cycled && start_index != 0 && first >= start_index {
            return None;
        }
        let mut lim = max.min(EXT4_MAX_BIO_PAGES);
        if cycled && start_index != 0 {
            lim = lim.min(start_index - first);
        }
        inode.dirty.take_from(first, lim)
    }

    /// Map `[start, start + n)` to disk blocks (allocating as needed) and
    /// submit bios for the physically contiguous pieces. Returns true if the
    /// submitter must sleep for a tag.
    pub fn ext4_submit_pages(
        &mut self,
        pid: Pid,
        ino: InodeId,
        start: u64,
        n: u64,
        opf: u8,
    ) -> bool {
        let spp = self.page_size() / 512;
        // a segment is a folio, at most max_segment_size (64 KiB); the
        // block device's metadata buffers are single pages
        let folio = self.sbs[self.inodes[ino].sb as usize].max_folio_pages * self.page_size();
        let bdev = self.inodes[ino].bdev;
        let seg_sectors = if bdev { spp } else { folio.min(64 << 10) / 512 };
        // buffer heads of metadata are submitted with REQ_META
        let opf = if bdev {
            opf | crate::block::blk_wbt::REQ_META
        } else {
            opf
        };
        let mut must_wait = false;
        let mut p = start;
        let end = start + n;
        while p < end {
            let (sector, run) = self.ext4_map_blocks(ino, p, end - p);
            let dev = self.sbs[self.inodes[ino].sb as usize].dev;
            let bio = Bio {
                dev,
                sector,
                nr_sectors: run * spp,
                ino,
                page_start: p,
                npages: run,
                submitter: pid,
                submit_time: self.now(),
                seg_sectors,
                parent: None,
                remaining: 0,
                opf,
                owner: crate::block::BioOwner::Page,
                rsv: self.ext4_reserve_io(ino),
            };
            must_wait |= self.submit_bio(bio);
            p += run;
        }
        must_wait
    }

    /// `ext4_map_blocks`: the sector of page `p` and how many following pages
    /// are physically contiguous (allocating delalloc blocks on the way).
    fn ext4_map_blocks(&mut self, ino: InodeId, p: u64, max: u64) -> (u64, u64) {
        let spp = self.page_size() / 512;
        let inode = &self.inodes[ino];
        if inode.bdev {
            return (p * spp, max);
        }
        for &(ps, len, sec) in inode.extents.as_slice().iter().rev() {
            if p >= ps && p < ps + len {
                return (sec + (p - ps) * spp, (ps + len - p).min(max));
            }
        }
        // allocate: extend the last extent if it ends where the allocator is
        let (sb, ag) = (inode.sb as usize, inode.ag as usize);
        let cursor = self.sbs[sb].ag_cursor[ag];
        self.sbs[sb].ag_cursor[ag] += max * spp;
        let inode = &mut self.inodes[ino];
        match inode.extents.last_mut() {
            Some((ps, len, sec)) if *ps + *len == p && *sec + *len * spp == cursor => *len += max,
            _ => inode.extents.push((p, max, cursor)),
        }
        self.ext4_alloc_meta(ino);
        self.xfs_alloc_meta(ino);
        (cursor, max)
    }
}
