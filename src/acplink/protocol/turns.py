"""How a prompt turn runs, as data each protocol version supplies (sans-I/O).

Every ACP version has prompt turns: the client sends ``session/prompt``, the agent works and
streams ``session/update`` notifications, and the turn ends with a stop reason. What differs
between versions is the lifecycle, and it is all in one :class:`TurnRules` value:

- **how the prompt is answered** (``answer``): ``"end"``, the response ends the turn and
  carries the stop reason (v1); or ``"receipt"``, the response comes as soon as the prompt is
  accepted and a later *state* update ends the turn (v2: ``state_update`` ``idle``);
- **a prompt while a turn runs** (``busy``): ``"refuse"`` (v1: one turn per session) or
  ``"hold"`` (v2: queued by the agent and started when the running turn ends);
- **the state update** (``state_kind``, and the state names): which ``session/update`` kind
  reports the session's foreground state, which state ends a turn, which one means the turn
  waits for the user, and which kind echoes an accepted prompt (``echo_kind``).

Every side reads the same value: the agent's connection runs the lifecycle from it, the
client's prompt turn ends where it says, and the trace analyser and the checker judge recorded
traffic with it. A new version with another lifecycle is a new ``TurnRules`` (see the toy
version 99 in ``tests/protocol/``), not new code in the connections.

Updates are read here either as wire dicts (``{"sessionUpdate": ..., "state": ...}``) or as
models (``session_update``, ``state``, ``stop_reason`` attributes), so the live connections
(which hold models) and the analysers (which hold JSON) share one reading.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["V1_TURNS", "V2_TURNS", "PromptAction", "TurnEnd", "TurnRules", "update_kind"]

#: what becomes of a ``session/prompt`` for a known session (:meth:`TurnRules.prompt_action`)
PromptAction = Literal["start", "hold", "refuse"]


@dataclass(frozen=True)
class TurnEnd:
    """How a turn ended: its stop reason and, when it failed, the error (a wire dict)."""

    stop_reason: str | None
    error: Mapping[str, Any] | None = None


def _get(update: Any, wire: str, attr: str) -> Any:
    if isinstance(update, Mapping):
        return update.get(wire)
    value = getattr(update, attr, None)
    if value is None:  # (a model may keep a field it does not declare as an extra)
        extra = getattr(update, "model_extra", None)
        if extra:
            value = extra.get(wire)
    return value


def update_kind(update: Any) -> str | None:
    """The ``sessionUpdate`` tag of an update (a wire dict or a model)."""
    kind = _get(update, "sessionUpdate", "session_update")
    return kind if isinstance(kind, str) else None


@dataclass(frozen=True)
class TurnRules:
    """The prompt-turn lifecycle of one protocol version (see the module's doc)."""

    #: "end": the prompt's response ends the turn (v1); "receipt": it comes at once and a
    #: state update ends the turn (v2)
    answer: Literal["end", "receipt"] = "end"
    #: a prompt for a session whose turn runs: "refuse" it, or "hold" it until the turn ends
    busy: Literal["refuse", "hold"] = "refuse"
    #: the update kind that reports the session's state (None: the version has none)
    state_kind: str | None = None
    #: the state that ends a turn, the state of a running turn, the state of a turn waiting for
    #: the user
    idle_state: str = "idle"
    running_state: str = "running"
    waiting_state: str = "requires_action"
    #: the update kind with which the agent echoes an accepted prompt (None: no echo)
    echo_kind: str | None = None
    #: update kinds that belong to a running turn (never after its end)
    turn_update_kinds: frozenset[str] = frozenset()
    #: the stop reason of a turn the handler ended without one, and of a cancelled one
    default_stop_reason: str = "end_turn"
    #: the known stop reasons (``_``-prefixed ones are custom, where the version allows them)
    stop_reasons: frozenset[str] = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})

    @property
    def receipt(self) -> bool:
        """Whether the prompt is answered with a receipt (the turn ends later, by an update)."""
        return self.answer == "receipt"

    def prompt_action(self, running: bool) -> PromptAction:
        """THE busy rule, read by every side (the agent's connection, the client's session, the
        state machine): a prompt for a session with no running turn starts one; during a turn it
        is held or refused, as ``busy`` says (the reason of a refusal:
        :func:`acplink.protocol.rules.prompt_refusal`)."""
        return "start" if not running else self.busy

    def state_of(self, update: Any) -> str | None:
        """The state a state update reports (None: ``update`` is not a state update)."""
        if self.state_kind is None or update_kind(update) != self.state_kind:
            return None
        state = _get(update, "state", "state")
        return state if isinstance(state, str) else None

    def end_of(self, update: Any) -> TurnEnd | None:
        """How the turn ends, when ``update`` ends one (receipt versions); else None."""
        if not self.receipt or self.state_of(update) != self.idle_state:
            return None
        reason = _get(update, "stopReason", "stop_reason")
        error = _get(update, "error", "error")
        if error is not None and not isinstance(error, Mapping):
            error = error.to_wire() if hasattr(error, "to_wire") else None
        return TurnEnd(reason if isinstance(reason, str) else None, error)

    def end_of_response(self, result: Any) -> TurnEnd | None:
        """How the turn ends, when the prompt's response ends it (``answer == "end"``)."""
        if self.receipt:
            return None
        reason = _get(result, "stopReason", "stop_reason") if result is not None else None
        return TurnEnd(reason if isinstance(reason, str) else None)

    def is_turn_update(self, kind: str | None) -> bool:
        """Whether an update of ``kind`` belongs to a running turn (only during one)."""
        return kind in self.turn_update_kinds

    def is_echo(self, update: Any) -> bool:
        return self.echo_kind is not None and update_kind(update) == self.echo_kind

    # -- the messages of a receipt lifecycle (what the agent side sends; wire dicts) ---------------

    def state_update(self, state: str, stop_reason: str | None = None,
                     error: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The update that reports ``state`` (with the turn's stop reason and error at its end)."""
        out: dict[str, Any] = {"sessionUpdate": self.state_kind, "state": state}
        if stop_reason is not None:
            out["stopReason"] = stop_reason
        if error is not None:
            out["error"] = dict(error)
        return out

    def echo_update(self, message_id: str, content: list[Any]) -> dict[str, Any] | None:
        """The echo of an accepted prompt (None: this version does not echo)."""
        if self.echo_kind is None:
            return None
        return {"sessionUpdate": self.echo_kind, "messageId": message_id, "content": content}

    def receipt_result(self, message_id: str) -> dict[str, Any]:
        """The answer to an accepted prompt (``answer == "receipt"``): the inserted message's id."""
        return {"messageId": message_id}


#: ACP v1: the prompt's response ends the turn; one turn per session
V1_TURNS = TurnRules(
    answer="end",
    busy="refuse",
    turn_update_kinds=frozenset({"agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call",
                                 "tool_call_update", "plan"}),
)

#: ACP v2: a receipt answers the prompt; ``state_update`` ``idle`` ends the turn; prompts sent
#: during a turn are held
V2_TURNS = TurnRules(
    answer="receipt",
    stop_reasons=frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"}),
    busy="hold",
    state_kind="state_update",
    echo_kind="user_message",
    turn_update_kinds=frozenset({"agent_message_chunk", "agent_message", "agent_thought_chunk", "agent_thought",
                                 "tool_call_update", "tool_call_content_chunk", "plan_update"}),
)
