"""A session exists from the moment the connection processes the result that opened it: an
update the agent writes right behind the response (in the same write) is never lost, however
many sessions are opened at once."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from eager_agent import EagerSink, title

from acplink import Client, MethodNotFound, connect
from acplink.transports import memory_pair

AGENT = [sys.executable, str(Path(__file__).parent / "eager_agent.py")]
N = 1000
ROUNDS = 3
GUARD = 120.0  # hang guard only


async def _sync(client: Client) -> None:
    """A round trip: every update the agent wrote before answering it has been handled."""
    with pytest.raises(MethodNotFound):
        await client.conn.call("_sync")


def _check(sessions: list[Any]) -> None:
    missing = [sess.session_id for sess in sessions if sess.state.title != title(sess.session_id)]
    assert not missing, f"{len(missing)} of {len(sessions)} sessions lost their first update"


async def _rounds(client: Client, tmp_path: Path) -> None:
    for _ in range(ROUNDS):
        sessions = await asyncio.gather(*(client.new_session(tmp_path) for _ in range(N)))
        assert len({sess.session_id for sess in sessions}) == N
        await _sync(client)
        _check(sessions)
    # the other session-opening methods too: the update lands in the session they return
    some = list(client.sessions)[:100]
    forks = await asyncio.gather(*(client.fork_session(sid, tmp_path) for sid in some))
    resumed = await asyncio.gather(*(client.resume_session(sid, tmp_path) for sid in some))
    await _sync(client)
    _check(forks)
    _check(resumed)
    for sess in resumed:
        sess.state.title = None
    loaded = await asyncio.gather(*(client.load_session(sid, tmp_path) for sid in some))
    await _sync(client)
    _check(loaded)


async def test_no_update_lost_over_a_pipe(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "acplink")
    async with connect(AGENT, fs=False, terminal=False) as client:
        await asyncio.wait_for(_rounds(client, tmp_path), GUARD)
    assert "unknown session" not in caplog.text


async def test_no_update_lost_in_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "acplink")
    ours, theirs = memory_pair()
    await theirs.start(EagerSink(theirs))
    try:
        async with connect(ours, fs=False, terminal=False) as client:
            await asyncio.wait_for(_rounds(client, tmp_path), GUARD)
    finally:
        await theirs.aclose()
    assert "unknown session" not in caplog.text


async def test_sessions_opened_through_the_connection_are_registered(tmp_path: Path) -> None:
    # a session opened with the low-level call is known to the client too (its updates land)
    ours, theirs = memory_pair()
    await theirs.start(EagerSink(theirs))
    try:
        async with connect(ours, fs=False, terminal=False) as client:
            resp = await client.conn.session_new(cwd=str(tmp_path), mcp_servers=[])
            sess = client.sessions[resp.session_id]
            assert sess.cwd == str(tmp_path)
            await _sync(client)
            assert sess.state.title == title(resp.session_id)
    finally:
        await theirs.aclose()
