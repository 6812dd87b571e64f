"""HTTP/2: the ASGI app under Hypercorn, talked to over h2c (prior knowledge) with httpx."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from acplink.server import AcpServer

from .helpers import AGENT, BOUND, Remote, msg, prompt, texts

hypercorn = pytest.importorskip("hypercorn.asyncio", reason="hypercorn (a test dependency) is not installed")
pytest.importorskip("h2", reason="h2 (httpx's http2 extra) is not installed")


async def test_a_turn_over_h2c_under_hypercorn() -> None:
    from hypercorn.config import Config

    app = AcpServer(AGENT)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    config = Config()
    config.bind = [f"fd://{sock.fileno()}"]  # hypercorn takes the socket over (and closes it)
    config.accesslog = config.errorlog = None
    sock.detach()
    stop = asyncio.Event()
    server = asyncio.get_running_loop().create_task(hypercorn.serve(app, config, shutdown_trigger=stop.wait))
    try:
        async with httpx.AsyncClient(http1=False, http2=True, timeout=BOUND) as client:
            remote = Remote(client, f"http://127.0.0.1:{port}/acp")
            async with asyncio.timeout(BOUND):
                while True:  # until hypercorn listens
                    try:
                        r = await remote.initialize()
                        break
                    except httpx.ConnectError:
                        await asyncio.sleep(0.05)
            assert r.http_version == "HTTP/2" and r.status_code == 200
            async with remote.stream() as events:
                assert events.response.http_version == "HTTP/2"
                await remote.post(msg(1, "session/new", cwd="/", mcpServers=[]))
                sid = (await events.until(1))[-1]["result"]["sessionId"]
                async with remote.stream(sid) as session_events:
                    await remote.post(prompt(2, sid, "hi"), session=sid)
                    assert texts(await session_events.until(2)) == ["thinking", "done"]
            assert (await client.delete(remote.url, headers=remote.headers())).status_code == 202
    finally:
        await app.aclose()
        stop.set()
        await server
