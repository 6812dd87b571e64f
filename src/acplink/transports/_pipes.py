"""asyncio protocol glue shared by the pipe-based transports."""

from __future__ import annotations

import asyncio

from .base import FlowControl, TransportSink


class ReadProtocol(asyncio.Protocol):
    """Forwards a read pipe's bytes and EOF to a sink."""

    def __init__(self, sink: TransportSink) -> None:
        self.sink = sink
        self.transport: asyncio.ReadTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.sink.data_received(data)

    def eof_received(self) -> bool:
        self.sink.eof_received(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.sink.eof_received(exc)


class WriteProtocol(FlowControl, asyncio.BaseProtocol):
    """Flow control for a write pipe; notices when the reader went away."""

    def __init__(self, on_lost: asyncio.Future[None] | None = None) -> None:
        FlowControl.__init__(self)
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        pass

    def connection_lost(self, exc: Exception | None) -> None:
        self.flow_lost(exc)
        if not self.closed.done():
            self.closed.set_result(None)
