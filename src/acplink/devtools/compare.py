"""The Diff view: two connections (or two sessions) side by side, aligned by turn and method;
runs of the same streamed update are folded into one step (with their text), and steps that
differ (missing on one side, other method, other text) are highlighted."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Any

import orjson

from .cache import cached
from .html import esc, page
from .store import Store

__all__ = ["diff_page"]


@dataclass
class Step:
    key: str  # what aligns: direction, kind, method (and the update's kind)
    turn: int
    seq: int
    count: int = 1
    text: str = ""
    more: list[str] | None = None  # (the texts of the folded run, joined once at the end)


def _update_text(msg: Any) -> str:
    upd = ((msg or {}).get("params") or {}).get("update") if isinstance(msg, dict) else None
    content = upd.get("content") if isinstance(upd, dict) else None
    return str(content.get("text", "")) if isinstance(content, dict) else ""


def steps(store: Store, conn: int, session: str = "") -> list[Step]:
    """The connection's (or session's) steps; kept with the cached views once it has ended, so
    a diff against it reads a few folded steps instead of every message."""
    c = store.connection(conn)
    if c is None:
        return []
    data = cached(store, [c], f"steps {session}",
                  lambda: orjson.dumps([dataclasses.astuple(s) for s in _steps(store, conn, session)]).decode())
    return [Step(*t) for t in orjson.loads(data)]


def _steps(store: Store, conn: int, session: str) -> list[Step]:
    where, params = ("session = ?", [session]) if session else ("", [])
    out: list[Step] = []
    turn = 0
    for r in store.rows(conn, where, params, columns="seq, dir, kind, method, is_json, body"):
        msg = orjson.loads(r["body"]) if r["is_json"] else None
        key = f'{r["dir"]} {r["kind"]} {r["method"] or ""}'.strip()
        text = ""
        if r["method"] == "session/update" and isinstance(msg, dict):
            upd = (msg.get("params") or {}).get("update") or {}
            key += f' {upd.get("sessionUpdate")}' if isinstance(upd, dict) else ""
            text = _update_text(msg)
        if r["kind"] == "request" and r["method"] == "session/prompt":
            turn += 1
            prompt = ((msg or {}).get("params") or {}).get("prompt") if isinstance(msg, dict) else None
            text = " ".join(str(b.get("text", "")) for b in prompt or [] if isinstance(b, dict))
        if out and out[-1].key == key and r["method"] == "session/update":
            last = out[-1]
            last.count += 1
            if last.more is None:
                last.more = [last.text]
            last.more.append(text)
            continue
        out.append(Step(key, turn, r["seq"], 1, text))
    for s in out:
        if s.more is not None:
            s.text, s.more = "".join(s.more), None
    return out


def _cell(conn: int, s: Step | None, cls: str) -> str:
    if s is None:
        return f'<td class="{cls} none"></td><td class="{cls} none"></td>'
    times = f" \u00d7{s.count}" if s.count > 1 else ""
    text = f'<div class="stext">{esc(s.text[:300])}</div>' if s.text else ""
    return (f'<td class="{cls} turn">{s.turn or ""}</td><td class="{cls}"><a href="/c/{conn}?at={s.seq}">'
            f"#{s.seq}</a> {esc(s.key)}{times}{text}</td>")


def _preselect(conns: list[Any], a: str, b: str) -> tuple[str, str]:
    """The recordings the form shows chosen: those asked for, else two different ones (the
    older of the two newest on the left, the newest on the right)."""
    ids = [str(c.id) for c in conns]
    if not a:
        a = next((i for i in ids[1:] if i != b), "") if not b else next((i for i in ids if i != b), "")
    if not b:
        b = next((i for i in ids if i != a), "")
    return a, b


def _pick_form(store: Store, a: str, b: str, sa: str, sb: str) -> str:
    conns = store.connections()
    a, b = _preselect(conns, a, b)

    def options(chosen: str) -> str:
        return "".join(f'<option value="{c.id}"{" selected" if str(c.id) == chosen else ""}>#{c.id} '
                       f'{esc(c.agent_name or "?")} · {esc(c.source[:50])}</option>' for c in conns)

    return (f'<form class="bar" method="get" id="diffform">'
            f'<select name="a" aria-label="left recording">{options(a)}</select>'
            f'<input name="sa" value="{esc(sa)}" placeholder="session (optional)" aria-label="left session">'
            f'<select name="b" aria-label="right recording">{options(b)}</select><input name="sb" '
            f'value="{esc(sb)}" placeholder="session (optional)" aria-label="right session">'
            f'<button>Compare</button></form>')


def diff_page(store: Store, query: Any) -> str:
    a, b = query.get("a", ""), query.get("b", "")
    sa, sb = query.get("sa", ""), query.get("sb", "")
    form = _pick_form(store, a, b, sa, sb)
    ca = store.connection(int(a)) if a.isdigit() else None
    cb = store.connection(int(b)) if b.isdigit() else None
    if ca is None or cb is None:
        return page("Diff", form + '<p class="dim">Pick two recordings to compare.</p>', active="Diff")
    body = cached(store, [ca, cb], f"diff {b} {sa} {sb}", lambda: _diff(store, a, b, sa, sb))
    return page("Diff", form + body, active="Diff")


def _diff(store: Store, a: str, b: str, sa: str, sb: str) -> str:
    left, right = steps(store, int(a), sa), steps(store, int(b), sb)
    matcher = difflib.SequenceMatcher(None, [s.key for s in left], [s.key for s in right], autojunk=False)
    rows = []
    changed = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        for k in range(max(i2 - i1, j2 - j1)):
            ls = left[i1 + k] if i1 + k < i2 else None
            rs = right[j1 + k] if j1 + k < j2 else None
            if op == "equal" and ls is not None and rs is not None:
                cls = "same" if (ls.text, ls.count) == (rs.text, rs.count) else "text"
            else:
                cls = "changed" if ls is not None and rs is not None else ("only-a" if rs is None else "only-b")
            changed += cls != "same"
            rows.append(f'<tr class="{cls}">{_cell(int(a), ls, "a")}{_cell(int(b), rs, "b")}</tr>')
    summary = (f'<p>{len(left)} steps vs {len(right)} steps · <b>{changed}</b> differ · '
               f'<span class="legend changed">other step</span> <span class="legend text">other text or count'
               f'</span> <span class="legend only-a">only in #{esc(a)}</span> '
               f'<span class="legend only-b">only in #{esc(b)}</span></p>')
    table = (f'<table class="list diff2" id="diff"><thead><tr><th>turn</th><th>#{esc(a)} {esc(sa)}</th>'
             f'<th>turn</th><th>#{esc(b)} {esc(sb)}</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')
    return summary + table
