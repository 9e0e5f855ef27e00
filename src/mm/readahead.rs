//! The page cache's read side: mm/readahead.c (`page_cache_sync_ra`,
//! `page_cache_async_ra`, `ondemand_readahead`, `force_page_cache_ra`,
//! `do_page_cache_ra`, `read_pages`) and the page lookup of mm/filemap.c's
//! `filemap_read` (`filemap_get_pages`: a missing page starts synchronous
//! readahead, a page marked PG_readahead starts the next window
//! asynchronously, a page not yet uptodate is waited on).
//!
//! Counts and extents, never objects per page: a file that is read keeps
//! which of its pages are in the cache (`CachedFile::present`), which of
//! those are still under read (locked and not uptodate: `locked`), and its
//! few PG_readahead marks. Its `nr_cached` equals `present`'s count. Only
//! files that are read have this state (the fio engine's); the writers'
//! inodes keep their counts alone.

use crate::block::{Bio, BioOwner};
use crate::kernel::{InodeId, Kernel, Pid};
use std::collections::BTreeMap;

/// A set of disjoint, non-touching page ranges `[start, end)` in an
/// ordered map, with its page count: a file read at random fragments its
/// cached pages into up to one range per two pages, so every operation is
/// logarithmic (the writers' `RangeSet`, a sorted vector, suits the few
/// ranges of dirty pages).
#[derive(Clone, Debug, Default)]
pub struct ExtentSet {
    map: BTreeMap<u64, u64>,
    pages: u64,
}

impl ExtentSet {
    /// Pages in the set.
    pub fn count(&self) -> u64 {
        self.pages
    }
    /// Ranges in the set.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// The range holding page `x`.
    pub fn containing(&self, x: u64) -> Option<(u64, u64)> {
        self.map
            .range(..=x)
            .next_back()
            .filter(|&(_, &b)| b > x)
            .map(|(&a, &b)| (a, b))
    }
    /// The end of the range holding `x`, if `x` is in the set.
    pub fn run_end(&self, x: u64) -> Option<u64> {
        self.containing(x).map(|r| r.1)
    }
    /// The first page at or after `x` in the set.
    pub fn next_at_or_after(&self, x: u64) -> Option<u64> {
        if self.containing(x).is_some() {
            return Some(x);
        }
        self.map.range(x..).next().map(|(&a, _)| a)
    }
    /// The first page of `[s, e)` not in the set.
    pub fn first_missing(&self, s: u64, e: u64) -> Option<u64> {
        let x = self.run_end(s).unwrap_or(s);
        (x < e).then_some(x)
    }
    /// Pages of `[s, e)` in the set.
    pub fn overlap(&self, s: u64, e: u64) -> u64 {
        if s >= e {
            return 0;
        }
        let mut n = 0;
        if let Some((a, b)) = self.containing(s) {
            if a < s {
                n += b.min(e) - s;
            }
        }
        for (&a, &b) in self.map.range(s..e) {
            n += b.min(e) - a;
        }
        n
    }
    /// Insert `[s, e)`; returns the pages newly added.
    pub fn insert(&mut self, s: u64, e: u64) -> u64 {
        if s >= e {
            return 0;
        }
        let before = self.overlap(s, e);
        if before == e - s {
            return 0;
        }
        let (mut ns, mut ne) = (s, e);
        // a range before s that reaches it
        if let Some((&a, &b)) = self.map.range(..s).next_back() {
            if b >= s {
                ns = a;
                ne = ne.max(b);
                self.map.remove(&a);
                self.pages -= b - a;
            }
        }
        // ranges starting in [s, e]
        let inside: Vec<(u64, u64)> = self.map.range(s..=e).map(|(&a, &b)| (a, b)).collect();
        for (a, b) in inside {
            ne = ne.max(b);
            self.map.remove(&a);
            self.pages -= b - a;
        }
        self.map.insert(ns, ne);
        self.pages += ne - ns;
        (e - s) - before
    }
    /// Remove `[s, e)`; returns the pages removed.
    pub fn remove(&mut self, s: u64, e: u64) -> u64 {
        if s >= e {
            return 0;
        }
        let mut n = 0;
        if let Some((a, b)) = self.containing(s) {
            if a < s {
                // split off the head
                self.map.insert(a, s);
                if b > e {
                    self.map.insert(e, b);
                    self.pages -= e - s;
                    return e - s;
                }
                self.pages -= b - s;
                n += b - s;
            }
        }
        let inside: Vec<(u64, u64)> = self.map.range(s..e).map(|(&a, &b)| (a, b)).collect();
        for (a, b) in inside {
            self.map.remove(&a);
            if b > e {
                self.map.insert(e, b);
                n += e - a;
                self.pages -= e - a;
            } else {
                n += b - a;
                self.pages -= b - a;
            }
        }
        n
    }
}

