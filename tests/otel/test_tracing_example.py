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


def test_the_trace_picture_is_in_the_docs() -> None:
    """docs/tracing.md shows scripts/trace_picture.py's PNG, and the script draws each span once,
    children under their parent."""
    import importlib.util
    import re
    import struct

    doc = (ROOT / "docs" / "tracing.md").read_text()
    [image] = re.findall(r"!\[[^\]]*\]\((images/tracing/[^)]+\.png)\)", doc)
    data = (ROOT / "docs" / image).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24])[0] == 1280
    spec = importlib.util.spec_from_file_location("trace_picture", ROOT / "scripts" / "trace_picture.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from receiver import Span

    def span(name: str, sid: str, parent: str, start: int, end: int) -> Span:
        return Span("acplink prompt", name, "CLIENT", "t" * 32, sid, parent, {}, [], 0, start, end)

    spans = [span("child", "b", "a", 10, 20), span("root", "a", "", 0, 100), span("grandchild", "c", "b", 12, 15)]
    assert [(d, s.name) for d, s in mod._ordered(spans)] == [(0, "root"), (1, "child"), (2, "grandchild")]
    svg = mod.svg(spans)
    assert svg.count("<text") == 1 + len(mod.COLOURS) + 2 * len(spans)  # (title, legend, name and time per row)
    assert "3 spans, 0.0 ms" in svg and svg.index(">root<") < svg.index(">child<") < svg.index(">grandchild<")
