"""A prompt turn follows asyncio cancellation: cancelling the task that waits on it (directly,
by ``asyncio.timeout`` or ``wait_for``), leaving ``async with`` early, or the prompt's
``timeout`` cancels the turn at the agent, waits for its ``cancelled`` answer, and leaves the
session ready for the next prompt. In memory and over a real pipe (the demo agent)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from acplink import AgentApp, Client, PromptContext, PromptTurn, RequestTimeout, connect, schema
from acplink.tools.record import recording_transport
from acplink.transports import SubprocessTransport

GUARD = 30.0  # only against hangs: nothing here waits this long when it works


@dataclass
class Seen:
    """What the agent saw: its turns' ends, and each ``session/cancel``."""

    events: list[str] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)


def streaming_agent(seen: Seen, *, cancel_grace: float = 5.0) -> AgentApp:
    """``stream`` streams chunks until cancelled; ``deaf`` ignores the cancel flag (acplink
    cancels it after ``cancel_grace``); anything else is answered at once."""
    app = AgentApp("streamer", "1", cancel_grace=cancel_grace)

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        if ctx.text in ("stream", "deaf"):
            seen.started.set()
            i = 0
            try:
                while ctx.text == "deaf" or not ctx.cancelled:
                    i += 1
                    await ctx.send_text(f"{i} ")
                    await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                seen.events.append("forced")
                raise
            seen.events.append(f"stopped after cancel={ctx.cancelled}")
            return
        await ctx.send_text(f"echo {ctx.text}")

    @app.cancel
    async def cancel(ctx: Any) -> None:
        seen.events.append("session/cancel")

    return app


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[tuple[Client, Seen]]:
    seen = Seen()
    async with connect(streaming_agent(seen)) as client:
        yield client, seen


async def guard(aw: Any) -> Any:
    return await asyncio.wait_for(aw, GUARD)


async def consume(turn: PromptTurn) -> None:
    async for _ in turn:
        pass


async def assert_ready(client: Client, session_id: str) -> None:
    """The session takes the next prompt at once, and it works."""
    session = client.sessions[session_id]
    assert await guard(session.prompt("next").text()) == "echo next"


# -- in memory -----------------------------------------------------------------------------------


async def test_asyncio_timeout_around_the_iteration_cancels_the_turn(agent: tuple[Client, Seen]) -> None:
    client, seen = agent
    session = await client.new_session()
    turn = session.prompt("stream")
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(GUARD) as deadline:
            async for update in turn:
                assert isinstance(update, schema.AgentMessageChunk)
                deadline.reschedule(asyncio.get_running_loop().time())  # expires at the next wait
    # the agent was told, ended its turn, and answered `cancelled`, before the timeout raised
    assert seen.events == ["session/cancel", "stopped after cancel=True"]
    assert turn.done and turn.stop_reason == "cancelled"
    await assert_ready(client, session.session_id)


@pytest.mark.parametrize("how", ["wait_for-await", "wait_for-text", "task.cancel"])
async def test_cancelling_the_waiting_task_cancels_the_turn(agent: tuple[Client, Seen], how: str) -> None:
    client, seen = agent
    session = await client.new_session()
    turn = session.prompt("stream")
    if how == "task.cancel":
        task = asyncio.create_task(consume(turn))
        await guard(seen.started.wait())
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    else:
        waiting = turn.result() if how == "wait_for-await" else turn.text()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(waiting, 0.2)  # the agent streams until cancelled
    assert seen.events == ["session/cancel", "stopped after cancel=True"]
    assert turn.stop_reason == "cancelled"
    await assert_ready(client, session.session_id)


async def test_leaving_async_with_early_cancels_the_turn(agent: tuple[Client, Seen]) -> None:
    client, seen = agent
    session = await client.new_session()
    async with session.prompt("stream") as turn:
        async for chunk in turn.text_chunks():
            assert chunk == "1 "
            break
    assert seen.events == ["session/cancel", "stopped after cancel=True"]
    assert turn.stop_reason == "cancelled"
    await assert_ready(client, session.session_id)
    # a turn that ended inside the block is left alone: no session/cancel
    async with session.prompt("quick") as done:
        assert await done.text() == "echo quick"
    assert seen.events == ["session/cancel", "stopped after cancel=True"]


