"""A proxy's own MCP server (MCP-over-ACP): declared in the sessions it forwards, called by the
agent through the chain; ``mcp/message`` for the client's servers passes on."""

from __future__ import annotations

from pathlib import Path

from proxy_raw import DEMO, HERE, PY, conduct

from acplink import connect
from acplink.mcp import McpServer

MCP_PROXY = f"{PY} {HERE / 'components' / 'mcp_proxy.py'}"


async def test_the_agent_calls_the_proxys_mcp_tool(tmp_path: Path) -> None:
    async with connect(conduct("acplink:passthrough", MCP_PROXY, agent=DEMO),
                       env={"ACPLINK_DEMO_STORE": str(tmp_path)}) as client:
        session = await client.new_session(cwd=tmp_path)
        await session.prompt('mcp echo {"text": "hi"}')
        message = session.state.last_agent_message
    assert message is not None and message.text == "echo: proxy echoes hi"


async def test_the_clients_mcp_server_still_answers_behind_the_proxys(tmp_path: Path) -> None:
    mine = McpServer("client-tools")

    @mine.tool()
    def echo(text: str) -> str:
        """The client's echo."""
        return f"client echoes {text}"

    async with connect(conduct(MCP_PROXY, agent=DEMO), env={"ACPLINK_DEMO_STORE": str(tmp_path)}) as client:
        client.mcp.register("client-tools", mine)
        session = await client.new_session(cwd=tmp_path)
        await session.prompt("mcp")
        message = session.state.last_agent_message
    assert message is not None
    lines = sorted(message.text.splitlines())
    assert lines == ["client-tools: tools: echo; echo: client echoes ping",
                     "proxy-tools: tools: echo; echo: proxy echoes ping"]
