"""Group commit for an app served in process (``acplink serve --app``) with a history store.

The app (tests/agent/store_agent.py, its store counting the commits of its database) runs in a
real ``acplink serve`` process on loopback, reached over WebSocket and streamable HTTP. A flood
of updates reaches the client whole and in order, the store holds all of it, and it took far
fewer commits than updates (the messages of a turn of the loop are committed once, then handed
to the remote connection); a SIGKILL of the server mid-flood leaves in the store at least
everything the client received. In process: the first message of a turn goes out at once
(committed first), the rest of the turn after one commit."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from acplink import AcpError, connect, schema
from acplink.agent import HistoryStore, PostgresStore, SqliteStore

from .helpers import env_without_token, serve

AGENTS = str(Path(__file__).resolve().parent.parent / "agent")
if AGENTS not in sys.path:
    sys.path.insert(0, AGENTS)  # (store_agent: the app of the in-process tests)
N = 5000  # (some 750 KB of updates)


@pytest.fixture(params=["postgres", "sqlite"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The app's store: a new database of the session's PostgreSQL cluster, or a SQLite file."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_dsn"))
    return str(tmp_path / "s.db")


def _env(db: str) -> dict[str, str]:
    return {**env_without_token(), "ACPLINK_TEST_STORE": db,
            "PYTHONPATH": os.pathsep.join(filter(None, [AGENTS, os.environ.get("PYTHONPATH")]))}


def _store(db: str) -> HistoryStore:
    return PostgresStore(db) if db.startswith("postgresql://") else SqliteStore(db)


def _numbers(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _stored_chunks(db: str, sid: str) -> list[int]:
    """The numbers the agent sent in the session's turn 2 (the flood's), as the store holds
    them (its messages, between its tool calls)."""
    store = _store(db)
    try:
        messages = [e.text for e in store.history(sid) if e.kind == "agent_message" and e.turn == 2]
    finally:
        store.close()
    return _numbers("".join(messages))


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_a_flood_is_committed_in_groups_and_arrives_whole(tmp_path: Path, db: str, transport: str) -> None:
    async with serve(f"--{transport}", "--app", "store_agent:counted_app_from_env", agent=(), env=_env(db)) as served, \
            connect(served.urls[transport]) as client:
        session = await client.new_session(cwd=tmp_path)
        before = int(await session.prompt("commits").text())
        chunks: list[str] = []
        async for update in session.prompt(f"burst {N}"):
            if isinstance(update, schema.AgentMessageChunk):
                chunks.append(update.content.text)  # type: ignore[union-attr]
        assert chunks == [f"{i}," for i in range(N)]  # (complete, in order, each once)
        commits = int(await session.prompt("commits").text()) - before
        sid = session.session_id
    # one commit per update would be N; a batch (16 KB, 256 KB on PostgreSQL) is one: some 60
    # commits on SQLite, under 10 on PostgreSQL
    assert 0 < commits <= N // 20, commits
    assert _stored_chunks(db, sid) == list(range(N))


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_sigkill_mid_flood_leaves_what_the_client_received_stored(
        tmp_path: Path, pg_dsn: str, transport: str) -> None:
    kill_at = random.Random(transport).randint(300, 3000)
    received: list[str] = []
    async with serve(f"--{transport}", "--app", "store_agent:counted_app_from_env", agent=(),
                     env=_env(pg_dsn)) as served:
        client = await connect(served.urls[transport])
        try:
            session = await client.new_session(cwd=tmp_path)
            assert int(await session.prompt("pid").text()) == served.proc.pid  # (the app runs in serve)
            sid = session.session_id
            try:
                async for update in session.prompt(f"stream {4 * N}"):  # (paced; then waits for the kill)
                    if isinstance(update, schema.AgentMessageChunk):
                        received.append(update.content.text)  # type: ignore[union-attr]
                        if len(received) == kill_at:
                            served.proc.send_signal(signal.SIGKILL)
            except AcpError:
                pass  # (the server died mid-turn: the turn fails)
        finally:
            await client.aclose()
        await served.proc.wait()
    got = _numbers("".join(received))
    assert len(got) >= kill_at and got == list(range(len(got)))
    stored = _stored_chunks(pg_dsn, sid)
    # every chunk received is stored, in order, none twice (perhaps a few stored, not delivered)
    assert stored == list(range(len(stored))) and len(stored) >= len(got), (len(stored), len(got))
    assert len(stored) < 4 * N  # (killed mid-flood)


# -- in process: when the messages of a turn go out ------------------------------------------------


class _Journal:
    """A stand-in for the app connection's commit: records the order of commits and messages."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def commit(self) -> None:
        self.events.append("commit")

    def deliver(self, message: bytes) -> None:
        self.events.append(message.decode())


