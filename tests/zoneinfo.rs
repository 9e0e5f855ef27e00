//! The zones' watermarks against real kernels' /proc/zoneinfo, exactly:
//! this 24 GiB machine (6.18) and 1 and 2 GiB qemu guests (Debian 6.1).
//! The machine is described by its zones' managed pages (the scenario keys
//! `machine.zones.NAME.*`), THP and the vm sysctls, as captured in
//! tests/data/zoneinfo/ (README there); min_free_kbytes, every zone's
//! MIN/LOW/HIGH and its protection array must come out as the kernel's.

use std::path::Path;
use wbsim::kernel::Kernel;
use wbsim::mm::page_alloc::{ZoneInfo, MAX_NR_ZONES, ZONE_DMA32, ZONE_KEYS};
use wbsim::scenario::Scenario;
use wbsim::trace::Tracer;

fn read(dir: &Path, f: &str) -> String {
    std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{}/{f}: {e}", dir.display()))
}

/// KiB freed into the zones after boot: dmesg's `Freeing initrd memory` and
/// `Freeing unused ...` lines (the SMP alternatives go before the
/// initcalls that set the watermarks).
fn freed_after_boot_kib(dmesg: &str) -> u64 {
    dmesg
        .lines()
        .filter(|l| l.starts_with("Freeing initrd") || l.starts_with("Freeing unused"))
        .map(|l| {
            let n = l.rsplit(": ").next().unwrap().trim().trim_end_matches('K');
            n.parse::<u64>().unwrap()
        })
        .sum()
}

/// The scenario of a captured machine and the zoneinfo it must reproduce.
fn machine_of(dir: &Path) -> (String, ZoneInfo, u64) {
    let zi = ZoneInfo::parse(&read(dir, "zoneinfo")).unwrap();
    assert_eq!(zi.zones.len(), MAX_NR_ZONES, "{}", dir.display());
    let kernel = read(dir, "uname");
    // 6.1 sets the watermarks at boot, before the initrd and the kernel's
    // init sections are freed (into DMA32, where the kernel and the initrd
    // lie); the 6.18 machine's watermarks follow its managed pages as they
    // are now
    let v61 = kernel.starts_with("6.1.");
    let freed = if v61 {
        freed_after_boot_kib(&read(dir, "dmesg-freeing")) / 4
    } else {
        0
    };
    let mut s = String::from("[machine]\nmemory = \"64G\"\n");
    let thp = read(dir, "thp_enabled");
    let thp = ["always", "madvise", "never"]
        .into_iter()
        .find(|m| thp.contains(&format!("[{m}]")))
        .unwrap();
    s += &format!("thp = \"{thp}\"\n");
    if !v61 {
        s += "zones.movable_min_like_highmem = true\n";
    }
    for (i, (name, z)) in zi.zones.iter().enumerate() {
        assert_eq!(name.to_ascii_lowercase(), ZONE_KEYS[i]);
        if z.managed == 0 && z.present == 0 {
            continue;
        }
        let boot = if i == ZONE_DMA32 {
            z.managed - freed
        } else {
            z.managed
        };
        s += &format!(
            "zones.{}.managed = {}\nzones.{}.present = {}\nzones.{}.spanned = {}\nzones.{}.managed_boot = {}\n",
            ZONE_KEYS[i], z.managed, ZONE_KEYS[i], z.present, ZONE_KEYS[i], z.spanned, ZONE_KEYS[i], boot
        );
    }
    let wsf = read(dir, "watermark_scale_factor");
    let ratio = read(dir, "lowmem_reserve_ratio");
    s += &format!(
        "[vm]\nwatermark_scale_factor = {}\nlowmem_reserve_ratio = \"{}\"\n",
        wsf.trim(),
        ratio.split_whitespace().collect::<Vec<_>>().join(" ")
    );
    s += "[devices.sda]\ntype = \"ssd\"\n[filesystems.f]\ndevice = \"sda\"\n\
          [jobs.dd]\nnumjobs = 1\nbs = \"1M\"\n[run]\nduration = \"1s\"\nwarmup = \"0s\"\n";
    let mfk = read(dir, "min_free_kbytes").trim().parse().unwrap();
    (s, zi, mfk)
}

fn check(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/zoneinfo")
        .join(name);
    let (toml, want, mfk) = machine_of(&dir);
    let sc = Scenario::load_str(&toml, "zoneinfo.toml", name, &[]).unwrap();
    let k = Kernel::new(sc, Tracer::disabled());
    assert_eq!(k.zones.min_free_kbytes, mfk, "{name}: min_free_kbytes");
    for (i, (zname, w)) in want.zones.iter().enumerate() {
        let z = &k.zones.z[i];
        assert_eq!(z.wmark[..3], w.wmark[..3], "{name} {zname}: min/low/high");
        // 6.1 prints no promo line
        if w.wmark[3] != 0 {
            assert_eq!(z.wmark[3], w.wmark[3], "{name} {zname}: promo");
        }
        assert_eq!(
            z.lowmem_reserve.to_vec(),
            w.protection,
            "{name} {zname}: protection"
        );
        assert_eq!(z.conf.managed, w.managed, "{name} {zname}: managed");
    }
}

#[test]
fn host_24g_6_18() {
    check("host-24g");
}

#[test]
fn guest_1g_6_1() {
    check("guest-1g");
}

#[test]
fn guest_2g_6_1() {
    check("guest-2g");
}

/// The derived zones of `machine.memory` (no zone keys) against the same
/// machines: how close the derivation is. The guests' derived managed
/// pages are exact; the host's Normal zone is within 0.02%.
#[test]
fn derived_zones_are_close() {
    for (name, mem) in [
        ("guest-1g", 1u64 << 30),
        ("guest-2g", 2 << 30),
        ("host-24g", 24 << 30),
    ] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/zoneinfo")
            .join(name);
        let want = ZoneInfo::parse(&read(&dir, "zoneinfo")).unwrap();
        let z = wbsim::mm::page_alloc::MemConf::derive_zones(mem, 4096);
        for (i, (zname, w)) in want.zones.iter().enumerate() {
            let d = z[i].managed.abs_diff(w.managed);
            assert!(
                d * 5000 <= w.managed.max(1),
                "{name} {zname}: derived managed {} vs {}",
                z[i].managed,
                w.managed
            );
            if name.starts_with("guest") {
                assert_eq!(z[i].managed, w.managed, "{name} {zname}");
                assert_eq!(z[i].present, w.present, "{name} {zname}");
            }
        }
    }
}
