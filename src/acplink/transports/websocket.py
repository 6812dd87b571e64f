"""The WebSocket client transport: one JSON-RPC message per text frame (``ws://``, ``wss://``).

Framing, the handshake and TLS are the ``websockets`` library's; it is imported when the
transport starts, so that programs that never open one do not pay for it.

With ``options.reconnect``, when the server advertises resumable streams
(``agentCapabilities.transport.resumable`` in the ``initialize`` answer), a socket that drops
(no close frame from the server) is replaced: a new socket whose first message is
``stream/resume`` with the connection's id and the cursor of the last message delivered
(``_meta["acp/cursor"]``); the server replays what was missed, once and in order, then answers
(with ``_meta["acp/turnState"]``: :attr:`WebSocketTransport.turn_state`) and goes on live.
What we send meanwhile is held and sent once resumed. A refusal (``stream/resume_failed``)
ends the connection with :class:`StreamResumeFailed`.
"""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING, Any

import orjson

from .._tasks import TaskSet
from ..errors import ConnectionClosed, StreamResumeFailed, TransportError
from ._cursor import RESUME_FAILED_CODE, RESUME_METHOD, TURN_STATE_KEY, cursor_of
from ._remote import (
    CLOSE_TIMEOUT,
    HEADER_CONNECTION_ID,
    RESUME_BACKOFF,
    AuthRejected,
    RemoteOptions,
    advertises_resume,
    http_refusal,
    refused,
    remote_description,
    require_libraries,
    too_large,
)
from .base import MessageMeta, Transport, TransportSink

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection
    from websockets.exceptions import ConnectionClosed as WsClosed

__all__ = ["WebSocketTransport"]

#: the limit on an incoming message when none is given (PeerLimits' default)
_DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024
#: the upgrade header that says we resume a dropped stream (``reconnect``)
RESUME_HEADER = "Acp-Stream-Resume"
#: no initialize request seen yet
_NONE: Any = object()


