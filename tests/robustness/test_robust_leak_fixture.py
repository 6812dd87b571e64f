"""The autouse leak check of tests/conftest.py fails a test that leaves a task, a thread, a file
descriptor or a child process behind (run on a small generated suite in a subprocess)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

LEAKY_TESTS = '''
import asyncio, os, subprocess, sys, threading, time

async def test_clean():
    await asyncio.sleep(0)

async def test_leaks_a_task():
    asyncio.get_running_loop().create_task(asyncio.sleep(30), name="leaked-task")

def test_leaks_a_thread():
    threading.Thread(target=time.sleep, args=(4,), name="leaked-thread", daemon=True).start()

def test_leaks_a_fd():
    os.pipe()

def test_leaks_a_child():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(4)"])
'''


def test_leak_fixture_fails_each_kind_of_leak(pytester: pytest.Pytester) -> None:
    conftest = (Path(__file__).parents[1] / "conftest.py").read_text()
    pytester.makeconftest(conftest.replace("SETTLE = 2.0", "SETTLE = 0.3"))
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_leaky=LEAKY_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=60)
    result.assert_outcomes(passed=5, errors=4)  # a leak fails the teardown
    out = result.stdout.str()
    assert "asyncio tasks left running: ['leaked-task']" in out
    assert "threads left running: ['leaked-thread']" in out
    assert "file descriptors left open" in out
    assert "child processes left running or unreaped" in out
