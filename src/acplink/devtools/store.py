"""The devtools database: one SQLite file (WAL mode, so a recorder writes while the UI
reads) holding every recorded connection and one row per message.

Tables (schema version in ``PRAGMA user_version``, upgraded by :data:`MIGRATIONS`):

* ``connections``: one per recording or imported trace: where it came from, its trace
  header, start/end (wall clock), the agent's name and version, its exit code.
* ``messages``: ``(conn, seq)`` plus direction, wall and monotonic time, kind, method,
  JSON-RPC id, session id, size, error flag, schema violations (JSON), the seq of the
  message it pairs with (request ↔ response) and the latency of a response, and ``body``:
  the message's JSON (or the raw text of a line that is not JSON).

:class:`Ingest` turns trace records (those of :class:`~acplink.tools.trace.TraceWriter`)
into rows; the recorder (``acplink record --db``) and the importer both use it.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import AcpError
from ..rpc.messages import CallMatcher

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "DatabaseError", "Ingest", "Store", "default_db_path"]


class DatabaseError(AcpError):
    """The devtools database cannot be used (newer schema, not a database, unwritable)."""


#: each entry upgrades the schema by one version (the list index + 1)
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE connections (
        id INTEGER PRIMARY KEY,
        source TEXT NOT NULL,
        header TEXT,
        started REAL,
        ended REAL,
        exit_code INTEGER,
        agent_name TEXT,
        agent_version TEXT
    );
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conn INTEGER NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        dir TEXT NOT NULL,
        wall REAL,
        mono REAL,
        kind TEXT,
        method TEXT,
        rid TEXT,
        session TEXT,
        size INTEGER NOT NULL DEFAULT 0,
        error INTEGER NOT NULL DEFAULT 0,
        violations TEXT,
        pair INTEGER,
        latency REAL,
        is_json INTEGER NOT NULL DEFAULT 1,
        body BLOB
    );
    CREATE UNIQUE INDEX messages_conn_seq ON messages(conn, seq);
    CREATE INDEX messages_conn_session ON messages(conn, session);
    CREATE INDEX messages_conn_method ON messages(conn, method, kind);
    CREATE INDEX messages_conn_bad ON messages(conn) WHERE error = 1 OR violations IS NOT NULL;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def default_db_path() -> Path:
    """``$XDG_STATE_HOME/acplink/devtools.sqlite`` (``~/.local/state/...`` by default)."""
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "acplink" / "devtools.sqlite"


@dataclass
class ConnectionRow:
    id: int
    source: str
    header: dict[str, Any]
    started: float | None
    ended: float | None
    exit_code: int | None
    agent_name: str | None
    agent_version: str | None
    messages: int = 0
    errors: int = 0
    turns: int = 0
    last_wall: float | None = None
    sessions: tuple[str, ...] = ()

    @property
    def duration(self) -> float | None:
        end = self.ended or self.last_wall
        return None if end is None or self.started is None else max(0.0, end - self.started)


class Store:
    """One open devtools database (created and upgraded as needed)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False, isolation_level=None)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise DatabaseError(f"cannot open the devtools database {os.fspath(self.path)!r}: {exc}") from None
        try:
            self._migrate()
        except BaseException:
            self.db.close()
            raise
        self.lock = threading.Lock()

    def _migrate(self) -> None:
        try:
            self._upgrade()
        except sqlite3.DatabaseError as exc:
            raise DatabaseError(f"{os.fspath(self.path)!r} is not a usable devtools database: {exc}") from None
        except OSError as exc:
            raise DatabaseError(f"cannot open the devtools database {os.fspath(self.path)!r}: "
                                f"{exc.strerror or exc}") from None

    def _upgrade(self) -> None:
        self.db.execute("PRAGMA busy_timeout = 30000")
        version = int(self.db.execute("PRAGMA user_version").fetchone()[0])
        if version > SCHEMA_VERSION:
            raise DatabaseError(
                f"the devtools database {os.fspath(self.path)!r} was written by a newer acplink (schema version "
                f"{version}; this acplink knows up to {SCHEMA_VERSION}): upgrade acplink or use another --db")
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        for n in range(version, SCHEMA_VERSION):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                for statement in _statements(MIGRATIONS[n]):
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version = {n + 1}")
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        self.db.close()

    # -- writing -------------------------------------------------------------------------------

    def new_connection(self, source: str, header: dict[str, Any] | None = None, started: float | None = None) -> int:
        with self.lock:
            cur = self.db.execute("INSERT INTO connections (source, header, started) VALUES (?, ?, ?)",
                                  (source, orjson.dumps(header or {}).decode(), started or time.time()))
            return int(cur.lastrowid or 0)

    # -- reading -------------------------------------------------------------------------------

    def connections(self, search: str = "") -> list[ConnectionRow]:
        """Every connection, newest first, with its counts; ``search``: text in its source, agent,
        or session ids."""
        ids = [r[0] for r in self.db.execute("SELECT id FROM connections ORDER BY id DESC")]
        out = []
        needle = search.strip().lower()
        for conn in ids:
            row = self.connection(conn)
            if row is None or (needle and needle not in " ".join(
                    map(str, (row.id, row.source, row.agent_name, row.agent_version, *row.sessions))).lower()):
                continue
            out.append(row)
        return out

    def connection(self, conn: int) -> ConnectionRow | None:
        """One connection with its counts (each an index lookup, so a huge one costs no more)."""
        r = self.db.execute("SELECT id, source, header, started, ended, exit_code, agent_name, agent_version "
                            "FROM connections WHERE id = ?", (conn,)).fetchone()
        if r is None:
            return None

        def one(sql: str) -> Any:
            got = self.db.execute(sql, (conn,)).fetchone()
            return None if got is None else got[0]  # (a connection with no message has no last one)

        return ConnectionRow(
            r[0], r[1], _loads(r[2]) or {}, r[3], r[4], r[5], r[6], r[7],
            messages=one("SELECT count(*) FROM messages WHERE conn = ?"),
            errors=one("SELECT count(*) FROM messages WHERE conn = ? AND (error = 1 OR violations IS NOT NULL)"),
            turns=one("SELECT count(*) FROM messages WHERE conn = ? AND method = 'session/prompt' "
                      "AND kind = 'request'"),
            last_wall=one("SELECT wall FROM messages WHERE conn = ? ORDER BY seq DESC LIMIT 1"),
            sessions=tuple(s for (s,) in self.db.execute(
                "SELECT DISTINCT session FROM messages WHERE conn = ? AND session IS NOT NULL", (conn,))))

    def last_message_id(self) -> int:
        return int(self.db.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])

    def rows(self, conn: int, where: str = "", params: Sequence[Any] = (), *, limit: int | None = None,
             columns: str = "*", order: str = "seq") -> list[sqlite3.Row]:
        cur = self.db.cursor()
        cur.row_factory = sqlite3.Row
        sql = f"SELECT {columns} FROM messages WHERE conn = ?{' AND ' + where if where else ''} ORDER BY {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return list(cur.execute(sql, (conn, *params)))

    def records(self, conn: int, session: str | None = None) -> Iterator[dict[str, Any]]:
        """The connection's messages as trace records (header first), for the analysis."""
        c = self.connection(conn)
        header = (c.header if c else None) or {}
        yield {"type": "header", **header}
        # a recording validated as it went (its header says so) needs no second validation: a
        # message stored without violations has none (the analysis re-validates only otherwise)
        checked = header.get("validated") is True
        where, params = ("session = ? OR session IS NULL", (session,)) if session else ("", ())
        for r in self.rows(conn, where, params):
            yield row_record(r, checked)
        if c is not None and c.exit_code is not None:
            yield {"type": "exit", "code": c.exit_code}


