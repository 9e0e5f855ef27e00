//! The zoned page allocator's bookkeeping (mm/page_alloc.c): one node's
//! zones with their managed and free pages, `min_free_kbytes` and the
//! per-zone MIN/LOW/HIGH watermarks, `lowmem_reserve` (zoneinfo's
//! `protection`), `totalreserve_pages`, and the allocation path's watermark
//! checks (`get_page_from_freelist`, `__alloc_pages_slowpath`), which wake
//! kswapd and enter direct reclaim (mm/vmscan.rs).
//!
//! State is O(zones): counts, never pages.

use crate::kernel::{Kernel, Pid};

/// `MAX_NR_ZONES` of an x86_64 kernel with ZONE_DEVICE (Debian's): DMA,
/// DMA32, Normal, Movable, Device.
pub const MAX_NR_ZONES: usize = 5;
pub const ZONE_DMA: usize = 0;
pub const ZONE_DMA32: usize = 1;
pub const ZONE_NORMAL: usize = 2;
pub const ZONE_MOVABLE: usize = 3;
/// The names /proc/zoneinfo prints.
pub const ZONE_NAMES: [&str; MAX_NR_ZONES] = ["DMA", "DMA32", "Normal", "Movable", "Device"];
/// The keys of `machine.zones.NAME`.
pub const ZONE_KEYS: [&str; MAX_NR_ZONES] = ["dma", "dma32", "normal", "movable", "device"];
/// `sysctl_lowmem_reserve_ratio`'s defaults (DMA, DMA32 256; Normal 32).
pub const DEFAULT_LOWMEM_RESERVE_RATIO: [u64; MAX_NR_ZONES] = [256, 256, 32, 0, 0];
/// x86_64's `pageblock_nr_pages` (2 MiB) and `MIGRATE_PCPTYPES`.
const PAGEBLOCK_NR_PAGES: u64 = 512;
const MIGRATE_PCPTYPES: u64 = 3;
/// `SWAP_CLUSTER_MAX`.
pub const SWAP_CLUSTER_MAX: u64 = 32;

pub const WMARK_MIN: usize = 0;
pub const WMARK_LOW: usize = 1;
pub const WMARK_HIGH: usize = 2;
pub const WMARK_PROMO: usize = 3;

/// One zone as a scenario describes it (pages).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ZoneConf {
    pub spanned: u64,
    pub present: u64,
    /// Pages the buddy allocator manages (zoneinfo's `managed`).
    pub managed: u64,
    /// The zone's managed pages when the kernel set the watermarks. 6.1
    /// sets them at boot (`init_per_zone_wmark_min`, then khugepaged's
    /// raise), before the initrd and the kernel's init sections are freed
    /// into the zone; they are not set again when those pages arrive.
    pub managed_boot: u64,
}

/// What the watermarks are computed from: the zones and the sysctls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemConf {
    pub zones: [ZoneConf; MAX_NR_ZONES],
    /// `vm.min_free_kbytes` written by the user (None: the kernel's value).
    pub min_free_kbytes: Option<u64>,
    /// `vm.watermark_scale_factor` (1..=3000, default 10).
    pub watermark_scale_factor: u64,
    /// `vm.lowmem_reserve_ratio`.
    pub lowmem_reserve_ratio: [u64; MAX_NR_ZONES],
    /// Transparent hugepages enabled (`always` or `madvise`): khugepaged
    /// starts and raises `min_free_kbytes` (`set_recommended_min_free_kbytes`).
    pub thp: bool,
    /// ZONE_MOVABLE's MIN watermark as highmem's: managed/1024 clamped to
    /// 32..=128 (the host rig's 6.18 kernel does this; 6.1 gives it its
    /// share of `min_free_kbytes`, 0 for an empty zone).
    pub movable_min_like_highmem: bool,
}

