""":class:`SqliteStore`: sessions and their history in one SQLite file (stdlib ``sqlite3``).

Layout (schema version :data:`SCHEMA_VERSION`, in ``PRAGMA user_version``; the file is marked
as acplink's by ``PRAGMA application_id``): ``sessions`` (one row per session: its metadata,
and the writer lease), ``events`` (the journal: one row per update sent, per prompt, per turn
end, numbered per session). A file is checked when opened: not SQLite, or SQLite of another
application → :class:`~acplink.errors.StoreError` naming the file, nothing written; a schema
newer than this acplink's → refused with both versions; an older one → migrated in place, one
transaction per step (:data:`MIGRATIONS`).

Writes. The journal of a flood must cost little: writes go into one open transaction and are
committed in batches: when the transport is about to write the bytes of what was journaled
(``before_write``, so what the client receives is always stored first: a SIGKILL loses
nothing it saw), and at the latest at the next turn of the event loop. WAL journal with
``synchronous=NORMAL``: a commit survives the process being killed (not a power cut between
checkpoints). All calls run on the event loop's thread: each is a few microseconds of SQLite
work, batched, rather than a thread hop per update.

One writer per session: holding a session (``open``, ``store[sid] = ...``) takes a lease
(``owner``, ``lease_until``) renewed while the session is held; another process that opens it
meanwhile is refused (:class:`~acplink.errors.InvalidRequest`, saying who holds it and until
when), unless the lease expired or its holder is a process of this machine that no longer runs
(after a crash, a restarted agent takes its sessions back at once).
"""

from __future__ import annotations

import functools
import os
import socket
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

import orjson

from ..errors import InvalidRequest, StoreError
from ._sqlite_file import APPLICATION_ID, EVENT_INSERT, MIGRATIONS, SCHEMA_VERSION, _Database
from .history import HistoryEntry, fold_rows
from .store import HistoryStore, SessionRecord

if TYPE_CHECKING:
    from .context import AgentSession

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "SqliteStore"]


#: how long a writer lease lasts without renewal (seconds)
LEASE_SECONDS = 30.0


F = TypeVar("F", bound=Callable[..., Any])


def _translated(fn: F) -> F:
    """The database's errors in a store method raised as :class:`StoreError` naming the store."""

    @functools.wraps(fn)
    def call(self: SqlStore, *args: Any, **kw: Any) -> Any:
        try:
            return fn(self, *args, **kw)
        except self._errors as exc:
            raise StoreError(f"session store {self.path}: {self._describe(exc)}") from None

    return cast("F", call)




def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _wire(x: Any) -> Any:
    return x.to_wire() if hasattr(x, "to_wire") else x


