"""What keeps a remote round trip short, checked without timing anything: no import lookups per
request (httpcore imports sniffio on every request: a failed import scans sys.path each
time), and a message queued for a client is sent in the next turn of the event loop (no
timer or helper task between the agent's output and the socket)."""

from __future__ import annotations

import asyncio
import importlib.abc
import sys
from pathlib import Path
from typing import Any

import pytest

from acplink import connect
from acplink.demo.agent import DemoStore, create_demo_agent
from acplink.server import AcpServer, ServerLimits
from acplink.server.connection import Mailbox, pump

from .helpers import BOUND, serve, serving


class _CountLookups(importlib.abc.MetaPathFinder):
    """Counts the imports that reach the finders (a module not in sys.modules yet)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        self.names.append(fullname)
        return None  # (the real finders do the work)


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_round_trips_import_nothing_once_warm(scheme: str, tmp_path: Path) -> None:
    app = AcpServer(lambda: create_demo_agent(DemoStore(tmp_path), delay=0))
    async with serving(app) as url, asyncio.timeout(BOUND * 3):
        async with connect(url.replace("http", scheme, 1)) as client:
            session = await client.new_session(cwd=str(tmp_path))
            for _ in range(3):  # warm: whatever a turn imports lazily is imported now
                await session.prompt("hello")
            lookups = _CountLookups()
            sys.meta_path.insert(0, lookups)
            try:
                for _ in range(3):
                    reply = await session.prompt("hello")
            finally:
                sys.meta_path.remove(lookups)
            assert reply.stop_reason == "end_turn"
    # every request of these turns (POSTs, events, frames) went without an import lookup
    assert lookups.names == []


class _Owner:
    """The connection a mailbox reports its queued bytes to (flow control is not under test)."""

    kind = "ws"
    resumable = False  # (a stream that keeps what it sent for a resume: not under test)
    limits = ServerLimits()

    def __init__(self) -> None:
        self.buffered = 0

    def _queued(self, size: int) -> None:
        self.buffered += size

    def _taken(self, size: int) -> None:
        self.buffered -= size


@pytest.mark.parametrize("keepalive", [None, 15.0], ids=["websocket", "sse-with-keepalive"])
async def test_a_queued_message_is_sent_in_the_next_loop_turn(keepalive: float | None) -> None:
    owner = _Owner()
    box = Mailbox(owner, None)  # type: ignore[arg-type]
    sent: list[bytes] = []

    async def send(data: bytes) -> None:
        sent.append(data)

    task = asyncio.get_running_loop().create_task(pump(box, send, keepalive=keepalive))
    for _ in range(3):
        await asyncio.sleep(0)  # the pump is waiting for output
    for n in range(3):
        box.push(b"message %d" % n)
        await asyncio.sleep(0)  # one turn of the loop: the pump ran once
        assert sent == [b"message %d" % i for i in range(n + 1)]
    assert owner.buffered == 0
    box.finish()
    await asyncio.wait_for(task, BOUND)


def test_uvicorn_takes_the_c_http_parser() -> None:
    # `acplink serve` (and uvicorn running AcpServer with its defaults) parses HTTP/1.1 with
    # httptools when it is installed: a dependency, so the pure-Python h11 is not the default
    import uvicorn

    config = uvicorn.Config(AcpServer(["true"]), log_config=None)
    config.load()
    assert config.http_protocol_class.__name__ == "HttpToolsProtocol"


async def test_serve_does_not_compress_websocket_frames() -> None:
    # a client offering permessage-deflate (the `ws` package, browsers) gets plain frames, as
    # from the TS server: zlib on every small message costs both ends more than it saves
    from websockets.asyncio.client import connect as ws_connect

    async with serve("--ws") as served, asyncio.timeout(BOUND):
        async with ws_connect(served.urls["ws"], compression="deflate") as ws:
            assert ws.response is not None
            assert ws.response.headers.get("Sec-WebSocket-Extensions") is None
