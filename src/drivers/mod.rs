//! Device models.

pub mod disk;
