"""``connect(cmd, recover=True)``: a local agent that ends while the client runs is restarted.

When the agent process ends (a crash, a kill, an exit of its own) and the client did not close
it, :class:`AgentRecovery` starts the same command again, sends ``initialize``, and reopens
every session the client had open on the same :class:`~acplink.client.Session` objects:
``session/load`` where the new process advertises it (the conversation is replayed from the
agent's store into :attr:`Session.state`, which starts afresh), else ``session/resume`` (v1:
nothing is replayed, the state the client had is kept; v2: ``replayFrom: start``). A session
that cannot be reopened is closed here.

What was lost is reported, never redone: the prompt turn that was running fails (the error
of the lost connection) and its prompt is not sent again; the :class:`RecoveryReport` names
it (:class:`LostTurn`: the prompt, the updates and reply text received before the crash, and
what the agent's replayed history kept of that reply). A prompt sent while the agent is
being restarted waits for it. The restarts are bounded: more than ``limit`` of them within
``window`` seconds (a crash loop) and the client gives up: it stays closed, and waiting on it
raises :class:`~acplink.errors.RecoveryFailed` with the last reason.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._tasks import TaskSet
from ..errors import AcpError, PeerOutputNotJson, RecoveryFailed, UsageError
from ..transports.base import Transport
from ..transports.subprocess import SubprocessTransport
from ._questions import Questions
from .fs import FileBudget

if TYPE_CHECKING:
    from ..connection.client_side import ClientSideConnection
    from .client import Client
    from .session import PromptTurn, Session

__all__ = ["AgentRecovery", "LostTurn", "RecoveryReport"]

log = logging.getLogger("acplink.client")

#: seconds before each further try when a restarted agent fails to start
BACKOFF = (0.2, 0.5, 1.0, 2.0)
#: seconds a restarted agent may take to answer ``initialize``
START_TIMEOUT = 30.0


@dataclass
class LostTurn:
    """A prompt turn the agent's crash interrupted (it is never sent again)."""

    session_id: str
    #: the prompt's text
    prompt: str
    #: the session's updates that arrived during the turn, before the crash
    received_updates: int
    #: the agent's reply text received before the crash
    received_text: str
    #: the reply text the agent's replayed history has for the turn (None: not replayed, e.g.
    #: a v1 ``session/resume``)
    kept_text: str | None = None

    @property
    def missing_text(self) -> str | None:
        """Reply text the client received that the agent's history does not have (None: not
        known, no replay; "": nothing missing)."""
        if self.kept_text is None:
            return None
        if self.kept_text.startswith(self.received_text):
            return ""
        common = 0
        for a, b in zip(self.kept_text, self.received_text, strict=False):
            if a != b:
                break
            common += 1
        return self.received_text[common:]

    @property
    def unseen_text(self) -> str:
        """Reply text the agent's history has that never reached the client (sent as the
        agent was killed)."""
        kept = self.kept_text or ""
        return kept[len(self.received_text):] if kept.startswith(self.received_text) else ""


@dataclass
class RecoveryReport:
    """One restart of the agent: why, and what became of the sessions."""

    #: how the agent ended ("the agent 'cmd' was killed by signal 9")
    reason: str
    #: restarts so far (this one included)
    restarts: int
    #: session id -> how it was reopened ("load" or "resume")
    reopened: dict[str, Literal["load", "resume"]] = field(default_factory=dict)
    #: the sessions whose conversation the agent replayed (their state is the agent's history)
    replayed: set[str] = field(default_factory=set)
    #: session id -> why it could not be reopened (it is closed here)
    failed: dict[str, str] = field(default_factory=dict)
    #: the prompt turns the crash interrupted
    lost: list[LostTurn] = field(default_factory=list)


RecoveryObserver = Callable[[RecoveryReport], None]


