//! `wbsim fidelity`: run a scenario on the real kernel K times and in the
//! simulator once, and score the simulation against the kernel, metric by
//! metric: the kernel's median and spread, wbsim's value, the error, and
//! whether wbsim lies inside the kernel's own spread. Both sides' numbers
//! come from the same `Summary` code.

use crate::metrics::Summary;
#[cfg(test)]
use crate::output::simulate;
use crate::output::{simulate_with, SimOpts};
use crate::scenario::Scenario;
use crate::sim::Ns;

/// Simulate `sc` traced, leaving `outside`'s devices and jobs out of the
/// summary (`SimOpts::outside`).
pub fn sim_summary(sc: &Scenario, outside: &[String]) -> Summary {
    let opts = SimOpts {
        trace: true,
        outside: outside.to_vec(),
        ..Default::default()
    };
    match simulate_with(sc, &opts, |_, _| {}) {
        Ok(r) => r.summary,
        Err(e) => unreachable!("no file is written: {e}"),
    }
}

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
        "ratelimit_updates",
        "bdi_dirty_ratelimit lines per s: how often balance_dirty_pages wins the race to the bandwidth update (against do_writepages and bw_dwork)",
        |s| s.trace.get("bdi_dirty_ratelimit").map(|t| t.per_s),
    ),
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
    /// Why the figure is what it is where wbsim does not model its cause
    /// (`metric_note`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What to say about a figure whose cause wbsim does not model, instead of
/// a bare error: involuntary context switches under the `fifo` scheduler.
/// The kernel's (0.1–1.3 per writer per second on the host rig) are a
/// writer preempted at a tick or a wakeup (`check_preempt_wakeup_fair`,
/// `update_curr`'s resched once the slice is used): mostly by the flusher
/// and loop kworkers and the other writers woken on its CPU. `fifo` never
/// preempts at a wakeup or a tick: a task loses the CPU only at the end of
/// a `machine.cost.sched_slice`, which a writer's burst between two
/// sleeps (a few writes' copies) does not reach, so it reads 0;
/// `machine.sched = "eevdf"` models the preemption (docs/layout.md).
pub fn metric_note(metric: &str, kernel_median: f64, wbsim: f64) -> Option<String> {
    (metric == "involuntary_cs" && wbsim == 0.0 && kernel_median > 0.0).then(|| {
        "not modelled under machine.sched = \"fifo\", which preempts at no wakeup or tick \
         (a writer's burst ends before its slice does); the kernel's are writers preempted \
         by kworkers and woken writers; machine.sched = \"eevdf\" models them"
            .to_string()
    })
}

