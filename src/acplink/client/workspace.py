"""The built-in workspace server: the client's files and terminals as MCP tools.

ACP v2 has no ``fs/*`` and no ``terminal/*``: an agent reaches the client's files and
terminals through an MCP server the client offers over the ACP connection (MCP-over-ACP).
:func:`workspace_server` builds that server for one session of a :class:`~acplink.Client`;
its tools call the *same* handlers v1's requests reach (:class:`FileSystemHandler`,
:class:`TerminalHandler`), so the confinement (the session's roots, no symlink out), the
limits (read size, file budget, output bytes, terminal count) and the policy (what a
confining :class:`PermissionPolicy` turns off) are those of v1.

Tools (arguments in snake case, as MCP tools usually spell them):

``read_text_file(path, line?, limit?)``
    The file's text (``line`` 1-based, ``limit`` a number of lines).
``write_text_file(path, content)``
    Create or replace the file (atomically). Only when the client serves writes.
``run(command, args?, cwd?, env?, output_byte_limit?, timeout?)``
    Run a command (no shell) in a terminal, wait for it, return its output and exit status,
    release the terminal. ``timeout`` (seconds) stops it (``isError``); cancelling the call
    kills it. Its first progress report (when the caller sent a ``progressToken``) says the
    command started and names its terminal (``_meta["acplink.dev/terminalId"]``), which the
    result's ``structuredContent.terminalId`` names too. Only when the client serves terminals.
``kill(terminal_id)``
    Kill the command of a running ``run`` call: that call then answers with the output
    collected so far and the signal. Offered with ``run``.

A relative ``path`` or ``cwd`` is taken from the session's cwd. What the handlers refuse
(outside the roots, not found, too large, not writable, command not found) is a tool result
with ``isError: true``, the handler's message as its text and the ACP error (``code``,
``message``, ``data``) as ``structuredContent.error``; arguments that do not fit the schema are an
inner ``-32602``. The server asks no permission itself: as in v1, asking is the agent's part
(``session/request_permission``), and the client's policy decides what is served at all.
"""

from __future__ import annotations

import asyncio
import os
import shlex
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from .._tasks import TaskSet
from .._version import __version__
from ..errors import InvalidParams, RequestError, ResourceNotFound
from ..mcp import McpCall, McpServer, ToolResult
from ..mcp import binding as b
from ..schema import (
    CreateTerminalRequest,
    EnvVariable,
    KillTerminalRequest,
    ReadTextFileRequest,
    ReleaseTerminalRequest,
    TerminalOutputRequest,
    WaitForTerminalExitRequest,
    WriteTextFileRequest,
)
from .fs import FileSystemHandler
from .session import Session
from .terminal import TerminalHandler

if TYPE_CHECKING:
    from .client import Client

__all__ = ["WORKSPACE_SERVER_NAME", "WorkspaceServer", "workspace_server"]

#: the name the workspace server is declared under
WORKSPACE_SERVER_NAME = "workspace"

#: a session id → that session's file handler
FilesFor = Callable[[str], FileSystemHandler]

_READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
_WRITE = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
_RUN = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
_KILL = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}

Path_ = Annotated[str, Field(description="The file's path: absolute, or relative to the session's working directory")]


