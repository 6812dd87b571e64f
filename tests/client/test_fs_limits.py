"""What one connection's file operations may cost: operations at once, bytes held, bytes read.

The memory case runs the real client in a subprocess against a raw agent that asks for 64
concurrent reads of a 32 MiB file, and checks the client's peak resident set size.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import tracemalloc
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from fsutil import read, resolver, wr

from acplink.client.fs import DEFAULT_MAX_READ_BYTES, FileAccessDenied, FileBudget, FileSystemHandler

__all__ = ["resolver"]  # the fixture

MiB = 1024 * 1024
PEERS = Path(__file__).parent / "fs_peers"
linux_only = pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux /proc")


def bytes_read() -> int:
    """Bytes this process has read with read(2) and friends so far (all threads)."""
    for entry in Path("/proc/self/io").read_text().splitlines():
        if entry.startswith("rchar:"):
            return int(entry.split()[1])
    raise LookupError("rchar")


@linux_only
@pytest.mark.skipif(sys.platform != "linux", reason="needs /proc/self/clear_refs")
def test_64_concurrent_reads_of_a_32_mib_file_keep_the_client_small(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as f:
        line = b"x" * 1023 + b"\n"
        for _ in range(32 * 1024):
            f.write(line)
    stats = tmp_path / "stats.json"
    proc = subprocess.run([sys.executable, str(PEERS / "rss_client.py"), str(tmp_path), str(big), "64", str(stats)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures = json.loads(proc.stdout)
    served = json.loads(stats.read_text())
    assert served == {"ok": 64, "errors": [], "bytes": 64 * 32 * MiB}  # every read answered in full
    growth = (figures["peak_kib"] - figures["baseline_kib"]) / 1024
    print(f"RSS {figures['baseline_kib'] // 1024} MiB -> peak {figures['peak_kib'] // 1024} MiB "
          f"(+{growth:.0f} MiB) in {figures['seconds']} s")
    assert growth < 256, figures  # the documented bound (docs/robustness.md); 2 GiB were served


async def test_budget_caps_operations_and_bytes(tmp_path: Path, resolver: str) -> None:
    for i in range(8):
        (tmp_path / f"f{i}.txt").write_text("x" * 60)
    budget = FileBudget(max_operations=3, max_bytes=100)
    fs = FileSystemHandler([tmp_path], budget=budget)
    results = await asyncio.gather(*(read(fs, tmp_path / f"f{i}.txt") for i in range(8)))
    assert results == ["x" * 60] * 8
    assert budget.peak_held == 60  # two 60-byte files never at once with 100 bytes allowed
    assert (budget.running, budget.held) == (0, 0)
    for i in range(8):
        (tmp_path / f"f{i}.txt").write_text("y" * 50)
    await asyncio.gather(*(read(fs, tmp_path / f"f{i}.txt") for i in range(8)))
    assert budget.peak_held == 100  # two of 50 fit


async def test_a_file_bigger_than_the_budget_runs_alone(tmp_path: Path, resolver: str) -> None:
    (tmp_path / "big.txt").write_text("b" * 150)
    (tmp_path / "small.txt").write_text("s" * 10)
    budget = FileBudget(max_bytes=100)
    fs = FileSystemHandler([tmp_path], budget=budget)
    got = await asyncio.gather(read(fs, tmp_path / "small.txt"), read(fs, tmp_path / "big.txt"),
                               read(fs, tmp_path / "small.txt"))
    assert got == ["s" * 10, "b" * 150, "s" * 10]
    assert budget.peak_held == 150 and budget.held == 0


async def test_operations_wait_for_a_slot(tmp_path: Path) -> None:
    budget = FileBudget(max_operations=2)
    active = peak = 0

    async def one() -> None:
        nonlocal active, peak
        async with budget.op() as op:
            active += 1
            peak = max(peak, active)
            await op.run(lambda: None)
            await asyncio.sleep(0.01)
            active -= 1

    await asyncio.gather(*(one() for _ in range(6)))
    assert peak == 2 and budget.running == 0


async def test_reads_wait_for_the_outgoing_buffer_to_drain(tmp_path: Path, resolver: str) -> None:
    (tmp_path / "a.txt").write_text("a")
    drained = asyncio.Event()
    calls = 0

    async def drain() -> None:
        nonlocal calls
        calls += 1
        await drained.wait()

    fs = FileSystemHandler([tmp_path], budget=FileBudget(drain=drain))
    pending = asyncio.ensure_future(read(fs, tmp_path / "a.txt"))
    for _ in range(20):
        await asyncio.sleep(0.01)
    assert calls == 1 and not pending.done()  # held until the answers before it have left
    drained.set()
    assert await asyncio.wait_for(pending, 10) == "a"
    await fs.write_text_file(wr(tmp_path / "b.txt", "b"))  # a write's answer is small: no wait
    assert calls == 1


async def test_cancelled_waiters_give_their_slot_and_bytes_back(tmp_path: Path) -> None:
    budget = FileBudget(max_operations=1, max_bytes=10)
    gate = asyncio.Event()

    async def holder() -> None:
        async with budget.op() as op:
            await op.reserve(10)
            await gate.wait()

    first = asyncio.ensure_future(holder())
    await asyncio.sleep(0)
    waiter = asyncio.ensure_future(holder())
    await asyncio.sleep(0.01)
    waiter.cancel()
    gate.set()
    await asyncio.wait_for(first, 10)
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert (budget.running, budget.held) == (0, 0)
    await asyncio.wait_for(holder(), 10)  # the budget still works


@linux_only
async def test_line_and_limit_read_only_what_they_need(tmp_path: Path, resolver: str) -> None:
    huge = tmp_path / "huge.log"
    with huge.open("wb") as f:
        f.write(b"one\ntwo\nthree\n")
        f.truncate(8 * 1024 * MiB)  # 8 GiB (sparse): zeros without a newline after line 3
    fs = FileSystemHandler([tmp_path])
    before = bytes_read()
    assert await read(fs, huge, line=2, limit=2) == "two\nthree\n"
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, huge)  # refused from its size: nothing is read
    assert info.value.data == {"reason": "too_large"}
    assert bytes_read() - before < MiB


async def test_skipped_lines_are_not_held_whole(tmp_path: Path, resolver: str) -> None:
    path = tmp_path / "long-lines.txt"
    with path.open("wb") as f:
        f.write(b"a\n")
        f.write(b"z" * (20 * MiB) + b"\n")  # line 2: 20 MiB
        f.write(b"b\nc\n")
    fs = FileSystemHandler([tmp_path], max_read_bytes=32 * MiB)
    tracemalloc.start()
    try:
        assert await read(fs, path, line=3, limit=1) == "b\n"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MiB  # skipped in chunks; never the whole 20 MiB line


async def test_limit_stops_at_the_byte_limit_while_reading(tmp_path: Path, resolver: str) -> None:
    path = tmp_path / "lines.txt"
    path.write_bytes(b"".join(b"%05d\n" % i for i in range(10_000)))
    fs = FileSystemHandler([tmp_path], max_read_bytes=18)
    assert await read(fs, path, line=3, limit=3) == "00002\n00003\n00004\n"  # exactly 18 bytes: fine
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, path, line=3, limit=4)  # 24 bytes
    assert info.value.data == {"reason": "too_large"}
    assert await read(fs, path, line=9_999) == "09998\n09999\n"  # no limit: to the end
    with pytest.raises(FileAccessDenied):
        await read(fs, path, line=9_990)  # to the end: 60 bytes


@pytest.mark.parametrize("size", [17, 18, 19])
async def test_whole_file_limit_is_exact(tmp_path: Path, resolver: str, size: int) -> None:
    (tmp_path / "f.txt").write_text("x" * size)
    fs = FileSystemHandler([tmp_path], max_read_bytes=18)
    if size <= 18:
        assert await read(fs, tmp_path / "f.txt") == "x" * size
    else:
        with pytest.raises(FileAccessDenied) as info:
            await read(fs, tmp_path / "f.txt")
        assert info.value.data == {"reason": "too_large"} and "limit of 18 bytes" in info.value.message


async def test_a_file_growing_past_the_limit_while_read_is_refused(tmp_path: Path, resolver: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "grows.txt"
    path.write_text("x" * 10)
    fs = FileSystemHandler([tmp_path], max_read_bytes=18)
    opened = fs._open

    def open_then_grow(*args: object) -> int:
        size = opened(*args)  # type: ignore[arg-type]
        path.write_text("x" * 19)  # grows after its size was checked
        return size

    monkeypatch.setattr(fs, "_open", open_then_grow)
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, path)
    assert info.value.data == {"reason": "too_large"}


async def test_cancel_while_waiting_for_bytes_or_right_after_getting_them() -> None:
    budget = FileBudget(max_operations=8, max_bytes=10)
    gate = asyncio.Event()

    async def user(n: int) -> None:
        async with budget.op() as op:
            await op.reserve(n)
            await gate.wait()

    first = asyncio.ensure_future(user(10))
    await asyncio.sleep(0.01)
    queued = [asyncio.ensure_future(user(6)) for _ in range(3)]
    await asyncio.sleep(0.01)
    assert budget.held == 10
    queued[0].cancel()  # cancelled while waiting: leaves the queue, the others move up
    await asyncio.sleep(0.01)
    gate.set()
    first.cancel()
    await asyncio.sleep(0)  # `first` ends: its bytes go to queued[1] at once...
    assert budget.held == 6 and not queued[1].done()
    queued[1].cancel()  # ...which is cancelled before it runs: it must hand them back
    await asyncio.gather(first, *queued, return_exceptions=True)
    assert queued[2].done() and not queued[2].cancelled()
    assert (budget.running, budget.held) == (0, 0)
    assert budget._byte_waiters == deque() and budget._slot_waiters == deque()


async def test_slot_granted_then_cancelled_is_passed_on() -> None:
    budget = FileBudget(max_operations=1)
    gate = asyncio.Event()
    ran: list[int] = []

    async def user(i: int) -> None:
        async with budget.op():
            ran.append(i)
            await gate.wait()

    tasks = [asyncio.ensure_future(user(i)) for i in range(3)]
    await asyncio.sleep(0.01)
    gate.set()
    tasks[0].cancel()
    tasks[1].cancel()  # granted the slot by task 0's exit, cancelled before it could use it
    await asyncio.gather(*tasks, return_exceptions=True)
    assert ran == [0, 2] and budget.running == 0


def test_budget_limits_must_be_positive() -> None:
    for kw in ({"max_operations": 0}, {"max_bytes": 0}):
        with pytest.raises(ValueError):
            FileBudget(**kw)
    assert (FileBudget(max_operations=1, max_bytes=1).max_operations, FileBudget(max_bytes=1).max_bytes) == (1, 1)


async def test_a_cancelled_read_releases_everything_when_its_thread_ends(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "f.txt").write_text("x" * 100)
    budget = FileBudget()
    fs = FileSystemHandler([tmp_path], budget=budget)
    started, release = threading.Event(), threading.Event()
    real_read = fs._read

    def slow_read(*args: Any) -> str:
        started.set()
        release.wait(10)
        return real_read(*args)

    monkeypatch.setattr(fs, "_read", slow_read)
    task = asyncio.ensure_future(read(fs, tmp_path / "f.txt"))
    while not started.is_set():
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (budget.running, budget.held) == (1, 100)  # the thread still holds its slot and bytes
    release.set()
    for _ in range(500):
        if budget.running == 0:
            break
        await asyncio.sleep(0.01)
    assert (budget.running, budget.held) == (0, 0)


async def test_writes_hold_their_content_size_in_the_budget(tmp_path: Path, resolver: str) -> None:
    budget = FileBudget(max_bytes=100)
    fs = FileSystemHandler([tmp_path], budget=budget)
    await asyncio.gather(*(fs.write_text_file(wr(tmp_path / f"{i}.txt", "w" * 60)) for i in range(4)))
    assert budget.peak_held == 60 and budget.held == 0  # one 60-character write at a time
    assert all((tmp_path / f"{i}.txt").read_text() == "w" * 60 for i in range(4))


async def test_a_line_crossing_the_byte_limit_is_not_read_past_it(tmp_path: Path, resolver: str) -> None:
    path = tmp_path / "crossing.txt"
    with path.open("wb") as f:
        f.write(b"a" * (900 * 1024) + b"\n")
        f.write(b"b" * (10 * MiB) + b"\n")
    fs = FileSystemHandler([tmp_path], max_read_bytes=MiB)
    tracemalloc.start()
    try:
        with pytest.raises(FileAccessDenied) as info:
            await read(fs, path, line=1, limit=2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.data == {"reason": "too_large"}
    assert peak < 2.5 * MiB  # the second line is read only up to the limit (+1 byte)


def test_default_limits(tmp_path: Path) -> None:
    budget = FileBudget()
    assert (budget.max_operations, budget.max_bytes, budget.drain) == (4, 32 * MiB, None)
    fs = FileSystemHandler([tmp_path])
    assert fs.max_read_bytes == DEFAULT_MAX_READ_BYTES == 64 * MiB
    assert (fs.budget.max_operations, fs.budget.max_bytes) == (4, 32 * MiB)


async def test_a_cancelled_head_of_the_queue_lets_the_next_waiter_in_at_once() -> None:
    budget = FileBudget(max_bytes=10)
    gate = asyncio.Event()
    got: list[str] = []

    async def user(name: str, n: int) -> None:
        async with budget.op() as op:
            await op.reserve(n)
            got.append(name)
            await gate.wait()

    holder = asyncio.ensure_future(user("holder", 5))
    await asyncio.sleep(0.01)
    big = asyncio.ensure_future(user("big", 8))  # does not fit: waits
    small = asyncio.ensure_future(user("small", 2))  # would fit, but waits behind `big`
    await asyncio.sleep(0.01)
    assert got == ["holder"]
    big.cancel()
    await asyncio.sleep(0.01)
    assert got == ["holder", "small"] and budget.held == 7  # in while the holder still holds
    gate.set()
    await asyncio.gather(holder, big, small, return_exceptions=True)
    assert (budget.running, budget.held) == (0, 0)
