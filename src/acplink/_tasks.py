"""Task ownership: every background task acplink starts belongs to a :class:`TaskSet`.

A task set is owned by something that has a close (a connection, a transport, a client, a
scope in a function): :meth:`TaskSet.spawn` starts a task in it, and :meth:`TaskSet.aclose`
cancels every task still running and awaits them all, so nothing outlives its owner. Used as
``async with TaskSet() as tasks:`` it is a scope: leaving the block closes it (the pattern
"wait for the first of several things, then drop the others").

This is the only module that calls ``create_task``/``ensure_future`` (a test checks it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Hashable
from typing import Any, Self, TypeVar

__all__ = ["TaskSet"]

T = TypeVar("T")

log = logging.getLogger("acplink")


class TaskSet:
    """The tasks one owner started; closing it cancels and awaits those still running.

    Two kinds of member: *loose* tasks (:meth:`spawn`), which leave the set by themselves when
    they end, and *keyed* tasks (:meth:`spawn` with ``key``), which the owner finds by key
    (e.g. an inbound request by its id) and removes itself with :meth:`discard` when the task
    ends (no callback per task: this is the path of every request).

    A failure of a task spawned with ``report=True`` (one nobody awaits: post-response work)
    goes to ``on_error``, or without it is logged as one warning line; the failure of any
    other task is its awaiter's to see.
    """

    __slots__ = ("_closing", "_loose", "keyed", "name", "on_error")

    def __init__(self, name: str = "", *, on_error: Callable[[BaseException], None] | None = None) -> None:
        self.name = name
        self.on_error = on_error
        self._loose: set[asyncio.Future[Any]] = set()
        #: key -> running task, for the tasks spawned with a key
        self.keyed: dict[Hashable, asyncio.Future[Any]] = {}
        self._closing = False

    def spawn(self, aw: Coroutine[Any, Any, T] | Awaitable[T], *, name: str | None = None,
              key: Hashable | None = None, report: bool = False) -> asyncio.Future[T]:
        """Start ``aw`` (a coroutine, or any awaitable) as a task of this set; returns it.

        With ``key``, the task is found in :attr:`keyed` until the owner calls :meth:`discard`
        (it must, from the task's own ``finally``). Spawning into a closed set is an error
        (the coroutine is closed unstarted)."""
        if self._closing:
            if asyncio.iscoroutine(aw):
                aw.close()
            raise RuntimeError(f"task set {self.name or id(self)} is closed")
        task: asyncio.Future[T]
        if asyncio.iscoroutine(aw):
            task = asyncio.get_running_loop().create_task(aw, name=name)
        else:
            task = asyncio.ensure_future(aw)
        if task.done():  # (an eager task factory may have run it to the end already)
            if report:
                self._report(task)
            return task
        if key is not None:
            self.keyed[key] = task
        else:
            self._loose.add(task)
            task.add_done_callback(self._report if report else self._loose.discard)
        return task

    def spawn_keyed(self, coro: Coroutine[Any, Any, T], key: Hashable) -> asyncio.Future[T]:
        """:meth:`spawn` of a coroutine with ``key`` (the path of every inbound request: no
        keyword arguments, no awaitable other than a coroutine)."""
        if self._closing:
            coro.close()
            raise RuntimeError(f"task set {self.name or id(self)} is closed")
        task = asyncio.get_running_loop().create_task(coro)
        if not task.done():  # (an eager task factory may have run it to the end already)
            self.keyed[key] = task
        return task

    def discard(self, key: Hashable) -> None:
        """A keyed task ended (or is no longer this set's to close)."""
        self.keyed.pop(key, None)

    def _report(self, task: asyncio.Future[Any]) -> None:
        self._loose.discard(task)
        if task.cancelled():
            return
        exc = task.exception()  # (retrieved: never "exception was never retrieved")
        if exc is None or self._closing:
            return
        if self.on_error is not None:
            self.on_error(exc)
        else:
            log.warning("%s: a background task failed: %s: %s", self.name or "acplink", type(exc).__name__, exc)

    def __len__(self) -> int:
        return len(self._loose) + len(self.keyed)

    @property
    def closed(self) -> bool:
        return self._closing

    def cancel(self) -> list[asyncio.Future[Any]]:
        """Cancel every task still running (no new one may start); returns them."""
        self._closing = True
        tasks = [t for t in (*self._loose, *self.keyed.values()) if not t.done()]
        for t in tasks:
            t.cancel()
        return tasks

    async def aclose(self) -> None:
        """Cancel every task still running and wait until all have ended."""
        while tasks := self.cancel():
            await asyncio.gather(*tasks, return_exceptions=True)
        self._loose.clear()
        self.keyed.clear()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
