#!/usr/bin/env python3
"""Interop peer: the official Python SDK's client (``acp`` 0.12.1) using an agent's stored
sessions: ``session/list`` and ``session/load``.

    py_store_client.py --cwd DIR [--prompt TEXT]... -- AGENT_CMD [ARGS...]
    py_store_client.py --cwd DIR --load SESSION_ID [--prompt TEXT]... -- AGENT_CMD [ARGS...]

Without ``--load``: initialize, session/new, one session/prompt per ``--prompt``. With it:
initialize, session/list (every page, ``cwd`` = DIR), session/load of SESSION_ID (the
updates replayed before its answer are events), then the prompts on it. One JSON line per
event on stdout: ``initialize``, ``session``, ``list`` (``sessions``: id and title),
``update`` (``phase``: ``load`` or ``prompt``), ``loaded``, ``stop``; ``fatal`` and exit 1
when the agent could not be driven.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from acp import spawn_agent_process, text_block
from acp.schema import ClientCapabilities, Implementation


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


class StoreClient:
    def __init__(self) -> None:
        self.phase = "load"

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        emit({"event": "update", "phase": self.phase,
              "update": update.model_dump(mode="json", by_alias=True, exclude_unset=True)})


async def run(opts: argparse.Namespace, command: list[str]) -> int:
    cwd = os.path.abspath(opts.cwd)
    client = StoreClient()
    async with spawn_agent_process(client, command[0], *command[1:], env=dict(os.environ),
                                   transport_kwargs={"stderr": None}) as (conn, _proc):
        init = await asyncio.wait_for(conn.initialize(
            protocol_version=1, client_capabilities=ClientCapabilities(),
            client_info=Implementation(name="py-sdk-store-client", version="0.12.1")), 30)
        emit({"event": "initialize", "result": init.model_dump(mode="json", by_alias=True, exclude_unset=True)})
        if opts.load:
            listed: list[dict[str, Any]] = []
            cursor = None
            while True:
                page = await asyncio.wait_for(conn.list_sessions(cwd=cwd, cursor=cursor), 30)
                listed += [{"sessionId": s.session_id, "title": s.title} for s in page.sessions]
                cursor = page.next_cursor
                if not cursor:
                    break
            emit({"event": "list", "sessions": listed})
            await asyncio.wait_for(conn.load_session(cwd=cwd, session_id=opts.load, mcp_servers=[]), 30)
            emit({"event": "loaded"})
            sid = opts.load
        else:
            sid = (await asyncio.wait_for(conn.new_session(cwd=cwd, mcp_servers=[]), 30)).session_id
            emit({"event": "session", "sessionId": sid})
        client.phase = "prompt"
        for text in opts.prompt:
            response = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block(text)]), 30)
            emit({"event": "stop", "stopReason": response.stop_reason})
    return 0


def main() -> None:
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    parser = argparse.ArgumentParser()
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--prompt", action="append", default=[])
    parser.add_argument("--load", metavar="SESSION_ID")
    opts = parser.parse_args(argv[:split])
    try:
        code = asyncio.run(run(opts, argv[split + 1:]))
    except Exception as exc:
        emit({"event": "fatal", "message": f"{type(exc).__name__}: {exc}"})
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
