"""The session-store seam: where an app keeps its sessions (``AgentApp(store=...)``).

An app's sessions (:class:`~acplink.agent.context.AgentSession`: cwd, mode, config values,
the conversation served so far, ...) live in a :class:`SessionStore`, a mapping from session
id to the sessions held open in this process. The default, :class:`MemoryStore`, is a plain
``dict``: today's behaviour, nothing survives the process, and the app answers the session
methods it registers itself.

A :class:`HistoryStore` (:class:`~acplink.agent.store_sqlite.SqliteStore`) also keeps every
session it ever held, closed or not, with its history (:mod:`.history`): given one, acplink
answers ``session/list``, ``session/load``, ``session/resume``, ``session/fork``,
``session/delete``, ``session/archive`` / ``unarchive``, ``session/set_title`` and
``session/status`` itself (:mod:`._store_hooks`) and journals what each turn sends. The mapping
operations stay "the sessions held now" (``len`` counts against ``max_sessions``; deleting an
item releases it from memory, its record stays); the other operations are the record's.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import MutableMapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from .context import AgentSession
    from .history import HistoryEntry

__all__ = ["LOCAL_PRINCIPAL", "HistoryStore", "MemoryStore", "SessionRecord", "SessionStore"]

#: The principal of a connection no token identifies (stdio, a server without a token): one
#: local user. A server with tokens names each token's principal by a stable id derived from
#: it (:func:`acplink.server.principal_of_token`); a session belongs to the principal that
#: created it, and another principal is told it does not exist (docs/sessions.md).
LOCAL_PRINCIPAL = "local"

#: the principal of the connection whose request runs now (set while it is handled): a
#: session created during it (``AgentBase.create_session``) is that principal's
current_principal: ContextVar[str] = ContextVar("acplink_principal", default=LOCAL_PRINCIPAL)

#: What the app needs of a session store: a mutable mapping ``session id → AgentSession``
#: (``get``, ``[]``, ``in``, ``len``, iteration, ``pop``, ``values``). A persistent store
#: subclasses :class:`HistoryStore`.
SessionStore: TypeAlias = "MutableMapping[str, AgentSession]"


class MemoryStore(dict[str, "AgentSession"]):
    """The default store: sessions in memory, for the life of the process (a ``dict``, so
    the per-message lookups cost what a dict lookup costs)."""


@dataclass(frozen=True)
class SessionRecord:
    """What ``session/list`` tells of a stored session."""

    session_id: str
    cwd: str
    title: str | None
    updated_at: str
    archived: bool
    additional_directories: tuple[str, ...] = ()
    #: who created it (:data:`LOCAL_PRINCIPAL`, or a token's principal)
    principal: str = LOCAL_PRINCIPAL


class HistoryStore(MutableMapping[str, "AgentSession"]):
    """A store that keeps sessions and their history beyond the process (see the module).

    The mapping is the sessions held open here; :meth:`open` brings a stored one back
    (taking its writer lease: one process writes a session at a time), ``del store[sid]``
    releases it. Journal writes (:meth:`record`, :meth:`record_json`, :meth:`begin_turn`,
    :meth:`end_turn`) may be batched: :meth:`flush` makes them durable, and acplink calls it
    before the bytes of what was journaled reach the peer (``before_write``)."""

    #: group commit: a store whose commit is costly (a round trip and a disk flush on a
    #: database server) asks the transports writing its sessions' updates to batch up to this
    #: many bytes per write (so per commit) rather than their default (None: the default)
    group_commit_bytes: int | None = None

    @abstractmethod
    def open(self, session_id: str) -> AgentSession | None:
        """The stored session ``session_id`` held open here (None: no such session). Raises
        :class:`~acplink.errors.InvalidRequest` when another process holds it."""

    @abstractmethod
    def save(self, session: AgentSession) -> None:
        """Store the session's metadata (cwd, directories, title, mode, config, MCP servers)."""

    @abstractmethod
    def record(self, session_id: str, kind: str, update: dict[str, Any]) -> None:
        """Journal one update the agent is about to send (``kind``: its ``sessionUpdate``)."""

    @abstractmethod
    def record_json(self, session_id: str, kind: str, params_json: bytes) -> None:
        """Journal one update from the ``session/update`` params about to be sent, as JSON."""

    @abstractmethod
    def begin_turn(self, session_id: str, prompt: list[dict[str, Any]]) -> int:
        """Journal the user's prompt: a turn starts; returns its number."""

    @abstractmethod
    def end_turn(self, session_id: str, stop_reason: str) -> None:
        """Journal the end of the running turn."""

    @abstractmethod
    def history(self, session_id: str) -> list[HistoryEntry]:
        """The session's history, folded (:func:`acplink.agent.history.fold`)."""

    @abstractmethod
    def list_sessions(self, *, cwd: str | None = None, archived: str = "exclude", cursor: str | None = None,
                      limit: int = 50, principal: str | None = None) -> tuple[list[SessionRecord], str | None]:
        """Stored sessions, newest first, and the cursor of the next page (None: the last).
        ``principal``: only that principal's (None: everyone's, e.g. for inspecting a store)."""

    @abstractmethod
    def delete(self, session_id: str) -> bool:
        """Forget the session and its history (False: there was none)."""

    @abstractmethod
    def set_archived(self, session_id: str, archived: bool) -> bool:
        """Archive or unarchive (False: no such session)."""

    @abstractmethod
    def fork(self, session_id: str, new_id: str, cwd: str, additional_directories: Sequence[str] = (),
             principal: str | None = None) -> bool:
        """A new session ``new_id`` with a copy of ``session_id``'s metadata and history,
        belonging to ``principal`` (None: to ``session_id``'s)."""

    @abstractmethod
    def set_title(self, session_id: str, title: str) -> bool:
        """Retitle a stored session (False: no such session)."""

    @abstractmethod
    def exists(self, session_id: str) -> bool:
        """Whether the store has the session (held here or not)."""

    def principal_of(self, session_id: str) -> str | None:
        """The principal that created the stored session (None: no such session). The default
        (a store that records no principal): everything is the local principal's."""
        return LOCAL_PRINCIPAL if self.exists(session_id) else None

    def attach(self) -> None:
        """A connection serves this store's sessions (until :meth:`detach`)."""

    def detach(self) -> None:
        """A connection that served this store's sessions closed."""

    def retain(self, session_id: str) -> None:
        """A connection uses the held session ``session_id`` (until :meth:`release`)."""

    def release(self, session_id: str) -> None:
        """A connection that used ``session_id`` closed: the session is released from memory
        (a store shared by several connections keeps it until the last one)."""
        self.pop(session_id, None)

    @abstractmethod
    def flush(self) -> None:
        """Make every journal write so far durable."""

    @abstractmethod
    def close(self) -> None:
        """Flush, release the sessions held here, close the database."""
