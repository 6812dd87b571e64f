"""A real MCP server on the Python ``mcp`` package (2.x), for the bridge tests: run as a
command (stdio) or imported and served in process (``SERVER``)."""

from __future__ import annotations

import asyncio
import os
import sys

if __name__ == "__main__" and "--fail-at-start" in sys.argv:  # (before the slow imports)
    print("missing API key", file=sys.stderr, flush=True)
    sys.exit(2)

from mcp.server.mcpserver import Context, MCPServer

SERVER = MCPServer("acplink-test-tools")


@SERVER.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@SERVER.tool()
async def count(n: int, ctx: Context) -> str:
    """Count to n, reporting progress at each step."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
        await asyncio.sleep(0)
    return f"counted to {n}"


@SERVER.tool()
async def sleep(seconds: float) -> str:
    """Sleep (to be cancelled)."""
    await asyncio.sleep(seconds)
    return "slept"


@SERVER.tool()
def crash() -> str:
    """Exit the whole server at once (a crash)."""
    print("about to crash", file=sys.stderr, flush=True)
    os._exit(3)


if __name__ == "__main__":
    if "--http" in sys.argv:  # --http PORT: Streamable HTTP on 127.0.0.1
        SERVER.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        SERVER.run()
