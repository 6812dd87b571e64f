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

step "python environment (.venv)"
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'

step "official Python SDK for interop tests (.peers-venv)"
[ -x .peers-venv/bin/python ] || "$PY" -m venv .peers-venv
.peers-venv/bin/python -m pip install -q --disable-pip-version-check 'agent-client-protocol[http]==0.12.1' uvicorn

step "official TypeScript SDK for interop tests (npm ci)"
if command -v npm >/dev/null 2>&1; then
  (cd tests/interop/js && npm ci --no-audit --no-fund --loglevel=error)
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
.venv/bin/mypy

step "tests"
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
