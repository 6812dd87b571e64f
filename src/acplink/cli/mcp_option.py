"""``--mcp NAME=COMMAND`` / ``--mcp NAME=URL`` of ``acplink chat`` and ``acplink prompt``: an
external MCP server offered to the agent over ACP (MCP-over-ACP), through an
:class:`~acplink.client.McpBridge` registered as ``client.mcp.register(NAME, bridge)``.

The servers are started before the agent (a server that cannot start is one error line with
its last stderr lines, exit status 2, and no agent is started), registered on every client
the command opens (so ``chat --reconnect`` offers them again), and stopped when the command
ends, after the client has closed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from .._extras import require
from ..client.mcp_bridge import McpBridge, McpBridgeError, parse_mcp_spec
from ..errors import UsageError

__all__ = ["McpStartFailed", "add_mcp_option", "mcp_servers", "mcp_usage_error", "offer_mcp", "require_mcp"]

log = logging.getLogger("acplink.cli")


class McpStartFailed(McpBridgeError):
    """An ``--mcp`` server could not be started (the command exits with status 2)."""


def _spec(text: str) -> tuple[str, str | list[str]]:
    try:
        return parse_mcp_spec(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--mcp {text!r}: ")) from None


def add_mcp_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mcp", action="append", default=[], type=_spec, metavar="NAME=COMMAND|URL",
                   help="offer an MCP server to the agent over ACP (MCP-over-ACP): a command acplink runs "
                        "(NAME='npx -y some-server .') or a Streamable-HTTP URL (repeatable; needs the mcp "
                        "extra)")


def mcp_usage_error(args: argparse.Namespace) -> str | None:
    """Two ``--mcp`` servers with one name, or None."""
    seen: set[str] = set()
    for name, _ in getattr(args, "mcp", None) or ():
        if name in seen:
            return f"--mcp: two servers are named {name!r} (a name says which server the agent calls)"
        seen.add(name)
    return None


def require_mcp(args: argparse.Namespace) -> None:
    """:class:`~acplink.MissingDependency` when ``--mcp`` is given without the ``mcp`` extra."""
    if getattr(args, "mcp", None):
        require("--mcp", "mcp", "mcp")


@contextlib.asynccontextmanager
async def mcp_servers(args: argparse.Namespace, startup_timeout: float | None = None) -> AsyncIterator[None]:
    """Start the ``--mcp`` servers (each within ``startup_timeout`` seconds), keep them in
    ``args.mcp_bridges`` for :func:`offer_mcp` while inside, stop them on exit."""
    async with contextlib.AsyncExitStack() as stack:
        bridges: list[tuple[str, McpBridge]] = []
        for name, target in getattr(args, "mcp", None) or ():
            bridge = McpBridge(target, cwd=getattr(args, "cwd", None))
            try:
                async with asyncio.timeout(startup_timeout):
                    await stack.enter_async_context(bridge)
            except TimeoutError:
                raise McpStartFailed(f"--mcp {name}: the MCP server {bridge.name!r} did not answer within "
                                     f"{startup_timeout:g} s (--startup-timeout)") from None
            except McpBridgeError as exc:
                raise McpStartFailed(f"--mcp {name}: {exc}") from None
            bridges.append((name, bridge))
        args.mcp_bridges = bridges
        try:
            yield
        finally:
            args.mcp_bridges = []


def offer_mcp(client: Any, args: argparse.Namespace) -> None:
    """Register the running ``--mcp`` servers on ``client`` (declared in the sessions it opens
    when the agent takes ``acp`` MCP servers; otherwise a warning says they are not offered)."""
    bridges: list[tuple[str, McpBridge]] = getattr(args, "mcp_bridges", None) or []
    for name, bridge in bridges:
        client.mcp.register(name, bridge)
    path = client.connection.protocol.mcp_transports.get("acp")
    if bridges and (path is None or not client.supports(path)):
        names = ", ".join(name for name, _ in bridges)
        log.warning("the agent does not take MCP servers over ACP (it did not advertise `acp` MCP): "
                    "--mcp %s is not offered to it", names)
