//! Writing an inode's dirty pages: `do_writepages` (mm/page-writeback.c)
//! with the walk over them in rounds (`write_cache_pages` /
//! `writeback_iter`, range_cyclic), each round handed to the filesystem's
//! ->writepages; the building of bios from physically contiguous blocks
//! that each filesystem's ->writepages uses; and the block device's own
//! ->writepages (block/fops.c `blkdev_writepages`) for ext4's metadata
//! buffers.
//!
//! `do_writepages` runs in the flusher's CPU bursts: it takes rounds of
//! dirty pages (putting them under writeback) while the burst lasts and
//! submits them when it is over, so that the flusher's CPU time passes
//! before its bios reach the block layer.

use crate::block::Bio;
use crate::fs::ext4::IoEndId;
use crate::fs::fs_writeback::PassStep;
use crate::kernel::{InodeId, Kernel, Pid};
use crate::sim::Ns;

/// The CPU time of one burst of the flusher's bio building: small bios are
/// built several to a burst; nothing sleeps in between, so the plug sees
/// the same sequence. Not a kernel constant: wbsim's grain (with it seed
/// 002 simulates 0.77M events instead of 2.0M, its figures unchanged to
/// 0.1%).
const BURST: Ns = 50_000;

/// `struct writeback_control` of one inode's ->writepages, with where its
/// walk is and the rounds taken in the current burst.
#[derive(Debug)]
pub struct Writepages {
    pub ino: InodeId,
    /// ->writepages' own plug (ext4_do_writepages'; a no-op under the
    /// flusher's).
    plug: bool,
    /// Pages it may write (`writeback_chunk_size`), and what is left of
    /// them (`nr_to_write`).
    pub chunk: i64,
    pub nr_to_write: i64,
    /// range_cyclic: where this call started (the inode's
    /// `writeback_index`), where the walk is, and whether it has wrapped
    /// to page 0.
    start_index: u64,
    cursor: u64,
    cycled: bool,
    /// Rounds taken (first page, pages) and not yet submitted.
    runs: Vec<(u64, u64)>,
    /// The filesystem starts a transaction per round (ext4), and whether
    /// one is started for the next round: the caller starts the first
    /// (`fs_writepages_trans_start`), each later round its own.
    per_round: bool,
    handle: bool,
}

impl Writepages {
    /// The (empty) round buffer, for the next inode's.
    pub fn into_runs(self) -> Vec<(u64, u64)> {
        self.runs
    }
}

/// A bio of page-cache pages: (first page, first sector, pages).
pub type PageBio = (u64, u64, u64);

impl Kernel {
    /// `do_writepages` starts on `ino` with `chunk` pages to write, from
    /// its `writeback_index`, under ->writepages' plug; `runs` is an empty
    /// buffer.
    pub fn writepages_start(
        &mut self,
        pid: Pid,
        ino: InodeId,
        chunk: i64,
        runs: Vec<(u64, u64)>,
    ) -> Writepages {
        let idx = self.inodes[ino].writeback_index;
        let plug = self.blk_start_plug(pid);
        let per_round = self.fs_writepages_handle_per_round(ino);
        Writepages {
            per_round,
            handle: per_round,
            ino,
            plug,
            chunk,
            nr_to_write: chunk,
            start_index: idx,
            cursor: idx,
            cycled: idx == 0,
            runs,
        }
    }

