#!/bin/sh
# wbsim helper: inode ownership switch. A writes a 64 MiB file; after sync
# and drop_caches, B overwrites it in place (1 MiB writes, conv=notrunc)
# for 20 s. Traces the cgroup-writeback events.
OUT=/mnt/host/out
DIRTYMB=64; BGMB=32; BSEC=20
dev_by_serial() { for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = "$1" ] && echo /dev/${d##*/}; done; }
SLOW=$(dev_by_serial slow)
up() { cut -d' ' -f1 /proc/uptime; }
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard -J size=64 $SLOW
mount -o noatime $SLOW /mnt/slow
echo $((DIRTYMB*1024*1024)) > /proc/sys/vm/dirty_bytes
echo $((BGMB*1024*1024)) > /proc/sys/vm/dirty_background_bytes
CG=/sys/fs/cgroup
echo "+io +memory" > $CG/cgroup.subtree_control
mkdir -p $CG/A $CG/B
echo "kernel $(uname -r) A ino=$(stat -c %i $CG/A) B ino=$(stat -c %i $CG/B)"
TR=/sys/kernel/tracing
echo 16384 > $TR/buffer_size_kb
for e in inode_foreign_history inode_switch_wbs track_foreign_dirty flush_foreign writeback_written; do echo 1 > $TR/events/writeback/$e/enable; done
echo > $TR/trace
sh -c "echo \$\$ > $CG/A/cgroup.procs; exec /usr/bin/gdd if=/dev/zero of=/mnt/slow/shared bs=1M count=64" 2> /tmp/dd.A
echo "A: $(tail -1 /tmp/dd.A) file ino=$(stat -c %i /mnt/slow/shared)"
sync; echo 3 > /proc/sys/vm/drop_caches
echo "B starts t=$(up)"
echo B_START > $TR/trace_marker
sh -c "echo \$\$ > $CG/B/cgroup.procs; end=\$(( \$(cut -d. -f1 /proc/uptime) + $BSEC )); while [ \$(cut -d. -f1 /proc/uptime) -lt \$end ]; do /usr/bin/gdd if=/dev/zero of=/mnt/slow/shared bs=1M count=64 conv=notrunc 2>/dev/null; done"
echo "B ends t=$(up)"
sync
echo "io.stat A: $(cat $CG/A/io.stat)"; echo "io.stat B: $(cat $CG/B/io.stat)"
grep -c track_foreign_dirty $TR/trace
grep -E "B_START|inode_foreign_history|inode_switch_wbs|flush_foreign" $TR/trace | head -60
grep -E "B_START|writeback_written" $TR/trace | head -80
umount /mnt/slow
