//! fio's job syntax: job files (`__parse_jobs_ini` in fio's init.c) and
//! command-line jobs (`parse_cmd_line`), read into `FioJob`s.
//!
//! What it follows of fio (3.33, checked against `fio --parse-only`):
//! - `[global]` (any section whose name starts with "global") changes the
//!   defaults of the sections *below* it; a later `[global]` adds to them.
//! - A line is cut at its first `;` or `#` (`strip_blank_end`), so a
//!   trailing comment is dropped, and leading and trailing blanks go.
//! - `name=value`: the name loses trailing blanks, the value keeps its
//!   leading ones (fio then refuses `rw = write` and reads `bs = 8k` as 8
//!   bytes, as it does).
//! - `include FILE` inside a section; an included file may not open a
//!   section.
//! - `${VAR}` from the environment (undefined: empty), then `$pagesize`,
//!   `$ncpus`, `$mb_memory` from the simulated machine; a line with one of
//!   those and an operator is computed as `bc` would (integers).
//! - `(expr)` arithmetic in numbers (fio's exp/expression-parser.y, built
//!   when fio is configured with a yacc: Debian's 3.33 is not).
//! - Options apply in decreasing priority (`sort_options`), so `kb_base`
//!   comes before sizes; per-direction values `bs=64k,8k`, with the last
//!   value filling the directions after it; `-` and `:` also separate
//!   directions for plain numbers (`bs=4k-64k` is read 4k, write 64k, as
//!   fio reads it); `bsrange=4k-64k` is a range.
//! - Options of the job's IO engine are known only under that engine.
//!
//! The option table is `options.rs`.

use super::job::{BsRange, Dir, FioError, FioJob, FioSize, IoEngine, RandomDist, RateProcess, Rw};
use super::options::{self, Kind, OptSpec, TimeUnit};
use std::path::{Path, PathBuf};

/// Values fio expands itself: `$pagesize`, `$ncpus`, `$mb_memory` — from the
/// SIMULATED machine, not the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineVars {
    pub pagesize: u64,
    pub ncpus: u32,
    pub mb_memory: u64,
}

/// The origin of command-line options.
pub const CMDLINE: &str = "<command line>";

/// How deep `include`s may nest (fio has no limit; a file including itself
/// would recurse for ever).
const MAX_INCLUDE_DEPTH: usize = 16;

/// The engines the simulator models, in `unsupported_reason`'s words.
const SUPPORTED_ENGINES: &str = "sync, psync, pvsync, libaio, io_uring, null";

/// Options fio accepts that change nothing that reaches the storage stack:
/// accepted without effect, each with why.
const NO_EFFECT: &[(&str, &str)] = &[
    ("description", "text only (kept in FioJob::description)"),
    ("name", "the job's name (kept in FioJob::name)"),
    (
        "exec_prerun",
        "a shell command before the job: not run in a simulation",
    ),
    (
        "exec_postrun",
        "a shell command after the job: not run in a simulation",
    ),
    (
        "cgroup_nodelete",
        "whether fio removes its cgroup afterwards",
    ),
    ("percentile_list", "which percentiles the report prints"),
    (
        "clat_percentiles",
        "whether the report prints clat percentiles",
    ),
    (
        "lat_percentiles",
        "whether the report prints lat percentiles",
    ),
    (
        "slat_percentiles",
        "whether the report prints slat percentiles",
    ),
    ("significant_figures", "the report's number format"),
    ("unit_base", "the report's bits or bytes"),
    ("per_job_logs", "log file naming"),
    ("log_offset", "a column of the log files"),
    ("log_prio", "a column of the log files"),
    ("log_max_value", "averaged or maximum values in the logs"),
    ("log_unix_epoch", "the logs' time base"),
    ("log_alternate_epoch", "the logs' time base"),
    ("log_entries", "the logs' initial buffer size"),
    ("log_compression", "the logs' in-memory compression"),
    ("log_store_compressed", "the logs' on-disk format"),
    ("disable_lat", "latency accounting in fio itself"),
    ("disable_clat", "latency accounting in fio itself"),
    ("disable_slat", "latency accounting in fio itself"),
    (
        "disable_bw_measurement",
        "bandwidth accounting in fio itself",
    ),
    ("gtod_reduce", "fio's own clock calls (reporting only)"),
    ("clocksource", "fio's own clock"),
    ("gtod_cpu", "fio's own clock thread"),
    ("bwavgtime", "the report's bandwidth averaging window"),
    ("iopsavgtime", "the report's IOPS averaging window"),
    ("stats", "whether fio collects statistics"),
    ("thread", "threads or processes: the same IO"),
    ("filename_format", "file naming only"),
    ("unique_filename", "file naming for client/server runs"),
    (
        "continue_on_error",
        "the simulated devices return no errors",
    ),
    ("ignore_error", "the simulated devices return no errors"),
    ("error_dump", "the simulated devices return no errors"),
    (
        "refill_buffers",
        "data content: the devices neither compress nor dedupe",
    ),
    (
        "scramble_buffers",
        "data content: the devices neither compress nor dedupe",
    ),
    (
        "zero_buffers",
        "data content: the devices neither compress nor dedupe",
    ),
    (
        "buffer_pattern",
        "data content: the devices neither compress nor dedupe",
    ),
    (
        "buffer_compress_percentage",
        "data content: the devices neither compress nor dedupe",
    ),
    (
        "buffer_compress_chunk",
        "data content: the devices neither compress nor dedupe",
    ),
    (
        "dedupe_percentage",
        "data content: the devices neither compress nor dedupe",
    ),
    ("iomem", "the user buffers' memory type"),
    ("iomem_align", "the user buffers' alignment"),
    ("hugepage-size", "the user buffers' huge page size"),
    ("uid", "the user the job runs as"),
    ("gid", "the group the job runs as"),
    (
        "group_reporting",
        "report grouping (kept in FioJob::group_reporting)",
    ),
    ("write_hist_log", "histogram logs: not written"),
    ("log_hist_msec", "histogram logs: not written"),
    ("log_hist_coarseness", "histogram logs: not written"),
    (
        "steadystate_check_interval",
        "only with steadystate, itself unsupported",
    ),
];

/// A line of a job file once cut and trimmed, with where it came from.
struct Line {
    text: String,
    origin: String,
}

struct Section {
    name: String,
    origin: String,
    global: bool,
    opts: Vec<Line>,
}

/// fio's `strip_blank_end`: cut at the first `;` or `#`, then drop trailing
/// blanks and control characters; `strip_blank_front` drops leading blanks.
fn strip_line(s: &str) -> &str {
    let cut = s.find([';', '#']).unwrap_or(s.len());
    s[..cut]
        .trim_end_matches(|c: char| c.is_ascii_whitespace() || c.is_control())
        .trim_start_matches(|c: char| c.is_ascii_whitespace())
}

fn err(origin: &str, msg: impl Into<String>) -> FioError {
    FioError {
        origin: origin.to_string(),
        msg: msg.into(),
    }
}

/// Read the text into sections (`__parse_jobs_ini`'s reading part).
fn read_sections(
    text: &str,
    name: &str,
    dir: Option<&Path>,
    sections: &mut Vec<Section>,
    nested: usize,
) -> Result<(), FioError> {
    for (i, raw) in text.lines().enumerate() {
        let origin = format!("{}:{}", name, i + 1);
        let p = strip_line(raw);
        if p.chars().all(|c| c.is_ascii_whitespace() || c.is_control()) {
            continue;
        }
        if let Some(head) = p.strip_prefix('[') {
            if nested > 0 {
                return Err(err(&origin, "No new sections in included files"));
            }
            // sscanf("[%255[^\n]]"), then the last character dropped (fio
            // assumes it is the `]`).
            let mut n: String = head.chars().take(255).collect();
            if n.is_empty() {
                return Err(err(
                    &origin,
                    format!("option <{p}> outside of [] job section"),
                ));
            }
            n.pop();
            sections.push(Section {
                global: n.starts_with("global"),
                name: n,
                origin,
                opts: Vec::new(),
            });
            continue;
        }
        let Some(sec) = sections.last_mut() else {
            return Err(err(
                &origin,
                format!("option <{p}> outside of [] job section"),
            ));
        };
        if let Some(rest) = p.strip_prefix("include") {
            // fio takes the file name from the eighth character on.
            let mut rest = rest.chars();
            if rest.next().is_none() || rest.as_str().is_empty() {
                return Err(err(&origin, "include needs a file name: include FILE"));
            }
            let file = rest.as_str();
            if nested >= MAX_INCLUDE_DEPTH {
                return Err(err(
                    &origin,
                    format!("include {file}: more than {MAX_INCLUDE_DEPTH} nested includes"),
                ));
            }
            // fio tries the name as given, then beside the including file.
            let mut path = PathBuf::from(file);
            if !path.exists() {
                if let Some(d) = dir {
                    path = d.join(file);
                }
            }
            // A regular file only: `include /dev/zero` would never end.
            if !std::fs::metadata(&path).is_ok_and(|md| md.is_file()) {
                return Err(err(
                    &origin,
                    format!(
                        "unable to open '{}' job file: not a regular file",
                        path.display()
                    ),
                ));
            }
            let inc = std::fs::read_to_string(&path).map_err(|e| {
                err(
                    &origin,
                    format!("unable to open '{}' job file: {e}", path.display()),
                )
            })?;
            let inc_name = path.display().to_string();
            let inc_dir = path.parent().map(|p| p.to_path_buf());
            let mut inner = vec![Section {
                name: String::new(),
                origin: String::new(),
                global: false,
                opts: Vec::new(),
            }];
            read_sections(&inc, &inc_name, inc_dir.as_deref(), &mut inner, nested + 1).map_err(
                |mut e| {
                    e.msg = format!("{} (in the file included at {origin})", e.msg);
                    e
                },
            )?;
            let sec = sections.last_mut().expect("a section is open");
            sec.opts.append(&mut inner[0].opts);
            continue;
        }
        sec.opts.push(Line {
            text: p.to_string(),
            origin,
        });
    }
    Ok(())
}

