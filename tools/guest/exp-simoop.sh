#!/bin/sh
# simoop on XFS in a small guest: `wbsim simoop` (the real-kernel side of
# wbsim's simoop model, run from the 9p share) on an XFS filesystem on the
# "slow" disk, with /proc/vmstat's reclaim counters before and after and
# once a second, and the direct-reclaim and shrinker events counted, for
# comparison with examples/reclaim/guest-simoop-xfs.toml
# (docs/validation.md).
#
# Run inside the guest rig as its GSCRIPT, with an initramfs that has
# mkfs.xfs and the xfs module (listed in /etc/modules.xfs:
# tools/guest/xfs-initramfs.sh builds it), and the wbsim binary copied to
# the share as `wbsim`:
#   MEM=1024 SLOW_BPS=52428800 run-guest.sh exp-simoop.sh [args="..."]
# Knobs on the kernel command line: args= simoop's flags, with commas for
# spaces (default: -t,8,-m,64,-M,16,-T,4,-R,1,-W,1,-C,1,-D,2,-f,1,-n,2000,-w,10,-r,60,-i,10),
# trace=1 (also record mm_vmscan_direct_reclaim_* and mm_shrink_slab_*),
# readbw=0 (skip the disk's raw read speed, measured after the run).
OUT=/mnt/host/out
ARGS="-t,8,-m,64,-M,16,-T,4,-R,1,-W,1,-C,1,-D,2,-f,1,-n,2000,-w,10,-r,60,-i,10"
TRACE=0; READBW=1
for w in $(cat /proc/cmdline); do case "$w" in
  args=*) ARGS=${w#args=};; trace=*) TRACE=${w#trace=};; readbw=*) READBW=${w#readbw=};; esac; done
ARGS=$(echo "$ARGS" | tr ',' ' ')
for ko in $(cat /etc/modules.xfs 2>/dev/null); do insmod "$ko" 2>/dev/null; done
grep -q xfs /proc/filesystems || { echo "GUEST: no xfs in this kernel/initramfs"; exit 1; }
dev_by_serial() { for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = "$1" ] && echo /dev/${d##*/}; done; }
SLOW=$(dev_by_serial slow)
up() { cut -d' ' -f1 /proc/uptime; }
mkfs.xfs -q -f $SLOW || exit 1
mkdir -p /mnt/slow && mount -o noatime $SLOW /mnt/slow || exit 1
cat /proc/zoneinfo > $OUT/simoop.zoneinfo
TR=/sys/kernel/tracing
if [ "$TRACE" = 1 ]; then
  echo 65536 > $TR/buffer_size_kb
  for e in vmscan/mm_vmscan_direct_reclaim_begin vmscan/mm_vmscan_direct_reclaim_end \
           vmscan/mm_shrink_slab_start vmscan/mm_shrink_slab_end oom/mark_victim; do
    echo 1 > $TR/events/$e/enable
  done
fi
# the sampler reads /proc with shell builtins only (no forks)
sampler() {
  while [ -f /tmp/sampling ]; do
    line="S t=$(up)"
    while read -r k v; do
      case $k in nr_free_pages|nr_anon_pages|nr_inactive_file|nr_active_file|nr_dirty|nr_writeback|\
        allocstall_movable|allocstall_normal|allocstall_dma32|pgscan_kswapd|pgscan_direct|pgsteal_kswapd|\
        pgsteal_direct|slabs_scanned|pageoutrun|oom_kill) line="$line $k=$v";; esac
    done < /proc/vmstat
    echo "$line"
    sleep 1
  done
}
cat /proc/vmstat > $OUT/simoop.vmstat.before
touch /tmp/sampling
sampler > $OUT/simoop.samples &
echo "GUEST: simoop $ARGS start uptime=$(up)"
/mnt/host/wbsim simoop $ARGS /mnt/slow > $OUT/simoop.txt 2> $OUT/simoop.err
echo "GUEST: simoop rc=$? end uptime=$(up)"
rm -f /tmp/sampling
cat /proc/vmstat > $OUT/simoop.vmstat.after
if [ "$TRACE" = 1 ]; then
  echo 0 > $TR/tracing_on
  cat $TR/trace > $OUT/simoop.trace
fi
umount /mnt/slow
# the disk's own read speed (qemu throttles its writes only): 1 MiB
# O_DIRECT random reads over the first 2 GiB, where the files are
if [ "$READBW" = 1 ]; then
  for qd in 1 4 16; do
    echo "== randread bs=1m iodepth=$qd" >> $OUT/simoop.readbw
    fio --name=rr --filename=$SLOW --rw=randread --bs=1m --direct=1 --ioengine=libaio \
      --iodepth=$qd --size=2g --runtime=8 --time_based 2>&1 | grep -E "READ:|clat \(" >> $OUT/simoop.readbw
  done
fi
echo "GUEST: done uptime=$(up)"
