"""``acplink inspect FILE [--json]``: a recorded trace as a readable timeline, with findings."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

__all__ = ["add_parser", "run"]

HELP = "render a trace recorded by `acplink record` as a timeline, with findings"

EPILOG = """examples:
  acplink inspect trace.jsonl
  acplink inspect --json trace.jsonl | jq .findings"""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser("inspect", help=HELP, description=HELP,
                                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="the trace (JSON lines)")
    p.add_argument("--json", action="store_true", help="print the timeline and findings as JSON")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..tools.inspect import inspect_trace

    try:
        data = inspect_trace(args.file, as_json=args.json)
    except (OSError, ValueError) as exc:
        if args.debug:
            traceback.print_exc()
        print(f"acplink inspect: error: {exc}", file=sys.stderr)
        return 2
    if data is not None:
        json.dump(data, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    return 0
