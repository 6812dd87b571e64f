"""``acplink chat`` picks up where it left off: ``--resume [ID]``, ``/sessions`` paging from
the agent's ``session/list``, and the automatic restart of a local agent that crashes.

Real processes: the chat on a pseudo-terminal (pexpect) or a pipe, the demo agent on a
private SQLite store (``ACPLINK_DEMO_STORE``, set by the ``cli`` fixture); the test SIGKILLs
the agent process mid-turn. Every expectation waits for text, never for time."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cliutil import Chat, Cli, official_agent, official_params

from acplink import ConnectionClosed, connect

TIMEOUT = 30
ROOT = Path(__file__).resolve().parents[2]
PLAIN_AGENT = [sys.executable, str(ROOT / "examples" / "echo_agent.py")]  # (no store: no list, load, resume)


@pytest.fixture
def chats() -> Iterator[list[Chat]]:
    made: list[Chat] = []
    yield made
    for c in made:
        c.close()


def demo_agents(cli: Cli) -> list[int]:
    """The pids of the demo agents this test's chat started (live ones)."""
    out = []
    for pid in cli.leftovers():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"acplink.demo" in argv:
            out.append(pid)
    return out


def _demo(cli: Cli) -> connect:
    return connect([sys.executable, "-m", "acplink", "demo-agent", "--store", cli.env["ACPLINK_DEMO_STORE"]])


def make_sessions(cli: Cli, n: int) -> list[str]:
    """``n`` new sessions of the test's store in its workdir, each with one prompt; their ids,
    oldest first."""
    async def go() -> list[str]:
        async with _demo(cli) as client:
            out = []
            for i in range(n):
                session = await client.new_session(cli.workdir)
                await session.prompt(f"note {i}").text()
                await session.close()
                out.append(session.session_id)
            return out

    return asyncio.run(go())


def stored_sessions(cli: Cli) -> dict[str, list[str]]:
    """The user's prompts of each session of the test's store in its workdir, by id."""
    async def go() -> dict[str, list[str]]:
        async with _demo(cli) as client:
            out = {}
            for info in await client.list_sessions(cli.workdir):
                loaded = await client.load_session(info.session_id, cli.workdir)
                out[info.session_id] = [m.text for m in loaded.state.messages if m.role == "user"]
                await loaded.close()
            return out

    return asyncio.run(go())


def test_agent_killed_mid_turn_is_restarted_and_the_chat_goes_on(cli: Cli, chats: list[Chat]) -> None:
    c = Chat(cli, timeout=TIMEOUT)
    chats.append(c)
    c.expect("ask>")
    c.say("hello", "You said: hello")
    [first] = demo_agents(cli)
    c.send("slow 300")
    c.expect("chunk 6/300")
    os.kill(first, signal.SIGKILL)
    c.expect("the agent stopped: restarting it")
    out = c.expect("ask>")
    assert "was killed by signal 9; restarted it (restart 1)" in out
    assert "reopened (session/load)" in out
    assert "interrupted: your prompt 'slow 300'" in out
    assert "kept: the agent's history has all of the reply you saw" in out
    assert "the prompt is not sent again" in out
    [second] = demo_agents(cli)
    assert second != first
    c.send("/status")
    c.expect("ask>")
    c.say("after the crash", "You said: after the crash")
    c.send("/quit")
    assert c.finish() == 0
    assert not any("Traceback" in t for t in c.transcript)
    cli.assert_no_leftovers()
    # the agent's history: every prompt once (the interrupted one was not sent again)
    [prompts] = stored_sessions(cli).values()
    assert prompts == ["hello", "slow 300", "after the crash"]


def test_agent_killed_while_idle_is_restarted(cli: Cli, chats: list[Chat]) -> None:
    c = Chat(cli, timeout=TIMEOUT)
    chats.append(c)
    c.expect("ask>")
    c.say("one", "You said: one")
    [first] = demo_agents(cli)
    os.kill(first, signal.SIGKILL)
    out = c.expect("restarted it")
    out += c.expect("ask>")
    assert "was killed by signal 9; restarted it" in out and "interrupted" not in out
    c.say("two", "You said: two")
    c.send("/quit")
    assert c.finish() == 0
    cli.assert_no_leftovers()


def test_a_crash_loop_ends_the_chat_with_one_line(cli: Cli, chats: list[Chat], tmp_path: Path) -> None:
    crashy = ROOT / "tests" / "client" / "crashy_agent.py"
    c = Chat(cli, sys.executable, str(crashy), str(tmp_path / "starts"), str(tmp_path / "crashy-store"),
             timeout=TIMEOUT)
    chats.append(c)
    c.expect("ask>")
    [first] = [pid for pid in cli.leftovers()
               if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:2] == [str(crashy).encode()]]
    c.send("slow 300")
    c.expect("chunk 3/300")
    os.kill(first, signal.SIGKILL)
    c.expect("the agent stopped: restarting it")
    out = c.expect("a crash loop")
    assert "acplink: error: the agent" in out and "exited with code 5" in out
    assert "restarted 3 times within 60 s, it is not restarted again" in out
    assert c.finish() == 1
    assert (tmp_path / "starts").read_text() == "4"  # the first start, then 3 restarts
    assert not any("Traceback" in t for t in c.transcript)
    cli.assert_no_leftovers()


