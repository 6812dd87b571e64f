#!/usr/bin/env python3
"""Benchmark agent on acplink's public API, following the wire contract in
benchmarks/README.md (SCENARIOS.md).

    python benchmarks/scenario_agent.py [--max-message-size BYTES]

Written the way an agent author would: an :class:`acplink.AgentApp` with a prompt handler
using :class:`acplink.PromptContext` (``send_text``, ``read_file``), served by
:func:`acplink.run_agent`. Every validation acplink normally does stays on.

``initialize`` is answered with ``_meta.maxrss_kb``; ``session/prompt`` with text
``"SCENARIO N"`` (the last two words count, so ``"flood 20000"`` and
``"SCENARIO flood 20000"`` both work) runs the scenario and returns ``end_turn`` with
``_meta {total_s, maxrss_kb, rss_kb, ...}``.

Scenarios: the contract's ``flood rtt concurrent big bigup startup``, plus ``mixed`` (an
acplink extra): N ``fs/read_text_file`` requests all at once, each task sending a
``session/update`` before and after its request, every chunk carrying its send sequence
number (``"mixed 00000012 ..."``), so the client can assert that notifications are never
reordered by the concurrent requests around them.
"""

from __future__ import annotations

import asyncio
import math
import os
import resource
import sys
import time
from typing import Any

from acplink import AgentApp, InvalidParams, PeerLimits, PromptContext, SqliteStore, run_agent
from acplink import schema as s

BIG_PATH = "/bench/big.txt"
SMALL_PATH = "/bench/small.txt"
LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\n"
_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024


def maxrss_kb() -> int:
    """Peak RSS in KiB (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def rss_kb() -> int | None:
    """Current RSS in KiB (Linux), to see growth across repeated scenarios."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE_KB
    except (OSError, ValueError, IndexError):
        return None


def percentile_us(samples_ns: list[int], p: float) -> float:
    """Nearest-rank percentile of nanosecond samples, in microseconds."""
    if not samples_ns:
        return 0.0
    ordered = sorted(samples_ns)
    rank = max(1, math.ceil(p * len(ordered)))
    return round(ordered[rank - 1] / 1000, 1)


#: ``ACPLINK_BENCH_STORE=PATH``: sessions in a ``SqliteStore`` at PATH, or a ``PostgresStore``
#: when it is a ``postgresql://`` URL (benchmarks/store_cost.py)
_STORE = os.environ.get("ACPLINK_BENCH_STORE")


def _store() -> Any:
    if not _STORE:
        return None
    if _STORE.startswith("postgresql://"):
        from acplink import PostgresStore

        return PostgresStore(_STORE)
    return SqliteStore(_STORE)


app = AgentApp("acplink-scenario-agent", "0.1.0", store=_store())


@app.initialize
async def initialize(ctx: Any) -> Any:
    # the built-in answer plus the contract's _meta figures
    return ctx.app.initialize_json(meta={"maxrss_kb": maxrss_kb(), "rss_kb": rss_kb()})


async def run_scenario(ctx: PromptContext, scenario: str, n: int) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if scenario == "flood":
        for i in range(n):
            await ctx.send_text(f"flood chunk {i:08d} ".ljust(40, "."))
        meta["count"] = n
    elif scenario == "rtt":
        samples = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            await ctx.read_file(SMALL_PATH)
            samples.append(time.perf_counter_ns() - t0)
        meta.update(p50_us=percentile_us(samples, 0.50), p99_us=percentile_us(samples, 0.99))
    elif scenario == "concurrent":
        async def timed_read() -> int:
            t0 = time.perf_counter_ns()
            await ctx.read_file(SMALL_PATH)
            return time.perf_counter_ns() - t0

        samples = list(await asyncio.gather(*(timed_read() for _ in range(n))))
        meta.update(p50_us=percentile_us(samples, 0.50), p99_us=percentile_us(samples, 0.99))
    elif scenario == "mixed":
        seq = 0

        async def send_numbered() -> None:
            nonlocal seq
            i, seq = seq, seq + 1  # taken right before the (synchronous) write: wire order
            await ctx.send_text(f"mixed {i:08d} ".ljust(40, "."))

        async def read_between_updates() -> int:
            await send_numbered()
            t0 = time.perf_counter_ns()
            await ctx.read_file(SMALL_PATH)
            elapsed = time.perf_counter_ns() - t0
            await send_numbered()
            return elapsed

        samples = list(await asyncio.gather(*(read_between_updates() for _ in range(n))))
        meta.update(count=seq, p50_us=percentile_us(samples, 0.50), p99_us=percentile_us(samples, 0.99))
    elif scenario == "big":
        content = await ctx.read_file(BIG_PATH)
        meta.update(ok=len(content) == n, received=len(content))
    elif scenario == "bigup":
        await ctx.send_text((LINE * (n // len(LINE) + 1))[:n])
    elif scenario == "startup":
        pass
    else:
        raise InvalidParams(f"Invalid params: unknown scenario {scenario!r}", {"scenario": scenario})
    return meta


@app.prompt
async def prompt(ctx: PromptContext) -> s.PromptResponse:
    parts = ctx.text.split()  # "SCENARIO N": the last two words
    if len(parts) < 2 or not parts[-1].isdigit():
        raise InvalidParams(f"Invalid params: expected a prompt 'SCENARIO N', got {ctx.text[:80]!r}")
    start = time.perf_counter()
    meta = await run_scenario(ctx, parts[-2].lower(), int(parts[-1]))
    meta["total_s"] = round(time.perf_counter() - start, 6)
    meta["maxrss_kb"] = maxrss_kb()
    meta["rss_kb"] = rss_kb()
    return s.PromptResponse(stop_reason="end_turn", meta=meta)


def main(argv: list[str]) -> None:
    kw: dict[str, Any] = {}
    if argv[:1] == ["--max-message-size"] and len(argv) == 2:
        kw["limits"] = PeerLimits(max_message_size=int(argv[1]))
    elif argv:
        sys.exit("usage: scenario_agent.py [--max-message-size BYTES]")
    run_agent(app, **kw)


if __name__ == "__main__":
    main(sys.argv[1:])
