"""The MCP polyfill proxy (``acplink proxy mcp-http``, ``--proxy acplink:mcp-http``): MCP-over-ACP
for an agent whose MCP client only speaks HTTP.

Put before an agent that advertises HTTP MCP servers but not ``acp`` ones, it advertises ``acp``
upstream (in the ``initialize`` answer it passes back: v1 ``mcpCapabilities.acp``, v2
``session.mcp.acp``), so the client and the proxies before it declare their MCP-over-ACP
servers; it rewrites each ``acp`` declaration of the ``session/new``, ``session/load``,
``session/resume`` and ``session/fork`` requests it forwards into an ``http`` one pointing at a
loopback Streamable-HTTP endpoint of its own (:class:`acplink.agent.McpHttpBridge`, the agent
side's bridge: 127.0.0.1, a bearer token per server passed as a header, never in the URL), and
relays what the agent's MCP client posts there to its predecessor as ``mcp/message`` requests,
as an agent with native ``acp`` support would send them (the provider's progress notifications
come back as server-sent events, a dropped HTTP response is ``$/cancel_request``).

When the successor advertises ``acp`` itself, or no HTTP MCP, everything passes unchanged.
One bridge per connection, started with the first declaration it rewrites and stopped when the
connection ends.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..agent.mcp import McpCalls
from ..agent.mcp_http import HttpEndpoint, McpHttpBridge, Notify
from ..errors import AcpError, InvalidParams, McpError, RequestError, UsageError
from ..mcp import binding as b
from ..methods import INITIALIZE, MCP_MESSAGE, SESSION_FORK, SESSION_LOAD, SESSION_NEW, SESSION_RESUME
from ..protocol import get_protocol
from ..protocol.rules import advertises
from .app import ProxyApp, ProxyContext

__all__ = ["mcp_http_proxy"]

log = logging.getLogger("acplink.proxy.mcp_http")

_STATE = "acplink.mcp-http"
#: the requests whose ``mcpServers`` the polyfill rewrites
_OPENERS = (SESSION_NEW, SESSION_LOAD, SESSION_RESUME, SESSION_FORK)


class _Polyfill:
    """One connection's polyfill: whether it bridges, its bridge, the requests in flight."""

    def __init__(self, ctx: ProxyContext, *, port: int, max_active: int, max_body: int) -> None:
        #: sends our own requests to the predecessor (any context of the connection does)
        self.ctx = ctx
        self.port, self.max_active, self.max_body = port, max_active, max_body
        #: True: the successor takes HTTP MCP and not acp (we bridge); False: pass through
        self.active = False
        self.bridge: McpHttpBridge | None = None
        self.lock = asyncio.Lock()
        #: serverId -> its endpoint (a server declared again on load/resume keeps its endpoint)
        self.endpoints: dict[str, HttpEndpoint] = {}
        #: our mcp/message requests in flight, where the provider's notifications for them go
        self.calls = McpCalls()

    def decide(self, result: Any) -> Any:
        """The successor's ``initialize`` answer → ours (``acp`` added when we bridge)."""
        if not isinstance(result, dict):
            return result
        version = result.get("protocolVersion")
        try:
            protocol = get_protocol(version) if isinstance(version, int) else None
        except UsageError:
            protocol = None
        paths = protocol.mcp_transports if protocol is not None else {}
        acp, http = paths.get("acp"), paths.get("http")
        field = protocol.capabilities_field[0] if protocol is not None else ""
        caps = result.get(field)
        if protocol is None or acp is None or http is None or not isinstance(caps, dict):
            log.warning("mcp-http: protocol version %r has no acp/http MCP transports: passing everything through",
                        version)
            return result
        if advertises(caps, acp):
            log.info("mcp-http: the agent takes acp MCP servers itself: passing everything through")
            return result
        if not advertises(caps, http):
            log.warning("mcp-http: the agent advertises no HTTP MCP servers: nothing to bridge, "
                        "acp MCP servers are not offered to it")
            return result
        self.active = True
        caps = _copy_path(caps, acp)
        protocol.advertise(caps, "agent:" + acp)
        return {**result, field: caps}

    async def rewrite(self, method: str, params: Any) -> Any:
        """A session opener's params with each ``acp`` declaration as an ``http`` one."""
        servers = params.get("mcpServers") if isinstance(params, dict) else None
        if not isinstance(servers, list) or not any(_is_acp(e) for e in servers):
            return params
        out: list[Any] = []
        for i, entry in enumerate(servers):
            if not _is_acp(entry):
                out.append(entry)
                continue
            if not b.is_acp_declaration(entry):
                raise InvalidParams(f"Invalid params: mcpServers[{i}] of {method} is an acp MCP server without a "
                                    "string name and serverId: the mcp-http proxy cannot bridge it",
                                    {"path": f"mcpServers[{i}]", "proxy": "mcp-http"})
            endpoint = await self.endpoint(entry["name"], entry["serverId"])
            http: dict[str, Any] = {"type": "http", "name": endpoint.name, "url": endpoint.url,
                                    "headers": [{"name": k, "value": v} for k, v in endpoint.headers.items()]}
            if isinstance(entry.get("_meta"), dict):
                http["_meta"] = entry["_meta"]
            out.append(http)
        return {**params, "mcpServers": out}

    async def endpoint(self, name: str, server_id: str) -> HttpEndpoint:
        async with self.lock:
            found = self.endpoints.get(server_id)
            if found is not None:
                return found
            if self.bridge is None:
                bridge = McpHttpBridge(port=self.port, max_active=self.max_active, max_body=self.max_body,
                                       server_name="acplink-mcp-http")
                try:
                    await bridge.start()
                except AcpError as exc:
                    await bridge.aclose()
                    raise RequestError(f"the mcp-http proxy cannot serve MCP over HTTP: {exc}",
                                       {"proxy": "mcp-http"}, code=-32603) from None
                self.bridge = bridge
                log.info("mcp-http: serving MCP-over-ACP servers on http://127.0.0.1:%s", bridge.port)

            async def forward(method: str, params: dict[str, Any] | None, notify: Notify) -> Any:
                return await self.relay(name, server_id, method, params, notify)

            endpoint = self.endpoints[server_id] = self.bridge.add(name, forward, key=server_id)
            return endpoint

    async def relay(self, name: str, server_id: str, method: str, params: dict[str, Any] | None,
                    notify: Notify) -> Any:
        """One inner request posted to an endpoint, sent on as ``mcp/message``: its inner result,
        or an :class:`McpError` raised (the inner error), or the outer failure raised."""
        request_id = self.calls.new_id()
        body: dict[str, Any] = {"serverId": server_id, "requestId": request_id, "method": method}
        if params is not None:
            body["params"] = params

        def listener(note: dict[str, Any]) -> Any:
            p = note.get("params")
            return notify(str(note["method"]), p if isinstance(p, dict) else None)

        key = (server_id, request_id)
        self.calls.routes[key] = listener
        try:
            raw = await self.ctx.request_predecessor(MCP_MESSAGE, body)
        except RequestError as exc:
            if exc.code in b.BINDING_CODES:
                raise
            raise AcpError(f"the client refused mcp/message for the MCP server {name!r} "
                           f"({exc.code}: {exc.message})") from None
        finally:
            del self.calls.routes[key]
        result = b.parse_carrier(raw)
        if isinstance(result, McpError):
            raise result
        return result

    async def aclose(self) -> None:
        bridge, self.bridge = self.bridge, None
        self.endpoints.clear()
        if bridge is not None:
            await bridge.aclose()


