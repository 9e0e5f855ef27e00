#!/bin/sh
# wbsim helper: BFQ sharing the slow disk between two cgroups by
# io.bfq.weight (A 100, B 200), first with a buffered dd writer in each,
# then with a sequential reader in each (reading back the writers' files,
# caches dropped); io.stat and memory.stat every second.
# Run inside the guest rig as its GSCRIPT, with the slow disk's reads capped
# like its writes (SLOW_EXTRA=",throttling.bps-read=52428800") and BFQ's
# module copied into the share (bfq.ko, from the guest kernel's
# lib/modules/*/kernel/block/). Knobs: wsec= (30), rsec= (20; 0: no
# readers), aw= (100), bw= (200), dirtymb= (64), bgmb= (32), memmb= (0: no
# memory.max), blktrace= (0; 1: the blk tracer on the slow disk during the
# writers, to see BFQ's own log: how often bfq_limit_depth finds a cgroup
# over its share of the tags, "too many requests" from
# bfqq_request_over_limit; writes too-many.count, too-many.txt (the first
# 200 such lines), bfq-msgs.txt (BFQ's messages by kind, numbers folded)
# and trace.lines to the output directory).
OUT=/mnt/host/out
WSEC=30; RSEC=20; AW=100; BW=200; DIRTYMB=64; BGMB=32; MEMMB=0; BLKTRACE=0
for w in $(cat /proc/cmdline); do case "$w" in
  wsec=*) WSEC=${w#wsec=};; rsec=*) RSEC=${w#rsec=};; aw=*) AW=${w#aw=};; bw=*) BW=${w#bw=};;
  dirtymb=*) DIRTYMB=${w#dirtymb=};; bgmb=*) BGMB=${w#bgmb=};; memmb=*) MEMMB=${w#memmb=};;
  blktrace=*) BLKTRACE=${w#blktrace=};; esac; done
dev_by_serial() { for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = "$1" ] && echo /dev/${d##*/}; done; }
SLOW=$(dev_by_serial slow)
up() { cut -d' ' -f1 /proc/uptime; }
insmod /mnt/host/bfq.ko 2>/dev/null
echo bfq > /sys/block/${SLOW#/dev/}/queue/scheduler
echo "scheduler: $(cat /sys/block/${SLOW#/dev/}/queue/scheduler)"
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard -J size=64 $SLOW
mkdir -p /mnt/slow && mount -o noatime $SLOW /mnt/slow
MAJMIN=$(cat /sys/block/${SLOW#/dev/}/dev)
echo $((DIRTYMB*1024*1024)) > /proc/sys/vm/dirty_bytes
echo $((BGMB*1024*1024)) > /proc/sys/vm/dirty_background_bytes
CG=/sys/fs/cgroup
echo "+io +memory" > $CG/cgroup.subtree_control
mkdir -p $CG/A $CG/B
echo $AW > $CG/A/io.bfq.weight
echo $BW > $CG/B/io.bfq.weight
if [ "$MEMMB" != 0 ]; then
  echo $((MEMMB*1024*1024)) > $CG/A/memory.max
  echo $((MEMMB*1024*1024)) > $CG/B/memory.max
fi
echo "kernel $(uname -r) A io.bfq.weight: $(cat $CG/A/io.bfq.weight) B: $(cat $CG/B/io.bfq.weight)"
# io.stat's rbytes and wbytes for the slow disk, per cgroup
iostat() { awk -v d=$MAJMIN -v k=$2 '$1==d{for(i=2;i<=NF;i++){split($i,a,"=");if(a[1]==k)print a[2]}}' $CG/$1/io.stat; }
sample() { # $1: rbytes or wbytes, $2: phase start
  while [ -f /tmp/sampling ]; do
    for g in A B; do
      set -- $1 $2 $(awk '/^file_dirty /{d=$2} /^file_writeback /{w=$2} /^file /{f=$2} END{print int(d/1024), int(w/1024), int(f/1024)}' $CG/$g/memory.stat)
      printf "%s: dirtyK=%s wbK=%s fileK=%s  " $g $3 $4 $5
    done
    echo "t=$(awk "BEGIN{print $(up)-$2}") $1 A=$(iostat A $1) B=$(iostat B $1)"
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
T=/sys/kernel/tracing
if [ "$BLKTRACE" = 1 ]; then
  echo 0 > $T/tracing_on
  echo 200000 > $T/buffer_size_kb
  echo blk > $T/current_tracer
  echo 1 > /sys/block/${SLOW#/dev/}/trace/enable
  echo "blk tracer: $(cat $T/current_tracer) act_mask $(cat /sys/block/${SLOW#/dev/}/trace/act_mask)"
  echo 1 > $T/tracing_on
fi
echo "== writers ($WSEC s)"
t0=$(up); touch /tmp/sampling; sample wbytes $t0 & SP=$!
run_in A $WSEC /usr/bin/gdd if=/dev/zero of=/mnt/slow/a bs=1M 2> /tmp/dd.A & PA=$!
run_in B $WSEC /usr/bin/gdd if=/dev/zero of=/mnt/slow/b bs=1M 2> /tmp/dd.B & PB=$!
wait $PA; wait $PB; rm -f /tmp/sampling; wait $SP
# the writers' stall and CPU time, for the cgroup figures: each cgroup's
# io.pressure and memory.pressure `some` totals (us) and cpu.stat usage_usec
for g in A B; do echo "$g at the writers' end: io $(head -1 $CG/$g/io.pressure | sed 's/.*total=/total=/') memory $(head -1 $CG/$g/memory.pressure | sed 's/.*total=/total=/') cpu usage_usec=$(awk '/^usage_usec/{print $2}' $CG/$g/cpu.stat)"; done
echo "A: $(grep copied /tmp/dd.A | tail -1)"; echo "B: $(grep copied /tmp/dd.B | tail -1)"
sync; echo 3 > /proc/sys/vm/drop_caches
echo "file sizes: a=$(stat -c %s /mnt/slow/a) b=$(stat -c %s /mnt/slow/b)"
if [ "$BLKTRACE" = 1 ]; then
  echo 0 > $T/tracing_on
  grep -c 'too many requests' $T/trace > $OUT/too-many.count
  grep 'too many requests' $T/trace | head -200 > $OUT/too-many.txt
  grep -E ' m +N ' $T/trace | awk '{$1=$2=$3=$4=""; print}' | sed 's/[0-9]\+/N/g' | sort | uniq -c | sort -rn | head -60 > $OUT/bfq-msgs.txt
  wc -l $T/trace > $OUT/trace.lines
  echo "too many: $(cat $OUT/too-many.count)"
  echo 0 > /sys/block/${SLOW#/dev/}/trace/enable
  echo nop > $T/current_tracer
fi
[ "$RSEC" = 0 ] && { umount /mnt/slow; echo done; exit 0; }
echo "== readers ($RSEC s)"
iot() { head -1 $CG/$1/io.pressure | sed 's/.*total=//'; }
cput() { awk '/^usage_usec/{print $2}' $CG/$1/cpu.stat; }
ioA=$(iot A); ioB=$(iot B); cA=$(cput A); cB=$(cput B)
t0=$(up); touch /tmp/sampling; sample rbytes $t0 & SP=$!
run_in A $RSEC /usr/bin/gdd if=/mnt/slow/a of=/dev/null bs=128k 2> /tmp/rd.A & PA=$!
run_in B $RSEC /usr/bin/gdd if=/mnt/slow/b of=/dev/null bs=128k 2> /tmp/rd.B & PB=$!
wait $PA; wait $PB; rm -f /tmp/sampling; wait $SP
# the readers' own stall and CPU time (us), this phase only
echo "readers' phase: io some A $(( $(iot A) - ioA )) B $(( $(iot B) - ioB )), cpu A $(( $(cput A) - cA )) B $(( $(cput B) - cB ))"
echo "A: $(grep copied /tmp/rd.A | tail -1)"; echo "B: $(grep copied /tmp/rd.B | tail -1)"
echo "io.stat A: $(cat $CG/A/io.stat)"; echo "io.stat B: $(cat $CG/B/io.stat)"
umount /mnt/slow
echo done
