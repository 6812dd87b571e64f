"""Shared by the terminal tests: the scripted peers, marked processes, polling."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PY = sys.executable
PEERS = Path(__file__).resolve().parent / "peers"
TERM_AGENT = str(PEERS / "term_agent.py")
TERM_CLIENT = str(PEERS / "term_client.py")

#: argv tail for ``python -c GRAND MARKER MODE``: forks a child that calls setsid() and
#: sleeps with ``MARKER-grandchild`` in its command line. MODE ``exit``: the terminal's
#: process exits at once (the grandchild is orphaned); ``stay``: it sleeps too; ``orphan``:
#: the setsid() child is made by an intermediate process that exits, the grandchild lives
#: 0.3 s, and the terminal's process keeps running.
GRAND = """
import os, sys, time
marker, mode = sys.argv[1], sys.argv[2]
def spawn(seconds):
    if os.fork() == 0:
        os.setsid()
        os.execv(sys.executable, [sys.executable, "-c", "import sys, time; time.sleep(float(sys.argv[1]))",
                                  seconds, marker + "-grandchild"])
if mode == "orphan":
    middle = os.fork()
    if middle == 0:
        spawn("0.3")
        os._exit(0)
    os.waitpid(middle, 0)
else:
    spawn("1000")
print("spawned", flush=True)
if mode != "exit":
    time.sleep(1000)
"""


def processes() -> list[tuple[int, str, int, int, bytes]]:
    """Every process we can see: (pid, state, ppid, process group, command line)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        out.append((int(name), fields[0].decode(), int(fields[1]), int(fields[2]), cmdline))
    return out


def marked(marker: str) -> list[tuple[int, str]]:
    """Processes (zombies included) whose command line holds ``marker``: (pid, state)."""
    needle = marker.encode()
    return [(pid, state) for pid, state, _, _, cmdline in processes() if needle in cmdline]


def proc_state(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process, or None when it is gone (reaped)."""
    for other, state, ppid, _, _ in processes():
        if other == pid:
            return state, ppid
    return None


async def until(pred: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Poll a condition (generous deadline: a liveness check, not a timing test)."""
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.02)


def spec(command: str, *args: str, then: tuple[str, ...] = (), full: bool = False, **create: Any) -> str:
    """A prompt for ``term_agent.py``."""
    return json.dumps({"create": {"command": command, "args": list(args), **create}, "then": list(then),
                       "full": full})
