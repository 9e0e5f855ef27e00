//! `wbsim fidelity`: run a scenario on the real kernel K times and in the
//! simulator once, and score the simulation against the kernel, metric by
//! metric: the kernel's median and spread, wbsim's value, the error, and
//! whether wbsim lies inside the kernel's own spread. Both sides' numbers
//! come from the same `Summary` code.

use crate::metrics::Summary;

/// (name, what, how to read it from a summary).
pub type Metric = (&'static str, &'static str, fn(&Summary) -> Option<f64>);

fn bdp(s: &Summary, f: &str) -> Option<f64> {
    s.trace
        .get("balance_dirty_pages")?
        .fields
        .get(f)
        .map(|p| p.p50)
}

pub const METRICS: &[Metric] = &[
    ("throughput", "dirtying MiB/s (write(2) bytes)", |s| {
        Some(s.dirtying_mib_s)
    }),
    ("device_throughput", "device write MiB/s", |s| {
        s.devices.first().map(|d| d.write_mib_s)
    }),
    ("write_iops", "device write IOPS", |s| {
        s.devices.first().map(|d| d.write_iops)
    }),
    ("avg_request", "average write request KiB", |s| {
        s.devices.first().map(|d| d.avg_request_kib)
    }),
    ("dirty_pages", "sampled nr_dirty+nr_writeback p50", |s| {
        Some(s.dirty_pages.p50)
    }),
    ("nr_writeback", "sampled nr_writeback p50", |s| {
        Some(s.nr_writeback.p50)
    }),
    ("dirty", "balance_dirty_pages dirty p50", |s| {
        bdp(s, "dirty")
    }),
    (
        "dirty_ratelimit",
        "balance_dirty_pages dirty_ratelimit p50 (KB/s)",
        |s| bdp(s, "dirty_ratelimit"),
    ),
    (
        "task_ratelimit",
        "balance_dirty_pages task_ratelimit p50 (KB/s)",
        |s| bdp(s, "task_ratelimit"),
    ),
    ("pause", "balance_dirty_pages pause p50 (ms)", |s| {
        bdp(s, "pause")
    }),
    ("period", "balance_dirty_pages period p50 (ms)", |s| {
        bdp(s, "period")
    }),
    (
        "dirtied_pause",
        "balance_dirty_pages dirtied_pause p50",
        |s| bdp(s, "dirtied_pause"),
    ),
    ("write_bw", "bdi_dirty_ratelimit write_bw p50 (KB/s)", |s| {
        s.trace
            .get("bdi_dirty_ratelimit")?
            .fields
            .get("write_bw")
            .map(|p| p.p50)
    }),
    (
        "voluntary_cs",
        "voluntary context switches per task per s, p50",
        |s| Some(s.voluntary_cs_per_task_s.p50),
    ),
];

#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub metric: String,
    pub kernel_median: f64,
    pub kernel_min: f64,
    pub kernel_max: f64,
    pub wbsim: f64,
    pub error_pct: f64,
    pub inside_spread: bool,
    pub tolerance_pct: Option<f64>,
    pub pass: bool,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Score `sim` against the kernel runs. A metric passes if it has no
/// tolerance, or its error is within the tolerance (0: equal to the median),
/// or it lies inside the kernel's own min–max.
pub fn score(kernel: &[Summary], sim: &Summary, tolerance: &[(String, f64)]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (name, _, get) in METRICS {
        let mut ks: Vec<f64> = kernel.iter().filter_map(get).collect();
        let Some(w) = get(sim) else { continue };
        if ks.is_empty() {
            continue;
        }
        let (lo, hi) = (
            ks.iter().cloned().fold(f64::MAX, f64::min),
            ks.iter().cloned().fold(f64::MIN, f64::max),
        );
        let med = median(&mut ks);
        let err = if med != 0.0 {
            (w - med) / med.abs() * 100.0
        } else if w == 0.0 {
            0.0
        } else {
            100.0
        };
        let inside = w >= lo && w <= hi;
        let tol = tolerance.iter().find(|(m, _)| m == name).map(|(_, t)| *t);
        let pass = match tol {
            None => true,
            Some(0.0) => w == med || inside,
            Some(t) => err.abs() <= t + 1e-9 || inside,
        };
        rows.push(Row {
            metric: name.to_string(),
            kernel_median: med,
            kernel_min: lo,
            kernel_max: hi,
            wbsim: w,
            error_pct: (err * 10.0).round() / 10.0,
            inside_spread: inside,
            tolerance_pct: tol,
            pass,
        });
    }
    rows
}

pub fn table(title: &str, rows: &[Row], k: usize) -> String {
    let mut s = format!("{title}: kernel over {k} run(s) vs wbsim\n");
    s += &format!(
        "{:<18} {:>14} {:>25} {:>12} {:>8} {:>7} {:>9} {:>5}\n",
        "metric",
        "kernel median",
        "kernel min–max",
        "wbsim",
        "error %",
        "inside",
        "tolerance",
        "ok"
    );
    let f = |x: f64| {
        let t = format!("{x:.3}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    for r in rows {
        s += &format!(
            "{:<18} {:>14} {:>25} {:>12} {:>+8.1} {:>7} {:>9} {:>5}\n",
            r.metric,
            f(r.kernel_median),
            format!("{}–{}", f(r.kernel_min), f(r.kernel_max)),
            f(r.wbsim),
            r.error_pct,
            if r.inside_spread { "yes" } else { "no" },
            r.tolerance_pct
                .map(|t| if t == 0.0 {
                    "equal".into()
                } else {
                    format!("±{t}%")
                })
                .unwrap_or_else(|| "-".into()),
            if r.pass { "yes" } else { "NO" }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{Observations, Summary};

    fn summary_with(throughput: f64) -> Summary {
        let mut s = Summary::compute(&Observations::default());
        s.dirtying_mib_s = throughput;
        s
    }

    #[test]
    fn scores_against_median_and_spread() {
        let k = vec![summary_with(50.0), summary_with(49.0), summary_with(52.0)];
        let tol = vec![("throughput".to_string(), 2.0)];
        let r = score(&k, &summary_with(51.5), &tol);
        let t = r.iter().find(|r| r.metric == "throughput").unwrap();
        assert_eq!(
            (t.kernel_median, t.kernel_min, t.kernel_max),
            (50.0, 49.0, 52.0)
        );
        assert_eq!(t.error_pct, 3.0);
        assert!(
            t.inside_spread && t.pass,
            "inside the kernel's spread passes"
        );
        let r = score(&k, &summary_with(53.0), &tol);
        assert!(!r.iter().find(|r| r.metric == "throughput").unwrap().pass);
        let r = score(&k, &summary_with(53.0), &[]);
        assert!(r.iter().all(|r| r.pass), "no tolerance, no failure");
    }
}
