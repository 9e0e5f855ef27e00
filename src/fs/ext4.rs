//! The ext4 model: delayed allocation and ->writepages (fs/ext4/inode.c
//! `ext4_writepages`, fs/ext4/page-io.c). Blocks are allocated when pages
//! are written back, from a preallocation of the file's own that covers a
//! window of its logical blocks (fs/ext4/mballoc.c, `mb_new_blocks` below).
//! ext4_writepages maps at most `MAX_WRITEPAGES_EXTENT_LEN` blocks per round
//! and submits what it mapped, so a bio covers a physically contiguous run
//! of up to 8 MiB that ends where the file's preallocation window does; the
//! block layer then splits it at `max_sectors_kb`.
//!
//! On the host rig (block_bio_queue on the loop device, last 20 s of 40 s
//! runs; docs/validation.md) 10 dd's data bios at bs=4k are 187/983/2022
//! pages at p10/p50/p90, cut where a file crosses an 8 MiB boundary of its
//! own; with whole-round bios of up to 2048 pages wbsim had 482/592/2048, and
//! completions came in coarser steps (dirty_ratelimit +6.8% over 8 seeds,
//! +2.5% with the windows). Average request against the dd matrix's kernel
//! medians: 10 dd bs=4k 1070 vs 1080 KiB, bs=1M 1102 vs 1135; 1 dd bs=4k
//! 1127 vs 1080.

use crate::block::Bio;
use crate::fs::InodePa;
use crate::kernel::{InodeId, Kernel, Pid};

pub type IoEndId = usize;

/// `ext4_io_end_t` under dioread_nolock (ext4's default since 5.6): one per
/// round of ext4_writepages (`mpd->io_submit.io_end`), shared by every bio
/// the round submits (`bio->bi_private`). It holds the round's reserved
/// journal handle (`h_rsv_handle`, `rsv` credits). `ext4_end_bio` parks a
/// finished bio on its io_end; when the last reference goes, the reserved
/// handle converts the round's unwritten extents (`ext4_end_io_rsv_work`)
/// and only then do the pages of all its bios end writeback
/// (`ext4_release_io_end` -> `ext4_finish_bio`). So completions come in
/// whole rounds, and a round's credits stay reserved until its last bio is
/// done.
#[derive(Debug)]
pub struct IoEnd {
    pub ino: InodeId,
    pub rsv: u32,
    /// References: the submitter's while it builds the round, plus one per
    /// bio in flight (`io_end->count`).
    pub count: u32,
    /// Pages of the round's finished bios, waiting for the conversion.
    pub pages: u64,
}

