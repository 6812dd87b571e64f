"""``acplink prompt "TEXT"``: one-shot, non-interactive, for scripts and CI."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import orjson

from .._text import sanitize_for_terminal
from ..client.client import Client
from ..client.permissions import PermissionPolicy
from ..client.session import PromptTurn, Session
from ..client.state import SessionState
from ..errors import AcpError, RequestError, SchemaValidationError, TransportError
from ..schema import _generated as s
from ..schema._parse import dump
from .common import (
    StartupTimeout,
    add_client_options,
    add_protocol_option,
    describe_failure,
    fail,
    library_warnings,
    one_line,
    open_client,
    positive_seconds,
    start_session,
)
from .mcp_option import McpStartFailed, mcp_servers
from .otel import add_otel_option

HELP = "send one prompt to an agent and print its reply"
EXAMPLES = """examples:
  acplink prompt "hello"                          # the built-in demo agent
  acplink prompt --json "read README.md"          # every update as a JSON line
  acplink prompt --allow "write notes.txt hi" -- my-agent --acp
  acplink prompt --timeout 120 "fix the tests" -- my-agent --acp
  acplink prompt --protocol auto "hello" -- my-agent # ACP v2 (draft) if the agent speaks it, else v1
  acplink prompt --protocol 2 "read README.md"    # v2: files and terminals through the workspace MCP server
  acplink prompt --protocol 2 --url ws://host:7331 --remote-fs "read README.md"  # your files, served agent
  acplink prompt --mcp tools='python server.py' mcp  # offer an MCP server to the agent over ACP
