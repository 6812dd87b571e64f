"""What the framework adapters share: a tool call's ACP kind and title guessed from the tool's
name and arguments, a run raced against ``session/cancel``, the text of a failed run, and the
earlier turns of a stored session (``ctx.history``) from which an adapter rebuilds its
framework's conversation after a restart."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from .._tasks import TaskSet
from ..agent.context import PromptContext, ToolCallHandle

if TYPE_CHECKING:
    from ..agent.history import HistoryEntry

__all__ = ["TOOL_META", "earlier_turns", "error_text", "framework_tool", "json_safe", "run_or_cancel",
           "start_tool", "tool_kind", "tool_title"]

#: the ``_meta`` key of an adapter's ``tool_call`` naming the framework's tool: a stored
#: session's tool calls are given back to the framework by that name after a restart
TOOL_META = "acplink/tool"

T = TypeVar("T")

#: words in a tool's name → the ACP tool kind (first match wins, so "read" before "write"
#: only matters for names holding both)
_KINDS: list[tuple[str, tuple[str, ...]]] = [
    ("delete", ("delete", "remove", "rm", "unlink", "erase")),
    ("move", ("move", "rename", "mv")),
    ("edit", ("write", "edit", "patch", "replace", "update", "create", "append", "insert", "save")),
    ("read", ("read", "get", "view", "cat", "open", "load", "show", "list", "ls")),
    ("search", ("search", "find", "grep", "glob", "query", "lookup", "locate")),
    ("execute", ("run", "exec", "execute", "shell", "bash", "command", "terminal", "sh")),
    ("fetch", ("fetch", "http", "download", "web", "url", "browse", "curl", "request")),
    ("think", ("think", "plan", "reason")),
]

#: argument names whose value is a path: shown in the title and as the call's location
_PATH_ARGS = ("path", "file", "file_path", "filepath", "filename", "target", "source")

ToolKindName = Literal["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"]


def tool_kind(name: str) -> ToolKindName:
    """The ACP tool kind of a tool named ``name`` (``read_file`` → ``read``, ``run_shell`` →
    ``execute``); ``other`` when no word of the name says."""
    words = {w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()) if w}
    for kind, keys in _KINDS:
        if words.intersection(keys):
            return kind  # type: ignore[return-value]
    return "other"


def _path_of(args: Mapping[str, Any]) -> str | None:
    for key in _PATH_ARGS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def tool_title(name: str, args: Mapping[str, Any]) -> str:
    """A short title for the call: the tool's name and its path argument or first short argument."""
    path = _path_of(args)
    if path is not None:
        return f"{name} {path}"
    for value in args.values():
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            text = str(value).replace("\n", " ")
            return f"{name} {text[:60]}{'…' if len(text) > 60 else ''}"
    return name


def json_safe(value: Any) -> Any:
    """``value`` as JSON data (rawInput / rawOutput): JSON values as they are, containers item
    by item, a pydantic model or dataclass through its dump, anything else as its ``str``."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return json_safe(dump(mode="json"))
        except Exception:  # (a model that cannot dump itself: its text)
            return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value))
    return str(value)


async def start_tool(ctx: PromptContext, name: str, args: Mapping[str, Any], *,
                     status: Literal["pending", "in_progress"] = "in_progress") -> ToolCallHandle:
    """Announce a framework's tool call as an ACP ``tool_call`` (kind and title inferred,
    ``rawInput`` the arguments, the path argument as its location)."""
    path = _path_of(args)
    extra: dict[str, Any] = {}
    if path is not None:
        from ..builders import location

        extra["locations"] = [location(path)]
    return await ctx.start_tool_call(tool_title(name, args), kind=tool_kind(name), status=status,
                                     raw_input=json_safe(dict(args)), meta={TOOL_META: name}, **extra)


def earlier_turns(ctx: PromptContext) -> list[HistoryEntry]:
    """The stored history of the turn's session before this turn (``ctx.history`` without the
    prompt being answered): empty unless the app's store keeps histories."""
    history = ctx.history
    if history and history[-1].kind == "user_message":
        running = history[-1].turn
        return [e for e in history if e.turn != running]
    return history


def framework_tool(entry: HistoryEntry) -> tuple[str, str, dict[str, Any], Any, bool] | None:
    """``(id, tool name, arguments, output, failed)`` of a stored tool call an adapter made for a
    framework's tool (None for other calls: an ``interrupt()``'s permission, say). ``output``
    is the call's ``rawOutput`` (None: the turn ended before the tool did)."""
    update = entry.update or {}
    meta = update.get("_meta")
    name = meta.get(TOOL_META) if isinstance(meta, Mapping) else None
    if entry.kind != "tool_call" or not isinstance(name, str):
        return None
    args = update.get("rawInput")
    return (str(update.get("toolCallId")), name, dict(args) if isinstance(args, Mapping) else {},
            update.get("rawOutput"), update.get("status") == "failed")


def error_text(exc: BaseException) -> str:
    """The line a client is shown for a failed run."""
    message = str(exc).strip() or type(exc).__name__
    return f"{type(exc).__name__}: {message}"


async def run_or_cancel(ctx: PromptContext, aw: Awaitable[T]) -> tuple[bool, T | None]:
    """Run ``aw`` until it ends or the client cancels the turn (``session/cancel``), whichever
    comes first; a cancelled run is cancelled and awaited. Returns ``(finished, result)``;
    the run's own exception propagates."""
    tasks = TaskSet("framework run")
    run = tasks.spawn(aw)
    stop = tasks.spawn(ctx.wait_cancelled())
    try:
        await asyncio.wait((run, stop), return_when=asyncio.FIRST_COMPLETED)
    finally:
        finished = run.done()
        await tasks.aclose()  # (the other one cancelled, and both awaited)
    if not finished:
        return False, None
    return True, run.result()
