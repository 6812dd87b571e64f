"""The session-store seam: where an app keeps its sessions (``AgentApp(store=...)``).

An app's sessions (:class:`~acplink.agent.context.AgentSession`: cwd, mode, config values,
the conversation served so far, ...) live in a :class:`SessionStore`, a mapping from session
id to session. The default, :class:`MemoryStore`, is a plain ``dict``: today's behaviour,
nothing survives the process. A persistent store (SQLite, PostgreSQL) implements the same
mapping operations, each in a module of its own with its driver as an optional extra; the app,
its dispatcher and the connections only ever use the operations listed here.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from .context import AgentSession

__all__ = ["MemoryStore", "SessionStore"]

#: What the app needs of a session store: a mutable mapping ``session id → AgentSession``
#: (``get``, ``[]``, ``in``, ``len``, iteration, ``pop``, ``values``). A persistent store
#: subclasses :class:`collections.abc.MutableMapping`.
SessionStore: TypeAlias = "MutableMapping[str, AgentSession]"


class MemoryStore(dict[str, "AgentSession"]):
    """The default store: sessions in memory, for the life of the process (a ``dict``, so
    the per-message lookups cost what a dict lookup costs)."""
