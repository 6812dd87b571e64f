"""The default ``terminal/*`` handler: real processes, output capture, kill of the whole tree.

* Each terminal is one process started directly (no shell) with ``args``, in its own session
  and process group (``start_new_session=True``), stdin from ``/dev/null``, stdout and stderr
  merged into one pipe.
* **Shell opt-in.** A shell (``/bin/sh -c``) is used only when the handler was created with
  ``allow_shell=True`` *and* the request carries ``"_meta": {"acplink": {"shell": true}}``;
  the script is ``command`` followed by the shell-quoted ``args``. A request that asks for
  a shell from a handler that does not allow one is refused (``InvalidParams``).
* ``env`` entries of the request are added to the handler's base environment (by default
  the inherited one); ``cwd`` must be absolute (and inside ``cwd_roots`` when given).
* Output is kept up to the request's ``outputByteLimit`` (or ``default_output_byte_limit``);
  beyond it the oldest bytes are dropped at a UTF-8 character boundary and ``truncated``
  is reported. Bytes that are not UTF-8 are shown as U+FFFD.
* ``kill`` sends SIGTERM to the process group, waits up to ``kill_grace`` seconds for the
  process, then sends SIGKILL to the group (so children that ignored SIGTERM die too). The
  terminal stays valid. ``release`` kills when needed and forgets the id (its last output
  stays readable with :meth:`TerminalHandler.snapshot`). ``aclose`` releases everything.
* Output is collected by an asyncio subprocess *protocol* (callbacks on the event loop), so
  there is no reader task to leak; the process transport is closed on release.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shlex
import signal
import subprocess
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InternalError, InvalidParams, RequestError, ResourceNotFound
from ..schema import (
    CreateTerminalRequest,
    CreateTerminalResponse,
    KillTerminalRequest,
    KillTerminalResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
)

__all__ = ["TerminalHandler", "TerminalLimitReached"]

_KEEP_RELEASED = 64


class TerminalLimitReached(RequestError):
    """``terminal/create`` refused: the handler already runs ``max_terminals`` terminals."""


def _wants_shell(meta: dict[str, Any] | None) -> bool:
    ours = meta.get("acplink") if isinstance(meta, dict) else None
    return isinstance(ours, dict) and ours.get("shell") is True


def _complete_len(buf: bytearray) -> int:
    """Length of the longest prefix of ``buf`` that does not end inside a UTF-8 sequence."""
    end = len(buf)
    for i in range(end - 1, max(-1, end - 5), -1):
        b = buf[i]
        if b & 0xC0 == 0x80:
            continue
        need = 1 if b < 0x80 else 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else 4 if b >> 3 == 0b11110 else 1
        return i if end - i < need else end
    return end


def _exit_status(returncode: int) -> tuple[int | None, str | None]:
    if returncode >= 0:
        return returncode, None
    try:
        return None, signal.Signals(-returncode).name
    except ValueError:
        return None, f"SIG{-returncode}"


class _Terminal:
    """One running (or finished) command and its captured output."""

    def __init__(self, terminal_id: str, limit: int) -> None:
        self.id = terminal_id
        self.limit = limit
        self.buf = bytearray()
        self.truncated = False
        self.exited = asyncio.Event()
        self.eof = asyncio.Event()
        self.returncode: int | None = None
        self.transport: asyncio.SubprocessTransport | None = None
        self.pid = 0
        self.swept = False

    def append(self, data: bytes) -> None:
        self.buf += data
        excess = len(self.buf) - self.limit
        if excess > 0:
            # Drop the oldest bytes, then the continuation bytes of a character cut in two.
            cut = excess
            for _ in range(3):
                if cut < len(self.buf) and self.buf[cut] & 0xC0 == 0x80:
                    cut += 1
            del self.buf[:cut]
            self.truncated = True

    def text(self) -> str:
        end = len(self.buf) if self.eof.is_set() else _complete_len(self.buf)
        return bytes(self.buf[:end]).decode("utf-8", errors="replace")

    def exit_status(self) -> TerminalExitStatus | None:
        if self.returncode is None:
            return None
        code, sig = _exit_status(self.returncode)
        return TerminalExitStatus(exit_code=code, signal=sig)

    def snapshot(self) -> TerminalOutputResponse:
        status = self.exit_status()
        if status is None:
            return TerminalOutputResponse(output=self.text(), truncated=self.truncated)
        return TerminalOutputResponse(output=self.text(), truncated=self.truncated, exit_status=status)


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, term: _Terminal) -> None:
        self.term = term
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self.term.append(data.encode() if isinstance(data, str) else data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.term.eof.set()

    def process_exited(self) -> None:
        if self.transport is not None:
            self.term.returncode = self.transport.get_returncode()
        self.term.exited.set()


class TerminalHandler:
    """Runs the agent's ``terminal/*`` requests as real local processes.

    ``allow_shell``: permit the ``_meta`` shell opt-in (see the module doc).
    ``default_output_byte_limit``: output kept when the request sets no ``outputByteLimit``.
    ``max_terminals``: terminals alive at once (not yet released).
    ``cwd_roots``: when given, ``cwd`` must lie inside one of these folders (and defaults to
    the first). ``env``: base environment (default: inherited). ``kill_grace``: seconds
    between SIGTERM and SIGKILL. ``drain_timeout``: how long ``wait_for_exit`` waits for the
    last output after the process exited (background children may hold the pipe open).
    """

    def __init__(
        self,
        *,
        allow_shell: bool = False,
        default_output_byte_limit: int = 1_000_000,
        max_terminals: int = 32,
        cwd_roots: Sequence[str | Path] | None = None,
        env: Mapping[str, str] | None = None,
        kill_grace: float = 2.0,
        drain_timeout: float = 1.0,
    ) -> None:
        self.allow_shell = allow_shell
        self.default_output_byte_limit = default_output_byte_limit
        self.max_terminals = max_terminals
        self.cwd_roots = [os.path.realpath(os.fspath(r)) for r in cwd_roots] if cwd_roots is not None else None
        self.env = dict(env) if env is not None else None
        self.kill_grace = kill_grace
        self.drain_timeout = drain_timeout
        self._terms: dict[str, _Terminal] = {}
        self._released: OrderedDict[str, TerminalOutputResponse] = OrderedDict()

    # -- helpers ----------------------------------------------------------------------------

    def _get(self, terminal_id: str) -> _Terminal:
        term = self._terms.get(terminal_id)
        if term is None:
            raise ResourceNotFound(f"unknown terminal {terminal_id!r}", {"terminalId": terminal_id})
        return term

    def _cwd(self, cwd: str | None) -> str | None:
        if cwd is None:
            return self.cwd_roots[0] if self.cwd_roots else None
        if not os.path.isabs(cwd):
            raise InvalidParams("cwd must be an absolute path", {"reason": "not_absolute"})
        real = os.path.realpath(cwd)
        if self.cwd_roots is not None and not any(
            real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.cwd_roots
        ):
            raise InvalidParams("cwd is outside the session roots", {"reason": "outside_roots"})
        if not os.path.isdir(real):
            raise InvalidParams("cwd is not an existing directory", {"reason": "not_a_directory"})
        return real

    @property
    def terminal_ids(self) -> list[str]:
        """The ids of the terminals not yet released."""
        return list(self._terms)

    def process_id(self, terminal_id: str) -> int:
        """The pid (also the process-group id) of a terminal's process."""
        return self._get(terminal_id).pid

    def snapshot(self, terminal_id: str) -> TerminalOutputResponse:
        """The current output of a terminal, also after release (the last ones are kept)."""
        term = self._terms.get(terminal_id)
        if term is not None:
            return term.snapshot()
        kept = self._released.get(terminal_id)
        if kept is None:
            raise ResourceNotFound(f"unknown terminal {terminal_id!r}", {"terminalId": terminal_id})
        return kept

    # -- terminal/create --------------------------------------------------------------------

    async def create(self, params: CreateTerminalRequest) -> CreateTerminalResponse:
        """Handle ``terminal/create``: start the command and return its terminal id."""
        if len(self._terms) >= self.max_terminals:
            raise TerminalLimitReached(
                f"too many terminals: at most {self.max_terminals} may be open; release unused ones",
                {"maxTerminals": self.max_terminals},
            )
        shell = _wants_shell(params.meta)
        if shell and not self.allow_shell:
            raise InvalidParams("shell execution is not enabled in this client", {"reason": "shell_disabled"})
        limit = self.default_output_byte_limit if params.output_byte_limit is None else params.output_byte_limit
        if limit < 0:
            raise InvalidParams("outputByteLimit must not be negative", {"reason": "invalid_limit"})
        cwd = self._cwd(params.cwd)
        env = dict(self.env if self.env is not None else os.environ)
        for var in params.env:
            env[var.name] = var.value
        if shell:
            script = " ".join([params.command, *(shlex.quote(a) for a in params.args)])
            argv = ["/bin/sh", "-c", script]
        else:
            argv = [params.command, *params.args]

        terminal_id = f"term_{secrets.token_hex(8)}"
        term = _Terminal(terminal_id, limit)
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: _Protocol(term),
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except FileNotFoundError:
            raise InvalidParams(f"command not found: {params.command}", {"reason": "command_not_found"}) from None
        except PermissionError:
            raise InvalidParams(f"command is not executable: {params.command}",
                                {"reason": "not_executable"}) from None
        except (OSError, ValueError) as exc:
            detail = os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else type(exc).__name__
            raise InternalError(f"could not start the command: {detail}") from None
        term.transport = transport
        term.pid = transport.get_pid()
        self._terms[terminal_id] = term
        return CreateTerminalResponse(terminal_id=terminal_id)

    # -- terminal/output, wait_for_exit -----------------------------------------------------

    async def output(self, params: TerminalOutputRequest) -> TerminalOutputResponse:
        """Handle ``terminal/output``: the output so far, ``truncated`` and the exit status."""
        return self._get(params.terminal_id).snapshot()

    async def wait_for_exit(self, params: WaitForTerminalExitRequest) -> WaitForTerminalExitResponse:
        """Handle ``terminal/wait_for_exit``: wait for the process, then report how it ended."""
        term = self._get(params.terminal_id)
        await term.exited.wait()
        await self._drain(term)
        code, sig = _exit_status(term.returncode if term.returncode is not None else -signal.SIGKILL)
        return WaitForTerminalExitResponse(exit_code=code, signal=sig)

    async def _drain(self, term: _Terminal) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(term.eof.wait(), self.drain_timeout)

    # -- terminal/kill, release -------------------------------------------------------------

    async def kill(self, params: KillTerminalRequest) -> KillTerminalResponse:
        """Handle ``terminal/kill``: end the process tree; the terminal stays readable."""
        await self._kill(self._get(params.terminal_id))
        return KillTerminalResponse()

    async def _kill(self, term: _Terminal) -> None:
        was_running = not term.exited.is_set()
        if was_running:
            _signal_group(term.pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(term.exited.wait(), self.kill_grace)
        if not term.swept and (was_running or not term.eof.is_set()):
            # Whatever is left of the group (children that ignored SIGTERM, background jobs
            # holding the pipe). Skipped when the process ended long ago and the pipe is
            # closed: the group is then most likely gone and its id could be reused.
            term.swept = True
            _signal_group(term.pid, signal.SIGKILL)
        if not term.exited.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(term.exited.wait(), max(self.kill_grace, 5.0))
        await self._drain(term)

    async def release(self, params: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        """Handle ``terminal/release``: kill if still running and forget the id."""
        term = self._get(params.terminal_id)
        del self._terms[params.terminal_id]
        await self._finish(term)
        return ReleaseTerminalResponse()

    async def _finish(self, term: _Terminal) -> None:
        try:
            await self._kill(term)
        finally:
            if term.transport is not None:
                term.transport.close()
            self._released[term.id] = term.snapshot()
            while len(self._released) > _KEEP_RELEASED:
                self._released.popitem(last=False)

    async def aclose(self) -> None:
        """Kill and reap every terminal (call when the connection ends)."""
        terms = list(self._terms.values())
        self._terms.clear()
        results = await asyncio.gather(*(self._finish(t) for t in terms), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result

    async def __aenter__(self) -> TerminalHandler:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    if pgid <= 0:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
