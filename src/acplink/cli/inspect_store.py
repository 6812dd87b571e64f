"""``acplink inspect STORE [--session ID] [--json]``: what a session store remembers, read-only
(:mod:`acplink.agent.store_reader`): its sessions (every principal's, archived ones too), or one
session's metadata and history."""

from __future__ import annotations

import datetime
import json
import sys
from typing import Any

__all__ = ["is_store", "show_store"]


def is_store(target: str) -> bool:
    """Whether ``target`` is for the store view: a PostgreSQL URL or a SQLite file."""
    if target.startswith(("postgresql://", "postgres://")):
        return True
    try:
        with open(target, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def show_store(target: str, session: str | None, as_json: bool) -> int:
    from .._text import sanitize_for_terminal
    from ..agent.store_reader import open_store_reader
    from ..errors import StoreError
    from .common import fail

    try:
        with open_store_reader(target) as reader:
            if session is None:
                rows = reader.sessions()
                if as_json:
                    _dump({"store": reader.name, "schemaVersion": reader.schema_version,
                           "sessions": [r.as_json() for r in rows]})
                    return 0
                print(f"session store {reader.name} (schema version {reader.schema_version}): "
                      f"{len(rows)} session{'' if len(rows) == 1 else 's'}")
                for r in rows:
                    flags = "".join((" archived" if r.archived else "",
                                     f" held by {r.held_by}" if r.held_by else ""))
                    print(sanitize_for_terminal(
                        f"{r.session_id}  {_when(r.updated_at)}  {r.principal}  turns {r.turns}{flags}  "
                        f"{r.cwd}  {json.dumps(r.title) if r.title else '(untitled)'}"))
                return 0
            found = reader.session(session)
            if found is None:
                return fail(f"session store {reader.name}: no session {session!r}", 2)
            history = reader.history(session)
    except StoreError as exc:
        return fail(str(exc), 2)
    if as_json:
        _dump({"session": found.as_json(), "history": [_entry_json(e) for e in history]})
        return 0
    print(sanitize_for_terminal(f"session {found.session_id} ({found.principal}), cwd {found.cwd}, "
                                f"title {json.dumps(found.title) if found.title else '(none)'}, "
                                f"updated {_when(found.updated_at)}"
                                + (", archived" if found.archived else "")
                                + (f", held by {found.held_by}" if found.held_by else "")))
    for e in history:
        print(sanitize_for_terminal(f"  turn {e.turn:<3} {_describe(e)}"))
    return 0


def _dump(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def _when(stamp: str) -> str:
    try:
        return datetime.datetime.fromisoformat(stamp).strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return stamp


def _entry_json(e: Any) -> dict[str, Any]:
    return {"kind": e.kind, "turn": e.turn, "text": e.text, "stopReason": e.stop_reason,
            "interrupted": e.interrupted, "update": e.update}


def _describe(e: Any) -> str:
    from ..agent.store_reader import describe_entry

    what, text = describe_entry(e)
    return f"{what:<14} {text}"