ACP v1 is the default. ACP v2 has no fs/* or terminal/*: the client offers its files and terminals
as the MCP server "workspace" over ACP (MCP-over-ACP) to agents that take acp MCP servers.
exit status: 0 when the turn ends with end_turn, 1 for any other stop reason or error,
124 when --timeout or --startup-timeout runs out, 141 when the reader of stdout goes away."""

#: the exit status when a time limit runs out (as timeout(1) does)
EXIT_TIMEOUT = 124
#: how long a turn cancelled by --timeout may take to end before the agent is stopped
_CANCEL_GRACE = 3.0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("prompt", help=HELP, description=HELP, epilog=EXAMPLES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", help="the prompt text")
    p.add_argument("--json", action="store_true", help="print every update as one JSON line on stdout")
    p.add_argument("--timeout", type=positive_seconds, metavar="S",
                   help="fail when the turn has not ended S seconds after acplink started (the agent's "
                        "start-up and the session's set-up included; a running turn is cancelled first; "
                        "default: no limit)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--allow", action="store_true", help="allow every permission request")
    group.add_argument("--deny", action="store_true", help="deny every permission request (default)")
    add_client_options(p)
    add_protocol_option(p)
    add_otel_option(p)
    c = p.add_argument_group("several agents (--agent A --agent B ...: the same prompt to each, side by side)")
    c.add_argument("--in-place", action="store_true",
                   help="run them all in --cwd itself (default: each in a git worktree of its repository, with the "
                        "uncommitted changes; outside a repository a temporary copy of it)")
    c.add_argument("--keep", action="store_true", help="keep the working copies and the traces (their paths "
                                                       "are printed)")
    c.add_argument("--db", metavar="FILE", help="the devtools database the runs are recorded into (default: "
                                                "the one `acplink devtools` opens)")
    c.add_argument("--no-record", action="store_true", help="do not record the runs")
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
    async with mcp_servers(args, args.startup_timeout):  # (--mcp: started before the agent, stopped after it)
        return await _run_client(args)


async def _run_client(args: argparse.Namespace) -> int:
    policy = PermissionPolicy.allow_all() if args.allow else PermissionPolicy.deny_all()
    # --timeout bounds the whole run: the agent's start-up, the session's set-up and the turn
    deadline = None if args.timeout is None else asyncio.get_running_loop().time() + args.timeout
    startup = open_client(args, policy)
    bound = asyncio.timeout_at(deadline)
    try:
        async with bound:
            client = await startup  # (a start-up cut short stops the agent)
    except TimeoutError:
        if not bound.expired():
            raise
        return fail(f"the agent {startup.command!r} did not answer initialize within {args.timeout:g} s "
                    "(--timeout)", EXIT_TIMEOUT)
    try:
        return await _turn(args, client, deadline)
    except TransportError as exc:  # the agent died or hung up mid-session
        if args.debug:
            raise
        return fail(await describe_failure(client, exc))
    finally:
        await client.aclose()


class _Progress:
    """What the turn has done so far (for the end of a turn cut short by --timeout)."""

    def __init__(self) -> None:
        self.turn: PromptTurn | None = None
        self.ended_with_newline = True


async def _turn(args: argparse.Namespace, client: Client, deadline: float | None) -> int:
    progress = _Progress()
    bound = asyncio.timeout_at(deadline)  # (None: no limit)
    try:
        async with bound:
            return await _stream(args, client, progress)
    except TimeoutError:
        if not bound.expired():
            raise
    turn = progress.turn
    if turn is None:
        return fail(f"the agent did not open a session within {args.timeout:g} s (--timeout)", EXIT_TIMEOUT)
    # the limit ran out mid-turn: ask the agent to stop, give it a moment, then give up
    if not progress.ended_with_newline and not args.json:
        sys.stdout.write("\n")
    sys.stdout.flush()
    try:
        async with asyncio.timeout(_CANCEL_GRACE):
            await turn.cancel()
            await turn
    except (TimeoutError, AcpError):
        pass
    return fail(f"the turn did not end within {args.timeout:g} s (--timeout); it was cancelled", EXIT_TIMEOUT)


async def _stream(args: argparse.Namespace, client: Client, progress: _Progress) -> int:
    out = sys.stdout
    session = await start_session(client, args)
    turn = progress.turn = session.prompt(args.text)
    shown = SessionState()  # (what was displayed so far, in acplink's vocabulary)
    try:
        async for item in turn:
            if args.json:
                key = "receipt" if item is turn.receipt else "update"  # (a receipt version: the receipt first)
                out.write(orjson.dumps({"sessionId": session.session_id, key: dump(item)}).decode() + "\n")
                out.flush()
                continue
            if item is turn.receipt:
                continue
            for update in _shown(item, session, shown):
                _show(update, session, progress)
        response = await turn
    except RequestError as exc:
        if not progress.ended_with_newline:
            out.write("\n")
        out.flush()
        what = "sent an invalid update" if isinstance(exc, SchemaValidationError) else "failed the prompt"
        return fail(f"the agent {what}: {exc}")
    if args.json:
        out.write(orjson.dumps({"sessionId": session.session_id, "stopReason": turn.stop_reason}).decode()
                  + "\n")
    elif not progress.ended_with_newline:
        out.write("\n")
    out.flush()
    if turn.stop_reason != "end_turn":
        error = getattr(response, "error", None)  # (a turn ended by an update: its "error" may say why)
        why = f": {error.message}" if error is not None and getattr(error, "message", None) else ""
        return fail(f"the turn ended with stop reason {turn.stop_reason!r}, not 'end_turn'{why}")
    return 0


def _shown(item: Any, session: Session, shown: SessionState) -> list[Any]:
    """The updates to display for one update of a turn, in acplink's vocabulary (the session's
    views of it; ``shown`` folds what was displayed)."""
    return session.views_of(item, shown)


def _show(update: Any, session: Session, progress: _Progress) -> None:
    out = sys.stdout
    if isinstance(update, s.AgentMessageChunk) and isinstance(update.content, s.TextContent):
        text = sanitize_for_terminal(update.content.text)  # the agent's text: no escapes
        if text:
            out.write(text)
            out.flush()
            progress.ended_with_newline = text.endswith("\n")
        return
    line = _summary(update, session)
    if line:
        print(sanitize_for_terminal(line), file=sys.stderr)
        _terminal_output(update, session)


def _terminal_output(update: Any, session: Session) -> None:
    """A finished tool call's terminal output, indented on stderr below its ``[tool]`` line
    (an agent shows a command's output through the terminal, not again in its reply)."""
    if not isinstance(update, s.SessionUpdateToolCallUpdate) or update.status not in ("completed", "failed"):
        return
    known = session.state.tool_calls.get(update.tool_call_id)
    terminals = session.client.terminals
    if known is None or terminals is None:
        return
    for item in known.content:
        if isinstance(item, s.Terminal):
            try:
                output = terminals.snapshot(item.terminal_id).output
            except Exception:  # released long ago, or not ours
                continue
            for text in sanitize_for_terminal(output).splitlines():
                print(f"    {text}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    from .compare import compare_usage_error, run_compare

    wrong = compare_usage_error(args)
    if wrong:
        return fail(wrong, 2)
    if len(getattr(args, "agents", None) or []) > 1:
        return run_compare(args)
    try:
        with library_warnings(args.debug):
            return asyncio.run(_run(args))
    except StartupTimeout as exc:
        return fail(str(exc), EXIT_TIMEOUT)
    except McpStartFailed as exc:
        return fail(str(exc), 2)
    except AcpError as exc:
        if args.debug:
            raise
        return fail(one_line(exc))
    except KeyboardInterrupt:
        return fail("interrupted", 130)
