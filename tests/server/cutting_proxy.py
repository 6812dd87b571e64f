"""A loopback TCP proxy that cuts the connections it carries at chosen points (the resume tests)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from typing import Any
from urllib.parse import urlsplit

import pytest

from acplink import connect, schema
from acplink.transports.base import Transport

from .helpers import BOUND

__all__ = ["UPDATES", "CuttingProxy", "assert_whole", "count_turn", "random_cuts"]

#: the updates of the turn the proxy cuts
UPDATES = 5000


def random_cuts(span: int, count: int = 5) -> tuple[int, list[int], list[int]]:
    """(seed, cuts, lost): ``count`` cut points in the first ``span`` bytes, each losing up to
    30 KB more in flight."""
    seed = int.from_bytes(os.urandom(4), "big")
    rnd = random.Random(seed)
    cuts = rnd.sample(range(20_000, span), count)
    return seed, cuts, [rnd.randrange(0, 30_000) for _ in cuts]


async def count_turn(url: str, proxy: CuttingProxy) -> tuple[list[str], Transport]:
    """A ``count`` turn of ``UPDATES`` updates through ``connect(url, reconnect=True)``: the
    texts of its message chunks, and the client's transport."""
    texts: list[str] = []
    async with connect(url, reconnect=True) as client:
        session = await client.new_session(cwd=".")
        async for update in session.prompt(f"count {UPDATES}"):
            if isinstance(update, schema.AgentMessageChunk) and isinstance(update.content, schema.TextContent):
                texts.append(update.content.text)
                proxy.arm()
    return texts, client.transport


def assert_whole(texts: list[str], seed: int) -> None:
    """Every update of the turn, once, in order."""
    expected = ["thinking", *map(str, range(UPDATES)), "done"]
    if texts != expected:
        missing = sorted(set(expected) - set(texts), key=expected.index)[:10]
        twice = [t for t in set(texts) if texts.count(t) > 1][:10]
        pytest.fail(f"seed {seed}: {len(texts)} updates, missing {missing}, twice {twice}")


class CuttingProxy:
    """A loopback TCP proxy that cuts every connection it carries when the bytes it passed
    from the server reach each of ``cuts`` (counted once :meth:`arm` was called). A cut first
    swallows ``lost`` bytes from the server (written by the server, never delivered: the
    data a broken network loses in flight), then aborts both sides. ``away``: for this many
    new connections after a cut, the proxy closes them at once (a client that cannot get back)."""

    def __init__(self, upstream: str, cuts: list[int], lost: list[int], away: int = 0) -> None:
        parts = urlsplit(upstream)
        assert parts.port is not None
        self.host, self.port, self.path, self.scheme = "127.0.0.1", parts.port, parts.path, parts.scheme
        self.cuts = sorted(cuts)
        self.lost = list(lost)
        self.away = away
        self.refuse = 0
        self.armed = False
        self.passed = 0
        self.done = 0  # cuts made
        self.writers: set[asyncio.StreamWriter] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.server: asyncio.Server | None = None
        self.url = ""

    async def __aenter__(self) -> CuttingProxy:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"{self.scheme}://127.0.0.1:{port}{self.path}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        self._abort_all()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.server.wait_closed()

    def arm(self) -> None:
        self.armed = True

    def _abort_all(self) -> None:
        for w in list(self.writers):
            w.transport.abort()
        self.writers.clear()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refuse:
            self.refuse -= 1
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.transport.abort()
            return
        self.writers.update((writer, up_writer))
        self._spawn(self._pipe(reader, up_writer, downstream=False))
        self._spawn(self._pipe(up_reader, writer, downstream=True, upstream=up_writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, downstream: bool,
                    upstream: asyncio.StreamWriter | None = None) -> None:
        try:
            while data := await reader.read(4096):
                if downstream and self.armed and self.cuts and self.passed + len(data) >= self.cuts[0]:
                    keep = self.cuts.pop(0) - self.passed
                    if not writer.is_closing():
                        writer.write(data[:keep])
                    self.passed += keep
                    await self._cut(reader)
                    return
                if downstream and self.armed:
                    self.passed += len(data)
                if writer.is_closing():
                    return
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.transport.abort()
            if upstream is not None:
                upstream.transport.abort()

    async def _cut(self, reader: asyncio.StreamReader) -> None:
        swallow = self.lost.pop(0) if self.lost else 0
        with contextlib.suppress(ConnectionError, OSError, TimeoutError):
            async with asyncio.timeout(BOUND):
                while swallow > 0 and (data := await reader.read(min(swallow, 4096))):
                    swallow -= len(data)
        self.done += 1
        self.refuse = self.away
        self._abort_all()
