"""The in-process backend: one acplink agent app per remote connection, from a factory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from acplink.agent.app import AgentBase
from acplink.demo.agent import DemoStore, create_demo_agent
from acplink.server import AcpServer

from .helpers import BOUND, INIT, Remote, msg, prompt, serving, texts


async def test_each_connection_gets_its_own_app_over_both_transports(tmp_path: Path) -> None:
    made: list[AgentBase] = []

    def factory() -> AgentBase:
        made.append(create_demo_agent(DemoStore(tmp_path), delay=0))
        return made[-1]

    app = AcpServer(factory)
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        remote = Remote(client, url)
        r = await client.post(url, json=INIT)
        assert r.status_code == 200 and r.json()["result"]["agentCapabilities"]["loadSession"] is True
        remote.cid = r.headers["acp-connection-id"]
        async with remote.stream() as events:
            await remote.post(msg(1, "session/new", cwd=str(tmp_path), mcpServers=[]))
            sid = (await events.until(1))[-1]["result"]["sessionId"]
            async with remote.stream(sid) as session_events:
                await remote.post(prompt(2, sid, "hello"), session=sid)
                turn = await session_events.until(2)
        assert "".join(texts(turn)) == "You said: hello"
        assert turn[-1]["result"]["stopReason"] == "end_turn"
        async with connect("ws" + url.removeprefix("http")) as ws:
            await ws.send(json.dumps(INIT))
            assert json.loads(await ws.recv())["id"] == 0
            await ws.send(json.dumps(msg(1, "session/load", sessionId=sid, cwd=str(tmp_path), mcpServers=[])))
            replay = []
            while "id" not in (m := json.loads(await ws.recv())):
                replay.append(m)
            assert m["result"] is not None and "hello" in json.dumps(replay)
        assert len(made) == 2
        assert (await client.delete(url, headers=remote.headers())).status_code == 202


async def test_an_app_waits_on_its_writes_only_while_the_remote_client_is_behind() -> None:
    from acplink.server.inprocess import _RemoteTransport

    delivered: list[bytes] = []
    transport = _RemoteTransport(delivered.append, lambda reason: None)
    assert transport.send(b'{"a":1}\n') is True  # handed over: nothing to wait for
    transport.room.clear()  # (the connection's buffer for the client is full)
    assert transport.send(b'{"a":2}\n') is False and transport.writing_paused  # the writer drains
    transport.room.set()
    await transport.drain()
    assert delivered == [b'{"a":1}', b'{"a":2}']


async def test_an_apps_notifications_reach_a_websocket_client_unparsed_and_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the app's output is acplink's own: its notifications need no routing on a WebSocket,
    # so the server does not parse them (a flood's per-message cost); answers still are
    import acplink.server.connection as server_connection

    parsed: list[bytes] = []
    real = server_connection.orjson

    class CountingOrjson:
        JSONDecodeError = real.JSONDecodeError
        dumps = staticmethod(real.dumps)

        @staticmethod
        def loads(data: bytes) -> Any:
            parsed.append(bytes(data))
            return real.loads(data)

    monkeypatch.setattr(server_connection, "orjson", CountingOrjson)
    app = AcpServer(lambda: create_demo_agent(DemoStore(tmp_path), delay=0))
    async with serving(app) as url, connect("ws" + url.removeprefix("http")) as ws:
        await ws.send(json.dumps(INIT))
        assert json.loads(await ws.recv())["id"] == 0
        await ws.send(json.dumps(msg(1, "session/new", cwd=str(tmp_path), mcpServers=[])))
        sid = json.loads(await ws.recv())["result"]["sessionId"]
        await ws.send(json.dumps(prompt(2, sid, "hello")))
        turn = []
        while "id" not in (m := json.loads(await ws.recv())):
            turn.append(m)
    assert "".join(texts(turn)) == "You said: hello" and m["result"]["stopReason"] == "end_turn"
    assert turn and all(b'"method"' not in line or b'"id"' in line for line in parsed), parsed
    assert any(b'"stopReason"' in line for line in parsed)  # (answers are routed as before)
