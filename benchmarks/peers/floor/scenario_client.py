#!/usr/bin/env python3
"""The floor's benchmark client: the wire contract of benchmarks/README.md on plain asyncio
subprocess pipes and orjson, newline-delimited JSON-RPC, no validation, no framework.

    python benchmarks/peers/floor/scenario_client.py SCENARIO [N] -- AGENT_CMD [ARGS...]

Spawns the agent (stdin/stdout piped, stderr passed through), sends ``initialize``,
``session/new`` and ``session/prompt`` ``"<scenario> <N>"`` (for ``startup``: spawn + initialize
N times), answers ``fs/read_text_file`` and counts ``session/update`` notifications, all in the
pipe's data callback. Prints exactly one JSON line (``ok``, ``error`` on failure, ``wall_s``,
``client_maxrss_kb``, ``agent_maxrss_kb`` and the scenario's figures); exit status 0 iff ok.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from typing import Any

import orjson
from _wire import Peer, RpcError, maxrss_kb

DEFAULT_N = {"flood": 20000, "rtt": 5000, "concurrent": 5000, "big": 20000000, "bigup": 20000000, "startup": 5}
BIG_PATH = "/bench/big.txt"
LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\n"
SMALL_CONTENT = "small fixed file content\n"
TIMEOUT_S = 600.0
USAGE = "usage: scenario_client.py SCENARIO [N] -- AGENT_CMD [ARGS...]"


class Client(Peer, asyncio.SubprocessProtocol):
    """The agent's pipes: its stdout feeds the peer, its stdin is the write transport."""

    def __init__(self, big_n: int) -> None:
        super().__init__()
        self.big = (LINE * (big_n // len(LINE) + 1))[:big_n] if big_n else ""
        self.updates = 0
        self.chars = 0
        self.reads = 0
        self.exited: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: Any) -> None:
        self.proc: asyncio.SubprocessTransport = transport
        self.out = transport.get_pipe_transport(0)

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.feed(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:  # the agent's stdout closed: it has exited (or closed it), nothing more comes
            self.lost(exc or ConnectionError(f"the agent closed its stdout (exit code {self.proc.get_returncode()})"))

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def on_message(self, msg: dict[str, Any]) -> None:
        method = msg["method"]
        if method == "session/update":
            self.updates += 1
            text = msg["params"]["update"].get("content", {}).get("text")
            if type(text) is str:
                self.chars += len(text)
        elif method == "fs/read_text_file":
            self.reads += 1
            self.respond(msg["id"], {"content": self.big if msg["params"]["path"] == BIG_PATH else SMALL_CONTENT})
        elif "id" in msg:
            self.respond_error(msg["id"], -32601, f"Method not found: {method}")

    async def close(self) -> None:
        """End the agent the polite way (its stdin closed), then the firm one."""
        self.out.close()  # type: ignore[union-attr]
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), 5)
        except TimeoutError:
            self.proc.kill()
            await self.exited
        self.proc.close()


async def spawn(command: list[str], big_n: int = 0) -> Client:
    _, client = await asyncio.get_running_loop().subprocess_exec(
        lambda: Client(big_n), *command, stdin=-1, stdout=-1, stderr=None)
    return client


async def initialize(client: Client) -> Any:
    return await client.request("initialize", {
        "protocolVersion": 1,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": False}, "terminal": False},
        "clientInfo": {"name": "floor-scenario-client", "version": "0.1.0"}})


async def run_startup(n: int, command: list[str]) -> dict[str, Any]:
    times: list[float] = []
    idle: list[int] = []
    for _ in range(n):
        t0 = time.perf_counter()
        client = await spawn(command)
        try:
            init = await initialize(client)
            times.append(time.perf_counter() - t0)
        finally:
            await client.close()
        rss = (init.get("_meta") or {}).get("maxrss_kb")
        if isinstance(rss, int):
            idle.append(rss)
    idle_kb = statistics.median(idle) if idle else None
    return {"ok": True, "wall_s": round(statistics.median(times), 6), "agent_idle_maxrss_kb": idle_kb,
            "agent_maxrss_kb": idle_kb, "runs_s": [round(t, 6) for t in times]}


async def run_prompt(scenario: str, n: int, command: list[str]) -> dict[str, Any]:
    client = await spawn(command, n if scenario == "big" else 0)
    try:
        await initialize(client)
        session = await client.request("session/new", {"cwd": os.getcwd(), "mcpServers": []})
        t0 = time.perf_counter()
        response = await client.request("session/prompt", {
            "sessionId": session["sessionId"], "prompt": [{"type": "text", "text": f"{scenario} {n}"}]})
        wall = time.perf_counter() - t0
    finally:
        await client.close()
    meta = response.get("_meta") or {}
    out: dict[str, Any] = {"wall_s": round(wall, 6), "agent_maxrss_kb": meta.get("maxrss_kb"),
                           "agent_total_s": meta.get("total_s"), "stop_reason": response.get("stopReason")}
    if scenario == "flood":
        out.update(ok=client.updates == n, count=client.updates, rate=round(client.updates / wall, 1),
                   chars=client.chars)
    elif scenario in ("rtt", "concurrent"):
        out.update(ok=client.reads == n, rate=round(n / wall, 1), p50_us=meta.get("p50_us"),
                   p99_us=meta.get("p99_us"))
    elif scenario == "big":
        out.update(ok=meta.get("ok") is True)
    elif scenario == "bigup":
        out.update(ok=client.updates == 1 and client.chars == n, chars=client.chars)
    else:
        out.update(ok=response.get("stopReason") == "end_turn")
    if not out["ok"]:
        out["error"] = (f"scenario check failed (updates={client.updates}, chars={client.chars}, "
                        f"reads={client.reads})")
    return out


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") not in (1, 2) or not argv[argv.index("--") + 1:]:
        sys.exit(USAGE)
    split = argv.index("--")
    scenario = argv[0]
    n = int(argv[1]) if split == 2 else DEFAULT_N.get(scenario, 0)
    command = argv[split + 1:]
    result: dict[str, Any] = {"scenario": scenario, "n": n, "impl": "floor"}
    try:
        if scenario not in DEFAULT_N:
            raise ValueError(f"unknown scenario {scenario!r}")
        runner = run_startup(n, command) if scenario == "startup" else run_prompt(scenario, n, command)
        result.update(asyncio.run(asyncio.wait_for(runner, TIMEOUT_S)))
    except RpcError as exc:  # the agent answered the prompt with an error
        result.update(ok=False, error=f"RpcError: {exc}", error_code=exc.code)
    except BaseException as exc:  # one JSON line whatever happens
        result.update(ok=False, error=f"{type(exc).__name__}: {exc}")
    result["client_maxrss_kb"] = maxrss_kb()
    sys.stdout.buffer.write(orjson.dumps(result) + b"\n")
    sys.stdout.flush()
    sys.exit(0 if result.get("ok") else 1)


if __name__ == "__main__":
    main()
