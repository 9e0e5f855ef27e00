//! The `wbsim` command line.

pub mod compare;
pub mod fio;
pub mod simoop;
pub mod sweep;

use crate::metrics::Summary;
use crate::output::{simulate, write_outputs};
use crate::scenario::{Scenario, ScenarioError};
use clap::{CommandFactory, Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "wbsim",
    version,
    about = "A deterministic simulator of the Linux storage writeback stack",
    // `wbsim help` explains scenario keys; `wbsim COMMAND --help` the commands
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args, Clone)]
struct ScenarioArgs {
    /// Scenario file (TOML). Without it, the built-in default scenario.
    scenario: Option<String>,
    /// Override a knob by its dotted path, e.g. --set vm.dirty_bytes=200M
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// PRNG seed (same as --set run.seed=N)
    #[arg(long)]
    seed: Option<u64>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate a scenario and write trace.txt, summary.json and vmstat
    Run {
        #[command(flatten)]
        s: ScenarioArgs,
        /// Output directory
        #[arg(long, default_value = "wbsim-out")]
        out: PathBuf,
        /// Do not print the human summary or progress
        #[arg(long, short)]
        quiet: bool,
        /// Also write the plots (as `wbsim plot DIR` does)
        #[arg(long)]
        plot: bool,
        /// After the summary, say what each of its figures is
        #[arg(long)]
        explain: bool,
        /// Run even when the estimated trace is over 2 GiB
        #[arg(long)]
        force: bool,
        /// Also write report.html (as `wbsim report DIR` does) and the
        /// scenario it ran as scenario.toml
        #[arg(long)]
        report: bool,
    },
    /// One self-contained HTML page for a run, two runs (before, after) or
    /// a sweep directory: wbsim report DIR [DIR] -o report.html
    Report {
        /// A run's output directory, two of them, or a sweep's
        #[arg(required = true, num_args = 1..=2)]
        dirs: Vec<PathBuf>,
        /// The HTML file to write
        #[arg(long, short, default_value = "report.html")]
        out: PathBuf,
    },
    /// Plot a run: dirty, ratelimit and pause from its trace; reclaim-free, reclaim-stalls and reclaim-shrinker from reclaim.txt; bcache-NAME-* from bcache-NAME.txt (each .png and .svg)
    Plot {
        /// Output directory of `wbsim run` (or any directory with a trace.txt)
        dir: PathBuf,
        /// The bdi to plot, e.g. 7:0 (default: the busiest)
        #[arg(long)]
        bdi: Option<String>,
    },
    /// Run the scenario's workload on this machine's kernel (root) and write
    /// the same outputs as `run`, measured the same way
    Live {
        #[command(flatten)]
        s: ScenarioArgs,
        /// Output directory
        #[arg(long, default_value = "wbsim-live")]
        out: PathBuf,
        /// Do not print the human summary or progress
        #[arg(long, short)]
        quiet: bool,
        /// Before the run, measure how much free memory the hypervisor
        /// still backs and what a page beyond it costs (host.json)
        #[arg(long)]
        probe_host: bool,
    },
    /// Run scenarios on the real kernel K times and in wbsim once, and score
    /// wbsim against the kernel (tolerances: [fidelity.tolerance] METRIC = %)
    Fidelity {
        /// Scenario files (one fidelity set)
        #[arg(required = true)]
        scenarios: Vec<String>,
        /// Kernel runs per scenario
        #[arg(long, default_value_t = 3)]
        repeat: u32,
        /// Override a knob in every scenario
        #[arg(long = "set", value_name = "PATH=VALUE")]
        sets: Vec<String>,
        /// Keep every run's outputs here (kernel-N/ and wbsim/ per scenario)
        #[arg(long)]
        out: Option<PathBuf>,
        /// Do not run the kernel: score against the kernel runs kept in
        /// DIR by an earlier `--out DIR` (DIR/SCENARIO/kernel-N/summary.json)
        #[arg(long, value_name = "DIR")]
        kernel_runs: Option<PathBuf>,
        /// Keep the scenarios' machine.cost as written, instead of scaling
        /// it to the CPU speed the kernel runs measured
        #[arg(long)]
        no_cpu_calibration: bool,
        /// Simulate the scenario alone, without the other devices'
        /// writeback the kernel runs shared their machine with (see
        /// docs/live.md)
        #[arg(long)]
        no_other_writeback: bool,
        /// Before each kernel run, measure how much free memory the
        /// hypervisor still backs and what a page beyond it costs, and
        /// simulate that state (machine.host_backed_free and
        /// machine.cost.host_fault from the runs' median); with
        /// --kernel-runs, from their kept host.json
        #[arg(long)]
        probe_host: bool,
        /// wbsim runs per scenario, seeds run.seed, run.seed+1, ...
        /// (default: as many as kernel runs)
        #[arg(long, value_name = "N")]
        sim_runs: Option<u32>,
        /// Write the scores as Markdown: DIR/summary.md (the README's
        /// table) and DIR/full.md (docs/validation.md's), instead of
        /// printing the text tables
        #[arg(long, value_name = "DIR")]
        markdown: Option<PathBuf>,
        /// Fail (exit 1) only when a figure FILE lists as passing misses
        /// its tolerance now, naming each (FILE: `SCENARIO METRIC` lines,
        /// from --write-baseline)
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        /// Write the figures that pass, as a baseline for --baseline
        #[arg(long, value_name = "FILE")]
        write_baseline: Option<PathBuf>,
        /// Keep each kernel run's scored figures, small, under
        /// DIR/SCENARIO/kernel-N/summary.json (and host.json): a summary
        /// with only the trace events scoring reads, for --kernel-runs
        #[arg(long, value_name = "DIR")]
        keep_runs: Option<PathBuf>,
    },
    /// Run a sweep plan's points on every core and write results.csv
    /// (`wbsim sweep PLAN.toml [--out DIR] [--jobs N] [--shard I/N | --index K]
    /// [--count]`), or join shards (`wbsim sweep merge DIR... --out DIR`)
    #[command(disable_help_flag = true)]
    Sweep {
        /// The plan, and --out, --jobs, --shard, --index, --count, -q;
        /// or merge DIR... --out DIR
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run fio job files (or fio's `--name=... --rw=...` jobs) on the
    /// simulated machine and print fio's output: wbsim fio JOBFILE
    /// [--section X] [--output-format=normal|json] [--scenario S]
    /// [--set ...] [--out DIR] [--parse-only] [--live]
    #[command(disable_help_flag = true)]
    Fio {
        /// Job files, fio's options (--name=JOB --rw=...), and wbsim's:
        /// --section, --output-format, --output, --scenario, --filesystem,
        /// --set, --seed, --out, --parse-only, --live
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run simoop's loop (the model's, workload/simoop.rs) on this
    /// machine's kernel, in real directories, and print simoop's lines:
    /// wbsim simoop [-t N -m MB -M MB -C N -T N -D N -f MB -R MB -W MB
    /// -r S -w S -i S -n N] DIR... [--json FILE] [--seed N]
    #[command(disable_help_flag = true)]
    Simoop {
        /// simoop's flags and directories, and wbsim's --json FILE (the
        /// final figures) and --seed N (default 1)
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Validate a scenario without running it
    Check {
        #[command(flatten)]
        s: ScenarioArgs,
    },
    /// Measure simulation speed (simulated seconds per wall second)
    Bench {
        #[command(flatten)]
        s: ScenarioArgs,
        /// Runs per measurement (the best is reported)
        #[arg(long, default_value_t = 5)]
        repeat: u32,
        /// Measure with tracing off, on, or both
        #[arg(long, default_value = "both", value_parser = ["off", "on", "both"])]
        trace: String,
    },
    /// Undo what a live run killed without restoring (SIGKILL, a lost
    /// session) left on this machine, from its journal (/run/wbsim, or /dev/shm/wbsim where /run is no tmpfs)
    /// (every live run does this first, too)
    Restore,
    /// Print the built-in default scenario
    DefaultScenario,
    /// Before/after table of two runs' summary metrics
    Compare {
        /// First run's output directory (or its summary.json)
        a: PathBuf,
        /// Second run's output directory (or its summary.json)
        b: PathBuf,
        /// Every number in the summaries, not only the figures that matter
        #[arg(long)]
        all: bool,
        /// text, markdown, csv or json
        #[arg(long, value_enum, default_value = "text")]
        format: compare::Format,
    },
    /// Explain scenario keys: one (devices.loop0.write_bps), every key under
    /// a prefix (vm, devices.NAME), or, without KEY, the list
    Help {
        /// A key or a prefix of keys; NAME segments match any name
        key: Option<String>,
        /// Print the whole reference as Markdown (docs/scenario.md)
        #[arg(long, conflicts_with = "key")]
        markdown: bool,
    },
}

/// `wbsim help [KEY]`.
fn help_cmd(key: Option<&str>, markdown: bool) -> i32 {
    use crate::scenario::keys;
    if markdown {
        print!("{}", keys::markdown());
        return 0;
    }
    let Some(key) = key else {
        print!("{}", keys::list_text());
        return 0;
    };
    let found = keys::lookup(key);
    let mut cmd = Cli::command();
    cmd.build();
    let sub = cmd.find_subcommand_mut(key);
    if found.is_empty() {
        // `wbsim help COMMAND`, as clap's own help subcommand did
        if let Some(sub) = sub {
            let _ = sub.print_help();
            return 0;
        }
        eprintln!(
            "wbsim: help: no scenario key `{key}`; expected {}",
            keys::expected_for(key)
        );
        return 2;
    }
    for (i, k) in found.iter().enumerate() {
        if i > 0 {
            println!();
        }
        print!("{}", keys::entry_text(k));
    }
    if sub.is_some() {
        println!("\n(`wbsim {key} --help` describes the command)");
    }
    0
}

fn load(s: &ScenarioArgs) -> Result<Scenario, ScenarioError> {
    let mut sets = s.sets.clone();
    if let Some(seed) = s.seed {
        sets.push(format!("run.seed={seed}"));
    }
    match &s.scenario {
        Some(p) => Scenario::load_file(p, &sets),
        None => Scenario::builtin(&sets),
    }
}

fn bad_input(e: &ScenarioError) -> i32 {
    eprintln!("wbsim: error: {}", term(&e.to_string()));
    2
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match cli.cmd {
        Cmd::Help { key, markdown } => help_cmd(key.as_deref(), markdown),
        Cmd::Fio { args } => fio::main(&args),
        Cmd::Simoop { args } => simoop::main(&args),
        Cmd::Sweep { args } => sweep::main(&args),
        Cmd::Report { dirs, out } => match crate::report::report(&dirs, &out) {
            Ok(()) => {
                eprintln!("wbsim: wrote {}", out.display());
                0
            }
            Err(e) => {
                eprintln!("wbsim: error: {}", term(&e));
                2
            }
        },
        Cmd::Restore => {
            // SAFETY: geteuid(2) has no preconditions.
            if unsafe { libc::geteuid() } != 0 {
                eprintln!("wbsim: restore needs root");
                return 2;
            }
            let msgs: Vec<String> = crate::live::journal::journal_dirs()
                .iter()
                .flat_map(|d| crate::live::journal::recover_stale(d))
                .collect();
            if msgs.is_empty() {
                println!("nothing to restore: no live run ended without restoring the machine");
            }
            for m in msgs {
                println!("{m}");
            }
            0
        }
        Cmd::Live {
            s,
            out,
            quiet,
            probe_host,
        } => {
            let sc = match load(&s) {
                Ok(sc) => sc,
                Err(e) => return bad_input(&e),
            };
            // what the machine cannot do is said first, then a bad --out,
            // both before anything is set up
            if let Err(e) = crate::live::preflight(&sc) {
                eprintln!("wbsim: {e}");
                return 2;
            }
            if let Err(e) = writable_dir(&out) {
                eprintln!("wbsim: error: cannot write to {}: {e}", shown(&out));
                return 2;
            }
            match live_once(&sc, quiet, probe_host).map(|(r, _)| r) {
                Ok(r) => {
                    if let Err(e) = write_outputs(&out, &r) {
                        eprintln!("wbsim: error: cannot write to {}: {e}", out.display());
                        return 2;
                    }
                    if !quiet {
                        print_human(&r, &out, &[]);
                        if r.summary.other_bdi_lines > 0 {
                            eprintln!(
                                "wbsim: warning: {} trace lines in the window came from other devices' writeback (see other_bdi_lines)",
                                r.summary.other_bdi_lines
                            );
                        }
                    }
                    0
                }
                Err(code) => code,
            }
        }
        Cmd::Fidelity {
            scenarios,
            repeat,
            sets,
            out,
            kernel_runs,
            no_cpu_calibration,
            no_other_writeback,
            probe_host,
            sim_runs,
            markdown,
            baseline,
            write_baseline,
            keep_runs,
        } => fidelity_cmd(
            &scenarios,
            &FidelityOpts {
                repeat: repeat.max(1),
                sets,
                out,
                kernel_runs,
                calibrate_cpu: !no_cpu_calibration,
                other_writeback: !no_other_writeback,
                probe_host,
                sim_runs,
                markdown,
                baseline,
                write_baseline,
                keep_runs,
            },
        ),
        Cmd::Compare { a, b, all, format } => match compare::run(&a, &b, all, format) {
            Ok(t) => {
                print!("{t}");
                0
            }
            Err(e) => {
                eprintln!("wbsim: error: {e}");
                2
            }
        },
        Cmd::DefaultScenario => {
            print!("{}", crate::scenario::DEFAULT_SCENARIO);
            0
        }
        Cmd::Check { s } => match load(&s) {
            Ok(sc) => {
                println!(
                    "{}: ok ({} devices, {} filesystems, {} jobs, {} tasks, {} s)",
                    s.scenario.as_deref().unwrap_or("<built-in default>"),
                    sc.devices.len(),
                    sc.filesystems.len(),
                    sc.jobs.len(),
                    sc.jobs.iter().map(|j| j.numjobs as u64).sum::<u64>(),
                    sc.run.duration as f64 / 1e9
                );
                0
            }
            Err(e) => bad_input(&e),
        },
        Cmd::Plot { dir, bdi } => match crate::plot::plot_dir(&dir, bdi.as_deref()) {
            Ok(files) => {
                for f in files {
                    println!("{}", f.display());
                }
                0
            }
            Err(e) => {
                eprintln!("wbsim: error: {e}");
                2
            }
        },
        Cmd::Run {
            s,
            out,
            quiet,
            plot,
            explain,
            force,
            report,
        } => {
            let sc = match load(&s) {
                Ok(sc) => sc,
                Err(e) => return bad_input(&e),
            };
            if !force {
                if let Err(m) = estimate_ok(&sc) {
                    eprintln!("wbsim: {m}");
                    return 2;
                }
            }
            // the output directory is made and checked before the run, so
            // a bad --out does not cost the results (and fio's logs are
            // written into it as the run goes)
            let has_fio = sc
                .jobs
                .iter()
                .any(|j| matches!(j.kind, crate::scenario::JobKind::Fio(_)));
            if let Err(e) = writable_dir(&out) {
                eprintln!("wbsim: error: cannot write to {}: {e}", shown(&out));
                return 2;
            }
            let opts = crate::output::SimOpts {
                trace: true,
                fio_log_dir: has_fio.then(|| out.clone()),
                end_when_fio_done: false,
                trace_dir: Some(out.clone()),
                stop: Some(stop_on_sigint()),
                trace_limit: (!force).then_some(crate::output::TRACE_LIMIT),
                allow_full_device: force,
                outside: Vec::new(),
            };
            let r = match simulate_with_progress(&sc, &opts, quiet) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("wbsim: error: {e}");
                    return 1;
                }
            };
            if let Err(e) = write_outputs(&out, &r) {
                eprintln!("wbsim: error: cannot write to {}: {e}", out.display());
                return 2;
            }
            if report {
                let mut toml = match &s.scenario {
                    Some(p) => std::fs::read_to_string(p).unwrap_or_default(),
                    None => crate::scenario::DEFAULT_SCENARIO.to_string(),
                };
                for set in &s.sets {
                    toml.push_str(&format!("# --set {set}\n"));
                }
                if let Some(seed) = s.seed {
                    toml.push_str(&format!("# --seed {seed}\n"));
                }
                let r = std::fs::write(out.join("scenario.toml"), toml)
                    .map_err(|e| e.to_string())
                    .and_then(|_| {
                        crate::report::report(std::slice::from_ref(&out), &out.join("report.html"))
                    });
                if let Err(e) = r {
                    eprintln!("wbsim: error: the report: {e}");
                    return 1;
                }
            }
            let mut plotted = Vec::new();
            if plot {
                match crate::plot::plot_dir(&out, None) {
                    Ok(files) => plotted = files,
                    Err(e) => {
                        eprintln!("wbsim: error: plotting: {e}");
                        return 1;
                    }
                }
            }
            if !quiet {
                print_human(&r, &out, &plotted);
                if explain {
                    print!("{}", EXPLAIN);
                }
            }
            if let Some(t) = r.stopped_at {
                let why = if r.stopped_by == Some("SIGINT") {
                    "interrupted".to_string()
                } else if r.stopped_by == Some(crate::mm::oom_kill::OOM_PANIC) {
                    "the kernel panicked: out of memory and no killable processes \
                     (\"System is deadlocked on memory\"); give the machine more memory \
                     (machine.memory) or the workload less (machine.anon, the jobs' working sets)"
                        .to_string()
                } else if let (Some("device full"), Some(d)) = (r.stopped_by, &r.full_device) {
                    format!(
                        "device `{}` is full: its filesystem allocated past its {} bytes \
                         (devices.{}.size), and the model has no ENOSPC; make the device \
                         larger, write less (jobs' `size`, `run.duration`), or --force to \
                         run on as if it were larger",
                        term(d),
                        sc.devices
                            .iter()
                            .find(|x| &x.name == d)
                            .map_or(0, |x| x.size),
                        term(d)
                    )
                } else {
                    format!(
                        "the trace passed {:.1} GB; trace fewer events \
                         (--set 'trace.events=[balance_dirty_pages]', or [] for none), \
                         run shorter, or --force",
                        TRACE_LIMIT / 1e9
                    )
                };
                eprintln!(
                    "wbsim: {why}: the run stopped at {:.3} s of {:.0} s simulated; \
                     {} holds the run so far (summary.json: stopped_at_s)",
                    t as f64 / 1e9,
                    sc.run.duration as f64 / 1e9,
                    shown(&out)
                );
                return if r.stopped_by == Some("SIGINT") {
                    130
                } else {
                    2
                };
            }
            if let Some(d) = &r.full_device {
                eprintln!(
                    "wbsim: warning: device `{}` is full: its filesystem allocated past \
                     devices.{}.size; with --force the run went on as if it were larger",
                    term(d),
                    term(d)
                );
            }
            0
        }
        Cmd::Bench { s, repeat, trace } => {
            let sc = match load(&s) {
                Ok(sc) => sc,
                Err(e) => return bad_input(&e),
            };
            crate::cli::bench(&sc, repeat.max(1), &trace);
            0
        }
    }
}

/// A flag that SIGINT (Ctrl-C) sets, for the run to stop where it is and
/// write what it has; a second SIGINT exits at once (130).
fn stop_on_sigint() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    use signal_hook::{consts::SIGINT, flag};
    // the order matters: the shutdown is armed by the first signal's flag
    let _ = flag::register_conditional_shutdown(SIGINT, 130, std::sync::Arc::clone(&stop));
    let _ = flag::register(SIGINT, std::sync::Arc::clone(&stop));
    stop
}

