"""What a remote connection talks to: one agent per connection, as a command or in-process.

A backend opens an :class:`AgentChannel` for each remote connection; the channel carries
whole JSON-RPC messages (bytes, one message each, unchanged) both ways.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence

from ..rpc.framing import LineDecoder, Oversized
from ..transports.base import MessageMeta
from ..transports.subprocess import SubprocessTransport

__all__ = ["AgentBackend", "AgentChannel", "AgentCommand", "Deliver", "Ended"]

#: called with each whole message the agent sends
Deliver = Callable[[bytes], None]
#: called once when the agent will send nothing more, with a short reason
Ended = Callable[[str], None]

log = logging.getLogger("acplink.server")


class AgentChannel(ABC):
    """One connection's agent, as whole messages."""

    @abstractmethod
    def send(self, message: bytes) -> None:
        """Queue one message for the agent. Raises ConnectionClosed when it is gone."""

    @abstractmethod
    async def drain(self) -> None:
        """Wait until the agent has taken enough of what was sent (backpressure)."""

    @abstractmethod
    def pause(self) -> None:
        """Stop taking the agent's output (clients are behind)."""

    @abstractmethod
    def resume(self) -> None:
        """Take the agent's output again."""

    @abstractmethod
    async def aclose(self) -> str:
        """Stop the agent (bounded in time); returns how it ended, for the log."""


class AgentBackend(ABC):
    """Makes the agent of each remote connection."""

    #: whether the agent's messages are acplink's own engine output (valid JSON-RPC, each
    #: notification beginning ``{"jsonrpc":"2.0","method":``): a WebSocket connection then
    #: passes its notifications on without parsing them
    well_formed_output: bool = False

    @abstractmethod
    async def open(self, connection_id: str, deliver: Deliver, ended: Ended) -> AgentChannel:
        """Start an agent for ``connection_id``. Raises ``TransportError`` when it cannot."""

    async def open_as(self, connection_id: str, deliver: Deliver, ended: Ended,
                      principal: str | None) -> AgentChannel:
        """:meth:`open`, for a client whose token identifies ``principal`` (None: no token):
        acplink's backends tell the agent, so that it serves only that principal's stored
        sessions; a backend that does not override this ignores it."""
        return await self.open(connection_id, deliver, ended)

    @property
    @abstractmethod
    def description(self) -> str:
        """For the log and the startup banner."""


class _LineSink:
    """The agent's stdout (NDJSON) split into messages."""

    def __init__(self, connection_id: str, deliver: Deliver, ended: Ended, max_size: int) -> None:
        self.connection_id = connection_id
        self.deliver = deliver
        self.ended = ended
        self.decoder = LineDecoder(max_size)
        self.answered = False  # (a first message came: its output ending is no start-up failure)

    def data_received(self, data: bytes) -> None:
        for line in self.decoder.feed(data):
            if isinstance(line, Oversized):
                log.warning("connection %s: dropped an agent message of %d bytes (over the limit)",
                            self.connection_id, line.size)
            elif line.strip():
                self.answered = True
                self.deliver(line)

    def eof_received(self, exc: BaseException | None) -> None:
        self.ended("the agent closed its output" + ("" if self.answered else " before answering initialize"))

    def message_received(self, message: bytes, meta: MessageMeta | None) -> None:
        self.data_received(message)

    def write_paused(self) -> None:
        pass  # the connection waits on drain()

    def send_failed(self, exc: BaseException) -> None:
        self.ended(f"the agent stopped reading ({exc})")


class _StderrLogger:
    """The agent's stderr, one log line per line, tagged with the connection id."""

    def __init__(self, connection_id: str) -> None:
        self.connection_id = connection_id
        self.partial = b""

    def __call__(self, data: bytes) -> None:
        *lines, self.partial = (self.partial + data).split(b"\n")
        if len(self.partial) > 8192:
            lines.append(self.partial)
            self.partial = b""
        for line in lines:
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                log.info("connection %s agent: %s", self.connection_id, text)


class _CommandChannel(AgentChannel):
    def __init__(self, transport: SubprocessTransport) -> None:
        self.transport = transport

    def send(self, message: bytes) -> None:
        self.transport.send(message + b"\n")

    async def drain(self) -> None:
        await self.transport.drain()

    def pause(self) -> None:
        self.transport.pause_reading()

    def resume(self) -> None:
        self.transport.resume_reading()

    async def aclose(self) -> str:
        await self.transport.aclose()
        code = self.transport.returncode
        return f"agent exited with status {code}" if code is not None else "agent stopped"


class AgentCommand(AgentBackend):
    """Spawn ``command`` for each remote connection (at its ``initialize``) and talk NDJSON
    over its stdin/stdout. Its stderr goes to the ``acplink.server`` log, tagged with the
    connection id. ``stop_timeout``: the whole shutdown ladder (close stdin, SIGTERM,
    SIGKILL). ``max_message_bytes``: the longest line taken from the agent."""

    def __init__(self, command: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, stop_timeout: float = 4.0,
                 max_message_bytes: int = 64 * 1024 * 1024) -> None:
        if not command:
            raise ValueError("AgentCommand needs a command")
        self.command = [str(c) for c in command]
        self.env = dict(env or {})
        self.cwd = cwd
        self.stop_timeout = stop_timeout
        self.max_message_bytes = max_message_bytes

    async def open(self, connection_id: str, deliver: Deliver, ended: Ended) -> AgentChannel:
        return await self.open_as(connection_id, deliver, ended, None)

    async def open_as(self, connection_id: str, deliver: Deliver, ended: Ended,
                      principal: str | None) -> AgentChannel:
        """The agent process learns the principal from ``$ACPLINK_PRINCIPAL``."""
        step = self.stop_timeout * 0.4  # close stdin → wait, SIGTERM → wait, SIGKILL
        env = self.env if principal is None else {**self.env, "ACPLINK_PRINCIPAL": principal}
        transport = SubprocessTransport(self.command, env=env, cwd=self.cwd,
                                        stderr=_StderrLogger(connection_id), close_timeout=step,
                                        term_timeout=step, pipe_size=None)
        await transport.start(_LineSink(connection_id, deliver, ended, self.max_message_bytes))
        return _CommandChannel(transport)

    @property
    def description(self) -> str:
        return SubprocessTransport(self.command).command_line
