"""The prompt lifecycle of a version whose prompt is answered with a receipt (``Protocol.turns``).

A version whose ``TurnRules.answer`` is ``"end"`` (v1) needs nothing here: the prompt's
response ends the turn (``AgentSideConnection``'s prompt wrapper). With ``"receipt"`` the
connection owns the lifecycle, for each session: a prompt is *inserted* (the echo, when the
version has one; the running state; the turn started; then the receipt); a prompt that arrives
while a turn runs is refused (``busy == "refuse"``) or *held* and inserted, in order, when the
turn ends (``"hold"``); every turn ends with the idle state carrying its stop reason (the
default one, ``cancelled``, ``error`` with the error, or whatever the handler returned). While
the turn waits for the user (permission, elicitation) the state is the waiting one. A cancel
ends the turn with ``cancelled`` and refuses held prompts. The shapes of what is sent come
from ``TurnRules`` and the version's agent codec; nothing here names a version. Turn tasks
belong to the connection: closing it cancels and awaits them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from .._tasks import TaskSet
from ..connection.base import RawJSON
from ..errors import InvalidRequest, RequestCancelled, RequestError
from ..protocol.rules import prompt_refusal

if TYPE_CHECKING:
    from ..connection.agent_side import Turn
    from ._conn import AppConnection

__all__ = ["Lifecycle"]

log = logging.getLogger("acplink.agent")


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


@dataclass
class _Session:
    """The lifecycle state of one session on this connection."""

    session_id: str
    held: deque[tuple[Any, asyncio.Future[tuple[dict[str, Any], asyncio.Event]]]] = field(default_factory=deque)
    task: asyncio.Future[None] | None = None
    state: str = ""
    #: the current message id of each chunk kind without one (per turn)
    ids: dict[str, str] = field(default_factory=dict)


class Lifecycle:
    """The receipt-answered prompt turns of one connection's sessions."""

    def __init__(self, conn: AppConnection) -> None:
        self.conn = conn
        self.rules = conn.protocol.turns
        self.codec = conn.protocol.agent_codec
        self.sessions: dict[str, _Session] = {}
        self.tasks = TaskSet("acplink-turns")  # (the running turns; closed with the connection)
        #: the requests during which a turn waits for the user
        self.waiting = conn.protocol.wires("request_permission", "create_elicitation")

    def _get(self, sid: str) -> _Session:
        st = self.sessions.get(sid)
        if st is None:
            st = self.sessions[sid] = _Session(sid, state=self.rules.idle_state)
        return st

    async def aclose(self) -> None:
        for st in self.sessions.values():
            self._reject_held(st)
        await self.tasks.aclose()

    # -- sending -------------------------------------------------------------------------------

    async def send(self, sid: str, update: dict[str, Any]) -> None:
        """Send ``update`` (already in the version's shape) for session ``sid``."""
        params = orjson.dumps({"sessionId": sid, "update": update})
        await self.conn.peer.notify(self.conn.protocol.wire("session_update"), params)

    async def _state(self, st: _Session, state: str, stop_reason: str | None = None,
                     error: dict[str, Any] | None = None) -> None:
        st.state = state
        await self.send(st.session_id, self.rules.state_update(state, stop_reason, error))

    async def send_app_update(self, sid: str, update: dict[str, Any]) -> None:
        """An update the app sent (in its vocabulary): through the codec, kept for replay, sent."""
        codec = self.codec
        st = self._get(sid)
        sess = self.conn.app.sessions.get(sid)

        def message_id(kind: str) -> str:
            if kind not in st.ids:
                st.ids[kind] = new_message_id()
            return st.ids[kind]

        def cancellable(tool_call_id: str) -> bool:
            return sess is not None and tool_call_id in sess.cancel_hooks

        out = codec.update(update, message_id=message_id, cancellable=cancellable, modes=self.conn.modes())
        if out is None:
            log.debug("ACP v%s has no form of a %r update; dropped", self.conn.protocol.version,
                      update.get("sessionUpdate"))
            return
        self.conn.journal_update(sid, update)
        message = codec.message_of(out)
        if sess is not None and message is not None:
            _remember(sess.messages, *message)
        await self.send(sid, out)

    # -- prompts -------------------------------------------------------------------------------

    def prompt_handler(self, run: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        """The handler of the version's prompt request: ``run`` runs the app's turn (the
        connection's prompt wrapper around the app's handler), its params the app's model."""

        async def prompt(params: Any) -> Any:
            return RawJSON(orjson.dumps(await self.prompt(params, run)))

        return prompt

    async def prompt(self, params: Any, run: Callable[[Any], Awaitable[Any]]) -> dict[str, Any]:
        sid = params.session_id
        sess = self.conn.app.get_session(sid)
        st = self._get(sid)
        action = self.rules.prompt_action(st.task is not None or bool(st.held))  # (the one busy rule)
        if action == "start":
            receipt, go = await self._insert(st, sess, params, run)
        elif action == "refuse":
            raise InvalidRequest(prompt_refusal(sid, True))
        else:
            fut: asyncio.Future[tuple[dict[str, Any], asyncio.Event]] = asyncio.get_running_loop().create_future()
            item = ((params, run), fut)
            st.held.append(item)
            try:
                receipt, go = await fut
            finally:
                if item in st.held:
                    st.held.remove(item)  # (the request itself was cancelled)
        go.set()  # the turn starts once this returns: the receipt is written first
        return receipt

    async def _insert(self, st: _Session, sess: Any, params: Any,
                      run: Callable[[Any], Awaitable[Any]]) -> tuple[dict[str, Any], asyncio.Event]:
        message_id = new_message_id()
        content = [b.to_wire() if hasattr(b, "to_wire") else b for b in params.prompt]
        _remember(sess.messages, "user", message_id, content)
        st.ids = {}
        go = asyncio.Event()
        st.task = self.tasks.spawn(self._turn(st, params, run, go), name=f"acplink-turn-{st.session_id}")
        echo = self.rules.echo_update(message_id, content)
        if echo is not None:
            await self.send(st.session_id, echo)
        await self._state(st, self.rules.running_state)
        return self.rules.receipt_result(message_id), go

    async def _turn(self, st: _Session, params: Any, run: Callable[[Any], Awaitable[Any]],
                    go: asyncio.Event) -> None:
        error: dict[str, Any] | None = None
        try:
            await go.wait()
            result = await run(params)
            reason = (result.value().get("stopReason") if isinstance(result, RawJSON)
                      else getattr(result, "stop_reason", None)) or self.rules.default_stop_reason
        except asyncio.CancelledError:
            turn = self.conn.turns.get(st.session_id)
            if self.conn.closed or turn is None or not turn.cancelled:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            reason = "cancelled"
        except Exception as exc:
            err = exc if isinstance(exc, RequestError) else None
            log.warning("the prompt turn of %s failed: %s", st.session_id, exc, exc_info=self.conn.peer.debug)
            reason = "error"
            error = {"code": err.code if err else -32603,
                     "message": err.message if err else "Internal error: the prompt handler failed"}
        finally:
            st.task = None
        await self._state(st, self.rules.idle_state, str(reason), error)
        while st.held:
            (next_params, next_run), fut = st.held.popleft()
            if fut.done():
                continue
            sess = self.conn.app.sessions.get(st.session_id)
            if sess is None:
                fut.set_exception(RequestCancelled("Request cancelled: the session was closed"))
                continue
            receipt, go = await self._insert(st, sess, next_params, next_run)
            if fut.done():
                go.set()  # (nobody waits for that receipt any more)
            else:
                fut.set_result((receipt, go))
            break

    def _reject_held(self, st: _Session) -> None:
        while st.held:
            _, fut = st.held.popleft()
            if not fut.done():
                fut.set_exception(RequestCancelled("Request cancelled: the session's prompts were cancelled"))

    def cancel(self, sid: str) -> asyncio.Future[None] | None:
        """A cancel: end the running turn (idle ``cancelled``), refuse held prompts."""
        st = self.sessions.get(sid)
        if st is None:
            return None
        self._reject_held(st)
        task = st.task
        if task is not None:
            self.conn.cancel_turn(sid)
            if st.state == self.rules.waiting_state:
                task.cancel()  # stop waiting for the user: the pending request is cancelled too
        return task

    async def close(self, sid: str) -> None:
        """The session closes: its turn is cancelled and has ended (its idle state sent)."""
        task = self.cancel(sid)
        if task is not None:
            await asyncio.wait({task})  # its idle `cancelled` goes out before the caller's answer
        self.sessions.pop(sid, None)

    async def replay(self, sid: str, messages: list[dict[str, Any]]) -> None:
        """Replay the conversation (resume), then the state snapshot."""
        for entry in messages:
            await self.send(sid, self.codec.replay_update(entry["role"], entry["messageId"], entry["content"]))

    async def snapshot(self, sid: str) -> None:
        st = self._get(sid)
        await self._state(st, self.rules.running_state if st.task is not None else self.rules.idle_state)

    # -- waiting for the user ------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def awaiting_user(self, method: str, params: Any) -> AsyncIterator[None]:
        """The waiting state while the running turn of the request's session waits for the user."""
        sid = params.get("sessionId") if isinstance(params, dict) else getattr(params, "session_id", None)
        st = self.sessions.get(sid) if isinstance(sid, str) and method in self.waiting else None
        if st is None or st.task is None or st.task is not asyncio.current_task():
            yield
            return
        await self._state(st, self.rules.waiting_state)
        try:
            yield
        finally:
            turn: Turn | None = self.conn.turns.get(st.session_id)
            if st.task is not None and not self.conn.closed and turn is not None and not turn.cancelled:
                await self._state(st, self.rules.running_state)
            else:
                st.state = self.rules.running_state


def _remember(messages: list[dict[str, Any]], role: str, message_id: str, content: Any) -> None:
    """Record a message (or a chunk of one) for replay: chunks of one message are joined."""
    blocks = content if isinstance(content, list) else [content]
    if messages and messages[-1]["messageId"] == message_id:
        last = messages[-1]["content"]
        for b in blocks:
            if last and b.get("type") == "text" and last[-1].get("type") == "text":
                last[-1] = {**last[-1], "text": last[-1]["text"] + b["text"]}
            else:
                last.append(b)
        return
    messages.append({"role": role, "messageId": message_id, "content": [dict(b) for b in blocks]})
