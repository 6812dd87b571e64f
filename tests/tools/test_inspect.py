"""`acplink inspect`: the timeline, and the findings planted in a trace."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink.tools.inspect import inspect_trace

ACPLINK = [sys.executable, "-m", "acplink.cli.main"]


def _planted() -> list[dict[str, Any]]:
    """A trace with one instance of each violation, between normal traffic."""
    out: list[dict[str, Any]] = [{"type": "header", "format": "acplink-trace", "version": 1, "mono": 100.0,
                                  "wall": 1.7e9, "command": ["fake-agent"]}]
    t = [100.0]

    def msg(d: str, m: Any) -> None:
        t[0] += 0.01
        out.append({"type": "message", "seq": len(out), "dir": d, "mono": t[0], "wall": 1.7e9 + t[0], "msg": m})

    def req(d: str, rid: Any, method: str, params: Any) -> None:
        msg(d, {"jsonrpc": "2.0", "id": rid, "method": method, "params": params})

    def res(d: str, rid: Any, result: Any) -> None:
        msg(d, {"jsonrpc": "2.0", "id": rid, "result": result})

    def upd(sid: str, update: dict[str, Any]) -> None:
        msg("a2c", {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}})

    def chunk(sid: str, text: str) -> None:
        upd(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})

    req("c2a", 1, "initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False}},
                                 "clientInfo": {"name": "ed", "version": "1"}})
    res("a2c", 1, {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": {"name": "fake", "version": "9"}})
    req("c2a", 2, "session/new", {"cwd": "/w", "mcpServers": []})
    res("a2c", 2, {"sessionId": "s1"})
    # turn 1: a tool call with a permission request; a late update after the response
    req("c2a", 3, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]})
    chunk("s1", "working")
    upd("s1", {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit a.py", "kind": "edit",
               "status": "pending"})
    req("a2c", 100, "session/request_permission", {"sessionId": "s1", "toolCall": {"toolCallId": "t1"}, "options": [
        {"optionId": "ok", "name": "Allow", "kind": "allow_once"}, {"optionId": "no", "name": "No", "kind": "reject_once"}]})
    res("c2a", 100, {"outcome": {"outcome": "selected", "optionId": "ok"}})
    upd("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"})
    upd("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    res("a2c", 3, {"stopReason": "end_turn"})
    chunk("s1", "one more thing")  # PLANTED: update after the prompt response
    # turn 2: unknown tool call id, fs without the capability, an invalid stop reason
    req("c2a", 4, "session/prompt", {"sessionId": "s1", "prompt": [{"type": "text", "text": "again"}]})
    upd("s1", {"sessionUpdate": "tool_call_update", "toolCallId": "t9", "status": "completed"})  # PLANTED
    req("a2c", 101, "fs/read_text_file", {"sessionId": "s1", "path": "/etc/passwd"})  # PLANTED: no capability
    msg("c2a", {"jsonrpc": "2.0", "id": 101, "error": {"code": -32601, "message": "Method not found"}})
    chunk("ghost", "boo")  # PLANTED: unknown session
    res("a2c", 4, {"stopReason": "finished"})  # PLANTED: schema violation
    res("a2c", 999, {})  # PLANTED: response to an unknown request
    req("c2a", 5, "session/load", {"sessionId": "s1", "cwd": "/w", "mcpServers": []})  # PLANTED: not advertised
    msg("a2c", {"jsonrpc": "2.0", "id": 5, "error": {"code": -32601, "message": "Method not found"}})
    t[0] += 0.01
    out.append({"type": "message", "seq": len(out), "dir": "a2c", "mono": t[0], "wall": 1.7e9, "raw": "oops {"})
    out.append({"type": "exit", "code": 0, "mono": t[0] + 0.1, "wall": 1.7e9})
    return out


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    path = tmp_path / "planted.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _planted()))
    return path


def test_inspect_finds_every_planted_violation(planted: Path) -> None:
    data = inspect_trace(planted, as_json=True)
    assert data is not None
    found = {(f["code"], f["seq"]) for f in data["findings"]}
    codes = [f["code"] for f in data["findings"]]
    assert codes.count("update-after-response") == 1
    assert codes.count("tool-update-unknown-id") == 1
    assert codes.count("update-unknown-session") == 1
    assert codes.count("response-unknown-id") == 1
    assert codes.count("invalid-json") == 1
    caps = [f for f in data["findings"] if f["code"] == "capability"]
    assert {f["dir"] for f in caps} == {"a2c", "c2a"}  # fs by the agent, session/load by the client
    assert any("stopReason" in f["message"] for f in data["findings"] if f["code"] == "schema")
    assert len(found) == len(data["findings"])
    # nothing else is flagged
    assert set(codes) == {"update-after-response", "tool-update-unknown-id", "update-unknown-session",
                          "response-unknown-id", "invalid-json", "capability", "schema"}


def test_inspect_timeline(planted: Path) -> None:
    data = inspect_trace(planted, as_json=True)
    assert data is not None
    (sess,) = data["sessions"]
    assert sess["id"] == "s1" and len(sess["turns"]) == 2
    first = sess["turns"][0]
    assert first["stop_reason"] == "end_turn" and first["duration"] == pytest.approx(0.07)
    assert first["updates"] == {"agent_message_chunk": 1, "tool_call": 1, "tool_call_update": 2}
    (tool,) = data["tool_calls"]
    assert tool["statuses"] == ["pending", "in_progress", "completed"]
    (perm,) = data["permissions"]
    assert perm["answer"] == "ok" and perm["options"] == ["ok", "no"]
    assert {e["method"] for e in data["errors"]} == {"fs/read_text_file", "session/load"}
    assert data["agent_info"]["name"] == "fake" and data["exit_code"] == 0


def test_inspect_cli_text_and_json(planted: Path, tmp_path: Path) -> None:
    out = subprocess.run([*ACPLINK, "inspect", str(planted)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for text in ("session s1", "turn 1", "tool call t1 [edit] Edit a.py: pending → in_progress → completed",
                 "permission requests", "→ ok", "schema violations", "protocol-order violations",
                 "update-after-response", "errors"):
        assert text in out.stdout, (text, out.stdout)
    js = subprocess.run([*ACPLINK, "inspect", "--json", str(planted)], capture_output=True, text=True, timeout=60)
    assert json.loads(js.stdout)["findings"]
    missing = subprocess.run([*ACPLINK, "inspect", str(tmp_path / "nope.jsonl")], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


def test_inspect_shows_a_trace_whose_last_line_was_cut(planted: Path, tmp_path: Path) -> None:
    data = planted.read_bytes()
    cut = tmp_path / "cut.jsonl"
    cut.write_bytes(data[:data.rindex(b"\n", 0, len(data) - 1) + 30])  # the exit record, cut after 29 bytes
    lines = data.count(b"\n")
    out = subprocess.run([*ACPLINK, "inspect", str(cut)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert f"the last line (line {lines}, 29 bytes) is cut off" in out.stdout
    assert "turn 2" in out.stdout and "update-after-response" in out.stdout  # the rest is all there
    assert "agent exit code" not in out.stdout  # (it was on the cut line)
    js = subprocess.run([*ACPLINK, "inspect", "--json", str(cut)], capture_output=True, text=True, timeout=60)
    assert js.returncode == 0 and json.loads(js.stdout)["cut"] == {"line": lines, "size": 29}
    assert js.stderr.startswith("acplink: warning:") and "cut off" in js.stderr
    # a bad line that is not the last is an error, not a cut
    middle = tmp_path / "middle.jsonl"
    middle.write_bytes(data[:40] + b"\n" + data)
    bad = subprocess.run([*ACPLINK, "inspect", str(middle)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr == f"acplink: error: {middle}:1: not a JSON line\n"


def test_inspect_text_shows_prompts_and_replies_in_order(planted: Path) -> None:
    import io

    from rich.console import Console

    def render(show_text: bool) -> str:
        buf = io.StringIO()
        inspect_trace(planted, show_text=show_text, console=Console(file=buf, width=100, color_system=None))
        return buf.getvalue()

    plain, text = render(False), render(True)
    assert "prompt:" not in plain and "working" not in plain
    turn1 = text[text.index("turn 1"):text.index("turn 2")]
    order = [turn1.index(s) for s in ("prompt:", "hi", "reply:", "working", "tool call t1")]
    assert order == sorted(order), turn1
    turn2 = text[text.index("turn 2"):]
    assert "again" in turn2 and "boo" not in text  # (an update of an unknown session is no reply)
    data = inspect_trace(planted, as_json=True)
    assert data is not None
    first = data["sessions"][0]["turns"][0]
    assert (first["prompt"], first["reply"]) == ("hi", "working")
    assert first["events"] == [["prompt", "hi"], ["reply", "working"], ["tool", "t1"]]
