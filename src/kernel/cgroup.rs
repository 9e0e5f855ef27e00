//! Control groups (kernel/cgroup, cgroup v2): the scenario's `[cgroups.NAME]`
//! one level under the root, each with its memory controller's limits
//! (`memory.max`, `memory.high`), its IO controllers' settings (`io.weight`,
//! `io.bfq.weight`: kept for the proportional controllers, which are not
//! built yet; `io.max`: blk-throttle's rule for the cgroup on a device) and
//! the identity the kernel prints (`cgroup_ino`, the css id).
//!
//! The root cgroup is index 0 everywhere (`cgroup_ino` 1, memcg id 1); the
//! scenario's cgroups follow in the file's order. A job joins one with
//! `jobs.NAME.cgroup` (fio's `cgroup=`); kernel threads stay in the root.
//! A scenario without `[cgroups]` runs entirely in the root, as before.
//!
//! The run-time state (`Cgroups`) is the memory cgroup's counters
//! (mm/memcontrol.rs: `memory.stat`'s `file`, `file_dirty`,
//! `file_writeback`), its `wb_domain`, its foreign-writeback records and
//! the blkcg's `io.stat`.

use crate::kernel::{DevId, InodeId, Kernel, Pid};
use crate::mm::page_writeback::WbDomain;
use crate::scenario::raw::err;
use crate::scenario::{Device, Origin, ScenarioError};
use std::collections::BTreeMap;

/// The `cgroup_ino` of the first cgroup a scenario makes: kernfs numbers
/// a booted system's cgroup directories in the thousands; wbsim gives
/// the scenario's cgroups consecutive numbers from here, in file order.
pub const FIRST_CGROUP_INO: u64 = 4001;

/// One device's line of a cgroup's `io.max` (None: `max`, no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoMax {
    pub rbps: Option<u64>,
    pub wbps: Option<u64>,
    pub riops: Option<u64>,
    pub wiops: Option<u64>,
}

impl IoMax {
    pub fn any(&self) -> bool {
        self.rbps.is_some() || self.wbps.is_some() || self.riops.is_some() || self.wiops.is_some()
    }
}

/// `[cgroups.NAME]`: a cgroup under the root.
#[derive(Clone, Debug)]
pub struct CgroupConf {
    pub name: String,
    /// `memory.max` and `memory.high` in bytes (None: `max`).
    pub memory_max: Option<u64>,
    pub memory_high: Option<u64>,
    /// `io.weight` (1–10000, default 100) and `io.bfq.weight` (1–1000,
    /// default 100): io.cost's and BFQ's group weights.
    pub io_weight: u32,
    pub bfq_weight: u32,
    /// cgroup v1's `blkio.weight` (10–1000, default 500): CFQ's group
    /// weight (`queue.scheduler = "cfq"`).
    pub blkio_weight: u32,
    /// `io.max`, by device (index in `Scenario::devices`).
    pub io_max: Vec<(DevId, IoMax)>,
}

/// The keys under `cgroups.NAME`.
pub const CGROUP_KEYS: &[&str] = &[
    "memory.max",
    "memory.high",
    "io.weight",
    "io.bfq.weight",
    "blkio.weight",
];
/// The keys under `cgroups.NAME.io.max.DEV`.
pub const IO_MAX_KEYS: &[&str] = &["rbps", "wbps", "riops", "wiops"];

/// Consume `path` if it is "max" (no limit), as cgroup files take it.
fn take_max(r: &mut crate::scenario::Reader, path: &str) -> bool {
    let is_max =
        r.raw.entries.get(path).is_some_and(
            |e| matches!(&e.val, crate::scenario::RawVal::Str(s) if s.trim() == "max"),
        );
    if is_max {
        r.take(path);
    }
    is_max
}

