"""The conductor: runs a chain of ACP components (proxies, then an agent) behind one connection.

The client (an editor) talks to the conductor as to an agent. On the client's first
``initialize`` the conductor starts the components and initializes them in chain order:
``proxy/initialize`` to each component that has a successor, ``initialize`` to the last one.
Then it routes every message, each over the connection of the component it concerns:

* a component's plain messages are its traffic with its predecessor (the client, or the
  previous proxy, to which they go wrapped in ``proxy/successor``);
* a proxy's ``proxy/successor`` messages are its traffic with its successor: unwrapped, they go
  to the next component as plain messages, and what comes back is wrapped again.

Each connection is a :class:`~acplink.connection.peer.Peer` with its own ids, so a forwarded
request gets a fresh id on each hop; ``$/cancel_request`` stays on its hop (cancelling a
request cancels the forwarded request it caused, on the next hop, and nothing else, and its
answer is awaited and passed back: ``_order.call_through``); each hop
keeps its notifications in order, and a response is forwarded only after the notifications
that came before it. Backpressure is each connection's own (a component that floods its
neighbour is held like any peer).

The conductor pins the protocol version (the client's, capped at the newest acplink speaks)
and checks the answers: a proxy that changes ``protocolVersion``, or answers
``proxy/initialize`` without having initialized its successor, fails the client's
``initialize`` naming it; a proxy that forwards ``proxy/initialize`` instead of ``initialize``
is refused (``-32600``). A component that answers ``proxy/initialize`` with ``-32601`` is
asked again with the older ``_proxy/*`` names, which it then keeps.

Errors the conductor makes itself (a component that exited, did not start, did not answer in
time, broke the rules) are ``-32603`` whose ``data`` has a ``conductor`` member naming the
component; a wrapped error comes back unchanged. A component that exits fails the calls
pending on it at once, and the chain shuts down.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import IO, Any

import orjson

from .._tasks import TaskSet
from ..connection._otel_hook import telemetry_for
from ..connection._relay import Route
from ..connection.peer import Peer, PeerLimits
from ..errors import (
    InternalError,
    InvalidRequest,
    MethodNotFound,
    RequestError,
    RequestTimeout,
    TransportError,
    UsageError,
)
from ..methods import INITIALIZE
from ..protocol import PROTOCOL_VERSION, get_protocol, known_versions
from ..protocol.proxy import DIALECTS, MODERN, Dialect, dialect_of, unwrap, wrap
from ..transports.base import Transport
from ..transports.memory import memory_pair
from ..transports.subprocess import SubprocessTransport
from ._inprocess import InProcessProxy, drivable
from ._order import OrderGate, call_through, forward_notification
from .trace import TraceWriter

__all__ = ["Component", "Conductor"]

log = logging.getLogger("acplink.conductor")

#: how long the answers to the client may take to go out once a component has exited
_SETTLE = 1.0


class Component:
    """One component of a chain: a command line to spawn, or a proxy served in this process
    (``serve``: runs the component over the transport it is given, until it closes). A
    ``ProxyApp``'s own ``serve`` is not called: the conductor drives that proxy directly
    (``_inprocess.py``), unless OpenTelemetry is configured (then its connection's spans)."""

    def __init__(self, command: Sequence[str] | None = None, *,
                 serve: Callable[[Transport], Awaitable[None]] | None = None, name: str | None = None,
                 env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None) -> None:
        if (command is None) == (serve is None):
            raise UsageError("a Component is a command line or an in-process serve function (one of them)")
        if command is not None and not command:
            raise UsageError("a Component's command line is empty")
        self.command = list(command) if command is not None else None
        self.serve = serve
        self.env = env
        self.cwd = cwd
        self.name = name or (shlex.join(self.command) if self.command else getattr(serve, "__name__", "component"))

    def __repr__(self) -> str:
        return f"Component({self.name!r})"


class _Node:
    """A started component: its place in the chain, its connection, what it answered."""

    def __init__(self, index: int, component: Component, label: str, has_successor: bool) -> None:
        self.index = index
        self.component = component
        self.label = label
        self.has_successor = has_successor
        self.dialect: Dialect = MODERN
        self.peer: Peer | None = None
        self.transport: Transport | None = None
        #: a ProxyApp of this process the conductor drives directly (no connection: see _inprocess.py)
        self.direct: InProcessProxy | None = None
        #: the answers it sent that are not forwarded yet (see _order.py)
        self.gate = OrderGate()


class Conductor:
    """Runs ``components`` (proxies in chain order, the agent last) behind one connection.

    ``as_proxy``: the conductor is itself a proxy of an outer chain (every component is a
    proxy, and the last one's successor is the outer conductor's). ``trace``: a binary file the
    hop messages are written to (see :mod:`acplink.proxy.trace`). ``request_timeout``: seconds
    a component may take to answer a forwarded request (``None``: no limit);
    ``initialize_timeout`` the same for the ``initialize`` of the chain.
    """

    def __init__(self, components: Sequence[Component | Sequence[str]], *, as_proxy: bool = False,
                 trace: IO[bytes] | None = None, request_timeout: float | None = None,
                 initialize_timeout: float | None = 60.0, limits: PeerLimits | None = None,
                 debug: bool = False) -> None:
        comps = [c if isinstance(c, Component) else Component(c) for c in components]
        if not comps:
            raise UsageError("a chain needs at least one component (the agent)")
        self.components = comps
        self.as_proxy = as_proxy
        self.request_timeout = request_timeout
        self.initialize_timeout = initialize_timeout
        self.debug = debug
        # a forwarded request may wait on anything downstream (a prompt, the user): no slot limit
        # beyond the connection's bound on requests at once
        self.limits = limits or PeerLimits(max_running_requests=10_000, max_concurrent_requests=10_000)
        self.trace = TraceWriter(trace) if trace is not None else None
        last = len(comps) - 1
        self.nodes = [_Node(i, c, "agent" if i == last and not as_proxy else f"proxy:{i}",
                            i < last or as_proxy) for i, c in enumerate(comps)]
        #: the initialize answer of each node that was initialized (len(nodes): the outer successor)
        self.answers: dict[int, Any] = {}
        #: the protocol version pinned by the client's initialize
        self.version: int | None = None
        #: the dialect the outer conductor initialized us with (as_proxy)
        self.upstream_dialect: Dialect = MODERN
        #: why the chain stopped, when a component did (one line naming it)
        self.failure: str | None = None
        self.upstream: Peer | None = None
        self.upstream_gate = OrderGate()
        self.tasks = TaskSet("conductor")
        self._started: asyncio.Future[None] | None = None
        self._stop = asyncio.Event()
        self._closed = False

    # -- labels and errors ---------------------------------------------------------------------

    def label(self, index: int) -> str:
        if index < 0:
            return "client"
        if index >= len(self.nodes):
            return "successor"
        return self.nodes[index].label

    def gate(self, index: int) -> OrderGate:
        """The order gate of the connection node ``index`` talks to us over."""
        return self.nodes[index].gate if 0 <= index < len(self.nodes) else self.upstream_gate

    def own_error(self, index: int, what: str) -> InternalError:
        """An error of the conductor's own, about node ``index``."""
        if 0 <= index < len(self.nodes):
            node = self.nodes[index]
            who = f"{node.label} {node.component.name!r}"
            data = {"conductor": {"component": node.component.name, "role": node.label}}
        else:
            who = self.label(index)
            data = {"conductor": {"role": who}}
        return InternalError(f"acplink conductor: {who} {what}", data)

    def _gone(self, index: int) -> str:
        node = self.nodes[index] if 0 <= index < len(self.nodes) else None
        rc = getattr(node.transport, "returncode", None) if node is not None else None
        return f"exited with code {rc}" if rc is not None else "closed its connection (it exited or crashed)"

    # -- running -------------------------------------------------------------------------------

    async def serve(self, transport: Transport) -> None:
        """Serve the chain to the client on ``transport`` until the client hangs up or a
        component exits; then stop every component."""
        self.upstream = Peer(transport, _Upstream(self), limits=self.limits, debug=self.debug, name="conductor",
                             telemetry=_telemetry("agent"))
        await self.upstream.start()
        try:
            async with TaskSet("conductor wait") as scope:
                closed = scope.spawn(self.upstream.wait_closed())
                stopped = scope.spawn(self._stop.wait())
                await asyncio.wait((closed, stopped), return_when=asyncio.FIRST_COMPLETED)
            if self.failure is not None:
                await self._settle()
        finally:
            await self.aclose()

    async def _settle(self) -> None:
        """Let the answers to the client's pending requests (the failures) go out, briefly."""
        upstream = self.upstream
        if upstream is None:
            return
        running = [t for t in upstream.tasks.keyed.values() if not t.done()]
        if running:
            await asyncio.wait(running, timeout=_SETTLE)

    async def aclose(self) -> None:
        """Stop every component (stdin closed, then the shutdown ladder) and close."""
        if self._closed:
            return
        self._closed = True
        peers = [n.peer for n in self.nodes if n.peer is not None]
        if self.upstream is not None:
            self.upstream.transport.flush()
        await asyncio.gather(*(p.aclose() for p in peers), return_exceptions=True)
        await self.tasks.aclose()
        for node in self.nodes:
            if node.direct is not None:  # a proxy driven in this process: release what it holds
                await node.direct.app.run_closers(node.direct.state)
        if self.upstream is not None:
            await self.upstream.aclose()
        if self.trace is not None:
            self.trace.close()

    def _component_gone(self, index: int) -> None:
        if self.failure is None and not self._closed:
            self.failure = f"{self.label(index)} {self.nodes[index].component.name!r} {self._gone(index)}"
            log.warning("acplink conductor: %s; stopping the chain", self.failure)
        self._stop.set()

    async def _ensure_started(self) -> None:
        """Start every component (once; the first initialize does it)."""
        if self._started is None:
            self._started = asyncio.get_running_loop().create_future()
            try:
                for node in self.nodes:
                    await self._start(node)
            except BaseException as exc:
                self._started.set_exception(exc)
                self._started.exception()  # (retrieved: later callers re-raise it)
                self._stop.set()
                raise
            self._started.set_result(None)
        else:
            await asyncio.shield(self._started)

    async def _start(self, node: _Node) -> None:
        comp = node.component
        app = drivable(comp.serve) if comp.serve is not None and node.has_successor else None
        if app is not None and _telemetry("proxy") is None:  # (with OpenTelemetry: its connection's spans)
            node.direct = InProcessProxy(app, self, node.index)
            return
        if comp.command is not None:
            transport: Transport = SubprocessTransport(comp.command, env=comp.env, cwd=comp.cwd)
        else:
            transport, theirs = memory_pair()
            assert comp.serve is not None
            self.tasks.spawn(comp.serve(theirs), name=f"acplink-proxy-{comp.name}")
        node.transport = transport
        node.peer = peer = Peer(transport, _Hop(self, node.index), limits=self.limits, debug=self.debug,
                                name=f"conductor {node.label}", telemetry=_telemetry("client"))
        try:
            await peer.start()
        except TransportError as exc:
            spawn = getattr(transport, "spawn_error", None)
            why = spawn.strerror if spawn is not None and spawn.strerror else str(exc)
            self.failure = f"cannot start {node.label} {comp.name!r}: {why}"
            raise self.own_error(node.index, f"cannot start: {why}") from None
        self.tasks.spawn(self._watch(node.index, peer), name=f"acplink-conductor-watch-{node.index}")

    async def _watch(self, index: int, peer: Peer) -> None:
        await peer.wait_closed()
        self._component_gone(index)

    # -- routing -------------------------------------------------------------------------------

    def _route(self, src: int, dst: int, method: str, params: Any) -> tuple[Peer, str, Any]:
        """The connection, wire method and wire params that carry a message from node ``src``
        to its neighbour ``dst`` (-1: the client; len(nodes): a nested conductor's successor)."""
        if dst < 0:
            assert self.upstream is not None
            return self.upstream, method, params
        if dst >= len(self.nodes):  # (as_proxy: our successor is reached through our conductor)
            assert self.upstream is not None
            return self.upstream, self.upstream_dialect.successor, wrap(method, params)
        node = self.nodes[dst]
        if node.peer is None or node.peer.closed:
            raise self.own_error(dst, self._gone(dst) if node.peer is not None else "was not started")
        if src < dst:  # going down: the component's predecessor speaks plainly
            return node.peer, method, params
        return node.peer, node.dialect.successor, wrap(method, params)  # up: from its successor

    def _direct(self, index: int) -> InProcessProxy | None:
        """The in-process proxy driven directly at node ``index`` (None: a connection)."""
        return self.nodes[index].direct if 0 <= index < len(self.nodes) else None

    def relay_route(self, src: int, dst: int, method: str, params: Any) -> Route | None:
        """Where a request from node ``src`` for node ``dst`` is relayed without a task
        (``connection/_relay.py``): to the connection of the first node on the way that is not an
        in-process proxy passing the method straight on. None: forwarded by :meth:`call` (a
        trace or a timeout to keep, a proxy hook on the way, a node not ready)."""
        if self.trace is not None or self.request_timeout is not None:
            return None
        step = 1 if dst > src else -1
        while (direct := self._direct(dst)) is not None:
            if not direct.passes(src < dst, method) or (src < dst and dst + 1 not in self.answers):
                return None
            src, dst = dst, dst + step
        node = self.nodes[dst] if 0 <= dst < len(self.nodes) else None
        if node is not None and (node.peer is None or node.peer.closed):
            return None  # (call() says what became of it)
        peer, wmethod, wparams = self._route(src, dst, method, params)
        return Route(peer, wmethod, None if wparams is None else orjson.dumps(wparams),
                     functools.partial(self._relay_failed, dst))

    def _relay_failed(self, dst: int, exc: BaseException) -> BaseException:
        """A relayed request's connection failed it (see :meth:`call`)."""
        return self.own_error(dst, self._gone(dst)) if isinstance(exc, TransportError) else exc

    async def request(self, src: int, dst: int, method: str, params: Any) -> bytes:
        """Forward a request from node ``src`` to node ``dst``; the JSON of its result."""
        return orjson.dumps(await self.call(src, dst, method, params))

    async def call(self, src: int, dst: int, method: str, params: Any, *, wire_method: str | None = None,
                   timeout: float | None = None) -> Any:
        """Forward a request from node ``src`` to node ``dst``; its result (JSON values)."""
        direct = self._direct(dst)
        if direct is None:
            peer, wmethod, wparams = self._route(src, dst, method, params)
            if wire_method is not None:  # (proxy/initialize: the message is the method itself)
                wmethod, wparams = wire_method, params
        trace = self.trace
        tid = 0
        if trace is not None:
            tid = trace.new_id()
            trace.request(self.label(src), self.label(dst), tid, wire_method or method, params)
        limit = timeout if timeout is not None else self.request_timeout
        if direct is not None:
            try:
                result = await direct.call(src < dst, method, params, limit)
            except RequestError as exc:
                if trace is not None:
                    trace.response(self.label(dst), self.label(src), tid, exc.to_wire(), True)
                raise
            if trace is not None:
                trace.response(self.label(dst), self.label(src), tid, result, False)
            return result
        held: list[asyncio.Future[None] | None] = [None]
        gate = self.gate(dst)
        try:
            result = await call_through(peer, self.tasks, wmethod, None if wparams is None else orjson.dumps(wparams),
                                        timeout=limit, on_result=gate.hooked(held))
        except RequestError as exc:
            if trace is not None:
                trace.response(self.label(dst), self.label(src), tid, exc.to_wire(), True)
            raise
        except RequestTimeout:
            raise self.own_error(dst, f"did not answer {method} within {limit:g} s") from None
        except TransportError:
            raise self.own_error(dst, self._gone(dst)) from None
        finally:  # (the caller writes the answer in this same step: nothing behind it overtakes it)
            gate.release(held[0])
        if trace is not None:
            trace.response(self.label(dst), self.label(src), tid, result, False)
        return result

    async def notify(self, src: int, dst: int, method: str, params: Any) -> None:
        """Forward a notification from node ``src`` to node ``dst``."""
        direct = self._direct(dst)
        if direct is not None:
            if self.trace is not None:
                self.trace.notification(self.label(src), self.label(dst), method, params)
            await direct.notify(src < dst, method, params)
            return
        try:
            peer, wmethod, wparams = self._route(src, dst, method, params)
        except RequestError as exc:
            log.debug("acplink conductor: %s dropped: %s", method, exc)
            return
        if self.trace is not None:
            self.trace.notification(self.label(src), self.label(dst), method, params)
        try:
            await forward_notification(peer, wmethod, None if wparams is None else orjson.dumps(wparams))
        except TransportError as exc:  # (the component is gone: its watcher stops the chain)
            log.debug("acplink conductor: %s to %s dropped: %s", method, self.label(dst), exc)

    # -- initialize ----------------------------------------------------------------------------

    def _pin(self, params: Any) -> Any:
        """``params`` with the pinned protocol version (pinned by the first initialize)."""
        if not isinstance(params, dict):
            return params
        requested = params.get("protocolVersion")
        if self.version is None:
            # the client's version when acplink speaks it; otherwise acplink's stable one (a newer
            # draft's params have another shape: the client's would not fit it)
            known = isinstance(requested, int) and not isinstance(requested, bool) and requested in known_versions()
            self.version = requested if known else PROTOCOL_VERSION
        if requested != self.version:
            params = {**params, "protocolVersion": self.version}
        return params

    async def initialize(self, src: int, dst: int, params: Any) -> bytes:
        """``initialize`` from node ``src`` for its successor ``dst``: ``proxy/initialize`` to a
        component with a successor (in its dialect), ``initialize`` otherwise; the answer checked."""
        return orjson.dumps(await self._initialize(src, dst, params))

    async def _initialize(self, src: int, dst: int, params: Any) -> Any:
        if src < 0:
            await self._ensure_started()
        params = self._pin(params)
        if dst >= len(self.nodes) or not self.nodes[dst].has_successor:
            result = await self.call(src, dst, INITIALIZE, params, timeout=self.initialize_timeout)
            self.answers[dst] = result
            return result
        node = self.nodes[dst]
        for dialect in DIALECTS:
            try:
                result = await self.call(src, dst, INITIALIZE, params, wire_method=dialect.initialize,
                                          timeout=self.initialize_timeout)
            except MethodNotFound:
                if dialect is DIALECTS[-1]:
                    raise self.own_error(dst, "does not know proxy/initialize nor _proxy/initialize "
                                              "(is it a proxy?)") from None
                continue
            node.dialect = dialect
            break
        successor = self.answers.get(dst + 1)
        if successor is None:
            raise self.own_error(dst, "answered proxy/initialize without initializing its successor "
                                      "(a proxy must forward initialize through proxy/successor first)")
        theirs = result.get("protocolVersion") if isinstance(result, dict) else None
        expected = successor.get("protocolVersion") if isinstance(successor, dict) else None
        if theirs != expected:
            raise self.own_error(dst, f"changed protocolVersion from {expected!r} to {theirs!r} "
                                      "(a proxy must not change it)")
        self.answers[dst] = result
        return result

    async def successor_call(self, index: int, envelope: str, method: str, params: Any) -> Any:
        """A request proxy ``index`` sends its successor (unwrapped from ``envelope``); its result."""
        inner = dialect_of(method)
        if inner is not None and method == inner.initialize:
            raise InvalidRequest(f"{envelope} wrapping {method}: a proxy forwards initialize to its "
                                 "successor, not proxy/initialize (the conductor decides who is a proxy)")
        if method == INITIALIZE:
            return await self._initialize(index, index + 1, params)
        if index + 1 not in self.answers:
            raise InvalidRequest(f"{envelope} wrapping {method} before the successor was initialized: "
                                 "forward initialize first")
        return await self.call(index, index + 1, method, params)


def _telemetry(side: str) -> Any:
    """The OpenTelemetry of one of the conductor's connections (None: not configured): each
    hop's spans, the context of the message it handles passed on in what it forwards."""
    return telemetry_for(side, get_protocol(PROTOCOL_VERSION))


def _plain(params: Any, envelope: str) -> tuple[str, Any] | None:
    """The method and params a ``proxy/successor`` envelope carries, when the message may be
    relayed (None: a broken envelope or a wrapped initialize, which the task path answers)."""
    try:
        wrapped = unwrap(params, envelope=envelope)
    except RequestError:
        return None
    if wrapped.method == INITIALIZE or dialect_of(wrapped.method) is not None:
        return None
    return wrapped.method, wrapped.params


def _not_initialize_first(method: str) -> InvalidRequest:
    return InvalidRequest(f"{method} before initialize: the conductor starts the chain on initialize; "
                          "send initialize first")


class _Upstream:
    """What the client (or, nested, the outer conductor) sends the conductor."""

    def __init__(self, conductor: Conductor) -> None:
        self.c = conductor

    def route_request(self, method: str, params: Any) -> Route | None:
        c = self.c
        if c.upstream_gate.holding or c._started is None or not c._started.done() or method == INITIALIZE:
            return None
        dialect = dialect_of(method)
        if dialect is None:
            return c.relay_route(-1, 0, method, params)
        if c.as_proxy and method == dialect.successor:  # from our successor: up the chain
            inner = _plain(params, method)
            return None if inner is None else c.relay_route(len(c.nodes), len(c.nodes) - 1, *inner)
        return None

    async def handle_request(self, method: str, params: Any) -> bytes:
        c = self.c
        if c.upstream_gate.holding:
            await c.upstream_gate.wait()
        dialect = dialect_of(method)
        if c.as_proxy:
            if dialect is not None and method == dialect.initialize:
                c.upstream_dialect = dialect
                return await c.initialize(-1, 0, params)
            if dialect is not None and method == dialect.successor:  # from our successor: up the chain
                wrapped = unwrap(params, envelope=method)
                return await c.request(len(c.nodes), len(c.nodes) - 1, wrapped.method, wrapped.params)
            if method == INITIALIZE:
                raise InvalidRequest("this conductor runs as a proxy (--as-proxy): it expects "
                                     "proxy/initialize from a conductor, not initialize")
        elif method == INITIALIZE:
            return await c.initialize(-1, 0, params)
        if c._started is None:
            raise _not_initialize_first(method)
        return await c.request(-1, 0, method, params)

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        c = self.c
        if c.upstream_gate.holding:
            await c.upstream_gate.wait()
        dialect = dialect_of(method)
        if c.as_proxy and dialect is not None and method == dialect.successor:
            wrapped = unwrap(params, envelope=method)
            await c.notify(len(c.nodes), len(c.nodes) - 1, wrapped.method, wrapped.params)
            return
        if c._started is not None:
            await c.notify(-1, 0, method, params)


class _Hop:
    """What component ``index`` sends the conductor."""

    def __init__(self, conductor: Conductor, index: int) -> None:
        self.c = conductor
        self.index = index

    def route_request(self, method: str, params: Any) -> Route | None:
        c, i = self.c, self.index
        node = c.nodes[i]
        if node.gate.holding:
            return None
        dialect = dialect_of(method)
        if dialect is None:
            return c.relay_route(i, i - 1, method, params)  # to its predecessor
        if method != dialect.successor or not node.has_successor or i + 1 not in c.answers:
            return None
        inner = _plain(params, method)
        return None if inner is None else c.relay_route(i, i + 1, *inner)

    async def handle_request(self, method: str, params: Any) -> bytes:
        c, i = self.c, self.index
        gate = c.nodes[i].gate
        if gate.holding:
            await gate.wait()
        dialect = dialect_of(method)
        if dialect is None or method != dialect.successor or not c.nodes[i].has_successor:
            return await c.request(i, i - 1, method, params)  # to its predecessor
        wrapped = unwrap(params, envelope=method)
        return orjson.dumps(await c.successor_call(i, method, wrapped.method, wrapped.params))

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        c, i = self.c, self.index
        gate = c.nodes[i].gate
        if gate.holding:
            await gate.wait()
        dialect = dialect_of(method)
        if dialect is not None and method == dialect.successor and c.nodes[i].has_successor:
            wrapped = unwrap(params, envelope=method)
            await c.notify(i, i + 1, wrapped.method, wrapped.params)
        else:
            await c.notify(i, i - 1, method, params)
