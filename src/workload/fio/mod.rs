//! fio: job files as workloads, and fio's own outputs.
//!
//! - `job.rs`: the typed job (`FioJob`) that the parser fills and the
//!   engine reads;
//! - `parse.rs`: fio's job-file and command-line syntax; `options.rs`: the
//!   names and types of fio's options;
//! - `stats.rs`: per-job statistics with fio's latency histogram (no stored
//!   samples);
//! - `output.rs`: fio's JSON, its human-readable summary and its log files;
//! - `engine.rs`: the job's tasks on the simulated machine.

pub mod engine;
pub mod job;
pub mod options;
pub mod output;
pub mod parse;
pub mod report;
pub mod scenario;
pub mod stats;

pub use job::{Dir, FioError, FioJob};
