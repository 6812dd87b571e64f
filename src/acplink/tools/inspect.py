"""``acplink inspect``: a trace rendered as a readable timeline, with findings."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .._text import sanitize_for_terminal
from .analysis import FINDING_CODES, Timeline, analyze
from .console import PipeConsole
from .mcp_traffic import McpExchange
from .trace import read_trace

__all__ = ["inspect_trace", "load_timeline", "render_text"]


def load_timeline(path: str | os.PathLike[str]) -> Timeline:
    records = read_trace(path)
    if not any(r.get("type") in ("header", "message") for r in records):
        raise ValueError(f"{os.fspath(path)}: not an acplink trace (no header line)")
    return analyze(records)


_REDACTED = re.compile(r"\[redacted: (\d+) bytes\]")
_LABELS = {"prompt": "prompt", "reply": "reply", "thought": "thinking"}


def _dur(x: float | None) -> str:
    if x is None:
        return "(no response)"
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def _at(t: Timeline, mono: float | None) -> str:
    return "" if mono is None else f"+{mono - t.start:8.3f}s"


def _name(info: Any) -> str:
    if not isinstance(info, dict):
        return "?"
    return f"{info.get('title') or info.get('name') or '?'} {info.get('version') or ''}".strip()


def _shown(text: str) -> str:
    """Text as shown in the timeline: a redacted text as its total size."""
    sizes = _REDACTED.findall(text)
    if sizes and not _REDACTED.sub("", text).strip():
        return f"(redacted: {sum(map(int, sizes))} bytes)"
    return text.rstrip("\n") or "(empty)"


def _text(text: str, style: str = "") -> Text:
    """A Text without control characters (a trace holds what the peers sent): removed before
    rich sees them (it drops a few itself, which would leave the rest of a sequence behind)."""
    return Text(sanitize_for_terminal(text), style=style)


def _safe(part: Any) -> Any:
    return sanitize_for_terminal(part) if isinstance(part, str) else part


def render_text(t: Timeline, console: Console, *, show_text: bool = False) -> None:
    """Print the timeline (sessions, turns, tool calls, permissions, errors, findings); with
    ``show_text`` each turn's prompt, reply and thoughts too, in order with its tool calls.
    Everything from the trace is shown without control characters."""
    def say(*parts: Any, **kw: Any) -> None:
        console.print(*map(_safe, parts), markup=False, highlight=False, **kw)

    head = t.header
    say(_text("ACP trace", style="bold"), _text(f"({t.messages} messages: "
                  f"{t.by_dir.get('c2a', 0)} client→agent, {t.by_dir.get('a2c', 0)} agent→client; "
                  f"{_dur(t.end - t.start)})", style="dim"))
    if head.get("command"):
        say(f"  agent command: {' '.join(map(str, head['command']))}")
    if head.get("redacted"):
        say("  (recorded with --redact)")
    say(f"  client: {_name(t.client_info)}   agent: {_name(t.agent_info)}   "
                  f"protocol version: {t.protocol_version}")
    if t.exit_code is not None:
        say(f"  agent exit code: {t.exit_code}")
    if t.cut is not None:
        say(f"  the last line (line {t.cut['line']}, {t.cut['size']} bytes) is cut off (the recorder was "
            f"probably killed); it is left out", style="yellow")

    for sess in t.sessions.values():
        say()
        say(_text(f"session {sess.id}", style="bold cyan"),
                      _text(f"({sess.how} {_at(t, sess.created).strip()}, cwd {sess.cwd})", style="dim"))
        other = {k: v for k, v in sess.updates.items()}
        for n, turn in enumerate(sess.turns, 1):
            end = turn.stop_reason or (f"error: {turn.error}" if turn.error else "unfinished")
            say(f"  turn {n} {_at(t, turn.start)}  {_dur(turn.duration):>12}  → {end}")
            for kind, count in sorted(turn.updates.items()):
                say(f"      {kind} \u00d7{count}", style="dim")
                other[kind] = other.get(kind, 0) - count
            events = turn.events if show_text else [["tool", tid] for tid in turn.tool_calls]
            for kind, value in events:
                if kind != "tool":
                    say(f"      {_LABELS.get(kind, kind)}:", style="bold" if kind != "thought" else "dim")
                    console.print(Padding(_text(_shown(value), style="dim" if kind == "thought" else ""),
                                          (0, 0, 0, 8), expand=False), markup=False, highlight=False)
                    continue
                tc = t.tool_calls.get(value)
                if tc is not None:
                    say(f"      tool call {tc.id} [{tc.kind or '-'}] {tc.title or ''}: "
                                  f"{' → '.join(tc.statuses)}  ({_dur(tc.last - tc.first)})")
        rest = {k: v for k, v in other.items() if v > 0}
        if rest:
            say("  outside turns: " + ", ".join(f"{k} \u00d7{v}" for k, v in sorted(rest.items())),
                          style="dim")
    if t.permissions:
        say()
        say(_text("permission requests", style="bold"))
        for p in t.permissions:
            wait = None if p.answered is None else p.answered - p.asked
            say(f"  {_at(t, p.asked)} tool call {p.tool_call_id}: options {', '.join(p.options)}"
                          f" → {p.answer or '(no answer)'} after {_dur(wait)}")
    if t.mcp:
        _render_mcp(t, say)
    for severity, title, style in (("error", "errors", "bold red"),
                                   ("info", "expected errors (informational: a read of a file that does not "
                                            "exist)", "dim")):
        errors = [e for e in t.errors if e.get("severity", "error") == severity]
        if not errors:
            continue
        say()
        say(_text(title, style=style))
        for e in errors:
            who = "agent" if e["dir"] == "a2c" else "client"
            say(f"  #{e['seq']} {e['method'] or '(no request)'}: error {e['code']} {e['message']} (from the {who})",
                style="" if severity == "error" else "dim")
    say()
    schema = [f for f in t.findings if f.is_schema]
    order = [f for f in t.findings if not f.is_schema]
    if not t.findings:
        say(_text("no findings", style="bold green"))
        return
    for title, items in (("schema violations", schema), ("protocol-order violations", order)):
        if not items:
            continue
        table = Table(title=f"{title} ({len(items)})", title_justify="left", show_edge=False)
        table.add_column("#", justify="right")
        table.add_column("dir")
        table.add_column("finding")
        table.add_column("detail")
        for f in items:
            table.add_row(*(_text(x) for x in (str(f.seq or ""), f.dir or "", f.code, f.message)))
        console.print(table)


#: the MCP-over-ACP exchanges listed one by one per server (the rest are counted)
_MCP_SHOWN = 20


def _render_mcp(t: Timeline, say: Callable[..., None]) -> None:
    """MCP-over-ACP as tool traffic: per declared server, its inner methods, latencies and outcomes."""
    say()
    say(_text(f"MCP over ACP ({len(t.mcp)} mcp/message requests)", style="bold"))
    servers: dict[str | None, list[McpExchange]] = {}
    for ex in t.mcp:
        servers.setdefault(ex.server_id, []).append(ex)
    for server_id, exchanges in servers.items():
        first = exchanges[0]
        name = first.server if first.server is not None else "(never declared)"
        where = f", session {first.session_id}" if first.session_id else ""
        provider = "the client" if first.dir == "a2c" else "the agent"
        counts: dict[str, int] = {}
        for ex in exchanges:
            counts[ex.method or "?"] = counts.get(ex.method or "?", 0) + 1
        done = sorted(ex.latency for ex in exchanges if ex.latency is not None)
        speed = f"; median {_dur(done[len(done) // 2])}, slowest {_dur(done[-1])}" if done else ""
        say(f"  server {name} ({server_id}{where}; provided by {provider}): "
            + ", ".join(f"{m} \u00d7{n}" for m, n in counts.items()) + speed)
        for ex in exchanges[:_MCP_SHOWN]:
            what = f"{ex.method or '?'}" + (f" {ex.tool}" if ex.tool else "")
            if ex.outcome is None:
                end = "(no answer)"
            elif ex.outcome == "result":
                end = "result"
            else:
                end = f"{ex.outcome.replace('-', ' ')} {ex.code} {ex.message or ''}".rstrip()
            extra = f" ({ex.notifications} notifications)" if ex.notifications else ""
            say(f"      #{ex.seq} {what}  {_dur(ex.latency):>10}  → {end}{extra}",
                style="" if ex.outcome in ("result", None) else "yellow")
        if len(exchanges) > _MCP_SHOWN:
            say(f"      … and {len(exchanges) - _MCP_SHOWN} more", style="dim")


def inspect_trace(trace: str | os.PathLike[str] | Timeline, *, as_json: bool = False, show_text: bool = False,
                  console: Console | None = None) -> dict[str, Any] | None:
    """Render a trace (a path or a loaded timeline); with ``as_json`` return the timeline as
    plain data instead."""
    t = trace if isinstance(trace, Timeline) else load_timeline(trace)
    if as_json:
        data = t.to_json()
        data["finding_codes"] = FINDING_CODES
        return data
    render_text(t, console or PipeConsole(highlight=False, markup=False,
                                        width=shutil.get_terminal_size((120, 24)).columns), show_text=show_text)
    return None
