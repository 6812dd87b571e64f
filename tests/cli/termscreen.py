"""``acplink chat`` in a pseudo-terminal of a given size, its output fed to a terminal emulator
(pyte), so tests check what a person would see: the screen, and the scrollback above it.

Every wait is for text to appear (never for time); a failed wait shows the screen.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pyte
from cliutil import ACPLINK, Cli

HERE = Path(__file__).resolve().parent
SHAPES_AGENT = [sys.executable, str(HERE / "shapes_agent.py")]
SIZES = [(60, 15), (200, 50)]
SIZE_IDS = [f"{c}x{r}" for c, r in SIZES]
TIMEOUT = 20
#: variables that would make the chat think the terminal shows hyperlinks
_TERMINAL_HINTS = ("TERM_PROGRAM", "VTE_VERSION", "KITTY_WINDOW_ID", "WT_SESSION", "TMUX", "STY",
                   "ACPLINK_HYPERLINKS")


def squash(text: str) -> str:
    """Whitespace (line ends included) folded to single spaces: wrapped text reads whole."""
    return " ".join(text.split())


class Term:
    def __init__(self, cli: Cli, cols: int, rows: int, *agent: str, options: tuple[str, ...] = ()) -> None:
        env = {k: v for k, v in cli.env.items() if k not in _TERMINAL_HINTS}
        env["TERM"] = "xterm-256color"
        args = [*ACPLINK[1:], "chat", *options, *(["--", *agent] if agent else [])]
        self.cols, self.rows = cols, rows
        self.child = pexpect.spawn(ACPLINK[0], args, cwd=str(cli.workdir), env=env, dimensions=(rows, cols),
                                   encoding="utf-8", timeout=TIMEOUT)
        self.screen = pyte.HistoryScreen(cols, rows, history=20000)
        self.stream = pyte.Stream(self.screen)
        self.eof = False
        self.raw: list[str] = []  # everything the chat wrote, as written (escape sequences too)

    # -- reading -----------------------------------------------------------------------------

    def pump(self, wait: float = 0.05) -> None:
        if self.eof:
            return
        try:
            data = self.child.read_nonblocking(1 << 16, timeout=wait)
            self.raw.append(data)
            self.stream.feed(data)
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            self.eof = True

    def visible(self) -> list[str]:
        """The lines on the screen now."""
        return [line.rstrip() for line in self.screen.display]

    def lines(self) -> list[str]:
        """The scrollback and the screen, top to bottom."""
        top = ["".join(row[x].data for x in range(max(row, default=-1) + 1)).rstrip()
               for row in self.screen.history.top]  # (a line as wide as it was written)
        return top + self.visible()

    def text(self) -> str:
        return squash("\n".join(self.lines()))

    def dump(self) -> str:
        return "\n".join(self.lines()[-3 * self.rows:])

    def wait(self, pattern: str, *, on_screen: bool = False, timeout: float = TIMEOUT) -> None:
        """Until ``pattern`` (a regex, matched on squashed text) is on the screen (or in the
        scrollback too, unless ``on_screen``)."""
        deadline = _now() + timeout
        while True:
            text = squash("\n".join(self.visible())) if on_screen else self.text()
            if re.search(pattern, text):
                return
            if self.eof or _now() > deadline:
                raise AssertionError(f"{pattern!r} never appeared; the terminal shows:\n{self.dump()}")
            self.pump()

    def prompt(self, count: int) -> None:
        """Until the ``count``-th input prompt (``NAME>``) has appeared."""
        deadline = _now() + TIMEOUT
        while sum(1 for line in self.lines() if re.match(r"^\w*> ?", line)) < count:
            if self.eof or _now() > deadline:
                raise AssertionError(f"prompt #{count} never appeared; the terminal shows:\n{self.dump()}")
            self.pump()

    # -- writing -----------------------------------------------------------------------------

    def send(self, line: str) -> None:
        self.child.send(line + "\r")

    def finish(self, timeout: float = TIMEOUT) -> int:
        """Until the chat has exited (its exit status); a chat still running after ``timeout``
        fails the test (it never hangs the suite)."""
        deadline = _now() + timeout
        while not self.eof:
            if _now() > deadline:
                raise AssertionError(f"the chat did not exit within {timeout} s; the terminal shows:\n{self.dump()}")
            self.pump(0.2)
        self.child.close()
        assert self.child.exitstatus is not None, f"killed by signal {self.child.signalstatus}"
        return int(self.child.exitstatus)

    def close(self) -> None:
        if self.child.isalive():
            self.child.close(force=True)
        elif not self.child.closed:
            self.child.close()


def start(terms: list[Term], cli: Cli, cols: int, rows: int, *agent: str, options: tuple[str, ...] = ()) -> Term:
    """A chat on a ``cols`` x ``rows`` terminal (kept in ``terms`` to be closed), at its first prompt
    (``options``: the chat's own, e.g. ``("--protocol", "2")``)."""
    t = Term(cli, cols, rows, *agent, options=options)
    terms.append(t)
    t.prompt(1)
    return t


def chunks(text: str, n: int) -> list[int]:
    """The numbers of the demo's ``slow N`` chunks in ``text``, in order."""
    return [int(m) for m in re.findall(rf"chunk (\d+)/{n}\b", text)]


def _now() -> float:
    import time

    return time.monotonic()
