"""One owner for every background task: the task set (acplink._tasks), the connection's set,
Context.spawn, and the cancel timer of a prompt turn; the peer's parts keep to the engine's methods."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from acplink import AgentApp, Context, PromptContext, connect, schema
from acplink._tasks import TaskSet

SRC = Path(__file__).resolve().parents[2] / "src" / "acplink"
OWNER = SRC / "_tasks.py"


def test_no_task_is_started_outside_the_owner_module() -> None:
    bare = re.compile(r"\b(create_task|ensure_future)\s*\(")
    found = [f"{path.relative_to(SRC)}:{n}: {line.strip()}"
             for path in sorted(SRC.rglob("*.py")) if path != OWNER
             for n, line in enumerate(path.read_text().splitlines(), 1) if bare.search(line)]
    assert found == [], "start tasks with a TaskSet (acplink._tasks), not:\n" + "\n".join(found)


async def test_closing_a_task_set_cancels_and_awaits_every_task() -> None:
    ended: list[str] = []

    async def sleeper(name: str) -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0)  # (cleanup that takes a step: aclose must wait for it)
            ended.append(name)

    tasks = TaskSet("t")
    loose = tasks.spawn(sleeper("loose"))
    keyed = tasks.spawn(sleeper("keyed"), key=7)
    done = tasks.spawn(asyncio.sleep(0))
    await done
    await asyncio.sleep(0)
    assert tasks.keyed == {7: keyed} and len(tasks) == 2  # (a finished loose task left by itself)
    await tasks.aclose()
    assert sorted(ended) == ["keyed", "loose"] and loose.cancelled() and keyed.cancelled()
    assert len(tasks) == 0 and tasks.closed
    coro = asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="closed"):
        tasks.spawn(coro)
    assert coro.cr_frame is None  # (closed, not left to warn "never awaited")


async def test_a_scope_cancels_what_still_runs_when_left() -> None:
    async with TaskSet() as scope:
        fast = scope.spawn(asyncio.sleep(0, "fast"))
        slow = scope.spawn(asyncio.sleep(60))
        await asyncio.wait({fast, slow}, return_when=asyncio.FIRST_COMPLETED)
    assert fast.result() == "fast" and slow.cancelled()


async def test_a_reported_failure_is_one_warning_line(caplog: pytest.LogCaptureFixture) -> None:
    async def fail() -> None:
        raise ValueError("boom")

    tasks = TaskSet("owner")
    with caplog.at_level(logging.WARNING, logger="acplink"):
        await asyncio.gather(tasks.spawn(fail(), report=True), return_exceptions=True)
        await asyncio.sleep(0)
    assert [r.getMessage() for r in caplog.records] == ["owner: a background task failed: ValueError: boom"]
    assert all(r.exc_info is None for r in caplog.records)
    await tasks.aclose()


def _spawning_app(events: list[str]) -> AgentApp:
    app = AgentApp("spawner")

    async def announce(ctx: Context[Any]) -> None:
        try:
            await ctx.send_update(schema.AgentMessageChunk(content=schema.TextContent(text="after")))
            events.append("announced")
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(0)  # (a step of cleanup: closing must wait for it)
            events.append("cancelled")
            raise

    @app.new_session
    async def new_session(ctx: Context[schema.NewSessionRequest]) -> None:
        ctx.spawn(announce(ctx))
        events.append("answered")

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        await ctx.wait_cancelled()

    return app


async def test_work_spawned_by_a_handler_runs_after_the_response_and_ends_with_the_connection(
        tmp_path: Path) -> None:
    events: list[str] = []
    async with connect(_spawning_app(events)) as client:
        session = await client.new_session(cwd=tmp_path)
        async with asyncio.timeout(10):
            while session.state.last_agent_message is None:
                await asyncio.sleep(0.01)
        assert session.state.last_agent_message.text == "after"
        assert events == ["answered", "announced"]
    # closing the client closed the in-process agent's connection: the spawned task was
    # cancelled and awaited (its cleanup ran) before aclose returned
    assert events == ["answered", "announced", "cancelled"]


async def test_a_cancelled_turn_that_ends_at_once_drops_its_grace_timer(tmp_path: Path) -> None:
    app = AgentApp("waiter")
    turns: list[Any] = []

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        turns.append(ctx.turn)
        await ctx.wait_cancelled()

    async with connect(app) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("wait")
        async with asyncio.timeout(10):
            while not turns:
                await asyncio.sleep(0.01)
            await turn.cancel()
            assert (await turn).stop_reason == "cancelled"
        (agent_turn,) = turns
        assert agent_turn.timer is not None and agent_turn.timer.cancelled()


def test_the_connection_layer_reads_the_engine_only_through_its_methods() -> None:
    # (pending-call slots live in connection/_calls.py behind Engine.request/forget/awaited)
    inside = re.compile(r"engine\.(pending|_\w+)")
    found = [f"{path.relative_to(SRC)}:{n}" for path in sorted((SRC / "connection").glob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1) if inside.search(line)]
    assert found == []
