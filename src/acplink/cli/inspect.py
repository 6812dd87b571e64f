"""``acplink inspect FILE [--json]``: a recorded trace as a readable timeline, with findings;
or a session store's sessions and histories (:mod:`.inspect_store`)."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from typing import Any

__all__ = ["add_parser", "run"]

HELP = ("render a trace recorded by `acplink record` as a timeline, with findings, or the hops of an "
        "`acplink conduct --trace` file, or what a session store remembers")

EPILOG = """examples:
  acplink inspect trace.jsonl
  acplink inspect --text trace.jsonl              # with the prompts and replies
  acplink inspect --json trace.jsonl | jq .findings
  acplink inspect chain.jsons                    # a conductor's trace: from → to, method, id, session, error
  acplink inspect sessions.sqlite3               # a session store's sessions (read-only; or a postgresql:// URL)
  acplink inspect sessions.sqlite3 --session ID  # one session's history
A trace whose last line was cut off (a killed recorder) is shown without that line.
exit status: 0 when the trace was read, 2 when it cannot be."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser("inspect", help=HELP, description=HELP,
                                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", metavar="FILE", help="the trace (JSON lines), or a session store (a SQLite file or a "
                                                "postgresql:// URL), opened read-only")
    p.add_argument("--session", metavar="ID", help="a session store: show this session's history")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--text", action="store_true", help="show each turn's prompt, reply and thoughts")
    how.add_argument("--json", action="store_true", help="print the timeline and findings as JSON (texts included)")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from .._extras import require
    from .inspect_store import is_store, show_store

    if is_store(args.file):
        return show_store(args.file, args.session, args.json)
    if args.session is not None:
        from .common import fail

        return fail(f"--session is for a session store; {args.file} is not one (a SQLite file or a "
                    "postgresql:// URL)", 2)

    require("acplink inspect", "cli", "rich")
    from ..tools.hops import is_conductor_trace
    from ..tools.inspect import inspect_trace, load_timeline
    from ..tools.trace import read_trace
    from .common import fail

    try:
        records = read_trace(args.file)
        if is_conductor_trace(records):
            return _show_hops(records, args.json)
        timeline = load_timeline(args.file)
    except (OSError, ValueError) as exc:
        if args.debug:
            traceback.print_exc()
        return fail(str(exc) if isinstance(exc, ValueError) else f"cannot read {args.file!r}: {exc.strerror or exc}", 2)
    if timeline.cut is not None and args.json:
        print(f"acplink: warning: {args.file}: the last line (line {timeline.cut['line']}) is cut off; "
              "it is left out", file=sys.stderr)
    data = inspect_trace(timeline, as_json=args.json, show_text=args.text)
    if data is not None:
        json.dump(data, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    return 0


def _show_hops(records: list[Any], as_json: bool) -> int:
    """A conductor's trace (``acplink conduct --trace``): one line per message per hop."""
    from ..tools.hops import format_hop, hops

    rows = hops(records)
    if as_json:
        json.dump({"hops": [h.as_json() for h in rows]}, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    for hop in rows:
        print(format_hop(hop))
    errors = sum(1 for h in rows if h.error)
    print(f"{len(rows)} hop messages, {errors} error answers")
    return 0
