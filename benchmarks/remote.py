#!/usr/bin/env python3
"""Remote ACP benchmarks: ``flood`` and ``rtt`` over WebSocket and streamable HTTP, acplink's
client and server against the official TypeScript SDK 2.4.0's.

    python benchmarks/remote.py                       # 3 rounds, flood 20000, rtt 2000
    python benchmarks/remote.py --rounds 5 --flood 50000 --rtt 5000 --json out.json
    python benchmarks/remote.py --quick               # smoke run: small N, one round

Servers: ``benchmarks/remote_server.py`` (acplink's scenario agent in the server's process, under
uvicorn as ``acplink serve`` runs it) and ``benchmarks/peers/official_ts/remote_server.mjs`` (the
TS scenario agent in the server's process): the same work on both sides. ``--acplink-server
command`` measures ``acplink serve --port 0 -- python benchmarks/scenario_agent.py`` instead (one
agent process per connection, behind the server's pipes: a process and a pipe hop more per
message). Clients: ``benchmarks/scenario_client.py``
and ``benchmarks/peers/official_ts/scenario_client.mjs``, given the URL after ``--``; both
follow the wire contract of benchmarks/README.md. Pairs: acplink→acplink and ts→ts (the
comparison), acplink→ts and ts→acplink (interoperability; shown too). Rates are medians over
rounds (flood: notifications/s; rtt: agent→client requests answered per second).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
TS_DIR = BENCH / "peers" / "official_ts"
TS_SDK = ROOT / "tests" / "interop" / "js" / "node_modules" / "@agentclientprotocol" / "sdk"
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def servers(python: str, acplink_server: str = "app") -> dict[str, list[str]]:
    if acplink_server == "app":  # the scenario agent in the server's process, as the TS server has it
        out = {"acplink": [python, str(BENCH / "remote_server.py")]}
    else:  # `acplink serve`: one agent process per connection, behind the server's pipes
        out = {"acplink": [python, "-m", "acplink", "serve", "--port", "0", "--max-connections", "64", "--",
                           python, str(BENCH / "scenario_agent.py")]}
    node = shutil.which("node")
    if node is not None and TS_SDK.is_dir():
        out["ts"] = [node, str(TS_DIR / "remote_server.mjs")]
    return out


def clients(python: str) -> dict[str, list[str]]:
    out = {"acplink": [python, str(BENCH / "scenario_client.py")]}
    node = shutil.which("node")
    if node is not None and TS_SDK.is_dir():
        out["ts"] = [node, str(TS_DIR / "scenario_client.mjs")]
    return out


class Server:
    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=CHILD_ENV, start_new_session=True)
        assert self.proc.stdout is not None
        self.urls: dict[str, str] = {}
        for _ in range(2):
            url = self.proc.stdout.readline().strip()
            if "://" not in url:
                self.stop()
                raise SystemExit(f"server {argv} did not start (printed {url!r})")
            self.urls[url.split("://")[0]] = url

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def run_client(argv: list[str], scenario: str, n: int, url: str) -> dict[str, Any]:
    try:
        done = subprocess.run([*argv, scenario, str(n), "--", url], capture_output=True, text=True, timeout=600,
                              env=CHILD_ENV)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": "timeout"}
    try:
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"ok": False, "error": (done.stderr.strip().splitlines() or ["no output"])[-1]}
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--flood", type=int, default=20000)
    ap.add_argument("--rtt", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="flood 300, rtt 50, one round")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--acplink-server", choices=("app", "command"), default="app",
                    help="app: the scenario agent in the server's process (benchmarks/remote_server.py; the "
                         "same work as the TS server, the default); command: `acplink serve -- "
                         "scenario_agent.py` (an agent process per connection: one pipe hop more)")
    ap.add_argument("--json", metavar="FILE")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.flood, args.rtt = 1, 300, 50
    srv_cmds, cli_cmds = servers(args.python, args.acplink_server), clients(args.python)
    if "ts" not in srv_cmds:
        print("official-ts skipped: node or tests/interop/js/node_modules missing ((cd tests/interop/js && npm ci))")
    running = {name: Server(argv) for name, argv in srv_cmds.items()}
    rates: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    raw: list[dict[str, Any]] = []
    failed = 0
    try:
        for rnd in range(args.rounds):
            for scenario, n in (("flood", args.flood), ("rtt", args.rtt)):
                for transport in ("ws", "http"):
                    pairs = [(c, s) for c in cli_cmds for s in running]
                    pairs = pairs[rnd % len(pairs):] + pairs[:rnd % len(pairs)]  # rotate between rounds
                    for client, server in pairs:
                        result = run_client(cli_cmds[client], scenario, n, running[server].urls[transport])
                        pair = f"{client}→{server}"
                        raw.append({"round": rnd, "scenario": scenario, "transport": transport, "pair": pair,
                                    **result})
                        if args.verbose:
                            print(json.dumps(raw[-1]), flush=True)
                        if result.get("ok"):
                            rates[(scenario, transport, pair)].append(float(result["rate"]))
                        else:
                            failed += 1
                            print(f"FAILED {scenario} {transport} {pair}: {result.get('error')}", flush=True)
    finally:
        for server_ in running.values():
            server_.stop()
    pairs_seen = sorted({p for (_, _, p) in rates}, key=lambda p: (p != "acplink→acplink", p != "ts→ts", p))
    print(f"\nmedian rates over {args.rounds} round(s) (flood: notifications/s, rtt: requests/s; higher is better; "
          f"acplink server: {args.acplink_server})")
    print(f"{'scenario':<8} {'transport':<9} " + " ".join(f"{p:>16}" for p in pairs_seen) + "  acplink/ts")
    for scenario in ("flood", "rtt"):
        for transport in ("ws", "http"):
            cells = {p: statistics.median(v) for (sc, tr, p), v in rates.items() if (sc, tr) == (scenario, transport)}
            ratio = (f"{cells['acplink→acplink'] / cells['ts→ts']:.2f}"
                     if "acplink→acplink" in cells and cells.get("ts→ts") else "-")
            print(f"{scenario:<8} {transport:<9} " + " ".join(
                f"{cells[p]:>16.1f}" if p in cells else f"{'-':>16}" for p in pairs_seen) + f"  {ratio:>10}")
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
