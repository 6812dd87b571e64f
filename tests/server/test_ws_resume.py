"""Resumable WebSocket streams: every message carries its cursor (``_meta["acp/cursor"]``), a
new socket's ``stream/resume`` replays what was missed once and in order, then goes on live;
``stream/resume_failed`` for a cursor that cannot be resumed; and ``connect(ws_url,
reconnect=True)`` through a TCP proxy that cuts the connection mid-turn."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from acplink import StreamResumeFailed, connect
from acplink.server import AcpServer, ServerLimits
from acplink.transports.websocket import WebSocketTransport

from .cutting_proxy import UPDATES, CuttingProxy, assert_whole, count_turn, random_cuts
from .helpers import AGENT, BOUND, INIT, msg, prompt, serving
from .test_ws_wire import closed_with, recv, until, ws_url

RESUME_FAILED_CODE = -32010


@contextlib.asynccontextmanager
async def served(**limits: Any) -> AsyncIterator[str]:
    async with serving(AcpServer(AGENT, limits=ServerLimits(**limits))) as url:
        yield ws_url(url)


async def test_a_ws_turn_cut_several_times_arrives_whole_once_and_in_order() -> None:
    # the turn is about 1.2 MB of frames; 5 cuts in its first 800 KB, each losing up to 30 KB
    # more in flight (what the socket buffers held is lost too: the server keeps the whole turn)
    seed, cuts, lost = random_cuts(800_000)
    async with served(retention_messages=2 * UPDATES) as url, CuttingProxy(url, cuts, lost, away=1) as proxy:
        texts, transport = await asyncio.wait_for(count_turn(proxy.url, proxy), 60)
    assert proxy.done == 5, f"seed {seed}: only {proxy.done} cuts happened"
    assert_whole(texts, seed)
    assert isinstance(transport, WebSocketTransport)
    assert transport.resumes >= 1, f"seed {seed}: never resumed"
    assert transport.turn_state is not None and transport.turn_state["state"] in ("running", "idle")


async def test_a_ws_client_that_missed_more_than_the_retention_is_told_so() -> None:
    # 20 messages kept; the cut loses 60 KB in flight (hundreds of updates the server sent)
    async with served(retention_messages=20) as url, CuttingProxy(url, [50_000], [60_000]) as proxy:
        with pytest.raises(StreamResumeFailed) as caught:
            await asyncio.wait_for(count_turn(proxy.url, proxy), 60)
    assert proxy.done == 1
    text = str(caught.value)
    assert "stream/resume_failed" in text and "no longer kept" in text and "session/resume or session/load" in text


def _cursor(message: dict[str, Any]) -> str:
    holder = message.get("params") or message.get("result") or message
    cursor: str = holder["_meta"]["acp/cursor"]
    return cursor


def _resume(rid: Any, cid: str, cursor: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "stream/resume",
                       "params": {"connectionId": cid, "cursor": cursor}})


RESUMES = {"Acp-Stream-Resume": "1"}


async def _opened(url: str, headers: dict[str, str] | None = None) -> tuple[ClientConnection, str, str]:
    """A socket with an initialized connection and a session, of a client that resumes a
    dropped stream: (socket, connection id, session)."""
    ws = await ws_connect(url, additional_headers={**RESUMES, **(headers or {})})
    assert ws.response is not None
    cid = ws.response.headers["acp-connection-id"]
    await ws.send(json.dumps(INIT))
    [init] = await until(ws, 0)
    assert init["result"]["agentCapabilities"]["transport"]["resumable"] == {
        "retentionMessages": 1000, "retentionSeconds": 300.0}
    await ws.send(json.dumps(msg(1, "session/new", cwd="/", mcpServers=[])))
    sid = (await until(ws, 1))[-1]["result"]["sessionId"]
    return ws, cid, sid


async def test_stream_resume_replays_once_in_order_says_the_turn_state_then_goes_on_live() -> None:
    async with served() as url:
        ws, cid, sid = await _opened(url)
        await ws.send(json.dumps(prompt(2, sid, "permission")))
        seen = []
        while (seen and seen[-1].get("method")) != "session/request_permission":
            seen.append(await recv(ws))
        cursors = [_cursor(m) for m in seen]
        numbers = [int(c.rsplit(".", 1)[1]) for c in cursors]
        assert numbers == sorted(numbers) and len(set(cursors)) == len(cursors)
        # the socket drops (no close frame); a new one resumes from the update before the request
        ws.transport.abort()
        async with ws_connect(url, additional_headers=RESUMES) as again:
            await again.send(_resume("r1", cid, cursors[-2]))
            replay = await until(again, "r1")
            answer = replay.pop()
            assert replay == [seen[-1]]  # the permission request, with its cursor, once
            state = answer["result"]["_meta"]["acp/turnState"]
            assert state["state"] == "requires_action" and state["promptRequestId"] == 2
            assert state["sessions"] == {sid: {"state": "requires_action", "promptRequestId": 2}}
            assert answer["result"]["connectionId"] == cid and answer["result"]["replayed"] == 1
            # live again: answer the permission, the turn ends on this socket
            await again.send(json.dumps({"jsonrpc": "2.0", "id": seen[-1]["id"], "result": {
                "outcome": {"outcome": "selected", "optionId": "yes"}}}))
            rest = await until(again, 2)
            assert [m["params"]["update"]["content"]["text"] for m in rest[:-1]] == ["permission: yes", "done"]
            assert int(_cursor(rest[0]).rsplit(".", 1)[1]) == numbers[-1] + 1
            # a second resume from the same cursor converges on the same messages
            again.transport.abort()
        async with ws_connect(url) as third:
            await third.send(_resume(7, cid, cursors[-2]))
            replay = await until(third, 7)
            assert replay[:-1] == [seen[-1], *rest]
            assert replay[-1]["result"]["_meta"]["acp/turnState"] == {"state": "idle"}


async def test_forged_foreign_and_other_principals_cursors_are_refused_with_none_of_its_messages() -> None:
    async with served() as url:
        alice, cid, sid = await _opened(url, {"Authorization": "Bearer alice"})
        await alice.send(json.dumps(prompt(2, sid, "count 5")))
        got = await until(alice, 2)
        cursor = _cursor(got[2])
        token, number = cursor.rsplit(".", 1)
        bob, bob_cid, _ = await _opened(url)
        alice.transport.abort()
        cases = [
            (cid, "nonsense"), (cid, f"{token}.{int(number) + 50}"), (cid, f"x{token}.1"), (cid, f"{token}.-1"),
            (bob_cid, cursor),  # another connection's cursor
            ("no-such-connection", cursor),
        ]
        for i, (target, forged) in enumerate(cases):
            async with ws_connect(url, additional_headers={"Authorization": "Bearer alice"}) as ws:
                await ws.send(_resume(i, target, forged))
                [answer] = await until(ws, i)  # nothing before the refusal
                assert answer["error"]["code"] == RESUME_FAILED_CODE, (target, forged, answer)
                assert answer["error"]["message"].startswith("stream/resume_failed")
                assert answer["error"]["data"]["reason"]
        # the right cursor, from another principal (no credentials, or other ones): refused too
        for headers in ({}, {"Authorization": "Bearer mallory"}):
            async with ws_connect(url, additional_headers=headers) as ws:
                await ws.send(_resume("m", cid, cursor))
                [answer] = await until(ws, "m")
                assert answer["error"]["code"] == RESUME_FAILED_CODE and "count" not in json.dumps(answer)
        # alice herself gets it back; bob's socket heard nothing of alice's
        async with ws_connect(url, additional_headers={"Authorization": "Bearer alice"}) as ws:
            await ws.send(_resume("a", cid, cursor))
            replay = await until(ws, "a")
            assert replay[:-1] == got[3:]
        await bob.send(json.dumps(msg(9, "_echo")))
        assert [m.get("id") for m in await until(bob, 9)] == [9]
        await bob.close()


async def test_a_refused_resume_leaves_the_socket_free_to_initialize_and_a_late_resume_is_an_error() -> None:
    async with served() as url, ws_connect(url) as ws:
        await ws.send(_resume(1, "nope", "nope.1"))
        [refused] = await until(ws, 1)
        assert refused["error"]["code"] == RESUME_FAILED_CODE
        await ws.send(json.dumps(INIT))
        [init] = await until(ws, 0)
        assert "result" in init
        await ws.send(_resume(2, "nope", "nope.1"))
        [late] = await until(ws, 2)
        assert late["error"]["code"] == -32600 and "first message" in late["error"]["message"]


async def test_a_clean_close_ends_the_connection_no_resume_after_it() -> None:
    async with served() as url:
        ws, cid, _ = await _opened(url)
        await ws.send(json.dumps(msg(5, "_echo")))
        [echo] = await until(ws, 5)
        await ws.close()
        async with ws_connect(url) as again:
            await again.send(_resume(1, cid, _cursor(echo)))
            [answer] = await until(again, 1)
            assert answer["error"]["code"] == RESUME_FAILED_CODE


async def test_a_resume_takes_the_stream_from_a_socket_the_server_still_thinks_alive() -> None:
    async with served() as url:
        old, cid, sid = await _opened(url)
        await old.send(json.dumps(prompt(2, sid, "count 3")))
        got = await until(old, 2)
        async with ws_connect(url) as new:  # the old socket is still open: the new one replaces it
            await new.send(_resume("r", cid, _cursor(got[0])))
            replay = await until(new, "r")
            assert replay[:-1] == got[1:]
            assert (await closed_with(old)) == 1008 and old.close_reason == "replaced by a resumed WebSocket"
            await new.send(json.dumps(msg(3, "_echo")))
            assert [m.get("id") for m in await until(new, 3)] == [3]


async def test_a_client_that_does_not_resume_ends_its_connection_when_its_socket_drops() -> None:
    app = AcpServer(AGENT)
    async with serving(app) as http_url:
        url = ws_url(http_url)
        ws = await ws_connect(url)  # (no Acp-Stream-Resume: as the TS SDK's client)
        assert ws.response is not None
        cid = ws.response.headers["acp-connection-id"]
        await ws.send(json.dumps(INIT))
        [init] = await until(ws, 0)
        # (nothing kept for it: no cursors, no resumable stream advertised)
        assert "acp/cursor" not in init["result"]["_meta"] and "transport" not in init["result"]["agentCapabilities"]
        await ws.send(json.dumps(msg(1, "session/new", cwd="/", mcpServers=[])))
        [new] = await until(ws, 1)
        assert "acp/cursor" not in new["result"].get("_meta", {})
        ws.transport.abort()
        async with asyncio.timeout(BOUND):  # (a hang guard)
            while app.connection_count:
                await asyncio.sleep(0.02)
        async with ws_connect(url, additional_headers=RESUMES) as again:
            await again.send(_resume("r", cid, "cursor.1"))
            [answer] = await until(again, "r")
            assert answer["error"]["code"] == RESUME_FAILED_CODE


async def test_a_dropped_socket_of_a_client_that_resumes_leaves_its_connection_waiting() -> None:
    app = AcpServer(AGENT)
    async with serving(app) as http_url:
        url = ws_url(http_url)
        ws, cid, _ = await _opened(url)
        await ws.send(json.dumps(msg(5, "_echo")))
        [echo] = await until(ws, 5)
        conn = app.registry.connections[cid]
        ws.transport.abort()
        async with asyncio.timeout(BOUND):  # until the server has seen the drop (a hang guard)
            while conn.stream.has_reader:
                await asyncio.sleep(0.02)
        assert not conn.closed and app.connection_count == 1
        async with ws_connect(url, additional_headers=RESUMES) as again:
            await again.send(_resume("r", cid, _cursor(echo)))
            [answer] = await until(again, "r")
            assert answer["result"]["replayed"] == 0
            await again.send(json.dumps(msg(6, "_echo")))
            assert [m.get("id") for m in await until(again, 6)] == [6]


async def test_after_a_resume_each_sessions_last_v2_state_update_comes_again_without_a_cursor() -> None:
    async with served() as url:
        ws, cid, sid = await _opened(url)
        await ws.send(json.dumps(prompt(2, sid, "state")))
        got = await until(ws, 2)
        state = next(m for m in got if m.get("method") == "session/update"
                     and m["params"]["update"]["sessionUpdate"] == "state_update")
        ws.transport.abort()
        async with ws_connect(url, additional_headers=RESUMES) as again:
            await again.send(_resume("r", cid, _cursor(got[-1])))
            [answer] = await until(again, "r")
            assert answer["result"]["replayed"] == 0
            again_state = await recv(again)  # before anything live
            assert again_state["params"]["update"] == state["params"]["update"] == {
                "sessionUpdate": "state_update", "state": "running"}
            assert "_meta" not in again_state["params"]  # (not part of the stream: never replayed)


def test_the_cursor_goes_into_params_result_or_the_message_and_comes_back_out() -> None:
    from acplink.transports._cursor import cursor_of, with_cursor

    note = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{}}}'
    spliced = with_cursor(note, "tok.7")
    assert orjson.loads(spliced) == {"jsonrpc": "2.0", "method": "session/update", "params": {
        "_meta": {"acp/cursor": "tok.7"}, "sessionId": "s", "update": {}}}
    cases = {  # message -> where its _meta is
        b'{"jsonrpc":"2.0","method":"x","params":{"_meta":{"traceparent":"t"},"q":"acp/cursor"}}': ("params",),
        b'{"jsonrpc":"2.0","method":"x","params":{}}': ("params",),
        b'{"jsonrpc": "2.0", "method": "x", "params": {"a": 1}}': ("params",),
        b'{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}': ("result",),
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}': (),
        b'{"jsonrpc":"2.0","id":1,"result":null}': (),
    }
    for message, where in [(note, ("params",)), *cases.items()]:
        out = with_cursor(message, "tok.7")
        holder = orjson.loads(out)
        for member in where:
            holder = holder[member]
        assert holder["_meta"]["acp/cursor"] == "tok.7", message
        assert cursor_of(out) == "tok.7"
        before = orjson.loads(message)
        after = orjson.loads(out)
        assert {k: v for k, v in after.items() if k != "_meta"}.keys() == before.keys()
    assert with_cursor(b'{"jsonrpc":"2.0","method":"x","params":{"_meta":{"traceparent":"t"}}}', "c.1") == \
        b'{"jsonrpc":"2.0","method":"x","params":{"_meta":{"traceparent":"t","acp/cursor":"c.1"}}}'
    # a key "acp/cursor" elsewhere is not a cursor; neither is a cursor among other _meta keys read wrong
    assert cursor_of(b'{"jsonrpc":"2.0","method":"x","params":{"q":{"_meta":{"acp/cursor":"no"}}}}') is None
    assert cursor_of(b'{"jsonrpc":"2.0","method":"x","params":{"_meta":{"acp/cursor":"c.2","b":2}}}') == "c.2"
    assert with_cursor(b"not json", "c.1") == b"not json" and cursor_of(b'"acp/cursor"') is None


async def test_connect_reconnect_goes_on_after_its_socket_drops_between_turns() -> None:
    async with served() as url, connect(url, reconnect=True) as client:
        transport = client.transport
        assert isinstance(transport, WebSocketTransport) and transport.resumable
        session = await client.new_session(cwd=".")
        assert await session.prompt("count 3").text() == "thinking012done"
        sock = transport._ws
        assert sock is not None and sock.transport is not None
        sock.transport.abort()  # the network drops the socket
        async with asyncio.timeout(BOUND):  # (a hang guard) until the client noticed it
            while transport._ws is sock:
                await asyncio.sleep(0.01)
        # what is sent now waits for the resumed socket, and the connection goes on
        assert await session.prompt("count 2").text() == "thinking01done"
        assert transport.resumes == 1 and transport.turn_state == {"state": "idle"}
