//! wbsim: a deterministic simulator of the Linux storage writeback stack.
//!
//! The source tree mirrors the kernel's: `mm/page_writeback.rs` holds
//! balance_dirty_pages, `fs/fs_writeback.rs` the flusher, `block/` the
//! block layer, `drivers/` the device models. `sim/` is the small
//! discrete-event engine underneath, `kernel/` the machine that ties the
//! pieces together and schedules tasks on CPUs.

pub mod block;
pub mod cli;
pub mod drivers;
pub mod fidelity;
pub mod fs;
pub mod kernel;
pub mod klib;
pub mod live;
pub mod metrics;
pub mod mm;
pub mod output;
pub mod plot;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod sweep;
pub mod trace;
pub mod units;
pub mod workload;
