"""Relaying a request to another connection without a task (connection/_relay.py): what a
proxy or conductor passes on comes back unchanged, cancellation goes hop by hop, a closing
connection on either side ends the relay, and no task is made per relayed request."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from connhelpers import guard

from acplink.connection import _relay
from acplink.connection._relay import Route
from acplink.connection.peer import CANCEL_REQUEST, Peer, PeerLimits
from acplink.errors import InternalError, InvalidParams, RequestCancelled, TransportError
from acplink.transports import memory_pair


class Downstream:
    """The far side: answers, fails, waits, or keeps working after a cancel."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.finish = asyncio.Event()

    async def handle_request(self, method: str, params: Any) -> bytes:
        self.seen.append((method, params))
        if method == "echo":
            return orjson.dumps({"echo": params})
        if method == "fail":
            raise InvalidParams("bad params, said the far side", {"field": "x"})
        self.started.set()
        try:
            await self.finish.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            if method != "stubborn":
                raise
            await self.finish.wait()  # (it keeps going: its answer still counts)
        return orjson.dumps("late answer")

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        pass


class Middle:
    """Relays every request to ``down`` as ``via/<method>`` (params as they came)."""

    def __init__(self) -> None:
        self.down: Peer | None = None
        self.failed: list[BaseException] = []
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    def route_request(self, method: str, params: Any) -> Route | None:
        assert self.down is not None
        if method in ("local", "held"):
            return None
        return Route(self.down, method, orjson.dumps(params), self._failed)

    def _failed(self, exc: BaseException) -> BaseException:
        self.failed.append(exc)
        return InternalError(f"middle: the far side is gone ({type(exc).__name__})")

    async def handle_request(self, method: str, params: Any) -> bytes:
        if method == "held":
            self.holding.set()
            await self.release.wait()
        return orjson.dumps("answered in a task")

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        pass


class Chain:
    def __init__(self, down_limits: PeerLimits | None = None) -> None:
        self.far = Downstream()
        self.middle = Middle()
        a, b = memory_pair()
        c, d = memory_pair()
        self.up = Peer(a, Middle(), name="up")  # (its own router is never asked: nothing calls it)
        self.mid_up = Peer(b, self.middle, name="middle-up")
        self.mid_down = Peer(c, Downstream(), name="middle-down", limits=down_limits)
        self.down = Peer(d, self.far, name="down")
        self.middle.down = self.mid_down

    async def __aenter__(self) -> Chain:
        for p in (self.up, self.mid_up, self.mid_down, self.down):
            await p.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        for p in (self.up, self.mid_up, self.mid_down, self.down):
            await p.aclose()

    async def open(self, method: str, params: Any = None) -> tuple[int | str, asyncio.Future[Any]]:
        """Send a request and keep its call (the caller may cancel it by hand)."""
        opened = self.up.open_call(method, orjson.dumps(params))
        assert opened is not None
        rid, fut, written = opened
        await written
        return rid, fut

    async def cancel(self, rid: int | str) -> None:
        await self.up.notify(CANCEL_REQUEST, orjson.dumps({"requestId": rid}))


async def test_a_relayed_request_comes_back_unchanged_with_no_task() -> None:
    async with Chain() as ch:
        assert await guard(ch.up.request("echo", orjson.dumps({"a": [1, "x"]}))) == {"echo": {"a": [1, "x"]}}
        with pytest.raises(InvalidParams) as err:
            await guard(ch.up.request("fail", orjson.dumps({})))
        assert err.value.message == "bad params, said the far side" and err.value.data == {"field": "x"}
        # a request waiting downstream is a relay, not a task of the middle connection
        _, fut = await ch.open("wait", {"n": 1})
        await guard(ch.far.started.wait())
        assert len(ch.mid_up.relays) == 1 and not ch.mid_up.tasks.keyed
        ch.far.finish.set()
        assert await guard(fut) == "late answer"
        assert not ch.mid_up.relays and not ch.mid_down.calls.futures
        # what the router declines runs as before, in a task
        assert await guard(ch.up.request("local", None)) == "answered in a task"
        assert [m for m, _ in ch.far.seen] == ["echo", "fail", "wait"]


