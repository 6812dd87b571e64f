"""Every resource limit: configurable, a safe default, and a clear error (never a crash) when
exceeded. Also: error replies carry no traceback or local path unless debug is on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from rbhelpers import RawClient, guard

from acplink import AgentApp, Context, InternalError, connect
from acplink.client.fs import DEFAULT_MAX_READ_BYTES, FileSystemHandler
from acplink.client.terminal import TerminalHandler
from acplink.connection import AgentSideConnection, Peer, PeerLimits, Router
from acplink.errors import TransportError
from acplink.rpc import engine as rpc_engine
from acplink.rpc.framing import DEFAULT_MAX_MESSAGE_SIZE
from acplink.schema import _generated as s
from acplink.transports import MemoryTransport, memory_pair


def test_every_limit_has_its_documented_safe_default(tmp_path: Path) -> None:
    limits = PeerLimits()
    assert DEFAULT_MAX_MESSAGE_SIZE == 64 * 1024 * 1024 == limits.max_message_size
    assert limits.max_pending_requests == 10_000
    assert limits.max_concurrent_requests == 10_000
    assert limits.max_queued_notifications == 10_000
    assert rpc_engine.Engine().max_pending == 10_000
    app = AgentApp()
    assert app.max_sessions == 1000 and app.cancel_grace == 2.0
    term = TerminalHandler()
    assert term.max_terminals == 32 and term.default_output_byte_limit == 1_000_000
    assert term.allow_shell is False
    fs = FileSystemHandler([tmp_path])
    assert fs.max_read_bytes == DEFAULT_MAX_READ_BYTES == DEFAULT_MAX_MESSAGE_SIZE
    assert (fs.budget.max_operations, fs.budget.max_bytes) == (4, 32 * 1024 * 1024)
    a, _ = memory_pair()
    assert Peer(a, Router()).eof_grace == 1.0  # type: ignore[arg-type]


class RawEnd:
    """The far end of a memory pair: write exact bytes, read decoded messages."""

    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport
        self.inbox: asyncio.Queue[Any] = asyncio.Queue()
        self._buf = b""

    def data_received(self, data: bytes) -> None:
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        for line in lines:
            self.inbox.put_nowait(orjson.loads(line))

    def eof_received(self, exc: BaseException | None) -> None:
        pass

    def send(self, *msgs: Any) -> None:
        self.transport.write(b"".join(orjson.dumps(m) + b"\n" for m in msgs))

    async def recv(self) -> Any:
        return await guard(self.inbox.get())


async def test_max_concurrent_requests_refuses_the_excess_with_minus_32603() -> None:
    started = asyncio.Event()
    router = Router()

    async def sleep(p: Any) -> None:
        started.set()
        await asyncio.sleep(3600)

    async def echo(p: Any) -> Any:
        return p

    router.add_request("_test/sleep", sleep)
    router.add_request("_test/echo", echo)
    a, b = memory_pair()
    conn = AgentSideConnection(a, router, limits=PeerLimits(max_concurrent_requests=2))
    raw = RawEnd(b)
    await conn.start()
    await b.start(raw)
    try:
        raw.send(*({"jsonrpc": "2.0", "id": i, "method": "_test/sleep", "params": {}} for i in (1, 2, 3)))
        reply = await raw.recv()
        assert reply["id"] == 3 and reply["error"] == {
            "code": -32603, "message": "too many concurrent requests (limit 2)"}
        assert set(conn.peer.delivery.running) == {1, 2}
        raw.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 1}})
        assert (await raw.recv()) == {"jsonrpc": "2.0", "id": 1,
                                      "error": {"code": -32800, "message": "Request cancelled"}}
        raw.send({"jsonrpc": "2.0", "id": 4, "method": "_test/echo", "params": "ok"})  # a slot is free
        assert (await raw.recv()) == {"jsonrpc": "2.0", "id": 4, "result": "ok"}
    finally:
        await conn.aclose()
        await b.aclose()


def session_app(max_sessions: int) -> AgentApp:
    app = AgentApp("limited", max_sessions=max_sessions)

    @app.close_session
    async def close_session(ctx: Context[s.CloseSessionRequest]) -> s.CloseSessionResponse:
        return s.CloseSessionResponse()

    @app.delete_session
    async def delete_session(ctx: Context[s.DeleteSessionRequest]) -> s.DeleteSessionResponse:
        return s.DeleteSessionResponse()

    return app


async def test_max_sessions_refuses_new_sessions_and_closed_ones_free_their_slot(tmp_path: Path) -> None:
    app = session_app(2)
    async with connect(app) as client:
        first = await guard(client.new_session(cwd=tmp_path))
        second = await guard(client.new_session(cwd=tmp_path))
        with pytest.raises(InternalError) as info:
            await guard(client.new_session(cwd=tmp_path))
        assert info.value.code == -32603
        assert info.value.message == "too many sessions (limit 2); close or delete one first"
        assert info.value.data == {"limit": 2}
        assert set(app.sessions) == {first.session_id, second.session_id}
        await guard(first.close())  # session/close frees the slot
        assert first.session_id not in app.sessions
        third = await guard(client.new_session(cwd=tmp_path))
        await guard(client.conn.session_delete(session_id=second.session_id))  # so does session/delete
        assert set(app.sessions) == {third.session_id}
        await guard(client.new_session(cwd=tmp_path))
        assert len(app.sessions) == 2


async def test_max_sessions_over_a_pipe() -> None:
    client = await RawClient.spawn("--max-sessions", "1")
    try:
        await client.initialize()
        ok = await client.request("session/new", {"cwd": "/", "mcpServers": []})
        assert ok["result"]["sessionId"].startswith("sess_")
        refused = await client.request("session/new", {"cwd": "/", "mcpServers": []})
        assert refused["error"] == {"code": -32603, "message": "too many sessions (limit 1); close or delete one first",
                                    "data": {"limit": 1}}
        # the connection keeps working
        again = await client.request("session/prompt", {"sessionId": ok["result"]["sessionId"],
                                                        "prompt": [{"type": "text", "text": "flood 1 5"}]})
        assert again["result"]["stopReason"] == "end_turn"
    finally:
        await client.kill()


# -- no tracebacks or local paths in error replies unless debug is on ------------------------------


@pytest.mark.parametrize("debug", [False, True])
async def test_error_replies_hide_details_unless_debug(debug: bool) -> None:
    secret = str(Path(__file__).resolve())
    router = Router()

    async def plain(p: Any) -> None:
        raise RuntimeError(f"secret detail in {secret}")

    async def local(p: Any) -> None:
        raise TransportError(f"could not open {secret}")

    router.add_request("_test/plain", plain)
    router.add_request("_test/local", local)
    a, b = memory_pair()
    conn = AgentSideConnection(a, router, debug=debug)
    raw = RawEnd(b)
    await conn.start()
    await b.start(raw)
    try:
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "_test/plain", "params": {}})
        plain_err = (await raw.recv())["error"]
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "_test/local", "params": {}})
        local_err = (await raw.recv())["error"]
    finally:
        await conn.aclose()
        await b.aclose()
    assert plain_err["code"] == local_err["code"] == -32603
    wire = orjson.dumps([plain_err, local_err]).decode()
    assert "Traceback" not in wire and 'File "' not in wire
    if debug:
        assert plain_err["message"] == f"Internal error: RuntimeError: secret detail in {secret}"
        assert local_err["message"] == f"could not open {secret}"
    else:
        hint = " (details in the agent's log; debug=True sends them)"
        assert plain_err == {"code": -32603, "message": "Internal error" + hint}
        assert local_err == {"code": -32603, "message": "Internal error: TransportError" + hint}
        assert secret not in wire and "/" not in wire
