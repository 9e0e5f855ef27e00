//! `pressure.txt`: `/proc/pressure/memory` and `/proc/pressure/io` read
//! each `run.sample_interval`, by the simulator (kernel/psi.rs) or, in
//! live mode, from the kernel. Each line is the time in seconds, the
//! resource, then the file's line as `psi_show` prints it:
//!
//! ```text
//! 2.100000 memory some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! 2.100000 memory full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//! 2.100000 io some avg10=18.11 avg60=3.28 avg300=0.70 total=401234
//! 2.100000 io full avg10=9.02 avg60=1.64 avg300=0.35 total=200101
//! ```
//!
//! summary.json's `pressure` is read back from those lines, so that a
//! simulated and a live run give it the same way.

use crate::sim::{Ns, NSEC_PER_SEC};
use serde::{Deserialize, Serialize};

/// Append `text`, a pressure file's lines (`some ...`, `full ...`), each
/// prefixed with the time `now` in seconds and `resource`.
pub fn push_lines(out: &mut String, now: Ns, resource: &str, text: &str) {
    use std::fmt::Write as _;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let _ = writeln!(
            out,
            "{}.{:06} {resource} {}",
            now / NSEC_PER_SEC,
            now % NSEC_PER_SEC / 1000,
            line.trim_end()
        );
    }
}

/// One line of a pressure file: its averages (percent) and its total (µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    pub total_us: u64,
}

/// Parse a pressure line's fields after its kind: `avg10=A avg60=B
/// avg300=C total=N`.
fn parse_fields<'a>(fields: impl Iterator<Item = &'a str>) -> Option<PsiLine> {
    let mut l = PsiLine::default();
    let mut seen = 0;
    for f in fields {
        let (k, v) = f.split_once('=')?;
        match k {
            "avg10" => l.avg10 = v.parse().ok()?,
            "avg60" => l.avg60 = v.parse().ok()?,
            "avg300" => l.avg300 = v.parse().ok()?,
            "total" => l.total_us = v.parse().ok()?,
            _ => continue,
        }
        seen += 1;
    }
    (seen == 4).then_some(l)
}

/// A resource's SOME and FULL figures in summary.json: the averages at
/// the end of the run, the stall time over the run (from the first read)
/// and over the window (from the first read at or after the warmup), in
/// µs, and the window's as a percentage of its length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiFigures {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    pub run_us: u64,
    pub window_us: u64,
    pub window_pct: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PsiResource {
    pub some: PsiFigures,
    pub full: PsiFigures,
}

/// summary.json's `pressure`: memory and IO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PressureSummary {
    pub memory: PsiResource,
    pub io: PsiResource,
}

/// The readings summary.json's `pressure` is made of, per (resource,
/// kind): the first, the first at or after the window's start, and the
/// last, each with its time (s).
#[derive(Clone, Copy, Debug, Default)]
pub struct Readings {
    seen: [Option<Seen>; 4],
}

#[derive(Clone, Copy, Debug)]
struct Seen {
    first: PsiLine,
    window: Option<(f64, PsiLine)>,
    last: (f64, PsiLine),
}

/// The index of a (resource, kind) pair in `Readings`.
pub fn slot(res: &str, kind: &str) -> Option<usize> {
    let r = match res {
        "memory" => 0,
        "io" => 2,
        _ => return None,
    };
    match kind {
        "some" => Some(r),
        "full" => Some(r + 1),
        _ => None,
    }
}

impl Readings {
    /// Reading `l` of slot `i` at `t` s; `w0` is the window's start (s).
    pub fn add(&mut self, i: usize, t: f64, l: PsiLine, w0: f64) {
        let e = self.seen[i].get_or_insert(Seen {
            first: l,
            window: None,
            last: (t, l),
        });
        // a reading at the window's start, to a microsecond
        if e.window.is_none() && t + 5e-7 >= w0 {
            e.window = Some((t, l));
        }
        e.last = (t, l);
    }

