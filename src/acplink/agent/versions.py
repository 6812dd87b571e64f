"""Serving two protocol versions on one connection: the low-level version router.

:class:`DualAgentConnection` takes two implementations, one per version: ``v1``, a
:class:`~acplink.connection.base.Router` of typed v1 handlers (exactly what an
:class:`~acplink.connection.agent_side.AgentSideConnection` takes), and ``v2``, a ``Router``
whose handlers take the v2 params as plain JSON and return JSON (v2 is a draft: acplink
checks the params against the v2 models, then hands over the plain JSON). Before ``initialize`` only ``initialize`` is
accepted; :class:`~acplink.protocol.router.VersionRouter` picks the version with the TS
SDK's rules, the ``initialize`` params rewritten for it, and the connection stays on it.
The high-level :class:`~acplink.AgentApp` is served on top of this (``protocols=(1, 2)``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

import orjson

from ..connection.agent_side import AgentSideConnection
from ..connection.base import Router
from ..connection.peer import DONE
from ..errors import InvalidParams, InvalidRequest, MethodNotFound, RequestError, SchemaValidationError
from ..protocol.router import Reply, Select, VersionRouter, downgrade_initialize
from ..protocol.v2 import PROTOCOL_VERSION, Method
from ..protocol.v2 import protocol as v2_protocol
from ..schema import parse

log = logging.getLogger("acplink.agent")

__all__ = ["DualAgentConnection"]


class DualAgentConnection(AgentSideConnection):
    """An agent connection with a v1 and a v2 implementation (either may be None)."""

    def __init__(self, transport: Any, v1: Router | None, v2: Router | None, **kw: Any) -> None:
        versions = [v for v, impl in ((1, v1), (2, v2)) if impl is not None]
        super().__init__(transport, v1 if v1 is not None else Router(), **kw)
        self.v2_router = v2 if v2 is not None else Router()
        self.version_router = VersionRouter(versions)

    async def handle_request(self, method: str, params: Any) -> bytes:
        selected = self.version_router.selected
        if method == Method.INITIALIZE:
            if selected is None:
                decision = self.version_router.route({"jsonrpc": "2.0", "id": 0, "method": method, "params": params})
                if isinstance(decision, Reply):
                    raise RequestError.from_wire(decision.message["error"])
                assert isinstance(decision, Select)
                params = decision.initialize["params"]
            else:
                refused = self.version_router.repeat(0, params)
                if refused is not None:
                    raise RequestError.from_wire(refused["error"])
                if selected == 1 and params.get("protocolVersion") != 1:  # (a repeat stays on v1)
                    params = downgrade_initialize(params) if "info" in params else {**params, "protocolVersion": 1}
            if self.version_router.selected == 2:
                result = await self.v2_initialize(params)
                self.protocol_version = PROTOCOL_VERSION
                self.initialized = True
                return orjson.dumps(result)
            return await super().handle_request(method, params)
        if selected is None:
            raise InvalidRequest("Invalid request: first ACP request must be initialize")
        if selected == 1:
            return await super().handle_request(method, params)
        self.version_router.request_seen(method)
        self.v2_check(method, "request", params)
        return orjson.dumps(await self.v2_request(method, params))

    def handle_notification(self, method: str, params: Any, typed: bool = False) -> Awaitable[None]:
        if self.version_router.selected is None:
            return DONE  # before initialize, notifications are ignored
        if self.version_router.selected == 2:
            try:
                self.v2_check(method, "notification", params)
            except InvalidParams as exc:
                log.warning("v2: ignored a %s notification: %s", method, exc.message)
                return DONE
            return self.v2_notification(method, params)
        return super().handle_notification(method, params, typed)

    def v2_check(self, method: str, kind: str, params: Any) -> None:
        """Check v2 params against the v2 model of ``method`` (``-32602`` naming the path);
        the handlers still get the plain JSON."""
        from ..schema import v2 as models

        info = models.method_info(method, kind)
        if info is not None:
            try:
                parse(info.params_type, params if params is not None else {}, name=info.params_name)
            except SchemaValidationError as exc:
                raise InvalidParams(f"Invalid params for {method}: {exc.message}", exc.data) from None

    # -- the v2 implementation (a subclass may serve v2 itself) --------------------------------

    async def v2_initialize(self, params: dict[str, Any]) -> Any:
        """Answer a v2 ``initialize`` (params already checked and rewritten by the router); the
        connection uses the v2 protocol object from then on."""
        self.select_protocol(v2_protocol().version)
        return await self.v2_request(Method.INITIALIZE, params)

    async def v2_request(self, method: str, params: Any) -> Any:
        handler = self.v2_router.requests.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}", {"method": method})
        return await handler(params)

    def v2_notification(self, method: str, params: Any) -> Awaitable[None]:
        handler = self.v2_router.notifications.get(method)
        return handler(params) if handler is not None else DONE

    async def v2_notify(self, method: str, params: Any) -> None:
        """Send a v2 notification (plain JSON params)."""
        await self.peer.notify(method, orjson.dumps(params))

    async def v2_call(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        """Send a v2 request (plain JSON params); its result as plain JSON."""
        return await self.peer.request(method, orjson.dumps(params), timeout=timeout)
