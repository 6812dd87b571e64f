"""Helpers for the robustness tests: spawn peers over real pipes, speak raw JSON-RPC."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson

PEERS = Path(__file__).parent / "peers"
RB_AGENT = [sys.executable, str(PEERS / "rb_agent.py")]
GUARD = 10.0  # hang guard for awaits that must finish; never a timing assertion


async def guard(aw: Any, timeout: float = GUARD) -> Any:
    return await asyncio.wait_for(aw, timeout)


def text(t: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": t}]


class RawClient:
    """A raw JSON-RPC client of a spawned agent: exact messages, stderr captured."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._next = 0

    @classmethod
    async def spawn(cls, *args: str, command: list[str] | None = None) -> RawClient:
        proc = await asyncio.create_subprocess_exec(
            *(command or RB_AGENT), *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, limit=1 << 24)
        return cls(proc)

    async def send(self, msg: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(msg) + b"\n")
        await self.proc.stdin.drain()

    async def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await guard(self.proc.stdout.readline())
        assert line, "the agent closed its stdout"
        return orjson.loads(line)  # type: ignore[no-any-return]

    async def send_request(self, method: str, params: Any) -> int:
        self._next += 1
        await self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return self._next

    async def request(self, method: str, params: Any) -> dict[str, Any]:
        rid = await self.send_request(method, params)
        while True:
            msg = await self.recv()
            if msg.get("id") == rid and "method" not in msg:
                return msg

    async def wait_for(self, method: str) -> dict[str, Any]:
        """Read until a message with this method arrives (skipping others)."""
        while True:
            msg = await self.recv()
            if msg.get("method") == method:
                return msg

    async def initialize(self, **caps: Any) -> None:
        reply = await self.request("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        assert reply["result"]["protocolVersion"] == 1

    async def finish(self) -> tuple[int, str]:
        """Close what is still open, wait for the exit; (returncode, stderr)."""
        proc = self.proc
        assert proc.stdin is not None and proc.stderr is not None
        if not proc.stdin.is_closing():
            proc.stdin.close()
        err = await guard(proc.stderr.read())
        if proc.stdout is not None:
            await guard(proc.stdout.read())
        rc = await guard(proc.wait())
        return rc, err.decode(errors="replace")

    async def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
        await self.finish()