async def test_cancelling_a_relayed_request_cancels_the_one_it_caused() -> None:
    async with Chain() as ch:
        rid, fut = await ch.open("wait")
        await guard(ch.far.started.wait())
        await ch.cancel(rid)
        await guard(ch.far.cancelled.wait())  # the far side's handler was cancelled
        with pytest.raises(RequestCancelled):  # its -32800 came back through the middle
            await guard(fut)
        assert not ch.mid_up.relays


async def test_a_cancelled_relay_still_takes_an_answer_within_the_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    async with Chain() as ch:
        rid, fut = await ch.open("stubborn")
        await guard(ch.far.started.wait())
        await ch.cancel(rid)
        await guard(ch.far.cancelled.wait())
        ch.far.finish.set()  # it answers after all: that answer is the one that comes back
        assert await guard(fut) == "late answer"


async def test_a_cancelled_relay_answers_32800_once_the_grace_is_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_relay, "CANCEL_GRACE", 0.2)
    async with Chain() as ch:
        rid, fut = await ch.open("stubborn")
        await guard(ch.far.started.wait())
        await ch.cancel(rid)
        with pytest.raises(RequestCancelled):
            await guard(fut)
        assert not ch.mid_up.relays and not ch.mid_down.calls.futures  # (given up on downstream too)
        ch.far.finish.set()
        await asyncio.sleep(0.05)  # its late answer is dropped quietly; the connection goes on
        assert await guard(ch.up.request("echo", orjson.dumps(1))) == {"echo": 1}


async def test_the_source_closing_cancels_what_its_relays_caused() -> None:
    async with Chain() as ch:
        await ch.open("wait")
        await guard(ch.far.started.wait())
        await ch.up.aclose()
        await guard(ch.mid_up.wait_closed())
        await guard(ch.far.cancelled.wait())  # $/cancel_request went on to the far side
        assert not ch.mid_up.relays and not ch.mid_down.calls.futures


async def test_the_target_closing_fails_the_relay_through_on_error() -> None:
    async with Chain() as ch:
        _, fut = await ch.open("wait")
        await guard(ch.far.started.wait())
        await ch.down.aclose()
        with pytest.raises(InternalError, match="middle: the far side is gone"):
            await guard(fut)
        assert len(ch.middle.failed) == 1 and isinstance(ch.middle.failed[0], TransportError)
        # the target is closed now: a new request takes the task path, which the router's
        # connection answers (it cannot be relayed any more)
        assert await guard(ch.up.request("echo", orjson.dumps(2))) == "answered in a task"


async def test_a_request_behind_one_running_in_a_task_is_not_relayed_past_it() -> None:
    async with Chain() as ch:
        held = asyncio.create_task(ch.up.request("held", None))  # (declined by the router: a task)
        await guard(ch.middle.holding.wait())
        _, fut = await ch.open("echo", 3)
        assert await guard(fut) == "answered in a task"  # not relayed past the running task
        ch.middle.release.set()
        assert await guard(held) == "answered in a task"
        assert await guard(ch.up.request("echo", orjson.dumps(4))) == {"echo": 4}  # relayed again


async def test_a_request_too_large_for_the_next_connection_is_not_relayed() -> None:
    async with Chain(down_limits=PeerLimits(max_message_size=1000)) as ch:
        # (the task path is the one that says why: here the test's router answers itself)
        assert await guard(ch.up.request("echo", orjson.dumps("x" * 2000))) == "answered in a task"
        assert await guard(ch.up.request("echo", orjson.dumps("small"))) == {"echo": "small"}
        assert not ch.mid_down.engine.pending