async def test_the_first_message_of_a_turn_goes_out_at_once_the_rest_after_one_commit() -> None:
    from acplink.server.inprocess import _RemoteTransport

    journal = _Journal()
    transport = _RemoteTransport(journal.deliver, lambda reason: None)
    transport.before_write = journal.commit
    assert transport.send(b'{"a":1}\n') is False  # (written: the writer drains, no wait while there is room)
    assert journal.events == ["commit", '{"a":1}']  # committed, then handed over, at once
    assert transport.send(b'{"a":2}\n') is True and transport.send(b'{"a":3}\n') is True
    assert journal.events == ["commit", '{"a":1}']  # (batched until the next turn of the loop)
    await asyncio.sleep(0)
    assert journal.events == ["commit", '{"a":1}', "commit", '{"a":2}', '{"a":3}']
    await asyncio.sleep(0)
    assert transport.send(b'{"a":4}\n') is False  # (a new turn: its first message at once)
    assert journal.events[-2:] == ["commit", '{"a":4}']


async def test_a_batch_at_flush_at_goes_out_and_the_writer_waits_while_the_client_is_behind() -> None:
    from acplink.server.inprocess import _RemoteTransport

    journal = _Journal()
    transport = _RemoteTransport(journal.deliver, lambda reason: None)
    transport.before_write = journal.commit
    transport.flush_at = 20
    transport.send(b'{"a":0}\n')
    transport.room.clear()  # (the connection's buffer for the client is full)
    assert transport.send(b'{"a":1}\n') is True  # (joins the batch: 8 bytes)
    assert transport.send(b'{"a":2}\n') is True
    assert transport.send(b'{"a":3}\n') is False  # (24 bytes: out now, and the writer drains)
    assert journal.events == ["commit", '{"a":0}', "commit", '{"a":1}', '{"a":2}', '{"a":3}']
    waiter = asyncio.ensure_future(transport.drain())
    await asyncio.sleep(0)
    assert not waiter.done()  # (waits until the client takes its output)
    transport.room.set()
    await waiter


class _Client:
    """A bare client of an app served by the in-process backend (whole messages both ways);
    ``on_message`` sees each message the app hands to the connection, as it is handed over."""

    def __init__(self, on_message: Any = None) -> None:
        self.on_message = on_message
        self.answers: dict[int, asyncio.Future[Any]] = {}
        self.channel: Any = None

    async def open(self, app: Any) -> None:
        from acplink.server.inprocess import InProcessAgent

        self.channel = await InProcessAgent(lambda: app).open("c1", self._deliver, lambda reason: None)

    def _deliver(self, message: bytes) -> None:
        msg = orjson.loads(message)
        if self.on_message is not None:
            self.on_message(msg)
        if msg.get("id") in self.answers:
            self.answers[msg["id"]].set_result(msg)

    async def call(self, rid: int, method: str, params: dict[str, Any]) -> Any:
        self.answers[rid] = asyncio.get_running_loop().create_future()
        self.channel.send(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}))
        return (await asyncio.wait_for(self.answers[rid], 30))["result"]

    async def session(self, cwd: Path) -> str:
        await self.call(1, "initialize", {"protocolVersion": 1})
        return (await self.call(2, "session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]  # type: ignore[no-any-return]

    async def prompt(self, rid: int, sid: str, text: str) -> Any:
        return await self.call(rid, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]})


async def test_a_lone_answer_of_an_app_with_a_store_is_not_held_to_a_later_turn(tmp_path: Path) -> None:
    """Through the in-process backend, a real app and SqliteStore: the answer to a prompt whose
    handler sends nothing is handed to the connection in the step that makes it, before
    anything the handler scheduled for the next turn of the loop runs."""
    from acplink import AgentApp, PromptContext

    marks: list[str] = []
    app = AgentApp("quiet", store=SqliteStore(str(tmp_path / "s.db")))

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        asyncio.get_running_loop().call_soon(marks.append, "next turn")

    client = _Client(lambda msg: marks.append("answer") if msg.get("id") == 3 else None)
    await client.open(app)
    try:
        sid = await client.session(tmp_path)
        await asyncio.sleep(0.05)  # (whatever session/new sent after its answer is out)
        assert (await client.prompt(3, sid, "hi"))["stopReason"] == "end_turn"
        await asyncio.sleep(0)
        assert marks == ["answer", "next turn"]
    finally:
        await client.channel.aclose()
        app.sessions.close()  # type: ignore[attr-defined]


async def test_every_message_handed_to_the_connection_follows_the_commit_of_what_it_carries(
        tmp_path: Path, db: str) -> None:
    """In process, a real store: as each update of a flood is handed to the remote connection,
    the store already holds it, committed (read through a database connection of its own, which
    sees only committed rows)."""
    from store_agent import build

    if db.startswith("postgresql://"):
        import psycopg

        reader: Any = psycopg.connect(db, autocommit=True)
    else:
        import sqlite3

        reader = sqlite3.connect(db)
    handed = 0
    behind: list[tuple[int, int]] = []

    def check(msg: dict[str, Any]) -> None:
        nonlocal handed
        if msg.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk":
            handed += 1
            stored = reader.execute("SELECT count(*) FROM events WHERE kind='agent_message_chunk'").fetchone()[0]
            if stored < handed:
                behind.append((stored, handed))

    app = build(db)
    client = _Client(check)
    await client.open(app)
    try:
        sid = await client.session(tmp_path)
        assert (await client.prompt(3, sid, "burst 3000"))["stopReason"] == "end_turn"
        assert handed == 3000 and behind == []
    finally:
        await client.channel.aclose()
        app.sessions.close()  # type: ignore[attr-defined]
        reader.close()
