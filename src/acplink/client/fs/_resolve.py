"""Resolving an agent's path beneath an open root folder without ever leaving it.

The agent's absolute path is matched *lexically* (``os.path.normpath``) against the roots;
what follows the root is then resolved by us, one component at a time, from an open file
descriptor of the root, never by the kernel from a path string:

* on Linux 5.6+, ``openat2(2)`` with ``RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`` opens the
  whole remainder at once (the kernel refuses any step out of the root, even one caused by a
  concurrent rename or symlink swap); anything it refuses (``EXDEV``: an absolute symlink,
  one pointing out, ``..`` out of the root) goes to the walk below, which decides;
* everywhere (macOS, older kernels, and after ``EXDEV``), a walk: each folder is opened with
  ``O_DIRECTORY | O_NOFOLLOW`` relative to the descriptor of its parent (``dir_fd``), so the
  kernel never follows a symlink; a symlink met on the way is read with ``readlinkat`` and
  resolved by the same rules (an absolute target must lie inside a root, ``..`` pops our own
  stack of descriptors and may not leave the root), at most 40 of them per path.

Swapping a folder for a symlink between our check and our use therefore changes nothing: the
open either fails (``ELOOP``/``ENOTDIR``: we read the link and apply the rules) or opens the
real folder.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from collections import deque
from dataclasses import dataclass

from ...errors import InternalError, InvalidParams, ResourceNotFound

__all__ = [
    "FileAccessDenied",
    "Located",
    "Root",
    "close_all",
    "locate",
    "match_root",
    "open_beneath",
    "os_error",
]

#: most symlinks followed while resolving one path (Linux uses 40 too)
MAX_SYMLINKS = 40
MAX_STEPS = 8192
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
# O_PATH (Linux) opens a folder for lookups only, without needing read permission on it
DIR_FLAGS = (getattr(os, "O_PATH", 0) or os.O_RDONLY) | os.O_DIRECTORY | _CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | _CLOEXEC
_LINK_ERRNOS = {errno.ELOOP, errno.EMLINK, errno.ENOTDIR}


class FileAccessDenied(InvalidParams):
    """A file request was refused by the confinement rules; ``data["reason"]`` says which."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message, {"reason": reason})
        self.reason = reason


def outside() -> FileAccessDenied:
    return FileAccessDenied("access denied: the path is outside the session roots", "outside_roots")


def not_regular(what: str = "not a regular file") -> FileAccessDenied:
    return FileAccessDenied(f"access denied: the path is {what}", "not_regular_file")


def too_many_links() -> FileAccessDenied:
    return FileAccessDenied("access denied: too many levels of symbolic links", "symlink")


def os_error(exc: OSError, shown: str) -> Exception:
    """Map an OS error to a wire error. ``shown`` is the (allowed) path the agent sent."""
    if isinstance(exc, FileNotFoundError):
        return ResourceNotFound(f"file not found: {shown}", {"path": shown})
    if isinstance(exc, IsADirectoryError | NotADirectoryError):
        return not_regular()
    if exc.errno == errno.ELOOP:
        return too_many_links()
    if isinstance(exc, PermissionError):
        return FileAccessDenied("access denied: permission denied by the operating system",
                                "permission_denied")
    reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
    return InternalError(f"file operation failed: {reason}")


@dataclass(frozen=True)
class Root:
    """One root folder: its real path and the spelling it was given in (may hold symlinks)."""

    real: str
    given: str

    def relative(self, path: str) -> list[str] | None:
        """The components of the normalized absolute ``path`` below this root, or None."""
        for prefix in (self.real, self.given):
            if path == prefix:
                return []
            base = prefix if prefix.endswith(os.sep) else prefix + os.sep
            if path.startswith(base):
                return [p for p in path[len(base):].split(os.sep) if p]
        return None

    def open(self) -> int:
        return os.open(self.real, DIR_FLAGS)


def check_path(path: object) -> str:
    """The normalized absolute path, or the wire error saying why it is unusable."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise InvalidParams("path must be a non-empty string", {"reason": "invalid_path"})
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidParams("path is not valid Unicode (lone surrogate)", {"reason": "invalid_path"}) from None
    if not os.path.isabs(path):
        raise InvalidParams("path must be absolute", {"reason": "not_absolute"})
    return os.path.normpath(path)


def match_root(roots: list[Root], path: str) -> tuple[Root, list[str]]:
    for root in roots:
        parts = root.relative(path)
        if parts is not None:
            return root, parts
    raise outside()


def close_all(fds: list[int]) -> None:
    while fds:
        os.close(fds.pop())


# -- openat2 (Linux 5.6+) ------------------------------------------------------------------

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437  # the same number on every architecture that has it


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


class _Openat2:
    def __init__(self) -> None:
        self.available = sys.platform.startswith("linux")
        self._syscall = None
        if self.available:
            try:
                fn = ctypes.CDLL(None, use_errno=True).syscall
            except (OSError, AttributeError):
                self.available = False
            else:
                fn.restype = ctypes.c_long
                self._syscall = fn

    def __call__(self, dirfd: int, rel: str, flags: int) -> int:
        how = _OpenHow(flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
        assert self._syscall is not None
        fd = int(self._syscall(ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dirfd), ctypes.c_char_p(os.fsencode(rel)),
                               ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how))))
        if fd < 0:
            err = ctypes.get_errno()
            if err in (errno.ENOSYS, errno.EPERM, errno.E2BIG):  # no openat2 here (or seccomp says no)
                self.available = False
            raise OSError(err, os.strerror(err))
        return fd


openat2 = _Openat2()


# -- the walk --------------------------------------------------------------------------------


@dataclass
class Located:
    """The folder holding the target (``fds[-1]``; all of ``fds`` are ours to close), the
    target's name in it, and its ``lstat`` (None when it does not exist)."""

    fds: list[int]
    name: str
    st: os.stat_result | None


