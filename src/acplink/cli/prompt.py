"""``acplink prompt "TEXT"``: one-shot, non-interactive, for scripts and CI."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import orjson

from ..client.client import Client
from ..client.permissions import PermissionPolicy
from ..client.session import Session
from ..errors import AcpError, RequestError, TransportError
from ..schema import _generated as s
from ..schema.parse import dump
from .common import add_client_options, describe_failure, fail, open_client, start_session

HELP = "send one prompt to an agent and print its reply"
EXAMPLES = """examples:
  acplink prompt "hello"                          # the built-in demo agent
  acplink prompt --json "read README.md"          # every update as a JSON line
  acplink prompt --allow "write notes.txt hi" -- my-agent --acp
exit status: 0 when the turn ends with end_turn, 1 for any other stop reason or error."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("prompt", help=HELP, description=HELP, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", help="the prompt text")
    p.add_argument("--json", action="store_true", help="print every update as one JSON line on stdout")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--allow", action="store_true", help="allow every permission request")
    group.add_argument("--deny", action="store_true", help="deny every permission request (default)")
    add_client_options(p)
    p.set_defaults(run=run)


def _summary(update: Any, session: Session | None = None) -> str | None:
    """One stderr line for updates that are not reply text."""
    if isinstance(update, s.ToolCall):
        return f"[tool] {update.title} ({update.kind or 'other'}): {update.status or 'pending'}"
    if isinstance(update, s.SessionUpdateToolCallUpdate):
        if update.status:
            known = session.state.tool_calls.get(update.tool_call_id) if session is not None else None
            title = update.title or (known.title if known is not None and known.title else update.tool_call_id)
            return f"[tool] {title}: {update.status}"
        return None
    if isinstance(update, s.Plan):
        marks = {"completed": "x", "in_progress": ">", "pending": " "}
        return "[plan] " + "  ".join(f"[{marks.get(str(e.status), ' ')}] {e.content}" for e in update.entries)
    if isinstance(update, s.CurrentModeUpdate):
        return f"[mode] {update.current_mode_id}"
    return None


async def _run(args: argparse.Namespace) -> int:
    policy = PermissionPolicy.allow_all() if args.allow else PermissionPolicy.deny_all()
    async with open_client(args, policy) as client:
        try:
            return await _turn(args, client)
        except TransportError as exc:  # the agent died or hung up mid-session
            if args.debug:
                raise
            return fail(await describe_failure(client, exc))


async def _turn(args: argparse.Namespace, client: Client) -> int:
    out = sys.stdout
    session = await start_session(client, args)
    turn = session.prompt(args.text)
    ended_with_newline = True
    try:
        async for update in turn:
            if args.json:
                out.write(orjson.dumps({"sessionId": session.session_id, "update": dump(update)}).decode() + "\n")
                out.flush()
                continue
            if isinstance(update, s.AgentMessageChunk) and isinstance(update.content, s.TextContent):
                out.write(update.content.text)
                out.flush()
                ended_with_newline = update.content.text.endswith("\n")
                continue
            line = _summary(update, session)
            if line:
                print(line, file=sys.stderr)
        response = await turn
    except RequestError as exc:
        if not ended_with_newline:
            out.write("\n")
        out.flush()
        return fail(f"the agent failed the prompt: {exc}")
    if args.json:
        out.write(orjson.dumps({"sessionId": session.session_id, "stopReason": response.stop_reason}).decode()
                  + "\n")
    elif not ended_with_newline:
        out.write("\n")
    out.flush()
    if response.stop_reason != "end_turn":
        return fail(f"the turn ended with stop reason {response.stop_reason!r}, not 'end_turn'")
    return 0


def run(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except AcpError as exc:
        if args.debug:
            raise
        return fail(str(exc))
    except KeyboardInterrupt:
        return fail("interrupted", 130)
