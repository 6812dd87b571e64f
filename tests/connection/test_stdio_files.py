"""An agent served on stdio also works when stdin/stdout are regular files (scripting)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_agent_reads_requests_from_a_file_and_writes_answers_to_a_file(tmp_path: Path) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_text(
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}) + "\n"
        + json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                      "params": {"cwd": str(tmp_path), "mcpServers": []}}) + "\n"
        + json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such_method"}) + "\n"
    )
    out = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        proc = subprocess.run([sys.executable, str(ROOT / "examples" / "echo_agent.py")], stdin=stdin,
                              stdout=stdout, stderr=subprocess.PIPE, timeout=30)
    assert proc.returncode == 0, proc.stderr.decode()
    answers = {m["id"]: m for m in map(json.loads, out.read_text().splitlines())}
    assert answers[1]["result"]["protocolVersion"] == 1
    assert answers[2]["result"]["sessionId"]
    assert answers[3]["error"]["code"] == -32601


def test_agent_with_stdin_from_dev_null_exits_at_once() -> None:
    # /dev/null cannot be watched by epoll: it is read like a file, so the agent sees end of
    # input and exits instead of hanging
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "echo_agent.py")], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
