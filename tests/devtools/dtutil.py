"""Helpers for the devtools tests: recordings of the demo agent into a database, and traces."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from acplink.client.client import connect
from acplink.client.permissions import PermissionPolicy
from acplink.demo.agent import DemoStore, create_demo_agent
from acplink.devtools.store import Ingest, Store
from acplink.tools.record import recording_transport
from acplink.transports.memory import memory_pair

_SCRIPT = Path(sys.executable).parent / "acplink"
ACPLINK = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "acplink"]


async def _record(db: Path, prompts: Sequence[str], cwd: Path, source: str) -> int:
    store = Store(db)
    ingest = Ingest(store, source)
    agent = create_demo_agent(DemoStore(cwd / ".demo-store"), delay=0)
    ours, theirs = memory_pair()
    agent_conn = agent.connection(theirs)
    await agent_conn.start()
    try:
        transport = recording_transport(ours, None, listeners=[ingest])
        async with connect(transport, permission=PermissionPolicy.allow_all(), terminal=False) as client:
            session = await client.new_session(str(cwd))
            for text in prompts:
                await session.prompt(text)
    finally:
        await agent_conn.aclose()
        ingest.close()
        store.close()
    assert ingest.conn is not None
    return ingest.conn


def record_demo(db: Path, prompts: Sequence[str], cwd: Path, source: str = "demo") -> int:
    """A conversation with the demo agent (in process), recorded into ``db``: its connection id."""
    return asyncio.run(_record(db, prompts, cwd, source))


def write_trace(path: Path, records: Sequence[dict[str, Any] | bytes]) -> Path:
    with open(path, "wb") as f:
        for rec in records:
            f.write(rec if isinstance(rec, bytes) else orjson.dumps(rec) + b"\n")
    return path


def message(seq: int, d: str, msg: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "message", "seq": seq, "dir": d, "mono": 1.0 + seq / 100, "wall": 1_700_000_000 + seq / 100,
            "size": len(orjson.dumps(msg)), "msg": msg, **extra}


def bad_prompt_trace(path: Path) -> Path:
    """A short trace whose session/prompt lacks its prompt (a schema error), then a cut line."""
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    init_r = {"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1, "agentInfo": {"name": "bad-agent",
                                                                                         "version": "9"}}}
    new = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}
    new_r = {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "s1"}}
    bad = {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": "s1"}}
    return write_trace(path, [
        {"type": "header", "format": "acplink-trace", "version": 1, "mono": 1.0, "wall": 1_700_000_000},
        message(1, "c2a", init), message(2, "a2c", init_r), message(3, "c2a", new), message(4, "a2c", new_r),
        message(5, "c2a", bad, violations=[{"path": "$.params.prompt", "message": "PromptRequest: Field required"}]),
        b'{"type": "message", "seq": 6, "dir": "a2c", "ms',
    ])


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}