/// A `memory.max`-style value: a size, or "max".
fn mem_limit(r: &mut crate::scenario::Reader, path: &str) -> Result<Option<u64>, ScenarioError> {
    if take_max(r, path) {
        return Ok(None);
    }
    match r.size(path)? {
        Some((0, e)) => err(
            &e.origin,
            format!("`{path}` = 0 leaves the cgroup no memory; expected a size such as \"512M\", or \"max\""),
        ),
        Some((v, _)) => Ok(Some(v)),
        None => Ok(None),
    }
}

/// `[cgroups.NAME]` tables, in the file's order.
pub(crate) fn read_cgroups(
    r: &mut crate::scenario::Reader,
    devices: &[Device],
) -> Result<Vec<CgroupConf>, ScenarioError> {
    let mut out: Vec<CgroupConf> = Vec::new();
    let mut names = r.raw.names_under("cgroups");
    // the file's order (a `--set` one after them)
    names.sort_by_key(|(_, o)| match o {
        Origin::File { line, .. } => *line,
        _ => usize::MAX,
    });
    for (name, origin) in names {
        if name == "root" || name.is_empty() || name.contains('/') {
            return err(
                &origin,
                format!("cgroup name `{name}` is reserved or not a directory name; expected a name such as \"A\""),
            );
        }
        let p = |k: &str| format!("cgroups.{name}.{k}");
        let memory_max = mem_limit(r, &p("memory.max"))?;
        let memory_high = mem_limit(r, &p("memory.high"))?;
        let io_weight = r
            .uint(&p("io.weight"), 1, 10000)?
            .map_or(100, |x| x.0 as u32);
        let bfq_weight = r
            .uint(&p("io.bfq.weight"), 1, 1000)?
            .map_or(100, |x| x.0 as u32);
        let blkio_weight = r
            .uint(&p("blkio.weight"), 10, 1000)?
            .map_or(500, |x| x.0 as u32);
        let mut io_max = Vec::new();
        for (dev, dorigin) in r.raw.names_under(&p("io.max")) {
            let Some(d) = devices.iter().position(|x| x.name == dev) else {
                let list: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
                return err(
                    &dorigin,
                    format!(
                        "`cgroups.{name}.io.max.{dev}` names device `{dev}`, which is not defined; expected one of {list:?}"
                    ),
                );
            };
            let q = |k: &str| format!("cgroups.{name}.io.max.{dev}.{k}");
            let mut m = IoMax::default();
            for k in IO_MAX_KEYS {
                take_max(r, &q(k));
            }
            for (k, slot) in [("rbps", &mut m.rbps), ("wbps", &mut m.wbps)] {
                if let Some((v, e)) = r.rate(&q(k))? {
                    if v == 0 {
                        return err(&e.origin, format!("`{}` must be > 0; expected a rate such as \"10MiB/s\" (leave it out for `max`)", q(k)));
                    }
                    *slot = Some(v);
                }
            }
            for (k, slot) in [("riops", &mut m.riops), ("wiops", &mut m.wiops)] {
                if let Some((v, _)) = r.uint(&q(k), 1, u32::MAX as u64)? {
                    *slot = Some(v);
                }
            }
            if m.any() {
                io_max.push((d, m));
            }
        }
        out.push(CgroupConf {
            name,
            memory_max,
            memory_high,
            io_weight,
            bfq_weight,
            blkio_weight,
            io_max,
        });
    }
    Ok(out)
}

/// The cgroup a job names (`jobs.NAME.cgroup`, fio's `cgroup=`): its index
/// (0: the root, also for `"/"` or `""`).
pub(crate) fn resolve(
    cgroups: &[CgroupConf],
    name: &str,
    origin: &Origin,
    what: &str,
) -> Result<usize, ScenarioError> {
    let n = name.trim().trim_start_matches('/').trim_end_matches('/');
    if n.is_empty() {
        return Ok(0);
    }
    match cgroups.iter().position(|c| c.name == n) {
        Some(i) => Ok(i + 1),
        None => {
            let list: Vec<&str> = cgroups.iter().map(|c| c.name.as_str()).collect();
            err(
                origin,
                format!(
                    "{what} names cgroup `{name}`, which is not defined; expected one of {list:?} (a [cgroups.NAME] table), or \"/\" for the root"
                ),
            )
        }
    }
}

