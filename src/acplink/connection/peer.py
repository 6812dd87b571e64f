"""The async driver: binds the sans-I/O engine to a transport.

One :class:`Peer` per connection owns every task it starts (one per inbound request, plus one
ordered consumer for notifications), and closing it cancels and awaits them all.

Ordering: notifications are handled one at a time in arrival order; a response is delivered to
its caller only after every notification that arrived before it has been handled, so the reply
to ``session/prompt`` never overtakes the ``session/update`` notifications of its turn.
Requests run concurrently. A call may carry a result hook (``request(..., on_result=f)``):
``f`` runs on the result at that same point, before any later message is handled (the client
registers the session a ``session/new`` result opens there, so that an update written right
behind the response finds it).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Protocol

import orjson

from ..errors import (
    AcpError,
    CapabilityError,
    ConnectionClosed,
    InternalError,
    MessageTooLarge,
    PeerOutputNotJson,
    ProtocolError,
    RequestCancelled,
    RequestError,
    RequestTimeout,
    TransportError,
    UsageError,
)
from ..rpc.engine import Engine, IncomingNotification, IncomingRequest, IncomingResponse, Violation
from ..rpc.framing import DEFAULT_MAX_MESSAGE_SIZE
from ..transports.base import MessageMeta, Transport
from ._noise import BadInput, WarningLimiter

__all__ = ["Dispatcher", "Peer", "PeerLimits"]

log = logging.getLogger("acplink.rpc")

CANCEL_REQUEST = "$/cancel_request"

#: requests that may wait a long time on something outside this connection (the user, a
#: process, the model): they take no ``max_running_requests`` slot, so that a few dozen of
#: them waiting cannot hold back a quick request they depend on (``terminal/kill`` ending a
#: ``terminal/wait_for_exit``). Their answers are small.
LONG_RUNNING = frozenset({"session/prompt", "session/request_permission", "terminal/wait_for_exit",
                          "elicitation/create"})


class Dispatcher(Protocol):
    """What a peer hands inbound traffic to (the typed connection layer)."""

    async def handle_request(self, method: str, params: Any) -> bytes:
        """Handle one request; return the result as JSON bytes or raise an AcpError."""
        ...

    def handle_notification(self, method: str, params: Any, typed: bool = False) -> Awaitable[None]: ...


class PeerLimits:
    """Resource limits of one connection (all configurable, all with safe defaults).

    Backpressure: above ``write_buffer_high`` bytes waiting for the peer, writers wait until
    the buffer is down to ``write_buffer_low`` (default a quarter of the high mark) and new
    inbound requests are held back (not run) until then. At most ``max_running_requests``
    inbound requests run at once (the long-waiting ones in :data:`LONG_RUNNING` excepted);
    the others wait their turn in arrival order. Once more than ``write_buffer_high`` bytes
    were read while requests wait, reading stops until they have all started. A peer that
    takes nothing of a full buffer for ``stalled_peer_timeout`` seconds (``None``: never) is
    disconnected: every call fails with ``ConnectionClosed`` "… the peer stopped reading …".
    """

    def __init__(
        self,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_pending_requests: int = 10_000,
        max_concurrent_requests: int = 10_000,
        max_queued_notifications: int = 10_000,
        write_buffer_high: int = 4 * 1024 * 1024,
        write_buffer_low: int | None = None,
        max_running_requests: int = 16,
        stalled_peer_timeout: float | None = 60.0,
        max_bad_lines: int | None = 1000,
        max_bad_lines_at_start: int | None = 100,
    ) -> None:
        self.max_message_size = max_message_size
        self.max_pending_requests = max_pending_requests
        self.max_concurrent_requests = max_concurrent_requests
        self.max_queued_notifications = max_queued_notifications
        self.write_buffer_high = write_buffer_high
        self.write_buffer_low = write_buffer_high // 4 if write_buffer_low is None else write_buffer_low
        self.max_running_requests = max_running_requests
        self.stalled_peer_timeout = stalled_peer_timeout
        #: give up on a peer (PeerOutputNotJson) after this many bad lines (not JSON, not
        #: JSON-RPC) in a row; before its first valid message, after ``max_bad_lines_at_start``
        self.max_bad_lines = max_bad_lines
        self.max_bad_lines_at_start = max_bad_lines_at_start


class Peer:
    """A JSON-RPC connection to one peer over one transport."""

    def __init__(
        self,
        transport: Transport,
        dispatcher: Dispatcher,
        *,
        limits: PeerLimits | None = None,
        skip_noise: bool = False,
        debug: bool = False,
        name: str = "peer",
    ) -> None:
        self.transport = transport
        self.dispatcher = dispatcher
        self.limits = limits or PeerLimits()
        self.engine = Engine(max_message_size=self.limits.max_message_size, skip_noise=skip_noise,
                             max_pending=self.limits.max_pending_requests)
        self.debug = debug
        self.name = name
        self._futures: dict[int | str, asyncio.Future[Any]] = {}
        #: id -> result hook of the calls that have one (see :meth:`request`)
        self._hooks: dict[int | str, Callable[[Any], Any]] = {}
        self._inbound: dict[int | str, asyncio.Task[None]] = {}
        self._queue: collections.deque[IncomingNotification | IncomingRequest | bytes | _Resolution | object] = collections.deque()
        self._queue_wakeup: asyncio.Event | None = None
        self._consumer: asyncio.Task[None] | None = None
        self._consumer_busy = False
        self._reading_paused = False
        self._closed = False
        self._closed_event: asyncio.Event | None = None
        self._started = False
        self._eof = False
        self._eof_task: asyncio.Task[None] | None = None
        #: seconds the requests received before the peer's end of input may take to answer
        self.eof_grace = 1.0
        #: callers waiting for a free slot when max_pending_requests calls are outstanding
        self._slot_waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        # backpressure (see PeerLimits): inbound requests not started yet, in arrival order;
        # bytes read while some wait; reading paused for them; requests running that count
        # toward max_running_requests; bytes handed to the transport; the task that runs
        # while the write buffer is over its high-water mark
        self._held: dict[int | str, IncomingRequest] = {}
        #: inbound requests waiting in the ordered queue for the notifications before them
        self._queued_requests: dict[int | str, IncomingRequest] = {}
        self._held_bytes = 0
        self._held_paused = False
        self._busy = 0
        self._long: set[int | str] = set()
        self._sent_bytes = 0
        self._watch: asyncio.Task[None] | None = None
        self._stall_message: str | None = None
        self._bad = BadInput(self.limits.max_bad_lines, self.limits.max_bad_lines_at_start)
        #: True until the first valid message, and after each bad line: only then does a valid
        #: message have bookkeeping to do (one attribute test per message on the hot path)
        self._expect_good = True
        self._warnings = WarningLimiter(log, name)
        #: why the connection closed, when it gave up on the peer (a PeerOutputNotJson)
        self.close_reason: BaseException | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._queue_wakeup = asyncio.Event()
        self._closed_event = asyncio.Event()
        self._consumer = asyncio.create_task(self._consume(), name=f"acplink-{self.name}-ordered")
        try:
            await self.transport.start(self)
        except BaseException:
            await self.aclose()
            raise
        self.transport.set_write_buffer_limits(self.limits.write_buffer_high, self.limits.write_buffer_low)

    @property
    def closed(self) -> bool:
        return self._closed

    async def wait_closed(self) -> None:
        """Wait until the peer hangs up (or :meth:`aclose` is called)."""
        assert self._closed_event is not None, "peer not started"
        await self._closed_event.wait()

    def _mark_closed(self, reason: BaseException | None) -> None:
        if self._closed:
            return
        self._closed = True
        self._warnings.flush()
        self._fail_futures(reason if isinstance(reason, PeerOutputNotJson) else ConnectionClosed(
            f"connection to {self.transport.description} closed" + (f": {reason}" if reason else "")))
        self._hooks.clear()
        self.engine.pending.clear()
        for waiter in self._slot_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._slot_waiters.clear()
        if self._closed_event is not None:
            self._closed_event.set()

    def _fail_futures(self, err: BaseException) -> None:
        """Fail every call still waiting for a response."""
        for fut in self._futures.values():
            if not fut.done():
                fut.set_exception(err)
        self._futures.clear()

    async def aclose(self) -> None:
        """Close the transport, fail pending calls, cancel and await every owned task."""
        self.transport.flush()  # what we already sent (e.g. final responses) still goes out
        self._mark_closed(None)
        tasks = [t for t in self._inbound.values() if not t.done()]
        if self._consumer is not None and not self._consumer.done():
            tasks.append(self._consumer)
        if self._eof_task is not None and not self._eof_task.done():
            tasks.append(self._eof_task)
        if self._watch is not None and not self._watch.done():
            tasks.append(self._watch)
        self._held.clear()
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._inbound.clear()
        try:
            await self.transport.aclose()
        except (OSError, AcpError):
            pass

    # -- transport sink ------------------------------------------------------------------------

    def message_received(self, message: bytes, meta: MessageMeta | None) -> None:
        """A framed transport's whole message (``meta`` routes replies inside the transport;
        nothing here needs it)."""
        if self._closed:  # (e.g. it gave up on the peer)
            return
        self._handle_event(self.engine.receive_frame(message))  # (hot notifications deferred)
        if self._held:
            self._count_held(len(message))

    def data_received(self, data: bytes) -> None:
        if self._closed:  # (e.g. it gave up on the peer: what is left in the pipe is not read)
            return
        if self.transport.framed:  # (a framed transport that hands over chunks: one message each)
            self.message_received(data, None)
            return
        queued = False
        queue = self._queue
        for event in self.engine.receive(data):
            if type(event) is bytes:
                queue.append(event)  # a deferred notification (never $/cancel_request)
                queued = True
                if self._expect_good:
                    self._good()
            else:
                self._handle_event(event)
                if self._closed:  # (it gave up on the peer)
                    break
        if queued:
            self._queued()
        if self._held:
            self._count_held(len(data))

    def eof_received(self, exc: BaseException | None) -> None:
        if self._closed or self._eof:
            return
        self._eof = True
        for event in self.engine.receive_eof():
            self._handle_event(event)
        # responses/notifications already queued are still delivered in order; then close
        if self._queue or self._consumer_busy:
            self._queue.append(_EOF)
            self._wake()
        else:
            self._end_of_input(exc)

    def _end_of_input(self, exc: BaseException | None) -> None:
        """The peer sent its last byte. Requests it already sent may still be answered (within
        ``eof_grace`` seconds, e.g. ``agent < requests.jsonl``); nothing it could answer can
        arrive any more, so our own pending calls fail now."""
        self.transport.flush()  # answers already made still go out
        inbound = [t for t in self._inbound.values() if not t.done()]
        if exc is not None or not (inbound or self._held) or self.eof_grace <= 0:
            self._mark_closed(exc)
            return
        self._fail_futures(ConnectionClosed(f"connection to {self.transport.description} closed by the peer"))

        async def finish() -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.eof_grace
            # the requests held back (backpressure) start as others end: wait for them too
            while (left := deadline - loop.time()) > 0:
                running = [t for t in self._inbound.values() if not t.done()]
                if running:
                    await asyncio.wait(running, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                elif self._held:
                    await asyncio.sleep(min(left, 0.05))
                else:
                    break
            self.transport.flush()
            self._mark_closed(None)

        self._eof_task = asyncio.get_running_loop().create_task(finish())

    def _handle_event(self, ev: Any) -> None:
        t = type(ev)
        if self._expect_good and t is not Violation:
            self._good()
        if t is bytes:  # a deferred notification (see Engine.receive)
            self._enqueue(ev)
        elif t is IncomingNotification:
            if ev.method == CANCEL_REQUEST:
                self._cancel_inbound(ev.params)
                return
            self._enqueue(ev)
        elif t is IncomingResponse:
            fut = self._futures.pop(ev.id, None)
            if fut is None:
                return  # a call given up on: its slot was freed then
            if self._slot_waiters:
                self._free_slot()
            hook = self._hooks.pop(ev.id, None) if self._hooks else None
            if not self._queue and not self._consumer_busy:
                _resolve(fut, ev, hook)
            else:
                self._queue.append(_Resolution(fut, ev, hook))
                self._wake()
        elif t is IncomingRequest:
            if self._queue or self._consumer_busy:
                # after the notifications that came before it: a request is answered in the
                # state they made (the tool call a permission question names is known by then)
                if ev.id in self._queued_requests:
                    self._reply_error(ev.id, RequestError(
                        f"Invalid request: duplicate request id {ev.id!r}", code=-32600))
                    return
                self._queued_requests[ev.id] = ev
                self._queue.append(ev)
                self._queued()
                return
            self._admit(ev)
        else:
            self._violation(ev)

    def _admit(self, ev: IncomingRequest) -> None:
        """Start an inbound request (or hold it back, see :meth:`_must_hold`)."""
        held = self._held
        if len(self._inbound) + len(held) >= self.limits.max_concurrent_requests:
            err = InternalError(f"too many concurrent requests (limit {self.limits.max_concurrent_requests})")
            self._reply_error(ev.id, err)
            return
        if ev.id in self._inbound or ev.id in held:
            self._reply_error(ev.id, RequestError(
                f"Invalid request: duplicate request id {ev.id!r}", code=-32600))
            return
        if held or self._must_hold(ev.method):
            held[ev.id] = ev  # (behind the ones already waiting: arrival order is kept)
            return
        self._dispatch(ev)

    def _dispatch(self, ev: IncomingRequest) -> None:
        if ev.method in LONG_RUNNING:
            self._long.add(ev.id)
        else:
            self._busy += 1
        task = asyncio.get_running_loop().create_task(self._run_request(ev))
        if not task.done():  # (an eager task factory may have run it to the end already)
            self._inbound[ev.id] = task

    # -- backpressure --------------------------------------------------------------------------

    def _must_hold(self, method: str) -> bool:
        """A new inbound request waits: the peer is not taking our output (its answer would
        only add to the buffer), or max_running_requests are running already."""
        return self.transport.writing_paused or (
            self._busy >= self.limits.max_running_requests and method not in LONG_RUNNING)

    def _release(self) -> None:
        """Start the held requests that may run now, in arrival order."""
        held = self._held
        while held and not self._closed:
            ev = held[next(iter(held))]
            if self._must_hold(ev.method):
                if self.transport.writing_paused:
                    self._watch_writes()  # (it releases them when the buffer drains)
                return
            del held[ev.id]
            self._dispatch(ev)
        self._held_bytes = 0
        if self._held_paused:
            self._held_paused = False
            if not self._reading_paused:
                self.transport.resume_reading()

    def _count_held(self, n: int) -> None:
        """``n`` bytes were read while requests wait: past the high-water mark, stop reading
        until they have all started (memory stays bounded whatever the peer sends)."""
        self._held_bytes += n
        if not self._held_paused and self._held_bytes > self.limits.write_buffer_high:
            self._held_paused = True
            self.transport.pause_reading()

    def _watch_writes(self) -> None:
        if self._watch is None and not self._closed:
            self._watch = asyncio.get_running_loop().create_task(
                self._watch_congestion(), name=f"acplink-{self.name}-backpressure")

    async def _watch_congestion(self) -> None:
        """Runs while the write buffer is over its high-water mark: starts the held requests
        once it drains; disconnects a peer that takes nothing for stalled_peer_timeout s."""
        transport = self.transport
        timeout = self.limits.stalled_peer_timeout
        drained = asyncio.ensure_future(transport.drain())
        try:
            while True:
                taken = self._sent_bytes - transport.write_buffer_size()  # by the peer, so far
                done, _ = await asyncio.wait((drained,), timeout=timeout)
                if done:
                    break
                if timeout is not None and self._sent_bytes - transport.write_buffer_size() == taken:
                    self._stalled(timeout)
                    return
        finally:
            if not drained.done():
                drained.cancel()
                await asyncio.gather(drained, return_exceptions=True)
            self._watch = None
        if not drained.cancelled() and drained.exception() is None:
            self._release()

    def _stalled(self, timeout: float) -> None:
        size = self.transport.write_buffer_size()
        self._stall_message = (f"the peer stopped reading: it took nothing of the {size} bytes waiting "
                               f"for it in {timeout:g} s")
        log.warning("%s: %s; disconnecting", self.name, self._stall_message)
        self._held.clear()
        self._mark_closed(ConnectionClosed(self._stall_message))
        self.transport.pause_reading()  # (nothing it sends could be answered)
        self.transport.abort_writing()  # (drops the buffer; writers waiting fail)

    def warn_bad_input(self, message: str) -> None:
        """Log a warning about the peer's input, rate-limited with the connection's others."""
        self._warnings.warn(message)

    def _good(self) -> None:
        """A valid message after bad lines, or the first one."""
        self._expect_good = False
        note = self._bad.valid()
        if note is not None:
            self._warnings.warn(note)

    def _violation(self, v: Violation) -> None:
        if self._bad.seen_valid:  # (bad lines before the first message: one warning, or the give-up)
            self._warnings.warn(v.message if v.noise else f"protocol violation: {v.message}")
        self._expect_good = True
        give_up = self._bad.bad(v.message)
        if give_up is not None:
            self._give_up(PeerOutputNotJson(give_up))
            return
        if v.reply is not None:
            self._write_quiet(v.reply)
        if v.pending_id is not None:
            self._free_slot()
            fut = self._futures.pop(v.pending_id, None)
            if fut is not None and not fut.done():
                fut.set_exception(v.error or InternalError(v.message))

    def _closed_error(self) -> ConnectionClosed | PeerOutputNotJson:
        """What a call on the closed connection raises: why it gave up on the peer, if it did."""
        if isinstance(self.close_reason, PeerOutputNotJson):
            return PeerOutputNotJson(str(self.close_reason))
        if self._stall_message is not None:
            return self._stalled_error()
        return ConnectionClosed(f"connection to {self.transport.description} is closed")

    def _give_up(self, err: PeerOutputNotJson) -> None:
        """The peer does not speak JSON-RPC: stop reading it (its output can pile up in the
        pipe, not in memory) and close; every pending and later call fails with ``err``."""
        if self._closed:
            return
        self.close_reason = err
        log.debug("%s: %s", self.name, err)
        self.transport.pause_reading()
        self._mark_closed(err)

    def _enqueue(self, item: IncomingNotification | bytes) -> None:
        self._queue.append(item)
        self._queued()

    def _queued(self) -> None:
        """After queueing: wake the consumer; past the limit, stop reading (backpressure)."""
        self._wake()
        if not self._reading_paused and len(self._queue) > self.limits.max_queued_notifications:
            self._reading_paused = True
            self.transport.pause_reading()

    def _wake(self) -> None:
        w = self._queue_wakeup
        if w is not None and not w.is_set():
            w.set()

    async def _consume(self) -> None:
        queue = self._queue
        wakeup = self._queue_wakeup
        assert wakeup is not None
        handle = self.dispatcher.handle_notification
        decode = self.engine.decode_deferred
        low = self.limits.max_queued_notifications // 2
        while True:
            if not queue:
                self._consumer_busy = False
                wakeup.clear()
                await wakeup.wait()
                continue
            self._consumer_busy = True
            while queue:
                item = queue.popleft()
                if self._reading_paused and len(queue) <= low:
                    self._reading_paused = False
                    if not self._held_paused:
                        self.transport.resume_reading()
                if type(item) is bytes:
                    # decoded now, not on arrival: the model lives only while it is handled
                    item = decode(item)
                    if type(item) is IncomingRequest:  # (its turn in the order is now)
                        self._admit(item)
                        continue
                    if type(item) is not IncomingNotification:  # a broken line
                        self._handle_event(item)
                        continue
                if type(item) is IncomingNotification:
                    try:
                        await handle(item.method, item.params, item.typed)
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:
                        if self.debug or not isinstance(exc, AcpError):
                            log.warning("%s: notification handler for %s failed: %s", self.name, item.method, exc,
                                        exc_info=True)
                        else:  # (bad input from the peer: rate-limited)
                            self._warnings.warn(f"notification handler for {item.method} failed: {exc}")
                elif isinstance(item, _Resolution):
                    _resolve(item.future, item.event, item.hook)
                elif type(item) is IncomingRequest:
                    if self._queued_requests.get(item.id) is item:  # (not cancelled meanwhile)
                        del self._queued_requests[item.id]
                        self._admit(item)
                else:  # EOF marker
                    self._consumer_busy = False
                    self._end_of_input(None)
                    return

    # -- inbound requests ----------------------------------------------------------------------

    def _cancel_inbound(self, params: Any) -> None:
        rid = params.get("requestId") if isinstance(params, dict) else None
        if not isinstance(rid, (int, str)):
            return
        if self._held.pop(rid, None) is not None or self._queued_requests.pop(rid, None) is not None:
            # never started: answered at once
            self._reply_error(rid, RequestCancelled("Request cancelled"))
            if not self._held:
                self._release()
            return
        task = self._inbound.get(rid)
        if task is not None and not task.done():
            task.cancel(msg=_CANCELLED_BY_PEER)
            task.add_done_callback(functools.partial(self._request_done, rid))

    def _request_done(self, rid: int | str, task: asyncio.Task[None]) -> None:
        # A task cancelled before its first step (a request and its $/cancel_request read in
        # one chunk) never runs _run_request's body: answer it here and forget it. (Only
        # cancelled tasks get this callback: the others remove themselves.)
        if self._inbound.get(rid) is task:
            del self._inbound[rid]
            self._request_ended(rid)
            if task.cancelled():
                self._reply_error(rid, RequestCancelled("Request cancelled"))

    async def _run_request(self, ev: IncomingRequest) -> None:
        try:
            try:
                result = await self.dispatcher.handle_request(ev.method, ev.params)
                data = self.engine.result(ev.id, result)
            except asyncio.CancelledError:
                if self._closed:
                    raise
                data = self.engine.error(ev.id, RequestCancelled("Request cancelled"))
            except RequestError as exc:
                data = self.engine.error(ev.id, exc)
            except UsageError as exc:
                # the handler misused acplink (e.g. returned the wrong type): a bug its author
                # must see, on this side's stderr and in the answer
                log.error("%s: the %s handler misused acplink: %s", self.name, ev.method, exc, exc_info=self.debug)
                data = self.engine.error(ev.id, InternalError(
                    f"Internal error: UsageError: {exc}", {"error": "UsageError", "message": str(exc),
                                                          "method": ev.method}))
            except AcpError as exc:
                if not self._closed:  # (a handler that met the closing connection: nothing to say)
                    log.warning("%s: the %s handler failed: %s: %s", self.name, ev.method, type(exc).__name__, exc,
                                exc_info=self.debug)
                msg = str(exc) if self.debug else _public(exc) + self._details_hint()
                data = self.engine.error(ev.id, InternalError(msg))
            except Exception as exc:
                log.exception("%s: handler for %s raised", self.name, ev.method)
                msg = (f"Internal error: {type(exc).__name__}: {exc}" if self.debug
                       else "Internal error" + self._details_hint())
                data = self.engine.error(ev.id, InternalError(msg))
            if not self._closed:
                self._write_quiet(data, MessageMeta(reply_to=ev.id))
        finally:
            self._inbound.pop(ev.id, None)
            self._request_ended(ev.id)

    def _request_ended(self, rid: int | str) -> None:
        if self._long and rid in self._long:
            self._long.discard(rid)
        else:
            self._busy -= 1
        if self._held:
            self._release()

    def _details_hint(self) -> str:
        return f" (details in the {self.name}'s log; debug=True sends them)"

    # -- transport sink: the write side -------------------------------------------------------

    def write_paused(self) -> None:
        if self._watch is None:
            self._watch_writes()

    def send_failed(self, exc: BaseException) -> None:
        self._mark_closed(exc)  # a transport that cannot write any more: the connection is over

    # -- outbound ------------------------------------------------------------------------------

    # Each message goes to the transport whole, in the order of the calls (one send per
    # message: batching, if any, is the transport's; see transports/stream.py).

    def _send(self, data: bytes, meta: MessageMeta | None = None) -> bool:
        """Hand one message to the transport; True when it only joined a batch."""
        if self._closed:
            raise self._closed_error()
        self._sent_bytes += len(data)
        try:
            return self.transport.send(data, meta)
        except Exception as exc:  # a transport that cannot write any more: the connection is over
            self._mark_closed(exc)
            return False

    def _write_quiet(self, data: bytes, meta: MessageMeta | None = None) -> None:
        if self._closed:
            return
        self._send(data, meta)

    def _reply_error(self, rid: int | str, err: RequestError) -> None:
        self._write_quiet(self.engine.error(rid, err), MessageMeta(reply_to=rid))

    def _write(self, data: bytes, meta: MessageMeta | None = None) -> Awaitable[None]:
        """Send ``data``; the result is awaited for flow control: already done while the
        message only joined a batch (no coroutine is created for that common case)."""
        if self._closed:  # (what _send does, inline: this is the path of every notification)
            raise self._closed_error()
        self._sent_bytes += len(data)
        try:
            if self.transport.send(data, meta):
                return DONE
        except Exception as exc:
            self._mark_closed(exc)
        return self._drain()

    async def _drain(self) -> None:
        try:
            await self.transport.drain()
        except (OSError, RuntimeError) as exc:
            self._mark_closed(exc)
            raise ConnectionClosed(f"connection to {self.transport.description} lost: {exc}") from None
        except TransportError:
            self._mark_closed(None)
            if self._stall_message is not None:
                raise self._stalled_error() from None
            raise
        if self._closed:
            raise self._closed_error()

    def _stalled_error(self) -> ConnectionClosed:
        return ConnectionClosed(f"connection to {self.transport.description} closed: {self._stall_message}")

    def notify(self, method: str, params_json: bytes | None, meta: MessageMeta | None = None) -> Awaitable[None]:
        """Send a notification whose params are already JSON; await the result (flow control).
        ``meta``: what the transport may route it by (e.g. its session)."""
        return self._write(self.engine.notification(method, params_json), meta)

    async def request(self, method: str, params_json: bytes | None, *, timeout: float | None = None,
                      on_result: Callable[[Any], Any] | None = None, meta: MessageMeta | None = None) -> Any:
        """Send a request and wait for its result (raw JSON value).

        Cancelling the caller sends ``$/cancel_request``; a ``timeout`` does the same and
        raises :class:`RequestTimeout`. Error responses raise the matching RequestError.

        ``on_result``: called with the raw result in the ordered delivery path, before any
        message that arrived after the response is handled (not when the caller resumes,
        which may be later); what it returns is the call's result, what it raises the call's
        error. Not called for an error response, nor once the caller gave up. ``meta``: what
        the transport may route the request by (e.g. its session).
        """
        while len(self.engine.pending) >= self.limits.max_pending_requests:
            # backpressure: wait until an outstanding call finishes, rather than fail
            if self._closed:
                break
            slot: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._slot_waiters.append(slot)
            try:
                await slot
            except asyncio.CancelledError:
                if slot.done() and not slot.cancelled():
                    self._free_slot()  # pass on the slot we were given
                raise
        if self._closed:
            raise self._closed_error()
        rid, data = self.engine.request(method, params_json)
        # This frame lives until the response: hold no bytes that are no longer needed (a
        # small orjson result keeps a 4 KiB buffer; thousands of calls in flight add up).
        del params_json
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._futures[rid] = fut
        if on_result is not None:
            self._hooks[rid] = on_result
        try:
            if timeout is None:
                written = self._write(data, meta)
                del data
                if written is not DONE:
                    await self._written(written, fut)
                return await fut
            # the timeout covers the write too: a peer that stopped reading must not hold the
            # caller in drain() past its deadline
            async with asyncio.timeout(timeout):
                written = self._write(data, meta)
                del data
                if written is not DONE:
                    await self._written(written, fut)
                return await fut
        except TimeoutError:
            self._abandon(rid)
            raise RequestTimeout(f"{method} got no response within {timeout} s (cancel sent)") from None
        except asyncio.CancelledError:
            self._abandon(rid)
            raise
        finally:
            self._futures.pop(rid, None)
            if on_result is not None:
                self._hooks.pop(rid, None)

    @staticmethod
    async def _written(written: Awaitable[None], fut: asyncio.Future[Any]) -> None:
        """Await a request's write; when the write closed the connection, the call fails with
        what its future already holds (the cause), not a second, vaguer error."""
        try:
            await written
        except ConnectionClosed:
            if fut.done() and not fut.cancelled():
                await fut  # raises the cause (and marks it retrieved)
            raise

    def _free_slot(self) -> None:
        while self._slot_waiters:
            waiter = self._slot_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _abandon(self, rid: int | str) -> None:
        if rid in self.engine.pending and not self._closed:
            self.engine.forget(rid)
            self._free_slot()
            self._write_quiet(self.engine.notification(CANCEL_REQUEST, orjson.dumps({"requestId": rid})))


class _Done:
    """An awaitable that is already done."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]


#: an awaitable that is already done (shared by the connection layer)
DONE = _Done()


class _Resolution:
    __slots__ = ("event", "future", "hook")

    def __init__(self, future: asyncio.Future[Any], event: IncomingResponse,
                 hook: Callable[[Any], Any] | None) -> None:
        self.future = future
        self.event = event
        self.hook = hook


_EOF = object()
_CANCELLED_BY_PEER = "cancelled by the peer ($/cancel_request)"


def _resolve(fut: asyncio.Future[Any], ev: IncomingResponse, hook: Callable[[Any], Any] | None) -> None:
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


def _public(exc: BaseException) -> str:
    """An error message fit for the peer: no traceback, no local paths. The messages of the
    errors that carry neither (sizes, method and capability names) are kept."""
    if isinstance(exc, (MessageTooLarge, CapabilityError, ProtocolError, RequestTimeout)):
        return f"Internal error: {type(exc).__name__}: {exc}"
    return f"Internal error: {type(exc).__name__}"
