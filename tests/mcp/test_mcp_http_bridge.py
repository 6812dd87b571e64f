"""The agent side's loopback Streamable-HTTP bridge: each POST is one inner request passed on
(as ``mcp/message`` would be), notifications come back as server-sent events, a dropped response
or ``notifications/cancelled`` cancels the request, and every bad request is refused with the
status the issue names. A real MCP client (the Python ``mcp`` package's) talks to it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from acplink import McpError, ProtocolError, RequestError
from acplink.agent.mcp_http import HttpEndpoint, McpHttpBridge
from acplink.mcp import MCP_CLIENT_CAPABILITIES, MCP_CLIENT_INFO, MCP_PROTOCOL_VERSION_KEY

ACCEPT = {"Accept": "application/json, text/event-stream"}
META = {MCP_PROTOCOL_VERSION_KEY: "2026-07-28", MCP_CLIENT_CAPABILITIES: {}}
TOOLS = [{"name": "echo", "description": "Say it back", "inputSchema": {"type": "object",
                                                                        "properties": {"text": {"type": "string"}}}}]


class Provider:
    """What the forward reaches: a small MCP server, recording what it was sent."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any] | None]] = []
        self.cancelled: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, method: str, params: dict[str, Any] | None, notify: Any) -> Any:
        self.seen.append((method, params))
        args = (params or {}).get("arguments") or {}
        try:
            if method == "tools/list":
                return {"tools": TOOLS}
            if method == "tools/call" and (params or {}).get("name") == "echo":
                for i in (1, 2):
                    if args.get("progress"):
                        await notify("notifications/progress", {"progressToken": "t", "progress": i})
                return {"content": [{"type": "text", "text": f"echo: {args.get('text')}"}]}
            if method == "tools/call" and (params or {}).get("name") == "hang":
                await self.release.wait()
                return {"content": []}
            if method == "tools/call" and (params or {}).get("name") == "outer":
                raise ProtocolError("the provider is gone")
            if method == "tools/call" and (params or {}).get("name") == "unavailable":
                raise RequestError("MCP server registration unavailable", code=-33001)
            raise McpError(-32601, f"Method not found: {method}")
        except asyncio.CancelledError:
            self.cancelled.append(method)
            raise


@pytest.fixture
async def bridge() -> AsyncIterator[McpHttpBridge]:
    async with McpHttpBridge(max_body=10_000, max_active=2) as b:
        yield b


def _req(rid: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**(params or {}), "_meta": META}}


async def _post(ep: HttpEndpoint, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as http:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await http.post(ep.url, content=content, headers=headers if headers is not None else
                               {**ACCEPT, **ep.headers, "Content-Type": "application/json"})


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: ")]


async def test_a_request_is_passed_on_and_answered_as_json(bridge: McpHttpBridge) -> None:
    provider = Provider()
    ep = bridge.add("tools", provider)
    assert ep.url.startswith("http://127.0.0.1:") and ep.token not in ep.url
    r = await _post(ep, _req(1, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "echo: hi"}]}}
    assert provider.seen == [("tools/call", {"name": "echo", "arguments": {"text": "hi"}, "_meta": META})]


async def test_notifications_come_back_as_server_sent_events(bridge: McpHttpBridge) -> None:
    ep = bridge.add("tools", Provider())
    r = await _post(ep, _req(7, "tools/call", {"name": "echo", "arguments": {"text": "x", "progress": True}}))
    assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
    events = _events(r.text)
    assert [e.get("method") for e in events] == ["notifications/progress", "notifications/progress", None]
    assert [e["params"]["progress"] for e in events[:2]] == [1, 2]
    assert events[2] == {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "echo: x"}]}}


async def test_inner_and_outer_errors(bridge: McpHttpBridge) -> None:
    ep = bridge.add("tools", Provider())
    inner = (await _post(ep, _req(1, "nope/x"))).json()
    assert inner["error"] == {"code": -32601, "message": "Method not found: nope/x"}
    outer = (await _post(ep, _req(2, "tools/call", {"name": "outer"}))).json()
    assert outer["error"] == {"code": -32603, "message": "the provider is gone"}
    # a binding failure keeps its code (as through the TypeScript SDK's bridge)
    unavailable = (await _post(ep, _req(3, "tools/call", {"name": "unavailable"}))).json()
    assert unavailable["error"] == {"code": -33001, "message": "MCP server registration unavailable"}


@pytest.mark.parametrize(("how", "status"), [
    ("no token", 401), ("wrong token", 401), ("foreign origin", 403), ("get", 405), ("delete", 405),
    ("json only", 406), ("too big", 413), ("array", 400), ("not json", 400), ("unknown path", 404)])