impl MemConf {
    /// The zones of an x86_64 PC with `memory` bytes of RAM, as the kernel
    /// splits it: DMA is the first 16 MiB (3998 pages present, 3840
    /// managed on every machine measured), DMA32 the RAM below 4 GiB (all
    /// of it up to 3 GiB; above, the firmware's hole leaves 3 GiB less
    /// DMA's 16 MiB), Normal the rest. A machine with all its RAM below
    /// 4 GiB (a qemu guest) loses 38 pages at the top to the firmware. The
    /// kernel keeps back (memblock: the memmap, the kernel image, page
    /// tables) 12007 pages plus 35/2048 of the RAM, fitted to the 1 and 2
    /// GiB guests (exact) and this 24 GiB machine (0.01% of Normal's
    /// managed pages off); with a Normal zone the kernel's 9421 pages
    /// come from DMA32 and the rest from Normal. No initrd is assumed
    /// (`managed_boot` = `managed`).
    pub fn derive_zones(memory: u64, page_size: u64) -> [ZoneConf; MAX_NR_ZONES] {
        let gib = (1u64 << 30) / page_size;
        let total = memory / page_size;
        let dma_span = (16u64 << 20) / page_size;
        let mut z = [ZoneConf::default(); MAX_NR_ZONES];
        z[ZONE_DMA] = ZoneConf {
            spanned: dma_span - 1,
            present: 3998,
            managed: 3840,
            managed_boot: 3840,
        };
        let reserved = 12007 + total * 35 / 2048;
        if total <= 3 * gib {
            let present = total.saturating_sub(dma_span + 38);
            let managed = present.saturating_sub(reserved);
            z[ZONE_DMA32] = ZoneConf {
                spanned: present,
                present,
                managed,
                managed_boot: managed,
            };
        } else {
            let present = 3 * gib - dma_span;
            let managed = present - 9421;
            z[ZONE_DMA32] = ZoneConf {
                spanned: 4 * gib - dma_span,
                present,
                managed,
                managed_boot: managed,
            };
            let present = total - 3 * gib;
            let managed = present.saturating_sub(reserved - 9421);
            z[ZONE_NORMAL] = ZoneConf {
                spanned: present,
                present,
                managed,
                managed_boot: managed,
            };
        }
        z
    }
}

/// A zone's state: its size, watermarks, protection and free pages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Zone {
    pub conf: ZoneConf,
    /// `_watermark[MIN, LOW, HIGH, PROMO]` (no boost: no fragmentation model).
    pub wmark: [u64; 4],
    /// `lowmem_reserve[j]`: pages an allocation whose highest usable zone
    /// is j leaves free here (zoneinfo's `protection`).
    pub lowmem_reserve: [u64; MAX_NR_ZONES],
    /// `NR_FREE_PAGES` (no per-CPU drift).
    pub free: u64,
}

impl Zone {
    pub fn managed(&self) -> u64 {
        self.conf.managed
    }
    pub fn min(&self) -> u64 {
        self.wmark[WMARK_MIN]
    }
    pub fn low(&self) -> u64 {
        self.wmark[WMARK_LOW]
    }
    pub fn high(&self) -> u64 {
        self.wmark[WMARK_HIGH]
    }
    /// Pages in use (allocated from this zone).
    pub fn used(&self) -> u64 {
        self.conf.managed - self.free
    }
    /// Pages an order-0 allocation can take before failing
    /// `__zone_watermark_ok(z, 0, mark, highest_zoneidx, 0)`: it passes
    /// while free > mark + lowmem_reserve[highest_zoneidx].
    pub fn room_above(&self, mark: u64, highest_zoneidx: usize) -> u64 {
        self.free
            .saturating_sub(mark + self.lowmem_reserve[highest_zoneidx])
    }
    /// `__zone_watermark_ok` for order 0 with no reserve access.
    pub fn watermark_ok(&self, mark: u64, highest_zoneidx: usize) -> bool {
        self.free > mark + self.lowmem_reserve[highest_zoneidx]
    }
}

