"""One PostgreSQL session-store database open in this process (:class:`_PgDatabase`): its
schema and migrations, the checks made when it is opened, its connection (reconnected after
a loss), and the batched transaction its stores share (see :mod:`acplink.agent.store_postgres`).

The layout is the SQLite store's (the same tables, columns and schema versions, in PostgreSQL's
types), plus ``acplink_store`` (one row: the schema version), which marks the database's tables
as acplink's."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import conninfo

from ..errors import StoreError
from ._sqlite_file import _OPEN, EVENT_INSERT, SCHEMA_VERSION, _Database, refuse_newer

__all__ = ["PG_MIGRATIONS"]

#: the steps from an empty database to each schema version (index i: from version i to i + 1;
#: the versions are the SQLite store's)
PG_MIGRATIONS: tuple[str, ...] = (
    # 1: sessions and the journal
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY, cwd TEXT NOT NULL, dirs TEXT NOT NULL DEFAULT '[]', title TEXT,
        mode TEXT, model TEXT, config TEXT NOT NULL DEFAULT '{}', mcp TEXT NOT NULL DEFAULT '[]',
        created TEXT NOT NULL, updated TEXT NOT NULL, owner TEXT, lease_until DOUBLE PRECISION
    );
    CREATE TABLE events (
        session TEXT NOT NULL, seq BIGINT NOT NULL, turn INTEGER NOT NULL, kind TEXT NOT NULL,
        body BYTEA NOT NULL, PRIMARY KEY (session, seq)
    );
    """,
    # 2: archiving; listing newest first by an index
    """
    ALTER TABLE sessions ADD COLUMN archived INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX sessions_updated ON sessions (updated DESC, id DESC);
    """,
    # 3: each session's principal; the sessions stored before are the local principal's
    """
    ALTER TABLE sessions ADD COLUMN principal TEXT NOT NULL DEFAULT 'local';
    CREATE INDEX sessions_principal ON sessions (principal, updated DESC, id DESC);
    """,
)
assert len(PG_MIGRATIONS) == SCHEMA_VERSION

#: the advisory lock two instances migrating one database at once take ("ACPS")
_MIGRATION_LOCK = 0x41435053

_PARAMS: dict[str, str] = {}


def _sql(statement: str) -> str:
    """A statement written with ``?`` parameters, in psycopg's ``%s``."""
    found = _PARAMS.get(statement)
    if found is None:
        found = _PARAMS[statement] = statement.replace("?", "%s")
    return found


def one_line(exc: BaseException) -> str:
    """A database error's message on one line."""
    return " ".join(str(exc).split()) or type(exc).__name__


def shown_dsn(dsn: str) -> str:
    """The DSN as messages name it: ``postgresql://user@host:port/db``, never the password."""
    try:
        parts = conninfo.conninfo_to_dict(dsn)
    except psycopg.Error as exc:
        raise StoreError(f"session store: not a PostgreSQL connection string ({one_line(exc)})") from None
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host') or 'localhost'}{port}/{parts.get('dbname') or ''}"


#: the journal's rows of a batch in one statement (one parse and plan, not one per row)
_EVENTS_INSERT = ("INSERT INTO events (session, seq, turn, kind, body) SELECT * FROM "
                  "unnest(%s::text[], %s::bigint[], %s::integer[], %s::text[], %s::bytea[])")


def _insert(cur: psycopg.Cursor[Any], rows: Sequence[Sequence[Any]]) -> None:
    """Insert the journal's queued rows (in their order: ``seq`` numbers them anyway)."""
    if len(rows) == 1:
        cur.execute(_sql(EVENT_INSERT), rows[0])
        return
    columns = [list(c) for c in zip(*rows, strict=True)]
    cur.execute(_EVENTS_INSERT, columns)