async def test_bad_requests_are_refused(bridge: McpHttpBridge, how: str, status: int) -> None:
    provider = Provider()
    ep = bridge.add("tools", provider)
    headers = {**ACCEPT, **ep.headers, "Content-Type": "application/json"}
    body: Any = _req(1, "tools/list")
    url = ep.url
    async with httpx.AsyncClient(timeout=30) as http:
        if how == "no token":
            del headers["Authorization"]
        elif how == "wrong token":
            headers["Authorization"] = "Bearer " + "x" * len(ep.token)
        elif how == "foreign origin":
            headers["Origin"] = "http://evil.example"
        elif how == "json only":
            headers["Accept"] = "application/json"
        elif how == "too big":
            body = _req(1, "tools/call", {"name": "echo", "arguments": {"text": "x" * 20_000}})
        elif how == "array":
            body = [_req(1, "tools/list")]
        elif how == "not json":
            body = b"{not json"
        elif how == "unknown path":
            url = ep.url.rsplit("/", 1)[0] + "/99"
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        if how in ("get", "delete"):
            r = await http.request(how.upper(), url, headers=headers)
        else:
            r = await http.post(url, content=content, headers=headers)
    assert r.status_code == status
    if how == "array":
        assert r.json()["error"]["code"] == -32600
    if how == "not json":
        assert r.json()["error"]["code"] == -32700
    if how == "get":
        assert r.headers["allow"] == "POST"
    assert provider.seen == []  # nothing refused reached the provider
    # a page from the agent's own origin is fine
    r = await _post(ep, _req(2, "tools/list"), {**ACCEPT, **ep.headers, "Origin": f"http://127.0.0.1:{bridge.port}"})
    assert r.status_code == 200


async def test_too_many_at_once_is_429_and_a_dropped_response_cancels(bridge: McpHttpBridge) -> None:
    provider = Provider()
    ep = bridge.add("tools", provider)
    hanging = [asyncio.create_task(_post(ep, _req(i, "tools/call", {"name": "hang"}))) for i in (1, 2)]
    while len(provider.seen) < 2:
        await asyncio.sleep(0.01)
    r = await _post(ep, _req(3, "tools/list"))
    assert r.status_code == 429
    assert r.json()["error"] == {"code": -33000, "message": "more than 2 requests at once"}
    hanging[0].cancel()  # the client drops one response: its request is cancelled
    with pytest.raises(asyncio.CancelledError):
        await hanging[0]
    while not provider.cancelled:
        await asyncio.sleep(0.01)
    assert provider.cancelled == ["tools/call"]
    # and notifications/cancelled cancels the other
    r = await _post(ep, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    assert r.status_code == 202
    answer = (await hanging[1]).json()
    assert answer["error"]["code"] == -32800 and provider.cancelled == ["tools/call", "tools/call"]
    assert (await _post(ep, _req(4, "tools/list"))).status_code == 200  # room again


async def test_a_handshake_era_client_is_answered_and_its_capabilities_travel(bridge: McpHttpBridge) -> None:
    provider = Provider()
    ep = bridge.add("tools", provider)
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {"roots": {}}, "clientInfo": {"name": "old", "version": "1"}}}
    answer = (await _post(ep, init)).json()["result"]
    assert answer["protocolVersion"] == "2025-06-18" and answer["capabilities"] == {"tools": {}}
    assert answer["serverInfo"]["name"] == "acplink"
    assert (await _post(ep, {"jsonrpc": "2.0", "method": "notifications/initialized"})).status_code == 202
    await _post(ep, {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    assert provider.seen == [("tools/list", {"_meta": {MCP_PROTOCOL_VERSION_KEY: "2026-07-28",
                                                       MCP_CLIENT_CAPABILITIES: {"roots": {}},
                                                       MCP_CLIENT_INFO: {"name": "old", "version": "1"}}})]


async def test_closing_stops_listening_and_cancels() -> None:
    provider = Provider()
    bridge = McpHttpBridge()
    await bridge.start()
    ep = bridge.add("tools", provider)
    hanging = asyncio.create_task(_post(ep, _req(1, "tools/call", {"name": "hang"})))
    while not provider.seen:
        await asyncio.sleep(0.01)
    await bridge.aclose()
    assert provider.cancelled == ["tools/call"]
    assert (await hanging).json()["error"]["code"] == -32800  # (told, before the listener closed)
    with pytest.raises(httpx.ConnectError):
        await _post(ep, _req(2, "tools/list"))


async def test_the_python_mcp_client_uses_it(bridge: McpHttpBridge) -> None:
    pytest.importorskip("mcp")
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    ep = bridge.add("tools", Provider())
    async with httpx2.AsyncClient(headers=ep.headers, timeout=30) as http, \
            Client(streamable_http_client(ep.url, http_client=http), cache=None) as client:
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["echo"]
        result = await client.call_tool("echo", {"text": "from mcp"})
    assert result.content[0].text == "echo: from mcp"  # type: ignore[union-attr]


async def test_a_bridge_after_a_closed_one_answers() -> None:
    """One bridge per prompt: each new listener (often given the fd number the last one had) is
    heard, and a closed one no longer listens (found with the TypeScript MCP client, tests/interop)."""
    for i in range(3):
        async with McpHttpBridge() as bridge:
            ep = bridge.add("tools", Provider())
            r = await asyncio.wait_for(_post(ep, _req(i, "tools/list")), 10)
            assert r.json()["result"] == {"tools": TOOLS}
    with pytest.raises(httpx.ConnectError):
        await _post(ep, _req(9, "tools/list"))
