"""Our own calls in flight: the future each caller awaits, its result hook, and the slots.

The engine keeps the wire side of a call (its id, which method it was, whether it is still
awaited: :meth:`Engine.request`, :meth:`Engine.forget`, :attr:`Engine.awaited`); this module
keeps the asyncio side. At most ``limit`` calls are outstanding: a caller past the limit waits
for a free slot (backpressure) instead of failing, and slots are handed on in arrival order.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Generator
from typing import Any

from ..rpc.engine import Engine, IncomingResponse

__all__ = ["DONE", "Calls", "resolve"]


class Calls:
    """The pending calls of one connection (see the module doc)."""

    __slots__ = ("_waiters", "engine", "futures", "hooks", "limit")

    def __init__(self, engine: Engine, limit: int) -> None:
        self.engine = engine
        self.limit = limit
        #: id -> the future its caller awaits
        self.futures: dict[int | str, asyncio.Future[Any]] = {}
        #: id -> result hook of the calls that have one (see Peer.request)
        self.hooks: dict[int | str, Callable[[Any], Any]] = {}
        #: callers waiting for a free slot, in arrival order
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    async def wait_for_slot(self, closed: Callable[[], bool]) -> None:
        """Return once a call may be sent (or the connection closed: ``closed()``)."""
        while self.engine.awaited >= self.limit and not closed():
            slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(slot)
            try:
                await slot
            except asyncio.CancelledError:
                if slot.done() and not slot.cancelled():
                    self.free_slot()  # pass on the slot we were given
                raise

    def free_slot(self) -> None:
        """A call ended: the first caller waiting for a slot may go."""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def open(self, rid: int | str, hook: Callable[[Any], Any] | None) -> asyncio.Future[Any]:
        """The future the caller of request ``rid`` awaits."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.futures[rid] = fut
        if hook is not None:
            self.hooks[rid] = hook
        return fut

    def close(self, rid: int | str) -> None:
        """The caller of ``rid`` is done with it (answered, failed or gave up)."""
        self.futures.pop(rid, None)
        if self.hooks:
            self.hooks.pop(rid, None)

    def answered(self, ev: IncomingResponse) -> tuple[asyncio.Future[Any], Callable[[Any], Any] | None] | None:
        """The response ``ev`` arrived: its caller's future and hook (None: given up on)."""
        fut = self.futures.pop(ev.id, None)
        if fut is None:
            return None  # (its slot was freed when it was given up on)
        if self._waiters:
            self.free_slot()
        return fut, (self.hooks.pop(ev.id, None) if self.hooks else None)

    def failed(self, rid: int | str, err: BaseException) -> None:
        """The response to ``rid`` was broken: its caller gets ``err``."""
        self.free_slot()
        fut = self.futures.pop(rid, None)
        if fut is not None and not fut.done():
            fut.set_exception(err)

    def abandon(self, rid: int | str) -> bool:
        """The caller of ``rid`` gave up: stop awaiting it, free its slot. Returns whether it
        was still awaited (then the peer should be told: ``$/cancel_request``)."""
        if not self.engine.forget(rid):
            return False
        self.free_slot()
        return True

    def fail_all(self, err: BaseException) -> None:
        """Fail every call still waiting for a response."""
        for fut in self.futures.values():
            if not fut.done():
                fut.set_exception(err)
        self.futures.clear()

    def shut(self, err: BaseException) -> None:
        """The connection closed: every call fails with ``err``; callers waiting for a slot go
        on (to find it closed)."""
        self.fail_all(err)
        self.hooks.clear()
        self.engine.forget_all()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()


def resolve(fut: asyncio.Future[Any], ev: IncomingResponse, hook: Callable[[Any], Any] | None) -> None:
    """Settle a caller's future with the response ``ev`` (through its result hook, if any)."""
    if fut.done():
        return
    if ev.error is not None:
        fut.set_exception(ev.error)
    elif hook is None:
        fut.set_result(ev.result)
    else:
        try:
            value = hook(ev.result)
        except Exception as exc:  # (the caller gets it, as with any failed call)
            fut.set_exception(exc)
        else:
            fut.set_result(value)


class _Done:
    """An awaitable that is already done."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]


#: an awaitable that is already done (shared by the connection layer)
DONE = _Done()

