"""Errors that say what went wrong: a handler's misuse of acplink (``UsageError``, a wrong
return type) is logged on the agent's stderr with its text and sent in the error's ``data``;
a hidden "Internal error" says how to get the details."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

from acplink import AgentApp, InternalError, PromptContext, connect

AGENT_CMD = [sys.executable, str(Path(__file__).with_name("agents.py"))]
WRONG_TYPE = "the prompt handler returned int; return None, a stop reason string or a PromptResponse"


def misusing_agent() -> AgentApp:
    app = AgentApp("misuser")

    @app.prompt
    async def prompt(ctx: PromptContext) -> object:
        if ctx.text == "bad-chunk":
            await ctx.send_text(42)  # type: ignore[arg-type]
        if ctx.text == "crash":
            raise RuntimeError("secret")
        return 42

    return app


async def test_a_wrong_return_type_is_logged_and_sent_with_its_text(caplog: pytest.LogCaptureFixture) -> None:
    async with connect(misusing_agent()) as client:
        session = await client.new_session()
        with caplog.at_level(logging.WARNING, logger="acplink"), pytest.raises(InternalError) as info:
            await session.prompt("wrong type")
    assert info.value.message == f"Internal error: UsageError: {WRONG_TYPE}"
    assert info.value.data == {"error": "UsageError", "message": WRONG_TYPE, "method": "session/prompt"}
    logged = [r.getMessage() for r in caplog.records if r.name == "acplink.rpc"]
    assert logged == [f"agent: the session/prompt handler misused acplink: {WRONG_TYPE}"]


async def test_a_misused_call_inside_the_handler_is_reported_the_same_way() -> None:
    async with connect(misusing_agent()) as client:
        session = await client.new_session()
        with pytest.raises(InternalError) as info:
            await session.prompt("bad-chunk")
    assert info.value.data["message"] == "chunk text must be a str, not int"


async def test_other_failures_say_where_the_details_are(caplog: pytest.LogCaptureFixture) -> None:
    async with connect(misusing_agent()) as client:
        session = await client.new_session()
        with caplog.at_level(logging.ERROR, logger="acplink"), pytest.raises(InternalError) as info:
            await session.prompt("crash")
    assert info.value.message == "Internal error (details in the agent's log; debug=True sends them)"
    assert "secret" not in str(info.value)
    assert any(r.exc_info and "secret" in str(r.exc_info[1]) for r in caplog.records)


async def test_the_misuse_lands_on_the_agent_process_stderr() -> None:
    async with connect(AGENT_CMD, stderr="capture") as client:
        session = await client.new_session()
        with pytest.raises(InternalError) as info:
            await session.prompt("wrong-type")
        assert info.value.data["message"] == WRONG_TYPE
        stderr = client.transport.stderr_tail  # type: ignore[attr-defined]
        for _ in range(500):  # (the stderr pipe is read as it comes)
            if any(WRONG_TYPE in line for line in stderr):
                break
            await asyncio.sleep(0.01)
        assert [line for line in stderr if WRONG_TYPE in line] == [
            f"ERROR acplink.rpc: agent: the session/prompt handler misused acplink: {WRONG_TYPE}"]
