"""The devtools database: one SQLite file (WAL mode, so a recorder writes while the UI
reads) holding every recorded connection and one row per message.

Tables (schema version in ``PRAGMA user_version``, upgraded by :data:`MIGRATIONS`):

* ``connections``: one per recording or imported trace: where it came from, its trace
  header, start/end (wall clock), the agent's name and version, its exit code.
* ``messages``: ``(conn, seq)`` plus direction, wall and monotonic time, kind, method,
  JSON-RPC id, session id, size, error flag (1, or 2 for an expected error), schema violations (JSON), the seq of the
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
from ..protocol.initialize import agent_info, client_info
from ..protocol.messages import CallMatcher
from ..tools.analysis import expected_error
from ..tools.spool import claim_spool, read_spool, spool_dir
from ..tools.trace import TraceWriter
from ..tools.validate import agreed_version, validate_message

__all__ = ["EXPECTED_ERROR", "MIGRATIONS", "SCHEMA_VERSION", "DatabaseError", "Ingest", "Store", "default_db_path"]

#: the ``error`` flag of an expected error response (:func:`~acplink.tools.analysis.expected_error`,
#: e.g. a read of a file that does not exist): shown as informational, not counted as an error
#: (1 is an error, 0 none)
EXPECTED_ERROR = 2


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
    # 2: the recorder's spool (recovery), rows whose schema validation is pending (checked = 0:
    # validated later, off the recorder's path; NULL: an older row, see its header), and the
    # cached views of a connection (valid while no row was added: ``upto`` is its last row id)
    """
    ALTER TABLE connections ADD COLUMN spool TEXT;
    ALTER TABLE messages ADD COLUMN checked INTEGER;
    CREATE INDEX messages_unchecked ON messages(conn, seq) WHERE checked = 0;
    CREATE TABLE views (
        conn INTEGER NOT NULL REFERENCES connections(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        upto INTEGER NOT NULL,
        data BLOB,
        PRIMARY KEY (conn, name)
    );
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
    client_name: str | None = None
    client_version: str | None = None
    messages: int = 0
    errors: int = 0
    turns: int = 0
    last_wall: float | None = None
    sessions: tuple[str, ...] = ()

    @property
    def agent(self) -> str:
        """The agent's name and version (from ``initialize``), "?" when unknown."""
        return " ".join(x for x in (self.agent_name, self.agent_version) if x) or "?"

    @property
    def client(self) -> str:
        """The client's name and version (from ``initialize``), "?" when unknown."""
        return " ".join(x for x in (self.client_name, self.client_version) if x) or "?"

    @property
    def duration(self) -> float | None:
        end = self.ended or self.last_wall
        return None if end is None or self.started is None else max(0.0, end - self.started)


class Store:
    """One open devtools database (created and upgraded as needed)."""

    def __init__(self, path: str | os.PathLike[str], *, recover: bool = True) -> None:
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
        if recover:
            self.recover()

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
        spool = (header or {}).get("spool")
        with self.lock:
            cur = self.db.execute("INSERT INTO connections (source, header, started, spool) VALUES (?, ?, ?, ?)",
                                  (source, orjson.dumps(header or {}).decode(), started or time.time(),
                                   os.path.basename(spool) if isinstance(spool, str) else None))
            return int(cur.lastrowid or 0)

    # -- recovery ------------------------------------------------------------------------------

    def recover(self) -> list[int]:
        """Store what recorders that are gone (SIGKILLed, crashed, their database was locked)
        left in their spools: the rows not stored yet, then the connection is marked ended.
        The connections recovered; a spool still locked by its recorder is left alone."""
        folder = spool_dir(self.path)
        if not folder.is_dir():
            return []
        done = []
        for path in sorted(folder.glob("*.spool")):
            fd = claim_spool(path)
            if fd is None:
                continue
            try:
                row = self.db.execute("SELECT id, source, header FROM connections WHERE spool = ?",
                                      (path.name,)).fetchone()
                if row is not None:  # (none: the recorder died before it forwarded anything)
                    self._replay(fd, int(row[0]), str(row[1]), _loads(row[2]) or {})
                    done.append(int(row[0]))
                path.unlink(missing_ok=True)
            except sqlite3.Error as exc:
                raise DatabaseError(f"cannot recover the recording spool {os.fspath(path)!r}: {exc}") from None
            finally:
                os.close(fd)
        return done

    def _replay(self, fd: int, conn: int, source: str, header: dict[str, Any]) -> None:
        stored = int(self.db.execute("SELECT coalesce(max(seq), 0) FROM messages WHERE conn = ?",
                                     (conn,)).fetchone()[0])
        ingest = Ingest(self, source, conn=conn, skip_through=stored)
        writer = TraceWriter(None, redact=header.get("redacted") is True, validate=False, listeners=[ingest])
        for kind, data, mono, wall in read_spool(fd):
            if kind == "exit":
                ingest({"type": "exit", "code": int(data) if data.lstrip(b"-").isdigit() else None, "wall": wall})
            elif kind.startswith("eof-"):
                writer.eof(kind[4:], mono, wall)
            else:
                writer.feed(kind, data, mono, wall)
        writer.close()
        ingest.close()
        if ingest.failed:
            raise sqlite3.OperationalError(ingest.failed)

    # -- validation (off the recorder's path) --------------------------------------------------

    def validate_pending(self, conn: int, upto: int | None = None, *, limit: int | None = None,
                         budget: float | None = None) -> bool:
        """Validate the connection's rows stored unvalidated (up to seq ``upto``, at most
        ``limit`` rows, for about ``budget`` seconds) and remember the result. True: some
        are still pending."""
        deadline = None if budget is None else time.monotonic() + budget
        version = self._versions(conn)
        left = limit
        while True:
            n = 2000 if left is None else min(left, 2000)
            rows = self.db.execute(
                "SELECT seq, kind, method, body FROM messages WHERE conn = ? AND checked = 0 AND seq <= ? "
                "ORDER BY seq LIMIT ?", (conn, upto if upto is not None else 1 << 62, n)).fetchall()
            if not rows:
                return False
            updates = []
            for seq, kind, method, body in rows:
                answered = method if kind == "response" else None
                errs = validate_message(orjson.loads(body), answered, version[1] if seq >= version[0] else 1)
                updates.append((orjson.dumps(errs).decode() if errs else None, conn, seq))
            with self.lock:
                self.db.execute("BEGIN IMMEDIATE")
                try:
                    self.db.executemany("UPDATE messages SET violations = ?, checked = 1 WHERE conn = ? AND seq = ?",
                                        updates)
                    self.db.execute("COMMIT")
                except BaseException:
                    self.db.execute("ROLLBACK")
                    raise
            if left is not None:
                left -= len(rows)
                if left <= 0:
                    return True
            if deadline is not None and time.monotonic() > deadline:
                return True

    def _versions(self, conn: int) -> tuple[int, int]:
        """(seq of the initialize response, the version agreed from it on)."""
        got = self.db.execute("SELECT seq, body FROM messages WHERE conn = ? AND kind = 'response' AND "
                              "method = 'initialize' AND is_json = 1 ORDER BY seq LIMIT 1", (conn,)).fetchone()
        if got is None:
            return (1 << 62, 1)
        return (int(got[0]), agreed_version(_loads(got[1]), "initialize", 1))

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
                    map(str, (row.id, row.source, row.agent, row.client, *row.sessions))).lower()):
                continue
            out.append(row)
        return out

    def connection_count(self) -> int:
        return int(self.db.execute("SELECT count(*) FROM connections").fetchone()[0])

    def connection(self, conn: int) -> ConnectionRow | None:
        """One connection with its counts (each an index lookup, so a huge one costs no more)."""
        r = self.db.execute("SELECT id, source, header, started, ended, exit_code, agent_name, agent_version "
                            "FROM connections WHERE id = ?", (conn,)).fetchone()
        if r is None:
            return None

        def one(sql: str) -> Any:
            got = self.db.execute(sql, (conn,)).fetchone()
            return None if got is None else got[0]  # (a connection with no message has no last one)

        client, agent = self._peers(conn)
        return ConnectionRow(
            r[0], r[1], _loads(r[2]) or {}, r[3], r[4], r[5], r[6] or agent[0], r[7] or agent[1], *client,
            messages=one("SELECT count(*) FROM messages WHERE conn = ?"),
            errors=one("SELECT count(*) FROM messages WHERE conn = ? AND (error = 1 OR violations IS NOT NULL)"),
            turns=one("SELECT count(*) FROM messages WHERE conn = ? AND method = 'session/prompt' "
                      "AND kind = 'request'"),
            last_wall=one("SELECT wall FROM messages WHERE conn = ? ORDER BY seq DESC LIMIT 1"),
            sessions=tuple(s for (s,) in self.db.execute(
                "SELECT DISTINCT session FROM messages WHERE conn = ? AND session IS NOT NULL", (conn,))))

    def _peers(self, conn: int) -> tuple[tuple[str | None, str | None], tuple[str | None, str | None]]:
        """The (name, version) of the client and of the agent, from the connection's first
        ``initialize`` request and response (either version's fields; the agent's is also
        kept in ``connections`` once known, but not by recordings of older acplink versions)."""
        client: Any = None
        agent: Any = None
        for kind, body in self.db.execute("SELECT kind, body FROM messages WHERE conn = ? AND method = 'initialize' "
                                          "AND is_json = 1 ORDER BY seq LIMIT 2", (conn,)):
            msg = _loads(body)
            if kind == "request" and client is None and isinstance(msg, dict):
                client = client_info(msg.get("params"))
            elif kind == "response" and agent is None and isinstance(msg, dict):
                agent = agent_info(msg.get("result"))
        return _name_version(client), _name_version(agent)

    def last_message_id(self) -> int:
        return int(self.db.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0])

    def live_state(self) -> str:
        """What the live feed compares: the last message row and the connections' state (count,
        newest, how many still running, the last end). A page keeps the value it was rendered
        with and the feed starts from it, so nothing committed in between is missed."""
        conns = self.db.execute("SELECT count(*), max(id), sum(ended IS NULL), max(ended) FROM connections").fetchone()
        return ",".join(str(x) for x in (self.last_message_id(), *conns))

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
        # a recording validated as it went (its header says so, or the row's ``checked``) needs
        # no second validation: a message stored without violations has none
        self.validate_pending(conn)
        checked = header.get("validated") is True
        where, params = (" AND (session = ? OR session IS NULL)", (session,)) if session else ("", ())
        # (plain tuples, not sqlite3.Row: a 100k-message session is read here in one go)
        for row in self.db.execute(f"SELECT {_RECORD_COLUMNS} FROM messages WHERE conn = ?{where} ORDER BY seq",
                                   (conn, *params)):
            yield _record(row, checked)
        if c is not None and c.exit_code is not None:
            yield {"type": "exit", "code": c.exit_code}


