//! Running a scenario and writing its output directory: `trace.txt`,
//! `summary.json`, `vmstat`, and `wall.json` (wall-clock figures, kept
//! apart so that the other files are byte-identical for a scenario and seed).

use crate::kernel::Kernel;
use crate::metrics::Summary;
use crate::mm::page_writeback::domain_dirty_limits;
use crate::scenario::Scenario;
use crate::trace::Tracer;
use std::path::Path;
use std::time::Instant;

pub struct RunResult {
    pub summary: Summary,
    /// fs_mark's own output lines (empty without fs_mark jobs).
    pub fs_mark: String,
    /// The trace, when it was kept in memory; empty when it was streamed
    /// to the output directory (`trace_streamed`).
    pub trace_text: String,
    /// `trace.txt` is already written in the output directory.
    pub trace_streamed: bool,
    /// The run was stopped at this simulated time (ns), and why: "SIGINT"
    /// or "trace limit".
    pub stopped_at: Option<u64>,
    pub stopped_by: Option<&'static str>,
    /// A device its filesystem filled (the run stopped there, unless it
    /// was allowed to run on): its name.
    pub full_device: Option<String>,
    pub vmstat: String,
    /// Files of the workloads' own (fio.json, fio.txt): name and bytes.
    pub extra_files: Vec<(String, Vec<u8>)>,
    /// Files the run already wrote into the output directory as it went
    /// (fio's logs).
    pub written: Vec<std::path::PathBuf>,
    pub wall_s: f64,
    pub sim_s: f64,
    pub events: u64,
}

/// How to run a simulation beyond its scenario.
#[derive(Clone, Debug, Default)]
pub struct SimOpts {
    /// Turn the trace buffer on.
    pub trace: bool,
    /// Where fio's log files go (written as the run goes); None: not
    /// written.
    pub fio_log_dir: Option<std::path::PathBuf>,
    /// End the run once every fio job is done (`wbsim fio`).
    pub end_when_fio_done: bool,
    /// Write `trace.txt` into this directory as the run goes, instead of
    /// keeping the trace in memory.
    pub trace_dir: Option<std::path::PathBuf>,
    /// Stop the run where it is once this is set (SIGINT).
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Stop the run where it is once its trace is larger than this many
    /// bytes.
    pub trace_limit: Option<u64>,
    /// Run on when a filesystem fills its device (`--force`).
    pub allow_full_device: bool,
    /// Devices and jobs (by name) that stand for the machine's other work:
    /// they run, but the summary leaves them out as live mode leaves out
    /// what is not the scenario's (their bdis' trace lines count as
    /// `other_bdi_lines`, their tasks are no job's, their device is not
    /// listed). `wbsim fidelity` adds such a writer for the other devices'
    /// writeback the kernel runs shared their machine with.
    pub outside: Vec<String>,
}

/// The trace a run may write before it stops, unless forced (`--force`):
/// 2 GiB.
pub const TRACE_LIMIT: u64 = 2 << 30;

/// Simulate `sc` to the end. `trace` turns the trace buffer on.
pub fn simulate(sc: &Scenario, trace_on: bool, progress: impl FnMut(f64, f64)) -> RunResult {
    let opts = SimOpts {
        trace: trace_on,
        ..Default::default()
    };
    match simulate_with(sc, &opts, progress) {
        Ok(r) => r,
        Err(e) => unreachable!("no file is written without a log directory: {e}"),
    }
}