class WebSocketTransport(Transport):
    """A connection to a remote agent over one WebSocket.

    ``options`` (:class:`RemoteOptions`) gives the URL, the headers of the upgrade request
    and the cookie jar (the ``Set-Cookie`` of the 101 is stored in it and sent back by the
    next connection). ``max_message_size``: a bigger frame from the server closes the
    connection (code 1009) with a clear error. ``open_timeout``: how long the TCP, TLS and
    upgrade handshakes may take.
    """

    framed = True

    def __init__(self, options: RemoteOptions, *, max_message_size: int = _DEFAULT_MAX_MESSAGE,
                 open_timeout: float = 30.0) -> None:
        require_libraries(options.url)
        self.options = options
        self.max_message_size = max_message_size
        self.open_timeout = open_timeout
        #: the server's ``Acp-Connection-Id`` (from the 101), once connected
        self.connection_id: str | None = None
        self._ws: ClientConnection | None = None
        self._sink: TransportSink | None = None
        #: the reader task (closing the transport cancels and awaits it)
        self._tasks = TaskSet("acplink-ws-transport")
        self._reading = asyncio.Event()
        self._reading.set()
        self._closing = False
        self._paused = False
        self._limits: tuple[int, int] | None = None
        #: why the connection ended, when it failed
        self.failure: BaseException | None = None
        #: whether a dropped socket is replaced: ``options.reconnect`` and the server advertises it
        self.resumable = False
        #: the cursor of the last message delivered (with ``resumable``)
        self.cursor: str | None = None
        #: how many times the stream was resumed on a new socket
        self.resumes = 0
        #: the last resume's ``_meta["acp/turnState"]``: where the turns stood (``state``:
        #: running, requires_action or idle; ``promptRequestId``; ``sessions``)
        self.turn_state: dict[str, Any] | None = None
        self._init_id: Any = _NONE
        self._init_done = False
        self._ended = False
        #: what was sent while a dropped socket is being replaced
        self._held: list[bytes] | None = None

    @property
    def description(self) -> str:
        return remote_description(self.options.url)

    async def start(self, sink: TransportSink) -> None:
        ws = await self._connect()
        self._sink = sink
        self._attach(ws)
        self._tasks.spawn(self._run(ws, sink), name="acplink-ws-reader")

    def _attach(self, ws: ClientConnection) -> None:
        self._ws = ws
        if self._limits is not None:
            self.set_write_buffer_limits(*self._limits)

    async def _connect(self) -> ClientConnection:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI

        url = self.options.url
        try:
            # (a client that resumes says so: the server then keeps a dropped socket's connection)
            resume = [(RESUME_HEADER, "1")] if self.options.reconnect else []
            ws = await connect(url, additional_headers=[*self.options.request_headers(), *resume],
                               max_size=self.max_message_size, open_timeout=self.open_timeout,
                               close_timeout=CLOSE_TIMEOUT, compression=None,
                               user_agent_header="acplink")
        except InvalidStatus as exc:
            resp = exc.response
            self.options.cookies.store(resp.headers.get_all("Set-Cookie"))
            body = resp.body.decode("utf-8", "replace") if resp.body else ""
            msg = http_refusal(resp.status_code, resp.reason_phrase, body, "the WebSocket upgrade", self.description)
            raise refused(resp.status_code, msg) from None
        except (InvalidHandshake, InvalidURI) as exc:
            raise ConnectionClosed(f"the WebSocket upgrade to {self.description} failed: {exc}") from None
        except TimeoutError:
            raise ConnectionClosed(f"no WebSocket connection to {self.description} within "
                                   f"{self.open_timeout:g} s") from None
        except OSError as exc:
            raise ConnectionClosed(f"cannot connect to {self.description}: {exc.strerror or exc}") from None
        upgrade = ws.response
        if upgrade is not None:
            self.options.cookies.store(upgrade.headers.get_all("Set-Cookie"))
            if self.connection_id is None:  # (a resumed socket's 101 names a connection it does not make)
                self.connection_id = upgrade.headers.get(HEADER_CONNECTION_ID)
        return ws

    async def _run(self, ws: ClientConnection, sink: TransportSink) -> None:
        """Read the socket; with ``resumable``, replace it when it drops."""
        from websockets.exceptions import ConnectionClosed as WsClosed

        while True:
            try:
                await self._read(ws, sink)
            except WsClosed as exc:
                if self._closing:
                    return
                if exc.rcvd is None and self.resumable and self.cursor is not None and self.connection_id:
                    try:
                        ws = await self._resume(sink)
                    except TransportError as failure:
                        self._end(sink, failure)
                        return
                    continue
                self._end(sink, self._closed_error(exc))
            except Exception as exc:  # a failure of the library: the connection is over, clearly
                self._end(sink, TransportError(f"the WebSocket to {self.description} failed: {exc}"))
            return

    def _end(self, sink: TransportSink, failure: BaseException | None) -> None:
        self._ended = True
        self._held = None
        if not self._closing:
            self.failure = failure
            sink.eof_received(failure)

    async def _read(self, ws: ClientConnection, sink: TransportSink) -> None:
        reading = self._reading
        while True:
            if not reading.is_set():
                await reading.wait()
            msg = await ws.recv()
            if type(msg) is str:
                self._deliver(msg.encode(), sink)
            # (binary frames carry no JSON-RPC: ignored)

    def _deliver(self, raw: bytes, sink: TransportSink) -> None:
        if self._init_id is not _NONE:  # (the initialize answer says whether the stream resumes)
            try:
                msg = orjson.loads(raw)
            except orjson.JSONDecodeError:
                msg = None
            if isinstance(msg, dict) and "method" not in msg and msg.get("id") == self._init_id:
                self._init_id = _NONE
                self.resumable = self.options.reconnect and advertises_resume(msg)
        sink.message_received(raw, None)
        if self.resumable:
            cursor = cursor_of(raw)
            if cursor is not None:
                self.cursor = cursor

    async def _resume(self, sink: TransportSink) -> ClientConnection:
        """A new socket that resumes the stream from :attr:`cursor` (what it replays is
        delivered); a few tries, ``RESUME_BACKOFF`` apart."""
        from websockets.exceptions import ConnectionClosed as WsClosed

        if self._held is None:
            self._held = []
        self._ws = None
        why = "the connection to the server was lost"
        tries = 0
        while tries < len(RESUME_BACKOFF):
            await asyncio.sleep(RESUME_BACKOFF[tries] * (1 + random.random() / 4))
            tries += 1
            try:
                ws = await self._connect()
            except AuthRejected:
                raise
            except ConnectionClosed as exc:
                why = str(exc)
                continue
            rid = f"acplink-resume-{self.resumes + 1}-{tries}"
            before = self.cursor
            try:
                await ws.send(orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": RESUME_METHOD, "params": {
                    "connectionId": self.connection_id, "cursor": self.cursor}}).decode())
                while True:  # the replay, then the answer (a server silent for open_timeout: next try)
                    frame = await asyncio.wait_for(ws.recv(), self.open_timeout)
                    if type(frame) is not str:
                        continue
                    raw = frame.encode()
                    answer = _answer_to(raw, rid)
                    if answer is None:
                        if not self._reading.is_set():
                            await self._reading.wait()
                        self._deliver(raw, sink)
                        continue
                    break
            except (WsClosed, TimeoutError) as exc:
                if ws.transport is not None:
                    ws.transport.abort()
                why = "the new WebSocket was lost while it resumed" if isinstance(exc, WsClosed) else \
                    f"no answer to {RESUME_METHOD} in {self.open_timeout:g} s"
                if self.cursor != before:  # (it replayed something: the tries start again)
                    tries = 0
                continue
            except BaseException:  # (closed meanwhile: the new socket goes too)
                if ws.transport is not None:
                    ws.transport.abort()
                raise
            error = answer.get("error")
            if error is not None:
                await ws.close()
                reason = error.get("message") if isinstance(error, dict) else None
                if isinstance(error, dict) and error.get("code") != RESUME_FAILED_CODE:
                    reason = f"{reason} (the server does not resume WebSocket streams?)"
                raise StreamResumeFailed(
                    f"the server at {self.description} refused to resume the WebSocket's stream ({reason}); "
                    "what the stream missed is lost: reopen the session on a new connection "
                    "(session/resume or session/load)")
            result = answer.get("result")
            meta = result.get("_meta") if isinstance(result, dict) else None
            state = meta.get(TURN_STATE_KEY) if isinstance(meta, dict) else None
            self.turn_state = state if isinstance(state, dict) else None
            self.resumes += 1
            held, self._held = self._held, None
            self._attach(ws)
            for message in held or ():
                self.send(message)
            return ws
        raise ConnectionClosed(f"lost the WebSocket to {self.description} and could not resume it "
                               f"({len(RESUME_BACKOFF)} tries): {why}")

    def _closed_error(self, exc: WsClosed) -> BaseException | None:
        sent, rcvd = exc.sent, exc.rcvd
        if sent is not None and sent.code == 1009:
            return too_large("a message", self.max_message_size)
        if rcvd is not None:
            if rcvd.code in (1000, 1001) and not rcvd.reason:
                return None if rcvd.code == 1000 else ConnectionClosed("the server is shutting down (1001)")
            why = f" {rcvd.reason}" if rcvd.reason else ""
            return ConnectionClosed(f"the server closed the WebSocket ({rcvd.code}{why})")
        return ConnectionClosed("the connection to the server was lost")

    # -- writing -----------------------------------------------------------------------------------

    def send(self, message: bytes, meta: MessageMeta | None = None) -> bool:
        if not self._init_done:
            self._note_initialize(message)
        if self._held is not None and not self._closing:  # (a socket is being replaced)
            self._held.append(message)
            return True
        ws = self._ws
        if ws is None or self._closing:
            raise ConnectionClosed(f"the WebSocket to {self.description} is closed")
        from websockets.asyncio.connection import broadcast
        from websockets.protocol import State

        if ws.protocol.state is not State.OPEN:
            if self.resumable and self.cursor is not None and not self._ended:
                self._held = [message]  # (the reader replaces the socket, then sends it)
                return True
            raise ConnectionClosed(f"the WebSocket to {self.description} is closed")
        try:
            broadcast((ws,), message, text=True, raise_exceptions=True)  # (a synchronous send)
        except ExceptionGroup as exc:
            raise ConnectionClosed(f"the WebSocket to {self.description} was lost: {exc.exceptions[0]}") from None
        if ws.paused and not self._paused:
            self._paused = True
            if self._sink is not None:
                self._sink.write_paused()
        return not ws.paused

    def _note_initialize(self, message: bytes) -> None:
        try:
            msg = orjson.loads(message)
        except orjson.JSONDecodeError:
            return
        if isinstance(msg, dict) and msg.get("method") == "initialize":
            self._init_id = msg.get("id")
            self._init_done = True

    async def drain(self) -> None:
        ws = self._ws
        if ws is None or not ws.paused:
            self._paused = False
            return
        try:
            await ws.drain()
        except OSError as exc:
            raise ConnectionClosed(f"the WebSocket to {self.description} was lost: {exc}") from None
        self._paused = ws.paused

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self._limits = (high, low)
        ws = self._ws
        if ws is not None and ws.transport is not None:
            ws.transport.set_write_buffer_limits(high, low)

    def write_buffer_size(self) -> int:
        ws = self._ws
        return ws.transport.get_write_buffer_size() if ws is not None and ws.transport is not None else 0

    @property
    def writing_paused(self) -> bool:
        ws = self._ws
        return ws is not None and ws.paused

    def abort_writing(self) -> None:
        ws = self._ws
        if ws is not None and ws.transport is not None:
            ws.transport.abort()

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    # -- closing -----------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the WebSocket (code 1000; at most ``CLOSE_TIMEOUT`` seconds)."""
        self._closing = True
        self._reading.set()
        ws = self._ws
        if ws is not None:
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await ws.close()
            except (TimeoutError, OSError):
                if ws.transport is not None:
                    ws.transport.abort()
        await self._tasks.aclose()


def _answer_to(raw: bytes, rid: str) -> dict[str, Any] | None:
    """``raw`` decoded when it is the answer to our request ``rid`` (else None)."""
    if rid.encode() not in raw:
        return None
    try:
        msg = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if isinstance(msg, dict) and "method" not in msg and msg.get("id") == rid:
        return msg
    return None