/// The node's zones and the values derived from the sysctls.
#[derive(Clone, Debug, Default)]
pub struct Zones {
    pub z: [Zone; MAX_NR_ZONES],
    pub min_free_kbytes: u64,
    pub watermark_scale_factor: u64,
    pub lowmem_reserve_ratio: [u64; MAX_NR_ZONES],
    pub movable_min_like_highmem: bool,
    /// `totalreserve_pages` (`calculate_totalreserve_pages`).
    pub totalreserve_pages: u64,
}

impl Zones {
    /// The boot sequence: `init_per_zone_wmark_min` (postcore_initcall:
    /// `calculate_min_free_kbytes`, `setup_per_zone_wmarks`,
    /// `setup_per_zone_lowmem_reserve`), then khugepaged's start
    /// (`hugepage_init` → `set_recommended_min_free_kbytes`) raising
    /// `min_free_kbytes` and setting the watermarks again; a user's
    /// `vm.min_free_kbytes` is written after boot
    /// (`min_free_kbytes_sysctl_handler`). All from the boot-time managed
    /// pages. Free pages start at each zone's managed pages.
    pub fn setup(c: &MemConf, page_size: u64) -> Zones {
        let mut zs = Zones {
            watermark_scale_factor: c.watermark_scale_factor,
            lowmem_reserve_ratio: c.lowmem_reserve_ratio,
            movable_min_like_highmem: c.movable_min_like_highmem,
            ..Default::default()
        };
        for (z, zc) in zs.z.iter_mut().zip(c.zones.iter()) {
            z.conf = *zc;
        }
        let kib = page_size / 1024;
        zs.calculate_min_free_kbytes(kib);
        zs.setup_per_zone_wmarks(kib);
        zs.setup_per_zone_lowmem_reserve();
        if c.thp {
            zs.set_recommended_min_free_kbytes(kib);
        }
        if let Some(v) = c.min_free_kbytes {
            zs.min_free_kbytes = v;
            zs.setup_per_zone_wmarks(kib);
        }
        for z in zs.z.iter_mut() {
            z.free = z.conf.managed;
        }
        zs
    }

    /// `nr_free_zone_pages(gfp_zone(GFP_USER))` = `nr_free_buffer_pages`:
    /// managed pages above the high watermark in the zones up to Normal.
    fn nr_free_buffer_pages(&self) -> u64 {
        self.z[..=ZONE_NORMAL]
            .iter()
            .map(|z| z.conf.managed_boot.saturating_sub(z.high()))
            .sum()
    }

    /// `calculate_min_free_kbytes`: sqrt(16 × lowmem KiB), clamped to
    /// 128..=262144 (at boot the high watermarks are still 0).
    fn calculate_min_free_kbytes(&mut self, kib: u64) {
        let lowmem_kbytes = self.nr_free_buffer_pages() * kib;
        self.min_free_kbytes = isqrt(lowmem_kbytes * 16).clamp(128, 262_144);
    }

    /// `set_recommended_min_free_kbytes` (mm/khugepaged.c): two free
    /// pageblocks per populated zone up to Normal, plus
    /// MIGRATE_PCPTYPES² pageblocks each, at most 5% of
    /// `nr_free_buffer_pages`; raises min_free_kbytes only.
    fn set_recommended_min_free_kbytes(&mut self, kib: u64) {
        let nr_zones = self.z[..=ZONE_NORMAL]
            .iter()
            .filter(|z| z.conf.present > 0)
            .count() as u64;
        let mut rec = PAGEBLOCK_NR_PAGES * nr_zones * 2
            + PAGEBLOCK_NR_PAGES * nr_zones * MIGRATE_PCPTYPES * MIGRATE_PCPTYPES;
        rec = rec.min(self.nr_free_buffer_pages() / 20) * kib;
        if rec > self.min_free_kbytes {
            self.min_free_kbytes = rec;
        }
        self.setup_per_zone_wmarks(kib);
    }

