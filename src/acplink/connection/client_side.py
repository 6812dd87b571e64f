"""The client's end of a connection: handles client methods, calls agent methods."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import SchemaValidationError, UsageError
from ..schema import _generated as s
from ..schema._parse import parse
from ..schema.v1._stubs import AgentMethods
from .base import Connection

__all__ = ["ClientSideConnection"]

#: ``(method, params model, result model)`` of a session-opening call, see ``on_session_opened``
SessionOpened = Callable[[str, Any, Any], None]


class ClientSideConnection(Connection, AgentMethods):
    """What a client holds: typed calls of every agent method, routing of client methods.

    After :meth:`initialize` the agent's capabilities are in :attr:`peer_capabilities`, and
    calling a method the agent did not advertise raises :class:`CapabilityError`.
    """

    side = "client"

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.enable_fast_path(self.protocol.wire("session_update"))
        #: called with (method, params, result) when the result of a ``session/new``,
        #: ``session/load``, ``session/resume`` or ``session/fork`` call is processed: in
        #: arrival order, before any message that came after the response is handled (so a
        #: ``session/update`` written right behind the response finds the session it opened).
        #: The result is already typed; what the hook raises fails the call.
        self.on_session_opened: SessionOpened | None = None

    agent_info: s.Implementation | None = None
    auth_methods: list[Any] = []  # noqa: RUF012  (replaced per instance at initialize)
    protocol_version: int | None = None
    initialize_response: s.InitializeResponse | None = None

    def select_protocol(self, version: Any) -> bool:
        before = self.protocol
        selected = super().select_protocol(version)
        if self.protocol is not before:
            self.enable_fast_path(self.protocol.wire("session_update"))
        return selected

    async def _call(self, method: str, params: Any, fields: dict[str, Any], *, timeout: float | None = None) -> Any:
        p = self.protocol
        if p.is_(method, "initialize"):
            if params is not None and fields:
                raise UsageError("pass either a params model or keyword fields, not both")
            request = params if params is not None else fields
            if not isinstance(request, s.InitializeRequest):
                try:
                    request = parse(s.InitializeRequest, request, name="InitializeRequest")
                except SchemaValidationError as exc:
                    raise UsageError(f"bad params for initialize: {exc.message}") from None
            self.own_capabilities = request.client_capabilities
            result: s.InitializeResponse = await super()._call(method, request, {}, timeout=timeout)
            self.initialize_response = result
            self.peer_capabilities = result.agent_capabilities
            self.agent_info = result.agent_info
            self.auth_methods = list(result.auth_methods or [])
            self.protocol_version = result.protocol_version
            self.select_protocol(result.protocol_version)
            p = self.protocol
            # what a session is about to need: the handlers' types, then the prompt's
            self.warm_up([*self._routed(), (p.wire("prompt"), "request"), (p.wire("new_session"), "request")])
            return result
        hook = self.on_session_opened
        method = p.send_name(method)
        if hook is not None and method in p.wires(*p.session_openers):
            info = p.info(method, "request")
            self._check_capability(info, method)
            request = self._params_value(info, method, params, fields)

            def opened(result: Any) -> Any:
                hook(method, request, result)
                return result

            return await self._request(info, method, self._to_json(request), timeout, on_result=opened)
        return await super()._call(method, params, fields, timeout=timeout)
