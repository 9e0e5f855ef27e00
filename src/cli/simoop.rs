//! `wbsim simoop`: run simoop's loop on this machine's kernel
//! (`crate::live::simoop`, the real side of the model in
//! src/workload/simoop.rs) and print simoop's lines.
//!
//! ```text
//! wbsim simoop [-t N -m MB -M MB -C N -T N -D N -f MB -R MB -W MB
//!               -r S -w S -i S -n N] DIR... [--json FILE] [--seed N]
//!               [--laid-out]
//! ```
//!
//! simoop's flags and directories are read by the model's own parser
//! (`SimoopArgs::parse`); wbsim's options may come anywhere among them.
//! `--laid-out` runs on the files an earlier run laid out (each
//! directory's `simoop.N`, checked for their size), as `wbsim live` does
//! once it has laid them out before its run starts.

use crate::live::simoop as live;
use crate::workload::simoop::SimoopArgs;
use std::io::Write;
use std::path::PathBuf;

pub const USAGE: &str = "usage: wbsim simoop [-t N] [-m MB] [-M MB] [-C N] [-T N] [-D N] [-f MB] [-R MB] [-W MB] [-r S] [-w S] [-i S] [-n N] DIR... [--json FILE] [--seed N] [--laid-out]";

/// `wbsim simoop`'s arguments: simoop's, and wbsim's own.
#[derive(Debug)]
pub struct Args {
    pub simoop: SimoopArgs,
    pub json: Option<PathBuf>,
    pub seed: u64,
    /// The files are there already (`--laid-out`): no layout.
    pub laid_out: bool,
}

/// Split the arguments into wbsim's options and simoop's flags, and parse
/// simoop's; `Ok(None)` for `--help`.
pub fn parse_args(args: &[String]) -> Result<Option<Args>, String> {
    let mut json = None;
    let mut seed = 1;
    let mut laid_out = false;
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = || -> Result<String, String> {
            if let Some(v) = &inline {
                return Ok(v.clone());
            }
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("`{flag}` needs a value"))
        };
        match flag {
            "--json" => json = Some(PathBuf::from(value()?)),
            "--seed" => {
                let v = value()?;
                seed = v
                    .parse()
                    .map_err(|_| format!("--seed {v}: expected an unsigned integer"))?;
            }
            "--laid-out" => laid_out = true,
            "-h" | "--help" => return Ok(None),
            f if f.starts_with("--") => return Err(format!("unknown option `{f}`")),
            _ if arg.chars().any(char::is_whitespace) => {
                return Err(format!("`{arg}`: a directory with spaces is not supported"))
            }
            _ => rest.push(arg.clone()),
        }
        i += 1;
    }
    let simoop = SimoopArgs::parse(&rest.join(" "))?;
    Ok(Some(Args {
        simoop,
        json,
        seed,
        laid_out,
    }))
}

/// `wbsim simoop ARGS`: the exit code (2 for bad arguments, 1 for a run
/// that failed).
pub fn main(args: &[String]) -> i32 {
    let a = match parse_args(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("wbsim: simoop: {}\n{USAGE}", super::term(&e));
            return 2;
        }
    };
    if let Err(e) = live::check_dirs(&a.simoop) {
        eprintln!("wbsim: simoop: {}", super::term(&e));
        return 2;
    }
    // a bad --json fails before the file set is written
    let json = match &a.json {
        Some(p) => match std::fs::File::create(p) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("wbsim: simoop: cannot write {}: {e}", super::shown(p));
                return 2;
            }
        },
        None => None,
    };
    let s = &a.simoop;
    if a.laid_out {
        let files = match live::laid_out(s) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("wbsim: simoop: --laid-out: {}", super::term(&e));
                return 2;
            }
        };
        return run_and_report(&a, &files, json);
    }
    eprintln!(
        "wbsim: simoop: laying out {} files of {} MB in {}",
        s.files_per_dir,
        s.file_mb,
        s.dirs.join(", ")
    );
    let t = std::time::Instant::now();
    let files = match live::lay_out(s) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("wbsim: simoop: laying out the files: {}", super::term(&e));
            return 1;
        }
    };
    eprintln!(
        "wbsim: simoop: laid out in {:.1} s; {} s of warm-up, then {} s",
        t.elapsed().as_secs_f64(),
        s.warmup_s,
        s.runtime_s
    );
    run_and_report(&a, &files, json)
}

/// Run simoop on the file set, then write `--json`'s summary.
fn run_and_report(a: &Args, files: &live::FileSet, json: Option<std::fs::File>) -> i32 {
    let mut out = std::io::stdout().lock();
    let o = match live::run_on(&a.simoop, files, a.seed, &mut out) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("wbsim: simoop: {}", super::term(&e));
            return 1;
        }
    };
    if let (Some(mut f), Some(p)) = (json, &a.json) {
        let text = serde_json::to_string_pretty(&o.summary).expect("a summary serializes");
        if let Err(e) = f.write_all(format!("{text}\n").as_bytes()) {
            eprintln!("wbsim: simoop: cannot write {}: {e}", super::shown(p));
            return 1;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn wbsims_options_go_anywhere_among_simoops() {
        let a = parse_args(&args("-t 2 --seed 7 -R1 /a --json=s.json /b"))
            .unwrap()
            .unwrap();
        assert_eq!(a.seed, 7);
        assert_eq!(a.json, Some(PathBuf::from("s.json")));
        assert_eq!((a.simoop.threads, a.simoop.read_mb), (2, 1));
        assert_eq!(a.simoop.dirs, vec!["/a", "/b"]);
        assert!(parse_args(&args("--help")).unwrap().is_none());
        let e = parse_args(&args("-x 1 /a")).unwrap_err();
        assert!(e.contains("`-x`"), "{e}");
        let e = parse_args(&args("--bogus /a")).unwrap_err();
        assert!(e.contains("unknown option `--bogus`"), "{e}");
        let e = parse_args(&args("/a --seed")).unwrap_err();
        assert!(e.contains("needs a value"), "{e}");
        let e = parse_args(&args("/a --seed x")).unwrap_err();
        assert!(e.contains("unsigned integer"), "{e}");
        let e = parse_args(&["/a b".to_string()]).unwrap_err();
        assert!(e.contains("spaces"), "{e}");
    }
}
