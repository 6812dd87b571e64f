"""A prompt handler's session is always there; another request's may be absent."""

from acplink import AgentApp, Context, PromptContext, builders, schema

app = AgentApp("typing")


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    print(ctx.session.cwd, ctx.session.data)
    tool = await ctx.start_tool_call("Edit", kind="edit", content=[builders.diff("/a", old_text="x", new_text="y")])
    await tool.complete()
    await ctx.start_tool_call("Edit", kind="edits")  # error


@app.new_session
async def new_session(ctx: Context[schema.NewSessionRequest]) -> None:
    print(ctx.session.cwd)  # error
    if ctx.session is not None:
        print(ctx.session.cwd)


builders.diff("/a", "old", "new")  # error
builders.permission_option("ok", "Allow", "allow_once")  # error
