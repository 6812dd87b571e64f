"""Where an adapter keeps each ACP session's conversation: the one seam between a framework
adapter and storage. :class:`MemoryHistory` (the default) keeps it in this process."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["HistoryStore", "MemoryHistory"]


class HistoryStore(Protocol):
    """A session id → the framework's message list (Pydantic AI's ``ModelMessage`` list)."""

    def get(self, session_id: str) -> list[Any] | None:
        """The session's messages, None for a session this store never saw."""
        ...

    def put(self, session_id: str, messages: list[Any]) -> None:
        """Replace the session's messages."""
        ...


class MemoryHistory:
    """Histories in a dict: they live as long as the agent process."""

    def __init__(self) -> None:
        self.data: dict[str, list[Any]] = {}

    def get(self, session_id: str) -> list[Any] | None:
        messages = self.data.get(session_id)
        return None if messages is None else list(messages)

    def put(self, session_id: str, messages: list[Any]) -> None:
        self.data[session_id] = list(messages)
