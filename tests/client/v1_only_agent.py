"""A v1-only AgentApp (the default ``protocols=(1,)``) that replies with what ``initialize``
told it about the client: its name (v2's ``info`` becomes v1's ``clientInfo``) and whether it
has fs methods (a v2 client has none)."""

from acplink import AgentApp, PromptContext, run_agent

app = AgentApp("v1-only")


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    info = ctx.connection.client_info
    caps = ctx.client_capabilities
    fs = bool(caps is not None and caps.fs is not None and caps.fs.read_text_file)
    await ctx.send_text(f"client={info.name if info is not None else None} fs={fs}")


if __name__ == "__main__":
    run_agent(app)
