//! The restore journal: what a live run has changed, kept on disk so that a
//! run killed by SIGKILL (or a lost session), which no signal handler sees,
//! is undone by the next live run or by `wbsim restore`.
//!
//! The journal lives in a tmpfs ([`journal_dir`]: `/run/wbsim/`, or
//! `/dev/shm/wbsim/` where /run is not one): after a reboot there is
//! nothing to undo (sysctls, loop devices, mounts, trace instances and
//! throttle rules do not survive one) and no journal either. A tmpfs also
//! keeps the journal out of dirty throttling: on a disk-backed /run each
//! rewrite dirtied pages under the run's own small `vm.dirty_*` limits, and
//! the run's launcher slept in `balance_dirty_pages` between forks (1369
//! pauses, 5.5 s, while starting 1000 dd). It is
//! rewritten atomically (write then rename) after every change a run makes,
//! and removed when the run has restored the machine, with the directory
//! once it is empty. A journal whose process is still alive belongs to a
//! run in progress and is left alone.
//!
//! One record per line, the kind first, then tab-separated values:
//!
//! ```text
//! wbsim-live-restore 1
//! pid 3223 1043021
//! sysctl dirty_bytes 0
//! mount /tmp/wbsim-live-3223-scratch
//! ```

use super::cgroup::V2Cgroup;
use super::Restore;
use std::path::{Path, PathBuf};

/// Where the journal lives when /run is a tmpfs.
pub const JOURNAL_DIR: &str = "/run/wbsim";
/// Where it lives when /run is not (a VM whose /run is on its root disk).
pub const JOURNAL_DIR_SHM: &str = "/dev/shm/wbsim";

/// Whether `path` is on a tmpfs (`statfs` f_type `TMPFS_MAGIC`).
fn on_tmpfs(path: &str) -> bool {
    let Ok(c) = std::ffi::CString::new(path) else {
        return false;
    };
    // SAFETY: statfs(2) fills the zeroed struct from a NUL-terminated path.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut st) == 0 && st.f_type == libc::TMPFS_MAGIC
    }
}

/// The journal's directory: `/run/wbsim` where /run is a tmpfs, else
/// `/dev/shm/wbsim` where /dev/shm is one, else `/run/wbsim`.
pub fn journal_dir() -> PathBuf {
    if !on_tmpfs("/run") && on_tmpfs("/dev/shm") {
        PathBuf::from(JOURNAL_DIR_SHM)
    } else {
        PathBuf::from(JOURNAL_DIR)
    }
}

/// Every directory a journal may be in, the current one first (a run of
/// an older wbsim, or on another layout, may have left one in the other).
pub fn journal_dirs() -> Vec<PathBuf> {
    let first = journal_dir();
    let mut v = vec![first.clone()];
    for d in [JOURNAL_DIR, JOURNAL_DIR_SHM] {
        if Path::new(d) != first {
            v.push(PathBuf::from(d));
        }
    }
    v
}
const MAGIC: &str = "wbsim-live-restore 1";

/// Remove journal `path`, and its directory if no other run's journal is
/// left in it (`remove_dir` fails on a directory that is not empty). A run
/// starting meanwhile recreates the directory when it writes (`sync`).
pub(super) fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
    if let Some(dir) = path.parent() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// The start time of process `pid` (field 22 of /proc/PID/stat, in clock
/// ticks since boot): with the pid, it names one process, even after the
/// pid is reused.
pub(super) fn start_time(pid: u32) -> Option<u64> {
    super::proc_stat_field(pid, 22)
}

impl Restore {
    /// Start journaling this run's changes to `dir/live-PID.restore`.
    pub fn journal_in(&mut self, dir: &Path) {
        let pid = std::process::id();
        if let Err(e) = std::fs::create_dir_all(dir) {
            self.log.push(format!(
                "no restore journal ({}: {e}); a SIGKILL would leave the machine changed",
                dir.display()
            ));
            return;
        }
        self.journal = Some(dir.join(format!("live-{pid}.restore")));
        self.sync();
    }

