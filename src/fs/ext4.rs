//! The ext4 model: delayed allocation and ->writepages (fs/ext4/inode.c
//! `ext4_writepages`, fs/ext4/page-io.c). Blocks are allocated when pages
//! are written back, from a preallocation of the file's own that covers a
//! window of its logical blocks (fs/ext4/mballoc.c, `ext4_mb_new_blocks`
//! below).
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
//!
//! ext4's metadata (what a create and an allocation change, the reserved
//! credits) is in `ext4_meta`, its journal in `jbd2`.

use crate::fs::InodePa;
use crate::kernel::{InodeId, Kernel, Pid};
use std::collections::BTreeMap;

pub type IoEndId = usize;

/// ext4's state on a superblock (`struct ext4_sb_info`, as far as it is
/// modelled).
#[derive(Default)]
pub struct Ext4Sb {
    /// Per-inode preallocations of files past mballoc's stream threshold.
    pub inode_pa: BTreeMap<InodeId, InodePa>,
    /// io_ends in flight, and free slots.
    pub io_ends: Vec<Option<IoEnd>>,
    pub free_io_ends: Vec<IoEndId>,
    /// The metadata model and its journal (`filesystems.NAME.metadata`);
    /// None without.
    pub meta: Option<Box<crate::fs::ext4_meta::Ext4Meta>>,
    /// Pages of each inode whose blocks are unwritten extents (fallocate):
    /// writeback maps and converts them as it does delalloc blocks.
    pub unwritten: BTreeMap<InodeId, crate::mm::filemap::RangeSet>,
    /// Each inode's extent status tree's `cache_es`: the entry its last
    /// lookup found, as pages `[start, end)` (fs/ext4_es.rs).
    pub es_cache: BTreeMap<InodeId, (u64, u64)>,
    /// The extent trees of those inodes, as their conversions grow them.
    pub ext_trees: BTreeMap<InodeId, ExtTree>,
}

impl Ext4Sb {
    /// The metadata model (ext4's metadata code runs only with it).
    pub fn meta(&mut self) -> &mut crate::fs::ext4_meta::Ext4Meta {
        self.meta.as_mut().expect("ext4's metadata model")
    }
    /// The journal (`EXT4_SB(sb)->s_journal`).
    pub fn journal(&mut self) -> &mut crate::fs::jbd2::Journal {
        &mut self.meta().journal
    }
}

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
    /// The round's pages (first, pages): its extent, unwritten until the
    /// conversion.
    pub range: (u64, u64),
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

impl Kernel {
    /// One round of `ext4_do_writepages` (`mpage_map_and_submit_extent`):
    /// map `[start, start + n)` to disk blocks, allocating as needed, and
    /// submit bios for the physically contiguous pieces
    /// (`io_submit_add_bh` keeps adding to one bio while the next block
    /// follows the last), all of one io_end. Returns true if the submitter
    /// must sleep for a tag.
    pub fn ext4_writepages(&mut self, pid: Pid, ino: InodeId, start: u64, n: u64, opf: u8) -> bool {
        let seg_sectors = self.folio_seg_sectors(ino);
        // dioread_nolock: the round's io_end and reserved handle, if it
        // maps an extent
        let io_end = self.ext4_init_io_end(ino, start, n);
        let must_wait =
            self.writepages_contiguous(ino, start, n, Kernel::ext4_map_blocks, |k, b| {
                k.ext4_io_submit(pid, ino, b, seg_sectors, opf, io_end)
            });
        // ext4_put_io_end_defer: the submitter's reference
        if let Some(io) = io_end {
            self.ext4_put_io_end(ino, io);
        }
        must_wait
    }

    /// `ext4_init_io_end` with the round's reserved handle, if the
    /// filesystem reserves credits for writeback (dioread_nolock) and the
    /// round maps an extent (delalloc or unwritten blocks); None otherwise
    /// (bios then end their pages' writeback themselves: an io_end without
    /// `EXT4_IO_END_UNWRITTEN` is released at once, `ext4_put_io_end_defer`).
    fn ext4_init_io_end(&mut self, ino: InodeId, start: u64, n: u64) -> Option<IoEndId> {
        let rsv = self.ext4_io_end_rsv(ino);
        if rsv == 0 || !self.ext4_round_needs_map(ino, start, n) {
            return None;
        }
        let io = IoEnd {
            ino,
            rsv,
            range: (start, n),
            count: 1,
            pages: 0,
        };
        let e = self.sbs[self.inodes[ino].sb as usize].ext4_mut();
        Some(crate::sim::slot_insert(
            &mut e.io_ends,
            &mut e.free_io_ends,
            io,
        ))
    }

