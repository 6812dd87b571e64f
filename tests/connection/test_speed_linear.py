"""No per-message cost grows with the number of requests in flight or already answered.

A burst of N concurrent requests between two real peers (a memory pair, every default limit but
the ones that would refuse a burst this big), at N = 1,000 and N = 50,000, with the work counted,
not timed: the turns of the event loop, the writes to the transport, and every slot walked in
the connection's id-keyed tables (the held requests, the requests running, the calls in
flight). Those tables are swapped for :class:`SlotCountingDict`, which counts what iterating a
CPython dict really walks: a deleted entry keeps its slot until an insertion grows the table,
so taking "the first key" of a dict that had thousands deleted from its front walks them all
(``held[next(iter(held))]`` did: a burst was quadratic). The work per request must be the same
at both sizes, within a small factor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import orjson

from acplink.connection.peer import Peer, PeerLimits
from acplink.transports import memory_pair


class SlotCountingDict(dict[Any, Any]):
    """A dict that counts the slots its iteration walks, dead ones included, as CPython's
    compact dict does: deletion leaves a dead slot; an insertion that finds the table full
    (two thirds of its slots used, dead or alive) rebuilds it with only the live ones."""

    def __init__(self, counter: list[int]) -> None:
        super().__init__()
        self._counter = counter
        self._slots: list[Any] = []  # keys in insertion order; _DEAD where deleted
        self._at: dict[Any, int] = {}
        self._size = 8  # the table's size (its usable slots: two thirds)
        self._lo = 0  # no live slot before this one

    def __setitem__(self, key: Any, value: Any) -> None:
        if key not in self._at:
            if len(self._slots) >= self._size * 2 // 3:
                self._compact()
            self._at[key] = len(self._slots)
            self._slots.append(key)
        super().__setitem__(key, value)

    def _compact(self) -> None:
        live = [k for k in self._slots if k is not _DEAD]
        self._slots = live
        self._at = {k: i for i, k in enumerate(live)}
        self._lo = 0
        while self._size * 2 // 3 <= len(live) * 3 // 2 + 1:  # (room to grow, like CPython)
            self._size *= 2

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self._slots[self._at.pop(key)] = _DEAD

    def pop(self, key: Any, *default: Any) -> Any:
        if key in self._at:
            self._slots[self._at.pop(key)] = _DEAD
        return super().pop(key, *default)

    def clear(self) -> None:
        super().clear()
        self._slots.clear()
        self._at.clear()
        self._lo = 0

    def __iter__(self) -> Iterator[Any]:
        slots = self._slots
        while self._lo < len(slots) and slots[self._lo] is _DEAD:
            self._lo += 1  # (the count below charges every dead slot walked from 0)
        self._counter[0] += self._lo
        for i in range(self._lo, len(slots)):
            self._counter[0] += 1
            if slots[i] is not _DEAD:
                yield slots[i]

    def keys(self) -> Any:
        return list(iter(self))

    def values(self) -> Any:
        return [self[k] for k in self]

    def items(self) -> Any:
        return [(k, self[k]) for k in self]


_DEAD = object()


class Answer:
    """Answers every request at once with its params."""

    async def handle_request(self, method: str, params: Any) -> bytes:
        return orjson.dumps(params)

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        pass


def _instrument(peer: Peer, slots: list[int]) -> None:
    d = peer.delivery
    d.held = SlotCountingDict(slots)
    d.queued_requests = SlotCountingDict(slots)
    peer.tasks.keyed = SlotCountingDict(slots)
    peer.calls.futures = SlotCountingDict(slots)
    peer.calls.hooks = SlotCountingDict(slots)
    peer.engine.pending = SlotCountingDict(slots)


async def _burst(n: int) -> dict[str, int]:
    """n concurrent requests from one peer to the other; the work both sides did."""
    limits = PeerLimits(max_concurrent_requests=n + 1, max_pending_requests=n + 1)
    a_end, b_end = memory_pair()
    caller = Peer(a_end, Answer(), limits=limits, name="caller")
    callee = Peer(b_end, Answer(), limits=limits, name="callee")
    slots = [0]
    _instrument(caller, slots)
    _instrument(callee, slots)
    writes = [0]
    for end in (a_end, b_end):
        write = end.write

        def counted(data: bytes, write: Any = write) -> None:
            writes[0] += 1
            write(data)

        end.write = counted  # type: ignore[method-assign]
    await caller.start()
    await callee.start()
    turns = 0
    done = False

    async def count_turns() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.ensure_future(count_turns())
    try:
        results = await asyncio.wait_for(
            asyncio.gather(*(caller.request("_t/echo", b'{"k":%d}' % i) for i in range(n))), 300)
    finally:
        done = True
        await counter
        await caller.aclose()
        await callee.aclose()
    assert results == [{"k": i} for i in range(n)]
    assert not callee.delivery.held and not callee.tasks.keyed and not caller.engine.pending
    return {"slots walked": slots[0], "loop turns": turns, "writes": writes[0]}


async def test_the_work_per_request_does_not_grow_with_the_requests_in_flight_or_answered() -> None:
    small, big = 1_000, 50_000
    at_small = await _burst(small)
    at_big = await _burst(big)
    for what in at_small:
        per_small = (at_small[what] + small) / small  # (+ n: a count that is 0 is linear)
        per_big = (at_big[what] + big) / big
        assert per_big <= 2 * per_small, (
            f"{what}: {at_small[what]} for {small:,} requests, {at_big[what]} for {big:,} "
            f"({per_big / per_small:.1f}x as much per request)")


async def test_the_slot_counting_dict_counts_what_cpython_walks() -> None:
    # the model the test above relies on: a front deletion leaves a slot that the next
    # iteration walks, until an insertion rebuilds the table
    n = [0]
    d = SlotCountingDict(n)
    for i in range(5):
        d[i] = i
    del d[0]
    d.pop(1)
    n[0] = 0
    assert next(iter(d)) == 2 and n[0] == 3  # two dead slots, then the live one
    assert list(d) == [2, 3, 4] and dict(d.items()) == {2: 2, 3: 3, 4: 4}
    for i in range(5, 40):  # growing the table drops the dead slots
        d[i] = i
    n[0] = 0
    assert next(iter(d)) == 2 and n[0] == 1
    d.clear()
    assert not d and list(d) == []


async def test_held_requests_cancelled_anywhere_keep_the_others_in_order_and_leave_nothing_behind() -> None:
    # the held requests are kept in arrival order apart from their id table: one cancelled
    # in the middle is skipped, its id reused goes to the back, and a peer that keeps
    # sending and cancelling while one waits does not grow what is kept
    from test_backpressure import Gates, req
    from test_memory import RawEnd

    ours, theirs = memory_pair()
    gates = Gates()
    peer = Peer(ours, gates, limits=PeerLimits(max_running_requests=1))
    raw = RawEnd(theirs)
    await peer.start()
    await raw.start()
    try:
        def cancel(rid: int) -> dict[str, Any]:
            return {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": rid}}

        raw.send(req(1, "a"), req(2, "b"), req(3, "c"), req(4, "d"), cancel(3), req(3, "c2"))
        assert (await raw.recv())["id"] == 3  # the first 3, answered cancelled
        raw.send(*(m for i in range(100, 400) for m in (req(i, i), cancel(i))))
        assert {(await raw.recv())["id"] for _ in range(300)} == set(range(100, 400))
        assert list(peer.delivery.held) == [2, 4, 3]
        assert len(peer.delivery._held_order) <= 2 * len(peer.delivery.held) + 64
        for k in ("a", "b", "d", "c2"):
            gates.gate(k).set()
            assert (await raw.recv())["result"] == {"k": k}
        assert gates.started == ["a", "b", "d", "c2"]
        assert not peer.delivery.held and not peer.delivery._held_order
    finally:
        await peer.aclose()
        await theirs.aclose()
