"""The schema's leniency rules (lenient by default, off in strict mode), unknown variants, and
bad input: always a ``SchemaValidationError`` naming the type and the JSON path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

import acplink.schema as S
from acplink.errors import AcpError, SchemaValidationError
from acplink.schema import dump, dump_json, parse, parse_json

SID = "s1"


def note(**upd: Any) -> dict[str, Any]:
    return {"sessionId": SID, "update": upd}


def tool_call(**fields: Any) -> dict[str, Any]:
    return note(sessionUpdate="tool_call", toolCallId="c1", title="t", **fields)


def strict_error(tp: Any, data: Any) -> SchemaValidationError:
    with pytest.raises(SchemaValidationError) as info:
        parse(tp, data, strict=True)
    return info.value


def paths(exc: SchemaValidationError) -> list[str]:
    return [e["path"] for e in exc.errors]


# ---------------------------------------------------------------------------------------------
# x-deserialize-default-on-error
# ---------------------------------------------------------------------------------------------


def test_default_on_error_status() -> None:
    wire = note(sessionUpdate="tool_call_update", toolCallId="c1", status="bogus", title="still here")
    n = parse(S.SessionNotification, wire)
    assert isinstance(n.update, S.ToolCallUpdate)
    assert n.update.status is None
    assert n.update.title == "still here"
    exc = strict_error(S.SessionNotification, wire)
    assert exc.type_name == "SessionNotification"
    assert any(p.startswith("$.update") and p.endswith(".status") for p in paths(exc)), paths(exc)


@pytest.mark.parametrize(("field", "bad", "default"), [
    ("kind", 42, None),
    ("title", ["not", "a", "string"], None),
    ("locations", "nope", None),
    ("_meta", "not an object", None),
])
def test_default_on_error_fields(field: str, bad: Any, default: Any) -> None:
    wire = note(sessionUpdate="tool_call_update", toolCallId="c1", **{field: bad})
    upd = parse(S.SessionNotification, wire).update
    attr = "meta" if field == "_meta" else {"kind": "kind", "title": "title", "locations": "locations"}[field]
    assert getattr(upd, attr) == default
    strict_error(S.SessionNotification, wire)


def test_default_on_error_keeps_schema_default() -> None:
    init = parse(S.InitializeRequest, {"protocolVersion": 1, "clientCapabilities": "garbage"})
    assert init.client_capabilities.fs.read_text_file is False
    assert init.client_capabilities.terminal is False
    caps = parse(S.ClientCapabilities, {"terminal": "yes please"})
    assert caps.terminal is False
    strict_error(S.ClientCapabilities, {"terminal": "yes please"})


def test_required_fields_are_never_defaulted() -> None:
    exc = strict_error(S.SessionNotification, note(sessionUpdate="tool_call_update"))
    with pytest.raises(SchemaValidationError):
        parse(S.SessionNotification, note(sessionUpdate="tool_call_update"))
    assert any("toolCallId" in p for p in paths(exc))


# ---------------------------------------------------------------------------------------------
# x-deserialize-skip-invalid-items
# ---------------------------------------------------------------------------------------------


def test_skip_invalid_items_tool_call_content() -> None:
    good1 = {"type": "content", "content": {"type": "text", "text": "a"}}
    bad = {"type": "diff", "path": 5, "newText": "x"}
    good2 = {"type": "terminal", "terminalId": "t1"}
    wire = tool_call(content=[good1, bad, good2])
    tc = parse(S.SessionNotification, wire).update
    assert len(tc.content) == 2
    assert dump(tc.content) == [good1, good2]
    exc = strict_error(S.SessionNotification, wire)
    assert exc.type_name == "SessionNotification"
    assert "$.update[sessionUpdate=tool_call].content[1][type=diff].path" in paths(exc), paths(exc)


def test_skip_invalid_items_all_bad_and_not_a_list() -> None:
    tc = parse(S.SessionNotification, tool_call(content=[1, "x", None])).update
    assert tc.content == []
    upd = parse(S.SessionNotification, note(sessionUpdate="tool_call_update", toolCallId="c", content="zzz")).update
    assert upd.content is None  # not a list at all: default-on-error
    strict_error(S.SessionNotification, tool_call(content=[1]))


def test_skip_invalid_items_auth_methods() -> None:
    resp = parse(S.InitializeResponse, {"protocolVersion": 1, "authMethods": [
        {"id": "a", "name": "A"}, {"id": 3}, {"type": "terminal", "id": "t", "name": "T"}]})
    assert [m.id for m in resp.auth_methods] == ["a", "t"]


# ---------------------------------------------------------------------------------------------
# default on null
# ---------------------------------------------------------------------------------------------


def test_default_on_null() -> None:
    http = parse(S.McpServer, {"type": "http", "name": "w", "url": "https://x", "headers": None})
    assert isinstance(http, S.McpServerHttp)
    assert http.headers == []
    stdio = parse(S.McpServer, {"name": "fs", "command": "/bin/fs", "args": None, "env": None})
    assert (stdio.args, stdio.env) == ([], [])
    # null is not a wrong value: it is the documented way to say "default"
    assert parse(S.McpServer, {"type": "http", "name": "w", "url": "u", "headers": None}, strict=True).headers == []
    # a fresh list each time
    other = parse(S.McpServer, {"type": "http", "name": "w", "url": "https://x", "headers": None})
    other.headers.append(S.HttpHeader(name="a", value="b"))
    assert http.headers == []


# ---------------------------------------------------------------------------------------------
# unknown variants
# ---------------------------------------------------------------------------------------------


def test_unknown_session_update_kept() -> None:
    raw = {"sessionUpdate": "hologram", "frames": [1, 2, {"x": None}], "_meta": {"a": 1}}
    n = parse(S.SessionNotification, note(**raw))
    assert isinstance(n.update, S.UnknownSessionUpdate)
    assert isinstance(n.update, S.UnknownVariant)
    assert n.update.raw == raw
    assert n.update.tag == "hologram"
    assert dump(n) == note(**raw)
    assert json.loads(dump_json(n)) == note(**raw)
    assert parse(S.SessionNotification, dump(n)) == n
    exc = strict_error(S.SessionNotification, note(**raw))
    assert exc.type_name == "SessionNotification"
    assert any(p.startswith("$.update") for p in paths(exc))


def test_custom_underscore_tag_accepted_in_strict() -> None:
    raw = {"sessionUpdate": "_acme/progress", "pct": 50}
    n = parse(S.SessionNotification, note(**raw), strict=True)
    assert isinstance(n.update, S.UnknownSessionUpdate)
    assert n.update.raw == raw
    assert dump(n) == note(**raw)


def test_unknown_content_block_and_tool_content() -> None:
    blk = parse(S.ContentBlock, {"type": "video", "url": "https://x"})
    assert isinstance(blk, S.UnknownVariant)
    assert dump(blk) == {"type": "video", "url": "https://x"}
    tc = parse(S.SessionNotification, tool_call(content=[{"type": "hologram", "z": 1}])).update
    assert isinstance(tc.content[0], S.UnknownVariant)
    assert dump(tc.content[0]) == {"type": "hologram", "z": 1}


def test_malformed_known_variant_is_an_error_not_unknown() -> None:
    with pytest.raises(SchemaValidationError) as info:
        parse(S.SessionNotification, note(sessionUpdate="agent_message_chunk"))
    assert "$.update[sessionUpdate=agent_message_chunk].content" in paths(info.value), paths(info.value)


def test_wrong_discriminator_type() -> None:
    exc = strict_error(S.SessionNotification, note(sessionUpdate=5))
    assert exc.type_name == "SessionNotification"
    assert all(p.startswith("$.update") for p in paths(exc))
    # lenient: an unknown variant, raw kept
    n = parse(S.SessionNotification, note(sessionUpdate=5, x=1))
    assert isinstance(n.update, S.UnknownVariant)
    assert dump(n) == note(sessionUpdate=5, x=1)
    for bad in (None, ["tool_call"], {"k": 1}):
        strict_error(S.SessionNotification, note(sessionUpdate=bad))


def test_missing_discriminator() -> None:
    exc = strict_error(S.SessionNotification, note(content={"type": "text", "text": "x"}))
    assert all(p.startswith("$.update") for p in paths(exc))
    exc = strict_error(S.ContentBlock, {"text": "x"})
    assert exc.type_name == "ContentBlock"


# ---------------------------------------------------------------------------------------------
# bad input: always SchemaValidationError naming type and path
# ---------------------------------------------------------------------------------------------

BAD: list[tuple[str, Any, Any, str]] = [
    ("wrong-type-root", S.SessionNotification, ["not", "an", "object"], "$"),
    ("wrong-type-field", S.SessionNotification, {"sessionId": 5, "update": {
        "sessionUpdate": "plan_removed", "planId": "p"}}, "$.sessionId"),
    ("missing-required", S.PromptRequest, {"sessionId": SID}, "$.prompt"),
    ("wrong-type-nested", S.PromptRequest, {"sessionId": SID, "prompt": [{"type": "text", "text": 1}]},
     "$.prompt[0][type=text].text"),
    ("missing-nested", S.SessionNotification, tool_call(locations=[{"line": 1}]),
     "$.update[sessionUpdate=tool_call].locations[0].path"),
    ("unknown-tag-strict", S.PromptRequest, {"sessionId": SID, "prompt": [{"type": "video"}]}, "$.prompt[0]"),
    ("bad-enum", S.PromptResponse, {"stopReason": 7}, "$.stopReason"),
    ("bad-int", S.ReadTextFileRequest, {"sessionId": SID, "path": "/a", "line": "ten"}, "$.line"),
    ("numeric-string", S.InitializeRequest, {"protocolVersion": "1"}, "$.protocolVersion"),
    ("bool-string", S.TerminalOutputResponse, {"output": "", "truncated": "false"}, "$.truncated"),
]


@pytest.mark.parametrize(("tp", "data", "path"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(tp: Any, data: Any, path: str) -> None:
    exc = strict_error(tp, data)
    assert isinstance(exc, AcpError)
    assert not isinstance(exc, ValidationError)
    assert exc.type_name == tp.__name__
    assert exc.errors and all(e["path"].startswith("$") for e in exc.errors)
    assert any(p == path or p.startswith(path) for p in paths(exc)), (path, paths(exc))
    assert exc.type_name in str(exc)


@pytest.mark.parametrize("name", ["SessionUpdate", "ContentBlock", "McpServer", "RequestPermissionOutcome"])
def test_union_aliases_named_in_errors(name: str) -> None:
    exc = strict_error(getattr(S, name), {"zz": 1})
    assert exc.type_name == name


def test_invalid_json_text() -> None:
    with pytest.raises(SchemaValidationError) as info:
        parse_json(S.PromptResponse, b"{nope")
    assert info.value.errors[0]["path"] == "$"
    assert parse_json(S.PromptResponse, b'{"stopReason":"refusal"}').stop_reason == "refusal"


def test_errors_travel_as_invalid_params() -> None:
    exc = strict_error(S.PromptRequest, {})
    wire = exc.to_wire()
    assert wire["code"] == -32602
    assert wire["data"]["type"] == "PromptRequest"
    assert wire["data"]["errors"][0]["path"].startswith("$")


# ---------------------------------------------------------------------------------------------
# size and depth
# ---------------------------------------------------------------------------------------------


def test_huge_string() -> None:
    text = "x" * (10 * 1024 * 1024)
    n = parse(S.SessionNotification, note(sessionUpdate="agent_message_chunk", content={"type": "text", "text": text}))
    assert len(n.update.content.text) == len(text)
    out = n.to_json()
    assert len(out) > len(text)
    assert parse_json(S.SessionNotification, out) == n


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": True}
    for _ in range(depth):
        value = {"k": value}
    return value


def test_deep_meta_200() -> None:
    meta = _nested(200)
    n = parse(S.SessionNotification, {**note(sessionUpdate="plan_removed", planId="p"), "_meta": meta})
    assert n.meta == meta
    assert dump(n)["_meta"] == meta
    assert json.loads(n.to_json())["_meta"] == meta


@pytest.mark.parametrize("strict", [False, True])
def test_deep_meta_5000_no_crash(strict: bool) -> None:
    wire = {**note(sessionUpdate="plan_removed", planId="p"), "_meta": _nested(5000)}
    try:
        n = parse(S.SessionNotification, wire, strict=strict)
    except AcpError:
        return  # refused cleanly
    # accepted: the value must still be usable (dumping may refuse, but only with an AcpError)
    assert n.update.plan_id == "p"
    try:
        n.to_json()
    except AcpError:
        pass
