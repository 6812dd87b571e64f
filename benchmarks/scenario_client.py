#!/usr/bin/env python3
"""Benchmark client on acplink's public API, following the wire contract in
benchmarks/README.md (SCENARIOS.md). Drives any agent that follows the contract.

    python benchmarks/scenario_client.py [OPTIONS] SCENARIO [N] -- AGENT_CMD [ARGS...]
    python benchmarks/scenario_client.py [OPTIONS] SCENARIO [N] -- ws://HOST:PORT/acp   (or http://)

OPTIONS: ``--max-message-size BYTES`` (acplink's limit for this client), ``--repeat K``
(run the prompt K times on one agent process and session and report the agent's RSS after
each: used to check that memory does not grow), ``--timeout S`` (default 600).

Written on acplink's typed low-level connection, the way a performance-minded client
would: a :class:`acplink.ClientSideConnection` over a :class:`acplink.SubprocessTransport`,
with a :class:`acplink.Router` holding the ``session/update`` and ``fs/read_text_file``
handlers (typed params in, typed results out; every validation on), in a process whose
garbage collector is tuned with :func:`acplink.tune_gc` (docs/performance.md).

The prompt sent is ``"<scenario> <N>"`` (e.g. ``"flood 20000"``), like the official SDKs'
benchmark peers. Prints exactly one JSON line (``ok``, ``error`` on failure, ``wall_s``,
``client_maxrss_kb``, ``agent_maxrss_kb`` and the scenario's figures); exit status 0 iff ok.

``mixed`` (acplink extra, acplink agents only): the agent runs N concurrent
``fs/read_text_file`` requests and sends a numbered ``session/update`` before and after each;
this client asserts that the 2N notifications arrive complete and in send order, and all
before the prompt's response.
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

from acplink import (
    ClientSideConnection,
    HttpTransport,
    PeerLimits,
    RemoteOptions,
    RequestError,
    Router,
    SubprocessTransport,
    Transport,
    WebSocketTransport,
    tune_gc,
)
from acplink import schema as s

DEFAULT_N = {"flood": 20000, "rtt": 5000, "concurrent": 5000, "big": 20000000, "bigup": 20000000,
             "startup": 5, "mixed": 5000}
BIG_PATH = "/bench/big.txt"
LINE = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW\n"
SMALL_CONTENT = "small fixed file content\n"
USAGE = ("usage: scenario_client.py [--max-message-size BYTES] [--repeat K] [--timeout S] "
         "SCENARIO [N] -- AGENT_CMD [ARGS...]")


def maxrss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux


class Bench:
    """The client's state: what it answers, what it counted."""

    def __init__(self, big_n: int, check_order: bool) -> None:
        self.big = (LINE * (big_n // len(LINE) + 1))[:big_n] if big_n else ""
        self.check_order = check_order
        self.updates = 0
        self.chars = 0
        self.reads = 0
        self.next_seq = 0
        self.order_error: str | None = None

    def reset(self) -> None:
        self.updates = self.chars = self.reads = self.next_seq = 0

    def router(self) -> Router:
        router = Router()
        router.add_notification("session/update", self.on_update)
        router.add_request("fs/read_text_file", self.on_read)
        return router

    async def on_update(self, params: s.SessionNotification) -> None:
        self.updates += 1
        text = getattr(getattr(params.update, "content", None), "text", None)
        if type(text) is str:
            self.chars += len(text)
            if self.check_order and self.order_error is None:
                seq = int(text.split(None, 2)[1])
                if seq != self.next_seq:
                    self.order_error = f"notification {seq} arrived where {self.next_seq} was expected"
                self.next_seq = seq + 1

    async def on_read(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        self.reads += 1
        return s.ReadTextFileResponse(content=self.big if params.path == BIG_PATH else SMALL_CONTENT)


class Agent:
    """One spawned agent on a typed client connection."""

    def __init__(self, bench: Bench, command: list[str], limits: PeerLimits | None) -> None:
        transport: Transport
        if "://" in command[0]:  # a remote agent: ws(s):// (WebSocket) or http(s):// (streamable HTTP)
            options = RemoteOptions(command[0])
            size = (limits or PeerLimits()).max_message_size
            transport = (WebSocketTransport if options.websocket else HttpTransport)(options, max_message_size=size)
        else:
            transport = SubprocessTransport(command, stderr="inherit")
        self.conn = ClientSideConnection(transport, bench.router(), limits=limits)

    async def __aenter__(self) -> ClientSideConnection:
        await self.conn.start()
        return self.conn

    async def __aexit__(self, *exc: object) -> None:
        await self.conn.aclose()


async def initialize(conn: ClientSideConnection) -> s.InitializeResponse:
    return await conn.initialize(
        protocol_version=1,
        client_capabilities=s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True)),
        client_info=s.Implementation(name="acplink-scenario-client", version="0.1.0"),
    )


def _meta(value: Any) -> dict[str, Any]:
    meta = getattr(value, "meta", None)
    return meta if isinstance(meta, dict) else {}


async def run_startup(n: int, command: list[str], limits: PeerLimits | None) -> dict[str, Any]:
    times: list[float] = []
    idle: list[int] = []
    for _ in range(n):
        t0 = time.perf_counter()
        async with Agent(Bench(0, False), command, limits) as conn:
            init = await initialize(conn)
            times.append(time.perf_counter() - t0)
        rss = _meta(init).get("maxrss_kb")
        if isinstance(rss, int):
            idle.append(rss)
    idle_kb = statistics.median(idle) if idle else None
    return {"ok": True, "wall_s": round(statistics.median(times), 6), "agent_idle_maxrss_kb": idle_kb,
            "agent_maxrss_kb": idle_kb, "runs_s": [round(t, 6) for t in times]}


def _check(scenario: str, n: int, bench: Bench, meta: dict[str, Any], wall: float,
           response: s.PromptResponse) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if scenario == "flood":
        out.update(ok=bench.updates == n, count=bench.updates, rate=round(bench.updates / wall, 1),
                   chars=bench.chars)
    elif scenario in ("rtt", "concurrent"):
        out.update(ok=bench.reads == n, rate=round(n / wall, 1), p50_us=meta.get("p50_us"),
                   p99_us=meta.get("p99_us"))
    elif scenario == "mixed":
        # every notification was handled before the response was delivered, in send order
        out.update(ok=bench.reads == n and bench.updates == 2 * n and bench.next_seq == 2 * n
                   and bench.order_error is None,
                   count=bench.updates, rate=round(n / wall, 1), p50_us=meta.get("p50_us"),
                   p99_us=meta.get("p99_us"))
        if bench.order_error is not None:
            out["error"] = f"notifications reordered: {bench.order_error}"
    elif scenario == "big":
        out.update(ok=meta.get("ok") is True)
    elif scenario == "bigup":
        out.update(ok=bench.updates == 1 and bench.chars == n, chars=bench.chars)
    else:
        out.update(ok=response.stop_reason == "end_turn")
    if not out["ok"] and "error" not in out:
        out["error"] = (f"scenario check failed (updates={bench.updates}, chars={bench.chars}, "
                        f"reads={bench.reads})")
    return out


async def run_prompt(scenario: str, n: int, command: list[str], limits: PeerLimits | None,
                     repeat: int) -> dict[str, Any]:
    bench = Bench(n if scenario == "big" else 0, scenario == "mixed")
    runs: list[dict[str, Any]] = []
    async with Agent(bench, command, limits) as conn:
        init = await initialize(conn)
        session = await conn.session_new(cwd=os.getcwd(), mcp_servers=[])
        text = f"{scenario} {n}"
        for _ in range(repeat):
            bench.reset()
            t0 = time.perf_counter()
            response = await conn.session_prompt(session_id=session.session_id, prompt=[s.TextContent(text=text)])
            wall = time.perf_counter() - t0
            meta = _meta(response)
            out: dict[str, Any] = {"wall_s": round(wall, 6), "agent_maxrss_kb": meta.get("maxrss_kb"),
                                   "agent_rss_kb": meta.get("rss_kb"), "agent_total_s": meta.get("total_s"),
                                   "stop_reason": response.stop_reason}
            out.update(_check(scenario, n, bench, meta, wall, response))
            runs.append(out)
            if not out["ok"]:
                break
    result = dict(runs[0])
    if repeat > 1:
        result["ok"] = all(r["ok"] for r in runs) and len(runs) == repeat
        result["agent_idle_maxrss_kb"] = _meta(init).get("maxrss_kb")
        result["agent_maxrss_series_kb"] = [r["agent_maxrss_kb"] for r in runs]
        result["agent_rss_series_kb"] = [r["agent_rss_kb"] for r in runs]
        result["runs_s"] = [r["wall_s"] for r in runs]
        if not result["ok"] and "error" not in result:
            result["error"] = next((r["error"] for r in runs if "error" in r), "a repeated run failed")
    return result


def parse_args(argv: list[str]) -> tuple[str, int, list[str], dict[str, Any]]:
    if "--" not in argv:
        raise SystemExit(USAGE)
    split = argv.index("--")
    head, command = argv[:split], argv[split + 1:]
    opts: dict[str, Any] = {"max_message_size": None, "repeat": 1, "timeout": 600.0}
    positional: list[str] = []
    it = iter(head)
    for arg in it:
        if arg in ("--max-message-size", "--repeat", "--timeout"):
            value = next(it, None)
            if value is None:
                raise SystemExit(USAGE)
            key = arg[2:].replace("-", "_")
            opts[key] = float(value) if key == "timeout" else int(value)
        else:
            positional.append(arg)
    if not command or len(positional) not in (1, 2):
        raise SystemExit(USAGE)
    scenario = positional[0]
    n = int(positional[1]) if len(positional) == 2 else DEFAULT_N.get(scenario, 0)
    return scenario, n, command, opts


def main() -> None:
    scenario, n, command, opts = parse_args(sys.argv[1:])
    # what acplink recommends for a process that mostly moves ACP traffic (docs/performance.md);
    # run_agent does the same on the agent side
    tune_gc()
    result: dict[str, Any] = {"scenario": scenario, "n": n, "impl": "acplink"}
    limits = PeerLimits(max_message_size=opts["max_message_size"]) if opts["max_message_size"] else None
    try:
        if scenario not in DEFAULT_N:
            raise ValueError(f"unknown scenario {scenario!r}")
        if scenario == "startup":
            runner = run_startup(n, command, limits)
        else:
            runner = run_prompt(scenario, n, command, limits, max(1, opts["repeat"]))
        result.update(asyncio.run(asyncio.wait_for(runner, opts["timeout"])))
    except RequestError as exc:  # the agent answered the prompt with an error
        result.update(ok=False, error=f"{type(exc).__name__}: {exc}", error_code=exc.code)
    except BaseException as exc:  # one JSON line whatever happens
        result.update(ok=False, error=f"{type(exc).__name__}: {exc}")
    result["client_maxrss_kb"] = maxrss_kb()
    print(json.dumps(result), flush=True)
    sys.exit(0 if result.get("ok") else 1)


if __name__ == "__main__":
    main()
