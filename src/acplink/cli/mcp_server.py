"""``acplink mcp-server [--http [HOST:]PORT] [--allow|--deny|--permission P] [--protocol V] -- AGENT_CMD``:
any ACP agent as an MCP server (docs/mcp-server.md)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from .common import (
    DEFAULT_STARTUP_TIMEOUT,
    _AgentAfterDashDash,
    add_protocol_option,
    fail,
    given_command,
    positive_seconds,
    protocol_choice,
)

HELP = "serve an ACP agent as an MCP server (tools: prompt, new_session, list_sessions, cancel)"
EXAMPLES = """examples:
  acplink mcp-server -- my-agent --acp              # stdio: the MCP host starts this command
  acplink mcp-server --http 127.0.0.1:8765 -- my-agent --acp   # streamable HTTP on /mcp
  acplink mcp-server --allow -- my-agent --acp      # allow every permission request
  acplink mcp-server --protocol 2 -- my-agent --acp # speak ACP v2 (draft) to the agent
  acplink mcp-server                                # the built-in demo agent
Permission requests: --permission elicit (the default) asks the MCP host (MCP elicitation) and
denies when the host cannot be asked; --allow and --deny answer every request (--deny also
offers the agent no writes and no terminals)."""


def http_address(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` → (host, port); the host defaults to 127.0.0.1."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host = "127.0.0.1"
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT, e.g. 127.0.0.1:8765, not {text!r}") from None
    if not 0 < number <= 65535:
        raise argparse.ArgumentTypeError(f"the port must be between 1 and 65535, not {number}")
    return host, number


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mcp-server", help=HELP, description=HELP, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.__class__ = _AgentAfterDashDash
    p.add_argument("--http", type=http_address, metavar="[HOST:]PORT",
                   help="serve streamable HTTP on http://HOST:PORT/mcp instead of stdio (HOST: 127.0.0.1)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--allow", dest="permission", action="store_const", const="allow",
                       help="allow every permission request of the agent")
    group.add_argument("--deny", dest="permission", action="store_const", const="deny",
                       help="deny every permission request (and offer no writes, no terminals)")
    group.add_argument("--permission", choices=("allow", "deny", "elicit"), dest="permission",
                       help="how permission requests are answered (default: elicit: ask the MCP host)")
    p.add_argument("--cwd", default=".", help="the working directory of new sessions and of the agent "
                                              "(default: the current directory)")
    p.add_argument("--startup-timeout", type=positive_seconds, default=DEFAULT_STARTUP_TIMEOUT, metavar="S",
                   help=f"a start of the agent fails after S seconds without an answer to initialize "
                        f"(default {DEFAULT_STARTUP_TIMEOUT:g})")
    add_protocol_option(p)
    p.add_argument("agent", nargs="*", default=[], metavar="-- AGENT_CMD",
                   help="the agent command line, after `--` (default: the built-in demo agent)")
    p.set_defaults(run=run, permission=None)


def run(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.cwd):
        return fail(f"--cwd {args.cwd!r} is not a directory", 2)
    command = given_command(args) or [sys.executable, "-m", "acplink.demo"]
    from ..bridges import serve_as_mcp

    if args.http is not None:
        print(f"acplink mcp-server: serving {command[0]!r} on http://{args.http[0]}:{args.http[1]}/mcp",
              file=sys.stderr, flush=True)
    try:
        asyncio.run(serve_as_mcp(command, http=args.http, cwd=args.cwd, permission=args.permission or "elicit",
                                 startup_timeout=args.startup_timeout, protocol=protocol_choice(args)))
    except KeyboardInterrupt:
        return 130
    return 0
