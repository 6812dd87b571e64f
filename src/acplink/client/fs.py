"""The default ``fs/read_text_file`` / ``fs/write_text_file`` handler, confined to root folders.

Rules (each refusal is a wire error; no Python traceback and no path outside the roots is
ever put in an error):

* the path must be absolute, else :class:`~acplink.errors.InvalidParams`;
* it is resolved with every symlink followed (``os.path.realpath``) and must then lie inside
  one of the resolved roots, so ``..`` tricks and symlinks pointing out are refused with
  :class:`FileAccessDenied` (an ``InvalidParams``, code -32602, ``data.reason ==
  "outside_roots"``, message "... outside the session roots");
* only regular files are read or replaced (devices, FIFOs, sockets, directories are refused:
  ``reason == "not_regular_file"``); files are opened with ``O_NOFOLLOW | O_NONBLOCK`` so a
  symlink swapped in after the check or a FIFO never blocks or escapes;
* a missing file is :class:`~acplink.errors.ResourceNotFound` (-32002);
* ``line`` (1-based) and ``limit`` (a number of lines) select part of the file; at most
  ``max_read_bytes`` of content is returned (``reason == "too_large"`` beyond that); bytes
  that are not UTF-8 are replaced by U+FFFD;
* writes replace the file atomically (temporary file in the same folder, fsync, rename),
  keep an existing file's permission bits, create missing parent folders inside the root,
  and are refused when ``read_only`` (``reason == "read_only"``).

Known limit: a folder *inside* a root that is swapped for a symlink between the check and
the open can still redirect the operation; guard against hostile local processes elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from ..errors import InternalError, InvalidParams, ResourceNotFound
from ..schema import ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse

__all__ = ["DEFAULT_MAX_READ_BYTES", "FileAccessDenied", "FileSystemHandler"]

DEFAULT_MAX_READ_BYTES = 16 * 1024 * 1024
T = TypeVar("T")


class FileAccessDenied(InvalidParams):
    """A file request was refused by the confinement rules; ``data["reason"]`` says which."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message, {"reason": reason})
        self.reason = reason


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


