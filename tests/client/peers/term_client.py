"""A client for the terminal tests, in its own process (``python term_client.py CWD PROMPT...``).

Connects to ``term_agent.py`` over a pipe with the default handlers, opens a session in CWD,
sends each PROMPT (a JSON step list, see ``term_agent.py``) and prints one line per reply:
``reply <json>``. Then it prints ``rss <peak growth in KiB> <peak in KiB>`` (the peak resident
size during the prompts minus the one before them, Linux ``VmHWM``) and ``ready``, and with
``--hold`` sleeps until it is killed; otherwise it closes the client and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from acplink import connect

AGENT = str(Path(__file__).with_name("term_agent.py"))


def peak_rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


async def main(cwd: str, prompts: list[str], hold: bool) -> None:
    async with connect([sys.executable, AGENT], stderr="inherit") as client:
        session = await client.new_session(cwd=cwd)
        before = peak_rss_kib()
        for text in prompts:
            reply = ""
            async for update in session.prompt(text):
                reply += getattr(getattr(update, "content", None), "text", "")
            print("reply", reply, flush=True)
        peak = peak_rss_kib()
        print("rss", peak - before, peak, flush=True)
        print("ready", flush=True)
        if hold:
            await asyncio.sleep(3600)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("cwd")
    ap.add_argument("prompts", nargs="+")
    ap.add_argument("--hold", action="store_true")
    args = ap.parse_args()
    asyncio.run(main(args.cwd, args.prompts, args.hold))
