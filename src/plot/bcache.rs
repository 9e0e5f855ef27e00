//! `wbsim plot`'s bcache graphs: the writeback-rate controller's trajectory
//! (drivers/md/bcache/writeback.c's `__update_writeback_rate`) from the
//! sysfs samples a run writes to `bcache-NAME.txt`, or the guest rig's
//! `bcache-samples.txt` (the same `S t=… | writeback_rate_debug` lines).
//!
//! Per device, three graphs:
//! - `bcache-NAME-dirty`: `dirty_data` against the controller's target;
//! - `bcache-NAME-rate`: the writeback rate (a line), the proportional
//!   term (dots), the integral term, and what the proportional term would be without the
//!   fragmentation term ((dirty − target) / `writeback_rate_p_term_inverse`,
//!   40 by default): where the proportional line runs above it, the 5.12
//!   fragmentation term set it. Terms below zero are drawn at zero; samples
//!   at the idle maximum rate (INT_MAX sectors/s) are dots at the top;
//! - `bcache-NAME-buckets`: `in_use` and `cache_available_percent` against
//!   the cutoffs (`cutoff_writeback` 40, `cutoff_writeback_sync` 70) and the
//!   fragmentation term's thresholds (50, 57, 64), all in percent, so that
//!   a run that reaches the sync cutoff shows it at a glance.

use super::{render, Mark, Series};
use plotters::prelude::RGBColor;
use std::path::{Path, PathBuf};

/// One sample line, in MiB (and MiB/s) and percent.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    pub t: f64,
    pub dirty_data: f64,
    pub rate: f64,
    pub in_use: f64,
    pub avail: f64,
    pub target: f64,
    pub proportional: f64,
    pub integral: f64,
}

/// `bch_hprint` read back, in MiB: "4.0k" is 4 KiB, "1.5G" 1536 MiB.
fn hvalue(v: &str) -> Option<f64> {
    let v = v.trim_end_matches("/sec");
    let u = v.chars().last()?;
    let n: f64 = v[..v.len() - u.len_utf8()].parse().ok()?;
    let k = match u {
        'k' => 1.0 / 1024.0,
        'M' => 1.0,
        'G' => 1024.0,
        'T' => 1024.0 * 1024.0,
        'P' => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    Some(n * k)
}

/// The value after `key` (up to the next blank) in `line`.
fn after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let i = line.find(key)? + key.len();
    line[i..].split_whitespace().next()
}

/// The `S t=…` lines of a bcache samples file. A line that is not a sample
/// is skipped; a sample line missing a field is an error naming its line.
pub fn parse_samples(text: &str, file: &str) -> Result<Vec<Sample>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if !line.starts_with("S t=") {
            continue;
        }
        let bad = |what: &str| {
            format!(
                "{file}:{}: a bcache sample without a readable {what} (expected `S t=SECONDS dirty_data=… writeback_rate=… cache_avail_pct=… | rate: … dirty: … target: … proportional: … integral: …`)",
                n + 1
            )
        };
        let (head, dbg) = line.split_once('|').ok_or_else(|| bad("`|`"))?;
        let num = |k: &str| after(head, k).and_then(|v| v.parse::<f64>().ok());
        let hv = |s: &str, k: &str| after(s, k).and_then(hvalue);
        let avail = num("cache_avail_pct=").ok_or_else(|| bad("cache_avail_pct"))?;
        out.push(Sample {
            t: num("S t=").ok_or_else(|| bad("t"))?,
            dirty_data: hv(head, "dirty_data=").ok_or_else(|| bad("dirty_data"))?,
            rate: hv(dbg, "rate:").ok_or_else(|| bad("rate"))?,
            // the rig's lines have no in_use: 100 − cache_available_percent
            in_use: num("in_use=").unwrap_or(100.0 - avail),
            avail,
            target: hv(dbg, "target:").ok_or_else(|| bad("target"))?,
            proportional: hv(dbg, "proportional:").ok_or_else(|| bad("proportional"))?,
            integral: hv(dbg, "integral:").ok_or_else(|| bad("integral"))?,
        });
    }
    Ok(out)
}

/// The idle maximum rate prints as 0.9T/sec; anything from 1 GiB/s on is
/// taken for it.
pub(crate) const MAX_RATE_MIB: f64 = 1024.0;

