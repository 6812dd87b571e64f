"""Scale-out: two ``acplink serve`` instances behind HAProxy (the distribution's package) with
cookie affinity. A connection, with all its requests and streams, stays on one instance;
WebSockets go through too; killing an instance fails only its connections, clearly."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from .helpers import BOUND, INIT, Remote, Served, msg, prompt, serve, texts

HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)

pytestmark = pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed (scripts/test.sh installs "
                                                        "Debian's package when run as root)")

CONFIG = """
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout tunnel 30s
frontend acp
    bind 127.0.0.1:{port}
    default_backend instances
backend instances
    balance roundrobin
    cookie ACPSRV insert indirect nocache
    server one {one} cookie one
    server two {two} cookie two
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def host_port(url: str) -> str:
    match = re.match(r"\w+://([^/]+)/", url)
    assert match
    return match.group(1)


@contextlib.asynccontextmanager
async def haproxy(tmp_path: Path, one: Served, two: Served) -> AsyncIterator[str]:
    assert HAPROXY is not None
    port = free_port()
    cfg = tmp_path / "haproxy.cfg"
    cfg.write_text(CONFIG.format(port=port, one=host_port(one.urls["http"]), two=host_port(two.urls["http"])))
    proc = await asyncio.create_subprocess_exec(HAPROXY, "-db", "-f", str(cfg), stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.PIPE)
    try:
        async with asyncio.timeout(BOUND):
            while True:  # until it listens
                try:
                    _, writer = await asyncio.open_connection("127.0.0.1", port)
                    writer.close()
                    await writer.wait_closed()
                    break
                except OSError:
                    assert proc.returncode is None, await proc.stderr.read() if proc.stderr else b""
                    await asyncio.sleep(0.05)
        yield f"http://127.0.0.1:{port}/acp"
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await proc.communicate()


async def websocket_turn(url: str) -> None:
    async with connect("ws" + url.removeprefix("http")) as ws:
        assert ws.response is not None and "ACPSRV=" in ws.response.headers.get("set-cookie", "")
        await ws.send(json.dumps(INIT))
        assert json.loads(await ws.recv())["id"] == 0
        await ws.send(json.dumps(prompt(1, "s", "hi")))
        while "id" not in (m := json.loads(await ws.recv())):
            pass
        assert m["result"] == {"stopReason": "end_turn"}  # (a client that does not resume: no cursor)


async def test_affinity_and_one_instance_killed(tmp_path: Path) -> None:
    async with serve() as one, serve() as two, haproxy(tmp_path, one, two) as url:
        clients = [httpx.AsyncClient(timeout=BOUND) for _ in range(2)]
        try:
            a, b = (Remote(c, url) for c in clients)
            for r in (a, b):
                assert (await r.initialize()).status_code == 200
                assert "ACPSRV" in r.client.cookies
            # round robin put them on different instances, and the cookie keeps each there
            assert {a.client.cookies["ACPSRV"], b.client.cookies["ACPSRV"]} == {"one", "two"}
            async with a.stream() as a_conn, a.stream("sa") as a_session, b.stream("sb") as b_session:
                for i in range(4):  # every request of a connection reaches its instance
                    assert (await a.post(prompt(i, "sa", "hi"), session="sa")).status_code == 202
                    assert texts(await a_session.until(i)) == ["thinking", "done"]
                    assert (await b.post(prompt(i, "sb", "hi"), session="sb")).status_code == 202
                    assert texts(await b_session.until(i)) == ["thinking", "done"]
                # without the cookie, round robin sends some requests to the other instance
                statuses = set()
                for _ in range(4):
                    async with httpx.AsyncClient(timeout=BOUND) as lost:  # (a new TCP connection each)
                        r = await lost.post(url, json=msg(9, "session/new"), headers=a.headers())
                        statuses.add(r.status_code)
                assert statuses == {202, 404}
                # WebSockets go through too (the 101 carries the cookie): one on each instance
                for _ in range(2):
                    await websocket_turn(url)
                assert [one.log.count("opened (WebSocket"), two.log.count("opened (WebSocket")] == [1, 1]
                # kill the instance of a: only a fails, and clearly
                victim = one if a.client.cookies["ACPSRV"] == "one" else two
                victim.proc.kill()
                await victim.proc.wait()
                with contextlib.suppress(httpx.RemoteProtocolError):  # its stream ends (cut short)
                    while (answer := await a_conn.next()) is not None:
                        assert answer["id"] == 9  # (the answers to the cookie-less requests that got there)
                status = (await a.post(prompt(10, "sa", "hi"), session="sa")).status_code
                assert status in (404, 502, 503), status
                assert (await b.post(prompt(10, "sb", "hi"), session="sb")).status_code == 202
                assert texts(await b_session.until(10)) == ["thinking", "done"]
        finally:
            for c in clients:
                await c.aclose()

