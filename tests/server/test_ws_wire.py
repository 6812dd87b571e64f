"""The WebSocket wire over a real socket: a whole turn, close codes, and every bad input."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from acplink.server import AcpServer, ServerLimits

from .helpers import AGENT, BOUND, INIT, msg, pid_alive, prompt, serving, texts, wait_gone


def ws_url(url: str) -> str:
    return "ws" + url.removeprefix("http")


async def recv(ws: ClientConnection) -> Any:
    async with asyncio.timeout(BOUND):
        return orjson.loads(await ws.recv())


async def until(ws: ClientConnection, rid: Any) -> list[Any]:
    out = []
    while True:
        out.append(await recv(ws))
        if out[-1].get("id") == rid and "method" not in out[-1]:
            return out


async def closed_with(ws: ClientConnection) -> int | None:
    async with asyncio.timeout(BOUND):
        try:
            while True:
                await ws.recv()
        except ConnectionClosed:
            pass
    return ws.close_code


async def start(ws: ClientConnection) -> int:
    await ws.send(json.dumps(INIT))
    [answer] = await until(ws, 0)
    pid: int = answer["result"]["_meta"]["pid"]
    return pid


async def test_a_turn_with_a_permission() -> None:
    async with serving(AcpServer(AGENT)) as url, connect(ws_url(url)) as ws:
        assert ws.response is not None and len(ws.response.headers["acp-connection-id"]) >= 32
        pid = await start(ws)
        await ws.send(json.dumps(msg(1, "session/new", cwd="/", mcpServers=[])))
        sid = (await until(ws, 1))[-1]["result"]["sessionId"]
        await ws.send(json.dumps(prompt(2, sid, "permission")))
        while (request := await recv(ws)).get("method") != "session/request_permission":
            pass
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {
            "outcome": {"outcome": "selected", "optionId": "no"}}}))
        turn = await until(ws, 2)
        assert texts(turn) == ["permission: no", "done"]
    assert await wait_gone(pid)  # the client closed: its agent is stopped


async def test_bad_frames_keep_the_socket_open() -> None:
    async with serving(AcpServer(AGENT)) as url, connect(ws_url(url)) as ws:
        await ws.send("{not json")
        assert (await recv(ws))["error"]["code"] == -32700
        await ws.send("[1, 2]")
        batch = await recv(ws)
        assert batch["error"]["code"] == -32600 and batch["id"] is None
        await ws.send(b"\x00binary")  # ignored
        await ws.send('"a string"')
        assert (await recv(ws))["error"]["code"] == -32600
        pid = await start(ws)  # still open, and initialize still comes first
        await ws.send('{"jsonrpc":"2.0","id":"x","method":"_echo","_meta":{"k":1},"more":[]}')
        [echo] = await until(ws, "x")
        assert echo["result"]["raw"] == '{"jsonrpc":"2.0","id":"x","method":"_echo","_meta":{"k":1},"more":[]}'
        assert pid_alive(pid)


async def test_first_frame_not_initialize_is_1002() -> None:
    async with serving(AcpServer(AGENT)) as url, connect(ws_url(url)) as ws:
        await ws.send(json.dumps(msg(1, "session/new", cwd="/")))
        assert await closed_with(ws) == 1002


async def test_no_initialize_in_time_is_1002() -> None:
    app = AcpServer(AGENT, limits=ServerLimits(ws_initialize_timeout=0.3))
    async with serving(app) as url, connect(ws_url(url)) as ws:
        assert await closed_with(ws) == 1002
        assert app.connection_count == 0


async def test_an_oversized_frame_is_1009() -> None:
    app = AcpServer(AGENT, limits=ServerLimits(max_message_bytes=1000))
    async with serving(app) as url, connect(ws_url(url)) as ws:
        pid = await start(ws)
        await ws.send(json.dumps(msg(1, "_echo", pad="x" * 2000)))
        assert await closed_with(ws) == 1009
        assert await wait_gone(pid)


async def test_uvicorns_frame_limit_is_1009_too() -> None:
    async with serving(AcpServer(AGENT), ws_max_size=4096) as url, connect(ws_url(url)) as ws:
        await ws.send("x" * 5000)
        assert await closed_with(ws) == 1009


async def test_an_agent_crash_mid_prompt_is_1011() -> None:
    async with serving(AcpServer(AGENT)) as url, connect(ws_url(url)) as ws:
        pid = await start(ws)
        await ws.send(json.dumps(prompt(1, "s1", "crash")))
        assert texts([await recv(ws)]) == ["thinking"]
        async with asyncio.timeout(5):  # a hang guard (it comes at once)
            assert await closed_with(ws) == 1011
        assert not pid_alive(pid)


async def test_server_shutdown_is_1001_and_stops_the_agents() -> None:
    app = AcpServer(AGENT)
    async with serving(app) as url, connect(ws_url(url)) as ws:
        pid = await start(ws)
        await app.aclose()
        assert await closed_with(ws) == 1001
        assert not pid_alive(pid)


@pytest.mark.parametrize(("kwargs", "headers", "status"), [
    ({"token": "s3cret"}, {}, 401),
    ({"token": "s3cret"}, {"Authorization": "Bearer nope"}, 401),
    ({"allow_origins": ["https://ok.example"]}, {"Origin": "https://evil.example"}, 403),
    ({"transports": ["http"]}, {}, 426),
])
async def test_refused_upgrades(kwargs: dict[str, Any], headers: dict[str, str], status: int) -> None:
    app = AcpServer(AGENT, **kwargs)
    async with serving(app) as url:
        with pytest.raises(InvalidStatus) as caught:
            async with connect(ws_url(url), additional_headers=headers):
                pass
        assert caught.value.response.status_code == status
        if status == 401:
            assert caught.value.response.headers["www-authenticate"].startswith("Bearer")
        assert app.connection_count == 0


async def test_a_token_lets_the_upgrade_in() -> None:
    async with serving(AcpServer(AGENT, token="s3cret")) as url, \
            connect(ws_url(url), additional_headers={"Authorization": "Bearer s3cret"}) as ws:
        await start(ws)


async def test_one_connection_too_many_is_503() -> None:
    app = AcpServer(AGENT, limits=ServerLimits(max_connections=1))
    async with serving(app) as url, connect(ws_url(url)):
        with pytest.raises(InvalidStatus) as caught:
            async with connect(ws_url(url)):
                pass
        assert caught.value.response.status_code == 503
        assert int(caught.value.response.headers["retry-after"]) > 0