class AgentRecovery:
    """Restarts ``client``'s agent when its process ends (see the module); ``spawn`` makes the
    transport of a new process. At most ``limit`` restarts within ``window`` seconds."""

    def __init__(self, client: Client, spawn: Callable[[], Transport], *, limit: int = 3,
                 window: float = 60.0, protocol_version: int | None = None) -> None:
        if limit < 1 or window <= 0:
            raise UsageError("recover: limit must be at least 1 and window positive")
        self.client = client
        self.spawn = spawn
        self.limit = limit
        self.window = window
        self.protocol_version = protocol_version
        #: seconds a restarted agent may take to answer ``initialize`` (then it is a failed start)
        self.start_timeout = START_TIMEOUT
        #: restarts so far
        self.restarts = 0
        #: the last restart's report (None: none yet)
        self.last: RecoveryReport | None = None
        #: set when it gave up (a crash loop, a process that is not an agent): the client is closed
        self.failure: RecoveryFailed | None = None
        #: called with each restart's report, once its sessions are reopened
        self.observers: list[RecoveryObserver] = []
        self._times: collections.deque[float] = collections.deque()
        self._tasks = TaskSet("agent recovery")
        self._current: asyncio.Future[None] | None = None
        self._for: ClientSideConnection | None = None

    def start(self) -> None:
        """Watch the agent (``connect`` calls this once the client is initialized)."""
        self._tasks.spawn(self._watch())

    @property
    def busy(self) -> bool:
        """A restart is under way."""
        return self._current is not None and not self._current.done()

    async def _watch(self) -> None:
        while self.failure is None and not self.client._closing:
            await self.client.connection.wait_closed()
            if self.client._closing:
                return
            try:
                await self.wait()
            except RecoveryFailed:  # (kept in :attr:`failure`, for whoever uses the client next)
                return

    async def wait(self) -> RecoveryReport | None:
        """Wait for the restart under way, or start one if the agent is gone; the last
        restart's report (None: the agent never had to be restarted).
        :class:`~acplink.errors.RecoveryFailed` once it gave up."""
        if self.failure is None and not self.busy and self.client.connection.closed \
                and self._for is not self.client.connection:
            self._for = self.client.connection
            self._current = self._tasks.spawn(self._recover(self._for))
        if self._current is not None and not self._current.done():
            await asyncio.shield(self._current)  # (a waiter cancelled does not stop the restart)
        if self.failure is not None:
            raise self.failure
        return self.last

    async def aclose(self) -> None:
        await self._tasks.aclose()

    def _give_up(self, message: str) -> None:
        self.failure = RecoveryFailed(message)
        log.warning("%s", message)

    async def _recover(self, conn: ClientSideConnection) -> None:
        try:
            await self._recover_from(conn)
        except Exception as exc:  # (a bug here must end in an error the user sees, not a silent task)
            log.exception("restarting the agent failed")
            self._give_up(f"the agent could not be restarted: {type(exc).__name__}: {exc}")

    async def _recover_from(self, conn: ClientSideConnection) -> None:
        client = self.client
        reason = await _why_it_ended(client.transport, conn)
        if isinstance(conn.peer.close_reason, PeerOutputNotJson):
            self._give_up(f"{reason}; it is not restarted (its output is not ACP)")
            return
        sessions = [sess for sess in client.sessions.values() if not sess.closed]
        lost = [(sess, turn) for sess in sessions if (turn := sess.last_turn) is not None and _interrupted(turn, conn)]
        if not await self._restart(reason):
            return
        report = RecoveryReport(reason, self.restarts)
        for sess in sessions:
            if not sess.closed:  # (closed by its user meanwhile: not reopened)
                await self._reopen(sess, report)
        for sess, turn in lost:
            report.lost.append(_lost_turn(sess, turn, sess.session_id in report.replayed))
        self.last = report
        for observer in list(self.observers):
            try:
                observer(report)
            except Exception:  # an observer's bug must not stop the others
                log.exception("a recovery observer failed")

    async def _restart(self, reason: str) -> bool:
        """Start the agent again (a few tries when it fails to start); False when it gave up."""
        client = self.client
        loop = asyncio.get_running_loop()
        tries = 0
        while True:
            now = loop.time()
            self._times.append(now)
            while self._times and self._times[0] < now - self.window:
                self._times.popleft()
            if len(self._times) > self.limit:
                self._give_up(f"{reason}; restarted {self.limit} times within {self.window:g} s, it is not "
                              f"restarted again (a crash loop)")
                return False
            self.restarts += 1
            try:
                await replace_transport(client, self.spawn())
                async with asyncio.timeout(self.start_timeout):
                    if self.protocol_version is None:
                        await client.start()
                    else:
                        await client.start(protocol_version=self.protocol_version)
                return True
            except (AcpError, OSError, TimeoutError) as exc:
                why = exc if str(exc) else AcpError(f"no answer to initialize within {self.start_timeout:g} s")
                reason = await _why_it_ended(client.transport, client.connection, why)
                log.warning("the restarted agent failed to start: %s", reason)
                await asyncio.sleep(BACKOFF[min(tries, len(BACKOFF) - 1)])
                tries += 1

    async def _reopen(self, sess: Session, report: RecoveryReport) -> None:
        client = self.client
        method: Literal["load", "resume"] | None = (
            "load" if client.offers("load_session") else "resume" if client.offers("resume_session") else None)
        if method is None:
            report.failed[sess.session_id] = "the restarted agent cannot reopen sessions (no session/load or resume)"
        else:
            try:
                if await reopen_existing(client, sess, method):
                    report.replayed.add(sess.session_id)
                report.reopened[sess.session_id] = method
                return
            except AcpError as exc:
                report.failed[sess.session_id] = str(exc)
        sess.closed = True
        client._forget(sess.session_id)


