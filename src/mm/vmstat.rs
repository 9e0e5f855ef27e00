//! Node page counters with their /proc/vmstat names (mm/vmstat.c).

use serde::Serialize;

/// Counters in pages. Only the ones the model moves are kept.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VmStat {
    pub nr_free_pages: u64,
    pub nr_inactive_file: u64,
    pub nr_active_file: u64,
    pub nr_anon_pages: u64,
    pub nr_file_pages: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_dirtied: u64,
    pub nr_written: u64,
    /// Pages reclaimed by kswapd and by allocating tasks (mm/vmscan.rs).
    pub pgsteal_kswapd: u64,
    pub pgsteal_direct: u64,
    /// Pages scanned by kswapd and by direct reclaim.
    #[serde(skip_serializing_if = "is_zero")]
    pub pgscan_kswapd: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pgscan_direct: u64,
    /// `allocstall_<zone>`: entries into direct reclaim, by the zone of the
    /// allocation's gfp mask (`gfp_zone`).
    #[serde(skip_serializing_if = "all_zero")]
    pub allocstall: [u64; crate::mm::page_alloc::MAX_NR_ZONES],
    /// balance_pgdat runs.
    #[serde(skip_serializing_if = "is_zero")]
    pub pageoutrun: u64,
    /// kswapd woken during its 100 ms nap, or unbalanced after it.
    #[serde(skip_serializing_if = "is_zero")]
    pub kswapd_low_wmark_hit_quickly: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub kswapd_high_wmark_hit_quickly: u64,
    /// Anonymous pages on the inactive list (of `nr_anon_pages`; the
    /// boot's anonymous memory and the loop worker's shmem pages are
    /// counted active, a workload's working set inactive, as 6.1 adds new
    /// anonymous pages).
    #[serde(skip_serializing_if = "is_zero")]
    pub nr_inactive_anon: u64,
    /// Pages moved to the active list, back to the inactive one, scanned
    /// on the active list, and rotated to the inactive tail at writeback
    /// end (mm/lru.rs).
    #[serde(skip_serializing_if = "is_zero")]
    pub pgactivate: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pgdeactivate: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pgrefill: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub pgrotated: u64,
    /// Pages reclaim passed to ->writepage, and dirty pages it tagged
    /// PG_reclaim instead.
    #[serde(skip_serializing_if = "is_zero")]
    pub nr_vmscan_write: u64,
    #[serde(skip_serializing_if = "is_zero")]
    pub nr_vmscan_immediate_reclaim: u64,
    /// Shrinker objects scanned (`slabs_scanned`).
    #[serde(skip_serializing_if = "is_zero")]
    pub slabs_scanned: u64,
    /// Pages of reclaimable slab (`nr_slab_reclaimable`: the dentry and
    /// inode caches) and the bytes of objects in them.
    #[serde(skip_serializing_if = "is_zero")]
    pub nr_slab_reclaimable: u64,
    #[serde(skip)]
    pub slab_bytes: u64,
    /// Processes the OOM killer killed (`oom_kill`).
    #[serde(skip_serializing_if = "is_zero")]
    pub oom_kill: u64,
    /// KiB read from block devices (`pgpgin`).
    #[serde(skip_serializing_if = "is_zero")]
    pub pgpgin: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

fn all_zero(x: &[u64; crate::mm::page_alloc::MAX_NR_ZONES]) -> bool {
    x.iter().all(|&v| v == 0)
}

impl VmStat {
    /// The /proc/vmstat text for the counters the model keeps, plus the two
    /// threshold lines (`nr_dirty_threshold`, `nr_dirty_background_threshold`).
    pub fn render(&self, thresh: u64, bg_thresh: u64) -> String {
        let mut s = String::new();
        let mut put = |k: &str, v: u64| {
            s.push_str(k);
            s.push(' ');
            s.push_str(&v.to_string());
            s.push('\n');
        };
        put("nr_free_pages", self.nr_free_pages);
        put("nr_inactive_anon", self.nr_inactive_anon);
        put("nr_active_anon", self.nr_anon_pages - self.nr_inactive_anon);
        put("nr_inactive_file", self.nr_inactive_file);
        put("nr_active_file", self.nr_active_file);
        put("nr_anon_pages", self.nr_anon_pages);
        put("nr_file_pages", self.nr_file_pages);
        put("nr_dirty", self.nr_dirty);
        put("nr_writeback", self.nr_writeback);
        // the VFS caches' slab, once something filled them
        if self.nr_slab_reclaimable > 0 || self.slabs_scanned > 0 {
            put("nr_slab_reclaimable", self.nr_slab_reclaimable);
        }
        let reclaimed = self.pageoutrun > 0 || self.allocstall.iter().any(|&v| v > 0);
        if reclaimed {
            put("nr_vmscan_write", self.nr_vmscan_write);
            put(
                "nr_vmscan_immediate_reclaim",
                self.nr_vmscan_immediate_reclaim,
            );
        }
        put("nr_dirtied", self.nr_dirtied);
        put("nr_written", self.nr_written);
        // printed once something was read, so write-only runs' files stay
        // as they were
        if self.pgpgin > 0 {
            put("pgpgin", self.pgpgin);
        }
        put("nr_dirty_threshold", thresh);
        put("nr_dirty_background_threshold", bg_thresh);
        // second reads activate pages without reclaim
        if reclaimed || self.pgactivate > 0 {
            put("pgactivate", self.pgactivate);
            put("pgdeactivate", self.pgdeactivate);
        }
        if reclaimed {
            put("pgrefill", self.pgrefill);
        }
        put("pgsteal_kswapd", self.pgsteal_kswapd);
        put("pgsteal_direct", self.pgsteal_direct);
        // reclaim's counters, once kswapd or direct reclaim ran (runs
        // that never reclaim keep the file as it was), in /proc/vmstat's order
        if reclaimed {
            put("pgscan_kswapd", self.pgscan_kswapd);
            put("pgscan_direct", self.pgscan_direct);
            for (i, z) in ["dma", "dma32", "normal", "movable", "device"]
                .iter()
                .enumerate()
            {
                put(&format!("allocstall_{z}"), self.allocstall[i]);
            }
            if self.slabs_scanned > 0 {
                put("slabs_scanned", self.slabs_scanned);
            }
            put("pageoutrun", self.pageoutrun);
            put(
                "kswapd_low_wmark_hit_quickly",
                self.kswapd_low_wmark_hit_quickly,
            );
            put(
                "kswapd_high_wmark_hit_quickly",
                self.kswapd_high_wmark_hit_quickly,
            );
            put("pgrotated", self.pgrotated);
            if self.oom_kill > 0 {
                put("oom_kill", self.oom_kill);
            }
        }
        s
    }
}
