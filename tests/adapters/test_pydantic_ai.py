"""The Pydantic AI adapter, end to end over real pipes: tests/adapters/pai_agent.py (a Pydantic AI
agent on scripted FunctionModels: no network, no key) served by ``serve_pydantic_ai`` in a
subprocess, driven by acplink's client, by the official TypeScript SDK's client, and checked by
``acplink check``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")

from adapter_kit import (
    agent_cmd,
    check_passes,
    dump,
    load_refuses_an_unknown_session,
    needs_ts_sdk,
    ts_client,
    updates_of,
)
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.test import TestModel

from acplink import PermissionPolicy, PromptContext, connect, schema
from acplink.adapters import pydantic_ai_app

AGENT = agent_cmd("pai_agent.py")


class Asked:
    """A client's permission callback that records each request and answers with one kind."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.requests: list[schema.RequestPermissionRequest] = []

    async def __call__(self, params: schema.RequestPermissionRequest) -> str | None:
        self.requests.append(params)
        return next(o.option_id for o in params.options if o.kind == self.kind)


async def test_text_thinking_tools_and_usage_stream_as_session_updates(tmp_path: Path) -> None:
    async with connect(AGENT) as client:
        session = await client.new_session(cwd=tmp_path)
        updates = await updates_of(session, "hello")
        assert [(u["sessionUpdate"], u.get("content", {}).get("text")) for u in updates[:3]] == [
            ("agent_thought_chunk", "pondering"), ("agent_message_chunk", "Hello "),
            ("agent_message_chunk", "there")]
        usage = updates[-1]
        assert usage["sessionUpdate"] == "usage_update" and usage["size"] == 4096 and usage["used"] > 0

        updates = await updates_of(session, "read b.txt")
        call, done, reply = updates[0], updates[1], updates[2]
        assert call["sessionUpdate"] == "tool_call"
        assert (call["title"], call["kind"], call["status"], call["rawInput"]) == (
            "read_note b.txt", "read", "in_progress", {"path": "b.txt"})
        assert call["locations"] == [{"path": "b.txt"}]
        assert done == {"sessionUpdate": "tool_call_update", "toolCallId": call["toolCallId"],
                        "status": "completed", "rawOutput": "bananas",
                        "content": [{"type": "content", "content": {"type": "text", "text": "bananas"}}]}
        assert reply["content"]["text"] == "[alpha] read_note said: bananas"


@pytest.mark.parametrize(("kind", "outcome"), [("allow_once", "[alpha] delete_note said: a.txt deleted"),
                                               ("reject_once", "The user rejected this tool call.")])
async def test_a_tool_needing_approval_is_a_permission_request(tmp_path: Path, kind: str, outcome: str) -> None:
    asked = Asked(kind)
    async with connect(AGENT, permission=PermissionPolicy(default="ask", ask=asked)) as client:
        session = await client.new_session(cwd=tmp_path)
        updates = await updates_of(session, "delete a.txt")
        [request] = asked.requests
        call = updates[0]
        assert call["sessionUpdate"] == "tool_call" and call["kind"] == "delete"
        assert request.tool_call.tool_call_id == call["toolCallId"]
        assert sorted(o.kind for o in request.options) == ["allow_once", "reject_once"]
        statuses = [u.get("status") for u in updates if u.get("toolCallId") == call["toolCallId"]]
        text = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
        if kind == "allow_once":
            assert statuses[-1] == "completed" and text == outcome
        else:  # the model is told, and says what the tool returned instead: the denial
            assert statuses[-1] == "failed" and text == f"[alpha] delete_note said: {outcome}"
        # the next turn sees the whole conversation, approval round included
        assert await session.prompt("count").text() == "[alpha] 2 prompts"


async def test_a_raising_tool_fails_its_call_and_a_model_error_ends_the_turn(tmp_path: Path) -> None:
    async with connect(AGENT) as client:
        session = await client.new_session(cwd=tmp_path)
        updates = await updates_of(session, "boom x.txt")
        failed = [u for u in updates if u.get("status") == "failed"]
        assert len(failed) == 1 and failed[0]["rawOutput"] == {"error": "RuntimeError: disk on fire at x.txt"}
        assert updates[-1]["content"]["text"] == "[error] RuntimeError: disk on fire at x.txt"

        assert await session.prompt("crash").text() == "[error] RuntimeError: the model fell over"
        # the session is still usable, and the failed turns left no trace in its history
        assert await session.prompt("count").text() == "[alpha] 1 prompts"


async def test_history_is_per_session_and_the_model_is_a_config_option(tmp_path: Path) -> None:
    async with connect(AGENT) as client:
        one = await client.new_session(cwd=tmp_path)
        two = await client.new_session(cwd=tmp_path)
        [option] = [o for o in one.state.config_options if o.category == "model"]
        assert [c.value for c in option.options] == ["alpha", "beta"] and option.current_value == "alpha"
        await one.prompt("hi").text()
        await one.prompt("hi again").text()
        assert await one.prompt("count").text() == "[alpha] 3 prompts"
        await two.set_config_option(option.id, "beta")
        assert await two.prompt("count").text() == "[beta] 1 prompts"
        assert await one.prompt("count").text() == "[alpha] 4 prompts"


