"""``FakeAgent``: an agent that plays a script, for testing clients.

    agent = FakeAgent([
        [say("Reading"), tool_call("Read a.txt", kind="read", id="t1"), read_file("a.txt"),
         tool_update("t1", status="completed"), stop("end_turn")],   # the first prompt turn
        [fail("quota exceeded")],                                     # the second one
    ])

Each prompt plays the next turn's steps (the last turn repeats). What the steps got back
(file contents, permission answers, terminal output) is in :attr:`FakeAgent.results`.
:meth:`FakeAgent.from_trace` plays a recorded trace instead (see :mod:`acplink.testing.replay`).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agent.app import AgentApp
from ..agent.context import PromptContext, ToolCallHandle
from ..errors import RequestError
from ..schema import _generated as s
from ..schema._parse import parse
from ..transports.base import Transport
from .replay import TraceReplay, trace_messages

__all__ = [
    "FakeAgent", "Step", "TraceAgent", "fail", "permission", "plan", "read_file", "run", "say", "sleep", "stop",
    "think", "tool_call", "tool_update", "update", "wait_cancel", "write_file",
]


@dataclass
class _Turn:
    ctx: PromptContext
    tools: dict[str, ToolCallHandle] = field(default_factory=dict)


@dataclass
class Step:
    """One scripted action: ``name`` (for :attr:`FakeAgent.results`) and what it does."""

    name: str
    action: Callable[[_Turn], Awaitable[Any]]


class _Stop(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def say(text: str) -> Step:
    """An ``agent_message_chunk``."""
    return Step("say", lambda t: t.ctx.send_text(text))


def think(text: str) -> Step:
    """An ``agent_thought_chunk``."""
    return Step("think", lambda t: t.ctx.send_thought(text))


def plan(*entries: str) -> Step:
    """A ``plan`` with pending entries."""
    return Step("plan", lambda t: t.ctx.send_plan(list(entries)))


def update(data: dict[str, Any]) -> Step:
    """Any ``session/update`` (wire JSON of the update, e.g. ``{"sessionUpdate": ...}``)."""
    return Step("update", lambda t: t.ctx.send_update(parse(s.SessionUpdate, data)))


def tool_call(title: str, *, kind: s.ToolKind = "other", status: s.ToolCallStatus = "pending", id: str | None = None,
              **fields: Any) -> Step:
    """Announce a tool call (``id`` names it for :func:`tool_update` and :func:`permission`)."""
    async def act(t: _Turn) -> str:
        handle = await t.ctx.start_tool_call(title, kind=kind, status=status, tool_call_id=id, **fields)
        t.tools[id or handle.tool_call_id] = handle
        return handle.tool_call_id
    return Step("tool_call", act)


def tool_update(id: str, **fields: Any) -> Step:
    """A ``tool_call_update`` of the call named ``id``."""
    return Step("tool_update", lambda t: t.ctx.update_tool_call(id, **fields))


def permission(tool: str, options: Sequence[s.PermissionOption] | None = None) -> Step:
    """Ask permission for the tool call named ``tool`` (announced before); the result is the
    chosen option id, or ``"cancelled"``."""
    async def act(t: _Turn) -> str:
        answer = await t.ctx.request_permission(t.tools.get(tool, tool), options)
        return answer.option_id or answer.outcome
    return Step("permission", act)


def read_file(path: str, *, line: int | None = None, limit: int | None = None) -> Step:
    """``fs/read_text_file`` (a relative path is relative to the session's cwd)."""
    return Step("read_file", lambda t: t.ctx.read_file(_path(t, path), line=line, limit=limit))


def write_file(path: str, content: str) -> Step:
    """``fs/write_text_file``."""
    return Step("write_file", lambda t: t.ctx.write_file(_path(t, path), content))


def run(command: str, *args: str) -> Step:
    """Run a command in a client terminal, wait for it, release it; the result is
    ``(output, exit_code)``."""
    async def act(t: _Turn) -> tuple[str, int | None]:
        async with await t.ctx.run(command, *args) as term:
            exit_status = await term.wait()
            out = await term.output()
        return out.output, exit_status.exit_code
    return Step("run", act)


def sleep(seconds: float) -> Step:
    """A delay."""
    return Step("sleep", lambda t: asyncio.sleep(seconds))


def wait_cancel() -> Step:
    """Wait until the client cancels the turn; the turn then ends ``cancelled``."""
    async def act(t: _Turn) -> None:
        await t.ctx.wait_cancelled()
        raise _Stop("cancelled")
    return Step("wait_cancel", act)


def stop(reason: str = "end_turn") -> Step:
    """End the turn with ``reason`` (the default at the end of the steps is ``end_turn``)."""
    async def act(t: _Turn) -> None:
        raise _Stop(reason)
    return Step("stop", act)


def fail(message: str, code: int = -32603, data: Any = None) -> Step:
    """Answer the prompt with a JSON-RPC error."""
    async def act(t: _Turn) -> None:
        raise RequestError(message, data, code=code)
    return Step("fail", act)


def _path(t: _Turn, path: str) -> str:
    cwd = t.ctx.session.cwd if t.ctx.session is not None else "."
    return path if os.path.isabs(path) else os.path.join(cwd, path)


class FakeAgent(AgentApp):
    """An agent app whose prompt turns play scripted steps (see the module doc)."""

    def __init__(self, turns: Sequence[Sequence[Step]] = ((),), *, name: str = "fake-agent", **app_kw: Any) -> None:
        super().__init__(name, **app_kw)
        self.turns = [list(turn) for turn in turns] or [[]]
        #: the text of every prompt received, in order
        self.prompts: list[str] = []
        #: (step name, result) of every step played that returns something
        self.results: list[tuple[str, Any]] = []
        self.prompt(self._play)

    async def _play(self, ctx: PromptContext) -> str:
        self.prompts.append(ctx.text)
        steps = self.turns[min(len(self.prompts), len(self.turns)) - 1]
        turn = _Turn(ctx)
        try:
            for step in steps:
                result = await step.action(turn)
                if result is not None:
                    self.results.append((step.name, result))
        except _Stop as end:
            return end.reason
        return "end_turn"

    @staticmethod
    def from_trace(trace: str | os.PathLike[str] | Sequence[dict[str, Any]], *,
                   speed: float | None = None, lenient: bool = False) -> TraceAgent:
        """An agent that replays a recorded trace (``acplink record``), like ``acplink replay``
        (``lenient``: answers of the client that differ from the recorded ones are noted in each
        replay's ``divergences`` and the recording plays on, instead of ending the replay)."""
        return TraceAgent(trace, speed=speed, lenient=lenient)


class TraceAgent:
    """Replays a trace on each connection (see :class:`TraceReplay`); the last replay's first
    mismatch is :attr:`mismatch`."""

    def __init__(self, trace: str | os.PathLike[str] | Sequence[dict[str, Any]], *, speed: float | None = None,
                 lenient: bool = False) -> None:
        self.trace = trace_messages(trace)  # read (and checked) once
        self.speed = speed
        self.lenient = lenient
        self.replays: list[TraceReplay] = []

    def connection(self, transport: Transport) -> TraceReplay:
        replay = TraceReplay(self.trace, transport, speed=self.speed, lenient=self.lenient)
        self.replays.append(replay)
        return replay

    @property
    def mismatch(self) -> str | None:
        return next((r.mismatch for r in reversed(self.replays) if r.mismatch), None)
