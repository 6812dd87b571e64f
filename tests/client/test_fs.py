"""FileSystemHandler: confinement to the roots, special files, line/limit, atomic writes."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from fsutil import as_normal_user, open_tmp, read, resolver, wr

from acplink.client.fs import FileAccessDenied, FileSystemHandler
from acplink.errors import InternalError, InvalidParams, RequestError, ResourceNotFound

__all__ = ["open_tmp", "resolver"]  # the fixtures


@pytest.fixture(autouse=True)
def _both_resolvers(resolver: str) -> None:
    """Every test here runs with openat2 (where the kernel has it) and with the portable walk."""


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "a.txt").write_text("1\n2\n3\n4\n5")
    (root / "sub" / "b.txt").write_text("bee")
    (outside / "secret.txt").write_text("TOP SECRET")
    return {"root": root, "outside": outside}


def assert_no_leak(err: RequestError, *secrets: Path) -> None:
    text = f"{err} {err.data!r} {err.to_wire()!r}"
    for s in secrets:
        assert str(s) not in text
    assert "Traceback" not in text
    assert err.__cause__ is None or isinstance(err.__cause__, RequestError)


async def test_reads_inside_root(tree: dict[str, Path]) -> None:
    fs = FileSystemHandler([tree["root"]])
    assert await read(fs, tree["root"] / "sub" / "b.txt") == "bee"
    assert fs.roots == (os.path.realpath(tree["root"]),)


@pytest.mark.parametrize("rel", ["../outside/secret.txt", "sub/../../outside/secret.txt"])
async def test_dotdot_escape_refused(tree: dict[str, Path], rel: str) -> None:
    fs = FileSystemHandler([tree["root"]])
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, f"{tree['root']}/{rel}")
    assert info.value.code == -32602 and info.value.data == {"reason": "outside_roots"}
    assert "outside the session roots" in info.value.message
    assert_no_leak(info.value, tree["outside"])


async def test_absolute_outside_refused_for_read_and_write(tree: dict[str, Path]) -> None:
    fs = FileSystemHandler([tree["root"]])
    with pytest.raises(FileAccessDenied):
        await read(fs, tree["outside"] / "secret.txt")
    with pytest.raises(FileAccessDenied):
        await fs.write_text_file(wr(tree["outside"] / "new.txt", "x"))
    with pytest.raises(FileAccessDenied):
        await fs.write_text_file(wr(f"{tree['root']}/../outside/new.txt", "x"))
    assert not (tree["outside"] / "new.txt").exists()
    with pytest.raises(FileAccessDenied):
        await read(fs, "/etc/passwd")


async def test_relative_path_refused(tree: dict[str, Path]) -> None:
    fs = FileSystemHandler([tree["root"]])
    with pytest.raises(InvalidParams) as info:
        await read(fs, "a.txt")
    assert not isinstance(info.value, FileAccessDenied)
    assert info.value.code == -32602 and "absolute" in info.value.message


async def test_symlink_escaping_refused(tree: dict[str, Path]) -> None:
    root, outside = tree["root"], tree["outside"]
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "dirlink").symlink_to(outside)
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    fs = FileSystemHandler([root])
    for path in (root / "link.txt", root / "dirlink" / "secret.txt"):
        with pytest.raises(FileAccessDenied) as info:
            await read(fs, path)
        assert_no_leak(info.value, outside)
    for path in (root / "link.txt", root / "dirlink" / "x.txt", root / "dangling"):
        with pytest.raises(FileAccessDenied):
            await fs.write_text_file(wr(path, "pwned"))
    assert (outside / "secret.txt").read_text() == "TOP SECRET"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


async def test_symlink_inside_root_ok(tree: dict[str, Path]) -> None:
    root = tree["root"]
    (root / "alias.txt").symlink_to(root / "sub" / "b.txt")
    (root / "subalias").symlink_to(root / "sub")
    fs = FileSystemHandler([root])
    assert await read(fs, root / "alias.txt") == "bee"
    assert await read(fs, root / "subalias" / "b.txt") == "bee"
    await fs.write_text_file(wr(root / "alias.txt", "wasp"))
    assert (root / "alias.txt").is_symlink()
    assert (root / "sub" / "b.txt").read_text() == "wasp"


async def test_root_given_through_a_symlink(tree: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "rootlink").symlink_to(tree["root"])
    fs = FileSystemHandler([tmp_path / "rootlink"])
    assert await read(fs, tree["root"] / "sub" / "b.txt") == "bee"
    assert await read(fs, tmp_path / "rootlink" / "sub" / "b.txt") == "bee"


async def test_sibling_with_common_prefix_is_outside(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj-evil").mkdir()
    (tmp_path / "proj-evil" / "x").write_text("x")
    fs = FileSystemHandler([tmp_path / "proj"])
    with pytest.raises(FileAccessDenied):
        await read(fs, tmp_path / "proj-evil" / "x")


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
async def test_device_file_refused() -> None:
    fs = FileSystemHandler(["/dev"])
    for dev in ("/dev/zero", "/dev/null"):
        with pytest.raises(FileAccessDenied) as info:
            await read(fs, dev)
        assert info.value.data == {"reason": "not_regular_file"}


async def test_device_reached_through_symlink_in_root_refused(tree: dict[str, Path]) -> None:
    (tree["root"] / "zero").symlink_to("/dev/zero")
    fs = FileSystemHandler([tree["root"]])
    with pytest.raises(FileAccessDenied):
        await read(fs, tree["root"] / "zero")


async def test_fifo_refused_without_blocking(tree: dict[str, Path]) -> None:
    fifo = tree["root"] / "pipe"
    os.mkfifo(fifo)
    fs = FileSystemHandler([tree["root"]])
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, fifo)  # would hang forever if the fifo were opened blocking
    assert info.value.data == {"reason": "not_regular_file"}
    with pytest.raises(FileAccessDenied):
        await fs.write_text_file(wr(fifo, "x"))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


async def test_directory_refused(tree: dict[str, Path]) -> None:
    fs = FileSystemHandler([tree["root"]])
    with pytest.raises(FileAccessDenied):
        await read(fs, tree["root"] / "sub")
    with pytest.raises(FileAccessDenied):
        await read(fs, tree["root"])
    with pytest.raises(FileAccessDenied):
        await fs.write_text_file(wr(tree["root"] / "sub", "x"))
    assert (tree["root"] / "sub").is_dir()


async def test_missing_file(tree: dict[str, Path]) -> None:
    fs = FileSystemHandler([tree["root"]])
    with pytest.raises(ResourceNotFound) as info:
        await read(fs, tree["root"] / "nope.txt")
    assert info.value.code == -32002
    with pytest.raises(ResourceNotFound):
        await read(fs, tree["root"] / "no-dir" / "nope.txt")


@pytest.mark.parametrize(("line", "limit", "expected"), [
    (None, None, "1\n2\n3\n4\n5"),
    (2, 2, "2\n3\n"),
    (4, None, "4\n5"),
    (None, 1, "1\n"),
    (1, 0, ""),
    (5, 10, "5"),
    (6, None, ""),
    (100, 3, ""),
])
async def test_line_and_limit(tree: dict[str, Path], line: int | None, limit: int | None, expected: str) -> None:
    fs = FileSystemHandler([tree["root"]])
    assert await read(fs, tree["root"] / "a.txt", line=line, limit=limit) == expected


async def test_line_limit_keep_crlf_and_bad_values(tree: dict[str, Path]) -> None:
    (tree["root"] / "crlf.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    fs = FileSystemHandler([tree["root"]])
    assert await read(fs, tree["root"] / "crlf.txt", line=2, limit=1) == "b\r\n"
    with pytest.raises(InvalidParams):
        await read(fs, tree["root"] / "a.txt", line=0)
    with pytest.raises(InvalidParams):
        await read(fs, tree["root"] / "a.txt", limit=-1)


async def test_invalid_utf8_is_replaced(tree: dict[str, Path]) -> None:
    (tree["root"] / "bin").write_bytes(b"ok\xff\xfeend \xc3\xa9")
    fs = FileSystemHandler([tree["root"]])
    assert await read(fs, tree["root"] / "bin") == "ok\ufffd\ufffdend é"


async def test_max_read_bytes(tree: dict[str, Path]) -> None:
    (tree["root"] / "big.txt").write_text("x" * 50 + "\nshort\n")
    fs = FileSystemHandler([tree["root"]], max_read_bytes=20)
    with pytest.raises(FileAccessDenied) as info:
        await read(fs, tree["root"] / "big.txt")
    assert info.value.data == {"reason": "too_large"}
    assert await read(fs, tree["root"] / "big.txt", line=2) == "short\n"
    with pytest.raises(FileAccessDenied):
        await read(fs, tree["root"] / "big.txt", line=1, limit=1)


async def test_read_only(tree: dict[str, Path]) -> None:
    fs = FileSystemHandler([tree["root"]], read_only=True)
    with pytest.raises(FileAccessDenied) as info:
        await fs.write_text_file(wr(tree["root"] / "a.txt", "changed"))
    assert info.value.data == {"reason": "read_only"}
    assert (tree["root"] / "a.txt").read_text() == "1\n2\n3\n4\n5"
    assert await read(fs, tree["root"] / "a.txt", limit=1) == "1\n"


async def test_write_creates_file_and_parents(tree: dict[str, Path]) -> None:
    fs = FileSystemHandler([tree["root"]])
    target = tree["root"] / "new" / "deep" / "f.txt"
    await fs.write_text_file(wr(target, "héllo\n"))
    assert target.read_bytes() == "héllo\n".encode()
    assert stat.S_IMODE(target.stat().st_mode) & 0o600 == 0o600
    assert await read(fs, target) == "héllo\n"


async def test_write_is_atomic_replace(tree: dict[str, Path]) -> None:
    target = tree["root"] / "a.txt"
    target.chmod(0o640)
    before = target.stat().st_ino
    fs = FileSystemHandler([tree["root"]])
    await fs.write_text_file(wr(target, "new content"))
    assert target.read_text() == "new content"
    assert target.stat().st_ino != before  # a new file was renamed over the old one
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # permission bits kept
    assert sorted(p.name for p in tree["root"].iterdir()) == ["a.txt", "sub"]  # no temp file left


async def test_failed_write_leaves_the_old_file_and_no_temp(tree: dict[str, Path],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(src: str, dst: str, **kw: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", boom)
    fs = FileSystemHandler([tree["root"]])
    with pytest.raises(InternalError) as info:
        await fs.write_text_file(wr(tree["root"] / "a.txt", "partial"))
    assert "No space left" in info.value.message
    assert_no_leak(info.value, tree["root"])
    assert (tree["root"] / "a.txt").read_text() == "1\n2\n3\n4\n5"
    assert sorted(p.name for p in tree["root"].iterdir()) == ["a.txt", "sub"]


def test_permission_denied_is_a_clean_error(open_tmp: Path) -> None:
    locked = open_tmp / "locked.txt"
    locked.write_text("x")
    locked.chmod(0)

    async def check() -> None:  # as a normal user (root passes the check: see as_normal_user)
        fs = FileSystemHandler([open_tmp])
        with pytest.raises(FileAccessDenied) as info:
            await read(fs, locked)
        assert info.value.data == {"reason": "permission_denied"}
        assert_no_leak(info.value, open_tmp)

    as_normal_user(check)


async def test_add_root(tree: dict[str, Path]) -> None:
    fs = FileSystemHandler([tree["root"]])
    with pytest.raises(FileAccessDenied):
        await read(fs, tree["outside"] / "secret.txt")
    fs.add_root(tree["outside"])
    fs.add_root(tree["outside"])
    assert len(fs.roots) == 2
    assert await read(fs, tree["outside"] / "secret.txt") == "TOP SECRET"


async def test_bad_path_strings(tree: dict[str, Path]) -> None:
    fs = FileSystemHandler([tree["root"]])
    for bad in ("", f"{tree['root']}/a\x00.txt"):
        with pytest.raises(InvalidParams):
            await read(fs, bad)
