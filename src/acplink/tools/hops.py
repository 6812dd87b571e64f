"""Reading a conductor's trace (``acplink conduct --trace FILE``): its events as hops.

A conductor's trace has one line per message per hop it crossed, in the Rust trace viewer's
event shape (see :mod:`acplink.proxy.trace`): ``type`` (``request``, ``response``,
``notification``), ``ts``, ``from``, ``to``, ``id``, ``method``, ``session``, ``params`` or
``payload`` with ``is_error``. :func:`hops` turns them into :class:`Hop` rows (a response gets
the method and session of the request it answers), :func:`format_hop` into one line of text,
:func:`hop_messages` into one message trace per hop (the records of ``acplink record``, the
upstream side as the client), for ``acplink devtools import``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Hop", "format_hop", "hop_messages", "hops", "is_conductor_trace", "is_hop_event"]

_KINDS = ("request", "response", "notification")


def is_hop_event(rec: Any) -> bool:
    """Whether ``rec`` (one decoded line) is a conductor's hop event."""
    return isinstance(rec, dict) and rec.get("type") in _KINDS and "from" in rec and "to" in rec


def is_conductor_trace(records: Iterable[dict[str, Any]]) -> bool:
    """Whether ``records`` (the lines of a trace file) are a conductor's hop events."""
    seen = False
    for rec in records:
        if rec.get("type") == "cut":
            continue
        if not is_hop_event(rec):
            return False
        seen = True
    return seen


@dataclass
class Hop:
    """One message crossing one hop of a chain."""

    ts: float | None
    type: str
    src: str
    dst: str
    id: Any = None
    method: str | None = None
    session: str | None = None
    #: a response's error: ``"CODE MESSAGE"``
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["from"], out["to"] = out.pop("src"), out.pop("dst")
        return out


def _error(payload: Any) -> str:
    if isinstance(payload, dict):
        return f"{payload.get('code', '?')} {payload.get('message', '')}".strip()
    return str(payload)


def _session(rec: dict[str, Any]) -> str | None:
    sid = rec.get("session")
    if isinstance(sid, str):
        return sid
    payload = rec.get("payload")
    found = payload.get("sessionId") if isinstance(payload, dict) else None
    return found if isinstance(found, str) else None


def hops(records: Iterable[dict[str, Any]]) -> list[Hop]:
    """The hop rows of a conductor's trace, in its order (``cut`` lines left out)."""
    asked: dict[Any, tuple[str | None, str | None]] = {}  # request id -> (method, session)
    out: list[Hop] = []
    for rec in records:
        kind = rec.get("type")
        if kind not in _KINDS:
            continue
        ts = rec.get("ts")
        hop = Hop(ts if isinstance(ts, (int, float)) else None, str(kind), str(rec.get("from")), str(rec.get("to")),
                  rec.get("id"), rec.get("method"), _session(rec))
        if kind == "request":
            asked[_key(hop.id)] = (hop.method, hop.session)
        elif kind == "response":
            method, session = asked.pop(_key(hop.id), (None, None))
            hop.method = method
            hop.session = hop.session or session
            if rec.get("is_error"):
                hop.error = _error(rec.get("payload"))
        out.append(hop)
    return out


def _key(rid: Any) -> Any:
    return rid if isinstance(rid, (str, int)) else repr(rid)


def format_hop(hop: Hop) -> str:
    """One line: time, from → to, kind, id, method, session, error."""
    at = "" if hop.ts is None else f"+{hop.ts:.3f}s"
    parts = [f"{at:>11}", f"{hop.src + ' → ' + hop.dst:<24}", f"{hop.type:<12}"]
    parts.append(f"#{hop.id}" if hop.id is not None else "-")
    parts.append(hop.method or "?")
    if hop.session:
        parts.append(f"session {hop.session}")
    if hop.error:
        parts.append(f"error {hop.error}")
    return " ".join(parts)


def _rank(component: str) -> float:
    """A component's place in the chain, the client first (``proxy:N`` in order, then the agent
    or a nested conductor's successor)."""
    if component == "client":
        return -1
    if component.startswith("proxy:") and component[6:].isdigit():
        return int(component[6:])
    return float("inf")


def hop_messages(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """A conductor's trace as one message trace per hop, ``"UPSTREAM ↔ DOWNSTREAM"`` → its
    ``message`` records (``dir`` ``c2a`` from the upstream side, ``mono`` the event's ``ts``,
    ``msg`` the JSON-RPC message rebuilt from the event), in the trace's order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        if not is_hop_event(rec):
            continue
        src, dst = str(rec["from"]), str(rec["to"])
        up, down = (src, dst) if _rank(src) <= _rank(dst) else (dst, src)
        kind = rec["type"]
        msg: dict[str, Any] = {"jsonrpc": "2.0"}
        if kind != "notification":
            msg["id"] = rec.get("id")
        if kind == "response":
            msg["error" if rec.get("is_error") else "result"] = rec.get("payload")
        else:
            msg["method"] = rec.get("method")
            if rec.get("params") is not None:
                msg["params"] = rec["params"]
        stream = out.setdefault(f"{up} ↔ {down}", [])
        ts = rec.get("ts")
        stream.append({"type": "message", "seq": len(stream) + 1, "dir": "c2a" if src == up else "a2c",
                       "mono": ts if isinstance(ts, (int, float)) else 0.0, "kind": kind, "msg": msg})
    return out