/// `MAX_WRITEPAGES_EXTENT_LEN` (fs/ext4/inode.c): blocks mapped per round
/// of ext4_writepages, 2048 4 KiB blocks = 8 MiB.
pub const EXT4_MAX_BIO_PAGES: u64 = 2048;
/// mballoc's stream threshold (`s_mb_stream_request`, 16 blocks): smaller
/// files allocate from the shared locality-group preallocation, so
/// consecutive small files are adjacent; larger files get preallocations of
/// their own.
pub const MB_STREAM_PAGES: u64 = 16;
/// The largest normalized request (`ext4_mb_normalize_request`): 8 MiB.
pub const MB_MAX_PA_PAGES: u64 = 2048;

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
    /// submit bios for the physically contiguous pieces (`io_submit_add_bh`
    /// keeps adding to one bio while the next block follows the last).
    /// Returns true if the submitter must sleep for a tag.
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
        // dioread_nolock: the round's io_end and reserved handle
        let io_end = (!bdev).then(|| self.ext4_init_io_end(ino)).flatten();
        let mut must_wait = false;
        let end = start + n;
        // the bio being built: its first page, sector and pages
        let mut cur: Option<(u64, u64, u64)> = None;
        let mut p = start;
        while p < end {
            let (sector, run) = self.ext4_map_blocks(ino, p, end - p);
            match &mut cur {
                Some((_, s0, k)) if *s0 + *k * spp == sector => *k += run,
                _ => {
                    if let Some(b) = cur.take() {
                        must_wait |= self.ext4_submit_bio(pid, ino, b, seg_sectors, opf, io_end);
                    }
                    cur = Some((p, sector, run));
                }
            }
            p += run;
        }
        if let Some(b) = cur {
            must_wait |= self.ext4_submit_bio(pid, ino, b, seg_sectors, opf, io_end);
        }
        // ext4_put_io_end_defer: the submitter's reference
        if let Some(io) = io_end {
            self.ext4_put_io_end(io);
        }
        must_wait
    }

    /// `ext4_init_io_end` with the round's reserved handle, if the
    /// filesystem reserves credits for writeback (dioread_nolock); None
    /// otherwise (bios then end their pages' writeback themselves).
    fn ext4_init_io_end(&mut self, ino: InodeId) -> Option<IoEndId> {
        let rsv = self.ext4_reserve_io(ino);
        if rsv == 0 {
            return None;
        }
        let io = IoEnd {
            ino,
            rsv,
            count: 1,
            pages: 0,
        };
        Some(crate::sim::slot_insert(
            &mut self.io_ends,
            &mut self.free_io_ends,
            io,
        ))
    }

    /// `ext4_end_bio` for a bio of an io_end: its pages wait for the
    /// io_end's conversion.
    pub fn ext4_io_end_bio_done(&mut self, id: IoEndId, pages: u64) {
        self.io_ends[id].as_mut().expect("io_end").pages += pages;
        self.ext4_put_io_end(id);
    }

    /// `ext4_put_io_end_defer`: drop a reference; the last one converts the
    /// round's extents with its reserved handle and ends writeback for the
    /// pages of all its bios.
    fn ext4_put_io_end(&mut self, id: IoEndId) {
        let io = self.io_ends[id].as_mut().expect("io_end");
        io.count -= 1;
        if io.count > 0 {
            return;
        }
        let io = self.io_ends[id].take().expect("io_end");
        self.free_io_ends.push(id);
        self.ext4_end_io_conversion(io.ino, u64::from(io.rsv));
        if io.pages > 0 {
            self.end_writeback_range(io.ino, io.pages);
        }
    }

    /// `ext4_io_submit`: submit the bio of `pages` pages of `ino` from page
    /// `first`, at `sector`.
    fn ext4_submit_bio(
        &mut self,
        pid: Pid,
        ino: InodeId,
        (first, sector, pages): (u64, u64, u64),
        seg_sectors: u64,
        opf: u8,
        io_end: Option<IoEndId>,
    ) -> bool {
        let spp = self.page_size() / 512;
        if let Some(io) = io_end {
            self.io_ends[io].as_mut().expect("io_end").count += 1;
        }
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
        // allocate, then extend the last extent if the blocks continue it
        let (sb, ag) = (inode.sb as usize, inode.ag as usize);
        let span = inode.nr_pages_span.max(p + max);
        let (cursor, got) = self.mb_new_blocks(sb, ag, ino, span, p, max);
        let inode = &mut self.inodes[ino];
        match inode.extents.last_mut() {
            Some((ps, len, sec)) if *ps + *len == p && *sec + *len * spp == cursor => *len += got,
            _ => inode.extents.push((p, got, cursor)),
        }
        self.ext4_alloc_meta(ino);
        self.xfs_alloc_meta(ino);
        (cursor, got)
    }

    /// `ext4_mb_new_blocks`: blocks for the `n` pages from page `p` of a
    /// file spanning `span` pages. Returns the first sector and how many of
    /// the `n` pages got blocks there (the rest take another call).
    ///
    /// A small file takes the next blocks of its group (the locality group's
    /// preallocation: small files written one after another are adjacent).
    /// A larger file allocates from a preallocation of its own
    /// (`ext4_mb_use_inode_pa`), which covers a window of the file's logical
    /// blocks: `ext4_mb_normalize_request` sizes it by the file's size (a
    /// power of two up to 1 MiB from offset 0; then 2, 4 and past 8 MiB
    /// 8 MiB, aligned to that size in the file) and trims it to start at the
    /// request (the blocks to its left are allocated). A request that runs
    /// past the window's end gets the blocks up to it, so a writeback round
    /// crossing an 8 MiB boundary of the file ends one bio there and starts
    /// another wherever the next preallocation lands. So growing files
    /// written side by side (many dd) keep to their own regions and their
    /// bios do not merge with each other's, as on the rig (1000 dd at
    /// bs=4k: 236 KiB requests), and 10 dd's bios are cut where their
    /// files cross 8 MiB boundaries, as the rig's are (docs/validation.md).
    ///
    /// XFS keeps the simpler rule: a preallocation of the file's size
    /// rounded up to a power of two (16 pages to 8 MiB) at the request,
    /// replaced when a request does not fit.
    fn mb_new_blocks(
        &mut self,
        sb: usize,
        ag: usize,
        ino: InodeId,
        span: u64,
        p: u64,
        n: u64,
    ) -> (u64, u64) {
        let spp = self.page_size() / 512;
        let ps = self.page_size();
        let s = &mut self.sbs[sb];
        if span < MB_STREAM_PAGES {
            let at = s.ag_cursor[ag];
            s.ag_cursor[ag] += n * spp;
            return (at, n);
        }
        if s.kind == crate::scenario::FsKind::Xfs {
            if let Some(pa) = s.inode_pa.get_mut(&ino) {
                if pa.lstart + n <= pa.lend {
                    let at = pa.sector;
                    pa.lstart += n;
                    pa.sector += n * spp;
                    return (at, n);
                }
            }
            let size = span
                .next_power_of_two()
                .clamp(MB_STREAM_PAGES, MB_MAX_PA_PAGES)
                .max(n);
            let at = s.ag_cursor[ag];
            s.ag_cursor[ag] += size * spp;
            let pa = InodePa {
                lstart: p + n,
                lend: p + size,
                sector: at + n * spp,
            };
            s.inode_pa.insert(ino, pa);
            return (at, n);
        }
        if let Some(pa) = s.inode_pa.get(&ino) {
            if pa.lstart <= p && p < pa.lend {
                return (pa.sector + (p - pa.lstart) * spp, n.min(pa.lend - p));
            }
        }
        let (start, window) = ext4_normalize_window(span, p, ps);
        let lstart = start.max(p);
        let lend = start + window;
        let at = s.ag_cursor[ag];
        s.ag_cursor[ag] += (lend - lstart) * spp;
        s.inode_pa.insert(
            ino,
            InodePa {
                lstart,
                lend,
                sector: at,
            },
        );
        (at, n.min(lend - p))
    }
}

