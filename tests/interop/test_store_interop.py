"""The official SDKs' clients (Python 0.12.1, TypeScript 2.4.0) against an acplink agent that
only sets a store (``tests/agent/store_agent.py``): a conversation in one agent process is
listed and loaded in the next, its history replayed as updates the SDK parses, and the
conversation goes on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from peerenv import HERE, JS_DIR, NODE, PEERS_PYTHON, ROOT, _py_missing, _ts_missing

STORE_AGENT = [sys.executable, str(ROOT / "tests" / "agent" / "store_agent.py")]
CLIENTS = {
    "python-sdk": ([str(PEERS_PYTHON), str(HERE / "peers" / "py_store_client.py")], _py_missing()),
    "ts-sdk": ([str(NODE), str(JS_DIR / "store_client.mjs")], _ts_missing()),
}


@pytest.fixture(params=[pytest.param(name, marks=pytest.mark.skipif(why is not None, reason=why or ""))
                        for name, (_, why) in CLIENTS.items()])
def client(request: pytest.FixtureRequest) -> list[str]:
    return CLIENTS[request.param][0]


def _run(client: list[str], db: Path, cwd: Path, *args: str) -> list[dict[str, Any]]:
    proc = subprocess.run([*client, "--cwd", str(cwd), *args, "--", *STORE_AGENT, str(db)],
                          capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0 and not [e for e in events if e["event"] == "fatal"], (events, proc.stderr[-2000:])
    return events


def _texts(events: list[dict[str, Any]], phase: str, kind: str) -> list[str]:
    return [e["update"]["content"]["text"] for e in events
            if e["event"] == "update" and e["phase"] == phase and e["update"]["sessionUpdate"] == kind]


def test_official_client_lists_and_loads_a_stored_session(client: list[str], tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = _run(client, db, tmp_path, "--prompt", "apples", "--prompt", "title Fruit")
    caps = first[0]["result"]["agentCapabilities"]
    assert caps["loadSession"] is True and "list" in caps["sessionCapabilities"]
    sid = next(e["sessionId"] for e in first if e["event"] == "session")
    assert "".join(_texts(first, "prompt", "agent_message_chunk")) == "turn 1: apples"

    second = _run(client, db, tmp_path, "--load", sid, "--prompt", "pears")
    listed = next(e for e in second if e["event"] == "list")
    assert listed["sessions"] == [{"sessionId": sid, "title": "Fruit"}]
    names = [e["event"] for e in second]
    assert names.index("loaded") > max(i for i, e in enumerate(second) if e.get("phase") == "load")
    assert _texts(second, "load", "user_message_chunk") == ["apples", "title Fruit"]
    assert _texts(second, "load", "agent_message_chunk") == ["turn 1: apples"]
    calls = [e["update"] for e in second if e.get("phase") == "load" and e["update"]["sessionUpdate"] == "tool_call"]
    assert [(c["title"], c["status"]) for c in calls] == [("look", "completed")]
    assert "".join(_texts(second, "prompt", "agent_message_chunk")) == "turn 3: pears"
