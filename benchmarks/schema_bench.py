#!/usr/bin/env python3
"""Micro-benchmark of the schema layer: µs per message and import cost.

    .venv/bin/python benchmarks/schema_bench.py                 # acplink only
    .venv/bin/python benchmarks/schema_bench.py --official .bench-venv/bin/python

Measures, for a ``session/update`` ``agent_message_chunk`` notification params dict:

* parse+validate: ``SessionNotification.model_validate(d)``
* dump: ``n.to_json()`` (acplink) / the same pydantic JSON serializer call with the official
  SDK's conventions (``by_alias``, ``exclude_none``) for ``acp.schema.SessionNotification``

and the import cost of ``import acplink.schema`` / ``import acp`` next to ``import pydantic``:
the median over fresh interpreters of the wall-clock time of ``python -c "import X"`` (minus
an empty interpreter) and of ``-X importtime``'s cumulative time for the top-level module.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

PARAMS: dict[str, Any] = {
    "sessionId": "sess_0123456789abcdef",
    "update": {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "Here is the next part of the answer, streamed token by token. "},
    },
}


def per_message(lib: str, number: int, repeat: int) -> dict[str, float]:
    """µs per call of parse+validate and of dump-to-JSON-bytes (best of ``repeat`` runs)."""
    if lib == "acplink":
        from acplink.schema import SessionNotification

        def dump(n: Any) -> bytes:
            return n.to_json()
    else:
        from acp.schema import SessionNotification  # type: ignore[import-not-found,no-redef]

        ser = SessionNotification.__pydantic_serializer__

        def dump(n: Any) -> bytes:
            return ser.to_json(n, by_alias=True, exclude_none=True)

    validate = SessionNotification.model_validate
    n = validate(PARAMS)
    out = dump(n)
    assert json.loads(out)["update"]["content"]["text"] == PARAMS["update"]["content"]["text"]

    def best(fn: Any, arg: Any) -> float:
        runs = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            for _ in range(number):
                fn(arg)
            runs.append((time.perf_counter() - t0) / number * 1e6)
        return min(runs)

    parse_us = best(validate, PARAMS)
    dump_us = best(dump, n)
    return {"parse_us": parse_us, "dump_us": dump_us, "roundtrip_us": parse_us + dump_us, "bytes": len(out)}


def _run(python: str, code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run([python, *flags, "-c", code], capture_output=True, text=True, env=env, check=True)


def import_cost(python: str, module: str, runs: int) -> dict[str, float]:
    """Median ms of a fresh ``import module``: wall clock (minus an empty interpreter) and
    ``-X importtime`` cumulative."""
    wall, empty, cumulative = [], [], []
    top = module.split(".")[0]
    for _ in range(runs):
        t0 = time.perf_counter()
        _run(python, "pass")
        empty.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        _run(python, f"import {module}")
        wall.append(time.perf_counter() - t0)
        err = _run(python, f"import {module}", "-X", "importtime").stderr
        # "import time:   self [us] | cumulative | imported package"; the top-level line comes
        # last for that package; a dotted module is the sum of its own line and its parents'
        total = 0
        for name in {top, module}:
            found = [int(m.group(1)) for m in re.finditer(rf"\|\s*(\d+) \|\s*{re.escape(name)}\s*$", err, re.M)]
            if found:
                total = max(total, found[-1]) if name == top else total + found[-1]
        cumulative.append(total / 1000)
    return {
        "wall_ms": (statistics.median(wall) - statistics.median(empty)) * 1000,
        "importtime_ms": statistics.median(cumulative),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--official", metavar="PYTHON", help="a python with agent-client-protocol installed")
    ap.add_argument("--number", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--import-runs", type=int, default=7)
    ap.add_argument("--inner", choices=["acplink", "acp"], help=argparse.SUPPRESS)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()

    if args.inner:
        print(json.dumps(per_message(args.inner, args.number, args.repeat)))
        return 0

    def inner(python: str, lib: str) -> dict[str, float]:
        out = subprocess.run([python, __file__, "--inner", lib, "--number", str(args.number),
                              "--repeat", str(args.repeat)], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    results: dict[str, Any] = {"python": sys.version.split()[0]}
    results["acplink"] = inner(sys.executable, "acplink")
    results["acplink"].update(import_cost(sys.executable, "acplink.schema", args.import_runs))
    results["pydantic"] = import_cost(sys.executable, "pydantic", args.import_runs)
    if args.official:
        results["official"] = inner(args.official, "acp")
        results["official"].update(import_cost(args.official, "acp", args.import_runs))
        results["official_pydantic"] = import_cost(args.official, "pydantic", args.import_runs)

    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"Python {results['python']}; message: session/update agent_message_chunk "
          f"({results['acplink']['bytes']} bytes of JSON)")
    print(f"{'':28}{'parse+validate':>16}{'dump to JSON':>14}{'import wall':>13}{'-X importtime':>15}")
    rows = [("acplink (acplink.schema)", results["acplink"]), ("pydantic alone", results["pydantic"])]
    if args.official:
        rows += [("official SDK 0.12.1 (acp)", results["official"]),
                 ("pydantic alone (SDK venv)", results["official_pydantic"])]
    for label, r in rows:
        parse = f"{r['parse_us']:.2f} µs" if "parse_us" in r else "-"
        dump = f"{r['dump_us']:.2f} µs" if "dump_us" in r else "-"
        print(f"{label:28}{parse:>16}{dump:>14}{r['wall_ms']:>10.1f} ms{r['importtime_ms']:>12.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
