"""OpenTelemetry for one connection: a span per message, the context in ``_meta``, metrics.

Imported only when OpenTelemetry is configured (see ``_otel_hook.py``): the connection's
:class:`~acplink.connection.peer.Peer` then has a :class:`ConnectionTelemetry` and calls it on
each message; otherwise its ``telemetry`` is None and each hook is one attribute test.

Spans (the RPC semantic conventions, ``rpc.system`` ``jsonrpc``): a request we send is a
CLIENT span, one we answer a SERVER span whose parent is the context in its ``params._meta``;
a notification we send is a PRODUCER span, one we handle a CONSUMER span. The context of each
span we send from is written into the message's ``_meta`` (and, for MCP-over-ACP, into the
inner MCP request's). A prompt's span is its turn: it carries the stop reason and the turn's
updates as events (at most :data:`MAX_TURN_EVENTS`, the count of the others as an attribute).
Metrics: request durations by method and side (their count is the request count), turn
durations by stop reason, active sessions, bytes in and out.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.metrics import Observation
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .._version import __version__
from ..errors import RequestCancelled, RequestError
from ..protocol import Protocol
from ..protocol.proxy import DIALECTS
from ..rpc.engine import IncomingNotification, IncomingRequest
from ._propagation import carrier_of, limit_baggage, meta_of_params, with_carrier

__all__ = ["MAX_TURN_EVENTS", "ConnectionTelemetry", "Instruments"]

#: the updates of one turn kept as events of its span (the rest are counted)
MAX_TURN_EVENTS = 128

_SESSION_RE = re.compile(rb'"sessionId"\s*:\s*"((?:[^"\\]|\\.){1,256})"')
_UPDATE_RE = re.compile(rb'"sessionUpdate"\s*:\s*"([A-Za-z_]{1,64})"')
_HEAD = 4096  # (where the session id of an outgoing message is looked for)

SYSTEM = "jsonrpc"

#: the proxy envelopes (``proxy/successor`` and its older name): the trace context is the
#: wrapped message's, in its ``_meta``
_ENVELOPES = frozenset(d.successor for d in DIALECTS)


class Totals:
    """A monotonic counter of the messages' flood: a plain sum per attribute set, updated per
    message (one dictionary update, no SDK call), reported when the metrics are collected."""

    def __init__(self, meter: Any, name: str, unit: str, description: str, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.values: dict[tuple[str, ...], int] = {}
        meter.create_observable_counter(name, callbacks=[self._observe], unit=unit, description=description)

    def add(self, amount: int, key: tuple[str, ...]) -> None:
        values = self.values
        values[key] = values.get(key, 0) + amount

    def _observe(self, options: Any) -> list[Observation]:
        # (collected in the exporter's thread: a copy of the dict, taken in one step)
        return [Observation(value, dict(zip(self.keys, key, strict=True))) for key, value in self.values.copy().items()]


class Instruments:
    """The tracer and the metric instruments (one set per process and providers)."""

    def __init__(self, tracer_provider: Any, meter_provider: Any) -> None:
        self.providers = (tracer_provider, meter_provider)
        self.tracer = tracer_provider.get_tracer("acplink", __version__) if tracer_provider is not None else None
        meter = meter_provider.get_meter("acplink", __version__) if meter_provider is not None else None
        self.meter = meter
        if meter is None:
            return
        self.client_duration = meter.create_histogram(
            "rpc.client.duration", unit="ms", description="Duration of the requests acplink sent, by method")
        self.server_duration = meter.create_histogram(
            "rpc.server.duration", unit="ms", description="Duration of the requests acplink answered, by method")
        # (per message: a sum kept here, one dict update, reported when the metrics are collected)
        self.notifications = Totals(meter, "acp.notifications", "{notification}",
                                    "Notifications sent and received, by method", ("rpc.method", "acp.direction", "acp.side"))
        self.turn_duration = meter.create_histogram(
            "acp.turn.duration", unit="s", description="Duration of prompt turns, by stop reason")
        self.sessions = meter.create_up_down_counter(
            "acp.sessions.active", unit="{session}", description="Sessions open on live connections")
        self.bytes_sent = Totals(meter, "acp.bytes.sent", "By", "Bytes written to peers", ("acp.side",))
        self.bytes_received = Totals(meter, "acp.bytes.received", "By", "Bytes read from peers", ("acp.side",))
        self.connections = meter.create_up_down_counter(
            "acp.connections.active", unit="{connection}", description="Connections open (acplink serve)")


_INSTRUMENTS: Instruments | None = None


def instruments(tracer_provider: Any, meter_provider: Any) -> Instruments:
    """The instruments of these providers (made once; again when the providers change)."""
    global _INSTRUMENTS
    if _INSTRUMENTS is None or _INSTRUMENTS.providers != (tracer_provider, meter_provider):
        _INSTRUMENTS = Instruments(tracer_provider, meter_provider)
    return _INSTRUMENTS


class _Turn:
    __slots__ = ("dropped", "events", "span", "started")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.started = time.perf_counter()
        self.events = 0
        self.dropped = 0


class ConnectionTelemetry:
    """What one connection (``side``: "agent", "client" or "proxy") reports."""

    def __init__(self, side: str, inst: Instruments, protocol: Protocol) -> None:
        self.side = side
        self.inst = inst
        self.tracer = inst.tracer
        self.meter = inst.meter
        self.attrs = {"acp.side": side}
        self.side_key = (side,)
        #: session id -> its running turn (the prompt's span)
        self.turns: dict[str, _Turn] = {}
        #: the sessions this connection opened (counted in acp.sessions.active)
        self.sessions: set[str] = set()
        self.use_protocol(protocol)

    def use_protocol(self, protocol: Protocol) -> None:
        """The wire names of the methods told apart (``initialize`` may select a version)."""
        self.prompt = protocol.wire("prompt") if protocol.has("prompt") else ""
        self.update = protocol.wire("session_update") if protocol.has("session_update") else ""
        self.mcp = protocol.wire("mcp_message") if protocol.has("mcp_message") else ""
        self.openers = protocol.opener_wires
        self.close = protocol.wire("close_session") if protocol.has("close_session") else ""

    # -- the context in _meta ------------------------------------------------------------------

    def inject(self, method: str, params_json: bytes | None) -> bytes | None:
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        if "baggage" in carrier:
            bag = limit_baggage(carrier["baggage"])
            if bag is None:
                del carrier["baggage"]
            else:
                carrier["baggage"] = bag
        if method in _ENVELOPES:  # (the wrapped message's _meta: the envelope's own is hop-local)
            return with_carrier(params_json, carrier, inner=True, root=False, nested=self.mcp)
        return with_carrier(params_json, carrier, inner=method == self.mcp)

    @staticmethod
    def extract(params: Any, method: str = "") -> otel_context.Context | None:
        if method in _ENVELOPES and type(params) is dict and type(params.get("params")) is dict:
            params = params["params"]  # (a proxy/successor envelope: the wrapped message's _meta)
        carrier = carrier_of(meta_of_params(params))
        if carrier is None:
            return None
        ctx = propagate.extract(carrier)
        return ctx if trace.get_current_span(ctx).get_span_context().is_valid else None

    # -- requests ------------------------------------------------------------------------------

    async def request(self, send: Callable[..., Awaitable[Any]], method: str, params_json: bytes | None,
                      timeout: float | None, on_result: Any, meta: Any) -> Any:
        """A request we send: its CLIENT span around ``send`` (``Outbound._request``)."""
        call = _Call(self, method, SpanKind.CLIENT, None, _session_in(params_json))
        span = call.span
        try:
            if span is not None:
                params_json = self.inject(method, params_json)
                span.set_attribute("acp.message.request.size", len(params_json or b""))

            def sent(rid: int | str, size: int) -> None:
                self.inst_bytes(sent=size)
                if span is not None:
                    span.set_attribute("rpc.jsonrpc.request_id", str(rid))

            result = await send(method, params_json, timeout, on_result, meta, sent)
            call.answered(result)
            return result
        except BaseException as exc:
            call.failed(exc)
            raise
        finally:
            call.end(self.inst.client_duration if self.meter is not None else None)

    async def serve(self, handle: Callable[[str, Any], Awaitable[bytes]], ev: IncomingRequest) -> bytes:
        """A request we answer: its SERVER span (the parent: the context its ``_meta`` carries)."""
        method, params = ev.method, ev.params
        call = _Call(self, method, SpanKind.SERVER, self.extract(params, method), _session_of(params))
        try:
            if call.span is not None:
                call.span.set_attribute("rpc.jsonrpc.request_id", str(ev.id))
            result = await handle(method, params)
            if call.span is not None:
                call.span.set_attribute("acp.message.response.size", len(result))
            if call.turn is not None or method in self.openers or method == self.close:
                call.answered(orjson.loads(result) if result[:1] == b"{" else None)
            return result
        except BaseException as exc:
            call.failed(exc)
            raise
        finally:
            call.end(self.inst.server_duration if self.meter is not None else None)

    # -- notifications -------------------------------------------------------------------------

    def notify(self, method: str, params_json: bytes | None) -> bytes | None:
        """An outgoing notification: its PRODUCER span (ended at once), its context injected."""
        sid = _session_in(params_json) if method == self.update else None
        kind = _update_kind(params_json) if sid is not None else None
        span = self._start(method, SpanKind.PRODUCER, None, sid)
        if span is not None:
            if kind is not None:
                span.set_attribute("acp.update.kind", kind)
            token = otel_context.attach(trace.set_span_in_context(span))
            try:
                params_json = self.inject(method, params_json)
            finally:
                otel_context.detach(token)
            span.set_attribute("acp.message.size", len(params_json or b""))
            span.end()
        if sid is not None:
            self._turn_event(sid, kind)
        if self.meter is not None:
            self.inst.notifications.add(1, (method, "sent", self.side))
        return params_json

    async def consume(self, handle: Callable[[str, Any, bool], Awaitable[None]], ev: IncomingNotification) -> None:
        method, params = ev.method, ev.params
        sid = _session_of(params) if method == self.update else None
        parent = self.extract(params, method)
        turn = self.turns.get(sid) if sid is not None else None
        if parent is None and turn is not None:  # (no context sent: it belongs to our turn)
            parent = trace.set_span_in_context(turn.span)
        span = self._start(method, SpanKind.CONSUMER, parent, sid)
        if sid is not None:
            kind = _kind_of(params)
            self._turn_event(sid, kind)
            if span is not None and kind is not None:
                span.set_attribute("acp.update.kind", kind)
        if self.meter is not None:
            self.inst.notifications.add(1, (method, "received", self.side))
        if span is None:
            await handle(method, params, ev.typed)
            return
        token = otel_context.attach(trace.set_span_in_context(span, parent))
        try:
            await handle(method, params, ev.typed)
        except BaseException as exc:
            _failed(span, exc, _code_of(exc))
            raise
        finally:
            otel_context.detach(token)
            span.end()

    # -- bytes, sessions, the end --------------------------------------------------------------

    def inst_bytes(self, *, sent: int = 0, received: int = 0) -> None:
        if self.meter is None:
            return
        if sent:
            self.inst.bytes_sent.add(sent, self.side_key)
        if received:
            self.inst.bytes_received.add(received, self.side_key)

    def closed(self) -> None:
        """The connection is over: its sessions are no longer active; its turns end."""
        if self.sessions and self.meter is not None:
            self.inst.sessions.add(-len(self.sessions), self.attrs)
        self.sessions.clear()
        self.turns.clear()

    # -- helpers -------------------------------------------------------------------------------

    def _start(self, method: str, kind: SpanKind, parent: otel_context.Context | None, sid: str | None) -> Span | None:
        if self.tracer is None:
            return None
        attributes: dict[str, Any] = {"rpc.system": SYSTEM, "rpc.method": method, "rpc.jsonrpc.version": "2.0",
                                      "acp.side": self.side}
        if sid is not None:
            attributes["acp.session.id"] = sid
        span: Span = self.tracer.start_span(method, context=parent, kind=kind, attributes=attributes)
        return span

    def _record(self, hist: Any, method: str, started: float, code: int | None) -> None:
        if hist is None:
            return
        attrs: dict[str, Any] = {"rpc.system": SYSTEM, "rpc.method": method, **self.attrs}
        if code is not None:
            attrs["rpc.jsonrpc.error_code"] = code
        hist.record((time.perf_counter() - started) * 1000.0, attrs)

    def _answered(self, method: str, sid: str | None, result: Any) -> None:
        """A request succeeded: a session opened or closed?"""
        if method in self.openers:
            opened = _field(result, "sessionId", "session_id")
            opened = opened if isinstance(opened, str) else sid
            if opened is not None and opened not in self.sessions:
                self.sessions.add(opened)
                if self.meter is not None:
                    self.inst.sessions.add(1, self.attrs)
        elif method == self.close and sid is not None and sid in self.sessions:
            self.sessions.discard(sid)
            if self.meter is not None:
                self.inst.sessions.add(-1, self.attrs)

    def _turn_started(self, sid: str, span: Span | None) -> _Turn | None:
        if span is None and self.meter is None:
            return None
        turn = _Turn(span if span is not None else trace.INVALID_SPAN)
        self.turns[sid] = turn
        return turn

    def _turn_event(self, sid: str, kind: str | None) -> None:
        turn = self.turns.get(sid)
        if turn is None:
            return
        if turn.events < MAX_TURN_EVENTS:
            turn.events += 1
            turn.span.add_event(self.update, {"acp.update.kind": kind or "unknown"})
        else:
            turn.dropped += 1

    def _turn_ended(self, sid: str | None, turn: _Turn, stop_reason: str | None) -> None:
        if sid is not None and self.turns.get(sid) is turn:
            del self.turns[sid]
        span = turn.span
        span.set_attribute("acp.turn.updates", turn.events + turn.dropped)
        if turn.dropped:
            span.set_attribute("acp.turn.updates_not_recorded", turn.dropped)
        if stop_reason is not None:
            span.set_attribute("acp.stop_reason", stop_reason)
        if self.meter is not None:
            self.inst.turn_duration.record(time.perf_counter() - turn.started,
                                           {"acp.stop_reason": stop_reason or "error", **self.attrs})


class _Call:
    """One request's span (current while it runs), its turn when it is a prompt, its timing."""

    __slots__ = ("code", "method", "sid", "span", "started", "tel", "token", "turn")

    def __init__(self, tel: ConnectionTelemetry, method: str, kind: SpanKind, parent: otel_context.Context | None,
                 sid: str | None) -> None:
        self.tel, self.method, self.sid = tel, method, sid
        self.span = span = tel._start(method, kind, parent, sid)
        # (the parent's context: its baggage goes on with the span)
        self.token = otel_context.attach(trace.set_span_in_context(span, parent)) if span is not None else None
        self.started = time.perf_counter()
        self.turn = tel._turn_started(sid, span) if method == tel.prompt and sid is not None else None
        self.code: int | None = None

    def answered(self, result: Any) -> None:
        """It succeeded: ``result`` is the raw JSON value, or the typed result (a result hook's)."""
        self.tel._answered(self.method, self.sid, result)
        if self.turn is not None:
            self.tel._turn_ended(self.sid, self.turn, _stop_reason(result))

    def failed(self, exc: BaseException) -> None:
        self.code = code = _code_of(exc)
        if self.span is not None:
            _failed(self.span, exc, code)
        if self.turn is not None:
            self.tel._turn_ended(self.sid, self.turn, None)

    def end(self, hist: Any) -> None:
        self.tel._record(hist, self.method, self.started, self.code)
        if self.token is not None:
            otel_context.detach(self.token)
        if self.span is not None:
            self.span.end()


