"""The server's limits and timeouts (the TS SDK server's defaults unless noted), in one value."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerLimits"]

MIB = 1024 * 1024


@dataclass(frozen=True)
class ServerLimits:
    """Every bound of the remote server. Times are in seconds.

    - ``max_message_bytes``: one POST body or WebSocket frame (413 / close 1009).
    - ``max_id_length``: request, connection and session ids, in characters (400).
    - ``max_buffered_bytes``: agent output queued per connection for clients that have not
      read it yet; while it is full the agent's output is not read (backpressure) ...
    - ``output_stall``: ... and a client that reads nothing for this long while it is full is
      dropped.
    - ``max_session_streams``: session streams holding output nobody reads (the connection is
      dropped beyond it).
    - ``max_connections``: connections at once (503 + ``Retry-After``).
    - ``idle_timeout``: an HTTP connection with no request and no open stream for this long is
      closed and its agent stopped.
    - ``initialize_timeout``: how long the agent may take to answer ``initialize`` (504).
    - ``ws_initialize_timeout``: a WebSocket that sends no ``initialize`` in time is closed
      (1002).
    - ``keepalive``: an SSE comment line is sent on a quiet stream this often (WebSocket pings
      are the ASGI server's: ``acplink serve`` sets uvicorn's ``ws_ping_interval`` to it).
    - ``stop_timeout``: the agent's shutdown ladder (close stdin, SIGTERM, SIGKILL) as a whole.
    - ``retry_after``: the ``Retry-After`` value of a 503, in whole seconds.
    - ``retention_messages``, ``retention_seconds``: what a stream keeps of the output it
      sent, so that a client whose stream dropped gets back what it missed (HTTP:
      ``Last-Event-ID``; WebSocket: ``stream/resume``): the last this many messages, each for
      this long (advertised at ``initialize`` as ``agentCapabilities.transport.resumable``).
      A WebSocket that drops without a close frame leaves its connection for ``idle_timeout``.
    """

    max_message_bytes: int = 16 * MIB
    max_id_length: int = 1024
    max_buffered_bytes: int = 64 * MIB
    output_stall: float = 60.0
    max_session_streams: int = 1024
    max_connections: int = 16
    idle_timeout: float = 300.0
    initialize_timeout: float = 30.0
    ws_initialize_timeout: float = 30.0
    keepalive: float = 15.0
    stop_timeout: float = 4.0
    retry_after: int = 5
    retention_messages: int = 1000
    retention_seconds: float = 300.0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value > 0:
                raise ValueError(f"ServerLimits.{name} must be positive, not {value!r}")