    /// `ext4_end_bio` for a bio of `ino`'s io_end `id`: its pages wait for
    /// the io_end's conversion.
    pub fn ext4_end_bio(&mut self, ino: InodeId, id: IoEndId, pages: u64) {
        let e = self.sbs[self.inodes[ino].sb as usize].ext4_mut();
        e.io_ends[id].as_mut().expect("io_end").pages += pages;
        self.ext4_put_io_end(ino, id);
    }

    /// `ext4_put_io_end_defer`: drop a reference; the last one converts the
    /// round's extents with its reserved handle and ends writeback for the
    /// pages of all its bios.
    fn ext4_put_io_end(&mut self, ino: InodeId, id: IoEndId) {
        let e = self.sbs[self.inodes[ino].sb as usize].ext4_mut();
        let io = e.io_ends[id].as_mut().expect("io_end");
        io.count -= 1;
        if io.count > 0 {
            return;
        }
        if self.jbd2_conversion_must_wait(ino, id) {
            return;
        }
        self.ext4_release_io_end(ino, id);
    }

    /// `ext4_end_io_rsv_work` → `ext4_release_io_end` for the io_end `id`
    /// whose last reference is gone: the conversion and the end of its
    /// pages' writeback.
    pub fn ext4_release_io_end(&mut self, ino: InodeId, id: IoEndId) {
        let e = self.sbs[self.inodes[ino].sb as usize].ext4_mut();
        let io = e.io_ends[id].take().expect("io_end");
        e.free_io_ends.push(id);
        // the conversion splits the unwritten extents in the tree's leaves
        let ch = self.ext4_ext_convert_io(io.ino, io.range.0, io.range.1);
        self.ext4_end_io_rsv_work(io.ino, u64::from(io.rsv));
        if let Some(ch) = ch {
            self.ext4_ext_log(io.ino, &ch);
        }
        if io.pages > 0 {
            self.end_writeback_range(io.ino, io.pages);
        }
    }

    /// Convert pages `[s, s + n)` of `ino` out of its unwritten extents,
    /// growing its extent tree (`ext4_ext_convert`); a new tree block takes
    /// the next free block of the file's group (`ext4_ext_new_meta_block`:
    /// mballoc from a goal in the file's blocks, which fallocate took, so
    /// the leaves of a file lie side by side in the order they were made,
    /// as on the rig).
    fn ext4_ext_convert_io(&mut self, ino: InodeId, s: u64, n: u64) -> Option<ExtChange> {
        let spp = self.page_size() / 512;
        let ag = self.inodes[ino].ag as usize;
        let sb = &mut self.sbs[self.inodes[ino].sb as usize];
        let mut cursor = sb.ag_cursor[ag];
        let e = sb.ext4_mut();
        let u = e.unwritten.get_mut(&ino)?;
        let t = e.ext_trees.entry(ino).or_default();
        let ch = ext4_ext_convert(t, u, s, n, || {
            cursor += spp;
            (cursor - spp) / spp
        });
        if u.is_empty() {
            e.unwritten.remove(&ino);
            e.ext_trees.remove(&ino);
        }
        sb.ag_cursor[ag] = cursor;
        ch
    }

    /// The conversion's handle logs the tree blocks it changed
    /// (`ext4_ext_dirty` on a leaf's buffer, once per transaction however
    /// many conversions edit it), and a new block's allocation (the inode,
    /// the group's bitmap and descriptor).
    fn ext4_ext_log(&mut self, ino: InodeId, ch: &ExtChange) {
        let sb = self.inodes[ino].sb as usize;
        for &b in &ch.blocks {
            self.jbd2_journal_dirty_metadata(sb, b);
        }
        if ch.new_blocks > 0 {
            self.ext4_alloc_meta(ino);
        }
    }

    /// `ext4_fallocate` (mode 0): pages `[s, e)` of `ino` have blocks in
    /// unwritten extents (`EXT4_GET_BLOCKS_CREATE_UNWRIT_EXT`).
    pub fn ext4_mark_unwritten(&mut self, ino: InodeId, s: u64, e: u64) {
        let sb = self.inodes[ino].sb as usize;
        let ext4 = self.sbs[sb].ext4_mut();
        ext4.unwritten.entry(ino).or_default().insert(s, e);
    }

