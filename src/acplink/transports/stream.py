"""The stream adapter: whole messages over a byte stream as NDJSON, with write batching.

Pipes carry bytes, not messages. :class:`StreamTransport` turns the message interface of
:class:`~acplink.transports.base.Transport` into NDJSON on such a stream: each message is one
line (the engine already ends it with ``\\n``), and the lines sent in one turn of the event
loop are batched into as few writes as the stream needs (:mod:`.batch`, shared with the
framed transports that batch). The stdio, subprocess and in-memory transports are built on
it; a new byte-stream transport (a TCP socket, a named pipe) only implements :meth:`StreamTransport.write` and the reading side.
"""

from __future__ import annotations

from .batch import FLUSH_AT, BatchingTransport, deliver

__all__ = ["FLUSH_AT", "StreamTransport", "deliver"]


class StreamTransport(BatchingTransport):
    """A transport over a byte stream (NDJSON); subclasses implement :meth:`write`.

    Batching (:class:`~acplink.transports.batch.BatchingTransport`): the first message of a
    turn of the event loop is written at once (a lone request or response waits for nothing);
    the ones after it in the same turn are joined and written at the next turn, or at once when
    the batch reaches ``flush_at`` bytes (:data:`FLUSH_AT`). A flood of notifications costs
    one system call per batch, and the order of the lines is the order of the sends. Reading:
    the stream's chunks go to the sink's ``data_received`` as they come (the engine's decoder
    splits them into lines).
    """

    framed = False

    def write(self, data: bytes) -> None:
        """Write raw bytes to the stream now (never blocks; see :meth:`drain`)."""
        raise NotImplementedError

    def _write_message(self, message: bytes) -> None:
        self.write(message)

    def _write_batch(self, batch: list[bytes]) -> None:
        self.write(batch[0] if len(batch) == 1 else b"".join(batch))
