//! `wbsim sweep`: run a plan's points on every core and write
//! `results.csv`; `wbsim sweep merge` joins shards (src/sweep.rs has the
//! plan format).
//!
//! ```text
//! wbsim sweep PLAN.toml [--out DIR] [--jobs N] [--shard I/N | --index K] [--count] [-q]
//! wbsim sweep merge DIR... --out DIR
//! ```

use crate::sweep::{self, Plan, Point};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

pub const USAGE: &str = "usage: wbsim sweep PLAN.toml [--out DIR] [--jobs N] [--shard I/N | --index K] [--count] [-q]\n       wbsim sweep merge DIR... --out DIR";

#[derive(Debug, Default, PartialEq)]
struct Args {
    merge: bool,
    inputs: Vec<PathBuf>,
    out: Option<PathBuf>,
    jobs: Option<usize>,
    shard: Option<(usize, usize)>,
    index: Option<usize>,
    count: bool,
    quiet: bool,
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut a = Args::default();
    let mut i = 0;
    if args.first().map(String::as_str) == Some("merge") {
        a.merge = true;
        i = 1;
    }
    while i < args.len() {
        let arg = &args[i];
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let value = |i: &mut usize| -> Result<String, String> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            *i += 1;
            args.get(*i)
                .cloned()
                .ok_or_else(|| format!("`{flag}` needs a value"))
        };
        match flag {
            "--out" | "-o" => a.out = Some(PathBuf::from(value(&mut i)?)),
            "--jobs" | "-j" => {
                let v = value(&mut i)?;
                a.jobs = Some(
                    v.parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or(format!("--jobs {v}: expected a number of threads >= 1"))?,
                );
            }
            "--shard" => {
                let v = value(&mut i)?;
                let bad = || format!("--shard {v}: expected I/N with 0 <= I < N");
                let (x, n) = v.split_once('/').ok_or_else(bad)?;
                let (x, n): (usize, usize) =
                    (x.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
                if x >= n {
                    return Err(bad());
                }
                a.shard = Some((x, n));
            }
            "--index" => {
                let v = value(&mut i)?;
                a.index = Some(
                    v.parse()
                        .map_err(|_| format!("--index {v}: expected a point number from 0"))?,
                );
            }
            "--count" => a.count = true,
            "--quiet" | "-q" => a.quiet = true,
            f if f.starts_with('-') && f.len() > 1 => {
                return Err(format!("unknown option `{f}`\n{USAGE}"))
            }
            _ => a.inputs.push(PathBuf::from(arg)),
        }
        i += 1;
    }
    if a.merge {
        if a.inputs.is_empty() || a.out.is_none() {
            return Err(format!(
                "merge needs the shards' directories and --out\n{USAGE}"
            ));
        }
    } else if a.inputs.len() != 1 {
        return Err(format!("expected one plan file\n{USAGE}"));
    }
    if a.shard.is_some() && a.index.is_some() {
        return Err("--shard and --index choose points two ways; give one".into());
    }
    Ok(a)
}

fn write_results(out: &std::path::Path, dirs: &[PathBuf]) -> Result<usize, String> {
    let done = sweep::done_points(dirs)?;
    let csv = sweep::results_csv(&done)?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let f = out.join("results.csv");
    std::fs::write(&f, csv).map_err(|e| format!("{}: {e}", f.display()))?;
    Ok(done.len())
}