    /// The journal's text for the current state.
    pub(super) fn journal_text(&self) -> String {
        let pid = std::process::id();
        let mut t = format!("{MAGIC}\npid\t{pid}\t{}\n", start_time(pid).unwrap_or(0));
        let mut line = |kind: &str, v: &str| {
            t.push_str(kind);
            t.push('\t');
            t.push_str(v);
            t.push('\n');
        };
        for (k, v) in &self.sysctls {
            line("sysctl", &format!("{k}\t{v}"));
        }
        for c in &self.children {
            line(
                "child",
                &format!("{}\t{}", c.id(), start_time(c.id()).unwrap_or(0)),
            );
        }
        if let Some(i) = &self.instance {
            line("instance", &i.to_string_lossy());
        }
        if self.tracefs_mounted {
            line("tracefs_mounted", "1");
        }
        for mm in &self.throttle {
            line("throttle", mm);
        }
        if let Some(cg) = &self.cgroup {
            line("cgroup", &cg.journal_value());
        }
        for m in &self.mounts {
            line("mount", &m.to_string_lossy());
        }
        for d in &self.dirs {
            line("dir", &d.to_string_lossy());
        }
        for l in &self.loops {
            line("loop", l);
        }
        for n in &self.created {
            line("created", &n.to_string());
        }
        for i in &self.images {
            line("image", &i.to_string_lossy());
        }
        t
    }

    /// Write the journal (if this run keeps one) for the current state.
    pub fn sync(&mut self) {
        let Some(path) = self.journal.clone() else {
            return;
        };
        let tmp = path.with_extension("tmp");
        let text = self.journal_text();
        let write = || std::fs::write(&tmp, &text).and_then(|_| std::fs::rename(&tmp, &path));
        let r = write().or_else(|e| match (e.kind(), path.parent()) {
            // another run, ending, removed the directory it found empty
            (std::io::ErrorKind::NotFound, Some(dir)) => {
                std::fs::create_dir_all(dir).and_then(|_| write())
            }
            _ => Err(e),
        });
        if let Err(e) = r {
            self.log.push(format!(
                "could not write the restore journal {}: {e}",
                path.display()
            ));
            self.journal = None;
        }
    }

    /// Rebuild the guard of a dead run from its journal `text`. Returns
    /// the guard and the dead run's pid; errors name the line.
    pub(super) fn from_journal(text: &str) -> Result<(Restore, u32, u64), String> {
        let mut g = Restore::default();
        match g.read_records(text) {
            Ok((pid, st)) => Ok((g, pid, st)),
            Err(e) => {
                // a guard restores on drop: not one half read
                std::mem::forget(g);
                Err(e)
            }
        }
    }

    fn read_records(&mut self, text: &str) -> Result<(u32, u64), String> {
        let g = self;
        let mut lines = text.lines().enumerate();
        if lines.next().map(|(_, l)| l) != Some(MAGIC) {
            return Err(format!("line 1: expected \"{MAGIC}\""));
        }
        let mut pid = None;
        for (i, l) in lines {
            let bad = || format!("line {}: cannot read {l:?}", i + 1);
            let (kind, v) = l.split_once('\t').ok_or_else(bad)?;
            let num = |s: &str| s.parse::<u64>().map_err(|_| bad());
            match kind {
                "pid" => {
                    let (p, st) = v.split_once('\t').ok_or_else(bad)?;
                    pid = Some((num(p)? as u32, num(st)?));
                }
                "sysctl" => {
                    let (k, val) = v.split_once('\t').ok_or_else(bad)?;
                    g.sysctls.push((k.to_string(), val.to_string()));
                }
                "child" => {
                    let (p, st) = v.split_once('\t').ok_or_else(bad)?;
                    g.orphans.push((num(p)? as u32, num(st)?));
                }
                "instance" => g.instance = Some(PathBuf::from(v)),
                "tracefs_mounted" => g.tracefs_mounted = true,
                "throttle" => g.throttle.push(v.to_string()),
                "cgroup" => g.cgroup = Some(V2Cgroup::from_journal_value(v).ok_or_else(bad)?),
                "mount" => g.mounts.push(PathBuf::from(v)),
                "dir" => g.dirs.push(PathBuf::from(v)),
                "loop" => g.loops.push(v.to_string()),
                "created" => g.created.push(num(v)? as u32),
                "image" => g.images.push(PathBuf::from(v)),
                _ => return Err(format!("line {}: unknown record {kind:?}", i + 1)),
            }
        }
        Ok(pid.ok_or("no pid record")?)
    }

