"""Remote ACP servers run as separate programs for the tests: each prints ``LISTENING <port>``
once it accepts connections and stops at the end of its stdin (or is killed)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO

from peerenv import HERE, JS_DIR, NODE, PEERS_PYTHON

TS_SERVER = [str(NODE), str(JS_DIR / "remote_server_ts.mjs")]
PY_SERVER = [str(PEERS_PYTHON), str(HERE / "peers" / "py_remote_server.py")]


class PeerServer:
    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._log: IO[bytes] | None = None

    def url(self, scheme: str, path: str = "/acp") -> str:
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def start(self) -> PeerServer:
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                     start_new_session=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if not line.startswith("LISTENING "):
            self.stop()
            raise RuntimeError(f"server {self.argv} did not start: {line!r} {self.log()!r}")
        self.port = int(line.split()[1])
        return self

    def log(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL, as a crash would (its process group: nothing it started survives)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(5)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        for f in (proc.stdin, proc.stdout):
            if f is not None:
                f.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        self.proc = None


@contextmanager
def running(argv: Sequence[str]) -> Iterator[PeerServer]:
    server = PeerServer(argv).start()
    try:
        yield server
    finally:
        server.stop()


class CuttingProxy:
    """A TCP proxy in front of a server whose connections the test can cut (as a network
    failure would), while the server keeps running."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers |= {writer, up_writer}
        pumps = [asyncio.ensure_future(self._pump(reader, up_writer)),
                 asyncio.ensure_future(self._pump(up_reader, writer))]
        self._tasks.update(pumps)
        await asyncio.gather(*pumps, return_exceptions=True)
        self._tasks.difference_update(pumps)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.transport.abort()
            self._writers.discard(writer)

    def cut(self) -> None:
        """Reset every connection open now (new ones are still accepted)."""
        for writer in list(self._writers):
            writer.transport.abort()

    async def aclose(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
