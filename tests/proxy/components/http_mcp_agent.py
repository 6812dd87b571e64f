"""An agent whose MCP client speaks only HTTP (the Python ``mcp`` package's Streamable-HTTP
client), for the mcp-http polyfill tests: it advertises HTTP MCP servers (v1
``mcpCapabilities.http``, v2 ``session.mcp.http``) and not ``acp`` ones, on v1 and v2.

A prompt's first text block is a command, answered with one text chunk:

* ``servers``: the session's declarations, ``TYPE NAME URL-HOST`` per line (``-`` without a URL);
* ``call NAME TOOL JSON``: ``tools: a,b; progress: 1,2; result: TEXT`` (or ``mcp-error: CODE MESSAGE``,
  ``failed: MESSAGE``) from calling TOOL with JSON on the HTTP server NAME;
* ``hang NAME``: calls the tool ``hang``, cancelled once it reported progress: ``hang: aborted``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

from acplink import AgentApp, PromptContext, run_agent

app = AgentApp("http-only-agent", "1.0", protocols=(1, 2), mcp_over_acp=False, mcp_http=True)


def _servers(ctx: PromptContext) -> dict[str, dict[str, Any]]:
    sess = ctx.session
    out: dict[str, dict[str, Any]] = {}
    for entry in sess.mcp_servers if sess is not None else ():
        wire = entry if isinstance(entry, dict) else entry.model_dump(mode="json", by_alias=True, exclude_none=True)
        out[wire["name"]] = wire
    return out


async def _call(server: dict[str, Any], tool: str, args: dict[str, Any], hang: bool = False) -> str:
    import httpx2
    from mcp import Client, MCPError
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import TextContent

    headers = {h["name"]: h["value"] for h in server.get("headers") or ()}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
            Client(streamable_http_client(server["url"], http_client=http), cache=None) as client:
        tools = ",".join(sorted(t.name for t in (await client.list_tools()).tools))
        if hang:
            started = asyncio.Event()

            async def started_now(done: float, total: float | None, message: str | None) -> None:
                started.set()

            call = asyncio.ensure_future(client.call_tool(tool, args, progress_callback=started_now))
            await started.wait()
            call.cancel()
            try:
                await call
            except asyncio.CancelledError:
                return "hang: aborted"
            return "hang: answered"
        progress: list[str] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(f"{done:g}")

        try:
            result = await client.call_tool(tool, args, progress_callback=on_progress)
        except MCPError as exc:
            return f"tools: {tools}; mcp-error: {exc.error.code} {exc.error.message}"
        text = " ".join(b.text for b in result.content if isinstance(b, TextContent))
        return f"tools: {tools}; progress: {','.join(progress)}; result: {text}"


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    # (the first text block: a context proxy before the agent puts its line first)
    first = next((b.text for b in ctx.params.prompt if getattr(b, "type", None) == "text"), "")
    words = first.strip().split(" ", 3)
    servers = _servers(ctx)
    if words[0] == "servers":
        lines = [f"{s.get('type', 'stdio')} {name} {urlsplit(s['url']).hostname if 'url' in s else '-'}"
                 for name, s in sorted(servers.items())]
        await ctx.send_text("\n".join(lines))
        return
    name = words[1] if len(words) > 1 else ""
    if name not in servers or "url" not in servers[name]:
        await ctx.send_text(f"failed: no HTTP MCP server {name!r}")
        return
    try:
        if words[0] == "hang":
            reply = await _call(servers[name], "hang", {}, hang=True)
        else:
            reply = await _call(servers[name], words[2], json.loads(words[3]) if len(words) > 3 else {})
    except Exception as exc:  # (the test reads the failure as the reply; anyio wraps it in groups)
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        reply = f"failed: {type(exc).__name__}: {exc}"
    await ctx.send_text(reply)


if __name__ == "__main__":
    run_agent(app)
