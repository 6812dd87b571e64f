#!/usr/bin/env bash
# Install everything the tests need (in .venv, .peers-venv and tests/interop/js/node_modules)
# and run the checks and the test suite. Works on a fresh machine with Python 3.11, pip, node/npm.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

step() { printf '\n== %s\n' "$*"; }

step "system packages for the remote, browser and PostgreSQL tests (Debian's haproxy, chromium, firefox-esr, postgresql)"
# (the PostgreSQL tests start their own throwaway cluster with initdb/pg_ctl: tests/pg_cluster.py)
has_pg() { command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; }
if command -v haproxy >/dev/null 2>&1 && command -v chromium >/dev/null 2>&1 && command -v firefox-esr >/dev/null 2>&1 && has_pg; then
  echo "haproxy, chromium, firefox-esr and postgresql present"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends haproxy chromium firefox-esr postgresql >/dev/null
else
  echo "not root or no apt-get: the load-balancer, browser and PostgreSQL tests will be skipped"
fi

step "python environments (.venv; the official Python SDK for the interop tests in .peers-venv) and the official TypeScript SDK (npm ci in tests/interop/js), installed side by side"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
[ -x .peers-venv/bin/python ] || "$PY" -m venv .peers-venv
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]' >"$logs/venv" 2>&1 &
venv_pid=$!
.peers-venv/bin/python -m pip install -q --disable-pip-version-check 'agent-client-protocol[http]==0.12.1' uvicorn >"$logs/peers" 2>&1 &
peers_pid=$!
npm_pid=
if command -v npm >/dev/null 2>&1; then
  (cd tests/interop/js && npm ci --no-audit --no-fund --loglevel=error) >"$logs/npm" 2>&1 &
  npm_pid=$!
fi
# joined one by one, each one's output shown; the first failure stops the script
joined() { local rc=0; wait "$2" || rc=$?; cat "$logs/$1"; [ "$rc" = 0 ] || { echo "$1 failed (exit $rc)"; exit "$rc"; }; }
joined venv "$venv_pid"

step "mypy --strict (src/) started in the background: its result is shown before the tests"
.venv/bin/mypy >"$logs/mypy" 2>&1 &
mypy_pid=$!

joined peers "$peers_pid"
if [ -n "$npm_pid" ]; then
  joined npm "$npm_pid"
  step "pyright for the docs' type checks (its PyPI package fetches the npm package on first use)"
  .venv/bin/pyright --version
else
  echo "npm not found: TypeScript interop tests will be skipped, and the docs type-checked with mypy only"
fi

step "generated code is up to date"
.venv/bin/python tools/gen_schema.py --check

step "ruff"
.venv/bin/ruff check src tests tools benchmarks examples fuzz

step "mypy --strict (src/)"
joined mypy "$mypy_pid"

step "tests (in parallel: pytest-xdist, one worker per core, each test file on one worker)"
# The many Python processes the tests start (agents, servers, the CLI) import acplink from src/:
# with PYTHONDONTWRITEBYTECODE set (some environments set it) each would compile it anew.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist loadfile "$@"
