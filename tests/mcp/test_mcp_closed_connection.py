"""A closed ACP connection leaves nothing of MCP-over-ACP behind: no listener (the agent's
McpHttpBridge), no relay process (its stdio relays), no task, and no MCP server process of a
client's McpBridge once it is left. The agent runs in this process (so what it leaves is seen
here, not swept away by a process exit), over real pipes; its relays and the MCP server are
real processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from procs import running as _running

from acplink import AgentApp, Client, McpCall, PromptContext
from acplink.agent.serve import serve
from acplink.transports.stdio import StdioTransport

pytest.importorskip("uvicorn")

pytestmark = pytest.mark.parametrize("version", [1, 2])

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


class Agent:
    """An acplink agent whose own MCP clients reach the client's server ``tools`` through
    ``ctx.mcp.http()``, and leave things running when the turn ends, as long-lived MCP clients
    do: a stdio relay process (kept), an HTTP request in flight, a call over ACP in flight.

    Prompts: ``relay`` (starts a relay, calls ``echo`` through it: replies its text); ``hang
    TOOL JSON`` (POSTs a ``tools/call`` of TOOL over HTTP and leaves it waiting: replies
    ``posted``); ``background TOOL JSON`` (the same call with ``ctx.mcp`` in a task of its own:
    replies ``started``)."""

    def __init__(self) -> None:
        self.app = AgentApp("leaving-agent", protocols=(1, 2))
        self.relays: list[asyncio.subprocess.Process] = []
        self.pending: list[asyncio.Task[Any]] = []
        self.port: int | None = None

        @self.app.prompt
        async def prompt(ctx: PromptContext) -> None:
            endpoint = (await ctx.mcp.http())["tools"]
            self.port = httpx.URL(endpoint.url).port
            cmd, _, rest = ctx.text.partition(" ")
            tool, _, args = rest.partition(" ")
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": tool, "arguments": json.loads(args or "{}"), "_meta": META}}
            if cmd == "relay":
                spec = endpoint.stdio_server()
                env = {**os.environ, **{e["name"]: e["value"] for e in spec["env"]}}
                relay = await asyncio.create_subprocess_exec(
                    spec["command"], *spec["args"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL)
                self.relays.append(relay)
                assert relay.stdin is not None and relay.stdout is not None
                call["params"] = {"name": "echo", "arguments": {"text": "via the relay"}}
                relay.stdin.write(json.dumps(call).encode() + b"\n")
                answer = json.loads(await relay.stdout.readline())
                await ctx.send_text(answer["result"]["content"][0]["text"])
            elif cmd == "hang":
                async def post() -> httpx.Response:
                    async with httpx.AsyncClient(timeout=None) as http:
                        return await http.post(endpoint.url, json=call, headers={**ACCEPT, **endpoint.headers})

                self.pending.append(asyncio.ensure_future(post()))
                await ctx.send_text("posted")
            elif cmd == "background":
                self.pending.append(asyncio.ensure_future(ctx.mcp.request("tools", "tools/call", call["params"])))
                await ctx.send_text("started")


@contextlib.asynccontextmanager
async def piped(app: AgentApp, version: int) -> AsyncIterator[tuple[Client, asyncio.Task[None]]]:
    """A client and ``app`` (served in this process) over two OS pipes; the task serving it
    ends when the client closes its end."""
    to_agent, to_client = os.pipe(), os.pipe()
    serving = asyncio.ensure_future(serve(app, StdioTransport(stdin_fd=to_agent[0], stdout_fd=to_client[1],
                                                              protect_stdout=False)))
    client = Client(StdioTransport(stdin_fd=to_client[0], stdout_fd=to_agent[1], protect_stdout=False),
                    protocol=version)
    try:
        await client.start()
    finally:
        for fd in (*to_agent, *to_client):  # (both sides hold copies: closing theirs ends the link)
            os.close(fd)
    try:
        yield client, serving
    finally:
        await client.aclose()
        await serving


async def _say(session: Any, text: str) -> str:
    await session.prompt(text)
    message = session.state.last_agent_message
    assert message is not None
    return str(message.text)


def _live_tasks() -> set[asyncio.Task[Any]]:
    return {t for t in asyncio.all_tasks() if not t.done()}


async def _until(predicate: Any) -> None:
    while not predicate():
        await asyncio.sleep(0.01)


async def test_the_agents_listener_relays_and_tasks_go_with_the_connection(version: int, tmp_path: Path) -> None:
    agent = Agent()
    cancelled: list[str] = []

    async def tools(call: McpCall) -> Any:
        if call.arguments.get("hang"):
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(call.method)
                raise
        return {"content": [{"type": "text", "text": f"echo: {call.arguments.get('text')}"}]}

    before = _live_tasks()
    async with piped(agent.app, version) as (client, serving):
        reg = client.mcp.register("tools", tools)
        session = await client.new_session(tmp_path)
        assert await _say(session, "relay") == "echo: via the relay"
        assert await _say(session, 'hang echo {"hang": true}') == "posted"
        assert await _say(session, 'background echo {"hang": true}') == "started"
        await _until(lambda: reg.active == 2)  # (both reached the client's server, and wait there)
        port = agent.port
        assert port is not None
        socket.create_connection(("127.0.0.1", port), timeout=30).close()  # (listening)
        [relay] = agent.relays
        assert relay.returncode is None
    assert serving.done()
    # the listener is closed, though this process (the agent's) lives on
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=30).close()
    # the relay noticed and exited by itself
    assert await asyncio.wait_for(relay.wait(), 60) == 0
    # what was in flight ended: the client cancelled its handlers; the agent's HTTP request was
    # answered (cancelled, or the connection's end, whichever the bridge heard first) and its
    # ACP call failed, instead of waiting for ever
    assert sorted(cancelled) == ["tools/call", "tools/call"]
    posted, background = agent.pending
    answer = (await asyncio.wait_for(posted, 60)).json()
    assert answer["error"]["code"] in (-32800, -32603), answer
    with pytest.raises(Exception) as err:
        await asyncio.wait_for(background, 60)
    assert type(err.value).__name__ in ("ConnectionClosed", "RequestError")
    # and no task of the connection, the bridge or its handlers is left
    assert _live_tasks() - before == set()


async def test_a_command_mcp_bridge_leaves_no_process_or_task(version: int, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from acplink.client import McpBridge

    server = Path(__file__).with_name("mcp_tools_server.py")
    marker = f"--marker={uuid.uuid4().hex}"
    agent = Agent()
    before = _live_tasks()
    async with McpBridge([sys.executable, str(server), marker]) as bridge:
        async with piped(agent.app, version) as (client, _):
            reg = client.mcp.register("tools", bridge)
            session = await client.new_session(tmp_path)
            assert await _say(session, "relay") == "echo: via the relay"
            # a call the MCP server is running when the connection closes
            assert await _say(session, 'background sleep {"seconds": 600}') == "started"
            await _until(lambda: reg.active == 1)
            assert len(_running(marker)) == 1
        # the connection closed: the call was cancelled, the bridge goes on for other connections
        assert reg.active == 0
        result = await bridge(McpCall("x", "after", "tools/call", {"name": "echo", "arguments": {"text": "still"},
                                                                    "_meta": META}))
        assert result["content"][0]["text"] == "echo: still"
        assert len(_running(marker)) == 1
    # left: the MCP server process is gone, and so are the bridge's tasks
    await asyncio.wait_for(_until(lambda: not _running(marker)), 60)
    [relay] = agent.relays
    assert await asyncio.wait_for(relay.wait(), 60) == 0
    for pending in agent.pending:
        with contextlib.suppress(Exception):
            await pending
    assert _live_tasks() - before == set()
