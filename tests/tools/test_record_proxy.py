"""`acplink record`: byte-transparent in both directions over a long session; the trace renders."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hashing import HashingTransport

from acplink import connect
from acplink.tools.trace import read_trace
from acplink.transports import SubprocessTransport

HERE = Path(__file__).parent
ACPLINK = [sys.executable, "-m", "acplink.cli.main"]


def _record_cmd(trace: Path, summary: Path, *extra: str) -> list[str]:
    return [*ACPLINK, "record", "--out", str(trace), *extra, "--",
            sys.executable, str(HERE / "hashing_agent.py"), str(summary)]


async def test_record_changes_no_byte_over_a_long_session(tmp_path: Path) -> None:
    trace, summary = tmp_path / "trace.jsonl", tmp_path / "agent.json"
    (tmp_path / "notes.txt").write_text("line one\nline two\n" * 50)
    env = {"ACPLINK_DEMO_STORE": str(tmp_path / "store")}
    transport = HashingTransport(SubprocessTransport(_record_cmd(trace, summary), env=env, stderr="capture",
                                                     close_timeout=10))
    big = "x" * 1_500_000  # one 1.5 MB word: one big prompt and one big update back
    async with connect(transport, cwd=tmp_path) as client:
        session = await client.new_session(tmp_path)
        for i in range(40):
            await asyncio.wait_for(session.prompt(f"message number {i} with a few words in it"), 30)
        await asyncio.wait_for(session.prompt("read notes.txt"), 30)
        await asyncio.wait_for(session.prompt("plan first step; second step; third step"), 30)
        await asyncio.wait_for(session.prompt(big), 60)
        await asyncio.wait_for(session.prompt("héllo wörld ✓ — unicode 🎉"), 30)
    agent = json.loads(summary.read_text())
    client_side = transport.summary()
    assert client_side["sent_bytes"] == agent["received_bytes"] > 1_500_000
    assert client_side["received_bytes"] == agent["sent_bytes"] > 1_500_000
    assert client_side["sent"] == agent["received"], "client→agent bytes changed"
    assert client_side["received"] == agent["sent"], "agent→client bytes changed"

    records = read_trace(trace)
    messages = [r for r in records if r["type"] == "message"]
    assert len(messages) > 400
    assert records[0]["type"] == "header" and records[0]["format"] == "acplink-trace"
    assert records[-1] == {**records[-1], "type": "exit", "code": 0}
    assert sum(m["size"] + 1 for m in messages if m["dir"] == "c2a") == agent["received_bytes"]
    assert sum(m["size"] + 1 for m in messages if m["dir"] == "a2c") == agent["sent_bytes"]
    assert not [m for m in messages if m.get("violations")], "the demo agent and client are schema-clean"
    assert {"fs/read_text_file", "session/update", "session/prompt"} <= {m.get("method") for m in messages}
    assert all(m["mono"] <= n["mono"] for m, n in itertools.pairwise(messages))

    out = subprocess.run([*ACPLINK, "inspect", str(trace)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "turn 44" in out.stdout and "no findings" in out.stdout
    data = json.loads(subprocess.run([*ACPLINK, "inspect", "--json", str(trace)], capture_output=True,
                                     text=True, timeout=60).stdout)
    (sess,) = data["sessions"]
    assert len(sess["turns"]) == 44
    assert all(t["stop_reason"] == "end_turn" and t["duration"] >= 0 for t in sess["turns"])
    assert data["findings"] == []


def test_record_redacts_and_passes_the_exit_code(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    script = ("import sys,json\n"
              "for line in sys.stdin:\n"
              "    m=json.loads(line)\n"
              "    body=''.join(chr(ord(c)+1) for c in 'RDBQDS\\x1fEHKD')\n"  # 'SECRET FILE', not in argv
              "    res={'content':body} if m['id']==1 else {'terminalId':'t1'}\n"
              "    print(json.dumps({'jsonrpc':'2.0','id':m['id'],'result':res}),flush=True)\n"
              "sys.exit(7)\n")
    reqs = [{"jsonrpc": "2.0", "id": 1, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/p"}},
            {"jsonrpc": "2.0", "id": 2, "method": "terminal/create",
             "params": {"sessionId": "s", "command": "ls", "env": [{"name": "TOKEN", "value": "hunter2hunter2"}]}}]
    proc = subprocess.run([*ACPLINK, "record", "--redact", "--out", str(trace), "--", sys.executable, "-c", script],
                          input="".join(json.dumps(r) + "\n" for r in reqs), capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 7
    assert proc.stdout.count("SECRET FILE") == 1  # forwarded untouched...
    text = trace.read_text()
    assert "SECRET FILE" not in text and "hunter2" not in text  # ...but not recorded
    msgs = [r for r in read_trace(trace) if r["type"] == "message"]
    assert msgs[0]["msg"]["params"]["path"] == "/p"
    assert msgs[1]["msg"]["params"]["env"][0] == {"name": "TOKEN", "value": "[redacted: 14 bytes]"}
    read_reply = next(m for m in msgs if m["dir"] == "a2c" and m["id"] == 1)
    assert read_reply["msg"]["result"]["content"] == "[redacted: 11 bytes]"


def test_record_closes_the_agent_when_stdin_closes(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    # an agent that ignores EOF on stdin: the proxy's shutdown ladder still ends it
    script = "import time,sys\nsys.stdin.read()\ntime.sleep(60)\n"
    proc = subprocess.run([*ACPLINK, "record", "--out", str(trace), "--", sys.executable, "-c", script],
                          input="", capture_output=True, timeout=30)
    assert proc.returncode in (128 + 15, 128 + 9, -15)
    assert read_trace(trace)[-1]["type"] == "exit"


def test_record_reports_a_missing_command_in_one_line(tmp_path: Path) -> None:
    proc = subprocess.run([*ACPLINK, "record", "--out", str(tmp_path / "t"), "--", "no-such-agent-xyz"],
                          input="", capture_output=True, text=True, timeout=30)
    assert proc.returncode == 127
    assert proc.stderr.count("\n") == 1 and "no-such-agent-xyz" in proc.stderr


@pytest.mark.skipif(not hasattr(os, "setsid"), reason="POSIX only")
def test_record_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([*ACPLINK, "record", "--out", str(tmp_path / "t")], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 2 and "no agent command" in proc.stderr


def test_a_recorder_that_falls_behind_slows_the_traffic_instead_of_buffering_it(tmp_path: Path) -> None:
    """The trace thread is stuck (a listener blocks): the proxy forwards at most ``max_queued``
    bytes (plus a few read chunks and pipe buffers) and then waits, whatever the agent sends;
    once the trace moves again every byte is forwarded and recorded."""

    from acplink.tools.record import RecordingProxy

    line = b'{"jsonrpc":"2.0","method":"x/flood","params":{"pad":"' + b"p" * 200 + b'"}}\n'
    count = 40_000  # ~9 MB, far past the bound below
    agent = [sys.executable, "-c",
             f"import sys; sys.stdout.buffer.write({line!r} * {count}); sys.stdout.flush(); sys.stdin.read()"]
    released, records = threading.Event(), []

    def listener(rec: object) -> None:
        if isinstance(rec, dict) and rec.get("type") == "message":  # (the header passes)
            released.wait(60)
        records.append(rec)

    c2a_r, c2a_w = os.pipe()
    a2c_r, a2c_w = os.pipe()
    cap = 256 * 1024
    proxy = RecordingProxy(agent, None, validate=False, listeners=[listener], stdin_fd=c2a_r, stdout_fd=a2c_w,
                           max_queued=cap)
    result: list[int] = []
    runner = threading.Thread(target=lambda: result.append(proxy.run()))
    runner.start()
    try:
        got = 0
        os.set_blocking(a2c_r, False)
        idle_since = None
        while True:  # read until nothing more comes for a second
            try:
                chunk = os.read(a2c_r, 1 << 16)
            except BlockingIOError:
                chunk = None
            if chunk:
                got += len(chunk)
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if got and time.monotonic() - idle_since > 1.0:
                break
            assert time.monotonic() - idle_since < 30, "the agent sent nothing"
            time.sleep(0.01)
        assert got < cap + 4 * (1 << 16) + (1 << 17), got  # bounded: the proxy waits for its trace
        released.set()
        os.set_blocking(a2c_r, True)
        while got < len(line) * count:
            chunk = os.read(a2c_r, 1 << 16)
            assert chunk, got
            got += len(chunk)
        assert got == len(line) * count  # nothing lost once the trace moves
    finally:
        released.set()
        os.close(c2a_w)  # the client closes: the agent ends
        runner.join(30)
        for fd in (c2a_r, a2c_r, a2c_w):
            os.close(fd)
    assert result == [0]
    flood = [r for r in records if isinstance(r, dict) and r.get("type") == "message"]
    assert len(flood) == count
