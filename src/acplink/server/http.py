"""The streamable HTTP wire: POST a message, GET a stream (SSE), DELETE the connection."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from .._tasks import TaskSet
from ..errors import AcpError
from ..protocol.messages import message_kind
from ..transports._cursor import RESUMED_METHOD, TURN_STATE_KEY
from .access import PRINCIPAL_KEY
from .asgi import Receive, Scope, Send, TooLarge, answer, header_map, peer_of, read_body
from .connection import Mailbox, Registry, RemoteConnection, credentials_of, pump
from .resume import ResumeRefused, advertise

__all__ = ["CONNECTION_HEADER", "SESSION_HEADER", "handle_http"]

CONNECTION_HEADER = "acp-connection-id"
SESSION_HEADER = "acp-session-id"
_JSON = "application/json"
#: how long a resume waits for the stream's previous reader to stop
_TAKEOVER = 5.0
_BATCH_ERROR = orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {
    "code": -32600, "message": "JSON-RPC batches are not supported"}})


async def handle_http(registry: Registry, scope: Scope, receive: Receive, send: Send,
                      headers: dict[str, str] | None = None) -> None:
    """Answer one request; ``headers``: the request's :func:`header_map`, when already made."""
    if headers is None:
        headers = header_map(scope)
    method = scope["method"]
    if method == "POST":
        await _post(registry, scope, headers, receive, send)
    elif method == "GET":
        await _get(registry, headers, receive, send)
    elif method == "DELETE":
        await _delete(registry, headers, send)
    else:
        await answer(send, 405, "Method Not Allowed", headers=[("allow", "GET, POST, DELETE")])


def _mime(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


async def _connection(registry: Registry, headers: dict[str, str], send: Send) -> RemoteConnection | None:
    """The connection the request names; None when it was answered with 400 or 404."""
    cid = headers.get(CONNECTION_HEADER)
    conn = registry.get(cid, "http") if cid else None
    if conn is not None and conn.principal != headers.get(PRINCIPAL_KEY):
        conn = None  # (another token's connection: as unknown)
    if conn is None:
        await answer(send, *((404, "Unknown Acp-Connection-Id") if cid else (400, "Missing Acp-Connection-Id")))
    return conn


async def _post(registry: Registry, scope: Scope, headers: dict[str, str], receive: Receive,
                send: Send) -> None:
    limits = registry.limits
    if _mime(headers.get("content-type")) != _JSON:
        await answer(send, 415, "Unsupported Media Type: use application/json")
        return
    length = headers.get("content-length", "")
    try:
        if length.isdigit() and int(length) > limits.max_message_bytes:
            raise TooLarge
        body = await read_body(receive, limits.max_message_bytes)
    except TooLarge:
        await answer(send, 413, f"Payload Too Large: over {limits.max_message_bytes} bytes")
        return
    if body is None:
        return
    try:
        msg = orjson.loads(body)
    except orjson.JSONDecodeError:
        await answer(send, 400, "Invalid JSON")
        return
    if isinstance(msg, list):
        await answer(send, 501, _BATCH_ERROR, content_type=_JSON)
        return
    if not isinstance(msg, dict):
        await answer(send, 400, "Invalid JSON-RPC message: not an object")
        return
    kind = message_kind(msg)
    rid = msg.get("id")
    bad = _too_long(rid, "Request id", limits.max_id_length) or _too_long(
        headers.get(SESSION_HEADER), "Acp-Session-Id", limits.max_id_length)
    if bad:
        await answer(send, 400, bad)
        return
    # one line for the agent: the body as it came, unless it spans lines
    line = body.strip()
    if b"\n" in line or b"\r" in line:
        line = orjson.dumps(msg)
    if kind == "request" and msg["method"] == "initialize":
        if CONNECTION_HEADER in headers:
            await answer(send, 400, "initialize is not allowed on an existing connection")
        else:
            await _initialize(registry, scope, rid, line, send, headers.get(PRINCIPAL_KEY),
                              credentials_of(headers))
        return
    conn = await _connection(registry, headers, send)
    if conn is None:
        return
    header_sid = headers.get(SESSION_HEADER)
    if kind == "response":
        known, sid = conn.route_of_answer(rid)
        if known and header_sid is not None and header_sid != sid:
            await answer(send, 400, "Acp-Session-Id does not match the request this answers")
            return
        route = None
    else:
        params = msg.get("params")
        psid = params.get("sessionId") if isinstance(params, dict) else None
        if isinstance(psid, str) and header_sid is not None and psid != header_sid:
            await answer(send, 400, "Acp-Session-Id does not match params.sessionId")
            return
        bad = _too_long(psid, "params.sessionId", limits.max_id_length)
        if bad:
            await answer(send, 400, bad)
            return
        route = header_sid if header_sid is not None else psid if isinstance(psid, str) else None
    try:
        conn.send(line, method=msg.get("method") if kind == "request" else None, rid=rid, route=route)
        await conn.drain()
    except AcpError:
        await answer(send, 404, "Unknown Acp-Connection-Id: the connection has ended")
        return
    await answer(send, 202)


def _too_long(value: Any, what: str, limit: int) -> str | None:
    if isinstance(value, str) and len(value) > limit:
        return f"{what} is longer than {limit} characters"
    return None


async def _initialize(registry: Registry, scope: Scope, rid: Any, line: bytes, send: Send,
                      principal: str | None, credentials: str) -> None:
    limits = registry.limits
    if rid is None:
        await answer(send, 400, "initialize must have an id")
        return
    if registry.full:
        await answer(send, 503, "Service Unavailable: too many connections",
                     headers=[("retry-after", str(limits.retry_after))])
        return
    conn = registry.create("http", peer_of(scope), principal=principal, credentials=credentials)
    try:
        await conn.start_agent(registry.backend)
        answered = conn.expect_answer(rid)
        conn.send(line)
        reply = await asyncio.wait_for(answered, limits.initialize_timeout)
    except TimeoutError:
        conn.close(f"the agent did not answer initialize in {limits.initialize_timeout:g} s")
        await answer(send, 504, "Gateway Timeout: the agent did not answer initialize")
        return
    except AcpError as exc:
        conn.close(f"initialize failed: {exc}")
        body = orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": {
            "code": -32603, "message": f"the agent could not be started or ended: {exc}"}})
        await answer(send, 502, body, content_type=_JSON)
        return
    except BaseException:
        conn.close("the initialize request was abandoned")
        raise
    conn.arm_idle()
    await answer(send, 200, advertise(reply, limits), content_type=_JSON, headers=[(CONNECTION_HEADER, conn.id)])


