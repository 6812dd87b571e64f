#!/usr/bin/env python3
"""Interop peer: an ACP client written on the official Python SDK
(`agent-client-protocol` 0.12.1, import name `acp`).

    py_client.py --cwd DIR [--prompt TEXT]... [--deny] [--cancel-after S]
                 [--timeout S] -- AGENT_CMD [ARGS...]

Spawns AGENT_CMD (stdin/stdout piped, stderr inherited, full environment),
sends initialize, session/new (cwd = DIR made absolute) and one session/prompt
per --prompt. Prints one JSON line per event on stdout (see
tests/interop/README.md); the same events as tests/interop/js/client.mjs.

Exit status: 0 when the run went through (a prompt answered with a JSON-RPC
error is an "error" event, not a failure); 1 when the agent could not be
driven (spawn/initialize/session failure, connection lost, timeout), after
printing {"event":"fatal","message":...}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import Any

from acp import RequestError, spawn_agent_process, text_block
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def wire(model: Any) -> Any:
    """A parsed SDK model back in camelCase wire form (only the fields sent)."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


class _Terminal:
    """A command run for terminal/create: output kept (tail-truncated to the limit)."""

    def __init__(self, proc: asyncio.subprocess.Process, limit: int | None) -> None:
        self.proc = proc
        self.limit = limit
        self.output = bytearray()
        self.truncated = False
        self.pump = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(65536):
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                cut = len(self.output) - self.limit
                # Never start the kept tail inside a UTF-8 sequence.
                while cut < len(self.output) and (self.output[cut] & 0xC0) == 0x80:
                    cut += 1
                del self.output[:cut]
                self.truncated = True
        await self.proc.wait()

    def exit_status(self) -> TerminalExitStatus | None:
        code = self.proc.returncode
        if code is None or not self.pump.done():
            return None
        if code < 0:
            return TerminalExitStatus(exit_code=None, signal=signal.Signals(-code).name)
        return TerminalExitStatus(exit_code=code, signal=None)

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


