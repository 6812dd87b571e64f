"""FileBudget under cancellation: each path where a caller is cancelled at a bad moment (right
after being granted a slot or bytes, while at the head of the queue, while its thread runs)
gives back what it holds and never touches a cancelled future.

The moments are made exact by driving the operations by hand (``__aenter__``/``__aexit__``)
and cancelling a task before it had a chance to run; nothing here depends on timing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

import pytest

from acplink.client.fs import FileBudget
from acplink.client.fs._budget import Op


@pytest.fixture
async def loop_errors() -> AsyncIterator[list[dict[str, Any]]]:
    """What reaches the loop's exception handler (a callback that raised, e.g. set_result on a
    cancelled future) during the test."""
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    old = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    yield errors
    loop.set_exception_handler(old)


async def _holding(budget: FileBudget) -> Op:
    op = budget.op()
    await op.__aenter__()
    return op


async def _enter_and_wait(budget: FileBudget, entered: list[int], i: int, gate: asyncio.Event) -> None:
    async with budget.op():
        entered.append(i)
        await gate.wait()


async def test_a_caller_cancelled_right_after_its_slot_was_granted_hands_it_on() -> None:
    """The slot is granted (its future resolved) and the task cancelled before it resumes:
    the slot must not stay counted as running. With the default 4 slots, 4 such cancels
    would otherwise leave every later file operation waiting forever."""
    budget = FileBudget()
    for _ in range(3):  # several rounds: a leak of one slot per round would add up
        holders = [await _holding(budget) for _ in range(budget.max_operations)]
        entered: list[int] = []
        gate = asyncio.Event()
        waiters = [asyncio.ensure_future(_enter_and_wait(budget, entered, i, gate)) for i in range(4)]
        await asyncio.sleep(0)
        assert len(budget._slot_waiters) == 4 and budget.running == 4
        for holder, waiter in zip(holders, waiters, strict=True):
            await holder.__aexit__(None, None, None)  # the slot passes to `waiter`...
            assert budget.running == 4 and not waiter.done()
            waiter.cancel()  # ...which is cancelled before it ran
        await asyncio.gather(*waiters, return_exceptions=True)
        assert all(w.cancelled() for w in waiters) and entered == []
        assert budget.running == 0 and not budget._slot_waiters
    # every slot is free: four operations enter at once, without waiting
    ops = [budget.op() for _ in range(budget.max_operations)]
    entering = [asyncio.ensure_future(op.__aenter__()) for op in ops]
    await asyncio.sleep(0)
    assert all(e.done() for e in entering) and budget.running == budget.max_operations
    for op in ops:
        await op.__aexit__(None, None, None)
    assert budget.running == 0


async def test_a_granted_then_cancelled_slot_goes_to_the_next_waiter() -> None:
    budget = FileBudget(max_operations=1)
    holder = await _holding(budget)
    entered: list[int] = []
    gate = asyncio.Event()
    first = asyncio.ensure_future(_enter_and_wait(budget, entered, 1, gate))
    second = asyncio.ensure_future(_enter_and_wait(budget, entered, 2, gate))
    await asyncio.sleep(0)
    await holder.__aexit__(None, None, None)  # granted to `first`
    first.cancel()  # cancelled before it ran: the slot goes on to `second`
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert first.cancelled() and entered == [2] and budget.running == 1
    gate.set()
    await second
    assert budget.running == 0 and not budget._slot_waiters


async def test_a_cancelled_head_waiter_is_skipped(loop_errors: list[dict[str, Any]]) -> None:
    """The head of the queue is cancelled and the slot freed before the cancelled task ran
    (so it is still queued, its future cancelled): the slot goes to the next waiter, and the
    cancelled future is not given a result."""
    budget = FileBudget(max_operations=1)
    holder = await _holding(budget)
    entered: list[int] = []
    gate = asyncio.Event()
    head = asyncio.ensure_future(_enter_and_wait(budget, entered, 1, gate))
    nxt = asyncio.ensure_future(_enter_and_wait(budget, entered, 2, gate))
    await asyncio.sleep(0)
    head.cancel()  # its future is cancelled now; its task has not run its handler yet
    assert budget._slot_waiters[0].cancelled()
    await holder.__aexit__(None, None, None)  # must skip the cancelled head
    assert budget.running == 1 and len(budget._slot_waiters) == 0
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert head.cancelled() and entered == [2]
    gate.set()
    await nxt
    assert budget.running == 0 and loop_errors == []


async def test_bytes_granted_then_cancelled_are_given_back() -> None:
    budget = FileBudget(max_operations=4, max_bytes=10)
    holder = await _holding(budget)
    await holder.reserve(10)
    gate = asyncio.Event()

    async def reserving(n: int) -> None:
        async with budget.op() as op:
            await op.reserve(n)
            await gate.wait()

    waiter = asyncio.ensure_future(reserving(8))
    await asyncio.sleep(0)
    assert budget.held == 10 and len(budget._byte_waiters) == 1
    await holder.__aexit__(None, None, None)  # the 8 bytes go to `waiter`...
    assert budget.held == 8
    waiter.cancel()  # ...which is cancelled before it ran
    await asyncio.gather(waiter, return_exceptions=True)
    assert (budget.running, budget.held) == (0, 0)


@pytest.mark.parametrize("outcome", ["result", "error"])
async def test_a_cancelled_callers_late_result_is_dropped(loop_errors: list[dict[str, Any]], outcome: str) -> None:
    """The caller of ``op.run`` is cancelled while the thread works; the thread's result (or
    error) arrives later and must not be set on the cancelled future (InvalidStateError in a
    loop callback), and the operation's slot is freed then."""
    budget = FileBudget(max_operations=1)
    started, release = threading.Event(), threading.Event()
    freed = asyncio.Event()

    def work() -> str:
        started.set()
        release.wait(30)
        if outcome == "error":
            raise OSError("late failure")
        return "late result"

    async def caller() -> None:
        async with budget.op() as op:
            await op.run(work)

    task = asyncio.ensure_future(caller())
    while not started.is_set():
        await asyncio.sleep(0.001)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert budget.running == 1  # the thread still runs: its slot is held
    give = budget._give_slot

    def give_and_tell() -> None:
        give()
        freed.set()

    budget._give_slot = give_and_tell  # type: ignore[method-assign]
    release.set()
    await asyncio.wait_for(freed.wait(), 30)  # (a guard against a hang, not a timing)
    await asyncio.sleep(0)
    assert budget.running == 0
    assert loop_errors == [], loop_errors
