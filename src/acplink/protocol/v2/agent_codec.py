"""The agent side of ACP v2: an app written against v1's models, served as v2 (sans-I/O).

The app's inbound params are rewritten into v1's shape before they reach it, and what it sends
is rewritten into v2's: chunks get a ``messageId``, tool calls become upserts
(``tool_call_update``), the plan a ``plan_update``, modes a config option, auth methods get
``methodId``, a permission request a ``title`` and a ``subject``. Updates v2 has no place for
are dropped. Pure functions on wire JSON; the agent's connection does the I/O.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Sequence
from typing import Any

from ...errors import InvalidParams
from ..agent_codec import AgentCodec, Route
from ..router import downgrade_initialize
from ..v1 import V1
from . import PROTOCOL_VERSION, V1_ONLY_METHODS, Method, Update
from .patch import v2_diff

__all__ = ["MODE_CONFIG_ID", "V2AgentCodec", "config_options", "new_message_id", "update_to_v2"]

MODE_CONFIG_ID = "mode"


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _pick(p: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: p[k] for k in keys if p.get(k) is not None}


def prompt_capabilities(v1: dict[str, Any]) -> dict[str, Any]:
    """v1 booleans (``image: true``) → v2 capability objects (``image: {}``)."""
    return {k: {} for k in ("image", "audio", "embeddedContext") if v1.get(k)}


def auth_methods(methods: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """v1 auth methods (``id``) → v2 (``methodId``, a ``type`` tag; ``agent`` by default)."""
    out = []
    for m in methods:
        m = dict(m)
        method_id = m.pop("id", None) or m.pop("methodId", None)
        kind = m.pop("type", None) or "agent"
        out.append(_drop_none({"type": kind, "methodId": method_id, **m}))
    return out


def config_option(opt: dict[str, Any]) -> dict[str, Any]:
    """One v1 config option (``id``) → v2 (``configId``)."""
    out = dict(opt)
    out["configId"] = out.pop("id", out.get("configId"))
    return _drop_none(out)


def mode_option(modes: Sequence[dict[str, Any]], current: str | None) -> dict[str, Any]:
    """The session modes as a v2 config option of category ``mode`` (id ``mode``)."""
    return {
        "type": "select", "configId": MODE_CONFIG_ID, "name": "Mode", "category": "mode",
        "currentValue": current or (modes[0]["id"] if modes else ""),
        "options": [_drop_none({"value": m["id"], "name": m["name"], "description": m.get("description")})
                    for m in modes],
    }


def config_options(options: Sequence[dict[str, Any]], modes: Sequence[dict[str, Any]],
                   mode: str | None) -> list[dict[str, Any]]:
    out = [mode_option(modes, mode)] if modes else []
    return out + [config_option(o) for o in options]


def session_infos(sessions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    keep = ("sessionId", "cwd", "additionalDirectories", "title", "updatedAt", "_meta")
    return [_drop_none({k: s.get(k) for k in keep}) for s in sessions]


def _tool_content(item: dict[str, Any]) -> dict[str, Any]:
    """A v1 tool-call content item in v2: a diff gets ``changes`` and its ``git_patch`` text."""
    return v2_diff(item) if item.get("type") == "diff" else item


def _command(cmd: dict[str, Any]) -> dict[str, Any]:
    out = {"type": "command", **cmd}
    inp = out.get("input")
    if isinstance(inp, dict) and "type" not in inp:
        out["input"] = {"type": "text", **inp}
    return _drop_none(out)


_TOOL_FIELDS = ("toolCallId", "title", "kind", "status", "content", "locations", "rawInput", "rawOutput", "_meta")


def update_to_v2(update: dict[str, Any], *, message_id: Callable[[str], str],
                 cancellable: Callable[[str], bool], modes: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """One v1 ``session/update`` payload → its v2 form (None: v2 has no such update).

    ``message_id(kind)`` gives the id of the current message of a chunk kind that has none;
    ``cancellable(tool_call_id)`` says whether the tool call has a cancel hook."""
    kind = update.get("sessionUpdate")
    if kind in (Update.AGENT_MESSAGE_CHUNK, Update.AGENT_THOUGHT_CHUNK, Update.USER_MESSAGE_CHUNK):
        out = dict(update)
        if not out.get("messageId"):
            out["messageId"] = message_id(kind)
        return out
    if kind in ("tool_call", "tool_call_update"):
        out = {"sessionUpdate": Update.TOOL_CALL_UPDATE}
        out.update({k: update[k] for k in _TOOL_FIELDS if k in update})
        if isinstance(out.get("content"), list):
            out["content"] = [_tool_content(c) for c in out["content"]]
        if kind == "tool_call" and cancellable(out["toolCallId"]):
            out["capabilities"] = {"cancel": {}}
        return out
    if kind == "plan":
        return {"sessionUpdate": Update.PLAN_UPDATE,
                "plan": {"type": "items", "planId": "plan", "entries": update.get("entries", [])}}
    if kind == "available_commands_update":
        return {"sessionUpdate": kind, "availableCommands": [_command(c) for c in update.get("availableCommands", [])]}
    if kind == "current_mode_update":
        return {"sessionUpdate": Update.CONFIG_OPTION_UPDATE,
                "configOptions": [mode_option(modes, update.get("currentModeId"))]}
    if kind == "config_option_update":
        return {"sessionUpdate": kind, "configOptions": [config_option(o) for o in update.get("configOptions", [])]}
    if kind in (Update.SESSION_INFO_UPDATE, Update.USAGE_UPDATE):
        return update
    return None


def permission_params(v1: dict[str, Any]) -> dict[str, Any]:
    """A v1 permission request → v2 (a ``title``, the tool call as the ``subject``)."""
    tool = v1.get("toolCall") or {}
    title = tool.get("title") or f"Allow {tool.get('toolCallId', 'this')}?"
    out: dict[str, Any] = {"sessionId": v1["sessionId"], "title": title, "options": v1.get("options", [])}
    if tool.get("toolCallId"):
        subject_tool = {k: tool[k] for k in ("toolCallId", "title", "kind", "status") if tool.get(k) is not None}
        out["subject"] = {"type": "tool_call", "toolCall": subject_tool}
    if v1.get("_meta") is not None:
        out["_meta"] = v1["_meta"]
    return out


def _prompt(params: dict[str, Any]) -> dict[str, Any]:
    """A v2 ``session/prompt``'s params, checked: a non-empty list of content blocks."""
    if not isinstance(params.get("sessionId"), str):
        raise InvalidParams("Invalid params for session/prompt: sessionId: a string is required",
                            {"path": "sessionId"})
    prompt = params.get("prompt")
    if not isinstance(prompt, list) or not prompt:
        raise InvalidParams("Invalid params for session/prompt: prompt: must be a non-empty list of content blocks",
                            {"path": "prompt"})
    return {"sessionId": params["sessionId"], "prompt": prompt}