    /// A one-line account of what this guard holds, for the recovery
    /// message.
    pub(super) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.sysctls.is_empty() {
            let other = self.sysctls.iter().any(|(k, _)| k.contains('.'));
            parts.push(if other {
                "the vm.dirty_* sysctls and kernel.sched_autogroup_enabled".to_string()
            } else {
                "the vm.dirty_* sysctls".to_string()
            });
        }
        if !self.orphans.is_empty() {
            parts.push(format!("{} dd process(es)", self.orphans.len()));
        }
        if let Some(i) = &self.instance {
            parts.push(format!("trace instance {}", i.display()));
        }
        for mm in &self.throttle {
            parts.push(format!("the blkio throttle rule of {mm}"));
        }
        if let Some(cg) = &self.cgroup {
            parts.push(format!("cgroup {}", cg.dir.display()));
        }
        for m in &self.mounts {
            parts.push(format!("mount {}", m.display()));
        }
        for l in &self.loops {
            parts.push(l.clone());
        }
        for i in &self.images {
            parts.push(format!("image {}", i.display()));
        }
        if self.tracefs_mounted {
            parts.push("the tracefs mount".into());
        }
        if parts.is_empty() {
            "nothing".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Undo what dead live runs left behind, as their journals in `dir`
/// record. Runs still alive are left alone. Returns one message per
/// journal handled (what was restored, and anything that failed).
pub fn recover_stale(dir: &Path) -> Vec<String> {
    let mut msgs = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return msgs;
    };
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "restore"))
        .collect();
    files.sort();
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        match Restore::from_journal(&text) {
            Err(e) => msgs.push(format!(
                "{}: unreadable restore journal ({e}); left in place",
                f.display()
            )),
            Ok((mut g, pid, st)) => {
                if start_time(pid).is_some_and(|now| now == st) {
                    continue; // a run in progress
                }
                let what = g.describe();
                g.restore();
                remove(&f);
                let mut m = format!(
                    "restored the machine after live run {pid}, which ended without restoring it: {what}"
                );
                for l in g.log.drain(..) {
                    m.push_str(&format!("; {l}"));
                }
                msgs.push(m);
            }
        }
    }
    msgs.extend(remove_orphan_instances(
        &Path::new(super::TRACEFS).join("instances"),
    ));
    msgs
}

