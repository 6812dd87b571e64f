"""``acplink mcp-server``: an ACP agent (the demo agent, a TS SDK agent, a crashing one) behind
a real subprocess, driven by the Python ``mcp`` client over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcputil import (
    DEMO,
    HERE,
    JS_DIR,
    NODE,
    TS_AGENT,
    TS_MISSING,
    http_mcp,
    http_server,
    server_argv,
    stdio_mcp,
    text_of,
)

pytestmark = pytest.mark.timeout(120)

needs_ts = pytest.mark.skipif(TS_MISSING is not None, reason=str(TS_MISSING))


async def test_tools_prompt_with_progress_and_a_continued_session(tmp_path: Path) -> None:
    async with stdio_mcp(DEMO, cwd=tmp_path) as mcp:
        names = {tool.name for tool in (await mcp.list_tools()).tools}
        assert names == {"prompt", "new_session", "list_sessions", "cancel"}
        progress: list[str | None] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(message)

        first = await mcp.call_tool("prompt", {"text": "hello there"}, progress_callback=on_progress)
        assert not first.is_error
        data = first.structured_content
        assert data["reply"] == "You said: hello there" and data["stopReason"] == "end_turn"
        assert "You said: hello there" in text_of(first)
        assert "".join(m or "" for m in progress) == "You said: hello there"  # the reply, streamed
        sid = data["sessionId"]
        again = await mcp.call_tool("prompt", {"text": "once more", "session_id": sid})
        assert again.structured_content["sessionId"] == sid
        listed = (await mcp.call_tool("list_sessions", {})).structured_content
        assert [s["sessionId"] for s in listed["sessions"]] == [sid]
        opened = (await mcp.call_tool("new_session", {"cwd": str(tmp_path)})).structured_content
        assert opened["sessionId"] != sid and opened["cwd"] == str(tmp_path)
        unknown = await mcp.call_tool("prompt", {"text": "hi", "session_id": "nope"})
        assert unknown.is_error and "unknown session 'nope'" in text_of(unknown)


async def test_tool_calls_are_summed_up_and_allow_lets_the_agent_write(tmp_path: Path) -> None:
    async with stdio_mcp(DEMO, "--allow", "--cwd", str(tmp_path)) as mcp:
        result = await mcp.call_tool("prompt", {"text": "write notes.txt hi"})
    assert (tmp_path / "notes.txt").read_text() == "hi\n"
    calls = result.structured_content["toolCalls"]
    assert [(c["title"], c["kind"], c["status"]) for c in calls] == [("Write notes.txt", "edit", "completed")]
    assert "- Write notes.txt (edit): completed" in text_of(result)


async def test_deny_refuses_the_write(tmp_path: Path) -> None:
    async with stdio_mcp(DEMO, "--deny", "--cwd", str(tmp_path)) as mcp:
        result = await mcp.call_tool("prompt", {"text": "write notes.txt hi"})
    assert not (tmp_path / "notes.txt").exists()
    assert result.structured_content["toolCalls"][0]["status"] == "failed"


def _elicitor(answer: dict[str, Any] | None, asked: list[str]) -> Any:
    async def elicit(_context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        if answer is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=answer)
    return elicit


@pytest.mark.parametrize(("answer", "written"), [({"allow": True}, True), ({"allow": False}, False), (None, False)])
async def test_permission_requests_go_to_the_host_as_elicitation(tmp_path: Path, answer: Any, written: bool) -> None:
    asked: list[str] = []
    async with stdio_mcp(DEMO, "--cwd", str(tmp_path), elicitation_callback=_elicitor(answer, asked)) as mcp:
        result = await mcp.call_tool("prompt", {"text": "write notes.txt hi"})
    assert len(asked) == 1 and "Write notes.txt (edit)" in asked[0]
    assert (tmp_path / "notes.txt").exists() is written
    assert result.structured_content["toolCalls"][0]["status"] == ("completed" if written else "failed")


async def test_a_handshake_era_host_is_asked_over_its_back_channel(tmp_path: Path) -> None:
    asked: list[str] = []
    async with stdio_mcp(DEMO, "--cwd", str(tmp_path), mode="legacy",
                         elicitation_callback=_elicitor({"allow": True}, asked)) as mcp:
        result = await mcp.call_tool("prompt", {"text": "write notes.txt hi"})
    assert len(asked) == 1 and (tmp_path / "notes.txt").read_text() == "hi\n"
    assert result.structured_content["toolCalls"][0]["status"] == "completed"


async def test_a_host_that_cannot_elicit_gets_the_request_denied(tmp_path: Path) -> None:
    async with stdio_mcp(DEMO, "--cwd", str(tmp_path)) as mcp:  # (no elicitation callback: not advertised)
        result = await mcp.call_tool("prompt", {"text": "write notes.txt hi"})
    assert not (tmp_path / "notes.txt").exists()
    assert result.structured_content["toolCalls"][0]["status"] == "failed"


async def _slow_prompt(mcp: Any) -> tuple[str, asyncio.Task[Any]]:
    """A new session, and a long prompt running in it (once its reply has started streaming)."""
    sid: str = (await mcp.call_tool("new_session", {})).structured_content["sessionId"]
    started = asyncio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        started.set()

    running = asyncio.create_task(mcp.call_tool("prompt", {"text": "slow 500", "session_id": sid},
                                                progress_callback=on_progress))
    await started.wait()
    return sid, running


async def test_cancel_stops_a_running_prompt(tmp_path: Path) -> None:
    async with stdio_mcp(DEMO, cwd=tmp_path) as mcp:
        sid, running = await _slow_prompt(mcp)
        busy = (await mcp.call_tool("list_sessions", {})).structured_content["sessions"]
        assert busy == [{"sessionId": sid, "cwd": str(tmp_path), "busy": True}]
        cancelled = await mcp.call_tool("cancel", {"session_id": sid})
        assert cancelled.structured_content == {"sessionId": sid, "cancelled": True}
        result = await running
        assert result.structured_content["stopReason"] == "cancelled"
        assert "chunk 500/500" not in result.structured_content["reply"]
        idle = await mcp.call_tool("cancel", {"session_id": sid})
        assert idle.structured_content["cancelled"] is False


async def test_a_call_the_host_cancels_cancels_the_turn(tmp_path: Path) -> None:
    async with stdio_mcp(DEMO, cwd=tmp_path) as mcp:
        sid, running = await _slow_prompt(mcp)
        running.cancel()  # (the mcp client sends notifications/cancelled)
        with pytest.raises(asyncio.CancelledError):
            await running
        for _ in range(200):  # the turn ends at the agent (bounded: no timing assertion)
            sessions = (await mcp.call_tool("list_sessions", {})).structured_content["sessions"]
            if not sessions[0]["busy"]:
                break
            await asyncio.sleep(0.05)
        assert sessions == [{"sessionId": sid, "cwd": str(tmp_path), "busy": False}]
        after = await mcp.call_tool("prompt", {"text": "hello", "session_id": sid})  # usable again
        assert after.structured_content["reply"] == "You said: hello"


async def test_a_dead_agent_is_an_error_result_naming_it_and_the_next_call_restarts_it(tmp_path: Path,
                                                                                       monkeypatch: Any) -> None:
    monkeypatch.setenv("FLAKY_MARK", str(tmp_path / "mark"))
    agent = [sys.executable, str(HERE / "flaky_agent.py")]
    async with stdio_mcp(agent, cwd=tmp_path) as mcp:
        dead = await mcp.call_tool("prompt", {"text": "hi"})
        assert dead.is_error
        message = text_of(dead)
        assert "flaky_agent.py" in message and "exited with code 3" in message
        assert "first prompt, going down" in message  # its last stderr line
        assert "the next call starts it again" in message
        back = await mcp.call_tool("prompt", {"text": "hi"})
        assert not back.is_error and back.structured_content["reply"].startswith("back again in flaky-")


@pytest.mark.parametrize("can_load", [True, False])
async def test_after_a_restart_a_session_is_loaded_again_when_the_agent_can(tmp_path: Path, monkeypatch: Any,
                                                                             can_load: bool) -> None:
    monkeypatch.setenv("FLAKY_MARK", str(tmp_path / "mark"))
    monkeypatch.setenv("FLAKY_LOAD", "1" if can_load else "0")
    agent = [sys.executable, str(HERE / "flaky_agent.py")]
    async with stdio_mcp(agent, cwd=tmp_path) as mcp:
        sid = (await mcp.call_tool("new_session", {})).structured_content["sessionId"]
        assert (await mcp.call_tool("prompt", {"text": "hi", "session_id": sid})).is_error  # it died
        again = await mcp.call_tool("prompt", {"text": "hi", "session_id": sid})
    if can_load:
        assert not again.is_error and again.structured_content["reply"] == f"back again in {sid}"
        assert again.structured_content["sessionId"] == sid
    else:
        assert again.is_error and f"unknown session {sid!r} (the agent restarted" in text_of(again)


async def test_an_agent_that_cannot_start_is_an_error_result(tmp_path: Path) -> None:
    async with stdio_mcp(["/nonexistent/agent-binary", "--acp"], cwd=tmp_path) as mcp:
        for _ in range(2):  # (still an answer, not a hang, the second time)
            result = await mcp.call_tool("prompt", {"text": "hi"})
            assert result.is_error and "/nonexistent/agent-binary" in text_of(result)


@needs_ts
async def test_a_ts_sdk_agent_behind_the_server(tmp_path: Path) -> None:
    async with stdio_mcp(TS_AGENT, "--allow", "--cwd", str(tmp_path)) as mcp:
        hello = await mcp.call_tool("prompt", {"text": "hello"})
        assert hello.structured_content["reply"] == "Hello, world"
        failed = await mcp.call_tool("prompt", {"text": "fail"})  # an error answer: an error result
        assert failed.is_error and "peer failure" in text_of(failed) and "node" in text_of(failed)
        full = await mcp.call_tool("prompt", {"text": "full"})
    assert "read:written by peer" in full.structured_content["reply"]
    assert (tmp_path / "interop.txt").read_text() == "written by peer\n"
    assert [(c["title"], c["status"]) for c in full.structured_content["toolCalls"]] == [("Write file", "completed")]


async def test_two_mcp_clients_over_streamable_http_share_the_agent(tmp_path: Path) -> None:
    with http_server(DEMO, "--allow", cwd=tmp_path) as url:
        async with http_mcp(url) as one, http_mcp(url) as two:
            a, b = await asyncio.gather(one.call_tool("prompt", {"text": "from one"}),
                                        two.call_tool("prompt", {"text": "from two"}))
            assert a.structured_content["reply"] == "You said: from one"
            assert b.structured_content["reply"] == "You said: from two"
            sid = a.structured_content["sessionId"]
            # the second client continues the first one's conversation: one agent behind both
            cont = await two.call_tool("prompt", {"text": "and from two", "session_id": sid})
            assert cont.structured_content["sessionId"] == sid
            listed = (await one.call_tool("list_sessions", {})).structured_content["sessions"]
            assert {s["sessionId"] for s in listed} == {sid, b.structured_content["sessionId"]}


def _ts_client(*args: str, cwd: Path) -> dict[str, Any]:
    proc = subprocess.run([str(NODE), str(JS_DIR / "mcp_server_client.mjs"), *args], cwd=cwd, capture_output=True,
                          text=True, timeout=90)
    lines = proc.stdout.strip().splitlines()
    assert lines, proc.stderr
    out: dict[str, Any] = json.loads(lines[-1])
    assert "fatal" not in out, (out, proc.stderr[-2000:])
    return out


@needs_ts
@pytest.mark.parametrize("agent", ["demo", "ts-sdk"])
def test_the_ts_mcp_client_over_stdio(tmp_path: Path, agent: str) -> None:
    command = DEMO if agent == "demo" else TS_AGENT
    out = _ts_client("--text", "full" if agent == "ts-sdk" else "hello",
                     "--", *server_argv(command, "--allow", "--cwd", str(tmp_path)), cwd=tmp_path)
    assert out["tools"] == ["cancel", "list_sessions", "new_session", "prompt"]
    if agent == "demo":
        assert out["reply"] == "You said: hello" and "".join(out["progress"]) == "You said: hello"
    else:  # the TS agent's full turn: a permission request (allowed), a write, a terminal
        assert "read:written by peer" in out["reply"] and "term:term-ok:0" in out["reply"]
        assert [(c["title"], c["status"]) for c in out["toolCalls"]] == [("Write file", "completed")]
        assert "- Write file (edit): completed" in out["summary"]
        assert (tmp_path / "interop.txt").read_text() == "written by peer\n"
    assert out["same"] is True and out["sessions"] == 1


@needs_ts
def test_the_ts_mcp_client_over_streamable_http(tmp_path: Path) -> None:
    with http_server(TS_AGENT, cwd=tmp_path) as url:
        out = _ts_client("--url", url, cwd=tmp_path)
    assert out["reply"] == "Hello, world" and "".join(out["progress"]) == "Hello, world"
    assert out["same"] is True and out["sessions"] == 1
