//! `wbsim live`: run a scenario's workload on the running kernel and write
//! the same outputs as `wbsim run`, measured by the same code.
//!
//! Each run builds its device afresh: a *new* loop device (`LOOP_CTL_ADD`
//! on an unused index, removed again afterwards), because the kernel keeps a
//! loop device's bdi, with its bandwidth estimate and dirty_ratelimit,
//! across `losetup -d`/`losetup -f`. So the bdi starts from INIT_BW, as a
//! simulated device does. It backs onto a sparse image on tmpfs, caps its
//! writes (with the root v1 blkio throttle, or else with cgroup v2 `io.max`
//! on a private cgroup that the writers run in: see [`cgroup`]), makes and
//! mounts ext4 or xfs, sets the scenario's `vm.dirty_*` sysctls, traces the
//! writeback events in a private tracefs instance and runs the jobs.
//! Everything it changes is recorded in a [`Restore`] guard that puts the
//! machine back on success, on error and on SIGINT/SIGTERM: the dd
//! processes (killed by PID), the trace instance, the throttle rule (it
//! outlives `losetup -d`) or the io.max cap, the mount, the v2 cgroup and
//! the controllers it enabled, the loop device, the image and the sysctls
//! (writing back whichever of `*_bytes`/`*_ratio` was set, since writing
//! one zeroes the other).

pub mod anon;
pub mod cgroup;
pub mod host_probe;
pub mod journal;
pub mod simoop;
pub use cgroup::{CapMethod, BLKIO_THROTTLE};

use crate::metrics::{DevObs, DevSnap, Observations, Summary, TaskObs, TaskSnap, VmSample};
use crate::output::RunResult;
use crate::scenario::{DeviceKind, JobKind, Scenario};
use crate::sim::{Ns, NSEC_PER_MSEC, NSEC_PER_SEC};
use crate::trace;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const TRACEFS: &str = "/sys/kernel/tracing";
const SYSCTLS: [&str; 6] = [
    "dirty_background_bytes",
    "dirty_background_ratio",
    "dirty_bytes",
    "dirty_ratio",
    "dirty_expire_centisecs",
    "dirty_writeback_centisecs",
];

/// Why live mode stopped.
#[derive(Debug)]
pub enum LiveError {
    /// This host or scenario cannot be run live (exit code 2).
    Refused(String),
    /// Interrupted by SIGINT or SIGTERM (exit code 130).
    Interrupted,
    /// Something failed while running (exit code 1).
    Failed(String),
}

impl std::fmt::Display for LiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LiveError::Refused(m) => write!(f, "cannot run live: {m}"),
            LiveError::Interrupted => write!(f, "interrupted; the machine was restored"),
            LiveError::Failed(m) => write!(f, "live run failed: {m}"),
        }
    }
}

fn failed(e: impl std::fmt::Display) -> LiveError {
    LiveError::Failed(e.to_string())
}

/// `machine.autogroup`'s sysctl.
const AUTOGROUP: &str = "kernel.sched_autogroup_enabled";

/// /proc/sys/a/b for the sysctl a.b.
fn sysctl_path(name: &str) -> PathBuf {
    Path::new("/proc/sys").join(name.replace('.', "/"))
}

fn read(p: impl AsRef<Path>) -> Result<String, LiveError> {
    let p = p.as_ref();
    std::fs::read_to_string(p).map_err(|e| failed(format!("read {}: {e}", p.display())))
}

fn write(p: impl AsRef<Path>, v: &str) -> Result<(), LiveError> {
    let p = p.as_ref();
    std::fs::write(p, v)
        .map_err(|e| failed(format!("write {:?} to {}: {e}", v.trim(), p.display())))
}

fn run_cmd(cmd: &str, args: &[&str]) -> Result<String, LiveError> {
    let o = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(format!("{cmd}: {e}")))?;
    if !o.status.success() {
        return Err(failed(format!(
            "{cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// The program that makes a filesystem of this kind.
fn mkfs_command(kind: crate::scenario::FsKind) -> &'static str {
    match kind {
        crate::scenario::FsKind::Ext4 => "mkfs.ext4",
        crate::scenario::FsKind::Xfs => "mkfs.xfs",
    }
}

fn have(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
        .unwrap_or(false)
}

/// Check that this host can run `sc` live, and how it will cap the
/// device's writes; the reason if it cannot.
pub fn preflight(sc: &Scenario) -> Result<CapMethod, LiveError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(LiveError::Refused(
            "live mode needs root (loop devices, sysctls, the blkio throttle or io.max, tracefs)"
                .into(),
        ));
    }
    match tracefs_state() {
        Tracefs::Ready | Tracefs::Unmounted => {}
        Tracefs::NoEvents => {
            return Err(LiveError::Refused(format!(
                "tracefs at {TRACEFS} has no writeback events (a kernel without CONFIG_TRACING?)"
            )))
        }
        Tracefs::Missing => {
            return Err(LiveError::Refused(format!(
                "no tracefs: {TRACEFS} is not mounted and the kernel lists no tracefs in /proc/filesystems"
            )))
        }
    }
    for c in ["losetup", "mount", "umount", "dd"] {
        if !have(c) {
            return Err(LiveError::Refused(format!("`{c}` is not installed")));
        }
    }
    if !Path::new("/dev/loop-control").exists() {
        return Err(LiveError::Refused(
            "no loop device support (/dev/loop-control is missing)".into(),
        ));
    }
    for d in &sc.devices {
        match (&d.kind, d.throttle.write_bps) {
            (DeviceKind::Loop(_), Some(_)) => {}
            _ => {
                return Err(LiveError::Refused(format!(
                    "device `{}` is a modelled device; live mode builds only capped loop devices (`throttled`, or `loop` with `throttle.write_bps`)",
                    d.name
                )))
            }
        }
        if d.bdi.write_bandwidth.is_some()
            || d.bdi.dirty_ratelimit.is_some()
            || d.bdi.strict_limit
            || d.bdi.min_ratio != 0
            || d.bdi.max_ratio != 100
        {
            return Err(LiveError::Refused(format!("device `{}` sets bdi.* knobs; a live loop device starts fresh with the kernel's defaults", d.name)));
        }
    }
    for f in &sc.filesystems {
        let mkfs = mkfs_command(f.kind);
        if !have(mkfs) {
            return Err(LiveError::Refused(format!(
                "filesystem `{}` needs `{mkfs}`, which is not installed{}",
                f.name,
                if f.kind == crate::scenario::FsKind::Xfs {
                    " (Debian's xfsprogs)"
                } else {
                    ""
                }
            )));
        }
        if !f.metadata {
            return Err(LiveError::Refused(format!(
                "filesystem `{}` sets metadata = false; a real filesystem always writes its journal (log) and metadata",
                f.name
            )));
        }
    }
    if !sc.cgroups.is_empty() {
        let names: Vec<&str> = sc.cgroups.iter().map(|c| c.name.as_str()).collect();
        return Err(LiveError::Refused(format!(
            "the scenario has cgroups ({}); live mode runs all its jobs in one cgroup so far, and would drop their limits and weights (the guest rig's scripts in tools/guest run them on a kernel with cgroup v2)",
            names.join(", ")
        )));
    }
    let (v1, v2) = cgroup::probe();
    let cap = cgroup::choose(v1, &v2).map_err(LiveError::Refused)?;
    if let Some(j) = sc
        .jobs
        .iter()
        .find(|j| matches!(j.kind, JobKind::FsMark(_)))
    {
        return Err(LiveError::Refused(format!(
            "job `{}` is fs_mark; live mode runs dd, fio and simoop jobs only so far",
            j.name
        )));
    }
    if sc.jobs.iter().any(|j| matches!(j.kind, JobKind::Fio(_))) && !have("fio") {
        return Err(LiveError::Refused(
            "the scenario has fio jobs and `fio` is not installed".into(),
        ));
    }
    if sc.run.dirty_throttle != crate::scenario::ThrottlePolicy::IoLess {
        return Err(LiveError::Refused(format!(
            "run.dirty_throttle = \"{}\" describes an older kernel; the running kernel throttles as it does (use \"io-less\")",
            sc.run.dirty_throttle.name()
        )));
    }
    if let Some(e) = sc.events.first() {
        return Err(LiveError::Refused(format!(
            "event `{}` writes knobs during the run; live mode does not write them mid-run yet",
            e.name
        )));
    }
    if let Some(f) = features_unlike_this_kernel(&sc.features) {
        return Err(LiveError::Refused(format!(
            "{f} describes another kernel than the running one; live mode runs this kernel's features only"
        )));
    }
    Ok(cap)
}

/// The first feature (its scenario key) that a live run cannot give: one
/// set unlike the running kernel's, which is a 6.x one: each is compiled
/// in, none is a knob of the running kernel.
fn features_unlike_this_kernel(f: &crate::scenario::Features) -> Option<&'static str> {
    let now = crate::scenario::Features::of(crate::scenario::ThrottlePolicy::IoLess);
    [
        (
            f.large_folios == now.large_folios,
            "kernel.features.large_folios",
        ),
        (f.wbt == now.wbt, "kernel.features.wbt"),
        (
            f.blk_throttle_v6_18 == now.blk_throttle_v6_18,
            "kernel.features.blk_throttle",
        ),
        (f.bw_dwork == now.bw_dwork, "kernel.features.bw_dwork"),
        (
            f.wb_bandwidth_v6 == now.wb_bandwidth_v6,
            "kernel.features.wb_bandwidth",
        ),
        (
            f.dirty_limits_v6 == now.dirty_limits_v6,
            "kernel.features.dirty_limits",
        ),
        (
            f.dioread_nolock == now.dioread_nolock,
            "kernel.features.dioread_nolock",
        ),
        (
            f.writeback_chunk_v3_2 == now.writeback_chunk_v3_2,
            "kernel.features.writeback_chunk",
        ),
        (f.flusher_plug == now.flusher_plug, "run.flusher_plug"),
        (f.plug_merge_any == now.plug_merge_any, "run.plug_merge"),
    ]
    .into_iter()
    .find(|(same, _)| !same)
    .map(|(_, key)| key)
}

