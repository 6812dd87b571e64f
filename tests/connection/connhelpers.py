"""Helpers for the connection tests: spawn the peer scripts, raw JSON-RPC over real pipes."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson

from acplink.connection import ClientSideConnection, PeerLimits, Router
from acplink.transports import SubprocessTransport

PEERS = Path(__file__).parent / "peers"
AGENT = [sys.executable, str(PEERS / "agent.py")]
MISBEHAVING = [sys.executable, str(PEERS / "misbehaving.py")]
GUARD = 10.0  # hang guard for awaits that must finish; never a timing assertion


async def guard(aw: Any, timeout: float = GUARD) -> Any:
    return await asyncio.wait_for(aw, timeout)


class RawPeer:
    """A raw JSON-RPC client over a real pipe to a spawned process (sends exact bytes)."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._next = 1000

    @classmethod
    async def spawn(cls, *args: str, command: list[str] | None = None) -> RawPeer:
        proc = await asyncio.create_subprocess_exec(
            *(command or AGENT), *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            limit=1 << 27)
        return cls(proc)

    async def send(self, msg: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(msg if isinstance(msg, bytes) else orjson.dumps(msg) + b"\n")
        await self.proc.stdin.drain()

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await guard(self.proc.stdout.readline())
        assert line, "the peer closed its stdout"
        return orjson.loads(line)  # type: ignore[no-any-return]

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request and return its response (the whole message)."""
        self._next += 1
        rid = self._next
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        await self.send(msg)
        reply = await self.recv()
        assert reply.get("id") == rid, reply
        return reply

    async def initialize(self) -> None:
        reply = await self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert reply["result"]["protocolVersion"] == 1

    async def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        await guard(self.proc.stdout.read())
        return await guard(self.proc.wait())  # type: ignore[no-any-return]

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
        await self.close()


@asynccontextmanager
async def connect(command: list[str], router: Router | None = None, *, max_size: int | None = None,
                  stderr: Any = "inherit", **transport_kw: Any) -> AsyncIterator[ClientSideConnection]:
    """A ClientSideConnection to a spawned process; closed (child reaped) on exit."""
    transport = SubprocessTransport(command, stderr=stderr, **transport_kw)
    limits = PeerLimits(max_message_size=max_size) if max_size else None
    conn = ClientSideConnection(transport, router or Router(), limits=limits)
    await conn.start()
    try:
        yield conn
    finally:
        await guard(conn.aclose(), 30)


async def initialize(conn: ClientSideConnection, **caps: Any) -> None:
    result = await guard(conn.initialize(protocol_version=1, client_capabilities=caps))
    assert result.protocol_version == 1
