#!/usr/bin/env python3
"""The cost of one MCP-over-ACP ``tools/call`` round trip against one direct
``fs/read_text_file`` (ACP v1), both reading the same small file.

    python benchmarks/mcp_roundtrip.py                  # 2000 calls of each, alternating
    python benchmarks/mcp_roundtrip.py -n 5000 --json out.json
    python benchmarks/mcp_roundtrip.py --quick          # a smoke run (50 calls)

acplink's agent and acplink's client over a real subprocess pipe: this script is the client
(``connect([python, this, "--agent"], fs=True)``: the default ``FileSystemHandler``, confined
to a temporary folder holding a 1 KiB file) and, with ``--agent``, the agent (an
``AgentApp`` served by ``run_agent``). The client also offers its workspace MCP server
(``workspace_server(client)``, registered per session: ``client.mcp.register("workspace",
..., per_session=True)``), whose ``read_text_file`` tool reads through the same ``FileSystemHandler`` that answers
``fs/read_text_file``: the two paths do the same file work, and differ by the binding (the
``mcp/message`` envelope, the inner request's MCP metadata, the carrier, the tool's argument
checks and result shape).

The agent times each call from its side (request sent → answer parsed, ``perf_counter_ns``)
with ``ctx.read_file(path)`` and ``ctx.mcp.call_tool("workspace", "read_text_file", {"path":
path}, show=False)`` (no ACP tool call shown: the round trip alone), after a warm-up of 100
each, alternating the order in each pair so that neither always runs second. Printed: the
median, p10 and p90 in µs of each, and the ratio of the medians (MCP / fs); ``--json`` writes
them. Both processes run with ``tune_gc()`` (``run_agent`` does it by default). Timings are
only comparable within one run on one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acplink import AgentApp, PromptContext, connect, run_agent, tune_gc
from acplink.client import workspace_server

FILE = "small.txt"
CONTENT = ("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\n" * 18)[:1024]
WARMUP = 100


def _agent() -> None:
    app = AgentApp("mcp-roundtrip-bench", "1.0")

    @app.prompt
    async def prompt(ctx: PromptContext) -> None:
        n = int(ctx.text.split()[-1])
        path = str(Path(ctx.session.cwd) / FILE) if ctx.session is not None else FILE
        fs_us: list[float] = []
        mcp_us: list[float] = []

        async def fs() -> None:
            text = await ctx.read_file(path)
            assert text == CONTENT, "fs/read_text_file read something else"

        async def mcp() -> None:
            result = await ctx.mcp.call_tool("workspace", "read_text_file", {"path": path}, show=False)
            assert result["content"][0]["text"] == CONTENT and not result.get("isError"), result

        for i in range(WARMUP + n):
            pair = ((fs, fs_us), (mcp, mcp_us)) if i % 2 == 0 else ((mcp, mcp_us), (fs, fs_us))
            for call, into in pair:
                t0 = time.perf_counter_ns()
                await call()
                if i >= WARMUP:
                    into.append((time.perf_counter_ns() - t0) / 1000)
        await ctx.send_text(json.dumps({"fs_us": fs_us, "mcp_us": mcp_us}))

    run_agent(app)


def _figures(samples: list[float]) -> dict[str, float]:
    deciles = statistics.quantiles(samples, n=10)
    return {"median_us": statistics.median(samples), "p10_us": deciles[0], "p90_us": deciles[-1]}


async def _client(n: int) -> dict[str, Any]:
    tune_gc()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / FILE).write_text(CONTENT)
        async with connect([sys.executable, __file__, "--agent"], cwd=folder, fs=True, protocol=1) as client:
            client.mcp.register("workspace", workspace_server(client), per_session=True)
            session = await client.new_session(folder)
            await session.prompt(f"bench {n}")
            message = session.state.last_agent_message
            assert message is not None, "the agent answered nothing"
            raw = json.loads(message.text)
    out: dict[str, Any] = {"n": n, "file_bytes": len(CONTENT.encode()), "protocol": 1,
                           "fs": _figures(raw["fs_us"]), "mcp": _figures(raw["mcp_us"])}
    out["ratio_median"] = out["mcp"]["median_us"] / out["fs"]["median_us"]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-n", type=int, default=2000, help="calls of each kind, after the warm-up (default 2000)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 50 calls of each")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    if args.agent:
        _agent()
        return 0
    n = 50 if args.quick else args.n
    if n < 10:
        parser.error("-n must be at least 10")
    res = asyncio.run(_client(n))
    print(f"one round trip, agent side, {n} calls of each (after {WARMUP} of warm-up), alternating, "
          f"reading a {res['file_bytes']} B file; ACP v1 over a subprocess pipe")
    print(f"{'':28} {'median µs':>10} {'p10 µs':>8} {'p90 µs':>8}")
    for key, label in (("fs", "fs/read_text_file"), ("mcp", "mcp/message tools/call")):
        f = res[key]
        print(f"{label:28} {f['median_us']:10.0f} {f['p10_us']:8.0f} {f['p90_us']:8.0f}")
    print(f"MCP-over-ACP / fs (medians): {res['ratio_median']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
