"""The streamable HTTP wire over a real socket: a whole turn, routing, and every bad input."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest

from acplink.server import LOOPBACK_HOSTS, AcpServer, ServerLimits

from .helpers import AGENT, BOUND, SILENT_AGENT, Remote, msg, pid_alive, prompt, serving, texts, wait_gone


@pytest.fixture
async def remote() -> AsyncIterator[Remote]:
    async with serving(AcpServer(AGENT)) as url, httpx.AsyncClient(timeout=BOUND) as client:
        yield Remote(client, url)


async def test_a_turn_with_session_streams_and_delete(remote: Remote) -> None:
    r = await remote.initialize()
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert len(remote.cid) >= 32 and r.json()["result"]["protocolVersion"] == 1
    async with remote.stream() as conn_stream:
        posted = await remote.post(msg(1, "session/new", cwd="/", mcpServers=[]))
        assert posted.status_code == 202 and posted.content == b""
        [answer] = await conn_stream.until(1)
        sid = answer["result"]["sessionId"]
        async with remote.stream(sid) as session_stream:
            assert (await remote.post(prompt(2, sid, "hi"), session=sid)).status_code == 202
            turn = await session_stream.until(2)
        assert texts(turn) == ["thinking", "done"]
        assert turn[-1]["result"] == {"stopReason": "end_turn"}
        assert (await remote.client.delete(remote.url, headers=remote.headers())).status_code == 202
        assert await conn_stream.next() is None  # the connection stream ends
    assert await wait_gone(remote.pid)
    assert (await remote.post(msg(3, "session/new"))).status_code == 404
    assert (await remote.client.delete(remote.url, headers=remote.headers())).status_code == 404


async def test_messages_reach_the_agent_unchanged(remote: Remote) -> None:
    await remote.initialize()
    body = b'{"jsonrpc":"2.0","id":"str-id \\u00e9","method":"_echo","params":{"x":[1,2.50,1e3]},' \
           b'"_meta":{"trace":"t"},"extra":true}'
    async with remote.stream() as events:
        r = await remote.client.post(remote.url, content=b"  " + body + b"\n", headers={
            **remote.headers(), "content-type": "application/json; charset=utf-8"})
        assert r.status_code == 202
        [echo] = await events.until("str-id \u00e9")
    assert echo["result"]["raw"].encode() == body


async def test_a_permission_answer_without_session_header_is_routed(remote: Remote) -> None:
    """The official Python client answers without Acp-Session-Id: accepted, routed by the
    request it answers. A contradicting header is refused."""
    await remote.initialize()
    sid = "s-perm"
    async with remote.stream(sid) as events:
        assert (await remote.post(prompt(1, sid, "permission"), session=sid)).status_code == 202
        while (request := await events.next())["method"] != "session/request_permission":
            pass
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": {
            "outcome": {"outcome": "selected", "optionId": "yes"}}}
        assert (await remote.post(answer, session="another")).status_code == 400
        assert (await remote.post(answer)).status_code == 202
        turn = await events.until(1)
    assert texts(turn)[-2:] == ["permission: yes", "done"]


async def test_a_session_stream_opened_before_load_gets_its_replay(remote: Remote) -> None:
    await remote.initialize()
    async with remote.stream() as conn_stream, remote.stream("old-session") as session_stream:
        assert (await remote.post(msg(1, "session/load", sessionId="old-session", cwd="/", mcpServers=[]),
                                  session="old-session")).status_code == 202
        assert texts([await session_stream.next()]) == ["replayed"]
        [loaded] = await conn_stream.until(1)  # session/load answers go to the connection stream
    assert loaded["result"] == {}


async def test_keepalive_comments_on_a_quiet_stream() -> None:
    app = AcpServer(AGENT, limits=ServerLimits(keepalive=0.05))
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        remote = Remote(client, url)
        await remote.initialize()
        async with remote.stream() as events:
            while events.comments < 2:
                line = await anext(events.lines)
                # (the id-only event first: the stream's position, for a resume)
                assert line in (":", "") or line.startswith("id: ")
                events.comments += line == ":"


# -- bad input -----------------------------------------------------------------------------------


async def test_bad_posts(remote: Remote) -> None:
    post = remote.client.post
    url = remote.url
    r = await post(url, content=orjson.dumps(msg(1, "initialize")), headers={"content-type": "text/plain"})
    assert r.status_code == 415
    r = await post(url, content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400
    r = await post(url, content=b"[1, 2]", headers={"content-type": "application/json"})
    assert r.status_code == 501 and r.json()["error"]["code"] == -32600 and r.json()["id"] is None
    r = await post(url, content=b"42", headers={"content-type": "application/json"})
    assert r.status_code == 400
    r = await post(url, json=msg(1, "session/new"))
    assert r.status_code == 400 and "Missing Acp-Connection-Id" in r.text
    r = await post(url, json=msg(1, "session/new"), headers={"acp-connection-id": "nope"})
    assert r.status_code == 404
    await remote.initialize()
    r = await remote.post(msg(2, "initialize", protocolVersion=1))
    assert r.status_code == 400 and "existing connection" in r.text
    r = await remote.post(prompt(3, "s1", "hi"), session="s2")
    assert r.status_code == 400 and "does not match" in r.text
    r = await remote.post(msg("x" * 2000, "session/new"))
    assert r.status_code == 400 and "longer than 1024" in r.text
    r = await remote.post(prompt(4, "s" * 2000, "hi"))
    assert r.status_code == 400
    r = await remote.client.put(url, json=msg(1, "x"), headers=remote.headers())
    assert r.status_code == 405 and "POST" in r.headers["allow"]
    r = await remote.client.get(remote.url.replace("/acp", "/other"))
    assert r.status_code == 404
    assert pid_alive(remote.pid)  # none of it hurt the connection


async def test_a_17_mib_body_is_413(remote: Remote) -> None:
    big = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"p":"' + b"a" * (17 * 1024 * 1024) + b'"}}'
    r = await remote.client.post(remote.url, content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for i in range(0, len(big), 1 << 20):
            yield big[i:i + (1 << 20)]

    r = await remote.client.post(remote.url, content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413


async def test_bad_gets(remote: Remote) -> None:
    await remote.initialize()
    r = await remote.client.get(remote.url, headers=remote.headers())
    assert r.status_code == 406
    r = await remote.client.get(remote.url, headers={"accept": "text/event-stream"})
    assert r.status_code == 400
    r = await remote.client.get(remote.url, headers={"accept": "text/event-stream", "acp-connection-id": "x"})
    assert r.status_code == 404
    async with remote.stream(), remote.stream("s1"):
        for session in (None, "s1"):
            r = await remote.client.get(remote.url, headers={**remote.headers(session),
                                                             "accept": "text/event-stream"})
            assert r.status_code == 409
    # the reader went away: once the server has noticed, the stream can be opened again
    async with asyncio.timeout(BOUND):
        while True:
            async with remote.stream() as again:
                if again.response.status_code == 200:
                    break
            await asyncio.sleep(0.02)


async def test_token_origin_and_host() -> None:
    app = AcpServer(AGENT, token="s3cret", allow_origins=["https://ok.example"], allowed_hosts=LOOPBACK_HOSTS)
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        remote = Remote(client, url)
        r = await remote.initialize()
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        r = await remote.initialize(authorization="Bearer wrong")
        assert r.status_code == 401
        good = "Bearer s3cret"
        r = await remote.initialize(authorization=good, origin="https://evil.example")
        assert r.status_code == 403
        r = await remote.initialize(authorization=good, host="evil.example:80")
        assert r.status_code == 403
        assert app.connection_count == 0  # nothing was started for the refused ones
        r = await remote.initialize(authorization=good, origin="https://ok.example", host="localhost:1")
        assert r.status_code == 200
        r = await remote.post(msg(1, "session/new", cwd="/", mcpServers=[]))  # every request needs it
        assert r.status_code == 401
        assert (await remote.post(msg(1, "session/new", cwd="/", mcpServers=[]), authorization=good)).status_code == 202


async def test_one_connection_too_many_is_503() -> None:
    app = AcpServer(AGENT, limits=ServerLimits(max_connections=2))
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        first, second, third = Remote(client, url), Remote(client, url), Remote(client, url)
        assert (await first.initialize()).status_code == 200
        assert (await second.initialize()).status_code == 200
        r = await third.initialize()
        assert r.status_code == 503 and int(r.headers["retry-after"]) > 0
        await client.delete(url, headers=first.headers())
        assert (await third.initialize()).status_code == 200


# -- failures ------------------------------------------------------------------------------------


async def test_no_initialize_answer_is_504_and_the_agent_is_stopped() -> None:
    app = AcpServer(SILENT_AGENT, limits=ServerLimits(initialize_timeout=0.5))
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        r = await client.post(url, json=INIT_REQUEST)
        assert r.status_code == 504
        assert app.connection_count == 0


async def test_an_agent_that_cannot_start_is_502() -> None:
    app = AcpServer(["/nonexistent/agent"])
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        r = await client.post(url, json=INIT_REQUEST)
        assert r.status_code == 502 and "/nonexistent/agent" in r.json()["error"]["message"]


async def test_a_vanished_clients_agent_is_gone_after_the_idle_timeout() -> None:
    app = AcpServer(AGENT, limits=ServerLimits(idle_timeout=0.3))
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        remote = Remote(client, url)
        await remote.initialize()
        async with remote.stream():
            await asyncio.sleep(0.6)  # a reader keeps it open
            assert pid_alive(remote.pid)
        # the client vanishes: no DELETE, no more requests
        assert await wait_gone(remote.pid)
        assert (await remote.post(msg(1, "session/new"))).status_code == 404


async def test_an_agent_crash_mid_prompt_ends_the_streams() -> None:
    async with serving(AcpServer(AGENT)) as url, httpx.AsyncClient(timeout=BOUND) as client:
        remote = Remote(client, url)
        await remote.initialize()
        async with remote.stream() as conn_stream, remote.stream("s1") as session_stream:
            assert (await remote.post(prompt(1, "s1", "crash"), session="s1")).status_code == 202
            assert texts([await session_stream.next()]) == ["thinking"]
            async with asyncio.timeout(5):  # a hang guard (it ends at once)
                assert await session_stream.next() is None
                assert await conn_stream.next() is None
        assert (await remote.post(msg(2, "session/new"))).status_code == 404
        assert not pid_alive(remote.pid)


async def test_a_client_that_reads_nothing_is_dropped() -> None:
    app = AcpServer(AGENT, limits=ServerLimits(max_buffered_bytes=64 * 1024, output_stall=0.3))
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        remote = Remote(client, url)
        await remote.initialize()
        assert (await remote.post(prompt(1, "s1", "flood 500"), session="s1")).status_code == 202
        assert await wait_gone(remote.pid)  # nobody opened the stream: dropped, agent stopped
        assert (await remote.post(msg(2, "session/new"))).status_code == 404


async def test_a_slow_reader_is_not_dropped_and_loses_nothing() -> None:
    app = AcpServer(AGENT, limits=ServerLimits(max_buffered_bytes=16 * 1024, output_stall=5))
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        remote = Remote(client, url)
        await remote.initialize()
        async with remote.stream("s1") as events:
            assert (await remote.post(prompt(1, "s1", "flood 300"), session="s1")).status_code == 202
            turn = await events.until(1)
    assert len(texts(turn)) == 302


async def test_too_many_unread_session_streams_drop_the_connection() -> None:
    app = AcpServer(AGENT, limits=ServerLimits(max_session_streams=3))
    async with serving(app) as url, httpx.AsyncClient(timeout=BOUND) as client:
        remote = Remote(client, url)
        await remote.initialize()
        assert (await remote.post(prompt(1, "s1", "sessions 2"), session="s1")).status_code == 202
        await asyncio.sleep(0.3)
        assert pid_alive(remote.pid)  # s1, s1-0, s1-1: at the limit
        assert (await remote.post(prompt(2, "s2", "sessions 5"), session="s2")).status_code == 202
        assert await wait_gone(remote.pid)


INIT_REQUEST = msg(0, "initialize", protocolVersion=1, clientCapabilities={})
