"""``acplink check [options] -- AGENT_CMD ...``: the conformance checker for agents."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
import traceback
from typing import Any

from .._tasks import TaskSet

__all__ = ["add_parser", "run"]

DEFAULT_JOBS = max(1, min(8, os.cpu_count() or 1))

HELP = "check an agent's conformance to the ACP spec (each check on a fresh agent process)"
DESCRIPTION = """Spawns the agent afresh for each check and reports every requirement as pass / fail /
skipped, with the evidence. Exit code 0 only when no "must" requirement fails (with --strict,
no "should" either). On a terminal one line shows the progress (checks done / total, what runs
now); it is erased before the report. The agents run with a temporary session store for the
demo agent ($ACPLINK_DEMO_STORE), removed at the end: the checker leaves nothing in yours."""

EPILOG = """examples:
  acplink check -- acplink demo-agent
  acplink check --cancel-prompt "write a long story" --json -- my-agent --acp
  acplink check -k cancel -k 'RPC-00*' -- node agent.mjs
  acplink check --protocol 2 -- acplink demo-agent      # the ACP v2 (draft) requirements
exit status: 0 conformant, 1 a "must" requirement failed (with --strict: or a "should"), 2 the
checks could not run (no agent, or it exited or stayed silent before answering initialize)."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    from .common import add_startup_option, positive_seconds

    p: argparse.ArgumentParser = subparsers.add_parser("check", help=HELP, description=DESCRIPTION,
                                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--strict", action="store_true", help='fail (exit 1) on "should" failures too')
    p.add_argument("--auth-method", metavar="ID", help="authenticate with this method before creating sessions")
    p.add_argument("--cancel-prompt", metavar="TEXT",
                   help="the prompt the cancellation checks send to keep the agent busy")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("-k", dest="patterns", action="append", metavar="PATTERN",
                   help="only the checks whose name or requirement ids match (substring or glob; repeatable)")
    p.add_argument("--timeout", type=positive_seconds, default=15.0, metavar="S", help="bound of each request (default 15)")
    add_startup_option(p)
    p.add_argument("--cancel-bound", type=positive_seconds, default=5.0, metavar="S",
                   help="a cancelled turn must end within this (default 5)")
    p.add_argument("--shutdown-bound", type=positive_seconds, default=3.0, metavar="S",
                   help="the agent must exit within this after stdin closes (default 3)")
    p.add_argument("--jobs", "-j", type=int, default=DEFAULT_JOBS, metavar="N",
                   help=f"checks run at once (default {DEFAULT_JOBS}: the CPU count, at most 8)")
    p.add_argument("--allow-logout", action="store_true",
                   help="run the logout check when the agent advertises it (it may end your login)")
    p.add_argument("--tck-ids", action="store_true",
                   help="print which acplink requirement covers each requirement of the official kit (acp-tck) "
                        "for --protocol (1 or 2), or why none does")
    p.add_argument("--cwd", default=".", help="the session working directory given to the agent")
    p.add_argument("--protocol", type=int, choices=(1, 2), default=1,
                   help="the ACP version to check: 1, or 2 (the v2 draft's requirements; default 1)")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="print each check's results as it ends, and the evidence of passed requirements too")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    from .common import add_registry_options

    add_registry_options(p, agent=True)
    p.add_argument("agent", nargs=argparse.REMAINDER, help="the agent command line, after `--`")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()  # the report's duration is the command's
    from ..conformance.probe import Options
    from ..conformance.runner import AgentDidNotStart, run_checks
    from ..errors import AcpError
    from .common import agent_argv, fail, given_command, is_agent_command

    if args.tck_ids:
        return _print_tck_ids(args.json, args.protocol)
    cmd = given_command(args)
    env: dict[str, str] = {}
    if args.agent_id and cmd:
        return fail("--agent and an agent command (-- AGENT_CMD) exclude each other", 2)
    if args.agent_id and is_agent_command(args.agent_id):  # --agent 'CMD ARGS': a command line
        cmd = agent_argv(args.agent_id)
    elif args.agent_id:
        from .common import one_line, registry_of

        try:
            launch = registry_of(args).launch(args.agent_id)
        except AcpError as exc:
            return fail(one_line(exc), 2)
        cmd, env = launch.command, launch.env
    if not cmd:
        return fail("no agent command given (acplink check -- AGENT_CMD ..., or --agent ID)", 2)
    if not os.path.isdir(args.cwd):
        return fail(f"--cwd {args.cwd!r} is not a directory", 2)
    opts = Options(command=cmd, timeout=args.timeout, cancel_bound=args.cancel_bound,
                   shutdown_bound=args.shutdown_bound, auth_method=args.auth_method, strict=args.strict,
                   allow_logout=args.allow_logout, debug=args.debug,
                   cwd=os.path.abspath(args.cwd), startup_timeout=args.startup_timeout, protocol=args.protocol,
                   env=env)
    if args.cancel_prompt:
        opts.cancel_prompt = args.cancel_prompt
    from .check_progress import CheckProgress

    progress = CheckProgress(stream=args.verbose and not args.json)

    async def checked() -> Any:
        async with TaskSet("check progress") as tasks:
            tasks.spawn(progress.tick_every(1.0))  # the elapsed time moves while a check runs
            return await run_checks(opts, args.patterns, concurrency=max(1, args.jobs),
                                    startup_timeout=args.startup_timeout, started=started, progress=progress)

    try:
        report = asyncio.run(checked())
    except AgentDidNotStart as exc:
        return fail(str(exc), 2)
    except (AcpError, OSError) as exc:
        if args.debug:
            traceback.print_exc()
        return fail(str(exc), 2)
    except KeyboardInterrupt:
        return 130
    finally:
        progress.close()
    return print_report(report, args)


def print_report(report: Any, args: argparse.Namespace) -> int:
    """Print a checker report (``--json``: as data; else text for the terminal); its exit code."""
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        print(report.to_text(verbose=args.verbose, width=shutil.get_terminal_size((100, 24)).columns))
    exit_code: int = report.exit_code
    return exit_code


def _print_tck_ids(as_json: bool, protocol: int) -> int:
    """One line per requirement of the official kit's suite for ``protocol``: its id, tier, and
    the acplink ones covering it (or why none does)."""
    from ..conformance.requirements import tck_requirements

    kit = tck_requirements(protocol)
    if as_json:
        json.dump([{"tck": k.id, "tier": k.tier, "capability": k.capability, "summary": k.summary,
                    "acplink": list(k.covered_by), **({"not_covered": k.not_covered} if k.not_covered else {})}
                   for k in kit], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for k in kit:
            print(f"{k.id:<28} {k.tier:<13} {', '.join(k.covered_by) or '(not covered: ' + k.not_covered + ')'}")
        covered = sum(1 for k in kit if k.covered_by)
        print(f"{covered} of {len(kit)} v{protocol} requirements of the official kit covered")
    return 0
