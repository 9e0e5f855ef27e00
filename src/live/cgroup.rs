//! How live mode caps its loop device's writes: the root cgroup v1 blkio
//! throttle where the blkio controller is mounted, otherwise cgroup v2
//! `io.max` on a private child cgroup that the writers run in.
//!
//! `io.max` cannot be set on the root cgroup, and a v2 limit only reaches
//! buffered writes if the flusher's IO is charged to the cgroup that dirtied
//! the pages: that is cgroup writeback, which needs both the `io` and the
//! `memory` controller on the v2 hierarchy. So the v2 path creates
//! `<mount>/wbsim-live-PID`, enables `+io`/`+memory` in the mount root's
//! `cgroup.subtree_control` where they are not enabled yet (and disables
//! exactly those again afterwards), writes `MAJ:MIN wbps=N` to the child's
//! `io.max` and moves each writer into the child between fork and exec.
//!
//! The parsing and the v1/v2/refuse decision are pure functions, tested
//! without a kernel; [`probe`] reads the machine for them.

use std::path::{Path, PathBuf};
use std::time::Duration;

pub const BLKIO_THROTTLE: &str = "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device";

/// The controllers a v2 write cap needs: `io` for io.max, `memory` for
/// cgroup writeback (without it the flusher writes as the root cgroup).
pub const V2_CONTROLLERS: [&str; 2] = ["io", "memory"];

/// What a cgroup v2 mount offers, as read from the machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct V2Probe {
    /// Where the hierarchy is mounted.
    pub mount: PathBuf,
    /// The mount root's `cgroup.controllers`.
    pub controllers: String,
    /// The mount root's `cgroup.subtree_control`.
    pub subtree_control: String,
    /// The mount root is not the hierarchy's root (a cgroup namespace or a
    /// subtree mount: it has a `cgroup.type`) and has processes of its own,
    /// so the kernel refuses to enable domain controllers for its children.
    pub busy_nonroot: bool,
}

/// How the device's writes will be capped.
#[derive(Clone, Debug, PartialEq)]
pub enum CapMethod {
    /// The root v1 `blkio.throttle.write_bps_device` rule.
    V1Blkio,
    /// cgroup v2 `io.max` in a child of `mount`; `enable` lists the
    /// controllers to add to the mount root's `cgroup.subtree_control`.
    V2 {
        mount: PathBuf,
        enable: Vec<&'static str>,
    },
}

impl CapMethod {
    /// For messages: how the cap is applied.
    pub fn describe(&self) -> String {
        match self {
            CapMethod::V1Blkio => "the root cgroup v1 blkio throttle".into(),
            CapMethod::V2 { mount, .. } => format!(
                "cgroup v2 io.max on a child of {} (cgroup writeback)",
                mount.display()
            ),
        }
    }
}

/// Undo the octal escapes of a /proc/self/mountinfo path (`\040` etc.).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount points of the cgroup2 filesystems in a /proc/self/mountinfo
/// text, in mount order.
pub fn cgroup2_mounts(mountinfo: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for l in mountinfo.lines() {
        // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPER"
        let Some((pre, post)) = l.split_once(" - ") else {
            continue;
        };
        if post.split_whitespace().next() != Some("cgroup2") {
            continue;
        }
        if let Some(mp) = pre.split_whitespace().nth(4) {
            v.push(PathBuf::from(unescape(mp)));
        }
    }
    v
}

/// Whether a `cgroup.controllers`/`cgroup.subtree_control` text lists `c`.
pub fn lists(text: &str, c: &str) -> bool {
    text.split_whitespace().any(|x| x == c)
}

/// The `io.max` line capping writes of device `majmin` at `bps` bytes/s.
pub fn io_max_line(majmin: &str, bps: u64) -> String {
    format!("{majmin} wbps={bps}")
}

/// The `io.max` line lifting that cap again.
pub fn io_max_clear(majmin: &str) -> String {
    format!("{majmin} wbps=max")
}

