"""What ``acplink serve`` measures of the traffic it relays, when a meter provider is configured.

The server's agents are processes of their own (they report their own spans and metrics with
``--otel``); the server sees whole messages pass. It records, with the same instruments as a
connection (``connection/_otel.py``, ``acp.side`` ``serve``): the duration of each client
request until the agent's answer (``rpc.server.duration``, by method and error code), the
sessions open (``acp.sessions.active``: an opener's result names one; the connection's end
closes them), the connections open (``acp.connections.active``), and the bytes each way.
"""

from __future__ import annotations

import time
from typing import Any

from ..connection._otel_hook import configured_providers
from ..protocol import PROTOCOL_VERSION, get_protocol

__all__ = ["RelayMetrics", "relay_metrics"]

_ATTRS = {"acp.side": "serve"}
_SIDE = ("serve",)


def relay_metrics() -> RelayMetrics | None:
    """The server's metrics, or None when no meter provider is configured."""
    tracer_provider, meter_provider = configured_providers()
    if meter_provider is None:
        return None
    from ..connection._otel import instruments

    return RelayMetrics(instruments(tracer_provider, meter_provider))


class RelayMetrics:
    def __init__(self, inst: Any) -> None:
        self.inst = inst
        #: (connection id, request key) -> (method, when it was sent to the agent)
        self.in_flight: dict[tuple[str, Any], tuple[str, float]] = {}
        #: connection id -> the sessions opened on it
        self.sessions: dict[str, set[str]] = {}
        self.openers = get_protocol(PROTOCOL_VERSION).opener_wires

    def opened(self, conn_id: str) -> None:
        self.inst.connections.add(1, _ATTRS)
        self.sessions[conn_id] = set()

    def closed(self, conn_id: str) -> None:
        self.inst.connections.add(-1, _ATTRS)
        gone = self.sessions.pop(conn_id, set())
        if gone:
            self.inst.sessions.add(-len(gone), _ATTRS)
        for key in [k for k in self.in_flight if k[0] == conn_id]:
            del self.in_flight[key]

    def from_client(self, conn_id: str, size: int, method: str | None, key: Any) -> None:
        self.inst.bytes_received.add(size, _SIDE)
        if method is not None and key is not None:
            self.in_flight[(conn_id, key)] = (method, time.perf_counter())

    def from_agent(self, conn_id: str, size: int) -> None:
        self.inst.bytes_sent.add(size, _SIDE)

    def answered(self, conn_id: str, key: Any, msg: dict[str, Any]) -> None:
        """The agent answered the client's request ``key``."""
        sent = self.in_flight.pop((conn_id, key), None)
        if sent is None:
            return
        method, started = sent
        attrs: dict[str, Any] = {"rpc.system": "jsonrpc", "rpc.method": method, **_ATTRS}
        error = msg.get("error")
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            attrs["rpc.jsonrpc.error_code"] = error["code"]
        self.inst.server_duration.record((time.perf_counter() - started) * 1000.0, attrs)
        result = msg.get("result")
        sid = result.get("sessionId") if method in self.openers and isinstance(result, dict) else None
        opened = self.sessions.get(conn_id)
        if isinstance(sid, str) and opened is not None and sid not in opened:
            opened.add(sid)
            self.inst.sessions.add(1, _ATTRS)
