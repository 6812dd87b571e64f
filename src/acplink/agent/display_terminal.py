"""Agent-owned display terminals (ACP v2): a command the agent runs itself, shown to the user.

v2 has no client terminal methods; instead the agent reports its own terminals as entities:
a ``terminal_update`` upsert (command, cwd, exit status, whether it can be cancelled) and
``terminal_output_chunk``s. A client may stop one with ``terminal/cancel``, which calls the
terminal's ``on_cancel`` hook. :meth:`PromptContext.display_terminal` creates one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import CapabilityError, UsageError
from ..protocol.v2 import Update

if TYPE_CHECKING:
    from .context import AgentSession

__all__ = ["DisplayTerminal"]


class DisplayTerminal:
    """One agent-owned terminal of a v2 session (created by ``ctx.display_terminal``)."""

    def __init__(self, send: Callable[[dict[str, Any]], Any], session: AgentSession, terminal_id: str) -> None:
        self._send = send
        self.session = session
        self.terminal_id = terminal_id
        self.exited = False

    async def write(self, data: str) -> None:
        """Show more output (a ``terminal_output_chunk``)."""
        if type(data) is not str:
            raise UsageError(f"terminal output must be a str, not {type(data).__name__}")
        await self._send({"sessionUpdate": Update.TERMINAL_OUTPUT_CHUNK, "terminalId": self.terminal_id, "data": data})

    async def exit(self, exit_code: int | None = None, *, signal: str | None = None) -> None:
        """Mark the terminal exited (its cancel hook is dropped)."""
        self.exited = True
        self.session.cancel_hooks.pop(self.terminal_id, None)
        status: dict[str, Any] = {"exitCode": exit_code}
        if signal is not None:
            status["signal"] = signal
        await self._send({"sessionUpdate": Update.TERMINAL_UPDATE, "terminalId": self.terminal_id,
                          "exitStatus": status})


async def open_display_terminal(connection: Any, session: AgentSession, command: str, *, cwd: str | None,
                                terminal_id: str | None, on_cancel: Callable[[], Any] | None) -> DisplayTerminal:
    send_v2 = getattr(connection, "send_v2_update", None)
    if send_v2 is None or getattr(connection, "protocol_version", None) != 2:
        raise CapabilityError("agent-owned display terminals are an ACP v2 feature; this connection speaks v1 "
                              "(use ctx.run for a client terminal)")
    tid = terminal_id or f"term_{uuid.uuid4().hex[:12]}"
    update: dict[str, Any] = {"sessionUpdate": Update.TERMINAL_UPDATE, "terminalId": tid, "command": command,
                              "cwd": cwd or session.cwd}
    if on_cancel is not None:
        session.cancel_hooks[tid] = on_cancel
        update["capabilities"] = {"cancel": {}}

    async def send(u: dict[str, Any]) -> None:
        await send_v2(session.session_id, u)

    await send(update)
    return DisplayTerminal(send, session, tid)
