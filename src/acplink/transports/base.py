"""The transport interface: a small thing that moves whole messages to and from one peer."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Protocol

from ..errors import ConnectionClosed

__all__ = ["FlowControl", "MessageMeta", "Transport", "TransportSink"]


@dataclass(frozen=True, slots=True)
class MessageMeta:
    """What a transport may need to know about one message besides its bytes (to route it).

    ``reply_to``: the id of the request this response answers (a streamable-HTTP transport
    sends the response on that request's stream). ``related_to``: the id of the inbound
    request this message was sent on behalf of (a request or notification made while
    handling it). ``session_id``: the ACP session the message belongs to. Each is ``None``
    when not known; stream transports ignore them all.
    """

    reply_to: int | str | None = None
    related_to: int | str | None = None
    session_id: str | None = None


class TransportSink(Protocol):
    """What a transport delivers to (the connection's driver)."""

    def data_received(self, data: bytes) -> None:
        """Stream transports: a chunk of NDJSON, cut anywhere."""

    def message_received(self, message: bytes, meta: MessageMeta | None) -> None:
        """Framed transports: one whole message (and what the transport knows about it)."""

    def eof_received(self, exc: BaseException | None) -> None:
        """The peer's end of input (``exc``: why, if it broke)."""

    def write_paused(self) -> None:
        """The write buffer went over its high-water mark (see ``writing_paused``)."""

    def send_failed(self, exc: BaseException) -> None:
        """A message :meth:`Transport.send` accepted could not be written: the way out is gone."""


class Transport(ABC):
    """Moves whole messages between this process and one peer.

    Writing: :meth:`send` takes exactly one JSON-RPC message per call. A ``framed``
    transport (WebSocket, HTTP bodies) sends each as its own frame; a stream transport
    (pipes) writes it as an NDJSON line, batched (see
    :class:`~acplink.transports.stream.StreamTransport`, which does this for any byte stream).
    Reading: a framed transport hands each message whole to the sink's ``message_received``;
    a stream transport hands it arbitrary chunks of NDJSON through ``data_received``.
    """

    framed: bool = False

    @abstractmethod
    async def start(self, sink: TransportSink) -> None:
        """Begin delivering incoming data to ``sink``."""

    def send(self, message: bytes, meta: MessageMeta | None = None) -> bool:
        """Queue one whole message for the peer (never blocks; see :meth:`drain`).

        ``message`` is one JSON-RPC message encoded as UTF-8 JSON and ending with ``\\n``
        (NDJSON's terminator: a framed transport may drop it). Returns True when the message
        only joined a batch that goes out within this turn of the event loop (the caller need
        not wait on :meth:`drain` for it). Raises (an ``OSError``, ``ConnectionClosed``) when
        the way out is gone. The default writes it with :meth:`write` at once, for transports
        written against the older byte interface.
        """
        self.write(message)
        return False

    def write(self, data: bytes) -> None:
        """Byte transports: queue raw bytes for the peer (never blocks)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither send() nor write()")

    def flush(self) -> None:  # noqa: B027  (optional: transports that batch)
        """Write out at once whatever :meth:`send` holds in a batch."""

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
        #: whether the write buffer is over its high-water mark (a plain attribute, not a
        #: property: the connection reads it as each inbound request starts); read it only
        self.writing_paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._lost: BaseException | None = None
        self._is_lost = False

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
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
        if not self.writing_paused:
            return
        if self._is_lost:
            raise self._lost_error()
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        # shielded: one waiter given up on (a timeout) must not cancel the others' wait
        await asyncio.shield(self._waiter)
