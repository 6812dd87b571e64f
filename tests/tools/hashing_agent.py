"""The demo agent (no streaming delay) on stdio, hashing every byte it reads and writes.

    python hashing_agent.py SUMMARY.json

writes {"sent": sha256, "received": sha256, ...} to SUMMARY.json when the client hangs up.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from hashing import HashingTransport

from acplink.agent.serve import serve
from acplink.demo.agent import create_demo_agent
from acplink.transports import StdioTransport


async def main(summary: str) -> None:
    transport = HashingTransport(StdioTransport())
    try:
        await serve(create_demo_agent(delay=0), transport)
    finally:
        Path(summary).write_text(json.dumps(transport.summary()))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
