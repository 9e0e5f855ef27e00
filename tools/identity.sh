#!/usr/bin/env bash
# Byte identity of wbsim's outputs across a change.
#
#   tools/identity.sh manifest [BIN]   print sha256 of trace.txt, summary.json,
#                                      vmstat and fs_mark.txt for every example
#                                      (and the built-in default) under every
#                                      dirty-throttling policy
#   tools/identity.sh compare REV      build REV in a scratch worktree, take
#                                      both manifests, and diff them (exit 1 on
#                                      any difference)
#
# IDENTITY_QUICK=1 leaves out the 100- and 1000-writer examples (a quick
# check while working; the full set is the proof).
#
# A restructuring that changes no behaviour must leave the manifest as it
# was. The full run writes about 4 GB of traces one scenario at a time and
# deletes each after hashing; it takes a few minutes in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
POLICIES=(io-less io-less-3.2 legacy)

manifest() {
  local bin=$1 tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  local scen
  for scen in default examples/*.toml examples/*/*.toml; do
    # sweep plans are not scenarios
    if [[ $scen == examples/sweeps/* ]]; then continue; fi
    if [[ -n ${IDENTITY_QUICK:-} && $scen =~ n100 ]]; then continue; fi
    local p
    for p in "${POLICIES[@]}"; do
      local arg=() name
      if [[ $scen == default ]]; then name=default; else arg=("$scen"); name=$scen; fi
      rm -rf "$tmp/out"
      "$bin" run "${arg[@]}" --set run.dirty_throttle="$p" --out "$tmp/out" -q
      local f
      for f in trace.txt summary.json vmstat fs_mark.txt; do
        [[ -e $tmp/out/$f ]] || continue
        echo "$(sha256sum <"$tmp/out/$f" | cut -c1-64)  $name $p $f"
      done
    done
  done
}

case "${1:-}" in
  manifest)
    bin=${2:-}
    if [[ -z $bin ]]; then cargo build --profile identity --quiet; bin=target/identity/wbsim; fi
    manifest "$bin"
    ;;
  compare)
    rev=${2:?usage: tools/identity.sh compare REV}
    wt=target/identity-base
    git worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
    git worktree add --detach "$wt" "$rev" >/dev/null
    trap 'git worktree remove --force "$wt" 2>/dev/null || true' EXIT
    (cd "$wt" && CARGO_TARGET_DIR="$PWD/../identity-base-target" cargo build --release --quiet)
    cargo build --profile identity --quiet
    manifest target/identity-base-target/release/wbsim >target/identity-base.txt
    manifest target/identity/wbsim >target/identity-head.txt
    if diff target/identity-base.txt target/identity-head.txt; then
      echo "identical: $(wc -l <target/identity-head.txt) files over $(cut -d' ' -f3,4 target/identity-head.txt | sort -u | wc -l) runs"
    else
      echo "outputs differ from $rev" >&2
      exit 1
    fi
    ;;
  *)
    sed -n 2,17p "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
