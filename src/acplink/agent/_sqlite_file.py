"""One SQLite session-store file open in this process (:class:`_Database`): its schema and
migrations, the checks made when it is opened, and the batched transaction its stores share
(see :mod:`acplink.agent.store_sqlite`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sqlite3
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import StoreError

if TYPE_CHECKING:
    from .context import AgentSession

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION"]

log = logging.getLogger("acplink.agent")

#: ``PRAGMA application_id`` of an acplink store ("ACPS")
APPLICATION_ID = 0x41435053

#: the steps from an empty file to each schema version (index i: from version i to i + 1)
MIGRATIONS: tuple[str, ...] = (
    # 1: sessions and the journal
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY, cwd TEXT NOT NULL, dirs TEXT NOT NULL DEFAULT '[]', title TEXT,
        mode TEXT, model TEXT, config TEXT NOT NULL DEFAULT '{}', mcp TEXT NOT NULL DEFAULT '[]',
        created TEXT NOT NULL, updated TEXT NOT NULL, owner TEXT, lease_until REAL
    );
    CREATE TABLE events (
        session TEXT NOT NULL, seq INTEGER NOT NULL, turn INTEGER NOT NULL, kind TEXT NOT NULL,
        body BLOB NOT NULL, PRIMARY KEY (session, seq)
    ) WITHOUT ROWID;
    """,
    # 2: archiving; listing newest first by an index
    """
    ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX sessions_updated ON sessions (updated DESC, id DESC);
    """,
    # 3: each session's principal (who created it: see acplink.agent.store.LOCAL_PRINCIPAL);
    # the sessions stored before are the local principal's
    """
    ALTER TABLE sessions ADD COLUMN principal TEXT NOT NULL DEFAULT 'local';
    CREATE INDEX sessions_principal ON sessions (principal, updated DESC, id DESC);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

#: the journal's statement: one event (the hot path of a flood; a server database batches it)
EVENT_INSERT = "INSERT INTO events (session, seq, turn, kind, body) VALUES (?,?,?,?,?)"


#: the files open in this process (path → its shared connection)
_OPEN: dict[str, _Database] = {}


def refuse_newer(name: str, version: int) -> None:
    """Refuse a store (SQLite or PostgreSQL, ``name`` as messages show it) whose schema
    ``version`` a newer acplink wrote."""
    if version > SCHEMA_VERSION:
        raise StoreError(f"session store {name}: schema version {version} was written by a newer acplink "
                         f"(this one reads versions up to {SCHEMA_VERSION}); nothing was changed")


@contextlib.contextmanager
def usable(db: sqlite3.Connection, path: str) -> Iterator[None]:
    """Check or prepare a just-opened store inside: on failure ``db`` is closed, and a database
    error (not SQLite, corrupt) becomes one :class:`StoreError` line naming the file."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        db.close()
        raise StoreError(f"session store {path}: not a usable SQLite database ({exc}); nothing was changed") from None
    except BaseException:
        db.close()
        raise


class _Database:
    """One SQLite file open in this process, shared by the stores that use it: one
    connection, one open transaction (two stores of a process never wait on each other's
    lock), one lease owner, and the sessions held (two apps of a server that load one session
    share it). Closed when no connection serves it and no session is held."""

    def __init__(self, key: str, db: sqlite3.Connection) -> None:
        self.key = key
        self.db = db
        #: the connections serving the file's sessions in this process (``attach``)
        self.connections = 0
        self.closed = False
        self.pending = False
        #: this process's name in the file's leases
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.renewed = 0.0
        self.clear()
        #: the pending transaction's commit is scheduled on the event loop (else: at once)
        self.scheduled = False

    @classmethod
    def open(cls, path: str, timeout: float = 5.0) -> _Database:
        key = path if path == ":memory:" else os.path.realpath(path)
        found = _OPEN.get(key) if key != ":memory:" else None
        if found is None:
            found = cls(key, cls._connect(path, timeout))
            if key != ":memory:":
                _OPEN[key] = found
        return found

    def close(self) -> None:
        self.commit()
        self.closed = True
        if _OPEN.get(self.key) is self:
            del _OPEN[self.key]
        self.db.close()

    def clear(self) -> None:
        """Hold no session: the sessions held in this process, per id: the session, the next
        event number, the current turn, the turn running now (not interrupted: not yet
        ended), the connections using it."""
        self.held: dict[str, AgentSession] = {}
        self.seq: dict[str, int] = {}
        self.turn: dict[str, int] = {}
        self.running: dict[str, int] = {}
        self.refs: dict[str, int] = {}

    def begin(self) -> None:
        """Open the batch's transaction (committed at the next turn of the loop at the latest)."""
        if self.pending:
            return
        self.db.execute("BEGIN")
        self.pending = True
        self.schedule()

    def schedule(self) -> None:
        """The open transaction's commit at the next turn of the loop (no loop: at each write)."""
        try:
            asyncio.get_running_loop().call_soon(self.scheduled_commit)
            self.scheduled = True
        except RuntimeError:  # (no loop: each write is committed at once)
            self.scheduled = False

    def write(self, sql: str, args: Sequence[Any]) -> sqlite3.Cursor:
        self.begin()
        cur = self.db.execute(sql, args)
        if not self.scheduled:
            self.commit()
        return cur

    def commit(self) -> None:
        if self.pending:
            self.pending = False
            try:
                self.db.execute("COMMIT")
            except self.errors as exc:  # (the batch is lost: said so; the database stays usable)
                self.rollback()
                raise StoreError(f"session store {self.name}: {' '.join(str(exc).split())}") from None

    #: the database's errors
    errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    @property
    def name(self) -> str:
        """The database as messages name it."""
        return self.key

    def rollback(self) -> None:
        """Drop the transaction that failed."""
        with contextlib.suppress(sqlite3.Error):
            self.db.execute("ROLLBACK")

    def scheduled_commit(self) -> None:
        """The commit at the next turn of the loop: a failure is logged (no caller to tell)."""
        try:
            self.commit()
        except StoreError as exc:
            log.warning("%s", exc)

    @staticmethod
    def _connect(path: str, timeout: float) -> sqlite3.Connection:
        if path != ":memory:" and os.path.exists(path) and not os.path.isfile(path):
            raise StoreError(f"session store {path}: not a regular file")
        try:
            db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"session store {path}: cannot open it ({exc})") from None
        with usable(db, path):
            _Database._check(db, path)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            _Database._migrate(db)
        return db

    @staticmethod
    def _check(db: sqlite3.Connection, path: str) -> None:
        """Refuse a file that is not an acplink store, or one from a newer acplink."""
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id != APPLICATION_ID and (tables or version or app_id):
            raise StoreError(f"session store {path}: a SQLite database of another application "
                             f"(application id {app_id:#x}, {tables} schema objects), not an acplink "
                             "session store; nothing was changed")
        refuse_newer(path, version)

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        while version < SCHEMA_VERSION:
            db.execute("BEGIN IMMEDIATE")
            try:
                for statement in MIGRATIONS[version].split(";"):
                    if statement.strip():
                        db.execute(statement)
                version += 1
                db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                db.execute(f"PRAGMA user_version={version}")
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
