"""One name per method: ``app.on(SESSION_PROMPT)`` / ``client.on(FS_READ_TEXT_FILE)`` type the
handler from the method table (the generated overloads of ``on``): a lambda's params are
inferred, a def's are checked; hook names stay loose."""

from typing import Literal

from acplink import AgentApp, Client, Context, PromptContext, methods, schema
from acplink.methods import FS_READ_TEXT_FILE, SESSION_NEW, SESSION_PROMPT

app = AgentApp("typing")

wire: Literal["session/prompt"] = SESSION_PROMPT  # the constant is its literal
other: Literal["session/new"] = methods.SESSION_PROMPT  # error


async def takes_prompt(params: schema.PromptRequest) -> None: ...
async def takes_new_session(params: schema.NewSessionRequest) -> None: ...


# a handler's params are inferred from the constant: ctx is a PromptContext, ctx.params a PromptRequest
app.on(SESSION_PROMPT)(lambda ctx: takes_prompt(ctx.params))
app.on(SESSION_PROMPT)(lambda ctx: takes_new_session(ctx.params))  # error
app.on(SESSION_NEW)(lambda ctx: takes_new_session(ctx.params))


@app.on(SESSION_PROMPT)
async def prompt(ctx: PromptContext) -> str:
    request: schema.PromptRequest = ctx.params
    return request.session_id


@app.on(SESSION_NEW)
async def new_session(ctx: Context[schema.NewSessionRequest]) -> None:
    print(ctx.params.cwd)


@app.on(SESSION_PROMPT)  # error
async def wrong_params(ctx: Context[schema.NewSessionRequest]) -> None:
    print(ctx.params.cwd)


@app.on("prompt")  # a hook name: any async handler
async def by_hook(ctx: Context[schema.NewSessionRequest]) -> None: ...


async def uses(ctx: PromptContext) -> None:
    stop: str = await prompt(ctx)  # the registered handler keeps its result type
    print(stop)


client = Client.__new__(Client)
client.on(FS_READ_TEXT_FILE)(lambda params: takes_prompt(params))  # error


@client.on(FS_READ_TEXT_FILE)
async def read(params: schema.ReadTextFileRequest) -> schema.ReadTextFileResponse:
    return schema.ReadTextFileResponse(content=params.path)


@client.on(methods.SESSION_REQUEST_PERMISSION)  # error
async def wrong_client_params(params: schema.ReadTextFileRequest) -> None: ...