pub fn median(v: &mut [f64]) -> f64 {
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
            note: metric_note(name, med, w),
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
/// `host_fault`, when given, is a cost measured on this machine (a host
/// probe's) and is kept as it is.
/// Returns (k, the kernel's CPU-s/s), or None without a CPU measurement.
pub fn cpu_scale(
    kernel: &[Summary],
    sc: &Scenario,
    outside: &[String],
    host_fault: Option<Ns>,
) -> Option<(f64, f64)> {
    let mut ks: Vec<f64> = kernel.iter().map(writers_cpu).collect();
    if ks.is_empty() {
        return None;
    }
    let kcpu = median(&mut ks);
    let cpu_at = |k: f64| {
        let mut s = sc.clone();
        s.machine.cost = scaled_costs(sc, k, host_fault);
        writers_cpu(&sim_summary(&s, outside))
    };
    let mut k = 1.0;
    let mut prev = (k, 0.0);
    for _ in 0..2 {
        let cpu = cpu_at(k);
        if !(kcpu > 0.0 && cpu > 0.0) {
            return None;
        }
        prev = (k, cpu);
        k *= kcpu / cpu;
    }
    // with a cost held fixed the CPU time is no longer proportional to k:
    // one secant step from the last two estimates
    if host_fault.is_some() {
        let (k0, c0) = prev;
        let c1 = cpu_at(k);
        if (c1 - c0).abs() > f64::EPSILON {
            k += (kcpu - c1) * (k - k0) / (c1 - c0);
        }
    }
    (k.is_finite() && k > 0.0).then_some((k, kcpu))
}

/// `sc`'s costs scaled by `k` ([`CpuCost::scaled`]), with `host_fault`,
/// when given (a probe's measurement on this machine), held as it is.
pub fn scaled_costs(sc: &Scenario, k: f64, host_fault: Option<Ns>) -> crate::scenario::CpuCost {
    let mut c = sc.machine.cost.scaled(k);
    if let Some(f) = host_fault {
        c.host_fault = f;
    }
    c
}

/// The p50 of `global_dirty_state`'s `thresh` in a summary: the global
/// dirty threshold in pages over the window.
pub fn thresh_p50(s: &Summary) -> Option<f64> {
    s.trace
        .get("global_dirty_state")?
        .fields
        .get("thresh")
        .map(|p| p.p50)
}

/// For a scenario whose dirty threshold is a ratio (`vm.dirty_bytes`
/// unset): the memory that is neither free nor page cache (`machine.anon`)
/// that gives the model the dirtyable memory the kernel runs had. A ratio
/// threshold is `vm.dirty_ratio` percent of `global_dirtyable_memory()`
/// (free pages less `totalreserve_pages`, plus the file LRU pages), and on
/// a machine shared with other work that is whatever the others left: on
/// the host rig, three runs of `vm.dirty_ratio = 1` within minutes had a
/// threshold of 49.7–50.7k pages, i.e. 19 GiB dirtyable of 23.5 GiB
/// managed, where an idle machine has 22 GiB. The kernel's threshold is in
/// its trace (`global_dirty_state`'s `thresh`, median of the runs' window
/// p50), so the model's anonymous memory is moved by the difference in
/// dirtyable pages (`thresh` × 100 / ratio), twice, as the page cache the
/// run grows (and a tmpfs image) moves with it. Returns (anon bytes, the
/// kernel's thresh), or None for a byte threshold or without a trace.
pub fn memory_scale(kernel: &[Summary], sc: &Scenario, outside: &[String]) -> Option<(u64, f64)> {
    if sc.vm.dirty_bytes != 0 || sc.vm.dirty_ratio == 0 {
        return None;
    }
    let mut ks: Vec<f64> = kernel.iter().filter_map(thresh_p50).collect();
    if ks.is_empty() {
        return None;
    }
    let kthresh = median(&mut ks);
    let page = sc.machine.page_size as f64;
    let mut s = sc.clone();
    for _ in 0..2 {
        let t = thresh_p50(&sim_summary(&s, outside))?;
        let pages = (t - kthresh) * 100.0 / sc.vm.dirty_ratio as f64;
        let anon = (s.machine.anon as f64 + pages * page).max(0.0);
        s.machine.anon = (anon / page).round() as u64 * sc.machine.page_size;
    }
    Some((s.machine.anon, kthresh))
}

/// The wb's share of the global dirty threshold in a summary:
/// `balance_dirty_pages`' wb_setpoint p50 over its setpoint p50.
pub fn wb_share(s: &Summary) -> Option<f64> {
    let (w, g) = (bdp(s, "wb_setpoint")?, bdp(s, "setpoint")?);
    (g > 0.0).then(|| w / g)
}

/// The name of the device, filesystem and job that stand for the other
/// devices' writeback in a simulated fidelity run.
pub const OTHER: &str = "zz-fidelity-other";

/// Below this share of the threshold in the kernel runs (median), the
/// other devices' writeback is simulated.
pub const OTHER_SHARE_BELOW: f64 = 0.9;

/// The `--set` options that add the machine's other writeback to a
/// scenario: a device of its own (throttled far above `rate`) with ext4 and
/// one buffered fio writer at `rate` bytes/s for the whole run, all named
/// `OTHER`, and each of the scenario's jobs (`jobs`, their TOML names) kept
/// on its filesystem `fs` now that there are two.
///
/// Why: a wb's share of the dirty threshold is its share of the writeback
/// domain's recent completions (`wb_domain`'s flexible proportions,
/// `__wb_calc_thresh`), and the kernel runs shared their machine with other
/// work whose writeback completed on other devices: on the host rig the
/// runs' trace had 100s to 1000s of other devices' writeback lines in each
/// window, and a 10 MiB/s device held only 49–64% of the threshold
/// (wb_setpoint / setpoint), a 200 MiB/s device 96–99%. A smaller wb
/// setpoint lowers pos_ratio, so dirty_ratelimit settles higher and the
/// dirty level lower (10 MiB/s, 1 dd: dirty_ratelimit 13.4k against 12.0k
/// alone, dirty 42.9k against 47.6k; with 6 MiB/s of writeback elsewhere
/// wbsim gives 12.4k and 44.4k).
pub fn other_writeback_sets(jobs: &[String], fs: &str, rate: u64, duration_s: u64) -> Vec<String> {
    let mut v = vec![
        format!("devices.{OTHER}.type=throttled"),
        format!("devices.{OTHER}.write_bps={}", (rate * 20).max(100 << 20)),
        format!("devices.{OTHER}.size=64G"),
        format!("filesystems.{OTHER}.device={OTHER}"),
        format!("jobs.{OTHER}.type=fio"),
        format!("jobs.{OTHER}.filesystem={OTHER}"),
        format!(
            "jobs.{OTHER}.cmdline=--name={OTHER} --rw=write --bs=64k --size=16g --rate={} --time_based --runtime={}",
            rate.max(4096),
            duration_s.max(1)
        ),
    ];
    for j in jobs {
        v.push(format!("jobs.{j}.filesystem={fs}"));
    }
    v
}

/// The other writeback's rate (bytes/s) that gives a wb writing `own`
/// bytes/s the share `share` of the completions: own × (1 − share) / share.
pub fn other_rate(own: f64, share: f64) -> f64 {
    own * (1.0 - share) / share.max(0.01)
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

/// What a run of `sc` can write: its devices' write caps (`throttle.write_bps`)
/// over its duration, in pages; 2^24 pages (64 GiB of 4k pages) when no
/// device is capped. The settling wait before an invocation's first kernel
/// run takes this as what the machine's last run wrote, since nothing of
/// that run is known: the runs of one corpus are alike, and a run made
/// seconds after another one began with its device at 0.6–14% of the
/// threshold (docs/validation.md).
pub fn first_settle_pages(sc: &Scenario) -> u64 {
    let secs = sc.run.duration.div_ceil(1_000_000_000);
    let bps: u64 = sc
        .devices
        .iter()
        .filter_map(|d| d.throttle.write_bps)
        .fold(0u64, |a, b| a.saturating_add(b));
    if bps == 0 {
        return 1 << 24;
    }
    bps.saturating_mul(secs) / sc.machine.page_size.max(1)
}

/// The note for kernel runs whose first `balance_dirty_pages` line found
/// their device holding under half of the threshold (`shares`, from
/// [`start_share`]), if any did. A new ext4 device holds its share before
/// the writers start (the completions of mkfs.ext4's inode tables and
/// journal); mkfs.xfs writes too little for that, so on xfs (`xfs`) a
/// small share is expected rather than a sign of earlier writeback.
pub fn start_share_note(shares: &[f64], xfs: bool) -> Option<String> {
    if !shares.iter().any(|s| *s < 0.5) {
        return None;
    }
    let v: Vec<String> = shares
        .iter()
        .map(|s| format!("{:.0}%", s * 100.0))
        .collect();
    let why = if xfs {
        "expected on xfs, where mkfs.xfs writes too little for a new device to hold a share \
         before the writers start (mkfs.ext4's inode tables and journal give an ext4 device one); \
         otherwise the writeback domain still remembered earlier writeback"
    } else {
        "the writeback domain still remembered earlier writeback (its completion counts halve every 3 s); \
         leave the machine idle for a minute before the first run"
    };
    Some(format!(
        "a kernel run began with its device holding little of the dirty threshold ({}): {why}",
        v.join(", ")
    ))
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

/// One scenario's score: its rows and what was scored.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CaseScore {
    pub scenario: String,
    pub kernel_runs: usize,
    pub sim_runs: usize,
    pub rows: Vec<Row>,
    /// Notes printed under the case's table (CPU calibration, host state,
    /// contamination).
    pub notes: Vec<String>,
}

impl CaseScore {
    fn row(&self, metric: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.metric == metric)
    }
}

/// A figure in a table: integers from 100 up, else 3 significant digits.
pub fn fig(x: f64) -> String {
    let a = x.abs();
    let t = if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    };
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

/// (figures that have a tolerance, of those the ones that pass).
pub fn pass_count(cases: &[CaseScore]) -> (usize, usize) {
    let toleranced = || {
        cases
            .iter()
            .flat_map(|c| &c.rows)
            .filter(|r| r.tolerance_pct.is_some())
    };
    (
        toleranced().count(),
        toleranced().filter(|r| r.pass).count(),
    )
}

fn tolerance_text(t: Option<f64>) -> String {
    match t {
        None => "-".into(),
        Some(0.0) => "equal".into(),
        Some(t) => format!("±{t}%"),
    }
}

fn count_line(cases: &[CaseScore]) -> String {
    let (n, ok) = pass_count(cases);
    format!(
        "{ok} of {n} figures that have a tolerance are within it or inside the kernel's own spread ({:.1}%), over {} scenarios.\n",
        if n > 0 { ok as f64 * 100.0 / n as f64 } else { 100.0 },
        cases.len()
    )
}

/// The misses, one Markdown list item each (with its note), or a line
/// saying there are none.
fn misses_md(cases: &[CaseScore]) -> String {
    let mut s = String::new();
    for c in cases {
        for r in c.rows.iter().filter(|r| !r.pass) {
            s += &format!(
                "- {} {}: kernel {} [{}–{}], wbsim {} ({:+.1}%), tolerance {}{}\n",
                c.scenario,
                r.metric,
                fig(r.kernel_median),
                fig(r.kernel_min),
                fig(r.kernel_max),
                fig(r.wbsim),
                r.error_pct,
                tolerance_text(r.tolerance_pct),
                r.note
                    .as_deref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default()
            );
        }
    }
    if s.is_empty() {
        s = "No figure misses its tolerance.\n".into();
    }
    s
}

/// A markdown table's header row and rule: `first`, then `heads`.
fn table_head<'a>(first: &str, heads: impl Iterator<Item = &'a str>) -> String {
    let (mut head, mut rule) = (format!("| {first} |"), String::from("|---|"));
    for h in heads {
        head += &format!(" {h} |");
        rule += "---|";
    }
    format!("{head}\n{rule}\n")
}

