"""``ctx.read_file`` / ``write_file`` / ``run`` on ACP v2 go through the client's workspace MCP
server (and on v1 through ``fs/*`` / ``terminal/*``): the same answers, the same confinement,
a terminal handle with v1's interface (output, wait, kill without losing output, release at
the end of the turn). Over real subprocess pipes: an acplink agent process, an acplink client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import connect

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "workspace_agent.py")]
PY = sys.executable


async def say(session: Any, text: str) -> str:
    turn = session.prompt(text)
    chunks = [u.content.text async for u in turn if getattr(u, "content", None) is not None
              and getattr(u.content, "text", None) is not None]
    assert turn.stop_reason in ("end_turn", "cancelled")
    return "".join(chunks)


def fields(reply: str) -> dict[str, str]:
    out = {}
    for part in reply.split(" ", 3):
        key, _, value = part.partition("=")
        out[key] = value
    return out


@pytest.mark.parametrize("version", [1, 2])
async def test_read_write_run_on_both_versions(version: int, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember\nthe milk\n")
    async with connect(AGENT, protocol=version) as client:
        session = await client.new_session(tmp_path)
        assert await say(session, f"read {tmp_path / 'notes.txt'}") == 'read: "remember\\nthe milk\\n"'
        assert await say(session, f"write {tmp_path / 'sub' / 'new.txt'} hello there") == "wrote"
        assert (tmp_path / "sub" / "new.txt").read_text() == "hello there"
        reply = await say(session, f"run {PY} -c \"import sys; print('out'); print('err', file=sys.stderr); "
                                   f"sys.exit(3)\"")
        got = fields(reply)
        assert got["kind"] == ("WorkspaceTerminal" if version == 2 else "TerminalHandle")
        assert got["exit"] == "3" and json.loads(got["output"]) == "out\nerr\n"
        # the id is the client's own terminal (so a "terminal" tool-call content shows it, as on v1)
        assert got["id"].startswith("term_")
        assert client.terminals is not None and client.terminals.snapshot(got["id"]).exit_status is not None


async def test_v2_relative_paths_are_the_sessions(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A")
    async with connect(AGENT, protocol=2) as client:
        session = await client.new_session(tmp_path)
        assert await say(session, "read a.txt") == 'read: "A"'


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/hostname", "link/escape.txt"])
async def test_v2_a_path_out_of_the_roots_is_refused_as_on_v1(tmp_path: Path, path: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    os.symlink(tmp_path, root / "link")
    for version in (1, 2):
        async with connect(AGENT, protocol=version) as client:
            session = await client.new_session(root)
            target = path if version == 2 or path.startswith("/") else str(root / path)
            reply = await say(session, f"read {target}")
            assert reply.startswith("error: InvalidParams: access denied"), (version, reply)
            assert "secret" not in reply
            reply = await say(session, f"write {target} pwned")
            assert reply.startswith("error: InvalidParams: access denied"), (version, reply)
    assert (tmp_path / "outside.txt").read_text() == "secret"


async def test_v2_a_missing_file_and_a_missing_command_are_v1s_errors(tmp_path: Path) -> None:
    replies = {}
    for version in (1, 2):
        async with connect(AGENT, protocol=version) as client:
            session = await client.new_session(tmp_path)
            replies[version] = (await say(session, f"read {tmp_path / 'nope.txt'}"),
                                await say(session, "run no-such-command-acplink"))
    assert replies[1] == replies[2]
    assert replies[2][0].startswith("error: ResourceNotFound:")
    assert replies[2][1].startswith("error: InvalidParams: command not found")


@pytest.mark.parametrize("version", [1, 2])
async def test_kill_keeps_the_output(version: int, tmp_path: Path) -> None:
    async with connect(AGENT, protocol=version) as client:
        session = await client.new_session(tmp_path)
        reply = await say(session, "kill")
        sig, _, output = reply.partition(" ")
        assert sig in ("signal=SIGKILL", "signal=SIGTERM"), reply
        assert json.loads(output.removeprefix("output=")) == "started\n"


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def _until_gone(pid: int) -> None:
    for _ in range(500):
        if _gone(pid):
            return
        await asyncio.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"process {pid} outlived its terminal")


async def test_v2_the_end_of_the_turn_releases_a_running_command(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    async with connect(AGENT, protocol=2) as client:
        session = await client.new_session(tmp_path)
        assert await say(session, f"leave {pidfile}") == "left it"
        await _until_gone(int(pidfile.read_text()))


async def test_v2_a_cancelled_turn_stops_its_command(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    async with connect(AGENT, protocol=2) as client:
        session = await client.new_session(tmp_path)
        turn = session.prompt(f"cancel {pidfile}")
        for _ in range(500):
            if pidfile.exists() and pidfile.read_text():
                break
            await asyncio.sleep(0.01)
        await session.cancel()
        async for _ in turn:
            pass
        assert turn.stop_reason == "cancelled"
        await _until_gone(int(pidfile.read_text()))


async def test_workspace_false_is_a_clear_error(tmp_path: Path) -> None:
    async with connect(AGENT, protocol=2, workspace=False) as client:
        session = await client.new_session(tmp_path)
        for command in ("read a.txt", "write a.txt x", "run true"):
            reply = await say(session, command)
            assert reply.startswith("error: CapabilityError: cannot ") and "does not exist in ACP v2" in reply
            assert "declared no workspace MCP server" in reply and "Traceback" not in reply
    assert not (tmp_path / "a.txt").exists()
