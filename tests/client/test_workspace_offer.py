"""The client offers its workspace server (its files and terminals as MCP tools over ACP) by
itself: ``connect(..., workspace=None|True|False)``. Over real subprocess pipes, to an acplink
agent that reports what its sessions declared, and to the demo agent (load, resume, fork)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import PermissionPolicy, UsageError, connect
from acplink.mcp import McpCall

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE.parent / "agent" / "workspace_agent.py")]
DEMO = [sys.executable, "-m", "acplink.demo"]
ALL_TOOLS = ["read_text_file", "write_text_file", "run", "kill"]


async def say(session: Any, text: str) -> str:
    turn = session.prompt(text)
    chunks = [u.content.text async for u in turn if getattr(u, "content", None) is not None
              and getattr(u.content, "text", None) is not None]
    assert turn.stop_reason == "end_turn"
    return "".join(chunks)


async def declared(session: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(await say(session, "servers"))
    return out


async def test_v2_offers_it_in_every_session_marked_for_acplink(tmp_path: Path) -> None:
    async with connect(AGENT, protocol=2) as client:
        one = await client.new_session(tmp_path)
        two = await client.new_session(tmp_path)
        assert await declared(one) == [{"name": "workspace", "type": "acp", "workspace": ALL_TOOLS}]
        reg = client.workspace_registration
        assert reg is not None and reg.per_session and reg.name == "workspace"
        # a server per session (each serves its own folders), never the same id
        ids = {reg.server_id_of(one.session_id), reg.server_id_of(two.session_id)}
        assert len(ids) == 2 and None not in ids
        assert reg.meta == {"acplink.dev/workspace": {"tools": ALL_TOOLS}}


@pytest.mark.parametrize(("protocol", "workspace", "offered"), [
    (1, None, False),  # v1 has fs/* and terminal/*: not offered unless asked
    (1, True, True),
    (2, False, False),
    (2, True, True),
])
async def test_when_it_is_offered(tmp_path: Path, protocol: int, workspace: bool | None, offered: bool) -> None:
    async with connect(AGENT, protocol=protocol, workspace=workspace) as client:
        session = await client.new_session(tmp_path)
        names = [s["name"] for s in await declared(session)]
        assert names == (["workspace"] if offered else [])
        assert (client.workspace_registration is not None) == offered


async def test_not_offered_to_an_agent_without_acp_mcp(tmp_path: Path) -> None:
    async with connect([*AGENT, "--no-acp"], protocol=2) as client:
        session = await client.new_session(tmp_path)
        assert await declared(session) == []
        assert client.workspace_registration is None and not client.mcp.registrations
        # and the agent's read says why, in one clear error
        reply = await say(session, "read notes.txt")
        assert reply.startswith("error: CapabilityError: cannot read through the client: fs/read_text_file does "
                                "not exist in ACP v2, and the client declared no workspace MCP server")


async def test_not_offered_without_files_or_terminals(tmp_path: Path) -> None:
    async with connect(AGENT, protocol=2, fs=False, terminal=False) as client:
        session = await client.new_session(tmp_path)
        assert await declared(session) == []


async def test_what_it_offers_follows_the_clients_settings(tmp_path: Path) -> None:
    async with connect(AGENT, protocol=2, fs="read", terminal=False) as client:
        session = await client.new_session(tmp_path)
        assert await declared(session) == [{"name": "workspace", "type": "acp", "workspace": ["read_text_file"]}]
        reply = await say(session, "write x.txt hello")
        assert reply.startswith("error: CapabilityError: cannot write through the client") and "no 'write_text_file'" \
            in reply
        assert not (tmp_path / "x.txt").exists()
    async with connect(AGENT, protocol=2, permission=PermissionPolicy.deny_all()) as client:  # (confining)
        session = await client.new_session(tmp_path)
        assert (await declared(session))[0]["workspace"] == ["read_text_file"]


async def test_a_user_server_named_workspace(tmp_path: Path) -> None:
    async def mine(call: McpCall) -> Any:
        return {"tools": []}

    async with connect(AGENT, protocol=2) as client:
        client.mcp.register("workspace", mine)  # registered first: the built-in one takes the next free name
        session = await client.new_session(tmp_path)
        assert await declared(session) == [{"name": "workspace", "type": "acp", "workspace": None},
                                           {"name": "workspace-2", "type": "acp", "workspace": ALL_TOOLS}]
        (tmp_path / "a.txt").write_text("via workspace-2")
        assert await say(session, "read a.txt") == 'read: "via workspace-2"'
    async with connect(AGENT, protocol=2) as client:
        await client.new_session(tmp_path)
        with pytest.raises(UsageError, match=r"built-in workspace server.*workspace=False"):
            client.mcp.register("workspace", mine)  # registered after it: a clear error


async def test_load_resume_and_fork_declare_it_again(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\ntwo\n")
    env = {"ACPLINK_DEMO_STORE": str(tmp_path / "store")}
    async with connect(DEMO, protocol=2, env=env) as client:
        session = await client.new_session(tmp_path)
        assert "notes.txt has 2 lines" in await say(session, "read notes.txt")
        sid = session.session_id
        reg = client.workspace_registration
        assert reg is not None
        first = reg.server_id_of(sid)
    async with connect(DEMO, protocol=2, env=env) as client:  # (v2 has no session/load)
        resumed = await client.resume_session(sid, tmp_path)
        assert "notes.txt has 2 lines" in await say(resumed, "read notes.txt")
        reg = client.workspace_registration
        assert reg is not None and reg.server_id_of(sid) is not None
        assert reg.server_id_of(sid) != first  # (another connection: ids are never reused)
        forked = await client.fork_session(sid, tmp_path)
        assert "notes.txt has 2 lines" in await say(forked, "read notes.txt")
        assert reg.server_id_of(forked.session_id) not in (None, reg.server_id_of(sid))
    async with connect(DEMO, protocol=1, env=env, workspace=True) as client:  # v1's session/load
        loaded = await client.load_session(sid, tmp_path)
        reg = client.workspace_registration
        assert reg is not None and reg.server_id_of(sid) is not None
        assert "notes.txt has 2 lines" in await say(loaded, "read notes.txt")