    /// `do_writepages`, resumable: submit the rounds the last burst took,
    /// then take rounds of dirty pages until `burst` reaches `BURST`
    /// (`Cpu`: the burst passes, and the next call submits them) or the
    /// inode has no more to write, and submit those at once (a small
    /// file's CPU time goes with the burst of the inodes after it). `Done`
    /// at the end of ->writepages: its plug ends and `writeback_index`
    /// keeps where the walk stopped. `WaitTag` if a submission must wait
    /// for a tag.
    pub fn do_writepages(
        &mut self,
        pid: Pid,
        wp: &mut Writepages,
        burst: &mut Ns,
        opf: u8,
    ) -> PassStep {
        if self.writepages_submit(pid, wp, opf) {
            self.tasks[pid].owed_sys += *burst;
            return PassStep::WaitTag;
        }
        while wp.nr_to_write > 0 {
            // ext4_do_writepages: each round with an extent to map
            // (delalloc or unwritten blocks) starts its handle with
            // reserved credits first; a wait for them lets the rounds
            // already taken go (their CPU time, then their bios). Pages
            // with written blocks need none (its first pass, `do_map` 0).
            if wp.per_round && !wp.handle {
                let peek = self.writeback_peek_run(
                    wp.ino,
                    wp.cursor,
                    wp.nr_to_write as u64,
                    wp.cycled,
                    wp.start_index,
                );
                let needs = peek.is_some_and(|(s, n)| self.fs_writepages_round_maps(wp.ino, s, n));
                if needs && !self.fs_writepages_trans_start(pid, wp.ino) {
                    if *burst > 0 {
                        return PassStep::Cpu(*burst);
                    }
                    return PassStep::WaitTag;
                }
                wp.handle = needs;
            }
            let next = self.writeback_next_run(
                wp.ino,
                wp.cursor,
                wp.nr_to_write as u64,
                wp.cycled,
                wp.start_index,
            );
            match next {
                Some((start, n)) => {
                    if wp.per_round && self.fs_writepages_round_maps(wp.ino, start, n) {
                        wp.handle = false;
                    }
                    wp.cursor = start + n;
                    wp.nr_to_write -= n as i64;
                    self.start_writeback_range(wp.ino, n);
                    wp.runs.push((start, n));
                    let c = &self.sc.machine.cost;
                    *burst += n * c.writeback_per_page + c.bio_submit;
                    if *burst >= BURST {
                        return PassStep::Cpu(*burst);
                    }
                }
                // range_cyclic: wrap to page 0 once
                None if !wp.cycled => {
                    wp.cycled = true;
                    wp.cursor = 0;
                }
                None => break,
            }
        }
        if self.writepages_submit(pid, wp, opf) {
            self.tasks[pid].owed_sys += *burst;
            return PassStep::WaitTag;
        }
        if wp.per_round && wp.handle {
            wp.handle = false;
            self.fs_writepages_handle_stop(wp.ino);
        }
        self.blk_finish_plug(pid, wp.plug);
        self.inodes[wp.ino].writeback_index = wp.cursor;
        PassStep::Done
    }

    /// Submit the rounds taken, each through the filesystem's
    /// ->writepages. True if `pid` must sleep for a tag.
    fn writepages_submit(&mut self, pid: Pid, wp: &mut Writepages, opf: u8) -> bool {
        let mut wait = false;
        for (start, n) in wp.runs.drain(..) {
            wait |= self.fs_writepages(pid, wp.ino, start, n, opf);
        }
        wait
    }

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
        let (first, n) = self.writeback_peek_run(ino, cursor, max, cycled, start_index)?;
        self.inodes[ino].dirty.take_from(first, n)
    }

    /// The run `writeback_next_run` would take, left dirty.
    pub fn writeback_peek_run(
        &self,
        ino: InodeId,
        cursor: u64,
        max: u64,
        cycled: bool,
        start_index: u64,
    ) -> Option<(u64, u64)> {
        let round = self.fs_writepages_max_pages(ino);
        let inode = &self.inodes[ino];
        let first = inode.dirty.next_at_or_after(cursor)?;
        if cycled && start_index != 0 && first >= start_index {
            return None;
        }
        let mut lim = max.min(round);
        if cycled && start_index != 0 {
            lim = lim.min(start_index - first);
        }
        let end = inode.dirty.run_end(first)?.min(first + lim);
        Some((first, end - first))
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
    /// heads of metadata), less the pages whose buffers a running
    /// transaction took back (`jbd2_buffer_runs`), which end writeback
    /// without IO. Returns true if `pid` must sleep for a tag.
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
        let mut wait = false;
        for (s, k, dirty) in self.jbd2_buffer_runs(ino, start, n) {
            if dirty {
                wait |= self.submit_page_bio(pid, ino, (s, s * spp, k), spp, opf, None);
            } else {
                // no dirty buffer: the folio's writeback starts and ends
                // with no IO
                self.end_writeback_range(ino, k);
            }
        }
        wait
    }
}