    /// `__setup_per_zone_wmarks`: each zone's share of min_free_kbytes by
    /// its managed pages is MIN; LOW and HIGH add the larger of MIN/4 and
    /// watermark_scale_factor/10000 of the zone each; then
    /// `calculate_totalreserve_pages`.
    pub fn setup_per_zone_wmarks(&mut self, kib: u64) {
        let pages_min = self.min_free_kbytes / kib;
        // no highmem on x86_64: every zone is lowmem
        let lowmem_pages: u64 = self.z.iter().map(|z| z.conf.managed_boot).sum();
        let wsf = self.watermark_scale_factor;
        let movable_like_highmem = self.movable_min_like_highmem;
        for (i, z) in self.z.iter_mut().enumerate() {
            let managed = z.conf.managed_boot;
            let share = (pages_min * managed).checked_div(lowmem_pages).unwrap_or(0);
            z.wmark[WMARK_MIN] = if i == ZONE_MOVABLE && movable_like_highmem {
                (managed / 1024).clamp(SWAP_CLUSTER_MAX, 128)
            } else {
                share
            };
            let gap = (share / 4).max(managed * wsf / 10000);
            z.wmark[WMARK_LOW] = z.wmark[WMARK_MIN] + gap;
            z.wmark[WMARK_HIGH] = z.wmark[WMARK_LOW] + gap;
            z.wmark[WMARK_PROMO] = z.wmark[WMARK_HIGH] + gap;
        }
        self.calculate_totalreserve_pages();
    }

    /// `setup_per_zone_lowmem_reserve`: lower zone i keeps back, from
    /// allocations that could use zone j > i, the managed pages of zones
    /// i+1..=j over zone i's ratio (0 with ratio 0 or an empty zone i).
    pub fn setup_per_zone_lowmem_reserve(&mut self) {
        for i in 0..MAX_NR_ZONES - 1 {
            let ratio = self.lowmem_reserve_ratio[i];
            let clear = ratio == 0 || self.z[i].conf.managed_boot == 0;
            let mut upper = 0;
            for j in i + 1..MAX_NR_ZONES {
                upper += self.z[j].conf.managed_boot;
                self.z[i].lowmem_reserve[j] = if clear { 0 } else { upper / ratio };
            }
        }
        self.calculate_totalreserve_pages();
    }

    /// `calculate_totalreserve_pages`: per zone the largest reserve plus
    /// the high watermark, at most its managed pages, summed.
    fn calculate_totalreserve_pages(&mut self) {
        self.totalreserve_pages = self
            .z
            .iter()
            .enumerate()
            .map(|(i, z)| {
                let max = z.lowmem_reserve[i..].iter().copied().max().unwrap_or(0);
                (max + z.high()).min(z.conf.managed_boot)
            })
            .sum();
    }

    pub fn nr_free_pages(&self) -> u64 {
        self.z.iter().map(|z| z.free).sum()
    }

