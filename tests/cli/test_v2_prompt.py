"""``acplink prompt --protocol {auto,1,2}`` against a TS v2 agent, a TS AgentProtocolRouter agent
(v1 + v2) and the TS v1-only agent (the official TypeScript SDK 2.4.0), and a scripted v2 agent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cliutil import ACPLINK, JS_DIR, NODE

SCRIPT = Path(__file__).resolve().parents[1] / "client" / "v2_script_agent.py"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*ACPLINK, "prompt", "--cwd", str(cwd), *args], capture_output=True, text=True,
                          timeout=120)


def ts(name: str) -> list[str]:
    if NODE is None or not (JS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        pytest.skip("node or the official TypeScript SDK (tests/interop/js/node_modules) is missing")
    return [NODE, str(JS_DIR / name)]


@pytest.mark.parametrize(("agent", "protocol", "reply"), [
    ("v2_agent.mjs", "2", "Hello, world"),
    ("v2_agent.mjs", "auto", "Hello, world"),
    ("v2_router_agent.mjs", "auto", "Hello, world"),  # v2 where the agent agrees
    ("v2_router_agent.mjs", "1", "v1:hello"),
    ("agent.mjs", "auto", "Hello, world"),  # v1 otherwise
])
def test_prompt_protocol(tmp_path: Path, agent: str, protocol: str, reply: str) -> None:
    proc = run("--protocol", protocol, "hello", "--", *ts(agent), cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, reply + "\n"), proc.stderr


def test_prompt_protocol_2_refuses_a_v1_agent(tmp_path: Path) -> None:
    proc = run("--protocol", "2", "hello", "--", *ts("agent.mjs"), cwd=tmp_path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "answered 1" in proc.stderr and "Traceback" not in proc.stderr


def test_prompt_v2_json_receipt_then_updates(tmp_path: Path) -> None:
    import json

    proc = run("--protocol", "2", "--json", "hello", "--", sys.executable, str(SCRIPT), "normal", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[0]["receipt"] == {"messageId": "u1"}
    assert [x["update"]["sessionUpdate"] for x in lines[1:-1]] == [
        "user_message", "state_update", "agent_message_chunk", "state_update"]
    assert lines[-1]["stopReason"] == "end_turn"


@pytest.mark.parametrize(("mode", "message"), [
    ("custom-stop", "stop reason '_acme_paused'"),  # an open-enum value: preserved and reported
    ("bad-stop", "invalid update"),  # a malformed idle: one clear line naming where
])
def test_prompt_v2_stop_reasons(tmp_path: Path, mode: str, message: str) -> None:
    proc = run("--protocol", "2", "hello", "--", sys.executable, str(SCRIPT), mode, cwd=tmp_path)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert message in last and "Traceback" not in proc.stderr
    if mode == "bad-stop":
        assert "$.update" in last
