#!/usr/bin/env bash
# Instructions per message of one side of a stdio benchmark scenario, counted by callgrind
# (repeatable whatever the machine's load, unlike wall-clock rates).
#
#   benchmarks/callgrind_per_message.sh SRC_DIR OUT_PREFIX SCENARIO SIDE
#
# SRC_DIR: the tree's src/ (for example a `git worktree` of the commit to compare, with
# `python -m compileall` run on it first: without .pyc files the count includes compiling);
# SCENARIO: flood, rtt or concurrent; SIDE: agent or client (the other side runs normally).
# Prints (Ir(N=3000) - Ir(N=500)) / 2500: start-up cancels out. PYTHON (default .venv/bin/python).
set -euo pipefail
SRC=$(cd "$1" && pwd); OUT=$2; sc=$3; side=$4
PY=${PYTHON:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
B=$SRC/../benchmarks
export PYTHONPATH=$SRC PYTHONHASHSEED=0
vals=()
for n in 500 3000; do
  f=$OUT.$sc.$side.$n.cg
  if [ "$side" = agent ]; then
    "$PY" "$B/scenario_client.py" "$sc" $n -- valgrind --tool=callgrind --callgrind-out-file="$f" "$PY" "$B/scenario_agent.py" > "$f.out" 2>&1
  else
    valgrind --tool=callgrind --callgrind-out-file="$f" "$PY" "$B/scenario_client.py" "$sc" $n -- "$PY" "$B/scenario_agent.py" > "$f.out" 2>&1
  fi
  vals+=("$(grep -h '^summary:' "$f" | awk '{print $2}')")
done
echo "$sc $side $(( (vals[1] - vals[0]) / 2500 )) Ir/msg  (Ir500=${vals[0]} Ir3000=${vals[1]})"
