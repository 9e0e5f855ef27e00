//! TEMPORARY stub of the parser's interface (replaced by the parser).

use super::job::{FioError, FioJob};

pub struct MachineVars {
    pub pagesize: u64,
    pub ncpus: u32,
    pub mb_memory: u64,
}

pub fn parse_job_text(
    _text: &str,
    name: &str,
    _dir: Option<&std::path::Path>,
    _env: &dyn Fn(&str) -> Option<String>,
    _m: &MachineVars,
) -> Result<Vec<FioJob>, FioError> {
    Err(FioError {
        origin: name.into(),
        msg: "no parser yet".into(),
    })
}

pub fn parse_job_file(
    path: &std::path::Path,
    env: &dyn Fn(&str) -> Option<String>,
    m: &MachineVars,
) -> Result<Vec<FioJob>, FioError> {
    parse_job_text("", &path.display().to_string(), None, env, m)
}

pub fn parse_cmdline(_args: &[String], _m: &MachineVars) -> Result<Vec<FioJob>, FioError> {
    Err(FioError {
        origin: "<command line>".into(),
        msg: "no parser yet".into(),
    })
}

pub fn select_sections(jobs: Vec<FioJob>, _names: &[String]) -> Result<Vec<FioJob>, FioError> {
    Ok(jobs)
}

pub fn unsupported_reason(_job: &FioJob) -> Option<String> {
    None
}