class _Connection:
    """The database connection (autocommit: the transactions are :class:`_PgDatabase`'s), made
    again on the next use after it was lost. ``BEGIN`` is sent with the transaction's first
    statement, and the journal's inserts are queued until the next other statement: a batch of
    the journal alone (a flood's) is sent with its ``BEGIN`` and ``COMMIT`` in one pipeline, one
    round trip (:meth:`commit`)."""

    def __init__(self, dsn: str, shown: str, timeout: float, lost: Callable[[], None]) -> None:
        self.dsn = dsn
        self.shown = shown
        self.timeout = timeout
        self.queued: list[Sequence[Any]] = []
        #: a transaction is open for the caller (``BEGIN`` asked), and whether it was sent yet
        self.in_tx = False
        self.began = False
        self._lost = lost
        self.conn = self._connect()

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=max(1, round(self.timeout)))
        conn.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")
        return conn

    def live(self) -> psycopg.Connection[Any]:
        conn = self.conn
        if conn.broken or conn.closed:  # (lost: its transaction and queue with it)
            self.queued.clear()
            self.in_tx = self.began = False
            self._lost()
            conn = self.conn = self._connect()
        return conn

    def queue(self, args: Sequence[Any]) -> None:
        self.queued.append(args)

    def execute(self, statement: str, args: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        if statement == "BEGIN":  # (sent with the transaction's first statement)
            self.live()
            self.in_tx, self.began = True, False
            return None  # type: ignore[return-value]
        if statement == "COMMIT":
            self.commit()
            return None  # type: ignore[return-value]
        conn = self._ready()
        return conn.execute(_sql(statement), args or None)

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        conn = self._ready()
        with conn.cursor() as cur:
            cur.executemany(_sql(statement), rows)

    def _ready(self) -> psycopg.Connection[Any]:
        """The connection, the open transaction begun and the queued inserts sent."""
        conn = self.live()
        if self.in_tx and not self.began:
            conn.execute("BEGIN")
            self.began = True
        if self.queued:
            self._drain(conn)
        return conn

    def commit(self) -> None:
        """End the open transaction: what is queued, and the ``COMMIT``, in one pipeline."""
        conn = self.live()
        rows, self.queued = self.queued, []
        if not self.in_tx:
            if rows:  # (no transaction: the inserts alone)
                with conn.cursor() as cur:
                    _insert(cur, rows)
            return
        began, self.in_tx, self.began = self.began, False, False
        if not began and not rows:
            return  # (nothing was written in it)
        with conn.pipeline(), conn.cursor() as cur:
            if not began:
                cur.execute("BEGIN")
            if rows:
                _insert(cur, rows)
            cur.execute("COMMIT")

    def _drain(self, conn: psycopg.Connection[Any]) -> None:
        rows, self.queued = self.queued, []
        with conn.cursor() as cur:
            _insert(cur, rows)

    def abandon(self) -> None:
        """Drop the transaction that failed (and what was queued for it)."""
        self.queued.clear()
        self.in_tx = self.began = False
        conn = self.conn
        if not (conn.broken or conn.closed) and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            with contextlib.suppress(psycopg.Error):
                self.conn.execute("ROLLBACK")

    def close(self) -> None:
        self.queued.clear()
        self.conn.close()


class _PgDatabase(_Database):
    """One PostgreSQL database used by this process's stores: as :class:`_Database` (one
    connection, one batched transaction, one lease owner, the sessions held), on PostgreSQL."""

    db: _Connection  # type: ignore[assignment]

    @classmethod
    def open_dsn(cls, dsn: str, timeout: float = 5.0) -> _PgDatabase:
        key = "postgresql:" + dsn
        found = _OPEN.get(key)
        if isinstance(found, _PgDatabase):
            return found
        shown = shown_dsn(dsn)
        made = cls.__new__(cls)
        try:
            conn = _Connection(dsn, shown, timeout, made._lost)
        except psycopg.Error as exc:
            raise StoreError(f"session store {shown}: cannot connect to PostgreSQL ({one_line(exc)})") from None
        try:
            _migrate(conn, shown)
        except psycopg.Error as exc:
            conn.close()
            raise StoreError(f"session store {shown}: cannot set up its tables ({one_line(exc)})") from None
        except BaseException:
            conn.close()
            raise
        _Database.__init__(made, key, conn)  # type: ignore[arg-type]
        _OPEN[key] = made
        return made

    def _lost(self) -> None:
        self.pending = False

    def write(self, sql: str, args: Sequence[Any]) -> Any:
        self.begin()
        try:
            if sql is EVENT_INSERT:
                self.db.queue(args)
                cur = None
            else:
                cur = self.db.execute(sql, args)
        except psycopg.Error:
            self.pending = False
            self.rollback()
            raise
        if not self.scheduled:
            self.commit()
        return cur

    errors = (psycopg.Error,)

    @property
    def name(self) -> str:
        return self.db.shown

    def rollback(self) -> None:
        self.db.abandon()

    def close(self) -> None:
        try:
            self.commit()
        finally:
            self.closed = True
            if _OPEN.get(self.key) is self:
                del _OPEN[self.key]
            self.db.close()


def _migrate(conn: _Connection, shown: str) -> None:
    """Check the database and bring its schema to :data:`SCHEMA_VERSION` (one transaction,
    under an advisory lock: two instances starting at once migrate it once)."""
    conn.execute("BEGIN")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
        marked = conn.execute("SELECT to_regclass('acplink_store') IS NOT NULL").fetchone()
        if marked and marked[0]:
            row = conn.execute("SELECT max(version) FROM acplink_store").fetchone()
            version = int(row[0] or 0) if row else 0
        else:
            taken = conn.execute("SELECT to_regclass('sessions') IS NOT NULL OR to_regclass('events') IS NOT NULL"
                                 ).fetchone()
            if taken and taken[0]:
                raise StoreError(f"session store {shown}: the database has tables named sessions or events that "
                                 "are not an acplink session store's; nothing was changed (use another database "
                                 "or schema)")
            conn.execute("CREATE TABLE acplink_store (version INTEGER NOT NULL)")
            conn.execute("INSERT INTO acplink_store VALUES (0)")
            version = 0
        refuse_newer(shown, version)
        while version < SCHEMA_VERSION:
            for statement in PG_MIGRATIONS[version].split(";"):
                if statement.strip():
                    conn.execute(statement)
            version += 1
        conn.execute("UPDATE acplink_store SET version=?", (version,))
        conn.execute("COMMIT")
    except BaseException:
        conn.abandon()
        raise
