//! `--set path=value` on the built-in scenario: each line of the input is
//! one `--set` argument, applied in order (a later one overriding an
//! earlier one, every one checked). The scenario loads or answers with an
//! error naming its `--set`, and never panics, loops or overflows.
//!
//! Run: `cargo +nightly fuzz run set_override -- -max_total_time=60`
//! (seed corpus: `tools/fuzz-corpus.sh`, the `--set`s of the docs and the
//! examples' keys).

#![no_main]

use libfuzzer_sys::fuzz_target;
use wbsim::scenario::Scenario;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let sets: Vec<String> = text.lines().map(String::from).collect();
    if let Err(e) = Scenario::builtin(&sets) {
        // every error renders
        let _ = e.to_string();
    }
});