/// `ext4_mb_normalize_request`'s window for a request at page `p` of a
/// file of `span` pages (4 KiB blocks; `ps` bytes a page): its first page
/// and length in pages. Up to 1 MiB the window is the file's size rounded
/// up to a power of two (at least 16 KiB) from offset 0; up to 4 MiB it is
/// 2 MiB, up to 8 MiB 4 MiB, and past that 8 MiB, each aligned to its size.
fn ext4_normalize_window(span: u64, p: u64, ps: u64) -> (u64, u64) {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;
    let bytes = span * ps;
    let pages = |b: u64| (b / ps).max(1);
    let (start, w) = if bytes <= MIB {
        (0, pages(bytes.next_power_of_two().max(16 * KIB)))
    } else {
        let w = pages(match bytes {
            b if b <= 4 * MIB => 2 * MIB,
            b if b <= 8 * MIB => 4 * MIB,
            _ => 8 * MIB,
        });
        (p / w * w, w)
    };
    debug_assert!(p < start + w, "the window holds the request");
    (start, w)
}

#[cfg(test)]
mod tests {
    use crate::kernel::Kernel;
    use crate::scenario::Scenario;

    fn machine() -> Kernel {
        let toml = "[devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n[filesystems.f]\ndevice = \"loop0\"\n[jobs.dd]\nbs = \"1M\"\n";
        let sc = Scenario::load_str(toml, "t.toml", "t", &[]).unwrap();
        Kernel::new(sc, crate::trace::Tracer::disabled())
    }