def _failed(span: Span, exc: BaseException, code: int | None) -> None:
    if code is not None:
        span.set_attribute("rpc.jsonrpc.error_code", code)
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    span.set_attribute("rpc.jsonrpc.error_message", message[:500])
    span.set_status(Status(StatusCode.ERROR, message[:500]))


def _code_of(exc: BaseException) -> int | None:
    if isinstance(exc, RequestError):
        return exc.code
    if isinstance(exc, asyncio.CancelledError):
        return RequestCancelled.code
    return None


def _session_in(params_json: bytes | None) -> str | None:
    """The session id of outgoing params (their top-level ``sessionId``, near the start)."""
    if params_json is None:
        return None
    m = _SESSION_RE.search(params_json, 0, _HEAD)
    if m is None:
        return None
    try:
        sid = orjson.loads(b'"' + m.group(1) + b'"')
    except orjson.JSONDecodeError:
        return None
    return sid if isinstance(sid, str) else None


def _session_of(params: Any) -> str | None:
    sid = params.get("sessionId") if type(params) is dict else getattr(params, "session_id", None)
    return sid if isinstance(sid, str) else None


def _update_kind(params_json: bytes | None) -> str | None:
    m = _UPDATE_RE.search(params_json or b"", 0, _HEAD)
    return m.group(1).decode() if m is not None else None


def _kind_of(params: Any) -> str | None:
    if type(params) is dict:
        update = params.get("update")
        kind = update.get("sessionUpdate") if type(update) is dict else None
    else:
        kind = getattr(getattr(params, "update", None), "session_update", None)
    return kind if isinstance(kind, str) else None


def _field(result: Any, key: str, attr: str) -> Any:
    """A field of a result: raw JSON (``key``) or a typed model (``attr``)."""
    return result.get(key) if type(result) is dict else getattr(result, attr, None)


def _stop_reason(result: Any) -> str | None:
    reason = _field(result, "stopReason", "stop_reason")
    reason = getattr(reason, "value", reason)  # (an enum member)
    return reason if isinstance(reason, str) else None
