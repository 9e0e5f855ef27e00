//! fs_mark's command-line flags, and wbsim's size, rate and duration
//! syntax, on arbitrary text: a value or an error, never a panic.
//!
//! Run: `cargo +nightly fuzz run fs_mark_args -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;
use wbsim::units::{parse_duration, parse_rate, parse_size};
use wbsim::workload::fs_mark::FsMarkArgs;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = FsMarkArgs::parse(&text);
    for l in text.lines() {
        let _ = parse_size(l);
        let _ = parse_rate(l);
        let _ = parse_duration(l);
    }
});
