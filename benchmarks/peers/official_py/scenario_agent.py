#!/usr/bin/env python3
"""Benchmark agent on the official Python SDK (agent-client-protocol 0.12.1),
following the benchmark wire contract in benchmarks/README.md.

    .peers-venv/bin/python benchmarks/peers/official_py/scenario_agent.py

Answers initialize with _meta.maxrss_kb, session/new, and runs the scenario
named by a prompt "SCENARIO N" (flood, rtt, concurrent, big, bigup, startup),
returning end_turn with _meta {total_s, maxrss_kb, ...}.
"""

from __future__ import annotations

import asyncio
import math
import resource
import time
from typing import Any

from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    update_agent_message_text,
)
from acp.interfaces import Client
from acp.schema import Implementation

BIG_PATH = "/bench/big.txt"
SMALL_PATH = "/bench/small.txt"
LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\n"


def maxrss_kb() -> int:
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def percentile_us(samples_ns: list[int], p: float) -> float:
    """Nearest-rank percentile of nanosecond samples, in microseconds."""
    if not samples_ns:
        return 0.0
    ordered = sorted(samples_ns)
    rank = max(1, math.ceil(p * len(ordered)))
    return round(ordered[rank - 1] / 1000, 1)


class ScenarioAgent:
    def __init__(self) -> None:
        self._conn: Client | None = None
        self._next_session = 0

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=1,
            agent_info=Implementation(name="official-py-scenario-agent", version="0.12.1"),
            field_meta={"maxrss_kb": maxrss_kb()},
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        self._next_session += 1
        return NewSessionResponse(session_id=f"bench-{self._next_session}")

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        text = next((b.text for b in prompt if getattr(b, "type", None) == "text"), "")
        parts = text.split()  # "SCENARIO N", e.g. "flood 20000"
        if len(parts) < 2 or not parts[-1].isdigit():
            raise RequestError.invalid_params({"prompt": text, "expected": "SCENARIO N"})
        scenario, n = parts[-2], int(parts[-1])
        conn = self._conn
        assert conn is not None

        meta: dict[str, Any] = {}
        start = time.perf_counter()
        if scenario == "flood":
            for i in range(n):
                chunk = f"flood chunk {i:08d} ".ljust(40, ".")
                await conn.session_update(session_id=session_id, update=update_agent_message_text(chunk))
            meta["count"] = n
        elif scenario == "rtt":
            samples = []
            for _ in range(n):
                t0 = time.perf_counter_ns()
                await conn.read_text_file(session_id=session_id, path=SMALL_PATH)
                samples.append(time.perf_counter_ns() - t0)
            meta.update(p50_us=percentile_us(samples, 0.50), p99_us=percentile_us(samples, 0.99))
        elif scenario == "concurrent":
            async def timed_read() -> int:
                t0 = time.perf_counter_ns()
                await conn.read_text_file(session_id=session_id, path=SMALL_PATH)
                return time.perf_counter_ns() - t0

            samples = list(await asyncio.gather(*(timed_read() for _ in range(n))))
            meta.update(p50_us=percentile_us(samples, 0.50), p99_us=percentile_us(samples, 0.99))
        elif scenario == "big":
            response = await conn.read_text_file(session_id=session_id, path=BIG_PATH)
            meta.update(ok=len(response.content) == n, received=len(response.content))
        elif scenario == "bigup":
            payload = (LINE * (n // len(LINE) + 1))[:n]
            await conn.session_update(session_id=session_id, update=update_agent_message_text(payload))
        elif scenario == "startup":
            pass
        else:
            raise RequestError.invalid_params({"scenario": scenario})
        meta["total_s"] = round(time.perf_counter() - start, 6)
        meta["maxrss_kb"] = maxrss_kb()
        return PromptResponse(stop_reason="end_turn", field_meta=meta)


def main() -> None:
    asyncio.run(run_agent(ScenarioAgent()))


if __name__ == "__main__":
    main()
