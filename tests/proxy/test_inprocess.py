"""A ProxyApp in the conductor's process is driven directly (no connection of its own): what the
client sees must be what it sees when the same proxy is served over its in-memory connection
(a ProxyApp subclass with a ``serve`` of its own is served so). The conductor runs here; the
agent is a real process (the probe agent, over pipes)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
from proxy_raw import PROBE

from acplink import ProxyApp, ProxyContext
from acplink.connection.peer import Peer
from acplink.errors import InternalError, RequestError
from acplink.proxy import Component, Conductor
from acplink.transports.base import Transport
from acplink.transports.memory import memory_pair


class ServedProxy(ProxyApp):
    """The same proxy, served over its in-memory connection (a serve of its own)."""

    async def serve(self, transport: Transport | None = None) -> None:
        await super().serve(transport)


def build(cls: type[ProxyApp]) -> ProxyApp:
    app = cls("hooks")

    @app.from_client("_probe/echo")
    async def echo(ctx: ProxyContext, params: Any) -> Any:
        if params.get("boom"):
            raise RuntimeError("a bug in the hook")
        if params.get("wait"):
            await asyncio.sleep(30)
        params["seen"] = "hooks"
        return await ctx.forward(params)

    @app.from_agent("_probe/noted")
    async def noted(ctx: ProxyContext, params: Any) -> None:
        if params.get("boom"):
            raise RuntimeError("a bug in the notification hook")
        await ctx.forward(params)

    return app


class Client:
    def __init__(self) -> None:
        self.notes: list[tuple[str, Any]] = []

    async def handle_request(self, method: str, params: Any) -> bytes:
        return orjson.dumps({"answer": "yes"})

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        self.notes.append((method, params))


@asynccontextmanager
async def chain(cls: type[ProxyApp], trace: io.BytesIO | None = None, client: Client | None = None,
                **kw: Any) -> AsyncIterator[tuple[Peer, Client, Conductor]]:
    app = build(cls)
    conductor = Conductor([Component(serve=app.serve, name="hooks"), Component(serve=ProxyApp("plain").serve),
                           PROBE], trace=trace, **kw)
    ours, theirs = memory_pair()
    served = asyncio.ensure_future(conductor.serve(theirs))
    client = client or Client()
    peer = Peer(ours, client, name="test-client")
    await peer.start()
    try:
        yield peer, client, conductor
    finally:
        await peer.aclose()
        await asyncio.wait_for(served, 10)


async def call(peer: Peer, method: str, params: Any, timeout: float = 30) -> Any:
    try:
        return await peer.request(method, orjson.dumps(params), timeout=timeout)
    except RequestError as exc:
        return exc.to_wire()


async def transcript(cls: type[ProxyApp]) -> tuple[list[Any], list[Any], Any]:
    trace = io.BytesIO()
    trace.close = lambda: None  # type: ignore[method-assign]  # (read after the chain stops)
    out: list[Any] = []
    async with chain(cls, trace) as (peer, client, conductor):
        out.append(await call(peer, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        assert [n.direct is not None for n in conductor.nodes] == [cls is ProxyApp, True, False]
        out.append(await call(peer, "_probe/echo", {"x": 1, "_meta": {"keep": True}}))
        out.append(await call(peer, "_probe/echo", {"boom": True}))
        out.append(await call(peer, "_probe/ask", {}))
        out.append(await call(peer, "_probe/open", {"before": 50}))
        out.append(await call(peer, "_nobody/knows", {}))
        # a notification hook that raises: logged, that notification dropped, the chain goes on
        await peer.notify("_probe/note", orjson.dumps({"boom": True}))
        await peer.notify("_probe/note", orjson.dumps({"n": 2}))
        out.append(await call(peer, "_probe/burst", {"n": 100}))
        # cancelled on the client's hop: the agent is asked to cancel exactly the request it got
        pending = asyncio.ensure_future(peer.request("_probe/hang", b"{}", timeout=30))
        await asyncio.sleep(0.3)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        # (the agent's -32800 and the next request's notifications are not ordered with each
        # other: wait until the answer to the cancelled request is back on the client's hop)
        for _ in range(200):
            if any(e["type"] == "response" and e["to"] == "client" and e.get("is_error")
                   and e["payload"].get("code") == -32800
                   for e in map(orjson.loads, trace.getvalue().splitlines())):
                break
            await asyncio.sleep(0.05)
        out.append(await call(peer, "_probe/burst", {"n": 1}))
        await asyncio.sleep(0.1)
    # the trace: each hop's messages in the same order (the hops interleave as they may; the
    # ids are the trace's own, counted across the hops)
    hops: dict[str, list[Any]] = {}
    for line in trace.getvalue().splitlines():
        event = orjson.loads(line)
        event.pop("ts"), event.pop("id", None)
        hops.setdefault(f"{event['from']} -> {event['to']}", []).append(event)
    return out, client.notes, hops


async def test_the_in_process_proxy_answers_as_over_its_connection() -> None:
    direct = await transcript(ProxyApp)
    served = await transcript(ServedProxy)
    assert direct == served
    out, notes, _ = direct
    assert out[1] == {"method": "_probe/echo", "params": {"x": 1, "_meta": {"keep": True}, "seen": "hooks"}}
    assert out[2]["code"] == InternalError.code and "Internal error" in out[2]["message"]
    assert out[3] == {"answer": {"answer": "yes"}}
    assert out[5]["code"] == -32601
    ticks = [p["i"] for m, p in notes if m == "_probe/tick"]
    assert ticks == list(range(50)) + list(range(100)) + [0]  # (in order, the answers after theirs)
    assert ("_probe/noted", {"n": 2}) in notes and ("_probe/noted", {"boom": True}) not in notes
    cancelled = [p for m, p in notes if m == "_probe/cancelled"]
    assert len(cancelled) == 1


async def test_a_hook_that_does_not_answer_in_time_fails_naming_the_proxy() -> None:
    async with chain(ProxyApp, request_timeout=0.5) as (peer, _client, conductor):
        await call(peer, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert conductor.nodes[0].direct is not None
        error = await call(peer, "_probe/echo", {"wait": True})
        assert error["code"] == -32603 and "did not answer _probe/echo within 0.5 s" in error["message"]
        assert error["data"]["conductor"] == {"component": "hooks", "role": "proxy:0"}
        # cancelled by the client meanwhile: -32800 from the proxy's hop, the chain still works
        pending = asyncio.ensure_future(peer.request("_probe/echo", orjson.dumps({"wait": True}), timeout=30))
        await asyncio.sleep(0.1)
        pending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pending
        assert (await call(peer, "_probe/echo", {"y": 2}))["params"] == {"y": 2, "seen": "hooks"}


class SlowClient(Client):
    """Answers the agent's question only once told to (so the relay can be seen in flight)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()

    async def handle_request(self, method: str, params: Any) -> bytes:
        self.asked.set()
        await self.answer.wait()
        return await super().handle_request(method, params)


