"""``acplink replay TRACE [--speed real|N|instant]``: serve a recorded trace as an agent on stdio."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_parser", "run"]

HELP = "serve a recorded trace (acplink record) as an agent on stdio, to test a client offline"
DESCRIPTION = """Plays the agent side of TRACE: each message the client sends must match the trace's next
client message (kind and method, in order; the client's ids, session ids and cwd are mapped onto
the recorded ones), and the agent's recorded messages are sent back. No real agent, no LLM, no
tokens. The first message that does not match is named on stderr (one line), a request gets a
JSON-RPC error, and the replay ends with exit code 1.

The client's answers to the agent's requests (permission outcomes, file contents, terminal
results) must match the recorded ones too: the first that differs is named on stderr (index,
method, the first differing field: expected vs got), the client's open requests get an error
(never the recording's outcome for an answer it did not give) and the exit code is 1. With
--lenient, each divergence is one warning line and the recording plays on (exit 0)."""

EPILOG = """examples:
  acplink record --out trace.jsonl -- acplink demo-agent      # record once
  acplink prompt "hello" -- acplink replay trace.jsonl         # replay offline
  acplink replay --speed instant trace.jsonl                   # no recorded delays
  acplink prompt --deny "write x" -- acplink replay --lenient trace.jsonl   # answers may differ
exit status: 0 the client matched the trace, 1 it did not (a message or, unless --lenient, an
answer differed), 2 usage errors (an unreadable trace, a bad --speed)."""


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = subparsers.add_parser("replay", help=HELP, description=DESCRIPTION,
                                    epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("trace", metavar="TRACE", help="a trace written by `acplink record` (JSON lines)")
    p.add_argument("--speed", default="real", metavar="real|N|instant",
                   help="the recorded delays between the agent's messages: real time (default), "
                        "N times faster, or none")
    p.add_argument("--lenient", action="store_true",
                   help="report the client's answers that differ from the recorded ones, and play on (exit 0)")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    import asyncio
    import contextlib

    from ..errors import UsageError
    from ..testing.replay import TraceReplay, parse_speed
    from ..transports.stdio import StdioTransport
    from .common import fail

    try:
        speed = parse_speed(args.speed)
        replay = TraceReplay(args.trace, StdioTransport(), speed=speed, lenient=args.lenient,
                             on_mismatch=lambda line: print(f"acplink replay: {line}", file=sys.stderr, flush=True))
    except UsageError as exc:
        return fail(str(exc), 2)

    async def main() -> None:
        await replay.start()
        try:
            await replay.wait_closed()
        finally:
            await replay.aclose()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
    return 1 if replay.mismatch else 0
