"""Starting ``acplink mcp-server`` as a real subprocess, reached by the Python ``mcp`` client
over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
DEMO = [sys.executable, "-m", "acplink.demo"]
JS_DIR = HERE.parent / "interop" / "js"
NODE = shutil.which("node")
#: an agent on the official ACP TypeScript SDK (tests/interop/js), and why it cannot run here
TS_AGENT = [str(NODE), str(JS_DIR / "agent.mjs")]
TS_MISSING = ("node not found on PATH" if NODE is None else None if (JS_DIR / "node_modules" / "@agentclientprotocol"
              / "sdk").is_dir() else "the TS SDK is not installed: (cd tests/interop/js && npm ci)")


def server_argv(agent: list[str], *options: str) -> list[str]:
    return [sys.executable, "-m", "acplink", "mcp-server", *options, "--", *agent]


@contextlib.asynccontextmanager
async def stdio_mcp(agent: list[str], *options: str, cwd: Path | None = None, **client: Any) -> AsyncIterator[Any]:
    """An MCP client session with ``acplink mcp-server OPTIONS -- AGENT`` started over stdio."""
    argv = server_argv(agent, *options)
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(cwd) if cwd else None,
                                    env=dict(os.environ))
    async with Client(stdio_client(params), **client) as session:
        yield session


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def http_server(agent: list[str], *options: str, cwd: Path | None = None) -> Iterator[str]:
    """``acplink mcp-server --http`` as a subprocess: its MCP URL once it accepts connections."""
    port = free_port()
    proc = subprocess.Popen(server_argv(agent, "--http", f"127.0.0.1:{port}", *options), cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"mcp-server --http did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


@contextlib.asynccontextmanager
async def http_mcp(url: str, **client: Any) -> AsyncIterator[Any]:
    async with Client(streamable_http_client(url), **client) as session:
        yield session


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