    /// Whether a round over `[start, start + n)` of `ino` has an extent to
    /// map: a page without blocks (delalloc) or with unwritten ones
    /// (`mpage_process_page_bufs` → `ext4_bh_delay_or_unwritten`). A round
    /// of written blocks only is written without a handle.
    pub fn ext4_round_needs_map(&self, ino: InodeId, start: u64, n: u64) -> bool {
        let spp = self.page_size() / 512;
        let inode = &self.inodes[ino];
        let mut p = start;
        while p < start + n {
            match inode.extent_lookup(p, start + n - p, spp) {
                Some((_, got)) if got > 0 => p += got,
                _ => return true,
            }
        }
        let e = self.sbs[inode.sb as usize].ext4();
        e.unwritten
            .get(&ino)
            .is_some_and(|u| u.overlap(start, start + n) > 0)
    }

    /// `ext4_io_submit`: submit the bio of `pages` pages of `ino` from page
    /// `first`, at `sector`, taking a reference on its io_end.
    fn ext4_io_submit(
        &mut self,
        pid: Pid,
        ino: InodeId,
        bio: (u64, u64, u64),
        seg_sectors: u64,
        opf: u8,
        io_end: Option<IoEndId>,
    ) -> bool {
        if let Some(io) = io_end {
            let e = self.sbs[self.inodes[ino].sb as usize].ext4_mut();
            e.io_ends[io].as_mut().expect("io_end").count += 1;
        }
        self.submit_page_bio(pid, ino, bio, seg_sectors, opf, io_end)
    }

    /// `ext4_map_blocks`: the sector of page `p` and how many following pages
    /// are physically contiguous (allocating delalloc blocks on the way).
    fn ext4_map_blocks(&mut self, ino: InodeId, p: u64, max: u64) -> (u64, u64) {
        let spp = self.page_size() / 512;
        let inode = &self.inodes[ino];
        if let Some(mapped) = inode.extent_lookup(p, max, spp) {
            return mapped;
        }
        let (sb, ag) = (inode.sb as usize, inode.ag as usize);
        let span = inode.nr_pages_span.max(p + max);
        let (sector, got) = self.ext4_mb_new_blocks(sb, ag, ino, span, p, max);
        self.inodes[ino].extent_add(p, got, sector, spp);
        self.ext4_alloc_meta(ino);
        (sector, got)
    }

