"""Unpacking an agent's archive into a fresh folder, refusing what could escape it.

Kinds, told by their first bytes: zip, tar (plain, gzip, bzip2, xz); anything else is the
agent's program itself (the registry allows a "raw binary"). Refused, with nothing left
behind: a member path that is absolute or has a ``..`` part; a member written through a
symbolic link; a symbolic link whose target is absolute or resolves outside the folder; a hard
link to anything but a file unpacked before it; devices and FIFOs; more members, more bytes or
a higher unpacked/packed ratio than :class:`ArchiveLimits` allows (a decompression bomb:
counted as the bytes are written, not taken from the archive's own claims).
"""

from __future__ import annotations

import lzma
import os
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from ..errors import RegistryError

__all__ = ["ArchiveLimits", "archive_kind", "unpack"]

_CHUNK = 1 << 16


@dataclass(frozen=True)
class ArchiveLimits:
    """What an archive may unpack to: ``max_bytes`` in all, ``max_members`` entries, and
    ``max_ratio`` times its packed size once past ``ratio_floor`` bytes (small archives of text
    may compress far better than a program does)."""

    max_bytes: int = 4 << 30
    max_members: int = 100_000
    max_ratio: float = 100.0
    ratio_floor: int = 64 << 20


def archive_kind(path: Path) -> str:
    """"zip", "tar" or "raw", from the file's first bytes."""
    with open(path, "rb") as f:
        head = f.read(512)
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if head.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")) or head[257:262] == b"ustar":
        return "tar"
    return "raw"


class _Writer:
    """Writes the members of one archive under ``root``, counting what they unpack to."""

    def __init__(self, root: Path, packed: int, limits: ArchiveLimits, name: str) -> None:
        self.root = root
        self.limits = limits
        self.name = name
        self.packed = max(packed, 1)
        self.total = 0
        self.members = 0
        self.files: set[str] = set()
        self.links: list[Path] = []

    def refuse(self, why: str) -> RegistryError:
        return RegistryError(f"archive {self.name} refused: {why}")

    def target(self, member: str) -> tuple[Path, str]:
        """The path ``member`` is written to (its parents created, none a link) and its
        normalised name."""
        self.members += 1
        if self.members > self.limits.max_members:
            raise self.refuse(f"more than {self.limits.max_members:,} members")
        if "\x00" in member or "\\" in member:
            raise self.refuse(f"member {member!r}: a NUL or backslash in its name")
        pure = PurePosixPath(member)
        if pure.is_absolute() or (pure.parts and pure.parts[0].endswith(":")):
            raise self.refuse(f"member {member!r} has an absolute path")
        if ".." in pure.parts:
            raise self.refuse(f"member {member!r} has a '..' part (a path out of the folder)")
        parts = [p for p in pure.parts if p not in ("", ".")]
        if not parts:
            return self.root, ""
        here = self.root
        for part in parts[:-1]:
            here = here / part
            if here.is_symlink():
                raise self.refuse(f"member {member!r} is written through the symbolic link {part!r}")
            if not here.exists():
                here.mkdir()
        dest = here / parts[-1]
        if dest.is_symlink():
            raise self.refuse(f"member {member!r} would replace the symbolic link at its path")
        return dest, "/".join(parts)

    def count(self, n: int) -> None:
        self.total += n
        limits = self.limits
        if self.total > limits.max_bytes:
            raise self.refuse(f"it unpacks to more than {limits.max_bytes:,} bytes (a decompression bomb?)")
        if self.total > limits.ratio_floor and self.total > limits.max_ratio * self.packed:
            raise self.refuse(f"it unpacks to more than {limits.max_ratio:g} times its size (a decompression bomb?)")

    def file(self, member: str, data: IO[bytes], mode: int) -> None:
        dest, name = self.target(member)
        if not name:
            raise self.refuse(f"member {member!r} is not a file name")
        if dest.exists() and not dest.is_file():
            raise self.refuse(f"member {member!r} would replace a folder")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(dest, flags, 0o600)
        with os.fdopen(fd, "wb") as out:
            while chunk := data.read(_CHUNK):
                self.count(len(chunk))
                out.write(chunk)
        os.chmod(dest, (mode & 0o755) | 0o600)
        self.files.add(name)

    def folder(self, member: str) -> None:
        dest, _ = self.target(member)
        if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
            raise self.refuse(f"member {member!r}: a folder over something else")
        dest.mkdir(exist_ok=True)

    def symlink(self, member: str, link: str) -> None:
        dest, _ = self.target(member)
        pure = PurePosixPath(link)
        if not link or "\x00" in link or pure.is_absolute() or (pure.parts and pure.parts[0].endswith(":")):
            raise self.refuse(f"symbolic link {member!r} -> {link!r} points out of the folder")
        # lexically inside the folder; checked again, resolved, once every member is written
        depth = len(dest.relative_to(self.root).parts) - 1
        for part in pure.parts:
            depth += -1 if part == ".." else 0 if part in ("", ".") else 1
            if depth < 0:
                raise self.refuse(f"symbolic link {member!r} -> {link!r} points out of the folder")
        if dest.exists() or dest.is_symlink():
            raise self.refuse(f"symbolic link {member!r} would replace another member")
        os.symlink(link, dest)
        self.links.append(dest)

    def hardlink(self, member: str, link: str) -> None:
        source = "/".join(p for p in PurePosixPath(link).parts if p not in ("", "."))
        if source not in self.files:
            raise self.refuse(f"hard link {member!r} -> {link!r} is not to a file unpacked before it")
        with open(self.root / source, "rb") as data:
            self.file(member, data, stat.S_IMODE(os.stat(self.root / source).st_mode))

    def check_links(self) -> None:
        root = os.path.realpath(self.root)
        for link in self.links:
            real = os.path.realpath(link)
            if os.path.commonpath([root, real]) != root:
                raise self.refuse(f"symbolic link {link.relative_to(self.root).as_posix()!r} resolves out of "
                                  "the folder")


