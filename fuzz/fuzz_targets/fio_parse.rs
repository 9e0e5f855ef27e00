//! fio's job syntax on arbitrary bytes: the parser answers (jobs or an
//! error), and never panics, loops or overflows. The input is also read as
//! a command line (one argument per line), and every job's unsupported
//! reason is asked for.
//!
//! Run: `cargo +nightly fuzz run fio_parse -- -max_total_time=60`

#![no_main]

use libfuzzer_sys::fuzz_target;
use wbsim::workload::fio::parse::{
    parse_cmdline, parse_job_text, select_sections, unsupported_reason, MachineVars,
};

const M: MachineVars = MachineVars {
    pagesize: 4096,
    ncpus: 4,
    mb_memory: 8192,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let env = |v: &str| (v.len() == 1).then(|| v.repeat(3));
    // No directory: an `include` reads nothing from the fuzzing host
    // unless given an absolute path, which the parser may open.
    if let Ok(jobs) = parse_job_text(&text, "fuzz.fio", None, &env, &M) {
        for j in &jobs {
            let _ = unsupported_reason(j);
        }
        let names: Vec<String> = jobs.iter().take(1).map(|j| j.name.clone()).collect();
        let _ = select_sections(jobs, &names);
    }
    let args: Vec<String> = text.lines().map(String::from).collect();
    if let Ok(jobs) = parse_cmdline(&args, &M) {
        for j in &jobs {
            let _ = unsupported_reason(j);
        }
    }
});
