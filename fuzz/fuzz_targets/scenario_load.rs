//! The scenario loader on arbitrary text: lines starting `--set ` are
//! `--set` arguments, the rest is the scenario file. It loads or answers
//! with an error (file:line or --set, what, what is expected), and never
//! panics, loops or overflows.
//!
//! Run: `cargo +nightly fuzz run scenario_load -- -max_total_time=60`
//! (seed corpus: `tools/fuzz-corpus.sh`, the examples' scenarios).

#![no_main]

use libfuzzer_sys::fuzz_target;
use wbsim::scenario::Scenario;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut sets = Vec::new();
    let mut body = String::new();
    for l in text.lines() {
        match l.strip_prefix("--set ") {
            Some(s) => sets.push(s.to_string()),
            None => {
                body.push_str(l);
                body.push('\n');
            }
        }
    }
    if let Err(e) = Scenario::load_str(&body, "fuzz.toml", "fuzz", &sets) {
        // every error renders
        let _ = e.to_string();
    }
});
