"""The session methods acplink answers itself for an app with a :class:`~.store.HistoryStore`.

Each is an ordinary hook handler (it takes the request's :class:`~.context.Context`), used for
the hooks the app did not register: ``load_session`` (the history replayed as updates, then
the answer), ``resume_session`` (no replay here: ACP v2's replay of the conversation is the
connection's), ``list_sessions`` (newest first, ``cwd`` filter, opaque cursor),
``fork_session``, ``close_session`` (the session is released from memory; its record stays),
``delete_session``, ``archive_session`` / ``unarchive_session``, ``set_title`` and
``session_status``. Being hooks, they are advertised as the app's own would be.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import ResourceNotFound
from ..protocol.rules import session_refusal
from ..schema import _generated as s
from .history import replay_updates
from .store import LOCAL_PRINCIPAL, HistoryStore

if TYPE_CHECKING:
    from .app import AgentBase
    from .context import AgentSession, Context

__all__ = ["store_hooks"]

#: the page size of session/list
PAGE = 50


def store_hooks(app: AgentBase) -> dict[str, Callable[[Context[Any]], Awaitable[Any]]]:
    """The built-in handlers of ``app`` (none unless its store is a HistoryStore)."""
    if not isinstance(app.sessions, HistoryStore):
        return {}
    return {"load_session": _load, "resume_session": _resume, "list_sessions": _list, "fork_session": _fork,
            "close_session": _close, "delete_session": _delete, "archive_session": _archive,
            "unarchive_session": _unarchive, "set_title": _set_title, "session_status": _status}


def principal(conn: Any) -> str:
    """Whom a connection serves: its ``principal`` (a server token's), or the local one."""
    return getattr(conn, "principal", None) or LOCAL_PRINCIPAL


def _store(ctx: Context[Any]) -> HistoryStore:
    store = ctx.app.sessions
    assert isinstance(store, HistoryStore)
    return store


def _not_found(session_id: str) -> ResourceNotFound:
    return ResourceNotFound(session_refusal(session_id, False) or f"Resource not found: session {session_id}",
                            {"sessionId": session_id})


def _reopen(ctx: Context[Any]) -> AgentSession:
    """The stored session the request names, held here, with the request's cwd and directories."""
    p = ctx.params
    sess = _store(ctx).open(p.session_id)
    if sess is None:
        raise _not_found(p.session_id)
    sess.cwd = p.cwd
    sess.additional_directories = list(p.additional_directories or [])
    sess.mcp_servers = list(p.mcp_servers or [])
    _opened(ctx, sess.session_id)
    return sess


def _opened(ctx: Context[Any], session_id: str) -> None:
    opened = getattr(ctx.connection, "opened_session", None)
    if opened is not None:
        opened(session_id)


async def _load(ctx: Context[s.LoadSessionRequest]) -> s.LoadSessionResponse:
    sess = _reopen(ctx)
    store = _store(ctx)
    conn = ctx.connection
    method = conn.protocol.wire("session_update")
    sid = sess.session_id
    # straight to the peer: a replay is not journaled again
    for update in replay_updates(store.history(sid)):
        await conn.peer.notify(method, orjson.dumps({"sessionId": sid, "update": update}))
    store.save(sess)
    return s.LoadSessionResponse(**ctx.app.session_setup(sess))


async def _resume(ctx: Context[s.ResumeSessionRequest]) -> s.ResumeSessionResponse:
    sess = _reopen(ctx)
    _store(ctx).save(sess)
    return s.ResumeSessionResponse(**ctx.app.session_setup(sess))


async def _list(ctx: Context[s.ListSessionsRequest]) -> s.ListSessionsResponse:
    p = ctx.params
    archived = p.archived if isinstance(p.archived, str) else "exclude"
    page, cursor = _store(ctx).list_sessions(cwd=p.cwd, archived=archived, cursor=p.cursor, limit=PAGE,
                                             principal=principal(ctx.connection))
    infos = [s.SessionInfo(session_id=r.session_id, cwd=r.cwd, title=r.title, updated_at=r.updated_at,
                           archived=r.archived or None,
                           additional_directories=list(r.additional_directories) or None) for r in page]
    return s.ListSessionsResponse(sessions=infos, next_cursor=cursor)


async def _fork(ctx: Context[s.ForkSessionRequest]) -> s.ForkSessionResponse:
    p = ctx.params
    store = _store(ctx)
    new_id = f"sess_{uuid.uuid4().hex}"
    if not store.fork(p.session_id, new_id, p.cwd, p.additional_directories or [], principal(ctx.connection)):
        raise _not_found(p.session_id)
    sess = store.open(new_id)
    assert sess is not None
    sess.mcp_servers = list(p.mcp_servers or [])
    _opened(ctx, new_id)
    return s.ForkSessionResponse(session_id=new_id, **ctx.app.session_setup(sess))


async def _close(ctx: Context[s.CloseSessionRequest]) -> s.CloseSessionResponse:
    sid = ctx.params.session_id
    if sid not in ctx.app.sessions and not _store(ctx).exists(sid):
        raise _not_found(sid)
    return s.CloseSessionResponse()  # (released from memory by the dispatcher, as every close)


async def _delete(ctx: Context[s.DeleteSessionRequest]) -> s.DeleteSessionResponse:
    """Deleting: its running turn ended, its record and history gone (deleting a session that
    is not there, e.g. again, succeeds: the outcome is the same)."""
    await _end(ctx, ctx.params.session_id)
    _store(ctx).delete(ctx.params.session_id)
    return s.DeleteSessionResponse()


async def _archive(ctx: Context[s.ArchiveSessionRequest]) -> s.ArchiveSessionResponse:
    """Archiving an open session closes it first (its running turn cancelled), as the spec says."""
    sid = ctx.params.session_id
    if not _store(ctx).exists(sid):
        raise _not_found(sid)
    await _end(ctx, sid)
    ctx.app.sessions.pop(sid, None)
    _store(ctx).set_archived(sid, True)
    return s.ArchiveSessionResponse()


async def _end(ctx: Context[Any], session_id: str) -> None:
    """End the session's running turn on this connection (answered ``cancelled``)."""
    lifecycle = getattr(ctx.connection, "lifecycle", None)
    if lifecycle is not None:
        await lifecycle.close(session_id)
        return
    from ._dispatch import _end_turn

    await _end_turn(ctx.connection, session_id)


async def _unarchive(ctx: Context[s.UnarchiveSessionRequest]) -> s.UnarchiveSessionResponse:
    if not _store(ctx).set_archived(ctx.params.session_id, False):
        raise _not_found(ctx.params.session_id)
    return s.UnarchiveSessionResponse()


async def _set_title(ctx: Context[s.SetSessionTitleRequest]) -> s.SetSessionTitleResponse:
    p = ctx.params
    if not _store(ctx).set_title(p.session_id, p.title):
        raise _not_found(p.session_id)
    return s.SetSessionTitleResponse(title=p.title)


async def _status(ctx: Context[s.SessionStatusRequest]) -> s.SessionStatusResponse:
    sid = ctx.params.session_id
    if sid in ctx.app.sessions:
        return s.SessionStatusResponse(status="open")
    if _store(ctx).exists(sid):
        return s.SessionStatusResponse(status="saved")
    raise _not_found(sid)