/// Whether tracefs can be used at [`TRACEFS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tracefs {
    /// Mounted, with the writeback events.
    Ready,
    /// Not mounted there, but the kernel has tracefs: live mode mounts it
    /// for the run and unmounts it afterwards.
    Unmounted,
    /// Mounted, but without writeback events.
    NoEvents,
    /// Not mounted and not available.
    Missing,
}

pub fn tracefs_state() -> Tracefs {
    let root = Path::new(TRACEFS);
    if root.join("instances").is_dir() {
        return if root.join("events/writeback").is_dir() {
            Tracefs::Ready
        } else {
            Tracefs::NoEvents
        };
    }
    let listed = std::fs::read_to_string("/proc/filesystems")
        .map(|f| {
            f.lines()
                .any(|l| l.split_whitespace().last() == Some("tracefs"))
        })
        .unwrap_or(false);
    if listed && root.is_dir() {
        Tracefs::Unmounted
    } else {
        Tracefs::Missing
    }
}

/// Everything live mode changed, undone in reverse order on drop.
#[derive(Default)]
pub struct Restore {
    sysctls: Vec<(String, String)>,
    children: Vec<Child>,
    instance: Option<PathBuf>,
    /// tracefs was not mounted: live mode mounted it and unmounts it last.
    tracefs_mounted: bool,
    throttle: Vec<String>,
    /// The private cgroup v2 with the io.max cap.
    cgroup: Option<cgroup::V2Cgroup>,
    mounts: Vec<PathBuf>,
    dirs: Vec<PathBuf>,
    loops: Vec<String>,
    /// Loop device indexes we created with LOOP_CTL_ADD.
    created: Vec<u32>,
    images: Vec<PathBuf>,
    /// A dead run's dd processes (pid, start time), from its journal.
    orphans: Vec<(u32, u64)>,
    /// Where this run's restore journal is kept, if it keeps one.
    journal: Option<PathBuf>,
    pub log: Vec<String>,
}

impl Restore {
    /// Save a sysctl outside vm.* (by its dotted name) for the restore.
    fn save_sysctl(&mut self, name: &str) -> Result<(), LiveError> {
        let p = sysctl_path(name);
        if !p.exists() {
            return Err(LiveError::Refused(format!(
                "the scenario sets {name} (machine.autogroup), which this kernel does not have ({} is missing)",
                p.display()
            )));
        }
        let v = read(&p)?;
        self.sysctls.push((name.to_string(), v.trim().to_string()));
        Ok(())
    }

    fn save_sysctls(&mut self) -> Result<(), LiveError> {
        for k in SYSCTLS {
            let v = read(format!("/proc/sys/vm/{k}"))?;
            self.sysctls.push((k.to_string(), v.trim().to_string()));
        }
        Ok(())
    }

