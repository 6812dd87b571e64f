"""The LangGraph adapter, end to end over real pipes: tests/adapters/lg_agent.py (a graph on
LangChain's fake chat models: no network, no key) served by ``serve_langgraph`` in a subprocess,
driven by acplink's client and the official TypeScript SDK's client, and checked by ``acplink
check``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph")

from adapter_kit import (
    agent_cmd,
    check_passes,
    chunks,
    load_refuses_an_unknown_session,
    needs_ts_sdk,
    ts_client,
    updates_of,
)

from acplink import PermissionPolicy, connect, schema

AGENT = agent_cmd("lg_agent.py")


async def test_tokens_reasoning_and_tool_calls_stream(tmp_path: Path) -> None:
    async with connect(AGENT) as client:
        session = await client.new_session(cwd=tmp_path)
        assert chunks(await updates_of(session, "hello")) == ["Hello", " ", "there", " ", "friend"]
        think = await updates_of(session, "think")
        assert (chunks(think, "agent_thought_chunk"), chunks(think)) == (["pondering"], ["thought it through"])

        updates = await updates_of(session, "read b.txt")
        call, done = updates[0], updates[1]
        assert (call["sessionUpdate"], call["title"], call["kind"], call["rawInput"]) == (
            "tool_call", "read_note b.txt", "read", {"path": "b.txt"})
        assert (done["toolCallId"], done["status"], done["rawOutput"]) == (call["toolCallId"], "completed", "bananas")
        assert "".join(chunks(updates)) == "read_note said: bananas"


async def test_a_raising_tool_or_node_ends_the_turn_with_the_error(tmp_path: Path) -> None:
    async with connect(AGENT) as client:
        session = await client.new_session(cwd=tmp_path)
        updates = await updates_of(session, "boom x.txt")
        assert [u["status"] for u in updates if u["sessionUpdate"] == "tool_call_update"] == ["failed"]
        assert updates[1]["rawOutput"] == {"error": "RuntimeError: disk on fire at x.txt"}
        assert chunks(updates) == ["[error] RuntimeError: disk on fire at x.txt"]
        assert chunks(await updates_of(session, "crash")) == ["[error] RuntimeError: the model fell over"]
        assert "".join(chunks(await updates_of(session, "hello"))) == "Hello there friend"  # still usable

        # a tool node that handles errors: the call is failed, and the model goes on with the error
        updates = await updates_of(session, "shaky z.txt")
        [failed] = [u for u in updates if u["sessionUpdate"] == "tool_call_update"]
        assert failed["status"] == "failed" and "no such note z.txt" in failed["rawOutput"]["error"]
        assert "".join(chunks(updates)).startswith("shaky failed: Error: ValueError('no such note z.txt')")


@pytest.mark.parametrize(("kind", "reply"), [("allow_once", "deployed"), ("reject_once", "not deployed")])
async def test_an_interrupt_is_a_permission_request_resumed_with_the_answer(tmp_path: Path, kind: str,
                                                                            reply: str) -> None:
    asked: list[schema.RequestPermissionRequest] = []

    async def ask(params: schema.RequestPermissionRequest) -> str:
        asked.append(params)
        return next(o.option_id for o in params.options if o.kind == kind)

    async with connect(AGENT, permission=PermissionPolicy(default="ask", ask=ask)) as client:
        session = await client.new_session(cwd=tmp_path)
        updates = await updates_of(session, "deploy")
    [request] = asked
    call = updates[0]
    assert (call["title"], call["kind"], call["status"], call["rawInput"]) == (
        "Deploy to production", "execute", "pending", {"env": "prod"})
    assert request.tool_call.tool_call_id == call["toolCallId"]
    assert updates[1]["status"] == ("completed" if kind == "allow_once" else "failed")
    assert "".join(chunks(updates)) == reply


async def test_a_question_interrupt_is_an_elicitation(tmp_path: Path) -> None:
    questions: list[Any] = []

    async def elicit(params: Any) -> dict[str, Any]:
        questions.append(params)
        return {"action": "accept", "content": {"answer": "Ada"}}

    async with connect(AGENT, elicitation=elicit) as client:
        session = await client.new_session(cwd=tmp_path)
        assert "".join(chunks(await updates_of(session, "name"))) == "Hi Ada"
    [question] = questions
    assert question.message == "What is your name?"


async def test_threads_follow_sessions_load_replays_and_the_model_is_configurable(tmp_path: Path) -> None:
    async with connect(AGENT) as client:
        one = await client.new_session(cwd=tmp_path)
        two = await client.new_session(cwd=tmp_path)
        await updates_of(one, "read a.txt")
        assert "".join(chunks(await updates_of(one, "count"))) == "2 prompts on small"
        [option] = [o for o in two.state.config_options if o.category == "model"]
        await two.set_config_option(option.id, "large")
        assert "".join(chunks(await updates_of(two, "count"))) == "1 prompts on large"

        loaded = await client.load_session(one.session_id, cwd=tmp_path)
        assert [(m.role, m.text) for m in loaded.state.messages] == [
            ("user", "read a.txt"), ("agent", "read_note said: apples"), ("user", "count"),
            ("agent", "2 prompts on small")]
        [call] = loaded.state.tool_calls.values()
        assert (call.title, call.kind, call.status) == ("read_note a.txt", "read", "completed")
        await load_refuses_an_unknown_session(client, tmp_path)


async def test_cancel_stops_the_graph(tmp_path: Path) -> None:
    async with connect(AGENT) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("slow")
        async for _ in turn:
            await session.cancel()
        assert turn.stop_reason == "cancelled"
        assert "".join(chunks(await updates_of(session, "hello"))) == "Hello there friend"


def test_acplink_check_passes_every_mandatory_requirement() -> None:
    check_passes(AGENT)


@needs_ts_sdk
def test_the_typescript_sdk_client_gets_the_streamed_reply(tmp_path: Path) -> None:
    text, stops, _ = ts_client(AGENT, tmp_path, "hello", "deploy")  # (it allows what it is asked)
    assert text == "Hello there friend" + "deployed"
    assert stops == ["end_turn", "end_turn"]
