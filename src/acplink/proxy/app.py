"""The proxy API: an ACP proxy written in Python, run by a conductor.

A :class:`ProxyApp` forwards everything both ways unchanged by default: what its predecessor
(the client's side) sends goes to its successor (the agent's side) wrapped in
``proxy/successor``, and what its successor sends comes out plainly to its predecessor;
results and errors come back as they were. Unknown and ``_`` methods, ``_meta`` and either
protocol version pass the same way. Hooks registered with :meth:`ProxyApp.from_client` and
:meth:`ProxyApp.from_agent` intercept one method coming from that side: they get a
:class:`ProxyContext` and the params (JSON values, changed in place or replaced; or, when the
hook annotates them with a model such as ``schema.PromptRequest``, that model) and may
forward them (:meth:`ProxyContext.forward`), answer themselves, or send their own messages to
either side.

It answers ``proxy/initialize`` in the names it was initialized with (``proxy/*``, or the older
``_proxy/*``), after forwarding ``initialize`` to its successor as the spec requires. Started
without a conductor (a plain ``initialize``), it answers one clear error.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import sys
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import orjson
from pydantic import BaseModel

from ..connection._otel_hook import telemetry_for
from ..connection._relay import Route
from ..connection.peer import Peer, PeerLimits
from ..errors import InvalidParams, InvalidRequest
from ..mcp import McpCall
from ..methods import INITIALIZE, MCP_MESSAGE, SESSION_LOAD, SESSION_NEW, SESSION_RESUME
from ..protocol import PROTOCOL_VERSION, get_protocol
from ..protocol.proxy import MODERN, Dialect, dialect_of, unwrap, wrap
from ..runtime import cancel_on_signals
from ..schema import dump, parse
from ..transports.base import Transport
from ..transports.stdio import StdioTransport
from ._mcp import ProxyMcp
from ._order import OrderGate, call_through, forward_notification

__all__ = ["ProxyApp", "ProxyContext", "Side"]

log = logging.getLogger("acplink.proxy")

#: where a message comes from: the predecessor (the client's side) or the successor (the agent's)
Side = Literal["client", "agent"]

Hook = Callable[["ProxyContext", Any], Awaitable[Any]]


def _params_type(fn: Hook) -> type[BaseModel] | None:
    """The model a hook's params are annotated with (a typed hook), or None (raw JSON values)."""
    try:
        names = list(inspect.signature(fn).parameters)
        hints = typing.get_type_hints(fn)
    except (TypeError, ValueError, NameError):
        return None
    ann = hints.get(names[1]) if len(names) > 1 else None
    return ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None


def _wire(value: Any) -> Any:
    """A model as its wire form (camelCase, unset fields omitted); JSON values as they are."""
    return dump(value) if isinstance(value, BaseModel) else value


class ProxyContext:
    """One intercepted message: where it came from, and the means to pass it on or send more.

    ``method``: the message's; ``source``: ``"client"`` (from the predecessor) or
    ``"agent"`` (from the successor); ``is_request``: a request (the hook's return value is
    its answer) or a notification; ``meta``: the ``proxy/successor`` envelope's own
    ``_meta`` when it came wrapped (hop-local)."""

    def __init__(self, conn: _ProxyConnection, method: str, source: Side, is_request: bool, meta: Any) -> None:
        self._conn = conn
        self.method = method
        self.source: Side = source
        self.is_request = is_request
        self.meta = meta

    async def forward(self, params: Any) -> Any:
        """Pass the message on to the other side with ``params`` (JSON values, or a model); a
        request's result (or its error, raised) comes back as JSON values."""
        send = self._conn.to_successor if self.source == "client" else self._conn.to_predecessor
        return await send(self.method, _wire(params), request=self.is_request)

    @property
    def state(self) -> dict[str, Any]:
        """This connection's own state (one dict per conductor connection, kept between
        messages): what a proxy learns on one message and needs on later ones; see
        :meth:`ProxyApp.on_close` to release what it holds."""
        return self._conn.state

    async def request_successor(self, method: str, params: Any = None) -> Any:
        """Send a request of our own to the successor (the agent's side); its result."""
        return await self._conn.to_successor(method, params, request=True)

    async def request_predecessor(self, method: str, params: Any = None) -> Any:
        """Send a request of our own to the predecessor (the client's side); its result."""
        return await self._conn.to_predecessor(method, params, request=True)

    async def notify_successor(self, method: str, params: Any = None) -> None:
        await self._conn.to_successor(method, params, request=False)

    async def notify_predecessor(self, method: str, params: Any = None) -> None:
        await self._conn.to_predecessor(method, params, request=False)


