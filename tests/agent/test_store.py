"""Session stores (docs/sessions.md): ``SqliteStore`` files (schema, migration, bad files, the
writer lease) and the session methods acplink answers for an app that sets a store and writes
no session code, over real pipes to ``tests/agent/store_agent.py`` restarted between steps."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from acplink import Client, InvalidParams, InvalidRequest, RequestError, ResourceNotFound, StoreError, connect
from acplink.agent import AgentSession, SqliteStore
from acplink.agent.store import LOCAL_PRINCIPAL
from acplink.agent.store_sqlite import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

AGENT = str(Path(__file__).with_name("store_agent.py"))


def agent(db: Path | str, **kw: Any) -> connect:
    return connect([sys.executable, AGENT, str(db)], **kw)


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """The store the test's agents share: a SQLite file, or a new PostgreSQL database (the
    session's throwaway cluster: skipped when it cannot start)."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_dsn"))
    return tmp_path / "s.db"


async def _text(session: Any, prompt: str) -> str:
    return await session.prompt(prompt).text()


# -- the file --------------------------------------------------------------------------------------


def test_a_new_file_gets_the_current_schema(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    try:
        assert store.schema_version == SCHEMA_VERSION
    finally:
        store.close()
    db = sqlite3.connect(tmp_path / "s.db")
    assert db.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    db.close()


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_schema_is_migrated_keeping_its_sessions(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for step in MIGRATIONS[:version]:  # (a store as that version wrote it: 1, no archiving; 2, no principals)
        db.executescript(step)
    db.execute(f"PRAGMA application_id={APPLICATION_ID}")
    db.execute(f"PRAGMA user_version={version}")
    db.execute("INSERT INTO sessions (id, cwd, created, updated) VALUES ('sess_old', '/w', '2026-01-01', '2026-01-01')")
    db.execute("INSERT INTO events VALUES ('sess_old', 1, 1, 'prompt', '{\"prompt\":[{\"type\":\"text\",\"text\":\"hi\"}]}')")
    db.commit()
    db.close()
    check_migrated(SqliteStore(path))


def check_migrated(store: Any) -> None:
    """``store`` opened a version-1 store holding ``sess_old`` (one prompt "hi", no turn end):
    migrated, the session kept (closes it)."""
    try:
        assert store.schema_version == SCHEMA_VERSION
        page, cursor = store.list_sessions()
        assert [(r.session_id, r.archived) for r in page] == [("sess_old", False)] and cursor is None
        # (the principals the migration to 3 added: what was stored before is the local one's)
        assert page[0].principal == LOCAL_PRINCIPAL == store.principal_of("sess_old")
        assert store.list_sessions(principal=LOCAL_PRINCIPAL)[0] == page
        assert store.list_sessions(principal="token:someone")[0] == []
        assert store.set_archived("sess_old", True)  # (the column the migration added)
        assert store.list_sessions()[0] == []
        history = store.history("sess_old")
        assert [(e.kind, e.text) for e in history] == [("user_message", "hi"), ("turn_end", "")]
        assert history[-1].interrupted  # (a turn without its end)
    finally:
        store.close()


@pytest.mark.parametrize("content", ["newer", "corrupt", "foreign", "text"])
def test_a_file_that_is_not_ours_is_refused_and_left_alone(tmp_path: Path, content: str) -> None:
    path = tmp_path / "x.db"
    if content == "corrupt":
        path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 8)
    elif content == "text":
        path.write_text("my notes, not a database\n" * 40)
    else:
        db = sqlite3.connect(path)
        if content == "newer":
            db.executescript(MIGRATIONS[0])
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 7}")
        else:
            db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
            db.execute("INSERT INTO invoices VALUES (1, 9.5)")
        db.commit()
        db.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as err:
        SqliteStore(path)
    message = str(err.value)
    assert str(path) in message and "nothing was changed" in message
    if content == "newer":
        assert f"schema version {SCHEMA_VERSION + 7}" in message and f"up to {SCHEMA_VERSION}" in message
    if content == "foreign":
        assert "another application" in message
    assert path.read_bytes() == before
    assert not (tmp_path / "x.db-wal").exists() or content == "foreign"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="not a regular file"):
        SqliteStore(tmp_path)