    /// `ext4_mb_new_blocks`: blocks for the `n` pages from page `p` of a
    /// file spanning `span` pages. Returns the first sector and how many of
    /// the `n` pages got blocks there (the rest take another call).
    ///
    /// A small file takes the next blocks of its group (the locality group's
    /// preallocation: small files written one after another are adjacent).
    /// A larger file allocates from a preallocation of its own
    /// (`ext4_mb_use_inode_pa`), which covers a window of the file's logical
    /// blocks, sized by the file's size (`ext4_normalize_window`) and
    /// trimmed to start at the request (the blocks to its left are
    /// allocated). A request that runs past the window's end gets the
    /// blocks up to it, so a writeback round crossing an 8 MiB boundary of
    /// the file ends one bio there and starts another wherever the next
    /// preallocation lands (the module doc has the rig's figures). So
    /// growing files written side by side (many dd) keep to their own
    /// regions and their bios do not merge with each other's, as on the rig
    /// (1000 dd at bs=4k: 236 KiB requests).
    fn ext4_mb_new_blocks(
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
        if let Some(pa) = s.ext4().inode_pa.get(&ino) {
            if pa.lstart <= p && p < pa.lend {
                return (pa.sector + (p - pa.lstart) * spp, n.min(pa.lend - p));
            }
        }
        let (start, window) = ext4_normalize_window(span, p, ps);
        let lstart = start.max(p);
        let lend = start + window;
        let at = s.ag_cursor[ag];
        s.ag_cursor[ag] += (lend - lstart) * spp;
        s.ext4_mut().inode_pa.insert(
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

/// Extents a 4 KiB extent-tree block holds: (4096 - 12-byte header) / 12
/// (`ext4_ext_space_block`, and `ext4_ext_space_block_idx` for index
/// entries); the inode itself holds 4 (`ext4_ext_space_root`).
const EXTENTS_PER_LEAF: u64 = 340;
const EXTENTS_IN_INODE: u64 = 4;

/// A leaf block of a file's extent tree: the first page it covers (its
/// index entry's `ei_block`; it covers up to the next leaf's) and its
/// block number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtLeaf {
    pub start: u64,
    pub block: u64,
}

/// The leaves of a file's extent tree, in logical order, as ext4 grows
/// them while writeback converts unwritten extents: a full leaf is split
/// where the insertion is (`ext4_ext_split` moves the extents after the
/// one being split into a new leaf), and leaves are never joined again
/// (`ext4_ext_try_to_merge` merges extents within a leaf only). So
/// writeback's ascending sweep through a full leaf cuts it into small
/// leaves, a few conversions each, and the tree keeps them after the
/// extents merge back. On the host rig (8 fio randwrite jobs into
/// fallocated 512 MiB files, debugfs `dump_extents` 45 s in, 56% of a
/// file converted) a file had 436 leaves holding 49,626 extents (114 per
/// leaf, median leaf span 254 blocks), and each 5 s commit logged ~2,500
/// blocks, nearly all of them leaves.
///
/// Empty while the tree fits in the inode (depth 0). The extents are not
/// stored: a leaf's are the runs of unwritten and written pages within its
/// range (the file's unwritten set says which), since conversions merge
/// written neighbours within a leaf. The extent length limits (32,767
/// unwritten, 32,768 written blocks) are not modelled: a fallocated file
/// starts as one extent.
#[derive(Clone, Debug, Default)]
pub struct ExtTree {
    pub leaves: Vec<ExtLeaf>,
    /// Index blocks, once the leaves outgrow the inode's four index
    /// entries (depth 2): one per 340 leaves.
    pub index: Vec<u64>,
    /// The end of the file's extents (the unwritten range's end when the
    /// tree was first seen).
    pub end: u64,
}

/// Extents of a file in `[a, b)`: the runs of unwritten pages (`u`) and of
/// written ones between them.
fn ext4_ext_count(u: &crate::mm::filemap::RangeSet, a: u64, b: u64) -> u64 {
    if a >= b {
        return 0;
    }
    let r = u.ranges();
    let lo = r.partition_point(|&(_, e)| e <= a);
    let hi = r.partition_point(|&(s, _)| s < b);
    if lo >= hi {
        return 1; // all written
    }
    let k = (hi - lo) as u64;
    let lead = u64::from(r[lo].0 > a);
    let trail = u64::from(r[hi - 1].1 < b);
    k + (k - 1) + lead + trail
}

impl ExtTree {
    /// The leaf covering page `p` (leaves start at page 0).
    fn find(&self, p: u64) -> usize {
        self.leaves
            .partition_point(|l| l.start <= p)
            .saturating_sub(1)
    }
    /// The end of leaf `i`'s range.
    fn end(&self, i: usize) -> u64 {
        self.leaves.get(i + 1).map_or(self.end, |l| l.start)
    }
    fn entries(&self, u: &crate::mm::filemap::RangeSet, i: usize) -> u64 {
        ext4_ext_count(u, self.leaves[i].start, self.end(i))
    }
}

/// What converting a range did to a file's extent tree, for the journal.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ExtChange {
    /// The tree blocks written: leaves, and index blocks that gained an
    /// entry.
    pub blocks: Vec<u64>,
    /// New tree blocks (`ext4_ext_new_meta_block`: each an allocation).
    pub new_blocks: usize,
}

/// Convert pages `[s, s + n)` of a file out of its unwritten set `u` and
/// grow its extent tree `t` as ext4 does (`ext4_split_convert_extents` at
/// submission, `ext4_convert_unwritten_extents_endio` after the IO; both
/// edit the leaf of the unwritten extent holding the range). `new_block`
/// gives a block for each new leaf or index block. Returns what changed,
/// or None when nothing in the range was unwritten.
pub fn ext4_ext_convert(
    t: &mut ExtTree,
    u: &mut crate::mm::filemap::RangeSet,
    s: u64,
    n: u64,
    mut new_block: impl FnMut() -> u64,
) -> Option<ExtChange> {
    let e = s + n;
    let first = u.next_at_or_after(s).filter(|&x| x < e)?;
    if let Some(&(_, last)) = u.ranges().last() {
        t.end = t.end.max(last);
    }
    // the unwritten extent being split ends at `run_end` (or its leaf's end)
    let run_end = u.run_end(first).unwrap_or(e);
    u.remove(s, e);
    let mut ch = ExtChange::default();
    if t.leaves.is_empty() {
        if ext4_ext_count(u, 0, t.end) <= EXTENTS_IN_INODE {
            return Some(ch); // the inode's own block, logged anyway
        }
        // ext4_ext_grow_indepth: the inode's extents move to a leaf
        t.leaves.push(ExtLeaf {
            start: 0,
            block: new_block(),
        });
        ch.new_blocks += 1;
    }
    let mut i = t.find(first);
    // a full leaf (`ext4_ext_create_new_leaf` → `ext4_ext_split`): the
    // extents after the one being split go to a new leaf. When that extent
    // is the leaf's last, the new extents go to the next leaf if it has
    // room (`ext4_ext_insert_extent`), else to a new leaf of their own.
    for attempt in 0..3 {
        if t.entries(u, i) <= EXTENTS_PER_LEAF {
            break;
        }
        let (lo, hi) = (t.leaves[i].start, t.end(i));
        let ex_end = run_end.min(hi);
        let cut = match () {
            _ if attempt == 0 && ex_end < hi => ex_end,
            _ if first > lo => first,
            _ => e,
        };
        if cut <= lo || cut >= hi {
            break;
        }
        if cut != ex_end
            && i + 1 < t.leaves.len()
            && ext4_ext_count(u, cut, t.end(i + 1)) <= EXTENTS_PER_LEAF
        {
            t.leaves[i + 1].start = cut;
            ch.blocks.push(t.leaves[i + 1].block);
            continue;
        }
        let block = new_block();
        t.leaves.insert(i + 1, ExtLeaf { start: cut, block });
        ch.new_blocks += 1;
        ch.blocks.push(block);
        if first >= cut {
            i += 1;
        }
    }
    ch.blocks.push(t.leaves[i].block);
    // index blocks once past the inode's four entries, one per 340 leaves;
    // a new leaf's entry goes into the one covering it
    if t.leaves.len() as u64 > EXTENTS_IN_INODE {
        let want = (t.leaves.len() as u64).div_ceil(EXTENTS_PER_LEAF) as usize;
        while t.index.len() < want {
            t.index.push(new_block());
            ch.new_blocks += 1;
        }
        if ch.new_blocks > 0 {
            let k = (i as u64 / EXTENTS_PER_LEAF) as usize;
            ch.blocks.push(t.index[k.min(t.index.len() - 1)]);
        }
    }
    ch.blocks.sort_unstable();
    ch.blocks.dedup();
    Some(ch)
}

#[cfg(test)]
mod tests {
    use crate::kernel::Kernel;
    use crate::scenario::Scenario;

