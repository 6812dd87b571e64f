"""Smoke check of benchmarks/proxy_hop.py (``--quick``): every configuration runs both scenarios
through its chain and reports figures. No timing is asserted."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_proxy_hop_quick(tmp_path: Path) -> None:
    out = tmp_path / "hop.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "proxy_hop.py"), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())
    assert set(figures) == {"direct", "conductor", "builtin", "process"}
    for row in figures.values():
        assert row["flood"]["rate"] > 0 and row["rtt"]["rate"] > 0 and "vs_direct" in row["rtt"]
        assert len(row["rtt"]["ratios"]) == 1  # (one round: its own ratio)


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) is not installed")
def test_proxy_hop_pinned_to_one_cpu(tmp_path: Path) -> None:
    out = tmp_path / "hop.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "proxy_hop.py"), "--rounds", "2", "--flood", "500", "--rtt", "100",
                           "--pin", "0", "--configs", "builtin", "--json", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = json.loads(out.read_text())
    assert set(figures) == {"direct", "builtin"}
    assert len(figures["builtin"]["rtt"]["ratios"]) == 2 and figures["builtin"]["flood"]["rate"] > 0
