//! `wbsim fio`: run fio job files (or fio's command-line jobs) on a
//! simulated machine and print what fio would have printed.
//!
//! ```text
//! wbsim fio [JOBFILE...] [--name=JOB --OPTION=VALUE ...] [--section NAME]
//!           [--output-format=normal|json] [--output FILE]
//!           [--scenario S] [--filesystem NAME] [--set PATH=VALUE] [--seed N]
//!           [--out DIR] [--parse-only] [--live]
//! ```
//!
//! The machine, devices and filesystems come from `--scenario` (default:
//! the built-in machine); the scenario's own jobs are replaced by the fio
//! jobs. Arguments are read as fio reads its own: a `--OPTION=VALUE` that is
//! not one of wbsim's is a job option, anything else a job file.

use crate::scenario::{Scenario, ScenarioError};
use crate::sim::NSEC_PER_SEC;
use crate::workload::fio::{parse, scenario as fsc, FioJob};
use std::path::PathBuf;

/// `wbsim fio`'s own options, the rest of its arguments being fio's.
#[derive(Debug, Default)]
pub struct FioArgs {
    pub files: Vec<String>,
    pub job_args: Vec<String>,
    pub sections: Vec<String>,
    pub json: bool,
    pub output: Option<PathBuf>,
    pub scenario: Option<String>,
    pub filesystem: Option<String>,
    pub sets: Vec<String>,
    pub seed: Option<u64>,
    pub out: Option<PathBuf>,
    pub parse_only: bool,
    pub live: bool,
}

pub const USAGE: &str = "usage: wbsim fio [JOBFILE...] [--name=JOB --OPTION=VALUE ...] [--section NAME] [--output-format=normal|json] [--output FILE] [--scenario S] [--filesystem NAME] [--set PATH=VALUE] [--seed N] [--out DIR] [--parse-only] [--live]";

/// Split `wbsim fio`'s arguments into its own options and fio's.
pub fn parse_args(args: &[String]) -> Result<FioArgs, String> {
    let mut a = FioArgs::default();
    let mut i = 0;
    // `--opt=value` or `--opt value`, for wbsim's own options
    let value = |i: &mut usize, flag: &str, inline: Option<&str>| -> Result<String, String> {
        if let Some(v) = inline {
            return Ok(v.to_string());
        }
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| format!("`{flag}` needs a value"))
    };
    while i < args.len() {
        let arg = &args[i];
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (arg.as_str(), None),
        };
        match flag {
            "--section" => a.sections.push(value(&mut i, flag, inline)?),
            "--output-format" => match value(&mut i, flag, inline)?.as_str() {
                "json" => a.json = true,
                "normal" => a.json = false,
                f => {
                    return Err(format!(
                        "--output-format={f} is not supported; expected normal or json"
                    ))
                }
            },
            "--output" => a.output = Some(value(&mut i, flag, inline)?.into()),
            "--scenario" => a.scenario = Some(value(&mut i, flag, inline)?),
            "--filesystem" => a.filesystem = Some(value(&mut i, flag, inline)?),
            "--set" => a.sets.push(value(&mut i, flag, inline)?),
            "--seed" => {
                let v = value(&mut i, flag, inline)?;
                a.seed = Some(
                    v.parse()
                        .map_err(|_| format!("--seed={v}: expected an unsigned integer"))?,
                );
            }
            "--out" => a.out = Some(value(&mut i, flag, inline)?.into()),
            "--parse-only" => a.parse_only = true,
            "--live" => a.live = true,
            "-h" | "--help" => return Err(USAGE.into()),
            f if f.starts_with("--") => a.job_args.push(arg.clone()),
            f if f.starts_with('-') => {
                return Err(format!("unknown option `{f}`; {USAGE}"));
            }
            _ => a.files.push(arg.clone()),
        }
        i += 1;
    }
    if a.files.is_empty() && a.job_args.is_empty() {
        return Err(format!("no job file and no --name=JOB; {USAGE}"));
    }
    Ok(a)
}

/// The fio jobs of `a` (its files, then its command-line jobs), for the
/// machine of `sc`.
pub fn read_jobs(a: &FioArgs, sc: &Scenario) -> Result<Vec<FioJob>, String> {
    let m = fsc::machine_vars(&sc.machine);
    let mut jobs = Vec::new();
    for f in &a.files {
        jobs.extend(
            parse::parse_job_file(std::path::Path::new(f), &fsc::env_lookup, &m)
                .map_err(|e| e.to_string())?,
        );
    }
    if !a.job_args.is_empty() {
        jobs.extend(parse::parse_cmdline(&a.job_args, &m).map_err(|e| e.to_string())?);
    }
    if !a.sections.is_empty() {
        jobs = parse::select_sections(jobs, &a.sections).map_err(|e| e.to_string())?;
    }
    if jobs.is_empty() {
        return Err("the job file defines no job".into());
    }
    Ok(jobs)
}

/// How long to simulate: to the end of the longest time-bounded job, or
/// `run.duration` when a job is bounded by its size only (the run ends
/// early once every fio job is done).
pub fn run_length(jobs: &[FioJob]) -> Option<crate::sim::Ns> {
    let mut end = 0;
    for j in jobs {
        let rt = j.runtime?;
        end = end.max(j.startdelay + j.ramp_time + rt);
    }
    // a second past the end: the jobs' final IOs and fio's own exit
    Some(end + NSEC_PER_SEC)
}

