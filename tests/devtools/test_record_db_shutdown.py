"""`acplink record --db` under a flood: every message it forwarded is in the database even when
the client closes the pipe and signals the proxy right after the last message."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from dtutil import ACPLINK

from acplink.devtools.store import Store

AGENT = Path(__file__).resolve().parents[2] / "benchmarks" / "scenario_agent.py"


def _flood_through_proxy(tmp_path: Path, db: Path, n: int, sig: signal.Signals) -> tuple[int, int, str]:
    proc = subprocess.Popen([*ACPLINK, "record", "--db", str(db), "--", sys.executable, str(AGENT)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    sent = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}}]
    received = 0
    try:
        for msg in sent:
            proc.stdin.write(orjson.dumps(msg) + b"\n")
            proc.stdin.flush()
            while True:
                reply = orjson.loads(proc.stdout.readline())
                received += 1
                if reply.get("id") == msg["id"]:
                    break
        session = reply["result"]["sessionId"]
        prompt = {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                  "params": {"sessionId": session, "prompt": [{"type": "text", "text": f"flood {n}"}]}}
        sent.append(prompt)
        proc.stdin.write(orjson.dumps(prompt) + b"\n")
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            assert line, "the proxy closed its output before the prompt's response"
            received += 1
            if b'"id":3' in line and b'"stopReason"' in line:
                break
        # the impatient editor: close the pipe and signal the proxy at once, and again and again
        proc.stdin.close()
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                os.kill(proc.pid, sig)
            except ProcessLookupError:
                break
            time.sleep(0.002)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr = proc.stderr.read().decode()
        proc.stdout.close()
        proc.stderr.close()
    return len(sent), received, stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signalled_recorder_still_stores_every_forwarded_message(tmp_path: Path, sig: signal.Signals) -> None:
    db = tmp_path / "f.sqlite"
    sent, received, stderr = _flood_through_proxy(tmp_path, db, 5000, sig)
    assert received > 5000
    assert "Traceback" not in stderr, stderr
    store = Store(db)
    try:
        (c,) = store.connections()
        counts = dict(store.db.execute("SELECT dir, count(*) FROM messages WHERE conn = ? GROUP BY dir", (c.id,)))
        assert counts == {"c2a": sent, "a2c": received}
        assert c.ended is not None  # the connection was closed properly, not cut off
    finally:
        store.close()