class WorkspaceServer(McpServer):
    """An :class:`~acplink.mcp.McpServer` whose tools read and write files through ``files``
    and run commands through ``terminals`` (see the module doc).

    ``files``: a :class:`FileSystemHandler`, or a function giving the handler of a session id
    (the client's own, per session); None: no file tools. ``write``: offer
    ``write_text_file``. ``terminals``: None: no ``run``. ``session_id``: the session served
    (passed to the handlers); None: the :class:`McpCall`'s ``session_id`` (the session the
    provider registered the server for) is used. A call for another session than the one
    given is refused.
    """

    def __init__(self, files: FileSystemHandler | FilesFor | None, terminals: TerminalHandler | None = None, *,
                 session_id: str | None = None, write: bool = True, name: str = WORKSPACE_SERVER_NAME,
                 version: str = __version__) -> None:
        super().__init__(name, version, instructions=(
            "Files and commands of the user's workspace (the session's folders). Paths may be "
            "absolute or relative to the session's working directory."))
        self.files = files
        self.terminals = terminals
        self.session_id = session_id
        #: the terminals of the ``run`` calls running now: (session id, terminal id)
        self._running: set[tuple[str | None, str]] = set()
        if files is not None:
            self.add_tool(self.read_text_file, annotations=_READ)
            if write:
                self.add_tool(self.write_text_file, annotations=_WRITE)
        if terminals is not None:
            self.add_tool(self.run, annotations=_RUN)
            self.add_tool(self.kill, annotations=_KILL)

    # -- the session, its handler, its paths ------------------------------------------------------

    def _session(self, call: McpCall | None) -> str | None:
        asked = call.session_id if call is not None else None
        if self.session_id is None:
            return asked
        if asked is not None and asked != self.session_id:
            raise InvalidParams("this workspace server serves another session", {"sessionId": asked})
        return self.session_id

    def _files(self, session_id: str | None) -> FileSystemHandler:
        files = self.files
        if isinstance(files, FileSystemHandler):
            return files
        if files is None:
            raise ResourceNotFound("this workspace server has no file access")
        if session_id is None:
            raise ResourceNotFound("no session: the workspace server must be registered for a session")
        return files(session_id)

    def _absolute(self, path: str, session_id: str | None) -> str:
        """``path`` made absolute against the session's cwd (its first root); the handlers
        then confine it as they confine any path."""
        if os.path.isabs(path) or self.files is None:
            return path
        roots = self._files(session_id).roots
        return os.path.join(roots[0], path) if roots else path

    # -- the tools ----------------------------------------------------------------------------

    async def read_text_file(
        self, path: Path_,
        line: Annotated[int | None, Field(ge=1, description="First line to read (1-based)")] = None,
        limit: Annotated[int | None, Field(ge=0, description="Most lines to read")] = None,
        call: McpCall | None = None,
    ) -> str | ToolResult:
        """Read a text file of the workspace (all of it, or `limit` lines from `line`)."""
        sid = self._session(call)
        files = self._files(sid)
        try:
            request = ReadTextFileRequest(session_id=sid or "", path=self._absolute(path, sid), line=line,
                                          limit=limit)
            return (await files.read_text_file(request)).content
        except RequestError as exc:
            return refusal(exc)

    async def write_text_file(
        self, path: Path_,
        content: Annotated[str, Field(description="The file's whole new content")],
        call: McpCall | None = None,
    ) -> str | ToolResult:
        """Create or replace a text file of the workspace with `content`."""
        sid = self._session(call)
        files = self._files(sid)
        target = self._absolute(path, sid)
        try:
            await files.write_text_file(WriteTextFileRequest(session_id=sid or "", path=target, content=content))
        except RequestError as exc:
            return refusal(exc)
        return f"wrote {len(content)} characters to {target}"

    async def run(
        self,
        command: Annotated[str, Field(description="The program to run (no shell)")],
        args: Annotated[list[str] | None, Field(description="Its arguments")] = None,
        cwd: Annotated[str | None, Field(description="Working directory (default: the session's)")] = None,
        env: Annotated[dict[str, str] | None, Field(description="Environment variables to set")] = None,
        output_byte_limit: Annotated[int | None, Field(ge=0, description="Most output bytes kept (the last ones)")]
        = None,
        timeout: Annotated[float | None, Field(gt=0, description="Seconds before the command is stopped")] = None,
        call: McpCall | None = None,
    ) -> ToolResult:
        """Run a command in the workspace, wait for it to end, and return its output (stdout and
        stderr together) and its exit status."""
        terminals = self.terminals
        if terminals is None:
            raise ResourceNotFound("this workspace server runs no commands")
        sid = self._session(call)
        try:
            request = CreateTerminalRequest(
                session_id=sid or "", command=command, args=args or [],
                cwd=None if cwd is None else self._absolute(cwd, sid),
                env=[EnvVariable(name=k, value=v) for k, v in (env or {}).items()],
                output_byte_limit=output_byte_limit)
            terminal_id = (await terminals.create(request)).terminal_id
        except RequestError as exc:
            return refusal(exc)
        key = (sid, terminal_id)
        self._running.add(key)
        try:
            if call is not None and call.progress_token is not None:
                await call.notify("notifications/progress", {
                    "progressToken": call.progress_token, "progress": 0,
                    "message": f"running {shlex.join([command, *(args or [])])}",
                    "_meta": {b.WORKSPACE_TERMINAL_META_KEY: terminal_id}})
            timed_out = False
            try:
                async with asyncio.timeout(timeout):
                    await terminals.wait_for_exit(WaitForTerminalExitRequest(session_id=sid or "",
                                                                             terminal_id=terminal_id))
            except TimeoutError:
                timed_out = True
                await terminals.kill(KillTerminalRequest(session_id=sid or "", terminal_id=terminal_id))
            out = await terminals.output(TerminalOutputRequest(session_id=sid or "", terminal_id=terminal_id))
        finally:
            self._running.discard(key)
            await _to_the_end(terminals.release(ReleaseTerminalRequest(session_id=sid or "", terminal_id=terminal_id)))
        status = out.exit_status
        code = status.exit_code if status is not None else None
        sig = status.signal if status is not None else None
        return ToolResult.text(
            _run_text(out.output, out.truncated, code, sig, timeout if timed_out else None),
            structured={"output": out.output, "truncated": out.truncated, "exitCode": code, "signal": sig,
                        "timedOut": timed_out, "terminalId": terminal_id},
            is_error=timed_out)

    async def kill(
        self,
        terminal_id: Annotated[str, Field(min_length=1, description="The terminal a running `run` named")],
        call: McpCall | None = None,
    ) -> ToolResult:
        """Kill the command a running `run` is waiting for (`run` then answers with the output so
        far). Killing one that has ended does nothing."""
        sid = self._session(call)
        if (sid, terminal_id) not in self._running or self.terminals is None:
            return ToolResult.text(f"no command of terminal {terminal_id!r} is running", structured={"killed": False})
        await self.terminals.kill(KillTerminalRequest(session_id=sid or "", terminal_id=terminal_id))
        return ToolResult.text(f"killed the command of terminal {terminal_id!r}", structured={"killed": True})