/// Simulate with a progress line on stderr (after the first second).
pub(crate) fn simulate_with_progress(
    sc: &Scenario,
    opts: &crate::output::SimOpts,
    quiet: bool,
) -> Result<crate::output::RunResult, String> {
    let t0 = Instant::now();
    let tty = std::io::stderr().is_terminal();
    let mut last = 0.0f64;
    let r = crate::output::simulate_with(sc, opts, |now, end| {
        let el = t0.elapsed().as_secs_f64();
        if !quiet && el > 1.0 && el - last >= 1.0 {
            last = el;
            if tty {
                // the rest at the pace so far
                let left = if now > 0.0 {
                    el * (end - now) / now
                } else {
                    0.0
                };
                eprint!("\r[wbsim] simulated {now:.1} s of {end:.0} s, about {left:.0} s left   ");
            } else {
                eprintln!("[wbsim] simulated {now:.1} s of {end:.0} s");
            }
        }
    });
    if !quiet && last > 0.0 {
        if tty {
            eprintln!();
        } else if let Ok(r) = &r {
            // a log's last progress line would read as if the run stopped
            eprintln!(
                "[wbsim] simulated {:.1} s of {:.0} s: done",
                r.sim_s, r.sim_s
            );
        }
    }
    r
}

/// The trace a run may write before it is refused (or stopped) without
/// --force.
const TRACE_LIMIT: f64 = crate::output::TRACE_LIMIT as f64;

