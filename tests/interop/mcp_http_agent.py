#!/usr/bin/env python3
"""Interop peer: an acplink agent (ACP v1 and v2) whose MCP client speaks only HTTP.

    python tests/interop/mcp_http_agent.py

Each prompt ``SERVER [ERA]`` gives the session's ``acp`` MCP server SERVER a loopback endpoint
(:class:`acplink.agent.McpHttpBridge`, ``bridge.serve(ctx.mcp)``) and runs the MCP TypeScript
SDK's client against it (``js/mcp_http_client.mjs``, ERA ``modern`` or ``legacy``): the reply is
that client's JSON line. ERA ``python`` runs the Python ``mcp`` package's client instead, in
this process, the same steps with the same JSON reply: tools/list; tools/call echo
``{"text": "via http"}`` with progress; tools/call fail (an inner error); tools/call hang,
cancelled at its first progress report. One bridge per prompt, closed when the prompt ends.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from acplink import AgentApp, PromptContext, run_agent
from acplink.agent import HttpEndpoint, McpHttpBridge

CLIENT = Path(__file__).resolve().parent / "js" / "mcp_http_client.mjs"

app = AgentApp("mcp-http-agent", "1.0", protocols=(1, 2))


async def python_client(endpoint: HttpEndpoint) -> dict[str, Any]:
    """The Python ``mcp`` client's run against ``endpoint`` (see the module)."""
    import httpx2
    from mcp import Client, MCPError
    from mcp.client.streamable_http import streamable_http_client
    from mcp.types import TextContent

    out: dict[str, Any] = {}
    async with httpx2.AsyncClient(headers=endpoint.headers, timeout=30) as http, \
            Client(streamable_http_client(endpoint.url, http_client=http), cache=None) as client:
        out["tools"] = [t.name for t in (await client.list_tools()).tools]
        progress: list[float] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append(done)

        echo = await client.call_tool("echo", {"text": "via http"}, progress_callback=on_progress)
        out["progress"] = progress
        out["result"] = " ".join(b.text for b in echo.content if isinstance(b, TextContent))
        try:
            failed = await client.call_tool("fail", {})
            out["fail"] = {"isError": failed.isError}
        except MCPError as exc:
            out["fail"] = {"code": exc.error.code, "message": exc.error.message}
        started = asyncio.Event()

        async def started_now(done: float, total: float | None, message: str | None) -> None:
            started.set()

        hang = asyncio.ensure_future(client.call_tool("hang", {}, progress_callback=started_now))
        await started.wait()
        hang.cancel()
        try:
            await hang
            out["hang"] = "answered"
        except asyncio.CancelledError:
            out["hang"] = "aborted"
    return out


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    server, _, era = ctx.text.strip().partition(" ")
    async with McpHttpBridge() as bridge:
        endpoint = bridge.serve(ctx.mcp)[server]
        if era == "python":
            await ctx.send_text(json.dumps(await python_client(endpoint)))
            return
        proc = await asyncio.create_subprocess_exec(
            shutil.which("node") or "node", str(CLIENT), "--url", endpoint.url, "--token", endpoint.token,
            "--era", era or "modern", stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
    await ctx.send_text(out.decode().strip())


if __name__ == "__main__":
    run_agent(app)
