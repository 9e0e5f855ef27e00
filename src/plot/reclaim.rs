//! `wbsim plot`'s reclaim graphs, from the `reclaim.txt` a run writes once
//! kswapd was woken (mm/vmscan.rs `reclaim_sample`, one line per
//! `run.sample_interval`):
//!
//! - `reclaim-free`: free pages against the MIN, LOW and HIGH watermarks
//!   (summed over a movable allocation's zones): kswapd wakes at LOW and
//!   sleeps at HIGH; below MIN allocations stall;
//! - `reclaim-stalls`: the allocation stall rate (`allocstall_*` per
//!   second, what simoop's `alloc stall rate` reads) and the pages scanned
//!   per second by kswapd and by direct reclaim, in thousands;
//! - `reclaim-shrinker`: the shrinkers' objects scanned (`slabs_scanned`)
//!   and freed (dentries, VFS inodes and XFS inodes) per second.

use super::{render, Mark, Series};
use plotters::prelude::RGBColor;
use std::path::{Path, PathBuf};

/// One `reclaim.txt` line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    pub t: f64,
    pub free: f64,
    pub wmark: [f64; 3],
    /// Cumulative: allocstall, pgscan_kswapd, pgscan_direct,
    /// slabs_scanned, shrinker freed.
    pub counters: [f64; 5],
}

/// The lines of a `reclaim.txt`: `#` lines are skipped; any other line
/// must have its ten numbers, or the error names the file and line.
pub fn parse_samples(text: &str, file: &str) -> Result<Vec<Sample>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let v: Vec<f64> = line
            .split_whitespace()
            .map(|w| w.parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| {
                format!(
                    "{file}:{}: expected ten numbers (time_s nr_free_pages min low high allocstall pgscan_kswapd pgscan_direct slabs_scanned shrink_freed), got `{line}`",
                    i + 1
                )
            })?;
        if v.len() != 10 {
            return Err(format!(
                "{file}:{}: expected ten numbers, got {} in `{line}`",
                i + 1,
                v.len()
            ));
        }
        out.push(Sample {
            t: v[0],
            free: v[1],
            wmark: [v[2], v[3], v[4]],
            counters: [v[5], v[6], v[7], v[8], v[9]],
        });
    }
    Ok(out)
}

/// Counter `c`'s growth per second between consecutive samples (at the
/// later one's time), times `k`.
pub fn rate(s: &[Sample], c: usize, k: f64) -> Vec<(f64, f64)> {
    s.windows(2)
        .filter(|w| w[1].t > w[0].t)
        .map(|w| {
            let d = (w[1].counters[c] - w[0].counters[c]).max(0.0);
            (w[1].t, d / (w[1].t - w[0].t) * k)
        })
        .collect()
}

/// The three reclaim graphs of run directory `dir`; none without its
/// `reclaim.txt`.
pub fn plot_reclaim(dir: &Path, scenario: Option<&str>) -> Result<Vec<PathBuf>, String> {
    let path = dir.join("reclaim.txt");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(Vec::new());
    };
    let s = parse_samples(&text, &path.display().to_string())?;
    if s.len() < 2 {
        return Ok(Vec::new());
    }
    let xr = (s[0].t, s[s.len() - 1].t.max(s[0].t + 1e-6));
    let named = |what: &str| match scenario {
        Some(n) => format!("{n}: {what}"),
        None => what.to_string(),
    };
    let col = |f: fn(&Sample) -> f64| s.iter().map(|x| (x.t, f(x))).collect::<Vec<_>>();
    let mut out = Vec::new();
    let free: Vec<Series> = vec![
        (
            "free pages".into(),
            RGBColor(31, 119, 180),
            col(|x| x.free),
            Mark::Line,
        ),
        (
            "MIN".into(),
            RGBColor(214, 39, 40),
            col(|x| x.wmark[0]),
            Mark::Line,
        ),
        (
            "LOW".into(),
            RGBColor(255, 127, 14),
            col(|x| x.wmark[1]),
            Mark::Line,
        ),
        (
            "HIGH".into(),
            RGBColor(44, 160, 44),
            col(|x| x.wmark[2]),
            Mark::Line,
        ),
    ];
    out.extend(render(
        dir,
        "reclaim-free",
        &named("free memory against the watermarks"),
        "pages",
        &free,
        true,
        xr,
    )?);
    let stalls: Vec<Series> = vec![
        (
            "alloc stalls/s".into(),
            RGBColor(214, 39, 40),
            rate(&s, 0, 1.0),
            Mark::Line,
        ),
        (
            "pgscan_kswapd/s (k)".into(),
            RGBColor(44, 160, 44),
            rate(&s, 1, 1e-3),
            Mark::Dot(2),
        ),
        (
            "pgscan_direct/s (k)".into(),
            RGBColor(148, 103, 189),
            rate(&s, 2, 1e-3),
            Mark::Dot(2),
        ),
    ];
    out.extend(render(
        dir,
        "reclaim-stalls",
        &named("allocation stalls and pages scanned"),
        "per second",
        &stalls,
        true,
        xr,
    )?);
    let shrink: Vec<Series> = vec![
        (
            "scanned/s (slabs_scanned)".into(),
            RGBColor(31, 119, 180),
            rate(&s, 3, 1.0),
            Mark::Line,
        ),
        (
            "freed/s".into(),
            RGBColor(255, 127, 14),
            rate(&s, 4, 1.0),
            Mark::Line,
        ),
    ];
    out.extend(render(
        dir,
        "reclaim-shrinker",
        &named("shrinkers: objects scanned and freed"),
        "objects per second",
        &shrink,
        true,
        xr,
    )?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "# time_s nr_free_pages min low high allocstall pgscan_kswapd pgscan_direct slabs_scanned shrink_freed\n\
0.100 5000 1000 2000 3000 0 0 0 0 0\n\
0.200 1500 1000 2000 3000 4 1000 200 2048 300\n\
0.300 2500 1000 2000 3000 6 3000 200 2048 1300\n";

    #[test]
    fn samples_and_rates() {
        let s = parse_samples(RUN, "reclaim.txt").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].wmark, [1000.0, 2000.0, 3000.0]);
        let r = rate(&s, 0, 1.0);
        assert_eq!(r.len(), 2);
        assert!((r[0].1 - 40.0).abs() < 1e-6 && (r[1].1 - 20.0).abs() < 1e-6);
        let f = rate(&s, 4, 1.0);
        assert!((f[1].1 - 10000.0).abs() < 1e-6);
        let e = parse_samples("0.1 2 3\n", "r.txt").unwrap_err();
        assert!(e.starts_with("r.txt:1: expected ten numbers"), "{e}");
        let e = parse_samples("# h\n0.1 x 3 4 5 6 7 8 9 10\n", "r.txt").unwrap_err();
        assert!(e.starts_with("r.txt:2: "), "{e}");
    }

    #[test]
    fn draws_the_three_graphs() {
        let d = std::env::temp_dir().join(format!("wbsim-plot-reclaim-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        assert!(plot_reclaim(&d, None).unwrap().is_empty());
        std::fs::write(d.join("reclaim.txt"), RUN).unwrap();
        super::super::register();
        let files = plot_reclaim(&d, Some("t")).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for n in ["reclaim-free", "reclaim-stalls", "reclaim-shrinker"] {
            assert!(names.contains(&format!("{n}.png")), "{names:?}");
            assert!(names.contains(&format!("{n}.svg")), "{names:?}");
        }
        let svg = std::fs::read_to_string(d.join("reclaim-free.svg")).unwrap();
        assert!(svg.contains("HIGH") && svg.contains("free pages"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
