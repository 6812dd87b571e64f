"""The transport interface: a small thing that moves bytes (or whole messages) to a peer."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from typing import Protocol

from ..errors import ConnectionClosed

__all__ = ["FlowControl", "Transport", "TransportSink"]


class TransportSink(Protocol):
    """What a transport delivers to (the connection's driver)."""

    def data_received(self, data: bytes) -> None: ...

    def eof_received(self, exc: BaseException | None) -> None: ...


class Transport(ABC):
    """Moves bytes between this process and one peer.

    ``framed`` transports (WebSocket, HTTP bodies) deliver each message whole to
    ``data_received``; stream transports (pipes) deliver arbitrary chunks of NDJSON.
    """

    framed: bool = False

    @abstractmethod
    async def start(self, sink: TransportSink) -> None:
        """Begin delivering incoming data to ``sink``."""

    @abstractmethod
    def write(self, data: bytes) -> None:
        """Queue bytes for the peer (never blocks; see :meth:`drain`)."""

    @abstractmethod
    async def drain(self) -> None:
        """Wait until the write buffer is below its high-water mark."""

    @abstractmethod
    async def aclose(self) -> None:
        """Close the transport and release everything it owns (bounded in time)."""

    def pause_reading(self) -> None:  # noqa: B027  (optional: transports without backpressure)
        """Stop delivering data until :meth:`resume_reading` (backpressure)."""

    def resume_reading(self) -> None:  # noqa: B027
        """Resume delivering data."""

    # Write-side flow control. The defaults suit a transport that never holds bytes back
    # (a regular file, a test double): nothing buffered, never paused.

    def set_write_buffer_limits(self, high: int, low: int) -> None:  # noqa: B027
        """Above ``high`` buffered bytes, :meth:`drain` waits until the buffer is at ``low``."""

    def write_buffer_size(self) -> int:
        """Bytes written but not yet taken by the peer (what this process holds for it)."""
        return 0

    @property
    def writing_paused(self) -> bool:
        """The buffer went above its high-water mark and is not yet back down to the low one."""
        return False

    def abort_writing(self) -> None:  # noqa: B027
        """Drop every byte not yet sent and close the way out (the peer stopped reading)."""

    @property
    def description(self) -> str:
        return type(self).__name__


class FlowControl:
    """Write-side flow control for asyncio protocols (pause_writing / resume_writing)."""

    def __init__(self) -> None:
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._lost: BaseException | None = None
        self._is_lost = False

    @property
    def writing_paused(self) -> bool:
        return self._paused

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake()

    def _wake(self, exc: BaseException | None = None) -> None:
        w, self._waiter = self._waiter, None
        if w is not None and not w.done():
            if exc is not None:
                w.set_exception(exc)
            else:
                w.set_result(None)

    def flow_lost(self, exc: BaseException | None) -> None:
        self._is_lost = True
        self._lost = exc
        self._wake(self._lost_error())

    def _lost_error(self) -> ConnectionClosed:
        why = f": {self._lost}" if self._lost is not None else ""
        return ConnectionClosed(f"the peer stopped reading (its input pipe closed{why})")

    async def wait_writable(self) -> None:
        """Wait until the buffer is below the high-water mark. Raises ConnectionClosed if the
        reader went away while data was still waiting to be written (it can never arrive)."""
        if not self._paused:
            return
        if self._is_lost:
            raise self._lost_error()
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        # shielded: one waiter given up on (a timeout) must not cancel the others' wait
        await asyncio.shield(self._waiter)
