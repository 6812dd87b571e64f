"""Every example in examples/ runs, over real pipes.

* the agents are spawned by acplink's client (and the echo agent by the official Python
  SDK's client too);
* ``examples/client.py`` drives the demo agent and the official Python and TypeScript
  SDK agents through a prompt with streamed updates.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import PermissionPolicy, connect, schema

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
INTEROP = ROOT / "tests" / "interop"
PEERS_PYTHON = ROOT / ".peers-venv" / "bin" / "python"
NODE = shutil.which("node")

needs_py_sdk = pytest.mark.skipif(
    not PEERS_PYTHON.exists(),
    reason="official Python SDK peer venv missing: python3 -m venv .peers-venv && "
           ".peers-venv/bin/pip install agent-client-protocol==0.12.1")
needs_ts_sdk = pytest.mark.skipif(
    NODE is None or not (INTEROP / "js" / "node_modules" / "@agentclientprotocol" / "sdk").is_dir(),
    reason="node or the official TypeScript SDK missing: (cd tests/interop/js && npm ci)")


def example(name: str) -> list[str]:
    return [sys.executable, str(EXAMPLES / name)]


def run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT, **kw)  # type: ignore[call-overload]


# -- agents, driven by acplink's client --------------------------------------------------------------


def test_echo_agent_is_small() -> None:
    assert len((EXAMPLES / "echo_agent.py").read_text().splitlines()) <= 20


async def test_echo_agent(tmp_path: Path) -> None:
    async with connect(example("echo_agent.py")) as client:
        assert client.agent_info is not None and client.agent_info.name == "echo-agent"
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("hi there")
        updates = [u async for u in turn]
    assert turn.stop_reason == "end_turn"
    assert [u.content.text for u in updates] == ["You said: hi there"]


@needs_py_sdk
def test_echo_agent_with_official_python_client(tmp_path: Path) -> None:
    proc = run([str(PEERS_PYTHON), str(INTEROP / "peers" / "py_client.py"), "--cwd", str(tmp_path),
                "--prompt", "ping", "--", *example("echo_agent.py")])
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[0]["event"] == "initialize" and events[0]["result"]["agentInfo"]["name"] == "echo-agent"
    updates = [e["update"] for e in events if e["event"] == "update"]
    assert [u["content"]["text"] for u in updates] == ["You said: ping"]
    assert events[-1] == {"event": "stop", "stopReason": "end_turn"}


def test_mcp_client_gives_the_agent_a_function_as_a_tool() -> None:
    proc = run(example("mcp_client.py"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["[tool call] word_count {'text': 'the quick brown fox'}",
                                        "[tool call] completed", "words.word_count says: 4"]


def test_v2_agent_reads_files_through_the_workspace_server() -> None:
    proc = run(example("v2_agent_reads_files.py"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "ACP v2; offered: workspace {'acplink.dev/workspace': {'tools': ['read_text_file', 'write_text_file', "
        "'run', 'kill']}}",
        "notes.txt: 2 lines, 6 words"]


async def test_agent_with_store_remembers_across_processes(tmp_path: Path) -> None:
    db = tmp_path / "notes.sqlite3"
    cmd = [*example("agent_with_store.py"), str(db)]
    async with connect(cmd) as client:
        session = await client.new_session(cwd=tmp_path)
        assert await session.prompt("milk").text() == "Noted (1 so far)."
        assert await session.prompt("eggs").text() == "Noted (2 so far)."
        sid = session.session_id
    async with connect(cmd) as client:  # a new process: the session is listed and loads
        assert [x.session_id for x in await client.list_sessions(cwd=tmp_path)] == [sid]
        loaded = await client.load_session(sid, cwd=tmp_path)
        assert [m.text for m in loaded.state.messages if m.role == "user"] == ["milk", "eggs"]
        assert await loaded.prompt("recap").text() == "You told me 2 things: milk; eggs"


async def test_function_agent(tmp_path: Path) -> None:
    async with connect(example("function_agent.py")) as client:
        session = await client.new_session(cwd=tmp_path)
        assert (await session.prompt("calc 2 * (3 + 4)")).stop_reason == "end_turn"
        assert session.state.last_agent_message is not None
        assert session.state.last_agent_message.text == "calculate says: 14"
        await session.prompt("count the quick brown fox")
        assert session.state.last_agent_message.text == "count_words says: {'words': 4, 'lines': 1, 'chars': 19}"
        await session.prompt("calc 1 / 0")
        assert session.state.last_agent_message.text == "calculate failed: division by zero"
        await session.prompt("what can you do?")
        assert session.state.last_agent_message.text.startswith("Tools: count")
    calls = list(session.state.tool_calls.values())
    assert [c.status for c in calls] == ["completed", "completed", "failed"]
    assert calls[0].raw_input == {"input": "2 * (3 + 4)"} and calls[0].raw_output == {"result": 14}
    assert calls[2].raw_output == {"error": "division by zero"}


async def test_pydantic_ai_agent_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("pydantic_ai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # the scripted stand-in model, no network
    async with connect(example("pydantic_ai_agent.py")) as client:
        session = await client.new_session(cwd=tmp_path)
        assert (await session.prompt("the quick brown fox")).stop_reason == "end_turn"
    assert session.state.last_agent_message is not None
    assert session.state.last_agent_message.text == "That is 4 words."
    [call] = session.state.tool_calls.values()
    assert (call.title, call.status, call.raw_input, call.raw_output) == (
        "word_count the quick brown fox", "completed", {"text": "the quick brown fox"}, 4)


@pytest.mark.parametrize(("policy", "reply"), [(PermissionPolicy.allow_all, "That is 4 words. Published."),
                                               (PermissionPolicy.deny_all, "That is 4 words. Not published.")])
async def test_langgraph_agent_asks_before_publishing(tmp_path: Path, policy: Any, reply: str) -> None:
    pytest.importorskip("langgraph")
    async with connect(example("langgraph_agent.py"), permission=policy()) as client:
        session = await client.new_session(cwd=tmp_path)
        assert (await session.prompt("the quick brown fox")).stop_reason == "end_turn"
    assert "".join(m.text for m in session.state.messages if m.role == "agent") == reply
    count, publish = session.state.tool_calls.values()
    assert (count.title, count.status) == ("word_count the quick brown fox", "completed")
    assert (publish.title, publish.kind) == ("Publish the answer", "edit")


async def test_subclass_agent(tmp_path: Path) -> None:
    async with connect(example("subclass_agent.py")) as client:
        session = await client.new_session(cwd=tmp_path)
        await session.prompt("buy milk")
        await session.prompt("call mum")
        await session.prompt("/notes")
        state = session.state
        assert state.title == "buy milk"
        assert state.last_agent_message is not None
        assert state.last_agent_message.text == "1. buy milk\n2. call mum"
        # sessions are separate
        other = await client.new_session(cwd=tmp_path)
        await other.prompt("/notes")
        assert other.state.last_agent_message is not None
        assert other.state.last_agent_message.text == "No notes yet."


@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_permission_agent(tmp_path: Path, decision: str) -> None:
    policy = PermissionPolicy(default=decision)  # type: ignore[arg-type]
    async with connect(example("permission_agent.py"), permission=policy) as client:
        session = await client.new_session(cwd=tmp_path)
        await session.prompt("save notes.txt remember this")
    (call,) = session.state.tool_calls.values()
    assert call.kind == "edit"
    assert isinstance(call.content[0], schema.Diff)
    if decision == "allow":
        assert (tmp_path / "notes.txt").read_text() == "remember this\n"
        assert call.status == "completed"
    else:
        assert not (tmp_path / "notes.txt").exists()
        assert call.status == "failed"
        assert session.state.last_agent_message is not None
        assert session.state.last_agent_message.text == "Not saved (selected: reject)."


# -- examples/client.py, driving several agents --------------------------------------------------------


def client_example(prompt: str, tmp_path: Path, *agent: str, permission: str = "deny",
                   env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [*example("client.py"), prompt, "--cwd", str(tmp_path), "--permission", permission, "--", *agent]
    return run(cmd, env=env)


def test_client_example_drives_demo_agent(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "ACPLINK_DEMO_STORE": str(tmp_path / "store")}
    proc = client_example("write hello.txt hi from the client", tmp_path, sys.executable, "-m", "acplink.demo",
                          permission="allow", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "[agent] acplink-demo 0.1.0"
    assert any(line.startswith("[tool] ") and "'Write hello.txt' (edit): pending" in line for line in lines)
    assert any(line.endswith(": completed") for line in lines)
    assert "Wrote 19 characters to hello.txt." in lines
    assert lines[-1] == "[stop] end_turn"
    assert (tmp_path / "hello.txt").read_text() == "hi from the client\n"


OFFICIAL_AGENTS = [
    pytest.param([str(PEERS_PYTHON), str(INTEROP / "peers" / "py_agent.py")], "py-sdk-agent",
                 id="python-sdk", marks=needs_py_sdk),
    pytest.param([str(NODE), str(INTEROP / "js" / "agent.mjs")], "ts-sdk-agent", id="ts-sdk", marks=needs_ts_sdk),
]


@pytest.mark.parametrize(("agent", "name"), OFFICIAL_AGENTS)
def test_client_example_drives_official_agents(tmp_path: Path, agent: list[str], name: str) -> None:
    proc = client_example("full", tmp_path, *agent, permission="allow")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"[agent] {name} {'0.12.1' if name == 'py-sdk-agent' else '2.4.0'}",
        "start",
        "[thought] thinking",
        "[plan] step one (pending); step two (pending)",
        "[tool] t1 'Write file' (edit): pending",
        "read:written by peer",
        "term:term-ok:0",
        "[tool] t1: completed",
        "[stop] end_turn",
    ]
    assert (tmp_path / "interop.txt").read_text() == "written by peer\n"


@pytest.mark.parametrize(("agent", "name"), OFFICIAL_AGENTS)
def test_client_example_reports_errors(tmp_path: Path, agent: list[str], name: str) -> None:
    proc = client_example("fail", tmp_path, *agent)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[-1] == "[error] Internal error: peer failure (code -32603)"


# -- examples/proxy_context.py, in a chain run by acplink conduct --------------------------------------


async def test_proxy_context_example_in_a_chain(tmp_path: Path) -> None:
    chain = [sys.executable, "-m", "acplink", "conduct", "--proxy", shlex.join(example("proxy_context.py")),
             "--", *example("echo_agent.py")]
    async with connect(chain) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("hi there")
        updates = [u async for u in turn]
    assert turn.stop_reason == "end_turn"
    # the echo agent answers the prompt's blocks: the proxy's line came first
    assert [u.content.text for u in updates] == ["You said: Context from examples/proxy_context.py.hi there"]


def test_mcp_host_drives_an_acp_agent_through_acplink_mcp_server(tmp_path: Path) -> None:
    # (the MCP SDK starts its stdio server with HOME and PATH only: the demo agent's sessions go
    # under this HOME, not the user's, whatever other runs left there)
    done = run(example("mcp_host.py"), env={**os.environ, "HOME": str(tmp_path / "home")})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "You said: hello | streamed: You said: hello"
    assert "- Working on: tests" in lines and lines[-1] == "1 session(s)"


def test_client_recover_restarts_the_killed_agent_and_resumes(tmp_path: Path) -> None:
    proc = run([*example("client_recover.py"), str(tmp_path)])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "agent: You said: hello",
        "the agent died after 5 updates",
        "restarted; the old one was killed by signal 9",
        "reopened with: load",
        "interrupted: 'slow 100', 5 updates received, missing from the agent's history: ''",
        "agent: You said: still there?",
        "resumed: True",
        "agent: You said: and now?",
    ]
