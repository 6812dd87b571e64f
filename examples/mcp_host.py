"""An MCP host calling an ACP agent as a tool: it starts ``acplink mcp-server`` (here with the
built-in demo agent) over stdio with the Python ``mcp`` client, prompts the agent twice in one
session (the reply streams as progress), and lists the sessions.

    pip install 'acplink[mcp]'
    python examples/mcp_host.py
"""

import asyncio
import sys
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

SERVER = StdioServerParameters(command=sys.executable,
                               args=["-m", "acplink", "mcp-server", "--", sys.executable, "-m", "acplink.demo"])


async def main() -> None:
    async with Client(stdio_client(SERVER)) as host:
        streamed: list[str] = []

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            streamed.append(message or "")  # the reply, as the agent streams it

        first = await host.call_tool("prompt", {"text": "hello"}, progress_callback=progress)
        reply: dict[str, Any] = first.structured_content or {}
        print(reply["reply"], "| streamed:", "".join(streamed))
        again = await host.call_tool("prompt", {"text": "plan tests; code", "session_id": reply["sessionId"]})
        continued: dict[str, Any] = again.structured_content or {}
        print(continued["reply"])
        listed: dict[str, Any] = (await host.call_tool("list_sessions", {})).structured_content or {}
        print(len(listed["sessions"]), "session(s)")


asyncio.run(main())
