"""How long the client's MCP servers live, over a real subprocess pipe (ACP v1 and v2): a
session's own servers (``per_session=True``) go with the session (closed, deleted) and all of
them with the connection; their running requests are cancelled, later ones get ``-33001``, and
a client opening and closing sessions keeps only the servers of the open ones. Loading and
resuming a session declares its servers again, with the same ids."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from test_mcp_e2e import Tools, _cancelled_once, _say

from acplink import AgentApp, Client, McpCall, RequestError, ResourceNotFound, UsageError, connect

AGENT = [sys.executable, str(Path(__file__).with_name("mcp_agent.py"))]

pytestmark = pytest.mark.parametrize("version", [1, 2])


def _ours(servers: str) -> dict[str, str]:
    """The agent's ``servers`` reply (``name=id,...``), this test's servers only."""
    pairs = dict(entry.split("=", 1) for entry in servers.split(",") if entry)
    return {name: pairs[name] for name in ("mine", "shared") if name in pairs}


async def _end(client: Client, session: Any, how: str) -> None:
    if how == "close":
        await session.close()
    else:
        await client.delete_session(session.session_id)


@pytest.mark.parametrize("how", ["close", "delete"])
async def test_a_sessions_servers_go_with_it(version: int, how: str, tmp_path: Path) -> None:
    tools = Tools()
    async with connect(AGENT, protocol=version) as client:
        assert client.offers(f"{how}_session")
        mine = client.mcp.register("mine", tools, per_session=True)
        shared = client.mcp.register("shared", tools)
        one = await client.new_session(tmp_path)
        two = await client.new_session(tmp_path)
        id_one, id_two = mine.server_id_of(one.session_id), mine.server_id_of(two.session_id)
        assert id_one and id_two
        assert {shared.server_id, id_one, id_two} <= set(client.mcp.server_ids)
        before = len(client.mcp.server_ids)
        # a call to session one's server is running when the session ends
        assert await _say(client, one, "background mine") == "started"
        assert mine.active == 1
        await _end(client, one, how)
        await _cancelled_once(tools)  # the provider cancelled its handler
        assert await _say(client, two, "outcome") == "outer: -32800 Request cancelled"
        # its server is gone: later requests (by its id, from another session) are -33001
        assert mine.server_id_of(one.session_id) is None and mine.active == 0
        assert id_one not in client.mcp.server_ids and {shared.server_id, id_two} <= set(client.mcp.server_ids)
        assert len(client.mcp.server_ids) < before
        assert (await _say(client, two, f"tools {id_one}")).startswith("outer: -33001 ")
        # the other session's, and the connection-wide one, go on
        assert await _say(client, two, "tools mine") == "echo,fail,hang"
        assert tools.calls[-1].session_id == two.session_id
        assert await _say(client, two, "tools shared") == "echo,fail,hang"


async def test_closing_the_connection_withdraws_every_server(version: int, tmp_path: Path) -> None:
    tools = Tools()
    client = await connect(AGENT, protocol=version)
    try:
        mine = client.mcp.register("mine", tools, per_session=True)
        shared = client.mcp.register("shared", tools)
        session = await client.new_session(tmp_path)
        assert await _say(client, session, "background shared") == "started"
        assert await _say(client, session, "background mine") == "started"
        assert shared.active == 1 and mine.active == 1
    finally:
        await client.aclose()
    # both handlers were cancelled, and nothing is kept for the connection any more
    assert tools.cancelled == 2
    assert client.mcp.server_ids == () and client.mcp.registrations == ()
    assert mine.active == 0 and shared.active == 0 and mine.server_id_of(session.session_id) is None

    async def late(call: McpCall) -> Any:
        return None

    with pytest.raises(UsageError, match="closed"):
        client.mcp.register("late", late)


async def test_load_and_resume_declare_the_same_servers_again(version: int, tmp_path: Path) -> None:
    tools = Tools()
    async with connect(AGENT, protocol=version) as client:
        mine = client.mcp.register("mine", tools, per_session=True)
        shared = client.mcp.register("shared", tools)
        session = await client.new_session(tmp_path)
        sid = session.session_id
        declared = {"mine": mine.server_id_of(sid), "shared": shared.server_id}
        assert _ours(await _say(client, session, "servers")) == declared
        ways = ["resume_session"] + (["load_session"] if version == 1 else [])
        for way in ways:
            again = await getattr(client, way)(sid, tmp_path)
            # the agent got them again (it keeps what a load or resume declares): the same ids
            assert _ours(await _say(client, again, "servers")) == declared, way
            assert await _say(client, again, "tools mine") == "echo,fail,hang"
            assert tools.calls[-1].session_id == sid
        # a load or resume that fails leaves no server behind
        before = client.mcp.server_ids
        for way in ways:
            with pytest.raises(ResourceNotFound):
                await getattr(client, way)("missing", tmp_path)
            assert client.mcp.server_ids == before, way
        # once the session is closed, opening it again gives it a fresh server
        await client.sessions[sid].close()
        again = await client.resume_session(sid, tmp_path)
        fresh = mine.server_id_of(sid)
        assert fresh is not None and fresh != declared["mine"]
        assert _ours(await _say(client, again, "servers")) == {"mine": fresh, "shared": shared.server_id}


async def test_a_thousand_sessions_leave_only_the_open_ones(version: int, tmp_path: Path) -> None:
    """Memory stays bounded: after 1000 sessions opened and closed, the provider holds the
    servers of the sessions still open and nothing else (in process: the same code as over a
    pipe, a thousand times faster)."""
    app = AgentApp("many", protocols=(1, 2))

    @app.close_session
    async def close_session(ctx: Any) -> None:
        return None

    async def handler(call: McpCall) -> Any:
        return {"tools": []}

    async with connect(app, protocol=version) as client:
        mine = client.mcp.register("mine", handler, per_session=True)
        shared = client.mcp.register("shared", handler)
        kept = await client.new_session(tmp_path)
        baseline = len(client.mcp.server_ids)  # (the connection-wide one, the kept session's)
        seen: set[str] = set()
        for i in range(1000):
            session = await client.new_session(tmp_path)
            server_id = mine.server_id_of(session.session_id)
            assert server_id is not None and server_id not in seen  # (never reused)
            seen.add(server_id)
            if i == 0:
                per_session = len(client.mcp.server_ids) - baseline
                assert per_session >= 1
            assert len(client.mcp.server_ids) == baseline + per_session
            if i % 2:
                await session.close()
            else:
                await client.delete_session(session.session_id) if client.offers("delete_session") \
                    else await session.close()
        assert len(client.mcp.server_ids) == baseline
        assert {shared.server_id, mine.server_id_of(kept.session_id)} <= set(client.mcp.server_ids)
        assert list(client.sessions) == [kept.session_id]
        assert mine.active == 0
        with pytest.raises(RequestError) as err:  # (what the agent would get for a closed session's)
            await client.mcp.handle({"serverId": server_id, "requestId": "r", "method": "tools/list"})
        assert err.value.code == -33001
