"""The official SDKs' clients (Python 0.12.1, TypeScript 2.4.0) drive a chain run by
``acplink conduct``: a streamed prompt, a permission request back through the proxies, a
cancelled turn, a context proxy's line reaching the agent; the TypeScript agent behind a chain."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "interop"))

from peerenv import ACPLINK_AGENT, agent_cmd, client_cmd, peer_params
from proxy_raw import conduct

per_peer = pytest.mark.parametrize("peer", peer_params())

TWO = ("acplink:passthrough", "acplink:passthrough")


def _drive(peer: str, cwd: Path, chain: list[str], *prompts: str, cancel_after: float | None = None) -> list[dict]:
    cmd = [*client_cmd(peer), "--cwd", str(cwd), "--timeout", "30"]
    for p in prompts:
        cmd += ["--prompt", p]
    if cancel_after is not None:
        cmd += ["--cancel-after", str(cancel_after)]
    proc = subprocess.run([*cmd, "--", *chain], capture_output=True, text=True, timeout=90)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert not [e for e in events if e["event"] == "fatal"], events
    return events


def _chunks(events: list[dict]) -> list[str]:
    return [e["update"]["content"]["text"] for e in events
            if e["event"] == "update" and e["update"]["sessionUpdate"] == "agent_message_chunk"]


@per_peer
def test_official_client_streamed_prompt_and_permission_through_two_proxies(peer: str, tmp_path: Path) -> None:
    events = _drive(peer, tmp_path, conduct(*TWO, agent=ACPLINK_AGENT), "hello", "full")
    assert events[0]["event"] == "initialize"
    assert events[0]["result"]["agentInfo"]["name"] == "acplink-interop-agent"
    perm = [e for e in events if e["event"] == "permission"]
    assert len(perm) == 1 and perm[0]["answer"] == "allow"
    assert (tmp_path / "interop.txt").read_text() == "written by peer\n"
    assert _chunks(events) == ["Hello, ", "world", "start", "read:written by peer\n", "term:term-ok:0"]
    assert [e for e in events if e["event"] == "stop"] == [{"event": "stop", "stopReason": "end_turn"}] * 2


@per_peer
def test_official_client_cancel_through_two_proxies(peer: str, tmp_path: Path) -> None:
    events = _drive(peer, tmp_path, conduct(*TWO, agent=ACPLINK_AGENT), "wait", cancel_after=0.3)
    assert _chunks(events) == ["waiting"]
    assert events[-1] == {"event": "stop", "stopReason": "cancelled"}


@per_peer
def test_official_client_to_the_same_sdks_agent_behind_a_context_proxy(peer: str, tmp_path: Path) -> None:
    # the agents answer the first text block of a prompt: the context proxy's line is now first
    events = _drive(peer, tmp_path, conduct("acplink:context=CTX-LINE", agent=agent_cmd(peer)), "hello")
    assert _chunks(events) == ["CTX-LINE"]
    assert events[-1] == {"event": "stop", "stopReason": "end_turn"}


def test_ts_v2_client_through_two_proxies_to_the_demo_agent(tmp_path: Path) -> None:
    from peerenv import JS_DIR, NODE, PEERS

    if PEERS["ts-sdk"][2] is not None:
        pytest.skip(PEERS["ts-sdk"][2])
    demo = [sys.executable, "-m", "acplink", "demo-agent", "--delay", "0.005", "--store", str(tmp_path / "store")]
    proc = subprocess.run([str(NODE), str(JS_DIR / "v2_client.mjs"), "--cwd", str(tmp_path), "--timeout", "30", "--",
                           *conduct(*TWO, agent=demo)], capture_output=True, text=True, timeout=120)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    by = {e["event"]: e for e in events}
    assert by["initialize"]["result"]["protocolVersion"] == 2
    assert by["text"]["text"] == "You said: hello v2"
    assert by["stop"]["stopReason"] == "cancelled"
    assert by["permission"]["title"] == "Write v2.txt"
    assert by["states"]["states"] == ["running", "requires_action", "running"]
    assert by["echoes"] == {"event": "echoes", "texts": ["slow 3", "held one"], "stops": ["end_turn", "end_turn"]}
    assert by["closed"]["result"] == {}