/// Simulate `sc` to the end with `opts`; an error writing fio's logs.
pub fn simulate_with(
    sc: &Scenario,
    opts: &SimOpts,
    mut progress: impl FnMut(f64, f64),
) -> Result<RunResult, String> {
    let t0 = Instant::now();
    let mut tracer = if opts.trace {
        Tracer::new(&sc.trace.events)
    } else {
        Tracer::disabled()
    };
    // the summary's window: the run may end sooner (`wbsim fio`, SIGINT),
    // never later
    tracer.stats = crate::metrics::TraceStats::new((sc.run.warmup, sc.run.duration), None);
    let streamed = match (&opts.trace_dir, opts.trace) {
        (Some(dir), true) => {
            let path = dir.join("trace.txt");
            tracer
                .stream_into(&path, sc.machine.cpus, sc.run.duration)
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
            Some(path)
        }
        _ => None,
    };
    let mut k = Kernel::new(sc.clone(), tracer);
    k.fio_log_dir = opts.fio_log_dir.clone();
    k.fio_end_when_done = opts.end_when_fio_done;
    k.stop = opts.stop.clone();
    k.trace_limit = opts.trace_limit;
    k.full_device_stops = !opts.allow_full_device;
    k.run(|now, end| progress(now as f64 / 1e9, end as f64 / 1e9));
    let trace_streamed = match &streamed {
        Some(path) => {
            k.tracer
                .finish_file()
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
            true
        }
        None => false,
    };
    if let Some(e) = k.fio_log_error.take() {
        return Err(format!("writing fio's logs: {e}"));
    }
    let mut extra_files = Vec::new();
    let mut written = Vec::new();
    if !k.fio.clones.is_empty() {
        let disks = k.fio_disk_util();
        let f = crate::workload::fio::report::fio_files(
            &k.sc,
            k.fio_reports(),
            &disks,
            opts.fio_log_dir.as_deref(),
        )
        .map_err(|e| format!("writing fio's logs: {e}"))?;
        extra_files.push(("fio.json".to_string(), f.json.into_bytes()));
        extra_files.push(("fio.txt".to_string(), f.normal.into_bytes()));
        written = f.logs;
    }
    // /proc/diskstats once a second
    extra_files.push((
        "diskstats".to_string(),
        std::mem::take(&mut k.rec.diskstats).into_bytes(),
    ));
    // the zones at the end of the run (/proc/zoneinfo's modelled lines)
    extra_files.push((
        "zoneinfo".to_string(),
        k.zones.render_zoneinfo().into_bytes(),
    ));
    extra_files.extend(k.bcache_files());
    if k.cg.enabled {
        extra_files.extend(k.cgroup_files());
    }
    if let Some(x) = k.xfs_icache_stats() {
        extra_files.push(("xfs_stat".to_string(), x.into_bytes()));
    }
    if let Some(r) = k.reclaim_file() {
        extra_files.push(("reclaim.txt".to_string(), r.into_bytes()));
    }
    if k.simoop.is_some() {
        extra_files.push(("simoop.txt".to_string(), k.simoop_output().into_bytes()));
    }
    // /proc/pressure/memory and io each sample interval
    let pressure = std::mem::take(&mut k.psi.text);
    let pressure_summary = k.psi.readings.summary();
    extra_files.push(("pressure.txt".to_string(), pressure.into_bytes()));
    if !k.evcount.is_empty() {
        eprintln!("events by kind: {:?}", k.evcount);
    }
    let trace_text = if trace_streamed {
        String::new()
    } else {
        k.tracer.render(sc.machine.cpus)
    };
    let stats = std::mem::take(&mut k.tracer.stats);
    let mut obs = k.observations(stats);
    if !opts.outside.is_empty() {
        let out = |n: &String| opts.outside.contains(n);
        obs.bdis = k
            .bdis
            .iter()
            .filter(|b| !out(&k.devs[b.dev].name))
            .map(|b| b.name.clone())
            .collect();
        obs.tasks.retain(|t| !t.job.as_ref().is_some_and(out));
        obs.devices.retain(|d| !out(&d.name));
    }
    let mut summary = Summary::compute(&obs);
    summary.simoop = k.simoop_summary();
    summary.pressure = pressure_summary;
    summary.bcache = k.bcache_summary();
    summary.fio = crate::workload::fio::report::fio_summary(&k.sc, &k.fio.clones);
    let (thresh, bg) =
        domain_dirty_limits(&sc.vm, sc.machine.page_size, k.global_dirtyable_memory());
    let vmstat = k.vm.render(thresh, bg);
    let fs_mark = k.fs_mark_output();
    let wall_s = t0.elapsed().as_secs_f64();
    Ok(RunResult {
        summary,
        fs_mark,
        trace_text,
        trace_streamed,
        stopped_at: k.stopped_at,
        stopped_by: k.stopped_by,
        full_device: k.full_device().map(|d| k.sc.devices[d].name.clone()),
        vmstat,
        extra_files,
        written,
        wall_s,
        // the run may have ended early (`wbsim fio`)
        sim_s: k.sc.run.duration as f64 / 1e9,
        events: k.events_simulated(),
    })
}

