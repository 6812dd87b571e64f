"""An acplink agent that speaks ACP v1 and v2 and says which one its client chose: the reply to
any prompt is "ACP vN", after a tool call that asks permission ("Deploy", execute) and says
whether it was allowed."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from acplink import AgentApp, PromptContext, run_agent

app = AgentApp("versions-agent", "1.0", protocols=(1, 2))


@app.prompt
async def prompt(ctx: PromptContext) -> str:
    call = await ctx.start_tool_call("Deploy", kind="execute")
    answer = await ctx.request_permission(call)
    await (call.complete() if answer.allowed else call.fail())
    await ctx.send_text(f"ACP v{ctx.connection.protocol.version}, deploy {'allowed' if answer.allowed else 'denied'}")
    return "end_turn"


if __name__ == "__main__":
    run_agent(app)
