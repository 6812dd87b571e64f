#!/usr/bin/env bash
# Instructions per message of OpenTelemetry's hooks, counted by callgrind in one process
# (benchmarks/otel_overhead.py: client and agent over the in-memory transport; a message here
# is one session/update notification plus one fs/read_text_file request and its answer).
#
#   benchmarks/otel_overhead.sh SRC_DIR OUT_PREFIX MODE
#
# SRC_DIR: the tree's src/ (another commit's, from `git archive`, to compare); MODE: plain,
# blocked, api or sdk (see otel_overhead.py). Prints (Ir(N=3000) - Ir(N=500)) / 2500.
# PYTHON (default .venv/bin/python).
set -euo pipefail
SRC=$(cd "$1" && pwd); OUT=$2; mode=$3
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-$HERE/../.venv/bin/python}
export PYTHONPATH=$SRC PYTHONHASHSEED=0
vals=()
for n in 500 3000; do
  f=$OUT.$mode.$n.cg
  valgrind --tool=callgrind --callgrind-out-file="$f" "$PY" "$HERE/otel_overhead.py" $n "$mode" > "$f.out" 2>&1
  vals+=("$(grep -h '^summary:' "$f" | awk '{print $2}')")
done
echo "$mode $(( (vals[1] - vals[0]) / 2500 )) Ir/msg  (Ir500=${vals[0]} Ir3000=${vals[1]})"
