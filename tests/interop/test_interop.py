"""Interop with the official ACP SDKs (Python 0.12.1, TypeScript 2.4.0), over real pipes.

Two directions, each parametrized over both official SDKs:

* acplink's client (``connect``) drives the official agents (``peers/py_agent.py``,
  ``js/agent.mjs``);
* the official clients (``peers/py_client.py``, ``js/client.mjs``) drive acplink's agent
  (``acplink_agent.py``), and we read their JSON-lines event logs.

The behaviours of the prompts ``hello``, ``full``, ``wait`` and ``fail`` are in README.md.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from peerenv import ACPLINK_AGENT, AGENT_NAMES, agent_cmd, client_cmd, peer_params

from acplink import InternalError, PermissionPolicy, connect, schema
from acplink.schema import RequestPermissionRequest

pytestmark = pytest.mark.parametrize("peer", peer_params())

# -- acplink client -> official agent ---------------------------------------------------------------


def _texts(updates: list[Any]) -> list[str]:
    return [u.content.text for u in updates if isinstance(u, schema.AgentMessageChunk)]


async def test_initialize_and_hello(peer: str, tmp_path: Path) -> None:
    async with connect(agent_cmd(peer)) as client:
        assert client.agent_info is not None and client.agent_info.name == AGENT_NAMES[peer]
        assert client.conn.protocol_version == 1
        caps = client.agent_capabilities
        assert caps is not None and not caps.load_session
        session = await client.new_session(cwd=tmp_path)
        assert session.session_id.startswith("py-" if peer == "python-sdk" else "ts-")
        turn = session.prompt("hello")
        updates = [u async for u in turn]
        assert _texts(updates) == ["Hello, ", "world"]
        assert turn.stop_reason == "end_turn"
        assert session.state.agent_text == "Hello, world"
        # echo, on the same session
        assert (await session.prompt("echo me")).stop_reason == "end_turn"
        assert session.state.messages[-1].text == "echo me"


async def test_full_turn_allowed(peer: str, tmp_path: Path) -> None:
    asked: list[RequestPermissionRequest] = []

    async def ask(req: RequestPermissionRequest) -> str:
        asked.append(req)
        return next(o.option_id for o in req.options if o.kind == "allow_once")

    async with connect(agent_cmd(peer), permission=PermissionPolicy(default="ask", ask=ask)) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("full")
        updates = [u async for u in turn]
    assert turn.stop_reason == "end_turn"
    kinds = [u.session_update for u in updates]
    assert kinds[:4] == ["agent_message_chunk", "agent_thought_chunk", "plan", "tool_call"]
    assert kinds[-1] == "tool_call_update"
    # permission: asked once, for t1, with the two options the peer offers
    assert len(asked) == 1
    assert asked[0].tool_call.tool_call_id == "t1"
    assert [(o.option_id, o.kind) for o in asked[0].options] == [("allow", "allow_once"), ("reject", "reject_once")]
    # fs write then read: the file is really on disk, and the agent read it back through us
    assert (tmp_path / "interop.txt").read_text() == "written by peer\n"
    # terminal create / wait / output / release: `echo term-ok` really ran
    assert _texts(updates) == ["start", "read:written by peer\n", "term:term-ok:0"]
    state = session.state
    assert state.thoughts[0].text == "thinking"
    assert state.plan is not None
    assert [(e.content, e.priority, e.status) for e in state.plan.entries] == [
        ("step one", "high", "pending"), ("step two", "low", "pending")]
    t1 = state.tool_calls["t1"]
    assert (t1.title, t1.kind, t1.status) == ("Write file", "edit", "completed")


async def test_full_turn_denied(peer: str, tmp_path: Path) -> None:
    async with connect(agent_cmd(peer), permission=PermissionPolicy.deny_all()) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("full")
        updates = [u async for u in turn]
    assert turn.stop_reason == "end_turn"
    assert _texts(updates) == ["start", "denied"]
    assert session.state.tool_calls["t1"].status == "failed"
    assert not (tmp_path / "interop.txt").exists()


async def test_cancel(peer: str, tmp_path: Path) -> None:
    async with connect(agent_cmd(peer)) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("wait")
        async for update in turn:
            if isinstance(update, schema.AgentMessageChunk) and update.content.text == "waiting":
                await session.cancel()
        assert turn.stop_reason == "cancelled"
        # the session is still usable
        assert (await session.prompt("hello")).stop_reason == "end_turn"


async def test_error(peer: str, tmp_path: Path) -> None:
    async with connect(agent_cmd(peer)) as client:
        session = await client.new_session(cwd=tmp_path)
        with pytest.raises(InternalError) as info:
            await session.prompt("fail")
        assert info.value.code == -32603
        assert info.value.message == "Internal error: peer failure"
        # the connection and the session survive the error
        assert (await session.prompt("again")).stop_reason == "end_turn"
        assert session.state.messages[-1].text == "again"


# -- official client -> acplink agent ---------------------------------------------------------------


def _drive(peer: str, cwd: Path, *prompts: str, deny: bool = False, cancel_after: float | None = None) -> list[dict]:
    cmd = [*client_cmd(peer), "--cwd", str(cwd), "--timeout", "30"]
    for p in prompts:
        cmd += ["--prompt", p]
    if deny:
        cmd.append("--deny")
    if cancel_after is not None:
        cmd += ["--cancel-after", str(cancel_after)]
    proc = subprocess.run([*cmd, "--", *ACPLINK_AGENT], capture_output=True, text=True, timeout=60)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert not [e for e in events if e["event"] == "fatal"], events
    return events


def _updates(events: list[dict]) -> list[dict]:
    return [e["update"] for e in events if e["event"] == "update"]


def _chunks(events: list[dict]) -> list[str]:
    return [u["content"]["text"] for u in _updates(events) if u["sessionUpdate"] == "agent_message_chunk"]


def test_official_client_hello_error_echo(peer: str, tmp_path: Path) -> None:
    # one session/prompt per --prompt, all on one session; an error does not end the session
    events = _drive(peer, tmp_path, "hello", "fail", "echo this")
    init = events[0]
    assert init["event"] == "initialize"
    assert init["result"]["protocolVersion"] == 1
    assert init["result"]["agentInfo"]["name"] == "acplink-interop-agent"
    assert init["result"]["agentCapabilities"]["loadSession"] is False
    assert events[1]["event"] == "session" and events[1]["sessionId"]
    assert len([e for e in events if e["event"] == "session"]) == 1
    assert _chunks(events) == ["Hello, ", "world", "echo this"]
    ends = [e for e in events if e["event"] in ("stop", "error")]
    assert ends == [
        {"event": "stop", "stopReason": "end_turn"},
        {"event": "error", "code": -32603, "message": "Internal error: peer failure"},
        {"event": "stop", "stopReason": "end_turn"},
    ]


def test_official_client_full_allowed(peer: str, tmp_path: Path) -> None:
    events = _drive(peer, tmp_path, "full")
    names = [e["event"] for e in events]
    assert names.count("permission") == 1
    perm = next(e for e in events if e["event"] == "permission")
    assert perm["options"] == ["allow", "reject"] and perm["answer"] == "allow" and perm["optionId"] == "allow"
    path = str(tmp_path.resolve() / "interop.txt")
    assert {"event": "fs_write", "path": path} in events
    assert {"event": "fs_read", "path": path} in events
    assert names.index("fs_write") < names.index("fs_read") < names.index("terminal")
    assert {"event": "terminal", "command": "echo", "args": ["term-ok"]} in events
    assert (tmp_path / "interop.txt").read_text() == "written by peer\n"
    updates = _updates(events)
    assert [u["sessionUpdate"] for u in updates[:4]] == ["agent_message_chunk", "agent_thought_chunk", "plan",
                                                         "tool_call"]
    assert updates[1]["content"]["text"] == "thinking"
    assert [(e["content"], e["priority"], e["status"]) for e in updates[2]["entries"]] == [
        ("step one", "high", "pending"), ("step two", "low", "pending")]
    assert (updates[3]["toolCallId"], updates[3]["title"], updates[3]["kind"]) == ("t1", "Write file", "edit")
    assert _chunks(events) == ["start", "read:written by peer\n", "term:term-ok:0"]
    assert updates[-1]["sessionUpdate"] == "tool_call_update"
    assert (updates[-1]["toolCallId"], updates[-1]["status"]) == ("t1", "completed")
    assert events[-1] == {"event": "stop", "stopReason": "end_turn"}


def test_official_client_full_denied(peer: str, tmp_path: Path) -> None:
    events = _drive(peer, tmp_path, "full", deny=True)
    perm = next(e for e in events if e["event"] == "permission")
    assert perm["answer"] == "reject" and perm["optionId"] == "reject"
    assert not [e for e in events if e["event"] in ("fs_write", "fs_read", "terminal")]
    assert not (tmp_path / "interop.txt").exists()
    assert _chunks(events) == ["start", "denied"]
    last = _updates(events)[-1]
    assert (last["sessionUpdate"], last["toolCallId"], last["status"]) == ("tool_call_update", "t1", "failed")
    assert events[-1] == {"event": "stop", "stopReason": "end_turn"}


def test_official_client_cancel(peer: str, tmp_path: Path) -> None:
    events = _drive(peer, tmp_path, "wait", cancel_after=0.3)
    assert _chunks(events) == ["waiting"]
    assert events[-1] == {"event": "stop", "stopReason": "cancelled"}