    /// The zonelist of an allocation whose highest usable zone is
    /// `highest`: populated zones from `highest` down (one node).
    pub fn zonelist(&self, highest: usize) -> impl Iterator<Item = usize> + '_ {
        (0..=highest).rev().filter(|&i| self.z[i].conf.managed > 0)
    }

    /// `pgdat_balanced`: any managed zone up to `highest` passes the high
    /// watermark with its protection.
    pub fn pgdat_balanced(&self, highest: usize) -> bool {
        self.zonelist(highest)
            .any(|i| self.z[i].watermark_ok(self.z[i].high(), highest))
    }

    /// Take up to `n` pages from the zones in zonelist order, each zone
    /// down to `mark` (WMARK_*) plus its protection. Returns what it took.
    pub fn take(&mut self, n: u64, mark: usize, highest: usize) -> u64 {
        let mut left = n;
        for i in (0..=highest).rev() {
            if left == 0 {
                break;
            }
            let z = &mut self.z[i];
            if z.conf.managed == 0 {
                continue;
            }
            let t = z.room_above(z.wmark[mark], highest).min(left);
            z.free -= t;
            left -= t;
        }
        n - left
    }

    /// Take `n` pages whatever the watermarks (boot-time memory, the
    /// allocator's reserves when reclaim can do no more), zonelist order.
    /// Returns what it took (less than `n` only if memory is exhausted).
    pub fn take_any(&mut self, n: u64, highest: usize) -> u64 {
        let mut left = n;
        for i in (0..=highest).rev() {
            let t = self.z[i].free.min(left);
            self.z[i].free -= t;
            left -= t;
        }
        n - left
    }

    /// Pages freed (by reclaim or truncation) go back to the zones they
    /// were taken from; without page identity, in proportion to each
    /// zone's used pages (the LRU holds each zone's pages in that
    /// proportion), the rounding remainder to the most used zone.
    pub fn give_back(&mut self, n: u64) {
        let used: u64 = self.z.iter().map(|z| z.used()).sum();
        if n == 0 || used == 0 {
            return;
        }
        let n = n.min(used);
        let mut given = 0;
        let mut most = 0;
        for i in 0..MAX_NR_ZONES {
            let u = self.z[i].used();
            if u > self.z[most].used() {
                most = i;
            }
            let share = (n as u128 * u as u128 / used as u128) as u64;
            self.z[i].free += share;
            given += share;
        }
        let mut rest = n - given;
        // the most used zone first, then any zone with room
        for i in std::iter::once(most).chain(0..MAX_NR_ZONES) {
            let t = self.z[i].used().min(rest);
            self.z[i].free += t;
            rest -= t;
        }
    }

    /// /proc/zoneinfo's lines for the fields modelled (6.1's layout, which has no `promo`
    /// line: the free pages, the watermarks, the sizes, `protection`).
    pub fn render_zoneinfo(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        for (i, z) in self.z.iter().enumerate() {
            let _ = writeln!(s, "Node 0, zone {:>8}", ZONE_NAMES[i]);
            let _ = writeln!(s, "  pages free     {}", z.free);
            for (name, v) in [
                ("min", z.wmark[WMARK_MIN]),
                ("low", z.wmark[WMARK_LOW]),
                ("high", z.wmark[WMARK_HIGH]),
                ("spanned", z.conf.spanned),
                ("present", z.conf.present),
                ("managed", z.conf.managed),
            ] {
                let _ = writeln!(s, "        {name:<8} {v}");
            }
            let p: Vec<String> = z.lowmem_reserve.iter().map(|x| x.to_string()).collect();
            let _ = writeln!(s, "        protection: ({})", p.join(", "));
        }
        s
    }
}

/// `int_sqrt`: the integer square root (floor).
fn isqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// A /proc/zoneinfo file read back: per zone its sizes, watermarks and
/// protection (for tests against a real kernel's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneInfo {
    pub zones: Vec<(String, ZoneInfoZone)>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneInfoZone {
    pub spanned: u64,
    pub present: u64,
    pub managed: u64,
    pub wmark: [u64; 4],
    pub protection: Vec<u64>,
}

impl ZoneInfo {
    /// Parse the zone headers, `min`/`low`/`high`/`promo`, the sizes and
    /// `protection` of each zone; other lines are skipped.
    pub fn parse(text: &str) -> Result<ZoneInfo, String> {
        let mut zi = ZoneInfo::default();
        for (ln, line) in text.lines().enumerate() {
            let t = line.trim();
            if let Some(rest) = t.strip_prefix("Node ") {
                let name = rest
                    .split_whitespace()
                    .last()
                    .ok_or_else(|| format!("line {}: a zone header without a name", ln + 1))?;
                zi.zones.push((name.to_string(), ZoneInfoZone::default()));
                continue;
            }
            let Some((_, z)) = zi.zones.last_mut() else {
                continue;
            };
            if let Some(p) = t.strip_prefix("protection: (") {
                let p = p.trim_end_matches(')');
                z.protection = p
                    .split(',')
                    .map(|x| x.trim().parse::<u64>())
                    .collect::<Result<_, _>>()
                    .map_err(|e| format!("line {}: protection: {e}", ln + 1))?;
                continue;
            }
            let mut w = t.split_whitespace();
            let (Some(k), Some(v), None) = (w.next(), w.next(), w.next()) else {
                continue;
            };
            let Ok(v) = v.parse::<u64>() else { continue };
            match k {
                "min" => z.wmark[WMARK_MIN] = v,
                "low" => z.wmark[WMARK_LOW] = v,
                "high" => z.wmark[WMARK_HIGH] = v,
                "promo" => z.wmark[WMARK_PROMO] = v,
                "spanned" => z.spanned = v,
                "present" => z.present = v,
                "managed" => z.managed = v,
                _ => {}
            }
        }
        Ok(zi)
    }
}

