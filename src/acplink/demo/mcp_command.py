"""The demo agent's ``mcp`` command: it calls the MCP servers the client declared for the
session with ``{"type": "acp"}`` (MCP-over-ACP, ``mcp/message``), through ``ctx.mcp``.

``mcp``
    lists the tools of every declared server (``tools/list``) and calls each tool named
    ``echo`` with ``{"text": "ping"}``; the reply is one line per server::

        tools: echo, count, sleep, crash; echo: echo: ping

    With several servers each line starts with the server's declared name
    (``files: tools: read, write``); a server without an ``echo`` tool has only its
    ``tools:`` part, one without tools says ``tools: (none)``, and a server whose listing
    failed says ``tools: error: MESSAGE``.

``mcp TOOL [JSON]``
    calls one tool with the arguments in JSON (an object; ``{}`` when left out) and replies
    ``TOOL: TEXT`` (the text of its result), or ``TOOL: error: MESSAGE`` for an inner MCP
    error, a result with ``isError``, or a server that failed. ``SERVER/TOOL`` picks the
    server; otherwise the first server that lists TOOL (the only one, without a listing).

Each tool call shows as an ACP tool call; its progress reports update the tool call's content.
The client's built-in workspace server (its files and terminals, which ``read``, ``write`` and
``run`` use) is not one of "your" servers: ``mcp`` leaves it out.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

from .._tasks import TaskSet
from ..agent.context import PromptContext
from ..errors import AcpError, McpError
from ..mcp import binding as b
from ..schema import _generated as s

__all__ = ["NO_SERVERS", "run_mcp_command"]

T = TypeVar("T")

#: the reply when the client declared no ``acp`` MCP server for the session
NO_SERVERS = ("No MCP servers were declared for this session, so I have no MCP tools. Offer one from "
              "the command line: acplink prompt --mcp NAME=COMMAND mcp (or acplink chat --mcp NAME=URL).")
#: what ``mcp`` calls on each server, and with what
ECHO_TOOL, ECHO_ARGS = "echo", {"text": "ping"}


class _Reply(Protocol):
    async def stream(self, text: str) -> None: ...


async def run_mcp_command(ctx: PromptContext, reply: _Reply, rest: str) -> None:
    """``mcp`` (no argument: list and echo on every server) or ``mcp TOOL [JSON]``."""
    workspace = {entry["name"] if isinstance(entry, dict) else entry.name
                 for entry in ctx.session.mcp_servers if b.workspace_tools(entry) is not None}
    servers = [name for name in ctx.mcp.servers if name not in workspace]
    if not servers:
        await reply.stream(NO_SERVERS)
        return
    tool, _, raw = rest.strip().partition(" ")
    if not tool:
        lines = [await _survey(ctx, name) for name in servers]
        if len(servers) > 1:
            lines = [f"{name}: {line}" for name, line in zip(servers, lines, strict=True)]
        await reply.stream("\n".join(lines))
        return
    try:
        arguments = json.loads(raw) if raw.strip() else {}
    except ValueError as exc:
        await reply.stream(f"The arguments of {tool} are not JSON ({exc}): give an object, "
                           'e.g. mcp echo {"text": "hi"}')
        return
    if not isinstance(arguments, dict):
        await reply.stream(f"The arguments of {tool} must be a JSON object, not {type(arguments).__name__}: "
                           'e.g. mcp echo {"text": "hi"}')
        return
    server, name = await _locate(ctx, servers, tool)
    await reply.stream(f"{name}: {await _call(ctx, server, name, arguments)}")


async def _survey(ctx: PromptContext, server: str) -> str:
    """One server's line: its tools, and what its ``echo`` answered."""
    try:
        tools = [str(t.get("name")) for t in await _until_cancelled(ctx, ctx.mcp.list_tools(server))]
    except AcpError as exc:
        return f"tools: error: {_message(exc)}"
    line = f"tools: {', '.join(tools) or '(none)'}"
    if ECHO_TOOL in tools:
        line += f"; {ECHO_TOOL}: {await _call(ctx, server, ECHO_TOOL, ECHO_ARGS)}"
    return line


async def _locate(ctx: PromptContext, servers: list[str], tool: str) -> tuple[str, str]:
    """(server, tool name) for ``TOOL`` or ``SERVER/TOOL``."""
    head, sep, tail = tool.partition("/")
    if sep and head in servers and tail:
        return head, tail
    if len(servers) > 1:
        for server in servers:
            try:
                if any(t.get("name") == tool for t in await _until_cancelled(ctx, ctx.mcp.list_tools(server))):
                    return server, tool
            except AcpError:
                continue
    return servers[0], tool  # (a tool no server lists: the first server's error says so)


async def _call(ctx: PromptContext, server: str, tool: str, arguments: dict[str, Any]) -> str:
    """Call ``tool`` (an ACP tool call, its progress shown) → its text, or ``error: ...``."""
    known = set(ctx.session.tool_calls) if ctx.session is not None else set()

    def opened() -> str | None:  # (the tool call that call_tool opened for this call)
        new = [t for t in ctx.session.tool_calls if t not in known] if ctx.session is not None else []
        return new[-1] if new else None

    async def progress(value: float, total: float | None, message: str | None) -> None:
        of = f"{value:g}/{total:g}" if total is not None else f"{value:g}"
        tcid = opened()
        if tcid is not None:
            text = f"{message} ({of})" if message else f"progress {of}"
            await ctx.update_tool_call(tcid, content=[s.Content(content=s.TextContent(text=text))])

    try:
        result = await _until_cancelled(ctx, ctx.mcp.call_tool(server, tool, arguments, on_progress=progress))
    except AcpError as exc:
        tcid = opened()
        if tcid is not None and ctx.session is not None and ctx.session.tool_calls[tcid] == "in_progress":
            await ctx.update_tool_call(tcid, status="failed")  # (a cancelled call: call_tool left it open)
        return f"error: {_message(exc)}"
    texts = [b["text"] for b in result.get("content") or () if isinstance(b, dict)
             and b.get("type") == "text" and isinstance(b.get("text"), str)]
    text = " ".join(texts) if texts else "(no text)"
    return f"error: {text}" if result.get("isError") is True else text


async def _until_cancelled(ctx: PromptContext, aw: Awaitable[T]) -> T:
    """Await ``aw``; a cancelled turn cancels it (the caller then sends ``$/cancel_request``)
    and answers the inner error -32800."""
    async with TaskSet("demo mcp") as scope:  # (leaving it cancels and awaits what still runs)
        work = scope.spawn(aw)
        first: set[asyncio.Future[Any]] = {work, scope.spawn(ctx.wait_cancelled())}
        await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
    if work.cancelled():
        raise McpError(-32800, "cancelled: the turn was cancelled")
    return work.result()


def _message(exc: AcpError) -> str:
    if isinstance(exc, McpError):
        return exc.message
    return str(exc) or type(exc).__name__
