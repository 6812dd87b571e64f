"""MCP-over-ACP in a trace: each ``mcp/message`` exchange as tool traffic (which declared server,
which inner method and tool, how long, what came back), and the binding's own findings.

The binding keeps two kinds of error apart: an *outer* ACP error answers the envelope (bad
envelope -32602, cancelled -32800, limit -33000, unknown server -33001, no valid outcome
-33002), an *inner* MCP error travels inside a successful answer, the carrier
``{"error": {code, message}}``. Peers mix them up; the findings here name which way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..mcp.binding import BINDING_CODES
from ..methods import MCP_MESSAGE

__all__ = ["MCP_FINDINGS", "McpExchange", "McpTraffic"]

#: finding codes → what they mean
MCP_FINDINGS = {
    "mcp-inner-as-outer": "an mcp/message answered with an outer ACP error whose code is not the binding's "
                          "(an MCP error belongs inside the carrier: {\"error\": {code, message}})",
    "mcp-outer-as-inner": "a binding error (-33000, -33001, -33002, -32800) sent inside the carrier, as if "
                          "it were the MCP server's own error",
    "mcp-carrier": "an mcp/message answer that is not a carrier with one outcome ({\"result\": …} or "
                   "{\"error\": {code, message}})",
    "mcp-unknown-server": "an mcp/message for a serverId no session declared (an acp MCP server in mcpServers)",
    "mcp-late-notification": "an mcp/message notification for an inner request that is not active",
}

#: outer error codes the binding (and JSON-RPC itself) may answer ``mcp/message`` with
_OUTER_CODES = frozenset({-32700, -32600, -32601, -32602, -32603}) | BINDING_CODES


@dataclass
class McpExchange:
    """One ``mcp/message`` request and its answer."""

    seq: int | None
    #: "c2a" when the client asked (it is the consumer: an agent-provided server), else "a2c"
    dir: str
    server_id: str | None
    #: the name the server was declared with (None: never declared in this trace)
    server: str | None
    session_id: str | None
    method: str | None
    #: ``params.name`` of a ``tools/call``
    tool: str | None
    sent: float
    answered: float | None = None
    #: "result", "inner-error", "outer-error" or None (no answer)
    outcome: str | None = None
    code: int | None = None
    message: str | None = None
    #: inner notifications (progress, ...) the provider sent for it
    notifications: int = 0
    #: the caller's inner request id
    request_id: Any = None

    @property
    def latency(self) -> float | None:
        return None if self.answered is None else self.answered - self.sent


class McpTraffic:
    """Follows the ``mcp/message`` traffic of one trace. :meth:`message` takes each message (with
    the protocol in force) and returns the findings it causes, as (code, message) pairs."""

    def __init__(self) -> None:
        self.exchanges: list[McpExchange] = []
        #: serverId → (declared name, session id)
        self.declared: dict[str, tuple[str, str | None]] = {}
        #: (dir of the request, request id) → the exchange, until answered
        self._open: dict[tuple[str, Any], McpExchange] = {}
        #: (serverId, inner requestId) → the exchange, while active
        self._active: dict[tuple[Any, Any], McpExchange] = {}
        #: session openers sent, by (dir, id): their mcpServers, until the answer names the session
        self._openers: dict[tuple[str, Any], list[Any]] = {}

    def message(self, d: str, msg: dict[str, Any], mono: float, seq: int | None) -> list[tuple[str, str]]:
        method = msg.get("method")
        if isinstance(method, str):
            if method == MCP_MESSAGE:
                return self._envelope(d, msg, _obj(msg.get("params")), mono, seq)
            if "id" in msg:  # (a session opener declares servers; notifications, the flood, do not)
                params = _obj(msg.get("params"))
                if isinstance(params.get("mcpServers"), list):
                    self._openers[(d, _hashable(msg["id"]))] = params["mcpServers"]
                    sid = params.get("sessionId")
                    if isinstance(sid, str):  # (load / resume name their session)
                        self._declare(params["mcpServers"], sid)
            return []
        if "id" not in msg or not (self._openers or self._open):  # (most answers: nothing of ours)
            return []
        back = "a2c" if d == "c2a" else "c2a"
        rid = _hashable(msg["id"])
        servers = self._openers.pop((back, rid), None)
        if servers is not None:
            result = _obj(msg.get("result"))
            sid = result.get("sessionId")
            self._declare(servers, sid if isinstance(sid, str) else None)
            return []
        ex = self._open.pop((back, rid), None)
        return [] if ex is None else self._answer(ex, msg, mono)

    def _declare(self, servers: list[Any], session_id: str | None) -> None:
        for server in servers:
            if isinstance(server, dict) and server.get("type") == "acp" and isinstance(server.get("serverId"), str):
                self.declared.setdefault(server["serverId"], (str(server.get("name") or ""), session_id))

    def _envelope(self, d: str, msg: dict[str, Any], params: dict[str, Any], mono: float,
                  seq: int | None) -> list[tuple[str, str]]:
        server_id = params.get("serverId") if isinstance(params.get("serverId"), str) else None
        key = (server_id, _hashable(params.get("requestId")))
        if "id" not in msg:  # a notification for an active inner request
            ex = self._active.get(key)
            if ex is None:
                return [("mcp-late-notification", f"mcp/message notification {params.get('method')!r} for "
                         f"request {params.get('requestId')!r} of server {server_id!r}, which is not active")]
            ex.notifications += 1
            return []
        name, session_id = self.declared.get(server_id, (None, None)) if server_id is not None else (None, None)
        inner = _obj(params.get("params"))
        method = params.get("method")
        ex = McpExchange(seq, d, server_id, name, session_id,
                         method if isinstance(method, str) else None,
                         inner.get("name") if method == "tools/call" and isinstance(inner.get("name"), str) else None,
                         mono, request_id=key[1])
        self.exchanges.append(ex)
        self._open[(d, _hashable(msg["id"]))] = ex
        self._active[key] = ex
        if server_id is not None and server_id not in self.declared:
            return [("mcp-unknown-server", f"mcp/message for server {server_id!r}, which no session declared")]
        return []

    def _answer(self, ex: McpExchange, msg: dict[str, Any], mono: float) -> list[tuple[str, str]]:
        ex.answered = mono
        if self._active.get((ex.server_id, ex.request_id)) is ex:
            del self._active[(ex.server_id, ex.request_id)]
        what = f"mcp/message {ex.method or '?'} to server {ex.server or ex.server_id!r}"
        if "error" in msg:
            err = _obj(msg["error"])
            ex.outcome, ex.code, ex.message = "outer-error", _code(err), _text(err)
            if ex.code is not None and ex.code not in _OUTER_CODES:
                return [("mcp-inner-as-outer", f"{what}: outer error {ex.code} {ex.message!r} looks like the "
                         "MCP server's own error, which belongs inside the carrier")]
            return []
        carrier = msg.get("result")
        if not isinstance(carrier, dict) or ("result" not in carrier and not isinstance(carrier.get("error"), dict)):
            ex.outcome = "result"  # (the caller could not use it: a finding, not an error)
            return [("mcp-carrier", f"{what}: the answer {str(carrier)[:60]!r} is not a carrier")]
        if "result" in carrier:
            ex.outcome = "result"
            return []
        err = carrier["error"]
        ex.outcome, ex.code, ex.message = "inner-error", _code(err), _text(err)
        if ex.code is None:
            return [("mcp-carrier", f"{what}: the carrier's error has no integer code")]
        if ex.code in BINDING_CODES:
            return [("mcp-outer-as-inner", f"{what}: the binding error {ex.code} {ex.message!r} was sent inside "
                     "the carrier; it is an outer ACP error")]
        return []


def _obj(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _code(err: dict[str, Any]) -> int | None:
    code = err.get("code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _text(err: dict[str, Any]) -> str | None:
    message = err.get("message")
    return message if isinstance(message, str) else None


def _hashable(x: Any) -> Any:
    try:
        hash(x)
    except TypeError:
        return repr(x)
    return x