/// One device's `io.stat` line of a cgroup.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStat {
    pub rbytes: u64,
    pub wbytes: u64,
    pub rios: u64,
    pub wios: u64,
}

/// `struct memcg_cgwb_frn`: a record of a foreign wb this memcg dirtied
/// pages for (`mem_cgroup_track_foreign_dirty_slowpath`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MemcgFrn {
    pub bdi_id: u64,
    pub memcg_id: u32,
    /// jiffies_64 of the record (0: free).
    pub at: u64,
    /// A flush it started is in flight (`frn->done.cnt` > 1).
    pub in_flight: bool,
}

/// `MEMCG_CGWB_FRN_CNT`.
pub const MEMCG_CGWB_FRN_CNT: usize = 4;

/// A cgroup at run time.
#[derive(Clone, Debug, Default)]
pub struct Cgroup {
    pub name: String,
    /// `cgroup_ino` as the tracepoints print it (kernfs inode; root 1).
    pub ino: u64,
    /// The memcg's css id (`memcg_id` in tracepoints; root 1).
    pub id: u32,
    pub memory_max: Option<u64>,
    pub memory_high: Option<u64>,
    // memory.stat, in pages
    /// `file`: page-cache pages charged to the memcg.
    pub file: u64,
    pub file_dirty: u64,
    pub file_writeback: u64,
    /// `pgsteal`: pages the memcg's own reclaim (under `memory.max` /
    /// `memory.high`) freed. It scans only clean inactive pages, each of
    /// which it frees, so `pgscan` is the same count.
    pub pgsteal: u64,
    /// The inodes the memcg dirtied first, in that order, and where its
    /// reclaim last found clean pages among them.
    pub own_inodes: Vec<crate::kernel::InodeId>,
    pub reclaim_cursor: usize,
    /// The memcg's `wb_domain` (`memcg->cgwb_domain`).
    pub dom: WbDomain,
    /// `memcg->cgwb_frn[]`.
    pub frn: [MemcgFrn; MEMCG_CGWB_FRN_CNT],
    /// `io.stat` per device (index in `Kernel::devs`).
    pub io: Vec<IoStat>,
}

/// Per-inode cgroup-writeback state (wbsim keeps it beside the inode, only
/// for inodes a run with cgroups dirtied): the `i_wb_frn_*` fields and,
/// as there are no per-page objects, whose pages the inode's dirty and
/// writeback pages are. A page belongs to the memcg that dirtied it from
/// clean; the counts are kept oldest dirtier first.
#[derive(Clone, Debug, Default)]
pub struct InodeCg {
    pub frn_winner: u32,
    pub frn_avg_time: u16,
    pub frn_history: u16,
    /// Dirty pages by memcg (cgroup index, pages), oldest first.
    pub dirty_by: Vec<(usize, u64)>,
    /// Pages under writeback by memcg, in the order they started.
    pub wb_by: Vec<(usize, u64)>,
    /// The cgroup of the inode's first dirtier (what a 2011 blkio-track
    /// record of its pages would say when one task writes the file).
    pub dirtier: usize,
    /// The flusher's round on the inode, while it runs.
    pub wbc: Option<crate::fs::cgroup_writeback::Wbc>,
}

/// Take `n` pages from the front of a by-memcg list; returns what was taken.
pub fn take_front(list: &mut Vec<(usize, u64)>, mut n: u64) -> Vec<(usize, u64)> {
    let mut out: Vec<(usize, u64)> = Vec::new();
    while n > 0 && !list.is_empty() {
        let (cg, have) = list[0];
        let k = have.min(n);
        n -= k;
        add_back(&mut out, cg, k);
        if k == have {
            list.remove(0);
        } else {
            list[0].1 -= k;
        }
    }
    out
}

