#!/bin/sh
# wbsim helper: two cgroups with io.max wbps on the slow disk (A 10M, B 25M),
# a buffered dd in each, concurrently; io.stat and memory.stat every second.
# wbtrace=1 also traces the flusher, ext4's writepages and the disk's requests
# and copies the trace out (trace.txt), to see how B's pipeline refills.
OUT=/mnt/host/out
MEMMB=256; AW=10485760; BW=26214400; AMB=300; BMB=750; DIRTYMB=64; BGMB=32; WBTRACE=0
for w in $(cat /proc/cmdline); do case "$w" in
  memmb=*) MEMMB=${w#memmb=};; aw=*) AW=${w#aw=};; bw=*) BW=${w#bw=};; amb=*) AMB=${w#amb=};; bmb=*) BMB=${w#bmb=};;
  dirtymb=*) DIRTYMB=${w#dirtymb=};; bgmb=*) BGMB=${w#bgmb=};; wbtrace=*) WBTRACE=${w#wbtrace=};; esac; done
dev_by_serial() { for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = "$1" ] && echo /dev/${d##*/}; done; }
SLOW=$(dev_by_serial slow)
up() { cut -d' ' -f1 /proc/uptime; }
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard -J size=64 $SLOW
mount -o noatime $SLOW /mnt/slow
MAJMIN=$(cat /sys/block/${SLOW#/dev/}/dev)
echo $((DIRTYMB*1024*1024)) > /proc/sys/vm/dirty_bytes
echo $((BGMB*1024*1024)) > /proc/sys/vm/dirty_background_bytes
CG=/sys/fs/cgroup
echo "+io +memory" > $CG/cgroup.subtree_control
mkdir -p $CG/A $CG/B
echo $((MEMMB*1024*1024)) > $CG/A/memory.max
echo $((MEMMB*1024*1024)) > $CG/B/memory.max
echo "$MAJMIN wbps=$AW" > $CG/A/io.max
echo "$MAJMIN wbps=$BW" > $CG/B/io.max
echo "kernel $(uname -r) A ino=$(stat -c %i $CG/A) B ino=$(stat -c %i $CG/B) A io.max: $(cat $CG/A/io.max) B io.max: $(cat $CG/B/io.max)"
TR=/sys/kernel/tracing
echo 16384 > $TR/buffer_size_kb
echo 1 > $TR/events/writeback/balance_dirty_pages/enable
if [ "$WBTRACE" = 1 ]; then
  echo 65536 > $TR/buffer_size_kb
  for e in writeback/writeback_start writeback/writeback_written writeback/writeback_wake_background \
           writeback/global_dirty_state ext4/ext4_writepages ext4/ext4_writepages_result \
           block/block_rq_issue block/block_rq_complete; do
    echo 1 > $TR/events/$e/enable
  done
fi
echo > $TR/trace
sync; echo 3 > /proc/sys/vm/drop_caches
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }
b0=$(busy)
t0=$(up)
sh -c "echo \$\$ > $CG/A/cgroup.procs; exec /usr/bin/gdd if=/dev/zero of=/mnt/slow/a bs=1M count=$AMB" 2> /tmp/dd.A & PA=$!
sh -c "echo \$\$ > $CG/B/cgroup.procs; exec /usr/bin/gdd if=/dev/zero of=/mnt/slow/b bs=1M count=$BMB" 2> /tmp/dd.B & PB=$!
( while kill -0 $PA 2>/dev/null || kill -0 $PB 2>/dev/null; do
    for g in A B; do
      set -- $(awk '/^file_dirty /{d=$2} /^file_writeback /{w=$2} /^file /{f=$2} END{print int(d/1024), int(w/1024), int(f/1024)}' $CG/$g/memory.stat)
      printf "%s: dirtyK=%s wbK=%s fileK=%s  " $g $1 $2 $3
    done
    echo "t=$(awk "BEGIN{print $(up)-$t0}") wbytes A=$(awk -v d=$MAJMIN '$1==d{print $3}' $CG/A/io.stat) B=$(awk -v d=$MAJMIN '$1==d{print $3}' $CG/B/io.stat)"
    sleep 1
  done ) &
SP=$!
# each cgroup's io.pressure as its writer ends (its `some` total, in us,
# against the time since the writers started)
# and each cgroup's CPU time (cpu.stat is there without the cpu controller)
cpu() { awk '/^usage_usec/{print $2}' $CG/$1/cpu.stat; }
wait $PA; tA=$(up); pA=$(head -1 $CG/A/io.pressure); pB=$(head -1 $CG/B/io.pressure); cA=$(cpu A)
mA=$(head -1 $CG/A/memory.pressure); mB=$(head -1 $CG/B/memory.pressure); bA=$(busy); cBA=$(cpu B)
wait $PB; tB=$(up); pB2=$(head -1 $CG/B/io.pressure); cB=$(cpu B); wait $SP
echo "io.pressure at t=$(awk "BEGIN{print $tA-$t0}"): A $pA; B $pB"
echo "io.pressure at t=$(awk "BEGIN{print $tB-$t0}"): B $pB2"
echo "memory.pressure at A's end: A $mA; B $mB"
echo "memory.stat pgscan/pgsteal at the end: A $(awk '/^(pgscan|pgsteal) /{printf "%s=%s ", $1, $2}' $CG/A/memory.stat) B $(awk '/^(pgscan|pgsteal) /{printf "%s=%s ", $1, $2}' $CG/B/memory.stat)"
echo "cpu usage_usec: A $cA (at its end), B $cB (at its end)"
echo "CPUs busy (/proc/stat, all but idle and iowait) until A ends: $(( (bA-b0)*10 )) ms, of which the writers $(( (cA+cBA)/1000 )) ms"
echo "A: $(tail -1 /tmp/dd.A)  (finished t=$(awk "BEGIN{print $tA-$t0}"))"
echo "B: $(tail -1 /tmp/dd.B)  (finished t=$(awk "BEGIN{print $tB-$t0}"))"
sync
echo "io.stat A: $(cat $CG/A/io.stat)"; echo "io.stat B: $(cat $CG/B/io.stat)"
echo "balance_dirty_pages pauses (ms) by cgroup_ino:"
grep balance_dirty_pages: $TR/trace | awk '{for(i=1;i<=NF;i++){if($i~/^pause=/){split($i,a,"=");p=a[2]} if($i~/^cgroup_ino=/){split($i,c,"=");g=c[2]}} n[g]++; s[g]+=p} END{for(g in n) print g, n[g], s[g]}'
echo "balance_dirty_pages events by cgroup_ino:"; grep balance_dirty_pages: $TR/trace | sed 's/.*cgroup_ino=\([0-9]*\).*/\1/' | sort | uniq -c
for ino in $(stat -c %i $CG/A) $(stat -c %i $CG/B); do grep balance_dirty_pages: $TR/trace | grep "cgroup_ino=$ino\$" | tail -3 | cut -c1-330; done
[ "$WBTRACE" = 1 ] && cp $TR/trace $OUT/trace.txt
umount /mnt/slow
