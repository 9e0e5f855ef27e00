//! `wbsim fidelity`: run a scenario on the real kernel K times and in the
//! simulator once, and score the simulation against the kernel, metric by
//! metric: the kernel's median and spread, wbsim's value, the error, and
//! whether wbsim lies inside the kernel's own spread. Both sides' numbers
//! come from the same `Summary` code.

use crate::metrics::Summary;
use crate::output::simulate;
use crate::scenario::Scenario;

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
    (
        "involuntary_cs",
        "involuntary context switches per task per s, p50",
        |s| Some(s.involuntary_cs_per_task_s.p50),
    ),
    (
        "writers_cpu",
        "the writers' CPU-s/s, user + system (what the CPU calibration matches)",
        |s| Some(writers_cpu(s)),
    ),
];

#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub metric: String,
    pub kernel_median: f64,
    pub kernel_min: f64,
    pub kernel_max: f64,
    /// wbsim's median over its runs (one per seed).
    pub wbsim: f64,
    pub wbsim_min: f64,
    pub wbsim_max: f64,
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

fn min_max(v: &[f64]) -> (f64, f64) {
    (
        v.iter().cloned().fold(f64::MAX, f64::min),
        v.iter().cloned().fold(f64::MIN, f64::max),
    )
}

/// Score wbsim's runs (`sims`, one per seed) against the kernel runs,
/// median against median: a single run of either is one sample of a
/// path-dependent process (where dirty_ratelimit stops inside the ratelimit
/// step's dead zone, the phase of a sawtooth at the window's edges), so
/// both sides are summarized the same way. A metric passes if it has no
/// tolerance, or wbsim's median is within the tolerance of the kernel's
/// (0: equal), or it lies inside the kernel's own min–max.
pub fn score(kernel: &[Summary], sims: &[Summary], tolerance: &[(String, f64)]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (name, _, get) in METRICS {
        let mut ks: Vec<f64> = kernel.iter().filter_map(get).collect();
        let mut ws: Vec<f64> = sims.iter().filter_map(get).collect();
        if ks.is_empty() || ws.is_empty() {
            continue;
        }
        let (lo, hi) = min_max(&ks);
        let (wlo, whi) = min_max(&ws);
        let med = median(&mut ks);
        let w = median(&mut ws);
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
            wbsim_min: wlo,
            wbsim_max: whi,
            error_pct: (err * 10.0).round() / 10.0,
            inside_spread: inside,
            tolerance_pct: tol,
            pass,
        });
    }
    rows
}

/// The writers' CPU time per second of the window (user + system, all
/// jobs): what the kernel runs measure from /proc/PID/stat and what the
/// model estimates from its cost model.
pub fn writers_cpu(s: &Summary) -> f64 {
    s.jobs.iter().map(|j| j.cpu_user + j.cpu_system).sum()
}

/// How much slower (k > 1) this machine's CPU is than `sc`'s cost model:
/// the factor that makes the model's writers use the CPU time the kernel
/// runs measured (median over the runs). The think time between two
/// balance_dirty_pages() calls, and so the pause, depends on it: on the
/// same rig, the kernel's pause p50 for 1 dd at bs=1M went from 16 ms to
/// 12 ms when the host's CPU got 2.2x slower (dd 0.098 -> 0.22 CPU-s/s).
/// CPU time is close to proportional to the costs at a fixed device
/// bandwidth, so one correction step after the first estimate suffices.
/// Returns (k, the kernel's CPU-s/s), or None without a CPU measurement.
pub fn cpu_scale(kernel: &[Summary], sc: &Scenario) -> Option<(f64, f64)> {
    let mut ks: Vec<f64> = kernel.iter().map(writers_cpu).collect();
    if ks.is_empty() {
        return None;
    }
    let kcpu = median(&mut ks);
    let mut k = 1.0;
    for _ in 0..2 {
        let mut s = sc.clone();
        s.machine.cost = sc.machine.cost.scaled(k);
        let cpu = writers_cpu(&simulate(&s, false, |_, _| {}).summary);
        if !(kcpu > 0.0 && cpu > 0.0) {
            return None;
        }
        k *= kcpu / cpu;
    }
    k.is_finite().then_some((k, kcpu))
}

/// `VM_COMPLETIONS_PERIOD_LEN`: the writeback domain's completion counts
/// (the flexible proportions behind each wb's share of the dirty
/// threshold) halve every 3 s while any remain.
pub const COMPLETIONS_PERIOD_S: u64 = 3;

/// How long to wait after a kernel run that wrote `pages` pages before the
/// next one, so that the global completion count has aged to nothing
/// (`writeout_period()` halves it each period; below 2 events it stops).
/// Runs started sooner give their new device only a small share of the
/// threshold at first (on the host rig, back-to-back runs 2 s apart began
/// with wb_setpoint about 1390 of setpoint 44800, 3%, against 100% after
/// an idle minute), which changes how dirty_ratelimit descends.
pub fn settle_secs(pages: u64) -> u64 {
    let periods = 64 - pages.leading_zeros() as u64; // ceil(log2(pages + 1))
    COMPLETIONS_PERIOD_S * (periods + 1)
}

/// The wb's share of the dirty threshold at the first balance_dirty_pages
/// line of `trace`: wb_setpoint / setpoint (the trace computes wb_setpoint
/// as setpoint scaled by the share). None without such a line.
pub fn start_share(trace: &str) -> Option<f64> {
    let r = trace
        .lines()
        .filter_map(crate::trace::parse_line)
        .find(|r| r.event == "balance_dirty_pages")?;
    let (wsp, sp) = (r.get("wb_setpoint")?, r.get("setpoint")?);
    (sp > 0).then(|| wsp as f64 / sp as f64)
}

