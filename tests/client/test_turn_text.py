"""The typed update stream's helpers: ``await turn.text()`` and ``turn.text_chunks()``, on the
demo agent (in memory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acplink import AgentApp, InternalError, PromptContext, connect, schema
from acplink.demo.agent import DemoStore, create_demo_agent


def demo(tmp_path: Path) -> AgentApp:
    return create_demo_agent(DemoStore(tmp_path / "store"), delay=0)


async def test_text_is_the_whole_reply_iterated_or_not(tmp_path: Path) -> None:
    async with connect(demo(tmp_path)) as client:
        session = await client.new_session(cwd=tmp_path)
        assert await session.prompt("hello there world").text() == "You said: hello there world"
        # half iterated, then text(): still the whole reply (and the session's record agrees)
        turn = session.prompt("one two three")
        async for update in turn:
            if isinstance(update, schema.AgentMessageChunk):
                break
        assert await turn.text() == "You said: one two three"
        last = session.state.last_agent_message
        assert last is not None and last.text == "You said: one two three"
        assert turn.stop_reason == "end_turn"


async def test_text_chunks_stream_the_reply_without_the_thoughts(tmp_path: Path) -> None:
    async with connect(demo(tmp_path)) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("think cats")
        chunks = [chunk async for chunk in turn.text_chunks()]
        assert "".join(chunks) == "I thought about it. cats"
        assert len(chunks) > 1  # streamed, not gathered
        assert turn.stop_reason == "end_turn"
        assert [m.role for m in session.state.messages][-1] == "agent"
        assert session.state.thoughts  # the thoughts were there, and skipped


async def test_text_raises_the_turns_error() -> None:
    app = AgentApp("failing")

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        await ctx.send_text("partial ")
        raise InternalError("out of tokens")

    async with connect(app) as client:
        session = await client.new_session()
        with pytest.raises(InternalError, match="out of tokens"):
            await session.prompt("x").text()
        with pytest.raises(InternalError, match="out of tokens"):
            [chunk async for chunk in session.prompt("y").text_chunks()]