pub fn write_outputs(dir: &Path, r: &RunResult) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    if !r.trace_streamed {
        std::fs::write(dir.join("trace.txt"), &r.trace_text)?;
    }
    let mut js = serde_json::to_string_pretty(&r.summary).expect("summary serialises");
    js.push('\n');
    std::fs::write(dir.join("summary.json"), js)?;
    std::fs::write(dir.join("vmstat"), &r.vmstat)?;
    if !r.fs_mark.is_empty() {
        std::fs::write(dir.join("fs_mark.txt"), &r.fs_mark)?;
    }
    for (name, bytes) in &r.extra_files {
        if let Some(parent) = dir.join(name).parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(dir.join(name), bytes)?;
    }
    let wall = serde_json::json!({
        "wall_time_s": r.wall_s,
        "simulated_s": r.sim_s,
        "sim_seconds_per_wall_second": r.sim_s / r.wall_s.max(1e-9),
        "events_simulated": r.events,
    });
    std::fs::write(
        dir.join("wall.json"),
        serde_json::to_string_pretty(&wall).expect("json") + "\n",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_whose_trace_passes_its_limit_stops_there_and_keeps_it() {
        let dir = std::env::temp_dir().join(format!("wbsim-tlimit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sc = Scenario::builtin(&[]).unwrap();
        let opts = SimOpts {
            trace: true,
            trace_dir: Some(dir.clone()),
            trace_limit: Some(200_000),
            ..Default::default()
        };
        let r = simulate_with(&sc, &opts, |_, _| {}).unwrap();
        assert_eq!(r.stopped_by, Some("trace limit"));
        let t = r.stopped_at.unwrap();
        assert!(t > 0 && t < sc.run.duration, "{t}");
        assert!(r.trace_streamed && r.trace_text.is_empty());
        write_outputs(&dir, &r).unwrap();
        let trace = std::fs::read_to_string(dir.join("trace.txt")).unwrap();
        // the limit is checked every few thousand events: a little over
        assert!(
            trace.len() > 200_000 && trace.len() < 2_000_000,
            "{}",
            trace.len()
        );
        let s: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
        assert_eq!(s["stopped_by"], "trace limit");
        assert_eq!(s["duration_s"], s["stopped_at_s"]);
        // the same run in memory and streamed: the same summary and trace
        let m = simulate_with(
            &sc,
            &SimOpts {
                trace: true,
                ..Default::default()
            },
            |_, _| {},
        )
        .unwrap();
        let full = simulate_with(
            &sc,
            &SimOpts {
                trace: true,
                trace_dir: Some(dir.clone()),
                ..Default::default()
            },
            |_, _| {},
        )
        .unwrap();
        assert!(full.stopped_at.is_none());
        assert_eq!(
            serde_json::to_string(&m.summary).unwrap(),
            serde_json::to_string(&full.summary).unwrap()
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("trace.txt")).unwrap(),
            m.trace_text
        );
        // past the lines held before their place in the file is chosen, the
        // bytes of the lines the writer thread formats are known a few
        // chunks late, but at the same point whatever the threads' timing:
        // a run stops at the same time each time
        let limited = SimOpts {
            trace: true,
            trace_dir: Some(dir.clone()),
            trace_limit: Some(3_000_000),
            ..Default::default()
        };
        let many = Scenario::builtin(&[
            "jobs.dd.numjobs=100".to_string(),
            "jobs.dd.bs=4k".to_string(),
            "run.duration=10s".to_string(),
        ])
        .unwrap();
        let stops: Vec<_> = (0..3)
            .map(|_| {
                let r = simulate_with(&many, &limited, |_, _| {}).unwrap();
                assert_eq!(r.stopped_by, Some("trace limit"));
                let len = std::fs::metadata(dir.join("trace.txt")).unwrap().len();
                (r.stopped_at, len)
            })
            .collect();
        assert!(stops.iter().all(|s| *s == stops[0]), "{stops:?}");
        assert!(
            stops[0].1 > 3_000_000 && stops[0].1 < 6_000_000,
            "{stops:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_run_that_fills_its_device_stops_there() {
        let sc = Scenario::builtin(&["devices.loop0.size=100M".to_string()]).unwrap();
        let r = simulate(&sc, false, |_, _| {});
        assert_eq!(r.stopped_by, Some("device full"));
        assert_eq!(r.full_device.as_deref(), Some("loop0"));
        assert!(r.summary.stopped_at_s.unwrap() < 60.0);
        // the default's 5 GiB holds its 3 GB
        let sc = Scenario::builtin(&[]).unwrap();
        assert_eq!(simulate(&sc, false, |_, _| {}).stopped_by, None);
    }
}