    /// Two growing files allocated in turn (a flusher pass over two dd's
    /// files) each keep to their own preallocation: their blocks are not
    /// adjacent, so their bios cannot merge. Small files (under the
    /// 16-block stream threshold) written in turn are adjacent.
    #[test]
    fn growing_files_get_their_own_preallocation_small_ones_share() {
        let mut k = machine();
        let (a, b) = (k.create_inode(0), k.create_inode(0));
        for ino in [a, b] {
            k.inodes[ino].nr_pages_span = 100; // 400 KiB files
        }
        let (sa, na) = k.ext4_map_blocks(a, 0, 50);
        let (sb, _) = k.ext4_map_blocks(b, 0, 50);
        let (sa2, _) = k.ext4_map_blocks(a, 50, 50);
        assert_eq!(na, 50);
        // a continues in its own 128-page preallocation, b starts after it
        assert_eq!(sa2, sa + 50 * 8, "a's second half follows its first");
        assert_eq!(sb, sa + 128 * 8, "b starts past a's preallocation");
        assert_eq!(
            k.inodes[a].extents.as_slice().len(),
            1,
            "a stays one extent"
        );
        // 4 KiB files written one after another are adjacent
        let (c, d) = (k.create_inode(0), k.create_inode(0));
        for ino in [c, d] {
            k.inodes[ino].nr_pages_span = 1;
        }
        let (sc, _) = k.ext4_map_blocks(c, 0, 1);
        let (sd, _) = k.ext4_map_blocks(d, 0, 1);
        assert_eq!(sd, sc + 8);
    }

    /// ext4_mb_normalize_request's table, worked by hand (4 KiB pages):
    /// up to 1 MiB a power of two from offset 0 (at least 16 KiB); then
    /// 2 MiB windows up to 4 MiB, 4 MiB up to 8 MiB and 8 MiB past that,
    /// each aligned to its size in the file.
    #[test]
    fn preallocation_windows_follow_the_file_size() {
        use super::ext4_normalize_window as w;
        let ps = 4096;
        assert_eq!(w(3, 0, ps), (0, 4)); // 12 KiB -> 16 KiB
        assert_eq!(w(100, 40, ps), (0, 128)); // 400 KiB -> 512 KiB
        assert_eq!(w(256, 200, ps), (0, 256)); // exactly 1 MiB
        assert_eq!(w(300, 257, ps), (0, 512)); // 1.2 MiB: 2 MiB windows
        assert_eq!(w(1000, 700, ps), (512, 512));
        assert_eq!(w(1500, 1100, ps), (1024, 1024)); // 6 MiB: 4 MiB windows
        assert_eq!(w(5000, 4100, ps), (4096, 2048)); // 8 MiB windows
        assert_eq!(w(5000, 6143, ps), (4096, 2048));
        // 16 KiB pages: the same byte sizes, fewer pages
        assert_eq!(w(1000, 700, 16384), (512, 512)); // 15.6 MiB
    }

    /// A growing file's preallocation covers its current 8 MiB window of
    /// logical blocks; a request running past the window's end gets the
    /// blocks up to it (ext4_mb_use_inode_pa), and the rest comes from the
    /// next window's preallocation, which another file's allocation in
    /// between puts elsewhere.
    #[test]
    fn a_request_stops_at_the_end_of_its_preallocation_window() {
        let mut k = machine();
        let (a, b) = (k.create_inode(0), k.create_inode(0));
        k.inodes[a].nr_pages_span = 10_000;
        k.inodes[b].nr_pages_span = 10_000;
        let (s0, n0) = k.ext4_map_blocks(a, 2048, 1500);
        assert_eq!(n0, 1500, "inside the window [2048, 4096)");
        let (sb, _) = k.ext4_map_blocks(b, 0, 100);
        assert_eq!(sb, s0 + 2048 * 8, "b's window comes after a's whole window");
        let (s1, n1) = k.ext4_map_blocks(a, 3548, 2048);
        assert_eq!((s1, n1), (s0 + 1500 * 8, 548), "the rest of a's window");
        let (s2, n2) = k.ext4_map_blocks(a, 4096, 1500);
        assert_eq!(n2, 1500);
        assert_eq!(s2, sb + 2048 * 8, "a's next window comes after b's");
    }

