//! bcache's request path (drivers/md/bcache/request.c:
//! `cached_dev_submit_bio`, `check_should_bypass`, `bch_get_congested`,
//! `cached_dev_write`, `cached_dev_read`, `cached_dev_cache_miss`,
//! `bch_data_insert`; writeback.h `should_writeback`; io.c
//! `bch_bbio_count_io_errors`'s congestion count).
//!
//! A bio to the bcache device is decided once: bypass (the backing device
//! only, and what is cached of its range invalidated), writeback (the
//! cache only, dirty), or writethrough (both; the cache copy is clean).
//! Reads look every part up: hits read the cache, the first miss reads the
//! backing device and copies what it read into the cache afterwards, later
//! misses only read the backing device.

use super::{BcacheState, CacheMode, Op};
use crate::block::blk_wbt::{REQ_META, REQ_READ, REQ_SYNC};
use crate::block::{Bio, BioOwner};
use crate::kernel::{BioId, DevId, Kernel, Pid};

/// `RECENT_IO`: the stream table's entries.
const RECENT_IO: usize = 128;
/// `CUTOFF_CACHE_ADD`: above this in_use nothing is cached.
pub const CUTOFF_CACHE_ADD: i64 = 95;
/// `CONGESTED_MAX`.
const CONGESTED_MAX: i32 = 1024;

/// No entry (the end of a hash chain or of the LRU).
const NIL: u8 = u8::MAX;

/// The device's stream table (`dc->io`, `io_hash`, `io_lru`) and each
/// task's `sequential_io` and `sequential_io_avg`: the `RECENT_IO` entries
/// (`struct io`: where each stream ends, until when it counts, its size),
/// hashed by their end into `RECENT_IO` chains with the entry rehashed last
/// at the head (`hlist_add_head`), and the LRU, a list from the least
/// recently used entry to the most.
pub struct SeqTable {
    last: [u64; RECENT_IO],
    /// Valid until this jiffy.
    jiffies: [u64; RECENT_IO],
    sequential: [u64; RECENT_IO],
    /// The hash chains: each chain's head, each entry's next and previous.
    head: [u8; RECENT_IO],
    hnext: [u8; RECENT_IO],
    hprev: [u8; RECENT_IO],
    /// The LRU list's ends, each entry's next and previous.
    lru_first: u8,
    lru_last: u8,
    lnext: [u8; RECENT_IO],
    lprev: [u8; RECENT_IO],
    /// By pid: (`sequential_io`, `sequential_io_avg`).
    tasks: Vec<(u64, u64)>,
}

/// `hash_64(v, RECENT_IO_BITS)`: the chain of streams ending at `v`.
#[inline]
fn iohash(v: u64) -> usize {
    (v.wrapping_mul(0x61c8_8646_80b5_83eb) >> (64 - 7)) as usize
}

impl SeqTable {
    pub fn new() -> SeqTable {
        let mut t = SeqTable {
            last: [0; RECENT_IO],
            jiffies: [0; RECENT_IO],
            sequential: [0; RECENT_IO],
            head: [NIL; RECENT_IO],
            hnext: [NIL; RECENT_IO],
            hprev: [NIL; RECENT_IO],
            lru_first: NIL,
            lru_last: NIL,
            lnext: [NIL; RECENT_IO],
            lprev: [NIL; RECENT_IO],
            tasks: Vec::new(),
        };
        // every entry ends at 0, added in order; the LRU in the same order
        for i in 0..RECENT_IO {
            t.hash_add(i);
            t.lru_add_tail(i);
        }
        t
    }

    fn hash_del(&mut self, i: usize) {
        let (p, n) = (self.hprev[i], self.hnext[i]);
        if p == NIL {
            self.head[iohash(self.last[i])] = n;
        } else {
            self.hnext[p as usize] = n;
        }
        if n != NIL {
            self.hprev[n as usize] = p;
        }
    }

    fn hash_add(&mut self, i: usize) {
        let h = iohash(self.last[i]);
        let n = self.head[h];
        self.hnext[i] = n;
        self.hprev[i] = NIL;
        if n != NIL {
            self.hprev[n as usize] = i as u8;
        }
        self.head[h] = i as u8;
    }

