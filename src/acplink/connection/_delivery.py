"""Ordered delivery of what the peer sends, with backpressure, and the admission of its requests.

One consumer task handles the peer's notifications one at a time in arrival order. A response
reaches its caller only after every notification that arrived before it was handled, and an
inbound request starts only after them too (a permission question finds the tool call it
names known). Requests then run concurrently, each in its own task, within the limits of
:class:`~acplink.connection.peer.PeerLimits`:

* at most ``max_running_requests`` run at once (the long-waiting ones of
  :attr:`Delivery.long_running`, the protocol's ``long_running``, excepted); the others are
  *held*, in arrival order;
* while our write buffer is over its high-water mark no request starts (its answer would only
  add to the buffer); a watcher task starts them once it drains, and disconnects a peer that
  takes nothing of a full buffer for ``stalled_peer_timeout`` seconds;
* reading stops while more than ``max_queued_notifications`` wait for the consumer, or once
  more than ``write_buffer_high`` bytes were read while requests are held.

Every task here (the consumer, the requests, the watcher) belongs to the peer's task set.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
from typing import TYPE_CHECKING, Any

from .._tasks import TaskSet
from ..errors import ConnectionClosed, InternalError, RequestCancelled, RequestError
from ..rpc.engine import IncomingNotification, IncomingRequest, IncomingResponse
from ._calls import resolve

if TYPE_CHECKING:
    from .peer import Peer, PeerLimits

__all__ = ["Delivery"]

log = logging.getLogger("acplink.rpc")

_CANCELLED_BY_PEER = "cancelled by the peer ($/cancel_request)"


class _Resolution:
    """A response waiting in the queue for the notifications that arrived before it."""

    __slots__ = ("event", "future", "hook")

    def __init__(self, future: asyncio.Future[Any], event: IncomingResponse, hook: Any) -> None:
        self.future = future
        self.event = event
        self.hook = hook


#: the queue's last item once the peer's input ended
_EOF = object()


class Delivery:
    """The inbound side of one peer (see the module doc)."""

    def __init__(self, peer: Peer, limits: PeerLimits, tasks: TaskSet,
                 long_running: frozenset[str] = frozenset()) -> None:
        self.peer = peer
        self.limits = limits
        self.tasks = tasks
        #: wire methods that may wait a long time on something outside this connection (the
        #: user, a process, the model): they take no ``max_running_requests`` slot, so that a
        #: few dozen of them waiting cannot hold back a quick request they depend on
        #: (``terminal/kill`` ending a ``terminal/wait_for_exit``). Their answers are small.
        #: The protocol in use says which (``Protocol.long_running``); a connection updates it
        #: when ``initialize`` selects another version.
        self.long_running = long_running
        #: what waits for the consumer: notifications (deferred ones as bytes), requests,
        #: responses (_Resolution), the end of input
        self.queue: collections.deque[Any] = collections.deque()
        self._wakeup: asyncio.Event | None = None
        self.consumer_busy = False
        self.reading_paused = False
        self.closed = False
        #: inbound requests held back (backpressure), in arrival order
        self.held: dict[int | str, IncomingRequest] = {}
        #: the same requests in arrival order, for release to take the first one in constant
        #: time (``next(iter(held))`` walks every slot already deleted from the dict: a burst
        #: would be quadratic); a cancelled one stays here until it is at the front
        self._held_order: collections.deque[IncomingRequest] = collections.deque()
        #: inbound requests waiting in the queue for the notifications before them
        self.queued_requests: dict[int | str, IncomingRequest] = {}
        #: bytes read while requests are held; reading paused for them
        self.held_bytes = 0
        self.held_paused = False
        #: requests running that count toward max_running_requests; the long-running ones
        self.busy = 0
        self.long: set[int | str] = set()
        #: the task that runs while the write buffer is over its high-water mark
        self.watch: asyncio.Future[None] | None = None
        #: why the peer was disconnected for not reading (see PeerLimits.stalled_peer_timeout)
        self.stall_message: str | None = None

    @property
    def running(self) -> dict[Any, asyncio.Future[Any]]:
        """id -> task of the inbound requests running."""
        return self.tasks.keyed

    def start(self) -> None:
        self._wakeup = asyncio.Event()
        self.tasks.spawn(self._consume(), name=f"acplink-{self.peer.name}-ordered")

    def shut(self) -> None:
        """The connection closed: nothing held starts any more."""
        self.closed = True
        self.held.clear()
        self._held_order.clear()

    @property
    def idle(self) -> bool:
        """Nothing waits for the consumer and it handles nothing."""
        return not self.queue and not self.consumer_busy

    # -- arrivals ------------------------------------------------------------------------------

    def enqueue(self, item: Any) -> None:
        self.queue.append(item)
        self.queued()

    def queued(self) -> None:
        """After queueing: wake the consumer; past the limit, stop reading (backpressure)."""
        self._wake()
        if not self.reading_paused and len(self.queue) > self.limits.max_queued_notifications:
            self.reading_paused = True
            self.peer.transport.pause_reading()

    def _wake(self) -> None:
        w = self._wakeup
        if w is not None and not w.is_set():
            w.set()

    def response(self, fut: asyncio.Future[Any], ev: IncomingResponse, hook: Any) -> None:
        """A response to one of our calls: settled now, or after the notifications queued."""
        if not self.queue and not self.consumer_busy:
            resolve(fut, ev, hook)
        else:
            self.queue.append(_Resolution(fut, ev, hook))
            self._wake()

    def request(self, ev: IncomingRequest) -> None:
        """An inbound request: admitted now, or after the notifications queued before it."""
        if self.queue or self.consumer_busy:
            if ev.id in self.queued_requests:
                self.peer.reply_error(ev.id, RequestError(f"Invalid request: duplicate request id {ev.id!r}",
                                                          code=-32600))
                return
            self.queued_requests[ev.id] = ev
            self.enqueue(ev)
            return
        self._admit(ev)

    def end_of_input(self) -> bool:
        """The peer's input ended: True when the queue still holds messages (the end is then
        handled after them, by the consumer)."""
        if self.queue or self.consumer_busy:
            self.queue.append(_EOF)
            self._wake()
            return True
        return False

    def read(self, n: int) -> None:
        """``n`` bytes were read: past the high-water mark while requests are held, stop
        reading until they have all started (memory stays bounded whatever the peer sends)."""
        self.held_bytes += n
        if not self.held_paused and self.held_bytes > self.limits.write_buffer_high:
            self.held_paused = True
            self.peer.transport.pause_reading()

    # -- the consumer --------------------------------------------------------------------------

    async def _consume(self) -> None:
        queue = self.queue
        wakeup = self._wakeup
        assert wakeup is not None
        peer = self.peer
        handle = peer.dispatcher.handle_notification
        decode = peer.engine.decode_deferred
        low = self.limits.max_queued_notifications // 2
        while True:
            if not queue:
                self.consumer_busy = False
                wakeup.clear()
                await wakeup.wait()
                continue
            self.consumer_busy = True
            while queue:
                item = queue.popleft()
                if self.reading_paused and len(queue) <= low:
                    self.reading_paused = False
                    if not self.held_paused:
                        peer.transport.resume_reading()
                if type(item) is bytes:
                    # decoded now, not on arrival: the model lives only while it is handled
                    item = decode(item)
                    if type(item) is IncomingRequest:  # (its turn in the order is now)
                        self._admit(item)
                        continue
                    if type(item) is not IncomingNotification:  # a broken line
                        peer.handle_event(item)
                        continue
                if type(item) is IncomingNotification:
                    try:
                        await handle(item.method, item.params, item.typed)
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        peer.notification_failed(item.method, exc)
                elif type(item) is _Resolution:
                    resolve(item.future, item.event, item.hook)
                elif type(item) is IncomingRequest:
                    if self.queued_requests.get(item.id) is item:  # (not cancelled meanwhile)
                        del self.queued_requests[item.id]
                        self._admit(item)
                else:  # the end of input
                    self.consumer_busy = False
                    peer.end_of_input(None)
                    return

    # -- admission -----------------------------------------------------------------------------

    def _admit(self, ev: IncomingRequest) -> None:
        """Start an inbound request (or hold it back, see :meth:`_must_hold`)."""
        held = self.held
        keyed = self.tasks.keyed
        limit = self.limits.max_concurrent_requests
        if len(keyed) + len(held) >= limit:
            self.peer.reply_error(ev.id, InternalError(f"too many concurrent requests (limit {limit})"))
            return
        if ev.id in keyed or ev.id in held:
            self.peer.reply_error(ev.id, RequestError(f"Invalid request: duplicate request id {ev.id!r}",
                                                      code=-32600))
            return
        if held or self._must_hold(ev.method):
            held[ev.id] = ev  # (behind the ones already waiting: arrival order is kept)
            self._held_order.append(ev)
            return
        self._dispatch(ev)

    def _dispatch(self, ev: IncomingRequest) -> None:
        if ev.method in self.long_running:
            self.long.add(ev.id)
        else:
            self.busy += 1
        self.tasks.spawn_keyed(self.peer.run_request(ev), ev.id)

    def _must_hold(self, method: str) -> bool:
        """A new inbound request waits: max_running_requests are running already, or the
        peer is not taking our output (its answer would only add to the buffer)."""
        return (self.busy >= self.limits.max_running_requests and method not in self.long_running) or \
            self.peer.transport.writing_paused

    def release(self) -> None:
        """Start the held requests that may run now, in arrival order."""
        held = self.held
        order = self._held_order
        if held and not self.closed:
            if self.peer.transport.writing_paused:  # (read once: starting a task writes nothing)
                self.watch_writes()  # (it releases them when the buffer drains)
                return
            limit = self.limits.max_running_requests
            long_running = self.long_running
            while held:
                ev = order[0]
                if held.get(ev.id) is not ev:  # (cancelled while held)
                    order.popleft()
                    continue
                if self.busy >= limit and ev.method not in long_running:
                    return
                order.popleft()
                del held[ev.id]
                self._dispatch(ev)
        if not held:
            order.clear()
        self.held_bytes = 0
        if self.held_paused:
            self.held_paused = False
            if not self.reading_paused:
                self.peer.transport.resume_reading()

    def request_ended(self, rid: int | str) -> None:
        """The task of inbound request ``rid`` ends (from its own ``finally``)."""
        self.tasks.keyed.pop(rid, None)
        if self.long and rid in self.long:
            self.long.discard(rid)
        else:
            self.busy -= 1
        if self.held:
            self.release()

    def cancel(self, rid: int | str) -> None:
        """``$/cancel_request`` for ``rid``: a request not started yet is answered at once; a
        running one is cancelled (its handler sees ``CancelledError``)."""
        if self.held.pop(rid, None) is not None or self.queued_requests.pop(rid, None) is not None:
            self.peer.reply_error(rid, RequestCancelled("Request cancelled"))
            if not self.held:
                self.release()
            elif len(self._held_order) > 2 * len(self.held) + 64:  # (cancelled ones: keep it bounded)
                self._held_order = collections.deque(self.held.values())
            return
        task = self.tasks.keyed.get(rid)
        if task is not None and not task.done():
            task.cancel(msg=_CANCELLED_BY_PEER)
            task.add_done_callback(functools.partial(self._cancelled, rid))

    def _cancelled(self, rid: int | str, task: asyncio.Future[Any]) -> None:
        # A task cancelled before its first step (a request and its $/cancel_request read in
        # one chunk) never runs the body of run_request: answer it here and forget it. (Only
        # cancelled tasks get this callback: the others remove themselves.)
        if self.tasks.keyed.get(rid) is task:
            self.request_ended(rid)
            if task.cancelled():
                self.peer.reply_error(rid, RequestCancelled("Request cancelled"))

    # -- the write side's congestion -----------------------------------------------------------

    def watch_writes(self) -> None:
        if self.watch is None and not self.closed and not self.tasks.closed:
            self.watch = self.tasks.spawn(self._watch_congestion(), name=f"acplink-{self.peer.name}-backpressure")

    async def _watch_congestion(self) -> None:
        """Runs while the write buffer is over its high-water mark: starts the held requests
        once it drains; disconnects a peer that takes nothing for stalled_peer_timeout s."""
        peer = self.peer
        transport = peer.transport
        timeout = self.limits.stalled_peer_timeout
        try:
            async with TaskSet(f"{peer.name} drain") as scope:
                drained = scope.spawn(transport.drain())
                while True:
                    taken = peer.sent_bytes - transport.write_buffer_size()  # by the peer, so far
                    done, _ = await asyncio.wait((drained,), timeout=timeout)
                    if done:
                        break
                    if timeout is not None and peer.sent_bytes - transport.write_buffer_size() == taken:
                        self._stalled(timeout)
                        return
        finally:
            self.watch = None
        if not drained.cancelled() and drained.exception() is None:
            self.release()

    def _stalled(self, timeout: float) -> None:
        transport = self.peer.transport
        self.stall_message = (f"the peer stopped reading: it took nothing of the {transport.write_buffer_size()} "
                              f"bytes waiting for it in {timeout:g} s")
        log.warning("%s: %s; disconnecting", self.peer.name, self.stall_message)
        self.held.clear()
        self._held_order.clear()
        self.peer.mark_closed(ConnectionClosed(self.stall_message))
        transport.pause_reading()  # (nothing it sends could be answered)
        transport.abort_writing()  # (drops the buffer; writers waiting fail)

