#!/bin/sh
# Reclaim meeting dirty pages: one buffered writer on ext4 on the throttled
# "slow" disk with dirty limits above what memory holds (a tmpfs hog takes
# part of it), so that reclaim finds dirty and writeback pages at the LRU
# tail. Samples /proc/vmstat once a second and counts mm_vmscan_throttled
# and vmscan-reason flusher starts, for comparison with wbsim, and samples
# where the writer waits (dirty.wchan: state, wchan, kernel stack).
# Run inside the guest rig (MEM=1024, SLOW_BPS=10485760) as its GSCRIPT.
# Knobs: hogmb= (200), ddmb= (1000), dirtymb= (700), bgmb= (600), blk=1
# (also trace the block requests and wbt, to see where the journal's
# writes wait), lru=1 (also trace mm_vmscan_lru_shrink_inactive: what
# reclaim meets at the LRU's tail).
OUT=/mnt/host/out
HOGMB=200; DDMB=1000; DIRTYMB=700; BGMB=600; BLK=0; LRU=0
for w in $(cat /proc/cmdline); do case "$w" in
  hogmb=*) HOGMB=${w#hogmb=};; ddmb=*) DDMB=${w#ddmb=};;
  dirtymb=*) DIRTYMB=${w#dirtymb=};; bgmb=*) BGMB=${w#bgmb=};;
  blk=*) BLK=${w#blk=};; lru=*) LRU=${w#lru=};; esac; done
dev_by_serial() { for d in /sys/block/vd*; do [ "$(cat $d/serial 2>/dev/null)" = "$1" ] && echo /dev/${d##*/}; done; }
SLOW=$(dev_by_serial slow)
up() { cut -d' ' -f1 /proc/uptime; }
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0,nodiscard -J size=64 $SLOW
mkdir -p /mnt/slow && mount -o noatime $SLOW /mnt/slow
mkdir -p /tmp/hog && mount -t tmpfs -o size=$((HOGMB + 16))m tmpfs /tmp/hog
gdd if=/dev/zero of=/tmp/hog/x bs=1M count=$HOGMB 2>&1 | tail -1
echo $((DIRTYMB*1024*1024)) > /proc/sys/vm/dirty_bytes
echo $((BGMB*1024*1024)) > /proc/sys/vm/dirty_background_bytes
sync; echo 3 > /proc/sys/vm/drop_caches
TR=/sys/kernel/tracing
echo 65536 > $TR/buffer_size_kb
echo 1 > $TR/events/vmscan/mm_vmscan_throttled/enable
echo 1 > $TR/events/writeback/writeback_start/enable
echo 1 > $TR/events/jbd2/jbd2_start_commit/enable
echo 1 > $TR/events/jbd2/jbd2_end_commit/enable
echo 1 > $TR/events/vmscan/mm_vmscan_direct_reclaim_begin/enable
[ "$LRU" = 1 ] && echo 1 > $TR/events/vmscan/mm_vmscan_lru_shrink_inactive/enable
if [ "$BLK" = 1 ]; then
  echo 1 > $TR/events/block/block_rq_issue/enable
  echo 1 > $TR/events/block/block_rq_complete/enable
  echo 1 > $TR/events/wbt/wbt_step/enable
  echo "wbt_lat_usec: $(cat /sys/block/${SLOW#/dev/}/queue/wbt_lat_usec) nr_requests: $(cat /sys/block/${SLOW#/dev/}/queue/nr_requests) scheduler: $(cat /sys/block/${SLOW#/dev/}/queue/scheduler) max_sectors_kb: $(cat /sys/block/${SLOW#/dev/}/queue/max_sectors_kb)"
fi
echo > $TR/trace
cat /proc/vmstat > $OUT/dirty.vmstat.before
# The samplers read /proc with shell builtins only: a fork (a command
# substitution, cat, awk) allocates, and under this memory pressure each
# one enters direct reclaim itself (a run with lru=1 found the sampler's
# shell and awk doing 46% of the direct reclaim's scanning).
KEYS=" nr_free_pages nr_dirty nr_writeback nr_inactive_file nr_active_file pgscan_kswapd pgscan_direct pgsteal_kswapd pgsteal_direct allocstall_movable pageoutrun pgactivate pgdeactivate pgrotated nr_vmscan_write nr_vmscan_immediate_reclaim kswapd_low_wmark_hit_quickly kswapd_high_wmark_hit_quickly "
sampler() {
  while [ -f /tmp/sampling ]; do
    read now idle < /proc/uptime
    line="S t=$now"
    while read k v; do
      case "$KEYS" in *" $k "*) line="$line $k=$v";; esac
    done < /proc/vmstat
    echo "$line"
    sleep 1
  done
}
touch /tmp/sampling; sampler > $OUT/dirty.samples & SP=$!
T0=$(up)
gdd if=/dev/zero of=/mnt/slow/f bs=1M count=$DDMB > $OUT/dirty.dd 2>&1 &
DD=$!
# where the writer is, five times a second: its state and wchan (builtins
# only, as above)
while [ -d /proc/$DD ]; do
  read now idle < /proc/uptime
  st=?; w=?
  while read a b c; do [ "$a" = State: ] && { st=$b; break; }; done < /proc/$DD/status 2>/dev/null
  read -r w < /proc/$DD/wchan 2>/dev/null
  echo "W t=$now $st wchan=$w"
  sleep 0.2
done > $OUT/dirty.wchan
wait $DD; tail -1 $OUT/dirty.dd
T1=$(up)
rm -f /tmp/sampling; wait $SP
echo "wrote from $T0 to $T1"
cat /proc/vmstat > $OUT/dirty.vmstat.after
cp $TR/trace $OUT/dirty.trace
echo "throttled: $(grep -c mm_vmscan_throttled $TR/trace) vmscan starts: $(grep -c 'reason=vmscan' $TR/trace) commits: $(grep -c jbd2_end_commit $TR/trace)"
echo "direct reclaim stalls by task: $(grep mm_vmscan_direct_reclaim_begin $TR/trace | awk '{sub(/-[0-9]+$/, "", $1); print $1}' | sort | uniq -c | sort -rn | tr '\n' ';')"
echo "writer samples by wait: $(awk '{print $3, $4}' $OUT/dirty.wchan | sort | uniq -c | sort -rn | head -8 | tr '\n' ';')"
echo done
