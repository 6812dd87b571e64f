"""Resumable streams over streamable HTTP: per-stream cursors (the SSE ``id:``), bounded
retention, ``Last-Event-ID`` on a reconnect, 409 for a cursor that cannot be resumed; and the
client's ``connect(url, reconnect=True)`` through a TCP proxy that cuts the connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from acplink import StreamResumeFailed, connect
from acplink.server import AcpServer, ServerLimits

from .cutting_proxy import UPDATES, CuttingProxy, assert_whole, count_turn, random_cuts
from .helpers import AGENT, BOUND, Remote, msg, prompt, serving


@contextlib.asynccontextmanager
async def served(**limits: Any) -> AsyncIterator[str]:
    async with serving(AcpServer(AGENT, limits=ServerLimits(**limits))) as url:
        yield url


async def test_a_turn_cut_several_times_arrives_whole_once_and_in_order() -> None:
    # the turn's events are about 1 MB downstream; cut 5 times somewhere in its first 700 KB,
    # each cut losing up to 30 KB more in flight. What a cut loses also includes what the
    # socket buffers held (up to megabytes on loopback while the client parses): the server
    # keeps more than the whole turn here
    seed, cuts, lost = random_cuts(700_000)
    async with served(retention_messages=2 * UPDATES) as url, CuttingProxy(url, cuts, lost, away=1) as proxy:
        texts, _ = await asyncio.wait_for(count_turn(proxy.url, proxy), 60)
    assert proxy.done == 5, f"seed {seed}: only {proxy.done} cuts happened"
    assert_whole(texts, seed)


async def test_a_client_that_missed_more_than_the_retention_is_told_so() -> None:
    # 20 messages kept; the cut loses 60 KB in flight (hundreds of updates the server sent)
    async with served(retention_messages=20) as url, CuttingProxy(url, [50_000], [60_000]) as proxy:
        with pytest.raises(StreamResumeFailed) as caught:
            await asyncio.wait_for(count_turn(proxy.url, proxy), 60)
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


def test_retention_keeps_at_most_its_bytes() -> None:
    """Memory stays bounded by bytes too: a stream of large messages keeps only the newest
    that fit (a cursor before them is refused), never fewer than the message just sent."""
    from acplink.server import resume

    kept = resume.Retention(max_messages=1000, max_seconds=60, max_bytes=250)
    for i in range(1, 11):
        kept.keep(bytes([48 + i]) * 100)
    assert kept.kept_bytes == 200 and [n for n, _, _ in kept.kept] == [9, 10]
    assert kept.after(kept.check(kept.cursor(8))) == [(9, b"9" * 100), (10, b":" * 100)]
    with pytest.raises(resume.ResumeRefused, match=r"no longer kept.*250 bytes"):
        kept.after(kept.check(kept.cursor(7)))
    kept.keep(b"x" * 300)  # (larger than the bound: nothing of it can be resumed)
    assert kept.kept_bytes == 0 and not kept.kept


def test_reconnect_is_for_a_remote_url() -> None:
    from acplink import UsageError

    with pytest.raises(UsageError, match="reconnect= are for a remote agent's URL"):
        connect(["my-agent"], reconnect=True)


async def test_after_a_resume_the_stream_says_where_the_turn_stands_and_only_to_its_principal() -> None:
    async with served() as url, httpx.AsyncClient(timeout=BOUND) as http:
        a = Remote(http, url)
        await a.initialize(authorization="Bearer alice")
        async with a.stream() as events:
            await a.post(msg(1, "session/new", cwd="/", mcpServers=[]))
            sid = (await events.until(1))[-1]["result"]["sessionId"]
        head = {**a.headers(sid), "accept": "text/event-stream", "authorization": "Bearer alice"}
        async with http.stream("GET", url, headers=head) as resp:
            await a.post(prompt(2, sid, "permission"), session=sid)
            seen = await _events(resp, 2)  # "thinking", the permission request
        assert seen[-1][1]["method"] == "session/request_permission"
        # another principal's resume (other credentials, or none): 409, none of the messages
        for auth in ({"authorization": "Bearer mallory"}, {}):
            other = {k: v for k, v in head.items() if k != "authorization"} | auth
            r = await http.get(url, headers={**other, "last-event-id": seen[0][0]})
            assert r.status_code == 409 and "request_permission" not in r.text
        async with http.stream("GET", url, headers={**head, "last-event-id": seen[0][0]}) as resp:
            replay = await _events(resp, 2)
        assert replay[0] == seen[1]  # the request again, with its cursor
        resumed = replay[1]
        assert resumed[1]["method"] == "stream/resumed" and resumed[0] == seen[1][0]  # (no id of its own)
        assert resumed[1]["params"]["_meta"]["acp/turnState"] == {"state": "requires_action", "promptRequestId": 2}
