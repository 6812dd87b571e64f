"""``examples/v2_client.py`` runs: v2 with the TS v2 agent, v1 with the v1-only one (auto)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "tests" / "interop" / "js"
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None or not (JS / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(),
                    reason="node or the official TypeScript SDK is missing")
@pytest.mark.parametrize(("agent", "expected"), [
    ("v2_agent.mjs", ["[protocol 2]", "done", "[tool] Read file: completed", "[stop reason: end_turn]"]),
    ("agent.mjs", ["[protocol 1]", "tools", "[stop reason: end_turn]"]),
])
def test_v2_client_example(agent: str, expected: list[str]) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "v2_client.py"), "tools", "--", str(NODE),
                           str(JS / agent)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line for line in lines if not line.startswith("[inserted as ")] == expected
    assert any(line.startswith("[inserted as u-") for line in lines) == (agent == "v2_agent.mjs")
