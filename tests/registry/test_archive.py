"""Unpacking: every kind of archive the registry allows, and every way out of the folder
refused with nothing left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from regutil import make_tar, make_zip

from acplink import RegistryError
from acplink.registry import ArchiveLimits
from acplink.registry._archive import unpack

LIMITS = ArchiveLimits()


def _unpack(tmp_path: Path, data: bytes, limits: ArchiveLimits = LIMITS, raw: str = "prog") -> Path:
    archive = tmp_path / "archive"
    archive.write_bytes(data)
    dest = tmp_path / "out"
    unpack(archive, dest, raw_name=raw, limits=limits, name="test-archive")
    return dest


def _refused(tmp_path: Path, data: bytes, match: str, limits: ArchiveLimits = LIMITS) -> None:
    outside = set(tmp_path.parent.iterdir())
    with pytest.raises(RegistryError, match=match):
        _unpack(tmp_path, data, limits)
    assert not (tmp_path / "out").exists(), "a refused archive left files behind"
    assert set(tmp_path.parent.iterdir()) == outside
    assert not (tmp_path / "escaped").exists() and not Path("/tmp/acplink-escaped").exists()


MEMBERS = {"bin/agent": b"#!/bin/sh\necho hi\n", "README": b"read me", "lib/data/x.txt": b"x"}
KINDS = {
    "zip": lambda **kw: make_zip(MEMBERS, **kw),
    "tar.gz": lambda **kw: make_tar(MEMBERS, compression="gz", **kw),
    "tar.bz2": lambda **kw: make_tar(MEMBERS, compression="bz2", **kw),
    "tar.xz": lambda **kw: make_tar(MEMBERS, compression="xz", **kw),
    "tar": lambda **kw: make_tar(MEMBERS, compression="", **kw),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_unpacks_with_its_files_and_modes(tmp_path: Path, kind: str) -> None:
    out = _unpack(tmp_path, KINDS[kind](links={"bin/alias": "agent", "docs": "lib/data"}))
    for name, data in MEMBERS.items():
        assert (out / name).read_bytes() == data
    assert os.stat(out / "bin" / "agent").st_mode & 0o100
    assert (out / "bin" / "alias").read_bytes() == MEMBERS["bin/agent"]  # a link inside is kept
    assert (out / "docs" / "x.txt").read_bytes() == b"x"


def test_a_raw_program_is_saved_under_the_cmd_name(tmp_path: Path) -> None:
    out = _unpack(tmp_path, b"\x7fELF not really", raw="agent-bin")
    assert (out / "agent-bin").read_bytes() == b"\x7fELF not really"
    assert os.stat(out / "agent-bin").st_mode & 0o100


@pytest.mark.parametrize("maker", [make_zip, make_tar], ids=["zip", "tar"])
@pytest.mark.parametrize(("member", "why"), [
    ("../escaped", "'..' part"),
    ("bin/../../escaped", "'..' part"),
    ("/tmp/acplink-escaped", "absolute path"),
])
def test_paths_out_of_the_folder_are_refused(tmp_path: Path, maker: object, member: str, why: str) -> None:
    data = maker({"ok": b"fine", member: b"evil"})  # type: ignore[operator]
    _refused(tmp_path, data, why)


@pytest.mark.parametrize("maker", [make_zip, make_tar], ids=["zip", "tar"])
@pytest.mark.parametrize("target", ["/etc", "../..", "a/../../..", "/tmp"])
def test_symlinks_out_of_the_folder_are_refused(tmp_path: Path, maker: object, target: str) -> None:
    data = maker({"a/file": b"x"}, links={"a/link": target})  # type: ignore[operator]
    _refused(tmp_path, data, "points out of the folder")


@pytest.mark.parametrize("maker", [make_zip, make_tar], ids=["zip", "tar"])
def test_a_member_written_through_a_symlink_is_refused(tmp_path: Path, maker: object) -> None:
    # the link itself points inside, but writing through it is refused (it could be repointed)
    (tmp_path / "one").mkdir()
    out = _unpack(tmp_path / "one", maker({"d/f": b"x"}, links={"l": "d"}))  # type: ignore[operator]
    assert (out / "l" / "f").read_bytes() == b"x"
    # a link, then a member under it
    import io
    import tarfile
    import zipfile
    buf = io.BytesIO()
    if maker is make_zip:
        with zipfile.ZipFile(buf, "w") as z:
            info = zipfile.ZipInfo("l")
            info.external_attr = (0o120000 | 0o777) << 16
            z.writestr(info, ".")
            z.writestr("l/escaped", b"evil")
    else:
        with tarfile.open(fileobj=buf, mode="w") as t:
            info = tarfile.TarInfo("l")
            info.type = tarfile.SYMTYPE
            info.linkname = "."
            t.addfile(info)
            f = tarfile.TarInfo("l/escaped")
            f.size = 4
            t.addfile(f, io.BytesIO(b"evil"))
    (tmp_path / "two").mkdir()
    _refused(tmp_path / "two", buf.getvalue(), "through the symbolic link")


def test_a_link_chain_that_resolves_out_is_refused(tmp_path: Path) -> None:
    # each link lexically inside, but together out: a -> . at the top, b -> a/.. would be the
    # parent of the folder (caught lexically); c/l -> .. then m -> c/l/.. (c/l is the top)
    data = make_tar({"c/f": b"x"}, links={"c/l": "..", "m": "c/l/../.."})
    _refused(tmp_path, data, "out of the folder")


def test_hardlinks_must_point_to_a_file_unpacked_before(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    out = _unpack(tmp_path / "a", make_tar({"f": b"data"}, hardlinks={"g": "f"}))
    assert (out / "g").read_bytes() == b"data" and not os.path.samefile(out / "f", out / "g")
    (tmp_path / "b").mkdir()
    _refused(tmp_path / "b", make_tar({"f": b"data"}, hardlinks={"g": "/etc/passwd"}), "hard link")
    (tmp_path / "c").mkdir()
    _refused(tmp_path / "c", make_tar({"f": b"data"}, hardlinks={"g": "../escaped"}), "hard link")


def test_devices_and_fifos_are_refused(tmp_path: Path) -> None:
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("fifo")
        info.type = tarfile.FIFOTYPE
        t.addfile(info)
    _refused(tmp_path, buf.getvalue(), "device or FIFO")


@pytest.mark.parametrize("maker", [make_zip, make_tar], ids=["zip", "tar"])
def test_a_decompression_bomb_is_refused_by_ratio(tmp_path: Path, maker: object) -> None:
    data = maker({"zeros": bytes(20 << 20)})  # type: ignore[operator]
    assert len(data) < 200_000  # (20 MiB of zeros packs to a few KB)
    limits = ArchiveLimits(max_ratio=50, ratio_floor=1 << 20)
    _refused(tmp_path, data, "times its size", limits)


@pytest.mark.parametrize("maker", [make_zip, make_tar], ids=["zip", "tar"])
def test_a_decompression_bomb_is_refused_by_size(tmp_path: Path, maker: object) -> None:
    data = maker({"a": bytes(3 << 20), "b": bytes(3 << 20)})  # type: ignore[operator]
    _refused(tmp_path, data, "more than 5,242,880 bytes", ArchiveLimits(max_bytes=5 << 20))


def test_the_limits_count_bytes_written_not_the_archive_claims(tmp_path: Path) -> None:
    # a zip whose header claims a small size for a large member: zipfile refuses to read past
    # the claim, so what is written stays within it or the archive is refused as unreadable
    import struct
    data = bytearray(make_zip({"big": bytes(4 << 20)}))
    central = data.rfind(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 10)  # the central directory's uncompressed size
    local = data.find(b"PK\x03\x04")
    struct.pack_into("<I", data, local + 22, 10)
    with pytest.raises(RegistryError):
        _unpack(tmp_path, bytes(data), ArchiveLimits(max_bytes=1 << 20))
    assert not (tmp_path / "out").exists()


def test_too_many_members_are_refused(tmp_path: Path) -> None:
    data = make_zip({f"f{i}": b"" for i in range(30)})
    _refused(tmp_path, data, "more than 20 members", ArchiveLimits(max_members=20))


def test_a_truncated_archive_is_refused(tmp_path: Path) -> None:
    data = make_tar({"a": bytes(100_000)})
    _refused(tmp_path, data[: len(data) // 2], "not a readable tar archive")
