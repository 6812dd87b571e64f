"""The demo agent's ``mcp`` command over a real subprocess pipe (``python -m acplink.demo``), on
ACP v1 and v2: it lists the tools of every ``acp`` MCP server the client declared, calls each
``echo`` (an ACP tool call per call, progress shown), and ``mcp TOOL JSON`` calls one tool;
the reply formats of docs/mcp.md and acplink/demo/mcp_command.py."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import McpCall, McpError, connect
from acplink.demo.agent import COMMANDS

pytestmark = pytest.mark.parametrize("version", [1, 2])

DEMO = [sys.executable, "-m", "acplink.demo"]


class Server:
    """A hand-written MCP server with the given tools: ``echo`` (with progress), ``count``,
    ``fail`` (an inner error), ``hang``; ``broken`` makes tools/list an inner error."""

    def __init__(self, *tools: str, broken: bool = False, tag: str = "") -> None:
        self.tools = tools
        self.broken = broken
        self.tag = tag
        self.calls: list[McpCall] = []
        self.cancelled = asyncio.Event()
        #: set when a ``hang`` call is running (its handler started)
        self.hanging = asyncio.Event()

    async def __call__(self, call: McpCall) -> Any:
        self.calls.append(call)
        if call.method == "tools/list":
            if self.broken:
                raise McpError(-32603, "the index is gone")
            return {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in self.tools]}
        name = (call.params or {}).get("name")
        if name not in self.tools:
            raise McpError(-32602, f"Unknown tool: {name}")
        if name == "echo":
            await call.progress(1, 2, "halfway")
            await call.progress(2, 2)
            return {"content": [{"type": "text", "text": f"echo{self.tag}: {call.arguments.get('text')}"}]}
        if name == "count":
            return {"content": [{"type": "text", "text": f"counted to {call.arguments.get('n')}"}]}
        if name == "fail":
            return {"content": [{"type": "text", "text": "it went wrong"}], "isError": True}
        if name == "hang":
            self.hanging.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
        raise McpError(-32603, "unreachable")


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ACPLINK_DEMO_STORE": str(tmp_path / "store")}


async def _say(session: Any, text: str) -> str:
    await session.prompt(text)
    message = session.state.last_agent_message
    assert message is not None
    return str(message.text)


async def test_mcp_lists_tools_and_echoes_with_a_tool_call_and_progress(version: int, tmp_path: Path) -> None:
    server = Server("echo", "count")
    async with connect(DEMO, protocol=version, env=_env(tmp_path)) as client:
        client.mcp.register("tools", server)
        session = await client.new_session(tmp_path)
        updates: list[Any] = []
        turn = session.prompt("mcp")
        async for update in turn:
            updates.append(update)
        assert turn.stop_reason == "end_turn"
        assert session.state.last_agent_message.text == "tools: echo, count; echo: echo: ping"
        [tc] = list(session.state.tool_calls.values())
        assert (tc.title, tc.status, tc.raw_input) == ("echo", "completed", {"text": "ping"})
        # the progress reports updated the tool call's content before the result replaced it
        progress = [u.content[0].content.text for u in updates
                    if getattr(u, "tool_call_id", None) and u.status is None and u.content]
        assert progress == ["halfway (1/2)", "progress 2/2"]
    assert [c.method for c in server.calls] == ["tools/list", "tools/call"]
    assert server.calls[1].params is not None and server.calls[1].params["arguments"] == {"text": "ping"}


async def test_several_servers_one_line_each_named(version: int, tmp_path: Path) -> None:
    async with connect(DEMO, protocol=version, env=_env(tmp_path)) as client:
        client.mcp.register("a", Server("echo", tag="-a"))
        client.mcp.register("b", Server("count"))
        client.mcp.register("c", Server())
        client.mcp.register("d", Server("echo", broken=True))
        session = await client.new_session(tmp_path)
        assert await _say(session, "mcp") == ("a: tools: echo; echo: echo-a: ping\n"
                                              "b: tools: count\n"
                                              "c: tools: (none)\n"
                                              "d: tools: error: the index is gone")
        assert [tc.title for tc in session.state.tool_calls.values()] == ["echo"]


async def test_mcp_tool_json_calls_one_tool(version: int, tmp_path: Path) -> None:
    a, b = Server("echo", tag="-a"), Server("echo", "count", tag="-b")
    async with connect(DEMO, protocol=version, env=_env(tmp_path)) as client:
        client.mcp.register("a", a)
        client.mcp.register("b", b)
        session = await client.new_session(tmp_path)
        # the first server that lists the tool; SERVER/TOOL picks one
        assert await _say(session, 'mcp count {"n": 3}') == "count: counted to 3"
        assert await _say(session, 'mcp b/echo {"text": "hi"}') == "echo: echo-b: hi"
        assert await _say(session, 'mcp echo {"text": "hi"}') == "echo: echo-a: hi"
        statuses = [(tc.title, tc.status) for tc in session.state.tool_calls.values()]
        assert statuses == [("count", "completed"), ("echo", "completed"), ("echo", "completed")]
    assert [c.arguments for c in b.calls if c.method == "tools/call"] == [{"n": 3}, {"text": "hi"}]


async def test_mcp_errors_are_replies(version: int, tmp_path: Path) -> None:
    async with connect(DEMO, protocol=version, env=_env(tmp_path)) as client:
        client.mcp.register("tools", Server("echo", "fail"))
        session = await client.new_session(tmp_path)
        # an unknown tool: the MCP error's text; a result with isError: its text
        assert await _say(session, "mcp nope {}") == "nope: error: Unknown tool: nope"
        assert await _say(session, "mcp fail") == "fail: error: it went wrong"
        assert [tc.status for tc in session.state.tool_calls.values()] == ["failed", "failed"]
        # bad JSON, or JSON that is not an object: a clear reply, no tool call
        bad = await _say(session, "mcp echo {text: hi}")
        assert bad.startswith("The arguments of echo are not JSON (") and 'mcp echo {"text": "hi"}' in bad
        assert await _say(session, "mcp echo [1]") == ('The arguments of echo must be a JSON object, not list: '
                                                      'e.g. mcp echo {"text": "hi"}')
        assert len(session.state.tool_calls) == 2
        # the session goes on
        assert await _say(session, "mcp") == "tools: echo, fail; echo: echo: ping"


async def test_no_servers_says_how_to_give_some(version: int, tmp_path: Path) -> None:
    async with connect(DEMO, protocol=version, env=_env(tmp_path)) as client:
        session = await client.new_session(tmp_path)
        reply = await _say(session, "mcp")
        assert reply.startswith("No MCP servers were declared for this session") and "--mcp NAME=COMMAND" in reply
        assert "mcp [TOOL JSON]" in await _say(session, "help")
        assert not session.state.tool_calls
    assert ("mcp", "List and call the tools of your MCP servers (--mcp)", "[TOOL JSON]") in COMMANDS


async def test_cancelling_the_turn_cancels_the_mcp_call(version: int, tmp_path: Path) -> None:
    server = Server("hang")
    async with connect(DEMO, protocol=version, env=_env(tmp_path)) as client:
        client.mcp.register("tools", server)
        session = await client.new_session(tmp_path)
        turn = session.prompt("mcp hang {}")
        sent = False
        async for update in turn:
            if getattr(update, "tool_call_id", None) and not sent:
                sent = True
                # (the tool call is announced before the agent makes the MCP call: cancelling
                # at once could end the turn before the call exists; cancel the running call)
                await asyncio.wait_for(server.hanging.wait(), 10)
                await turn.cancel()
        assert turn.stop_reason == "cancelled"
        await asyncio.wait_for(server.cancelled.wait(), 10)  # ($/cancel_request reached the provider)
        [tc] = list(session.state.tool_calls.values())
        assert tc.status == "failed"