_SETUP_FIELDS = ("cwd", "mcpServers", "additionalDirectories", "_meta")


class V2AgentCodec(AgentCodec):
    """ACP v2 for an app written against v1 (see the module)."""

    app_protocol = V1

    def route(self, method: str, params: dict[str, Any]) -> Route | None:
        if method == Method.SESSION_PROMPT:
            return Route("prompt", _prompt(params))
        if method == Method.SESSION_NEW:
            return Route("hook", {"mcpServers": [], **_pick(params, *_SETUP_FIELDS)}, hook="new_session",
                         result="setup")
        if method == Method.SESSION_FORK:
            return Route("hook", {"mcpServers": [], **params}, hook="fork_session", result="setup")
        if method == Method.SESSION_RESUME:
            if not isinstance(params.get("sessionId"), str) or not isinstance(params.get("cwd"), str):
                raise InvalidParams("Invalid params for session/resume: sessionId and cwd are required")
            return Route("resume", {"mcpServers": [], **_pick(params, "sessionId", *_SETUP_FIELDS)})
        if method == Method.SESSION_CLOSE:
            return Route("close", _session(params))
        if method == Method.SESSION_DELETE:
            return Route("delete", _session(params))
        if method == Method.SESSION_LIST:
            return Route("hook", _pick(params, "cwd", "cursor", "archived", "_meta"), hook="list_sessions",
                         result="list")
        if method in _SAME_SHAPE:
            hook, fields = _SAME_SHAPE[method]
            return Route("hook", {**_session(params), **_pick(params, *fields)}, hook=hook, result="same")
        if method == Method.SESSION_SET_CONFIG_OPTION:
            return Route("config", {**_session(params), **_pick(params, "configId", "value")})
        if method == Method.AUTH_LOGIN:
            return Route("login", {"methodId": params.get("methodId")}, hook="authenticate")
        if method == Method.AUTH_LOGOUT:
            return Route("hook", {}, hook="logout")
        if method == Method.TOOL_CALL_CANCEL:
            return Route("cancel_entity", params, key="toolCallId", label="tool call")
        if method == Method.TERMINAL_CANCEL:
            return Route("cancel_entity", params, key="terminalId", label="terminal")
        return None

    def client_view(self, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        info = params.get("info")
        return downgrade_initialize(params)["clientCapabilities"], info if isinstance(info, dict) else None

    def initialize_result(self, info: dict[str, Any], capabilities: dict[str, Any], hooks: Collection[str],
                          auth: Sequence[dict[str, Any]]) -> dict[str, Any]:
        session: dict[str, Any] = {"prompt": prompt_capabilities(capabilities.get("promptCapabilities") or {})}
        for hook, cap in (("delete_session", "delete"), ("fork_session", "fork"), ("archive_session", "archive"),
                          ("session_status", "status"), ("set_title", "title")):
            if hook in hooks:
                session[cap] = {}
        # v1's MCP transports (stdio is every v1 agent's) as v2's session.mcp objects
        mcp = capabilities.get("mcpCapabilities") or {}
        session["mcp"] = {"stdio": {}, **{t: {} for t in ("http", "acp") if mcp.get(t)}}
        body: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION, "info": info, "capabilities": {"session": session}}
        if auth:
            body["authMethods"] = auth_methods(auth)
        return body

    def capabilities_of(self, result: dict[str, Any]) -> Any:
        return result.get("capabilities")

    def setup_result(self, app_result: dict[str, Any], modes: Sequence[dict[str, Any]],
                     mode: str | None) -> dict[str, Any]:
        app_modes = app_result.get("modes") or {}
        options = config_options(app_result.get("configOptions") or [],
                                 app_modes.get("availableModes") or [], app_modes.get("currentModeId") or mode)
        return {"configOptions": options} if options else {}

    def config_call(self, params: dict[str, Any], has_modes: bool) -> tuple[str, dict[str, Any]]:
        sid, config_id, value = params["sessionId"], params.get("configId"), params.get("value")
        if config_id == MODE_CONFIG_ID and has_modes:
            return "set_mode", {"sessionId": sid, "modeId": value}
        return "set_config_option", {"sessionId": sid, "configId": config_id, "value": value}

    def config_result(self, options: Sequence[dict[str, Any]], modes: Sequence[dict[str, Any]],
                      mode: str | None) -> dict[str, Any]:
        return {"configOptions": config_options(options, modes, mode)}

    def list_result(self, app_result: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {"sessions": session_infos(app_result.get("sessions", []))}
        if app_result.get("nextCursor") is not None:
            out["nextCursor"] = app_result["nextCursor"]
        return out

    def update(self, update: dict[str, Any], *, message_id: Callable[[str], str], cancellable: Callable[[str], bool],
               modes: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
        return update_to_v2(update, message_id=message_id, cancellable=cancellable, modes=modes)

    def message_of(self, update: dict[str, Any]) -> tuple[str, str, Any] | None:
        if update.get("sessionUpdate") == Update.AGENT_MESSAGE_CHUNK:
            return "agent", update["messageId"], update["content"]
        return None

    def replay_requested(self, params: dict[str, Any]) -> bool:
        return params.get("replayFrom") is not None

    def replay_update(self, role: str, message_id: str, content: Any) -> dict[str, Any]:
        kind = Update.USER_MESSAGE if role == "user" else Update.AGENT_MESSAGE
        return {"sessionUpdate": kind, "messageId": message_id, "content": content}

    def request_params(self, name: str, params: Any) -> Any:
        if name == "request_permission":
            return permission_params(params)
        if name == "create_elicitation" and isinstance(params, dict):
            params.setdefault("mode", "form")
        return params

    def missing(self, method: str) -> str | None:
        if method in V1_ONLY_METHODS:
            return (f"{method} does not exist in ACP v2: a v2 agent reaches the client's files and terminals "
                    "through an MCP server the client provides (MCP-over-ACP), not through ACP methods")
        return None

    def terminal_update(self, terminal_id: str, **fields: Any) -> dict[str, Any]:
        return {"sessionUpdate": Update.TERMINAL_UPDATE, "terminalId": terminal_id, **fields}

    def terminal_output(self, terminal_id: str, data: str) -> dict[str, Any]:
        return {"sessionUpdate": Update.TERMINAL_OUTPUT_CHUNK, "terminalId": terminal_id, "data": data}


#: the v2 requests whose params and result have v1's shape: method → (hook, fields beside sessionId)
_SAME_SHAPE: dict[str, tuple[str, tuple[str, ...]]] = {
    Method.SESSION_ARCHIVE: ("archive_session", ("_meta",)),
    Method.SESSION_UNARCHIVE: ("unarchive_session", ("_meta",)),
    Method.SESSION_STATUS: ("session_status", ("_meta",)),
    Method.SESSION_SET_TITLE: ("set_title", ("title", "_meta")),
}


def _session(p: dict[str, Any]) -> dict[str, Any]:
    sid = p.get("sessionId")
    if not isinstance(sid, str):
        raise InvalidParams("Invalid params: sessionId: a string is required", {"path": "sessionId"})
    return {"sessionId": sid}
