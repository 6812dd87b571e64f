"""A v2 agent reading and running in the client's workspace through MCP-over-ACP.

ACP v2 has no ``fs/*`` or ``terminal/*`` requests. An acplink client offers its files and
terminals instead as an MCP server over the ACP connection itself (``workspace``, declared in
the session's ``mcpServers``), and an acplink agent's ``ctx.read_file`` / ``ctx.run`` use it:
the agent's code is the same as on v1. The client's confinement holds: the agent only reaches
the session's folder.

    python examples/v2_agent_reads_files.py            # the client: spawns this file as the agent
    python examples/v2_agent_reads_files.py --agent    # the agent alone, on stdio
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from acplink import AgentApp, PromptContext, connect, run_agent

agent = AgentApp("file-reader", "1.0", protocols=(1, 2))


@agent.prompt
async def prompt(ctx: PromptContext) -> None:
    name = ctx.text.strip()
    text = await ctx.read_file(name)  # v2: the workspace server's read_text_file tool
    async with await ctx.run("wc", "-w", name) as term:  # v2: its run tool (the client's terminal)
        await term.wait()
        words = (await term.output()).output.split()[0]
    await ctx.send_text(f"{name}: {len(text.splitlines())} lines, {words} words")


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "notes.txt").write_text("remember the milk\nand the bread\n")
        async with connect([sys.executable, __file__, "--agent"], protocol=2) as client:
            session = await client.new_session(folder)
            reg = client.workspace_registration  # what the client declared for the session
            assert reg is not None
            print(f"ACP v{client.protocol_version}; offered: {reg.name} {reg.meta}")
            await session.prompt("notes.txt")
            message = session.state.last_agent_message
            print(message.text if message is not None else "(no reply)")


if __name__ == "__main__":
    if "--agent" in sys.argv:
        run_agent(agent)
    else:
        asyncio.run(main())
