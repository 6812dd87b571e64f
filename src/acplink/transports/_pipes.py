"""asyncio protocol glue shared by the pipe-based transports."""

from __future__ import annotations

import asyncio
import os
import stat

from .base import FlowControl, TransportSink
from .stream import deliver

#: the kernel buffer asked for on the pipes we read and write (Linux; 64 KiB by default)
PIPE_SIZE = 256 * 1024

try:
    from fcntl import F_GETPIPE_SZ, F_SETPIPE_SZ, fcntl
except ImportError:  # not Linux
    fcntl = None  # type: ignore[assignment]


def enlarge_pipe(fd: int, size: int = PIPE_SIZE) -> None:
    """Ask the kernel for a ``size``-byte buffer on pipe ``fd`` (best effort, Linux only).

    With the default 64 KiB a stream of small messages makes the writer stop and wake every
    64 KiB and the reader read in small pieces; a bigger buffer lets a batch of writes go in
    one system call. A refusal (over the user's pipe quota, not a pipe) changes nothing.
    """
    if fcntl is None:
        return
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and fcntl(fd, F_GETPIPE_SZ) < size:
            fcntl(fd, F_SETPIPE_SZ, size)
    except OSError:
        pass


class ReadProtocol(asyncio.Protocol):
    """Forwards a read pipe's bytes and EOF to a sink."""

    def __init__(self, sink: TransportSink) -> None:
        self.sink = sink
        self._ended = False

    def data_received(self, data: bytes) -> None:
        deliver(self.sink, data)

    def _end(self, exc: BaseException | None) -> None:
        if not self._ended:  # asyncio reports both eof_received and connection_lost
            self._ended = True
            self.sink.eof_received(exc)

    def eof_received(self) -> bool:
        self._end(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self._end(exc)


class WriteProtocol(FlowControl, asyncio.BaseProtocol):
    """Flow control for a write pipe; notices when the reader went away."""

    def __init__(self) -> None:
        FlowControl.__init__(self)
        self.closed = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        pass

    def connection_lost(self, exc: Exception | None) -> None:
        self.flow_lost(exc)
        if not self.closed.done():
            self.closed.set_result(None)
