"""A real MCP server on the Python ``mcp`` package (2.x), for the bridge tests: run as a
command (stdio) or imported and served in process (``SERVER``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

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


@contextlib.contextmanager
def over_http(env: dict[str, str] | None = None) -> Iterator[str]:
    """This server as a command serving Streamable HTTP on a free loopback port: its URL."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    proc = subprocess.Popen([sys.executable, __file__, "--http", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, "the MCP HTTP server exited"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    if "--http" in sys.argv:  # --http PORT: Streamable HTTP on 127.0.0.1
        SERVER.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        SERVER.run()
