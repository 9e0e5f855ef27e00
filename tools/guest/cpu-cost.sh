#!/bin/sh
# wbsim helper: the guest's CPU cost of dd's work, to set a guest
# scenario's machine.cost.* from measurement. Each dd runs alone in a
# cgroup, and its CPU time is the cgroup's cpu.stat usage_usec:
#   zero:  /dev/zero -> /dev/null, bs=1M: read() zero-fills the buffer
#          (clear_user), one copy per KiB and two syscalls per MiB;
#   shm:   /dev/zero -> a tmpfs file, bs=1M: that plus the copy into
#          shmem pages and their allocation (no writeback, no dirty limit);
#   ext4:  /dev/zero -> ext4 on the fast disk, bs=1M, 128 MiB under a
#          dirty limit of 512 MiB: the page-cache write path without a pause.
# Knobs: mb= (256).
MB=256
for w in $(cat /proc/cmdline); do case "$w" in mb=*) MB=${w#mb=};; esac; done
dev_by_serial() { for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = "$1" ] && echo /dev/${d##*/}; done; }
FAST=$(dev_by_serial fast)
CG=/sys/fs/cgroup
echo "kernel $(uname -r)"
echo $((512*1024*1024)) > /proc/sys/vm/dirty_bytes
echo $((256*1024*1024)) > /proc/sys/vm/dirty_background_bytes
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard $FAST
mkdir -p /mnt/fast && mount -o noatime $FAST /mnt/fast
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm 2>/dev/null
one() { # name of count
  mkdir -p $CG/$1
  sh -c "echo \$\$ > $CG/$1/cgroup.procs; exec /usr/bin/gdd if=/dev/zero of=$2 bs=1M count=$3" 2> /tmp/dd.$1
  u=$(awk '/^usage_usec/{print $2}' $CG/$1/cpu.stat)
  echo "$1: $3 MiB, cpu ${u} us, $(awk "BEGIN{printf \"%.1f\", $u/$3}") us/MiB; $(tail -1 /tmp/dd.$1)"
}
one zero /dev/null $MB
one shm /dev/shm/x $((MB/2)); rm -f /dev/shm/x
sync; echo 3 > /proc/sys/vm/drop_caches
one ext4 /mnt/fast/x $((MB/2))
# then its writeback alone: the CPUs' busy time (all but idle and iowait,
# /proc/stat, in USER_HZ ticks) while sync writes the 128 MiB back
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
b0=$(busy); t0=$(cut -d' ' -f1 /proc/uptime); sync; b1=$(busy); t1=$(cut -d' ' -f1 /proc/uptime)
echo "sync (writeback of $((MB/2)) MiB): $(awk "BEGIN{print $t1-$t0}") s, CPUs busy $(( (b1-b0)*10 )) ms, $(awk "BEGIN{printf \"%.1f\", ($b1-$b0)*10000/($MB/2)}") us/MiB"
umount /mnt/fast
