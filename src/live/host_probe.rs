//! How much of this machine's free memory its hypervisor still backs, and
//! what touching a page beyond it costs: the state that
//! `machine.host_backed_free` and `machine.cost.host_fault` describe
//! (mm/page_reporting.rs).
//!
//! A guest with free page reporting (mm/page_reporting.c,
//! virtio-balloon's `VIRTIO_BALLOON_F_REPORTING`) hands free blocks back to
//! the host, which discards them; the next touch of such a page faults on
//! the host. How much free memory is still backed when a run starts depends
//! on what the machine did before (how much was freed in large blocks, and
//! how much of it the reporting has got to), not on the kernel under test,
//! so it is measured, not assumed. On the host rig five probes within two
//! hours found 5.5 to 8.25 GB of 14-17 GB free memory backed, and a touch
//! beyond it 8.5-9 us slower than one within it.
//!
//! The probe maps anonymous memory and writes one byte to each page in
//! turn, timing each write: the kernel's anonymous fault allocates and
//! zeroes the page, and zeroing a page the host does not back is the host
//! fault. Pages are taken in bins of [`BIN`]; the backed memory ends in the
//! first bin where most writes are slow. A few bins more give the fault's
//! cost. Everything is unmapped at the end, and the freed memory goes back
//! to the allocator (and, in large blocks, to the reporting).

use std::time::Instant;

/// Pages per bin: 16 MiB of 4 KiB pages.
const BIN: usize = 4096;
/// A write slower than this paid more than the guest's own fault path
/// (about 1.5 us on the rig, a few hundred ns on bare metal).
const SLOW_NS: u64 = 5_000;
/// Bins measured past the first slow one, for the fault's cost.
const COST_BINS: usize = 4;

/// What the probe found.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostProbe {
    /// Bytes the probe touched.
    pub probed_bytes: u64,
    /// Free memory the host backed: the bytes touched before the first
    /// bin of mostly slow writes; None when every bin was fast (then all
    /// the probed memory, at least, is backed).
    pub backed_free_bytes: Option<u64>,
    /// Mean cost of a write within the backed memory (ns a page).
    pub touch_ns: u64,
    /// Mean extra cost of a write beyond it (ns a page), from up to
    /// [`COST_BINS`] slow bins; None when there were none.
    pub host_fault_ns: Option<u64>,
}

impl HostProbe {
    /// The scenario settings that reproduce this state.
    pub fn settings(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(b) = self.backed_free_bytes {
            v.push(format!("machine.host_backed_free=\"{}M\"", b >> 20));
        }
        if let Some(f) = self.host_fault_ns {
            v.push(format!("machine.cost.host_fault=\"{f}ns\""));
        }
        v
    }
}

impl HostProbe {
    /// One line for the progress output.
    pub fn describe(&self) -> String {
        let mib = |b: u64| b >> 20;
        match (self.backed_free_bytes, self.host_fault_ns) {
            (Some(b), Some(f)) => format!(
                "{} MiB of free memory backed, then {:.1} us a page more (a write within: {:.2} us); simulate it with --set {}",
                mib(b),
                f as f64 / 1e3,
                self.touch_ns as f64 / 1e3,
                self.settings().join(" --set ")
            ),
            _ => format!(
                "all {} MiB probed were backed (a write: {:.2} us): no host faults to simulate",
                mib(self.probed_bytes),
                self.touch_ns as f64 / 1e3
            ),
        }
    }
}

/// Probe this machine, as far as its available memory allows.
pub fn probe_machine() -> Result<HostProbe, String> {
    let mi = std::fs::read_to_string("/proc/meminfo").map_err(|e| format!("/proc/meminfo: {e}"))?;
    let limit = probe_limit(&mi).ok_or("/proc/meminfo has no MemAvailable line")?;
    probe(limit)
}

/// One bin's writes: how many were slow, and their total time (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bin {
    pub pages: u64,
    pub slow: u64,
    pub ns: u64,
}

impl Bin {
    fn mostly_slow(&self) -> bool {
        2 * self.slow > self.pages
    }
    fn mean(&self) -> u64 {
        self.ns / self.pages.max(1)
    }
}

/// Read the probe's bins (pure, so that it is tested without a
/// hypervisor): the fast prefix, and the cost of the slow bins after it.
pub fn analyse(bins: &[Bin], page: u64) -> HostProbe {
    let probed = bins.iter().map(|b| b.pages).sum::<u64>() * page;
    let first_slow = bins.iter().position(Bin::mostly_slow);
    let fast = &bins[..first_slow.unwrap_or(bins.len())];
    let fast_pages: u64 = fast.iter().map(|b| b.pages).sum();
    let touch_ns = fast.iter().map(|b| b.ns).sum::<u64>() / fast_pages.max(1);
    let Some(i) = first_slow else {
        return HostProbe {
            probed_bytes: probed,
            backed_free_bytes: None,
            touch_ns,
            host_fault_ns: None,
        };
    };
    // the first slow bin's fast writes were still backed
    let backed = fast_pages + (bins[i].pages - bins[i].slow);
    let slow: Vec<&Bin> = bins[i..]
        .iter()
        .filter(|b| b.mostly_slow())
        .skip(1) // the boundary bin mixes both
        .take(COST_BINS)
        .collect();
    let slow = if slow.is_empty() {
        vec![&bins[i]]
    } else {
        slow
    };
    let mean = slow.iter().map(|b| b.mean()).sum::<u64>() / slow.len() as u64;
    HostProbe {
        probed_bytes: probed,
        backed_free_bytes: Some(backed * page),
        touch_ns,
        host_fault_ns: Some(mean.saturating_sub(touch_ns)),
    }
}