class ProxyApp:
    """An ACP proxy (see the module doc). ``name``: for logs and errors."""

    def __init__(self, name: str = "acplink-proxy", *, debug: bool = False, limits: PeerLimits | None = None) -> None:
        self.name = name
        self.debug = debug
        self.limits = limits or PeerLimits(max_running_requests=10_000)
        self._hooks: dict[tuple[Side, str], tuple[Hook, type[BaseModel] | None]] = {}
        #: name -> handler of the MCP servers the proxy offers the agent (see add_mcp_server)
        self.mcp_servers: dict[str, Callable[[McpCall], Awaitable[Any]]] = {}
        self._closers: list[Callable[[dict[str, Any]], Awaitable[None]]] = []

    def on_close(self, fn: Callable[[dict[str, Any]], Awaitable[None]]) -> Callable[[dict[str, Any]], Awaitable[None]]:
        """Register ``async def fn(state)``, run with each connection's :attr:`ProxyContext.state`
        when that connection ends (to close what the proxy opened for it)."""
        self._closers.append(fn)
        return fn

    def add_mcp_server(self, name: str, handler: Callable[[McpCall], Awaitable[Any]]) -> None:
        """Offer ``handler`` (an :class:`~acplink.McpServer`, or any ``async def
        handler(call: McpCall)``) to the agent as the MCP server ``name``, over ACP: it is
        declared (``{"type": "acp"}``) in every ``session/new``, ``session/load`` and
        ``session/resume`` the proxy forwards, when the agent advertised ``acp`` MCP, and the
        agent's ``mcp/message`` requests for it are answered here; those for other servers
        (the client's) pass on."""
        self.mcp_servers[name] = handler

    def from_client(self, method: str) -> Callable[[Hook], Hook]:
        """Register a hook for ``method`` coming from the predecessor (on its way to the agent);
        ``"*"``: for every method from that side that has no hook of its own (``ctx.method``
        names it). The same for :meth:`from_agent`."""
        return self._register("client", method)

    def from_agent(self, method: str) -> Callable[[Hook], Hook]:
        """Register a hook for ``method`` coming from the successor (on its way to the client)."""
        return self._register("agent", method)

    def _register(self, side: Side, method: str) -> Callable[[Hook], Hook]:
        def deco(fn: Hook) -> Hook:
            self._hooks[(side, method)] = (fn, _params_type(fn))
            return fn
        return deco

    def _passes(self, side: Side, method: str, mcp: bool) -> bool:
        """Whether a request ``method`` from ``side`` goes straight on, as it is: no hook for it
        and (``mcp``: the connection offers MCP servers) none of their business."""
        hooks = self._hooks
        if hooks and ((side, method) in hooks or (side, "*") in hooks):
            return False
        return not mcp or method not in _MCP_SEEN

    async def serve(self, transport: Transport | None = None) -> None:
        """Serve the proxy on ``transport`` (default: stdio) until its conductor hangs up."""
        conn = _ProxyConnection(self)
        peer = conn.peer = Peer(transport or StdioTransport(), conn, limits=self.limits, debug=self.debug,
                                name=self.name, telemetry=telemetry_for("proxy", get_protocol(PROTOCOL_VERSION)))
        await peer.start()
        try:
            await peer.wait_closed()
        finally:
            try:
                await self.run_closers(conn.state)
            finally:
                await peer.aclose()

    async def run_closers(self, state: dict[str, Any]) -> None:
        """Run the :meth:`on_close` functions for one connection's ``state`` (a failing one is
        logged; the others still run). :meth:`serve` does this when its conductor hangs up; a
        conductor driving the app in its own process does it when the chain closes."""
        for close in self._closers:
            try:
                await close(state)
            except Exception as exc:
                log.warning("%s: closing failed: %s: %s", self.name, type(exc).__name__, exc)

    def run(self, *, log_level: int = logging.WARNING) -> None:
        """Serve on stdio until stdin closes (how a conductor runs a proxy). Logs go to stderr."""
        logging.basicConfig(level=logging.DEBUG if self.debug else log_level, stream=sys.stderr,
                            format="%(levelname)s %(name)s: %(message)s")

        async def main() -> None:
            cancel_on_signals()
            with contextlib.suppress(asyncio.CancelledError):
                await self.serve()

        with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
            asyncio.run(main())


#: the requests whose params declare a session's MCP servers
_OPENERS = frozenset({SESSION_NEW, SESSION_LOAD, SESSION_RESUME})
#: the requests a proxy with MCP servers looks at even without a hook
_MCP_SEEN = _OPENERS | {MCP_MESSAGE, INITIALIZE}


