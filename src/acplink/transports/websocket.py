"""The WebSocket client transport: one JSON-RPC message per text frame (``ws://``, ``wss://``).

Framing, the handshake and TLS are the ``websockets`` library's; it is imported when the
transport starts, so that programs that never open one do not pay for it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .._tasks import TaskSet
from ..errors import ConnectionClosed, TransportError
from ._remote import (
    CLOSE_TIMEOUT,
    HEADER_CONNECTION_ID,
    RemoteOptions,
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

    @property
    def description(self) -> str:
        return remote_description(self.options.url)

    async def start(self, sink: TransportSink) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI

        url = self.options.url
        try:
            ws = await connect(url, additional_headers=self.options.request_headers(),
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
            self.connection_id = upgrade.headers.get(HEADER_CONNECTION_ID)
        self._ws = ws
        self._sink = sink
        if self._limits is not None:
            self.set_write_buffer_limits(*self._limits)
        self._tasks.spawn(self._read(ws, sink), name="acplink-ws-reader")

    async def _read(self, ws: ClientConnection, sink: TransportSink) -> None:
        from websockets.exceptions import ConnectionClosed as WsClosed

        reading = self._reading
        try:
            while True:
                if not reading.is_set():
                    await reading.wait()
                msg = await ws.recv()
                if type(msg) is str:
                    sink.message_received(msg.encode(), None)
                # (binary frames carry no JSON-RPC: ignored)
        except WsClosed as exc:
            if not self._closing:
                self.failure = self._closed_error(exc)
                sink.eof_received(self.failure)
        except Exception as exc:  # a failure of the library: the connection is over, clearly
            if not self._closing:
                self.failure = TransportError(f"the WebSocket to {self.description} failed: {exc}")
                sink.eof_received(self.failure)

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
        ws = self._ws
        if ws is None or self._closing:
            raise ConnectionClosed(f"the WebSocket to {self.description} is closed")
        from websockets.asyncio.connection import broadcast
        from websockets.protocol import State

        if ws.protocol.state is not State.OPEN:
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
