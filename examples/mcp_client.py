"""A client giving an agent a Python function as a tool, over MCP-over-ACP.

The client serves an MCP server (``words``, one tool: ``word_count``) over the ACP connection
itself: no port, no subprocess. The agent finds it in its session's ``mcpServers`` (as
``{"type": "acp", ...}``) and calls it with ``mcp/message``. Any agent that advertises ``acp``
MCP servers will do; without one, the small agent below (``counting-agent``) is used.

    python examples/mcp_client.py                       # with the agent below, in process
    python examples/mcp_client.py my-agent --acp        # with another agent
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from acplink import AgentApp, McpCall, McpError, PromptContext, ToolCall, ToolCallProgress, connect


def word_count(text: str) -> int:
    """The Python function the agent gets as a tool."""
    return len(text.split())


async def words(call: McpCall) -> Any:
    """The MCP server: ``tools/list`` and ``tools/call`` of ``word_count``."""
    if call.method == "tools/list":
        schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
        return {"tools": [{"name": "word_count", "description": "Count the words of a text", "inputSchema": schema}]}
    if call.method == "tools/call" and call.params is not None and call.params.get("name") == "word_count":
        text = call.arguments.get("text")
        if not isinstance(text, str):
            raise McpError(-32602, "word_count: `text` must be a string")
        return {"content": [{"type": "text", "text": str(word_count(text))}]}
    raise McpError(-32601, f"Method not found: {call.method}")


# -- an agent to try it with -----------------------------------------------------------------------
agent = AgentApp("counting-agent", "1.0")


@agent.prompt
async def prompt(ctx: PromptContext) -> None:
    for server in ctx.mcp.servers:  # the session's acp MCP servers: name → serverId
        names = [tool["name"] for tool in await ctx.mcp.list_tools(server)]
        if "word_count" in names:  # (shown to the client as an ACP tool call)
            result = await ctx.mcp.call_tool(server, "word_count", {"text": ctx.text})
            await ctx.send_text(f"{server}.word_count says: {result['content'][0]['text']}")
            return
    await ctx.send_text("no word_count tool was offered")


async def main() -> None:
    async with connect(sys.argv[1:] or agent) as client:
        client.mcp.register("words", words)  # declared in the sessions opened from now on
        session = await client.new_session(".")
        async for update in session.prompt("the quick brown fox"):
            if isinstance(update, ToolCall):
                print(f"[tool call] {update.title} {update.raw_input}")
            elif isinstance(update, ToolCallProgress):
                print(f"[tool call] {update.status}")
        message = session.state.last_agent_message
        print(message.text if message is not None else "(no reply)")


if __name__ == "__main__":
    asyncio.run(main())
