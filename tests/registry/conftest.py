from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from regutil import Served, serve


@pytest.fixture
def served() -> Iterator[Served]:
    with serve() as s:
        yield s


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of the test's own (``$ACPLINK_CACHE_DIR``), and no ``$ACPLINK_REGISTRY``."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("ACPLINK_CACHE_DIR", str(folder))
    monkeypatch.delenv("ACPLINK_REGISTRY", raising=False)
    return folder
