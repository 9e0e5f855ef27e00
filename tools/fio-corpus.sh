#!/bin/sh
# Usage: tools/fio-corpus.sh DIR
#
# For each fio job file (*.fio) in DIR: does fio accept it (`fio
# --parse-only`, when fio is installed), does wbsim parse it, and does
# wbsim simulate it (or the one-line reason it does not). The last line
# sums up. The table comes from the fio_examples_corpus test in
# tests/fio_parse.rs.
set -eu
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
    echo "usage: $0 DIR   (a directory of fio job files)" >&2
    exit 2
fi
dir=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
WBSIM_FIO_CORPUS="$dir" cargo test -q --test fio_parse fio_examples_corpus -- --nocapture --test-threads=1 2>/dev/null |
    grep -v -e '^running ' -e '^test ' -e '^$' -e '^test result' -e '^\.*$'