/// A run longer than a minute is first simulated for its first 10 s, and
/// its trace is extrapolated to the whole run: over [`TRACE_LIMIT`] of
/// disk it is refused, with what to change.
fn estimate_ok(sc: &Scenario) -> Result<(), String> {
    const TRIAL: u64 = 10_000_000_000;
    let dur = sc.run.duration;
    if dur <= 60_000_000_000 {
        return Ok(());
    }
    let mut t = sc.clone();
    t.run.duration = TRIAL;
    t.run.warmup = t.run.warmup.min(TRIAL / 2);
    let opts = crate::output::SimOpts {
        trace: true,
        ..Default::default()
    };
    let Ok(r) = crate::output::simulate_with(&t, &opts, |_, _| {}) else {
        return Ok(()); // the real run will say what is wrong
    };
    let scale = dur as f64 / TRIAL as f64;
    let bytes = r.trace_text.len() as f64 * scale;
    let wall = r.wall_s * scale;
    if bytes > TRACE_LIMIT {
        return Err(format!(
            "{} s simulated would write about {:.1} GB of trace (from its first 10 s: {:.1} MB), \
             in about {:.0} s of wall time; trace fewer events \
             (--set 'trace.events=[balance_dirty_pages]', or [] for none), run shorter \
             (--set run.duration=...), or --force",
            dur / 1_000_000_000,
            bytes / 1e9,
            r.trace_text.len() as f64 / 1e6,
            wall
        ));
    }
    Ok(())
}

