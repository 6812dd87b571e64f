"""Client-side sessions: ``prompt()`` streams typed updates and ends with the stop reason.

One :class:`Session` and one :class:`PromptTurn` for every protocol version: what differs is
asked of the protocol in use (``client.connection.protocol``): its method names and table
(which calls exist, their shapes and the capabilities that gate them), its turn rules
(``protocol.turns``: the response ends the turn, or a receipt comes first and a state update
ends it) and its client codec (``protocol.client_codec``: a native reducer and the views of its
updates in acplink's vocabulary, for a version whose updates are not v1's).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._tasks import TaskSet
from ..connection.rules import prompt_refusal
from ..errors import AcpError, ConnectionClosed, ProtocolError, RequestCancelled, RequestTimeout, UsageError
from ..protocol import Protocol
from ..protocol.codec import ClientCodec
from ..protocol.turns import TurnEnd
from ..schema import _generated as s
from .state import SessionState

if TYPE_CHECKING:
    from .client import Client

__all__ = ["PromptTurn", "Session"]

log = logging.getLogger("acplink.client")

#: seconds a cancelled prompt turn waits, by default, for the agent's ``cancelled`` answer
CANCEL_WAIT = 5.0


#: per protocol object (by id, the object kept alive): its prompt's wire method, params model
#: and text block model (looked up once: a versioned models module resolves names lazily)
_PROMPT_TYPES: dict[int, tuple[Protocol, str, Any, Any]] = {}


def _prompt_types(protocol: Protocol) -> tuple[Protocol, str, Any, Any]:
    found = _PROMPT_TYPES.get(id(protocol))
    if found is None or found[0] is not protocol:
        wire = protocol.wire("prompt")
        info = protocol.info(wire)
        assert info is not None and info.params_type is not None
        found = _PROMPT_TYPES[id(protocol)] = (protocol, wire, info.params_type, protocol.models.TextContent)
    return found


class Session:
    """One ACP session as a client sees it. :attr:`state` folds every update received, in
    acplink's vocabulary (:class:`SessionState`, whatever the version); a version with a client
    codec also folds its own updates into :attr:`native_state` (ACP v2: a
    :class:`~acplink.protocol.v2.client_state.V2SessionState`)."""

    #: seconds a cancelled prompt turn waits for the agent's ``cancelled`` answer (see
    #: :class:`PromptTurn`); ``prompt(..., cancel_wait=...)`` overrides it for one turn
    cancel_wait: float = CANCEL_WAIT

    def __init__(self, client: Client, session_id: str, cwd: str, *,
                 additional_directories: Sequence[str] = ()) -> None:
        self.client = client
        self.session_id = session_id
        self.cwd = cwd
        self.additional_directories = list(additional_directories)
        self.state = SessionState()
        self.closed = False
        self._turn: PromptTurn | None = None
        #: the turn started last (kept after it ended: a crash recovery asks whether it ended)
        self.last_turn: PromptTurn | None = None
        self._codec: ClientCodec | None = None
        #: the version's own state of the session (None for a version speaking acplink's vocabulary)
        self.native_state: Any = None
        self._views: list[Any] = []
        self._reset_state()

    def _reset_state(self) -> None:
        """Start :attr:`state` afresh (before a reopening call replays the conversation)."""
        self.state = SessionState()
        codec = self._codec = self.client.connection.protocol.client_codec
        self.native_state = None
        if codec is not None:
            self.native_state = codec.new_state(self.session_id)
            self.state.session_id = self.session_id

    def __repr__(self) -> str:
        return f"<Session {self.session_id} cwd={self.cwd!r}>"

    @property
    def protocol(self) -> Protocol:
        """The protocol version in use."""
        return self.client.connection.protocol

    @property
    def v2_state(self) -> Any:
        """The older name of :attr:`native_state` (an ACP v2 session's ``V2SessionState``)."""
        return self.native_state

    @property
    def views(self) -> list[Any]:
        """The update delivered last in acplink's vocabulary (what :attr:`state` folded for it):
        the update itself, or its views (none, one or several) for a version with a client codec."""
        return self._views

    def views_of(self, update: Any, shown: SessionState) -> list[Any]:
        """``update`` in acplink's vocabulary, as :attr:`views` (for a reader that consumes the
        updates later, e.g. by iterating a turn): ``shown`` is that reader's own state of what it
        displayed, folded here (it tells a new message from one already seen)."""
        codec = self._codec
        if codec is None:
            return [update]
        views = codec.views(update, self.native_state, shown)
        for view in views:
            shown.apply(view)
        return views

    @property
    def roots(self) -> list[str]:
        """The directories the client lets the agent touch in this session."""
        return [self.cwd, *self.additional_directories]

    def _setup(self, response: Any) -> None:
        """The result of the call that opened (or reopened) the session."""
        codec = self._codec
        if codec is None:
            self.state.apply_session_setup(response)
        else:
            codec.apply_setup(self.native_state, response)

    def _deliver(self, update: Any) -> None:
        codec = self._codec
        if codec is None:
            self.state.apply(update)
            self._views = [update]
        else:
            self.native_state.apply(update)
            views = self._views = codec.views(update, self.native_state, self.state)
            for view in views:
                self.state.apply(view)
        if self._turn is not None:
            self._turn._push(update)

    def _check_open(self) -> None:
        if self.closed:
            raise UsageError(f"session {self.session_id} is closed")
        if self.client.closed:
            recovery = self.client.recovery
            if recovery is not None and recovery.failure is not None:  # (it gave up restarting the agent)
                raise recovery.failure
            raise UsageError("the client connection is closed")

    def prompt(self, prompt: str | Sequence[Any], *, timeout: float | None = None,
               cancel_wait: float | None = None, **fields: Any) -> PromptTurn:
        """Send ``session/prompt``. Iterate the result for updates; await it for the end of the
        turn (see :class:`PromptTurn`).

        ``timeout``: seconds the turn may take; then it is cancelled at the agent and waiting
        on it raises :class:`RequestTimeout`. ``cancel_wait``: see :class:`PromptTurn`.
        """
        self._check_open()
        running = self._turn is not None and not self._turn.done
        action = self.protocol.turns.prompt_action(running)  # (the one busy rule)
        if action != "start":
            # (where the version would hold it, a Session still runs one PromptTurn at a time:
            # its updates and end are the turn's; another session, or awaiting this turn, does)
            held = " (the agent would hold it; a Session runs one prompt turn at a time)" if action == "hold" else ""
            raise UsageError(f"{prompt_refusal(self.session_id, True)}{held}")
        wait = self.cancel_wait if cancel_wait is None else cancel_wait
        if (timeout is not None and not timeout > 0) or not wait >= 0:
            raise UsageError(f"timeout must be positive and cancel_wait not negative (got {timeout!r}, {wait!r})")
        _proto, _wire, params_type, text_type = _prompt_types(self.client.connection.protocol)
        blocks = [text_type(text=prompt)] if isinstance(prompt, str) else list(prompt)
        codec = self._codec
        refused = codec.prompt_refusal(blocks) if codec is not None else None
        if refused is not None:
            raise UsageError(refused)
        request = params_type(session_id=self.session_id, prompt=blocks, **fields)
        self._record_prompt(request)
        # the turn starts now, not when its task sends the prompt: a cancel in between must
        # not be undone by it (see cancel())
        self.client._questions.turn_started(self.session_id)
        turn = PromptTurn(self, request, timeout=timeout, cancel_wait=wait)
        self._turn = self.last_turn = turn
        return turn

    def _record_prompt(self, request: Any) -> None:
        """The user's message is part of the conversation (where the agent does not echo it
        back): it is recorded, so the agent's reply starts a new message in :attr:`state` (a
        local id keeps two prompts in a row apart; it is not sent)."""
        if self.protocol.turns.echo_kind is None and self._codec is None:
            local_id = f"local-{uuid.uuid4().hex}"
            for block in request.prompt:
                self.state.apply(s.UserMessageChunk(content=block, message_id=local_id))

    async def cancel(self) -> None:
        """Send ``session/cancel``; the running turn ends with stopReason ``cancelled``."""
        if await self._prompt_out():
            conn = self.client.connection
            await conn.notify(conn.protocol.wire("cancel"), session_id=self.session_id)

    async def _prompt_out(self) -> bool:
        """Before a cancel: wait until the running turn's prompt was written (its task may not
        have run yet), so that the agent sees the prompt first (a cancel before it would be
        ignored, and the turn would run on); the turn's questions are answered "cancelled"
        from now on meanwhile. False when the client closed."""
        turn = self._turn
        if turn is not None and not turn._out.is_set():
            self.client._questions.cancel(self.session_id)
            await turn._out.wait()
        return not self.client.closed

    async def _session_call(self, name: str, **fields: Any) -> Any:
        """The protocol's ``name`` request for this session (UsageError when it has none)."""
        self._check_open()
        conn = self.client.connection
        return await conn.call(conn.protocol.wire(name), session_id=self.session_id, **fields)

    def _instead(self, name: str, what: str) -> None:
        proto = self.client.connection.protocol
        if not proto.has(name):
            raise UsageError(f"ACP v{proto.version} has no {what}: they are config options (set_config_option)")

    async def set_mode(self, mode_id: str) -> None:
        self._instead("set_mode", "session modes")
        await self._session_call("set_mode", mode_id=mode_id)
        self.state.set_current_mode(mode_id)

    async def set_config_option(self, config_id: str, value: Any) -> Any:
        self._check_open()
        params: dict[str, Any] = {"sessionId": self.session_id, "configId": config_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"
        conn = self.client.connection
        resp = await conn.call(conn.protocol.wire("set_config_option"), params)
        if resp.config_options is not None:
            codec = self._codec
            if codec is None:
                self.state.set_config_options(list(resp.config_options))
            else:
                codec.set_config_options(self.native_state, list(resp.config_options))
        return resp

    async def set_model(self, model_id: str) -> None:
        """Legacy model selector (``session/set_model``, schema 0.10.3)."""
        self._instead("set_model", "session/set_model: models")
        await self._session_call("set_model", model_id=model_id)
        self.state.set_current_model(model_id)

    async def cancel_tool_call(self, tool_call_id: str) -> Any:
        """``tool_call/cancel`` where the version has it (ACP v2; the agent confirms with a final
        ``tool_call_update``); UsageError where it has not."""
        return await self._session_call("cancel_tool_call", tool_call_id=tool_call_id)

    async def cancel_terminal(self, terminal_id: str) -> Any:
        """``terminal/cancel`` where the version has it (ACP v2; the agent confirms with a
        ``terminal_update`` setting ``exitStatus``); UsageError where it has not."""
        return await self._session_call("cancel_terminal", terminal_id=terminal_id)

    async def close(self) -> None:
        """``session/close`` when the agent offers it (a version where it is not gated by a
        capability: always); the session is unusable afterwards."""
        if self.closed:
            return
        self.closed = True
        self.client._forget(self.session_id)
        if self.client.offers("close_session") and not self.client.connection.closed:  # (an agent gone: no call)
            conn = self.client.connection
            await conn.call(conn.protocol.wire("close_session"), session_id=self.session_id)
        turn = self._turn
        if turn is not None and not turn.done:  # (a turn only a state update ends: none came before the answer)
            turn._fail(ProtocolError(f"session {self.session_id} was closed before its turn ended"))


class PromptTurn:
    """A running prompt turn.

    ``async for update in turn`` streams the agent's updates (:data:`schema.SessionUpdate`);
    ``await turn`` gives the :class:`PromptResponse`; ``await turn.text()`` the agent's reply
    as a string; ``turn.text_chunks()`` streams the reply's text pieces.

    How the turn ends is the protocol's (``protocol.turns``): in v1 the prompt's response
    ends it. In a version whose prompt is answered with a *receipt* (ACP v2), iterating gives
    the receipt first (:attr:`receipt`; in v2 its ``message_id`` is the inserted message's id),
    then the session's updates up to and including the state update that ends the turn (v2:
    ``state_update`` ``idle``), which ``await turn`` gives (``stop_reason``, ``usage``,
    ``error``). Updates that arrive before the receipt wait behind it; the turn ends at the
    first ending update after the receipt or, when the receipt comes late, at one that followed
    the echo of its message (v2's ``user_message`` with the receipt's id).

    The turn follows asyncio cancellation: when the task waiting on it (iterating, awaiting,
    ``text()``) is cancelled, e.g. by ``asyncio.timeout`` or ``asyncio.wait_for``, when an
    ``async with session.prompt(...) as turn:`` block is left before the turn ended, or when
    the prompt's ``timeout`` passes, the turn is cancelled at the agent (``session/cancel``)
    and the agent's answer (stop reason ``cancelled``) is awaited for up to
    :attr:`cancel_wait` seconds, so the session is ready for the next prompt; then the
    cancellation goes on (``asyncio.timeout`` still raises ``TimeoutError``). Past that
    bound, or when the waiting task is cancelled a second time, the request is dropped
    locally (``$/cancel_request``) instead of waited for.
    """

    def __init__(self, session: Session, request: s.PromptRequest, *, timeout: float | None = None,
                 cancel_wait: float = CANCEL_WAIT) -> None:
        self.session = session
        rules = session.client.connection.protocol.turns
        self._rules = rules
        #: the prompt's answer in a version where a receipt answers it (else None)
        self.receipt: Any = None
        #: the update that ends the turn, in such a version (its future; None: the response ends it)
        self._end: asyncio.Future[Any] | None = \
            asyncio.get_running_loop().create_future() if rules.receipt else None
        self._early_ends: dict[str | None, Any] = {}
        self._last_echo: str | None = None
        self.request = request
        #: seconds a cancelled turn waits for the agent's answer
        self.cancel_wait = cancel_wait
        self.timeout = timeout
        self.response: s.PromptResponse | None = None
        self._updates: collections.deque[s.SessionUpdate] = collections.deque()
        #: the number of the session's updates that arrived during the turn
        self.received = 0
        self._sent_on: Any = None  # the connection the prompt went out on
        self._text: list[str] = []
        self._wakeup = asyncio.Event()
        #: owns the prompt request's task and the cancelling one (aclose cancels and awaits them)
        self._tasks = TaskSet("prompt turn")
        self._stopping: asyncio.Future[None] | None = None
        self._timed_out = False
        self._timer: asyncio.TimerHandle | None = None
        loop = asyncio.get_running_loop()
        #: set once the prompt request was written (or the turn ended without writing it)
        self._out = asyncio.Event()
        self._task: asyncio.Future[s.PromptResponse] = self._tasks.spawn(self._run())
        self._task.add_done_callback(lambda _: self._out.set())
        if timeout is not None:
            self._timer = loop.call_later(timeout, self._expire)

    async def _run(self) -> s.PromptResponse:
        try:
            # (waiters run after this step, in which _exchange writes the request)
            self._out.set()
            resp: s.PromptResponse = await self._exchange()
            self.response = resp
            return resp
        finally:
            if self._timer is not None:
                self._timer.cancel()
            self._wakeup.set()

    async def _exchange(self) -> Any:
        """The prompt's exchange with the agent; what ends the turn: the response, or (after
        a receipt) the update that ends it."""
        conn = self._sent_on = await self.session.client._live_connection()  # (an agent restarting: the new one)
        wire = _prompt_types(conn.protocol)[1]
        end = self._end
        if end is None:
            return await conn.call(wire, self.request)
        receipt = await conn.call(wire, self.request)
        self.receipt = receipt
        self._updates.appendleft(receipt)  # (the receipt goes first)
        self._wakeup.set()
        early = self._early_ends.get(getattr(receipt, "message_id", None) if self._rules.echo_kind else None)
        if early is not None and not end.done():
            end.set_result(early)
        if not end.done():  # (an update ends the turn: unless the connection closes first)
            async with TaskSet("prompt turn end") as scope:
                closing = scope.spawn(conn.wait_closed())
                await asyncio.wait({end, closing}, return_when=asyncio.FIRST_COMPLETED)
            if not end.done():
                raise ConnectionClosed(f"the connection closed before the turn of session {self.session.session_id} "
                                       "ended")
        return await end

    def _push(self, update: Any) -> None:
        end = self._end
        if end is not None and end.done():
            return
        self._updates.append(update)
        self.received += 1
        text = _reply_text(update)
        if text is not None:
            self._text.append(text)
        self._wakeup.set()
        if end is None:
            return
        rules = self._rules
        if rules.is_echo(update):
            self._last_echo = getattr(update, "message_id", None)
        if rules.end_of(update) is None:
            return
        if self.receipt is not None:
            end.set_result(update)
        elif rules.echo_kind is None:  # (the receipt is late; no echo to tell turns apart: ours)
            self._early_ends.setdefault(None, update)
        elif self._last_echo is not None:  # the receipt is late: this end may be ours
            self._early_ends.setdefault(self._last_echo, update)

    def _fail(self, exc: BaseException) -> None:
        """End a turn that an update ends with an error (an invalid update, a session closed
        under it)."""
        end = self._end
        if end is not None and not end.done():
            end.set_exception(exc)
            self._wakeup.set()

    @property
    def message_id(self) -> str | None:
        """The id of the inserted user message (once the receipt arrived), where a receipt says it."""
        return getattr(self.receipt, "message_id", None)

    @property
    def done(self) -> bool:
        return self._task.done()

    @property
    def stop_reason(self) -> str | None:
        response = self.response
        if response is None:
            return None
        if self._end is None:
            reason: str | None = response.stop_reason
            return reason
        ended: TurnEnd | None = self._rules.end_of(response)
        return ended.stop_reason if ended is not None else None

    async def cancel(self) -> None:
        """Ask the agent to cancel this turn (``session/cancel``); returns at once, the turn
        ends when the agent answers (stop reason ``cancelled``)."""
        await self.session.cancel()

    # -- results -------------------------------------------------------------------------------

    def __aiter__(self) -> PromptTurn:
        return self

    async def __anext__(self) -> Any:
        if self._end is not None:  # the receipt comes first: updates that arrived before it wait behind it
            while self.receipt is None and not self._task.done():
                await self._next_event()
        updates = self._updates
        while not updates:
            if self._task.done():
                self._finish()
                raise StopAsyncIteration
            await self._next_event()
        return updates.popleft()

    async def _next_event(self) -> None:
        """Wait until something arrives (an update, the answer); a caller cancelled meanwhile
        stops the turn first (it is cancelled and its end awaited) and re-raises."""
        self._wakeup.clear()
        await self._stopping_on_cancel(self._wakeup.wait())

    async def _stopping_on_cancel(self, waiting: Awaitable[Any]) -> None:
        try:
            await waiting
        except asyncio.CancelledError:
            await self._stop_and_wait()
            raise

    async def result(self) -> s.PromptResponse:
        """Wait for the response (updates still land in the session state)."""
        task = self._task
        if not task.done():
            await self._stopping_on_cancel(asyncio.wait({task}))
        self._updates.clear()
        return self._finish()

    def __await__(self) -> Generator[Any, None, s.PromptResponse]:
        return self.result().__await__()

    @property
    def reply_text(self) -> str:
        """The text of the agent's reply received so far."""
        return "".join(self._text)

    async def text(self) -> str:
        """Wait for the end of the turn; the agent's reply: the text of the turn's
        ``agent_message_chunk`` updates, joined (iterated or not)."""
        await self.result()
        return "".join(self._text)

    async def text_chunks(self) -> AsyncIterator[str]:
        """The text of the agent's reply as it streams (the turn's other updates are skipped)."""
        async for update in self:
            text = _reply_text(update)
            if text is not None:
                yield text

    def _finish(self) -> s.PromptResponse:
        """The turn is over: the session is free; the response, or the turn's error raised."""
        if self.session._turn is self:
            self.session._turn = None
        sid = self.session.session_id
        if self._timed_out:
            raise RequestTimeout(f"the prompt turn of session {sid} did not end within {self.timeout} s "
                                 f"(cancelled; stop reason {self.stop_reason!r})")
        if self._task.cancelled():
            raise RequestCancelled(f"the prompt turn of session {sid} was dropped before the agent answered")
        return self._task.result()

    # -- cancellation --------------------------------------------------------------------------

    async def __aenter__(self) -> PromptTurn:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stop_and_wait()
        if self._task.done() and self.session._turn is self:
            self.session._turn = None

    def _expire(self) -> None:  # the prompt's timeout passed
        if not self._task.done():
            self._timed_out = True
            self._stop()

    def _stop(self) -> asyncio.Future[None]:
        if self._stopping is None:
            self._stopping = self._tasks.spawn(self._cancel_at_agent())
        return self._stopping

    async def _stop_and_wait(self) -> None:
        """Cancel the turn at the agent (unless it ended) and wait for the end of that, which
        takes at most :attr:`cancel_wait` seconds. Cancelled meanwhile: stop waiting at once
        (the request is dropped locally)."""
        if self._task.done():
            return
        stopping = self._stop()
        try:
            await asyncio.wait({stopping})
        except asyncio.CancelledError:
            stopping.cancel()
            raise

    async def _cancel_at_agent(self) -> None:
        task = self._task
        try:
            async with asyncio.timeout(self.cancel_wait):
                if not task.done():  # (an answer that crossed the cancellation: nothing to cancel)
                    await self.session.cancel()
                    await asyncio.wait({task})
        except TimeoutError:
            log.warning("session %s: the agent did not end the cancelled prompt turn within %s s; "
                        "the request is dropped", self.session.session_id, self.cancel_wait)
        except AcpError:  # the connection is closing: the request fails with it
            pass
        finally:
            if not task.done():
                task.cancel()  # dropped locally: sends $/cancel_request
                await asyncio.wait({task})
            elif not task.cancelled():
                task.exception()  # (retrieved: a turn cancelled by its caller ends without a result)

    async def aclose(self) -> None:
        """Stop waiting for this turn at once: the request is dropped locally (sends
        ``$/cancel_request``, not ``session/cancel``)."""
        await self._tasks.aclose()


def _reply_text(update: Any) -> str | None:
    """The text of an ``agent_message_chunk`` update (any version's model), else None."""
    if getattr(update, "session_update", None) == "agent_message_chunk":
        content = update.content
        if getattr(content, "type", None) == "text":
            text: str = content.text
            return text
    return None


def session_cwd(cwd: str | os.PathLike[str] | None) -> str:
    return str(Path(cwd or ".").resolve())