class _ProxyConnection:
    """One proxy's connection to its conductor (the dispatcher of its Peer)."""

    def __init__(self, app: ProxyApp) -> None:
        self.app = app
        self.peer: Peer | None = None
        #: the names our conductor initialized us with (None: not yet)
        self.dialect: Dialect | None = None
        #: the answers received and not forwarded yet (see _order.py)
        self.gate = OrderGate()
        #: the MCP servers this connection offers the agent (None: the app has none)
        self.mcp = ProxyMcp(app.name, app.mcp_servers) if app.mcp_servers else None
        #: the app's per-connection state (ProxyContext.state)
        self.state: dict[str, Any] = {}

    def _no_conductor(self, method: str) -> InvalidRequest:
        msg = (f"{self.app.name} is an ACP proxy and must run under a conductor (for example "
               f"`acplink conduct --proxy '<this command>' -- <agent command>`), which sends proxy/initialize; "
               f"it got {method} first")
        log.error("%s", msg)
        return InvalidRequest(msg)

    def route_request(self, method: str, params: Any) -> Route | None:
        """A request that goes straight on is relayed without a task (``connection/_relay.py``):
        from the predecessor, wrapped to the successor; from the successor, unwrapped to the
        predecessor (both over this one connection)."""
        peer, ours = self.peer, self.dialect
        if peer is None or ours is None or self.gate.holding:
            return None
        mcp = self.mcp is not None
        dialect = dialect_of(method)
        if dialect is None:
            if method == INITIALIZE or not self.app._passes("client", method, mcp):
                return None
            return Route(peer, ours.successor, orjson.dumps(wrap(method, params)))
        if method != dialect.successor:
            return None
        try:
            wrapped = unwrap(params, envelope=method)
        except InvalidParams:
            return None
        inner = wrapped.method
        if inner == INITIALIZE or dialect_of(inner) is not None or not self.app._passes("agent", inner, mcp):
            return None
        return Route(peer, inner, None if wrapped.params is None else orjson.dumps(wrapped.params))

    async def to_successor(self, method: str, params: Any, *, request: bool) -> Any:
        dialect = self.dialect or MODERN
        return await self._send(dialect.successor, orjson.dumps(wrap(method, _wire(params))), request)

    async def to_predecessor(self, method: str, params: Any, *, request: bool) -> Any:
        return await self._send(method, None if params is None else orjson.dumps(_wire(params)), request)

    async def _send(self, method: str, data: bytes | None, request: bool) -> Any:
        assert self.peer is not None
        if not request:
            await forward_notification(self.peer, method, data)
            return None
        held: list[asyncio.Future[None] | None] = [None]
        try:
            return await call_through(self.peer, self.peer.tasks, method, data, on_result=self.gate.hooked(held))
        finally:  # (the answer is written in this same step: nothing behind it overtakes it)
            self.gate.release(held[0])

    async def _handle(self, method: str, params: Any, request: bool) -> Any:
        if self.gate.holding:
            await self.gate.wait()
        dialect = dialect_of(method)
        meta = None
        side: Side = "client"
        if dialect is not None and method == dialect.initialize:
            if not request:
                return None
            self.dialect = dialect
            method = INITIALIZE
        elif self.dialect is None:
            if request:
                raise self._no_conductor(method)
            return None
        elif dialect is not None and method == dialect.successor:
            wrapped = unwrap(params, envelope=method)
            method, params, meta, side = wrapped.method, wrapped.params, wrapped.meta, "agent"
        return await self.dispatch(side, method, params, request, meta)

    async def dispatch(self, side: Side, method: str, params: Any, request: bool, meta: Any = None) -> Any:
        """One unwrapped message from ``side``: to its hook, or passed on; a request's result."""
        mcp = self.mcp
        if mcp is not None:
            if side == "agent" and method == MCP_MESSAGE and mcp.owns(params):
                return await mcp.handle(params) if request else None
            if side == "client" and method in _OPENERS:
                params = mcp.declare(params)
        hooks = self.app._hooks
        hook = hooks.get((side, method)) or hooks.get((side, "*"))
        if hook is None:  # (what ProxyContext.forward does, without building a context)
            send = self.to_successor if side == "client" else self.to_predecessor
            result = await send(method, params, request=request)
        else:
            ctx = ProxyContext(self, method, side, request, meta)
            fn, model = hook
            result = _wire(await fn(ctx, params if model is None else parse(model, params, name=method)))
        if mcp is not None and method == INITIALIZE and side == "client":
            mcp.agent_answered(result)
        return result

    async def handle_request(self, method: str, params: Any) -> bytes:
        return orjson.dumps(await self._handle(method, params, True))

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        await self._handle(method, params, False)
