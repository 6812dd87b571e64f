"""The in-process backend: one acplink agent app per remote connection, from a factory, over
a framed transport (whole messages both ways, no subprocess, no NDJSON)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from ..agent.app import AgentBase
from ..connection.agent_side import AgentSideConnection
from ..errors import ConnectionClosed
from ..transports.base import MessageMeta, TransportSink
from ..transports.batch import BatchingTransport
from .backends import AgentBackend, AgentChannel, Deliver, Ended

__all__ = ["InProcessAgent"]


class _RemoteTransport(BatchingTransport):
    """The app's side of one remote connection: what the app sends goes to the connection's
    router, what the client sends is handed to the app whole.

    Each message is handed over at once, unless the app journals what it sends (a
    ``SqliteStore`` / ``PostgresStore``: its connection sets ``before_write``): then the
    messages of one turn of the event loop are batched (:class:`BatchingTransport`: the first
    at once, the rest at the next turn or every ``flush_at`` bytes), and each batch is
    committed once before its messages go on: group commit, as over a pipe."""

    framed = True

    def __init__(self, deliver: Deliver, ended: Ended) -> None:
        super().__init__()
        self.deliver = deliver
        self.ended = ended
        self.closed = False
        self.inbound: deque[bytes] = deque()
        self.reading = True
        self.room = asyncio.Event()
        self.room.set()

    async def start(self, sink: TransportSink) -> None:
        self._sink = sink

    def send(self, message: bytes, meta: MessageMeta | None = None) -> bool:
        if self.closed:
            raise ConnectionClosed("the remote connection is closed")
        if self.before_write is not None:  # (journaled: committed per batch, then handed over)
            return super().send(message, meta)
        self.deliver(message.rstrip(b"\n"))
        # handed over whole: the writer waits (drain) only while the client is behind, and
        # otherwise awaits no coroutine per message (a flood's updates)
        return self.room.is_set()

    def _write_message(self, message: bytes) -> None:
        self.deliver(message.rstrip(b"\n"))

    def _write_batch(self, batch: list[bytes]) -> None:
        if self.closed:  # (the turn's batch, after the connection closed)
            raise ConnectionClosed("the remote connection is closed")
        deliver = self.deliver
        for message in batch:
            deliver(message.rstrip(b"\n"))

    def write_buffer_size(self) -> int:
        return self.batched_size()

    async def drain(self) -> None:
        await self.room.wait()  # cleared while the remote client is behind on its output

    @property
    def writing_paused(self) -> bool:
        return not self.room.is_set()

    def to_app(self, message: bytes) -> None:
        if self.closed or self._sink is None:
            raise ConnectionClosed("the agent app is closed")
        if self.reading and not self.inbound:
            self._sink.message_received(message, None)
        else:
            self.inbound.append(message)

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True
        while self.reading and self.inbound and self._sink is not None:
            self._sink.message_received(self.inbound.popleft(), None)

    def end_input(self) -> None:
        """The remote client is gone: the app sees the end of its input."""
        if self._sink is not None and not self.closed:
            self._sink.eof_received(None)

    async def aclose(self) -> None:
        if not self.closed:
            self.flush()  # (what the app sent before it closed goes out, committed first)
            self.closed = True
            self.room.set()
            self.ended("the agent app closed the connection")

    @property
    def description(self) -> str:
        return "remote connection"


class _AppChannel(AgentChannel):
    def __init__(self, transport: _RemoteTransport, conn: AgentSideConnection, stop_timeout: float) -> None:
        self.transport = transport
        self.conn = conn
        self.stop_timeout = stop_timeout

    def send(self, message: bytes) -> None:
        self.transport.to_app(message)

    async def drain(self) -> None:
        await asyncio.sleep(0)

    def pause(self) -> None:
        self.transport.room.clear()

    def resume(self) -> None:
        self.transport.room.set()

    async def aclose(self) -> str:
        self.transport.end_input()
        self.transport.room.set()
        try:
            await asyncio.wait_for(self.conn.aclose(), self.stop_timeout)
        except TimeoutError:
            return "agent app did not stop in time"
        return "agent app stopped"


class InProcessAgent(AgentBackend):
    """Serve an acplink agent app made by ``factory`` (one app per remote connection, e.g.
    ``lambda: create_demo_agent()``), in this process. ``stop_timeout`` bounds its close."""

    well_formed_output = True  # (the app writes through acplink's engine)

    def __init__(self, factory: Callable[[], AgentBase], *, stop_timeout: float = 4.0) -> None:
        self.factory = factory
        self.stop_timeout = stop_timeout

    async def open(self, connection_id: str, deliver: Deliver, ended: Ended) -> AgentChannel:
        return await self.open_as(connection_id, deliver, ended, None)

    async def open_as(self, connection_id: str, deliver: Deliver, ended: Ended,
                      principal: str | None) -> AgentChannel:
        transport = _RemoteTransport(deliver, ended)
        conn = self.factory().connection(transport) if principal is None else \
            self.factory().connection(transport, principal=principal)
        await conn.start()
        return _AppChannel(transport, conn, self.stop_timeout)

    @property
    def description(self) -> str:
        name = getattr(self.factory, "__qualname__", None) or type(self.factory).__name__
        return f"in-process app from {name}"
