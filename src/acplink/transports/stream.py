"""The stream adapter: whole messages over a byte stream as NDJSON, with write batching.

Pipes carry bytes, not messages. :class:`StreamTransport` turns the message interface of
:class:`~acplink.transports.base.Transport` into NDJSON on such a stream: each message is one
line (the engine already ends it with ``\\n``), and the lines sent in one turn of the event
loop are batched into as few writes as the stream needs. The stdio, subprocess and in-memory
transports are built on it; a new byte-stream transport (a TCP socket, a named pipe) only
implements :meth:`StreamTransport.write` and the reading side.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from .base import MessageMeta, Transport, TransportSink

__all__ = ["FLUSH_AT", "StreamTransport", "deliver"]

#: a write batch goes to the stream at once when it reaches this size. Small enough that the
#: peer starts on a burst while the rest is still being produced (both processes busy at
#: once), big enough that a flood costs one system call per ~100 messages.
FLUSH_AT = 16 * 1024


class _Reading(threading.local):
    """The chunk being handed to a sink on this thread's loop (see :func:`deliver`)."""

    depth = 0

    def __init__(self) -> None:
        #: the stream transports that batched messages while it was handled
        self.pending: list[StreamTransport] = []


_reading = _Reading()


def deliver(sink: TransportSink, data: bytes) -> None:
    """Hand a chunk read from a stream to ``sink``; what the sink sends on stream transports
    while it handles the chunk (a proxy passing a request on, answers made at once) is batched
    and written as soon as it is done with the chunk: one write per transport, in the same turn
    of the loop (no turn to wait for, no callback to schedule)."""
    reading = _reading
    reading.depth += 1
    try:
        sink.data_received(data)
    finally:
        reading.depth -= 1
        if not reading.depth and reading.pending:
            pending = reading.pending
            reading.pending = []
            for transport in pending:
                transport._in_chunk = False
                transport._flush_batch()


class StreamTransport(Transport):
    """A transport over a byte stream (NDJSON); subclasses implement :meth:`write`.

    Batching: the first message of a turn of the event loop is written at once (a lone
    request or response waits for nothing); the ones after it in the same turn are joined and
    written at the next turn, or at once when the batch reaches :data:`FLUSH_AT` bytes. A
    flood of notifications costs one system call per batch, and the order of the lines is
    the order of the sends. Reading: the stream's chunks go to the sink's ``data_received``
    as they come (the engine's decoder splits them into lines).
    """

    framed = False
    _sink: TransportSink | None = None
    #: called right before bytes go to the stream (a session store makes what it journaled
    #: durable first: what the peer receives is stored)
    before_write: Callable[[], None] | None = None
    #: the batch size (bytes) that is written at once rather than at the next turn; a session
    #: store whose commit is costly raises it, so that one commit covers more (group commit)
    flush_at: int = FLUSH_AT

    def __init__(self) -> None:
        self._batch: list[bytes] = []
        self._batch_size = 0
        self._flush_scheduled = False
        #: messages were batched while a chunk was handled (see :func:`deliver`)
        self._in_chunk = False

    def write(self, data: bytes) -> None:
        """Write raw bytes to the stream now (never blocks; see :meth:`drain`)."""
        raise NotImplementedError

    def send(self, message: bytes, meta: MessageMeta | None = None) -> bool:
        if _reading.depth:  # (sent while a chunk read is handled: written when it is done)
            self._batch.append(message)
            self._batch_size += len(message)
            if not self._in_chunk:
                self._in_chunk = True
                _reading.pending.append(self)
            if self._batch_size >= self.flush_at:
                self._flush_batch()
                return False
            return True
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)
            self._write_now(message, raising=True)
            return False
        self._batch.append(message)
        self._batch_size += len(message)
        if self._batch_size >= self.flush_at:
            self.flush()
            self._flush_scheduled = True  # (still scheduled: the rest of this turn batches)
            return False
        return True

    def flush(self) -> None:
        self._flush_scheduled = False
        self._flush_batch()

    def _flush_batch(self) -> None:
        """Write what is batched (nothing to write: nothing happens)."""
        batch = self._batch
        if not batch:
            return
        data = batch[0] if len(batch) == 1 else b"".join(batch)
        batch.clear()
        self._batch_size = 0
        self._write_now(data, raising=False)

    def _write_now(self, data: bytes, *, raising: bool) -> None:
        try:
            if self.before_write is not None:
                self.before_write()
            self.write(data)
        except Exception as exc:
            if raising:  # (the caller of send() learns it at once)
                raise
            self._batch.clear()
            self._batch_size = 0
            sink = self._sink
            if sink is not None:
                sink.send_failed(exc)
            return
        if self.writing_paused:
            sink = self._sink
            if sink is not None:
                sink.write_paused()

    def discard_batch(self) -> None:
        """Drop the messages batched but not yet written (the way out is gone)."""
        self._batch.clear()
        self._batch_size = 0

    def batched_size(self) -> int:
        """Bytes sent but still waiting in this turn's batch."""
        return self._batch_size
