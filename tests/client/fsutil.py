"""Shared helpers of the file-system handler tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acplink.client.fs import FileSystemHandler
from acplink.schema import ReadTextFileRequest, WriteTextFileRequest


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with openat2 (where the kernel has it) and with the portable walk."""
    if request.param == "walk":
        monkeypatch.setattr(FileSystemHandler, "use_openat2", False)
    return str(request.param)


def rd(path: Path | str, line: int | None = None, limit: int | None = None) -> ReadTextFileRequest:
    return ReadTextFileRequest(session_id="s", path=str(path), line=line, limit=limit)


def wr(path: Path | str, content: str) -> WriteTextFileRequest:
    return WriteTextFileRequest(session_id="s", path=str(path), content=content)


async def read(fs: FileSystemHandler, path: Path | str, **kw: Any) -> str:
    return (await fs.read_text_file(rd(path, **kw))).content


def temp_files(*folders: Path) -> list[Path]:
    """Every leftover temporary file of an atomic write below ``folders``."""
    return [p for folder in folders for p in folder.rglob("*") if p.name.endswith(".acplink-tmp")]
