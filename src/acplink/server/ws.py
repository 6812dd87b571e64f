"""The WebSocket wire: one JSON-RPC message per text frame, both ways."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from .._tasks import TaskSet
from ..errors import AcpError
from ..protocol.messages import message_kind
from .access import Refusal
from .asgi import Receive, Scope, Send, answer, peer_of
from .connection import Registry, RemoteConnection, pump

__all__ = ["handle_websocket", "refuse_upgrade"]

#: close codes
PROTOCOL_ERROR = 1002
POLICY = 1008
TOO_BIG = 1009


def _error(code: int, message: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})


async def refuse_upgrade(scope: Scope, send: Send, refusal: Refusal) -> None:
    """Answer an upgrade with an HTTP error (where the server supports it; else a 403)."""
    if "websocket.http.response" in scope.get("extensions", {}) or {}:
        await answer(send, refusal.status, refusal.reason, headers=refusal.headers, prefix="websocket.http")
    else:
        await send({"type": "websocket.close", "code": POLICY})


async def handle_websocket(registry: Registry, scope: Scope, receive: Receive, send: Send,
                           principal: str | None = None) -> None:
    """Serve one WebSocket; ``principal``: whom its token identifies (None: no token)."""
    if (await receive())["type"] != "websocket.connect":
        return
    limits = registry.limits
    if registry.full:
        await refuse_upgrade(scope, send, Refusal(503, "Service Unavailable: too many connections",
                                                   [("retry-after", str(limits.retry_after))]))
        return
    conn = registry.create("ws", peer_of(scope), principal)
    try:
        await send({"type": "websocket.accept", "headers": [(b"acp-connection-id", conn.id.encode())]})
        await _serve(registry, conn, receive, send)
    finally:
        conn.close("the client closed the WebSocket")


async def _serve(registry: Registry, conn: RemoteConnection, receive: Receive, send: Send) -> None:
    closed = False

    async def close(code: int) -> None:
        nonlocal closed
        if closed:
            return
        closed = True
        reason = conn.end_reason.encode()[:120].decode("utf-8", "ignore") if code != 1000 else ""
        try:
            await asyncio.wait_for(send({"type": "websocket.close", "code": code, "reason": reason}), 1.0)
        except (OSError, RuntimeError, TimeoutError):
            pass  # the client is gone, or stopped reading

    async def frame(data: bytes) -> None:
        await send({"type": "websocket.send", "text": data.decode("utf-8", "replace")})

    async def send_all() -> None:
        await pump(conn.stream, frame)
        await close(conn.close_code)  # the connection ended: agent exit 1011, shutdown 1001

    tasks = TaskSet(f"acplink-ws-{conn.id}")
    out = tasks.spawn(send_all(), name=f"acplink-ws-{conn.id}")
    conn.stream.reader_task = out
    inbound = tasks.spawn(_receive_all(registry, conn, receive), name=f"acplink-ws-in-{conn.id}")
    try:
        first: set[asyncio.Future[Any]] = {out, inbound}
        await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
        code = inbound.result() if inbound.done() and not inbound.cancelled() else None
        if code is not None:  # a protocol error: drop what is queued and close with its code
            conn.close(conn.end_reason, code=code, drop=True)
    finally:
        await tasks.aclose()
        await asyncio.gather(inbound, out, return_exceptions=True)  # (a failure is read here, not logged)
        await close(conn.close_code if conn.closed else 1000)


async def _receive_all(registry: Registry, conn: RemoteConnection, receive: Receive) -> int | None:
    """Take the client's frames until it disconnects (None) or must be closed (a code)."""
    limits = registry.limits
    initialized = False
    while True:
        try:
            event = await asyncio.wait_for(receive(), None if initialized else limits.ws_initialize_timeout)
        except TimeoutError:
            conn.end_reason = f"no initialize in {limits.ws_initialize_timeout:g} s"
            return PROTOCOL_ERROR
        if event["type"] == "websocket.disconnect":
            return None
        text = event.get("text")
        if text is None:
            continue  # binary frames are ignored
        data = text.encode()
        if len(data) > limits.max_message_bytes:
            conn.end_reason = f"a frame over {limits.max_message_bytes} bytes"
            return TOO_BIG
        try:
            msg = orjson.loads(data)
        except orjson.JSONDecodeError:
            conn.stream.push(_error(-32700, "Parse error: invalid JSON"))
            continue
        if isinstance(msg, list):
            conn.stream.push(_error(-32600, "JSON-RPC batches are not supported"))
            continue
        kind = message_kind(msg)
        if kind == "invalid":
            conn.stream.push(_error(-32600, "Invalid Request: not a JSON-RPC message"))
            continue
        rid = msg.get("id")
        if isinstance(rid, str) and len(rid) > limits.max_id_length:
            conn.stream.push(_error(-32600, f"Invalid Request: id longer than {limits.max_id_length} characters"))
            continue
        if b"\n" in data or b"\r" in data:
            data = orjson.dumps(msg)
        if not initialized:
            if kind != "request" or msg.get("method") != "initialize":
                conn.end_reason = "the first message was not initialize"
                return PROTOCOL_ERROR
            initialized = True
            try:
                await conn.start_agent(registry.backend)
            except AcpError as exc:
                why = str(exc)  # (a spawn failure says it: "cannot start the agent ...")
                why = why if why.startswith("cannot start") else f"the agent could not be started: {why}"
                conn.stream.push(orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32603, "message": why}}))
                conn.close(why, code=1011)
                return None
        try:
            conn.send(data, method=msg.get("method") if kind == "request" else None, rid=rid)
            await conn.drain()
        except AcpError:
            return None  # the agent is gone: the sender closes with 1011
