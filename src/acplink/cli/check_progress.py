"""What ``acplink check`` shows while it runs: on a terminal, one line updated in place
(``12/31 SESSION-004 session-load, cancel …``) and erased before the report; with
``--verbose``, one line per check as it ends (on a terminal or not). Nothing else when stdout
is not a terminal, so redirected output holds only the report."""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from typing import Any, TextIO

from .._text import sanitize_for_terminal

__all__ = ["CheckProgress"]

_MARK = {"pass": "PASS", "fail": "FAIL", "skipped": "SKIP", "error": "ERR"}


class CheckProgress:
    """A :data:`acplink.conformance.runner.ProgressListener` that writes to ``out``.

    ``live``: draw the updating line (default: when ``out`` is a terminal); ``stream``: print each
    check's outcomes as it ends (``--verbose``)."""

    def __init__(self, out: TextIO | None = None, *, live: bool | None = None, stream: bool = False) -> None:
        self.out = out or sys.stdout
        self.live = self.out.isatty() if live is None else live
        self.stream = stream
        self.running: dict[str, Any] = {}  # check name -> its Check, in start order
        self.done = 0
        self.total = 0
        self._drawn = False
        self._t0 = time.monotonic()

    def __call__(self, event: str, check: Any, run: Any, done: int, total: int) -> None:
        self.done, self.total = done, total
        if event == "start":
            self.running[check.name] = check
        else:
            self.running.pop(check.name, None)
            if self.stream and run is not None:
                self._erase()
                self.out.write(self.result_line(run, done, total) + "\n")
        self._draw()

    async def tick_every(self, seconds: float) -> None:
        """Redraw the line every ``seconds`` (its elapsed time), until cancelled; before the
        first check starts it says the agent is starting."""
        while True:
            self._draw()
            await asyncio.sleep(seconds)

    def result_line(self, run: Any, done: int, total: int) -> str:
        """``[12/31] session-load 1.2 s: PASS SESS-011, FAIL SESS-016`` (one entry per requirement)."""
        seen: dict[str, str] = {}
        for o in run.outcomes:  # a requirement's worst outcome in this check wins
            order = ("pass", "skipped", "error", "fail")
            prev = seen.get(o.requirement)
            if prev is None or order.index(o.status) > order.index(prev):
                seen[o.requirement] = o.status
        parts = ", ".join(f"{_MARK.get(st, st.upper())} {req}" for req, st in seen.items())
        width = len(str(total))
        line = f"[{done:>{width}}/{total}] {run.name} {run.duration:.1f} s" + (f": {parts}" if parts else "")
        if run.error:
            line += f" ({run.error.splitlines()[0]})"
        return sanitize_for_terminal(line)

    def status_line(self) -> str:
        """The updating line: checks done / total, the requirement ids and names being checked."""
        checks = list(self.running.values())
        ids = checks[0].requirements[0] if checks and checks[0].requirements else ""
        names = ", ".join(c.name for c in checks)
        elapsed = time.monotonic() - self._t0
        if not self.total:
            return f"starting the agent … {elapsed:.0f} s"
        return f"{self.done}/{self.total} {ids} {names}".rstrip() + f" … {elapsed:.0f} s"

    def _draw(self) -> None:
        if not self.live:
            self.out.flush()
            return
        cols = shutil.get_terminal_size((80, 24)).columns
        line = self.status_line()
        if len(line) > cols - 1:
            line = line[:cols - 2] + "…"
        self.out.write("\r" + line + "\x1b[K")
        self.out.flush()
        self._drawn = True

    def _erase(self) -> None:
        if self._drawn:
            self.out.write("\r\x1b[K")
            self._drawn = False

    def close(self) -> None:
        """Erase the updating line (before the report is printed)."""
        self._erase()
        self.out.flush()
