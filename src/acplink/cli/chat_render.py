"""How ``acplink chat`` shows a prompt turn: streamed Markdown, thoughts, tool calls, diffs,
plans, terminal output, a status line while the agent is silent, and a usage line.

On a real terminal, finished lines are printed for good as they stream (the scrollback
keeps them) and only what may still change (the unfinished tail of the message, the tool
calls still running, a plan just updated, the status line) lives in a live area at the
bottom, never taller than the window (see :mod:`.chat_stream`). Elsewhere (a pipe,
``TERM=dumb``) the reply text is written as it arrives and everything else as plain lines.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console, Group, RenderableType
from rich.segment import Segment
from rich.text import Text

from .._text import sanitize_for_terminal
from ..client.state import ToolCallState
from ..errors import RequestError
from ..schema import _generated as s
from .chat_content import (
    clean_output,
    content_text,
    diff_text,
    output_renderable,
    plan_text,
    read_text_file,
    tool_line,
)
from .chat_stream import Lines, LiveArea, StreamBlock, render_lines
from .common import one_line

if TYPE_CHECKING:
    from ..client.client import Client
    from ..client.session import Session

__all__ = ["Fold", "TurnRenderer", "Waiting", "error_text", "usage_line"]

REFRESH_EVERY = 0.05  # seconds between redraws of the live area (more if rendering is slow)
QUIET_AFTER = 1.0  # seconds without news before the status line appears
TICK = 0.25
FOLD_AT = 8  # tool output longer than this many lines is folded ...
FOLD_SHOW = 5  # ... to this many
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
Line = list[Segment]


class Fold:
    """A tool output shown folded; ``/expand N`` shows it whole."""

    def __init__(self, title: str, full: RenderableType) -> None:
        self.title = title
        self.full = full


def _indent(lines: list[Line], prefix: str = "    ") -> list[Line]:
    return [[Segment(prefix), *line] for line in lines]


def error_text(exc: BaseException) -> str:
    """An error's message with the details of its ``data`` (``data.details``, ``data.message``…),
    safe for a terminal (the agent wrote both)."""
    return sanitize_for_terminal(_error_text(exc))


def _error_text(exc: BaseException) -> str:
    text = one_line(exc)  # (the command line's wording: --token, not token=)
    data = exc.data if isinstance(exc, RequestError) else None
    if data is None or data == {}:
        return text
    if isinstance(data, str):
        details = data
    elif isinstance(data, dict):
        picked = [str(data[k]) for k in ("details", "message", "reason", "error", "detail")
                  if isinstance(data.get(k), (str, int, float)) and str(data[k]) not in text]
        details = "; ".join(picked) if picked else json.dumps(data, ensure_ascii=False, default=str)
    else:
        details = json.dumps(data, ensure_ascii=False, default=str)
    if len(details) > 500:
        details = details[:500] + "…"
    return f"{text}: {details}" if details and details not in text else text


def _tokens(n: float) -> str:
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return f"{n:g}"


def _money(amount: float, currency: str) -> str:
    digits = 2 if amount >= 1 else 4
    return f"${amount:.{digits}f}" if currency.upper() == "USD" else f"{amount:.{digits}f} {currency}"


def _meta_tokens(meta: Any) -> dict[str, int]:
    """Token counts from the ``_meta`` usage shapes real agents send (``usage`` with camelCase
    or snake_case keys, ``quota.token_count``)."""
    if not isinstance(meta, dict):
        return {}
    out: dict[str, int] = {}
    for where in (meta.get("usage"), (meta.get("quota") or {}).get("token_count")
                  if isinstance(meta.get("quota"), dict) else None):
        if not isinstance(where, dict):
            continue
        for key, name in (("inputTokens", "in"), ("input_tokens", "in"), ("outputTokens", "out"),
                          ("output_tokens", "out"), ("totalTokens", "total"), ("total_tokens", "total"),
                          ("cachedReadTokens", "cached"), ("cache_read_input_tokens", "cached"),
                          ("thoughtTokens", "thought"), ("thought_tokens", "thought")):
            value = where.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                out.setdefault(name, value)
    return out


def usage_line(response: s.PromptResponse | None, update: s.UsageUpdate | None) -> Text | None:
    """One dim line: the turn's tokens (``PromptResponse.usage`` or known ``_meta`` usage), the
    context window (``usage_update``) and the session's cost."""
    parts: list[str] = []
    counts: dict[str, int] = {}
    if response is not None and response.usage is not None:
        u = response.usage
        counts = {"total": u.total_tokens, "in": u.input_tokens, "out": u.output_tokens}
        if u.cached_read_tokens:
            counts["cached"] = u.cached_read_tokens
        if u.thought_tokens:
            counts["thought"] = u.thought_tokens
    elif response is not None:
        counts = _meta_tokens(response.meta)
    if counts:
        total = counts.get("total", counts.get("in", 0) + counts.get("out", 0))
        detail = ", ".join(f"{_tokens(counts[k])} {k}" for k in ("in", "out", "cached", "thought") if k in counts)
        parts.append(f"{_tokens(total)} tokens" + (f" ({detail})" if detail else ""))
    if update is not None:
        pct = f" ({100 * update.used / update.size:.0f}%)" if update.size else ""
        parts.append(f"context {_tokens(update.used)}/{_tokens(update.size)}{pct}")
        if update.cost is not None:
            parts.append(f"{_money(update.cost.amount, update.cost.currency)} this session")
    return Text("↳ " + " · ".join(parts), style="dim") if parts else None


