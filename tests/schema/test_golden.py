"""Hand-written golden wire messages of the common flows: each parses into the expected model
and dumps back to canonically equal JSON (``json.dumps(..., sort_keys=True)``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

import acplink.schema as S
from acplink.schema import dump, dump_json, parse

META = {"trace": {"id": "abc", "spans": [1, 2.5, None, True]}, "vendor.x/y": "z"}
TEXT = {"type": "text", "text": "Hello, world"}
SID = "sess_01"


def canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def update(kind: str, /, **fields: Any) -> dict[str, Any]:
    return {"sessionId": SID, "update": {"sessionUpdate": kind, **fields}}


# (id, type name, wire params/result, expected Python class name of the value or of .update)
GOLDEN: list[tuple[str, str, dict[str, Any], str]] = [
    # initialize
    ("initialize-request", "InitializeRequest", {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True,
                               "auth": {"terminal": False}, "_meta": {"x": 1}},
        "clientInfo": {"name": "zed", "title": "Zed", "version": "0.200.0"},
        "_meta": META,
    }, "InitializeRequest"),
    ("initialize-response", "InitializeResponse", {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {"list": {}, "close": {}},
        },
        "authMethods": [{"id": "oauth", "name": "Log in", "description": None},
                        {"type": "terminal", "id": "cli", "name": "CLI login", "args": ["--login"]}],
        "agentInfo": {"name": "demo", "version": "1.0.0"},
    }, "InitializeResponse"),
    # sessions
    ("session-new-request", "NewSessionRequest", {
        "cwd": "/home/u/project",
        "mcpServers": [
            {"name": "fs", "command": "/usr/bin/mcp-fs", "args": ["--root", "/"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "https://mcp.example/x", "headers": [{"name": "Authorization", "value": "t"}]},
            {"type": "sse", "name": "events", "url": "https://mcp.example/sse", "headers": []},
        ],
    }, "NewSessionRequest"),
    ("session-new-response", "NewSessionResponse", {
        "sessionId": SID,
        "modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"},
                                                             {"id": "code", "name": "Code", "description": "Writes code"}]},
        "configOptions": [
            {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "fast",
             "options": [{"value": "fast", "name": "Fast"}, {"value": "smart", "name": "Smart", "description": None}]},
            {"id": "yolo", "name": "Auto-approve", "type": "boolean", "currentValue": False},
        ],
    }, "NewSessionResponse"),
    ("session-prompt-request", "PromptRequest", {
        "sessionId": SID,
        "prompt": [
            TEXT,
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a.py", "name": "a.py", "size": 120},
            {"type": "resource", "resource": {"uri": "file:///b.py", "text": "print(1)", "mimeType": "text/x-python"}},
            {"type": "resource", "resource": {"uri": "file:///c.bin", "blob": "AAEC"}},
            {"type": "text", "text": "annotated", "annotations": {"audience": ["user"], "priority": 0.5}},
        ],
    }, "PromptRequest"),
    ("session-prompt-response", "PromptResponse", {"stopReason": "end_turn"}, "PromptResponse"),
    ("session-prompt-response-usage", "PromptResponse", {
        "stopReason": "max_tokens", "usage": {"totalTokens": 30, "inputTokens": 10, "outputTokens": 20},
        "_meta": {"k": "v"},
    }, "PromptResponse"),
    ("session-cancel", "CancelNotification", {"sessionId": SID}, "CancelNotification"),
    # permissions
    ("permission-request", "RequestPermissionRequest", {
        "sessionId": SID,
        "toolCall": {"toolCallId": "call_1", "title": "Edit a.py", "kind": "edit", "status": "pending"},
        "options": [{"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "deny", "name": "Reject", "kind": "reject_once"}],
    }, "RequestPermissionRequest"),
    ("permission-selected", "RequestPermissionResponse",
     {"outcome": {"outcome": "selected", "optionId": "allow"}}, "RequestPermissionResponse"),
    ("permission-cancelled", "RequestPermissionResponse",
     {"outcome": {"outcome": "cancelled"}}, "RequestPermissionResponse"),
    ("permission-timeout", "RequestPermissionResponse",
     {"outcome": {"outcome": "timeout"}}, "RequestPermissionResponse"),
    # file system
    ("fs-read-request", "ReadTextFileRequest", {"sessionId": SID, "path": "/p/a.py", "line": 10, "limit": 5},
     "ReadTextFileRequest"),
    ("fs-read-response", "ReadTextFileResponse", {"content": "line 10\nline 11\n"}, "ReadTextFileResponse"),
    ("fs-write-request", "WriteTextFileRequest", {"sessionId": SID, "path": "/p/a.py", "content": "x = 1\n"},
     "WriteTextFileRequest"),
    ("fs-write-response", "WriteTextFileResponse", {}, "WriteTextFileResponse"),
    # terminals
    ("terminal-create-request", "CreateTerminalRequest", {
        "sessionId": SID, "command": "pytest", "args": ["-q"], "env": [{"name": "CI", "value": "1"}],
        "cwd": "/p", "outputByteLimit": 1048576,
    }, "CreateTerminalRequest"),
    ("terminal-create-response", "CreateTerminalResponse", {"terminalId": "term_1"}, "CreateTerminalResponse"),
    ("terminal-output-request", "TerminalOutputRequest", {"sessionId": SID, "terminalId": "term_1"},
     "TerminalOutputRequest"),
    ("terminal-output-running", "TerminalOutputResponse", {"output": "....", "truncated": False},
     "TerminalOutputResponse"),
    ("terminal-output-exited", "TerminalOutputResponse",
     {"output": "1 passed", "truncated": True, "exitStatus": {"exitCode": 0, "signal": None}}, "TerminalOutputResponse"),
    ("terminal-wait-request", "WaitForTerminalExitRequest", {"sessionId": SID, "terminalId": "term_1"},
     "WaitForTerminalExitRequest"),
    ("terminal-wait-response", "WaitForTerminalExitResponse", {"exitCode": None, "signal": "SIGKILL"},
     "WaitForTerminalExitResponse"),
    ("terminal-kill-request", "KillTerminalRequest", {"sessionId": SID, "terminalId": "term_1"}, "KillTerminalRequest"),
    ("terminal-kill-response", "KillTerminalResponse", {}, "KillTerminalResponse"),
    ("terminal-release-request", "ReleaseTerminalRequest", {"sessionId": SID, "terminalId": "term_1"},
     "ReleaseTerminalRequest"),
    ("terminal-release-response", "ReleaseTerminalResponse", {"_meta": {}}, "ReleaseTerminalResponse"),
    # errors
    ("error-auth-methods", "Error", {
        "code": -32000, "message": "Authentication required",
        "authMethods": [{"id": "oauth", "name": "Log in"}], "data": {"hint": "run login"},
    }, "Error"),
    ("error-plain", "Error", {"code": -32601, "message": "Method not found"}, "Error"),
    # MCP servers: stdio has no "type"
    ("mcp-stdio", "McpServer", {"name": "fs", "command": "/bin/fs", "args": [], "env": []}, "McpServerStdio"),
    ("mcp-http", "McpServer", {"type": "http", "name": "web", "url": "https://x", "headers": []}, "McpServerHttp"),
    ("mcp-sse", "McpServer", {"type": "sse", "name": "ev", "url": "https://x/sse", "headers": []}, "McpServerSse"),
    # every sessionUpdate kind
    ("su-user_message_chunk", "SessionNotification", update("user_message_chunk", content=TEXT, messageId="m1"),
     "UserMessageChunk"),
    ("su-agent_message_chunk", "SessionNotification", update("agent_message_chunk", content=TEXT),
     "AgentMessageChunk"),
    ("su-agent_thought_chunk", "SessionNotification", update("agent_thought_chunk", content=TEXT, _meta=META),
     "AgentThoughtChunk"),
    ("su-tool_call", "SessionNotification", update(
        "tool_call", toolCallId="call_1", title="Edit a.py", kind="edit", status="in_progress",
        content=[{"type": "content", "content": TEXT},
                 {"type": "diff", "path": "/p/a.py", "oldText": "a", "newText": "b"},
                 {"type": "diff", "path": "/p/new.py", "newText": "fresh"},
                 {"type": "terminal", "terminalId": "term_1"}],
        locations=[{"path": "/p/a.py", "line": 3}], rawInput={"path": "/p/a.py", "n": [1, 2]}),
     "ToolCall"),
    ("su-tool_call_update", "SessionNotification", update(
        "tool_call_update", toolCallId="call_1", status="completed", rawOutput="ok", content=None),
     "ToolCallUpdate"),
    ("su-plan", "SessionNotification", update("plan", entries=[
        {"content": "Read the code", "priority": "high", "status": "completed"},
        {"content": "Fix the bug", "priority": "medium", "status": "in_progress"},
        {"content": "Write tests", "priority": "low", "status": "pending"}]), "Plan"),
    ("su-plan_update-items", "SessionNotification", update("plan_update", plan={
        "type": "items", "planId": "p1", "entries": [{"content": "a", "priority": "low", "status": "pending"}]}),
     "PlanUpdate"),
    ("su-plan_update-file", "SessionNotification", update(
        "plan_update", plan={"type": "file", "planId": "p2", "uri": "file:///plan.md"}), "PlanUpdate"),
    ("su-plan_update-markdown", "SessionNotification", update(
        "plan_update", plan={"type": "markdown", "planId": "p3", "content": "# Plan"}), "PlanUpdate"),
    ("su-plan_removed", "SessionNotification", update("plan_removed", planId="p1"), "PlanRemoved"),
    ("su-available_commands_update", "SessionNotification", update("available_commands_update", availableCommands=[
        {"name": "web", "description": "Search the web", "input": {"hint": "query"}},
        {"name": "test", "description": "Run tests", "input": None}]), "AvailableCommandsUpdate"),
    ("su-current_mode_update", "SessionNotification", update("current_mode_update", currentModeId="code"),
     "CurrentModeUpdate"),
    ("su-config_option_update", "SessionNotification", update("config_option_update", configOptions=[
        {"id": "model", "name": "Model", "type": "select", "currentValue": "smart",
         "options": [{"group": "g1", "name": "Group 1", "options": [{"value": "smart", "name": "Smart"}]}]}]),
     "ConfigOptionUpdate"),
    ("su-session_info_update", "SessionNotification", update(
        "session_info_update", title="Fix the bug", updatedAt="2026-11-29T12:00:00Z"), "SessionInfoUpdate"),
    ("su-usage_update", "SessionNotification", update(
        "usage_update", used=1200, size=200000, cost={"amount": 0.25, "currency": "USD"}), "UsageUpdate"),
    ("su-notice", "SessionNotification", update(
        "notice", severity="warning", title="Rate limited", description="retrying in 5 s"), "Notice"),
    ("su-compaction_update", "SessionNotification", update(
        "compaction_update", compactionId="c1", status="completed", summary=[TEXT]), "CompactionUpdate"),
    ("su-compaction_summary_chunk", "SessionNotification", update(
        "compaction_summary_chunk", compactionId="c1", content=TEXT), "CompactionSummaryChunk"),
    ("su-subagent_update", "SessionNotification", update(
        "subagent_update", sessionId="child_1", title="Researcher", state={"state": "running"},
        capabilities={"cancel": {}}, cwd="/p", additionalDirectories=["/q"]), "SubagentUpdate"),
    ("su-session_message", "SessionNotification", update(
        "session_message", messageId="m9", senderSessionId="child_1", recipientSessionId=SID, content=[TEXT]),
     "SessionMessage"),
    ("su-session_message_chunk", "SessionNotification", update(
        "session_message_chunk", messageId="m9", content=TEXT), "SessionMessageChunk"),
]

#: golden messages that use acplink's documented extensions (not valid against the schema alone)
EXTENSIONS = {"Error"}  # Error.authMethods (seed)
EXTENSION_IDS = {"permission-timeout"}  # the `timeout` outcome (seed)

SESSION_UPDATE_KINDS = {
    "user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update",
    "plan", "plan_update", "plan_removed", "available_commands_update", "current_mode_update",
    "config_option_update", "session_info_update", "usage_update", "notice", "compaction_update",
    "compaction_summary_chunk", "subagent_update", "session_message", "session_message_chunk",
}


def test_every_session_update_kind_has_a_golden(unstable_defs: dict[str, Any]) -> None:
    in_schema = {
        v["properties"]["sessionUpdate"]["const"]
        for v in unstable_defs["SessionUpdate"]["oneOf"]
        if "const" in v.get("properties", {}).get("sessionUpdate", {})
    }
    assert in_schema == SESSION_UPDATE_KINDS
    golden = {p["update"]["sessionUpdate"] for _, t, p, _ in GOLDEN if t == "SessionNotification"}
    assert golden == SESSION_UPDATE_KINDS


@pytest.mark.parametrize(("gid", "type_name", "wire", "cls_name"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_roundtrip(gid: str, type_name: str, wire: dict[str, Any], cls_name: str, validator: Any) -> None:
    if type_name not in EXTENSIONS and gid not in EXTENSION_IDS:
        assert validator(type_name).is_valid(wire), "the golden message itself must be valid"
    tp = getattr(S, type_name)
    value = parse(tp, wire)
    strict = parse(tp, wire, strict=True)
    assert strict == value
    shown = value.update if type_name == "SessionNotification" else value
    assert isinstance(shown, getattr(S, cls_name))
    assert not isinstance(shown, S.UnknownVariant)
    assert canon(dump(value)) == canon(wire)
    assert json.loads(dump_json(value)) == json.loads(canon(wire))
    assert canon(value.to_wire()) == canon(wire)
    assert parse(tp, dump(value)) == value


def test_typed_access() -> None:
    n = parse(S.SessionNotification, update("tool_call", toolCallId="c", title="t",
                                            content=[{"type": "diff", "path": "/a", "newText": "b"}]))
    assert n.session_id == SID
    tc = n.update
    assert isinstance(tc, S.ToolCall)
    assert tc.tool_call_id == "c"
    assert tc.session_update == "tool_call"
    diff = tc.content[0]
    assert isinstance(diff, S.Diff)
    assert (diff.path, diff.new_text, diff.old_text) == ("/a", "b", None)
    init = parse(S.InitializeResponse, GOLDEN[1][2])
    assert init.agent_capabilities.prompt_capabilities.embedded_context is True
    assert init.agent_capabilities.session_capabilities.list is not None
    assert isinstance(init.auth_methods[1], S.AuthMethodTerminal)


def test_permission_outcomes() -> None:
    sel = parse(S.RequestPermissionResponse, {"outcome": {"outcome": "selected", "optionId": "allow"}})
    assert isinstance(sel.outcome, S.SelectedPermissionOutcome)
    assert sel.outcome.option_id == "allow"
    cancelled = parse(S.RequestPermissionResponse, {"outcome": {"outcome": "cancelled"}})
    assert cancelled.outcome.outcome == "cancelled"
    timeout = parse(S.RequestPermissionResponse, {"outcome": {"outcome": "timeout"}})
    assert timeout.outcome.outcome == "timeout"


@pytest.mark.parametrize("outcome", [{"type": "timeout"}, {"type": "cancelled"}, {"type": "selected", "optionId": "o"}])
def test_seed_type_tagged_outcome_accepted(outcome: dict[str, Any]) -> None:
    """The seed documents tag the outcome with ``type``; receivers accept it leniently."""
    value = parse(S.RequestPermissionResponse, {"outcome": outcome})
    assert value.outcome.outcome == outcome["type"]
    assert not isinstance(value.outcome, S.UnknownVariant)
    if outcome["type"] == "selected":
        assert value.outcome.option_id == "o"
    # what goes back out is the official wire form, tagged by `outcome`
    assert dump(value)["outcome"]["outcome"] == outcome["type"]


def test_error_auth_methods() -> None:
    err = parse(S.Error, {"code": -32000, "message": "auth", "authMethods": [{"id": "a", "name": "A"}]})
    assert err.auth_methods is not None
    assert err.auth_methods[0].id == "a"
    assert "authMethods" not in dump(parse(S.Error, {"code": -32000, "message": "auth"}))


def test_mcp_server_stdio_has_no_type_on_the_wire() -> None:
    stdio = parse(S.McpServer, {"name": "fs", "command": "/bin/fs", "args": [], "env": []})
    assert isinstance(stdio, S.McpServerStdio)
    assert "type" not in dump(stdio)
    built = S.McpServerStdio(name="fs", command="/bin/fs", args=[], env=[])
    assert "type" not in built.to_wire()
    http = S.McpServerHttp(name="w", url="https://x", headers=[])
    assert http.to_wire() == {"type": "http", "name": "w", "url": "https://x", "headers": []}


# ---------------------------------------------------------------------------------------------
# general model properties
# ---------------------------------------------------------------------------------------------


def test_unknown_fields_kept_everywhere() -> None:
    wire = update("tool_call", toolCallId="c", title="t", futureField={"a": [1]},
                  content=[{"type": "diff", "path": "/a", "newText": "b", "x-extra": True}])
    wire["topLevelNew"] = 7
    wire["update"]["content"][0]["annotationsV2"] = None
    n = parse(S.SessionNotification, wire)
    assert canon(dump(n)) == canon(wire)
    assert n.model_extra == {"topLevelNew": 7}
    assert n.update.model_extra == {"futureField": {"a": [1]}}


def test_meta_maps_to_attribute() -> None:
    n = parse(S.SessionNotification, {**update("agent_message_chunk", content={**TEXT, "_meta": {"c": 3}}), "_meta": META})
    assert n.meta == META
    assert n.update.content.meta == {"c": 3}
    assert "_meta" in dump(n) and "meta" not in dump(n)
    built = S.PromptResponse(stop_reason="end_turn", meta={"a": 1})
    assert built.to_wire() == {"stopReason": "end_turn", "_meta": {"a": 1}}
    assert parse(S.PromptResponse, {"stopReason": "end_turn", "meta": {"a": 1}}).meta == {"a": 1}


def test_snake_and_camel_case_accepted() -> None:
    camel = parse(S.ReadTextFileRequest, {"sessionId": SID, "path": "/a", "line": 1})
    snake = parse(S.ReadTextFileRequest, {"session_id": SID, "path": "/a", "line": 1})
    assert camel == snake
    assert dump(snake) == {"sessionId": SID, "path": "/a", "line": 1}
    nested = parse(S.SessionNotification, {"session_id": SID, "update": {
        "session_update": "tool_call_update", "tool_call_id": "c", "raw_output": 1}})
    assert isinstance(nested.update, S.ToolCallUpdate)
    assert dump(nested) == update("tool_call_update", toolCallId="c", rawOutput=1)
    kw = S.WriteTextFileRequest(session_id=SID, path="/a", content="x")
    assert kw == S.WriteTextFileRequest(sessionId=SID, path="/a", content="x")


def test_unset_optional_fields_omitted() -> None:
    resp = parse(S.TerminalOutputResponse, {"output": "", "truncated": False})
    assert resp.exit_status is None
    assert dump(resp) == {"output": "", "truncated": False}
    init = parse(S.InitializeRequest, {"protocolVersion": 1})
    assert init.client_capabilities.fs.read_text_file is False  # the schema default is there...
    assert dump(init) == {"protocolVersion": 1}  # ...but not written back out
    # an explicit null stays an explicit null
    assert dump(parse(S.TerminalOutputResponse, {"output": "", "truncated": False, "exitStatus": None})) == {
        "output": "", "truncated": False, "exitStatus": None}
    chunk = S.AgentMessageChunk(content=S.TextContent(text="hi"))
    assert chunk.to_wire() == {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
