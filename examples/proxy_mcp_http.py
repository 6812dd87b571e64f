"""The MCP polyfill proxy: a client's Python function reaches an agent whose MCP client speaks
only HTTP, through ``acplink conduct --proxy acplink:mcp-http``.

    python examples/proxy_mcp_http.py          # the client: prints "words.word_count says: 4"
    python examples/proxy_mcp_http.py agent    # the agent (the chain runs it)

The agent advertises HTTP MCP servers and not ``acp`` ones; the proxy advertises ``acp`` to the
client in its place, turns the client's ``acp`` declaration into an ``http`` one (a loopback URL
and a bearer token), and relays what the agent posts there to the client as ``mcp/message``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from acplink import AgentApp, PromptContext, connect, run_agent
from acplink.mcp import McpServer
from acplink.schema import dump

CHAIN = [sys.executable, "-m", "acplink", "conduct", "--proxy", "acplink:mcp-http",
         "--", sys.executable, __file__, "agent"]

# -- the agent: its MCP client is the Python `mcp` package's, over Streamable HTTP -----------------

agent = AgentApp("http-only-agent", mcp_over_acp=False, mcp_http=True)


def http_servers(ctx: PromptContext) -> dict[str, dict[str, Any]]:
    """The session's HTTP MCP servers: name → declaration (wire form)."""
    servers: list[dict[str, Any]] = dump(ctx.session.mcp_servers)
    return {server["name"]: server for server in servers if server.get("type") == "http"}


@agent.prompt
async def prompt(ctx: PromptContext) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import TextContent

    server = http_servers(ctx)["words"]
    headers = {h["name"]: h["value"] for h in server.get("headers") or ()}
    async with httpx2.AsyncClient(headers=headers) as http, \
            Client(streamable_http_client(server["url"], http_client=http)) as mcp_client:
        result = await mcp_client.call_tool("word_count", {"text": ctx.text})
    text = " ".join(b.text for b in result.content if isinstance(b, TextContent))
    await ctx.send_text(f"words.word_count says: {text}")


# -- the client: offers a Python function as an MCP server over ACP ----------------------------------

words = McpServer("words")


@words.tool()
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


async def main() -> None:
    async with connect(CHAIN) as client:
        client.mcp.register("words", words)
        session = await client.new_session(".")
        await session.prompt("the quick brown fox")
        message = session.state.last_agent_message
        assert message is not None
        print(message.text)


if __name__ == "__main__":
    if sys.argv[1:] == ["agent"]:
        run_agent(agent)
    else:
        asyncio.run(main())
