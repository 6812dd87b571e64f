"""Between the app's v1-shaped world and ACP v2 on the wire (pure functions on wire JSON).

The high-level app is written once, against the v1 models (its handlers get v1 params and
send v1 updates through their context). Served as v2, its inbound params are rewritten into
v1's shape before they reach it, and what it sends is rewritten into v2's: chunks get a
``messageId``, tool calls become upserts (``tool_call_update``), the plan a ``plan_update``,
modes a config option, auth methods get ``methodId``. Updates v2 has no place for are dropped.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import InvalidParams
from ..protocol.v2 import Update

__all__ = [
    "auth_methods",
    "config_options",
    "mode_option",
    "new_message_id",
    "prompt_capabilities",
    "session_infos",
    "update_to_v2",
]

MODE_CONFIG_ID = "mode"


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


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
    if item.get("type") != "diff":
        return item
    change = "modify" if item.get("oldText") is not None else "add"
    return {"type": "diff", "changes": [{"operation": change, "path": item.get("path")}]}


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


def prompt_from_v2(params: Any) -> dict[str, Any]:
    """Check a v2 ``session/prompt``'s params: a non-empty list of content blocks."""
    if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str):
        raise InvalidParams("Invalid params for session/prompt: sessionId: a string is required",
                            {"path": "sessionId"})
    prompt = params.get("prompt")
    if not isinstance(prompt, list) or not prompt:
        raise InvalidParams("Invalid params for session/prompt: prompt: must be a non-empty list of content blocks",
                            {"path": "prompt"})
    return params
