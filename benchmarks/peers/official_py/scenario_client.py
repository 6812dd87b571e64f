#!/usr/bin/env python3
"""Benchmark client on the official Python SDK (agent-client-protocol 0.12.1),
following the benchmark wire contract in benchmarks/README.md.

    .peers-venv/bin/python benchmarks/peers/official_py/scenario_client.py SCENARIO [N] -- AGENT_CMD [ARGS...]

Prints exactly one JSON line: ok, error (on failure), wall_s, client_maxrss_kb,
agent_maxrss_kb and the scenario's figures. Exit status 0 when ok, else 1.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import sys
import time
from typing import Any

from acp import spawn_agent_process, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation, ReadTextFileResponse

DEFAULT_N = {"flood": 20000, "rtt": 5000, "concurrent": 5000, "big": 20000000, "bigup": 20000000, "startup": 5}
BIG_PATH = "/bench/big.txt"
LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\n"
SMALL_CONTENT = "small fixed file content\n"
TIMEOUT_S = 600.0


class BenchClient:
    """Answers fs/read_text_file and counts session/update notifications."""

    def __init__(self, big_n: int) -> None:
        self.big = (LINE * (big_n // len(LINE) + 1))[:big_n] if big_n else ""
        self.updates = 0
        self.chars = 0
        self.reads = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates += 1
        content = getattr(update, "content", None)
        text = getattr(content, "text", None)
        if isinstance(text, str):
            self.chars += len(text)

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        self.reads += 1
        return ReadTextFileResponse(content=self.big if path == BIG_PATH else SMALL_CONTENT)


def maxrss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


def spawn(client: BenchClient, command: list[str]) -> Any:
    # Agent stderr passes through; the agent inherits our whole environment.
    return spawn_agent_process(client, command[0], *command[1:], env=dict(os.environ),
                               transport_kwargs={"stderr": None})


async def initialize(conn: Any) -> Any:
    return await conn.initialize(
        protocol_version=1,
        client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
        client_info=Implementation(name="official-py-scenario-client", version="0.12.1"),
    )


async def run_startup(n: int, command: list[str]) -> dict[str, Any]:
    times, idle = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        async with spawn(BenchClient(0), command) as (conn, _proc):
            init = await initialize(conn)
            times.append(time.perf_counter() - t0)
            idle.append((init.field_meta or {}).get("maxrss_kb"))
    idle_kb = statistics.median(v for v in idle if v is not None) if any(v is not None for v in idle) else None
    return {"ok": True, "wall_s": round(statistics.median(times), 6), "agent_idle_maxrss_kb": idle_kb,
            "agent_maxrss_kb": idle_kb, "runs_s": [round(t, 6) for t in times]}


async def run_prompt(scenario: str, n: int, command: list[str]) -> dict[str, Any]:
    client = BenchClient(n if scenario == "big" else 0)
    async with spawn(client, command) as (conn, _proc):
        await initialize(conn)
        session = await conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        t0 = time.perf_counter()
        response = await conn.prompt(session_id=session.session_id, prompt=[text_block(f"{scenario} {n}")])
        wall = time.perf_counter() - t0
    meta = response.field_meta or {}
    out: dict[str, Any] = {"wall_s": round(wall, 6), "agent_maxrss_kb": meta.get("maxrss_kb"),
                           "agent_total_s": meta.get("total_s"), "stop_reason": response.stop_reason}
    if scenario == "flood":
        out.update(ok=client.updates == n, count=client.updates, rate=round(client.updates / wall, 1),
                   chars=client.chars)
    elif scenario in ("rtt", "concurrent"):
        out.update(ok=client.reads == n, rate=round(n / wall, 1), p50_us=meta.get("p50_us"), p99_us=meta.get("p99_us"))
    elif scenario == "big":
        out.update(ok=meta.get("ok") is True)
    elif scenario == "bigup":
        out.update(ok=client.updates == 1 and client.chars == n, chars=client.chars)
    else:
        out.update(ok=response.stop_reason == "end_turn")
    if not out["ok"]:
        out["error"] = f"scenario check failed (updates={client.updates}, chars={client.chars}, reads={client.reads})"
    return out


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") not in (1, 2) or not argv[argv.index("--") + 1:]:
        sys.exit("usage: scenario_client.py SCENARIO [N] -- AGENT_CMD [ARGS...]")
    split = argv.index("--")
    scenario = argv[0]
    n = int(argv[1]) if split == 2 else DEFAULT_N.get(scenario, 0)
    command = argv[split + 1:]
    result: dict[str, Any] = {"scenario": scenario, "n": n, "impl": "official-py"}
    try:
        if scenario not in DEFAULT_N:
            raise ValueError(f"unknown scenario {scenario!r}")
        runner = run_startup(n, command) if scenario == "startup" else run_prompt(scenario, n, command)
        result.update(asyncio.run(asyncio.wait_for(runner, TIMEOUT_S)))
    except BaseException as exc:
        result.update(ok=False, error=f"{type(exc).__name__}: {exc}")
    result["client_maxrss_kb"] = maxrss_kb()
    print(json.dumps(result), flush=True)
    sys.exit(0 if result.get("ok") else 1)


if __name__ == "__main__":
    main()