/// A job being built: the job and its engine's name as written.
#[derive(Clone)]
struct Ctx {
    job: FioJob,
    engine: String,
}

impl Ctx {
    fn new(name: &str, origin: &str) -> Ctx {
        Ctx {
            job: FioJob::new(name, origin),
            engine: "psync".to_string(),
        }
    }
}

/// Parse a job file's text. `name` is the file name used in origins
/// ("job.fio:12"); `dir` resolves relative `include` paths; `env` looks up
/// `${VAR}` (undefined: empty, as fio does).
pub fn parse_job_text(
    text: &str,
    name: &str,
    dir: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    m: &MachineVars,
) -> Result<Vec<FioJob>, FioError> {
    let mut sections = Vec::new();
    read_sections(text, name, dir, &mut sections, 0)?;
    let mut defaults = Ctx::new("global", name);
    let mut jobs = Vec::new();
    for sec in sections {
        let mut ctx = defaults.clone();
        ctx.job.name = sec.name.clone();
        ctx.job.origin = sec.origin.clone();
        // Each line once expanded, then in fio's priority order.
        let mut opts: Vec<(String, String)> = Vec::new();
        for l in &sec.opts {
            let t = expand(&l.text, env, m).map_err(|e| err(&l.origin, e))?;
            opts.push((t, l.origin.clone()));
        }
        opts.sort_by_key(|(t, _)| {
            let (n, _) = split_opt(t);
            std::cmp::Reverse(options::find_core(n).map_or(0, |o| o.prio))
        });
        let mut later = Vec::new();
        for (t, origin) in &opts {
            let (n, v) = split_opt(t);
            match options::find_core(n) {
                Some(spec) => apply(&mut ctx, spec, v, origin, t)?,
                None => later.push((t, origin)),
            }
        }
        // Then the IO engine's own options (fio's `ioengine_load`).
        for (t, origin) in later {
            let (n, v) = split_opt(t);
            let table = options::engine_options(&ctx.engine).unwrap_or(&[]);
            match options::find(table, n) {
                Some(spec) => apply(&mut ctx, spec, v, origin, t)?,
                None => return Err(bad_option(origin, t, n)),
            }
        }
        if sec.global {
            defaults = ctx;
        } else {
            jobs.push(ctx.job);
        }
    }
    Ok(jobs)
}

/// Read a job file (its directory resolves `include`s).
pub fn parse_job_file(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    m: &MachineVars,
) -> Result<Vec<FioJob>, FioError> {
    let name = path.display().to_string();
    let text = std::fs::read(path)
        .map_err(|e| err(&name, format!("unable to open '{name}' job file: {e}")))?;
    let text = String::from_utf8_lossy(&text);
    parse_job_text(&text, &name, path.parent(), env, m)
}

/// fio's command-line jobs: `--name=a --rw=write --bs=4k --name=b ...`.
/// Options before the first `--name` are global (`--name=global` opens a
/// global section too); each `--name` starts a job with those globals. As
/// with fio's getopt_long, `--opt value` works for options that need a
/// value (all but flags such as `--time_based`), and an unambiguous
/// prefix names an option (`--runt=10`). No `${VAR}` or `$pagesize`
/// expansion: fio does none on the command line.
pub fn parse_cmdline(args: &[String], m: &MachineVars) -> Result<Vec<FioJob>, FioError> {
    let _ = m;
    let mut defaults = Ctx::new("global", CMDLINE);
    let mut cur: Option<(Ctx, bool)> = None;
    let mut jobs = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let Some(body) = a.strip_prefix("--") else {
            return Err(err(
                CMDLINE,
                format!("unexpected argument '{a}': expected --option=value"),
            ));
        };
        let (n, inline_v) = match body.find('=') {
            Some(k) => (&body[..k], Some(&body[k + 1..])),
            None => (body, None),
        };
        let engine = cur
            .as_ref()
            .map_or(defaults.engine.clone(), |(c, _)| c.engine.clone());
        let spec = lookup_long(n, &engine)?;
        let flag = spec.kind == Kind::StrSet;
        let v: Option<String> = match inline_v {
            Some(v) => Some(v.to_string()),
            None if !flag => {
                if i < args.len() {
                    i += 1;
                    Some(args[i - 1].clone())
                } else {
                    None
                }
            }
            None => None,
        };
        if !flag && v.as_deref().is_none_or(|v| v.is_empty()) {
            return Err(err(
                CMDLINE,
                format!("fio: option {n} requires an argument"),
            ));
        }
        if spec.name == "name" {
            if let Some((c, global)) = cur.take() {
                if global {
                    defaults = c;
                } else {
                    jobs.push(c.job);
                }
            }
            let v = v.clone().unwrap_or_default();
            let mut c = defaults.clone();
            c.job.name = v.clone();
            c.job.origin = CMDLINE.to_string();
            cur = Some((c, v.starts_with("global")));
        }
        let (ctx, _) = cur.get_or_insert_with(|| (defaults.clone(), true));
        let text = match &v {
            Some(v) => format!("{n}={v}"),
            None => n.to_string(),
        };
        apply(ctx, spec, v.as_deref(), CMDLINE, &text)?;
    }
    if let Some((c, global)) = cur {
        if !global {
            jobs.push(c.job);
        }
    }
    Ok(jobs)
}

/// A long option as glibc's getopt_long finds it in fio's table: the exact
/// name or alias, else the first option it is a prefix of (getopt takes
/// the first when all candidates take their argument alike).
fn lookup_long(n: &str, engine: &str) -> Result<&'static OptSpec, FioError> {
    let eng = options::engine_options(engine).unwrap_or(&[]);
    if let Some(s) = options::find_core(n).or_else(|| options::find(eng, n)) {
        return Ok(s);
    }
    let cands: Vec<&'static OptSpec> = options::CORE
        .iter()
        .chain(options::PROFILES.iter().flat_map(|(_, t)| t.iter()))
        .chain(eng.iter())
        .filter(|o| !n.is_empty() && (o.name.starts_with(n) || o.alias.starts_with(n)))
        .collect();
    match cands.first() {
        None => {
            let mut msg = format!("fio: unrecognized option '--{n}'");
            if let Some(s) = closest(n) {
                msg.push_str(&format!("; did you mean {s}?"));
            }
            Err(err(CMDLINE, msg))
        }
        Some(first) => {
            let flag = first.kind == Kind::StrSet;
            if cands.iter().any(|o| (o.kind == Kind::StrSet) != flag) {
                let names: Vec<&str> = cands.iter().map(|o| o.name).collect();
                return Err(err(
                    CMDLINE,
                    format!(
                        "fio: option '--{n}' is ambiguous; possibilities: {}",
                        names.join(" ")
                    ),
                ));
            }
            Ok(first)
        }
    }
}

/// `--section X`: keep only the named sections (fio's semantics: globals
/// still apply, as they are already in each job). A name with no job is an
/// error naming it.
pub fn select_sections(jobs: Vec<FioJob>, names: &[String]) -> Result<Vec<FioJob>, FioError> {
    for n in names {
        if !n.starts_with("global") && !jobs.iter().any(|j| &j.name == n) {
            let have: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
            return Err(err(
                "--section",
                format!(
                    "no job section [{n}] (the sections are: {})",
                    have.join(", ")
                ),
            ));
        }
    }
    Ok(jobs
        .into_iter()
        .filter(|j| names.contains(&j.name))
        .collect())
}

/// Why the engine cannot simulate this job, as ONE line naming the option,
/// or None.
pub fn unsupported_reason(job: &FioJob) -> Option<String> {
    let value_of = |name: &str| job.option(name).map(str::to_string);
    if let Some((name, origin)) = job.unsupported.first() {
        let v = value_of(name).unwrap_or_default();
        return Some(match name.as_str() {
            "ioengine" => {
                format!("ioengine={v} ({origin}) is not simulated; supported: {SUPPORTED_ENGINES}")
            }
            _ if v.is_empty() => format!("option {name} ({origin}) is not simulated"),
            _ => format!("option {name}={v} ({origin}) is not simulated"),
        });
    }
    if matches!(job.rw, Rw::Trim | Rw::RandTrim | Rw::TrimWrite) {
        let v = value_of("rw").unwrap_or_default();
        return Some(format!(
            "rw={v} is not simulated (no discard model); supported: read, write, randread, randwrite, rw, readwrite, randrw"
        ));
    }
    None
}

