"""The async driver: binds the sans-I/O engine to a transport.

One :class:`Peer` per connection. It reads the transport into the engine, hands the events to
its ordered delivery (``_delivery.py``: the order, backpressure, the admission of inbound
requests), settles our own calls (``_calls.py``: their futures and slots), runs inbound
requests and writes their answers, one whole message per :meth:`Transport.send`. Its task set
owns every task of the connection (one per inbound request, the ordered consumer, the
watchers, the post-response work of handlers), and closing it cancels and awaits them all.

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
import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Protocol

import orjson

from .._tasks import TaskSet
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
from ..transports.stream import StreamTransport
from ._calls import Calls
from ._delivery import Delivery
from ._noise import BadInput, WarningLimiter

__all__ = ["Dispatcher", "Peer", "PeerLimits"]

log = logging.getLogger("acplink.rpc")

CANCEL_REQUEST = "$/cancel_request"


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
    inbound requests run at once (the long-waiting ones excepted: the ``long_running`` wire
    methods given to :class:`Peer`, which a connection takes from its protocol); the others
    wait their turn in arrival order. Once more than ``write_buffer_high`` bytes
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
        self.delivery = Delivery(self, limits, self.tasks, long_running)
        self._queue = self.delivery.queue  # (the same deque: the read path appends to it)
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

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._closed_event = asyncio.Event()
        self.delivery.start()
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
        self._warnings.flush()
        self.delivery.closed = True
        self.calls.shut(reason if isinstance(reason, PeerOutputNotJson) else ConnectionClosed(
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
        self.handle_event(self.engine.receive_frame(message))  # (hot notifications deferred)
        if self.delivery.held:
            self.delivery.read(len(message))

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
                self.handle_event(event)
                if self._closed:  # (it gave up on the peer)
                    break
        delivery = self.delivery
        if queued:
            delivery.queued()
        if delivery.held:
            delivery.read(len(data))

    def eof_received(self, exc: BaseException | None) -> None:
        if self._closed or self._eof:
            return
        self._eof = True
        for event in self.engine.receive_eof():
            self.handle_event(event)
        # responses/notifications already queued are still delivered in order; then close
        if not self.delivery.end_of_input():
            self.end_of_input(exc)

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
                running = [t for t in delivery.running.values() if not t.done()]
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
            self.delivery.enqueue(ev)
        elif t is IncomingNotification:
            if ev.method == CANCEL_REQUEST:
                self._cancel_inbound(ev.params)
                return
            self.delivery.enqueue(ev)
        elif t is IncomingResponse:
            call = self.calls.answered(ev)
            if call is not None:
                self.delivery.response(call[0], ev, call[1])
        elif t is IncomingRequest:
            self.delivery.request(ev)
        else:
            self._violation(ev)

    def _cancel_inbound(self, params: Any) -> None:
        rid = params.get("requestId") if isinstance(params, dict) else None
        if isinstance(rid, (int, str)):
            self.delivery.cancel(rid)

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

    def _closed_error(self) -> ConnectionClosed | PeerOutputNotJson:
        """What a call on the closed connection raises: why it gave up on the peer, if it did."""
        if isinstance(self.close_reason, PeerOutputNotJson):
            return PeerOutputNotJson(str(self.close_reason))
        if self.delivery.stall_message is not None:
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
        self.mark_closed(err)

    # -- inbound requests ----------------------------------------------------------------------

    async def run_request(self, ev: IncomingRequest) -> None:
        """Handle one inbound request and write its answer (a task of its own)."""
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
                self._write_quiet(data, MessageMeta(reply_to=ev.id) if self._reply_meta else None)
        finally:
            self.delivery.request_ended(ev.id)

    def _details_hint(self) -> str:
        return f" (details in the {self.name}'s log; debug=True sends them)"

    # -- transport sink: the write side --------------------------------------------------------

    def write_paused(self) -> None:
        self.delivery.watch_writes()

    def send_failed(self, exc: BaseException) -> None:
        self.mark_closed(exc)  # a transport that cannot write any more: the connection is over

    # -- outbound ------------------------------------------------------------------------------

    # Each message goes to the transport whole, in the order of the calls (one send per
    # message: batching, if any, is the transport's; see transports/stream.py).

    def _write_quiet(self, data: bytes, meta: MessageMeta | None = None) -> None:
        """Send ``data`` unless the connection is closed (no flow control: answers, errors)."""
        if self._closed:
            return
        self.sent_bytes += len(data)
        try:
            self.transport.send(data, meta)
        except Exception as exc:  # a transport that cannot write any more: the connection is over
            self.mark_closed(exc)

    def reply_error(self, rid: int | str, err: RequestError) -> None:
        """Answer inbound request ``rid`` with ``err``."""
        self._write_quiet(self.engine.error(rid, err), MessageMeta(reply_to=rid) if self._reply_meta else None)

    def _write(self, data: bytes, meta: MessageMeta | None = None) -> Awaitable[None]:
        """Send ``data``; the result is awaited for flow control: already done while the
        message only joined a batch (no coroutine is created for that common case)."""
        if self._closed:
            raise self._closed_error()
        self.sent_bytes += len(data)
        try:
            if self.transport.send(data, meta):
                return DONE
        except Exception as exc:
            self.mark_closed(exc)
        return self._drain()

    async def _drain(self) -> None:
        try:
            await self.transport.drain()
        except (OSError, RuntimeError) as exc:
            self.mark_closed(exc)
            raise ConnectionClosed(f"connection to {self.transport.description} lost: {exc}") from None
        except TransportError:
            self.mark_closed(None)
            if self.delivery.stall_message is not None:
                raise self._stalled_error() from None
            raise
        if self._closed:
            raise self._closed_error()

    def _stalled_error(self) -> ConnectionClosed:
        return ConnectionClosed(f"connection to {self.transport.description} closed: {self.delivery.stall_message}")

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
        calls = self.calls
        if self.engine.awaited >= calls.limit:
            await calls.wait_for_slot(lambda: self._closed)  # backpressure: wait, rather than fail
        if self._closed:
            raise self._closed_error()
        rid, data = self.engine.request(method, params_json)
        # This frame lives until the response: hold no bytes that are no longer needed (a
        # small orjson result keeps a 4 KiB buffer; thousands of calls in flight add up).
        del params_json
        fut = calls.open(rid, on_result)
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
            calls.close(rid)

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

    def _abandon(self, rid: int | str) -> None:
        if not self._closed and self.calls.abandon(rid):
            self._write_quiet(self.engine.notification(CANCEL_REQUEST, orjson.dumps({"requestId": rid})))


class _Done:
    """An awaitable that is already done."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())  # type: ignore[return-value]


#: an awaitable that is already done (shared by the connection layer)
DONE = _Done()


def _public(exc: BaseException) -> str:
    """An error message fit for the peer: no traceback, no local paths. The messages of the
    errors that carry neither (sizes, method and capability names) are kept."""
    if isinstance(exc, (MessageTooLarge, CapabilityError, ProtocolError, RequestTimeout)):
        return f"Internal error: {type(exc).__name__}: {exc}"
    return f"Internal error: {type(exc).__name__}"
