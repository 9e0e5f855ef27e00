//! A run's fio output: the clones' statistics as fio reports them (its
//! group ids, `group_reporting`), the disks' utilisation, and the files
//! `wbsim run` and `wbsim fio` write (fio.json, fio.txt and the logs).

use super::output::{self, DiskUtil, JobReport, RunMeta};
use super::stats::JobStats;
use super::FioJob;
use crate::kernel::Kernel;
use crate::scenario::{JobKind, Scenario};
use std::path::Path;

/// The fio version whose output wbsim writes (keys, layout, defaults).
pub const FIO_VERSION: &str = "fio-3.33";

/// The header of wbsim's fio output: fixed, so the same scenario and seed
/// give the same bytes (fio prints the wall-clock time there).
pub fn run_meta() -> RunMeta {
    RunMeta {
        fio_version: FIO_VERSION.into(),
        timestamp: 0,
        timestamp_ms: 0,
        time: "Thu Jan  1 00:00:00 1970".into(),
        global_options: Vec::new(),
    }
}

/// The fio jobs of `sc`, in order, with their group ids as fio's
/// `add_job` gives them: a job with `stonewall` or `new_group` starts the
/// next group, unless the current one has no job yet.
pub fn groupids(sc: &Scenario) -> Vec<Option<u32>> {
    let mut id = 0u32;
    let mut in_group = 0u32;
    sc.jobs
        .iter()
        .map(|j| match &j.kind {
            JobKind::Fio(f) => {
                if (f.stonewall || f.new_group) && in_group > 0 {
                    id += 1;
                    in_group = 0;
                }
                in_group += 1;
                Some(id)
            }
            _ => None,
        })
        .collect()
}

/// One report per clone, in fio's thread order (jobs in order, each
/// job's clones together): `(scenario job index, clone, stats)`.
pub fn clone_reports(sc: &Scenario, mut clones: Vec<(usize, u32, JobStats)>) -> Vec<JobReport> {
    clones.sort_by_key(|(j, c, _)| (*j, *c));
    let gids = groupids(sc);
    clones
        .into_iter()
        .filter_map(|(j, _, stats)| {
            let JobKind::Fio(f) = &sc.jobs[j].kind else {
                return None;
            };
            Some(JobReport {
                job: FioJob::clone(f),
                groupid: gids[j].unwrap_or(0),
                stats,
                error: 0,
            })
        })
        .collect()
}

/// What a run's fio jobs leave: fio's JSON, its normal output, and the
/// rest of the logs (written to `log_dir`, where the run flushed them).
pub struct FioFiles {
    pub json: String,
    pub normal: String,
    pub logs: Vec<std::path::PathBuf>,
}

/// fio's outputs for `clones` on `disks`; the logs' remainder is written
/// to `log_dir` (None: not written).
pub fn fio_files(
    sc: &Scenario,
    clones: Vec<(usize, u32, JobStats)>,
    disks: &[DiskUtil],
    log_dir: Option<&Path>,
) -> std::io::Result<FioFiles> {
    let reports = clone_reports(sc, clones);
    let logs = match log_dir {
        Some(d) => output::write_logs(d, &reports)?,
        None => Vec::new(),
    };
    let grouped = output::group_reports(reports);
    let meta = run_meta();
    Ok(FioFiles {
        json: output::json_text(&meta, &grouped, disks),
        normal: output::normal(&meta, &grouped, disks),
        logs,
    })
}

impl Kernel {
    /// Write the fio log lines buffered so far to `fio_log_dir` (called
    /// at every sample, so a per-IO log of a long run stays on disk, not
    /// in memory). The N of a file is the clone's place in fio's thread
    /// order, from 1.
    pub fn fio_flush_logs(&mut self) {
        let Some(dir) = self.fio_log_dir.clone() else {
            return;
        };
        let mut order: Vec<usize> = (0..self.fio.clones.len()).collect();
        order.sort_by_key(|&i| (self.fio.clones[i].job, self.fio.clones[i].clone));
        for (n, &ci) in order.iter().enumerate() {
            if self.fio.clones[ci].stats.log_pending() < super::stats::LOG_FLUSH_BYTES {
                continue;
            }
            let JobKind::Fio(job) = &self.sc.jobs[self.fio.clones[ci].job].kind else {
                continue;
            };
            let r = output::flush_logs(&dir, n + 1, job, &mut self.fio.clones[ci].stats);
            if let (Err(e), None) = (r, &self.fio_log_error) {
                self.fio_log_error = Some(e.to_string());
            }
        }
    }

