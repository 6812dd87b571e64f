"""Fault injection over real pipes: dying peers, closed pipes, stalls, floods.

Each case asserts the outcome (error type and message) and that it comes without a hang (every
await has a hang guard; no timing assertion is made). ``docs/robustness.md`` has the table.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest
from rbhelpers import RB_AGENT, RawClient, guard, text

from acplink.connection import ClientSideConnection, PeerLimits, Router
from acplink.errors import ConnectionClosed, RequestTimeout
from acplink.schema import _generated as s
from acplink.transports import SubprocessTransport

#: a peer that never reads its stdin and never closes it
STALLED = [sys.executable, "-c", "import time; time.sleep(60)"]
#: a peer that reads one line, closes its stdout and keeps running
CLOSES_STDOUT = [sys.executable, "-c",
                 "import os, sys, time; sys.stdin.buffer.readline(); os.close(1); time.sleep(60)"]


def subprocess_conn(command: list[str], router: Router | None = None, *, limits: PeerLimits | None = None,
                    **kw: Any) -> ClientSideConnection:
    transport = SubprocessTransport(command, close_timeout=0.3, term_timeout=0.3, **kw)
    return ClientSideConnection(transport, router or Router(), limits=limits)


# -- the client dies while the agent waits for one of its calls -----------------------------------


@pytest.mark.parametrize("how", ["stdin-closed", "both-pipes-closed"])
async def test_agent_exits_when_its_client_dies_mid_agent_request(how: str) -> None:
    """The agent's prompt handler is inside ``ctx.read_file`` (an agent→client request) when the
    client goes away: the pending call fails with ConnectionClosed and the agent exits cleanly."""
    client = await RawClient.spawn()
    try:
        await client.initialize(fs={"readTextFile": True})
        sid = (await client.request("session/new", {"cwd": "/", "mcpServers": []}))["result"]["sessionId"]
        await client.send_request("session/prompt", {"sessionId": sid, "prompt": text("read /etc/hostname")})
        call = await client.wait_for("fs/read_text_file")  # the agent now waits for our answer
        assert call["params"]["path"] == "/etc/hostname"
        assert client.proc.stdin is not None and client.proc.stdout is not None
        # the client dies: the kernel closes its ends of the pipes
        client.proc.stdin.close()
        if how == "both-pipes-closed":
            client.proc._transport.get_pipe_transport(1).close()  # type: ignore[attr-defined]
        rc, err = await client.finish()  # hang guard inside: the agent must exit by itself
        assert rc == 0, err
        assert "rb_agent: read_file failed: ConnectionClosed: connection to stdio closed by the peer" in err, err
        assert "rb_agent: exited" in err
        assert "Traceback" not in err
    finally:
        await client.kill()


# -- the peer closes a pipe early -----------------------------------------------------------------


async def test_peer_closing_its_stdout_early_fails_pending_calls_and_close_is_bounded() -> None:
    conn = subprocess_conn(CLOSES_STDOUT)
    await conn.start()
    try:
        with pytest.raises(ConnectionClosed, match="closed"):
            await guard(conn.call("echo", {"x": 1}))
        await guard(conn.wait_closed())
        with pytest.raises(ConnectionClosed):
            await conn.call("echo", 2)
    finally:
        await guard(conn.aclose())  # close stdin → wait → SIGTERM: bounded by the two timeouts
    assert conn.peer.transport.returncode == -15  # type: ignore[attr-defined]


async def test_agent_exits_when_its_client_stops_reading_its_stdout() -> None:
    """The client closes the read end of the agent's stdout (stdin stays open): the agent's
    next write fails, it closes the connection and exits instead of writing into the void."""
    r, w = os.pipe()
    proc = await asyncio.create_subprocess_exec(*RB_AGENT, stdin=asyncio.subprocess.PIPE, stdout=w,
                                                stderr=asyncio.subprocess.PIPE)
    os.close(w)
    os.close(r)
    client = RawClient(proc)
    try:
        await client.send_request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert proc.stderr is not None
        err = (await guard(proc.stderr.read())).decode()  # EOF: the agent has exited
        assert "rb_agent: exited" in err
        assert await guard(proc.wait()) == 0
    finally:
        await client.kill()


# -- the peer stalls while we write a large message -----------------------------------------------


async def test_stalled_peer_large_write_times_out_with_request_timeout() -> None:
    conn = subprocess_conn(STALLED)
    await conn.start()
    try:
        # 8 MB: far more than a pipe buffer; the write cannot complete while the peer stalls
        with pytest.raises(RequestTimeout, match=r"echo got no response within 0.3 s \(cancel sent\)"):
            await guard(conn.call("echo", {"data": "x" * 8_000_000}, timeout=0.3))
    finally:
        await guard(conn.aclose())
    assert conn.peer.transport.returncode == -15  # type: ignore[attr-defined]


async def test_stalled_peer_large_write_without_timeout_fails_when_we_close() -> None:
    conn = subprocess_conn(STALLED)
    await conn.start()
    call = asyncio.ensure_future(conn.call("echo", {"data": "x" * 8_000_000}))
    await asyncio.sleep(0.1)
    assert not call.done()  # blocked by flow control (the bytes wait in a bounded buffer)
    await guard(conn.aclose())
    with pytest.raises(ConnectionClosed):
        await guard(call)
    assert conn.peer.transport.returncode == -15  # type: ignore[attr-defined]


# -- a slow consumer of a notification flood ------------------------------------------------------


async def test_slow_consumer_of_a_notification_flood_has_bounded_memory() -> None:
    """The agent floods 2000 session/update of ~1 KB; the client's handler is slow. The queue of
    undelivered notifications never exceeds ``max_queued_notifications`` plus one read chunk:
    reading pauses (the pipe fills, the agent's writes block) instead of queueing everything."""
    limit, n, size = 16, 2000, 1000
    seen: list[str] = []
    queue_sizes: list[int] = []
    router = Router()
    conn: ClientSideConnection

    async def on_update(params: s.SessionNotification) -> None:
        queue_sizes.append(len(conn.peer._queue))
        seen.append(params.update.content.text.split(":")[0])  # type: ignore[union-attr]
        if len(seen) % 25 == 0:
            await asyncio.sleep(0.002)

    router.add_notification("session/update", on_update)
    conn = subprocess_conn(RB_AGENT, router, limits=PeerLimits(max_queued_notifications=limit))
    chunks: list[int] = []
    pauses: list[int] = []
    peer = conn.peer
    received = peer.data_received

    def data_received(data: bytes) -> None:
        chunks.append(len(data))
        received(data)

    peer.data_received = data_received  # type: ignore[method-assign]
    pause = peer.transport.pause_reading

    def pause_reading() -> None:
        pauses.append(len(peer._queue))
        pause()

    peer.transport.pause_reading = pause_reading  # type: ignore[method-assign]
    await conn.start()
    try:
        await guard(conn.initialize(protocol_version=1))
        sid = (await guard(conn.session_new(cwd="/", mcp_servers=[]))).session_id
        result = await guard(conn.session_prompt(session_id=sid, prompt=text(f"flood {n} {size}")), 30)
        assert result.stop_reason == "end_turn"
    finally:
        await guard(conn.aclose())
    assert seen == [str(i) for i in range(n)]  # nothing lost, in order
    assert pauses, "reading was never paused"
    per_chunk = max(chunks) // size + 1  # messages one read can complete (each is > size bytes)
    assert max(queue_sizes) <= limit + per_chunk, (max(queue_sizes), limit, per_chunk)
    assert max(queue_sizes) < n // 4
