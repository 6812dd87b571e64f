"""Fixes from the review of the speed work: strict mode on the fast path, eager task
factories, a write that fails under a call, value semantics of the engine's events."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from typing import Any

import orjson
import pytest
from connhelpers import guard

from acplink.connection import ClientSideConnection, Router
from acplink.errors import ConnectionClosed
from acplink.rpc import IncomingNotification, IncomingRequest, Violation
from acplink.transports import StreamTransport, memory_pair
from acplink.transports.base import Transport, TransportSink

USAGE = {"jsonrpc": "2.0", "method": "session/update",
         "params": {"sessionId": "s", "update": {"sessionUpdate": "usage_update", "used": "5", "size": 10}}}


@pytest.mark.parametrize("strict", [False, True])
async def test_strict_connections_refuse_coercions_on_the_fast_path_too(strict: bool) -> None:
    # "used": "5" is coerced to 5 leniently; a strict connection refuses it (no handler call)
    seen: list[Any] = []
    router = Router()

    async def on_update(params: Any) -> None:
        seen.append(params.update.used)

    router.add_notification("session/update", on_update)
    a, b = memory_pair()
    conn = ClientSideConnection(b, router, strict=strict)
    await conn.start()
    await a.start(_Sink())
    a.write(orjson.dumps(USAGE) + b"\n")
    a.write(orjson.dumps({**USAGE, "params": {**USAGE["params"], "update": {  # type: ignore[dict-item]
        "sessionUpdate": "usage_update", "used": 6, "size": 10}}}) + b"\n")
    for _ in range(50):
        await asyncio.sleep(0)
    await conn.aclose()
    await a.aclose()
    assert seen == ([6] if strict else [5, 6])


class _Sink:
    def data_received(self, data: bytes) -> None:
        pass

    def eof_received(self, exc: BaseException | None) -> None:
        pass


class _BrokenWrites(Transport):
    """Accepts the connection, then every write fails like a pipe whose reader is gone."""

    async def start(self, sink: TransportSink) -> None:
        self.sink = sink

    def write(self, data: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_a_call_whose_write_fails_raises_the_cause_and_frees_its_slot(
        caplog: pytest.LogCaptureFixture) -> None:
    conn = ClientSideConnection(_BrokenWrites(), Router())
    await conn.start()
    with pytest.raises(ConnectionClosed, match="Broken pipe"):
        await guard(conn.call("_x/y", {}))
    assert conn.peer.engine.pending == {}
    await conn.aclose()
    await asyncio.sleep(0)
    import gc
    gc.collect()  # an unretrieved future exception would be logged now
    assert "never retrieved" not in caplog.text


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager task factories arrived in Python 3.12")
def test_requests_finished_by_an_eager_task_factory_are_not_kept() -> None:  # pragma: no cover (3.12+)
    code = textwrap.dedent("""
        import asyncio
        from acplink import AgentSideConnection, ClientSideConnection, PeerLimits, Router, memory_pair

        async def main():
            asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
            router = Router()

            async def echo(params):
                return params  # finishes without suspending: runs inside create_task

            router.add_request("_test/echo", echo)
            a, b = memory_pair()
            agent = AgentSideConnection(a, router, limits=PeerLimits(max_concurrent_requests=3))
            client = ClientSideConnection(b, Router())
            await agent.start(); await client.start()
            for i in range(10):
                assert await client.call("_test/echo", {"i": i}) == {"i": i}
            print(len(agent.peer._inbound))
            await client.aclose(); await agent.aclose()

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "0", out.stderr


def test_events_compare_show_and_match_by_their_fields() -> None:
    req = IncomingRequest(1, "m", {"a": 1})
    assert req == IncomingRequest(1, "m", {"a": 1}) and req != IncomingRequest(2, "m", {"a": 1})
    assert repr(req) == "IncomingRequest(id=1, method='m', params={'a': 1})"
    match IncomingNotification("n", None):
        case IncomingNotification(method, params, typed):
            assert (method, params, typed) == ("n", None, False)
    v = Violation("bad", reply=b"x")
    assert v.reply == b"x" and v.pending_id is None and not v.noise
    with pytest.raises(TypeError):
        hash(req)


class _Writes(StreamTransport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    async def start(self, sink: TransportSink) -> None:
        pass

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_the_first_message_of_a_turn_goes_out_at_once_the_rest_in_one_batch() -> None:
    t = _Writes()
    conn = ClientSideConnection(t, Router())
    await conn.start()
    await conn.notify("_x/a", {"n": 1})
    assert t.writes == [b'{"jsonrpc":"2.0","method":"_x/a","params":{"n":1}}\n']  # no turn waited
    await conn.notify("_x/a", {"n": 2})
    await conn.notify("_x/a", {"n": 3})
    assert len(t.writes) == 1  # batched for the next turn
    await asyncio.sleep(0)
    assert t.writes[1:] == [b'{"jsonrpc":"2.0","method":"_x/a","params":{"n":2}}\n'
                            b'{"jsonrpc":"2.0","method":"_x/a","params":{"n":3}}\n']
    await conn.aclose()
