"""The default ``terminal/*`` handler: real processes, output capture, kill of the whole tree.

* Each terminal is one command started directly (no shell) with ``args``, under a small
  supervisor (``_launcher.py``, run with the client's Python) in its own session and process
  group, stdin from ``/dev/null``, stdout and stderr merged into one pipe. The supervisor
  reports how the command started and ended on a separate pipe, keeps every descendant of
  the command below it (Linux child subreaper, also through ``setsid()``), and kills them
  all on request or when the client process ends, even by SIGKILL.
* **Session.** A handler attached to a :class:`~acplink.Client` serves only the client's
  sessions (an unknown ``sessionId`` is ``ResourceNotFound``); ``cwd`` must lie inside the
  session's roots (its cwd and additional directories, or the handler's ``cwd_roots``) and
  defaults to the session's cwd.
* **Shell opt-in.** A shell (``/bin/sh -c``) is used only when the handler was created with
  ``allow_shell=True`` *and* the request carries ``"_meta": {"acplink": {"shell": true}}``;
  the script is ``command`` followed by the shell-quoted ``args``. A request that asks for
  a shell from a handler that does not allow one is refused (``InvalidParams``).
* ``env`` entries of the request are added to the handler's base environment (by default
  the inherited one). Names that change how programs are loaded (``_termenv.py``) are
  refused unless the handler allows them (``allow_env``).
* Output is kept up to the request's ``outputByteLimit``, capped by ``max_output_byte_limit``
  (default 1 MiB; ``default_output_byte_limit`` when the request sets none); beyond it the
  oldest bytes are dropped at a UTF-8 character boundary and ``truncated`` is reported.
  Bytes that are not UTF-8 are shown as U+FFFD. Released terminals keep their last output
  for :meth:`TerminalHandler.snapshot` within ``released_output_bytes`` in all.
* ``kill`` sends SIGTERM to every process of the terminal, waits up to ``kill_grace``
  seconds for the command, then SIGKILLs whatever is left of the tree (background and
  ``setsid()`` descendants included). The terminal stays valid. ``release`` kills when
  needed and forgets the id. ``aclose`` releases everything.
* Output is collected by asyncio protocols (callbacks on the event loop), so there is no
  reader task to leak; the process and status pipes are closed on release.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import secrets
import shlex
import signal
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping, Sequence
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
from ..transports._pipes import enlarge_pipe
from ._termenv import build_env

__all__ = ["TerminalHandler", "TerminalLimitReached"]

_KEEP_RELEASED = 64
_LAUNCHER = str(Path(__file__).with_name("_launcher.py"))
_START_TIMEOUT = 30.0  # the supervisor answers in ~0.1 s; generous for a loaded machine

#: session id → the session's roots (cwd first), or None for an unknown session
SessionRoots = Callable[[str], Sequence[str] | None]


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


def _inside(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


class _Terminal:
    """One running (or finished) command and its captured output."""

    def __init__(self, terminal_id: str, limit: int) -> None:
        self.id = terminal_id
        self.limit = limit
        self.buf = bytearray()
        self.truncated = False
        self.started: asyncio.Future[int] | None = None  # the command's pid, once it runs
        self.exited = asyncio.Event()  # the command ended (its status is known)
        self.done = asyncio.Event()  # the supervisor ended: nothing of the terminal runs
        self.eof = asyncio.Event()
        self.returncode: int | None = None
        self.transport: asyncio.SubprocessTransport | None = None
        self.status_pipe: asyncio.ReadTransport | None = None
        self.pid = 0

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

    def status_line(self, line: str) -> None:
        """A line from the supervisor: ``ok PID``, ``err ERRNO``, ``exit CODE``, ``signal NUM``."""
        word, _, arg = line.partition(" ")
        try:
            value = int(arg)
        except ValueError:
            return
        fut = self.started
        if fut is not None and not fut.done() and word in ("ok", "err"):
            if word == "ok":
                fut.set_result(value)
            else:
                fut.set_exception(OSError(value, os.strerror(value)))
        elif word in ("exit", "signal") and not self.exited.is_set():
            self.returncode = value if word == "exit" else -value
            self.exited.set()

    def supervisor_exited(self, returncode: int | None) -> None:
        if self.started is not None and not self.started.done():
            self.started.set_exception(OSError(0, f"the terminal supervisor exited ({returncode})"))
        if not self.exited.is_set():  # it died without a word (killed): so did the command
            self.returncode = -signal.SIGKILL if returncode is None or returncode >= 0 else returncode
            self.exited.set()
        self.done.set()


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
        self.term.supervisor_exited(self.transport.get_returncode() if self.transport is not None else None)


class _StatusProtocol(asyncio.Protocol):
    def __init__(self, term: _Terminal) -> None:
        self.term = term
        self.pending = b""

    def data_received(self, data: bytes) -> None:
        *lines, self.pending = (self.pending + data).split(b"\n")
        for line in lines:
            self.term.status_line(line.decode("ascii", errors="replace"))
        self.pending = self.pending[-64:]


class TerminalHandler:
    """Runs the agent's ``terminal/*`` requests as real local processes.

    ``allow_shell``: permit the ``_meta`` shell opt-in (see the module doc).
    ``max_output_byte_limit``: the most output kept per terminal, whatever the request asks
    (default 1 MiB). ``default_output_byte_limit``: kept when the request sets no
    ``outputByteLimit``. ``released_output_bytes``: output of released terminals kept for
    :meth:`snapshot`, in all. ``max_terminals``: terminals alive at once (not yet released).
    ``cwd_roots``: when given, ``cwd`` must lie inside one of these folders (and defaults to
    the first) in every session; otherwise the session's own roots apply.
    ``env``: base environment (default: inherited). ``allow_env``: ``True``, or the names of
    the loader variables (``_termenv.py``) the agent may set anyway. ``kill_grace``: seconds between SIGTERM and
    SIGKILL. ``drain_timeout``: how long ``wait_for_exit`` waits for the last output after
    the command exited (background children may hold the pipe open).
    """

    def __init__(
        self,
        *,
        allow_shell: bool = False,
        default_output_byte_limit: int = 1_000_000,
        max_output_byte_limit: int = 1 << 20,
        released_output_bytes: int = 8 << 20,
        max_terminals: int = 32,
        cwd_roots: Sequence[str | Path] | None = None,
        env: Mapping[str, str] | None = None,
        allow_env: bool | Collection[str] = False,
        kill_grace: float = 2.0,
        drain_timeout: float = 1.0,
    ) -> None:
        self.allow_shell = allow_shell
        self.default_output_byte_limit = default_output_byte_limit
        self.max_output_byte_limit = max_output_byte_limit
        self.released_output_bytes = released_output_bytes
        self.max_terminals = max_terminals
        self.cwd_roots = [os.path.realpath(os.fspath(r)) for r in cwd_roots] if cwd_roots is not None else None
        self.env = dict(env) if env is not None else None
        self.allow_env: bool | frozenset[str] = allow_env if isinstance(allow_env, bool) else frozenset(allow_env)
        self.kill_grace = kill_grace
        self.drain_timeout = drain_timeout
        self._session_roots: SessionRoots | None = None
        self._terms: dict[str, _Terminal] = {}
        self._released: OrderedDict[str, TerminalOutputResponse] = OrderedDict()
        self._released_bytes = 0
        self._starting = 0

    def attach(self, session_roots: SessionRoots) -> None:
        """Serve one client's sessions: ``session_roots(id)`` gives a session's roots (cwd
        first), or None for an id the client does not know (``terminal/create`` is then
        refused). :class:`~acplink.Client` calls this with its own sessions."""
        self._session_roots = session_roots

    # -- helpers ----------------------------------------------------------------------------

    def _get(self, terminal_id: str) -> _Terminal:
        term = self._terms.get(terminal_id)
        if term is None:
            raise ResourceNotFound(f"unknown terminal {terminal_id!r}", {"terminalId": terminal_id})
        return term

    def _roots(self, session_id: str) -> list[str] | None:
        """The folders a terminal of this session may run in (None: anywhere)."""
        session: Sequence[str] | None = None
        if self._session_roots is not None:
            session = self._session_roots(session_id)
            if session is None:
                raise ResourceNotFound(f"unknown session {session_id!r}", {"sessionId": session_id})
        if self.cwd_roots is not None:
            return self.cwd_roots
        return [os.path.realpath(r) for r in session] if session is not None else None

    def _cwd(self, cwd: str | None, roots: list[str] | None) -> str | None:
        if cwd is None:
            if not roots:
                return None
            cwd = roots[0]
        if not os.path.isabs(cwd):
            raise InvalidParams("cwd must be an absolute path", {"reason": "not_absolute"})
        real = os.path.realpath(cwd)
        if roots is not None and not _inside(real, roots):
            raise InvalidParams("cwd is outside the session roots", {"reason": "outside_roots"})
        if not os.path.isdir(real):
            raise InvalidParams("cwd is not an existing directory", {"reason": "not_a_directory"})
        return real

    def _limit(self, requested: int | None) -> int:
        limit = self.default_output_byte_limit if requested is None else requested
        if limit < 0:
            raise InvalidParams("outputByteLimit must not be negative", {"reason": "invalid_limit"})
        return min(limit, self.max_output_byte_limit)

    @property
    def terminal_ids(self) -> list[str]:
        """The ids of the terminals not yet released."""
        return list(self._terms)

    def process_id(self, terminal_id: str) -> int:
        """The pid of a terminal's supervisor (also its process-group and session id)."""
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
        roots = self._roots(params.session_id)
        if len(self._terms) + self._starting >= self.max_terminals:
            raise TerminalLimitReached(
                f"too many terminals: at most {self.max_terminals} may be open; release unused ones",
                {"maxTerminals": self.max_terminals},
            )
        shell = _wants_shell(params.meta)
        if shell and not self.allow_shell:
            raise InvalidParams("shell execution is not enabled in this client", {"reason": "shell_disabled"})
        limit = self._limit(params.output_byte_limit)
        cwd = self._cwd(params.cwd, roots)
        env = build_env(self.env if self.env is not None else os.environ,
                        [(var.name, var.value) for var in params.env], self.allow_env)
        if shell:
            script = " ".join([params.command, *(shlex.quote(a) for a in params.args)])
            argv = ["/bin/sh", "-c", script]
        else:
            argv = [params.command, *params.args]
        if not argv[0] or "\0" in "".join(argv):
            raise InvalidParams("command and args must not be empty or contain NUL", {"reason": "invalid_command"})

        term = _Terminal(f"term_{secrets.token_hex(8)}", limit)
        self._starting += 1  # (counted against max_terminals while it starts)
        try:
            await self._start(term, argv, cwd, env)
        finally:
            self._starting -= 1
        self._terms[term.id] = term
        return CreateTerminalResponse(terminal_id=term.id)

    async def _start(self, term: _Terminal, argv: list[str], cwd: str | None, env: dict[str, str]) -> None:
        loop = asyncio.get_running_loop()
        started = term.started = loop.create_future()
        status_r, status_w = os.pipe()
        status_file = open(status_r, "rb", buffering=0)  # the pipe transport owns and closes it
        try:
            term.status_pipe, _ = await loop.connect_read_pipe(lambda: _StatusProtocol(term), status_file)
        except BaseException:
            status_file.close()
            os.close(status_w)
            raise
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: _Protocol(term),
                sys.executable, "-I", "-S", _LAUNCHER, str(status_w), str(os.getpid()),
                "" if "LC_CTYPE" in env else "LC_CTYPE", *argv,
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                cwd=cwd, env=env, start_new_session=True, pass_fds=(status_w,),
            )
        except (OSError, ValueError) as exc:
            term.status_pipe.close()
            detail = os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else type(exc).__name__
            raise InternalError(f"could not start the terminal: {detail}") from None
        finally:
            os.close(status_w)
        term.transport = transport
        term.pid = transport.get_pid()
        out = transport.get_pipe_transport(1)
        if out is not None:  # fewer, larger reads of a fast producer
            enlarge_pipe(out.get_extra_info("pipe").fileno())
        try:
            await asyncio.wait_for(started, _START_TIMEOUT)
        except BaseException as exc:
            await self._finish(term, keep=False)
            if isinstance(exc, OSError):
                raise _start_error(exc, argv[0]) from None
            if isinstance(exc, TimeoutError):
                raise InternalError("could not start the command: the terminal supervisor did not answer") from None
            raise

    # -- terminal/output, wait_for_exit -----------------------------------------------------

    async def output(self, params: TerminalOutputRequest) -> TerminalOutputResponse:
        """Handle ``terminal/output``: the output so far, ``truncated`` and the exit status."""
        return self._get(params.terminal_id).snapshot()

    async def wait_for_exit(self, params: WaitForTerminalExitRequest) -> WaitForTerminalExitResponse:
        """Handle ``terminal/wait_for_exit``: wait for the command, then report how it ended."""
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
        if not term.exited.is_set():
            self._signal(term, signal.SIGTERM)  # the supervisor passes it to every process
            await _wait(term.exited, self.kill_grace)
        if not term.done.is_set():
            # Whatever is left (a command that ignored SIGTERM, background and setsid()
            # descendants): the supervisor SIGKILLs them all, then exits.
            self._signal(term, signal.SIGUSR1)
            if not await _wait(term.done, max(self.kill_grace, 5.0)):
                self._signal(term, signal.SIGKILL, group=True)  # the supervisor itself is stuck
                await _wait(term.done, 5.0)
        await self._drain(term)

    @staticmethod
    def _signal(term: _Terminal, sig: signal.Signals, *, group: bool = False) -> None:
        # only while the supervisor is not reaped: its pid cannot have been reused
        if term.pid <= 0 or term.done.is_set():
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if group:
                os.killpg(term.pid, sig)
            else:
                os.kill(term.pid, sig)

    async def release(self, params: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        """Handle ``terminal/release``: kill if still running and forget the id."""
        term = self._get(params.terminal_id)
        del self._terms[params.terminal_id]
        await self._finish(term)
        return ReleaseTerminalResponse()

    async def _finish(self, term: _Terminal, *, keep: bool = True) -> None:
        try:
            await self._kill(term)
        finally:
            if term.transport is not None:
                term.transport.close()
            if term.status_pipe is not None:
                term.status_pipe.close()
            if keep:
                self._keep(term)

    def _keep(self, term: _Terminal) -> None:
        snap = term.snapshot()
        size = len(snap.output.encode())
        if size > self.released_output_bytes:
            return
        self._released[term.id] = snap
        self._released_bytes += size
        while len(self._released) > _KEEP_RELEASED or self._released_bytes > self.released_output_bytes:
            _, old = self._released.popitem(last=False)
            self._released_bytes -= len(old.output.encode())

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


async def _wait(event: asyncio.Event, timeout: float) -> bool:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), timeout)
    return event.is_set()


def _start_error(exc: OSError, command: str) -> RequestError:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return InvalidParams(f"command not found: {command}", {"reason": "command_not_found"})
    if exc.errno in (errno.EACCES, errno.EPERM, errno.ENOEXEC, errno.EISDIR):
        return InvalidParams(f"command is not executable: {command}", {"reason": "not_executable"})
    detail = exc.strerror if exc.errno == 0 else os.strerror(exc.errno) if exc.errno else str(exc)
    return InternalError(f"could not start the command: {detail}")
