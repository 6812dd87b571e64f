"""``acplink chat --url``: when the connection to a remote agent is lost, connect again (the
same headers and cookies), ``initialize``, and reopen the session (``session/load``, else
``session/resume``, when the agent advertises one). The RFD's v1 rules: nothing is
replayed; a prompt the connection took down is reported failed and never sent again."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rich.text import Text

from ..errors import AcpError, StreamResumeFailed, TransportError
from ..transports._remote import AuthRejected
from .chat_render import error_text
from .common import open_client, start_session

if TYPE_CHECKING:
    from .chat_app import ChatApp

__all__ = ["BACKOFF", "reconnect"]

#: the waits before each try (seconds): five tries, 0.5 s doubling up to 8 s
BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)


async def reconnect(app: ChatApp, lost: TransportError) -> bool:
    """The connection of ``app`` was lost (``lost``): offer to reconnect (a terminal), or do it
    (``--reconnect``); True when the chat can go on with a new client and its session reopened."""
    args, console = app.args, app.console
    console.print(Text(f"connection lost: {error_text(lost)}", style="red"))
    if isinstance(lost, StreamResumeFailed):  # (--reconnect had resumed the stream until now)
        console.print(Text("the server no longer holds what it sent while this chat was away (longer than its "
                           "retention): those updates are lost here; reopening the session (session/load shows "
                           "its history again where the agent keeps one)", style="yellow"))
    if app.interrupted_turn:
        console.print(Text("the prompt that was running failed with the connection; it is not sent again",
                           style="yellow"))
        app.interrupted_turn = False
    if not args.reconnect and not await app.ask_yes_no("reconnect? [Y/n] "):
        return False
    old, session = app.client, app.session
    if old is not None:
        await old.aclose()
    for attempt, wait in enumerate(BACKOFF, 1):
        await app.until_quit(asyncio.sleep(wait))
        console.print(Text(f"reconnecting to {args.url} (try {attempt} of {len(BACKOFF)})…", style="dim"))
        try:
            client = await app.until_quit(open_client(args, app.policy, elicitation=app.elicit))
        except AuthRejected as exc:
            console.print(Text(error_text(exc), style="red"))
            return False
        except AcpError as exc:
            console.print(Text(f"  failed: {error_text(exc)}", style="yellow"))
            continue
        app.adopt(client)
        if session is None:
            return True
        try:
            if client.supports("loadSession"):
                app.session = await app.until_quit(client.load_session(session.session_id, session.cwd))
            elif client.supports("sessionCapabilities.resume"):
                app.session = await app.until_quit(client.resume_session(session.session_id, session.cwd))
            else:
                app.session = await app.until_quit(start_session(client, args))
                console.print(Text("the agent cannot reopen a session: this is a new one", style="yellow"))
                return True
        except TransportError as exc:
            console.print(Text(f"  failed: {error_text(exc)}", style="yellow"))
            await client.aclose()
            continue
        console.print(Text(f"reconnected; session {session.session_id} reopened", style="dim"))
        return True
    console.print(Text(f"could not reconnect after {len(BACKOFF)} tries", style="red"))
    return False
