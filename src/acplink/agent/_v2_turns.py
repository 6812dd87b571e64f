"""The v2 prompt lifecycle, owned by the SDK: receipts, held prompts, state updates, cancel.

For each session of a v2 connection: a prompt is *inserted* (a ``user_message`` echo, a
``running`` state update, the turn started, then the ``{"messageId"}`` receipt); a prompt that
arrives while a turn runs is *held* and inserted, in order, when the turn ends; every turn
ends with an ``idle`` state update carrying its stop reason (``end_turn``, ``cancelled``,
``error`` with the error, or whatever the handler returned). While the turn waits for the user
(permission, elicitation) the state is ``requires_action``. ``session/cancel`` and
``session/close`` end the turn with idle ``cancelled`` and answer held prompts ``-32800``.
Turn tasks belong to the connection: closing it cancels and awaits them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._tasks import TaskSet
from ..connection.base import RawJSON
from ..errors import InvalidParams, RequestCancelled, RequestError
from ..protocol import V1
from ..protocol.v2 import Method, Update
from ..schema.registry import method_info
from . import _v2_wire as wire

if TYPE_CHECKING:
    from ..connection.agent_side import Turn
    from ._v2_conn import VersionedAgentConnection

__all__ = ["V2Turns"]

log = logging.getLogger("acplink.agent")


@dataclass
class _Session:
    """The v2 lifecycle state of one session on this connection."""

    session_id: str
    held: deque[tuple[Any, asyncio.Future[tuple[dict[str, Any], asyncio.Event]]]] = field(default_factory=deque)
    task: asyncio.Future[None] | None = None
    state: str = "idle"
    #: the current message id of each chunk kind without one (per turn)
    ids: dict[str, str] = field(default_factory=dict)


class V2Turns:
    """The v2 sessions of one connection."""

    def __init__(self, conn: VersionedAgentConnection) -> None:
        self.conn = conn
        self.sessions: dict[str, _Session] = {}
        self.tasks = TaskSet("acplink-v2-turns")  # (the running turns; closed with the connection)

    def _get(self, sid: str) -> _Session:
        st = self.sessions.get(sid)
        if st is None:
            st = self.sessions[sid] = _Session(sid)
        return st

    async def aclose(self) -> None:
        for st in self.sessions.values():
            self._reject_held(st)
        await self.tasks.aclose()

    # -- sending -------------------------------------------------------------------------------

    async def _send(self, sid: str, update: dict[str, Any]) -> None:
        await self.conn.peer.notify(Method.SESSION_UPDATE, _dumps({"sessionId": sid, "update": update}))

    async def _state(self, st: _Session, state: str, **extra: Any) -> None:
        st.state = state
        await self._send(st.session_id, {"sessionUpdate": Update.STATE_UPDATE, "state": state, **extra})

    async def send_raw(self, sid: str, update: dict[str, Any]) -> None:
        await self._send(sid, update)

    async def send_update(self, sid: str, update: dict[str, Any]) -> None:
        """An update the app sent (v1-shaped): rewritten for v2, recorded for replay, sent."""
        st = self._get(sid)
        sess = self.conn.app.sessions.get(sid)

        def message_id(kind: str) -> str:
            if kind not in st.ids:
                st.ids[kind] = wire.new_message_id()
            return st.ids[kind]

        def cancellable(tool_call_id: str) -> bool:
            return sess is not None and tool_call_id in sess.cancel_hooks

        out = wire.update_to_v2(update, message_id=message_id, cancellable=cancellable, modes=self.conn._modes())
        if out is None:
            log.debug("v2: no v2 form for a %r update; dropped", update.get("sessionUpdate"))
            return
        if sess is not None and out["sessionUpdate"] == Update.AGENT_MESSAGE_CHUNK:
            _remember(sess.messages, "agent", out["messageId"], out["content"])
        await self._send(sid, out)

    # -- prompts -------------------------------------------------------------------------------

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        sid = params["sessionId"]
        sess = self.conn.app.get_session(sid)
        v1 = self.conn._params(method_info(V1.wire("prompt"), "request"), Method.SESSION_PROMPT,
                               {"sessionId": sid, "prompt": params["prompt"]})
        st = self._get(sid)
        if st.task is None and not st.held:
            receipt, go = await self._insert(st, sess, v1)
        else:
            fut: asyncio.Future[tuple[dict[str, Any], asyncio.Event]] = asyncio.get_running_loop().create_future()
            item = (v1, fut)
            st.held.append(item)
            try:
                receipt, go = await fut
            finally:
                if item in st.held:
                    st.held.remove(item)  # (the request itself was cancelled)
        go.set()  # the turn starts once this returns: the receipt is written first
        return receipt

    async def _insert(self, st: _Session, sess: Any, v1: Any) -> tuple[dict[str, Any], asyncio.Event]:
        message_id = wire.new_message_id()
        content = [b.to_wire() if hasattr(b, "to_wire") else b for b in v1.prompt]
        _remember(sess.messages, "user", message_id, content)
        st.ids = {}
        go = asyncio.Event()
        st.task = self.tasks.spawn(self._turn(st, v1, go), name=f"acplink-v2-turn-{st.session_id}")
        await self._send(st.session_id, {"sessionUpdate": Update.USER_MESSAGE, "messageId": message_id,
                                         "content": content})
        await self._state(st, "running")
        return {"messageId": message_id}, go

    async def _turn(self, st: _Session, v1: Any, go: asyncio.Event) -> None:
        extra: dict[str, Any] = {}
        try:
            await go.wait()
            result = await self.conn.router.requests[V1.wire("prompt")](v1)
            reason = (result.value().get("stopReason") if isinstance(result, RawJSON)
                      else getattr(result, "stop_reason", None)) or "end_turn"
        except asyncio.CancelledError:
            turn = self.conn.turns.get(st.session_id)
            if self.conn.closed or turn is None or not turn.cancelled:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            reason = "cancelled"
        except Exception as exc:
            err = exc if isinstance(exc, RequestError) else None
            log.warning("v2: the prompt turn of %s failed: %s", st.session_id, exc, exc_info=self.conn.peer.debug)
            reason = "error"
            extra["error"] = {"code": err.code if err else -32603,
                              "message": err.message if err else "Internal error: the prompt handler failed"}
        finally:
            st.task = None
        await self._state(st, "idle", stopReason=str(reason), **extra)
        while st.held:
            v1_next, fut = st.held.popleft()
            if fut.done():
                continue
            sess = self.conn.app.sessions.get(st.session_id)
            if sess is None:
                fut.set_exception(RequestCancelled("Request cancelled: the session was closed"))
                continue
            receipt, go = await self._insert(st, sess, v1_next)
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
        """``session/cancel``: end the running turn (idle ``cancelled``), refuse held prompts."""
        st = self.sessions.get(sid)
        if st is None:
            return None
        self._reject_held(st)
        task = st.task
        if task is not None:
            self.conn.cancel_turn(sid)
            if st.state == "requires_action":
                task.cancel()  # stop waiting for the user: the pending request is cancelled too
        return task

    async def close(self, p: dict[str, Any]) -> dict[str, Any]:
        sid = p.get("sessionId")
        if not isinstance(sid, str):
            raise InvalidParams("Invalid params: sessionId: a string is required", {"path": "sessionId"})
        task = self.cancel(sid)
        if task is not None:
            await asyncio.wait({task})  # its idle `cancelled` goes out before our answer
        self.sessions.pop(sid, None)
        if sid in self.conn.app.sessions:
            await self.conn._v1("close_session", {"sessionId": sid})
            self.conn.app.sessions.pop(sid, None)
        return {}

    # -- resume --------------------------------------------------------------------------------

    async def resume(self, p: dict[str, Any]) -> dict[str, Any]:
        sid = p.get("sessionId")
        if not isinstance(sid, str) or not isinstance(p.get("cwd"), str):
            raise InvalidParams("Invalid params for session/resume: sessionId and cwd are required")
        v1_params = {"mcpServers": [], **{k: p[k] for k in ("sessionId", "cwd", "mcpServers", "additionalDirectories", "_meta")
                     if p.get(k) is not None}}
        res = await self.conn._v1("resume_session", v1_params)
        sess = self.conn.app.get_session(sid)  # (the default: a session this process holds)
        if p.get("replayFrom") is not None:
            for entry in sess.messages:
                kind = Update.USER_MESSAGE if entry["role"] == "user" else Update.AGENT_MESSAGE
                await self._send(sid, {"sessionUpdate": kind, "messageId": entry["messageId"],
                                       "content": entry["content"]})
        st = self._get(sid)
        await self._state(st, "running" if st.task is not None else "idle")
        return self.conn._setup_result(res or {}, sid)

    # -- entities ------------------------------------------------------------------------------

    async def cancel_entity(self, p: dict[str, Any], key: str, what: str) -> dict[str, Any]:
        sid, eid = p.get("sessionId"), p.get(key)
        sess = self.conn.app.sessions.get(sid) if isinstance(sid, str) else None
        hook: Callable[[], Any] | None = None
        if sess is not None and isinstance(eid, str):
            hook = sess.cancel_hooks.get(eid)
        if hook is None or sess is None or not isinstance(eid, str):
            raise InvalidParams(f"Invalid params: no cancellable {what} {eid!r} in this session", {key: eid})
        status = sess.tool_calls.get(eid)
        if status in ("completed", "failed", "cancelled"):
            raise InvalidParams(f"Invalid params: the {what} {eid!r} already ended ({status})", {key: eid})
        sess.cancel_hooks.pop(eid, None)
        result = hook()
        if asyncio.iscoroutine(result):
            await result
        return {}

    # -- waiting for the user ------------------------------------------------------------------

    def permission_params(self, v1: dict[str, Any]) -> dict[str, Any]:
        """A v1 permission request → v2 (a ``title``, the tool call as the ``subject``)."""
        tool = v1.get("toolCall") or {}
        title = tool.get("title") or f"Allow {tool.get('toolCallId', 'this')}?"
        out: dict[str, Any] = {"sessionId": v1["sessionId"], "title": title, "options": v1.get("options", [])}
        if tool.get("toolCallId"):
            subject_tool = {k: tool[k] for k in ("toolCallId", "title", "kind", "status") if tool.get(k) is not None}
            out["subject"] = {"type": "tool_call", "toolCall": subject_tool}
        if v1.get("_meta") is not None:
            out["_meta"] = v1["_meta"]
        return out

    @contextlib.asynccontextmanager
    async def awaiting_user(self, sid: str | None) -> AsyncIterator[None]:
        """``requires_action`` while the running turn of ``sid`` waits for the user."""
        st = self.sessions.get(sid) if sid is not None else None
        if st is None or st.task is None or st.task is not asyncio.current_task():
            yield
            return
        await self._state(st, "requires_action")
        try:
            yield
        finally:
            turn: Turn | None = self.conn.turns.get(st.session_id)
            if st.task is not None and not self.conn.closed and turn is not None and not turn.cancelled:
                await self._state(st, "running")
            else:
                st.state = "running"


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


def _dumps(value: Any) -> bytes:
    import orjson

    return orjson.dumps(value)
