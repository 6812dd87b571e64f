"""The async driver: binds the sans-I/O engine to a transport.

One :class:`Peer` per connection. It reads the transport into the engine, hands the events to
its ordered delivery (``_delivery.py``: the order, backpressure, the admission of inbound
requests, a state machine that returns decisions) and carries out what it decides: it handles
the notifications in its consumer task, starts, holds or refuses inbound requests, pauses and
resumes reading, watches a full write buffer. It settles our own calls (``_calls.py``: their
futures and slots), runs inbound requests and writes their answers, one whole message per
:meth:`Transport.send`. Its task set owns every task of the connection (one per inbound
request, the ordered consumer, the watchers, the post-response work of handlers), and closing
it cancels and awaits them all.

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
import functools
import logging
from typing import TYPE_CHECKING, Any

import orjson

from .._tasks import TaskSet
from ..errors import (
    AcpError,
    ConnectionClosed,
    InternalError,
    PeerOutputNotJson,
    RequestCancelled,
    StreamResumeFailed,
)
from ..rpc.engine import Engine, IncomingNotification, IncomingRequest, IncomingResponse, Violation
from ..transports.base import MessageMeta, Transport
from ..transports.stream import StreamTransport
from ._calls import DONE, Calls, resolve
from ._delivery import (
    END_OF_INPUT,
    HOLD,
    IDLE,
    PAUSE_READING,
    QUEUE_FULL,
    QUEUED,
    RELEASE,
    RESUME_READING,
    SETTLE,
    START,
    WATCH_WRITES,
    Cancel,
    Decision,
    Delivery,
    Refuse,
    Settle,
)
from ._failures import failure_answer
from ._limits import Dispatcher, PeerLimits
from ._noise import BadInput, WarningLimiter
from ._outbound import Outbound
from ._relay import Relayed, abandon_all, cancel, relay

if TYPE_CHECKING:
    from ._otel import ConnectionTelemetry

__all__ = ["DONE", "Dispatcher", "Peer", "PeerLimits"]

log = logging.getLogger("acplink.rpc")

CANCEL_REQUEST = "$/cancel_request"

_CANCELLED_BY_PEER = "cancelled by the peer ($/cancel_request)"


class Peer(Outbound):
    """A JSON-RPC connection to one peer over one transport.

    Its parts: the engine (the wire state), :class:`~acplink.connection._delivery.Delivery`
    (ordered delivery, backpressure, the admission of inbound requests),
    :class:`~acplink.connection._calls.Calls` (our calls in flight and their slots), and
    :attr:`tasks`, the task set that owns every task of the connection: the consumer, the
    inbound requests, the watchers, and the work handlers start with ``Context.spawn``.
    Closing cancels and awaits them all.
    """

    def __init__(
        self,
        transport: Transport,
        dispatcher: Dispatcher,
        *,
        limits: PeerLimits | None = None,
        skip_noise: bool = False,
        debug: bool = False,
        name: str = "peer",
        long_running: frozenset[str] = frozenset(),
        telemetry: ConnectionTelemetry | None = None,
    ) -> None:
        self.transport = transport
        self.dispatcher = dispatcher
        self.limits = limits = limits or PeerLimits()
        self.engine = Engine(max_message_size=limits.max_message_size, skip_noise=skip_noise,
                             max_pending=limits.max_pending_requests)
        self.debug = debug
        self.name = name
        #: every task of this connection (see the class doc)
        self.tasks = TaskSet(name)
        self.calls = Calls(self.engine, limits.max_pending_requests)
        self.delivery = Delivery(
            max_concurrent_requests=limits.max_concurrent_requests, max_running_requests=limits.max_running_requests,
            max_queued_notifications=limits.max_queued_notifications, max_held_bytes=limits.write_buffer_high,
            long_running=long_running)
        self._queue = self.delivery.queue  # (the same deque: the read path appends to it)
        #: wakes the consumer task (see _consume) when something joins the queue
        self._wakeup: asyncio.Event | None = None
        #: the task that runs while the write buffer is over its high-water mark
        self._watch: asyncio.Future[None] | None = None
        #: why the peer was disconnected for not reading (see PeerLimits.stalled_peer_timeout)
        self.stall_message: str | None = None
        #: whether answers carry a MessageMeta (a stream transport ignores it: none is built)
        self._reply_meta = not isinstance(transport, StreamTransport)
        self._closed = False
        self._closed_event: asyncio.Event | None = None
        self._started = False
        self._eof = False
        #: seconds the requests received before the peer's end of input may take to answer
        self.eof_grace = 1.0
        #: bytes handed to the transport (what the peer took so far: this minus its buffer)
        self.sent_bytes = 0
        self._bad = BadInput(limits.max_bad_lines, limits.max_bad_lines_at_start)
        #: True until the first valid message, and after each bad line: only then does a valid
        #: message have bookkeeping to do (one attribute test per message on the hot path)
        self._expect_good = True
        self._warnings = WarningLimiter(log, name)
        #: why the connection closed, when it gave up on the peer (a PeerOutputNotJson)
        self.close_reason: BaseException | None = None
        #: OpenTelemetry's hooks, when it is configured (``_otel_hook.py``); None: each is one test
        self.telemetry = telemetry
        #: the dispatcher's router of requests it passes on unchanged (``_relay.py``), if any
        self._router = getattr(dispatcher, "route_request", None)
        #: inbound requests relayed to another connection and not answered yet, by id
        self.relays: dict[int | str, Relayed] = {}

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._closed_event = asyncio.Event()
        self._wakeup = asyncio.Event()
        self.tasks.spawn(self._consume(), name=f"acplink-{self.name}-ordered")
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

    def mark_closed(self, reason: BaseException | None) -> None:
        """The connection is over: every call in flight fails (with ``reason`` when it is why
        we gave up on the peer, else ConnectionClosed naming it)."""
        if self._closed:
            return
        self._closed = True
        if self.telemetry is not None:
            self.telemetry.closed()
        self._warnings.flush()
        self.delivery.closed = True
        if self.relays:
            abandon_all(self)
        # (a stream that could not be resumed keeps its class: the caller reopens the session)
        kind = StreamResumeFailed if isinstance(reason, StreamResumeFailed) else ConnectionClosed
        self.calls.shut(reason if isinstance(reason, PeerOutputNotJson) else kind(
            f"connection to {self.transport.description} closed" + (f": {reason}" if reason else "")))
        if self._closed_event is not None:
            self._closed_event.set()

    async def aclose(self) -> None:
        """Close the transport, fail pending calls, cancel and await every owned task."""
        self.transport.flush()  # what we already sent (e.g. final responses) still goes out
        self.mark_closed(None)
        self.delivery.shut()
        await self.tasks.aclose()
        try:
            await self.transport.aclose()
        except (OSError, AcpError):
            pass

    # -- transport sink: the read side ---------------------------------------------------------

    def message_received(self, message: bytes, meta: MessageMeta | None) -> None:
        """A framed transport's whole message (``meta`` routes replies inside the transport;
        nothing here needs it)."""
        if self._closed:  # (e.g. it gave up on the peer)
            return
        if self.telemetry is not None:
            self.telemetry.inst_bytes(received=len(message))
        self.handle_event(self.engine.receive_frame(message))  # (hot notifications deferred)
        if self.delivery.held and self.delivery.read(len(message)) is PAUSE_READING:
            self.transport.pause_reading()

    def data_received(self, data: bytes) -> None:
        if self._closed:  # (e.g. it gave up on the peer: what is left in the pipe is not read)
            return
        if self.transport.framed:  # (a framed transport that hands over chunks: one message each)
            self.message_received(data, None)
            return
        if self.telemetry is not None:
            self.telemetry.inst_bytes(received=len(data))
        queued = False
        queue = self._queue
        for event in self.engine.receive(data):
            if type(event) is bytes:
                queue.append(event)  # a deferred notification (never $/cancel_request)
                queued = True
                if self._expect_good:
                    self._good()
            else:
                self.handle_event(event)
                if self._closed:  # (it gave up on the peer)
                    break
        delivery = self.delivery
        if queued:
            self._wake()
            if delivery.queued() is QUEUE_FULL:
                self.transport.pause_reading()
        if delivery.held and delivery.read(len(data)) is PAUSE_READING:
            self.transport.pause_reading()

    def eof_received(self, exc: BaseException | None) -> None:
        if self._closed or self._eof:
            return
        self._eof = True
        for event in self.engine.receive_eof():
            self.handle_event(event)
        # responses/notifications already queued are still delivered in order; then close
        if self.delivery.end_of_input() is END_OF_INPUT:
            self.end_of_input(exc)
        else:
            self._wake()

    def end_of_input(self, exc: BaseException | None) -> None:
        """The peer sent its last byte (and everything before it was delivered). Requests it
        already sent may still be answered (within ``eof_grace`` seconds, e.g. ``agent <
        requests.jsonl``); nothing it could answer can arrive any more, so our own pending
        calls fail now."""
        self.transport.flush()  # answers already made still go out
        delivery = self.delivery
        if exc is not None or not (delivery.running or delivery.held) or self.eof_grace <= 0:
            self.mark_closed(exc)
            return
        self.calls.fail_all(ConnectionClosed(f"connection to {self.transport.description} closed by the peer"))

        async def finish() -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.eof_grace
            # the requests held back (backpressure) start as others end: wait for them too
            while (left := deadline - loop.time()) > 0:
                running = [t for t in self.tasks.keyed.values() if not t.done()]
                running += [r.ended() for r in self.relays.values()]
                if running:
                    await asyncio.wait(running, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                elif delivery.held:
                    await asyncio.sleep(min(left, 0.05))
                else:
                    break
            self.transport.flush()
            self.mark_closed(None)

        self.tasks.spawn(finish(), name=f"acplink-{self.name}-end-of-input")

    def handle_event(self, ev: Any) -> None:
        """One event of the engine (a ``bytes`` item: a deferred notification)."""
        t = type(ev)
        if self._expect_good and t is not Violation:
            self._good()
        if t is bytes:  # a deferred notification (see Engine.receive)
            self._do(self.delivery.enqueue(ev))
        elif t is IncomingNotification:
            if ev.method == CANCEL_REQUEST:
                self._cancel_inbound(ev.params)
                return
            self._do(self.delivery.enqueue(ev))
        elif t is IncomingResponse:
            call = self.calls.answered(ev)
            if call is not None:
                if self.delivery.response(call[0], ev, call[1]) is SETTLE:
                    resolve(call[0], ev, call[1])
                else:
                    self._wake()
        elif t is IncomingRequest:
            delivery = self.delivery
            # (the buffer's state matters only while nothing is held: see Delivery.admit)
            decision = delivery.request(ev, not delivery.held and self.transport.writing_paused)
            if decision is START:
                self.start_request(ev)
            elif decision is not HOLD:  # (held: a later release starts it)
                self._do(decision)
        else:
            self._violation(ev)

    def _cancel_inbound(self, params: Any) -> None:
        rid = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(rid, (int, str)):
            for decision in self.delivery.cancel(rid):
                self._do(decision)

    # -- carrying out the delivery's decisions -------------------------------------------------

    def _do(self, decision: Decision | None) -> None:
        """Carry out one decision of the delivery (see _delivery.py)."""
        if decision is QUEUED:
            self._wake()
            return
        t = type(decision)
        if t is IncomingRequest:  # (released: start it)
            self.start_request(decision)  # type: ignore[arg-type]
        elif t is Refuse:
            self.reply_error(decision.id, decision.error)  # type: ignore[union-attr]
        elif t is Cancel:
            rid = decision.id  # type: ignore[union-attr]
            task = self.tasks.keyed.get(rid)
            if task is not None and not task.done():
                task.cancel(msg=_CANCELLED_BY_PEER)
                task.add_done_callback(functools.partial(self._cancelled, rid))
            elif (relayed := self.relays.get(rid)) is not None:
                cancel(relayed)
        elif decision is QUEUE_FULL:
            self._wake()
            self.transport.pause_reading()
        elif decision is PAUSE_READING:
            self.transport.pause_reading()
        elif decision is RESUME_READING:
            self.transport.resume_reading()
        elif decision is RELEASE:
            self._release()
        elif decision is WATCH_WRITES:
            self._watch_writes()
        # (HOLD: nothing to do; START, SETTLE, Settle, IDLE and END_OF_INPUT are carried
        # out where they are returned)

    def _release(self) -> None:
        """Start the held requests that may run now (RELEASE; called directly as a request ends)."""
        decided = self.delivery.release(self.transport.writing_paused)
        if type(decided) is IncomingRequest:  # (the common case: it takes the slot of one that ended)
            self.start_request(decided)
        elif isinstance(decided, list):
            for d in decided:
                self._do(d)
        elif decided is not None:
            self._do(decided)

    def _wake(self) -> None:
        """Something joined the delivery queue: wake the consumer."""
        w = self._wakeup
        if w is not None and not w.is_set():
            w.set()

    async def _consume(self) -> None:
        """The consumer task: carries out what the delivery takes from its queue, in order."""
        wakeup = self._wakeup
        assert wakeup is not None
        delivery = self.delivery
        take = delivery.take
        handle = self.dispatcher.handle_notification
        decode = self.engine.decode_deferred
        telemetry = self.telemetry
        while True:
            item = take()
            t = type(item)
            if t is bytes:  # decoded now, not on arrival: the model lives only while it is handled
                item = decode(item)
                t = type(item)
            if t is IncomingNotification:
                try:
                    if telemetry is None:
                        await handle(item.method, item.params, item.typed)
                    else:
                        await telemetry.consume(handle, item)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.notification_failed(item.method, exc)
            elif item is IDLE:
                wakeup.clear()
                await wakeup.wait()
            elif t is Settle:
                resolve(item.future, item.event, item.hook)
            elif t is IncomingRequest:  # (its turn in the order is now)
                decision = delivery.admit(item, not delivery.held and self.transport.writing_paused)
                if decision is START:
                    self.start_request(item)
                elif decision is not HOLD:
                    self._do(decision)
            elif item is RESUME_READING:
                self.transport.resume_reading()
            elif item is END_OF_INPUT:
                self.end_of_input(None)
                return
            else:  # a deferred line that turned out broken
                self.handle_event(item)

    def _cancelled(self, rid: int | str, task: asyncio.Future[Any]) -> None:
        # A task cancelled before its first step (a request and its $/cancel_request read in
        # one chunk) never runs the body of run_request: answer it here and forget it. (Only
        # cancelled tasks get this callback: the others remove themselves.)
        if self.tasks.keyed.get(rid) is task:
            del self.tasks.keyed[rid]
            self._do(self.delivery.request_ended(rid))
            if task.cancelled():
                self.reply_error(rid, RequestCancelled("Request cancelled"))

    # -- the write side's congestion -----------------------------------------------------------

    def _watch_writes(self) -> None:
        if self._watch is None and not self._closed and not self.tasks.closed:
            self._watch = self.tasks.spawn(self._watch_congestion(), name=f"acplink-{self.name}-backpressure")

    async def _watch_congestion(self) -> None:
        """Runs while the write buffer is over its high-water mark: starts the held requests
        once it drains; disconnects a peer that takes nothing for stalled_peer_timeout s."""
        transport = self.transport
        timeout = self.limits.stalled_peer_timeout
        try:
            async with TaskSet(f"{self.name} drain") as scope:
                drained = scope.spawn(transport.drain())
                while True:
                    taken = self.sent_bytes - transport.write_buffer_size()  # by the peer, so far
                    done, _ = await asyncio.wait((drained,), timeout=timeout)
                    if done:
                        break
                    if timeout is not None and self.sent_bytes - transport.write_buffer_size() == taken:
                        self._stalled(timeout)
                        return
        finally:
            self._watch = None
        if not drained.cancelled() and drained.exception() is None:
            self._do(RELEASE)

    def _stalled(self, timeout: float) -> None:
        transport = self.transport
        self.stall_message = (f"the peer stopped reading: it took nothing of the {transport.write_buffer_size()} "
                              f"bytes waiting for it in {timeout:g} s")
        log.warning("%s: %s; disconnecting", self.name, self.stall_message)
        self.delivery.shut()  # (nothing held starts any more)
        self.mark_closed(ConnectionClosed(self.stall_message))
        transport.pause_reading()  # (nothing it sends could be answered)
        transport.abort_writing()  # (drops the buffer; writers waiting fail)

    # -- bad input -----------------------------------------------------------------------------

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
            self.calls.failed(v.pending_id, v.error or InternalError(v.message))

    def notification_failed(self, method: str, exc: Exception) -> None:
        """A notification handler raised (the consumer goes on with the next one)."""
        if self.debug or not isinstance(exc, AcpError):
            log.warning("%s: notification handler for %s failed: %s", self.name, method, exc, exc_info=True)
        else:  # (bad input from the peer: rate-limited)
            self._warnings.warn(f"notification handler for {method} failed: {exc}")

    def _give_up(self, err: PeerOutputNotJson) -> None:
        """The peer does not speak JSON-RPC: stop reading it (its output can pile up in the
        pipe, not in memory) and close; every pending and later call fails with ``err``."""
        if self._closed:
            return
        self.close_reason = err
        log.debug("%s: %s", self.name, err)
        self.transport.pause_reading()
        self.mark_closed(err)

    # -- inbound requests ----------------------------------------------------------------------

    def start_request(self, ev: IncomingRequest) -> None:
        """Start an admitted inbound request: relayed when the dispatcher routes it on
        (``_relay.py``), else in a task of its own (:meth:`run_request`). Only while no request
        of this connection runs in a task: one that has not written what it forwards yet must
        not be overtaken by a later one relayed at once (requests run concurrently, but a proxy
        passes them on in the order they came)."""
        router = self._router
        if router is not None and self.telemetry is None and not self.tasks.keyed:
            try:
                route = router(ev.method, ev.params)
                if route is not None and relay(self, ev, route):
                    return
            except Exception as exc:  # (a router's bug: the request still runs, in a task)
                log.debug("%s: relaying %s failed: %r", self.name, ev.method, exc)
        self.tasks.spawn_keyed(self.run_request(ev), ev.id)

    def relay_answered(self, rid: int | str, data: bytes) -> None:
        """Write the answer of relayed request ``rid`` (as :meth:`run_request` ends)."""
        if not self._closed:
            self.sent_bytes += len(data)
            try:
                self.transport.send(data, MessageMeta(reply_to=rid) if self._reply_meta else None)
            except Exception as exc:  # a transport that cannot write any more: the connection is over
                self.mark_closed(exc)
        if self.delivery.request_ended(rid) is RELEASE:
            self._release()

    async def run_request(self, ev: IncomingRequest) -> None:
        """Handle one inbound request and write its answer (a task of its own)."""
        try:
            try:
                if self.telemetry is None:
                    result = await self.dispatcher.handle_request(ev.method, ev.params)
                else:
                    result = await self.telemetry.serve(self.dispatcher.handle_request, ev)
                data = self.engine.result(ev.id, result)
            except asyncio.CancelledError:
                if self._closed:
                    raise
                data = self.engine.error(ev.id, RequestCancelled("Request cancelled"))
            except Exception as exc:
                data = self.engine.error(ev.id, failure_answer(exc, ev.method, self.name, self.debug, self._closed))
            if not self._closed:  # (what _write_quiet does, without its frame: once per request)
                self.sent_bytes += len(data)
                if self.telemetry is not None:
                    self.telemetry.inst_bytes(sent=len(data))
                try:
                    self.transport.send(data, MessageMeta(reply_to=ev.id) if self._reply_meta else None)
                except Exception as exc:  # a transport that cannot write any more: the connection is over
                    self.mark_closed(exc)
        finally:  # (the task ends: the delivery may start a held request)
            self.tasks.keyed.pop(ev.id, None)
            if self.delivery.request_ended(ev.id) is RELEASE:
                self._release()

    # -- transport sink: the write side --------------------------------------------------------

    def write_paused(self) -> None:
        self._watch_writes()

    def send_failed(self, exc: BaseException) -> None:
        self.mark_closed(exc)  # a transport that cannot write any more: the connection is over

    def _abandon(self, rid: int | str) -> None:
        """Our caller gave up on call ``rid`` (cancelled, timed out): tell the peer."""
        if not self._closed and self.calls.abandon(rid):
            self._write_quiet(self.engine.notification(CANCEL_REQUEST, orjson.dumps({"requestId": rid})))

