"""``PostgresStore`` (docs/sessions.md): the database's schema (created, migrated, a newer or
foreign one refused), PostgreSQL unreachable at start, and lost mid-run. The behaviour shared
with ``SqliteStore`` is tested over both (tests/agent/test_store.py, test_store_crash.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import AgentApp, PromptContext, RequestError, StoreError, connect
from acplink.agent import AgentSession

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'acplink[postgres]')")

from acplink.agent import PostgresStore  # noqa: E402
from acplink.agent._postgres_db import PG_MIGRATIONS  # noqa: E402
from acplink.agent.store_sqlite import SCHEMA_VERSION  # noqa: E402


def _sql(dsn: str, *statements: str) -> list[Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        out = []
        for statement in statements:
            cur = conn.execute(statement)
            out.append(cur.fetchall() if cur.description else None)
        return out


def _tables(dsn: str) -> list[str]:
    rows = _sql(dsn, "SELECT tablename FROM pg_tables WHERE schemaname='public' ORDER BY 1")[0]
    return [r[0] for r in rows]


def test_a_new_database_gets_the_current_schema(pg_dsn: str) -> None:
    store = PostgresStore(pg_dsn)
    try:
        assert store.schema_version == SCHEMA_VERSION
        assert "password" not in store.path and store.path.startswith("postgresql://")
    finally:
        store.close()
    assert _tables(pg_dsn) == ["acplink_store", "events", "sessions"]
    again = PostgresStore(pg_dsn)  # (opened again: nothing to migrate)
    again.close()


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_schema_is_migrated_keeping_its_sessions(pg_dsn: str, version: int) -> None:
    _sql(pg_dsn, "CREATE TABLE acplink_store (version INTEGER NOT NULL)",
         f"INSERT INTO acplink_store VALUES ({version})",
         *[x for step in PG_MIGRATIONS[:version] for x in step.split(";") if x.strip()],
         "INSERT INTO sessions (id, cwd, created, updated) VALUES ('sess_old', '/w', '2026-01-01', '2026-01-01')",
         "INSERT INTO events VALUES ('sess_old', 1, 1, 'prompt', convert_to('{\"prompt\":[{\"type\":\"text\","
         "\"text\":\"hi\"}]}', 'UTF8'))")
    from test_store import check_migrated

    check_migrated(PostgresStore(pg_dsn))


@pytest.mark.parametrize("content", ["newer", "foreign"])
def test_a_database_that_is_not_ours_is_refused_and_left_alone(pg_dsn: str, content: str) -> None:
    if content == "newer":
        _sql(pg_dsn, "CREATE TABLE acplink_store (version INTEGER NOT NULL)",
             f"INSERT INTO acplink_store VALUES ({SCHEMA_VERSION + 7})")
    else:
        _sql(pg_dsn, "CREATE TABLE sessions (token TEXT PRIMARY KEY, user_id INTEGER)",
             "INSERT INTO sessions VALUES ('abc', 1)")
    before = _tables(pg_dsn)
    with pytest.raises(StoreError) as err:
        PostgresStore(pg_dsn)
    message = str(err.value)
    assert "nothing was changed" in message and "postgresql://" in message and "\n" not in message
    if content == "newer":
        assert f"schema version {SCHEMA_VERSION + 7}" in message and f"up to {SCHEMA_VERSION}" in message
        assert _sql(pg_dsn, "SELECT version FROM acplink_store")[0] == [(SCHEMA_VERSION + 7,)]
    else:
        assert "not an acplink session store" in message
        assert _sql(pg_dsn, "SELECT * FROM sessions")[0] == [("abc", 1)]
    assert _tables(pg_dsn) == before


def test_unreachable_at_start_is_one_line_without_the_password() -> None:
    import socket

    with socket.socket() as s:  # (a port nothing listens on)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dsn = f"postgresql://someone:hunter2@127.0.0.1:{port}/sessions"
    with pytest.raises(StoreError) as err:
        PostgresStore(dsn, timeout=2)
    message = str(err.value)
    assert message.startswith(f"session store postgresql://someone@127.0.0.1:{port}/sessions: cannot connect")
    assert "\n" not in message and "hunter2" not in message
    # an agent process that starts with it says so on one line, and exits
    agent = str(Path(__file__).with_name("store_agent.py"))
    done = subprocess.run([sys.executable, agent, dsn], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode != 0 and "cannot connect to PostgreSQL" in done.stderr and "hunter2" not in done.stderr


def test_the_lease_is_kept_across_store_instances(pg_dsn: str) -> None:
    """Two instances (two stores with their own connections, as two machines would have):
    the second is refused a session the first holds, and takes it once it is released."""
    from acplink.agent import _postgres_db

    first = PostgresStore(pg_dsn)
    try:
        first["sess_a"] = AgentSession("sess_a", "/w")
        first.flush()
        _postgres_db._OPEN.pop("postgresql:" + pg_dsn)  # (the next store: a connection of its own)
        second = PostgresStore(pg_dsn)
        try:
            assert second._file is not first._file
            with pytest.raises(Exception, match="open in another agent process"):
                second.open("sess_a")
            del first["sess_a"]
            first.flush()
            assert second.open("sess_a") is not None
        finally:
            second.close()
    finally:
        first.close()


async def test_lost_mid_run_fails_clearly_keeps_serving_and_recovers(tmp_path: Path) -> None:
    """The server stops mid-run (a cluster of this test's own): a prompt fails with an error
    naming the session store, the held session is still served, and once PostgreSQL is back
    the next prompt works and is stored."""
    import pg_cluster

    cluster = pg_cluster.start()
    if isinstance(cluster, str):
        pytest.skip(cluster)
    try:
        dsn = cluster.create_database("lost")
        app = AgentApp("lost", store=PostgresStore(dsn, timeout=2))

        @app.prompt
        async def prompt(ctx: PromptContext) -> None:
            await ctx.send_text(f"ok {ctx.text}")

        try:
            async with connect(app) as client:
                session = await client.new_session(cwd=tmp_path)
                assert await session.prompt("one").text() == "ok one"
                cluster.stop()
                for _ in range(2):  # (the loss found, then the reconnect refused)
                    with pytest.raises(RequestError) as err:
                        await session.prompt("two").text()
                    assert "session store" in str(err.value)
                status = await client.connection.call("session/status", session_id=session.session_id)
                assert status.status == "open"
                cluster.start()
                assert await session.prompt("three").text() == "ok three"
            store = app.sessions
            assert isinstance(store, PostgresStore)
            texts = [(e.kind, e.text) for e in store.history(session.session_id)]
            assert ("user_message", "three") in texts and ("agent_message", "ok three") in texts
            assert ("user_message", "two") not in texts
        finally:
            app.sessions.close()  # type: ignore[attr-defined]
    finally:
        cluster.remove()


def test_without_psycopg_the_extra_is_named() -> None:
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "import acplink\n"
            "try:\n    acplink.PostgresStore\nexcept acplink.AcpError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and "pip install 'acplink[postgres]'" in done.stdout, done.stderr



_COUNTING_AGENT = """
import atexit, json, sys
sys.path.insert(0, {agents!r})
from acplink.agent import _postgres_db
sizes = []
real = _postgres_db._Connection.commit
def counted(self):
    sizes.append(len(self.queued))
    real(self)
_postgres_db._Connection.commit = counted
atexit.register(lambda: open({out!r}, "w").write(json.dumps(sizes)))
import store_agent
from acplink import run_agent
run_agent(store_agent.build({dsn!r}))
"""


async def test_a_flood_is_committed_in_groups(pg_dsn: str, tmp_path: Path) -> None:
    """Group commit: over real pipes, a flood's updates are journaled some 256 KB per commit
    (16 KB write batches made a commit each: 40 here), all of them, in order."""
    from acplink.agent.store_postgres import GROUP_COMMIT_BYTES
    from acplink.transports.stream import FLUSH_AT

    assert GROUP_COMMIT_BYTES >= 8 * FLUSH_AT
    out = tmp_path / "commits.json"
    script = tmp_path / "counting_agent.py"
    script.write_text(_COUNTING_AGENT.format(agents=str(Path(__file__).parent), out=str(out), dsn=pg_dsn))
    n = 5000  # (some 600 KB of updates: 40 write batches of 16 KB)
    async with connect([sys.executable, str(script)]) as client:
        session = await client.new_session(cwd=tmp_path)
        assert await session.prompt(f"burst {n}").text() == "".join(f"{i}," for i in range(n))
        history = await session.prompt("history").text()
        assert history.split() == ["user_message/1", "agent_message/1", "turn_end/1", "user_message/2"]
    sizes = [s for s in json.loads(out.read_text()) if s]
    assert len(sizes) <= 15, sizes  # (journal rows per commit; about 1,300 in a flood's)
    store = PostgresStore(pg_dsn)
    try:
        stored = store.history(session.session_id)
        assert stored[1].kind == "agent_message" and stored[1].text == "".join(f"{i}," for i in range(n))
    finally:
        store.close()
