"""The ACP agent behind ``acplink mcp-server``: started on first use, restarted after it died,
its sessions and running turns tracked (no MCP here: the tools are in :mod:`.mcp_server`)."""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .._text import sanitize_for_terminal
from ..client import Client, PermissionPolicy, Session, connect
from ..client.session import PromptTurn
from ..client.state import SessionState
from ..errors import AcpError, ConnectionClosed, TransportError, UsageError
from ..protocol.initialize import ProtocolChoice, check_choice
from ..schema import _generated as s
from ..transports.subprocess import SubprocessTransport

__all__ = ["AgentGone", "AgentHolder", "TurnReport", "permission_policy"]

#: ``--permission`` values: a fixed answer, or ask the MCP host (elicitation) and deny when it cannot
PERMISSION_MODES = ("allow", "deny", "elicit")
AskHost = Callable[[s.RequestPermissionRequest], Awaitable[str | None]]


class AgentGone(AcpError):
    """The agent could not start, or died: the message names it (and its exit, its stderr)."""


def permission_policy(mode: str, ask: AskHost) -> PermissionPolicy:
    """The policy for ``--permission MODE`` (``ask``: how ``elicit`` reaches the MCP host)."""
    if mode == "allow":
        return PermissionPolicy.allow_all()
    if mode == "deny":
        return PermissionPolicy.deny_all()
    if mode == "elicit":
        return PermissionPolicy(default="ask", ask=ask, remember=False)
    raise UsageError(f"permission must be one of {', '.join(PERMISSION_MODES)}, not {mode!r}")


class TurnReport:
    """What one prompt turn did: the reply text, the tool calls, the stop reason."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._shown = SessionState()  # (what was folded, in acplink's vocabulary: any ACP version)
        self.reply: list[str] = []
        self.tool_calls: dict[str, dict[str, Any]] = {}
        self.stop_reason: str | None = None

    def fold(self, session: Session, item: Any) -> list[str]:
        """Fold one update of ``session``'s turn, whatever its ACP version: the reply text it adds."""
        pieces = (self.see(view) for view in session.views_of(item, self._shown))
        return [piece for piece in pieces if piece]

    def see(self, update: Any) -> str | None:
        """Fold one update; the reply text it adds (for progress), if any."""
        if isinstance(update, s.AgentMessageChunk) and isinstance(update.content, s.TextContent):
            self.reply.append(update.content.text)
            return update.content.text
        if isinstance(update, s.ToolCall):
            self.tool_calls[update.tool_call_id] = {"id": update.tool_call_id, "title": update.title,
                                                    "kind": update.kind or "other",
                                                    "status": update.status or "pending"}
        elif isinstance(update, s.SessionUpdateToolCallUpdate):
            call = self.tool_calls.setdefault(update.tool_call_id, {"id": update.tool_call_id,
                                                                    "title": update.tool_call_id,
                                                                    "kind": "other", "status": "pending"})
            if update.title:
                call["title"] = update.title
            if update.kind:
                call["kind"] = update.kind
            if update.status:
                call["status"] = update.status
        return None

    def text(self) -> str:
        return "".join(self.reply)

    def summary(self) -> str:
        """The reply, then one line per tool call (what an MCP host's model reads)."""
        lines = [self.text().rstrip("\n") or "(no reply text)"]
        if self.tool_calls:
            lines += ["", "tool calls:"]
            lines += [f"- {c['title']} ({c['kind']}): {c['status']}" for c in self.tool_calls.values()]
        if self.stop_reason != "end_turn":
            lines += ["", f"stop reason: {self.stop_reason}"]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "stopReason": self.stop_reason, "reply": self.text(),
                "toolCalls": list(self.tool_calls.values())}


