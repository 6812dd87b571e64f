"""Proxy chains over real pipes: a client → ``acplink conduct`` (a subprocess) → proxies → agent."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from proxy_raw import DEMO, HERE, PROBE, PY, RawClient, bad_proxy, conduct, processes_with

from acplink import PermissionPolicy, connect, schema
from acplink.errors import InternalError, InvalidRequest, MethodNotFound, RequestCancelled

EXAMPLE = f"{PY} {HERE.parent.parent / 'examples' / 'proxy_context.py'}"

CHAINS = {
    "direct": (),
    "one passthrough": ("acplink:passthrough",),
    "two passthrough": ("acplink:passthrough", "acplink:passthrough"),
    "context + example": ("acplink:context=FIRST.", EXAMPLE),
}


@pytest.mark.parametrize("name", list(CHAINS))
async def test_streamed_prompt_through_the_chain(name: str, tmp_path: Path) -> None:
    proxies = CHAINS[name]
    async with connect(conduct(*proxies, agent=DEMO), env={"ACPLINK_DEMO_STORE": str(tmp_path)}) as client:
        assert client.agent_info is not None and client.agent_info.name == "acplink-demo"
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("hello there")
        updates = [u async for u in turn]
        assert turn.stop_reason == "end_turn"
        text = "".join(u.content.text for u in updates if isinstance(u, schema.AgentMessageChunk))
        if name == "context + example":  # each proxy put its line first, the first proxy first
            assert text == "You said: Context from examples/proxy_context.py.FIRST.hello there"
        else:
            assert text == "You said: hello there"


async def test_permission_request_comes_back_through_the_proxies(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    asked: list[schema.RequestPermissionRequest] = []

    async def ask(request: schema.RequestPermissionRequest) -> str:
        asked.append(request)
        return "allow"

    async with connect(conduct("acplink:passthrough", "acplink:passthrough", agent=DEMO),
                       env={"ACPLINK_DEMO_STORE": str(tmp_path)},
                       permission=PermissionPolicy(default="ask", ask=ask)) as client:
        session = await client.new_session(cwd=tmp_path)
        await session.prompt("write a.txt through two proxies")
    assert len(asked) == 1 and [o.kind for o in asked[0].options] == ["allow_once", "allow_always", "reject_once"]
    assert (tmp_path / "a.txt").read_text() == "through two proxies\n"


async def test_session_cancel_goes_hop_by_hop(tmp_path: Path) -> None:
    async with connect(conduct("acplink:passthrough", EXAMPLE, agent=DEMO),
                       env={"ACPLINK_DEMO_STORE": str(tmp_path)}) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("slow 200")
        chunks: list[schema.AgentMessageChunk] = []
        async for update in turn:
            chunks += [update] if isinstance(update, schema.AgentMessageChunk) else []
            if len(chunks) == 3:  # session/cancel goes through both proxies to the agent
                await turn.cancel()
    assert turn.stop_reason == "cancelled" and 3 <= len(chunks) < 200


async def test_closing_stdin_stops_every_component(tmp_path: Path) -> None:
    marker = f"ACPLINK_PROXY_TEST_{os.getpid()}_{id(tmp_path)}"
    inner = f"{PY} -m acplink conduct --as-proxy --proxy acplink:passthrough --proxy '{EXAMPLE}'"
    async with RawClient(conduct(EXAMPLE, inner, bad_proxy("none"), agent=PROBE), env={marker: "1"}) as c:
        await c.initialize()
        assert len(processes_with(marker)) == 6  # conductor, example, inner conductor, its example, bad, agent
        pending = asyncio.ensure_future(c.call("_probe/hang", {}))
        await asyncio.sleep(0.1)
    # (the client closed the conductor's stdin and waited for it to exit)
    assert c.transport.returncode == 0
    for _ in range(100):
        if not processes_with(marker):
            break
        await asyncio.sleep(0.05)
    assert processes_with(marker) == []
    assert pending.done()


async def test_extension_method_meta_and_unknown_method(tmp_path: Path) -> None:
    async with RawClient(conduct("acplink:passthrough", bad_proxy("none"), agent=PROBE)) as c:
        await c.initialize()
        params = {"x": [1, 2], "_meta": {"trace": "abc"}}
        assert await c.call("_probe/echo", params) == {"method": "_probe/echo", "params": params}
        with pytest.raises(MethodNotFound) as info:  # the agent's -32601 comes back unchanged
            await c.call("_nobody/knows", {})
        assert info.value.message == "Method not found: _nobody/knows"
        assert not (info.value.data or {}).get("conductor")


async def test_cancel_request_is_per_hop_and_cancels_exactly_what_it_caused() -> None:
    async with RawClient(conduct("acplink:passthrough", "acplink:passthrough", agent=PROBE)) as c:
        await c.initialize()
        keep = asyncio.ensure_future(c.call("_probe/hang", {"n": 1}))
        cancel = asyncio.ensure_future(c.call("_probe/hang", {"n": 2}))
        await c.call("_probe/echo", {})  # (both reached the agent by now: the hops keep order)
        cancel.cancel()  # sends $/cancel_request for our id
        for _ in range(200):
            if any(m == "_probe/cancelled" for m, _ in c.notes):
                break
            await asyncio.sleep(0.05)
        cancelled = [p for m, p in c.notes if m == "_probe/cancelled"]
        assert len(cancelled) == 1  # the agent saw one $/cancel_request, for the request we cancelled
        assert not keep.done()
        keep.cancel()


async def test_notification_order_holds_end_to_end() -> None:
    async with RawClient(conduct("acplink:passthrough", "acplink:context", agent=PROBE)) as c:
        await c.initialize()
        assert await c.call("_probe/burst", {"n": 500}) == {"sent": 500}
        ticks = [p["i"] for m, p in c.notes if m == "_probe/tick"]
        assert ticks == list(range(500))  # all of them, in order, before the answer


async def test_a_notification_right_behind_an_answer_does_not_overtake_it() -> None:
    async with RawClient(conduct("acplink:passthrough", EXAMPLE, agent=PROBE)) as c:
        await c.initialize()
        seen: list[str] = []
        c.notes = _Log(seen)  # type: ignore[assignment]
        for _ in range(20):
            await c.peer.request("_probe/open", b'{"before": 50}', on_result=lambda r: seen.append("answer " + r["sessionId"]) or r)
        for _ in range(100):
            if len(seen) == 40:
                break
            await asyncio.sleep(0.05)
    # in arrival order: each answer, then the update about the session it opened
    assert len(seen) == 40
    assert [a.replace("answer", "update") for a in seen[0::2]] == seen[1::2]


class _Log(list):  # type: ignore[type-arg]
    def __init__(self, seen: list[str]) -> None:
        super().__init__()
        self.seen = seen

    def append(self, item: object) -> None:
        method, params = item  # type: ignore[misc]
        if method == "_probe/opened":
            self.seen.append("update " + params["sessionId"])


async def test_agent_request_travels_up_to_the_client() -> None:
    async with RawClient(conduct("acplink:passthrough", agent=PROBE), answers={"_probe/question": "yes"}) as c:
        await c.initialize()
        assert await c.call("_probe/ask", {}) == {"answer": "yes"}
        assert c.asked == [("_probe/question", {"q": "ok?"})]


@pytest.mark.parametrize("mode, words", [
    ("version", "changed protocolVersion from 1 to 2"),
    ("skip-init", "without initializing its successor"),
])
async def test_a_proxy_breaking_initialize_fails_the_client_initialize_naming_it(mode: str, words: str) -> None:
    async with RawClient(conduct(bad_proxy(mode), agent=PROBE)) as c:
        with pytest.raises(InternalError) as info:
            await c.initialize()
    assert words in info.value.message
    assert f"bad_proxy.py {mode}" in info.value.message
    assert info.value.data["conductor"]["role"] == "proxy:0"


async def test_a_proxy_forwarding_proxy_initialize_is_refused() -> None:
    async with RawClient(conduct(bad_proxy("proxy-init"), agent=PROBE)) as c:
        with pytest.raises(InvalidRequest) as info:
            await c.initialize()
    assert "forwards initialize to its successor, not proxy/initialize" in info.value.message


async def test_requests_before_initialize_are_refused() -> None:
    async with RawClient(conduct("acplink:passthrough", agent=PROBE)) as c:
        with pytest.raises(InvalidRequest, match="send initialize first"):
            await c.call("session/new", {"cwd": "/", "mcpServers": []})


@pytest.mark.parametrize("who, proxies, request_", [
    ("agent", ("acplink:passthrough",), "_probe/exit"),
    ("proxy:0", (bad_proxy("die"),), "_probe/echo"),
])
async def test_a_dying_component_fails_the_pending_calls_naming_it_and_the_chain_stops(
        who: str, proxies: tuple[str, ...], request_: str) -> None:
    async with RawClient(conduct(*proxies, agent=PROBE)) as c:
        await c.initialize()
        pending = asyncio.ensure_future(c.call("_probe/hang", {}))
        await asyncio.sleep(0.2)
        with pytest.raises(InternalError) as info:
            await c.call(request_, {}, timeout=5)
        assert info.value.data["conductor"]["role"] == who
        assert "exited" in info.value.message or "closed its connection" in info.value.message
        with pytest.raises((InternalError, Exception)):
            await asyncio.wait_for(pending, 5)
        code = await asyncio.wait_for(c.transport.wait(), 10)  # the chain shut down
    assert code == 1
    assert any(who in line for line in c.transport.stderr_tail)


async def test_a_silent_proxy_times_out_naming_it() -> None:
    async with RawClient(conduct(bad_proxy("silent"), agent=PROBE, extra=("--timeout", "0.5"))) as c:
        await c.initialize()
        with pytest.raises(InternalError) as info:
            await c.call("_probe/hang", {}, timeout=10)
    assert "did not answer _probe/hang within 0.5 s" in info.value.message
    assert "bad_proxy.py silent" in info.value.message


async def test_a_component_that_cannot_start_is_one_line_naming_it() -> None:
    async with RawClient(conduct("no-such-proxy-binary --x", agent=PROBE)) as c:
        with pytest.raises(InternalError) as info:
            await c.initialize()
        assert "'no-such-proxy-binary --x'" in info.value.message
        code = await asyncio.wait_for(c.transport.wait(), 10)
    assert code == 1
    errors = [line for line in c.transport.stderr_tail if "error" in line]
    assert errors == ["acplink: error: cannot start proxy:0 'no-such-proxy-binary --x': No such file or directory"]


async def test_nested_conductor_as_proxy(tmp_path: Path) -> None:
    inner = " ".join([PY, "-m", "acplink", "conduct", "--as-proxy", "--proxy", "acplink:context=INNER.",
                      "--proxy", "acplink:passthrough"])
    async with connect(conduct("acplink:context=OUTER.", inner, agent=DEMO),
                       env={"ACPLINK_DEMO_STORE": str(tmp_path)}) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("hi")
        updates = [u async for u in turn]
    text = "".join(u.content.text for u in updates if isinstance(u, schema.AgentMessageChunk))
    assert text == "You said: INNER.OUTER.hi"  # (each puts its line first)


async def test_trace_has_one_line_per_hop_message(tmp_path: Path) -> None:
    trace = tmp_path / "chain.jsons"
    async with RawClient(conduct("acplink:passthrough", agent=PROBE, extra=("--trace", str(trace)))) as c:
        await c.initialize()
        await c.call("_probe/echo", {"sessionId": "s9"})
        await c.notify("_probe/note", {"sessionId": "s9"})
        for _ in range(100):
            if c.notes:
                break
            await asyncio.sleep(0.05)
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    hops = [(e["type"], e["from"], e["to"], e.get("method")) for e in events]
    assert hops == [
        ("request", "client", "proxy:0", "proxy/initialize"),
        ("request", "proxy:0", "agent", "initialize"),
        ("response", "agent", "proxy:0", None),
        ("response", "proxy:0", "client", None),
        ("request", "client", "proxy:0", "_probe/echo"),
        ("request", "proxy:0", "agent", "_probe/echo"),
        ("response", "agent", "proxy:0", None),
        ("response", "proxy:0", "client", None),
        ("notification", "client", "proxy:0", "_probe/note"),
        ("notification", "proxy:0", "agent", "_probe/note"),
        ("notification", "agent", "proxy:0", "_probe/noted"),
        ("notification", "proxy:0", "client", "_probe/noted"),
    ]
    echo = events[4]
    assert echo["session"] == "s9" and echo["params"] == {"sessionId": "s9"} and echo["protocol"] == "acp"
    assert events[6]["is_error"] is False and events[6]["payload"]["method"] == "_probe/echo"
    assert events[4]["id"] == events[7]["id"] and events[5]["id"] == events[6]["id"]
    assert all(isinstance(e["ts"], float) for e in events)




async def test_a_v2_client_through_the_chain(tmp_path: Path) -> None:
    async with connect(conduct("acplink:passthrough", EXAMPLE, agent=DEMO), protocol=2,
                       env={"ACPLINK_DEMO_STORE": str(tmp_path)}) as client:
        assert client.protocol_version == 2
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("hello v2")
        text = await turn.text()
    assert turn.stop_reason == "end_turn"
    assert text == "You said: Context from examples/proxy_context.py.hello v2"


async def test_a_proxy_started_without_a_conductor_says_so() -> None:
    async with RawClient(bad_proxy("none").split()) as c:
        with pytest.raises(InvalidRequest) as info:
            await c.initialize()
    assert "is an ACP proxy and must run under a conductor" in info.value.message
    assert "acplink conduct --proxy" in info.value.message
    assert [line for line in c.transport.stderr_tail if "must run under a conductor" in line]


async def test_typed_hooks_get_models_and_forward_them(tmp_path: Path) -> None:
    typed = f"{PY} {HERE / 'components' / 'typed_proxy.py'}"
    async with connect(conduct(typed, agent=DEMO), env={"ACPLINK_DEMO_STORE": str(tmp_path)}) as client:
        session = await client.new_session(cwd=tmp_path)
        turn = session.prompt("hello")
        updates = [u async for u in turn]
    assert turn.stop_reason == "end_turn"
    assert "".join(u.content.text for u in updates if isinstance(u, schema.AgentMessageChunk)) == \
        "YOU SAID: HELLO AND MORE"


async def test_a_wrapped_message_before_the_successor_is_initialized_is_refused() -> None:
    async with RawClient(conduct(bad_proxy("early"), agent=PROBE)) as c:
        with pytest.raises(InvalidRequest) as info:
            await c.initialize()
    assert "proxy/successor wrapping _probe/echo before the successor was initialized" in info.value.message


async def test_a_proxy_answers_in_the_older_dialect_it_was_initialized_with() -> None:
    answer = {"protocolVersion": 1, "agentCapabilities": {}}
    async with RawClient(bad_proxy("none").split(), answers={"_proxy/successor": answer}) as c:
        init = {"protocolVersion": 1, "clientCapabilities": {}}
        assert await c.call("_proxy/initialize", init) == answer
        assert await c.call("_x/y", {"a": 1}) == answer
        await c.notify("_x/z")
        assert await c.call("_proxy/successor", {"method": "_probe/echo"}) is None  # up, to the conductor
    assert c.asked == [("_proxy/successor", {"method": "initialize", "params": init}),
                       ("_proxy/successor", {"method": "_x/y", "params": {"a": 1}}),
                       ("_probe/echo", None)]
    assert c.notes == [("_proxy/successor", {"method": "_x/z"})]


async def test_a_cancelled_request_is_answered_after_what_the_agent_sent_before_its_answer() -> None:
    # the agent, told $/cancel_request, sends a notification then its -32800: through two proxies
    # the answer still comes last (each hop passes the cancel on and waits for the answer)
    client = RawClient(conduct("acplink:passthrough", EXAMPLE, agent=PROBE))
    ids: list[int | str] = []
    wire: list[str] = []  # what arrives, in the order of the bytes on the pipe
    received = client.peer.data_received

    def tap(data: bytes) -> None:
        for line in data.splitlines():
            msg = json.loads(line)
            if ids and msg.get("id") == ids[0]:
                wire.append(f"answer {msg.get('error', {}).get('code')}")
            elif msg.get("method") == "_probe/cancelled":
                wire.append("cancelled note")
        received(data)

    client.peer.data_received = tap  # type: ignore[method-assign]
    async with client as c:
        await c.initialize()
        call = asyncio.ensure_future(c.peer.request("_probe/hang", b"{}", on_sent=ids.append))
        await c.call("_probe/echo", {})  # (the hang reached the agent: the hops keep order)
        await c.notify("$/cancel_request", {"requestId": ids[0]})  # for our request, on our hop
        with pytest.raises(RequestCancelled):
            await asyncio.wait_for(call, 10)
    assert wire == ["cancelled note", "answer -32800"]