/// How much to probe: the memory available less a margin (a tenth of
/// it, and at least 1 GiB), so the probe never pushes the machine into
/// reclaim. From /proc/meminfo's MemAvailable.
pub fn probe_limit(meminfo: &str) -> Option<u64> {
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    let avail = kib << 10;
    let margin = (avail / 10).max(1 << 30);
    Some(avail.saturating_sub(margin))
}

/// Touch up to `limit` bytes of fresh anonymous memory, a page at a time,
/// and stop [`COST_BINS`] mostly-slow bins past the first one.
pub fn probe(limit: u64) -> Result<HostProbe, String> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    let nbins = (limit as usize / page) / BIN;
    if nbins == 0 {
        return Err(format!(
            "only {} MiB of memory available to probe",
            limit >> 20
        ));
    }
    let len = nbins * BIN * page;
    let mut m = super::anon::Anon::map(len, libc::MAP_NORESERVE)?;
    m.no_huge_pages();
    let base = m.as_mut_ptr();
    let mut bins: Vec<Bin> = Vec::new();
    let mut slow_seen = 0;
    for b in 0..nbins {
        let mut bin = Bin::default();
        for i in 0..BIN {
            let t = Instant::now();
            // SAFETY: the offset is inside the mapping; a volatile write
            // so the touch is not optimised away.
            unsafe { base.add((b * BIN + i) * page).write_volatile(1) };
            let ns = t.elapsed().as_nanos() as u64;
            bin.pages += 1;
            bin.ns += ns;
            bin.slow += (ns > SLOW_NS) as u64;
        }
        bins.push(bin);
        if bin.mostly_slow() {
            slow_seen += 1;
            if slow_seen > COST_BINS {
                break;
            }
        }
    }
    drop(m);
    Ok(analyse(&bins, page as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(slow: u64, mean: u64) -> Bin {
        Bin {
            pages: BIN as u64,
            slow,
            ns: mean * BIN as u64,
        }
    }

    #[test]
    fn the_backed_memory_ends_at_the_first_mostly_slow_bin() {
        // 3 fast bins at 1.5 us, a boundary bin with a quarter of its
        // pages fast, then faults at 10.5 us
        let mut bins = vec![bin(4, 1500), bin(0, 1500), bin(12, 1500)];
        bins.push(bin(3 * BIN as u64 / 4, 8000));
        bins.extend([bin(4000, 10_500), bin(4090, 10_500), bin(4096, 10_500)]);
        let p = analyse(&bins, 4096);
        let backed = (3 * BIN as u64 + BIN as u64 / 4) * 4096;
        assert_eq!(p.backed_free_bytes, Some(backed));
        assert_eq!(p.touch_ns, 1500);
        // the boundary bin is left out of the cost
        assert_eq!(p.host_fault_ns, Some(9000));
        assert_eq!(p.probed_bytes, 7 * BIN as u64 * 4096);
        assert_eq!(
            p.settings(),
            vec![
                format!("machine.host_backed_free=\"{}M\"", backed >> 20),
                "machine.cost.host_fault=\"9000ns\"".to_string()
            ]
        );
    }

    #[test]
    fn a_few_slow_writes_are_noise_and_all_fast_means_all_backed() {
        // preemption makes a few writes slow; no bin is mostly slow
        let bins = vec![bin(300, 1600), bin(2000, 4000), bin(1, 1400)];
        let p = analyse(&bins, 4096);
        assert_eq!(p.backed_free_bytes, None);
        assert_eq!(p.host_fault_ns, None);
        assert!(p.settings().is_empty());
    }

    #[test]
    fn nothing_backed_when_the_first_bin_is_slow() {
        let bins = vec![bin(4096, 11_000), bin(4096, 11_000)];
        let p = analyse(&bins, 4096);
        assert_eq!(p.backed_free_bytes, Some(0));
        // no fast write to subtract: the whole write is the fault's
        assert_eq!(p.touch_ns, 0);
        assert_eq!(p.host_fault_ns, Some(11_000));
    }

    #[test]
    fn the_limit_leaves_a_margin_of_available_memory() {
        let mi = "MemTotal:       24684000 kB\nMemAvailable:   20971520 kB\n";
        // 20 GiB available, 2 GiB margin
        assert_eq!(probe_limit(mi), Some(18 << 30));
        let small = "MemAvailable:   1572864 kB\n";
        assert_eq!(probe_limit(small), Some(512 << 20));
        assert_eq!(probe_limit("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn the_probe_runs_here() {
        // 64 MiB: enough to exercise the mapping and the timing loop
        let p = probe(64 << 20).unwrap();
        assert_eq!(p.probed_bytes % (BIN as u64 * 4096), 0);
        assert!(p.probed_bytes <= 64 << 20);
    }
}
