//! The one trace parser (wbsim's traces and a kernel's ftrace text) on
//! arbitrary text: records or counted skipped lines, never a panic (an
//! overflowing timestamp is a skipped line).
//!
//! Run: `cargo +nightly fuzz run trace_parse -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;
use wbsim::trace::parse_counted;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (recs, skipped) = parse_counted(&text);
    let _ = skipped.describe("fuzz/trace.txt");
    for r in &recs {
        let _ = r.get("pause");
    }
});
