"""The smallest useful ACP agent: echoes every prompt back.

Editors spawn it over stdio:  python examples/echo_agent.py
Try it:                       acplink chat -- python examples/echo_agent.py
"""

from acplink import AgentApp, PromptContext, run_agent

app = AgentApp("echo-agent")


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    await ctx.send_text(f"You said: {ctx.text}")


if __name__ == "__main__":
    run_agent(app)