// ---- the allocation path ----------------------------------------------------

/// The gfp masks of the allocations modelled, as ftrace prints them
/// (`show_gfp_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gfp {
    /// A page-cache page for a buffered write (`grab_cache_page_write_begin`:
    /// the mapping's GFP_HIGHUSER_MOVABLE with __GFP_WRITE), as ext4's
    /// mappings give it.
    PageCacheWrite,
    /// The same on XFS, whose mappings drop `__GFP_FS` (`xfs_setup_inode`).
    PageCacheWriteNofs,
    /// A page-cache page for a read (`readahead_gfp_mask`): it does not
    /// retry (`__GFP_NORETRY`).
    PageCacheRead,
    /// An anonymous or shmem page (GFP_HIGHUSER_MOVABLE).
    Anon,
    /// A slab page of the dentry or inode caches (GFP_KERNEL).
    Kernel,
}

impl Gfp {
    pub fn name(self) -> &'static str {
        match self {
            Gfp::PageCacheWrite => "GFP_HIGHUSER_MOVABLE|__GFP_WRITE",
            Gfp::PageCacheWriteNofs => {
                "GFP_NOFS|__GFP_HIGHMEM|__GFP_HARDWALL|__GFP_MOVABLE|__GFP_WRITE"
            }
            Gfp::PageCacheRead => "GFP_HIGHUSER_MOVABLE|__GFP_NOWARN|__GFP_NORETRY",
            Gfp::Anon => "GFP_HIGHUSER_MOVABLE",
            Gfp::Kernel => "GFP_KERNEL",
        }
    }
    /// `__GFP_FS`: may the allocation's reclaim enter the filesystem (the
    /// superblock shrinker), and may it OOM-kill? A read's page-cache pages
    /// are taken without it, as XFS's mappings give them (the model does
    /// not tell a read's filesystem apart); a write's have it on ext4 and
    /// not on XFS.
    pub fn fs(self) -> bool {
        matches!(self, Gfp::Anon | Gfp::Kernel | Gfp::PageCacheWrite)
    }
    /// Whether the slow path loops when reclaim fails (not `__GFP_NORETRY`).
    pub fn retries(self) -> bool {
        self != Gfp::PageCacheRead
    }
    /// `gfp_zone`: __GFP_HIGHMEM|__GFP_MOVABLE but for GFP_KERNEL's.
    pub fn zone(self) -> usize {
        match self {
            Gfp::Kernel => ZONE_NORMAL,
            _ => ZONE_MOVABLE,
        }
    }
}

impl Kernel {
    /// The one entry point of every page allocation the model makes
    /// (`__alloc_pages` for `n` order-0 pages with mask `gfp`, by task
    /// `pid`, None for the boot's and a layout's): the fast path takes
    /// pages from the zones in zonelist order down to LOW
    /// (`get_page_from_freelist`); what is left enters the slow path
    /// (`__alloc_pages_slowpath`): kswapd is woken (`wake_all_kswapds`),
    /// the zones are tried down to MIN, and below MIN the task reclaims
    /// itself (`__alloc_pages_direct_reclaim`) and tries again, until
    /// reclaim makes no progress. Then the pages come from the reserves
    /// below MIN at once, and a task that may retry goes on with the
    /// allocation at its next step (mm/oom_kill.rs: `should_reclaim_retry`
    /// and the OOM killer); a readahead allocation (`__GFP_NORETRY`) or one
    /// outside a task keeps them. Keeps `nr_free_pages`.
    pub fn page_alloc(&mut self, pid: Option<Pid>, n: u64, gfp: Gfp) {
        if n == 0 {
            return;
        }
        let highest = gfp.zone();
        let mut got = self.zones.take(n, WMARK_LOW, highest);
        if got < n {
            self.wake_all_kswapds(pid, highest, gfp);
            got += self.zones.take(n - got, WMARK_MIN, highest);
            while got < n {
                let Some(p) = pid else { break };
                if self.direct_reclaim(p, gfp) == 0 {
                    break;
                }
                got += self.zones.take(n - got, WMARK_MIN, highest);
            }
            if got < n {
                got += self.alloc_from_reserves(pid, n - got, gfp);
            }
        }
        self.vm.nr_free_pages = self.vm.nr_free_pages.saturating_sub(n);
        debug_assert!(got == n || self.vm.nr_free_pages == 0);
    }