/// Split `name=value`: the name loses trailing blanks, the value is kept
/// as written (fio's `get_option`).
fn split_opt(t: &str) -> (&str, Option<&str>) {
    match t.find('=') {
        Some(k) => (strip_line(&t[..k]), Some(&t[k + 1..])),
        None => (t, None),
    }
}

/// `fio_option_dup_subs` (`${VAR}`), then `fio_keyword_replace` (`$pagesize`,
/// `$mb_memory`, `$ncpus`) and, when one was replaced and the line has an
/// operator, `bc_calc` on the value.
fn expand(
    t: &str,
    env: &dyn Fn(&str) -> Option<String>,
    m: &MachineVars,
) -> Result<String, String> {
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some(k) = rest.find("${") {
        out.push_str(&rest[..k]);
        let after = &rest[k + 2..];
        match after.find('}') {
            Some(e) => {
                if let Some(v) = env(&after[..e]) {
                    out.push_str(&v);
                }
                rest = &after[e + 1..];
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    let mut calc = false;
    for (w, r) in [
        ("$pagesize", m.pagesize.to_string()),
        ("$mb_memory", m.mb_memory.to_string()),
        ("$ncpus", m.ncpus.to_string()),
    ] {
        if out.contains(w) {
            out = out.replace(w, &r);
            calc = true;
        }
    }
    if calc && out.contains(['+', '-', '*', '/']) && !out.contains('\'') {
        if let Some(k) = out.find('=') {
            let v = eval_expr(&out[k + 1..], false, true)
                .map_err(|e| format!("fio: failed parsing {out}: {e} (computed as bc would)"))?;
            out = format!("{}={}", &out[..k], v.i);
        }
    }
    Ok(out)
}

/// A value of fio's expression parser: an integer, and a float once a
/// float took part.
#[derive(Clone, Copy, Debug)]
struct EVal {
    i: i64,
    d: f64,
    hd: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tok {
    Num(EVal),
    Suffix(i64, f64, bool),
    Op(u8),
}

impl PartialEq for EVal {
    fn eq(&self, o: &EVal) -> bool {
        self.i == o.i && self.hd == o.hd
    }
}

/// fio's expression lexer (exp/expression-parser.l); `bc`: plain integers
/// and operators only.
fn lex(s: &str, is_time: bool, bc: bool) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b' ' || c == b'\t' || c == b'\n' {
            i += 1;
            continue;
        }
        if !bc && (c == b'#' || c == b':' || c == b',') {
            break;
        }
        if b"+-/*()^%".contains(&c) {
            out.push(Tok::Op(c));
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || c == b'.' {
            let st = i;
            if !bc && c == b'0' && b.get(i + 1).is_some_and(|&x| x == b'x' || x == b'X') {
                i += 2;
                let h = i;
                while i < b.len() && b[i].is_ascii_hexdigit() {
                    i += 1;
                }
                let v = i64::from_str_radix(&s[h..i], 16).map_err(|_| "a bad number")?;
                let v = v as i32 as i64;
                out.push(Tok::Num(EVal {
                    i: v,
                    d: v as f64,
                    hd: false,
                }));
                continue;
            }
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let mut float = false;
            if !bc && i < b.len() && b[i] == b'.' {
                float = true;
                i += 1;
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if !bc && i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                while j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    float = true;
                    i = j;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let txt = &s[st..i];
            if float {
                let d: f64 = txt.parse().map_err(|_| format!("a bad number {txt}"))?;
                out.push(Tok::Num(EVal {
                    i: d as i64,
                    d,
                    hd: true,
                }));
            } else {
                let v: i64 = if bc {
                    txt.parse().map_err(|_| format!("a bad number {txt}"))?
                } else {
                    // flex's "%d": an int.
                    txt.parse::<i64>()
                        .map_err(|_| format!("a bad number {txt}"))? as i32
                        as i64
                };
                out.push(Tok::Num(EVal {
                    i: v,
                    d: v as f64,
                    hd: false,
                }));
            }
            continue;
        }
        if bc {
            return Err(format!("'{}' is not an operator or a number", c as char));
        }
        // Suffixes, the longest match first (flex's rule).
        let rest = s[i..].to_ascii_lowercase();
        const K: i64 = 1024;
        let table: &[(&str, i64, bool)] = &[
            ("kib", 1000, false),
            ("mib", 1_000_000, false),
            ("gib", 1_000_000_000, false),
            ("pib", 1_000_000_000_000, false),
            ("kb", K, false),
            ("mb", K * K, false),
            ("ms", 1000, true),
            ("us", 1, true),
            ("gb", K * K * K, false),
            ("tb", K * K * K * K, false),
            ("pb", K * K * K * K * K, false),
            ("k", K, false),
            ("g", K * K * K, false),
            ("t", K * K * K * K, false),
            ("p", K * K * K * K * K, false),
            ("s", 1_000_000, false),
            ("m", if is_time { 60_000_000 } else { K * K }, false),
            ("d", 86_400_000_000, false),
            ("h", 3_600_000_000, false),
        ];
        match table.iter().find(|(w, _, _)| rest.starts_with(w)) {
            Some(&(w, v, hd)) => {
                out.push(Tok::Suffix(v, v as f64, hd));
                i += w.len();
            }
            None => {
                let ch = s[i..].chars().next().unwrap_or('?');
                return Err(format!("'{ch}' is not an operator, a number or a suffix"));
            }
        }
    }
    Ok(out)
}

fn wrapping_pow(mut base: i64, mut exp: u64) -> i64 {
    let mut acc: i64 = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    acc
}

struct ExprParser<'a> {
    toks: &'a [Tok],
    pos: usize,
    units: bool,
    depth: usize,
}

impl ExprParser<'_> {
    /// Precedence climbing with fio's yacc precedences (low to high):
    /// `+ -`, a suffix, `* /`, `^` (right), `%`, unary minus.
    fn expr(&mut self, min_bp: u8) -> Result<EVal, String> {
        self.depth += 1;
        if self.depth > 200 {
            return Err("an expression nested too deeply".into());
        }
        let mut lhs = match self.toks.get(self.pos) {
            Some(Tok::Num(v)) => {
                self.pos += 1;
                *v
            }
            Some(Tok::Op(b'-')) => {
                self.pos += 1;
                let v = self.expr(7)?;
                EVal {
                    i: v.i.wrapping_neg(),
                    d: -v.d,
                    hd: v.hd,
                }
            }
            Some(Tok::Op(b'(')) => {
                self.pos += 1;
                let v = self.expr(0)?;
                if self.toks.get(self.pos) != Some(&Tok::Op(b')')) {
                    return Err("a missing ')'".into());
                }
                self.pos += 1;
                v
            }
            Some(t) => return Err(format!("an unexpected {}", tok_name(t))),
            None => return Err("an incomplete expression".into()),
        };
        loop {
            let (lbp, rbp, op) = match self.toks.get(self.pos) {
                Some(Tok::Suffix(si, sd, shd)) => {
                    if 2 < min_bp {
                        break;
                    }
                    self.pos += 1;
                    self.units = true;
                    let hd = lhs.hd || *shd;
                    lhs = EVal {
                        i: if hd {
                            ((lhs.d as i64) as f64 * sd) as i64
                        } else {
                            lhs.i.wrapping_mul(*si)
                        },
                        d: if hd { lhs.d * sd } else { lhs.i as f64 * sd },
                        hd,
                    };
                    continue;
                }
                Some(Tok::Op(c @ (b'+' | b'-'))) => (1, 2, *c),
                Some(Tok::Op(c @ (b'*' | b'/'))) => (3, 4, *c),
                Some(Tok::Op(b'^')) => (5, 5, b'^'),
                Some(Tok::Op(b'%')) => (6, 7, b'%'),
                _ => break,
            };
            if lbp < min_bp {
                break;
            }
            self.pos += 1;
            let r = self.expr(rbp)?;
            let hd = lhs.hd || r.hd;
            lhs = match op {
                b'+' => EVal {
                    i: if hd {
                        (lhs.d + r.d) as i64
                    } else {
                        lhs.i.wrapping_add(r.i)
                    },
                    d: lhs.d + r.d,
                    hd,
                },
                b'-' => EVal {
                    i: if hd {
                        (lhs.d - r.d) as i64
                    } else {
                        lhs.i.wrapping_sub(r.i)
                    },
                    d: lhs.d - r.d,
                    hd,
                },
                b'*' => EVal {
                    i: if hd {
                        (lhs.d * r.d) as i64
                    } else {
                        lhs.i.wrapping_mul(r.i)
                    },
                    d: lhs.d * r.d,
                    hd,
                },
                b'/' => {
                    if r.i == 0 || r.d.abs() < 1e-20 {
                        return Err("a division by zero".into());
                    }
                    let d = lhs.d / r.d;
                    EVal {
                        i: if hd {
                            d as i64
                        } else {
                            lhs.i.wrapping_div(r.i)
                        },
                        d,
                        hd,
                    }
                }
                b'%' => {
                    if hd {
                        return Err("a modulo on floats".into());
                    }
                    if r.i == 0 {
                        return Err("a division by zero".into());
                    }
                    let i = lhs.i.wrapping_rem(r.i);
                    EVal {
                        i,
                        d: i as f64,
                        hd: false,
                    }
                }
                _ => {
                    let d = lhs.d.powf(r.d);
                    if hd {
                        EVal { i: d as i64, d, hd }
                    } else if r.i >= 0 {
                        EVal {
                            i: wrapping_pow(lhs.i, r.i as u64),
                            d,
                            hd,
                        }
                    } else {
                        if lhs.i == 0 {
                            return Err("zero to a negative power".into());
                        }
                        EVal { i: d as i64, d, hd }
                    }
                }
            };
        }
        self.depth -= 1;
        Ok(lhs)
    }
}

fn tok_name(t: &Tok) -> String {
    match t {
        Tok::Num(v) => format!("number {}", v.i),
        Tok::Suffix(..) => "suffix".into(),
        Tok::Op(c) => format!("'{}'", *c as char),
    }
}

/// fio's `evaluate_arithmetic_expression`: the value and whether a unit
/// suffix appeared. `bc`: integer arithmetic as `bc` does it.
fn eval_expr(s: &str, is_time: bool, bc: bool) -> Result<EVal, String> {
    let toks = lex(s, is_time, bc)?;
    let mut p = ExprParser {
        toks: &toks,
        pos: 0,
        units: false,
        depth: 0,
    };
    let v = p.expr(0)?;
    if p.pos != toks.len() {
        return Err(format!("an unexpected {}", tok_name(&toks[p.pos])));
    }
    Ok(EVal {
        // Records whether units were given in `hd`'s place for the caller.
        i: v.i,
        d: v.d,
        hd: p.units,
    })
}

/// C's `strtoll` prefix: (value, bytes used), None without digits or on
/// overflow. `base16` when the text holds "0x" anywhere, as fio decides.
fn strtoll(s: &str, base16: bool) -> Option<(i64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i] == b' ' || (b'\t'..=b'\r').contains(&b[i])) {
        i += 1;
    }
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let radix = if base16 { 16 } else { 10 };
    if base16
        && b.get(i) == Some(&b'0')
        && b.get(i + 1).is_some_and(|&x| x == b'x' || x == b'X')
        && b.get(i + 2).is_some_and(|x| x.is_ascii_hexdigit())
    {
        i += 2;
    }
    let st = i;
    let mut v: i128 = 0;
    while i < b.len() && (b[i] as char).is_digit(radix) {
        v = v * radix as i128 + (b[i] as char).to_digit(radix).unwrap_or(0) as i128;
        if v > i64::MAX as i128 + 1 {
            return None;
        }
        i += 1;
    }
    if i == st {
        return None;
    }
    let v = if neg { -v } else { v };
    if v > i64::MAX as i128 {
        return None;
    }
    Some((v as i64, i))
}

