"""Every refusal of the file-system handler, each with its reason, and the OS errors mapped."""

from __future__ import annotations

import asyncio
import errno
import os
import secrets
from pathlib import Path

import pytest
from fsutil import read, resolver, wr

from acplink.client.fs import FileAccessDenied, FileSystemHandler
from acplink.errors import InternalError, InvalidParams, ResourceNotFound

__all__ = ["resolver"]  # the fixture


async def test_lone_surrogates_are_refused_in_paths_and_content(tmp_path: Path, resolver: str) -> None:
    fs = FileSystemHandler([tmp_path])
    for bad in (f"{tmp_path}/\ud800.txt", f"{tmp_path}/a\udcff"):
        with pytest.raises(InvalidParams) as info:
            await read(fs, bad)
        assert info.value.data == {"reason": "invalid_path"}
        with pytest.raises(InvalidParams):
            await fs.write_text_file(wr(bad, "x"))
    with pytest.raises(InvalidParams) as info:
        await fs.write_text_file(wr(tmp_path / "new" / "f.txt", "half a pair: \ud83d"))
    assert info.value.data == {"reason": "invalid_content"}
    assert list(tmp_path.iterdir()) == []  # nothing created, not even the folder


async def test_symlink_loops_and_chains(tmp_path: Path, resolver: str) -> None:
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / "dirloop").symlink_to("dirloop")
    fs = FileSystemHandler([tmp_path])
    for path in (tmp_path / "loop1", tmp_path / "dirloop" / "x.txt"):
        with pytest.raises(FileAccessDenied) as info:
            await read(fs, path)
        assert info.value.data == {"reason": "symlink"} and "symbolic links" in info.value.message
        with pytest.raises(FileAccessDenied):
            await fs.write_text_file(wr(path, "x"))
    (tmp_path / "real.txt").write_text("end")
    previous = "real.txt"
    for i in range(40):  # a chain of 40 links resolves (the kernel's own limit)...
        (tmp_path / f"c{i}").symlink_to(previous)
        previous = f"c{i}"
    assert await read(fs, tmp_path / "c39") == "end"
    (tmp_path / "c40").symlink_to("c39")  # ...41 do not
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, tmp_path / "c40")
    assert info.value.data == {"reason": "symlink"}


async def test_relative_links_with_dotdot(tmp_path: Path, resolver: str) -> None:
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "top.txt").write_text("top")
    (tmp_path / "secret.txt").write_text("SECRET")
    (root / "a" / "b" / "up").symlink_to("../../top.txt")  # inside: fine
    (root / "a" / "b" / "out").symlink_to("../../../secret.txt")  # one level too many
    (root / "a" / "dir").symlink_to("b/..")  # a folder
    fs = FileSystemHandler([root])
    assert await read(fs, root / "a" / "b" / "up") == "top"
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, root / "a" / "b" / "out")
    assert info.value.data == {"reason": "outside_roots"}
    with pytest.raises(FileAccessDenied) as info:
        await fs.write_text_file(wr(root / "a" / "b" / "out", "x"))
    assert info.value.data == {"reason": "outside_roots"}
    assert (tmp_path / "secret.txt").read_text() == "SECRET"
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, root / "a" / "dir")
    assert info.value.data == {"reason": "not_regular_file"}
    await fs.write_text_file(wr(root / "a" / "dir" / "via.txt", "v"))  # b/../via.txt = a/via.txt
    assert (root / "a" / "via.txt").read_text() == "v"


async def test_absolute_link_into_another_root(tmp_path: Path, resolver: str) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (two / "f.txt").write_text("two")
    (one / "to-two").symlink_to(two)
    (one / "to-file").symlink_to(two / "f.txt")
    fs = FileSystemHandler([one])
    with pytest.raises(FileAccessDenied):
        await read(fs, one / "to-two" / "f.txt")
    fs.add_root(two)
    assert await read(fs, one / "to-two" / "f.txt") == "two"
    assert await read(fs, one / "to-file") == "two"
    await fs.write_text_file(wr(one / "to-two" / "g.txt", "written"))
    assert (two / "g.txt").read_text() == "written"
    assert fs.roots == (str(one), str(two))


async def test_the_root_itself_and_dot_paths(tmp_path: Path, resolver: str) -> None:
    fs = FileSystemHandler([tmp_path])
    (tmp_path / "f.txt").write_text("f")
    assert await read(fs, f"{tmp_path}/./sub/../f.txt".replace("/sub/..", "")) == "f"
    for path in (str(tmp_path), f"{tmp_path}/", f"{tmp_path}/."):
        with pytest.raises(FileAccessDenied) as info:
            await read(fs, path)
        assert info.value.data == {"reason": "not_regular_file"}
        with pytest.raises(FileAccessDenied):
            await fs.write_text_file(wr(path, "x"))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "link").symlink_to(".")
    with pytest.raises(FileAccessDenied) as info:
        await fs.write_text_file(wr(tmp_path / "d" / "link", "x"))
    assert info.value.data == {"reason": "not_regular_file"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d", "f.txt"]


async def test_a_file_used_as_a_folder(tmp_path: Path, resolver: str) -> None:
    (tmp_path / "f.txt").write_text("f")
    fs = FileSystemHandler([tmp_path])
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, tmp_path / "f.txt" / "x")
    assert info.value.data == {"reason": "not_regular_file"}
    with pytest.raises(FileAccessDenied) as info:
        await fs.write_text_file(wr(tmp_path / "f.txt" / "x", "x"))
    assert info.value.data == {"reason": "not_regular_file"}
    assert (tmp_path / "f.txt").read_text() == "f"


