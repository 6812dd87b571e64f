"""A folder inside the root swapped for a symlink to the outside while the handler works.

A thread keeps swapping ``root/d`` between the real folder and a symlink to ``outside``;
1,000 reads and 1,000 writes through ``root/d/...`` must each either act inside the root or be
refused: never read the outside file, never create or change anything outside, and never
leave a temporary file anywhere.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from fsutil import read, resolver, temp_files, wr

from acplink.client.fs import FileSystemHandler
from acplink.errors import RequestError

__all__ = ["resolver"]  # the fixture

TRIES = 1000
_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (Linux renameat2 RENAME_EXCHANGE): neither is ever missing."""
    if _libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(_libc, "renameat2"),
                                reason="needs renameat2 (Linux)")


class Swapper:
    """Swaps ``root/d`` (a folder) with a symlink to ``outside`` and back, as fast as it can."""

    def __init__(self, root: Path, outside: Path) -> None:
        self.d, self.link = root / "d", root / "d.link"
        self.link.symlink_to(outside, target_is_directory=True)
        self.stop = threading.Event()
        self.swaps = 0
        self.thread = threading.Thread(target=self.run, name="swapper")

    def run(self) -> None:
        while not self.stop.is_set():
            exchange(self.d, self.link)  # root/d is now a symlink to the outside...
            exchange(self.d, self.link)  # ...and the folder again
            self.swaps += 1

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "f.txt").write_text("inside")
    (outside / "f.txt").write_text("SECRET")
    return root, outside


def outcome(exc: RequestError) -> str:
    return str(exc.data.get("reason")) if isinstance(exc.data, dict) else type(exc).__name__


async def under_swaps(root: Path, outside: Path, act: Callable[[int], Awaitable[str]]) -> Counter[str]:
    """``act(i)`` TRIES times while root/d is being swapped; counts the results and refusals."""
    seen: Counter[str] = Counter()
    with Swapper(root, outside) as swapper:
        for i in range(TRIES):
            try:
                seen[await act(i)] += 1
            except RequestError as exc:  # refused while the folder is a symlink: fine
                seen[outcome(exc)] += 1
            assert sorted(p.name for p in outside.iterdir()) == ["f.txt"], (i, seen)
    assert swapper.swaps > 0
    print(f"{dict(seen)} over {swapper.swaps} swaps")
    return seen


async def test_read_never_escapes_during_a_symlink_swap(dirs: tuple[Path, Path], resolver: str) -> None:
    root, outside = dirs
    fs = FileSystemHandler([root])
    seen = await under_swaps(root, outside, lambda i: read(fs, root / "d" / "f.txt"))
    assert "SECRET" not in seen, seen
    # refusals are fine (the folder changes under the walk: a component may be caught as the
    # symlink, or mid-swap as something that is not a regular file); reading outside is not
    assert set(seen) <= {"inside", "outside_roots", "symlink", "not_regular_file"}, seen


async def test_write_never_escapes_during_a_symlink_swap(dirs: tuple[Path, Path], resolver: str) -> None:
    root, outside = dirs
    fs = FileSystemHandler([root])

    async def write(i: int) -> str:  # replace an existing file, create a new one
        await fs.write_text_file(wr(root / "d" / ("f.txt", "new.txt")[i % 2], f"w{i}"))
        return "written"

    seen = await under_swaps(root, outside, write)
    assert (outside / "f.txt").read_text() == "SECRET"
    assert temp_files(root, outside) == []
    assert sorted(p.name for p in root.iterdir()) == ["d", "d.link"]
    assert sorted(p.name for p in (root / "d").iterdir()) == ["f.txt", "new.txt"]
    assert seen["written"] > 0, seen