async def test_prompt_timeout_cancels_and_raises_request_timeout(agent: tuple[Client, Seen]) -> None:
    client, seen = agent
    session = await client.new_session()
    turn = session.prompt("stream", timeout=0.2)
    with pytest.raises(RequestTimeout, match=r"did not end within 0\.2 s") as info:
        await guard(consume(turn))
    assert isinstance(info.value, TimeoutError)
    assert seen.events == ["session/cancel", "stopped after cancel=True"]
    assert turn.stop_reason == "cancelled"
    with pytest.raises(RequestTimeout):
        await turn  # awaiting it again says the same
    await assert_ready(client, session.session_id)
    # a turn that ends in time is not affected by its timeout
    assert await guard(session.prompt("fast", timeout=GUARD).text()) == "echo fast"


async def test_an_agent_that_never_answers_is_waited_for_a_bounded_time(tmp_path: Path) -> None:
    # the agent keeps streaming after session/cancel and acplink's agent side only forces it
    # after 60 s: the client waits cancel_wait seconds, then drops the request locally
    seen = Seen()
    async with connect(streaming_agent(seen, cancel_grace=60)) as client:
        session = await client.new_session()
        turn = session.prompt("deaf", cancel_wait=0.2)
        with pytest.raises(TimeoutError):
            await guard(asyncio.wait_for(consume(turn), 0.2))
        assert turn.done and turn.response is None
        assert seen.events[0] == "session/cancel"
        # the dropped request was cancelled at the agent ($/cancel_request): its handler stops
        for _ in range(500):
            if "forced" in seen.events:
                break
            await asyncio.sleep(0.01)
        assert seen.events == ["session/cancel", "forced"]
        await assert_ready(client, session.session_id)


async def test_a_second_cancellation_stops_the_wait_at_once(tmp_path: Path) -> None:
    seen = Seen()
    async with connect(streaming_agent(seen, cancel_grace=60)) as client:
        session = await client.new_session()
        turn = session.prompt("deaf", cancel_wait=GUARD)  # would wait long for the deaf agent
        task = asyncio.create_task(consume(turn))
        await guard(seen.started.wait())
        task.cancel()
        for _ in range(500):  # the first cancellation is waiting for the agent's answer
            if seen.events:
                break
            await asyncio.sleep(0.01)
        assert seen.events == ["session/cancel"] and not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await guard(asyncio.shield(task))
        await guard(asyncio.wait({turn._task}))  # dropped locally
        await assert_ready(client, session.session_id)


async def test_a_cancellation_after_the_answer_sends_no_cancel(agent: tuple[Client, Seen]) -> None:
    client, seen = agent
    session = await client.new_session()
    turn = session.prompt("quick")
    await guard(asyncio.wait({turn._task}))  # answered, not yet read by anyone
    task = asyncio.create_task(turn.result())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen.events == []
    assert turn.stop_reason == "end_turn"
    await assert_ready(client, session.session_id)


# -- over a real pipe ------------------------------------------------------------------------------


async def test_asyncio_timeout_cancels_a_demo_turn_over_a_pipe(tmp_path: Path) -> None:
    wire: list[dict[str, Any]] = []
    demo = SubprocessTransport([sys.executable, "-m", "acplink.demo"], stderr="capture",
                               env={"ACPLINK_DEMO_STORE": str(tmp_path / "store")})
    async with connect(recording_transport(demo, tmp_path / "trace.jsonl", listeners=[wire.append])) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("slow 50")  # 50 chunks, 50 ms apart at least
        chunks = 0
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(GUARD) as deadline:
                async for update in turn:
                    if isinstance(update, schema.AgentMessageChunk):
                        chunks += 1
                        if chunks == 1:  # the turn is under way: 0.3 s more
                            deadline.reschedule(asyncio.get_running_loop().time() + 0.3)
        assert turn.stop_reason == "cancelled"
        assert 0 < chunks < 50
        msgs = [(m["dir"], m.get("method"), m.get("msg", {}).get("result"))
                for m in wire if m["type"] == "message"]
        cancel = msgs.index(("c2a", "session/cancel", None))
        # the demo agent stopped its turn on session/cancel and answered `cancelled` (no local drop)
        assert ("a2c", "session/prompt", {"stopReason": "cancelled"}) in msgs[cancel:]
        assert not any(method == "$/cancel_request" for _, method, _ in msgs)
        # and the next prompt works at once
        assert await guard(session.prompt("hello there").text()) == "You said: hello there"
