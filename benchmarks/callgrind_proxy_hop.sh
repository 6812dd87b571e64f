#!/usr/bin/env bash
# Instructions per message of a proxy chain's conductor, counted by callgrind (repeatable
# whatever the machine's load, unlike benchmarks/proxy_hop.py's wall-clock rates).
#
#   benchmarks/callgrind_proxy_hop.sh SRC_DIR OUT_PREFIX SCENARIO CHAIN [N1 N2]
#
# SRC_DIR: the tree's src/ (a checkout of the commit to compare, `python -m compileall` run on
# it first: without .pyc files the count includes compiling); SCENARIO: flood or rtt; CHAIN:
# conductor (`acplink conduct -- agent`: the conductor alone), builtin (`--proxy
# acplink:passthrough`: the conductor and the in-process proxy) or process (a pass-through
# ProxyApp in its own process: the conductor and the proxy process, summed). The client and the
# agent run normally (the agent alone: benchmarks/callgrind_per_message.sh SRC OUT SC agent).
# Prints (Ir(N2) - Ir(N1)) / (N2 - N1) (default N1=300, N2=1300): start-up cancels out.
# PYTHON: default .venv/bin/python.
set -euo pipefail
SRC=$(cd "$1" && pwd); OUT=$2; sc=$3; chain=$4; n1=${5:-300}; n2=${6:-1300}
PY=${PYTHON:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python}
B=$SRC/../benchmarks
export PYTHONPATH=$SRC PYTHONHASHSEED=0
vals=()
for n in "$n1" "$n2"; do
  f=$OUT.$sc.$chain.$n
  rm -f "$f".cg*
  VG=(valgrind --tool=callgrind --callgrind-out-file="$f.cg.%p")
  case $chain in
    conductor) PROXY=() ;;
    builtin) PROXY=(--proxy acplink:passthrough) ;;
    # (the proxy in a session of its own: the conductor's shutdown ladder signals the process
    # group of a component that is slow to exit, as one under callgrind is, before it wrote its
    # counts; in its own session it exits at the end of its input, and is waited for below)
    process) PROXY=(--proxy "setsid -w ${VG[*]} $PY $B/proxy_hop.py --proxy") ;;
    *) echo "CHAIN: conductor, builtin or process" >&2; exit 2 ;;
  esac
  "$PY" "$B/scenario_client.py" "$sc" "$n" -- "${VG[@]}" "$PY" -m acplink conduct "${PROXY[@]}" -- \
    "$PY" "$B/scenario_agent.py" > "$f.out" 2>&1
  grep -q '"ok": *true' "$f.out" || { echo "run failed: see $f.out" >&2; exit 1; }
  for _ in $(seq 120); do  # (every process counted has written its counts)
    [ "$(grep -l '^summary:' "$f".cg.* | wc -l)" = "$(ls "$f".cg.* | wc -l)" ] && break
    sleep 1
  done
  vals+=("$(cat "$f".cg.* | awk '/^summary:/ {s += $2} END {printf "%.0f", s}')")
done
echo "$sc $chain $(( (vals[1] - vals[0]) / (n2 - n1) )) Ir/msg  (Ir$n1=${vals[0]} Ir$n2=${vals[1]})"
