"""Shared helpers of the file-system handler tests."""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import tempfile
import traceback
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from acplink.client.fs import FileSystemHandler
from acplink.schema import ReadTextFileRequest, WriteTextFileRequest


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with openat2 (where the kernel has it) and with the portable walk."""
    if request.param == "walk":
        monkeypatch.setattr(FileSystemHandler, "use_openat2", False)
    return str(request.param)


def rd(path: Path | str, line: int | None = None, limit: int | None = None) -> ReadTextFileRequest:
    return ReadTextFileRequest(session_id="s", path=str(path), line=line, limit=limit)


def wr(path: Path | str, content: str) -> WriteTextFileRequest:
    return WriteTextFileRequest(session_id="s", path=str(path), content=content)


async def read(fs: FileSystemHandler, path: Path | str, **kw: Any) -> str:
    return (await fs.read_text_file(rd(path, **kw))).content


def temp_files(*folders: Path) -> list[Path]:
    """Every leftover temporary file of an atomic write below ``folders``."""
    return [p for folder in folders for p in folder.rglob("*") if p.name.endswith(".acplink-tmp")]


def _normal_user() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return 65534, 65534
    return entry.pw_uid, entry.pw_gid


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary folder a normal user can reach (pytest's own are private to root when the
    tests run as root), for :func:`as_normal_user`."""
    folder = Path(tempfile.mkdtemp(prefix="acplink-test-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def as_normal_user(check: Callable[[], Awaitable[None]]) -> None:
    """Run ``asyncio.run(check())`` with the permissions of a normal user: here when the tests
    do not run as root; as root (CI), in a forked child that dropped to ``nobody`` first, so a
    check of what the OS refuses still checks something (root passes most permission checks).
    The files it uses must be reachable by that user (see :func:`open_tmp`)."""
    if os.geteuid() != 0:
        asyncio.run(check())
        return
    uid, gid = _normal_user()
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # (3.12+ warns about fork() in a process with threads: the
        warnings.simplefilter("ignore", DeprecationWarning)  # child only runs `check`)
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            assert os.geteuid() == uid and os.getegid() == gid
            asyncio.run(check())
            status = 0
        except BaseException:
            os.write(write_end, traceback.format_exc().encode())
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        report = f.read().decode()
    _, wait_status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(wait_status) == 0, f"as user {uid}:\n{report}"
