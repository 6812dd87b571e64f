"""The provider (``client.mcp``) against a hostile caller: hand-made ``mcp/message`` envelopes
sent by an agent over the connection (in process), on ACP v1 and v2."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from acplink import (
    AgentApp,
    Client,
    Context,
    McpCall,
    McpError,
    MethodNotFound,
    PromptContext,
    RequestError,
    connect,
)
from acplink.mcp import MCP_CLIENT_CAPABILITIES, MCP_PROTOCOL_VERSION, MCP_PROTOCOL_VERSION_KEY

pytestmark = pytest.mark.parametrize("version", [1, 2])

META = {MCP_PROTOCOL_VERSION_KEY: MCP_PROTOCOL_VERSION, MCP_CLIENT_CAPABILITIES: {}}


class Agent:
    """An agent whose connection the test drives by hand; it records the ``mcp/message``
    notifications it gets."""

    def __init__(self) -> None:
        self.app = AgentApp("raw", protocols=(1, 2))
        self.conn: Any = None
        self.notes: list[Any] = []
        self.sessions: list[Any] = []

        @self.app.new_session
        async def new_session(ctx: Context[Any]) -> None:
            self.conn = ctx.connection
            self.sessions.append(ctx.params)

        @self.app.prompt
        async def prompt(ctx: PromptContext) -> None:
            return None

    async def send(self, params: Any) -> Any:
        return await self.conn.peer.request("mcp/message", orjson.dumps(params))

    def watch(self) -> None:
        calls = self.conn.mcp_calls
        real = calls.deliver

        def deliver(params: Any) -> Any:
            self.notes.append(params)
            return real(params)

        calls.deliver = deliver


def envelope(server_id: str, request_id: Any = "r1", method: str = "tools/list", params: Any = None) -> dict[str, Any]:
    return {"serverId": server_id, "requestId": request_id, "method": method,
            "params": {"_meta": META} if params is None else params}


async def opened(version: int, tmp_path: Path, agent: Agent, handler: Any, **kw: Any) -> tuple[Client, Any]:
    client = await connect(agent.app, protocol=version, workspace=False)  # (the provider alone)
    reg = client.mcp.register("tools", handler, **kw)
    await client.new_session(tmp_path)
    return client, reg


async def test_bad_envelopes_unknown_servers_and_ids(version: int, tmp_path: Path) -> None:
    agent = Agent()
    got: list[McpCall] = []

    async def handler(call: McpCall) -> Any:
        got.append(call)
        return None

    client, reg = await opened(version, tmp_path, agent, handler)
    try:
        for bad in (["x"], {"serverId": reg.server_id}, {**envelope(reg.server_id), "requestId": 1.5},
                    {**envelope(reg.server_id), "params": [1]}):
            with pytest.raises(RequestError) as err:
                await agent.send(bad)
            assert err.value.code == -32602 and "path" in err.value.data
        with pytest.raises(RequestError) as err:
            await agent.send(envelope("not-registered"))
        assert err.value.code == -33001 and err.value.data == {"serverId": "not-registered"}
        # an integer request id is refused (a string in both schemas, as the TS SDK says)
        with pytest.raises(RequestError) as err:
            await agent.send(envelope(reg.server_id, 5))
        assert err.value.code == -32602 and err.value.data == {"path": "requestId", "value": 5}
        assert got == []
        # a string one is taken; None is answered as the empty result
        assert await agent.send(envelope(reg.server_id, "5")) == {"result": {}}
        assert got[-1].request_id == "5" and got[-1].method == "tools/list"
    finally:
        await client.aclose()


async def test_inner_metadata_is_checked(version: int, tmp_path: Path) -> None:
    agent = Agent()

    async def handler(call: McpCall) -> Any:
        raise AssertionError("not reached")

    client, reg = await opened(version, tmp_path, agent, handler)
    try:
        out = await agent.send(envelope(reg.server_id, params={"name": "x"}))
        assert out["error"]["code"] == -32602 and MCP_PROTOCOL_VERSION_KEY in out["error"]["message"]
        out = await agent.send(envelope(reg.server_id, params={"_meta": {**META, MCP_PROTOCOL_VERSION_KEY: "2025-11-25"}}))
        assert out["error"] == {"code": -32022, "message": "Unsupported protocol version",
                                "data": {"supported": [MCP_PROTOCOL_VERSION], "requested": "2025-11-25"}}
    finally:
        await client.aclose()


async def test_duplicate_active_request_id_unregister_and_late_notify(version: int, tmp_path: Path) -> None:
    agent = Agent()
    started = asyncio.Event()
    calls: list[McpCall] = []
    cancelled: list[str] = []

    async def handler(call: McpCall) -> Any:
        calls.append(call)
        if call.method == "quick":
            await call.notify("notifications/message", {"level": "info"})
            return {"ok": True}
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(str(call.request_id))
            raise

    client, reg = await opened(version, tmp_path, agent, handler)
    agent.watch()
    try:
        first = asyncio.ensure_future(agent.send(envelope(reg.server_id, "same", "slow")))
        await started.wait()
        with pytest.raises(RequestError) as err:
            await agent.send(envelope(reg.server_id, "same", "quick"))
        assert err.value.code == -32602 and err.value.data == {"serverId": reg.server_id, "requestId": "same"}
        # the same id on another request after the first ended is fine: see below
        assert reg.active == 1
        await reg.unregister()  # cancels the running one (-32800); later ones: -33001
        with pytest.raises(RequestError) as err:
            await first
        assert err.value.code == -32800 and cancelled == ["same"]
        with pytest.raises(RequestError) as err:
            await agent.send(envelope(reg.server_id, "same", "quick"))
        assert err.value.code == -33001
        # notify: sent while the request is active, nothing after it ended
        reg2 = client.mcp.register("other", handler)
        assert reg2.server_id != reg.server_id
        assert await agent.send(envelope(reg2.server_id, "n1", "quick")) == {"result": {"ok": True}}
        await calls[-1].notify("notifications/message", {"level": "late"})
        await agent.send(envelope(reg2.server_id, "n2", "quick"))
        levels = [n.params["level"] if hasattr(n, "params") else n["params"]["level"] for n in agent.notes]
        assert levels == ["info", "info"]
    finally:
        await client.aclose()


async def test_handler_errors(version: int, tmp_path: Path) -> None:
    agent = Agent()

    async def handler(call: McpCall) -> Any:
        if call.method == "inner":
            raise McpError(-32002, "resource not found", {"uri": "x"})
        if call.method == "acp":
            raise RequestError("a handler's own ACP error", code=-33001)
        if call.method == "junk":
            return {"not": {1, 2}}  # (not JSON)
        raise ValueError("/secret/path")

    client, reg = await opened(version, tmp_path, agent, handler)
    try:
        assert await agent.send(envelope(reg.server_id, method="inner")) == {
            "error": {"code": -32002, "message": "resource not found", "data": {"uri": "x"}}}
        for method, kind in (("acp", "RequestError"), ("junk", "TypeError"), ("other", "ValueError")):
            with pytest.raises(RequestError) as err:
                await agent.send(envelope(reg.server_id, method=method))
            # never a binding code of the handler's own, never its details
            assert err.value.code == -33002 and err.value.data["error"] == kind
            assert "secret" not in str(err.value.message)
    finally:
        await client.aclose()


async def test_withdrawn_mcp_connect(version: int, tmp_path: Path) -> None:
    agent = Agent()

    async def handler(call: McpCall) -> Any:
        return None

    client, _ = await opened(version, tmp_path, agent, handler)
    try:
        with pytest.raises(MethodNotFound) as err:
            await agent.conn.peer.request("mcp/connect", orjson.dumps({"acpId": "x"}))
        if version == 1:  # (v1 had it: the answer names what replaced it)
            assert "mcp/message" in err.value.message
    finally:
        await client.aclose()


async def test_declared_where_advertised_and_refused_twice(version: int, tmp_path: Path) -> None:
    agent = Agent()

    async def handler(call: McpCall) -> Any:
        return None

    client, reg = await opened(version, tmp_path, agent, handler)
    try:
        from acplink import InvalidParams

        # the agent advertised acp MCP servers where its version says (v1: a flag, v2: an object)
        path = client.connection.protocol.mcp_transports["acp"]
        assert client.supports(path)
        [params] = agent.sessions
        assert [(s.name, s.server_id) for s in params.mcp_servers] == [("tools", reg.server_id)]
        with pytest.raises(InvalidParams) as err:
            await client.new_session(tmp_path, mcp_servers=[{"type": "acp", "name": "tools", "serverId": "x"}])
        assert err.value.data == {"path": "mcpServers[1].name", "name": "tools"}
    finally:
        await client.aclose()
