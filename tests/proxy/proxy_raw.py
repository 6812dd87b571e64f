"""A raw JSON-RPC client over a real pipe, for the proxy tests: what it sends goes out as given;
what the chain sends it is recorded in arrival order."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from acplink.connection.peer import Peer
from acplink.transports.subprocess import SubprocessTransport

HERE = Path(__file__).resolve().parent
PY = sys.executable
PROBE = [PY, str(HERE / "components" / "probe_agent.py")]
DEMO = [PY, "-m", "acplink.demo"]


def bad_proxy(mode: str) -> str:
    return f"{PY} {HERE / 'components' / 'bad_proxy.py'} {mode}"


def conduct(*proxies: str, agent: list[str] | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    cmd = [PY, "-m", "acplink", "conduct", *extra]
    for p in proxies:
        cmd += ["--proxy", p]
    return cmd + (["--", *agent] if agent is not None else [])


class RawClient:
    """Talks to a command (a conductor) over its stdin/stdout."""

    def __init__(self, command: list[str], answers: dict[str, Any] | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.transport = SubprocessTransport(command, stderr="capture", env=env)
        self.notes: list[tuple[str, Any]] = []
        self.asked: list[tuple[str, Any]] = []
        self.answers = answers or {}
        self.peer = Peer(self.transport, self, name="raw-client")

    async def handle_request(self, method: str, params: Any) -> bytes:
        self.asked.append((method, params))
        return orjson.dumps(self.answers.get(method))

    async def handle_notification(self, method: str, params: Any, typed: bool = False) -> None:
        self.notes.append((method, params))

    async def __aenter__(self) -> RawClient:
        await self.peer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.peer.aclose()

    async def call(self, method: str, params: Any = None, timeout: float | None = 30) -> Any:
        return await self.peer.request(method, None if params is None else orjson.dumps(params), timeout=timeout)

    async def notify(self, method: str, params: Any = None) -> None:
        await self.peer.notify(method, None if params is None else orjson.dumps(params))

    async def initialize(self, version: int = 1) -> Any:
        return await self.call("initialize", {"protocolVersion": version, "clientCapabilities": {}})


def processes_with(marker: str) -> list[int]:
    """The pids of the live processes whose environment holds ``marker`` (Linux)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue
        if marker.encode() in environ and "State:\tZ" not in status:
            pids.append(int(entry.name))
    return pids