/// Make `dir` and check that a file can be written in it.
pub(crate) fn writable_dir(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let probe = dir.join(format!(".wbsim-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// A name from a scenario, safe to print on a terminal: control
/// characters (an escape sequence, a newline) as Rust escapes them.
pub(crate) fn term(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A path as the user would write it: `.` components and doubled or
/// trailing slashes gone (`./o//` is `o`).
pub(crate) fn shown(p: &std::path::Path) -> String {
    use std::path::Component;
    let parts: Vec<Component> = p
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    if parts.is_empty() {
        return ".".into();
    }
    let q: PathBuf = parts.iter().collect();
    q.display().to_string()
}

/// What each figure of the run summary is (`wbsim run --explain`).
const EXPLAIN: &str = "\
what the figures are (docs/outputs.md has all of summary.json):
  window             the part of the run the figures cover (run.warmup to the end)
  MiB/s dirtied      the job's buffered writes (pages dirtied), all its tasks together
  per task p50       the median task's own rate
  vol cs/task/s      voluntary context switches per task per second: how often a
                     writer slept (in balance_dirty_pages, on IO or a lock)
  dev ... written    what the device completed: bandwidth, requests per second,
                     and the mean request size
  dirty pages        nr_dirty + nr_writeback, sampled; p10/p50/p90 over the window
  balance_dirty_pages  the medians of the tracepoint's fields over the window:
                     dirty and limit (pages, global), setpoint (where pos_ratio is 1),
                     pause (ms slept), period (ms between two calls, sleep included),
                     dirtied_pause (pages a task may dirty before it is checked again)
";

fn print_human(r: &crate::output::RunResult, out: &std::path::Path, plotted: &[PathBuf]) {
    let s = &r.summary;
    println!(
        "wbsim: {} (seed {}, {}), {:.0} s simulated in {:.3} s wall ({:.0}x real time, {} events)",
        term(&s.scenario),
        s.seed,
        s.dirty_throttle,
        s.duration_s,
        r.wall_s,
        r.sim_s / r.wall_s.max(1e-9),
        r.events
    );
    println!("window {:.0}-{:.0} s:", s.window.start_s, s.window.end_s);
    for j in &s.jobs {
        println!(
            "  job {:<10} {:>5} tasks  {:>8.2} MiB/s dirtied  (per task p50 {:.2})  vol cs/task/s p50 {:.1}",
            term(&j.name), j.tasks, j.aggregate_mib_s, j.per_task_mib_s.p50, j.voluntary_cs_per_task_s.p50
        );
    }
    for d in &s.devices {
        println!(
            "  dev {:<10} {:>8.2} MiB/s written, {:.1} IOPS, avg request {:.1} KiB",
            term(&d.name),
            d.write_mib_s,
            d.write_iops,
            d.avg_request_kib
        );
    }
    println!(
        "  dirty pages p10/p50/p90: {:.0} / {:.0} / {:.0}  (nr_writeback p50 {:.0})",
        s.dirty_pages.p10, s.dirty_pages.p50, s.dirty_pages.p90, s.nr_writeback.p50
    );
    if let Some(b) = s.trace.get("balance_dirty_pages") {
        let f = |k: &str| b.fields.get(k).map(|p| p.p50).unwrap_or(0.0);
        println!(
            "  balance_dirty_pages p50: dirty {:.0}, limit {:.0}, setpoint {:.0}, pause {:.0} ms, period {:.0} ms, dirtied_pause {:.0}",
            f("dirty"),
            f("limit"),
            f("setpoint"),
            f("pause"),
            f("period"),
            f("dirtied_pause")
        );
    }
    // the workloads' own tables come after wbsim's summary
    if !r.fs_mark.is_empty() {
        println!("fs_mark's own output (also in fs_mark.txt):");
        print!("{}", r.fs_mark);
    }
    let mut files: Vec<String> = ["trace.txt", "summary.json", "vmstat", "wall.json"]
        .iter()
        .map(|f| f.to_string())
        .collect();
    if !r.fs_mark.is_empty() {
        files.push("fs_mark.txt".into());
    }
    files.extend(r.extra_files.iter().map(|(n, _)| n.clone()));
    files.extend(
        r.written
            .iter()
            .chain(plotted)
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())),
    );
    if r.extra_files.iter().any(|(n, _)| n == "fio.txt") {
        println!("fio's own output: fio.txt (as fio prints it) and fio.json");
    }
    println!("output in {}/ ({})", shown(out), files.join(", "));
}

/// `wbsim bench`: simulated seconds per wall second, tracing off and on.
pub fn bench(sc: &Scenario, repeat: u32, which: &str) {
    for (label, trace_on) in [("tracing off", false), ("tracing on", true)] {
        if (which == "off" && trace_on) || (which == "on" && !trace_on) {
            continue;
        }
        let mut best = f64::INFINITY;
        let mut events = 0;
        for _ in 0..repeat {
            let r = simulate(sc, trace_on, |_, _| {});
            best = best.min(r.wall_s);
            events = r.events;
        }
        let sim = sc.run.duration as f64 / 1e9;
        println!(
            "bench {} ({label}): {:.1} s simulated in {:.2} ms wall (best of {repeat}) = {:.0}x real time, {} events, {:.0} ns/event",
            sc.name,
            sim,
            best * 1e3,
            sim / best,
            events,
            best * 1e9 / events.max(1) as f64
        );
    }
}

/// One live run with the machine restored afterwards. Err is the exit code.
/// Run `sc` on this machine's kernel; with `probe_host`, measure the
/// hypervisor's backing of free memory first (kept as host.json).
pub fn live_once(
    sc: &Scenario,
    quiet: bool,
    probe_host: bool,
) -> Result<
    (
        crate::output::RunResult,
        Option<crate::live::host_probe::HostProbe>,
    ),
    i32,
> {
    use crate::live::{self, LiveError, Restore};
    let stop = live::stop_flag();
    let mut say = |m: &str| {
        if !quiet {
            eprintln!("[wbsim live] {m}");
        }
    };
    // one live run at a time on this machine (the probe too: it would
    // measure the other run's memory)
    // SAFETY: geteuid(2) has no preconditions.
    let _lock = if unsafe { libc::geteuid() } == 0 {
        match live::machine_lock(&mut say) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("wbsim: {e}");
                return Err(1);
            }
        }
    } else {
        None
    };
    let mut host = None;
    if probe_host {
        if let Err(e) = live::preflight(sc) {
            eprintln!("wbsim: {e}");
            return Err(2);
        }
        match live::host_probe::probe_machine() {
            Ok(p) => {
                if !quiet {
                    eprintln!("[wbsim live] host: {}", p.describe());
                }
                host = Some(p);
            }
            Err(e) => {
                eprintln!("wbsim: cannot probe the host's backing of free memory: {e}");
                return Err(1);
            }
        }
    }
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        for d in live::journal::journal_dirs() {
            for m in live::journal::recover_stale(&d) {
                eprintln!("wbsim: {m}");
            }
        }
    }
    let mut guard = Restore::default();
    let r = live::run(sc, &stop, &mut guard, &mut |m: &str| {
        if !quiet {
            eprintln!("[wbsim live] {m}");
        }
    });
    guard.restore();
    for l in &guard.log {
        eprintln!("wbsim: warning: {l}");
    }
    match r {
        Ok(mut r) => {
            if let Some(h) = &host {
                let text = serde_json::to_string_pretty(h).unwrap_or_default() + "\n";
                r.extra_files.push(("host.json".into(), text.into_bytes()));
            }
            Ok((r, host))
        }
        Err(e) => {
            eprintln!("wbsim: {e}");
            Err(match e {
                LiveError::Refused(_) => 2,
                LiveError::Interrupted => 130,
                LiveError::Failed(_) => 1,
            })
        }
    }
}

