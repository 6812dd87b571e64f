"""``acplink check-client [options] -- CLIENT_CMD ... {agent} ...``: the conformance checker for clients."""

from __future__ import annotations

import argparse
import asyncio
import os
from typing import Any

__all__ = ["add_parser", "run"]

HELP = "check a client's conformance: it launches acplink's probe agent, which exercises it within a turn"
DESCRIPTION = """Runs the client command with {agent} replaced by the probe agent's command line. The client
launches the probe and sends any prompt; within that turn the probe sends every session/update
kind, a tool call, a permission request, fs and terminal calls (when the client advertises
them), $/cancel_request, unknown methods, update kinds, fields and _meta, and judges the
answers. {agent} as the last argument becomes the probe's words; anywhere else (e.g.
--agent '{agent}' exec ...) it becomes one word, the shell-quoted command line."""

EPILOG = """examples:
  acplink check-client -- acplink prompt --allow "probe" -- {agent}
  acplink check-client --json -- acpx --agent '{agent}' exec probe
exit status: 0 conformant, 1 a "must" requirement failed (with --strict: or a "should"), 2 the
check could not run (the client never launched the probe, exited at once, or sent no prompt)."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    from .common import positive_seconds

    p: argparse.ArgumentParser = subparsers.add_parser("check-client", help=HELP, description=DESCRIPTION,
                                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--strict", action="store_true", help='fail (exit 1) on "should" failures too')
    p.add_argument("--timeout", type=positive_seconds, default=10.0, metavar="S",
                   help="bound of each probe request and of the wait for the prompt (default 10)")
    p.add_argument("--launch-timeout", type=positive_seconds, default=30.0, metavar="S",
                   help="the client must launch the probe agent within this (default 30)")
    p.add_argument("--cwd", default=None, help="where the client runs (default: a fresh temporary directory)")
    p.add_argument("--verbose", "-v", action="store_true", help="show the evidence of passed requirements too")
    p.add_argument("client", nargs=argparse.REMAINDER, help="the client command line with {agent}, after `--`")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    from ..conformance.client_checks import ClientDidNotRun, ClientOptions, run_client_check
    from ..errors import AcpError
    from .check import print_report
    from .common import fail

    cmd = list(args.client)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        return fail("no client command given (acplink check-client -- CLIENT_CMD ... {agent} ...)", 2)
    if args.cwd is not None and not os.path.isdir(args.cwd):
        return fail(f"--cwd {args.cwd!r} is not a directory", 2)
    opts = ClientOptions(command=cmd, timeout=args.timeout, launch_timeout=args.launch_timeout,
                         cwd=args.cwd and os.path.abspath(args.cwd), strict=args.strict)
    try:
        report = asyncio.run(run_client_check(opts))
    except (ClientDidNotRun, AcpError, OSError) as exc:
        return fail(str(exc), 2)
    except KeyboardInterrupt:
        return 130
    return print_report(report, args)
