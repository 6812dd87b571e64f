"""W3C trace context in ACP's ``params._meta`` (the "_meta propagation" RFD): no OpenTelemetry here.

ACP carries ``traceparent``, ``tracestate`` and ``baggage`` as root keys of a message's
``params._meta``, with the values HTTP would put in those headers (as MCP does). This module
reads them from a message with the limits of the W3C specifications applied (what a peer sends
is never trusted: a value that is not a string, or a ``traceparent`` too long to be one, is
ignored, so a new trace starts; a ``tracestate`` or ``baggage`` beyond the limits is truncated
the way the specifications say: whole entries dropped, never cut), and writes them into the
params of an outgoing message (JSON bytes), keeping every other ``_meta`` key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = [
    "BAGGAGE_MAX_BYTES",
    "BAGGAGE_MAX_MEMBERS",
    "TRACEPARENT_MAX",
    "TRACESTATE_MAX",
    "TRACE_KEYS",
    "carrier_of",
    "limit_baggage",
    "limit_tracestate",
    "with_carrier",
]

#: the root keys of ``params._meta`` that carry the trace context
TRACE_KEYS = ("traceparent", "tracestate", "baggage")

#: a version-00 ``traceparent`` is 55 characters; later versions may append fields, but one
#: longer than this is not a trace context (it is ignored)
TRACEPARENT_MAX = 256
#: W3C Trace Context: a ``tracestate`` is at most 32 list members, and a platform that must cut
#: it keeps at least 512 characters (entries over 128 characters go first, then from the end)
TRACESTATE_MAX = 512
TRACESTATE_MAX_MEMBERS = 32
_TRACESTATE_LONG_ENTRY = 128
#: W3C Baggage: at least 64 list members and 8,192 bytes are propagated; beyond that whole
#: members are dropped (never a partial one)
BAGGAGE_MAX_MEMBERS = 64
BAGGAGE_MAX_BYTES = 8192

_META = "_meta"


def limit_tracestate(value: str) -> str | None:
    """``value`` within the W3C limits (entries longer than 128 characters dropped first, then
    entries from the end), or None when nothing is left."""
    if len(value) <= TRACESTATE_MAX and value.count(",") < TRACESTATE_MAX_MEMBERS:
        return value or None
    members = [m.strip() for m in value.split(",") if m.strip()]
    if len(",".join(members)) > TRACESTATE_MAX:
        members = [m for m in members if len(m) <= _TRACESTATE_LONG_ENTRY]
    members = members[:TRACESTATE_MAX_MEMBERS]
    while members and len(",".join(members)) > TRACESTATE_MAX:
        members.pop()
    return ",".join(members) or None


def limit_baggage(value: str) -> str | None:
    """``value`` cut to the W3C Baggage limits: the first list members that fit in 64 members
    and 8,192 bytes, each whole; None when nothing is left."""
    if len(value) <= BAGGAGE_MAX_BYTES and value.count(",") < BAGGAGE_MAX_MEMBERS and value.isascii():
        return value or None
    kept: list[str] = []
    size = 0
    for member in value.split(","):
        member = member.strip()
        if not member:
            continue
        n = len(member.encode()) + (1 if kept else 0)
        if size + n > BAGGAGE_MAX_BYTES or len(kept) == BAGGAGE_MAX_MEMBERS:
            break
        kept.append(member)
        size += n
    return ",".join(kept) or None


def carrier_of(meta: Any) -> dict[str, str] | None:
    """The trace context of a message's ``params._meta`` (a dict, or anything else: then None),
    with the limits applied; None when it carries none."""
    if type(meta) is not dict:
        return None
    parent = meta.get("traceparent")
    if type(parent) is not str or len(parent) > TRACEPARENT_MAX:
        return None  # (no usable parent: the rest means nothing without it; a new trace starts)
    carrier = {"traceparent": parent}
    state = meta.get("tracestate")
    if type(state) is str and (state := limit_tracestate(state)) is not None:
        carrier["tracestate"] = state
    bag = meta.get("baggage")
    if type(bag) is str and (bag := limit_baggage(bag)) is not None:
        carrier["baggage"] = bag
    return carrier


def meta_of_params(params: Any) -> Any:
    """``params._meta`` of decoded params (a dict, or a typed model with a ``meta`` field)."""
    if type(params) is dict:
        return params.get(_META)
    return getattr(params, "meta", None)


_SPLICE = re.compile(rb"\{\s*")


def with_carrier(params_json: bytes | None, carrier: Mapping[str, str], inner: bool = False,
                 root: bool = True, nested: str = "") -> bytes | None:
    """``params_json`` with ``carrier``'s keys set in its ``_meta`` (created when missing, its
    other keys kept). ``inner``: the ``_meta`` of ``params.params`` too (MCP-over-ACP's inner
    MCP request; a ``proxy/successor`` envelope's wrapped message). ``root=False``: not the
    root's (an envelope's own ``_meta`` is hop-local). ``nested``: an envelope's wrapped message
    of that method (``mcp/message``) gets it in its own inner ``params._meta`` too. Params that are not an object are
    returned unchanged (nowhere to put it)."""
    if not carrier:
        return params_json
    if params_json is None:
        return orjson.dumps({_META: dict(carrier)}) if root else None
    if root and not inner and b'"_meta"' not in params_json:  # the common case: put the key first, no parse
        m = _SPLICE.match(params_json)
        if m is None:
            return params_json
        rest = params_json[m.end():]
        return b'{"_meta":' + orjson.dumps(dict(carrier)) + (b"" if rest.startswith(b"}") else b",") + rest
    try:
        value = orjson.loads(params_json)
    except orjson.JSONDecodeError:
        return params_json
    if type(value) is not dict:
        return params_json
    if root:
        _merge(value, carrier)
    if inner and type(value.get("params")) is dict:
        value["params"] = wrapped = dict(value["params"])
        _merge(wrapped, carrier)
        if nested and value.get("method") == nested and type(wrapped.get("params")) is dict:
            wrapped["params"] = dict(wrapped["params"])
            _merge(wrapped["params"], carrier)
    return orjson.dumps(value)


def _merge(obj: dict[str, Any], carrier: Mapping[str, str]) -> None:
    meta = obj.get(_META)
    merged = dict(meta) if type(meta) is dict else {}
    for key in TRACE_KEYS:
        merged.pop(key, None)  # (a context from elsewhere is replaced whole, never mixed)
    merged.update(carrier)
    obj[_META] = merged
