"""The recording tee: a transport wrapper that hands a copy of every message, both ways, to a tap.

    transport = recording_transport(SubprocessTransport(["my-agent"]), "session.jsonl")

Bytes pass through untouched. This module only tees: the trace format (the writer that turns
the copies into records, and the reader), the schema checks and the redaction live in
``acplink.tools`` (:mod:`acplink.tools.trace`); ``acplink.tools.record.recording_transport``
builds this wrapper with a trace writer as its tap.
"""

from __future__ import annotations

from typing import Any, Protocol

from .base import MessageMeta, Transport, TransportSink

__all__ = ["RecordingTransport", "TraceTap"]


class TraceTap(Protocol):
    """What the tee feeds: ``c2a``/``a2c`` bytes (``feed`` for NDJSON chunks, ``message`` for
    one whole message of a framed transport), the end of a direction, other events (the agent's
    exit code) and the close."""

    def feed(self, direction: str, data: bytes) -> None: ...

    def message(self, direction: str, data: bytes) -> None: ...

    def eof(self, direction: str) -> None: ...

    def event(self, kind: str, **fields: Any) -> None: ...

    def close(self) -> None: ...


class RecordingTransport(Transport):
    """Wraps any transport; every message either way is also handed to ``writer`` (a
    :class:`TraceTap`); the bytes pass untouched.

    ``side`` is which side *this process* is ("client": what we write goes client→agent).
    """

    def __init__(self, inner: Transport, writer: TraceTap, *, side: str = "client") -> None:
        self.inner = inner
        self.framed = inner.framed
        self._out_dir = "c2a" if side == "client" else "a2c"
        self._in_dir = "a2c" if side == "client" else "c2a"
        self.writer = writer
        self._sink: TransportSink | None = None

    async def start(self, sink: TransportSink) -> None:
        self._sink = sink
        await self.inner.start(self)

    # sink of the inner transport
    def data_received(self, data: bytes) -> None:
        if self.framed:
            self.writer.message(self._in_dir, data)
        else:
            self.writer.feed(self._in_dir, data)
        if self._sink is not None:
            self._sink.data_received(data)

    def message_received(self, message: bytes, meta: MessageMeta | None) -> None:
        self.writer.message(self._in_dir, message)
        if self._sink is not None:
            self._sink.message_received(message, meta)

    def eof_received(self, exc: BaseException | None) -> None:
        self.writer.eof(self._in_dir)
        if self._sink is not None:
            self._sink.eof_received(exc)

    def write_paused(self) -> None:
        if self._sink is not None:
            self._sink.write_paused()

    def send_failed(self, exc: BaseException) -> None:
        if self._sink is not None:
            self._sink.send_failed(exc)

    def send(self, message: bytes, meta: MessageMeta | None = None) -> bool:
        batched = self.inner.send(message, meta)
        self._record_out(message)
        return batched

    def flush(self) -> None:
        self.inner.flush()

    def write(self, data: bytes) -> None:
        self.inner.write(data)
        self._record_out(data)

    def _record_out(self, data: bytes) -> None:
        if self.framed:
            self.writer.message(self._out_dir, data.rstrip(b"\n"))
        else:
            self.writer.feed(self._out_dir, data)

    async def drain(self) -> None:
        await self.inner.drain()

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self.inner.set_write_buffer_limits(high, low)

    def write_buffer_size(self) -> int:
        return self.inner.write_buffer_size()

    @property
    def writing_paused(self) -> bool:
        return self.inner.writing_paused

    def abort_writing(self) -> None:
        self.inner.abort_writing()

    def pause_reading(self) -> None:
        self.inner.pause_reading()

    def resume_reading(self) -> None:
        self.inner.resume_reading()

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            code = getattr(self.inner, "returncode", None)
            if code is not None:
                self.writer.event("exit", code=code)
            self.writer.close()

    @property
    def description(self) -> str:
        return f"recording {self.inner.description}"