    /// summary.json's `pressure`; None without a reading.
    pub fn summary(&self) -> Option<PressureSummary> {
        if self.seen.iter().all(Option::is_none) {
            return None;
        }
        let fig = |i: usize| -> PsiFigures {
            let Some(Seen {
                first,
                window,
                last: (t1, last),
            }) = self.seen[i]
            else {
                return PsiFigures::default();
            };
            let (t0, w) = window.unwrap_or((t1, last));
            let window_us = last.total_us.saturating_sub(w.total_us);
            let len_us = (t1 - t0) * 1e6;
            PsiFigures {
                avg10: last.avg10,
                avg60: last.avg60,
                avg300: last.avg300,
                run_us: last.total_us.saturating_sub(first.total_us),
                window_us,
                window_pct: if len_us > 0.0 {
                    super::r3(window_us as f64 * 100.0 / len_us)
                } else {
                    0.0
                },
            }
        };
        let res = |r: usize| PsiResource {
            some: fig(r),
            full: fig(r + 1),
        };
        Some(PressureSummary {
            memory: res(0),
            io: res(2),
        })
    }
}

/// summary.json's `pressure` from `pressure.txt`'s text (live mode);
/// `warmup` is the window's start. None when the text holds no reading.
pub fn summarize(text: &str, warmup: Ns) -> Option<PressureSummary> {
    let mut r = Readings::default();
    let w0 = warmup as f64 / NSEC_PER_SEC as f64;
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(t), Some(res), Some(kind)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let (Ok(t), Some(i)) = (t.parse::<f64>(), slot(res, kind)) else {
            continue;
        };
        if let Some(l) = parse_fields(f) {
            r.add(i, t, l, w0);
        }
    }
    r.summary()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_the_time_and_the_resource_before_the_kernels_text() {
        let mut out = String::new();
        // /proc/pressure/memory as a kernel prints it
        let k = "some avg10=1.50 avg60=0.25 avg300=0.05 total=12345\n\
                 full avg10=0.00 avg60=0.00 avg300=0.00 total=67\n";
        push_lines(&mut out, 2_500_000_000, "memory", k);
        assert_eq!(
            out,
            "2.500000 memory some avg10=1.50 avg60=0.25 avg300=0.05 total=12345\n\
             2.500000 memory full avg10=0.00 avg60=0.00 avg300=0.00 total=67\n"
        );
    }

    #[test]
    fn the_summary_reads_the_run_and_the_window_back() {
        let mut t = String::new();
        let line = |some: u64, full: u64, a: &str| {
            format!(
                "some avg10={a} avg60=0.00 avg300=0.00 total={some}\n\
                 full avg10=0.00 avg60=0.00 avg300=0.00 total={full}\n"
            )
        };
        // a live machine's totals do not start at 0
        push_lines(&mut t, 0, "io", &line(1_000, 10, "0.00"));
        push_lines(&mut t, 1_000_000_000, "io", &line(201_000, 10, "9.00"));
        push_lines(
            &mut t,
            3_000_000_000,
            "io",
            &line(601_000, 100_010, "18.11"),
        );
        push_lines(&mut t, 3_000_000_000, "memory", &line(0, 0, "0.00"));
        let s = summarize(&t, 1_000_000_000).unwrap();
        assert_eq!(s.io.some.run_us, 600_000);
        assert_eq!(s.io.some.window_us, 400_000);
        assert_eq!(s.io.some.window_pct, 20.0);
        assert_eq!(s.io.some.avg10, 18.11);
        assert_eq!(s.io.full.window_us, 100_000);
        assert_eq!(s.io.full.window_pct, 5.0);
        assert_eq!(s.memory.some, PsiFigures::default());
        assert_eq!(summarize("", 0), None);
        // lines that are not readings are skipped, not fatal
        assert_eq!(summarize("# header\nx y z\n", 0), None);
    }
}
