"""What a decoded JSON-RPC message is, and which request a response answers.

The one classifier (:func:`message_kind`) and the one id matcher (:class:`CallMatcher`) of
acplink: the engine, the protocol's state machine,
the trace writer, the trace analyser and the conformance checker all use these, so a message is
never a request to one of them and a response to another. Sans-I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, Literal, TypeVar

__all__ = ["CallMatcher", "MessageKind", "message_kind", "other_direction", "usable_id"]

MessageKind = Literal["request", "notification", "response", "invalid"]

T = TypeVar("T")


def usable_id(rid: Any) -> bool:
    """Whether ``rid`` can name a request: ACP ids are strings or integers (not null, not a
    float, not a bool)."""
    return type(rid) in (int, str)


def message_kind(msg: Any) -> MessageKind:
    """The shape of one decoded message (its envelope only; ``jsonrpc`` and the id's type are
    checked by the caller where they matter):

    - ``request``: a string ``method`` and an ``id`` member;
    - ``notification``: a string ``method`` and no ``id``;
    - ``response``: no ``method`` (absent or null) and a ``result`` or ``error`` member;
    - ``invalid``: anything else (not an object, a non-string method, neither of the above).
    """
    if not isinstance(msg, dict):
        return "invalid"
    method = msg.get("method")
    if type(method) is str:
        return "request" if "id" in msg else "notification"
    if method is None and ("result" in msg or "error" in msg):
        return "response"
    return "invalid"


def other_direction(direction: str) -> str:
    """``c2a`` ↔ ``a2c``: the direction the answer to a message travels."""
    return "a2c" if direction == "c2a" else "c2a"


class CallMatcher(Generic[T]):
    """Requests in flight, both ways, by (direction, id): a response travelling one way answers
    the request with its id that travelled the other way, once.

    ``T`` is whatever the caller keeps about a request (its method, its params...). Requests
    without a usable id (see :func:`usable_id`) are never pending.
    """

    def __init__(self) -> None:
        self._pending: dict[tuple[str, int | str], T] = {}
        self._answered: set[tuple[str, int | str]] = set()

    def sent(self, direction: str, rid: Any, info: T) -> None:
        """A request with id ``rid`` travelled ``direction``."""
        if usable_id(rid):
            self._pending[(direction, rid)] = info

    def answer(self, direction: str, rid: Any) -> T | None:
        """A response with id ``rid`` travelled ``direction``: the request it answers (now
        answered), or None when no such request is pending."""
        if not usable_id(rid):
            return None
        key = (other_direction(direction), rid)
        info = self._pending.pop(key, None)
        if info is not None:
            self._answered.add(key)
        return info

    def peek(self, direction: str, rid: Any) -> T | None:
        """What :meth:`answer` would return, without answering."""
        return self._pending.get((other_direction(direction), rid)) if usable_id(rid) else None

    def answered(self, direction: str, rid: Any) -> bool:
        """Whether a response travelling ``direction`` with id ``rid`` would be a second one."""
        return usable_id(rid) and (other_direction(direction), rid) in self._answered

    def unanswered(self) -> Iterator[tuple[str, int | str, T]]:
        """The requests still pending: (direction, id, info)."""
        for (direction, rid), info in self._pending.items():
            yield direction, rid, info