    /// Two files of 10,000 pages whose pages are dirty, ready to be put
    /// under writeback (the throttle may pass and complete a bio at once).
    fn two_growing_files() -> (Kernel, crate::kernel::InodeId, crate::kernel::InodeId) {
        let mut k = machine();
        let (a, b) = (k.create_inode(0), k.create_inode(0));
        k.inodes[a].nr_pages_span = 10_000;
        k.inodes[b].nr_pages_span = 10_000;
        k.vm.nr_dirty = 10_000;
        let wb = k.inodes[a].wb;
        k.wbs[wb].reclaimable = 10_000;
        (k, a, b)
    }

    /// `ext4_submit_pages` makes one bio of physically contiguous pieces and
    /// starts a new one where the blocks jump: one file alone gets one bio
    /// across a window boundary, two files allocating in turn get two.
    #[test]
    fn a_bio_ends_where_the_blocks_jump() {
        let (mut k, a, b) = two_growing_files();
        let write = |k: &mut Kernel, ino, start, n| {
            k.start_writeback_range(ino, n);
            k.ext4_submit_pages(0, ino, start, n, 0);
            k.devs[0].stat.bios_submitted
        };
        assert_eq!(write(&mut k, a, 0, 1000), 1);
        // [1000, 3048) crosses a's window end at 2048; nothing else was
        // allocated, so the next window follows on disk: still one bio
        assert_eq!(write(&mut k, a, 1000, 2048), 2);
        assert_eq!(k.inodes[a].extents.as_slice().len(), 1);
        // b allocates, then a crosses its next window end: two bios
        assert_eq!(write(&mut k, b, 0, 100), 3);
        let n = write(&mut k, a, 3048, 2048);
        assert_eq!(n, 5, "1048 pages to the window end, then 1000");
    }

    /// Under dioread_nolock a round of ext4_writepages is one io_end: the
    /// two bios of a round that crosses a window end share one reserved
    /// handle, and the pages of both end writeback together, when the last
    /// of them completes (ext4_end_bio -> ext4_release_io_end).
    #[test]
    fn a_round_is_one_io_end_whose_pages_end_writeback_together() {
        let (mut k, a, b) = two_growing_files();
        let sb = k.inodes[a].sb as usize;
        let reserved = |k: &Kernel| k.sbs[sb].ext4.as_ref().unwrap().journal.reserved;
        let rsv = k.sbs[sb].ext4.as_ref().unwrap().journal.rsv_per_handle;
        assert!(rsv > 0, "the io-less policy models dioread_nolock");
        // a's first pages, then b's, then a round of a across the end of
        // its first window: the next window was allocated after b's
        for (ino, start, n) in [(a, 0, 1000), (b, 0, 100)] {
            k.start_writeback_range(ino, n);
            k.ext4_submit_pages(0, ino, start, n, 0);
        }
        let before = k.devs[0].stat.bios_submitted;
        let (in_flight, r0) = (k.io_ends.iter().flatten().count(), reserved(&k));
        k.start_writeback_range(a, 2048);
        k.ext4_submit_pages(0, a, 1000, 2048, 0);
        assert_eq!(k.devs[0].stat.bios_submitted - before, 2, "two bios");
        assert_eq!(reserved(&k), r0 + rsv, "one reservation per round");
        assert_eq!(k.io_ends.iter().flatten().count(), in_flight + 1);
        let id = k.io_ends.iter().rposition(|io| io.is_some()).unwrap();
        let io = k.io_ends[id].as_ref().unwrap();
        assert_eq!(
            (io.ino, io.count, io.pages),
            (a, 2, 0),
            "the submitter's reference is gone, one per bio is left"
        );
        // the first bio completes: its pages wait for the other
        let wb_pages = k.inodes[a].nr_writeback;
        k.ext4_io_end_bio_done(id, 1048);
        assert_eq!(k.inodes[a].nr_writeback, wb_pages);
        assert_eq!(reserved(&k), r0 + rsv);
        // the last one: conversion, credits back, all 2048 pages done
        k.ext4_io_end_bio_done(id, 1000);
        assert_eq!(k.inodes[a].nr_writeback, wb_pages - 2048);
        assert_eq!(reserved(&k), r0);
        assert!(k.io_ends[id].is_none());
    }
}
