"""Smoke check of benchmarks/proxy_hop.py (``--quick``): every configuration runs both scenarios
through its chain and reports figures. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
