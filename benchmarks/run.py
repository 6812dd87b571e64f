#!/usr/bin/env python3
"""Run the ACP stdio benchmarks: every implementation against itself and the cross pairs.

    python benchmarks/run.py                 # full run: default N, 3 rounds, table + targets
    python benchmarks/run.py --quick         # smoke run: small N, 1 round, do all pairs interoperate?
    python benchmarks/run.py --rounds 5 --scenarios flood,rtt --json out.json

Implementations (each a client program and an agent program following the wire contract,
see benchmarks/README.md): ``acplink`` (benchmarks/scenario_*.py, run with this Python),
``official-py`` (benchmarks/peers/official_py, run with .peers-venv/bin/python),
``official-ts`` (benchmarks/peers/official_ts, run with node; needs ``npm ci`` in
tests/interop/js) and ``floor`` (benchmarks/peers/floor: plain asyncio pipes + orjson, no
validation, no framework, run with the same Python as acplink: the floor the issue-24 targets
are set against). A missing peer environment is skipped with a message.

Pairs: acplink→acplink, py→py, ts→ts, floor→floor (the comparison) and acplink→peer,
peer→acplink for every peer (interoperability; their figures are shown too). Every scenario runs every pair
once per round, pairs rotated between rounds, rounds interleaved, so drift in the machine's
speed hits every implementation alike. The table shows medians over rounds and the ratios
acplink / peer of the native pairs (for rates: higher is better for acplink; for times:
lower is better).

Extra checks (acplink): ``mixed`` (notifications interleaved with concurrent requests, order
asserted by the client), 40 MB ``big`` message, over-limit ``big`` (a clean error, no hang),
memory across repeated floods (``--repeat``) and idle RSS.

Exit status: 0 when every run that should succeed did (and, with ``--check-targets``, every
target was met), else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
PEERS_PY = ROOT / ".peers-venv" / "bin" / "python"
TS_SDK = ROOT / "tests" / "interop" / "js" / "node_modules" / "@agentclientprotocol" / "sdk"

SCENARIOS = ("flood", "rtt", "concurrent", "big", "bigup", "startup")
DEFAULT_N = {"flood": 20000, "rtt": 5000, "concurrent": 5000, "big": 20_000_000, "bigup": 20_000_000,
             "startup": 5, "mixed": 5000}
QUICK_N = {"flood": 300, "rtt": 100, "concurrent": 100, "big": 100_000, "bigup": 100_000, "startup": 1,
           "mixed": 100}
SHORT = {"acplink": "acplink", "official-py": "py", "official-ts": "ts", "floor": "floor"}
BIG40_N = 40_000_000
OVERLIMIT = {"full": (20_000_000, 10_000_000), "quick": (100_000, 50_000)}  # (N, agent limit)
MEMORY = {"full": (20000, 5), "quick": (300, 2)}  # flood N, repeats
IDLE_RSS_MIB = 30  # issue 24: acplink's idle agent, reported next to the floor's


# Bytecode caching on, as for any installed package: an editable checkout run with
# PYTHONDONTWRITEBYTECODE would recompile every module (the 3,500-line generated schema too)
# at each start, which the official SDKs (compiled by pip at install) never pay.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass
class Impl:
    name: str
    client: list[str]
    agent: list[str]
    missing: str | None = None


def implementations(python: str) -> dict[str, Impl]:
    node = shutil.which("node")
    impls = {
        "acplink": Impl("acplink", [python, str(BENCH / "scenario_client.py")],
                        [python, str(BENCH / "scenario_agent.py")]),
        "official-py": Impl("official-py",
                            [str(PEERS_PY), str(BENCH / "peers" / "official_py" / "scenario_client.py")],
                            [str(PEERS_PY), str(BENCH / "peers" / "official_py" / "scenario_agent.py")]),
        "official-ts": Impl("official-ts",
                            [node or "node", str(BENCH / "peers" / "official_ts" / "scenario_client.mjs")],
                            [node or "node", str(BENCH / "peers" / "official_ts" / "scenario_agent.mjs")]),
        # the floor: asyncio + orjson (an acplink dependency), so acplink's Python runs it
        "floor": Impl("floor", [python, str(BENCH / "peers" / "floor" / "scenario_client.py")],
                      [python, str(BENCH / "peers" / "floor" / "scenario_agent.py")]),
    }
    if not PEERS_PY.exists():
        impls["official-py"].missing = (".peers-venv missing: python3 -m venv .peers-venv && "
                                        ".peers-venv/bin/pip install agent-client-protocol==0.12.1")
    if node is None:
        impls["official-ts"].missing = "node not found on PATH"
    elif not TS_SDK.exists():
        impls["official-ts"].missing = "tests/interop/js/node_modules missing: (cd tests/interop/js && npm ci)"
    return impls


@dataclass
class Run:
    """One client run: which pair, what it printed."""

    check: str  # scenario name, or an extra check name
    client: str
    agent: str
    n: int
    result: dict[str, Any] = field(default_factory=dict)
    returncode: int | None = None
    stderr_tail: str = ""
    elapsed: float = 0.0
    expect_ok: bool = True

    @property
    def ok(self) -> bool:
        return bool(self.result.get("ok")) and self.returncode == 0

    @property
    def pair(self) -> str:
        return f"{SHORT[self.client]}→{SHORT[self.agent]}"


def run_one(run: Run, impls: dict[str, Impl], scenario: str, timeout: float,
            client_opts: list[str] = (), agent_opts: list[str] = (), verbose: bool = False) -> Run:  # type: ignore[assignment]
    cmd = [*impls[run.client].client, *client_opts, scenario, str(run.n), "--",
           *impls[run.agent].agent, *agent_opts]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, env=CHILD_ENV)
        run.returncode = proc.returncode
        lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("{")]
        try:
            run.result = json.loads(lines[-1]) if lines else {"ok": False, "error": "no JSON line printed"}
        except json.JSONDecodeError as exc:
            run.result = {"ok": False, "error": f"bad JSON line: {exc}"}
        run.stderr_tail = "\n".join(proc.stderr.splitlines()[-8:])
    except subprocess.TimeoutExpired as exc:
        run.result = {"ok": False, "error": f"timed out after {timeout:.0f} s"}
        run.stderr_tail = "\n".join((exc.stderr or b"").decode("utf-8", "replace").splitlines()[-8:]) \
            if isinstance(exc.stderr, bytes) else ""
    run.elapsed = time.perf_counter() - t0
    if verbose:
        status = "ok" if run.ok else ("FAIL" if run.expect_ok else "failed (expected)")
        print(f"  {run.check:<12} {run.pair:<16} n={run.n:<9} {status:<18} {run.elapsed:6.2f}s "
              f"{_brief(run.result)}", file=sys.stderr, flush=True)
    return run


def _brief(result: dict[str, Any]) -> str:
    if not result.get("ok"):
        return str(result.get("error", ""))[:160]
    for key in ("rate", "wall_s"):
        if key in result:
            return f"{key}={result[key]}"
    return ""


# -- the plan --------------------------------------------------------------------------------------


def pairs(impls: dict[str, Impl]) -> list[tuple[str, str]]:
    avail = [name for name, impl in impls.items() if impl.missing is None]
    out = [(name, name) for name in avail]
    out += [("acplink", peer) for peer in avail if peer != "acplink"]
    out += [(peer, "acplink") for peer in avail if peer != "acplink"]
    return out


@dataclass
class Job:
    run: Run
    scenario: str
    client_opts: list[str] = field(default_factory=list)
    agent_opts: list[str] = field(default_factory=list)


def plan(impls: dict[str, Impl], scenarios: list[str], rounds: int, quick: bool, extras: bool) -> list[Job]:
    ns = QUICK_N if quick else DEFAULT_N
    mode = "quick" if quick else "full"
    prs = pairs(impls)
    jobs: list[Job] = []
    for r in range(rounds):
        rotated = prs[r % len(prs):] + prs[:r % len(prs)]
        for scenario in scenarios:
            for client, agent in rotated:
                jobs.append(Job(Run(scenario, client, agent, ns[scenario]), scenario))
        if extras:  # acplink's own check, every round: the figures are medians too
            jobs.append(Job(Run("mixed", "acplink", "acplink", ns["mixed"]), "mixed"))
    if not extras:
        return jobs
    avail = [name for name, impl in impls.items() if impl.missing is None]
    # over the limit: acplink's agent with a lowered limit must answer a clean error, any client
    n, limit = OVERLIMIT[mode]
    for client in avail:
        jobs.append(Job(Run("overlimit", client, "acplink", n, expect_ok=False), "big",
                        agent_opts=["--max-message-size", str(limit)]))
    jobs.append(Job(Run("overlimit-up", "acplink", "acplink", n, expect_ok=False), "bigup",
                    client_opts=["--max-message-size", str(limit)]))
    # memory across repeated floods in one agent process (acplink's client drives each agent)
    n, repeat = MEMORY[mode]
    for agent in (["acplink"] if quick else avail):
        jobs.append(Job(Run("memory", "acplink", agent, n), "flood", client_opts=["--repeat", str(repeat)]))
    if not quick:
        # a 40 MB message (acplink's default limit is 64 MiB; the TS SDK caps lines at 32 MiB)
        for client, agent in prs:
            expect = "official-ts" not in (client, agent)
            jobs.append(Job(Run("big40", client, agent, BIG40_N, expect_ok=expect), "big"))
    return jobs


# -- the report ------------------------------------------------------------------------------------

METRICS: list[tuple[str, str, str, str, float]] = [
    # (label, check, result key, unit, scale); "higher" is better for rates, lower for times
    ("flood notif/s", "flood", "rate", "rate", 1),
    ("rtt round trips/s", "rtt", "rate", "rate", 1),
    ("rtt p50 µs (agent)", "rtt", "p50_us", "time", 1),
    ("rtt p99 µs (agent)", "rtt", "p99_us", "time", 1),
    ("concurrent req/s", "concurrent", "rate", "rate", 1),
    ("big 20 MB s", "big", "wall_s", "time", 1),
    ("bigup 20 MB s", "bigup", "wall_s", "time", 1),
    ("startup ms", "startup", "wall_s", "time", 1000),
    ("agent idle RSS MiB", "startup", "agent_idle_maxrss_kb", "time", 1 / 1024),
    ("flood agent RSS MiB", "flood", "agent_maxrss_kb", "time", 1 / 1024),
    ("flood client RSS MiB", "flood", "client_maxrss_kb", "time", 1 / 1024),
]


def medians(runs: list[Run]) -> dict[tuple[str, str, str], float]:
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for run in runs:
        if not run.ok:
            continue
        for key, value in run.result.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                values[(run.check, run.pair, key)].append(float(value))
    return {k: statistics.median(v) for k, v in values.items()}


def fmt(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}"


def table(runs: list[Run], impls: dict[str, Impl]) -> tuple[str, dict[tuple[str, str, str], float]]:
    med = medians(runs)
    prs = [f"{SHORT[c]}→{SHORT[a]}" for c, a in pairs(impls)]
    peers = [name for name, impl in impls.items() if impl.missing is None and name != "acplink"]
    header = ["scenario", *prs, *[f"acplink/{SHORT[p]}" for p in peers]]
    rows = [header]
    for label, check, key, _unit, scale in METRICS:
        row = [label]
        for pair in prs:
            v = med.get((check, pair, key))
            row.append(fmt(v * scale) if v is not None else "—")
        mine = med.get((check, "acplink→acplink", key))
        for peer in peers:
            theirs = med.get((check, f"{SHORT[peer]}→{SHORT[peer]}", key))
            row.append(f"{mine / theirs:.2f}x" if mine and theirs else "—")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(widths[j]) if j == 0 else c.rjust(widths[j]) for j, c in enumerate(r)))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines), med


@dataclass
class Target:
    name: str
    ok: bool | None  # None: could not be evaluated (a peer missing, a run failed)
    detail: str


def targets(runs: list[Run], med: dict[tuple[str, str, str], float], impls: dict[str, Impl]) -> list[Target]:
    out: list[Target] = []

    def m(check: str, pair: str, key: str) -> float | None:
        return med.get((check, pair, key))

    def ratio(name: str, check: str, key: str, peer: str, want: float, higher: bool) -> None:
        mine, theirs = m(check, "acplink→acplink", key), m(check, f"{peer}→{peer}", key)
        if mine is None or theirs is None:
            out.append(Target(name, None, "not measured"))
            return
        r = mine / theirs
        ok = r >= want if higher else r <= want
        out.append(Target(name, ok, f"{r:.2f}x ({fmt(mine)} vs {fmt(theirs)}; want {'≥' if higher else '≤'} {want}x)"))

    have = {SHORT[n] for n, i in impls.items() if i.missing is None}
    for peer, want in (("py", 4.0), ("ts", 3.0)):
        if peer in have:
            ratio(f"flood ≥ {want}x {peer}", "flood", "rate", peer, want, True)
    for peer, want in (("py", 1.3), ("ts", 1.1)):
        if peer in have:
            ratio(f"rtt ≥ {want}x {peer}", "rtt", "rate", peer, want, True)
    p50, p99 = m("rtt", "acplink→acplink", "p50_us"), m("rtt", "acplink→acplink", "p99_us")
    if p50 and p99:
        out.append(Target("rtt p99 ≤ 2x p50", p99 <= 2 * p50, f"p50 {p50:.1f} µs, p99 {p99:.1f} µs ({p99 / p50:.2f}x)"))
    for peer in ("py", "ts"):
        if peer in have:
            ratio(f"concurrent ≥ 3x {peer}", "concurrent", "rate", peer, 3.0, True)
    for check in ("big", "bigup"):
        mine = m(check, "acplink→acplink", "wall_s")
        peers = [v for p in ("py", "ts") if p in have and (v := m(check, f"{p}→{p}", "wall_s")) is not None]
        if mine is not None and peers:
            best = min(peers)
            out.append(Target(f"{check} 20 MB ≤ 1.2x faster peer", mine <= 1.2 * best,
                              f"{mine:.3f} s vs {best:.3f} s ({mine / best:.2f}x)"))
    if "py" in have:
        ratio("startup ≤ 0.35x py", "startup", "wall_s", "py", 0.35, False)
    if "ts" in have:
        ratio("startup < ts", "startup", "wall_s", "ts", 1.0, False)
    if "floor" in have:  # issue 24: against the raw asyncio + orjson floor, in the same run
        ratio("flood ≥ 0.75x floor", "flood", "rate", "floor", 0.75, True)
        ratio("concurrent ≥ 0.85x floor", "concurrent", "rate", "floor", 0.85, True)
        ratio("startup ≤ 1.6x floor's time", "startup", "wall_s", "floor", 1.6, False)
    idle = [r.result.get("agent_idle_maxrss_kb") for r in runs if r.check == "startup" and r.ok]
    mine_idle = m("startup", "acplink→acplink", "agent_idle_maxrss_kb")
    py_idle = m("startup", "py→py", "agent_idle_maxrss_kb")
    if mine_idle and py_idle and idle:
        out.append(Target("agent idle RSS ≤ official py", mine_idle <= py_idle,
                          f"{mine_idle / 1024:.1f} MiB vs {py_idle / 1024:.1f} MiB"))
    floor_idle = m("startup", "floor→floor", "agent_idle_maxrss_kb")
    if mine_idle and floor_idle:
        out.append(Target(f"agent idle RSS ≤ {IDLE_RSS_MIB} MiB (floor reported)", mine_idle <= IDLE_RSS_MIB * 1024,
                          f"{mine_idle / 1024:.1f} MiB; floor {floor_idle / 1024:.1f} MiB "
                          f"(+{(mine_idle - floor_idle) / 1024:.1f} MiB)"))
    for run in runs:
        if run.check == "memory" and run.agent == "acplink":
            series = run.result.get("agent_rss_series_kb") or []
            peak = run.result.get("agent_maxrss_series_kb") or []
            if run.ok and len(series) >= 2 and all(isinstance(v, int) for v in series + peak):
                growth = max(series[1:]) - series[0]
                peak_growth = peak[-1] - peak[0]
                ok = growth <= 2048 and peak_growth <= 2048
                out.append(Target("no RSS growth over repeated floods", ok,
                                  f"RSS after each flood {[round(v / 1024, 1) for v in series]} MiB; "
                                  f"peak +{peak_growth / 1024:.1f} MiB"))
            else:
                out.append(Target("no RSS growth over repeated floods", False, str(run.result.get("error"))))
    mixed = [r for r in runs if r.check == "mixed"]
    if mixed:
        bad = [r for r in mixed if not r.ok]
        out.append(Target("mixed: notifications in order with concurrent requests", not bad,
                          f"{len(mixed) - len(bad)}/{len(mixed)} runs ok"
                          + (f"; {bad[0].result.get('error')}" if bad else "")))
    big40 = [r for r in runs if r.check == "big40" and r.agent == "acplink" and r.client == "acplink"]
    if big40:
        out.append(Target("40 MB message works", all(r.ok for r in big40),
                          "; ".join(f"{r.pair}: {'ok ' + str(r.result.get('wall_s')) + ' s' if r.ok else r.result.get('error')}"
                                    for r in runs if r.check == "big40")))
    over = [r for r in runs if r.check.startswith("overlimit")]
    if over:
        clean = [r for r in over if _clean_error(r)]
        out.append(Target("over-limit gives a clean error", len(clean) == len(over),
                          "; ".join(f"{r.pair} {r.check}: {_over_detail(r)}" for r in over)))
    return out


def _over_detail(run: Run) -> str:
    if run.check == "overlimit-up" and "scenario check failed (updates=0" in str(run.result.get("error", "")):
        return f"the notification was dropped (0 received) and the turn ended ({run.result.get('stop_reason')})"
    return str(run.result.get("error"))[:120]


def _clean_error(run: Run) -> bool:
    """Failed, said why (the size limit), exited by itself in good time."""
    err = str(run.result.get("error", ""))
    return (run.result.get("ok") is False and run.returncode == 1 and run.elapsed < 30
            and ("exceeds the limit" in err or "scenario check failed (updates=0" in err))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke run: small N, 1 round, no timing targets")
    ap.add_argument("--rounds", type=int, help="rounds (default 3; 1 with --quick)")
    ap.add_argument("--scenarios", help=f"comma-separated subset of {','.join(SCENARIOS)}")
    ap.add_argument("--impls", help="comma-separated subset of acplink,official-py,official-ts,floor")
    ap.add_argument("--no-extras", action="store_true", help="skip the mixed / limit / memory checks")
    ap.add_argument("--jobs", type=int, help="runs in parallel (default 1; 3 with --quick: no timing then)")
    ap.add_argument("--timeout", type=float, help="seconds per client run (default 300; 60 with --quick)")
    ap.add_argument("--python", default=sys.executable, help="Python that runs acplink's programs")
    ap.add_argument("--json", help="write every run's result to this file")
    ap.add_argument("--check-targets", action="store_true", help="exit 1 when a target is missed")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each run as it finishes")
    args = ap.parse_args()

    rounds = args.rounds or (1 if args.quick else 3)
    jobs_n = args.jobs or (3 if args.quick else 1)
    timeout = args.timeout or (60.0 if args.quick else 300.0)
    scenarios = args.scenarios.split(",") if args.scenarios else list(SCENARIOS)
    impls = implementations(args.python)
    if args.impls:
        wanted = set(args.impls.split(","))
        unknown = wanted - set(impls)
        if unknown or "acplink" not in wanted:
            ap.error(f"--impls must include acplink; unknown: {sorted(unknown)}")
        for name, impl in impls.items():
            if name not in wanted and impl.missing is None:
                impl.missing = "not selected (--impls)"
    for name, impl in impls.items():
        if impl.missing:
            print(f"skipping {name}: {impl.missing}", file=sys.stderr)

    todo = plan(impls, scenarios, rounds, args.quick, not args.no_extras)
    print(f"{len(todo)} runs, {rounds} round(s), {jobs_n} at a time"
          f"{' (quick: small N, figures not meaningful)' if args.quick else ''}", file=sys.stderr, flush=True)
    # warm-up, not recorded: writes bytecode caches, warms the page cache
    for name in impls:
        if impls[name].missing is None:
            run_one(Run("warmup", name, name, 1), impls, "startup", timeout)
    t0 = time.perf_counter()

    def go(job: Job) -> Run:
        return run_one(job.run, impls, job.scenario, timeout, job.client_opts, job.agent_opts, args.verbose)

    if jobs_n > 1:
        with ThreadPoolExecutor(jobs_n) as pool:
            runs = list(pool.map(go, todo))
    else:
        runs = [go(job) for job in todo]
    elapsed = time.perf_counter() - t0

    if args.json:
        Path(args.json).write_text(json.dumps([{
            "check": r.check, "client": r.client, "agent": r.agent, "pair": r.pair, "n": r.n,
            "ok": r.ok, "expect_ok": r.expect_ok, "returncode": r.returncode, "elapsed_s": round(r.elapsed, 3),
            "result": r.result, "stderr_tail": r.stderr_tail} for r in runs], indent=1) + "\n")

    failed = [r for r in runs if r.expect_ok and not r.ok]
    unclean = [r for r in runs if r.check.startswith("overlimit") and not _clean_error(r)]
    print(f"\n{len(runs)} runs in {elapsed:.1f} s; {len(runs) - len(failed)} ok"
          + (f", {len(failed)} FAILED" if failed else ""))
    for r in failed + unclean:
        print(f"  FAIL {r.check} {r.pair} n={r.n}: {r.result.get('error')}")
        if r.stderr_tail:
            print("    " + r.stderr_tail.replace("\n", "\n    "))

    if args.quick:
        oks: dict[str, list[bool]] = defaultdict(list)
        for r in runs:
            oks[r.pair].append(r.ok == r.expect_ok)
        for pair, vals in oks.items():
            print(f"  {pair:<18} {sum(vals)}/{len(vals)} ok")
        return 1 if failed or unclean else 0

    text, med = table(runs, impls)
    print(f"\nmedians over {rounds} round(s) (pairs are client→agent; ratios acplink→acplink / peer→peer)\n")
    print(text)
    results = targets(runs, med, impls)
    print("\ntargets")
    for t in results:
        mark = "PASS" if t.ok else ("n/a " if t.ok is None else "FAIL")
        print(f"  {mark}  {t.name:<58} {t.detail}")
    missed = [t for t in results if t.ok is False]
    return 1 if failed or unclean or (args.check_targets and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
