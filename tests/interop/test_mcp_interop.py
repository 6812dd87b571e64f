"""MCP-over-ACP interop with the official TypeScript SDKs (``@agentclientprotocol/sdk`` 2.4.0,
``@modelcontextprotocol/server`` and ``/client`` 2.4.0), over real pipes, on ACP v1
(``/unstable``) and v2 (``/experimental/v2/unstable``):

1. the TS client's provider (``McpOverAcpProvider``, a hand-written handler and an MCP-SDK
   server through ``fromMcpServer``) → an acplink agent calling them with ``ctx.mcp``;
2. acplink's provider (``client.mcp.register`` with an :class:`acplink.mcp.McpServer`) → a TS
   agent calling it with ``McpOverAcpCaller``, directly and through ``McpOverAcpHttpBridge``
   with the TS MCP client;
3. an acplink agent's :class:`acplink.agent.McpHttpBridge` ← the TS MCP client (Streamable
   HTTP) and the Python ``mcp`` package's, serving a TS provider's server and an acplink
   provider's;
4. acplink's workspace server (the client's files and terminals) → a TS agent reading, writing
   and running through it with ``McpOverAcpCaller``.

The node peers are in ``tests/interop/js/mcp_*.mjs``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from peerenv import JS_DIR, NODE, ROOT

from acplink import McpCall, McpError, PermissionPolicy, connect
from acplink.client import workspace_server
from acplink.mcp import McpServer

MCP_AGENT = [sys.executable, str(ROOT / "tests" / "mcp" / "mcp_agent.py")]


def _missing() -> str | None:
    if NODE is None:
        return "node not found on PATH (needed for the official TypeScript SDK peers)"
    for package in ("@agentclientprotocol/sdk", "@modelcontextprotocol/server", "@modelcontextprotocol/client"):
        if not (JS_DIR / "node_modules" / package).is_dir():
            return f"{package} not installed: (cd tests/interop/js && npm ci)"
    return None


missing = _missing()
pytestmark = [pytest.mark.skipif(missing is not None, reason=missing or ""),
              pytest.mark.parametrize("version", [1, 2])]


def run(cmd: list[str], timeout: float = 120) -> list[dict[str, Any]]:
    """Run a peer; its events (one JSON object per line), checked for a clean exit."""
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert not [e for e in events if e["event"] == "fatal"], events
    return events


def node(script: str, *args: str) -> list[str]:
    return [str(NODE), str(JS_DIR / script), *args]


def replies(events: list[dict[str, Any]]) -> dict[str, str]:
    return {e["prompt"]: e["text"] for e in events if e["event"] == "reply"}


# -- 1. the TS client provides, an acplink agent calls -------------------------------------------

PROMPTS_1 = ["tools raw", 'call raw echo {"text": "hi"}', "call raw fail", "cancel raw", "timeout raw",
             'request raw tools/list {"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-06-18"}}',
             "request nosuch tools/list",
             "tools sdk", 'call sdk echo {"text": "hi"}', "call sdk nope", "cancel sdk", "intid raw"]


def test_ts_provider_to_acplink_agent(version: int, tmp_path: Path) -> None:
    events = run(node("mcp_provider_client.mjs", "--protocol", str(version), "--cwd", str(tmp_path),
                      *[a for p in PROMPTS_1 for a in ("--prompt", p)], "--", *MCP_AGENT))
    init = events[0]
    assert init["protocolVersion"] == version
    caps = init["agentCapabilities"]
    assert (caps["mcpCapabilities"]["acp"] is True) if version == 1 else (caps["session"]["mcp"]["acp"] == {})
    got = replies(events)
    # the hand-written handler: list, a call with progress, an inner error, cancellation, timeout
    assert got["tools raw"] == "echo,fail,hang"
    assert got['call raw echo {"text": "hi"}'] == "progress: 1,2; result: echo: hi"
    assert got["call raw fail"] == "mcp-error: -32602 bad arguments"
    assert got["cancel raw"] == "cancelled"
    assert got["timeout raw"] == "timed out"
    assert [e["server"] for e in events if e["event"] == "cancelled"].count("raw") == 2  # ($/cancel_request)
    # the TS provider checks the inner version: an inner error, which acplink's caller returns as a value
    assert got[PROMPTS_1[5]] == ('mcp-error: -32022 Unsupported protocol version '
                                 '{"requested": "2025-06-18", "supported": ["2026-07-28"]}')
    # an outer binding error keeps its code
    assert got["request nosuch tools/list"].startswith("outer: -33001 ")
    # an integer requestId (the schemas say a string) is refused -32602 by the TS provider, as by
    # acplink's (test_acplink_provider_to_ts_caller); its handler never sees it
    assert got["intid raw"].startswith("outer: -32602 "), got["intid raw"]
    # acplink's caller sent the metadata the TS provider requires, with a string requestId
    calls = [e for e in events if e["event"] == "call"]
    assert calls and all(c["protocolVersion"] == "2026-07-28" and c["clientCapabilities"] == {}
                         and c["clientInfo"] == {"name": "mcp-agent", "version": "1.0"}
                         and c["requestIdType"] == "string" for c in calls)
    # the MCP TypeScript SDK's server through fromMcpServer
    assert got["tools sdk"] == "echo,hang"
    assert got['call sdk echo {"text": "hi"}'] == "progress: 1,2; result: echo: hi"
    assert got["call sdk nope"] == "mcp-error: -32602 Tool nope not found"
    assert got["cancel sdk"] == "cancelled"
    assert [e["server"] for e in events if e["event"] == "cancelled"].count("sdk") == 1
    # each tools/call showed as an ACP tool call: started, then completed or failed
    tools = [(e["status"], e["title"]) for e in events if e["event"] == "tool"]
    assert ("in_progress", "echo") in tools and ("completed", None) in tools and ("failed", None) in tools


# -- 2. acplink's client provides, a TS agent calls ----------------------------------------------


def acplink_tools() -> tuple[McpServer, list[str]]:
    """An acplink McpServer: echo (with progress), fail (an inner error), hang (until cancelled);
    the list records each cancelled call."""
    server = McpServer("acplink-tools")
    cancelled: list[str] = []

    @server.tool()
    async def echo(text: str, call: McpCall) -> str:
        """Say the text back."""
        await call.progress(1, 2)
        await call.progress(2, 2)
        return f"echo: {text}"

    @server.tool()
    def fail() -> str:
        """Answer an inner MCP error."""
        raise McpError(-32602, "bad arguments", {"field": "text"})

    @server.tool()
    async def hang(call: McpCall) -> str:
        """Run until cancelled."""
        await call.progress(0)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(call.server_id)
            raise
        return "never"

    return server, cancelled


async def say(session: Any, text: str) -> str:
    turn = session.prompt(text)
    chunks = [u.content.text async for u in turn if getattr(u, "content", None) is not None
              and isinstance(getattr(u.content, "text", None), str)]
    assert turn.stop_reason == "end_turn"
    return "".join(chunks)


async def until(predicate: Any) -> None:
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


async def test_acplink_provider_to_ts_caller(version: int, tmp_path: Path) -> None:
    server, cancelled = acplink_tools()
    async with connect(node("mcp_caller_agent.mjs", "--protocol", str(version)), protocol=version,
                       workspace=False) as client:  # (the user's server alone: the workspace one is below)
        reg = client.mcp.register("tools", server)
        session = await client.new_session(tmp_path)
        # the TS agent advertised acp MCP: acplink declared the server in session/new
        assert await say(session, "servers") == f"tools={reg.server_id}"
        assert await say(session, "tools tools") == "echo,fail,hang"
        # acplink sends both progress notifications before the answer (in order, on the same pipe);
        # the TS caller dispatches notifications through an async handler chain but resolves the
        # response at once, so it may drop the last ones as "late" (docs/mcp.md, Interoperability)
        progress, result = (await say(session, 'call tools echo {"text": "hi"}')).split("; ")
        assert progress in ("progress: ", "progress: 1", "progress: 1,2") and result == "result: echo: hi"
        assert await say(session, "call tools fail") == "mcp-error: -32602 bad arguments"
        assert await say(session, "request tools tools/call {\"name\": \"fail\"}") == \
            'mcp-error: -32602 bad arguments {"field":"text"}'
        # the TS caller's abort is $/cancel_request: acplink cancels the tool, answers -32800
        assert await say(session, "cancel tools") == "cancelled: -32800"
        await until(lambda: cancelled == [reg.server_id])
        # outer errors keep the binding's codes
        assert (await say(session, "tools nosuch")).startswith("outer: -33001 ")
        # an integer requestId, which the TS caller lets through: refused -32602 as the TS
        # provider refuses it (test_ts_provider_to_acplink_agent)
        assert (await say(session, "intid tools")).startswith("outer: -32602 ")
        # the TS caller's metadata (2026-07-28, its capabilities and info) passes acplink's checks
        discover = json.loads((await say(session, "request tools server/discover")).removeprefix("result: "))
        assert discover["supportedVersions"] == ["2026-07-28"] and discover["serverInfo"]["name"] == "acplink-tools"
        # through the TS agent's McpOverAcpHttpBridge, with the MCP TypeScript SDK's HTTP client
        out = await say(session, 'http tools echo {"text": "via http"}')
        tools, progress, result = out.split("; ")
        assert tools == "tools: echo,fail,hang" and result == "result: echo: via http"
        assert progress in ("progress: ", "progress: 1", "progress: 1,2")
        assert await say(session, "http tools fail") == "tools: echo,fail,hang; mcp-error: -32602 bad arguments"


async def test_ts_agent_reads_and_runs_through_the_workspace_server(version: int, tmp_path: Path) -> None:
    """The TS agent's McpOverAcpCaller uses acplink's built-in workspace server like any acp
    server: offered by itself on v2, on request (workspace=True) on v1."""
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    async with connect(node("mcp_caller_agent.mjs", "--protocol", str(version)), protocol=version,
                       workspace=True if version == 1 else None) as client:
        session = await client.new_session(tmp_path)
        reg = client.workspace_registration
        assert reg is not None
        assert await say(session, "servers") == f"workspace={reg.server_id_of(session.session_id)}"
        assert await say(session, "tools workspace") == "read_text_file,write_text_file,run,kill"
        assert await say(session, 'call workspace read_text_file {"path": "notes.txt"}') == \
            "progress: ; result: remember the milk\n"
        progress, result = (await say(session, 'call workspace run {"command": "sh", "args": ["-c", '
                                                '"echo ran; exit 2"]}')).split("; ", 1)
        assert progress in ("progress: ", "progress: 0") and result == "result: ran\n[exit code 2]"
        # the confinement holds for any caller: a tool error, nothing read
        reply = await say(session, 'call workspace read_text_file {"path": "/etc/hostname"}')
        assert reply == "progress: ; result: access denied: the path is outside the session roots"


# -- 3. an acplink agent's McpHttpBridge, reached by the TS MCP client ---------------------------

MCP_HTTP_AGENT = [sys.executable, str(ROOT / "tests" / "interop" / "mcp_http_agent.py")]


def check_http_run(reply: str, tools: list[str], fail: dict[str, Any]) -> None:
    """What js/mcp_http_client.mjs saw through the bridge: the listing, a call with its progress as
    server-sent events, an inner error, and a call cancelled by dropping its response."""
    seen = json.loads(reply)
    assert seen == {"tools": tools, "progress": [1, 2], "result": "echo: via http", "fail": fail, "hang": "aborted"}


def test_ts_mcp_client_through_acplink_bridge_to_ts_provider(version: int, tmp_path: Path) -> None:
    prompts = ["raw", "sdk", "raw legacy", "sdk legacy", "raw python", "sdk python"]
    events = run(node("mcp_provider_client.mjs", "--protocol", str(version), "--cwd", str(tmp_path),
                      *[a for p in prompts for a in ("--prompt", p)], "--", *MCP_HTTP_AGENT))
    got = replies(events)
    # MCP 2026-07-28 (server/discover), a handshake-era client, and the Python mcp package's client
    for era in ("", " legacy", " python"):
        check_http_run(got["raw" + era], ["echo", "fail", "hang"], {"code": -32602, "message": "bad arguments"})
        check_http_run(got["sdk" + era], ["echo", "hang"], {"code": -32602, "message": "Tool fail not found"})
    # each dropped HTTP response was a $/cancel_request that reached the TS provider's handler
    assert sorted(e["server"] for e in events if e["event"] == "cancelled") == ["raw"] * 3 + ["sdk"] * 3
    # the bridge passed on what the TS MCP client sent; a 2026-07-28 client's own metadata, a
    # handshake-era client's from its initialize
    infos = [c["clientInfo"] for c in events if c["event"] == "call" and c["server"] == "raw"]
    assert {"name": "ts-mcp-http-client", "version": "2.4.0"} in infos


async def test_ts_mcp_client_through_acplink_bridge_to_acplink_provider(version: int, tmp_path: Path) -> None:
    server, cancelled = acplink_tools()
    async with connect(MCP_HTTP_AGENT, protocol=version) as client:
        reg = client.mcp.register("tools", server)
        session = await client.new_session(tmp_path)
        for era in ("", " legacy", " python"):
            check_http_run(await say(session, "tools" + era), ["echo", "fail", "hang"],
                           {"code": -32602, "message": "bad arguments"})
        await until(lambda: cancelled == [reg.server_id] * 3)


# -- 4. acplink's workspace server, called by a TS agent -----------------------------------------


async def test_ts_agent_reads_writes_and_runs_through_acplink_workspace_server(version: int, tmp_path: Path) -> None:
    """A TS agent (v2: it has no fs/* nor terminal/*; v1 too) reading a file, writing one and
    running a command in the client's workspace through the server acplink's client serves
    (registered by hand, per session, under a name of its own)."""
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret")
    agent = node("mcp_workspace_agent.mjs", "--protocol", str(version), "--server", "hands")
    async with connect(agent, protocol=version, permission=PermissionPolicy.allow_all(),
                       workspace=False) as client:  # (by hand only: the offer by itself is tested above)
        reg = client.mcp.register("hands", workspace_server(client), per_session=True)
        session = await client.new_session(tmp_path)
        assert reg.server_id_of(session.session_id) is not None
        got = json.loads(await say(session, "read notes.txt"))
        assert got == {"tools": ["read_text_file", "write_text_file", "run", "kill"], "isError": False,
                       "text": "remember the milk\n"}
        # the session's roots confine it: a tool error, not the file
        got = json.loads(await say(session, f"read {outside}"))
        assert got["isError"] is True and "secret" not in got["text"] and "outside" in got["text"]
        got = json.loads(await say(session, "write sub/new.txt written by a TS agent"))
        assert got["isError"] is False and (tmp_path / "sub" / "new.txt").read_text() == "written by a TS agent"
        script = "import sys; print(open('sub/new.txt').read()); sys.exit(3)"
        got = json.loads(await say(session, "run " + json.dumps({"command": sys.executable, "args": ["-c", script]})))
        # the command ran in the session's folder; a non-zero exit is a status, not an error
        assert got["isError"] is False and got["text"].startswith("written by a TS agent\n")
        assert "[exit code 3]" in got["text"]
        assert got["structured"]["exitCode"] == 3 and got["structured"]["truncated"] is False
        got = json.loads(await say(session, "run " + json.dumps({"command": "no-such-command-acplink"})))
        assert got["isError"] is True
    assert outside.read_text() == "secret"
    outside.unlink()
