"""An acplink agent whose own MCP client (the Python ``mcp`` package's) speaks only HTTP, or only
launches stdio servers: it reaches the client's ``acp`` servers through ``ctx.mcp.http()``.
Prompt ``http TEXT`` or ``stdio TEXT``: calls the tool ``shout`` of the server ``tools`` and
replies with its text and the endpoint's URL."""

from __future__ import annotations

import os

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from acplink import AgentApp, PromptContext, run_agent

app = AgentApp("http-mcp-agent", protocols=(1, 2))


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    how, _, text = ctx.text.partition(" ")
    endpoint = (await ctx.mcp.http())["tools"]
    if how == "stdio":
        spec = endpoint.stdio_server()
        env = {**os.environ, **{e["name"]: e["value"] for e in spec["env"]}}
        async with Client(StdioServerParameters(command=spec["command"], args=spec["args"], env=env),
                          cache=None) as client:
            result = await client.call_tool("shout", {"text": text})
    else:
        async with httpx2.AsyncClient(headers=endpoint.headers, timeout=30) as http, \
                Client(streamable_http_client(endpoint.url, http_client=http), cache=None) as client:
            result = await client.call_tool("shout", {"text": text})
    texts = " ".join(b.text for b in result.content if isinstance(b, TextContent))
    await ctx.send_text(f"{texts} via {endpoint.url}")


if __name__ == "__main__":
    run_agent(app)