/// Trace instances named `wbsim-live-PID` whose run is gone: no process
/// PID, or one that is not wbsim (the pid reused). A run without a
/// journal leaves one when it dies before writing its journal, or when two
/// runs shared a tracefs mount and the first unmounted it under the second
/// (before live runs took a machine-wide lock). Returns a message per
/// instance removed or left.
pub fn remove_orphan_instances(dir: &Path) -> Vec<String> {
    let mut msgs = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return msgs;
    };
    let mut names: Vec<String> = rd
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    for n in names {
        let Some(pid) = n
            .strip_prefix("wbsim-live-")
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.starts_with("wbsim") {
            continue; // its run is alive
        }
        let path = dir.join(&n);
        match std::fs::remove_dir(&path) {
            Ok(()) => msgs.push(format!(
                "removed trace instance {}, left by live run {pid}",
                path.display()
            )),
            Err(e) => msgs.push(format!(
                "could not remove trace instance {} left by live run {pid}: {e}",
                path.display()
            )),
        }
    }
    msgs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_round_trips() {
        let mut g = Restore::default();
        g.sysctls.push(("dirty_bytes".into(), "0".into()));
        g.sysctls.push(("dirty_ratio".into(), "20".into()));
        g.instance = Some(PathBuf::from("/sys/kernel/tracing/instances/wbsim-live-7"));
        g.tracefs_mounted = true;
        g.throttle.push("7:64".into());
        g.mounts.push(PathBuf::from("/tmp/wbsim-live-7-a b"));
        g.dirs.push(PathBuf::from("/tmp/wbsim-live-7-a b"));
        g.loops.push("/dev/loop64".into());
        g.created.push(64);
        g.images
            .push(PathBuf::from("/dev/shm/wbsim-live-7-loop0.img"));
        let text = g.journal_text();
        let (h, pid, _) = Restore::from_journal(&text).unwrap();
        assert_eq!(pid, std::process::id());
        assert_eq!(h.sysctls, g.sysctls);
        assert_eq!(h.instance, g.instance);
        assert!(h.tracefs_mounted);
        assert_eq!(h.throttle, g.throttle);
        assert_eq!(h.mounts, g.mounts);
        assert_eq!(h.dirs, g.dirs);
        assert_eq!(h.loops, g.loops);
        assert_eq!(h.created, g.created);
        assert_eq!(h.images, g.images);
        // the guard must not undo anything when these test values drop
        std::mem::forget(g);
        std::mem::forget(h);
    }

    #[test]
    fn bad_journals_name_the_line() {
        let e = Restore::from_journal("something else\n").err().unwrap();
        assert!(e.contains("line 1"), "{e}");
        let e = Restore::from_journal(&format!("{MAGIC}\npid\t1\t2\nfrob\tx\n"))
            .err()
            .unwrap();
        assert!(e.contains("line 3") && e.contains("frob"), "{e}");
        let e = Restore::from_journal(&format!("{MAGIC}\ncreated\tx\n"))
            .err()
            .unwrap();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn live_runs_are_left_alone() {
        let dir = std::env::temp_dir().join(format!("wbsim-journal-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // this test process is alive, so its journal is not touched
        let me = std::process::id();
        let text = format!(
            "{MAGIC}\npid\t{me}\t{}\nmount\t/nonexistent/wbsim-x\n",
            start_time(me).unwrap()
        );
        let f = dir.join("live-1.restore");
        std::fs::write(&f, &text).unwrap();
        assert!(recover_stale(&dir).is_empty());
        assert!(f.exists());
        // a journal of a dead process (same pid, other start time) is
        // replayed and removed; its records name nothing that exists
        let text = format!("{MAGIC}\npid\t{me}\t1\ndir\t/nonexistent/wbsim-x\n");
        std::fs::write(&f, text).unwrap();
        let m = recover_stale(&dir);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("restored"), "{m:?}");
        // the directory held only that journal: it is gone with it
        assert!(!dir.exists());
    }

    #[test]
    fn a_journal_and_its_emptied_directory_go_when_the_run_restores() {
        let dir = std::env::temp_dir().join(format!("wbsim-journal-dir-{}", std::process::id()));
        let mut g = Restore::default();
        g.journal_in(&dir);
        let f = dir.join(format!("live-{}.restore", std::process::id()));
        assert!(f.exists());
        // another run's end removed the directory: the next write makes it
        std::fs::remove_file(&f).unwrap();
        std::fs::remove_dir(&dir).unwrap();
        g.sync();
        assert!(f.exists(), "{:?}", g.log);
        // a guard with nothing to undo: restoring removes file and directory
        g.restore();
        assert!(!dir.exists());
        // a directory that still holds another run's journal is kept
        let mut g = Restore::default();
        g.journal_in(&dir);
        let other = dir.join("live-1.restore");
        std::fs::write(&other, "x").unwrap();
        g.restore();
        assert!(other.exists() && !f.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn orphan_instances_of_dead_runs_go_and_live_ones_stay() {
        let dir = std::env::temp_dir().join(format!("wbsim-orphans-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // no process has pid 0; pid 1 is init, alive but not wbsim
        for n in [
            "wbsim-live-0",
            "wbsim-live-1",
            "other-instance",
            "wbsim-live-x",
        ] {
            std::fs::create_dir(dir.join(n)).unwrap();
        }
        let msgs = remove_orphan_instances(&dir);
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert!(!dir.join("wbsim-live-0").exists());
        assert!(!dir.join("wbsim-live-1").exists());
        assert!(dir.join("other-instance").exists());
        assert!(dir.join("wbsim-live-x").exists());
        // a live wbsim process keeps its instance: this test binary's
        // comm starts with "wbsim" (cargo names it wbsim-HASH)
        let me = format!("wbsim-live-{}", std::process::id());
        std::fs::create_dir(dir.join(&me)).unwrap();
        let comm = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
        let msgs = remove_orphan_instances(&dir);
        assert_eq!(
            dir.join(&me).exists(),
            comm.starts_with("wbsim"),
            "{msgs:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