    fn lru_del(&mut self, i: usize) {
        let (p, n) = (self.lprev[i], self.lnext[i]);
        if p == NIL {
            self.lru_first = n;
        } else {
            self.lnext[p as usize] = n;
        }
        if n == NIL {
            self.lru_last = p;
        } else {
            self.lprev[n as usize] = p;
        }
    }

    fn lru_add_tail(&mut self, i: usize) {
        self.lprev[i] = self.lru_last;
        self.lnext[i] = NIL;
        if self.lru_last == NIL {
            self.lru_first = i as u8;
        } else {
            self.lnext[self.lru_last as usize] = i as u8;
        }
        self.lru_last = i as u8;
    }

    /// The stream-detection part of `check_should_bypass`: `bytes` at
    /// `sector` by task `pid` at jiffy `j`. Returns the stream size in
    /// sectors, `max(sequential_io, sequential_io_avg) >> 9`.
    pub fn account(&mut self, pid: Pid, sector: u64, bytes: u64, j: u64, hz: u64) -> u64 {
        // the first entry of the chain that ends here and is still valid
        let mut found = None;
        let mut x = self.head[iohash(sector)];
        while x != NIL {
            let i = x as usize;
            if self.last[i] == sector && j < self.jiffies[i] {
                found = Some(i);
                break;
            }
            x = self.hnext[i];
        }
        if self.tasks.len() <= pid {
            self.tasks.resize(pid + 1, (0, 0));
        }
        let task = &mut self.tasks[pid];
        let i = match found {
            Some(i) => i,
            None => {
                // the LRU's first entry; add_sequential: the EWMA of the
                // task's streams, weight 8
                let i = self.lru_first as usize;
                task.1 = (task.1 * 7 + task.0) / 8;
                task.0 = 0;
                self.sequential[i] = 0;
                i
            }
        };
        let seq = &mut self.sequential[i];
        if seq.wrapping_add(bytes) > *seq {
            *seq += bytes;
        }
        let (cur, avg) = (*seq, task.1);
        task.0 = cur;
        // rehash by the new end, move to the LRU's tail
        self.hash_del(i);
        self.last[i] = sector + bytes / 512;
        self.jiffies[i] = j + 5 * hz;
        self.hash_add(i);
        self.lru_del(i);
        self.lru_add_tail(i);
        cur.max(avg) >> 9
    }
}

impl Default for SeqTable {
    fn default() -> Self {
        SeqTable::new()
    }
}

/// `fract_exp_two(x, fract_bits)`: 2^(x / 2^fract_bits), in integers.
pub fn fract_exp_two(x: u32, fract_bits: u32) -> u32 {
    let mut mantissa = 1u32 << fract_bits;
    mantissa += x & (mantissa - 1);
    let e = x >> fract_bits;
    ((mantissa as u64) << e >> fract_bits) as u32
}

/// `bch_get_congested`: 0, or a stream size in sectors above which IO
/// bypasses the congested cache. `rand` is the random u32 whose bits
/// jitter it.
pub fn get_congested(b: &BcacheState, now_us: u64, rand: u32) -> u32 {
    if b.conf.congested_read_us == 0 && b.conf.congested_write_us == 0 {
        return 0;
    }
    let mut i = (now_us.wrapping_sub(b.congested_last_us) / 1024) as i64;
    if i < 0 || i > i32::MAX as i64 {
        return 0;
    }
    i += b.congested as i64;
    if i >= 0 {
        return 0;
    }
    i += CONGESTED_MAX as i64;
    if i > 0 {
        i = fract_exp_two(i as u32, 6) as i64;
    }
    i -= rand.count_ones() as i64;
    if i > 0 {
        i as u32
    } else {
        1
    }
}

/// `should_writeback`: whether a write not otherwise bypassed is cached
/// dirty. `in_use` above the sync cutoff: never; above `cutoff_writeback`:
/// only REQ_SYNC, REQ_META and REQ_PRIO writes.
pub fn should_writeback(b: &BcacheState, opf: u8, would_skip: bool) -> bool {
    let in_use = b.set.in_use;
    if b.conf.cache_mode != CacheMode::Writeback || in_use > b.conf.cutoff_writeback_sync {
        return false;
    }
    if would_skip {
        return false;
    }
    opf & (REQ_SYNC | REQ_META) != 0 || in_use <= b.conf.cutoff_writeback
}

