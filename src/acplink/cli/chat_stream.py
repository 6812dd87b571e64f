"""The streaming machinery of ``acplink chat``: Markdown as chat clients show it, a streamed
block that hands out its finished lines, and the live area at the bottom of the terminal.

A streamed message is rendered again as it grows; the lines that can no longer change (all
but the unfinished tail) are printed for good, so the terminal's scrollback keeps them, and
only the tail stays in the live area. The live area never grows taller than the window: a
region taller than the screen cannot be redrawn (its top has scrolled away), which is what
hides or repeats text in simpler designs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.markdown import Markdown
from rich.segment import Segment
from rich.text import Text

from .._text import sanitize_for_terminal
from ..tools.console import PipeConsole

__all__ = ["ChatMarkdown", "LiveArea", "Lines", "SafeConsole", "StreamBlock", "plain", "render_lines",
           "supports_hyperlinks"]

Line = list[Segment]
#: the longest line of a paragraph that may be hard-wrapped (shorter: its breaks are meant)
REFLOW_MIN = 50

#: terminals known to show OSC 8 hyperlinks (elsewhere a link's URL is written out)
_HYPERLINK_PROGRAMS = {"iTerm.app", "WezTerm", "vscode", "ghostty", "Hyper", "rio", "Tabby"}
_HYPERLINK_TERMS = ("xterm-kitty", "xterm-ghostty", "foot", "alacritty", "wezterm")


def supports_hyperlinks(env: dict[str, str] | None = None) -> bool:
    """Whether the terminal shows OSC 8 hyperlinks (``ACPLINK_HYPERLINKS=0/1`` decides)."""
    env = dict(os.environ) if env is None else env
    forced = env.get("ACPLINK_HYPERLINKS")
    if forced in ("0", "1"):
        return forced == "1"
    if env.get("TMUX") or env.get("STY"):  # multiplexers pass them on only when configured to
        return False
    if env.get("TERM_PROGRAM") in _HYPERLINK_PROGRAMS or env.get("KITTY_WINDOW_ID") or env.get("WT_SESSION"):
        return True
    vte = env.get("VTE_VERSION", "")
    if vte.isdigit() and int(vte) >= 5000:
        return True
    return env.get("TERM", "") in _HYPERLINK_TERMS


def _safe(segment: Segment) -> Segment:
    """``segment`` with its text and link free of control characters (rich's own control
    segments, cursor moves and the like, are kept)."""
    text, style, control = segment
    if control:
        return segment
    clean = sanitize_for_terminal(text)
    link = style.link if style is not None else None
    if link and sanitize_for_terminal(link) != link:
        assert style is not None
        style = style.update_link(sanitize_for_terminal(link))
    elif clean is text:
        return segment
    return Segment(clean, style)


class SafeConsole(PipeConsole):
    """The chat's console: every segment it renders (what the agent sent included: reply text,
    titles, option names, tool and terminal output, paths, errors, link targets) is passed
    through :func:`~acplink._text.sanitize_for_terminal`, so no escape sequence of the agent's
    reaches the terminal, whatever the renderable. One choke point, cheap when there is
    nothing to remove (one regex scan per segment)."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterator[Segment]:
        for segment in super().render(renderable, options):
            yield _safe(segment)


class ChatMarkdown(Markdown):
    """Markdown where a single newline is a line break, as in chat clients (CommonMark would
    join the lines into one paragraph).

    ``reflow``: for files and tool output, where text is often hard-wrapped at a fixed column:
    a paragraph's lines that look wrapped (at least :data:`REFLOW_MIN` cells wide at its
    longest, and the line before a break at least 60% of that) are joined again and wrapped to
    the terminal; short lines keep their breaks. Code blocks and tables are never reflowed."""

    def __init__(self, markup: str, *, reflow: bool = False, **kw: Any) -> None:
        super().__init__(markup, **kw)
        for token in self.parsed:
            breaks = [child for child in token.children or () if child.type == "softbreak"]
            lines = token.content.split("\n") if reflow and token.type == "inline" else []
            longest = max((len(line.rstrip()) for line in lines), default=0)
            for i, child in enumerate(breaks):
                wrapped = longest >= REFLOW_MIN and i < len(lines) and len(lines[i].rstrip()) >= 0.6 * longest
                if not wrapped:
                    child.type = "hardbreak"

    def last_block(self) -> tuple[str, int] | None:
        """(type, first source line) of the last top-level block."""
        last = None
        for token in self.parsed:
            if token.level == 0 and token.nesting >= 0 and token.map is not None:
                last = (token.type, token.map[0])
        return last


