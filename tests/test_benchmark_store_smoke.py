"""Smoke check of ``benchmarks/store_cost.py --quick``: both stores run flood and rtt over real
pipes, and the reopened session replays its history folded (per turn: the prompt, one agent
message for all its chunks, one tool call in its final state). No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_store_cost_quick(tmp_path: Path) -> None:
    out = tmp_path / "store.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "store_cost.py"), "--quick", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    for scenario in ("flood", "rtt"):
        assert figures[scenario]["memory"] > 0 and figures[scenario]["sqlite"] > 0
    reopen = figures["reopen"]
    turns = reopen["updates"] / 100
    assert reopen["replayed_updates"] == 3 * turns
    assert reopen["load_s"] > 0 and reopen["resume_s"] > 0


def test_store_cost_quick_with_postgres(tmp_path: Path) -> None:
    """``--postgres``: the PostgresStore column too (a throwaway cluster; skipped when none starts)."""
    out = tmp_path / "store.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "store_cost.py"), "--quick", "--postgres",
                           "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if proc.returncode and "--postgres: " in proc.stderr:
        import pytest

        pytest.skip(proc.stderr.strip().splitlines()[-1])
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    for scenario in ("flood", "rtt"):
        assert figures[scenario]["postgres"] > 0 and figures[scenario]["ratio_postgres"] > 0


def test_store_cost_quick_served_in_process(tmp_path: Path) -> None:
    """``--serve-app http``: the scenario agent served in process by ``acplink serve --app``, the
    client over streamable HTTP; ``--rtt 0`` runs the flood alone."""
    out = tmp_path / "store.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "store_cost.py"), "--quick", "--serve-app",
                           "http", "--rtt", "0", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(out.read_text())
    assert figures["serve_app"] == "http" and figures["reopen"] is None and "rtt" not in figures
    assert figures["flood"]["memory"] > 0 and figures["flood"]["sqlite"] > 0