async def _get(registry: Registry, headers: dict[str, str], receive: Receive, send: Send) -> None:
    if headers.get("upgrade", "").lower() == "websocket":
        await answer(send, 426, "Upgrade Required: this server does not serve WebSocket here")
        return
    if "text/event-stream" not in headers.get("accept", "").lower():
        await answer(send, 406, "Not Acceptable: GET opens an event stream (Accept: text/event-stream)")
        return
    conn = await _connection(registry, headers, send)
    if conn is None:
        return
    sid = headers.get(SESSION_HEADER)
    bad = _too_long(sid, "Acp-Session-Id", registry.limits.max_id_length)
    if bad:
        await answer(send, 400, bad)
        return
    last = headers.get("last-event-id")
    if last is not None and credentials_of(headers) != conn.credentials:
        await answer(send, 409, "Conflict: cannot resume: the cursor is not one of this stream's")
        return
    box = conn.open_stream(sid)
    if box is None and last is not None:
        # a resume replaces a reader whose client is gone before the server noticed
        held = conn.stream if sid is None else conn.sessions.get(sid)
        if held is not None and held.retention is not None:
            try:
                held.retention.check(last)
            except ResumeRefused as exc:
                await answer(send, 409, f"Conflict: cannot resume: {exc}")
                return
            await held.take_over(_TAKEOVER)
            box = conn.open_stream(sid)
    if box is None:
        await answer(send, 409, "Conflict: this stream already has a reader")
        return
    try:
        replay: list[tuple[int, bytes]] = []
        if last is not None:
            if box.retention is None:  # (an HTTP stream always keeps what it sent)
                raise ResumeRefused("this stream keeps nothing")
            replay = box.retention.after(box.retention.check(last))
    except ResumeRefused as exc:
        conn.close_stream(box)
        await answer(send, 409, f"Conflict: cannot resume: {exc}")
        return
    try:
        await _stream(conn, box, receive, send, last, replay)
    finally:
        conn.close_stream(box)


async def _stream(conn: RemoteConnection, box: Mailbox, receive: Receive, send: Send,
                  resumed: str | None, replay: list[tuple[int, bytes]]) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
        (b"x-accel-buffering", b"no")]})

    retention = box.retention
    assert retention is not None

    async def sse(cursor: str, data: bytes) -> None:
        body = b"id: " + cursor.encode() + b"\ndata: " + data + b"\n\n"
        await send({"type": "http.response.body", "body": body, "more_body": True})

    async def event(data: bytes) -> None:
        await sse(box.head_cursor(), data)

    async def deliver() -> None:
        if resumed is None:  # a new reader learns the stream's position (an id-only event)
            await send({"type": "http.response.body", "more_body": True,
                        "body": b"id: " + retention.cursor(retention.sent).encode() + b"\n\n"})
        for number, data in replay:  # what the client missed, with the cursors it had
            await sse(retention.cursor(number), data)
        if resumed is not None:  # where the turns stand now (the v1 shim of state_update), no id
            await send({"type": "http.response.body", "more_body": True, "body": b"data: " + orjson.dumps(
                {"jsonrpc": "2.0", "method": RESUMED_METHOD, "params": {
                    "_meta": {TURN_STATE_KEY: conn.turn_state(box.session)}}}) + b"\n\n"})
            state = conn.states.get(box.session) if box.session is not None else None
            if state is not None:  # v2: the session's state, again (no id: not part of the stream)
                await send({"type": "http.response.body", "more_body": True, "body": b"data: " + state + b"\n\n"})
        await pump(box, event, keepalive=conn.limits.keepalive, on_quiet=keepalive)

    async def keepalive() -> None:
        await send({"type": "http.response.body", "body": b":\n\n", "more_body": True})

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    tasks = TaskSet(f"acplink-sse-{conn.id}")
    out = tasks.spawn(deliver(), name=f"acplink-sse-{conn.id}")
    box.reader_task = out
    watch = tasks.spawn(gone(), name=f"acplink-sse-watch-{conn.id}")
    try:
        await asyncio.wait({out, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await tasks.aclose()
        await asyncio.gather(out, watch, return_exceptions=True)  # (a failure is read here, not logged)
    if out.done() and not out.cancelled() and out.exception() is None:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _delete(registry: Registry, headers: dict[str, str], send: Send) -> None:
    conn = await _connection(registry, headers, send)
    if conn is None:
        return
    conn.close("the client ended it (DELETE)")
    await answer(send, 202)
