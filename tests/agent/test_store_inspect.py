"""``acplink inspect STORE`` (docs/sessions.md, "Looking inside a store"): a session store's
sessions and one session's history, read-only: the store is never written, migrated or leased,
on SQLite and PostgreSQL; a foreign, corrupt or newer store is one clear line (exit status 2)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import connect
from acplink.agent import AgentSession, SqliteStore
from acplink.agent.store_reader import open_store_reader
from acplink.agent.store_sqlite import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from acplink.errors import StoreError

AGENT = str(Path(__file__).with_name("store_agent.py"))


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acplink", "inspect", *args], capture_output=True, text=True,
                          timeout=60)


async def _conversation(db: str, cwd: Path) -> tuple[str, str]:
    """Two sessions stored by the store agent (a real process): one talked to and titled, one
    archived. Returns their ids."""
    async with connect([sys.executable, AGENT, db]) as client:
        talked = await client.new_session(cwd=cwd)
        assert await talked.prompt("hello").text() == "turn 1: hello"
        await talked.prompt("title Groceries").text()
        other = await client.new_session(cwd=cwd)
        await client.conn.call("session/archive", session_id=other.session_id)
        return talked.session_id, other.session_id


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _sqlite(path: Path, sql: str) -> list[Any]:
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


async def test_inspect_lists_the_sessions_and_shows_a_history_without_writing(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    talked, archived = await _conversation(str(db), tmp_path)
    other = SqliteStore(db)  # (a session of a server token's principal: listed too)
    other["sess_bobs"] = AgentSession("sess_bobs", "/elsewhere", principal="token:abc")
    other.close()
    before = _digest(db), _sqlite(db, "SELECT id, owner, lease_until, updated FROM sessions ORDER BY id")
    listed = inspect(str(db))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == f"session store {db} (schema version {SCHEMA_VERSION}): 3 sessions"
    by_id = {line.split()[0]: line for line in lines[1:]}
    assert set(by_id) == {talked, archived, "sess_bobs"}
    assert '"Groceries"' in by_id[talked] and "turns 2" in by_id[talked] and " local " in by_id[talked]
    assert "archived" in by_id[archived] and "token:abc" in by_id["sess_bobs"]
    shown = inspect(str(db), "--session", talked)
    assert shown.returncode == 0, shown.stderr
    history = [line.split(None, 3)[2:] for line in shown.stdout.splitlines()[1:]]
    assert history == [["user", "message   hello"], ["agent", "message  turn 1: hello"],
                       ["tool", "call      look [completed]"], ["end", "end_turn"],
                       ["user", "message   title Groceries"], ["end", "end_turn"]]
    data = json.loads(inspect(str(db), "--session", talked, "--json").stdout)
    assert data["session"]["title"] == "Groceries" and data["session"]["held_by"] is None
    assert [e["kind"] for e in data["history"]][:2] == ["user_message", "agent_message"]
    assert {s["session_id"] for s in json.loads(inspect(str(db), "--json").stdout)["sessions"]} == set(by_id)
    # nothing was written: the file's bytes, its leases and times
    after = _digest(db), _sqlite(db, "SELECT id, owner, lease_until, updated FROM sessions ORDER BY id")
    assert after == before
    missing = inspect(str(db), "--session", "sess_nope")
    assert (missing.returncode, missing.stderr.strip()) == (2, f"acplink: error: session store {db}: no session "
                                                               "'sess_nope'")


async def test_a_session_an_agent_holds_is_shown_held_and_its_turn_running(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    async with connect([sys.executable, AGENT, str(db)]) as client:
        session = await client.new_session(cwd=tmp_path)
        await session.prompt("hello").text()
        turn = session.prompt("wait")  # (a turn running while the store is read)
        async for _ in turn:  # (its first update: the turn's prompt is stored)
            break
        reader = open_store_reader(str(db))
        try:
            found = reader.session(session.session_id)
            assert found is not None and found.held_by is not None and found.turns == 2
            running = [(e.kind, e.text) for e in reader.history(session.session_id) if e.turn == 2]
            assert running == [("user_message", "wait"), ("agent_message", "waiting")]  # (not "interrupted")
        finally:
            reader.close()
        await turn.cancel()
        assert (await turn.result()).stop_reason == "cancelled"
        # the agent keeps its lease and goes on writing: the reader took nothing
        assert await session.prompt("after").text() == "turn 3: after"


def test_an_older_store_is_read_as_it_is_never_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])  # (version 1: no archiving, no principals)
    db.execute(f"PRAGMA application_id={APPLICATION_ID}")
    db.execute("PRAGMA user_version=1")
    db.execute("INSERT INTO sessions (id, cwd, created, updated) VALUES ('sess_old', '/w', '2026-01-01', '2026-01-01')")
    db.execute("INSERT INTO events VALUES ('sess_old', 1, 1, 'prompt', '{\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"}]}')")
    db.commit()
    db.close()
    before = _digest(path)
    shown = inspect(str(path))
    assert shown.returncode == 0, shown.stderr
    assert "(schema version 1): 1 session" in shown.stdout and "sess_old" in shown.stdout and " local " in shown.stdout
    history = inspect(str(path), "--session", "sess_old").stdout
    assert "hi" in history and "interrupted" in history  # (a turn without its end, nobody holding it)
    assert _digest(path) == before and _sqlite(path, "PRAGMA user_version") == [(1,)]


@pytest.mark.parametrize("content", ["newer", "corrupt", "foreign", "missing"])
def test_a_store_that_cannot_be_read_is_one_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "x.sqlite3"
    if content == "corrupt":
        path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 8)
    elif content != "missing":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE sessions (token TEXT)")
        if content == "newer":
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 7}")
        db.commit()
        db.close()
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(StoreError) as caught:
        open_store_reader(str(path))
    message = str(caught.value)
    assert message.startswith(f"session store {path}: ") and "\n" not in message
    assert {"newer": f"schema version {SCHEMA_VERSION + 7} was written by a newer acplink",
            "corrupt": "not a usable SQLite database", "foreign": "not an acplink session store",
            "missing": "no such file"}[content] in message
    assert (path.read_bytes() if path.exists() else None) == before
    if content != "missing":  # (a missing one is no SQLite file: inspect reads it as a trace)
        shown = inspect(str(path))
        assert (shown.returncode, shown.stderr.strip(), shown.stdout) == (2, f"acplink: error: {message}", "")


async def test_a_postgres_store_is_inspected_read_only(tmp_path: Path, pg_dsn: str) -> None:
    import psycopg

    talked, _ = await _conversation(pg_dsn, tmp_path)
    with psycopg.connect(pg_dsn) as conn:
        before = conn.execute("SELECT id, owner, lease_until, updated FROM sessions ORDER BY id").fetchall()
    shown = inspect(pg_dsn)
    assert shown.returncode == 0, shown.stderr
    assert f"(schema version {SCHEMA_VERSION}): 2 sessions" in shown.stdout and talked in shown.stdout
    assert "turn 1: hello" in inspect(pg_dsn, "--session", talked).stdout
    reader = open_store_reader(pg_dsn)
    try:
        with pytest.raises(StoreError, match="read-only transaction"):  # (its session cannot write)
            reader._rows("UPDATE sessions SET title='x'")
    finally:
        reader.close()
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT id, owner, lease_until, updated FROM sessions ORDER BY id").fetchall() == before
        conn.execute("UPDATE acplink_store SET version = %s", (SCHEMA_VERSION + 1,))
    refused = inspect(pg_dsn)
    assert refused.returncode == 2 and f"schema version {SCHEMA_VERSION + 1} was written by a newer" in refused.stderr