    #[test]
    fn a_small_tree_stays_in_the_inode_then_grows_a_leaf() {
        use super::{ext4_ext_convert, ExtTree};
        use crate::mm::filemap::RangeSet;
        let mut u = RangeSet::default();
        u.insert(0, 1000);
        let mut t = ExtTree::default();
        let mut next = 100;
        let mut blk = || {
            next += 1;
            next
        };
        // U W U: three extents, which the inode holds
        let ch = ext4_ext_convert(&mut t, &mut u, 500, 1, &mut blk).unwrap();
        assert!(ch.blocks.is_empty() && ch.new_blocks == 0 && t.leaves.is_empty());
        // five: the tree grows a leaf (ext4_ext_grow_indepth)
        let ch = ext4_ext_convert(&mut t, &mut u, 200, 1, &mut blk).unwrap();
        assert_eq!((ch.blocks, ch.new_blocks), (vec![101], 1));
        // a written page: nothing to convert
        assert!(ext4_ext_convert(&mut t, &mut u, 200, 1, &mut blk).is_none());
    }

    /// Checks the tree's invariants and returns its leaves' extents.
    fn leaf_entries(t: &super::ExtTree, u: &crate::mm::filemap::RangeSet) -> Vec<u64> {
        assert_eq!(t.leaves[0].start, 0);
        assert!(t.leaves.windows(2).all(|w| w[0].start < w[1].start));
        let n: Vec<u64> = (0..t.leaves.len()).map(|i| t.entries(u, i)).collect();
        assert!(n.iter().all(|&k| (1..=340).contains(&k)), "{n:?}");
        n
    }

