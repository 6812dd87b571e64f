"""The ACP v2 (draft) reducer: folds ``session/update`` notifications into one session's state.

v2 updates are upserts keyed by id (a message, tool call, terminal, plan, compaction, subagent,
session message): the first update for an id creates the entity, later ones patch it. In a
patch, a field that is absent leaves the value unchanged, ``null`` clears it and a value
replaces it; the reducer reads which fields were present from ``model_fields_set``. Chunks
(``*_chunk``) append to the entity they name. ``state_update`` carries the session's
foreground state (``running`` / ``requires_action`` / ``idle`` + stop reason) and its
background work. Pure: no I/O, no asyncio.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from ...schema import v2 as m
from ..entities import (
    CompactionState,
    PlanState,
    SessionMessageState,
    SubagentState,
    _patch,
    apply_compaction,
    apply_session_message,
    apply_subagent,
    entity,
    plan_of,
)

__all__ = ["V2Message", "V2SessionState", "V2TerminalState", "V2ToolCallState", "stop_reason_of", "state_of"]

_STATE_TYPES: tuple[type[Any], ...] | None = None


def _state_types() -> tuple[type[Any], ...]:
    global _STATE_TYPES
    if _STATE_TYPES is None:
        _STATE_TYPES = (m.RunningStateUpdate, m.RequiresActionStateUpdate, m.UnknownStateUpdate,
                        m.StateUpdateOther, m.IdleStateUpdateEndTurn, m.IdleStateUpdateMaxTokens,
                        m.IdleStateUpdateMaxTurnRequests, m.IdleStateUpdateRefusal, m.IdleStateUpdateCancelled,
                        m.IdleStateUpdateError, m.IdleStateUpdateNone, m.IdleStateUpdateOther)
    return _STATE_TYPES


def state_of(update: Any) -> str | None:
    """The foreground state a ``state_update`` reports (``"idle"``, ``"running"``, …), else None.

    (The models only take a ``state_update`` as one of these: another kind never parses as a
    state, so the type says it all.)"""
    if isinstance(update, _state_types()):
        state: str = update.state
        return state
    return None


def _tag(update: Any) -> Any:
    """The ``sessionUpdate`` tag an update arrived with (state models keep it as an extra)."""
    tag = getattr(update, "session_update", None)
    return tag if tag is not None else (getattr(update, "model_extra", None) or {}).get("sessionUpdate")


def stop_reason_of(update: Any) -> str | None:
    """The stop reason of an idle ``state_update`` (``None`` when it has none)."""
    reason = getattr(update, "stop_reason", None) if state_of(update) == "idle" else None
    return reason if isinstance(reason, str) else None


def _text(blocks: list[Any]) -> str:
    return "".join(b.text for b in blocks if isinstance(b, m.TextContent))


@dataclass
class V2Message:
    """One message of the conversation (``user``, ``agent`` or ``thought``), by message id."""

    role: str
    message_id: str
    blocks: list[Any] = field(default_factory=list)
    meta: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        return _text(self.blocks)


@dataclass
class V2ToolCallState:
    """The merged view of one tool call (``tool_call_update`` upserts + content chunks)."""

    tool_call_id: str
    title: str | None = None
    name: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[Any] = field(default_factory=list)
    locations: list[Any] = field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    capabilities: Any = None
    meta: dict[str, Any] | None = None

    @property
    def done(self) -> bool:
        """True once the tool call reached a final status."""
        return self.status in ("completed", "failed", "cancelled")

    @property
    def cancellable(self) -> bool:
        """Whether the agent currently offers ``tool_call/cancel`` for it."""
        return getattr(self.capabilities, "cancel", None) is not None and not self.done


@dataclass
class V2TerminalState:
    """An agent-owned display terminal (``terminal_update`` upserts + output chunks)."""

    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: bytes = b""
    exit_status: Any = None
    size: Any = None
    capabilities: Any = None
    meta: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", "replace")


def _decode(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return data.encode()


class V2SessionState:
    """The client-side state of one v2 session, reduced from its updates.

    * ``messages`` (user and agent, in creation order) and ``thoughts``: :class:`V2Message`
      by id in ``message_by_id``; ``tool_calls``, ``terminals``, ``plans``, ``compactions``,
      ``subagents``, ``session_messages``: dicts by id, in creation order.
    * ``state``: the foreground state (``None`` before the first ``state_update``),
      ``stop_reason`` / ``error`` / ``turn_usage`` of the last idle, ``background`` (the last
      reported list, ``None`` when not reported).
    * ``available_commands``, ``config_options``, ``title``, ``updated_at``, ``usage``,
      ``notices``; ``unknown``: updates of kinds this version does not know (raw data kept);
      ``warnings``.
    """

    def __init__(self, session_id: str | None = None) -> None:
        self.session_id = session_id
        self.updates_seen = 0
        self.messages: list[V2Message] = []
        self.thoughts: list[V2Message] = []
        self.message_by_id: dict[tuple[str, str], V2Message] = {}
        self.tool_calls: dict[str, V2ToolCallState] = {}
        self.terminals: dict[str, V2TerminalState] = {}
        self.plans: dict[str, PlanState] = {}
        self.compactions: dict[str, CompactionState] = {}
        self.subagents: dict[str, SubagentState] = {}
        self.session_messages: dict[str, SessionMessageState] = {}
        self.state: str | None = None
        self.stop_reason: str | None = None
        self.error: Any = None
        self.background: list[Any] | None = None
        self.available_commands: list[Any] = []
        self.config_options: list[Any] = []
        self.title: str | None = None
        self.updated_at: str | None = None
        self.info_meta: dict[str, Any] | None = None
        self.usage: Any = None
        self.turn_usage: Any = None
        self.notices: list[Any] = []
        self.unknown: list[Any] = []
        self.warnings: list[str] = []

    def apply_session_setup(self, response: Any) -> None:
        """Config options and commands of a ``session/new`` / ``resume`` / ``fork`` response."""
        present = response.model_fields_set
        if "config_options" in present and response.config_options is not None:
            self.config_options = list(response.config_options)
        if "available_commands" in present and response.available_commands is not None:
            self.available_commands = list(response.available_commands)

    def apply(self, update: Any) -> None:
        """Fold one v2 ``SessionUpdate`` (or a whole ``UpdateSessionNotification``)."""
        if isinstance(update, m.UpdateSessionNotification):
            update = update.update
        kind = _tag(update)
        if state_of(update) is not None:
            self._state(update)
        elif isinstance(update, m.SessionUpdateOther) or (isinstance(update, _state_types()) and kind):
            self.unknown.append(update)  # (an unknown kind; its raw data is kept)
        elif isinstance(kind, str) and kind in _HANDLERS:
            _HANDLERS[kind](self, update)
        else:
            raise TypeError(f"not a v2 SessionUpdate: {type(update).__name__}")
        self.updates_seen += 1

    # -- conversation -----------------------------------------------------------------------

    def _message(self, role: str, message_id: str) -> V2Message:
        found = self.message_by_id.get((role, message_id))
        if found is None:
            found = self.message_by_id[(role, message_id)] = V2Message(role=role, message_id=message_id)
            (self.thoughts if role == "thought" else self.messages).append(found)
        return found

    def _chunk(self, role: str, update: Any) -> None:
        self._message(role, update.message_id).blocks.append(update.content)

    def _whole(self, role: str, update: Any) -> None:
        msg = self._message(role, update.message_id)
        present = update.model_fields_set
        if "content" in present:
            msg.blocks = list(update.content or [])
        if "meta" in present:
            msg.meta = update.meta

    @property
    def last_agent_message(self) -> V2Message | None:
        return next((msg for msg in reversed(self.messages) if msg.role == "agent"), None)

    @property
    def agent_text(self) -> str:
        """The text of every agent message, joined by blank lines."""
        return "\n\n".join(msg.text for msg in self.messages if msg.role == "agent")

    # -- state ------------------------------------------------------------------------------

    def _state(self, update: Any) -> None:
        self.state = update.state
        present = update.model_fields_set
        self.background = list(update.background) if "background" in present and update.background is not None \
            else None
        if update.state == "idle":
            self.stop_reason = stop_reason_of(update)
            self.error = getattr(update, "error", None)
            if "usage" in present:
                self.turn_usage = update.usage

    # -- entities ---------------------------------------------------------------------------

    def _tool_call(self, update: Any) -> None:
        state = entity(self.tool_calls, update.tool_call_id, V2ToolCallState)
        _patch(state, update, ("title", "name", "kind", "status", "raw_input", "raw_output", "capabilities", "meta"))
        present = update.model_fields_set
        if "content" in present:
            state.content = list(update.content or [])
        if "locations" in present:
            state.locations = list(update.locations or [])

    def _tool_call_chunk(self, update: Any) -> None:
        state = self.tool_calls.get(update.tool_call_id)
        if state is None:
            self.warnings.append(f"tool_call_content_chunk for unknown tool call {update.tool_call_id!r}")
            state = self.tool_calls[update.tool_call_id] = V2ToolCallState(tool_call_id=update.tool_call_id)
        state.content.append(update.content)

    def _terminal(self, update: Any) -> None:
        state = entity(self.terminals, update.terminal_id, V2TerminalState)
        _patch(state, update, ("command", "cwd", "exit_status", "size", "capabilities", "meta"))
        if "output" in update.model_fields_set:
            state.output = _decode(update.output.data) if update.output is not None else b""

    def _terminal_chunk(self, update: Any) -> None:
        state = self.terminals.get(update.terminal_id)
        if state is None:
            self.warnings.append(f"terminal_output_chunk for unknown terminal {update.terminal_id!r}")
            state = self.terminals[update.terminal_id] = V2TerminalState(terminal_id=update.terminal_id)
        state.output += _decode(update.data)

    def _plan(self, update: Any) -> None:
        content = update.plan
        new = plan_of(content, (m.PlanItems, m.PlanFile, m.PlanMarkdown))
        if new is None:  # an unknown plan type: kept raw, still addressed by its id
            raw = content.to_wire()
            new = PlanState(str(raw.get("planId")), "unknown", raw=raw)
        plan_id = str(new.plan_id)
        self.plans.pop(plan_id, None)  # dict order: the plan updated last comes last
        self.plans[plan_id] = new

    def _plan_removed(self, update: Any) -> None:
        if self.plans.pop(update.plan_id, None) is None:
            self.warnings.append(f"plan_removed for unknown plan {update.plan_id!r}")

    @property
    def plan(self) -> PlanState | None:
        """The plan updated last."""
        return next(reversed(self.plans.values()), None) if self.plans else None

    def _info(self, update: Any) -> None:
        _patch(self, update, ("title", "updated_at"))
        if "meta" in update.model_fields_set:
            self.info_meta = update.meta

    def __repr__(self) -> str:
        return (f"<V2SessionState {self.session_id or '?'}: {self.state or 'no state'}"
                f"{f' ({self.stop_reason})' if self.stop_reason else ''}, {len(self.messages)} messages, "
                f"{len(self.tool_calls)} tool calls>")


_HANDLERS: dict[str, Any] = {
    "user_message_chunk": lambda st, u: st._chunk("user", u),
    "agent_message_chunk": lambda st, u: st._chunk("agent", u),
    "agent_thought_chunk": lambda st, u: st._chunk("thought", u),
    "user_message": lambda st, u: st._whole("user", u),
    "agent_message": lambda st, u: st._whole("agent", u),
    "agent_thought": lambda st, u: st._whole("thought", u),
    "tool_call_update": V2SessionState._tool_call,
    "tool_call_content_chunk": V2SessionState._tool_call_chunk,
    "terminal_update": V2SessionState._terminal,
    "terminal_output_chunk": V2SessionState._terminal_chunk,
    "plan_update": V2SessionState._plan,
    "plan_removed": V2SessionState._plan_removed,
    "available_commands_update": lambda st, u: setattr(st, "available_commands", list(u.available_commands)),
    "config_option_update": lambda st, u: setattr(st, "config_options", list(u.config_options)),
    "session_info_update": V2SessionState._info,
    "usage_update": lambda st, u: setattr(st, "usage", u),
    "notice": lambda st, u: st.notices.append(u),
    "compaction_update": lambda st, u: apply_compaction(st.compactions, u),
    "compaction_summary_chunk": lambda st, u: entity(st.compactions, u.compaction_id,
                                                     CompactionState).summary.append(u.content),
    "subagent_update": lambda st, u: apply_subagent(st.subagents, u),
    "session_message": lambda st, u: apply_session_message(st.session_messages, u),
    "session_message_chunk": lambda st, u: entity(st.session_messages, u.message_id,
                                                  SessionMessageState).content.append(u.content),
}
