#!/usr/bin/env python3
"""The floor's benchmark agent: the wire contract of benchmarks/README.md on plain asyncio pipes
and orjson, newline-delimited JSON-RPC, no validation, no framework.

    python benchmarks/peers/floor/scenario_agent.py

Answers ``initialize`` with ``_meta.maxrss_kb``, ``session/new``, and runs the scenario named by
a prompt ``"SCENARIO N"`` (the last two words: flood, rtt, concurrent, big, bigup, startup),
returning ``end_turn`` with ``_meta {total_s, maxrss_kb, rss_kb, ...}``. It does the same work
as the other agents (every flood notification awaited, the rtt requests one after the other, the
concurrent ones gathered) with nothing around it: the floor an ACP library is measured against.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from _wire import Peer, maxrss_kb, percentile_us

BIG_PATH = "/bench/big.txt"
SMALL_PATH = "/bench/small.txt"
LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\n"
PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def rss_kb() -> int | None:
    """Current RSS in KiB (Linux)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE_KB
    except (OSError, ValueError, IndexError):
        return None


class Agent(Peer):
    def __init__(self) -> None:
        super().__init__()
        self.sessions = 0
        self.tasks: set[asyncio.Task[None]] = set()

    def on_message(self, msg: dict[str, Any]) -> None:
        method = msg["method"]
        rid = msg.get("id")
        if method == "session/prompt":
            task = asyncio.get_running_loop().create_task(self.prompt(rid, msg["params"]))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        elif method == "initialize":
            self.respond(rid, {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": [],
                               "agentInfo": {"name": "floor-scenario-agent", "version": "0.1.0"},
                               "_meta": {"maxrss_kb": maxrss_kb()}})
        elif method == "session/new":
            self.sessions += 1
            self.respond(rid, {"sessionId": f"floor-{self.sessions}"})
        elif rid is not None:
            self.respond_error(rid, -32601, f"Method not found: {method}")

    async def prompt(self, rid: Any, params: dict[str, Any]) -> None:
        text = next((b.get("text", "") for b in params["prompt"] if b.get("type") == "text"), "")
        parts = text.split()
        if len(parts) < 2 or not parts[-1].isdigit():
            self.respond_error(rid, -32602, f"Invalid params: expected a prompt 'SCENARIO N', got {text[:80]!r}")
            return
        start = time.perf_counter()
        try:
            meta = await self.scenario(params["sessionId"], parts[-2].lower(), int(parts[-1]))
        except Exception as exc:  # the turn fails with the reason, the agent lives on
            self.respond_error(rid, -32603, f"Internal error: {type(exc).__name__}: {exc}")
            return
        meta["total_s"] = round(time.perf_counter() - start, 6)
        meta["maxrss_kb"] = maxrss_kb()
        meta["rss_kb"] = rss_kb()
        self.respond(rid, {"stopReason": "end_turn", "_meta": meta})

    async def scenario(self, sid: str, scenario: str, n: int) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        if scenario == "flood":
            notify = self.notify
            for i in range(n):
                await notify("session/update", {"sessionId": sid, "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": f"flood chunk {i:08d} ".ljust(40, ".")}}})
            meta["count"] = n
        elif scenario in ("rtt", "concurrent"):
            params = {"sessionId": sid, "path": SMALL_PATH}
            request = self.request
            clock = time.perf_counter_ns

            async def timed_read() -> int:
                t0 = clock()
                await request("fs/read_text_file", params)
                return clock() - t0

            if scenario == "rtt":
                samples = [await timed_read() for _ in range(n)]
            else:
                samples = list(await asyncio.gather(*(timed_read() for _ in range(n))))
            meta.update(p50_us=percentile_us(samples, 0.50), p99_us=percentile_us(samples, 0.99))
        elif scenario == "big":
            result = await self.request("fs/read_text_file", {"sessionId": sid, "path": BIG_PATH})
            content = result["content"]
            meta.update(ok=len(content) == n, received=len(content))
        elif scenario == "bigup":
            await self.notify("session/update", {"sessionId": sid, "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": (LINE * (n // len(LINE) + 1))[:n]}}})
        elif scenario != "startup":
            raise ValueError(f"unknown scenario {scenario!r}")
        return meta


async def serve() -> None:
    loop = asyncio.get_running_loop()
    agent = Agent()
    agent.out, _ = await loop.connect_write_pipe(lambda: agent, sys.stdout)  # before any request can come
    await loop.connect_read_pipe(lambda: agent, sys.stdin)
    await agent.closed  # stdin reached its end: the client is gone
    for task in list(agent.tasks):
        task.cancel()
    if agent.tasks:
        await asyncio.wait(agent.tasks)


def main() -> None:
    if sys.argv[1:]:
        sys.exit("usage: scenario_agent.py (no options)")
    asyncio.run(serve())


if __name__ == "__main__":
    main()