    /// Undo everything; safe to call twice.
    pub fn restore(&mut self) {
        for c in &mut self.children {
            kill_group(c.id(), libc::SIGKILL);
            let _ = c.wait();
        }
        self.children.clear();
        for (pid, st) in self.orphans.drain(..) {
            if journal::start_time(pid) == Some(st) {
                // the pid the journal names (its start time checked, so
                // not a reused pid), and its process group
                kill_group(pid, libc::SIGKILL);
            }
        }
        if let Some(inst) = self.instance.take() {
            let _ = std::fs::write(inst.join("tracing_on"), "0");
            if let Err(e) = std::fs::remove_dir(&inst) {
                self.log.push(format!(
                    "could not remove trace instance {}: {e}",
                    inst.display()
                ));
            }
        }
        // the throttle rule first, so the final flush is not throttled
        for mm in self.throttle.drain(..) {
            if let Err(e) = std::fs::write(BLKIO_THROTTLE, format!("{mm} 0")) {
                self.log
                    .push(format!("could not remove the throttle rule for {mm}: {e}"));
            }
        }
        if let Some(cg) = &mut self.cgroup {
            cg.clear_caps(&mut self.log);
        }
        for m in self.mounts.drain(..).rev() {
            let ok = Command::new("umount")
                .arg(&m)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                std::thread::sleep(Duration::from_millis(500));
                let _ = Command::new("umount").arg(&m).status();
            }
        }
        for d in self.dirs.drain(..).rev() {
            let _ = std::fs::remove_dir(&d);
        }
        if let Some(cg) = self.cgroup.take() {
            cg.remove(&mut self.log);
        }
        for l in self.loops.drain(..) {
            let _ = Command::new("losetup").args(["-d", &l]).status();
        }
        for n in self.created.drain(..) {
            // the detach completes asynchronously: retry while busy
            let mut ok = false;
            for _ in 0..50 {
                if loop_ctl(LOOP_CTL_REMOVE, n).is_ok() {
                    ok = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if !ok {
                self.log
                    .push(format!("could not remove /dev/loop{n} (LOOP_CTL_REMOVE)"));
            }
        }
        for i in self.images.drain(..) {
            let _ = std::fs::remove_file(&i);
        }
        if std::mem::take(&mut self.tracefs_mounted) {
            let ok = Command::new("umount")
                .arg(TRACEFS)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                self.log
                    .push(format!("could not unmount tracefs from {TRACEFS}"));
            }
        }
        // sysctls: write back the non-zero one of each bytes/ratio pair
        let saved = std::mem::take(&mut self.sysctls);
        let get = |k: &str| saved.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut order: Vec<(&str, String)> = Vec::new();
        for (bytes, ratio) in [
            ("dirty_bytes", "dirty_ratio"),
            ("dirty_background_bytes", "dirty_background_ratio"),
        ] {
            match (get(bytes), get(ratio)) {
                (Some(b), _) if b != "0" => order.push((bytes, b)),
                (_, Some(r)) => order.push((ratio, r)),
                _ => {}
            }
        }
        for k in ["dirty_expire_centisecs", "dirty_writeback_centisecs"] {
            if let Some(v) = get(k) {
                order.push((k, v));
            }
        }
        for (k, v) in order {
            if let Err(e) = std::fs::write(format!("/proc/sys/vm/{k}"), &v) {
                self.log.push(format!("could not restore vm.{k}={v}: {e}"));
            }
        }
        // the others, saved by their dotted names
        for (k, v) in saved.iter().filter(|(k, _)| k.contains('.')) {
            if let Err(e) = std::fs::write(sysctl_path(k), v) {
                self.log.push(format!("could not restore {k}={v}: {e}"));
            }
        }
        if let Some(j) = self.journal.take() {
            journal::remove(&j);
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        self.restore();
    }
}

const LOOP_CTL_ADD: libc::c_ulong = 0x4C80;
const LOOP_CTL_REMOVE: libc::c_ulong = 0x4C81;

/// An ioctl on /dev/loop-control.
fn loop_ctl(req: libc::c_ulong, n: u32) -> Result<u32, String> {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/loop-control")
        .map_err(|e| format!("/dev/loop-control: {e}"))?;
    // SAFETY: LOOP_CTL_ADD/REMOVE take an integer argument.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), req, n as libc::c_ulong) };
    if r < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    Ok(r as u32)
}

/// Create a new loop device on an index no existing one uses.
fn new_loop_device(guard: &mut Restore) -> Result<u32, LiveError> {
    let mut max = 0u32;
    if let Ok(rd) = std::fs::read_dir("/sys/block") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(n) = name
                .strip_prefix("loop")
                .and_then(|x| x.parse::<u32>().ok())
            {
                max = max.max(n);
            }
        }
    }
    for n in (max + 1).max(64)..(max + 1).max(64) + 64 {
        if loop_ctl(LOOP_CTL_ADD, n).is_ok() {
            guard.created.push(n);
            guard.sync();
            // wait for devtmpfs to show the node
            for _ in 0..100 {
                if Path::new(&format!("/dev/loop{n}")).exists() {
                    return Ok(n);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            return Err(failed(format!("/dev/loop{n} did not appear")));
        }
    }
    Err(failed("could not create a loop device (LOOP_CTL_ADD)"))
}

fn vmstat() -> Result<(String, VmSample), LiveError> {
    let text = read("/proc/vmstat")?;
    let mut s = VmSample::default();
    for l in text.lines() {
        let mut it = l.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else {
            continue;
        };
        let v: u64 = v.parse().unwrap_or(0);
        match k {
            "nr_dirty" => s.nr_dirty = v,
            "nr_writeback" => s.nr_writeback = v,
            "nr_dirtied" => s.nr_dirtied = v,
            "nr_written" => s.nr_written = v,
            _ => {}
        }
    }
    Ok((text, s))
}

/// /proc/PID/{status,io,stat} of a child.
/// Field `n` (numbered from 1, as in proc(5)) of /proc/PID/stat, for the
/// numeric fields after comm. comm (field 2) may hold spaces and
/// parentheses, so fields are counted from its last ')'.
pub(crate) fn proc_stat_field(pid: u32, n: usize) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(n.checked_sub(3)?)?.parse().ok()
}

fn task_snap(pid: u32, tick_ns: Ns) -> TaskSnap {
    let mut t = TaskSnap::default();
    if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
        for l in s.lines() {
            if let Some(v) = l.strip_prefix("voluntary_ctxt_switches:") {
                t.nvcsw = v.trim().parse().unwrap_or(0);
            } else if let Some(v) = l.strip_prefix("nonvoluntary_ctxt_switches:") {
                t.nivcsw = v.trim().parse().unwrap_or(0);
            }
        }
    }
    if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/io")) {
        for l in s.lines() {
            if let Some(v) = l.strip_prefix("wchar:") {
                t.wchar = v.trim().parse().unwrap_or(0);
            }
        }
    }
    // utime is field 14, stime 15
    t.utime = proc_stat_field(pid, 14).unwrap_or(0) * tick_ns;
    t.stime = proc_stat_field(pid, 15).unwrap_or(0) * tick_ns;
    t
}

/// The lines of `/proc/diskstats` text `text` for the devices `names`,
/// each prefixed with the time `now` in seconds (the `diskstats` file's
/// form, which the simulator writes too).
fn diskstats_pick(text: &str, names: &[&str], now: Ns) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line
            .split_whitespace()
            .nth(2)
            .is_some_and(|n| names.contains(&n))
        {
            out.push_str(&format!(
                "{}.{:06} {line}\n",
                now / NSEC_PER_SEC,
                now % NSEC_PER_SEC / 1000
            ));
        }
    }
    out
}

/// Read the kernel's `memory` and `io` pressure files under `dir`
/// (/proc/pressure) at `now` into `out`, in pressure.txt's form. A kernel
/// without PSI (no such files, or `psi=0`: EOPNOTSUPP) adds nothing.
fn pressure_sample(out: &mut String, now: Ns, dir: &Path) {
    for res in ["memory", "io"] {
        if let Ok(text) = std::fs::read_to_string(dir.join(res)) {
            crate::metrics::pressure::push_lines(out, now, res, &text);
        }
    }
}