def row_record(r: sqlite3.Row, checked: bool = False) -> dict[str, Any]:
    """A row as a trace record; ``checked``: the row was validated when stored (no violations
    stored means none, said with an empty list)."""
    rec: dict[str, Any] = {"type": "message", "seq": r["seq"], "dir": r["dir"], "mono": r["mono"],
                           "wall": r["wall"], "size": r["size"]}
    if r["is_json"]:
        rec["msg"] = orjson.loads(r["body"]) if r["body"] is not None else None
    else:
        rec["raw"] = bytes(r["body"] or b"").decode("utf-8", "replace")
    if r["violations"] is not None:
        rec["violations"] = orjson.loads(r["violations"])
    elif checked and r["is_json"]:
        rec["violations"] = []
    return rec


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _loads(text: Any) -> Any:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


class Ingest:
    """Trace records of one connection → rows. Rows are written in transactions of up to
    ``batch`` records; :meth:`flush` commits what is pending (the recorder calls it whenever
    its queue is empty, so a live view sees messages at once and a flood is batched)."""

    def __init__(self, store: Store, source: str, *, batch: int = 2000) -> None:
        self.store = store
        self.source = source
        self.batch = batch
        self.conn: int | None = None
        self._pending: list[tuple[Any, ...]] = []
        self._pairs: list[tuple[int, int, int]] = []
        self._calls: CallMatcher[tuple[int, float, str | None, str | None]] = CallMatcher()
        self._init_ids: set[tuple[str, Any]] = set()
        self._agent: tuple[str | None, str | None] | None = None
        self._exit: Any = None
        self.count = 0
        #: why the database stopped taking rows (it never breaks the recording: see :meth:`__call__`)
        self.failed: str | None = None
        self.ended = False
        self._last_wall: float | None = None

    def __call__(self, rec: dict[str, Any]) -> None:
        """A :data:`~acplink.tools.trace.TraceListener`. A database error (disk full, locked
        for too long) stops the rows, not the caller: it is kept in :attr:`failed`."""
        if self.failed is None:
            try:
                self._record(rec)
            except sqlite3.Error as exc:
                self.failed = f"{type(exc).__name__}: {exc}"

    def _record(self, rec: dict[str, Any]) -> None:
        typ = rec.get("type")
        if typ == "header" or self.conn is None:
            header = {k: v for k, v in rec.items() if k != "type"} if typ == "header" else {}
            self.conn = self.store.new_connection(self.source, header, rec.get("wall"))
            if typ == "header":
                return
        if typ == "message":
            self._message(rec)
        elif typ == "exit":
            self._exit = rec.get("code")
            if isinstance(rec.get("wall"), (int, float)):
                self._last_wall = float(rec["wall"])
            self._commit()

    def _message(self, rec: dict[str, Any]) -> None:
        seq = int(rec.get("seq") or self.count + 1)
        self.count += 1
        d = str(rec.get("dir"))
        mono = float(rec.get("mono") or 0.0)
        if isinstance(rec.get("wall"), (int, float)):
            self._last_wall = float(rec["wall"])
        method = rec.get("method")
        kind = rec.get("kind")
        rid = rec.get("id")
        session: str | None = None
        pair: int | None = None
        latency: float | None = None
        error = 1 if rec.get("error") else 0
        if "msg" in rec:
            msg = rec["msg"]
            body = orjson.dumps(msg)
            is_json = 1
            if isinstance(msg, dict):
                kind = kind or _kind(msg)
                rid = msg.get("id", rid)
                params = msg.get("params")
                if isinstance(params, dict) and isinstance(params.get("sessionId"), str):
                    session = params["sessionId"]
                if kind == "request":
                    method = msg.get("method", method)
                    self._calls.sent(d, rid, (seq, mono, method if isinstance(method, str) else None, session))
                elif kind == "response":
                    error = 1 if "error" in msg else error
                    call = self._calls.answer(d, rid)
                    if call is not None:
                        pair, started, method, session = call[0], call[1], call[2], call[3]
                        latency = mono - started
                        self._pairs.append((seq, self.conn or 0, pair))
                        result = msg.get("result")
                        if session is None and isinstance(result, dict) and isinstance(result.get("sessionId"), str):
                            session = result["sessionId"]
                        if method == "initialize" and isinstance(result, dict):
                            info = result.get("agentInfo")
                            if isinstance(info, dict):
                                self._agent = (_str(info.get("title") or info.get("name")), _str(info.get("version")))
                elif kind == "notification":
                    method = msg.get("method", method)
        else:
            body = str(rec.get("raw", "")).encode()
            is_json = 0
            kind = kind or "invalid"
        violations = rec.get("violations")
        self._pending.append((self.conn, seq, d, rec.get("wall"), mono, kind,
                              _str(method), None if rid is None else orjson.dumps(rid).decode(), session,
                              int(rec.get("size") or len(body)), error,
                              orjson.dumps(violations).decode() if violations else None, pair, latency, is_json, body))
        if len(self._pending) >= self.batch:
            self._commit()

    def flush(self) -> None:
        """Commit the pending rows (and the agent's name, the exit code, once known)."""
        if self.failed is None:
            try:
                self._commit()
            except sqlite3.Error as exc:
                self.failed = f"{type(exc).__name__}: {exc}"

    def _commit(self) -> None:
        if not self._pending and self._agent is None and self._exit is None:
            return
        db = self.store.db
        with self.store.lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT OR REPLACE INTO messages (conn, seq, dir, wall, mono, kind, method, rid, "
                               "session, size, error, violations, pair, latency, is_json, body) "
                               "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", self._pending)
                db.executemany("UPDATE messages SET pair = ? WHERE conn = ? AND seq = ?", self._pairs)
                if self._agent is not None:
                    db.execute("UPDATE connections SET agent_name = ?, agent_version = ? WHERE id = ?",
                               (*self._agent, self.conn))
                if self._exit is not None:
                    self.ended = True
                    db.execute("UPDATE connections SET exit_code = ?, ended = ? WHERE id = ?",
                               (self._exit if isinstance(self._exit, int) else None,
                                self._last_wall or time.time(), self.conn))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        self._pending.clear()
        self._pairs.clear()
        self._agent = None
        self._exit = None

    def close(self) -> None:
        """Commit the rest and mark the connection ended (even without an exit code)."""
        if self.conn is not None and self._exit is None and not self.ended:
            self._exit = "ended"  # (not an int: the exit code stays unknown)
        self.flush()


def _kind(msg: dict[str, Any]) -> str:
    if isinstance(msg.get("method"), str):
        return "request" if "id" in msg else "notification"
    return "response" if "result" in msg or "error" in msg else "invalid"


def _str(x: Any) -> str | None:
    return None if x is None else str(x)