def _set_owner(path: Path, sid: str, owner: str, lease_until: float) -> None:
    db = sqlite3.connect(path)
    db.execute("UPDATE sessions SET owner=?, lease_until=? WHERE id=?", (owner, lease_until, sid))
    db.commit()
    db.close()


def test_the_writer_lease(tmp_path: Path) -> None:
    """A session whose lease another live process holds is refused, saying who holds it; an
    expired lease, or one whose holder is a process of this host that no longer runs, is taken
    over; a holder whose lease was taken over is refused its next turn. (Two real processes:
    test_a_session_open_in_another_agent_process_is_refused.)"""
    path = tmp_path / "s.db"
    store = SqliteStore(path)
    try:
        store["sess_a"] = AgentSession("sess_a", "/w")
        del store["sess_a"]  # (released: its lease is free)
        host = store.owner.split(":")[0]
        _set_owner(path, "sess_a", f"{host}:{os.getppid()}:live", time.time() + 60)  # (a live process)
        with pytest.raises(InvalidRequest, match="open in another agent process") as err:
            store.open("sess_a")
        assert f"{host}:{os.getppid()}:live" in str(err.value)
        _set_owner(path, "sess_a", f"{host}:{os.getppid()}:live", time.time() - 1)  # (expired)
        assert store.open("sess_a") is not None
        del store["sess_a"]
        _set_owner(path, "sess_a", f"{host}:999999999:dead", time.time() + 60)  # (a crashed holder)
        assert store.open("sess_a") is not None
        _set_owner(path, "sess_a", "elsewhere:1:other", time.time() + 60)  # (taken over meanwhile)
        with pytest.raises(InvalidRequest, match="taken over"):
            store.begin_turn("sess_a", [])
        assert "sess_a" not in store
    finally:
        store.close()


# -- over pipes: the session methods without app code -----------------------------------------------


async def test_capabilities_are_advertised_from_the_store(tmp_path: Path) -> None:
    async with agent(tmp_path / "s.db") as client:
        caps = client.agent_capabilities
        assert caps is not None and caps.load_session is True
        sc = caps.session_capabilities
        assert sc is not None
        for name in ("list", "resume", "close", "delete", "fork", "archive", "status", "title"):
            assert getattr(sc, name) is not None, name


async def test_a_conversation_survives_a_restart(tmp_path: Path, db: Any) -> None:
    work = tmp_path / "work"
    work.mkdir()
    async with agent(db) as client:
        session = await client.new_session(cwd=work)
        assert await _text(session, "one") == "turn 1: one"
        assert await _text(session, "two") == "turn 2: two"
        seen = session.state
        sid = session.session_id
        sent_text = seen.agent_text
        sent_calls = {k: v.status for k, v in seen.tool_calls.items()}
    async with agent(db) as client:  # a new process
        loaded = await client.load_session(sid, cwd=work)
        state = loaded.state
        assert [m.text for m in state.messages if m.role == "user"] == ["one", "two"]
        assert state.agent_text == sent_text
        assert {k: v.status for k, v in state.tool_calls.items()} == sent_calls == {
            k: "completed" for k in sent_calls}
        assert len(sent_calls) == 2
        # the prompt handler sees the history: the next turn is the third
        assert await _text(loaded, "three") == "turn 3: three"
        assert await _text(loaded, "history") == (
            "user_message/1 agent_message/1 tool_call/1 turn_end/1 user_message/2 agent_message/2 tool_call/2 "
            "turn_end/2 user_message/3 agent_message/3 tool_call/3 turn_end/3 user_message/4")


