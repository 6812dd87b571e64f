"""Writes never replace a file the user could not write directly, and keep what they should.

The tests run as root in CI, where ``access(2)`` says every file is writable: the rule checks
the owner and the owner-write bit itself, so a 0444 file and another user's file are refused
for root too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from fsutil import read, resolver, temp_files, wr

from acplink.client.fs import FileAccessDenied, FileSystemHandler

__all__ = ["resolver"]  # the fixture

NOBODY = 65534


def snapshot(path: Path) -> tuple[bytes, int, int, int, int]:
    st = path.lstat()
    return path.read_bytes(), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_ino


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


async def refused_untouched(fs: FileSystemHandler, path: Path) -> FileAccessDenied:
    before = snapshot(path)
    with pytest.raises(FileAccessDenied) as info:
        await fs.write_text_file(wr(path, "replaced"))
    assert snapshot(path) == before  # content, mode, owner, group, and the very same file
    assert temp_files(path.parent) == []
    return info.value


@pytest.mark.parametrize("where", [".", "sub/deeper"])
async def test_read_only_file_is_refused_and_untouched(tmp_path: Path, resolver: str, where: str) -> None:
    (tmp_path / where).mkdir(parents=True, exist_ok=True)
    target = tmp_path / where / "ro.txt"
    target.write_text("keep me")
    target.chmod(0o444)
    fs = FileSystemHandler([tmp_path])
    err = await refused_untouched(fs, target)
    assert err.data == {"reason": "not_writable"} and "read-only" in err.message
    assert await read(fs, target) == "keep me"  # reading is still fine


async def test_owner_write_bit_alone_decides_for_the_owner(tmp_path: Path, resolver: str) -> None:
    target = tmp_path / "grp.txt"
    target.write_text("x")
    target.chmod(0o466)  # group and others may write, the owner (us) may not
    err = await refused_untouched(FileSystemHandler([tmp_path]), target)
    assert err.data == {"reason": "not_writable"}


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
async def test_another_users_file_is_refused_and_untouched(tmp_path: Path, resolver: str) -> None:
    target = tmp_path / "theirs.txt"
    target.write_text("their content")
    target.chmod(0o666)  # even world-writable: replacing it would make it ours
    os.chown(target, NOBODY, NOBODY)
    err = await refused_untouched(FileSystemHandler([tmp_path]), target)
    assert err.data == {"reason": "not_writable"} and "another user" in err.message


async def test_access_is_asked_with_the_effective_ids(tmp_path: Path, resolver: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.txt"
    target.write_text("x")
    asked: list[tuple[object, ...]] = []

    def access(path: object, mode: int, **kw: object) -> bool:
        asked.append((path, mode, kw.get("effective_ids")))
        return False

    monkeypatch.setattr(os, "access", access)  # as an ACL denying us would
    err = await refused_untouched(FileSystemHandler([tmp_path]), target)
    assert err.data == {"reason": "not_writable"}
    assert asked == [("f.txt", os.W_OK, os.access in os.supports_effective_ids)]


@pytest.mark.parametrize("where", [".", "sub/deeper"])
async def test_replace_keeps_mode_and_group(tmp_path: Path, resolver: str, where: str) -> None:
    (tmp_path / where).mkdir(parents=True, exist_ok=True)
    target = tmp_path / where / "kept.txt"
    target.write_text("old")
    target.chmod(0o751)
    group = NOBODY if os.geteuid() == 0 else os.getegid()
    os.chown(target, -1, group)
    await FileSystemHandler([tmp_path]).write_text_file(wr(target, "new"))
    st = target.stat()
    assert target.read_text() == "new"
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o751, os.geteuid(), group)


async def test_new_files_and_folders_get_the_umask_modes(tmp_path: Path, resolver: str) -> None:
    mask = umask()
    await FileSystemHandler([tmp_path]).write_text_file(wr(tmp_path / "a" / "b" / "new.txt", "n"))
    assert stat.S_IMODE((tmp_path / "a" / "b" / "new.txt").stat().st_mode) == 0o666 & ~mask
    for folder in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~mask
    assert (tmp_path / "a" / "b" / "new.txt").stat().st_uid == os.geteuid()


async def test_new_file_mode_follows_a_strict_umask(tmp_path: Path, resolver: str) -> None:
    old = os.umask(0o077)
    try:
        await FileSystemHandler([tmp_path]).write_text_file(wr(tmp_path / "d" / "private.txt", "p"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "d" / "private.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o700


async def test_a_replacement_is_private_until_it_gets_the_old_mode(tmp_path: Path, resolver: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary file that replaces an existing one is created 0o600 (nobody else may read
    or run it while it is written) and only then given the old file's mode; a new file is
    created 0o666 minus the umask, and gets no chmod."""
    (tmp_path / "old.txt").write_text("old")
    (tmp_path / "old.txt").chmod(0o755)
    created: dict[str, int] = {}
    before_chmod: list[int] = []
    real_open, real_fchmod = os.open, os.fchmod

    def spy_open(path: str, flags: int, mode: int = 0o777, **kw: object) -> int:
        fd = real_open(path, flags, mode, **kw)  # type: ignore[arg-type]
        if str(path).endswith(".acplink-tmp"):
            created[str(path).split(".")[1]] = mode  # (".NAME.RANDOM.acplink-tmp")
            assert stat.S_IMODE(os.fstat(fd).st_mode) == mode & ~umask()
        return fd

    def spy_fchmod(fd: int, mode: int) -> None:
        before_chmod.append(stat.S_IMODE(os.fstat(fd).st_mode))
        real_fchmod(fd, mode)

    monkeypatch.setattr(os, "open", spy_open)
    monkeypatch.setattr(os, "fchmod", spy_fchmod)
    fs = FileSystemHandler([tmp_path])
    await fs.write_text_file(wr(tmp_path / "old.txt", "replaced"))
    await fs.write_text_file(wr(tmp_path / "new.txt", "new"))
    assert created == {"old": 0o600, "new": 0o666}
    assert before_chmod == [0o600 & ~umask()]  # the replacement only: 0o600, or less under the umask
    assert stat.S_IMODE((tmp_path / "old.txt").stat().st_mode) == 0o755
