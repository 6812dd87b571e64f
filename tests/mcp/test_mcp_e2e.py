"""MCP-over-ACP end to end over a real subprocess pipe: an acplink agent calling (``ctx.mcp``)
the MCP servers an acplink client provides (``client.mcp``), on ACP v1 and v2."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import Client, McpCall, McpError, connect

AGENT = [sys.executable, str(Path(__file__).with_name("mcp_agent.py"))]

pytestmark = pytest.mark.parametrize("version", [1, 2])


class Tools:
    """A small hand-written MCP server: echo (with progress), fail, boom, hang."""

    def __init__(self) -> None:
        self.calls: list[McpCall] = []
        self.cancelled = 0

    async def __call__(self, call: McpCall) -> Any:
        self.calls.append(call)
        if call.method == "tools/list":
            return {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "fail", "hang")]}
        if call.method != "tools/call":
            raise McpError(-32601, f"Method not found: {call.method}")
        name = call.params["name"] if call.params else None
        if name == "echo":
            await call.progress(1, 2)
            await call.progress(2, 2)
            return {"content": [{"type": "text", "text": f"echo: {call.arguments.get('text')}"}]}
        if name == "fail":
            raise McpError(-32602, "bad arguments", {"field": "text"})
        if name == "boom":
            raise RuntimeError("secret /home/path detail")
        if name == "hang":
            await call.progress(0)
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        raise McpError(-32602, f"unknown tool {name}")


async def _cancelled_once(tools: Tools) -> None:
    """The provider's handler was cancelled (the cancel travels after the caller's answer)."""
    for _ in range(500):
        if tools.cancelled:
            break
        await asyncio.sleep(0.01)
    assert tools.cancelled == 1


async def _say(client: Client, session: Any, text: str) -> str:
    turn = session.prompt(text)
    chunks = [u.content.text async for u in turn if getattr(u, "content", None) is not None
              and getattr(u.content, "text", None) is not None]
    assert turn.stop_reason == "end_turn"
    return "".join(chunks)


async def test_tools_list_and_call_with_progress_and_a_tool_call(version: int, tmp_path: Path) -> None:
    tools = Tools()
    async with connect(AGENT, protocol=version, workspace=False) as client:
        reg = client.mcp.register("tools", tools)
        session = await client.new_session(tmp_path)
        assert await _say(client, session, "servers") == f"tools={reg.server_id}"
        assert await _say(client, session, "tools tools") == "echo,fail,hang"
        out = await _say(client, session, 'call tools echo {"text": "ping"}')
        assert out == "progress: 1,2; result: echo: ping"
        # the call shows as an ACP tool call: its arguments in, the result out, completed
        [tc] = list(session.state.tool_calls.values())
        assert tc.title == "echo" and tc.status == "completed"
        assert tc.raw_input == {"text": "ping"}
        assert tc.raw_output["content"] == [{"type": "text", "text": "echo: ping"}]
    # what the provider's handler got: the ids, the method, the MCP metadata the caller added
    call = tools.calls[-1]
    assert call.server_id == reg.server_id and call.name == "tools" and call.session_id is None
    assert call.mcp_meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert call.mcp_meta["io.modelcontextprotocol/clientCapabilities"] == {}
    assert call.mcp_meta["io.modelcontextprotocol/clientInfo"] == {"name": "mcp-agent", "version": "1.0"}


async def test_inner_error_is_a_value_and_fails_the_tool_call(version: int, tmp_path: Path) -> None:
    async with connect(AGENT, protocol=version, workspace=False) as client:
        client.mcp.register("tools", Tools())
        session = await client.new_session(tmp_path)
        assert await _say(client, session, 'call tools fail {}') == "mcp-error: -32602 bad arguments"
        [tc] = list(session.state.tool_calls.values())
        assert tc.status == "failed"
        out = await _say(client, session, 'request tools tools/call {"name": "fail"}')
        assert out == 'mcp-error: -32602 bad arguments {"field": "text"}'


async def test_handler_crash_is_33002_without_details(version: int, tmp_path: Path) -> None:
    async with connect(AGENT, protocol=version, workspace=False) as client:
        client.mcp.register("tools", Tools())
        session = await client.new_session(tmp_path)
        out = await _say(client, session, 'request tools tools/call {"name": "boom"}')
        assert out.startswith("outer: -33002 MCP server handler failed: RuntimeError")
        assert "secret" not in out and "Traceback" not in out
        # the connection goes on
        assert await _say(client, session, "tools tools") == "echo,fail,hang"


async def test_unknown_server_and_unregistered_server_are_33001(version: int, tmp_path: Path) -> None:
    async with connect(AGENT, protocol=version, workspace=False) as client:
        reg = client.mcp.register("tools", Tools())
        session = await client.new_session(tmp_path)
        assert (await _say(client, session, "tools nope")).startswith("outer: -33001 ")
        await reg.unregister()
        assert (await _say(client, session, "tools tools")).startswith("outer: -33001 ")


async def test_caller_timeout_does_not_hold_the_turn_and_cancels_the_handler(version: int, tmp_path: Path) -> None:
    tools = Tools()
    async with connect(AGENT, protocol=version, workspace=False) as client:
        client.mcp.register("tools", tools)
        session = await client.new_session(tmp_path)
        assert await _say(client, session, "timeout tools") == "timed out"
        # the caller's $/cancel_request reached the provider: its handler was cancelled
        await _cancelled_once(tools)
        assert await _say(client, session, "tools tools") == "echo,fail,hang"


async def test_cancelling_the_caller_cancels_the_provider(version: int, tmp_path: Path) -> None:
    tools = Tools()
    async with connect(AGENT, protocol=version, workspace=False) as client:
        client.mcp.register("tools", tools)
        session = await client.new_session(tmp_path)
        assert await _say(client, session, "cancel tools") == "cancelled"
        await _cancelled_once(tools)


async def test_flood_beyond_the_limit_is_33000_and_the_connection_stays_usable(version: int,
                                                                               tmp_path: Path) -> None:
    tools = Tools()
    release = asyncio.Event()

    async def gate(call: McpCall) -> Any:
        release.set()
        return {"content": []}

    async def hanging(call: McpCall) -> Any:
        await release.wait()
        return {"content": [{"type": "text", "text": "done"}]}

    async with connect(AGENT, protocol=version, workspace=False) as client:
        client.mcp.register("tools", hanging)
        client.mcp.register("gate", gate)
        session = await client.new_session(tmp_path)
        assert await _say(client, session, "flood tools 70") == "ok=64 limit=6"
        assert tools.cancelled == 0


async def test_per_session_servers_know_their_session_and_are_redeclared(version: int, tmp_path: Path) -> None:
    tools = Tools()
    async with connect(AGENT, protocol=version, workspace=False) as client:
        reg = client.mcp.register("mine", tools, per_session=True)
        one = await client.new_session(tmp_path)
        two = await client.new_session(tmp_path)
        id_one, id_two = reg.server_id_of(one.session_id), reg.server_id_of(two.session_id)
        assert id_one and id_two and id_one != id_two
        assert await _say(client, one, "servers") == f"mine={id_one}"
        await _say(client, two, "tools mine")
        assert tools.calls[-1].session_id == two.session_id
        await _say(client, one, "tools mine")
        assert tools.calls[-1].session_id == one.session_id
        again = await client.resume_session(one.session_id, tmp_path) if client.offers("resume_session") else None
        if again is not None:  # the session's servers, declared again: the same ids
            assert await _say(client, again, "servers") == f"mine={id_one}"


async def test_no_declarations_to_an_agent_that_does_not_take_acp_servers(version: int, tmp_path: Path) -> None:
    from acplink import AgentApp, PromptContext

    app = AgentApp("no-mcp", protocols=(1, 2), mcp_over_acp=False)
    seen: list[Any] = []

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        seen.append(ctx.session.mcp_servers)

    async with connect(app, protocol=version) as client:
        client.mcp.register("tools", Tools())
        session = await client.new_session(tmp_path)
        await session.prompt("hi")
        assert seen == [[]]
        # declaring one anyway is refused -32602, with data
        from acplink import InvalidParams

        with pytest.raises(InvalidParams) as err:
            await client.new_session(tmp_path, mcp_servers=[{"type": "acp", "name": "x", "serverId": "y"}])
        assert err.value.data["transport"] == "acp"
        json.dumps(err.value.data)