/// Add `n` pages of memcg `cg` at the back of a by-memcg list.
pub fn add_back(list: &mut Vec<(usize, u64)>, cg: usize, n: u64) {
    if n == 0 {
        return;
    }
    match list.last_mut() {
        Some((c, k)) if *c == cg => *k += n,
        _ => list.push((cg, n)),
    }
}

/// All cgroups, the root first, and the cgroup-writeback state.
#[derive(Debug, Default)]
pub struct Cgroups {
    /// The scenario has cgroups: cgroup writeback and the per-cgroup
    /// accounting run (off, the machine runs as before, all in the root).
    pub enabled: bool,
    pub list: Vec<Cgroup>,
    pub inodes: BTreeMap<InodeId, InodeCg>,
}

impl Kernel {
    /// The cgroups at boot: the root and the scenario's.
    pub fn cgroup_init(&mut self) {
        let ndev = self.sc.devices.len();
        let mut list = vec![Cgroup {
            name: "/".into(),
            ino: 1,
            id: 1,
            io: vec![IoStat::default(); ndev],
            ..Default::default()
        }];
        for (i, c) in self.sc.cgroups.iter().enumerate() {
            list.push(Cgroup {
                name: c.name.clone(),
                ino: FIRST_CGROUP_INO + i as u64,
                id: 2 + i as u32,
                memory_max: c.memory_max.map(|b| b / self.sc.machine.page_size),
                memory_high: c.memory_high.map(|b| b / self.sc.machine.page_size),
                io: vec![IoStat::default(); ndev],
                ..Default::default()
            });
        }
        self.cg.enabled = !self.sc.cgroups.is_empty();
        if self.cg.enabled {
            // each cgroup's pressure (`psi_cgroup_alloc`), the root's the
            // system's
            let p = super::psi::Psi::new(self.cpus.len(), self.sc.machine.hz);
            self.psi.groups = vec![p; list.len()];
        }
        self.cg.list = list;
    }

    /// The cgroup a task runs in (kernel threads: the root).
    #[inline]
    pub fn task_cgroup(&self, pid: Pid) -> usize {
        match self.tasks[pid].job {
            Some(j) => self.sc.jobs[j].cgroup,
            None => 0,
        }
    }

    /// `cgroup_ino` of a cgroup index.
    #[inline]
    pub fn cgroup_ino(&self, cg: usize) -> u64 {
        self.cg.list.get(cg).map_or(1, |c| c.ino)
    }

    /// The index of the cgroup whose memcg css id is `id`.
    pub fn cgroup_by_id(&self, id: u32) -> Option<usize> {
        self.cg.list.iter().position(|c| c.id == id)
    }

