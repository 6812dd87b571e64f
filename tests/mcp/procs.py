"""Finding processes by their command line (Linux ``/proc``), for the tests that check that
nothing outlives what owns it (MCP servers, stdio relays)."""

from __future__ import annotations

from pathlib import Path


def running(marker: str) -> list[int]:
    """The ids of the processes whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if marker.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                pass
    return found