def refusal(exc: RequestError) -> ToolResult:
    """What a handler refused, as a tool result: ``isError``, its message as the text and the
    ACP error as ``structuredContent.error`` (a caller can raise the same error as v1's)."""
    return ToolResult.text(exc.message, structured={"error": exc.to_wire()}, is_error=True)


def _run_text(output: str, truncated: bool, code: int | None, sig: str | None, timed_out: float | None) -> str:
    lines = []
    if truncated:
        lines.append("[output truncated: the first bytes were dropped]")
    if output:
        lines.append(output.removesuffix("\n"))
    if timed_out is not None:
        lines.append(f"[timed out after {timed_out:g} s: stopped]")
    elif sig is not None:
        lines.append(f"[killed by {sig}]")
    else:
        lines.append(f"[exit code {code}]")
    return "\n".join(lines)


async def _to_the_end(coro: Coroutine[Any, Any, Any]) -> None:
    """Await ``coro`` to its end even when the caller is cancelled meanwhile (a terminal's
    release must kill and reap its processes whatever happens), then pass the cancellation on."""
    tasks = TaskSet("workspace-release")
    task = tasks.spawn(coro)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                break
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    if not task.cancelled():
        task.result()


def workspace_server(owner: Client | Session, session_id: str | None = None, *,
                     name: str = WORKSPACE_SERVER_NAME) -> WorkspaceServer:
    """The workspace server of one session of a :class:`~acplink.Client`, built from the
    client's own handlers and policy: file tools when the client serves ``fs`` (the session's
    handler, its roots, the connection's budget and read limit), ``write_text_file`` when it
    serves writes, ``run`` when it has a :class:`TerminalHandler` (none of them under a
    confining :class:`PermissionPolicy`).

    ``owner``: the client (``session_id`` then names the session, or None to take it from
    each call: the session the provider registered the server for), or a :class:`Session`.
    The session may be opened after the server is built (the client declares its MCP servers
    in ``session/new`` itself); until then, calls are refused as for an unknown session.
    """
    if isinstance(owner, Session):
        client = owner.client
        session_id = owner.session_id
    else:
        client = owner
    files: FilesFor | None = client._session_fs if client.fs_enabled else None
    return WorkspaceServer(files, client.terminals, session_id=session_id, write=client.fs_write, name=name)
