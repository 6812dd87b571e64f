"""`acplink record --redact`: a real demo-agent session (a run, a read and a write of a file
holding a secret) leaves no trace of the secret, and keeps the structure, ids and sizes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from acplink import PermissionPolicy, connect
from acplink.tools.redact import redact_message
from acplink.tools.trace import read_trace

ACPLINK = [sys.executable, "-m", "acplink.cli.main"]
SECRET = "tangerine-7391-zebra"  # in the file only: never in a prompt, a command line or a title
SIZE = f"[redacted: {len(SECRET) + 1} bytes]"  # the file's content, with its newline


async def _session(cwd: Path, trace: Path) -> list[str]:
    replies = []
    agent = [*ACPLINK, "record", "--redact", "--out", str(trace), "--", sys.executable, "-m", "acplink.demo"]
    async with connect(agent, cwd=cwd, fs=True, terminal=True, permission=PermissionPolicy.allow_all()) as client:
        session = await client.new_session(str(cwd))
        for text in ("run cat notes.txt", "read notes.txt", "write notes.txt replaced"):
            turn = session.prompt(text)
            reply = ""
            async for update in turn:
                content = getattr(update, "content", None)
                if type(update).__name__ == "AgentMessageChunk" and hasattr(content, "text"):
                    reply += content.text
                for item in content if isinstance(content, list) else ():  # (tool call content)
                    reply += getattr(getattr(item, "content", None), "text", "")
            assert (await turn).stop_reason == "end_turn"
            replies.append(reply)
    return replies


def _messages(trace: Path) -> list[dict[str, Any]]:
    return [r["msg"] for r in read_trace(trace) if r.get("type") == "message"]


def _tool_updates(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m["params"]["update"] for m in msgs if m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] in ("tool_call", "tool_call_update")]


def test_a_redacted_session_holds_no_file_content_or_terminal_output(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text(SECRET + "\n")
    trace = tmp_path / "trace.jsonl"
    replies = asyncio.run(asyncio.wait_for(_session(tmp_path, trace), 120))
    assert SECRET in replies[1]  # the agent did see it (and showed the file in its tool call)...
    assert (tmp_path / "notes.txt").read_text() == "replaced\n"
    raw = trace.read_bytes()
    assert SECRET.encode() not in raw  # ...but the trace has it nowhere
    assert b"tangerine" not in raw and b"zebra" not in raw

    msgs = _messages(trace)
    methods = {m.get("method") for m in msgs}
    assert {"terminal/create", "terminal/output", "fs/read_text_file", "fs/write_text_file"} <= methods
    # what is kept: the structure, ids, kinds, statuses, titles and paths; sizes instead of text
    updates = _tool_updates(msgs)
    titles = {u.get("title") for u in updates}
    assert {"Run cat notes.txt", "Read notes.txt", "Write notes.txt"} <= titles
    assert all(u["toolCallId"].startswith("call_") for u in updates)
    diff = next(c for u in updates for c in u.get("content") or [] if c["type"] == "diff")
    assert diff["path"] == str(tmp_path / "notes.txt") and diff["oldText"] == SIZE
    raw_outputs = [u["rawOutput"] for u in updates if "rawOutput" in u]
    assert raw_outputs and raw_outputs[0]["output"] == SIZE and raw_outputs[0]["truncated"] is False
    read_blocks = [c["content"] for u in updates for c in u.get("content") or [] if c["type"] == "content"]
    assert {"type": "text", "text": SIZE} in read_blocks
    create = next(m for m in msgs if m.get("method") == "terminal/create")
    assert create["params"]["command"] == "cat" and create["params"]["args"] == ["[redacted: 9 bytes]"]


def test_redaction_rules() -> None:
    msg = {"jsonrpc": "2.0", "id": "r1", "method": "_vendor/x", "params": {
        "sessionId": "s", "path": "/a", "note": "free text", "count": 3, "flag": True,
        "rawInput": {"path": "/in/raw", "id": "x"}, "_meta": {"title": "t"},
        "list": ["a", {"title": "kept"}]}}
    red = redact_message(msg)
    p = red["params"]
    assert (red["id"], red["method"], p["sessionId"], p["path"], p["count"], p["flag"]) == \
        ("r1", "_vendor/x", "s", "/a", 3, True)
    assert p["note"] == "[redacted: 9 bytes]" and p["list"] == ["[redacted: 1 bytes]", {"title": "kept"}]
    # inside free-form parts no key is kept
    assert p["rawInput"] == {"path": "[redacted: 7 bytes]", "id": "[redacted: 1 bytes]"}
    assert p["_meta"] == {"title": "[redacted: 1 bytes]"}
    err = {"jsonrpc": "2.0", "id": 4, "error": {"code": -32603, "message": "boom", "data": {"detail": "x"}}}
    assert redact_message(err)["error"] == {"code": -32603, "message": "boom", "data": {"detail": "[redacted: 1 bytes]"}}
    answer = {"jsonrpc": "2.0", "id": 5, "result": {"action": "accept", "content": {"title": "my answer"}}}
    assert redact_message(answer, "elicitation/create")["result"] == {
        "action": "accept", "content": {"title": "[redacted: 9 bytes]"}}


def test_the_docs_list_exactly_what_is_kept() -> None:
    import re

    from acplink.tools.redact import REDACT_ALL, REDACT_KEEP

    doc = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text()
    kept = doc[doc.index("* the strings of these keys"):].split("\n", 1)[0]
    assert set(re.findall(r"`([^`]+)`", kept)) == REDACT_KEEP
    opaque = doc[doc.index("* nothing inside"):].split("\n\n", 1)[0]
    assert set(re.findall(r"`([^`]+)`", opaque)) - {"elicitation/create", "content"} == REDACT_ALL
