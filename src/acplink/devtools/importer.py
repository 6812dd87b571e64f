"""``acplink devtools import TRACE...``: JSON-lines traces into the devtools database.

A damaged trace (cut off by a killed recorder, a corrupt line in the middle) is imported as far
as it is readable: every good line goes in, and the numbers of the bad ones are reported.

A conductor's trace (``acplink conduct --trace``) is imported as one connection per hop of the
chain (``client ↔ proxy:0``, ``proxy:0 ↔ agent``, ...), each named after its hop."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..tools.hops import hop_messages, is_hop_event
from .store import DatabaseError, Ingest, Store

__all__ = ["ImportResult", "import_trace"]


@dataclass
class ImportResult:
    path: str
    conn: int | None = None
    messages: int = 0
    bad_lines: list[int] = field(default_factory=list)
    #: a conductor's trace: (hop, connection, messages) for each hop, in chain order
    hops: list[tuple[str, int, int]] = field(default_factory=list)


def import_trace(store: Store, path: str | os.PathLike[str], *, source: str | None = None) -> ImportResult:
    """Import one trace file as a new connection (named ``source``, default "import FILE").
    Lines that are not JSON objects are skipped and listed in :attr:`ImportResult.bad_lines`;
    a file that cannot be read raises :class:`DatabaseError`."""
    result = ImportResult(os.fspath(path))
    if _first_is_hop_event(path):
        return _import_hops(store, path, result)
    ingest = Ingest(store, source or f"import {os.path.basename(path)}")
    try:
        for n, rec in _decoded(path):
            if not isinstance(rec, dict) or not isinstance(rec.get("type"), str) or (
                    rec["type"] == "message" and rec.get("dir") not in ("c2a", "a2c")):
                result.bad_lines.append(n)
                continue
            if rec["type"] == "message":
                result.messages += 1
            ingest(rec)
    finally:
        ingest.close()
    result.conn = ingest.conn
    if ingest.conn is not None and not ingest.failed:
        from .cache import warm

        warm(store, ingest.conn)  # (validation and the whole-session views, before the first look)
    return result


def _first_is_hop_event(path: str | os.PathLike[str]) -> bool:
    """Whether the file's first line is a conductor's hop event (a conductor's trace)."""
    try:
        for _, rec in _decoded(path):
            return is_hop_event(rec)
    except DatabaseError:
        pass  # (the ordinary import says why it cannot be read)
    return False


def _import_hops(store: Store, path: str | os.PathLike[str], result: ImportResult) -> ImportResult:
    events: list[dict[str, object]] = []
    for n, rec in _decoded(path):
        if is_hop_event(rec):
            events.append(rec)
        else:
            result.bad_lines.append(n)
    for hop, records in hop_messages(events).items():
        ingest = Ingest(store, f"import {os.path.basename(path)} ({hop})")
        try:
            for rec in records:
                ingest(rec)
        finally:
            ingest.close()
        if ingest.conn is not None:
            result.hops.append((hop, ingest.conn, len(records)))
            result.messages += len(records)
            result.conn = result.conn or ingest.conn
            if not ingest.failed:
                from .cache import warm

                warm(store, ingest.conn)
    return result


def _decoded(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's number and its JSON value (None: not JSON); a file that cannot be
    read raises :class:`DatabaseError`."""
    try:
        with open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    try:
                        yield n, orjson.loads(line)
                    except orjson.JSONDecodeError:
                        yield n, None
    except OSError as exc:
        raise DatabaseError(f"cannot read the trace {os.fspath(path)!r}: {exc.strerror or exc}") from None