pub fn table(title: &str, rows: &[Row], k: usize, n: usize) -> String {
    let mut s = format!("{title}: kernel over {k} run(s) vs wbsim over {n} seed(s), medians\n");
    s += &format!(
        "{:<18} {:>14} {:>25} {:>12} {:>25} {:>8} {:>7} {:>9} {:>5}\n",
        "metric",
        "kernel median",
        "kernel min–max",
        "wbsim median",
        "wbsim min–max",
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
            "{:<18} {:>14} {:>25} {:>12} {:>25} {:>+8.1} {:>7} {:>9} {:>5}\n",
            r.metric,
            f(r.kernel_median),
            format!("{}–{}", f(r.kernel_min), f(r.kernel_max)),
            f(r.wbsim),
            format!("{}–{}", f(r.wbsim_min), f(r.wbsim_max)),
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
        let r = score(&k, &[summary_with(51.5)], &tol);
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
        let r = score(&k, &[summary_with(53.0)], &tol);
        assert!(!r.iter().find(|r| r.metric == "throughput").unwrap().pass);
        let r = score(&k, &[summary_with(53.0)], &[]);
        assert!(r.iter().all(|r| r.pass), "no tolerance, no failure");
        // wbsim's runs are summarized by their median, like the kernel's
        let sims = [summary_with(60.0), summary_with(50.5), summary_with(40.0)];
        let r = score(&k, &sims, &tol);
        let t = r.iter().find(|r| r.metric == "throughput").unwrap();
        assert_eq!((t.wbsim, t.wbsim_min, t.wbsim_max), (50.5, 40.0, 60.0));
        assert!(t.pass && t.error_pct == 1.0);
    }

    /// A kernel that spent 2.5x the model's CPU time gets costs scaled by
    /// about 2.5, and the scaled model then uses the kernel's CPU time.
    #[test]
    fn cpu_calibration_matches_the_kernels_cpu_time() {
        let sc = Scenario::load_str(
            "[vm]\ndirty_bytes = \"200M\"\ndirty_background_bytes = \"100M\"\n\
             [devices.d]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n\
             [filesystems.f]\ndevice = \"d\"\n[jobs.dd]\nnumjobs = 2\nbs = \"1M\"\n\
             [run]\nduration = \"20s\"\nwarmup = \"10s\"\n",
            "t.toml",
            "t",
            &[],
        )
        .unwrap();
        let base = simulate(&sc, false, |_, _| {}).summary;
        let cpu = writers_cpu(&base);
        assert!(cpu > 0.0);
        let mut kernel = Summary::compute(&Observations::default());
        kernel.jobs = serde_json::from_value(serde_json::to_value(&base.jobs).unwrap()).unwrap();
        kernel.jobs[0].cpu_system = 2.5 * cpu;
        kernel.jobs[0].cpu_user = 0.0;
        let (k, kcpu) = cpu_scale(&[kernel], &sc).unwrap();
        assert_eq!(kcpu, 2.5 * cpu);
        assert!((2.0..3.0).contains(&k), "k = {k}");
        let mut s = sc.clone();
        s.machine.cost = sc.machine.cost.scaled(k);
        let got = writers_cpu(&simulate(&s, false, |_, _| {}).summary);
        assert!((got / kcpu - 1.0).abs() < 0.02, "{got} vs {kcpu}");
        // nothing measured, nothing scaled
        assert!(cpu_scale(&[], &sc).is_none());
    }

    #[test]
    fn settling_outlasts_the_completion_count() {
        // 0 pages: one period; 750k pages (60 s at 50 MiB/s): 20 halvings
        assert_eq!(settle_secs(0), 3);
        assert_eq!(settle_secs(1), 6);
        assert_eq!(settle_secs(768_000), 3 * 21);
        let mut events = 768_000u64;
        let mut periods = 0;
        while events > 1 {
            events -= events / 2; // fprop_new_period: events -= events >> 1
            periods += 1;
        }
        assert!(COMPLETIONS_PERIOD_S * periods <= settle_secs(768_000));
    }

    #[test]
    fn start_share_reads_the_first_bdp_line() {
        let t =
            "  dd-1 [001] ..... 1.0: balance_dirty_pages: bdi 7:64: limit=51200 setpoint=44800 \
                 dirty=38473 wb_setpoint=1391 wb_dirty=37248 dirty_ratelimit=102400\n\
                 dd-1 [001] ..... 2.0: balance_dirty_pages: bdi 7:64: limit=51200 setpoint=44800 \
                 dirty=38473 wb_setpoint=44800 wb_dirty=37248\n";
        let s = start_share(t).unwrap();
        assert!((s - 1391.0 / 44800.0).abs() < 1e-9);
        assert_eq!(start_share("nothing\n"), None);
    }

    #[test]
    fn scaling_costs_leaves_the_scheduler_alone() {
        let sc = Scenario::builtin(&[]).unwrap();
        let c = &sc.machine.cost;
        let d = c.scaled(2.0);
        assert_eq!(d.page_cache_insert, 2 * c.page_cache_insert);
        assert_eq!(d.syscall, 2 * c.syscall);
        assert_eq!(d.wakeup, 2 * c.wakeup);
        assert_eq!(d.sched_slice, c.sched_slice);
        assert_eq!(d.wakeup_jitter, c.wakeup_jitter);
        assert_eq!(d.spread, c.spread);
    }
}
