"""The recorder's write-ahead spool: every chunk the ``acplink record`` proxy forwards is
appended here (direction, monotonic and wall time, the bytes) *before* it is forwarded, with
one ``write`` per chunk. The kernel keeps what was written even if the proxy is SIGKILLed, so
whatever reached the other side can be stored later by whoever finds the spool.

The writer holds an exclusive ``flock`` on the file for as long as it records; a spool whose
lock can be taken belongs to a recorder that is gone (its rows are then recovered from it: see
:meth:`acplink.devtools.store.Store.recover`). A record is a fixed header (kind, mono, wall,
length) and the bytes; a torn last record (the process died inside a write) is ignored: its
chunk was not forwarded either.
"""

from __future__ import annotations

import fcntl
import os
import struct
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MAGIC", "SpoolWriter", "claim_spool", "read_spool", "spool_dir"]

MAGIC = b"acplink-spool 1\n"
_HEAD = struct.Struct("<cddI")
#: record kinds: a chunk each way, the end of input each way, the agent's exit code (ASCII)
KINDS = {b"c": "c2a", b"a": "a2c", b"C": "eof-c2a", b"A": "eof-a2c", b"x": "exit"}
_CODES = {v: k for k, v in KINDS.items()}


def spool_dir(db: str | os.PathLike[str]) -> Path:
    """The folder of the spools of the database ``db`` (beside it)."""
    p = Path(db)
    return p.with_name(p.name + ".spool")


class SpoolWriter:
    """Appends records to a new spool file and holds its lock until :meth:`close`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        _write_all(self.fd, MAGIC)

    def append(self, kind: str, data: bytes, mono: float, wall: float) -> None:
        """One record, in one ``write`` (``kind``: c2a, a2c, eof-c2a, eof-a2c, exit)."""
        _write_all(self.fd, _HEAD.pack(_CODES[kind], mono, wall, len(data)) + data)

    def close(self, remove: bool) -> None:
        """Release the lock; ``remove``: everything is stored elsewhere, delete the file."""
        if self.fd < 0:
            return
        if remove:
            self.path.unlink(missing_ok=True)
        os.close(self.fd)
        self.fd = -1


def claim_spool(path: str | os.PathLike[str]) -> int | None:
    """A locked descriptor of a spool whose recorder is gone (close it when done), or None if
    a recorder still holds it (or it vanished)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def read_spool(fd: int) -> Iterator[tuple[str, bytes, float, float]]:
    """The records of a spool (kind, bytes, mono, wall), up to a torn last one."""
    with os.fdopen(os.dup(fd), "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            return
        left = os.fstat(fd).st_size - len(MAGIC)
        while True:
            head = f.read(_HEAD.size)
            if len(head) < _HEAD.size:
                return
            code, mono, wall, size = _HEAD.unpack(head)
            left -= _HEAD.size
            if size > left:  # (a torn or damaged record: never read more than the file holds)
                return
            left -= size
            data = f.read(size)
            if len(data) < size or code not in KINDS:
                return
            yield KINDS[code], data, mono, wall


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
