"""A ClientSideConnection against misbehaving agents over real subprocess pipes."""

from __future__ import annotations

import asyncio
import logging
import os

import pytest
from connhelpers import AGENT, MISBEHAVING, connect, guard, initialize

from acplink.connection import Router
from acplink.errors import ConnectionClosed


async def test_noise_on_agent_stdout_is_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="acplink")
    async with connect([*MISBEHAVING, "noise"]) as conn:
        for i in range(3):
            assert await guard(conn.call("echo", {"i": i})) == {"i": i}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("non-JSON" in w and "Loading model weights" in w for w in warnings), warnings
    assert any("non-JSON" in w and "ready" in w for w in warnings), warnings


async def test_response_with_unknown_id_is_ignored_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="acplink")
    async with connect([*MISBEHAVING, "unknown-id"]) as conn:
        assert await guard(conn.call("echo", {"a": 1})) == {"a": 1}
        assert await guard(conn.call("echo", {"a": 2})) == {"a": 2}
        assert not conn.closed
    assert any("unknown request id 987654" in r.getMessage() for r in caplog.records)


async def test_peer_exits_mid_request_fails_every_pending_call() -> None:
    async with connect([*MISBEHAVING, "plain"]) as conn:
        assert await guard(conn.call("echo", 1)) == 1
        calls = [asyncio.ensure_future(conn.call("echo", i)) for i in range(5)]
        calls.append(asyncio.ensure_future(conn.call("die", {})))
        results = await guard(asyncio.gather(*calls, return_exceptions=True))
        # the echoes sent before "die" may have been answered; everything else fails
        assert isinstance(results[-1], ConnectionClosed)
        for r in results[:-1]:
            assert isinstance(r, (int, ConnectionClosed))
        await guard(conn.wait_closed())
        with pytest.raises(ConnectionClosed):
            await conn.call("echo", 1)
        with pytest.raises(ConnectionClosed):
            await conn.notify("echo", {})


async def test_acplink_agent_dying_mid_prompt_fails_the_prompt() -> None:
    started = asyncio.Event()
    router = Router()

    async def on_update(params: object) -> None:
        started.set()

    router.add_notification("session/update", on_update)
    async with connect(AGENT, router) as conn:
        await initialize(conn)
        sid = (await guard(conn.session_new(cwd="/", mcp_servers=[]))).session_id
        other = asyncio.ensure_future(conn.call("_test/sleep", {"tag": "x"}))
        with pytest.raises(ConnectionClosed):
            await guard(conn.session_prompt(session_id=sid, prompt=[{"type": "text", "text": "exit"}]))
        assert started.is_set()
        with pytest.raises(ConnectionClosed):
            await guard(other)
        assert await guard(conn.peer.transport.wait()) == 3  # type: ignore[attr-defined]


async def test_peer_that_stops_reading_is_noticed_when_its_pipe_closes() -> None:
    ready = asyncio.Event()
    router = Router()

    async def on_ready(params: object) -> None:
        ready.set()

    router.add_notification("ready", on_ready)
    async with connect([*MISBEHAVING, "stop-reading"], router) as conn:
        await guard(ready.wait())
        # 8 MB is far more than a pipe buffer: the write blocks until the reader goes away
        with pytest.raises(ConnectionClosed):
            await guard(conn.call("echo", {"data": "x" * 8_000_000}))
        assert conn.closed
        with pytest.raises(ConnectionClosed):
            await conn.call("echo", 1)


async def test_stderr_flood_does_not_deadlock_and_tail_keeps_last_lines() -> None:
    async with connect([*MISBEHAVING, "flood-stderr", "100"], stderr="capture", stderr_lines=5) as conn:
        # the child writes 100 MB to stderr before it reads stdin: if we did not drain stderr
        # it would block forever and this call would never be answered
        assert await guard(conn.call("echo", {"ok": True}), 30) == {"ok": True}
        transport = conn.peer.transport

        async def flood_read() -> None:
            while not transport.stderr_tail or transport.stderr_tail[-1] != "END":  # type: ignore[attr-defined]
                await asyncio.sleep(0.01)

        await guard(flood_read(), 30)
        tail = transport.stderr_tail  # type: ignore[attr-defined]
        assert len(tail) == 5
        assert tail[-2].endswith("00099") and tail[0].startswith("eeee")


async def test_shutdown_ladder_kills_an_agent_that_ignores_stdin_close_and_sigterm() -> None:
    ready = asyncio.Event()
    router = Router()

    async def on_ready(params: object) -> None:
        ready.set()

    router.add_notification("ready", on_ready)
    async with connect([*MISBEHAVING, "ignore-term"], router, close_timeout=0.2, term_timeout=0.2) as conn:
        await guard(ready.wait())
        transport = conn.peer.transport
        pid = transport.pid  # type: ignore[attr-defined]
    assert transport.returncode == -9  # type: ignore[attr-defined]
    assert not os.path.exists(f"/proc/{pid}")


async def test_well_behaved_agent_exits_on_stdin_close() -> None:
    async with connect(AGENT) as conn:
        await initialize(conn)
        transport = conn.peer.transport
    assert transport.returncode == 0  # type: ignore[attr-defined]
