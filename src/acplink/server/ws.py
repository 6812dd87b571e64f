"""The WebSocket wire: one JSON-RPC message per text frame, both ways.

The first message of a socket is ``initialize`` (a new connection, its id in the 101's
``Acp-Connection-Id``) or ``stream/resume`` (the durable-transport RFD draft): a socket that
takes over the stream of a connection whose socket dropped, from a cursor. Every message the
server sends on the stream carries its cursor in ``_meta["acp/cursor"]`` (:mod:`.resume`
keeps what was sent). A socket whose upgrade said that its client resumes
(``Acp-Stream-Resume: 1``) and that drops without a close frame leaves its connection (and
agent) running for ``idle_timeout``, waiting for a resume; any other socket's end ends its
connection (a client that never resumes, as the TS SDK's, leaves no agent behind).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

import orjson

from .._tasks import TaskSet
from ..errors import AcpError
from ..protocol.messages import message_kind
from ..transports._cursor import (
    CURSOR_KEY,
    RESUME_FAILED,
    RESUME_FAILED_CODE,
    RESUME_METHOD,
    TURN_STATE_KEY,
    with_cursor,
)
from .access import Refusal
from .asgi import Receive, Scope, Send, answer, header_map, peer_of
from .connection import Mailbox, Registry, RemoteConnection, credentials_of, id_key, pump
from .resume import ResumeRefused, advertise

__all__ = ["handle_websocket", "refuse_upgrade"]

log = logging.getLogger("acplink.server")

#: close codes
PROTOCOL_ERROR = 1002
POLICY = 1008
TOO_BIG = 1009
#: the upgrade header of a client that resumes dropped streams (see the module's doc)
RESUME_HEADER = "acp-stream-resume"
#: what a client's close frame says when it ends the connection (anything else: the socket dropped)
_CLEAN = (1000, 1001)
#: how long a resume waits for the socket it replaces to let go of the stream
_TAKEOVER = 5.0
_REFUSED = "no stream of this server has this cursor (made up, another connection's or principal's, " \
           "or of a connection that ended)"


def _error(code: int, message: str, rid: Any = None, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return orjson.dumps({"jsonrpc": "2.0", "id": rid, "error": error})


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
    cid = str(uuid.uuid4())  # (the connection an initialize makes; a resume names its own)
    registry.opening += 1
    try:
        await send({"type": "websocket.accept", "headers": [(b"acp-connection-id", cid.encode())]})
        sock = _Socket(registry, scope, receive, send, principal)
        opened = await sock.opening(cid)
    finally:
        registry.opening -= 1
    if opened is None:
        return
    conn, box, resumed = opened
    await sock.serve(conn, box, resumed)


class _Resumed:
    """A resume's answer: what the socket sends before live traffic."""

    __slots__ = ("replay", "rid")

    def __init__(self, rid: Any, replay: list[tuple[int, bytes]]) -> None:
        self.rid = rid
        self.replay = replay