/// The short table (the README's): per scenario the kernel's median and
/// wbsim's of the throttle's figures, a miss in bold, and the count.
pub fn markdown_summary(cases: &[CaseScore]) -> String {
    const COLS: &[(&str, &str)] = &[
        ("throughput", "MiB/s"),
        ("dirty", "dirty pages"),
        ("dirty_ratelimit", "dirty_ratelimit KB/s"),
        ("pause", "pause ms"),
        ("period", "period ms"),
        ("dirtied_pause", "dirtied_pause"),
        ("voluntary_cs", "vol cs/task/s"),
    ];
    let mut s = table_head(
        "scenario (kernel / wbsim)",
        COLS.iter().map(|c| c.1).chain(["ok"]),
    );
    for c in cases {
        s += &format!("| {} |", c.scenario);
        for (m, _) in COLS {
            s += &match c.row(m) {
                Some(r) if !r.pass => format!(" **{} / {}** |", fig(r.kernel_median), fig(r.wbsim)),
                Some(r) => format!(" {} / {} |", fig(r.kernel_median), fig(r.wbsim)),
                None => " - |".into(),
            };
        }
        let (n, ok) = pass_count(std::slice::from_ref(c));
        s += &format!(" {ok}/{n} |\n");
    }
    s += "\n";
    s += &count_line(cases);
    s
}

