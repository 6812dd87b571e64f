"""Cached views: the views that read a whole session (findings, conversation, waterfall, diff)
of a connection that has ended are computed once and kept in the database (table ``views``),
keyed by the last message row id they saw. Rows added later (a recovered spool) make the entry
stale and it is computed again; a live connection is never cached.

:func:`warm` computes them ahead of the first look: ``acplink record --db`` when the traffic
has ended, ``acplink devtools import`` after an import."""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Callable, Sequence

from .store import ConnectionRow, Store

__all__ = ["cached", "warm", "warm_all"]


def _last_row(store: Store, conns: Sequence[int]) -> int:
    marks = ",".join("?" * len(conns))
    got = store.db.execute(f"SELECT coalesce(max(id), 0) FROM messages WHERE conn IN ({marks})", tuple(conns))
    return int(got.fetchone()[0])


def cached(store: Store, conns: Sequence[ConnectionRow], name: str, compute: Callable[[], str]) -> str:
    """The view ``name`` of ``conns[0]`` (and the other connections it reads), from the cache
    if none of them got a row since it was computed, else computed (and kept if all ended)."""
    if any(c.ended is None for c in conns):
        return compute()
    upto = _last_row(store, [c.id for c in conns])
    got = store.db.execute("SELECT upto, data FROM views WHERE conn = ? AND name = ?", (conns[0].id, name)).fetchone()
    if got is not None and got[0] == upto and got[1] is not None:
        return bytes(got[1]).decode()
    html = compute()
    try:
        with store.lock:
            store.db.execute("INSERT OR REPLACE INTO views (conn, name, upto, data) VALUES (?, ?, ?, ?)",
                             (conns[0].id, name, upto, html.encode()))
    except sqlite3.Error:
        pass  # (a read-only or busy database: the view is served, just not kept)
    return html


def warm(store: Store, conn: int, stop: threading.Event | None = None) -> None:
    """Compute and keep the views of an ended connection (its schema validation first);
    ``stop``: give up between two steps once it is set."""
    from .compare import steps
    from .conversation import conversation_page
    from .views import findings_page
    from .waterfall import waterfall_page

    def stopped() -> bool:
        return stop is not None and stop.is_set()

    while store.validate_pending(conn, budget=0.2):
        if stopped():
            return
    c = store.connection(conn)
    if c is None or c.ended is None:
        return
    views: list[Callable[[], object]] = [lambda: findings_page(store, c), lambda: waterfall_page(store, c)]
    views += [functools.partial(conversation_page, store, c, s) for s in c.sessions or ("",)]
    views += [functools.partial(steps, store, c.id, s) for s in ("", *c.sessions)]  # (for the diff)
    for view in views:
        if stopped():
            return
        view()


def warm_all(store: Store, stop: threading.Event) -> None:
    """:func:`warm` every ended connection, newest first, until ``stop`` is set (the devtools
    server runs it in a thread, with its own :class:`Store`, for recordings that were not
    warmed: recovered from a spool, made by an older acplink). A database error ends it."""
    try:
        for (conn,) in store.db.execute("SELECT id FROM connections WHERE ended IS NOT NULL ORDER BY id DESC")\
                .fetchall():
            if stop.is_set():
                return
            warm(store, int(conn), stop)
    except sqlite3.Error:
        pass
