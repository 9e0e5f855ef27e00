//! Writing an inode's dirty pages: the walk over them in rounds
//! (`write_cache_pages` / `writeback_iter`, range_cyclic), the building of
//! bios from physically contiguous blocks that each filesystem's
//! ->writepages uses, and the block device's own ->writepages
//! (block/fops.c `blkdev_writepages`) for ext4's metadata buffers.

use crate::block::Bio;
use crate::fs::ext4::IoEndId;
use crate::kernel::{InodeId, Kernel, Pid};

/// A bio of page-cache pages: (first page, first sector, pages).
pub type PageBio = (u64, u64, u64);

impl Kernel {
    /// The next run of dirty pages of `ino` one round of ->writepages takes,
    /// starting at `cursor`, at most `max` pages and at most the
    /// filesystem's round. After the wrap (`cycled`) the walk stops before
    /// `start_index`, where this call began.
    pub fn writeback_next_run(
        &mut self,
        ino: InodeId,
        cursor: u64,
        max: u64,
        cycled: bool,
        start_index: u64,
    ) -> Option<(u64, u64)> {
        let round = self.fs_writepages_max_pages(ino);
        let inode = &mut self.inodes[ino];
        let first = inode.dirty.next_at_or_after(cursor)?;
        if cycled && start_index != 0 && first >= start_index {
            return None;
        }
        let mut lim = max.min(round);
        if cycled && start_index != 0 {
            lim = lim.min(start_index - first);
        }
        inode.dirty.take_from(first, lim)
    }

    /// Sectors per bio segment for `ino`'s data: a page-cache folio, at
    /// most `max_segment_size` (BLK_MAX_SEGMENT_SIZE, 64 KiB).
    pub fn folio_seg_sectors(&self, ino: InodeId) -> u64 {
        let folio = self.sbs[self.inodes[ino].sb as usize].max_folio_pages * self.page_size();
        folio.min(64 << 10) / 512
    }

    /// Map `[start, start + n)` of `ino` piece by piece with the
    /// filesystem's `map` (page → first sector and the pages that follow
    /// it contiguously) and hand each physically contiguous run to
    /// `submit` as one bio. Returns true if a submission must wait for a
    /// tag.
    pub fn writepages_contiguous(
        &mut self,
        ino: InodeId,
        start: u64,
        n: u64,
        map: fn(&mut Kernel, InodeId, u64, u64) -> (u64, u64),
        mut submit: impl FnMut(&mut Kernel, PageBio) -> bool,
    ) -> bool {
        let spp = self.page_size() / 512;
        let mut must_wait = false;
        let end = start + n;
        // the bio being built: its first page, sector and pages
        let mut cur: Option<PageBio> = None;
        let mut p = start;
        while p < end {
            let (sector, run) = map(self, ino, p, end - p);
            match &mut cur {
                Some((_, s0, k)) if *s0 + *k * spp == sector => *k += run,
                _ => {
                    if let Some(b) = cur.take() {
                        must_wait |= submit(self, b);
                    }
                    cur = Some((p, sector, run));
                }
            }
            p += run;
        }
        if let Some(b) = cur {
            must_wait |= submit(self, b);
        }
        must_wait
    }

    /// Submit the bio of `pages` pages of `ino` from page `first`, at
    /// `sector` (`submit_bio` of a ->writepages bio), belonging to an ext4
    /// io_end or not. Returns true if `pid` must sleep for a tag.
    pub fn submit_page_bio(
        &mut self,
        pid: Pid,
        ino: InodeId,
        (first, sector, pages): PageBio,
        seg_sectors: u64,
        opf: u8,
        io_end: Option<IoEndId>,
    ) -> bool {
        let spp = self.page_size() / 512;
        let bio = Bio {
            dev: self.sbs[self.inodes[ino].sb as usize].dev,
            sector,
            nr_sectors: pages * spp,
            ino,
            page_start: first,
            npages: pages,
            submitter: pid,
            submit_time: self.now(),
            seg_sectors,
            parent: None,
            remaining: 0,
            opf,
            owner: crate::block::BioOwner::Page,
            io_end,
        };
        self.submit_bio(bio)
    }

    /// `blkdev_writepages` for the block device's inode (ext4's journalled
    /// metadata buffers, `bdev` set): a page's index is its block number,
    /// so a run is one bio of single-page segments, with REQ_META (buffer
    /// heads of metadata). Returns true if `pid` must sleep for a tag.
    pub fn blkdev_writepages(
        &mut self,
        pid: Pid,
        ino: InodeId,
        start: u64,
        n: u64,
        opf: u8,
    ) -> bool {
        let spp = self.page_size() / 512;
        let opf = opf | crate::block::blk_wbt::REQ_META;
        self.submit_page_bio(pid, ino, (start, start * spp, n), spp, opf, None)
    }
}