pub fn main(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "--help" || a == "-h") || args.is_empty() {
        println!("{USAGE}\n\nThe plan's format: docs/sweep.md.");
        return if args.is_empty() { 2 } else { 0 };
    }
    let a = match parse_args(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("wbsim sweep: {e}");
            return 2;
        }
    };
    if a.merge {
        let out = a.out.expect("checked");
        return match write_results(&out, &a.inputs) {
            Ok(n) => {
                if !a.quiet {
                    eprintln!(
                        "wbsim sweep: {n} points in {}",
                        out.join("results.csv").display()
                    );
                }
                0
            }
            Err(e) => {
                eprintln!("wbsim sweep: error: {e}");
                2
            }
        };
    }
    let plan = match Plan::load(&a.inputs[0]) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("wbsim sweep: error: {}", super::term(&e));
            return 2;
        }
    };
    let all = plan.points();
    if a.count {
        println!("{}", all.len());
        return 0;
    }
    let chosen: Vec<Point> = match (a.index, a.shard) {
        (Some(k), _) => match all.get(k) {
            Some(p) => vec![p.clone()],
            None => {
                eprintln!(
                    "wbsim sweep: error: --index {k}: the plan has points 0 to {}",
                    all.len() - 1
                );
                return 2;
            }
        },
        (None, Some((x, n))) => all.iter().filter(|p| p.index % n == x).cloned().collect(),
        (None, None) => all.clone(),
    };
    // every chosen point's scenario loads before anything runs
    for p in &chosen {
        if let Err(e) = p.load(&plan) {
            let what: Vec<String> = p.settings.iter().map(|(k, v)| format!("{k}={v}")).collect();
            eprintln!(
                "wbsim sweep: error: point {} ({}, seed {}): {}",
                p.index,
                what.join(" "),
                p.seed,
                super::term(&e)
            );
            return 2;
        }
    }
    let out = a.out.unwrap_or_else(|| PathBuf::from("wbsim-sweep"));
    if let Err(e) = super::writable_dir(&out) {
        eprintln!("wbsim sweep: error: cannot write to {}: {e}", out.display());
        return 2;
    }
    let todo: Vec<&Point> = chosen.iter().filter(|p| !sweep::is_done(&out, p)).collect();
    let skipped = chosen.len() - todo.len();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(a.jobs.unwrap_or(0))
        .build()
        .expect("a thread pool");
    let tty = std::io::stderr().is_terminal() && !a.quiet;
    let bar = if tty {
        let b = indicatif::ProgressBar::new(todo.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} points  {per_sec}  ETA {eta}",
            )
            .expect("template"),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    if !a.quiet {
        eprintln!(
            "wbsim sweep: {} points to run ({skipped} already done) on {} threads, into {}",
            todo.len(),
            pool.current_num_threads(),
            out.display()
        );
    }
    let t0 = Instant::now();
    let done = AtomicUsize::new(0);
    let errors = Mutex::new(Vec::new());
    pool.install(|| {
        use rayon::prelude::*;
        todo.par_iter().for_each(|p| {
            if let Err(e) = sweep::run_point(&plan, p, &out) {
                errors
                    .lock()
                    .expect("lock")
                    .push(format!("point {}: {e}", p.index));
            }
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            bar.inc(1);
            if !tty && !a.quiet {
                let el = t0.elapsed().as_secs_f64();
                let rate = n as f64 / el.max(1e-9);
                let eta = (todo.len() - n) as f64 / rate.max(1e-9);
                eprintln!(
                    "[wbsim sweep] {n}/{} points, {rate:.2}/s, ETA {eta:.0} s",
                    todo.len()
                );
            }
        });
    });
    bar.finish_and_clear();
    let mut errors = errors.into_inner().expect("lock");
    errors.sort();
    for e in &errors {
        eprintln!("wbsim sweep: error: {e}");
    }
    match write_results(&out, std::slice::from_ref(&out)) {
        Ok(n) => {
            if !a.quiet {
                eprintln!(
                    "wbsim sweep: {} points run in {:.1} s; {n} rows in {}",
                    todo.len(),
                    t0.elapsed().as_secs_f64(),
                    out.join("results.csv").display()
                );
            }
        }
        Err(e) => {
            eprintln!("wbsim sweep: error: {e}");
            return 1;
        }
    }
    if errors.is_empty() {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Result<Args, String> {
        parse_args(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn arguments() {
        let a = p(&["plan.toml", "--out=o", "-j", "2", "--shard", "1/4"]).unwrap();
        assert_eq!(a.inputs, [PathBuf::from("plan.toml")]);
        assert_eq!((a.jobs, a.shard), (Some(2), Some((1, 4))));
        assert!(p(&["plan.toml", "--shard", "4/4"]).is_err());
        assert!(p(&["plan.toml", "--shard", "0/2", "--index", "3"]).is_err());
        assert!(p(&["a.toml", "b.toml"]).is_err());
        assert!(p(&["plan.toml", "--bogus"])
            .unwrap_err()
            .contains("unknown option"));
        let m = p(&["merge", "a", "b", "--out", "c"]).unwrap();
        assert!(m.merge && m.inputs.len() == 2);
        assert!(p(&["merge", "a"]).is_err());
    }
}
