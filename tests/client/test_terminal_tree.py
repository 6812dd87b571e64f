"""The whole process tree of a terminal ends: on kill and release, when the client closes, and
when the client process is SIGKILLed; descendants that called setsid() included, and orphans
adopted by the terminal's supervisor are reaped (no zombies).

Every process of a terminal carries a unique marker in its command line, so "nothing is left"
is checked over all of /proc, wherever a process may have been reparented.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from termhelpers import GRAND, PY, TERM_AGENT, TERM_CLIENT, marked, proc_state, spec, until

from acplink import TerminalHandler, connect
from acplink.schema import CreateTerminalRequest, KillTerminalRequest, ReleaseTerminalRequest

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def new_marker() -> str:
    return f"acplink-test-{uuid.uuid4().hex}"


async def start(h: TerminalHandler, marker: str, mode: str) -> str:
    req = CreateTerminalRequest(session_id="s", command=PY, args=["-c", GRAND, marker, mode])
    tid = (await h.create(req)).terminal_id
    await until(lambda: "spawned" in h.snapshot(tid).output, "the grandchild was spawned")
    await until(lambda: bool(marked(f"{marker}-grandchild")), "the grandchild runs")
    return tid


@pytest.mark.parametrize("mode", ["exit", "stay"])
async def test_setsid_grandchild_is_gone_after_release(mode: str) -> None:
    marker = new_marker()
    async with TerminalHandler() as h:
        tid = await start(h, marker, mode)
        await h.release(ReleaseTerminalRequest(session_id="s", terminal_id=tid))
        assert marked(marker) == []  # release returns once the tree is gone
        assert h.snapshot(tid).exit_status is not None


async def test_setsid_grandchild_is_gone_after_kill() -> None:
    marker = new_marker()
    async with TerminalHandler(kill_grace=0.5) as h:
        tid = await start(h, marker, "stay")
        await h.kill(KillTerminalRequest(session_id="s", terminal_id=tid))
        assert marked(marker) == []
        status = h.snapshot(tid).exit_status
        assert status is not None and status.signal == "SIGTERM"  # the terminal stays readable


async def test_an_adopted_orphan_is_reaped_while_the_terminal_runs() -> None:
    marker = new_marker()
    async with TerminalHandler() as h:
        req = CreateTerminalRequest(session_id="s", command=PY, args=["-c", GRAND, marker, "orphan"])
        tid = (await h.create(req)).terminal_id
        supervisor = h.process_id(tid)
        await until(lambda: "spawned" in h.snapshot(tid).output, "the grandchild was spawned")
        grand = [pid for pid, _ in marked(f"{marker}-grandchild")]
        if grand:  # still running: its parent exited, so the supervisor adopted it
            state = proc_state(grand[0])
            assert state is None or state[1] == supervisor
            await until(lambda: proc_state(grand[0]) is None, "the orphan was reaped (not left a zombie)")
        assert [state for _, state in marked(marker) if state == "Z"] == []
        assert h.snapshot(tid).exit_status is None  # the terminal's own process still runs


async def test_setsid_grandchild_is_gone_after_the_client_closes(tmp_path: Path) -> None:
    """A real agent process creates the terminal and never releases it; the client closes."""
    marker = new_marker()
    async with connect([PY, TERM_AGENT]) as client:
        session = await client.new_session(cwd=tmp_path)
        reply = ""
        async for update in session.prompt(spec(PY, "-c", GRAND, marker, "stay")):
            reply += getattr(getattr(update, "content", None), "text", "")
        assert "terminalId" in json.loads(reply)
        await until(lambda: bool(marked(f"{marker}-grandchild")), "the grandchild runs")
    assert marked(marker) == []


async def test_a_sigkilled_client_leaves_no_terminal_process(tmp_path: Path) -> None:
    """The client runs in its own process (``peers/term_client.py``) with a real agent; its
    terminal has a setsid() grandchild; the client is SIGKILLed: no process of it is left."""
    marker = new_marker()
    prompt = spec(PY, "-c", GRAND, marker, "stay")
    proc = await asyncio.create_subprocess_exec(PY, TERM_CLIENT, str(tmp_path), prompt, "--hold",
                                                stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        lines = [await asyncio.wait_for(proc.stdout.readline(), 60) for _ in range(3)]
        assert lines[-1] == b"ready\n", lines
        ours = lambda: [pid for pid, state in marked(marker) if pid != proc.pid and state != "Z"]  # noqa: E731
        await until(lambda: len(ours()) == 3, "supervisor, command and grandchild run")
        proc.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGKILL
        await until(lambda: marked(marker) == [], "every terminal process is gone")
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