    /// `page_alloc` for a task whose direct reclaim may sleep in a shrinker
    /// (≤ 5.8 XFS inode reclaim): returns the pages it got; fewer than `n`
    /// means the task now sleeps there and asks again for the rest when
    /// woken (after `xfs_reclaim_resume`).
    pub fn page_alloc_may_sleep(&mut self, pid: Pid, n: u64, gfp: Gfp) -> u64 {
        if n == 0 {
            return 0;
        }
        let highest = gfp.zone();
        let mut got = self.zones.take(n, WMARK_LOW, highest);
        if got < n {
            self.wake_all_kswapds(Some(pid), highest, gfp);
            got += self.zones.take(n - got, WMARK_MIN, highest);
            while got < n {
                self.vmscan.may_sleep = Some(pid);
                let progress = self.direct_reclaim(pid, gfp);
                self.vmscan.may_sleep = None;
                got += self.zones.take(n - got, WMARK_MIN, highest);
                if self.vmscan.shrink_waits.contains_key(&pid) {
                    self.vm.nr_free_pages -= got;
                    return got;
                }
                if progress == 0 {
                    break;
                }
            }
            if got < n {
                self.alloc_from_reserves(Some(pid), n - got, gfp);
            }
        }
        self.vm.nr_free_pages = self.vm.nr_free_pages.saturating_sub(n);
        n
    }

    /// Whether `n` pages come from the fast path, above LOW in the zones
    /// (so the allocation neither wakes kswapd nor reclaims).
    pub fn page_alloc_fast_ok(&self, n: u64, gfp: Gfp) -> bool {
        let highest = gfp.zone();
        let mut room = 0;
        for i in self.zones.zonelist(highest) {
            let z = &self.zones.z[i];
            room += z.room_above(z.low(), highest);
            if room >= n {
                return true;
            }
        }
        false
    }

    /// Pages the fast path can give before every zone is at LOW (plus its
    /// protection).
    pub fn page_alloc_fast_room(&self, gfp: Gfp) -> u64 {
        let highest = gfp.zone();
        self.zones
            .zonelist(highest)
            .map(|i| {
                let z = &self.zones.z[i];
                z.room_above(z.low(), highest)
            })
            .sum()
    }

    /// `n` pages freed (reclaim, truncation): back to their zones.
    pub fn page_free(&mut self, n: u64) {
        self.zones.give_back(n);
        self.vm.nr_free_pages += n;
    }