/// The full table (docs/validation.md's): per scenario a kernel row (median
/// and, where the runs differ, [min–max]) and a wbsim row, every scored
/// figure; then the count and every miss with its note.
pub fn markdown_full(cases: &[CaseScore]) -> String {
    const COLS: &[(&str, &str)] = &[
        ("throughput", "MiB/s"),
        ("dirty", "dirty"),
        ("dirty_ratelimit", "dirty_ratelimit"),
        ("task_ratelimit", "task_ratelimit"),
        ("pause", "pause ms"),
        ("period", "period ms"),
        ("dirtied_pause", "dirtied_pause"),
        ("voluntary_cs", "vol cs/task/s"),
        ("involuntary_cs", "invol cs/task/s"),
        ("nr_writeback", "nr_writeback"),
        ("write_bw", "write_bw"),
        ("ratelimit_updates", "ratelimit updates/s"),
        ("avg_request", "avg request KiB"),
        ("writers_cpu", "writers CPU-s/s"),
    ];
    let mut s = table_head("run", COLS.iter().map(|c| c.1));
    for c in cases {
        s += &format!("| {}, kernel ×{} |", c.scenario, c.kernel_runs);
        for (m, _) in COLS {
            s += &match c.row(m) {
                Some(r) if r.kernel_min != r.kernel_max => format!(
                    " {} [{}–{}] |",
                    fig(r.kernel_median),
                    fig(r.kernel_min),
                    fig(r.kernel_max)
                ),
                Some(r) => format!(" {} |", fig(r.kernel_median)),
                None => " - |".into(),
            };
        }
        s += &format!("\n| wbsim ×{} |", c.sim_runs);
        for (m, _) in COLS {
            s += &match c.row(m) {
                Some(r) if !r.pass => format!(" **{}** |", fig(r.wbsim)),
                Some(r) => format!(" {} |", fig(r.wbsim)),
                None => " - |".into(),
            };
        }
        s += "\n";
    }
    s += "\n";
    s += &count_line(cases);
    s += "\n";
    s += &misses_md(cases);
    s
}

