"""asyncio protocol glue shared by the pipe-based transports."""

from __future__ import annotations

import asyncio

from .base import FlowControl, TransportSink


class ReadProtocol(asyncio.Protocol):
    """Forwards a read pipe's bytes and EOF to a sink."""

    def __init__(self, sink: TransportSink) -> None:
        self.sink = sink
        self._ended = False

    def data_received(self, data: bytes) -> None:
        self.sink.data_received(data)

    def _end(self, exc: BaseException | None) -> None:
        if not self._ended:  # asyncio reports both eof_received and connection_lost
            self._ended = True
            self.sink.eof_received(exc)

    def eof_received(self) -> bool:
        self._end(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc)


class WriteProtocol(FlowControl, asyncio.BaseProtocol):
    """Flow control for a write pipe; notices when the reader went away."""

    def __init__(self) -> None:
        FlowControl.__init__(self)
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        pass

    def connection_lost(self, exc: Exception | None) -> None:
        self.flow_lost(exc)
        if not self.closed.done():
            self.closed.set_result(None)