/// The scenario `wbsim fio` runs: the machine of `--scenario` (or the
/// built-in one) with the fio jobs in place of its jobs.
pub fn build_scenario(a: &FioArgs) -> Result<(Scenario, Vec<FioJob>), String> {
    let mut sets = a.sets.clone();
    if let Some(seed) = a.seed {
        sets.push(format!("run.seed={seed}"));
    }
    let e = |e: ScenarioError| e.to_string();
    let mut sc = match &a.scenario {
        Some(p) => Scenario::load_file(p, &sets).map_err(e)?,
        None => Scenario::builtin(&sets).map_err(e)?,
    };
    let jobs = read_jobs(a, &sc)?;
    fsc::check_jobs(&jobs, &sc.devices, &sc.filesystems)?;
    let fs = match &a.filesystem {
        Some(n) => sc
            .filesystems
            .iter()
            .position(|f| &f.name == n)
            .ok_or_else(|| {
                format!(
                    "--filesystem {n}: no such filesystem; the scenario has {}",
                    sc.filesystems
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?,
        None => 0,
    };
    if !a.sets.iter().any(|s| s.starts_with("run.duration=")) {
        if let Some(d) = run_length(&jobs) {
            sc.run.duration = d;
        }
    }
    if !a.sets.iter().any(|s| s.starts_with("run.warmup=")) {
        sc.run.warmup = 0;
    }
    sc.jobs = fsc::scenario_jobs(jobs.clone(), fs, 0, None, &sc.cgroups)
        .expect("no error without a given cgroup");
    Ok((sc, jobs))
}

/// `wbsim fio ARGS`: the exit code.
pub fn main(args: &[String]) -> i32 {
    let a = match parse_args(args) {
        Ok(a) => a,
        Err(e) if e == USAGE => {
            println!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("wbsim fio: error: {e}");
            return 2;
        }
    };
    let (sc, jobs) = match build_scenario(&a) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("wbsim fio: error: {e}");
            return 2;
        }
    };
    if a.parse_only {
        for j in &jobs {
            println!(
                "{}: job `{}`: rw={:?} numjobs={} ioengine={}",
                j.origin,
                j.name,
                j.rw,
                j.numjobs,
                j.ioengine.name()
            );
        }
        return 0;
    }
    run(&a, &sc)
}

/// Simulate (or, with `--live`, run on this kernel) and print fio's
/// output; with `--out DIR`, write the run's outputs there too.
fn run(a: &FioArgs, sc: &Scenario) -> i32 {
    // fio writes its logs in the current directory; wbsim in --out's
    let log_dir = a.out.clone().unwrap_or_else(|| PathBuf::from("."));
    if let Err(e) = std::fs::create_dir_all(&log_dir) {
        eprintln!(
            "wbsim fio: error: cannot write to {}: {e}",
            log_dir.display()
        );
        return 2;
    }
    let r = if a.live {
        match crate::cli::live_once(sc, true, false).map(|(r, _)| r) {
            Ok(r) => r,
            Err(code) => return code,
        }
    } else {
        // with --out, the trace streams into it as `wbsim run`'s does (made
        // above, before the run), never held in memory
        let opts = crate::output::SimOpts {
            trace: a.out.is_some(),
            trace_dir: a.out.clone(),
            fio_log_dir: Some(log_dir.clone()),
            end_when_fio_done: !a.sets.iter().any(|s| s.starts_with("run.duration=")),
            ..Default::default()
        };
        match crate::cli::simulate_with_progress(sc, &opts, true) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("wbsim fio: error: {e}");
                return 1;
            }
        }
    };
    let file = |n: &str| {
        r.extra_files
            .iter()
            .find(|(f, _)| f == n)
            .map(|(_, b)| b.clone())
            .unwrap_or_default()
    };
    // a live run keeps fio's own JSON only
    let text = if a.json || a.live {
        file("fio.json")
    } else {
        file("fio.txt")
    };
    if a.live && !a.json {
        eprintln!("wbsim fio: --live prints fio's JSON (its normal output is not kept)");
    }
    match &a.output {
        Some(p) => {
            if let Err(e) = std::fs::write(p, &text) {
                eprintln!("wbsim fio: error: cannot write {}: {e}", p.display());
                return 2;
            }
        }
        None => {
            use std::io::Write;
            let _ = std::io::stdout().write_all(&text);
        }
    }
    if let Some(out) = &a.out {
        if let Err(e) = crate::output::write_outputs(out, &r) {
            eprintln!("wbsim fio: error: cannot write to {}: {e}", out.display());
            return 2;
        }
    } else if a.live {
        // the logs a live fio wrote
        for (n, b) in r.extra_files.iter().filter(|(n, _)| n.ends_with(".log")) {
            if let Err(e) = std::fs::write(log_dir.join(n), b) {
                eprintln!("wbsim fio: error: cannot write {n}: {e}");
                return 2;
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn wbsim_options_and_fio_options_are_told_apart() {
        let a = parse_args(&s(&[
            "job.fio",
            "--section",
            "w",
            "--output-format=json",
            "--set",
            "vm.dirty_bytes=100M",
            "--name=x",
            "--rw=write",
            "--seed=3",
        ]))
        .unwrap();
        assert_eq!(a.files, s(&["job.fio"]));
        assert_eq!(a.sections, s(&["w"]));
        assert!(a.json);
        assert_eq!(a.sets, s(&["vm.dirty_bytes=100M"]));
        assert_eq!(a.job_args, s(&["--name=x", "--rw=write"]));
        assert_eq!(a.seed, Some(3));
    }

    #[test]
    fn bad_arguments_are_refused() {
        assert!(parse_args(&s(&[])).is_err());
        assert!(parse_args(&s(&["--output-format=terse", "a.fio"]))
            .unwrap_err()
            .contains("normal or json"));
        assert!(parse_args(&s(&["a.fio", "--section"]))
            .unwrap_err()
            .contains("needs a value"));
        assert!(parse_args(&s(&["-x", "a.fio"])).is_err());
    }
}