async def test_list_newest_first_with_cwd_filter_and_cursor(tmp_path: Path, db: Any) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    async with agent(db) as client:
        made = [(await client.new_session(cwd=a if i % 3 else b)).session_id for i in range(60)]
        conn = client.connection
        first = await conn.call("session/list", cwd=str(a))
        assert len(first.sessions) == 40 and first.next_cursor is None
        everything = await client.list_sessions()
        assert [x.session_id for x in everything] == made[::-1]  # newest first, across pages
        page1 = await conn.call("session/list")
        assert len(page1.sessions) == 50 and page1.next_cursor
        page2 = await conn.call("session/list", cursor=page1.next_cursor)
        assert [x.session_id for x in page1.sessions + page2.sessions] == made[::-1] and page2.next_cursor is None
        in_a = await client.list_sessions(cwd=a)
        assert [x.session_id for x in in_a] == [m for i, m in enumerate(made) if i % 3][::-1]
        assert {x.cwd for x in in_a} == {str(a)}
        with pytest.raises(InvalidParams, match="cursor"):
            await conn.call("session/list", cursor="not-one-of-ours")


async def test_title_archive_status_fork_delete(tmp_path: Path, db: Any) -> None:
    async with agent(db) as client:
        conn = client.connection
        session = await client.new_session(cwd=tmp_path)
        await _text(session, "hello")
        sid = session.session_id
        assert (await conn.call("session/status", session_id=sid)).status == "open"
        assert (await conn.call("session/set_title", session_id=sid, title="Greetings")).title == "Greetings"
        assert [(x.session_id, x.title) for x in await client.list_sessions()] == [(sid, "Greetings")]
        fork = await client.fork_session(sid, cwd=tmp_path)
        assert fork.session_id != sid
        assert await _text(fork, "again") == "turn 2: again"  # (the fork has the history)
        await conn.call("session/archive", session_id=sid)
        assert [x.session_id for x in await client.list_sessions()] == [fork.session_id]
        archived = await conn.call("session/list", archived="only")
        assert [(x.session_id, x.archived) for x in archived.sessions] == [(sid, True)]
        await conn.call("session/unarchive", session_id=sid)
        await session.close()
        assert (await conn.call("session/status", session_id=sid)).status == "saved"
        await client.delete_session(fork.session_id)
        with pytest.raises(ResourceNotFound):
            await conn.call("session/status", session_id=fork.session_id)
        with pytest.raises(ResourceNotFound):
            await client.load_session(fork.session_id, cwd=tmp_path)
    async with agent(db) as client:  # the original is still there, titled
        assert [(x.session_id, x.title) for x in await client.list_sessions()] == [(sid, "Greetings")]


async def test_a_session_open_in_another_agent_process_is_refused(tmp_path: Path, db: Any) -> None:
    async with agent(db) as first:
        session = await first.new_session(cwd=tmp_path)
        await _text(session, "mine")
        async with agent(db) as second:
            with pytest.raises(RequestError, match="open in another agent process"):
                await second.load_session(session.session_id, cwd=tmp_path)
            await session.close()  # released: the other process may take it now
            loaded = await second.load_session(session.session_id, cwd=tmp_path)
            assert loaded.state.agent_text == "turn 1: mine"


async def test_v2_list_and_resume_with_replay(tmp_path: Path, db: Any) -> None:
    async with agent(db, protocol=2) as client:
        assert client.protocol_version == 2
        session = await client.new_session(cwd=tmp_path)
        assert await _text(session, "first") == "turn 1: first"
        sid = session.session_id
    async with agent(db, protocol=2) as client:
        assert [x.session_id for x in await client.list_sessions()] == [sid]
        resumed = await client.resume_session(sid, cwd=tmp_path, replay=True)
        assert [(m.role, "".join(getattr(b, "text", "") for b in m.blocks)) for m in resumed.state.messages] == [
            ("user", "first"), ("agent", "turn 1: first")]
        assert await _text(resumed, "second") == "turn 2: second"


async def test_in_memory_connections_share_a_file_without_waiting(tmp_path: Path, db: Any) -> None:
    """Two apps of one process on one file (a server's app per connection): writes of both in
    one turn of the loop do not wait on each other's lock."""
    from store_agent import build

    apps = [build(str(db)), build(str(db))]
    clients: list[Client] = [await connect(app) for app in apps]
    try:
        sessions = [await c.new_session(cwd=tmp_path) for c in clients]
        texts = await asyncio.wait_for(asyncio.gather(*(_text(s, f"hi {i}") for i, s in enumerate(sessions))), 10)
        assert texts == ["turn 1: hi 0", "turn 1: hi 1"]
        assert {x.session_id for x in await clients[0].list_sessions()} == {s.session_id for s in sessions}
    finally:
        for c in clients:
            await c.aclose()
        for app in apps:
            app.sessions.close()  # type: ignore[attr-defined]