fn dev_snap(loopname: &str) -> DevSnap {
    let s = std::fs::read_to_string(format!("/sys/block/{loopname}/stat")).unwrap_or_default();
    let f: Vec<u64> = s
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    let at = |i: usize| f.get(i).copied().unwrap_or(0);
    DevSnap {
        read_ios: at(0),
        read_merges: at(1),
        read_sectors: at(2),
        read_ticks_ns: at(3) * 1_000_000,
        write_ios: at(4),
        write_merges: at(5),
        write_sectors: at(6),
        io_ticks_ns: at(9) * 1_000_000,
        meta: None,
    }
}

struct LiveDev {
    name: String,
    loopname: String,
    majmin: String,
}

struct Writer {
    job: String,
    /// The program: `dd`, `fio` (one process for every fio job), or this
    /// program's path for a simoop job (`wbsim simoop`).
    prog: String,
    cwd: Option<PathBuf>,
    /// Where its standard output goes (simoop's lines), if anywhere.
    stdout: Option<PathBuf>,
    start: Ns,
    end: Option<Ns>,
    args: Vec<String>,
    child: Option<usize>,
}

/// One live run on a machine at a time: a second one (another shell, a
/// test suite beside a fidelity run) would share the dirty limits, the
/// sysctls and tracefs with the first. `flock` on `live.lock` in the
/// journal's directory, held while the returned file is open; the kernel
/// drops it when the process ends, however it ends. Waits, saying so,
/// while another run holds it.
pub fn machine_lock(progress: &mut dyn FnMut(&str)) -> Result<std::fs::File, LiveError> {
    use std::os::fd::AsRawFd;
    let dir = journal::journal_dir();
    std::fs::create_dir_all(&dir).map_err(|e| failed(format!("{}: {e}", dir.display())))?;
    let path = dir.join("live.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| failed(format!("{}: {e}", path.display())))?;
    // SAFETY: flock(2) on a descriptor this function owns.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        progress(&format!(
            "waiting for another live run on this machine to end ({})",
            path.display()
        ));
        // SAFETY: as above; blocks until the holder closes it or exits.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(failed(format!(
                "{}: {}",
                path.display(),
                std::io::Error::last_os_error()
            )));
        }
    }
    Ok(f)
}

