"""Resumable streams over streamable HTTP: per-stream cursors (the SSE ``id:``), bounded
retention, ``Last-Event-ID`` on a reconnect, 409 for a cursor that cannot be resumed; and the
client's ``connect(url, reconnect=True)`` through a TCP proxy that cuts the connection."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import pytest

from acplink import StreamResumeFailed, connect, schema
from acplink.server import AcpServer, ServerLimits

from .helpers import AGENT, BOUND, Remote, msg, prompt, serving

UPDATES = 5000


class CuttingProxy:
    """A loopback TCP proxy that cuts every connection it carries when the bytes it passed
    from the server reach each of ``cuts`` (counted once :meth:`arm` was called). A cut first
    swallows ``lost`` bytes from the server (written by the server, never delivered: the
    data a broken network loses in flight), then aborts both sides. ``away``: for this many
    new connections after a cut, the proxy closes them at once (a client that cannot get back)."""

    def __init__(self, upstream: str, cuts: list[int], lost: list[int], away: int = 0) -> None:
        parts = urlsplit(upstream)
        assert parts.port is not None
        self.host, self.port, self.path = "127.0.0.1", parts.port, parts.path
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
        self.url = f"http://127.0.0.1:{port}{self.path}"
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


@contextlib.asynccontextmanager
async def served(**limits: Any) -> AsyncIterator[str]:
    async with serving(AcpServer(AGENT, limits=ServerLimits(**limits))) as url:
        yield url


async def _count_turn(url: str, proxy: CuttingProxy) -> list[str]:
    texts: list[str] = []
    async with connect(url, reconnect=True) as client:
        session = await client.new_session(cwd=".")
        async for update in session.prompt(f"count {UPDATES}"):
            if isinstance(update, schema.AgentMessageChunk) and isinstance(update.content, schema.TextContent):
                texts.append(update.content.text)
                proxy.arm()
    return texts


async def test_a_turn_cut_several_times_arrives_whole_once_and_in_order() -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rnd = random.Random(seed)
    # the turn's events are about 1 MB downstream; cut 5 times somewhere in its first 700 KB,
    # each cut losing up to 30 KB more in flight. What a cut loses also includes what the
    # socket buffers held (up to megabytes on loopback while the client parses): the server
    # keeps more than the whole turn here
    cuts = rnd.sample(range(20_000, 700_000), 5)
    lost = [rnd.randrange(0, 30_000) for _ in cuts]
    async with served(retention_messages=2 * UPDATES) as url, CuttingProxy(url, cuts, lost, away=1) as proxy:
        texts = await asyncio.wait_for(_count_turn(proxy.url, proxy), 60)
    assert proxy.done == 5, f"seed {seed}: only {proxy.done} cuts happened"
    expected = ["thinking", *map(str, range(UPDATES)), "done"]
    if texts != expected:
        missing = sorted(set(expected) - set(texts), key=expected.index)[:10]
        twice = [t for t in set(texts) if texts.count(t) > 1][:10]
        pytest.fail(f"seed {seed}: {len(texts)} updates, missing {missing}, twice {twice}")


async def test_a_client_that_missed_more_than_the_retention_is_told_so() -> None:
    # 20 messages kept; the cut loses 60 KB in flight (hundreds of updates the server sent)
    async with served(retention_messages=20) as url, CuttingProxy(url, [50_000], [60_000]) as proxy:
        with pytest.raises(StreamResumeFailed) as caught:
            await asyncio.wait_for(_count_turn(proxy.url, proxy), 60)
    assert proxy.done == 1
    text = str(caught.value)
    assert "409" in text and "no longer kept" in text and "session/resume or session/load" in text


async def _events(resp: httpx.Response, count: int) -> list[tuple[str, Any]]:
    """The next ``count`` events with data, as (id, message)."""
    out: list[tuple[str, Any]] = []
    ident = ""
    async with asyncio.timeout(BOUND):
        async for line in resp.aiter_lines():
            if line.startswith("id: "):
                ident = line[4:]
            elif line.startswith("data: "):
                out.append((ident, orjson.loads(line[6:])))
                if len(out) == count:
                    break
    return out


async def test_last_event_id_replays_what_followed_and_refuses_forged_foreign_and_future_cursors() -> None:
    async with served() as url, httpx.AsyncClient(timeout=BOUND) as http:
        a, b = Remote(http, url), Remote(http, url)
        init = await a.initialize()
        resumable = init.json()["result"]["agentCapabilities"]["transport"]["resumable"]
        assert resumable == {"retentionMessages": 1000, "retentionSeconds": 300.0}
        await b.initialize()
        sids = {}
        for remote in (a, b):
            async with remote.stream() as events:
                await remote.post(msg(1, "session/new", cwd="/", mcpServers=[]))
                sids[remote.cid] = (await events.until(1))[-1]["result"]["sessionId"]
        sid = sids[a.cid]
        head = {**a.headers(sid), "accept": "text/event-stream"}
        async with http.stream("GET", url, headers=head) as resp:
            await a.post(prompt(2, sid, "count 20"), session=sid)
            first = await _events(resp, 6)  # "thinking", "0" .. "4"
        ids = [i for i, _ in first]
        assert len(set(ids)) == 6 and all(i.rsplit(".", 1)[1].isdigit() for i in ids)
        # resume after the third: the rest of the turn, each once, in order, with its cursor
        async with http.stream("GET", url, headers={**head, "last-event-id": ids[2]}) as resp:
            assert resp.status_code == 200
            rest = await _events(resp, 20)  # "2" .. "19", "done", the answer
        texts = [m["params"]["update"]["content"]["text"] for _, m in rest if "params" in m]
        assert texts == [*map(str, range(2, 20)), "done"]
        assert rest[-1][1] == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}
        assert [i for i, _ in rest[:3]] == ids[3:]
        # the same resume again converges on the same messages (replay is idempotent)
        async with http.stream("GET", url, headers={**head, "last-event-id": ids[2]}) as resp:
            assert [m for _, m in await _events(resp, 20)] == [m for _, m in rest]
        # made-up, ahead, and another connection's cursors: 409, none of its messages
        token, last = rest[-1][0].rsplit(".", 1)
        async with b.stream(sids[b.cid]):  # (b's session stream has a cursor of its own)
            pass
        for cursor in ("nonsense", f"{token}.{int(last) + 5}", f"x{token}.1", "", f"{token}.-1"):
            r = await http.get(url, headers={**head, "last-event-id": cursor})
            assert r.status_code == 409 and "cannot resume" in r.text, (cursor, r.text)
        r = await http.get(url, headers={**b.headers(sids[b.cid]), "accept": "text/event-stream",
                                         "last-event-id": ids[2]})
        assert r.status_code == 409 and "count" not in r.text and "sessionUpdate" not in r.text


def test_retention_keeps_the_last_messages_for_their_time(monkeypatch: pytest.MonkeyPatch) -> None:
    from acplink.server import resume

    now = [1000.0]
    monkeypatch.setattr(resume.time, "monotonic", lambda: now[0])
    kept = resume.Retention(max_messages=3, max_seconds=10)
    for i in range(1, 6):
        kept.keep(f"m{i}".encode())
    assert kept.after(kept.check(kept.cursor(2))) == [(3, b"m3"), (4, b"m4"), (5, b"m5")]
    assert kept.after(kept.check(kept.cursor(5))) == []
    with pytest.raises(resume.ResumeRefused, match="no longer kept"):
        kept.after(kept.check(kept.cursor(1)))  # m2 is gone (3 messages kept)
    with pytest.raises(resume.ResumeRefused, match="ahead"):
        kept.after(kept.check(kept.cursor(6)))
    other = resume.Retention(max_messages=3, max_seconds=10)
    with pytest.raises(resume.ResumeRefused, match="not one of this stream's"):
        kept.check(other.cursor(2))
    now[0] += 5
    kept.keep(b"m6")
    now[0] += 6  # m3..m5 are 11 s old, m6 is 6 s old
    assert kept.after(kept.check(kept.cursor(5))) == [(6, b"m6")]
    with pytest.raises(resume.ResumeRefused, match="no longer kept"):
        kept.after(kept.check(kept.cursor(4)))


def test_reconnect_is_refused_where_nothing_resumes() -> None:
    from acplink import UsageError

    with pytest.raises(UsageError, match=r"WebSocket .* has no stream resume yet"):
        connect("ws://127.0.0.1:9/acp", reconnect=True)
    with pytest.raises(UsageError, match="reconnect= are for a remote agent's URL"):
        connect(["my-agent"], reconnect=True)
