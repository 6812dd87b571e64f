"""``acplink chat``: an interactive terminal client for any ACP agent.

Its options are parsed here; the application (:mod:`.chat_app`: prompt_toolkit for input,
rich for output, both of the ``cli`` extra) is imported when the command runs, so that the
rest of the command line works without them.
"""

from __future__ import annotations

import argparse
from typing import Any

from .._extras import require
from .common import add_client_options, add_protocol_option
from .otel import add_otel_option

__all__ = ["add_parser", "run"]

HELP = "talk to an agent interactively in the terminal"
EXAMPLES = """examples:
  acplink chat                                    # the built-in demo agent
  acplink chat --cwd ~/src/app -- my-agent --acp  # any ACP agent
  printf 'hello\\nplan\\n' | acplink chat           # not a terminal: one prompt per line
keys: Enter sends; Tab completes /commands; Ctrl-C cancels the running turn
(a second Ctrl-C quits); Ctrl-D quits. Lines typed while a reply streams wait below it
and are sent when the turn ends. A permission question takes Up/Down and Enter, or the
option's number. Type /help inside for the local commands."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("chat", help=HELP, description=HELP, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_client_options(p)
    p.add_argument("--reconnect", action="store_true",
                   help="with --url: an HTTP stream that drops is resumed where it stopped (Last-Event-ID); "
                        "when the connection is lost, reconnect (5 tries, 0.5 to 8 s apart) and "
                        "reopen the session, without asking")
    add_resume_options(p)
    add_protocol_option(p)
    add_otel_option(p)
    p.set_defaults(run=run)


def add_resume_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resume", nargs="?", const="", default=None, metavar="ID",
                   help="continue the agent's stored session ID (session/load, else session/resume); "
                        "without ID, the most recent session of --cwd that the agent lists")
    p.add_argument("--no-recover", action="store_true",
                   help="a local agent that crashes is not restarted (by default it is: at most 3 times a "
                        "minute, its sessions reopened; the interrupted prompt is not sent again)")


def run(args: argparse.Namespace) -> int:
    require("acplink chat", "cli", "rich", "prompt_toolkit")
    from .chat_app import run_chat

    return run_chat(args)
