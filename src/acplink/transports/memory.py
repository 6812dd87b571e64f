"""An in-memory transport pair: two connections in one event loop, for tests and in-process use."""

from __future__ import annotations

import asyncio

from ..errors import ConnectionClosed
from .base import FlowControl, TransportSink
from .stream import StreamTransport

__all__ = ["MemoryTransport", "memory_pair"]


class MemoryTransport(StreamTransport):
    """One end of an in-memory pipe. Data written here arrives at the other end."""

    def __init__(self, name: str = "memory") -> None:
        super().__init__()
        self.name = name
        self.other: MemoryTransport | None = None
        self._sink: TransportSink | None = None
        self._backlog: list[bytes] = []
        self._closed = False
        self._paused = False
        self._eof_pending = False
        # write-side flow control: bytes written here that the other end's sink has not taken
        # yet (held back while it is paused); the marks are asyncio's defaults
        self._flow = FlowControl()
        self._unread = 0
        self._high = 64 * 1024
        self._low = 16 * 1024

    async def start(self, sink: TransportSink) -> None:
        self._sink = sink
        backlog, self._backlog = self._backlog, []
        for data in backlog:
            self._taken(len(data))
            sink.data_received(data)

    def _deliver(self, data: bytes) -> None:
        if self._closed:
            self._taken(len(data))
            return
        if self._sink is None or self._paused or self._backlog:
            self._backlog.append(data)
            return
        self._taken(len(data))
        self._sink.data_received(data)

    def _taken(self, n: int) -> None:
        """``n`` bytes written by the other end left this end's hands."""
        writer = self.other
        if writer is None:
            return
        writer._unread = max(0, writer._unread - n)
        if writer._flow.writing_paused and writer._unread <= writer._low:
            writer._flow.resume_writing()

    def write(self, data: bytes) -> None:
        if self._closed:
            raise ConnectionClosed("in-memory transport is closed")
        other = self.other
        if other is not None and not other._closed:
            self._unread += len(data)
            if self._unread > self._high and not self._flow.writing_paused:
                self._flow.pause_writing()
            asyncio.get_running_loop().call_soon(other._deliver, data)

    async def drain(self) -> None:
        if self._flow.writing_paused:
            await self._flow.wait_writable()
        else:
            await asyncio.sleep(0)

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self._high, self._low = high, low

    def write_buffer_size(self) -> int:
        return self._unread + self.batched_size()

    @property
    def writing_paused(self) -> bool:
        return self._flow.writing_paused

    def abort_writing(self) -> None:
        self.discard_batch()
        other = self.other
        if other is not None:
            other._backlog.clear()
        self._unread = 0
        self._flow.flow_lost(None)
        if not self._closed:
            self._closed = True
            if other is not None:
                asyncio.get_running_loop().call_soon(other._peer_closed)

    def pause_reading(self) -> None:
        self._paused = True

    def resume_reading(self) -> None:
        self._paused = False
        backlog, self._backlog = self._backlog, []
        for i, data in enumerate(backlog):
            if self._paused or self._sink is None:
                self._backlog = backlog[i:] + self._backlog
                return
            self._taken(len(data))
            self._sink.data_received(data)
        if self._eof_pending:
            self._eof_pending = False
            self._sink_eof()

    def _peer_closed(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._backlog:  # data still held back (paused): end of input comes after it
            self._eof_pending = True
        else:
            self._sink_eof()

    def _sink_eof(self) -> None:
        if self._sink is not None:
            self._sink.eof_received(None)

    async def aclose(self) -> None:
        if self._closed:
            return
        self.flush()
        self._closed = True
        other = self.other
        if other is not None:
            asyncio.get_running_loop().call_soon(other._peer_closed)

    @property
    def description(self) -> str:
        return f"in-memory ({self.name})"


def memory_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected in-memory transports (e.g. client end, agent end)."""
    a, b = MemoryTransport("a"), MemoryTransport("b")
    a.other, b.other = b, a
    return a, b
