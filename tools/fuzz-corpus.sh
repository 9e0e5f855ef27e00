#!/bin/sh
# Usage: tools/fuzz-corpus.sh
#
# Seed corpora for the fuzz targets from the repository's own inputs:
# the example scenarios (scenario_load), the traces a short run of each
# writes (trace_parse), the fs_mark argument lines (fs_mark_args), the
# fio job files (fio_parse), and `--set` lines (set_override): those the
# docs show, and each example's keys as `--set section.key=value`. Then, e.g.:
#   cd fuzz && cargo +nightly fuzz run scenario_load -- -max_total_time=60
set -eu
cd "$(dirname "$0")/.."
c=fuzz/corpus
mkdir -p "$c/scenario_load" "$c/trace_parse" "$c/fs_mark_args" "$c/fio_parse" "$c/set_override"
for f in $(find examples -name '*.toml' | sort); do
    cp "$f" "$c/scenario_load/$(echo "$f" | tr / _)"
    grep -h '^args *=' "$f" | sed 's/^args *= *"\(.*\)"/\1/' > "$c/fs_mark_args/$(echo "$f" | tr / _)" || true
    # the example's scalar keys as --set arguments (tables flattened)
    awk '/^\[/ { gsub(/[][ ]/, ""); sec = $0 "."; next }
         /^[A-Za-z_][A-Za-z0-9_]* *=/ { k = $0; sub(/ *=.*/, "", k); v = $0; sub(/^[^=]*= */, "", v);
             sub(/ *#.*/, "", v); print sec k "=" v }' "$f" > "$c/set_override/$(echo "$f" | tr / _)"
done
# the --set arguments the docs show, one input each
grep -rhoE -- '--set [A-Za-z_.0-9]+=[^ `"]+' README.md docs | sort -u | sed 's/^--set //' |
    while read -r a; do echo "$a" > "$c/set_override/doc-$(echo "$a" | cksum | cut -d' ' -f1)"; done
for f in $(find examples -name '*.fio' | sort); do
    cp "$f" "$c/fio_parse/$(echo "$f" | tr / _)"
done
# a few seconds of the default scenario's trace, in pieces
cargo run -q --release -- run --set run.duration=2s --out "$c/.run" -q
split -l 200 "$c/.run/trace.txt" "$c/trace_parse/default-"
rm -rf "$c/.run"
find "$c" -type f -empty -delete
for d in "$c"/*; do echo "$d: $(ls "$d" | wc -l) inputs"; done
