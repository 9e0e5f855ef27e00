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
        // allocate, then extend the last extent if the blocks continue it
        let (sb, ag) = (inode.sb as usize, inode.ag as usize);
        let span = inode.nr_pages_span.max(p + max);
        let cursor = self.mb_new_blocks(sb, ag, ino, span, max);
        let inode = &mut self.inodes[ino];
        match inode.extents.last_mut() {
            Some((ps, len, sec)) if *ps + *len == p && *sec + *len * spp == cursor => *len += max,
            _ => inode.extents.push((p, max, cursor)),
        }
        self.ext4_alloc_meta(ino);
        self.xfs_alloc_meta(ino);
        (cursor, max)
    }

    /// `ext4_mb_new_blocks`: `n` pages for a file spanning `span` pages.
    /// A small file takes the next blocks of its group (the locality group's
    /// preallocation: small files written one after another are adjacent).
    /// A larger file takes them from its own preallocation, which a new one
    /// replaces when it runs out: the request normalized to the next power of
    /// two of the file's size, at most 8 MiB (`ext4_mb_normalize_request`,
    /// `ext4_mb_use_inode_pa`). So growing files written side by side (many
    /// dd) keep to their own regions and their bios do not merge with each
    /// other's, as on the rig (1000 dd at bs=4k: 236 KiB requests).
    fn mb_new_blocks(&mut self, sb: usize, ag: usize, ino: InodeId, span: u64, n: u64) -> u64 {
        let spp = self.page_size() / 512;
        let s = &mut self.sbs[sb];
        if span < MB_STREAM_PAGES {
            let at = s.ag_cursor[ag];
            s.ag_cursor[ag] += n * spp;
            return at;
        }
        if let Some(pa) = s.inode_pa.get_mut(&ino) {
            if pa.0 + n * spp <= pa.1 {
                let at = pa.0;
                pa.0 += n * spp;
                return at;
            }
        }
        let size = span
            .next_power_of_two()
            .clamp(MB_STREAM_PAGES, MB_MAX_PA_PAGES)
            .max(n);
        let at = s.ag_cursor[ag];
        s.ag_cursor[ag] += size * spp;
        s.inode_pa.insert(ino, (at + n * spp, at + size * spp));
        at
    }
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
}
