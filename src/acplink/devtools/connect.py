"""Connect: start an agent from the UI and talk to it in the browser, while its traffic is
recorded into the database (and so shown in the timeline like any recording).

The agent runs through acplink's :class:`~acplink.client.client.Client` with the CLI's
confinement: file access limited to the session's working directory (``fs``), terminals only
if allowed, every permission question asked in the browser. Each chat keeps a list of events
(the browser follows them over server-sent events); a chat that fails to start keeps its error
and the agent's last stderr lines, and the rest of the UI goes on working.

``acplink devtools -- AGENT_CMD`` starts its agent at launch (:meth:`Chats.launch`): the chat
starts in the background while the server comes up, and a prompt sent before it is ready waits
for it (:attr:`Chat.started`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import shlex
from collections.abc import Callable, Sequence
from typing import Any

from .._tasks import TaskSet
from .._text import sanitize_for_terminal
from ..client.client import Client, connect
from ..client.permissions import PermissionPolicy
from ..client.session import Session
from ..errors import AcpError, ConnectionClosed, TransportError
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
        #: a prompt turn is running (from the prompt until its stop or error event)
        self._running = False
        #: the running turns (closing the chat cancels and awaits them)
        self._tasks = TaskSet(f"acplink-devtools-chat-{chat_id}")
        self._opening: Any = None
        #: set once :meth:`start` has ended, the agent ready or failed
        self.started = asyncio.Event()

    @property
    def conn(self) -> int | None:
        return self.ingest.conn

    async def emit(self, event: dict[str, Any]) -> None:
        async with self.changed:
            self.events.append(event)
            self.changed.notify_all()

    async def start(self) -> None:
        try:
            await self._start()
        finally:
            self.started.set()

    async def _start(self) -> None:
        shown = shlex.join(self.command).replace("\n", "\\n")  # (one line, whatever the command)
        await self.emit({"type": "starting", "command": shown})
        inner = SubprocessTransport(self.command, cwd=self.cwd, stderr="capture")
        transport = recording_transport(inner, None, listeners=[self.ingest],
                                        header={"tool": "acplink devtools connect", "command": self.command})
        policy = PermissionPolicy(default="ask", ask=self._ask, remember=False)
        self._opening = connect(transport, fs=self.fs, terminal=self.terminal, permission=policy)
        stage = "initialize"
        try:
            async with asyncio.timeout(START_TIMEOUT):
                self.client = await self._opening
                stage = "session/new"
                self.session = await self.client.new_session(self.cwd)
        except (AcpError, TimeoutError, OSError) as exc:
            code = await inner.exit_code()  # (before closing: an exit of its own, not our stopping it)
            await self._close_client()
            self.error = _start_failure(inner, stage, exc, code)
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
            option = await fut
        except asyncio.CancelledError:
            # (withdrawn by the agent, or the chat closing): the question's buttons go inactive
            if not self._tasks.closed:
                self._tasks.spawn(self.emit({"type": "answered", "id": qid, "option": None}))
            raise
        finally:
            self._questions.pop(qid, None)
        # every page following the chat (and one reloaded later) shows the question answered
        await self.emit({"type": "answered", "id": qid, "option": option})
        return option

    def answer(self, qid: int, option: str | None) -> bool:
        fut = self._questions.get(qid)
        if fut is None or fut.done():
            return False
        fut.set_result(option)
        return True

    @property
    def busy(self) -> str | None:
        """Why a prompt cannot start now (a turn is running), or None."""
        if not self._running:
            return None
        if any(not f.done() for f in self._questions.values()):
            return "the agent is waiting for your answer to its permission question (or Cancel the turn)"
        return "the agent is still answering the previous prompt: wait for it to finish or Cancel it"

    def prompt(self, text: str) -> str | None:
        """Start a turn; an error message when it cannot start."""
        if self.session is None or self._tasks.closed:
            return self.error or "the agent is not running"
        if self.busy is not None:
            return self.busy
        try:
            turn = self.session.prompt(text)
        except AcpError as exc:
            return str(exc)
        self._running = True
        self._tasks.spawn(self._turn(text, turn))
        return None

    async def _turn(self, text: str, turn: Any) -> None:
        await self.emit({"type": "prompt", "text": text})  # (every page following the chat shows it)
        try:
            async for update in turn:
                await self.emit({"type": "update",
                                 "update": update.model_dump(mode="json", by_alias=True, exclude_none=True)})
            result = await turn
            self._running = False  # (before the stop event: a prompt sent on seeing it is taken)
            await self.emit({"type": "stop", "reason": result.stop_reason})
        except AcpError as exc:
            self._running = False
            await self.emit({"type": "error", "message": str(exc)})
        finally:
            self._running = False

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


def _start_failure(inner: SubprocessTransport, stage: str, exc: BaseException, code: int | None) -> str:
    """One line saying why an agent did not start: the wording of every start-up failure
    (:meth:`SubprocessTransport.start_failure`; its stderr lines are shown apart)."""
    if isinstance(exc, TimeoutError):
        why = f"the agent {inner.command_line!r} did not answer {stage} within {START_TIMEOUT:g} s"
    elif stage == "initialize" and (isinstance(exc, (ConnectionClosed, TransportError, OSError))
                                    or inner.echoed_initialize()):
        why = inner.start_failure(exc, code).splitlines()[0]
    else:  # the agent's own answer: an error
        why = f"the agent {inner.command_line!r} failed to start: {stage} failed: {str(exc) or type(exc).__name__}"
    # (the agent's own words: one line, and none of its control sequences, since the line is
    # also printed on the terminal of `acplink devtools -- AGENT_CMD`)
    return sanitize_for_terminal(why.splitlines()[0] if why else why)


class Chats:
    """The chats of one devtools server (closed with it)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.chats: dict[int, Chat] = {}
        self._ids = itertools.count(1)
        #: the starts running in the background (:meth:`launch`)
        self._starts = TaskSet("acplink-devtools-connect")

    def _new(self, command: Sequence[str], cwd: str, fs: bool, terminal: bool) -> Chat:
        chat = Chat(next(self._ids), self.store, command, cwd, fs=fs, terminal=terminal)
        self.chats[chat.id] = chat
        return chat

    async def start(self, command: Sequence[str], cwd: str, *, fs: bool = True, terminal: bool = True) -> Chat:
        """A chat whose agent has started (or failed to: :attr:`Chat.error`)."""
        chat = self._new(command, cwd, fs, terminal)
        await chat.start()
        return chat

    def launch(self, command: Sequence[str], cwd: str, *, fs: bool = True, terminal: bool = True,
               on_failed: Callable[[str], None] | None = None) -> Chat:
        """A chat whose agent starts in the background (call from the event loop);
        ``on_failed`` gets the error line if it does not start."""
        chat = self._new(command, cwd, fs, terminal)

        async def run() -> None:
            await chat.start()
            if chat.error is not None and on_failed is not None:
                on_failed(chat.error)

        self._starts.spawn(run(), name=f"acplink-devtools-start-{chat.id}", report=True)
        return chat

    async def aclose(self) -> None:
        await self._starts.aclose()
        for chat in list(self.chats.values()):
            await chat.aclose()
        self.chats.clear()
