"""The resolver's less travelled paths: the step limit, OS errors met while opening a folder,
undoing created folders after the walk was restarted by an absolute symlink or went back up
with ``..``, ``.`` in a link target, and that the kernel-confined openat2 path is really taken
where the kernel has it (a regression that silently falls back to the walk would pass every
other test)."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys
from pathlib import Path
from typing import Any

import pytest
from fsutil import as_normal_user, open_tmp, read, resolver, wr

from acplink.client.fs import FileAccessDenied, FileSystemHandler, _resolve
from acplink.errors import InternalError

__all__ = ["open_tmp", "resolver"]  # the fixtures


def tree_of(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def failing_rename(monkeypatch: pytest.MonkeyPatch) -> None:
    """The final rename of every write fails (EIO): the write is undone."""
    def rename(src: str, dst: str, **kw: object) -> None:
        raise OSError(errno.EIO, "x")

    monkeypatch.setattr(os, "rename", rename)


# -- undo ---------------------------------------------------------------------------------------


async def test_a_failed_write_after_an_absolute_link_removes_what_it_made_and_nothing_else(
        tmp_path: Path, resolver: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk makes ``one/new``, comes back up, meets an absolute link that restarts it in
    the root ``two``, and makes ``two/sub/newer`` there. The write fails: both folders it
    made go, and ``two/new`` (an empty folder of the same name in the other root) stays."""
    one, two = tmp_path / "one", tmp_path / "two"
    (two / "sub").mkdir(parents=True)
    (two / "new").mkdir()  # same name as the folder the walk makes in `one`
    one.mkdir()
    (one / "jump").symlink_to(two / "sub")  # absolute
    (one / "hop").symlink_to("new/../jump")  # makes one/new on the way
    before = tree_of(tmp_path)
    fs = FileSystemHandler([one, two])
    failing_rename(monkeypatch)
    with pytest.raises(InternalError):
        await fs.write_text_file(wr(one / "hop" / "newer" / "f.txt", "x"))
    assert tree_of(tmp_path) == before  # one/new and two/sub/newer gone, two/new kept
    monkeypatch.undo()
    await fs.write_text_file(wr(one / "hop" / "newer" / "f.txt", "x"))  # (the same write works)
    assert (two / "sub" / "newer" / "f.txt").read_text() == "x" and (one / "new").is_dir()


