#!/usr/bin/env python3
"""Interop peer: an acplink agent (ACP v1 and v2) whose MCP client speaks only HTTP.

    python tests/interop/mcp_http_agent.py

Each prompt ``SERVER [ERA]`` gives the session's ``acp`` MCP server SERVER a loopback endpoint
(:class:`acplink.agent.McpHttpBridge`, ``bridge.serve(ctx.mcp)``) and runs the MCP TypeScript
SDK's client against it (``js/mcp_http_client.mjs``, ERA ``modern`` or ``legacy``): the reply is
that client's JSON line. One bridge per prompt, closed when the prompt ends.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from acplink import AgentApp, PromptContext, run_agent
from acplink.agent import McpHttpBridge

CLIENT = Path(__file__).resolve().parent / "js" / "mcp_http_client.mjs"

app = AgentApp("mcp-http-agent", "1.0", protocols=(1, 2))


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    server, _, era = ctx.text.strip().partition(" ")
    async with McpHttpBridge() as bridge:
        endpoint = bridge.serve(ctx.mcp)[server]
        proc = await asyncio.create_subprocess_exec(
            shutil.which("node") or "node", str(CLIENT), "--url", endpoint.url, "--token", endpoint.token,
            "--era", era or "modern", stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
    await ctx.send_text(out.decode().strip())


if __name__ == "__main__":
    run_agent(app)
