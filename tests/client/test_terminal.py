"""TerminalHandler with real processes: output, exit status, truncation, kill of the tree."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from termhelpers import processes

from acplink.client.terminal import TerminalHandler, TerminalLimitReached, _Terminal
from acplink.errors import InvalidParams, ResourceNotFound
from acplink.schema import (
    CreateTerminalRequest,
    EnvVariable,
    KillTerminalRequest,
    ReleaseTerminalRequest,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    dump,
)

PY = sys.executable
SHELL_META = {"acplink": {"shell": True}}


@pytest.fixture
async def term() -> AsyncIterator[TerminalHandler]:
    handler = TerminalHandler()
    yield handler
    await handler.aclose()


async def create(h: TerminalHandler, command: str, *args: str, **kw: Any) -> str:
    req = CreateTerminalRequest(session_id="s", command=command, args=list(args), **kw)
    return (await h.create(req)).terminal_id


async def output(h: TerminalHandler, tid: str) -> TerminalOutputResponse:
    return await h.output(TerminalOutputRequest(session_id="s", terminal_id=tid))


async def wait(h: TerminalHandler, tid: str) -> WaitForTerminalExitResponse:
    return await h.wait_for_exit(WaitForTerminalExitRequest(session_id="s", terminal_id=tid))


async def kill(h: TerminalHandler, tid: str) -> None:
    await h.kill(KillTerminalRequest(session_id="s", terminal_id=tid))


async def release(h: TerminalHandler, tid: str) -> None:
    await h.release(ReleaseTerminalRequest(session_id="s", terminal_id=tid))


async def until(pred: Callable[[], bool], what: str) -> None:
    """Poll a condition (generous deadline: this is a liveness check, not a timing test)."""
    for _ in range(2000):
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


def group_members(pgid: int) -> list[tuple[int, str]]:
    """Live (non-zombie) processes of a process group, as (pid, command name)."""
    return [(pid, Path(cmdline.split(b"\0")[0].decode()).name) for pid, state, _, group, cmdline in processes()
            if group == pgid and state not in ("Z", "X")]


def alive(pid: int) -> bool:
    return any(p == pid for p, _ in group_members(pid))


async def test_echo(term: TerminalHandler) -> None:
    tid = await create(term, "echo", "hello", "world")
    status = await wait(term, tid)
    assert (status.exit_code, status.signal) == (0, None)
    out = await output(term, tid)
    assert out.output == "hello world\n" and out.truncated is False
    assert out.exit_status is not None and out.exit_status.exit_code == 0
    assert dump(status) == {"exitCode": 0, "signal": None}
    assert dump(out) == {"output": "hello world\n", "truncated": False, "exitStatus": {"exitCode": 0, "signal": None}}


async def test_exit_code_and_stderr_merged(term: TerminalHandler) -> None:
    tid = await create(term, PY, "-c", "import sys; print('out', flush=True); print('err', file=sys.stderr); sys.exit(3)")
    assert (await wait(term, tid)).exit_code == 3
    out = await output(term, tid)
    assert out.output.split() == ["out", "err"]
    assert out.exit_status is not None and (out.exit_status.exit_code, out.exit_status.signal) == (3, None)


async def test_running_terminal_has_no_exit_status(term: TerminalHandler) -> None:
    tid = await create(term, "sleep", "100")
    out = await output(term, tid)
    assert out.exit_status is None and "exitStatus" not in dump(out)
    await kill(term, tid)
    status = await wait(term, tid)
    assert (status.exit_code, status.signal) == (None, "SIGTERM")
    out = await output(term, tid)  # still readable after kill
    assert out.exit_status is not None and out.exit_status.signal == "SIGTERM"


async def test_signal_from_inside(term: TerminalHandler) -> None:
    tid = await create(term, PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    status = await wait(term, tid)
    assert (status.exit_code, status.signal) == (None, "SIGKILL")


async def test_sigterm_ignored_then_sigkill() -> None:
    async with TerminalHandler(kill_grace=0.2) as h:
        tid = await create(h, PY, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                        "print('ready', flush=True)\ntime.sleep(100)")
        await until(lambda: "ready" in h.snapshot(tid).output, "the SIGTERM handler is installed")
        await kill(h, tid)
        assert (await wait(h, tid)).signal == "SIGKILL"


async def test_output_limit_truncates_at_character_boundary(term: TerminalHandler) -> None:
    script = "import sys; sys.stdout.write('a' + 'é' * 10)"
    tid = await create(term, PY, "-c", script, output_byte_limit=9)
    await wait(term, tid)
    out = await output(term, tid)
    assert out.output == "éééé" and out.truncated is True
    assert len(out.output.encode()) <= 9


async def test_output_limit_from_handler_default() -> None:
    async with TerminalHandler(default_output_byte_limit=5) as h:
        tid = await create(h, PY, "-c", "print('0123456789', end='')")
        await wait(h, tid)
        out = await output(h, tid)
        assert (out.output, out.truncated) == ("56789", True)
        tid = await create(h, "echo", "-n", "abc")
        await wait(h, tid)
        assert (await output(h, tid)).truncated is False


@pytest.mark.parametrize("limit", [0, 1, 2, 3, 4, 5, 7, 11])
def test_truncation_keeps_valid_utf8_with_any_chunking(limit: int) -> None:
    data = "x€é😀yz€😀é".encode()
    for chunk in (1, 2, 3, 5, len(data)):
        t = _Terminal("t", limit)
        for i in range(0, len(data), chunk):
            t.append(data[i:i + chunk])
        t.eof.set()
        text = t.text()
        assert "\ufffd" not in text
        assert len(text.encode()) <= limit
        assert data.endswith(text.encode())
        assert len(text.encode()) >= limit - 3  # at most one partial character dropped
        assert t.truncated is (len(data) > limit)


async def test_incomplete_character_is_held_back_while_running(term: TerminalHandler) -> None:
    tid = await create(term, PY, "-c", "import sys, time\nsys.stdout.buffer.write(b'ab\\xc3'); sys.stdout.flush()\n"
                                       "time.sleep(100)")
    await until(lambda: bool(term.snapshot(tid).output), "first output")
    seen = (await output(term, tid)).output
    assert seen == "ab"
    await kill(term, tid)
    await wait(term, tid)
    assert (await output(term, tid)).output == "ab\ufffd"  # the stream ended: shown as replaced


async def test_kill_kills_the_whole_process_group() -> None:
    async with TerminalHandler(allow_shell=True) as h:
        tid = await create(h, "sleep 100 & sleep 100", meta=SHELL_META)
        pgid = h.process_id(tid)
        await until(lambda: sum(1 for _, c in group_members(pgid) if c == "sleep") == 2, "both sleeps started")
        await kill(h, tid)
        await until(lambda: not group_members(pgid), "every process of the group is gone")
        assert (await wait(h, tid)).signal in ("SIGTERM", "SIGKILL")


async def test_background_child_does_not_block_wait_and_dies_on_release() -> None:
    async with TerminalHandler(allow_shell=True, drain_timeout=0.2) as h:
        tid = await create(h, "sleep 100 & echo started", meta=SHELL_META)
        pgid = h.process_id(tid)
        status = await wait(h, tid)  # sh exits although the background sleep keeps the pipe open
        assert status.exit_code == 0
        assert (await output(h, tid)).output == "started\n"
        assert group_members(pgid)
        await release(h, tid)
        await until(lambda: not group_members(pgid), "the background child is gone")


async def test_release(term: TerminalHandler) -> None:
    tid = await create(term, PY, "-c", "print('bye', flush=True)\nimport time; time.sleep(100)")
    pid = term.process_id(tid)
    await until(lambda: alive(pid), "started")
    await release(term, tid)
    assert not alive(pid)
    assert term.terminal_ids == []
    with pytest.raises(ResourceNotFound):
        await output(term, tid)
    with pytest.raises(ResourceNotFound):
        await release(term, tid)
    kept = term.snapshot(tid)  # the last output stays available for display
    assert kept.exit_status is not None and kept.exit_status.signal == "SIGTERM"


async def test_release_after_exit(term: TerminalHandler) -> None:
    tid = await create(term, "true")
    await wait(term, tid)
    await release(term, tid)
    assert tid not in term.terminal_ids  # released: forgotten by the handler
    with pytest.raises(ResourceNotFound):
        await output(term, tid)
    kept = term.snapshot(tid)  # the last output stays available for display
    assert kept.exit_status is not None and kept.exit_status.exit_code == 0


async def test_unknown_terminal_id(term: TerminalHandler) -> None:
    for call in (output, wait, kill, release):
        with pytest.raises(ResourceNotFound) as info:
            await call(term, "term_nope")
        assert info.value.code == -32002
    with pytest.raises(ResourceNotFound):
        term.snapshot("term_nope")


async def test_max_terminals() -> None:
    async with TerminalHandler(max_terminals=2) as h:
        first = await create(h, "sleep", "100")
        await create(h, "sleep", "100")
        with pytest.raises(TerminalLimitReached) as info:
            await create(h, "sleep", "100")
        assert "at most 2" in info.value.message
        await release(h, first)
        await create(h, "true")
        assert len(h.terminal_ids) == 2


async def test_no_shell_by_default(term: TerminalHandler) -> None:
    tid = await create(term, "echo", "$HOME", "a;b", "`id`")
    await wait(term, tid)
    assert (await output(term, tid)).output == "$HOME a;b `id`\n"
    with pytest.raises(InvalidParams) as info:
        await create(term, "echo $HOME")  # a whole command line is not a program name
    assert "command not found" in info.value.message
    with pytest.raises(InvalidParams) as info:
        await create(term, "echo", "$HOME", meta=SHELL_META)  # opt-in refused: the handler forbids shells
    assert info.value.data == {"reason": "shell_disabled"}


async def test_shell_opt_in() -> None:
    async with TerminalHandler(allow_shell=True) as h:
        tid = await create(h, "echo $FOO", "it's", env=[EnvVariable(name="FOO", value="bar")], meta=SHELL_META)
        await wait(h, tid)
        assert (await output(h, tid)).output == "bar it's\n"
        tid = await create(h, "echo", "$FOO")  # no opt-in in the request: still no shell
        await wait(h, tid)
        assert (await output(h, tid)).output == "$FOO\n"


async def test_env_added_to_inherited(term: TerminalHandler) -> None:
    script = "import os; print(os.environ['ACPLINK_T'], 'PATH' in os.environ)"
    tid = await create(term, PY, "-c", script, env=[EnvVariable(name="ACPLINK_T", value="v 1")])
    await wait(term, tid)
    assert (await output(term, tid)).output == "v 1 True\n"


async def test_cwd(term: TerminalHandler, tmp_path: Path) -> None:
    tid = await create(term, PY, "-c", "import os; print(os.getcwd())", cwd=str(tmp_path))
    await wait(term, tid)
    assert (await output(term, tid)).output.strip() == os.path.realpath(tmp_path)
    with pytest.raises(InvalidParams):
        await create(term, "true", cwd="relative/dir")
    with pytest.raises(InvalidParams):
        await create(term, "true", cwd=str(tmp_path / "missing"))


async def test_cwd_roots(tmp_path: Path) -> None:
    inside = tmp_path / "in"
    inside.mkdir()
    async with TerminalHandler(cwd_roots=[inside]) as h:
        with pytest.raises(InvalidParams) as info:
            await create(h, "true", cwd=str(tmp_path))
        assert info.value.data == {"reason": "outside_roots"}
        tid = await create(h, "pwd")  # defaults to the first root
        await wait(h, tid)
        assert (await output(h, tid)).output.strip() == os.path.realpath(inside)


async def test_bad_commands(term: TerminalHandler, tmp_path: Path) -> None:
    with pytest.raises(InvalidParams):
        await create(term, "/no/such/program")
    script = tmp_path / "noexec.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    if os.geteuid() != 0:
        with pytest.raises(InvalidParams):
            await create(term, str(script))
    with pytest.raises(InvalidParams):
        await create(term, "true", output_byte_limit=-1)
    assert term.terminal_ids == []


async def test_wait_is_released_by_kill_from_another_task(term: TerminalHandler) -> None:
    tid = await create(term, "sleep", "100")
    waiter = asyncio.create_task(wait(term, tid))
    await asyncio.sleep(0)
    assert not waiter.done()
    await kill(term, tid)
    assert (await waiter).signal == "SIGTERM"


async def test_aclose_kills_everything() -> None:
    h = TerminalHandler()
    pids = [h.process_id(await create(h, "sleep", "100")) for _ in range(3)]
    await until(lambda: all(alive(p) for p in pids), "started")
    await h.aclose()
    assert h.terminal_ids == []
    assert not any(alive(p) for p in pids)


async def test_output_limit_is_capped_by_the_client() -> None:
    async with TerminalHandler(max_output_byte_limit=8) as h:
        tid = await create(h, PY, "-c", "print('0123456789abcdef', end='')", output_byte_limit=10**11)
        await wait(h, tid)
        out = await output(h, tid)
        assert (out.output, out.truncated) == ("89abcdef", True)
        tid = await create(h, PY, "-c", "print('0123456789', end='')", output_byte_limit=3)  # below the cap: honoured
        await wait(h, tid)
        assert (await output(h, tid)).output == "789"
    defaults = TerminalHandler()
    assert (defaults.max_output_byte_limit, defaults.released_output_bytes) == (1 << 20, 8 << 20)


async def test_released_output_kept_within_its_budget() -> None:
    async with TerminalHandler(released_output_bytes=25) as h:
        tids = []
        for text in ("a" * 10, "b" * 10, "c" * 10):
            tid = await create(h, "echo", "-n", text)
            await wait(h, tid)
            await release(h, tid)
            tids.append(tid)
        with pytest.raises(ResourceNotFound):
            h.snapshot(tids[0])  # the oldest made room
        assert [h.snapshot(t).output for t in tids[1:]] == ["b" * 10, "c" * 10]
        tid = await create(h, "echo", "-n", "x" * 30)  # larger than the whole budget: not kept
        await wait(h, tid)
        await release(h, tid)
        with pytest.raises(ResourceNotFound):
            h.snapshot(tid)
        assert h.snapshot(tids[2]).output == "c" * 10


async def test_unknown_session_when_attached(tmp_path: Path) -> None:
    async with TerminalHandler() as h:
        h.attach(lambda sid: [str(tmp_path)] if sid == "s" else None)
        with pytest.raises(ResourceNotFound) as info:
            await h.create(CreateTerminalRequest(session_id="other", command="true"))
        assert info.value.data == {"sessionId": "other"}
        tid = await create(h, "pwd")  # no cwd: the session's
        await wait(h, tid)
        assert (await output(h, tid)).output == f"{os.path.realpath(tmp_path)}\n"
        with pytest.raises(InvalidParams) as info:
            await create(h, "pwd", cwd="/")
        assert info.value.data == {"reason": "outside_roots"}


async def test_command_errors_come_from_the_supervisor(term: TerminalHandler, tmp_path: Path) -> None:
    with pytest.raises(InvalidParams) as info:
        await create(term, "no-such-program-acplink")
    assert info.value.data == {"reason": "command_not_found"}
    with pytest.raises(InvalidParams) as info:
        await create(term, str(tmp_path))  # a directory
    assert info.value.data == {"reason": "not_executable"}
    with pytest.raises(InvalidParams) as info:
        await create(term, "echo", "a\0b")
    assert info.value.data == {"reason": "invalid_command"}
    assert term.terminal_ids == []


async def test_environment_is_exactly_the_requested_one() -> None:
    base = {"PATH": os.environ["PATH"], "LANG": "C"}  # a C locale: Python's start-up would add LC_CTYPE
    async with TerminalHandler(env=base) as h:
        tid = await create(h, "env", env=[EnvVariable(name="EXTRA", value="1")])
        await wait(h, tid)
        lines = (await output(h, tid)).output.splitlines()
    assert sorted(lines) == ["EXTRA=1", "LANG=C", f"PATH={os.environ['PATH']}"]


async def test_max_terminals_counts_the_ones_starting() -> None:
    async with TerminalHandler(max_terminals=2) as h:
        results = await asyncio.gather(*(create(h, "sleep", "100") for _ in range(3)), return_exceptions=True)
        assert sum(isinstance(r, TerminalLimitReached) for r in results) == 1
        assert len(h.terminal_ids) == 2