async def test_a_failed_write_removes_folders_made_then_left_by_dotdot(
        tmp_path: Path, resolver: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``n1/n2/../../d``: the walk makes n1 and n1/n2, goes back up twice and makes d; all
    three go when the write fails (n1 can only go once n2 did)."""
    (tmp_path / "hop").symlink_to("n1/n2/../../d")
    fs = FileSystemHandler([tmp_path])
    failing_rename(monkeypatch)
    with pytest.raises(InternalError):
        await fs.write_text_file(wr(tmp_path / "hop" / "f.txt", "x"))
    assert tree_of(tmp_path) == ["hop"]


# -- "." and ".." in link targets ---------------------------------------------------------------


async def test_dot_then_dotdot_in_a_link_target_goes_up_one_level(tmp_path: Path, resolver: str) -> None:
    a = tmp_path / "a"
    (a / "b" / "x").mkdir(parents=True)
    (a / "x").mkdir()
    (a / "x" / "f").write_text("right")  # a/b/./../x/f = a/x/f
    (a / "b" / "x" / "f").write_text("wrong")  # one level too deep
    (a / "b" / "dir").symlink_to("./../x")
    (a / "b" / "file").symlink_to("./../x/f")
    (a / "b" / "dots").symlink_to("././.././x/./f")
    fs = FileSystemHandler([tmp_path])
    for link in ("dir/f", "file", "dots"):
        assert await read(fs, a / "b" / link) == "right"
    await fs.write_text_file(wr(a / "b" / "dir" / "g", "written"))
    await fs.write_text_file(wr(a / "b" / "file", "replaced"))
    assert (a / "x" / "g").read_text() == "written" and (a / "x" / "f").read_text() == "replaced"
    assert (a / "b" / "x" / "f").read_text() == "wrong" and not (a / "b" / "x" / "g").exists()


# -- the step limit -----------------------------------------------------------------------------


async def test_a_folder_that_keeps_vanishing_hits_the_step_limit(tmp_path: Path, resolver: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone removes the folder each time between our mkdir and our open (here: it always
    exists for mkdir and never for open): the walk gives up after MAX_STEPS steps instead of
    looping forever."""
    attempts = 0
    real_open, real_mkdir = os.open, os.mkdir

    def vanishing_open(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        nonlocal attempts
        if path == "flaky":
            attempts += 1
            if attempts > 10 * _resolve.MAX_STEPS:  # (a walk without the limit: fail, not hang)
                raise RuntimeError("the walk does not stop")
            raise FileNotFoundError(errno.ENOENT, "gone again")
        return real_open(path, flags, *args, **kw)

    def existing_mkdir(path: Any, *args: Any, **kw: Any) -> None:
        if path == "flaky":
            raise FileExistsError(errno.EEXIST, "there")
        real_mkdir(path, *args, **kw)

    monkeypatch.setattr(os, "open", vanishing_open)
    monkeypatch.setattr(os, "mkdir", existing_mkdir)
    fs = FileSystemHandler([tmp_path])
    with pytest.raises(FileAccessDenied) as info:
        await fs.write_text_file(wr(tmp_path / "flaky" / "f.txt", "x"))
    assert info.value.data == {"reason": "symlink"} and "kept changing" in info.value.message
    assert _resolve.MAX_STEPS // 2 <= attempts <= _resolve.MAX_STEPS


# -- OS errors opening a folder -----------------------------------------------------------------


@pytest.mark.parametrize(("code", "expected"), [
    (errno.EIO, "file operation failed: Input/output error"),
    (errno.EMFILE, "file operation failed: Too many open files"),
    (errno.EACCES, "access denied: permission denied by the operating system"),
])
async def test_an_os_error_opening_a_folder_is_reported_as_it_is(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, expected: str) -> None:
    """Not a symlink problem: the error is the OS's (it once became "too many levels of
    symbolic links" after 40 retries)."""
    monkeypatch.setattr(FileSystemHandler, "use_openat2", False)  # (openat2 does not call os.open)
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "deeper" / "f.txt").write_text("f")
    real_open = os.open
    calls = 0

    def failing_open(path: Any, flags: int, *args: Any, **kw: Any) -> int:
        nonlocal calls
        if path == "sub" and flags & os.O_DIRECTORY:
            calls += 1
            raise OSError(code, os.strerror(code))
        return real_open(path, flags, *args, **kw)

    monkeypatch.setattr(os, "open", failing_open)
    fs = FileSystemHandler([tmp_path])
    for act in (lambda: read(fs, tmp_path / "sub" / "deeper" / "f.txt"),
                lambda: fs.write_text_file(wr(tmp_path / "sub" / "deeper" / "g.txt", "x"))):
        calls = 0
        with pytest.raises((InternalError, FileAccessDenied)) as info:
            await act()
        assert info.value.message == expected and calls == 1  # asked once, not retried as a link
        if code == errno.EACCES:
            assert info.value.data == {"reason": "permission_denied"}


def test_a_folder_the_user_may_not_search_is_permission_denied(open_tmp: Path, resolver: str) -> None:
    locked = open_tmp / "locked"
    (locked / "sub").mkdir(parents=True)
    (locked / "sub" / "f.txt").write_text("f")
    locked.chmod(0o600)  # no search (x) permission

    async def check() -> None:  # as a normal user (root may search any folder)
        fs = FileSystemHandler([open_tmp])
        for act in (lambda: read(fs, locked / "sub" / "f.txt"),
                    lambda: fs.write_text_file(wr(locked / "sub" / "g.txt", "x"))):
            with pytest.raises(FileAccessDenied) as info:
                await act()
            assert info.value.data == {"reason": "permission_denied"}, info.value.message

    try:
        as_normal_user(check)
    finally:
        locked.chmod(0o700)


# -- the kernel-confined path -------------------------------------------------------------------


def _kernel_has_openat2() -> bool:
    """Asked of the kernel directly (not through acplink): Linux 5.6+ without a seccomp filter
    that refuses the call."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        major, minor = (int(x) for x in platform.release().split(".")[:2])
    except ValueError:
        return False
    if (major, minor) < (5, 6):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    how = (ctypes.c_uint64 * 3)(os.O_RDONLY | os.O_DIRECTORY, 0, 0)
    fd = libc.syscall(437, -100, b"/", ctypes.byref(how), ctypes.c_size_t(24))  # AT_FDCWD, "/"
    if fd < 0:
        return ctypes.get_errno() not in (errno.ENOSYS, errno.EPERM)
    os.close(fd)
    return True


@pytest.mark.skipif(not _kernel_has_openat2(), reason="the kernel has no openat2 (not Linux 5.6+, or seccomp)")
async def test_reads_take_the_openat2_path_where_the_kernel_has_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A read is opened by openat2 with RESOLVE_BENEATH (the walk is not used), a link
    pointing out is refused by the kernel (EXDEV) before the walk words the error."""
    assert _resolve.openat2.available and FileSystemHandler.use_openat2
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.txt").write_text("inside")
    (root / "a" / "in").symlink_to("f.txt")
    (tmp_path / "secret.txt").write_text("SECRET")
    (root / "out").symlink_to("../secret.txt")
    seen: list[tuple[str, int | str]] = []
    real_call = _resolve._Openat2.__call__

    def spy(self: Any, dirfd: int, rel: str, flags: int) -> int:
        try:
            fd = real_call(self, dirfd, rel, flags)
        except OSError as exc:
            seen.append((rel, errno.errorcode.get(exc.errno or 0, "?")))
            raise
        seen.append((rel, "ok"))
        return fd

    walked: list[list[str]] = []
    real_locate = _resolve.locate

    def locate(roots: Any, r: Any, parts: list[str], **kw: Any) -> Any:
        walked.append(parts)
        return real_locate(roots, r, parts, **kw)

    monkeypatch.setattr(_resolve._Openat2, "__call__", spy)
    monkeypatch.setattr(_resolve, "locate", locate)
    fs = FileSystemHandler([root])
    assert await read(fs, root / "a" / "f.txt") == "inside"
    assert await read(fs, root / "a" / "in") == "inside"
    assert (seen, walked) == ([("a/f.txt", "ok"), ("a/in", "ok")], [])
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, root / "out")
    assert info.value.data == {"reason": "outside_roots"}
    assert seen[-1] == ("out", "EXDEV") and walked == [["out"]]  # the kernel refused; the walk worded it
    assert await read(fs, root / "a" / "f.txt") == "inside"  # a refusal does not turn openat2 off
    assert seen[-1] == ("a/f.txt", "ok") and len(walked) == 1
