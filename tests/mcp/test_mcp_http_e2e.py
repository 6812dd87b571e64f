"""End to end over a real subprocess pipe: an acplink agent whose MCP client speaks only HTTP (or
only launches stdio servers) calls a tool the client serves over MCP-over-ACP, through
``ctx.mcp.http()``; one listener per connection, reused by the next prompt, and gone (with every
relay process) once the connection closes."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
import urllib.parse
from pathlib import Path

import pytest
from procs import running

from acplink import connect
from acplink.mcp import McpServer

pytest.importorskip("mcp")

AGENT = Path(__file__).resolve().parent / "http_agent.py"


def _tools() -> McpServer:
    server = McpServer("tools")

    @server.tool()
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    return server


def _relays() -> list[int]:
    return running("acplink._mcp_relay")


@pytest.mark.parametrize("protocol", [1, 2])
async def test_http_and_stdio_clients_reach_the_clients_server(protocol: int) -> None:
    before = set(_relays())
    async with connect([sys.executable, str(AGENT)], protocol=protocol, stderr="capture") as client:
        client.mcp.register("tools", _tools())
        session = await client.new_session(".")
        replies = []
        for how in ("http", "stdio", "http"):
            await session.prompt(f"{how} hello {how}")
            message = session.state.last_agent_message
            assert message is not None
            replies.append(message.text)
    assert [r.split(" via ")[0] for r in replies] == ["HELLO HTTP", "HELLO STDIO", "HELLO HTTP"]
    urls = {r.split(" via ")[1] for r in replies}
    assert len(urls) == 1  # one endpoint for the server, one listener for the connection
    port = urllib.parse.urlsplit(urls.pop()).port
    assert port is not None
    with pytest.raises(OSError):  # the connection closed: its listener is gone
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    deadline = time.monotonic() + 20
    while set(_relays()) - before and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert set(_relays()) - before == set()  # and no relay outlives it
