//! fio's job syntax against fio itself: the job files under
//! tests/data/fio/jobs/ (written for these tests), checked against
//! `fio --parse-only` and `fio --showcmd` when fio is installed; fio's own
//! example job files when `WBSIM_FIO_CORPUS` names their directory; and
//! random and mutated job texts that must never panic.
//!
//! Files named `bad-*` must be refused; a file with a `; wbsim-differs:`
//! line says why fio --parse-only answers otherwise.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use wbsim::workload::fio::parse::{
    parse_cmdline, parse_job_file, parse_job_text, select_sections, unsupported_reason, MachineVars,
};
use wbsim::workload::fio::{job::Rw, FioJob};

const M: MachineVars = MachineVars {
    pagesize: 4096,
    ncpus: 4,
    mb_memory: 8192,
};

fn no_env(_: &str) -> Option<String> {
    None
}

fn jobs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio/jobs")
}

fn job_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    v.sort();
    v
}

fn fio_installed() -> bool {
    Command::new("fio").arg("--version").output().is_ok()
}

/// `fio --parse-only FILE` in the file's directory (for its includes).
fn fio_accepts(path: &Path) -> bool {
    Command::new("fio")
        .arg("--parse-only")
        .arg(path.file_name().unwrap())
        .current_dir(path.parent().unwrap())
        .env_remove("WBSIM_FIO_TEST_UNSET")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn parse(path: &Path) -> Result<Vec<FioJob>, wbsim::workload::fio::FioError> {
    parse_job_file(path, &no_env, &M)
}

#[test]
fn seed_job_files_parse() {
    let r = parse(&jobs_dir().join("seed003-readers.fio")).unwrap();
    assert_eq!(r.len(), 1);
    let j = &r[0];
    assert_eq!(j.name, "iostest-read");
    assert_eq!(j.description.as_deref(), Some("\"reader\""));
    assert_eq!((j.numjobs, j.rw, j.new_group), (13, Rw::RandRead, true));
    assert_eq!(j.directory.as_deref(), Some("/mnt/iostestmnt/fio"));
    assert_eq!(j.runtime, Some(60_000_000_000));
    assert!(j.time_based && j.group_reporting);
    assert_eq!(j.bs[0].min, 4096);
    assert_eq!(
        j.size,
        Some(wbsim::workload::fio::job::FioSize::Bytes(512 << 20))
    );
    assert_eq!(unsupported_reason(j), None);
    assert_eq!(
        j.options[0],
        ("directory".into(), "/mnt/iostestmnt/fio".into())
    );
    assert_eq!(j.options.len(), 12);
    let w = parse(&jobs_dir().join("seed003-writers.fio")).unwrap();
    let j = &w[0];
    assert_eq!(j.name, "iostest-write");
    assert_eq!(j.cgroup.as_deref(), Some("writers"));
    assert_eq!((j.numjobs, j.rw), (3, Rw::Write));
    assert_eq!(unsupported_reason(j), None);
}

#[test]
fn own_corpus_against_fio() {
    let files = job_files(&jobs_dir());
    assert!(files.len() >= 20, "{} job files", files.len());
    let fio = fio_installed();
    if !fio {
        eprintln!("fio is not installed: checking wbsim's answers only");
    }
    let mut failures = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(f).unwrap();
        let differs = text.contains("; wbsim-differs:");
        let ours = parse(f);
        let want_ok = !name.starts_with("bad-");
        if ours.is_ok() != want_ok {
            failures.push(format!("{name}: wbsim {ours:?}"));
        }
        if let Err(e) = &ours {
            // Every refusal names the file and line.
            if !e.to_string().contains(&name) {
                failures.push(format!("{name}: error origin {}", e.origin));
            }
        }
        if fio && !differs && fio_accepts(f) != ours.is_ok() {
            failures.push(format!(
                "{name}: fio accepts {}, wbsim {:?}",
                fio_accepts(f),
                ours.as_ref().map(|_| ()).map_err(|e| e.to_string())
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `fio --showcmd FILE` prints each section's own options in the order fio
/// applies them; ours are the globals' then the job's.
#[test]
fn showcmd_matches_options() {
    if !fio_installed() {
        eprintln!("fio is not installed: skipping the --showcmd comparison");
        return;
    }
    let mut checked = 0;
    for f in job_files(&jobs_dir()) {
        let text = std::fs::read_to_string(&f).unwrap();
        let Ok(jobs) = parse(&f) else { continue };
        // One [global] at most, and at the top; values without blanks (the
        // command line is printed unquoted); no $keywords (fio uses the
        // host's).
        let globals = text.matches("[global]").count();
        let first_section = text.lines().find(|l| l.trim_start().starts_with('['));
        if globals > 1
            || (globals == 1 && first_section != Some("[global]"))
            || text.contains('$')
            || text.contains("wbsim-differs")
            || jobs
                .iter()
                .any(|j| j.options.iter().any(|(_, v)| v.contains(' ')))
        {
            continue;
        }
        let out = Command::new("fio")
            .arg("--showcmd")
            .arg(f.file_name().unwrap())
            .current_dir(f.parent().unwrap())
            .output()
            .unwrap();
        let line = String::from_utf8_lossy(&out.stdout).to_string();
        let toks: Vec<&str> = line.split_whitespace().skip(1).collect();
        let mut segs: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for t in toks {
            let t = t.trim_start_matches("--");
            let (n, v) = t.split_once('=').unwrap_or((t, ""));
            if n == "name" {
                segs.push(Vec::new());
            } else {
                segs.last_mut()
                    .unwrap()
                    .push((n.to_string(), v.to_string()));
            }
        }
        assert_eq!(segs.len(), jobs.len() + 1, "{}: {line}", f.display());
        for (j, own) in jobs.iter().zip(&segs[1..]) {
            let mut want = segs[0].clone();
            want.extend(own.iter().cloned());
            assert_eq!(j.options, want, "{}: job {}: {line}", f.display(), j.name);
        }
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} files compared");
}

#[test]
fn cmdline_matches_job_file() {
    let args: Vec<String> = "--name=random-writers --filename=/dev/bcache0 --ioengine=libaio --iodepth=1 --rw=randrw --blocksize=64k,8k --direct=1 --numjobs=1 --write_lat_log=mix --log_avg_msec=10"
        .split(' ')
        .map(String::from)
        .collect();
    let c = parse_cmdline(&args, &M).unwrap();
    let f = parse(&jobs_dir().join("cmdline-equivalent.fio")).unwrap();
    assert_eq!(c.len(), 1);
    // The same options; fio records `name` for a command-line job, and
    // applies command-line options in their order rather than by priority.
    let mut co: Vec<_> = c[0].options.iter().filter(|(n, _)| n != "name").collect();
    let mut fo: Vec<_> = f[0].options.iter().collect();
    co.sort();
    fo.sort();
    assert_eq!(co, fo);
    assert_eq!(format!("{:?}", c[0].bs), format!("{:?}", f[0].bs));
    assert_eq!(
        (c[0].direct, c[0].iodepth, c[0].rw),
        (f[0].direct, f[0].iodepth, f[0].rw)
    );
    if fio_installed() {
        let ok = Command::new("fio")
            .arg("--parse-only")
            .args(&args)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "fio refuses {args:?}");
    }
}

#[test]
fn section_selection() {
    let jobs = parse(&jobs_dir().join("globals-twice.fio")).unwrap();
    let s = select_sections(jobs.clone(), &["second".to_string()]).unwrap();
    assert_eq!(s.len(), 1);
    assert_eq!((s[0].bs[0].min, s[0].direct), (16384, true));
    assert!(select_sections(jobs, &["third".to_string()])
        .unwrap_err()
        .msg
        .contains("[third]"));
}

/// fio's example job files (`WBSIM_FIO_CORPUS`): per file, whether fio
/// accepts it, whether wbsim parses it and whether wbsim simulates it (or
/// why not). tools/fio-corpus.sh runs this.
#[test]
fn fio_examples_corpus() {
    let Ok(dir) = std::env::var("WBSIM_FIO_CORPUS") else {
        eprintln!("WBSIM_FIO_CORPUS is not set: skipping fio's example job files");
        return;
    };
    let fio = fio_installed();
    let files = job_files(Path::new(&dir));
    let (mut agree, mut both, mut fio_ok, mut ours_ok, mut sim) = (0, 0, 0, 0, 0);
    println!("{:<40} {:<5} {:<6} simulates", "file", "fio", "wbsim");
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().to_string();
        let fa = fio.then(|| fio_accepts(f));
        // Named by the file name alone in the reasons.
        let text = String::from_utf8_lossy(&std::fs::read(f).unwrap()).to_string();
        let ours = parse_job_text(&text, &name, f.parent(), &no_env, &M);
        let simulated = match &ours {
            Ok(jobs) if jobs.is_empty() => "no jobs".to_string(),
            Ok(jobs) => match jobs.iter().find_map(unsupported_reason) {
                None => {
                    sim += 1;
                    "yes".to_string()
                }
                Some(r) => format!("no: {r}"),
            },
            Err(e) => format!("error: {e}"),
        };
        ours_ok += ours.is_ok() as u32;
        if let Some(a) = fa {
            fio_ok += a as u32;
            both += 1;
            agree += (a == ours.is_ok()) as u32;
        }
        println!(
            "{:<40} {:<5} {:<6} {}",
            name,
            fa.map_or("-", |a| if a { "yes" } else { "no" }),
            if ours.is_ok() { "yes" } else { "no" },
            simulated
        );
    }
    println!(
        "{} files: fio accepts {fio_ok}, wbsim parses {ours_ok}, wbsim simulates {sim}; acceptance agrees on {agree} of {both}",
        files.len()
    );
    // Nothing panics on any of them.
    for f in &files {
        let t = std::fs::read_to_string(f).unwrap_or_default();
        for cut in [t.len() / 3, t.len() / 2] {
            let cut = (0..=cut)
                .rev()
                .find(|&k| t.is_char_boundary(k))
                .unwrap_or(0);
            let _ = parse_job_text(&t[..cut], "cut.fio", None, &no_env, &M);
        }
    }
}

/// Lines job files are made of, for the generators.
fn line_strategy() -> impl Strategy<Value = String> {
    let names = prop::sample::select(vec![
        "bs",
        "rw",
        "size",
        "rate",
        "runtime",
        "thinktime",
        "direct",
        "time_based",
        "bsrange",
        "ioengine",
        "numjobs",
        "include",
        "kb_base",
        "random_distribution",
        "rate_iops",
        "filesize",
        "offset",
        "startdelay",
        "verify",
        "nosuch",
        "hipri",
    ]);
    let vals = prop::sample::select(vec![
        "",
        "4k",
        "64k,8k",
        "4k-64k",
        "(1+2)k",
        "(",
        "((((1",
        "1/0",
        "(1/0)",
        "($pagesize*2)",
        "$ncpus",
        "${X}",
        "${",
        "50%",
        "3z",
        "randrw:8",
        "zipf:1.2",
        "-1",
        "0x10",
        "99999999999999999999999",
        "1000",
        "libaio",
        "rbd",
        "1m:2m",
        "2^64",
        "(2^-1)",
        "(1%0)",
        "1.5k",
        "%",
        "k",
        "=",
        ",,,",
        "(-(-(-1)))",
        "(9223372036854775807*2)",
    ]);
    prop_oneof![
        (names, vals).prop_map(|(n, v)| if v.is_empty() {
            n.to_string()
        } else {
            format!("{n}={v}")
        }),
        "[a-z\\[\\];#=$(){},: -]{0,20}",
        Just("[global]".to_string()),
        Just("[job]".to_string()),
        ".{0,30}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Random and mutated job texts: an answer, never a panic.
    #[test]
    fn never_panics(lines in prop::collection::vec(line_strategy(), 0..12)) {
        let text = lines.join("\n");
        let env = |v: &str| (v == "X").then(|| "8k".to_string());
        let _ = parse_job_text(&text, "p.fio", None, &env, &M);
        let args: Vec<String> = lines.iter().map(|l| format!("--{l}")).collect();
        let _ = parse_cmdline(&args, &M);
    }

    /// A simple job printed from its options parses to the same job.
    #[test]
    fn round_trip(
        rw in prop::sample::select(vec!["read", "write", "randread", "randwrite", "rw", "randrw"]),
        bs in 1u64..1024,
        bsw in prop::option::of(1u64..1024),
        size_m in 1u64..4096,
        depth in 1u32..256,
        direct in any::<bool>(),
        runtime in prop::option::of(1u64..3600),
        flag in any::<bool>(),
    ) {
        let mut t = format!("[global]\nsize={size_m}m\n[j]\nrw={rw}\nbs={bs}k");
        if let Some(w) = bsw {
            t.push_str(&format!(",{w}k"));
        }
        t.push_str(&format!("\niodepth={depth}\ndirect={}\n", direct as u8));
        if let Some(r) = runtime {
            t.push_str(&format!("runtime={r}\n"));
        }
        if flag {
            t.push_str("time_based\n");
        }
        let a = parse_job_text(&t, "r.fio", None, &no_env, &M).unwrap();
        prop_assert_eq!(a.len(), 1);
        let printed: String = std::iter::once("[j]".to_string())
            .chain(a[0].options.iter().map(|(n, v)| if v.is_empty() { n.clone() } else { format!("{n}={v}") }))
            .collect::<Vec<_>>()
            .join("\n");
        let b = parse_job_text(&printed, "r.fio", None, &no_env, &M).unwrap();
        prop_assert_eq!(&a[0].options, &b[0].options);
        prop_assert_eq!(format!("{:?}", a[0].bs), format!("{:?}", b[0].bs));
        prop_assert_eq!(a[0].bs[1].min, bsw.unwrap_or(bs) * 1024);
        prop_assert_eq!((a[0].rw, a[0].iodepth, a[0].direct, a[0].runtime, a[0].time_based),
            (b[0].rw, b[0].iodepth, b[0].direct, b[0].runtime, b[0].time_based));
        prop_assert_eq!(a[0].size, b[0].size);
    }
}

/// Numbers as fio reads them: the first value fio's parse debug output
/// shows (`fio --debug=parse`, "out=N") against the typed field, for tricky
/// spellings (suffixes, kb_base, hex, decimals, separators, blanks).
#[test]
fn numbers_match_fio_debug_output() {
    if !fio_installed() {
        eprintln!("fio is not installed: skipping the value comparison");
        return;
    }
    type Get = fn(&FioJob) -> u64;
    let cases: &[(&str, Get)] = &[
        ("size=4KiB", |j| size_of(j)),
        ("size=4kb", |j| size_of(j)),
        ("size=1.5k", |j| size_of(j)),
        ("size=10b", |j| size_of(j)),
        ("size=0x10", |j| size_of(j)),
        ("size=3x", |j| size_of(j)),
        ("size=2G", |j| size_of(j)),
        ("size=1Tib", |j| size_of(j)),
        ("size=1m-2m", |j| size_of(j)),
        ("size=+5k", |j| size_of(j)),
        ("bs=8k,16k", |j| j.bs[0].min),
        ("bs=8KiB", |j| j.bs[0].min),
        ("bs= 8k", |j| j.bs[0].min),
        ("bs=4k:8k", |j| j.bs[0].min),
        ("rate=1m", |j| j.rate[0]),
        ("rate=2M,1k", |j| j.rate[0]),
        ("rate_iops=100", |j| j.rate_iops[0]),
        ("runtime=10", |j| j.runtime.unwrap_or(0) / 1000),
        ("runtime=10x", |j| j.runtime.unwrap_or(0) / 1000),
        ("runtime=2m", |j| j.runtime.unwrap_or(0) / 1000),
        ("runtime=1h", |j| j.runtime.unwrap_or(0) / 1000),
        ("runtime=1m:30s", |j| j.runtime.unwrap_or(0) / 1000),
        ("runtime=500ms", |j| j.runtime.unwrap_or(0) / 1000),
        ("runtime=10sec", |j| j.runtime.unwrap_or(0) / 1000),
        ("ramp_time=3s", |j| j.ramp_time / 1000),
        ("thinktime=5", |j| j.thinktime / 1000),
        ("thinktime=5ms", |j| j.thinktime / 1000),
        ("thinktime=1s", |j| j.thinktime / 1000),
        ("thinktime=2usec", |j| j.thinktime / 1000),
        ("startdelay=2", |j| j.startdelay / 1000),
        ("iodepth=0x20", |j| j.iodepth as u64),
        ("numjobs=4k", |j| j.numjobs as u64),
        ("offset=1g", |j| j.offset),
        ("io_size=3m", |j| j.io_size.unwrap_or(0)),
        ("log_avg_msec=250", |j| j.log_avg_msec as u64),
    ];
    fn size_of(j: &FioJob) -> u64 {
        match j.size {
            Some(wbsim::workload::fio::job::FioSize::Bytes(b)) => b,
            _ => u64::MAX,
        }
    }
    let dir = std::env::temp_dir().join(format!("wbsim-fio-values-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut bad = Vec::new();
    for (i, (line, get)) in cases.iter().enumerate() {
        for kb in ["", "kb_base=1000\n"] {
            let text = format!("[a]\n{kb}{line}\n");
            let f = dir.join(format!("v{i}.fio"));
            std::fs::write(&f, &text).unwrap();
            let out = Command::new("fio")
                .args(["--debug=parse", "--parse-only"])
                .arg(&f)
                .output()
                .unwrap();
            let log = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let opt = line.split('=').next().unwrap();
            // The first "out=" after the option's own handle_option line.
            let fio_v = log
                .split_once(&format!("handle_option={opt},"))
                .and_then(|(_, s)| s.split("out=").nth(1))
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.parse::<u64>().ok());
            let ours = parse_job_text(&text, "v.fio", None, &no_env, &M)
                .ok()
                .map(|j| get(&j[0]));
            if fio_v != ours {
                bad.push(format!(
                    "{}: fio {fio_v:?}, wbsim {ours:?}",
                    text.replace('\n', " ")
                ));
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
