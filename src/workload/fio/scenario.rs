//! `[jobs.NAME] type = "fio"`: a scenario job that runs fio job files.
//!
//! The jobs come from a job file (`file`), an inline job file (`job`) or
//! fio's command line (`cmdline`); `section` keeps some of its sections,
//! as `fio --section` does. Each fio job becomes one scenario job (its
//! `numjobs` clones are its tasks); its files go on the scenario job's
//! `filesystem`, whatever `directory=` says, and `filename=/dev/NAME` names
//! the scenario's device NAME.

use super::parse::{self, MachineVars};
use super::FioJob;
use crate::scenario::raw::{err, Origin, ScenarioError};
use crate::scenario::{Device, Filesystem, Job, JobKind, Machine, Reader};

/// The values fio expands itself (`$pagesize`, `$ncpus`, `$mb_memory`),
/// from the simulated machine.
pub fn machine_vars(m: &Machine) -> MachineVars {
    MachineVars {
        pagesize: m.page_size,
        ncpus: m.cpus,
        mb_memory: m.memory >> 20,
    }
}

/// `${VAR}` in a job file: the environment, as fio reads it.
pub fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A path written in the scenario, relative to the scenario file's
/// directory (to the current directory for `--set`).
fn relative_to(origin: &Origin, p: &str) -> std::path::PathBuf {
    let p = std::path::Path::new(p);
    match origin {
        Origin::File { file, .. } if p.is_relative() => std::path::Path::new(file)
            .parent()
            .map(|d| d.join(p))
            .unwrap_or_else(|| p.to_path_buf()),
        _ => p.to_path_buf(),
    }
}

/// A scenario error at `origin` from a job-file error (which carries its
/// own FILE:LINE).
fn fio_err(origin: &Origin, e: super::FioError) -> ScenarioError {
    ScenarioError {
        origin: origin.clone(),
        msg: format!("fio: {e}"),
    }
}

/// Check that the engine can simulate every job (`engine::check_job`):
/// the one-line reason otherwise.
pub fn check_jobs(
    jobs: &[FioJob],
    devices: &[Device],
    filesystems: &[Filesystem],
) -> Result<(), String> {
    for j in jobs {
        super::engine::check_job(devices, filesystems, j)?;
    }
    Ok(())
}

/// The scenario jobs of a list of fio jobs: one each, on `filesystem`,
/// starting at `start`, in a cgroup: the scenario job's `cgroup` key if
/// given (`given`: its index and origin), else the cgroup fio's `cgroup=`
/// names if the scenario defines it (`[cgroups.NAME]`), else the root.
/// fio would create a cgroup it names that does not exist; wbsim runs such
/// a job in the root, so that job files written for a machine with cgroups
/// run unchanged in a scenario without them.
pub fn scenario_jobs(
    fio: Vec<FioJob>,
    filesystem: usize,
    start: crate::sim::Ns,
    given: Option<&(usize, Origin)>,
    cgroups: &[crate::kernel::cgroup::CgroupConf],
) -> Result<Vec<Job>, ScenarioError> {
    Ok(fio
        .into_iter()
        .map(|f| {
            let cgroup = match (given, f.cgroup.as_deref()) {
                (Some((c, _)), _) => *c,
                (None, Some(name)) => {
                    let n = name.trim().trim_matches('/');
                    cgroups
                        .iter()
                        .position(|c| c.name == n)
                        .map_or(0, |i| i + 1)
                }
                (None, None) => 0,
            };
            Job {
                name: f.name.clone(),
                filesystem,
                numjobs: f.numjobs,
                start,
                runtime: f.runtime,
                cgroup,
                kind: JobKind::Fio(Box::new(f)),
            }
        })
        .collect())
}

/// Read `[jobs.NAME]` of `type = "fio"`: its jobs, in the file's order.
pub(crate) fn read_job(
    r: &mut Reader,
    jname: &str,
    jorigin: &Origin,
    machine: &Machine,
    devices: &[Device],
    filesystems: &[Filesystem],
) -> Result<Vec<FioJob>, ScenarioError> {
    let p = |k: &str| format!("jobs.{jname}.{k}");
    let m = machine_vars(machine);
    let file = r.string(&p("file"), "a job file's path")?;
    let inline = r.string(&p("job"), "a job file's text")?;
    let cmdline = r.string(&p("cmdline"), "fio's command-line options")?;
    let given = [&file, &inline, &cmdline]
        .iter()
        .filter(|x| x.is_some())
        .count();
    if given != 1 {
        let o = [&file, &inline, &cmdline]
            .iter()
            .filter_map(|x| x.as_ref().map(|(_, e)| e.origin.clone()))
            .nth(1)
            .unwrap_or_else(|| jorigin.clone());
        return err(
            &o,
            format!(
                "fio job `{jname}` needs exactly one of `file` (a job file), `job` (its text) or `cmdline` (fio's options)"
            ),
        );
    }
    let (jobs, origin) = if let Some((f, e)) = file {
        let path = relative_to(&e.origin, &f);
        let jobs =
            parse::parse_job_file(&path, &env_lookup, &m).map_err(|x| fio_err(&e.origin, x))?;
        (jobs, e.origin)
    } else if let Some((text, e)) = inline {
        let name = format!("{}(jobs.{jname}.job)", e.origin);
        let dir = match &e.origin {
            Origin::File { file, .. } => {
                std::path::Path::new(file).parent().map(|d| d.to_path_buf())
            }
            _ => None,
        };
        let jobs = parse::parse_job_text(&text, &name, dir.as_deref(), &env_lookup, &m)
            .map_err(|x| fio_err(&e.origin, x))?;
        (jobs, e.origin)
    } else if let Some((c, e)) = cmdline {
        let args: Vec<String> = c.split_whitespace().map(String::from).collect();
        let jobs = parse::parse_cmdline(&args, &m).map_err(|x| fio_err(&e.origin, x))?;
        (jobs, e.origin)
    } else {
        unreachable!("one source was checked above")
    };
    let jobs = match r.string(&p("section"), "section names, comma-separated")? {
        Some((s, e)) => {
            let names: Vec<String> = s.split(',').map(|x| x.trim().to_string()).collect();
            parse::select_sections(jobs, &names).map_err(|x| fio_err(&e.origin, x))?
        }
        None => jobs,
    };
    if jobs.is_empty() {
        return err(
            &origin,
            format!("fio job `{jname}`: the job file defines no job"),
        );
    }
    check_jobs(&jobs, devices, filesystems).map_err(|m| ScenarioError {
        origin: origin.clone(),
        msg: m,
    })?;
    Ok(jobs)
}
