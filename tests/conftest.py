"""Shared fixtures. ``_leak_check`` (autouse) fails a test that leaves asyncio tasks, threads,
file descriptors or child processes behind."""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest

SETTLE = 2.0  # seconds a test's leftovers get to go away (waitpid threads, closing pipes)

# The suite's processes (and every agent, server and CLI they start, which inherit the
# environment) keep their state in a folder of this run's own, never in the user's
# ~/.local/state: the demo agent's default session store and devtools' database would otherwise
# be one file shared by every test, by the pytest-xdist workers and by concurrent runs.
# A test that needs a state folder of its own still sets XDG_STATE_HOME / ACPLINK_DEMO_STORE.
_STATE_HOME = tempfile.mkdtemp(prefix="acplink-tests-state-")
os.environ["XDG_STATE_HOME"] = _STATE_HOME


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_STATE_HOME, ignore_errors=True)


def _fds() -> set[tuple[int, str]]:
    out = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the directory listing's own fd, already closed
            continue
        out.add((int(name), target))
    return out


def _children() -> set[int]:
    """Pids whose parent is this process (zombies included), from /proc/*/stat."""
    me = os.getpid()
    out = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if int(fields[1]) == me:
            out.add(int(name))
    return out


def _threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.ident is not None}


@pytest.fixture(autouse=True)
def _leak_check(request: pytest.FixtureRequest) -> Iterator[None]:
    if inspect.iscoroutinefunction(getattr(request, "function", None)):
        request.getfixturevalue("_task_leak_check")
    fds, threads, children = _fds(), _threads(), _children()
    yield
    deadline = time.monotonic() + SETTLE
    while True:
        extra_fds = _fds() - fds
        extra_threads = [t for t in threading.enumerate() if t.ident not in threads and t.is_alive()]
        extra_children = _children() - children
        if not (extra_fds or extra_threads or extra_children) or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    problems = []
    if extra_children:
        problems.append(f"child processes left running or unreaped: {sorted(extra_children)}")
    if extra_threads:
        problems.append(f"threads left running: {[t.name for t in extra_threads]}")
    if extra_fds:
        problems.append(f"file descriptors left open: {sorted(extra_fds)}")
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


@pytest.fixture
async def _task_leak_check() -> AsyncIterator[None]:
    before = asyncio.all_tasks()
    yield
    me = asyncio.current_task()
    left: set[asyncio.Task[object]] = set()
    for _ in range(50):  # let tasks that were just cancelled finish
        left = {t for t in asyncio.all_tasks() - before if t is not me and not t.done()}
        if not left:
            break
        await asyncio.sleep(0.01)
    if left:
        for t in left:
            t.cancel()
        pytest.fail(f"asyncio tasks left running: {sorted(t.get_name() for t in left)}", pytrace=False)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[object]:
    """A throwaway PostgreSQL cluster for the session (tests/pg_cluster.py); skips the test
    with the reason when it cannot start."""
    import pg_cluster

    cluster = pg_cluster.start()
    if isinstance(cluster, str):
        pytest.skip(cluster)
    try:
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def pg_dsn(pg_cluster: object, request: pytest.FixtureRequest) -> str:
    """A new empty database of the session's PostgreSQL cluster: its DSN."""
    import re
    import uuid

    name = re.sub(r"\W", "_", request.node.name.lower())[:40] + "_" + uuid.uuid4().hex[:6]
    return pg_cluster.create_database(name)  # type: ignore[attr-defined,no-any-return]
