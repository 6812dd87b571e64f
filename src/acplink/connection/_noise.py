"""Bad input from a peer: rate-limited warnings, and giving up on a peer that does not speak
JSON-RPC at all (e.g. a program that is not an agent: ``acplink prompt hi -- yes``)."""

from __future__ import annotations

import logging
import time
from typing import Any

__all__ = ["BadInput", "WarningLimiter"]

#: warnings shown as they come, before they are only counted
FIRST_WARNINGS = 5
#: seconds between two summary lines of the warnings not shown
WARNING_INTERVAL = 10.0


class WarningLimiter:
    """Warnings about one peer's bad input: the first :data:`FIRST_WARNINGS` as they come,
    then at most one summary line (a count and the latest) per ``interval`` seconds, and one
    for the rest when the connection ends (:meth:`flush`)."""

    def __init__(self, log: logging.Logger, name: str, *, first: int = FIRST_WARNINGS,
                 interval: float = WARNING_INTERVAL) -> None:
        self.log = log
        self.name = name
        self.first = first
        self.interval = interval
        self.shown = 0
        self.suppressed = 0
        self._latest = ""
        self._since = 0.0

    def warn(self, message: str) -> None:
        if self.shown < self.first:
            self.shown += 1
            self.log.warning("%s: %s", self.name, message)
            if self.shown == self.first:
                self._since = time.monotonic()
            return
        if not self.log.isEnabledFor(logging.WARNING):
            return
        self.suppressed += 1
        self._latest = message
        if time.monotonic() - self._since >= self.interval:
            self.flush()

    def flush(self) -> None:
        """Report the warnings counted and not shown (if any)."""
        if self.suppressed:
            now = time.monotonic()
            self.log.warning("%s: %d more warnings about bad input in the last %.0f s (the latest: %s)",
                             self.name, self.suppressed, now - self._since, self._latest)
            self.suppressed = 0
            self._since = now


class BadInput:
    """Counts the peer's bad lines (not JSON, not JSON-RPC) since its last valid message.
    :meth:`bad` returns why to give up on the peer, or None."""

    def __init__(self, max_lines: int | None, max_lines_at_start: int | None) -> None:
        self.max_lines = max_lines
        self.max_lines_at_start = max_lines_at_start
        #: bad lines since the last valid message
        self.run = 0
        self.seen_valid = False
        self.first: str = ""

    def valid(self) -> str | None:
        """A valid message: the count starts again. Returns a warning to show the first time,
        when bad lines came before it (those were not shown one by one)."""
        note = None
        if not self.seen_valid and self.run:
            note = (f"skipped {self.run} non-JSON or invalid line{'s' if self.run > 1 else ''} before its "
                    f"first message (the first: {self.first})")
        self.run = 0
        self.seen_valid = True
        return note

    def bad(self, message: Any) -> str | None:
        if self.run == 0:  # (the violation's quote of the line, without its explanation)
            self.first = str(message).split(": ", 1)[-1][:200]
        self.run += 1
        limit = self.max_lines if self.seen_valid else self.max_lines_at_start
        if limit is None or self.run < limit:
            return None
        where = "in a row" if self.seen_valid else "before its first valid message"
        return (f"its output is not JSON-RPC: {self.run} bad lines {where} (the first: {self.first}); "
                "gave up on it")
