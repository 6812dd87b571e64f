"""A proxy with typed hooks (params annotated with models), for the proxy tests: it adds a block
to every prompt and upper-cases the agent's message chunks on their way to the client."""

from typing import Any

from acplink import ProxyApp, ProxyContext, schema
from acplink.methods import SESSION_PROMPT, SESSION_UPDATE

app = ProxyApp("typed")


@app.from_client(SESSION_PROMPT)
async def prompt(ctx: ProxyContext, params: schema.PromptRequest) -> Any:
    params.prompt.append(schema.TextContent(text=" and more"))
    return await ctx.forward(params)


@app.from_agent(SESSION_UPDATE)
async def update(ctx: ProxyContext, params: schema.SessionNotification) -> None:
    if isinstance(params.update, schema.AgentMessageChunk) and isinstance(params.update.content, schema.TextContent):
        params.update.content.text = params.update.content.text.upper()
    await ctx.forward(params)


if __name__ == "__main__":
    app.run()
