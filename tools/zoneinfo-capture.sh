#!/bin/sh
# Capture what the zone watermarks are computed from and what the kernel
# made of it, for wbsim's exact-match test (tests/zoneinfo.rs):
#   tools/zoneinfo-capture.sh OUTDIR
# Run it on the machine itself (as root, for dmesg), or inside a guest.
set -e
o=${1:?usage: zoneinfo-capture.sh OUTDIR}
mkdir -p "$o"
cat /proc/zoneinfo > "$o/zoneinfo"
for f in min_free_kbytes watermark_scale_factor lowmem_reserve_ratio; do
  cat /proc/sys/vm/$f > "$o/$f"
done
cat /sys/kernel/mm/transparent_hugepage/enabled > "$o/thp_enabled"
uname -r > "$o/uname"
# the memory freed into the zones after boot (initrd, the kernel's init sections)
dmesg | grep Freeing | sed 's/^\[ *[0-9.]*\] //' > "$o/dmesg-freeing"
