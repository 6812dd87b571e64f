"""examples/tracing.py runs and prints one tree: the client's turn, the agent's under it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

ROOT = Path(__file__).resolve().parents[2]


def test_tracing_example() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "tracing.py")], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("trace ") and len(lines[0]) == len("trace ") + 32 + 1
    assert lines[1:] == ["CLIENT session/prompt (client)", "  SERVER session/prompt (agent)",
                         "    PRODUCER session/update (agent)", "      CONSUMER session/update (client)"]