/// The baseline: one line `SCENARIO METRIC` per figure that has a
/// tolerance and passes, in scoring order.
pub fn baseline_text(cases: &[CaseScore]) -> String {
    let mut s = String::from(
        "# wbsim fidelity --write-baseline: the figures within their tolerance\n\
         # (or inside the kernel's spread); --baseline fails when one leaves it\n",
    );
    for c in cases {
        for r in c
            .rows
            .iter()
            .filter(|r| r.tolerance_pct.is_some() && r.pass)
        {
            s += &format!("{} {}\n", c.scenario, r.metric);
        }
    }
    s
}

/// Against a baseline (`baseline_text`, `file` for messages): the figures
/// it lists that fail now (each with its kernel and wbsim values), and
/// those that pass now but are not listed. A listed figure of a scenario
/// not scored is skipped; a line that is not `SCENARIO METRIC` is an error.
pub fn against_baseline(
    cases: &[CaseScore],
    text: &str,
    file: &str,
) -> Result<(Vec<String>, Vec<String>), String> {
    let mut listed = std::collections::BTreeSet::new();
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let mut w = l.split_whitespace();
        match (w.next(), w.next(), w.next()) {
            (Some(c), Some(m), None) => {
                listed.insert((c.to_string(), m.to_string()));
            }
            _ => {
                return Err(format!(
                    "{file}:{}: `{l}`: expected `SCENARIO METRIC`",
                    i + 1
                ))
            }
        }
    }
    let mut lost = Vec::new();
    let mut gained = Vec::new();
    for c in cases {
        for r in &c.rows {
            let key = (c.scenario.clone(), r.metric.clone());
            let was = listed.contains(&key);
            if was && !r.pass {
                lost.push(format!(
                    "{} {}: kernel {} [{}–{}], wbsim {} ({:+.1}%), tolerance {}",
                    c.scenario,
                    r.metric,
                    fig(r.kernel_median),
                    fig(r.kernel_min),
                    fig(r.kernel_max),
                    fig(r.wbsim),
                    r.error_pct,
                    tolerance_text(r.tolerance_pct)
                ));
            } else if !was && r.pass && r.tolerance_pct.is_some() {
                gained.push(format!("{} {}", c.scenario, r.metric));
            }
        }
    }
    Ok((lost, gained))
}

/// The trace events a kept kernel run needs: those the metrics read, and
/// `global_dirty_state` (the kernel's thresholds).
pub const KEPT_EVENTS: &[&str] = &[
    "balance_dirty_pages",
    "bdi_dirty_ratelimit",
    "global_dirty_state",
];