class _Socket:
    """One accepted WebSocket."""

    def __init__(self, registry: Registry, scope: Scope, receive: Receive, send: Send,
                 principal: str | None) -> None:
        self.registry = registry
        #: whom its token identifies (None: the server needs no token)
        self.principal = principal
        self.scope = scope
        self.receive = receive
        self.send = send
        self.closed = False
        #: the code of the client's close frame (1006: the socket dropped without one)
        self.client_code: int | None = None
        headers = header_map(scope)
        self.credentials = credentials_of(headers)
        #: the client said it resumes a dropped stream: a drop leaves the connection waiting
        self.resumes = headers.get(RESUME_HEADER, "").strip() == "1"

    async def close(self, code: int, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        reason = reason.encode()[:120].decode("utf-8", "ignore") if code != 1000 else ""
        try:
            await asyncio.wait_for(self.send({"type": "websocket.close", "code": code, "reason": reason}), 1.0)
        except (OSError, RuntimeError, TimeoutError):
            pass  # the client is gone, or stopped reading

    async def frame(self, data: bytes) -> None:
        await self.send({"type": "websocket.send", "text": data.decode("utf-8", "replace")})

    async def _next(self, timeout: float | None, conn: RemoteConnection | None = None) -> tuple[
            Any, bytes] | int | None:
        """The next message (decoded, raw); a close code; None when the client is gone.
        Frames that are not a JSON-RPC message are answered with an error here (on the
        stream of ``conn``, once there is one)."""
        limits = self.registry.limits

        async def reply(data: bytes) -> None:
            if conn is None:
                await self.frame(data)
            else:
                conn.stream.push(data)

        while True:
            event = await asyncio.wait_for(self.receive(), timeout)
            if event["type"] == "websocket.disconnect":
                self.client_code = event.get("code", 1000)
                return None
            text = event.get("text")
            if text is None:
                continue  # binary frames are ignored
            data = text.encode()
            if len(data) > limits.max_message_bytes:
                return TOO_BIG
            try:
                msg = orjson.loads(data)
            except orjson.JSONDecodeError:
                await reply(_error(-32700, "Parse error: invalid JSON"))
                continue
            if isinstance(msg, list):
                await reply(_error(-32600, "JSON-RPC batches are not supported"))
                continue
            if message_kind(msg) == "invalid":
                await reply(_error(-32600, "Invalid Request: not a JSON-RPC message"))
                continue
            rid = msg.get("id")
            if isinstance(rid, str) and len(rid) > limits.max_id_length:
                await reply(_error(-32600, f"Invalid Request: id longer than {limits.max_id_length} characters"))
                continue
            if b"\n" in data or b"\r" in data:
                data = orjson.dumps(msg)
            return msg, data

    # -- the first message: initialize or stream/resume ---------------------------------------

    async def opening(self, cid: str) -> tuple[RemoteConnection, Mailbox, _Resumed | None] | None:
        """Take messages until one opens a stream: a new connection, or a resumed one."""
        limits = self.registry.limits
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limits.ws_initialize_timeout
        while True:
            try:
                got = await self._next(max(deadline - loop.time(), 0.0))
            except TimeoutError:
                await self.close(PROTOCOL_ERROR, f"no initialize in {limits.ws_initialize_timeout:g} s")
                return None
            if got is None:
                return None
            if isinstance(got, int):
                await self.close(got, f"a frame over {limits.max_message_bytes} bytes")
                return None
            msg, data = got
            method = msg.get("method")
            if method == RESUME_METHOD and "id" in msg:
                resumed = await self._resume(msg)
                if resumed is not None:
                    return resumed
                continue  # (refused: the socket may still initialize a new connection)
            if method != "initialize" or "id" not in msg:
                await self.close(PROTOCOL_ERROR, "the first message was not initialize")
                return None
            return await self._initialize(cid, msg, data)

    async def _initialize(self, cid: str, msg: dict[str, Any], data: bytes) -> tuple[
            RemoteConnection, Mailbox, None] | None:
        registry = self.registry
        conn = registry.create("ws", peer_of(self.scope), cid=cid, principal=self.principal,
                               credentials=self.credentials, resumable=self.resumes)
        box = conn.open_stream(None)
        assert box is not None
        try:
            await conn.start_agent(registry.backend)
        except AcpError as exc:
            why = str(exc)  # (a spawn failure says it: "cannot start the agent ...")
            why = why if why.startswith("cannot start") else f"the agent could not be started: {why}"
            await self.frame(_error(-32603, why, msg.get("id")))
            conn.close(why, code=1011)
            conn.close_stream(box)
            await self.close(1011, why)
            return None
        except BaseException:
            conn.close("the WebSocket ended while its agent started")
            raise
        limits = registry.limits
        if id_key(msg.get("id")) is None:  # (an id nothing can be matched to: passed on as it is)
            try:
                conn.send(data, method="initialize", rid=msg.get("id"))
            except AcpError:
                pass
            return conn, box, None
        try:
            answered = conn.expect_answer(msg.get("id"))
            conn.send(data)
            await conn.drain()
            reply = await asyncio.wait_for(answered, limits.initialize_timeout)
        except TimeoutError:
            conn.close(f"the agent did not answer initialize in {limits.initialize_timeout:g} s", code=1011)
        except AcpError:
            pass  # the agent is gone: the sender closes with 1011
        except BaseException:
            conn.close("the WebSocket ended while its agent started")
            raise
        else:  # (the answer advertises the resumable stream, as over HTTP, to a client that resumes)
            conn.stream.push(advertise(reply, limits) if conn.resumable else reply)
        return conn, box, None

    async def _resume(self, msg: dict[str, Any]) -> tuple[RemoteConnection, Mailbox, _Resumed] | None:
        """Attach to the connection the resume names, from its cursor; None when refused (the
        client was told why)."""
        rid = msg.get("id")
        params = msg.get("params")
        cid = params.get("connectionId") if isinstance(params, dict) else None
        cursor = params.get("cursor") if isinstance(params, dict) else None
        if not isinstance(cid, str):
            cid = header_map(self.scope).get("acp-connection-id")
        conn = self.registry.get(cid, "ws") if isinstance(cid, str) else None
        try:
            old = conn.stream if conn is not None else None
            if conn is None or conn.closed or conn.credentials != self.credentials or not isinstance(cursor, str) \
                    or old is None or old.retention is None:
                raise ResumeRefused(_REFUSED)
            number = old.retention.check(cursor)
            if old.has_reader:  # a socket the server has not seen drop yet: this one replaces it
                conn.generation += 1
                await old.take_over(_TAKEOVER)
            box = conn.open_stream(None) if not conn.closed else None
            if box is None:
                raise ResumeRefused("the stream is still being read by another socket")
            try:
                replay = old.retention.after(number)
            except ResumeRefused:
                conn.close_stream(box)
                raise
        except ResumeRefused as exc:
            await self.frame(_error(RESUME_FAILED_CODE, f"{RESUME_FAILED}: {exc}", rid, {"reason": str(exc)}))
            return None
        log.info("connection %s resumed on a new WebSocket (%d messages replayed)", conn.id, len(replay))
        return conn, box, _Resumed(rid, replay)

    # -- the stream ----------------------------------------------------------------------------

    async def serve(self, conn: RemoteConnection, box: Mailbox, resumed: _Resumed | None) -> None:
        conn.generation += 1
        generation = conn.generation
        retention = box.retention

        async def frame(data: bytes) -> bytes:
            if retention is not None:  # (each message's cursor: only for a client that resumes)
                data = with_cursor(data, box.head_cursor())
            await self.frame(data)
            return data

        async def send_all() -> None:
            if resumed is not None and retention is not None:
                for _, data in resumed.replay:  # what the client missed, as it was sent
                    await self.frame(data)
                # the resume's answer: where the turns stand now (the v1 shim of state_update)
                await self.frame(orjson.dumps({"jsonrpc": "2.0", "id": resumed.rid, "result": {
                    "connectionId": conn.id, "replayed": len(resumed.replay),
                    "_meta": {TURN_STATE_KEY: conn.turn_state(None),
                              CURSOR_KEY: retention.cursor(retention.sent)}}}))
                for line in list(conn.states.values()):  # v2: each session's state, again
                    await self.frame(line)
            await pump(box, frame)
            await self.close(conn.close_code, conn.end_reason)  # the connection ended: agent exit 1011, shutdown 1001

        tasks = TaskSet(f"acplink-ws-{conn.id}")
        out = tasks.spawn(send_all(), name=f"acplink-ws-{conn.id}")
        box.reader_task = out
        inbound = tasks.spawn(self._receive_all(conn), name=f"acplink-ws-in-{conn.id}")
        try:
            first: set[asyncio.Future[Any]] = {out, inbound}
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
            code = inbound.result() if inbound.done() and not inbound.cancelled() else None
            if code is not None and conn.generation == generation:
                # a protocol error: drop what is queued and close with its code
                conn.close(conn.end_reason, code=code, drop=True)
        finally:
            await tasks.aclose()
            await asyncio.gather(inbound, out, return_exceptions=True)  # (a failure is read here, not logged)
            conn.close_stream(box)
            mine = conn.generation == generation
            # (a send that failed: the socket is gone, whether or not its drop was seen yet)
            lost = out.done() and not out.cancelled() and out.exception() is not None
            if mine and not conn.closed:
                if not self.resumes or self.client_code in _CLEAN or (self.client_code is None and not lost):
                    conn.close("the client closed the WebSocket")
                else:  # dropped: the connection waits for a resume (idle_timeout)
                    log.info("connection %s: its WebSocket dropped; kept for a resume", conn.id)
                    conn.arm_idle()
            if not mine:
                await self.close(POLICY, "replaced by a resumed WebSocket")
            await self.close(conn.close_code if conn.closed else 1000, conn.end_reason)

    async def _receive_all(self, conn: RemoteConnection) -> int | None:
        """Take the client's frames until it disconnects (None) or must be closed (a code)."""
        limits = self.registry.limits
        while True:
            got = await self._next(None, conn)
            if got is None:
                return None
            if isinstance(got, int):
                conn.end_reason = f"a frame over {limits.max_message_bytes} bytes"
                return got
            msg, data = got
            kind = message_kind(msg)
            rid = msg.get("id")
            method = msg.get("method") if kind == "request" else None
            if method == RESUME_METHOD:
                conn.stream.push(_error(-32600, f"{RESUME_METHOD} is only the first message of a WebSocket", rid))
                continue
            params = msg.get("params")
            sid = params.get("sessionId") if isinstance(params, dict) else None
            try:
                conn.send(data, method=method, rid=rid, route=sid if isinstance(sid, str) else None)
                await conn.drain()
            except AcpError:
                return None  # the agent is gone: the sender closes with 1011
