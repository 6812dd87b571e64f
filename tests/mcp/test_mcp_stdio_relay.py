"""The stdio relay: an MCP client that only launches stdio servers reaches an MCP-over-ACP server
through ``HttpEndpoint.stdio_server()`` (a relay process talking to the agent's McpHttpBridge).
Answers and their notifications come back on stdout; requests run concurrently; the relay exits
when its input ends, and when the bridge goes away (no relay outlives its connection)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from acplink import McpError
from acplink.agent.mcp_http import HttpEndpoint, McpHttpBridge


async def provider(method: str, params: dict[str, Any] | None, notify: Any) -> Any:
    args = (params or {}).get("arguments") or {}
    if method == "tools/list":
        return {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        if args.get("progress"):
            await notify("notifications/progress", {"progressToken": "t", "progress": 1})
        await asyncio.sleep(float(args.get("delay", 0)))
        return {"content": [{"type": "text", "text": f"echo: {args.get('text')}"}]}
    raise McpError(-32601, f"Method not found: {method}")


@pytest.fixture
async def endpoint() -> AsyncIterator[tuple[McpHttpBridge, HttpEndpoint]]:
    async with McpHttpBridge() as bridge:
        yield bridge, bridge.add("tools", provider)


async def _start(ep: HttpEndpoint) -> asyncio.subprocess.Process:
    spec = ep.stdio_server()
    assert ep.token not in " ".join(spec["args"])  # (the token is in the environment only)
    env = {**os.environ, **{e["name"]: e["value"] for e in spec["env"]}}
    return await asyncio.create_subprocess_exec(spec["command"], *spec["args"], env=env, stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)


async def _send(proc: asyncio.subprocess.Process, msg: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(msg).encode() + b"\n")
    await proc.stdin.drain()


async def _read(proc: asyncio.subprocess.Process) -> dict[str, Any]:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line, "the relay closed its output"
    out: dict[str, Any] = json.loads(line)
    return out


def _call(rid: int, **args: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "echo", "arguments": args}}


async def test_requests_answers_notifications_and_errors(endpoint: tuple[McpHttpBridge, HttpEndpoint]) -> None:
    _, ep = endpoint
    proc = await _start(ep)
    try:
        await _send(proc, _call(1, text="hi", progress=True))
        assert await _read(proc) == {"jsonrpc": "2.0", "method": "notifications/progress",
                                     "params": {"progressToken": "t", "progress": 1}}
        assert await _read(proc) == {"jsonrpc": "2.0", "id": 1,
                                     "result": {"content": [{"type": "text", "text": "echo: hi"}]}}
        await _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "nope/x"})
        assert (await _read(proc))["error"] == {"code": -32601, "message": "Method not found: nope/x"}
        # concurrent: the slow one does not hold the quick one
        await _send(proc, _call(3, text="slow", delay=1.0))
        await _send(proc, _call(4, text="quick"))
        assert [(await _read(proc))["id"] for _ in range(2)] == [4, 3]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 30) == 0  # input ended: it exits
        assert proc.stderr is not None and await proc.stderr.read() == b""


async def test_it_exits_when_the_bridge_goes_away() -> None:
    bridge = McpHttpBridge()
    await bridge.start()
    proc = await _start(bridge.add("tools", provider))
    try:
        await _send(proc, _call(1, text="hi"))
        assert (await _read(proc))["id"] == 1
        await bridge.aclose()  # the ACP connection closed
        started = time.monotonic()
        assert await asyncio.wait_for(proc.wait(), 30) == 0
        assert time.monotonic() - started < 20  # (polled each second: no relay outlives its connection)
        assert proc.stderr is not None and await proc.stderr.read() == b""
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_request_after_the_bridge_closed_is_answered_with_an_error() -> None:
    bridge = McpHttpBridge()
    await bridge.start()
    proc = await _start(bridge.add("tools", provider))
    await bridge.aclose()
    # (sent at once: the relay reads it long before its first check of the bridge, a second on)
    await _send(proc, _call(1, text="hi"))
    answer = await _read(proc)
    assert answer["id"] == 1 and answer["error"]["code"] == -32000 and "gone" in answer["error"]["message"]
    assert await asyncio.wait_for(proc.wait(), 30) == 0


def test_without_a_token_it_says_how_to_run_it() -> None:
    env = {k: v for k, v in os.environ.items() if k != "ACPLINK_MCP_TOKEN"}
    proc = subprocess.run([sys.executable, "-m", "acplink._mcp_relay", "http://127.0.0.1:9/mcp/1"], env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stderr.startswith("usage: ACPLINK_MCP_TOKEN=TOKEN python -m acplink._mcp_relay")
    assert "Traceback" not in proc.stderr


async def test_the_python_mcp_client_launches_it(endpoint: tuple[McpHttpBridge, HttpEndpoint]) -> None:
    pytest.importorskip("mcp")
    from mcp import Client, StdioServerParameters

    _, ep = endpoint
    spec = ep.stdio_server()
    params = StdioServerParameters(command=spec["command"], args=spec["args"],
                                   env={**os.environ, **{e["name"]: e["value"] for e in spec["env"]}})
    async with Client(params, cache=None) as client:
        tools = await client.list_tools()
        result = await client.call_tool("echo", {"text": "through stdio"})
    assert [t.name for t in tools.tools] == ["echo"]
    assert result.content[0].text == "echo: through stdio"  # type: ignore[union-attr]
