"""A session store opened read-only, to look at what an agent remembers (``acplink inspect
STORE``, ``acplink devtools --store STORE``): its sessions (every principal's, archived ones
too) and each one's history.

Opening one never writes, migrates or takes a lease: a SQLite file is opened with
``mode=ro`` (its content is never written; as any reader of a WAL database, SQLite may create
the ``-wal`` / ``-shm`` files next to it), a PostgreSQL database in a read-only session with
no advisory lock. Any schema version this acplink knows is read as it is (an older one is not
migrated: the columns it lacks read as their defaults). A file that is not an acplink store, a
corrupt one, or a store from a newer acplink → one :class:`~acplink.errors.StoreError` naming
it, as the stores say it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

from ..errors import StoreError
from ._sqlite_file import APPLICATION_ID, refuse_newer, usable
from .history import HistoryEntry, fold_rows
from .store import LOCAL_PRINCIPAL

__all__ = ["StoreReader", "StoredSession", "describe_entry", "is_store_target", "open_store_reader"]

#: the 16 bytes every SQLite file begins with
_SQLITE_HEADER = b"SQLite format 3\x00"


@dataclass(frozen=True)
class StoredSession:
    """One stored session as :class:`StoreReader` shows it."""

    session_id: str
    cwd: str
    title: str | None
    created_at: str
    updated_at: str
    archived: bool
    principal: str
    additional_directories: list[str] = field(default_factory=list)
    mode: str | None = None
    model: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    mcp_servers: list[Any] = field(default_factory=list)
    #: the agent process holding it now (its lease not expired), or None
    held_by: str | None = None
    #: how many journal events and prompt turns it has
    events: int = 0
    turns: int = 0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def is_store_target(target: str) -> bool:
    """Whether ``target`` names a session store: a PostgreSQL URL (``postgresql://``,
    ``postgres://``), or a SQLite file marked as an acplink store."""
    if target.startswith(("postgresql://", "postgres://")):
        return True
    try:
        with open(target, "rb") as f:
            head = f.read(72)
    except OSError:
        return False
    return head.startswith(_SQLITE_HEADER) and int.from_bytes(head[68:72], "big") == APPLICATION_ID


def open_store_reader(target: str, *, timeout: float = 5.0) -> StoreReader:
    """The store ``target`` (a SQLite file, or a PostgreSQL URL) opened read-only."""
    if target.startswith(("postgresql://", "postgres://")):
        return _open_postgres(target, timeout)
    return _open_sqlite(target)

#: the store schema versions that added a column this reader asks for (older stores are read
#: as they are: never migrated)
_ARCHIVED_SINCE = 2
_PRINCIPALS_SINCE = 3


class StoreReader:
    """A session store, read-only (see the module): :meth:`sessions`, :meth:`session`,
    :meth:`history`. ``name``: the store as messages name it (never a password)."""

    def __init__(self, name: str, db: Any, version: int, *, params: str = "?",
                 errors: tuple[type[Exception], ...] = (sqlite3.Error,)) -> None:
        self.name = name
        self._db = db
        self.schema_version = version
        self._p = params
        self._errors = errors

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return list(self._db.execute(sql.replace("?", self._p), args).fetchall())
        except self._errors as exc:
            raise StoreError(f"session store {self.name}: {' '.join(str(exc).split())}") from None

    def sessions(self, *, principal: str | None = None, session_id: str | None = None) -> list[StoredSession]:
        """The stored sessions, newest first (``principal``: only that one's)."""
        archived = "archived" if self.schema_version >= _ARCHIVED_SINCE else "0"
        owner = "principal" if self.schema_version >= _PRINCIPALS_SINCE else f"'{LOCAL_PRINCIPAL}'"
        where, args = [], []
        if principal is not None:
            where.append(f"{owner}=?")
            args.append(principal)
        if session_id is not None:
            where.append("id=?")
            args.append(session_id)
        rows = self._rows(
            f"SELECT id, cwd, title, created, updated, {archived}, {owner}, dirs, mode, model, config, mcp, owner, "
            "lease_until, (SELECT count(*) FROM events WHERE session=id), "
            "(SELECT coalesce(max(turn), 0) FROM events WHERE session=id) FROM sessions"
            + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY updated DESC, id DESC", tuple(args))
        now = time.time()
        return [StoredSession(r[0], r[1], r[2], r[3], r[4], bool(r[5]), r[6], orjson.loads(r[7]), r[8], r[9],
                              orjson.loads(r[10]), orjson.loads(r[11]),
                              r[12] if r[12] is not None and r[13] is not None and r[13] > now else None,
                              int(r[14]), int(r[15])) for r in rows]

    def session(self, session_id: str) -> StoredSession | None:
        found = self.sessions(session_id=session_id)
        return found[0] if found else None

    def history(self, session_id: str) -> list[HistoryEntry]:
        """The session's history, folded as ``ctx.history`` is (a turn without its end: shown
        as running while an agent holds the session, else as interrupted)."""
        rows = self._rows("SELECT turn, kind, body FROM events WHERE session=? ORDER BY seq", (session_id,))
        sess = self.session(session_id)
        running = sess.turns if sess is not None and sess.held_by is not None else None
        return fold_rows([(r[0], r[1], r[2]) for r in rows], running=running)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> StoreReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def describe_entry(e: HistoryEntry) -> tuple[str, str]:
    """A history entry as (what, text): for the terminal and the devtools page."""
    u = e.update or {}
    if e.kind == "tool_call":
        return "tool call", f"{u.get('title', '')} [{u.get('status', '')}]"
    if e.kind == "plan":
        return "plan", ", ".join(f"{x.get('content', '')} [{x.get('status', '')}]" for x in u.get("entries", []))
    if e.kind == "usage":
        return "usage", f"{u.get('used', '')} of {u.get('size', '')}"
    if e.kind == "turn_end":
        return "end", "interrupted" if e.interrupted else (e.stop_reason or "running")
    return e.kind.replace("_", " "), e.text


def _open_sqlite(path: str) -> StoreReader:
    if not os.path.exists(path):
        raise StoreError(f"session store {path}: no such file")
    if not os.path.isfile(path):
        raise StoreError(f"session store {path}: not a regular file")
    from urllib.parse import quote

    try:
        db = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"session store {path}: cannot open it ({exc})") from None
    with usable(db, path):
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if app_id != APPLICATION_ID:
            raise StoreError(f"session store {path}: not an acplink session store (application id {app_id:#x}); "
                             "nothing was changed")
        refuse_newer(path, version)
        db.execute("SELECT count(*) FROM sessions").fetchone()  # (a corrupt file fails here)
    return StoreReader(path, db, int(version))


def _open_postgres(dsn: str, timeout: float) -> StoreReader:
    from .._extras import require

    require("reading a PostgreSQL session store", "postgres", "psycopg")
    import psycopg

    from ._postgres_db import one_line, shown_dsn

    shown = shown_dsn(dsn)
    try:
        conn = psycopg.connect(dsn, autocommit=True, connect_timeout=max(1, round(timeout)))
    except psycopg.Error as exc:
        raise StoreError(f"session store {shown}: cannot connect to PostgreSQL ({one_line(exc)})") from None
    try:
        conn.execute("SET default_transaction_read_only = on")
        marked = conn.execute("SELECT to_regclass('acplink_store') IS NOT NULL").fetchone()
        if not (marked and marked[0]):
            raise StoreError(f"session store {shown}: not an acplink session store (no acplink_store table); "
                             "nothing was changed")
        row = conn.execute("SELECT max(version) FROM acplink_store").fetchone()
        version = int(row[0] or 0) if row else 0
        refuse_newer(shown, version)
    except psycopg.Error as exc:
        conn.close()
        raise StoreError(f"session store {shown}: {one_line(exc)}") from None
    except BaseException:
        conn.close()
        raise
    return StoreReader(shown, conn, version, params="%s", errors=(psycopg.Error,))