/// Decide how to cap: the v1 blkio throttle if it is writable, else the
/// first v2 mount that has both `io` and `memory`; else the reason why
/// neither can be used, in one line.
pub fn choose(v1_writable: bool, v2: &[V2Probe]) -> Result<CapMethod, String> {
    if v1_writable {
        return Ok(CapMethod::V1Blkio);
    }
    let no_v1 = format!("no writable cgroup v1 blkio throttle at {BLKIO_THROTTLE}");
    let Some(p) = v2
        .iter()
        .find(|p| V2_CONTROLLERS.iter().all(|c| lists(&p.controllers, c)))
        .or(v2.first())
    else {
        return Err(format!("{no_v1}, and no cgroup v2 hierarchy is mounted"));
    };
    let missing: Vec<&str> = V2_CONTROLLERS
        .iter()
        .copied()
        .filter(|c| !lists(&p.controllers, c))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{no_v1}, and the cgroup v2 hierarchy at {} lacks the {} controller{} (cgroup.controllers: \"{}\"; io.max needs io, and cgroup writeback needs memory too: are they bound to v1?)",
            p.mount.display(),
            missing.join(" and "),
            if missing.len() > 1 { "s" } else { "" },
            p.controllers.trim()
        ));
    }
    let enable: Vec<&'static str> = V2_CONTROLLERS
        .iter()
        .copied()
        .filter(|c| !lists(&p.subtree_control, c))
        .collect();
    if !enable.is_empty() && p.busy_nonroot {
        return Err(format!(
            "{no_v1}, and {} cannot enable {} for a child cgroup: it is not the root cgroup and has processes of its own",
            p.mount.display(),
            enable.join("+")
        ));
    }
    Ok(CapMethod::V2 {
        mount: p.mount.clone(),
        enable,
    })
}

/// Read what [`choose`] needs from the machine (touches nothing).
pub fn probe() -> (bool, Vec<V2Probe>) {
    let v1 = std::fs::OpenOptions::new()
        .write(true)
        .open(BLKIO_THROTTLE)
        .is_ok();
    let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let v2 = cgroup2_mounts(&mi)
        .into_iter()
        .map(|m| {
            let rd = |f: &str| std::fs::read_to_string(m.join(f)).unwrap_or_default();
            let busy_nonroot =
                m.join("cgroup.type").exists() && !rd("cgroup.procs").trim().is_empty();
            V2Probe {
                controllers: rd("cgroup.controllers"),
                subtree_control: rd("cgroup.subtree_control"),
                busy_nonroot,
                mount: m,
            }
        })
        .collect();
    (v1, v2)
}

/// A private v2 cgroup with an io.max cap; undone by [`V2Cgroup::clear_caps`]
/// and [`V2Cgroup::remove`].
#[derive(Debug)]
pub struct V2Cgroup {
    pub dir: PathBuf,
    parent: PathBuf,
    /// Controllers this run added to the parent's subtree_control.
    enabled: Vec<&'static str>,
    /// Devices with an io.max line.
    capped: Vec<String>,
    /// Whether this run created `dir`.
    made: bool,
    /// The cgroup directory's inode: the `cgroup_ino` of its wb's trace
    /// lines.
    pub ino: u64,
}

fn wr(p: &Path, v: &str) -> Result<(), String> {
    std::fs::write(p, v).map_err(|e| format!("write {:?} to {}: {e}", v.trim(), p.display()))
}

