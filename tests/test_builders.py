"""Every builder produces a value whose wire JSON parses back (strictly) to the same value."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from acplink import builders as b
from acplink.schema import (
    AvailableCommand,
    ContentBlock,
    PermissionOption,
    PlanEntry,
    SessionNotification,
    SessionUpdate,
    ToolCallContent,
    ToolCallLocation,
    dump,
    dump_json,
    parse,
)


def roundtrip(tp: Any, value: Any) -> dict[str, Any]:
    wire: dict[str, Any] = orjson.loads(dump_json(value))
    assert wire == dump(value)
    again = parse(tp, wire, strict=True)
    assert dump(again) == wire
    assert type(again) is type(value)
    return wire


CONTENT = [
    (b.text("hi"), {"type": "text", "text": "hi"}),
    (b.image("aGk=", mime_type="image/png"), {"type": "image", "data": "aGk=", "mimeType": "image/png"}),
    (b.image(b"hi", mime_type="image/png", uri="file:///a.png"),
     {"type": "image", "data": "aGk=", "mimeType": "image/png", "uri": "file:///a.png"}),
    (b.audio(b"\x00\x01", mime_type="audio/wav"), {"type": "audio", "data": "AAE=", "mimeType": "audio/wav"}),
    (b.resource_link("file:///x.py", name="x.py"), {"type": "resource_link", "uri": "file:///x.py", "name": "x.py"}),
    (b.resource_link("file:///x.py", name="x.py", mime_type="text/x-python", title="X", description="d", size=3),
     {"type": "resource_link", "uri": "file:///x.py", "name": "x.py", "mimeType": "text/x-python",
      "title": "X", "description": "d", "size": 3}),
    (b.embedded_text("file:///x.py", text="print()", mime_type="text/x-python"),
     {"type": "resource", "resource": {"uri": "file:///x.py", "text": "print()", "mimeType": "text/x-python"}}),
    (b.embedded_text("file:///x.txt", text="t"), {"type": "resource", "resource": {"uri": "file:///x.txt", "text": "t"}}),
    (b.embedded_blob("file:///x.bin", blob=b"\xff", mime_type="application/octet-stream"),
     {"type": "resource", "resource": {"uri": "file:///x.bin", "blob": "/w==", "mimeType": "application/octet-stream"}}),
]


@pytest.mark.parametrize(("value", "expected"), CONTENT)
def test_content_blocks(value: Any, expected: dict[str, Any]) -> None:
    assert roundtrip(ContentBlock, value) == expected


UPDATES = [
    (b.agent_text("hello"), {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello"}}),
    (b.agent_text("hello", message_id="m1"),
     {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello"}, "messageId": "m1"}),
    (b.user_text("q"), {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "q"}}),
    (b.thought("hmm"), {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
    (b.tool_call("c1", title="Read file"), {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read file",
                                      "status": "pending"}),
    (b.tool_call("c1", title="Edit", kind="edit", status="in_progress", name="edit_file",
                 content=["note", b.diff("/p/a.py", old_text="old", new_text="new"), b.terminal_content("t1"), b.image(b"x", mime_type="image/png")],
                 locations=["/p/a.py", b.location("/p/b.py", line=3)], raw_input={"path": "/p/a.py"}, raw_output=[1]),
     {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Edit", "kind": "edit", "status": "in_progress",
      "name": "edit_file",
      "content": [{"type": "content", "content": {"type": "text", "text": "note"}},
                  {"type": "diff", "path": "/p/a.py", "newText": "new", "oldText": "old"},
                  {"type": "terminal", "terminalId": "t1"},
                  {"type": "content", "content": {"type": "image", "data": "eA==", "mimeType": "image/png"}}],
      "locations": [{"path": "/p/a.py"}, {"path": "/p/b.py", "line": 3}],
      "rawInput": {"path": "/p/a.py"}, "rawOutput": [1]}),
    (b.tool_call_update("c1"), {"sessionUpdate": "tool_call_update", "toolCallId": "c1"}),
    (b.tool_call_update("c1", status="completed", title="Done", kind="read", content=[b.tool_content("ok")],
                        locations=["/x"], raw_output={"ok": True}),
     {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "title": "Done",
      "kind": "read", "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}],
      "locations": [{"path": "/x"}], "rawOutput": {"ok": True}}),
    (b.plan([b.plan_entry("a"), "b", b.plan_entry("c", priority="high", status="completed")]),
     {"sessionUpdate": "plan", "entries": [
         {"content": "a", "priority": "medium", "status": "pending"},
         {"content": "b", "priority": "medium", "status": "pending"},
         {"content": "c", "priority": "high", "status": "completed"}]}),
    (b.available_commands([b.command("web", description="Search the web", hint="query"), b.command("test", description="Run tests")]),
     {"sessionUpdate": "available_commands_update", "availableCommands": [
         {"name": "web", "description": "Search the web", "input": {"hint": "query"}},
         {"name": "test", "description": "Run tests"}]}),
    (b.mode_update("code"), {"sessionUpdate": "current_mode_update", "currentModeId": "code"}),
    (b.session_info(), {"sessionUpdate": "session_info_update"}),
    (b.session_info(title="T", updated_at="2025-01-01T00:00:00Z"),
     {"sessionUpdate": "session_info_update", "title": "T", "updatedAt": "2025-01-01T00:00:00Z"}),
    (b.usage_update(used=10, size=100), {"sessionUpdate": "usage_update", "used": 10, "size": 100}),
    (b.usage_update(used=10, size=100, cost=0.5, currency="EUR"),
     {"sessionUpdate": "usage_update", "used": 10, "size": 100, "cost": {"amount": 0.5, "currency": "EUR"}}),
    (b.notice("Heads up", severity="warning", description="d"),
     {"sessionUpdate": "notice", "title": "Heads up", "severity": "warning", "description": "d"}),
]


@pytest.mark.parametrize(("value", "expected"), UPDATES)
def test_session_updates(value: Any, expected: dict[str, Any]) -> None:
    assert roundtrip(SessionUpdate, value) == expected
    note = parse(SessionNotification, {"sessionId": "s", "update": expected}, strict=True)
    assert dump(note.update) == expected


def test_tool_call_content() -> None:
    assert roundtrip(ToolCallContent, b.diff("/a", new_text="x")) == {"type": "diff", "path": "/a", "newText": "x"}
    assert roundtrip(ToolCallContent, b.terminal_content("t")) == {"type": "terminal", "terminalId": "t"}
    assert roundtrip(ToolCallContent, b.tool_content(b.text("x"))) == {
        "type": "content", "content": {"type": "text", "text": "x"}}


def test_small_values() -> None:
    assert roundtrip(PermissionOption, b.permission_option("ok", name="Allow", kind="allow_once")) == {
        "optionId": "ok", "name": "Allow", "kind": "allow_once"}
    assert roundtrip(PlanEntry, b.plan_entry("x")) == {"content": "x", "priority": "medium", "status": "pending"}
    assert roundtrip(AvailableCommand, b.command("c", description="d")) == {"name": "c", "description": "d"}
    assert roundtrip(ToolCallLocation, b.location("/a", line=1)) == {"path": "/a", "line": 1}


def test_binary_data_is_base64() -> None:
    data = bytes(range(256))
    assert base64.b64decode(b.image(data, mime_type="image/png").data) == data


def test_only_the_subject_is_positional() -> None:
    # two strings in a row (diff's old and new text, a tool call's id and title) are easy to
    # swap unnoticed: every argument but the first is keyword-only
    import inspect

    for name in b.__all__:
        params = inspect.signature(getattr(b, name)).parameters.values()
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        assert len(positional) <= 1, f"builders.{name} takes {positional} by position"


def test_diff_keeps_old_and_new_apart() -> None:
    value = b.diff("/a.py", old_text="before", new_text="after")
    assert (value.old_text, value.new_text) == ("before", "after")
    assert dump(value) == {"type": "diff", "path": "/a.py", "oldText": "before", "newText": "after"}