/// `struct file_ra_state`: one open file's readahead window.
#[derive(Clone, Copy, Debug, Default)]
pub struct FileRaState {
    /// The current window: `[start, start + size)`, whose last
    /// `async_size` pages are ahead of the reader (the first of them holds
    /// the PG_readahead mark).
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    /// The window's maximum (`ra_pages`, from the bdi's `read_ahead_kb`;
    /// doubled by POSIX_FADV_SEQUENTIAL).
    pub ra_pages: u64,
    /// The byte after the last read (None: nothing read yet, the kernel's
    /// -1).
    pub prev_pos: Option<u64>,
    /// FMODE_RANDOM (POSIX_FADV_RANDOM): every miss reads just the request.
    pub random: bool,
}

/// A file's pages as the read side sees them.
#[derive(Clone, Debug, Default)]
pub struct CachedFile {
    /// Pages in the page cache (uptodate, or locked under read).
    pub present: ExtentSet,
    /// Pages under read: locked and not uptodate.
    pub locked: ExtentSet,
    /// Pages with PG_readahead set.
    pub marks: Vec<u64>,
    /// Tasks sleeping on a locked page of `[start, end)`
    /// (`folio_wait_locked` in `filemap_update_page`).
    pub waiters: Vec<(Pid, u64, u64)>,
    /// Where clean-page reclaim continues in this file (an LRU stand-in:
    /// pages read longest ago go first for a sequential reader).
    pub reclaim_cursor: u64,
    /// The index of the last buffered write's page-cache lookup: its path
    /// through the xarray is what the CPU caches hold of it
    /// (`filemap_get_folio_cost`).
    pub last_lookup: Option<u64>,
}

/// The read side's state: the files that are read, and its counters.
#[derive(Clone, Debug, Default)]
pub struct ReadSide {
    pub files: BTreeMap<InodeId, CachedFile>,
    /// Read bios submitted by size in pages (before the block layer
    /// splits or merges them): the readahead windows as they reach the
    /// block layer.
    pub bio_pages: BTreeMap<u64, u64>,
    /// Synchronous and asynchronous readahead calls, and forced reads
    /// (FMODE_RANDOM or no readahead).
    pub sync_ra: u64,
    pub async_ra: u64,
    pub forced_ra: u64,
    /// Pages read from disk.
    pub pages_read: u64,
}

/// BIO_MAX_VECS: the pages one read bio holds (order-0 folios).
const BIO_MAX_PAGES: u64 = 256;

