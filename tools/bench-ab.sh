#!/usr/bin/env bash
# Simulation speed of two wbsim builds, measured interleaved in one run (the
# host is shared and noisy: only ratios taken together mean anything).
#
#   tools/bench-ab.sh BASE_BIN HEAD_BIN [ROUNDS] [SCENARIO...]
#
# Each round runs `wbsim bench --trace off --repeat 3` of every scenario
# with BASE then HEAD (alternating which goes first); the best wall time
# of each build over the rounds is reported, with HEAD/BASE. Without
# scenarios: the built-in default, 1000 dd bs=4k and seed 002.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: tools/bench-ab.sh BASE_BIN HEAD_BIN [ROUNDS] [SCENARIO...]}
head=${2:?usage: tools/bench-ab.sh BASE_BIN HEAD_BIN [ROUNDS] [SCENARIO...]}
rounds=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
scens=("$@")
(( ${#scens[@]} )) || scens=(default examples/dd-matrix/dd-n1000-bs4k.toml examples/seed-002-plug.toml)

ms() { # BIN SCENARIO -> wall ms of the best of 3
  local arg=()
  [[ $2 == default ]] || arg=("$2")
  "$1" bench "${arg[@]}" --trace off --repeat 3 2>&1 |
    sed -n 's/.* simulated in \([0-9.]*\) ms wall.*/\1/p' | tail -1
}

declare -A best
for ((r = 0; r < rounds; r++)); do
  for s in "${scens[@]}"; do
    order=(base head); (( r % 2 )) && order=(head base)
    for who in "${order[@]}"; do
      bin=$base; [[ $who == head ]] && bin=$head
      t=$(ms "$bin" "$s")
      k="$who $s"
      if [[ -z ${best[$k]:-} ]] || awk -v a="$t" -v b="${best[$k]}" 'BEGIN{exit !(a<b)}'; then
        best[$k]=$t
      fi
    done
  done
done
printf '%-45s %10s %10s %8s\n' scenario "base ms" "head ms" head/base
for s in "${scens[@]}"; do
  b=${best["base $s"]}; h=${best["head $s"]}
  printf '%-45s %10s %10s %8s\n' "$s" "$b" "$h" "$(awk -v a="$h" -v b="$b" 'BEGIN{printf "%.3f", a/b}')"
done
