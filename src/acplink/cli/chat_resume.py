"""``acplink chat --resume [ID]`` and the chat's recovery from a local agent's crash.

``--resume ID`` continues the agent's stored session ID; ``--resume`` alone, the most recent
session of ``--cwd`` that the agent lists (``session/list``). The session is reopened with
``session/load`` where the agent advertises it (the conversation is replayed, so its last
messages are shown), else ``session/resume``.

A local agent that crashes while the chat runs is restarted by the client
(``connect(cmd, recover=True)``: :class:`acplink.client.AgentRecovery`); :func:`recover`
shows what happened and what was lost, and the chat goes on. The interrupted prompt is never
sent again.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from rich.text import Text

from .._text import sanitize_for_terminal
from ..client.client import Client
from ..client.session import Session
from ..errors import AcpError, CapabilityError, RecoveryFailed, ResourceNotFound, TransportError
from .chat_render import error_text

if TYPE_CHECKING:
    from ..client._recover import LostTurn, RecoveryReport
    from .chat_app import ChatApp

__all__ = ["keep_recovery_if_useful", "recover", "recover_enabled", "resume_session"]


def recover_enabled(args: argparse.Namespace) -> bool:
    """Whether the chat restarts a crashed agent (a local one, unless ``--no-recover``)."""
    return not getattr(args, "url", None) and not getattr(args, "no_recover", False)


async def keep_recovery_if_useful(client: Client) -> None:
    """A restart helps only an agent that can reopen the session: for one that advertises
    neither ``session/load`` nor ``session/resume``, a crash ends the chat (with its report)."""
    if client.recovery is not None and not (client.offers("load_session") or client.offers("resume_session")):
        await client.recovery.aclose()
        client.recovery = None


async def resume_session(client: Client, args: argparse.Namespace) -> Session:
    """The session ``--resume`` names (or the most recent one of ``--cwd``), reopened; an
    :class:`AcpError` with one clear line when it cannot be."""
    if args.auth_method:
        await client.authenticate(args.auth_method)
    session_id = args.resume or await _most_recent(client, args.cwd)
    if not client.offers("load_session") and not client.offers("resume_session"):
        raise AcpError("--resume: the agent cannot reopen a session (it advertises neither session/load "
                       "nor session/resume)")
    try:
        return await client.reopen_session(session_id, args.cwd, prefer="load")
    except ResourceNotFound as exc:
        raise AcpError(f"--resume: the agent has no session {session_id!r} ({error_text(exc)})") from None


async def _most_recent(client: Client, cwd: str) -> str:
    try:
        page, _ = await client.list_sessions_page(cwd)
    except CapabilityError:
        raise AcpError("--resume without an ID needs an agent that lists its sessions (session/list); "
                       "this one does not: give the session ID") from None
    if not page:
        raise AcpError(f"--resume: the agent lists no session in {sanitize_for_terminal(os.path.abspath(cwd))}")
    # (acplink's agents list newest first; another agent's order is not promised)
    return max(page, key=lambda info: info.updated_at or "").session_id


async def recover(app: ChatApp, lost: TransportError) -> bool:
    """The agent process ended (``lost``) and its client restarts it: wait for that, then show
    the user what happened. True when the chat goes on; an :class:`AcpError` (one line) when
    it gave up."""
    client = app.client
    recovery = client.recovery if client is not None else None
    if client is None or recovery is None:
        return False
    if not (client.connection.closed or recovery.busy or recovery.failure) and recovery.last is app.shown_recovery:
        return False  # (the agent runs, and no restart happened that the user has not been told of)
    console = app.console
    console.print(Text("the agent stopped: restarting it…", style="yellow"))
    try:
        report = await app.until_quit(recovery.wait())
    except RecoveryFailed as exc:
        raise AcpError(str(exc)) from None
    app.interrupted_turn = False
    if report is None or report is app.shown_recovery:  # (no restart: nothing to go on with)
        return False
    app.shown_recovery = report
    for line in report_lines(report, app.session):
        console.print(line)
    if app.session is not None and app.session.closed:
        raise AcpError(f"the session could not be reopened: {report.failed.get(app.session.session_id, '?')}")
    return True


def report_lines(report: RecoveryReport, session: Session | None) -> list[Text]:
    """What a restart did, for the user: why, the session reopened, the turn that was lost."""
    out = [Text(f"{sanitize_for_terminal(report.reason)}; restarted it (restart {report.restarts})", style="yellow")]
    sid = session.session_id if session is not None else None
    how = report.reopened.get(sid) if sid is not None else None
    if how is not None:
        out.append(Text(f"session {sid} reopened (session/{how})", style="dim"))
    for turn in report.lost:
        if turn.session_id == sid:
            out += _lost_lines(turn)
    return out


def _lost_lines(turn: LostTurn) -> list[Text]:
    prompt = sanitize_for_terminal(turn.prompt)
    if len(prompt) > 60:
        prompt = prompt[:57] + "…"
    out = [Text(f"interrupted: your prompt {prompt!r} ({turn.received_updates} updates, "
                f"{len(turn.received_text)} characters of reply received before the crash)", style="yellow")]
    missing = turn.missing_text
    if missing is None:
        out.append(Text("the agent resumed the session without replaying it: what its history kept of that "
                        "reply is not known", style="dim"))
    elif missing:
        out.append(Text(f"lost: the agent's history does not have the last {len(missing)} characters you saw: "
                        f"{sanitize_for_terminal(missing[-80:])!r}", style="yellow"))
    else:
        extra = f" (and {len(turn.unseen_text)} more that never reached you)" if turn.unseen_text else ""
        out.append(Text(f"kept: the agent's history has all of the reply you saw{extra}", style="dim"))
    out.append(Text("the prompt is not sent again: send it again if you still want it", style="yellow"))
    return out
