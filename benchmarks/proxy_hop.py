#!/usr/bin/env python3
"""The cost of one proxy hop: the ``flood`` and ``rtt`` scenarios against acplink's scenario
agent directly, and behind ``acplink conduct`` with one pass-through proxy.

    python benchmarks/proxy_hop.py                  # flood 20000, rtt 5000, 3 rounds
    python benchmarks/proxy_hop.py --rounds 5 --json out.json
    python benchmarks/proxy_hop.py --quick          # a smoke run (small N, one round)
    python benchmarks/proxy_hop.py --pin 0          # every process on CPU 0

Each run is ``benchmarks/scenario_client.py SCENARIO N -- CHAIN`` (a fresh process tree), where
CHAIN is, per configuration:

* ``direct``: ``python benchmarks/scenario_agent.py``;
* ``conductor``: ``acplink conduct -- <agent>`` (no proxy: the conductor's own cost, one
  extra process and two extra pipe crossings);
* ``builtin``: ``acplink conduct --proxy acplink:passthrough -- <agent>`` (the proxy runs in
  the conductor's process: one extra process, two extra message crossings, in memory);
* ``process``: ``acplink conduct --proxy '<python this --proxy>' -- <agent>`` (a pass-through
  ``ProxyApp`` in its own process: two extra processes, four extra pipe crossings).

Figures: ``flood`` session/update notifications per second as the client receives them;
``rtt`` fs/read_text_file round trips per second made one at a time by the agent (each
crossing every hop twice), and the agent's p50 in µs. The rounds are round-robin (each runs
every configuration once); a rate is the median of the rounds, a ratio to ``direct`` the
median of each round's own ratio (the single ratios in brackets). ``--pin 0`` runs every
process on one CPU: no wake-up crosses CPUs, so the ratio is decided by the instructions each
process spends. The conductor's start-up is outside the timings (the client times the prompt
alone). Timings are only comparable within one run on one machine.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLIENT = [sys.executable, str(HERE / "scenario_client.py")]
AGENT = [sys.executable, str(HERE / "scenario_agent.py")]
CONDUCT = [sys.executable, "-m", "acplink", "conduct"]


def chains() -> dict[str, list[str]]:
    own_proxy = shlex.join([sys.executable, str(Path(__file__).resolve()), "--proxy"])
    return {
        "direct": AGENT,
        "conductor": [*CONDUCT, "--", *AGENT],
        "builtin": [*CONDUCT, "--proxy", "acplink:passthrough", "--", *AGENT],
        "process": [*CONDUCT, "--proxy", own_proxy, "--", *AGENT],
    }


def run_one(scenario: str, n: int, chain: list[str], pin: list[str] | None = None) -> dict[str, Any]:
    """One run; ``pin``: a prefix the whole process tree runs under (``taskset -c CPUS``)."""
    proc = subprocess.run([*(pin or []), *CLIENT, scenario, str(n), "--", *chain], capture_output=True, text=True,
                          timeout=900)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"ok": False, "error": f"no result (exit {proc.returncode}): {proc.stderr[-500:]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proxy", action="store_true", help=argparse.SUPPRESS)  # (serve a pass-through proxy)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--flood", type=int, default=20000)
    parser.add_argument("--rtt", type=int, default=5000)
    parser.add_argument("--quick", action="store_true", help="small N, one round (a smoke run)")
    parser.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    parser.add_argument("--pin", metavar="CPUS",
                        help="run every process (the client and every process of the chain) on these CPUs "
                             "(taskset -c CPUS; e.g. 0: one CPU, no cross-CPU wake-ups, the instructions decide)")
    parser.add_argument("--configs", default="direct,conductor,builtin,process",
                        help="the configurations to run, comma-separated (direct is always run: the ratios' base)")
    args = parser.parse_args()
    if args.proxy:
        from acplink import ProxyApp

        ProxyApp("bench-passthrough").run()
        return 0
    if args.quick:
        args.rounds, args.flood, args.rtt = 1, 500, 100
    wanted = {"direct", *args.configs.split(",")}
    configs = {name: chain for name, chain in chains().items() if name in wanted}
    pin = ["taskset", "-c", args.pin] if args.pin else []
    # Round-robin: each round runs every configuration once, so a machine whose speed drifts
    # shifts all of them alike; a ratio is the median of the rounds' own ratios to direct.
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for scenario, n in (("flood", args.flood), ("rtt", args.rtt)):
            for name, chain in configs.items():
                runs.setdefault((name, scenario), []).append(run_one(scenario, n, chain, pin))
    figures: dict[str, dict[str, Any]] = {}
    ok = True
    for name in configs:
        row: dict[str, Any] = {}
        for scenario in ("flood", "rtt"):
            these = runs[(name, scenario)]
            bad = [r for r in these if not r.get("ok")]
            if bad:
                ok = False
                row[scenario] = {"error": bad[0].get("error")}
                continue
            row[scenario] = {"rate": statistics.median(r["rate"] for r in these),
                             "rates": [r["rate"] for r in these]}
            if scenario == "rtt":
                p50 = [r["p50_us"] for r in these if r.get("p50_us") is not None]
                row[scenario]["p50_us"] = statistics.median(p50) if p50 else None
        figures[name] = row
    direct = figures["direct"]
    for row in figures.values():
        for scenario in ("flood", "rtt"):
            mine, base = row.get(scenario, {}), direct.get(scenario, {})
            if "rates" in mine and "rates" in base:
                ratios = [a / b for a, b in zip(mine["rates"], base["rates"], strict=True)]
                mine["ratios"] = [round(r, 3) for r in ratios]
                mine["vs_direct"] = round(statistics.median(ratios), 3)
    for name, row in figures.items():
        cells = []
        for scenario in ("flood", "rtt"):
            cell = row.get(scenario, {})
            if "error" in cell:
                cells.append(f"{scenario}: ERROR {cell['error']}")
            else:
                extra = f", p50 {cell['p50_us']:.0f} µs" if cell.get("p50_us") is not None else ""
                spread = ""
                if len(cell.get("ratios", [])) > 1 and name != "direct":
                    spread = " [" + " ".join(f"{r:.0%}" for r in cell["ratios"]) + "]"
                cells.append(f"{scenario} {cell['rate']:.0f}/s ({cell.get('vs_direct', 1):.0%} of direct{spread}{extra})")
        print(f"{name:9} " + "; ".join(cells))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
