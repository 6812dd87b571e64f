"""Backpressure over real pipes: a peer that sends requests and never reads the answers.

Each side runs in its own process so that its RSS is its own; the figures come from
/proc/PID/status (VmRSS, VmHWM) and getrusage. Bounds are generous (the unfixed code grows
by hundreds of MB here); nothing is timed (the stall timeout is set small so the tests end).
"""

from __future__ import annotations

import asyncio
import sys

import orjson
from rbhelpers import PEERS, guard

MiB = 1024 * 1024
#: RSS growth allowed to the process under test: the write buffer's high-water mark (4 MiB),
#: the requests held back, max_running_requests answers in the making, allocator slack
BOUND_KB = 160 * 1024


def _vm(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


async def test_client_answering_250_unread_1mib_reads_stays_bounded_and_disconnects(tmp_path) -> None:
    """250 fs/read_text_file of a 1 MiB file from an agent that then stops reading: the
    client holds the requests back once its buffer is full (its writer waits), keeps its RSS
    bounded, and after stalled_peer_timeout disconnects with a clear error."""
    big = tmp_path / "big.txt"
    big.write_text(("0123456789abcdef" * 4 + "\n") * (MiB // 65 + 1))
    cmd = [sys.executable, str(PEERS / "bp_client.py"), "1.5", str(tmp_path), "--",
           sys.executable, str(PEERS / "bp_hostile_agent.py"), "250", str(big)]
    proc = await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await guard(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode(errors="replace")
    report = orjson.loads(out)
    print("client report:", report)
    assert report["closed"], "the client never gave up on a peer that reads nothing"
    growth = report["peak_rss_kb"] - report["rss_before_kb"]
    assert growth < BOUND_KB, f"client RSS grew by {growth} KiB"
    assert report["max_write_buffer"] >= 4 * MiB  # the high-water mark was reached...
    assert report["max_held"] > 0  # ...and later requests were held back, not run
    assert report["call_started"]
    assert "stopped reading" in report["call_error"] and "ConnectionClosed" in report["call_error"]
    assert "the peer stopped reading" in err.decode()  # logged once, one line


async def test_agent_flooded_with_200_unread_1mb_requests_stays_bounded_and_blocks_the_sender() -> None:
    """200 1 MB requests (each answered 1 MB) from a client that never reads: the agent stops
    reading once its buffer is full, so the sender blocks; its RSS stays bounded; after
    stalled_peer_timeout it disconnects and exits."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(PEERS / "bp_echo_agent.py"), "1.5", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                   "params": {"protocolVersion": 1}}) + b"\n")
    await proc.stdin.drain()
    assert b'"protocolVersion"' in await guard(proc.stdout.readline())  # (the last line we read)
    before = _vm(proc.pid, "VmRSS")
    payload = "x" * 1_000_000
    sent = 0
    max_rss = 0

    async def flood() -> None:
        nonlocal sent
        for i in range(200):
            proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", "id": i + 1, "method": "_bp/echo",
                                           "params": {"data": payload}}) + b"\n")
            await proc.stdin.drain()
            sent += 1

    async def sample() -> None:
        nonlocal max_rss
        while True:
            try:
                max_rss = max(max_rss, _vm(proc.pid, "VmRSS"))
            except (OSError, AssertionError):  # (exited)
                return
            await asyncio.sleep(0.02)

    sender = asyncio.ensure_future(flood())
    sampler = asyncio.ensure_future(sample())
    async def exited() -> None:  # (proc.wait() also waits for the unread stdout to be closed)
        while proc.returncode is None:
            await asyncio.sleep(0.05)

    try:
        await guard(exited(), 60)
        rc = proc.returncode
        await guard(proc.stdout.read())
        await guard(proc.wait())
    finally:
        print(f"agent RSS before {before} KiB, max sampled {max_rss} KiB; sent {sent} of 200")
        sender.cancel()
        sampler.cancel()
        await asyncio.gather(sender, sampler, return_exceptions=True)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    err = (await guard(proc.stderr.read())).decode(errors="replace")
    proc.stdin.close()
    print(f"agent stderr: {err}")
    assert rc == 0, err
    assert sent < 200, "the agent read every request although nobody read its answers"
    assert "the peer stopped reading" in err
    peak = int(err.split("maxrss_kb=")[1].split()[0])
    assert peak - before < BOUND_KB, f"agent RSS grew from {before} to {peak} KiB"