class Lines:
    """Pre-rendered lines, printed as they are."""

    def __init__(self, lines: Iterable[Line]) -> None:
        self.lines = list(lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            yield from line
            yield Segment.line()


def _trim(line: Line) -> Line:
    """Drop the padding spaces at the end of a line (not coloured backgrounds)."""
    out = list(line)
    while out and not out[-1].control and not out[-1].text.strip() and not (
            out[-1].style is not None and out[-1].style.bgcolor is not None):
        out.pop()
    if out and not out[-1].control and (out[-1].style is None or out[-1].style.bgcolor is None):
        last = out[-1]
        out[-1] = Segment(last.text.rstrip(" "), last.style, last.control)
    return out


def render_lines(console: Console, renderable: RenderableType, width: int | None = None) -> list[Line]:
    """``renderable`` as lines of at most ``width`` cells (no blank lines at the end)."""
    options = console.options.update(width=width or console.width, height=None)
    lines = [_trim(line) for line in console.render_lines(renderable, options, pad=False, new_lines=False)]
    while lines and not plain(lines[-1]).strip():
        lines.pop()
    return lines


def plain(line: Line) -> str:
    return "".join(seg.text for seg in line if not seg.control)


def _chars(lines: Iterable[Line]) -> int:
    return sum(len("".join(plain(line).split())) for line in lines)


def _drop_chars(line: Line, n: int) -> Line:
    """``line`` without its first ``n`` visible (non-space) characters and the spaces after them."""
    out: Line = []
    for seg in line:
        if n <= 0 or seg.control:
            out.append(seg)
            continue
        text = seg.text
        cut = 0
        while cut < len(text) and n > 0:
            if not text[cut].isspace():
                n -= 1
            cut += 1
        if n <= 0:
            rest = text[cut:]
            if not out:
                rest = rest.lstrip()
            if rest:
                out.append(Segment(rest, seg.style))
    while out and not out[0].control and not out[0].text.strip():  # (no indent left by the cut)
        out.pop(0)
    return out


def _without_last_word(src: str) -> str:
    body = src.rstrip()
    cut = max(body.rfind(" "), body.rfind("\n"))
    return body[:cut] if cut > 0 else ""


class StreamBlock:
    """One streamed message (agent text as Markdown, or a thought as dim text).

    :meth:`take` renders it and returns the lines that became final since the last call
    (to print for good) and the tail that may still change (for the live area). A line is
    final when removing the last word of the source does not change it and a later line
    exists; a table is kept whole until it ends (its columns widen as rows arrive).
    """

    #: committed lines before the source is cut at a block boundary (keeps renders short)
    CUT_AFTER = 20

    def __init__(self, console: Console, kind: str, *, hyperlinks: bool = False) -> None:
        self.console = console
        self.kind = kind
        self.hyperlinks = hyperlinks
        self.src = ""
        self.done = 0  # lines of the current rendering already printed for good
        self.done_chars = 0  # their visible characters (to find the place again after a resize)
        self.skip = 0  # after a resize: visible characters of line ``done`` printed already
        self.width = 0

    def add(self, text: str) -> None:
        self.src += text

    def _renderable(self, src: str) -> RenderableType:
        if self.kind == "thought":
            return Text(src.strip("\n"), style="dim italic")
        return ChatMarkdown(src, hyperlinks=self.hyperlinks)

    def _lines(self, src: str) -> list[Line]:
        return render_lines(self.console, self._renderable(src), self.width) if src.strip() else []

    def take(self, *, final: bool = False) -> tuple[list[Line], list[Line]]:
        """(lines now final, the live tail); with ``final`` everything is final."""
        width = self.console.width
        if width != self.width:  # a resize: find the first line not yet printed by its characters
            self.width = width
            self._realign(self._lines(self.src))
        lines = self._lines(self.src)
        if final:
            stable = len(lines)
        else:
            before = self._lines(_without_last_word(self.src))
            stable = 0
            while stable < min(len(lines), len(before)) and lines[stable] == before[stable]:
                stable += 1
            stable = min(stable, len(lines) - 1, self._table_start())
        if self.skip and self.done < len(lines):  # (the part of that line printed before a resize)
            lines[self.done] = _drop_chars(lines[self.done], self.skip)
        new = lines[self.done:stable] if stable > self.done else []
        if new:
            self.done = stable
            self.done_chars += _chars(new)
            self.skip = 0
        tail = lines[self.done:]
        if new and not final and self.done > self.CUT_AFTER:
            self._cut(lines)
        return new, tail

    def _realign(self, lines: list[Line]) -> None:
        """After a resize: go on from the first character not printed yet (the rest of a line
        printed in part, at the old width, comes on a line of its own: nothing twice)."""
        seen = 0
        for i, line in enumerate(lines):
            seen += _chars([line])
            if seen > self.done_chars:
                self.done = i
                self.skip = self.done_chars - (seen - _chars([line]))
                return
        self.done, self.skip = len(lines), 0

    def _table_start(self) -> int:
        """The first line of a table still being streamed (lines from there may change: its
        columns widen as rows arrive, and its first row is a paragraph until the second)."""
        if self.kind == "thought":
            return 1 << 30
        last = ChatMarkdown(self.src).last_block()
        src_lines = self.src.splitlines(keepends=True)
        if last is None or not (last[0] == "table_open" or (
                last[0] == "paragraph_open" and any(line.lstrip().startswith("|") for line in src_lines[last[1]:]))):
            return 1 << 30
        head = "".join(src_lines[:last[1]])
        before = self._lines(head)
        return len(before) + 1 if before else 0

    def _cut(self, lines: list[Line]) -> None:
        """Drop the source of top-level blocks printed for good (renders stay short)."""
        if self.kind == "thought":
            return
        starts = [t.map[0] for t in ChatMarkdown(self.src).parsed
                  if t.level == 0 and t.nesting >= 0 and t.map is not None and t.map[0] > 0]
        src_lines = self.src.splitlines(keepends=True)
        lo, hi, best = 0, len(starts) - 1, None  # the last block start whose head is printed
        while lo <= hi:
            mid = (lo + hi) // 2
            head_lines = self._lines("".join(src_lines[:starts[mid]]))
            if len(head_lines) < self.done:
                best, lo = (starts[mid], head_lines), mid + 1
            else:
                hi = mid - 1
        if best is None:
            return
        start, head_lines = best
        rest = "".join(src_lines[start:])
        gap = len(lines) - len(head_lines) - len(self._lines(rest))  # the blank line between blocks
        if gap < 0 or len(head_lines) + gap > self.done or lines[:len(head_lines)] != head_lines:
            return
        self.src = rest
        self.done -= len(head_lines) + gap
        self.done_chars -= _chars(lines[:len(head_lines) + gap])


class LiveArea:
    """The few lines at the bottom of the terminal that are redrawn in place.

    :meth:`show` prints lines for good above the area and redraws it; the area is cropped
    to the window's height (its newest lines kept), so it can always be erased.
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self.drawn = 0  # lines of the area on screen (the cursor is at the end of the last one)

    def show(self, final: list[Line], live: list[Line]) -> None:
        room = max(1, self.console.height - 2)
        if len(live) > room:
            live = live[-room:]
        with self.console.capture() as cap:
            self.console.print(Lines([*final, *live]), end="")
        out = cap.get()
        if live:
            out = out[:-1] if out.endswith("\n") else out  # the cursor stays on the last line
        self._write(self._erase() + out)
        self.drawn = len(live)

    def clear(self) -> None:
        """Erase the area (the lines printed for good stay)."""
        if self.drawn:
            self._write(self._erase())
            self.drawn = 0

    def _erase(self) -> str:
        if not self.drawn:
            return ""
        up = f"\x1b[{self.drawn - 1}A" if self.drawn > 1 else ""
        return "\r" + up + "\x1b[J"

    def _write(self, data: str) -> None:
        if data:
            self.console.file.write(data)
            self.console.file.flush()
