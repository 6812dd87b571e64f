"""The agent app that tests/agent/test_app.py drives, in memory or as a subprocess
(``python tests/agent/agents.py`` serves it on stdio).

Prompt behaviours (first word of the prompt text):

    hello            one chunk "hello"
    wrong-type       the handler returns 42 (not a stop reason): the client gets an error
    unknown-tool     updates a tool call it never started; reports the UsageError
    bogus-permission asks permission; reports the ProtocolError raised by a bad answer
    terminal ARGS    starts ARGS in a client terminal and returns without releasing it
    wait             waits until cancelled, then claims end_turn (acplink answers cancelled)
    stubborn         ignores the cancel flag: cancelled after ``cancel_grace``
    auth             fails with AuthRequired carrying ``Error.authMethods``
    anything else    echoed
"""

from __future__ import annotations

import asyncio
from typing import Any

from acplink import (
    AgentApp,
    AuthRequired,
    Context,
    PromptContext,
    ProtocolError,
    UsageError,
    run_agent,
    schema,
)


def build_app(*, cancel_grace: float = 0.2) -> AgentApp:
    app = AgentApp("test-agent", "9.9.9", cancel_grace=cancel_grace)
    notes: list[Any] = []

    @app.new_session
    async def new_session(ctx: Context[schema.NewSessionRequest]) -> Any:
        if ctx.params.cwd.endswith("wrong-type"):
            return "not a NewSessionResponse"
        return None

    @app.prompt
    async def prompt(ctx: PromptContext) -> Any:
        word, _, rest = ctx.text.partition(" ")
        if word == "hello":
            await ctx.send_text("hello")
        elif word == "wrong-type":
            return 42
        elif word == "unknown-tool":
            try:
                await ctx.update_tool_call("never-started", status="completed")
            except UsageError as exc:
                await ctx.send_text(f"UsageError: {exc}")
        elif word == "bogus-permission":
            tool = await ctx.start_tool_call("Risky", kind="edit")
            try:
                await ctx.request_permission(tool)
            except ProtocolError as exc:
                await ctx.send_text(f"ProtocolError: {exc}")
                await tool.fail()
        elif word == "terminal":
            term = await ctx.run(*rest.split())
            await ctx.send_text(term.terminal_id)  # not released: acplink does it at the end of the turn
        elif word == "wait":
            await ctx.send_text("waiting")
            await ctx.wait_cancelled()
            return "end_turn"
        elif word == "auth":
            raise AuthRequired("log in first", auth_methods=[schema.AuthMethodAgent(id="demo", name="Demo")])
        elif word == "stubborn":
            await ctx.send_text("waiting")
            await asyncio.sleep(3600)
        else:
            await ctx.send_text(ctx.text)
        return None

    @app.ext_request("_test/echo")
    async def ext_echo(ctx: Context[Any]) -> Any:
        return {"echo": ctx.params}

    @app.ext_notification("_test/note")
    async def ext_note(ctx: Context[Any]) -> None:
        notes.append(ctx.params)

    @app.ext_request("_test/notes")
    async def ext_notes(ctx: Context[Any]) -> Any:
        return {"notes": notes}

    return app


if __name__ == "__main__":
    run_agent(build_app())
