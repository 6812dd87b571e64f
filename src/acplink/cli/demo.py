"""``acplink demo-agent``: serve the built-in demo agent on stdio (for editors)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .otel import add_otel_option

HELP = "serve the built-in demo agent on stdio (no LLM, no API key)"
EXAMPLES = """examples:
  acplink demo-agent                       # an editor spawns this
  acplink prompt "help"                    # talk to it from the terminal
Zed (settings.json):
  "agent_servers": {"acplink demo": {"command": "acplink", "args": ["demo-agent"]}}"""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo-agent", help=HELP, description=HELP, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--store", metavar="DIR", help="where sessions are kept: its sessions.sqlite3 (default: "
                                                   "$ACPLINK_DEMO_STORE or ~/.local/state/acplink/demo)")
    p.add_argument("--delay", type=float, default=0.02, help="seconds between streamed chunks (default 0.02)")
    p.add_argument("--legacy-models", action="store_true",
                   help="also offer the models the old way (a `models` field in session results, "
                        "session/set_model); by default they are a config option of category `model`")
    p.add_argument("--debug", action="store_true", help="log protocol details to stderr")
    add_otel_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..agent.serve import run_agent
    from ..demo.agent import DemoStore, create_demo_agent
    from ..errors import StoreError
    from .common import fail

    if args.store:
        os.environ["ACPLINK_DEMO_STORE"] = args.store
    try:  # (a corrupt, foreign or newer store: one line naming the file, before serving)
        store = DemoStore(Path(args.store) if args.store else None)
    except StoreError as exc:
        return fail(str(exc))
    run_agent(create_demo_agent(store, delay=args.delay, legacy_models=args.legacy_models), debug=args.debug)
    return 0
