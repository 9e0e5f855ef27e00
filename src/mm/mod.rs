//! Memory management: page-cache accounting (`filemap`), node counters
//! (`vmstat`), the bdi_writeback structure (`backing_dev`), dirty
//! throttling (`page_writeback`) and what a hypervisor's free page reporting
//! costs the guest's allocations (`page_reporting`), the zones and their
//! watermarks (`page_alloc`), kswapd and direct reclaim (`vmscan`), the LRU
//! lists and their scanning (`lru`), the shrinkers (`shrinker`), and the
//! allocator's retries and the OOM killer (`oom_kill`).

pub mod backing_dev;
pub mod filemap;
pub mod lru;
pub mod memcontrol;
pub mod oom_kill;
pub mod page_alloc;
pub mod page_reporting;
pub mod page_writeback;
pub mod page_writeback_legacy;
pub mod page_writeback_v3_2;
pub mod readahead;
pub mod shrinker;
pub mod vmscan;
pub mod vmstat;
