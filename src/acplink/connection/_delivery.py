"""Ordered delivery, backpressure and the admission of inbound requests, as decisions.

:class:`Delivery` is the inbound side of one connection as a state machine without I/O, in
the manner of a sans-I/O protocol library: it starts no task, touches no transport and calls
nothing back. The connection's driver (``peer.py``) tells it what happened (a message
arrived, a request ended, the write buffer drained, ...) and gets back a *decision*, which it
carries out. A test feeds it inputs and asserts the decisions (tests/connection/test_delivery.py).

The rules it keeps:

* notifications are handled one at a time in arrival order (the driver's consumer task takes
  them with :meth:`Delivery.take`);
* a response reaches its caller only after every notification that arrived before it was
  handled (the reply to ``session/prompt`` never overtakes the ``session/update`` of its turn),
  and an inbound request starts only after them too (a permission question finds the tool
  call it names known);
* requests then run concurrently: at most ``max_running_requests`` at once (the long-waiting
  ones of :attr:`Delivery.long_running` excepted); the others are *held*, in arrival order;
* while our write buffer is over its high-water mark no request starts (its answer would only
  add to the buffer): they start when it drains (the driver watches it, and disconnects a peer
  that takes nothing of a full buffer for ``stalled_peer_timeout`` seconds);
* reading stops while more than ``max_queued_notifications`` wait for the consumer, or once
  more than ``max_held_bytes`` (the write buffer's high-water mark) were read while requests
  are held.

The decisions: the :class:`Signal` values, which carry nothing (the driver knows what they are
about), and three small records: :class:`Refuse`, :class:`Settle` and :class:`Cancel`.
Engine events are handed over as they are, their type saying what to do with them:
:meth:`Delivery.release` returns the held ``IncomingRequest`` values that may start now (start
each), and :meth:`Delivery.take` what waits in the queue: a notification (an
``IncomingNotification``, or the ``bytes`` of one whose decoding the engine deferred) to handle
now, or an ``IncomingRequest`` whose turn has come, to :meth:`admit`. The common cases (deliver
now, start now, settle now, queued, a held request released as another ends) allocate no
decision. The records are values: the driver reads them, nothing changes them.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any, Final

from .._record import Record
from ..errors import InternalError, RequestCancelled, RequestError
from ..rpc.engine import IncomingRequest, IncomingResponse

__all__ = [
    "END_OF_INPUT", "HOLD", "IDLE", "PAUSE_READING", "QUEUED", "QUEUE_FULL", "RELEASE", "RESUME_READING", "SETTLE",
    "START", "WATCH_WRITES", "Cancel", "Decision", "Delivery", "Refuse", "Settle", "Signal",
]


class Signal:
    """A decision that carries nothing: a named constant, compared with ``is``. (Not an
    ``enum.Enum``: creating an enum class costs every agent's start-up more than these
    eleven objects.)"""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: start the request just given to :meth:`Delivery.request` / :meth:`Delivery.admit`
START: Final = Signal("START")
#: the request just given waits (backpressure); a later :meth:`Delivery.release` starts it
HOLD: Final = Signal("HOLD")
#: settle the response just given to :meth:`Delivery.response` now: nothing waits before it
SETTLE: Final = Signal("SETTLE")
#: it waits in the queue behind what arrived before it: wake the consumer
QUEUED: Final = Signal("QUEUED")
#: as QUEUED, and now more than ``max_queued_notifications`` wait: also stop reading
QUEUE_FULL: Final = Signal("QUEUE_FULL")
#: stop reading (bytes read while requests are held passed the limit)
PAUSE_READING: Final = Signal("PAUSE_READING")
#: read again
RESUME_READING: Final = Signal("RESUME_READING")
#: held requests wait for the write buffer to drain: watch it, then :meth:`Delivery.release`
WATCH_WRITES: Final = Signal("WATCH_WRITES")
#: requests are held and may start now: ask :meth:`Delivery.release` (with the buffer's state)
RELEASE: Final = Signal("RELEASE")
#: nothing to deliver: the consumer waits for the next arrival
IDLE: Final = Signal("IDLE")
#: everything before the peer's end of input was delivered: handle the end now
END_OF_INPUT: Final = Signal("END_OF_INPUT")


# The records are Records (compared and shown by value, like the engine's events), not
# dataclasses: nothing is generated when acplink is imported (an agent's start-up counts).


class Refuse(Record):
    """Answer inbound request ``id`` with ``error``; it does not run."""

    __match_args__ = ("id", "error")
    __slots__ = ("error", "id")

    def __init__(self, id: int | str, error: RequestError) -> None:
        self.id = id
        self.error = error


class Settle(Record):
    """Settle the caller's ``future`` with ``event`` (through its result ``hook``): the
    notifications that arrived before this response were handled."""

    __match_args__ = ("future", "event", "hook")
    __slots__ = ("event", "future", "hook")

    def __init__(self, future: Any, event: IncomingResponse, hook: Any) -> None:
        self.future = future
        self.event = event
        self.hook = hook


class Cancel(Record):
    """Cancel running request ``id`` (``$/cancel_request``): its handler sees ``CancelledError``."""

    __slots__ = ("id",)

    def __init__(self, id: int | str) -> None:
        self.id = id


#: what the driver may be told to do (an ``IncomingRequest`` from :meth:`Delivery.release`: start it)
Decision = Signal | IncomingRequest | Refuse | Settle | Cancel

_NOTHING: Final[tuple[Decision, ...]] = ()


def _duplicate(rid: int | str) -> Refuse:
    return Refuse(rid, RequestError(f"Invalid request: duplicate request id {rid!r}", code=-32600))


class Delivery:
    """The inbound side of one connection (see the module doc)."""

    def __init__(self, *, max_concurrent_requests: int = 10_000, max_running_requests: int = 16,
                 max_queued_notifications: int = 10_000, max_held_bytes: int = 4 * 1024 * 1024,
                 long_running: frozenset[str] = frozenset()) -> None:
        self.max_concurrent_requests = max_concurrent_requests
        self.max_running_requests = max_running_requests
        self.max_queued_notifications = max_queued_notifications
        self.max_held_bytes = max_held_bytes
        #: reading, paused for the queue, resumes once no more than half the limit wait
        #: (checked before the next item leaves the queue: hence the + 1)
        self._resume_at = max_queued_notifications // 2 + 1
        #: wire methods that may wait a long time on something outside this connection (the
        #: user, a process, the model): they take no ``max_running_requests`` slot, so that a
        #: few dozen of them waiting cannot hold back a quick request they depend on
        #: (``terminal/kill`` ending a ``terminal/wait_for_exit``). Their answers are small.
        #: The protocol in use says which (``Protocol.long_running``); a connection updates it
        #: when ``initialize`` selects another version.
        self.long_running = long_running
        #: what waits for the consumer: notifications (deferred ones as bytes), requests,
        #: responses (Settle), the end of input (END_OF_INPUT). The driver may append deferred
        #: notifications itself, then call :meth:`queued`.
        self.queue: collections.deque[Any] = collections.deque()
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
        #: id -> whether it is long-running, of the inbound requests started and not ended
        self.running: dict[int | str, bool] = {}
        #: how many of them count toward max_running_requests
        self.busy = 0

    @property
    def idle(self) -> bool:
        """Nothing waits for the consumer and it handles nothing."""
        return not self.queue and not self.consumer_busy

    def shut(self) -> None:
        """The connection closed: nothing held starts any more."""
        self.closed = True
        self.held.clear()
        self._held_order.clear()

    # -- arrivals ------------------------------------------------------------------------------

    def enqueue(self, item: Any) -> Signal:
        """A notification (or the bytes of a deferred one): QUEUED or QUEUE_FULL."""
        self.queue.append(item)
        return self.queued()

    def queued(self) -> Signal:
        """After something joined the queue: QUEUED, or QUEUE_FULL when it is now past the limit."""
        if not self.reading_paused and len(self.queue) > self.max_queued_notifications:
            self.reading_paused = True
            return QUEUE_FULL
        return QUEUED

    def response(self, future: Any, event: IncomingResponse, hook: Any) -> Signal:
        """A response to one of our calls: SETTLE now, or QUEUED behind the notifications."""
        if not self.queue and not self.consumer_busy:
            return SETTLE
        self.queue.append(Settle(future, event, hook))
        return QUEUED

    def request(self, ev: IncomingRequest, writing_paused: bool) -> Decision:
        """An inbound request: what :meth:`admit` decides, or QUEUED / QUEUE_FULL behind the
        notifications that arrived before it (:meth:`take` hands it back when its turn comes)."""
        if self.queue or self.consumer_busy:
            if ev.id in self.queued_requests:
                return _duplicate(ev.id)
            self.queued_requests[ev.id] = ev
            self.queue.append(ev)
            return self.queued()
        return self.admit(ev, writing_paused)

    def end_of_input(self) -> Signal:
        """The peer's input ended: END_OF_INPUT now, or QUEUED behind what waits (:meth:`take`
        returns END_OF_INPUT after it)."""
        if self.queue or self.consumer_busy:
            self.queue.append(END_OF_INPUT)
            return QUEUED
        return END_OF_INPUT

    def read(self, n: int) -> Signal | None:
        """``n`` bytes were read while requests are held: PAUSE_READING once past the limit
        (until they have all started: memory stays bounded whatever the peer sends)."""
        self.held_bytes += n
        if not self.held_paused and self.held_bytes > self.max_held_bytes:
            self.held_paused = True
            return PAUSE_READING
        return None

    # -- the consumer --------------------------------------------------------------------------

    def take(self) -> Any:
        """What the consumer does next: handle a notification (an ``IncomingNotification``, or
        ``bytes`` to decode first), :meth:`admit` an ``IncomingRequest`` (its turn in the order
        is now), a :class:`Settle`, RESUME_READING, END_OF_INPUT, or IDLE (wait for more)."""
        queue = self.queue
        while queue:
            self.consumer_busy = True
            if self.reading_paused and len(queue) <= self._resume_at:
                self.reading_paused = False
                if not self.held_paused:
                    return RESUME_READING
            item = queue.popleft()
            if type(item) is IncomingRequest:
                if self.queued_requests.get(item.id) is not item:
                    continue  # (cancelled while it waited)
                del self.queued_requests[item.id]
            elif item is END_OF_INPUT:
                self.consumer_busy = False
            return item
        self.consumer_busy = False
        return IDLE

    # -- admission -----------------------------------------------------------------------------

    def admit(self, ev: IncomingRequest, writing_paused: bool) -> Decision:
        """An inbound request whose turn has come: START, HOLD (max_running_requests run
        already, or ``writing_paused``: the peer is not taking our output), or a Refuse.

        ``writing_paused`` matters only while nothing is held (behind a held request a new one
        is held whatever the buffer): the driver need not look at its transport then (it
        passes False)."""
        rid = ev.id
        held = self.held
        running = self.running
        limit = self.max_concurrent_requests
        if len(running) + len(held) >= limit:
            return Refuse(rid, InternalError(f"too many concurrent requests (limit {limit})"))
        if rid in running or rid in held:
            return _duplicate(rid)
        if held or writing_paused or (self.busy >= self.max_running_requests and ev.method not in self.long_running):
            held[rid] = ev  # (behind the ones already waiting: arrival order is kept)
            self._held_order.append(ev)
            return HOLD
        if ev.method in self.long_running:
            running[rid] = True
        else:
            running[rid] = False
            self.busy += 1
        return START

    def release(self, writing_paused: bool) -> Decision | list[Decision] | None:
        """The held requests that may start now, in arrival order (each ``IncomingRequest``
        itself: start it); WATCH_WRITES while ``writing_paused``; RESUME_READING (last) when
        reading was paused for them. One decision comes alone (the common case: a request
        ended and the first held one takes its slot), several as a list, none as None."""
        held = self.held
        order = self._held_order
        first: Decision | None = None
        more: list[Decision] | None = None  # (all of them, once a second one starts)
        if held and not self.closed:
            if writing_paused:
                return WATCH_WRITES  # (the driver releases them when the buffer drains)
            limit = self.max_running_requests
            long_running = self.long_running
            running = self.running
            while held:
                ev = order[0]
                rid = ev.id
                if held.get(rid) is not ev:  # (cancelled while held)
                    order.popleft()
                    continue
                if ev.method in long_running:
                    running[rid] = True
                elif self.busy < limit:
                    running[rid] = False
                    self.busy += 1
                else:
                    return first if more is None else more  # (the others wait for the next slot)
                order.popleft()
                del held[rid]
                if first is None:
                    first = ev
                elif more is None:
                    more = [first, ev]
                else:
                    more.append(ev)
        if not held:
            order.clear()
        resume = self._unheld()
        if resume is None:
            return first if more is None else more
        if first is None:
            return resume
        if more is None:
            return [first, resume]
        more.append(resume)
        return more

    def _unheld(self) -> Signal | None:
        """Nothing is held any more (or nothing will start): RESUME_READING when reading was
        paused for them (and not for the queue too)."""
        self.held_bytes = 0
        if self.held_paused:
            self.held_paused = False
            if not self.reading_paused:
                return RESUME_READING
        return None

    def request_ended(self, rid: int | str) -> Signal | None:
        """Inbound request ``rid`` ended: RELEASE when requests are held (one may start now)."""
        if not self.running.pop(rid, False):
            self.busy -= 1
        return RELEASE if self.held else None

    def cancel(self, rid: int | str) -> Sequence[Decision]:
        """``$/cancel_request`` for ``rid``: a request not started yet is refused at once (a
        Refuse with RequestCancelled); a running one gets a :class:`Cancel`."""
        if self.held.pop(rid, None) is not None or self.queued_requests.pop(rid, None) is not None:
            out: list[Decision] = [Refuse(rid, RequestCancelled("Request cancelled"))]
            if not self.held:
                self._held_order.clear()
                if (resume := self._unheld()) is not None:
                    out.append(resume)
            elif len(self._held_order) > 2 * len(self.held) + 64:  # (cancelled ones: keep it bounded)
                self._held_order = collections.deque(self.held.values())
            return out
        if rid in self.running:
            return [Cancel(rid)]
        return _NOTHING
