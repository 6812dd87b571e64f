"""How ``acplink chat`` shows a prompt turn: streamed markdown, thoughts, tool calls, diffs,
plans and terminal output, with rich.

On a real terminal the part still changing (the message being streamed, the tool calls
still running, the plan) lives in a rich ``Live`` region at the bottom; finished pieces are
printed above it, so the scrollback reads in order. Elsewhere (a pipe, ``TERM=dumb``) the
reply text is written as it arrives and everything else as plain lines.
"""

from __future__ import annotations

import asyncio
import difflib
from typing import TYPE_CHECKING, Any, Literal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from ..client.state import PlanState, ToolCallState
from ..schema import _generated as s

if TYPE_CHECKING:
    from ..client.client import Client
    from ..client.session import Session

__all__ = ["TurnRenderer", "content_text", "diff_text", "plan_text", "tool_line"]

STATUS_STYLE = {"pending": "yellow", "in_progress": "cyan", "completed": "green", "failed": "red"}
MAX_DIFF_LINES = 60
MAX_OUTPUT_LINES = 20
REFRESH_EVERY = 0.05  # seconds between redraws of the live region


def content_text(block: Any) -> str:
    """The text of a content block, or a short tag for non-text blocks."""
    if isinstance(block, s.TextContent):
        return block.text
    if isinstance(block, s.ResourceLink):
        return f"[{block.name or block.uri}]"
    if isinstance(block, s.EmbeddedResource):
        res = block.resource
        return res.text if isinstance(res, s.TextResourceContents) else f"[{res.uri}]"
    kind = getattr(block, "type", None) or "content"
    return f"[{kind}]"


def tool_line(tool: ToolCallState) -> Text:
    """``⏺ Title … status``."""
    status = tool.status or "pending"
    line = Text("⏺ ", style=STATUS_STYLE.get(status, "white"))
    line.append(tool.title or tool.tool_call_id, style="bold")
    line.append(" … ", style="dim")
    line.append(status, style=STATUS_STYLE.get(status, ""))
    return line


def _indent(text: Text, prefix: str = "    ") -> Text:
    out = Text()
    for i, line in enumerate(text.split("\n", allow_blank=True)):
        if i:
            out.append("\n")
        out.append(prefix)
        out.append_text(line)
    return out


def _clip(lines: list[str], limit: int, *, tail: bool = False) -> tuple[list[str], int]:
    if len(lines) <= limit:
        return lines, 0
    return (lines[-limit:] if tail else lines[:limit]), len(lines) - limit


def diff_text(diff: s.Diff) -> Text:
    """A coloured unified diff of ``oldText`` → ``newText`` (a new file when ``oldText`` is null)."""
    old = (diff.old_text or "").splitlines()
    new = diff.new_text.splitlines()
    out = Text()
    if diff.old_text is None:
        out.append(f"new file {diff.path}\n", style="bold")
        body = [f"+{line}" for line in new]
    else:
        out.append(f"{diff.path}\n", style="bold")
        body = [line for line in difflib.unified_diff(old, new, lineterm="", n=2)
                if not line.startswith(("---", "+++"))]
        if not body:
            body = [" (no changes)"]
    shown, more = _clip(body, MAX_DIFF_LINES)
    for line in shown:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else (
            "cyan" if line.startswith("@@") else "dim")
        out.append(line + "\n", style=style)
    if more:
        out.append(f"… {more} more lines\n", style="dim")
    out.rstrip()
    return out


def plan_text(plan: PlanState) -> RenderableType:
    """A plan as a checklist (or its markdown / file reference)."""
    if plan.kind == "markdown" and plan.markdown is not None:
        return Group(Text("Plan", style="bold"), Markdown(plan.markdown))
    if plan.kind != "items":
        return Text(f"Plan: {plan.uri or plan.kind}", style="bold")
    out = Text(f"Plan ({plan.completed}/{len(plan.entries)} done)", style="bold")
    for entry in plan.entries:
        status = str(entry.status)
        mark, style = {"completed": ("✔", "green"), "in_progress": ("▶", "bold cyan")}.get(status, ("○", "dim"))
        out.append(f"\n  {mark} ", style=style)
        out.append(entry.content, style="strike dim" if status == "completed" else style)
    return out


