"""Write batching, shared by the stream transports and the framed ones that want it.

The messages sent in one turn of the event loop go out together: the first at once (a lone
request or response waits for nothing), the ones after it in the same turn as one batch at the
next turn, or at once when the batch reaches :attr:`BatchingTransport.flush_at` bytes. Right
before anything goes out, the transport calls its ``before_write`` hook (a session store makes
what it journaled durable there: what the peer receives is stored first, one commit per batch).
:class:`~acplink.transports.stream.StreamTransport` writes a batch as one write of joined
NDJSON lines; a framed transport (the in-process server's) hands the batch's messages on one
by one. What a sink sends while it handles a chunk read from a stream (:func:`deliver`) is
written as soon as it is done with the chunk.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from .base import MessageMeta, Transport, TransportSink

__all__ = ["FLUSH_AT", "BatchingTransport", "deliver"]

#: a write batch goes out at once when it reaches this size. Small enough that the peer starts
#: on a burst while the rest is still being produced (both processes busy at once), big enough
#: that a flood costs one system call per ~100 messages.
FLUSH_AT = 16 * 1024


class _Reading(threading.local):
    """The chunk being handed to a sink on this thread's loop (see :func:`deliver`)."""

    depth = 0

    def __init__(self) -> None:
        #: the transports that batched messages while it was handled
        self.pending: list[BatchingTransport] = []


_reading = _Reading()


def deliver(sink: TransportSink, data: bytes) -> None:
    """Hand a chunk read from a stream to ``sink``; what the sink sends on batching transports
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


class BatchingTransport(Transport):
    """A transport that sends the messages of one turn of the event loop as one batch (see
    the module); subclasses implement :meth:`_write_message` and :meth:`_write_batch`."""

    _sink: TransportSink | None = None
    #: called right before messages go out (a session store makes what it journaled durable
    #: first: what the peer receives is stored)
    before_write: Callable[[], None] | None = None
    #: the batch size (bytes) that goes out at once rather than at the next turn; a session
    #: store whose commit is costly raises it, so that one commit covers more (group commit)
    flush_at: int = FLUSH_AT

    def __init__(self) -> None:
        self._batch: list[bytes] = []
        self._batch_size = 0
        self._flush_scheduled = False
        #: messages were batched while a chunk was handled (see :func:`deliver`)
        self._in_chunk = False

    def _write_message(self, message: bytes) -> None:
        """Send one message now (never blocks)."""
        raise NotImplementedError

    def _write_batch(self, batch: list[bytes]) -> None:
        """Send several messages now, in their order (never blocks)."""
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
        """Send what is batched (nothing to send: nothing happens)."""
        if self._batch:
            self._write_now(None, raising=False)

    def _write_now(self, message: bytes | None, *, raising: bool) -> None:
        """Send ``message`` (None: the batch), after ``before_write``."""
        try:
            if self.before_write is not None:
                self.before_write()
            if message is not None:
                self._write_message(message)
            else:
                batch, self._batch = self._batch, []
                self._batch_size = 0
                self._write_batch(batch)
        except Exception as exc:
            if raising:  # (the caller of send() learns it at once)
                raise
            self.discard_batch()
            sink = self._sink
            if sink is not None:
                sink.send_failed(exc)
            return
        if self.writing_paused:
            sink = self._sink
            if sink is not None:
                sink.write_paused()

    def discard_batch(self) -> None:
        """Drop the messages batched but not yet sent (the way out is gone)."""
        self._batch.clear()
        self._batch_size = 0

    def batched_size(self) -> int:
        """Bytes sent but still waiting in this turn's batch."""
        return self._batch_size
