"""Stored sessions are scoped to the principal that created them (docs/sessions.md): two tokens
against one ``acplink serve`` (an app in process with a ``SqliteStore``; the demo agent, one
process per connection; two instances sharing a ``PostgresStore``). Another token's session is
answered exactly as an unknown id is, whatever the method; ``session/list`` shows only the
caller's."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from acplink import RequestError, connect
from acplink.server import AccessPolicy, principal_of_token

from .helpers import DEMO, env_without_token, serve

AGENTS = str(Path(__file__).resolve().parent.parent / "agent")
A, B = "token-of-alice", "token-of-bob"


def _env(tmp_path: Path, store: str) -> dict[str, str]:
    """``shared:app``: one AgentApp (tests/agent/store_agent.py) serving every connection."""
    (tmp_path / "shared.py").write_text("import os\nfrom store_agent import build\n\n"
                                        "app = build(os.environ['ACPLINK_TEST_STORE'])\n")
    return {**env_without_token(), "ACPLINK_TEST_STORE": store,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), AGENTS, os.environ.get("PYTHONPATH")]))}


async def _refusal(call: Any) -> tuple[int, str, Any] | None:
    """How a call was refused (code, message, data); None: it succeeded."""
    try:
        await call
    except RequestError as exc:
        return exc.code, exc.message, exc.data
    return None


async def _answers(client: Any, sid: str, cwd: Path) -> dict[str, Any]:
    """What ``client`` is told by every session method naming ``sid``."""
    conn = client.conn
    calls = {
        "load": client.load_session(sid, cwd=cwd),
        "resume": client.resume_session(sid, cwd=cwd),
        "fork": client.fork_session(sid, cwd=cwd),
        "archive": conn.call("session/archive", session_id=sid),
        "unarchive": conn.call("session/unarchive", session_id=sid),
        "set_title": conn.call("session/set_title", session_id=sid, title="mine now"),
        "status": conn.call("session/status", session_id=sid),
        "prompt": conn.call("session/prompt", session_id=sid, prompt=[{"type": "text", "text": "hi"}]),
        "delete": client.delete_session(sid),
    }
    out = {}
    for name, call in calls.items():
        refused = await _refusal(call)
        if refused is not None:  # (the id is in the message and data: compared without it)
            code, message, data = refused
            refused = (code, message.replace(sid, "ID"), {k: v for k, v in (data or {}).items() if k != "sessionId"})
        out[name] = refused
    return out


def test_a_token_principal_is_stable_and_does_not_give_the_token_away() -> None:
    p = principal_of_token(A)
    assert p == principal_of_token(A) != principal_of_token(B)
    assert p.startswith("token:") and A not in p
    policy = AccessPolicy(token=[A, B])
    assert policy.principal({"authorization": f"Bearer {A}"}) == p
    assert policy.principal({"authorization": f"Bearer {B}"}) == principal_of_token(B)
    assert policy.principal({"authorization": "Bearer nope"}) is None
    assert policy.check({"authorization": "Bearer nope"}) is not None
    assert policy.check({"authorization": f"Bearer {B}"}) is None
    assert AccessPolicy().principal({"authorization": f"Bearer {A}"}) is None  # (no token: the local one)


async def test_two_tokens_on_one_server_see_only_their_own_sessions(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    env = _env(tmp_path, str(db))
    bobs_ids: list[str] = []
    async with serve("--token", A, "--token", B, "--app", "shared:app", agent=(), env=env) as served:
        for scheme in ("ws", "http"):
            url = served.urls[scheme]
            async with connect(url, token=A) as alice, connect(url, token=B) as bob:
                mine = await alice.new_session(cwd=tmp_path)
                assert await mine.prompt("hello").text() == "turn 1: hello"
                sid = mine.session_id
                assert sid in [x.session_id for x in await alice.list_sessions()]
                assert sid not in [x.session_id for x in await bob.list_sessions()]
                # alice's session, held open by her connection, and an id nobody has: bob is
                # told the same of both, by every method (delete: "succeeds", as for an unknown id)
                foreign = await _answers(bob, sid, tmp_path)
                unknown = await _answers(bob, "sess_" + "0" * 32, tmp_path)
                assert foreign == unknown
                assert foreign["load"] is not None and foreign["load"][0] == -32002
                assert foreign["delete"] is None
                # nothing bob did touched it: alice's turn goes on, her title and history intact
                assert await mine.prompt("still mine").text() == "turn 2: still mine"
                bobs = await bob.new_session(cwd=tmp_path)
                assert await bobs.prompt("mine").text() == "turn 1: mine"
                bobs_ids.insert(0, bobs.session_id)
                assert [x.session_id for x in await bob.list_sessions()] == bobs_ids
                assert bobs.session_id not in [x.session_id for x in await alice.list_sessions()]
            # alice's session once her connection closed: still hers alone
            async with connect(url, token=B) as bob:
                assert await _refusal(bob.load_session(sid, cwd=tmp_path)) is not None
            # (its replay read on the WebSocket: over HTTP the replay's session stream and the
            # answer's connection stream are two streams, read in no set order)
            async with connect(served.urls["ws"], token=A) as alice:
                loaded = await alice.load_session(sid, cwd=tmp_path)
                assert [m.text for m in loaded.state.messages if m.role == "user"] == ["hello", "still mine"]
    # the store keeps the principal (a derived id), never a token
    with contextlib.closing(sqlite3.connect(db)) as check:
        rows = check.execute("SELECT principal FROM sessions").fetchall()
    assert {r[0] for r in rows} == {principal_of_token(A), principal_of_token(B)}
    assert A.encode() not in db.read_bytes() and B.encode() not in db.read_bytes()
    # an agent on stdio serves the local principal: neither token's sessions
    async with connect([sys.executable, str(Path(AGENTS) / "store_agent.py"), str(db)]) as local:
        assert await local.list_sessions() == []
        assert await _answers(local, sid, tmp_path) == await _answers(local, "sess_" + "2" * 32, tmp_path)


async def test_another_tokens_http_connection_is_unknown(tmp_path: Path) -> None:
    env = _env(tmp_path, str(tmp_path / "s.sqlite3"))
    async with serve("--http", "--token", A, "--token", B, "--app", "shared:app", agent=(), env=env) as served:
        url = served.urls["http"]
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
        new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}}
        async with httpx.AsyncClient(timeout=10) as http:
            r = await http.post(url, json=init, headers={"authorization": f"Bearer {A}"})
            assert r.status_code == 200
            cid = r.headers["acp-connection-id"]
            r = await http.post(url, json=new, headers={"authorization": f"Bearer {B}", "acp-connection-id": cid})
            assert (r.status_code, r.text) == (404, "Unknown Acp-Connection-Id")
            r = await http.delete(url, headers={"authorization": f"Bearer {B}", "acp-connection-id": cid})
            assert r.status_code == 404
            r = await http.post(url, json=new, headers={"authorization": f"Bearer {A}", "acp-connection-id": cid})
            assert r.status_code == 202


async def test_the_demo_agent_process_serves_its_tokens_principal(tmp_path: Path) -> None:
    """The default backend (an agent process per connection) tells the agent the principal."""
    env = {**env_without_token(), "ACPLINK_DEMO_STORE": str(tmp_path / "store")}
    async with serve("--ws", "--token", A, "--token", B, agent=DEMO, env=env) as served:
        url = served.urls["ws"]
        async with connect(url, token=A) as alice:
            session = await alice.new_session(cwd=tmp_path)
            assert await session.prompt("remember the milk").text() == "You said: remember the milk"
        async with connect(url, token=B) as bob:
            assert await bob.list_sessions() == []
            refused = await _refusal(bob.load_session(session.session_id, cwd=tmp_path))
            assert refused is not None and refused[0] == -32002
        async with connect(url, token=A) as alice:
            assert [x.session_id for x in await alice.list_sessions()] == [session.session_id]


async def test_postgres_instances_scope_sessions_alike(tmp_path: Path, pg_dsn: str) -> None:
    env = _env(tmp_path, pg_dsn)
    args = ("--ws", "--token", A, "--token", B, "--app", "store_agent:app_from_env")
    async with serve(*args, agent=(), env=env) as one, serve(*args, agent=(), env=env) as two:
        async with connect(one.urls["ws"], token=A) as alice:
            session = await alice.new_session(cwd=tmp_path)
            assert await session.prompt("hello").text() == "turn 1: hello"
            sid = session.session_id
            async with connect(two.urls["ws"], token=B) as bob:  # (while alice's instance holds it)
                assert sid not in [x.session_id for x in await bob.list_sessions()]
                assert await _answers(bob, sid, tmp_path) == await _answers(bob, "sess_" + "1" * 32, tmp_path)
        async with connect(two.urls["ws"], token=A) as alice:  # her session, on the other instance
            assert sid in [x.session_id for x in await alice.list_sessions()]
            loaded = await alice.load_session(sid, cwd=tmp_path)
            assert await loaded.prompt("again").text() == "turn 2: again"


@pytest.mark.parametrize("scheme", ["ws"])
async def test_without_a_token_everyone_is_the_local_principal(tmp_path: Path, scheme: str) -> None:
    env = _env(tmp_path, str(tmp_path / "s.sqlite3"))
    async with serve("--app", "shared:app", agent=(), env=env) as served:
        async with connect(served.urls[scheme]) as one:
            session = await one.new_session(cwd=tmp_path)
            await session.prompt("hello").text()
        async with connect(served.urls[scheme]) as two:
            assert [x.session_id for x in await two.list_sessions()] == [session.session_id]
