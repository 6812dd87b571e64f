"""An agent that asks before it acts: a tool call, a permission request, then a file write.

``save NAME TEXT`` writes NAME (relative to the session's cwd) through the client, after
asking permission; the tool call shows the diff. A rejected (or cancelled) request is
reported, and the tool call fails.

    python examples/permission_agent.py      # serves ACP on stdio
"""

from __future__ import annotations

import os

from acplink import AgentApp, PromptContext, builders, run_agent

app = AgentApp("permission-agent", "1.0.0")


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    cmd, _, rest = ctx.text.strip().partition(" ")
    name, _, body = rest.partition(" ")
    if cmd != "save" or not name:
        await ctx.send_text("Usage: save NAME TEXT")
        return
    path = os.path.join(ctx.session.cwd, name)
    tool = await ctx.start_tool_call(f"Write {name}", kind="edit",
                                     content=[builders.diff(path, new_text=body + "\n")],
                                     locations=[builders.location(path)])
    answer = await ctx.request_permission(tool)  # default options: allow / allow_always / reject
    if not answer.allowed:
        await tool.fail()
        await ctx.send_text(f"Not saved ({answer.outcome}: {answer.option_id}).")
        return
    await ctx.write_file(path, body + "\n")
    await tool.complete()
    await ctx.send_text(f"Saved {name}.")


if __name__ == "__main__":
    run_agent(app)
