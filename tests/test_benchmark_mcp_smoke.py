"""Smoke check of benchmarks/mcp_roundtrip.py (``--quick``): both paths read the file over a
real pipe (the agent checks every answer) and the figures are written. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_mcp_roundtrip_quick(tmp_path: Path) -> None:
    out = tmp_path / "mcp.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mcp_roundtrip.py"), "--quick", "--json",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["n"] == 50 and res["protocol"] == 1 and res["file_bytes"] == 1024
    for key in ("fs", "mcp"):
        assert res[key]["median_us"] > 0
    assert "MCP-over-ACP / fs (medians):" in proc.stdout