class InteropClient:
    """Client-side handlers; the SDK calls them with snake_case keyword args."""

    def __init__(self, root: str, deny: bool) -> None:
        self.root = os.path.realpath(root)
        self.deny = deny
        self.terminals: dict[str, _Terminal] = {}

    # --- session ---------------------------------------------------------
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        emit({"event": "update", "update": wire(update)})

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> RequestPermissionResponse:
        want = "reject" if self.deny else "allow"
        chosen = next((o for o in options if o.kind.startswith(want)), None)
        emit({
            "event": "permission",
            "options": [o.option_id for o in options],
            "answer": want if chosen else "cancelled",
            "optionId": chosen.option_id if chosen else None,
        })
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id))

    # --- fs ----------------------------------------------------------------
    def _checked(self, path: str) -> str:
        real = os.path.realpath(path)
        if not os.path.isabs(path) or not (real == self.root or real.startswith(self.root + os.sep)):
            raise RequestError(-32602, f"Invalid params: path outside the session cwd: {path}", {"path": path})
        return real

    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None, **kwargs: Any) -> ReadTextFileResponse:
        emit({"event": "fs_read", "path": path})
        real = self._checked(path)
        try:
            with open(real, encoding="utf-8") as f:
                content = f.read()
        except FileNotFoundError:
            raise RequestError.resource_not_found(path) from None
        if line is not None or limit is not None:
            lines = content.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            content = "".join(lines[start:start + limit] if limit is not None else lines[start:])
        return ReadTextFileResponse(content=content)

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **kwargs: Any) -> WriteTextFileResponse:
        emit({"event": "fs_write", "path": path})
        real = self._checked(path)
        os.makedirs(os.path.dirname(real), exist_ok=True)
        with open(real, "w", encoding="utf-8") as f:
            f.write(content)
        return WriteTextFileResponse()

    # --- terminal ----------------------------------------------------------
    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: list[Any] | None = None, cwd: str | None = None,
                              output_byte_limit: int | None = None, **kwargs: Any) -> CreateTerminalResponse:
        emit({"event": "terminal", "command": command, "args": list(args or [])})
        child_env = dict(os.environ)
        for var in env or []:
            child_env[var.name] = var.value
        try:
            proc = await asyncio.create_subprocess_exec(
                command, *(args or []), cwd=cwd or self.root, env=child_env,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )
        except OSError as exc:
            raise RequestError(-32603, f"Internal error: cannot run {command}: {exc}") from None
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = _Terminal(proc, output_byte_limit)
        return CreateTerminalResponse(terminal_id=terminal_id)

    def _terminal(self, terminal_id: str) -> _Terminal:
        term = self.terminals.get(terminal_id)
        if term is None:
            raise RequestError.resource_not_found(terminal_id)
        return term

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> TerminalOutputResponse:
        term = self._terminal(terminal_id)
        return TerminalOutputResponse(
            output=term.output.decode("utf-8", errors="replace"),
            truncated=term.truncated,
            exit_status=term.exit_status(),
        )

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str,
                                     **kwargs: Any) -> WaitForTerminalExitResponse:
        term = self._terminal(terminal_id)
        await asyncio.shield(term.pump)
        status = term.exit_status()
        assert status is not None
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        self._terminal(terminal_id).kill()
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> ReleaseTerminalResponse:
        self._terminal(terminal_id).kill()
        del self.terminals[terminal_id]
        return ReleaseTerminalResponse()

    def shutdown(self) -> None:
        for term in self.terminals.values():
            term.kill()


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        sys.exit("usage: py_client.py --cwd DIR [--prompt TEXT]... [--deny] [--cancel-after S] -- AGENT_CMD [ARGS...]")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="py_client.py")
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--prompt", action="append", default=[])
    parser.add_argument("--deny", action="store_true")
    parser.add_argument("--cancel-after", type=float, default=None)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed for each request")
    opts = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command:
        parser.error("missing AGENT_CMD after --")
    return opts, command


async def run(opts: argparse.Namespace, command: list[str]) -> int:
    cwd = os.path.abspath(opts.cwd)
    client = InteropClient(cwd, opts.deny)
    # By default the SDK pipes the agent's stderr and trims its environment to
    # a few variables; we want stderr to pass through and the env inherited.
    async with spawn_agent_process(
        client, command[0], *command[1:], env=dict(os.environ), transport_kwargs={"stderr": None},
    ) as (conn, _proc):
        try:
            init = await asyncio.wait_for(conn.initialize(
                protocol_version=1,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True),
                client_info=Implementation(name="py-sdk-client", version="0.12.1"),
            ), opts.timeout)
            emit({"event": "initialize", "result": wire(init)})
            session = await asyncio.wait_for(conn.new_session(cwd=cwd, mcp_servers=[]), opts.timeout)
            emit({"event": "session", "sessionId": session.session_id})

            for text in opts.prompt:
                canceller = None
                if opts.cancel_after is not None:
                    async def cancel_later() -> None:
                        await asyncio.sleep(opts.cancel_after)
                        await conn.cancel(session_id=session.session_id)
                    canceller = asyncio.create_task(cancel_later())
                try:
                    response = await asyncio.wait_for(
                        conn.prompt(session_id=session.session_id, prompt=[text_block(text)]), opts.timeout)
                    emit({"event": "stop", "stopReason": response.stop_reason})
                except RequestError as exc:
                    emit({"event": "error", "code": exc.code, "message": str(exc)})
                finally:
                    if canceller is not None:
                        canceller.cancel()
        finally:
            client.shutdown()
    return 0


def main() -> None:
    opts, command = parse_args(sys.argv[1:])
    try:
        code = asyncio.run(run(opts, command))
    except Exception as exc:  # spawn failure, connection lost, timeout...
        emit({"event": "fatal", "message": f"{type(exc).__name__}: {exc}"})
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
