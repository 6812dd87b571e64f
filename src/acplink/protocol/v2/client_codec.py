"""The client side of ACP v2 in acplink's vocabulary (v1's models): the v2 :class:`ClientCodec`.

* Updates (:meth:`V2ClientCodec.views`): most v2 ``session/update`` kinds have the same wire
  shape as their v1 namesakes (message and thought chunks, plans, commands, config options,
  usage, notices, compactions, subagents, session messages) and are read as v1 models. A v2
  ``tool_call_update`` (an upsert) becomes v1's ``tool_call`` the first time its id is seen and
  ``tool_call_update`` afterwards; a ``tool_call_content_chunk`` becomes a
  ``tool_call_update`` carrying the call's whole content; a whole message (``user_message``,
  ``agent_message``, ``agent_thought``) not seen before becomes one chunk per block.
  ``state_update`` and terminals have no v1 equivalent (they are in the native state,
  :class:`~acplink.protocol.v2.client_state.V2SessionState`). A diff's ``git_patch`` becomes
  v1 diffs (``oldText`` / ``newText`` from its hunks: :mod:`acplink.protocol.v2.patch`).
* Permission requests: a v2 request names its subject (a tool call, a command) and a title; the
  policy decides the v1 request built from them, and its answer goes back as v2's outcome.
* Capabilities: a v2 client advertises elicitation only (v2 has no fs or terminal client
  methods: an agent calling them gets ``-32601`` with a hint to use MCP-over-ACP).
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

from ...errors import SchemaValidationError
from ...schema import _generated as s
from ...schema import parse
from ..codec import ClientCodec
from . import V1_ONLY_METHODS, Update
from .client_state import V2SessionState
from .patch import v1_diff

__all__ = ["CODEC", "V2ClientCodec", "as_v1"]

_NO_V1 = frozenset({Update.STATE_UPDATE, Update.TERMINAL_UPDATE, Update.TERMINAL_OUTPUT_CHUNK})
#: whole-message kinds -> the v1 chunk kind and the role v1's state files them under
_WHOLE = {Update.USER_MESSAGE: (Update.USER_MESSAGE_CHUNK, "user"),
          Update.AGENT_MESSAGE: (Update.AGENT_MESSAGE_CHUNK, "agent"),
          Update.AGENT_THOUGHT: (Update.AGENT_THOUGHT_CHUNK, "thought")}


def as_v1(update: Any, v2_state: V2SessionState, v1_state: Any) -> list[Any]:
    """The v1 ``SessionUpdate`` equivalents of a v2 update (none, one, or a chunk per block).
    ``v2_state``: the session's v2 state with ``update`` applied; ``v1_state``: its v1 view
    (a :class:`~acplink.client.SessionState`) before it."""
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
    if isinstance(wire.get("content"), list):  # (v2's diffs: v1's, from their patch)
        wire = {**wire, "content": [v1 for item in wire["content"] for v1 in _v1_content(item)]}
    return _read([wire])


def _v1_content(item: Any) -> list[Any]:
    return v1_diff(item) if isinstance(item, dict) and item.get("type") == "diff" else [item]


def _read(wires: list[dict[str, Any]]) -> list[Any]:
    try:
        return [parse(s.SessionUpdate, w) for w in wires]
    except SchemaValidationError:  # (a v2 shape v1 cannot read: no view)
        return []


_MCP_HINT = " (ACP v2 has no fs/terminal client methods: use MCP-over-ACP)"


class V2ClientCodec(ClientCodec):
    """ACP v2's client side in acplink's vocabulary (see the module doc)."""

    unsupported = MappingProxyType({m: _MCP_HINT for m in V1_ONLY_METHODS if m.startswith(("fs/", "terminal/"))})

    def capabilities(self, caps: dict[str, Any]) -> dict[str, Any]:
        return {"elicitation": {"form": {}}} if caps.get("elicitation") else {}

    def new_state(self, session_id: str) -> V2SessionState:
        return V2SessionState(session_id)

    def views(self, update: Any, native: Any, state: Any) -> list[Any]:
        return as_v1(update, native, state)

    def apply_setup(self, native: Any, response: Any) -> None:
        native.apply_session_setup(response)

    def set_config_options(self, native: Any, options: list[Any]) -> None:
        native.config_options = options

    def permission_request(self, params: Any, known: Callable[[str], Any]) -> s.RequestPermissionRequest:
        subject = params.subject
        call: dict[str, Any] = {"toolCallId": "", "title": params.title}
        tool = getattr(subject, "tool_call", None)
        if tool is not None:
            call = {"toolCallId": tool.tool_call_id, "title": tool.title or params.title, "kind": tool.kind}
        elif getattr(subject, "command", None) is not None:
            call = {"toolCallId": subject.tool_call_id or "", "title": params.title, "kind": "execute"}
        if call.get("kind") is None and call["toolCallId"]:
            seen = known(call["toolCallId"])
            call["kind"] = getattr(seen, "kind", None)
        return s.RequestPermissionRequest.model_validate({
            "sessionId": params.session_id, "toolCall": {k: v for k, v in call.items() if v is not None},
            "options": [o.to_wire() for o in params.options], "_meta": params.meta})

    def permission_answer(self, answer: Any) -> dict[str, Any]:
        outcome = answer.to_wire().get("outcome", {})
        if outcome.get("outcome") not in ("selected", "cancelled"):  # (v1-only outcomes, e.g. timeout)
            outcome = {"outcome": "cancelled"}
        return {"outcome": outcome}

    def prompt_refusal(self, blocks: list[Any]) -> str | None:
        return "a prompt needs at least one content block" if not blocks else None


#: the codec object of ``protocol.v2`` (``Protocol.client_codec``)
CODEC = V2ClientCodec()
