"""`acplink inspect` judges a recorded trace with the session rules: ``{}`` advertises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from acplink.tools.inspect import inspect_trace
from acplink.tools.trace import TraceWriter

ACPLINK = [sys.executable, "-m", "acplink.cli.main"]


def _record(path: Path, session_caps: Any) -> None:
    """A trace written by the recorder's own writer from the raw bytes of both directions."""
    writer = TraceWriter(path, header={"command": ["fake-agent"]})

    def send(direction: str, msg: dict[str, Any]) -> None:
        writer.feed(direction, orjson.dumps(msg) + b"\n")

    send("c2a", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": 1, "clientCapabilities": {}}})
    caps = {} if session_caps is None else {"sessionCapabilities": session_caps}
    send("a2c", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1, "agentCapabilities": caps}})
    send("c2a", {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}})
    send("a2c", {"jsonrpc": "2.0", "id": 2, "result": {"sessions": []}})
    writer.close()


def test_acplink_inspect_does_not_flag_an_empty_object_capability(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    _record(trace, {"list": {}})
    out = subprocess.run([*ACPLINK, "inspect", "--json", str(trace)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["agent_capabilities"] == {"sessionCapabilities": {"list": {}}}
    assert data["findings"] == []


@pytest.mark.parametrize(("session_caps", "flagged"), [
    ({"list": {}}, False),  # an empty object advertises (the bug: it was flagged)
    ({"list": {"_meta": {"x": 1}}}, False),
    (None, True),  # not advertised at all
    ({"list": None}, True),
])
def test_inspect_flags_session_list_only_when_not_advertised(tmp_path: Path, session_caps: Any,
                                                             flagged: bool) -> None:
    trace = tmp_path / "trace.jsonl"
    _record(trace, session_caps)
    data = inspect_trace(trace, as_json=True)
    assert data is not None
    capability = [f["message"] for f in data["findings"] if f["code"] == "capability"]
    assert bool(capability) == flagged, data["findings"]
    if flagged:
        assert "sessionCapabilities.list" in capability[0]