    /// The disks' utilisation, as fio's `disk_util` reports it: every
    /// device that did IO, its /sys/block/DEV/stat counters, `in_queue`
    /// as the sum of the read and write ticks (what 6.x's diskstats
    /// prints as time_in_queue), and the busy share of the run.
    pub fn fio_disk_util(&self) -> Vec<DiskUtil> {
        let elapsed = self.now().max(1);
        let ms = |ns: u64| ns / 1_000_000;
        self.devs
            .iter()
            .filter(|d| d.stat.read_ios + d.stat.write_ios > 0)
            .map(|d| {
                let s = &d.stat;
                DiskUtil {
                    name: d.name.clone(),
                    read_ios: s.read_ios,
                    write_ios: s.write_ios,
                    read_merges: s.read_merges,
                    write_merges: s.write_merges,
                    read_ticks: ms(s.read_ticks_ns),
                    write_ticks: ms(s.write_ticks_ns),
                    in_queue: ms(s.read_ticks_ns + s.write_ticks_ns),
                    util: (s.io_ticks_ns as f64 * 100.0 / elapsed as f64).min(100.0),
                }
            })
            .collect()
    }

    /// Stop the run at the current time, as if `run.duration` had said so.
    pub fn end_run_now(&mut self) {
        let now = self.now();
        self.end = now;
        self.sc.run.duration = now;
        self.sc.run.warmup = self.sc.run.warmup.min(now);
        self.q.schedule(now, crate::kernel::Ev::End);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc_with(flags: &[(bool, bool)]) -> Scenario {
        let mut sc = Scenario::builtin(&[]).unwrap();
        let jobs = flags
            .iter()
            .enumerate()
            .map(|(i, &(stonewall, new_group))| {
                let mut f = FioJob::new(&format!("j{i}"), "t.fio:1");
                f.stonewall = stonewall;
                f.new_group = new_group;
                f
            })
            .collect();
        sc.jobs = super::super::scenario::scenario_jobs(jobs, 0, 0, None, &[]).expect("jobs");
        sc
    }

    #[test]
    fn group_ids_follow_fios_add_job() {
        // the first job's new_group starts nothing: its group is empty
        let sc = sc_with(&[(false, true), (false, false), (true, false), (false, true)]);
        assert_eq!(groupids(&sc), vec![Some(0), Some(0), Some(1), Some(2)]);
    }

    #[test]
    fn clones_are_reported_in_thread_order() {
        let sc = sc_with(&[(false, false), (false, true)]);
        let st = |n: u64| {
            let mut s = JobStats::new(0, Default::default());
            s.add_io(super::super::Dir::Write, n, 0, 0, None, 10);
            s
        };
        let r = clone_reports(&sc, vec![(1, 0, st(3)), (0, 1, st(2)), (0, 0, st(1))]);
        let got: Vec<_> = r
            .iter()
            .map(|r| (r.job.name.clone(), r.groupid, r.stats.io_bytes[1]))
            .collect();
        assert_eq!(
            got,
            vec![
                ("j0".into(), 0, 1),
                ("j0".into(), 0, 2),
                ("j1".into(), 1, 3)
            ]
        );
    }
}

/// One direction of a [`FioSummary`]: its IOs and their completion
/// latency (fio's `clat`), µs.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct FioDirSummary {
    pub ios: u64,
    pub clat_p50_us: f64,
    pub clat_p99_us: f64,
    pub clat_max_us: f64,
}

/// A fio job's figures in summary.json (`fio`): its clones together, per
/// direction that did IO, the completion latency percentiles from fio's
/// histogram (`calc_clat_percentiles`, as fio.json's `clat_ns`
/// percentiles) over the whole job.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, PartialEq)]
pub struct FioSummary {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub read: Option<FioDirSummary>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub write: Option<FioDirSummary>,
}

/// summary.json's `fio`, in the scenario's job order.
pub fn fio_summary(sc: &Scenario, clones: &[super::engine::FioClone]) -> Vec<FioSummary> {
    let us = |ns: u64| (ns as f64 / 100.0).round() / 10.0;
    let mut out = Vec::new();
    for (j, job) in sc.jobs.iter().enumerate() {
        if !matches!(job.kind, JobKind::Fio(_)) {
            continue;
        }
        let dir = |d: usize| {
            let mut h = super::stats::Hist::default();
            let (mut ios, mut max) = (0, 0);
            for c in clones.iter().filter(|c| c.job == j) {
                h.merge(&c.stats.clat_hist[d]);
                ios += c.stats.clat[d].samples;
                max = max.max(c.stats.clat[d].max);
            }
            (ios > 0).then(|| {
                let p = h.percentiles(ios, &[50.0, 99.0]);
                FioDirSummary {
                    ios,
                    clat_p50_us: us(p[0]),
                    clat_p99_us: us(p[1]),
                    clat_max_us: us(max),
                }
            })
        };
        out.push(FioSummary {
            name: job.name.clone(),
            read: dir(0),
            write: dir(1),
        });
    }
    out
}
