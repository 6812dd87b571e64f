"""Stream cursors in the messages themselves (the durable-transport RFD draft's
``_meta["acp/cursor"]``): the server writes each message's cursor into it, the client reads it
back to resume from the last message it delivered. Also the names of the WebSocket resume
handshake (``stream/resume``), shared by the server and the client.

Where the cursor goes: ``params._meta`` of a request or notification, ``result._meta`` of a
response whose result is an object, else a top-level ``_meta`` (an error answer, a result
that is not an object). A cursor is opaque text (the server's ``<token>.<number>``)."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["CURSOR_KEY", "RESUME_FAILED", "RESUME_FAILED_CODE", "RESUME_METHOD", "RESUMED_METHOD", "TURN_STATE_KEY", "cursor_of",
           "with_cursor"]

CURSOR_KEY = "acp/cursor"
#: the v1 stand-in for ``state_update`` on a resume's acknowledgment (the RFD draft's shim)
TURN_STATE_KEY = "acp/turnState"
#: the first message of a WebSocket that resumes a connection's stream
RESUME_METHOD = "stream/resume"
#: a refused resume: the JSON-RPC error's message; its code (the RFD draft names none: ours,
#: in the implementation-defined server range); ``data.reason`` says why
RESUME_FAILED = "stream/resume_failed"
RESUME_FAILED_CODE = -32010
#: what a resumed SSE stream sends after the replay (no ``id``: not part of the stream), its
#: ``params._meta["acp/turnState"]`` where the turns stand (a WebSocket has it in the answer
#: to its ``stream/resume``)
RESUMED_METHOD = "stream/resumed"

_NOTIFICATION = b'{"jsonrpc":"2.0","method":"'
_PARAMS = b'","params":{'
_KEY = CURSOR_KEY.encode()
#: what follows a notification's method name once :func:`with_cursor` spliced the cursor in
_SPLICED = _PARAMS + b'"_meta":{"' + _KEY + b'":"'


def with_cursor(line: bytes, cursor: str) -> bytes:
    """``line`` (one JSON-RPC message) with ``cursor`` in its ``_meta``."""
    mark = b'"_meta":{"' + _KEY + b'":"' + cursor.encode() + b'"},'
    if line.startswith(_NOTIFICATION) and b'"_meta"' not in line:
        # (the common case, a notification as acplink writes it: spliced, not parsed; a raw
        # quote ends the method name, since one inside a JSON string is escaped)
        end = line.find(b'"', len(_NOTIFICATION))
        at = end + len(_PARAMS)
        if end > 0 and b"\\" not in line[len(_NOTIFICATION):end] and line[end:at] == _PARAMS \
                and line[at:at + 1] != b"}":
            return line[:at] + mark + line[at:]
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line
    if not isinstance(msg, dict):
        return line
    holder = _holder(msg)
    meta = holder.get("_meta")
    holder["_meta"] = {**(meta if isinstance(meta, dict) else {}), CURSOR_KEY: cursor}
    return orjson.dumps(msg)


def cursor_of(raw: bytes) -> str | None:
    """The cursor :func:`with_cursor` wrote into ``raw`` (None: none)."""
    if _KEY not in raw:
        return None
    if raw.startswith(_NOTIFICATION):  # (where with_cursor splices it: read without a parse)
        end = raw.find(b'"', len(_NOTIFICATION))
        if end > 0 and raw.startswith(_SPLICED, end) and b"\\" not in raw[len(_NOTIFICATION):end]:
            start = end + len(_SPLICED)
            stop = raw.find(b'"', start)
            if stop > 0 and raw[stop + 1:stop + 2] == b"}" and b"\\" not in raw[start:stop]:
                return raw[start:stop].decode()
    try:
        msg = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(msg, dict):
        return None
    meta = _holder(msg).get("_meta")
    found = meta.get(CURSOR_KEY) if isinstance(meta, dict) else None
    return found if isinstance(found, str) else None


def _holder(msg: dict[str, Any]) -> dict[str, Any]:
    """Where a message's ``_meta`` goes: its params, else its result (objects), else itself."""
    for member in ("params", "result"):
        inner = msg.get(member)
        if isinstance(inner, dict):
            return inner
    return msg