    #[test]
    fn an_ascending_sweep_through_full_leaves_cuts_them_small() {
        use super::{ext4_ext_convert, ExtTree};
        use crate::mm::filemap::RangeSet;
        let mut u = RangeSet::default();
        u.insert(0, 200_000);
        let mut t = ExtTree::default();
        let mut next = 0;
        let mut blk = || {
            next += 1;
            next
        };
        // a first sweep, every 20th page: the split extent is always the
        // leaf's last, so leaves fill up (340 extents, 170 conversions)
        for p in (0..200_000).step_by(20) {
            ext4_ext_convert(&mut t, &mut u, p, 1, &mut blk).unwrap();
        }
        let n = leaf_entries(&t, &u);
        let first = t.leaves.len();
        assert_eq!(first, 59, "20,000 extents in full leaves");
        assert!(n[..first - 1].iter().all(|&k| k >= 339), "{n:?}");
        // a second sweep between them: each full leaf is split where the
        // sweep enters it, and the rest again at each insertion that finds
        // it full, so most leaves end up with a few conversions each
        for p in (10..200_000).step_by(20) {
            ext4_ext_convert(&mut t, &mut u, p, 1, &mut blk).unwrap();
        }
        let n = leaf_entries(&t, &u);
        let extents: u64 = n.iter().sum();
        assert_eq!(extents, 40_000);
        // dense packing would need 118 leaves
        assert!(t.leaves.len() > 3 * 118, "{} leaves", t.leaves.len());
        // leaves are never joined: converting the rest keeps them all, one
        // written extent each
        let leaves = t.leaves.len();
        for p in 0..200_000 {
            ext4_ext_convert(&mut t, &mut u, p, 1, &mut blk);
        }
        assert!(u.is_empty());
        assert_eq!(t.leaves.len(), leaves);
        assert!(leaf_entries(&t, &u).iter().all(|&k| k == 1));
        // index blocks: one per 340 leaves past the inode's four
        assert_eq!(t.index.len(), leaves.div_ceil(340));
    }

    fn machine() -> Kernel {
        let toml = "[devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n[filesystems.f]\ndevice = \"loop0\"\n[jobs.dd]\nbs = \"1M\"\n";
        let sc = Scenario::load_str(toml, "t.toml", "t", &[]).unwrap();
        Kernel::new(sc, crate::trace::Tracer::disabled())
    }

