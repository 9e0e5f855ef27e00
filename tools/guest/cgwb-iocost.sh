#!/bin/sh
# wbsim helper: io.cost sharing the slow disk between two cgroups by
# io.weight (A 100, B 200), a buffered dd writer in each; io.stat and
# memory.stat every second. io.cost runs at a fixed vrate (io.cost.qos
# `ctrl=user min=100 max=100`) with a linear model whose write rate is the
# disk's (qemu's throttle, 50 MiB/s) and whose per-IO costs are nil (seqiops
# and randiops at bps / 4 KiB), so that its budget is the disk's and the
# weights decide the shares. Run inside the guest rig as its GSCRIPT.
# Knobs: wsec= (30), aw= (100), bw= (200), dirtymb= (64), bgmb= (32),
# mbps= (50: the model's MiB/s, reads and writes), iotrace= (0; 1: the
# iocost tracepoints and the writeback ones during the writers, copied out as
# trace.txt).
OUT=/mnt/host/out
WSEC=30; AW=100; BW=200; DIRTYMB=64; BGMB=32; MBPS=50; IOTRACE=0
for w in $(cat /proc/cmdline); do case "$w" in
  wsec=*) WSEC=${w#wsec=};; aw=*) AW=${w#aw=};; bw=*) BW=${w#bw=};;
  dirtymb=*) DIRTYMB=${w#dirtymb=};; bgmb=*) BGMB=${w#bgmb=};; mbps=*) MBPS=${w#mbps=};;
  iotrace=*) IOTRACE=${w#iotrace=};; esac; done
dev_by_serial() { for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = "$1" ] && echo /dev/${d##*/}; done; }
SLOW=$(dev_by_serial slow)
up() { cut -d' ' -f1 /proc/uptime; }
echo "scheduler: $(cat /sys/block/${SLOW#/dev/}/queue/scheduler) rotational: $(cat /sys/block/${SLOW#/dev/}/queue/rotational)"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard -J size=64 $SLOW
mkdir -p /mnt/slow && mount -o noatime $SLOW /mnt/slow
MAJMIN=$(cat /sys/block/${SLOW#/dev/}/dev)
echo $((DIRTYMB*1024*1024)) > /proc/sys/vm/dirty_bytes
echo $((BGMB*1024*1024)) > /proc/sys/vm/dirty_background_bytes
CG=/sys/fs/cgroup
echo "+io +memory" > $CG/cgroup.subtree_control
mkdir -p $CG/A $CG/B
BPS=$((MBPS*1024*1024)); IOPS=$((BPS/4096))
echo "$MAJMIN ctrl=user model=linear rbps=$BPS rseqiops=$IOPS rrandiops=$IOPS wbps=$BPS wseqiops=$IOPS wrandiops=$IOPS" > $CG/io.cost.model
echo "$MAJMIN enable=1 ctrl=user min=100.00 max=100.00" > $CG/io.cost.qos
echo $AW > $CG/A/io.weight
echo $BW > $CG/B/io.weight
echo "kernel $(uname -r)"
echo "io.cost.model: $(cat $CG/io.cost.model)"
echo "io.cost.qos: $(cat $CG/io.cost.qos)"
echo "A io.weight: $(cat $CG/A/io.weight) B: $(cat $CG/B/io.weight)"
iostat() { awk -v d=$MAJMIN -v k=$2 '$1==d{for(i=2;i<=NF;i++){split($i,a,"=");if(a[1]==k)print a[2]}}' $CG/$1/io.stat; }
sample() { # $1: phase start
  while [ -f /tmp/sampling ]; do
    for g in A B; do
      set -- $1 $(awk '/^file_dirty /{d=$2} /^file_writeback /{w=$2} END{print int(d/1024), int(w/1024)}' $CG/$g/memory.stat)
      printf "%s: dirtyK=%s wbK=%s  " $g $2 $3
    done
    echo "t=$(awk "BEGIN{print $(up)-$1}") wbytes A=$(iostat A wbytes) B=$(iostat B wbytes)"
    sleep 1
  done
}
run_in() { # cgroup, seconds, command...: stopped after the seconds. A
  # command started with & by a shell without job control has SIGINT
  # ignored, and gdd keeps it so (the 2026-11-26 and -28 runs' dd went on
  # until the disk was full), so: SIGUSR1 (gdd prints its totals), then
  # SIGTERM
  g=$1; s=$2; shift 2
  sh -c "echo \$\$ > $CG/$g/cgroup.procs; exec $*" & p=$!
  ( sleep $s; kill -USR1 $p 2>/dev/null; sleep 1; kill -TERM $p 2>/dev/null ) &
  wait $p
}
sync; echo 3 > /proc/sys/vm/drop_caches
TR=/sys/kernel/tracing
if [ "$IOTRACE" = 1 ]; then
  echo 65536 > $TR/buffer_size_kb
  echo 1 > $TR/events/iocost/enable
  for e in writeback_start writeback_written balance_dirty_pages; do echo 1 > $TR/events/writeback/$e/enable; done
  echo > $TR/trace
fi
echo "== writers ($WSEC s)"
t0=$(up); touch /tmp/sampling; sample $t0 & SP=$!
run_in A $WSEC /usr/bin/gdd if=/dev/zero of=/mnt/slow/a bs=1M 2> /tmp/dd.A & PA=$!
run_in B $WSEC /usr/bin/gdd if=/dev/zero of=/mnt/slow/b bs=1M 2> /tmp/dd.B & PB=$!
wait $PA; wait $PB; rm -f /tmp/sampling; wait $SP
# the writers' stall and CPU time, for the cgroup figures: each cgroup's
# io.pressure and memory.pressure `some` totals (us) and cpu.stat usage_usec
for g in A B; do echo "$g at the writers' end: io $(head -1 $CG/$g/io.pressure | sed 's/.*total=/total=/') memory $(head -1 $CG/$g/memory.pressure | sed 's/.*total=/total=/') cpu usage_usec=$(awk '/^usage_usec/{print $2}' $CG/$g/cpu.stat)"; done
echo "A: $(grep copied /tmp/dd.A | tail -1)"; echo "B: $(grep copied /tmp/dd.B | tail -1)"
echo "io.stat A: $(cat $CG/A/io.stat)"; echo "io.stat B: $(cat $CG/B/io.stat)"
echo "io.pressure A: $(head -1 $CG/A/io.pressure); B: $(head -1 $CG/B/io.pressure)"
[ "$IOTRACE" = 1 ] && cp $TR/trace $OUT/trace.txt
umount /mnt/slow
