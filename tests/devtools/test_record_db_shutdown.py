"""`acplink record --db` under a flood: every message it forwarded is in the database even when
the client closes the pipe and signals the proxy right after the last message, SIGKILL
included (then the next opening of the database recovers the rows from the proxy's spool)."""

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
from acplink.tools.spool import spool_dir

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


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_signalled_recorder_still_stores_every_forwarded_message(tmp_path: Path, sig: signal.Signals) -> None:
    db = tmp_path / "f.sqlite"
    n = 20000 if sig == signal.SIGKILL else 5000
    sent, received, stderr = _flood_through_proxy(tmp_path, db, n, sig)
    assert received > n
    assert "Traceback" not in stderr, stderr
    store = Store(db)  # (recovers the spool of a killed recorder)
    try:
        (c,) = store.connections()
        counts = dict(store.db.execute("SELECT dir, count(*) FROM messages WHERE conn = ? GROUP BY dir", (c.id,)))
        assert counts == {"c2a": sent, "a2c": received}
        assert c.ended is not None  # the connection was closed properly, not cut off
        seqs = [r[0] for r in store.db.execute("SELECT seq FROM messages WHERE conn = ? ORDER BY seq", (c.id,))]
        assert seqs == list(range(1, sent + received + 1))
        chunks = [orjson.loads(body)["params"]["update"]["content"]["text"].split()[2] for (body,) in store.db.execute(
            "SELECT body FROM messages WHERE conn = ? AND method = 'session/update' ORDER BY seq", (c.id,))]
        assert len(chunks) == n and chunks == sorted(chunks)  # every update, in the order it was forwarded
        assert not list(spool_dir(db).glob("*.spool"))  # recovered, then removed
    finally:
        store.close()
