"""Relaying an inbound request to another connection, without a task.

A proxy or a conductor that passes a request on unchanged does not need a coroutine for it:
the request is written to the next connection in the step that read it, and the answer is
written back in the step that read the answer (a :class:`Relayed` stands in for the future of
the call on the next connection: :class:`~acplink.connection._calls.Calls` settles it as it
would settle a caller's future, in the connection's order, behind the notifications that came
before the answer). A dispatcher that may relay has a ``route_request(method, params)`` method
returning a :class:`Route` (or None: the request runs in a task as any other).

What a relayed request means does not change: its answer comes back unchanged (an error of the
next connection itself is mapped by the route's ``on_error``, as the dispatcher would have);
a ``$/cancel_request`` for it cancels exactly the request it caused on the next connection and
its answer is still awaited, ``CANCEL_GRACE`` seconds, before ``-32800`` is answered; when the
connection it came from closes, the request it caused is cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from ..errors import AcpError, RequestCancelled, RequestError
from ..rpc.engine import IncomingRequest
from ._failures import failure_answer

if TYPE_CHECKING:
    from .peer import Peer

__all__ = ["CANCEL_GRACE", "Relayed", "Route", "abandon_all", "cancel", "relay"]

#: how long a relay (or a forwarder) waits for the answer to a request it cancelled on the next
#: hop before it answers ``-32800`` itself
CANCEL_GRACE = 3.0


class Route(NamedTuple):
    """Where an inbound request goes: ``target`` (which may be the connection it came from: a
    proxy's one connection to its conductor), as ``method`` with ``params`` (JSON bytes)."""

    target: Peer
    method: str
    params: bytes | None
    #: what the source answers when the target connection fails the call (closed, lost) rather
    #: than the peer answering it; None: that error as a handler's failure
    on_error: Callable[[BaseException], BaseException] | None = None


class Relayed:
    """One relayed request: the stand-in for its call's future on the target connection."""

    __slots__ = ("_ended", "cancelling", "finished", "method", "on_error", "out_id", "rid", "source",
                 "target", "timer")

    def __init__(self, source: Peer, ev: IncomingRequest, target: Peer, on_error: Any) -> None:
        self.source = source
        self.rid = ev.id
        self.method = ev.method
        self.target = target
        self.on_error = on_error
        self.out_id: int | str = 0
        self.finished = False
        self.cancelling = False
        self.timer: asyncio.TimerHandle | None = None
        self._ended: asyncio.Future[None] | None = None

    # (what Calls and resolve() use of a caller's future)
    def done(self) -> bool:
        return self.finished

    def set_result(self, value: Any) -> None:
        _answered(self, value, None)

    def set_exception(self, exc: BaseException) -> None:
        _answered(self, None, exc)

    def ended(self) -> asyncio.Future[None]:
        """A future done once the answer was written (for a closing connection to wait on)."""
        if self._ended is None:
            self._ended = asyncio.get_running_loop().create_future()
            if self.finished:
                self._ended.set_result(None)
        return self._ended


def relay(source: Peer, ev: IncomingRequest, route: Route) -> bool:
    """Send ``ev`` on along ``route`` (False: it cannot go so now; run it in a task)."""
    target = route.target
    if (target.closed or target.telemetry is not None or target.transport.writing_paused
            or target.engine.awaited >= target.calls.limit):
        return False  # (the task path waits for the slot or the drain, and says what failed)
    try:
        out_id, data = target.engine.request(route.method, route.params)
    except AcpError:  # (too large for the target: the task path answers why)
        return False
    r = Relayed(source, ev, target, route.on_error)
    r.out_id = out_id
    target.calls.futures[r.out_id] = r  # type: ignore[assignment]
    source.relays[ev.id] = r
    written = target._write(data)  # (a failed write fails the call: answered at once)
    if isinstance(written, Coroutine):
        written.close()  # (over the high-water mark now: the next request takes the task path)
    return True


def _finish(r: Relayed) -> bool:
    """End the relay (False: it had ended already): no timer, no entry, its waiters woken."""
    if r.finished:
        return False
    r.finished = True
    if r.timer is not None:
        r.timer.cancel()
    r.source.relays.pop(r.rid, None)
    if r._ended is not None and not r._ended.done():
        r._ended.set_result(None)
    return True


def _answered(r: Relayed, value: Any, exc: BaseException | None) -> None:
    """The target settled the call: answer the source's request with what came back."""
    if not _finish(r):
        return
    source = r.source
    try:
        if exc is not None:
            raise exc
        data = source.engine.result(r.rid, orjson.dumps(value))
    except Exception as err:
        if not isinstance(err, RequestError) and r.on_error is not None:
            err = r.on_error(err)
        answer = err if isinstance(err, RequestError) else failure_answer(
            err, r.method, source.name, source.debug, source.closed)
        data = source.engine.error(r.rid, answer)
    source.relay_answered(r.rid, data)


def cancel(r: Relayed) -> None:
    """``$/cancel_request`` for the relayed request: cancel the one it caused on the target,
    and still take its answer for ``CANCEL_GRACE`` seconds (then answer ``-32800``)."""
    if r.finished or r.cancelling:
        return
    r.cancelling = True
    target = r.target
    if target.closed:
        _answered(r, None, RequestCancelled("Request cancelled"))
        return
    from .peer import CANCEL_REQUEST  # (peer.py names it; it imports this module)

    written = target.notify(CANCEL_REQUEST, orjson.dumps({"requestId": r.out_id}))
    if isinstance(written, Coroutine):
        written.close()
    r.timer = asyncio.get_running_loop().call_later(CANCEL_GRACE, _give_up, r)


def _give_up(r: Relayed) -> None:
    r.timer = None
    if not r.finished:
        r.target.calls.abandon(r.out_id)
        r.target.calls.close(r.out_id)
        _answered(r, None, RequestCancelled("Request cancelled"))


def abandon_all(source: Peer) -> None:
    """The source connection closed: the requests its relays caused are cancelled."""
    for r in list(source.relays.values()):
        _finish(r)
        r.target.end_call(r.out_id)  # (a closed target: nothing is written)
