"""The recorder API: RecordingTransport around any transport; validation and redaction."""

from __future__ import annotations

import sys
from pathlib import Path

from acplink.connection import ClientSideConnection, Router
from acplink.tools.record import recording_transport
from acplink.tools.redact import redact_message
from acplink.tools.trace import read_trace
from acplink.tools.validate import validate_message
from acplink.transports import SubprocessTransport


async def test_recording_transport_traces_a_real_session(tmp_path: Path) -> None:
    trace = tmp_path / "lib.jsonl"
    seen: list[dict] = []
    inner = SubprocessTransport([sys.executable, "-m", "acplink.demo"], stderr="capture",
                                env={"ACPLINK_DEMO_STORE": str(tmp_path / "store")})
    transport = recording_transport(inner, trace, listeners=[seen.append])
    conn = ClientSideConnection(transport, Router())
    async with conn:
        await conn.initialize(protocol_version=1, client_capabilities={})
        new = await conn.session_new(cwd=str(tmp_path), mcp_servers=[])
        result = await conn.session_prompt(session_id=new.session_id, prompt=[{"type": "text", "text": "hi"}])
        assert result.stop_reason == "end_turn"
    records = read_trace(trace)
    assert records[0]["type"] == "header" and records[0]["side"] == "client"
    assert records[-1]["type"] == "exit" and records[-1]["code"] == 0
    msgs = [r for r in records if r["type"] == "message"]
    assert [r["seq"] for r in msgs] == list(range(1, len(msgs) + 1))
    assert [(m["dir"], m["kind"], m.get("method")) for m in msgs[:2]] == [
        ("c2a", "request", "initialize"), ("a2c", "response", "initialize")]
    assert any(m.get("method") == "session/update" and m["dir"] == "a2c" for m in msgs)
    assert not any("violations" in m for m in msgs)
    assert [r for r in seen if r["type"] == "message"] == msgs


def test_validate_message_marks_violations() -> None:
    ok = {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}
    assert validate_message(ok, "session/prompt") == []
    bad = validate_message({"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "done"}}, "session/prompt")
    assert bad and bad[0]["path"] == "$.result.stopReason"
    assert validate_message([1, 2])[0]["message"].startswith("a message must be a JSON object")
    assert validate_message({"jsonrpc": "2.0", "method": "no/such", "id": 1})[0]["path"] == "$.method"
    assert validate_message({"jsonrpc": "2.0", "method": "_vendor/x", "id": 1}) == []
    upd = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {}}}
    assert validate_message(upd)[0]["path"].startswith("$.params.update")
    assert validate_message({"jsonrpc": "1.0", "id": 1, "result": {}})[0]["path"] == "$.jsonrpc"


def test_redaction_keeps_structure_and_sizes() -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s", "prompt": [
        {"type": "text", "text": "visible"},
        {"type": "resource", "resource": {"uri": "file:///a", "text": "secret body"}}]}}
    red = redact_message(msg)
    assert red["params"]["prompt"][0] == {"type": "text", "text": "[redacted: 7 bytes]"}  # texts may quote files
    assert red["params"]["sessionId"] == "s" and red["params"]["prompt"][1]["resource"]["uri"] == "file:///a"
    assert red["params"]["prompt"][1]["resource"]["text"] == "[redacted: 11 bytes]"
    assert msg["params"]["prompt"][1]["resource"]["text"] == "secret body"  # the original is untouched
    new = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": [
        {"name": "m", "command": "x", "args": [], "env": [{"name": "KEY", "value": "abc"}]}]}}
    assert redact_message(new)["params"]["mcpServers"][0]["env"] == [{"name": "KEY", "value": "[redacted: 3 bytes]"}]
    out = {"jsonrpc": "2.0", "id": 3, "result": {"output": "ls output", "truncated": False}}
    assert redact_message(out, "terminal/output")["result"]["output"] == "[redacted: 9 bytes]"
    diff = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {
        "sessionUpdate": "tool_call", "toolCallId": "t", "title": "w",
        "content": [{"type": "diff", "path": "/a", "oldText": "old", "newText": "new!"}]}}}
    red = redact_message(diff)["params"]["update"]["content"][0]
    assert (red["oldText"], red["newText"], red["path"]) == ("[redacted: 3 bytes]", "[redacted: 4 bytes]", "/a")