struct FidelityOpts {
    repeat: u32,
    sets: Vec<String>,
    out: Option<PathBuf>,
    kernel_runs: Option<PathBuf>,
    calibrate_cpu: bool,
    other_writeback: bool,
    probe_host: bool,
    sim_runs: Option<u32>,
    markdown: Option<PathBuf>,
    baseline: Option<PathBuf>,
    write_baseline: Option<PathBuf>,
    keep_runs: Option<PathBuf>,
}

/// The kernel runs kept under `dir/SCENARIO/kernel-N/summary.json`.
fn kept_kernel_runs(dir: &std::path::Path, sc: &Scenario) -> Result<Vec<Summary>, String> {
    let d = dir.join(&sc.name);
    let mut runs: Vec<(u32, PathBuf)> = std::fs::read_dir(&d)
        .map_err(|e| format!("{}: {e}", d.display()))?
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            let k = n.strip_prefix("kernel-")?.parse().ok()?;
            Some((k, e.path().join("summary.json")))
        })
        .collect();
    runs.sort();
    if runs.is_empty() {
        return Err(format!("{}: no kernel-N/ run directories", d.display()));
    }
    runs.iter()
        .map(|(_, f)| {
            let t = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            serde_json::from_str(&t).map_err(|e| format!("{}: {e}", f.display()))
        })
        .collect()
}