/// The graphs of one device's samples `s`, named after `name`.
fn plot_device(dir: &Path, name: &str, s: &[Sample]) -> Result<Vec<PathBuf>, String> {
    let x0 = s.first().map(|x| x.t).unwrap_or(0.0);
    let x1 = s.last().map(|x| x.t).unwrap_or(1.0).max(x0 + 1.0);
    let xr = (x0, x1);
    let pts = |f: &dyn Fn(&Sample) -> Option<f64>| -> Vec<(f64, f64)> {
        s.iter().filter_map(|x| f(x).map(|v| (x.t, v))).collect()
    };
    let mut out = Vec::new();

    // 1. dirty data and the target
    let dirty: Vec<Series> = vec![
        (
            "dirty_data".into(),
            RGBColor(214, 39, 40),
            pts(&|x| Some(x.dirty_data)),
            Mark::Line,
        ),
        (
            "target".into(),
            RGBColor(44, 160, 44),
            pts(&|x| (x.target > 0.0).then_some(x.target)),
            Mark::Line,
        ),
    ];
    out.extend(render(
        dir,
        &format!("bcache-{name}-dirty"),
        &format!("bcache {name}: dirty data and the controller's target"),
        "MiB",
        &dirty,
        true,
        xr,
    )?);

    // 2. the rate and the controller's terms
    let controlled = |x: &Sample| x.rate < MAX_RATE_MIB;
    let top = s
        .iter()
        .filter(|x| controlled(x))
        .flat_map(|x| [x.rate, x.proportional, x.integral])
        .fold(0.0f64, f64::max);
    let top = if top > 0.0 { top } else { 1.0 };
    let rate: Vec<Series> = vec![
        (
            "proportional".into(),
            RGBColor(255, 127, 14),
            pts(&|x| controlled(x).then_some(x.proportional.max(0.0))),
            Mark::Dot(3),
        ),
        (
            "(dirty - target)/40: P without fragment".into(),
            RGBColor(140, 86, 75),
            pts(&|x| {
                (controlled(x) && x.target > 0.0)
                    .then_some(((x.dirty_data - x.target) / 40.0).max(0.0))
            }),
            Mark::Dot(2),
        ),
        (
            "integral".into(),
            RGBColor(148, 103, 189),
            pts(&|x| controlled(x).then_some(x.integral.max(0.0))),
            Mark::Line,
        ),
        (
            "idle: maximum rate".into(),
            RGBColor(23, 190, 207),
            pts(&|x| (!controlled(x)).then_some(top)),
            Mark::Dot(3),
        ),
        // last, over the terms it is the sum of
        (
            "writeback rate".into(),
            RGBColor(31, 119, 180),
            pts(&|x| controlled(x).then_some(x.rate)),
            Mark::Line,
        ),
    ];
    out.extend(render(
        dir,
        &format!("bcache-{name}-rate"),
        &format!("bcache {name}: writeback rate and the controller's terms"),
        "MiB/s",
        &rate,
        true,
        xr,
    )?);

    // 3. buckets in use against the cutoffs
    let flat = |v: f64| vec![(x0, v), (x1, v)];
    let buckets: Vec<Series> = vec![
        (
            "in_use".into(),
            RGBColor(214, 39, 40),
            pts(&|x| Some(x.in_use)),
            Mark::Line,
        ),
        (
            "cache_available_percent".into(),
            RGBColor(31, 119, 180),
            pts(&|x| Some(x.avail)),
            Mark::Line,
        ),
        (
            "cutoff_writeback_sync (70)".into(),
            RGBColor(0, 0, 0),
            flat(70.0),
            Mark::Line,
        ),
        (
            "cutoff_writeback (40)".into(),
            RGBColor(127, 127, 127),
            flat(40.0),
            Mark::Line,
        ),
        (
            "fragment low (50)".into(),
            RGBColor(188, 189, 34),
            flat(50.0),
            Mark::Line,
        ),
        (
            "fragment mid (57)".into(),
            RGBColor(255, 160, 60),
            flat(57.0),
            Mark::Line,
        ),
        (
            "fragment high (64)".into(),
            RGBColor(227, 119, 194),
            flat(64.0),
            Mark::Line,
        ),
    ];
    out.extend(render(
        dir,
        &format!("bcache-{name}-buckets"),
        &format!("bcache {name}: buckets in use and the cutoffs"),
        "percent",
        &buckets,
        true,
        xr,
    )?);
    Ok(out)
}