    /// Each cgroup's `io.stat` and `memory.stat` at the end of a run, as
    /// output files `cgroup/NAME/io.stat` and `cgroup/NAME/memory.stat`
    /// (the root's under `cgroup/`), in the kernel's formats: io.stat a
    /// line per device it did IO on (`MAJ:MIN rbytes= wbytes= rios= wios=
    /// dbytes= dios=`), memory.stat the page-cache lines wbsim keeps, in
    /// bytes; and `io.pressure` and `memory.pressure` as they read now.
    pub fn cgroup_files(&mut self) -> Vec<(String, Vec<u8>)> {
        let ps = self.page_size();
        let mut out = Vec::new();
        for ci in 0..self.cg.list.len() {
            let (io_p, mem_p) = self.psi_cgroup_show(ci);
            let c = &self.cg.list[ci];
            let dir = if c.id == 1 {
                "cgroup".to_string()
            } else {
                format!("cgroup/{}", c.name)
            };
            out.push((format!("{dir}/io.pressure"), io_p.into_bytes()));
            out.push((format!("{dir}/memory.pressure"), mem_p.into_bytes()));
            let mut io = String::new();
            for (d, s) in c.io.iter().enumerate() {
                if *s == IoStat::default() {
                    continue;
                }
                let dev = &self.devs[d];
                io += &format!(
                    "{}:{} rbytes={} wbytes={} rios={} wios={} dbytes=0 dios=0\n",
                    dev.major, dev.minor, s.rbytes, s.wbytes, s.rios, s.wios
                );
            }
            out.push((format!("{dir}/io.stat"), io.into_bytes()));
            // the kernel's order: sizes in bytes, then the event counts
            let mem = format!(
                "file {}\nfile_dirty {}\nfile_writeback {}\npgscan {}\npgsteal {}\n",
                c.file * ps,
                c.file_dirty * ps,
                c.file_writeback * ps,
                c.pgsteal,
                c.pgsteal
            );
            out.push((format!("{dir}/memory.stat"), mem.into_bytes()));
            // cgroup v1's blkio.time (ms) and blkio.sectors under CFQ
            let (mut time, mut sectors) = (String::new(), String::new());
            for dev in &self.devs {
                if let Some(cfq) = dev.sched.cfq.as_ref() {
                    let g = &cfq.groups[ci];
                    time += &format!("{}:{} {}\n", dev.major, dev.minor, g.time / 1_000_000);
                    sectors += &format!("{}:{} {}\n", dev.major, dev.minor, g.sectors);
                }
            }
            if !time.is_empty() {
                out.push((format!("{dir}/blkio.time"), time.into_bytes()));
                out.push((format!("{dir}/blkio.sectors"), sectors.into_bytes()));
            }
        }
        if let Some(iso) = self.sc.isolation {
            out.push((
                "isolation.txt".to_string(),
                self.isolation_report(iso).into_bytes(),
            ));
        }
        out
    }

    /// Seed 003's report of one experiment (the blkcgroup test's lines):
    /// each cgroup's disk-time fraction (DTF, per 1000, truncated) on the
    /// device where the cgroups' IO took the most time, and the largest
    /// distance (rounded) from its weight's share: `blkio.weight` under
    /// CFQ, `io.bfq.weight` under BFQ, `io.weight` otherwise. The disk
    /// time is the device's, by whose IO it served (`cg_time`), from the
    /// end of the warmup; the root (journal, metadata) is left out.
    pub fn isolation_report(&self, iso: crate::scenario::Isolation) -> String {
        let n = self.sc.cgroups.len();
        let Some(dev) = (0..self.devs.len()).max_by_key(|&d| {
            let t = &self.devs[d].cg_time;
            (1..=n).map(|g| t.get(g).copied().unwrap_or(0)).sum::<u64>()
        }) else {
            return String::new();
        };
        let d = &self.devs[dev];
        let times: Vec<u64> = (1..=n)
            .map(|g| d.cg_time.get(g).copied().unwrap_or(0))
            .collect();
        let weights: Vec<u64> = self
            .sc
            .cgroups
            .iter()
            .map(|c| {
                u64::from(match d.elevator {
                    crate::scenario::Elevator::Cfq => c.blkio_weight,
                    crate::scenario::Elevator::Bfq => c.bfq_weight,
                    _ => c.io_weight,
                })
            })
            .collect();
        let (tt, wt) = (
            times.iter().sum::<u64>().max(1),
            weights.iter().sum::<u64>().max(1),
        );
        let dtf: Vec<String> = times.iter().map(|&t| (t * 1000 / tt).to_string()).collect();
        // the largest |1000 t/T − 1000 w/W|, in 1/(T W) units, rounded
        let err_num = times
            .iter()
            .zip(&weights)
            .map(|(&t, &w)| {
                (u128::from(t) * u128::from(wt)).abs_diff(u128::from(w) * u128::from(tt))
            })
            .max()
            .unwrap_or(0);
        let den = u128::from(tt) * u128::from(wt);
        let err = ((err_num * 1000 * 2 + den) / (den * 2)) as u64;
        let e = iso.experiment;
        let verdict = if err <= iso.allowed {
            "PASSED"
        } else {
            "FAILED"
        };
        format!(
            "experiment {e} achieved DTFs: {}\nexperiment {e} {verdict}: max observed error is {err}, allowed is {}\n",
            dtf.join(", "),
            iso.allowed
        )
    }

