"""How ``acplink chat`` shows the pieces of a turn: tool call lines, diffs (numbered from the
file), tool output (Markdown fences rendered, agent-internal tags hidden), terminal output
and plans. The agent's text is made safe for the terminal here, where it enters a renderable
(:func:`~acplink._text.sanitize_for_terminal`); the chat's console is the backstop."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from .._text import sanitize_for_terminal
from ..client.state import PlanState, ToolCallState
from ..schema import _generated as s
from .chat_stream import ChatMarkdown

__all__ = ["clean_output", "content_text", "diff_text", "hunk_offset", "output_renderable", "plan_text",
           "read_text_file", "tool_line"]

STATUS_STYLE = {"pending": "yellow", "in_progress": "cyan", "completed": "green", "failed": "red",
                "cancelled": "magenta"}
MAX_DIFF_LINES = 60
#: tags agents put in tool output for the model, not for people
_INTERNAL_TAGS = re.compile(r"<(system-reminder)>.*?(</\1>|\Z)", re.DOTALL)
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@(.*)$")


def content_text(block: Any) -> str:
    """The text of a content block, or a short tag for non-text blocks (safe for a terminal)."""
    return sanitize_for_terminal(_content_text(block))


def _content_text(block: Any) -> str:
    if isinstance(block, s.TextContent):
        return block.text
    if isinstance(block, s.ResourceLink):
        return f"[{block.name or block.uri}]"
    if isinstance(block, s.EmbeddedResource):
        res = block.resource
        return res.text if isinstance(res, s.TextResourceContents) else f"[{res.uri}]"
    kind = getattr(block, "type", None) or "content"
    return f"[{kind}]"


def tool_line(tool: ToolCallState, status: str | None = None) -> Text:
    """``⏺ Title … status`` (``status`` overrides the tool call's own)."""
    status = status or tool.status or "pending"
    line = Text("⏺ ", style=STATUS_STYLE.get(status, "white"))
    line.append(sanitize_for_terminal(tool.title or tool.tool_call_id), style="bold")
    line.append(" … ", style="dim")
    line.append(status, style=STATUS_STYLE.get(status, ""))
    return line


def read_text_file(path: str, limit: int = 4 << 20) -> str | None:
    """The text of a local file, or None (missing, too big, not text)."""
    try:
        p = Path(path)
        if not p.is_absolute() or not p.is_file() or p.stat().st_size > limit:
            return None
        return p.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return None


def hunk_offset(diff: s.Diff, file_text: str | None) -> int:
    """Lines of the file before the diff's snippet: agents often send only the changed part
    (``oldText`` as it is in the file before the edit, ``newText`` after), numbered from 1."""
    if file_text is None:
        return 0
    for snippet in (diff.old_text, diff.new_text):
        if snippet and snippet.strip() and file_text.count(snippet) == 1:  # (else: where?)
            at = file_text.find(snippet)
            if at >= 0:
                return file_text.count("\n", 0, at)
    return 0


def _shift(line: str, offset: int) -> str:
    m = _HUNK.match(line)
    if m is None or not offset:
        return line
    a, b, c, d, rest = m.groups()
    return f"@@ -{int(a) + offset}{b or ''} +{int(c) + offset}{d or ''} @@{rest}"


def diff_text(diff: s.Diff, file_text: str | None = None) -> Text:
    """A coloured unified diff of ``oldText`` → ``newText`` (a new file when ``oldText`` is
    null); hunks are numbered from the file when ``file_text`` contains the snippet."""
    old = sanitize_for_terminal(diff.old_text or "").splitlines()
    new = sanitize_for_terminal(diff.new_text).splitlines()
    path = sanitize_for_terminal(diff.path)
    out = Text()
    if diff.old_text is None:
        out.append(f"new file {path}\n", style="bold")
        body = [f"+{line}" for line in new]
    else:
        out.append(f"{path}\n", style="bold")
        offset = hunk_offset(diff, file_text)
        body = [_shift(line, offset) for line in difflib.unified_diff(old, new, lineterm="", n=2)
                if not line.startswith(("---", "+++"))]
        if not body:
            body = [" (no changes)"]
    more = max(0, len(body) - MAX_DIFF_LINES)
    for line in body[:MAX_DIFF_LINES]:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else (
            "cyan" if line.startswith("@@") else "dim")
        out.append(line + "\n", style=style)
    if more:
        out.append(f"… {more} more lines\n", style="dim")
    out.rstrip()
    return out


def clean_output(text: str) -> str:
    """Tool output without the agent-internal tags (``<system-reminder>…``) and blank edges."""
    return _INTERNAL_TAGS.sub("", text).strip("\n")


def output_renderable(text: str, *, hyperlinks: bool = False) -> RenderableType:
    """Tool output (already :func:`clean_output`): Markdown when it has code fences (rendered,
    hard-wrapped paragraphs reflowed), else dim text. A fence left open (the output was cut)
    is closed."""
    if "```" in text:
        if sum(1 for line in text.splitlines() if line.lstrip().startswith("```")) % 2:
            text += "\n```"
        return ChatMarkdown(text, hyperlinks=hyperlinks, reflow=True)
    return Text(text, style="dim")


def plan_text(plan: PlanState) -> RenderableType:
    """A plan as a checklist (or its markdown / file reference)."""
    if plan.kind == "markdown" and plan.markdown is not None:
        return Group(Text("Plan", style="bold"), ChatMarkdown(sanitize_for_terminal(plan.markdown)))
    if plan.kind != "items":
        return Text(sanitize_for_terminal(f"Plan: {plan.uri or plan.kind}"), style="bold")
    out = Text(f"Plan ({plan.completed}/{len(plan.entries)} done)", style="bold")
    for entry in plan.entries:
        status = str(entry.status)
        mark, style = {"completed": ("✔", "green"), "in_progress": ("▶", "bold cyan")}.get(status, ("○", "dim"))
        out.append(f"\n  {mark} ", style=style)
        out.append(sanitize_for_terminal(entry.content), style="strike dim" if status == "completed" else style)
    return out
