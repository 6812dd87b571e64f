"""session/cancel answers the session's pending questions at once: permission requests
``cancelled``, elicitations ``cancel`` (the spec's MUST); the UI's callback is cancelled and
the observers are told."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acplink import PermissionPolicy
from acplink.client.client import connect

HOSTILE = [sys.executable, str(Path(__file__).resolve().parents[1] / "cli" / "hostile_agent.py")]


@pytest.mark.parametrize("kind", ["permission", "elicitation"])
async def test_cancel_answers_the_pending_question(tmp_path: Path, kind: str) -> None:
    asked = asyncio.Event()
    calls: list[str] = []
    observed: list[tuple[str, str]] = []

    async def ui(params: Any) -> Any:  # a question that the user never answers
        calls.append("asked")
        asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            calls.append("closed")
            raise

    kw: dict[str, Any] = ({"permission": PermissionPolicy(default="ask", ask=ui)} if kind == "permission"
                          else {"elicitation": ui})
    async with asyncio.timeout(20):
        async with connect([*HOSTILE, "question", kind], stderr="capture", **kw) as client:
            client.question_observers.append(lambda sid, method, params: observed.append((sid, method)))
            session = await client.new_session(tmp_path)
            turn = session.prompt("hi")
            await asyncio.wait_for(asked.wait(), 10)
            await session.cancel()
            text = ""
            async for update in turn:
                text += getattr(getattr(update, "content", None), "text", "")
            assert turn.stop_reason == "cancelled"
    report = json.loads(text)
    want = {"outcome": {"outcome": "cancelled"}} if kind == "permission" else {"action": "cancel"}
    assert report["first"]["answer"] == want
    assert report["first"]["after_cancel"] is not None and report["first"]["after_cancel"] < 2.0
    assert report["second"]["answer"] == want  # asked after the cancel: answered without asking
    assert calls == ["asked", "closed"]  # the UI's question was closed, and not asked again
    method = "session/request_permission" if kind == "permission" else "elicitation/create"
    assert observed == [("s1", method)]


async def test_an_answer_before_the_cancel_is_kept(tmp_path: Path) -> None:
    async def ui(params: Any) -> str:
        return "yes"

    async with asyncio.timeout(20):
        async with connect([*HOSTILE, "question", "permission"], stderr="capture",
                           permission=PermissionPolicy(default="ask", ask=ui)) as client:
            session = await client.new_session(tmp_path)
            turn = session.prompt("hi")
            await asyncio.sleep(0.5)
            await session.cancel()
            text = "".join([getattr(getattr(u, "content", None), "text", "") async for u in turn])
    report = json.loads(text)
    assert report["first"]["answer"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}


@pytest.fixture
def cpu_contention() -> Iterator[None]:
    """Two busy loops beside the test (the machine's cores are shared with them)."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


#: when the user cancels, relative to the turn: before its task sent the prompt, once that
#: task could run, and once the question reached the user
MOMENTS = ("at_once", "next_step", "asked")


async def test_cancel_answers_the_question_whenever_it_comes_under_load(tmp_path: Path,
                                                                        cpu_contention: None) -> None:
    """50 turns over one real subprocess agent, with CPU contention: each turn's question is
    answered ``cancelled``, after the agent saw the session/cancel, whichever moment the user
    cancelled at. (Before: a cancel made before the turn's task had sent the prompt went out
    first, the agent ignored it, the prompt then cleared the "cancelled" mark, and the
    question waited for the user for ever.)"""
    asked: asyncio.Event = asyncio.Event()
    closed: list[int] = []

    async def ui(params: Any) -> Any:  # a user who never answers
        asked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            closed.append(1)
            raise

    outcomes: list[tuple[str, Any, Any, bool]] = []
    async with connect([*HOSTILE, "question", "permission"], stderr="capture",
                       permission=PermissionPolicy(default="ask", ask=ui)) as client:
        session = await client.new_session(tmp_path)
        for i in range(50):
            moment = MOMENTS[i % len(MOMENTS)]
            asked.clear()
            turn = session.prompt("hi")
            if moment == "next_step":
                await asyncio.sleep(0)
            elif moment == "asked":
                await asyncio.wait_for(asked.wait(), 30)  # (a guard against a hang, not a timing)
            await session.cancel()
            try:
                text = await asyncio.wait_for(turn.text(), 30)  # (a guard against a hang)
            except TimeoutError:
                pytest.fail(f"turn {i} (cancelled {moment}): the agent's question was never answered")
            report = json.loads(text)
            outcomes.append((moment, report["first"]["answer"], report["second"]["answer"],
                             report["first"]["after_cancel"] is not None))
            assert turn.stop_reason == "cancelled"
    cancelled = {"outcome": {"outcome": "cancelled"}}
    assert outcomes == [(MOMENTS[i % 3], cancelled, cancelled, True) for i in range(50)]
    assert len(closed) == sum(1 for m, *_ in outcomes if m == "asked")  # a question shown was closed
