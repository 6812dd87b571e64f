"""The default ``fs/read_text_file`` / ``fs/write_text_file`` handler, confined to root folders.

Rules (each refusal is a wire error; no Python traceback and no path outside the roots is
ever put in an error; docs/robustness.md lists them with their defaults):

* the path must be an absolute, valid Unicode string without NUL, else
  :class:`~acplink.errors.InvalidParams` (``reason`` ``not_absolute`` / ``invalid_path``);
* it is normalized lexically and must lie inside a root (as resolved when added, or as
  spelled then); the rest is resolved beneath an open descriptor of that root, one folder at a
  time, never following a symlink out (``openat2`` with ``RESOLVE_BENEATH`` on Linux, else a
  walk with ``O_NOFOLLOW`` per component, see ``_resolve``); ``..`` tricks and symlinks that
  point out are refused with :class:`FileAccessDenied` (an ``InvalidParams``, code -32602,
  ``data.reason == "outside_roots"``), also when a folder is swapped for a symlink while we
  work;
* only regular files are read or replaced (devices, FIFOs, sockets, directories are refused:
  ``reason == "not_regular_file"``); a FIFO never blocks (``O_NONBLOCK``);
* a missing file is :class:`~acplink.errors.ResourceNotFound` (-32002);
* ``line`` (1-based) and ``limit`` (a number of lines) select part of the file while it is
  read (reading stops at the last line wanted); at most ``max_read_bytes`` of content is
  returned (``reason == "too_large"`` beyond that; a whole file bigger than that is refused
  without reading it); bytes that are not UTF-8 are replaced by U+FFFD;
* writes replace the file atomically: the temporary file is created in the already-opened
  parent folder and renamed within it, so a failed write leaves nothing behind; they keep an
  existing file's permission bits (and group when allowed), create missing parent folders
  inside the root (removed again if the write fails), and are refused when ``read_only``
  (``reason == "read_only"``) or when the existing file is not one the user could write
  directly (``reason == "not_writable"``: another user's file, or one without the owner's
  write bit, even for root; or one the OS denies writing, e.g. by an ACL);
* a :class:`FileBudget` caps the operations running at once and the bytes they hold (per
  connection when the client shares one between its sessions' handlers).
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from ...errors import InvalidParams
from ...rpc.framing import DEFAULT_MAX_MESSAGE_SIZE
from ...schema import ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse
from ._budget import DEFAULT_MAX_FILE_BYTES_IN_FLIGHT, DEFAULT_MAX_FILE_OPERATIONS, FileBudget, Op
from ._resolve import (
    FileAccessDenied,
    Root,
    check_path,
    locate,
    match_root,
    not_regular,
    open_beneath,
    os_error,
)

__all__ = [
    "DEFAULT_MAX_FILE_BYTES_IN_FLIGHT",
    "DEFAULT_MAX_FILE_OPERATIONS",
    "DEFAULT_MAX_READ_BYTES",
    "FileAccessDenied",
    "FileBudget",
    "FileSystemHandler",
]

#: per-file read limit: the default message size limit (an answer cannot be bigger anyway)
DEFAULT_MAX_READ_BYTES = DEFAULT_MAX_MESSAGE_SIZE
_CHUNK = 1024 * 1024  # read size of whole-file reads
_SKIP_CHUNK = 64 * 1024  # most bytes of a line held while skipping lines before `line`


class FileSystemHandler:
    """Serves the agent's file reads and writes inside ``roots`` (resolved once, symlinks followed).

    ``budget`` is shared with the connection's other handlers (the client passes one per
    connection); by default each handler has its own with the default caps.
    """

    #: resolve with openat2 when the kernel has it (the tests turn it off to test the walk)
    use_openat2 = True

    def __init__(
        self,
        roots: Sequence[str | Path],
        *,
        read_only: bool = False,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        budget: FileBudget | None = None,
    ) -> None:
        self._roots: list[Root] = []
        self.read_only = read_only
        self.max_read_bytes = max_read_bytes
        self.budget = budget if budget is not None else FileBudget()
        for root in roots:
            self.add_root(root)

    @property
    def roots(self) -> tuple[str, ...]:
        """The resolved root folders."""
        return tuple(r.real for r in self._roots)

    def add_root(self, path: str | Path) -> None:
        """Allow access below one more folder (resolved now, symlinks followed)."""
        given = os.path.abspath(os.fspath(path))
        real = os.path.realpath(given)
        if real not in self.roots:
            self._roots.append(Root(real, given))

    def _target(self, path: str) -> tuple[Root, list[str]]:
        return match_root(self._roots, check_path(path))

    # -- read -------------------------------------------------------------------------------

    async def read_text_file(self, params: ReadTextFileRequest) -> ReadTextFileResponse:
        """Handle ``fs/read_text_file``."""
        line, limit = params.line, params.limit
        if line is not None and line < 1:
            raise InvalidParams("line is 1-based and must be at least 1", {"reason": "invalid_line"})
        if limit is not None and limit < 0:
            raise InvalidParams("limit must not be negative", {"reason": "invalid_limit"})
        root, parts = self._target(params.path)
        whole = line is None and limit is None
        async with self.budget.op() as op:
            size = await op.run(self._open, op, root, parts, params.path, whole)
            await op.reserve(min(size, self.max_read_bytes), drain=True)
            content = await op.run(self._read, op, params.path, line, limit)
        return ReadTextFileResponse(content=content)

    def _open(self, op: Op, root: Root, parts: list[str], shown: str, whole: bool) -> int:
        """Open the file into ``op.fd`` (closed with the operation); returns its size."""
        try:
            op.fd = open_beneath(self._roots, root, parts, use_openat2=self.use_openat2)
            st = os.fstat(op.fd)
        except OSError as exc:
            raise os_error(exc, shown) from None
        _require_regular(st)
        if whole and st.st_size > self.max_read_bytes:
            raise self._too_large()
        return st.st_size

    def _too_large(self) -> FileAccessDenied:
        return FileAccessDenied(
            f"file content exceeds the read limit of {self.max_read_bytes} bytes; use line/limit", "too_large")

    def _read(self, op: Op, shown: str, line: int | None, limit: int | None) -> str:
        assert op.fd is not None
        try:
            with open(op.fd, "rb", buffering=_SKIP_CHUNK, closefd=False) as f:
                data = self._read_all(f) if line is None and limit is None else self._read_lines(f, line or 1, limit)
        except OSError as exc:
            raise os_error(exc, shown) from None
        return data.decode("utf-8", errors="replace")

    def _read_all(self, f: BinaryIO) -> bytearray:
        out = bytearray()
        while len(out) <= self.max_read_bytes:
            chunk = f.read(min(_CHUNK, self.max_read_bytes + 1 - len(out)))
            if not chunk:
                return out
            out += chunk
        raise self._too_large()  # the file grew since it was opened

    def _read_lines(self, f: BinaryIO, line: int, limit: int | None) -> bytearray:
        """Lines ``line`` (1-based) to ``line + limit - 1``, read up to the last one wanted;
        the lines before are skipped without holding more than a chunk of one."""
        index = 1
        while index < line:
            raw = f.readline(_SKIP_CHUNK)
            if not raw:
                return bytearray()
            if raw.endswith(b"\n"):
                index += 1
        out = bytearray()
        taken = 0
        while limit is None or taken < limit:
            raw = f.readline(self.max_read_bytes + 1 - len(out))
            if not raw:
                break
            out += raw
            if len(out) > self.max_read_bytes:
                raise self._too_large()
            if raw.endswith(b"\n"):
                taken += 1
        return out

    # -- write ------------------------------------------------------------------------------

    async def write_text_file(self, params: WriteTextFileRequest) -> WriteTextFileResponse:
        """Handle ``fs/write_text_file``: create or atomically replace the file."""
        if self.read_only:
            raise FileAccessDenied("access denied: file writes are disabled (read-only)", "read_only")
        root, parts = self._target(params.path)
        async with self.budget.op() as op:
            await op.reserve(len(params.content))
            await op.run(self._write, root, parts, params.path, params.content)
        return WriteTextFileResponse()

    def _write(self, root: Root, parts: list[str], shown: str, content: str) -> None:
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParams("content is not valid Unicode (lone surrogate)", {"reason": "invalid_content"}) from None
        walk = locate(self._roots, root, parts, create=True)
        try:
            try:
                found = walk.run()
                if found.st is not None:
                    _require_replaceable(found.st, found.name, found.fds[-1])
                _replace(found.fds[-1], found.name, data, found.st)
            except BaseException:
                walk.undo()
                raise
        except OSError as exc:
            raise os_error(exc, shown) from None
        finally:
            walk.close()


def _require_regular(st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise not_regular("a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file")


def _require_replaceable(st: os.stat_result, name: str, dirfd: int) -> None:
    """Refuse to replace a file the user could not write directly.

    Replacing is a rename over the file, which the OS allows whenever the *folder* is
    writable, so the file's own permissions are checked here: it must belong to the
    process's effective user and have its owner-write bit (checked explicitly: root passes
    ``access(2)`` for any file), and ``faccessat(W_OK)`` with the effective ids must agree
    (ACLs, read-only mounts, immutable flags).
    """
    _require_regular(st)
    if st.st_uid != os.geteuid():
        raise FileAccessDenied("access denied: the file belongs to another user", "not_writable")
    if not st.st_mode & stat.S_IWUSR or not os.access(
            name, os.W_OK, dir_fd=dirfd, effective_ids=os.access in os.supports_effective_ids):
        raise FileAccessDenied("access denied: the file is read-only", "not_writable")


def _replace(dirfd: int, name: str, data: bytes, old: os.stat_result | None) -> None:
    """Write ``data`` to a new file in ``dirfd`` and rename it over ``name`` (same folder)."""
    tmp = f".{name[:160]}.{secrets.token_hex(4)}.acplink-tmp"
    # a new file gets 0o666 minus the umask (applied by the OS); a replaced one its old mode
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                 0o666 if old is None else 0o600, dir_fd=dirfd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            if old is not None:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
                if os.fstat(fd).st_gid != old.st_gid:
                    try:
                        os.fchown(fd, -1, old.st_gid)
                    except OSError:
                        pass  # not a member of that group: the file gets ours
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=dirfd, dst_dir_fd=dirfd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dirfd)
        except OSError:
            pass
        raise