class _Walk:
    def __init__(self, roots: list[Root], root: Root, parts: list[str], create: bool) -> None:
        self.roots = roots
        self.root = root
        self.todo: deque[str] = deque(parts)
        self.create = create
        self.links = 0
        self.fds: list[int] = [root.open()]
        #: folders we created: (our own descriptor of the parent, name). Not an index into
        #: ``fds``: ``..`` and an absolute symlink (which restarts the walk at a root) replace
        #: what ``fds`` holds, and undo() must still find the parent each was made in
        self.made: list[tuple[int, str]] = []

    def follow(self, name: str) -> bool:
        """If ``name`` (in the current folder) is a symlink, splice its target into the path."""
        try:
            target = os.readlink(name, dir_fd=self.fds[-1])
        except OSError as exc:
            if exc.errno == errno.EINVAL:  # not a symlink
                return False
            raise
        self.hop()
        if os.path.isabs(target):
            root, parts = match_root(self.roots, os.path.normpath(target))
            close_all(self.fds)
            self.root = root
            self.fds.append(root.open())
            self.todo.extendleft(reversed(parts))
        else:
            self.todo.extendleft(reversed([p for p in target.split(os.sep) if p]))
        return True

    def hop(self) -> None:
        self.links += 1
        if self.links > MAX_SYMLINKS:
            raise too_many_links()

    def run(self) -> Located:
        steps = 0
        while self.todo:
            steps += 1
            if steps > MAX_STEPS:  # (a path is at most 4096 bytes: this only stops a loop)
                raise FileAccessDenied("access denied: the path kept changing while it was resolved", "symlink")
            name = self.todo.popleft()
            if name == ".":
                continue
            if name == "..":
                if len(self.fds) == 1:
                    raise outside()
                os.close(self.fds.pop())
                continue
            if not self.todo:
                st = _lstat(name, self.fds[-1])
                if st is not None and stat.S_ISLNK(st.st_mode) and self.follow(name):
                    continue
                return Located(self.fds, name, st)
            self.enter(name)
        raise not_regular("a directory")  # the path names a folder (a root, or ends in "..")

    def enter(self, name: str) -> None:
        parent = self.fds[-1]
        try:
            fd = os.open(name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=parent)
        except FileNotFoundError:
            if not self.create:
                raise
            keep = os.dup(parent)  # (undo() removes it from this folder, whatever the walk does next)
            try:
                os.mkdir(name, 0o777, dir_fd=parent)
            except FileExistsError:
                os.close(keep)
            except BaseException:
                os.close(keep)
                raise
            else:
                self.made.append((keep, name))
            self.todo.appendleft(name)  # open it now (it may be a symlink by now: the rules apply)
            return
        except OSError as exc:
            if exc.errno not in _LINK_ERRNOS:
                raise
            if self.follow(name):
                return
            st = _lstat(name, parent)
            if st is None or not stat.S_ISDIR(st.st_mode):
                raise
            self.hop()  # a symlink a moment ago, a folder again now: look again
            self.todo.appendleft(name)
            return
        self.fds.append(fd)

    def undo(self) -> None:
        """Remove the folders this walk created (innermost first), if still empty."""
        for parent, name in reversed(self.made):
            try:
                os.rmdir(name, dir_fd=parent)
            except OSError:
                pass
        self._forget_made()

    def _forget_made(self) -> None:
        while self.made:
            os.close(self.made.pop()[0])

    def close(self) -> None:
        """Close every descriptor of the walk (after ``run``, also after an exception)."""
        close_all(self.fds)
        self._forget_made()


def _lstat(name: str, dirfd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def locate(roots: list[Root], root: Root, parts: list[str], *, create: bool = False) -> _Walk:
    """Walk ``parts`` beneath ``root``; the result's ``run()`` gives the folder and name.

    The caller calls ``walk.close()`` (also after an exception from ``run``: use try/finally)."""
    return _Walk(roots, root, parts, create)


def open_beneath(roots: list[Root], root: Root, parts: list[str], *, use_openat2: bool = True) -> int:
    """Open a file beneath ``root`` for reading (``O_NONBLOCK``: a FIFO never blocks)."""
    if use_openat2 and openat2.available and parts:
        rootfd = root.open()
        try:
            return openat2(rootfd, os.sep.join(parts), READ_FLAGS)
        except OSError:
            pass  # EXDEV, ELOOP, ENOENT...: the walk decides (and words the error)
        finally:
            os.close(rootfd)
    walk = locate(roots, root, parts)
    try:
        found = walk.run()
        # O_NOFOLLOW: a symlink swapped in since the lstat fails with ELOOP
        return os.open(found.name, READ_FLAGS | os.O_NOFOLLOW, dir_fd=found.fds[-1])
    finally:
        walk.close()