@pytest.mark.parametrize(("exc", "expected", "reason"), [
    (FileNotFoundError(errno.ENOENT, "x"), ResourceNotFound, None),
    (IsADirectoryError(errno.EISDIR, "x"), FileAccessDenied, "not_regular_file"),
    (NotADirectoryError(errno.ENOTDIR, "x"), FileAccessDenied, "not_regular_file"),
    (OSError(errno.ELOOP, "x"), FileAccessDenied, "symlink"),
    (PermissionError(errno.EACCES, "x"), FileAccessDenied, "permission_denied"),
    (OSError(errno.ENOSPC, "x"), InternalError, None),
    (OSError(0, "x"), InternalError, None),
])
async def test_os_errors_of_the_final_rename_map_to_wire_errors(
        tmp_path: Path, resolver: str, monkeypatch: pytest.MonkeyPatch, exc: OSError, expected: type, reason: str | None
) -> None:
    (tmp_path / "f.txt").write_text("old")

    def rename(*args: object, **kw: object) -> None:
        raise exc

    monkeypatch.setattr(os, "rename", rename)
    fs = FileSystemHandler([tmp_path])
    with pytest.raises(expected) as info:
        await fs.write_text_file(wr(tmp_path / "new" / "f.txt", "x"))
    err = info.value
    assert type(err) is expected
    if reason is not None:
        assert err.data == {"reason": reason}
    if expected is InternalError:
        assert err.message == f"file operation failed: {os.strerror(exc.errno) if exc.errno else 'OSError'}"
    if expected is ResourceNotFound:
        assert err.data == {"path": str(tmp_path / "new" / "f.txt")}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]  # the new folder is gone again
    assert (tmp_path / "f.txt").read_text() == "old"


async def test_failed_write_keeps_folders_that_existed_or_filled_up(tmp_path: Path, resolver: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").mkdir()
    real_rename = os.rename

    def rename(src: str, dst: str, **kw: object) -> None:
        (tmp_path / "a" / "b" / "other.txt").write_text("someone else's")  # b is no longer empty
        raise OSError(errno.EIO, "x")

    monkeypatch.setattr(os, "rename", rename)
    fs = FileSystemHandler([tmp_path])
    with pytest.raises(InternalError):
        await fs.write_text_file(wr(tmp_path / "a" / "b" / "c" / "f.txt", "x"))
    monkeypatch.setattr(os, "rename", real_rename)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["a", "a/b", "a/b/other.txt"]


async def test_long_names_get_a_short_temporary_name(tmp_path: Path, resolver: str) -> None:
    name = "n" * 255  # the longest name most file systems allow
    fs = FileSystemHandler([tmp_path])
    await fs.write_text_file(wr(tmp_path / name, "long"))
    await fs.write_text_file(wr(tmp_path / name, "longer"))
    assert (tmp_path / name).read_text() == "longer"
    assert [p.name for p in tmp_path.iterdir()] == [name]


async def test_write_is_durable_before_the_rename(tmp_path: Path, resolver: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_fsync, real_rename = os.fsync, os.rename
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "rename", lambda *a, **k: (calls.append("rename"), real_rename(*a, **k))[1])
    await FileSystemHandler([tmp_path]).write_text_file(wr(tmp_path / "f.txt", "data"))
    assert calls == ["fsync", "rename"]


async def test_short_writes_are_completed(tmp_path: Path, resolver: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:3])))  # 3 bytes at a time
    await FileSystemHandler([tmp_path]).write_text_file(wr(tmp_path / "f.txt", "héllo wörld"))
    assert (tmp_path / "f.txt").read_text() == "héllo wörld"


async def test_a_file_planted_at_the_temporary_name_is_never_opened(tmp_path: Path, resolver: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "token_hex", lambda n: "guessed")  # as if the name were guessed
    (tmp_path / "f.txt").write_text("old")
    planted = tmp_path / ".f.txt.guessed.acplink-tmp"
    planted.write_text("planted")
    os.link(planted, tmp_path / "watch")  # would see it if the planted file were written
    fs = FileSystemHandler([tmp_path])
    with pytest.raises(InternalError) as info:
        await fs.write_text_file(wr(tmp_path / "f.txt", "new"))
    assert "exists" in info.value.message
    assert (tmp_path / "watch").read_text() == "planted" and (tmp_path / "f.txt").read_text() == "old"


async def test_dotdot_after_an_absolute_link_stops_at_the_root(tmp_path: Path, resolver: str) -> None:
    root = tmp_path / "root"
    (root / "a" / "b" / "outside").mkdir(parents=True)
    (root / "a" / "b" / "outside" / "secret.txt").write_text("decoy")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("SECRET")
    (root / "a" / "b" / "jump").symlink_to(root)  # absolute: back to the root
    (root / "esc").symlink_to("../outside/secret.txt")  # one level above the root
    fs = FileSystemHandler([root])
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, root / "a" / "b" / "jump" / "esc")
    assert info.value.data == {"reason": "outside_roots"}


async def test_a_fifo_used_as_a_folder_never_blocks(tmp_path: Path, resolver: str) -> None:
    os.mkfifo(tmp_path / "fifo")
    fs = FileSystemHandler([tmp_path])
    with pytest.raises(FileAccessDenied) as info:
        await asyncio.wait_for(read(fs, tmp_path / "fifo" / "x"), 10)  # would hang if the fifo were opened
    assert info.value.data == {"reason": "not_regular_file"}
    with pytest.raises(FileAccessDenied):
        await asyncio.wait_for(fs.write_text_file(wr(tmp_path / "fifo" / "x", "x")), 10)


async def test_reading_a_missing_path_creates_nothing(tmp_path: Path, resolver: str) -> None:
    fs = FileSystemHandler([tmp_path])
    with pytest.raises(ResourceNotFound):
        await read(fs, tmp_path / "no-dir" / "deeper" / "nope.txt")
    assert list(tmp_path.iterdir()) == []
