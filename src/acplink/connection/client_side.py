"""The client's end of a connection: handles client methods, calls agent methods.

Which calls there are is the protocol's: :attr:`ClientSideConnection.calls` is the typed call
stubs of the agent's methods in the version in use (``Protocol.agent_stubs``), rebuilt when
``initialize`` selects another version; ``conn.session_prompt(...)`` reaches them. Every call
goes through the one typed path (:meth:`Connection.call`: the method table's types and the
agent's advertised capabilities), whatever the version.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import InvalidParams, ProtocolError, RequestError, SchemaValidationError, UsageError
from ..protocol import Protocol, get_protocol, known_versions
from ..schema import _generated as s
from ..schema._parse import parse
from ..schema._table import MethodInfo
from .base import Connection

if TYPE_CHECKING:  # (imported when a handshake runs: an agent, which imports this module, never does)
    from ..protocol.initialize import Agreed, Handshake

__all__ = ["ClientSideConnection"]

log = logging.getLogger("acplink.client")

#: ``(method, params model, result model)`` of a session-opening call, see ``on_session_opened``
SessionOpened = Callable[[str, Any, Any], None]

#: the stubs class bound to a connection, by the protocol's stubs class
_BOUND: dict[type, type] = {}


def _calls(conn: ClientSideConnection, protocol: Protocol) -> Any:
    """The protocol's typed call stubs (``Protocol.agent_stubs``), sending through ``conn``."""
    stubs = protocol.agent_stubs
    bound = _BOUND.get(stubs)
    if bound is None:
        def call(self: Any, method: str, params: Any, fields: dict[str, Any]) -> Any:
            return self._conn._call(method, params, fields)

        def notify(self: Any, method: str, params: Any, fields: dict[str, Any]) -> Any:
            return self._conn._notify(method, params, fields)

        def init(self: Any, owner: ClientSideConnection) -> None:
            self._conn = owner

        bound = _BOUND[stubs] = type(f"Bound{stubs.__name__}", (stubs,),
                                     {"__init__": init, "_call": call, "_notify": notify})
        for name in dir(stubs):  # conn.session_new: the stub of the protocol in use
            if not name.startswith("_") and not hasattr(ClientSideConnection, name):
                setattr(ClientSideConnection, name, _Stub(name))
    return bound(conn)


class _Stub:
    """A typed call on the connection, found on its :attr:`~ClientSideConnection.calls` (the
    protocol in use): a class attribute, so that the connection's other attributes are looked
    up as usual (a ``__getattr__`` would slow down every one of them)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        return getattr(obj.calls, self.name)


def session_of(params: Any, fields: dict[str, Any]) -> str | None:
    """The ``sessionId`` of a call's params (a model, a wire dict, or keyword fields)."""
    sid = fields.get("session_id", fields.get("sessionId"))
    if sid is None and params is not None:
        sid = params.get("sessionId") if isinstance(params, dict) else getattr(params, "session_id", None)
    return sid if isinstance(sid, str) else None


def _field(model: Any, alias: str) -> Any:
    """The value of the field of ``model`` whose wire name is ``alias``."""
    if isinstance(model, dict):
        return model.get(alias)
    for name, info in type(model).model_fields.items():
        if (info.alias or name) == alias:
            return getattr(model, name)
    return None