_RECORD_COLUMNS = "seq, dir, mono, wall, size, is_json, body, violations, checked"


def row_record(r: sqlite3.Row, checked: bool = False) -> dict[str, Any]:
    """A row as a trace record; ``checked``: the recording was validated when stored (an
    older row without violations has none, said with an empty list)."""
    return _record(tuple(r[k] for k in _RECORD_COLUMNS.split(", ")), checked)


def _record(row: Any, checked: bool) -> dict[str, Any]:
    seq, d, mono, wall, size, is_json, body, violations, row_checked = row
    rec: dict[str, Any] = {"type": "message", "seq": seq, "dir": d, "mono": mono, "wall": wall, "size": size}
    if is_json:
        rec["msg"] = orjson.loads(body) if body is not None else None
    else:
        rec["raw"] = bytes(body or b"").decode("utf-8", "replace")
    if violations is not None:
        rec["violations"] = orjson.loads(violations)
    elif (checked if row_checked is None else row_checked == 1) and is_json:
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

    def __init__(self, store: Store, source: str, *, batch: int = 2000, conn: int | None = None,
                 skip_through: int = 0) -> None:
        self.store = store
        self.source = source
        self.batch = batch
        #: an existing connection to add to (recovery): its header is not stored again, and
        #: messages up to seq ``skip_through`` (stored already) only rebuild the pairing
        self.conn = conn
        self.skip_through = skip_through
        #: rows come validated (the header says so): else validation is pending (checked = 0)
        self._checked = 0
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
            if self.conn is None:
                self._checked = 1 if header.get("validated") is True else 0
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
                        if error and expected_error(method, msg.get("error")):
                            error = EXPECTED_ERROR  # (informational: not counted, not red)
                        latency = mono - started
                        self._pairs.append((seq, self.conn or 0, pair))
                        result = msg.get("result")
                        if session is None and isinstance(result, dict) and isinstance(result.get("sessionId"), str):
                            session = result["sessionId"]
                        if method == "initialize":
                            info = agent_info(result)  # (v1's agentInfo, v2's info)
                            if info is not None:
                                self._agent = _name_version(info)
                elif kind == "notification":
                    method = msg.get("method", method)
        else:
            body = str(rec.get("raw", "")).encode()
            is_json = 0
            kind = kind or "invalid"
        if seq <= self.skip_through:
            return
        violations = rec.get("violations")
        self._pending.append((self.conn, seq, d, rec.get("wall"), mono, kind,
                              _str(method), None if rid is None else orjson.dumps(rid).decode(), session,
                              int(rec.get("size") or len(body)), error,
                              orjson.dumps(violations).decode() if violations else None, pair, latency, is_json, body,
                              self._checked if is_json else 1))
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
                               "session, size, error, violations, pair, latency, is_json, body, checked) "
                               "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", self._pending)
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


def _name_version(info: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """An implementation's (title or name, version), as the lists show it."""
    if info is None:
        return (None, None)
    return (_str(info.get("title") or info.get("name")), _str(info.get("version")))
