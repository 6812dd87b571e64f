"""The pages over the stored traffic: sessions list, timeline (paginated, filtered), message
detail (pretty JSON, schema violations, the paired request/response), findings, export."""

from __future__ import annotations

import datetime
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from ..tools.analysis import FINDING_CODES, analyze
from ..tools.mcp_traffic import McpExchange
from .cache import cached
from .html import DETAIL_LIMIT, esc, fmt_ms, fmt_size, page, pretty_json
from .store import EXPECTED_ERROR, ConnectionRow, Store, row_record

__all__ = ["PAGE", "Filters", "detail_html", "export_lines", "findings_page", "sessions_page", "sessions_rows",
           "timeline_page", "timeline_rows"]

#: timeline rows per page (more are fetched as the list scrolls)
PAGE = 200


def _when(wall: float | None) -> str:
    if wall is None:
        return ""
    return datetime.datetime.fromtimestamp(wall).strftime("%Y-%m-%d %H:%M:%S")


def sessions_rows(store: Store, search: str = "") -> str:
    out = []
    for c in store.connections(search):
        live = c.ended is None
        sessions = " ".join(f'<a href="/c/{c.id}/conversation?session={esc(s)}" class="sid">{esc(s[:12])}</a>'
                            for s in c.sessions[:6])
        out.append(
            f'<tr data-conn="{c.id}"><td><a href="/c/{c.id}">#{c.id}</a></td>'
            f'<td>{esc(c.agent)}</td><td>{esc(c.client)}</td><td class="src" title="{esc(c.source)}">{esc(c.source[:80])}</td>'
            f"<td>{_when(c.started)}</td><td>{fmt_ms(c.duration)}</td><td>{c.turns}</td>"
            f'<td class="{"bad" if c.errors else ""}">{c.errors}</td><td>{c.messages}</td>'
            f"<td>{sessions}</td>"
            f'<td>{"<span class=live>live</span>" if live else esc(c.exit_code if c.exit_code is not None else "")}'
            f"</td></tr>")
    if not out:
        out.append('<tr><td colspan="11" class="empty">no recordings yet: run <code>acplink record --db -- '
                   "AGENT_CMD</code>, import a trace or use Connect</td></tr>")
    return "".join(out)


def sessions_page(store: Store, search: str = "") -> str:
    body = (f'<form class="bar" method="get"><input name="q" value="{esc(search)}" placeholder="search agent, '
            f'command, session id" id="search" aria-label="search recordings"><button>Search</button>'
            f'<a class="btn" href="/diff">Compare two…</a></form>'
            f'<table class="list" id="sessions" data-live-reload="/partial/sessions?q={esc(search)}" '
            f'data-since="{esc(store.live_state())}">'
            f"<thead><tr><th>#</th><th>agent</th><th>client</th><th>source</th><th>start</th><th>duration</th><th>turns</th>"
            f"<th>errors</th><th>messages</th><th>sessions</th><th>exit</th></tr></thead>"
            f"<tbody>{sessions_rows(store, search)}</tbody></table>")
    return page("Sessions", body, active="Sessions")


