#!/bin/sh
# Usage: tools/fuzz-corpus.sh
#
# Seed corpora for the fuzz targets from the repository's own inputs:
# the example scenarios (scenario_load), the traces a short run of each
# writes (trace_parse), the fs_mark argument lines (fs_mark_args) and the
# fio job files (fio_parse). Then, e.g.:
#   cd fuzz && cargo +nightly fuzz run scenario_load -- -max_total_time=60
set -eu
cd "$(dirname "$0")/.."
c=fuzz/corpus
mkdir -p "$c/scenario_load" "$c/trace_parse" "$c/fs_mark_args" "$c/fio_parse"
for f in $(find examples -name '*.toml' | sort); do
    cp "$f" "$c/scenario_load/$(echo "$f" | tr / _)"
    grep -h '^args *=' "$f" | sed 's/^args *= *"\(.*\)"/\1/' > "$c/fs_mark_args/$(echo "$f" | tr / _)" || true
done
for f in $(find examples -name '*.fio' | sort); do
    cp "$f" "$c/fio_parse/$(echo "$f" | tr / _)"
done
# a few seconds of the default scenario's trace, in pieces
cargo run -q --release -- run --set run.duration=2s --out "$c/.run" -q
split -l 200 "$c/.run/trace.txt" "$c/trace_parse/default-"
rm -rf "$c/.run"
find "$c" -type f -empty -delete
for d in "$c"/*; do echo "$d: $(ls "$d" | wc -l) inputs"; done