/// A kernel run's summary with only what scoring reads (`KEPT_EVENTS`),
/// the rest as measured (`--keep-runs`).
pub fn trimmed(mut s: Summary) -> Summary {
    s.trace.retain(|e, _| KEPT_EVENTS.contains(&e.as_str()));
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

    /// Two dd at 1M on a 50 MiB/s throttled device, after `machine` (TOML
    /// put before the rest).
    fn two_dd(machine: &str) -> Scenario {
        Scenario::load_str(
            &format!(
                "{machine}[vm]\ndirty_bytes = \"200M\"\ndirty_background_bytes = \"100M\"\n\
                 [devices.d]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n\
                 [filesystems.f]\ndevice = \"d\"\n[jobs.dd]\nnumjobs = 2\nbs = \"1M\"\n\
                 [run]\nduration = \"20s\"\nwarmup = \"10s\"\n"
            ),
            "t.toml",
            "t",
            &[],
        )
        .unwrap()
    }

    /// A kernel summary whose first job used `cpu` CPU-s/s and the others
    /// none, with `base`'s jobs.
    fn kernel_with_cpu(base: &Summary, cpu: f64) -> Summary {
        let mut k = Summary::compute(&Observations::default());
        k.jobs = serde_json::from_value(serde_json::to_value(&base.jobs).unwrap()).unwrap();
        for j in k.jobs.iter_mut() {
            j.cpu_system = 0.0;
            j.cpu_user = 0.0;
        }
        k.jobs[0].cpu_system = cpu;
        k
    }

    /// A kernel that spent 2.5x the model's CPU time gets costs scaled by
    /// about 2.5, and the scaled model then uses the kernel's CPU time.
    #[test]
    fn cpu_calibration_matches_the_kernels_cpu_time() {
        let sc = two_dd("");
        let base = simulate(&sc, false, |_, _| {}).summary;
        let cpu = writers_cpu(&base);
        assert!(cpu > 0.0);
        let kernel = kernel_with_cpu(&base, 2.5 * cpu);
        let (k, kcpu) = cpu_scale(&[kernel], &sc, &[], None).unwrap();
        assert_eq!(kcpu, 2.5 * cpu);
        assert!((2.0..3.0).contains(&k), "k = {k}");
        let mut s = sc.clone();
        s.machine.cost = sc.machine.cost.scaled(k);
        let got = writers_cpu(&simulate(&s, false, |_, _| {}).summary);
        assert!((got / kcpu - 1.0).abs() < 0.02, "{got} vs {kcpu}");
        // nothing measured, nothing scaled
        assert!(cpu_scale(&[], &sc, &[], None).is_none());
    }

    /// A host fault cost that a probe measured is not this CPU's to scale:
    /// the calibration scales the other costs around it, and the writers
    /// then use the kernel's CPU time with the fault cost as probed.
    #[test]
    fn cpu_calibration_keeps_a_probed_fault_cost() {
        let sc =
            two_dd("[machine]\nhost_backed_free = \"0\"\n[machine.cost]\nhost_fault = \"15us\"\n");
        assert_eq!(sc.machine.host_backed_free, Some(0));
        let base = simulate(&sc, false, |_, _| {}).summary;
        let cpu = writers_cpu(&base);
        let kernel = || kernel_with_cpu(&base, 2.0 * cpu);
        let fault = sc.machine.cost.host_fault;
        let (k, kcpu) = cpu_scale(&[kernel()], &sc, &[], Some(fault)).unwrap();
        let (k_all, _) = cpu_scale(&[kernel()], &sc, &[], None).unwrap();
        // with the fault cost held, the other costs move further
        assert!(k > k_all, "{k} vs {k_all}");
        let mut s = sc.clone();
        s.machine.cost = sc.machine.cost.scaled(k);
        s.machine.cost.host_fault = fault;
        let got = writers_cpu(&simulate(&s, false, |_, _| {}).summary);
        assert!((got / kcpu - 1.0).abs() < 0.03, "{got} vs {kcpu}");
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
    fn the_first_run_settles_for_a_run_like_itself() {
        let sets = ["run.duration=30s", "devices.loop0.write_bps=200MiB/s"];
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let mut sc = Scenario::builtin(&sets).unwrap();
        // 200 MiB/s for 30 s: 6000 MiB in 4k pages, 21 halvings and one more
        let p = first_settle_pages(&sc);
        assert_eq!(p, 200 * 256 * 30);
        assert_eq!(settle_secs(p), 3 * 22);
        // no cap: as for 64 GiB
        for d in &mut sc.devices {
            d.throttle.write_bps = None;
        }
        assert_eq!(first_settle_pages(&sc), 1 << 24);
    }

    #[test]
    fn a_small_start_share_is_explained_by_the_filesystem() {
        assert_eq!(start_share_note(&[0.97, 1.0], false), None);
        let ext4 = start_share_note(&[0.06, 0.95], false).unwrap();
        assert!(
            ext4.contains("(6%, 95%)") && ext4.contains("leave the machine idle"),
            "{ext4}"
        );
        let xfs = start_share_note(&[0.06, 0.06, 0.06], true).unwrap();
        assert!(
            xfs.contains("expected on xfs") && !xfs.contains("leave the machine idle"),
            "{xfs}"
        );
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

    fn case(name: &str, rows: Vec<Row>) -> CaseScore {
        CaseScore {
            scenario: name.into(),
            kernel_runs: 3,
            sim_runs: 3,
            rows,
            notes: vec![],
        }
    }

    #[test]
    fn baseline_lists_passes_and_finds_the_lost() {
        let k = vec![summary_with(50.0), summary_with(49.0), summary_with(52.0)];
        let tol = vec![("throughput".to_string(), 2.0)];
        let good = case("a", score(&k, &[summary_with(50.5)], &tol));
        let base = baseline_text(std::slice::from_ref(&good));
        assert!(base.lines().any(|l| l == "a throughput"), "{base}");
        // untoleranced figures pass but are not listed
        assert!(!base.contains("a dirty_pages"), "{base}");
        let (lost, gained) = against_baseline(&[good], &base, "b.txt").unwrap();
        assert!(lost.is_empty() && gained.is_empty());
        let bad = case("a", score(&k, &[summary_with(60.0)], &tol));
        let (lost, _) = against_baseline(std::slice::from_ref(&bad), &base, "b.txt").unwrap();
        assert_eq!(lost.len(), 1);
        assert!(
            lost[0].starts_with("a throughput: kernel 50 [49–52], wbsim 60 (+20.0%)"),
            "{lost:?}"
        );
        // a figure passing now that the baseline does not list
        let (_, gained) = against_baseline(
            &[case("a", score(&k, &[summary_with(50.5)], &tol))],
            "# none\n",
            "b.txt",
        )
        .unwrap();
        assert_eq!(gained, vec!["a throughput".to_string()]);
        let e = against_baseline(&[bad], "a\n", "b.txt").unwrap_err();
        assert!(e.starts_with("b.txt:1: `a`: expected"), "{e}");
    }

    #[test]
    fn markdown_marks_misses_and_counts() {
        let k = vec![summary_with(50.0), summary_with(49.0), summary_with(52.0)];
        let tol = vec![("throughput".to_string(), 2.0)];
        let cases = [
            case("ok", score(&k, &[summary_with(50.5)], &tol)),
            case("miss", score(&k, &[summary_with(60.0)], &tol)),
        ];
        assert_eq!(pass_count(&cases), (2, 1));
        let s = markdown_summary(&cases);
        assert!(s.contains("| ok | 50 / 50.5 |"), "{s}");
        assert!(s.contains("| miss | **50 / 60** |"), "{s}");
        assert!(s.contains("1 of 2 figures"), "{s}");
        let f = markdown_full(&cases);
        assert!(f.contains("| ok, kernel ×3 | 50 [49–52] |"), "{f}");
        assert!(
            f.contains("- miss throughput: kernel 50 [49–52], wbsim 60 (+20.0%), tolerance ±2%"),
            "{f}"
        );
        assert_eq!(
            (fig(47360.4), fig(49.87), fig(4.98), fig(0.117), fig(0.0)),
            (
                "47360".into(),
                "49.9".into(),
                "4.98".into(),
                "0.117".into(),
                "0".into()
            )
        );
    }

    #[test]
    fn involuntary_switches_at_zero_say_why() {
        let mut k = summary_with(50.0);
        k.involuntary_cs_per_task_s.p50 = 0.5;
        let r = score(&[k], &[summary_with(50.0)], &[]);
        let r = r.iter().find(|r| r.metric == "involuntary_cs").unwrap();
        assert!(r.note.as_deref().unwrap().contains("eevdf"), "{r:?}");
        assert!(metric_note("involuntary_cs", 0.5, 0.4).is_none());
        assert!(metric_note("dirty", 5.0, 0.0).is_none());
    }

    #[test]
    fn trimming_keeps_what_scoring_reads() {
        let mut s = summary_with(50.0);
        for e in [
            "balance_dirty_pages",
            "writeback_written",
            "global_dirty_state",
        ] {
            s.trace.insert(
                e.into(),
                serde_json::from_str(r#"{"count":1,"per_s":1.0,"fields":{}}"#).unwrap(),
            );
        }
        let t = trimmed(s);
        assert_eq!(
            t.trace.keys().cloned().collect::<Vec<_>>(),
            vec!["balance_dirty_pages", "global_dirty_state"]
        );
    }

    /// A ratio threshold follows the kernel runs' dirtyable memory: with
    /// the kernel's thresh 10% under the model's, the model gets that much
    /// less dirtyable memory (more anon) and then traces the kernel's
    /// thresh; a byte threshold is left alone.
    #[test]
    fn memory_calibration_matches_the_kernels_threshold() {
        let text =
            "[machine]\nmemory = \"4G\"\n[vm]\ndirty_ratio = 2\ndirty_background_ratio = 1\n\
             [devices.d]\ntype = \"throttled\"\nwrite_bps = \"50MiB/s\"\n\
             [filesystems.f]\ndevice = \"d\"\n[jobs.dd]\nbs = \"1M\"\n\
             [run]\nduration = \"6s\"\n";
        let sc = Scenario::load_str(text, "t.toml", "t", &[]).unwrap();
        let t0 = thresh_p50(&simulate(&sc, true, |_, _| {}).summary).unwrap();
        let mut k = summary_with(50.0);
        k.trace.insert(
            "global_dirty_state".into(),
            serde_json::from_str(&format!(
                r#"{{"count":1,"per_s":1.0,"fields":{{"thresh":{{"p10":0,"p50":{},"p90":0}}}}}}"#,
                t0 * 0.9
            ))
            .unwrap(),
        );
        let (anon, kt) = memory_scale(&[k], &sc, &[]).unwrap();
        assert_eq!(kt, t0 * 0.9);
        assert!(anon > sc.machine.anon, "{anon} vs {}", sc.machine.anon);
        let mut s = sc.clone();
        s.machine.anon = anon;
        let t1 = thresh_p50(&simulate(&s, true, |_, _| {}).summary).unwrap();
        assert!((t1 / kt - 1.0).abs() < 0.005, "{t1} vs {kt}");
        let bytes =
            Scenario::load_str(text, "t.toml", "t", &["vm.dirty_bytes=100M".into()]).unwrap();
        assert!(memory_scale(&[summary_with(50.0)], &bytes, &[]).is_none());
    }

    /// Writeback on another device takes a share of the threshold, and
    /// the summary leaves that device and its writer out.
    #[test]
    fn other_writeback_takes_a_share_and_stays_outside() {
        let text = "[vm]\ndirty_bytes = \"200M\"\ndirty_background_bytes = \"100M\"\n\
             [devices.d]\ntype = \"throttled\"\nwrite_bps = \"10MiB/s\"\n\
             [filesystems.f]\ndevice = \"d\"\n[jobs.dd]\nbs = \"1M\"\n\
             [run]\nduration = \"20s\"\n";
        let alone = Scenario::load_str(text, "t.toml", "t", &[]).unwrap();
        let s = sim_summary(&alone, &[]);
        assert!(wb_share(&s).unwrap() > 0.95, "{:?}", wb_share(&s));
        let rate = other_rate(10.0 * 1048576.0, 0.5);
        assert_eq!(rate, 10.0 * 1048576.0);
        let sets = other_writeback_sets(&["dd".into()], "f", rate as u64, 20);
        let with = Scenario::load_str(text, "t.toml", "t", &sets).unwrap();
        let s = sim_summary(&with, &[OTHER.to_string()]);
        let share = wb_share(&s).unwrap();
        assert!((0.3..0.8).contains(&share), "{share}");
        assert_eq!(s.devices.len(), 1);
        assert_eq!(
            s.jobs.iter().map(|j| j.name.as_str()).collect::<Vec<_>>(),
            vec!["dd"]
        );
        assert!(s.other_bdi_lines > 0);
    }
}
