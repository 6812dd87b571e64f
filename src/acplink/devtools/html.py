"""Small HTML helpers for the devtools pages: escaping, the page layout, sizes and times, a
minimal Markdown renderer (agent replies), a unified diff, pretty JSON with a size limit."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from html import escape
from typing import Any

import orjson

__all__ = ["DETAIL_LIMIT", "diff_html", "esc", "fmt_ms", "fmt_size", "markdown", "page", "pretty_json"]

#: a message body larger than this is shown truncated (with a download link)
DETAIL_LIMIT = 256 * 1024


def esc(x: Any) -> str:
    return escape("" if x is None else str(x), quote=True)


def fmt_size(n: int | None) -> str:
    if n is None:
        return ""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


def fmt_ms(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


_NAV = (("/", "Sessions"), ("/connect", "Connect"), ("/diff", "Diff"), ("/stores", "Stores"))


def page(title: str, body: str, *, conn: int | None = None, active: str = "", script_data: str = "") -> str:
    """A whole page: the navigation (and the connection's tabs), then ``body``."""
    nav = "".join(f'<a href="{href}"{" class=on" if active == label else ""}>{label}</a>' for href, label in _NAV)
    tabs = ""
    if conn is not None:
        items = (("", "Timeline"), ("/conversation", "Conversation"), ("/waterfall", "Waterfall"),
                 ("/findings", "Findings"))
        tabs = '<nav class="tabs">' + "".join(
            f'<a href="/c/{conn}{suffix}"{" class=on" if active == label else ""}>{label}</a>'
            for suffix, label in items) + f'<a href="/c/{conn}/export.jsonl" download>Export JSONL</a></nav>'
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)} · acplink devtools'
            f'</title><meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="stylesheet" href="/static/devtools.css"></head><body{script_data}>'
            f'<header><b>acplink devtools</b>{nav}</header>'
            f'<main><h1>{esc(title)}</h1>{tabs}{body}</main>'
            f'<script src="/static/devtools.js"></script></body></html>')


def pretty_json(body: bytes | None, size: int, is_json: bool, *, limit: int = DETAIL_LIMIT) -> tuple[str, bool]:
    """The body as indented JSON (or its text), and whether it was cut at ``limit`` bytes."""
    if body is None:
        return "", False
    if len(body) > limit or size > limit:
        return bytes(body[:limit]).decode("utf-8", "replace"), True
    if not is_json:
        return bytes(body).decode("utf-8", "replace"), False
    try:
        return orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2).decode(), False
    except orjson.JSONDecodeError:
        return bytes(body).decode("utf-8", "replace"), False


def diff_html(path: str, old: str | None, new: str) -> str:
    """A file edit as a unified diff, lines coloured by kind."""
    rel = path.lstrip("/")  # (an absolute path is "b/tmp/x", as git writes it, not "b//tmp/x")
    lines = difflib.unified_diff((old or "").splitlines(), new.splitlines(), "a/" + rel if old is not None
                                 else "/dev/null", "b/" + rel, lineterm="", n=3)
    out = []
    for line in lines:
        cls = ("add" if line.startswith("+") and not line.startswith("+++") else
               "del" if line.startswith("-") and not line.startswith("---") else
               "hunk" if line.startswith("@@") else "ctx")
        out.append(f'<span class="{cls}">{esc(line)}</span>')
    return f'<pre class="diff">{"".join(out)}</pre>'


_INLINE = (
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
    (re.compile(r"\*\*([^*]+)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![*\w])\*([^*\s][^*]*)\*(?!\w)"), r"<em>\1</em>"),
)


def _inline(text: str) -> str:
    out = esc(text)
    for pattern, repl in _INLINE:
        out = pattern.sub(repl, out)
    return out


def markdown(text: str) -> str:
    """A small, safe Markdown subset: headings, fenced code, bullet and numbered lists,
    paragraphs, inline code, bold, italics. Everything else is escaped text."""
    out: list[str] = []
    para: list[str] = []
    lst: str | None = None

    def end_para() -> None:
        nonlocal lst
        if para:
            out.append("<p>" + "<br>".join(_inline(p) for p in para) + "</p>")
            para.clear()
        if lst:
            out.append(f"</{lst}>")
            lst = None

    lines: Iterable[str] = iter(text.split("\n"))
    for line in lines:
        if line.startswith("```"):
            end_para()
            code = []
            for inner in lines:
                if inner.startswith("```"):
                    break
                code.append(inner)
            out.append(f"<pre><code>{esc(chr(10).join(code))}</code></pre>")
            continue
        heading = re.match(r"(#{1,6})\s+(.*)", line)
        item = re.match(r"\s*(?:([-*+])|(\d+)[.)])\s+(.*)", line)
        if heading:
            end_para()
            level = min(len(heading.group(1)) + 2, 6)
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif item:
            kind = "ul" if item.group(1) else "ol"
            if para:
                out.append("<p>" + "<br>".join(_inline(p) for p in para) + "</p>")
                para.clear()
            if lst != kind:
                if lst:
                    out.append(f"</{lst}>")
                out.append(f"<{kind}>")
                lst = kind
            out.append(f"<li>{_inline(item.group(3))}</li>")
        elif not line.strip():
            end_para()
        else:
            if lst:
                out.append(f"</{lst}>")
                lst = None
            para.append(line)
    end_para()
    return "".join(out)