/// Run `sc` on this machine. `stop` is set by the signal handlers.
pub fn run(
    sc: &Scenario,
    stop: &Arc<AtomicBool>,
    guard: &mut Restore,
    progress: &mut dyn FnMut(&str),
) -> Result<RunResult, LiveError> {
    let cap = preflight(sc)?;
    let t_wall = Instant::now();
    let tag = format!("wbsim-live-{}", std::process::id());
    let check = |stop: &Arc<AtomicBool>| {
        if stop.load(Ordering::SeqCst) {
            Err(LiveError::Interrupted)
        } else {
            Ok(())
        }
    };

    guard.journal_in(&journal::journal_dir());
    guard.save_sysctls()?;
    if sc.machine.autogroup.is_some() {
        guard.save_sysctl(AUTOGROUP)?;
    }
    guard.sync();
    // devices and filesystems
    let mut devs: Vec<LiveDev> = Vec::new();
    for (i, d) in sc.devices.iter().enumerate() {
        check(stop)?;
        let Some(write_bps) = d.throttle.write_bps else {
            unreachable!("refused in preflight")
        };
        // room for everything the jobs can write at the cap, plus slack
        let fs_jobs = sc
            .jobs
            .iter()
            .filter(|j| sc.filesystems[j.filesystem].device == i);
        let mut bytes: u64 = 0;
        // simoop's files, on whichever filesystem each directory names
        // (its writes overwrite them in place)
        for j in &sc.jobs {
            if let JobKind::Simoop(b) = &j.kind {
                let (a, sbs) = &**b;
                let here = sbs
                    .iter()
                    .filter(|&&f| sc.filesystems[f].device == i)
                    .count() as u64;
                bytes += here * a.files_per_dir * (a.file_mb << 20);
            }
        }
        for j in fs_jobs {
            let size = match &j.kind {
                JobKind::Dd { size, .. } => *size,
                JobKind::Fio(f) => fio_job_bytes(f),
                JobKind::Simoop(_) => continue,
                JobKind::FsMark(_) => unreachable!("refused in preflight"),
            };
            let t = j.runtime.unwrap_or(sc.run.duration).min(sc.run.duration);
            let cap = (write_bps as u128 * t as u128 / NSEC_PER_SEC as u128) as u64 + (256 << 20);
            bytes += size
                .map(|s| s.min(cap) * j.numjobs as u64)
                .unwrap_or(cap * 12 / 10);
        }
        let size = (bytes + (1 << 30)).min(d.size);
        let img = PathBuf::from(format!("/dev/shm/{tag}-{}.img", d.name));
        // each change is journaled before it is made (see [`journal`])
        guard.images.push(img.clone());
        guard.sync();
        let f = std::fs::File::create(&img)
            .map_err(|e| failed(format!("create {}: {e}", img.display())))?;
        f.set_len(size).map_err(failed)?;
        drop(f);
        let n = new_loop_device(guard)?;
        let dev = format!("/dev/loop{n}");
        let imgs = img.to_str().unwrap_or_default();
        // tmpfs takes O_DIRECT from 6.6 on; before that the loop device
        // writes into the image through tmpfs' page cache (which is never
        // dirty in the writeback sense)
        guard.loops.push(dev.clone());
        guard.sync();
        let mut io = "direct IO";
        if run_cmd("losetup", &["--direct-io=on", &dev, imgs]).is_err() {
            let _ = Command::new("losetup")
                .args(["-d", &dev])
                .stderr(Stdio::null())
                .status();
            run_cmd("losetup", &[&dev, imgs])?;
            io = "buffered: no O_DIRECT on this tmpfs";
        }
        let loopname = dev.trim_start_matches("/dev/").to_string();
        let majmin = read(format!("/sys/block/{loopname}/dev"))?
            .trim()
            .to_string();
        progress(&format!(
            "{}: {dev} ({majmin}) over {} on tmpfs ({io})",
            d.name,
            img.display()
        ));
        devs.push(LiveDev {
            name: d.name.clone(),
            loopname,
            majmin,
        });
    }
    let mut mnts: Vec<PathBuf> = Vec::new();
    for f in &sc.filesystems {
        check(stop)?;
        let d = &devs[f.device];
        let dev = format!("/dev/{}", d.loopname);
        let agcount = format!("agcount={}", f.agcount);
        let args: Vec<&str> = match f.kind {
            crate::scenario::FsKind::Ext4 => vec![
                "-q",
                "-F",
                "-E",
                "lazy_itable_init=0,lazy_journal_init=0",
                &dev,
            ],
            // the scenario's allocation groups (mkfs.xfs would pick 4 for
            // a device under 4 TiB, the scenario's default too)
            crate::scenario::FsKind::Xfs => vec!["-q", "-f", "-d", &agcount, &dev],
        };
        run_cmd(mkfs_command(f.kind), &args)?;
        let mnt = std::env::temp_dir().join(format!("{tag}-{}", f.name));
        guard.dirs.push(mnt.clone());
        guard.mounts.push(mnt.clone());
        guard.sync();
        std::fs::create_dir_all(&mnt).map_err(failed)?;
        run_cmd(
            "mount",
            &[
                &format!("/dev/{}", d.loopname),
                mnt.to_str().unwrap_or_default(),
            ],
        )?;
        mnts.push(mnt);
    }
    if let CapMethod::V2 { mount, enable } = &cap {
        let r = cgroup::V2Cgroup::create(mount, enable, &tag, &mut guard.cgroup);
        guard.sync();
        r.map_err(failed)?;
    }
    for (i, d) in sc.devices.iter().enumerate() {
        let Some(write_bps) = d.throttle.write_bps else {
            unreachable!("refused in preflight")
        };
        match guard.cgroup.as_mut() {
            None => {
                guard.throttle.push(devs[i].majmin.clone());
                guard.sync();
                write(BLKIO_THROTTLE, &format!("{} {write_bps}", devs[i].majmin))?;
            }
            Some(cg) => {
                let r = cg.cap(&devs[i].majmin, write_bps);
                guard.sync();
                r.map_err(failed)?
            }
        }
    }
    progress(&format!("writes capped by {}", cap.describe()));
    // the writers join the cgroup between fork and exec
    let procs = match &guard.cgroup {
        Some(cg) => Some(
            std::ffi::CString::new(cg.procs().into_os_string().into_encoded_bytes())
                .map_err(failed)?,
        ),
        None => None,
    };
    // sysctls, in the order the kernel's *_bytes/*_ratio rule needs
    let vm = &sc.vm;
    let set = |k: &str, v: u64| write(format!("/proc/sys/vm/{k}"), &v.to_string());
    if vm.dirty_bytes != 0 {
        set("dirty_bytes", vm.dirty_bytes)?
    } else {
        set("dirty_ratio", vm.dirty_ratio)?
    }
    if vm.dirty_background_bytes != 0 {
        set("dirty_background_bytes", vm.dirty_background_bytes)?
    } else {
        set("dirty_background_ratio", vm.dirty_background_ratio)?
    }
    set("dirty_expire_centisecs", vm.dirty_expire_centisecs)?;
    set("dirty_writeback_centisecs", vm.dirty_writeback_centisecs)?;
    // the writers' autogroup: taken when they are forked, below
    if let Some(a) = sc.machine.autogroup {
        write(sysctl_path(AUTOGROUP), if a { "1" } else { "0" })?;
        progress(&format!("{AUTOGROUP} = {}", a as u8));
    }

    // simoop's file set, laid out before the run as the model has it
    // (written, synced, dropped from the cache), and its command line
    let mut simoop_runs: Vec<(String, Vec<String>, PathBuf)> = Vec::new();
    for j in &sc.jobs {
        let JobKind::Simoop(b) = &j.kind else {
            continue;
        };
        let (a, sbs) = &**b;
        let mut a = a.clone();
        a.dirs = sbs
            .iter()
            .enumerate()
            .map(|(k, &f)| {
                mnts[f]
                    .join(format!("wbsim-simoop-{}-{k}", j.name))
                    .display()
                    .to_string()
            })
            .collect();
        for d in &a.dirs {
            std::fs::create_dir_all(d).map_err(|e| failed(format!("mkdir {d}: {e}")))?;
        }
        progress(&format!(
            "simoop `{}`: laying out {} files of {} MB in each of {} directories",
            j.name,
            a.files_per_dir,
            a.file_mb,
            a.dirs.len()
        ));
        check(stop)?;
        simoop::lay_out(&a).map_err(failed)?;
        let out = mnts[sbs[0]].join(format!("wbsim-simoop-{}", j.name));
        std::fs::create_dir_all(&out).map_err(failed)?;
        let mut args = vec![
            "simoop".to_string(),
            "--laid-out".into(),
            "--seed".into(),
            sc.run.seed.to_string(),
            "--json".into(),
            out.join("simoop.json").display().to_string(),
        ];
        args.extend(a.flags().split_whitespace().map(str::to_string));
        args.extend(a.dirs.iter().cloned());
        simoop_runs.push((j.name.clone(), args, out));
    }

    // the trace instance (tracefs mounted for the run if it was not)
    if tracefs_state() == Tracefs::Unmounted {
        run_cmd("mount", &["-t", "tracefs", "nodev", TRACEFS])?;
        guard.tracefs_mounted = true;
        guard.sync();
        if tracefs_state() != Tracefs::Ready {
            return Err(LiveError::Refused(format!(
                "tracefs mounted at {TRACEFS} has no writeback events"
            )));
        }
    }
    let inst = Path::new(TRACEFS).join("instances").join(&tag);
    std::fs::create_dir(&inst).map_err(|e| failed(format!("mkdir {}: {e}", inst.display())))?;
    guard.instance = Some(inst.clone());
    guard.sync();
    write(inst.join("buffer_size_kb"), "65536")?;
    for e in &sc.trace.events {
        let sys = crate::trace::event_subsystem(e);
        write(inst.join(format!("events/{sys}/{e}/enable")), "1")?;
    }
    write(inst.join("trace"), "")?;
    write(inst.join("tracing_on"), "1")?;
    write(inst.join("trace_marker"), trace::START_MARKER)?;
    let t0 = Instant::now();

    // the writers
    let mut writers: Vec<Writer> = Vec::new();
    // the fio jobs: one fio process runs them all, in the scenario's
    // order, so that stonewall and wait_for hold across them
    let fio_dir = if sc.jobs.iter().any(|j| matches!(j.kind, JobKind::Fio(_))) {
        let dir = mnts[0].join("wbsim-fio");
        std::fs::create_dir_all(&dir).map_err(failed)?;
        let devpaths: Vec<(String, String)> = sc
            .devices
            .iter()
            .zip(&devs)
            .map(|(d, l)| (d.name.clone(), format!("/dev/{}", l.loopname)))
            .collect();
        let (text, dropped) = fio_live_job_file(sc, &mnts, &devpaths);
        for d in dropped {
            progress(&format!("fio: {d}"));
        }
        std::fs::write(dir.join("jobs.fio"), text).map_err(failed)?;
        writers.push(Writer {
            job: "fio".into(),
            prog: "fio".into(),
            stdout: None,
            cwd: Some(dir.clone()),
            start: 0,
            end: None,
            args: vec![
                "--output-format=json".into(),
                "--output=fio.json".into(),
                "jobs.fio".into(),
            ],
            child: None,
        });
        Some(dir)
    } else {
        None
    };
    // simoop: this program's own `wbsim simoop`, on the files laid out
    let exe = std::env::current_exe().map_err(failed)?;
    for (job, args, out) in &simoop_runs {
        writers.push(Writer {
            job: job.clone(),
            prog: exe.display().to_string(),
            cwd: Some(out.clone()),
            start: sc
                .jobs
                .iter()
                .find(|j| &j.name == job)
                .map_or(0, |j| j.start),
            end: None,
            args: args.clone(),
            stdout: Some(out.join("simoop.txt")),
            child: None,
        });
    }
    for j in &sc.jobs {
        let (bs, size) = match j.kind {
            JobKind::Dd { bs, size } => (bs, size),
            JobKind::Fio(_) | JobKind::Simoop(_) => continue,
            JobKind::FsMark(_) => unreachable!("refused in preflight"),
        };
        for k in 0..j.numjobs {
            let file = mnts[j.filesystem].join(format!("{}.{k}", j.name));
            let mut args = vec![
                "if=/dev/zero".to_string(),
                format!("of={}", file.display()),
                format!("bs={bs}"),
                "status=none".into(),
            ];
            if let Some(s) = size {
                args.push(format!("count={}", s.div_ceil(bs)));
            }
            writers.push(Writer {
                job: j.name.clone(),
                prog: "dd".into(),
                stdout: None,
                cwd: None,
                start: j.start,
                end: j.runtime.map(|r| j.start + r),
                args,
                child: None,
            });
        }
    }
    let ns = |d: Duration| d.as_nanos() as Ns;
    let tick_ns = NSEC_PER_SEC / (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64);
    let mut samples = Vec::new();
    let mut task_start: Vec<Option<TaskSnap>> = vec![None; writers.len()];
    let mut dev_start: Vec<DevSnap> = Vec::new();
    let mut window_started = false;
    let mut next_sample: Ns = 0;
    // /proc/diskstats once a second, as the simulator writes it
    let mut diskstats = String::new();
    let mut next_diskstats: Ns = 0;
    // /proc/pressure/{memory,io} each sample, as the simulator writes them
    let mut pressure = String::new();
    let loopnames: Vec<&str> = devs.iter().map(|d| d.loopname.as_str()).collect();
    progress(&format!(
        "running {} writer(s) for {:.0} s",
        writers.len(),
        sc.run.duration as f64 / 1e9
    ));
    loop {
        check(stop)?;
        let now = ns(t0.elapsed());
        if now >= sc.run.duration {
            break;
        }
        for w in writers.iter_mut() {
            if w.child.is_none() && now >= w.start && w.end.is_none_or(|e| now < e) {
                let mut cmd = Command::new(&w.prog);
                cmd.args(&w.args).stdin(Stdio::null()).stdout(Stdio::null());
                if let Some(p) = &w.stdout {
                    let f = std::fs::File::create(p)
                        .map_err(|e| failed(format!("{}: {e}", p.display())))?;
                    cmd.stdout(f);
                }
                if let Some(d) = &w.cwd {
                    cmd.current_dir(d);
                }
                // its own process group, so that a kill reaches what it
                // forks (fio's job processes) too
                std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
                die_with_parent(&mut cmd);
                if let Some(p) = &procs {
                    join_cgroup(&mut cmd, p.clone());
                }
                let c = cmd
                    .spawn()
                    .map_err(|e| failed(format!("{}: {e}", w.prog)))?;
                guard.children.push(c);
                guard.sync();
                w.child = Some(guard.children.len() - 1);
            }
            if let (Some(c), Some(e)) = (w.child, w.end) {
                if now >= e {
                    kill_group(guard.children[c].id(), libc::SIGKILL);
                }
            }
        }
        if !window_started && now >= sc.run.warmup {
            window_started = true;
            for (i, w) in writers.iter().enumerate() {
                if let Some(c) = w.child {
                    task_start[i] = Some(task_snap(guard.children[c].id(), tick_ns));
                }
            }
            dev_start = devs.iter().map(|d| dev_snap(&d.loopname)).collect();
        }
        if now >= next_sample {
            let (_, s) = vmstat()?;
            samples.push(VmSample { t: now, ..s });
            pressure_sample(&mut pressure, now, Path::new("/proc/pressure"));
            if now >= next_diskstats {
                let text = std::fs::read_to_string("/proc/diskstats").unwrap_or_default();
                diskstats.push_str(&diskstats_pick(&text, &loopnames, now));
                next_diskstats = (now / NSEC_PER_SEC + 1) * NSEC_PER_SEC;
            }
            next_sample += sc.run.sample_interval;
        }
        // Sleep to the next thing to do, at most 100 ms (the stop flag):
        // a short poll wakes this process hundreds of times a second on the
        // writers' CPUs. On the host rig a 2 ms poll preempted a lone dd
        // 12.8 times a second at bs=1M and 38.9 at bs=4k, most of what the
        // kernel runs counted as dd's involuntary context switches.
        let next = next_wakeup(
            now,
            next_sample,
            sc.run.duration,
            (!window_started).then_some(sc.run.warmup),
            &writers,
        );
        let now = ns(t0.elapsed());
        if next > now {
            std::thread::sleep(Duration::from_nanos((next - now).min(100 * NSEC_PER_MSEC)));
        }
    }
    // end of the window
    let end = sc.run.duration;
    let tasks: Vec<TaskObs> = writers
        .iter()
        .enumerate()
        .filter_map(|(i, w)| {
            // fio's own figures are in fio.json
            if w.prog != "dd" {
                return None;
            }
            let c = w.child?;
            let pid = guard.children[c].id();
            Some(TaskObs {
                comm: "dd".into(),
                pid,
                job: Some(w.job.clone()),
                start: task_start[i].clone().unwrap_or_default(),
                end: task_snap(pid, tick_ns),
            })
        })
        .collect();
    let devices: Vec<DevObs> = devs
        .iter()
        .enumerate()
        .map(|(i, d)| DevObs {
            name: d.name.clone(),
            start: dev_start.get(i).cloned().unwrap_or_default(),
            end: dev_snap(&d.loopname),
        })
        .collect();
    let (vm_text, s) = vmstat()?;
    samples.push(VmSample { t: end, ..s });
    pressure_sample(&mut pressure, end, Path::new("/proc/pressure"));
    write(inst.join("trace_marker"), "WBSIM_END")?;
    write(inst.join("tracing_on"), "0")?;
    // fio ends its jobs on SIGINT and then writes its output
    for w in &writers {
        if let (Some(c), "fio") = (w.child, w.prog.as_str()) {
            stop_fio(&mut guard.children[c], stop);
        }
    }
    // simoop prints its final block at -w + -r s and exits: it gets 10 s
    // past the run's end for that
    for w in &writers {
        if let (Some(c), Some(_)) = (w.child, &w.stdout) {
            let c = &mut guard.children[c];
            let t = Instant::now();
            while t.elapsed() < Duration::from_secs(10) && !stop.load(Ordering::Relaxed) {
                if !matches!(c.try_wait(), Ok(None)) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    for c in &mut guard.children {
        kill_group(c.id(), libc::SIGKILL);
        let _ = c.wait();
    }
    guard.children.clear();
    let mut extra_files = Vec::new();
    if let Some(dir) = &fio_dir {
        extra_files = fio_live_outputs(dir)?;
    }
    // simoop's lines (several simoop jobs: one after another) and its final
    // figures, as a simulated run has them
    let mut simoop_text = String::new();
    let mut simoop_summary = None;
    for (_, _, out) in &simoop_runs {
        simoop_text.push_str(&std::fs::read_to_string(out.join("simoop.txt")).unwrap_or_default());
        if let Ok(j) = std::fs::read_to_string(out.join("simoop.json")) {
            simoop_summary = serde_json::from_str(&j).ok();
        }
    }
    if !simoop_runs.is_empty() {
        if simoop_summary.is_none() {
            progress("simoop did not finish within the run (run.duration below -w + -r plus its start?): simoop.txt has what it printed");
        }
        extra_files.push(("simoop.txt".to_string(), simoop_text.into_bytes()));
    }
    extra_files.push(("diskstats".to_string(), diskstats.into_bytes()));
    let pressure_summary = crate::metrics::pressure::summarize(&pressure, sc.run.warmup);
    if !pressure.is_empty() {
        extra_files.push(("pressure.txt".to_string(), pressure.into_bytes()));
    }
    let trace_text = read(inst.join("trace"))?;
    // times relative to the start marker, as in the simulator
    let (mut recs, skipped) = trace::parse_counted(&trace_text);
    if let Some(m) = skipped.describe("the kernel's trace") {
        progress(&m);
    }
    if !trace::rebase_on_start_marker(&mut recs) {
        return Err(failed("the trace lost its start marker (buffer overrun?)"));
    }
    let obs = Observations {
        scenario: sc.name.clone(),
        seed: sc.run.seed,
        dirty_throttle: "live".into(),
        duration: end,
        window: (sc.run.warmup, end),
        page_size: 4096,
        samples,
        tasks,
        devices,
        trace: recs,
        trace_stats: None,
        stopped_at: None,
        stopped_by: None,
        bdis: devs.iter().map(|d| d.majmin.clone()).collect(),
        cgroup_ino: guard.cgroup.as_ref().map(|c| c.ino),
        events_simulated: None,
        cgroups: Vec::new(),
    };
    let mut summary = Summary::compute(&obs);
    summary.pressure = pressure_summary;
    summary.simoop = simoop_summary;
    let _ = NSEC_PER_MSEC;
    Ok(RunResult {
        summary,
        fs_mark: String::new(),
        trace_text,
        trace_streamed: false,
        stopped_at: None,
        stopped_by: None,
        full_device: None,
        vmstat: vm_text,
        extra_files,
        written: Vec::new(),
        wall_s: t_wall.elapsed().as_secs_f64(),
        sim_s: end as f64 / 1e9,
        events: 0,
    })
}

/// Make `cmd`'s child write "0" (itself) to the cgroup.procs file `procs`
/// before it execs, so that it never runs outside the cgroup.
/// When the run loop next has something to do after `now`: a vmstat
/// sample, the end of the run, the window's start, or a writer's start or
/// end.
fn next_wakeup(now: Ns, sample: Ns, end: Ns, window: Option<Ns>, writers: &[Writer]) -> Ns {
    let mut next = sample.min(end);
    if let Some(w) = window {
        next = next.min(w);
    }
    for w in writers {
        if w.child.is_none() && w.start > now {
            next = next.min(w.start);
        }
        if let (Some(_), Some(e)) = (w.child, w.end) {
            if e > now {
                next = next.min(e);
            }
        }
    }
    next
}

/// Have the child killed if this process dies without restoring (SIGKILL),
/// so that no dd keeps writing to a device nobody will unmount.
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child and calls only prctl(2),
    // which is async-signal-safe, allocating nothing.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn join_cgroup(cmd: &mut Command, procs: std::ffi::CString) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child and calls only
    // async-signal-safe functions (open, write, close, errno), allocating
    // nothing.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let r = libc::write(fd, b"0".as_ptr().cast(), 1);
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            if r != 1 {
                return Err(e);
            }
            Ok(())
        });
    }
}

