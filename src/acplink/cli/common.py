"""Options and helpers shared by the client subcommands (chat, prompt)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..client.client import Client, connect
from ..client.permissions import PermissionPolicy
from ..client.session import Session
from ..errors import AcpError, AuthRequired, ConnectionClosed, TransportError
from ..transports.subprocess import SubprocessTransport

__all__ = ["add_client_options", "agent_command", "describe_failure", "fail", "given_command", "open_client", "start_session"]


class _AgentAfterDashDash(argparse.ArgumentParser):
    """Everything after the first ``--`` is the agent command line, verbatim; options may
    come before or after the other arguments (``prompt "hi" --json -- agent --flag``)."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        argv = list(sys.argv[1:] if args is None else args)
        agent: list[str] = []
        if "--" in argv:
            cut = argv.index("--")
            argv, agent = argv[:cut], argv[cut + 1:]
        ns, extra = super().parse_known_args(argv, namespace)
        if agent:
            ns.agent = [*(ns.agent or []), *agent]
        return ns, extra


def add_client_options(p: argparse.ArgumentParser) -> None:
    p.__class__ = _AgentAfterDashDash  # subparsers are built by argparse; only parsing changes
    p.add_argument("--cwd", default=".", help="session working directory (default: current directory)")
    p.add_argument("--add-dir", action="append", default=[], metavar="DIR",
                   help="another directory the agent may access (repeatable)")
    p.add_argument("--auth-method", metavar="ID", help="authenticate with this method before the session")
    p.add_argument("--no-fs", action="store_true", help="do not offer file-system access to the agent")
    p.add_argument("--no-terminal", action="store_true", help="do not offer terminals to the agent")
    p.add_argument("--debug", action="store_true", help="show tracebacks and protocol logs")
    p.add_argument("agent", nargs="*", metavar="-- AGENT_CMD",
                   help="the agent command line, after `--` (default: the built-in demo agent)")


def given_command(args: argparse.Namespace) -> list[str]:
    """The agent command line the user gave after ``--`` (possibly empty)."""
    cmd = list(args.agent or [])
    return cmd[1:] if cmd and cmd[0] == "--" else cmd


def agent_command(args: argparse.Namespace) -> list[str]:
    """The agent command line: everything after ``--``, or the built-in demo agent."""
    return given_command(args) or [sys.executable, "-m", "acplink.demo"]


def open_client(args: argparse.Namespace, permission: PermissionPolicy, **kw: Any) -> connect:
    """``connect(...)`` for the agent the user asked for, with the default handlers."""
    cwd = os.path.abspath(args.cwd)
    if not os.path.isdir(cwd):
        raise AcpError(f"--cwd {args.cwd!r} is not a directory")
    for d in args.add_dir:
        if not os.path.isdir(d):
            raise AcpError(f"--add-dir {d!r} is not a directory")
    kw.setdefault("terminal", not args.no_terminal)
    # the agent's stderr is kept for error reports; with --debug it is shown as it comes
    kw.setdefault("stderr", "inherit" if args.debug else "capture")
    return connect(agent_command(args), cwd=cwd, fs=not args.no_fs, permission=permission, debug=args.debug, **kw)


async def start_session(client: Client, args: argparse.Namespace) -> Session:
    """Authenticate (``--auth-method``) and open a new session in ``--cwd``."""
    if args.auth_method:
        await client.authenticate(args.auth_method)
    try:
        return await client.new_session(args.cwd, additional_directories=args.add_dir)
    except AuthRequired as exc:
        methods = ", ".join(f"{m.id} ({m.name})" if getattr(m, "name", None) else str(getattr(m, "id", m))
                            for m in client.auth_methods)
        hint = f"; pass --auth-method with one of: {methods}" if methods else ""
        raise AcpError(f"the agent requires authentication ({exc}){hint}") from None


async def describe_failure(client: Client | None, exc: BaseException) -> str:
    """One readable line for ``exc``; for a lost agent process: its command line, exit code
    and last stderr lines (on the following lines)."""
    transport = client.transport if client is not None else None
    if not isinstance(exc, TransportError) or not isinstance(transport, SubprocessTransport):
        return one_line(exc)
    try:  # the pipes close a moment before the exit status is known
        code = await asyncio.wait_for(transport.wait(), 2.0)
    except (TimeoutError, AcpError):
        code = transport.returncode
    how = f"exited with code {code}" if code is not None and code >= 0 else (
        f"was killed by signal {-code}" if code is not None else "closed the connection")
    msg = f"the agent {transport.command_line!r} {how}"
    if not isinstance(exc, ConnectionClosed):
        msg += f": {one_line(exc)}"
    tail = transport.stderr_tail
    if tail:
        msg += "\nlast stderr lines:\n" + stderr_tail(tail)
    return msg


def fail(message: str, code: int = 1) -> int:
    """Print one readable error line (no traceback) and return the exit code."""
    print(f"acplink: error: {message}", file=sys.stderr)
    return code


def one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text


def stderr_tail(lines: Sequence[str], n: int = 10) -> str:
    return "\n".join(f"  | {line}" for line in lines[-n:])
