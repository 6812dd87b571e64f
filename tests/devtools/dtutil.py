"""Helpers for the devtools tests: recordings of the demo agent into a database, and traces."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

import httpx
import orjson

from acplink.client.client import connect
from acplink.client.permissions import PermissionPolicy
from acplink.demo.agent import DemoStore, create_demo_agent
from acplink.devtools.importer import import_trace
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


def demo_db(root: Path) -> dict[str, Any]:
    """The browser tests' database in ``root``: two demo-agent recordings (``one``: a plan, a
    file written after a permission question; ``two``: the same start, then another turn, for
    Diff) and an imported trace with a schema error (``bad``); ``work``: their directory."""
    db = root / "d.sqlite"
    work = root / "work"
    work.mkdir(exist_ok=True)
    one = record_demo(db, ["hello", "plan check the input; write the code; run the tests", "write f.txt hi there"],
                      work, source="demo before")
    two = record_demo(db, ["hello", "plan check the input; write the code", "think about it"], work,
                      source="demo after")
    store = Store(db)
    try:
        bad = import_trace(store, bad_prompt_trace(root / "bad.jsonl")).conn
    finally:
        store.close()
    return {"db": db, "work": work, "one": one, "two": two, "bad": bad}


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


WAIT = 60.0  # s: generous bounds against hangs, never a timing assertion


def read_line(stream: IO[bytes], timeout: float = WAIT) -> str:
    """The next line of ``stream`` ('' at its end or after ``timeout``)."""
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline()))
    reader.start()
    reader.join(timeout)
    return got[0].decode().rstrip("\n") if got else ""


class Devtools:
    """``acplink devtools --db DB --no-browser ARGS...`` in a subprocess: its URL, an HTTP
    client (with the token's cookie once the URL was fetched), :meth:`stop`."""

    def __init__(self, db: Path, cwd: Path, args: Sequence[str] = ()) -> None:
        self.proc = subprocess.Popen([*ACPLINK, "devtools", "--db", str(db), "--no-browser", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env())
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.url = read_line(self.proc.stdout)
        self.base = self.url.split("?")[0].rsplit("/connect/", 1)[0].rstrip("/")
        self.http = httpx.Client(base_url=self.base, timeout=WAIT)

    def events(self, chat: int, until: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
        """The chat's events (replayed from its start) up to the first for which ``until`` holds."""
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + WAIT
        with self.http.stream("GET", f"/connect/{chat}/events") as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.startswith("data: "):
                    seen.append(orjson.loads(line[6:]))
                    if until(seen[-1]):
                        return seen
                assert time.monotonic() < deadline, seen
        raise AssertionError(f"the event stream ended: {seen}")

    def stop(self) -> tuple[int, str]:
        """SIGTERM, then its exit status and all it wrote on stderr."""
        self.http.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            self.proc.stdout.close()  # type: ignore[union-attr]
        err = self.proc.stderr.read().decode()  # type: ignore[union-attr]
        self.proc.stderr.close()  # type: ignore[union-attr]
        return code, err