async def test_a_locked_file_fails_the_turn_clearly_and_the_agent_goes_on(tmp_path: Path) -> None:
    """Another process holds the file's write lock past the store's ``timeout``: the prompt
    fails with an error naming the store; once the lock is gone, the next turn is stored."""
    from acplink import AgentApp, PromptContext

    db = tmp_path / "s.db"
    app = AgentApp("locked", store=SqliteStore(db, timeout=0.2))

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        await ctx.send_text(f"ok {ctx.text}")

    try:
        async with connect(app) as client:
            session = await client.new_session(cwd=tmp_path)
            assert await _text(session, "one") == "ok one"
            other = sqlite3.connect(db, isolation_level=None)
            other.execute("BEGIN EXCLUSIVE")
            try:
                with pytest.raises(RequestError) as err:
                    await _text(session, "two")
                assert "session store cannot record this turn (database is locked)" in str(err.value)
            finally:
                other.execute("ROLLBACK")
                other.close()
            assert await _text(session, "three") == "ok three"
            texts = [(e.kind, e.text) for e in app.sessions.history(session.session_id)]  # type: ignore[attr-defined]
            assert ("user_message", "three") in texts and ("agent_message", "ok three") in texts
    finally:
        app.sessions.close()  # type: ignore[attr-defined]


async def test_v2_fork_title_archive_status_delete(tmp_path: Path) -> None:
    from store_agent import build

    app = build(str(tmp_path / "s.db"))
    try:
        async with connect(app, protocol=2) as client:
            conn = client.connection
            session = await client.new_session(cwd=tmp_path)
            assert await _text(session, "one") == "turn 1: one"
            sid = session.session_id
            fork = await client.fork_session(sid, cwd=tmp_path)
            assert await _text(fork, "two") == "turn 2: two"
            assert (await conn.call("session/set_title", session_id=sid, title="T")).title == "T"
            assert (await conn.call("session/status", session_id=sid)).status == "open"
            await conn.call("session/archive", session_id=sid)
            assert [x.session_id for x in await client.list_sessions()] == [fork.session_id]
            assert (await conn.call("session/status", session_id=sid)).status == "saved"  # (archiving closed it)
            await client.delete_session(fork.session_id)
            with pytest.raises(ResourceNotFound):
                await conn.call("session/status", session_id=fork.session_id)
            await conn.call("session/unarchive", session_id=sid)
            assert [(x.session_id, x.title) for x in await client.list_sessions()] == [(sid, "T")]
    finally:
        app.sessions.close()  # type: ignore[attr-defined]


def test_demo_agent_with_a_bad_store_says_so_in_one_line(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "sessions.sqlite3").write_text("not a database\n" * 100)
    before = (tmp_path / "sessions.sqlite3").read_bytes()
    proc = subprocess.run([sys.executable, "-m", "acplink", "demo-agent", "--store", str(tmp_path)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"acplink: error: session store {tmp_path / 'sessions.sqlite3'}: not a usable SQLite database "
        "(file is not a database); nothing was changed"]
    assert (tmp_path / "sessions.sqlite3").read_bytes() == before


def test_the_metadata_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    server = {"name": "files", "command": "/bin/mcp-files", "args": ["--ro"], "env": []}
    store = SqliteStore(path)
    try:
        store["sess_m"] = AgentSession("sess_m", "/w", [server], ["/extra"], mode_id="auto", model_id="big",
                                       config={"style": "shouty"}, title="Meta")
        del store["sess_m"]
    finally:
        store.close()
    again = SqliteStore(path)
    try:
        sess = again.open("sess_m")
        assert sess is not None
        assert (sess.cwd, sess.mcp_servers, sess.additional_directories, sess.mode_id, sess.model_id, sess.config,
                sess.title) == ("/w", [server], ["/extra"], "auto", "big", {"style": "shouty"}, "Meta")
        [record] = again.list_sessions()[0]
        assert record.additional_directories == ("/extra",) and record.updated_at == sess.updated_at
    finally:
        again.close()