class Waiting:
    """A transient status line (``starting agent… 3s``) shown once nothing has happened for
    :data:`QUIET_AFTER` seconds; :meth:`stop` erases it."""

    def __init__(self, console: Console, label: str, *, enabled: bool) -> None:
        self.area = LiveArea(console) if enabled else None
        self.label = label
        self.since = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None
        self._frame = 0
        if self.area is not None:
            self._timer = asyncio.get_running_loop().call_later(QUIET_AFTER, self._tick)

    def line(self) -> Text | None:
        waited = time.monotonic() - self.since
        if waited < QUIET_AFTER:
            return None
        self._frame += 1
        return Text(f"{SPINNER[self._frame % len(SPINNER)]} {self.label}… {waited:.0f}s", style="dim")

    def _tick(self) -> None:
        line = self.line()
        if self.area is not None and line is not None:
            self.area.show([], render_lines(self.area.console, line))
        self._timer = asyncio.get_running_loop().call_later(TICK, self._tick)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.area is not None:
            self.area.clear()


class TurnRenderer:
    """Renders the updates of one prompt turn (fed in arrival order by :meth:`feed`)."""

    def __init__(self, console: Console, client: Client, session: Session, *, live: bool,
                 folds: list[Fold] | None = None, hyperlinks: bool = False,
                 cancelled: set[str] | None = None) -> None:
        self.console = console
        self.client = client
        self.session = session
        self.hyperlinks = hyperlinks
        self.folds = folds if folds is not None else []
        self.cancelled = cancelled if cancelled is not None else set()  # tool calls shown cancelled
        self.area = LiveArea(console) if live else None
        self.block: StreamBlock | None = None
        self.active: list[str] = []  # tool calls still running, in order
        self.printed: dict[str, str] = {}  # tool call id -> the status line printed last
        self.shown: dict[str, set[str]] = {}  # tool call id -> content already shown
        self.plan_pending = False  # a plan update not printed yet (it is printed in place)
        self.usage: s.UsageUpdate | None = None
        self.at_line_start = True
        self.running = False
        self.suspended = False
        self._final: list[Line] = []  # lines to print for good at the next redraw
        self._notes: list[Text] = []  # our notes made while a message streams (shown after it)
        self._last_refresh = 0.0
        self._render_cost = 0.0
        self._pending: asyncio.TimerHandle | None = None
        self._ticker: asyncio.TimerHandle | None = None
        self._last_news = time.monotonic()
        #: the input area drawn below everything (keys typed ahead during the turn)
        self.input_lines: Callable[[], list[Text]] | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def begin(self) -> None:
        self.running = True
        self._last_news = time.monotonic()
        self._start_ticker()

    def end(self, stop_reason: str | None = None) -> None:
        """The turn is over: print what is still pending; with ``stop_reason == "cancelled"``
        the tool calls that did not finish are shown cancelled."""
        if not self.running:
            return
        self._finish_block()
        self._flush_plan()
        for tool_id in list(self.active):
            tool = self.session.state.tool_calls.get(tool_id)
            if tool is not None:
                cancelled = stop_reason == "cancelled" and not tool.done
                if cancelled:
                    self.cancelled.add(tool_id)
                self._print_tool(tool, final=True, status="cancelled" if cancelled else None)
        self.active.clear()
        self._stop_timers()
        self._redraw(live=False)
        if self.area is not None:
            self.area.clear()
        self._newline()
        self.running = False

    def suspend(self) -> None:
        """Print everything for good and clear the live area (before asking the user)."""
        self._finish_block()
        self._flush_plan()
        self.suspended = True
        self._stop_timers()
        self._redraw(live=False)
        if self.area is not None:
            self.area.clear()
        self._newline()

    def resume(self) -> None:
        self.suspended = False
        self._last_news = time.monotonic()
        if self.running:
            self._start_ticker()
            self._touch()

    def input_changed(self) -> None:
        """The input area changed: draw it now."""
        self._touch(now=True)

    def note(self, message: str, style: str = "yellow") -> None:
        """A line of our own (e.g. "cancelling…", or "mode: ID" quoting the agent), printed for
        good above the live area."""
        message = sanitize_for_terminal(message)
        self._newline()
        if self.area is not None and self.block is not None and self.running and not self.suspended:
            self._notes.append(Text(message, style=style))  # below the message, once it is complete
            self._touch(now=True)
            return
        self._emit(Text(message, style=style))

    # -- updates -----------------------------------------------------------------------------

    def feed(self, update: Any) -> None:
        self._last_news = time.monotonic()
        if isinstance(update, (s.AgentMessageChunk, s.AgentThoughtChunk)):
            self._chunk("text" if isinstance(update, s.AgentMessageChunk) else "thought",
                        content_text(update.content))
        elif isinstance(update, (s.ToolCall, s.SessionUpdateToolCallUpdate)):
            self._tool(update.tool_call_id)
        elif isinstance(update, (s.Plan, s.PlanUpdate, s.PlanRemoved)):
            self._finish_block()
            self.plan_pending = self.session.state.plan is not None
            if self.area is None:
                self._newline()
        elif isinstance(update, s.UsageUpdate):
            self.usage = update
        elif isinstance(update, s.CurrentModeUpdate):
            self.note(f"mode: {update.current_mode_id}", "dim")
        elif isinstance(update, s.Notice):
            self.note(f"notice: {update.title}" + (f" - {update.description}" if update.description else ""), "dim")
        self._touch()

    def _chunk(self, kind: str, text: str) -> None:
        if self.block is None or self.block.kind != kind:
            self._finish_block()
            self._flush_plan()
            self._newline()
            self.block = StreamBlock(self.console, kind, hyperlinks=self.hyperlinks)
        self.block.add(text)
        if self.area is None:  # plain output: write as it arrives
            self.console.print(Text(text, style="dim italic" if kind == "thought" else ""), end="", soft_wrap=True)
            if text:
                self.at_line_start = text.endswith("\n")

    def _finish_block(self) -> None:
        """The streamed block is complete: its remaining lines are printed for good."""
        block, self.block = self.block, None
        if block is None:
            return
        if self.area is None:
            if block.kind == "thought":
                self._newline()
            return
        final, _ = block.take(final=True)
        self._final += final
        notes, self._notes = self._notes, []
        for note in notes:
            self._final += render_lines(self.console, note)

    def _flush_plan(self) -> None:
        plan = self.session.state.plan
        if self.plan_pending and plan is not None:
            self._emit(plan_text(plan))
        self.plan_pending = False

    def _tool(self, tool_id: str) -> None:
        tool = self.session.state.tool_calls.get(tool_id)
        if tool is None:
            return
        self._finish_block()
        self._flush_plan()
        if tool.done:
            if tool_id in self.active:
                self.active.remove(tool_id)
            self._print_tool(tool, final=True)
        else:
            if tool_id not in self.active:
                self.active.append(tool_id)
            if self.area is None:
                self._print_line(tool)

    # -- printing ----------------------------------------------------------------------------

    def _emit(self, renderable: RenderableType, indent: bool = False) -> None:
        """Print ``renderable`` for good (above the live area, in order)."""
        lines = render_lines(self.console, renderable, self.console.width - (4 if indent else 0))
        self._emit_lines(_indent(lines) if indent else lines)

    def _emit_lines(self, lines: list[Line]) -> None:
        if self.area is not None and not self.suspended and self.running:
            self._final += lines
            self._touch(now=True)
        else:
            self.console.print(Lines(lines), end="")

    def _newline(self) -> None:
        if not self.at_line_start:
            self.console.print()
            self.at_line_start = True

    def _print_line(self, tool: ToolCallState, status: str | None = None) -> None:
        line = tool_line(tool, status)
        if self.printed.get(tool.tool_call_id) != line.plain:
            self._newline()
            self._emit(line)
            self.printed[tool.tool_call_id] = line.plain

    def _print_tool(self, tool: ToolCallState, *, final: bool, status: str | None = None) -> None:
        self._print_line(tool, status)
        self.show_content(tool.tool_call_id, tool.content, final=final, title=tool.title)

    def show_content(self, tool_id: str, content: list[Any], *, final: bool = True, title: str = "") -> None:
        """Print a tool call's content (diffs, text, terminal output) not shown before."""
        shown = self.shown.setdefault(tool_id, set())
        for item in content:
            if isinstance(item, s.Terminal) and not final:
                continue  # its output is shown once the tool call is done
            key = repr(item)
            if key in shown:
                continue
            shown.add(key)
            self._newline()
            if isinstance(item, s.Diff):
                self._emit(diff_text(item, read_text_file(item.path)), indent=True)
            elif isinstance(item, s.Content):
                self._output(clean_output(content_text(item.content)), title or tool_id,
                             lambda text: output_renderable(text, hyperlinks=self.hyperlinks))
            elif isinstance(item, s.Terminal):
                self._terminal(item.terminal_id, title or tool_id)

    def _output(self, text: str, title: str, make: Callable[[str], RenderableType], *, tail: bool = False,
                footer: Text | None = None, head: Text | None = None) -> None:
        """Tool output ``text`` shown as ``make(text)``, indented; longer than :data:`FOLD_AT`
        lines of its source (not of the screen: a long line wraps), only its first (``tail``:
        last) :data:`FOLD_SHOW` source lines are shown, and ``/expand N`` shows it all."""
        source = text.splitlines()
        if not text.strip():
            return
        shown = text
        if len(source) > FOLD_AT:
            self.folds.append(Fold(title, Group(*([head] if head else []), make(text))))
            part = "\n".join(source[-FOLD_SHOW:] if tail else source[:FOLD_SHOW])
            shown = part
        lines = render_lines(self.console, make(shown), self.console.width - 4)
        if head is not None:
            lines = render_lines(self.console, head, self.console.width - 4) + lines
        if shown is not text:
            more = len(source) - FOLD_SHOW
            note = [[Segment(f"… {more} more lines (/expand {len(self.folds)} shows them)",
                             self.console.get_style("dim"))]]
            lines = note + lines if tail else lines + note
        if footer is not None:
            lines += render_lines(self.console, footer, self.console.width - 4)
        self._emit_lines(_indent(lines))

    def _terminal(self, terminal_id: str, title: str) -> None:
        terms = self.client.terminals
        if terms is None:
            return
        try:
            snap = terms.snapshot(terminal_id)
        except Exception:  # released long ago, or not ours
            return
        head = Text("… (earlier output not kept)", style="dim") if snap.truncated else None
        output = sanitize_for_terminal(snap.output).rstrip("\n")
        footer = None
        status = snap.exit_status
        if status is not None:
            how = f"exit code {status.exit_code}" if status.exit_code is not None else f"signal {status.signal}"
            footer = Text(f"[{how}]", style="green" if status.exit_code == 0 else "red")
        self._output(output, title, lambda text: Text(text, style="dim"), tail=True, footer=footer, head=head)

    # -- the live area -----------------------------------------------------------------------

    def _live_lines(self) -> list[Line]:
        lines: list[Line] = []
        if self.block is not None:
            final, tail = self.block.take()
            self._final += final
            lines += tail
        for note in self._notes:
            lines += render_lines(self.console, note)
        plan = self.session.state.plan
        if self.plan_pending and plan is not None:
            lines += render_lines(self.console, plan_text(plan))
        for tool_id in self.active:
            tool = self.session.state.tool_calls.get(tool_id)
            if tool is not None:
                lines += render_lines(self.console, tool_line(tool))
        quiet = time.monotonic() - self._last_news
        if quiet >= QUIET_AFTER and not self.suspended:
            frame = SPINNER[int(quiet / TICK) % len(SPINNER)]
            lines += render_lines(self.console, Text(f"{frame} waiting for the agent… {quiet:.0f}s", style="dim"))
        for typed in self.input_lines() if self.input_lines is not None else ():
            lines += render_lines(self.console, typed)
        return lines

    def _redraw(self, *, live: bool = True) -> None:
        if self.area is None:
            return
        started = time.monotonic()
        lines = self._live_lines() if live else []
        final, self._final = self._final, []
        self.area.show(final, lines)
        self._last_refresh = time.monotonic()
        self._render_cost = self._last_refresh - started

    def _touch(self, *, now: bool = False) -> None:
        """Redraw the live area soon (at most every REFRESH_EVERY seconds, or slower when
        rendering takes long)."""
        if self.area is None or self.suspended or not self.running:
            return
        if now:
            self._cancel_pending()
            self._refresh()
            return
        if self._pending is not None:
            return
        wait = self._last_refresh + max(REFRESH_EVERY, 4 * self._render_cost) - time.monotonic()
        if wait <= 0:
            self._refresh()
        else:
            self._pending = asyncio.get_running_loop().call_later(wait, self._refresh)

    def _refresh(self) -> None:
        self._pending = None
        if self.area is not None and not self.suspended and self.running:
            self._redraw()

    def _cancel_pending(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _start_ticker(self) -> None:
        if self.area is not None and self._ticker is None:
            self._ticker = asyncio.get_running_loop().call_later(TICK, self._tick)

    def _tick(self) -> None:
        self._ticker = asyncio.get_running_loop().call_later(TICK, self._tick)
        if time.monotonic() - self._last_news >= QUIET_AFTER:
            self._touch()

    def _stop_timers(self) -> None:
        self._cancel_pending()
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
