"""Both sides answer an invalid ``jsonrpc`` member with -32600 and never answer a
response-shaped message without a usable id; a call's result hook runs in order."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from test_memory import RawEnd

from acplink import AgentApp, InvalidParams, ProtocolError
from acplink.connection import ClientSideConnection, Connection, Router
from acplink.transports import MemoryTransport, memory_pair

GUARD = 10.0


@asynccontextmanager
async def _facing(conn: Connection, transport: MemoryTransport) -> AsyncIterator[RawEnd]:
    """``conn`` (on one end of a memory pair) faced by a raw end on ``transport``, the other."""
    raw = RawEnd(transport)
    await raw.start()
    await conn.start()
    try:
        yield raw
    finally:
        await conn.aclose()
        await transport.aclose()


@pytest.fixture(params=["agent", "client"])
async def side(request: pytest.FixtureRequest) -> AsyncIterator[RawEnd]:
    """A raw far end talking to an agent connection or to a client connection."""
    ours, theirs = memory_pair()
    conn = AgentApp("t").connection(theirs) if request.param == "agent" else ClientSideConnection(theirs, Router())
    async with _facing(conn, ours) as raw:
        yield raw


async def _silence(raw: RawEnd) -> None:
    """Nothing more arrives: a ping's answer is the next message."""
    raw.send({"jsonrpc": "2.0", "id": "ping", "method": "_no/such"})
    assert (await raw.recv())["id"] == "ping"


@pytest.mark.parametrize("version", [{}, {"jsonrpc": "1.0"}, {"jsonrpc": 2}, {"jsonrpc": None}])
async def test_a_bad_jsonrpc_member_is_answered_invalid_request(side: RawEnd, version: dict[str, Any]) -> None:
    side.send({**version, "id": 41, "method": "initialize", "params": {"protocolVersion": 1}})
    reply = await side.recv()
    assert reply["id"] == 41 and reply["error"]["code"] == -32600 and reply["jsonrpc"] == "2.0"
    side.send({**version, "method": "session/update", "params": {"sessionId": "s", "update": {}}})
    reply = await side.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600
    await _silence(side)


async def test_response_shaped_messages_without_an_id_are_logged_not_answered(
        side: RawEnd, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "acplink")
    # a valid message first: bad lines before any are summarised in one warning instead
    side.send({"jsonrpc": "2.0", "method": "_t/hello"})
    side.send({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid request"}},
              {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
              {"jsonrpc": "2.0", "result": {}},
              {"result": 1})
    await _silence(side)
    assert "without a request id" in caplog.text and "without a usable id" in caplog.text
    # an invalid request is still answered, with id null
    side.send({"jsonrpc": "2.0", "params": {}})
    reply = await side.recv()
    assert reply["id"] is None and reply["error"]["code"] == -32600


# -- result hooks -------------------------------------------------------------------------------


@pytest.fixture
async def client_conn() -> AsyncIterator[tuple[ClientSideConnection, RawEnd]]:
    ours, theirs = memory_pair()
    conn = ClientSideConnection(theirs, Router())
    async with _facing(conn, ours) as raw:
        yield conn, raw


async def test_a_result_hook_runs_before_the_next_message_is_handled(
        client_conn: tuple[ClientSideConnection, RawEnd]) -> None:
    conn, raw = client_conn
    seen: list[Any] = []

    async def on_note(p: Any) -> None:
        seen.append(("note", p))

    conn.router.add_notification("_note", on_note)
    call = asyncio.ensure_future(conn.peer.request("_x", b"{}", on_result=lambda r: seen.append(("hook", r)) or 7))
    req = await raw.recv()
    # a notification queued before the response, the response, one right behind it: one chunk
    raw.send({"jsonrpc": "2.0", "method": "_note", "params": 1},
             {"jsonrpc": "2.0", "id": req["id"], "result": "r"},
             {"jsonrpc": "2.0", "method": "_note", "params": 2})
    assert await asyncio.wait_for(call, GUARD) == 7
    await _silence(raw)
    assert seen == [("note", 1), ("hook", "r"), ("note", 2)]


async def test_a_result_hook_is_not_run_for_an_error_and_its_failure_fails_the_call(
        client_conn: tuple[ClientSideConnection, RawEnd]) -> None:
    conn, raw = client_conn
    calls: list[Any] = []

    def hook(result: Any) -> Any:
        calls.append(result)
        raise ProtocolError("refused by the hook")

    call = asyncio.ensure_future(conn.peer.request("_x", b"{}", on_result=hook))
    req = await raw.recv()
    raw.send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -32602, "message": "bad"}})
    with pytest.raises(InvalidParams):
        await asyncio.wait_for(call, GUARD)
    assert calls == []
    call = asyncio.ensure_future(conn.peer.request("_x", b"{}", on_result=hook))
    req = await raw.recv()
    raw.send({"jsonrpc": "2.0", "id": req["id"], "result": 1})
    with pytest.raises(ProtocolError, match="refused by the hook"):
        await asyncio.wait_for(call, GUARD)
    assert calls == [1]
    assert not conn.peer.calls.hooks


async def test_a_response_with_a_bad_jsonrpc_member_fails_the_call(
        client_conn: tuple[ClientSideConnection, RawEnd]) -> None:
    conn, raw = client_conn
    call = asyncio.ensure_future(conn.call("_x", {}))
    req = await raw.recv()
    raw.send({"jsonrpc": "1.0", "id": req["id"], "result": {}})
    with pytest.raises(ProtocolError, match=r"not JSON-RPC 2\.0"):
        await asyncio.wait_for(call, GUARD)
    await _silence(raw)  # (and it was not answered)