def _is_acp(entry: Any) -> bool:
    return isinstance(entry, dict) and entry.get("type") == "acp"


def _copy_path(caps: dict[str, Any], path: str) -> dict[str, Any]:
    """``caps`` with the objects along ``path`` copied (so advertising there changes no one else's)."""
    out = dict(caps)
    node = out
    for part in path.split(".")[:-1]:
        child = node.get(part)
        node[part] = dict(child) if isinstance(child, dict) else {}
        node = node[part]
    return out


def mcp_http_proxy(*, port: int = 0, max_active: int = 64, max_body: int = 4 * 1024 * 1024) -> ProxyApp:
    """The MCP polyfill proxy (see the module): ``port`` of its loopback listener (0: any free
    one); ``max_active`` requests in flight per server; ``max_body``: the largest request body."""
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise UsageError(f"the mcp-http proxy's port must be 0 (any free one) to 65535, not {port!r}")
    app = ProxyApp("mcp-http")

    def polyfill(ctx: ProxyContext) -> _Polyfill:
        found = ctx.state.get(_STATE)
        if found is None:
            found = ctx.state[_STATE] = _Polyfill(ctx, port=port, max_active=max_active, max_body=max_body)
        return found

    @app.from_client(INITIALIZE)
    async def initialize(ctx: ProxyContext, params: Any) -> Any:
        return polyfill(ctx).decide(await ctx.forward(params))

    async def opener(ctx: ProxyContext, params: Any) -> Any:
        poly = polyfill(ctx)
        if poly.active:
            params = await poly.rewrite(ctx.method, params)
        return await ctx.forward(params)

    for method in _OPENERS:
        app.from_client(method)(opener)

    @app.from_client(MCP_MESSAGE)
    async def provider_message(ctx: ProxyContext, params: Any) -> Any:
        poly = polyfill(ctx)
        if not ctx.is_request and isinstance(params, dict) and \
                (params.get("serverId"), params.get("requestId")) in poly.calls.routes:
            delivered = poly.calls.deliver(params)  # (a notification for one of our requests)
            if delivered is not None:
                await delivered
            return None
        return await ctx.forward(params)

    @app.on_close
    async def close(state: dict[str, Any]) -> None:
        found = state.pop(_STATE, None)
        if found is not None:
            await found.aclose()

    return app
