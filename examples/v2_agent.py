"""One agent served as ACP v1 and as the v2 draft, whichever the client asks for.

``search WORDS`` runs a slow "search" as a tool call that a v2 client may cancel on its own
(``tool_call/cancel``) while the turn goes on; anything else is echoed. Over v2 acplink owns
the lifecycle: the prompt is answered with its message id as soon as it is inserted,
``running`` / ``idle`` + stop reason are sent for you, prompts sent while busy wait their turn.

    python examples/v2_agent.py      # serves ACP on stdio (v1 and v2)
"""

from __future__ import annotations

import asyncio

from acplink import AgentApp, PromptContext, builders, run_agent

app = AgentApp("v2-agent", "1.0.0", protocols=(1, 2))


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    cmd, _, words = ctx.text.strip().partition(" ")
    if cmd != "search":
        await ctx.send_text(f"You said: {ctx.text}")
        return
    stop = asyncio.Event()
    tool = await ctx.start_tool_call(f"Search for {words!r}", kind="search", status="in_progress",
                                     on_cancel=stop.set)  # v2 clients see capabilities.cancel
    for step in range(20):
        if stop.is_set() or ctx.cancelled:
            await tool.fail(content=[builders.tool_content("Search stopped.")])
            await ctx.send_text(f"Stopped after {step} steps.")
            return
        await asyncio.sleep(0.05)
    await tool.complete(content=[builders.tool_content(f"Nothing found for {words!r}.")])
    await ctx.send_text("Done searching.")


if __name__ == "__main__":
    run_agent(app)
