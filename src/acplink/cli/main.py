"""The ``acplink`` console script (also ``python -m acplink``)."""

from __future__ import annotations

import argparse
import importlib
import os
import select
import sys
from collections.abc import Sequence

from ..errors import MissingDependency
from ..runtime import tune_gc
from .common import ArgParser, fail
from .otel import telemetry

#: the exit status of a command whose output was closed early (``acplink ... | head``): what a
#: shell reports for ``cat`` killed by SIGPIPE (128 + 13)
EXIT_BROKEN_PIPE = 141

#: subcommand modules, each with ``add_parser(subparsers)``; imported only when present
SUBCOMMANDS = ("chat", "prompt", "agents", "demo", "conduct", "proxy", "record", "inspect", "check", "check_client",
               "replay", "serve", "devtools", "mcp_server")

DESCRIPTION = """acplink: talk to any ACP agent, serve the demo agent, record, inspect and check ACP traffic.

Run `acplink chat` to talk to the built-in demo agent, or `acplink chat -- AGENT_CMD...` for any agent."""


def build_parser() -> argparse.ArgumentParser:
    parser = ArgParser(prog="acplink", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"acplink {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            mod = importlib.import_module(f"acplink.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("acplink.cli"):
                continue
            raise
        mod.add_parser(sub)
    return parser


def _version() -> str:
    from .._version import __version__

    return __version__


def main(argv: Sequence[str] | None = None, *, tune: bool = False) -> int:
    try:
        return _main(argv, tune)
    except MissingDependency as exc:  # a command (or --url) whose extra is not installed: one line
        return fail(str(exc), 2)


def _main(argv: Sequence[str] | None, tune: bool) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if tune:  # after the subcommands' imports, so that they are frozen too
        tune_gc()
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help()
        return 2
    try:
        with telemetry(args):  # (--otel, serve --metrics: the OpenTelemetry SDK while it runs)
            code: int = run(args)
        sys.stdout.flush()
    except BrokenPipeError:
        if not _output_closed():
            raise
        return _quiet_exit()
    return code


def _output_closed() -> bool:
    """Whether the reader of our stdout or stderr has gone away (the write end of a pipe
    whose read end is closed polls as an error)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):
            continue
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if any(ev & select.POLLERR for _, ev in poller.poll(0)):
            return True
    return False


def _quiet_exit() -> int:
    """End quietly once the reader of our output is gone: later writes (and the interpreter's
    final flush) go to /dev/null, and the exit status is the one a shell shows for ``cat``."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, OSError, ValueError):
            pass
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def entry() -> None:
    """The ``acplink`` command: a process of its own, so its collector is tuned."""
    sys.exit(main(tune=True))


if __name__ == "__main__":
    entry()