/// fio's `__get_mult_bytes` for the suffix text `c` (lowercased, cut at a
/// separator). Returns (multiplier, percent).
fn mult_bytes(c: &str, kb_base: u32) -> (u64, bool) {
    let kb = kb_base as u64;
    let c = c.to_ascii_lowercase();
    let c = c.split([':', '-', ',', '/']).next().unwrap_or("");
    // With kb_base=1000 the "iB" suffixes are powers of 1024, and with
    // 1024 they are powers of 1000: fio reads them "the opposite way".
    let other = if kb == 1000 { 1024 } else { 1000 };
    let (pow, mult) = if c.starts_with("pib") {
        (5, other)
    } else if c.starts_with("tib") {
        (4, other)
    } else if c.starts_with("gib") {
        (3, other)
    } else if c.starts_with("mib") {
        (2, other)
    } else if c.starts_with("kib") {
        (1, other)
    } else if c.starts_with('p') {
        (5, kb)
    } else if c.starts_with('t') {
        (4, kb)
    } else if c.starts_with('g') {
        (3, kb)
    } else if c.starts_with('m') {
        (2, kb)
    } else if c.starts_with('k') {
        (1, kb)
    } else if c.starts_with('%') {
        return (1, true);
    } else {
        (0, kb)
    };
    (mult.pow(pow), false)
}

/// fio's `get_mult_time`: microseconds per unit of the suffix `c`.
fn mult_time(c: &str, secs: bool) -> u64 {
    if !c.chars().next().is_some_and(|x| x.is_ascii_alphabetic()) {
        return if secs { 1_000_000 } else { 1 };
    }
    let c = c.to_ascii_lowercase();
    if c.starts_with("us") {
        1
    } else if c.starts_with("ms") {
        1000
    } else if c == "s" {
        1_000_000
    } else if c == "m" {
        60_000_000
    } else if c == "h" {
        3_600_000_000
    } else if c == "d" {
        86_400_000_000
    } else {
        1
    }
}

/// One number as fio's `str_to_decimal` reads it: bytes (or microseconds
/// for a time), and whether it was a percentage (`50%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Num {
    v: i64,
    pct: bool,
}

fn str_to_decimal(s: &str, time: TimeUnit, kb_base: u32) -> Option<Num> {
    if s.is_empty() {
        return None;
    }
    let is_time = time != TimeUnit::NoTime;
    let secs = time == TimeUnit::Secs;
    let mut val = None;
    if s.starts_with('(') {
        if let Ok(e) = eval_expr(s, is_time, false) {
            // Without a unit, fio scales by the option's unit (seconds are
            // kept in microseconds, then truncated to whole seconds).
            let units = e.hd;
            let mut v = e.i;
            if secs {
                if !units {
                    v = v.wrapping_mul(1_000_000);
                }
                v /= 1_000_000;
            }
            val = Some(v);
        }
    }
    let v = match val {
        Some(v) => v,
        None => strtoll(s, s.contains("0x") || s.contains("0X"))?.0,
    };
    // The suffix: after the leading digits and signs.
    let b = s.as_bytes();
    let mut p = 0;
    if is_time {
        while p < b.len() && (b[p].is_ascii_digit() || b[p] == b'+' || b[p] == b'-') {
            p += 1;
        }
        let m = mult_time(&s[p..], secs);
        Some(Num {
            v: v.wrapping_mul(m as i64),
            pct: false,
        })
    } else {
        if s.len() < 2 {
            let (m, pct) = mult_bytes(s, kb_base);
            return Some(Num {
                v: if pct { v } else { v.wrapping_mul(m as i64) },
                pct,
            });
        }
        let mut digit = false;
        while p < b.len() && (b[p].is_ascii_digit() || ((b[p] == b'+' || b[p] == b'-') && !digit)) {
            digit |= b[p].is_ascii_digit();
            p += 1;
        }
        let suffix = &s[p..];
        if !suffix
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '%')
        {
            return Some(Num { v, pct: false });
        }
        let (m, pct) = mult_bytes(suffix, kb_base);
        Some(Num {
            v: if pct { v } else { v.wrapping_mul(m as i64) },
            pct,
        })
    }
}

/// fio's `check_int`: `%u` (or `%x` when the text holds "0x").
fn check_int(s: &str) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let hex = s.contains("0x") || s.contains("0X");
    let (v, _) = strtoll(s, hex)?;
    Some(v as u32 as i32 as i64)
}

/// A parsed value.
#[derive(Clone, Debug)]
enum Val {
    /// No value (a flag).
    None,
    /// Text (`Str`, `StrStore`, ...).
    Text(String),
    /// An integer from `Bool` or `StrSet`.
    Int(i64),
    /// Per-direction numbers (`None`: left as it was).
    Nums([Option<Num>; 3]),
    /// Per-direction ranges.
    Ranges([Option<(u64, u64)>; 3]),
}

fn expected(spec: &OptSpec) -> String {
    match spec.kind {
        Kind::Str | Kind::StrUll | Kind::StrMulti if !spec.vals.is_empty() => {
            format!("one of: {}", spec.vals.join(", "))
        }
        Kind::Bool => "0 or 1".into(),
        Kind::StrSet => "nothing, or an integer".into(),
        Kind::Range => "a size range LOW-HIGH (e.g. 4k-64k), per direction with commas".into(),
        Kind::FloatList => "numbers separated by ':'".into(),
        _ if spec.time == TimeUnit::Secs => {
            "a time (plain numbers are seconds; suffixes us, ms, s, m, h, d)".into()
        }
        _ if spec.time == TimeUnit::Usecs => {
            "a time (plain numbers are microseconds; suffixes us, ms, s, m, h, d)".into()
        }
        Kind::Int | Kind::Ull | Kind::StrVal | Kind::StrValZone if spec.dirs > 1 => {
            "a number or size (k, m, g, t, p; KiB...), per direction with commas (read,write,trim)"
                .into()
        }
        Kind::Int | Kind::Ull | Kind::StrVal | Kind::StrValZone => {
            "a number or size (suffixes k, m, g, t, p; KiB...)".into()
        }
        _ => "a value".into(),
    }
}