class SqlStore(HistoryStore):
    """A :class:`HistoryStore` in a SQL database: the layout, the journal, its batching and
    the writer lease (see the module), on a :class:`_Database` (one per database and process).
    :class:`SqliteStore` and :class:`~acplink.agent.store_postgres.PostgresStore` say which
    database; statements are written with ``?`` parameters."""

    path: str
    lease_seconds: float
    timeout: float
    _closed: bool
    _open_file: _Database | None
    #: the database's errors (raised as StoreError)
    _errors: tuple[type[Exception], ...] = (sqlite3.Error,)
    #: a lease is taken in a transaction that locks the session's row (a server database)
    _lock_row = ""

    def _open_database(self) -> _Database:
        raise NotImplementedError

    def _describe(self, exc: Exception) -> str:
        return str(exc)

    # the state of the file in this process, shared by its stores (see _Database)

    @property
    def owner(self) -> str:
        """This process's name in the file's leases: host, pid and a nonce."""
        return self._file.owner

    @property
    def _held(self) -> dict[str, AgentSession]:
        return self._file.held

    @property
    def _seq(self) -> dict[str, int]:
        return self._file.seq

    @property
    def _turn(self) -> dict[str, int]:
        return self._file.turn

    @property
    def _running(self) -> dict[str, int]:
        return self._file.running

    @property
    def _file(self) -> _Database:
        found = self._open_file
        if found is None or found.closed:
            if self._closed:
                raise StoreError(f"session store {self.path} is closed")
            found = self._open_file = self._open_database()
        return found

    @property
    def _db(self) -> Any:
        return self._file.db

    @_translated
    def attach(self) -> None:
        """A connection serves this store's sessions: the file stays open while one does (or
        a session is held), and is closed after the last (opened again on next use)."""
        self._file.connections += 1

    @_translated
    def detach(self) -> None:
        found = self._file
        found.connections -= 1
        if found.connections <= 0 and not found.held:
            found.close()

    def retain(self, session_id: str) -> None:
        """A connection uses the held session ``session_id`` (until :meth:`release`)."""
        refs = self._file.refs
        refs[session_id] = refs.get(session_id, 0) + 1

    def release(self, session_id: str) -> None:
        """A connection that used ``session_id`` closed: released after the last one."""
        refs = self._file.refs
        n = refs.get(session_id, 0) - 1
        if n > 0:
            refs[session_id] = n
            return
        refs.pop(session_id, None)
        self.pop(session_id, None)

    # -- writing: one open transaction, committed in batches -----------------------------------

    def _write(self, sql: str, args: Sequence[Any]) -> Any:
        return self._file.write(sql, args)

    @_translated
    def flush(self) -> None:
        found = self._open_file
        if found is None or found.closed:
            return
        now = time.monotonic()
        if found.held and now - found.renewed > self.lease_seconds / 3:
            found.renewed = now
            until = time.time() + self.lease_seconds
            found.begin()
            found.db.executemany("UPDATE sessions SET lease_until=? WHERE id=? AND owner=?",
                                 [(until, sid, found.owner) for sid in found.held])
        found.commit()

    @_translated
    def close(self) -> None:
        """Flush; with no connection serving the file in this process, release the sessions
        held (their leases) and close it."""
        if self._closed:
            return
        found = self._open_file
        if found is not None and not found.closed:
            self.flush()
            if found.connections <= 0:
                if found.held:
                    found.db.executemany("UPDATE sessions SET owner=NULL, lease_until=NULL WHERE id=? AND owner=?",
                                         [(sid, found.owner) for sid in found.held])
                    found.clear()
                found.close()
        self._open_file = None
        self._closed = True

    # -- the mapping: sessions held here --------------------------------------------------------

    def __getitem__(self, session_id: str) -> AgentSession:
        return self._held[session_id]

    def get(self, session_id: str, default: Any = None) -> Any:
        return self._held.get(session_id, default)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._held

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)

    @_translated
    def __setitem__(self, session_id: str, session: AgentSession) -> None:
        """A new session (or one held again): stored, its lease taken."""
        if session_id not in self._held:
            self._lease(session_id, create=session)
        self._held[session_id] = session
        self._seq.setdefault(session_id, self._next_seq(session_id))
        self._turn.setdefault(session_id, self._last_turn(session_id))
        self.save(session)

    @_translated
    def __delitem__(self, session_id: str) -> None:
        """Release a held session from memory (its record stays)."""
        if session_id not in self._held:
            raise KeyError(session_id)
        self._release(session_id)
        self._write("UPDATE sessions SET owner=NULL, lease_until=NULL WHERE id=? AND owner=?",
                    (session_id, self.owner))

    def _release(self, session_id: str) -> None:
        self._file.refs.pop(session_id, None)
        self._held.pop(session_id, None)
        self._seq.pop(session_id, None)
        self._turn.pop(session_id, None)
        self._running.pop(session_id, None)

    def _lease(self, session_id: str, create: AgentSession | None = None) -> bool:
        """Take the writer lease of ``session_id`` (creating its row from ``create``); False:
        no such session. Raises InvalidRequest when another live process holds it."""
        self.flush()
        if not self._lock_row:
            return self._take_lease(session_id, create)
        file = self._file
        file.begin()  # (two instances taking one lease: the second waits for the first)
        try:
            return self._take_lease(session_id, create)
        finally:
            if not file.scheduled:  # (no loop to commit it: the row's lock is let go now)
                file.commit()

    def _take_lease(self, session_id: str, create: AgentSession | None) -> bool:
        db = self._db
        row = db.execute("SELECT owner, lease_until FROM sessions WHERE id=?" + self._lock_row,
                         (session_id,)).fetchone()
        if row is None and create is None:
            return False
        if row is not None and row[0] not in (None, self.owner) and not self._takeable(row[0], row[1]):
            until = datetime.fromtimestamp(row[1], UTC).isoformat(timespec="seconds")
            raise InvalidRequest(f"session {session_id} is open in another agent process ({row[0]}) "
                                 f"until its lease expires ({until}); close it there first",
                                 {"sessionId": session_id, "owner": row[0]})
        lease = time.time() + self.lease_seconds
        if row is None:
            assert create is not None
            now = create.updated_at or _now()
            db.execute("INSERT INTO sessions (id, cwd, created, updated, owner, lease_until, principal) "
                       "VALUES (?,?,?,?,?,?,?)", (session_id, create.cwd, now, now, self.owner, lease, create.principal))
        else:
            db.execute("UPDATE sessions SET owner=?, lease_until=? WHERE id=?", (self.owner, lease, session_id))
        return True

    def _takeable(self, owner: str, lease_until: float | None) -> bool:
        if lease_until is None or lease_until < time.time():
            return True
        host, _, rest = owner.partition(":")
        pid = rest.partition(":")[0]
        if host != socket.gethostname() or not pid.isdigit():
            return False
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return True  # its holder on this machine is gone (a crash): taken over at once
        except OSError:
            return False
        return False  # (alive: its own lease to keep)

    def _next_seq(self, session_id: str) -> int:
        row = self._db.execute("SELECT max(seq) FROM events WHERE session=?", (session_id,)).fetchone()
        return (row[0] or 0) + 1

    def _last_turn(self, session_id: str) -> int:
        row = self._db.execute("SELECT max(turn) FROM events WHERE session=?", (session_id,)).fetchone()
        return int(row[0] or 0)

    @_translated
    def open(self, session_id: str) -> AgentSession | None:
        held = self._held.get(session_id)
        if held is not None:
            return held
        if not self._lease(session_id):
            return None
        row = self._db.execute("SELECT cwd, dirs, title, mode, model, config, mcp, updated, principal FROM sessions "
                               "WHERE id=?", (session_id,)).fetchone()
        from .context import AgentSession

        sess = AgentSession(session_id, row[0], orjson.loads(row[6]), orjson.loads(row[1]), mode_id=row[3],
                            model_id=row[4], config=orjson.loads(row[5]), title=row[2], updated_at=row[7],
                            principal=row[8])
        self._held[session_id] = sess
        self._seq[session_id] = self._next_seq(session_id)
        self._turn[session_id] = self._last_turn(session_id)
        sess.messages = _conversation(self.history(session_id))
        return sess

    @_translated
    def save(self, session: AgentSession) -> None:
        session.updated_at = _now()
        self._write(
            "UPDATE sessions SET cwd=?, dirs=?, title=?, mode=?, model=?, config=?, mcp=?, updated=? WHERE id=?",
            (session.cwd, orjson.dumps(list(session.additional_directories)).decode(), session.title,
             session.mode_id, session.model_id, orjson.dumps(session.config, default=_wire).decode(),
             orjson.dumps([_wire(m) for m in session.mcp_servers], default=_wire).decode(), session.updated_at,
             session.session_id))

    # -- the journal ----------------------------------------------------------------------------

    def _event(self, session_id: str, kind: str, body: bytes) -> None:
        file = self._file  # (the hot path of a journaled flood: one lookup of the file)
        seqs = file.seq
        seq = seqs.get(session_id)
        if seq is None:  # (not held here: nothing journaled)
            return
        seqs[session_id] = seq + 1
        file.write(EVENT_INSERT, (session_id, seq, file.turn[session_id], kind, body))

    @_translated
    def record(self, session_id: str, kind: str, update: dict[str, Any]) -> None:
        self._event(session_id, kind, orjson.dumps(update, default=_wire))

    @_translated
    def record_json(self, session_id: str, kind: str, params_json: bytes) -> None:
        self._event(session_id, kind, params_json)

    @_translated
    def begin_turn(self, session_id: str, prompt: list[dict[str, Any]]) -> int:
        if session_id in self._held:  # (the lease renewed; lost to another process: refused)
            lease = time.time() + self.lease_seconds
            cur = self._write("UPDATE sessions SET lease_until=? WHERE id=? AND owner=?", (lease, session_id, self.owner))
            if cur.rowcount == 0:
                self._release(session_id)
                raise InvalidRequest(f"session {session_id} was taken over by another agent process (its lease "
                                     "expired); load it again", {"sessionId": session_id})
        turn = self._turn.get(session_id, 0) + 1
        self._turn[session_id] = turn
        self._running[session_id] = turn
        self._event(session_id, "prompt", orjson.dumps({"prompt": prompt}))
        return turn

    @_translated
    def end_turn(self, session_id: str, stop_reason: str) -> None:
        self._event(session_id, "turn_end", orjson.dumps({"stopReason": stop_reason}))
        self._running.pop(session_id, None)
        sess = self._held.get(session_id)
        if sess is not None:
            self.save(sess)

    @_translated
    def history(self, session_id: str) -> list[HistoryEntry]:
        self.flush()
        rows = self._db.execute("SELECT turn, kind, body FROM events WHERE session=? ORDER BY seq",
                                (session_id,)).fetchall()
        return fold_rows(rows, running=self._running.get(session_id))

    # -- the record -------------------------------------------------------------------------------

    @_translated
    def list_sessions(self, *, cwd: str | None = None, archived: str = "exclude", cursor: str | None = None,
                      limit: int = 50, principal: str | None = None) -> tuple[list[SessionRecord], str | None]:
        self.flush()
        where, args = [], []
        if principal is not None:
            where.append("principal=?")
            args.append(principal)
        if cwd is not None:
            where.append("cwd=?")
            args.append(cwd)
        if archived == "exclude":
            where.append("archived=0")
        elif archived == "only":
            where.append("archived=1")
        if cursor is not None:
            after = _cursor_position(cursor)
            where.append("(updated < ? OR (updated = ? AND id < ?))")
            args += [after[0], after[0], after[1]]
        sql = ("SELECT id, cwd, title, updated, archived, dirs, principal FROM sessions"
               + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY updated DESC, id DESC LIMIT ?")
        rows = self._db.execute(sql, (*args, limit + 1)).fetchall()
        page = [SessionRecord(r[0], r[1], r[2], r[3], bool(r[4]), tuple(orjson.loads(r[5])), r[6])
                for r in rows[:limit]]
        more = len(rows) > limit
        return page, (_make_cursor(page[-1].updated_at, page[-1].session_id) if more and page else None)

    @_translated
    def delete(self, session_id: str) -> bool:
        self.flush()
        self._release(session_id)
        self._write("DELETE FROM events WHERE session=?", (session_id,))
        cur = self._write("DELETE FROM sessions WHERE id=?", (session_id,))
        self.flush()
        return bool(cur.rowcount > 0)

    @_translated
    def set_archived(self, session_id: str, archived: bool) -> bool:
        cur = self._write("UPDATE sessions SET archived=? WHERE id=?", (int(archived), session_id))
        self.flush()
        return bool(cur.rowcount > 0)

    @_translated
    def fork(self, session_id: str, new_id: str, cwd: str, additional_directories: Sequence[str] = (),
             principal: str | None = None) -> bool:
        self.flush()
        now = _now()
        cur = self._write(
            "INSERT INTO sessions (id, cwd, dirs, title, mode, model, config, mcp, created, updated, archived, "
            "principal) SELECT ?, ?, ?, title, mode, model, config, mcp, ?, ?, 0, COALESCE(?, principal) "
            "FROM sessions WHERE id=?",
            (new_id, cwd, orjson.dumps(list(additional_directories)).decode(), now, now, principal, session_id))
        if cur.rowcount == 0:
            self.flush()
            return False
        self._write("INSERT INTO events (session, seq, turn, kind, body) "
                    "SELECT ?, seq, turn, kind, body FROM events WHERE session=?", (new_id, session_id))
        self.flush()
        return True

    @_translated
    def set_title(self, session_id: str, title: str) -> bool:
        held = self._held.get(session_id)
        if held is not None:
            held.title = title
            self.save(held)
            return True
        cur = self._write("UPDATE sessions SET title=?, updated=? WHERE id=?", (title, _now(), session_id))
        return bool(cur.rowcount > 0)

    @_translated
    def principal_of(self, session_id: str) -> str | None:
        held = self._held.get(session_id)
        if held is not None:
            return held.principal
        self.flush()
        row = self._db.execute("SELECT principal FROM sessions WHERE id=?", (session_id,)).fetchone()
        return None if row is None else str(row[0])

    @_translated
    def exists(self, session_id: str) -> bool:
        self.flush()
        return self._db.execute("SELECT 1 FROM sessions WHERE id=?", (session_id,)).fetchone() is not None


class SqliteStore(SqlStore):
    """Sessions and their history in the SQLite file ``path`` (created when missing;
    ``":memory:"``: for the life of the store). See the module for the layout, the batching
    and the writer lease."""

    def __init__(self, path: str | os.PathLike[str], *, lease_seconds: float = LEASE_SECONDS,
                 timeout: float = 5.0) -> None:
        self.path = os.fspath(path)
        self.lease_seconds = lease_seconds
        self._closed = False
        #: how long a write waits for another process's lock on the file (then: StoreError)
        self.timeout = timeout
        self._open_file = self._open_database()  # (checked now: a bad file fails here)

    def _open_database(self) -> _Database:
        return _Database.open(self.path, self.timeout)

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])


def _make_cursor(updated: str, session_id: str) -> str:
    import base64

    return base64.urlsafe_b64encode(orjson.dumps([updated, session_id])).decode().rstrip("=")


def _cursor_position(cursor: str) -> tuple[str, str]:
    import base64

    try:
        value = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
            return value[0], value[1]
    except (ValueError, orjson.JSONDecodeError):
        pass
    from ..errors import InvalidParams

    raise InvalidParams(f"Invalid params: unknown cursor {cursor!r} (use the nextCursor of a session/list answer)",
                        {"cursor": cursor})


def _conversation(history: list[HistoryEntry]) -> list[dict[str, Any]]:
    """The conversation as ACP v2 replays it (``AgentSession.messages``) from a history."""
    out: list[dict[str, Any]] = []
    for n, e in enumerate(history):
        if e.kind == "user_message":
            out.append({"role": "user", "messageId": f"msg_h{n}", "content": e.content})
        elif e.kind == "agent_message":
            out.append({"role": "agent", "messageId": f"msg_h{n}", "content": e.content})
    return out