async def test_requests_no_hook_takes_are_relayed_through_the_in_process_proxies() -> None:
    client = SlowClient()
    async with chain(ProxyApp, client=client) as (peer, _client, conductor):
        assert await call(peer, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        upstream, agent_hop = conductor.upstream, conductor.nodes[2].peer
        assert upstream is not None and agent_hop is not None
        # client -> agent, through both proxies (no hook for it): one relay, no task
        hang = asyncio.ensure_future(peer.request("_probe/hang", b"{}", timeout=30))
        for _ in range(200):
            if upstream.relays:
                break
            await asyncio.sleep(0.01)
        assert len(upstream.relays) == 1 and not upstream.tasks.keyed
        # agent -> client (its question), the same way up
        ask = asyncio.ensure_future(call(peer, "_probe/ask", {}))
        await asyncio.wait_for(client.asked.wait(), 10)
        assert len(agent_hop.relays) == 1 and not agent_hop.tasks.keyed
        client.answer.set()
        assert await asyncio.wait_for(ask, 10) == {"answer": {"answer": "yes"}}
        hang.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hang
        # a method the first proxy hooks runs in a task, as before
        assert (await call(peer, "_probe/echo", {"x": 1}))["params"]["seen"] == "hooks"


async def test_a_proxy_on_its_own_connection_routes_what_it_passes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    from acplink.proxy import app as app_module

    routed: list[tuple[str, str | None]] = []
    route_request = app_module._ProxyConnection.route_request

    def recording(self: Any, method: str, params: Any) -> Any:
        route = route_request(self, method, params)
        routed.append((method, None if route is None else route.method))
        return route

    monkeypatch.setattr(app_module._ProxyConnection, "route_request", recording)
    async with chain(ServedProxy) as (peer, _client, _conductor):
        assert await call(peer, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert await call(peer, "_probe/ask", {}) == {"answer": {"answer": "yes"}}
        assert (await call(peer, "_probe/echo", {"x": 1}))["params"]["seen"] == "hooks"
    # from the predecessor, wrapped for the successor; the agent's question, unwrapped for the
    # predecessor; the hooked method and initialize: not routed (their hook / the handshake)
    assert ("_probe/ask", "proxy/successor") in routed
    assert ("proxy/successor", "_probe/question") in routed
    assert ("_probe/echo", None) in routed and ("proxy/initialize", None) in routed
