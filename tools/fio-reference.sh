#!/usr/bin/env bash
# Regenerate fio's own outputs that tests/fio_output.rs compares wbsim's
# against: JSON (--output-format=json), the normal text summary, and the
# lat/clat/slat/bw/iops log files, from fio 3.33.
#
#   tools/fio-reference.sh [FIO]     FIO defaults to `fio` on PATH
#
# The jobs use ioengine=null (no disk needed) except `psync-file`, which
# writes a 4 MiB file in a scratch directory so that fio reports a
# "sync" section (fsync=8) and "disk_util". The outputs go to
# tests/data/fio/reference/; values differ from run to run, the shapes
# (keys, their order, the lines of the text) do not.
set -euo pipefail
cd "$(dirname "$0")/.."
FIO=${1:-fio}
OUT=tests/data/fio/reference
ver=$("$FIO" --version)
if [[ $ver != fio-3.33 ]]; then
  echo "warning: $ver, the reference is fio-3.33" >&2
fi
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.txt "$OUT"/*.log "$OUT"/*.fio
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# NAME ARGS...: NAME.json and NAME.txt from the same job.
run() {
  local name=$1
  shift
  "$FIO" "$@" --output-format=json --output="$OUT/$name.json"
  "$FIO" "$@" --output="$OUT/$name.txt"
}

# Sync engine, fast: no bandwidth samples (the run is shorter than 500 ms).
run randwrite --name=w --ioengine=null --rw=randwrite --bs=4k --size=64m

# Mixed, per-direction block sizes, 2 s at a fixed rate: bw/iops samples.
run randrw --name=rw --ioengine=null --rw=randrw --bs=64k,8k --size=1g \
  --time_based --runtime=2 --rate_iops=2000,2000

# group_reporting over numjobs=2: one entry named after the job.
run group --name=g --ioengine=null --rw=write --bs=4k --size=32m \
  --numjobs=2 --group_reporting

# numjobs=2 without group_reporting: one entry per clone, same name.
run clones --name=c --ioengine=null --rw=read --bs=4k --size=16m --numjobs=2

# An async engine (null queues and completes in batches): slat, depths.
run async --name=a --ioengine=null --iodepth=16 --iodepth_batch_submit=4 \
  --iodepth_batch_complete_min=1 --rw=randread --bs=4k --size=64m

# A job file with [global] ("global options"), a real file ("disk_util",
# "Disk stats"), and fsync=8 (the "sync" section with its percentiles).
cat > "$OUT/psync-file.fio" <<'EOF'
[global]
ioengine=psync
bs=4k
size=4m

[f]
rw=write
fsync=8
EOF
(cd "$tmp" && "$FIO" "$OLDPWD/$OUT/psync-file.fio" --output-format=json \
  --output="$OLDPWD/$OUT/psync-file.json")
(cd "$tmp" && rm -f f.* && "$FIO" "$OLDPWD/$OUT/psync-file.fio" \
  --output="$OLDPWD/$OUT/psync-file.txt")

# Log files: per IO (no log_avg_msec) and averaged (log_avg_msec=100), at
# 200 IOPS for 1 s so that the per-IO logs stay small. The per-IO run's
# JSON (perio.json) holds fio's statistics of exactly the logged values.
(cd "$tmp" && "$FIO" --name=l --ioengine=null --rw=write --bs=4k --size=1g \
  --time_based --runtime=1 --rate_iops=200 \
  --write_lat_log=perio --write_bw_log=perio --write_iops_log=perio \
  --output-format=json --output="$OLDPWD/$OUT/perio.json")
(cd "$tmp" && "$FIO" --name=l --ioengine=null --rw=randrw --bs=4k --size=1g \
  --time_based --runtime=1 --rate_iops=200,200 --log_avg_msec=100 \
  --write_lat_log=avg --write_bw_log=avg --write_iops_log=avg \
  --output=/dev/null)
(cd "$tmp" && "$FIO" --name=l --ioengine=null --iodepth=4 --rw=write --bs=4k \
  --size=1g --time_based --runtime=1 --rate_iops=200 \
  --write_lat_log=async --output=/dev/null)
cp "$tmp"/*.log "$OUT"/
ls "$OUT"
