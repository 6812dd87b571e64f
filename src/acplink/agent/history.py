"""A session's history as a store keeps it: what was said and done, folded for replay.

A store journals every ``session/update`` the agent sent (and each prompt, and each turn's
end) as one event, in the order they were sent. Reading the journal folds it: the streamed
chunks of one message become one message, a tool call's updates become the call in its final
state, consecutive plans and usage reports of a turn keep their last one. What remains is the
history (:class:`HistoryEntry` list): replayed as updates by ``session/load``, given to the
prompt handler as ``ctx.history``.

Events are ``(turn, kind, update)``: ``kind`` is the update's ``sessionUpdate`` (or ``"prompt"``
for the user's prompt, ``"turn_end"`` for a turn's end, whose ``update`` is
``{"stopReason": ...}``). A turn that has a prompt but no end was interrupted (the agent
stopped mid-turn): its entry ``turn_end`` says so (``interrupted``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HistoryEntry", "fold", "fold_rows", "replay_updates"]

#: the update kinds kept in the history (others, such as mode or command announcements, are
#: session state, kept with the session's metadata)
KEPT = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
                  "tool_call_update", "plan", "usage_update"})
#: the kinds whose chunks are folded into one message
_CHUNKS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})
#: the kinds of which a turn keeps the last one of a run
_LATEST = frozenset({"plan", "usage_update"})


@dataclass
class HistoryEntry:
    """One item of a session's history.

    ``kind``: ``"user_message"``, ``"agent_message"``, ``"agent_thought"`` (``content``: the
    message's content blocks, wire form), ``"tool_call"`` (in its final state), ``"plan"``,
    ``"usage"``, or ``"turn_end"`` (``stop_reason``; ``interrupted`` when the agent stopped
    mid-turn). ``turn``: the number of the prompt turn it belongs to (1, 2, ...). ``update``:
    the ``session/update`` it replays as (wire form, ACP v1; None for ``turn_end``).
    """

    kind: str
    turn: int
    update: dict[str, Any] | None = None
    stop_reason: str | None = None
    interrupted: bool = False
    content: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The text blocks of a message, joined ("" for other kinds)."""
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    @property
    def model(self) -> Any:
        """The update as its typed model (``acplink.schema``), None for ``turn_end``."""
        if self.update is None:
            return None
        from ..schema import _generated as s
        from ..schema._parse import parse

        return parse(s.SessionNotification, {"sessionId": "-", "update": self.update}).update


_KIND_NAMES = {"user_message_chunk": "user_message", "agent_message_chunk": "agent_message",
               "agent_thought_chunk": "agent_thought", "tool_call": "tool_call", "plan": "plan",
               "usage_update": "usage"}


def fold(events: Iterable[tuple[int, str, dict[str, Any]]], *, running: int | None = None) -> list[HistoryEntry]:
    """The history of a journal (``(turn, kind, update)`` events, in order). ``running``: the
    turn still running in this process (not marked interrupted)."""
    out: list[HistoryEntry] = []
    calls: dict[str, HistoryEntry] = {}
    last_turn = 0
    ended = True
    for turn, kind, update in events:
        if kind == "prompt":
            if not ended:
                out.append(HistoryEntry("turn_end", last_turn, interrupted=True))
            last_turn, ended = turn, False
            calls = {}
            blocks = update.get("prompt") or []
            upd = {"sessionUpdate": "user_message_chunk", "content": blocks[0] if len(blocks) == 1 else None}
            entry = HistoryEntry("user_message", turn, upd, content=[dict(b) for b in blocks])
            out.append(entry)
            continue
        if kind == "turn_end":
            out.append(HistoryEntry("turn_end", turn, stop_reason=update.get("stopReason")))
            ended = True
            continue
        if kind not in KEPT:
            continue
        if kind in _CHUNKS:
            block = update.get("content")
            prev = out[-1] if out else None
            mid = update.get("messageId")
            if (prev is not None and prev.update is not None and prev.update.get("sessionUpdate") == kind
                    and prev.turn == turn and prev.update.get("messageId") == mid and isinstance(block, dict)):
                _append_block(prev.content, block)
                continue
            entry = HistoryEntry(_KIND_NAMES[kind], turn, dict(update), content=[dict(block)] if isinstance(block, dict) else [])
            out.append(entry)
            continue
        if kind == "tool_call":
            entry = HistoryEntry("tool_call", turn, dict(update))
            calls[str(update.get("toolCallId"))] = entry
            out.append(entry)
            continue
        if kind == "tool_call_update":
            call = calls.get(str(update.get("toolCallId")))
            if call is None or call.update is None:  # (an update of a call of another turn: kept as it is)
                out.append(HistoryEntry("tool_call", turn, {**update, "sessionUpdate": "tool_call",
                                                            "title": update.get("title") or ""}))
                continue
            merged = {k: v for k, v in update.items() if k != "sessionUpdate"}
            call.update.update(merged)
            continue
        # plan / usage: the last of a run in one turn
        prev = out[-1] if out else None
        if prev is not None and prev.update is not None and prev.update.get("sessionUpdate") == kind and prev.turn == turn:
            prev.update = dict(update)
            continue
        out.append(HistoryEntry(_KIND_NAMES[kind], turn, dict(update)))
    if not ended and last_turn != running:
        out.append(HistoryEntry("turn_end", last_turn, interrupted=True))
    for e in out:  # the folded messages: one content block per message on the wire
        if e.kind in ("user_message", "agent_message", "agent_thought") and e.update is not None:
            e.update = {**e.update, "content": e.content[0] if len(e.content) == 1 else _joined(e.content)}
    return out


def fold_rows(rows: Iterable[tuple[int, str, bytes | str]], *, running: int | None = None) -> list[HistoryEntry]:
    """:func:`fold` over a store's journal rows ``(turn, kind, body)``: ``body`` is the event as
    JSON (an update, or the ``session/update`` params it was sent in)."""
    import orjson

    loads = orjson.loads

    def events() -> Iterable[tuple[int, str, dict[str, Any]]]:
        for turn, kind, body in rows:
            value = loads(body)
            yield turn, kind, value.get("update", value) if "sessionId" in value else value

    return fold(events(), running=running)


def _append_block(content: list[dict[str, Any]], block: dict[str, Any]) -> None:
    if content and block.get("type") == "text" and content[-1].get("type") == "text":
        content[-1] = {**content[-1], "text": content[-1]["text"] + block.get("text", "")}
    else:
        content.append(dict(block))


def _joined(content: list[dict[str, Any]]) -> dict[str, Any]:
    """One block standing for several (a message's replay update carries one block): the text
    of the text blocks (other blocks are kept in ``content`` of the entry)."""
    return {"type": "text", "text": "".join(b.get("text", "") for b in content if b.get("type") == "text")}


def replay_updates(history: list[HistoryEntry]) -> list[dict[str, Any]]:
    """The ``session/update`` updates that replay ``history`` (ACP v1 wire form): a message of
    several blocks replays as one update per block, so nothing of it is lost."""
    out: list[dict[str, Any]] = []
    for e in history:
        if e.update is None:
            continue
        if e.kind in ("user_message", "agent_message", "agent_thought") and len(e.content) > 1:
            out.extend({**e.update, "content": b} for b in e.content)
        elif e.kind in ("user_message", "agent_message", "agent_thought") and not e.content:
            continue
        else:
            out.append(e.update)
    return out
