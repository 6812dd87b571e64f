"""The adapters on a session store (``store=SqliteStore(path)``): a session survives a SIGKILL of
the agent process. The restarted agent replays it on ``session/load`` (the store does), and the
framework gets its conversation back: the next prompt's model input (what the scripted model
was given, told back by its ``recall`` command) holds the earlier turns, tool calls included."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from adapter_kit import ROOT, agent_cmd, check_passes

from acplink import AcpError, PermissionPolicy, connect

pytest.importorskip("pydantic_ai")
pytest.importorskip("langgraph")


async def _first_life(agent: list[str], cwd: Path) -> str:
    """Two turns (one calls a tool), then the agent is SIGKILLed; the session's id."""
    client = await connect(agent, permission=PermissionPolicy(default="allow"))
    try:
        session = await client.new_session(cwd=cwd)
        await session.prompt("hello").text()
        await session.prompt("read b.txt").text()
        pid = int(await session.prompt("pid").text())
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(AcpError):  # (the agent is gone)
            await session.prompt("hello").text()
    finally:
        await client.aclose()
    return session.session_id


async def test_pydantic_ai_gets_its_message_history_back_after_a_restart(tmp_path: Path) -> None:
    agent = [*agent_cmd("pai_agent.py"), "--store", str(tmp_path / "sessions.db")]
    sid = await _first_life(agent, tmp_path)
    async with connect(agent) as client:
        assert client.agent_capabilities is not None and client.agent_capabilities.load_session
        loaded = await client.load_session(sid, cwd=tmp_path)
        assert [(m.role, m.text) for m in loaded.state.messages][:4] == [
            ("user", "hello"), ("agent", "Hello there"), ("user", "read b.txt"),
            ("agent", "[alpha] read_note said: bananas")]
        recall = (await loaded.prompt("recall").text()).split(" | ")
        assert recall == [
            "user:hello", "thought:pondering", "text:Hello there",
            "user:read b.txt", "call:read_note{'path': 'b.txt'}", "return:read_note=bananas",
            "text:[alpha] read_note said: bananas", "user:pid", recall[-1]]
        assert recall[-1].startswith("text:") and recall[-1][5:].isdigit()
        # a fork is a session no process ran: rebuilt from the copied history too
        fork = await client.fork_session(sid, cwd=tmp_path)
        assert await fork.prompt("count").text() == "[alpha] 5 prompts"


async def test_langgraph_gets_its_thread_back_after_a_restart(tmp_path: Path) -> None:
    agent = [*agent_cmd("lg_agent.py"), "--store", str(tmp_path / "sessions.db")]
    sid = await _first_life(agent, tmp_path)
    async with connect(agent) as client:
        loaded = await client.load_session(sid, cwd=tmp_path)
        assert [(m.role, m.text) for m in loaded.state.messages][:4] == [
            ("user", "hello"), ("agent", "Hello there friend"), ("user", "read b.txt"),
            ("agent", "read_note said: bananas")]
        [call] = loaded.state.tool_calls.values()
        assert (call.title, call.status) == ("read_note b.txt", "completed")
        recall = (await loaded.prompt("recall").text()).split(" | ")
        assert recall[:6] == ["human:hello", "ai:Hello there friend", "human:read b.txt",
                              "ai: call:read_note{'path': 'b.txt'}", "tool:read_note=bananas",
                              "ai:read_note said: bananas"]
        assert recall[6] == "human:pid" and len(recall) == 8
        # the thread goes on in the checkpointer from there: not rebuilt a second time
        assert await loaded.prompt("count").text() == "5 prompts on small"


def test_acplink_check_passes_the_session_requirements_of_a_graph_on_a_store(tmp_path: Path) -> None:
    """No session code in the app: list, load, resume, close, delete and fork are the store's."""
    agent = [*agent_cmd("lg_agent.py"), "--store", str(tmp_path / "sessions.db")]
    check_passes(agent, frozenset({"SESS-010", "SESS-012", "SESS-013", "SESS-014", "SESS-015", "SESS-016"}))


@pytest.mark.parametrize(("example", "reply"), [("pydantic_ai_agent.py", "That is 4 words."),
                                                ("langgraph_agent.py", "That is 4 words. Published.")])
async def test_the_examples_keep_their_sessions_in_the_file_they_are_given(tmp_path: Path, example: str,
                                                                         reply: str) -> None:
    agent = [sys.executable, str(ROOT / "examples" / example), str(tmp_path / "sessions.db")]
    allow = PermissionPolicy(default="allow")
    async with connect(agent, permission=allow) as client:
        session = await client.new_session(cwd=tmp_path)
        assert (await session.prompt("the quick brown fox")).stop_reason == "end_turn"
    async with connect(agent, permission=allow) as again:  # (another process)
        assert [info.session_id for info in await again.list_sessions()] == [session.session_id]
        loaded = await again.load_session(session.session_id, cwd=tmp_path)
        assert [m.text for m in loaded.state.messages] == ["the quick brown fox", reply]
        assert (await loaded.prompt("jumps over")).stop_reason == "end_turn"
