"""The typed connection shared by both sides: registry-driven routing and calls.

A :class:`Connection` turns wire traffic into typed calls of registered handlers and typed
calls into wire traffic, using the method registry for every method's params and result
types. Unknown methods answer -32601; ``_``-prefixed extension methods reach their handlers
with their names untouched and their params as plain data.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Self

import orjson
from pydantic import BaseModel

from .._tasks import TaskSet
from ..errors import (
    CapabilityError,
    InvalidParams,
    MethodNotFound,
    SchemaValidationError,
    UsageError,
)
from ..protocol import PROTOCOL_VERSION, Protocol, get_protocol, known_versions
from ..schema._base import STRICT
from ..schema._parse import dump_json, parse, prepare
from ..schema._table import MethodInfo
from ..transports.base import Transport
from ._otel_hook import telemetry_for
from .peer import DONE, Peer, PeerLimits
from .rules import advertises

__all__ = ["Connection", "Handler", "RawJSON", "Router", "RouterFactory", "advertises"]

log = logging.getLogger("acplink.connection")

#: what a command-line user can do about a client capability an agent found missing (the
#: ``cli_message`` of its CapabilityError: the acplink client's flags, not ``check_capabilities=``)
_CLI_OFFERS = {
    "fs": " (acplink's client offers files unless --no-fs, to a remote agent only with --remote-fs; "
          "`acplink prompt` offers writes only with --allow)",
    "terminal": " (acplink's client offers terminals unless --no-terminal, to a remote agent only with "
                "--remote-terminal; `acplink prompt` only with --allow)",
}

Handler = Callable[[Any], Awaitable[Any]]


class RawJSON:
    """A result that is already wire JSON, valid by construction (acplink's own fast paths,
    e.g. the built-in ``initialize`` answer, which then needs no models at startup)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def value(self) -> Any:
        return orjson.loads(self.data)


class Router:
    """Method name → handler, for requests and for notifications.

    A handler takes the typed params (the registry's params model; plain data for
    extension methods) and returns the result (a model, a dict, or None for empty results).
    """

    def __init__(self) -> None:
        self.requests: dict[str, Handler] = {}
        self.notifications: dict[str, Handler] = {}
        #: requests whose handler takes the raw params and checks them itself (a method whose
        #: envelope has rules of its own, e.g. ``mcp/message``)
        self.raw_requests: set[str] = set()

    def copy(self) -> Router:
        """A router with the same handlers (changing one does not change the other)."""
        other = Router()
        other.requests = dict(self.requests)
        other.notifications = dict(self.notifications)
        other.raw_requests = set(self.raw_requests)
        return other

    def add_request(self, method: str, handler: Handler, *, replace: bool = False) -> None:
        if method in self.requests and not replace:
            raise UsageError(f"a handler for request {method!r} is already registered")
        self.requests[method] = handler

    def add_notification(self, method: str, handler: Handler, *, replace: bool = False) -> None:
        if method in self.notifications and not replace:
            raise UsageError(f"a handler for notification {method!r} is already registered")
        self.notifications[method] = handler


#: builds the router of a connection for one protocol version (a connection rebuilds its router
#: when ``initialize`` selects another version than the one it started with)
RouterFactory = Callable[[Protocol], Router]


