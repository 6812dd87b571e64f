"""The workspace server: the client's confined files and terminals as MCP tools, called
directly with McpCalls (the same handlers, confinement, limits and policy as v1's fs/* and
terminal/*)."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from termhelpers import marked, until

from acplink import McpError, PermissionPolicy, connect
from acplink.client import Client, FileSystemHandler, TerminalHandler, WorkspaceServer, workspace_server
from acplink.demo.agent import create_demo_agent
from acplink.mcp import McpCall

PY = sys.executable
Sent = list[tuple[str, Any]]


def call(name: str, arguments: dict[str, Any], *, session_id: str | None = None, token: str | None = None,
         sent: Sent | None = None) -> McpCall:
    async def notify(method: str, params: dict[str, Any] | None) -> None:
        if sent is not None:
            sent.append((method, params))

    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return McpCall("workspace-1", 1, "tools/call", params, session_id=session_id, name="workspace", _notify=notify)


def text(result: dict[str, Any]) -> str:
    out: str = result["content"][0]["text"]
    return out


def ok(result: dict[str, Any]) -> str:
    assert not result.get("isError"), result
    return text(result)


def failed(result: dict[str, Any]) -> str:
    assert result.get("isError") is True, result
    assert "Traceback" not in text(result)
    return text(result)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "a.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "secret.txt").write_text("secret")
    return tmp_path / "work"


@pytest.fixture
async def terminals(root: Path) -> AsyncIterator[TerminalHandler]:
    async with TerminalHandler(cwd_roots=[root], kill_grace=1.0) as handler:
        yield handler


@pytest.fixture
def server(root: Path, terminals: TerminalHandler) -> WorkspaceServer:
    return WorkspaceServer(FileSystemHandler([root]), terminals, session_id="s1")


# -- files ----------------------------------------------------------------------------------------


async def test_the_tools_offered(server: WorkspaceServer) -> None:
    listed = await server(McpCall("w", 1, "tools/list"))
    tools = {t["name"]: t for t in listed["tools"]}
    assert list(tools) == ["read_text_file", "write_text_file", "run", "kill"]
    assert tools["read_text_file"]["inputSchema"]["required"] == ["path"]
    assert tools["read_text_file"]["annotations"]["readOnlyHint"] is True
    assert tools["write_text_file"]["inputSchema"]["required"] == ["path", "content"]
    assert set(tools["run"]["inputSchema"]["properties"]) == {
        "command", "args", "cwd", "env", "output_byte_limit", "timeout"}
    assert "call" not in str(tools)  # (the McpCall parameter is not an argument)


async def test_read_absolute_relative_and_by_lines(server: WorkspaceServer, root: Path) -> None:
    assert ok(await server(call("read_text_file", {"path": str(root / "a.txt")}))) == "one\ntwo\nthree\n"
    assert ok(await server(call("read_text_file", {"path": "a.txt"}))) == "one\ntwo\nthree\n"
    assert ok(await server(call("read_text_file", {"path": "a.txt", "line": 2, "limit": 1}))) == "two\n"


async def test_write_creates_and_replaces(server: WorkspaceServer, root: Path) -> None:
    assert "wrote 5 characters" in ok(await server(call("write_text_file", {"path": "sub/new.txt", "content": "héllo"})))
    assert (root / "sub" / "new.txt").read_text() == "héllo"
    ok(await server(call("write_text_file", {"path": str(root / "a.txt"), "content": "x"})))
    assert (root / "a.txt").read_text() == "x"


@pytest.mark.parametrize("path", ["../secret.txt", "sub/../../secret.txt", "{tmp}/secret.txt", "/etc/hostname",
                                  "link/secret.txt", "file-link"])
async def test_escapes_are_refused(server: WorkspaceServer, root: Path, path: str) -> None:
    outside = root.parent
    (root / "link").symlink_to(outside)
    (root / "file-link").symlink_to(outside / "secret.txt")
    path = path.format(tmp=outside)
    assert "outside the session roots" in failed(await server(call("read_text_file", {"path": path})))
    assert "outside the session roots" in failed(
        await server(call("write_text_file", {"path": path, "content": "pwned"})))
    assert (outside / "secret.txt").read_text() == "secret"


async def test_not_found_too_large_and_not_writable(root: Path) -> None:
    server = WorkspaceServer(FileSystemHandler([root], max_read_bytes=8))
    assert failed(await server(call("read_text_file", {"path": "missing.txt"}))) == (
        f"file not found: {root / 'missing.txt'}")
    assert "exceeds the read limit of 8 bytes" in failed(await server(call("read_text_file", {"path": "a.txt"})))
    assert ok(await server(call("read_text_file", {"path": "a.txt", "limit": 1}))) == "one\n"
    (root / "ro.txt").write_text("keep")
    (root / "ro.txt").chmod(0o444)
    assert failed(await server(call("write_text_file", {"path": "ro.txt", "content": "no"}))) == (
        "access denied: the file is read-only")
    assert (root / "ro.txt").read_text() == "keep"
    read_only = WorkspaceServer(FileSystemHandler([root], read_only=True))
    assert "read-only" in failed(await read_only(call("write_text_file", {"path": "new.txt", "content": "no"})))
    assert not (root / "new.txt").exists()


async def test_bad_arguments_are_inner_invalid_params(server: WorkspaceServer) -> None:
    for arguments in ({}, {"path": "a.txt", "line": 0}, {"path": "a.txt", "lines": 2}):
        with pytest.raises(McpError) as info:
            await server(call("read_text_file", arguments))
        assert info.value.code == -32602 and "read_text_file" in info.value.message


# -- commands -------------------------------------------------------------------------------------


async def test_run_returns_output_and_exit_status(server: WorkspaceServer, root: Path) -> None:
    result = await server(call("run", {"command": PY, "args": ["-c", "import os, sys; print(os.getcwd()); "
                                                                      "print(os.environ['GREETING']); sys.exit(3)"],
                                       "env": {"GREETING": "hi"}}))
    assert ok(result) == f"{root}\nhi\n[exit code 3]"
    terminal_id = result["structuredContent"].pop("terminalId")
    assert isinstance(terminal_id, str) and terminal_id.startswith("term_")  # (the client's terminal that ran it)
    assert result["structuredContent"] == {"output": f"{root}\nhi\n", "truncated": False, "exitCode": 3,
                                           "signal": None, "timedOut": False}
    (root / "sub").mkdir()
    result = await server(call("run", {"command": PY, "args": ["-c", "import os; print(os.getcwd())"], "cwd": "sub"}))
    assert ok(result) == f"{root / 'sub'}\n[exit code 0]"


async def test_run_output_is_sanitised_and_limited_as_in_v1(server: WorkspaceServer) -> None:
    script = "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe end\\n' + b'x' * 100 + 'é'.encode() * 10)"
    result = await server(call("run", {"command": PY, "args": ["-c", script]}))
    assert ok(result).startswith("ok \ufffd\ufffd end\n")
    result = await server(call("run", {"command": PY, "args": ["-c", script], "output_byte_limit": 15}))
    out = result["structuredContent"]
    assert out["truncated"] is True and out["output"] == "é" * 7  # the last bytes, cut at a character boundary
    assert ok(result).startswith("[output truncated")


async def test_run_refusals_are_error_results(server: WorkspaceServer, root: Path) -> None:
    assert failed(await server(call("run", {"command": "no-such-command-acplink"}))) == (
        "command not found: no-such-command-acplink")
    assert failed(await server(call("run", {"command": PY, "cwd": str(root.parent)}))) == (
        "cwd is outside the session roots")
    assert "LD_PRELOAD" in failed(await server(call("run", {"command": PY, "env": {"LD_PRELOAD": "/x.so"}})))


def new_marker() -> str:
    return f"acplink-test-{uuid.uuid4().hex}"


SLEEPER = "import sys, time; print('started', flush=True); time.sleep(1000)"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_timeout_stops_the_command(server: WorkspaceServer, terminals: TerminalHandler) -> None:
    marker = new_marker()
    result = await server(call("run", {"command": PY, "args": ["-c", SLEEPER, marker], "timeout": 0.5}))
    assert failed(result) == "started\n[timed out after 0.5 s: stopped]"
    assert result["structuredContent"]["timedOut"] is True and result["structuredContent"]["signal"] == "SIGTERM"
    assert marked(marker) == [] and terminals.terminal_ids == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_cancelling_a_run_kills_the_command(server: WorkspaceServer, terminals: TerminalHandler) -> None:
    marker = new_marker()
    sent: Sent = []
    task = asyncio.ensure_future(server(call("run", {"command": PY, "args": ["-c", SLEEPER, marker]},
                                             token="p1", sent=sent)))
    await until(lambda: bool(sent), "the command runs (its progress is reported)")
    assert any(state != "Z" for _, state in marked(marker))
    assert sent[0][0] == "notifications/progress" and sent[0][1]["progressToken"] == "p1"
    assert marker in sent[0][1]["message"]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert marked(marker) == []  # killed and reaped before the cancellation went on
    assert terminals.terminal_ids == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_second_cancel_does_not_leak_the_command(server: WorkspaceServer, terminals: TerminalHandler) -> None:
    marker = new_marker()
    ignore_term = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                   "print('started', flush=True); time.sleep(1000)")
    task = asyncio.ensure_future(server(call("run", {"command": PY, "args": ["-c", ignore_term, marker]})))
    await until(lambda: any(state != "Z" for _, state in marked(marker)), "the command runs")
    await asyncio.sleep(0.2)  # (its SIGTERM handler is set)
    task.cancel()
    await asyncio.sleep(0.1)  # the release waits out the kill grace: cancel again meanwhile
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert marked(marker) == []
    assert terminals.terminal_ids == []


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_kill_stops_a_run_which_answers_with_its_output(root: Path, terminals: TerminalHandler) -> None:
    server = WorkspaceServer(FileSystemHandler([root]), terminals)  # (the session comes with each call)
    marker = new_marker()
    sent: Sent = []
    run = call("run", {"command": PY, "args": ["-c", SLEEPER, marker]}, session_id="s1", token="p1", sent=sent)
    task = asyncio.ensure_future(server(run))
    await until(lambda: bool(sent), "the command started (its first progress report)")
    terminal_id = sent[0][1]["_meta"]["acplink.dev/terminalId"]  # the client's terminal running it
    await until(lambda: "started" in terminals.snapshot(terminal_id).output, "the command printed")
    # another session cannot kill it, nor can an unknown id
    for session_id, tid in (("s2", terminal_id), ("s1", "term_nope")):
        result = await server(call("kill", {"terminal_id": tid}, session_id=session_id))
        assert result["structuredContent"] == {"killed": False} and not task.done()
    result = await server(call("kill", {"terminal_id": terminal_id}, session_id="s1"))
    assert result["structuredContent"] == {"killed": True}
    result = await task  # the run answers: the output so far and the signal, not an error
    assert ok(result).startswith("started\n[killed by SIG")
    assert result["structuredContent"]["output"] == "started\n" and result["structuredContent"]["terminalId"] == \
        terminal_id
    assert marked(marker) == [] and terminals.terminal_ids == []
    # once ended, killing it again does nothing
    result = await server(call("kill", {"terminal_id": terminal_id}, session_id="s1"))
    assert result["structuredContent"] == {"killed": False}


# -- built from a Client: its handlers, its sessions, its policy ---------------------------------


async def test_from_a_client_session(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("from the session")
    async with connect(create_demo_agent(), permission=PermissionPolicy.allow_all()) as client:
        session = await client.new_session(tmp_path)
        server = workspace_server(session)
        assert [t["name"] for t in server.tools] == ["read_text_file", "write_text_file", "run", "kill"]
        assert ok(await server(call("read_text_file", {"path": "f.txt"}))) == "from the session"
        assert ok(await server(call("run", {"command": PY, "args": ["-c", "print('ran')"]}))).startswith("ran\n")
        # the client's per-session handler is the one used (its roots, the connection's budget)
        assert server.files is not None and not isinstance(server.files, FileSystemHandler)
        assert client._fs[session.session_id].roots == (str(tmp_path.resolve()),)
        # a call made for another session is refused
        assert "another session" in failed(await server(call("read_text_file", {"path": "f.txt"}, session_id="x")))


async def test_from_a_client_the_session_comes_with_the_call(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("per call")
    async with connect(create_demo_agent(), permission=PermissionPolicy.allow_all()) as client:
        server = workspace_server(client)  # (built before the session exists)
        assert "unknown session" in failed(await server(call("read_text_file", {"path": "f.txt"}, session_id="s?")))
        assert "no session" in failed(await server(call("read_text_file", {"path": "f.txt"})))
        session = await client.new_session(tmp_path)
        assert ok(await server(call("read_text_file", {"path": "f.txt"}, session_id=session.session_id))) == "per call"
        other = tmp_path / "other"
        other.mkdir()
        second = await client.new_session(other)
        assert "outside the session roots" in failed(
            await server(call("read_text_file", {"path": str(tmp_path / "f.txt")}, session_id=second.session_id)))


async def test_a_confining_policy_serves_reads_only(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("readable")
    async with connect(create_demo_agent(), permission=PermissionPolicy.deny_all()) as client:
        session = await client.new_session(tmp_path)
        server = workspace_server(session)
        assert [t["name"] for t in server.tools] == ["read_text_file"]
        assert ok(await server(call("read_text_file", {"path": "f.txt"}))) == "readable"
        for name, arguments in (("write_text_file", {"path": "f.txt", "content": "no"}), ("run", {"command": PY})):
            with pytest.raises(McpError) as info:
                await server(call(name, arguments))
            assert info.value.code == -32602 and info.value.message == f"Unknown tool: {name}"
    assert (tmp_path / "f.txt").read_text() == "readable"


async def test_a_client_without_fs_or_terminals_offers_nothing(tmp_path: Path) -> None:
    async with connect(create_demo_agent(), fs=False, terminal=False) as client:
        assert isinstance(client, Client)
        session = await client.new_session(tmp_path)
        assert workspace_server(session).tools == []
    async with connect(create_demo_agent(), fs="read") as client:
        session = await client.new_session(tmp_path)
        assert [t["name"] for t in workspace_server(session).tools] == ["read_text_file", "run", "kill"]


def test_the_server_is_an_mcp_handler(server: WorkspaceServer) -> None:
    assert server.name == "workspace" and callable(server)