class ClientSideConnection(Connection):
    """What a client holds: typed calls of every agent method, routing of client methods.

    After :meth:`initialize` (or :meth:`handshake`) the agent's capabilities are in
    :attr:`peer_capabilities`, and calling a method the agent did not advertise raises
    :class:`CapabilityError`.
    """

    side = "client"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        #: the typed calls of the agent's methods in the protocol in use (``conn.session_new``
        #: is ``conn.calls.session_new``)
        self.calls: Any = _calls(self, self.protocol)
        self.enable_fast_path(self.protocol.wire("session_update"))
        #: called with (method, params, result) when the result of a ``session/new``,
        #: ``session/load``, ``session/resume`` or ``session/fork`` call is processed: in
        #: arrival order, before any message that came after the response is handled (so a
        #: ``session/update`` written right behind the response finds the session it opened).
        #: The result is already typed; what the hook raises fails the call.
        self.on_session_opened: SessionOpened | None = None
        #: called with (session id, params) right before a prompt goes out, however it is sent
        self.on_prompt: Callable[[str, Any], None] | None = None
        #: called with the session id right before a cancel of its turn goes out
        self.on_cancel: Callable[[str], None] | None = None
        #: called with (params, error) for a ``session/update`` that does not match the schema
        #: (which is then logged and dropped)
        self.on_invalid_update: Callable[[Any, InvalidParams], None] | None = None

    agent_info: s.Implementation | None = None
    auth_methods: list[Any] = []  # noqa: RUF012  (replaced per instance at initialize)
    protocol_version: int | None = None
    #: the agent's ``initialize`` answer (the typed ``InitializeResponse`` of the version agreed)
    initialize_response: Any = None

    if TYPE_CHECKING:  # (at run time: the _Stub class attributes, see _calls)
        def __getattr__(self, name: str) -> Any: ...

    def select_protocol(self, version: Any) -> bool:
        before = self.protocol
        selected = super().select_protocol(version)
        if self.protocol is not before:
            self.calls = _calls(self, self.protocol)
            self.enable_fast_path(self.protocol.wire("session_update"))
        return selected

    def _notification_params(self, info: MethodInfo | None, method: str, params: Any) -> Any:
        # (only the notifications that did not come typed through the fast path get here: not
        # the update flood, and no request)
        try:
            return Connection._params(self, info, method, params)
        except InvalidParams as exc:
            hook = self.on_invalid_update
            if hook is not None and info is not None and self.protocol.is_(method, "session_update"):
                error: InvalidParams = exc
                try:  # (the schema's own error: it names the path)
                    parse(info.params_type, params if params is not None else {}, name=info.params_name)
                except SchemaValidationError as detailed:
                    error = detailed
                hook(params, error)
            raise

    # -- initialize ----------------------------------------------------------------------------

    async def handshake(self, handshake: Handshake, *, timeout: float | None = None) -> Any:
        """Run ``initialize`` as ``handshake`` decides (the version choice, see
        :class:`acplink.protocol.initialize.Handshake`); the typed answer. The connection goes
        on with the version agreed."""
        method = self.protocol.wire("initialize")
        body = handshake.request()
        while True:
            try:
                raw = await self.peer.request(method, orjson.dumps(body), timeout=timeout)
            except RequestError as exc:
                retry = handshake.on_error(exc.code, exc.data)
                if retry is None:
                    raise
                log.debug("%s (%s)", retry.note, exc)
                body = retry.body
                continue
            outcome = handshake.on_result(raw)
            from ..protocol.initialize import Refused

            if isinstance(outcome, Refused):
                raise ProtocolError(outcome.message)
            if outcome.note:
                log.debug("%s", outcome.note)
            self._agreed(outcome)
            return outcome.result

    def _agreed(self, agreed: Agreed) -> None:
        """The bookkeeping of an ``initialize`` answered: the capabilities and names of both
        sides, then the version agreed."""
        proto, result = agreed.protocol, agreed.result
        self.own_capabilities = agreed.capabilities
        self.initialize_response = result
        self.peer_capabilities = _field(result, proto.capabilities_field[0])
        info = _field(result, proto.info_field[0])
        self.agent_info = info if info is None or isinstance(info, s.Implementation) else \
            s.Implementation.model_validate(info if isinstance(info, dict) else info.to_wire())
        self.auth_methods = list(_field(result, "authMethods") or [])
        self.protocol_version = agreed.version if agreed.version is not None else proto.version
        self.select_protocol(proto.version)
        p = self.protocol
        # what a session is about to need: the handlers' types, then the prompt's
        self.warm_up([*self._routed(), (p.wire("prompt"), "request"), (p.wire("new_session"), "request")])

    # -- outbound ------------------------------------------------------------------------------

    async def _call(self, method: str, params: Any, fields: dict[str, Any], *, timeout: float | None = None) -> Any:
        p = self.protocol
        method = p.send_name(method)
        if p.is_(method, "initialize"):
            return await self._initialize(method, params, fields, timeout)
        hook = self.on_session_opened
        if hook is not None and method in p.opener_wires:
            info = p.info(method, "request")
            self._check_capability(info, method)
            request = self._params_value(info, method, params, fields)

            def opened(result: Any) -> Any:
                hook(method, request, result)
                return result

            return await self._request(info, method, self._to_json(request), timeout, on_result=opened)
        observer = self.on_prompt
        if observer is not None and p.is_(method, "prompt"):
            observer(session_of(params, fields) or "", params)
        return await super()._call(method, params, fields, timeout=timeout)

    async def _initialize(self, method: str, params: Any, fields: dict[str, Any], timeout: float | None) -> Any:
        """A typed ``initialize`` of the version in use (v1's shape: ``conn.initialize(...)``);
        the answer's version selects the protocol when acplink knows it."""
        if params is not None and fields:
            raise UsageError("pass either a params model or keyword fields, not both")
        request = params if params is not None else fields
        if not isinstance(request, s.InitializeRequest):
            try:
                request = parse(s.InitializeRequest, request, name="InitializeRequest")
            except SchemaValidationError as exc:
                raise UsageError(f"bad params for initialize: {exc.message}") from None
        result: s.InitializeResponse = await super()._call(method, request, {}, timeout=timeout)
        version = result.protocol_version
        proto = get_protocol(version) if version in known_versions() else self.protocol
        from ..protocol.initialize import Agreed

        self._agreed(Agreed(proto, result, request.client_capabilities, version=version))
        return result

    async def _notify(self, method: str, params: Any, fields: dict[str, Any]) -> None:
        observer = self.on_cancel
        if observer is not None and self.protocol.is_(self.protocol.send_name(method), "cancel"):
            sid = session_of(params, fields)
            if sid is not None:
                observer(sid)
        await super()._notify(method, params, fields)