@dataclass
class Filters:
    method: str = ""
    dir: str = ""
    session: str = ""
    errors: bool = False
    q: str = ""

    @classmethod
    def of(cls, query: Any) -> Filters:
        return cls(query.get("method", ""), query.get("dir", ""), query.get("session", ""),
                   query.get("errors", "") not in ("", "0"), query.get("q", ""))

    def sql(self) -> tuple[str, list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if self.method:
            where.append("method = ?")
            params.append(self.method)
        if self.dir in ("c2a", "a2c"):
            where.append("dir = ?")
            params.append(self.dir)
        if self.session:
            where.append("session = ?")
            params.append(self.session)
        if self.errors:
            where.append("(error = 1 OR violations IS NOT NULL)")
        if self.q:
            where.append("instr(body, ?) > 0")
            params.append(self.q.encode())
        return " AND ".join(where), params

    def query(self) -> str:
        from urllib.parse import urlencode

        items = {"method": self.method, "dir": self.dir, "session": self.session,
                 "errors": "1" if self.errors else "", "q": self.q}
        return urlencode({k: v for k, v in items.items() if v})


_COLS = "seq, dir, wall, mono, kind, method, rid, session, size, error, violations, pair, latency"


def timeline_rows(store: Store, conn: int, f: Filters, after: int = 0, limit: int = PAGE) -> tuple[str, int | None]:
    """Table rows after ``seq`` ``after`` and the last seq shown (None: nothing more)."""
    where, params = f.sql()
    where = f"seq > ?{' AND ' + where if where else ''}"
    rows = store.rows(conn, where, [after, *params], limit=limit, columns=_COLS)
    start = _start(store, conn)
    out = []
    for r in rows:
        bad = r["error"] == 1 or r["violations"] is not None
        flag = ('<span class="info" title="an expected error (a read of a file that does not exist): '
                'informational">&#8505;</span>' if r["error"] == EXPECTED_ERROR else "✖" if r["error"] else "")
        arrow = "→" if r["dir"] == "c2a" else "←"
        rid = "" if r["rid"] is None else r["rid"]
        out.append(
            f'<tr class="msg {r["dir"]}{" bad" if bad else ""}" data-seq="{r["seq"]}">'
            f'<td>{r["seq"]}</td><td>{fmt_ms((r["mono"] or 0) - start) if r["mono"] else ""}</td>'
            f'<td title="{"client → agent" if r["dir"] == "c2a" else "agent → client"}">{arrow} {r["dir"]}</td>'
            f'<td>{esc(r["kind"])}</td><td class="method">{esc(r["method"] or "")}</td><td>{esc(rid)}</td>'
            f'<td class="sid">{esc((r["session"] or "")[:12])}</td><td>{fmt_size(r["size"])}</td>'
            f'<td>{fmt_ms(r["latency"])}</td><td>{"⚠" if r["violations"] else ""}{flag}</td>'
            "</tr>")
    return "".join(out), (rows[-1]["seq"] if len(rows) == limit else None)


def _start(store: Store, conn: int) -> float:
    got = store.db.execute("SELECT mono FROM messages WHERE conn = ? ORDER BY seq LIMIT 1", (conn,)).fetchone()
    return float(got[0] or 0.0) if got else 0.0


def _options(values: list[str], chosen: str, label: str) -> str:
    opts = [f'<option value="">{label}</option>']
    opts += [f'<option{" selected" if v == chosen else ""} value="{esc(v)}">{esc(v)}</option>' for v in values]
    return "".join(opts)


def timeline_page(store: Store, c: ConnectionRow, f: Filters, at: int | None = None) -> str:
    conn = c.id
    since = store.live_state()  # (before the rows: a row stored in between comes again, never not at all)
    methods = [r[0] for r in store.db.execute(
        "SELECT DISTINCT method FROM messages WHERE conn = ? AND method IS NOT NULL ORDER BY method", (conn,))]
    after = max(0, at - 20) if at else 0
    rows, last = timeline_rows(store, conn, f, after)
    total = store.db.execute("SELECT count(*) FROM messages WHERE conn = ?", (conn,)).fetchone()[0]
    form = (f'<form class="bar" method="get" id="filters">'
            f'<select name="method" aria-label="method">{_options(methods, f.method, "any method")}</select>'
            f'<select name="dir" aria-label="direction">{_options(["c2a", "a2c"], f.dir, "both directions")}</select>'
            f'<select name="session" aria-label="session">{_options(list(c.sessions), f.session, "any session")}</select>'
            f'<label><input type="checkbox" name="errors" value="1"{" checked" if f.errors else ""}> errors only'
            f'</label><input name="q" value="{esc(f.q)}" placeholder="text in the message" aria-label="text in the message">'
            f"<button>Filter</button></form>")
    info = (f'<p class="dim">{total} messages · agent {esc(c.agent)} · client {esc(c.client)} · {esc(c.source)}'
            f'{" · <span class=live>live</span>" if c.ended is None else ""}</p>')
    table = (f'<div class="split"><div class="rows" id="rows-box"><table class="list timeline" id="timeline" '
             f'data-conn="{conn}" data-filters="{esc(f.query())}" data-last="{last if last is not None else ""}" '
             f'data-live="{1 if c.ended is None else 0}" data-since="{esc(since)}" data-open="{at or ""}">'
             f"<thead><tr><th>#</th><th>time</th><th>dir</th><th>kind</th><th>method</th><th>id</th>"
             f"<th>session</th><th>size</th><th>latency</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
             f'<div id="more"></div></div><aside id="detail"><p class="dim">Select a message.</p></aside></div>')
    return page(f"Connection #{conn}", info + form + table, conn=conn, active="Timeline")


def _body_block(store: Store, conn: int, seq: int, title: str) -> tuple[str, sqlite3.Row | None]:
    rows = store.rows(conn, "seq = ?", [seq], columns=f"{_COLS}, is_json, substr(body, 1, {DETAIL_LIMIT + 1}) AS "
                                                        "head")
    if not rows:
        return "", None
    r = rows[0]
    text, cut = pretty_json(r["head"], r["size"], bool(r["is_json"]))
    note = ""
    if cut:
        note = (f'<p class="warn">Truncated: showing the first {fmt_size(DETAIL_LIMIT)} of {fmt_size(r["size"])}. '
                f'<a href="/c/{conn}/m/{seq}/raw" download="message-{conn}-{seq}.json">Download the whole '
                f"message</a></p>")
    return (f'<h3>{esc(title)} #{seq} <span class="dim">{esc(r["dir"])} {esc(r["kind"])} '
            f'{esc(r["method"] or "")} · {fmt_size(r["size"])}</span></h3>{note}'
            f'<pre class="json">{esc(text)}</pre>'), r


def detail_html(store: Store, conn: int, seq: int) -> str | None:
    store.validate_pending(conn, seq)  # (a row stored unvalidated: its result is shown, and kept)
    block, r = _body_block(store, conn, seq, "Message")
    if r is None:
        return None
    parts = [f'<div class="detail" data-seq="{seq}"><div class="acts"><button data-copy="/c/{conn}/m/{seq}/raw">'
             f'Copy as JSON</button> <a href="/c/{conn}/m/{seq}/raw" download="message-{conn}-{seq}.json">'
             f"Download</a></div>", block]
    if r["violations"]:
        items = "".join(f'<li><code>{esc(v.get("path"))}</code> {esc(v.get("message"))}'
                        f'{" <span class=dim>(strict only)</span>" if v.get("strict_only") else ""}</li>'
                        for v in orjson.loads(r["violations"]))
        parts.insert(1, f'<div class="violations"><b>Schema validation: errors</b><ul>{items}</ul></div>')
    elif r["is_json"]:
        parts.insert(1, '<div class="valid">Schema validation: valid</div>')
    if r["error"] == EXPECTED_ERROR:
        parts.insert(1, '<div class="expected">An expected error (informational): a read of a file that does not '
                        "exist, as an agent does before it writes a new file.</div>")
    if r["pair"] is not None:
        title = "Response" if r["kind"] == "request" else "Request"
        lat = f' <span class="dim">latency {fmt_ms(r["latency"])}</span>' if r["latency"] is not None else ""
        pair, _ = _body_block(store, conn, int(r["pair"]), title)
        parts.append(f'<div class="pair">{lat}{pair}</div>')
    elif r["kind"] == "request":
        parts.append('<p class="warn">No response recorded.</p>')
    parts.append("</div>")
    return "".join(parts)


def findings_page(store: Store, c: ConnectionRow) -> str:
    body = cached(store, [c], "findings", lambda: _findings(store, c))
    return page(f"Findings · #{c.id}", body, conn=c.id, active="Findings")


def _findings(store: Store, c: ConnectionRow) -> str:
    t = analyze(list(store.records(c.id)))
    if not t.findings:
        body = '<p class="ok">No findings: every message matches the schema and the protocol order.</p>'
    else:
        rows = "".join(
            f'<tr><td>{f"<a href=/c/{c.id}?at={f.seq}>#{f.seq}</a>" if f.seq else ""}</td><td>{esc(f.dir)}</td>'
            f'<td title="{esc(FINDING_CODES.get(f.code, ""))}">{esc(f.code)}</td><td>{esc(f.message)}</td></tr>'
            for f in t.findings)
        body = (f'<p>{len(t.findings)} findings (the analysis of <code>acplink inspect</code>).</p>'
                f'<table class="list" id="findings"><thead><tr><th>message</th><th>dir</th><th>finding</th>'
                f"<th>detail</th></tr></thead><tbody>{rows}</tbody></table>")
    return body + _mcp_table(c.id, t.mcp) if t.mcp else body


def _mcp_table(conn: int, exchanges: list[McpExchange]) -> str:
    """MCP-over-ACP as tool traffic: each ``mcp/message`` with its server, inner method, tool,
    latency and outcome (an inner error is the MCP server's; an outer error the binding's)."""
    rows = []
    for e in exchanges:
        outcome = ("(no answer)" if e.outcome is None else e.outcome if e.outcome == "result"
                   else f"{e.outcome} {e.code} {e.message or ''}")
        server = e.server if e.server is not None else "(never declared)"
        rows.append(f'<tr><td>{f"<a href=/c/{conn}?at={e.seq}>#{e.seq}</a>" if e.seq else ""}</td>'
                    f"<td>{esc(server)} <span class=dim>{esc(e.server_id or '')}</span></td>"
                    f"<td>{esc(e.method or '?')}</td><td>{esc(e.tool or '')}</td>"
                    f"<td>{fmt_ms(e.latency)}</td><td>{esc(outcome)}</td><td>{e.notifications or ''}</td></tr>")
    return (f"<h2>MCP over ACP</h2><p>{len(exchanges)} <code>mcp/message</code> requests.</p>"
            '<table class="list" id="mcp"><thead><tr><th>message</th><th>server</th><th>method</th><th>tool</th>'
            f"<th>latency</th><th>outcome</th><th>notifications</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def export_lines(store: Store, conn: int) -> Iterator[bytes]:
    """The connection as a JSON-lines trace (the format of ``acplink record --out``)."""
    c = store.connection(conn)
    header = {"type": "header", "format": "acplink-trace", "version": 1, **((c.header if c else None) or {})}
    yield orjson.dumps(header, option=orjson.OPT_APPEND_NEWLINE)
    last = 0
    while True:
        rows = store.rows(conn, "seq > ?", [last], limit=2000)
        for r in rows:
            rec = row_record(r)
            for key in ("kind", "method"):
                if r[key] is not None:
                    rec[key] = r[key]
            yield orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE)
        if len(rows) < 2000:
            break
        last = rows[-1]["seq"]
    if c is not None and c.exit_code is not None:
        yield orjson.dumps({"type": "exit", "code": c.exit_code}, option=orjson.OPT_APPEND_NEWLINE)