    /// Count a bio's completion in its cgroup's `io.stat`.
    pub fn blkcg_account_io(&mut self, cg: usize, dev: DevId, bytes: u64, read: bool) {
        let Some(s) = self.cg.list.get_mut(cg).and_then(|c| c.io.get_mut(dev)) else {
            return;
        };
        if read {
            s.rbytes += bytes;
            s.rios += 1;
        } else {
            s.wbytes += bytes;
            s.wios += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    const BASE: &str = r#"
[devices.sda]
type = "ssd"
[filesystems.f]
device = "sda"
[cgroups.B]
"io.max.sda.wbps" = "25MiB/s"
[cgroups.A]
"memory.max" = "512M"
"memory.high" = "max"
"io.weight" = 500
"io.max.sda.wbps" = "10MiB/s"
"io.max.sda.riops" = 100
[jobs.a]
type = "dd"
cgroup = "A"
[jobs.b]
type = "dd"
cgroup = "/B/"
[jobs.r]
type = "dd"
"#;

    fn load(extra: &str) -> Result<Scenario, String> {
        Scenario::load_str(&format!("{BASE}{extra}"), "t.toml", "t", &[]).map_err(|e| e.to_string())
    }

    #[test]
    fn cgroups_parse_in_file_order_and_jobs_join_them() {
        let sc = load("").unwrap();
        let names: Vec<&str> = sc.cgroups.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["B", "A"]);
        let a = &sc.cgroups[1];
        assert_eq!(a.memory_max, Some(512 << 20));
        assert_eq!(a.memory_high, None);
        assert_eq!((a.io_weight, a.bfq_weight), (500, 100));
        let m = IoMax {
            wbps: Some(10 << 20),
            riops: Some(100),
            ..Default::default()
        };
        assert_eq!(a.io_max, vec![(0, m)]);
        let cg: Vec<usize> = sc.jobs.iter().map(|j| j.cgroup).collect();
        assert_eq!(cg, [2, 1, 0]);
    }

    #[test]
    fn bad_cgroup_input_names_file_and_line() {
        let e = load("[jobs.c]\ntype = \"dd\"\ncgroup = \"C\"\n").unwrap_err();
        assert!(
            e.starts_with("t.toml:24:") && e.contains("cgroup `C`"),
            "{e}"
        );
        let e = load("[cgroups.D]\n\"io.max.sdz.wbps\" = \"1M/s\"\n").unwrap_err();
        assert!(
            e.starts_with("t.toml:23:") && e.contains("device `sdz`"),
            "{e}"
        );
        let e = load("[cgroups.D]\n\"memory.max\" = \"lots\"\n").unwrap_err();
        assert!(
            e.starts_with("t.toml:23:") && e.contains("memory.max"),
            "{e}"
        );
        let e = load("[cgroups.D]\n\"io.weight\" = 0\n").unwrap_err();
        assert!(
            e.starts_with("t.toml:23:") && e.contains("1..=10000"),
            "{e}"
        );
        let e = load("[cgroups.D]\n\"memory.min\" = 1\n").unwrap_err();
        assert!(
            e.starts_with("t.toml:23:") && e.contains("unknown key"),
            "{e}"
        );
    }

    #[test]
    fn by_memcg_lists_take_oldest_first() {
        let mut l = Vec::new();
        add_back(&mut l, 1, 10);
        add_back(&mut l, 1, 5);
        add_back(&mut l, 2, 7);
        assert_eq!(l, vec![(1, 15), (2, 7)]);
        assert_eq!(take_front(&mut l, 20), vec![(1, 15), (2, 5)]);
        assert_eq!(l, vec![(2, 2)]);
        assert_eq!(take_front(&mut l, 9), vec![(2, 2)]);
        assert!(l.is_empty());
    }
}
