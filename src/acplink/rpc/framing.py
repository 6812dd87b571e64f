"""NDJSON framing at the byte level, with a message size limit that never buffers a whole
oversized message."""

from __future__ import annotations

from .._record import Record

__all__ = ["DEFAULT_MAX_MESSAGE_SIZE", "LineDecoder", "Oversized"]

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
_KEEP = 4096  # bytes kept from the head and tail of a discarded message, to find its id


class Oversized(Record):
    """A message that exceeded the limit and was discarded. ``head``/``tail`` are kept so
    the engine can still find its ``id`` and answer it."""

    __match_args__ = ("size", "head", "tail")
    __slots__ = ("head", "size", "tail")

    def __init__(self, size: int, head: bytes, tail: bytes) -> None:
        self.size = size
        self.head = head
        self.tail = tail


class LineDecoder:
    """Split a byte stream into newline-terminated messages.

    ``feed`` returns complete lines (without the newline; ``\\r`` stripped) and
    :class:`Oversized` markers. Memory use is bounded by ``max_size`` plus one chunk.
    """

    __slots__ = ("_buf", "_discard_size", "_discarding", "_head", "_tail", "max_size")

    def __init__(self, max_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.max_size = max_size
        self._buf = bytearray()
        self._discarding = False
        self._discard_size = 0
        self._head = b""
        self._tail = b""

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        buf = self._buf
        if (self._discarding or len(buf) + len(data) > self.max_size or b"\r" in data
                or buf.endswith(b"\r")):
            return self._feed_slow(data)
        # The common case: no line in this chunk can exceed the limit and none ends in \r,
        # so one C-level split does the work of the loop below.
        lines = data.split(b"\n")
        rest = lines.pop()
        if buf:
            if not lines:
                buf += rest
                return []
            buf += lines[0]
            lines[0] = bytes(buf)
            buf.clear()
        if rest:
            buf += rest
        return [line for line in lines if line and not line.isspace()]

    def _feed_slow(self, data: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            if self._discarding:
                end = n if nl < 0 else nl
                piece = data[start:end]
                self._discard_size += len(piece)
                if len(self._head) < _KEEP:  # the head may start short when the limit is small
                    self._head += piece[:_KEEP - len(self._head)]
                self._tail = (self._tail + piece)[-_KEEP:]
                if nl < 0:
                    return out
                out.append(Oversized(self._discard_size, self._head, self._tail))
                self._discarding = False
                self._head = self._tail = b""
                start = nl + 1
                continue
            if nl < 0:
                self._buf += data[start:] if start else data
                if len(self._buf) > self.max_size:
                    self._start_discard()
                return out
            if self._buf:
                self._buf += data[start:nl]
                line = bytes(self._buf)
                self._buf.clear()
            else:
                line = data[start:nl]
            start = nl + 1
            if len(line) > self.max_size:
                out.append(Oversized(len(line), line[:_KEEP], line[-_KEEP:]))
                continue
            if line.endswith(b"\r"):
                line = line[:-1]
            if line and not line.isspace():  # (no copy, unlike strip())
                out.append(line)
        return out

    def _start_discard(self) -> None:
        self._discarding = True
        self._discard_size = len(self._buf)
        self._head = bytes(self._buf[:_KEEP])
        self._tail = bytes(self._buf[-_KEEP:])
        self._buf = bytearray()

    def eof(self) -> list[bytes | Oversized]:
        """End of stream: a last unterminated line still counts."""
        out: list[bytes | Oversized] = []
        if self._discarding:
            out.append(Oversized(self._discard_size, self._head, self._tail))
        elif self._buf.strip():
            out.append(bytes(self._buf))
        self._buf = bytearray()
        self._discarding = False
        return out
