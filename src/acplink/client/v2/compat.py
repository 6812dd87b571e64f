"""A v1 view of v2 updates, for code written against v1's update types (the CLI's renderers).

Most v2 ``session/update`` kinds have the same wire shape as their v1 namesakes (message and
thought chunks, plans, commands, config options, usage, notices, compactions, subagents,
session messages) and are read as v1 models. A v2 ``tool_call_update`` (an upsert) becomes
v1's ``tool_call`` the first time its id is seen and ``tool_call_update`` afterwards; a
``tool_call_content_chunk`` becomes a ``tool_call_update`` carrying the call's whole content;
a whole message (``user_message``, ``agent_message``, ``agent_thought``) not seen before
becomes one chunk per block. ``state_update`` and terminals have no v1 equivalent.
"""

from __future__ import annotations

from typing import Any

from ...errors import SchemaValidationError
from ...protocol.v2 import Update
from ...schema import _generated as s
from ...schema import parse
from ..state import SessionState
from .state import V2SessionState

__all__ = ["as_v1"]

_NO_V1 = frozenset({Update.STATE_UPDATE, Update.TERMINAL_UPDATE, Update.TERMINAL_OUTPUT_CHUNK})
#: whole-message kinds -> the v1 chunk kind and the role v1's state files them under
_WHOLE = {Update.USER_MESSAGE: (Update.USER_MESSAGE_CHUNK, "user"),
          Update.AGENT_MESSAGE: (Update.AGENT_MESSAGE_CHUNK, "agent"),
          Update.AGENT_THOUGHT: (Update.AGENT_THOUGHT_CHUNK, "thought")}


def as_v1(update: Any, v2_state: V2SessionState, v1_state: SessionState) -> list[Any]:
    """The v1 ``SessionUpdate`` equivalents of a v2 update (none, one, or a chunk per block).
    ``v2_state``: the session's v2 state with ``update`` applied; ``v1_state``: its v1 view
    before it."""
    kind = getattr(update, "session_update", None)
    if not isinstance(kind, str) or kind in _NO_V1:
        return []
    if kind in _WHOLE:
        chunk, role = _WHOLE[kind]
        if (role, update.message_id) in v1_state._by_id:
            return []
        return _read([{"sessionUpdate": chunk, "messageId": update.message_id, "content": b.to_wire()}
                      for b in update.content or []])
    wire = update.to_wire()
    if kind == Update.TOOL_CALL_CONTENT_CHUNK:
        call = v2_state.tool_calls.get(update.tool_call_id)
        wire = {"sessionUpdate": "tool_call_update", "toolCallId": update.tool_call_id,
                "content": [c.to_wire() for c in (call.content if call is not None else [update.content])]}
    elif kind == Update.TOOL_CALL_UPDATE and update.tool_call_id not in v1_state.tool_calls:
        wire = {**wire, "sessionUpdate": "tool_call", "title": wire.get("title") or ""}
    return _read([wire])


def _read(wires: list[dict[str, Any]]) -> list[Any]:
    try:
        return [parse(s.SessionUpdate, w) for w in wires]
    except SchemaValidationError:  # (a v2 shape v1 cannot read: no view)
        return []