async def replace_transport(client: Client, transport: Transport) -> None:
    """``client`` goes on over ``transport`` (a restarted agent): the old connection is closed,
    the terminals of the old agent are killed, and a new connection (not started) takes its
    place; the sessions, handlers and MCP registrations stay."""
    await client.connection.aclose()
    if client.terminals is not None:
        await client.terminals.aclose()
    client.transport = transport
    client._fs.clear()
    client._fs_budget = FileBudget(drain=transport.drain)
    client.connection = client._connect(transport)
    client.mcp.rebind(client.connection)
    questions = Questions(client.connection.tasks)
    questions.observers = client.question_observers
    client._questions = questions


async def reopen_existing(client: Client, sess: Session, method: Literal["load", "resume"]) -> bool:
    """Reopen ``sess`` itself on a restarted agent: ``session/load``, or ``session/resume``
    (replaying where the version can); True when the conversation was replayed (``sess.state``
    started afresh and holds the agent's history)."""
    sid = sess.session_id
    fields: dict[str, Any] = {"session_id": sid, "cwd": sess.cwd}
    replayed = method == "load" or client._resume_replays()
    if method == "load":
        fields["mcp_servers"] = []
    elif replayed:
        fields["replay_from"] = {"type": "start"}
    if replayed:
        sess._reset_state()
    client.sessions[sid] = sess
    waiting, sess._turn = sess._turn, None  # (a prompt waiting for the restart: not fed the replay)
    try:
        await client._opening(sid, f"{method}_session", fields)
    finally:
        if sess._turn is None and waiting is not None and not waiting.done:
            sess._turn = waiting
            if replayed:  # (its prompt, recorded in the state the replay replaced)
                sess._record_prompt(waiting.request)
    return replayed


def _interrupted(turn: PromptTurn, conn: ClientSideConnection) -> bool:
    """The turn went out on the lost connection and got no answer (the crash took it down)."""
    return turn._sent_on is conn and turn.response is None and not (turn.done and turn._task.cancelled())


def _prompt_text(turn: PromptTurn) -> str:
    return "".join(getattr(block, "text", "") for block in turn.request.prompt)


def _lost_turn(sess: Session, turn: PromptTurn, replayed: bool) -> LostTurn:
    lost = LostTurn(sess.session_id, _prompt_text(turn), turn.received, turn.reply_text)
    if not replayed:
        return lost
    # the replayed history's reply to the last prompt with this text (the interrupted turn)
    messages = sess.state.messages
    last_user = max((i for i, m in enumerate(messages) if m.role == "user" and m.text == lost.prompt), default=None)
    lost.kept_text = "" if last_user is None else "".join(
        m.text for m in messages[last_user + 1:] if m.role == "agent")
    return lost


async def _why_it_ended(transport: Transport, conn: ClientSideConnection, exc: BaseException | None = None) -> str:
    """How the agent ended, in one line (its exit code or signal and its last stderr line)."""
    if isinstance(transport, SubprocessTransport):
        code = await transport.exit_code()
        how = (f"exited with code {code}" if code is not None and code >= 0
               else f"was killed by signal {-code}" if code is not None
               else f"failed to start ({exc})" if exc is not None else "closed the connection")
        tail = transport.stderr_tail
        said = f" (its last words: {tail[-1].strip()!r})" if tail and tail[-1].strip() else ""
        return f"the agent {transport.command_line!r} {how}{said}"
    reason = exc or conn.peer.close_reason
    return f"the agent closed the connection ({reason})" if reason is not None else "the agent closed the connection"
