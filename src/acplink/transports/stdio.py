"""This process's stdin/stdout as a transport (how an agent is served to an editor)."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from typing import Any

from ..errors import ConnectionClosed
from ._pipes import PIPE_SIZE, ReadProtocol, WriteProtocol, enlarge_pipe
from .base import TransportSink
from .stream import StreamTransport

__all__ = ["StdioTransport"]


def _is_regular_file(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _reads_like_a_file(fd: int) -> bool:
    """A regular file, or ``/dev/null`` (which epoll refuses): read with plain reads, not
    through the event loop's selector."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode):
        return True
    if not stat.S_ISCHR(st.st_mode):
        return False
    try:
        null = os.stat(os.devnull)
    except OSError:
        return False
    return st.st_rdev == null.st_rdev


class StdioTransport(StreamTransport):
    """Reads NDJSON from stdin and writes it to stdout.

    ``protect_stdout`` (default on) moves the real stdout aside for the protocol and points
    file descriptor 1 (and ``sys.stdout``) at stderr, so a stray ``print`` in user code, or
    in a child process, cannot corrupt the protocol stream. ``pipe_size``: the kernel buffer
    asked for when stdin/stdout are pipes (see :class:`SubprocessTransport`; ``None`` leaves
    them as they are).
    """

    def __init__(self, *, stdin_fd: int | None = None, stdout_fd: int | None = None,
                 protect_stdout: bool = True, pipe_size: int | None = PIPE_SIZE) -> None:
        super().__init__()
        self.pipe_size = pipe_size
        self._stdin_fd = stdin_fd
        self._stdout_fd = stdout_fd
        self._protect = protect_stdout and stdout_fd is None
        self._reader: asyncio.ReadTransport | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._wproto: WriteProtocol | None = None
        self._closed = False
        self._saved_stdout: Any = None
        self._file_out: int | None = None
        self._file_in: asyncio.Task[None] | None = None
        self._resumed = asyncio.Event()
        self._resumed.set()

    async def start(self, sink: TransportSink) -> None:
        self._sink = sink
        loop = asyncio.get_running_loop()
        in_fd = os.dup(self._stdin_fd if self._stdin_fd is not None else sys.stdin.fileno())
        if self._protect:
            sys.stdout.flush()
            out_fd = os.dup(1)
            os.dup2(2, 1)
            self._saved_stdout = sys.stdout
            sys.stdout = sys.stderr
        else:
            out_fd = os.dup(self._stdout_fd if self._stdout_fd is not None else sys.stdout.fileno())
        if self.pipe_size:
            enlarge_pipe(in_fd, self.pipe_size)
            enlarge_pipe(out_fd, self.pipe_size)
        if _is_regular_file(out_fd):  # `agent > out.jsonl`: plain blocking writes never stall
            self._file_out = out_fd
        else:
            self._wproto = WriteProtocol()
            wproto = self._wproto
            self._writer, _ = await loop.connect_write_pipe(lambda: wproto, os.fdopen(out_fd, "wb", 0))
        if _reads_like_a_file(in_fd):  # `agent < trace.jsonl`, `< /dev/null`: read in chunks
            self._file_in = asyncio.get_running_loop().create_task(self._read_file(in_fd, sink))
        else:
            self._reader, _ = await loop.connect_read_pipe(lambda: ReadProtocol(sink), os.fdopen(in_fd, "rb", 0))

    async def _read_file(self, fd: int, sink: TransportSink) -> None:
        try:
            while True:
                await self._resumed.wait()
                data = os.read(fd, 256 * 1024)
                if not data:
                    break
                sink.data_received(data)
                await asyncio.sleep(0)
            sink.eof_received(None)
        finally:
            os.close(fd)

    def write(self, data: bytes) -> None:
        if self._file_out is not None and not self._closed:
            view = memoryview(data)
            while view:
                view = view[os.write(self._file_out, view):]
            return
        if self._closed or self._writer is None or self._writer.is_closing():
            raise ConnectionClosed("stdout is closed")
        self._writer.write(data)

    async def drain(self) -> None:
        if self._wproto is not None:
            await self._wproto.wait_writable()

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        if self._writer is not None:
            self._writer.set_write_buffer_limits(high, low)

    def write_buffer_size(self) -> int:
        held = self._writer.get_write_buffer_size() if self._writer is not None else 0
        return held + self.batched_size()

    @property
    def writing_paused(self) -> bool:
        return self._wproto is not None and self._wproto.writing_paused

    def abort_writing(self) -> None:
        self.discard_batch()
        if self._writer is not None:
            self._writer.abort()

    def pause_reading(self) -> None:
        self._resumed.clear()
        if self._reader is not None:
            self._reader.pause_reading()

    def resume_reading(self) -> None:
        self._resumed.set()
        if self._reader is not None:
            self._reader.resume_reading()

    async def aclose(self) -> None:
        if self._closed:
            return
        self.flush()
        self._closed = True
        if self._file_in is not None:
            self._file_in.cancel()
            await asyncio.gather(self._file_in, return_exceptions=True)
        if self._file_out is not None:
            os.close(self._file_out)
            self._file_out = None
        if self._reader is not None:
            self._reader.close()
        if self._writer is not None:
            if not self._writer.is_closing():
                try:
                    await asyncio.wait_for(self.drain(), 2.0)
                except (TimeoutError, ConnectionError, OSError, ConnectionClosed):
                    pass
            self._writer.close()
            if self._wproto is not None:
                try:
                    await asyncio.wait_for(asyncio.shield(self._wproto.closed), 1.0)
                except TimeoutError:
                    self._writer.abort()
        if self._saved_stdout is not None:
            sys.stdout = self._saved_stdout

    @property
    def description(self) -> str:
        return "stdio"