def _unzip(archive: Path, w: _Writer) -> None:
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                w.symlink(info.filename, z.read(info).decode("utf-8", "surrogateescape"))
            elif info.is_dir():
                w.folder(info.filename)
            elif stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # (no type bits: a file)
                raise w.refuse(f"member {info.filename!r} is not a file, folder or link")
            else:
                with z.open(info) as data:
                    w.file(info.filename, data, stat.S_IMODE(mode) or 0o644)


def _untar(archive: Path, w: _Writer) -> None:
    with tarfile.open(archive, "r:*") as t:
        for m in t:  # (streamed: the members are read once, in order)
            if m.issym():
                w.symlink(m.name, m.linkname)
            elif m.islnk():
                w.hardlink(m.name, m.linkname)
            elif m.isdir():
                w.folder(m.name)
            elif m.isreg():
                data = t.extractfile(m)
                assert data is not None
                with data:
                    w.file(m.name, data, m.mode)
            else:
                raise w.refuse(f"member {m.name!r} is a device or FIFO")


@contextmanager
def _cleaned(folder: Path) -> Iterator[None]:
    try:
        yield
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def unpack(archive: Path, dest: Path, *, raw_name: str, limits: ArchiveLimits, name: str) -> None:
    """Unpack ``archive`` into ``dest`` (created; removed again when the archive is refused).
    A raw program is copied to ``dest/raw_name``. ``name`` names the archive in errors."""
    dest.mkdir(parents=True)
    w = _Writer(dest, archive.stat().st_size, limits, name)
    with _cleaned(dest):
        kind = archive_kind(archive)
        try:
            if kind == "zip":
                _unzip(archive, w)
            elif kind == "tar":
                _untar(archive, w)
            else:
                with open(archive, "rb") as data:
                    w.file(raw_name, data, 0o755)
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError, LookupError, zlib.error,
                lzma.LZMAError) as exc:
            raise w.refuse(f"it is not a readable {kind} archive ({exc})") from None
        w.check_links()
