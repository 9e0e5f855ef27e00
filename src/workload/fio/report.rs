//! A run's fio output: the clones' statistics as fio reports them (its
//! group ids, `group_reporting`), the disks' utilisation, and the files
//! `wbsim run` and `wbsim fio` write (fio.json, fio.txt and the logs).

use super::output::{self, DiskUtil, JobReport, RunMeta};
use super::stats::JobStats;
use super::FioJob;
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
        sc.jobs = super::super::scenario::scenario_jobs(jobs, 0, 0);
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
