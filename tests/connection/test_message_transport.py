"""The transport interface of whole messages: a framed transport gets exactly one message per
send (however many are sent in one turn), replies carry the id they answer in their meta, and
the NDJSON batching of stream transports lives in their adapter (StreamTransport)."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from acplink.connection.peer import Peer
from acplink.errors import ConnectionClosed, RequestError
from acplink.transports import MessageMeta, StreamTransport, Transport, memory_pair
from acplink.transports.base import TransportSink
from acplink.transports.stream import FLUSH_AT


class _Framed(Transport):
    """A message-framed transport (think WebSocket) that records every frame it is given.
    Bytes given through the older byte interface (``write``) are recorded as frames too: a
    connection that batched messages into writes would show up here as multi-message frames."""

    framed = True

    def __init__(self) -> None:
        self.frames: list[tuple[bytes, MessageMeta | None]] = []
        self.sink: TransportSink | None = None

    async def start(self, sink: TransportSink) -> None:
        self.sink = sink

    def send(self, message: bytes, meta: MessageMeta | None = None) -> bool:
        self.frames.append((message, meta))
        return False

    def write(self, data: bytes) -> None:
        self.frames.append((data, None))

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    def messages(self) -> list[Any]:
        """Each frame decoded; fails unless every frame holds exactly one JSON message."""
        out = []
        for frame, _ in self.frames:
            assert frame.count(b"\n") <= 1 and not frame.rstrip(b"\n").count(b"\n"), frame
            out.append(orjson.loads(frame))
        return out

    def deliver(self, *messages: Any) -> None:
        assert self.sink is not None
        for m in messages:
            self.sink.message_received(orjson.dumps(m), MessageMeta())


class _Handlers:
    def __init__(self) -> None:
        self.notified: list[Any] = []

    async def handle_request(self, method: str, params: Any) -> bytes:
        if method == "fail":
            raise RequestError("no such thing", code=-32602)
        await asyncio.sleep(0)
        return orjson.dumps({"echo": params})

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        self.notified.append(params)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def _peer(transport: Transport) -> Peer:
    peer = Peer(transport, _Handlers(), name="test")
    await peer.start()
    return peer


async def test_notifications_in_one_turn_are_one_send_each_on_a_framed_transport() -> None:
    t = _Framed()
    peer = await _peer(t)
    try:
        for i in range(3):
            await peer.notify("note", orjson.dumps({"i": i}))
        await _settle()
        assert [m["params"]["i"] for m in t.messages()] == [0, 1, 2]
        assert len(t.frames) == 3
    finally:
        await peer.aclose()


async def test_a_burst_bigger_than_a_batch_is_still_one_send_per_message() -> None:
    t = _Framed()
    peer = await _peer(t)
    try:
        n = 3 * FLUSH_AT // 100  # ~100-byte messages: three stream batches' worth
        for i in range(n):
            await peer.notify("note", orjson.dumps({"i": i, "pad": "x" * 60}))
        await _settle()
        assert [m["params"]["i"] for m in t.messages()] == list(range(n))
    finally:
        await peer.aclose()


async def test_requests_are_one_send_each_and_their_replies_resolve_them() -> None:
    t = _Framed()
    peer = await _peer(t)
    try:
        calls = [asyncio.ensure_future(peer.request("ask", orjson.dumps({"n": i}))) for i in range(4)]
        await _settle()
        sent = t.messages()
        assert [m["params"]["n"] for m in sent] == [0, 1, 2, 3]
        t.deliver(*({"jsonrpc": "2.0", "id": m["id"], "result": m["params"]["n"] * 10} for m in sent))
        assert await asyncio.wait_for(asyncio.gather(*calls), 5) == [0, 10, 20, 30]
    finally:
        await peer.aclose()


async def test_replies_are_one_send_each_and_meta_names_the_request_they_answer() -> None:
    t = _Framed()
    peer = await _peer(t)
    try:
        t.deliver(*({"jsonrpc": "2.0", "id": f"r{i}", "method": "echo", "params": {"i": i}} for i in range(3)),
                  {"jsonrpc": "2.0", "id": 7, "method": "fail", "params": {}},
                  {"jsonrpc": "2.0", "id": 7, "method": "echo", "params": {}})  # a duplicate id
        await _settle()
        replies = t.messages()
        assert len(replies) == 5
        for (_, meta), reply in zip(t.frames, replies, strict=True):
            assert meta is not None and meta.reply_to == reply["id"]
        assert sorted(str(r["id"]) for r in replies) == ["7", "7", "r0", "r1", "r2"]
        assert {r["result"]["echo"]["i"] for r in replies if "result" in r} == {0, 1, 2}
        assert sorted(r["error"]["code"] for r in replies if "error" in r) == [-32602, -32600]
    finally:
        await peer.aclose()


async def test_received_messages_are_handled_in_order() -> None:
    t = _Framed()
    handlers = _Handlers()
    peer = Peer(t, handlers, name="test")
    await peer.start()
    try:
        t.deliver(*({"jsonrpc": "2.0", "method": "note", "params": {"i": i}} for i in range(5)))
        await _settle()
        assert handlers.notified == [{"i": i} for i in range(5)]
    finally:
        await peer.aclose()


class _Stream(StreamTransport):
    """A byte stream that records each write; ``fail_after`` writes, every write fails."""

    def __init__(self, fail_after: int | None = None) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.fail_after = fail_after

    async def start(self, sink: TransportSink) -> None:
        self._sink = sink

    def write(self, data: bytes) -> None:
        if self.fail_after is not None and len(self.writes) >= self.fail_after:
            raise BrokenPipeError(32, "Broken pipe")
        self.writes.append(data)

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_the_stream_adapter_batches_the_lines_of_a_turn() -> None:
    t = _Stream()
    peer = await _peer(t)
    try:
        for i in range(3):
            await peer.notify("note", orjson.dumps({"i": i}))
        assert len(t.writes) == 1 and t.batched_size() > 0  # the first at once, the rest batched
        await _settle()
        assert len(t.writes) == 2 and t.batched_size() == 0
        assert [orjson.loads(line)["params"]["i"] for line in b"".join(t.writes).splitlines()] == [0, 1, 2]
    finally:
        await peer.aclose()


class _Collect:
    def __init__(self) -> None:
        self.data = b""

    def data_received(self, data: bytes) -> None:
        self.data += data

    def eof_received(self, exc: BaseException | None) -> None:
        pass


async def test_a_batch_counts_as_buffered_and_abort_drops_it() -> None:
    a, b = memory_pair()
    peer = await _peer(a)
    other = _Collect()
    await b.start(other)  # type: ignore[arg-type]
    try:
        sizes = []
        for i in range(3):
            msg = peer.engine.notification("note", orjson.dumps({"i": i}))
            sizes.append(len(msg))
            peer._send(msg)  # (not awaited: the in-memory drain yields a turn)
        assert a.batched_size() == sizes[1] + sizes[2] and a.write_buffer_size() == sum(sizes)
        await _settle()
        assert a.write_buffer_size() == 0 and other.data.count(b"\n") == 3
        peer._send(peer.engine.notification("note", b"{}"))  # written at once
        peer._send(peer.engine.notification("note", b"{}"))  # batched
        a.abort_writing()  # (the peer stopped reading: the batch is dropped)
        assert a.batched_size() == 0 and a.write_buffer_size() == 0
        await _settle()
        assert other.data.count(b"\n") == 4
    finally:
        await peer.aclose()
        await b.aclose()


async def test_a_batched_write_that_fails_closes_the_connection_with_its_cause() -> None:
    t = _Stream(fail_after=1)
    peer = await _peer(t)
    call = asyncio.ensure_future(peer.request("ask", None))
    await peer.notify("note", None)  # joins the batch behind the request; its write fails next turn
    await _settle()
    assert peer.closed
    with pytest.raises(ConnectionClosed, match="Broken pipe"):
        await asyncio.wait_for(call, 5)
    await peer.aclose()
