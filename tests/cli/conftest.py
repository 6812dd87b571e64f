from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cliutil import Cli
from termscreen import Term


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[Cli]:
    """Run ``acplink`` in a scratch directory; fails the test if any process it started survives."""
    runner = Cli(tmp_path, capsys, monkeypatch)
    yield runner
    runner.assert_no_leftovers()


@pytest.fixture
def terms() -> Iterator[list[Term]]:
    """The chats a test started on a terminal (termscreen.Term): closed after it."""
    made: list[Term] = []
    yield made
    for t in made:
        t.close()
