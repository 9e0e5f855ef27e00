//! bcache (drivers/md/bcache): an SSD cache set in front of a slower
//! backing device.
//!
//! Built so far: the writeback-rate controller and its rate limiter, as
//! functions of the cache set's state (`writeback.rs`, `util.rs`), checked
//! against the kernel's integer arithmetic by hand-worked tests. The device
//! itself (`type = "bcache"`: the write path's cutoffs and bypass, buckets
//! and GC, the writeback thread) is not built yet and no scenario can
//! name it; docs/layout.md says what it will use.

pub mod util;
pub mod writeback;
