"""One agent app served as ACP v1 or v2, the version chosen by ``initialize``.

:class:`VersionedAgentConnection` is the v1 agent connection plus a v2 mode. Before
``initialize`` only ``initialize`` is accepted; the version router
(:mod:`acplink.protocol.router`) picks the version. On v1 everything is exactly the v1
connection. On v2 the SDK owns the prompt lifecycle (see :mod:`._v2_turns`) and the app's
v1-shaped handlers are reached through :mod:`._v2_wire`'s rewriting.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Collection
from typing import TYPE_CHECKING, Any

import orjson

from ..connection.agent_side import AgentSideConnection
from ..connection.base import Router
from ..connection.peer import DONE
from ..errors import CapabilityError, InvalidParams, MethodNotFound
from ..protocol import V1, v2
from ..protocol.router import VersionRouter, downgrade_initialize
from ..schema import _generated as s
from ..schema.registry import method_info
from . import _v2_wire as wire
from ._v2_turns import V2Turns
from .versions import DualAgentConnection

if TYPE_CHECKING:
    from .app import AgentBase

__all__ = ["VersionedAgentConnection"]

log = logging.getLogger("acplink.agent")

M = v2.Method

#: v2 methods answered by the v1 handler of the same name, params unchanged
_SAME = {M.SESSION_FORK: "fork_session"}


class VersionedAgentConnection(DualAgentConnection):
    """Serves ``app`` as v1 or v2 (``versions``), whichever ``initialize`` selects."""

    def __init__(self, transport: Any, router: Router, *, app: AgentBase, versions: Collection[int] = (1, 2),
                 **kw: Any) -> None:
        super().__init__(transport, router, Router(), **kw)
        self.version_router = VersionRouter(versions)  # (the app's handlers serve both versions)
        self.app = app
        self.v2 = V2Turns(self)
        #: a prompt handler may return a ``_``-prefixed stop reason (kept on v2 only)
        self.custom_stop_reasons = False

    async def aclose(self) -> None:
        await self.v2.aclose()
        await super().aclose()

    async def handle_request(self, method: str, params: Any) -> bytes:
        if method.startswith("_") and self.version_router.selected == 2:
            return await AgentSideConnection.handle_request(self, method, params)  # extensions: as on v1
        return await super().handle_request(method, params)

    def v2_notification(self, method: str, params: Any) -> Awaitable[None]:
        if method.startswith("_"):
            return AgentSideConnection.handle_notification(self, method, params)
        if method == M.SESSION_CANCEL and isinstance(params, dict) and isinstance(params.get("sessionId"), str):
            self.v2.cancel(params["sessionId"])
        return DONE

    async def v2_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        # (the app's handlers are v1-shaped: the connection keeps the v1 protocol object for
        # them, and rewrites what they send; see _v2_wire)
        app = self.app
        caps = params.get("capabilities")
        # what a v2 client can do, seen through v1 eyes (the app reads v1 capabilities)
        downgraded = downgrade_initialize(params)["clientCapabilities"]
        self.peer_capabilities = s.ClientCapabilities.model_validate(downgraded)
        self.client_capabilities_v2 = caps if isinstance(caps, dict) else {}
        info = params.get("info")
        self.client_info = s.Implementation.model_validate(info) if isinstance(info, dict) else None
        v1 = app._capabilities_wire()
        session: dict[str, Any] = {"prompt": wire.prompt_capabilities(v1.get("promptCapabilities") or {})}
        for hook, cap in (("delete_session", "delete"), ("fork_session", "fork")):
            if hook in app.handlers:
                session[cap] = {}
        agent_info: dict[str, Any] = {"name": app.name, "version": app.version}
        if app.title is not None:
            agent_info["title"] = app.title
        body = {"protocolVersion": v2.PROTOCOL_VERSION, "info": agent_info, "capabilities": {"session": session}}
        methods = [m.to_wire() if hasattr(m, "to_wire") else m for m in app.auth_methods]
        if methods:
            body["authMethods"] = wire.auth_methods(methods)
        self.custom_stop_reasons = True
        self.own_capabilities = body["capabilities"]
        return body

    async def _v1(self, name: str, params: Any) -> dict[str, Any] | None:
        """Call the app's v1 handler of the method acplink calls ``name`` (None when it has
        none) with ``params`` checked against the v1 model; its result as wire JSON."""
        method = V1.wire(name)
        handler = self.router.requests.get(method)
        if handler is None:
            return None
        info = method_info(method, "request")
        result = await handler(self._params(info, method, params))
        out = orjson.loads(self._result_json(info, method, result))
        return out if isinstance(out, dict) else {}

    async def v2_request(self, method: str, params: Any) -> Any:
        p = params if isinstance(params, dict) else {}
        if method == M.SESSION_PROMPT:
            return await self.v2.prompt(wire.prompt_from_v2(params))
        if method == M.SESSION_NEW:
            res = await self._v1("new_session", {"mcpServers": [], **_pick(p, "cwd", "mcpServers",
                                                                           "additionalDirectories", "_meta")})
            assert res is not None
            return self._setup_result(res, res["sessionId"], sessionId=res["sessionId"])
        if method == M.SESSION_RESUME:
            return await self.v2.resume(p)
        if method == M.SESSION_CLOSE:
            return await self.v2.close(p)
        if method == M.SESSION_LIST:
            res = await self._v1("list_sessions", _pick(p, "cwd", "cursor", "_meta"))
            if res is None:
                res = {"sessions": [{"sessionId": x.session_id, "cwd": x.cwd, "title": x.title, "updatedAt": x.updated_at}
                                    for x in self.app.sessions.values()
                                    if p.get("cwd") is None or x.cwd == p.get("cwd")]}
            out = {"sessions": wire.session_infos(res.get("sessions", []))}
            if res.get("nextCursor") is not None:
                out["nextCursor"] = res["nextCursor"]
            return out
        if method == M.SESSION_DELETE and "delete_session" in self.app.handlers:
            sid = _session_id(p)
            await self.v2.close({"sessionId": sid})
            await self._v1("delete_session", {"sessionId": sid})
            return {}
        if method in _SAME and V1.wire(_SAME[method]) in self.router.requests:
            res = await self._v1(_SAME[method], {"mcpServers": [], **p})
            assert res is not None
            return self._setup_result(res, res["sessionId"], sessionId=res["sessionId"])
        if method == M.SESSION_SET_CONFIG_OPTION:
            return await self._set_config_option(p)
        if method == M.AUTH_LOGIN:
            if not self.app.auth_methods:
                raise MethodNotFound(f"Method not found: {method} (this agent offers no auth methods)",
                                     {"method": method})
            res = await self._v1("authenticate", {"methodId": p.get("methodId")})
            if res is None:
                raise MethodNotFound(f"Method not found: {method}", {"method": method})
            return {}
        if method == M.AUTH_LOGOUT:
            await self._v1("logout", {})
            return {}
        if method == M.TOOL_CALL_CANCEL:
            return await self.v2.cancel_entity(p, "toolCallId", "tool call")
        if method == M.TERMINAL_CANCEL:
            return await self.v2.cancel_entity(p, "terminalId", "terminal")
        raise MethodNotFound(f"Method not found: {method}", {"method": method})

    def _setup_result(self, v1_result: dict[str, Any], session_id: str, **out: Any) -> dict[str, Any]:
        """A v2 session-setup result: config options (modes first, as an option)."""
        sess = self.app.sessions.get(session_id)
        modes = v1_result.get("modes")
        options = wire.config_options(
            v1_result.get("configOptions") or [],
            (modes or {}).get("availableModes") or [],
            (modes or {}).get("currentModeId") or (sess.mode_id if sess else None))
        if options:
            out["configOptions"] = options
        return out

    async def _set_config_option(self, p: dict[str, Any]) -> dict[str, Any]:
        sid = _session_id(p)
        sess = self.app.get_session(sid)
        config_id, value = p.get("configId"), p.get("value")
        if config_id == wire.MODE_CONFIG_ID and self.app.modes:
            await self._v1("set_mode", {"sessionId": sid, "modeId": value})
        elif await self._v1("set_config_option", {"sessionId": sid, "configId": config_id, "value": value}) is None:
            raise InvalidParams(f"unknown config option {config_id!r}")
        options = [o.to_wire() if hasattr(o, "to_wire") else o for o in self.app.current_config(sess)]
        modes = [m.to_wire() for m in self.app.modes]
        return {"configOptions": wire.config_options(options, modes, sess.mode_id)}

    # -- outbound (what the app's contexts call) -----------------------------------------------

    async def send_v2_update(self, session_id: str, update: dict[str, Any]) -> None:
        """Send a v2 ``session/update`` as it is (v2-only entities such as display terminals)."""
        if self.version_router.selected != 2:
            raise CapabilityError("this connection speaks ACP v1: v2 updates cannot be sent")
        await self.v2.send_raw(session_id, update)

    def _modes(self) -> list[dict[str, Any]]:
        return [m.to_wire() for m in self.app.modes]

    async def _notify(self, method: str, params: Any, fields: dict[str, Any]) -> None:
        if self.version_router.selected != 2:
            return await super()._notify(method, params, fields)
        info = method_info(method, "notification")
        await self.notify_json(method, self._params_json(info, method, params, fields))

    async def notify_json(self, method: str, params_json: bytes) -> None:
        if self.version_router.selected != 2:
            return await super().notify_json(method, params_json)
        if method != M.SESSION_UPDATE:
            raise CapabilityError(f"{method} does not exist in ACP v2")
        note = orjson.loads(params_json)
        await self.v2.send_update(note["sessionId"], note["update"])

    async def _call(self, method: str, params: Any, fields: dict[str, Any], *, timeout: float | None = None) -> Any:
        if self.version_router.selected != 2:
            return await super()._call(method, params, fields, timeout=timeout)
        info = method_info(method, "request")
        return await self.request_json(method, self._params_json(info, method, params, fields), timeout=timeout)

    async def request_json(self, method: str, params_json: bytes, *, timeout: float | None = None) -> Any:
        if self.version_router.selected != 2:
            return await super().request_json(method, params_json, timeout=timeout)
        if method in v2.V1_ONLY_METHODS:
            raise CapabilityError(f"{method} does not exist in ACP v2: a v2 agent reaches the client's files and "
                                  "terminals through an MCP server the client provides (MCP-over-ACP), not "
                                  "through ACP methods")
        params = orjson.loads(params_json)
        if method == M.REQUEST_PERMISSION:
            params = self.v2.permission_params(params)
        elif method == M.ELICITATION_CREATE:
            params.setdefault("mode", "form")
        sid = params.get("sessionId") if isinstance(params, dict) else None
        async with self.v2.awaiting_user(sid if isinstance(sid, str) else None):
            raw = await self.peer.request(method, orjson.dumps(params), timeout=timeout)
        return self._parse_result(method_info(method, "request"), raw)


def _pick(p: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: p[k] for k in keys if p.get(k) is not None}


def _session_id(p: dict[str, Any]) -> str:
    sid = p.get("sessionId")
    if not isinstance(sid, str):
        raise InvalidParams("Invalid params: sessionId: a string is required", {"path": "sessionId"})
    return sid


