"""session/cancel answers the session's pending questions at once: permission requests
``cancelled``, elicitations ``cancel`` (the spec's MUST); the UI's callback is cancelled and
the observers are told."""

from __future__ import annotations

import asyncio
import json
import sys
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