    /// jbd2's `do_get_write_access`: a block whose page still waits for
    /// its write in place when a new transaction changes it loses its dirty
    /// buffer; writeback of that page writes nothing (the page ends
    /// writeback at once), its neighbours are written.
    #[test]
    fn a_block_changed_again_before_its_write_in_place_is_not_written() {
        let mut k = machine();
        let sb = 0;
        let bdev = k.sbs[sb].ext4().meta.as_deref().unwrap().bdev_inode;
        let taken = |k: &Kernel| {
            k.sbs[sb]
                .ext4()
                .meta
                .as_deref()
                .unwrap()
                .journal
                .taken
                .clone()
        };
        // blocks 100..103 committed: dirty pages of the block device
        k.filemap_dirty_range(0, bdev, 100, 3);
        // a new transaction changes block 101, and block 200 (not dirty)
        k.jbd2_journal_dirty_metadata(sb, 101);
        k.jbd2_journal_dirty_metadata(sb, 200);
        assert_eq!(taken(&k).ranges(), &[(101, 102)]);
        // once only per transaction
        k.jbd2_journal_dirty_metadata(sb, 101);
        assert_eq!(taken(&k).count(), 1);
        // the flusher's run over 100..103: 100 and 102 are written
        assert_eq!(
            k.jbd2_buffer_runs(bdev, 100, 3),
            vec![(100, 1, true), (101, 1, false), (102, 1, true)]
        );
        assert!(taken(&k).is_empty());
        // the same through blkdev_writepages: two bios, block 101 ends
        // writeback without IO
        k.sbs[sb].ext4_mut().journal().taken.insert(101, 102);
        k.inodes[bdev].dirty.take_from(100, 3);
        k.start_writeback_range(bdev, 3);
        let before = k.devs[0].stat.bios_submitted;
        k.blkdev_writepages(0, bdev, 100, 3, 0);
        assert_eq!(k.devs[0].stat.bios_submitted, before + 2);
        assert!(k.inodes[bdev].nr_writeback <= 2);
        // a block device inode that is no journal's: all its pages written
        let other = k.create_inode(0);
        assert_eq!(k.jbd2_buffer_runs(other, 0, 4), vec![(0, 4, true)]);
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

    /// `ext4_writepages` makes one bio of physically contiguous pieces and
    /// starts a new one where the blocks jump: one file alone gets one bio
    /// across a window boundary, two files allocating in turn get two.
    #[test]
    fn a_bio_ends_where_the_blocks_jump() {
        let (mut k, a, b) = two_growing_files();
        let write = |k: &mut Kernel, ino, start, n| {
            assert!(k.fs_writepages_trans_start(0, ino), "the round's handle");
            k.start_writeback_range(ino, n);
            k.ext4_writepages(0, ino, start, n, 0);
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
        fn meta(k: &Kernel, sb: usize) -> &crate::fs::ext4_meta::Ext4Meta {
            k.sbs[sb].ext4().meta.as_deref().unwrap()
        }
        let reserved = |k: &Kernel| meta(k, sb).journal.reserved;
        let rsv = meta(&k, sb).rsv_blocks;
        assert!(rsv > 0, "the io-less policy models dioread_nolock");
        // a's first pages, then b's, then a round of a across the end of
        // its first window: the next window was allocated after b's
        for (ino, start, n) in [(a, 0, 1000), (b, 0, 100)] {
            assert!(k.fs_writepages_trans_start(0, ino));
            k.start_writeback_range(ino, n);
            k.ext4_writepages(0, ino, start, n, 0);
        }
        let before = k.devs[0].stat.bios_submitted;
        let (in_flight, r0) = (
            k.sbs[sb].ext4().io_ends.iter().flatten().count(),
            reserved(&k),
        );
        assert!(k.fs_writepages_trans_start(0, a));
        assert_eq!(reserved(&k), r0 + rsv, "the round's handle reserves");
        k.start_writeback_range(a, 2048);
        k.ext4_writepages(0, a, 1000, 2048, 0);
        assert_eq!(k.devs[0].stat.bios_submitted - before, 2, "two bios");
        assert_eq!(reserved(&k), r0 + rsv, "one reservation per round");
        assert_eq!(
            k.sbs[sb].ext4().io_ends.iter().flatten().count(),
            in_flight + 1
        );
        let id = k.sbs[sb]
            .ext4()
            .io_ends
            .iter()
            .rposition(|io| io.is_some())
            .unwrap();
        let io = k.sbs[sb].ext4().io_ends[id].as_ref().unwrap();
        assert_eq!(
            (io.ino, io.count, io.pages),
            (a, 2, 0),
            "the submitter's reference is gone, one per bio is left"
        );
        // the first bio completes: its pages wait for the other
        let wb_pages = k.inodes[a].nr_writeback;
        k.ext4_end_bio(a, id, 1048);
        assert_eq!(k.inodes[a].nr_writeback, wb_pages);
        assert_eq!(reserved(&k), r0 + rsv);
        // the last one: conversion, credits back, all 2048 pages done
        k.ext4_end_bio(a, id, 1000);
        assert_eq!(k.inodes[a].nr_writeback, wb_pages - 2048);
        assert_eq!(reserved(&k), r0);
        assert!(k.sbs[sb].ext4().io_ends[id].is_none());
    }

    /// Random writes into a fallocated file: every run of adjacent dirty
    /// pages is a round of ext4_do_writepages with a handle of its own, and
    /// each handle reserves credits for its io_end's conversion. One
    /// ->writepages call over thousands of one-page runs stops at half a
    /// transaction reserved and waits for conversions (`j_wait_reserved`);
    /// the running transaction is then not "full" of reservations, and the
    /// conversions' inode block is logged once per transaction instead of
    /// forcing a commit each.
    #[test]
    fn each_round_reserves_and_writeback_waits_at_half_a_transaction() {
        use crate::fs::fs_writeback::PassStep;
        use crate::scenario::Scenario;
        // an 8 GiB filesystem: a 64 MiB journal, 4096-block transactions;
        // no wbt, so that tags do not stop the flusher first
        let toml = "[devices.loop0]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\nsize = \"8G\"\nqueue.wbt_lat_usec = 0\n[filesystems.f]\ndevice = \"loop0\"\n[jobs.dd]\nbs = \"1M\"\n";
        let sc = Scenario::load_str(toml, "t.toml", "t", &[]).unwrap();
        let mut k = Kernel::new(sc, crate::trace::Tracer::disabled());
        let a = k.create_inode(0);
        k.fs_fallocate(a, 100_000);
        for i in 0..10_000 {
            k.filemap_dirty_range(0, a, 2 * i, 1);
        }
        let sb = k.inodes[a].sb as usize;
        let (rsv, max_txn) = {
            let m = k.sbs[sb].ext4().meta.as_deref().unwrap();
            (m.rsv_blocks, m.journal.max_txn())
        };
        let r0 = k.sbs[sb].ext4().meta.as_deref().unwrap().journal.reserved;
        assert!(k.fs_writepages_trans_start(0, a));
        let mut wp = k.writepages_start(0, a, i64::MAX, Vec::new());
        let step = loop {
            let mut burst = 0;
            match k.do_writepages(0, &mut wp, &mut burst, 0) {
                PassStep::Cpu(_) => continue,
                step => break step,
            }
        };
        assert_eq!(step, PassStep::WaitTag, "the flusher waits");
        let j = &k.sbs[sb].ext4().meta.as_deref().unwrap().journal;
        assert!(j.rsv_waiters.contains(&0), "for reserved credits");
        assert!(j.reserved <= max_txn / 2, "{} reserved", j.reserved);
        let io_ends = k.sbs[sb].ext4().io_ends.iter().flatten().count() as u64;
        assert_eq!(j.reserved - r0, io_ends * rsv, "one handle per round");
        assert_eq!(io_ends, (max_txn / 2 - r0) / rsv);
        assert!(!j.full(), "reservations alone do not fill the transaction");
        assert_eq!(k.inodes[a].nr_writeback, io_ends, "one page a round");
    }

    /// fallocate leaves unwritten extents: a round over them maps (a
    /// handle, reserved credits, an io_end whose completion converts them);
    /// once converted, a round over the same pages is written without a
    /// handle (ext4_do_writepages' first pass, `do_map` 0), and its bio
    /// ends its pages' writeback itself. A laid-out (written) file never
    /// takes a handle. So fio's second pass over a randwrite file (its
    /// random map writes each block once per pass) reserves nothing, as
    /// the rig's jbd2_run_stats show (60-78k handles per transaction while
    /// the first pass converts, ~330 after).
    #[test]
    fn unwritten_extents_are_mapped_and_converted_once() {
        let mut k = machine();
        let (a, w) = (k.create_inode(0), k.create_inode(0));
        k.fs_fallocate(a, 1000);
        k.fs_layout_file(w, 1000);
        let sb = k.inodes[a].sb as usize;
        let reserved = |k: &Kernel| k.sbs[sb].ext4().meta.as_deref().unwrap().journal.reserved;
        let in_flight = |k: &Kernel| k.sbs[sb].ext4().io_ends.iter().flatten().count();
        assert!(k.ext4_round_needs_map(a, 10, 5));
        assert!(!k.ext4_round_needs_map(w, 10, 5));
        assert!(k.fs_writepages_round_maps(a, 10, 5));
        // an unwritten round: its handle's credits go to its io_end, whose
        // completion (at once here: the device is idle) converts the pages
        let r0 = reserved(&k);
        assert!(k.fs_writepages_trans_start(0, a));
        assert!(reserved(&k) > r0);
        k.filemap_dirty_range(0, a, 10, 5);
        k.inodes[a].dirty.take_from(10, 5);
        k.start_writeback_range(a, 5);
        k.ext4_writepages(0, a, 10, 5, 0);
        assert_eq!(in_flight(&k), 0);
        assert_eq!(reserved(&k), r0, "the conversion returns the credits");
        assert!(!k.ext4_round_needs_map(a, 10, 5), "converted");
        assert!(k.ext4_round_needs_map(a, 9, 2), "page 9 is still unwritten");
        assert!(k.ext4_init_io_end(a, 9, 2).is_some());
        // written rounds: no io_end, nothing reserved
        assert!(k.ext4_init_io_end(a, 10, 5).is_none());
        assert!(k.ext4_init_io_end(w, 10, 5).is_none());
        for ino in [a, w] {
            k.filemap_dirty_range(0, ino, 10, 5);
            k.inodes[ino].dirty.take_from(10, 5);
            k.start_writeback_range(ino, 5);
            k.ext4_writepages(0, ino, 10, 5, 0);
            assert_eq!(reserved(&k), r0);
        }
    }
}