/// `get_init_ra_size`: the first window from the request size.
pub fn get_init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.max(1).next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// `get_next_ra_size`: the ramp-up, ×4 while small, then ×2, up to max.
pub fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl Kernel {
    /// Start keeping the read side's state of `ino` (the pages it has in
    /// the cache now are taken to be its first ones).
    pub fn filemap_track(&mut self, ino: InodeId) {
        let n = self.inodes[ino].nr_cached;
        self.ra.files.entry(ino).or_insert_with(|| {
            let mut f = CachedFile::default();
            f.present.insert(0, n);
            f
        });
    }

    /// `file_ra_state_init` for a file on device `dev`, with fio's
    /// `fadvise_hint` (POSIX_FADV_RANDOM for random IO, SEQUENTIAL, which
    /// doubles the window, otherwise: mm/fadvise.c).
    pub fn file_ra_state_init(&self, dev: usize, random: bool) -> FileRaState {
        let ps_kib = self.page_size() / 1024;
        let ra_pages = self.sc.devices[dev].queue.read_ahead_kb / ps_kib;
        FileRaState {
            ra_pages: if random { ra_pages } else { ra_pages * 2 },
            random,
            ..Default::default()
        }
    }

    /// Pages of a buffered write to a tracked file: `[index, index + n)`
    /// below the file's end that are not cached are allocated first (a
    /// whole-page write needs no read), then the pages join `present`.
    /// Call before `filemap_dirty_range`, which allocates the pages past
    /// the end. Returns the pages this allocated.
    pub fn filemap_write_begin_tracked(&mut self, ino: InodeId, index: u64, n: u64) -> u64 {
        let Some(f) = self.ra.files.get_mut(&ino) else {
            return 0;
        };
        let span = self.inodes[ino].nr_pages_span;
        let e = (index + n).min(span).max(index);
        let below = (e - index) - f.present.overlap(index, e);
        // allocated before they join the cache, so that the reclaim the
        // allocation may wake leaves them be (the write dirties them next)
        self.page_alloc(None, below, crate::mm::page_alloc::Gfp::PageCacheWrite);
        let f = self.ra.files.get_mut(&ino).expect("tracked");
        let added = f.present.insert(index, e);
        f.present.insert(index, index + n);
        if added > 0 {
            self.inodes[ino].nr_cached += added;
            self.vm.nr_file_pages += added;
            self.vm.nr_inactive_file += added;
        }
        if added > below {
            // kswapd, woken by the allocation, took pages of the range
            // that were cached: they are allocated again
            self.page_alloc(
                None,
                added - below,
                crate::mm::page_alloc::Gfp::PageCacheWrite,
            );
        }
        added
    }

    /// `filemap_get_pages` for a read of pages `[p0, p1)` of `ino` by
    /// `pid` through `ra`: missing pages start synchronous readahead (or
    /// just their read), a PG_readahead mark in the range starts the next
    /// window. Returns (pages allocated, whether a submission must wait for
    /// a tag). The pages may still be under read: see `filemap_read_ready`.
    pub fn filemap_get_pages(
        &mut self,
        pid: Pid,
        ino: InodeId,
        ra: &mut FileRaState,
        p0: u64,
        p1: u64,
    ) -> (u64, bool) {
        self.filemap_track(ino);
        let plug = self.blk_start_plug(pid);
        let (mut alloc, mut tag_wait) = (0, false);
        let span = self.inodes[ino].nr_pages_span;
        let p1 = p1.min(span.max(p0 + 1));
        // a missing page: page_cache_sync_readahead from it to the end of
        // the request; the rest of the request is looked up again after
        let mut from = p0;
        for _ in 0..64 {
            let Some(m) = self.ra.files[&ino].present.first_missing(from, p1) else {
                break;
            };
            let (a, w) = self.page_cache_sync_ra(pid, ino, ra, m, p1 - m);
            alloc += a;
            tag_wait |= w;
            from = m + 1;
        }
        // a marked page in the request: page_cache_async_readahead
        let mark = self.ra.files[&ino]
            .marks
            .iter()
            .copied()
            .filter(|&m| m >= p0 && m < p1)
            .min();
        if let Some(m) = mark {
            self.ra
                .files
                .get_mut(&ino)
                .expect("tracked")
                .marks
                .retain(|&x| x != m);
            let (a, w) = self.page_cache_async_ra(pid, ino, ra, m, p1 - m);
            alloc += a;
            tag_wait |= w;
        }
        self.blk_finish_plug(pid, plug);
        (alloc, tag_wait)
    }

    /// Whether every page of `[p0, p1)` is cached and uptodate; if not,
    /// `pid` is queued to be woken when the reads in flight there end
    /// (`filemap_update_page` → `folio_wait_locked`).
    pub fn filemap_read_ready(&mut self, pid: Pid, ino: InodeId, p0: u64, p1: u64) -> bool {
        let span = self.inodes[ino].nr_pages_span;
        let p1 = p1.min(span.max(p0 + 1));
        let f = self.ra.files.get_mut(&ino).expect("tracked");
        f.waiters.retain(|w| w.0 != pid);
        if f.locked.overlap(p0, p1) == 0 {
            return true;
        }
        f.waiters.push((pid, p0, p1));
        false
    }

    /// Whether `[p0, p1)` of `ino` is all in the cache (a reclaim since
    /// the read started can have taken pages: they are read again).
    pub fn filemap_all_present(&self, ino: InodeId, p0: u64, p1: u64) -> bool {
        let span = self.inodes[ino].nr_pages_span;
        let p1 = p1.min(span.max(p0 + 1));
        self.ra
            .files
            .get(&ino)
            .is_some_and(|f| f.present.first_missing(p0, p1).is_none())
    }

    /// `page_cache_sync_ra`: a read missed at `index` wanting `req` pages.
    fn page_cache_sync_ra(
        &mut self,
        pid: Pid,
        ino: InodeId,
        ra: &mut FileRaState,
        index: u64,
        req: u64,
    ) -> (u64, bool) {
        if ra.random || ra.ra_pages == 0 {
            let req = if ra.ra_pages == 0 { 1 } else { req };
            return self.force_page_cache_ra(pid, ino, ra, index, req);
        }
        self.ra.sync_ra += 1;
        self.ondemand_readahead(pid, ino, ra, None, index, req)
    }

    /// `page_cache_async_ra`: the reader reached the PG_readahead page
    /// `index` (its flag already cleared).
    fn page_cache_async_ra(
        &mut self,
        pid: Pid,
        ino: InodeId,
        ra: &mut FileRaState,
        index: u64,
        req: u64,
    ) -> (u64, bool) {
        if ra.ra_pages == 0 {
            return (0, false);
        }
        self.ra.async_ra += 1;
        self.ondemand_readahead(pid, ino, ra, Some(index), index, req)
    }

    /// `force_page_cache_ra`: read just `nr` pages from `index`, in 2 MiB
    /// chunks, with no readahead state.
    fn force_page_cache_ra(
        &mut self,
        pid: Pid,
        ino: InodeId,
        ra: &FileRaState,
        mut index: u64,
        nr: u64,
    ) -> (u64, bool) {
        self.ra.forced_ra += 1;
        let max = self.bdi_io_pages(ino).max(ra.ra_pages);
        let mut nr = nr.min(max);
        let chunk = (2 << 20) / self.page_size();
        let (mut alloc, mut wait) = (0, false);
        while nr > 0 {
            let n = nr.min(chunk);
            let (a, w) = self.do_page_cache_ra(pid, ino, index, n, 0);
            alloc += a;
            wait |= w;
            index += n;
            nr -= n;
        }
        (alloc, wait)
    }

    /// `bdi->io_pages`: the queue's max_sectors in pages.
    fn bdi_io_pages(&self, ino: InodeId) -> u64 {
        let dev = self.sbs[self.inodes[ino].sb as usize].dev;
        self.devs[dev].max_sectors * 512 / self.page_size()
    }

    /// `ondemand_readahead`: the window logic. `marked` is the PG_readahead
    /// page an async call came from.
    fn ondemand_readahead(
        &mut self,
        pid: Pid,
        ino: InodeId,
        ra: &mut FileRaState,
        marked: Option<u64>,
        index: u64,
        req: u64,
    ) -> (u64, bool) {
        let mut max = ra.ra_pages;
        let io_pages = self.bdi_io_pages(ino);
        if req > max && io_pages > max {
            max = req.min(io_pages);
        }
        let initial = |ra: &mut FileRaState| {
            ra.start = index;
            ra.size = get_init_ra_size(req, max);
            ra.async_size = if ra.size > req {
                ra.size - req
            } else {
                ra.size
            };
        };
        'readit: {
            if index == 0 {
                initial(ra);
                break 'readit;
            }
            // the expected callback index: push the window forward
            let expected = ra.start + ra.size - ra.async_size;
            if index == expected || index == ra.start + ra.size {
                ra.start += ra.size;
                ra.size = ra.size.max(get_next_ra_size(ra.size, max));
                ra.async_size = ra.size;
                break 'readit;
            }
            if marked.is_some() {
                // a marked page without valid state: the cached run after
                // it is the old async size
                let f = &self.ra.files[&ino];
                let start = f
                    .present
                    .first_missing(index + 1, index + 1 + max)
                    .unwrap_or(index + 1 + max);
                if start - index > max {
                    return (0, false);
                }
                ra.start = start;
                ra.size = start - index + req;
                ra.size = get_next_ra_size(ra.size, max);
                ra.async_size = ra.size;
                break 'readit;
            }
            if req > max {
                initial(ra);
                break 'readit;
            }
            // sequential cache miss
            let prev = ra.prev_pos.map(|p| p / self.page_size());
            if prev.is_some_and(|p| index.wrapping_sub(p) <= 1) {
                initial(ra);
                break 'readit;
            }
            // try_context_readahead: the cached history before index
            let f = &self.ra.files[&ino];
            let lo = index.saturating_sub(max);
            let mut hist = 0;
            let mut i = index;
            // whole runs at a time
            while let Some((a, _)) = (i > lo).then(|| f.present.containing(i - 1)).flatten() {
                let run_start = a.max(lo);
                hist += i - run_start;
                i = run_start;
            }
            if hist > req {
                let size = if hist >= index { hist * 2 } else { hist };
                ra.start = index;
                ra.size = (size + req).min(max);
                ra.async_size = 1;
                break 'readit;
            }
            // a standalone small random read: as is, state untouched
            return self.do_page_cache_ra(pid, ino, index, req, 0);
        }
        // will the read hit the marker made by itself? then merge the next
        // window into this one
        if marked.is_none() && index == ra.start && ra.size == ra.async_size {
            let add = get_next_ra_size(ra.size, max);
            if ra.size + add <= max {
                ra.async_size = add;
                ra.size += add;
            } else {
                ra.size = max;
                ra.async_size = max >> 1;
            }
        }
        let (start, size, async_size) = (ra.start, ra.size, ra.async_size);
        self.do_page_cache_ra(pid, ino, start, size, async_size)
    }

    /// `do_page_cache_ra` → `page_cache_ra_unbounded`: allocate the missing
    /// pages of `[index, index + nr)` (clamped to the file's end), mark the
    /// page `lookahead` from the end PG_readahead if it is allocated here,
    /// and read the new pages (`read_pages`). Returns (pages allocated,
    /// whether a submission must wait for a tag).
    fn do_page_cache_ra(
        &mut self,
        pid: Pid,
        ino: InodeId,
        index: u64,
        nr: u64,
        lookahead: u64,
    ) -> (u64, bool) {
        let span = self.inodes[ino].nr_pages_span;
        if index >= span || nr == 0 {
            return (0, false);
        }
        let nr = nr.min(span - index);
        let end = index + nr;
        let mark = (lookahead > 0 && lookahead <= nr).then(|| end - lookahead);
        // the missing runs
        let mut runs: Vec<(u64, u64)> = Vec::new();
        {
            let f = self.ra.files.get_mut(&ino).expect("tracked");
            let mut p = index;
            while let Some(m) = f.present.first_missing(p, end) {
                let e = f.present.next_at_or_after(m).map_or(end, |x| x.min(end));
                runs.push((m, e));
                p = e;
            }
            for &(a, b) in &runs {
                f.present.insert(a, b);
                f.locked.insert(a, b);
            }
            if let Some(m) = mark.filter(|&m| runs.iter().any(|&(a, b)| a <= m && m < b)) {
                f.marks.push(m);
            }
        }
        let alloc: u64 = runs.iter().map(|&(a, b)| b - a).sum();
        if alloc == 0 {
            return (0, false);
        }
        self.inodes[ino].nr_cached += alloc;
        self.vm.nr_file_pages += alloc;
        self.vm.nr_inactive_file += alloc;
        let mut wait = false;
        for (a, b) in runs {
            wait |= self.read_pages(pid, ino, a, b);
        }
        // the pages are under read (locked): reclaim leaves them be
        self.page_alloc(Some(pid), alloc, crate::mm::page_alloc::Gfp::PageCacheRead);
        (alloc, wait)
    }

    /// `read_pages` → the filesystem's readahead (`mpage_readahead`): one
    /// bio per physically contiguous run of at most BIO_MAX_VECS pages;
    /// pages in a hole are zeroed, uptodate at once. True if a submission
    /// must wait for a tag.
    fn read_pages(&mut self, pid: Pid, ino: InodeId, a: u64, b: u64) -> bool {
        let spp = self.page_size() / 512;
        let dev = self.sbs[self.inodes[ino].sb as usize].dev;
        let mut wait = false;
        let mut p = a;
        while p < b {
            let max = (b - p).min(BIO_MAX_PAGES);
            let inode = &self.inodes[ino];
            let mapped = if inode.bdev {
                Some((p * spp, max))
            } else {
                inode.extent_lookup(p, max, spp)
            };
            let Some((sector, run)) = mapped else {
                // a hole: the next mapped page, or the end
                let next = inode
                    .extents
                    .as_slice()
                    .iter()
                    .map(|&(ps, _, _)| ps)
                    .filter(|&ps| ps > p)
                    .min()
                    .unwrap_or(b)
                    .min(b);
                self.ra
                    .files
                    .get_mut(&ino)
                    .expect("tracked")
                    .locked
                    .remove(p, next);
                p = next;
                continue;
            };
            *self.ra.bio_pages.entry(run).or_insert(0) += 1;
            self.ra.pages_read += run;
            self.vm.pgpgin += run * spp / 2;
            let bio = Bio {
                dev,
                sector,
                nr_sectors: run * spp,
                ino,
                page_start: p,
                npages: run,
                submitter: pid,
                submit_time: self.now(),
                seg_sectors: spp,
                parent: None,
                remaining: 0,
                opf: crate::block::blk_wbt::REQ_READ,
                owner: BioOwner::PageRead,
                io_end: None,
            };
            wait |= self.submit_bio(bio);
            p += run;
        }
        wait
    }

    /// POSIX_FADV_DONTNEED (`invalidate_mapping_pages`): drop a tracked
    /// file's clean pages that are not under read. (The kernel first starts
    /// writeback of the dirty ones, WB_SYNC_NONE; not modelled: they stay.)
    pub fn filemap_fadvise_dontneed(&mut self, ino: InodeId) {
        if !self.ra.files.contains_key(&ino) {
            return;
        }
        // active and inactive pages alike
        self.lru_deactivate_positions(ino);
        let Some(f) = self.ra.files.get_mut(&ino) else {
            return;
        };
        let inode = &self.inodes[ino];
        // a page re-dirtied under writeback is in both counts
        let clean = (inode.nr_cached)
            .saturating_sub(inode.dirty.count() + inode.nr_writeback)
            .saturating_sub(f.locked.count());
        f.reclaim_cursor = 0;
        f.marks.clear();
        let n = self.filemap_reclaim_tracked(ino, clean);
        self.inodes[ino].nr_cached -= n;
        self.vm.nr_file_pages -= n;
        self.vm.nr_inactive_file -= n;
        self.page_free(n);
        self.page_freed_host(n);
    }

    /// Clean-page reclaim in a tracked file: drop up to `want` pages that
    /// are cached, not locked and not dirty, from where the last call
    /// stopped (pages under writeback are not known by position: the count
    /// the caller passes leaves them out). Returns the pages dropped.
    pub(crate) fn filemap_reclaim_tracked(&mut self, ino: InodeId, want: u64) -> u64 {
        let Some(f) = self.ra.files.get_mut(&ino) else {
            return 0;
        };
        let dirty = &self.inodes[ino].dirty;
        let mut left = want;
        let mut p = f.reclaim_cursor;
        let mut wrapped = false;
        while left > 0 {
            let Some(a) = f.present.next_at_or_after(p) else {
                if wrapped {
                    break;
                }
                wrapped = true;
                p = 0;
                continue;
            };
            let e = f.present.run_end(a).expect("in the set");
            // skip locked, dirty and active pages (mm/lru.rs)
            let lru = self.vmscan.lru.inodes.get(&ino);
            let a2 = f
                .locked
                .run_end(a)
                .or_else(|| dirty.run_end(a))
                .or_else(|| lru.and_then(|l| l.active_pos.run_end(a)));
            if let Some(x) = a2 {
                p = x;
                continue;
            }
            let stop = [
                f.locked.next_at_or_after(a),
                dirty.next_at_or_after(a),
                lru.and_then(|l| l.active_pos.next_at_or_after(a)),
            ]
            .into_iter()
            .flatten()
            .fold(e, u64::min)
            .min(a + left);
            if let Some(l) = self.vmscan.lru.inodes.get_mut(&ino) {
                l.referenced.remove(a, stop);
            }
            f.present.remove(a, stop);
            f.marks.retain(|m| !(a..stop).contains(m));
            left -= stop - a;
            p = stop;
            if wrapped && p >= f.reclaim_cursor {
                break;
            }
        }
        f.reclaim_cursor = p;
        want - left
    }
}

