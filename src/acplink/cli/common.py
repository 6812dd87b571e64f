"""Options and helpers shared by the client subcommands (chat, prompt)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..client.client import connect
from ..client.permissions import PermissionPolicy
from ..errors import AcpError

__all__ = ["add_client_options", "agent_command", "open_client", "fail"]


def add_client_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cwd", default=".", help="session working directory (default: current directory)")
    p.add_argument("--add-dir", action="append", default=[], metavar="DIR",
                   help="another directory the agent may access (repeatable)")
    p.add_argument("--auth-method", metavar="ID", help="authenticate with this method before the session")
    p.add_argument("--no-fs", action="store_true", help="do not offer file-system access to the agent")
    p.add_argument("--no-terminal", action="store_true", help="do not offer terminals to the agent")
    p.add_argument("--debug", action="store_true", help="show tracebacks and protocol logs")
    p.add_argument("agent", nargs=argparse.REMAINDER,
                   help="the agent command line after `--` (default: the built-in demo agent)")


def agent_command(args: argparse.Namespace) -> list[str]:
    """The agent command line: everything after ``--``, or the built-in demo agent."""
    cmd = list(args.agent or [])
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        return [sys.executable, "-m", "acplink.demo"]
    return cmd


def open_client(args: argparse.Namespace, permission: PermissionPolicy, **kw: Any) -> connect:
    """``connect(...)`` for the agent the user asked for, with the default handlers."""
    cwd = os.path.abspath(args.cwd)
    if not os.path.isdir(cwd):
        raise AcpError(f"--cwd {args.cwd!r} is not a directory")
    for d in args.add_dir:
        if not os.path.isdir(d):
            raise AcpError(f"--add-dir {d!r} is not a directory")
    return connect(agent_command(args), cwd=cwd, fs=not args.no_fs, terminal=not args.no_terminal,
                   permission=permission, stderr=kw.pop("stderr", "capture"), debug=args.debug, **kw)


def fail(message: str, code: int = 1) -> int:
    """Print one readable error line (no traceback) and return the exit code."""
    print(f"acplink: error: {message}", file=sys.stderr)
    return code


def one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text


def stderr_tail(lines: Sequence[str], n: int = 10) -> str:
    return "\n".join(f"  | {line}" for line in lines[-n:])
