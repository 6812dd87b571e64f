"""Real MCP servers offered over ACP: :class:`McpBridge` turns an MCP server that acplink runs
(a command), reaches (a Streamable-HTTP URL) or holds in process (an ``mcp`` package
``MCPServer`` / ``Server``) into an :data:`~acplink.mcp.McpHandler`, so a client can declare
it to an agent as an ``acp`` MCP server (``mcp/message``), with no port and no subprocess on
the agent's side.

It needs the ``mcp`` extra (``pip install 'acplink[mcp]'``: the Python ``mcp`` package 2.x,
whose client speaks every MCP revision, the 2026-07-28 one and the handshake-era ones).

Each inner request the agent sends is passed on as it is, minus what the bridge's own MCP
connection says for itself (the ``io.modelcontextprotocol/*`` metadata and the progress token:
progress from the server is reported to the agent under the agent's token). The server's
errors come back as :class:`~acplink.McpError` values; a server that cannot start, or exits,
is one clear :class:`~acplink.AcpError`, never a traceback.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import IO, Any

from .._extras import require
from .._text import sanitize_for_terminal
from ..errors import AcpError, ConnectionClosed, McpError, UsageError
from ..mcp import MCP_CLIENT_CAPABILITIES, MCP_CLIENT_INFO, MCP_PROTOCOL_VERSION_KEY, McpCall

__all__ = ["McpBridge", "McpBridgeError", "parse_mcp_spec"]

log = logging.getLogger("acplink.mcp")

#: the keys of an inner request's ``_meta`` that describe the caller's own MCP connection: the
#: bridge's connection to the server says its own (version, capabilities, client info)
_OWN_META = frozenset({MCP_PROTOCOL_VERSION_KEY, MCP_CLIENT_CAPABILITIES, MCP_CLIENT_INFO, "progressToken"})
_STDERR_TAIL = 10


class McpBridgeError(AcpError):
    """An MCP server behind a :class:`McpBridge` could not be started or reached, or went away."""


def parse_mcp_spec(spec: str) -> tuple[str, str | list[str]]:
    """``NAME=COMMAND`` or ``NAME=URL`` (the CLI's ``--mcp``) → (name, URL or argv).

    A value starting with ``http://`` or ``https://`` is a URL; anything else is a command line,
    split as a shell would (``files=npx -y @modelcontextprotocol/server-filesystem .``)."""
    name, sep, value = spec.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise UsageError(f"--mcp {spec!r}: expected NAME=COMMAND or NAME=URL (e.g. files='npx -y server .')")
    if value.startswith(("http://", "https://")):
        return name, value
    try:
        argv = shlex.split(value)
    except ValueError as exc:
        raise UsageError(f"--mcp {spec!r}: cannot split the command: {exc}") from None
    return name, argv


class McpBridge:
    """An MCP server (command, URL, or an ``mcp`` package server object) as an MCP-over-ACP handler.

    ``target``: a URL (``"http://127.0.0.1:8000/mcp"``), a command (a list of arguments, or one
    string split as a shell would), or an ``mcp.server.mcpserver.MCPServer`` /
    ``mcp.server.lowlevel.Server`` served in process through its own request pipeline.
    ``cwd`` / ``env``: for a command (``env`` entries are added to this process's environment).
    ``timeout``: seconds to wait for each answer (None: as long as the agent waits).
    ``stderr``: a command's stderr is kept (its last lines name a failure) and, with
    ``stderr="inherit"``, also shown on ours. ``name``: for messages (default: the command or URL).

    Use it as an async context manager (it starts the server, and stops it on exit), then offer
    it like any handler::

        async with McpBridge(["python", "server.py"]) as tools:
            client.mcp.register("tools", tools)
    """

    def __init__(self, target: Any, *, name: str | None = None, cwd: str | os.PathLike[str] | None = None,
                 env: Mapping[str, str] | None = None, timeout: float | None = None,
                 stderr: str = "capture") -> None:
        if stderr not in ("capture", "inherit"):
            raise UsageError(f"stderr must be 'capture' or 'inherit', not {stderr!r}")
        if isinstance(target, str) and not target.startswith(("http://", "https://")):
            target = shlex.split(target)
        if isinstance(target, Sequence) and not isinstance(target, str):
            target = [str(part) for part in target]
            if not target:
                raise UsageError("McpBridge: an empty command")
        self.target = target
        self.cwd = cwd
        self.env = dict(env or {})
        self.timeout = timeout
        self.stderr = stderr
        self.name = name or (shlex.join(target) if isinstance(target, list) else
                             target if isinstance(target, str) else type(target).__name__)
        self._client: Any = None
        self._stack: AsyncExitStack | None = None
        self._errlog: IO[str] | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> McpBridge:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start (or connect to) the server and agree on a protocol revision with it."""
        require("an MCP server bridge (McpBridge, --mcp)", "mcp", "mcp")
        if self._client is not None:
            raise UsageError(f"the MCP bridge to {self.name!r} is already started")
        from mcp import Client

        stack = AsyncExitStack()
        try:
            client = Client(self._transport(), cache=None, read_timeout_seconds=self.timeout,
                            raise_exceptions=False)
            self._client = await stack.enter_async_context(client)
        except BaseException as exc:
            self._client = None
            with contextlib.suppress(Exception):
                await stack.aclose()
            message = self._start_failure(exc) if isinstance(exc, Exception) else ""
            self._close_errlog()
            if not isinstance(exc, Exception):
                raise
            raise McpBridgeError(message) from None
        self._stack = stack

    async def aclose(self) -> None:
        """Stop the server (a command: it is terminated if it does not exit on its own)."""
        stack, self._stack, self._client = self._stack, None, None
        try:
            if stack is not None:
                with contextlib.suppress(Exception):
                    await stack.aclose()
        finally:
            self._close_errlog()

    def _close_errlog(self) -> None:
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    def _transport(self) -> Any:
        target = self.target
        if isinstance(target, str):  # a URL
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(target)
        if isinstance(target, list):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            program = target[0]
            if shutil.which(program) is None and not Path(program).exists():
                raise McpBridgeError(f"cannot start the MCP server {self.name!r}: {program!r} was not found "
                                     "(is it installed and on PATH?)")
            params = StdioServerParameters(command=program, args=target[1:], env={**os.environ, **self.env},
                                           cwd=self.cwd)
            if self.stderr == "inherit":
                return stdio_client(params)
            self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            return stdio_client(params, errlog=self._errlog)
        return target  # an mcp server object: Client serves it in process

    # -- one inner request ---------------------------------------------------------------------

    async def __call__(self, call: McpCall) -> Any:
        client = self._client
        if client is None:
            raise McpBridgeError(f"the MCP bridge to {self.name!r} is not started (use `async with McpBridge(...)`)")
        from mcp.shared.exceptions import MCPError
        from pydantic import TypeAdapter, ValidationError

        params = _forwarded_params(call.params)
        progress = None
        if call.progress_token is not None:
            async def progress(value: float, total: float | None, message: str | None) -> None:
                await call.progress(value, total, message)

        request = _raw_request(call.method, params)
        try:
            result: Any = await client.session.send_request(request, TypeAdapter(Any), progress_callback=progress)
        except MCPError as exc:
            if _is_connection_lost(exc):
                raise ConnectionClosed(self._gone(exc)) from None
            raise McpError(exc.error.code, exc.error.message, exc.error.data) from None
        except ValidationError as exc:
            raise McpError(-32603, f"the MCP server {self.name!r} answered {call.method} with a result that is "
                                   f"not valid MCP ({exc.error_count()} error(s))") from None
        except (OSError, EOFError) as exc:
            raise ConnectionClosed(self._gone(exc)) from None
        return result

    # -- failures --------------------------------------------------------------------------------

    def stderr_tail(self) -> list[str]:
        """The server's last stderr lines (a command started with the default ``stderr``)."""
        errlog = self._errlog
        if errlog is None:
            return []
        with contextlib.suppress(OSError, ValueError):
            errlog.flush()
            errlog.seek(0)
            lines = [sanitize_for_terminal(line.rstrip()) for line in errlog.read().splitlines() if line.strip()]
            errlog.seek(0, os.SEEK_END)
            return lines[-_STDERR_TAIL:]
        return []

    def _with_stderr(self, message: str) -> str:
        tail = self.stderr_tail()
        return message + ("\nlast stderr lines:\n" + "\n".join(f"  | {line}" for line in tail) if tail else "")

    def _start_failure(self, exc: BaseException) -> str:
        if isinstance(exc, McpBridgeError):
            return str(exc)
        what = _one_line(exc)
        if isinstance(exc, FileNotFoundError):
            what = f"{exc.filename or self.name!r} was not found"
        return self._with_stderr(f"cannot start the MCP server {self.name!r}: {what}")

    def _gone(self, exc: BaseException) -> str:
        return self._with_stderr(f"the MCP server {self.name!r} went away: {_one_line(exc)}")


def _forwarded_params(params: dict[str, Any] | None) -> dict[str, Any] | None:
    if params is None:
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict) or _OWN_META.isdisjoint(meta):
        return params
    kept = {k: v for k, v in meta.items() if k not in _OWN_META}
    out = {k: v for k, v in params.items() if k != "_meta"}
    if kept:
        out["_meta"] = kept
    return out


def _raw_request(method: str, params: dict[str, Any] | None) -> Any:
    """An ``mcp`` request object for any method (the bridge passes requests on unread)."""
    from mcp_types import Request

    return Request[Any, Any](method=method, params=params)


def _is_connection_lost(exc: Any) -> bool:
    # the mcp package reports a closed connection as an MCPError with CONNECTION_CLOSED (-32000)
    # and a message saying so; a server's own -32000 error is passed on as an error
    return exc.error.code == -32000 and "closed" in exc.error.message.lower()


def _one_line(exc: BaseException) -> str:
    """One line for ``exc``; for a task group's error, its first cause (anyio wraps them)."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _one_line(exc.exceptions[0])
    return sanitize_for_terminal(" ".join(str(exc).split()) or type(exc).__name__)