class Connection:
    """A typed ACP connection. ``side`` is which side *we* are: "agent" or "client".

    ``protocol`` is the :class:`~acplink.protocol.Protocol` in use (v1 until ``initialize``
    agrees on another version); ``router`` is a :class:`Router`, or a :data:`RouterFactory`
    to serve whichever version is selected.
    """

    side: str = ""

    def __init__(
        self,
        transport: Transport,
        router: Router | RouterFactory,
        *,
        limits: PeerLimits | None = None,
        check_capabilities: bool = True,
        strict: bool = False,
        debug: bool = False,
        protocol: Protocol | None = None,
    ) -> None:
        #: the protocol version in use
        self.protocol: Protocol = protocol or get_protocol(PROTOCOL_VERSION)
        self._router_factory: RouterFactory | None = None if isinstance(router, Router) else router
        self.router = router if isinstance(router, Router) else router(self.protocol)
        self.check_capabilities = check_capabilities
        self.strict = strict
        #: whether this class has a gate to pass (the default allows all: no coroutine per request)
        self._gated = type(self).gate is not Connection.gate
        self.peer = Peer(transport, self, limits=limits, skip_noise=self.side == "client", debug=debug,
                         name=self.side or "connection", long_running=self.protocol.long_running,
                         telemetry=telemetry_for(self.side or "connection", self.protocol))
        #: what the peer advertised at initialize (AgentCapabilities or ClientCapabilities)
        self.peer_capabilities: Any = None
        #: what we advertised
        self.own_capabilities: Any = None
        #: capability -> (the capabilities object it was read from, advertised?)
        self._capability_cache: dict[str, tuple[Any, bool]] = {}
        self._warm_task: asyncio.Future[None] | None = None

    async def start(self) -> None:
        await self.peer.start()

    def select_protocol(self, version: Any) -> bool:
        """Use the protocol object of ``version`` from now on (``initialize`` agreed on it);
        False when acplink does not know that version (the current one stays)."""
        if version == self.protocol.version:
            return True
        if version not in known_versions():
            return False
        self.protocol = get_protocol(version)
        self.peer.delivery.long_running = self.protocol.long_running
        if self.peer.telemetry is not None:
            self.peer.telemetry.use_protocol(self.protocol)
        self._capability_cache.clear()
        if self._router_factory is not None:
            self.router = self._install(self._router_factory(self.protocol))
        return True

    def _install(self, router: Router) -> Router:
        """Hook: the connection's own wrappers around a freshly built router."""
        return router

    async def aclose(self) -> None:
        """Close: every task of the connection (:attr:`tasks`) is cancelled and awaited."""
        await self.peer.aclose()

    @property
    def tasks(self) -> TaskSet:
        """The task set that owns every task of this connection (its requests, its consumer,
        the work handlers start with ``Context.spawn``): closing cancels and awaits them."""
        return self.peer.tasks

    # -- warming up ----------------------------------------------------------------------------

    def warm_up(self, methods: Iterable[tuple[str, str]]) -> None:
        """Build, in the background, the models of ``methods`` ((method, "request" or
        "notification") pairs, in the order they are likely to be needed).

        Models are built lazily, and the first build of a big one takes milliseconds (tens
        for ``SessionNotification``). The connections call this right after the handshake,
        so that the first prompt does not pay for it: one model per turn of the event loop,
        traffic first. Stops when the connection closes.
        """
        if self._warm_task is not None or self.tasks.closed:
            return
        infos = [info for info in (self.protocol.info(m, kind) for m, kind in methods) if info is not None]

        async def run() -> None:
            # (even naming a type defines its classes: that too happens here, not in the caller)
            for info in infos:
                for attr in ("params_type", "result_type"):
                    await asyncio.sleep(0)  # what is already queued (e.g. a response) goes first
                    if self.closed:
                        return
                    try:
                        tp = getattr(info, attr)
                        if tp is not None:
                            prepare(tp)
                    except Exception as exc:  # a model that cannot be built fails where it is used
                        log.debug("%s: could not prepare %s of %s: %s", self.side, attr, info.method, exc)

        self._warm_task = self.tasks.spawn(run(), name=f"acplink-{self.side}-warm-up")

    def _routed(self) -> list[tuple[str, str]]:
        """The methods this side handles, notifications first (they come in floods)."""
        return ([(m, "notification") for m in self.router.notifications]
                + [(m, "request") for m in self.router.requests])

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def closed(self) -> bool:
        return self.peer.closed

    async def wait_closed(self) -> None:
        await self.peer.wait_closed()

    # -- inbound -------------------------------------------------------------------------------

    def _params(self, info: MethodInfo | None, method: str, params: Any) -> Any:
        if info is None:
            return params
        try:
            return parse(info.params_type, params if params is not None else {}, strict=self.strict,
                         name=info.params_name)
        except SchemaValidationError as exc:
            raise InvalidParams(f"Invalid params for {method}: {exc.message}", exc.data) from None

    #: the params of a notification that did not come typed: ``_params`` here, a side may add
    #: its own handling (the client's invalid-update hook) without a frame on every request
    _notification_params = _params

    def _result_json(self, info: MethodInfo | None, method: str, result: Any) -> bytes:
        if type(result) is RawJSON:
            return result.data
        if info is None or info.result_type is None:
            return dump_json(result) if result is not None else b"null"
        if result is None:
            result = {}
        if isinstance(result, BaseModel):
            rt = info.result_type
            if isinstance(rt, type) and not isinstance(result, rt):
                raise UsageError(f"the {method} handler returned {type(result).__name__}, expected {rt.__name__}")
            return dump_json(result)
        try:
            return dump_json(parse(info.result_type, result, name=info.result_name))
        except SchemaValidationError as exc:
            raise UsageError(f"the {method} handler returned an invalid result: {exc.message}") from None

    async def gate(self, method: str) -> None:
        """Hook: raise before handling ``method`` (e.g. before initialize). Default: allow."""

    async def handle_request(self, method: str, params: Any) -> bytes:
        router = self.router
        handler = router.requests.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}", {"method": method})
        if self._gated:
            await self.gate(method)
        if method in router.raw_requests:  # (an envelope with rules of its own: its handler checks it)
            return self._result_json(None, method, await handler(params))
        info = self.protocol.info(method, "request")
        typed = self._params(info, method, params)
        result = await handler(typed)
        return self._result_json(info, method, result)

    def handle_notification(self, method: str, params: Any, typed: bool = False) -> Awaitable[None]:
        """Route one notification; returns the handler's awaitable (no extra coroutine frame:
        this runs once per message of a flood)."""
        handler = self.router.notifications.get(method)
        if handler is None:
            if not method.startswith(("_", "$/")):
                log.debug("%s: no handler for notification %s", self.side, method)
            return DONE
        if not typed:
            params = self._notification_params(self.protocol.info(method, "notification"), method, params)
        return handler(params)

    def enable_fast_path(self, method: str) -> None:
        """Decode ``method`` notifications straight from their bytes into the typed model
        (one pass in pydantic-core instead of JSON parse + validate), right before each is
        handled. Used for ``session/update`` by the client side; anything unusual falls back
        to the general path."""
        info = self.protocol.info(method, "notification")
        if info is None:
            return
        tp = info.params_type
        ctx = STRICT if self.strict else None
        if not (isinstance(tp, type) and issubclass(tp, BaseModel)):
            return
        engine = self.peer.engine

        def first(data: bytes) -> Any:
            # the model is built on first use (or by warm_up), not when the connection is made
            validate = tp.__pydantic_validator__.validate_json
            # strict: the leniency rules off (context) and pydantic's strict types, as in parse()
            decode = validate if ctx is None else (lambda data: validate(data, strict=True, context=ctx))
            engine.add_fast_notification(method, decode)
            return decode(data)

        engine.add_fast_notification(method, first)

    # -- outbound ------------------------------------------------------------------------------

    def _check_capability(self, info: MethodInfo | None, method: str) -> None:
        if not self.check_capabilities or info is None or info.capability is None:
            return
        who, path = info.capability.split(":", 1)
        caps = self.peer_capabilities if who != self.side else self.own_capabilities
        if caps is None:
            return  # not initialized yet: nothing to check against
        hit = self._capability_cache.get(info.capability)
        if hit is not None and hit[0] is caps:
            allowed = hit[1]
        else:
            allowed = advertises(caps, path)
            self._capability_cache[info.capability] = (caps, allowed)
        if not allowed:
            owner = "client" if who == "client" else "agent"
            why = f"{method} needs the {owner} capability {path!r}, which it did not advertise"
            raise CapabilityError(f"{why} (pass check_capabilities=False to call it anyway)",
                                  capability=info.capability, cli_message=why + _CLI_OFFERS.get(path.split(".")[0], ""))

    def _params_value(self, info: MethodInfo | None, method: str, params: Any, fields: dict[str, Any]) -> Any:
        """The params of an outgoing message: its typed model for a registered method."""
        if params is not None and fields:
            raise UsageError("pass either a params model or keyword fields, not both")
        if params is None:
            params = fields
        if isinstance(params, dict) and info is not None:
            try:
                params = parse(info.params_type, params, name=info.params_name)
            except SchemaValidationError as exc:
                raise UsageError(f"bad params for {method}: {exc.message}") from None
        return params

    @staticmethod
    def _to_json(params: Any) -> bytes:
        if isinstance(params, BaseModel):
            return params.__pydantic_serializer__.to_json(params, by_alias=True, exclude_unset=True)
        return orjson.dumps(params)

    def _params_json(self, info: MethodInfo | None, method: str, params: Any, fields: dict[str, Any]) -> bytes:
        return self._to_json(self._params_value(info, method, params, fields))

    async def _call(self, method: str, params: Any, fields: dict[str, Any], *, timeout: float | None = None) -> Any:
        method = self.protocol.send_name(method)
        info = self.protocol.info(method, "request")
        self._check_capability(info, method)
        return await self._request(info, method, self._params_json(info, method, params, fields), timeout)

    async def _request(self, info: MethodInfo | None, method: str, params_json: bytes,
                       timeout: float | None, on_result: Callable[[Any], Any] | None = None) -> Any:
        """Send a request; ``on_result`` (see Peer.request) gets the typed result, in order."""
        if on_result is not None:
            def typed(raw: Any) -> Any:
                return on_result(self._parse_result(info, raw))

            return await self.peer.request(method, params_json, timeout=timeout, on_result=typed)
        call = self.peer.request(method, params_json, timeout=timeout)
        del params_json  # (not held while the call is in flight: see Peer.request)
        return self._parse_result(info, await call)

    def _parse_result(self, info: MethodInfo | None, raw: Any) -> Any:
        if info is None or info.result_type is None:
            return raw
        return parse(info.result_type, raw if raw is not None else {}, strict=self.strict, name=info.result_name)

    async def _notify(self, method: str, params: Any, fields: dict[str, Any]) -> None:
        method = self.protocol.send_name(method)
        info = self.protocol.info(method, "notification")
        self._check_capability(info, method)
        await self.peer.notify(method, self._params_json(info, method, params, fields))

    async def notify_json(self, method: str, params_json: bytes) -> None:
        """Send a notification whose params are ready-made wire JSON (the caller vouches for
        their validity; used by acplink's own fast paths such as ``PromptContext.send_text``)."""
        info = self.protocol.info(method, "notification")
        if info is not None and info.capability is not None:  # (session/update needs none: no call)
            self._check_capability(info, method)
        await self.peer.notify(method, params_json)

    async def request_json(self, method: str, params_json: bytes, *, timeout: float | None = None) -> Any:
        """Send a request whose params are ready-made wire JSON (the caller vouches for their
        validity; acplink's own fast paths such as ``PromptContext.read_file``); the result is
        validated into its typed model as usual."""
        info = self.protocol.info(method, "request")
        self._check_capability(info, method)
        call = self.peer.request(method, params_json, timeout=timeout)
        del params_json  # (not held while the call is in flight: see Peer.request)
        return self._parse_result(info, await call)

    async def call(self, method: str, params: Any = None, *, timeout: float | None = None, **fields: Any) -> Any:
        """Send any request: typed through the registry, raw for extension methods."""
        return await self._call(method, params, fields, timeout=timeout)

    async def notify(self, method: str, params: Any = None, **fields: Any) -> None:
        """Send any notification: typed through the registry, raw for extension methods."""
        await self._notify(method, params, fields)
