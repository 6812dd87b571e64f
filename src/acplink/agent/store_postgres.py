""":class:`PostgresStore`: sessions and their history in a PostgreSQL database (psycopg 3:
``pip install 'acplink[postgres]'``), shared by several agent instances.

The store is the SQLite store's (:class:`~acplink.agent.store_sqlite.SqlStore`): the same
tables and schema versions, the same journal, batching and writer lease, on PostgreSQL
(:mod:`._postgres_db`). What differs:

- the database: its tables are marked as acplink's by ``acplink_store`` (the schema version);
  tables named ``sessions`` or ``events`` without it → :class:`~acplink.errors.StoreError`,
  nothing changed; a newer schema → refused with both versions; an older one → migrated, in
  one transaction under an advisory lock (two instances starting at once migrate it once).
- start: PostgreSQL unreachable → one :class:`~acplink.errors.StoreError` line naming the
  server (never the password).
- lost mid-run: the requests that need the database fail with a clear error (a prompt is
  refused before it runs; updates of a running turn are still sent, the batch that was lost
  is logged once); sessions already held keep being served; the next use reconnects.
- the lease: taken with the session's row locked (``SELECT ... FOR UPDATE``), so two instances
  loading one session at once cannot both take it; the holder on another machine is waited
  out (``lease_seconds``), a holder on this machine that no longer runs at once.
- the journal's inserts of a batch are sent together at its commit (one round trip).
"""

from __future__ import annotations

from typing import Any

import psycopg

from ._postgres_db import _PgDatabase, one_line, shown_dsn
from .store_sqlite import LEASE_SECONDS, SqlStore

__all__ = ["GROUP_COMMIT_BYTES", "PostgresStore"]

#: how many bytes of a flood's updates one commit covers by default (a PostgreSQL commit is a
#: round trip and a WAL flush: 16 KB write batches paid it some 70 updates at a time)
GROUP_COMMIT_BYTES = 256 * 1024


class PostgresStore(SqlStore):
    """Sessions and their history in the PostgreSQL database ``dsn`` (a libpq connection
    string or ``postgresql://`` URL); its tables are created or migrated when first used. See
    the module for what differs from :class:`~acplink.agent.SqliteStore`."""

    _errors = (psycopg.Error,)
    _lock_row = " FOR UPDATE"

    def __init__(self, dsn: str, *, lease_seconds: float = LEASE_SECONDS, timeout: float = 5.0,
                 group_commit_bytes: int = GROUP_COMMIT_BYTES) -> None:
        self.dsn = dsn
        #: the journal's commits are grouped: up to this many bytes of updates per commit (a
        #: flood's write batches grow to it; a lone update is still written, and committed, at once)
        self.group_commit_bytes = group_commit_bytes
        #: the database as messages name it (no password)
        self.path = shown_dsn(dsn)
        self.lease_seconds = lease_seconds
        self._closed = False
        #: how long connecting, or waiting for another instance's lock on a row, may take
        self.timeout = timeout
        self._open_file = self._open_database()  # (checked now: unreachable or foreign fails here)

    def _open_database(self) -> _PgDatabase:
        return _PgDatabase.open_dsn(self.dsn, self.timeout)

    def _describe(self, exc: Exception) -> str:
        return one_line(exc)

    @property
    def schema_version(self) -> int:
        row: Any = self._db.execute("SELECT max(version) FROM acplink_store").fetchone()
        return int(row[0])
