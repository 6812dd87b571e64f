"""Connections over the in-memory transport, driven byte-exactly from a raw far end."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from acplink.connection import AgentSideConnection, ClientSideConnection, Router
from acplink.errors import ConnectionClosed, InternalError, MessageTooLarge, RequestTimeout
from acplink.schema import _generated as s
from acplink.transports import MemoryTransport, memory_pair

GUARD = 10.0


class RawEnd:
    """The far end of a memory pair: write exact bytes, read decoded messages."""

    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self.eof = asyncio.Event()
        self._buf = b""

    async def start(self) -> None:
        await self.transport.start(self)

    def data_received(self, data: bytes) -> None:
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            self.inbox.put_nowait(orjson.loads(line))

    def eof_received(self, exc: BaseException | None) -> None:
        self.eof.set()

    def send(self, *msgs: Any) -> None:
        """Write all messages in ONE chunk."""
        self.transport.write(b"".join(orjson.dumps(m) + b"\n" for m in msgs))

    async def recv(self) -> Any:
        return await asyncio.wait_for(self.inbox.get(), GUARD)


def agent_router(started: asyncio.Event | None = None) -> Router:
    router = Router()

    async def sleep(p: Any) -> None:
        if started is not None:
            started.set()
        await asyncio.sleep(3600)

    async def echo(p: Any) -> Any:
        return p

    async def big(p: Any) -> Any:
        return {"data": "x" * p["size"]}

    router.add_request("_test/sleep", sleep)
    router.add_request("_test/echo", echo)
    router.add_request("_test/big", big)
    return router


@pytest.fixture
async def agent_and_raw() -> AsyncIterator[tuple[AgentSideConnection, RawEnd]]:
    a, b = memory_pair()
    conn = AgentSideConnection(a, agent_router())
    raw = RawEnd(b)
    await conn.start()
    await raw.start()
    yield conn, raw
    await conn.aclose()
    await b.aclose()


async def test_request_cancelled_in_the_same_chunk_is_still_answered(
        agent_and_raw: tuple[AgentSideConnection, RawEnd]) -> None:
    conn, raw = agent_and_raw
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "_test/sleep", "params": {}},
             {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}})
    reply = await raw.recv()
    assert reply == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32800, "message": "Request cancelled"}}
    assert conn.peer.delivery.running == {}
    # the id can be reused, and the connection works
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "_test/echo", "params": {"a": 1}})
    assert (await raw.recv())["result"] == {"a": 1}


async def test_cancel_of_running_request(agent_and_raw: tuple[AgentSideConnection, RawEnd]) -> None:
    conn, raw = agent_and_raw
    raw.send({"jsonrpc": "2.0", "id": "r", "method": "_test/sleep", "params": {}})
    raw.send({"jsonrpc": "2.0", "id": "e", "method": "_test/echo", "params": 1})
    assert (await raw.recv())["id"] == "e"
    raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "r"}})
    assert (await raw.recv())["error"]["code"] == -32800
    assert conn.peer.delivery.running == {}


async def test_closing_fails_pending_calls_and_cancels_handlers() -> None:
    a, b = memory_pair()
    started = asyncio.Event()
    agent = AgentSideConnection(b, agent_router(started))
    client = ClientSideConnection(a, Router())
    await agent.start()
    await client.start()
    pending = asyncio.ensure_future(client.call("_test/sleep", {}))
    await asyncio.wait_for(started.wait(), GUARD)
    await agent.aclose()  # the agent hangs up mid-request
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(pending, GUARD)
    await asyncio.wait_for(client.wait_closed(), GUARD)
    with pytest.raises(ConnectionClosed):
        await client.call("_test/echo", 1)
    await client.aclose()


async def test_timeout_and_caller_cancel_in_memory() -> None:
    a, b = memory_pair()
    started = asyncio.Event()
    agent = AgentSideConnection(b, agent_router(started))
    client = ClientSideConnection(a, Router())
    async with agent, client:
        with pytest.raises(RequestTimeout):
            await client.call("_test/sleep", {}, timeout=0.05)
        assert started.is_set() and client.peer.engine.pending == {}

        async def drained() -> None:
            while agent.peer.delivery.running:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(drained(), GUARD)  # the handler was cancelled via $/cancel_request
        assert await client.call("_test/echo", 5) == 5


async def test_notifications_then_response_are_delivered_in_order_and_handler_errors_are_contained(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="acplink")
    a, b = memory_pair()
    agent_r = Router()
    seen: list[int] = []

    async def prompt(p: s.PromptRequest) -> dict[str, str]:
        for i in range(300):
            await agent.session_update(session_id=p.session_id, update={
                "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": str(i)}})
        return {"stopReason": "end_turn"}

    async def init(p: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1)

    agent_r.add_request("session/prompt", prompt)
    agent_r.add_request("initialize", init)
    client_r = Router()

    async def on_update(p: s.SessionNotification) -> None:
        i = int(p.update.content.text)  # type: ignore[union-attr]
        seen.append(i)
        if i == 7:
            raise RuntimeError("client handler bug")
        if i % 50 == 0:
            await asyncio.sleep(0.001)

    client_r.add_notification("session/update", on_update)
    agent = AgentSideConnection(b, agent_r)
    client = ClientSideConnection(a, client_r)
    async with agent, client:
        await client.initialize(protocol_version=1)
        result = await asyncio.wait_for(
            client.session_prompt(session_id="s", prompt=[{"type": "text", "text": "go"}]), GUARD)
        assert result.stop_reason == "end_turn"
        assert seen == list(range(300))
    assert any("client handler bug" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)


async def test_outgoing_message_too_large_is_local_and_connection_keeps_working() -> None:
    from acplink.connection import PeerLimits

    a, b = memory_pair()
    agent = AgentSideConnection(b, agent_router(), limits=PeerLimits(max_message_size=10_000))
    client = ClientSideConnection(a, Router(), limits=PeerLimits(max_message_size=10_000))
    async with agent, client:
        with pytest.raises(MessageTooLarge):
            await client.notify("_test/note", {"d": "x" * 20_000})
        with pytest.raises(MessageTooLarge):
            await client.call("_test/echo", {"d": "x" * 20_000})
        # a handler whose result is too large for the agent to send: the caller gets -32603
        with pytest.raises(InternalError, match="MessageTooLarge"):
            await asyncio.wait_for(client.call("_test/big", {"size": 20_000}), GUARD)
        assert await client.call("_test/echo", "small") == "small"


async def test_calls_beyond_max_pending_wait_for_a_slot_instead_of_failing() -> None:
    """More outstanding calls than ``max_pending_requests``: the extra callers wait (backpressure)
    and every call completes with its own answer."""
    import asyncio

    from acplink import AgentSideConnection, ClientSideConnection, PeerLimits, Router, memory_pair

    ours, theirs = memory_pair()
    release = asyncio.Event()
    seen: list[int] = []

    async def echo(params: dict[str, int]) -> dict[str, int]:
        seen.append(params["i"])
        await release.wait()
        return {"i": params["i"]}

    agent_router = Router()
    agent_router.add_request("_test/echo", echo)
    agent = AgentSideConnection(theirs, agent_router)
    client = ClientSideConnection(ours, Router(), limits=PeerLimits(max_pending_requests=3))
    await agent.start()
    await client.start()
    try:
        calls = [asyncio.ensure_future(client.call("_test/echo", {"i": i})) for i in range(10)]
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(client.peer.engine.pending) == 3  # the other seven wait for a slot
        assert len(seen) == 3
        release.set()
        answers = await asyncio.wait_for(asyncio.gather(*calls), 10)
        assert [a["i"] for a in answers] == list(range(10))
    finally:
        await client.aclose()
        await agent.aclose()


async def test_one_router_serves_two_agent_connections_unchanged() -> None:
    """The agent side wraps its prompt/initialize handlers in a copy: the router given stays as it
    was and can serve another connection (no double wrapping)."""
    from acplink import AgentSideConnection, Router, memory_pair

    async def prompt(params: object) -> dict[str, str]:
        return {"stopReason": "end_turn"}

    router = Router()
    router.add_request("session/prompt", prompt)
    first = AgentSideConnection(memory_pair()[1], router)
    second = AgentSideConnection(memory_pair()[1], router)
    assert router.requests["session/prompt"] is prompt
    assert "session/cancel" not in router.notifications
    assert first.router is not router and second.router is not router
    assert first.router.requests["session/prompt"] is not prompt  # wrapped, for turn tracking


async def test_memory_transport_delivers_held_back_data_before_end_of_input() -> None:
    """Reading paused, data held back, then the other end closes: the data still arrives,
    and only then the end of input."""
    import asyncio

    from acplink import memory_pair

    events: list[object] = []

    class Sink:
        def data_received(self, data: bytes) -> None:
            events.append(data)

        def eof_received(self, exc: BaseException | None) -> None:
            events.append("eof")

    ours, theirs = memory_pair()
    await ours.start(Sink())
    ours.pause_reading()
    theirs.write(b"one\n")
    theirs.write(b"two\n")
    await theirs.aclose()
    for _ in range(5):
        await asyncio.sleep(0)
    assert events == []  # paused: nothing yet, not even the end
    ours.resume_reading()
    assert events == [b"one\n", b"two\n", "eof"]
    await ours.aclose()


async def test_initialize_with_bad_params_is_a_usage_error_not_a_pydantic_error() -> None:
    from acplink import ClientSideConnection, Router, UsageError, memory_pair
    from acplink.schema import InitializeRequest

    conn = ClientSideConnection(memory_pair()[0], Router())
    with pytest.raises(UsageError, match="bad params for initialize"):
        await conn.initialize(protocol_version="not a number")
    with pytest.raises(UsageError, match="not both"):
        await conn.initialize(InitializeRequest(protocol_version=1), protocol_version=1)