class TurnRenderer:
    """Renders the updates of one prompt turn (fed in arrival order by :meth:`feed`)."""

    def __init__(self, console: Console, client: Client, session: Session, *, live: bool) -> None:
        self.console = console
        self.client = client
        self.session = session
        self.use_live = live
        self.block: Literal["text", "thought"] | None = None
        self.text = ""
        self.active: list[str] = []  # tool calls still running, in order
        self.printed: dict[str, str] = {}  # tool call id -> the status line printed last
        self.shown: dict[str, set[str]] = {}  # tool call id -> content already shown
        self.plan_changed = False
        self.at_line_start = True
        self._live: Live | None = None
        self._last_refresh = 0.0
        self._pending: asyncio.TimerHandle | None = None
        self.running = False

    # -- lifecycle ---------------------------------------------------------------------------

    def begin(self) -> None:
        self.running = True
        self._start_live()

    def end(self) -> None:
        """The turn is over: print what is still pending (text, unfinished tools, the plan)."""
        if not self.running:
            return
        self._flush_block()
        self._stop_live()
        for tool_id in list(self.active):
            tool = self.session.state.tool_calls.get(tool_id)
            if tool is not None:
                self._print_tool(tool, final=True)
        self.active.clear()
        if self.use_live and self.plan_changed and self.session.state.plan is not None:
            self.console.print(plan_text(self.session.state.plan))
        self._newline()
        self.running = False

    def suspend(self) -> None:
        """Stop the live region (before asking the user something)."""
        self._flush_block()
        self._stop_live()
        self._newline()

    def resume(self) -> None:
        if self.running:
            self._start_live()

    def note(self, message: str, style: str = "yellow") -> None:
        """A line of our own (e.g. "cancelling…"), printed above the live region."""
        self._newline()
        self.console.print(Text(message, style=style))

    # -- updates -----------------------------------------------------------------------------

    def feed(self, update: Any) -> None:
        if isinstance(update, (s.AgentMessageChunk, s.AgentThoughtChunk)):
            kind: Literal["text", "thought"] = "text" if isinstance(update, s.AgentMessageChunk) else "thought"
            self._chunk(kind, content_text(update.content))
        elif isinstance(update, (s.ToolCall, s.SessionUpdateToolCallUpdate)):
            self._tool(update.tool_call_id)
        elif isinstance(update, (s.Plan, s.PlanUpdate, s.PlanRemoved)):
            self.plan_changed = True
            plan = self.session.state.plan
            if self._live is not None:
                self._touch()
            elif plan is not None:
                self._flush_block()
                self._newline()
                self.console.print(plan_text(plan))
        elif isinstance(update, s.CurrentModeUpdate):
            self.note(f"mode: {update.current_mode_id}", "dim")
        elif isinstance(update, s.Notice):
            self.note(f"notice: {getattr(update, 'message', '') or update}", "dim")

    def _chunk(self, kind: Literal["text", "thought"], text: str) -> None:
        if self.block != kind:
            self._flush_block()
            self.block = kind
            if self._live is None:
                self._newline()
        self.text += text
        if self._live is not None:
            self._touch()
            return
        # plain output: write as it arrives
        self.console.print(Text(text, style="dim italic" if kind == "thought" else ""), end="", soft_wrap=True)
        if text:
            self.at_line_start = text.endswith("\n")

    def _flush_block(self) -> None:
        """The streamed block is complete: print it for good (above the live region)."""
        text, kind = self.text, self.block
        self.text, self.block = "", None
        if self._live is None:
            if kind == "thought":
                self._newline()
            return
        if not text.strip():
            return
        if kind == "thought":
            self.console.print(Text(text.strip(), style="dim italic"))
        else:
            self.console.print(Markdown(text))
        self._touch()

    def _tool(self, tool_id: str) -> None:
        tool = self.session.state.tool_calls.get(tool_id)
        if tool is None:
            return
        self._flush_block()
        if tool.done:
            if tool_id in self.active:
                self.active.remove(tool_id)
            self._print_tool(tool, final=True)
        else:
            if tool_id not in self.active:
                self.active.append(tool_id)
            if self._live is None:
                self._print_tool(tool, final=False)
        self._touch()

    # -- printing ----------------------------------------------------------------------------

    def _newline(self) -> None:
        if not self.at_line_start:
            self.console.print()
            self.at_line_start = True

    def _print_tool(self, tool: ToolCallState, *, final: bool) -> None:
        line = tool_line(tool)
        if self.printed.get(tool.tool_call_id) != line.plain:
            self._newline()
            self.console.print(line)
            self.printed[tool.tool_call_id] = line.plain
        self.show_content(tool.tool_call_id, tool.content, final=final)

    def show_content(self, tool_id: str, content: list[Any], *, final: bool = True) -> None:
        """Print a tool call's content (diffs, text, terminal output) not shown before."""
        shown = self.shown.setdefault(tool_id, set())
        for item in content:
            if isinstance(item, s.Terminal) and not final:
                continue  # its output is shown once the tool call is done
            key = repr(item)
            if key in shown:
                continue
            shown.add(key)
            body = self._content(item)
            if body is not None:
                self._newline()
                self.console.print(_indent(body))

    def _content(self, item: Any) -> Text | None:
        if isinstance(item, s.Diff):
            return diff_text(item)
        if isinstance(item, s.Content):
            lines, more = _clip(content_text(item.content).rstrip("\n").splitlines(), MAX_OUTPUT_LINES)
            text = Text("\n".join(lines), style="dim")
            if more:
                text.append(f"\n… {more} more lines", style="dim")
            return text
        if isinstance(item, s.Terminal):
            return self._terminal(item.terminal_id)
        return None

    def _terminal(self, terminal_id: str) -> Text | None:
        terms = self.client.terminals
        if terms is None:
            return None
        try:
            snap = terms.snapshot(terminal_id)
        except Exception:  # released long ago, or not ours
            return None
        lines, more = _clip(snap.output.rstrip("\n").splitlines(), MAX_OUTPUT_LINES, tail=True)
        text = Text()
        if more or snap.truncated:
            text.append("… (earlier output not shown)\n", style="dim")
        text.append("\n".join(lines), style="dim")
        status = snap.exit_status
        if status is not None:
            how = f"exit code {status.exit_code}" if status.exit_code is not None else f"signal {status.signal}"
            text.append(f"\n[{how}]", style="green" if status.exit_code == 0 else "red")
        return text

    # -- the live region ---------------------------------------------------------------------

    def _renderable(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self.text.strip():
            parts.append(Text(self.text.strip(), style="dim italic") if self.block == "thought"
                         else Markdown(self.text))
        for tool_id in self.active:
            tool = self.session.state.tool_calls.get(tool_id)
            if tool is not None:
                parts.append(tool_line(tool))
        plan = self.session.state.plan
        if self.plan_changed and plan is not None:
            parts.append(plan_text(plan))
        return Group(*parts)

    def _start_live(self) -> None:
        if not self.use_live or self._live is not None:
            return
        self._live = Live(self._renderable(), console=self.console, auto_refresh=False, transient=True,
                          redirect_stdout=False, redirect_stderr=False)
        self._live.start()

    def _stop_live(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        live, self._live = self._live, None
        if live is not None:
            live.update(Group(), refresh=True)
            live.stop()

    def _touch(self) -> None:
        """Redraw the live region soon (at most every REFRESH_EVERY seconds)."""
        if self._live is None or self._pending is not None:
            return
        loop = asyncio.get_running_loop()
        wait = self._last_refresh + REFRESH_EVERY - loop.time()
        if wait <= 0:
            self._refresh()
        else:
            self._pending = loop.call_later(wait, self._refresh)

    def _refresh(self) -> None:
        self._pending = None
        if self._live is not None:
            self._last_refresh = asyncio.get_running_loop().time()
            self._live.update(self._renderable(), refresh=True)
