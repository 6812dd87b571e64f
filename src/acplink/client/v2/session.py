"""v2 sessions as a client sees them: a prompt is a receipt, then updates until idle.

On ACP v2, ``session/prompt`` is answered as soon as the agent inserts the message into the
conversation (the receipt: ``{messageId}``); the work shows as ``session/update``
notifications, and the turn ends with an idle ``state_update`` carrying the stop reason.
:class:`V2PromptTurn` keeps v1's turn API: iterate it (the receipt first, then the updates
until idle), await it (the idle update, with ``stop_reason``), ``text()``, ``cancel()``,
timeouts and asyncio cancellation.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import ProtocolError, UsageError
from ...schema import parse
from ...schema import v2 as m
from ..session import PromptTurn, Session
from .compat import as_v1
from .state import V2SessionState, state_of

if TYPE_CHECKING:
    from ..client import Client
    from .link import V2Link

__all__ = ["V2PromptTurn", "V2Session"]


class V2Session(Session):
    """One ACP v2 session. :attr:`v2_state` (a :class:`V2SessionState`) folds every v2 update;
    :attr:`state` is a v1 view of the same conversation (a :class:`SessionState` fed with the
    v1 equivalents of the updates that have one), for code written against v1."""

    def __init__(self, client: Client, link: V2Link, session_id: str, cwd: str, *,
                 additional_directories: Sequence[str] = ()) -> None:
        super().__init__(client, session_id, cwd, additional_directories=additional_directories)
        self.link = link
        self.v2_state = V2SessionState(session_id)
        #: the v1 equivalents of the update delivered last (see :mod:`.compat`)
        self.v1_views: list[Any] = []
        self.state.session_id = session_id

    def __repr__(self) -> str:
        return f"<V2Session {self.session_id} cwd={self.cwd!r}>"

    def _deliver(self, update: Any) -> None:
        self.v2_state.apply(update)
        self.v1_views = as_v1(update, self.v2_state, self.state)
        for view in self.v1_views:
            self.state.apply(view)
        if self._turn is not None:
            self._turn._push(update)

    def prompt(self, prompt: str | Sequence[Any], *, timeout: float | None = None,
               cancel_wait: float | None = None, **fields: Any) -> V2PromptTurn:
        """Send ``session/prompt``: iterate the turn for the receipt then the updates, or
        await it for the idle update that ends it (see :class:`V2PromptTurn`)."""
        self._check_open()
        if self._turn is not None and not self._turn.done:
            raise UsageError(f"session {self.session_id} already has a prompt turn running "
                             "(wait for it to end, or cancel it)")
        wait = self.cancel_wait if cancel_wait is None else cancel_wait
        if (timeout is not None and not timeout > 0) or not wait >= 0:
            raise UsageError(f"timeout must be positive and cancel_wait not negative (got {timeout!r}, {wait!r})")
        blocks = [m.TextContent(text=prompt)] if isinstance(prompt, str) else list(prompt)
        if not blocks:
            raise UsageError("a prompt needs at least one content block")
        request = m.PromptRequest(session_id=self.session_id, prompt=blocks, **fields)
        self.client._questions.turn_started(self.session_id)
        turn = V2PromptTurn(self, request, timeout=timeout, cancel_wait=wait)
        self._turn = turn
        return turn

    async def cancel(self) -> None:
        """Send ``session/cancel``: the running work ends with an idle ``cancelled``."""
        if await self._prompt_out():
            self.client._questions.cancel(self.session_id)
            await self.link.notify(m.CancelSessionNotification(session_id=self.session_id))

    async def close(self) -> None:
        """``session/close`` (always available on v2); the session is unusable afterwards."""
        if self.closed:
            return
        self.closed = True
        self.client.sessions.pop(self.session_id, None)
        if not self.client.closed:
            await self.link.call(m.CloseSessionRequest(session_id=self.session_id))
        turn = self._turn
        if isinstance(turn, V2PromptTurn) and not turn.done:  # the agent sent no idle before its answer
            turn._fail(ProtocolError(f"session {self.session_id} was closed before its turn ended"))

    async def set_config_option(self, config_id: str, value: Any) -> Any:
        self._check_open()
        params: dict[str, Any] = {"sessionId": self.session_id, "configId": config_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"
        resp = await self.link.call(parse(m.SetSessionConfigOptionRequest, params))
        if resp.config_options is not None:
            self.v2_state.config_options = list(resp.config_options)
        return resp

    async def set_mode(self, mode_id: str) -> None:
        raise UsageError("ACP v2 has no session modes: they are config options (set_config_option)")

    async def set_model(self, model_id: str) -> None:
        raise UsageError("ACP v2 has no session/set_model: models are config options (set_config_option)")

    async def cancel_tool_call(self, tool_call_id: str) -> Any:
        """``tool_call/cancel`` (the agent confirms with a final ``tool_call_update``)."""
        self._check_open()
        return await self.link.call(m.CancelToolCallRequest(session_id=self.session_id, tool_call_id=tool_call_id))

    async def cancel_terminal(self, terminal_id: str) -> Any:
        """``terminal/cancel`` (the agent confirms with a ``terminal_update`` setting ``exitStatus``)."""
        self._check_open()
        return await self.link.call(m.CancelTerminalRequest(session_id=self.session_id, terminal_id=terminal_id))


class V2PromptTurn(PromptTurn):
    """A v2 prompt turn.

    ``async for item in turn``: first the receipt (``acplink.schema.v2.PromptResponse``, its
    ``message_id`` the id of the inserted user message), then the session's updates until the
    idle ``state_update`` that ends the turn (included). ``await turn`` gives that idle update
    (``stop_reason``, ``usage``, ``error``); :attr:`receipt` and :attr:`message_id` the receipt.
    The turn ends at the first idle update after the receipt, or at one that followed the
    echo of its message (``user_message`` with the receipt's id) when the receipt came late.
    Cancellation, ``timeout``, ``cancel_wait`` and ``text()`` work as on v1
    (:class:`acplink.PromptTurn`).
    """

    def __init__(self, session: V2Session, request: Any, *, timeout: float | None = None,
                 cancel_wait: float = 5.0) -> None:
        self.receipt: Any = None
        self._idle: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._idle_after_echo: dict[str, Any] = {}
        self._last_echo: str | None = None
        self._v2session = session
        super().__init__(session, request, timeout=timeout, cancel_wait=cancel_wait)
        self._text_of = _reply_text

    @property
    def message_id(self) -> str | None:
        """The id of the inserted user message (once the receipt arrived)."""
        return self.receipt.message_id if self.receipt is not None else None

    @property
    def stop_reason(self) -> str | None:
        return getattr(self.response, "stop_reason", None) if self.response is not None else None

    async def _exchange(self) -> Any:
        """The receipt, then the idle update that ends the turn."""
        receipt = await self._v2session.link.call(self.request)
        self.receipt = receipt
        self._updates.appendleft(receipt)  # (the receipt goes first)
        self._wakeup.set()
        late = self._idle_after_echo.get(receipt.message_id)
        if late is not None and not self._idle.done():
            self._idle.set_result(late)
        return await self._idle

    def _push(self, update: Any) -> None:
        if self._idle.done():
            return
        super()._push(update)
        kind = getattr(update, "session_update", None)
        if kind == "user_message":
            self._last_echo = update.message_id
        if state_of(update) != "idle":
            return
        if self.receipt is not None:
            self._idle.set_result(update)
        elif self._last_echo is not None:  # the receipt is late: this idle may be ours
            self._idle_after_echo.setdefault(self._last_echo, update)

    async def __anext__(self) -> Any:
        # the receipt comes first: updates that arrived before it wait behind it
        while self.receipt is None and not self._task.done():
            await self._next_event()
        return await super().__anext__()

    def _fail(self, exc: BaseException) -> None:
        """End the turn with an error (an invalid update, a session closed under it)."""
        if not self._idle.done():
            self._idle.set_exception(exc)
            self._wakeup.set()


def _reply_text(update: Any) -> str | None:
    """The text of an ``agent_message_chunk`` (v2), else None."""
    if isinstance(update, m.AgentMessageChunk) and isinstance(update.content, m.TextContent):
        text: str = update.content.text
        return text
    return None
