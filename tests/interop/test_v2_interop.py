"""ACP v2 interop: the official TypeScript SDK's v2 client (``experimental/v2``) against
``acplink demo-agent``, which serves v1 and v2 from one app; and the official v1 clients
(TypeScript, Python 0.12.1) against the same agent, still on v1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from peerenv import JS_DIR, NODE, PEERS, client_cmd, peer_params


def demo_agent(store: Path) -> list[str]:
    return [sys.executable, "-m", "acplink", "demo-agent", "--delay", "0.005", "--store", str(store)]


def run(cmd: list[str]) -> list[dict[str, Any]]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert not [e for e in events if e["event"] == "fatal"], events
    return events


ts_missing = PEERS["ts-sdk"][2]


@pytest.mark.skipif(ts_missing is not None, reason=ts_missing or "")
def test_ts_v2_client_against_the_demo_agent(tmp_path: Path) -> None:
    events = run([str(NODE), str(JS_DIR / "v2_client.mjs"), "--cwd", str(tmp_path), "--timeout", "30", "--",
                  *demo_agent(tmp_path / "store")])
    by = {e["event"]: e for e in events}
    init = by["initialize"]["result"]
    assert init["protocolVersion"] == 2 and init["info"]["name"] == "acplink-demo"
    assert init["authMethods"][0]["methodId"] == "demo"
    assert [e["event"] for e in events if e["event"] == "receipt"] == ["receipt", "receipt"]
    assert by["text"]["text"] == "You said: hello v2"  # readTextUntilIdle: every chunk kept
    assert by["stop"]["stopReason"] == "cancelled"  # slow 50 cancelled with session/cancel
    assert by["held"]["distinct"] is True
    assert by["echoes"] == {"event": "echoes", "texts": ["slow 3", "held one"], "stops": ["end_turn", "end_turn"]}
    perm = by["permission"]
    assert perm["title"] == "Write v2.txt" and perm["subject"] == "tool_call" and perm["toolCallId"]
    assert by["states"]["states"] == ["running", "requires_action", "running"]
    assert by["tool"]["cancellable"] is True
    assert by["tool_cancelled"] == {"event": "tool_cancelled", "statuses": ["failed"], "stopReason": "end_turn"}
    kinds = by["resumed"]["kinds"]
    replayed = [k for k in kinds if k in ("user_message", "agent_message")]
    assert replayed[:2] == ["user_message", "agent_message"] and len(replayed) == 12  # six prompts, six replies
    assert kinds[-1] == "state:idle"  # the snapshot after the replay, before the answer
    assert by["closed"]["result"] == {}


@pytest.mark.parametrize("peer", peer_params())
def test_official_v1_clients_against_the_demo_agent(peer: str, tmp_path: Path) -> None:
    events = run([*client_cmd(peer), "--cwd", str(tmp_path), "--timeout", "30", "--prompt", "hello v1", "--",
                  *demo_agent(tmp_path / "store")])
    assert events[0]["event"] == "initialize" and events[0]["result"]["protocolVersion"] == 1
    chunks = [e["update"]["content"]["text"] for e in events
              if e["event"] == "update" and e["update"]["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(chunks) == "You said: hello v1"
    assert not [e for e in events if e["event"] == "update" and e["update"]["sessionUpdate"] == "state_update"]
    assert [e for e in events if e["event"] in ("stop", "error")] == [{"event": "stop", "stopReason": "end_turn"}]


@pytest.mark.parametrize("peer", peer_params())
def test_official_v1_clients_cancel_the_demo_agent(peer: str, tmp_path: Path) -> None:
    events = run([*client_cmd(peer), "--cwd", str(tmp_path), "--timeout", "30", "--prompt", "slow 50",
                  "--cancel-after", "0.3", "--", *demo_agent(tmp_path / "store")])
    assert [e for e in events if e["event"] in ("stop", "error")] == [{"event": "stop", "stopReason": "cancelled"}]
