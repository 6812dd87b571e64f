"""``acplink record`` / ``inspect`` on ACP v2 (draft) traffic: the v2 schema once initialize
agreed on 2, turns that end at the idle state_update, upserted tool calls, v2 findings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from acplink.tools.analysis import analyze
from acplink.tools.inspect import load_timeline
from acplink.tools.trace import TraceWriter

HERE = Path(__file__).resolve().parent
SCRIPT = HERE.parent / "client" / "v2_script_agent.py"


def _records(*messages: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    writer = TraceWriter(None, listeners=[seen.append])
    for direction, msg in messages:
        writer.message(direction, orjson.dumps(msg))
    writer.close()
    return seen


def _upd(sid: str, **update: Any) -> tuple[str, dict[str, Any]]:
    return ("a2c", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})


def _v2_session(*rest: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return _records(
        ("c2a", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": {}}}),
        ("a2c", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 2, "info": {"name": "a", "version": "2"}}}),
        ("c2a", {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w"}}),
        ("a2c", {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s"}}),
        ("c2a", {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                 "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}}),
        ("a2c", {"jsonrpc": "2.0", "id": 3, "result": {"messageId": "u1"}}),
        _upd("s", sessionUpdate="user_message", messageId="u1", content=[{"type": "text", "text": "go"}]),
        _upd("s", sessionUpdate="state_update", state="running"),
        _upd("s", sessionUpdate="tool_call_update", toolCallId="c1", title="Edit", kind="edit", status="pending"),
        _upd("s", sessionUpdate="agent_message_chunk", messageId="a1", content={"type": "text", "text": "done"}),
        _upd("s", sessionUpdate="tool_call_update", toolCallId="c1", status="completed"),
        _upd("s", sessionUpdate="state_update", state="idle", stopReason="end_turn"),
        *rest,
    )


def test_v2_trace_is_checked_against_the_v2_schema_and_turns_end_at_idle() -> None:
    records = _v2_session()
    assert not any(r.get("violations") for r in records)  # the v1 schema would flag most of them
    t = analyze(records)
    assert t.findings == []
    assert t.protocol_version == 2 and t.agent_info == {"name": "a", "version": "2"}
    assert t.client_info == {"name": "c", "version": "1"}
    (turn,) = t.sessions["s"].turns
    assert (turn.stop_reason, turn.reply, turn.tool_calls) == ("end_turn", "done", ["c1"])
    assert t.tool_calls["c1"].statuses == ["pending", "completed"]


def test_an_agent_that_echoed_2_with_a_v1_answer_is_read_as_v1() -> None:
    # (agents on the official Python SDK 0.12.1 answer the version asked for; acplink's "auto"
    # client goes on with v1, and so must the trace: its checks, its turns, the names)
    records = _records(
        ("c2a", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"}, "clientCapabilities": {}}}),
        ("a2c", {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 2,
                                                        "agentInfo": {"name": "echo", "version": "0.12.1"}}}),
        ("c2a", {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/w", "mcpServers": []}}),
        ("a2c", {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s"}}),
        ("c2a", {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                 "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}}),
        _upd("s", sessionUpdate="agent_message_chunk", content={"type": "text", "text": "go"}),
        ("a2c", {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}),
    )
    assert [r.get("violations") for r in records if r.get("violations")] == []  # (v2 would flag the chunk)
    t = analyze(records)
    assert t.findings == [] and t.protocol_version == 1
    assert (t.client_info, t.agent_info) == ({"name": "c", "version": "1"}, {"name": "echo", "version": "0.12.1"})
    (turn,) = t.sessions["s"].turns
    assert (turn.stop_reason, turn.reply) == ("end_turn", "go")


def test_v2_findings_update_after_close_and_schema() -> None:
    records = _v2_session(
        ("c2a", {"jsonrpc": "2.0", "id": 4, "method": "session/close", "params": {"sessionId": "s"}}),
        ("a2c", {"jsonrpc": "2.0", "id": 4, "result": {}}),
        _upd("s", sessionUpdate="agent_message_chunk", messageId="a2", content={"type": "text", "text": "late"}),
        ("c2a", {"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
                 "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "again"}]}}),
        ("a2c", {"jsonrpc": "2.0", "id": 5, "result": {}}),
    )
    findings = analyze(records).findings
    assert [f.code for f in findings].count("update-after-close") == 1
    # a receipt without its messageId (required on v2; v1's PromptResponse would want a stopReason)
    assert any(f.code == "schema" and "messageId" in f.message for f in findings), findings


def test_record_and_inspect_a_v2_session(tmp_path: Path) -> None:
    trace = tmp_path / "v2.jsonl"
    acplink = [sys.executable, "-m", "acplink"]
    proc = subprocess.run([*acplink, "prompt", "--protocol", "2", "--cwd", str(tmp_path), "hello", "--",
                           *acplink, "record", "-o", str(trace), "--", sys.executable, str(SCRIPT), "normal"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hi\n"
    t = load_timeline(trace)
    assert t.protocol_version == 2 and t.findings == []
    (sess,) = t.sessions.values()
    assert [turn.stop_reason for turn in sess.turns] == ["end_turn"]
    shown = subprocess.run([*acplink, "inspect", "--text", str(trace)], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "protocol version: 2" in shown.stdout and "end_turn" in shown.stdout
    assert "no findings" in shown.stdout


@pytest.mark.parametrize("mode", ["--redact", "--no-validate"])
def test_record_the_demo_agent_on_v2_gives_no_false_findings(tmp_path: Path, mode: str) -> None:
    # --redact: the v2 states and ids stay readable (a redacted "idle" would leave the turn
    # unfinished); --no-validate: inspect checks the records itself, the initialize answer that
    # agrees on v2 against the v2 schema (not v1's, which has no info/capabilities/v2 auth methods)
    trace = tmp_path / "v2.jsonl"
    acplink = [sys.executable, "-m", "acplink"]
    env = {**os.environ, "ACPLINK_DEMO_STORE": str(tmp_path / "store")}
    proc = subprocess.run([*acplink, "prompt", "--protocol", "2", "--cwd", str(tmp_path), "hello", "--",
                           *acplink, "record", mode, "-o", str(trace), "--", *acplink, "demo-agent"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    t = load_timeline(trace)
    assert t.protocol_version == 2
    assert t.findings == [], t.findings
    (sess,) = t.sessions.values()
    assert [turn.stop_reason for turn in sess.turns] == ["end_turn"]
