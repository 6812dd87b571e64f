"""Agent-owned display terminals: a command the agent runs itself, shown to the user.

A version with the feature ``agent_terminals`` (ACP v2) reports the agent's own terminals as
entities: an upsert (command, cwd, exit status, whether it can be cancelled) and output chunks,
shaped by its agent codec. A client may cancel one (v2: ``terminal/cancel``), which calls the
terminal's ``on_cancel`` hook. :meth:`PromptContext.display_terminal` creates one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import CapabilityError, UsageError

if TYPE_CHECKING:
    from .context import AgentSession

__all__ = ["DisplayTerminal"]


class DisplayTerminal:
    """One agent-owned terminal of a session (created by ``ctx.display_terminal``)."""

    def __init__(self, send: Callable[[dict[str, Any]], Any], session: AgentSession, terminal_id: str,
                 codec: Any) -> None:
        self._send = send
        self._codec = codec
        self.session = session
        self.terminal_id = terminal_id
        self.exited = False

    async def write(self, data: str) -> None:
        """Show more output (a ``terminal_output_chunk``)."""
        if type(data) is not str:
            raise UsageError(f"terminal output must be a str, not {type(data).__name__}")
        await self._send(self._codec.terminal_output(self.terminal_id, data))

    async def exit(self, exit_code: int | None = None, *, signal: str | None = None) -> None:
        """Mark the terminal exited (its cancel hook is dropped)."""
        self.exited = True
        self.session.cancel_hooks.pop(self.terminal_id, None)
        status: dict[str, Any] = {"exitCode": exit_code}
        if signal is not None:
            status["signal"] = signal
        await self._send(self._codec.terminal_update(self.terminal_id, exitStatus=status))


async def open_display_terminal(connection: Any, session: AgentSession, command: str, *, cwd: str | None,
                                terminal_id: str | None, on_cancel: Callable[[], Any] | None) -> DisplayTerminal:
    protocol = connection.protocol
    send_raw = getattr(connection, "send_raw_update", None)
    if send_raw is None or "agent_terminals" not in protocol.features:
        raise CapabilityError(f"agent-owned display terminals are an ACP v2 feature; this connection speaks "
                              f"ACP v{protocol.version}, which has none (use ctx.run for a client terminal)")
    codec = protocol.agent_codec
    tid = terminal_id or f"term_{uuid.uuid4().hex[:12]}"
    fields: dict[str, Any] = {"command": command, "cwd": cwd or session.cwd}
    if on_cancel is not None:
        session.cancel_hooks[tid] = on_cancel
        fields["capabilities"] = {"cancel": {}}

    async def send(u: dict[str, Any]) -> None:
        await send_raw(session.session_id, u)

    await send(codec.terminal_update(tid, **fields))
    return DisplayTerminal(send, session, tid, codec)
