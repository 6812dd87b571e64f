"""Client-side sessions: ``prompt()`` streams typed updates and ends with the stop reason."""

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
from ..errors import AcpError, RequestCancelled, RequestTimeout, UsageError
from ..schema import _generated as s
from ..schema._parse import parse
from .state import SessionState

if TYPE_CHECKING:
    from .client import Client

__all__ = ["PromptTurn", "Session"]

log = logging.getLogger("acplink.client")

#: seconds a cancelled prompt turn waits, by default, for the agent's ``cancelled`` answer
CANCEL_WAIT = 5.0


def _content(prompt: str | Sequence[Any]) -> list[Any]:
    if isinstance(prompt, str):
        return [s.TextContent(text=prompt)]
    return list(prompt)


class Session:
    """One ACP session as a client sees it. :attr:`state` folds every update received."""

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

    def __repr__(self) -> str:
        return f"<Session {self.session_id} cwd={self.cwd!r}>"

    @property
    def roots(self) -> list[str]:
        """The directories the client lets the agent touch in this session."""
        return [self.cwd, *self.additional_directories]

    def _deliver(self, update: Any) -> None:
        self.state.apply(update)
        if self._turn is not None:
            self._turn._push(update)

    def _check_open(self) -> None:
        if self.closed:
            raise UsageError(f"session {self.session_id} is closed")
        if self.client.closed:
            raise UsageError("the client connection is closed")

    def prompt(self, prompt: str | Sequence[Any], *, timeout: float | None = None,
               cancel_wait: float | None = None, **fields: Any) -> PromptTurn:
        """Send ``session/prompt``. Iterate the result for updates; await it for the response.

        ``timeout``: seconds the turn may take; then it is cancelled at the agent and waiting
        on it raises :class:`RequestTimeout`. ``cancel_wait``: see :class:`PromptTurn`.
        """
        self._check_open()
        refused = prompt_refusal(self.session_id, self._turn is not None and not self._turn.done)
        if refused is not None:
            raise UsageError(refused)
        wait = self.cancel_wait if cancel_wait is None else cancel_wait
        if (timeout is not None and not timeout > 0) or not wait >= 0:
            raise UsageError(f"timeout must be positive and cancel_wait not negative (got {timeout!r}, {wait!r})")
        request = s.PromptRequest(session_id=self.session_id, prompt=_content(prompt), **fields)
        # the user's message is part of the conversation (agents do not echo it back): record
        # it, so the agent's reply starts a new message in :attr:`state` (a local id keeps two
        # prompts in a row apart; it is not sent)
        local_id = f"local-{uuid.uuid4().hex}"
        for block in request.prompt:
            self.state.apply(s.UserMessageChunk(content=block, message_id=local_id))
        # the turn starts now, not when its task sends the prompt: a cancel in between must
        # not be undone by it (see cancel())
        self.client._questions.turn_started(self.session_id)
        turn = PromptTurn(self, request, timeout=timeout, cancel_wait=wait)
        self._turn = turn
        return turn

    async def cancel(self) -> None:
        """Send ``session/cancel``; the running turn ends with stopReason ``cancelled``."""
        if await self._prompt_out():
            await self.client.conn.session_cancel(session_id=self.session_id)

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

    async def set_mode(self, mode_id: str) -> None:
        self._check_open()
        await self.client.conn.session_set_mode(session_id=self.session_id, mode_id=mode_id)
        self.state.set_current_mode(mode_id)

    async def set_config_option(self, config_id: str, value: Any) -> Any:
        self._check_open()
        params: dict[str, Any] = {"sessionId": self.session_id, "configId": config_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"
        resp = await self.client.conn.session_set_config_option(parse(s.SetSessionConfigOptionRequest, params))
        if resp.config_options is not None:
            self.state.set_config_options(list(resp.config_options))
        return resp

    async def set_model(self, model_id: str) -> None:
        """Legacy model selector (``session/set_model``, schema 0.10.3)."""
        self._check_open()
        await self.client.conn.session_set_model(session_id=self.session_id, model_id=model_id)
        self.state.set_current_model(model_id)

    async def close(self) -> None:
        """``session/close`` when the agent supports it; the session is unusable afterwards."""
        if self.closed:
            return
        self.closed = True
        self.client.sessions.pop(self.session_id, None)
        if self.client.supports("sessionCapabilities.close") and not self.client.closed:
            await self.client.conn.session_close(session_id=self.session_id)


class PromptTurn:
    """A running prompt turn.

    ``async for update in turn`` streams the agent's updates (:data:`schema.SessionUpdate`);
    ``await turn`` gives the :class:`PromptResponse`; ``await turn.text()`` the agent's reply
    as a string; ``turn.text_chunks()`` streams the reply's text pieces.

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
        #: the reply text of an update, else None (v2 turns read v2 updates)
        self._text_of = _reply_text
        self.session = session
        self.request = request
        #: seconds a cancelled turn waits for the agent's answer
        self.cancel_wait = cancel_wait
        self.timeout = timeout
        self.response: s.PromptResponse | None = None
        self._updates: collections.deque[s.SessionUpdate] = collections.deque()
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
        """The prompt's exchange with the agent; what ends the turn (v1: the response)."""
        return await self.session.client.conn.session_prompt(self.request)

    def _push(self, update: Any) -> None:
        self._updates.append(update)
        text = self._text_of(update)
        if text is not None:
            self._text.append(text)
        self._wakeup.set()

    @property
    def done(self) -> bool:
        return self._task.done()

    @property
    def stop_reason(self) -> str | None:
        return self.response.stop_reason if self.response is not None else None

    async def cancel(self) -> None:
        """Ask the agent to cancel this turn (``session/cancel``); returns at once, the turn
        ends when the agent answers (stop reason ``cancelled``)."""
        await self.session.cancel()

    # -- results -------------------------------------------------------------------------------

    def __aiter__(self) -> PromptTurn:
        return self

    async def __anext__(self) -> s.SessionUpdate:
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

    async def text(self) -> str:
        """Wait for the end of the turn; the agent's reply: the text of the turn's
        ``agent_message_chunk`` updates, joined (iterated or not)."""
        await self.result()
        return "".join(self._text)

    async def text_chunks(self) -> AsyncIterator[str]:
        """The text of the agent's reply as it streams (the turn's other updates are skipped)."""
        async for update in self:
            text = self._text_of(update)
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
    """The text of an ``agent_message_chunk`` update, else None."""
    if isinstance(update, s.AgentMessageChunk):
        content = update.content
        if isinstance(content, s.TextContent):
            return content.text
    return None


def session_cwd(cwd: str | os.PathLike[str] | None) -> str:
    return str(Path(cwd or ".").resolve())