class FileSystemHandler:
    """Serves the agent's file reads and writes inside ``roots`` (resolved once, symlinks followed)."""

    def __init__(
        self,
        roots: Sequence[str | Path],
        *,
        read_only: bool = False,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
    ) -> None:
        self._roots: list[str] = []
        self.read_only = read_only
        self.max_read_bytes = max_read_bytes
        for root in roots:
            self.add_root(root)

    @property
    def roots(self) -> tuple[str, ...]:
        """The resolved root folders."""
        return tuple(self._roots)

    def add_root(self, path: str | Path) -> None:
        """Allow access below one more folder (resolved now, symlinks followed)."""
        resolved = os.path.realpath(os.fspath(path))
        if resolved not in self._roots:
            self._roots.append(resolved)

    # -- path checks ------------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """The real path of ``path`` if it is allowed, else the wire error explaining why."""
        if not isinstance(path, str) or not path or "\x00" in path:
            raise InvalidParams("path must be a non-empty string", {"reason": "invalid_path"})
        if not os.path.isabs(path):
            raise InvalidParams("path must be absolute", {"reason": "not_absolute"})
        real = os.path.realpath(path)
        if not any(_inside(real, root) for root in self._roots):
            raise FileAccessDenied("access denied: the path is outside the session roots", "outside_roots")
        return real

    # -- read -------------------------------------------------------------------------------

    async def read_text_file(self, params: ReadTextFileRequest) -> ReadTextFileResponse:
        """Handle ``fs/read_text_file``."""
        line, limit = params.line, params.limit
        if line is not None and line < 1:
            raise InvalidParams("line is 1-based and must be at least 1", {"reason": "invalid_line"})
        if limit is not None and limit < 0:
            raise InvalidParams("limit must not be negative", {"reason": "invalid_limit"})
        real = self.resolve(params.path)
        content = await _in_thread(self._read, real, params.path, line, limit)
        return ReadTextFileResponse(content=content)

    def _read(self, real: str, shown: str, line: int | None, limit: int | None) -> str:
        fd = _open(real, os.O_RDONLY, shown)
        try:
            _require_regular(os.fstat(fd))
            f = os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        try:
            with f:
                if line is None and limit is None:
                    data = f.read(self.max_read_bytes + 1)
                else:
                    data = self._read_lines(f, line or 1, limit)
        except OSError as exc:
            raise _os_error(exc, shown) from None
        if len(data) > self.max_read_bytes:
            raise FileAccessDenied(
                f"file content exceeds the read limit of {self.max_read_bytes} bytes; use line/limit",
                "too_large")
        return data.decode("utf-8", errors="replace")

    def _read_lines(self, f: BinaryIO, line: int, limit: int | None) -> bytes:
        """Lines ``line`` (1-based) to ``line + limit - 1``; stops early past the byte limit."""
        out = bytearray()
        taken = 0
        index = 1
        while limit is None or taken < limit:
            raw = f.readline(self.max_read_bytes + 1)
            if not raw:
                break
            if index >= line:
                out += raw
                taken += 1
                if len(out) > self.max_read_bytes:
                    break
            if raw.endswith(b"\n"):
                index += 1
        return bytes(out)

    # -- write ------------------------------------------------------------------------------

    async def write_text_file(self, params: WriteTextFileRequest) -> WriteTextFileResponse:
        """Handle ``fs/write_text_file``: create or atomically replace the file."""
        if self.read_only:
            raise FileAccessDenied("access denied: file writes are disabled (read-only)", "read_only")
        real = self.resolve(params.path)
        await _in_thread(self._write, real, params.path, params.content)
        return WriteTextFileResponse()

    def _write(self, real: str, shown: str, content: str) -> None:
        parent = os.path.dirname(real)
        mode: int | None = None
        try:
            st = os.lstat(real)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise _os_error(exc, shown) from None
        else:
            _require_regular(st)
            mode = stat.S_IMODE(st.st_mode)
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParams("content is not valid Unicode (lone surrogate)", {"reason": "invalid_content"}) from None
        try:
            os.makedirs(parent, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".acplink-tmp", dir=parent)
        except OSError as exc:
            raise _os_error(exc, shown) from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode if mode is not None else 0o666 & ~_umask())
            os.replace(tmp, real)
        except OSError as exc:
            _unlink_quietly(tmp)
            raise _os_error(exc, shown) from None
        except BaseException:
            _unlink_quietly(tmp)
            raise


async def _in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run blocking file I/O in a short-lived thread of its own.

    Not the loop's shared executor: each call's thread ends with the call, so no worker
    thread outlives the handler. A cancelled caller stops waiting; the (atomic) operation
    still runs to its end.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            result: Any = fn(*args)
            outcome = (True, result)
        except BaseException as exc:  # handed to the awaiting task
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop may be closed by now
            loop.call_soon_threadsafe(deliver, *outcome)

    threading.Thread(target=work, name="acplink-fs", daemon=True).start()
    return await future


def _open(real: str, flags: int, shown: str) -> int:
    try:
        return os.open(real, flags | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _os_error(exc, shown) from None


def _require_regular(st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise FileAccessDenied(f"access denied: the path is {what}", "not_regular_file")


def _os_error(exc: OSError, shown: str) -> Exception:
    """Map an OS error to a wire error. ``shown`` is the (allowed) path the agent sent."""
    if isinstance(exc, FileNotFoundError):
        return ResourceNotFound(f"file not found: {shown}", {"path": shown})
    if isinstance(exc, IsADirectoryError | NotADirectoryError):
        return FileAccessDenied("access denied: the path is not a regular file", "not_regular_file")
    if exc.errno == errno.ELOOP:
        return FileAccessDenied("access denied: too many levels of symbolic links", "symlink")
    if isinstance(exc, PermissionError):
        return FileAccessDenied("access denied: permission denied by the operating system",
                                "permission_denied")
    reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
    return InternalError(f"file operation failed: {reason}")


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _umask() -> int:
    # os.umask can only be read by setting it; read it from /proc when possible (thread-safe).
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for entry in f:
                if entry.startswith("Umask:"):
                    return int(entry.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022
