"""The Waterfall view: every request as a bar from its sending to its response on one time
axis, with the time to the first update of each prompt, the concurrency, the slowest calls."""

from __future__ import annotations

import bisect

from .cache import cached
from .html import esc, fmt_ms, page
from .store import ConnectionRow, Store

__all__ = ["waterfall_page"]

#: bars drawn at most (the slowest list covers the whole connection)
MAX_BARS = 1500


def waterfall_page(store: Store, c: ConnectionRow) -> str:
    return page(f"Waterfall · #{c.id}", cached(store, [c], "waterfall", lambda: _waterfall(store, c)), conn=c.id,
                active="Waterfall")


def _waterfall(store: Store, c: ConnectionRow) -> str:
    rows = store.db.execute(
        "SELECT q.seq, q.dir, q.method, q.mono, r.mono, q.session FROM messages q "
        "LEFT JOIN messages r ON r.conn = q.conn AND r.seq = q.pair "
        "WHERE q.conn = ? AND q.kind = 'request' ORDER BY q.seq", (c.id,)).fetchall()
    span = store.db.execute("SELECT min(mono), max(mono) FROM messages WHERE conn = ?", (c.id,)).fetchone()
    if not rows or span[0] is None:
        return '<p class="dim">No requests recorded.</p>'
    t0, t1 = float(span[0]), float(span[1])
    total = max(t1 - t0, 1e-6)
    # concurrency: the most requests in flight at once
    events = sorted([(q[3], 1) for q in rows] + [(q[4] if q[4] is not None else t1, -1) for q in rows])
    depth = peak = 0
    for _, step in events:
        depth += step
        peak = max(peak, depth)
    # the first session/update after each prompt (one pass over the updates, by session)
    updates: dict[str, tuple[list[int], list[float]]] = {}
    for useq, usession, umono in store.db.execute(
            "SELECT seq, session, mono FROM messages WHERE conn = ? AND method = 'session/update' ORDER BY seq",
            (c.id,)):
        seqs, monos = updates.setdefault(str(usession), ([], []))
        seqs.append(useq)
        monos.append(umono)
    bars = []
    for seq, d, method, start, end, session in rows[:MAX_BARS]:
        done = end is not None
        end = end if done else t1
        left = (start - t0) / total * 100
        width = max((end - start) / total * 100, 0.15)
        first = ""
        if method == "session/prompt" and str(session) in updates:
            seqs, monos = updates[str(session)]
            at = bisect.bisect_right(seqs, seq)
            got = monos[at] if at < len(seqs) and monos[at] <= end else None
            if got is not None:
                first = (f'<span class="first" style="left:{(got - t0) / total * 100:.3f}%" '
                         f'title="first update after {fmt_ms(got - start)}"></span>')
        label = f"{method} ({fmt_ms(end - start) if done else 'no response'})"
        bars.append(f'<div class="wrow"><a class="wlabel" href="/c/{c.id}?at={seq}">#{seq} {esc(label)}</a>'
                    f'<div class="wtrack">{first}<span class="bar {d}{"" if done else " open"}" '
                    f'style="left:{left:.3f}%;width:{width:.3f}%" title="{esc(label)}"></span></div></div>')
    slow = sorted((q for q in rows if q[4] is not None), key=lambda q: q[3] - q[4])[:10]
    slow_rows = "".join(f'<tr><td><a href="/c/{c.id}?at={q[0]}">#{q[0]}</a></td><td>{esc(q[2])}</td>'
                        f"<td>{esc(q[1])}</td><td>{fmt_ms(q[4] - q[3])}</td></tr>" for q in slow)
    more = f'<p class="dim">(first {MAX_BARS} of {len(rows)} requests drawn)</p>' if len(rows) > MAX_BARS else ""
    body = (f'<p>{len(rows)} requests over {fmt_ms(total)} · at most {peak} in flight at once · '
            f'<span class="legend c2a">client → agent</span> <span class="legend a2c">agent → client</span> '
            f'<span class="legend firstl">first update</span></p>{more}'
            f'<div class="waterfall" id="waterfall">{"".join(bars)}</div>'
            f'<h3>Slowest calls</h3><table class="list"><thead><tr><th>#</th><th>method</th><th>dir</th>'
            f"<th>time to response</th></tr></thead><tbody>{slow_rows}</tbody></table>")
    return body
