"""McpBridge: a real MCP server (the Python ``mcp`` package's, in process, as a command over
stdio, and over Streamable HTTP on loopback) answers inner MCP requests as an MCP-over-ACP
handler: results, inner errors as McpError, progress under the caller's token, cancellation,
and one clear error (with the server's last stderr lines) when it cannot start or dies."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp_tools_server
from procs import running as _running

from acplink import ConnectionClosed, McpError, MissingDependency, UsageError
from acplink.client import McpBridge, McpBridgeError
from acplink.client.mcp_bridge import parse_mcp_spec
from acplink.mcp import MCP_PROTOCOL_VERSION, MCP_PROTOCOL_VERSION_KEY, McpCall

SERVER_SCRIPT = str(Path(mcp_tools_server.__file__).resolve())
META = {MCP_PROTOCOL_VERSION_KEY: MCP_PROTOCOL_VERSION}


def _call(method: str, params: dict[str, Any] | None = None, rid: int = 1,
          notes: list[tuple[str, Any]] | None = None) -> McpCall:
    async def notify(m: str, p: dict[str, Any] | None) -> None:
        assert notes is not None
        notes.append((m, p))
    return McpCall("srv-1", rid, method, {**(params or {}), "_meta": {**META, **(params or {}).get("_meta", {})}},
                   _notify=notify)


def _command(*extra: str) -> list[str]:
    return [sys.executable, SERVER_SCRIPT, *extra]


@pytest.fixture(params=["in-process", "stdio"])
def target(request: pytest.FixtureRequest) -> Any:
    return mcp_tools_server.SERVER if request.param == "in-process" else _command()


async def test_tools_list_and_call(target: Any) -> None:
    async with McpBridge(target) as bridge:
        listed = await bridge(_call("tools/list"))
        assert [t["name"] for t in listed["tools"]] == ["echo", "count", "sleep", "crash"]
        assert listed["tools"][0]["inputSchema"]["required"] == ["text"]
        result = await bridge(_call("tools/call", {"name": "echo", "arguments": {"text": "ping"}}, rid=2))
        assert result["content"] == [{"type": "text", "text": "echo: ping"}] and result["isError"] is False


async def test_progress_goes_to_the_caller_under_its_own_token(target: Any) -> None:
    notes: list[tuple[str, Any]] = []
    async with McpBridge(target) as bridge:
        result = await bridge(_call("tools/call", {"name": "count", "arguments": {"n": 3},
                                                   "_meta": {"progressToken": "agent-token-7"}}, notes=notes))
    assert result["content"][0]["text"] == "counted to 3"
    assert [(m, p["progressToken"], p["progress"], p["total"], p["message"]) for m, p in notes] == [
        ("notifications/progress", "agent-token-7", 1, 3, "step 1"),
        ("notifications/progress", "agent-token-7", 2, 3, "step 2"),
        ("notifications/progress", "agent-token-7", 3, 3, "step 3")]


async def test_an_mcp_error_is_an_mcp_error_and_a_tool_failure_a_result(target: Any) -> None:
    async with McpBridge(target) as bridge:
        with pytest.raises(McpError) as info:
            await bridge(_call("no/such-method"))
        assert info.value.code == -32601
        result = await bridge(_call("tools/call", {"name": "no-such-tool", "arguments": {}}, rid=2))
        assert result["isError"] is True and "no-such-tool" in result["content"][0]["text"]


async def test_a_cancelled_call_leaves_the_bridge_usable(target: Any) -> None:
    async with McpBridge(target) as bridge:
        slow = asyncio.create_task(bridge(_call("tools/call", {"name": "sleep", "arguments": {"seconds": 60}})))
        await asyncio.sleep(0.3)
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        result = await asyncio.wait_for(
            bridge(_call("tools/call", {"name": "echo", "arguments": {"text": "after"}}, rid=2)), 30)
        assert result["content"][0]["text"] == "echo: after"


async def test_concurrent_calls_each_get_their_own_answer(target: Any) -> None:
    async with McpBridge(target) as bridge:
        results = await asyncio.gather(*(
            bridge(_call("tools/call", {"name": "echo", "arguments": {"text": str(i)}}, rid=i)) for i in range(20)))
    assert [r["content"][0]["text"] for r in results] == [f"echo: {i}" for i in range(20)]


async def test_a_command_that_fails_at_start_is_one_error_with_its_stderr() -> None:
    with pytest.raises(McpBridgeError) as info:
        async with McpBridge(_command("--fail-at-start")):
            pass
    message = str(info.value)
    assert message.startswith(f"cannot start the MCP server '{sys.executable} {SERVER_SCRIPT} --fail-at-start'")
    assert message.endswith("last stderr lines:\n  | missing API key")


async def test_a_command_not_found() -> None:
    with pytest.raises(McpBridgeError, match="'no-such-mcp-server-xyz' was not found"):
        async with McpBridge("no-such-mcp-server-xyz --flag"):
            pass


async def test_a_server_that_dies_mid_call_is_connection_closed_with_its_stderr() -> None:
    async with McpBridge(_command()) as bridge:
        with pytest.raises(ConnectionClosed) as info:
            await bridge(_call("tools/call", {"name": "crash", "arguments": {}}))
        assert "went away" in str(info.value) and str(info.value).endswith("  | about to crash")
        with pytest.raises(ConnectionClosed):  # and stays so
            await bridge(_call("tools/list", rid=2))


async def test_closing_stops_the_command() -> None:
    marker = f"--marker={uuid.uuid4().hex}"
    async with McpBridge(_command(marker)) as bridge:
        await bridge(_call("tools/list"))
        assert len(_running(marker)) == 1
    deadline = time.monotonic() + 30
    while _running(marker) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert _running(marker) == []


async def test_a_call_before_start_is_a_clear_error() -> None:
    with pytest.raises(McpBridgeError, match="not started"):
        await McpBridge(_command())(_call("tools/list"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    with mcp_tools_server.over_http() as url:
        yield url


async def test_a_streamable_http_server(http_server: str) -> None:
    async with McpBridge(http_server) as bridge:
        result = await bridge(_call("tools/call", {"name": "echo", "arguments": {"text": "over http"}}))
    assert result["content"][0]["text"] == "echo: over http"


async def test_an_unreachable_url() -> None:
    with pytest.raises(McpBridgeError, match=r"cannot start the MCP server 'http://127\.0\.0\.1:\d+/mcp'"):
        async with McpBridge(f"http://127.0.0.1:{_free_port()}/mcp"):
            pass


@pytest.mark.parametrize(("spec", "expected"), [
    ("files=npx -y server .", ("files", ["npx", "-y", "server", "."])),
    ("web = https://example.test/mcp", ("web", "https://example.test/mcp")),
    ("q='my tool' --opt 'a b'", ("q", ["my tool", "--opt", "a b"])),
])
def test_the_cli_spec(spec: str, expected: tuple[str, Any]) -> None:
    assert parse_mcp_spec(spec) == expected


@pytest.mark.parametrize("spec", ["files", "=cmd", "files=", "x=unterminated 'quote"])
def test_a_bad_cli_spec_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UsageError, match="--mcp"):
        parse_mcp_spec(spec)


async def test_without_the_extra_it_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # (as if not installed)
    with pytest.raises(MissingDependency, match=r"pip install 'acplink\[mcp\]'"):
        async with McpBridge(_command()):
            pass
