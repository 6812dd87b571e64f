"""Connect: start an agent from the UI and talk to it in the browser, while its traffic is
recorded into the database (and so shown in the timeline like any recording).

The agent runs through acplink's :class:`~acplink.client.client.Client` with the CLI's
confinement: file access limited to the session's working directory (``fs``), terminals only
if allowed, every permission question asked in the browser. Each chat keeps a list of events
(the browser follows them over server-sent events); a chat that fails to start keeps its error
and the agent's last stderr lines, and the rest of the UI goes on working.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shlex
from collections.abc import Sequence
from typing import Any

from .._tasks import TaskSet
from ..client.client import Client, connect
from ..client.permissions import PermissionPolicy
from ..client.session import Session
from ..errors import AcpError
from ..schema import RequestPermissionRequest
from ..tools.record import recording_transport
from ..transports.subprocess import SubprocessTransport
from .store import Ingest, Store

__all__ = ["Chat", "Chats"]

#: seconds an agent may take to start and answer initialize and session/new
START_TIMEOUT = 30.0


class Chat:
    """One agent started from the UI."""

    def __init__(self, chat_id: int, store: Store, command: Sequence[str], cwd: str, *, fs: bool,
                 terminal: bool) -> None:
        self.id = chat_id
        self.command = list(command)
        self.cwd = cwd
        self.fs = fs
        self.terminal = terminal
        self.ingest = Ingest(store, f"connect {shlex.join(self.command)}", batch=1)
        self.events: list[dict[str, Any]] = []
        self.changed = asyncio.Condition()
        self.client: Client | None = None
        self.session: Session | None = None
        self.error: str | None = None
        self._questions: dict[int, asyncio.Future[str | None]] = {}
        self._ids = itertools.count(1)
        #: the running turns (closing the chat cancels and awaits them)
        self._tasks = TaskSet(f"acplink-devtools-chat-{chat_id}")
        self._opening: Any = None

    @property
    def conn(self) -> int | None:
        return self.ingest.conn

    async def emit(self, event: dict[str, Any]) -> None:
        async with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    async def start(self) -> None:
        inner = SubprocessTransport(self.command, cwd=self.cwd, stderr="capture")
        transport = recording_transport(inner, None, listeners=[self.ingest],
                                        header={"tool": "acplink devtools connect", "command": self.command})
        policy = PermissionPolicy(default="ask", ask=self._ask, remember=False)
        self._opening = connect(transport, fs=self.fs, terminal=self.terminal, permission=policy)
        try:
            async with asyncio.timeout(START_TIMEOUT):
                self.client = await self._opening
                self.session = await self.client.new_session(self.cwd)
        except (AcpError, TimeoutError, OSError) as exc:
            await self._close_client()
            code = inner.returncode
            what = "did not start within 30 s" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
            self.error = f"the agent {shlex.join(self.command)!r} failed to start: {what}"
            if code is not None:
                self.error += f" (exit code {code})"
            await self.emit({"type": "failed", "message": self.error, "stderr": list(inner.stderr_tail)})
            return
        info = self.client.agent_info
        name = " ".join(x for x in (getattr(info, "title", None) or getattr(info, "name", None),
                                    getattr(info, "version", None)) if x) or "agent"
        await self.emit({"type": "ready", "agent": name, "session": self.session.session_id, "conn": self.conn})

    async def _ask(self, params: RequestPermissionRequest) -> str | None:
        qid = next(self._ids)
        fut: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._questions[qid] = fut
        await self.emit({"type": "permission", "id": qid, "title": params.tool_call.title or "",
                         "options": [{"id": o.option_id, "name": o.name, "kind": o.kind} for o in params.options]})
        try:
            return await fut
        finally:
            self._questions.pop(qid, None)

    def answer(self, qid: int, option: str | None) -> bool:
        fut = self._questions.get(qid)
        if fut is None or fut.done():
            return False
        fut.set_result(option)
        return True

    def prompt(self, text: str) -> str | None:
        """Start a turn; an error message when it cannot start."""
        if self.session is None or self._tasks.closed:
            return self.error or "the agent is not running"
        try:
            turn = self.session.prompt(text)
        except AcpError as exc:
            return str(exc)
        self._tasks.spawn(self._turn(turn))
        return None

    async def _turn(self, turn: Any) -> None:
        try:
            async for update in turn:
                await self.emit({"type": "update",
                                 "update": update.model_dump(mode="json", by_alias=True, exclude_none=True)})
            result = await turn
            await self.emit({"type": "stop", "reason": result.stop_reason})
        except AcpError as exc:
            await self.emit({"type": "error", "message": str(exc)})

    async def cancel(self) -> None:
        for fut in self._questions.values():
            if not fut.done():
                fut.set_result(None)
        if self.session is not None and not self.session.client.closed:
            with contextlib.suppress(AcpError):
                await self.session.cancel()

    async def _close_client(self) -> None:
        opening, self._opening = self._opening, None
        if opening is not None:
            with contextlib.suppress(AcpError, OSError):  # (after a failed opening: nothing left to close)
                await opening.__aexit__(None, None, None)
        self.client = None

    async def aclose(self) -> None:
        for fut in self._questions.values():
            if not fut.done():
                fut.cancel()
        await self._tasks.aclose()
        await self._close_client()
        self.ingest.close()


class Chats:
    """The chats of one devtools server (closed with it)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.chats: dict[int, Chat] = {}
        self._ids = itertools.count(1)

    async def start(self, command: Sequence[str], cwd: str, *, fs: bool = True, terminal: bool = True) -> Chat:
        chat = Chat(next(self._ids), self.store, command, cwd, fs=fs, terminal=terminal)
        self.chats[chat.id] = chat
        await chat.start()
        return chat

    async def aclose(self) -> None:
        for chat in list(self.chats.values()):
            await chat.aclose()
        self.chats.clear()