/// The host probes kept beside the kernel runs (`kernel-N/host.json`).
fn kept_host_probes(
    dir: &std::path::Path,
    sc: &Scenario,
) -> Vec<crate::live::host_probe::HostProbe> {
    let Ok(rd) = std::fs::read_dir(dir.join(&sc.name)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = rd.flatten().map(|e| e.path().join("host.json")).collect();
    files.sort();
    files
        .iter()
        .filter_map(|f| serde_json::from_str(&std::fs::read_to_string(f).ok()?).ok())
        .collect()
}

/// Simulate the host state the kernel runs started in: the median of
/// their probes' backed free memory and fault cost. A note saying so, or
/// None without probes.
fn host_state(sc: &mut Scenario, hosts: &[crate::live::host_probe::HostProbe]) -> Option<String> {
    if hosts.is_empty() {
        return None;
    }
    let median = |mut v: Vec<u64>| -> Option<u64> {
        v.sort_unstable();
        (!v.is_empty()).then(|| v[v.len() / 2])
    };
    // a probe that found all it touched backed counts that much
    let backed = median(
        hosts
            .iter()
            .map(|h| h.backed_free_bytes.unwrap_or(h.probed_bytes))
            .collect(),
    );
    let fault = median(hosts.iter().filter_map(|h| h.host_fault_ns).collect());
    if hosts.iter().all(|h| h.backed_free_bytes.is_none()) {
        sc.machine.host_backed_free = None;
        return Some(format!(
            "host: {} probe(s) found all probed free memory backed; simulated without host faults",
            hosts.len()
        ));
    }
    sc.machine.host_backed_free = backed;
    if let Some(f) = fault {
        sc.machine.cost.host_fault = f;
    }
    Some(format!(
        "host: machine.host_backed_free = {} MiB and machine.cost.host_fault = {} ns, the median of {} probe(s) before the kernel runs",
        backed.unwrap_or(0) >> 20,
        sc.machine.cost.host_fault,
        hosts.len()
    ))
}

fn fidelity_cmd(files: &[String], o: &FidelityOpts) -> i32 {
    let mut scs = Vec::new();
    for f in files {
        match Scenario::load_file(f, &o.sets) {
            Ok(sc) => scs.push(sc),
            Err(e) => return bad_input(&e),
        }
    }
    let baseline = match &o.baseline {
        Some(f) => match std::fs::read_to_string(f) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("wbsim: error: {}: {e}", f.display());
                return 2;
            }
        },
        None => None,
    };
    let cases = if let Some(dir) = &o.kernel_runs {
        // every scenario's kernel runs first (a missing one is an error
        // before any simulation), then the scoring, one scenario a core
        let mut kept = Vec::new();
        for (sc, path) in scs.iter().zip(files) {
            match kept_kernel_runs(dir, sc) {
                Ok(k) => {
                    let hosts = if o.probe_host {
                        kept_host_probes(dir, sc)
                    } else {
                        Vec::new()
                    };
                    kept.push((sc, path, k, hosts));
                }
                Err(e) => {
                    eprintln!("wbsim: error: {e}");
                    return 2;
                }
            }
        }
        use rayon::prelude::*;
        let cases: Vec<_> = kept
            .into_par_iter()
            .map(|(sc, path, kernel, hosts)| score_case(sc, path, kernel, hosts, Vec::new(), o))
            .collect();
        if let Some(keep) = &o.keep_runs {
            for sc in &scs {
                if let Err(e) = keep_kernel_runs(dir, keep, sc) {
                    eprintln!("wbsim: error: {e}");
                    return 2;
                }
            }
        }
        cases
    } else {
        match fidelity_live(&scs, files, o) {
            Ok(c) => c,
            Err(code) => return code,
        }
    };
    for c in &cases {
        if o.markdown.is_none() {
            println!(
                "{}",
                crate::fidelity::table(&c.scenario, &c.rows, c.kernel_runs, c.sim_runs)
            );
            for n in &c.notes {
                println!("note: {n}");
            }
            for r in &c.rows {
                if let Some(n) = &r.note {
                    println!("note: {}: {n}", r.metric);
                }
            }
            println!();
        }
    }
    if let Some(o) = &o.out {
        let _ = std::fs::create_dir_all(o);
        let _ = std::fs::write(
            o.join("fidelity.json"),
            serde_json::to_string_pretty(&cases).unwrap_or_default() + "\n",
        );
    }
    if let Some(dir) = &o.markdown {
        let w = std::fs::create_dir_all(dir)
            .and_then(|_| {
                std::fs::write(
                    dir.join("summary.md"),
                    crate::fidelity::markdown_summary(&cases),
                )
            })
            .and_then(|_| {
                std::fs::write(dir.join("full.md"), crate::fidelity::markdown_full(&cases))
            });
        if let Err(e) = w {
            eprintln!("wbsim: error: {}: {e}", dir.display());
            return 2;
        }
    }
    if let Some(f) = &o.write_baseline {
        if let Err(e) = std::fs::write(f, crate::fidelity::baseline_text(&cases)) {
            eprintln!("wbsim: error: {}: {e}", f.display());
            return 2;
        }
    }
    let (n, ok) = crate::fidelity::pass_count(&cases);
    eprintln!("wbsim: fidelity: {ok} of {n} figures that have a tolerance pass");
    if let (Some(text), Some(f)) = (&baseline, &o.baseline) {
        let (lost, gained) =
            match crate::fidelity::against_baseline(&cases, text, &f.display().to_string()) {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("wbsim: error: {e}");
                    return 2;
                }
            };
        for g in &gained {
            eprintln!("wbsim: fidelity: passes now, not in {}: {g}", f.display());
        }
        if lost.is_empty() {
            return 0;
        }
        for l in &lost {
            eprintln!("wbsim: fidelity: left its tolerance: {l}");
        }
        eprintln!(
            "wbsim: fidelity: {} figure(s) that {} lists as passing miss their tolerance",
            lost.len(),
            f.display()
        );
        return 1;
    }
    if ok == n {
        0
    } else {
        eprintln!("wbsim: fidelity: some metrics are outside their declared tolerance");
        1
    }
}

/// Copy the kernel runs of `sc` kept under `src` to `dst`, each summary
/// trimmed to what scoring reads (`fidelity::trimmed`), with its host.json.
fn keep_kernel_runs(
    src: &std::path::Path,
    dst: &std::path::Path,
    sc: &Scenario,
) -> Result<(), String> {
    let d = src.join(&sc.name);
    let rd = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
    let mut runs: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("kernel-"))
                .is_some_and(|k| k.parse::<u32>().is_ok())
        })
        .collect();
    runs.sort();
    for r in runs {
        let to = dst.join(&sc.name).join(r.file_name().unwrap_or_default());
        std::fs::create_dir_all(&to).map_err(|e| format!("{}: {e}", to.display()))?;
        let f = r.join("summary.json");
        let t = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let s: Summary = serde_json::from_str(&t).map_err(|e| format!("{}: {e}", f.display()))?;
        let text =
            serde_json::to_string_pretty(&crate::fidelity::trimmed(s)).unwrap_or_default() + "\n";
        std::fs::write(to.join("summary.json"), text)
            .map_err(|e| format!("{}: {e}", to.display()))?;
        if let Ok(h) = std::fs::read(r.join("host.json")) {
            std::fs::write(to.join("host.json"), h)
                .map_err(|e| format!("{}: {e}", to.display()))?;
        }
    }
    Ok(())
}

