"""The low-level version router: two implementations (one Router per version, each taking its
version's typed params) behind one connection, the version chosen by initialize."""

from __future__ import annotations

from typing import Any

import pytest
from v2_wire import INIT2, wired

from acplink.agent import DualAgentConnection
from acplink.connection.agent_side import AgentSideConnection
from acplink.connection.base import Router
from acplink.schema import _generated as s


def v1_router() -> Router:
    r = Router()

    async def initialize(p: s.InitializeRequest) -> dict[str, Any]:
        return {"protocolVersion": 1, "agentCapabilities": {}, "agentInfo": {"name": "one", "version": "1"}}

    async def new(p: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id=f"v1:{p.cwd}")

    r.add_request("initialize", initialize)
    r.add_request("session/new", new)
    return r


def v2_router(seen: list[Any]) -> Router:
    r = Router()

    async def initialize(p: Any) -> dict[str, Any]:
        seen.append(p.protocol_version)
        return {"protocolVersion": 2, "info": {"name": "two", "version": "2"}, "capabilities": {"session": {}}}

    async def new(p: Any) -> dict[str, Any]:
        return {"sessionId": f"v2:{p.cwd}"}

    async def cancel(p: Any) -> None:
        seen.append(("cancel", p.session_id))

    r.add_request("initialize", initialize)
    r.add_request("session/new", new)
    r.add_notification("session/cancel", cancel)
    return r


def dual(v1: Router | None, v2: Router | None) -> Any:
    return wired(lambda t: DualAgentConnection(t, v1, v2))


def by_version(v1: Router | None, v2: Router | None) -> Any:
    routers = {n: r for n, r in ((1, v1), (2, v2)) if r is not None}
    return wired(lambda t: AgentSideConnection(t, routers))


@pytest.mark.parametrize(("init", "name", "sid"), [
    ({"protocolVersion": 1}, "one", "v1:/w"),
    (INIT2, "two", "v2:/w"),
    ({**INIT2, "protocolVersion": 9}, "two", "v2:/w"),
])
@pytest.mark.parametrize("make", [dual, by_version])
async def test_initialize_picks_the_implementation(init: dict[str, Any], name: str, sid: str, make: Any) -> None:
    seen: list[Any] = []
    async with make(v1_router(), v2_router(seen)) as c:
        r, _ = await c.call("initialize", init)
        info = r["result"].get("agentInfo") or r["result"]["info"]
        assert info["name"] == name
        r, _ = await c.call("session/new", {"cwd": "/w", "mcpServers": []})
        assert r["result"]["sessionId"] == sid
        if name == "two":
            assert seen[0] == 2  # rewritten for the chosen version
            c.notify("session/cancel", {"sessionId": sid})
            r, _ = await c.call("session/missing", {})
            assert r["error"]["code"] == -32601
            assert ("cancel", sid) in seen


async def test_v1_only_takes_a_v2_request_downgraded() -> None:
    async with dual(v1_router(), None) as c:
        r, _ = await c.call("initialize", INIT2)
        assert r["result"]["agentInfo"]["name"] == "one"


async def test_v2_only_refuses_version_1() -> None:
    seen: list[Any] = []
    async with dual(None, v2_router(seen)) as c:
        c.notify("session/cancel", {"sessionId": "early"})  # before initialize: ignored
        r, _ = await c.call("initialize", {"protocolVersion": 1})
        assert r["error"]["code"] == -32022 and r["error"]["data"] == {"requested": 1, "supported": [2]}
        r, _ = await c.call("session/new", {"cwd": "/w"})
        assert r["error"]["code"] == -32600  # still before initialize
        r, _ = await c.call("initialize", INIT2)
        assert r["result"]["info"]["name"] == "two"
        r, _ = await c.call("initialize", {"protocolVersion": 1})
        assert r["error"]["code"] == -32600  # a repeat must keep the chosen version
    assert ("cancel", "early") not in seen
