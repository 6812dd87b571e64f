"""Client-side sessions: ``prompt()`` streams typed updates and ends with the stop reason."""

from __future__ import annotations

import asyncio
import collections
import os
import uuid
from collections.abc import AsyncIterator, Generator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..schema import _generated as s
from ..schema.parse import parse
from .state import SessionState

if TYPE_CHECKING:
    from .client import Client

__all__ = ["PromptTurn", "Session"]


def _content(prompt: str | Sequence[Any]) -> list[Any]:
    if isinstance(prompt, str):
        return [s.TextContent(text=prompt)]
    return list(prompt)


class Session:
    """One ACP session as a client sees it. :attr:`state` folds every update received."""

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

    def prompt(self, prompt: str | Sequence[Any], **fields: Any) -> PromptTurn:
        """Send ``session/prompt``. Iterate the result for updates; await it for the response."""
        self._check_open()
        if self._turn is not None and not self._turn.done:
            raise UsageError(f"session {self.session_id} already has a prompt turn running")
        request = s.PromptRequest(session_id=self.session_id, prompt=_content(prompt), **fields)
        # the user's message is part of the conversation (agents do not echo it back): record
        # it, so the agent's reply starts a new message in :attr:`state` (a local id keeps two
        # prompts in a row apart; it is not sent)
        local_id = f"local-{uuid.uuid4().hex}"
        for block in request.prompt:
            self.state.apply(s.UserMessageChunk(content=block, message_id=local_id))
        turn = PromptTurn(self, request)
        self._turn = turn
        return turn

    async def cancel(self) -> None:
        """Send ``session/cancel``; the running turn ends with stopReason ``cancelled``."""
        if not self.client.closed:
            await self.client.conn.session_cancel(session_id=self.session_id)

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
    """A running prompt turn: ``async for update in turn`` streams updates; ``await turn``
    (or :attr:`response` after iterating) gives the :class:`PromptResponse`."""

    def __init__(self, session: Session, request: s.PromptRequest) -> None:
        self.session = session
        self.request = request
        self._updates: collections.deque[Any] = collections.deque()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[s.PromptResponse] = asyncio.get_running_loop().create_task(self._run())
        self.response: s.PromptResponse | None = None

    async def _run(self) -> s.PromptResponse:
        try:
            resp = await self.session.client.conn.session_prompt(self.request)
            self.response = resp
            return resp
        finally:
            self._wakeup.set()

    def _push(self, update: Any) -> None:
        self._updates.append(update)
        self._wakeup.set()

    @property
    def done(self) -> bool:
        return self._task.done()

    @property
    def stop_reason(self) -> str | None:
        return self.response.stop_reason if self.response is not None else None

    async def cancel(self) -> None:
        """Ask the agent to cancel this turn (``session/cancel``)."""
        await self.session.cancel()

    async def __aiter__(self) -> AsyncIterator[Any]:
        while True:
            while self._updates:
                yield self._updates.popleft()
            if self._task.done():
                if self.session._turn is self:
                    self.session._turn = None
                self._task.result()  # re-raise the prompt's error, if any
                return
            self._wakeup.clear()
            await self._wakeup.wait()

    async def result(self) -> s.PromptResponse:
        """Wait for the response (updates still land in the session state)."""
        try:
            return await asyncio.shield(self._task)
        finally:
            if self._task.done() and self.session._turn is self:
                self.session._turn = None
                self._updates.clear()

    def __await__(self) -> Generator[Any, None, s.PromptResponse]:
        return self.result().__await__()

    async def aclose(self) -> None:
        """Stop waiting for this turn (cancel the request locally; sends ``$/cancel_request``)."""
        if not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def session_cwd(cwd: str | os.PathLike[str] | None) -> str:
    return str(Path(cwd or ".").resolve())