async def test_session_load_replays_the_conversation(tmp_path: Path) -> None:
    async with connect(AGENT) as client:
        assert client.agent_capabilities is not None and client.agent_capabilities.load_session
        session = await client.new_session(cwd=tmp_path)
        await session.prompt("read a.txt").text()
        loaded = await client.load_session(session.session_id, cwd=tmp_path)
        assert [(m.role, m.text) for m in loaded.state.messages] == [
            ("user", "read a.txt"), ("agent", "[alpha] read_note said: apples")]
        [call] = loaded.state.tool_calls.values()
        assert (call.title, call.kind, call.status) == ("read_note a.txt", "read", "completed")
        assert await loaded.prompt("count").text() == "[alpha] 2 prompts"
        await load_refuses_an_unknown_session(client, tmp_path)


async def test_cancel_stops_the_run(tmp_path: Path) -> None:
    async with connect(AGENT) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("slow")
        seen = 0
        async for _ in turn:
            seen += 1
            if seen == 3:
                await session.cancel()
        assert turn.stop_reason == "cancelled"
        assert seen < 50
        # the cancelled run is not in the history; the session goes on
        assert await session.prompt("count").text() == "[alpha] 1 prompts"


async def test_a_tool_reads_the_client_s_files_through_acp(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("from the editor")
    async with connect(AGENT, fs=True) as client:
        session = await client.new_session(cwd=tmp_path)
        text = await session.prompt(f"acp {tmp_path / 'notes.md'}").text()
    assert text == "[alpha] client_read said: from the editor"


def test_acplink_check_passes_every_mandatory_requirement() -> None:
    check_passes(AGENT)


@needs_ts_sdk
def test_the_typescript_sdk_client_gets_the_streamed_reply(tmp_path: Path) -> None:
    text, stops, updates = ts_client(AGENT, tmp_path, "hello", "read a.txt")
    assert text == "Hello there" + "[alpha] read_note said: apples"
    assert [u["sessionUpdate"] for u in updates if u["sessionUpdate"].startswith("tool_call")] == [
        "tool_call", "tool_call_update"]
    assert stops == ["end_turn", "end_turn"]


def test_no_framework_is_imported_until_an_adapter_is_used() -> None:
    code = ("import sys, acplink, acplink.adapters; from acplink.adapters import MemoryHistory; "
            "print(any(m.split('.')[0] in ('pydantic_ai', 'langgraph', 'langchain_core') for m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr


def test_without_the_extra_the_adapter_says_which_extra() -> None:
    code = ("import sys; sys.modules['pydantic_ai'] = None\n"
            "from acplink.adapters import pydantic_ai_app\n"
            "from acplink import MissingDependency\n"
            "try:\n    pydantic_ai_app(object())\nexcept MissingDependency as exc:\n    print(exc)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install 'acplink[pydantic-ai]'" in proc.stdout, proc.stderr


async def test_deps_see_the_prompt_context() -> None:
    """In-process too: ``deps(ctx)`` hands each run the turn's context (TestModel calls the tool)."""
    agent = Agent(TestModel(call_tools=["where"], custom_output_text="done"), deps_type=PromptContext)

    @agent.tool
    def where(ctx: RunContext[PromptContext]) -> str:
        """The session's folder."""
        return ctx.deps.session.cwd

    app = pydantic_ai_app(agent, deps=lambda ctx: ctx)
    async with connect(app) as client:
        session = await client.new_session(cwd="/somewhere")
        updates = [dump(u) async for u in session.prompt("go")]
    [result] = [u for u in updates if u.get("status") == "completed"]
    assert result["rawOutput"] == "/somewhere"
    assert "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk") == "done"


async def test_served_on_acp_v2_too() -> None:
    """The same adapter behind ``protocols=(1, 2)``, driven by a v2 client (in-process)."""
    agent = Agent(TestModel(call_tools=["word_count"], custom_output_text="counted"))

    @agent.tool_plain
    def word_count(text: str) -> int:
        """How many words."""
        return len(text.split())

    app = pydantic_ai_app(agent, protocols=(1, 2))
    async with connect(app, protocol=2) as client:
        assert client.connection.protocol.version == 2
        session = await client.new_session(cwd="/v2")
        turn = session.prompt("go")
        async for _ in turn:
            pass
        assert turn.stop_reason == "end_turn"
    [call] = session.state.tool_calls.values()
    assert (call.title, call.kind, call.status) == (f"word_count {call.raw_input['text']}", "other", "completed")
    assert session.state.last_agent_message is not None and session.state.last_agent_message.text == "counted"
