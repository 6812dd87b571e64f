"""Assertion helpers over what a :class:`FakeClient` saw, with readable failure messages."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["assert_tool_call", "assert_turn", "assert_updates_in_order"]


class _HasUpdates(Protocol):
    updates: list[Any]


def _kind(update: Any) -> str:
    return str(getattr(update, "session_update", type(update).__name__))


def _listing(items: Sequence[str]) -> str:
    return "\n".join(f"  {i}. {item}" for i, item in enumerate(items, 1)) or "  (none)"


def assert_turn(turn: Any, *, stop_reason: str | None = "end_turn", text: str | None = None,
                contains: str | None = None) -> None:
    """The turn (a :class:`TurnRecord`) ended with ``stop_reason`` and its reply is ``text``
    (or ``contains`` a substring)."""
    problems = []
    if stop_reason is not None and turn.stop_reason != stop_reason:
        problems.append(f"stop reason: expected {stop_reason!r}, got {turn.stop_reason!r}")
    if text is not None and turn.text != text:
        diff = "\n".join(difflib.unified_diff(text.splitlines(), turn.text.splitlines(), "expected reply",
                                              "actual reply", lineterm=""))
        problems.append(f"reply text differs:\n{diff}" if diff else
                        f"reply text differs: expected {text!r}, got {turn.text!r}")
    if contains is not None and contains not in turn.text:
        problems.append(f"reply does not contain {contains!r}; reply: {turn.text!r}")
    if problems:
        raise AssertionError("turn check failed:\n" + "\n".join(problems))


def assert_updates_in_order(seen: _HasUpdates, kinds: Sequence[str]) -> None:
    """The ``session/update`` kinds ``kinds`` arrived in this order (others may come between)."""
    actual = [_kind(u) for u in seen.updates]
    pos = 0
    for i, want in enumerate(kinds):
        while pos < len(actual) and actual[pos] != want:
            pos += 1
        if pos == len(actual):
            raise AssertionError(
                f"update {i + 1} of the expected order, {want!r}, was not found after the ones before it\n"
                f"expected (in order):\n{_listing(list(kinds))}\nactual updates:\n{_listing(actual)}")
        pos += 1


def assert_tool_call(seen: _HasUpdates, *, title: str | None = None, kind: str | None = None,
                     status: str | None = None, tool_call_id: str | None = None) -> dict[str, Any]:
    """A tool call matching every given field was reported (its fields after all its updates:
    the announced ``tool_call`` merged with its ``tool_call_update`` messages). Returns it."""
    calls: dict[str, dict[str, Any]] = {}
    for u in seen.updates:
        if _kind(u) not in ("tool_call", "tool_call_update"):
            continue
        fields = {k: v for k, v in u.model_dump(mode="json", by_alias=False, exclude_none=True).items() if k != "session_update"}
        calls.setdefault(fields["tool_call_id"], {}).update(fields)
    want = {k: v for k, v in (("title", title), ("kind", kind), ("status", status),
                              ("tool_call_id", tool_call_id)) if v is not None}
    for call in calls.values():
        if all(call.get(k) == v for k, v in want.items()):
            return call
    shown = [", ".join(f"{k}={call.get(k)!r}" for k in ("tool_call_id", "title", "kind", "status"))
             for call in calls.values()]
    raise AssertionError(f"no tool call with {', '.join(f'{k}={v!r}' for k, v in want.items())}\n"
                         f"tool calls seen:\n{_listing(shown)}")
