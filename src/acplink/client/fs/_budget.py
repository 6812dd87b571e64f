"""Caps on the file operations of one connection: how many run at once, how many bytes of
file content they hold, and (optionally) waiting for the outgoing pipe to drain before a read.

An operation (:class:`Op`) holds a slot and its reserved bytes until *both* its caller is done
and its worker thread has ended: a cancelled caller does not free memory its thread still
fills, and the thread count can never exceed the slot count.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["DEFAULT_MAX_FILE_BYTES_IN_FLIGHT", "DEFAULT_MAX_FILE_OPERATIONS", "FileBudget", "Op"]

#: file operations (reads and writes) running at once per connection
DEFAULT_MAX_FILE_OPERATIONS = 4
#: bytes of file content held by running operations per connection (one bigger file runs alone)
DEFAULT_MAX_FILE_BYTES_IN_FLIGHT = 32 * 1024 * 1024

T = TypeVar("T")


class FileBudget:
    """Shared by the file-system handlers of one connection (see :class:`FileSystemHandler`).

    ``max_operations`` operations run at once (each in a thread of its own); together they
    hold at most ``max_bytes`` of file content, except that one operation bigger than that runs
    when nothing else holds any. ``drain``, when given, is awaited before each read starts
    (the client passes its transport's ``drain``): answers already written must leave the
    outgoing buffer before the next file is loaded, so a peer that reads slowly gets files
    slowly instead of filling memory. Waiters are served first come, first served.
    """

    def __init__(
        self,
        *,
        max_operations: int = DEFAULT_MAX_FILE_OPERATIONS,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES_IN_FLIGHT,
        drain: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        if max_operations < 1 or max_bytes < 1:
            raise ValueError("max_operations and max_bytes must be at least 1")
        self.max_operations = max_operations
        self.max_bytes = max_bytes
        self.drain = drain
        self.running = 0
        self.held = 0
        self.peak_held = 0
        self._slot_waiters: deque[asyncio.Future[None]] = deque()
        self._byte_waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    # -- slots ------------------------------------------------------------------------------------

    async def _take_slot(self) -> None:
        if self.running < self.max_operations and not self._slot_waiters:
            self.running += 1
            return
        fut = asyncio.get_running_loop().create_future()
        self._slot_waiters.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted, then cancelled: hand it on
                self._give_slot()
            elif fut in self._slot_waiters:
                self._slot_waiters.remove(fut)
            raise

    def _give_slot(self) -> None:
        while self._slot_waiters:
            fut = self._slot_waiters.popleft()
            if not fut.done():
                fut.set_result(None)  # the slot passes to it: `running` stays the same
                return
        self.running -= 1

    # -- bytes ------------------------------------------------------------------------------------

    def _fits(self, n: int) -> bool:
        return self.held == 0 or self.held + n <= self.max_bytes

    async def _reserve(self, n: int) -> None:
        if not self._byte_waiters and self._fits(n):
            self._hold(n)
            return
        fut = asyncio.get_running_loop().create_future()
        entry = (n, fut)
        self._byte_waiters.append(entry)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():  # granted, then cancelled: give the bytes back
                self._release(n)
            elif entry in self._byte_waiters:
                self._byte_waiters.remove(entry)
                self._wake()
            raise

    def _hold(self, n: int) -> None:
        self.held += n
        self.peak_held = max(self.peak_held, self.held)

    def _release(self, n: int) -> None:
        self.held -= n
        self._wake()

    def _wake(self) -> None:
        while self._byte_waiters:
            n, fut = self._byte_waiters[0]
            if fut.done():  # cancelled, its task not run yet: skip it (it holds nothing)
                self._byte_waiters.popleft()
                continue
            if not self._fits(n):
                return
            self._byte_waiters.popleft()
            self._hold(n)
            fut.set_result(None)

    def op(self) -> Op:
        """``async with budget.op() as op:`` one file operation (waits for a slot)."""
        return Op(self)


class Op:
    """One file operation: a slot, its reserved bytes, an open file, and its worker threads."""

    def __init__(self, budget: FileBudget) -> None:
        self.budget = budget
        self.fd: int | None = None  # an open file handed from one thread to the next
        self._reserved = 0
        self._threads = 0
        self._caller_done = False
        self._slot = False

    async def __aenter__(self) -> Op:
        await self.budget._take_slot()
        self._slot = True
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        self._caller_done = True
        self._maybe_release()

    async def reserve(self, n: int, *, drain: bool = False) -> None:
        """Hold ``n`` bytes of the budget until the operation ends; with ``drain``, then wait
        for the outgoing buffer to drain."""
        await self.budget._reserve(n)
        self._reserved += n
        if drain and self.budget.drain is not None:
            await self.budget.drain()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking ``fn(*args)`` in a short-lived thread of its own.

        Not the loop's shared executor: each call's thread ends with the call, so no worker
        thread outlives the handler. A cancelled caller stops waiting; the operation runs to
        its end, and its slot, bytes and file are released when it does.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def deliver(ok: bool, value: Any) -> None:
            self._threads -= 1
            self._maybe_release()
            if future.done():
                return
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

        def work() -> None:
            try:
                result: Any = fn(*args)
                outcome = (True, result)
            except BaseException as exc:  # handed to the awaiting task
                outcome = (False, exc)
            with contextlib.suppress(RuntimeError):  # the loop may be closed by now
                loop.call_soon_threadsafe(deliver, *outcome)

        self._threads += 1
        threading.Thread(target=work, name="acplink-fs", daemon=True).start()
        return await future

    def _maybe_release(self) -> None:
        if not self._caller_done or self._threads or not self._slot:
            return
        self._slot = False
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)
        if self._reserved:
            n, self._reserved = self._reserved, 0
            self.budget._release(n)
        self.budget._give_slot()
