"""MCP-over-ACP: MCP servers reached through the ACP connection itself (``mcp/message``).

This package holds what both sides share and what does no I/O: the inner protocol's version and
metadata keys, one inner request as a handler sees it (:class:`McpCall`), and the handler type
(:data:`McpHandler`). The provider (the side that declares an ``acp`` MCP server, usually the
client) lives in :mod:`acplink.client`; the caller (the agent) in :mod:`acplink.agent`.

A handler is any ``async def handler(call: McpCall) -> result``: it answers one inner MCP
request (``tools/list``, ``tools/call``, ...). What it returns is the inner result; raising
:class:`acplink.McpError` answers with an inner MCP error; it may send notifications for the
request while it runs (:meth:`McpCall.notify`, :meth:`McpCall.progress`); cancelling the
request (``$/cancel_request``) cancels the handler's task.

:class:`McpServer` is a ready-made handler: an in-process MCP server whose tools are Python
functions (``@server.tool()``).
"""

from __future__ import annotations

from ._call import (
    MCP_CLIENT_CAPABILITIES,
    MCP_CLIENT_INFO,
    MCP_PROTOCOL_VERSION,
    MCP_PROTOCOL_VERSION_KEY,
    McpCall,
    McpHandler,
)
from .server import McpServer, ToolResult

__all__ = [
    "MCP_CLIENT_CAPABILITIES",
    "MCP_CLIENT_INFO",
    "MCP_PROTOCOL_VERSION",
    "MCP_PROTOCOL_VERSION_KEY",
    "McpCall",
    "McpHandler",
    "McpServer",
    "ToolResult",
]