/// The bcache sample files in `dir`, by device name: a run's
/// `bcache-NAME.txt`, or the guest rig's `bcache-samples.txt` (named
/// `rig`). Sorted by name.
pub(crate) fn sample_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return v;
    };
    for e in rd.flatten() {
        let f = e.file_name().to_string_lossy().to_string();
        if f == "bcache-samples.txt" {
            v.push(("rig".to_string(), e.path()));
        } else if let Some(n) = f
            .strip_prefix("bcache-")
            .and_then(|x| x.strip_suffix(".txt"))
        {
            v.push((n.to_string(), e.path()));
        }
    }
    v.sort();
    v
}

/// Plot every bcache device's samples in `dir`. Returns the files written
/// (none without samples).
pub fn plot_bcache(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    for (name, path) in sample_files(dir) {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let s = parse_samples(&text, &path.display().to_string())?;
        if s.is_empty() {
            continue;
        }
        out.extend(plot_device(dir, &name, &s)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "S t=0.0 dirty_data=0.0k writeback_rate=512.0k cache_avail_pct=100 state=clean in_use=0 | rate: 512.0k/sec dirty: 0.0k target: 0.0k proportional: 0.0k integral: 0.0k change: 0.0k/sec next io: 0ms \n\
S t=10.0 dirty_data=6.3M writeback_rate=4.0k cache_avail_pct=98 state=dirty in_use=2 | rate: 4.0k/sec dirty: 6.3M target: 409.5M proportional: -10.1M integral: 0.0k change: -508.0k/sec next io: -10000ms \n\
S t=20.0 dirty_data=300.0M writeback_rate=1.5M cache_avail_pct=29 state=dirty in_use=71 | rate: 1.5M/sec dirty: 300.0M target: 409.5M proportional: 1.4M integral: 0.0k change: 1.5M/sec next io: 3ms \n\
S t=30.0 dirty_data=90.0M writeback_rate=0.9T cache_avail_pct=60 state=dirty in_use=40 | rate: 0.9T/sec dirty: 90.0M target: 409.5M proportional: 0.0k integral: 0.0k change: 0.0k/sec next io: 0ms \n\
== final\n";

    #[test]
    fn samples_read_back_as_sysfs_printed_them() {
        let s = parse_samples(RUN, "bcache-bc0.txt").unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!(s[1].t, 10.0);
        assert_eq!(s[1].rate, 4.0 / 1024.0);
        assert_eq!(s[1].target, 409.5);
        assert_eq!(s[1].proportional, -10.1);
        assert_eq!((s[2].in_use, s[2].avail), (71.0, 29.0));
        assert!(s[3].rate > MAX_RATE_MIB);
        // the rig's lines have no in_use
        let rig = RUN.replace(" in_use=71", "");
        assert_eq!(parse_samples(&rig, "r").unwrap()[2].in_use, 71.0);
        // a sample without its debug half names its line
        let e = parse_samples("x\nS t=1.0 dirty_data=1.0M\n", "f.txt").unwrap_err();
        assert!(e.starts_with("f.txt:2: "), "{e}");
    }

    /// The three graphs of a device, PNG and SVG, with the series and the
    /// cutoff lines named in the legend.
    #[test]
    fn plots_the_controller_and_the_cutoffs() {
        let d = std::env::temp_dir().join(format!("wbsim-plot-bcache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("bcache-bc0.txt"), RUN).unwrap();
        super::super::register();
        let files = plot_bcache(&d).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "bcache-bc0-dirty.png",
                "bcache-bc0-dirty.svg",
                "bcache-bc0-rate.png",
                "bcache-bc0-rate.svg",
                "bcache-bc0-buckets.png",
                "bcache-bc0-buckets.svg"
            ]
        );
        let svg = std::fs::read_to_string(d.join("bcache-bc0-buckets.svg")).unwrap();
        for k in [
            "in_use",
            "cutoff_writeback_sync (70)",
            "cutoff_writeback (40)",
        ] {
            assert!(svg.contains(k), "{k}");
        }
        let svg = std::fs::read_to_string(d.join("bcache-bc0-rate.svg")).unwrap();
        for k in [
            "writeback rate",
            "proportional",
            "integral",
            "idle: maximum rate",
        ] {
            assert!(svg.contains(k), "{k}");
        }
        assert!(
            std::fs::metadata(d.join("bcache-bc0-dirty.png"))
                .unwrap()
                .len()
                > 1000
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
