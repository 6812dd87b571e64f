from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cliutil import Cli


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    """Run ``acplink`` in a scratch directory; fails the test if any process it started survives."""
    runner = Cli(tmp_path, capsys, monkeypatch)
    yield runner
    runner.assert_no_leftovers()
