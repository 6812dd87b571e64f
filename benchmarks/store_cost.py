#!/usr/bin/env python3
"""What keeping sessions costs: ``flood`` and ``rtt`` with a ``SqliteStore`` (and, with
``--postgres``, a ``PostgresStore``) against the in-memory default, and reopening a long session.

    python benchmarks/store_cost.py                  # 5 rounds, flood 20000, rtt 5000, 10,000-update session
    python benchmarks/store_cost.py --rounds 3 --flood 50000 --json out.json
    python benchmarks/store_cost.py --quick          # a smoke run (tests)
    python benchmarks/store_cost.py --postgres       # PostgresStore too: a throwaway cluster on loopback
    python benchmarks/store_cost.py --postgres --serve-app ws   # the agent served in process by
                                                     # `acplink serve --app`, the client over WebSocket
    python benchmarks/store_cost.py --postgres --serve-app ws --python /other/tree/.venv/bin/python

``flood`` / ``rtt``: benchmarks/scenario_client.py against benchmarks/scenario_agent.py over
real pipes, the agent given ``ACPLINK_BENCH_STORE`` (a fresh SQLite file in a temporary
directory) or not; the stores alternate within each round, and the median of the rounds is
reported (``--postgres``: a new database of a throwaway local cluster per run, fsync on, over
TCP loopback: tests/pg_cluster.py) (flood: notifications/s, rtt: agent→client requests answered/s; the client's rate,
the agent process's start-up excluded). With the store, every chunk of the flood is journaled
and committed before the transport writes it (docs/sessions.md).

``--serve-app ws|http``: the same scenarios with the agent served in process by ``acplink serve
--app scenario_agent:app`` (a new server per run, on loopback; the app's store from
``ACPLINK_BENCH_STORE``) and the client over WebSocket or streamable HTTP; the server's start-up
is excluded (the client connects once it printed its URL). ``--python``: the interpreter (so the
acplink) that runs the server, the agent and the client: another tree's virtualenv measures that
tree's code with this script (before / after a change). ``reopen`` is skipped with either.

``reopen``: a session of N updates (streamed chunks in turns of 100, plus a tool call per turn)
written through a SqliteStore-backed agent in memory; then, in a new store on the file, the
time of ``session/load`` (history replayed as updates, until its response reaches the client)
and of ``session/resume`` (v1: no replay) by a client over in-memory transports. Target: under 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def run_scenario(scenario: str, n: int, store: str | None, *, python: str = sys.executable,
                 serve_app: str | None = None) -> dict[str, Any]:
    """One run of ``scenario_client.py SCENARIO N`` against the scenario agent, its store
    ``store`` (None: in memory): a subprocess over pipes, or (``serve_app``: ``ws`` or
    ``http``) the app served in process by ``acplink serve --app``."""
    env = {k: v for k, v in os.environ.items() if k not in ("ACPLINK_BENCH_STORE", "PYTHONPATH")}
    if store is not None:
        env["ACPLINK_BENCH_STORE"] = store
    client = [python, str(BENCH / "scenario_client.py"), scenario, str(n), "--"]
    if serve_app is None:
        proc = subprocess.run([*client, python, str(BENCH / "scenario_agent.py")], capture_output=True, text=True,
                              env=env, timeout=600)
    else:
        server = subprocess.Popen([python, "-m", "acplink", "serve", "--port", "0", f"--{serve_app}", "--app",
                                   "scenario_agent:app"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**env, "PYTHONPATH": str(BENCH)}, cwd=str(BENCH), start_new_session=True)
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            if "://" not in url:
                raise SystemExit(f"acplink serve --app did not start: {server.communicate(timeout=10)[1][-500:]}")
            proc = subprocess.run([*client, url], capture_output=True, text=True, env=env, timeout=600)
        finally:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGTERM)
            try:
                server.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.communicate()
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    if not out.get("ok"):
        raise SystemExit(f"{scenario} with store {store}: {out.get('error') or proc.stderr[-500:]}")
    return out


async def reopen(updates: int, folder: Path) -> dict[str, float]:
    from acplink import AgentApp, PromptContext, SqliteStore, connect

    path = folder / "reopen.sqlite3"

    def build() -> AgentApp:
        app = AgentApp("reopen", store=SqliteStore(path))

        @app.prompt
        async def prompt(ctx: PromptContext) -> None:
            call = await ctx.start_tool_call("work", status="in_progress")
            for i in range(int(ctx.text)):
                await ctx.send_text(f"chunk {i} ")
            await call.complete()

        return app

    app = build()
    per_turn = 100
    async with connect(app) as client:
        session = await client.new_session(cwd=str(folder))
        sent = 0
        while sent < updates:
            await session.prompt(str(per_turn - 2)).result()  # (+ the tool call and its update)
            sent += per_turn
        sid = session.session_id
    app.sessions.close()  # type: ignore[attr-defined]
    out: dict[str, float] = {"updates": float(sent)}
    for method in ("load", "resume"):
        app = build()
        async with connect(app) as client:
            t0 = time.perf_counter()
            if method == "load":
                loaded = await client.load_session(sid, cwd=str(folder))
                out["replayed_updates"] = float(loaded.state.updates_seen)
            else:
                await client.resume_session(sid, cwd=str(folder))
            out[f"{method}_s"] = round(time.perf_counter() - t0, 4)
        app.sessions.close()  # type: ignore[attr-defined]
    return out


def _cluster() -> Any:
    sys.path.insert(0, str(BENCH.parent / "tests"))
    import pg_cluster

    cluster = pg_cluster.start(fsync=True)
    if isinstance(cluster, str):
        raise SystemExit(f"--postgres: {cluster}")
    return cluster


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--flood", type=int, default=20000)
    ap.add_argument("--rtt", type=int, default=5000, help="0: no rtt")
    ap.add_argument("--updates", type=int, default=10000, help="updates of the reopened session")
    ap.add_argument("--quick", action="store_true", help="one round, small counts")
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    ap.add_argument("--postgres", action="store_true",
                    help="PostgresStore too (a throwaway cluster: Debian's postgresql, tests/pg_cluster.py)")
    ap.add_argument("--serve-app", choices=("ws", "http"),
                    help="serve the agent in process (acplink serve --app), the client over WebSocket or HTTP")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter (and so the acplink) of the server, agent and client processes")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.flood, args.rtt, args.updates = 1, 300, 50 if args.rtt else 0, 300
    kinds = ("memory", "sqlite", *(("postgres",) if args.postgres else ()))
    rates: dict[str, dict[str, list[float]]] = {s: {k: [] for k in kinds} for s in ("flood", "rtt")}
    cluster = _cluster() if args.postgres else None
    try:
        with tempfile.TemporaryDirectory(prefix="acplink-store-cost-") as tmp:
            folder = Path(tmp)
            for r in range(args.rounds):
                for scenario, n in (("flood", args.flood), ("rtt", args.rtt)):
                    if n <= 0:  # (--rtt 0: flood only)
                        continue
                    order = kinds if r % 2 == 0 else kinds[::-1]
                    for kind in order:
                        store = (str(folder / f"{scenario}-{r}.sqlite3") if kind == "sqlite"
                                 else cluster.create_database(f"{scenario}_{r}") if kind == "postgres" and cluster
                                 else None)
                        done = run_scenario(scenario, n, store, python=args.python, serve_app=args.serve_app)
                        rates[scenario][kind].append(float(done["rate"]))
            local = args.serve_app is None and args.python == sys.executable
            reopened = asyncio.run(reopen(args.updates, folder)) if local else None
    finally:
        if cluster is not None:
            cluster.remove()
    figures: dict[str, Any] = {"rounds": args.rounds, "flood_n": args.flood, "rtt_n": args.rtt, "reopen": reopened,
                               "serve_app": args.serve_app, "python": args.python}
    how = f"served in process by acplink serve --app, over {args.serve_app}" if args.serve_app else "over pipes"
    print(f"median over {args.rounds} round(s), {how}; higher is better")
    names = {"sqlite": "SqliteStore", "postgres": "PostgresStore"}
    for scenario in ("flood", "rtt"):
        if not rates[scenario]["memory"]:
            continue
        mem = statistics.median(rates[scenario]["memory"])
        figures[scenario] = {"memory": mem}
        unit = "notifications/s" if scenario == "flood" else "requests/s"
        line = f"  {scenario:6} MemoryStore {mem:>10,.0f}"
        for kind in kinds[1:]:
            rate = statistics.median(rates[scenario][kind])
            figures[scenario][kind] = rate
            figures[scenario]["ratio" if kind == "sqlite" else f"ratio_{kind}"] = round(rate / mem, 3)
            line += f"  {names[kind]} {rate:>10,.0f} ({rate / mem:.0%})"
        print(f"{line} {unit}")
    if reopened is not None:
        print(f"  reopen a session of {reopened['updates']:,.0f} updates: session/load {reopened['load_s']:.3f} s "
              f"({reopened['replayed_updates']:,.0f} updates replayed), session/resume {reopened['resume_s']:.3f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
