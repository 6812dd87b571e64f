"""The recorder: a transport wrapper that tees every message, both ways, into a JSON-lines trace.

    transport = RecordingTransport(SubprocessTransport(["my-agent"]), "session.jsonl")

Bytes pass through untouched; the trace gets one record per NDJSON line. ``acplink record``
(the stdio proxy) writes the same format with the same :class:`TraceWriter`.

Trace format (one JSON object per line; ``docs/tools.md`` has the details)::

    {"type":"header","format":"acplink-trace","version":1,"wall":..., "mono":..., ...}
    {"type":"message","seq":1,"dir":"c2a","mono":...,"wall":...,"size":123,"kind":"request",
     "id":1,"method":"initialize","msg":{...},"violations":[{"path":"$...","message":"..."}]}
    {"type":"eof","dir":"a2c","mono":...,"wall":...}
    {"type":"exit","code":0,"mono":...,"wall":...}

``dir`` is ``c2a`` (client to agent) or ``a2c``. A line that is not JSON has ``raw`` instead
of ``msg``. Violations mark messages that do not match the ACP schema (``strict_only``: only
the schema's leniency rules let it pass); they never change what is forwarded.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import orjson

from ..errors import SchemaValidationError
from ..rpc.framing import LineDecoder, Oversized
from ..schema.parse import parse
from ..schema.registry import method_info
from .base import MessageMeta, Transport, TransportSink

__all__ = [
    "TRACE_FORMAT",
    "TRACE_VERSION",
    "RecordingTransport",
    "TraceWriter",
    "read_trace",
    "redact_message",
    "validate_message",
]

TRACE_FORMAT = "acplink-trace"
TRACE_VERSION = 1

Record = dict[str, Any]
Listener = Callable[[Record], None]

_MAX_TRACE_LINE = 256 * 1024 * 1024


# -- validation --------------------------------------------------------------------------------

def _envelope_errors(msg: Any) -> list[dict[str, Any]]:
    if not isinstance(msg, dict):
        kind = "array (batch)" if isinstance(msg, list) else type(msg).__name__
        return [{"path": "$", "message": f"a message must be a JSON object, not {kind}"}]
    errs: list[dict[str, Any]] = []
    if msg.get("jsonrpc") != "2.0":
        errs.append({"path": "$.jsonrpc", "message": 'must be "2.0"'})
    if "method" in msg:
        if not isinstance(msg["method"], str):
            errs.append({"path": "$.method", "message": "must be a string"})
        if "id" in msg and (msg["id"] is None or type(msg["id"]) not in (int, str)):
            errs.append({"path": "$.id", "message": "a request id must be a string or an integer"})
    elif "id" in msg:
        if ("result" in msg) == ("error" in msg):
            errs.append({"path": "$", "message": "a response has exactly one of result and error"})
        err = msg.get("error")
        if "error" in msg and not (isinstance(err, dict) and type(err.get("code")) is int
                                   and isinstance(err.get("message"), str)):
            errs.append({"path": "$.error", "message": "an error needs an integer code and a string message"})
    else:
        errs.append({"path": "$", "message": "neither a request, a notification nor a response"})
    return errs


def _schema_errors(tp: Any, data: Any, prefix: str, name: str) -> list[dict[str, Any]]:
    try:
        parse(tp, data, strict=True, name=name)
        return []
    except SchemaValidationError as strict_exc:
        strict_errors = strict_exc.errors
    try:
        parse(tp, data, strict=False, name=name)
        lenient_ok = True
    except SchemaValidationError as exc:
        strict_errors = exc.errors
        lenient_ok = False
    out = []
    for e in strict_errors[:10]:
        path = str(e.get("path", "$"))
        item: dict[str, Any] = {"path": prefix + path[1:], "message": f"{name}: {e.get('message')}"}
        if lenient_ok:
            item["strict_only"] = True
        out.append(item)
    return out


def validate_message(msg: Any, method: str | None = None) -> list[dict[str, Any]]:
    """Schema problems of one decoded message (``[]`` when it is valid).

    ``method`` is the method of the request a response answers (needed to check a result).
    Extension (``_``) methods and unknown methods' payloads are not checked.
    """
    errs = _envelope_errors(msg)
    if errs or not isinstance(msg, dict):
        return errs
    m = msg.get("method")
    if isinstance(m, str):
        kind = "request" if "id" in msg else "notification"
        info = method_info(m, kind)
        if info is None:
            if not m.startswith(("_", "$/")) and method_info(m, "notification" if kind == "request" else "request"):
                errs.append({"path": "$.id", "message": f"{m} is a {'notification' if kind == 'request' else 'request'}"})
            elif not m.startswith(("_", "$/")):
                errs.append({"path": "$.method", "message": f"unknown method {m!r} (not in the ACP schema)"})
            return errs
        params = msg.get("params", {})
        return _schema_errors(info.params_type, params if params is not None else {}, "$.params", info.params_name)
    if "result" in msg and method is not None:
        info = method_info(method, "request")
        if info is not None and info.result_type is not None:
            result = msg["result"]
            return _schema_errors(info.result_type, result if result is not None else {}, "$.result",
                                  info.result_name or "result")
    return errs


# -- redaction ---------------------------------------------------------------------------------

#: with redaction, the string values kept (wherever they are, outside the free-form parts below);
#: every other string becomes "[redacted: N bytes]". Numbers, booleans, nulls and keys are kept.
REDACT_KEEP = frozenset({
    # the envelope and identifiers
    "jsonrpc", "method", "id", "sessionId", "toolCallId", "terminalId", "messageId", "optionId", "methodId",
    "modeId", "currentModeId", "modelId", "currentModelId", "configId", "currentValue", "requestId",
    "elicitationId", "cursor", "nextCursor",
    # kinds, states and reasons
    "type", "kind", "status", "sessionUpdate", "stopReason", "outcome", "priority", "action", "category",
    "role", "audience", "signal", "protocolVersion", "mimeType",
    # names, places and labels (they may name files and commands)
    "name", "title", "version", "description", "hint", "path", "uri", "cwd", "additionalDirectories",
    "command", "updatedAt", "message",
})

#: free-form parts whose strings are all redacted, whatever their keys: tool input and output,
#: extension metadata, error data (and an elicitation's answers: ``content`` of its result)
REDACT_ALL = frozenset({"rawInput", "rawOutput", "_meta", "data"})

def _redacted(size: int) -> str:
    return f"[redacted: {size} bytes]"


def _size_of(value: str) -> str:
    return _redacted(len(value.encode("utf-8", "replace")))


def _redact(node: Any, keep: bool, everything: bool = False) -> Any:
    """``node`` with its strings redacted; ``keep``: the key above is kept; ``everything``: inside a
    free-form part, where no key is kept."""
    if isinstance(node, str):
        return node if keep and not everything else _size_of(node)
    if isinstance(node, list):
        return [_redact(x, keep, everything) for x in node]
    if isinstance(node, dict):
        return {k: _redact(v, k in REDACT_KEEP, everything or k in REDACT_ALL) for k, v in node.items()}
    return node


def redact_message(msg: Any, method: str | None = None) -> Any:
    """A copy of ``msg`` with every free-text value replaced by its size: message and prompt
    text, file contents (``fs/*``, diffs, resources, tool call content), terminal output, tool
    input and output, environment values, ``_meta``. Kept: the structure, numbers and booleans,
    and the strings of the :data:`REDACT_KEEP` keys (ids, methods, kinds, statuses, names,
    titles, paths). ``method``: the method a response answers."""
    out = _redact(msg, False)
    result = out.get("result") if isinstance(out, dict) else None
    if isinstance(result, dict) and (msg.get("method") or method) == "elicitation/create" and "content" in result:
        result["content"] = _redact(msg["result"]["content"], False, True)  # the user's answers, whatever their keys
    return out


# -- the writer --------------------------------------------------------------------------------

class TraceWriter:
    """Turns the raw bytes of both directions into trace records.

    Feed it chunks with :meth:`feed` (it splits NDJSON lines itself) or whole messages with
    :meth:`message`. Records go to ``out`` (a path or a binary file, optional) and to every
    ``listener``. ``validate`` marks schema violations; ``redact`` see :func:`redact_message`.
    """

    def __init__(self, out: str | os.PathLike[str] | IO[bytes] | None = None, *, redact: bool = False,
                 validate: bool = True, listeners: Sequence[Listener] = (),
                 header: Mapping[str, Any] | None = None) -> None:
        self.redact = redact
        self.validate = validate
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
        #: (direction a request travelled, id) -> method, to match responses
        self._pending: dict[tuple[str, Any], str] = {}
        self.seq = 0
        self.closed = False
        self._emit({"type": "header", "format": TRACE_FORMAT, "version": TRACE_VERSION,
                    "redacted": redact, **(header or {}), "mono": time.monotonic(), "wall": time.time()})

    def _emit(self, record: Record) -> None:
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
        rec: Record = {"type": "message", "seq": self.seq, "dir": direction, "mono": mono, "wall": wall}
        if isinstance(line, Oversized):
            rec["size"] = line.size
            rec["raw"] = _redacted(line.size) if self.redact else line.head[:200].decode("utf-8", "replace")
            rec["violations"] = [{"path": "$", "message": f"message of {line.size} bytes not recorded"}]
            self._emit(rec)
            return
        rec["size"] = len(line)
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            rec["kind"] = "invalid"
            rec["raw"] = _redacted(len(line)) if self.redact else line[:4096].decode("utf-8", "replace")
            rec["violations"] = [{"path": "$", "message": f"invalid JSON: {exc}"}]
            self._emit(rec)
            return
        answered: str | None = None
        if isinstance(msg, dict):
            method = msg.get("method")
            rid = msg.get("id")
            if isinstance(method, str):
                rec["method"] = method
                if "id" in msg:
                    rec["kind"] = "request"
                    rec["id"] = rid
                    if type(rid) in (int, str):
                        self._pending[(direction, rid)] = method
                else:
                    rec["kind"] = "notification"
            elif "id" in msg:
                rec["kind"] = "response"
                rec["id"] = rid
                other = "a2c" if direction == "c2a" else "c2a"
                answered = self._pending.pop((other, rid), None) if type(rid) in (int, str) else None
                if answered is not None:
                    rec["method"] = answered
                if "error" in msg:
                    rec["error"] = True
            else:
                rec["kind"] = "invalid"
        else:
            rec["kind"] = "invalid"
        if self.validate:
            errs = validate_message(msg, answered)
            if errs:
                rec["violations"] = errs
        rec["msg"] = redact_message(msg, answered) if self.redact else msg
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


def read_trace(path: str | os.PathLike[str]) -> list[Record]:
    """Load a trace file. A last line that is not JSON (cut off: what a killed recorder leaves)
    becomes a ``{"type": "cut", "line": N, "size": BYTES}`` record; any other line that is not
    JSON is an error (``ValueError``)."""
    records: list[Record] = []
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


# -- the transport wrapper ---------------------------------------------------------------------

class RecordingTransport(Transport):
    """Wraps any transport; every message either way goes to a trace (bytes pass untouched).

    ``side`` is which side *this process* is ("client": what we write goes client→agent).
    ``out`` is a path or binary file (or None, with ``listeners`` only).
    """

    def __init__(self, inner: Transport, out: str | os.PathLike[str] | IO[bytes] | None = None, *,
                 redact: bool = False, side: str = "client", validate: bool = True,
                 listeners: Sequence[Listener] = (), header: Mapping[str, Any] | None = None) -> None:
        self.inner = inner
        self.framed = inner.framed
        self._out_dir = "c2a" if side == "client" else "a2c"
        self._in_dir = "a2c" if side == "client" else "c2a"
        self.writer = TraceWriter(out, redact=redact, validate=validate, listeners=listeners,
                                  header={"transport": inner.description, "side": side, **(header or {})})
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