    /// `wake_all_kswapds`: the node's kswapd, for the first zone of the
    /// zonelist.
    pub(crate) fn wake_all_kswapds(&mut self, pid: Option<Pid>, highest: usize, gfp: Gfp) {
        let first = self.zones.zonelist(highest).next();
        if let Some(z) = first {
            self.wakeup_kswapd(pid, z, highest, gfp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(zones: [ZoneConf; MAX_NR_ZONES], thp: bool) -> MemConf {
        MemConf {
            zones,
            min_free_kbytes: None,
            watermark_scale_factor: 10,
            lowmem_reserve_ratio: DEFAULT_LOWMEM_RESERVE_RATIO,
            thp,
            movable_min_like_highmem: false,
        }
    }

    #[test]
    fn isqrt_floors() {
        for x in [
            0u64,
            1,
            2,
            3,
            4,
            15,
            16,
            17,
            14_125_696,
            u32::MAX as u64 * 7,
        ] {
            let r = isqrt(x);
            assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
        }
    }

    /// The code comment's examples of `calculate_min_free_kbytes`.
    #[test]
    fn min_free_kbytes_sqrt() {
        for (mem, want) in [(1u64 << 30, 4096), (4 << 30, 8192), (16 << 30, 16384)] {
            let mut z = [ZoneConf::default(); MAX_NR_ZONES];
            let p = mem / 4096;
            z[ZONE_NORMAL] = ZoneConf {
                spanned: p,
                present: p,
                managed: p,
                managed_boot: p,
            };
            let zs = Zones::setup(&conf(z, false), 4096);
            assert_eq!(zs.min_free_kbytes, want);
        }
    }

    /// The spec's worked example A: one 16 GiB Normal zone, no THP.
    #[test]
    fn worked_example_a() {
        let mut z = [ZoneConf::default(); MAX_NR_ZONES];
        let p = 4_194_304;
        z[ZONE_NORMAL] = ZoneConf {
            spanned: p,
            present: p,
            managed: p,
            managed_boot: p,
        };
        let zs = Zones::setup(&conf(z, false), 4096);
        assert_eq!(zs.z[ZONE_NORMAL].wmark[..3], [4096, 8290, 12484]);
        // with THP the raise to 67584 KiB (3 zones would be 16896 pages;
        // one populated zone up to Normal: 5632)
        let zs = Zones::setup(&conf(z, true), 4096);
        assert_eq!(zs.min_free_kbytes, 5632 * 4);
    }

    /// `vm.min_free_kbytes` written after boot replaces the computed
    /// value; `vm.watermark_scale_factor` widens the gaps.
    #[test]
    fn sysctls() {
        let z = MemConf::derive_zones(16 << 30, 4096);
        let mut c = conf(z, true);
        let zs = Zones::setup(&c, 4096);
        assert_eq!(zs.min_free_kbytes, 67584);
        c.min_free_kbytes = Some(4096 * 4);
        let zs = Zones::setup(&c, 4096);
        assert_eq!(zs.min_free_kbytes, 16384);
        let mins: u64 = zs.z.iter().map(|z| z.min()).sum();
        assert!(mins <= 4096 && mins + MAX_NR_ZONES as u64 > 4096, "{mins}");
        c.watermark_scale_factor = 100;
        let zs = Zones::setup(&c, 4096);
        let n = &zs.z[ZONE_NORMAL];
        assert_eq!(n.low() - n.min(), n.conf.managed / 100);
        assert_eq!(n.high() - n.low(), n.conf.managed / 100);
        // protection: Normal's pages over DMA32's ratio
        assert_eq!(
            zs.z[ZONE_DMA32].lowmem_reserve[ZONE_NORMAL],
            n.conf.managed / 256
        );
        c.lowmem_reserve_ratio = [256, 0, 32, 0, 0];
        let zs = Zones::setup(&c, 4096);
        assert_eq!(zs.z[ZONE_DMA32].lowmem_reserve, [0; MAX_NR_ZONES]);
    }

    #[test]
    fn take_and_give_back_keep_the_sum() {
        let z = MemConf::derive_zones(1 << 30, 4096);
        let mut zs = Zones::setup(&conf(z, true), 4096);
        let total = zs.nr_free_pages();
        let got = zs.take(100_000, WMARK_LOW, ZONE_MOVABLE);
        assert_eq!(got, 100_000);
        // DMA32 first: DMA untouched while DMA32 is above LOW
        assert_eq!(zs.z[ZONE_DMA].free, zs.z[ZONE_DMA].conf.managed);
        let all = zs.take(u64::MAX / 2, WMARK_LOW, ZONE_MOVABLE);
        // nothing below LOW + protection in any zone
        for z in &zs.z {
            if z.conf.managed > 0 {
                assert!(!z.watermark_ok(z.low(), ZONE_MOVABLE));
            }
        }
        zs.give_back(got + all);
        assert_eq!(zs.nr_free_pages(), total);
    }
}