impl V2Cgroup {
    /// Enable `enable` in `mount`'s subtree_control and create
    /// `mount/name`. On error the part already done is kept in `slot`,
    /// so that the caller's guard undoes it.
    pub fn create(
        mount: &Path,
        enable: &[&'static str],
        name: &str,
        slot: &mut Option<V2Cgroup>,
    ) -> Result<(), String> {
        let cg = slot.insert(V2Cgroup {
            dir: mount.join(name),
            parent: mount.to_path_buf(),
            enabled: Vec::new(),
            capped: Vec::new(),
            made: false,
            ino: 0,
        });
        for c in enable {
            wr(&mount.join("cgroup.subtree_control"), &format!("+{c}"))?;
            cg.enabled.push(c);
        }
        std::fs::create_dir(&cg.dir).map_err(|e| format!("mkdir {}: {e}", cg.dir.display()))?;
        cg.made = true;
        use std::os::unix::fs::MetadataExt;
        cg.ino = std::fs::metadata(&cg.dir)
            .map_err(|e| format!("stat {}: {e}", cg.dir.display()))?
            .ino();
        let have = std::fs::read_to_string(cg.dir.join("cgroup.controllers")).unwrap_or_default();
        if let Some(c) = V2_CONTROLLERS.iter().find(|c| !lists(&have, c)) {
            return Err(format!(
                "{} did not get the {c} controller (cgroup.controllers: \"{}\")",
                cg.dir.display(),
                have.trim()
            ));
        }
        Ok(())
    }

    /// The restore journal's record of this cgroup: dir, parent, whether
    /// this run made it, its inode, the controllers enabled and the devices
    /// capped, tab-separated (lists comma-separated).
    pub fn journal_value(&self) -> String {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}",
            self.dir.display(),
            self.parent.display(),
            u8::from(self.made),
            self.ino,
            self.enabled.join(","),
            self.capped.join(",")
        )
    }

    /// Read [`V2Cgroup::journal_value`] back; `None` if malformed.
    pub fn from_journal_value(v: &str) -> Option<V2Cgroup> {
        let f: Vec<&str> = v.split('\t').collect();
        let [dir, parent, made, ino, enabled, capped] = f[..] else {
            return None;
        };
        let list = |s: &str| -> Vec<String> {
            s.split(',')
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect()
        };
        let mut en = Vec::new();
        for c in list(enabled) {
            // only the controllers live mode enables
            en.push(*V2_CONTROLLERS.iter().find(|k| **k == c)?);
        }
        Some(V2Cgroup {
            dir: PathBuf::from(dir),
            parent: PathBuf::from(parent),
            enabled: en,
            capped: list(capped),
            made: made == "1",
            ino: ino.parse().ok()?,
        })
    }

    /// Cap writes of device `majmin` at `bps` bytes/s.
    pub fn cap(&mut self, majmin: &str, bps: u64) -> Result<(), String> {
        wr(&self.dir.join("io.max"), &io_max_line(majmin, bps))?;
        self.capped.push(majmin.to_string());
        Ok(())
    }

    /// `cgroup.procs` of the cgroup, for a writer to write "0" to.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Lift the io.max caps (before the final flush at umount).
    pub fn clear_caps(&mut self, log: &mut Vec<String>) {
        for mm in self.capped.drain(..) {
            if let Err(e) = wr(&self.dir.join("io.max"), &io_max_clear(&mm)) {
                log.push(format!("could not lift the io.max cap of {mm}: {e}"));
            }
        }
    }

    /// Move anything left in the cgroup to the parent, remove it, and
    /// disable the controllers this run enabled.
    pub fn remove(mut self, log: &mut Vec<String>) {
        self.clear_caps(log);
        if self.made {
            let mut ok = false;
            for _ in 0..100 {
                let left = std::fs::read_to_string(self.procs()).unwrap_or_default();
                for pid in left.split_whitespace() {
                    let _ = std::fs::write(self.parent.join("cgroup.procs"), pid);
                }
                if std::fs::remove_dir(&self.dir).is_ok() {
                    ok = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            if !ok {
                log.push(format!("could not remove cgroup {}", self.dir.display()));
            }
        }
        for c in self.enabled.drain(..).rev() {
            if let Err(e) = wr(
                &self.parent.join("cgroup.subtree_control"),
                &format!("-{c}"),
            ) {
                log.push(format!("could not disable the {c} controller again: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const PURE_V2: &str = "\
22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
90 26 0:23 / /mnt/cg\\040two rw,relatime shared:9 - cgroup2 none rw
";

    fn v2(mount: &str, controllers: &str, subtree: &str) -> V2Probe {
        V2Probe {
            mount: mount.into(),
            controllers: controllers.into(),
            subtree_control: subtree.into(),
            busy_nonroot: false,
        }
    }

    #[test]
    fn finds_cgroup2_mounts() {
        assert_eq!(
            cgroup2_mounts(HYBRID),
            vec![PathBuf::from("/sys/fs/cgroup/unified")]
        );
        assert_eq!(
            cgroup2_mounts(PURE_V2),
            vec![
                PathBuf::from("/sys/fs/cgroup"),
                PathBuf::from("/mnt/cg two")
            ]
        );
        assert!(cgroup2_mounts("").is_empty());
        assert!(cgroup2_mounts("garbage without separator\n").is_empty());
    }

    #[test]
    fn controller_lists() {
        let c = "cpuset cpu io memory hugetlb pids rdma misc\n";
        assert!(lists(c, "io") && lists(c, "memory"));
        assert!(!lists("iommu memoryx", "io"));
        assert!(!lists("", "io"));
    }

    #[test]
    fn io_max_lines() {
        assert_eq!(io_max_line("7:64", 10485760), "7:64 wbps=10485760");
        assert_eq!(io_max_clear("7:64"), "7:64 wbps=max");
    }

    #[test]
    fn v1_is_preferred() {
        let all = [v2("/sys/fs/cgroup", "io memory", "io memory")];
        assert_eq!(choose(true, &all), Ok(CapMethod::V1Blkio));
        assert_eq!(choose(true, &[]), Ok(CapMethod::V1Blkio));
    }

    #[test]
    fn v2_when_v1_is_missing() {
        // the guest rig: cgroup2 at /sys/fs/cgroup, nothing enabled yet
        let p = [v2("/sys/fs/cgroup", "cpuset cpu io memory pids", "")];
        assert_eq!(
            choose(false, &p),
            Ok(CapMethod::V2 {
                mount: "/sys/fs/cgroup".into(),
                enable: vec!["io", "memory"],
            })
        );
        // systemd: already enabled, nothing to change
        let p = [v2("/sys/fs/cgroup", "io memory pids", "memory pids io")];
        assert_eq!(
            choose(false, &p),
            Ok(CapMethod::V2 {
                mount: "/sys/fs/cgroup".into(),
                enable: vec![],
            })
        );
        // the usable one of two mounts
        let p = [v2("/a", "hugetlb", ""), v2("/b", "io memory", "memory")];
        assert_eq!(
            choose(false, &p),
            Ok(CapMethod::V2 {
                mount: "/b".into(),
                enable: vec!["io"],
            })
        );
    }

    #[test]
    fn refuses_with_one_line() {
        let one_line = |r: Result<CapMethod, String>| {
            let e = r.unwrap_err();
            assert_eq!(e.lines().count(), 1, "{e}");
            e
        };
        let e = one_line(choose(false, &[]));
        assert!(e.contains("no cgroup v2 hierarchy"), "{e}");
        // this host's hybrid layout without a v1 blkio: io is bound to v1
        let e = one_line(choose(
            false,
            &[v2("/sys/fs/cgroup/unified", "hugetlb\n", "")],
        ));
        assert!(e.contains("lacks the io and memory controllers"), "{e}");
        let e = one_line(choose(false, &[v2("/sys/fs/cgroup", "io pids", "")]));
        assert!(e.contains("lacks the memory controller"), "{e}");
        let mut p = v2("/sys/fs/cgroup", "io memory", "");
        p.busy_nonroot = true;
        let e = one_line(choose(false, &[p.clone()]));
        assert!(e.contains("processes of its own"), "{e}");
        // ... which does not matter if nothing needs enabling
        p.subtree_control = "io memory".into();
        assert!(choose(false, &[p]).is_ok());
    }

    #[test]
    fn unescapes_mount_points() {
        assert_eq!(unescape("/a\\040b\\134c"), "/a b\\c");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/trail\\04"), "/trail\\04");
    }
}
