//! Property tests of the readers of outside input, the same entry points
//! as the fuzz targets (fuzz/): the scenario loader, `--set`, the trace
//! parser, fs_mark's flags and the size, rate and duration syntax. Each
//! answers (a value or an error) and never panics; the errors name their
//! source; what wbsim writes, it reads back. fio's parser has its own in
//! tests/fio_parse.rs.

use proptest::prelude::*;
use wbsim::scenario::Scenario;
use wbsim::trace::{format_line, parse_counted, parse_line};
use wbsim::units::{parse_duration, parse_rate, parse_size};
use wbsim::workload::fs_mark::FsMarkArgs;

/// Dotted paths near real keys, and some that are not.
fn path_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "vm.dirty_bytes",
            "vm.dirty_background_bytes",
            "vm.dirty_ratio",
            "machine.memory",
            "machine.cpus",
            "machine.cost.syscall",
            "run.duration",
            "run.warmup",
            "run.seed",
            "trace.events",
            "devices.loop0.type",
            "devices.loop0.size",
            "devices.loop0.write_bps",
            "devices.new.type",
            "jobs.dd.bs",
            "jobs.dd.numjobs",
            "jobs.dd.size",
            "jobs.x.type",
            "filesystems.fs0.type",
        ])
        .prop_map(String::from),
        "[a-z_.]{0,24}",
    ]
}

/// Values of every kind `--set` and TOML take, and nonsense.
fn value_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        (
            0u64..100_000,
            prop::sample::select(vec![
                "", "k", "M", "G", "T", "KiB", "MiB", "ms", "us", "ns", "s", "h", "MB/s", "%"
            ])
        )
            .prop_map(|(n, u)| format!("{n}{u}")),
        Just("true".to_string()),
        Just("[]".to_string()),
        Just("[\"balance_dirty_pages\", \"writeback_written\"]".to_string()),
        prop::sample::select(vec![
            "ssd", "hdd", "loop", "dd", "fs_mark", "ext4", "xfs", "bcache", "fio"
        ])
        .prop_map(String::from),
        ".{0,16}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// `--set`s on the built-in scenario: a scenario, or an error that
    /// names one of them (or the derivation from them).
    #[test]
    fn set_overrides_answer(sets in prop::collection::vec((path_strategy(), value_strategy()), 0..4)) {
        let sets: Vec<String> = sets.iter().map(|(p, v)| format!("{p}={v}")).collect();
        if let Err(e) = Scenario::builtin(&sets) {
            let m = e.to_string();
            prop_assert!(!m.is_empty());
            prop_assert!(m.contains("--set") || m.contains("built-in"), "{}", m);
        }
    }

    /// Arbitrary `--set` text, `=` or not.
    #[test]
    fn set_text_answers(sets in prop::collection::vec(".{0,40}", 0..4)) {
        if let Err(e) = Scenario::builtin(&sets) {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    /// Scenario files of sections and keys near the real ones, and junk.
    #[test]
    fn scenario_files_answer(lines in prop::collection::vec(prop_oneof![
        (path_strategy(), value_strategy()).prop_map(|(p, v)| {
            match p.rsplit_once('.') {
                Some((s, k)) => format!("[{s}]\n{k} = {}", if v.parse::<f64>().is_ok() || v == "true" || v.starts_with('[') { v } else { format!("{v:?}") }),
                None => format!("{p} = {v:?}"),
            }
        }),
        "[\\[\\]a-z_.=\" 0-9{},#-]{0,30}",
        ".{0,30}",
    ], 0..8)) {
        let text = lines.join("\n");
        if let Err(e) = Scenario::load_str(&text, "p.toml", "p", &[]) {
            let m = e.to_string();
            prop_assert!(m.starts_with("p.toml") || m.contains("p.toml"), "{}", m);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any text: records or counted skipped lines, never a panic; the
    /// records and the skipped lines account for every non-comment line.
    #[test]
    fn trace_text_answers(lines in prop::collection::vec(prop_oneof![
        ".{0,80}",
        "[ a-z0-9/<>.-]{1,16}-[0-9]{1,7} +\\[[0-9]{3}\\] [.sN1h]{5} +[0-9]{1,20}\\.[0-9]{1,8}: [a-z_]{1,20}: [a-z_=0-9 :,]{0,60}",
    ], 0..20)) {
        let text = lines.join("\n");
        let (recs, skipped) = parse_counted(&text);
        let events = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).count();
        prop_assert_eq!(recs.len() as u64 + skipped.count, events as u64);
        let _ = skipped.describe("p/trace.txt");
    }

    /// What wbsim prints, its parser reads back: comm, pid, CPU, time
    /// (to the µs), event and fields.
    #[test]
    fn trace_lines_round_trip(
        t in 0u64..(1u64 << 60),
        comm in "[a-zA-Z0-9/_:<>.-]{1,20}",
        pid in any::<u32>(),
        cpu in 0usize..1000,
        event in "[a-z_]{1,30}",
        fields in prop::collection::vec(("[a-z_]{1,12}", any::<i64>()), 0..6),
    ) {
        let body = fields.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
        let mut s = String::new();
        format_line(&mut s, t, &comm, pid, cpu, &event, format_args!("{body}"));
        let r = parse_line(s.trim_end_matches('\n')).unwrap();
        prop_assert_eq!(r.comm.as_str(), comm.as_str());
        prop_assert_eq!((r.pid, r.cpu as usize), (pid, cpu));
        prop_assert_eq!(r.ts, t / 1000 * 1000);
        prop_assert_eq!(r.event.as_str(), event.as_str());
        for (k, v) in &fields {
            let k = match k.as_str() { "bdi_setpoint" => "wb_setpoint", "bdi_dirty" => "wb_dirty", k => k };
            prop_assert!(r.fields.iter().any(|(n, x)| n == k && x == v));
        }
    }

    /// fs_mark's flags: near-real command lines and junk.
    #[test]
    fn fs_mark_args_answer(args in prop::collection::vec(prop_oneof![
        (prop::sample::select(vec!["-d", "-D", "-t", "-n", "-s", "-L", "-S", "-N", "-w", "-r", "-F", "-k", "-x"]),
            prop_oneof![any::<i64>().prop_map(|n| n.to_string()), "[a-z/0-9.]{0,10}"])
            .prop_map(|(f, v)| format!("{f} {v}")),
        ".{0,12}",
    ], 0..8)) {
        let _ = FsMarkArgs::parse(&args.join(" "));
    }

    /// Sizes, rates and durations: a value or an error; plain integers
    /// read as themselves.
    #[test]
    fn units_answer(s in prop_oneof![
        ".{0,16}",
        "[0-9]{0,22}(\\.[0-9]{0,4})?[ kKmMgGtTpPiBbs/%nuh]{0,5}",
    ], n in 0u64..(1 << 40)) {
        let _ = parse_size(&s);
        let _ = parse_rate(&s);
        let _ = parse_duration(&s);
        prop_assert_eq!(parse_size(&n.to_string()), Ok(n));
    }
}