def test_no_recover_ends_the_chat_with_the_crash(cli: Cli, chats: list[Chat]) -> None:
    c = Chat(cli, options=["--no-recover"], timeout=TIMEOUT)
    chats.append(c)
    c.expect("ask>")
    [first] = demo_agents(cli)
    c.send("slow 300")
    c.expect("chunk 3/300")
    os.kill(first, signal.SIGKILL)
    out = c.expect("was killed by signal 9")
    assert "acplink: error: the agent" in out and "restarting" not in out
    assert c.finish() == 1
    cli.assert_no_leftovers()


def test_resume_with_and_without_an_id(cli: Cli) -> None:
    old, new = make_sessions(cli, 2)
    # without an ID: the most recent session of the cwd, its history shown
    proc = cli.run("chat", "--resume", input="continued\n")
    assert proc.returncode == 0, proc.stderr
    assert f"resumed session {new}" in proc.stdout and "> note 1" in proc.stdout
    assert "You said: continued" in proc.stdout
    # with an ID
    proc = cli.run("chat", "--resume", old, input="back again\n")
    assert proc.returncode == 0, proc.stderr
    assert f"resumed session {old}" in proc.stdout and "> note 0" in proc.stdout
    assert "You said: back again" in proc.stdout
    by_id = stored_sessions(cli)
    assert by_id == {old: ["note 0", "back again"], new: ["note 1", "continued"]}
    cli.assert_no_leftovers()


def test_resume_errors_are_one_line(cli: Cli) -> None:
    proc = cli.run("chat", "--resume", input="")
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"acplink: error: --resume: the agent lists no session in {cli.workdir}"
    proc = cli.run("chat", "--resume", "sess_nope", input="")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("acplink: error: --resume: the agent has no session 'sess_nope'")
    proc = cli.run("chat", "--resume", "--", *PLAIN_AGENT, input="")
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("acplink: error: --resume without an ID needs an agent that lists its sessions "
                                   "(session/list); this one does not: give the session ID")
    proc = cli.run("chat", "--resume", "sess_1", "--", *PLAIN_AGENT, input="")
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("acplink: error: --resume: the agent cannot reopen a session (it advertises "
                                   "neither session/load nor session/resume)")
    proc = cli.run("chat", "--", *PLAIN_AGENT, input="/sessions\n")
    assert proc.returncode == 0
    assert "error: the agent cannot list its sessions (it does not advertise session/list)" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    cli.assert_no_leftovers()


def test_sessions_pages_through_the_agents_cursor(cli: Cli) -> None:
    ids = make_sessions(cli, 64)[::-1]  # newest first (the demo's store lists 50 a page)
    script = "/sessions\n/sessions more\n/sessions more\n/sessions more\n/resume 60\n/sessions more\n"
    proc = cli.run("chat", input=script, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # 65 sessions (the chat's own first), 20 at a time; the agent's second page (its cursor)
    # is asked for when the third screen needs more than its first page's 50
    pages = out.split("> /sessions")
    assert "\n1   " in pages[1] and "\n20  " in pages[1] and "30 more: /sessions more" in pages[1]
    assert "\n21  " in pages[2] and "\n40  " in pages[2] and "10 more: /sessions more" in pages[2]
    assert "\n41  " in pages[3] and "\n60  " in pages[3] and "5 more: /sessions more" in pages[3]
    assert "\n61  " in pages[4] and "\n65  " in pages[4] and "\n66  " not in pages[4]
    assert "/sessions more" not in pages[4].split("continues one")[1]
    # /resume 60: the 60th of the listing (the agent's order: newest first, the chat's own first)
    assert f"resumed session {ids[58]}" in out
    assert "(no more sessions: listing again from the most recent)" in pages[5]
    cli.assert_no_leftovers()


# -- the official SDKs' agents (no session/list, load or resume) -------------------------------------


@pytest.mark.parametrize("name", official_params())
def test_resume_with_an_official_sdk_agent_says_why_not(cli: Cli, name: str) -> None:
    proc = cli.run("chat", "--resume", "--", *official_agent(name), input="")
    assert proc.returncode == 1
    assert proc.stderr.strip().endswith("needs an agent that lists its sessions (session/list); this one does "
                                        "not: give the session ID")
    cli.assert_no_leftovers()


@pytest.mark.parametrize("name", official_params())
async def test_recover_with_an_official_sdk_agent_restarts_it_without_the_session(tmp_path: Path, name: str) -> None:
    """An agent that cannot reopen sessions is restarted, its session closed and reported."""
    async with connect(official_agent(name), recover=True) as client:
        session = await client.new_session(tmp_path)
        assert await session.prompt("hello").text() == "Hello, world"
        turn = session.prompt("wait")
        async for _update in turn:  # ("waiting": then the agent waits for a cancel)
            pid = getattr(client.transport, "pid", None)
            assert isinstance(pid, int)
            os.kill(pid, signal.SIGKILL)
            break
        with pytest.raises(ConnectionClosed):
            await turn
        assert client.recovery is not None
        report = await client.recovery.wait()
        assert report is not None and report.reopened == {}
        assert "cannot reopen sessions" in report.failed[session.session_id]
        assert session.closed and session.session_id not in client.sessions
        [lost] = report.lost
        assert lost.prompt == "wait" and lost.kept_text is None and lost.missing_text is None
        again = await client.new_session(tmp_path)
        assert await again.prompt("hello").text() == "Hello, world"
