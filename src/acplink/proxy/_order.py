"""Keeping a hop's order across a forwarded response.

A connection delivers a response only after the notifications that came before it, but the
response resumes the task that forwards it on a later turn of the loop, while the notification
behind it could be forwarded at once and overtake it on the next hop (a ``session/update``
ahead of the ``session/new`` answer naming its session). An :class:`OrderGate` per source
connection closes that gap: a response registers a hold in the ordered delivery path
(``Peer.request``'s ``on_result``), the forwarder releases it right before the answer is
written (same task step: nothing runs in between), and messages received behind the response
wait for the holds that existed when they arrived.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import orjson

from .._tasks import TaskSet
from ..connection._relay import CANCEL_GRACE
from ..connection.peer import CANCEL_REQUEST, DONE
from ..errors import AcpError

__all__ = ["CANCEL_GRACE", "OrderGate", "call_through", "forward_notification"]


class OrderGate:
    """The answers received on one connection and not forwarded yet."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: set[asyncio.Future[None]] = set()

    def hold(self) -> asyncio.Future[None]:
        """A response arrived (call from the ordered delivery path); release it once forwarded."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._held.add(fut)
        return fut

    def release(self, fut: asyncio.Future[None] | None) -> None:
        if fut is not None:
            self._held.discard(fut)
            if not fut.done():
                fut.set_result(None)

    def hooked(self, slot: list[asyncio.Future[None] | None]) -> Any:
        """An ``on_result`` hook that holds the gate and puts the hold in ``slot[0]``."""
        def on_result(result: Any) -> Any:
            slot[0] = self.hold()
            return result
        return on_result

    @property
    def holding(self) -> bool:
        """Whether an answer received here is not forwarded yet (callers test this before
        awaiting :meth:`wait`: no coroutine per message when nothing is held, the usual case)."""
        return bool(self._held)

    async def wait(self) -> None:
        """Wait until the answers received so far have been forwarded (at once when none)."""
        if self._held:
            await asyncio.wait(tuple(self._held))


async def forward_notification(peer: Any, method: str, data: bytes | None) -> None:
    """Send a notification on ``peer`` with flow control, without yielding to the event loop
    when the transport is not over its high-water mark: a hop forwards a burst in one turn of
    the loop, so the burst leaves in one batched write (an in-memory transport's drain always
    yields a turn, which made every forwarded notification a write of its own)."""
    written = peer.notify(method, data)
    if written is DONE:
        return
    if peer.transport.writing_paused:
        await written
    elif isinstance(written, Coroutine):
        written.close()  # (the drain it would have awaited has nothing to wait for)




async def call_through(peer: Any, tasks: TaskSet, method: str, data: bytes | None, *,
                       timeout: float | None = None, on_result: Any = None, grace: float = CANCEL_GRACE) -> Any:
    """Forward a request on ``peer`` and return its result (or raise its error).

    When the caller is cancelled (the request it forwards was cancelled on its own hop with
    ``$/cancel_request``), exactly the request it caused is cancelled on this hop, and its answer
    (a result, or ``-32800``) is still awaited, within ``grace`` seconds, and returned: the
    answer then leaves behind everything the successor sent before it (answering ``-32800`` at
    once would let a late ``session/update`` arrive after the answer).

    The call is the caller's own (``Peer.open_call``: no task per forwarded request); with a
    ``timeout``, or when the connection takes no call so, it runs in a task of ``tasks``."""
    opened = peer.open_call(method, data, on_result) if timeout is None else None
    if opened is None:
        return await _call_in_task(peer, tasks, method, data, timeout, on_result, grace)
    rid, fut, written = opened
    try:
        if written is not DONE:
            await peer.written(written, fut)
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        if fut.done() or peer.closed or not await _cancelled_on_hop(peer, rid, fut, grace):
            raise
        return fut.result()
    finally:
        peer.end_call(rid)


async def _call_in_task(peer: Any, tasks: TaskSet, method: str, data: bytes | None, timeout: float | None,
                        on_result: Any, grace: float) -> Any:
    """:func:`call_through` with the request in a task of ``tasks`` (``Peer.request``)."""
    sent: list[int | str] = []
    task = tasks.spawn(peer.request(method, data, timeout=timeout, on_result=on_result, on_sent=sent.append))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.done() or not sent or peer.closed or not await _cancelled_on_hop(peer, sent[0], task, grace):
            task.cancel()
            raise
        return task.result()


async def _cancelled_on_hop(peer: Any, rid: int | str, answer: asyncio.Future[Any], grace: float) -> bool:
    """The forwarder was cancelled: ask ``peer`` to cancel request ``rid`` and wait up to
    ``grace`` seconds for its ``answer`` (True: it came, a result or ``-32800``)."""
    try:
        await forward_notification(peer, CANCEL_REQUEST, orjson.dumps({"requestId": rid}))
    except AcpError:
        pass
    done, _ = await asyncio.wait((answer,), timeout=grace)
    return bool(done)
