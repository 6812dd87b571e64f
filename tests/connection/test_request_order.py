"""An inbound request is started only after the notifications that arrived before it have been
handled: the permission question about a tool call finds the tool call known, whatever the
notification handler awaits (memory pair; the far end is raw)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from test_memory import RawEnd

from acplink.connection.peer import Peer
from acplink.transports import memory_pair

GUARD = 10.0


class Slow:
    """Notifications take a while to handle; every event is logged in the order it happens."""

    def __init__(self) -> None:
        self.log: list[str] = []

    async def handle_request(self, method: str, params: Any) -> bytes:
        self.log.append(f"request {params['k']}")
        return orjson.dumps(params)

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        await asyncio.sleep(0.02)
        self.log.append(f"notification {params['k']}")


def note(k: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "_t/note", "params": {"k": k}}


def req(rid: Any, k: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "_t/ask", "params": {"k": k}}


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Peer, Slow, RawEnd]]:
    ours, theirs = memory_pair()
    slow = Slow()
    peer = Peer(ours, slow)
    raw = RawEnd(theirs)
    await peer.start()
    await raw.start()
    yield peer, slow, raw
    await peer.aclose()
    await theirs.aclose()


async def test_a_request_waits_for_the_notifications_before_it(pair: Any) -> None:
    _peer, slow, raw = pair
    raw.send(note(1), note(2), req(1, "a"), note(3), req(2, "b"))  # one write
    replies = [await asyncio.wait_for(raw.recv(), GUARD) for _ in range(2)]
    assert sorted(r["id"] for r in replies) == [1, 2]
    for _ in range(100):
        if len(slow.log) == 5:
            break
        await asyncio.sleep(0.01)
    assert slow.log[:3] == ["notification 1", "notification 2", "request a"]
    assert slow.log.index("request b") > slow.log.index("notification 3")


async def test_a_request_with_nothing_before_it_starts_at_once(pair: Any) -> None:
    _peer, slow, raw = pair
    raw.send(req(1, "a"))
    assert (await asyncio.wait_for(raw.recv(), GUARD))["result"] == {"k": "a"}
    assert slow.log == ["request a"]


async def test_a_queued_request_cancelled_is_answered_at_once_and_never_runs(pair: Any) -> None:
    _peer, slow, raw = pair
    raw.send(note(1), req(7, "a"), {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}})
    reply = await asyncio.wait_for(raw.recv(), GUARD)
    assert reply == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32800, "message": "Request cancelled"}}
    raw.send(note(2))
    for _ in range(100):
        if len(slow.log) == 2:
            break
        await asyncio.sleep(0.01)
    assert slow.log == ["notification 1", "notification 2"]


async def test_a_duplicate_id_waiting_in_the_queue_is_refused(pair: Any) -> None:
    _peer, _slow, raw = pair
    raw.send(note(1), req(5, "a"), req(5, "b"))
    first = await asyncio.wait_for(raw.recv(), GUARD)
    assert first["id"] == 5 and first["error"]["code"] == -32600
    second = await asyncio.wait_for(raw.recv(), GUARD)
    assert second == {"jsonrpc": "2.0", "id": 5, "result": {"k": "a"}}
