"""The trace format: :class:`TraceWriter` turns the bytes of both directions into records,
:func:`read_trace` loads a trace file.

Trace format (one JSON object per line; ``docs/tools.md`` has the details)::

    {"type":"header","format":"acplink-trace","version":1,"wall":..., "mono":..., ...}
    {"type":"message","seq":1,"dir":"c2a","mono":...,"wall":...,"size":123,"kind":"request",
     "id":1,"method":"initialize","msg":{...},"violations":[{"path":"$...","message":"..."}]}
    {"type":"eof","dir":"a2c","mono":...,"wall":...}
    {"type":"exit","code":0,"mono":...,"wall":...}

``dir`` is ``c2a`` (client to agent) or ``a2c``. A line that is not JSON has ``raw`` instead
of ``msg``. Violations mark messages that do not match the ACP schema (:mod:`.validate`).
The writer is the tap of :class:`~acplink.transports.recording.RecordingTransport` (see
:func:`acplink.tools.record.recording_transport`) and of the ``acplink record`` proxy.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from ..protocol.messages import CallMatcher, message_kind
from ..protocol.state import default_protocol
from ..rpc.framing import LineDecoder, Oversized
from .redact import redact_message, redacted
from .validate import protocol_after, validate_message

__all__ = ["TRACE_FORMAT", "TRACE_VERSION", "TraceListener", "TraceRecord", "TraceWriter", "read_trace"]

TRACE_FORMAT = "acplink-trace"
TRACE_VERSION = 1

#: one line of a trace (a decoded JSON object)
TraceRecord = dict[str, Any]
TraceListener = Callable[[TraceRecord], None]

_MAX_TRACE_LINE = 256 * 1024 * 1024


class TraceWriter:
    """Turns the raw bytes of both directions into trace records.

    Feed it chunks with :meth:`feed` (it splits NDJSON lines itself) or whole messages with
    :meth:`message`. Records go to ``out`` (a path or a binary file, optional) and to every
    ``listener``. ``validate`` marks schema violations; ``redact`` see :func:`redact_message`.
    """

    def __init__(self, out: str | os.PathLike[str] | IO[bytes] | None = None, *, redact: bool = False,
                 validate: bool = True, listeners: Sequence[TraceListener] = (),
                 header: Mapping[str, Any] | None = None) -> None:
        self.redact = redact
        self.validate = validate
        #: the ACP version of the traffic (from the initialize response): picks the schema
        self.protocol = default_protocol()
        self.listeners = list(listeners)
        self._own_file = False
        self._file: IO[bytes] | None
        if out is None:
            self._file = None
        elif isinstance(out, (str, os.PathLike)):
            self._file = open(Path(out), "wb")
            self._own_file = True
        else:
            self._file = out
        self._decoders = {"c2a": LineDecoder(_MAX_TRACE_LINE), "a2c": LineDecoder(_MAX_TRACE_LINE)}
        #: the method of each request in flight, to name the responses
        self._calls: CallMatcher[str] = CallMatcher()
        self.seq = 0
        self.closed = False
        self._emit({"type": "header", "format": TRACE_FORMAT, "version": TRACE_VERSION,
                    "redacted": redact, **(header or {}), "mono": time.monotonic(), "wall": time.time()})

    def _emit(self, record: TraceRecord) -> None:
        if self._file is not None:
            self._file.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
        for listener in self.listeners:
            listener(record)

    def feed(self, direction: str, data: bytes, mono: float | None = None, wall: float | None = None) -> None:
        """Raw bytes that went ``direction`` ("c2a" or "a2c")."""
        if self.closed:
            return
        mono = time.monotonic() if mono is None else mono
        wall = time.time() if wall is None else wall
        for line in self._decoders[direction].feed(data):
            self._line(direction, line, mono, wall)

    def eof(self, direction: str, mono: float | None = None, wall: float | None = None) -> None:
        if self.closed:
            return
        mono = time.monotonic() if mono is None else mono
        wall = time.time() if wall is None else wall
        for line in self._decoders[direction].eof():
            self._line(direction, line, mono, wall)
        self._emit({"type": "eof", "dir": direction, "mono": mono, "wall": wall})

    def message(self, direction: str, data: bytes, mono: float | None = None, wall: float | None = None) -> None:
        """One whole message (message-framed transports)."""
        if not self.closed:
            self._line(direction, data, time.monotonic() if mono is None else mono,
                       time.time() if wall is None else wall)

    def event(self, kind: str, **fields: Any) -> None:
        """A non-message record (e.g. ``exit`` with the agent's exit code)."""
        if not self.closed:
            self._emit({"type": kind, **fields, "mono": time.monotonic(), "wall": time.time()})

    def _line(self, direction: str, line: bytes | Oversized, mono: float, wall: float) -> None:
        self.seq += 1
        rec: TraceRecord = {"type": "message", "seq": self.seq, "dir": direction, "mono": mono, "wall": wall}
        if isinstance(line, Oversized):
            rec["size"] = line.size
            rec["raw"] = redacted(line.size) if self.redact else line.head[:200].decode("utf-8", "replace")
            rec["violations"] = [{"path": "$", "message": f"message of {line.size} bytes not recorded"}]
            self._emit(rec)
            return
        rec["size"] = len(line)
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            rec["kind"] = "invalid"
            rec["raw"] = redacted(len(line)) if self.redact else line[:4096].decode("utf-8", "replace")
            rec["violations"] = [{"path": "$", "message": f"invalid JSON: {exc}"}]
            self._emit(rec)
            return
        answered: str | None = None
        kind = rec["kind"] = message_kind(msg)
        if kind == "request" or kind == "notification":
            rec["method"] = msg["method"]
            if kind == "request":
                rec["id"] = msg["id"]
                self._calls.sent(direction, msg["id"], msg["method"])
        elif kind == "response":
            rec["id"] = msg.get("id")
            answered = self._calls.answer(direction, msg.get("id"))
            if answered is not None:
                rec["method"] = answered
            if "error" in msg:
                rec["error"] = True
        self.protocol = protocol_after(msg, answered, self.protocol)  # (the version the peers agreed on)
        if self.validate:
            errs = validate_message(msg, answered, self.protocol)
            if errs:
                rec["violations"] = errs
        rec["msg"] = redact_message(msg, answered, self.protocol) if self.redact else msg
        self._emit(rec)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._file is not None:
            self._file.flush()
            if self._own_file:
                self._file.close()


def read_trace(path: str | os.PathLike[str]) -> list[TraceRecord]:
    """Load a trace file. A last line that is not JSON (cut off: what a killed recorder leaves)
    becomes a ``{"type": "cut", "line": N, "size": BYTES}`` record; any other line that is not
    JSON is an error (``ValueError``)."""
    records: list[TraceRecord] = []
    bad: tuple[int, bytes] | None = None  # a line that is not JSON: fine only if it is the last one
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            if bad is not None:
                raise ValueError(f"{os.fspath(path)}:{bad[0]}: not a JSON line")
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                bad = (n, line)
                continue
            if isinstance(rec, dict):
                records.append(rec)
    if bad is not None:
        records.append({"type": "cut", "line": bad[0], "size": len(bad[1].rstrip(b"\r\n"))})
    return records
