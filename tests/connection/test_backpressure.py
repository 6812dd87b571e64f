"""Backpressure in one process: held inbound requests, writers waiting above the high-water
mark, reading paused, a stalled peer disconnected (memory pair; the far end is raw)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from test_memory import RawEnd

from acplink.connection.peer import Peer, PeerLimits
from acplink.errors import ConnectionClosed
from acplink.protocol import V1
from acplink.transports import memory_pair
from acplink.transports.base import FlowControl

GUARD = 10.0


class Gates:
    """A dispatcher whose ``_t/gate`` requests wait until their gate opens; every method
    answers its params; it records the order in which requests started."""

    def __init__(self) -> None:
        self.started: list[Any] = []
        self.gates: dict[Any, asyncio.Event] = {}
        self.notes: list[str] = []

    def gate(self, key: Any) -> asyncio.Event:
        return self.gates.setdefault(key, asyncio.Event())

    async def handle_request(self, method: str, params: Any) -> bytes:
        self.started.append(params["k"])
        if method == "_t/gate" or method in V1.long_running:
            await self.gate(params["k"]).wait()
        return orjson.dumps(params)

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        self.notes.append(method)


def req(rid: Any, k: Any, method: str = "_t/gate", **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {"k": k, **extra}}


async def wait_until(cond: Any) -> None:
    async def poll() -> None:
        while not cond():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(poll(), GUARD)


async def over_the_mark(peer: Peer, raw: RawEnd) -> tuple[asyncio.Future[Any], asyncio.Future[None]]:
    """The far end takes nothing; a call goes out, then a 100 KB notification takes our buffer
    over a 64 KiB mark. Returns (the call, the waiting writer)."""
    raw.transport.pause_reading()
    call = asyncio.ensure_future(peer.request("_t/ask", b"{}"))
    await asyncio.sleep(0)
    writer = asyncio.ensure_future(peer.notify("_t/big", orjson.dumps({"x": "y" * 100_000})))
    return call, writer


@pytest.fixture
async def pair(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Peer, Gates, RawEnd]]:
    ours, theirs = memory_pair()
    gates = Gates()
    peer = Peer(ours, gates, limits=request.param if hasattr(request, "param") else PeerLimits(),
                long_running=V1.long_running)
    raw = RawEnd(theirs)
    await peer.start()
    await raw.start()
    yield peer, gates, raw
    await peer.aclose()
    await theirs.aclose()


def test_backpressure_defaults() -> None:
    limits = PeerLimits()
    assert limits.write_buffer_high == 4 * 1024 * 1024 and limits.write_buffer_low == 1024 * 1024
    assert limits.max_running_requests == 16 and limits.stalled_peer_timeout == 60.0
    assert PeerLimits(write_buffer_high=1000).write_buffer_low == 250


@pytest.mark.parametrize("pair", [PeerLimits(max_running_requests=2)], indirect=True)
async def test_requests_beyond_max_running_wait_their_turn_in_arrival_order(pair: Any) -> None:
    peer, gates, raw = pair
    raw.send(*(req(i, i) for i in range(5)))
    await wait_until(lambda: len(gates.started) == 2)
    assert gates.started == [0, 1] and list(peer.delivery.held) == [2, 3, 4]
    for k in (1, 0, 2, 3, 4):  # each end lets the next held one start
        gates.gate(k).set()
        assert (await raw.recv())["result"] == {"k": k}
    assert gates.started == [0, 1, 2, 3, 4] and not peer.delivery.held and peer.delivery.busy == 0


@pytest.mark.parametrize("pair", [PeerLimits(max_running_requests=1)], indirect=True)
async def test_a_held_request_cancelled_is_answered_at_once_and_never_runs(pair: Any) -> None:
    _peer, gates, raw = pair
    raw.send(req(1, "a"), req(2, "b"), {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}})
    reply = await raw.recv()
    assert reply == {"jsonrpc": "2.0", "id": 2, "error": {"code": -32800, "message": "Request cancelled"}}
    gates.gate("a").set()
    assert (await raw.recv())["id"] == 1
    assert gates.started == ["a"]
    raw.send(req(2, "again", method="_t/echo"))  # the id is free again
    assert (await raw.recv())["result"] == {"k": "again"}


@pytest.mark.parametrize("pair", [PeerLimits(max_running_requests=1)], indirect=True)
async def test_long_waiting_requests_take_no_slot(pair: Any) -> None:
    """A terminal/kill must not wait behind the terminal/wait_for_exit it would end."""
    _peer, gates, raw = pair
    raw.send(*(req(i, f"w{i}", method="terminal/wait_for_exit") for i in range(3)), req(9, "kill", method="_t/echo"))
    assert (await raw.recv())["id"] == 9
    assert sorted(gates.started) == ["kill", "w0", "w1", "w2"]
    for i in range(3):
        gates.gate(f"w{i}").set()
    assert {(await raw.recv())["id"] for _ in range(3)} == {0, 1, 2}


@pytest.mark.parametrize("pair", [PeerLimits(write_buffer_high=64 * 1024, write_buffer_low=16 * 1024)],
                         indirect=True)
async def test_above_the_mark_writers_wait_and_new_requests_are_held_until_it_drains(pair: Any) -> None:
    peer, gates, raw = pair
    raw.transport.pause_reading()  # the far end takes nothing for now
    writer = asyncio.ensure_future(peer.notify("_t/big", orjson.dumps({"x": "y" * 100_000})))
    assert peer.transport.writing_paused and peer.transport.write_buffer_size() > 64 * 1024
    raw.send(req(1, "r", method="_t/echo"))
    await wait_until(lambda: 1 in peer.delivery.held)
    assert not writer.done() and gates.started == []  # the writer waits; the request is held
    raw.transport.resume_reading()
    await asyncio.wait_for(writer, GUARD)
    got = [await raw.recv() for _ in range(2)]
    assert [m.get("method", m.get("id")) for m in got[:2]] == ["_t/big", 1]
    assert not peer.delivery.held and not peer.closed


@pytest.mark.parametrize("pair", [PeerLimits(write_buffer_high=64 * 1024, write_buffer_low=16 * 1024)],
                         indirect=True)
async def test_reading_pauses_once_a_mark_of_requests_waits_and_nothing_is_lost(pair: Any) -> None:
    peer, gates, raw = pair
    raw.transport.pause_reading()
    writer = asyncio.ensure_future(peer.notify("_t/big", orjson.dumps({"x": "y" * 100_000})))
    pad = "p" * 1000
    raw.send(*(req(i, i, method="_t/echo", pad=pad) for i in range(200)))  # ~200 KB of requests
    raw.send({"jsonrpc": "2.0", "method": "_t/note", "params": {}})
    await wait_until(lambda: peer.delivery.held_paused)
    assert peer.transport._paused  # our end stopped reading: the rest stays with the sender
    assert 64 * 1024 < peer.delivery.held_bytes < 64 * 1024 + 200 * 1100
    raw.transport.resume_reading()
    got = [await raw.recv() for _ in range(201)]
    assert [m["id"] for m in got[1:]] == list(range(200))  # every request answered, in order
    await wait_until(lambda: not peer.transport._paused)
    assert not peer.delivery.held and not peer.delivery.held_paused
    await asyncio.wait_for(writer, GUARD)
    await wait_until(lambda: gates.notes == ["_t/note"])  # the notification read after them too


@pytest.mark.parametrize("pair", [PeerLimits(write_buffer_high=64 * 1024, stalled_peer_timeout=0.2)],
                         indirect=True)
async def test_a_peer_that_takes_nothing_is_disconnected_with_a_clear_error(pair: Any) -> None:
    peer, _gates, raw = pair
    call, writer = await over_the_mark(peer, raw)
    with pytest.raises(ConnectionClosed, match=r"closed: the peer stopped reading: it took nothing of the 100\d{3} bytes waiting for it in 0.2 s"):
        await asyncio.wait_for(writer, GUARD)
    with pytest.raises(ConnectionClosed, match="stopped reading"):
        await asyncio.wait_for(call, GUARD)
    assert peer.closed and peer.transport.write_buffer_size() == 0  # the buffer was dropped


async def test_a_writer_giving_up_does_not_cancel_the_others_wait() -> None:
    flow = FlowControl()
    flow.pause_writing()
    first = asyncio.ensure_future(flow.wait_writable())
    second = asyncio.ensure_future(flow.wait_writable())
    await asyncio.sleep(0)
    first.cancel()  # (a call's timeout)
    await asyncio.gather(first, return_exceptions=True)
    await asyncio.sleep(0)
    assert not second.done()
    flow.resume_writing()
    await asyncio.wait_for(second, GUARD)


@pytest.mark.parametrize("pair", [PeerLimits(write_buffer_high=64 * 1024, write_buffer_low=16 * 1024)],
                         indirect=True)
async def test_while_requests_are_held_the_answers_to_our_calls_still_arrive(pair: Any) -> None:
    """What keeps two peers that are both over their mark from waiting on each other."""
    peer, gates, raw = pair
    call, writer = await over_the_mark(peer, raw)
    (rid,) = peer.engine.pending
    raw.send(req(1, "held", method="_t/echo"), {"jsonrpc": "2.0", "id": rid, "result": {"ok": True}})
    assert await asyncio.wait_for(call, GUARD) == {"ok": True}
    assert 1 in peer.delivery.held and gates.started == [] and not writer.done()
    raw.transport.resume_reading()
    await asyncio.wait_for(writer, GUARD)
    await wait_until(lambda: gates.started == ["held"])
