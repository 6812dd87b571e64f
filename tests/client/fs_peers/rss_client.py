"""Runs acplink's client against reader_agent.py and prints its own memory figures as JSON.

argv: ROOT FILE COUNT STATS_FILE. Prints {"baseline_kib", "peak_kib", "seconds"}: the resident
set size before the prompt, and the peak (VmHWM, reset just before the prompt) during it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from acplink import connect

HERE = Path(__file__).parent


def status(field: str) -> int:
    for entry in Path("/proc/self/status").read_text().splitlines():
        if entry.startswith(field + ":"):
            return int(entry.split()[1])
    raise LookupError(field)


async def main() -> None:
    root, file, count, stats = sys.argv[1:5]
    agent = [sys.executable, str(HERE / "reader_agent.py"), file, count, stats]
    async with connect(agent) as client:
        session = await client.new_session(cwd=root)
        baseline = status("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        start = time.monotonic()
        await session.prompt("go")
        seconds = time.monotonic() - start
        peak = status("VmHWM")
    print(json.dumps({"baseline_kib": baseline, "peak_kib": peak, "seconds": round(seconds, 2)}))


asyncio.run(main())
