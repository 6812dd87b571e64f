"""What a :class:`~acplink.connection.peer.Peer` is given: the dispatcher it hands inbound
traffic to, and the resource limits of its connection."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from ..rpc.framing import DEFAULT_MAX_MESSAGE_SIZE

__all__ = ["Dispatcher", "PeerLimits"]


class Dispatcher(Protocol):
    """What a peer hands inbound traffic to (the typed connection layer). One that passes
    requests on unchanged (a proxy, a conductor) may also have ``route_request(method, params)``
    returning a :class:`~acplink.connection._relay.Route`: such a request is relayed without a
    task (see ``_relay.py``)."""

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