/// `blk_fill_rwbs` for bcache's trace lines.
pub fn rwbs(opf: u8) -> &'static str {
    let read = opf & REQ_READ != 0;
    match (read, opf & REQ_SYNC != 0, opf & REQ_META != 0) {
        (true, false, false) => "R",
        (true, true, false) => "RS",
        (true, _, true) => "RM",
        (false, false, false) => "W",
        (false, true, false) => "WS",
        (false, false, true) => "WM",
        (false, true, true) => "WSM",
    }
}

/// The cache set's uuid in trace lines (`%pU`).
pub const SET_UUID: &str = "5f2a1c3e-9b7d-4e6a-8c1f-0d3b2a4e6f81";

impl Kernel {
    /// A bio bcache issues to `dev` (one of its members) for `op`, from
    /// `pid` (the submitter's plug, or the device's kernel thread).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn bcache_issue(
        &mut self,
        bdev: DevId,
        dev: DevId,
        pid: Pid,
        sector: u64,
        nr: u64,
        opf: u8,
        op: Op,
    ) -> bool {
        let tag = self.bcache(bdev).op_new(op);
        let bio = Bio {
            dev,
            sector,
            nr_sectors: nr,
            ino: 0,
            page_start: 0,
            npages: 0,
            submitter: pid,
            submit_time: self.now(),
            seg_sectors: 8,
            parent: None,
            remaining: 0,
            opf,
            owner: BioOwner::Driver {
                dev: bdev as u32,
                tag,
            },
            io_end: None,
        };
        self.submit_bio(bio)
    }

    fn bcache_parent_add(&mut self, parent: BioId) {
        self.bios[parent].as_mut().expect("bio").remaining += 1;
    }

    /// A piece of upper bio `parent` is done; the bio ends with its last.
    pub(crate) fn bcache_parent_done(&mut self, parent: BioId) {
        let p = self.bios[parent].as_mut().expect("parent bio");
        p.remaining -= 1;
        if p.remaining == 0 {
            let (dev, sectors, at) = (p.dev, p.nr_sectors, p.submit_time);
            let read = crate::block::op_is_read(p.opf);
            let now = self.now();
            self.devs[dev].stat.io_done(now, read, sectors, now - at);
            self.bio_endio(parent);
        }
    }

    /// `cached_dev_submit_bio`: the set is no longer idle (a set at its
    /// maximum writeback rate drops to 1), the bypass decision, then the
    /// write or read path. Returns true if `pid` must sleep for a tag.
    pub fn bcache_submit_bio(&mut self, dev: DevId, id: BioId, pid: Pid) -> bool {
        let now = self.now();
        self.devs[dev].stat.io_start(now);
        self.devs[dev].stat.requests_issued += 1;
        let (sector, nr, opf) = {
            let b = self.bios[id].as_ref().expect("bio");
            (b.sector, b.nr_sectors, b.opf)
        };
        // a guard piece, dropped at the end of the submission
        self.bios[id].as_mut().expect("bio").remaining = 1;
        let b = self.bcache(dev);
        if b.idle.on_bio() {
            b.rate.limiter.rate = 1;
        }
        let bypass = self.bcache_check_should_bypass(dev, pid, sector, nr, opf);
        let wait = if crate::block::op_is_read(opf) {
            self.bcache_read(dev, id, pid, sector, nr, opf, bypass)
        } else {
            self.bcache_write(dev, id, pid, sector, nr, opf, bypass)
        };
        self.bcache_parent_done(id);
        wait
    }

    /// `check_should_bypass`.
    fn bcache_check_should_bypass(
        &mut self,
        dev: DevId,
        pid: Pid,
        sector: u64,
        nr: u64,
        opf: u8,
    ) -> bool {
        let j = self.jiffies();
        let hz = self.hz();
        let now_us = self.now() / 1000;
        let write = !crate::block::op_is_read(opf);
        let rand = self.rng.next_u64() as u32;
        let b = self.bcache(dev);
        let mode = b.conf.cache_mode;
        let skip = b.set.in_use > CUTOFF_CACHE_ADD
            || mode == CacheMode::None
            || (mode == CacheMode::Writearound && write);
        let mut why = None;
        let bypass = if skip {
            true
        } else {
            let congested = get_congested(b, now_us, rand);
            if congested == 0 && b.conf.sequential_cutoff == 0 {
                false
            } else {
                let sectors = b.seq.account(pid, sector, nr * 512, j, hz);
                if b.conf.sequential_cutoff != 0 && sectors >= b.conf.sequential_cutoff >> 9 {
                    why = Some("bcache_bypass_sequential");
                    true
                } else if congested != 0 && sectors >= congested as u64 {
                    why = Some("bcache_bypass_congested");
                    true
                } else {
                    false
                }
            }
        };
        if bypass {
            b.stats.bypassed_sectors += nr;
        }
        if let Some(ev) = why {
            let on = match ev {
                "bcache_bypass_sequential" => self.tracer.on.bcache_bypass_sequential,
                _ => self.tracer.on.bcache_bypass_congested,
            };
            if on {
                let name = self.devs[dev].bdi_name();
                let r = rwbs(opf);
                self.trace_line(
                    pid,
                    ev,
                    format_args!("{}  {r} {sector} + {nr}", name.replace(':', ",")),
                );
            }
        }
        bypass
    }

    /// `cached_dev_write`.
    #[allow(clippy::too_many_arguments)]
    fn bcache_write(
        &mut self,
        dev: DevId,
        id: BioId,
        pid: Pid,
        sector: u64,
        nr: u64,
        opf: u8,
        mut bypass: bool,
    ) -> bool {
        let b = self.bcache(dev);
        let end = sector + nr;
        let mut writeback = false;
        // a write over keys being written back goes to the cache, dirty
        if b.wb.overlaps(sector, end) {
            bypass = false;
            writeback = true;
        }
        if should_writeback(b, opf, bypass) {
            bypass = false;
            writeback = true;
        }
        if self.tracer.on.bcache_write {
            self.trace_line(
                pid,
                "bcache_write",
                format_args!(
                    "{SET_UUID} inode 0  {} {sector} + {nr} hit {} bypass {}",
                    rwbs(opf),
                    writeback as u8,
                    bypass as u8
                ),
            );
        }
        let b = self.bcache(dev);
        let backing = b.backing;
        if bypass {
            b.set.invalidate(sector, nr);
            self.bcache_parent_add(id);
            return self.bcache_issue(
                dev,
                backing,
                pid,
                sector + super::BDEV_DATA_START,
                nr,
                opf,
                Op::Piece { parent: id },
            );
        }
        if writeback {
            // the key goes in when the cache write completes: its leaf is
            // fetched meanwhile
            self.bcache(dev).set.keys.prefetch(sector);
            self.bcache_writeback_add(dev);
            return self.bcache_insert_data(dev, id, pid, sector, nr, opf, true);
        }
        // writethrough: the backing device, and a clean copy in the cache
        self.bcache_parent_add(id);
        let mut wait = self.bcache_issue(
            dev,
            backing,
            pid,
            sector + super::BDEV_DATA_START,
            nr,
            opf,
            Op::Piece { parent: id },
        );
        wait |= self.bcache_insert_data(dev, id, pid, sector, nr, opf, false);
        wait
    }

    /// `bch_data_insert_start`: write `[sector, sector + nr)` of upper bio
    /// `id` into the cache, a key per open-bucket piece. Dirty data waits
    /// for buckets; a writethrough copy that finds none turns into an
    /// invalidation of the rest.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn bcache_insert_data(
        &mut self,
        dev: DevId,
        id: BioId,
        pid: Pid,
        sector: u64,
        nr: u64,
        opf: u8,
        dirty: bool,
    ) -> bool {
        if self.bcache(dev).set.count_insert(nr) {
            self.bcache_gc(dev);
        }
        self.bcache_insert_pieces(dev, id, pid, sector, nr, opf, dirty)
    }

    #[allow(clippy::too_many_arguments)]
    fn bcache_insert_pieces(
        &mut self,
        dev: DevId,
        id: BioId,
        pid: Pid,
        mut sector: u64,
        mut nr: u64,
        opf: u8,
        dirty: bool,
    ) -> bool {
        let mut wait = false;
        let wp = pid as u32;
        while nr > 0 {
            let b = self.bcache(dev);
            let got = b.set.alloc_sectors(wp, nr, dirty);
            let got = match got {
                Some(g) => Some(g),
                None if b.set.needs_gc => {
                    // the allocator waits for GC, and GC runs
                    self.bcache_gc(dev);
                    self.bcache(dev).set.alloc_sectors(wp, nr, dirty)
                }
                None => None,
            };
            let Some((cofs, n)) = got else {
                let b = self.bcache(dev);
                if dirty {
                    // bch_alloc_sectors(wait = true): the bio waits
                    self.bcache_parent_add(id);
                    self.bcache(dev).alloc_wait.push_back((id, sector, nr));
                } else {
                    b.set.invalidate(sector, nr);
                }
                return wait;
            };
            let cache = self.bcache(dev).cache;
            self.bcache_parent_add(id);
            let op = Op::CacheWrite {
                parent: Some(id),
                s: sector,
                len: n,
                cofs,
                dirty,
                fill: false,
            };
            wait |= self.bcache_issue(dev, cache, pid, cofs, n, opf & !REQ_READ, op);
            sector += n;
            nr -= n;
        }
        wait
    }

    /// `cached_dev_read`: look the range up; hits read the cache, the first
    /// miss reads the backing device to be copied into the cache (unless
    /// bypassed), later misses just read the backing device.
    #[allow(clippy::too_many_arguments)]
    fn bcache_read(
        &mut self,
        dev: DevId,
        id: BioId,
        pid: Pid,
        sector: u64,
        nr: u64,
        opf: u8,
        bypass: bool,
    ) -> bool {
        let end = sector + nr;
        // (start, len, Some(cofs) for a hit)
        let mut parts = std::mem::take(&mut self.bcache(dev).read_parts);
        parts.clear();
        {
            let b = self.bcache(dev);
            let mut keys = std::mem::take(&mut b.read_keys);
            b.set.lookup(sector, end, &mut keys);
            let mut pos = sector;
            for &(ks, k) in keys.iter() {
                let (a, e) = (ks.max(pos), (ks + k.len as u64).min(end));
                if a >= e {
                    continue;
                }
                if a > pos {
                    parts.push((pos, a - pos, None));
                }
                parts.push((a, e - a, Some(k.cofs + (a - ks))));
                pos = e;
            }
            if pos < end {
                parts.push((pos, end - pos, None));
            }
            b.read_keys = keys;
        }
        let missed = parts.iter().any(|p| p.2.is_none());
        {
            let b = self.bcache(dev);
            match (missed, bypass) {
                (false, false) => b.stats.cache_hits += 1,
                (true, false) => b.stats.cache_misses += 1,
                (false, true) => b.stats.cache_bypass_hits += 1,
                (true, true) => b.stats.cache_bypass_misses += 1,
            }
        }
        let (cache, backing) = {
            let b = self.bcache(dev);
            (b.cache, b.backing)
        };
        let mut wait = false;
        let mut cache_miss = bypass;
        for &(s, n, hit) in parts.iter() {
            self.bcache_parent_add(id);
            wait |= match hit {
                Some(cofs) => {
                    self.bcache_issue(dev, cache, pid, cofs, n, opf, Op::Piece { parent: id })
                }
                None if !cache_miss => {
                    cache_miss = true;
                    let op = Op::MissRead {
                        parent: id,
                        s,
                        len: n,
                        wp: pid as u32,
                    };
                    self.bcache_issue(dev, backing, pid, s + super::BDEV_DATA_START, n, opf, op)
                }
                None => self.bcache_issue(
                    dev,
                    backing,
                    pid,
                    s + super::BDEV_DATA_START,
                    n,
                    opf,
                    Op::Piece { parent: id },
                ),
            };
        }
        self.bcache(dev).read_parts = parts;
        wait
    }

    /// A bio bcache issued completed (`BioOwner::Driver`).
    pub fn bcache_bio_done(&mut self, dev: DevId, tag: u32, b: &Bio) {
        let now = self.now();
        let cache = self.bcache(dev).cache;
        if b.dev == cache {
            self.bcache_count_io(dev, b, now);
        }
        let op = self.bcache(dev).op_take(tag);
        match op {
            Op::Piece { parent } => self.bcache_parent_done(parent),
            Op::CacheWrite {
                parent,
                s,
                len,
                cofs,
                dirty,
                fill,
            } => {
                let set = &mut self.bcache(dev).set;
                if fill {
                    set.insert_fill(s, len, cofs);
                } else {
                    set.insert(s, len, cofs, dirty);
                }
                if let Some(p) = parent {
                    self.bcache_parent_done(p);
                }
            }
            Op::MissRead { parent, s, len, wp } => {
                self.bcache_parent_done(parent);
                self.bcache_cache_fill(dev, s, len, wp);
            }
            Op::WbRead { key } => self.bcache_wb_read_done(dev, key),
            Op::WbWrite { key } => self.bcache_wb_write_done(dev, key),
        }
    }

    /// `cached_dev_read_done`'s insert: the data a miss read goes into the
    /// cache, clean, where nothing was cached meanwhile; without a bucket
    /// ready now it is not cached. `wp` is the reader's write point (the
    /// request's `write_point`, a hash of its task): its writes and its
    /// fills share an open bucket.
    fn bcache_cache_fill(&mut self, dev: DevId, mut s: u64, mut len: u64, wp: u32) {
        let worker = self.bcache(dev).worker;
        if self.bcache(dev).set.count_insert(len) {
            self.bcache_gc(dev);
        }
        while len > 0 {
            let b = self.bcache(dev);
            let Some((cofs, n)) = b.set.alloc_sectors(wp, len, false) else {
                return;
            };
            let cache = b.cache;
            let op = Op::CacheWrite {
                parent: None,
                s,
                len: n,
                cofs,
                dirty: false,
                fill: true,
            };
            let _ = self.bcache_issue(dev, cache, worker, cofs, n, 0, op);
            s += n;
            len -= n;
        }
    }

    /// `bch_bbio_count_io_errors`: a cache-device IO slower than its
    /// threshold makes the cache congested; fast ones undo it.
    fn bcache_count_io(&mut self, dev: DevId, b: &Bio, now: crate::sim::Ns) {
        let bc = self.bcache(dev);
        let threshold = if crate::block::op_is_read(b.opf) {
            bc.conf.congested_read_us
        } else {
            bc.conf.congested_write_us
        };
        if threshold == 0 {
            return;
        }
        let t = now / 1000;
        let us = (now - b.submit_time) / 1000;
        if us > threshold {
            let ms = (us / 1024) as i32;
            bc.congested_last_us = t;
            let ms = ms.min(CONGESTED_MAX + bc.congested);
            bc.congested -= ms;
        } else if bc.congested < 0 {
            bc.congested += 1;
        }
    }

    /// `wake_up_gc` → `bch_btree_gc`: at once, with the writeback thread's
    /// keys kept dirty; then the writes that waited for buckets go on.
    pub(crate) fn bcache_gc(&mut self, dev: DevId) {
        if self.tracer.on.bcache_gc_start {
            let w = self.bcache(dev).worker;
            self.trace_line(w, "bcache_gc_start", format_args!("{SET_UUID}"));
        }
        let b = self.bcache(dev);
        let wb = b.wb.key_cofs();
        b.set.gc(&wb);
        if self.tracer.on.bcache_gc_end {
            let w = self.bcache(dev).worker;
            self.trace_line(w, "bcache_gc_end", format_args!("{SET_UUID}"));
        }
        let waiting: Vec<_> = self.bcache(dev).alloc_wait.drain(..).collect();
        for (id, s, n) in waiting {
            let (pid, opf) = {
                let b = self.bios[id].as_ref().expect("bio");
                (b.submitter, b.opf)
            };
            let _ = self.bcache_insert_pieces(dev, id, pid, s, n, opf, true);
            self.bcache_parent_done(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HZ: u64 = 250;

    #[test]
    fn a_sequential_stream_grows_and_a_random_one_does_not() {
        let mut t = SeqTable::new();
        // 1 MiB writes one after another: the stream grows by 2048 sectors
        for i in 0..5u64 {
            assert_eq!(t.account(7, i * 2048, 1 << 20, 100, HZ), (i + 1) * 2048);
        }
        // another place: a new stream; the task's average takes the old
        // stream's 5 MiB: (0 * 7 + 5 MiB) / 8
        let avg = (5u64 << 20) / 8;
        assert_eq!(t.account(7, 1 << 30, 4096, 100, HZ), avg >> 9);
        // after 5 s the stream is forgotten
        let mut t = SeqTable::new();
        t.account(1, 0, 4096, 100, HZ);
        assert_eq!(t.account(1, 8, 4096, 100 + 5 * HZ - 1, HZ), 16);
        assert_eq!(t.account(1, 16, 4096, 100 + 10 * HZ, HZ), 8);
    }

    #[test]
    fn a_stream_past_4m_is_bypassed_and_the_ewma_keeps_the_next_bypassed() {
        let mut t = SeqTable::new();
        let cutoff = (4u64 << 20) >> 9;
        let mut bypassed_at = None;
        for i in 0..64u64 {
            if t.account(3, i * 256, 128 << 10, 10, HZ) >= cutoff && bypassed_at.is_none() {
                bypassed_at = Some(i);
            }
        }
        // 32 writes of 128 KiB make 4 MiB
        assert_eq!(bypassed_at, Some(31));
        // a long stream's average: 8 MiB / 8 = 1 MiB, below the cutoff
        let s = t.account(3, 1 << 40, 128 << 10, 10, HZ);
        assert_eq!(s, ((8u64 << 20) / 8) >> 9);
    }

    #[test]
    fn fract_exp_two_is_two_to_the_fraction() {
        assert_eq!(fract_exp_two(0, 6), 1);
        assert_eq!(fract_exp_two(64, 6), 2);
        assert_eq!(fract_exp_two(640, 6), 1024);
        // 2^(96/64) = 2.83: mantissa 1.5 · 2
        assert_eq!(fract_exp_two(96, 6), 3);
        assert_eq!(fract_exp_two(1023, 6), (127u64 << 15 >> 6) as u32);
    }

    /// Spec §3.9's cutoffs: in writeback mode every write is cached dirty
    /// up to in_use 40; above it only REQ_SYNC and REQ_META writes; above
    /// 70 none; a sequential or congestion bypass wins; other modes never.
    #[test]
    fn should_writeback_follows_the_cutoffs_and_the_sync_exceptions() {
        let conf = super::super::BcacheConf {
            cache_mode: CacheMode::Writeback,
            ..Default::default()
        };
        let mut b = BcacheState::detached(conf, 1 << 21, 1 << 24);
        let plain = 0u8;
        let dio = REQ_SYNC | crate::block::blk_wbt::REQ_IDLE;
        for (in_use, plain_wb, sync_wb, meta_wb) in [
            (0, true, true, true),
            (40, true, true, true),
            (41, false, true, true),
            (70, false, true, true),
            (71, false, false, false),
        ] {
            b.set.in_use = in_use;
            assert_eq!(should_writeback(&b, plain, false), plain_wb, "{in_use}");
            assert_eq!(should_writeback(&b, dio, false), sync_wb, "{in_use}");
            assert_eq!(should_writeback(&b, REQ_META, false), meta_wb, "{in_use}");
            assert!(!should_writeback(&b, dio, true));
        }
        b.set.in_use = 0;
        b.conf.cache_mode = CacheMode::Writethrough;
        assert!(!should_writeback(&b, dio, false));
    }

    /// No thresholds, no congestion; a cache IO slower than the threshold
    /// makes the next ~2^(i/64) sectors of a stream bypass.
    #[test]
    fn congestion_follows_slow_cache_io() {
        let mut b = BcacheState::detached(Default::default(), 1 << 21, 1 << 24);
        assert_eq!(get_congested(&b, 1_000_000, 0), 0);
        // a 30 ms write (threshold 20 ms): congested by 29 (30000/1024)
        b.congested = -29;
        b.congested_last_us = 1_000_000;
        // i = 0 + (-29) + 1024 = 995: 2^(995/64) = 48128, less 0 bits
        assert_eq!(get_congested(&b, 1_000_000, 0), fract_exp_two(995, 6));
        // 30 units of 1024 us later it has worn off
        assert_eq!(get_congested(&b, 1_000_000 + 30 * 1024, 0), 0);
        b.conf.congested_read_us = 0;
        b.conf.congested_write_us = 0;
        assert_eq!(get_congested(&b, 1_000_000, 0), 0);
    }

    #[test]
    fn rwbs_flags() {
        assert_eq!(rwbs(REQ_SYNC | crate::block::blk_wbt::REQ_IDLE), "WS");
        assert_eq!(rwbs(0), "W");
        assert_eq!(rwbs(REQ_READ), "R");
    }
}