impl Kernel {
    /// `filemap_read_end_io` body: the pages of a completed read bio are
    /// uptodate and unlocked; readers whose range is now all uptodate wake.
    pub(crate) fn filemap_read_done(&mut self, b: &Bio) {
        let Some(f) = self.ra.files.get_mut(&b.ino) else {
            return;
        };
        f.locked.remove(b.page_start, b.page_start + b.npages);
        let mut wake = Vec::new();
        f.waiters.retain(|&(pid, s, e)| {
            let ready = f.locked.overlap(s, e) == 0;
            if ready {
                wake.push(pid);
            }
            !ready
        });
        for pid in wake {
            self.wake_up_process(pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extent_set_ops() {
        let mut r = ExtentSet::default();
        assert_eq!(r.insert(0, 10), 10);
        assert_eq!(r.insert(5, 15), 5);
        assert_eq!(r.insert(20, 30), 10);
        assert_eq!(r.count(), 25);
        assert_eq!(r.overlap(8, 22), 9);
        assert_eq!(r.insert(15, 20), 5); // bridges into one run
        assert_eq!((r.len(), r.count()), (1, 30));
        assert_eq!(r.remove(3, 7), 4);
        assert_eq!((r.len(), r.count()), (2, 26));
        assert_eq!(r.next_at_or_after(3), Some(7));
        assert_eq!(r.first_missing(0, 10), Some(3));
        assert_eq!(r.first_missing(7, 30), None);
        assert_eq!(r.remove(0, 100), 26);
        assert!(r.is_empty() && r.count() == 0);
        // a checker against a bitmap
        let mut rng = crate::sim::Prng::new(9);
        let mut bits = [false; 200];
        for _ in 0..2000 {
            let s = rng.below(200);
            let e = (s + 1 + rng.below(20)).min(200);
            let n = bits[s as usize..e as usize].iter().filter(|&&b| b).count() as u64;
            if rng.below(2) == 0 {
                assert_eq!(r.insert(s, e), (e - s) - n);
                bits[s as usize..e as usize].fill(true);
            } else {
                assert_eq!(r.remove(s, e), n);
                bits[s as usize..e as usize].fill(false);
            }
            assert_eq!(r.count(), bits.iter().filter(|&&b| b).count() as u64);
            let x = rng.below(200);
            assert_eq!(r.containing(x).is_some(), bits[x as usize]);
        }
    }

    #[test]
    fn window_sizes_ramp_as_the_kernel_does() {
        // 128 KiB read_ahead_kb: 32 pages
        assert_eq!(get_init_ra_size(1, 32), 4);
        assert_eq!(get_init_ra_size(4, 32), 8);
        assert_eq!(get_init_ra_size(16, 32), 32);
        assert_eq!(get_next_ra_size(4, 64), 8);
        assert_eq!(get_next_ra_size(2, 64), 8);
        assert_eq!(get_next_ra_size(32, 64), 64);
        assert_eq!(get_next_ra_size(64, 64), 64);
    }
}
