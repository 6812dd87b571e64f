#!/usr/bin/env python3
"""Interop peer: the official Python SDK's (0.12.1) ASGI app (``acp.http``: streamable HTTP
and WebSocket on one path) under uvicorn, serving the agent of ``py_agent.py`` (one per
connection). Run it from the peers venv:

    .peers-venv/bin/python tests/interop/peers/py_remote_server.py [PORT]

Prints ``LISTENING <port>`` once it accepts connections; stops at the end of its stdin.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

import uvicorn
from acp.http.asgi import create_asgi_app
from py_agent import InteropAgent


def _agent(conn: Any) -> InteropAgent:
    agent = InteropAgent()
    agent.on_connect(conn)
    return agent


async def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_asgi_app(_agent), log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.02)
    print(f"LISTENING {port}", flush=True)
    # the end of our stdin (the test closing it) stops the server
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    server.should_exit = True
    await serving


if __name__ == "__main__":
    asyncio.run(main())
