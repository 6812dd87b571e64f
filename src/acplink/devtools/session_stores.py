"""The session stores devtools shows next to the recordings (``acplink devtools --store
STORE``): what an agent remembers, read-only (:mod:`acplink.agent.store_reader`: never written,
migrated or leased). ``/stores`` lists each store's sessions; ``/stores/N/s/ID`` shows one
session's metadata and history. Each page opens its store for the time it is built."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..agent.store_reader import StoreReader, describe_entry, open_store_reader
from ..errors import StoreError
from .html import esc, page

__all__ = ["SessionStores"]


class SessionStores:
    """The stores given to devtools (SQLite files, PostgreSQL URLs), by their number."""

    def __init__(self, targets: Sequence[str]) -> None:
        self.targets = list(targets)

    def open(self, n: int) -> StoreReader:
        return open_store_reader(self.targets[n])

    def list_page(self) -> str:
        if not self.targets:
            body = ('<p class="empty">No session store: start devtools with <code>acplink devtools --store '
                    "PATH.sqlite3</code> (or <code>--store postgresql://…</code>) to see what an agent "
                    "remembers.</p>")
            return page("Session stores", body, active="Stores")
        parts = []
        for n, target in enumerate(self.targets):
            try:
                with self.open(n) as reader:
                    rows = reader.sessions()
                    name, version = reader.name, reader.schema_version
            except StoreError as exc:
                parts.append(f'<section class="store"><h3>{esc(target)}</h3><p class="bad">{esc(exc)}</p></section>')
                continue
            cells = "".join(
                f'<tr data-session="{esc(r.session_id)}"><td><a class="sid" href="/stores/{n}/s/{esc(r.session_id)}">'
                f"{esc(r.session_id)}</a></td><td>{esc(r.title or '')}</td><td>{esc(r.principal)}</td>"
                f"<td>{esc(r.cwd)}</td><td>{esc(r.updated_at)}</td><td>{r.turns}</td>"
                f"<td>{'archived' if r.archived else ''}</td>"
                f"<td>{'<span class=live>held by ' + esc(r.held_by) + '</span>' if r.held_by else ''}</td></tr>"
                for r in rows) or '<tr><td colspan="8" class="empty">no sessions stored</td></tr>'
            parts.append(
                f'<section class="store" data-store="{n}"><h3>{esc(name)} <span class="dim">(schema version '
                f"{version}, {len(rows)} session{'' if len(rows) == 1 else 's'}, read-only)</span></h3>"
                '<table class="list"><thead><tr><th>session</th><th>title</th><th>principal</th><th>cwd</th>'
                f"<th>updated</th><th>turns</th><th>archived</th><th>held</th></tr></thead><tbody>{cells}</tbody>"
                "</table></section>")
        return page("Session stores", "".join(parts), active="Stores")

    def session_page(self, n: int, session_id: str) -> str | None:
        """One session's page (None: no such store or session)."""
        if not 0 <= n < len(self.targets):
            return None
        try:
            with self.open(n) as reader:
                found = reader.session(session_id)
                if found is None:
                    return None
                history = reader.history(session_id)
                name = reader.name
        except StoreError as exc:
            return page("Session store", f'<p class="bad">{esc(exc)}</p>', active="Stores")
        meta = [("store", name), ("principal", found.principal), ("cwd", found.cwd),
                ("directories", ", ".join(found.additional_directories)), ("title", found.title or ""),
                ("mode", found.mode or ""), ("model", found.model or ""),
                ("config", json.dumps(found.config) if found.config else ""),
                ("created", found.created_at), ("updated", found.updated_at),
                ("archived", "yes" if found.archived else "no"), ("held by", found.held_by or "nobody")]
        rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in meta)
        entries = []
        for e in history:
            what, text = describe_entry(e)
            entries.append(f'<tr class="entry {esc(e.kind)}"><td>{e.turn}</td><td>{esc(what)}</td>'
                           f'<td><pre>{esc(text)}</pre></td></tr>')
        body = (f'<p><a href="/stores">← all stored sessions</a></p><table class="meta">{rows}</table>'
                f"<h3>History ({len(history)} entries)</h3>"
                '<table class="list" id="history"><thead><tr><th>turn</th><th>what</th><th>content</th></tr></thead>'
                f"<tbody>{''.join(entries) or '<tr><td colspan=3 class=empty>nothing yet</td></tr>'}</tbody></table>")
        return page(f"Session {session_id}", body, active="Stores")