/// Run every scenario `o.repeat` times on the kernel (waiting between runs
/// for the writeback domain to forget the last one) and score each.
fn fidelity_live(
    scs: &[Scenario],
    files: &[String],
    o: &FidelityOpts,
) -> Result<Vec<crate::fidelity::CaseScore>, i32> {
    // refuse up front, before touching the machine
    for sc in scs {
        if let Err(e) = crate::live::preflight(sc) {
            eprintln!("wbsim: {}: {e}", sc.name);
            return Err(2);
        }
    }
    let out = o.out.as_deref();
    let stop = crate::live::stop_flag();
    // pages the previous kernel run wrote, for the settling wait; before
    // the first, what a run like it writes (the machine's last run, made
    // by another invocation, is unknown)
    let mut last_pages: Option<u64> = scs.first().map(crate::fidelity::first_settle_pages);
    let mut cases = Vec::new();
    for (sc, path) in scs.iter().zip(files) {
        let mut kernel = Vec::new();
        let mut shares = Vec::new();
        let mut hosts = Vec::new();
        for k in 0..o.repeat {
            if let Some(p) = last_pages {
                let wait = crate::fidelity::settle_secs(p);
                let first = kernel.is_empty() && cases.is_empty();
                let whose = if first {
                    "a run like the first's"
                } else {
                    "the last run's"
                };
                eprintln!(
                    "[wbsim fidelity] waiting {wait} s for the writeback domain to age out {whose} {p} completions"
                );
                let t0 = Instant::now();
                while t0.elapsed().as_secs() < wait {
                    if stop.load(std::sync::atomic::Ordering::SeqCst) {
                        eprintln!("wbsim: interrupted");
                        return Err(130);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            }
            eprintln!(
                "[wbsim fidelity] {}: kernel run {}/{} ({:.0} s)",
                sc.name,
                k + 1,
                o.repeat,
                sc.run.duration as f64 / 1e9
            );
            let (r, host) = live_once(sc, true, o.probe_host)?;
            if let Some(h) = host {
                hosts.push(h);
            }
            let dir = |d: &std::path::Path| d.join(&sc.name).join(format!("kernel-{}", k + 1));
            if let Some(o) = out {
                let _ = write_outputs(&dir(o), &r);
            }
            if let Some(keep) = &o.keep_runs {
                let d = dir(keep);
                let text = serde_json::to_string_pretty(&r.summary).unwrap_or_default();
                let s: Option<Summary> = serde_json::from_str(&text).ok();
                let _ = std::fs::create_dir_all(&d);
                if let Some(s) = s {
                    let t = serde_json::to_string_pretty(&crate::fidelity::trimmed(s))
                        .unwrap_or_default();
                    let _ = std::fs::write(d.join("summary.json"), t + "\n");
                }
                for (name, bytes) in &r.extra_files {
                    if name == "host.json" {
                        let _ = std::fs::write(d.join(name), bytes);
                    }
                }
            }
            let bytes = r.summary.devices.iter().map(|d| d.write_mib_s).sum::<f64>()
                * r.summary.duration_s
                * 1048576.0;
            last_pages = Some((bytes / sc.machine.page_size as f64) as u64);
            if let Some(s) = crate::fidelity::start_share(&r.trace_text) {
                shares.push(s);
            }
            kernel.push(r.summary)
        }
        cases.push(score_case(sc, path, kernel, hosts, shares, o));
    }
    Ok(cases)
}

/// The scenario `sim_sc` (read from `path`) with the other devices'
/// writeback the kernel runs shared their machine with, when their device
/// held less than `fidelity::OTHER_SHARE_BELOW` of the dirty threshold
/// (median of the runs): a writer on a device of its own
/// (`fidelity::other_writeback_sets`) at the rate that gives the
/// scenario's device the kernel's share, from `fidelity::other_rate` and
/// two corrections. With a note; None when the share is high, the scenario
/// has more than one filesystem, or its file cannot be read again.
fn other_writeback(
    sim_sc: &Scenario,
    path: &str,
    kernel: &[Summary],
    o: &FidelityOpts,
) -> Option<(Scenario, String)> {
    use crate::fidelity::{median, other_rate, other_writeback_sets, wb_share, OTHER};
    let mut shares: Vec<f64> = kernel.iter().filter_map(wb_share).collect();
    if !o.other_writeback || shares.is_empty() || sim_sc.filesystems.len() != 1 {
        return None;
    }
    let share = median(&mut shares);
    if share >= crate::fidelity::OTHER_SHARE_BELOW {
        return None;
    }
    let mut own: Vec<f64> = kernel
        .iter()
        .filter_map(|s| s.devices.first().map(|d| d.write_mib_s * 1048576.0))
        .collect();
    if own.is_empty() {
        return None;
    }
    let own = median(&mut own);
    let text = std::fs::read_to_string(path).ok()?;
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    let jobs: Vec<String> = doc
        .get("jobs")
        .and_then(|j| j.as_table_like())
        .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
        .unwrap_or_default();
    let fs = sim_sc.filesystems[0].name.clone();
    let dur = sim_sc.run.duration.div_ceil(1_000_000_000);
    let build = |rate: f64| -> Option<Scenario> {
        let mut sets = o.sets.clone();
        sets.extend(other_writeback_sets(&jobs, &fs, rate as u64, dur));
        let mut s = Scenario::load_file(path, &sets).ok()?;
        s.machine.anon = sim_sc.machine.anon;
        Some(s)
    };
    let want = (1.0 - share) / share;
    let mut rate = other_rate(own, share);
    let mut got = None;
    for _ in 0..2 {
        let s = build(rate)?;
        let g = wb_share(&crate::fidelity::sim_summary(&s, &[OTHER.to_string()]))?;
        got = Some(g);
        rate *= want / ((1.0 - g) / g).max(1e-3);
    }
    let s = build(rate)?;
    Some((
        s,
        format!(
            "other devices' writeback: the kernel runs' device held {:.0}% of the dirty threshold \
             (wb_setpoint / setpoint, median); simulated with a writer on a device of its own at \
             {:.2} MiB/s, left out of the figures (the last estimate gave {:.0}%)",
            share * 100.0,
            rate / 1048576.0,
            got.unwrap_or(0.0) * 100.0
        ),
    ))
}

/// Simulate `sc` (its costs scaled to the kernel runs' CPU, in their host
/// state) over `o.sim_runs` seeds and score it against `kernel`.
fn score_case(
    sc: &Scenario,
    path: &str,
    kernel: Vec<Summary>,
    hosts: Vec<crate::live::host_probe::HostProbe>,
    shares: Vec<f64>,
    o: &FidelityOpts,
) -> crate::fidelity::CaseScore {
    let mut sim_sc = sc.clone();
    let mut notes = Vec::new();
    if let Some((anon, kthresh)) = crate::fidelity::memory_scale(&kernel, sc, &[]) {
        notes.push(format!(
            "machine.anon {} MiB -> {} MiB: the kernel runs' dirty threshold was {kthresh:.0} pages \
             (global_dirty_state thresh, median), {:.0} MiB dirtyable at vm.dirty_ratio = {}",
            sc.machine.anon >> 20,
            anon >> 20,
            kthresh * 100.0 / sc.vm.dirty_ratio as f64 * sc.machine.page_size as f64 / 1048576.0,
            sc.vm.dirty_ratio
        ));
        sim_sc.machine.anon = anon;
    }
    let mut outside = Vec::new();
    // score the jobs the kernel runs measured: live mode samples a dd
    // writer itself but fio's job processes only through fio's JSON, so a
    // fio job is no job of the kernel's summary (its pages still count in
    // the device's and the throttle's figures, as they do in wbsim's)
    let measured: Vec<&str> = kernel
        .iter()
        .flat_map(|k| k.jobs.iter().map(|j| j.name.as_str()))
        .collect();
    if !kernel.is_empty() {
        for j in &sc.jobs {
            if !measured.contains(&j.name.as_str()) && !outside.contains(&j.name) {
                notes.push(format!(
                    "job {}: not in the kernel runs' figures (live mode measures fio's job processes only through fio's JSON), left out of wbsim's",
                    j.name
                ));
                outside.push(j.name.clone());
            }
        }
    }
    if let Some((s, note)) = other_writeback(&sim_sc, path, &kernel, o) {
        sim_sc = s;
        notes.push(note);
        outside.push(crate::fidelity::OTHER.to_string());
    }
    // the host state first: the CPU the writers spend depends on it (a
    // page beyond the backed memory costs a host fault), so the costs are
    // calibrated in the state the kernel runs had
    notes.extend(host_state(&mut sim_sc, &hosts));
    if o.calibrate_cpu {
        let base = sim_sc.clone();
        // a probe measured the fault's cost on this machine: it stays
        let probed_fault = (!hosts.is_empty()).then_some(base.machine.cost.host_fault);
        if let Some((k, kcpu)) = crate::fidelity::cpu_scale(&kernel, &base, &outside, probed_fault)
        {
            sim_sc.machine.cost = crate::fidelity::scaled_costs(&base, k, probed_fault);
            notes.push(format!(
                "machine.cost scaled x{k:.3} to this CPU: the kernel runs' writers used {kcpu:.3} CPU-s/s (median); \
                 page_cache_insert {} ns -> {} ns, host_fault {} ns -> {} ns, syscall {} ns -> {} ns",
                base.machine.cost.page_cache_insert,
                sim_sc.machine.cost.page_cache_insert,
                base.machine.cost.host_fault,
                sim_sc.machine.cost.host_fault,
                base.machine.cost.syscall,
                sim_sc.machine.cost.syscall
            ));
        }
    }
    let n = o.sim_runs.unwrap_or(kernel.len() as u32).max(1);
    let mut sims = Vec::new();
    for i in 0..n {
        let mut s = sim_sc.clone();
        s.run.seed = sc.run.seed.wrapping_add(i as u64);
        let opts = crate::output::SimOpts {
            trace: true,
            outside: outside.clone(),
            ..Default::default()
        };
        let Ok(sim) = crate::output::simulate_with(&s, &opts, |_, _| {}) else {
            continue;
        };
        if let Some(o) = &o.out {
            let _ = write_outputs(&o.join(&sc.name).join(format!("wbsim-{}", i + 1)), &sim);
        }
        sims.push(sim.summary);
    }
    let rows = crate::fidelity::score(&kernel, &sims, &sc.fidelity.tolerance);
    let xfs = sc
        .filesystems
        .iter()
        .any(|f| f.kind == crate::scenario::FsKind::Xfs);
    notes.extend(crate::fidelity::start_share_note(&shares, xfs));
    let contaminated: u64 = kernel.iter().map(|s| s.other_bdi_lines).sum();
    if contaminated > 0 {
        notes.push(format!(
            "{contaminated} trace lines of other devices' writeback during the kernel windows"
        ));
    }
    crate::fidelity::CaseScore {
        scenario: sc.name.clone(),
        kernel_runs: kernel.len(),
        sim_runs: sims.len(),
        rows,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live::host_probe::HostProbe;

    fn probe(backed: Option<u64>, fault: Option<u64>) -> HostProbe {
        HostProbe {
            probed_bytes: 8 << 30,
            backed_free_bytes: backed,
            touch_ns: 1400,
            host_fault_ns: fault,
        }
    }

    #[test]
    fn the_simulated_host_state_is_the_probes_median() {
        let mut sc = Scenario::builtin(&[]).unwrap();
        assert_eq!(host_state(&mut sc, &[]), None);
        let hosts = [
            probe(Some(7 << 30), Some(9000)),
            probe(Some(6 << 30), Some(8800)),
            probe(Some(5 << 30), Some(12_000)),
        ];
        let note = host_state(&mut sc, &hosts).unwrap();
        assert_eq!(sc.machine.host_backed_free, Some(6 << 30));
        assert_eq!(sc.machine.cost.host_fault, 9000);
        assert!(note.contains("6144 MiB"), "{note}");
    }

    #[test]
    fn probes_that_found_everything_backed_simulate_no_faults() {
        let mut sc = Scenario::builtin(&[]).unwrap();
        let fault = sc.machine.cost.host_fault;
        host_state(&mut sc, &[probe(None, None), probe(None, None)]).unwrap();
        assert_eq!(sc.machine.host_backed_free, None);
        assert_eq!(sc.machine.cost.host_fault, fault);
        // one of three hit the end of the backed memory: the others count
        // as backed for all they touched
        host_state(
            &mut sc,
            &[
                probe(None, None),
                probe(Some(1 << 30), Some(9000)),
                probe(None, None),
            ],
        )
        .unwrap();
        assert_eq!(sc.machine.host_backed_free, Some(8 << 30));
        assert_eq!(sc.machine.cost.host_fault, 9000);
    }
}