class AgentHolder:
    """One ACP agent command, connected on first use; after it died, the next use starts it
    again (its sessions are then reopened with ``session/load`` when the agent can, else unknown)."""

    def __init__(self, command: Sequence[str], *, cwd: str | os.PathLike[str] | None = None,
                 env: dict[str, str] | None = None, permission: str = "elicit",
                 ask: AskHost | None = None, startup_timeout: float = 30.0,
                 protocol: ProtocolChoice = 1) -> None:
        if not command:
            raise UsageError("no agent command given")
        self.command = [str(part) for part in command]
        self.name = shlex.join(self.command)
        self.cwd = os.path.abspath(cwd or ".")
        self.env = env
        self.policy = permission_policy(permission, ask or _deny)
        self.startup_timeout = startup_timeout
        self.protocol: ProtocolChoice = check_choice(protocol)
        self._opening: connect | None = None
        self._client: Client | None = None
        self._lock = asyncio.Lock()
        self.sessions: dict[str, Session] = {}
        self.turns: dict[str, PromptTurn] = {}
        #: how many times the agent was started (1 after the first use)
        self.starts = 0

    async def client(self) -> Client:
        """The connected agent (started now if it is not running)."""
        async with self._lock:
            client = self._client
            if client is not None and not client.closed:
                return client
            await self._drop()
            opening = connect(self.command, cwd=self.cwd, env=self.env, stderr="capture", permission=self.policy,
                              protocol=self.protocol)
            try:
                async with asyncio.timeout(self.startup_timeout):
                    client = await opening.__aenter__()
            except TimeoutError:
                await _close(opening)
                raise AgentGone(f"the agent {self.name!r} did not answer initialize within "
                                f"{self.startup_timeout:g} s") from None
            except (AcpError, OSError) as exc:
                await _close(opening)
                raise AgentGone(_one_line(exc) if self.name in str(exc) else
                                f"cannot start the agent {self.name!r}: {_one_line(exc)}") from None
            self._opening, self._client = opening, client
            self.starts += 1
            return client

    async def session(self, session_id: str | None, cwd: str | None = None) -> Session:
        """A session of ours (``session_id``), loaded again after a restart when the agent can;
        else a new one (in ``cwd``, default the server's)."""
        client = await self.client()
        if session_id is None:
            opened = await client.new_session(os.path.abspath(cwd) if cwd else self.cwd)
            self.sessions[opened.session_id] = opened
            return opened
        session = self.sessions.get(session_id)
        if session is not None and session.client is client:
            return session
        caps = client.agent_capabilities
        if session is not None and caps is not None and caps.load_session:
            try:
                session = await client.load_session(session_id, session.cwd)
            except AcpError as exc:
                raise UsageError(f"the session {session_id!r} could not be loaded again after the agent "
                                 f"restarted: {_one_line(exc)}") from None
            self.sessions[session_id] = session
            return session
        raise UsageError(f"unknown session {session_id!r}" + (" (the agent restarted, and it cannot load "
                                                               "sessions)" if session is not None else ""))

    async def run_turn(self, session: Session, text: str, on_text: Callable[[str], Awaitable[None]]) -> TurnReport:
        """Prompt ``session``; ``on_text`` gets each piece of reply text as it streams."""
        if session.session_id in self.turns:
            raise UsageError(f"the session {session.session_id!r} is busy with another prompt (cancel it first)")
        report = TurnReport(session.session_id)
        turn = self.turns[session.session_id] = session.prompt(text)
        try:
            async for item in turn:
                if item is turn.receipt:
                    continue
                for piece in report.fold(session, item):
                    await on_text(piece)
            await turn
        finally:
            self.turns.pop(session.session_id, None)
        report.stop_reason = turn.stop_reason
        return report

    async def cancel(self, session_id: str) -> bool:
        """Cancel the session's running turn: whether one was running."""
        turn = self.turns.get(session_id)
        if turn is None:
            if session_id not in self.sessions:
                raise UsageError(f"unknown session {session_id!r}")
            return False
        await turn.cancel()
        return True

    async def gone(self, exc: BaseException) -> AgentGone:
        """The agent died (``exc``): forget it (the next use restarts it) and say why."""
        client = self._client
        transport = client.transport if client is not None else None
        message = f"the agent {self.name!r} stopped: {_one_line(exc)}"
        if isinstance(transport, SubprocessTransport):
            try:
                code = await asyncio.wait_for(transport.wait(), 5.0)
            except (TimeoutError, AcpError):
                code = transport.returncode
            how = (f"exited with code {code}" if code is not None and code >= 0 else
                   f"was killed by signal {-code}" if code is not None else "closed the connection")
            message = f"the agent {self.name!r} {how}"
            if not isinstance(exc, ConnectionClosed):
                message += f": {_one_line(exc)}"
            tail = [sanitize_for_terminal(line) for line in transport.stderr_tail[-5:]]
            if tail:
                message += "\nlast stderr lines:\n" + "\n".join(f"  | {line}" for line in tail)
        async with self._lock:
            await self._drop()
        return AgentGone(message + "\n(the next call starts it again)")

    async def _drop(self) -> None:
        opening, self._opening, self._client = self._opening, None, None
        self.turns.clear()
        if opening is not None:
            await _close(opening)

    async def aclose(self) -> None:
        async with self._lock:
            await self._drop()


def is_agent_failure(exc: BaseException) -> bool:
    """Whether ``exc`` means the agent process or its connection is gone."""
    return isinstance(exc, TransportError)


async def _close(opening: connect) -> None:
    try:
        await opening.__aexit__(None, None, None)
    except (AcpError, OSError):
        pass


async def _deny(_params: s.RequestPermissionRequest) -> str | None:
    return None


def _one_line(exc: BaseException) -> str:
    return sanitize_for_terminal(" ".join(str(exc).split()) or type(exc).__name__)
