//! Device models.

pub mod disk;
pub mod hdd;
pub mod loopdev;
pub mod raid0;
pub mod ssd;
pub mod write_cache;
