"""Bridges from ACP to other protocols: :func:`serve_as_mcp` serves any ACP agent as an MCP
server (``acplink mcp-server``; :mod:`acplink.bridges.mcp_server`).

Each bridge needs its extra (``acplink[mcp]``) and is imported on use."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .._extras import require

if TYPE_CHECKING:
    from ..protocol.initialize import ProtocolChoice

__all__ = ["serve_as_mcp"]


async def serve_as_mcp(command: Sequence[str], *, http: tuple[str, int] | None = None,
                       cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None,
                       permission: str = "elicit", startup_timeout: float = 30.0,
                       protocol: ProtocolChoice = 1) -> None:
    """Serve the ACP agent ``command`` (a list of arguments) as an MCP server with the tools
    ``prompt``, ``new_session``, ``list_sessions`` and ``cancel``, until the MCP host goes away
    (stdio, the default) or the task is cancelled (``http=(host, port)``: streamable HTTP on
    ``http://host:port/mcp``). ``permission``: ``"elicit"`` (ask the MCP host, deny when it
    cannot be asked), ``"allow"`` or ``"deny"``. ``protocol``: the ACP version spoken to the
    agent, 1 (the default), 2 (the v2 draft: the agent must answer 2) or ``"auto"`` (2 when the
    agent speaks it, else 1). Needs the ``mcp`` extra."""
    require("serve_as_mcp (an ACP agent as an MCP server)", "mcp", "mcp")
    from .mcp_server import run_mcp_server

    await run_mcp_server(command, http=http, cwd=cwd, env=env, permission=permission,
                         startup_timeout=startup_timeout, protocol=protocol)
