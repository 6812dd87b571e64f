"""The speed work's behaviour, checked for what it does (never for how fast): the collector
settings, pipe buffers, the warm-up after the handshake, and memory held by calls in flight."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Iterator

import orjson
import pytest
from connhelpers import guard

import acplink
from acplink.connection import AgentSideConnection, ClientSideConnection, Router
from acplink.runtime import YOUNG_THRESHOLD
from acplink.transports import SubprocessTransport, memory_pair
from acplink.transports._pipes import PIPE_SIZE, enlarge_pipe

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are a Linux feature")


def _skip_unless_the_kernel_enlarges_pipes() -> None:
    """Skip when the kernel refuses to enlarge a fresh pipe of this very process: past
    /proc/sys/fs/pipe-user-pages-soft (the user's pipes, on a loaded shared machine) it
    answers F_SETPIPE_SZ with EPERM, which acplink rightly ignores."""
    from fcntl import F_SETPIPE_SZ, fcntl

    r, w = os.pipe()
    try:
        fcntl(w, F_SETPIPE_SZ, PIPE_SIZE)
    except OSError as exc:
        pytest.skip(f"the kernel refuses to enlarge a fresh pipe to {PIPE_SIZE} bytes ({exc.strerror}): "
                    "the user's pipe pages are over /proc/sys/fs/pipe-user-pages-soft")
    finally:
        os.close(r)
        os.close(w)


# (The collector's defaults and the meaning of its second and third thresholds differ between
# CPython versions: young threshold 700 up to 3.12, 2,000 from 3.13; 3.14's incremental
# collector reports a third threshold of 0. These tests only set and compare the first, and
# compare the others with what they were.)


@pytest.fixture
def gc_state() -> Iterator[None]:
    young = gc.get_threshold()[0]
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(young)


def test_tune_gc_freezes_and_raises_the_young_threshold(gc_state: None) -> None:
    gc.set_threshold(700)
    others = gc.get_threshold()[1:]
    before = gc.get_freeze_count()
    keep = [[i] for i in range(1000)]  # tracked objects alive now
    acplink.tune_gc()
    assert gc.get_freeze_count() >= before + len(keep)
    assert gc.get_threshold() == (YOUNG_THRESHOLD, *others)


def test_tune_gc_never_lowers_a_threshold_nor_turns_collection_back_on(gc_state: None) -> None:
    gc.set_threshold(100_000)
    before = gc.get_threshold()
    acplink.tune_gc(freeze=False)
    assert gc.get_threshold() == before
    gc.set_threshold(0)  # collection off: left off
    acplink.tune_gc(freeze=False)
    assert gc.get_threshold()[0] == 0
    with pytest.raises(ValueError):
        acplink.tune_gc(young_threshold=0)


def test_run_agent_tunes_the_collector_unless_told_not_to() -> None:
    # the child reports this interpreter's own defaults next to what run_agent left (3.12
    # starts with objects in the permanent generation already: frozen = more of them)
    code = textwrap.dedent("""
        import gc, sys
        default, permanent = gc.get_threshold(), gc.get_freeze_count()
        import acplink
        app = acplink.AgentApp("t", "1")
        acplink.run_agent(app, tune_gc=sys.argv[1] == "on")
        print(*default, *gc.get_threshold(), gc.get_freeze_count() > permanent, file=sys.stderr)
    """)
    for mode in ("on", "off"):
        out = subprocess.run([sys.executable, "-c", code, mode], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=60)
        *numbers, frozen = out.stderr.strip().splitlines()[-1].split()
        default, after = tuple(map(int, numbers[:3])), tuple(map(int, numbers[3:]))
        if mode == "on":
            assert after == (max(default[0], YOUNG_THRESHOLD), *default[1:]) and frozen == "True", out.stderr
        else:
            assert after == default and frozen == "False", out.stderr


@linux_only
def test_enlarge_pipe_asks_for_a_bigger_buffer_and_ignores_what_is_not_a_pipe(tmp_path: os.PathLike[str]) -> None:
    from fcntl import F_GETPIPE_SZ, fcntl

    _skip_unless_the_kernel_enlarges_pipes()
    r, w = os.pipe()
    try:
        enlarge_pipe(w)
        if fcntl(r, F_GETPIPE_SZ) < PIPE_SIZE:
            _skip_unless_the_kernel_enlarges_pipes()  # (refused meanwhile: the machine's load)
        assert fcntl(r, F_GETPIPE_SZ) >= PIPE_SIZE  # one pipe, seen from both ends
    finally:
        os.close(r)
        os.close(w)
    with open(os.path.join(tmp_path, "f"), "wb") as f:
        enlarge_pipe(f.fileno())  # a regular file: nothing happens, nothing raised
    enlarge_pipe(987654)  # a closed descriptor: nothing raised


@linux_only
@pytest.mark.parametrize("pipe_size", [PIPE_SIZE, None])
async def test_subprocess_pipes_are_enlarged_unless_told_not_to(pipe_size: int | None) -> None:
    # the child reports the size of the pipes it was given, as its stdin and stdout
    if pipe_size:
        _skip_unless_the_kernel_enlarges_pipes()
    code = ("import fcntl, sys; print(fcntl.fcntl(0, fcntl.F_GETPIPE_SZ), fcntl.fcntl(1, fcntl.F_GETPIPE_SZ), "
            "file=sys.stderr)")
    transport = SubprocessTransport([sys.executable, "-c", code], stderr="capture", pipe_size=pipe_size)
    conn = ClientSideConnection(transport, Router())
    await conn.start()
    await guard(conn.wait_closed())
    await conn.aclose()
    sizes = [int(x) for x in "".join(transport.stderr_tail).split()]
    assert len(sizes) == 2, sizes
    if pipe_size:
        if not all(size >= PIPE_SIZE for size in sizes):
            _skip_unless_the_kernel_enlarges_pipes()  # (refused meanwhile: the machine's load)
        assert all(size >= PIPE_SIZE for size in sizes), sizes
    else:
        assert all(size < PIPE_SIZE for size in sizes), sizes  # the system's default (64 KiB)


def test_models_are_prepared_after_the_handshake_not_before() -> None:
    # a fresh process: nothing built yet; the handshake (agent and client in memory) starts
    # the warm-up, after which the models of the coming session are complete on both sides
    code = textwrap.dedent("""
        import asyncio, sys
        from acplink import AgentApp, ClientSideConnection, Router, memory_pair
        from acplink import schema as s

        async def main():
            app = AgentApp("t", "1")

            @app.prompt
            async def prompt(ctx):
                return s.PromptResponse(stop_reason="end_turn")

            router = Router()

            async def on_update(params):
                pass

            router.add_notification("session/update", on_update)
            a, b = memory_pair()
            agent = app.connection(a)
            client = ClientSideConnection(b, router)
            await agent.start(); await client.start()
            names = ["PromptRequest", "PromptResponse", "SessionNotification", "NewSessionResponse"]
            before = [getattr(s, n).__pydantic_complete__ for n in names]
            await client.initialize(protocol_version=1)
            for _ in range(200):
                await asyncio.sleep(0)
            after = [getattr(s, n).__pydantic_complete__ for n in names]
            await client.aclose(); await agent.aclose()
            print(before, after)

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[False, False, False, False] [True, True, True, True]", out.stderr


async def test_closing_during_the_warm_up_stops_it() -> None:
    a, b = memory_pair()
    agent = AgentSideConnection(a, Router())
    client = ClientSideConnection(b, Router())
    await agent.start()
    await client.start()
    client.warm_up([("session/prompt", "request"), ("session/new", "request")])
    task = client._warm_task
    assert task is not None
    await client.aclose()
    await agent.aclose()
    assert task.cancelled()  # stopped by the close, not run to its end


async def test_calls_in_flight_hold_no_spent_bytes() -> None:
    # 2,000 calls waiting for answers that never come: each holds its task, frames and
    # future, not the 4 KiB buffer behind each small orjson result of its params
    a, b = memory_pair()
    silent = ClientSideConnection(b, Router())
    agent = AgentSideConnection(a, Router(), check_capabilities=False)
    await silent.start()
    await agent.start()
    silent.peer.transport.pause_reading()  # nothing is read, so nothing is answered
    try:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        calls = [asyncio.ensure_future(agent.request_json("fs/read_text_file",
                                                          orjson.dumps({"sessionId": "s", "path": f"/x{i}"})))
                 for i in range(2000)]
        for _ in range(5):
            await asyncio.sleep(0)
        per_call = (tracemalloc.get_traced_memory()[0] - base) / len(calls)
        tracemalloc.stop()
        assert len(agent.peer.engine.pending) == 2000
        assert per_call < 3000, per_call
        for c in calls:
            c.cancel()
        await asyncio.gather(*calls, return_exceptions=True)
    finally:
        await agent.aclose()
        await silent.aclose()
