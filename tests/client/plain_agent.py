"""An agent without a session store: no session/list, session/load or session/resume."""

from acplink import AgentApp, PromptContext, run_agent

app = AgentApp("plain-agent")


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    await ctx.send_text(f"plain: {ctx.text}")


if __name__ == "__main__":
    run_agent(app)
