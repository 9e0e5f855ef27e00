#!/bin/sh
# Reclaim on a small guest: an anonymous hog (shmem pages in a tmpfs file,
# unevictable without swap) plus one buffered streaming read of a file
# bigger than the rest of RAM, on ext4 on the "fast" disk. Samples, once a
# second, /proc/vmstat's reclaim counters and DMA32's free pages, for
# comparison with wbsim on the same shape (docs/validation.md).
# Run inside the guest rig (MEM=1024) as its GSCRIPT.
# Knobs on the kernel command line: hogmb= (400), filemb= (1536).
OUT=/mnt/host/out
HOGMB=400; FILEMB=1536
for w in $(cat /proc/cmdline); do case "$w" in
  hogmb=*) HOGMB=${w#hogmb=};; filemb=*) FILEMB=${w#filemb=};; esac; done
dev_by_serial() { for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = "$1" ] && echo /dev/${d##*/}; done; }
FAST=$(dev_by_serial fast)
up() { cut -d' ' -f1 /proc/uptime; }
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard $FAST
mkdir -p /mnt/fast && mount -o noatime $FAST /mnt/fast
echo "== write the file"
gdd if=/dev/zero of=/mnt/fast/big bs=1M count=$FILEMB conv=fsync 2>&1 | tail -1
sync; echo 3 > /proc/sys/vm/drop_caches
echo "== the hog: ${HOGMB} MiB of shmem"
mkdir -p /tmp/hog && mount -t tmpfs -o size=$((HOGMB + 16))m tmpfs /tmp/hog
gdd if=/dev/zero of=/tmp/hog/x bs=1M count=$HOGMB 2>&1 | tail -1
cat /proc/zoneinfo > $OUT/reclaim.zoneinfo
cat /proc/vmstat > $OUT/reclaim.vmstat.before
sampler() {
  while [ -f /tmp/sampling ]; do
    echo "S t=$(up) $(awk '/^(nr_free_pages|nr_inactive_file|nr_active_file|nr_inactive_anon|nr_active_anon|nr_shmem|pgscan_kswapd|pgscan_direct|pgsteal_kswapd|pgsteal_direct|allocstall_dma32|allocstall_normal|allocstall_movable|pageoutrun|pgactivate|pgdeactivate|pgrefill|pgrotated|kswapd_low_wmark_hit_quickly|kswapd_high_wmark_hit_quickly|pgpgin) /{printf "%s=%s ", $1, $2}' /proc/vmstat) dma32_free=$(awk '/zone +DMA32/{z=1} z && /nr_free_pages/{print $2; exit}' /proc/zoneinfo)"
    sleep 1
  done
}
touch /tmp/sampling; sampler > $OUT/reclaim.samples & SP=$!
sleep 2
echo "== the streaming read"
T0=$(up)
gdd if=/mnt/fast/big of=/dev/null bs=1M 2>&1 | tail -1
T1=$(up)
sleep 2
rm -f /tmp/sampling; wait $SP
echo "read from $T0 to $T1"
cat /proc/vmstat > $OUT/reclaim.vmstat.after
echo done
