#!/usr/bin/env python3
"""Interop peer: a REMOTE ACP client on the official Python SDK 0.12.1 (``acp.http`` /
``acp.ws``, its [http] extra), with the handlers of py_client.py.

    py_remote_client.py --url URL --transport ws|http --cwd DIR [--token T]
                        [--prompt TEXT]... [--deny] [--timeout S]

One JSON line per event on stdout (the events of py_client.py, then {"event": "closed"});
exit 1 after {"event": "fatal", ...} when the agent could not be driven.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from acp import RequestError, connect_to_agent, text_block
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation
from py_client import InteropClient, emit, wire


async def open_transport(opts: argparse.Namespace) -> Any:
    headers = {"Authorization": f"Bearer {opts.token}"} if opts.token else None
    if opts.transport == "ws":
        from acp.ws import create_websocket_stream

        return await create_websocket_stream(opts.url, headers=headers)
    from acp.http import create_http_stream

    return create_http_stream(opts.url, headers=headers)


async def run(opts: argparse.Namespace) -> int:
    cwd = os.path.abspath(opts.cwd)
    client = InteropClient(cwd, opts.deny)
    conn = connect_to_agent(client, await open_transport(opts))
    try:
        init = await asyncio.wait_for(conn.initialize(
            protocol_version=1,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True,
                                                                              write_text_file=True)),
            client_info=Implementation(name="py-sdk-remote-client", version="0.12.1"),
        ), opts.timeout)
        emit({"event": "initialize", "result": wire(init)})
        session = await asyncio.wait_for(conn.new_session(cwd=cwd, mcp_servers=[]), opts.timeout)
        emit({"event": "session", "sessionId": session.session_id})
        for text in opts.prompt:
            try:
                response = await asyncio.wait_for(
                    conn.prompt(session_id=session.session_id, prompt=[text_block(text)]), opts.timeout)
                emit({"event": "stop", "stopReason": response.stop_reason})
            except RequestError as exc:
                emit({"event": "error", "code": exc.code, "message": str(exc)})
    finally:
        client.shutdown()
        await conn.close()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(prog="py_remote_client.py")
    parser.add_argument("--url", required=True)
    parser.add_argument("--transport", choices=["ws", "http"], required=True)
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--token")
    parser.add_argument("--prompt", action="append", default=[])
    parser.add_argument("--deny", action="store_true")
    parser.add_argument("--timeout", type=float, default=30.0)
    opts = parser.parse_args()
    try:
        code = asyncio.run(run(opts))
    except Exception as exc:  # connection refused, HTTP error, timeout...
        emit({"event": "fatal", "message": f"{type(exc).__name__}: {exc}"})
        code = 1
    emit({"event": "closed"})
    sys.exit(code)


if __name__ == "__main__":
    main()