/// The parts of a per-direction value: fio's `handle_option` loop (each
/// part is the rest of the text from there; the next part starts after a
/// `,`, else after a `:` or `-` for plain numbers).
fn parts(v: &str, split_colon_dash: bool) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = v;
    loop {
        let mut next = rest.find(',');
        if next.is_none() && split_colon_dash {
            next = rest.find(':').or_else(|| rest.find('-'));
        }
        match next {
            Some(k) => {
                out.push(rest);
                rest = &rest[k + 1..];
            }
            None => {
                out.push(rest);
                break;
            }
        }
        if out.len() > 64 {
            break;
        }
    }
    out
}

/// Read a value by its option's type (fio's `__handle_option`), or the
/// error fio would fail with.
fn parse_value(spec: &OptSpec, v: Option<&str>, kb_base: u32) -> Result<Val, String> {
    let Some(v) = v else {
        return match spec.kind {
            Kind::StrSet => Ok(Val::Int(1)),
            Kind::Deprecated => Err(format!("Option {} is deprecated", spec.name)),
            Kind::SoftDeprecated => Ok(Val::None),
            Kind::Str if spec.vals.is_empty() => Ok(Val::None),
            _ => Err(format!("Option {} requires an argument", spec.name)),
        };
    };
    let range_err = |x: i64| -> Option<String> {
        if spec.max != 0 && x > 0 && x as u64 > spec.max {
            Some(format!("max value out of range: {x} ({} max)", spec.max))
        } else if spec.min != 0 && x < spec.min {
            Some(format!("min value out of range: {x} ({} min)", spec.min))
        } else {
            None
        }
    };
    match spec.kind {
        Kind::Deprecated => Err(format!("Option {} is deprecated", spec.name)),
        Kind::SoftDeprecated => Ok(Val::Text(v.to_string())),
        Kind::Str | Kind::StrUll => {
            if spec.vals.is_empty() || str_matches(spec.vals, v) {
                Ok(Val::Text(v.to_string()))
            } else {
                Err(format!("expected {}", expected(spec)))
            }
        }
        Kind::StrMulti => {
            if spec.vals.is_empty() || parts(v, false).iter().any(|p| str_matches(spec.vals, p)) {
                Ok(Val::Text(v.to_string()))
            } else {
                Err(format!("expected {}", expected(spec)))
            }
        }
        Kind::StrStore => {
            if v.is_empty() {
                Err("expected a non-empty value".into())
            } else {
                Ok(Val::Text(v.to_string()))
            }
        }
        Kind::Bool | Kind::StrSet => {
            let x = check_int(v).ok_or_else(|| format!("expected {}", expected(spec)))?;
            if let Some(e) = range_err(x) {
                return Err(e);
            }
            Ok(Val::Int(if spec.neg { (x == 0) as i64 } else { x }))
        }
        Kind::FloatList => {
            let ok = parts(v, false)
                .iter()
                .flat_map(|p| p.split(':'))
                .any(|p| float_prefix(p).is_some());
            if ok {
                Ok(Val::Text(v.to_string()))
            } else {
                Err(format!("not a floating point value: {v}"))
            }
        }
        Kind::Range => {
            let mut out = [None; 3];
            let ps = parts(v, false);
            let n = ps.len();
            let mut any = false;
            let mut last_err = String::new();
            for (curr, p) in ps.iter().enumerate() {
                let t = p.split(',').next().unwrap_or("");
                let Some(k) = t.find('-').or_else(|| t.find(':')) else {
                    last_err = format!("expected {}", expected(spec));
                    continue;
                };
                let a = str_to_decimal(&t[..k], TimeUnit::NoTime, kb_base);
                let b = str_to_decimal(&t[k + 1..], TimeUnit::NoTime, kb_base);
                let (Some(a), Some(b)) = (a, b) else {
                    last_err = format!("expected {}", expected(spec));
                    continue;
                };
                let (lo, hi) = if a.v > b.v { (b.v, a.v) } else { (a.v, b.v) };
                let r = Some((lo as u64, hi as u64));
                any = true;
                store_dirs(&mut out, curr, curr + 1 < n, r);
            }
            if any {
                Ok(Val::Ranges(out))
            } else {
                Err(last_err)
            }
        }
        Kind::Int | Kind::Ull | Kind::StrVal | Kind::StrValTime | Kind::StrValZone => {
            let mut out = [None; 3];
            let ps = parts(v, true);
            let n = ps.len();
            let mut any = false;
            let mut last_err = String::new();
            for (curr, p) in ps.iter().enumerate() {
                if let Some(d) = p.strip_suffix('z') {
                    if spec.kind == Kind::StrValZone {
                        if !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()) {
                            any = true;
                            continue;
                        }
                        return Err(format!("{}: unexpected zone value '{p}'", spec.name));
                    }
                    return Err(format!("{}: 'z' suffix isn't applicable", spec.name));
                }
                let t = p.split(',').next().unwrap_or("");
                let time = if spec.kind == Kind::StrValTime && spec.time == TimeUnit::NoTime {
                    TimeUnit::Usecs
                } else {
                    spec.time
                };
                let Some(x) = str_to_decimal(t, time, kb_base) else {
                    last_err = format!("expected {}", expected(spec));
                    continue;
                };
                if !x.pct {
                    let chk = if spec.kind == Kind::Int {
                        x.v as i32 as i64
                    } else {
                        x.v
                    };
                    if let Some(e) = range_err(chk) {
                        last_err = format!("{}: {e}", spec.name);
                        continue;
                    }
                    if !spec.vals.is_empty() && !spec.vals.contains(&x.v.to_string().as_str()) {
                        last_err = format!(
                            "value {} not allowed: expected {}",
                            x.v,
                            spec.vals.join(", ")
                        );
                        continue;
                    }
                }
                any = true;
                if spec.kind == Kind::Int || spec.kind == Kind::Ull {
                    store_dirs(&mut out, curr, curr + 1 < n, Some(x));
                } else {
                    if curr == 0 {
                        out[0] = Some(x);
                    }
                    if curr + 1 == n {
                        out[1] = Some(x);
                    }
                }
            }
            if any {
                Ok(Val::Nums(out))
            } else {
                Err(last_err)
            }
        }
    }
}

/// Where part `curr` of a per-direction value goes: its own direction, and
/// the ones after it when it is the last.
fn store_dirs<T: Copy>(out: &mut [Option<T>; 3], curr: usize, more: bool, v: Option<T>) {
    if curr < 3 {
        out[curr] = v;
    }
    if !more {
        for slot in out.iter_mut().skip(curr + 1) {
            *slot = v;
        }
    }
}

/// fio's `str_match_len` matching: the value up to its first `,` or `:`
/// equals an allowed value. (fio 3.33 cut at the first `,` when there was
/// one, so refused `random_distribution=sequence:2,0,1`; later fio cuts at
/// whichever comes first, as here.)
fn str_matches(vals: &[&str], v: &str) -> bool {
    let head = match v.find([',', ':']) {
        Some(k) => &v[..k],
        None => v,
    };
    vals.iter().any(|a| {
        // strncmp(ival, v, max(len(ival), len(head))) == 0
        let n = a.len().max(head.len());
        let vb = v.as_bytes();
        let ab = a.as_bytes();
        (0..n).all(|i| ab.get(i).copied().unwrap_or(0) == vb.get(i).copied().unwrap_or(0))
    })
}

/// `sscanf("%lf")`: a float at the start of the text.
fn float_prefix(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .take_while(|&(i, c)| {
            c.is_ascii_digit()
                || c == '.'
                || ((c == '-' || c == '+') && i == 0)
                || c == 'e'
                || c == 'E'
        })
        .map(|(i, c)| i + c.len_utf8())
        .last()?;
    (1..=end).rev().find_map(|k| s[..k].parse::<f64>().ok())
}

fn bad_option(origin: &str, text: &str, name: &str) -> FioError {
    let mut msg = format!("Bad option <{text}>");
    if let Some(s) = closest(name) {
        msg.push_str(&format!("; did you mean {s}?"));
    }
    err(origin, msg)
}

/// fio's `show_closest_option`: the option nearest by edit distance, if
/// near enough.
fn closest(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.len() > 200 {
        return None;
    }
    let mut best: Option<(usize, &'static str)> = None;
    for o in options::CORE {
        let d = levenshtein(name, o.name);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, o.name));
        }
    }
    let (d, n) = best?;
    (d <= name.len().div_ceil(2)).then_some(n)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let a = a.as_bytes();
    let b = b.as_bytes();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let c = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + c);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn nums(v: &Val) -> [Option<Num>; 3] {
    match v {
        Val::Nums(n) => *n,
        _ => [None; 3],
    }
}

fn first_u64(v: &Val) -> Option<u64> {
    nums(v)[0].filter(|n| !n.pct).map(|n| n.v as u64)
}

fn flag(v: &Val) -> bool {
    match v {
        Val::Int(i) => *i != 0,
        _ => false,
    }
}

fn text(v: &Val) -> String {
    match v {
        Val::Text(t) => t.clone(),
        _ => String::new(),
    }
}

/// Microseconds to ns.
fn us(n: Num) -> crate::sim::Ns {
    (n.v as u64).saturating_mul(1000)
}