/// Install SIGINT/SIGTERM handlers that set the returned flag.
pub fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    stop
}

/// Send `sig` to our child `pid` and to its process group (each child is
/// started in a group of its own: fio's job processes are in it).
fn kill_group(pid: u32, sig: i32) {
    // SAFETY: kill(2) on our own child's pid and its process group.
    unsafe {
        libc::kill(-(pid as i32), sig);
        libc::kill(pid as i32, sig);
    }
}

/// Stop fio at the end of the run: SIGINT makes it end its jobs and write
/// its output; it gets 15 s for that before it is killed.
fn stop_fio(c: &mut Child, stop: &Arc<AtomicBool>) {
    if matches!(c.try_wait(), Ok(Some(_))) {
        return;
    }
    kill_group(c.id(), libc::SIGINT);
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(15) && !stop.load(Ordering::SeqCst) {
        if matches!(c.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The bytes an fio job can write: its size for every clone, or None
/// (time-bound: the device's cap decides).
fn fio_job_bytes(f: &crate::workload::fio::FioJob) -> Option<u64> {
    use crate::workload::fio::job::FioSize;
    match f.size {
        Some(FioSize::Bytes(b)) if !f.time_based => Some(b.saturating_mul(f.numjobs as u64)),
        _ => None,
    }
}

/// The options a live fio run does not pass on: where the files go is the
/// run's (its mounts and loop devices), and what changes the machine
/// outside the run (cgroups, commands) is the scenario's business.
const FIO_LIVE_DROPPED: &[&str] = &[
    "directory",
    "filename",
    "cgroup",
    "cgroup_weight",
    "cgroup_nodelete",
    "exec_prerun",
    "exec_postrun",
];

/// One job file for every fio job of `sc`, in order: each section with
/// the options the job was parsed with, its files in its filesystem's
/// mount and `filename=/dev/NAME` on NAME's loop device. Also what was
/// dropped, to say so.
fn fio_live_job_file(
    sc: &Scenario,
    mnts: &[PathBuf],
    devpaths: &[(String, String)],
) -> (String, Vec<String>) {
    let mut text = String::from("; written by wbsim live\n");
    let mut dropped = Vec::new();
    for j in &sc.jobs {
        let JobKind::Fio(f) = &j.kind else { continue };
        text.push_str(&format!("\n[{}]\n", f.name));
        for (k, v) in &f.options {
            if FIO_LIVE_DROPPED.contains(&k.as_str()) {
                if !matches!(k.as_str(), "directory" | "filename") {
                    dropped.push(format!("job `{}`: {k} is not passed on live", f.name));
                }
                continue;
            }
            if v.is_empty() {
                text.push_str(&format!("{k}\n"));
            } else {
                text.push_str(&format!("{k}={v}\n"));
            }
        }
        let mnt = &mnts[j.filesystem];
        text.push_str(&format!("directory={}\n", mnt.display()));
        if let Some(names) = &f.filename {
            let mapped: Vec<String> = names
                .split(':')
                .map(|n| match n.strip_prefix("/dev/") {
                    Some(d) => devpaths
                        .iter()
                        .find(|(name, _)| name == d)
                        .map(|(_, p)| p.clone())
                        .unwrap_or_else(|| n.to_string()),
                    // a file of the job's: in the mount, by its base name
                    None => std::path::Path::new(n)
                        .file_name()
                        .map(|b| b.to_string_lossy().into_owned())
                        .unwrap_or_else(|| n.to_string()),
                })
                .collect();
            text.push_str(&format!("filename={}\n", mapped.join(":")));
        }
    }
    (text, dropped)
}

/// fio's JSON and log files from a live run's fio directory, for the
/// output directory (as `wbsim fio` writes them).
fn fio_live_outputs(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, LiveError> {
    let mut json = std::fs::read(dir.join("fio.json"))
        .map_err(|e| failed(format!("fio wrote no output ({e}); see its exit status")))?;
    // fio writes "fio: terminating on signal 2" into its output file
    // before the JSON when it was stopped
    if let Some(i) = json.iter().position(|&b| b == b'{') {
        json.drain(..i);
    }
    let mut files = vec![("fio.json".to_string(), json)];
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .map_err(failed)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".log"))
        .collect();
    logs.sort();
    for n in logs {
        let b = std::fs::read(dir.join(&n)).map_err(failed)?;
        files.push((n, b));
    }
    Ok(files)
}

#[cfg(test)]
mod tests {

    #[test]
    fn diskstats_keeps_the_run_devices_lines_with_their_time() {
        let text = "   7       0 loop0 1 2 3 4 5 6 7 8 0 9 12 0 0 0 0 0 0\n\
                    \x20  7       1 loop1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
                    \x20253       0 dm-0 9 9 9 9 9 9 9 9 0 9 9 0 0 0 0 0 0\n";
        let got = super::diskstats_pick(text, &["loop0", "dm-0"], 2_500_000_000);
        assert_eq!(
            got,
            "2.500000    7       0 loop0 1 2 3 4 5 6 7 8 0 9 12 0 0 0 0 0 0\n\
             2.500000  253       0 dm-0 9 9 9 9 9 9 9 9 0 9 9 0 0 0 0 0 0\n"
        );
    }

    #[test]
    fn pressure_is_read_from_the_kernels_files_in_the_simulators_form() {
        let dir = std::env::temp_dir().join(format!("wbsim-psi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("memory"),
            "some avg10=0.00 avg60=0.00 avg300=0.00 total=29766894\n\
             full avg10=0.00 avg60=0.00 avg300=0.00 total=10963554\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("io"),
            "some avg10=46.21 avg60=60.92 avg300=43.13 total=4154240936\n\
             full avg10=25.34 avg60=43.44 avg300=35.32 total=1902233265\n",
        )
        .unwrap();
        let mut out = String::new();
        super::pressure_sample(&mut out, 1_250_000_000, &dir);
        assert_eq!(
            out,
            "1.250000 memory some avg10=0.00 avg60=0.00 avg300=0.00 total=29766894\n\
             1.250000 memory full avg10=0.00 avg60=0.00 avg300=0.00 total=10963554\n\
             1.250000 io some avg10=46.21 avg60=60.92 avg300=43.13 total=4154240936\n\
             1.250000 io full avg10=25.34 avg60=43.44 avg300=35.32 total=1902233265\n"
        );
        let s = crate::metrics::pressure::summarize(&out, 0).unwrap();
        assert_eq!(s.io.full.avg60, 43.44);
        assert_eq!(s.io.some.run_us, 0);
        // a kernel without PSI: nothing
        let mut none = String::new();
        super::pressure_sample(&mut none, 0, &dir.join("absent"));
        assert!(none.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn one_live_run_holds_the_machine_at_a_time() {
        use std::os::fd::AsRawFd;
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipping: the journal's directory needs root");
            return;
        }
        let mut said = Vec::new();
        let held = super::machine_lock(&mut |m: &str| said.push(m.to_string())).unwrap();
        // another open file description cannot take it meanwhile
        let other = std::fs::File::open(journal::journal_dir().join("live.lock")).unwrap();
        // SAFETY: flock(2) on a descriptor this test owns.
        let r = unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(r, -1, "the lock was free while held");
        drop(held);
        // SAFETY: as above.
        let r = unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        assert_eq!(r, 0, "the lock was not released");
    }
    use super::*;

    fn writer(start: Ns, end: Option<Ns>, child: Option<usize>) -> Writer {
        Writer {
            job: "dd".into(),
            prog: "dd".into(),
            cwd: None,
            stdout: None,
            start,
            end,
            args: Vec::new(),
            child,
        }
    }

    #[test]
    fn the_live_fio_job_file_puts_files_on_the_runs_mounts_and_devices() {
        use crate::workload::fio::FioJob;
        let mut sc = Scenario::builtin(&[]).unwrap();
        let mut a = FioJob::new("a", "t.fio:1");
        a.options = vec![
            ("directory".into(), "/mnt/x".into()),
            ("rw".into(), "write".into()),
            ("time_based".into(), "".into()),
            ("cgroup".into(), "writers".into()),
        ];
        let mut b = FioJob::new("b", "t.fio:9");
        b.filename = Some("/dev/loop0".into());
        b.options = vec![
            ("filename".into(), "/dev/loop0".into()),
            ("stonewall".into(), "".into()),
        ];
        sc.jobs = crate::workload::fio::scenario::scenario_jobs(vec![a, b], 0, 0, None, &[])
            .expect("jobs");
        let mnts = vec![PathBuf::from("/tmp/m0")];
        let devs = vec![("loop0".to_string(), "/dev/loop7".to_string())];
        let (text, dropped) = fio_live_job_file(&sc, &mnts, &devs);
        assert_eq!(
            text,
            "; written by wbsim live\n\n[a]\nrw=write\ntime_based\ndirectory=/tmp/m0\n\n[b]\nstonewall\ndirectory=/tmp/m0\nfilename=/dev/loop7\n"
        );
        assert_eq!(dropped, vec!["job `a`: cgroup is not passed on live"]);
    }

    #[test]
    fn the_run_loop_sleeps_to_its_next_event() {
        let ms = NSEC_PER_MSEC;
        // nothing but the next sample
        assert_eq!(
            next_wakeup(5 * ms, 100 * ms, 60_000 * ms, None, &[]),
            100 * ms
        );
        // the window's start comes first
        assert_eq!(
            next_wakeup(5 * ms, 100 * ms, 60_000 * ms, Some(30 * ms), &[]),
            30 * ms
        );
        // a writer not started yet, and a running writer's end
        let ws = [
            writer(40 * ms, None, None),
            writer(0, Some(20 * ms), Some(0)),
        ];
        assert_eq!(
            next_wakeup(5 * ms, 100 * ms, 60_000 * ms, None, &ws),
            20 * ms
        );
        // started writers and past ends do not wake it
        let ws = [writer(0, None, Some(0)), writer(0, Some(3 * ms), Some(1))];
        assert_eq!(
            next_wakeup(5 * ms, 100 * ms, 60_000 * ms, None, &ws),
            100 * ms
        );
        // the run's end
        assert_eq!(next_wakeup(5 * ms, 100 * ms, 50 * ms, None, &ws), 50 * ms);
    }
}
