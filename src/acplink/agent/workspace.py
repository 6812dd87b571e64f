"""The client's files and terminals through its workspace MCP server: what ``ctx.read_file``,
``ctx.write_file`` and ``ctx.run`` use when the protocol has no ``fs/*`` / ``terminal/*``
(ACP v2), or when a v1 client offers the server but not the capability.

An acplink client declares its built-in workspace server in a session's ``mcpServers`` as an
``acp`` server whose ``_meta`` carries ``"acplink.dev/workspace": {"tools": [...]}``
(:data:`acplink.mcp.binding.WORKSPACE_META_KEY`). Reading and writing are one ``tools/call``
each (``read_text_file``, ``write_text_file``); a refusal (outside the roots, not found, ...)
comes back as the ACP error the client's handler raised, the same class as on v1.

A command is one ``run`` tool call, which answers when the command has ended: ``ctx.run``
starts it in a task of the connection and returns a :class:`WorkspaceTerminal`, which has the
interface of a v1 :class:`~acplink.agent.context.TerminalHandle`:

* ``wait()`` waits for that answer (the exit status);
* ``output()`` is the whole output once the command has ended; before, an empty output with
  no exit status (the tool sends no output while the command runs);
* ``kill()`` asks the server to kill the command (the ``kill`` tool, by the run's id) and waits
  for the ``run`` call to answer, so the output collected until then is kept;
* ``release()`` kills a command still running and waits for it; the end of the turn releases
  every terminal the handler left open, as on v1.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any

from ..errors import CapabilityError, McpError, ProtocolError, RequestError
from ..mcp import binding as b
from ..schema import _generated as s
from .context import TerminalHandle

if TYPE_CHECKING:
    from .context import AgentSession, PromptContext

__all__ = ["WorkspaceTerminal", "declared_workspace", "workspace_route"]

#: what each ``ctx`` method needs: the v1 method, the client capability it needs on v1, the tool
_NEEDS = {
    "read": ("read_text_file", ("fs", "read_text_file"), "read_text_file"),
    "write": ("write_text_file", ("fs", "write_text_file"), "write_text_file"),
    "run": ("create_terminal", ("terminal",), "run"),
}


def declared_workspace(session: AgentSession | None) -> tuple[str, list[str]] | None:
    """The session's declared workspace server: (its ``serverId``, its tools), or None."""
    for entry in session.mcp_servers if session is not None else ():
        tools = b.workspace_tools(entry)
        if tools is not None:
            server_id = entry["serverId"] if isinstance(entry, dict) else entry.server_id
            return server_id, tools
    return None


def _client_has(ctx: PromptContext, path: tuple[str, ...]) -> bool:
    value: Any = ctx.client_capabilities
    for part in path:
        value = getattr(value, part, None)
    return bool(value)


def workspace_route(ctx: PromptContext, what: str) -> str | None:
    """Where ``ctx``'s ``what`` (``read``, ``write``, ``run``) goes: the workspace server's id,
    or None for the protocol's own request (``fs/*``, ``terminal/*``). Raises
    :class:`CapabilityError` when neither is available."""
    method, capability, tool = _NEEDS[what]
    native = ctx.connection.protocol.has(method)
    if native and _client_has(ctx, capability):
        return None
    declared = declared_workspace(ctx.session)
    if declared is not None and tool in declared[1]:
        return declared[0]
    if native:
        return None  # (v1: the request itself says what is missing, as before)
    version = ctx.connection.protocol.version
    wire = ctx.connection.vocabulary.wire(method)
    if declared is None:
        why = ("the client declared no workspace MCP server for this session (MCP-over-ACP: an acplink client "
               "offers one when it serves files or terminals and the agent advertises acp MCP servers)")
    else:
        why = f"the client's workspace MCP server has no {tool!r} tool (it offers: {', '.join(declared[1]) or 'none'})"
    raise CapabilityError(f"cannot {what} through the client: {wire} does not exist in ACP v{version}, and {why}",
                          capability=f"workspace:{tool}")


def _text(result: dict[str, Any]) -> str:
    return "".join(block["text"] for block in result.get("content") or () if isinstance(block, dict)
                   and block.get("type") == "text" and isinstance(block.get("text"), str))


def _checked(tool: str, result: dict[str, Any]) -> dict[str, Any]:
    """A tool's result, or the error it reports (``isError``) raised: the client's ACP error
    when the server sent it (``structuredContent.error``), else a :class:`RequestError`."""
    if result.get("isError") is not True:
        return result
    structured = result.get("structuredContent")
    error = structured.get("error") if isinstance(structured, dict) else None
    if isinstance(error, dict):
        raise RequestError.from_wire(error)
    raise RequestError(_text(result) or f"the workspace server's {tool} failed", {"tool": tool})