/// Apply one option to the job: check it as fio does, record it, and set
/// the typed field, or note it as not simulated.
fn apply(
    ctx: &mut Ctx,
    spec: &'static OptSpec,
    v: Option<&str>,
    origin: &str,
    written: &str,
) -> Result<(), FioError> {
    let val = parse_value(spec, v, ctx.job.kb_base).map_err(|e| {
        let shown = if v.is_some() {
            written.to_string()
        } else {
            spec.name.to_string()
        };
        err(origin, format!("fio: failed parsing {shown}: {e}"))
    })?;
    let name = spec.name;
    ctx.job
        .options
        .push((name.to_string(), v.unwrap_or("").to_string()));
    ctx.job.unsupported.retain(|(n, _)| n != name);
    let j = &mut ctx.job;
    let mut unsupported = false;
    let bad = |msg: String| err(origin, format!("fio: failed parsing {written}: {msg}"));
    match name {
        "name" => j.name = text(&val),
        "description" => j.description = Some(text(&val)),
        "rw" => {
            let t = text(&val);
            let (base, post) = match t.find([',', ':']) {
                Some(k) => (&t[..k], Some(&t[k + 1..])),
                None => (t.as_str(), None),
            };
            j.rw = match base {
                "read" => Rw::Read,
                "write" => Rw::Write,
                "randread" => Rw::RandRead,
                "randwrite" => Rw::RandWrite,
                "rw" | "readwrite" => Rw::ReadWrite,
                "randrw" => Rw::RandRw,
                "trim" => Rw::Trim,
                "randtrim" => Rw::RandTrim,
                "trimwrite" => Rw::TrimWrite,
                _ => {
                    // randtrimwrite: no variant of its own.
                    unsupported = true;
                    Rw::TrimWrite
                }
            };
            j.rw_nr = 1;
            if let Some(p) = post {
                if j.rw.random() {
                    // atoi
                    j.rw_nr = strtoll(p, false).map_or(0, |(x, _)| x as i32 as u32);
                } else {
                    let add = str_to_decimal(p, TimeUnit::NoTime, j.kb_base)
                        .ok_or_else(|| bad("rw postfix parsing failed".into()))?;
                    // A sequential skip (`rw=write:4k`): not simulated.
                    unsupported |= add.v != 0;
                }
            }
        }
        "rwmixread" => {
            if let Some(x) = first_u64(&val) {
                j.rwmixread = x as u32;
            }
        }
        "rwmixwrite" => {
            if let Some(x) = first_u64(&val) {
                j.rwmixread = 100u32.saturating_sub(x as u32);
            }
        }
        "bs" => {
            for d in Dir::ALL {
                if let Some(n) = nums(&val)[d.idx()] {
                    j.bs[d.idx()] = BsRange {
                        min: n.v as u64,
                        max: n.v as u64,
                    };
                }
            }
        }
        "bsrange" => {
            if let Val::Ranges(r) = &val {
                for d in Dir::ALL {
                    if let Some((lo, hi)) = r[d.idx()] {
                        j.bs[d.idx()] = BsRange { min: lo, max: hi };
                    }
                }
            }
        }
        "size" => {
            if let Some(n) = nums(&val)[0] {
                j.size = Some(if n.pct {
                    FioSize::Percent(n.v.clamp(0, 100) as u32)
                } else {
                    FioSize::Bytes(n.v as u64)
                });
            } else {
                unsupported = true; // zones (`size=4z`)
            }
        }
        "io_size" => match nums(&val)[0] {
            Some(n) if !n.pct => j.io_size = Some(n.v as u64),
            _ => unsupported = true,
        },
        "filesize" => {
            let n = nums(&val);
            if let (Some(a), Some(b)) = (n[0], n[1]) {
                j.filesize = Some((a.v as u64, b.v as u64));
            }
        }
        "nrfiles" => {
            if let Some(x) = first_u64(&val) {
                j.nrfiles = x as u32;
            }
        }
        "offset" => match nums(&val)[0] {
            Some(n) if !n.pct => j.offset = n.v as u64,
            _ => unsupported = true,
        },
        "numjobs" => {
            if let Some(x) = first_u64(&val) {
                // past u32: the scenario's task cap refuses it, not a wrap
                j.numjobs = x.min(u32::MAX as u64) as u32;
            }
        }
        "filename" => j.filename = Some(text(&val)),
        "directory" => j.directory = Some(text(&val)),
        "ioengine" => {
            // A name fio does not build in may be an external engine fio
            // loads at run time (`--parse-only` accepts it): not simulated.
            let e = text(&val);
            ctx.engine = e.clone();
            match e.as_str() {
                "sync" => j.ioengine = IoEngine::Sync,
                "psync" => j.ioengine = IoEngine::Psync,
                "pvsync" => j.ioengine = IoEngine::Pvsync,
                "libaio" => j.ioengine = IoEngine::Libaio,
                "io_uring" => j.ioengine = IoEngine::IoUring,
                "null" => j.ioengine = IoEngine::Null,
                _ => unsupported = true,
            }
        }
        "iodepth" => {
            if let Some(x) = first_u64(&val) {
                j.iodepth = x as u32;
            }
        }
        "direct" | "buffered" => j.direct = flag(&val),
        "fsync" => {
            if let Some(x) = first_u64(&val) {
                j.fsync = x as u32;
            }
        }
        "fdatasync" => {
            if let Some(x) = first_u64(&val) {
                j.fdatasync = x as u32;
            }
        }
        "end_fsync" => j.end_fsync = flag(&val),
        "fsync_on_close" => j.fsync_on_close = flag(&val),
        "sync" => match text(&val).split([',', ':']).next().unwrap_or("") {
            "none" | "0" => j.sync = false,
            "sync" | "1" => j.sync = true,
            _ => unsupported = true, // dsync
        },
        "rate" | "rate_iops" => {
            let n = nums(&val);
            let dst = if name == "rate" {
                &mut j.rate
            } else {
                &mut j.rate_iops
            };
            for d in Dir::ALL {
                if let Some(x) = n[d.idx()] {
                    dst[d.idx()] = x.v as u64;
                }
            }
        }
        "rate_process" => {
            j.rate_process = if text(&val).starts_with("poisson") {
                RateProcess::Poisson
            } else {
                RateProcess::Linear
            }
        }
        "thinktime" | "thinktime_spin" | "runtime" | "ramp_time" => {
            if let Some(n) = nums(&val)[0] {
                match name {
                    "thinktime" => j.thinktime = us(n),
                    "thinktime_spin" => j.thinktime_spin = us(n),
                    "runtime" => j.runtime = (n.v != 0).then(|| us(n)),
                    _ => j.ramp_time = us(n),
                }
            }
        }
        "startdelay" => {
            let n = nums(&val);
            match (n[0], n[1]) {
                (Some(a), Some(b)) if a.v == b.v => j.startdelay = us(a),
                (Some(a), None) => j.startdelay = us(a),
                _ => unsupported = true, // a random start delay range
            }
        }
        "thinktime_blocks" => {
            if let Some(x) = first_u64(&val) {
                j.thinktime_blocks = x as u32;
            }
        }
        "time_based" => j.time_based = flag(&val),
        "loops" => {
            if let Some(x) = first_u64(&val) {
                j.loops = x as u32;
            }
        }
        "random_distribution" => {
            let t = text(&val);
            let (base, post) = match t.find(':') {
                Some(k) => (&t[..k], Some(&t[k + 1..])),
                None => (t.as_str(), None),
            };
            let p = post.and_then(float_prefix);
            j.random_distribution = match (base, p) {
                ("random", _) => RandomDist::Random,
                ("zipf", Some(x)) => RandomDist::Zipf(x),
                ("pareto", Some(x)) => RandomDist::Pareto(x),
                ("normal", Some(x)) => RandomDist::Normal(x),
                ("normal", None) => RandomDist::Normal(0.0),
                ("zipf" | "pareto", None) => {
                    return Err(bad(format!("{base} needs a value: {base}:VALUE")));
                }
                _ => {
                    unsupported = true; // zoned, zoned_abs, sequence
                    RandomDist::Random
                }
            };
        }
        "randrepeat" => j.randrepeat = flag(&val),
        "randseed" => j.randseed = first_u64(&val),
        "norandommap" => j.norandommap = flag(&val),
        "cgroup" => j.cgroup = Some(text(&val)),
        "cgroup_weight" => j.cgroup_weight = first_u64(&val).map(|x| x as u32),
        "new_group" => j.new_group = flag(&val),
        "group_reporting" => j.group_reporting = flag(&val),
        "stonewall" => j.stonewall = flag(&val),
        "wait_for" => j.wait_for = Some(text(&val)),
        "write_lat_log" => j.write_lat_log = Some(text(&val)),
        "write_bw_log" => j.write_bw_log = Some(text(&val)),
        "write_iops_log" => j.write_iops_log = Some(text(&val)),
        "log_avg_msec" => {
            if let Some(x) = first_u64(&val) {
                j.log_avg_msec = x as u32;
            }
        }
        "invalidate" => j.invalidate = flag(&val),
        "kb_base" => {
            j.kb_base = if text(&val).starts_with("1000") {
                1000
            } else {
                1024
            }
        }
        // The engine reads it from `options`: every value but `none`
        // (and `0`) gives the file its blocks before the job.
        "fallocate" => {}
        // Which generator draws the offsets: the engine's keyed
        // permutation visits each block once per pass, as fio's random
        // map (tausworthe) or its LFSR does; neither's sequence is fio's.
        "random_generator" => {}
        _ if NO_EFFECT.iter().any(|(n, _)| *n == name) => {}
        // Read by `profile=` only, itself not simulated.
        _ if options::is_profile_only(name) => {}
        _ if spec.kind == Kind::SoftDeprecated => {}
        _ => {
            // Set to fio's default: as if absent.
            let is_default = !spec.def.is_empty()
                && v.is_some_and(|x| {
                    x == spec.def
                        || matches!((&val, check_int(spec.def)), (Val::Int(a), Some(b)) if *a == b)
                        || matches!((first_u64(&val), str_to_decimal(spec.def, spec.time, 1024)), (Some(a), Some(b)) if a as i64 == b.v)
                });
            unsupported = !is_default;
        }
    }
    if unsupported {
        j.unsupported.push((name.to_string(), origin.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: MachineVars = MachineVars {
        pagesize: 4096,
        ncpus: 8,
        mb_memory: 16384,
    };

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn parse(t: &str) -> Result<Vec<FioJob>, FioError> {
        parse_job_text(t, "t.fio", None, &no_env, &M)
    }

    fn one(t: &str) -> FioJob {
        let mut v = parse(t).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v.len(), 1, "{t}");
        v.remove(0)
    }

    fn bad(t: &str) -> FioError {
        parse(t).err().unwrap_or_else(|| panic!("accepted: {t}"))
    }

    #[test]
    fn globals_apply_below_only() {
        let j = parse("[global]\nbs=8k\n[a]\n[global]\nbs=16k\n[b]\nrw=write\n").unwrap();
        assert_eq!(j.len(), 2);
        assert_eq!(j[0].bs[0].min, 8192);
        assert_eq!(j[1].bs[1].max, 16384);
        assert_eq!(
            j[1].options,
            vec![
                ("bs".to_string(), "8k".to_string()),
                ("bs".into(), "16k".into()),
                ("rw".into(), "write".into())
            ]
        );
        assert_eq!(j[0].origin, "t.fio:3");
        assert_eq!(j[1].rw, Rw::Write);
        // "globalX" is global too, as fio's strncmp(name, "global", 6).
        assert!(parse("[globals]\nbs=8k\n").unwrap().is_empty());
    }

    #[test]
    fn flags_and_bools() {
        let j = one("[a]\ntime_based\ngroup_reporting\nnew_group\nstonewall\n");
        assert!(j.time_based && j.group_reporting && j.new_group && j.stonewall);
        let j = one("[a]\ntime_based=0\n");
        assert!(!j.time_based);
        // A bool needs its value, as fio says.
        let e = bad("[a]\ndirect\n");
        assert_eq!(e.origin, "t.fio:2");
        assert!(e.msg.contains("requires an argument"), "{e}");
        assert!(one("[a]\ndirect=1\n").direct);
        assert!(one("[a]\nbuffered=0\n").direct);
        assert!(!one("[a]\ndirect=1\nbuffered=1\n").direct);
        assert!(bad("[a]\ndirect=yes\n").msg.contains("0 or 1"));
    }

    #[test]
    fn comments() {
        let j = one("; top\n# top\n[a]\n  ; indented\nbs=8k # trailing\nrw=write;also\n");
        assert_eq!(j.bs[0].min, 8192);
        assert_eq!(j.rw, Rw::Write);
        assert_eq!(j.options[0].1, "8k");
        // CRLF line ends.
        assert_eq!(one("[a]\r\nbs=16k\r\n").bs[1].min, 16384);
    }

    #[test]
    fn outside_and_unknown() {
        let e = bad("bs=4k\n[a]\n");
        assert_eq!(e.origin, "t.fio:1");
        assert!(e.msg.contains("outside of [] job section"));
        let e = bad("[a]\nfoo=1\n");
        assert_eq!(e.origin, "t.fio:2");
        assert!(e.msg.starts_with("Bad option <foo=1>"), "{e}");
        let e = bad("[a]\nrw=sideways\n");
        assert!(
            e.msg.contains("rw=sideways") && e.msg.contains("randwrite"),
            "{e}"
        );
        let e = bad("[a]\nbs=abc\n");
        assert!(e.msg.contains("bs=abc") && e.msg.contains("size"), "{e}");
        // fio reads values with their leading blanks.
        assert!(bad("[a]\nrw = write\n").msg.contains("rw = write"));
        assert_eq!(one("[a]\nbs = 8k\n").bs[0].min, 8);
    }

    #[test]
    fn env_and_keywords() {
        let env = |v: &str| (v == "BS").then(|| "16k".to_string());
        let j = parse_job_text(
            "[a]\nbs=${BS}\nsize=${NOPE}1m\nnumjobs=$ncpus\nfilesize=$pagesize\n",
            "t.fio",
            None,
            &env,
            &M,
        )
        .unwrap();
        assert_eq!(j[0].bs[0].min, 16384);
        assert_eq!(j[0].size, Some(FioSize::Bytes(1 << 20)));
        assert_eq!(j[0].numjobs, 8);
        assert_eq!(j[0].filesize, Some((4096, 4096)));
        assert_eq!(j[0].options[0], ("bs".to_string(), "16k".to_string()));
        // bc arithmetic when a keyword is used.
        let j = one("[a]\nsize=($pagesize*2)\nnumjobs=$ncpus/2+1\nio_size=$mb_memory*1024*1024\n");
        assert_eq!(j.size, Some(FioSize::Bytes(8192)));
        assert_eq!(j.numjobs, 5);
        assert_eq!(j.io_size, Some(16384 << 20));
    }

    #[test]
    fn arithmetic() {
        let j = one("[a]\nsize=(4k*2)\nruntime=(1+2)\nthinktime=(10ms)\nbs=(1+1)k\n");
        assert_eq!(j.size, Some(FioSize::Bytes(8192)));
        assert_eq!(j.runtime, Some(3_000_000_000));
        assert_eq!(j.thinktime, 10_000_000);
        assert_eq!(j.bs[0].min, 2048);
        let j = one("[a]\nruntime=(1m+30s)\nsize=(2^10*3)\noffset=(10%4)\nrate=(-2+6)k\n");
        assert_eq!(j.runtime, Some(90_000_000_000));
        assert_eq!(j.size, Some(FioSize::Bytes(3072)));
        assert_eq!(j.offset, 2);
        assert_eq!(j.rate[0], 4096);
        // Precedence: a suffix binds below * and above +.
        assert_eq!(eval_expr("(1+2k)", false, false).unwrap().i, 2049);
        assert_eq!(eval_expr("(2*4k)", false, false).unwrap().i, 8192);
        assert!(eval_expr("(1/0)", false, false).is_err());
        assert!(bad("[a]\nsize=(1+)\n").msg.contains("size=(1+)"));
    }

    #[test]
    fn sizes_and_kb_base() {
        let sz = |t: &str| match one(&format!("[a]\n{t}\n")).size {
            Some(FioSize::Bytes(b)) => b,
            x => panic!("{x:?}"),
        };
        assert_eq!(sz("size=4096"), 4096);
        assert_eq!(sz("size=4k"), 4096);
        assert_eq!(sz("size=4K"), 4096);
        assert_eq!(sz("size=4KB"), 4096);
        assert_eq!(sz("size=4KiB"), 4000);
        assert_eq!(sz("size=1m"), 1 << 20);
        assert_eq!(sz("size=2g"), 2 << 30);
        assert_eq!(sz("size=1t"), 1 << 40);
        assert_eq!(sz("size=1p"), 1 << 50);
        assert_eq!(sz("size=0x10"), 16);
        assert_eq!(sz("size=10b"), 10);
        // kb_base=1000: k is 1000, KiB is 1024, whatever the line order.
        assert_eq!(sz("size=4k\nkb_base=1000"), 4000);
        assert_eq!(sz("kb_base=1000\nsize=4KiB"), 4096);
        assert_eq!(sz("kb_base=1000\nsize=1MiB"), 1 << 20);
        assert_eq!(one("[a]\nsize=50%\n").size, Some(FioSize::Percent(50)));
    }

    #[test]
    fn times() {
        let j = one(
            "[a]\nruntime=60\nthinktime=5\nramp_time=2s\nstartdelay=100ms\nthinktime_spin=1ms\n",
        );
        assert_eq!(j.runtime, Some(60_000_000_000));
        assert_eq!(j.thinktime, 5_000);
        assert_eq!(j.ramp_time, 2_000_000_000);
        assert_eq!(j.startdelay, 100_000_000);
        assert_eq!(j.thinktime_spin, 1_000_000);
        assert_eq!(one("[a]\nruntime=2m\n").runtime, Some(120_000_000_000));
        assert_eq!(one("[a]\nruntime=1h\n").runtime, Some(3_600_000_000_000));
        assert_eq!(one("[a]\ntimeout=10\n").runtime, Some(10_000_000_000));
        assert_eq!(one("[a]\nthinktime=2s\n").thinktime, 2_000_000_000);
    }

    #[test]
    fn per_direction() {
        let j = one("[a]\nbs=64k,8k\n");
        assert_eq!([j.bs[0].min, j.bs[1].min, j.bs[2].min], [65536, 8192, 8192]);
        let j = one("[a]\nbs=,8k\n");
        assert_eq!([j.bs[0].min, j.bs[1].min, j.bs[2].min], [4096, 8192, 8192]);
        let j = one("[a]\nbs=1k,2k,3k\n");
        assert_eq!([j.bs[0].min, j.bs[1].min, j.bs[2].min], [1024, 2048, 3072]);
        // fio reads bs=4k-64k as read 4k, write (and trim) 64k.
        let j = one("[a]\nbs=4k-64k\n");
        assert_eq!(
            [j.bs[0].max, j.bs[1].min, j.bs[2].min],
            [4096, 65536, 65536]
        );
        let j = one("[a]\nbsrange=4k-64k\n");
        assert_eq!(
            j.bs[0],
            BsRange {
                min: 4096,
                max: 65536
            }
        );
        assert_eq!(
            j.bs[2],
            BsRange {
                min: 4096,
                max: 65536
            }
        );
        let j = one("[a]\nblocksize_range=64k-4k,1k:2k\n");
        assert_eq!(
            j.bs[0],
            BsRange {
                min: 4096,
                max: 65536
            }
        );
        assert_eq!(
            j.bs[1],
            BsRange {
                min: 1024,
                max: 2048
            }
        );
        let j = one("[a]\nrate=1m,2m\nrate_iops=100\n");
        assert_eq!(j.rate, [1 << 20, 2 << 20, 2 << 20]);
        assert_eq!(j.rate_iops, [100; 3]);
        // fio accepts a bad later part when an earlier one is good.
        assert_eq!(one("[a]\nbs=4k,abc\n").bs[1].min, 4096);
    }

    #[test]
    fn aliases_and_rw() {
        let j =
            one("[a]\nreadwrite=randrw\nblocksize=8k\nio_limit=1m\nnr_files=3\nrwmixwrite=30\n");
        assert_eq!(j.rw, Rw::RandRw);
        assert_eq!(j.bs[1].min, 8192);
        assert_eq!(j.io_size, Some(1 << 20));
        assert_eq!(j.nrfiles, 3);
        assert_eq!(j.rwmixread, 70);
        assert_eq!(j.options[0].0, "rw");
        let j = one("[a]\nrandom_distribution=zipf:1.2,x\n");
        assert_eq!(j.random_distribution, RandomDist::Zipf(1.2));
        let j = one("[a]\nrw=randread:8\n");
        assert_eq!((j.rw, j.rw_nr), (Rw::RandRead, 8));
        assert!(unsupported_reason(&one("[a]\nrw=write:4k\n")).is_some());
        assert!(unsupported_reason(&one("[a]\nrw=trim\n"))
            .unwrap()
            .contains("rw=trim"));
    }

    #[test]
    fn unsupported_and_no_effect() {
        let j = one("[a]\nioengine=rbd\n");
        assert_eq!(
            unsupported_reason(&j).unwrap(),
            "ioengine=rbd (t.fio:2) is not simulated; supported: sync, psync, pvsync, libaio, io_uring, null"
        );
        // The engine's own options are known under it only.
        assert!(one("[a]\nioengine=rbd\nrbdname=x\n").unsupported.len() == 2);
        assert!(bad("[a]\nrbdname=x\n").msg.starts_with("Bad option"));
        let j = one("[a]\nioengine=nosuch\n");
        assert!(unsupported_reason(&j)
            .unwrap()
            .starts_with("ioengine=nosuch"));
        // A profile's option, without profile=.
        assert_eq!(unsupported_reason(&one("[a]\nthreads=1\n")), None);
        let j = one("[a]\nioengine=io_uring\nhipri=1\n");
        assert!(unsupported_reason(&j).unwrap().contains("hipri=1"));
        let j = one("[a]\nverify=md5\n");
        assert_eq!(
            unsupported_reason(&j).unwrap(),
            "option verify=md5 (t.fio:2) is not simulated"
        );
        // A default value, and no-effect options, are fine.
        let j = one("[a]\noverwrite=0\nclat_percentiles=1\nexec_prerun=ls\ndescription=x\ncgroup_nodelete=1\n");
        assert_eq!(unsupported_reason(&j), None);
        // A job resetting a global's engine.
        let j = one("[global]\nioengine=rbd\n[a]\nioengine=libaio\n");
        assert_eq!(j.ioengine, IoEngine::Libaio);
        assert_eq!(unsupported_reason(&j), None);
    }

    #[test]
    fn includes() {
        let d = std::env::temp_dir().join(format!("wbsim-fio-inc-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("inc.fio"), "bs=8k\n; c\nrw=write\n").unwrap();
        std::fs::write(d.join("sect.fio"), "[x]\n").unwrap();
        let j = parse_job_text(
            "[a]\ninclude inc.fio\nnumjobs=2\n",
            "t.fio",
            Some(&d),
            &no_env,
            &M,
        )
        .unwrap();
        assert_eq!(
            (j[0].bs[0].min, j[0].rw, j[0].numjobs),
            (8192, Rw::Write, 2)
        );
        let e =
            parse_job_text("[a]\ninclude sect.fio\n", "t.fio", Some(&d), &no_env, &M).unwrap_err();
        assert!(e.msg.contains("No new sections"), "{e}");
        let e = parse_job_text("[a]\ninclude /dev/zero\n", "t.fio", None, &no_env, &M).unwrap_err();
        assert!(e.msg.contains("not a regular file"), "{e}");
        let e =
            parse_job_text("[a]\ninclude none.fio\n", "t.fio", Some(&d), &no_env, &M).unwrap_err();
        assert_eq!(e.origin, "t.fio:2");
        std::fs::write(d.join("self.fio"), "include self.fio\n").unwrap();
        let e =
            parse_job_text("[a]\ninclude self.fio\n", "t.fio", Some(&d), &no_env, &M).unwrap_err();
        assert!(e.msg.contains("nested"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn cmdline() {
        let a: Vec<String> = "--name=random-writers --filename=/dev/bcache0 --ioengine=libaio --iodepth=1 --rw=randrw --blocksize=64k,8k --direct=1 --numjobs=1 --write_lat_log=mix --log_avg_msec=10"
            .split(' ')
            .map(String::from)
            .collect();
        let j = parse_cmdline(&a, &M).unwrap();
        assert_eq!(j.len(), 1);
        let j = &j[0];
        assert_eq!(j.name, "random-writers");
        assert_eq!(j.origin, CMDLINE);
        assert_eq!(
            (j.ioengine, j.rw, j.direct),
            (IoEngine::Libaio, Rw::RandRw, true)
        );
        assert_eq!([j.bs[0].min, j.bs[1].min], [65536, 8192]);
        assert_eq!(j.write_lat_log.as_deref(), Some("mix"));
        assert_eq!(j.log_avg_msec, 10);
        assert_eq!(unsupported_reason(j), None);
        let a: Vec<String> = [
            "--bs=8k",
            "--name=a",
            "--rw",
            "write",
            "--name=b",
            "--time_based",
            "--runt=10",
        ]
        .map(String::from)
        .to_vec();
        let j = parse_cmdline(&a, &M).unwrap();
        assert_eq!(j.len(), 2);
        assert_eq!((j[0].bs[0].min, j[0].rw), (8192, Rw::Write));
        assert_eq!((j[1].bs[0].min, j[1].rw), (8192, Rw::Read));
        assert!(j[1].time_based);
        assert_eq!(j[1].runtime, Some(10_000_000_000));
        let e = parse_cmdline(&["--name=a".into(), "--foo=1".into()], &M).unwrap_err();
        assert!(e.msg.contains("unrecognized option '--foo'"), "{e}");
        let e =
            parse_cmdline(&["--name=a".into(), "--time_based".into(), "1".into()], &M).unwrap_err();
        assert!(e.msg.contains("unexpected argument '1'"), "{e}");
        let e = parse_cmdline(&["--name=a".into(), "--bs".into()], &M).unwrap_err();
        assert!(e.msg.contains("requires an argument"), "{e}");
    }

    #[test]
    fn sections() {
        let j = parse("[global]\nbs=8k\n[a]\n[b]\n[c]\n").unwrap();
        let s = select_sections(j.clone(), &["b".into()]).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].name.as_str(), s[0].bs[0].min), ("b", 8192));
        let e = select_sections(j, &["zz".into()]).unwrap_err();
        assert!(e.msg.contains("[zz]") && e.msg.contains("a, b, c"), "{e}");
    }

    #[test]
    fn section_name_quirks() {
        // fio drops the header's last character, whatever it is.
        assert_eq!(one("[abc]\n").name, "abc");
        assert_eq!(one("[abc] \n").name, "abc");
        assert!(bad("[\n").msg.contains("outside"));
        // name= renames the job.
        assert_eq!(one("[a]\nname=b\n").name, "b");
    }
}
