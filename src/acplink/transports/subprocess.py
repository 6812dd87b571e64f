"""A spawned agent (or client) as a transport: its stdin/stdout carry the protocol.

The child's stderr is always drained (passed through, captured, or handed to a callback) so
a chatty child can never block on a full pipe. Shutdown is a bounded ladder: close stdin →
wait → SIGTERM → wait → SIGKILL (to the child's whole process group).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import shlex
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from ..errors import ConnectionClosed, PeerOutputNotJson, TransportError
from ._pipes import PIPE_SIZE, enlarge_pipe
from .base import FlowControl, TransportSink
from .stream import StreamTransport, deliver

__all__ = ["SubprocessTransport", "describe_start_failure", "stderr_report"]

StderrMode = Literal["inherit", "capture", "discard"] | Callable[[bytes], None]


class _Stdout(asyncio.Protocol):
    """The child's stdout pipe, read without asyncio's extra turn (see connection_made); its
    end still goes the usual way (asyncio's subprocess transport tracks its pipes)."""

    def __init__(self, child: _ChildProtocol, inner: asyncio.BaseProtocol) -> None:
        self.child = child
        self.inner = inner

    def data_received(self, data: bytes) -> None:
        self.child.pipe_data_received(1, data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()  # type: ignore[attr-defined, no-any-return]

    def connection_lost(self, exc: Exception | None) -> None:
        self.inner.connection_lost(exc)


class _ChildProtocol(FlowControl, asyncio.SubprocessProtocol):
    def __init__(self, owner: SubprocessTransport) -> None:
        FlowControl.__init__(self)
        self.owner = owner
        self.exited = asyncio.get_running_loop().create_future()
        self.stdout_eof = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (before any output is delivered: pause_reading works from the first byte on, e.g.
        # when the connection gives up on a child whose output is not JSON-RPC)
        self.owner._transport = transport  # type: ignore[assignment]
        # The child's stdout straight to us: asyncio hands a subprocess pipe's data on with
        # call_soon, a turn of the loop per read. (Output read before now was queued that way
        # already and runs before any later read: the order holds.)
        stdout = transport.get_pipe_transport(1)  # type: ignore[attr-defined]
        if stdout is not None:
            stdout.set_protocol(_Stdout(self, stdout.get_protocol()))

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            if self.owner._head is not None:  # (until the first line is complete: start-up reports)
                self.owner._take_head(data)
            sink = self.owner._sink
            if sink is not None:
                deliver(sink, data)
        else:
            self.owner._on_stderr(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 0:
            self.flow_lost(exc)
        elif fd == 1 and not self.stdout_eof.done():
            self.stdout_eof.set_result(None)
            sink = self.owner._sink
            if sink is not None:
                sink.eof_received(exc)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        self.flow_lost(None)


class SubprocessTransport(StreamTransport):
    """Spawn ``command`` and talk to it over its stdin/stdout.

    ``env`` entries are added to (or, with ``inherit_env=False``, replace) this process's
    environment. ``stderr``: "inherit" copies it to our stderr (default), "capture" keeps it
    only in :attr:`stderr_tail`, "discard" drops it, or a callable gets each chunk. The last
    ``stderr_lines`` lines are always kept for error reports. ``pipe_size``: the kernel
    buffer asked for on the stdin/stdout pipes (Linux; 256 KiB by default, which makes
    streams of small messages much cheaper; ``None`` keeps the system's 64 KiB, e.g. for a
    process that spawns hundreds of agents and must stay within the per-user pipe quota).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrMode = "inherit",
        stderr_lines: int = 50,
        close_timeout: float = 2.0,
        term_timeout: float = 2.0,
        pipe_size: int | None = PIPE_SIZE,
    ) -> None:
        if not command:
            raise TransportError("no command given to spawn")
        super().__init__()
        self.command = [str(c) for c in command]
        self.env = dict(env or {})
        self.inherit_env = inherit_env
        self.pipe_size = pipe_size
        self.cwd = cwd
        self.stderr_mode = stderr
        self._tail: collections.deque[str] = collections.deque(maxlen=stderr_lines)
        self._partial = b""
        self.close_timeout = close_timeout
        self.term_timeout = term_timeout
        self._sink: TransportSink | None = None
        self._transport: asyncio.SubprocessTransport | None = None
        self._proto: _ChildProtocol | None = None
        self._stdin: asyncio.WriteTransport | None = None
        self._closed = False
        self._reading_paused = False
        #: the start of the child's stdout until its first line is complete (then None), and
        #: that first line: what a start-up failure report quotes
        self._head: bytearray | None = bytearray()
        self.first_line: bytes | None = None
        #: why the child could not be spawned (the OSError), if it could not
        self.spawn_error: OSError | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self, sink: TransportSink) -> None:
        self._sink = sink
        loop = asyncio.get_running_loop()
        env = {**os.environ, **self.env} if self.inherit_env else dict(self.env)
        try:
            transport, proto = await loop.subprocess_exec(
                lambda: _ChildProtocol(self),
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=self.cwd,
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            self.spawn_error = exc if isinstance(exc, OSError) else OSError(str(exc))
            raise TransportError(self.start_failure(None)) from None
        self._transport = transport
        self._proto = proto
        self._stdin = transport.get_pipe_transport(0)  # type: ignore[assignment]
        for fd in (0, 1):
            pipe = transport.get_pipe_transport(fd)
            pipe_file = pipe.get_extra_info("pipe") if pipe is not None else None
            if self.pipe_size and pipe_file is not None and not pipe_file.closed:  # (it may have exited)
                enlarge_pipe(pipe_file.fileno(), self.pipe_size)

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)

    @property
    def pid(self) -> int | None:
        return self._transport.get_pid() if self._transport is not None else None

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode() if self._transport is not None else None

    @property
    def stderr_tail(self) -> list[str]:
        """The child's last stderr lines (for error reports)."""
        lines = list(self._tail)
        if self._partial:
            lines.append(self._partial.decode("utf-8", "replace"))
        return lines

    def _take_head(self, data: bytes) -> None:
        head = self._head
        assert head is not None
        head += data
        end = head.find(b"\n")
        if end >= 0 or len(head) >= _HEAD_LIMIT:
            self.first_line = bytes(head[:end if end >= 0 else _HEAD_LIMIT]).rstrip(b"\r")
            self._head = None

    def echoed_initialize(self) -> bool:
        """Whether the child's first line is an ``initialize`` request: ours, sent back (``cat``),
        since an agent never asks its client to initialize."""
        line = self.first_line if self.first_line is not None else bytes(self._head or b"")
        if b"initialize" not in line:
            return False
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        return isinstance(msg, dict) and msg.get("method") == "initialize" and "id" in msg

    async def exit_code(self, timeout: float = 2.0) -> int | None:
        """The child's exit code once its output has ended (the pipes close a moment before
        the exit status is known: wait up to ``timeout`` s for it); None while it runs."""
        if self._proto is None:
            return None
        if self._proto.stdout_eof.done() or self._proto.exited.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._proto.exited), timeout)
            except TimeoutError:
                pass
        return self.returncode

    def start_failure(self, reason: BaseException | None, returncode: int | None = None) -> str:
        """Why this agent did not get as far as answering ``initialize``, worded as everywhere an
        agent is started (see :func:`describe_start_failure`); ``returncode``: its exit code when
        it exited of its own accord (not the one of our stopping it)."""
        line = self.first_line if self.first_line is not None else (bytes(self._head) if self._head else None)
        return describe_start_failure(self.command_line, reason, program=self.command[0], spawn_error=self.spawn_error,
                                      returncode=returncode, stderr=self.stderr_tail,
                                      first_line=line, echoed=self.echoed_initialize())

    def _on_stderr(self, data: bytes) -> None:
        mode = self.stderr_mode
        if mode == "inherit":
            try:
                sys.stderr.buffer.write(data)
                sys.stderr.flush()
            except (OSError, ValueError, AttributeError):
                pass
        elif callable(mode):
            mode(data)
        buf = self._partial + data
        *lines, self._partial = buf.split(b"\n")
        for line in lines:
            self._tail.append(line.decode("utf-8", "replace"))
        if len(self._partial) > 4096:
            self._tail.append(self._partial[:4096].decode("utf-8", "replace"))
            self._partial = b""

    # -- I/O -------------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        stdin = self._stdin
        if self._closed or stdin is None or stdin.is_closing():
            raise ConnectionClosed(f"agent {self.command_line!r} is not running")
        stdin.write(data)

    async def drain(self) -> None:
        if self._proto is not None:
            await self._proto.wait_writable()

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        if self._stdin is not None:
            self._stdin.set_write_buffer_limits(high, low)

    def write_buffer_size(self) -> int:
        held = self._stdin.get_write_buffer_size() if self._stdin is not None else 0
        return held + self.batched_size()

    @property
    def writing_paused(self) -> bool:
        return self._proto is not None and self._proto.writing_paused

    def abort_writing(self) -> None:
        self.discard_batch()
        if self._stdin is not None:
            self._stdin.abort()

    def pause_reading(self) -> None:
        self._reading_paused = True
        if self._transport is not None:
            out = self._transport.get_pipe_transport(1)
            if out is not None:
                out.pause_reading()  # type: ignore[attr-defined]

    def resume_reading(self) -> None:
        self._reading_paused = False
        if self._transport is not None:
            out = self._transport.get_pipe_transport(1)
            if out is not None:
                out.resume_reading()  # type: ignore[attr-defined]

    async def wait(self) -> int | None:
        """Wait for the child to exit; returns its exit code."""
        if self._proto is not None:
            await asyncio.shield(self._proto.exited)
        return self.returncode

    async def aclose(self) -> None:
        """close stdin → wait → SIGTERM → wait → SIGKILL; bounded by the two timeouts."""
        if self._closed:
            return
        self.flush()
        self._closed = True
        transport, proto = self._transport, self._proto
        if transport is None or proto is None:
            return
        try:
            if self._stdin is not None and not self._stdin.is_closing():
                self._stdin.close()
            for sig, timeout in ((None, self.close_timeout), (signal.SIGTERM, self.term_timeout),
                                 (signal.SIGKILL, 5.0)):
                if sig is not None and transport.get_returncode() is None:
                    self._signal(sig)
                try:
                    await asyncio.wait_for(asyncio.shield(proto.exited), timeout)
                    break
                except TimeoutError:
                    continue
            # the child is gone: let the last bytes it wrote reach the sink before closing (not
            # while reading is paused: they could not arrive, e.g. from a peer given up on)
            if not self._reading_paused:
                try:
                    await asyncio.wait_for(asyncio.shield(proto.stdout_eof), 1.0)
                except TimeoutError:
                    pass
        finally:
            transport.close()
            # let the pipes' connection_lost callbacks run, so no fd outlives us
            await asyncio.sleep(0)

    def _signal(self, sig: int) -> None:
        pid = self.pid
        if pid is None:
            return
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    @property
    def description(self) -> str:
        return f"subprocess {self.command_line}"


_HEAD_LIMIT = 200


def describe_start_failure(command_line: str, reason: BaseException | str | None, *, program: str = "",
                           spawn_error: OSError | None = None, returncode: int | None = None,
                           stderr: Sequence[str] = (), first_line: bytes | None = None,
                           echoed: bool = False) -> str:
    """The one wording of an agent that did not start (docs/cli.md shows each case): its command
    line and what happened — not found (or not runnable), exited with code N (or killed by a
    signal), printed output that is not JSON-RPC, echoed our ``initialize`` request back —
    then, when it wrote to stderr, its last stderr lines, on the following lines."""
    who = f"the agent {command_line!r}"
    if spawn_error is not None:
        name = str(spawn_error.filename or "")
        if isinstance(spawn_error, FileNotFoundError) and name == program:
            return f"cannot start {who}: {program!r} was not found (is it installed and on PATH?)"
        if isinstance(spawn_error, PermissionError) and name == program:
            return f"cannot start {who}: permission denied (is {program!r} executable?)"
        return f"cannot start {who}: {spawn_error.strerror or spawn_error}"
    exited = _exit_words(returncode)
    if echoed:
        msg = (f"{who} does not speak ACP: it sent acplink's initialize request back unchanged "
               "(an echo, not an answer; is the command right?)")
    elif isinstance(reason, PeerOutputNotJson):
        msg = f"{who} does not speak ACP: {reason}"
    elif first_line is not None and not _json_rpc(first_line):
        shown = first_line[:80].decode("utf-8", "replace")
        msg = f"{who} does not speak ACP: its output is not JSON-RPC (the first line: {shown!r})"
        if exited is not None:
            msg += f"; it {exited}"
    elif exited is not None:
        msg = f"{who} {exited} before answering initialize"
    elif reason is None or isinstance(reason, ConnectionClosed):
        msg = f"{who} closed its output before answering initialize"
    else:
        msg = f"{who} failed before answering initialize: {reason}"
    return msg + stderr_report(stderr)


def stderr_report(lines: Sequence[str], n: int = 10) -> str:
    """The last ``n`` non-blank stderr lines of an agent, for an error report: on lines of their
    own after ``last stderr lines:`` (empty when it wrote none)."""
    tail = [line for line in lines if line.strip()][-n:]
    return "\nlast stderr lines:\n" + "\n".join(f"  | {line}" for line in tail) if tail else ""


def _exit_words(code: int | None) -> str | None:
    if code is None:
        return None
    return f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"


def _json_rpc(line: bytes) -> bool:
    """Whether a line could be a JSON-RPC message (a JSON object or batch)."""
    try:
        msg = json.loads(line)
    except ValueError:
        return False
    return isinstance(msg, (dict, list))
