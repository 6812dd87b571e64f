"""The MCP servers a proxy offers its agent over ACP (MCP-over-ACP, ``mcp/message``).

The proxy is the provider, in the client's place: it declares its servers (``{"type": "acp",
name, serverId}``) in the session openers it forwards, when the agent advertised ``acp`` MCP,
and answers the agent's ``mcp/message`` requests for them with the binding of
:mod:`acplink.mcp.binding` (the envelope and inner-metadata checks, the carriers, the outer
error codes). Requests for other servers are not its own: they pass on to the client.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..errors import McpError, RequestError, UsageError
from ..mcp import McpCall
from ..mcp import binding as b
from ..protocol import get_protocol

__all__ = ["ProxyMcp"]

log = logging.getLogger("acplink.proxy")


class ProxyMcp:
    """One proxy connection's MCP servers: their ids, whether the agent takes them, the answers."""

    def __init__(self, proxy: str, servers: Mapping[str, Callable[[McpCall], Awaitable[Any]]]) -> None:
        self.proxy = proxy
        tag = uuid.uuid4().hex[:8]
        #: serverId -> (declared name, handler)
        self.servers = {f"{proxy}-{name}-{tag}": (name, handler) for name, handler in servers.items()}
        #: whether the agent advertised acp MCP (None: initialize not answered yet)
        self.agent_takes_acp: bool | None = None

    def agent_answered(self, result: Any) -> None:
        """The chain's initialize answer: does the agent take ``acp`` MCP servers?"""
        takes = False
        if isinstance(result, dict):
            version = result.get("protocolVersion")
            try:
                protocol = get_protocol(version) if isinstance(version, int) else None
            except UsageError:
                protocol = None
            where = protocol.mcp_transports.get("acp") if protocol is not None else None
            # (v1 agentCapabilities, v2 capabilities)
            node: Any = result.get(protocol.capabilities_field[0] if protocol is not None else "agentCapabilities")
            for key in (where or "mcpCapabilities.acp").split("."):
                node = node.get(key) if isinstance(node, dict) else None
            takes = node is True or isinstance(node, dict)
        self.agent_takes_acp = takes
        if not takes:
            log.warning("%s: the agent does not advertise acp MCP servers: %s not offered", self.proxy,
                        ", ".join(name for name, _ in self.servers.values()))

    def declare(self, params: Any) -> Any:
        """A session opener's params with our servers added to ``mcpServers``."""
        if not self.agent_takes_acp or not isinstance(params, dict):
            return params
        listed = params.get("mcpServers")
        listed = list(listed) if isinstance(listed, list) else []
        listed += [b.declaration(name, sid) for sid, (name, _) in self.servers.items()]
        return {**params, "mcpServers": listed}

    def owns(self, params: Any) -> bool:
        return isinstance(params, dict) and params.get("serverId") in self.servers

    async def handle(self, params: Any) -> Any:
        """Answer one ``mcp/message`` request for one of our servers: its carrier."""
        env = b.check_envelope(params)
        name, handler = self.servers[env.server_id]
        wrong = b.check_inner_meta(env.params)
        if wrong is not None:
            return b.error_carrier(wrong)
        call = McpCall(env.server_id, env.request_id, env.method, env.params, b.mcp_meta_of(env.params),
                       env.meta, None, name)
        try:
            return b.result_carrier(await handler(call))
        except McpError as exc:
            return b.error_carrier(exc)
        except Exception as exc:  # (no traceback on the wire: it is in the proxy's log)
            log.warning("%s: MCP server %r failed on %s: %s: %s", self.proxy, name, env.method,
                        type(exc).__name__, exc, exc_info=True)
            raise RequestError(f"MCP server handler failed: {type(exc).__name__} (details in the proxy's log)",
                               {"serverId": env.server_id, "requestId": env.request_id, "error": type(exc).__name__},
                               code=b.BACKEND_FAILED) from None
