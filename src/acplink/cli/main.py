"""The ``acplink`` console script (also ``python -m acplink``)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ..runtime import tune_gc

#: subcommand modules, each with ``add_parser(subparsers)``; imported only when present
SUBCOMMANDS = ("chat", "prompt", "demo", "record", "inspect", "check")

DESCRIPTION = """acplink: talk to any ACP agent, serve the demo agent, record, inspect and check ACP traffic.

Run `acplink chat` to talk to the built-in demo agent, or `acplink chat -- AGENT_CMD...` for any agent."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acplink", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
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
    parser = build_parser()
    args = parser.parse_args(argv)
    if tune:  # after the subcommands' imports, so that they are frozen too
        tune_gc()
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help()
        return 2
    code: int = run(args)
    return code


def entry() -> None:
    """The ``acplink`` command: a process of its own, so its collector is tuned."""
    sys.exit(main(tune=True))


if __name__ == "__main__":
    entry()
