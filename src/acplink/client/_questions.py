"""The questions an agent asks the client (a permission, an elicitation) and their cancellation.

The spec's rule: once the client sends ``session/cancel``, every question of that session still
waiting is answered "cancelled" at once, and so is any the agent asks before the session's next
prompt. :class:`Questions` keeps that bookkeeping for one :class:`~acplink.client.Client` (both
protocol versions use it); the callback that answers (a policy, a UI) runs as a task of the
connection, so closing the connection cancels and awaits it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .._tasks import TaskSet

__all__ = ["Elicitor", "QuestionObserver", "Questions", "elicitation_cancelled"]

log = logging.getLogger("acplink.client")

#: answers an ``elicitation/create`` (its typed params -> the result)
Elicitor = Callable[[Any], Awaitable[Any]]
#: called with (session id, method, request params) when a question the agent asked
#: (``session/request_permission``, ``elicitation/create``) was answered "cancelled" because
#: the client cancelled the session's turn: a UI closes the question it shows
QuestionObserver = Callable[[str, str, Any], None]


def elicitation_cancelled() -> dict[str, Any]:
    """The answer to an elicitation whose session's turn was cancelled."""
    return {"action": "cancel"}


class Questions:
    """The questions waiting for an answer, per session, and the sessions whose turn was
    cancelled (see the module doc). ``tasks``: the task set the answering callbacks run in."""

    def __init__(self, tasks: TaskSet) -> None:
        self._tasks = tasks
        #: told when a pending question is answered "cancelled" by a session/cancel
        self.observers: list[QuestionObserver] = []
        #: session id -> a future per question the agent waits on (set: answer "cancelled")
        self._waiting: dict[str, set[asyncio.Future[None]]] = {}
        #: sessions whose turn was cancelled and no new prompt sent since
        self._cancelled_turns: set[str] = set()

    def turn_started(self, session_id: str) -> None:
        """A prompt goes out: the session's questions are answered again."""
        self._cancelled_turns.discard(session_id)

    def cancel(self, session_id: str) -> None:
        """``session/cancel`` is being sent: every question of the session still waiting is
        answered "cancelled" now, and so is any it asks before its next turn."""
        self._cancelled_turns.add(session_id)
        for gone in self._waiting.get(session_id, ()):
            if not gone.done():
                gone.set_result(None)

    async def ask(self, session_id: str | None, method: str, params: Any,
                  answer: Callable[[], Awaitable[Any]], cancelled: Any) -> Any:
        """Run ``answer`` for one question; when the session's turn is cancelled first, answer
        ``cancelled`` at once, cancel ``answer`` (a UI sees CancelledError in its callback) and
        tell :attr:`observers`."""
        if session_id is None:  # (not tied to a session: nothing can cancel it)
            return await answer()
        if session_id in self._cancelled_turns:
            return cancelled
        task = self._tasks.spawn(answer())  # (the connection owns it: closing awaits it)
        gone: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting = self._waiting.setdefault(session_id, set())
        waiting.add(gone)
        try:
            await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the agent withdrew the request ($/cancel_request)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            waiting.discard(gone)
            if not waiting:
                self._waiting.pop(session_id, None)
        if task.done():
            return task.result()
        # the answer goes out now; the callback is cancelled and awaited in the background
        # (owned by the connection: closing it awaits it)
        task.cancel()
        task.add_done_callback(_log_failure)
        for observer in self.observers:
            try:
                observer(session_id, method, params)
            except Exception:  # a UI's bug must not keep the answer from the agent
                log.exception("question observer failed")
        return cancelled


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("a cancelled question's callback failed: %s", task.exception())
