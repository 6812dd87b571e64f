"""Running the server on a real socket (uvicorn on 127.0.0.1, port 0) and talking to it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import orjson
import uvicorn

from acplink.server import AcpServer

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, "-I", str(HERE / "line_agent.py")]
SILENT_AGENT = [*AGENT, "--silent"]
#: a hang guard for waits, never an assertion about speed
BOUND = 10.0

INIT: dict[str, Any] = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                        "params": {"protocolVersion": 1, "clientCapabilities": {}}}


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:  # the test runner keeps its signals
        yield


@contextlib.asynccontextmanager
async def serving(app: AcpServer, **config: Any) -> AsyncIterator[str]:
    """Serve ``app`` under uvicorn on a free loopback port; yields its http:// URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    conf = uvicorn.Config(app, log_config=None, access_log=False, lifespan="off", log_level="warning",
                          timeout_graceful_shutdown=1, **config)
    server = _Server(conf)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(BOUND):
            while not server.started:
                if task.done():
                    task.result()
                await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}{app.path}"
    finally:
        await app.aclose()
        server.should_exit = True
        await task
        sock.close()


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


async def wait_gone(pid: int, bound: float = BOUND) -> bool:
    """Whether process ``pid`` is gone before ``bound`` seconds (a hang guard)."""
    return await _wait_until_not(lambda: pid_alive(pid), bound, 0.02)


async def _wait_until_not(busy: Callable[[], Any], bound: float, poll: float) -> bool:
    """Whether ``busy()`` turns false before ``bound`` seconds (looked at every ``poll`` s)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + bound
    while busy():
        if loop.time() > end:
            return False
        await asyncio.sleep(poll)
    return True


def msg(rid: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def prompt(rid: Any, sid: str, text: str) -> dict[str, Any]:
    return msg(rid, "session/prompt", sessionId=sid, prompt=[{"type": "text", "text": text}])


class Remote:
    """A hand-made streamable HTTP client (to send exactly what a test needs)."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client = client
        self.url = url
        self.cid = ""
        self.pid = 0

    async def initialize(self, **headers: str) -> httpx.Response:
        r = await self.client.post(self.url, json=INIT, headers=headers)
        if r.status_code == 200:
            self.cid = r.headers["acp-connection-id"]
            self.pid = r.json()["result"]["_meta"]["pid"]
        return r

    def headers(self, session: str | None = None) -> dict[str, str]:
        h = {"acp-connection-id": self.cid}
        if session is not None:
            h["acp-session-id"] = session
        return h

    async def post(self, message: Any, session: str | None = None, **headers: str) -> httpx.Response:
        return await self.client.post(self.url, content=orjson.dumps(message),
                                      headers={"content-type": "application/json", **self.headers(session),
                                               **headers})

    @contextlib.asynccontextmanager
    async def stream(self, session: str | None = None) -> AsyncIterator[Events]:
        headers = {**self.headers(session), "accept": "text/event-stream"}
        async with self.client.stream("GET", self.url, headers=headers) as r:
            yield Events(r)


class Events:
    """The events of one SSE response, parsed."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.lines = response.aiter_lines()
        self.comments = 0

    async def next(self) -> Any:
        """The next message; None when the stream ended."""
        async with asyncio.timeout(BOUND):
            async for line in self.lines:
                if line.startswith("data: "):
                    return orjson.loads(line[6:])
                if line.startswith(":"):
                    self.comments += 1
        return None

    async def until(self, rid: Any) -> list[Any]:
        """Messages up to and including the response to ``rid``."""
        out = []
        while True:
            m = await self.next()
            assert m is not None, f"the stream ended before the answer to {rid!r}: {out}"
            out.append(m)
            if m.get("id") == rid and "method" not in m:
                return out


def texts(messages: list[Any]) -> list[str]:
    return [m["params"]["update"]["content"]["text"] for m in messages if m.get("method") == "session/update"
            and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"]


def env_without_token() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "ACPLINK_TOKEN"}


ACPLINK = [sys.executable, "-m", "acplink"]
#: the demo agent, served by ``acplink serve`` to the official SDKs' clients
DEMO = [*ACPLINK, "demo-agent"]


async def peer_events(*argv: str) -> list[dict[str, Any]]:
    """Run a peer program (an official SDK's remote client, tests/interop/) to its end: the JSON
    events it prints one a line, the last of which must be ``{"event": "closed"}``."""
    proc = await asyncio.create_subprocess_exec(*argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        async with asyncio.timeout(60):  # a hang guard
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    events = [orjson.loads(line) for line in out.decode().splitlines()]
    assert events and events[-1] == {"event": "closed"}, err.decode()
    return events


class Served:
    def __init__(self, proc: asyncio.subprocess.Process, urls: dict[str, str]) -> None:
        self.proc = proc
        self.urls = urls
        self.stderr = bytearray()  # read as it comes (a full pipe would stall the server)

    @property
    def log(self) -> str:
        """Its stderr so far."""
        return self.stderr.decode()

    async def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(65536):
            self.stderr += chunk


@contextlib.asynccontextmanager
async def serve(*args: str, agent: Sequence[str] = AGENT, env: dict[str, str] | None = None) -> AsyncIterator[Served]:
    """Run ``acplink serve --port 0 ARGS -- AGENT`` until the block ends (then kill it if it
    is still running); its URLs are read from its stdout, its stderr kept in ``.log``."""
    proc = await asyncio.create_subprocess_exec(
        *ACPLINK, "serve", "--port", "0", *args, "--", *agent, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=env if env is not None else env_without_token())
    assert proc.stdout is not None
    urls: dict[str, str] = {}
    served = Served(proc, urls)
    reader = asyncio.get_running_loop().create_task(served._read_stderr())
    try:
        async with asyncio.timeout(30):  # a hang guard: the first start imports a lot
            while len(urls) < (1 if ("--ws" in args or "--http" in args) else 2):
                line = (await proc.stdout.readline()).decode().strip()
                if not line:
                    await proc.wait()
                    await reader
                    raise AssertionError(f"acplink serve did not start: {served.log}")
                urls[line.split(":", 1)[0]] = line
        yield served
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        await reader
        await proc.communicate()

def children_of(pid: int) -> set[int]:
    """The live (not zombie) processes whose parent is ``pid``."""
    out = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != b"Z":
                out.add(int(name))
    return out


async def wait_no_children(pid: int, bound: float) -> bool:
    """Whether ``pid`` has no child process left before ``bound`` seconds."""
    return await _wait_until_not(lambda: children_of(pid), bound, 0.05)
