"""Crash safety of a ``SqliteStore`` / ``PostgresStore`` agent: what the agent sent is stored before it is sent.

A subprocess agent (``tests/agent/store_agent.py``) streams a long turn; the test SIGKILLs it
at a random point while the client reads, starts a new process on the same store and loads
the session: every update the client received is in the replayed history, in order, none
twice, and the interrupted turn is marked interrupted (``ctx.history``)."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import AcpError, connect, schema

AGENT = str(Path(__file__).with_name("store_agent.py"))


def agent(db: Path | str) -> connect:
    return connect([sys.executable, AGENT, str(db)])


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """The agent's store: a SQLite file, or a new database of the session's PostgreSQL cluster."""
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_dsn"))
    return tmp_path / "s.db"


def _numbers(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_sigkill_mid_turn_loses_nothing_the_client_received(tmp_path: Path, db: Any, seed: int) -> None:
    kill_at = random.Random(seed).randint(100, 4000)
    received: list[str] = []
    calls: list[tuple[str, str | None]] = []  # (id, last status seen), in order of creation
    client = await agent(db)
    try:
        session = await client.new_session(cwd=tmp_path)
        pid = int(await session.prompt("pid").text())
        sid = session.session_id
        n = 0
        try:
            async for update in session.prompt("stream 5000"):
                n += 1
                if isinstance(update, schema.AgentMessageChunk):
                    received.append(update.content.text)  # type: ignore[union-attr]
                elif isinstance(update, schema.ToolCall):
                    calls.append((update.tool_call_id, update.status))
                elif isinstance(update, schema.ToolCallProgress):
                    calls = [(i, update.status if i == update.tool_call_id else st) for i, st in calls]
                if n == kill_at:
                    os.kill(pid, signal.SIGKILL)
        except AcpError:
            pass  # (the agent died mid-turn: the turn fails)
    finally:
        await client.aclose()
    assert received, "the client received nothing before the kill"
    got = _numbers("".join(received))
    assert got == list(range(len(got)))

    async with agent(db) as again:
        loaded = await again.load_session(sid, cwd=tmp_path)
        state = loaded.state
        agent_messages = [m.text for m in state.messages if m.role == "agent"]
        stored = _numbers(agent_messages[-1])
        # every chunk received, in order, none twice (and perhaps a few stored but not delivered)
        assert stored == list(range(len(stored))) and len(stored) >= len(got)
        replayed = [(k, v.status) for k, v in state.tool_calls.items()]
        assert [k for k, _ in replayed[:len(calls)]] == [k for k, _ in calls]
        order = ["pending", "in_progress", "completed", "failed"]
        for (_, seen), (_, kept) in zip(calls, replayed, strict=False):
            assert order.index(kept or "pending") >= order.index(seen or "pending")
        history = (await loaded.prompt("history").text()).split()
        assert "turn_end/2/interrupted" in history and history.count("user_message/2") == 1
        assert history[-1] == "user_message/3"


class _Watched:
    """An app served in memory whose transport checks, at each write to the peer, that every
    message chunk in the bytes written so far is already committed to the store (read through
    a connection of its own: only committed rows are visible to it)."""

    def __init__(self, app: object, db: Path | str) -> None:
        self.app = app
        self.db = db
        self.sent = 0
        self.writes = 0
        self.behind: list[tuple[int, int]] = []
        if isinstance(db, str):
            import psycopg

            self.reader: Any = psycopg.connect(db, autocommit=True)
        else:
            self.reader = sqlite3.connect(db)

    def connection(self, transport: object) -> object:
        write = transport.write  # type: ignore[attr-defined]
        reader = self.reader

        def checked(data: bytes) -> None:
            self.sent += data.count(b'"sessionUpdate":"agent_message_chunk"')
            self.writes += 1
            stored = reader.execute("SELECT count(*) FROM events WHERE kind='agent_message_chunk'").fetchone()[0]
            if stored < self.sent:
                self.behind.append((stored, self.sent))
            write(data)

        transport.write = checked  # type: ignore[attr-defined]
        return self.app.connection(transport)  # type: ignore[attr-defined]


async def test_every_write_to_the_peer_follows_the_commit_of_what_it_carries(tmp_path: Path, db: Any) -> None:
    from store_agent import build

    app = build(str(db))
    watched = _Watched(app, db)
    try:
        async with connect(watched) as client:
            session = await client.new_session(cwd=tmp_path)
            text = await session.prompt("burst 3000").text()
        assert _numbers(text) == list(range(3000))
        assert watched.sent == 3000 and watched.writes > 3  # (batched: several writes, each checked)
        assert watched.behind == []
    finally:
        watched.reader.close()
        app.sessions.close()  # type: ignore[attr-defined]
