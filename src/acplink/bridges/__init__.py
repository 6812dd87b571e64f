"""Bridges from ACP to other protocols: :mod:`acplink.bridges.mcp_server` serves any ACP agent
as an MCP server (``acplink mcp-server``, :func:`~acplink.bridges.mcp_server.serve_as_mcp`).

Nothing is imported here: each bridge needs its extra (``acplink[mcp]``) and is imported on use."""
