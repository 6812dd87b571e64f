"""The write side of a connection: our calls and notifications, the answers to the peer's requests.

Each message goes to the transport whole, in the order of the calls (one send per message:
batching, if any, is the transport's; see transports/stream.py). A send the transport only
batched is done at once; otherwise the writer awaits ``drain`` (flow control).
:class:`Outbound` is the part of :class:`~acplink.connection.peer.Peer` that does it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ..errors import ConnectionClosed, PeerOutputNotJson, RequestError, RequestTimeout, TransportError
from ..rpc.engine import Engine
from ..transports.base import MessageMeta, Transport
from ._calls import DONE, Calls

if TYPE_CHECKING:
    from ._otel import ConnectionTelemetry

__all__ = ["Outbound"]


class Outbound:
    """Sending, for :class:`~acplink.connection.peer.Peer` (which sets these attributes)."""

    transport: Transport
    engine: Engine
    calls: Calls
    _closed: bool
    #: whether answers carry a MessageMeta (a stream transport ignores it: none is built)
    _reply_meta: bool
    #: bytes handed to the transport (what the peer took so far: this minus its buffer)
    sent_bytes: int
    #: why the peer was disconnected for not reading (see PeerLimits.stalled_peer_timeout)
    stall_message: str | None
    #: why the connection closed, when it gave up on the peer (a PeerOutputNotJson)
    close_reason: BaseException | None
    #: OpenTelemetry's hooks, when it is configured (``_otel_hook.py``); None: each is one test
    telemetry: ConnectionTelemetry | None

    def mark_closed(self, reason: BaseException | None) -> None:
        raise NotImplementedError

    def _abandon(self, rid: int | str) -> None:
        """Our caller gave up on call ``rid``: tell the peer (the Peer's: it spells the method)."""
        raise NotImplementedError

    def _closed_error(self) -> ConnectionClosed | PeerOutputNotJson:
        """What a call on the closed connection raises: why it gave up on the peer, if it did."""
        if isinstance(self.close_reason, PeerOutputNotJson):
            return PeerOutputNotJson(str(self.close_reason))
        if self.stall_message is not None:
            return self._stalled_error()
        return ConnectionClosed(f"connection to {self.transport.description} is closed")

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
            if self.stall_message is not None:
                raise self._stalled_error() from None
            raise
        if self._closed:
            raise self._closed_error()

    def _stalled_error(self) -> ConnectionClosed:
        return ConnectionClosed(f"connection to {self.transport.description} closed: {self.stall_message}")

    def notify(self, method: str, params_json: bytes | None, meta: MessageMeta | None = None) -> Awaitable[None]:
        """Send a notification whose params are already JSON; await the result (flow control).
        ``meta``: what the transport may route it by (e.g. its session)."""
        if self.telemetry is not None:
            params_json = self.telemetry.notify(method, params_json)
            data = self.engine.notification(method, params_json)
            self.telemetry.inst_bytes(sent=len(data))
            return self._write(data, meta)
        return self._write(self.engine.notification(method, params_json), meta)

    def request(self, method: str, params_json: bytes | None, *, timeout: float | None = None,
                on_result: Callable[[Any], Any] | None = None, meta: MessageMeta | None = None,
                on_sent: Callable[[int | str], Any] | None = None) -> Coroutine[Any, Any, Any]:
        """Send a request and wait for its result (raw JSON value).

        Cancelling the caller sends ``$/cancel_request``; a ``timeout`` does the same and
        raises :class:`RequestTimeout`. Error responses raise the matching RequestError.

        ``on_result``: called with the raw result in the ordered delivery path, before any
        message that arrived after the response is handled (not when the caller resumes,
        which may be later); what it returns is the call's result, what it raises the call's
        error. Not called for an error response, nor once the caller gave up. ``meta``: what
        the transport may route the request by (e.g. its session). ``on_sent``: called with the
        request's id once it is on its way (a proxy cancels exactly it with ``$/cancel_request``).
        """
        send = self._request if on_sent is None else self._telling(on_sent)
        if self.telemetry is not None:  # (a span around it, its context in the params' _meta)
            return self.telemetry.request(send, method, params_json, timeout, on_result, meta)
        return send(method, params_json, timeout, on_result, meta)

    def _telling(self, on_sent: Callable[[int | str], Any]) -> Callable[..., Coroutine[Any, Any, Any]]:
        """:meth:`_request` that also tells ``on_sent`` the id of the request it writes."""
        def send(method: str, params_json: bytes | None, timeout: float | None, on_result: Any, meta: Any,
                 sent: Callable[[int | str, int], None] | None = None) -> Coroutine[Any, Any, Any]:
            def told(rid: int | str, size: int) -> None:
                on_sent(rid)
                if sent is not None:
                    sent(rid, size)
            return self._request(method, params_json, timeout, on_result, meta, told)
        return send

    async def _request(self, method: str, params_json: bytes | None, timeout: float | None,
                       on_result: Callable[[Any], Any] | None, meta: MessageMeta | None,
                       sent: Callable[[int | str, int], None] | None = None) -> Any:
        """:meth:`request`; ``sent`` (telemetry) is told the id and size of the request written."""
        calls = self.calls
        if self.engine.awaited >= calls.limit:
            await calls.wait_for_slot(lambda: self._closed)  # backpressure: wait, rather than fail
        if self._closed:
            raise self._closed_error()
        rid, data = self.engine.request(method, params_json)
        if sent is not None:
            sent(rid, len(data))
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

    def open_call(self, method: str, params_json: bytes | None, on_result: Callable[[Any], Any] | None = None
                  ) -> tuple[int | str, asyncio.Future[Any], Awaitable[None]] | None:
        """Send a request now, for a caller that keeps the call itself (a proxy that forwards a
        request keeps awaiting its answer when it is cancelled: ``proxy/_order.py``): its id,
        the future its answer settles (as :meth:`request`'s result or error, ``on_result``
        likewise), and the write, to await unless it is :data:`DONE` (flow control, with
        :meth:`written`). None when the connection takes no call so (its calls at their limit,
        or OpenTelemetry wrapping each one): use :meth:`request`. End it with :meth:`end_call`."""
        if self.telemetry is not None or self.engine.awaited >= self.calls.limit:
            return None
        if self._closed:
            raise self._closed_error()
        rid, data = self.engine.request(method, params_json)
        fut = self.calls.open(rid, on_result)
        return rid, fut, self._write(data)

    def end_call(self, rid: int | str) -> None:
        """The caller of :meth:`open_call` is done with call ``rid``: when it is still unanswered
        (the caller gave up), the peer is told with ``$/cancel_request``."""
        self._abandon(rid)
        self.calls.close(rid)

    @classmethod
    async def written(cls, written: Awaitable[None], fut: asyncio.Future[Any]) -> None:
        """Await the write of a call of :meth:`open_call` (see :meth:`_written`)."""
        await cls._written(written, fut)

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
