"""Typed calls between a ClientSideConnection and an acplink agent over real subprocess pipes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from connhelpers import AGENT, MISBEHAVING, connect, guard, initialize

from acplink.connection import ClientSideConnection, Router
from acplink.errors import InternalError, InvalidRequest, MessageTooLarge, MethodNotFound, RequestTimeout
from acplink.schema import _generated as s


def text(t: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": t}]


class Updates:
    """A client router that records session/update texts per session."""

    def __init__(self) -> None:
        self.router = Router()
        self.texts: dict[str, list[str]] = {}
        self.started: dict[str, asyncio.Event] = {}
        self.router.add_notification("session/update", self.on_update)

    def event(self, sid: str) -> asyncio.Event:
        return self.started.setdefault(sid, asyncio.Event())

    async def on_update(self, params: s.SessionNotification) -> None:
        t = params.update.content.text  # type: ignore[union-attr]
        self.texts.setdefault(params.session_id, []).append(t)
        if t == "started":
            self.event(params.session_id).set()


async def new_session(conn: ClientSideConnection) -> str:
    return (await guard(conn.session_new(cwd="/", mcp_servers=[]))).session_id


async def test_unknown_method_and_plain_exception_then_connection_still_works() -> None:
    async with connect(AGENT) as conn:
        await initialize(conn)
        with pytest.raises(MethodNotFound) as nf:
            await guard(conn.call("session/frobnicate", {}))
        assert nf.value.code == -32601 and "session/frobnicate" in nf.value.message
        with pytest.raises(InternalError) as ie:
            await guard(conn.call("_test/boom", {}))
        assert ie.value.code == -32603 and ie.value.message == "Internal error (details in the agent's log; debug=True sends them)"
        assert await guard(conn.call("_acme/echo", {"ok": 1})) == {"ok": 1}


async def test_session_new_before_initialize_raises_invalid_request() -> None:
    async with connect(AGENT) as conn:
        with pytest.raises(InvalidRequest, match="before initialize"):
            await guard(conn.session_new(cwd="/", mcp_servers=[]))
        await initialize(conn)
        assert await new_session(conn) == "s1"


async def test_cancelling_the_caller_sends_cancel_request_and_cancels_the_handler() -> None:
    async with connect(AGENT) as conn:
        call = asyncio.ensure_future(conn.call("_test/sleep", {"tag": "by-caller"}))
        assert await guard(conn.call("_acme/echo", 1)) == 1  # the sleep request has been delivered
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

        async def handler_cancelled() -> None:
            while await conn.call("_test/cancelled") != ["by-caller"]:
                await asyncio.sleep(0.01)

        await guard(handler_cancelled())
        assert conn.peer.engine.pending == {}


async def test_request_timeout_raises_and_sends_cancel() -> None:
    async with connect(AGENT) as conn:
        await initialize(conn)  # the agent is up: the request reaches a running handler
        with pytest.raises(RequestTimeout, match="_test/sleep"):
            await guard(conn.call("_test/sleep", {"tag": "timed-out"}, timeout=0.2))

        async def handler_cancelled() -> None:
            while await conn.call("_test/cancelled") != ["timed-out"]:
                await asyncio.sleep(0.01)

        await guard(handler_cancelled())


async def test_session_cancel_cancels_exactly_the_named_session() -> None:
    updates = Updates()
    async with connect(AGENT, updates.router) as conn:
        await initialize(conn)
        s1, s2 = await new_session(conn), await new_session(conn)
        p1 = asyncio.ensure_future(conn.session_prompt(session_id=s1, prompt=text("cooperative")))
        p2 = asyncio.ensure_future(conn.session_prompt(session_id=s2, prompt=text("block")))
        await guard(updates.event(s1).wait())
        await guard(updates.event(s2).wait())
        await conn.session_cancel(session_id=s1)
        r1 = await guard(p1)
        assert r1.stop_reason == "cancelled"  # although the handler itself returned end_turn
        assert not p2.done()
        await guard(conn.call("_test/release", {"sessionId": s2}))
        r2 = await guard(p2)
        assert r2.stop_reason == "end_turn"
        # the cancelled session can prompt again
        r3 = await guard(conn.session_prompt(session_id=s1, prompt=text("stream 2")))
        assert r3.stop_reason == "end_turn" and updates.texts[s1][-2:] == ["0", "1"]


async def test_handler_ignoring_cancel_is_force_cancelled_after_grace() -> None:
    updates = Updates()
    async with connect([*AGENT, "--cancel-grace", "0.2"], updates.router) as conn:
        await initialize(conn)
        sid = await new_session(conn)
        prompt = asyncio.ensure_future(conn.session_prompt(session_id=sid, prompt=text("block")))
        await guard(updates.event(sid).wait())
        await conn.session_cancel(session_id=sid)
        result = await guard(prompt)
        assert result.stop_reason == "cancelled"
        assert await guard(conn.call("_acme/echo", "ok")) == "ok"


async def test_5000_updates_arrive_in_order_before_the_prompt_returns() -> None:
    seen: list[str] = []
    router = Router()

    async def on_update(params: s.SessionNotification) -> None:
        if len(seen) % 100 == 0:
            await asyncio.sleep(0)  # a handler that yields must not lose its place
        seen.append(params.update.content.text)  # type: ignore[union-attr]

    router.add_notification("session/update", on_update)
    async with connect(AGENT, router) as conn:
        await initialize(conn)
        sid = await new_session(conn)
        result = await guard(conn.session_prompt(session_id=sid, prompt=text("stream 5000")), 30)
        assert result.stop_reason == "end_turn"
        assert seen == [str(i) for i in range(5000)]


async def test_updates_mixed_with_concurrent_requests_keep_order() -> None:
    seen: list[str] = []
    pings: list[int] = []
    router = Router()

    async def on_update(params: s.SessionNotification) -> None:
        seen.append(params.update.content.text)  # type: ignore[union-attr]

    async def on_ping(params: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        pings.append(params["i"])
        return params

    router.add_notification("session/update", on_update)
    router.add_request("_client/ping", on_ping)
    async with connect(AGENT, router) as conn:
        await initialize(conn)
        sid = await new_session(conn)
        # client-to-agent requests running at the same time as the streaming turn
        echoes = [asyncio.ensure_future(conn.call("_acme/echo", i)) for i in range(50)]
        result = await guard(conn.session_prompt(session_id=sid, prompt=text("mixed 1000")), 30)
        assert result.stop_reason == "end_turn"
        assert seen == [str(i) for i in range(1000)]
        assert sorted(pings) == list(range(0, 1000, 10))
        assert await guard(asyncio.gather(*echoes)) == list(range(50))


async def test_fs_call_without_capability_raises_capability_error_locally() -> None:
    router = Router()
    reads: list[str] = []

    async def read(params: s.ReadTextFileRequest) -> dict[str, str]:
        reads.append(params.path)
        return {"content": "hello"}

    router.add_request("fs/read_text_file", read)
    async with connect(AGENT, router) as conn:
        await initialize(conn)  # advertises no fs capability
        sid = await new_session(conn)
        result = await guard(conn.call("_test/read", {"sessionId": sid, "path": "/etc/hostname"}))
        assert result["error"] == "CapabilityError" and "fs.readTextFile" in result["message"]
        assert reads == []  # refused locally: nothing went over the wire
        # the same call with check_capabilities=False goes through to the client's handler
        result = await guard(conn.call("_test/read", {"sessionId": sid, "path": "/etc/hostname", "check": False}))
        assert result == {"content": "hello"} and reads == ["/etc/hostname"]
    async with connect(AGENT, router) as conn:
        await initialize(conn, fs={"readTextFile": True})
        sid = await new_session(conn)
        assert await guard(conn.call("_test/read", {"sessionId": sid, "path": "/x"})) == {"content": "hello"}


async def test_message_size_limits_both_ways() -> None:
    async with connect(AGENT, max_size=1_000_000) as conn:
        await initialize(conn)
        # outgoing over the limit: raised locally, nothing sent, connection fine
        with pytest.raises(MessageTooLarge) as info:
            await conn.call("_test/size", {"data": "x" * 2_000_000})
        assert info.value.direction == "outgoing" and info.value.limit == 1_000_000
        assert conn.peer.engine.pending == {}
        # incoming over the limit: discarded without buffering it whole, the caller fails
        with pytest.raises(MessageTooLarge, match="exceeds the limit") as too_big:
            await guard(conn.call("_test/big", {"size": 5_000_000}))
        assert too_big.value.size == 5_000_000 + len('{"jsonrpc":"2.0","id":3,"result":{"data":""}}')
        assert too_big.value.limit == 1_000_000 and too_big.value.direction == "incoming response"
        assert conn.peer.engine.decoder.buffered <= 1_000_000
        assert await guard(conn.call("_test/size", {"data": "y" * 900_000})) == {"size": 900_000}


async def test_40_mb_message_works_when_the_limit_is_raised() -> None:
    limit = str(64 * 1024 * 1024)
    async with connect([*AGENT, "--max-size", limit], max_size=64 * 1024 * 1024) as conn:
        await initialize(conn)
        data = "z" * 40_000_000
        assert await guard(conn.call("_test/size", {"data": data}), 30) == {"size": 40_000_000}
        big = await guard(conn.call("_test/big", {"size": 40_000_000}), 30)
        assert len(big["data"]) == 40_000_000


async def test_noisy_agent_does_not_break_typed_calls_to_real_agent() -> None:
    # sanity: the misbehaving script answers plain echo through a typed client
    async with connect([*MISBEHAVING, "plain"]) as conn:
        assert await guard(conn.call("echo", [1, 2, 3])) == [1, 2, 3]