async def call(ctx: PromptContext, server_id: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool of the workspace server (no ACP tool call is shown: the agent shows its own)."""
    return _checked(tool, await ctx.mcp.call_tool(server_id, tool, arguments, show=False))


async def read_file(ctx: PromptContext, server_id: str, path: str, line: int | None, limit: int | None) -> str:
    arguments: dict[str, Any] = {"path": path}
    if line is not None:
        arguments["line"] = line
    if limit is not None:
        arguments["limit"] = limit
    return _text(await call(ctx, server_id, "read_text_file", arguments))


async def write_file(ctx: PromptContext, server_id: str, path: str, content: str) -> None:
    await call(ctx, server_id, "write_text_file", {"path": path, "content": content})


class WorkspaceTerminal(TerminalHandle):
    """A command run by the client's workspace server (see the module): the interface of a
    :class:`TerminalHandle`. ``terminal_id`` is the client's terminal running it (the server
    names it when the command starts), so a ``terminal`` tool-call content shows it as on v1."""

    def __init__(self, ctx: PromptContext, server_id: str, tools: list[str], arguments: dict[str, Any]) -> None:
        super().__init__(ctx, "")
        self.server_id = server_id
        self._can_kill = "kill" in tools
        self._arguments = arguments
        #: set once the command has started (the server's first progress report) or the call ended
        self.started = asyncio.Event()
        self._task: asyncio.Future[dict[str, Any] | BaseException] = ctx.connection.tasks.spawn(
            self._run(), name="acplink-workspace-run")

    async def _run(self) -> dict[str, Any] | BaseException:
        """The ``run`` call's outcome: its checked result, or the error (kept, not raised: it is
        raised to whoever asks for it)."""
        def started(note: dict[str, Any]) -> None:
            meta = (note.get("params") or {}).get("_meta")
            terminal_id = meta.get(b.WORKSPACE_TERMINAL_META_KEY) if isinstance(meta, dict) else None
            if isinstance(terminal_id, str) and not self.terminal_id:
                self.terminal_id = terminal_id
            self.started.set()

        params = {"name": "run", "arguments": self._arguments,
                  "_meta": {"progressToken": f"run-{uuid.uuid4().hex[:16]}"}}
        try:
            result = await self.ctx.mcp.request(self.server_id, "tools/call", params, on_notification=started)
            if isinstance(result, McpError):
                raise result
            if not isinstance(result, dict):
                raise ProtocolError("the workspace server's run answered with a result that is not an object")
            structured = result.get("structuredContent")
            if isinstance(structured, dict) and isinstance(structured.get("terminalId"), str) and not self.terminal_id:
                self.terminal_id = structured["terminalId"]
            return _checked("run", result)
        except Exception as exc:
            return exc
        finally:
            self.started.set()

    async def _outcome(self) -> dict[str, Any]:
        outcome = await asyncio.shield(self._task)  # (a cancelled waiter leaves the command alone)
        if isinstance(outcome, BaseException):
            raise outcome
        structured = outcome.get("structuredContent")
        if not isinstance(structured, dict):
            raise ProtocolError("the workspace server's run answered without structuredContent")
        return structured

    @property
    def running(self) -> bool:
        """Whether the command has not ended yet (the ``run`` call has not answered)."""
        return not self._task.done()

    async def output(self) -> s.TerminalOutputResponse:
        """The command's output and exit status once it has ended; before, an empty output and
        no exit status."""
        if self.running:
            return s.TerminalOutputResponse(output="", truncated=False)
        out = await self._outcome()
        return s.TerminalOutputResponse(output=str(out.get("output") or ""), truncated=bool(out.get("truncated")),
                                        exit_status=_exit_status(out))

    async def wait(self) -> s.WaitForTerminalExitResponse:
        out = await self._outcome()
        status = _exit_status(out)
        return s.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill(self) -> None:
        """Kill the command, then wait for the ``run`` call's answer (its output is kept). A
        server without the ``kill`` tool: the call is cancelled (its output is lost)."""
        if not self.running:
            return
        if self._can_kill and self.terminal_id:
            await call(self.ctx, self.server_id, "kill", {"terminal_id": self.terminal_id})
        else:
            self._task.cancel()
        await asyncio.wait([self._task])

    async def release(self) -> None:
        if self.released:
            return
        self.released = True
        self.ctx._terminals.discard(self)
        try:
            await self.kill()
        except (McpError, RequestError):  # (the server went away: the call is cancelled)
            self._task.cancel()
            await asyncio.wait([self._task])


def _exit_status(out: dict[str, Any]) -> s.TerminalExitStatus:
    code, sig = out.get("exitCode"), out.get("signal")
    return s.TerminalExitStatus(exit_code=code if isinstance(code, int) else None,
                                signal=sig if isinstance(sig, str) else None)


async def run(ctx: PromptContext, server_id: str, tools: list[str], command: str, args: list[str],
              cwd: str | None, env: dict[str, str] | None, output_byte_limit: int | None) -> WorkspaceTerminal:
    arguments: dict[str, Any] = {"command": command, "args": args}
    if cwd is not None:
        arguments["cwd"] = cwd
    if env:
        arguments["env"] = dict(env)
    if output_byte_limit is not None:
        arguments["output_byte_limit"] = output_byte_limit
    term = WorkspaceTerminal(ctx, server_id, tools, arguments)
    try:
        await term.started.wait()
    except asyncio.CancelledError:
        term._task.cancel()
        raise
    if not term.running:  # (it could not start, e.g. no such command: raised here, as v1's terminal/create)
        outcome = term._task.result()
        if isinstance(outcome, BaseException):
            raise outcome
    return term
