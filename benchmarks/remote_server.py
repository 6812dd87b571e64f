#!/usr/bin/env python3
"""Benchmark server: acplink's scenario agent (benchmarks/scenario_agent.py) served in this
process by acplink's ASGI server under uvicorn, on ``/acp`` over WebSocket and streamable
HTTP, with the configuration ``acplink serve`` uses.

    python benchmarks/remote_server.py

Prints its two URLs (``ws://...``, ``http://...``), one per line, then serves until SIGTERM
or SIGINT. This is the same work as the TypeScript SDK's benchmark server
(``peers/official_ts/remote_server.mjs``: the scenario agent inside the server's process);
``acplink serve -- python benchmarks/scenario_agent.py`` adds a process and a pipe hop per
message, and ``benchmarks/remote.py --acplink-server command`` measures that instead.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenario_agent import app  # (the scenario agent's AgentApp)

from acplink import tune_gc
from acplink._listen import listening_socket  # (acplink serve's own socket and uvicorn setup)
from acplink.cli.serve import _serve
from acplink.server import AcpServer, ServerLimits


def main() -> None:
    tune_gc()  # as run_agent does for the scenario agent process
    server = AcpServer(lambda: app, limits=ServerLimits(max_connections=64))
    sock = listening_socket("127.0.0.1", 0)
    try:
        asyncio.run(_serve(server, sock, ("ws", "http"), None))  # (loopback, no token)
    finally:
        sock.close()


if __name__ == "__main__":
    main()
