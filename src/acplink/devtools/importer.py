"""``acplink devtools import TRACE...``: JSON-lines traces into the devtools database.

A damaged trace (cut off by a killed recorder, a corrupt line in the middle) is imported as far
as it is readable: every good line goes in, and the numbers of the bad ones are reported."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import orjson

from .store import DatabaseError, Ingest, Store

__all__ = ["ImportResult", "import_trace"]


@dataclass
class ImportResult:
    path: str
    conn: int | None = None
    messages: int = 0
    bad_lines: list[int] = field(default_factory=list)


def import_trace(store: Store, path: str | os.PathLike[str], *, source: str | None = None) -> ImportResult:
    """Import one trace file as a new connection (named ``source``, default "import FILE").
    Lines that are not JSON objects are skipped and listed in :attr:`ImportResult.bad_lines`;
    a file that cannot be read raises :class:`DatabaseError`."""
    result = ImportResult(os.fspath(path))
    ingest = Ingest(store, source or f"import {os.path.basename(path)}")
    try:
        with open(path, "rb") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError:
                    result.bad_lines.append(n)
                    continue
                if not isinstance(rec, dict) or not isinstance(rec.get("type"), str) or (
                        rec["type"] == "message" and rec.get("dir") not in ("c2a", "a2c")):
                    result.bad_lines.append(n)
                    continue
                if rec["type"] == "message":
                    result.messages += 1
                ingest(rec)
    except OSError as exc:
        raise DatabaseError(f"cannot read the trace {os.fspath(path)!r}: {exc.strerror or exc}") from None
    finally:
        ingest.close()
    result.conn = ingest.conn
    if ingest.conn is not None and not ingest.failed:
        from .cache import warm

        warm(store, ingest.conn)  # (validation and the whole-session views, before the first look)
    return result
