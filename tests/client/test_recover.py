"""``connect(cmd, resume=ID)`` and ``connect(cmd, recover=True)`` over real agent processes.

The demo agent keeps its sessions in a SQLite store (a temporary directory); the tests SIGKILL
it mid-turn and check that the client restarts it, reopens the session on the same
:class:`Session` object with the agent's history, reports what was lost, never sends the
interrupted prompt again, and leaves no process behind; that a crash loop ends with
:class:`RecoveryFailed`; and that ``resume=`` reopens a stored session (and says clearly why
it cannot)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from acplink import (
    AcpError,
    CapabilityError,
    Client,
    ConnectionClosed,
    RecoveryFailed,
    RecoveryReport,
    UsageError,
    connect,
)

HERE = Path(__file__).resolve().parent


def demo(store: Path) -> list[str]:
    return [sys.executable, "-m", "acplink", "demo-agent", "--store", str(store), "--delay", "0"]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] != b"Z"


def agent_pid(client: Client) -> int:
    pid = getattr(client.transport, "pid", None)
    assert isinstance(pid, int)
    return pid


async def _kill_mid_turn(client: Client, prompt: str, after: int) -> int:
    """Start ``prompt`` and SIGKILL the agent after ``after`` updates; the updates received."""
    session = next(iter(client.sessions.values()))
    turn = session.prompt(prompt)
    n = 0
    with pytest.raises(ConnectionClosed):
        async for _ in turn:
            n += 1
            if n == after:
                os.kill(agent_pid(client), signal.SIGKILL)
    return n


async def test_sigkill_mid_turn_restarts_the_agent_and_reopens_the_session(tmp_path: Path) -> None:
    store = tmp_path / "store"
    reports: list[RecoveryReport] = []
    async with connect(demo(store), recover=True) as client:
        assert client.recovery is not None
        client.recovery.observers.append(reports.append)
        session = await client.new_session(tmp_path)
        assert await session.prompt("hello").text() == "You said: hello"
        first = agent_pid(client)
        received = await _kill_mid_turn(client, "slow 400", after=7)
        report = await client.recovery.wait()
        assert report is not None and reports == [report]
        second = agent_pid(client)
        assert second != first and not alive(first)
        assert "was killed by signal 9" in report.reason and report.restarts == 1
        assert report.reopened == {session.session_id: "load"} and report.failed == {}
        [lost] = report.lost
        assert lost.prompt == "slow 400" and lost.received_updates == received
        assert lost.received_text == "".join(f"chunk {i}/400 " for i in range(1, received + 1))
        # every chunk the client saw is in the agent's replayed history (perhaps a few more)
        assert lost.kept_text is not None and lost.kept_text.startswith(lost.received_text)
        assert lost.missing_text == ""
        # the same Session object, its state the agent's history
        assert client.sessions[session.session_id] is session
        texts = [(m.role, m.text) for m in session.state.messages]
        assert texts[:3] == [("user", "hello"), ("agent", "You said: hello"), ("user", "slow 400")]
        # the next prompt works, on the new process
        assert await session.prompt("again").text() == "You said: again"
    assert not alive(second)
    # the interrupted prompt was never sent again: the agent's history has each prompt once
    async with connect(demo(store)) as again:
        loaded = await again.load_session(session.session_id, tmp_path)
        users = [m.text for m in loaded.state.messages if m.role == "user"]
        assert users == ["hello", "slow 400", "again"]


async def test_v2_the_session_is_resumed_with_its_replay(tmp_path: Path) -> None:
    """ACP v2 has no session/load: session/resume with replayFrom; a v2 turn (ended by a state
    update, not by the prompt's answer) fails when the agent dies instead of waiting forever."""
    async with connect(demo(tmp_path / "store"), recover=True, protocol=2) as client:
        session = await client.new_session(tmp_path)
        assert await session.prompt("hello").text() == "You said: hello"
        await _kill_mid_turn(client, "slow 400", after=6)
        assert client.recovery is not None
        report = await client.recovery.wait()
        assert report is not None and report.reopened == {session.session_id: "resume"}
        assert report.replayed == {session.session_id}
        [lost] = report.lost
        assert lost.received_text.startswith("chunk 1/400 ") and lost.missing_text == ""
        assert [m.text for m in session.state.messages if m.role == "user"] == ["hello", "slow 400"]
        assert await session.prompt("again").text() == "You said: again"


async def test_a_prompt_sent_while_the_agent_restarts_waits_for_it(tmp_path: Path) -> None:
    async with connect(demo(tmp_path / "store"), recover=True) as client:
        session = await client.new_session(tmp_path)
        await session.prompt("one").text()
        lost = client.connection
        os.kill(agent_pid(client), signal.SIGKILL)
        await lost.wait_closed()
        # (sent while the agent restarts: the turn waits for it; nothing was running, nothing lost)
        assert await session.prompt("two").text() == "You said: two"
        assert client.recovery is not None
        report = client.recovery.last
        assert report is not None and report.lost == [] and session.session_id in report.reopened
        assert [m.text for m in session.state.messages if m.role == "user"] == ["one", "two"]


async def test_a_crash_loop_ends_with_one_clear_error_and_no_process_left(tmp_path: Path) -> None:
    count = tmp_path / "starts"
    cmd = [sys.executable, str(HERE / "crashy_agent.py"), str(count), str(tmp_path / "store")]
    async with connect(cmd, recover=2, stderr="capture") as client:
        session = await client.new_session(tmp_path)
        first = agent_pid(client)
        os.kill(first, signal.SIGKILL)
        await client.connection.wait_closed()
        assert client.recovery is not None
        with pytest.raises(RecoveryFailed) as failed:
            await client.recovery.wait()
        message = str(failed.value)
        assert "crash loop" in message and "restarted 2 times within 60 s" in message
        # (the last try's reason)
        assert "exited with code 5" in message and "crashy_agent: cannot start again" in message
        assert client.closed
        with pytest.raises(RecoveryFailed):
            session.prompt("hi")
        pid = agent_pid(client)
    assert int(count.read_text()) == 3  # the first start, then 2 restarts
    assert not alive(first) and not alive(pid)


async def test_a_restarted_agent_that_never_answers_is_given_up_on(tmp_path: Path) -> None:
    count = tmp_path / "starts"
    cmd = [sys.executable, str(HERE / "crashy_agent.py"), str(count), str(tmp_path / "store"), "hang"]
    async with connect(cmd, recover=1) as client:
        assert client.recovery is not None
        client.recovery.start_timeout = 1.0
        await client.new_session(tmp_path)
        os.kill(agent_pid(client), signal.SIGKILL)
        await client.connection.wait_closed()
        with pytest.raises(RecoveryFailed, match="no answer to initialize within 1 s"):
            await client.recovery.wait()
        hung = agent_pid(client)
        assert alive(hung)
    assert not alive(hung) and int(count.read_text()) == 2


async def test_connect_resume_reopens_a_stored_session(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with connect(demo(store)) as client:
        session = await client.new_session(tmp_path)
        await session.prompt("remember me").text()
        sid = session.session_id
    async with connect(demo(store), resume=sid, cwd=tmp_path) as client:
        resumed = client.resumed
        assert resumed is not None and resumed.session_id == sid and client.sessions[sid] is resumed
        assert client.offers("resume_session")  # (so session/resume was used: nothing replayed)
        assert resumed.state.messages == []
        assert await resumed.prompt("and now").text() == "You said: and now"
    async with connect(demo(store)) as client:
        loaded = await client.reopen_session(sid, tmp_path, prefer="load")
        assert [m.text for m in loaded.state.messages if m.role == "user"] == ["remember me", "and now"]
        page, cursor = await client.list_sessions_page(tmp_path)
        assert [i.session_id for i in page] == [sid] and cursor is None


async def test_connect_resume_unknown_id_is_the_agents_error(tmp_path: Path) -> None:
    with pytest.raises(AcpError, match="no-such-session"):
        await connect(demo(tmp_path / "store"), resume="no-such-session", cwd=tmp_path)


async def test_agent_without_resume_load_or_list(tmp_path: Path) -> None:
    cmd = [sys.executable, str(HERE.parents[1] / "examples" / "echo_agent.py")]  # (no store)
    with pytest.raises(CapabilityError, match="neither session/resume nor session/load"):
        await connect(cmd, resume="sess_1")
    async with connect(cmd) as client:
        with pytest.raises(CapabilityError, match="cannot list its sessions"):
            await client.list_sessions_page()


def test_recover_is_for_a_command_line() -> None:
    from acplink import AgentApp

    with pytest.raises(UsageError, match="recover= is for an agent command line"):
        connect(AgentApp("x"), recover=True)
    with pytest.raises(UsageError, match="recover= takes"):
        connect(["agent"], recover=-1)


async def test_closing_during_a_restart_leaves_nothing_running(tmp_path: Path) -> None:
    client = await connect(demo(tmp_path / "store"), recover=True)
    try:
        await client.new_session(tmp_path)
        first = agent_pid(client)
        os.kill(first, signal.SIGKILL)
        await asyncio.sleep(0)  # (the restart may have begun, or not)
    finally:
        await client.aclose()
    assert not alive(first) and not alive(agent_pid(client))
